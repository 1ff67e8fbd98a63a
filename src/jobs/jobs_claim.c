/*-------------------------------------------------------------------------
 * jobs_claim.c
 *		The job queue's claim (see src/jobs/README.md for the whole protocol):
 *		coord.claim and the two functions its statement calls, coord.claim_free
 *		below the row locks and coord.claim_take above them; the claim
 *		frontiers; the claimed rows written through the table access method.
 *
 * Per-backend state here: the frontiers (one per claim filter, at most
 * FRONTIERS_MAX, least recently used forgotten) and the deepest nesting
 * level at which this transaction made a claim still in effect.  What survives an abort: nothing of the
 * claims (their row changes roll back, lease claims hold no lock,
 * session-bound claims are holds, released by common_lock.c), so the abort
 * callback, and the subtransaction-abort callback for a claim made inside
 * the subtransaction that aborts (ROLLBACK TO a savepoint, an exception
 * block), forget the frontiers, which would otherwise stay past the jobs
 * that are ready again.
 *
 * coord_claim is seven steps over one ClaimCall: ClaimArgs, ClaimBegin,
 * ClaimFromFrontier, ClaimFromHead, ClaimMoveFrontier, ClaimBuryExhausted,
 * ClaimEmit; ClaimMarkIdle then says whether the worker waits.  The steps
 * after ClaimArgs are JobsClaimRun, which jobs_next.c's one-commit entry
 * points call too (with JobsClaimArgs for their own argument numbers).
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

#include "jobs/jobs_int.h"
#include "partitions/partitions.h"

#define CLAIM_MAX_N			10000

/*
 * A claim of n jobs sets aside to die at most n + CLAIM_DEAD_MAX - 1 jobs
 * past their expires_at or with every attempt spent (each holds a claim lock
 * until the claim's transaction ends; a statement sets aside at most as many
 * as it still wants, and runs again after): once it has set aside this many
 * it stops and returns what it found.  Its frontier is then past them, so
 * the next claim goes on from there; the rest die at later claims or at
 * coord.tick.  Jobs this transaction claimed already (JobsClaimRow) count
 * here too.  Without it a claim walked and locked the whole backlog to
 * find its one job; reading past them unlocked would still walk it all at
 * every claim (100,000 expired jobs: 0.1-0.3 s a claim).
 */
#define CLAIM_DEAD_MAX		32

/*
 * The deepest transaction nesting level at which a claim of this
 * transaction that is still in effect was made (0: none).  The abort of a
 * (sub)transaction at or above it puts those jobs back behind our
 * frontiers.
 */
static int	claimed_level = 0;

/*
 * Where a backend last found work for a claim filter (queue, host,
 * partition): the claim-order key of the last job it claimed, and the jobs
 * it had to skip because another session held them.
 */
#define FRONTIER_HELD	64
typedef struct Frontier
{
	char		filter[3 * COORD_NAME_MAX + 32];	/* hash key: must be first */
	bool		valid;
	int32		priority;
	TimestampTz run_at;
	int64		id;
	TimestampTz last_full;
	int64		rescan_us;		/* put the next head scan off this long */
	TimestampTz last_higher;	/* last look for jobs of a higher priority */
	TimestampTz last_probe;
	int			nheld;
	int64		held[FRONTIER_HELD];
	uint64		owned_version;	/* partition group claims: of the segments
								 * owned when it was valid */
	dlist_node	lru;			/* in frontier_lru, most recently used last */
} Frontier;

static HTAB *frontiers = NULL;
static dlist_head frontier_lru = DLIST_STATIC_INIT(frontier_lru);

/*
 * A backend keeps at most this many frontiers (about 750 bytes each) and
 * forgets the least recently used one beyond that: a forgotten frontier only
 * means that filter's next claim scans from the head.
 */
#define FRONTIERS_MAX	1024

/* Every frontier forgotten: the next claim of each filter scans from the head. */
static void
ForgetFrontiers(void)
{
	HASH_SEQ_STATUS seq;
	Frontier   *f;

	if (frontiers == NULL)
		return;
	hash_seq_init(&seq, frontiers);
	while ((f = hash_seq_search(&seq)) != NULL)
		f->valid = false;
}

static void
ClaimXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:

			/*
			 * jobs this transaction claimed are ready again, behind our
			 * frontiers
			 */
			if (claimed_level > 0)
				ForgetFrontiers();
			claimed_level = 0;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			claimed_level = 0;
			break;
		default:
			break;
	}
}

/*
 * A subtransaction that aborts (ROLLBACK TO a savepoint, an exception block)
 * gives back the jobs claimed in it: their row changes and session claims go
 * with it.  Its parent is taken to have claimed too, since it may have.  A
 * subtransaction that commits hands its claims to its parent.
 */
static void
ClaimSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	int			level;

	if (claimed_level == 0)
		return;
	level = GetCurrentTransactionNestLevel();
	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			if (claimed_level >= level)
			{
				ForgetFrontiers();
				claimed_level = level - 1;
			}
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			if (claimed_level >= level)
				claimed_level = level - 1;
			break;
		default:
			break;
	}
}

void
JobsClaimInit(void)
{
	RegisterXactCallback(ClaimXactCallback, NULL);
	RegisterSubXactCallback(ClaimSubXactCallback, NULL);
}

PG_FUNCTION_INFO_V1(coord_claim);
PG_FUNCTION_INFO_V1(coord_claim_take);
PG_FUNCTION_INFO_V1(coord_claim_free);

/* ---------- claim ---------- */

/* The state of one claim call while its statements walk candidates. */
typedef struct ClaimScan
{
	bool		session_bound;
	Oid			claimant;		/* the calling role, recorded in claimed_by */
	bool		moves_frontier; /* whether the running statement moves the
								 * frontier */
	MemoryContext cxt;			/* the claim call's: for what outlives a
								 * statement */
	int			n;
	int			got;
	int64	   *ids;
	List	   *exhausted;		/* jobs set aside to die: expired or spent */
	int			ndead;			/* how many */
	HTAB	   *aside;			/* their ids, for a lease claim's later
								 * statements: or NULL */
	int			nheld;
	int64		held[FRONTIER_HELD];	/* skipped: a session holds them */
	bool		last_valid;
	int32		last_priority;
	TimestampTz last_run_at;
	int64		last_id;
	bool		cmp_valid;		/* a frontier to compare the jobs found with */
	int32		cmp_priority;
	TimestampTz cmp_run_at;
	int64		cmp_id;
	bool		behind;			/* found a job that sorts before that frontier */
	LimitScan  *limits;			/* flow control, or NULL: the queue has none */
} ClaimScan;

