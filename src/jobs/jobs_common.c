/*-------------------------------------------------------------------------
 * jobs_common.c
 *		What the files of the job queue share (see src/jobs/README.md): the
 *		queue's GUCs and callbacks (JobsCommonInit, from jobs.c's module init,
 *		which hands it the caches above), the relations' OIDs, claim-lock tags and
 *		session claims, and both halves of the wake-up protocol: the idle marks
 *		a claim that found nothing takes (JobsSetIdle) and the NOTIFY at PRE_COMMIT
 *		of a transaction that enqueued (JobsWakeAtCommit), which looks for them;
 *		and the finisher's half of coord.await (JobsNoteFinished: at COMMIT, the
 *		latches of the sessions awaiting the jobs it finished are set; at
 *		PRE_PREPARE, the jobs are marked with locks that the prepared
 *		transaction holds until COMMIT or ROLLBACK PREPARED, and the latches
 *		set).
 *
 * Per-backend state here: the idle marks (session locks, kept across
 * transactions, at most coord.max_idle_marks), the channels this
 * transaction fed and the jobs it finished (TopTransactionContext,
 * forgotten at commit or abort).
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
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
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

bool		coord_notify = true;
int			coord_job_history_retention = 7 * 24 * 3600;	/* seconds */
int			coord_claim_rescan_interval = 1000; /* ms; 0: always scan from the
												 * head */
int			coord_claim_rescan_max = 10000; /* ms: the longest a rescan is put
											 * off */
int			coord_max_retry_after = 3600;	/* seconds: fail's retry_after */

/*
 * Idle marks this backend holds, by idle key, least recently set first.  Each
 * is a lock-table entry, so a backend keeps only the coord.max_idle_marks most
 * recent ones (see "Wake-ups" in src/jobs/README.md).
 */
typedef struct IdleMark
{
	uint64		key;			/* hash key: must be first */
	dlist_node	lru;
} IdleMark;

static HTAB *idle_marks = NULL;
static dlist_head idle_lru = DLIST_STATIC_INIT(idle_lru);
int			coord_max_idle_marks = 256;

/* Queues and hosts this transaction enqueued to, for the PRE_COMMIT wake-up. */
static List *wake_channels = NIL;

/*
 * Jobs this transaction finished, for the COMMIT wake-up of their awaiters:
 * the first FINISHED_LOCAL here (a completion allocates nothing), more in
 * TopTransactionContext.  Past FINISHED_MAX of them the transaction wakes
 * every awaiter instead (finished_all): each looks again.
 */
#define FINISHED_LOCAL	16
#define FINISHED_MAX	8192

/*
 * A transaction that prepares marks at most this many finished jobs one by
 * one (a lock-table entry each, until COMMIT or ROLLBACK PREPARED); past
 * it, or past FINISHED_MAX, one mark (key 0) stands for all of them.
 */
#define AWAIT_PREP_IDS_MAX	64
static int64 finished_local[FINISHED_LOCAL];
static int64 *finished_ids = finished_local;
static int	finished_cap = FINISHED_LOCAL;
static int	nfinished = 0;
static bool finished_all = false;

/*
 * The caches of the files above this one (jobs_claim.c, jobs_finish.c,
 * jobs_limits.c), which jobs.c's CoordJobsInit hands to JobsCommonInit: this
 * file calls them without naming them.
 */
static JobsCacheHooks cache_hooks;

static void JobsXactCallback(XactEvent event, void *arg);
static void JobRelsInval(Datum arg, Oid relid);

