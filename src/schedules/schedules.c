/*-------------------------------------------------------------------------
 * schedules.c
 *		Recurring events (docs/schedules.md); their share of coord.tick
 *		(tick.c).
 *
 * Owns coord.schedule, coord.unschedule and coord.cron_next (the SQL
 * functions), the finish hook the queue calls for "s:" jobs (which puts a
 * schedule's next instance on), and coord.tick's share: schedules with no
 * instance are repaired from next_run_at.  Slots are computed by cron.c
 * (cron schedules, in the schedule's zone) or from `every`.
 *
 * The family's protocol -- instances and who puts them on, redefinition
 * and drop, time zones, hostile definitions -- is src/schedules/README.md.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "schedules/cron.h"
#include "jobs/jobs.h"
#include "schedules/schedules.h"

/* Instances are retried this often before the schedule moves on. */
#define SCHEDULE_MAX_ATTEMPTS	3

/* TimestampTz (microseconds from 2000-01-01) and Unix seconds */
#define UNIX_EPOCH_OFFSET_SECS	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

static SPIPlanPtr plan_upsert = NULL;
static SPIPlanPtr plan_get = NULL;
static SPIPlanPtr plan_finished = NULL;
static SPIPlanPtr plan_drop_instance = NULL;
static SPIPlanPtr plan_delete = NULL;
static SPIPlanPtr plan_orphans = NULL;
static SPIPlanPtr plan_set_next = NULL;
static SPIPlanPtr plan_error = NULL;
static SPIPlanPtr plan_error_stop = NULL;

PG_FUNCTION_INFO_V1(coord_schedule);
PG_FUNCTION_INFO_V1(coord_unschedule);
PG_FUNCTION_INFO_V1(coord_cron_next_sql);

/* A schedule's definition, as stored. */
typedef struct ScheduleDef
{
	int64		id;
	char	   *name;
	char	   *queue;
	int64		every_us;		/* 0 for a cron schedule */
	char	   *cron;
	CoordCron	parsed;
	char	   *tz;				/* zone name as stored (canonical) */
	pg_tz	   *zone;			/* NULL: UTC */
	Datum		payload;
	TimestampTz starts_at;
	bool		fixed_rate;
	char	   *host;
	TimestampTz next_run_at;
	bool		next_null;
	TimestampTz last_run_at;
	bool		last_null;
} ScheduleDef;

/* Parses a cron expression, or raises the error naming the bad field. */
static void
ParseCron(const char *expr, CoordCron *out)
{
	char		err[256];

	if (!coord_cron_parse(expr, out, err, sizeof(err)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression \"%s\"", expr),
				 errdetail("%c%s.", pg_toupper((unsigned char) err[0]), err + 1),
				 errhint("A cron expression has five fields: minute hour day-of-month month day-of-week, "
						 "or is one of @hourly, @daily, @weekly, @monthly, @yearly.")));
}

/* The first fire time strictly after `after`, or DT_NOEND when there is none. */
static TimestampTz
CronNext(const CoordCron *c, const pg_tz *zone, TimestampTz after)
{
	int64		secs;
	int64		next;
	CoordCronZone z;

	/* floor division: times before 1970 are negative */
	secs = after / USECS_PER_SEC;
	if (after % USECS_PER_SEC < 0)
		secs--;
	z.next_change = CoordZoneNextChangeUnix;
	z.arg = unconstify(pg_tz *, zone);
	next = coord_cron_next_tz(c, secs + UNIX_EPOCH_OFFSET_SECS, zone ? &z : NULL);
	/* -1 is "never"; other times before 1970 are negative too */
	if (next == -1)
		return DT_NOEND;
	return (next - UNIX_EPOCH_OFFSET_SECS) * USECS_PER_SEC;
}

/* slot + usec, or 22008 when a run of the schedule would be out of range */
static TimestampTz
SlotAdd(const ScheduleDef *d, TimestampTz slot, int64 usec)
{
	return CoordTimeAdd(slot, usec, psprintf("a run of schedule \"%s\"", d->name));
}

static char *
SchedOrigin(const char *name)
{
	return psprintf(COORD_ORIGIN_SCHEDULE "%s", name);
}