/* Whether the claim has set aside as many jobs to die as it may: it stops. */
static inline bool
ClaimStopped(const ClaimScan *scan)
{
	return scan->ndead >= CLAIM_DEAD_MAX;
}

/* The claim whose statement is running: coord.claim_take works for it. */
static ClaimScan *active_scan = NULL;

/*
 * A job set aside (to die: attempts spent, or past its expires_at; or
 * claimed by this transaction already, JobsClaimRow) is remembered: a lease
 * claim holds no lock on it, and the call's next statements see it again,
 * still ready, and skip it (coord_claim_take).
 */
static void
ClaimSetAside(ClaimScan *scan, int64 id)
{
	if (scan->aside == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(int64);
		ctl.hcxt = scan->cxt;
		scan->aside = hash_create("pg_coord claim set aside", 16, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	(void) hash_search(scan->aside, &id, HASH_ENTER, NULL);
}

static Frontier *
GetFrontier(const char *queue, const char *host, int32 partition, int32 partitions,
			const char *pgroup)
{
	char		filter[3 * COORD_NAME_MAX + 32];
	Frontier   *f;
	bool		found;

	if (frontiers == NULL)
		dlist_init(&frontier_lru);	/* first use: the list starts empty with
									 * its table */
	CoordLocalHash(&frontiers, "pg_coord claim frontiers", sizeof(filter), sizeof(Frontier), HASH_STRINGS);
	if (pgroup != NULL)
		snprintf(filter, sizeof(filter), "%s|%s|%s|g", queue, host ? host : "", pgroup);
	else
		snprintf(filter, sizeof(filter), "%s|%s|%d|%d", queue, host ? host : "", partition, partitions);
	f = hash_search(frontiers, filter, HASH_ENTER, &found);
	if (found)
		dlist_delete(&f->lru);
	else
	{
		f->valid = false;
		f->last_full = 0;
		f->rescan_us = (int64) coord_claim_rescan_interval * 1000;
		f->last_higher = 0;
		f->last_probe = 0;
		f->nheld = 0;
		f->owned_version = 0;
	}
	dlist_push_tail(&frontier_lru, &f->lru);
	/* forget the least recently used ones: never f, which is last */
	while (hash_get_num_entries(frontiers) > FRONTIERS_MAX)
	{
		Frontier   *old = dlist_container(Frontier, lru, dlist_pop_head_node(&frontier_lru));

		Assert(old != f);
		hash_search(frontiers, old->filter, HASH_REMOVE, NULL);
	}
	return f;
}

/*
 * The four claim scans: from the head of the claim order, onward from the
 * frontier, the higher priorities only, and the jobs skipped earlier
 * because a session held them.
 */
typedef enum ClaimKind
{
	CLAIM_HEAD,
	CLAIM_FROM,
	CLAIM_HIGHER,
	CLAIM_HELD,
	CLAIM_KINDS
} ClaimKind;

/* [kind][filter]: none, partition of partitions, a partition group's owned segments */
#define CLAIM_FILTERS 3
static SPIPlanPtr plan_claims[CLAIM_KINDS][CLAIM_FILTERS][2];	/* [.][.][limited] */
static SPIPlanPtr plan_group_blocked = NULL;
static SPIPlanPtr plan_group_changing = NULL;

#define CLAIM_NARGS 11

/*
 * ClaimPlan prepares (once) the statement of a claim scan: a SELECT of the
 * ctid and id of the jobs claimed, whose subquery walks the claim order with
 * FOR UPDATE SKIP LOCKED; above the row locks coord.claim_take takes each
 * candidate's claim lock (a lease claim probes it) and says whether it
 * counts, and LIMIT stops at the jobs still wanted.  The take must see
 * only rows this statement has locked: a claim lock taken on a row that
 * SKIP LOCKED then skips would hold a job nobody works on.  A FOR UPDATE
 * subquery alone does not ensure that (the planner pushes outer quals into
 * it, below its row locks, and volatile ones too); OFFSET 0 does, as a
 * subquery with an OFFSET takes no quals from outside.  Rows past the limit
 * are never read.
 *
 * Nor may the statement row-lock a job it then discards: a claim inside an
 * open transaction would keep that lock, and the job's holder would wait in
 * complete or fail until that transaction ends.  So every test that can
 * discard a row is one qual below the row locks, coord.claim_free: the group
 * check, and a probe of the claim lock (a session-bound job is a ready row
 * whose claim lock a session holds) that does not take it.  Only a
 * session-bound claim that commits between the probe and the row lock can
 * still be locked and discarded (coord_claim_take finds its lock taken).
 *
 * $1 queue, $2 host, $3 partition, $4 partitions (or the group's segments),
 * $5 the filter (0 none, 1 partition, 2 partition group), $6..$8 the scan's
 * own, $9 how many jobs ($10, the lease, is JobsClaimRow's), $11 the segments a
 * partition group claim may take from (a bit per segment: one test per
 * row, where = ANY of a parameter array would compare with each element).
 */
static pg_noinline SPIPlanPtr
ClaimPlan(ClaimKind kind, int filter, bool limited)
{
	static const char *const tails[CLAIM_KINDS] = {
		"ORDER BY j.priority DESC, j.run_at, j.id",
		"AND j.priority OPERATOR(pg_catalog.=) $6 "
		"AND ROW(j.run_at, j.id) OPERATOR(pg_catalog.>=) ROW($7, $8) "
		"ORDER BY j.run_at, j.id",
		"AND j.priority OPERATOR(pg_catalog.>) $6 "
		"ORDER BY j.priority DESC, j.run_at, j.id",
		"AND j.id OPERATOR(pg_catalog.=) ANY ($6) "
		"ORDER BY j.priority DESC, j.run_at, j.id",
	};
	SPIPlanPtr *slot = &plan_claims[kind][filter][limited ? 1 : 0];

	if (*slot == NULL)
	{
		Oid			types[CLAIM_NARGS] = {TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID, INT4OID, TIMESTAMPTZOID, INT8OID, INT4OID, INTERVALOID, BYTEAOID};
		static const char *const filters[CLAIM_FILTERS] = {
			"",
			"AND coord.job_part(j.key, j.id) OPERATOR(pg_catalog.%) $4 OPERATOR(pg_catalog.=) $3 ",
			"AND pg_catalog.get_bit($11, coord.job_part(j.key, j.id) OPERATOR(pg_catalog.%) $4) "
			"OPERATOR(pg_catalog.=) 1 ",
		};
		char	   *sql;

		if (kind == CLAIM_HELD)
			types[5] = INT8ARRAYOID;
		sql = psprintf("SELECT c.tid, c.id FROM ("
					   "SELECT j.ctid AS tid, j.id, j.attempt OPERATOR(pg_catalog.>=) j.max_attempts AS spent, "
					   "j.priority, j.run_at FROM coord.job AS j "
					   "WHERE pg_catalog.hashtextextended(j.queue, 0) OPERATOR(pg_catalog.=) "
					   "pg_catalog.hashtextextended($1, 0) "
					   "AND j.queue OPERATOR(pg_catalog.=) $1 "
					   "AND j.run_at OPERATOR(pg_catalog.<=) pg_catalog.statement_timestamp() "
					   "AND (j.lease_until IS NULL "
					   "     OR j.lease_until OPERATOR(pg_catalog.<=) pg_catalog.statement_timestamp()) "
					   "AND (j.host IS NULL OR j.host OPERATOR(pg_catalog.=) $2) %s"
					   "AND coord.claim_free(j.id, j.queue, j.group_key, j.xmax, %s) "
					   "%s OFFSET 0 FOR UPDATE OF j SKIP LOCKED) AS c "
					   "WHERE coord.claim_take(c.id, c.spent, c.priority, c.run_at) "
					   "LIMIT $9",
					   filters[filter],
					   limited ? "j.limit_key" : "NULL::pg_catalog.text",
					   tails[kind]);
		(void) CoordPlan(slot, sql, CLAIM_NARGS, types);
	}
	return *slot;
}

/* Is xmax, a row's, another transaction that is still changing or locking it? */
static bool
XactChangesRow(TransactionId xmax)
{
	return TransactionIdIsValid(xmax) && !TransactionIdIsCurrentTransactionId(xmax) &&
		TransactionIdIsInProgress(xmax);
}

/*
 * Is xmax, a row's, another transaction that was still changing or locking
 * it as of snap (in progress then, whether it has ended since or not)?
 */
static bool
XactChangedRowSince(TransactionId xmax, Snapshot snap)
{
	return TransactionIdIsValid(xmax) && !TransactionIdIsCurrentTransactionId(xmax) &&
		XidInMVCCSnapshot(xmax, snap);
}

/*
 * May the job run now, as far as its group goes?  Not if an earlier job of
 * the group waits, or another of it runs: a group runs one job at a time, in
 * enqueue order.  A query of its own (from coord.claim_free) rather than a
 * NOT EXISTS subquery of the claim, so that a claim does not start a
 * subplan's index scan every time (7% of a claim's instructions), and only
 * for jobs with a group.  It reads with the calling statement's snapshot.
 *
 * A later job of the group (enqueued first, committed first) may be being
 * claimed by a transaction that has not committed: its row shows no lease
 * yet, and a lease claim holds no claim lock.  So when nothing else holds the
 * job back, a second query looks for a later job whose row another
 * transaction is changing, and takes it as running.  "Changing" is as of
 * the statement's snapshot, not now: a claim that committed after the
 * snapshot has a lease the snapshot does not show (and a lease claim's
 * lock, when it took one, went at that commit), so a row whose xmax was
 * still running then holds the group back too.
 */
static bool
GroupFree(Datum queue, Datum group_key, Datum id)
{
	Oid			types[3] = {TEXTOID, TEXTOID, INT8OID};
	Datum		args[3];
	bool		blocked;

	args[0] = queue;
	args[1] = group_key;
	args[2] = id;
	/* as the owner already: claim_free runs inside the claim's statement */
	CoordSpiConnectAsCaller();
	CoordExecReadOnly(&plan_group_blocked,
					  "SELECT 1 FROM coord.job AS g "
					  "WHERE g.queue OPERATOR(pg_catalog.=) $1 "
					  "AND g.group_key OPERATOR(pg_catalog.=) $2 "
					  "AND g.id OPERATOR(pg_catalog.<>) $3 "
					  "AND (g.id OPERATOR(pg_catalog.<) $3 "
					  "     OR g.lease_until OPERATOR(pg_catalog.>) pg_catalog.statement_timestamp() "
					  "     OR coord.job_claimed(g.id)) LIMIT 1",
					  3, types, args, NULL, 1, "checking a job's group");
	blocked = (SPI_processed > 0);
	if (!blocked)
	{
		CoordExecReadOnly(&plan_group_changing,
						  "SELECT g.xmax FROM coord.job AS g "
						  "WHERE g.queue OPERATOR(pg_catalog.=) $1 "
						  "AND g.group_key OPERATOR(pg_catalog.=) $2 "
						  "AND g.id OPERATOR(pg_catalog.>) $3 "
						  "AND g.xmax OPERATOR(pg_catalog.<>) 0",
						  3, types, args, NULL, 0, "checking a job's group");
		for (uint64 r = 0; r < SPI_processed && !blocked; r++)
		{
			bool		isnull;
			Datum		x = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);

			CHECK_FOR_INTERRUPTS();
			blocked = !isnull && XactChangedRowSince(DatumGetTransactionId(x), GetActiveSnapshot());
		}
	}
	CoordSpiFinishAsCaller();
	return !blocked;
}

/*
 * coord.claim_free(id, queue, group_key, xmax): called by a claim statement
 * below its row locks, for each candidate the cheaper quals pass: may the
 * statement lock this row?  Not when a session holds the job's claim lock,
 * or this session holds its session-bound claim, or its group holds it back
 * (GroupFree).  Every test that can discard a row is here, so a claim never
 * row-locks a job it then skips.  The claim lock is probed in the lock
 * table, not taken: it is taken above the row locks (coord_claim_take), so
 * only ever on a row the statement locked.  An EvalPlanQual recheck may call
 * this again for the same job.
 *
 * A job whose claim lock is held is remembered, to be probed again by id,
 * only if no transaction in progress has its row (xmax): that is a session
 * holding it.  A claim in flight holds both, and SKIP LOCKED would have
 * skipped it: remembering those (every claim meets its neighbours') made
 * every claimer probe by id every 50 ms.
 */
Datum
coord_claim_free(PG_FUNCTION_ARGS)
{
	ClaimScan  *scan = active_scan;
	int64		id;
	LOCKTAG		tag;
	int			i;

	if (scan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("coord.claim_free can only be called by coord.claim")));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		elog(ERROR, "coord.claim_free: null job column");
	id = PG_GETARG_INT64(0);
	if (JobsHoldsSessionClaim(id))
		PG_RETURN_BOOL(false);
	JobsJobTag(&tag, id);
	if (LockWaiterCount(&tag) > 0)
	{
		TransactionId xmax = InvalidTransactionId;

		if (!PG_ARGISNULL(3))
			xmax = DatumGetTransactionId(PG_GETARG_DATUM(3));
		if (TransactionIdIsValid(xmax) && TransactionIdIsInProgress(xmax))
			PG_RETURN_BOOL(false);
		for (i = 0; i < scan->nheld && scan->held[i] != id; i++)
			;
		if (i == scan->nheld && scan->nheld < FRONTIER_HELD)
			scan->held[scan->nheld++] = id;
		PG_RETURN_BOOL(false);
	}

	/*
	 * A row another transaction is changing: mostly a lease claim in flight,
	 * which holds no claim lock.  SKIP LOCKED would skip it; skipping it here
	 * spares its group and limit checks, as the probe above does for a
	 * session-bound claim in flight.
	 */
	if (!PG_ARGISNULL(3) && XactChangesRow(DatumGetTransactionId(PG_GETARG_DATUM(3))))
		PG_RETURN_BOOL(false);
	if (!PG_ARGISNULL(2) && !GroupFree(PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), PG_GETARG_DATUM(0)))
		PG_RETURN_BOOL(false);
	/* flow control last: it may take the key's lock */
	if (scan->limits != NULL)
		PG_RETURN_BOOL(JobsLimitFree(scan->limits, id, PG_ARGISNULL(4) ? NULL : PG_GETARG_TEXT_PP(4)));
	PG_RETURN_BOOL(true);
}

