/*-------------------------------------------------------------------------
 * jobs.c
 *		The job queue (docs/jobs.md): enqueue, claims that are leases or are
 *		bound to the claiming session, fencing tokens, retries, history.
 *
 * The family's top file: the SQL entry points other than the claim and
 * job control (enqueue, complete, fail, heartbeat, retry, the state
 * functions, purge, mark_queued_job), complete's and fail's argument checks
 * and work for jobs_next.c too (JobsCompleteArgs, JobsFailArgs,
 * JobsCompleteOne, JobsFailOne), and the origin API of
 * jobs.h, through which schedules and apps make their jobs and are told
 * when those finish (CoordEnqueueOrigin, CoordRevokeJob, ..., CoordJobsTick); and
 * the family's module init (CoordJobsInit), which hands jobs_common.c the
 * caches of the files above it (JobsCacheHooks), so that no file calls up.
 *
 * The family's protocol -- its files, the tables, claims, snoozes, tokens,
 * claimants, session claims and transactions, wake-ups, the claim frontier
 * and planning -- is src/jobs/README.md.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/sequence.h"
#include "common/pg_prng.h"
#include "executor/executor.h"
#include "lib/ilist.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "jobs/jobs_int.h"
#include "requests.h"

#define BACKOFF_BASE_US		(1000 * 1000)	/* 1 s */
#define BACKOFF_CAP_US		((int64) 3600 * 1000 * 1000)	/* 1 h */

static SPIPlanPtr plan_complete = NULL;
static SPIPlanPtr plan_complete_any = NULL;
static SPIPlanPtr plan_complete_many = NULL;
static SPIPlanPtr plan_fail_get = NULL;
static SPIPlanPtr plan_fail_retry = NULL;
static SPIPlanPtr plan_heartbeat = NULL;
static SPIPlanPtr plan_is_claim = NULL;
static SPIPlanPtr plan_retry = NULL;
static SPIPlanPtr plan_retry_drop = NULL;
static SPIPlanPtr plan_retry_conflict = NULL;
static SPIPlanPtr plan_state_live = NULL;
static SPIPlanPtr plan_state_hist = NULL;
static SPIPlanPtr plan_claim_live = NULL;
static SPIPlanPtr plan_claim_hist = NULL;
static SPIPlanPtr plan_purge = NULL;
static SPIPlanPtr plan_origin_enqueue = NULL;
static SPIPlanPtr plan_origin_job = NULL;
static SPIPlanPtr plan_revoke_get = NULL;
static SPIPlanPtr plan_revoke = NULL;
static SPIPlanPtr plan_tick_lost = NULL;
static SPIPlanPtr plan_tick_purge = NULL;
static SPIPlanPtr plan_tick_expired = NULL;
static SPIPlanPtr plan_state_wait = NULL;

PG_FUNCTION_INFO_V1(coord_complete);
PG_FUNCTION_INFO_V1(coord_complete_many);
PG_FUNCTION_INFO_V1(coord_fail);
PG_FUNCTION_INFO_V1(coord_heartbeat);
PG_FUNCTION_INFO_V1(coord_retry);
PG_FUNCTION_INFO_V1(coord_job_state);
PG_FUNCTION_INFO_V1(coord_claim_state);
PG_FUNCTION_INFO_V1(coord_job_claimed);
PG_FUNCTION_INFO_V1(coord_purge_jobs);
PG_FUNCTION_INFO_V1(coord_job_part);
PG_FUNCTION_INFO_V1(coord_mark_queued_job);

/* jobs_common.c's relcache callback: coord.job, job_history or job_token_seq changed */
static void
JobsRelsInval(void)
{
	JobsClaimRelsInval();
	JobsFinishRelsInval();
	JobsLimitsInval();
}

void
CoordJobsInit(void)
{
	static const JobsCacheHooks hooks = {JobsRelsInval, JobsLimitsInval, JobsLimitsXactEnd};

	JobsCommonInit(&hooks);
	JobsClaimInit();
}

/* The retry delay after attempt n: 1 s, 2 s, 4 s, ... up to an hour, times a jitter in [0.5, 1.5). */
static int64
BackoffUs(int32 attempt)
{
	double		d = (double) BACKOFF_BASE_US * pow(2.0, Min(Max(attempt, 1) - 1, 40));

	d = Min(d, (double) BACKOFF_CAP_US);
	d *= 0.5 + pg_prng_double(&pg_global_prng_state);
	return (int64) d;
}

/* ---------- complete, fail, heartbeat ---------- */

/*
 * complete's arguments (coord.complete and coord.complete_and_claim: id,
 * token, result first), checked before any work.
 */
void
JobsCompleteArgs(FunctionCallInfo fcinfo, JobsComplete *cm)
{
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	if (!PG_ARGISNULL(2))
		CoordCheckSize("job result", VARSIZE(PG_GETARG_JSONB_P(2)), COORD_RESULT_MAX_BYTES);
	cm->id = PG_GETARG_INT64(0);
	cm->token = PG_GETARG_INT64(1);
	cm->result_null = PG_ARGISNULL(2);
	cm->result = cm->result_null ? (Datum) 0 : PG_GETARG_DATUM(2);
}

/*
 * JobsCompleteOne: complete's work, inside SPI, as the owner (coord.complete
 * and coord.complete_and_claim): true when the claim (token) was still the
 * caller's and the job is now done.  queue, when not NULL, gets the done
 * job's queue, allocated in cxt (left alone when the completion did not
 * count).
 */
