/*-------------------------------------------------------------------------
 * jobs_enqueue.c
 *		The job queue's enqueue (docs/jobs.md): coord.enqueue and
 *		coord.enqueue_many, their arguments, and waiting jobs (enqueued with
 *		after: coord.job_wait, moved into coord.job or cancelled for the wait
 *		hooks of jobs.h; src/workflows/README.md).
 *
 * A job with after asks the wait hooks how many of its parents have not
 * ended, and goes into coord.job (none), or coord.job_wait, from which
 * CoordReleaseWaiting moves it into coord.job and CoordCancelWaiting into
 * the history.  Everything here is rows of the caller's transaction.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#include "jobs/jobs_int.h"

#define JOB_KEY_MAX			1024
#define ENQUEUE_MANY_MAX	10000	/* payloads per coord.enqueue_many call */
#define AFTER_MAX			10000	/* parents of one job (after) */

static SPIPlanPtr plan_enqueue = NULL;
static SPIPlanPtr plan_key_id = NULL;
static SPIPlanPtr plan_enqueue_many = NULL;
static SPIPlanPtr plan_enqueue_wait = NULL;
static SPIPlanPtr plan_enqueue_many_wait = NULL;
static SPIPlanPtr plan_release = NULL;
static SPIPlanPtr plan_cancel_wait = NULL;

PG_FUNCTION_INFO_V1(coord_enqueue);
PG_FUNCTION_INFO_V1(coord_enqueue_many);

/* ---------- arguments ---------- */

static text *
KeyArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	text	   *t;
	int			len;

	if (PG_ARGISNULL(argno))
		return NULL;
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	if (len == 0 || len > JOB_KEY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must have 1 to %d bytes", what, JOB_KEY_MAX)));
	return t;
}


int32
JobsMaxAttemptsArg(FunctionCallInfo fcinfo, int argno)
{
	int32		v;

	CoordRequireArg(fcinfo, argno, "max_attempts");
	v = PG_GETARG_INT32(argno);
	if (v < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_attempts must be at least 1")));
	return v;
}

/* ---------- enqueue ---------- */

/*
 * EnqueueOne inserts a job (inside SPI, as the owner) and returns its id; with
 * a key, the id of the live job with that key when there is one.  The unique
 * index on (queue, key) makes concurrent enqueues of one key wait for each
 * other, so exactly one job is added.
 */
/* The flow-control arguments of an enqueue (limit_key, max_snoozes, expires_at). */
typedef struct EnqueueFlow
{
	text	   *limit_key;
	int32		max_snoozes;
	Datum		expires_at;
	bool		expires_null;
	Datum		batch;			/* 0.4.0: the batch id, stored as given */
	bool		batch_null;
	int64	   *parents;		/* after: sorted, distinct; NULL when none */
	int			nparents;
	const char *on_parent_failure;
	Oid			caller;			/* with a batch: who joins it (CoordBatchJoin) */
	text	   *trace;			/* 0.4.0: a W3C traceparent, checked; or NULL */
} EnqueueFlow;

static const EnqueueFlow no_flow = {NULL, 100, (Datum) 0, true, (Datum) 0, true, NULL, 0, "cancel", InvalidOid,
NULL};

/* Lowercase hexadecimal digits, n of them at s, not all zeros when nonzero is set. */
static bool
TraceHex(const char *s, int n, bool nonzero)
{
	bool		zero = true;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
		if (s[i] != '0')
			zero = false;
	}
	return !(nonzero && zero);
}

/*
 * trace (argument argno, when the catalog has it): a W3C Trace Context
 * traceparent, version-trace_id-parent_id-flags (2, 32, 16 and 2 lowercase
 * hex digits, 55 characters), stored as given and returned by the job's
 * claims.  Checked here so that a worker never gets a context its tracer
 * would reject: version ff and all-zero ids are invalid in the standard.
 */
