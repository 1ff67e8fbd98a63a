/*-------------------------------------------------------------------------
 * common_lock.c
 *		Helpers on PostgreSQL's lock manager shared by locks, requests and
 *		jobs (common family; see common.c): the lock tag of a name key,
 *		taking a set of locks with a timeout, the per-session cap on
 *		lock-table entries (every pg_coord lock, its transaction's too,
 *		taken through CoordAcquire or CoordLockTake), holds (session locks
 *		that follow the transaction that took or let go of them), lock mode
 *		names, and who holds what (lock status rows, backend liveness).
 *
 * Lock order.  CoordAcquire takes its tags in the order given and
 * CoordReleaseTags lets them go in the reverse order; callers give
 * ancestors before descendants (locks.c).  Nothing here takes a lock of
 * its own.
 *
 * Recovery.  CoordAcquire refuses during recovery (25006): a lock taken on
 * a standby is not seen by the primary's sessions.
 *
 * What survives an abort (session locks in flight, holds, the cap's count,
 * PREPARE): src/common/README.md, "Lock-manager helpers (common_lock.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "common/ip.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inet.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "common/common.h"
#include "compat.h"

/*
 * CoordSetTag builds the lock tag of a name key: database, the two halves of
 * the key (as pg_advisory_lock(bigint) lays them out), and the namespace in
 * field4.
 */
void
CoordSetTag(LOCKTAG *tag, uint64 key, uint16 ns)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (key >> 32), (uint32) key, ns);
}

/* ---------- acquiring heavyweight locks ---------- */

/*
 * Session locks survive abort, so the ones a call has taken before it fails
 * (timeout, cancel, deadlock) are recorded as in flight and released by the
 * (sub)transaction abort callback.  A call clears the list when it returns.
 * The list grows to the largest call (coord.lock_all takes many paths at
 * once) and lives in TopMemoryContext.
 */
static LOCKTAG *inflight_tags = NULL;
static LOCKMODE *inflight_modes = NULL;
static int	n_inflight = 0;
static int	inflight_cap = 0;

/*
 * The session lock a call is waiting for, if it did not hold it before.
 * An error that ends the wait (lock_timeout, statement_timeout, cancel) may
 * come just as the lock is granted: LockErrorCleanup then keeps the grant,
 * and a session lock outlives the (sub)transaction.  The abort callback lets
 * go of it, so a call that fails holds none of its locks.
 */
static LOCKTAG awaited_tag;
static LOCKMODE awaited_mode = NoLock;

/* Room for n more in-flight locks, made before any of them is taken. */
static void
InflightReserve(int n)
{
	int			need = n_inflight + n;

	if (need <= inflight_cap)
		return;
	need = Max(need, COORD_PATH_MAX_DEPTH);
	if (inflight_tags == NULL)
	{
		inflight_tags = MemoryContextAlloc(TopMemoryContext, sizeof(LOCKTAG) * need);
		inflight_modes = MemoryContextAlloc(TopMemoryContext, sizeof(LOCKMODE) * need);
	}
	else
	{
		inflight_tags = repalloc(inflight_tags, sizeof(LOCKTAG) * need);
		inflight_modes = repalloc(inflight_modes, sizeof(LOCKMODE) * need);
	}
	inflight_cap = need;
}

static void
ReleaseInflight(void)
{
	if (awaited_mode != NoLock)
	{
		LOCKMODE	mode = awaited_mode;

		awaited_mode = NoLock;
		/* never counted (CoordLockCounted): the grant came with the error */
		if (CoordLockHeldByMe(&awaited_tag, mode))
			LockRelease(&awaited_tag, mode, true);
	}
	while (n_inflight > 0)
	{
		n_inflight--;
		CoordLockLetGo(&inflight_tags[n_inflight], inflight_modes[n_inflight], true);
	}
}