bool
JobsCompleteOne(const JobsComplete *cm, Oid caller, char **queue, MemoryContext cxt)
{
	int64		id = cm->id;
	Oid			argtypes[4] = {INT8OID, INT8OID, BOOLOID, OIDOID};
	Datum		args[4];
	bool		ok;

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(cm->token);
	args[2] = BoolGetDatum(JobsSessionClaimLive(id));
	args[3] = ObjectIdGetDatum(caller);

	/*
	 * the hot path: a statement each, the role test only where it applies;
	 * RETURNING the whole row, one column (JobsArchive)
	 */
	if (JobsActsForAnyClaimant(caller))
		CoordExec(&plan_complete_any,
				  "DELETE FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) $1 "
				  "AND j.token OPERATOR(pg_catalog.=) $2 "
				  "AND (j.lease_until IS NOT NULL OR $3) RETURNING j",
				  3, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "complete");
	else
		CoordExec(&plan_complete,
				  "DELETE FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) $1 "
				  "AND j.token OPERATOR(pg_catalog.=) $2 "
				  "AND ((j.lease_until IS NOT NULL AND j.claimed_by OPERATOR(pg_catalog.=) $4) "
				  "     OR $3) RETURNING j",
				  4, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "complete");
	if (queue != NULL && SPI_processed == 1)
		*queue = JobsRowQueue(cxt);
	ok = JobsArchive("done", NULL, cm->result, cm->result_null) == 1;
	if (ok)
		JobsDropSessionClaim(id);
	else
		JobsForgetClaimIfGone(id);
	return ok;
}

/*
 * The queue of the one job row that a DELETE ... RETURNING j (the whole row,
 * one composite column) left in SPI_tuptable, copied into cxt.
 */
char *
JobsRowQueue(MemoryContext cxt)
{
	SPITupleTable *tt = SPI_tuptable;
	bool		isnull;
	HeapTupleHeader th = DatumGetHeapTupleHeader(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
	TupleDesc	rowdesc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(th), HeapTupleHeaderGetTypMod(th));
	HeapTupleData row;
	Datum		q;
	char	   *queue;

	row.t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&row.t_self);
	row.t_tableOid = InvalidOid;
	row.t_data = th;
	q = heap_getattr(&row, SPI_fnumber(rowdesc, "queue"), rowdesc, &isnull);
	queue = MemoryContextStrdup(cxt, TextDatumGetCString(q));
	ReleaseTupleDesc(rowdesc);
	return queue;
}

/* coord.complete(id bigint, token bigint, result jsonb DEFAULT NULL) */
Datum
coord_complete(PG_FUNCTION_ARGS)
{
	JobsComplete cm;
	CoordUserSwitch sw;
	bool		ok;

	CoordNotInParallel(fcinfo);
	JobsCompleteArgs(fcinfo, &cm);
	CoordSpiBegin(&sw);
	ok = JobsCompleteOne(&cm, sw.save_userid, NULL, NULL);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(ok);
}

/* coord.complete_many(ids bigint[], tokens bigint[]) returns how many were completed */
Datum
coord_complete_many(PG_FUNCTION_ARGS)
{
	ArrayType  *ids,
			   *tokens;
	Oid			argtypes[5] = {INT8ARRAYOID, INT8ARRAYOID, INT8ARRAYOID, OIDOID, BOOLOID};
	Datum		args[5];
	CoordUserSwitch sw;
	uint64		done;
	uint64		r;
	Datum	   *elems;
	Datum	   *held;
	bool	   *enulls;
	int			n,
				nheld = 0,
				i;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "ids");
	CoordRequireArg(fcinfo, 1, "tokens");
	ids = PG_GETARG_ARRAYTYPE_P(0);
	tokens = PG_GETARG_ARRAYTYPE_P(1);
	if (ARR_NDIM(ids) > 1 || ARR_NDIM(tokens) > 1 ||
		ArrayGetNItems(ARR_NDIM(ids), ARR_DIMS(ids)) != ArrayGetNItems(ARR_NDIM(tokens), ARR_DIMS(tokens)))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("ids and tokens must be one-dimensional arrays of the same length")));
	if (array_contains_nulls(ids) || array_contains_nulls(tokens))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ids and tokens must not contain null elements")));
	deconstruct_array(ids, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &enulls, &n);
	held = palloc(sizeof(Datum) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (JobsSessionClaimLive(DatumGetInt64(elems[i])))
			held[nheld++] = elems[i];
	}
	args[0] = PointerGetDatum(ids);
	args[1] = PointerGetDatum(tokens);
	args[2] = PointerGetDatum(construct_array(held, nheld, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

	CoordSpiBegin(&sw);
	args[3] = ObjectIdGetDatum(sw.save_userid);
	args[4] = BoolGetDatum(JobsActsForAnyClaimant(sw.save_userid));
	done = CoordExec(&plan_complete_many,
					 "DELETE FROM coord.job AS j USING ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS t(id, token) "
					 "WHERE j.id OPERATOR(pg_catalog.=) t.id AND j.token OPERATOR(pg_catalog.=) t.token "
					 "AND ((j.lease_until IS NOT NULL "
					 "      AND (j.claimed_by OPERATOR(pg_catalog.=) $4 OR $5)) "
					 "     OR j.id OPERATOR(pg_catalog.=) ANY ($3)) "
					 "RETURNING j",
					 5, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "complete");
	{
		/*
		 * the completed ones: let their claims go; the others: only if gone.
		 * RETURNING the whole row, one composite column (JobsArchive): far
		 * cheaper to project than each of coord.job's columns
		 */
		SPITupleTable *tt = SPI_tuptable;
		int64	   *completed = palloc(sizeof(int64) * Max(done, 1));
		TupleDesc	rowdesc = NULL;
		int			c_id = 0;

		for (r = 0; r < done; r++)
		{
			bool		isnull;
			HeapTupleHeader th = DatumGetHeapTupleHeader(SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &isnull));
			HeapTupleData row;

			if (rowdesc == NULL)
			{
				rowdesc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(th), HeapTupleHeaderGetTypMod(th));
				c_id = SPI_fnumber(rowdesc, "id");
			}
			row.t_len = HeapTupleHeaderGetDatumLength(th);
			ItemPointerSetInvalid(&row.t_self);
			row.t_tableOid = InvalidOid;
			row.t_data = th;
			completed[r] = DatumGetInt64(heap_getattr(&row, c_id, rowdesc, &isnull));
		}
		if (rowdesc != NULL)
			ReleaseTupleDesc(rowdesc);
		(void) JobsArchive("done", NULL, (Datum) 0, true);
		/* sorted, so that each id is looked up in O(log n) */
		qsort(completed, done, sizeof(int64), CoordCmpInt64);
		for (i = 0; i < n; i++)
		{
			int64		id = DatumGetInt64(elems[i]);
			bool		was_done;

			CHECK_FOR_INTERRUPTS();
			was_done = done > 0 &&
				bsearch(&id, completed, done, sizeof(int64), CoordCmpInt64) != NULL;
			if (was_done)
				JobsDropSessionClaim(id);
			else
				JobsForgetClaimIfGone(id);
		}
	}
	CoordSpiEnd(&sw);
	PG_RETURN_INT32((int32) done);
}

