/*-------------------------------------------------------------------------
 * apps.c
 *		Apps: period-keyed dependency scheduling (README.md, Apps) and
 *		coord.runs; coord.grid is apps_grid.c, and apps_int.h what the
 *		family shares.
 *
 * The family's top file.  By section: periods in an app's zone (over
 * apps_periods.c); the graph of apps, read from coord.app_defs once per
 * transaction (CachedGraph); checking and creating runs; isolation of one
 * app's work; the finish hook the queue calls for "a:" jobs; signals
 * (coord.signal); coord.tick's share (time-driven runs, repairs,
 * timeouts); coord.define_app and coord.drop_app; and the calls
 * apps_rerun.c makes into the runs engine.
 *
 * The family's protocol -- who creates runs, upstream windows, the lock
 * order, timeouts, alerts, isolation, memory -- is src/apps/README.md.
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

/* Runs are retried this often (timeouts and failures) before they die. */
#define APP_MAX_ATTEMPTS	5

/* apps_periods.c is plain C: its times are TimestampTz */
StaticAssertDecl(sizeof(TimestampTz) == sizeof(int64_t), "TimestampTz is an int64_t");

const char *const grain_names[] = {"", "hourly", "daily", "weekly", "monthly", "yearly"};

/* What the upstream runs of one period of an app are (CheckUpstreams). */
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
 * TryPeriod).  Only RUN_CREATED made anything; RUN_NOT_DUE and RUN_WAITING
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

/* TryPeriod's and CreateRun's flags */
#define PERIOD_CHECK_UPSTREAMS	0x01	/* create the run only when
										 * UPSTREAM_DONE */
#define PERIOD_KEEP_LOCK		0x02	/* keep the period's lock even when
										 * nothing was created */

static SPIPlanPtr plan_defs = NULL;
static SPIPlanPtr plan_deps = NULL;
static SPIPlanPtr plan_horizon = NULL;
static SPIPlanPtr plan_finish = NULL;
static SPIPlanPtr plan_run_exists = NULL;
static SPIPlanPtr plan_upstream = NULL;
static SPIPlanPtr plan_upstream_results = NULL;
static SPIPlanPtr plan_upstream_array = NULL;
static SPIPlanPtr plan_payload = NULL;
static SPIPlanPtr plan_insert_run = NULL;
static SPIPlanPtr plan_live_count = NULL;
static SPIPlanPtr plan_set_next = NULL;
static SPIPlanPtr plan_set_first = NULL;
static SPIPlanPtr plan_timeouts = NULL;
static SPIPlanPtr plan_claim_seen = NULL;
static SPIPlanPtr plan_orphans = NULL;
static SPIPlanPtr plan_set_job = NULL;
static SPIPlanPtr plan_get_def = NULL;
static SPIPlanPtr plan_insert_def = NULL;
static SPIPlanPtr plan_update_def = NULL;
static SPIPlanPtr plan_dependents = NULL;
static SPIPlanPtr plan_drop_jobs = NULL;
static SPIPlanPtr plan_drop_runs = NULL;
static SPIPlanPtr plan_drop_def = NULL;
static SPIPlanPtr plan_dep_items = NULL;
static SPIPlanPtr plan_set_error = NULL;
static SPIPlanPtr plan_signal_insert = NULL;
static SPIPlanPtr plan_signal_count = NULL;
static SPIPlanPtr plan_signal_payloads = NULL;

PG_FUNCTION_INFO_V1(coord_define_app);
PG_FUNCTION_INFO_V1(coord_drop_app);
PG_FUNCTION_INFO_V1(coord_signal);

/* ---------- periods (in an app's zone; apps_periods.c) ---------- */

Grain
GrainFromName(const char *s)
{
	int			g;

	for (g = G_HOURLY; g <= G_YEARLY; g++)
		if (strcmp(s, grain_names[g]) == 0)
			return (Grain) g;
	return G_NONE;
}

void
TmFromTs(TimestampTz t, struct pg_tm *tm)
{
	fsec_t		fsec;

	if (TIMESTAMP_NOT_FINITE(t) || timestamp2tm(t, NULL, tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for an app period")));
}

/* The periods of g in zone (NULL: UTC); 22008 outside app periods' years. */
static TimestampTz
ZonedTrunc(const pg_tz *zone, Grain g, TimestampTz t)
{
	AppZone		z = {CoordZoneNextChangeTs, unconstify(pg_tz *, zone)};
	int64_t		out;

	if (g == G_NONE)
		elog(ERROR, "app period without a grain");
	if (TIMESTAMP_NOT_FINITE(t) || !coord_period_trunc(g, t, zone ? &z : NULL, &out))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for an app period"),
				 errdetail("App periods lie in the years 1 to 9999.")));
	return (TimestampTz) out;
}

static TimestampTz
ZonedNext(const pg_tz *zone, Grain g, TimestampTz start)
{
	AppZone		z = {CoordZoneNextChangeTs, unconstify(pg_tz *, zone)};
	int64_t		out;

	if (g == G_NONE)
		elog(ERROR, "app period without a grain");
	if (TIMESTAMP_NOT_FINITE(start) || !coord_period_next(g, start, zone ? &z : NULL, &out))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for an app period"),
				 errdetail("App periods lie in the years 1 to 9999.")));
	return (TimestampTz) out;
}

/* d's zone, or an error when its stored name is not a zone any more */
static const pg_tz *
AppZoneOf(const AppDef *d)
{
	if (d->zone_bad)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" of app \"%s\" not recognized", d->tz, d->name),
				 errhint("Define the app again with a tz from pg_timezone_names.")));
	return d->zone;
}

/* The start of the period of grain g that contains t (UTC: coord.grid). */
TimestampTz
PeriodTrunc(Grain g, TimestampTz t)
{
	return ZonedTrunc(NULL, g, t);
}

/* The start of the period after the one starting at start (UTC). */
TimestampTz
PeriodNext(Grain g, TimestampTz start)
{
	return ZonedNext(NULL, g, start);
}

/* The same in d's zone: its local calendar periods. */
TimestampTz
AppPeriodTrunc(const AppDef *d, Grain g, TimestampTz t)
{
	return ZonedTrunc(AppZoneOf(d), g, t);
}

TimestampTz
AppPeriodNext(const AppDef *d, Grain g, TimestampTz start)
{
	return ZonedNext(AppZoneOf(d), g, start);
}

/* The first period start of grain g at or after t, in d's zone. */
static TimestampTz
AppPeriodCeil(const AppDef *d, Grain g, TimestampTz t)
{
	TimestampTz s = AppPeriodTrunc(d, g, t);

	return s == t ? s : AppPeriodNext(d, g, s);
}

/* "YYYY-MM-DD-HH24MI" of a period start (UTC): period locks */
static char *
PeriodLabel(TimestampTz t)
{
	struct pg_tm tm;

	TmFromTs(t, &tm);
	return psprintf("%04d-%02d-%02d-%02d%02d", tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min);
}

/*
 * The label of d's period starting at start in keys and origins: UTC apps
 * as PeriodLabel, others their local time and UTC offset
 * ("2026-11-01-0100-0500"), which tells the two 01:00 hours of a fall-back
 * night apart.
 */
static char *
AppPeriodLabel(const AppDef *d, TimestampTz start)
{
	const pg_tz *zone = AppZoneOf(d);
	AppZone		z = {CoordZoneNextChangeTs, unconstify(pg_tz *, zone)};
	char	   *buf;

	if (zone == NULL)
		return PeriodLabel(start);
	buf = palloc(COORD_PERIOD_LABEL_LEN);
	coord_period_label(start, &z, buf);
	return buf;
}

static char *
RunOrigin(const AppDef *d, TimestampTz start)
{
	return psprintf(COORD_ORIGIN_APP "%s:%s", d->name, AppPeriodLabel(d, start));
}

static char *
RunKey(const AppDef *d, TimestampTz start)
{
	return psprintf("%s-%s", AppPeriodLabel(d, start), d->name);
}

/* ---------- the graph of apps ---------- */

static int
AppCmp(const void *a, const void *b)
{
	return strcmp(((const AppDef *) a)->name, ((const AppDef *) b)->name);
}

AppDef *
FindApp(AppGraph *g, const char *name)
{
	AppDef		key;

	key.name = (char *) name;
	return bsearch(&key, g->apps, g->n, sizeof(AppDef), AppCmp);
}

static Grain
DerivedGrain(const AppDef *d)
{
	Grain		gr = d->starts;
	int			i;

	if (gr != G_NONE)
		return gr;
	for (i = 0; i < d->ndeps; i++)
		gr = Max(gr, d->deps[i].grain);
	return gr;
}

static void LoadAppsIn(AppGraph *g, int extra, MemoryContext cxt);

/* Reads every app and its dependencies (inside SPI). */
void
LoadApps(AppGraph *g, int extra)
{
	LoadAppsIn(g, extra, CurrentMemoryContext);
}

/*
 * LoadAppsIn: LoadApps with the graph allocated in cxt (every SPI call
 * returns in SPI's procedure context, so each allocation names it); returns
 * in cxt.
 */
