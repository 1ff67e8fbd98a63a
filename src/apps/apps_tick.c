/*-------------------------------------------------------------------------
 * apps_tick.c
 *		coord.tick's share of the apps family (src/apps/README.md).
 *
 * Owns CoordAppsTick: per app, under its isolation (AppsIsolated), the
 * first tick (WritePeriods), catch-up of due periods through AppsTryPeriod
 * (at most APP_TICK_STEPS a tick, APP_MAX_LIVE_RUNS unfinished), the
 * periods coord.rerun reset (AppsRerunTick, apps_rerun.c), repairs of
 * runs whose job is gone (RepairOrphans), run timeouts (TimeOutRuns, with
 * their alerts) and the alerts rules (AppsAlertsTick); and CoordSignalsTick,
 * the purge of old signals no app depends on.
 *
 * The family's top file in its order: it calls the runs engine (apps.c)
 * and the reruns (apps_rerun.c), and nothing in the family calls it; tick.c
 * does.  Lock order as in src/apps/README.md: the definitions lock, then a
 * period's lock, then rows.
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include "access/detoast.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/datetime.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "apps/apps.h"
#include "apps/apps_int.h"
#include "apps/apps_periods.h"
#include "jobs/jobs.h"

static SPIPlanPtr plan_set_next = NULL;
static SPIPlanPtr plan_set_first = NULL;
static SPIPlanPtr plan_timeouts = NULL;
static SPIPlanPtr plan_claim_seen = NULL;
static SPIPlanPtr plan_orphans = NULL;
static SPIPlanPtr plan_set_job = NULL;

/*
 * An app's periods in its row: at its first tick (first_tick) its first
 * period, and next_period with it; else next_period alone, written only when
 * it changed.  A row written changes the graph.
 */
static void
WritePeriods(const char *app, bool first_tick, TimestampTz first, TimestampTz next)
{
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[3];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(first);
	args[2] = TimestampTzGetDatum(next);
	if (first_tick)
		CoordExec(&plan_set_first,
				  "UPDATE coord.app_defs SET first_period = $2, next_period = $3 "
				  "WHERE name OPERATOR(pg_catalog.=) $1",
				  3, argtypes, args, NULL, SPI_OK_UPDATE, "tick");
	else
		CoordExec(&plan_set_next,
				  "UPDATE coord.app_defs SET next_period = $3 "
				  "WHERE name OPERATOR(pg_catalog.=) $1 "
				  "AND NOT COALESCE(next_period OPERATOR(pg_catalog.=) $3, next_period IS NULL AND $3 IS NULL)",
				  3, argtypes, args, NULL, SPI_OK_UPDATE, "tick");
	if (SPI_processed > 0)
		AppsGraphChanged();
}

static void
SetRunJob(const char *app, TimestampTz start, int64 job_id)
{
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZOID, INT8OID};
	Datum		args[3];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(start);
	args[2] = Int64GetDatum(job_id);
	CoordExec(&plan_set_job,
			  "UPDATE coord.app_runs AS r SET job_id = $3, claim_token = NULL, claim_seen_at = NULL, "
			  "attempts = COALESCE((SELECT j.attempt FROM coord.job AS j "
			  "WHERE j.id OPERATOR(pg_catalog.=) $3), r.attempts) "
			  "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) $2 "
			  "AND state OPERATOR(pg_catalog.=) 'live'",
			  3, argtypes, args, NULL, SPI_OK_UPDATE, "tick");
}

typedef struct TimeoutArgs
{
	const char *app;
	TimestampTz start;
	int64		id;
	int64		token;
	Interval   *timeout;
	TimestampTz now;			/* the tick's */
	bool		touched;		/* TimeOutRun revoked its claim */
	int64		ntouched;		/* TimeOutRuns' count of them */
} TimeoutArgs;