/*
 * coord.fail's arguments (id, token, error, retry_after, pause_key: the first
 * five of coord.fail and coord.fail_and_claim), checked: the caller's
 * errors, before any work.  retry_after is at most coord.max_retry_after
 * (22023 beyond).
 */
void
JobsFailArgs(FunctionCallInfo fcinfo, JobsFail *f)
{
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	f->error = NULL;
	f->delay_us = -1;
	f->pause_key = false;
	if (!PG_ARGISNULL(2))
	{
		text	   *t = PG_GETARG_TEXT_PP(2);

		CoordCheckSize("job error text", VARSIZE_ANY_EXHDR(t), COORD_ERROR_MAX_BYTES);
		f->error = text_to_cstring(t);
	}
	f->id = PG_GETARG_INT64(0);
	f->token = PG_GETARG_INT64(1);
	if (!PG_ARGISNULL(3))
	{
		f->delay_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(3), "retry_after", true);
		/* no parking a job, or a key for every claimer, for years */
		if (f->delay_us > (int64) coord_max_retry_after * USECS_PER_SEC)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("retry_after is longer than coord.max_retry_after"),
					 errdetail("retry_after is %s; coord.max_retry_after is %s.",
							   DatumGetCString(DirectFunctionCall1(interval_out,
																   IntervalPGetDatum(PG_GETARG_INTERVAL_P(3)))),
							   GetConfigOptionByName("coord.max_retry_after", NULL, false)),
					 errhint("A superuser can raise coord.max_retry_after.")));
	}
	if (PG_NARGS() > 4)
	{
		CoordRequireArg(fcinfo, 4, "pause_key");
		f->pause_key = PG_GETARG_BOOL(4);
	}
	if (f->pause_key && f->delay_us < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pause_key needs retry_after"),
				 errdetail("The key is paused for retry_after.")));
}

/*
 * JobsFailOne: fail's work, inside SPI, as the owner (coord.fail and
 * coord.fail_and_claim).  Returns the job's new state, 'scheduled' (again,
 * after retry_after or an exponential backoff with jitter) or 'dead'; NULL
 * when the claim is not the caller's.  A retry_after is a snooze: it uses
 * no attempt, but past max_snoozes snoozes the job dies, as it does when it
 * would run after its expires_at.  pause_key pauses the job's limit_key for
 * retry_after, for every claimer.  queue, when not NULL, gets the failed
 * job's queue, allocated in cxt (left alone when the claim was not the
 * caller's).
 */
