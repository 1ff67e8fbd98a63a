/*-------------------------------------------------------------------------
 * jobs.c
 *		The job queue (README.md, Jobs): enqueue, claims that are leases or are
 *		bound to the claiming session, fencing tokens, retries, history.
 *
 * Tables.  coord.job holds live work only (scheduled, ready, running);
 * complete, fail-to-dead and cancel move a job to coord.job_history in the
 * same transaction (a DELETE ... RETURNING, then ArchiveJobs inserts the
 * history row through the table AM), so the hot table and its indexes stay
 * the size of the live work.  "Scheduled" is a ready row whose run_at is in
 * the future: a claim sees due work without any tick.
 *
 * Claims.  A claim is one statement that walks the claim index (hash of
 * the queue, priority DESC, run_at, id) with FOR UPDATE SKIP LOCKED; above
 * the row locks coord.claim_take takes a try-lock on (COORD_NS_JOB, id) for
 * each candidate before it counts it (ClaimPlan says how the statement makes
 * sure the take sees only locked rows; below them coord.claim_free probes
 * that lock, so that a job a session holds is not row-locked), and the rows
 * it returns, locked,
 * are then updated through the table access method (ClaimRow):
 *	- session_bound: the lock is taken at session level and kept.  When the
 *	  claiming session ends for any reason its lock goes, and the next claim
 *	  takes the job at once: no reaper, no lease wait, and pid reuse cannot
 *	  fool it.
 *	- lease: the lock is taken at transaction level, only to skip jobs a
 *	  session holds, and lease_until is set.  A claim skips jobs whose lease
 *	  has not passed; an expired lease needs no reaper: the next claim that
 *	  reaches the job takes it (and says so in last_error).
 * Either way a claim changes only unindexed columns (token, attempt, lease,
 * claimed_at, claimed_by, last_error), so with the table's fillfactor it is
 * a HOT update: claiming adds nothing to any index.  "Running" is derived: a lease
 * in the future or a held claim lock.  Measured with callgrind (claim +
 * complete, one job each): the former cursor plus UPDATE cost two executor
 * starts and a bitmap scan for the UPDATE's ids; one statement is 6% fewer
 * instructions, the hashed index 14% more, the history insert through the
 * table AM 6%, the update through it 13%: 36% in all.
 *
 * Tokens.  Every claim takes a new token from coord.job_token_seq; complete,
 * fail and heartbeat act only when the token is still the job's, so a worker
 * that lost its claim can never touch the newer one.
 *
 * Claimants.  Tokens come from one sequence, so they are easy to guess: a
 * claim also records the role that made it (claimed_by, the caller's user
 * id before the owner switch), and complete, fail and heartbeat of a lease
 * claim act only for that role, or for a caller with the privileges of
 * coord_admin, a superuser or the owner (ActsForAnyClaimant).  The role
 * test is a qual of the same statement as the token test, evaluated before
 * any row lock: a call from another role answers exactly as a stale token
 * does (false, NULL, not counted), waits on nothing a stale token would not
 * wait on, and changes nothing, so no call tells a wrong role whether it
 * guessed a token.  A session-bound claim is bound to its session already.
 *
 * Session claims and transactions.  A session-bound claim is a hold
 * (common.c): taken by a transaction that aborts, it is released; complete,
 * fail and cancel let it go when their transaction commits, and keep it if
 * that transaction aborts.  A session-bound job (its row stays 'ready') can
 * be completed or failed only by the session that holds it: its claim ended
 * with the session that made it, whatever token a reconnected worker has.
 *
 * Wake-ups.  A claim that finds nothing takes a shared session lock on
 * (COORD_NS_IDLE, queue) and (with a host) on the host, and drops it when a
 * claim finds work.  At PRE_COMMIT, a transaction that enqueued sends NOTIFY
 * on "coord:<queue>" (and "coord:host:<host>") only if such an idle lock is
 * held: busy workers cost nothing, and a commit that wakes nobody never
 * takes NOTIFY's cluster-wide commit lock.  NOTIFY is a hint: workers LISTEN
 * first, then claim, and poll as a fallback.  Each mark is a lock-table
 * entry, so a session keeps the marks of its coord.max_idle_marks (256)
 * most recently idle channels and lets the oldest go: one session claiming
 * from tens of thousands of queue names would otherwise fill the shared lock
 * table.  A session that lost a mark is not woken for that queue; no work is
 * lost by it, because a worker's next claim there finds the job, and a
 * worker waiting on more channels than it has marks for is woken by its poll
 * (coord-agent claims at least every `poll`).
 *
 * Dead rows and the claim frontier.  Each job leaves a dead entry in the
 * claim index when it finishes.  While any
 * session holds an old snapshot, VACUUM cannot remove them, and a claim that
 * scans from the head of the index walks all of them every time: measured
 * here (4 clients, claim + complete, 200,000 jobs queued, a REPEATABLE READ
 * transaction held) it falls from 1,475 to 365 jobs/s within a minute.
 * Options weighed: a shared "first ready job" bound (unsafe: commit order
 * differs from now() order, and rolled-back claims and expired leases put
 * jobs behind it), candidate batches (only approximate order), and rotating
 * the hot table through partitions with TRUNCATE (the only way to drop dead
 * tuples under an old snapshot, but it needs a transaction of its own and
 * moves whole backlogs).  The choice: each backend keeps, per claim filter,
 * a frontier -- the claim-order key of the last job it claimed -- and scans
 * from there (an index range start at the same priority), so the dead
 * prefix behind it is never walked.  Jobs can still appear behind it:
 *	- of a higher priority: every coord.claim_rescan_interval a scan of the
 *	  higher priorities only (which does not cross the dead prefix);
 *	- skipped because a session held them: probed by id every 50 ms, so a
 *	  dead worker's session-bound job is taken at once;
 *	- claimed by a transaction that rolled back: that backend forgets its
 *	  frontiers at abort;
 *	- an expired lease, or a job enqueued with an old run_at: found by a scan
 *	  from the head, which happens when the frontier scan comes up short and
 *	  otherwise after coord.claim_rescan_interval, doubled after each head
 *	  scan that found nothing behind the frontier, up to
 *	  coord.claim_rescan_max (10 s), and back to the interval when one did.
 * With 200,000 finished jobs behind an old snapshot, a head scan walks all
 * of their index entries: the doubling is what keeps four claimers from
 * spending most of their time doing that.  Measured figures are in
 * bench/RESULTS.md (the oldsnap section).
 *
 * A backend keeps at most FRONTIERS_MAX frontiers, forgetting the least
 * recently used one: a filter whose frontier was forgotten scans from the
 * head at its next claim, as a new one does.
 *
 * Planning.  A claim's LIMIT is a parameter, so the generic plan would be
 * costed for a tenth of the backlog: it is planned with seqscan, bitmapscan,
 * sort and JIT off (an ordered index scan, never a sort of the backlog), set
 * only when the plan cache is about to plan (RunClaim).
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

#include "common.h"
#include "compat.h"

#define JOB_KEY_MAX			1024
#define CLAIM_MAX_N			10000
#define BACKOFF_BASE_US		(1000 * 1000)			/* 1 s */
#define BACKOFF_CAP_US		((int64) 3600 * 1000 * 1000)	/* 1 h */

static bool coord_notify = true;
static int	coord_job_history_retention = 7 * 24 * 3600;	/* seconds */
static int	coord_claim_rescan_interval = 1000;	/* ms; 0: always scan from the head */
static int	coord_claim_rescan_max = 10000; /* ms: the longest a rescan is put off */

/* Whether this transaction claimed anything: an abort puts those jobs behind our frontiers. */
static bool claimed_in_xact = false;

/*
 * Where a backend last found work for a claim filter (queue, host,
 * partition): the claim-order key of the last job it claimed, and the jobs
 * it had to skip because another session held them.
 */
