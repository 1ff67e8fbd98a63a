/*-------------------------------------------------------------------------
 * semaphores.c
 *		Counting semaphores on PostgreSQL's lock manager (docs/semaphores.md): coord.acquire_permit, coord.release_permit and the
 *		lock status behind the coord.semaphores view.
 *
 * Permit k of a path is an advisory lock (COORD_NS_PERMIT, the path's key
 * with k in its low 16 bits), held in ExclusiveLock and only ever
 * try-locked; a gate (COORD_NS_PERMIT_GATE) serves the acquirers first
 * come first served.  Semaphores take no intention locks and are unrelated
 * to locks on the same path.
 *
 * Lock order: the gate (transaction level, waited for in the lock
 * manager), then, holding it, permits 0 .. permits-1; with a permit the
 * acquirer lets go of the gate.  A session permit is a hold (common_lock.c),
 * a transaction permit a transaction lock; session end frees every permit.
 * A label (coord.permit_holders) counts only where it names a live holder.
 *
 * Tags, the lock order and waiting (why a cycle through a full semaphore
 * needs a timeout), scopes, labels and sizes: src/README.md, "Semaphores
 * (semaphores.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "pgstat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/array.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "compat.h"
#include "semaphores.h"

#define COORD_PERMITS_MAX	1024
#define PERMIT_MASK			UINT64CONST(0xFFFF)

/* A semaphore this session took a permit of: which one (valid while held). */
typedef struct PermitEntry
{
	uint64		skey;			/* hash key: must be first */
	int			permit;
	int			maxhold;		/* highest session hold index used */
} PermitEntry;

/* A label this session wrote without since (coord.permit_since off). */
typedef struct LabelKey
{
	uint64		skey;
	int32		permit;
} LabelKey;

typedef struct LabelEntry
{
	LabelKey	lk;				/* hash key: must be first */
	int			permits;		/* the size written; 0: not yet */
} LabelEntry;

static bool coord_permit_since = true;
static HTAB *permits_held = NULL;
static HTAB *labels_written = NULL;
static SPIPlanPtr plan_label = NULL;
static SPIPlanPtr plan_label_update = NULL;
static SPIPlanPtr plan_label_path = NULL;
static SPIPlanPtr plan_labels = NULL;
static SPIPlanPtr plan_labels_purge = NULL;

PG_FUNCTION_INFO_V1(coord_acquire_permit);
PG_FUNCTION_INFO_V1(coord_release_permit);
PG_FUNCTION_INFO_V1(coord_permit_status);

void
CoordSemaphoresInit(void)
{
	DefineCustomBoolVariable("coord.permit_since",
							 "Records when each semaphore permit was taken, for coord.semaphores.",
							 "On, every acquire_permit writes its permit's label (a row of an unlogged "
							 "table) with the time; off, a session writes a permit's label once "
							 "(path and size) and coord.semaphores shows no since.",
							 &coord_permit_since,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

static uint64
SemKey(text *path_text, CoordPath *p)
{
	CoordParsePath(path_text, p);
	return p->keys[p->depth - 1] & ~PERMIT_MASK;
}

static void
PermitTag(LOCKTAG *tag, uint64 skey, int k)
{
	CoordSetTag(tag, skey | (uint64) k, COORD_NS_PERMIT);
}

/* The hold key of this session's i'th hold (1-based) of a semaphore. */
static const char *
HoldKey(uint64 skey, int i)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "permit:" UINT64_FORMAT ":%d", skey, i);
	return buf;
}

/* The permit of skey this session holds (either scope), or -1. */
static PermitEntry *
HeldPermit(uint64 skey)
{
	PermitEntry *e;
	LOCKTAG		tag;

	if (permits_held == NULL)
		return NULL;
	e = hash_search(permits_held, &skey, HASH_FIND, NULL);
	if (e == NULL || e->permit < 0)
		return e;
	PermitTag(&tag, skey, e->permit);
	if (!CoordLockHeldByMe(&tag, ExclusiveLock))
	{
		/* let go at a transaction's end, or behind our back */
		e->permit = -1;
		e->maxhold = 0;
	}
	return e;
}

