/*-------------------------------------------------------------------------
 * tick.c
 *		coord.tick and coord.cron_install: time has one entry point.
 *
 * coord.tick(now) runs every piece of time-driven work, under a
 * transaction-level advisory lock (COORD_NS_TICK) so that concurrent ticks
 * run one after the other and the second finds the first's work done; each
 * piece is idempotent on its own as well.  This is the one file that knows
 * every concern with work to do in time, on purpose: the schedules'
 * repairs, then the queue's (lost leases, history retention), then the
 * apps' runs, timeouts and repairs, in that order and in one transaction;
 * then housekeeping that nobody waits for and that is not counted in the
 * result: the labels of semaphore holders that are gone, and the purge of
 * what is dead and older than coord.retention (docs/operations/sizing.md):
 * expired leases, then fences and lock names nobody uses, elections without
 * a leader, partition groups without members, idle token buckets, ended
 * pauses and free slots, requested keys whose owner is gone, and signals
 * no app depends on, steps of vanished jobs and ended batches (those after
 * coord.job_history_retention).  Each share
 * runs in a subtransaction of its own (a row it cannot handle costs a
 * WARNING, not the tick), deletes at most a batch per tick and skips rows
 * others have locked, so a backlog drains over several ticks; times are the
 * tick's now, never later than the real clock, so a tick with a simulated
 * future time purges nothing early.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "apps/apps.h"
#include "jobs/jobs.h"
#include "metrics.h"
#include "partitions/partitions.h"
#include "requests.h"
#include "schedules/schedules.h"
#include "semaphores.h"
#include "workflows/workflows.h"
#include "workflows/workflows_batch.h"

static SPIPlanPtr plan_tick_state = NULL;

int			coord_retention = 24 * 3600;	/* seconds; 0: keep */

void
CoordTickInit(void)
{
	DefineCustomIntVariable("coord.retention",
							"How long coord.tick keeps dead coordination state before it deletes it.",
							"Expired leases, fences and lock names nobody uses, elections without a leader, "
							"partition groups without members, idle token buckets, ended pauses and free "
							"slots.  0 keeps them.",
							&coord_retention, 24 * 3600, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_S, NULL, NULL, NULL);
}

/* The purges, one share each (docs/operations/sizing.md). */
typedef enum PurgeShare
{
	PURGE_LEASES,
	PURGE_LOCKS,
	PURGE_ELECTIONS,
	PURGE_GROUPS,
	PURGE_LIMITS,
	PURGE_REQUESTS,
	PURGE_SIGNALS,
	PURGE_STEPS,
	PURGE_BATCHES
} PurgeShare;

static const char *const PurgeWhat[] = {
	"expired leases", "fences and lock names", "elections", "partition groups",
	"token buckets, pauses and slots", "requested keys", "signals",
	"steps of vanished jobs", "ended batches"
};

typedef struct PurgeArgs
{
	PurgeShare	share;
	TimestampTz at;				/* the tick's now, never past the clock */
	TimestampTz horizon;		/* at less coord.retention */
} PurgeArgs;

static void
PurgeOne(void *arg)
{
	PurgeArgs  *a = (PurgeArgs *) arg;

	switch (a->share)
	{
		case PURGE_LEASES:
			(void) CoordLeasesTick(a->horizon);
			break;
		case PURGE_LOCKS:
			(void) CoordLocksTick(a->horizon);
			break;
		case PURGE_ELECTIONS:
			(void) CoordElectionsTick(a->horizon);
			break;
		case PURGE_GROUPS:
			(void) CoordPartitionsTick(a->at, a->horizon);
			break;
		case PURGE_LIMITS:
			(void) CoordLimitsTick(a->horizon);
			break;
		case PURGE_REQUESTS:
			(void) CoordRequestsTick(a->horizon);
			break;
		case PURGE_SIGNALS:
			(void) CoordSignalsTick(a->at);
			break;
		case PURGE_STEPS:
			(void) CoordStepsTick(a->at);
			break;
		case PURGE_BATCHES:
			(void) CoordBatchesTick(a->at);
			break;
	}
}

/*
 * The purges of dead state: housekeeping, not counted in the tick's result.
 * Each share runs in a subtransaction of its own (CoordIsolated), so that a
 * row it cannot handle (a hand-made one, say) costs a WARNING, not the
 * tick; expired leases go first, so their fences can go in the same tick.
 */