const char *
JobsFailOne(const JobsFail *f, Oid caller, char **queue_out, MemoryContext cxt)
{
	int64		id = f->id,
				token = f->token;
	const char *error = f->error;
	int64		delay_us = f->delay_us;
	Oid			argtypes[7] = {INT8OID, INT8OID, INTERVALOID, TEXTOID, BOOLOID, OIDOID, BOOLOID};
	Datum		args[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	const char *result = NULL;

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = (Datum) 0;
	args[3] = error ? CStringGetTextDatum(error) : (Datum) 0;
	nulls[3] = error ? ' ' : 'n';
	args[4] = BoolGetDatum(JobsSessionClaimLive(id));
	args[5] = ObjectIdGetDatum(caller);
	args[6] = BoolGetDatum(JobsActsForAnyClaimant(caller));
	CoordExecLimit(&plan_fail_get,
				   "SELECT attempt, max_attempts, snoozes, max_snoozes, expires_at, queue, limit_key "
				   "FROM coord.job "
				   "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
				   "AND ((lease_until IS NOT NULL "
				   "      AND (claimed_by OPERATOR(pg_catalog.=) $6 OR $7)) "
				   "     OR $5) "
				   "FOR UPDATE",
				   7, argtypes, args, nulls, 1, SPI_OK_SELECT, "fail");
	if (SPI_processed == 1)
	{
		SPITupleTable *tt = SPI_tuptable;
		bool		isnull;
		int32		attempt = DatumGetInt32(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
		int32		max_attempts = DatumGetInt32(SPI_getbinval(tt->vals[0], tt->tupdesc, 2, &isnull));
		int32		snoozes = DatumGetInt32(SPI_getbinval(tt->vals[0], tt->tupdesc, 3, &isnull));
		int32		max_snoozes = DatumGetInt32(SPI_getbinval(tt->vals[0], tt->tupdesc, 4, &isnull));
		Datum		expires = SPI_getbinval(tt->vals[0], tt->tupdesc, 5, &isnull);
		bool		expires_null = isnull;
		char	   *queue = SPI_getvalue(tt->vals[0], tt->tupdesc, 6);
		Datum		limit_key = SPI_getbinval(tt->vals[0], tt->tupdesc, 7, &isnull);
		bool		key_null = isnull;
		bool		uses_attempt = (delay_us < 0);
		const char *why = NULL;

		if (queue_out != NULL)
			*queue_out = MemoryContextStrdup(cxt, queue);
		if (!uses_attempt && snoozes >= max_snoozes)
			why = psprintf("snoozed %d times (max_snoozes %d)%s%s", snoozes, max_snoozes,
						   error ? ": " : "", error ? error : "");
		else if (uses_attempt && attempt >= max_attempts)
			why = error ? error : NULL;
		if (why == NULL && !(uses_attempt && attempt >= max_attempts))
		{
			if (uses_attempt)
				delay_us = BackoffUs(attempt);
			if (!expires_null &&
				GetCurrentTimestamp() + delay_us >= DatumGetTimestampTz(expires))
				why = psprintf("expired: the retry would run after its expires_at%s%s",
							   error ? ": " : "", error ? error : "");
		}
		if (f->pause_key && !key_null)
		{
			/* the 429 case: the whole key cools down, for every claimer */
			(void) JobsLimitPause(queue, DatumGetTextPP(limit_key),
								  CoordTimeAdd(GetCurrentTimestamp(), delay_us, "retry_after"), true);
		}

		if (why != NULL || (uses_attempt && attempt >= max_attempts))
		{
			(void) JobsMoveToHistory(id, true, token, "dead", why);
			result = "dead";
		}
		else
		{
			Interval   *delay = palloc0(sizeof(Interval));

			delay->time = delay_us;
			args[2] = IntervalPGetDatum(delay);

			/*
			 * $5: the attempt this claim used is given back (retry_after), a
			 * snooze counted
			 */
			args[4] = BoolGetDatum(!uses_attempt);
			CoordExec(&plan_fail_retry,
					  "UPDATE coord.job SET lease_until = NULL, claimed_at = NULL, "
					  "run_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3, "
					  "last_error = $4, attempt = attempt OPERATOR(pg_catalog.-) "
					  "(CASE WHEN $5 THEN 1 ELSE 0 END), "
					  "snoozes = snoozes OPERATOR(pg_catalog.+) (CASE WHEN $5 THEN 1 ELSE 0 END) "
					  "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2",
					  5, argtypes, args, nulls, SPI_OK_UPDATE, "fail");
			JobsLimitJobFinished(queue);
			result = "scheduled";
		}
		JobsDropSessionClaim(id);
	}
	else
		JobsForgetClaimIfGone(id);
	return result;
}

/*
 * coord.fail(id, token, error, retry_after, pause_key) returns text: the
 * job's new state, 'scheduled' or 'dead'; NULL when the claim is not the
 * caller's (JobsFailOne).
 */
Datum
coord_fail(PG_FUNCTION_ARGS)
{
	JobsFail	f;
	CoordUserSwitch sw;
	const char *result;

	CoordNotInParallel(fcinfo);
	JobsFailArgs(fcinfo, &f);
	CoordSpiBegin(&sw);
	result = JobsFailOne(&f, sw.save_userid, NULL, NULL);
	CoordSpiEnd(&sw);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(result));
}

/*
 * What heartbeat answers for a session-bound claim, which has no lease end:
 * 9999-01-01 00:00:00+00 (2921575 days after 2000-01-01).  Not infinity,
 * which psycopg 3 refuses and node-postgres turns into a number; in any
 * TimeZone (UTC-12 to UTC+14) the instant is still a year Python's datetime
 * holds, even with months added to it.
 */
#define SESSION_BOUND_UNTIL ((TimestampTz) INT64CONST(2921575) * USECS_PER_DAY)

/*
 * coord.heartbeat(id, token, lease) returns the new lease end;
 * SESSION_BOUND_UNTIL for a session-bound claim this session holds; NULL
 * when the claim is not the caller's.
 */
Datum
coord_heartbeat(PG_FUNCTION_ARGS)
{
	int64		id;
	Oid			argtypes[5] = {INT8OID, INT8OID, INTERVALOID, OIDOID, BOOLOID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	CoordUserSwitch sw;
	bool		found = false;
	Datum		until = (Datum) 0;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	id = PG_GETARG_INT64(0);
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(PG_GETARG_INT64(1));
	if (PG_ARGISNULL(2))
		nulls[2] = 'n';
	else
	{
		(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(2), "lease", false);
		args[2] = PG_GETARG_DATUM(2);
	}

	CoordSpiBegin(&sw);
	if (JobsSessionClaimLive(id))
	{
		CoordExecLimit(&plan_is_claim,
					   "SELECT 1 FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
					   "AND token OPERATOR(pg_catalog.=) $2",
					   3, argtypes, args, nulls, 1, SPI_OK_SELECT, "heartbeat");
		if (SPI_processed == 1)
		{
			found = true;
			until = TimestampTzGetDatum(SESSION_BOUND_UNTIL);
		}
	}
	else
	{
		args[3] = ObjectIdGetDatum(sw.save_userid);
		args[4] = BoolGetDatum(JobsActsForAnyClaimant(sw.save_userid));
		CoordExec(&plan_heartbeat,
				  "UPDATE coord.job SET lease = COALESCE($3, lease), "
				  "lease_until = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) COALESCE($3, lease) "
				  "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
				  "AND lease_until IS NOT NULL "
				  "AND (claimed_by OPERATOR(pg_catalog.=) $4 OR $5) RETURNING lease_until",
				  5, argtypes, args, nulls, SPI_OK_UPDATE_RETURNING, "heartbeat");
		if (SPI_processed == 1)
		{
			bool		isnull;

			found = true;
			until = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		}
	}
	if (!found)
		JobsForgetClaimIfGone(id);
	CoordSpiEnd(&sw);
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(until);
}

/* ---------- retry, state, purge ---------- */

/*
 * coord.retry(id): a dead job back to ready, attempts reset, with a new
 * token (so that the claimer it died under cannot complete it).  The live
 * copy goes in first (ON CONFLICT DO NOTHING), and the history row goes only
 * when it did: a live job that has taken the dead job's key since then is a
 * clear error, and the dead job stays where it is.
 */
Datum
coord_retry(PG_FUNCTION_ARGS)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		moved;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	args[0] = Int64GetDatum(PG_GETARG_INT64(0));
	CoordSpiBegin(&sw);
	CoordExec(&plan_retry,
			  "INSERT INTO coord.job (id, queue, payload, run_at, priority, key, group_key, "
			  "host, attempt, max_attempts, token, enqueued_at, last_error, request_key, "
			  "limit_key, max_snoozes, expires_at, batch, enqueued_by, trace, origin) "
			  "SELECT id, queue, payload, pg_catalog.now(), priority, key, group_key, host, "
			  "0, max_attempts, pg_catalog.nextval('coord.job_token_seq'::pg_catalog.regclass), "
			  "enqueued_at, last_error, request_key, limit_key, max_snoozes, expires_at, batch, enqueued_by, trace, "

	/*
	 * still the app run's job; a schedule has put its next instance on
	 * already
	 */
			  "CASE WHEN EXISTS (SELECT 1 FROM coord.job AS l "
			  "WHERE l.origin OPERATOR(pg_catalog.=) h.origin) THEN NULL ELSE h.origin END "
			  "FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) $1 "
			  "AND h.state OPERATOR(pg_catalog.=) 'dead' "
			  "ON CONFLICT DO NOTHING RETURNING queue, host, batch",
			  1, argtypes, args, NULL, SPI_OK_INSERT_RETURNING, "retry");
	moved = (SPI_processed == 1);
	if (moved)
	{
		bool		nobatch;
		Datum		batch = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &nobatch);

		/* JobsWakeAtCommit copies them: CoordSpiEnd frees SPI's memory */
		JobsWakeAtCommit(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
						 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
		CoordExec(&plan_retry_drop,
				  "DELETE FROM coord.job_history WHERE id OPERATOR(pg_catalog.=) $1",
				  1, argtypes, args, NULL, SPI_OK_DELETE, "retry");
		/* live again: its batch counts it once more (its death stays counted) */
		if (!nobatch)
			CoordBatchJoin(DatumGetInt64(batch), 1, sw.save_userid, true);
	}
	else
	{
		/*
		 * a dead job that did not go in: its key is taken (or a concurrent
		 * retry won)
		 */
		CoordExecLimit(&plan_retry_conflict,
					   "SELECT h.queue, h.key, l.id FROM coord.job_history AS h "
					   "JOIN coord.job AS l ON l.queue OPERATOR(pg_catalog.=) h.queue "
					   "AND l.key OPERATOR(pg_catalog.=) h.key AND l.origin IS NULL "
					   "WHERE h.id OPERATOR(pg_catalog.=) $1 AND h.state OPERATOR(pg_catalog.=) 'dead'",
					   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "retry");
		if (SPI_processed == 1)
		{
			SPITupleTable *tt = SPI_tuptable;

			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("cannot retry job " INT64_FORMAT ": a live job has its key", PG_GETARG_INT64(0)),
					 errdetail("Job %s in queue \"%s\" has the key \"%s\" now.",
							   SPI_getvalue(tt->vals[0], tt->tupdesc, 3),
							   SPI_getvalue(tt->vals[0], tt->tupdesc, 1),
							   SPI_getvalue(tt->vals[0], tt->tupdesc, 2)),
					 errhint("Wait for that job to finish, or cancel it, and retry again; the dead job stays in the history.")));
		}
	}
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(moved);
}

