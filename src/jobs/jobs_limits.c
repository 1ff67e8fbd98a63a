/*-------------------------------------------------------------------------
 * jobs_limits.c
 *		The job queue's flow control (docs/flow-control.md): concurrency
 *		and rate limits per queue and per limit_key, pauses, snooze-free
 *		cool-downs of a key (coord.fail's pause_key), and the claim's side of
 *		all of it (JobsLimitsFor, JobsLimitScanBegin, JobsLimitFree, JobsLimitTakeOk/
 *		JobsLimitTaken, JobsLimitScanEnd, called from jobs_claim.c).  The SQL
 *		functions (coord.set_limit ... coord.next_due) and the retention
 *		tick are jobs_limits_sql.c.
 *
 * Invariants.  A slot of a concurrency limit is taken only while its claim
 * is live, so a dead worker never leaks one, and finishing a job writes
 * nothing here.  The count and the take of a (queue, key) are serialised
 * by a transaction-level lock (COORD_NS_LIMIT) taken without waiting: a
 * busy key is skipped, and a bucket is written only under its key's lock.
 * With no limit and no pause in the database a claim tests one boolean.
 *
 * Per-backend state: the QueueLimits cache (CoordLocalHash), and the count
 * of limit locks this transaction keeps (forgotten at transaction end).
 *
 * The tables, the fast path, why a limit stays exact, buckets and
 * wake-ups: src/jobs/README.md, "Flow control (jobs_limits.c)".
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
JobsLimitsAnywhere(void)
{
	if (limits_anywhere < 0)
	{
		JobsLookupRels();
		CoordExecLimit(&plan_anywhere,
					   "SELECT 1 FROM coord.job_limit UNION ALL "
					   "SELECT 1 FROM coord.job_pause LIMIT 1",
					   0, NULL, NULL, NULL, 1, SPI_OK_SELECT, "reading coord.job_limit");
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
JobsLimitsFor(const char *queue)
{
	QueueLimits *q;
	bool		found;
	char		key[COORD_NAME_MAX + 1];
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	uint64		r;

	if (!JobsLimitsAnywhere())
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
	CoordExec(&plan_queue_limits,
			  "SELECT per_key, concurrency, rate, per, burst FROM coord.job_limit "
			  "WHERE queue OPERATOR(pg_catalog.=) $1",
			  1, argtypes, args, NULL, SPI_OK_SELECT, "reading coord.job_limit");
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		bool		per_key = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));

		SpecFromRow(per_key ? &q->k : &q->q, SPI_tuptable->vals[r], SPI_tuptable->tupdesc);
	}
	CoordExec(&plan_queue_pause,
			  "SELECT limit_key OPERATOR(pg_catalog.=) '', until FROM coord.job_pause "
			  "WHERE queue OPERATOR(pg_catalog.=) $1 "
			  "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
			  1, argtypes, args, NULL, SPI_OK_SELECT, "reading coord.job_pause");
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
double
JobsBucketNow(double tokens, TimestampTz refilled_at, TimestampTz now, const LimitSpec *s)
{
	double		t = tokens;

	if (now > refilled_at)
		t += (double) (now - refilled_at) * s->rate / (double) s->per_us;
	return Min(t, (double) s->burst);
}

/* When a bucket holding tokens at now has one token. */
TimestampTz
JobsBucketRefill(double tokens, TimestampTz now, const LimitSpec *s)
{
	if (tokens >= 1.0)
		return now;
	return now + (int64) ceil((1.0 - tokens) * (double) s->per_us / s->rate);
}

void
JobsKeyTag(LOCKTAG *tag, const char *queue, const char *key, int keylen)
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
	JobsLookupRels();
again:
	CHECK_FOR_INTERRUPTS();
	seen = running_invals;
	nsp = get_namespace_oid(COORD_SCHEMA, false);
	running_pkey = get_relname_relid("job_running_pkey", nsp);
	job_pkey = get_relname_relid("job_pkey", nsp);
	rel = table_open(jobs_rels.job, AccessShareLock);
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

				JobsJobTag(&tag, id);
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
	jrel = table_open(jobs_rels.job, AccessShareLock);
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
		CoordExecLimit(&plan_key_paused,
					   "SELECT 1 FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
					   "AND limit_key OPERATOR(pg_catalog.=) $2 "
					   "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
					   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "reading coord.job_pause");
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

	JobsKeyTag(&st->tag, ls->queue, st->key, st->keylen);
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
		CoordExecLimit(&plan_bucket,
					   "SELECT tokens, refilled_at FROM coord.job_bucket "
					   "WHERE queue OPERATOR(pg_catalog.=) $1 AND limit_key OPERATOR(pg_catalog.=) $2",
					   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "reading a token bucket");
		if (SPI_processed == 1)
		{
			double		t = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
			TimestampTz at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));

			tokens = JobsBucketNow(t, at, ls->now, spec);

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
JobsLimitScanBegin(const char *queue, QueueLimits *ql, MemoryContext cxt, int n, bool *claimable)
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
JobsLimitFree(LimitScan *ls, int64 id, text *limit_key)
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

