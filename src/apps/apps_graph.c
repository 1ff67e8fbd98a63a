/*-------------------------------------------------------------------------
 * apps_graph.c
 *		The graph of apps and periods in an app's zone, for the apps family
 *		(src/apps/README.md).
 *
 * Owns the period arithmetic in an app's zone over apps_periods.c (plain
 * C, UTC times) and the labels, origins and keys of runs; and the graph:
 * AppsLoad reads coord.app_defs and the dependencies (inside SPI, as the
 * owner), AppsFind looks an app up by name, and AppsCachedGraph keeps one graph
 * per transaction for the finish hook and coord.signal, dropped by the
 * relcache callback on coord.app_defs (AppsGraphChanged sends it) and at
 * the end of the transaction (see "the graph of apps" below for what a
 * kept graph may miss).  AppsHorizonAllows reads the latest tick's now once
 * per graph.
 *
 * The lowest file of the family above the plain C: it calls no other file
 * of the family but apps_periods.c, and takes no lock.
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

/* apps_periods.c is plain C: its times are TimestampTz */
StaticAssertDecl(sizeof(TimestampTz) == sizeof(int64_t), "TimestampTz is an int64_t");
const char *const apps_grain_names[] = {"", "hourly", "daily", "weekly", "monthly", "yearly"};

static SPIPlanPtr plan_defs = NULL;
static SPIPlanPtr plan_deps = NULL;
static SPIPlanPtr plan_horizon = NULL;

/* ---------- periods (in an app's zone; apps_periods.c) ---------- */

Grain
AppsGrainFromName(const char *s)
{
	int			g;

	for (g = G_HOURLY; g <= G_YEARLY; g++)
		if (strcmp(s, apps_grain_names[g]) == 0)
			return (Grain) g;
	return G_NONE;
}

void
AppsTmFromTs(TimestampTz t, struct pg_tm *tm)
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
AppsPeriodTrunc(Grain g, TimestampTz t)
{
	return ZonedTrunc(NULL, g, t);
}

/* The start of the period after the one starting at start (UTC). */
TimestampTz
AppsPeriodNext(Grain g, TimestampTz start)
{
	return ZonedNext(NULL, g, start);
}

/* The same in d's zone: its local calendar periods. */
TimestampTz
AppsPeriodTruncIn(const AppDef *d, Grain g, TimestampTz t)
{
	return ZonedTrunc(AppZoneOf(d), g, t);
}

TimestampTz
AppsPeriodNextIn(const AppDef *d, Grain g, TimestampTz start)
{
	return ZonedNext(AppZoneOf(d), g, start);
}

/* The first period start of grain g at or after t, in d's zone. */
TimestampTz
AppsPeriodCeilIn(const AppDef *d, Grain g, TimestampTz t)
{
	TimestampTz s = AppsPeriodTruncIn(d, g, t);

	return s == t ? s : AppsPeriodNextIn(d, g, s);
}

/* "YYYY-MM-DD-HH24MI" of a period start (UTC): period locks */
char *
AppsPeriodLabel(TimestampTz t)
{
	struct pg_tm tm;

	AppsTmFromTs(t, &tm);
	return psprintf("%04d-%02d-%02d-%02d%02d", tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min);
}

/*
 * The label of d's period starting at start in keys and origins: UTC apps
 * as AppsPeriodLabel, others their local time and UTC offset
 * ("2026-11-01-0100-0500"), which tells the two 01:00 hours of a fall-back
 * night apart.
 */
char *
AppsPeriodLabelIn(const AppDef *d, TimestampTz start)
{
	const pg_tz *zone = AppZoneOf(d);
	AppZone		z = {CoordZoneNextChangeTs, unconstify(pg_tz *, zone)};
	char	   *buf;

	if (zone == NULL)
		return AppsPeriodLabel(start);
	buf = palloc(COORD_PERIOD_LABEL_LEN);
	coord_period_label(start, &z, buf);
	return buf;
}

char *
AppsRunOrigin(const AppDef *d, TimestampTz start)
{
	return psprintf(COORD_ORIGIN_APP "%s:%s", d->name, AppsPeriodLabelIn(d, start));
}

char *
AppsRunKey(const AppDef *d, TimestampTz start)
{
	return psprintf("%s-%s", AppsPeriodLabelIn(d, start), d->name);
}

/* ---------- the graph of apps ---------- */

int
AppsCmp(const void *a, const void *b)
{
	return strcmp(((const AppDef *) a)->name, ((const AppDef *) b)->name);
}

AppDef *
AppsFind(AppGraph *g, const char *name)
{
	AppDef		key;

	key.name = (char *) name;
	return bsearch(&key, g->apps, g->n, sizeof(AppDef), AppsCmp);
}

Grain
AppsDerivedGrain(const AppDef *d)
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
AppsLoad(AppGraph *g, int extra)
{
	LoadAppsIn(g, extra, CurrentMemoryContext);
}