static text *
TraceArg(FunctionCallInfo fcinfo, int argno)
{
	text	   *t;
	const char *s;
	int			len;
	const char *why = NULL;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return NULL;
	t = PG_GETARG_TEXT_PP(argno);
	s = VARDATA_ANY(t);
	len = VARSIZE_ANY_EXHDR(t);
	if (len != 55)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid trace"),
				 errdetail("A W3C traceparent has 55 characters (ASCII); this one has %d bytes.", len),
				 errhint("Pass a traceparent header such as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, or NULL.")));
	if (s[2] != '-' || s[35] != '-' || s[52] != '-' ||
		!TraceHex(s, 2, false) || !TraceHex(s + 3, 32, false) ||
		!TraceHex(s + 36, 16, false) || !TraceHex(s + 53, 2, false))
		why = "A traceparent is version-trace_id-parent_id-flags: 2, 32, 16 and 2 lowercase hexadecimal digits separated by dashes.";
	else if (s[0] == 'f' && s[1] == 'f')
		why = "Version ff is invalid.";
	else if (!TraceHex(s + 3, 32, true))
		why = "The trace id must not be all zeros.";
	else if (!TraceHex(s + 36, 16, true))
		why = "The parent id must not be all zeros.";
	if (why != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid trace \"%.*s\"", len, s),
				 errdetail("%s", why),
				 errhint("Pass a traceparent header such as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, or NULL.")));
	return t;
}

static void
FlowArgs(FunctionCallInfo fcinfo, int argno, EnqueueFlow *fl)
{
	*fl = no_flow;
	if (PG_NARGS() <= argno + 2)
		return;
	fl->limit_key = KeyArg(fcinfo, argno, "limit_key");
	CoordRequireArg(fcinfo, argno + 1, "max_snoozes");
	fl->max_snoozes = PG_GETARG_INT32(argno + 1);
	if (fl->max_snoozes < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_snoozes must not be negative")));
	fl->expires_null = PG_ARGISNULL(argno + 2);
	fl->expires_at = fl->expires_null ? (Datum) 0 : PG_GETARG_DATUM(argno + 2);
}

/*
 * The workflow arguments that follow expires_at (after, on_parent_failure,
 * batch): argno is after's position.  A catalog older than 0.4.0 passes
 * none of them.
 */
static void
WorkflowArgs(FunctionCallInfo fcinfo, int argno, EnqueueFlow *fl)
{
	char	   *opf;

	if (PG_NARGS() <= argno + 2)
		return;
	CoordRequireArg(fcinfo, argno + 1, "on_parent_failure");
	opf = text_to_cstring(PG_GETARG_TEXT_PP(argno + 1));
	if (strcmp(opf, "cancel") != 0 && strcmp(opf, "run") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid on_parent_failure \"%s\"", opf),
				 errhint("Use 'cancel' or 'run'.")));
	fl->on_parent_failure = opf;
	if (!PG_ARGISNULL(argno))
	{
		ArrayType  *after = PG_GETARG_ARRAYTYPE_P(argno);
		Datum	   *elems;
		bool	   *enulls;
		int			n;
		int			i;
		int			k = 0;

		if (ARR_NDIM(after) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("after must be a one-dimensional array")));
		n = ArrayGetNItems(ARR_NDIM(after), ARR_DIMS(after));
		if (n > AFTER_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many parents in after"),
					 errdetail("A job waits on at most %d jobs; %d were given.", AFTER_MAX, n)));
		deconstruct_array(after, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &enulls, &n);
		fl->parents = palloc(sizeof(int64) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			if (enulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("after must not contain null elements")));
			fl->parents[i] = DatumGetInt64(elems[i]);
		}
		qsort(fl->parents, n, sizeof(int64), CoordCmpInt64);
		for (i = 0; i < n; i++)
			if (k == 0 || fl->parents[k - 1] != fl->parents[i])
				fl->parents[k++] = fl->parents[i];
		fl->nparents = k;
		if (k > 0 && JobsWaitHooks() == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("job dependencies are not available")));
	}
	fl->batch_null = PG_ARGISNULL(argno + 2);
	fl->batch = fl->batch_null ? (Datum) 0 : PG_GETARG_DATUM(argno + 2);
	fl->caller = GetUserId();	/* before the owner switch */
}

