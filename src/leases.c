/*-------------------------------------------------------------------------
 * leases.c
 *		Lease locks: locks that live in a row of coord.lease until a TTL
 *		passes on the server's clock, for callers that have no session of
 *		their own (transaction poolers, serverless functions;
 *		docs/lease-locks.md).
 *
 * A lease is live while expires_at > clock_timestamp(): only the server's
 * clock counts, never now().  A lease on a path conflicts with live leases
 * on the path, its ancestors and its descendants, and with session or
 * transaction locks on them: coord.lease_lock first try-locks the path as
 * coord.try_xact_lock would, then locks the conflicting lease rows FOR
 * UPDATE, and refuses REPEATABLE READ and SERIALIZABLE (0A000).  Its tokens
 * come from coord.fence_seq, as coord.fence's do, so a path's tokens only
 * grow across both kinds of lock.
 *
 * Nothing here waits but for a row lock or a writer under the path's
 * previous token; nothing survives an abort; a lease does not end with the
 * session that took it.
 *
 * Liveness, the hierarchy, the lock order and races, tokens, retention and
 * what wakes whom: src/README.md, "Lease locks (leases.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "common/common.h"

/* A lease lasts at most a day: a crashed holder's lease ends at its TTL. */
#define LEASE_TTL_MAX_US		(USECS_PER_DAY)
#define LEASE_HOLDER_MAX_BYTES	1024

static SPIPlanPtr plan_conflicts = NULL;
static SPIPlanPtr plan_clear = NULL;
static SPIPlanPtr plan_take = NULL;
static SPIPlanPtr plan_renew = NULL;
static SPIPlanPtr plan_unlock = NULL;

PG_FUNCTION_INFO_V1(coord_lease_lock);
PG_FUNCTION_INFO_V1(coord_renew);
PG_FUNCTION_INFO_V1(coord_lease_unlock);

/* The ttl argument: positive and at most a day (22023). */
static Interval *
TtlArg(FunctionCallInfo fcinfo, int argno)
{
	Interval   *ttl;
	int64		us;

	CoordRequireArg(fcinfo, argno, "ttl");
	ttl = PG_GETARG_INTERVAL_P(argno);
	us = CoordIntervalToMicroseconds(ttl, "ttl", false);
	if (us > LEASE_TTL_MAX_US)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be at most 1 day"),
				 errdetail("The value given was %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(ttl)))),
				 errhint("Renew a long lease with coord.renew before it runs out.")));
	return ttl;
}

/*
 * coord.lease_lock(path text, ttl interval, holder text DEFAULT NULL): a
 * lease on path until ttl passes; its token, or NULL while a conflicting
 * lease is live or a conflicting lock is held.
 */
Datum
coord_lease_lock(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	Interval   *ttl;
	text	   *holder = NULL;
	LOCKTAG		tags[COORD_PATH_MAX_DEPTH];
	LOCKMODE	modes[COORD_PATH_MAX_DEPTH];
	Datum		prefixes[COORD_PATH_MAX_DEPTH];
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Oid			conflict_types[3] = {TEXTARRAYOID, TEXTOID, TEXTOID};
	Oid			take_types[3] = {TEXTOID, INTERVALOID, TEXTOID};
	CoordUserSwitch sw;
	TimestampTz now;
	bool		live = false;
	bool		isnull;
	int64		token;
	uint64		r;
	int			i;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	CoordParsePath(PG_GETARG_TEXT_PP(0), &p);
	ttl = TtlArg(fcinfo, 1);
	if (!PG_ARGISNULL(2))
	{
		holder = PG_GETARG_TEXT_PP(2);
		CoordCheckSize("lease holder", VARSIZE_ANY_EXHDR(holder), LEASE_HOLDER_MAX_BYTES);
	}
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("coord.lease_lock needs a READ COMMITTED transaction"),
				 errdetail("A transaction snapshot taken before the path was locked may miss a conflicting lease."),
				 errhint("Take the lease in a transaction of its own, or at READ COMMITTED.")));

	/* the path in the lock manager, for this transaction, as try_xact_lock */
	for (i = 0; i < p.depth; i++)
	{
		CoordSetTag(&tags[i], p.keys[i], COORD_NS_PATH);
		modes[i] = (i == p.depth - 1) ? ExclusiveLock : RowExclusiveLock;
		prefixes[i] = PointerGetDatum(cstring_to_text_with_len(p.path, p.ends[i]));
	}
	if (!CoordAcquire(tags, modes, p.depth, false, 0, false))
		PG_RETURN_NULL();

	args[0] = PointerGetDatum(construct_array(prefixes, p.depth, TEXTOID, -1, false,
											  TYPALIGN_INT));
	args[1] = PointerGetDatum(cstring_to_text(psprintf("%s/", p.path)));
	args[2] = PointerGetDatum(cstring_to_text(psprintf("%s0", p.path)));

	CoordSpiBegin(&sw);
	/* the path itself, its ancestors, its descendants */
	CoordExec(&plan_conflicts,
			  "SELECT l.expires_at FROM coord.lease AS l "
			  "WHERE l.path OPERATOR(pg_catalog.=) ANY ($1) "
			  "OR (l.path OPERATOR(pg_catalog.>=) $2 "
			  "AND l.path OPERATOR(pg_catalog.<) $3) "
			  "FOR UPDATE OF l",
			  3, conflict_types, args, NULL, SPI_OK_SELECT, "reading coord.lease");
	now = GetCurrentTimestamp();
	for (r = 0; r < SPI_processed && !live; r++)
	{
		TimestampTz exp = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[r],
															SPI_tuptable->tupdesc, 1, &isnull));

		live = (exp > now);
	}
	if (live)
	{
		CoordSpiEnd(&sw);
		PG_RETURN_NULL();
	}
	if (SPI_processed > 0)
		CoordExec(&plan_clear,
				  "DELETE FROM coord.lease AS l "
				  "WHERE l.path OPERATOR(pg_catalog.=) ANY ($1) "
				  "OR (l.path OPERATOR(pg_catalog.>=) $2 "
				  "AND l.path OPERATOR(pg_catalog.<) $3)",
				  3, conflict_types, args, NULL, SPI_OK_DELETE, "deleting expired leases");

	args[0] = PointerGetDatum(cstring_to_text(p.path));
	args[1] = IntervalPGetDatum(ttl);
	args[2] = holder ? PointerGetDatum(holder) : (Datum) 0;
	nulls[2] = holder ? ' ' : 'n';
	CoordExec(&plan_take,
			  "WITH t AS (SELECT pg_catalog.nextval('coord.fence_seq'::pg_catalog.regclass) AS token, "
			  "pg_catalog.clock_timestamp() AS at), "
			  "f AS (INSERT INTO coord.fences AS f (path, token, fenced_at) "
			  "SELECT $1, t.token, t.at FROM t "
			  "ON CONFLICT (path) DO UPDATE SET token = excluded.token, "
			  "fenced_at = excluded.fenced_at) "
			  "INSERT INTO coord.lease (path, token, holder, taken_at, expires_at) "
			  "SELECT $1, t.token, $3, t.at, t.at OPERATOR(pg_catalog.+) $2 FROM t "
			  "RETURNING token",
			  3, take_types, args, nulls, SPI_OK_INSERT_RETURNING, "taking a lease");
	if (SPI_processed != 1)
		elog(ERROR, "taking a lease returned no token");
	token = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	CoordSpiEnd(&sw);
	PG_RETURN_INT64(token);
}

