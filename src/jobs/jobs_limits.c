/*-------------------------------------------------------------------------
 * jobs_limits.c
 *		The job queue's flow control (README.md, Flow control): concurrency
 *		and rate limits per queue and per limit_key, pauses, snooze-free
 *		cool-downs of a key (coord.fail's pause_key), coord.next_due, and the
 *		claim's side of all of it (LimitsFor, LimitScanBegin, LimitFree,
 *		LimitTakeOk/LimitTaken, LimitScanEnd, called from jobs_claim.c).
 *
 * Tables.  coord.job_limit (queue, per_key) holds the limits, coord.job_pause
 * (queue, limit_key; '' for the whole queue) the pauses, coord.job_bucket
 * the token buckets, coord.job_running the slots of concurrency
 * limits: a row per (queue, scope, slot number) naming the job and claim
 * token that took the slot last (scope: the whole queue, per_key false and
 * limit_key '', or one limit_key).  A slot is taken only while that claim is
 * live: the job is in coord.job with that token, and its lease has not
 * passed or a session holds its claim lock (coord.job_claimed).  So a dead
 * worker never leaks a slot -- a session-bound claim's slot frees the moment
 * the session's lock goes, a lease claim's when the lease passes -- and
 * finishing a job writes nothing here: a claim takes a free slot by
 * overwriting its row (an upsert, HOT: the slot's key does not change).  A
 * scope has at most `concurrency` rows (more only for the claims running
 * when its limit was set or lowered); coord.set_limit and drop_limit delete
 * the free ones.
 *
 * The fast path.  Each backend caches, per queue, what applies to it
 * (QueueLimits), and whether the database has any limit or pause at all
 * (limits_anywhere).  Every function that changes coord.job_limit or
 * coord.job_pause invalidates that table's relcache entry
 * (CacheInvalidateRelcacheByRelid): the message reaches every backend at
 * commit, and its relcache callback (JobsLimitsInval, through jobs_common.c)
 * forgets the cache.  With no limit and no pause in the database a claim
 * and a completion test one boolean; with none on the claim's queue, one
 * hash lookup.  The cache is filled from a fresh snapshot taken after the
 * tables' locks (which is when invalidations are read): an invalidation
 * sent by a commit that snapshot does not see is read later, and empties
 * the cache again.  Under a transaction snapshot nothing is kept.
 *
 * Exactness.  Claims are READ COMMITTED: two claimers that counted the same
 * slots from their own snapshots could both take the last one.  So the count
 * and the take of a (queue, key) are serialised by a transaction-level lock
 * on (COORD_NS_LIMIT, hash of queue and key), taken without waiting: a
 * claimer that finds it busy skips the key, as it skips a busy group_key.
 * The holder reads the slots with the latest snapshot, taken after the lock
 * (ReadSlots; the bucket with SPI's non-read-only execution, which takes one
 * too), so it sees every claim committed before it got the lock; a
 * claimer's lock is released after its commit is visible (PostgreSQL
 * releases locks after ProcArrayEndTransaction), and the slots it took and
 * its bucket update commit with its claim.  A key found
 * full, paused or out of tokens has its lock let go at once; a key the
 * claim took from keeps it until commit.  The whole queue's limit works the
 * same with key ''.  A claim that found nothing only because keys were busy,
 * and holds no limit lock, waits for one busy lock once (the holder is a
 * claim, which commits soon) and scans again: an idle claimer is not left
 * asleep beside a slot that is free.
 *
 * Below the row locks, coord.claim_free asks LimitFree whether the job's key
 * (and queue) has room now; that decision is made once per key and claim
 * call (KeyState) and the lock is kept while it holds.  Above them,
 * coord.claim_take asks LimitTakeOk again (nothing else ran in between for
 * the same key) and records the take (LimitTaken); LimitScanEnd then writes
 * the slots taken (an update of each free slot's row through the table
 * AM, or one insert for new slot numbers) and the buckets' new tokens.  A claim that
 * left a job behind for its limit forgets its frontier (jobs_claim.c), so
 * that its next claim scans from the head and finds the job once its key
 * has room again.
 *
 * Buckets.  tokens as of refilled_at, refilled lazily on the server's clock
 * (rate per `per`, at most burst); written only under the key's lock, so a
 * bucket is never contended on a row lock: a busy key reads as "not now".
 * A claim writes its tokens as of the later of its start and the stored
 * time: a claim that began earlier but reached the key later never moves
 * refilled_at back (which would refill that gap twice).
 *
 * Wake-ups.  A finished or failed job of a queue with a concurrency limit,
 * coord.resume, coord.set_limit and coord.drop_limit wake the queue's idle
 * claimers at commit (WakeAtCommit, jobs_common.c).  A bucket that refills,
 * a pause that ends by its time and a session-bound claim whose session
 * died change nothing in a transaction: idle workers sleep until
 * coord.next_due, which names the earliest of them.
 *
 * Retention (CoordLimitsTick, from coord.tick).  A bucket row idle for
 * coord.retention (refilled_at) that is full again, or whose rate limit is
 * gone, means what no row means (a full bucket) and is deleted; so is a
 * pause that ended coord.retention ago; rows a claim or a pause is writing
 * are skipped.  The slots of a scope whose jobs all finished before
 * coord.retention (or are gone) are deleted under the scope's key lock,
 * taken without waiting (a busy key is left for a later tick): with it no
 * claim is counting or taking there, and a snapshot taken after it sees
 * every take committed before.  A claim that read a slot row the tick
 * then deleted finds it gone and inserts it.
 *
 * Per-backend state: the QueueLimits cache (CoordLocalHash), and the count
 * of limit locks this transaction keeps (forgotten at transaction end).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "jobs/jobs_int.h"

#define LIMIT_KEY_MAX	1024
#define LIMIT_POLL_US	(1000 * 1000)	/* next_due's guess when a slot's end
										 * is unknown */

PG_FUNCTION_INFO_V1(coord_set_limit);
PG_FUNCTION_INFO_V1(coord_drop_limit);
PG_FUNCTION_INFO_V1(coord_pause);
PG_FUNCTION_INFO_V1(coord_resume);
PG_FUNCTION_INFO_V1(coord_next_due);
PG_FUNCTION_INFO_V1(coord_job_snoozes);
PG_FUNCTION_INFO_V1(coord_bucket_tokens);

/* ---------- the per-backend cache ---------- */

/* -1: not looked up since the last invalidation; 0: none; 1: some */
static int	limits_anywhere = -1;
static HTAB *queue_limits = NULL;
static int	xact_limit_locks = 0;

static SPIPlanPtr plan_anywhere = NULL;
static SPIPlanPtr plan_queue_limits = NULL;
static SPIPlanPtr plan_queue_pause = NULL;

/* coord.job_running, its primary key, coord.job's: looked up with the cache */
static Oid	running_rel = InvalidOid;
static Oid	running_pkey = InvalidOid;
static Oid	job_pkey = InvalidOid;

/*
 * Stale marks, not cleared OIDs: an invalidation can arrive at any catalog
 * access or lock of a call in flight, which keeps using what it looked up.
 */
static bool running_valid = false;
static uint64 running_invals = 0;
static AttrNumber job_att_token,
			job_att_lease_until;
static AttrNumber run_att_slot,
			run_att_job,
			run_att_token;
static SPIPlanPtr plan_bucket = NULL;
static SPIPlanPtr plan_key_paused = NULL;
static SPIPlanPtr plan_running_put = NULL;
static SPIPlanPtr plan_bucket_put = NULL;