/* The parents as a bigint[] (for the statements and the wait hooks). */
Datum
JobsIdsArray(const int64 *ids, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = Int64GetDatum(ids[i]);
	return PointerGetDatum(construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * A job with parents: asks the wait hooks how many have not ended (they
 * lock those), and so whether it goes in waiting.  Inside SPI.
 */
static int32
ResolveParents(const EnqueueFlow *fl, bool *cancel)
{
	bool		failed = false;
	int32		pending = JobsWaitHooks()->resolve(fl->parents, fl->nparents, &failed);

	*cancel = failed && strcmp(fl->on_parent_failure, "cancel") == 0;
	return pending;
}

static int64
EnqueueOne(const char *queue, Jsonb *payload, Datum run_at, bool run_at_null, int32 priority,
		   text *key, const char *host, int32 max_attempts, text *group_key, const char *request_key,
		   const EnqueueFlow *fl, Oid enqueued_by)
{
	Oid			argtypes[18] = {TEXTOID, JSONBOID, TIMESTAMPTZOID, INT4OID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID,
	TEXTOID, INT4OID, TIMESTAMPTZOID, INT8OID, INT2OID, INT4OID, TEXTOID, OIDOID, TEXTOID};
	Datum		args[18];
	char		nulls[18] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int			attempt;
	int32		pending = 0;
	bool		cancel = false;
	bool		isnull;

	args[0] = CStringGetTextDatum(queue);
	args[1] = JsonbPGetDatum(payload);
	args[2] = run_at;
	nulls[2] = run_at_null ? 'n' : ' ';
	args[3] = Int32GetDatum(priority);
	args[4] = PointerGetDatum(key);
	nulls[4] = key ? ' ' : 'n';
	args[5] = host ? CStringGetTextDatum(host) : (Datum) 0;
	nulls[5] = host ? ' ' : 'n';
	args[6] = Int32GetDatum(max_attempts);
	args[7] = PointerGetDatum(group_key);
	nulls[7] = group_key ? ' ' : 'n';
	args[8] = request_key ? CStringGetTextDatum(request_key) : (Datum) 0;
	nulls[8] = request_key ? ' ' : 'n';
	args[9] = PointerGetDatum(fl->limit_key);
	nulls[9] = fl->limit_key ? ' ' : 'n';
	args[10] = Int32GetDatum(fl->max_snoozes);
	args[11] = fl->expires_at;
	nulls[11] = fl->expires_null ? 'n' : ' ';
	args[12] = fl->batch;
	nulls[12] = fl->batch_null ? 'n' : ' ';
	args[13] = Int16GetDatum(fl->nparents > 0 ? COORD_DEPS_CHILD : 0);
	args[16] = ObjectIdGetDatum(enqueued_by);
	nulls[16] = OidIsValid(enqueued_by) ? ' ' : 'n';
	args[17] = PointerGetDatum(fl->trace);
	nulls[17] = fl->trace ? ' ' : 'n';

	if (fl->nparents > 0)
	{
		/* a waiting job is in no unique index: its key could not dedupe */
		if (key != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a job with after cannot have a key")));
		pending = ResolveParents(fl, &cancel);
	}
	if (pending > 0 || cancel)
	{
		int64		id;

		args[14] = Int32GetDatum(pending);
		args[15] = CStringGetTextDatum(fl->on_parent_failure);
		CoordExec(&plan_enqueue_wait,
				  "INSERT INTO coord.job_wait (queue, payload, run_at, priority, key, host, "
				  "max_attempts, group_key, request_key, limit_key, max_snoozes, expires_at, batch, deps, "
				  "pending, on_parent_failure, enqueued_by, trace) "
				  "VALUES ($1, $2, COALESCE($3, pg_catalog.now()), $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
				  "$14, $15, $16, $17, $18) RETURNING id",
				  18, argtypes, args, nulls, SPI_OK_INSERT_RETURNING, "enqueue");
		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		if (!fl->batch_null)
			CoordBatchJoin(DatumGetInt64(fl->batch), 1, fl->caller, false);
		JobsWaitHooks()->link(fl->parents, fl->nparents, &id, 1);
		if (cancel)
			(void) CoordCancelWaiting(JobsIdsArray(&id, 1), "a parent job ended dead or cancelled");
		return id;
	}

	/*
	 * App runs' jobs have keys of their own: job_key leaves out jobs with an
	 * origin.
	 */
	for (attempt = 0; attempt < 5; attempt++)
	{
		CoordExec(&plan_enqueue,
				  "INSERT INTO coord.job (queue, payload, run_at, priority, key, host, "
				  "max_attempts, group_key, request_key, limit_key, max_snoozes, expires_at, batch, deps, "
				  "enqueued_by, trace) "
				  "VALUES ($1, $2, COALESCE($3, pg_catalog.now()), $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
				  "$17, $18) "
				  "ON CONFLICT (queue, key) WHERE key IS NOT NULL AND origin IS NULL "
				  "DO NOTHING RETURNING id",
				  18, argtypes, args, nulls, SPI_OK_INSERT_RETURNING, "enqueue");
		if (SPI_processed == 1)
		{
			int64		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

			/* a job added (not a live one's id answered) joins its batch */
			if (!fl->batch_null)
				CoordBatchJoin(DatumGetInt64(fl->batch), 1, fl->caller, false);
			if (fl->nparents > 0)
				JobsWaitHooks()->link(fl->parents, fl->nparents, &id, 1);
			return id;
		}

		/* a live job has this key: answer its id (unless it just finished) */
		CoordExecLimit(&plan_key_id,
					   "SELECT id FROM coord.job WHERE queue OPERATOR(pg_catalog.=) $1 "
					   "AND key OPERATOR(pg_catalog.=) $5 AND origin IS NULL",
					   14, argtypes, args, nulls, 1, SPI_OK_SELECT, "enqueue key lookup");
		if (SPI_processed == 1)
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	elog(ERROR, "enqueue with key did not settle");
	return 0;
}

/*
 * coord.enqueue(queue, payload, run_at, priority, key, host, max_attempts,
 * group_key, limit_key, max_snoozes, expires_at, after, on_parent_failure,
 * batch, trace) returns bigint
 */
Datum
coord_enqueue(PG_FUNCTION_ARGS)
{
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	Jsonb	   *payload;
	char	   *host = CoordNameArg(fcinfo, 5, "host", true);
	text	   *key = KeyArg(fcinfo, 4, "key");
	text	   *group_key = KeyArg(fcinfo, 7, "group_key");
	int32		max_attempts = JobsMaxAttemptsArg(fcinfo, 6);
	EnqueueFlow fl;
	CoordUserSwitch sw;
	int64		id;

	FlowArgs(fcinfo, 8, &fl);
	WorkflowArgs(fcinfo, 11, &fl);
	fl.trace = TraceArg(fcinfo, 14);
	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "payload");
	CoordRequireArg(fcinfo, 3, "priority");
	payload = CoordCheckPayload(PG_GETARG_JSONB_P(1));

	CoordSpiBegin(&sw);
	id = EnqueueOne(queue, payload, PG_GETARG_DATUM(2), PG_ARGISNULL(2), PG_GETARG_INT32(3),
					key, host, max_attempts, group_key, NULL, &fl, sw.save_userid);
	CoordSpiEnd(&sw);
	JobsWakeAtCommit(queue, host);
	PG_RETURN_INT64(id);
}

/*
 * coord.enqueue_many(queue, payloads jsonb[], run_at, priority, host,
 * max_attempts, limit_key, max_snoozes, expires_at, after, on_parent_failure,
 * batch, trace): one trace for all the jobs
 */
Datum
coord_enqueue_many(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	char	   *host = CoordNameArg(fcinfo, 4, "host", true);
	int32		max_attempts = JobsMaxAttemptsArg(fcinfo, 5);
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	int			i;
	Oid			argtypes[15] = {TEXTOID, JSONBARRAYOID, TIMESTAMPTZOID, INT4OID, TEXTOID, INT4OID,
	TEXTOID, INT4OID, TIMESTAMPTZOID, INT8OID, INT2OID, INT4OID, TEXTOID, OIDOID, TEXTOID};
	Datum		args[15];
	char		nulls[15] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int32		pending = 0;
	bool		cancel = false;
	EnqueueFlow fl;
	CoordUserSwitch sw;
	int64	   *ids;

	FlowArgs(fcinfo, 6, &fl);
	WorkflowArgs(fcinfo, 9, &fl);
	fl.trace = TraceArg(fcinfo, 12);
	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "payloads");
	CoordRequireArg(fcinfo, 3, "priority");
	arr = PG_GETARG_ARRAYTYPE_P(1);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("payloads must be a one-dimensional array")));
	n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	if (n > ENQUEUE_MANY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many payloads for coord.enqueue_many"),
				 errdetail("coord.enqueue_many takes at most %d payloads at once; %d were given.",
						   ENQUEUE_MANY_MAX, n),
				 errhint("Enqueue them in several calls.")));
	deconstruct_array(arr, JSONBOID, -1, false, TYPALIGN_INT, &elems, &enulls, &n);
	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (enulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("payloads must not contain null elements"),
					 errdetail("Element %d is null.", i + 1)));
		(void) CoordCheckPayload(DatumGetJsonbP(elems[i]));
	}

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (n == 0)
		return (Datum) 0;

	args[0] = CStringGetTextDatum(queue);
	args[1] = PointerGetDatum(arr);
	args[2] = PG_GETARG_DATUM(2);
	nulls[2] = PG_ARGISNULL(2) ? 'n' : ' ';
	args[3] = Int32GetDatum(PG_GETARG_INT32(3));
	args[4] = host ? CStringGetTextDatum(host) : (Datum) 0;
	nulls[4] = host ? ' ' : 'n';
	args[5] = Int32GetDatum(max_attempts);
	args[6] = PointerGetDatum(fl.limit_key);
	nulls[6] = fl.limit_key ? ' ' : 'n';
	args[7] = Int32GetDatum(fl.max_snoozes);
	args[8] = fl.expires_at;
	nulls[8] = fl.expires_null ? 'n' : ' ';
	args[9] = fl.batch;
	nulls[9] = fl.batch_null ? 'n' : ' ';
	args[10] = Int16GetDatum(fl.nparents > 0 ? COORD_DEPS_CHILD : 0);
	args[12] = CStringGetTextDatum(fl.on_parent_failure);
	args[14] = PointerGetDatum(fl.trace);
	nulls[14] = fl.trace ? ' ' : 'n';

	CoordSpiBegin(&sw);
	args[13] = ObjectIdGetDatum(sw.save_userid);
	if (fl.nparents > 0)
		pending = ResolveParents(&fl, &cancel);
	args[11] = Int32GetDatum(pending);
	/* ids are drawn in insertion order, which follows the array */
	if (pending > 0 || cancel)
		CoordExec(&plan_enqueue_many_wait,
				  "INSERT INTO coord.job_wait (queue, payload, run_at, priority, host, max_attempts, "
				  "limit_key, max_snoozes, expires_at, batch, deps, pending, on_parent_failure, enqueued_by, trace) "
				  "SELECT $1, u.p, COALESCE($3, pg_catalog.now()), $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 "
				  "FROM pg_catalog.unnest($2) WITH ORDINALITY AS u(p, ord) ORDER BY u.ord "
				  "RETURNING id",
				  15, argtypes, args, nulls, SPI_OK_INSERT_RETURNING, "enqueue_many");
	else
		CoordExec(&plan_enqueue_many,
				  "INSERT INTO coord.job (queue, payload, run_at, priority, host, max_attempts, "
				  "limit_key, max_snoozes, expires_at, batch, deps, enqueued_by, trace) "
				  "SELECT $1, u.p, COALESCE($3, pg_catalog.now()), $4, $5, $6, $7, $8, $9, $10, $11, $14, $15 "
				  "FROM pg_catalog.unnest($2) WITH ORDINALITY AS u(p, ord) ORDER BY u.ord "
				  "RETURNING id",
				  15, argtypes, args, nulls, SPI_OK_INSERT_RETURNING, "enqueue_many");
	/* in the caller's memory: CoordSpiEnd frees SPI's */
	ids = SPI_palloc(sizeof(int64) * Max(SPI_processed, 1));
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	n = SPI_processed;
	if (!fl.batch_null)
		CoordBatchJoin(DatumGetInt64(fl.batch), n, fl.caller, false);
	if (fl.nparents > 0)
	{
		JobsWaitHooks()->link(fl.parents, fl.nparents, ids, n);
		if (cancel)
			(void) CoordCancelWaiting(JobsIdsArray(ids, n), "a parent job ended dead or cancelled");
	}
	CoordSpiEnd(&sw);

	/* RETURNING order is not promised; ids are */
	qsort(ids, n, sizeof(int64), CoordCmpInt64);
	for (i = 0; i < n; i++)
	{
		Datum		v = Int64GetDatum(ids[i]);
		bool		isnull = false;

		CHECK_FOR_INTERRUPTS();

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &v, &isnull);
	}
	JobsWakeAtCommit(queue, host);
	return (Datum) 0;
}

