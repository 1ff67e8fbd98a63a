/*-------------------------------------------------------------------------
 * workflows_batch.c
 *		Batches (docs/batches.md): coord.open_batch, coord.seal_batch, the
 *		queue's batch-join hook (coord.enqueue(..., batch => id)) and its
 *		jobs-ended hook, which enqueues a sealed batch's callback job once
 *		its last job has finished.
 *
 * The protocol -- tallies, the gate and end locks, why the callback is
 * enqueued exactly once, what each operation costs -- is
 * src/workflows/README.md.  In short:
 *
 * Lock order: gate (COORD_NS_BATCH, id), then skip (COORD_NS_BATCH_SKIP)
 * or end (COORD_NS_BATCH_END) then skip, then rows; batches in ascending id.
 * Enqueuers and finishers take the gate in RowExclusiveLock (they do not
 * conflict with each other); seal_batch takes it in ShareLock, so it waits
 * for the transactions that enqueued into or finished jobs of the batch
 * and are still open, and those that come after it wait for its commit.
 * A transaction's counts are written at its PRE_COMMIT, once per batch.
 * After the seal, a committing finisher whose dirty sums fall short of the
 * total holds the skip lock and goes; the others take the end lock, wait
 * for the skippers, and read under the latest snapshot: the last of them
 * sees every count committed.  All are transaction locks: what an abort
 * undoes (tallies, the end row, the callback job) goes with them.  The
 * tick deletes old ended batches (CoordBatchesTick) under the gate in
 * ShareLock, as a seal.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "storage/procarray.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "compat.h"
#include "jobs/jobs.h"
#include "workflows/workflows_batch.h"

PG_FUNCTION_INFO_V1(coord_open_batch);
PG_FUNCTION_INFO_V1(coord_seal_batch);

/* a callback job's attempts: enqueue's default */
#define BATCH_CALLBACK_ATTEMPTS	25

static SPIPlanPtr plan_open = NULL;
static SPIPlanPtr plan_state = NULL;
static SPIPlanPtr plan_tally = NULL;
static SPIPlanPtr plan_seal = NULL;
static SPIPlanPtr plan_end = NULL;

/* What BatchRead found of a batch. */
typedef struct BatchState
{
	bool		found;
	bool		sealed;
	bool		ended;
	bool		on_success;
	Oid			opened_by;
	char	   *callback_queue;
	Jsonb	   *callback_payload;
	int64		total,
				done,
				dead,
				cancelled;
} BatchState;

static void
BatchLock(int64 batch, uint16 ns, LOCKMODE mode)
{
	LOCKTAG		tag;

	CoordSetTag(&tag, (uint64) batch, ns);
	(void) CoordLockTake(&tag, mode, false, false);
}

/*
 * The batch and the sums of its tallies, under the latest snapshot (after a
 * lock: see the header), this transaction's changes included.
 */