static int
CmpInt32(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

static int
CmpInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

void
JobsLimitsInval(void)
{
	limits_anywhere = -1;
	running_valid = false;
	running_invals++;
	if (queue_limits != NULL)
	{
		HASH_SEQ_STATUS seq;
		QueueLimits *q;

		hash_seq_init(&seq, queue_limits);
		while ((q = hash_seq_search(&seq)) != NULL)
			q->valid = false;
	}
}

void
JobsLimitsXactEnd(void)
{
	xact_limit_locks = 0;
}

/* Is there any limit or pause in this database?  Inside SPI, as the owner. */
bool
LimitsAnywhere(void)
{
	if (limits_anywhere < 0)
	{
		LookupJobRels();
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_anywhere,
												 "SELECT 1 FROM coord.job_limit UNION ALL "
												 "SELECT 1 FROM coord.job_pause LIMIT 1",
												 0, NULL), NULL, NULL, false, 1),
					  SPI_OK_SELECT, "reading coord.job_limit");
		if (!IsolationUsesXactSnapshot())
			limits_anywhere = SPI_processed > 0 ? 1 : 0;
		else
			return SPI_processed > 0;	/* a transaction snapshot may be old:
										 * not cached */
	}
	return limits_anywhere > 0;
}

static void
SpecFromRow(LimitSpec *s, HeapTuple row, TupleDesc desc)
{
	bool		isnull;
	Datum		d;

	d = SPI_getbinval(row, desc, 2, &isnull);
	s->conc = isnull ? 0 : DatumGetInt32(d);
	d = SPI_getbinval(row, desc, 3, &isnull);
	s->rate = isnull ? 0 : DatumGetInt32(d);
	d = SPI_getbinval(row, desc, 4, &isnull);
	s->per_us = isnull ? USECS_PER_SEC : CoordIntervalToMicroseconds(DatumGetIntervalP(d), "per", false);
	d = SPI_getbinval(row, desc, 5, &isnull);
	s->burst = isnull ? s->rate : DatumGetInt32(d);
}

/*
 * What applies to a queue, or NULL when nothing does (the fast path).
 * Inside SPI, as the owner.
 */
QueueLimits *
LimitsFor(const char *queue)
{
	QueueLimits *q;
	bool		found;
	char		key[COORD_NAME_MAX + 1];
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	uint64		r;

	if (!LimitsAnywhere())
		return NULL;
	memset(key, 0, sizeof(key));
	strlcpy(key, queue, sizeof(key));
	CoordLocalHash(&queue_limits, "pg_coord queue limits", sizeof(key), sizeof(QueueLimits), HASH_STRINGS);
	q = hash_search(queue_limits, key, HASH_ENTER, &found);
	if (found && q->valid)
		return q->any ? q : NULL;

	memset(&q->q, 0, sizeof(q->q));
	memset(&q->k, 0, sizeof(q->k));
	q->paused_until = 0;
	q->key_pauses = false;
	q->any = false;
	args[0] = CStringGetTextDatum(queue);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_queue_limits,
											 "SELECT per_key, concurrency, rate, per, burst FROM coord.job_limit "
											 "WHERE queue OPERATOR(pg_catalog.=) $1",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading coord.job_limit");
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		bool		per_key = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));

		SpecFromRow(per_key ? &q->k : &q->q, SPI_tuptable->vals[r], SPI_tuptable->tupdesc);
	}
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_queue_pause,
											 "SELECT limit_key OPERATOR(pg_catalog.=) '', until FROM coord.job_pause "
											 "WHERE queue OPERATOR(pg_catalog.=) $1 "
											 "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading coord.job_pause");
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		bool		whole = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
		Datum		until = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);

		if (whole)
			q->paused_until = isnull ? DT_NOEND : DatumGetTimestampTz(until);
		else
			q->key_pauses = true;
	}
	q->any = q->q.conc > 0 || q->q.rate > 0 || q->k.conc > 0 || q->k.rate > 0 ||
		q->paused_until != 0 || q->key_pauses;

	/*
	 * a transaction snapshot may be older than the last invalidation: not
	 * kept
	 */
	q->valid = !IsolationUsesXactSnapshot();
	return q->any ? q : NULL;
}

/* Does the queue count running claims (a concurrency limit of either kind)? */
static bool
CountsRunning(const QueueLimits *q)
{
	return q != NULL && (q->q.conc > 0 || q->k.conc > 0);
}

/* ---------- buckets ---------- */

/* The tokens of a bucket at now, from tokens at refilled_at. */
static double
BucketNow(double tokens, TimestampTz refilled_at, TimestampTz now, const LimitSpec *s)
{
	double		t = tokens;

	if (now > refilled_at)
		t += (double) (now - refilled_at) * s->rate / (double) s->per_us;
	return Min(t, (double) s->burst);
}

/* When a bucket holding tokens at now has one token. */
static TimestampTz
BucketRefill(double tokens, TimestampTz now, const LimitSpec *s)
{
	if (tokens >= 1.0)
		return now;
	return now + (int64) ceil((1.0 - tokens) * (double) s->per_us / s->rate);
}

static void
KeyTag(LOCKTAG *tag, const char *queue, const char *key, int keylen)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, queue);
	appendStringInfoChar(&buf, '\x1f');
	appendBinaryStringInfo(&buf, key, keylen);
	CoordSetTag(tag, CoordNameKey(buf.data, buf.len), COORD_NS_LIMIT);
	pfree(buf.data);
}

static AttrNumber
AttByName(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return i + 1;
	elog(ERROR, "no column %s", name);
	return InvalidAttrNumber;	/* keep compiler quiet */
}

static void
LookupRunningRels(void)
{
	Oid			nsp;
	Relation	rel;
	uint64		seen;

	if (running_valid)
		return;
	LookupJobRels();
again:
	CHECK_FOR_INTERRUPTS();
	seen = running_invals;
	nsp = get_namespace_oid(COORD_SCHEMA, false);
	running_pkey = get_relname_relid("job_running_pkey", nsp);
	job_pkey = get_relname_relid("job_pkey", nsp);
	rel = table_open(jobrels.job, AccessShareLock);
	job_att_token = AttByName(RelationGetDescr(rel), "token");
	job_att_lease_until = AttByName(RelationGetDescr(rel), "lease_until");
	table_close(rel, AccessShareLock);
	if (!OidIsValid(running_pkey) || !OidIsValid(job_pkey))
		elog(ERROR, "coord.job_running_pkey or coord.job_pkey does not exist");
	running_rel = get_relname_relid("job_running", nsp);
	if (!OidIsValid(running_rel))
		elog(ERROR, "coord.job_running does not exist");
	rel = table_open(running_rel, AccessShareLock);
	run_att_slot = AttByName(RelationGetDescr(rel), "slot");
	run_att_job = AttByName(RelationGetDescr(rel), "job_id");
	run_att_token = AttByName(RelationGetDescr(rel), "token");
	/* the scan keys name the primary key's columns by number */
	if (AttByName(RelationGetDescr(rel), "queue") != 1 || AttByName(RelationGetDescr(rel), "per_key") != 2 ||
		AttByName(RelationGetDescr(rel), "limit_key") != 3)
		elog(ERROR, "coord.job_running does not start with queue, per_key, limit_key");
	table_close(rel, AccessShareLock);
	/* an invalidation while we looked: look again (it may have been DDL) */
	if (seen != running_invals)
		goto again;
	running_valid = true;
}