/*
 * The cap on lock-manager entries (coord.max_locks_per_session).
 * PostgreSQL's lock table is shared by the whole cluster and sized by
 * max_locks_per_transaction; a session that fills it makes every other
 * session, in every database, fail with 53200 (and new connections fail).
 * So every lock pg_coord takes for a session, in any of its namespaces
 * (COORD_NS_FIRST .. COORD_NS_LAST) and at either level, counts: what the
 * session holds plus what its transaction holds never passes the cap, and a
 * call that would pass it is refused with 53400 before it takes anything.
 * A momentary probe (taken and let go within the call) counts too.  A lease
 * claim takes no lock at all (jobs_claim.c).
 *
 * The count is an upper bound of the (tag, mode) pairs held, kept cheaply:
 * +1 for each pair the lock manager newly grants, and for each session
 * hold of a pair held already (it may have been held by the transaction
 * only, and now outlives it); -1 when a pair is let go through pg_coord and
 * no longer held; the transaction-level pairs subtracted at the end of the
 * transaction.  It never counts less than what is held: what it misses
 * (locks released by pg_advisory_unlock_all or DISCARD ALL or by the abort
 * of a subtransaction, a session hold taken again) only makes it too high.
 * When it reaches the cap, it is replaced by an exact count of this
 * backend's pairs in the lock table before anything is refused.
 */
static int	coord_max_locks_per_session = 1000;
static int	coord_nlocks = 0;	/* held by this session, an upper bound */
static int	coord_nxact = 0;	/* of those, transaction-level ones */

/* Is tag one of pg_coord's (any namespace)? */
static inline bool
CountedTag(const LOCKTAG *tag)
{
	return tag->locktag_type == LOCKTAG_ADVISORY &&
		tag->locktag_lockmethodid == USER_LOCKMETHOD &&
		tag->locktag_field4 >= COORD_NS_FIRST &&
		tag->locktag_field4 <= COORD_NS_LAST;
}

/* Exact count: this backend's (tag, mode) pairs of pg_coord's in the lock table. */
static int
CountHeldLocks(void)
{
	LockData   *ld = GetLockStatusData();
	int			i;
	int			n = 0;

	for (i = 0; i < ld->nelements; i++)
	{
		LockInstanceData *li = &ld->locks[i];

		if (li->pid == MyProcPid && CountedTag(&li->locktag))
			n += pg_popcount32((uint32) li->holdMask);
	}
	return n;
}

/*
 * Would nnew more counted locks fit?  Recounts exactly before saying no.
 * The transaction-level share of the exact count is unknown: taken as none,
 * the count stays an upper bound after the transaction ends.
 */
bool
CoordLockRoom(int nnew)
{
	if (coord_max_locks_per_session <= 0 || nnew <= 0 ||
		coord_nlocks + nnew <= coord_max_locks_per_session)
		return true;
	coord_nlocks = CountHeldLocks();
	coord_nxact = 0;
	return coord_nlocks + nnew <= coord_max_locks_per_session;
}

/*
 * CoordLockBudget raises 53400 unless this session may take nnew more
 * counted locks.
 */
void
CoordLockBudget(int nnew)
{
	if (CoordLockRoom(nnew))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("this session holds too many pg_coord locks"),
			 errdetail("It holds %d entries of the lock table through pg_coord, in this transaction and across "
					   "transactions, and would need %d more; coord.max_locks_per_session is %d.",
					   coord_nlocks, nnew, coord_max_locks_per_session),
			 errhint("Release locks, claims, permits or requests first, or end the transaction (each path "
					 "also locks its ancestors; a transaction keeps an entry for each new lock name and each "
					 "limit_key it claimed from until it ends), or ask a superuser to raise "
					 "coord.max_locks_per_session together with max_locks_per_transaction.")));
}

/* CoordLockCounted notes a lock the lock manager answered r for. */
void
CoordLockCounted(const LOCKTAG *tag, LockAcquireResult r, bool session)
{
	if (!CountedTag(tag))
		return;
	if (r == LOCKACQUIRE_OK)
	{
		coord_nlocks++;
		if (!session)
			coord_nxact++;
	}
	else if (r == LOCKACQUIRE_ALREADY_HELD && session)
		coord_nlocks++;			/* perhaps held by the transaction only */
	else
		return;
	if (coord_nlocks > INT_MAX / 4)
	{
		/* grown by holds taken again and again: recount before it overflows */
		coord_nlocks = CountHeldLocks();
		coord_nxact = 0;
	}
}