/* coord.job_claimed(id): does a session hold the job's claim lock? */
Datum
coord_job_claimed(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	JobsJobTag(&tag, PG_GETARG_INT64(0));
	PG_RETURN_BOOL(LockWaiterCount(&tag) > 0);
}

/* coord.job_state(id) */
Datum
coord_job_state(PG_FUNCTION_ARGS)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	char	   *state = NULL;
	text	   *result = NULL;

	CoordRequireArg(fcinfo, 0, "id");
	args[0] = Int64GetDatum(PG_GETARG_INT64(0));
	CoordSpiBegin(&sw);
	CoordExecLimit(&plan_state_live,
				   "SELECT lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), run_at OPERATOR(pg_catalog.>) pg_catalog.now() "
				   "FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "job_state");
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		leased = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		bool		lease_live = !isnull && DatumGetBool(leased);
		bool		future = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		LOCKTAG		tag;

		JobsJobTag(&tag, PG_GETARG_INT64(0));
		if (lease_live || LockWaiterCount(&tag) > 0)
			state = "running";
		else
			state = future ? "scheduled" : "ready";
	}
	else
	{
		CoordExecLimit(&plan_state_hist,
					   "SELECT state FROM coord.job_history WHERE id OPERATOR(pg_catalog.=) $1",
					   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "job_state");
		if (SPI_processed == 1)
			state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		else
		{
			CoordExecLimit(&plan_state_wait,
						   "SELECT 1 FROM coord.job_wait WHERE id OPERATOR(pg_catalog.=) $1",
						   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "job_state");
			if (SPI_processed == 1)
				state = "waiting";
		}
	}
	if (state != NULL)
		result = CoordSpiText(state);
	CoordSpiEnd(&sw);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(result);
}

/*
 * coord.claim_state(id, token): what became of one claim of a job, for a
 * worker that does not know whether its complete or fail committed (the
 * answer was lost with the connection, or the commit's wait for a
 * synchronous standby was cancelled).  On the live job under this token:
 * 'claimed' (a lease claim, expired or not, or a session holds the
 * session-bound claim: complete and fail can still act), 'released' (a
 * session-bound claim whose session ended with nothing reported), or
 * 'scheduled' (a fail of this claim put the job back: fail clears
 * claimed_at).  In the history under this token: the state the job finished
 * in, 'done', 'dead' or 'cancelled'.  NULL: claimed again since (another
 * token), purged, never claimed (token 0), or a live claim of another role,
 * which answers as a stale token does (src/jobs/README.md, Claimants); a
 * finished claim's token can no longer act, so the history answers any caller.
 */