/*
 * coord.renew(path text, token bigint, ttl interval): the new expiry of the
 * live lease whose token this is; NULL when it is not (stale, expired, or
 * let go).
 */
Datum
coord_renew(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	Interval   *ttl;
	Datum		args[3];
	Oid			argtypes[3] = {TEXTOID, INT8OID, INTERVALOID};
	CoordUserSwitch sw;
	bool		isnull = true;
	TimestampTz expires = 0;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	CoordRequireArg(fcinfo, 1, "token");
	CoordParsePath(PG_GETARG_TEXT_PP(0), &p);
	ttl = TtlArg(fcinfo, 2);

	args[0] = PointerGetDatum(cstring_to_text(p.path));
	args[1] = PG_GETARG_DATUM(1);
	args[2] = IntervalPGetDatum(ttl);
	CoordSpiBegin(&sw);
	CoordExec(&plan_renew,
			  "UPDATE coord.lease AS l "
			  "SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3 "
			  "WHERE l.path OPERATOR(pg_catalog.=) $1 "
			  "AND l.token OPERATOR(pg_catalog.=) $2 "
			  "AND l.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() "
			  "RETURNING l.expires_at",
			  3, argtypes, args, NULL, SPI_OK_UPDATE_RETURNING, "renewing a lease");
	if (SPI_processed == 1)
		expires = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 1, &isnull));
	CoordSpiEnd(&sw);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(expires);
}

/*
 * coord.lease_unlock(path text, token bigint): ends the lease whose token
 * this is; true if it was live.  The row of an expired lease with this token
 * is deleted too (false).
 */
Datum
coord_lease_unlock(PG_FUNCTION_ARGS)
{
	CoordPath	p;
	Datum		args[2];
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	CoordUserSwitch sw;
	bool		was_live = false;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "path");
	CoordRequireArg(fcinfo, 1, "token");
	CoordParsePath(PG_GETARG_TEXT_PP(0), &p);

	args[0] = PointerGetDatum(cstring_to_text(p.path));
	args[1] = PG_GETARG_DATUM(1);
	CoordSpiBegin(&sw);
	CoordExec(&plan_unlock,
			  "DELETE FROM coord.lease AS l "
			  "WHERE l.path OPERATOR(pg_catalog.=) $1 "
			  "AND l.token OPERATOR(pg_catalog.=) $2 "
			  "RETURNING l.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()",
			  2, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "letting go of a lease");
	if (SPI_processed == 1)
	{
		bool		isnull;

		was_live = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	}
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(was_live);
}

/*
 * CoordLeasesTick: the tick's share (docs/operations/sizing.md).  Deletes up to a
 * batch of leases that expired before horizon (which is never later than
 * the real clock, so none of them is live); rows a lease_lock has locked
 * are skipped, and their expiry is checked again on the row deleted.
 */
int64
CoordLeasesTick(TimestampTz horizon)
{
	static SPIPlanPtr plan_purge = NULL;

	return CoordPurge(&plan_purge,
					  "DELETE FROM coord.lease AS l "
					  "WHERE l.path OPERATOR(pg_catalog.=) ANY (ARRAY("
					  "SELECT x.path FROM coord.lease AS x "
					  "WHERE x.expires_at OPERATOR(pg_catalog.<) $1 "
					  "LIMIT $2 FOR UPDATE SKIP LOCKED)) "
					  "AND l.expires_at OPERATOR(pg_catalog.<) $1",
					  horizon, "purging expired leases");
}