/* Notes that a counted lock has been let go once at this level. */
static void
CoordLockReleased(const LOCKTAG *tag, LOCKMODE mode, bool session)
{
	if (!CountedTag(tag) || CoordLockHeldByMe(tag, mode))
		return;
	coord_nlocks = Max(coord_nlocks - 1, 0);
	if (!session)
		coord_nxact = Max(coord_nxact - 1, 0);
}

/*
 * CoordLockTake is LockAcquire for one lock of pg_coord's outside
 * CoordAcquire, counted against the cap (53400 past it).
 */
LockAcquireResult
CoordLockTake(const LOCKTAG *tag, LOCKMODE mode, bool session, bool dontWait)
{
	LockAcquireResult r;

	if (coord_max_locks_per_session > 0 &&
		coord_nlocks + 1 > coord_max_locks_per_session &&
		!CoordLockHeldByMe(tag, mode))
		CoordLockBudget(1);
	r = LockAcquire(tag, mode, session, dontWait);
	CoordLockCounted(tag, r, session);
	return r;
}

/* CoordLockLetGo is LockRelease for a lock taken by CoordLockTake. */
void
CoordLockLetGo(const LOCKTAG *tag, LOCKMODE mode, bool session)
{
	if (LockRelease(tag, mode, session))
		CoordLockReleased(tag, mode, session);
}

/* How many of tags[0 .. n) this backend does not hold yet in their modes. */
static int
NewLocks(const LOCKTAG *tags, const LOCKMODE *modes, int n)
{
	int			i;
	int			nnew = 0;

	for (i = 0; i < n; i++)
		if (!CoordLockHeldByMe(&tags[i], modes[i]))
			nnew++;
	return nnew;
}

/*
 * Holds: session-level locks that an operation keeps across transactions (a
 * request's owner, a session-bound claim), by a string key of the caller's.
 * Taking one and letting it go both follow the transaction that did it: a
 * hold taken by a transaction that aborts is released; a hold let go by a
 * transaction that commits is released after the commit (so others never
 * act on state that was not committed), and kept if it aborts.  Each
 * pending action carries the subtransaction that made it, so a rolled-back
 * savepoint undoes exactly its own.  One entry is one hold of its lock, so
 * two keys that share a lock tag hold it twice.
 */
#define HOLD_KEY_MAX	2100
typedef struct Hold
{
	char		key[HOLD_KEY_MAX];	/* hash key: must be first */
	LOCKTAG		tag;
	SubTransactionId taken_subid;	/* release if this aborts; or Invalid */
	SubTransactionId release_subid; /* release when this commits; or Invalid */
} Hold;

static HTAB *holds = NULL;
static bool holds_pending = false;

/*
 * This transaction took or let go of a pg_coord lock.  PREPARE TRANSACTION
 * is refused then: a session lock would stay with the session whatever the
 * prepared transaction's fate, and a transaction lock would be held by no
 * session until COMMIT PREPARED, unseen by the lock's holder.
 */
static bool locks_in_xact = false;

/* Does this backend hold anything?  Lets callers skip building hold keys. */
bool
CoordHoldsAny(void)
{
	return holds != NULL && hash_get_num_entries(holds) > 0;
}

static Hold *
FindHold(const char *key)
{
	Hold	   *h;

	if (!CoordHoldsAny())
		return NULL;
	h = hash_search(holds, key, HASH_FIND, NULL);
	if (h != NULL && !CoordLockHeldByMe(&h->tag, ExclusiveLock))
	{
		/* released behind our back (pg_advisory_unlock_all, DISCARD ALL) */
		hash_search(holds, key, HASH_REMOVE, NULL);
		return NULL;
	}
	return h;
}

/* CoordHoldTaken records a session lock the caller has just taken for key. */
void
CoordHoldTaken(const char *key, const LOCKTAG *tag)
{
	Hold	   *h;
	bool		found;

	CoordLocalHash(&holds, "pg_coord holds", HOLD_KEY_MAX, sizeof(Hold), HASH_STRINGS);
	if (strlen(key) >= HOLD_KEY_MAX)
		elog(ERROR, "hold key too long");
	h = hash_search(holds, key, HASH_ENTER, &found);
	Assert(!found);
	h->tag = *tag;
	h->taken_subid = GetCurrentSubTransactionId();
	h->release_subid = InvalidSubTransactionId;
	holds_pending = true;
}