/* Is the claim of job id with token live (by snap)?  jrel: coord.job. */
static bool
ClaimLive(Relation jrel, Snapshot snap, int64 id, int64 token, TimestampTz now)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		live = false;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
	scan = systable_beginscan(jrel, job_pkey, true, snap, 1, &key);
	if ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, job_att_token, RelationGetDescr(jrel), &isnull);

		if (!isnull && DatumGetInt64(d) == token)
		{
			d = heap_getattr(tup, job_att_lease_until, RelationGetDescr(jrel), &isnull);
			if (!isnull && DatumGetTimestampTz(d) > now)
				live = true;
			else
			{
				LOCKTAG		tag;

				JobTag(&tag, id);
				live = LockWaiterCount(&tag) > 0;
			}
		}
	}
	systable_endscan(scan);
	return live;
}

/*
 * The slots of a scope: returns how many rows it has; *live gets the slot
 * numbers taken by live claims (*running of them), st->slot_tids the row of
 * each slot number that is free (for the update that takes it).
 */
static int
ReadSlots(LimitScan *ls, KeyState *st, int32 **live, int *running)
{
	Relation	rrel,
				jrel;
	ScanKeyData keys[3];
	SysScanDesc scan;
	HeapTuple	tup;
	Snapshot	snap;
	int			nrows = 0,
				cap = 8;
	TupleDesc	desc;
	MemoryContext old;

	LookupRunningRels();
	snap = RegisterSnapshot(GetLatestSnapshot());
	rrel = table_open(running_rel, AccessShareLock);
	jrel = table_open(jobrels.job, AccessShareLock);
	desc = RelationGetDescr(rrel);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(ls->queue));
	keys[0].sk_collation = DEFAULT_COLLATION_OID;
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_BOOLEQ, BoolGetDatum(st->per_key));
	ScanKeyInit(&keys[2], 3, BTEqualStrategyNumber, F_TEXTEQ,
				PointerGetDatum(cstring_to_text_with_len(st->key, st->keylen)));
	keys[2].sk_collation = DEFAULT_COLLATION_OID;
	*live = palloc(sizeof(int32) * cap);
	*running = 0;
	old = MemoryContextSwitchTo(ls->cxt);
	st->nrows = 0;
	st->row_slot = palloc(sizeof(int32) * cap);
	st->row_tid = palloc(sizeof(ItemPointerData) * cap);
	MemoryContextSwitchTo(old);
	scan = systable_beginscan(rrel, running_pkey, true, snap, 3, keys);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		int32		slot = DatumGetInt32(heap_getattr(tup, run_att_slot, desc, &isnull));
		int64		job = DatumGetInt64(heap_getattr(tup, run_att_job, desc, &isnull));
		int64		token = DatumGetInt64(heap_getattr(tup, run_att_token, desc, &isnull));

		CHECK_FOR_INTERRUPTS();
		if (nrows == cap)
		{
			cap *= 2;
			*live = repalloc(*live, sizeof(int32) * cap);
			st->row_slot = repalloc(st->row_slot, sizeof(int32) * cap);
			st->row_tid = repalloc(st->row_tid, sizeof(ItemPointerData) * cap);
		}
		nrows++;
		if (ClaimLive(jrel, snap, job, token, ls->now))
			(*live)[(*running)++] = slot;
		else
		{
			st->row_slot[st->nrows] = slot;
			st->row_tid[st->nrows] = tup->t_self;
			st->nrows++;
		}
	}
	systable_endscan(scan);
	table_close(jrel, AccessShareLock);
	table_close(rrel, AccessShareLock);
	UnregisterSnapshot(snap);
	return nrows;
}

/*
 * Decides, under the (queue, key) lock, whether a key (or with spec q the
 * whole queue: key '') has room: sets st->ok, st->room and, for a bucket,
 * st->tokens.  Runs inside the claim's statement (from coord.claim_free) or
 * before it, as the owner already.
 */
static void
LimitDecideKey(LimitScan *ls, KeyState *st, const LimitSpec *spec, bool check_pause)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	LockAcquireResult r;
	bool		isnull;

	st->ok = false;
	st->room = 0;
	st->locked_here = false;
	st->has_bucket = false;
	st->has_conc = false;
	st->nfree = 0;
	st->used = 0;
	args[0] = CStringGetTextDatum(ls->queue);
	args[1] = PointerGetDatum(cstring_to_text_with_len(st->key, st->keylen));

	CoordSpiConnectAsCaller();
	if (check_pause)
	{
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_key_paused,
												 "SELECT 1 FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
												 "AND limit_key OPERATOR(pg_catalog.=) $2 "
												 "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
												 2, argtypes), args, NULL, false, 1),
					  SPI_OK_SELECT, "reading coord.job_pause");
		if (SPI_processed > 0)
		{
			CoordSpiFinishAsCaller();
			return;
		}
	}
	if (spec->conc <= 0 && spec->rate <= 0)
	{
		st->ok = true;
		st->room = INT_MAX;
		CoordSpiFinishAsCaller();
		return;
	}

	KeyTag(&st->tag, ls->queue, st->key, st->keylen);
	r = CoordLockTake(&st->tag, ExclusiveLock, false, true);
	if (r == LOCKACQUIRE_NOT_AVAIL)
	{
		/* another claimer counts and takes this key now: not now */
		if (!ls->contended)
			ls->contended_tag = st->tag;
		ls->contended = true;
		ls->skipped = true;
		CoordSpiFinishAsCaller();
		return;
	}
	st->locked_here = (r == LOCKACQUIRE_OK);
	st->room = INT_MAX;
	if (spec->conc > 0)
	{
		int			nrows;
		int			running = 0;
		int32	   *live;
		int			want;
		int			k;

		/*
		 * The scope's slots, with the latest snapshot (taken after the lock):
		 * it sees every claim committed before.  Read through the indexes,
		 * not a statement: a few rows, and no plan to start.
		 */
		nrows = ReadSlots(ls, st, &live, &running);
		st->room = Max(spec->conc - running, 0);

		/* the free slot numbers this call may take: below conc, not live */
		want = Min(st->room, ls->n);
		qsort(live, running, sizeof(int32), CmpInt32);
		st->free = MemoryContextAlloc(ls->cxt, sizeof(int32) * Max(want, 1));
		st->nfree = 0;
		k = 0;
		for (int32 slot = 0; st->nfree < want && slot < spec->conc; slot++)
		{
			while (k < running && live[k] < slot)
				k++;
			if (k < running && live[k] == slot)
				continue;
			st->free[st->nfree++] = slot;
		}
		(void) nrows;
		st->room = Min(st->room, st->nfree);
		st->has_conc = true;
	}
	if (spec->rate > 0 && st->room > 0)
	{
		double		tokens = spec->burst;

		st->bucket_at = ls->now;
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_bucket,
												 "SELECT tokens, refilled_at FROM coord.job_bucket "
												 "WHERE queue OPERATOR(pg_catalog.=) $1 AND limit_key OPERATOR(pg_catalog.=) $2",
												 2, argtypes), args, NULL, false, 1),
					  SPI_OK_SELECT, "reading a token bucket");
		if (SPI_processed == 1)
		{
			double		t = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
			TimestampTz at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));

			tokens = BucketNow(t, at, ls->now, spec);

			/*
			 * A claim that began after ours may have written a later time
			 * already: the tokens are as of that time, and writing our
			 * earlier one back would refill the gap twice.
			 */
			if (at > ls->now)
				st->bucket_at = at;
		}
		st->has_bucket = true;
		st->tokens = tokens;
		st->room = Min(st->room, (int) floor(tokens));
	}
	CoordSpiFinishAsCaller();
	st->ok = st->room > 0;
	if (!st->ok && st->locked_here)
	{
		/* nothing to take here: let the others count */
		CoordLockLetGo(&st->tag, ExclusiveLock, false);
		st->locked_here = false;
	}
	else if (st->locked_here)
		xact_limit_locks++;
}

