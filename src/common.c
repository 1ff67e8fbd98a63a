/*-------------------------------------------------------------------------
 * common.c
 *		Helpers shared by every pg_coord concern.
 *
 * Argument checks raise the contract's SQLSTATEs (22004 for a NULL where a
 * value is required, 22023 for a malformed value).  SPI work runs as the
 * owner of schema coord with SECURITY_RESTRICTED_OPERATION, so the tables
 * behind the functions need no grants to callers, and every statement names
 * its objects and operators with a schema, so the caller's search_path can
 * never substitute objects of its own.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "common/ip.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inet.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "common.h"
#include "compat.h"

/* Seed of the name hash; changing it would move every lock to a new key. */
#define COORD_NAME_HASH_SEED	UINT64CONST(0x636f6f72645f7631)

/*
 * CoordRequireArg raises 22004 when a required argument is NULL.  The SQL
 * functions are not STRICT so that a NULL gets an error, never a silent NULL.
 */
void
CoordRequireArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
}

/*
 * CoordIntervalToMicroseconds turns a duration argument into microseconds,
 * counting a month as 30 days as PostgreSQL does for interval arithmetic.
 */
int64
CoordIntervalToMicroseconds(const Interval *span, const char *argname, bool allow_zero)
{
	int64		days;
	int64		usec;

	days = (int64) span->month * DAYS_PER_MONTH + span->day;
	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &usec) ||
		pg_add_s64_overflow(usec, span->time, &usec))
		ereport(ERROR,
				(errcode(ERRCODE_INTERVAL_FIELD_OVERFLOW),
				 errmsg("%s is out of range", argname)));
	if (usec < 0 || (usec == 0 && !allow_zero))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s", argname,
						allow_zero ? "zero or positive" : "positive"),
				 errdetail("The value given was %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(span))))));
	return usec;
}

/*
 * PathForMessage clips a path so that an error message stays readable.
 */
static const char *
PathForMessage(const char *path, int len)
{
	int			clip;

	if (len <= 80)
		return path;
	clip = pg_mbcliplen(path, len, 80);
	return psprintf("%.*s...", clip, path);
}

static void
InvalidPath(const char *path, int len, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid lock path \"%s\"", PathForMessage(path, len)),
			 errdetail("%s", detail),
			 errhint("A lock path looks like \"/component/batch-7\": it starts with \"/\" and has non-empty segments separated by \"/\".")));
}

/*
 * CoordParsePath validates a lock path and computes the name key of the path
 * and of each ancestor.  The rules are those of ZooKeeper node paths.
 */
void
CoordParsePath(text *path_text, CoordPath *out)
{
	char	   *path = text_to_cstring(path_text);
	int			len = strlen(path);
	int			seg_start;
	int			i;

	out->path = path;
	out->len = len;
	out->depth = 0;

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock path must not be empty"),
				 errhint("A lock path looks like \"/component/batch-7\".")));
	if (len > COORD_PATH_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock path is too long"),
				 errdetail("A lock path has at most %d bytes; this one has %d.",
						   COORD_PATH_MAX_BYTES, len)));
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) path[i];

		/* C0 controls, DEL, and in UTF-8 the C1 controls U+0080..U+009F */
		if (c < 0x20 || c == 0x7f ||
			(c == 0xc2 && i + 1 < len && (unsigned char) path[i + 1] >= 0x80 &&
			 (unsigned char) path[i + 1] <= 0x9f && GetDatabaseEncoding() == PG_UTF8))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid lock path"),
					 errdetail("A lock path must not contain control characters (byte %d is 0x%02x).",
							   i + 1, c)));
	}
	if (path[0] != '/')
		InvalidPath(path, len, "A lock path must start with \"/\".");
	if (len == 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot lock the root path \"/\""),
				 errdetail("The root is the parent of every path and takes no locks."),
				 errhint("Lock a path below it, such as \"/app\".")));
	if (path[len - 1] == '/')
		InvalidPath(path, len, "A lock path must not end with \"/\".");

	seg_start = 1;
	for (i = 1; i <= len; i++)
	{
		int			seglen;

		if (i < len && path[i] != '/')
			continue;
		seglen = i - seg_start;
		if (seglen == 0)
			InvalidPath(path, len, "A lock path must not contain an empty segment (\"//\").");
		if ((seglen == 1 && path[seg_start] == '.') ||
			(seglen == 2 && path[seg_start] == '.' && path[seg_start + 1] == '.'))
			InvalidPath(path, len, "A lock path must not contain \".\" or \"..\" segments.");
		if (out->depth >= COORD_PATH_MAX_DEPTH)
			InvalidPath(path, len, psprintf("A lock path has at most %d segments.",
											COORD_PATH_MAX_DEPTH));
		out->ends[out->depth] = i;
		out->keys[out->depth] = CoordNameKey(path, i);
		out->depth++;
		seg_start = i + 1;
	}
}