/* CoordHoldRelease lets go of key's hold when this transaction commits. */
void
CoordHoldRelease(const char *key)
{
	Hold	   *h = FindHold(key);

	if (h != NULL && h->release_subid == InvalidSubTransactionId)
	{
		h->release_subid = GetCurrentSubTransactionId();
		holds_pending = true;
	}
}

/* CoordHoldKeep cancels a pending release of key's hold (it is needed again). */
void
CoordHoldKeep(const char *key)
{
	Hold	   *h = FindHold(key);

	if (h != NULL)
		h->release_subid = InvalidSubTransactionId;
}

/*
 * CoordHoldState: HOLD_NONE, HOLD_ACTIVE, or HOLD_RELEASING (held, let go at
 * commit).
 */
CoordHoldStatus
CoordHoldState(const char *key)
{
	Hold	   *h = FindHold(key);

	if (h == NULL)
		return HOLD_NONE;
	return h->release_subid == InvalidSubTransactionId ? HOLD_ACTIVE : HOLD_RELEASING;
}

/* CoordHoldDrop releases key's hold now (the caller took it in vain). */
void
CoordHoldDrop(const char *key)
{
	Hold	   *h = FindHold(key);

	if (h != NULL)
	{
		LOCKTAG		tag = h->tag;

		hash_search(holds, key, HASH_REMOVE, NULL);
		CoordLockLetGo(&tag, ExclusiveLock, true);
	}
}

/* Settles the holds at the end of a (sub)transaction; subid Invalid: top level. */
static void
SettleHolds(bool committed, SubTransactionId subid, SubTransactionId parent)
{
	HASH_SEQ_STATUS status;
	Hold	   *h;

	if (holds == NULL || !holds_pending)
		return;
	hash_seq_init(&status, holds);
	while ((h = hash_seq_search(&status)) != NULL)
	{
		bool		release = false;

		if (subid == InvalidSubTransactionId)
		{
			if (committed)
			{
				release = (h->release_subid != InvalidSubTransactionId);
				h->taken_subid = InvalidSubTransactionId;
			}
			else
			{
				release = (h->taken_subid != InvalidSubTransactionId);
				h->release_subid = InvalidSubTransactionId;
			}
		}
		else if (committed)
		{
			if (h->taken_subid == subid)
				h->taken_subid = parent;
			if (h->release_subid == subid)
				h->release_subid = parent;
		}
		else
		{
			release = (h->taken_subid == subid);
			if (h->release_subid == subid)
				h->release_subid = InvalidSubTransactionId;
		}
		if (release)
		{
			CoordLockLetGo(&h->tag, ExclusiveLock, true);
			hash_search(holds, h->key, HASH_REMOVE, NULL);
		}
	}
	if (subid == InvalidSubTransactionId)
		holds_pending = false;
}

static void
CommonXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			ReleaseInflight();
			SettleHolds(false, InvalidSubTransactionId, InvalidSubTransactionId);
			coord_nlocks = Max(coord_nlocks - coord_nxact, 0);
			coord_nxact = 0;
			locks_in_xact = false;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			if (event != XACT_EVENT_PREPARE)
				SettleHolds(true, InvalidSubTransactionId, InvalidSubTransactionId);
			/* the transaction-level locks went with it */
			coord_nlocks = Max(coord_nlocks - coord_nxact, 0);
			coord_nxact = 0;
			locks_in_xact = false;
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (holds_pending)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that took or let go of pg_coord requests or session-bound claims"),
						 errdetail("They belong to the session, which a prepared transaction outlives.")));
			if (locks_in_xact)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that took or let go of pg_coord locks"),
						 errdetail("A session lock belongs to the session, which a prepared transaction outlives; "
								   "a transaction lock would be held by no session until COMMIT PREPARED.")));
			break;
		default:
			break;
	}
}