/*
 * The slot of a schedule's first instance: starts_at (default now) for an
 * interval, the first cron time at or after it for a cron expression.
 */
static TimestampTz
FirstSlot(const ScheduleDef *d, TimestampTz now)
{
	TimestampTz from = Max(d->starts_at, now);

	if (d->cron == NULL)
	{
		if (!d->fixed_rate || d->starts_at >= now)
			return from;
		/* fixed rate: the latest grid slot not after now, due at once */
		return d->starts_at + ((now - d->starts_at) / d->every_us) * d->every_us;
	}
	return CronNext(&d->parsed, d->zone, from - 1);
}

/*
 * The slot of the first instance of a changed definition: as for a new one,
 * but not before the new rules allow after the last run, so that changing a
 * payload does not make an event run again at once.
 */
static TimestampTz
RedefinedSlot(const ScheduleDef *d, TimestampTz now)
{
	TimestampTz slot;

	if (d->last_null)
		return FirstSlot(d, now);
	if (d->cron != NULL)
		return CronNext(&d->parsed, d->zone, Max(d->last_run_at, Max(d->starts_at, now) - 1));
	if (!d->fixed_rate)
		return Max(SlotAdd(d, d->last_run_at, d->every_us), d->starts_at);
	if (d->last_run_at < d->starts_at)
		return FirstSlot(d, now);
	/* the first grid slot after the last run; one run now if that has passed */
	slot = SlotAdd(d, d->starts_at + ((d->last_run_at - d->starts_at) / d->every_us) * d->every_us,
				   d->every_us);
	return slot > now ? slot : FirstSlot(d, now);
}

/*
 * The slot of the instance after one for slot `slot` that finished at
 * `finished`; see src/schedules/README.md for the rules.
 */
static TimestampTz
NextSlot(const ScheduleDef *d, TimestampTz slot, TimestampTz finished)
{
	if (d->cron == NULL)
	{
		TimestampTz next;

		if (!d->fixed_rate)
			return SlotAdd(d, finished, d->every_us);
		if (slot < d->starts_at)
			slot = d->starts_at;
		next = SlotAdd(d, slot, d->every_us);
		if (next > finished)
			return next;
		/* slots were missed while it ran: one run now, for the latest of them */
		return d->starts_at + ((finished - d->starts_at) / d->every_us) * d->every_us;
	}
	else
	{
		TimestampTz next;
		TimestampTz latest = DT_NOBEGIN;
		int			guard = 0;

		if (!d->fixed_rate)
			return CronNext(&d->parsed, d->zone, Max(finished, slot));
		next = CronNext(&d->parsed, d->zone, slot);
		if (next > finished)
			return next;
		/* collapse the missed slots into one run for the latest of them */
		while (next <= finished && next != DT_NOEND && guard++ < 1000000)
		{
			CHECK_FOR_INTERRUPTS();
			latest = next;
			next = CronNext(&d->parsed, d->zone, next);
		}
		return latest;
	}
}

/*
 * Reads and locks the schedule's row (inside SPI); false when there is none.
 * The lock orders a finish hook, coord.schedule and a tick on one schedule.
 */
static bool
GetSchedule(const char *name, ScheduleDef *d)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	HeapTuple	row;
	TupleDesc	desc;
	bool		isnull;
	Datum		v;

	args[0] = CStringGetTextDatum(name);
	CoordExecLimit(&plan_get,
				   "SELECT name, queue, every, cron, payload, starts_at, fixed_rate, host, "
				   "next_run_at, id, last_run_at, tz FROM coord.schedule_defs WHERE name OPERATOR(pg_catalog.=) $1 "
				   "FOR NO KEY UPDATE",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "reading a schedule");
	if (SPI_processed != 1)
		return false;
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	d->name = SPI_getvalue(row, desc, 1);
	d->queue = SPI_getvalue(row, desc, 2);
	v = SPI_getbinval(row, desc, 3, &isnull);
	d->every_us = isnull ? 0 : CoordIntervalToMicroseconds(DatumGetIntervalP(v), "every", false);
	d->cron = SPI_getvalue(row, desc, 4);
	if (d->cron)
		ParseCron(d->cron, &d->parsed);
	d->payload = SPI_datumTransfer(SPI_getbinval(row, desc, 5, &isnull), false, -1);
	d->starts_at = DatumGetTimestampTz(SPI_getbinval(row, desc, 6, &isnull));
	d->fixed_rate = DatumGetBool(SPI_getbinval(row, desc, 7, &isnull));
	d->host = SPI_getvalue(row, desc, 8);
	v = SPI_getbinval(row, desc, 9, &isnull);
	d->next_null = isnull;
	d->next_run_at = isnull ? 0 : DatumGetTimestampTz(v);
	d->id = DatumGetInt64(SPI_getbinval(row, desc, 10, &isnull));
	v = SPI_getbinval(row, desc, 11, &isnull);
	d->last_null = isnull;
	d->last_run_at = isnull ? 0 : DatumGetTimestampTz(v);
	d->zone = CoordZoneArg(SPI_getvalue(row, desc, 12), &d->tz);
	return true;
}