/*
 * CoordNameKey is the 64-bit name key of a path (or of any other name).
 * hash_bytes_extended is stable across platforms and releases (hash
 * partitioning stores its results), so keys can be kept in tables.
 */
uint64
CoordNameKey(const char *name, int len)
{
	return hash_bytes_extended((const unsigned char *) name, len, COORD_NAME_HASH_SEED);
}

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
 */
static LOCKTAG inflight_tags[COORD_PATH_MAX_DEPTH];
static LOCKMODE inflight_modes[COORD_PATH_MAX_DEPTH];
static int	n_inflight = 0;

static void
ReleaseInflight(void)
{
	while (n_inflight > 0)
	{
		n_inflight--;
		LockRelease(&inflight_tags[n_inflight], inflight_modes[n_inflight], true);
		CoordLockReleased(&inflight_tags[n_inflight], inflight_modes[n_inflight]);
	}
}

/*
 * The per-session cap on lock-manager entries (coord.max_locks_per_session).
 * PostgreSQL's lock table is shared by the whole cluster and sized by
 * max_locks_per_transaction; a session that fills it makes every other
 * session, in every database, fail with 53200 (and new connections fail).
 * So pg_coord counts the path, registry, request and claim locks it takes
 * and refuses with 53400 before a session holds more than the cap.
 *
 * The count is an upper bound kept cheaply: +1 for each lock the lock
 * manager newly grants, -1 when one is let go through pg_coord, the
 * transaction-level ones subtracted at the end of the transaction.  What it
 * misses (locks released by pg_advisory_unlock_all or DISCARD ALL, or by the
 * abort of a subtransaction) only makes it too high; when it reaches the
 * cap, it is replaced by an exact count of this backend's entries in the
 * lock table before anything is refused.
 */
static int	coord_max_locks_per_session = 1000;
static int	coord_nlocks = 0;		/* held by this session, an upper bound */
static int	coord_nxact = 0;		/* of those, transaction-level ones */

/* Is tag one of the namespaces the cap counts? */
static inline bool
CountedTag(const LOCKTAG *tag)
{
	return tag->locktag_type == LOCKTAG_ADVISORY &&
		tag->locktag_lockmethodid == USER_LOCKMETHOD &&
		(tag->locktag_field4 == COORD_NS_PATH ||
		 tag->locktag_field4 == COORD_NS_REGISTRY ||
		 tag->locktag_field4 == COORD_NS_REQUEST ||
		 tag->locktag_field4 == COORD_NS_JOB);
}

/* Exact count: this backend's entries of the counted namespaces in the lock table. */
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
			n++;
	}
	return n;
}

/*
 * CoordLockBudget raises 53400 unless this session may take nnew more
 * counted locks.
 */
