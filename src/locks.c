/*-------------------------------------------------------------------------
 * locks.c
 *		Named hierarchical locks on PostgreSQL's lock manager (docs/locks.md):
 *		coord.lock and its kin (try_, xact_ and unlock forms, lock_all), the
 *		name registry (coord.lock_names), fencing tokens (coord.fence,
 *		coord.fence_ok) and the tick's share (CoordLocksTick).
 *
 * A path /a/b/c is one advisory lock tag per prefix, in namespace
 * COORD_NS_PATH, taken in the IS/IX/S/X modes of multi-granularity locking.
 * Lock order: ancestors first, from the root down, then the path; release
 * in the reverse order (coord.lock_all: one total order, of which each
 * path's is a part).  Waiters sleep in the lock manager; nothing of ours
 * wakes them.  Every function that takes a lock refuses during recovery
 * (25006), and the intention locks of a call that fails are released by
 * CoordAcquire's abort callback (common_lock.c).
 *
 * A path's fencing tokens only grow, and coord.fence_ok holds the path's
 * fence row until its transaction ends, so a new token waits for every
 * transaction still writing under the old one.
 *
 * Tags, modes, where locks work, fencing, the lock order, names, retention
 * and error safety: src/README.md, "Locks (locks.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "common/common.h"
#include "compat.h"

#define MODE_IS		RowShareLock
#define MODE_IX		RowExclusiveLock
#define MODE_S		ShareLock
#define MODE_X		ExclusiveLock

/* coord.lock_all: paths at once, at most (each takes up to 64 tags) */
#define COORD_LOCK_ALL_MAX_PATHS	10000

/* A session lock this backend holds through pg_coord, with its count. */
typedef struct HeldKey
{
	uint64		key;
	uint32		shared;
} HeldKey;

typedef struct HeldEntry
{
	HeldKey		hk;				/* hash key: must be first */
	int64		count;
	CoordPath  *path;			/* in held_cxt */
} HeldEntry;

/* A name this backend has checked against the registry. */
typedef struct NameEntry
{
	uint64		key;			/* hash key: must be first */
	char	   *path;			/* in names_cxt */
} NameEntry;

/* A name to check, gathered before one registry round trip. */
typedef struct PendingName
{
	uint64		key;
	const char *path;
	int			len;
} PendingName;

static bool coord_register_lock_names = true;

/*
 * Each cache lives in a context of its own (common_spi.c), which holds its
 * hash table and the strings its entries point to: forgetting a cache is
 * one reset of its context.
 */
static MemoryContext held_cxt = NULL;
static HTAB *held_locks = NULL;
static MemoryContext names_cxt = NULL;
static HTAB *known_names = NULL;
static bool names_inserted_in_xact = false;

/*
 * coord.lock_names, resolved when a name is first remembered; a relcache
 * invalidation of it (or of every relation) marks the cache stale, and the
 * next registration forgets it.  The callback only sets the flag: it may
 * run inside a registration's SPI call.
 */
static Oid	lock_names_relid = InvalidOid;
static bool names_stale = false;

static SPIPlanPtr plan_names_select = NULL;
static SPIPlanPtr plan_names_insert = NULL;
static SPIPlanPtr plan_fence = NULL;
static SPIPlanPtr plan_fence_ok = NULL;
static SPIPlanPtr plan_fence_ok_lock = NULL;

PG_FUNCTION_INFO_V1(coord_lock);
PG_FUNCTION_INFO_V1(coord_purge_lock_names);
PG_FUNCTION_INFO_V1(coord_try_lock);
PG_FUNCTION_INFO_V1(coord_unlock);
PG_FUNCTION_INFO_V1(coord_unlock_all);
PG_FUNCTION_INFO_V1(coord_xact_lock);
PG_FUNCTION_INFO_V1(coord_try_xact_lock);
PG_FUNCTION_INFO_V1(coord_lock_first);
PG_FUNCTION_INFO_V1(coord_lock_all);
PG_FUNCTION_INFO_V1(coord_fence);
PG_FUNCTION_INFO_V1(coord_fence_ok);
PG_FUNCTION_INFO_V1(coord_lock_status);
PG_FUNCTION_INFO_V1(coord_path_key);

static inline LOCKMODE
LevelMode(const CoordPath *p, int level, bool shared)
{
	if (level == p->depth - 1)
		return shared ? MODE_S : MODE_X;
	return shared ? MODE_IS : MODE_IX;
}

/* ---------- in-flight session locks and transaction callbacks ---------- */

static void
ForgetNames(void)
{
	if (known_names != NULL)
	{
		MemoryContextReset(names_cxt);
		known_names = NULL;
	}
}