/*
 * coord.claim_take(id, spent, priority, run_at): called by a claim
 * statement for each row it has locked, in claim order.  Takes the job's
 * claim lock (session-bound) or probes it (lease); a job a session holds is
 * skipped (and remembered).  True when the job counts; one whose attempts
 * are used up counts too, and the claim then sets it aside to die
 * (RunClaimOnce).
 */
Datum
coord_claim_take(PG_FUNCTION_ARGS)
{
	ClaimScan  *scan = active_scan;
	int64		id;
	bool		spent;
	LOCKTAG		tag;
	LockAcquireResult r;

	if (scan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("coord.claim_take can only be called by coord.claim")));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		elog(ERROR, "coord.claim_take: null job column");
	id = PG_GETARG_INT64(0);
	spent = PG_GETARG_BOOL(1);
	if (scan->got >= scan->n)
		PG_RETURN_BOOL(false);

	/*
	 * A job this session already holds (coord.claim_free has let none
	 * through, but an EvalPlanQual recheck could).  One this call already set
	 * aside: the aside set (lease) or LockAcquire (session) says so below.
	 */
	if (JobsHoldsSessionClaim(id))
		PG_RETURN_BOOL(false);
	/* one this call set aside: skipped by id (ClaimSetAside) */
	if (scan->aside != NULL && hash_search(scan->aside, &id, HASH_FIND, NULL) != NULL)
		PG_RETURN_BOOL(false);
	/* the room coord.claim_free found for its key is still there */
	if (scan->limits != NULL && !spent && !JobsLimitTakeOk(scan->limits, id))
		PG_RETURN_BOOL(false);
	JobsJobTag(&tag, id);
	if (!scan->session_bound)
	{
		/*
		 * A lease claim takes no lock: it only looks whether a session holds
		 * the job.  None can take it meanwhile (that takes this row's lock,
		 * which this transaction keeps), and after the commit the lease and
		 * the token keep the job.  One this call claimed has a lease by now,
		 * and its statements do not see it.
		 */
		if (LockWaiterCount(&tag) > 0)
		{
			/* a session holds it: look again first next time */
			if (scan->nheld < FRONTIER_HELD)
				scan->held[scan->nheld++] = id;
			PG_RETURN_BOOL(false);
		}
	}
	else
	{
		/* a session-bound claim counts against coord.max_locks_per_session */
		CoordLockBudget(1);
		r = LockAcquire(&tag, ExclusiveLock, true, true);
		CoordLockCounted(&tag, r, true);
		if (r == LOCKACQUIRE_NOT_AVAIL)
		{
			/*
			 * A session took it after coord.claim_free looked (the row stays
			 * locked until this transaction ends): look again first next
			 * time.
			 */
			if (scan->nheld < FRONTIER_HELD)
				scan->held[scan->nheld++] = id;
			PG_RETURN_BOOL(false);
		}
		if (r != LOCKACQUIRE_OK)
		{
			/* held by this session already: not a new claim */
			CoordLockLetGo(&tag, ExclusiveLock, true);
			PG_RETURN_BOOL(false);
		}
		CoordHoldTaken(JobsClaimKey(id), &tag); /* released if this
												 * transaction aborts */
	}

	/*
	 * A job whose every attempt was lost to crashed or stalled claimers
	 * counts too, so that the LIMIT bounds how many one statement sets aside:
	 * JobsClaimRow finds it spent and it dies, as a job past its expires_at
	 * does.
	 */
	if (scan->limits != NULL && !spent)
		JobsLimitTaken(scan->limits, id);
	scan->ids[scan->got++] = id;
	if (scan->moves_frontier)
	{
		scan->last_valid = true;
		scan->last_id = id;
		scan->last_priority = PG_GETARG_INT32(2);
		scan->last_run_at = PG_GETARG_TIMESTAMPTZ(3);
		if (scan->cmp_valid &&
			(scan->last_priority > scan->cmp_priority ||
			 (scan->last_priority == scan->cmp_priority &&
			  (scan->last_run_at < scan->cmp_run_at ||
			   (scan->last_run_at == scan->cmp_run_at && id < scan->cmp_id)))))
			scan->behind = true;
	}
	PG_RETURN_BOOL(true);
}

