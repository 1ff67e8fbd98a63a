/*-------------------------------------------------------------------------
 * apps_define.c
 *		coord.define_app and coord.drop_app (docs/apps.md).
 *
 * Owns the writes to coord.app_defs: parsing and validating a definition
 * (ParseDefinition, ParseDepends, ValidateDefinition, CheckDeadline), the
 * checks over the whole graph with the new definition in it (CheckCycles,
 * an iterative search, and ValidateGraph), what a stored app may not change
 * (StoredGrain, ZoneChanged), and dropping an app with its unclaimed jobs,
 * its runs and its alerts.
 *
 * Both entry points take the definitions lock (AppsLockDefinitions, apps.c)
 * first, as every writer of the graph does, then read the graph fresh
 * (AppsLoad) under it; the cached graph of the transaction is dropped by
 * the relcache callback of apps_graph.c.
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

static SPIPlanPtr plan_get_def = NULL;
static SPIPlanPtr plan_insert_def = NULL;
static SPIPlanPtr plan_update_def = NULL;
static SPIPlanPtr plan_dependents = NULL;
static SPIPlanPtr plan_drop_jobs = NULL;
static SPIPlanPtr plan_drop_runs = NULL;
static SPIPlanPtr plan_drop_def = NULL;
static SPIPlanPtr plan_dep_items = NULL;

PG_FUNCTION_INFO_V1(coord_define_app);
PG_FUNCTION_INFO_V1(coord_drop_app);


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
			u = AppsFind(g, d->deps[next[v]++].app);
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
			if (AppsIsSignalDep(d->deps[j].app))
				continue;		/* checked by ParseDepends */
			u = AppsFind(g, d->deps[j].app);
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
								d->name, u->name, apps_grain_names[d->deps[j].grain]),
						 errdetail("App \"%s\" runs %s, so a dependency on it is %s or coarser.",
								   u->name, apps_grain_names[u->grain], apps_grain_names[u->grain])));
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
 * work (docs/apps.md).
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
		starts = AppsGrainFromName(starts_s);
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
	/* small enough that every run's payload fits (AppsRunPayload) */
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
	CoordExec(&plan_dep_items,
			  "SELECT pg_catalog.jsonb_typeof($1), e.key, pg_catalog.jsonb_typeof(e.value), e.value OPERATOR(pg_catalog.#>>) '{}'::pg_catalog.text[] "
			  "FROM (SELECT 1) AS one LEFT JOIN LATERAL pg_catalog.jsonb_each("
			  "CASE WHEN pg_catalog.jsonb_typeof($1) OPERATOR(pg_catalog.=) 'object' THEN $1 "
			  "ELSE '{}'::pg_catalog.jsonb END) AS e ON true "
			  "ORDER BY e.key COLLATE pg_catalog.\"C\"",
			  1, argtypes, args, NULL, SPI_OK_SELECT, "define_app");
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
		dg = (vtype && strcmp(vtype, "string") == 0) ? AppsGrainFromName(val) : G_NONE;
		if (dg == G_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid period for the dependency of app \"%s\" on app \"%s\"", name, dep),
					 errdetail("The period is %s; it must be one of \"hourly\", \"daily\", \"weekly\", \"monthly\", \"yearly\".",
							   val ? val : "null")));
		if (dep[0] == '@')
			AppsCheckSignalName(dep + 1, name);
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
	nd->grain = AppsDerivedGrain(nd);

	{
		TimestampTz p = AppsPeriodTruncIn(nd, nd->grain, ad->has_catchup ? ad->catchup : GetCurrentTransactionStartTimestamp());
		TimestampTz e = AppsPeriodNextIn(nd, nd->grain, p);

		(void) AppsRunPayload(nd, p, e, NULL, NULL, 0);
	}

	/* the graph with the new definition in place */
	AppsLoad(&g, 1);
	d = AppsFind(&g, nd->name);
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
		qsort(g.apps, g.n, sizeof(AppDef), AppsCmp);
	}
	for (i = 0; i < g.n; i++)
		g.apps[i].grain = AppsDerivedGrain(&g.apps[i]);
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
	CoordExecLimit(&plan_get_def,
				   "SELECT grain, tz, EXISTS (SELECT 1 FROM coord.app_runs AS r "
				   "WHERE r.app OPERATOR(pg_catalog.=) a.name) "
				   "FROM coord.app_defs AS a WHERE a.name OPERATOR(pg_catalog.=) $1 FOR UPDATE OF a",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "define_app");
	*tz = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	*has_runs = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	return AppsGrainFromName(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
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
	args[1] = nd->starts ? CStringGetTextDatum(apps_grain_names[nd->starts]) : (Datum) 0;
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
	args[10] = CStringGetTextDatum(apps_grain_names[nd->grain]);
	args[11] = CStringGetTextDatum(nd->tz);
	args[12] = ad->deadline ? IntervalPGetDatum(ad->deadline) : (Datum) 0;
	nulls[12] = ad->deadline ? ' ' : 'n';

	/*
	 * An update writes only a definition that differs; the comparison is
	 * jsonb's <>, as IS DISTINCT FROM would look "=" up on the caller's
	 * search_path.
	 */
	if (!exists)
		CoordExec(&plan_insert_def,
				  "INSERT INTO coord.app_defs (name, starts, depends, timeout, host, queue, "
				  "catchup_from, conf, first_period, next_period, grain, tz, deadline) "
				  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
				  13, argtypes, args, nulls, SPI_OK_INSERT, "define_app");
	else
		CoordExec(&plan_update_def,
				  "UPDATE coord.app_defs AS a SET starts = $2, depends = $3, timeout = $4, host = $5, "
				  "queue = $6, catchup_from = COALESCE($7, a.catchup_from), conf = $8, "
				  "grain = $11, tz = $12, deadline = $13, "
				  "first_period = $9, next_period = $10, updated_at = pg_catalog.now() "
				  "WHERE a.name OPERATOR(pg_catalog.=) $1 AND "
				  "pg_catalog.jsonb_build_array(a.starts, a.depends, a.timeout, a.host, a.queue, "
				  "a.catchup_from, a.conf, a.first_period, a.next_period, a.tz, a.deadline) OPERATOR(pg_catalog.<>) "
				  "pg_catalog.jsonb_build_array($2, $3, $4, $5, $6, COALESCE($7, a.catchup_from), "
				  "$8, $9, $10, $12, $13)",
				  13, argtypes, args, nulls, SPI_OK_UPDATE, "define_app");
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
	AppsLockDefinitions();
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
	pin.catchup_start = ad.has_catchup ? AppsPeriodTruncIn(&ad.def, ad.def.grain, ad.catchup) : 0;
	periods = coord_app_periods(&pin);
	ad.def.first_null = periods.first_null;
	ad.def.first_period = periods.first_period;
	ad.def.next_null = periods.next_null;
	ad.def.next_period = periods.next_period;

	WriteDefinition(&ad, exists);
	AppsGraphChanged();
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
	AppsLockDefinitions();
	AppsGraphChanged();			/* by what follows, or the call fails */
	CoordExec(&plan_dependents,
			  "SELECT pg_catalog.string_agg(pg_catalog.format('%I', name), ', ' ORDER BY name COLLATE pg_catalog.\"C\"), "
			  "pg_catalog.count(*) FROM coord.app_defs WHERE depends OPERATOR(pg_catalog.?) $1",
			  1, argtypes, args, NULL, SPI_OK_SELECT, "drop_app");
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
	CoordExec(&plan_drop_def,
			  "DELETE FROM coord.app_defs WHERE name OPERATOR(pg_catalog.=) $1",
			  1, argtypes, args, NULL, SPI_OK_DELETE, "drop_app");
	found = (SPI_processed == 1);
	if (found)
	{
		/* a claimed run finishes; the finish hook then finds no run to record */
		(void) CoordDeleteUnclaimed(&plan_drop_jobs,
									"SELECT r.job_id FROM coord.app_runs AS r "
									"WHERE r.app OPERATOR(pg_catalog.=) $1 AND r.state OPERATOR(pg_catalog.=) 'live'",
									1, argtypes, args);
		CoordExec(&plan_drop_runs,
				  "DELETE FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1",
				  1, argtypes, args, NULL, SPI_OK_DELETE, "drop_app");
		AppsAlertsDropApp(name);
	}
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(found);
}
