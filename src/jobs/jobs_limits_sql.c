/*-------------------------------------------------------------------------
 * jobs_limits_sql.c
 *		The SQL functions of the queue's flow control
 *		(docs/flow-control.md): coord.set_limit, drop_limit, pause,
 *		resume, next_due, job_snoozes and bucket_tokens, and the tick's
 *		share of it (CoordLimitsTick).  jobs_limits.c is the claim's side,
 *		and src/jobs/README.md (Flow control) the protocol: the tables,
 *		the per-backend cache that JobsLimitsChanged invalidates (and wakes
 *		the queue's claimers at commit), the slots and the buckets.  Every
 *		function here runs inside SPI as the owner.
 *
 * Retention (CoordLimitsTick, from coord.tick).  A bucket row idle for
 * coord.retention (refilled_at) that is full again, or whose rate limit is
 * gone, means what no row means (a full bucket) and is deleted; so is a
 * pause that ended coord.retention ago; rows a claim or a pause is writing
 * are skipped.  The slots of a scope whose jobs all finished before
 * coord.retention (or are gone) are deleted under the scope's key lock,
 * taken without waiting (a busy key is left for a later tick): with it no
 * claim is counting or taking there, and a snapshot taken after it sees
 * every take committed before.  A claim that read a slot row the tick
 * then deleted finds it gone and inserts it.
 *
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

#define LIMIT_KEY_MAX	1024
#define LIMIT_POLL_US	(1000 * 1000)	/* next_due's guess when a slot's end
										 * is unknown */

PG_FUNCTION_INFO_V1(coord_set_limit);
PG_FUNCTION_INFO_V1(coord_drop_limit);
PG_FUNCTION_INFO_V1(coord_pause);
PG_FUNCTION_INFO_V1(coord_resume);
PG_FUNCTION_INFO_V1(coord_next_due);
PG_FUNCTION_INFO_V1(coord_job_snoozes);
PG_FUNCTION_INFO_V1(coord_bucket_tokens);

/* ---------- arguments ---------- */

static text *
LimitKeyArg(FunctionCallInfo fcinfo, int argno)
{
	text	   *t;
	int			len;

	if (PG_ARGISNULL(argno))
		return NULL;
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	if (len == 0 || len > LIMIT_KEY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("limit_key must have 1 to %d bytes", LIMIT_KEY_MAX)));
	return t;
}

static int32
PositiveArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	int32		v;

	if (PG_ARGISNULL(argno))
		return 0;
	v = PG_GETARG_INT32(argno);
	if (v <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be positive", what),
				 errdetail("%s is %d.", what, v),
				 errhint("Pass NULL to remove that part of the limit.")));
	return v;
}

/* ---------- SQL functions ---------- */

/* The free slots of a queue go, and those of a scope without a concurrency limit all. */
static void
TidyRunning(Datum queue)
{
	static SPIPlanPtr plan_tidy = NULL;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = queue;
	CoordExec(&plan_tidy,
			  "DELETE FROM coord.job_running AS r WHERE r.queue OPERATOR(pg_catalog.=) $1 "
			  "AND (NOT EXISTS (SELECT 1 FROM coord.job_limit AS l "
			  "                 WHERE l.queue OPERATOR(pg_catalog.=) $1 "
			  "                   AND l.per_key OPERATOR(pg_catalog.=) r.per_key "
			  "                   AND l.concurrency IS NOT NULL) "
			  "     OR NOT EXISTS (SELECT 1 FROM coord.job AS j "
			  "                    WHERE j.id OPERATOR(pg_catalog.=) r.job_id "
			  "                      AND j.token OPERATOR(pg_catalog.=) r.token "
			  "                      AND (j.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() "
			  "                           OR coord.job_claimed(j.id))))",
			  1, argtypes, args, NULL, SPI_OK_DELETE, "tidying slots");
}

/*
 * coord.set_limit(queue, concurrency, rate, per, burst, per_key): NULL
 * removes that part; with neither part left the limit goes.
 */