/* Runs a claim statement with scan as the claim coord.claim_take works for. */
static pg_noinline void
ExecClaim(SPIPlanPtr plan, Datum *args, char *nulls, ClaimScan *scan)
{
	active_scan = scan;
	PG_TRY();
	{
		CoordExecPlan(plan, args, nulls, SPI_OK_SELECT, "claim");
	}
	PG_FINALLY();
	{
		active_scan = NULL;
	}
	PG_END_TRY();
}


/*
 * RunClaim runs one claim scan's statement for the jobs still wanted and
 * keeps the rows it claimed in rows[] (by position in scan->ids, in the
 * claim call's context).
 */
static int	RunClaimOnce(ClaimKind kind, Datum *args, char *nulls, ClaimScan *scan, bool moves_frontier,
						 HeapTuple *rows, TupleDesc outdesc);

/*
 * A job found past its expires_at or spent is not claimed (JobsClaimRow sets it
 * aside to die), nor one this transaction claimed already: the scan runs
 * again for the jobs still wanted.  Each round sets aside at least one job,
 * which the next round skips (ClaimSetAside), until CLAIM_DEAD_MAX are set
 * aside (ClaimStopped).
 */
static void
RunClaim(ClaimKind kind, Datum *args, char *nulls, ClaimScan *scan, bool moves_frontier,
		 HeapTuple *rows, TupleDesc outdesc)
{
	while (RunClaimOnce(kind, args, nulls, scan, moves_frontier, rows, outdesc) > 0)
		CHECK_FOR_INTERRUPTS();
}

