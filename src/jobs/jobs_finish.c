/*-------------------------------------------------------------------------
 * jobs_finish.c
 *		The job queue's finish (see src/jobs/README.md): jobs a DELETE ...
 *		RETURNING took out of coord.job go into coord.job_history through the
 *		table access method (JobsArchive), and then what depends on a job
 *		finishing runs in the same transaction: the linked request key, and the
 *		finish hook of the concern the job's origin belongs to, the jobs-ended
 *		hook (batches), and, in a queue with a concurrency limit, the queue's
 *		idle claimers are woken (its slot is free; jobs_limits.c); the job's
 *		awaiters are woken at commit (JobsNoteFinished, jobs_common.c).
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

static SPIPlanPtr plan_finish = NULL;

/* ---------- finish hooks, by origin prefix ---------- */

/*
 * The concerns that make jobs register their origin prefix and hook from
 * their module init (CoordRegisterJobOrigin); a finished job with an
 * origin goes to the hook of the first prefix it starts with.  There are a
 * few of them: a scan of this array is a prefix compare or two.
 */
#define ORIGINS_MAX	8

typedef struct JobOrigin
{
	const char *prefix;
	size_t		len;
	CoordJobFinishedHook hook;
} JobOrigin;

static JobOrigin origins[ORIGINS_MAX];
static int	norigins = 0;

void
CoordRegisterJobOrigin(const char *prefix, CoordJobFinishedHook hook)
{
	int			i;

	/*
	 * A prefix registered again must bring the same hook (a module init run
	 * twice); two concerns whose prefixes overlap would steal each other's
	 * jobs, so that is refused too.
	 */
	for (i = 0; i < norigins; i++)
	{
		size_t		len = Min(origins[i].len, strlen(prefix));

		if (strcmp(origins[i].prefix, prefix) == 0 && origins[i].hook == hook)
			return;
		if (strncmp(origins[i].prefix, prefix, len) == 0)
			elog(ERROR, "job origin prefix \"%s\" overlaps \"%s\"",
				 prefix, origins[i].prefix);
	}
	if (norigins >= ORIGINS_MAX)
		elog(ERROR, "too many job origin prefixes");
	origins[norigins].prefix = prefix;
	origins[norigins].len = strlen(prefix);
	origins[norigins].hook = hook;
	norigins++;
}

/* The jobs-ended and batch-join hooks (jobs.h): one each, or none */
static CoordJobsEndedHook jobs_ended_hook = NULL;
static CoordBatchJoinHook batch_join_hook = NULL;

void
CoordRegisterJobsEnded(CoordJobsEndedHook hook)
{
	if (jobs_ended_hook != NULL && jobs_ended_hook != hook)
		elog(ERROR, "a jobs-ended hook is registered already");
	jobs_ended_hook = hook;
}

void
CoordRegisterBatchJoin(CoordBatchJoinHook hook)
{
	if (batch_join_hook != NULL && batch_join_hook != hook)
		elog(ERROR, "a batch-join hook is registered already");
	batch_join_hook = hook;
}

/* The enqueue functions' call: n jobs went into batch (nothing registered: refused) */
void
CoordBatchJoin(int64 batch, int64 n, Oid caller, bool retried)
{
	if (batch_join_hook == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("batches are not available")));
	if (n > 0)
		batch_join_hook(batch, n, caller, retried);
}

/* The wait hooks (jobs.h): NULL until src/workflows/ registers them */
static const CoordJobWaitHooks *wait_hooks = NULL;

void
CoordRegisterJobWait(const CoordJobWaitHooks *hooks)
{
	wait_hooks = hooks;
}

const CoordJobWaitHooks *
JobsWaitHooks(void)
{
	return wait_hooks;
}

/* Calls the finish hook of the concern the job's origin belongs to, if any. */
static void
JobOriginFinished(const char *origin, int64 job_id, const char *state, TimestampTz finished_at,
				  Datum result, bool result_null)
{
	int			i;

	for (i = 0; i < norigins; i++)
		if (strncmp(origin, origins[i].prefix, origins[i].len) == 0)
		{
			origins[i].hook(origin, job_id, state, finished_at, result, result_null);
			return;
		}
}

/*
 * Where each column of coord.job_history comes from, matched by name when
 * the map is built, so that the two tables' column orders (and columns
 * dropped by updates) do not matter.
 */