/* coord.claim_take's: may it take job id (which JobsLimitFree let through)? */
bool
JobsLimitTakeOk(LimitScan *ls, int64 id)
{
	if (ls->last_id != id)
		return false;
	if (ls->qs.room - ls->qs.pending <= 0)
		return false;
	return ls->last == NULL || ls->last->room - ls->last->pending > 0;
}

/* coord.claim_take took job id: it counts against its key and the queue. */
void
JobsLimitTaken(LimitScan *ls, int64 id)
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
	CoordExec(&plan_bucket_put,
			  "INSERT INTO coord.job_bucket AS b (queue, limit_key, tokens, refilled_at) "
			  "VALUES ($1, $2, $3, $4) ON CONFLICT (queue, limit_key) DO UPDATE "
			  "SET tokens = EXCLUDED.tokens, refilled_at = EXCLUDED.refilled_at",
			  4, argtypes, args, NULL, SPI_OK_INSERT, "writing a token bucket");
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
JobsLimitScanEnd(LimitScan *ls, const int64 *ids, const int64 *tokens, int n)
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
		const int64 *hit = bsearch(&ls->taken_ids[t], ids, n, sizeof(int64), CoordCmpInt64);
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
		CoordExec(&plan_running_put,
				  "INSERT INTO coord.job_running AS r (queue, per_key, limit_key, slot, job_id, token) "
				  "SELECT $1, u.p, u.k, u.s, u.j, u.t "
				  "FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), "
				  "pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(p, k, s, j, t) "
				  "ON CONFLICT (queue, per_key, limit_key, slot) DO UPDATE "
				  "SET job_id = EXCLUDED.job_id, token = EXCLUDED.token",
				  6, argtypes, args, NULL, SPI_OK_INSERT, "taking slots");
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
JobsLimitWaitContended(LimitScan *ls, int got)
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
JobsLimitJobFinished(const char *queue)
{
	if (!JobsLimitsAnywhere())
		return;
	if (CountsRunning(JobsLimitsFor(queue)))
		JobsWakeAtCommit(queue, NULL);
}

/* ---------- pauses (also coord.fail's pause_key) ---------- */

void
JobsLimitsChanged(bool pauses, const char *queue)
{
	JobsLookupRels();
	CacheInvalidateRelcacheByRelid(pauses ? jobs_rels.pause : jobs_rels.limit);
	limits_anywhere = -1;
	JobsLimitsInval();
	if (queue != NULL)
		JobsWakeAtCommit(queue, NULL);
}

/*
 * Pauses (queue, key) until until (DT_NOEND: until resumed), or keeps a
 * later pause (extend: coord.fail's pause_key never shortens one).  Returns
 * whether it was not paused before.  Inside SPI, as the owner.
 */
bool
JobsLimitPause(const char *queue, text *key, TimestampTz until, bool extend)
{
	static SPIPlanPtr plan_was = NULL;
	static SPIPlanPtr plan_set = NULL;
	static SPIPlanPtr plan_extend = NULL;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};
	bool		was;

	JobsLookupRels();
	args[0] = CStringGetTextDatum(queue);
	args[1] = key ? PointerGetDatum(key) : CStringGetTextDatum("");
	args[2] = TimestampTzGetDatum(until);
	nulls[2] = until == DT_NOEND ? 'n' : ' ';
	CoordExecLimit(&plan_was,
				   "SELECT 1 FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
				   "AND limit_key OPERATOR(pg_catalog.=) $2 "
				   "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()) "
				   "FOR UPDATE",
				   3, argtypes, args, nulls, 1, SPI_OK_SELECT, "reading coord.job_pause");
	was = SPI_processed > 0;
	if (extend)
		CoordExec(&plan_extend,
				  "INSERT INTO coord.job_pause AS p (queue, limit_key, until) VALUES ($1, $2, $3) "
				  "ON CONFLICT (queue, limit_key) DO UPDATE SET until = CASE "
				  "WHEN p.until IS NULL THEN NULL "
				  "WHEN p.until OPERATOR(pg_catalog.>) EXCLUDED.until THEN p.until "
				  "ELSE EXCLUDED.until END",
				  3, argtypes, args, nulls, SPI_OK_INSERT, "pausing");
	else
		CoordExec(&plan_set,
				  "INSERT INTO coord.job_pause AS p (queue, limit_key, until) VALUES ($1, $2, $3) "
				  "ON CONFLICT (queue, limit_key) DO UPDATE SET until = EXCLUDED.until",
				  3, argtypes, args, nulls, SPI_OK_INSERT, "pausing");
	JobsLimitsChanged(true, NULL);
	return !was;
}