/* ---------- waiting jobs (jobs.h: for the wait hooks) ---------- */

/*
 * CoordReleaseWaiting moves waiting jobs (ids, a bigint[]) into coord.job in
 * one statement, due no earlier than now (a claim's frontier is past older
 * run_at values: src/jobs/README.md), and wakes their queues' idle
 * claimers at commit.  The row goes through jsonb so that every column of
 * coord.job is carried by name, whatever columns later versions add; the
 * function is in FROM, so it runs once a row (not once a column, as
 * (...).* would).  Inside SPI.  Returns how many moved.
 */
/*
 * While the waiting jobs' statements may be planned: no sequential or
 * bitmap scan of coord.job_wait, which a plan cached while it was small
 * would otherwise keep doing (src/workflows/README.md, Bounds).
 */
static int
SteerBegin(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

/*
 * The row goes through jsonb in a LATERAL function, evaluated once per row:
 * (jsonb_populate_record(...)).* ran it once per column of coord.job, and a
 * release of 1,000 children took a second.
 */
uint64
CoordReleaseWaiting(Datum ids)
{
	int			nest;
	Oid			argtypes[1] = {INT8ARRAYOID};
	Datum		args[1];
	uint64		n;
	uint64		i;

	args[0] = ids;
	nest = SteerBegin();
	n = CoordExec(&plan_release,
				  "WITH w AS (DELETE FROM coord.job_wait WHERE id OPERATOR(pg_catalog.=) ANY ($1) RETURNING *) "
				  "INSERT INTO coord.job SELECT r.* FROM w, LATERAL pg_catalog.jsonb_populate_record(NULL::coord.job, "
				  "pg_catalog.to_jsonb(w) OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('run_at', "
				  "GREATEST(w.run_at, pg_catalog.now()))) AS r RETURNING queue, host",
				  1, argtypes, args, NULL, SPI_OK_INSERT_RETURNING, "releasing waiting jobs");
	AtEOXact_GUC(true, nest);
	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		JobsWakeAtCommit(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
						 SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	}
	return n;
}

/*
 * CoordCancelWaiting moves waiting jobs into the history as cancelled (error,
 * when given, as their last_error), with what a finish runs (finish hooks,
 * the wait hooks' finished).  The DELETE returns each row as one coord.job
 * value, which JobsArchive takes as it takes RETURNING of a whole row.  Not
 * (...).*: that calls jsonb_populate_record once per column of coord.job,
 * each call setting up its cache anew (3 ms a row, most of a cascade's
 * time).  Inside SPI.
 */
uint64
CoordCancelWaiting(Datum ids, const char *error)
{
	int			nest;
	Oid			argtypes[1] = {INT8ARRAYOID};
	Datum		args[1];

	args[0] = ids;
	nest = SteerBegin();
	CoordExec(&plan_cancel_wait,
			  "DELETE FROM coord.job_wait AS w WHERE w.id OPERATOR(pg_catalog.=) ANY ($1) "
			  "RETURNING pg_catalog.jsonb_populate_record(NULL::coord.job, pg_catalog.to_jsonb(w))",
			  1, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "cancelling waiting jobs");
	AtEOXact_GUC(true, nest);
	return JobsArchive("cancelled", error, (Datum) 0, true);
}

/*
 * JobsEnqueueKeyed: a job linked to a request key (coord.mark_queued), with
 * no flow-control or workflow arguments.  Inside SPI, as the owner.
 */
int64
JobsEnqueueKeyed(const char *queue, Jsonb *payload, Datum run_at, bool run_at_null, int32 priority,
				 const char *host, int32 max_attempts, const char *request_key, Oid enqueued_by)
{
	return EnqueueOne(queue, payload, run_at, run_at_null, priority, NULL, host, max_attempts, NULL,
					  request_key, &no_flow, enqueued_by);
}