typedef enum HistorySource
{
	HIST_NULL,					/* a dropped column */
	HIST_JOB,					/* the job's column of that name */
	HIST_LAST_ERROR,			/* the job's last_error, unless the caller
								 * gives one */
	HIST_STATE,					/* the history's own: the state it finished in */
	HIST_FINISHED_AT,
	HIST_RESULT					/* a completed job's result */
} HistorySource;

typedef struct HistoryColumn
{
	HistorySource source;
	AttrNumber	job_attno;		/* HIST_JOB, HIST_LAST_ERROR: in the job rows */
} HistoryColumn;

/*
 * JobsArchive' map, valid for hist_desc (the relcache's descriptor of
 * coord.job_history) and a RETURNING * of jnatts columns of coord.job;
 * forgotten when either relation's relcache entry is invalidated.
 */
typedef struct ArchiveMap
{
	TupleDesc	hist_desc;
	int			jnatts;
	HistoryColumn *cols;		/* per history column */
	AttrNumber	request_key,	/* in the job rows */
				origin,
				id,
				queue,
				deps;			/* InvalidAttrNumber: a catalog without it */
} ArchiveMap;

static ArchiveMap archive_map;

/*
 * What the map points to (cols) lives in a context of its own, reset
 * wholesale when the map is built again.  An invalidation only marks the
 * map stale: it can arrive while JobsArchive reads cols (opening the
 * history's indexes accepts invalidation messages), so the memory goes at
 * the next LoadArchiveMap, not in the callback.
 */
static MemoryContext archive_cxt = NULL;

void
JobsFinishRelsInval(void)
{
	archive_map.hist_desc = NULL;
}

/* The job rows' column of that name, of the history column's type. */
static AttrNumber
JobColumnFor(TupleDesc jdesc, Form_pg_attribute ha)
{
	const char *name = NameStr(ha->attname);
	int			k;

	for (k = 0; k < jdesc->natts; k++)
	{
		Form_pg_attribute ja = TupleDescAttr(jdesc, k);

		if (!ja->attisdropped && strcmp(NameStr(ja->attname), name) == 0)
		{
			if (ja->atttypid != ha->atttypid)
				elog(ERROR, "column %s of coord.job and coord.job_history differ in type", name);
			return k + 1;
		}
	}
	elog(ERROR, "coord.job has no column %s for coord.job_history", name);
	return InvalidAttrNumber;	/* keep compiler quiet */
}

/* Builds the map on the first completion, and after either table changed. */
static void
LoadArchiveMap(TupleDesc hdesc, TupleDesc jdesc)
{
	ArchiveMap *m = &archive_map;
	int			i;

	if (m->hist_desc == hdesc && m->jnatts == jdesc->natts)
		return;
	m->hist_desc = NULL;
	m->cols = NULL;
	MemoryContextReset(CoordCacheContext(&archive_cxt, "pg_coord job archive map"));
	m->cols = MemoryContextAllocZero(archive_cxt,
									 sizeof(HistoryColumn) * Max(hdesc->natts, 1));
	for (i = 0; i < hdesc->natts; i++)
	{
		Form_pg_attribute ha = TupleDescAttr(hdesc, i);
		const char *name = NameStr(ha->attname);
		HistoryColumn *col = &m->cols[i];

		col->source = HIST_NULL;
		col->job_attno = InvalidAttrNumber;
		if (ha->attisdropped)
			continue;
		if (strcmp(name, "state") == 0)
			col->source = HIST_STATE;
		else if (strcmp(name, "finished_at") == 0)
			col->source = HIST_FINISHED_AT;
		else if (strcmp(name, "result") == 0)
			col->source = HIST_RESULT;
		else
		{
			col->source = strcmp(name, "last_error") == 0 ? HIST_LAST_ERROR : HIST_JOB;
			col->job_attno = JobColumnFor(jdesc, ha);
		}
	}
	m->request_key = SPI_fnumber(jdesc, "request_key");
	m->origin = SPI_fnumber(jdesc, "origin");
	m->id = SPI_fnumber(jdesc, "id");
	m->queue = SPI_fnumber(jdesc, "queue");
	m->deps = SPI_fnumber(jdesc, "deps");
	if (m->deps <= 0)
		m->deps = InvalidAttrNumber;
	if (m->request_key <= 0 || m->origin <= 0 || m->id <= 0 || m->queue <= 0)
		elog(ERROR, "a job row without id, request_key or origin");
	m->jnatts = jdesc->natts;
	m->hist_desc = hdesc;
}

