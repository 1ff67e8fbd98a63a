/*-------------------------------------------------------------------------
 * apps_int.h
 *		What the files of the apps family share, and nothing outside the
 *		family includes: the graph of apps as apps_graph.c reads it from
 *		coord.app_defs, and the period arithmetic (in an app's zone, or
 *		UTC).
 *
 * apps_graph.c owns the graph and the periods, apps.c the runs engine;
 * apps_define.c and apps_tick.c write through them; apps_grid.c
 * (coord.grid) reads through these functions and writes nothing;
 * apps_alerts.c keeps coord.app_alerts, called from apps_tick.c, the
 * finish hook and drop_app.  Every
 * function here runs inside SPI as the extension owner where it reads
 * tables (AppsLoad); the period functions read nothing.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_APPS_INT_H
#define PG_COORD_APPS_INT_H

#include "postgres.h"

#include "pgtime.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "apps/apps_periods.h"	/* Grain */
#include "common/common.h"		/* CoordIsolatedFn */

/*
 * Not exported from the library: these names are the family's own, and a
 * library loaded before ours (RTLD_GLOBAL) with a symbol of the same name
 * would otherwise take over our calls to it.
 */
#ifdef __GNUC__
#pragma GCC visibility push(hidden)
#endif

extern const char *const apps_grain_names[];

typedef struct AppDep
{
	char	   *app;
	Grain		grain;
} AppDep;

typedef struct AppDef
{
	char	   *name;
	Grain		starts;
	Grain		grain;			/* starts, or the coarsest dependency period */
	int			ndeps;
	AppDep	   *deps;			/* by name */
	char	   *queue;
	char	   *host;
	char	   *tz;				/* the zone's name as stored */
	pg_tz	   *zone;			/* NULL: UTC (or a zone that is UTC always) */
	bool		zone_bad;		/* tz names no zone PostgreSQL knows now */
	Datum		conf;
	bool		has_timeout;
	bool		first_null;
	TimestampTz first_period;
	bool		next_null;
	TimestampTz next_period;
	bool		has_error;		/* last_error is set */
} AppDef;

typedef struct AppGraph
{
	int			n;
	AppDef	   *apps;			/* by name */
	bool		horizon_loaded;
	bool		horizon_null;
	TimestampTz horizon;		/* the latest tick's now */
} AppGraph;

/* periods (apps_graph.c) */
extern Grain AppsGrainFromName(const char *s);
extern void AppsTmFromTs(TimestampTz t, struct pg_tm *tm);
extern TimestampTz AppsPeriodTrunc(Grain g, TimestampTz t); /* UTC */
extern TimestampTz AppsPeriodNext(Grain g, TimestampTz start);	/* UTC */
extern TimestampTz AppsPeriodTruncIn(const AppDef *d, Grain g, TimestampTz t);	/* d's zone */
extern TimestampTz AppsPeriodNextIn(const AppDef *d, Grain g, TimestampTz start);
extern TimestampTz AppsPeriodCeilIn(const AppDef *d, Grain g, TimestampTz t);
extern char *AppsPeriodLabel(TimestampTz t);
extern char *AppsPeriodLabelIn(const AppDef *d, TimestampTz start);
extern char *AppsRunOrigin(const AppDef *d, TimestampTz start);
extern char *AppsRunKey(const AppDef *d, TimestampTz start);

/* the graph (apps_graph.c; AppsLockDefinitions is apps.c) */
extern AppDef *AppsFind(AppGraph *g, const char *name);
extern void AppsLoad(AppGraph *g, int extra);
extern int	AppsCmp(const void *a, const void *b);
extern Grain AppsDerivedGrain(const AppDef *d);
extern void AppsGraphChanged(void);
extern void AppsLockDefinitions(void);
extern bool apps_graph_valid;	/* the cached graph is current */
extern int	apps_graph_users;
extern AppGraph *AppsCachedGraph(void);
extern bool AppsHorizonAllows(AppGraph *g, const AppDef *d, TimestampTz start);
extern void AppsGraphInit(void);

/* The most unfinished runs a tick lets an app have (catch-up, reruns). */
#define APP_MAX_LIVE_RUNS	24
/* Periods a tick looks at per app, creating or repairing. */
#define APP_TICK_STEPS		200