/* The queue's GUCs and callbacks; hooks: see cache_hooks. */
void
JobsCommonInit(const JobsCacheHooks *hooks)
{
	cache_hooks = *hooks;
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
	DefineCustomIntVariable("coord.max_retry_after",
							"The longest retry_after coord.fail takes.",
							"A worker's retry_after delays its job and, with pause_key, pauses the "
							"job's limit_key for every claimer: a longer one is refused.",
							&coord_max_retry_after, 3600, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
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

void
JobsJobTag(LOCKTAG *tag, int64 id)
{
	CoordSetTag(tag, (uint64) id, COORD_NS_JOB);
}

/* ---------- wake-ups ---------- */

static void
AddWakeChannel(char *channel)
{
	ListCell   *lc;

	foreach(lc, wake_channels)
	{
		if (strcmp((char *) lfirst(lc), channel) == 0)
			return;
	}
	wake_channels = lappend(wake_channels, channel);
}

/* Remembers, for PRE_COMMIT, the channels of a queue (and host) fed by this transaction. */
void
JobsWakeAtCommit(const char *queue, const char *host)
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

/* ---------- coord.await's wake-up (jobs_control.c is the waiting side) ---------- */

/*
 * JobsNoteFinished remembers that this transaction finished a job (moved
 * it to the history, or took it away: CoordRevokeJob), so that its commit
 * wakes the job's awaiters.  An array append: the completion's hot path
 * pays nothing more until COMMIT.
 */
void
JobsNoteFinished(int64 id)
{
	if (nfinished >= finished_cap)
	{
		if (finished_all || nfinished >= FINISHED_MAX)
		{
			finished_all = true;
			return;
		}
		if (finished_ids == finished_local)
		{
			finished_ids = MemoryContextAlloc(TopTransactionContext, sizeof(int64) * finished_cap * 2);
			memcpy(finished_ids, finished_local, sizeof(int64) * nfinished);
		}
		else
			finished_ids = repalloc(finished_ids, sizeof(int64) * finished_cap * 2);
		finished_cap *= 2;
	}
	finished_ids[nfinished++] = id;
}

/* Sets the latch of every other backend that holds tag (any mode). */
static void
WakeHolders(const LOCKTAG *tag)
{
	int			n = 0;
	VirtualTransactionId *vxids = GetLockConflicts(tag, AccessExclusiveLock, &n);
	int			i;

	for (i = 0; i < n; i++)
	{
		PGPROC	   *proc = CoordVxidProc(vxids[i]);

		/* a stale one (it ended meanwhile) only wakes a latch for nothing */
		if (proc != NULL)
			SetLatch(&proc->procLatch);
	}
}

/*
 * At COMMIT (after the commit is visible to new snapshots: ProcArray has
 * ended the transaction), the awaiters of the jobs it finished: every
 * coord.await holds (COORD_NS_AWAIT_ANY) and (COORD_NS_AWAIT, its job) while
 * it waits on its latch, so one probe of the first tells whether anyone
 * awaits at all (the common case: no), and then one per job finds who.
 * An awaiter takes its locks before it looks at the job, and looks again
 * after each wake-up: a commit it did not see in its look finds its lock.
 */
static void
WakeAwaiters(void)
{
	LOCKTAG		tag;
	int			i;

	CoordSetTag(&tag, 0, COORD_NS_AWAIT_ANY);
	if (LockWaiterCount(&tag) == 0)
		return;
	if (finished_all)
	{
		WakeHolders(&tag);
		return;
	}
	for (i = 0; i < nfinished; i++)
	{
		CoordSetTag(&tag, (uint64) finished_ids[i], COORD_NS_AWAIT);
		WakeHolders(&tag);
	}
}

/*
 * At PRE_PREPARE: COMMIT PREPARED, from any session, runs none of our code,
 * so the transaction marks the jobs it finished before it prepares: a lock
 * (COORD_NS_AWAIT_PREP, id) for each of them, or (COORD_NS_AWAIT_PREP, 0)
 * for more than AWAIT_PREP_IDS_MAX (or FINISHED_MAX) jobs, in
 * RowExclusiveLock (prepared finishers never wait for one another: the 0
 * key is shared).  Transaction locks move to the prepared transaction, and
 * COMMIT or ROLLBACK PREPARED releases them after the outcome is visible.
 * Then it wakes the awaiters as a commit would: an awaiter whose share lock
 * on its job's key (and key 0) is refused knows a prepared transaction
 * holds the job and looks again at short intervals until it can take them
 * (jobs_control.c).  A lock taken here waits at most for an awaiter's look.
 */
static void
MarkPreparedFinished(void)
{
	LOCKTAG		tag;
	int			i;

	if (finished_all || nfinished > AWAIT_PREP_IDS_MAX)
	{
		CoordSetTag(&tag, 0, COORD_NS_AWAIT_PREP);
		(void) LockAcquire(&tag, RowExclusiveLock, false, false);
	}
	else
		for (i = 0; i < nfinished; i++)
		{
			CoordSetTag(&tag, (uint64) finished_ids[i], COORD_NS_AWAIT_PREP);
			(void) LockAcquire(&tag, RowExclusiveLock, false, false);
		}
	WakeAwaiters();
}

/*
 * The other half: at PRE_COMMIT, NOTIFY the channels this transaction fed
 * on which some session is marked idle (JobsSetIdle, below).
 */
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
		case XACT_EVENT_PRE_PREPARE:
			if (nfinished > 0 || finished_all)
				MarkPreparedFinished();
			break;
		case XACT_EVENT_COMMIT:
			if (nfinished > 0 || finished_all)
				WakeAwaiters();
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* the lists lived in TopTransactionContext */
			wake_channels = NIL;
			finished_ids = finished_local;
			finished_cap = FINISHED_LOCAL;
			nfinished = 0;
			finished_all = false;
			cache_hooks.xact_end();
			break;
		default:
			break;
	}
}