void
CoordLockBudget(int nnew)
{
	int			held;

	if (coord_max_locks_per_session <= 0 || nnew <= 0 ||
		coord_nlocks + nnew <= coord_max_locks_per_session)
		return;
	held = CountHeldLocks();
	coord_nxact = Min(coord_nxact, held);
	coord_nlocks = held;
	if (held + nnew <= coord_max_locks_per_session)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("this session holds too many pg_coord locks"),
			 errdetail("It holds %d entries of the lock table through pg_coord and would need %d more; "
					   "coord.max_locks_per_session is %d.",
					   held, nnew, coord_max_locks_per_session),
			 errhint("Release locks, claims or requests first (each path also locks its ancestors), "
					 "or ask a superuser to raise coord.max_locks_per_session together with "
					 "max_locks_per_transaction.")));
}

/* CoordLockCounted notes a lock the lock manager answered r for. */
void
CoordLockCounted(const LOCKTAG *tag, LockAcquireResult r, bool session)
{
	if (r != LOCKACQUIRE_OK || !CountedTag(tag))
		return;
	coord_nlocks++;
	if (!session)
		coord_nxact++;
}

/* CoordLockReleased notes that a counted lock may have been let go. */
void
CoordLockReleased(const LOCKTAG *tag, LOCKMODE mode)
{
	if (coord_nlocks > 0 && CountedTag(tag) && !CoordLockHeldByMe(tag, mode))
		coord_nlocks--;
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
		LockRelease(&tag, ExclusiveLock, true);
		CoordLockReleased(&tag, ExclusiveLock);
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
			LockRelease(&h->tag, ExclusiveLock, true);
			CoordLockReleased(&h->tag, ExclusiveLock);
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

/* The owner of schema coord, looked up once per backend (CoordOwnerId). */
static Oid	owner_cache = InvalidOid;

/*
 * Any change to pg_namespace (ALTER SCHEMA OWNER, DROP EXTENSION) or to
 * pg_proc (ALTER EXTENSION UPDATE re-creates functions) forgets it, and with
 * it the catalog version check.
 */
static void
OwnerCacheInval(Datum arg, int cacheid, uint32 hashvalue)
{
	owner_cache = InvalidOid;
}

/* The OID of role coord_admin (InvalidOid: none), looked up once per backend. */
static Oid	admin_role = InvalidOid;
static bool admin_role_valid = false;

/* Any change to pg_authid (CREATE, DROP, ALTER ROLE ... RENAME) forgets it. */
static void
AdminRoleInval(Datum arg, int cacheid, uint32 hashvalue)
{
	admin_role_valid = false;
}

/*
 * CoordAdminRoleId returns the OID of role coord_admin, or InvalidOid when
 * there is none.  Completions, failures and heartbeats ask on every call.
 */
Oid
CoordAdminRoleId(void)
{
	if (!admin_role_valid)
	{
		admin_role = get_role_oid("coord_admin", true);
		admin_role_valid = true;
	}
	return admin_role;
}

void
CoordCommonInit(void)
{
	DefineCustomIntVariable("coord.max_locks_per_session",
							"The most lock-table entries one session may hold through pg_coord.",
							"Counts path locks (one per path and one per ancestor), name registrations, "
							"requests and claims; 0 means no limit.  Keep it well below "
							"max_locks_per_transaction * (max_connections + max_prepared_transactions).",
							&coord_max_locks_per_session,
							1000, 0, INT_MAX / 2,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	RegisterXactCallback(CommonXactCallback, NULL);
	RegisterSubXactCallback(CommonSubXactCallback, NULL);
	CacheRegisterSyscacheCallback(NAMESPACEOID, OwnerCacheInval, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, OwnerCacheInval, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, AdminRoleInval, (Datum) 0);
}

static inline void
NoteInflight(const LOCKTAG *tag, LOCKMODE mode)
{
	Assert(n_inflight < COORD_PATH_MAX_DEPTH);
	inflight_tags[n_inflight] = *tag;
	inflight_modes[n_inflight] = mode;
	n_inflight++;
}

/*
 * CoordReleaseTags releases tags[0 .. n) in reverse order.
 */
void
CoordReleaseTags(const LOCKTAG *tags, const LOCKMODE *modes, int n, bool session)
{
	locks_in_xact = true;
	while (n-- > 0)
	{
		LockRelease(&tags[n], modes[n], session);
		CoordLockReleased(&tags[n], modes[n]);
	}
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
				r = LockAcquire(&tags[i], modes[i], session, false);
				AtEOXact_GUC(true, nest);
			}
			else
				r = LockAcquire(&tags[i], modes[i], session, false);
			CoordLockCounted(&tags[i], r, session);
			if (session)
				NoteInflight(&tags[i], modes[i]);
		}
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
	if (timeout_us > 0)
		ok = AcquireWithTimeout(tags, modes, n, session, timeout_us);
	else
	{
		for (i = 0; i < n; i++)
		{
			LockAcquireResult r = LockAcquire(&tags[i], modes[i], session, timeout_us == 0);

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

/* "a.b.c" -> a * 1000000 + b * 1000 + c; -1 when it is not of that form */
static int64
VersionNumber(const char *v)
{
	int			a,
				b,
				c;
	char		rest;

	if (sscanf(v, "%d.%d.%d%c", &a, &b, &c, &rest) != 3 || a < 0 || b < 0 || c < 0)
		return -1;
	return (int64) a * 1000000 + (int64) b * 1000 + c;
}

/*
 * CheckCatalogVersion makes sure that the pg_coord catalog of this database
 * is the one this library serves: the library's statements name the tables
 * and columns of its own version, and meeting another version's catalog
 * would give wrong results or cryptic errors (the library is shared by
 * every database of the installation, and `make install` of a new release
 * replaces it before anyone runs ALTER EXTENSION UPDATE).  Returns false,
 * and the caller caches nothing, while the extension's own script runs.
 */
static bool
CheckCatalogVersion(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *catalog = NULL;
	Oid			extoid = InvalidOid;
	int64		have,
				want;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("pg_coord"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		extoid = ((Form_pg_extension) GETSTRUCT(tup))->oid;
		if (!isnull)
			catalog = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (!OidIsValid(extoid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"pg_coord\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION pg_coord.")));
	/* CREATE or ALTER EXTENSION pg_coord: its script sets the catalog up */
	if (creating_extension && CurrentExtensionObject == extoid)
		return false;
	if (catalog != NULL && strcmp(catalog, COORD_VERSION) == 0)
		return true;

	have = catalog ? VersionNumber(catalog) : -1;
	want = VersionNumber(COORD_VERSION);
	if (have >= 0 && have < want)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_coord's catalog in this database is at version %s, but the installed library is version %s",
						catalog, COORD_VERSION),
				 errdetail("The library serves only the catalog of its own version."),
				 errhint("Run ALTER EXTENSION pg_coord UPDATE.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("pg_coord's catalog in this database is at version %s, but the installed library is version %s",
					catalog ? catalog : "(none)", COORD_VERSION),
			 errdetail("The library serves only the catalog of its own version; this catalog is newer."),
			 errhint("Install the library of pg_coord %s (make install of that release) and reconnect.",
					 catalog ? catalog : "(none)")));
	return false;				/* not reached */
}