/*
 * Begins the flow control of one claim call: the queue's pause and its own
 * limit, decided now.  Returns false when nothing of the queue may be
 * claimed now (the claim then scans nothing).  Inside SPI, as the owner.
 */
LimitScan *
LimitScanBegin(const char *queue, QueueLimits *ql, MemoryContext cxt, int n, bool *claimable)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	LimitScan  *ls = palloc0(sizeof(LimitScan));

	ls->ql = ql;
	ls->queue = pstrdup(queue);
	ls->cxt = cxt;
	ls->now = GetCurrentTimestamp();
	ls->n = n;
	ls->taken = palloc(sizeof(KeyState *) * Max(n, 1));
	ls->taken_ids = palloc(sizeof(int64) * Max(n, 1));
	ls->qs.key = pstrdup("");
	ls->qs.keylen = 0;
	ls->qs.per_key = false;
	MemoryContextSwitchTo(old);

	*claimable = true;
	if (ql->paused_until != 0 && (ql->paused_until == DT_NOEND || ql->paused_until > ls->now))
	{
		*claimable = false;
		return ls;
	}
	if (ql->q.conc > 0 || ql->q.rate > 0)
	{
		LimitDecideKey(ls, &ls->qs, &ql->q, false);
		ls->qs.decided = true;
		*claimable = ls->qs.ok;
	}
	else
	{
		ls->qs.decided = true;
		ls->qs.ok = true;
		ls->qs.room = INT_MAX;
	}
	return ls;
}

/* The state of a key in this claim call, decided at its first job. */
static KeyState *
LimitKeyState(LimitScan *ls, text *limit_key)
{
	const char *k = VARDATA_ANY(limit_key);
	int			len = VARSIZE_ANY_EXHDR(limit_key);
	uint64		h = CoordNameKey(k, len);
	KeyState   *st;
	bool		found;
	QueueLimits *ql = ls->ql;

	if (ls->keys == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(KeyState);
		ctl.hcxt = ls->cxt;
		ls->keys = hash_create("pg_coord claim keys", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	st = hash_search(ls->keys, &h, HASH_ENTER, &found);
	if (!found)
	{
		MemoryContext old = MemoryContextSwitchTo(ls->cxt);

		st->key = pnstrdup(k, len);
		st->keylen = len;
		st->per_key = true;
		st->decided = false;
		st->pending = 0;
		MemoryContextSwitchTo(old);
	}
	if (!st->decided)
	{
		/*
		 * not marked decided before it is: an error in between decides
		 * nothing
		 */
		LimitDecideKey(ls, st, &ql->k, ql->key_pauses);
		st->decided = true;
	}
	return st;
}

/*
 * coord.claim_free's question, for a job of the claim's queue: does its key
 * (and the queue) have room for one more claim now?
 */
bool
LimitFree(LimitScan *ls, int64 id, text *limit_key)
{
	KeyState   *st = NULL;

	ls->last_id = 0;
	if (!ls->qs.ok || ls->qs.room - ls->qs.pending <= 0)
	{
		ls->skipped = true;
		return false;
	}
	if (limit_key != NULL && (ls->ql->k.conc > 0 || ls->ql->k.rate > 0 || ls->ql->key_pauses))
	{
		st = LimitKeyState(ls, limit_key);
		if (!st->ok || st->room - st->pending <= 0)
		{
			/* a job left behind: the caller's frontier must not pass it */
			ls->skipped = true;
			return false;
		}
	}
	ls->last_id = id;
	ls->last = st;
	return true;
}

/* coord.claim_take's: may it take job id (which LimitFree let through)? */
bool
LimitTakeOk(LimitScan *ls, int64 id)
{
	if (ls->last_id != id)
		return false;
	if (ls->qs.room - ls->qs.pending <= 0)
		return false;
	return ls->last == NULL || ls->last->room - ls->last->pending > 0;
}

/* coord.claim_take took job id: it counts against its key and the queue. */
void
LimitTaken(LimitScan *ls, int64 id)
{
	ls->qs.pending++;
	if (ls->last != NULL)
		ls->last->pending++;
	ls->taken_ids[ls->ntaken] = id;
	ls->taken[ls->ntaken++] = ls->last;
	ls->last_id = 0;
}

static void
PutBucket(LimitScan *ls, KeyState *st)
{
	Oid			argtypes[4] = {TEXTOID, TEXTOID, FLOAT8OID, TIMESTAMPTZOID};
	Datum		args[4];

	if (!st->has_bucket || st->pending == 0)
		return;
	args[0] = CStringGetTextDatum(ls->queue);
	args[1] = PointerGetDatum(cstring_to_text_with_len(st->key, st->keylen));
	args[2] = Float8GetDatum(st->tokens - st->pending);
	args[3] = TimestampTzGetDatum(st->bucket_at);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_bucket_put,
											 "INSERT INTO coord.job_bucket AS b (queue, limit_key, tokens, refilled_at) "
											 "VALUES ($1, $2, $3, $4) ON CONFLICT (queue, limit_key) DO UPDATE "
											 "SET tokens = EXCLUDED.tokens, refilled_at = EXCLUDED.refilled_at",
											 4, argtypes), args, NULL, false, 0),
				  SPI_OK_INSERT, "writing a token bucket");
}

/*
 * Takes slot of scope sc for a job by overwriting the slot's row, when
 * ReadSlots found one: false when there is none (or it changed), and the
 * caller inserts it.  Through the table access method, as a claim writes its
 * job (jobs_claim.c): only job_id and token change, unindexed, so the update
 * is HOT and no index is opened unless the page is full.  The key's lock
 * keeps other claimers off the row.
 */
static bool
TakeSlotRow(KeyState *sc, int32 slot, int64 job, int64 token)
{
	Relation	rel;
	TupleTableSlot *old,
			   *new;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	CoordUpdateIndexes update_indexes;
	TM_Result	res;
	int			i;
	ItemPointer tid;

	for (i = 0; i < sc->nrows && sc->row_slot[i] != slot; i++)
		;
	if (i == sc->nrows)
		return false;
	tid = &sc->row_tid[i];
	rel = table_open(running_rel, RowExclusiveLock);
	old = table_slot_create(rel, NULL);
	if (!table_tuple_fetch_row_version(rel, tid, SnapshotAny, old))
	{
		ExecDropSingleTupleTableSlot(old);
		table_close(rel, NoLock);
		return false;
	}
	slot_getallattrs(old);
	new = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	ExecClearTuple(new);
	memcpy(new->tts_values, old->tts_values, sizeof(Datum) * RelationGetDescr(rel)->natts);
	memcpy(new->tts_isnull, old->tts_isnull, sizeof(bool) * RelationGetDescr(rel)->natts);
	new->tts_values[run_att_job - 1] = Int64GetDatum(job);
	new->tts_values[run_att_token - 1] = Int64GetDatum(token);
	ExecStoreVirtualTuple(new);
	res = table_tuple_update(rel, tid, new, GetCurrentCommandId(true), GetActiveSnapshot(),
							 InvalidSnapshot, true, &tmfd, &lockmode, &update_indexes);
	if (res == TM_Ok && CoordNeedsIndexTuples(update_indexes))
	{
		EState	   *estate = CreateExecutorState();
		ResultRelInfo *rri = makeNode(ResultRelInfo);

		InitResultRelInfo(rri, rel, 1, NULL, 0);
		ExecOpenIndices(rri, false);
		(void) CoordExecInsertIndexTuples(rri, new, estate, update_indexes);
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
	}
	ExecDropSingleTupleTableSlot(new);
	ExecDropSingleTupleTableSlot(old);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return res == TM_Ok;
}