static void
LoadAppsIn(AppGraph *g, int extra, MemoryContext cxt)
{
	uint64		i,
				n;
	SPITupleTable *tt;

	memset(g, 0, sizeof(*g));
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_defs,
											 "SELECT name, starts, queue, host, conf, timeout IS NOT NULL, "
											 "first_period, next_period, last_error IS NOT NULL, tz "
											 "FROM coord.app_defs ORDER BY name COLLATE pg_catalog.\"C\"",
											 0, NULL), NULL, NULL, false, 0),
				  SPI_OK_SELECT, "reading apps");
	MemoryContextSwitchTo(cxt);
	n = SPI_processed;
	tt = SPI_tuptable;
	g->apps = palloc0(sizeof(AppDef) * (n + extra + 1));
	g->n = n;
	for (i = 0; i < n; i++)
	{
		AppDef	   *d = &g->apps[i];
		HeapTuple	row = tt->vals[i];
		bool		isnull;
		Datum		v;
		char	   *starts;
		char	   *canonical;

		d->name = SPI_getvalue(row, tt->tupdesc, 1);
		starts = SPI_getvalue(row, tt->tupdesc, 2);
		d->starts = starts ? GrainFromName(starts) : G_NONE;
		d->queue = SPI_getvalue(row, tt->tupdesc, 3);
		d->host = SPI_getvalue(row, tt->tupdesc, 4);
		d->conf = datumCopy(SPI_getbinval(row, tt->tupdesc, 5, &isnull), false, -1);
		d->has_timeout = DatumGetBool(SPI_getbinval(row, tt->tupdesc, 6, &isnull));
		v = SPI_getbinval(row, tt->tupdesc, 7, &isnull);
		d->first_null = isnull;
		d->first_period = isnull ? 0 : DatumGetTimestampTz(v);
		v = SPI_getbinval(row, tt->tupdesc, 8, &isnull);
		d->next_null = isnull;
		d->next_period = isnull ? 0 : DatumGetTimestampTz(v);
		d->has_error = DatumGetBool(SPI_getbinval(row, tt->tupdesc, 9, &isnull));
		/* a name no longer known fails this app's period work only */
		d->tz = SPI_getvalue(row, tt->tupdesc, 10);
		d->zone_bad = !CoordZoneLookup(d->tz, &d->zone, &canonical);
	}
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_deps,
											 "SELECT a.name, e.key, e.value FROM coord.app_defs AS a, "
											 "pg_catalog.jsonb_each_text(a.depends) AS e "
											 "ORDER BY a.name COLLATE pg_catalog.\"C\", e.key COLLATE pg_catalog.\"C\"",
											 0, NULL), NULL, NULL, false, 0),
				  SPI_OK_SELECT, "reading app dependencies");
	MemoryContextSwitchTo(cxt);
	tt = SPI_tuptable;
	/* each app's dependencies: count, allocate, fill */
	for (i = 0; i < SPI_processed; i++)
	{
		AppDef	   *d = FindApp(g, SPI_getvalue(tt->vals[i], tt->tupdesc, 1));

		if (d != NULL)
			d->ndeps++;
	}
	for (i = 0; i < n; i++)
	{
		if (g->apps[i].ndeps > 0)
			g->apps[i].deps = palloc0(sizeof(AppDep) * g->apps[i].ndeps);
		g->apps[i].ndeps = 0;
	}
	for (i = 0; i < SPI_processed; i++)
	{
		char	   *name = SPI_getvalue(tt->vals[i], tt->tupdesc, 1);
		AppDef	   *d = FindApp(g, name);

		if (d == NULL)
			continue;
		d->deps[d->ndeps].app = SPI_getvalue(tt->vals[i], tt->tupdesc, 2);
		d->deps[d->ndeps].grain = GrainFromName(SPI_getvalue(tt->vals[i], tt->tupdesc, 3));
		d->ndeps++;
	}
	for (i = 0; i < n; i++)
		g->apps[i].grain = DerivedGrain(&g->apps[i]);
}

/*
 * The graph the finish hook works on, read once per transaction: a batch
 * complete of 100 app jobs reads it once, not 100 times.  It lives in a
 * context of its own ("pg_coord app graph"), reset wholesale at the end of
 * every transaction (and prepare); within one it is forgotten, and read
 * again at the next finish, when the graph changes.
 *
 * Every write to coord.app_defs through pg_coord (define_app, drop_app, and
 * the tick's first and next periods and last_error) calls AppGraphChanged
 * in its transaction: it forgets this backend's graph at once and queues a
 * relcache invalidation of coord.app_defs (as pg_cron does for its job
 * cache), which every backend receives when that transaction commits, and
 * none when it aborts.  GraphRelcacheInval (registered by CoordAppsInit)
 * marks the graph stale on it, or on an invalidation of every relation;
 * CachedGraph accepts the queued invalidations before it trusts the graph.
 * So a finish uses the definitions committed before it began, as the read
 * per finish did in READ COMMITTED; in REPEATABLE READ and SERIALIZABLE a
 * reload reads with the transaction's snapshot, as that read did.  A
 * subtransaction abort forgets the graph too (what it read may include
 * definitions the abort undid).  graph_users counts the finish hooks
 * working on the graph, so that nothing frees one in use: an invalidation
 * inside the hook's loop (a subtransaction abort in AppIsolated, a message
 * accepted at a lock) only marks it stale.  An invalidation that arrives
 * while the graph is read makes that graph not kept.
 *
 * The window left: a commit becomes visible to snapshots slightly before
 * its invalidation message is queued (PostgreSQL ends the transaction in
 * the proc array first).  A finish whose statement began in that instant
 * sees the change in its snapshot but uses the graph from before it: it
 * misses the runs of an app just defined (the tick repairs them: periods
 * whose upstreams are all done but that have no run), creates a run of an
 * app just dropped (it runs once), or creates a redefined app's run with
 * the old queue, host and conf.  A read per finish had the same outcomes
 * one instant earlier (a finish that read the graph just before that
 * commit): the hook takes no lock that define_app and drop_app hold, and
 * must not wait for them.  Only the definitions are kept: the horizon (the
 * latest tick) is read afresh by each hook call.  A graph holding a conf
 * stored out of line (TOAST) is not kept: that datum is a pointer, valid
 * only while a snapshot keeps its chunks.  Direct writes to coord.app_defs
 * (not through define_app, drop_app or tick) send no invalidation; they are
 * seen from the next transaction on.
 */
static MemoryContext graph_cxt = NULL;
static AppGraph graph_cache;
static bool graph_valid = false;
static int	graph_users = 0;
static bool graph_read = false; /* this transaction called CachedGraph */

/* coord.app_defs, resolved before the graph is read; valid when graph_valid */
static Oid	app_defs_relid = InvalidOid;

/* invalidations received: one during a read makes that graph not kept */
static uint64 graph_invals = 0;

/* coord.app_defs (resolved again after DROP and CREATE EXTENSION) */
static Oid
AppDefsRelid(void)
{
	if (!OidIsValid(app_defs_relid))
	{
		app_defs_relid = get_relname_relid("app_defs",
										   get_namespace_oid(COORD_SCHEMA, false));
		if (!OidIsValid(app_defs_relid))
			elog(ERROR, "coord.app_defs does not exist");
	}
	return app_defs_relid;
}

/*
 * This backend changed the graph: the next finish here reads it again, and
 * so does every other backend's once this transaction commits.
 */
static void
AppGraphChanged(void)
{
	graph_valid = false;
	CacheInvalidateRelcacheByRelid(AppDefsRelid());
}

/* A relcache invalidation: of coord.app_defs, or of every relation. */
static void
GraphRelcacheInval(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == app_defs_relid)
	{
		graph_valid = false;
		graph_invals++;
		app_defs_relid = InvalidOid;
	}
}

/*
 * Registered by CoordAppsInit, so it runs at the end of every transaction:
 * one that read no graph (a plain claim or complete) returns at once.
 */
static void
GraphXactCallback(XactEvent event, void *arg)
{
	if (!graph_read)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			graph_valid = false;
			graph_users = 0;
			graph_read = false;
			if (graph_cxt != NULL)
				MemoryContextReset(graph_cxt);
			memset(&graph_cache, 0, sizeof(graph_cache));
			break;
		default:
			break;
	}
}

static void
GraphSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		graph_valid = false;
}

/*
 * The graph for a finish hook (inside SPI), read when this transaction has
 * none yet or changed it.  The caller holds it (graph_users) while it
 * works on it.  (Not inlined into the hook's PG_TRY frame.)
 */
static pg_noinline AppGraph *
CachedGraph(void)
{
	MemoryContext old = CurrentMemoryContext;
	AppGraph   *g;
	int			i;
	uint64		seen;

	graph_read = true;
	/* what other backends committed before this finish */
	AcceptInvalidationMessages();
	if (graph_valid)
		return &graph_cache;
	if (graph_users > 0)
	{
		/* an outer hook still works on the cached one: a graph of our own */
		g = palloc(sizeof(AppGraph));
		LoadApps(g, 0);
		return g;
	}
	MemoryContextReset(CoordCacheContext(&graph_cxt, "pg_coord app graph"));
	(void) AppDefsRelid();		/* for GraphRelcacheInval */
	seen = graph_invals;
	LoadAppsIn(&graph_cache, 0, graph_cxt);
	MemoryContextSwitchTo(old);
	graph_valid = (graph_invals == seen);
	for (i = 0; i < graph_cache.n; i++)
		if (VARATT_IS_EXTERNAL(DatumGetPointer(graph_cache.apps[i].conf)))
			graph_valid = false;
	ereport(DEBUG1,
			(errmsg_internal("pg_coord: read the app graph (%d apps)%s",
							 graph_cache.n, graph_valid ? "" : ", not kept")));
	return &graph_cache;
}

/* The latest tick's now, read once per graph; a run of an app with starts waits for it. */
static bool
HorizonAllows(AppGraph *g, const AppDef *d, TimestampTz start)
{
	if (d->starts == G_NONE)
		return true;
	if (!g->horizon_loaded)
	{
		bool		isnull = true;

		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_horizon,
												 "SELECT last_tick_at FROM coord.tick_state",
												 0, NULL), NULL, NULL, false, 1),
					  SPI_OK_SELECT, "reading the tick state");
		if (SPI_processed == 1)
		{
			Datum		v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
				g->horizon = DatumGetTimestampTz(v);
		}
		g->horizon_null = isnull;
		g->horizon_loaded = true;
	}
	return g->horizon_null || start <= g->horizon;
}

/* ---------- checking and creating runs ---------- */

static void
PeriodTag(LOCKTAG *tag, const char *app, TimestampTz start)
{
	char	   *k = psprintf("%s\n%s", app, PeriodLabel(start));

	CoordSetTag(tag, CoordNameKey(k, strlen(k)), COORD_NS_APP);
}

static bool
RunExists(const char *app, TimestampTz start)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		args[2];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(start);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_run_exists,
											 "SELECT 1 FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
											 "AND period_start OPERATOR(pg_catalog.=) $2",
											 2, argtypes), args, NULL, false, 1),
				  SPI_OK_SELECT, "reading a run");
	return SPI_processed == 1;
}

/*
 * UpstreamResults: the results of app's done runs starting at starts (a
 * timestamptz[]), as a JSON array in period order; inside SPI.  Results can
 * each be up to COORD_RESULT_MAX_BYTES and a window can hold thousands of
 * periods, so they are added up (by their uncompressed sizes, without
 * detoasting) against what is left of the payload's budget first: over it,
 * the result is 0 and *budget negative, and RunPayload leaves the upstream
 * results out.  Without that, jsonb_agg over them could exceed jsonb's
 * limits and fail every completion of the upstream runs.
 */