/*
 * CoordOwnerId returns the owner of schema coord, which the install script
 * creates, so it is the role that installed the extension.  Cached until
 * pg_namespace or pg_proc changes: every call of every function asks.  The
 * first lookup also checks that the catalog is of the library's version
 * (CheckCatalogVersion), so a library never serves a catalog it cannot.
 */
Oid
CoordOwnerId(void)
{
	Oid			nspid;
	HeapTuple	tup;
	Oid			owner;
	bool		cache;

	if (OidIsValid(owner_cache))
		return owner_cache;
	cache = CheckCatalogVersion();
	nspid = get_namespace_oid(COORD_SCHEMA, true);

	if (!OidIsValid(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema \"%s\" does not exist", COORD_SCHEMA),
				 errhint("Run CREATE EXTENSION pg_coord in this database.")));
	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nspid);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	if (cache)
		owner_cache = owner;
	return owner;
}

/*
 * CoordBecomeOwner switches to the extension owner for SPI work: the one
 * owner switch, which every statement pg_coord runs as the owner goes
 * through.  Three things change together:
 *
 * - the user becomes the owner of schema coord;
 * - SECURITY_RESTRICTED_OPERATION keeps the owner's rights from being used
 *   for anything but our own statements (no SET ROLE, no temp objects);
 * - search_path is pinned to "pg_catalog, pg_temp" in a GUC nest level of
 *   its own, as a function's SET clause would do.  Without it, a name in
 *   statement text would be resolved through the caller's search_path, and
 *   the caller's temporary schema is searched first for types and
 *   relations: a temporary domain named "jsonb" whose CHECK calls the
 *   caller's function would run that function as the owner.  pg_temp is
 *   named last so that it cannot come first.  Statement texts also name
 *   every object with its schema (test/static/qualified.py checks it).
 *
 * CoordRestoreUser undoes all three.  An error undoes them through
 * (sub)transaction abort, which restores the user id and pops GUC nest
 * levels.  A nested switch (a finish hook inside a completion) finds the
 * path pinned already and leaves the GUC alone: setting it costs a
 * recomputation of the namespace search path on each side.
 */