Datum
coord_set_limit(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_put = NULL;
	static SPIPlanPtr plan_del = NULL;
	static SPIPlanPtr plan_backfill = NULL;
	static SPIPlanPtr plan_buckets = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	int32		conc = PositiveArg(fcinfo, 1, "concurrency");
	int32		rate = PositiveArg(fcinfo, 2, "rate");
	int32		burst = PositiveArg(fcinfo, 4, "burst");
	bool		per_key;
	Oid			argtypes[6] = {TEXTOID, BOOLOID, INT4OID, INT4OID, INTERVALOID, INT4OID};
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	CoordUserSwitch sw;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 3, "per");
	CoordRequireArg(fcinfo, 5, "per_key");
	(void) CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(3), "per", false);
	per_key = PG_GETARG_BOOL(5);
	if (burst > 0 && rate == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("burst needs a rate"),
				 errdetail("A burst is the size of the token bucket of a rate limit.")));
	args[0] = CStringGetTextDatum(queue);
	args[1] = BoolGetDatum(per_key);
	args[2] = Int32GetDatum(conc);
	nulls[2] = conc > 0 ? ' ' : 'n';
	args[3] = Int32GetDatum(rate);
	nulls[3] = rate > 0 ? ' ' : 'n';
	args[4] = PG_GETARG_DATUM(3);
	args[5] = Int32GetDatum(burst);
	nulls[5] = burst > 0 ? ' ' : 'n';

	CoordSpiBegin(&sw);
	JobsLookupRels();
	if (conc == 0 && rate == 0)
		CoordExec(&plan_del,
				  "DELETE FROM coord.job_limit WHERE queue OPERATOR(pg_catalog.=) $1 "
				  "AND per_key OPERATOR(pg_catalog.=) $2",
				  2, argtypes, args, nulls, SPI_OK_DELETE, "set_limit");
	else
		CoordExec(&plan_put,
				  "INSERT INTO coord.job_limit (queue, per_key, concurrency, rate, per, burst) "
				  "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (queue, per_key) DO UPDATE "
				  "SET concurrency = EXCLUDED.concurrency, rate = EXCLUDED.rate, "
				  "per = EXCLUDED.per, burst = EXCLUDED.burst",
				  6, argtypes, args, nulls, SPI_OK_INSERT, "set_limit");
	/* without a rate the scope's buckets mean nothing */
	if (rate == 0)
		CoordExec(&plan_buckets,
				  "DELETE FROM coord.job_bucket WHERE queue OPERATOR(pg_catalog.=) $1 "
				  "AND (limit_key OPERATOR(pg_catalog.=) '') OPERATOR(pg_catalog.<>) $2",
				  2, argtypes, args, nulls, SPI_OK_DELETE, "set_limit");
	TidyRunning(args[0]);
	/* claims running now take slots: they were made before the limit */
	if (conc > 0)
		CoordExec(&plan_backfill,
				  "INSERT INTO coord.job_running (queue, per_key, limit_key, slot, job_id, token) "
				  "SELECT j.queue, $2, j.k, COALESCE((SELECT pg_catalog.max(r.slot) FROM coord.job_running AS r "
				  "  WHERE r.queue OPERATOR(pg_catalog.=) $1 AND r.per_key OPERATOR(pg_catalog.=) $2 "
				  "    AND r.limit_key OPERATOR(pg_catalog.=) j.k), -1) "
				  "  OPERATOR(pg_catalog.+) (pg_catalog.row_number() OVER (PARTITION BY j.k ORDER BY j.id))::pg_catalog.int4, "
				  "  j.id, j.token "
				  "FROM (SELECT x.*, CASE WHEN $2 THEN x.limit_key ELSE '' END AS k FROM coord.job AS x "
				  "      WHERE pg_catalog.hashtextextended(x.queue, 0) OPERATOR(pg_catalog.=) "
				  "            pg_catalog.hashtextextended($1, 0) AND x.queue OPERATOR(pg_catalog.=) $1 "
				  "        AND (NOT $2 OR x.limit_key IS NOT NULL) "
				  "        AND (x.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() "
				  "             OR coord.job_claimed(x.id))) AS j "
				  "WHERE NOT EXISTS (SELECT 1 FROM coord.job_running AS r "
				  "  WHERE r.queue OPERATOR(pg_catalog.=) $1 AND r.per_key OPERATOR(pg_catalog.=) $2 "
				  "    AND r.job_id OPERATOR(pg_catalog.=) j.id AND r.token OPERATOR(pg_catalog.=) j.token) "
				  "ON CONFLICT DO NOTHING",
				  2, argtypes, args, nulls, SPI_OK_INSERT, "set_limit");
	JobsLimitsChanged(false, queue);
	CoordSpiEnd(&sw);
	PG_RETURN_VOID();
}