#define FRONTIER_HELD	64
typedef struct Frontier
{
	char		filter[2 * COORD_NAME_MAX + 32];	/* hash key: must be first */
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

/*
 * Idle marks this backend holds, by idle key, least recently set first.
 * Each is a lock-table entry, so a backend keeps only the
 * coord.max_idle_marks most recent ones (see "Wake-ups" above).
 */
typedef struct IdleMark
{
	uint64		key;			/* hash key: must be first */
	dlist_node	lru;
} IdleMark;

static HTAB *idle_marks = NULL;
static dlist_head idle_lru = DLIST_STATIC_INIT(idle_lru);
static int	coord_max_idle_marks = 256;

/* Queues and hosts this transaction enqueued to, for the PRE_COMMIT wake-up. */
static List *wake_channels = NIL;


static SPIPlanPtr plan_enqueue = NULL;
static SPIPlanPtr plan_key_id = NULL;
static SPIPlanPtr plan_enqueue_many = NULL;
static SPIPlanPtr plan_complete = NULL;
static SPIPlanPtr plan_complete_any = NULL;
static SPIPlanPtr plan_complete_many = NULL;
static SPIPlanPtr plan_fail_get = NULL;
static SPIPlanPtr plan_fail_retry = NULL;
static SPIPlanPtr plan_finish = NULL;
static SPIPlanPtr plan_heartbeat = NULL;
static SPIPlanPtr plan_is_claim = NULL;
static SPIPlanPtr plan_retry = NULL;
static SPIPlanPtr plan_retry_drop = NULL;
static SPIPlanPtr plan_retry_conflict = NULL;
static SPIPlanPtr plan_state_live = NULL;
static SPIPlanPtr plan_state_hist = NULL;
static SPIPlanPtr plan_purge = NULL;
static SPIPlanPtr plan_request_done = NULL;
static SPIPlanPtr plan_origin_enqueue = NULL;
static SPIPlanPtr plan_origin_job = NULL;
static SPIPlanPtr plan_revoke_get = NULL;
static SPIPlanPtr plan_revoke = NULL;
static SPIPlanPtr plan_tick_lost = NULL;
static SPIPlanPtr plan_tick_purge = NULL;
static SPIPlanPtr plan_request_gone = NULL;

PG_FUNCTION_INFO_V1(coord_enqueue);
PG_FUNCTION_INFO_V1(coord_enqueue_many);
PG_FUNCTION_INFO_V1(coord_claim);
PG_FUNCTION_INFO_V1(coord_claim_take);
PG_FUNCTION_INFO_V1(coord_claim_free);
PG_FUNCTION_INFO_V1(coord_complete);
PG_FUNCTION_INFO_V1(coord_complete_many);
PG_FUNCTION_INFO_V1(coord_fail);
PG_FUNCTION_INFO_V1(coord_heartbeat);
PG_FUNCTION_INFO_V1(coord_cancel);
PG_FUNCTION_INFO_V1(coord_retry);
PG_FUNCTION_INFO_V1(coord_job_state);
PG_FUNCTION_INFO_V1(coord_job_claimed);
PG_FUNCTION_INFO_V1(coord_purge_jobs);
PG_FUNCTION_INFO_V1(coord_job_part);
PG_FUNCTION_INFO_V1(coord_mark_queued_job);

/* Columns every statement that returns a claimed job returns, in type order. */
#define CLAIMED_COLUMNS "id, queue, payload, attempt, token, lease_until, key, group_key, host, run_at"

/* The retry delay after attempt n: 1 s, 2 s, 4 s, ... up to an hour, times a jitter in [0.5, 1.5). */
static int64
BackoffUs(int32 attempt)
{
	double		d = (double) BACKOFF_BASE_US * pow(2.0, Min(Max(attempt, 1) - 1, 40));

	d = Min(d, (double) BACKOFF_CAP_US);
	d *= 0.5 + pg_prng_double(&pg_global_prng_state);
	return (int64) d;
}

/* ---------- transaction callbacks ---------- */

static void
JobsXactCallback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			/* wake idle workers of the queues and hosts this transaction fed */
			foreach(lc, wake_channels)
			{
				char	   *channel = (char *) lfirst(lc);
				LOCKTAG		tag;

				CoordSetTag(&tag, CoordNameKey(channel, strlen(channel)), COORD_NS_IDLE);
				if (LockWaiterCount(&tag) > 0)
					Async_Notify(channel, NULL);
			}
			wake_channels = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* jobs this transaction claimed are ready again, behind our frontiers */
			if (claimed_in_xact && frontiers != NULL)
			{
				HASH_SEQ_STATUS seq;
				Frontier   *f;

				hash_seq_init(&seq, frontiers);
				while ((f = hash_seq_search(&seq)) != NULL)
					f->valid = false;
			}
			claimed_in_xact = false;
			wake_channels = NIL;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* the list lived in TopTransactionContext */
			claimed_in_xact = false;
			wake_channels = NIL;
			break;
		default:
			break;
	}
}

static void JobRelsInval(Datum arg, Oid relid);

void
CoordJobsInit(void)
{
	DefineCustomBoolVariable("coord.notify",
							 "Sends NOTIFY to idle workers when a job is enqueued.",
							 "Only workers that found no work and are waiting are woken.",
							 &coord_notify, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("coord.job_history_retention",
							"How long finished jobs stay in coord.job_history.",
							"coord.purge_jobs() without an argument deletes older ones.",
							&coord_job_history_retention, 7 * 24 * 3600, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("coord.claim_rescan_interval",
							"How often a claim scans the ready jobs from the head rather than from where it last found work.",
							"Between rescans, claims skip the finished jobs behind them, which an old snapshot keeps VACUUM from removing. "
							"0 scans from the head every time.",
							&coord_claim_rescan_interval, 1000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("coord.claim_rescan_max",
							"The longest a claim puts off its scan from the head while those scans find nothing behind it.",
							"Each scan from the head that finds no job behind the claim's position doubles the wait, "
							"from coord.claim_rescan_interval up to this.",
							&coord_claim_rescan_max, 10000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("coord.max_idle_marks",
							"The most queues and hosts one session stays marked idle on.",
							"Each mark is an entry in the shared lock table.  A session that claims from more "
							"queues keeps the marks of the ones it claimed from most recently; on the others "
							"enqueue does not wake it, and it finds their work when it claims there again.",
							&coord_max_idle_marks, 256, 1, 10000,
							PGC_SUSET, 0, NULL, NULL, NULL);
	RegisterXactCallback(JobsXactCallback, NULL);
	CacheRegisterRelcacheCallback(JobRelsInval, (Datum) 0);
}

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


static int32
MaxAttemptsArg(FunctionCallInfo fcinfo, int argno)
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

static void
JobTag(LOCKTAG *tag, int64 id)
{
	CoordSetTag(tag, (uint64) id, COORD_NS_JOB);
}

/* ---------- wake-ups ---------- */

static void
AddWakeChannel(char *channel)
{
	ListCell   *lc;

	foreach(lc, wake_channels)
		if (strcmp((char *) lfirst(lc), channel) == 0)
			return;
	wake_channels = lappend(wake_channels, channel);
}

/* Remembers, for PRE_COMMIT, the channels of a queue (and host) fed by this transaction. */
static void
WakeAtCommit(const char *queue, const char *host)
{
	MemoryContext old;

	if (!coord_notify)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	AddWakeChannel(psprintf("coord:%s", queue));
	if (host != NULL)
		AddWakeChannel(psprintf("coord:host:%s", host));
	MemoryContextSwitchTo(old);
}

/*
 * Marks this session idle on a channel (shared session lock), or not.  Beyond
 * coord.max_idle_marks marks, the least recently set one is let go.
 */
static void
SetIdle(const char *channel, bool idle)
{
	uint64		key = CoordNameKey(channel, strlen(channel));
	bool		found;
	LOCKTAG		tag;
	IdleMark   *m;

	if (idle_marks == NULL && !idle)
		return;
	if (idle_marks == NULL)
		dlist_init(&idle_lru);	/* first use: the list starts empty with its table */
	CoordLocalHash(&idle_marks, "pg_coord idle marks", sizeof(uint64), sizeof(IdleMark), HASH_BLOBS);
	CoordSetTag(&tag, key, COORD_NS_IDLE);
	if (idle)
	{
		m = hash_search(idle_marks, &key, HASH_ENTER, &found);
		if (found)
			dlist_delete(&m->lru);
		dlist_push_tail(&idle_lru, &m->lru);
		if (!found || !CoordLockHeldByMe(&tag, ShareLock))
			(void) LockAcquire(&tag, ShareLock, true, true);
		while (hash_get_num_entries(idle_marks) > Max(coord_max_idle_marks, 1))
		{
			IdleMark   *old = dlist_container(IdleMark, lru, dlist_pop_head_node(&idle_lru));
			uint64		oldkey = old->key;
			LOCKTAG		oldtag;

			CoordSetTag(&oldtag, oldkey, COORD_NS_IDLE);
			hash_search(idle_marks, &oldkey, HASH_REMOVE, NULL);
			if (CoordLockHeldByMe(&oldtag, ShareLock))
				LockRelease(&oldtag, ShareLock, true);
		}
	}
	else
	{
		m = hash_search(idle_marks, &key, HASH_FIND, &found);
		if (found)
		{
			dlist_delete(&m->lru);
			hash_search(idle_marks, &key, HASH_REMOVE, NULL);
			if (CoordLockHeldByMe(&tag, ShareLock))
				LockRelease(&tag, ShareLock, true);
		}
	}
}

/* ---------- session claims ---------- */

/* The hold key of a session-bound claim. */
static char *
ClaimKey(int64 id)
{
	return psprintf("j:" INT64_FORMAT, id);
}

/* Does this session hold a session-bound claim on the job (even one being let go)? */
static bool
HoldsSessionClaim(int64 id)
{
	return CoordHoldsAny() && CoordHoldState(ClaimKey(id)) != HOLD_NONE;
}

/* Is this session's session-bound claim on the job live (not being let go)? */
static bool
SessionClaimLive(int64 id)
{
	return CoordHoldsAny() && CoordHoldState(ClaimKey(id)) == HOLD_ACTIVE;
}

/*
 * DropSessionClaim lets go of this session's claim lock on a job when the
 * current transaction commits (the job's row change commits with it).
 */
static void
DropSessionClaim(int64 id)
{
	if (CoordHoldsAny())
		CoordHoldRelease(ClaimKey(id));
}

/*
 * After a complete, fail or heartbeat that did not match: keep a session
 * claim the caller still has (a wrong token is the caller's mistake), but let
 * go of one whose job was cancelled or finished by someone else.  Inside SPI.
 */
static void
ForgetClaimIfGone(int64 id)
{
	char		sql[128];

	if (!HoldsSessionClaim(id))
		return;
	snprintf(sql, sizeof(sql),
			 "SELECT 1 FROM coord.job WHERE id OPERATOR(pg_catalog.=) " INT64_FORMAT, id);
	CoordSpiCheck(SPI_execute(sql, false, 1), SPI_OK_SELECT, "checking a claim");
	if (SPI_processed == 0)
		DropSessionClaim(id);
}

/* ---------- requests linked to jobs ---------- */

static void
FinishRequestKey(const char *request_key, bool done)
{
	Datum		args[1];
	Oid			argtypes[1] = {TEXTOID};

	args[0] = CStringGetTextDatum(request_key);
	if (done)
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_request_done,
											"UPDATE coord.request_keys SET state = 'done', "
											"done_at = pg_catalog.now() WHERE key OPERATOR(pg_catalog.=) $1",
											1, argtypes), args, NULL, false, 0),
				 SPI_OK_UPDATE, "marking a request done");
	else
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_request_gone,
											"DELETE FROM coord.request_keys WHERE key OPERATOR(pg_catalog.=) $1 "
											"AND state OPERATOR(pg_catalog.=) 'queued'",
											1, argtypes), args, NULL, false, 0),
				 SPI_OK_DELETE, "removing a request");
}