/* Stores the slot of the next instance and creates it (inside SPI, as owner). */
static bool
PutInstance(const ScheduleDef *d, TimestampTz slot)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};

	args[0] = CStringGetTextDatum(d->name);
	args[1] = TimestampTzGetDatum(slot);
	if (slot == DT_NOEND)
		nulls[1] = 'n';			/* a cron expression that never fires again */
	CoordExec(&plan_set_next,
			  "UPDATE coord.schedule_defs SET next_run_at = $2, last_error = NULL "
			  "WHERE name OPERATOR(pg_catalog.=) $1",
			  2, argtypes, args, nulls, SPI_OK_UPDATE, "scheduling");
	if (slot == DT_NOEND)
		return false;
	return CoordEnqueueOrigin(d->queue, DatumGetJsonbP(d->payload), slot, d->host,
							  SCHEDULE_MAX_ATTEMPTS, SchedOrigin(d->name), NULL, InvalidOid) != 0;
}

/*
 * Removes the schedule's instance if nobody has claimed it (inside SPI);
 * returns whether one was left running.
 */
static bool
DropUnclaimedInstance(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int64		id;

	args[0] = CStringGetTextDatum(SchedOrigin(name));
	(void) CoordDeleteUnclaimed(&plan_drop_instance,
								"SELECT id FROM coord.job WHERE origin OPERATOR(pg_catalog.=) $1",
								1, argtypes, args);
	id = CoordOriginJob(SchedOrigin(name));
	return id != 0;
}

/*
 * Records why a schedule's work failed (inside SPI, as the owner).  With
 * stop (the finish hook could not put the next instance on), the finished
 * run is recorded too and next_run_at cleared: the schedule then waits for
 * coord.schedule to redefine it, and ticks do not repair it, which would
 * run the finished slot again.
 */