static void
CommonSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		ReleaseInflight();
		SettleHolds(false, mySubid, parentSubid);
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		SettleHolds(true, mySubid, parentSubid);
}

static inline void
NoteInflight(const LOCKTAG *tag, LOCKMODE mode)
{
	Assert(n_inflight < inflight_cap);
	inflight_tags[n_inflight] = *tag;
	inflight_modes[n_inflight] = mode;
	n_inflight++;
}

/*
 * WaitingLockAcquire is LockAcquire for a call that may wait, noting a
 * session lock it did not hold before as awaited while it waits (see
 * awaited_tag).
 */
static LockAcquireResult
WaitingLockAcquire(const LOCKTAG *tag, LOCKMODE mode, bool session, bool dontWait)
{
	LockAcquireResult r;

	if (session && !dontWait && !CoordLockHeldByMe(tag, mode))
	{
		awaited_tag = *tag;
		awaited_mode = mode;
	}
	r = LockAcquire(tag, mode, session, dontWait);
	awaited_mode = NoLock;
	return r;
}

/*
 * CoordReleaseTags releases tags[0 .. n) in reverse order.
 */
void
CoordReleaseTags(const LOCKTAG *tags, const LOCKMODE *modes, int n, bool session)
{
	locks_in_xact = true;
	while (n-- > 0)
		CoordLockLetGo(&tags[n], modes[n], session);
}

/*
 * AcquireWithTimeout waits at most timeout_us for all tags together.  It runs
 * the waits in a subtransaction with lock_timeout set to what is left, so a
 * timeout is an ERROR we can catch and roll back cleanly: the lock manager's
 * wait state is cleaned up by the subtransaction abort, the transaction locks
 * taken so far go with it, and the session locks taken so far are released
 * by CommonSubXactCallback.  A session lock_timeout shorter than what is left
 * stays in force and raises its usual ERROR, as do cancel,
 * statement_timeout and deadlocks: those are re-thrown.
 */
static bool
AcquireWithTimeout(const LOCKTAG *tags, const LOCKMODE *modes, int n,
				   bool session, int64 timeout_us)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	TimestampTz deadline = GetCurrentTimestamp() + timeout_us;
	bool		acquired = false;
	volatile bool ours = true;	/* is the limit in force ours? */

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);

	PG_TRY();
	{
		int			i;

		for (i = 0; i < n; i++)
		{
			LockAcquireResult r;
			int64		left_ms = (deadline - GetCurrentTimestamp() + 999) / 1000;

			left_ms = Min(Max(left_ms, 1), INT_MAX);
			ours = (LockTimeout <= 0 || left_ms < LockTimeout);
			if (ours)
			{
				char		buf[32];
				int			nest = NewGUCNestLevel();

				snprintf(buf, sizeof(buf), "%d", (int) left_ms);
				(void) set_config_option("lock_timeout", buf, PGC_USERSET, PGC_S_SESSION,
										 GUC_ACTION_SAVE, true, 0, false);
				r = WaitingLockAcquire(&tags[i], modes[i], session, false);
				AtEOXact_GUC(true, nest);
			}
			else
				r = WaitingLockAcquire(&tags[i], modes[i], session, false);
			CoordLockCounted(&tags[i], r, session);
			if (session)
				NoteInflight(&tags[i], modes[i]);
		}
		/* pending since a grant? (CoordAcquire): the rollback lets the set go */
		CHECK_FOR_INTERRUPTS();
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		acquired = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE || !ours)
			ReThrowError(edata);
		FreeErrorData(edata);
	}
	PG_END_TRY();

	return acquired;
}

/*
 * CoordAcquire takes tags[0 .. n) in order, each in its mode, at session or
 * transaction level.  timeout_us < 0 waits without a limit of ours (the
 * session's lock_timeout still applies), 0 never waits, > 0 waits at most that
 * long for all of them together.  Returns false, holding none of them, when
 * they cannot all be had in time.
 *
 * An interrupt can be pending when the last lock is granted: a lock_timeout
 * or statement_timeout that fired after the grant but before ProcSleep
 * disabled its timer (the handler only sets QueryCancelPending), or a cancel
 * that came while later locks were taken without waiting (LockAcquire does
 * not check for interrupts then).  The caller's next CHECK_FOR_INTERRUPTS
 * would fail the statement with every lock of the set still held, no longer
 * in flight.  So CoordAcquire checks while they are in flight: a timeout of
 * ours becomes false, anything else is raised and the set let go.
 *
 * With keep_inflight, the session locks stay recorded as in flight after
 * success, so an error in the caller's follow-up work releases them; the
 * caller then calls CoordInflightDone.
 */