/*
 * One more hold of permit k, which this session holds already or has just
 * taken (taken: the lock manager hold is there, record it only).
 */
static void
AddHold(PermitEntry *e, const LOCKTAG *tag, bool taken)
{
	int			i;
	int			free_index = 0;

	for (i = 1; i <= e->maxhold; i++)
	{
		CoordHoldStatus st = CoordHoldState(HoldKey(e->skey, i));

		if (st == HOLD_RELEASING && !taken)
		{
			/* let go earlier in this transaction: keep it instead */
			CoordHoldKeep(HoldKey(e->skey, i));
			return;
		}
		if (st == HOLD_NONE && free_index == 0)
			free_index = i;
	}
	if (free_index == 0)
		free_index = ++e->maxhold;
	if (!taken)
	{
		LOCKMODE	mode = ExclusiveLock;

		if (!CoordAcquire(tag, &mode, 1, true, 0, false))
			elog(ERROR, "permit held by this session could not be taken again");
	}
	CoordHoldTaken(HoldKey(e->skey, free_index), tag);
}

/* Try-locks permits 0 .. permits-1; returns the one taken, or -1. */
static int
TryPermits(uint64 skey, int permits, bool session)
{
	int			k;
	LOCKMODE	mode = ExclusiveLock;

	for (k = 0; k < permits; k++)
	{
		LOCKTAG		tag;

		PermitTag(&tag, skey, k);
		if (CoordAcquire(&tag, &mode, 1, session, 0, false))
			return k;
	}
	return -1;
}

/* Refuses a size smaller than a live holder's: permit number `permits` is held. */
static void
CheckSize(uint64 skey, int permits, const char *path)
{
	LOCKTAG		tag;
	LOCKMODE	mode = ExclusiveLock;

	if (permits >= COORD_PERMITS_MAX)
		return;
	PermitTag(&tag, skey, permits);
	if (CoordAcquire(&tag, &mode, 1, false, 0, false))
	{
		CoordReleaseTags(&tag, &mode, 1, false);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("semaphore \"%s\" is in use with more permits than %d", path, permits),
			 errdetail("Another session holds permit %d, so it asked for more permits.", permits),
			 errhint("Pass the same permits to every acquire_permit call on one path.")));
}

/*
 * Writes the label of permit k (src/README.md, Semaphores, Labels).  A
 * label of another path with the same key is a collision.
 */