Datum
coord_claim_state(PG_FUNCTION_ARGS)
{
	Oid			argtypes[4] = {INT8OID, INT8OID, OIDOID, BOOLOID};
	Datum		args[4];
	CoordUserSwitch sw;
	const char *state = NULL;
	text	   *result = NULL;
	int64		id;

	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	id = PG_GETARG_INT64(0);
	if (PG_GETARG_INT64(1) <= 0)
		PG_RETURN_NULL();
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(PG_GETARG_INT64(1));
	CoordSpiBegin(&sw);
	args[2] = ObjectIdGetDatum(sw.save_userid);
	args[3] = BoolGetDatum(JobsActsForAnyClaimant(sw.save_userid));
	CoordExecLimit(&plan_claim_live,
				   "SELECT claimed_at IS NULL, lease_until IS NOT NULL FROM coord.job "
				   "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
				   "AND (claimed_by OPERATOR(pg_catalog.=) $3 OR (claimed_by IS NOT NULL AND $4))",
				   4, argtypes, args, NULL, 1, SPI_OK_SELECT, "claim_state");
	if (SPI_processed == 1)
	{
		bool		isnull;
		bool		failed = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		bool		leased = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		LOCKTAG		tag;

		JobsJobTag(&tag, id);
		if (failed)
			state = "scheduled";
		else if (leased || LockWaiterCount(&tag) > 0)
			state = "claimed";
		else
			state = "released";
		result = CoordSpiText(state);
	}
	else
	{
		CoordExecLimit(&plan_claim_hist,
					   "SELECT state FROM coord.job_history WHERE id OPERATOR(pg_catalog.=) $1 "
					   "AND token OPERATOR(pg_catalog.=) $2",
					   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "claim_state");
		if (SPI_processed == 1)
			result = CoordSpiText(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	}
	CoordSpiEnd(&sw);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(result);
}

/* coord.purge_jobs(older_than DEFAULT NULL): deletes finished jobs older than that */
Datum
coord_purge_jobs(PG_FUNCTION_ARGS)
{
	Oid			argtypes[1] = {INTERVALOID};
	Datum		args[1];
	CoordUserSwitch sw;
	uint64		n;

	CoordNotInParallel(fcinfo);
	if (PG_ARGISNULL(0))
	{
		Interval   *iv = palloc0(sizeof(Interval));

		iv->time = (int64) coord_job_history_retention * USECS_PER_SEC;
		args[0] = IntervalPGetDatum(iv);
	}
	else
	{
		(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(0), "older_than", true);
		args[0] = PG_GETARG_DATUM(0);
	}
	CoordSpiBegin(&sw);
	n = CoordExec(&plan_purge,
				  "DELETE FROM coord.job_history WHERE finished_at OPERATOR(pg_catalog.<) "
				  "(pg_catalog.now() OPERATOR(pg_catalog.-) $1)",
				  1, argtypes, args, NULL, SPI_OK_DELETE, "purge_jobs");
	CoordSpiEnd(&sw);
	PG_RETURN_INT64((int64) n);
}

/* coord.job_part(key, id): hash-space position of a job */
Datum
coord_job_part(PG_FUNCTION_ARGS)
{
	uint64		h;

	if (!PG_ARGISNULL(0))
	{
		text	   *k = PG_GETARG_TEXT_PP(0);

		h = CoordNameKey(VARDATA_ANY(k), VARSIZE_ANY_EXHDR(k));
	}
	else if (!PG_ARGISNULL(1))
	{
		int64		id = PG_GETARG_INT64(1);

		h = CoordNameKey((const char *) &id, sizeof(id));
	}
	else
		PG_RETURN_NULL();
	PG_RETURN_INT32((int32) (h & 0x7fffffff));
}

/*
 * coord.mark_queued(key, queue, payload, run_at, priority, host, max_attempts)
 * returns bigint: mark_queued(key), and a job linked to the key, in one
 * transaction.
 */
Datum
coord_mark_queued_job(PG_FUNCTION_ARGS)
{
	char	   *rkey;
	char	   *queue = CoordNameArg(fcinfo, 1, "queue", false);
	char	   *host = CoordNameArg(fcinfo, 5, "host", true);
	int32		max_attempts = JobsMaxAttemptsArg(fcinfo, 6);
	Jsonb	   *payload;
	CoordUserSwitch sw;
	int64		id;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "key");
	CoordRequireArg(fcinfo, 2, "payload");
	CoordRequireArg(fcinfo, 4, "priority");
	rkey = text_to_cstring(PG_GETARG_TEXT_PP(0));
	payload = CoordCheckPayload(PG_GETARG_JSONB_P(2));

	/*
	 * the request side first: it raises 55000 unless this session owns the
	 * key
	 */
	CoordRequestMarkQueued(rkey);

	CoordSpiBegin(&sw);
	id = JobsEnqueueKeyed(queue, payload, PG_GETARG_DATUM(3), PG_ARGISNULL(3), PG_GETARG_INT32(4),
						  host, max_attempts, rkey, sw.save_userid);
	CoordSpiEnd(&sw);
	JobsWakeAtCommit(queue, host);
	PG_RETURN_INT64(id);
}

/* ---------- for the concerns that make jobs (inside SPI, as the owner) ---------- */

/*
 * CoordEnqueueOrigin adds the job of a schedule or an app run (or, origin
 * NULL, a batch's callback: enqueued_by, the batch's opener, may await it
 * and read it in coord.my_jobs), with an optional dedupe key.  At most one live job has a given origin (a unique
 * index): returns 0, and adds nothing, when there is one already (or a live
 * job with that key), also against a concurrent caller.
 */