static void
NamesRelcacheInval(Datum arg, Oid relid)
{
	if (relid == InvalidOid || (OidIsValid(lock_names_relid) && relid == lock_names_relid))
	{
		names_stale = true;
		lock_names_relid = InvalidOid;
	}
}

static Oid
LockNamesRelid(void)
{
	if (!OidIsValid(lock_names_relid))
	{
		lock_names_relid = get_relname_relid("lock_names",
											 get_namespace_oid(COORD_SCHEMA, false));
		if (!OidIsValid(lock_names_relid))
			elog(ERROR, "coord.lock_names does not exist");
	}
	return lock_names_relid;
}

static void
LocksXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* names inserted by this transaction are gone again */
			if (names_inserted_in_xact)
				ForgetNames();
			names_inserted_in_xact = false;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			names_inserted_in_xact = false;
			break;
		default:
			break;
	}
}

static void
LocksSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && names_inserted_in_xact)
		ForgetNames();
}

void
CoordLocksInit(void)
{
	DefineCustomBoolVariable("coord.register_lock_names",
							 "Records each lock path in coord.lock_names at first use.",
							 "The registry lets coord.locks show paths and refuses two paths "
							 "that share a name key.  Without it coord.locks shows keys.",
							 &coord_register_lock_names,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	RegisterXactCallback(LocksXactCallback, NULL);
	RegisterSubXactCallback(LocksSubXactCallback, NULL);
	CacheRegisterRelcacheCallback(NamesRelcacheInval, (Datum) 0);
}

/* ---------- the name registry ---------- */

static void
CollisionError(const char *path, int len, const char *registered, uint64 key)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("lock path \"%.*s\" collides with registered path \"%s\"",
					len, path, registered),
			 errdetail("Both paths have the name key %lld; pg_coord refuses to let two paths share one lock.",
					   (long long) (int64) key),
			 errhint("Rename one of the paths, or delete the row of the path that is no longer used from coord.lock_names.")));
}

static void
RememberName(uint64 key, const char *path, int len)
{
	NameEntry  *e;
	bool		found;

	(void) LockNamesRelid();	/* for NamesRelcacheInval */
	CoordLocalHashIn(&known_names, CoordCacheContext(&names_cxt, "pg_coord lock names"),
					 "pg_coord lock names", sizeof(uint64), sizeof(NameEntry), HASH_BLOBS);
	e = hash_search(known_names, &key, HASH_ENTER, &found);
	if (!found)
	{
		e->path = MemoryContextAlloc(names_cxt, len + 1);
		memcpy(e->path, path, len);
		e->path[len] = '\0';
	}
}

/*
 * CheckRegistered looks rows up for the pending names in one statement,
 * remembers the ones that match and raises a collision for any that does
 * not.  Returns how many pending names are still unregistered, moved to the
 * front of the array.
 */
static int
CheckRegistered(PendingName *pending, int n)
{
	Datum	   *keys = palloc(sizeof(Datum) * n);
	Datum		args[1];
	Oid			argtypes[1] = {INT8ARRAYOID};
	int			i;
	int			left = 0;
	uint64		r;

	for (i = 0; i < n; i++)
		keys[i] = Int64GetDatum((int64) pending[i].key);
	args[0] = PointerGetDatum(construct_array(keys, n, INT8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
	CoordExec(&plan_names_select,
			  "SELECT key, path FROM coord.lock_names "
			  "WHERE key OPERATOR(pg_catalog.=) ANY ($1)",
			  1, argtypes, args, NULL, SPI_OK_SELECT, "reading coord.lock_names");

	for (i = 0; i < n; i++)
	{
		bool		found = false;

		for (r = 0; r < SPI_processed; r++)
		{
			bool		isnull;
			int64		k = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r],
														SPI_tuptable->tupdesc, 1, &isnull));

			if ((uint64) k == pending[i].key)
			{
				char	   *reg = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2);

				if ((int) strlen(reg) != pending[i].len ||
					memcmp(reg, pending[i].path, pending[i].len) != 0)
					CollisionError(pending[i].path, pending[i].len, reg, pending[i].key);
				RememberName(pending[i].key, pending[i].path, pending[i].len);
				found = true;
				break;
			}
		}
		if (!found)
			pending[left++] = pending[i];
	}
	return left;
}

/*
 * RegistryKeyTake try-locks a name's registry key (held until the end of
 * the transaction).  On the caller's second try (retry), once it holds its
 * path lock, a registrar whose transaction has ended may not have released
 * the key yet: its abort released the path lock that woke us first (the
 * order is the lock manager's).  Wait for that moment rather than leave the
 * name out; a registrar still running is never waited for.
 */