/* One run of a claim scan's statement; returns how many jobs it set aside to die. */
static int
RunClaimOnce(ClaimKind kind, Datum *args, char *nulls, ClaimScan *scan, bool moves_frontier,
			 HeapTuple *rows, TupleDesc outdesc)
{
	int			expired = 0;

	int			first = scan->got;
	int			nest = 0;
	int			generation;
	int			filter = DatumGetInt32(args[4]);
	uint64		r;
	SPIPlanPtr	plan;

	if (scan->got >= scan->n || ClaimStopped(scan))
		return 0;
	args[8] = Int32GetDatum(scan->n - scan->got);
	nulls[8] = ' ';
	plan = ClaimPlan(kind, filter, scan->limits != NULL);

	/*
	 * The plan is generic, and made without knowing how many jobs are wanted:
	 * with many jobs (in any queue) the planner would cost the subquery for a
	 * tenth of the backlog and pick a bitmap scan and a sort of the whole
	 * queue, or JIT-compile every claim.  A claim reads a handful of rows:
	 * when the plan cache is about to plan, steer it to the ordered claim
	 * index and the primary key.
	 */
	generation = CoordPlanGeneration(plan);
	if (generation < 0)
	{
		nest = NewGUCNestLevel();
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);

		/*
		 * The probe of held jobs reads at most FRONTIER_HELD ids: by the
		 * primary key and a sort of those, not a walk of the queue's whole
		 * range of the claim index every 50 ms.
		 */
		if (kind != CLAIM_HELD)
			(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	scan->moves_frontier = moves_frontier;
	ExecClaim(plan, args, nulls, scan);
	if (generation < 0)
		AtEOXact_GUC(true, nest);
	else if (CoordPlanGeneration(plan) != generation)
	{
		/*
		 * Replanned without the settings (an invalidation came in between):
		 * drop the plan, so that the next claim prepares and steers anew.
		 */
		CoordSpiCheck(SPI_freeplan(plan), 0, "SPI_freeplan");
		plan_claims[kind][filter][scan->limits != NULL ? 1 : 0] = NULL;
	}

	if (SPI_processed > 0)
	{
		SPITupleTable *tt = SPI_tuptable;
		ClaimWriter w;

		JobsClaimWriterOpen(&w);
		for (r = 0; r < SPI_processed; r++)
		{
			HeapTuple	row = tt->vals[r];
			bool		isnull;
			ItemPointer tid = (ItemPointer) DatumGetPointer(SPI_getbinval(row, tt->tupdesc, 1, &isnull));
			int64		id = DatumGetInt64(SPI_getbinval(row, tt->tupdesc, 2, &isnull));
			int			i = first + (int) r;

			/* rows come in the order claim_take took them; search if not */
			if (i >= scan->got || scan->ids[i] != id)
				for (i = first; i < scan->got && scan->ids[i] != id; i++)
					;
			if (i < scan->got)
			{
				bool		mine;

				rows[i] = JobsClaimRow(&w, tid, scan->session_bound, scan->claimant, args[9],
									   outdesc, scan->cxt, &mine);
				if (rows[i] == NULL && mine)
				{
					/*
					 * claimed by this transaction already: skipped, not
					 * claimed again (a session-bound claim lets go of the
					 * lock it took); counted as set aside, which bounds how
					 * many one call meets
					 */
					if (scan->session_bound)
						CoordHoldDrop(JobsClaimKey(id));
					ClaimSetAside(scan, id);
					scan->ids[i] = -1;
					scan->ndead++;
					expired++;
				}
				else if (rows[i] == NULL)
				{
					/* past its expires_at or spent: set aside to die */
					MemoryContext old = MemoryContextSwitchTo(scan->cxt);
					int64	   *p = palloc(sizeof(int64));

					*p = id;
					scan->exhausted = lappend(scan->exhausted, p);
					MemoryContextSwitchTo(old);
					ClaimSetAside(scan, id);
					scan->ids[i] = -1;
					scan->ndead++;
					expired++;
				}
			}
		}
		JobsClaimWriterClose(&w);
	}
	if (expired > 0)
	{
		/* the jobs set aside leave the claimed ones */
		int			k = first;

		for (int i = first; i < scan->got; i++)
			if (scan->ids[i] != -1)
			{
				scan->ids[k] = scan->ids[i];
				rows[k] = rows[i];
				k++;
			}
		for (int i = k; i < scan->got; i++)
			rows[i] = NULL;
		scan->got = k;
	}
	return expired;
}

/*
 * coord.claim's arguments, checked, and what its steps share: the claim
 * statements' parameters, the scan, the frontier and the rows claimed.
 */
struct ClaimCall
{
	char	   *queue;
	char	   *host;
	int32		n;
	bool		session_bound;
	Datum		lease;
	int32		partition;
	int32		partitions;
	bool		partitioned;
	char	   *pgroup;			/* partition_group, or NULL */
	bytea	   *owned;			/* its segments this session owns, a bit each */
	int			nowned;
	int32		segments;
	uint64		owned_version;
	Datum		args[CLAIM_NARGS];
	char		nulls[CLAIM_NARGS];
	ClaimScan	scan;
	Frontier   *f;
	TimestampTz now;
	HeapTuple  *rows;			/* by position in scan.ids */
	TupleDesc	outdesc;
	bool		blocked;		/* flow control: nothing of the queue now */
};

/* Whether argument pos (-1: not an argument of this entry point) is NULL or absent. */
static inline bool
ClaimArgNull(FunctionCallInfo fcinfo, int pos)
{
	return pos < 0 || pos >= PG_NARGS() || PG_ARGISNULL(pos);
}

/*
 * Step 1: the arguments, checked (they are the caller's errors, before any
 * work); pos says which argument is which (coord.claim's, or another entry
 * point's: JobsClaimArgs).
 */
static void
ClaimArgs(FunctionCallInfo fcinfo, const JobsClaimArgPos *pos, ClaimCall *c)
{
	c->queue = pos->queue >= 0 ? CoordNameArg(fcinfo, pos->queue, "queue", false) : NULL;
	c->host = pos->host >= 0 ? CoordNameArg(fcinfo, pos->host, "host", true) : NULL;
	c->lease = (Datum) 0;
	c->partition = 0;
	c->partitions = 0;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, pos->n, "n");
	CoordRequireArg(fcinfo, pos->session_bound, "session_bound");
	c->n = PG_GETARG_INT32(pos->n);
	c->session_bound = PG_GETARG_BOOL(pos->session_bound);
	if (c->n < 0 || c->n > CLAIM_MAX_N)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must be between 0 and %d", CLAIM_MAX_N)));
	if (!c->session_bound)
	{
		CoordRequireArg(fcinfo, pos->lease, "lease");
		(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(pos->lease), "lease", false);
		c->lease = PG_GETARG_DATUM(pos->lease);
	}
	c->partitioned = !ClaimArgNull(fcinfo, pos->partition) || !ClaimArgNull(fcinfo, pos->partitions);
	if (c->partitioned)
	{
		if (ClaimArgNull(fcinfo, pos->partition) || ClaimArgNull(fcinfo, pos->partitions))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("partition and partitions must be given together")));
		c->partition = PG_GETARG_INT32(pos->partition);
		c->partitions = PG_GETARG_INT32(pos->partitions);
		if (c->partitions < 1 || c->partition < 0 || c->partition >= c->partitions)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition must be between 0 and partitions - 1, and partitions at least 1"),
					 errdetail("partition is %d, partitions is %d.", c->partition, c->partitions)));
	}
	c->pgroup = pos->pgroup >= 0 && PG_NARGS() > pos->pgroup ?
		CoordNameArg(fcinfo, pos->pgroup, "partition group", true) : NULL;
	if (c->pgroup != NULL && c->partitioned)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition_group cannot be combined with partition and partitions")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("coord.%s requires READ COMMITTED isolation",
						get_func_name(fcinfo->flinfo->fn_oid)),
				 errdetail("SKIP LOCKED claims under a transaction snapshot fail to serialize against other claimers."),
				 errhint("Claim in its own READ COMMITTED transaction.")));
}