/* Where the claim reads and writes coord.job's columns (attribute numbers). */
typedef struct JobCols
{
	Oid			relid;
	TupleDesc	desc;			/* the relcache's, to notice a changed table */
	AttrNumber	id,
				queue,
				payload,
				attempt,
				token,
				lease,
				lease_until,
				key,
				group_key,
				host,
				run_at,
				claimed_at,
				claimed_by,
				last_error;
} JobCols;

static JobCols jobcols;

/*
 * The OIDs of coord.job, coord.job_history and coord.job_token_seq, looked
 * up by name once, and the history's column map (ArchiveJobs); forgotten
 * when the relcache entry of any of them is invalidated (DDL, DROP and
 * CREATE EXTENSION), so the next call looks again.
 */
static struct
{
	Oid			job;
	Oid			history;
	Oid			token_seq;
	/* ArchiveJobs' map, valid for hist_desc and a RETURNING * of jnatts columns */
	TupleDesc	hist_desc;
	int			jnatts;
	int		   *src;			/* per history column: job column, or -1..-3 */
	int			h_last_error;	/* the history's last_error (0-based) */
	int			c_request_key,
				c_origin,
				c_id;
} jobrels;

static void
JobRelsInval(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == jobrels.job || relid == jobrels.history ||
		relid == jobrels.token_seq)
	{
		jobrels.job = jobrels.history = jobrels.token_seq = InvalidOid;
		jobrels.hist_desc = NULL;
		jobcols.relid = InvalidOid;
	}
}

static void
LookupJobRels(void)
{
	Oid			nsp;

	if (OidIsValid(jobrels.job))
		return;
	nsp = get_namespace_oid(COORD_SCHEMA, false);
	jobrels.history = get_relname_relid("job_history", nsp);
	jobrels.token_seq = get_relname_relid("job_token_seq", nsp);
	jobrels.job = get_relname_relid("job", nsp);
	if (!OidIsValid(jobrels.job) || !OidIsValid(jobrels.history) || !OidIsValid(jobrels.token_seq))
	{
		jobrels.job = InvalidOid;
		elog(ERROR, "coord.job, coord.job_history or coord.job_token_seq does not exist");
	}
}

/*
 * Where each history column comes from: a column of the job rows jdesc
 * describes, or -1 state, -2 finished_at, -3 result (0: a dropped column).
 * Built on the first completion, by name, so that the two tables' column
 * orders (and columns dropped by updates) do not matter.  last_error comes
 * from the job unless the caller gives one.
 */
static void
LoadArchiveMap(TupleDesc hdesc, TupleDesc jdesc)
{
	int			i,
				k;

	if (jobrels.hist_desc == hdesc && jobrels.jnatts == jdesc->natts)
		return;
	jobrels.hist_desc = NULL;
	jobrels.h_last_error = -1;
	if (jobrels.src != NULL)
		pfree(jobrels.src);
	jobrels.src = MemoryContextAlloc(CoordCacheContext(NULL, NULL), sizeof(int) * Max(hdesc->natts, 1));
	for (i = 0; i < hdesc->natts; i++)
	{
		Form_pg_attribute ha = TupleDescAttr(hdesc, i);
		const char *name = NameStr(ha->attname);
		int		   *src = &jobrels.src[i];

		*src = 0;
		if (ha->attisdropped)
			continue;
		if (strcmp(name, "state") == 0)
			*src = -1;
		else if (strcmp(name, "finished_at") == 0)
			*src = -2;
		else if (strcmp(name, "result") == 0)
			*src = -3;
		else
		{
			if (strcmp(name, "last_error") == 0)
				jobrels.h_last_error = i;
			for (k = 0; k < jdesc->natts; k++)
			{
				Form_pg_attribute ja = TupleDescAttr(jdesc, k);

				if (!ja->attisdropped && strcmp(NameStr(ja->attname), name) == 0)
				{
					if (ja->atttypid != ha->atttypid)
						elog(ERROR, "column %s of coord.job and coord.job_history differ in type", name);
					*src = k + 1;
					break;
				}
			}
			if (*src == 0)
				elog(ERROR, "coord.job has no column %s for coord.job_history", name);
		}
	}
	jobrels.c_request_key = SPI_fnumber(jdesc, "request_key");
	jobrels.c_origin = SPI_fnumber(jdesc, "origin");
	jobrels.c_id = SPI_fnumber(jdesc, "id");
	if (jobrels.c_request_key <= 0 || jobrels.c_origin <= 0 || jobrels.c_id <= 0)
		elog(ERROR, "a job row without id, request_key or origin");
	jobrels.jnatts = jdesc->natts;
	jobrels.hist_desc = hdesc;
}

/*
 * ArchiveJobs moves the jobs a DELETE ... RETURNING * has just taken out of
 * coord.job (the SPI result) into coord.job_history as state st, then
 * settles their request keys and tells the schedule or app run a job came
 * from that it finished, in this same transaction.  error, when given,
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
static uint64
ArchiveJobs(const char *st, const char *error, Datum result, bool result_null)
{
	SPITupleTable *tt = SPI_tuptable;
	uint64		n = SPI_processed;
	TupleDesc	jdesc = tt->tupdesc;
	Relation	rel;
	TupleDesc	hdesc;
	int			i;
	uint64		r;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	Datum	   *values;
	bool	   *nulls;
	Datum		state = CStringGetTextDatum(st);
	Datum		err = error ? CStringGetTextDatum(error) : (Datum) 0;
	TimestampTz *finished;
	bool		done = strcmp(st, "done") == 0;
	const int  *src;
	int			c_request_key,
				c_origin,
				c_id;

	if (n == 0)
		return 0;
	finished = palloc(sizeof(TimestampTz) * n);
	LookupJobRels();
	rel = table_open(jobrels.history, RowExclusiveLock);
	hdesc = RelationGetDescr(rel);
	LoadArchiveMap(hdesc, jdesc);
	src = jobrels.src;
	c_request_key = jobrels.c_request_key;
	c_origin = jobrels.c_origin;
	c_id = jobrels.c_id;

	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = ExecInitExtraTupleSlot(estate, hdesc, &TTSOpsHeapTuple);
	values = palloc(sizeof(Datum) * hdesc->natts);
	nulls = palloc(sizeof(bool) * hdesc->natts);
	for (r = 0; r < n; r++)
	{
		HeapTuple	row = tt->vals[r];
		HeapTuple	h;

		CHECK_FOR_INTERRUPTS();
		finished[r] = GetCurrentTimestamp();
		for (i = 0; i < hdesc->natts; i++)
		{
			nulls[i] = false;
			switch (src[i])
			{
				case 0:
					values[i] = (Datum) 0;
					nulls[i] = true;
					break;
				case -1:
					values[i] = state;
					break;
				case -2:
					values[i] = TimestampTzGetDatum(finished[r]);
					break;
				case -3:
					values[i] = done ? result : (Datum) 0;
					nulls[i] = !done || result_null;
					break;
				default:
					if (i == jobrels.h_last_error && error != NULL)
						values[i] = err;
					else
						values[i] = SPI_getbinval(row, jdesc, src[i], &nulls[i]);
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

	/* then what depends on the jobs finishing */
	for (r = 0; r < n; r++)
	{
		HeapTuple	row = tt->vals[r];
		char	   *rk = SPI_getvalue(row, jdesc, c_request_key);
		char	   *origin = SPI_getvalue(row, jdesc, c_origin);

		CHECK_FOR_INTERRUPTS();

		if (rk != NULL)
			FinishRequestKey(rk, done);
		if (origin != NULL)
		{
			bool		isnull;
			int64		id = DatumGetInt64(SPI_getbinval(row, jdesc, c_id, &isnull));

			if (strncmp(origin, COORD_ORIGIN_SCHEDULE, strlen(COORD_ORIGIN_SCHEDULE)) == 0)
				CoordScheduleFinished(origin + strlen(COORD_ORIGIN_SCHEDULE), st, finished[r]);
			else if (strncmp(origin, COORD_ORIGIN_APP, strlen(COORD_ORIGIN_APP)) == 0)
				CoordAppRunFinished(origin, id, st, result, !done || result_null);
		}
	}
	return n;
}

/* ---------- enqueue ---------- */

/*
 * EnqueueOne inserts a job (inside SPI, as the owner) and returns its id; with
 * a key, the id of the live job with that key when there is one.  The unique
 * index on (queue, key) makes concurrent enqueues of one key wait for each
 * other, so exactly one job is added.
 */
static int64
EnqueueOne(const char *queue, Jsonb *payload, Datum run_at, bool run_at_null, int32 priority,
		   text *key, const char *host, int32 max_attempts, text *group_key, const char *request_key)
{
	Oid			argtypes[9] = {TEXTOID, JSONBOID, TIMESTAMPTZOID, INT4OID, TEXTOID, TEXTOID,
	INT4OID, TEXTOID, TEXTOID};
	Datum		args[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int			attempt;

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

	/* App runs' jobs have keys of their own: job_key leaves out jobs with an origin. */
	for (attempt = 0; attempt < 5; attempt++)
	{
		bool		isnull;

		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_enqueue,
											"INSERT INTO coord.job (queue, payload, run_at, priority, key, host, "
											"max_attempts, group_key, request_key) "
											"VALUES ($1, $2, COALESCE($3, pg_catalog.now()), $4, $5, $6, $7, $8, $9) "
											"ON CONFLICT (queue, key) WHERE key IS NOT NULL AND origin IS NULL "
											"DO NOTHING RETURNING id",
											9, argtypes), args, nulls, false, 0),
					  SPI_OK_INSERT_RETURNING, "enqueue");
		if (SPI_processed == 1)
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		/* a live job has this key: answer its id (unless it just finished) */
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_key_id,
											"SELECT id FROM coord.job WHERE queue OPERATOR(pg_catalog.=) $1 "
											"AND key OPERATOR(pg_catalog.=) $5 AND origin IS NULL",
											9, argtypes), args, nulls, false, 1),
					  SPI_OK_SELECT, "enqueue key lookup");
		if (SPI_processed == 1)
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	elog(ERROR, "enqueue with key did not settle");
	return 0;
}