static void
BatchRead(int64 batch, BatchState *bs)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	SPITupleTable *tt;
	bool		isnull;

	CommandCounterIncrement();
	args[0] = Int64GetDatum(batch);
	CoordExecLatest(&plan_state,
					"SELECT b.sealed_at IS NOT NULL, b.on_success, b.opened_by, b.callback_queue, "
					"b.callback_payload, t.total, t.done, t.dead, t.cancelled, "
					"EXISTS (SELECT 1 FROM coord.batch_end AS e WHERE e.batch OPERATOR(pg_catalog.=) b.id) "
					"FROM coord.batch AS b CROSS JOIN LATERAL ("
					"SELECT COALESCE(pg_catalog.sum(s.enqueued), 0)::pg_catalog.int8 AS total, "
					"COALESCE(pg_catalog.sum(s.done), 0)::pg_catalog.int8 AS done, "
					"COALESCE(pg_catalog.sum(s.dead), 0)::pg_catalog.int8 AS dead, "
					"COALESCE(pg_catalog.sum(s.cancelled), 0)::pg_catalog.int8 AS cancelled "
					"FROM coord.batch_tally AS s WHERE s.batch OPERATOR(pg_catalog.=) b.id) AS t "
					"WHERE b.id OPERATOR(pg_catalog.=) $1",
					1, argtypes, args, NULL, "reading a batch");
	memset(bs, 0, sizeof(*bs));
	if (SPI_processed != 1)
		return;
	tt = SPI_tuptable;
	bs->found = true;
	bs->sealed = DatumGetBool(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
	bs->on_success = DatumGetBool(SPI_getbinval(tt->vals[0], tt->tupdesc, 2, &isnull));
	bs->opened_by = DatumGetObjectId(SPI_getbinval(tt->vals[0], tt->tupdesc, 3, &isnull));
	bs->callback_queue = SPI_getvalue(tt->vals[0], tt->tupdesc, 4);
	bs->callback_payload = DatumGetJsonbP(SPI_getbinval(tt->vals[0], tt->tupdesc, 5, &isnull));
	bs->total = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 6, &isnull));
	bs->done = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 7, &isnull));
	bs->dead = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 8, &isnull));
	bs->cancelled = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 9, &isnull));
	bs->ended = DatumGetBool(SPI_getbinval(tt->vals[0], tt->tupdesc, 10, &isnull));
}

/* Adds to this backend's tally of the batch. */
static void
BatchTally(int64 batch, int64 enqueued, int64 done, int64 dead, int64 cancelled)
{
	Oid			argtypes[6] = {INT8OID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		args[6];

	args[0] = Int64GetDatum(batch);
	args[1] = Int32GetDatum(CoordMyBackendNumber());
	args[2] = Int64GetDatum(enqueued);
	args[3] = Int64GetDatum(done);
	args[4] = Int64GetDatum(dead);
	args[5] = Int64GetDatum(cancelled);

	/*
	 * a batch the tick purged (a job of it retried after its end) counts
	 * nothing: the gate put the purge's commit before this statement
	 */
	CoordExec(&plan_tally,
			  "INSERT INTO coord.batch_tally AS t (batch, stripe, enqueued, done, dead, cancelled) "
			  "SELECT $1, $2, $3, $4, $5, $6 FROM coord.batch AS b WHERE b.id OPERATOR(pg_catalog.=) $1 "
			  "ON CONFLICT (batch, stripe) DO UPDATE SET "
			  "enqueued = t.enqueued OPERATOR(pg_catalog.+) excluded.enqueued, "
			  "done = t.done OPERATOR(pg_catalog.+) excluded.done, "
			  "dead = t.dead OPERATOR(pg_catalog.+) excluded.dead, "
			  "cancelled = t.cancelled OPERATOR(pg_catalog.+) excluded.cancelled",
			  6, argtypes, args, NULL, SPI_OK_INSERT, "counting a batch's jobs");
}

/* callback_payload || {"batch": id, "cancelled": n, "dead": n, "done": n} */
static Jsonb *
CallbackPayload(int64 batch, const BatchState *bs)
{
	JsonbParseState *state = NULL;
	JsonbValue *res;
	const char *keys[4] = {"batch", "cancelled", "dead", "done"};
	int64		vals[4];
	int			i;

	vals[0] = batch;
	vals[1] = bs->cancelled;
	vals[2] = bs->dead;
	vals[3] = bs->done;
	(void) pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < 4; i++)
	{
		JsonbValue	k,
					n;

		k.type = jbvString;
		k.val.string.val = (char *) keys[i];
		k.val.string.len = strlen(keys[i]);
		n.type = jbvNumeric;
		n.val.numeric = DatumGetNumeric(DirectFunctionCall1(int8_numeric, Int64GetDatum(vals[i])));
		(void) pushJsonbValue(&state, WJB_KEY, &k);
		(void) pushJsonbValue(&state, WJB_VALUE, &n);
	}
	res = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(bs->callback_payload),
											  JsonbPGetDatum(JsonbValueToJsonb(res))));
}