static bool
RegistryKeyTake(const LOCKTAG *tag, bool retry, LockAcquireResult *res)
{
	for (;;)
	{
		VirtualTransactionId *holders;
		bool		ending = true;

		*res = LockAcquire(tag, ExclusiveLock, false, true);
		if (*res != LOCKACQUIRE_NOT_AVAIL)
			return true;
		if (!retry)
			return false;
		holders = GetLockConflicts(tag, ExclusiveLock, NULL);
		for (; VirtualTransactionIdIsValid(*holders); holders++)
		{
			if (!VirtualXactLock(*holders, false))
			{
				ending = false;
				break;
			}
		}
		if (!ending)
			return false;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(1000L);
	}
}

/*
 * RegisterNames makes sure every prefix of the given paths is in the
 * registry, checking for collisions.  Names already checked by this backend
 * cost one hash lookup.  Returns true when a name was left out because
 * another transaction was registering it at that moment: the caller tries
 * again once it holds its lock, by which time that transaction has usually
 * ended (it may have rolled back, taking its row with it).
 *
 * Nothing is inserted in read-only transactions (on a standby the lock is
 * refused afterwards anyway), or under REPEATABLE READ or SERIALIZABLE,
 * whose snapshot may not see a row another session registered since (the
 * insert would then fail to serialize).
 *
 * retry: the caller's second try, once it holds its lock (see
 * RegistryKeyTake).
 */
static bool
RegisterNames(CoordPath **paths, int npaths, bool retry)
{
	bool		busy = false;
	PendingName *pending = NULL;
	int			npending = 0;
	int			maxpending = 0;
	int			i,
				j;
	CoordUserSwitch sw;

	if (names_stale)
	{
		/* purged elsewhere (or every relation invalidated): check them again */
		ForgetNames();
		names_stale = false;
	}
	for (i = 0; i < npaths; i++)
	{
		CoordPath  *p = paths[i];

		for (j = 0; j < p->depth; j++)
		{
			NameEntry  *e = NULL;

			if (known_names)
				e = hash_search(known_names, &p->keys[j], HASH_FIND, NULL);
			if (e != NULL)
			{
				if ((int) strlen(e->path) != p->ends[j] ||
					memcmp(e->path, p->path, p->ends[j]) != 0)
					CollisionError(p->path, p->ends[j], e->path, p->keys[j]);
				continue;
			}
			if (!coord_register_lock_names)
				continue;
			if (npending == maxpending)
			{
				maxpending = Max(16, maxpending * 2);
				pending = pending ? repalloc(pending, sizeof(PendingName) * maxpending)
					: palloc(sizeof(PendingName) * maxpending);
			}
			pending[npending].key = p->keys[j];
			pending[npending].path = p->path;
			pending[npending].len = p->ends[j];
			npending++;
		}
	}
	if (npending == 0)
		return false;

	CoordSpiBegin(&sw);

	npending = CheckRegistered(pending, npending);

	/* The rest are new: insert them where this transaction may write. */
	if (npending > 0 && !RecoveryInProgress() && !XactReadOnly && !IsolationUsesXactSnapshot())
	{
		Oid			argtypes[2] = {INT8OID, TEXTOID};

		for (i = 0; i < npending; i++)
		{
			LOCKTAG		tag;
			Datum		args[2];
			LockAcquireResult r;

			CHECK_FOR_INTERRUPTS();
			/* Another transaction registering this key now: let it. */
			SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (pending[i].key >> 32),
								 (uint32) pending[i].key, COORD_NS_REGISTRY);
			CoordLockBudget(1);
			if (!RegistryKeyTake(&tag, retry, &r))
			{
				busy = true;
				continue;
			}
			CoordLockCounted(&tag, r, false);

			args[0] = Int64GetDatum((int64) pending[i].key);
			args[1] = PointerGetDatum(cstring_to_text_with_len(pending[i].path, pending[i].len));
			CoordExec(&plan_names_insert,
					  "INSERT INTO coord.lock_names (key, path) VALUES ($1, $2) "
					  "ON CONFLICT (key) DO NOTHING",
					  2, argtypes, args, NULL, SPI_OK_INSERT, "registering a lock name");
			if (SPI_processed == 1)
			{
				names_inserted_in_xact = true;
				RememberName(pending[i].key, pending[i].path, pending[i].len);
			}
			else
			{
				/* committed by someone else since we looked: check it */
				(void) CheckRegistered(&pending[i], 1);
			}
		}
	}

	CoordSpiEnd(&sw);
	return busy;
}