static Datum
UpstreamResults(const char *app, Datum starts, int64 *budget)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZARRAYOID};
	Datum		args[2];
	Datum	   *elems;
	bool	   *enulls;
	uint64		n,
				r;
	bool		isnull;
	Datum		out;

	if (*budget < 0)
		return (Datum) 0;
	args[0] = CStringGetTextDatum(app);
	args[1] = starts;
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_upstream_results,
											 "SELECT result FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
											 "AND period_start OPERATOR(pg_catalog.=) ANY ($2) "
											 "AND state OPERATOR(pg_catalog.=) 'done' ORDER BY period_start",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading upstream results");
	n = SPI_processed;
	elems = palloc(sizeof(Datum) * Max(n, 1));
	enulls = palloc(sizeof(bool) * Max(n, 1));
	for (r = 0; r < n; r++)
	{
		CHECK_FOR_INTERRUPTS();
		elems[r] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &enulls[r]);
		*budget -= enulls[r] ? 8 : (int64) toast_raw_datum_size(elems[r]) + 8;
		if (*budget < 0)
			return (Datum) 0;
		if (!enulls[r])
			elems[r] = PointerGetDatum(PG_DETOAST_DATUM(elems[r]));
	}
	{
		int			dims[1] = {(int) n};
		int			lbs[1] = {1};
		Oid			jargtypes[1] = {JSONBARRAYOID};
		Datum		jargs[1];

		jargs[0] = PointerGetDatum(construct_md_array(elems, enulls, 1, dims, lbs, JSONBOID, -1, false,
													  TYPALIGN_INT));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_upstream_array,
												 "SELECT pg_catalog.to_jsonb($1)",
												 1, jargtypes), jargs, NULL, false, 1),
					  SPI_OK_SELECT, "reading upstream results");
		out = SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull),
								false, -1);
	}
	return out;
}

static bool IsSignalDep(const char *dep);
static UpstreamState CheckSignals(const AppDef *d, const AppDep *dep, TimestampTz start, TimestampTz end,
								  Datum *name, Datum *result, int64 *budget);

/*
 * Whether every upstream run of period [start, end) of d is done; when
 * UPSTREAM_DONE, names[]/results[] get each upstream's results in period
 * order (results[i] 0: left out, they would not fit in the payload).  The
 * first dependency that fails or is missing decides.
 */
static UpstreamState
CheckUpstreams(AppGraph *g, const AppDef *d, TimestampTz start, TimestampTz end,
			   Datum *names, Datum *results)
{
	int			i;
	UpstreamState r = UPSTREAM_DONE;
	int64		budget;

	/* conf is as read from the table: short, compressed or out of line */
	budget = COORD_PAYLOAD_MAX_BYTES - (int64) toast_raw_datum_size(d->conf);

	for (i = 0; i < d->ndeps; i++)
	{
		const AppDep *dep = &d->deps[i];
		AppDef	   *u = FindApp(g, dep->app);
		TimestampTz wstart,
					wend,
					s;
		Datum	   *starts;
		int			nstarts = 0,
					cap = 64;
		Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZARRAYOID};
		Datum		args[2];
		bool		isnull;
		int64		ndone,
					nfailed;

		CHECK_FOR_INTERRUPTS();
		if (IsSignalDep(dep->app))
		{
			UpstreamState sr = CheckSignals(d, dep, start, end,
											names && r == UPSTREAM_DONE ? &names[i] : NULL,
											names && r == UPSTREAM_DONE ? &results[i] : NULL, &budget);

			if (sr == UPSTREAM_MISSING)
				return sr;
			if (sr == UPSTREAM_PENDING)
				r = UPSTREAM_PENDING;
			continue;
		}
		if (u == NULL)
			return UPSTREAM_MISSING;	/* dropped */
		if (u->first_null)
			return UPSTREAM_PENDING;	/* not started yet: it gets a first
										 * period at the next tick */
		if (dep->grain > d->grain)
		{
			wstart = AppPeriodTrunc(d, dep->grain, start);
			wend = AppPeriodNext(d, dep->grain, wstart);
		}
		else
		{
			wstart = start;
			wend = end;
		}
		s = AppPeriodCeil(u, u->grain, Max(wstart, u->first_period));
		starts = palloc(sizeof(Datum) * cap);
		for (; s < wend; s = AppPeriodNext(u, u->grain, s))
		{
			CHECK_FOR_INTERRUPTS();
			if (nstarts == cap)
			{
				cap *= 2;
				starts = repalloc(starts, sizeof(Datum) * cap);
			}
			starts[nstarts++] = TimestampTzGetDatum(s);
		}
		if (nstarts == 0)
			return UPSTREAM_MISSING;	/* the upstream started after this
										 * period */
		args[0] = CStringGetTextDatum(u->name);
		args[1] = PointerGetDatum(construct_array(starts, nstarts, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_upstream,
												 "SELECT pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) 'done'), "
												 "pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) ANY "
												 "('{dead,cancelled}'::pg_catalog.text[])) "
												 "FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
												 "AND period_start OPERATOR(pg_catalog.=) ANY ($2)",
												 2, argtypes), args, NULL, false, 0),
					  SPI_OK_SELECT, "reading upstream runs");
		ndone = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		nfailed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		if (nfailed > 0)
			return UPSTREAM_FAILED;
		if (ndone != nstarts)
			r = UPSTREAM_PENDING;
		else if (names && r == UPSTREAM_DONE)
		{
			names[i] = CStringGetTextDatum(u->name);
			results[i] = UpstreamResults(u->name, args[1], &budget);
		}
	}
	return r;
}

/* The payload of a run: app, period, grain, conf, upstream results. */
static Jsonb *
RunPayload(const AppDef *d, TimestampTz start, TimestampTz end, Datum *names, Datum *results, int n)
{
	Oid			argtypes[7] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, JSONBOID, TEXTARRAYOID, JSONBARRAYOID, TEXTOID};
	Datum		args[7];
	bool		isnull;
	Jsonb	   *payload;
	int			attempt;

	args[0] = CStringGetTextDatum(d->name);
	args[1] = TimestampTzGetDatum(start);
	args[2] = TimestampTzGetDatum(end);
	args[3] = d->conf;
	args[6] = CStringGetTextDatum(grain_names[d->grain]);

	/*
	 * a payload over the job limit (a yearly rollup of hourly results) goes
	 * without results
	 */
	for (attempt = 0; attempt < 2; attempt++)
	{
		int			k;

		for (k = 0; attempt == 0 && k < n; k++)
			if (results[k] == (Datum) 0)
				break;
		if (attempt == 0 && k < n)
		{
			ereport(WARNING,
					(errmsg("upstream results of app \"%s\" for %s left out of its payload", d->name, AppPeriodLabel(d, start)),
					 errdetail("With them the payload would have more than %d bytes; read them from coord.runs.",
							   COORD_PAYLOAD_MAX_BYTES)));
			continue;
		}
		args[4] = PointerGetDatum(construct_array(names, attempt == 0 ? n : 0, TEXTOID, -1, false, TYPALIGN_INT));
		args[5] = PointerGetDatum(construct_array(results, attempt == 0 ? n : 0, JSONBOID, -1, false, TYPALIGN_INT));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_payload,
												 "SELECT pg_catalog.jsonb_build_object('app', $1, "
												 "'period_start', pg_catalog.to_char(pg_catalog.timezone('UTC'::pg_catalog.text, $2), "
												 "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
												 "'period_end', pg_catalog.to_char(pg_catalog.timezone('UTC'::pg_catalog.text, $3), "
												 "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
												 "'period', $7, 'conf', $4, 'upstream', "
												 "COALESCE((SELECT pg_catalog.jsonb_object_agg(u.n, u.v) "
												 "FROM ROWS FROM (pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(n, v)), '{}'::pg_catalog.jsonb))",
												 7, argtypes), args, NULL, false, 1),
					  SPI_OK_SELECT, "building a run's payload");
		payload = DatumGetJsonbP(SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull),
												   false, -1));
		if (VARSIZE(payload) <= COORD_PAYLOAD_MAX_BYTES || n == 0 || attempt > 0)
			break;
		ereport(WARNING,
				(errmsg("upstream results of app \"%s\" for %s left out of its payload", d->name, AppPeriodLabel(d, start)),
				 errdetail("With them the payload would have %d bytes, over the limit of %d; read them from coord.runs.",
						   (int) VARSIZE(payload), COORD_PAYLOAD_MAX_BYTES)));
	}
	/* without results too: the conf is what does not fit */
	if (VARSIZE(payload) > COORD_PAYLOAD_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("conf of app \"%s\" is too large for a run's payload", d->name),
				 errdetail("A run's payload would have %d bytes, over the job payload limit of %d.",
						   (int) VARSIZE(payload), COORD_PAYLOAD_MAX_BYTES),
				 errhint("Store large data in a table and put its key in conf.")));
	return payload;
}

/* Enqueues the job of a run (or adopts a live one with its origin); 0 if neither. */
static int64
EnqueueRun(const AppDef *d, TimestampTz start, Jsonb *payload)
{
	char	   *origin = RunOrigin(d, start);
	int64		id;

	/*
	 * run_at: the real time, so that workers can claim it at once whatever
	 * clock ticks use
	 */
	id = CoordEnqueueOrigin(d->queue, payload, GetCurrentTransactionStartTimestamp(), d->host,
							APP_MAX_ATTEMPTS, origin, RunKey(d, start));
	if (id == 0)
		id = CoordOriginJob(origin);
	return id;
}

/*
 * Creates the run of d for the period starting at start if it has none and
 * (with PERIOD_CHECK_UPSTREAMS) every upstream run is done; the caller holds
 * the period's lock.
 */