/* Runs are retried this often (timeouts and failures) before they die. */
#define APP_MAX_ATTEMPTS	5

/* What the upstream runs of one period of an app are (AppsCheckUpstreams). */
typedef enum UpstreamState
{
	UPSTREAM_DONE,				/* every upstream run is done */
	UPSTREAM_PENDING,			/* some are not done yet, or an upstream has
								 * no first period yet */
	UPSTREAM_FAILED,			/* an upstream run died or was cancelled */
	UPSTREAM_MISSING			/* an upstream was dropped, or has no period
								 * in the window */
} UpstreamState;

/*
 * What an attempt to create the run of one period came to (CreateRun,
 * AppsTryPeriod).  Only RUN_CREATED made anything; RUN_NOT_DUE and RUN_WAITING
 * may change later, the others never will as things are.
 */
typedef enum RunOutcome
{
	RUN_CREATED,				/* this call created the run */
	RUN_EXISTS,					/* the period has its run already */
	RUN_NOT_DUE,				/* before the app's first period, or after the
								 * latest tick */
	RUN_WAITING,				/* UPSTREAM_PENDING */
	RUN_UPSTREAM_FAILED,		/* UPSTREAM_FAILED */
	RUN_UPSTREAM_MISSING		/* UPSTREAM_MISSING */
} RunOutcome;

/* AppsTryPeriod's and CreateRun's flags */
#define PERIOD_CHECK_UPSTREAMS	0x01	/* create the run only when
										 * UPSTREAM_DONE */
#define PERIOD_KEEP_LOCK		0x02	/* keep the period's lock even when
										 * nothing was created */

/* the runs engine (apps.c), inside SPI as the owner */
extern UpstreamState AppsCheckUpstreams(AppGraph *g, const AppDef *d, TimestampTz start,
										TimestampTz end, Datum *names, Datum *results);
extern Jsonb *AppsRunPayload(const AppDef *d, TimestampTz start, TimestampTz end,
							 Datum *names, Datum *results, int n);
extern int64 AppsEnqueueRun(const AppDef *d, TimestampTz start, Jsonb *payload);
extern RunOutcome AppsTryPeriod(AppGraph *g, const AppDef *d, TimestampTz start, int flags);
extern int64 AppsLiveBudget(const char *app, const char *what);
extern void AppsSetError(const char *app, const char *error);
extern bool AppsIsolated(const char *app, const char *what, CoordIsolatedFn fn, void *arg);

/* signals (apps.c) */
extern bool AppsIsSignalDep(const char *dep);
extern void AppsCheckSignalName(const char *signal, const char *app);

/* the tick's share (apps_tick.c) is apps.h's CoordAppsTick and CoordSignalsTick */

/* reruns (apps_rerun.c; the hooks it uses are in apps.c; apps_tick.c calls it) */
typedef enum AppRerunOutcome
{
	RERUN_CREATED,				/* this call created the run */
	RERUN_EXISTS,				/* the period has its run */
	RERUN_WAITING,				/* upstreams not done yet, or not due */
	RERUN_NEVER					/* an upstream failed or is missing */
} AppRerunOutcome;

extern AppRerunOutcome AppsRerunTryPeriod(AppGraph *g, const AppDef *d, TimestampTz start);
extern void AppsRerunLockPeriod(const char *app, TimestampTz start);
extern void AppsRerunLockDefinitions(void);
extern bool AppsRerunIsolated(const char *app, const char *what, CoordIsolatedFn fn, void *arg);
extern int64 AppsRerunTick(AppGraph *g, AppDef *d);

/* alerts (apps_alerts.c), inside SPI as the owner */
extern int64 AppsAlertsTick(TimestampTz now);
extern void AppsAlertsRunFinished(const char *app, TimestampTz start, const char *state,
								  TimestampTz finished_at);
extern void AppsAlertTimeout(const char *app, TimestampTz start, TimestampTz now,
							 const char *why, bool died);
extern void AppsAlertsDropApp(const char *app);

#ifdef __GNUC__
#pragma GCC visibility pop
#endif

#endif							/* PG_COORD_APPS_INT_H */