/*
 * Step 2 (inside SPI, as the owner): the statements' common parameters, the
 * scan, and the filter's frontier.
 */
static void
ClaimBegin(ClaimCall *c, Oid claimant, MemoryContext callcxt)
{
	memset(c->args, 0, sizeof(c->args));
	memset(c->nulls, 'n', sizeof(c->nulls));
	c->args[0] = CStringGetTextDatum(c->queue);
	c->nulls[0] = ' ';
	c->args[1] = c->host ? CStringGetTextDatum(c->host) : (Datum) 0;
	c->nulls[1] = c->host ? ' ' : 'n';
	c->args[2] = Int32GetDatum(c->partition);
	c->args[3] = Int32GetDatum(c->partitions);
	c->args[4] = Int32GetDatum(c->pgroup ? 2 : c->partitioned ? 1 : 0);
	c->nulls[2] = c->nulls[3] = c->nulls[4] = ' ';
	if (c->pgroup != NULL)
	{
		c->args[3] = Int32GetDatum(c->segments);
		c->args[10] = PointerGetDatum(c->owned);
		c->nulls[10] = ' ';
	}
	c->args[9] = c->lease;
	c->nulls[9] = c->session_bound ? 'n' : ' ';

	memset(&c->scan, 0, sizeof(c->scan));
	c->scan.session_bound = c->session_bound;
	c->scan.claimant = claimant;
	c->scan.cxt = callcxt;
	c->scan.n = c->n;
	c->scan.ids = MemoryContextAlloc(callcxt, sizeof(int64) * c->n);
	c->rows = MemoryContextAllocZero(callcxt, sizeof(HeapTuple) * c->n);

	c->f = GetFrontier(c->queue, c->host, c->partition, c->partitions, c->pgroup);
	if (c->pgroup != NULL && c->f->owned_version != c->owned_version)
	{
		/* other segments now: jobs behind the frontier may be ours */
		c->f->valid = false;
		c->f->nheld = 0;
		c->f->owned_version = c->owned_version;
	}
	c->now = GetCurrentTimestamp();

	/*
	 * flow control: the fast path is one test (no limits anywhere) or a
	 * lookup
	 */
	c->blocked = false;
	{
		QueueLimits *ql = JobsLimitsFor(c->queue);

		if (ql != NULL)
		{
			bool		claimable;

			c->scan.limits = JobsLimitScanBegin(c->queue, ql, callcxt, c->n, &claimable);
			c->blocked = !claimable;
		}
	}
}