static RunOutcome
CreateRun(AppGraph *g, const AppDef *d, TimestampTz start, int flags)
{
	bool		check = (flags & PERIOD_CHECK_UPSTREAMS) != 0;
	TimestampTz end = AppPeriodNext(d, d->grain, start);
	Datum	   *names = palloc0(sizeof(Datum) * Max(d->ndeps, 1));
	Datum	   *results = palloc0(sizeof(Datum) * Max(d->ndeps, 1));
	int64		id;
	Oid			argtypes[6] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, INT8OID};
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	if (RunExists(d->name, start))
		return RUN_EXISTS;
	if (check)
	{
		switch (CheckUpstreams(g, d, start, end, names, results))
		{
			case UPSTREAM_DONE:
				break;
			case UPSTREAM_PENDING:
				return RUN_WAITING;
			case UPSTREAM_FAILED:
				return RUN_UPSTREAM_FAILED;
			case UPSTREAM_MISSING:
				return RUN_UPSTREAM_MISSING;
		}
	}
	id = EnqueueRun(d, start, RunPayload(d, start, end, names, results, check ? d->ndeps : 0));
	args[0] = CStringGetTextDatum(d->name);
	args[1] = TimestampTzGetDatum(start);
	args[2] = TimestampTzGetDatum(end);
	args[3] = CStringGetTextDatum(d->queue);
	args[4] = d->host ? CStringGetTextDatum(d->host) : (Datum) 0;
	nulls[4] = d->host ? ' ' : 'n';
	args[5] = Int64GetDatum(id);
	nulls[5] = id > 0 ? ' ' : 'n';
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_insert_run,
											 "INSERT INTO coord.app_runs (app, period_start, period_end, queue, host, state, job_id) "
											 "VALUES ($1, $2, $3, $4, $5, 'live', $6) ON CONFLICT DO NOTHING",
											 6, argtypes), args, nulls, false, 0),
				  SPI_OK_INSERT, "creating a run");
	/* a conflict: another transaction created it since RunExists looked */
	return SPI_processed == 1 ? RUN_CREATED : RUN_EXISTS;
}

/*
 * Takes the period's lock and creates the run when it is due; keeps the
 * lock (to commit) when it created one or with PERIOD_KEEP_LOCK.
 */
static RunOutcome
TryPeriod(AppGraph *g, const AppDef *d, TimestampTz start, int flags)
{
	LOCKTAG		tag;
	RunOutcome	r;

	if (d->first_null || start < d->first_period || !HorizonAllows(g, d, start))
		return RUN_NOT_DUE;
	PeriodTag(&tag, d->name, start);
	(void) CoordLockTake(&tag, ExclusiveLock, false, false);
	r = CreateRun(g, d, start, flags);
	if (r != RUN_CREATED && !(flags & PERIOD_KEEP_LOCK))
		CoordLockLetGo(&tag, ExclusiveLock, false);
	return r;
}

/* ---------- isolation of one app's work ---------- */

/*
 * Records an app's error, or clears it (error NULL), inside SPI as the
 * owner; coord.runs shows it as app_error.
 */
static void
SetAppError(const char *app, const char *error)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};

	args[0] = CStringGetTextDatum(app);
	args[1] = error ? CStringGetTextDatum(error) : (Datum) 0;
	nulls[1] = error ? ' ' : 'n';
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_set_error,
											 "UPDATE coord.app_defs SET last_error = $2 WHERE name OPERATOR(pg_catalog.=) $1",
											 2, argtypes), args, nulls, false, 0),
				  SPI_OK_UPDATE, "recording an app's error");
	if (SPI_processed > 0)
		AppGraphChanged();
}

/*
 * Runs fn(arg), the work of app `app`, in a subtransaction (CoordIsolated):
 * when it fails, a WARNING says what was skipped, the error is recorded
 * for the app, and false is returned; the caller's other apps go on.
 */
static bool
AppIsolated(const char *app, const char *what, CoordIsolatedFn fn, void *arg)
{
	ErrorData  *e = CoordIsolated(fn, arg);

	if (e == NULL)
		return true;
	ereport(WARNING,
			(errmsg("%s skipped app \"%s\"", what, app),
			 errdetail("%s", e->message),
			 errhint("The error is in coord.runs.app_error (coord.app_defs.last_error); the next tick tries again.")));
	SetAppError(app, e->message);
	return false;
}

/* ---------- the finish hook ---------- */

/* "a:<app>:<label>" (RunOrigin): the app and its period's start */
static bool
ParseOrigin(const char *origin, char **app, TimestampTz *start)
{
	const char *body = origin + strlen(COORD_ORIGIN_APP);
	const char *colon = strrchr(body, ':');
	int64_t		t;

	if (colon == NULL || colon == body || !coord_period_parse_label(colon + 1, &t))
		return false;
	*app = pnstrdup(body, colon - body);
	*start = (TimestampTz) t;
	return true;
}

typedef struct DependentArgs
{
	AppGraph   *g;
	AppDef	   *d;
	const char *upstream;
	TimestampTz start;
} DependentArgs;

/* The runs of dependent d that the upstream's run for start may complete. */
static void
DependentRuns(void *arg)
{
	DependentArgs *a = (DependentArgs *) arg;
	AppDef	   *d = a->d;
	int			j;

	for (j = 0; j < d->ndeps; j++)
	{
		TimestampTz from,
					to,
					p;

		if (strcmp(d->deps[j].app, a->upstream) != 0)
			continue;
		if (d->deps[j].grain > d->grain)
		{
			from = AppPeriodTrunc(d, d->deps[j].grain, a->start);
			to = AppPeriodNext(d, d->deps[j].grain, from);
			from = AppPeriodCeil(d, d->grain, from);
		}
		else
		{
			from = AppPeriodTrunc(d, d->grain, a->start);
			to = AppPeriodNext(d, d->grain, from);
		}
		for (p = from; p < to; p = AppPeriodNext(d, d->grain, p))
			(void) TryPeriod(a->g, d, p, PERIOD_CHECK_UPSTREAMS | PERIOD_KEEP_LOCK);
	}
}

/* Each dependent of app, for the run of app starting at start. */
static void
Dependents(AppGraph *g, const char *app, TimestampTz start)
{
	int			i,
				j;

	for (i = 0; i < g->n; i++)
	{
		DependentArgs a;

		for (j = 0; j < g->apps[i].ndeps; j++)
			if (strcmp(g->apps[i].deps[j].app, app) == 0)
				break;
		if (j == g->apps[i].ndeps)
			continue;
		a.g = g;
		a.d = &g->apps[i];
		a.upstream = app;
		a.start = start;
		(void) AppIsolated(a.d->name, "the completion of an upstream run", DependentRuns, &a);
	}
}

static void
CoordAppRunFinished(const char *origin, int64 job_id, const char *state, TimestampTz finished_at,
					Datum result, bool result_null)
{
	char	   *app;
	TimestampTz start;
	Oid			argtypes[5] = {TEXTOID, TIMESTAMPTZOID, TEXTOID, JSONBOID, INT8OID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	AppGraph   *g;

	if (!ParseOrigin(origin, &app, &start))
		return;
	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(start);
	args[2] = CStringGetTextDatum(state);
	args[3] = result;
	nulls[3] = result_null ? 'n' : ' ';
	args[4] = Int64GetDatum(job_id);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_finish,
											 "UPDATE coord.app_runs SET state = $3, result = $4, job_id = $5, "
											 "finished_at = pg_catalog.clock_timestamp(), "
											 "attempts = COALESCE((SELECT h.attempt FROM coord.job_history AS h "
											 "WHERE h.id OPERATOR(pg_catalog.=) $5), attempts) "
											 "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) $2 "
											 "AND state OPERATOR(pg_catalog.<>) 'done'",
											 5, argtypes), args, nulls, false, 0),
				  SPI_OK_UPDATE, "recording a run");
	if (SPI_processed != 1)
		return;					/* dropped app, or a run done already */
	AppAlertsRunFinished(app, start, state, finished_at);
	if (strcmp(state, "done") != 0)
		return;

	/*
	 * The dependents, by name; their periods this run belongs to, in time
	 * order.  Each dependent in a subtransaction: a broken one must not fail
	 * the completion of its upstream's job, nor keep the other dependents
	 * from their runs; a tick repairs what it missed once it works.
	 */
	g = CachedGraph();
	g->horizon_loaded = false;	/* the latest tick, as of now */
	if (FindApp(g, app) == NULL)
		return;
	graph_users++;
	PG_TRY();
	{
		Dependents(g, app, start);
	}
	PG_FINALLY();
	{
		graph_users--;
	}
	PG_END_TRY();
}

/* ---------- signals: external inputs ---------- */

/*
 * A dependency written "@name": "<grain>" is on the signal source name, not
 * on an app (app names cannot hold '@').  coord.signal(name, t, payload)
 * stores the row (name, t) of coord.app_signals once and, in the same
 * transaction, runs the dependents' check-and-create exactly as the
 * completion of an upstream run does (Dependents: DependentRuns, TryPeriod
 * with the (D, P) lock kept to commit, CheckUpstreams); so two signals, or
 * a signal and an upstream completion, that complete one period at once
 * create its run once: the second to take (D, P) sees the first's commit.
 * Lock order: the signal's row (its primary key entry), then the (D, P)
 * locks as a completion takes them.  A transaction that signals several
 * periods can deadlock with another signalling the same ones in another
 * order; PostgreSQL's detector aborts one of them.
 *
 * Which signals period P of app D needs, for "@name" declared with grain g:
 * the windows are those of an app upstream of grain g (CheckUpstreams), and
 * each g-period of the window needs at least one signal whose period_start
 * lies in it.  A signal source has no zone of its own either: its
 * g-periods are D's, in D's zone (hourly signals under a daily app in
 * America/Chicago: the 23, 24 or 25 real hours of that Chicago day, each
 * needing a signal that starts inside it).  A signal source has no first
 * period of its own: it counts
 * from D's first period on (catchup_from, else D's first tick), so every
 * g-period of the window counts; signals for periods before D's first one
 * are kept but make no run.  The payloads of the window's signals go into
 * the run's payload as an upstream's results do: "upstream": {"@name":
 * [payload, ...]} in period_start order.
 *
 * Retention (CoordSignalsTick, from coord.tick): a signal is kept while any
 * app depends on "@name" (a rerun of any period may need it again); once
 * none does, it goes after coord.job_history_retention.  The tick decides
 * under the definitions lock, so define_app does not gain a dependency on
 * a name whose signals it is deleting.
 */
static bool
IsSignalDep(const char *dep)
{
	return dep[0] == '@';
}

/* A signal name has the syntax of other names (CoordNameArg). */
static void
CheckSignalName(const char *signal, const char *app)
{
	int			len = strlen(signal);
	int			i;

	for (i = 0; i < len; i++)
	{
		char		c = signal[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-' || c == '.' || c == ':' || c == '/'))
			break;
	}
	if (len == 0 || len > COORD_NAME_MAX || i < len)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid signal name \"%s\" in the depends of app \"%s\"", signal, app),
				 errdetail("A signal name has 1 to %d bytes: letters, digits and the characters _ - . : /.",
						   COORD_NAME_MAX),
				 errhint("Write a dependency on a signal as \"@name\": \"<period>\".")));
}