static void
RecordScheduleError(const char *name, const char *error, bool stop, const char *state,
					TimestampTz finished_at)
{
	Oid			argtypes[4] = {TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		args[4];

	args[0] = CStringGetTextDatum(name);
	args[1] = CStringGetTextDatum(error);
	args[2] = CStringGetTextDatum(stop ? state : "");
	args[3] = TimestampTzGetDatum(finished_at);
	if (stop)
		CoordExec(&plan_error_stop,
				  "UPDATE coord.schedule_defs SET last_error = $2, last_state = $3, "
				  "last_run_at = $4, next_run_at = NULL "
				  "WHERE name OPERATOR(pg_catalog.=) $1",
				  4, argtypes, args, NULL, SPI_OK_UPDATE, "recording a schedule's error");
	else
		CoordExec(&plan_error,
				  "UPDATE coord.schedule_defs SET last_error = $2 "
				  "WHERE name OPERATOR(pg_catalog.=) $1",
				  2, argtypes, args, NULL, SPI_OK_UPDATE, "recording a schedule's error");
}

/* ---------- the finish hook ---------- */

typedef struct FinishArgs
{
	const char *name;
	const char *state;
	TimestampTz finished_at;
} FinishArgs;

static void
ScheduleFinishedWork(void *arg)
{
	FinishArgs *a = (FinishArgs *) arg;
	const char *name = a->name;
	TimestampTz finished_at = a->finished_at;
	ScheduleDef d;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		args[3];
	TimestampTz slot;

	if (!GetSchedule(name, &d))
		return;					/* unscheduled while it ran */
	args[0] = CStringGetTextDatum(name);
	args[1] = CStringGetTextDatum(a->state);
	args[2] = TimestampTzGetDatum(finished_at);
	CoordExec(&plan_finished,
			  "UPDATE coord.schedule_defs SET last_run_at = $3, last_state = $2 "
			  "WHERE name OPERATOR(pg_catalog.=) $1",
			  3, argtypes, args, NULL, SPI_OK_UPDATE, "recording a run");
	slot = d.next_null ? finished_at : d.next_run_at;
	(void) PutInstance(&d, NextSlot(&d, slot, finished_at));
}

/*
 * The finish hook (registered for COORD_ORIGIN_SCHEDULE), in the
 * transaction that finished an instance.  It runs isolated: a schedule
 * whose next instance cannot be made (a definition stored before such
 * definitions were refused) must not fail the completion, so the worker's
 * result is kept and the schedule stops, with a WARNING and its error in
 * coord.schedules.
 */
static void
ScheduleFinished(const char *origin, int64 job_id, const char *state, TimestampTz finished_at,
				 Datum result, bool result_null)
{
	const char *name = origin + strlen(COORD_ORIGIN_SCHEDULE);
	FinishArgs	a;
	ErrorData  *e;

	a.name = name;
	a.state = state;
	a.finished_at = finished_at;
	e = CoordIsolated(ScheduleFinishedWork, &a);
	if (e == NULL)
		return;
	ereport(WARNING,
			(errmsg("schedule \"%s\" stopped: its next instance could not be put on", name),
			 errdetail("%s", e->message),
			 errhint("The error is in coord.schedules.last_error; coord.schedule() with a valid definition starts it again.")));
	RecordScheduleError(name, e->message, true, state, finished_at);
}

/* ---------- SQL functions ---------- */

/*
 * coord.schedule(name, queue, every, cron, payload, starts_at, fixed_rate,
 * host, tz) returns the schedule's id.  Calling it again with the same
 * definition changes nothing (deploy scripts may run it on every start).
 */
Datum
coord_schedule(PG_FUNCTION_ARGS)
{
	char	   *name = CoordNameArg(fcinfo, 0, "schedule", false);
	char	   *queue = CoordNameArg(fcinfo, 1, "queue", false);
	char	   *host = CoordNameArg(fcinfo, 7, "host", true);
	ScheduleDef d;
	Oid			argtypes[9] = {TEXTOID, TEXTOID, INTERVALOID, TEXTOID, JSONBOID, TIMESTAMPTZOID, BOOLOID, TEXTOID,
	TEXTOID};
	Datum		args[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	CoordUserSwitch sw;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int64		id;
	bool		changed;
	bool		isnull;

	CoordNotInParallel(fcinfo);
	if (PG_ARGISNULL(2) == PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("exactly one of every and cron must be given"),
				 errhint("Pass every => interval '10 seconds', or cron => '*/5 * * * *'.")));
	CoordRequireArg(fcinfo, 4, "payload");
	CoordRequireArg(fcinfo, 6, "fixed_rate");
	CoordRequireArg(fcinfo, 8, "tz");
	memset(&d, 0, sizeof(d));
	d.name = name;
	d.queue = queue;
	d.host = host;
	d.fixed_rate = PG_GETARG_BOOL(6);
	d.payload = PointerGetDatum(CoordCheckPayload(PG_GETARG_JSONB_P(4)));
	if (!PG_ARGISNULL(2))
	{
		d.every_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(2), "every", false);
		if (d.every_us < USECS_PER_SEC / 100)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("every must be at least 10 milliseconds")));
	}
	else
	{
		d.cron = text_to_cstring(PG_GETARG_TEXT_PP(3));
		ParseCron(d.cron, &d.parsed);
	}
	d.zone = CoordZoneArg(text_to_cstring(PG_GETARG_TEXT_PP(8)), &d.tz);
	if (d.cron == NULL && d.zone != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tz applies only to cron schedules"),
				 errdetail("A schedule with every runs at fixed intervals of absolute time, whatever the zone."),
				 errhint("Leave tz out, or use cron => ... with tz => '%s' to run at local wall-clock times.",
						 d.tz)));
	if (PG_ARGISNULL(5))
		d.starts_at = now;
	else
	{
		d.starts_at = PG_GETARG_TIMESTAMPTZ(5);
		if (TIMESTAMP_NOT_FINITE(d.starts_at))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("starts_at must be a finite time")));
	}

	/*
	 * refuse what could not have a second run: every slot must be a valid
	 * time
	 */
	if (d.cron == NULL)
		(void) SlotAdd(&d, Max(d.starts_at, now), d.every_us);

	args[0] = CStringGetTextDatum(name);
	args[1] = CStringGetTextDatum(queue);
	args[2] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
	nulls[2] = PG_ARGISNULL(2) ? 'n' : ' ';
	args[3] = d.cron ? CStringGetTextDatum(d.cron) : (Datum) 0;
	nulls[3] = d.cron ? ' ' : 'n';
	args[4] = d.payload;
	args[5] = TimestampTzGetDatum(d.starts_at);
	/* starts_at left out means "from now": it does not count as a change */
	nulls[5] = PG_ARGISNULL(5) ? 'n' : ' ';
	args[6] = BoolGetDatum(d.fixed_rate);
	args[7] = host ? CStringGetTextDatum(host) : (Datum) 0;
	nulls[7] = host ? ' ' : 'n';
	args[8] = CStringGetTextDatum(d.tz);

	CoordSpiBegin(&sw);

	/*
	 * An identical definition changes nothing, unless it failed (then it
	 * starts again).  The comparison is jsonb's <>: IS DISTINCT FROM would
	 * look "=" up on the caller's search_path.
	 */
	CoordExec(&plan_upsert,
			  "INSERT INTO coord.schedule_defs AS s (name, queue, every, cron, payload, "
			  "starts_at, fixed_rate, host, tz) "
			  "VALUES ($1, $2, $3, $4, $5, COALESCE($6, pg_catalog.now()), $7, $8, $9) "
			  "ON CONFLICT (name) DO UPDATE SET queue = EXCLUDED.queue, every = EXCLUDED.every, "
			  "cron = EXCLUDED.cron, payload = EXCLUDED.payload, "
			  "starts_at = COALESCE($6, s.starts_at), fixed_rate = EXCLUDED.fixed_rate, "
			  "host = EXCLUDED.host, tz = EXCLUDED.tz, updated_at = pg_catalog.now() "
			  "WHERE pg_catalog.jsonb_build_array(s.queue, s.every, s.cron, s.payload, s.starts_at, "
			  "s.fixed_rate, s.host, s.tz) OPERATOR(pg_catalog.<>) pg_catalog.jsonb_build_array("
			  "EXCLUDED.queue, EXCLUDED.every, EXCLUDED.cron, EXCLUDED.payload, "
			  "COALESCE($6, s.starts_at), EXCLUDED.fixed_rate, EXCLUDED.host, EXCLUDED.tz) "
			  "OR s.last_error IS NOT NULL "
			  "RETURNING id",
			  9, argtypes, args, nulls, SPI_OK_INSERT_RETURNING, "schedule");
	changed = (SPI_processed == 1);
	if (changed)
	{
		bool		running;

		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		/*
		 * a claimed instance finishes, and its successor follows the new
		 * definition
		 */
		running = DropUnclaimedInstance(name);
		if (!GetSchedule(name, &d))
			elog(ERROR, "schedule \"%s\" vanished", name);
		if (!running)
			(void) PutInstance(&d, RedefinedSlot(&d, now));
	}
	else
	{
		if (!GetSchedule(name, &d))
			elog(ERROR, "schedule \"%s\" vanished", name);
		id = d.id;
	}
	CoordSpiEnd(&sw);
	PG_RETURN_INT64(id);
}