/* ---------- acquiring and releasing a path ---------- */

/*
 * PathTags lays out the tags and modes of a path in lock order: ancestors
 * from the root down with intention modes, then the path itself.
 */
static void
PathTags(const CoordPath *p, bool shared, LOCKTAG *tags, LOCKMODE *modes)
{
	int			i;

	for (i = 0; i < p->depth; i++)
	{
		CoordSetTag(&tags[i], p->keys[i], COORD_NS_PATH);
		modes[i] = LevelMode(p, i, shared);
	}
}

static void
ReleasePath(const CoordPath *p, bool shared)
{
	LOCKTAG		tags[COORD_PATH_MAX_DEPTH];
	LOCKMODE	modes[COORD_PATH_MAX_DEPTH];

	PathTags(p, shared, tags, modes);
	CoordReleaseTags(tags, modes, p->depth, true);
}

/*
 * AcquirePath takes the path's locks.  When registering its names was left
 * to a busy registrar, it tries once more while holding them; the locks stay
 * in flight meanwhile, so a collision found then releases them.
 */
static bool
AcquirePath(CoordPath *p, bool shared, bool session, int64 timeout_us, bool register_again)
{
	LOCKTAG		tags[COORD_PATH_MAX_DEPTH];
	LOCKMODE	modes[COORD_PATH_MAX_DEPTH];

	PathTags(p, shared, tags, modes);
	if (!CoordAcquire(tags, modes, p->depth, session, timeout_us, register_again))
		return false;
	if (register_again)
	{
		(void) RegisterNames(&p, 1, true);
		CoordInflightDone();
	}
	return true;
}

static void
NoteSessionLock(const CoordPath *p, bool shared)
{
	HeldKey		hk;
	HeldEntry  *e;
	bool		found;

	CoordLocalHashIn(&held_locks, CoordCacheContext(&held_cxt, "pg_coord session locks"),
					 "pg_coord session locks", sizeof(HeldKey), sizeof(HeldEntry), HASH_BLOBS);
	memset(&hk, 0, sizeof(hk));
	hk.key = p->keys[p->depth - 1];
	hk.shared = shared;
	e = hash_search(held_locks, &hk, HASH_ENTER, &found);
	if (!found)
	{
		e->count = 0;
		e->path = MemoryContextAlloc(held_cxt, sizeof(CoordPath));
		memcpy(e->path, p, sizeof(CoordPath));
		e->path->path = MemoryContextStrdup(held_cxt, p->path);
	}
	e->count++;
}

static void
ForgetHeld(HeldEntry *e)
{
	HeldKey		hk = e->hk;

	pfree(e->path->path);
	pfree(e->path);
	hash_search(held_locks, &hk, HASH_REMOVE, NULL);
}

/*
 * LockPath is the common body of the lock functions.  timeout_us < 0 waits
 * without a limit of ours (the session's lock_timeout still applies), 0 never
 * waits.
 */
static bool
LockPath(text *path_text, bool shared, bool session, int64 timeout_us)
{
	CoordPath	p;
	CoordPath  *pp = &p;
	bool		ok;
	bool		busy;

	CoordParsePath(path_text, &p);
	busy = RegisterNames(&pp, 1, false);
	ok = AcquirePath(&p, shared, session, timeout_us, busy);

	if (ok && session)
		NoteSessionLock(&p, shared);
	return ok;
}

static int64
TimeoutArg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		return -1;
	return CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(argno), "timeout", true);
}

/* ---------- SQL-callable functions ---------- */

/*
 * The four single-path lock functions: (path, timeout, shared) for the
 * waiting ones, (path, shared) for the try_ ones, which never wait.
 */
static Datum
LockEntry(FunctionCallInfo fcinfo, bool session, bool wait)
{
	int			shared_arg = wait ? 2 : 1;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	CoordRequireArg(fcinfo, shared_arg, "shared");
	PG_RETURN_BOOL(LockPath(PG_GETARG_TEXT_PP(0), PG_GETARG_BOOL(shared_arg), session,
							wait ? TimeoutArg(fcinfo, 1) : 0));
}

/* coord.lock(path text, timeout interval DEFAULT NULL, shared boolean DEFAULT false) */
Datum
coord_lock(PG_FUNCTION_ARGS)
{
	return LockEntry(fcinfo, true, true);
}

/* coord.try_lock(path text, shared boolean DEFAULT false) */
Datum
coord_try_lock(PG_FUNCTION_ARGS)
{
	return LockEntry(fcinfo, true, false);
}

/* coord.xact_lock(path text, timeout interval DEFAULT NULL, shared boolean DEFAULT false) */
Datum
coord_xact_lock(PG_FUNCTION_ARGS)
{
	return LockEntry(fcinfo, false, true);
}