static void
Purge(TimestampTz now)
{
	PurgeArgs	a;

	a.at = Min(now, GetCurrentTimestamp());
	a.horizon = a.at - (int64) coord_retention * USECS_PER_SEC;
	for (int s = PURGE_LEASES; s <= PURGE_BATCHES; s++)
	{
		ErrorData  *e;

		/*
		 * signals, steps and batches keep coord.job_history_retention (0
		 * keeps them)
		 */
		if (coord_retention == 0 && s != PURGE_SIGNALS && s != PURGE_STEPS && s != PURGE_BATCHES)
			continue;
		a.share = (PurgeShare) s;
		e = CoordIsolated(PurgeOne, &a);
		if (e != NULL)
			ereport(WARNING,
					(errmsg("coord.tick could not purge %s", PurgeWhat[s]),
					 errdetail("%s", e->message),
					 errhint("The next tick tries again.")));
	}
}

PG_FUNCTION_INFO_V1(coord_tick);
PG_FUNCTION_INFO_V1(coord_cron_install);

/* coord.tick(now): every piece of time-driven work; returns how much it did */
Datum
coord_tick(PG_FUNCTION_ARGS)
{
	TimestampTz now;
	CoordUserSwitch sw;
	LOCKTAG		tag;
	int64		done = 0;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		args[1];

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "now");
	now = PG_GETARG_TIMESTAMPTZ(0);
	if (TIMESTAMP_NOT_FINITE(now))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("now must be a finite time")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("coord.tick requires READ COMMITTED isolation"),
				 errdetail("A tick waits for a concurrent one and must then see its work.")));

	/*
	 * one tick at a time; the second sees the first's work (a fresh snapshot
	 * per statement)
	 */
	CoordSetTag(&tag, 0, COORD_NS_TICK);
	(void) CoordLockTake(&tag, ExclusiveLock, false, false);

	CoordSpiBegin(&sw);
	done += CoordSchedulesTick(now);
	done += CoordJobsTick(now);
	done += CoordAppsTick(now);
	(void) CoordSemaphoresTick();
	Purge(now);
	CoordMetricsTick();
	args[0] = TimestampTzGetDatum(now);
	CoordExec(&plan_tick_state,
			  "UPDATE coord.tick_state SET last_tick_at = $1, "
			  "ticks = ticks OPERATOR(pg_catalog.+) 1, "
			  "ticked_at = pg_catalog.clock_timestamp()",
			  1, argtypes, args, NULL, SPI_OK_UPDATE, "tick");
	CoordSpiEnd(&sw);
	PG_RETURN_INT32((int32) Min(done, PG_INT32_MAX));
}

/*
 * coord.cron_install(schedule) registers "SELECT coord.tick()" with pg_cron
 * as the calling user, under the job name "coord-tick" (so calling it again
 * updates that job); returns pg_cron's job id.
 */
Datum
coord_cron_install(PG_FUNCTION_ARGS)
{
	char	   *schedule;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;
	int64		jobid;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "schedule");
	schedule = text_to_cstring(PG_GETARG_TEXT_PP(0));
	/* as the caller, on purpose: the pg_cron job must be the caller's */
	CoordSpiConnectAsCaller();
	CoordSpiCheck(SPI_execute("SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'pg_cron'",
							  true, 1), SPI_OK_SELECT, "cron_install");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cron is not installed in database \"%s\"", get_database_name(MyDatabaseId)),
				 errdetail("coord.cron_install registers coord.tick() with pg_cron, which runs jobs only in the database named by cron.database_name."),
				 errhint("Add pg_cron to shared_preload_libraries, set cron.database_name to this database, restart, "
						 "and run CREATE EXTENSION pg_cron; or call coord.tick() from any scheduler once a minute.")));
	args[0] = CStringGetTextDatum(schedule);
	CoordSpiCheck(SPI_execute_with_args("SELECT cron.schedule('coord-tick', $1, 'SELECT coord.tick()')",
										1, argtypes, args, NULL, false, 1),
				  SPI_OK_SELECT, "cron_install");
	jobid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	CoordSpiFinishAsCaller();
	PG_RETURN_INT64(jobid);
}