/*
 * Ends the batch if it is sealed, not ended, and every job of it has
 * finished: enqueues the callback (unless on => 'success' and some job
 * died or was cancelled) and inserts the end row.  The caller holds the end
 * lock and has just read bs under it.
 */
static void
BatchMaybeEnd(int64 batch, const BatchState *bs)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};
	int64		job = 0;

	if (!bs->found || !bs->sealed || bs->ended ||
		bs->done + bs->dead + bs->cancelled < bs->total)
		return;
	if (!bs->on_success || bs->dead + bs->cancelled == 0)
	{
		job = CoordEnqueueOrigin(bs->callback_queue, CallbackPayload(batch, bs),
								 GetCurrentTimestamp(), NULL, BATCH_CALLBACK_ATTEMPTS, NULL, NULL,
								 bs->opened_by);
		if (job == 0)
			elog(ERROR, "the callback job of batch " INT64_FORMAT " was not enqueued", batch);
	}
	args[0] = Int64GetDatum(batch);
	args[1] = Int64GetDatum(job);
	nulls[1] = job != 0 ? ' ' : 'n';
	CoordExec(&plan_end,
			  "INSERT INTO coord.batch_end (batch, callback_job) VALUES ($1, $2)",
			  2, argtypes, args, nulls, SPI_OK_INSERT, "ending a batch");
}

/* May caller do what the opener of a batch may (seal it, enqueue into it)? */
static void
BatchCheckRole(int64 batch, const BatchState *bs, Oid caller, const char *action)
{
	if (has_privs_of_role(caller, bs->opened_by) || CoordIsAdmin(caller))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s batch " INT64_FORMAT, action, batch),
			 errdetail("Only the role that opened a batch (or coord_admin) may %s it.", action)));
}

/* ---------- counts kept until commit ---------- */

/*
 * A transaction's counts, per batch and subtransaction level, written to
 * its tally row once per batch at PRE_COMMIT (or before seal_batch reads
 * them): one upsert per batch and transaction, however many statements
 * enqueued into it or finished its jobs (a row updated again and again by
 * one transaction keeps every version, which grows with the square of the
 * updates).  A subtransaction's counts go with its abort and pass to its
 * parent at its commit; those already written (flushed at level L) are
 * written again if level L aborts, since the write went with it.
 */
typedef struct PendingCounts
{
	int64		batch;
	int			level;			/* subtransaction nest level of the counts */
	int			flushed;		/* 0, or the level whose statement wrote them */
	int64		n[4];			/* enqueued, done, dead, cancelled */
} PendingCounts;

static PendingCounts *pending = NULL;
static int	npending = 0;
static int	maxpending = 0;
static bool pending_callbacks = false;

static void
PendingAdd(int64 batch, int what, int64 count)
{
	int			level = GetCurrentTransactionNestLevel();
	int			i;

	for (i = 0; i < npending; i++)
		if (pending[i].batch == batch && pending[i].level == level && pending[i].flushed == 0)
		{
			pending[i].n[what] += count;
			return;
		}
	if (npending == maxpending)
	{
		maxpending = Max(8, maxpending * 2);
		pending = pending == NULL
			? MemoryContextAlloc(TopMemoryContext, sizeof(PendingCounts) * maxpending)
			: repalloc(pending, sizeof(PendingCounts) * maxpending);
	}
	memset(&pending[npending], 0, sizeof(PendingCounts));
	pending[npending].batch = batch;
	pending[npending].level = level;
	pending[npending].n[what] = count;
	npending++;
}

/* Writes the counts of batch not yet written (every batch: batch 0). */
static void
PendingFlush(int64 batch)
{
	int			level = GetCurrentTransactionNestLevel();
	int			i;

	for (i = 0; i < npending; i++)
	{
		int64		n[4];
		int			j;

		if (pending[i].flushed != 0 || (batch != 0 && pending[i].batch != batch))
			continue;
		CHECK_FOR_INTERRUPTS();
		memset(n, 0, sizeof(n));
		for (j = i; j < npending; j++)
			if (pending[j].batch == pending[i].batch && pending[j].flushed == 0)
			{
				for (int k = 0; k < 4; k++)
					n[k] += pending[j].n[k];
				pending[j].flushed = level;
			}
		BatchTally(pending[i].batch, n[0], n[1], n[2], n[3]);
	}
}