static void
WriteLabel(uint64 skey, int k, int permits, const char *path)
{
	Datum		args[7];
	Oid			argtypes[7] = {INT8OID, INT4OID, TEXTOID, INT4OID, INT4OID, TIMESTAMPTZOID, BOOLOID};
	CoordUserSwitch sw;

	LabelKey	lk;
	LabelEntry *le = NULL;
	bool		found;

	if (XactReadOnly || IsolationUsesXactSnapshot())
		return;
	memset(&lk, 0, sizeof(lk));
	lk.skey = skey;
	lk.permit = k;
	if (!coord_permit_since)
	{
		/* the path and size only: once per session, permit and size */
		CoordLocalHash(&labels_written, "pg_coord permit labels", sizeof(LabelKey),
					   sizeof(LabelEntry), HASH_BLOBS);
		le = hash_search(labels_written, &lk, HASH_ENTER, &found);
		if (found && le->permits == permits)
			return;
		le->permits = 0;		/* set once written */
	}
	args[0] = Int64GetDatum((int64) skey);
	args[1] = Int32GetDatum(k);
	args[2] = PointerGetDatum(cstring_to_text(path));
	args[3] = Int32GetDatum(permits);
	args[4] = Int32GetDatum(MyProcPid);
	args[5] = TimestampTzGetDatum(MyStartTimestamp);
	args[6] = BoolGetDatum(coord_permit_since);
	CoordSpiBegin(&sw);
	/* the permit's previous holder left a row: the usual case, one update */
	CoordExec(&plan_label_update,
			  "UPDATE coord.permit_holders SET permits = $4, pid = $5, "
			  "backend_start = $6, "
			  "since = CASE WHEN $7 THEN pg_catalog.clock_timestamp() END "
			  "WHERE key OPERATOR(pg_catalog.=) $1 "
			  "AND permit OPERATOR(pg_catalog.=) $2 "
			  "AND path OPERATOR(pg_catalog.=) $3",
			  7, argtypes, args, NULL, SPI_OK_UPDATE, "labelling a permit");
	if (SPI_processed != 1)
		CoordExec(&plan_label,
				  "INSERT INTO coord.permit_holders AS h "
				  "(key, permit, path, permits, pid, backend_start, since) "
				  "VALUES ($1, $2, $3, $4, $5, $6, "
				  "CASE WHEN $7 THEN pg_catalog.clock_timestamp() END) "
				  "ON CONFLICT (key, permit) DO UPDATE SET permits = excluded.permits, "
				  "pid = excluded.pid, backend_start = excluded.backend_start, "
				  "since = excluded.since "
				  "WHERE h.path OPERATOR(pg_catalog.=) excluded.path",
				  7, argtypes, args, NULL, SPI_OK_INSERT, "labelling a permit");
	if (SPI_processed != 1)
	{
		char	   *other;

		CoordExecLimit(&plan_label_path,
					   "SELECT path FROM coord.permit_holders "
					   "WHERE key OPERATOR(pg_catalog.=) $1 "
					   "AND permit OPERATOR(pg_catalog.=) $2",
					   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "reading a permit's label");
		other = SPI_processed == 1 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)
			: pstrdup("?");
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("semaphore path \"%s\" collides with semaphore path \"%s\"", path, other),
				 errdetail("Both paths have the semaphore key %lld; pg_coord refuses to let two paths share permits.",
						   (long long) (int64) skey),
				 errhint("Rename one of the paths, or delete the rows of the path that is no longer used from coord.permit_holders.")));
	}
	CoordSpiEnd(&sw);
	if (le != NULL)
		le->permits = permits;
}

/*
 * coord.acquire_permit(path text, permits integer, timeout interval DEFAULT
 * NULL, xact boolean DEFAULT false): the number of the permit taken, or NULL
 * when timeout passed first.
 */