bool
CoordAcquire(const LOCKTAG *tags, const LOCKMODE *modes, int n, bool session,
			 int64 timeout_us, bool keep_inflight)
{
	int			i;
	bool		ok = true;

	/*
	 * A lock lives in one server's lock manager: one taken on a standby is
	 * invisible to workers on the primary, so it would coordinate nothing.
	 */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot take pg_coord locks during recovery"),
				 errdetail("A lock taken on a standby is not seen by the primary's sessions."),
				 errhint("Connect to the primary, for example with target_session_attrs=read-write.")));

	/* which of them are new is looked up only when all n could reach the cap */
	if (coord_max_locks_per_session > 0 && coord_nlocks + n > coord_max_locks_per_session)
		CoordLockBudget(NewLocks(tags, modes, n));
	locks_in_xact = true;
	if (session)
		InflightReserve(n);
	if (timeout_us > 0)
		ok = AcquireWithTimeout(tags, modes, n, session, timeout_us);
	else
	{
		for (i = 0; i < n; i++)
		{
			LockAcquireResult r = WaitingLockAcquire(&tags[i], modes[i], session, timeout_us == 0);

			if (r == LOCKACQUIRE_NOT_AVAIL)
			{
				CoordReleaseTags(tags, modes, i, session);
				ok = false;
				break;
			}
			CoordLockCounted(&tags[i], r, session);
			if (session)
				NoteInflight(&tags[i], modes[i]);
		}
		/* pending since a grant? (CoordAcquire): the abort callback lets go */
		CHECK_FOR_INTERRUPTS();
	}
	if (!ok || !keep_inflight)
		n_inflight = 0;
	return ok;
}

/* CoordInflightDone: the caller's locks are safely held now. */
void
CoordInflightDone(void)
{
	n_inflight = 0;
}

const char *
CoordModeName(LOCKMODE mode)
{
	switch (mode)
	{
		case RowShareLock:
			return "intention_shared";
		case RowExclusiveLock:
			return "intention_exclusive";
		case ShareLock:
			return "shared";
		case ExclusiveLock:
			return "exclusive";
	}
	return "unknown";
}

/* ---------- who holds what ---------- */

static PgBackendStatus *
FindBackend(int pid)
{
	int			nbe = pgstat_fetch_stat_numbackends();
	int			b;

	for (b = 1; b <= nbe; b++)
	{
		LocalPgBackendStatus *local = CoordLocalBackendStatus(b);

		if (local != NULL && local->backendStatus.st_procpid == pid)
			return &local->backendStatus;
	}
	return NULL;
}

/*
 * CoordBackendAlive: is the backend that had this pid and start time still
 * there?  The start time guards against pid reuse.  Reads backend status
 * directly, so it needs no pg_read_all_stats.
 */
bool
CoordBackendAlive(int pid, TimestampTz started)
{
	PgBackendStatus *be;

	pgstat_clear_snapshot();
	be = FindBackend(pid);
	return be != NULL && be->st_proc_start_timestamp == started;
}

/*
 * CoordLockStatus fills a materialised SRF with one row per lock mode held or
 * awaited in namespace ns in this database: key, mode, granted, pid,
 * application_name, client_addr, backend_start, wait_start.  Read from the
 * lock manager and backend status directly, so a monitoring role sees
 * holders' details without pg_read_all_stats.  GetLockStatusData takes every
 * lock partition: for diagnostics, not for hot paths.
 *
 * A holder's client address is shown only to callers that pg_stat_activity
 * would show it to (pg_read_all_stats, or the privileges of the holder's
 * role) and to coord_admin: to a coord_monitor it is NULL, as for a
 * connection over a Unix socket.
 */