static int
CmpPending(const void *a, const void *b)
{
	int64		x = ((const PendingCounts *) a)->batch;
	int64		y = ((const PendingCounts *) b)->batch;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * The ended counts of batch's tallies (done + dead + cancelled) and the
 * enqueued ones, under a dirty snapshot: the rows that open transactions
 * have written count too.  A row an open transaction updated counts twice
 * (its old version and its new): the sums only err high.  Used to tell a
 * finisher that is certainly not among the last (README.md).
 */
static void
BatchDirtySums(int64 batch, int64 *ended, int64 *total)
{
	Oid			nsp = get_namespace_oid(COORD_SCHEMA, false);
	Oid			relid = get_relname_relid("batch_tally", nsp);
	Oid			idxid = get_relname_relid("batch_tally_pkey", nsp);
	SnapshotData dirty;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	*ended = 0;
	*total = 0;
	if (!OidIsValid(relid) || !OidIsValid(idxid))
		elog(ERROR, "coord.batch_tally or its primary key is missing");
	InitDirtySnapshot(dirty);
	rel = table_open(relid, AccessShareLock);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(batch));
	scan = systable_beginscan(rel, idxid, true, &dirty, 1, &key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		*total += DatumGetInt64(heap_getattr(tup, 3, desc, &isnull));
		for (int a = 4; a <= 6; a++)
			*ended += DatumGetInt64(heap_getattr(tup, a, desc, &isnull));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/*
 * PRE_COMMIT (and PRE_PREPARE): write the counts, then end each sealed
 * batch whose last jobs this transaction finished.  Batches in ascending
 * id (lock order).  Runs before the queue's PRE_COMMIT callback (callbacks
 * run latest registered first), so a callback job enqueued here wakes its
 * workers.
 */
static void
PendingCommit(void)
{
	CoordUserSwitch sw;
	int			i;

	qsort(pending, npending, sizeof(PendingCounts), CmpPending);
	PushActiveSnapshot(GetTransactionSnapshot());
	CoordSpiBegin(&sw);
	PendingFlush(0);
	for (i = 0; i < npending; i++)
	{
		BatchState	bs;

		if (i > 0 && pending[i].batch == pending[i - 1].batch)
			continue;
		CHECK_FOR_INTERRUPTS();
		BatchRead(pending[i].batch, &bs);
		if (bs.sealed && !bs.ended)
		{
			LOCKTAG		skip;
			int64		ended,
						total;

			/*
			 * Perhaps the last.  What the latest snapshot shows is not
			 * enough: the finisher of another last job may not have committed
			 * yet, and it saw ours uncommitted.  A finisher whose dirty sums
			 * (every written count, committed or not) fall short is not among
			 * the last: it holds the skip lock until its commit and goes. The
			 * others take the end lock (one at a time), wait for the skippers
			 * that hold the skip lock, and see every count (README.md).
			 */
			CoordSetTag(&skip, (uint64) pending[i].batch, COORD_NS_BATCH_SKIP);
			(void) CoordLockTake(&skip, RowExclusiveLock, false, false);
			BatchDirtySums(pending[i].batch, &ended, &total);
			if (ended < total)
				continue;
			CoordLockLetGo(&skip, RowExclusiveLock, false);
			BatchLock(pending[i].batch, COORD_NS_BATCH_END, ExclusiveLock);
			BatchLock(pending[i].batch, COORD_NS_BATCH_SKIP, ShareLock);
			BatchRead(pending[i].batch, &bs);
			BatchMaybeEnd(pending[i].batch, &bs);
		}
	}
	CoordSpiEnd(&sw);
	PopActiveSnapshot();
	npending = 0;
}

static void
BatchXactCallback(XactEvent event, void *arg)
{
	if (npending == 0)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			PendingCommit();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			npending = 0;
			break;
		default:
			break;
	}
}

static void
BatchSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	int			level;
	int			i,
				k;

	if (npending == 0)
		return;
	level = GetCurrentTransactionNestLevel();
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		for (i = 0, k = 0; i < npending; i++)
		{
			if (pending[i].level >= level)
				continue;		/* counted by the aborted level: gone */
			if (pending[i].flushed >= level)
				pending[i].flushed = 0; /* its write went with the abort */
			pending[k++] = pending[i];
		}
		npending = k;
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (i = 0; i < npending; i++)
		{
			if (pending[i].level >= level)
				pending[i].level = level - 1;
			if (pending[i].flushed >= level)
				pending[i].flushed = level - 1;
		}

		/*
		 * merge what now shares (batch, level), so loops of savepoints stay
		 * small
		 */
		for (i = 0, k = 0; i < npending; i++)
		{
			int			j;

			for (j = 0; j < k; j++)
				if (pending[j].batch == pending[i].batch && pending[j].level == pending[i].level &&
					pending[j].flushed == pending[i].flushed)
					break;
			if (j < k)
			{
				for (int m = 0; m < 4; m++)
					pending[j].n[m] += pending[i].n[m];
			}
			else
				pending[k++] = pending[i];
		}
		npending = k;
	}
}