Datum
coord_acquire_permit(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	uint64		skey;
	int			permits;
	bool		session;
	int64		timeout_us = -1;
	TimestampTz deadline = 0;
	PermitEntry *e;
	LOCKTAG		gate;
	LOCKMODE	gate_mode = ExclusiveLock;
	LOCKTAG		tag;
	bool		found;
	int			k;
	int64		step_ms = 1;
	int			turn;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	CoordRequireArg(fcinfo, 1, "permits");
	CoordRequireArg(fcinfo, 3, "xact");
	permits = PG_GETARG_INT32(1);
	if (permits < 1 || permits > COORD_PERMITS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("permits must be between 1 and %d", COORD_PERMITS_MAX),
				 errdetail("The value given was %d.", permits)));
	if (!PG_ARGISNULL(2))
		timeout_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(2), "timeout", true);
	session = !PG_GETARG_BOOL(3);
	skey = SemKey(PG_GETARG_TEXT_PP(0), &p);

	/* reentrant: the permit this session holds already */
	e = HeldPermit(skey);
	if (e != NULL && e->permit >= 0)
	{
		if (e->permit >= permits)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("this session holds permit %d of semaphore \"%s\", not below %d",
							e->permit, p.path, permits),
					 errhint("Pass the same permits to every acquire_permit call on one path.")));
		PermitTag(&tag, skey, e->permit);
		if (session)
			AddHold(e, &tag, false);
		else
		{
			LOCKMODE	mode = ExclusiveLock;

			if (!CoordAcquire(&tag, &mode, 1, false, 0, false))
				elog(ERROR, "permit held by this session could not be taken again");
		}
		PG_RETURN_INT32(e->permit);
	}

	/* the gate: first come, first served */
	CoordSetTag(&gate, skey, COORD_NS_PERMIT_GATE);
	if (timeout_us > 0)
		deadline = GetCurrentTimestamp() + timeout_us;
	if (!CoordAcquire(&gate, &gate_mode, 1, false, 0, false) &&
		(timeout_us == 0 || !CoordAcquire(&gate, &gate_mode, 1, false, timeout_us, false)))
		PG_RETURN_NULL();

	CheckSize(skey, permits, p.path);
	for (turn = 0; (k = TryPermits(skey, permits, session)) < 0; turn++)
	{
		int64		wait_us = step_ms * 1000;
		LOCKMODE	mode = ExclusiveLock;

		if (timeout_us == 0)
			break;
		if (timeout_us > 0)
		{
			int64		left_us = deadline - GetCurrentTimestamp();

			if (left_us <= 0)
				break;
			wait_us = Min(wait_us, left_us);
		}

		/*
		 * Wait for one permit in the lock manager for a moment (so that
		 * pg_blocking_pids shows whom we wait for, and its release wakes us
		 * at once), then look at all of them again; each turn waits on the
		 * next.  A permit granted just as the step's lock_timeout fired is
		 * let go again by CoordAcquire (common_lock.c): a failed step holds
		 * nothing, and the next TryPermits finds the permit free.
		 */
		PermitTag(&tag, skey, turn % permits);
		if (CoordAcquire(&tag, &mode, 1, session, wait_us, false))
		{
			k = turn % permits;
			break;
		}
		CHECK_FOR_INTERRUPTS();
		step_ms = Min(step_ms * 2, 10);
	}
	if (k < 0)
	{
		CoordReleaseTags(&gate, &gate_mode, 1, false);
		PG_RETURN_NULL();
	}

	CoordLocalHash(&permits_held, "pg_coord permits", sizeof(uint64), sizeof(PermitEntry),
				   HASH_BLOBS);
	e = hash_search(permits_held, &skey, HASH_ENTER, &found);
	if (!found)
		e->maxhold = 0;
	e->permit = k;
	PermitTag(&tag, skey, k);
	if (session)
		AddHold(e, &tag, true); /* released if this transaction aborts */
	CoordReleaseTags(&gate, &gate_mode, 1, false);
	WriteLabel(skey, k, permits, p.path);
	PG_RETURN_INT32(k);
}

/*
 * coord.release_permit(path text): lets go of one session hold of this
 * session's permit of path, when this transaction commits.  False with a
 * WARNING when there is none (a transaction permit is freed at transaction
 * end only).
 */
Datum
coord_release_permit(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	uint64		skey;
	PermitEntry *e;
	int			i;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	skey = SemKey(PG_GETARG_TEXT_PP(0), &p);
	e = HeldPermit(skey);
	if (e != NULL && e->permit >= 0)
	{
		for (i = e->maxhold; i >= 1; i--)
		{
			if (CoordHoldState(HoldKey(skey, i)) == HOLD_ACTIVE)
			{
				CoordHoldRelease(HoldKey(skey, i));
				PG_RETURN_BOOL(true);
			}
		}
	}
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("this session holds no session permit of semaphore \"%s\"", p.path),
			 errdetail("A permit taken with xact => true is freed at the end of its transaction.")));
	PG_RETURN_BOOL(false);
}

/* A live backend, for the tick's purge: pid and start. */
typedef struct LiveBackend
{
	int			pid;			/* hash key: must be first */
	TimestampTz started;
} LiveBackend;

/*
 * CoordSemaphoresTick (coord.tick's share, inside its owner switch): deletes
 * the labels whose backend (pid and start) is gone.  One read of backend
 * status and one of the labels, one DELETE.  The DELETE names each label's
 * dead backend again, so a label that a new holder rewrites meanwhile is
 * kept (READ COMMITTED rechecks the row it waited for).  Returns how many
 * labels it deleted.
 */