/*
 * The end of a claim call's flow control: the slots the jobs it claimed take
 * (ids[i] claimed with tokens[i], sorted by id: the rows it wrote), and the
 * buckets' tokens.  Inside SPI, as the owner.
 */
void
LimitScanEnd(LimitScan *ls, const int64 *ids, const int64 *tokens, int n)
{
	HASH_SEQ_STATUS seq;
	KeyState   *st;
	int			cap = 2 * Max(ls->ntaken, 1);
	Datum	   *per_key = palloc(sizeof(Datum) * cap);
	Datum	   *keys = palloc(sizeof(Datum) * cap);
	Datum	   *slots = palloc(sizeof(Datum) * cap);
	Datum	   *jobs = palloc(sizeof(Datum) * cap);
	Datum	   *toks = palloc(sizeof(Datum) * cap);
	int			nrows = 0;

	if (n == 0)
		return;
	for (int t = 0; t < ls->ntaken; t++)
	{
		const int64 *hit = bsearch(&ls->taken_ids[t], ids, n, sizeof(int64), CmpInt64);
		KeyState   *scopes[2] = {&ls->qs, ls->taken[t]};

		CHECK_FOR_INTERRUPTS();
		if (hit == NULL)
		{
			/*
			 * not claimed after all (expired, or this transaction's own): its
			 * bucket keeps the token it was counted for
			 */
			ls->qs.pending--;
			if (ls->taken[t] != NULL)
				ls->taken[t]->pending--;
			continue;
		}
		for (int k = 0; k < 2; k++)
		{
			KeyState   *sc = scopes[k];

			if (sc == NULL || !sc->has_conc || sc->used >= sc->nfree)
				continue;
			{
				int32		slot = sc->free[sc->used++];

				/*
				 * a free slot with a row: overwrite that row (by its tid, no
				 * plan)
				 */
				if (TakeSlotRow(sc, slot, *hit, tokens[hit - ids]))
					continue;
				per_key[nrows] = BoolGetDatum(sc->per_key);
				keys[nrows] = PointerGetDatum(cstring_to_text_with_len(sc->key, sc->keylen));
				slots[nrows] = Int32GetDatum(slot);
				jobs[nrows] = Int64GetDatum(*hit);
				toks[nrows] = Int64GetDatum(tokens[hit - ids]);
				nrows++;
			}
		}
	}
	if (nrows > 0)
	{
		Oid			argtypes[6] = {TEXTOID, BOOLARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID};
		Datum		args[6];

		args[0] = CStringGetTextDatum(ls->queue);
		args[1] = PointerGetDatum(construct_array(per_key, nrows, BOOLOID, 1, true, TYPALIGN_CHAR));
		args[2] = PointerGetDatum(construct_array(keys, nrows, TEXTOID, -1, false, TYPALIGN_INT));
		args[3] = PointerGetDatum(construct_array(slots, nrows, INT4OID, 4, true, TYPALIGN_INT));
		args[4] = PointerGetDatum(construct_array(jobs, nrows, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		args[5] = PointerGetDatum(construct_array(toks, nrows, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_running_put,
												 "INSERT INTO coord.job_running AS r (queue, per_key, limit_key, slot, job_id, token) "
												 "SELECT $1, u.p, u.k, u.s, u.j, u.t "
												 "FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), "
												 "pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(p, k, s, j, t) "
												 "ON CONFLICT (queue, per_key, limit_key, slot) DO UPDATE "
												 "SET job_id = EXCLUDED.job_id, token = EXCLUDED.token",
												 6, argtypes), args, NULL, false, 0),
					  SPI_OK_INSERT, "taking slots");
	}
	PutBucket(ls, &ls->qs);
	if (ls->keys != NULL)
	{
		hash_seq_init(&seq, ls->keys);
		while ((st = hash_seq_search(&seq)) != NULL)
			PutBucket(ls, st);
	}
}

/*
 * A claim that found nothing only because some key's lock was busy, and
 * that holds no limit lock, waits once for that lock (a claim holds it, and
 * commits soon) and lets it go: true when the caller should scan again.
 */
bool
LimitWaitContended(LimitScan *ls, int got)
{
	if (ls == NULL || !ls->contended || got > 0 || xact_limit_locks > 0)
		return false;
	(void) CoordLockTake(&ls->contended_tag, ExclusiveLock, false, false);
	CoordLockLetGo(&ls->contended_tag, ExclusiveLock, false);
	return true;
}

/*
 * A job of queue finished or failed: in a queue with a concurrency limit
 * its slot is free (nothing to write: a slot counts only while its claim is
 * live), so the queue's idle claimers are woken at commit.  Inside SPI, as
 * the owner; one flag's test when nothing is limited.
 */
void
LimitJobFinished(const char *queue)
{
	if (!LimitsAnywhere())
		return;
	if (CountsRunning(LimitsFor(queue)))
		WakeAtCommit(queue, NULL);
}

/* ---------- pauses (also coord.fail's pause_key) ---------- */

static void
LimitsChanged(bool pauses, const char *queue)
{
	LookupJobRels();
	CacheInvalidateRelcacheByRelid(pauses ? jobrels.pause : jobrels.limit);
	limits_anywhere = -1;
	JobsLimitsInval();
	if (queue != NULL)
		WakeAtCommit(queue, NULL);
}

/*
 * Pauses (queue, key) until until (DT_NOEND: until resumed), or keeps a
 * later pause (extend: coord.fail's pause_key never shortens one).  Returns
 * whether it was not paused before.  Inside SPI, as the owner.
 */
bool
LimitPause(const char *queue, text *key, TimestampTz until, bool extend)
{
	static SPIPlanPtr plan_was = NULL;
	static SPIPlanPtr plan_set = NULL;
	static SPIPlanPtr plan_extend = NULL;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};
	bool		was;

	LookupJobRels();
	args[0] = CStringGetTextDatum(queue);
	args[1] = key ? PointerGetDatum(key) : CStringGetTextDatum("");
	args[2] = TimestampTzGetDatum(until);
	nulls[2] = until == DT_NOEND ? 'n' : ' ';
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_was,
											 "SELECT 1 FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
											 "AND limit_key OPERATOR(pg_catalog.=) $2 "
											 "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()) "
											 "FOR UPDATE",
											 3, argtypes), args, nulls, false, 1),
				  SPI_OK_SELECT, "reading coord.job_pause");
	was = SPI_processed > 0;
	if (extend)
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_extend,
												 "INSERT INTO coord.job_pause AS p (queue, limit_key, until) VALUES ($1, $2, $3) "
												 "ON CONFLICT (queue, limit_key) DO UPDATE SET until = CASE "
												 "WHEN p.until IS NULL THEN NULL "
												 "WHEN p.until OPERATOR(pg_catalog.>) EXCLUDED.until THEN p.until "
												 "ELSE EXCLUDED.until END",
												 3, argtypes), args, nulls, false, 0),
					  SPI_OK_INSERT, "pausing");
	else
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_set,
												 "INSERT INTO coord.job_pause AS p (queue, limit_key, until) VALUES ($1, $2, $3) "
												 "ON CONFLICT (queue, limit_key) DO UPDATE SET until = EXCLUDED.until",
												 3, argtypes), args, nulls, false, 0),
					  SPI_OK_INSERT, "pausing");
	LimitsChanged(true, NULL);
	return !was;
}

/* ---------- arguments ---------- */

static text *
LimitKeyArg(FunctionCallInfo fcinfo, int argno)
{
	text	   *t;
	int			len;

	if (PG_ARGISNULL(argno))
		return NULL;
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	if (len == 0 || len > LIMIT_KEY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("limit_key must have 1 to %d bytes", LIMIT_KEY_MAX)));
	return t;
}