/* coord.try_xact_lock(path text, shared boolean DEFAULT false) */
Datum
coord_try_xact_lock(PG_FUNCTION_ARGS)
{
	return LockEntry(fcinfo, false, false);
}

/*
 * coord.unlock(path text, shared boolean DEFAULT false): releases one hold of
 * a session lock.  A lock this session does not hold through pg_coord (or
 * that pg_advisory_unlock_all or DISCARD ALL released behind our back) gets
 * a WARNING and false, as pg_advisory_unlock does.
 */
Datum
coord_unlock(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	HeldKey		hk;
	HeldEntry  *e = NULL;
	LOCKTAG		leaf;
	bool		shared;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	CoordRequireArg(fcinfo, 1, "shared");
	shared = PG_GETARG_BOOL(1);
	CoordParsePath(PG_GETARG_TEXT_PP(0), &p);

	memset(&hk, 0, sizeof(hk));
	hk.key = p.keys[p.depth - 1];
	hk.shared = shared;
	if (held_locks != NULL)
		e = hash_search(held_locks, &hk, HASH_FIND, NULL);

	CoordSetTag(&leaf, hk.key, COORD_NS_PATH);
	if (e != NULL && !CoordLockHeldByMe(&leaf, LevelMode(&p, p.depth - 1, shared)))
	{
		/* released behind our back: our count is stale */
		ForgetHeld(e);
		e = NULL;
	}
	if (e == NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("%s lock on \"%s\" is not held by this session",
						shared ? "shared" : "exclusive", p.path)));
		PG_RETURN_BOOL(false);
	}

	ReleasePath(&p, shared);
	if (--e->count == 0)
		ForgetHeld(e);
	PG_RETURN_BOOL(true);
}

/*
 * coord.unlock_all(): releases every session lock taken through pg_coord and
 * returns how many holds it released (a lock taken twice counts twice).
 */
Datum
coord_unlock_all(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS status;
	HeldEntry  *e;
	int64		released = 0;

	CoordNotInParallel(fcinfo);
	if (held_locks == NULL)
		PG_RETURN_INT32(0);

	hash_seq_init(&status, held_locks);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		CoordPath  *p = e->path;
		LOCKTAG		leaf;

		CHECK_FOR_INTERRUPTS();

		CoordSetTag(&leaf, p->keys[p->depth - 1], COORD_NS_PATH);
		for (; e->count > 0; e->count--)
		{
			CHECK_FOR_INTERRUPTS();
			if (!CoordLockHeldByMe(&leaf, LevelMode(p, p->depth - 1, e->hk.shared)))
				break;
			ReleasePath(p, e->hk.shared);
			released++;
		}
	}
	MemoryContextReset(held_cxt);
	held_locks = NULL;
	PG_RETURN_INT32((int32) Min(released, PG_INT32_MAX));
}

/*
 * The paths argument (argument 0) of lock_first and lock_all: its elements
 * and their nulls, *n of them; a multidimensional array is refused.
 */
static Datum *
PathsArg(FunctionCallInfo fcinfo, bool **nulls, int *n)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("paths must be a one-dimensional array")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, nulls, n);
	return elems;
}

/* Element i of PathsArg's answer, parsed into *p; a null one is 22004. */
static void
PathElem(Datum *elems, bool *nulls, int i, CoordPath *p)
{
	CHECK_FOR_INTERRUPTS();
	if (nulls[i])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("paths must not contain null elements"),
				 errdetail("Element %d is null.", i + 1)));
	CoordParsePath(DatumGetTextPP(elems[i]), p);
}

/*
 * coord.lock_first(paths text[], shared boolean DEFAULT false): a session
 * lock on the first path, in array order, that is free without waiting; NULL
 * when none is.  Every path is validated before any is tried.  A candidate it
 * does not take costs nothing lasting: its try-locks are let go at once, and
 * only the path it takes is registered in coord.lock_names (after it is
 * locked: a collision found then releases it again).
 */