/* ---------- the queue's hooks ---------- */

/*
 * coord.enqueue(..., batch => id) added n jobs into batch (jobs.h); or
 * coord.retry made a dead job of it live again (retried): coord_admin's,
 * allowed into a sealed batch, whose callback then waits for it, unless
 * the batch has ended.
 */
static void
BatchJoin(int64 batch, int64 n, Oid caller, bool retried)
{
	BatchState	bs;

	BatchLock(batch, COORD_NS_BATCH, RowExclusiveLock);
	BatchRead(batch, &bs);
	if (retried)
	{
		if (bs.found)
			PendingAdd(batch, 0, n);
		return;
	}
	if (!bs.found)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("batch " INT64_FORMAT " does not exist", batch),
				 errhint("Open a batch with coord.open_batch.")));
	BatchCheckRole(batch, &bs, caller, "enqueue into");
	if (bs.sealed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("batch " INT64_FORMAT " is sealed", batch),
				 errdetail("coord.seal_batch was called: no job may join the batch any more.")));
	PendingAdd(batch, 0, n);
}

typedef struct BatchEnded
{
	int64		batch;
	int64		n;
} BatchEnded;

static int
CmpBatchEnded(const void *a, const void *b)
{
	int64		x = ((const BatchEnded *) a)->batch;
	int64		y = ((const BatchEnded *) b)->batch;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* The column "batch" of the finished rows, found once per row shape. */
static int	batch_natts = -1;
static AttrNumber batch_attno = InvalidAttrNumber;

static AttrNumber
BatchColumn(TupleDesc desc)
{
	if (desc->natts != batch_natts ||
		batch_attno == InvalidAttrNumber ||
		strcmp(NameStr(TupleDescAttr(desc, batch_attno - 1)->attname), "batch") != 0)
	{
		int			a = SPI_fnumber(desc, "batch");

		batch_attno = a > 0 ? a : InvalidAttrNumber;
		batch_natts = desc->natts;
		if (batch_attno == InvalidAttrNumber)
			return InvalidAttrNumber;
	}
	return batch_attno;
}

/*
 * Jobs finished (jobs.h): each batch among them counts them and, once
 * sealed, ends if they were its last.  A job without a batch costs a test
 * of its null bitmap.
 */
static void
BatchJobsEnded(HeapTuple *rows, TupleDesc desc, uint64 n, const char *state)
{
	AttrNumber	att = BatchColumn(desc);
	BatchEnded *ended = NULL;
	int			nended = 0;
	uint64		r;
	int			i;
	bool		is_done = strcmp(state, "done") == 0,
				is_dead = strcmp(state, "dead") == 0;

	if (att == InvalidAttrNumber)
		return;
	for (r = 0; r < n; r++)
	{
		bool		isnull;
		int64		batch;

		if (heap_attisnull(rows[r], att, desc))
			continue;
		CHECK_FOR_INTERRUPTS();
		batch = DatumGetInt64(SPI_getbinval(rows[r], desc, att, &isnull));
		if (ended == NULL)
			ended = palloc(sizeof(BatchEnded) * (n - r));
		ended[nended].batch = batch;
		ended[nended].n = 1;
		nended++;
	}
	if (nended == 0)
		return;

	/* the gate now, against a seal; the counts at commit (PendingCommit) */
	qsort(ended, nended, sizeof(BatchEnded), CmpBatchEnded);
	for (i = 0; i < nended; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (i == 0 || ended[i].batch != ended[i - 1].batch)
			BatchLock(ended[i].batch, COORD_NS_BATCH, RowExclusiveLock);
		PendingAdd(ended[i].batch, is_done ? 1 : (is_dead ? 2 : 3), ended[i].n);
	}
}

/*
 * CoordBatchesTick (workflows_batch.h): deletes, with their tallies and end
 * rows, at most BATCHES_TICK_MAX batches that ended before at less
 * coord.job_history_retention (0 keeps them) and have no job left (a job
 * retried after the end keeps its batch until it ends too).  Each batch's
 * gate is taken in ShareLock, without waiting (a busy batch waits for the
 * next tick), as seal_batch takes it: an enqueuer, finisher or retry of it
 * still open has counted before the DELETE reads the tallies (a new
 * snapshot: the tick runs READ COMMITTED), and a later one waits for the
 * tick's commit and finds the batch gone (a retried job then counts
 * nowhere).  Inside SPI, as the owner.
 */
int64
CoordBatchesTick(TimestampTz at)
{
	static SPIPlanPtr plan_old = NULL;
	static SPIPlanPtr plan_purge = NULL;
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Oid			idtypes[1] = {INT8ARRAYOID};
	Datum		args[2];
	const char *keep = GetConfigOption("coord.job_history_retention", true, false);
	int64		seconds = keep != NULL ? pg_strtoint64(keep) : 0;
	Datum	   *ids;
	int			n = 0;
	uint64		i;

	if (seconds <= 0)
		return 0;
	args[0] = TimestampTzGetDatum(at - seconds * USECS_PER_SEC);
	args[1] = Int32GetDatum(BATCHES_TICK_MAX);
	CoordExec(&plan_old,
			  "SELECT o.batch FROM (SELECT e.batch FROM coord.batch_end AS e "
			  "WHERE e.ended_at OPERATOR(pg_catalog.<) $1 ORDER BY e.ended_at LIMIT $2) AS o "
			  "ORDER BY o.batch",
			  2, argtypes, args, NULL, SPI_OK_SELECT, "finding ended batches");
	ids = palloc(sizeof(Datum) * Max(SPI_processed, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int64		batch = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		LOCKTAG		tag;

		CHECK_FOR_INTERRUPTS();
		CoordSetTag(&tag, (uint64) batch, COORD_NS_BATCH);
		if (CoordLockTake(&tag, ShareLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
			ids[n++] = Int64GetDatum(batch);
	}
	if (n == 0)
		return 0;
	args[0] = PointerGetDatum(construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	return (int64) CoordExec(&plan_purge,
							 "DELETE FROM coord.batch AS b WHERE b.id OPERATOR(pg_catalog.=) ANY ($1) "
							 "AND EXISTS (SELECT FROM coord.batch_end AS e WHERE e.batch OPERATOR(pg_catalog.=) b.id) "
							 "AND (SELECT COALESCE(pg_catalog.sum(t.enqueued), 0) OPERATOR(pg_catalog.=) "
							 "COALESCE(pg_catalog.sum(t.done OPERATOR(pg_catalog.+) t.dead OPERATOR(pg_catalog.+) t.cancelled), 0) "
							 "FROM coord.batch_tally AS t WHERE t.batch OPERATOR(pg_catalog.=) b.id)",
							 1, idtypes, args, NULL, SPI_OK_DELETE, "purging ended batches");
}

void
CoordWorkflowsBatchInit(void)
{
	CoordRegisterJobsEnded(BatchJobsEnded);
	CoordRegisterBatchJoin(BatchJoin);
	if (!pending_callbacks)
	{
		RegisterXactCallback(BatchXactCallback, NULL);
		RegisterSubXactCallback(BatchSubXactCallback, NULL);
		pending_callbacks = true;
	}
}

/* ---------- SQL functions ---------- */

/* coord.open_batch(callback_queue text, callback_payload jsonb, "on" text) -> bigint */
Datum
coord_open_batch(PG_FUNCTION_ARGS)
{
	char	   *queue;
	Jsonb	   *payload;
	char	   *on;
	bool		on_success;
	Oid			argtypes[4] = {TEXTOID, JSONBOID, BOOLOID, OIDOID};
	Datum		args[4];
	CoordUserSwitch sw;
	bool		isnull;
	int64		id;

	CoordNotInParallel(fcinfo);
	queue = CoordNameArg(fcinfo, 0, "callback_queue", false);
	CoordRequireArg(fcinfo, 1, "callback_payload");
	CoordRequireArg(fcinfo, 2, "on");
	payload = CoordCheckPayload(PG_GETARG_JSONB_P(1));
	if (!JB_ROOT_IS_OBJECT(payload) || JB_ROOT_IS_SCALAR(payload))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("callback_payload must be a JSON object"),
				 errdetail("The callback's payload is callback_payload with the batch's counts added to it.")));
	on = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (strcmp(on, "complete") == 0)
		on_success = false;
	else if (strcmp(on, "success") == 0)
		on_success = true;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for on: \"%s\"", on),
				 errhint("Use 'complete' (the callback in any case) or 'success' (only when no job died or was cancelled).")));
	args[0] = CStringGetTextDatum(queue);
	args[1] = JsonbPGetDatum(payload);
	args[2] = BoolGetDatum(on_success);
	args[3] = ObjectIdGetDatum(GetUserId());
	CoordSpiBegin(&sw);
	CoordExec(&plan_open,
			  "INSERT INTO coord.batch (callback_queue, callback_payload, on_success, opened_by) "
			  "VALUES ($1, $2, $3, $4) RETURNING id",
			  4, argtypes, args, NULL, SPI_OK_INSERT_RETURNING, "opening a batch");
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	CoordSpiEnd(&sw);
	PG_RETURN_INT64(id);
}