/* coord.drop_limit(queue, per_key) returns whether there was one */
Datum
coord_drop_limit(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_drop = NULL;
	static SPIPlanPtr plan_buckets = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	Oid			argtypes[2] = {TEXTOID, BOOLOID};
	Datum		args[2];
	CoordUserSwitch sw;
	bool		found;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "per_key");
	args[0] = CStringGetTextDatum(queue);
	args[1] = PG_GETARG_DATUM(1);
	CoordSpiBegin(&sw);
	JobsLookupRels();
	CoordExec(&plan_drop,
			  "DELETE FROM coord.job_limit WHERE queue OPERATOR(pg_catalog.=) $1 "
			  "AND per_key OPERATOR(pg_catalog.=) $2",
			  2, argtypes, args, NULL, SPI_OK_DELETE, "drop_limit");
	found = SPI_processed > 0;
	CoordExec(&plan_buckets,
			  "DELETE FROM coord.job_bucket WHERE queue OPERATOR(pg_catalog.=) $1 "
			  "AND (limit_key OPERATOR(pg_catalog.<>) '') OPERATOR(pg_catalog.=) $2",
			  2, argtypes, args, NULL, SPI_OK_DELETE, "drop_limit");
	TidyRunning(args[0]);
	JobsLimitsChanged(false, queue);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(found);
}

/* coord.pause(queue, until, limit_key) returns whether it was not paused */
Datum
coord_pause(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_gone = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	text	   *key = LimitKeyArg(fcinfo, 2);
	TimestampTz until = PG_ARGISNULL(1) ? DT_NOEND : PG_GETARG_TIMESTAMPTZ(1);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		newly;

	CoordNotInParallel(fcinfo);
	if (!PG_ARGISNULL(1) && TIMESTAMP_NOT_FINITE(until))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("until must be finite"),
				 errhint("Pass NULL to pause until coord.resume.")));
	args[0] = CStringGetTextDatum(queue);
	CoordSpiBegin(&sw);
	/* pauses of the queue that have ended go first */
	CoordExec(&plan_gone,
			  "DELETE FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
			  "AND until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()",
			  1, argtypes, args, NULL, SPI_OK_DELETE, "pause");
	newly = JobsLimitPause(queue, key, until, false);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(newly);
}

/*
 * coord.resume(queue, limit_key) returns whether it was paused; 42704 for a
 * queue nothing is known of (no live job, limit or pause).
 */
Datum
coord_resume(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_resume = NULL;
	static SPIPlanPtr plan_known = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	text	   *key = LimitKeyArg(fcinfo, 1);
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	CoordUserSwitch sw;
	bool		was = false;
	uint64		r;

	CoordNotInParallel(fcinfo);
	args[0] = CStringGetTextDatum(queue);
	args[1] = key ? PointerGetDatum(key) : CStringGetTextDatum("");
	CoordSpiBegin(&sw);
	JobsLookupRels();
	CoordExec(&plan_resume,
			  "DELETE FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
			  "AND (limit_key OPERATOR(pg_catalog.=) $2 "
			  "     OR until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()) "
			  "RETURNING limit_key OPERATOR(pg_catalog.=) $2 "
			  "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
			  2, argtypes, args, NULL, SPI_OK_DELETE_RETURNING, "resume");
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;

		was |= DatumGetBool(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
	}
	if (SPI_processed == 0)
	{
		CoordExecLimit(&plan_known,
					   "SELECT 1 WHERE EXISTS (SELECT 1 FROM coord.job_limit "
					   "WHERE queue OPERATOR(pg_catalog.=) $1) "
					   "OR EXISTS (SELECT 1 FROM coord.job AS j "
					   "WHERE pg_catalog.hashtextextended(j.queue, 0) OPERATOR(pg_catalog.=) "
					   "pg_catalog.hashtextextended($1, 0) AND j.queue OPERATOR(pg_catalog.=) $1)",
					   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "resume");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("queue \"%s\" does not exist", queue),
					 errdetail("No live job, limit or pause names it.")));
	}
	else
		JobsLimitsChanged(true, queue);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(was);
}