/* coord.unschedule(name): drops the schedule and its unclaimed instance */
Datum
coord_unschedule(PG_FUNCTION_ARGS)
{
	char	   *name = CoordNameArg(fcinfo, 0, "schedule", false);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		found;

	CoordNotInParallel(fcinfo);
	args[0] = CStringGetTextDatum(name);
	CoordSpiBegin(&sw);
	CoordExec(&plan_delete,
			  "DELETE FROM coord.schedule_defs WHERE name OPERATOR(pg_catalog.=) $1",
			  1, argtypes, args, NULL, SPI_OK_DELETE, "unschedule");
	found = (SPI_processed == 1);
	if (found)
		(void) DropUnclaimedInstance(name);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(found);
}

/*
 * coord.cron_next(expr, after, tz): the first fire time of expr after
 * `after` in tz's wall time, NULL if never
 */
Datum
coord_cron_next_sql(PG_FUNCTION_ARGS)
{
	CoordCron	c;
	TimestampTz after;
	TimestampTz next;
	pg_tz	   *zone;
	char	   *tzname;

	CoordRequireArg(fcinfo, 0, "cron");
	CoordRequireArg(fcinfo, 1, "after");
	CoordRequireArg(fcinfo, 2, "tz");
	ParseCron(text_to_cstring(PG_GETARG_TEXT_PP(0)), &c);
	zone = CoordZoneArg(text_to_cstring(PG_GETARG_TEXT_PP(2)), &tzname);
	after = PG_GETARG_TIMESTAMPTZ(1);
	if (TIMESTAMP_NOT_FINITE(after))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("after must be a finite time")));
	next = CronNext(&c, zone, after);
	if (next == DT_NOEND)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(next);
}