void
CoordBecomeOwner(CoordUserSwitch *sw)
{
	GetUserIdAndSecContext(&sw->save_userid, &sw->save_sec_context);
	SetUserIdAndSecContext(CoordOwnerId(),
						   sw->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (namespace_search_path != NULL &&
		strcmp(namespace_search_path, COORD_OWNER_SEARCH_PATH) == 0)
		sw->save_nestlevel = 0;
	else
	{
		sw->save_nestlevel = NewGUCNestLevel();
		(void) set_config_option("search_path", COORD_OWNER_SEARCH_PATH,
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
}

void
CoordRestoreUser(const CoordUserSwitch *sw)
{
	if (sw->save_nestlevel > 0)
		AtEOXact_GUC(true, sw->save_nestlevel);
	SetUserIdAndSecContext(sw->save_userid, sw->save_sec_context);
}

/*
 * CoordSpiText copies a C string into a text in the caller's memory, which
 * outlives SPI_finish.  Call it between SPI_connect and SPI_finish.
 */
text *
CoordSpiText(const char *s)
{
	Size		len = strlen(s);
	text	   *t = (text *) SPI_palloc(VARHDRSZ + len);

	SET_VARSIZE(t, VARHDRSZ + len);
	memcpy(VARDATA(t), s, len);
	return t;
}

/*
 * CoordNotInParallel comes first in every function that changes state or
 * takes locks, before any lock, SPI or cache work (only argument fetching
 * and checks in declarations precede it).  Reached from a parallel worker
 * (a caller's function wrongly marked PARALLEL SAFE under
 * force_parallel_mode, debug_parallel_query from PostgreSQL 16), its locks
 * would belong to a process that is about to exit, and its writes are
 * refused by the core, some only as an internal error (XX000) deep inside;
 * refuse it up front, with the SQLSTATE the core uses for writes in
 * parallel mode.  One test per call: cheap enough for claims.
 */
void
CoordNotInParallel(FunctionCallInfo fcinfo)
{
	char	   *name = NULL;

	if (likely(!IsInParallelMode()))
		return;
	if (fcinfo->flinfo != NULL)
		name = get_func_name(fcinfo->flinfo->fn_oid);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
			 errmsg("cannot call %s%s during a parallel operation",
					name ? "coord." : "a pg_coord function", name ? name : ""),
			 errdetail("pg_coord's functions that change state or take locks run only in the session's own backend."),
			 errhint("Do not mark a function that calls it PARALLEL SAFE.")));
}

/*
 * Backend-local caches.  Each lives in a memory context of its own under
 * "pg_coord caches" (visible in pg_backend_memory_contexts), so that a
 * cache is forgotten by resetting its context, never by freeing pieces, and
 * nothing of pg_coord's is allocated in TopMemoryContext directly.
 */
static MemoryContext cache_parent = NULL;

/*
 * CoordCacheContext returns the context *cxt, made on first use as a child
 * of "pg_coord caches"; NULL cxt: that parent itself.  name must be a
 * string constant (contexts keep the pointer).  Reset the context to forget
 * what the cache holds.
 */
MemoryContext
CoordCacheContext(MemoryContext *cxt, const char *name)
{
	if (cache_parent == NULL)
		cache_parent = AllocSetContextCreate(TopMemoryContext, "pg_coord caches",
											 ALLOCSET_SMALL_SIZES);
	if (cxt == NULL)
		return cache_parent;
	if (*cxt == NULL)
		*cxt = AllocSetContextCreateInternal(cache_parent, name, ALLOCSET_SMALL_SIZES);
	return *cxt;
}

/*
 * CoordLocalHashIn makes a backend-local hash table in cxt on first use
 * (dynahash gives it a context of its own below cxt, so resetting cxt
 * destroys it: set *table to NULL then).  flags: HASH_BLOBS or HASH_STRINGS.
 */
HTAB *
CoordLocalHashIn(HTAB **table, MemoryContext cxt, const char *name, Size keysize,
				 Size entrysize, int flags)
{
	if (*table == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = keysize;
		ctl.entrysize = entrysize;
		ctl.hcxt = cxt;
		*table = hash_create(name, 16, &ctl, HASH_ELEM | HASH_CONTEXT | flags);
	}
	return *table;
}

/* CoordLocalHash: a cache whose entries hold no pointers, under "pg_coord caches". */
HTAB *
CoordLocalHash(HTAB **table, const char *name, Size keysize, Size entrysize, int flags)
{
	if (*table != NULL)
		return *table;
	return CoordLocalHashIn(table, CoordCacheContext(NULL, NULL), name, keysize, entrysize, flags);
}

/*
 * CoordPlan returns the saved plan in *slot, preparing and keeping it on
 * first use.  Must be called between SPI_connect and SPI_finish.  Saved plans
 * are revalidated by the plan cache after DDL, so they survive a DROP and
 * CREATE EXTENSION in the same backend.
 */
SPIPlanPtr
CoordPlan(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes)
{
	if (*slot == NULL)
	{
		/*
		 * Generic plans only: every statement here is a short index lookup
		 * whose plan does not depend on its parameters, and a custom plan
		 * would be planned anew on every call.
		 */
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, (Oid *) argtypes, CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s",
				 sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*slot = plan;
	}
	return *slot;
}

/*
 * CoordPlanGeneration returns the generation of a saved plan's generic plan
 * when the next execution will use it as it is, or -1 when it will plan
 * first (not planned yet, invalidated, transient, or made for another
 * search_path or role).  Callers that steer planning with settings set them
 * only then, and compare generations after the execution to catch a replan
 * that an invalidation arriving in between caused.
 */
int
CoordPlanGeneration(SPIPlanPtr plan)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);
	CachedPlanSource *ps;

	if (list_length(sources) != 1)
		return -1;
	ps = (CachedPlanSource *) linitial(sources);
	if (!ps->is_valid || ps->gplan == NULL || !ps->gplan->is_valid ||
		TransactionIdIsValid(ps->gplan->saved_xmin) ||
		(ps->search_path != NULL && !CoordSearchPathMatches(ps->search_path)) ||
		(ps->gplan->dependsOnRole && ps->gplan->planRoleId != GetUserId()))
		return -1;
	return ps->generation;
}

