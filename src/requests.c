/*-------------------------------------------------------------------------
 * requests.c
 *		The duplicate-work coordinator (docs/requests.md): request,
 *		mark_queued, mark_done, release, with takeover when an owner's session
 *		ends.
 *
 * State.  One row per key in coord.request_keys: requested, queued or done,
 * with the owner's pid and backend start time.
 *
 * The owner of a requested key holds a session-level advisory lock on
 * (COORD_NS_REQUEST, name key of the key), a hold (common_lock.c) per key
 * it owns: the lock, not the row, says whether the owner is still there.
 * Waiters queue for that lock in the lock manager, first come first
 * served.  It is released after the commit of mark_queued, mark_done or
 * release (so a waiter never reads state the owner has not committed), at
 * the abort of the request that took it, or when the owner's session ends.
 * request() refuses REPEATABLE READ and SERIALIZABLE.
 *
 * Ownership, waiting and the contract's table, what wakes whom, snapshots,
 * retention and name-key collisions: src/README.md, "Requests
 * (requests.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "requests.h"

/* Keys are primary-key text: stay well inside a btree entry. */
#define COORD_KEY_MAX_BYTES	2048

static SPIPlanPtr plan_insert = NULL;
static SPIPlanPtr plan_select = NULL;
static SPIPlanPtr plan_take = NULL;
static SPIPlanPtr plan_queue = NULL;
static SPIPlanPtr plan_done = NULL;
static SPIPlanPtr plan_release = NULL;
static SPIPlanPtr plan_state = NULL;
static SPIPlanPtr plan_purge = NULL;
static SPIPlanPtr plan_request_done = NULL;
static SPIPlanPtr plan_request_gone = NULL;

PG_FUNCTION_INFO_V1(coord_request);
PG_FUNCTION_INFO_V1(coord_mark_queued);
PG_FUNCTION_INFO_V1(coord_mark_done);
PG_FUNCTION_INFO_V1(coord_release);
PG_FUNCTION_INFO_V1(coord_request_state);
PG_FUNCTION_INFO_V1(coord_purge_requests);
PG_FUNCTION_INFO_V1(coord_request_lock_status);
PG_FUNCTION_INFO_V1(coord_key_hash);
PG_FUNCTION_INFO_V1(coord_backend_alive);

/* ---------- helpers ---------- */

static char *
KeyArg(FunctionCallInfo fcinfo, int argno)
{
	char	   *key;
	int			len;

	CoordRequireArg(fcinfo, argno, "key");
	key = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	len = strlen(key);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("request key must not be empty")));
	if (len > COORD_KEY_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("request key is too long"),
				 errdetail("A request key has at most %d bytes; this one has %d.",
						   COORD_KEY_MAX_BYTES, len),
				 errhint("Use a digest of a long key, such as md5(url).")));
	return key;
}

/* The hold key of a request key. */
static char *
HoldKey(const char *key)
{
	return psprintf("r:%s", key);
}

/* Does this session own key (hold its lock, not being let go)? */
static bool
Owns(const char *key)
{
	return CoordHoldState(HoldKey(key)) == HOLD_ACTIVE;
}

/* What a saved statement takes after $1, the key. */
typedef enum KeyArgs
{
	ARGS_KEY,					/* $1 key */
	ARGS_OWNER,					/* $1 key, $2 pid, $3 backend start of this
								 * session */
	ARGS_INTERVAL				/* $1 key, $2 interval (may be NULL) */
} KeyArgs;

/*
 * Runs a saved statement about one key as the extension owner (inside SPI);
 * expected is the SPI result code it must return.
 */
static void
RunKeyPlan(SPIPlanPtr *slot, const char *sql, int expected, const char *key, KeyArgs kind,
		   Datum interval, bool interval_null)
{
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};
	Oid			argtypes[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
	int			nargs = 1;

	args[0] = PointerGetDatum(cstring_to_text(key));
	if (kind == ARGS_OWNER)
	{
		args[1] = Int32GetDatum(MyProcPid);
		args[2] = TimestampTzGetDatum(MyStartTimestamp);
		nargs = 3;
	}
	else if (kind == ARGS_INTERVAL)
	{
		args[1] = interval;
		nulls[1] = interval_null ? 'n' : ' ';
		argtypes[1] = INTERVALOID;
		nargs = 2;
	}
	CoordExec(slot, sql, nargs, argtypes, args, nulls, expected, "a statement on coord.request_keys");
}