Datum
coord_lock_first(PG_FUNCTION_ARGS)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	bool		shared;
	CoordPath	p;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "paths");
	CoordRequireArg(fcinfo, 1, "shared");
	shared = PG_GETARG_BOOL(1);
	elems = PathsArg(fcinfo, &nulls, &n);
	if (n == 0)
		PG_RETURN_NULL();

	/* validate all first; parsed again below, so memory stays one path's */
	for (i = 0; i < n; i++)
	{
		PathElem(elems, nulls, i, &p);
		pfree(p.path);
	}

	for (i = 0; i < n; i++)
	{
		LOCKTAG		tags[COORD_PATH_MAX_DEPTH];
		LOCKMODE	modes[COORD_PATH_MAX_DEPTH];
		CoordPath  *pp = &p;

		PathElem(elems, nulls, i, &p);
		PathTags(&p, shared, tags, modes);
		/* in flight until registered, so a collision found then lets it go */
		if (CoordAcquire(tags, modes, p.depth, true, 0, true))
		{
			(void) RegisterNames(&pp, 1, true);
			CoordInflightDone();
			NoteSessionLock(&p, shared);
			PG_RETURN_TEXT_P(cstring_to_text(p.path));
		}
		pfree(p.path);
	}
	PG_RETURN_NULL();
}

/* ---------- coord.lock_all: every path or none ---------- */

/* One tag of a lock_all call, with what puts it in the canonical order. */
typedef struct LockAllTag
{
	int			depth;			/* 1 for /a, 2 for /a/b, ... */
	uint64		key;
	int			rank;			/* stronger modes first on one tag */
	LOCKMODE	mode;
} LockAllTag;

static inline int
ModeRank(LOCKMODE mode)
{
	switch (mode)
	{
		case MODE_X:
			return 0;
		case MODE_S:
			return 1;
		case MODE_IX:
			return 2;
		default:
			return 3;
	}
}

/*
 * The canonical order: by depth, then name key, then the stronger mode
 * first.  Depth first keeps each path's own tags root-down, as coord.lock
 * takes them, so lock_all and coord.lock follow one total order.  On a tag
 * needed in two modes (exclusive /a with /a/b: X and IX on /a) the stronger
 * comes first: once it is granted the weaker one is this session's own and
 * never waits, whereas weaker-first would let two calls share the IX and
 * then wait for each other's X.
 */
static int
LockAllTagCmp(const void *a, const void *b)
{
	const LockAllTag *x = a;
	const LockAllTag *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->rank - y->rank;
}

static int
PathCmp(const void *a, const void *b)
{
	const CoordPath *x = *(CoordPath *const *) a;
	const CoordPath *y = *(CoordPath *const *) b;

	return strcmp(x->path, y->path);
}

/*
 * coord.lock_all(paths text[], timeout interval DEFAULT NULL, shared boolean
 * DEFAULT false): session locks on every path, or on none.
 *
 * Each distinct path is one coord.lock of it (a path given twice is locked
 * once), so each needs one coord.unlock (or coord.unlock_all) and counts
 * with earlier locks of the same path as coord.lock's do.  All the tags of
 * all the paths are taken in one call of CoordAcquire, in the canonical
 * order (LockAllTagCmp), within one timeout for them all; on a timeout it
 * returns false holding none of them, and on an error (cancel, deadlock,
 * lock_timeout, the cap) the abort callback lets go of those taken so far.
 * The session's earlier locks keep their counts either way.  An empty array
 * locks nothing and returns true; null elements are 22004.
 */
Datum
coord_lock_all(PG_FUNCTION_ARGS)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			npaths;
	int			ntags;
	int			i,
				j;
	bool		shared;
	int64		timeout_us;
	CoordPath **paths;
	LockAllTag *order;
	LOCKTAG    *tags;
	LOCKMODE   *modes;
	bool		busy;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "paths");
	CoordRequireArg(fcinfo, 2, "shared");
	timeout_us = TimeoutArg(fcinfo, 1);
	shared = PG_GETARG_BOOL(2);
	elems = PathsArg(fcinfo, &nulls, &n);
	if (n > COORD_LOCK_ALL_MAX_PATHS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many paths for coord.lock_all"),
				 errdetail("coord.lock_all takes at most %d paths at once; %d were given.",
						   COORD_LOCK_ALL_MAX_PATHS, n)));
	if (n == 0)
		PG_RETURN_BOOL(true);

	/* validate every path before anything is locked or registered */
	paths = palloc(sizeof(CoordPath *) * n);
	for (i = 0; i < n; i++)
	{
		paths[i] = palloc(sizeof(CoordPath));
		PathElem(elems, nulls, i, paths[i]);
	}

	/* a path given twice is one lock of it */
	qsort(paths, n, sizeof(CoordPath *), PathCmp);
	npaths = 0;
	ntags = 0;
	for (i = 0; i < n; i++)
	{
		if (npaths > 0 && strcmp(paths[npaths - 1]->path, paths[i]->path) == 0)
			continue;
		paths[npaths++] = paths[i];
		ntags += paths[i]->depth;
	}

	order = palloc(sizeof(LockAllTag) * ntags);
	ntags = 0;
	for (i = 0; i < npaths; i++)
	{
		for (j = 0; j < paths[i]->depth; j++)
		{
			order[ntags].depth = j + 1;
			order[ntags].key = paths[i]->keys[j];
			order[ntags].mode = LevelMode(paths[i], j, shared);
			order[ntags].rank = ModeRank(order[ntags].mode);
			ntags++;
		}
	}
	qsort(order, ntags, sizeof(LockAllTag), LockAllTagCmp);
	tags = palloc(sizeof(LOCKTAG) * ntags);
	modes = palloc(sizeof(LOCKMODE) * ntags);
	for (i = 0; i < ntags; i++)
	{
		CoordSetTag(&tags[i], order[i].key, COORD_NS_PATH);
		modes[i] = order[i].mode;
	}

	busy = RegisterNames(paths, npaths, false);
	if (!CoordAcquire(tags, modes, ntags, true, timeout_us, busy))
		PG_RETURN_BOOL(false);
	if (busy)
	{
		/* in flight until registered, so a collision found then lets go */
		(void) RegisterNames(paths, npaths, true);
		CoordInflightDone();
	}
	for (i = 0; i < npaths; i++)
		NoteSessionLock(paths[i], shared);
	PG_RETURN_BOOL(true);
}