/*
 * Step 3: from the frontier, when it is valid and a scan from the head is
 * not due: the higher priorities now and then, the jobs skipped because a
 * session held them, then onward from where work was found last time.
 */
static void
ClaimFromFrontier(ClaimCall *c)
{
	Frontier   *f = c->f;
	TimestampTz now = c->now;

	if (!(coord_claim_rescan_interval > 0 && f->valid && now - f->last_full < f->rescan_us))
		return;

	if (c->blocked)
		return;

	/*
	 * Every claim_rescan_interval, jobs of a higher priority than the
	 * frontier's: they sort before it, but a scan for them starts at the head
	 * of the index and meets only finished jobs of those priorities, not the
	 * dead prefix of the frontier's own.
	 */
	if (now - f->last_higher >= (int64) coord_claim_rescan_interval * 1000)
	{
		c->args[5] = Int32GetDatum(f->priority);
		c->nulls[5] = ' ';
		f->last_higher = now;
		RunClaim(CLAIM_HIGHER, c->args, c->nulls, &c->scan, true, c->rows, c->outdesc);
	}

	if (ClaimStopped(&c->scan))
		return;

	/*
	 * First the jobs skipped earlier because a session held them, at most
	 * every 50 ms: often enough that a dead worker's session-bound jobs are
	 * taken within 100 ms, rarely enough that claims stay one scan.
	 */
	if (f->nheld > 0 && now - f->last_probe >= 50 * 1000)
	{
		Datum	   *held = palloc(sizeof(Datum) * f->nheld);
		int			i;

		for (i = 0; i < f->nheld; i++)
			held[i] = Int64GetDatum(f->held[i]);
		c->args[5] = PointerGetDatum(construct_array(held, f->nheld, INT8OID, 8,
													 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		c->nulls[5] = ' ';
		f->last_probe = now;
		f->nheld = 0;			/* the probe re-adds those still held */
		RunClaim(CLAIM_HELD, c->args, c->nulls, &c->scan, false, c->rows, c->outdesc);
	}
	if (ClaimStopped(&c->scan))
		return;
	/* then onward from where work was found last time */
	c->args[5] = Int32GetDatum(f->priority);
	c->args[6] = TimestampTzGetDatum(f->run_at);
	c->args[7] = Int64GetDatum(f->id);
	c->nulls[5] = c->nulls[6] = c->nulls[7] = ' ';
	RunClaim(CLAIM_FROM, c->args, c->nulls, &c->scan, true, c->rows, c->outdesc);
}

/*
 * Step 4: from the head, for what is still wanted: walks whatever dead
 * entries an old snapshot keeps.  When it finds nothing that sorts before
 * the frontier (no expired lease, rolled-back claim or late job behind it),
 * the next one is put off twice as long, up to claim_rescan_max; when it
 * does, back to claim_rescan_interval.
 */
static void
ClaimFromHead(ClaimCall *c)
{
	Frontier   *f = c->f;
	ClaimScan  *scan = &c->scan;

	if (scan->got >= c->n || c->blocked || ClaimStopped(scan))
		return;
	scan->cmp_valid = f->valid && scan->got == 0;
	scan->cmp_priority = f->priority;
	scan->cmp_run_at = f->run_at;
	scan->cmp_id = f->id;
	scan->behind = false;
	f->last_full = c->now;
	f->nheld = 0;
	c->nulls[5] = c->nulls[6] = c->nulls[7] = 'n';
	RunClaim(CLAIM_HEAD, c->args, c->nulls, scan, true, c->rows, c->outdesc);
	if (scan->cmp_valid && !scan->behind && scan->got > 0)
		f->rescan_us = Min(f->rescan_us * 2,
						   Max((int64) coord_claim_rescan_max, coord_claim_rescan_interval) * 1000);
	else
		f->rescan_us = (int64) coord_claim_rescan_interval * 1000;
}

/*
 * Step 5: the frontier moves to the last job claimed in claim order, and
 * keeps the jobs skipped because a session held them, to probe them again.
 * A claim in a (sub)transaction that then aborts puts its jobs back behind
 * it: the abort callbacks forget the frontiers then.
 */
static void
ClaimMoveFrontier(ClaimCall *c)
{
	Frontier   *f = c->f;
	ClaimScan  *scan = &c->scan;
	int			i;

	if (scan->got > 0 && claimed_level < GetCurrentTransactionNestLevel())
		claimed_level = GetCurrentTransactionNestLevel();

	/*
	 * A job left behind for its limit (a full, paused or busy key) sits
	 * behind the frontier when its slot frees: the next claim scans from the
	 * head.  Claims that leave nothing behind keep the frontier.
	 */
	if (scan->limits != NULL && scan->limits->skipped)
	{
		f->valid = false;
		return;
	}
	if (scan->last_valid)
	{
		f->valid = true;
		f->priority = scan->last_priority;
		f->run_at = scan->last_run_at;
		f->id = scan->last_id;
	}
	for (i = 0; i < scan->nheld && f->nheld < FRONTIER_HELD; i++)
	{
		int			j;
		bool		dup = false;

		for (j = 0; j < f->nheld; j++)
			dup |= (f->held[j] == scan->held[i]);
		if (!dup)
			f->held[f->nheld++] = scan->held[i];
	}
}

/* Whether a job set aside to die is past its expires_at (else its attempts are spent). */
static bool
JobExpired(int64 id)
{
	static SPIPlanPtr plan_expired = NULL;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	bool		isnull;

	args[0] = Int64GetDatum(id);
	CoordExecReadOnly(&plan_expired,
					  "SELECT COALESCE(expires_at OPERATOR(pg_catalog.<=) pg_catalog.statement_timestamp(), false) "
					  "FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1",
					  1, argtypes, args, NULL, 1, "checking a job's expiry");
	return SPI_processed == 1 &&
		DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Step 6: the jobs set aside die: past their expires_at, or every attempt
 * lost to crashed or stalled claimers (at most CLAIM_DEAD_MAX beyond the
 * jobs wanted).
 */
static void
ClaimBuryExhausted(ClaimCall *c)
{
	ListCell   *lc;

	foreach(lc, c->scan.exhausted)
	{
		int64		id = *(int64 *) lfirst(lc);

		(void) JobsMoveToHistory(id, false, 0, "dead",
								 JobExpired(id) ? "expired: past its expires_at" : "claim lost after the last attempt");
		if (c->session_bound)
			JobsDropSessionClaim(id);
	}
}

static int
CmpIdPair(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Step 6b: flow control's slots and buckets, for the jobs claimed. */
static void
ClaimLimitsEnd(ClaimCall *c)
{
	int64	   *ids;
	int64	   *tokens;
	int64	   *pairs;
	int			n = 0;

	if (c->scan.limits == NULL)
		return;
	/* (id, token) pairs of the rows written, sorted by id */
	pairs = palloc(sizeof(int64) * 2 * Max(c->scan.got, 1));
	for (int i = 0; i < c->scan.got; i++)
		if (c->rows[i] != NULL)
		{
			bool		isnull;

			pairs[2 * n] = c->scan.ids[i];
			pairs[2 * n + 1] = DatumGetInt64(heap_getattr(c->rows[i], 5, c->outdesc, &isnull));
			n++;
		}
	qsort(pairs, n, 2 * sizeof(int64), CmpIdPair);
	ids = palloc(sizeof(int64) * Max(n, 1));
	tokens = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		ids[i] = pairs[2 * i];
		tokens[i] = pairs[2 * i + 1];
	}
	JobsLimitScanEnd(c->scan.limits, ids, tokens, n);
}

/*
 * Step 7: the claimed jobs, in claim order, packed at the front of c->rows;
 * returns how many.
 */
static int
ClaimEmit(ClaimCall *c)
{
	int			i,
				k = 0;

	for (i = 0; i < c->scan.got; i++)
	{
		if (c->rows[i] == NULL)
		{
			/* taken but not updated (cannot happen): do not keep its claim */
			if (c->session_bound)
				JobsDropSessionClaim(c->scan.ids[i]);
			continue;
		}
		c->rows[k++] = c->rows[i];
	}
	return k;
}

/*
 * Idle workers announce themselves so that enqueue wakes them; a worker
 * that found work, or asked for none (no free slot), is not waiting.
 */
static void
ClaimMarkIdle(const ClaimCall *c, bool idle)
{
	JobsSetIdle(psprintf("coord:%s", c->queue), idle);
	if (c->host != NULL)
		JobsSetIdle(psprintf("coord:host:%s", c->host), idle);
}

/*
 * Step 8, for a partition group: each job claimed is a claim from its
 * segment, which this session lets go of only once the claim is finished.
 */
static void
ClaimRecordSegments(const ClaimCall *c, int n)
{
	for (int i = 0; i < n; i++)
	{
		bool		isnull;
		int64		id;
		int64		token;
		Datum		key;
		bool		key_null;

		id = DatumGetInt64(heap_getattr(c->rows[i], 1, c->outdesc, &isnull));
		token = DatumGetInt64(heap_getattr(c->rows[i], 5, c->outdesc, &isnull));
		key = heap_getattr(c->rows[i], 7, c->outdesc, &key_null);
		CoordPartitionClaimed(c->pgroup, c->segments, id, token, key_null ? NULL : DatumGetTextPP(key));
	}
}

/* The argument numbers of coord.claim's arguments. */
static const JobsClaimArgPos claim_pos = {0, 1, 2, 3, 4, 5, 6, 7};

ClaimCall *
JobsClaimArgs(FunctionCallInfo fcinfo, const JobsClaimArgPos *pos)
{
	ClaimCall  *c = palloc0(sizeof(ClaimCall));

	ClaimArgs(fcinfo, pos, c);
	return c;
}

/*
 * A claim, once its arguments are checked: from queue (when ClaimArgs did
 * not read it), outside SPI; *rows gets the rows claimed, formed with
 * outdesc, in claim order, in the current memory context; returns how many.
 */
int
JobsClaimRun(ClaimCall *c, char *queue, TupleDesc outdesc, HeapTuple **rows)
{
	CoordUserSwitch sw;
	MemoryContext callcxt = CurrentMemoryContext;
	int			got;

	if (queue != NULL)
		c->queue = queue;
	*rows = NULL;
	if (c->pgroup != NULL && c->n > 0)
	{
		/* the group's sync first: what this session owns now */
		c->owned = CoordPartitionOwnedForClaim(c->pgroup, &c->nowned, &c->segments, &c->owned_version);
		if (c->nowned == 0)
		{
			if (coord_notify)
				ClaimMarkIdle(c, true);
			return 0;
		}
	}
	if (c->n == 0)
	{
		/* a worker with no free slot says it is not waiting for work */
		ClaimMarkIdle(c, false);
		return 0;
	}
	c->outdesc = outdesc;

	CoordSpiBegin(&sw);
	ClaimBegin(c, sw.save_userid, callcxt);
	ClaimFromFrontier(c);
	ClaimFromHead(c);
	if (JobsLimitWaitContended(c->scan.limits, c->scan.got))
	{
		/* only busy keys held it back: once more, after one of them */
		QueueLimits *ql = JobsLimitsFor(c->queue);
		bool		claimable = true;

		c->scan.limits = ql ? JobsLimitScanBegin(c->queue, ql, callcxt, c->n, &claimable) : NULL;
		c->blocked = !claimable;
		ClaimFromHead(c);
	}
	ClaimMoveFrontier(c);
	ClaimBuryExhausted(c);
	ClaimLimitsEnd(c);
	got = ClaimEmit(c);
	CoordSpiEnd(&sw);
	if (c->pgroup != NULL)
		ClaimRecordSegments(c, got);

	if (coord_notify)
		ClaimMarkIdle(c, c->scan.got == 0);
	*rows = c->rows;
	return got;
}

/*
 * coord.claim(queue, n, lease, host, session_bound, partition, partitions,
 * partition_group) returns setof coord.claimed_job, in claim order.
 */
Datum
coord_claim(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ClaimCall	c;
	HeapTuple  *rows;
	int			got;

	memset(&c, 0, sizeof(c));
	ClaimArgs(fcinfo, &claim_pos, &c);
	InitMaterializedSRF(fcinfo, 0);
	got = JobsClaimRun(&c, NULL, rsinfo->setDesc, &rows);
	for (int i = 0; i < got; i++)
		tuplestore_puttuple(rsinfo->setResult, rows[i]);
	return (Datum) 0;
}