/*
 * The payloads of signal's signals in [from, to), in period_start order, as
 * a JSON array, within *budget (as UpstreamResults: over it, 0 and *budget
 * negative).
 */
static Datum
SignalPayloads(const char *signal, TimestampTz from, TimestampTz to, int64 *budget)
{
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[3];
	Datum	   *elems;
	bool	   *enulls;
	uint64		n,
				r;
	bool		isnull;

	if (*budget < 0)
		return (Datum) 0;
	/* each payload costs 8 bytes and more: rows past budget / 8 cannot fit */
	args[0] = CStringGetTextDatum(signal);
	args[1] = TimestampTzGetDatum(from);
	args[2] = TimestampTzGetDatum(to);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_signal_payloads,
											 "SELECT payload FROM coord.app_signals WHERE name OPERATOR(pg_catalog.=) $1 "
											 "AND period_start OPERATOR(pg_catalog.>=) $2 "
											 "AND period_start OPERATOR(pg_catalog.<) $3 ORDER BY period_start",
											 3, argtypes), args, NULL, false, *budget / 8 + 2),
				  SPI_OK_SELECT, "reading signals");
	n = SPI_processed;
	elems = palloc(sizeof(Datum) * Max(n, 1));
	enulls = palloc0(sizeof(bool) * Max(n, 1));
	for (r = 0; r < n; r++)
	{
		CHECK_FOR_INTERRUPTS();
		elems[r] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);
		*budget -= (int64) toast_raw_datum_size(elems[r]) + 8;
		if (*budget < 0)
			return (Datum) 0;
		elems[r] = PointerGetDatum(PG_DETOAST_DATUM(elems[r]));
	}
	{
		int			dims[1] = {(int) n};
		int			lbs[1] = {1};
		Oid			jargtypes[1] = {JSONBARRAYOID};
		Datum		jargs[1];

		jargs[0] = PointerGetDatum(construct_md_array(elems, enulls, 1, dims, lbs, JSONBOID, -1, false,
													  TYPALIGN_INT));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_upstream_array,
												 "SELECT pg_catalog.to_jsonb($1)",
												 1, jargtypes), jargs, NULL, false, 1),
					  SPI_OK_SELECT, "reading signals");
		return SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull),
								 false, -1);
	}
}

/*
 * CheckUpstreams for a dependency on a signal: UPSTREAM_DONE when each
 * dep->grain period of the window has a signal; then *name and *result
 * (when name is not NULL) get "@signal" and the window's payloads.
 */
static UpstreamState
CheckSignals(const AppDef *d, const AppDep *dep, TimestampTz start, TimestampTz end,
			 Datum *name, Datum *result, int64 *budget)
{
	TimestampTz wstart,
				wend,
				s;
	Datum	   *starts;
	Datum	   *ends;
	int			nstarts = 0,
				cap = 64;
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID};
	Datum		args[3];
	bool		isnull;
	int64		nmet;

	/*
	 * the window, as for an app upstream of this grain; the signal's periods
	 * are d's, in d's zone (a signal source has no zone of its own)
	 */
	if (dep->grain > d->grain)
	{
		wstart = AppPeriodTrunc(d, dep->grain, start);
		wend = AppPeriodNext(d, dep->grain, wstart);
	}
	else
	{
		wstart = start;
		wend = end;
	}
	starts = palloc(sizeof(Datum) * cap);
	ends = palloc(sizeof(Datum) * cap);
	for (s = AppPeriodCeil(d, dep->grain, wstart); s < wend; s = AppPeriodNext(d, dep->grain, s))
	{
		CHECK_FOR_INTERRUPTS();
		if (nstarts == cap)
		{
			cap *= 2;
			starts = repalloc(starts, sizeof(Datum) * cap);
			ends = repalloc(ends, sizeof(Datum) * cap);
		}
		starts[nstarts] = TimestampTzGetDatum(s);
		ends[nstarts++] = TimestampTzGetDatum(AppPeriodNext(d, dep->grain, s));
	}
	if (nstarts == 0)
		return UPSTREAM_MISSING;
	args[0] = CStringGetTextDatum(dep->app + 1);
	args[1] = PointerGetDatum(construct_array(starts, nstarts, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(ends, nstarts, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	/* the periods of the window that have a signal */
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_signal_count,
											 "SELECT pg_catalog.count(*) FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS w(s, e) "
											 "WHERE EXISTS (SELECT 1 FROM coord.app_signals AS x "
											 "WHERE x.name OPERATOR(pg_catalog.=) $1 "
											 "AND x.period_start OPERATOR(pg_catalog.>=) w.s "
											 "AND x.period_start OPERATOR(pg_catalog.<) w.e)",
											 3, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading signals");
	nmet = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (nmet != nstarts)
		return UPSTREAM_PENDING;
	if (name != NULL)
	{
		*name = CStringGetTextDatum(dep->app);
		*result = SignalPayloads(dep->app + 1, DatumGetTimestampTz(starts[0]),
								 DatumGetTimestampTz(ends[nstarts - 1]), budget);
	}
	return UPSTREAM_DONE;
}

/*
 * DependentRuns for a signal at a->start: first, as an upstream run's
 * start, the start of the signal's period in the dependent's zone, which
 * places it in the windows (a week that begins in one month and ends in the
 * next is the first month's).  Inside the subtransaction, so that an app
 * whose zone is gone fails alone.
 */
static void
SignalDependentRuns(void *arg)
{
	DependentArgs *a = (DependentArgs *) arg;
	int			j;

	for (j = 0; j < a->d->ndeps; j++)
		if (strcmp(a->d->deps[j].app, a->upstream) == 0)
			break;
	Assert(j < a->d->ndeps);
	a->start = AppPeriodTrunc(a->d, a->d->deps[j].grain, a->start);
	DependentRuns(a);
}

/*
 * Each dependent of "@signal", for a signal at t (inside SPI, as the
 * owner): the runs of its periods that t may complete, each dependent
 * isolated as for a completion.  The signal's period is the dependent's:
 * an hourly signal under a daily app in America/Chicago counts in the
 * Chicago day holding it.
 */
static void
SignalDependents(AppGraph *g, const char *dep, TimestampTz t)
{
	int			i,
				j;

	for (i = 0; i < g->n; i++)
	{
		DependentArgs a;

		for (j = 0; j < g->apps[i].ndeps; j++)
			if (strcmp(g->apps[i].deps[j].app, dep) == 0)
				break;
		if (j == g->apps[i].ndeps)
			continue;
		a.g = g;
		a.d = &g->apps[i];
		a.upstream = dep;
		a.start = t;
		(void) AppIsolated(a.d->name, "a signal", SignalDependentRuns, &a);
	}
}

/*
 * coord.signal(name, period_start, payload): records the signal (false, and
 * nothing changes, when (name, period_start) was signalled already) and
 * creates the runs it completes, in this transaction.
 */
Datum
coord_signal(PG_FUNCTION_ARGS)
{
	char	   *name = CoordNameArg(fcinfo, 0, "signal", false);
	TimestampTz t;
	Jsonb	   *payload;
	char	   *who;
	Oid			argtypes[4] = {TEXTOID, TIMESTAMPTZOID, JSONBOID, TEXTOID};
	Datum		args[4];
	CoordUserSwitch sw;
	bool		inserted;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 1, "period_start");
	CoordRequireArg(fcinfo, 2, "payload");
	t = PG_GETARG_TIMESTAMPTZ(1);
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("period_start must be a finite time")));
	/* in the years of app periods (1 to 9999) */
	(void) PeriodTrunc(G_YEARLY, t);
	payload = PG_GETARG_JSONB_P(2);
	CoordCheckSize("signal payload", VARSIZE(payload), COORD_RESULT_MAX_BYTES);
	who = GetUserNameFromId(GetUserId(), false);

	args[0] = CStringGetTextDatum(name);
	args[1] = TimestampTzGetDatum(t);
	args[2] = JsonbPGetDatum(payload);
	args[3] = CStringGetTextDatum(who);
	CoordSpiBegin(&sw);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_signal_insert,
											 "INSERT INTO coord.app_signals (name, period_start, payload, signalled_by) "
											 "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
											 4, argtypes), args, NULL, false, 0),
				  SPI_OK_INSERT, "signal");
	inserted = (SPI_processed == 1);
	if (inserted)
	{
		char	   *dep = psprintf("@%s", name);
		AppGraph   *g = CachedGraph();

		g->horizon_loaded = false;	/* the latest tick, as of now */
		graph_users++;
		PG_TRY();
		{
			SignalDependents(g, dep, t);
		}
		PG_FINALLY();
		{
			graph_users--;
		}
		PG_END_TRY();
	}
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(inserted);
}

/* ---------- coord.tick's share ---------- */

/* An app's first tick: its first period, and next_period with it. */
static void
SetFirstPeriod(const char *app, TimestampTz first, TimestampTz next)
{
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[3];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(first);
	args[2] = TimestampTzGetDatum(next);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_set_first,
											 "UPDATE coord.app_defs SET first_period = $2, next_period = $3 "
											 "WHERE name OPERATOR(pg_catalog.=) $1",
											 3, argtypes), args, NULL, false, 0),
				  SPI_OK_UPDATE, "tick");
	if (SPI_processed > 0)
		AppGraphChanged();
}

/* next_period, written only when it changed */
static void
SetNextPeriod(const char *app, TimestampTz next)
{
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[3];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(0);
	args[2] = TimestampTzGetDatum(next);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_set_next,
											 "UPDATE coord.app_defs SET next_period = $3 "
											 "WHERE name OPERATOR(pg_catalog.=) $1 "
											 "AND NOT COALESCE(next_period OPERATOR(pg_catalog.=) $3, next_period IS NULL AND $3 IS NULL)",
											 3, argtypes), args, NULL, false, 0),
				  SPI_OK_UPDATE, "tick");
	if (SPI_processed > 0)
		AppGraphChanged();
}