Datum
CoordLockStatus(FunctionCallInfo fcinfo, uint16 ns)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	LockData   *ld;
	int			i;
	static const LOCKMODE modes[] = {RowShareLock, RowExclusiveLock, ShareLock, ExclusiveLock};
	Oid			caller = GetUserId();
	Oid			admin = CoordAdminRoleId();
	bool		all_addrs;

	all_addrs = has_privs_of_role(caller, ROLE_PG_READ_ALL_STATS) ||
		(OidIsValid(admin) && has_privs_of_role(caller, admin));
	InitMaterializedSRF(fcinfo, 0);
	/* backend status is cached per transaction: read it afresh */
	pgstat_clear_snapshot();
	ld = GetLockStatusData();

	for (i = 0; i < ld->nelements; i++)
	{
		LockInstanceData *inst = &ld->locks[i];
		PgBackendStatus *be;
		uint64		key;
		int			m;

		if (inst->locktag.locktag_type != LOCKTAG_ADVISORY ||
			inst->locktag.locktag_field4 != ns ||
			inst->locktag.locktag_field1 != MyDatabaseId)
			continue;
		key = ((uint64) inst->locktag.locktag_field2 << 32) | inst->locktag.locktag_field3;
		be = FindBackend(inst->pid);

		for (m = 0; m < lengthof(modes) + 1; m++)
		{
			Datum		values[8];
			bool		nulls[8];
			bool		granted = (m < lengthof(modes));
			LOCKMODE	mode = granted ? modes[m] : inst->waitLockMode;

			if (granted ? !(inst->holdMask & LOCKBIT_ON(mode)) : mode == NoLock)
				continue;
			memset(nulls, true, sizeof(nulls));
			values[0] = Int64GetDatum((int64) key);
			nulls[0] = false;
			values[1] = CStringGetTextDatum(CoordModeName(mode));
			nulls[1] = false;
			values[2] = BoolGetDatum(granted);
			nulls[2] = false;
			values[3] = Int32GetDatum(inst->pid);
			nulls[3] = false;
			if (be != NULL)
			{
				if (be->st_appname != NULL)
				{
					values[4] = CStringGetTextDatum(be->st_appname);
					nulls[4] = false;
				}
				if ((be->st_clientaddr.addr.ss_family == AF_INET ||
					 be->st_clientaddr.addr.ss_family == AF_INET6) &&
					(all_addrs || has_privs_of_role(caller, be->st_userid)))
				{
					char		host[NI_MAXHOST];

					host[0] = '\0';
					if (pg_getnameinfo_all(&be->st_clientaddr.addr, be->st_clientaddr.salen,
										   host, sizeof(host), NULL, 0,
										   NI_NUMERICHOST | NI_NUMERICSERV) == 0)
					{
						clean_ipv6_addr(be->st_clientaddr.addr.ss_family, host);
						values[5] = DirectFunctionCall1(inet_in, CStringGetDatum(host));
						nulls[5] = false;
					}
				}
				values[6] = TimestampTzGetDatum(be->st_proc_start_timestamp);
				nulls[6] = false;
			}
			if (!granted && inst->waitStart != 0)
			{
				values[7] = TimestampTzGetDatum(inst->waitStart);
				nulls[7] = false;
			}
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/*
 * CoordCommonInit's part: the session cap's GUC, and the transaction
 * callbacks that release in-flight locks and settle holds.
 */
void
CoordCommonLockInit(void)
{
	DefineCustomIntVariable("coord.max_locks_per_session",
							"The most lock-table entries one session holds through pg_coord, its current "
							"transaction's included.",
							"Counts every pg_coord lock, session or transaction level: path locks (one per path and "
							"one per ancestor), name registrations, requests, session-bound claims, limit keys, "
							"permits, idle marks; 0 means no limit.  Keep it well below "
							"max_locks_per_transaction * (max_connections + max_prepared_transactions).",
							&coord_max_locks_per_session,
							1000, 0, INT_MAX / 2,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	RegisterXactCallback(CommonXactCallback, NULL);
	RegisterSubXactCallback(CommonSubXactCallback, NULL);
}