static char *
CurrentState(const char *key)
{
	RunKeyPlan(&plan_state,
			   "SELECT state FROM coord.request_keys WHERE key OPERATOR(pg_catalog.=) $1",
			   SPI_OK_SELECT, key, ARGS_KEY, (Datum) 0, false);
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * Decide answers request() for a caller that holds the key's lock, from the
 * row it reads now, and makes the caller the owner when the answer is true.
 */
static bool
Decide(const char *key, Datum stale_after, bool stale_null)
{
	int			attempt;

	for (attempt = 0; attempt < 3; attempt++)
	{
		bool		isnull;
		char	   *state;
		int32		owner_pid;
		TimestampTz owner_start;
		bool		stale;
		bool		pid_null,
					start_null;

		RunKeyPlan(&plan_insert,
				   "INSERT INTO coord.request_keys AS r "
				   "(key, state, owner_pid, owner_start, requested_at) "
				   "VALUES ($1, 'requested', $2, $3, pg_catalog.now()) "
				   "ON CONFLICT (key) DO NOTHING",
				   SPI_OK_INSERT, key, ARGS_OWNER, (Datum) 0, false);
		if (SPI_processed == 1)
			return true;

		RunKeyPlan(&plan_select,
				   "SELECT state, owner_pid, owner_start, "
				   "done_at OPERATOR(pg_catalog.<) "
				   "(pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) $2) AS stale "
				   "FROM coord.request_keys WHERE key OPERATOR(pg_catalog.=) $1",
				   SPI_OK_SELECT, key, ARGS_INTERVAL, stale_after, stale_null);
		if (SPI_processed == 0)
			continue;			/* purged since the insert: try again */

		state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		owner_pid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &pid_null));
		owner_start = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &start_null));
		stale = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
		if (isnull)
			stale = false;

		if (strcmp(state, "queued") == 0)
			return false;
		if (strcmp(state, "done") == 0 && !stale)
			return false;
		if (strcmp(state, "requested") == 0 && !pid_null && !start_null &&
			owner_pid == MyProcPid && owner_start == MyStartTimestamp)
			return true;

		/*
		 * requested by a session that does not hold the lock (it ended), or
		 * done and stale: the caller takes it.
		 */
		RunKeyPlan(&plan_take,
				   "UPDATE coord.request_keys SET state = 'requested', owner_pid = $2, "
				   "owner_start = $3, requested_at = pg_catalog.now(), queued_at = NULL, "
				   "done_at = NULL WHERE key OPERATOR(pg_catalog.=) $1",
				   SPI_OK_UPDATE, key, ARGS_OWNER, (Datum) 0, false);
		if (SPI_processed == 1)
			return true;
	}
	elog(ERROR, "request for key \"%s\" did not settle", key);
	return false;				/* keep compiler quiet */
}

/* ---------- SQL-callable functions ---------- */

/*
 * coord.request(key text, wait boolean DEFAULT true, stale_after interval
 * DEFAULT NULL, timeout interval DEFAULT NULL) returns boolean
 */
Datum
coord_request(PG_FUNCTION_ARGS)
{
	char	   *key = KeyArg(fcinfo, 0);
	bool		wait;
	Datum		stale_after = (Datum) 0;
	bool		stale_null = PG_ARGISNULL(2);
	int64		timeout_us = -1;
	uint64		lockkey;
	char	   *hk = HoldKey(key);
	CoordHoldStatus held;
	bool		acquired_now = false;
	bool		answer;
	CoordUserSwitch sw;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "wait");
	wait = PG_GETARG_BOOL(1);
	if (!stale_null)
	{
		(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(2), "stale_after", true);
		stale_after = PG_GETARG_DATUM(2);
	}
	if (!wait)
		timeout_us = 0;
	else if (!PG_ARGISNULL(3))
		timeout_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(3), "timeout", true);

	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("coord.request requires READ COMMITTED isolation"),
				 errdetail("A REPEATABLE READ or SERIALIZABLE snapshot can predate the commit of the owner that let the key go, so the answer could be wrong."),
				 errhint("Call coord.request in its own READ COMMITTED transaction.")));

	lockkey = CoordNameKey(key, strlen(key));
	held = CoordHoldState(hk);
	if (held == HOLD_NONE)
	{
		LOCKTAG		tag;
		LOCKMODE	mode = ExclusiveLock;

		CoordSetTag(&tag, lockkey, COORD_NS_REQUEST);
		if (!CoordAcquire(&tag, &mode, 1, true, timeout_us, false))
			PG_RETURN_BOOL(false);
		CoordHoldTaken(hk, &tag);
		acquired_now = true;
	}

	CoordSpiBegin(&sw);
	answer = Decide(key, stale_after, stale_null);
	CoordSpiEnd(&sw);

	if (!answer && acquired_now)
		CoordHoldDrop(hk);		/* not ours: let the next waiter read the
								 * state */
	else if (answer && held == HOLD_RELEASING)
		CoordHoldKeep(hk);		/* let go earlier in this transaction, owned
								 * again */
	PG_RETURN_BOOL(answer);
}