static void
SetRunJob(const char *app, TimestampTz start, int64 job_id)
{
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZOID, INT8OID};
	Datum		args[3];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(start);
	args[2] = Int64GetDatum(job_id);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_set_job,
											 "UPDATE coord.app_runs AS r SET job_id = $3, claim_token = NULL, claim_seen_at = NULL, "
											 "attempts = COALESCE((SELECT j.attempt FROM coord.job AS j "
											 "WHERE j.id OPERATOR(pg_catalog.=) $3), r.attempts) "
											 "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) $2 "
											 "AND state OPERATOR(pg_catalog.=) 'live'",
											 3, argtypes), args, NULL, false, 0),
				  SPI_OK_UPDATE, "tick");
}

typedef struct TimeoutArgs
{
	const char *app;
	TimestampTz start;
	int64		id;
	int64		token;
	Interval   *timeout;
	TimestampTz now;			/* the tick's */
	bool		touched;
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
	AppAlertTimeout(a->app, a->start, a->now, why, newid == 0);
	if (newid > 0)
		SetRunJob(a->app, a->start, newid);
	/* newid 0: it died, and the finish hook recorded that */
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
	uint64		i,
				n;
	SPITupleTable *tt;
	int64		touched = 0;

	args[0] = TimestampTzGetDatum(now);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_timeouts,
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
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "tick");
	n = SPI_processed;
	tt = SPI_tuptable;
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		TimeoutArgs a;

		CHECK_FOR_INTERRUPTS();
		a.app = SPI_getvalue(tt->vals[i], tt->tupdesc, 1);
		a.start = DatumGetTimestampTz(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));
		a.id = DatumGetInt64(SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &isnull));
		a.timeout = DatumGetIntervalP(SPI_getbinval(tt->vals[i], tt->tupdesc, 4, &isnull));
		a.token = DatumGetInt64(SPI_getbinval(tt->vals[i], tt->tupdesc, 5, &isnull));
		a.now = now;
		a.touched = false;
		if (AppIsolated(a.app, "the timeout of a run", TimeOutRun, &a) && a.touched)
			touched++;
	}

	/* note when a tick first saw each claim of a run with a timeout */
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_claim_seen,
											 "UPDATE coord.app_runs AS r SET claim_token = j.token, claim_seen_at = $1 "
											 "FROM coord.job AS j, coord.app_defs AS d "
											 "WHERE r.state OPERATOR(pg_catalog.=) 'live' AND j.id OPERATOR(pg_catalog.=) r.job_id "
											 "AND d.name OPERATOR(pg_catalog.=) r.app AND d.timeout IS NOT NULL "
											 "AND j.claimed_at IS NOT NULL "
											 "AND NOT COALESCE(r.claim_token OPERATOR(pg_catalog.=) j.token, false)",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_UPDATE, "tick");
	return touched;
}

typedef struct OrphanArgs
{
	AppGraph   *g;
	AppDef	   *d;
	TimestampTz start;
	bool		made;
} OrphanArgs;

static void
RepairOrphan(void *arg)
{
	OrphanArgs *a = (OrphanArgs *) arg;
	AppDef	   *d = a->d;
	TimestampTz start = a->start;
	TimestampTz end = AppPeriodNext(d, d->grain, start);
	Datum	   *names = palloc0(sizeof(Datum) * Max(d->ndeps, 1));
	Datum	   *results = palloc0(sizeof(Datum) * Max(d->ndeps, 1));
	int64		id;

	if (d->ndeps > 0 && CheckUpstreams(a->g, d, start, end, names, results) != UPSTREAM_DONE)
		id = EnqueueRun(d, start, RunPayload(d, start, end, NULL, NULL, 0));
	else
		id = EnqueueRun(d, start, RunPayload(d, start, end, names, results, d->ndeps));
	if (id > 0)
	{
		SetRunJob(d->name, start, id);
		a->made = true;
	}
}

/* Live runs whose job is gone (deleted by hand): their job again. */
static int64
RepairOrphans(AppGraph *g)
{
	uint64		i,
				n;
	SPITupleTable *tt;
	int64		made = 0;

	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_orphans,
											 "SELECT r.app, r.period_start FROM coord.app_runs AS r "
											 "WHERE r.state OPERATOR(pg_catalog.=) 'live' AND NOT EXISTS "
											 "(SELECT 1 FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) r.job_id) "
											 "ORDER BY r.app COLLATE pg_catalog.\"C\", r.period_start LIMIT 1000",
											 0, NULL), NULL, NULL, false, 0),
				  SPI_OK_SELECT, "tick");
	n = SPI_processed;
	tt = SPI_tuptable;
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		OrphanArgs	a;

		CHECK_FOR_INTERRUPTS();
		a.g = g;
		a.d = FindApp(g, SPI_getvalue(tt->vals[i], tt->tupdesc, 1));
		a.start = DatumGetTimestampTz(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));
		a.made = false;
		if (a.d == NULL)
			continue;
		if (AppIsolated(a.d->name, "the repair of a run", RepairOrphan, &a) && a.made)
			made++;
	}
	return made;
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
 * a subtransaction of its own (AppIsolated): one broken definition gets a
 * WARNING and its error recorded, and every other app proceeds.
 */
int64
CoordAppsTick(TimestampTz now)
{
	AppGraph	g;
	int			i;
	int64		done = 0;

	done += TimeOutRuns(now);
	LoadApps(&g, 0);
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
		done += CoordAppsRerunTick(&g, a.d);	/* apps_rerun.c: reset periods */
		if (AppIsolated(a.d->name, "coord.tick", AppTick, &a))
		{
			done += a.done;
			if (a.d->has_error)
				SetAppError(a.d->name, NULL);
		}
		else
			g.apps[i] = saved;	/* what the rollback undid */
	}
	graph_valid = false;		/* its writes sent their invalidations */
	done += AppAlertsTick(now); /* runs late as of now: apps_alerts.c */
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
			d->first_period = AppPeriodTrunc(d, d->grain, now);
			d->first_null = false;
			d->next_period = d->first_period;
			d->next_null = false;
			SetFirstPeriod(d->name, d->first_period, d->next_period);
		}
		p = d->next_null ? d->first_period : d->next_period;
		if (d->ndeps == 0)
		{
			Oid			argtypes[1] = {TEXTOID};
			Datum		args[1];
			bool		isnull;

			args[0] = CStringGetTextDatum(d->name);
			CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_live_count,
													 "SELECT pg_catalog.count(*) FROM coord.app_runs "
													 "WHERE app OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'live'",
													 1, argtypes), args, NULL, false, 0),
						  SPI_OK_SELECT, "tick");
			budget = APP_MAX_LIVE_RUNS -
				DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		}
		for (steps = 0; steps < APP_TICK_STEPS && p <= now && budget > 0; steps++)
		{
			switch (TryPeriod(gp, d, p, d->ndeps > 0 ? PERIOD_CHECK_UPSTREAMS : 0))
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
			p = AppPeriodNext(d, d->grain, p);
			if (contiguous)
			{
				d->next_period = p;
				d->next_null = false;
			}
		}
		if (!d->next_null)
			SetNextPeriod(d->name, d->next_period);
	}
}

/* ---------- coord.define_app and coord.drop_app ---------- */

static void
LockDefinitions(void)
{
	LOCKTAG		tag;
	const char *k = "\napp definitions";

	CoordSetTag(&tag, CoordNameKey(k, strlen(k)), COORD_NS_APP);
	(void) CoordLockTake(&tag, ExclusiveLock, false, false);
}

/*
 * CheckCycles: an iterative depth-first search with colours over the whole
 * graph, so each app and each dependency is visited once (linear in the
 * graph, whatever its shape) and no recursion depth depends on the caller.
 * ERROR on reaching an app that is on the current path.
 */
static void
CheckCycles(AppGraph *g)
{
	char	   *colour = palloc0(Max(g->n, 1)); /* 0 new, 1 on the path, 2
												 * done */
	int		   *stack = palloc(sizeof(int) * Max(g->n, 1)); /* the path */
	int		   *next = palloc0(sizeof(int) * Max(g->n, 1)); /* next dependency to
															 * follow */
	int			root;

	for (root = 0; root < g->n; root++)
	{
		int			depth = 0;

		if (colour[root] != 0)
			continue;
		stack[depth++] = root;
		colour[root] = 1;
		while (depth > 0)
		{
			int			v = stack[depth - 1];
			AppDef	   *d = &g->apps[v];
			AppDef	   *u;
			int			ui;

			CHECK_FOR_INTERRUPTS();
			if (next[v] >= d->ndeps)
			{
				colour[v] = 2;
				depth--;
				continue;
			}
			u = FindApp(g, d->deps[next[v]++].app);
			if (u == NULL)
				continue;
			ui = u - g->apps;
			if (colour[ui] == 1)
			{
				StringInfoData s;
				int			j = depth - 1;

				while (j > 0 && stack[j] != ui)
					j--;
				initStringInfo(&s);
				for (; j < depth; j++)
					appendStringInfo(&s, "%s -> ", g->apps[stack[j]].name);
				appendStringInfoString(&s, u->name);
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_RECURSION),
						 errmsg("app dependencies would form a cycle through app \"%s\"", u->name),
						 errdetail("Following the dependencies: %s.", s.data)));
			}
			if (colour[ui] == 0)
			{
				colour[ui] = 1;
				stack[depth++] = ui;
			}
		}
	}
	pfree(colour);
	pfree(stack);
	pfree(next);
}

/* Every app's dependencies: known apps, periods no finer than theirs, no cycle. */
static void
ValidateGraph(AppGraph *g)
{
	int			i,
				j;

	for (i = 0; i < g->n; i++)
	{
		AppDef	   *d = &g->apps[i];

		for (j = 0; j < d->ndeps; j++)
		{
			AppDef	   *u;

			CHECK_FOR_INTERRUPTS();
			if (IsSignalDep(d->deps[j].app))
				continue;		/* checked by ParseDepends */
			u = FindApp(g, d->deps[j].app);
			if (u == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("app \"%s\" depends on unknown app \"%s\"", d->name, d->deps[j].app),
						 errdetail("There is no app \"%s\".", d->deps[j].app),
						 errhint("Define the apps it depends on first.")));
			if (d->deps[j].grain < u->grain)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("app \"%s\" depends on app \"%s\" %s, finer than that app runs",
								d->name, u->name, grain_names[d->deps[j].grain]),
						 errdetail("App \"%s\" runs %s, so a dependency on it is %s or coarser.",
								   u->name, grain_names[u->grain], grain_names[u->grain])));
		}
	}
	CheckCycles(g);
}