/*
 * Marks this session idle on a channel (shared session lock), or not.  Beyond
 * coord.max_idle_marks marks, the least recently set one is let go.  A mark
 * counts against coord.max_locks_per_session; one that does not fit is not
 * taken (the session is not woken there, and finds the work at its next
 * claim), rather than failing the claim.
 */
void
JobsSetIdle(const char *channel, bool idle)
{
	uint64		key = CoordNameKey(channel, strlen(channel));
	bool		found;
	LOCKTAG		tag;
	IdleMark   *m;

	if (idle_marks == NULL && !idle)
		return;
	if (idle_marks == NULL)
		dlist_init(&idle_lru);	/* first use: the list starts empty with its
								 * table */
	CoordLocalHash(&idle_marks, "pg_coord idle marks", sizeof(uint64), sizeof(IdleMark), HASH_BLOBS);
	CoordSetTag(&tag, key, COORD_NS_IDLE);
	if (idle)
	{
		m = hash_search(idle_marks, &key, HASH_ENTER, &found);
		if (found)
			dlist_delete(&m->lru);
		dlist_push_tail(&idle_lru, &m->lru);
		while (hash_get_num_entries(idle_marks) > Max(coord_max_idle_marks, 1))
		{
			IdleMark   *old = dlist_container(IdleMark, lru, dlist_pop_head_node(&idle_lru));
			uint64		oldkey = old->key;
			LOCKTAG		oldtag;

			CoordSetTag(&oldtag, oldkey, COORD_NS_IDLE);
			hash_search(idle_marks, &oldkey, HASH_REMOVE, NULL);
			if (CoordLockHeldByMe(&oldtag, ShareLock))
				CoordLockLetGo(&oldtag, ShareLock, true);
		}
		if ((!found || !CoordLockHeldByMe(&tag, ShareLock)) && CoordLockRoom(1))
			(void) CoordLockTake(&tag, ShareLock, true, true);
	}
	else
	{
		m = hash_search(idle_marks, &key, HASH_FIND, &found);
		if (found)
		{
			dlist_delete(&m->lru);
			hash_search(idle_marks, &key, HASH_REMOVE, NULL);
			if (CoordLockHeldByMe(&tag, ShareLock))
				CoordLockLetGo(&tag, ShareLock, true);
		}
	}
}

/* ---------- session claims ---------- */

/* The hold key of a session-bound claim. */
char *
JobsClaimKey(int64 id)
{
	return psprintf("j:" INT64_FORMAT, id);
}

/* Does this session hold a session-bound claim on the job (even one being let go)? */
bool
JobsHoldsSessionClaim(int64 id)
{
	return CoordHoldsAny() && CoordHoldState(JobsClaimKey(id)) != HOLD_NONE;
}

/* Is this session's session-bound claim on the job live (not being let go)? */
bool
JobsSessionClaimLive(int64 id)
{
	return CoordHoldsAny() && CoordHoldState(JobsClaimKey(id)) == HOLD_ACTIVE;
}

/*
 * JobsDropSessionClaim lets go of this session's claim lock on a job when the
 * current transaction commits (the job's row change commits with it).
 */
void
JobsDropSessionClaim(int64 id)
{
	if (CoordHoldsAny())
		CoordHoldRelease(JobsClaimKey(id));
}

/*
 * After a complete, fail or heartbeat that did not match: keep a session
 * claim the caller still has (a wrong token is the caller's mistake), but let
 * go of one whose job was cancelled or finished by someone else.  Inside SPI.
 */
void
JobsForgetClaimIfGone(int64 id)
{
	static SPIPlanPtr plan_claim_gone = NULL;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];

	if (!JobsHoldsSessionClaim(id))
		return;
	args[0] = Int64GetDatum(id);
	CoordExecLimit(&plan_claim_gone,
				   "SELECT 1 FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "checking a claim");
	if (SPI_processed == 0)
		JobsDropSessionClaim(id);
}

/*
 * May the caller complete, fail or heartbeat a lease claim another role
 * made?  A member of coord_admin (with its privileges), a superuser, or the
 * extension owner.  Call it after CoordSpiBegin: caller is the user the
 * switch saved, and GetUserId() is the owner.
 */