typedef struct RepairArgs
{
	const char *name;
	TimestampTz now;
	bool		made;			/* RepairOne made an instance */
	int64		nmade;			/* RepairSchedules' count of them */
} RepairArgs;

static void
RepairOne(void *arg)
{
	RepairArgs *a = (RepairArgs *) arg;
	ScheduleDef d;
	TimestampTz slot;

	if (!GetSchedule(a->name, &d) || CoordOriginJob(SchedOrigin(a->name)) != 0)
		return;
	slot = d.next_null ? FirstSlot(&d, a->now) : d.next_run_at;
	a->made = PutInstance(&d, slot);
}

/* RepairSchedules' work on one schedule (a CoordRowFn) */
static void
RepairRow(HeapTuple row, TupleDesc desc, void *arg)
{
	RepairArgs *a = (RepairArgs *) arg;
	ErrorData  *e;

	a->name = SPI_getvalue(row, desc, 1);
	a->made = false;
	e = CoordIsolated(RepairOne, a);
	if (e != NULL)
	{
		ereport(WARNING,
				(errmsg("coord.tick skipped schedule \"%s\"", a->name),
				 errdetail("%s", e->message),
				 errhint("The error is in coord.schedules.last_error; the next tick tries again.")));
		RecordScheduleError(a->name, e->message, false, NULL, 0);
	}
	else if (a->made)
		a->nmade++;
}

/*
 * Schedules without a live instance get one from next_run_at (inside SPI):
 * after a job was deleted by hand, or a schedule whose cron had no next time.
 * Each in a subtransaction: one that fails gets a WARNING and its error in
 * coord.schedules, and the others go on.  A stopped schedule (see
 * RecordScheduleError) waits for coord.schedule.
 */
static int64
RepairSchedules(TimestampTz now)
{
	RepairArgs	a;

	a.now = now;
	a.nmade = 0;
	CoordExecEach(&plan_orphans,
				  "SELECT s.name FROM coord.schedule_defs AS s WHERE NOT EXISTS "
				  "(SELECT 1 FROM coord.job AS j WHERE j.origin OPERATOR(pg_catalog.=) "
				  "('" COORD_ORIGIN_SCHEDULE "' OPERATOR(pg_catalog.||) s.name)) "
				  "AND (s.last_error IS NULL OR s.next_run_at IS NOT NULL) "
				  "ORDER BY s.name COLLATE pg_catalog.\"C\"",
				  0, NULL, NULL, NULL, "tick", RepairRow, &a);
	return a.nmade;
}

/* CoordSchedulesTick: the schedules' share of coord.tick (inside SPI, as the owner) */
int64
CoordSchedulesTick(TimestampTz now)
{
	return RepairSchedules(now);
}

void
CoordSchedulesInit(void)
{
	CoordRegisterJobOrigin(COORD_ORIGIN_SCHEDULE, ScheduleFinished);
}