/*
 * coord.enqueue(queue, payload, run_at, priority, key, host, max_attempts,
 * group_key) returns bigint
 */
Datum
coord_enqueue(PG_FUNCTION_ARGS)
{
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	Jsonb	   *payload;
	char	   *host = CoordNameArg(fcinfo, 5, "host", true);
	text	   *key = KeyArg(fcinfo, 4, "key");
	text	   *group_key = KeyArg(fcinfo, 7, "group_key");
	int32		max_attempts = MaxAttemptsArg(fcinfo, 6);
	CoordUserSwitch sw;
	int64		id;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "payload");
	CoordRequireArg(fcinfo, 3, "priority");
	payload = CoordCheckPayload(PG_GETARG_JSONB_P(1));

	SPI_connect();
	CoordBecomeOwner(&sw);
	id = EnqueueOne(queue, payload, PG_GETARG_DATUM(2), PG_ARGISNULL(2), PG_GETARG_INT32(3),
					key, host, max_attempts, group_key, NULL);
	CoordRestoreUser(&sw);
	SPI_finish();
	WakeAtCommit(queue, host);
	PG_RETURN_INT64(id);
}

static int
CmpInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* coord.enqueue_many(queue, payloads jsonb[], run_at, priority, host, max_attempts) */
Datum
coord_enqueue_many(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	char	   *host = CoordNameArg(fcinfo, 4, "host", true);
	int32		max_attempts = MaxAttemptsArg(fcinfo, 5);
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	int			i;
	Oid			argtypes[6] = {TEXTOID, JSONBARRAYOID, TIMESTAMPTZOID, INT4OID, TEXTOID, INT4OID};
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	CoordUserSwitch sw;
	int64	   *ids;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "payloads");
	CoordRequireArg(fcinfo, 3, "priority");
	arr = PG_GETARG_ARRAYTYPE_P(1);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("payloads must be a one-dimensional array")));
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

	SPI_connect();
	CoordBecomeOwner(&sw);
	/* ids are drawn in insertion order, which follows the array */
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_enqueue_many,
										"INSERT INTO coord.job (queue, payload, run_at, priority, host, max_attempts) "
										"SELECT $1, u.p, COALESCE($3, pg_catalog.now()), $4, $5, $6 "
										"FROM pg_catalog.unnest($2) WITH ORDINALITY AS u(p, ord) ORDER BY u.ord "
										"RETURNING id",
										6, argtypes), args, nulls, false, 0),
			 SPI_OK_INSERT_RETURNING, "enqueue_many");
	/* in the caller's memory: SPI_finish frees SPI's */
	ids = SPI_palloc(sizeof(int64) * Max(SPI_processed, 1));
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	n = SPI_processed;
	CoordRestoreUser(&sw);
	SPI_finish();

	/* RETURNING order is not promised; ids are */
	qsort(ids, n, sizeof(int64), CmpInt64);
	for (i = 0; i < n; i++)
	{
		Datum		v = Int64GetDatum(ids[i]);
		bool		isnull = false;

		CHECK_FOR_INTERRUPTS();

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &v, &isnull);
	}
	WakeAtCommit(queue, host);
	return (Datum) 0;
}

static bool MoveToHistory(int64 id, bool with_token, int64 token, const char *st, const char *error);

/* ---------- claim ---------- */

/* The state of one claim call while its statements walk candidates. */
typedef struct ClaimScan
{
	bool		session_bound;
	Oid			claimant;		/* the calling role, recorded in claimed_by */
	bool		moves_frontier; /* whether the running statement moves the frontier */
	MemoryContext cxt;			/* the claim call's: for what outlives a statement */
	int			n;
	int			got;
	int64	   *ids;
	List	   *exhausted;		/* jobs whose every attempt is used up */
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
} ClaimScan;

/* The claim whose statement is running: coord.claim_take works for it. */
static ClaimScan *active_scan = NULL;

static Frontier *
GetFrontier(const char *queue, const char *host, int32 partition, int32 partitions)
{
	char		filter[2 * COORD_NAME_MAX + 32];
	Frontier   *f;
	bool		found;

	if (frontiers == NULL)
		dlist_init(&frontier_lru);	/* first use: the list starts empty with its table */
	CoordLocalHash(&frontiers, "pg_coord claim frontiers", sizeof(filter), sizeof(Frontier), HASH_STRINGS);
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

/* [kind][partitioned] */
static SPIPlanPtr plan_claims[CLAIM_KINDS][2];
static SPIPlanPtr plan_group_blocked = NULL;

#define CLAIM_NARGS 10

/*
 * ClaimPlan prepares (once) the statement of a claim scan: a SELECT of the
 * ctid and id of the jobs claimed, whose subquery walks the claim order with
 * FOR UPDATE SKIP LOCKED; above the row locks coord.claim_take takes each
 * candidate's claim lock and says whether it counts, and LIMIT stops at the
 * jobs still wanted.  The take must see
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
 * $1 queue, $2 host, $3 partition, $4 partitions, $5 whether partitioned,
 * $6..$8 the scan's own, $9 how many jobs ($10, the lease, is ClaimRow's).
 */
static pg_noinline SPIPlanPtr
ClaimPlan(ClaimKind kind, bool partitioned)
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
	SPIPlanPtr *slot = &plan_claims[kind][partitioned ? 1 : 0];

	if (*slot == NULL)
	{
		Oid			types[CLAIM_NARGS] = {TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID,
										  INT4OID, TIMESTAMPTZOID, INT8OID, INT4OID, INTERVALOID};
		char	   *sql;
		SPIPlanPtr	p;

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
					   "AND coord.claim_free(j.id, j.queue, j.group_key, j.xmax) "
					   "%s OFFSET 0 FOR UPDATE OF j SKIP LOCKED) AS c "
					   "WHERE coord.claim_take(c.id, c.spent, c.priority, c.run_at) "
					   "LIMIT $9",
					   partitioned ? "AND coord.job_part(j.key, j.id) OPERATOR(pg_catalog.%) $4 OPERATOR(pg_catalog.=) $3 " : "",
					   tails[kind]);
		p = SPI_prepare_cursor(sql, CLAIM_NARGS, types, CURSOR_OPT_GENERIC_PLAN);
		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "could not prepare a claim statement: %s", SPI_result_code_string(SPI_result));
		*slot = p;
	}
	return *slot;
}

/*
 * May the job run now, as far as its group goes?  Not if an earlier job of
 * the group waits, or another of it runs: a group runs one job at a time, in
 * enqueue order.  A query of its own (from coord.claim_free) rather than a
 * NOT EXISTS subquery of the claim, so that a claim does not start a
 * subplan's index scan every time (7% of a claim's instructions), and only
 * for jobs with a group.  It reads with the calling statement's snapshot.
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
	SPI_connect();
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_group_blocked,
											 "SELECT 1 FROM coord.job AS g "
											 "WHERE g.queue OPERATOR(pg_catalog.=) $1 "
											 "AND g.group_key OPERATOR(pg_catalog.=) $2 "
											 "AND g.id OPERATOR(pg_catalog.<>) $3 "
											 "AND (g.id OPERATOR(pg_catalog.<) $3 "
											 "     OR g.lease_until OPERATOR(pg_catalog.>) pg_catalog.statement_timestamp() "
											 "     OR coord.job_claimed(g.id)) LIMIT 1",
											 3, types), args, NULL, true, 1),
				  SPI_OK_SELECT, "checking a job's group");
	blocked = (SPI_processed > 0);
	SPI_finish();
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
	if (HoldsSessionClaim(id))
		PG_RETURN_BOOL(false);
	JobTag(&tag, id);
	if (LockWaiterCount(&tag) > 0)
	{
		TransactionId xmax = PG_ARGISNULL(3) ? InvalidTransactionId :
			DatumGetTransactionId(PG_GETARG_DATUM(3));

		if (TransactionIdIsValid(xmax) && TransactionIdIsInProgress(xmax))
			PG_RETURN_BOOL(false);
		for (i = 0; i < scan->nheld && scan->held[i] != id; i++)
			;
		if (i == scan->nheld && scan->nheld < FRONTIER_HELD)
			scan->held[scan->nheld++] = id;
		PG_RETURN_BOOL(false);
	}
	if (!PG_ARGISNULL(2))
		PG_RETURN_BOOL(GroupFree(PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), PG_GETARG_DATUM(0)));
	PG_RETURN_BOOL(true);
}

/*
 * coord.claim_take(id, spent, priority, run_at): called by a claim
 * statement for each row it has locked, in claim order.  Takes the job's
 * claim lock; a job a session holds is skipped (and remembered), one whose
 * attempts are used up is set aside to die.  True when the job counts.
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
	 * through, but an EvalPlanQual recheck could).  One this call already
	 * took (or set aside) holds our claim lock too: LockAcquire says so below.
	 */
	if (HoldsSessionClaim(id))
		PG_RETURN_BOOL(false);
	JobTag(&tag, id);
	/*
	 * Session-bound claims count against coord.max_locks_per_session; a
	 * lease claim's lock is only a probe, gone at commit, and one call takes
	 * at most CLAIM_MAX_N of them.
	 */
	if (scan->session_bound)
		CoordLockBudget(1);
	r = LockAcquire(&tag, ExclusiveLock, scan->session_bound, true);
	if (scan->session_bound)
		CoordLockCounted(&tag, r, true);
	if (r == LOCKACQUIRE_NOT_AVAIL)
	{
		/*
		 * A session took it after coord.claim_free looked (the row stays
		 * locked until this transaction ends): look again first next time.
		 */
		if (scan->nheld < FRONTIER_HELD)
			scan->held[scan->nheld++] = id;
		PG_RETURN_BOOL(false);
	}
	if (r != LOCKACQUIRE_OK)
	{
		/* held by this session or transaction already: not a new claim */
		LockRelease(&tag, ExclusiveLock, scan->session_bound);
		PG_RETURN_BOOL(false);
	}
	if (scan->session_bound)
		CoordHoldTaken(ClaimKey(id), &tag); /* released if this transaction aborts */
	if (spent)
	{
		/* every attempt was lost to crashed or stalled claimers: it dies */
		MemoryContext old = MemoryContextSwitchTo(scan->cxt);
		int64	   *p = palloc(sizeof(int64));

		*p = id;
		scan->exhausted = lappend(scan->exhausted, p);
		MemoryContextSwitchTo(old);
		PG_RETURN_BOOL(false);
	}
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
		CoordSpiCheck(SPI_execute_plan(plan, args, nulls, false, 0),
					  SPI_OK_SELECT, "claim");
	}
	PG_FINALLY();
	{
		active_scan = NULL;
	}
	PG_END_TRY();
}