/* The bucket of (queue, key) at now, for next_due: tokens now. */
static double
ReadBucket(Datum queue, Datum key, const LimitSpec *s, TimestampTz now)
{
	static SPIPlanPtr plan_read = NULL;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	bool		isnull;

	args[0] = queue;
	args[1] = key;
	CoordExecReadOnly(&plan_read,
					  "SELECT tokens, refilled_at FROM coord.job_bucket "
					  "WHERE queue OPERATOR(pg_catalog.=) $1 AND limit_key OPERATOR(pg_catalog.=) $2",
					  2, argtypes, args, NULL, 1, "reading a token bucket");
	if (SPI_processed == 0)
		return s->burst;
	return JobsBucketNow(DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)),
						 DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)),
						 now, s);
}

/*
 * When (queue, key) has a free slot under spec, at the earliest: now if it
 * has, else the end of its first running lease, or a poll's length when
 * only session-bound claims run (their end is a session's).
 */
static TimestampTz
SlotFree(Datum queue, Datum key, bool whole, const LimitSpec *s, TimestampTz now)
{
	static SPIPlanPtr plan_slots = NULL;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, BOOLOID};
	Datum		args[3];
	bool		isnull;
	int64		running;
	Datum		first;

	args[0] = queue;
	args[1] = key;
	args[2] = BoolGetDatum(!whole);
	CoordExecReadOnly(&plan_slots,
					  "SELECT pg_catalog.count(*), pg_catalog.min(j.lease_until) "
					  "FROM coord.job_running AS r "
					  "JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id "
					  "AND j.token OPERATOR(pg_catalog.=) r.token "
					  "WHERE r.queue OPERATOR(pg_catalog.=) $1 AND r.per_key OPERATOR(pg_catalog.=) $3 "
					  "AND r.limit_key OPERATOR(pg_catalog.=) $2 "
					  "AND (j.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() "
					  "     OR coord.job_claimed(j.id))",
					  3, argtypes, args, NULL, 1, "counting running claims");
	running = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (running < s->conc)
		return now;
	first = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (isnull)
		return now + LIMIT_POLL_US;
	return Min(DatumGetTimestampTz(first), now + LIMIT_POLL_US);
}

/* When a scope (the queue, or a key under the per-key spec) could take a claim. */
static TimestampTz
ScopeDue(Datum queue, Datum key, bool whole, const LimitSpec *s, TimestampTz now)
{
	TimestampTz t = now;

	if (s->rate > 0)
		t = Max(t, JobsBucketRefill(ReadBucket(queue, key, s, now), now, s));
	if (s->conc > 0)
		t = Max(t, SlotFree(queue, key, whole, s, now));
	return t;
}

/*
 * coord.next_due(queue): when the next job of the queue could be claimed,
 * at the earliest: its run_at, and the ends of what holds it back (a pause,
 * a bucket's refill, a full limit's first lease end).  NULL when no job
 * waits, or every one waits for coord.resume.
 */
Datum
coord_next_due(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_groups = NULL;
	static SPIPlanPtr plan_key_pause = NULL;
	char	   *queue = CoordNameArg(fcinfo, 0, "queue", false);
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	CoordUserSwitch sw;
	QueueLimits *ql;
	QueueLimits qcopy;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz qdue = now;
	TimestampTz best = DT_NOEND;
	bool		any = false;
	uint64		r,
				ngroups;
	SPITupleTable *groups;

	CoordNotInParallel(fcinfo);
	args[0] = CStringGetTextDatum(queue);
	CoordSpiBegin(&sw);
	ql = JobsLimitsFor(queue);
	if (ql != NULL)
	{
		qcopy = *ql;			/* the cache may be reset by what runs below */
		ql = &qcopy;
		if (ql->paused_until == DT_NOEND)
		{
			CoordSpiEnd(&sw);
			PG_RETURN_NULL();	/* until coord.resume, which wakes */
		}
		qdue = ScopeDue(args[0], CStringGetTextDatum(""), true, &ql->q, now);
		if (ql->paused_until > now)
			qdue = Max(qdue, ql->paused_until);
	}
	CoordExecReadOnly(&plan_groups,
					  "SELECT j.limit_key, pg_catalog.min(j.run_at) FROM coord.job AS j "
					  "WHERE pg_catalog.hashtextextended(j.queue, 0) OPERATOR(pg_catalog.=) "
					  "pg_catalog.hashtextextended($1, 0) AND j.queue OPERATOR(pg_catalog.=) $1 "
					  "AND (j.lease_until IS NULL OR j.lease_until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()) "
					  "AND NOT coord.job_claimed(j.id) "
					  "GROUP BY j.limit_key",
					  1, argtypes, args, NULL, 0, "next_due");
	groups = SPI_tuptable;
	ngroups = SPI_processed;
	for (r = 0; r < ngroups; r++)
	{
		bool		knull,
					isnull;
		Datum		key = SPI_getbinval(groups->vals[r], groups->tupdesc, 1, &knull);
		TimestampTz due = DatumGetTimestampTz(SPI_getbinval(groups->vals[r], groups->tupdesc, 2, &isnull));

		CHECK_FOR_INTERRUPTS();
		if (ql != NULL && !knull)
		{
			if (ql->key_pauses)
			{
				args[1] = key;
				CoordExecReadOnly(&plan_key_pause,
								  "SELECT until FROM coord.job_pause WHERE queue OPERATOR(pg_catalog.=) $1 "
								  "AND limit_key OPERATOR(pg_catalog.=) $2 "
								  "AND (until IS NULL OR until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())",
								  2, argtypes, args, NULL, 1, "next_due");
				if (SPI_processed == 1)
				{
					Datum		until = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

					if (isnull)
						continue;	/* until resumed */
					due = Max(due, DatumGetTimestampTz(until));
				}
			}
			if (ql->k.conc > 0 || ql->k.rate > 0)
				due = Max(due, ScopeDue(args[0], key, false, &ql->k, now));
		}
		any = true;
		best = Min(best, due);
	}
	CoordSpiEnd(&sw);
	if (!any)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(Max(Max(best, qdue), now));
}