/*
 * JobsArchive moves the jobs a DELETE ... RETURNING * (or RETURNING of the
 * whole row, one composite column) has just taken out of
 * coord.job (the SPI result) into coord.job_history as state st, then, job
 * by job, settles its request key (requests.c) and calls the finish hook of
 * its origin's prefix, in this same transaction.  error, when given,
 * replaces last_error; result is stored for completed jobs.  Returns how
 * many jobs it moved.  Inside SPI.
 *
 * The history row is inserted through the table access method and
 * ExecInsertIndexTuples rather than by an INSERT in the DELETE's statement:
 * a completion then costs one executor start, not a CTE with two
 * ModifyTables.  Columns are matched by name, so the two tables' column
 * orders (and columns dropped by updates) do not matter; the history's own
 * (state, finished_at, result) are set here.
 */
uint64
JobsArchive(const char *st, const char *error, Datum result, bool result_null)
{
	SPITupleTable *tt = SPI_tuptable;
	uint64		n = SPI_processed;
	TupleDesc	jdesc = tt->tupdesc;
	HeapTuple  *rows = tt->vals;
	TupleDesc	rowdesc = NULL;
	Relation	rel;
	TupleDesc	hdesc;
	int			i;
	uint64		r;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	Datum	   *values;
	bool	   *nulls;
	Datum	   *jvalues;
	bool	   *jnulls;
	Datum		state = CStringGetTextDatum(st);
	Datum		err = error ? CStringGetTextDatum(error) : (Datum) 0;
	TimestampTz *finished;
	int16	   *deps;			/* per row, when the wait hooks are registered */
	bool		done = strcmp(st, "done") == 0;
	const HistoryColumn *cols;
	AttrNumber	c_request_key,
				c_origin,
				c_id,
				c_queue,
				c_deps;
	bool		limited;
	bool		any_deps;
	TimestampTz now;

	if (n == 0)
		return 0;
	finished = palloc(sizeof(TimestampTz) * n);
	deps = wait_hooks ? palloc(sizeof(int16) * n) : NULL;
	if (jdesc->natts == 1)
	{
		/*
		 * RETURNING of the whole row (coord.job has many columns): one
		 * composite column, which a completion projects and copies far more
		 * cheaply than each of the row's columns; the rows are its datums.
		 */
		Form_pg_attribute a = TupleDescAttr(jdesc, 0);
		HeapTupleData *unwrapped = palloc(sizeof(HeapTupleData) * n);

		rowdesc = lookup_rowtype_tupdesc(a->atttypid, a->atttypmod);
		rows = palloc(sizeof(HeapTuple) * n);
		for (r = 0; r < n; r++)
		{
			bool		isnull;
			HeapTupleHeader th = DatumGetHeapTupleHeader(SPI_getbinval(tt->vals[r], jdesc, 1, &isnull));

			unwrapped[r].t_len = HeapTupleHeaderGetDatumLength(th);
			ItemPointerSetInvalid(&unwrapped[r].t_self);
			unwrapped[r].t_tableOid = InvalidOid;
			unwrapped[r].t_data = th;
			rows[r] = &unwrapped[r];
		}
		jdesc = rowdesc;
	}
	JobsLookupRels();
	rel = table_open(jobs_rels.history, RowExclusiveLock);
	hdesc = RelationGetDescr(rel);
	LoadArchiveMap(hdesc, jdesc);
	cols = archive_map.cols;
	c_request_key = archive_map.request_key;
	c_origin = archive_map.origin;
	c_id = archive_map.id;
	c_queue = archive_map.queue;
	c_deps = wait_hooks ? archive_map.deps : InvalidAttrNumber;

	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = ExecInitExtraTupleSlot(estate, hdesc, &TTSOpsHeapTuple);
	values = palloc(sizeof(Datum) * hdesc->natts);
	nulls = palloc(sizeof(bool) * hdesc->natts);
	jvalues = palloc(sizeof(Datum) * jdesc->natts);
	jnulls = palloc(sizeof(bool) * jdesc->natts);

	/*
	 * The jobs one statement finishes finish at one time: the history's BRIN
	 * index on finished_at then updates its range's summary for the first row
	 * only, not for each (a summary update cost each job of a batch of 100
	 * about 7,000 instructions).
	 */
	now = GetCurrentTimestamp();
	for (r = 0; r < n; r++)
	{
		HeapTuple	row = rows[r];
		HeapTuple	h;

		CHECK_FOR_INTERRUPTS();

		/*
		 * once per row: a column at a time would walk the row from its start
		 * each time
		 */
		heap_deform_tuple(row, jdesc, jvalues, jnulls);
		finished[r] = now;
		if (c_deps != InvalidAttrNumber)
			deps[r] = jnulls[c_deps - 1] ? 0 : DatumGetInt16(jvalues[c_deps - 1]);
		/* its awaiters are woken when this transaction commits */
		JobsNoteFinished(DatumGetInt64(jvalues[c_id - 1]));
		for (i = 0; i < hdesc->natts; i++)
		{
			nulls[i] = false;
			switch (cols[i].source)
			{
				case HIST_NULL:
					values[i] = (Datum) 0;
					nulls[i] = true;
					break;
				case HIST_STATE:
					values[i] = state;
					break;
				case HIST_FINISHED_AT:
					values[i] = TimestampTzGetDatum(finished[r]);
					break;
				case HIST_RESULT:
					values[i] = done ? result : (Datum) 0;
					nulls[i] = !done || result_null;
					break;
				case HIST_LAST_ERROR:
					if (error != NULL)
					{
						values[i] = err;
						break;
					}
					/* FALLTHROUGH */
				case HIST_JOB:
					values[i] = jvalues[cols[i].job_attno - 1];
					nulls[i] = jnulls[cols[i].job_attno - 1];
					break;
			}
			if (nulls[i] && TupleDescAttr(hdesc, i)->attnotnull)
				elog(ERROR, "no value for column %s of coord.job_history",
					 NameStr(TupleDescAttr(hdesc, i)->attname));
		}
		h = heap_form_tuple(hdesc, values, nulls);
		ExecStoreHeapTuple(h, slot, false);
		table_tuple_insert(rel, slot, GetCurrentCommandId(true), 0, NULL);
		if (rri->ri_NumIndices > 0)
			(void) CoordExecInsertIndexTuples(rri, slot, estate, COORD_INDEXES_ALL);
		ExecClearTuple(slot);
		heap_freetuple(h);
		ResetPerTupleExprContext(estate);
	}
	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	CommandCounterIncrement();

	/*
	 * then what depends on the jobs finishing; flow control only if anything
	 * is limited
	 */
	limited = JobsLimitsAnywhere();
	any_deps = false;
	for (r = 0; r < n; r++)
	{
		HeapTuple	row = rows[r];
		char	   *rk = SPI_getvalue(row, jdesc, c_request_key);
		char	   *origin = SPI_getvalue(row, jdesc, c_origin);

		CHECK_FOR_INTERRUPTS();

		if (limited)
		{
			/* its slot, if it had one, is free: idle claimers wake */
			JobsLimitJobFinished(SPI_getvalue(row, jdesc, c_queue));
		}
		if (rk != NULL)
			CoordRequestJobFinished(rk, done);
		if (origin != NULL)
		{
			bool		isnull;
			int64		id = DatumGetInt64(SPI_getbinval(row, jdesc, c_id, &isnull));

			JobOriginFinished(origin, id, st, finished[r], result, !done || result_null);
		}
		if (c_deps != InvalidAttrNumber && deps[r] != 0)
		{
			bool		isnull;

			wait_hooks->finished(DatumGetInt64(SPI_getbinval(row, jdesc, c_id, &isnull)), st, deps[r]);
			any_deps = true;
		}
	}
	if (any_deps)
		wait_hooks->finished_end();
	if (jobs_ended_hook != NULL)
	{
		jobs_ended_hook(rows, jdesc, n, st);
		/* as the caller left them: it may read the rows it moved */
		SPI_tuptable = tt;
		SPI_processed = n;
	}
	if (rowdesc != NULL)
		ReleaseTupleDesc(rowdesc);
	return n;
}


/*
 * JobsMoveToHistory moves a job (matching token, when given) to the history in
 * state st; inside SPI.  Returns whether it moved.
 */
bool
JobsMoveToHistory(int64 id, bool with_token, int64 token, const char *st, const char *error)
{
	Oid			argtypes[3] = {INT8OID, INT8OID, BOOLOID};
	Datum		args[3];

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = BoolGetDatum(with_token);
	CoordExec(&plan_finish,
			  "DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
			  "AND (NOT $3 OR token OPERATOR(pg_catalog.=) $2) RETURNING *",
			  3, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "moving a job to the history");
	return JobsArchive(st, error, (Datum) 0, true) == 1;
}