static AttrNumber
JobCol(TupleDesc desc, const char *name)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return i + 1;
	elog(ERROR, "coord.job has no column %s", name);
	return 0;					/* keep compiler quiet */
}

static void
LoadJobCols(Relation rel)
{
	TupleDesc	d = RelationGetDescr(rel);

	if (jobcols.relid == RelationGetRelid(rel) && jobcols.desc == d)
		return;
	jobcols.relid = InvalidOid;
	jobcols.id = JobCol(d, "id");
	jobcols.queue = JobCol(d, "queue");
	jobcols.payload = JobCol(d, "payload");
	jobcols.attempt = JobCol(d, "attempt");
	jobcols.token = JobCol(d, "token");
	jobcols.lease = JobCol(d, "lease");
	jobcols.lease_until = JobCol(d, "lease_until");
	jobcols.key = JobCol(d, "key");
	jobcols.group_key = JobCol(d, "group_key");
	jobcols.host = JobCol(d, "host");
	jobcols.run_at = JobCol(d, "run_at");
	jobcols.claimed_at = JobCol(d, "claimed_at");
	jobcols.claimed_by = JobCol(d, "claimed_by");
	jobcols.last_error = JobCol(d, "last_error");
	jobcols.desc = d;
	jobcols.relid = RelationGetRelid(rel);
}

/*
 * The claimed jobs' rows are written through the table access method: the
 * claim statement has locked each one (FOR UPDATE) and returned its ctid,
 * which is that of the version it locked, so the update cannot meet a
 * concurrent change.  A claim changes only unindexed columns, so the update
 * is HOT and touches no index unless the page is full; only then are the
 * indexes opened.  This spares the claim an UPDATE's ModifyTable, its
 * primary-key scan and its projections.
 */
typedef struct ClaimWriter
{
	Relation	rel;
	Oid			token_seq;
	TupleTableSlot *old;
	TupleTableSlot *new;
	EState	   *estate;			/* only once an update was not HOT */
	ResultRelInfo *rri;
} ClaimWriter;

static void
ClaimWriterOpen(ClaimWriter *w)
{
	LookupJobRels();
	w->token_seq = jobrels.token_seq;
	w->rel = table_open(jobrels.job, RowExclusiveLock);
	LoadJobCols(w->rel);
	w->old = table_slot_create(w->rel, NULL);
	w->new = MakeSingleTupleTableSlot(RelationGetDescr(w->rel), &TTSOpsVirtual);
	w->estate = NULL;
	w->rri = NULL;
}

static void
ClaimWriterClose(ClaimWriter *w)
{
	if (w->rri != NULL)
	{
		ExecCloseIndices(w->rri);
		FreeExecutorState(w->estate);
	}
	ExecDropSingleTupleTableSlot(w->old);
	ExecDropSingleTupleTableSlot(w->new);
	table_close(w->rel, NoLock);
	CommandCounterIncrement();
}

/*
 * ClaimRow claims the locked row at tid: attempt + 1, a new token, the lease
 * (or none for a session-bound claim), claimed_at, the claiming role
 * (claimed_by), and in last_error why an
 * unfinished previous claim was lost.  Returns the claimed job as a row of
 * outdesc (coord.claimed_job), in the claim call's context.  The row lock
 * rules out a concurrent change, so anything but success is an error.
 */
static HeapTuple
ClaimRow(ClaimWriter *w, ItemPointer tid, bool session_bound, Oid claimant, Datum lease,
		 TupleDesc outdesc, MemoryContext cxt)
{
	TupleDesc	desc = RelationGetDescr(w->rel);
	Datum	   *v;
	bool	   *n;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	CoordUpdateIndexes update_indexes;
	TM_Result	res;
	bool		was_claimed,
				had_lease;
	Datum		out[10];
	bool		outnull[10];
	AttrNumber	outcols[10];
	HeapTuple	result;
	MemoryContext old;
	int			i;

	if (!table_tuple_fetch_row_version(w->rel, tid, SnapshotAny, w->old))
		elog(ERROR, "a job the claim locked is gone");
	slot_getallattrs(w->old);
	ExecClearTuple(w->new);
	v = w->new->tts_values;
	n = w->new->tts_isnull;
	memcpy(v, w->old->tts_values, sizeof(Datum) * desc->natts);
	memcpy(n, w->old->tts_isnull, sizeof(bool) * desc->natts);

	was_claimed = !n[jobcols.claimed_at - 1];
	had_lease = !n[jobcols.lease_until - 1];
	v[jobcols.attempt - 1] = Int32GetDatum(DatumGetInt32(v[jobcols.attempt - 1]) + 1);
	v[jobcols.token - 1] = Int64GetDatum(nextval_internal(w->token_seq, false));
	if (session_bound)
	{
		n[jobcols.lease - 1] = true;
		n[jobcols.lease_until - 1] = true;
	}
	else
	{
		v[jobcols.lease - 1] = lease;
		n[jobcols.lease - 1] = false;
		v[jobcols.lease_until - 1] =
			DirectFunctionCall2(timestamptz_pl_interval,
								TimestampTzGetDatum(GetCurrentTimestamp()), lease);
		n[jobcols.lease_until - 1] = false;
	}
	v[jobcols.claimed_at - 1] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	n[jobcols.claimed_at - 1] = false;
	v[jobcols.claimed_by - 1] = ObjectIdGetDatum(claimant);
	n[jobcols.claimed_by - 1] = false;
	if (was_claimed)
	{
		/* its previous claim never finished (fail clears claimed_at) */
		v[jobcols.last_error - 1] = CStringGetTextDatum(had_lease ?
														"claim lost: the lease expired" :
														"claim lost: the claiming session ended");
		n[jobcols.last_error - 1] = false;
	}
	ExecStoreVirtualTuple(w->new);

	res = table_tuple_update(w->rel, tid, w->new, GetCurrentCommandId(true),
							 GetActiveSnapshot(), InvalidSnapshot, true,
							 &tmfd, &lockmode, &update_indexes);
	if (res != TM_Ok)
		elog(ERROR, "unexpected table_tuple_update status %d for a job the claim locked", (int) res);
	if (CoordNeedsIndexTuples(update_indexes))
	{
		if (w->rri == NULL)
		{
			MemoryContext o = MemoryContextSwitchTo(cxt);

			w->estate = CreateExecutorState();
			w->rri = makeNode(ResultRelInfo);
			InitResultRelInfo(w->rri, w->rel, 1, NULL, 0);
			ExecOpenIndices(w->rri, false);
			MemoryContextSwitchTo(o);
		}
		/*
		 * update = false: true would read the range table we have none of.
		 * It only hints bottom-up index deletion; a claim is rarely not HOT.
		 */
		(void) CoordExecInsertIndexTuples(w->rri, w->new, w->estate, update_indexes);
		ResetPerTupleExprContext(w->estate);
	}

	/* id, queue, payload, attempt, token, lease_until, key, group_key, host, run_at */
	outcols[0] = jobcols.id;
	outcols[1] = jobcols.queue;
	outcols[2] = jobcols.payload;
	outcols[3] = jobcols.attempt;
	outcols[4] = jobcols.token;
	outcols[5] = jobcols.lease_until;
	outcols[6] = jobcols.key;
	outcols[7] = jobcols.group_key;
	outcols[8] = jobcols.host;
	outcols[9] = jobcols.run_at;
	for (i = 0; i < 10; i++)
	{
		out[i] = v[outcols[i] - 1];
		outnull[i] = n[outcols[i] - 1];
	}
	old = MemoryContextSwitchTo(cxt);
	result = heap_form_tuple(outdesc, out, outnull);
	MemoryContextSwitchTo(old);
	ExecClearTuple(w->new);
	ExecClearTuple(w->old);
	return result;
}

/*
 * RunClaim runs one claim scan's statement for the jobs still wanted and
 * keeps the rows it claimed in rows[] (by position in scan->ids, in the
 * claim call's context).
 */