/* coord.job_snoozes(id): a live job's snoozes, NULL once it finished */
Datum
coord_job_snoozes(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_snoozes = NULL;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		found;
	int32		snoozes = 0;

	CoordRequireArg(fcinfo, 0, "id");
	args[0] = PG_GETARG_DATUM(0);
	CoordSpiBegin(&sw);
	CoordExecReadOnly(&plan_snoozes,
					  "SELECT snoozes FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1",
					  1, argtypes, args, NULL, 1, "job_snoozes");
	found = SPI_processed == 1;
	if (found)
	{
		bool		isnull;

		snoozes = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	CoordSpiEnd(&sw);
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_INT32(snoozes);
}

/* coord.bucket_tokens(tokens, refilled_at, rate, per, burst): a bucket's tokens now */
Datum
coord_bucket_tokens(PG_FUNCTION_ARGS)
{
	LimitSpec	s;

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_ARGISNULL(4))
		PG_RETURN_NULL();
	s.rate = PG_GETARG_INT32(2);
	s.per_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(3), "per", false);
	s.burst = PG_GETARG_INT32(4);
	s.conc = 0;
	if (s.rate <= 0)
		PG_RETURN_NULL();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_FLOAT8((double) s.burst);
	/* -infinity would overflow the time since the refill */
	if (TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("refilled_at must be a finite time")));
	PG_RETURN_FLOAT8(JobsBucketNow(PG_GETARG_FLOAT8(0), PG_GETARG_TIMESTAMPTZ(1),
								   GetCurrentStatementStartTimestamp(), &s));
}

/* ---------- retention ---------- */

/*
 * a slot row r. whose job is gone, or finished before horizon ($1): its
 * claim ended that long ago at least
 */
#define SLOT_OLD(r) \
	"(NOT EXISTS (SELECT 1 FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) " r ".job_id) " \
	"AND NOT EXISTS (SELECT 1 FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) " r ".job_id " \
	"AND h.finished_at OPERATOR(pg_catalog.>=) $1))"

/* scopes whose free slots one tick deletes (one key lock at a time) */
#define LIMIT_TICK_SCOPES	256

/* CoordLimitsTick's work on a scope whose claims all ended (a CoordRowFn) */
typedef struct LimitsTickArgs
{
	TimestampTz horizon;
	int64		n;
} LimitsTickArgs;