/* Queue and host names become NOTIFY channels: a short, plain alphabet. */
char *
CoordNameArg(FunctionCallInfo fcinfo, int argno, const char *what, bool nullable)
{
	char	   *name;
	int			len;
	int			i;

	if (nullable && PG_ARGISNULL(argno))
		return NULL;
	CoordRequireArg(fcinfo, argno, what);
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	len = strlen(name);
	if (len == 0 || len > COORD_NAME_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s name must have 1 to %d bytes", what, COORD_NAME_MAX)));
	for (i = 0; i < len; i++)
	{
		char		c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-' || c == '.' || c == ':' || c == '/'))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid %s name \"%s\"", what, name),
					 errdetail("Such a name has only letters, digits and the characters _ - . : /.")));
	}
	return name;
}

Jsonb *
CoordCheckPayload(Jsonb *payload)
{
	if (VARSIZE(payload) > COORD_PAYLOAD_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("job payload is too large"),
				 errdetail("A payload has at most %d bytes; this one has %d.",
						   COORD_PAYLOAD_MAX_BYTES, (int) VARSIZE(payload)),
				 errhint("Store large data in a table and put its key in the payload.")));
	return payload;
}

/*
 * CoordCheckSize raises 54000 when a value a caller stores (what: "job
 * result", ...) has more than max bytes.
 */