/*
 * What coord.define_app was given, checked: ParseDefinition and
 * ParseDepends fill it, ValidateDefinition and DecidePeriods complete it,
 * WriteDefinition stores it.
 */
typedef struct AppDefinition
{
	AppDef		def;			/* name, starts, grain, deps, queue, host,
								 * conf; the periods to store */
	Jsonb	   *depends;		/* as given: stored as it is */
	Interval   *timeout;		/* NULL: none */
	Interval   *deadline;		/* NULL: none; stored only (alerts: future) */
	bool		has_catchup;
	TimestampTz catchup;		/* catchup_from, when has_catchup */
} AppDefinition;

/*
 * A deadline is a positive span of finite length; like timeout, a month
 * counts 30 days.  Only stored for now: the alerts that use it are future
 * work (README, Apps).
 */
static Interval *
CheckDeadline(Interval *span, const char *app)
{
	int64		days = (int64) span->month * DAYS_PER_MONTH + span->day;
	int64		usec;

	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &usec) ||
		pg_add_s64_overflow(usec, span->time, &usec))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("deadline of app \"%s\" must be finite", app),
				 errdetail("The value given was %s, longer than any span of timestamps.",
						   DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(span))))));
	if (usec <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("deadline of app \"%s\" must be positive", app),
				 errdetail("The value given was %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(span))))));
	return span;
}

/* The arguments but depends' items (before SPI). */
static void
ParseDefinition(FunctionCallInfo fcinfo, AppDefinition *ad)
{
	char	   *name = CoordNameArg(fcinfo, 0, "app", false);
	char	   *starts_s = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *host = CoordNameArg(fcinfo, 4, "host", true);
	char	   *queue = CoordNameArg(fcinfo, 5, "queue", false);
	Grain		starts = G_NONE;
	Jsonb	   *conf;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 2, "depends");
	CoordRequireArg(fcinfo, 7, "conf");
	CoordRequireArg(fcinfo, 8, "tz");
	if (starts_s)
	{
		starts = GrainFromName(starts_s);
		if (starts == G_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid starts \"%s\" for app \"%s\"", starts_s, name),
					 errhint("starts is hourly, daily, weekly, monthly or yearly, or NULL for an app "
							 "that runs only when its dependencies are met.")));
	}
	memset(ad, 0, sizeof(*ad));
	ad->depends = PG_GETARG_JSONB_P(2);
	conf = CoordCheckPayload(PG_GETARG_JSONB_P(7));
	/* small enough that every run's payload fits (RunPayload) */
	CoordCheckSize("app conf", VARSIZE(conf), COORD_CONF_MAX_BYTES);
	/* a timeout must end in the timestamp range, for runs claimed from now on */
	if (!PG_ARGISNULL(3))
	{
		ad->timeout = PG_GETARG_INTERVAL_P(3);
		(void) CoordTimeAdd(GetCurrentTransactionStartTimestamp(),
							CoordIntervalToMicroseconds(ad->timeout, "timeout", false),
							psprintf("the timeout of app \"%s\"", name));
	}
	if (!PG_ARGISNULL(6))
	{
		ad->has_catchup = true;
		ad->catchup = PG_GETARG_TIMESTAMPTZ(6);
		if (TIMESTAMP_NOT_FINITE(ad->catchup))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("catchup_from must be a finite time")));
	}

	ad->def.zone = CoordZoneArg(text_to_cstring(PG_GETARG_TEXT_PP(8)), &ad->def.tz);
	if (!PG_ARGISNULL(9))
		ad->deadline = CheckDeadline(PG_GETARG_INTERVAL_P(9), name);

	ad->def.name = name;
	ad->def.starts = starts;
	ad->def.queue = queue;
	ad->def.host = host;
	ad->def.conf = JsonbPGetDatum(conf);
	ad->def.has_timeout = (ad->timeout != NULL);
	ad->def.first_null = ad->def.next_null = true;
}

static void CheckSignalName(const char *signal, const char *app);

/* depends: an object of app names and periods (inside SPI) */
static void
ParseDepends(AppDefinition *ad)
{
	AppDef	   *nd = &ad->def;
	const char *name = nd->name;
	Oid			argtypes[1] = {JSONBOID};
	Datum		args[1];
	char	   *type;
	SPITupleTable *tt;
	uint64		i,
				n;

	args[0] = JsonbPGetDatum(ad->depends);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_dep_items,
											 "SELECT pg_catalog.jsonb_typeof($1), e.key, pg_catalog.jsonb_typeof(e.value), e.value OPERATOR(pg_catalog.#>>) '{}'::pg_catalog.text[] "
											 "FROM (SELECT 1) AS one LEFT JOIN LATERAL pg_catalog.jsonb_each("
											 "CASE WHEN pg_catalog.jsonb_typeof($1) OPERATOR(pg_catalog.=) 'object' THEN $1 "
											 "ELSE '{}'::pg_catalog.jsonb END) AS e ON true "
											 "ORDER BY e.key COLLATE pg_catalog.\"C\"",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "define_app");
	type = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	tt = SPI_tuptable;
	n = SPI_processed;
	if (strcmp(type, "object") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("depends of app \"%s\" must be a JSON object", name),
				 errdetail("It is a JSON %s.", type),
				 errhint("Name each app it depends on with a period: {\"adxcheck\": \"hourly\"}.")));
	nd->deps = palloc0(sizeof(AppDep) * n);
	for (i = 0; i < n; i++)
	{
		char	   *dep = SPI_getvalue(tt->vals[i], tt->tupdesc, 2);
		char	   *vtype = SPI_getvalue(tt->vals[i], tt->tupdesc, 3);
		char	   *val = SPI_getvalue(tt->vals[i], tt->tupdesc, 4);
		Grain		dg;

		if (dep == NULL)
			continue;			/* the empty object */
		dg = (vtype && strcmp(vtype, "string") == 0) ? GrainFromName(val) : G_NONE;
		if (dg == G_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid period for the dependency of app \"%s\" on app \"%s\"", name, dep),
					 errdetail("The period is %s; it must be one of \"hourly\", \"daily\", \"weekly\", \"monthly\", \"yearly\".",
							   val ? val : "null")));
		if (dep[0] == '@')
			CheckSignalName(dep + 1, name);
		if (strcmp(dep, name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_RECURSION),
					 errmsg("app dependencies would form a cycle through app \"%s\"", name),
					 errdetail("Following the dependencies: %s -> %s.", name, name)));
		nd->deps[nd->ndeps].app = dep;
		nd->deps[nd->ndeps].grain = dg;
		nd->ndeps++;
	}
}

/*
 * The definition on its own, then in the graph: it must be able to run,
 * its first period must end in the range of app periods and a run's
 * payload (conf, with no upstream results) must fit the job payload
 * limit; with it in place, every app's dependencies must be valid
 * (ValidateGraph).  Sets the grain.  Returns whether the app is stored
 * already, and then its stored periods in *stored.
 */
static bool
ValidateDefinition(AppDefinition *ad, AppPeriods *stored)
{
	AppDef	   *nd = &ad->def;
	AppGraph	g;
	AppDef	   *d;
	bool		exists;
	int			i;

	if (nd->starts == G_NONE && nd->ndeps == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("app \"%s\" has neither starts nor depends", nd->name),
				 errdetail("An app runs for the periods of starts, or when the runs it depends on are done; with neither it would never run.")));
	nd->grain = DerivedGrain(nd);

	{
		TimestampTz p = AppPeriodTrunc(nd, nd->grain, ad->has_catchup ? ad->catchup : GetCurrentTransactionStartTimestamp());
		TimestampTz e = AppPeriodNext(nd, nd->grain, p);

		(void) RunPayload(nd, p, e, NULL, NULL, 0);
	}

	/* the graph with the new definition in place */
	LoadApps(&g, 1);
	d = FindApp(&g, nd->name);
	exists = (d != NULL);
	memset(stored, 0, sizeof(*stored));
	if (exists)
	{
		stored->first_null = d->first_null;
		stored->first_period = d->first_period;
		stored->next_null = d->next_null;
		stored->next_period = d->next_period;
		*d = *nd;
	}
	else
	{
		g.apps[g.n++] = *nd;
		qsort(g.apps, g.n, sizeof(AppDef), AppCmp);
	}
	for (i = 0; i < g.n; i++)
		g.apps[i].grain = DerivedGrain(&g.apps[i]);
	ValidateGraph(&g);
	return exists;
}

/*
 * The grain and zone name coord.app_defs holds for a stored app (locking
 * its row), and whether it has runs.
 */
static Grain
StoredGrain(const char *name, char **tz, bool *has_runs)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;

	args[0] = CStringGetTextDatum(name);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_get_def,
											 "SELECT grain, tz, EXISTS (SELECT 1 FROM coord.app_runs AS r "
											 "WHERE r.app OPERATOR(pg_catalog.=) a.name) "
											 "FROM coord.app_defs AS a WHERE a.name OPERATOR(pg_catalog.=) $1 FOR UPDATE OF a",
											 1, argtypes), args, NULL, false, 1),
				  SPI_OK_SELECT, "define_app");
	*tz = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	*has_runs = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	return GrainFromName(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}

/*
 * Whether the new definition's zone gives other periods than the stored
 * one (a stored name no longer known counts as other); 55000 when it does
 * and the app has runs: they are keyed by the old zone's periods, and
 * periods of the new zone would overlap them.  The way to ask for it
 * anyway is to drop the app (its runs go) and define it again: no
 * argument makes define_app forget runs.
 */
static bool
ZoneChanged(const AppDef *nd, const char *stored_tz, bool has_runs)
{
	pg_tz	   *old_zone;
	char	   *old_name;

	if (strcmp(stored_tz, nd->tz) == 0)
		return false;
	/* UTC and a zone that is UTC always (Etc/UTC) have the same periods */
	if (CoordZoneLookup(stored_tz, &old_zone, &old_name) && old_zone == NULL && nd->zone == NULL)
		return false;
	if (has_runs)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot change the time zone of app \"%s\" from %s to %s because it has runs",
						nd->name, stored_tz, nd->tz),
				 errdetail("Its runs are for periods of %s; periods of %s have other boundaries.",
						   stored_tz, nd->tz),
				 errhint("To start over in %s, drop the app with coord.drop_app (its runs go with it) and define it again; "
						 "catchup_from recreates earlier periods.", nd->tz)));
	return true;
}