/*
 * coord.fence(path text): a fencing token for a path the caller holds
 * exclusively.  Tokens come from one sequence and are stored per path in the
 * same transaction, so the transaction writes WAL and its commit makes the
 * token durable (and, with synchronous replication, present on the standby):
 * a token issued after a crash or failover is larger than every committed one.
 */
Datum
coord_fence(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	LOCKTAG		leaf;
	Datum		args[1];
	Oid			argtypes[1] = {TEXTOID};
	CoordUserSwitch sw;
	bool		isnull;
	int64		token;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	CoordParsePath(PG_GETARG_TEXT_PP(0), &p);
	CoordSetTag(&leaf, p.keys[p.depth - 1], COORD_NS_PATH);
	if (!CoordLockHeldByMe(&leaf, MODE_X))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot issue a fencing token for \"%s\"", p.path),
				 errdetail("This session does not hold the lock on the path exclusively."),
				 errhint("Take it with coord.lock(path) or coord.xact_lock(path) first.")));

	args[0] = PointerGetDatum(cstring_to_text(p.path));
	CoordSpiBegin(&sw);
	CoordExecLimit(&plan_fence,
				   "INSERT INTO coord.fences AS f (path, token, fenced_at) "
				   "VALUES ($1, pg_catalog.nextval('coord.fence_seq'::pg_catalog.regclass), "
				   "pg_catalog.now()) "
				   "ON CONFLICT (path) DO UPDATE SET token = excluded.token, "
				   "fenced_at = excluded.fenced_at RETURNING f.token",
				   1, argtypes, args, NULL, 1, SPI_OK_INSERT_RETURNING, "issuing a fencing token");
	if (SPI_processed != 1)
		elog(ERROR, "issuing a fencing token returned no token");
	token = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	CoordSpiEnd(&sw);
	PG_RETURN_INT64(token);
}

/*
 * coord.fence_ok(path text, token bigint): is token the newest for path?
 *
 * When it is, the path's row in coord.fences stays locked FOR SHARE until
 * the caller's transaction ends.  coord.fence and coord.lease_lock advance
 * the token by updating that row, so they wait for a write guarded by this
 * check to commit or roll back: the write lands before the newer token
 * exists, or the check comes after it and fails.  A check that waited for
 * such an update re-reads the row (READ COMMITTED) and fails if the token
 * changed; under REPEATABLE READ or SERIALIZABLE it fails with 40001.  A
 * token that is not the newest locks nothing, and a transaction that cannot
 * write (read-only, or on a standby) only reads.
 */
Datum
coord_fence_ok(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	Datum		args[2];
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	CoordUserSwitch sw;
	bool		lock_row;
	bool		ok;

	CoordRequireArg(fcinfo, 0, "path");
	CoordRequireArg(fcinfo, 1, "token");
	lock_row = !XactReadOnly && !RecoveryInProgress();
	if (lock_row)
		CoordNotInParallel(fcinfo);
	CoordParsePath(PG_GETARG_TEXT_PP(0), &p);

	args[0] = PointerGetDatum(cstring_to_text(p.path));
	args[1] = PG_GETARG_DATUM(1);
	CoordSpiBegin(&sw);
	if (lock_row)
		CoordExecLimit(&plan_fence_ok_lock,
					   "SELECT FROM coord.fences AS f "
					   "WHERE f.path OPERATOR(pg_catalog.=) $1 "
					   "AND f.token OPERATOR(pg_catalog.=) $2 FOR SHARE OF f",
					   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "locking the fence of a path");
	else
		CoordExecReadOnly(&plan_fence_ok,
						  "SELECT FROM coord.fences AS f "
						  "WHERE f.path OPERATOR(pg_catalog.=) $1 "
						  "AND f.token OPERATOR(pg_catalog.=) $2",
						  2, argtypes, args, NULL, 1, "reading coord.fences");
	ok = (SPI_processed == 1);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(ok);
}