static int32
PositiveArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	int32		v;

	if (PG_ARGISNULL(argno))
		return 0;
	v = PG_GETARG_INT32(argno);
	if (v <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be positive", what),
				 errdetail("%s is %d.", what, v),
				 errhint("Pass NULL to remove that part of the limit.")));
	return v;
}

/* ---------- SQL functions ---------- */

/* The free slots of a queue go, and those of a scope without a concurrency limit all. */
static void
TidyRunning(Datum queue)
{
	static SPIPlanPtr plan_tidy = NULL;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = queue;
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_tidy,
											 "DELETE FROM coord.job_running AS r WHERE r.queue OPERATOR(pg_catalog.=) $1 "
											 "AND (NOT EXISTS (SELECT 1 FROM coord.job_limit AS l "
											 "                 WHERE l.queue OPERATOR(pg_catalog.=) $1 "
											 "                   AND l.per_key OPERATOR(pg_catalog.=) r.per_key "
											 "                   AND l.concurrency IS NOT NULL) "
											 "     OR NOT EXISTS (SELECT 1 FROM coord.job AS j "
											 "                    WHERE j.id OPERATOR(pg_catalog.=) r.job_id "
											 "                      AND j.token OPERATOR(pg_catalog.=) r.token "
											 "                      AND (j.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() "
											 "                           OR coord.job_claimed(j.id))))",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "tidying slots");
}

/*
 * coord.set_limit(queue, concurrency, rate, per, burst, per_key): NULL
 * removes that part; with neither part left the limit goes.
 */
Datum
coord_set_limit(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_put = NULL;
	static SPIPlanPtr plan_del = NULL;
	static SPIPlanPtr plan_backfill = NULL;
	static SPIPlanPtr plan_buckets = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	int32		conc = PositiveArg(fcinfo, 1, "concurrency");
	int32		rate = PositiveArg(fcinfo, 2, "rate");
	int32		burst = PositiveArg(fcinfo, 4, "burst");
	bool		per_key;
	Oid			argtypes[6] = {TEXTOID, BOOLOID, INT4OID, INT4OID, INTERVALOID, INT4OID};
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	CoordUserSwitch sw;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 3, "per");
	CoordRequireArg(fcinfo, 5, "per_key");
	(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(3), "per", false);
	per_key = PG_GETARG_BOOL(5);
	if (burst > 0 && rate == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("burst needs a rate"),
				 errdetail("A burst is the size of the token bucket of a rate limit.")));
	args[0] = CStringGetTextDatum(queue);
	args[1] = BoolGetDatum(per_key);
	args[2] = Int32GetDatum(conc);
	nulls[2] = conc > 0 ? ' ' : 'n';
	args[3] = Int32GetDatum(rate);
	nulls[3] = rate > 0 ? ' ' : 'n';
	args[4] = PG_GETARG_DATUM(3);
	args[5] = Int32GetDatum(burst);
	nulls[5] = burst > 0 ? ' ' : 'n';

	CoordSpiBegin(&sw);
	LookupJobRels();
	if (conc == 0 && rate == 0)
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_del,
												 "DELETE FROM coord.job_limit WHERE queue OPERATOR(pg_catalog.=) $1 "
												 "AND per_key OPERATOR(pg_catalog.=) $2",
												 2, argtypes), args, nulls, false, 0),
					  SPI_OK_DELETE, "set_limit");
	else
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_put,
												 "INSERT INTO coord.job_limit (queue, per_key, concurrency, rate, per, burst) "
												 "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (queue, per_key) DO UPDATE "
												 "SET concurrency = EXCLUDED.concurrency, rate = EXCLUDED.rate, "
												 "per = EXCLUDED.per, burst = EXCLUDED.burst",
												 6, argtypes), args, nulls, false, 0),
					  SPI_OK_INSERT, "set_limit");
	/* without a rate the scope's buckets mean nothing */
	if (rate == 0)
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_buckets,
												 "DELETE FROM coord.job_bucket WHERE queue OPERATOR(pg_catalog.=) $1 "
												 "AND (limit_key OPERATOR(pg_catalog.=) '') OPERATOR(pg_catalog.<>) $2",
												 2, argtypes), args, nulls, false, 0),
					  SPI_OK_DELETE, "set_limit");
	TidyRunning(args[0]);
	/* claims running now take slots: they were made before the limit */
	if (conc > 0)
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_backfill,
												 "INSERT INTO coord.job_running (queue, per_key, limit_key, slot, job_id, token) "
												 "SELECT j.queue, $2, j.k, COALESCE((SELECT pg_catalog.max(r.slot) FROM coord.job_running AS r "
												 "  WHERE r.queue OPERATOR(pg_catalog.=) $1 AND r.per_key OPERATOR(pg_catalog.=) $2 "
												 "    AND r.limit_key OPERATOR(pg_catalog.=) j.k), -1) "
												 "  OPERATOR(pg_catalog.+) (pg_catalog.row_number() OVER (PARTITION BY j.k ORDER BY j.id))::pg_catalog.int4, "
												 "  j.id, j.token "
												 "FROM (SELECT x.*, CASE WHEN $2 THEN x.limit_key ELSE '' END AS k FROM coord.job AS x "
												 "      WHERE pg_catalog.hashtextextended(x.queue, 0) OPERATOR(pg_catalog.=) "
												 "            pg_catalog.hashtextextended($1, 0) AND x.queue OPERATOR(pg_catalog.=) $1 "
												 "        AND (NOT $2 OR x.limit_key IS NOT NULL) "
												 "        AND (x.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() "
												 "             OR coord.job_claimed(x.id))) AS j "
												 "WHERE NOT EXISTS (SELECT 1 FROM coord.job_running AS r "
												 "  WHERE r.queue OPERATOR(pg_catalog.=) $1 AND r.per_key OPERATOR(pg_catalog.=) $2 "
												 "    AND r.job_id OPERATOR(pg_catalog.=) j.id AND r.token OPERATOR(pg_catalog.=) j.token) "
												 "ON CONFLICT DO NOTHING",
												 2, argtypes), args, nulls, false, 0),
					  SPI_OK_INSERT, "set_limit");
	LimitsChanged(false, queue);
	CoordSpiEnd(&sw);
	PG_RETURN_VOID();
}

/* coord.drop_limit(queue, per_key) returns whether there was one */
Datum
coord_drop_limit(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_drop = NULL;
	static SPIPlanPtr plan_buckets = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	Oid			argtypes[2] = {TEXTOID, BOOLOID};
	Datum		args[2];
	CoordUserSwitch sw;
	bool		found;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "per_key");
	args[0] = CStringGetTextDatum(queue);
	args[1] = PG_GETARG_DATUM(1);
	CoordSpiBegin(&sw);
	LookupJobRels();
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_drop,
											 "DELETE FROM coord.job_limit WHERE queue OPERATOR(pg_catalog.=) $1 "
											 "AND per_key OPERATOR(pg_catalog.=) $2",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "drop_limit");
	found = SPI_processed > 0;
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_buckets,
											 "DELETE FROM coord.job_bucket WHERE queue OPERATOR(pg_catalog.=) $1 "
											 "AND (limit_key OPERATOR(pg_catalog.<>) '') OPERATOR(pg_catalog.=) $2",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "drop_limit");
	TidyRunning(args[0]);
	LimitsChanged(false, queue);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(found);
}