static void
RunClaim(ClaimKind kind, Datum *args, char *nulls, ClaimScan *scan, bool moves_frontier,
		 HeapTuple *rows, TupleDesc outdesc)
{
	int			first = scan->got;
	int			nest = 0;
	int			generation;
	bool		partitioned = DatumGetInt32(args[4]) != 0;
	uint64		r;
	SPIPlanPtr	plan;

	if (scan->got >= scan->n)
		return;
	args[8] = Int32GetDatum(scan->n - scan->got);
	nulls[8] = ' ';
	plan = ClaimPlan(kind, partitioned);

	/*
	 * The plan is generic, and made without knowing how many jobs are
	 * wanted: with many jobs (in any queue) the planner would cost the
	 * subquery for a tenth of the backlog and pick a bitmap scan and a sort
	 * of the whole queue, or JIT-compile every claim.  A claim reads a
	 * handful of rows: when the plan cache is about to plan, steer it to the
	 * ordered claim index and the primary key.
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
		SPI_freeplan(plan);
		plan_claims[kind][partitioned ? 1 : 0] = NULL;
	}

	if (SPI_processed > 0)
	{
		SPITupleTable *tt = SPI_tuptable;
		ClaimWriter w;

		ClaimWriterOpen(&w);
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
				rows[i] = ClaimRow(&w, tid, scan->session_bound, scan->claimant, args[9],
								   outdesc, scan->cxt);
		}
		ClaimWriterClose(&w);
	}
}

/*
 * coord.claim(queue, n, lease, host, session_bound, partition, partitions)
 * returns setof coord.claimed_job, in claim order.
 */
Datum
coord_claim(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	char	   *host = CoordNameArg(fcinfo, 3, "host", true);
	int32		n;
	bool		session_bound;
	Datum		lease = (Datum) 0;
	int32		partition = 0,
				partitions = 0;
	bool		partitioned;
	CoordUserSwitch sw;
	int64	   *ids;
	int			got = 0;
	List	   *exhausted = NIL;
	ClaimScan	scan;
	Frontier   *f;
	TimestampTz now;
	bool		use_frontier;
	Datum		args[CLAIM_NARGS];
	char		nulls[CLAIM_NARGS];
	HeapTuple  *rows;
	MemoryContext callcxt = CurrentMemoryContext;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "n");
	CoordRequireArg(fcinfo, 4, "session_bound");
	n = PG_GETARG_INT32(1);
	session_bound = PG_GETARG_BOOL(4);
	if (n < 0 || n > CLAIM_MAX_N)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must be between 0 and %d", CLAIM_MAX_N)));
	if (!session_bound)
	{
		CoordRequireArg(fcinfo, 2, "lease");
		(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(2), "lease", false);
		lease = PG_GETARG_DATUM(2);
	}
	partitioned = !PG_ARGISNULL(5) || !PG_ARGISNULL(6);
	if (partitioned)
	{
		if (PG_ARGISNULL(5) || PG_ARGISNULL(6))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("partition and partitions must be given together")));
		partition = PG_GETARG_INT32(5);
		partitions = PG_GETARG_INT32(6);
		if (partitions < 1 || partition < 0 || partition >= partitions)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition must be between 0 and partitions - 1, and partitions at least 1"),
					 errdetail("partition is %d, partitions is %d.", partition, partitions)));
	}
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("coord.claim requires READ COMMITTED isolation"),
				 errdetail("SKIP LOCKED claims under a transaction snapshot fail to serialize against other claimers."),
				 errhint("Claim in its own READ COMMITTED transaction.")));

	InitMaterializedSRF(fcinfo, 0);
	if (n == 0)
	{
		/* a worker with no free slot says it is not waiting for work */
		SetIdle(psprintf("coord:%s", queue), false);
		if (host != NULL)
			SetIdle(psprintf("coord:host:%s", host), false);
		return (Datum) 0;
	}

	ids = palloc(sizeof(int64) * n);
	rows = palloc0(sizeof(HeapTuple) * n);
	SPI_connect();
	CoordBecomeOwner(&sw);

	memset(args, 0, sizeof(args));
	memset(nulls, 'n', sizeof(nulls));
	args[0] = CStringGetTextDatum(queue);
	nulls[0] = ' ';
	args[1] = host ? CStringGetTextDatum(host) : (Datum) 0;
	nulls[1] = host ? ' ' : 'n';
	args[2] = Int32GetDatum(partition);
	args[3] = Int32GetDatum(partitions);
	args[4] = Int32GetDatum(partitioned ? 1 : 0);
	nulls[2] = nulls[3] = nulls[4] = ' ';
	args[9] = lease;
	nulls[9] = session_bound ? 'n' : ' ';

	memset(&scan, 0, sizeof(scan));
	scan.session_bound = session_bound;
	scan.claimant = sw.save_userid;
	scan.cxt = callcxt;
	scan.n = n;
	scan.ids = ids;

	f = GetFrontier(queue, host, partition, partitions);
	now = GetCurrentTimestamp();
	use_frontier = coord_claim_rescan_interval > 0 && f->valid &&
		now - f->last_full < f->rescan_us;

	if (use_frontier)
	{
		/*
		 * Every claim_rescan_interval, jobs of a higher priority than the
		 * frontier's: they sort before it, but a scan for them starts at the
		 * head of the index and meets only finished jobs of those
		 * priorities, not the dead prefix of the frontier's own.
		 */
		if (now - f->last_higher >= (int64) coord_claim_rescan_interval * 1000)
		{
			args[5] = Int32GetDatum(f->priority);
			nulls[5] = ' ';
			f->last_higher = now;
			RunClaim(CLAIM_HIGHER, args, nulls, &scan, true, rows, rsinfo->setDesc);
		}

		/*
		 * First the jobs skipped earlier because a session held them, at most
		 * every 50 ms: often enough that a dead worker's session-bound jobs
		 * are taken within 100 ms, rarely enough that claims stay one scan.
		 */
		if (f->nheld > 0 && now - f->last_probe >= 50 * 1000)
		{
			Datum	   *held = palloc(sizeof(Datum) * f->nheld);
			int			i;

			for (i = 0; i < f->nheld; i++)
				held[i] = Int64GetDatum(f->held[i]);
			args[5] = PointerGetDatum(construct_array(held, f->nheld, INT8OID, 8,
													  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			nulls[5] = ' ';
			f->last_probe = now;
			f->nheld = 0;		/* the probe re-adds those still held */
			RunClaim(CLAIM_HELD, args, nulls, &scan, false, rows, rsinfo->setDesc);
		}
		/* then onward from where work was found last time */
		args[5] = Int32GetDatum(f->priority);
		args[6] = TimestampTzGetDatum(f->run_at);
		args[7] = Int64GetDatum(f->id);
		nulls[5] = nulls[6] = nulls[7] = ' ';
		RunClaim(CLAIM_FROM, args, nulls, &scan, true, rows, rsinfo->setDesc);
	}
	if (scan.got < n)
	{
		/*
		 * From the head: walks whatever dead entries an old snapshot keeps.
		 * When it finds nothing that sorts before the frontier (no expired
		 * lease, rolled-back claim or late job behind it), the next one is
		 * put off twice as long, up to claim_rescan_max; when it does, back
		 * to claim_rescan_interval.
		 */
		scan.cmp_valid = f->valid && scan.got == 0;
		scan.cmp_priority = f->priority;
		scan.cmp_run_at = f->run_at;
		scan.cmp_id = f->id;
		scan.behind = false;
		f->last_full = now;
		f->nheld = 0;
		nulls[5] = nulls[6] = nulls[7] = 'n';
		RunClaim(CLAIM_HEAD, args, nulls, &scan, true, rows, rsinfo->setDesc);
		if (scan.cmp_valid && !scan.behind && scan.got > 0)
			f->rescan_us = Min(f->rescan_us * 2,
							   Max((int64) coord_claim_rescan_max, coord_claim_rescan_interval) * 1000);
		else
			f->rescan_us = (int64) coord_claim_rescan_interval * 1000;
	}
	got = scan.got;
	exhausted = scan.exhausted;
	if (got > 0)
		claimed_in_xact = true;
	if (scan.last_valid)
	{
		f->valid = true;
		f->priority = scan.last_priority;
		f->run_at = scan.last_run_at;
		f->id = scan.last_id;
	}
	{
		int			i;

		for (i = 0; i < scan.nheld && f->nheld < FRONTIER_HELD; i++)
		{
			int			j;
			bool		dup = false;

			for (j = 0; j < f->nheld; j++)
				dup |= (f->held[j] == scan.held[i]);
			if (!dup)
				f->held[f->nheld++] = scan.held[i];
		}
	}

	{
		ListCell   *lc;

		foreach(lc, exhausted)
		{
			int64		id = *(int64 *) lfirst(lc);

			(void) MoveToHistory(id, false, 0, "dead", "claim lost after the last attempt");
			if (session_bound)
				DropSessionClaim(id);
		}
	}

	/* emit in claim order */
	{
		int			i;

		for (i = 0; i < got; i++)
		{
			Datum		values[10];
			bool		isnull[10];

			if (rows[i] == NULL)
			{
				/* taken but not updated (cannot happen): do not keep its claim */
				if (session_bound)
					DropSessionClaim(ids[i]);
				continue;
			}
			heap_deform_tuple(rows[i], rsinfo->setDesc, values, isnull);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
		}
	}
	CoordRestoreUser(&sw);
	SPI_finish();

	/* idle workers announce themselves so that enqueue wakes them */
	if (coord_notify)
	{
		char	   *qc = psprintf("coord:%s", queue);

		SetIdle(qc, got == 0);
		if (host != NULL)
			SetIdle(psprintf("coord:host:%s", host), got == 0);
	}
	return (Datum) 0;
}

/* ---------- complete, fail, heartbeat ---------- */

/*
 * May the caller complete, fail or heartbeat a lease claim another role
 * made?  A member of coord_admin (with its privileges), a superuser, or the
 * extension owner.  Call it after CoordBecomeOwner: caller is the user the
 * switch saved, and GetUserId() is the owner.
 */
static bool
ActsForAnyClaimant(Oid caller)
{
	Oid			admin;

	if (caller == GetUserId())
		return true;
	admin = CoordAdminRoleId();
	if (!OidIsValid(admin))
		return superuser_arg(caller);
	return has_privs_of_role(caller, admin);
}

/* coord.complete(id bigint, token bigint, result jsonb DEFAULT NULL) */
Datum
coord_complete(PG_FUNCTION_ARGS)
{
	int64		id;
	Oid			argtypes[4] = {INT8OID, INT8OID, BOOLOID, OIDOID};
	Datum		args[4];
	CoordUserSwitch sw;
	bool		ok;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	if (!PG_ARGISNULL(2))
		CoordCheckSize("job result", VARSIZE(PG_GETARG_JSONB_P(2)), COORD_RESULT_MAX_BYTES);
	id = PG_GETARG_INT64(0);
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(PG_GETARG_INT64(1));
	args[2] = BoolGetDatum(SessionClaimLive(id));

	SPI_connect();
	CoordBecomeOwner(&sw);
	args[3] = ObjectIdGetDatum(sw.save_userid);
	/* the hot path: a statement each, the role test only where it applies */
	if (ActsForAnyClaimant(sw.save_userid))
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_complete_any,
												 "DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
												 "AND token OPERATOR(pg_catalog.=) $2 "
												 "AND (lease_until IS NOT NULL OR $3) RETURNING *",
												 3, argtypes), args, NULL, false, 0),
					  SPI_OK_DELETE_RETURNING, "complete");
	else
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_complete,
												 "DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
												 "AND token OPERATOR(pg_catalog.=) $2 "
												 "AND ((lease_until IS NOT NULL AND claimed_by OPERATOR(pg_catalog.=) $4) "
												 "     OR $3) RETURNING *",
												 4, argtypes), args, NULL, false, 0),
					  SPI_OK_DELETE_RETURNING, "complete");
	ok = ArchiveJobs("done", NULL, PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2), PG_ARGISNULL(2)) == 1;
	if (ok)
		DropSessionClaim(id);
	else
		ForgetClaimIfGone(id);
	CoordRestoreUser(&sw);
	SPI_finish();
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
		if (SessionClaimLive(DatumGetInt64(elems[i])))
			held[nheld++] = elems[i];
	}
	args[0] = PointerGetDatum(ids);
	args[1] = PointerGetDatum(tokens);
	args[2] = PointerGetDatum(construct_array(held, nheld, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

	SPI_connect();
	CoordBecomeOwner(&sw);
	args[3] = ObjectIdGetDatum(sw.save_userid);
	args[4] = BoolGetDatum(ActsForAnyClaimant(sw.save_userid));
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_complete_many,
											 "DELETE FROM coord.job AS j USING ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS t(id, token) "
											 "WHERE j.id OPERATOR(pg_catalog.=) t.id AND j.token OPERATOR(pg_catalog.=) t.token "
											 "AND ((j.lease_until IS NOT NULL "
											 "      AND (j.claimed_by OPERATOR(pg_catalog.=) $4 OR $5)) "
											 "     OR j.id OPERATOR(pg_catalog.=) ANY ($3)) "
											 "RETURNING j.*",
											 5, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE_RETURNING, "complete");
	done = SPI_processed;
	{
		/* the completed ones: let their claims go; the others: only if gone */
		SPITupleTable *tt = SPI_tuptable;
		int64	   *completed = palloc(sizeof(int64) * Max(done, 1));
		int			c_id = SPI_fnumber(tt->tupdesc, "id");

		for (r = 0; r < done; r++)
		{
			bool		isnull;

			completed[r] = DatumGetInt64(SPI_getbinval(tt->vals[r], tt->tupdesc, c_id, &isnull));
		}
		(void) ArchiveJobs("done", NULL, (Datum) 0, true);
		/* sorted, so that each id is looked up in O(log n) */
		qsort(completed, done, sizeof(int64), CmpInt64);
		for (i = 0; i < n; i++)
		{
			int64		id = DatumGetInt64(elems[i]);
			bool		was_done;

			CHECK_FOR_INTERRUPTS();
			was_done = done > 0 &&
				bsearch(&id, completed, done, sizeof(int64), CmpInt64) != NULL;
			if (was_done)
				DropSessionClaim(id);
			else
				ForgetClaimIfGone(id);
		}
	}
	CoordRestoreUser(&sw);
	SPI_finish();
	PG_RETURN_INT32((int32) done);
}