void
CoordCheckSize(const char *what, Size size, Size max)
{
	if (size > max)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is too large", what),
				 errdetail("A %s has at most %zu bytes; this one has %zu.", what, max, size),
				 errhint("Store large data in a table and refer to it by its key.")));
}

/* CoordSpiCheck raises a can't-happen error when an SPI call did not do what it must. */
void
CoordSpiCheck(int rc, int expected, const char *what)
{
	if (rc != expected)
		elog(ERROR, "%s failed: %s", what, SPI_result_code_string(rc));
}

/*
 * CoordIsolated runs fn(arg) in a subtransaction, so that one broken
 * definition (an app, a schedule) cannot stop the work of the others in a
 * tick, nor the completion of the job whose finish hook reached it.  Returns
 * NULL when fn succeeded; otherwise its error, copied into the caller's
 * memory context, after rolling the subtransaction back.
 *
 * Call it inside SPI and the owner switch: the subtransaction starts as the
 * owner with search_path pinned, and its abort restores exactly that (the
 * user id saved at its start, the GUC nest levels from its own up), while
 * the SPI connection survives (AtEOSubXact_SPI frees only what the
 * subtransaction made).  Errors that are not the definition's fault are
 * raised again after the rollback, so a cancel, statement_timeout or
 * shutdown still ends the call, and a deadlock, serialization failure, lock
 * timeout or exhausted resource still fails it (the caller retries later):
 * SQLSTATE classes 40, 53, 57 and 58, and 55P03.
 */
ErrorData *
CoordIsolated(CoordIsolatedFn fn, void *arg)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;
	Oid			userid;
	int			sec_context;
	bool		pinned = namespace_search_path != NULL &&
		strcmp(namespace_search_path, COORD_OWNER_SEARCH_PATH) == 0;

	GetUserIdAndSecContext(&userid, &sec_context);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	if (edata != NULL)
	{
		int			category = ERRCODE_TO_CATEGORY(edata->sqlerrcode);
		Oid			now_userid;
		int			now_sec_context;

		/* the rollback must have left the owner switch as it found it */
		GetUserIdAndSecContext(&now_userid, &now_sec_context);
		if (now_userid != userid || now_sec_context != sec_context ||
			(pinned && strcmp(namespace_search_path, COORD_OWNER_SEARCH_PATH) != 0))
			elog(ERROR, "the owner switch did not survive a subtransaction abort");

		if (category == ERRCODE_TRANSACTION_ROLLBACK ||
			category == ERRCODE_INSUFFICIENT_RESOURCES ||
			category == ERRCODE_OPERATOR_INTERVENTION ||
			category == ERRCODE_SYSTEM_ERROR ||
			edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
	}
	return edata;
}

/*
 * CoordTimeAdd is t + usec, or 22008 when that is outside the timestamptz
 * range: nothing pg_coord stores may be a time PostgreSQL cannot read back
 * (or restore from a dump).  what names the time in the message.
 */
TimestampTz
CoordTimeAdd(TimestampTz t, int64 usec, const char *what)
{
	TimestampTz r;

	if (TIMESTAMP_NOT_FINITE(t) || pg_add_s64_overflow(t, usec, &r) || !IS_VALID_TIMESTAMP(r))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range", what),
				 errdetail("It would lie outside the range of timestamp with time zone.")));
	return r;
}