int64
CoordEnqueueOrigin(const char *queue, Jsonb *payload, TimestampTz run_at, const char *host,
				   int32 max_attempts, const char *origin, const char *key, Oid enqueued_by)
{
	Oid			argtypes[8] = {TEXTOID, JSONBOID, TIMESTAMPTZOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, OIDOID};
	Datum		args[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;

	args[0] = CStringGetTextDatum(queue);
	args[1] = JsonbPGetDatum(payload);
	args[2] = TimestampTzGetDatum(run_at);
	args[3] = host ? CStringGetTextDatum(host) : (Datum) 0;
	nulls[3] = host ? ' ' : 'n';
	args[4] = Int32GetDatum(max_attempts);
	args[5] = origin ? CStringGetTextDatum(origin) : (Datum) 0;
	nulls[5] = origin ? ' ' : 'n';
	args[6] = key ? CStringGetTextDatum(key) : (Datum) 0;
	nulls[6] = key ? ' ' : 'n';
	args[7] = ObjectIdGetDatum(enqueued_by);
	nulls[7] = OidIsValid(enqueued_by) ? ' ' : 'n';
	CoordExec(&plan_origin_enqueue,
			  "INSERT INTO coord.job (queue, payload, run_at, priority, host, max_attempts, origin, key, "
			  "enqueued_by) VALUES ($1, $2, $3, 0, $4, $5, $6, $7, $8) "
			  "ON CONFLICT DO NOTHING RETURNING id",
			  8, argtypes, args, nulls, SPI_OK_INSERT_RETURNING, "enqueue");
	if (SPI_processed != 1)
		return 0;
	JobsWakeAtCommit(queue, host);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* CoordOriginJob: the id of the live job with this origin, or 0. */
int64
CoordOriginJob(const char *origin)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;

	args[0] = CStringGetTextDatum(origin);
	CoordExecLimit(&plan_origin_job,
				   "SELECT id FROM coord.job WHERE origin OPERATOR(pg_catalog.=) $1",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "origin lookup");
	if (SPI_processed != 1)
		return 0;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * CoordRevokeJob takes a job away from whoever claimed it (an app run past
 * its timeout) and retries it like a failure: with attempts left it goes
 * back after a backoff under a new id, so that neither a lease holder's
 * token nor a session holder's claim lock refers to it any more (their
 * complete returns false); otherwise it dies.  Only the claim with this
 * token is revoked: the token is re-checked under the row lock, so a job
 * claimed again since the caller looked keeps its new claim.  Returns the
 * new id, 0 when it died, -1 when there was no such job or claim.
 */
int64
CoordRevokeJob(int64 id, int64 token, const char *error)
{
	Oid			argtypes[4] = {INT8OID, INTERVALOID, TEXTOID, INT8OID};
	Datum		args[4];
	bool		isnull;
	int32		attempt,
				max_attempts;
	Interval   *delay = palloc0(sizeof(Interval));

	args[0] = Int64GetDatum(id);
	args[1] = (Datum) 0;
	args[2] = CStringGetTextDatum(error);
	args[3] = Int64GetDatum(token);
	/* FOR UPDATE re-evaluates the token on the latest row version */
	CoordExecLimit(&plan_revoke_get,
				   "SELECT attempt, max_attempts FROM coord.job "
				   "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $4 FOR UPDATE",
				   4, argtypes, args, NULL, 1, SPI_OK_SELECT, "revoke");
	if (SPI_processed != 1)
		return -1;
	attempt = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	max_attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (attempt >= max_attempts)
	{
		(void) JobsMoveToHistory(id, true, token, "dead", error);
		return 0;
	}
	delay->time = BackoffUs(attempt);
	args[1] = IntervalPGetDatum(delay);
	CoordExec(&plan_revoke,
			  "WITH d AS (DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 RETURNING *) "
			  "INSERT INTO coord.job (queue, payload, run_at, priority, key, group_key, host, "
			  "attempt, max_attempts, enqueued_at, last_error, request_key, origin, "
			  "limit_key, snoozes, max_snoozes, expires_at, enqueued_by, trace) "
			  "SELECT queue, payload, pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2, "
			  "priority, key, group_key, host, attempt, max_attempts, enqueued_at, $3, "
			  "request_key, origin, limit_key, snoozes, max_snoozes, expires_at, enqueued_by, trace "
			  "FROM d RETURNING id, queue, host",
			  3, argtypes, args, NULL, SPI_OK_INSERT_RETURNING, "revoke");
	if (SPI_processed != 1)
		return -1;
	/* the old id is gone: its awaiters learn so (coord.await: no such job) */
	JobsNoteFinished(id);
	{
		char	   *queue = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		char	   *host = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		int64		newid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		JobsWakeAtCommit(queue, host);
		return newid;
	}
}

/*
 * CoordDeleteUnclaimed deletes the live jobs that nobody has claimed among
 * those `which` selects: a SELECT of job ids, the caller's, with parameters
 * $1 .. $nargs, planned once into *slot.  A claimed job is left to finish
 * (its finish hook then finds what the caller changed).  A row another
 * transaction has locked is skipped, not waited for: it is being claimed
 * (a lease claim in an open transaction holds no claim lock, only its row
 * lock until commit, and waiting for it held up the caller, coord.schedule
 * or drop_app, for as long as that worker's transaction, and deadlocked
 * with the finish hook when the worker completed the job in it), or
 * finished.  "Unclaimed" is re-checked on the row version locked.  Returns
 * how many it deleted.
 */
uint64
CoordDeleteUnclaimed(SPIPlanPtr *slot, const char *which, int nargs, Oid *argtypes, Datum *args)
{
	bool		isnull;

	/* coord.metrics counts them as cancelled (src/metrics.c) */
	if (*slot == NULL)
		(void) CoordPlan(slot,
						 psprintf("WITH d AS (DELETE FROM coord.job AS j "
								  "WHERE j.id OPERATOR(pg_catalog.=) ANY (ARRAY("
								  "SELECT x.id FROM coord.job AS x "
								  "WHERE x.id OPERATOR(pg_catalog.=) ANY (ARRAY(%s)) "
								  "AND (x.lease_until IS NULL OR x.lease_until OPERATOR(pg_catalog.<=) pg_catalog.now()) "
								  "AND NOT coord.job_claimed(x.id) FOR UPDATE OF x SKIP LOCKED)) RETURNING j.queue), "
								  "c AS (INSERT INTO coord.queue_totals AS t (queue, cancelled) "
								  "SELECT d.queue, pg_catalog.count(*) FROM d GROUP BY d.queue "
								  "ON CONFLICT (queue) DO UPDATE SET cancelled = t.cancelled OPERATOR(pg_catalog.+) excluded.cancelled) "
								  "SELECT pg_catalog.count(*) FROM d", which),
						 nargs, argtypes);
	(void) CoordExecPlan(*slot, args, NULL, SPI_OK_SELECT, "removing unclaimed jobs");
	return (uint64) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * The tick's kills go in batches of TICK_BATCH jobs, at most TICK_KILL_MAX
 * of each kind per tick, and once they have taken TICK_KILL_MS only each
 * kind's first batch still starts (a kill costs about 30 us here: 10,000
 * take 0.3 s on an idle machine); its purge of the history deletes at most
 * TICK_PURGE_MAX rows.  So a backlog of any size (enqueue_many adds up to ENQUEUE_MANY_MAX
 * expired jobs a call) drains over several ticks, each short enough for a
 * statement_timeout, and the apps' share of the tick, which comes after,
 * always runs.  Each batch's rows and memory are freed before the next: a
 * tick that killed 100,000 jobs one by one kept them all (1.2 GB) and ran 5
 * to 26 s.
 */
#define TICK_BATCH			1000
#define TICK_KILL_MAX		10000
#define TICK_KILL_MS		500
#define TICK_PURGE_MAX		50000

/*
 * One kind of the tick's kills: *slot's DELETE ... RETURNING * (of at most
 * $2 jobs as of $1, locked with SKIP LOCKED), into the history as dead
 * with error, batch after batch until TICK_KILL_MAX, or stop has passed.
 * Returns how many died.
 */
static int64
TickKill(SPIPlanPtr *slot, const char *sql, TimestampTz asof, TimestampTz stop, const char *error)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Datum		args[2];
	MemoryContext batch = AllocSetContextCreate(CurrentMemoryContext, "pg_coord tick batch",
												ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(batch);
	int64		killed = 0;

	args[0] = TimestampTzGetDatum(asof);
	while (killed < TICK_KILL_MAX && (killed == 0 || GetCurrentTimestamp() < stop))
	{
		SPITupleTable *tt;
		int			want = (int) Min(TICK_BATCH, TICK_KILL_MAX - killed);
		uint64		n;

		CHECK_FOR_INTERRUPTS();
		args[1] = Int32GetDatum(want);
		CoordExec(slot, sql, 2, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "tick");
		tt = SPI_tuptable;
		n = SPI_processed;
		killed += JobsArchive("dead", error, (Datum) 0, true);
		SPI_freetuptable(tt);
		MemoryContextReset(batch);
		if (n < (uint64) want)
			break;
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(batch);
	return killed;
}

/*
 * CoordJobsTick: the job queue's share of coord.tick.  Jobs whose last
 * attempt's lease expired die (claims would kill them too, but only when one
 * reaches them), so do unclaimed jobs past their expires_at, and the history
 * loses what is older than the retention, each bounded per tick (above).
 * All go by the real clock when the tick's now is later: a tick with a
 * simulated future time (apps are driven that way) must not expire leases
 * that have not expired, nor purge history that is still kept.  Returns how
 * many jobs it touched.
 */
int64
CoordJobsTick(TimestampTz now)
{
	Oid			argtypes[3] = {TIMESTAMPTZOID, INTERVALOID, INT4OID};
	Datum		args[3];
	Interval   *keep = palloc0(sizeof(Interval));
	TimestampTz asof = Min(now, GetCurrentTimestamp());
	TimestampTz stop = GetCurrentTimestamp() + (int64) TICK_KILL_MS * 1000;
	int64		touched = 0;

	/*
	 * a lease is set only by lease claims; SKIP LOCKED: a claim may be taking
	 * it now
	 */
	touched += TickKill(&plan_tick_lost,
						"DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) ANY (ARRAY("
						"SELECT id FROM coord.job WHERE lease_until OPERATOR(pg_catalog.<) $1 "
						"AND attempt OPERATOR(pg_catalog.>=) max_attempts "
						"LIMIT $2 FOR UPDATE SKIP LOCKED)) RETURNING *",
						asof, stop, "claim lost after the last attempt: the lease expired");

	/*
	 * jobs past their expires_at that nobody runs die (claims would kill them
	 * too), the longest expired first
	 */
	touched += TickKill(&plan_tick_expired,
						"DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) ANY (ARRAY("
						"SELECT id FROM coord.job WHERE expires_at OPERATOR(pg_catalog.<) $1 "
						"AND (lease_until IS NULL OR lease_until OPERATOR(pg_catalog.<=) $1) "
						"AND NOT coord.job_claimed(id) "
						"ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)) RETURNING *",
						asof, stop, "expired: past its expires_at");

	if (coord_job_history_retention > 0)
	{
		args[0] = TimestampTzGetDatum(asof);
		keep->time = (int64) coord_job_history_retention * USECS_PER_SEC;
		args[1] = IntervalPGetDatum(keep);
		args[2] = Int32GetDatum(TICK_PURGE_MAX);
		touched += CoordExec(&plan_tick_purge,
							 "DELETE FROM coord.job_history WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
							 "SELECT ctid FROM coord.job_history WHERE finished_at OPERATOR(pg_catalog.<) "
							 "($1 OPERATOR(pg_catalog.-) $2) LIMIT $3))",
							 3, argtypes, args, NULL, SPI_OK_DELETE, "tick");
	}
	return touched;
}