static void
PurgeIdleSlots(HeapTuple row, TupleDesc desc, void *arg)
{
	static SPIPlanPtr plan_slots = NULL;
	LimitsTickArgs *a = (LimitsTickArgs *) arg;
	Oid			argtypes[4] = {TIMESTAMPTZOID, TEXTOID, BOOLOID, TEXTOID};
	Datum		args[4];
	bool		isnull;
	char	   *queue = SPI_getvalue(row, desc, 1);
	text	   *key = DatumGetTextPP(SPI_getbinval(row, desc, 3, &isnull));
	LOCKTAG		tag;
	LockAcquireResult r;

	JobsKeyTag(&tag, queue, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	r = LockAcquire(&tag, ExclusiveLock, false, true);
	if (r == LOCKACQUIRE_NOT_AVAIL)
		return;					/* a claim counts there now */
	args[0] = TimestampTzGetDatum(a->horizon);
	args[1] = CStringGetTextDatum(queue);
	args[2] = SPI_getbinval(row, desc, 2, &isnull);
	args[3] = PointerGetDatum(key);
	a->n += (int64) CoordExec(&plan_slots,
							  "DELETE FROM coord.job_running AS r "
							  "WHERE r.queue OPERATOR(pg_catalog.=) $2 AND r.per_key OPERATOR(pg_catalog.=) $3 "
							  "AND r.limit_key OPERATOR(pg_catalog.=) $4 "
							  "AND NOT EXISTS (SELECT 1 FROM coord.job_running AS o "
							  "WHERE o.queue OPERATOR(pg_catalog.=) $2 AND o.per_key OPERATOR(pg_catalog.=) $3 "
							  "AND o.limit_key OPERATOR(pg_catalog.=) $4 AND NOT " SLOT_OLD("o") ")",
							  4, argtypes, args, NULL, SPI_OK_DELETE, "purging idle slots");
	/* a claim that takes the key now waits for this deletion's commit */
	if (r == LOCKACQUIRE_OK)
		LockRelease(&tag, ExclusiveLock, false);
}

/*
 * CoordLimitsTick: the tick's share (docs/operations/sizing.md; the header
 * above): idle full buckets, pauses ended before horizon, and the slots of
 * scopes whose claims all ended before it.  Returns how many rows it
 * deleted.
 */
int64
CoordLimitsTick(TimestampTz horizon)
{
	static SPIPlanPtr plan_buckets = NULL;
	static SPIPlanPtr plan_pauses = NULL;
	static SPIPlanPtr plan_scopes = NULL;
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Datum		args[2];
	int64		n = 0;
	LimitsTickArgs a;

	args[0] = TimestampTzGetDatum(horizon);
	args[1] = Int32GetDatum(COORD_PURGE_BATCH);
	n += (int64) CoordExec(&plan_buckets,
						   "DELETE FROM coord.job_bucket AS b "
						   "WHERE (b.queue, b.limit_key) IN ("
						   "SELECT x.queue, x.limit_key FROM coord.job_bucket AS x "
						   "LEFT JOIN coord.job_limit AS l ON l.queue OPERATOR(pg_catalog.=) x.queue "
						   "AND l.per_key OPERATOR(pg_catalog.=) (x.limit_key OPERATOR(pg_catalog.<>) '') "
						   "AND l.rate IS NOT NULL "
						   "WHERE x.refilled_at OPERATOR(pg_catalog.<) $1 "
						   "AND (l.queue IS NULL OR coord.bucket_tokens(x.tokens, x.refilled_at, l.rate, l.per, "
						   "COALESCE(l.burst, l.rate)) OPERATOR(pg_catalog.>=) COALESCE(l.burst, l.rate)) "
						   "LIMIT $2 FOR UPDATE OF x SKIP LOCKED)",
						   2, argtypes, args, NULL, SPI_OK_DELETE, "purging token buckets");

	CoordExec(&plan_pauses,
			  "DELETE FROM coord.job_pause AS p "
			  "WHERE (p.queue, p.limit_key) IN ("
			  "SELECT x.queue, x.limit_key FROM coord.job_pause AS x "
			  "WHERE x.until OPERATOR(pg_catalog.<) $1 "
			  "LIMIT $2 FOR UPDATE SKIP LOCKED)",
			  2, argtypes, args, NULL, SPI_OK_DELETE, "purging ended pauses");
	if (SPI_processed > 0)
		JobsLimitsChanged(true, NULL);
	n += (int64) SPI_processed;

	args[0] = TimestampTzGetDatum(horizon);
	args[1] = Int32GetDatum(LIMIT_TICK_SCOPES);
	a.horizon = horizon;
	a.n = n;
	CoordExecEach(&plan_scopes,
				  "SELECT r.queue, r.per_key, r.limit_key FROM coord.job_running AS r "
				  "GROUP BY r.queue, r.per_key, r.limit_key "
				  "HAVING pg_catalog.bool_and" SLOT_OLD("r") " "
				  "LIMIT $2",
				  2, argtypes, args, NULL, "reading idle slots", PurgeIdleSlots, &a);
	return a.n;
}