/*
 * LoadAppsIn: AppsLoad with the graph allocated in cxt (every SPI call
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
	CoordExec(&plan_defs,
			  "SELECT name, starts, queue, host, conf, timeout IS NOT NULL, "
			  "first_period, next_period, last_error IS NOT NULL, tz "
			  "FROM coord.app_defs ORDER BY name COLLATE pg_catalog.\"C\"",
			  0, NULL, NULL, NULL, SPI_OK_SELECT, "reading apps");
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
		d->starts = starts ? AppsGrainFromName(starts) : G_NONE;
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
	CoordExec(&plan_deps,
			  "SELECT a.name, e.key, e.value FROM coord.app_defs AS a, "
			  "pg_catalog.jsonb_each_text(a.depends) AS e "
			  "ORDER BY a.name COLLATE pg_catalog.\"C\", e.key COLLATE pg_catalog.\"C\"",
			  0, NULL, NULL, NULL, SPI_OK_SELECT, "reading app dependencies");
	MemoryContextSwitchTo(cxt);
	tt = SPI_tuptable;
	/* each app's dependencies: count, allocate, fill */
	for (i = 0; i < SPI_processed; i++)
	{
		AppDef	   *d = AppsFind(g, SPI_getvalue(tt->vals[i], tt->tupdesc, 1));

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
		AppDef	   *d = AppsFind(g, name);

		if (d == NULL)
			continue;
		d->deps[d->ndeps].app = SPI_getvalue(tt->vals[i], tt->tupdesc, 2);
		d->deps[d->ndeps].grain = AppsGrainFromName(SPI_getvalue(tt->vals[i], tt->tupdesc, 3));
		d->ndeps++;
	}
	for (i = 0; i < n; i++)
		g->apps[i].grain = AppsDerivedGrain(&g->apps[i]);
}

/*
 * The graph the finish hook works on, read once per transaction: a batch
 * complete of 100 app jobs reads it once, not 100 times.  It lives in a
 * context of its own ("pg_coord app graph"), reset wholesale at the end of
 * every transaction (and prepare); within one it is forgotten, and read
 * again at the next finish, when the graph changes.
 *
 * Every write to coord.app_defs through pg_coord (define_app, drop_app, and
 * the tick's first and next periods and last_error) calls AppsGraphChanged
 * in its transaction: it forgets this backend's graph at once and queues a
 * relcache invalidation of coord.app_defs (as pg_cron does for its job
 * cache), which every backend receives when that transaction commits, and
 * none when it aborts.  GraphRelcacheInval (registered by CoordAppsInit)
 * marks the graph stale on it, or on an invalidation of every relation;
 * AppsCachedGraph accepts the queued invalidations before it trusts the graph.
 * So a finish uses the definitions committed before it began, as the read
 * per finish did in READ COMMITTED; in REPEATABLE READ and SERIALIZABLE a
 * reload reads with the transaction's snapshot, as that read did.  A
 * subtransaction abort forgets the graph too (what it read may include
 * definitions the abort undid).  graph_users counts the finish hooks
 * working on the graph, so that nothing frees one in use: an invalidation
 * inside the hook's loop (a subtransaction abort in AppsIsolated, a message
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
bool		apps_graph_valid = false;	/* apps_tick.c clears it after its
										 * writes */
int			apps_graph_users = 0;	/* callers using the cached graph (apps.c) */
static bool graph_read = false; /* this transaction called AppsCachedGraph */

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
void
AppsGraphChanged(void)
{
	apps_graph_valid = false;
	CacheInvalidateRelcacheByRelid(AppDefsRelid());
}

/* A relcache invalidation: of coord.app_defs, or of every relation. */
static void
GraphRelcacheInval(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == app_defs_relid)
	{
		apps_graph_valid = false;
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
			apps_graph_valid = false;
			apps_graph_users = 0;
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
		apps_graph_valid = false;
}

/*
 * The graph for a finish hook (inside SPI), read when this transaction has
 * none yet or changed it.  The caller holds it (graph_users) while it
 * works on it.  (Not inlined into the hook's PG_TRY frame.)
 */
pg_noinline AppGraph *
AppsCachedGraph(void)
{
	MemoryContext old = CurrentMemoryContext;
	AppGraph   *g;
	int			i;
	uint64		seen;

	graph_read = true;
	/* what other backends committed before this finish */
	AcceptInvalidationMessages();
	if (apps_graph_valid)
		return &graph_cache;
	if (apps_graph_users > 0)
	{
		/* an outer hook still works on the cached one: a graph of our own */
		g = palloc(sizeof(AppGraph));
		AppsLoad(g, 0);
		return g;
	}
	MemoryContextReset(CoordCacheContext(&graph_cxt, "pg_coord app graph"));
	(void) AppDefsRelid();		/* for GraphRelcacheInval */
	seen = graph_invals;
	LoadAppsIn(&graph_cache, 0, graph_cxt);
	MemoryContextSwitchTo(old);
	apps_graph_valid = (graph_invals == seen);
	for (i = 0; i < graph_cache.n; i++)
		if (VARATT_IS_EXTERNAL(DatumGetPointer(graph_cache.apps[i].conf)))
			apps_graph_valid = false;
	ereport(DEBUG1,
			(errmsg_internal("pg_coord: read the app graph (%d apps)%s",
							 graph_cache.n, apps_graph_valid ? "" : ", not kept")));
	return &graph_cache;
}

/* The latest tick's now, read once per graph; a run of an app with starts waits for it. */
bool
AppsHorizonAllows(AppGraph *g, const AppDef *d, TimestampTz start)
{
	if (d->starts == G_NONE)
		return true;
	if (!g->horizon_loaded)
	{
		bool		isnull = true;

		CoordExecLimit(&plan_horizon,
					   "SELECT last_tick_at FROM coord.tick_state",
					   0, NULL, NULL, NULL, 1, SPI_OK_SELECT, "reading the tick state");
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

/* The graph cache's callbacks (CoordAppsInit). */
void
AppsGraphInit(void)
{
	RegisterXactCallback(GraphXactCallback, NULL);
	RegisterSubXactCallback(GraphSubXactCallback, NULL);
	CacheRegisterRelcacheCallback(GraphRelcacheInval, (Datum) 0);
}