/*
 * MoveToHistory moves a job (matching token, when given) to the history in
 * state st; inside SPI.  Returns whether it moved.
 */
static bool
MoveToHistory(int64 id, bool with_token, int64 token, const char *st, const char *error)
{
	Oid			argtypes[3] = {INT8OID, INT8OID, BOOLOID};
	Datum		args[3];

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = BoolGetDatum(with_token);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_finish,
											 "DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
											 "AND (NOT $3 OR token OPERATOR(pg_catalog.=) $2) RETURNING *",
											 3, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE_RETURNING, "moving a job to the history");
	return ArchiveJobs(st, error, (Datum) 0, true) == 1;
}

/*
 * coord.fail(id, token, error, retry_after) returns text: 'scheduled' (again,
 * after retry_after or an exponential backoff with jitter) or 'dead'; NULL
 * when the claim is not the caller's.
 */
Datum
coord_fail(PG_FUNCTION_ARGS)
{
	int64		id,
				token;
	char	   *error = NULL;
	int64		delay_us = -1;
	Oid			argtypes[7] = {INT8OID, INT8OID, INTERVALOID, TEXTOID, BOOLOID, OIDOID, BOOLOID};
	Datum		args[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	CoordUserSwitch sw;
	const char *result = NULL;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	if (!PG_ARGISNULL(2))
	{
		text	   *t = PG_GETARG_TEXT_PP(2);

		CoordCheckSize("job error text", VARSIZE_ANY_EXHDR(t), COORD_ERROR_MAX_BYTES);
		error = text_to_cstring(t);
	}
	id = PG_GETARG_INT64(0);
	token = PG_GETARG_INT64(1);
	if (!PG_ARGISNULL(3))
		delay_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(3), "retry_after", true);

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = (Datum) 0;
	args[3] = error ? CStringGetTextDatum(error) : (Datum) 0;
	nulls[3] = error ? ' ' : 'n';
	args[4] = BoolGetDatum(false);

	SPI_connect();
	CoordBecomeOwner(&sw);
	args[4] = BoolGetDatum(SessionClaimLive(id));
	args[5] = ObjectIdGetDatum(sw.save_userid);
	args[6] = BoolGetDatum(ActsForAnyClaimant(sw.save_userid));
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_fail_get,
										"SELECT attempt, max_attempts FROM coord.job "
										"WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
										"AND ((lease_until IS NOT NULL "
										"      AND (claimed_by OPERATOR(pg_catalog.=) $6 OR $7)) "
										"     OR $5) "
										"FOR UPDATE", 7, argtypes), args, nulls, false, 1),
			 SPI_OK_SELECT, "fail");
	if (SPI_processed == 1)
	{
		bool		isnull;
		int32		attempt = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		int32		max_attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		bool		uses_attempt = (delay_us < 0);

		if (uses_attempt && attempt >= max_attempts)
		{
			(void) MoveToHistory(id, true, token, "dead", error);
			result = "dead";
		}
		else
		{
			Interval   *delay = palloc0(sizeof(Interval));

			if (uses_attempt)
			{
				delay_us = BackoffUs(attempt);
			}
			delay->time = delay_us;
			args[2] = IntervalPGetDatum(delay);
			/* $5: the attempt this claim used is given back (retry_after) */
			args[4] = BoolGetDatum(!uses_attempt);
			CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_fail_retry,
												"UPDATE coord.job SET lease_until = NULL, claimed_at = NULL, "
												"run_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3, "
												"last_error = $4, attempt = attempt OPERATOR(pg_catalog.-) "
												"(CASE WHEN $5 THEN 1 ELSE 0 END) "
												"WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2",
												5, argtypes), args, nulls, false, 0),
					 SPI_OK_UPDATE, "fail");
			result = "scheduled";
		}
		DropSessionClaim(id);
	}
	else
		ForgetClaimIfGone(id);
	CoordRestoreUser(&sw);
	SPI_finish();
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

	SPI_connect();
	CoordBecomeOwner(&sw);
	if (SessionClaimLive(id))
	{
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_is_claim,
											"SELECT 1 FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
											"AND token OPERATOR(pg_catalog.=) $2",
											3, argtypes), args, nulls, false, 1),
				 SPI_OK_SELECT, "heartbeat");
		if (SPI_processed == 1)
		{
			found = true;
			until = TimestampTzGetDatum(SESSION_BOUND_UNTIL);
		}
	}
	else
	{
		args[3] = ObjectIdGetDatum(sw.save_userid);
		args[4] = BoolGetDatum(ActsForAnyClaimant(sw.save_userid));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_heartbeat,
											"UPDATE coord.job SET lease = COALESCE($3, lease), "
											"lease_until = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) COALESCE($3, lease) "
											"WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
											"AND lease_until IS NOT NULL "
											"AND (claimed_by OPERATOR(pg_catalog.=) $4 OR $5) RETURNING lease_until",
											5, argtypes), args, nulls, false, 0),
				 SPI_OK_UPDATE_RETURNING, "heartbeat");
		if (SPI_processed == 1)
		{
			bool		isnull;

			found = true;
			until = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		}
	}
	if (!found)
		ForgetClaimIfGone(id);
	CoordRestoreUser(&sw);
	SPI_finish();
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(until);
}

/* ---------- cancel, retry, state, purge ---------- */