static void
NotOwnerError(const char *key, const char *what)
{
	char	   *state = CurrentState(key);

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot %s key \"%s\": it is not requested by this session", what, key),
			 state ? errdetail("The key is %s%s.", state,
							   strcmp(state, "requested") == 0 ? " by another session" : "")
			 : errdetail("The key has not been requested."),
			 errhint("Call coord.request(key) first and use the key while it returns true.")));
}

/*
 * CoordRequestMarkQueued: requested by this session -> queued, letting the
 * waiters go at commit; ERROR 55000 otherwise.  Also used by the job queue's
 * mark_queued(key, queue, ...).
 */
void
CoordRequestMarkQueued(const char *key)
{
	bool		owns = Owns(key);
	CoordUserSwitch sw;

	CoordSpiBegin(&sw);
	if (!owns)
		NotOwnerError(key, "queue");
	RunKeyPlan(&plan_queue,
			   "UPDATE coord.request_keys SET state = 'queued', queued_at = pg_catalog.now() "
			   "WHERE key OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'requested' "
			   "AND owner_pid OPERATOR(pg_catalog.=) $2 AND owner_start OPERATOR(pg_catalog.=) $3",
			   SPI_OK_UPDATE, key, ARGS_OWNER, (Datum) 0, false);
	if (SPI_processed != 1)
		NotOwnerError(key, "queue");
	CoordSpiEnd(&sw);

	CoordHoldRelease(HoldKey(key));
}

/*
 * CoordRequestJobFinished: the job queue's follow-up when a job linked to a
 * request key (coord.mark_queued(key, queue, ...)) finished, in the
 * finishing transaction, inside SPI, as the owner: done marks the request
 * done; dead or cancelled forgets a request still queued, so that the next
 * request() for the key does the work again.
 */
void
CoordRequestJobFinished(const char *request_key, bool done)
{
	Datum		args[1];
	Oid			argtypes[1] = {TEXTOID};

	args[0] = CStringGetTextDatum(request_key);
	if (done)
		CoordExec(&plan_request_done,
				  "UPDATE coord.request_keys SET state = 'done', "
				  "done_at = pg_catalog.now() WHERE key OPERATOR(pg_catalog.=) $1",
				  1, argtypes, args, NULL, SPI_OK_UPDATE, "marking a request done");
	else
		CoordExec(&plan_request_gone,
				  "DELETE FROM coord.request_keys WHERE key OPERATOR(pg_catalog.=) $1 "
				  "AND state OPERATOR(pg_catalog.=) 'queued'",
				  1, argtypes, args, NULL, SPI_OK_DELETE, "removing a request");
}

/* coord.mark_queued(key text): requested by this session -> queued */
Datum
coord_mark_queued(PG_FUNCTION_ARGS)
{
	CoordNotInParallel(fcinfo);
	CoordRequestMarkQueued(KeyArg(fcinfo, 0));
	PG_RETURN_VOID();
}

/* coord.mark_done(key text): done, whatever the state was */
Datum
coord_mark_done(PG_FUNCTION_ARGS)
{
	char	   *key = KeyArg(fcinfo, 0);
	CoordUserSwitch sw;

	CoordNotInParallel(fcinfo);
	CoordSpiBegin(&sw);
	RunKeyPlan(&plan_done,
			   "INSERT INTO coord.request_keys AS r (key, state, done_at) "
			   "VALUES ($1, 'done', pg_catalog.now()) "
			   "ON CONFLICT (key) DO UPDATE SET state = 'done', done_at = pg_catalog.now()",
			   SPI_OK_INSERT, key, ARGS_KEY, (Datum) 0, false);
	CoordSpiEnd(&sw);

	CoordHoldRelease(HoldKey(key));
	PG_RETURN_VOID();
}

/*
 * coord.release(key text): gives up this session's request; at commit the
 * first waiter gets true.  A key this session does not own gets a WARNING,
 * as an unlock of a lock not held does.
 */
Datum
coord_release(PG_FUNCTION_ARGS)
{
	char	   *key = KeyArg(fcinfo, 0);
	CoordUserSwitch sw;

	CoordNotInParallel(fcinfo);
	if (!Owns(key))
	{
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("key \"%s\" is not requested by this session", key)));
		PG_RETURN_VOID();
	}
	CoordSpiBegin(&sw);
	RunKeyPlan(&plan_release,
			   "DELETE FROM coord.request_keys WHERE key OPERATOR(pg_catalog.=) $1 "
			   "AND state OPERATOR(pg_catalog.=) 'requested' "
			   "AND owner_pid OPERATOR(pg_catalog.=) $2 AND owner_start OPERATOR(pg_catalog.=) $3",
			   SPI_OK_DELETE, key, ARGS_OWNER, (Datum) 0, false);
	CoordSpiEnd(&sw);

	CoordHoldRelease(HoldKey(key));
	PG_RETURN_VOID();
}