/* Revokes the claim (token) of one run's job past its timeout. */
static void
TimeOutRun(void *arg)
{
	TimeoutArgs *a = (TimeoutArgs *) arg;
	int64		timeout_us = CoordIntervalToMicroseconds(a->timeout, "timeout", false);
	char	   *span;
	char	   *why;
	int64		newid;

	if (timeout_us % USECS_PER_HOUR == 0)
		span = psprintf(INT64_FORMAT " h", timeout_us / USECS_PER_HOUR);
	else if (timeout_us % USECS_PER_MINUTE == 0)
		span = psprintf(INT64_FORMAT " min", timeout_us / USECS_PER_MINUTE);
	else
		span = psprintf("%.3f s", (double) timeout_us / USECS_PER_SEC);
	/* only the claim seen timed out: a re-claim since then is not revoked */
	why = psprintf("timed out: not finished %s after its claim", span);
	newid = CoordRevokeJob(a->id, a->token, why);
	if (newid < 0)
		return;					/* finished or claimed again meanwhile */
	a->touched = true;
	AppsAlertTimeout(a->app, a->start, a->now, why, newid == 0);
	if (newid > 0)
		SetRunJob(a->app, a->start, newid);
	/* newid 0: it died, and the finish hook recorded that */
}

/* TimeOutRuns' work on one run past its timeout (a CoordRowFn) */
static void
TimeOutRow(HeapTuple row, TupleDesc desc, void *arg)
{
	TimeoutArgs *a = (TimeoutArgs *) arg;
	bool		isnull;

	a->app = SPI_getvalue(row, desc, 1);
	a->start = DatumGetTimestampTz(SPI_getbinval(row, desc, 2, &isnull));
	a->id = DatumGetInt64(SPI_getbinval(row, desc, 3, &isnull));
	a->timeout = DatumGetIntervalP(SPI_getbinval(row, desc, 4, &isnull));
	a->token = DatumGetInt64(SPI_getbinval(row, desc, 5, &isnull));
	a->touched = false;
	if (AppsIsolated(a->app, "the timeout of a run", TimeOutRun, a) && a->touched)
		a->ntouched++;
}

/*
 * Revokes the claims of runs past their timeout; returns how many.  The
 * test subtracts rather than adds, so that no timeout, however long, makes
 * it overflow; each revoke runs isolated.
 */
static int64
TimeOutRuns(TimestampTz now)
{
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		args[1];
	TimeoutArgs a;

	a.now = now;
	a.ntouched = 0;
	args[0] = TimestampTzGetDatum(now);
	CoordExecEach(&plan_timeouts,
				  "SELECT r.app, r.period_start, j.id, d.timeout, j.token "
				  "FROM coord.app_runs AS r "
				  "JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) r.app "
				  "JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id "
				  "WHERE r.state OPERATOR(pg_catalog.=) 'live' AND d.timeout IS NOT NULL "
				  "AND j.claimed_at IS NOT NULL "
				  "AND LEAST(j.claimed_at, CASE WHEN r.claim_token OPERATOR(pg_catalog.=) j.token "
				  "THEN r.claim_seen_at END) OPERATOR(pg_catalog.<) $1 "
				  "AND ($1 OPERATOR(pg_catalog.-) LEAST(j.claimed_at, CASE WHEN r.claim_token "
				  "OPERATOR(pg_catalog.=) j.token THEN r.claim_seen_at END)) "
				  "OPERATOR(pg_catalog.>) d.timeout "
				  "ORDER BY r.app COLLATE pg_catalog.\"C\", r.period_start",
				  1, argtypes, args, NULL, "tick", TimeOutRow, &a);

	/* note when a tick first saw each claim of a run with a timeout */
	CoordExec(&plan_claim_seen,
			  "UPDATE coord.app_runs AS r SET claim_token = j.token, claim_seen_at = $1 "
			  "FROM coord.job AS j, coord.app_defs AS d "
			  "WHERE r.state OPERATOR(pg_catalog.=) 'live' AND j.id OPERATOR(pg_catalog.=) r.job_id "
			  "AND d.name OPERATOR(pg_catalog.=) r.app AND d.timeout IS NOT NULL "
			  "AND j.claimed_at IS NOT NULL "
			  "AND NOT COALESCE(r.claim_token OPERATOR(pg_catalog.=) j.token, false)",
			  1, argtypes, args, NULL, SPI_OK_UPDATE, "tick");
	return a.ntouched;
}