/* coord.pause(queue, until, limit_key) returns whether it was not paused */
Datum
coord_pause(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_gone = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	text	   *key = LimitKeyArg(fcinfo, 2);
	TimestampTz until = PG_ARGISNULL(1) ? DT_NOEND : PG_GETARG_TIMESTAMPTZ(1);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		newly;

	CoordNotInParallel(fcinfo);
	if (!PG_ARGISNULL(1) && TIMESTAMP_NOT_FINITE(until))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("until must be finite"),
				 errhint("Pass NULL to pause until coord.resume.")));
	args[0] = CStringGetTextDatum(queue);
	CoordSpiBegin(&sw);
	/* pauses of the queue that have ended go first */
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_gone,
											 "DELETE FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
											 "AND until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "pause");
	newly = LimitPause(queue, key, until, false);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(newly);
}

/*
 * coord.resume(queue, limit_key) returns whether it was paused; 42704 for a
 * queue nothing is known of (no live job, limit or pause).
 */
Datum
coord_resume(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_resume = NULL;
	static SPIPlanPtr plan_known = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	text	   *key = LimitKeyArg(fcinfo, 1);
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	CoordUserSwitch sw;
	bool		was = false;
	uint64		r;

	CoordNotInParallel(fcinfo);
	args[0] = CStringGetTextDatum(queue);
	args[1] = key ? PointerGetDatum(key) : CStringGetTextDatum("");
	CoordSpiBegin(&sw);
	LookupJobRels();
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_resume,
											 "DELETE FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
											 "AND (limit_key OPERATOR(pg_catalog.=) $2 "
											 "     OR until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()) "
											 "RETURNING limit_key OPERATOR(pg_catalog.=) $2 "
											 "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE_RETURNING, "resume");
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;

		was |= DatumGetBool(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
	}
	if (SPI_processed == 0)
	{
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_known,
												 "SELECT 1 WHERE EXISTS (SELECT 1 FROM coord.job_limit "
												 "WHERE queue OPERATOR(pg_catalog.=) $1) "
												 "OR EXISTS (SELECT 1 FROM coord.job AS j "
												 "WHERE pg_catalog.hashtextextended(j.queue, 0) OPERATOR(pg_catalog.=) "
												 "pg_catalog.hashtextextended($1, 0) AND j.queue OPERATOR(pg_catalog.=) $1)",
												 2, argtypes), args, NULL, false, 1),
					  SPI_OK_SELECT, "resume");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("queue \"%s\" does not exist", queue),
					 errdetail("No live job, limit or pause names it.")));
	}
	else
		LimitsChanged(true, queue);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(was);
}

/* The bucket of (queue, key) at now, for next_due: tokens now. */
static double
ReadBucket(Datum queue, Datum key, const LimitSpec *s, TimestampTz now)
{
	static SPIPlanPtr plan_read = NULL;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	bool		isnull;

	args[0] = queue;
	args[1] = key;
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_read,
											 "SELECT tokens, refilled_at FROM coord.job_bucket "
											 "WHERE queue OPERATOR(pg_catalog.=) $1 AND limit_key OPERATOR(pg_catalog.=) $2",
											 2, argtypes), args, NULL, true, 1),
				  SPI_OK_SELECT, "reading a token bucket");
	if (SPI_processed == 0)
		return s->burst;
	return BucketNow(DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)),
					 DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)),
					 now, s);
}

/*
 * When (queue, key) has a free slot under spec, at the earliest: now if it
 * has, else the end of its first running lease, or a poll's length when
 * only session-bound claims run (their end is a session's).
 */
static TimestampTz
SlotFree(Datum queue, Datum key, bool whole, const LimitSpec *s, TimestampTz now)
{
	static SPIPlanPtr plan_slots = NULL;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, BOOLOID};
	Datum		args[3];
	bool		isnull;
	int64		running;
	Datum		first;

	args[0] = queue;
	args[1] = key;
	args[2] = BoolGetDatum(!whole);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_slots,
											 "SELECT pg_catalog.count(*), pg_catalog.min(j.lease_until) "
											 "FROM coord.job_running AS r "
											 "JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id "
											 "AND j.token OPERATOR(pg_catalog.=) r.token "
											 "WHERE r.queue OPERATOR(pg_catalog.=) $1 AND r.per_key OPERATOR(pg_catalog.=) $3 "
											 "AND r.limit_key OPERATOR(pg_catalog.=) $2 "
											 "AND (j.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() "
											 "     OR coord.job_claimed(j.id))",
											 3, argtypes), args, NULL, true, 1),
				  SPI_OK_SELECT, "counting running claims");
	running = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (running < s->conc)
		return now;
	first = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (isnull)
		return now + LIMIT_POLL_US;
	return Min(DatumGetTimestampTz(first), now + LIMIT_POLL_US);
}

/* When a scope (the queue, or a key under the per-key spec) could take a claim. */
static TimestampTz
ScopeDue(Datum queue, Datum key, bool whole, const LimitSpec *s, TimestampTz now)
{
	TimestampTz t = now;

	if (s->rate > 0)
		t = Max(t, BucketRefill(ReadBucket(queue, key, s, now), now, s));
	if (s->conc > 0)
		t = Max(t, SlotFree(queue, key, whole, s, now));
	return t;
}

/*
 * coord.next_due(queue): when the next job of the queue could be claimed,
 * at the earliest: its run_at, and the ends of what holds it back (a pause,
 * a bucket's refill, a full limit's first lease end).  NULL when no job
 * waits, or every one waits for coord.resume.
 */
Datum
coord_next_due(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_groups = NULL;
	static SPIPlanPtr plan_key_pause = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	CoordUserSwitch sw;
	QueueLimits *ql;
	QueueLimits qcopy;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz qdue = now;
	TimestampTz best = DT_NOEND;
	bool		any = false;
	uint64		r,
				ngroups;
	SPITupleTable *groups;

	CoordNotInParallel(fcinfo);
	args[0] = CStringGetTextDatum(queue);
	CoordSpiBegin(&sw);
	ql = LimitsFor(queue);
	if (ql != NULL)
	{
		qcopy = *ql;			/* the cache may be reset by what runs below */
		ql = &qcopy;
		if (ql->paused_until == DT_NOEND)
		{
			CoordSpiEnd(&sw);
			PG_RETURN_NULL();	/* until coord.resume, which wakes */
		}
		qdue = ScopeDue(args[0], CStringGetTextDatum(""), true, &ql->q, now);
		if (ql->paused_until > now)
			qdue = Max(qdue, ql->paused_until);
	}
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_groups,
											 "SELECT j.limit_key, pg_catalog.min(j.run_at) FROM coord.job AS j "
											 "WHERE pg_catalog.hashtextextended(j.queue, 0) OPERATOR(pg_catalog.=) "
											 "pg_catalog.hashtextextended($1, 0) AND j.queue OPERATOR(pg_catalog.=) $1 "
											 "AND (j.lease_until IS NULL OR j.lease_until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()) "
											 "AND NOT coord.job_claimed(j.id) "
											 "GROUP BY j.limit_key",
											 1, argtypes), args, NULL, true, 0),
				  SPI_OK_SELECT, "next_due");
	groups = SPI_tuptable;
	ngroups = SPI_processed;
	for (r = 0; r < ngroups; r++)
	{
		bool		knull,
					isnull;
		Datum		key = SPI_getbinval(groups->vals[r], groups->tupdesc, 1, &knull);
		TimestampTz due = DatumGetTimestampTz(SPI_getbinval(groups->vals[r], groups->tupdesc, 2, &isnull));

		CHECK_FOR_INTERRUPTS();
		if (ql != NULL && !knull)
		{
			if (ql->key_pauses)
			{
				args[1] = key;
				CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_key_pause,
														 "SELECT until FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
														 "AND limit_key OPERATOR(pg_catalog.=) $2 "
														 "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
														 2, argtypes), args, NULL, true, 1),
							  SPI_OK_SELECT, "next_due");
				if (SPI_processed == 1)
				{
					Datum		until = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

					if (isnull)
						continue;	/* until resumed */
					due = Max(due, DatumGetTimestampTz(until));
				}
			}
			if (ql->k.conc > 0 || ql->k.rate > 0)
				due = Max(due, ScopeDue(args[0], key, false, &ql->k, now));
		}
		any = true;
		best = Min(best, due);
	}
	CoordSpiEnd(&sw);
	if (!any)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(Max(Max(best, qdue), now));
}