bool
JobsActsForAnyClaimant(Oid caller)
{
	Oid			admin;

	if (caller == GetUserId())
		return true;
	admin = CoordAdminRoleId();
	if (!OidIsValid(admin))
		return superuser_arg(caller);
	return has_privs_of_role(caller, admin);
}

/*
 * CoordJobClaimAttempt (jobs.h): the attempt of the claim of job id under
 * token when that claim is caller's and live, as heartbeat decides it (a
 * session-bound claim this session holds, or a lease claim, expired or not
 * but not taken since, of caller or of a role that acts for any claimant);
 * else 0, which a wrong role gets too.  With lock, the row is locked FOR NO
 * KEY UPDATE: a claim skips it and complete, fail and cancel wait, until
 * this transaction ends, and two such callers for one job go one after the
 * other.  Inside SPI, as the owner.
 */
int32
CoordJobClaimAttempt(int64 id, int64 token, Oid caller, bool lock)
{
	static SPIPlanPtr plan_read = NULL;
	static SPIPlanPtr plan_lock = NULL;
	Oid			argtypes[5] = {INT8OID, INT8OID, OIDOID, BOOLOID, BOOLOID};
	Datum		args[5];
	bool		isnull;

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = ObjectIdGetDatum(caller);
	args[3] = BoolGetDatum(JobsActsForAnyClaimant(caller));
	args[4] = BoolGetDatum(JobsSessionClaimLive(id));
	if (lock)
		CoordExecLimit(&plan_lock,
					   "SELECT attempt FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
					   "AND token OPERATOR(pg_catalog.=) $2 AND ($5 OR (lease_until IS NOT NULL "
					   "AND (claimed_by OPERATOR(pg_catalog.=) $3 OR $4))) FOR NO KEY UPDATE",
					   5, argtypes, args, NULL, 1, SPI_OK_SELECT, "checking a claim");
	else
		CoordExecLimit(&plan_read,
					   "SELECT attempt FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
					   "AND token OPERATOR(pg_catalog.=) $2 AND ($5 OR (lease_until IS NOT NULL "
					   "AND (claimed_by OPERATOR(pg_catalog.=) $3 OR $4)))",
					   5, argtypes, args, NULL, 1, SPI_OK_SELECT, "checking a claim");
	if (SPI_processed != 1)
		return 0;
	return Max(DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)), 1);
}

/*
 * The OIDs of coord.job, coord.job_history and coord.job_token_seq, looked
 * up by name once; forgotten, with the caches built on them (jobs_claim.c's
 * column numbers, jobs_finish.c's archive map), when the relcache entry of
 * any of them is invalidated (DDL, DROP and CREATE EXTENSION), so the next
 * call looks again.
 */
JobRels		jobs_rels;
static uint64 jobrels_invals;	/* invalidations seen, for JobsLookupRels */

static void
JobRelsInval(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == jobs_rels.job || relid == jobs_rels.history ||
		relid == jobs_rels.token_seq)
	{
		/*
		 * Stale, not cleared: this can run at any catalog access of a call in
		 * flight, which still uses the OIDs it looked up.
		 */
		jobs_rels.valid = false;
		jobrels_invals++;
		cache_hooks.rels_inval();
	}
	else if (OidIsValid(relid) && (relid == jobs_rels.limit || relid == jobs_rels.pause))
	{
		/*
		 * a limit or pause changed (jobs_limits.c invalidates them on
		 * purpose)
		 */
		cache_hooks.limits_inval();
	}
}

void
JobsLookupRels(void)
{
	JobRels		r;
	uint64		seen;

	if (jobs_rels.valid)
		return;

	/*
	 * Into a copy, published whole: an invalidation during the lookups (they
	 * access the catalogs) must not leave a mix, and one that came meanwhile
	 * makes us look again.
	 */
	do
	{
		Oid			nsp;

		CHECK_FOR_INTERRUPTS();
		seen = jobrels_invals;
		nsp = get_namespace_oid(COORD_SCHEMA, false);
		r.job = get_relname_relid("job", nsp);
		r.history = get_relname_relid("job_history", nsp);
		r.token_seq = get_relname_relid("job_token_seq", nsp);
		r.limit = get_relname_relid("job_limit", nsp);
		r.pause = get_relname_relid("job_pause", nsp);
		if (!OidIsValid(r.job) || !OidIsValid(r.history) || !OidIsValid(r.token_seq) ||
			!OidIsValid(r.limit) || !OidIsValid(r.pause))
			elog(ERROR, "coord.job, coord.job_history, coord.job_token_seq, coord.job_limit or coord.job_pause does not exist");
	} while (seen != jobrels_invals);
	r.valid = true;
	jobs_rels = r;
}