/* coord.seal_batch(batch bigint) -> boolean: false when sealed already */
Datum
coord_seal_batch(PG_FUNCTION_ARGS)
{
	int64		batch;
	Oid			caller = GetUserId();
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	BatchState	bs;
	bool		sealed;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "batch");
	batch = PG_GETARG_INT64(0);
	CoordSpiBegin(&sw);

	/*
	 * wait for the open transactions that enqueued into it or finished its
	 * jobs
	 */
	BatchLock(batch, COORD_NS_BATCH, ShareLock);
	BatchLock(batch, COORD_NS_BATCH_END, ExclusiveLock);
	PendingFlush(batch);		/* this transaction's own counts */
	BatchRead(batch, &bs);
	if (!bs.found)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("batch " INT64_FORMAT " does not exist", batch)));
	BatchCheckRole(batch, &bs, caller, "seal");
	if (bs.sealed)
	{
		CoordSpiEnd(&sw);
		PG_RETURN_BOOL(false);
	}
	args[0] = Int64GetDatum(batch);
	sealed = CoordExec(&plan_seal,
					   "UPDATE coord.batch SET sealed_at = pg_catalog.now() "
					   "WHERE id OPERATOR(pg_catalog.=) $1 AND sealed_at IS NULL",
					   1, argtypes, args, NULL, SPI_OK_UPDATE, "sealing a batch") == 1;
	if (sealed)
	{
		BatchRead(batch, &bs);
		BatchMaybeEnd(batch, &bs);
	}
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(sealed);
}