typedef struct OrphanArgs
{
	AppGraph   *g;
	AppDef	   *d;
	TimestampTz start;
	bool		made;			/* RepairOrphan enqueued its job */
	int64		nmade;			/* RepairOrphans' count of them */
} OrphanArgs;

static void
RepairOrphan(void *arg)
{
	OrphanArgs *a = (OrphanArgs *) arg;
	AppDef	   *d = a->d;
	TimestampTz start = a->start;
	TimestampTz end = AppsPeriodNextIn(d, d->grain, start);
	Datum	   *names = palloc0(sizeof(Datum) * Max(d->ndeps, 1));
	Datum	   *results = palloc0(sizeof(Datum) * Max(d->ndeps, 1));
	int64		id;

	if (d->ndeps > 0 && AppsCheckUpstreams(a->g, d, start, end, names, results) != UPSTREAM_DONE)
		id = AppsEnqueueRun(d, start, AppsRunPayload(d, start, end, NULL, NULL, 0));
	else
		id = AppsEnqueueRun(d, start, AppsRunPayload(d, start, end, names, results, d->ndeps));
	if (id > 0)
	{
		SetRunJob(d->name, start, id);
		a->made = true;
	}
}

/* RepairOrphans' work on one live run whose job is gone (a CoordRowFn) */
static void
RepairOrphanRow(HeapTuple row, TupleDesc desc, void *arg)
{
	OrphanArgs *a = (OrphanArgs *) arg;
	bool		isnull;

	a->d = AppsFind(a->g, SPI_getvalue(row, desc, 1));
	a->start = DatumGetTimestampTz(SPI_getbinval(row, desc, 2, &isnull));
	a->made = false;
	if (a->d == NULL)
		return;
	if (AppsIsolated(a->d->name, "the repair of a run", RepairOrphan, a) && a->made)
		a->nmade++;
}

/* Live runs whose job is gone (deleted by hand): their job again. */
static int64
RepairOrphans(AppGraph *g)
{
	OrphanArgs	a;

	a.g = g;
	a.nmade = 0;
	CoordExecEach(&plan_orphans,
				  "SELECT r.app, r.period_start FROM coord.app_runs AS r "
				  "WHERE r.state OPERATOR(pg_catalog.=) 'live' AND NOT EXISTS "
				  "(SELECT 1 FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) r.job_id) "
				  "ORDER BY r.app COLLATE pg_catalog.\"C\", r.period_start LIMIT 1000",
				  0, NULL, NULL, NULL, "tick", RepairOrphanRow, &a);
	return a.nmade;
}

typedef struct AppTickArgs
{
	AppGraph   *g;
	AppDef	   *d;
	TimestampTz now;
	int64		done;
} AppTickArgs;

static void AppTick(void *arg);

/*
 * The apps' share of coord.tick.  Each app, each timeout and each repair in
 * a subtransaction of its own (AppsIsolated): one broken definition gets a
 * WARNING and its error recorded, and every other app proceeds.
 */
int64
CoordAppsTick(TimestampTz now)
{
	AppGraph	g;
	int			i;
	int64		done = 0;

	done += TimeOutRuns(now);
	AppsLoad(&g, 0);
	/* the runs this tick may create: periods begun by now */
	g.horizon_loaded = true;
	g.horizon_null = false;
	g.horizon = now;
	done += RepairOrphans(&g);

	for (i = 0; i < g.n; i++)
	{
		AppTickArgs a;
		AppDef		saved = g.apps[i];

		CHECK_FOR_INTERRUPTS();
		a.g = &g;
		a.d = &g.apps[i];
		a.now = now;
		a.done = 0;
		done += AppsRerunTick(&g, a.d); /* apps_rerun.c: reset periods */
		if (AppsIsolated(a.d->name, "coord.tick", AppTick, &a))
		{
			done += a.done;
			if (a.d->has_error)
				AppsSetError(a.d->name, NULL);
		}
		else
			g.apps[i] = saved;	/* what the rollback undid */
	}
	apps_graph_valid = false;	/* its writes sent their invalidations */
	done += AppsAlertsTick(now);	/* runs late as of now: apps_alerts.c */
	return done;
}