/* coord.job_snoozes(id): a live job's snoozes, NULL once it finished */
Datum
coord_job_snoozes(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_snoozes = NULL;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		found;
	int32		snoozes = 0;

	CoordRequireArg(fcinfo, 0, "id");
	args[0] = PG_GETARG_DATUM(0);
	CoordSpiBegin(&sw);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_snoozes,
											 "SELECT snoozes FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1",
											 1, argtypes), args, NULL, true, 1),
				  SPI_OK_SELECT, "job_snoozes");
	found = SPI_processed == 1;
	if (found)
	{
		bool		isnull;

		snoozes = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	CoordSpiEnd(&sw);
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_INT32(snoozes);
}

/* coord.bucket_tokens(tokens, refilled_at, rate, per, burst): a bucket's tokens now */
Datum
coord_bucket_tokens(PG_FUNCTION_ARGS)
{
	LimitSpec	s;

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_ARGISNULL(4))
		PG_RETURN_NULL();
	s.rate = PG_GETARG_INT32(2);
	s.per_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(3), "per", false);
	s.burst = PG_GETARG_INT32(4);
	s.conc = 0;
	if (s.rate <= 0)
		PG_RETURN_NULL();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_FLOAT8((double) s.burst);
	/* -infinity would overflow the time since the refill */
	if (TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("refilled_at must be a finite time")));
	PG_RETURN_FLOAT8(BucketNow(PG_GETARG_FLOAT8(0), PG_GETARG_TIMESTAMPTZ(1),
							   GetCurrentStatementStartTimestamp(), &s));
}

/* ---------- retention ---------- */

/*
 * a slot row r. whose job is gone, or finished before horizon ($1): its
 * claim ended that long ago at least
 */
#define SLOT_OLD(r) \
	"(NOT EXISTS (SELECT 1 FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) " r ".job_id) " \
	"AND NOT EXISTS (SELECT 1 FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) " r ".job_id " \
	"AND h.finished_at OPERATOR(pg_catalog.>=) $1))"

/* scopes whose free slots one tick deletes (one key lock at a time) */
#define LIMIT_TICK_SCOPES	256

/*
 * CoordLimitsTick: the tick's share (README.md, Retention; the header
 * above): idle full buckets, pauses ended before horizon, and the slots of
 * scopes whose claims all ended before it.  Returns how many rows it
 * deleted.
 */
int64
CoordLimitsTick(TimestampTz horizon)
{
	static SPIPlanPtr plan_buckets = NULL;
	static SPIPlanPtr plan_pauses = NULL;
	static SPIPlanPtr plan_scopes = NULL;
	static SPIPlanPtr plan_slots = NULL;
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Oid			stypes[4] = {TIMESTAMPTZOID, TEXTOID, BOOLOID, TEXTOID};
	Datum		args[4];
	int64		n = 0;
	uint64		nscopes;
	SPITupleTable *scopes;

	args[0] = TimestampTzGetDatum(horizon);
	args[1] = Int32GetDatum(COORD_PURGE_BATCH);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_buckets,
											 "DELETE FROM coord.job_bucket AS b "
											 "WHERE (b.queue, b.limit_key) IN ("
											 "SELECT x.queue, x.limit_key FROM coord.job_bucket AS x "
											 "LEFT JOIN coord.job_limit AS l ON l.queue OPERATOR(pg_catalog.=) x.queue "
											 "AND l.per_key OPERATOR(pg_catalog.=) (x.limit_key OPERATOR(pg_catalog.<>) '') "
											 "AND l.rate IS NOT NULL "
											 "WHERE x.refilled_at OPERATOR(pg_catalog.<) $1 "
											 "AND (l.queue IS NULL OR coord.bucket_tokens(x.tokens, x.refilled_at, l.rate, l.per, "
											 "COALESCE(l.burst, l.rate)) OPERATOR(pg_catalog.>=) COALESCE(l.burst, l.rate)) "
											 "LIMIT $2 FOR UPDATE OF x SKIP LOCKED)",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "purging token buckets");
	n += (int64) SPI_processed;

	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_pauses,
											 "DELETE FROM coord.job_pause AS p "
											 "WHERE (p.queue, p.limit_key) IN ("
											 "SELECT x.queue, x.limit_key FROM coord.job_pause AS x "
											 "WHERE x.until OPERATOR(pg_catalog.<) $1 "
											 "LIMIT $2 FOR UPDATE SKIP LOCKED)",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "purging ended pauses");
	if (SPI_processed > 0)
		LimitsChanged(true, NULL);
	n += (int64) SPI_processed;

	args[0] = TimestampTzGetDatum(horizon);
	args[1] = Int32GetDatum(LIMIT_TICK_SCOPES);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_scopes,
											 "SELECT r.queue, r.per_key, r.limit_key FROM coord.job_running AS r "
											 "GROUP BY r.queue, r.per_key, r.limit_key "
											 "HAVING pg_catalog.bool_and" SLOT_OLD("r") " "
											 "LIMIT $2",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading idle slots");
	nscopes = SPI_processed;
	scopes = SPI_tuptable;
	for (uint64 i = 0; i < nscopes; i++)
	{
		HeapTuple	tup = scopes->vals[i];
		bool		isnull;
		char	   *queue = SPI_getvalue(tup, scopes->tupdesc, 1);
		text	   *key = DatumGetTextPP(SPI_getbinval(tup, scopes->tupdesc, 3, &isnull));
		LOCKTAG		tag;
		LockAcquireResult r;

		CHECK_FOR_INTERRUPTS();
		KeyTag(&tag, queue, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
		r = LockAcquire(&tag, ExclusiveLock, false, true);
		if (r == LOCKACQUIRE_NOT_AVAIL)
			continue;			/* a claim counts there now */
		args[0] = TimestampTzGetDatum(horizon);
		args[1] = CStringGetTextDatum(queue);
		args[2] = SPI_getbinval(tup, scopes->tupdesc, 2, &isnull);
		args[3] = PointerGetDatum(key);
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_slots,
												 "DELETE FROM coord.job_running AS r "
												 "WHERE r.queue OPERATOR(pg_catalog.=) $2 AND r.per_key OPERATOR(pg_catalog.=) $3 "
												 "AND r.limit_key OPERATOR(pg_catalog.=) $4 "
												 "AND NOT EXISTS (SELECT 1 FROM coord.job_running AS o "
												 "WHERE o.queue OPERATOR(pg_catalog.=) $2 AND o.per_key OPERATOR(pg_catalog.=) $3 "
												 "AND o.limit_key OPERATOR(pg_catalog.=) $4 AND NOT " SLOT_OLD("o") ")",
												 4, stypes), args, NULL, false, 0),
					  SPI_OK_DELETE, "purging idle slots");
		n += (int64) SPI_processed;
		/* a claim that takes the key now waits for this deletion's commit */
		if (r == LOCKACQUIRE_OK)
			LockRelease(&tag, ExclusiveLock, false);
	}
	return n;
}