int64
CoordSemaphoresTick(void)
{
	HTAB	   *live;
	HASHCTL		ctl;
	int			nbe;
	int			b;
	uint64		i,
				n;
	int			ndead = 0;
	Datum	   *keys,
			   *permits,
			   *pids,
			   *starts;
	Datum		args[4];
	Oid			argtypes[4] = {INT8ARRAYOID, INT4ARRAYOID, INT4ARRAYOID, TIMESTAMPTZARRAYOID};

	n = CoordExec(&plan_labels,
				  "SELECT key, permit, pid, backend_start FROM coord.permit_holders",
				  0, NULL, NULL, NULL, SPI_OK_SELECT, "reading permit labels");
	if (n == 0)
		return 0;

	ctl.keysize = sizeof(int);
	ctl.entrysize = sizeof(LiveBackend);
	ctl.hcxt = CurrentMemoryContext;
	live = hash_create("pg_coord live backends", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	pgstat_clear_snapshot();
	nbe = pgstat_fetch_stat_numbackends();
	for (b = 1; b <= nbe; b++)
	{
		LocalPgBackendStatus *local = CoordLocalBackendStatus(b);
		LiveBackend *lb;

		if (local == NULL)
			continue;
		lb = hash_search(live, &local->backendStatus.st_procpid, HASH_ENTER, NULL);
		lb->started = local->backendStatus.st_proc_start_timestamp;
	}

	keys = palloc(sizeof(Datum) * n);
	permits = palloc(sizeof(Datum) * n);
	pids = palloc(sizeof(Datum) * n);
	starts = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			pid = DatumGetInt32(SPI_getbinval(row, desc, 3, &isnull));
		TimestampTz started = DatumGetTimestampTz(SPI_getbinval(row, desc, 4, &isnull));
		LiveBackend *lb;

		CHECK_FOR_INTERRUPTS();
		lb = hash_search(live, &pid, HASH_FIND, NULL);
		if (lb != NULL && lb->started == started)
			continue;
		keys[ndead] = SPI_getbinval(row, desc, 1, &isnull);
		permits[ndead] = SPI_getbinval(row, desc, 2, &isnull);
		pids[ndead] = Int32GetDatum(pid);
		starts[ndead] = TimestampTzGetDatum(started);
		ndead++;
	}
	hash_destroy(live);
	if (ndead == 0)
		return 0;
	args[0] = PointerGetDatum(construct_array(keys, ndead, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[1] = PointerGetDatum(construct_array(permits, ndead, INT4OID, 4, true, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(pids, ndead, INT4OID, 4, true, TYPALIGN_INT));
	args[3] = PointerGetDatum(construct_array(starts, ndead, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	CoordExec(&plan_labels_purge,
			  "DELETE FROM coord.permit_holders AS h "
			  "USING ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), "
			  "pg_catalog.unnest($3), pg_catalog.unnest($4)) AS d(key, permit, pid, backend_start) "
			  "WHERE h.key OPERATOR(pg_catalog.=) d.key "
			  "AND h.permit OPERATOR(pg_catalog.=) d.permit "
			  "AND h.pid OPERATOR(pg_catalog.=) d.pid "
			  "AND h.backend_start OPERATOR(pg_catalog.=) d.backend_start",
			  4, argtypes, args, NULL, SPI_OK_DELETE, "purging permit labels");
	return (int64) SPI_processed;
}

/* coord.permit_status(gate boolean): permit locks (or gate locks) held and awaited */
Datum
coord_permit_status(PG_FUNCTION_ARGS)
{
	CoordRequireArg(fcinfo, 0, "gate");
	return CoordLockStatus(fcinfo, PG_GETARG_BOOL(0) ? COORD_NS_PERMIT_GATE : COORD_NS_PERMIT);
}