/* coord.cancel(id): cancels a job that has not finished */
Datum
coord_cancel(PG_FUNCTION_ARGS)
{
	CoordUserSwitch sw;
	bool		moved;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	SPI_connect();
	CoordBecomeOwner(&sw);
	moved = MoveToHistory(PG_GETARG_INT64(0), false, 0, "cancelled", NULL);
	CoordRestoreUser(&sw);
	SPI_finish();
	DropSessionClaim(PG_GETARG_INT64(0));
	PG_RETURN_BOOL(moved);
}

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
	SPI_connect();
	CoordBecomeOwner(&sw);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_retry,
										"INSERT INTO coord.job (id, queue, payload, run_at, priority, key, group_key, "
										"host, attempt, max_attempts, token, enqueued_at, last_error, request_key, origin) "
										"SELECT id, queue, payload, pg_catalog.now(), priority, key, group_key, host, "
										"0, max_attempts, pg_catalog.nextval('coord.job_token_seq'::pg_catalog.regclass), "
										"enqueued_at, last_error, request_key, "
										/* still the app run's job; a schedule has put its next instance on already */
										"CASE WHEN EXISTS (SELECT 1 FROM coord.job AS l "
										"WHERE l.origin OPERATOR(pg_catalog.=) h.origin) THEN NULL ELSE h.origin END "
										"FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) $1 "
										"AND h.state OPERATOR(pg_catalog.=) 'dead' "
										"ON CONFLICT DO NOTHING RETURNING queue, host",
										1, argtypes), args, NULL, false, 0),
			 SPI_OK_INSERT_RETURNING, "retry");
	moved = (SPI_processed == 1);
	if (moved)
	{
		/* WakeAtCommit copies them: SPI_finish frees SPI's memory */
		WakeAtCommit(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
					 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_retry_drop,
											"DELETE FROM coord.job_history WHERE id OPERATOR(pg_catalog.=) $1",
											1, argtypes), args, NULL, false, 0),
				 SPI_OK_DELETE, "retry");
	}
	else
	{
		/* a dead job that did not go in: its key is taken (or a concurrent retry won) */
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_retry_conflict,
											"SELECT h.queue, h.key, l.id FROM coord.job_history AS h "
											"JOIN coord.job AS l ON l.queue OPERATOR(pg_catalog.=) h.queue "
											"AND l.key OPERATOR(pg_catalog.=) h.key AND l.origin IS NULL "
											"WHERE h.id OPERATOR(pg_catalog.=) $1 AND h.state OPERATOR(pg_catalog.=) 'dead'",
											1, argtypes), args, NULL, false, 1),
				 SPI_OK_SELECT, "retry");
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
	CoordRestoreUser(&sw);
	SPI_finish();
	PG_RETURN_BOOL(moved);
}

/* coord.job_claimed(id): does a session hold the job's claim lock? */
Datum
coord_job_claimed(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	JobTag(&tag, PG_GETARG_INT64(0));
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
	SPI_connect();
	CoordBecomeOwner(&sw);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_state_live,
										"SELECT lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), run_at OPERATOR(pg_catalog.>) pg_catalog.now() "
										"FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1",
										1, argtypes), args, NULL, false, 1),
			 SPI_OK_SELECT, "job_state");
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		leased = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		bool		lease_live = !isnull && DatumGetBool(leased);
		bool		future = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		LOCKTAG		tag;

		JobTag(&tag, PG_GETARG_INT64(0));
		if (lease_live || LockWaiterCount(&tag) > 0)
			state = "running";
		else
			state = future ? "scheduled" : "ready";
	}
	else
	{
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_state_hist,
											"SELECT state FROM coord.job_history WHERE id OPERATOR(pg_catalog.=) $1",
											1, argtypes), args, NULL, false, 1),
				 SPI_OK_SELECT, "job_state");
		if (SPI_processed == 1)
			state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	}
	if (state != NULL)
		result = CoordSpiText(state);
	CoordRestoreUser(&sw);
	SPI_finish();
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
	SPI_connect();
	CoordBecomeOwner(&sw);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_purge,
										"DELETE FROM coord.job_history WHERE finished_at OPERATOR(pg_catalog.<) "
										"(pg_catalog.now() OPERATOR(pg_catalog.-) $1)",
										1, argtypes), args, NULL, false, 0),
			 SPI_OK_DELETE, "purge_jobs");
	n = SPI_processed;
	CoordRestoreUser(&sw);
	SPI_finish();
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
	int32		max_attempts = MaxAttemptsArg(fcinfo, 6);
	Jsonb	   *payload;
	CoordUserSwitch sw;
	int64		id;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "key");
	CoordRequireArg(fcinfo, 2, "payload");
	CoordRequireArg(fcinfo, 4, "priority");
	rkey = text_to_cstring(PG_GETARG_TEXT_PP(0));
	payload = CoordCheckPayload(PG_GETARG_JSONB_P(2));

	/* the request side first: it raises 55000 unless this session owns the key */
	CoordRequestMarkQueued(rkey);

	SPI_connect();
	CoordBecomeOwner(&sw);
	id = EnqueueOne(queue, payload, PG_GETARG_DATUM(3), PG_ARGISNULL(3), PG_GETARG_INT32(4),
					NULL, host, max_attempts, NULL, rkey);
	CoordRestoreUser(&sw);
	SPI_finish();
	WakeAtCommit(queue, host);
	PG_RETURN_INT64(id);
}

/* ---------- for schedules.c and apps.c (inside SPI, as the owner) ---------- */

/*
 * CoordEnqueueOrigin adds the job of a schedule or an app run, with an
 * optional dedupe key.  At most one live job has a given origin (a unique
 * index): returns 0, and adds nothing, when there is one already (or a live
 * job with that key), also against a concurrent caller.
 */
int64
CoordEnqueueOrigin(const char *queue, Jsonb *payload, TimestampTz run_at, const char *host,
				   int32 max_attempts, const char *origin, const char *key)
{
	Oid			argtypes[7] = {TEXTOID, JSONBOID, TIMESTAMPTZOID, TEXTOID, INT4OID, TEXTOID, TEXTOID};
	Datum		args[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;

	args[0] = CStringGetTextDatum(queue);
	args[1] = JsonbPGetDatum(payload);
	args[2] = TimestampTzGetDatum(run_at);
	args[3] = host ? CStringGetTextDatum(host) : (Datum) 0;
	nulls[3] = host ? ' ' : 'n';
	args[4] = Int32GetDatum(max_attempts);
	args[5] = CStringGetTextDatum(origin);
	args[6] = key ? CStringGetTextDatum(key) : (Datum) 0;
	nulls[6] = key ? ' ' : 'n';
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_origin_enqueue,
										"INSERT INTO coord.job (queue, payload, run_at, priority, host, max_attempts, origin, key) "
										"VALUES ($1, $2, $3, 0, $4, $5, $6, $7) "
										"ON CONFLICT DO NOTHING RETURNING id",
										7, argtypes), args, nulls, false, 0),
			 SPI_OK_INSERT_RETURNING, "enqueue");
	if (SPI_processed != 1)
		return 0;
	WakeAtCommit(queue, host);
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
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_origin_job,
										"SELECT id FROM coord.job WHERE origin OPERATOR(pg_catalog.=) $1",
										1, argtypes), args, NULL, false, 1),
			 SPI_OK_SELECT, "origin lookup");
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
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_revoke_get,
										"SELECT attempt, max_attempts FROM coord.job "
										"WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $4 FOR UPDATE",
										4, argtypes), args, NULL, false, 1),
			 SPI_OK_SELECT, "revoke");
	if (SPI_processed != 1)
		return -1;
	attempt = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	max_attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (attempt >= max_attempts)
	{
		(void) MoveToHistory(id, true, token, "dead", error);
		return 0;
	}
	delay->time = BackoffUs(attempt);
	args[1] = IntervalPGetDatum(delay);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_revoke,
										"WITH d AS (DELETE FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 RETURNING *) "
										"INSERT INTO coord.job (queue, payload, run_at, priority, key, group_key, host, "
										"attempt, max_attempts, enqueued_at, last_error, request_key, origin) "
										"SELECT queue, payload, pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2, "
										"priority, key, group_key, host, attempt, max_attempts, enqueued_at, $3, "
										"request_key, origin FROM d RETURNING id, queue, host",
										3, argtypes), args, NULL, false, 0),
			 SPI_OK_INSERT_RETURNING, "revoke");
	if (SPI_processed != 1)
		return -1;
	{
		char	   *queue = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		char	   *host = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		int64		newid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		WakeAtCommit(queue, host);
		return newid;
	}
}

/*
 * CoordJobsTick: the job queue's share of coord.tick.  Jobs whose last
 * attempt's lease expired die (claims would kill them too, but only when one
 * reaches them), and the history loses what is older than the retention.
 * Both go by the real clock when the tick's now is later: a tick with a
 * simulated future time (apps are driven that way) must not expire leases
 * that have not expired, nor purge history that is still kept.  Returns how
 * many jobs it touched.
 */
int64
CoordJobsTick(TimestampTz now)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, INTERVALOID};
	Datum		args[2];
	Interval   *keep = palloc0(sizeof(Interval));
	int64		touched = 0;
	uint64		i,
				n;
	int64	   *ids;

	args[0] = TimestampTzGetDatum(Min(now, GetCurrentTimestamp()));
	keep->time = (int64) coord_job_history_retention * USECS_PER_SEC;
	args[1] = IntervalPGetDatum(keep);

	/* a lease is set only by lease claims; SKIP LOCKED: a claim may be taking it now */
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_tick_lost,
										"SELECT id FROM coord.job WHERE lease_until OPERATOR(pg_catalog.<) $1 "
										"AND attempt OPERATOR(pg_catalog.>=) max_attempts "
										"FOR UPDATE SKIP LOCKED",
										1, argtypes), args, NULL, false, 0),
			 SPI_OK_SELECT, "tick");
	n = SPI_processed;
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	for (i = 0; i < n; i++)
		if (MoveToHistory(ids[i], false, 0, "dead", "claim lost after the last attempt: the lease expired"))
			touched++;

	if (coord_job_history_retention > 0)
	{
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_tick_purge,
											"DELETE FROM coord.job_history WHERE finished_at OPERATOR(pg_catalog.<) "
											"($1 OPERATOR(pg_catalog.-) $2)",
											2, argtypes), args, NULL, false, 0),
				 SPI_OK_DELETE, "tick");
		touched += SPI_processed;
	}
	return touched;
}