/* coord.path_key(path text): the 64-bit name key of a path, as stored in pg_locks */
Datum
coord_path_key(PG_FUNCTION_ARGS)
{
	CoordPath	p;

	CoordRequireArg(fcinfo, 0, "path");
	CoordParsePath(PG_GETARG_TEXT_PP(0), &p);
	PG_RETURN_INT64((int64) p.keys[p.depth - 1]);
}

/* coord.lock_status(): pg_coord path locks held and awaited in this database */
Datum
coord_lock_status(PG_FUNCTION_ARGS)
{
	return CoordLockStatus(fcinfo, COORD_NS_PATH);
}

/*
 * coord.purge_lock_names(): deletes the registry rows of paths no session
 * holds or awaits now.  A C function so that it runs through the owner
 * switch: coord_admin, to whom it is granted, has no rights on the table.
 * When it deletes rows, every backend's cache of checked names is forgotten
 * once this transaction commits (a relcache invalidation of the table).
 */
Datum
coord_purge_lock_names(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_purge = NULL;
	CoordUserSwitch sw;
	int64		n;

	CoordNotInParallel(fcinfo);
	CoordSpiBegin(&sw);
	n = CoordExec(&plan_purge,
				  "DELETE FROM coord.lock_names AS n "
				  "WHERE NOT EXISTS (SELECT 1 FROM coord.lock_status() AS s "
				  "WHERE s.key OPERATOR(pg_catalog.=) n.key)",
				  0, NULL, NULL, NULL, SPI_OK_DELETE, "purging lock names");
	if (n > 0)
		CacheInvalidateRelcacheByRelid(LockNamesRelid());
	CoordSpiEnd(&sw);
	PG_RETURN_INT64(n);
}

/*
 * CoordLocksTick: the tick's share (docs/operations/sizing.md;
 * src/README.md, Locks, Retention).  Fences first: a lease row the tick
 * deleted just before keeps none.  Up to a batch of rows of each table;
 * rows being written (a fence or lease_lock upserting the path's fence) are
 * skipped, and a fence written since the candidates were read fails the
 * age test again.
 */
int64
CoordLocksTick(TimestampTz horizon)
{
	static SPIPlanPtr plan_fences = NULL;
	static SPIPlanPtr plan_names = NULL;
	int64		fences;
	int64		names;

	fences = CoordPurge(&plan_fences,
						"WITH held AS MATERIALIZED (SELECT s.key FROM coord.lock_status() AS s) "
						"DELETE FROM coord.fences AS f "
						"WHERE f.path OPERATOR(pg_catalog.=) ANY (ARRAY("
						"SELECT x.path FROM coord.fences AS x "
						"WHERE x.fenced_at OPERATOR(pg_catalog.<) $1 "
						"AND NOT EXISTS (SELECT 1 FROM coord.lease AS l "
						"WHERE l.path OPERATOR(pg_catalog.=) (x.path COLLATE pg_catalog.\"C\")) "
						"AND NOT EXISTS (SELECT 1 FROM held AS h "
						"WHERE h.key OPERATOR(pg_catalog.=) coord.path_key(x.path)) "
						"LIMIT $2 FOR UPDATE OF x SKIP LOCKED)) "
						"AND f.fenced_at OPERATOR(pg_catalog.<) $1",
						horizon, "purging fences");
	names = CoordPurge(&plan_names,
					   "DELETE FROM coord.lock_names AS n "
					   "WHERE n.key OPERATOR(pg_catalog.=) ANY (ARRAY("
					   "SELECT x.key FROM coord.lock_names AS x "
					   "WHERE x.registered_at OPERATOR(pg_catalog.<) $1 "
					   "AND NOT EXISTS (SELECT 1 FROM coord.lock_status() AS s "
					   "WHERE s.key OPERATOR(pg_catalog.=) x.key) "
					   "LIMIT $2 FOR UPDATE SKIP LOCKED))",
					   horizon, "purging lock names");
	if (names > 0)
		CacheInvalidateRelcacheByRelid(LockNamesRelid());
	return fences + names;
}