/* Inserts the definition, or updates the stored one when it differs. */
static void
WriteDefinition(const AppDefinition *ad, bool exists)
{
	const AppDef *nd = &ad->def;
	Oid			argtypes[13] = {TEXTOID, TEXTOID, JSONBOID, INTERVALOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, JSONBOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID,
	TEXTOID, INTERVALOID};
	Datum		args[13];
	char		nulls[13] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	args[0] = CStringGetTextDatum(nd->name);
	args[1] = nd->starts ? CStringGetTextDatum(grain_names[nd->starts]) : (Datum) 0;
	nulls[1] = nd->starts ? ' ' : 'n';
	args[2] = JsonbPGetDatum(ad->depends);
	args[3] = ad->timeout ? IntervalPGetDatum(ad->timeout) : (Datum) 0;
	nulls[3] = ad->timeout ? ' ' : 'n';
	args[4] = nd->host ? CStringGetTextDatum(nd->host) : (Datum) 0;
	nulls[4] = nd->host ? ' ' : 'n';
	args[5] = CStringGetTextDatum(nd->queue);
	args[6] = TimestampTzGetDatum(ad->catchup);
	nulls[6] = ad->has_catchup ? ' ' : 'n';
	args[7] = nd->conf;
	args[8] = TimestampTzGetDatum(nd->first_period);
	nulls[8] = nd->first_null ? 'n' : ' ';
	args[9] = TimestampTzGetDatum(nd->next_period);
	nulls[9] = nd->next_null ? 'n' : ' ';
	args[10] = CStringGetTextDatum(grain_names[nd->grain]);
	args[11] = CStringGetTextDatum(nd->tz);
	args[12] = ad->deadline ? IntervalPGetDatum(ad->deadline) : (Datum) 0;
	nulls[12] = ad->deadline ? ' ' : 'n';

	/*
	 * An update writes only a definition that differs; the comparison is
	 * jsonb's <>, as IS DISTINCT FROM would look "=" up on the caller's
	 * search_path.
	 */
	if (!exists)
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_insert_def,
												 "INSERT INTO coord.app_defs (name, starts, depends, timeout, host, queue, "
												 "catchup_from, conf, first_period, next_period, grain, tz, deadline) "
												 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
												 13, argtypes), args, nulls, false, 0),
					  SPI_OK_INSERT, "define_app");
	else
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_update_def,
												 "UPDATE coord.app_defs AS a SET starts = $2, depends = $3, timeout = $4, host = $5, "
												 "queue = $6, catchup_from = COALESCE($7, a.catchup_from), conf = $8, "
												 "grain = $11, tz = $12, deadline = $13, "
												 "first_period = $9, next_period = $10, updated_at = pg_catalog.now() "
												 "WHERE a.name OPERATOR(pg_catalog.=) $1 AND "
												 "pg_catalog.jsonb_build_array(a.starts, a.depends, a.timeout, a.host, a.queue, "
												 "a.catchup_from, a.conf, a.first_period, a.next_period, a.tz, a.deadline) OPERATOR(pg_catalog.<>) "
												 "pg_catalog.jsonb_build_array($2, $3, $4, $5, $6, COALESCE($7, a.catchup_from), "
												 "$8, $9, $10, $12, $13)",
												 13, argtypes), args, nulls, false, 0),
					  SPI_OK_UPDATE, "define_app");
}

/*
 * coord.define_app(name, starts, depends, timeout, host, queue, catchup_from,
 * conf, tz, deadline): creates or replaces an app.  The same definition again changes
 * nothing; a changed one applies to runs created from then on.  Parse,
 * validate (alone and in the graph), decide where runs start
 * (coord_app_periods, pure), write; under the definitions lock from the
 * parse of depends on, so the graph validated is the one written.
 */
Datum
coord_define_app(PG_FUNCTION_ARGS)
{
	AppDefinition ad;
	AppPeriodsInput pin;
	AppPeriods	periods;
	CoordUserSwitch sw;
	bool		exists;

	ParseDefinition(fcinfo, &ad);

	CoordSpiBegin(&sw);
	LockDefinitions();
	ParseDepends(&ad);
	exists = ValidateDefinition(&ad, &pin.stored);

	/* where runs start: catchup_from, else the first tick's period */
	pin.exists = exists;
	pin.stored_grain = G_NONE;
	pin.zone_changed = false;
	if (exists)
	{
		char	   *stored_tz;
		bool		has_runs;

		pin.stored_grain = StoredGrain(ad.def.name, &stored_tz, &has_runs);
		pin.zone_changed = ZoneChanged(&ad.def, stored_tz, has_runs);
	}
	pin.grain = ad.def.grain;
	pin.has_catchup = ad.has_catchup;
	pin.catchup_start = ad.has_catchup ? AppPeriodTrunc(&ad.def, ad.def.grain, ad.catchup) : 0;
	periods = coord_app_periods(&pin);
	ad.def.first_null = periods.first_null;
	ad.def.first_period = periods.first_period;
	ad.def.next_null = periods.next_null;
	ad.def.next_period = periods.next_period;

	WriteDefinition(&ad, exists);
	AppGraphChanged();
	CoordSpiEnd(&sw);
	PG_RETURN_VOID();
}

/* coord.drop_app(name): the app, its runs, and their unclaimed jobs */
Datum
coord_drop_app(PG_FUNCTION_ARGS)
{
	char	   *name = CoordNameArg(fcinfo, 0, "app", false);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		found;

	CoordNotInParallel(fcinfo);
	args[0] = CStringGetTextDatum(name);
	CoordSpiBegin(&sw);
	LockDefinitions();
	AppGraphChanged();			/* by what follows, or the call fails */
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_dependents,
											 "SELECT pg_catalog.string_agg(pg_catalog.format('%I', name), ', ' ORDER BY name COLLATE pg_catalog.\"C\"), "
											 "pg_catalog.count(*) FROM coord.app_defs WHERE depends OPERATOR(pg_catalog.?) $1",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "drop_app");
	{
		bool		isnull;
		int64		n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));

		if (n > 0)
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop app \"%s\" because other apps depend on it", name),
					 errdetail("%s %s %s on app \"%s\".", n == 1 ? "App" : "Apps",
							   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
							   n == 1 ? "depends" : "depend", name),
					 errhint("Drop those apps first, or redefine them without this dependency.")));
	}
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_drop_def,
											 "DELETE FROM coord.app_defs WHERE name OPERATOR(pg_catalog.=) $1",
											 1, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "drop_app");
	found = (SPI_processed == 1);
	if (found)
	{
		/* a claimed run finishes; the finish hook then finds no run to record */
		(void) CoordDeleteUnclaimed(&plan_drop_jobs,
									"SELECT r.job_id FROM coord.app_runs AS r "
									"WHERE r.app OPERATOR(pg_catalog.=) $1 AND r.state OPERATOR(pg_catalog.=) 'live'",
									1, argtypes, args);
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_drop_runs,
												 "DELETE FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1",
												 1, argtypes), args, NULL, false, 0),
					  SPI_OK_DELETE, "drop_app");
		AppAlertsDropApp(name);
	}
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(found);
}

/* ---------- for apps_rerun.c (coord.rerun and the tick's reset periods) ---------- */

/*
 * TryPeriod for a period coord.rerun reset: with upstream checks when the
 * app has dependencies, under the period's lock (kept when it created the
 * run).
 */
AppRerunOutcome
AppRerunTryPeriod(AppGraph *g, const AppDef *d, TimestampTz start)
{
	switch (TryPeriod(g, d, start, d->ndeps > 0 ? PERIOD_CHECK_UPSTREAMS : 0))
	{
		case RUN_CREATED:
			return RERUN_CREATED;
		case RUN_EXISTS:
			return RERUN_EXISTS;
		case RUN_NOT_DUE:
		case RUN_WAITING:
			return RERUN_WAITING;
		case RUN_UPSTREAM_FAILED:
		case RUN_UPSTREAM_MISSING:
			break;
	}
	return RERUN_NEVER;
}

/* The check-and-create lock of (app, start), to the end of the transaction. */
void
AppRerunLockPeriod(const char *app, TimestampTz start)
{
	LOCKTAG		tag;

	PeriodTag(&tag, app, start);
	(void) CoordLockTake(&tag, ExclusiveLock, false, false);
}

void
AppRerunLockDefinitions(void)
{
	LockDefinitions();
}

bool
AppRerunIsolated(const char *app, const char *what, CoordIsolatedFn fn, void *arg)
{
	return AppIsolated(app, what, fn, arg);
}

void
CoordAppsInit(void)
{
	CoordRegisterJobOrigin(COORD_ORIGIN_APP, CoordAppRunFinished);
	RegisterXactCallback(GraphXactCallback, NULL);
	RegisterSubXactCallback(GraphSubXactCallback, NULL);
	CacheRegisterRelcacheCallback(GraphRelcacheInval, (Datum) 0);
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
 * CoordSignalsTick: the tick's share (README.md, Retention; section
 * "signals" above).  Up to a batch of signals signalled before at less
 * coord.job_history_retention (0 keeps them) whose name no app depends on;
 * read again under the definitions lock, taken only when there are some.
 */
int64
CoordSignalsTick(TimestampTz at)
{
	static SPIPlanPtr plan_any = NULL;
	static SPIPlanPtr plan_purge = NULL;
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Datum		args[2];

	args[0] = TimestampTzGetDatum(at);
	args[1] = Int32GetDatum(COORD_PURGE_BATCH);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_any,
											 "SELECT 1 FROM coord.app_signals AS x WHERE " SIGNAL_GONE " LIMIT 1",
											 1, argtypes), args, NULL, false, 1),
				  SPI_OK_SELECT, "reading old signals");
	if (SPI_processed == 0)
		return 0;
	LockDefinitions();
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_purge,
											 "DELETE FROM coord.app_signals AS s "
											 "WHERE (s.name, s.period_start) IN ("
											 "SELECT x.name, x.period_start FROM coord.app_signals AS x "
											 "WHERE " SIGNAL_GONE " LIMIT $2 FOR UPDATE SKIP LOCKED)",
											 2, argtypes), args, NULL, false, 0),
				  SPI_OK_DELETE, "purging signals");
	return (int64) SPI_processed;
}