/* coord.request_state(key text): requested, queued, done or NULL */
Datum
coord_request_state(PG_FUNCTION_ARGS)
{
	char	   *key = KeyArg(fcinfo, 0);
	char	   *state;
	text	   *result = NULL;
	CoordUserSwitch sw;

	CoordSpiBegin(&sw);
	state = CurrentState(key);
	if (state != NULL)
		result = CoordSpiText(state);
	CoordSpiEnd(&sw);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(result);
}

/* coord.purge_requests(older_than interval): deletes done keys older than that */
Datum
coord_purge_requests(PG_FUNCTION_ARGS)
{
	Datum		args[1];
	Oid			argtypes[1] = {INTERVALOID};
	CoordUserSwitch sw;
	uint64		n;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "older_than");
	(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(0), "older_than", true);
	args[0] = PG_GETARG_DATUM(0);

	CoordSpiBegin(&sw);
	n = CoordExec(&plan_purge,
				  "DELETE FROM coord.request_keys "
				  "WHERE state OPERATOR(pg_catalog.=) 'done' "
				  "AND done_at OPERATOR(pg_catalog.<) "
				  "(pg_catalog.now() OPERATOR(pg_catalog.-) $1)",
				  1, argtypes, args, NULL, SPI_OK_DELETE, "purging coord.request_keys");
	CoordSpiEnd(&sw);
	PG_RETURN_INT64((int64) n);
}

/* coord.request_lock_status(): owners and waiters of request keys, by name key */
Datum
coord_request_lock_status(PG_FUNCTION_ARGS)
{
	return CoordLockStatus(fcinfo, COORD_NS_REQUEST);
}

/* coord.key_hash(key text): the 64-bit name key of a request key */
Datum
coord_key_hash(PG_FUNCTION_ARGS)
{
	text	   *t;

	CoordRequireArg(fcinfo, 0, "key");
	t = PG_GETARG_TEXT_PP(0);
	PG_RETURN_INT64((int64) CoordNameKey(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
}

/* coord.backend_alive(pid integer, started timestamptz): is that session still there? */
Datum
coord_backend_alive(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	PG_RETURN_BOOL(CoordBackendAlive(PG_GETARG_INT32(0), PG_GETARG_TIMESTAMPTZ(1)));
}

/* CoordRequestsTick's work on one requested key (a CoordRowFn) */
typedef struct RequestsTickArgs
{
	TimestampTz horizon;
	int64		deleted;
} RequestsTickArgs;

static void
PurgeRequested(HeapTuple row, TupleDesc desc, void *arg)
{
	static SPIPlanPtr plan_gone = NULL;
	RequestsTickArgs *a = (RequestsTickArgs *) arg;
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		args[2];
	char	   *key = SPI_getvalue(row, desc, 1);
	LOCKTAG		tag;
	LockAcquireResult r;

	CoordSetTag(&tag, CoordNameKey(key, strlen(key)), COORD_NS_REQUEST);
	r = LockAcquire(&tag, ExclusiveLock, false, true);
	if (r == LOCKACQUIRE_NOT_AVAIL)
		return;					/* its owner (or a requester) is there */
	if (r == LOCKACQUIRE_OK)
	{
		args[0] = CStringGetTextDatum(key);
		args[1] = TimestampTzGetDatum(a->horizon);
		a->deleted += (int64) CoordExec(&plan_gone,
										"DELETE FROM coord.request_keys "
										"WHERE key OPERATOR(pg_catalog.=) $1 "
										"AND state OPERATOR(pg_catalog.=) 'requested' "
										"AND requested_at OPERATOR(pg_catalog.<) $2",
										2, argtypes, args, NULL, SPI_OK_DELETE, "purging requested keys");
	}
	/* ALREADY_HELD: this session owns (or shares the lock of) the key */
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * CoordRequestsTick: the tick's share (docs/operations/sizing.md;
 * src/README.md, Requests, Retention).  Up to a batch of requested keys
 * requested before horizon, each deleted when its lock is free now (its
 * owner is gone).
 */
int64
CoordRequestsTick(TimestampTz horizon)
{
	static SPIPlanPtr plan_candidates = NULL;
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Datum		args[2];
	RequestsTickArgs a;

	a.horizon = horizon;
	a.deleted = 0;
	args[0] = TimestampTzGetDatum(horizon);
	args[1] = Int32GetDatum(COORD_PURGE_BATCH);
	CoordExecEach(&plan_candidates,
				  "SELECT key FROM coord.request_keys "
				  "WHERE state OPERATOR(pg_catalog.=) 'requested' "
				  "AND requested_at OPERATOR(pg_catalog.<) $1 LIMIT $2",
				  2, argtypes, args, NULL, "reading requested keys", PurgeRequested, &a);
	return a.deleted;
}