/* One app's share of a tick: its due periods from next_period. */
static void
AppTick(void *arg)
{
	AppTickArgs *a = (AppTickArgs *) arg;
	AppGraph   *gp = a->g;
	AppDef	   *d = a->d;
	TimestampTz now = a->now;

	{
		TimestampTz p;
		bool		contiguous = true;
		int			steps;
		int64		budget = APP_TICK_STEPS;

		if (d->first_null)
		{
			/*
			 * no catchup_from: the app starts with the period of its first
			 * tick
			 */
			d->first_period = AppsPeriodTruncIn(d, d->grain, now);
			d->first_null = false;
			d->next_period = d->first_period;
			d->next_null = false;
			WritePeriods(d->name, true, d->first_period, d->next_period);
		}
		p = d->next_null ? d->first_period : d->next_period;
		if (d->ndeps == 0)
			budget = AppsLiveBudget(d->name, "tick");
		for (steps = 0; steps < APP_TICK_STEPS && p <= now && budget > 0; steps++)
		{
			switch (AppsTryPeriod(gp, d, p, d->ndeps > 0 ? PERIOD_CHECK_UPSTREAMS : 0))
			{
				case RUN_CREATED:
					a->done++;
					if (d->ndeps == 0)
						budget--;
					break;
				case RUN_NOT_DUE:
				case RUN_WAITING:
					/* this period may still get a run: next_period stays here */
					contiguous = false;
					break;
				case RUN_EXISTS:
				case RUN_UPSTREAM_FAILED:
				case RUN_UPSTREAM_MISSING:
					break;
			}
			p = AppsPeriodNextIn(d, d->grain, p);
			if (contiguous)
			{
				d->next_period = p;
				d->next_null = false;
			}
		}
		if (!d->next_null)
			WritePeriods(d->name, false, 0, d->next_period);
	}
}

/* the signals the tick may delete: old, of a name no app depends on */
#define SIGNAL_GONE \
	"x.signalled_at OPERATOR(pg_catalog.<) ($1 OPERATOR(pg_catalog.-) " \
	"pg_catalog.current_setting('coord.job_history_retention')::pg_catalog.interval) " \
	"AND (pg_catalog.current_setting('coord.job_history_retention')::pg_catalog.interval " \
	"OPERATOR(pg_catalog.>) '0'::pg_catalog.interval) " \
	"AND NOT EXISTS (SELECT 1 FROM coord.app_defs AS d " \
	"WHERE d.depends OPERATOR(pg_catalog.?) ('@' OPERATOR(pg_catalog.||) x.name))"

/*
 * CoordSignalsTick: the tick's share (docs/operations/sizing.md; section
 * "signals" above).  Up to a batch of signals signalled before at less
 * coord.job_history_retention (0 keeps them) whose name no app depends on;
 * read again under the definitions lock, taken only when there are some.
 */
int64
CoordSignalsTick(TimestampTz at)
{
	static SPIPlanPtr plan_any = NULL;
	static SPIPlanPtr plan_purge = NULL;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		args[1];

	args[0] = TimestampTzGetDatum(at);
	CoordExecLimit(&plan_any,
				   "SELECT 1 FROM coord.app_signals AS x WHERE " SIGNAL_GONE " LIMIT 1",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "reading old signals");
	if (SPI_processed == 0)
		return 0;
	AppsLockDefinitions();
	return CoordPurge(&plan_purge,
					  "DELETE FROM coord.app_signals AS s "
					  "WHERE (s.name, s.period_start) IN ("
					  "SELECT x.name, x.period_start FROM coord.app_signals AS x "
					  "WHERE " SIGNAL_GONE " LIMIT $2 FOR UPDATE SKIP LOCKED)",
					  at, "purging signals");
}
