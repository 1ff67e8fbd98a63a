/*-------------------------------------------------------------------------
 * apps.c
 *		Apps: period-keyed dependency scheduling (docs/apps.md) and
 *		coord.runs; apps_int.h is what the family shares.
 *
 * The runs engine.  By section: checking and creating runs under the
 * period's lock; isolation of one app's work; the finish hook the queue
 * calls for "a:" jobs; signals (coord.signal); the definitions lock; the
 * calls apps_rerun.c makes into the runs engine; and the family's init.
 * The graph and periods in an app's zone are apps_graph.c; coord.define_app
 * and coord.drop_app apps_define.c, coord.tick's share apps_tick.c,
 * coord.rerun apps_rerun.c, coord.grid apps_grid.c, alerts apps_alerts.c.
 *
 * The family's protocol -- periods in a time zone, who creates runs,
 * upstream windows, the lock order, timeouts, reruns, alerts, isolation,
 * memory -- is src/apps/README.md.
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

static SPIPlanPtr plan_finish = NULL;
static SPIPlanPtr plan_run_exists = NULL;
static SPIPlanPtr plan_live_count = NULL;
static SPIPlanPtr plan_upstream = NULL;
static SPIPlanPtr plan_upstream_results = NULL;
static SPIPlanPtr plan_upstream_array = NULL;
static SPIPlanPtr plan_payload = NULL;
static SPIPlanPtr plan_insert_run = NULL;
static SPIPlanPtr plan_set_error = NULL;
static SPIPlanPtr plan_signal_insert = NULL;
static SPIPlanPtr plan_signal_count = NULL;
static SPIPlanPtr plan_signal_payloads = NULL;

PG_FUNCTION_INFO_V1(coord_signal);

/* ---------- checking and creating runs ---------- */

static void
PeriodTag(LOCKTAG *tag, const char *app, TimestampTz start)
{
	char	   *k = psprintf("%s\n%s", app, AppsPeriodLabel(start));

	CoordSetTag(tag, CoordNameKey(k, strlen(k)), COORD_NS_APP);
}

static bool
RunExists(const char *app, TimestampTz start)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		args[2];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(start);
	CoordExecLimit(&plan_run_exists,
				   "SELECT 1 FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
				   "AND period_start OPERATOR(pg_catalog.=) $2",
				   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "reading a run");
	return SPI_processed == 1;
}

/*
 * How many more unfinished runs app may have (APP_MAX_LIVE_RUNS less its
 * live ones; 0 or less: none): the tick's catch-up and the reruns both
 * stop there.
 */
int64
AppsLiveBudget(const char *app, const char *what)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;

	args[0] = CStringGetTextDatum(app);
	CoordExec(&plan_live_count,
			  "SELECT pg_catalog.count(*) FROM coord.app_runs "
			  "WHERE app OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'live'",
			  1, argtypes, args, NULL, SPI_OK_SELECT, what);
	return APP_MAX_LIVE_RUNS -
		DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Column 1 of the n rows in SPI_tuptable (jsonb, in order) as one JSON
 * array, within *budget: each costs 8 bytes and its uncompressed size (no
 * detoasting to count it); over the budget, 0 and *budget negative.
 */
static Datum
JsonArrayWithin(uint64 n, int64 *budget, const char *what)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *enulls = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {(int) n};
	int			lbs[1] = {1};
	Oid			argtypes[1] = {JSONBARRAYOID};
	Datum		args[1];
	bool		isnull;

	for (uint64 r = 0; r < n; r++)
	{
		CHECK_FOR_INTERRUPTS();
		elems[r] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &enulls[r]);
		*budget -= enulls[r] ? 8 : (int64) toast_raw_datum_size(elems[r]) + 8;
		if (*budget < 0)
			return (Datum) 0;
		if (!enulls[r])
			elems[r] = PointerGetDatum(PG_DETOAST_DATUM(elems[r]));
	}
	args[0] = PointerGetDatum(construct_md_array(elems, enulls, 1, dims, lbs, JSONBOID, -1, false,
												 TYPALIGN_INT));
	CoordExecLimit(&plan_upstream_array,
				   "SELECT pg_catalog.to_jsonb($1)",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, what);
	return SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull),
							 false, -1);
}

/*
 * UpstreamResults: the results of app's done runs starting at starts (a
 * timestamptz[]), as a JSON array in period order; inside SPI.  Results can
 * each be up to COORD_RESULT_MAX_BYTES and a window can hold thousands of
 * periods, so they are added up (by their uncompressed sizes, without
 * detoasting) against what is left of the payload's budget first: over it,
 * the result is 0 and *budget negative, and AppsRunPayload leaves the upstream
 * results out.  Without that, jsonb_agg over them could exceed jsonb's
 * limits and fail every completion of the upstream runs.
 */
static Datum
UpstreamResults(const char *app, Datum starts, int64 *budget)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZARRAYOID};
	Datum		args[2];
	uint64		n;

	if (*budget < 0)
		return (Datum) 0;
	args[0] = CStringGetTextDatum(app);
	args[1] = starts;
	n = CoordExec(&plan_upstream_results,
				  "SELECT result FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
				  "AND period_start OPERATOR(pg_catalog.=) ANY ($2) "
				  "AND state OPERATOR(pg_catalog.=) 'done' ORDER BY period_start",
				  2, argtypes, args, NULL, SPI_OK_SELECT, "reading upstream results");
	return JsonArrayWithin(n, budget, "reading upstream results");
}

/*
 * The window of d's period [start, end) for a dependency of grain g: the
 * g-period of d's zone around start when g is coarser than d's grain, else
 * the period itself (docs/apps.md).
 */
static void
DepWindow(const AppDef *d, Grain g, TimestampTz start, TimestampTz end,
		  TimestampTz *wstart, TimestampTz *wend)
{
	if (g > d->grain)
	{
		*wstart = AppsPeriodTruncIn(d, g, start);
		*wend = AppsPeriodNextIn(d, g, *wstart);
	}
	else
	{
		*wstart = start;
		*wend = end;
	}
}

/*
 * The starts of the g-periods in z's zone from the first at or after from
 * to the last before to, *n of them; with ends, each one's end in *ends.
 */
static Datum *
PeriodStarts(const AppDef *z, Grain g, TimestampTz from, TimestampTz to, Datum **ends, int *n)
{
	int			cap = 64;
	Datum	   *starts = palloc(sizeof(Datum) * cap);
	TimestampTz s,
				next;

	if (ends)
		*ends = palloc(sizeof(Datum) * cap);
	*n = 0;
	for (s = AppsPeriodCeilIn(z, g, from); s < to; s = next)
	{
		CHECK_FOR_INTERRUPTS();
		if (*n == cap)
		{
			cap *= 2;
			starts = repalloc(starts, sizeof(Datum) * cap);
			if (ends)
				*ends = repalloc(*ends, sizeof(Datum) * cap);
		}
		next = AppsPeriodNextIn(z, g, s);
		starts[*n] = TimestampTzGetDatum(s);
		if (ends)
			(*ends)[*n] = TimestampTzGetDatum(next);
		(*n)++;
	}
	return starts;
}

static UpstreamState CheckSignals(const AppDef *d, const AppDep *dep, TimestampTz start, TimestampTz end,
								  Datum *name, Datum *result, int64 *budget);

/*
 * Whether every upstream run of period [start, end) of d is done; when
 * UPSTREAM_DONE, names[]/results[] get each upstream's results in period
 * order (results[i] 0: left out, they would not fit in the payload).  The
 * first dependency that fails or is missing decides.
 */
UpstreamState
AppsCheckUpstreams(AppGraph *g, const AppDef *d, TimestampTz start, TimestampTz end,
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
		AppDef	   *u = AppsFind(g, dep->app);
		TimestampTz wstart,
					wend;
		Datum	   *starts;
		int			nstarts;
		Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZARRAYOID};
		Datum		args[2];
		bool		isnull;
		int64		ndone,
					nfailed;

		CHECK_FOR_INTERRUPTS();
		if (AppsIsSignalDep(dep->app))
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
		DepWindow(d, dep->grain, start, end, &wstart, &wend);
		starts = PeriodStarts(u, u->grain, Max(wstart, u->first_period), wend, NULL, &nstarts);
		if (nstarts == 0)
			return UPSTREAM_MISSING;	/* the upstream started after this
										 * period */
		args[0] = CStringGetTextDatum(u->name);
		args[1] = PointerGetDatum(construct_array(starts, nstarts, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		CoordExec(&plan_upstream,
				  "SELECT pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) 'done'), "
				  "pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) ANY "
				  "('{dead,cancelled}'::pg_catalog.text[])) "
				  "FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
				  "AND period_start OPERATOR(pg_catalog.=) ANY ($2)",
				  2, argtypes, args, NULL, SPI_OK_SELECT, "reading upstream runs");
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
Jsonb *
AppsRunPayload(const AppDef *d, TimestampTz start, TimestampTz end, Datum *names, Datum *results, int n)
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
	args[6] = CStringGetTextDatum(apps_grain_names[d->grain]);

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
					(errmsg("upstream results of app \"%s\" for %s left out of its payload", d->name, AppsPeriodLabelIn(d, start)),
					 errdetail("With them the payload would have more than %d bytes; read them from coord.runs.",
							   COORD_PAYLOAD_MAX_BYTES)));
			continue;
		}
		args[4] = PointerGetDatum(construct_array(names, attempt == 0 ? n : 0, TEXTOID, -1, false, TYPALIGN_INT));
		args[5] = PointerGetDatum(construct_array(results, attempt == 0 ? n : 0, JSONBOID, -1, false, TYPALIGN_INT));
		CoordExecLimit(&plan_payload,
					   "SELECT pg_catalog.jsonb_build_object('app', $1, "
					   "'period_start', pg_catalog.to_char(pg_catalog.timezone('UTC'::pg_catalog.text, $2), "
					   "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
					   "'period_end', pg_catalog.to_char(pg_catalog.timezone('UTC'::pg_catalog.text, $3), "
					   "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
					   "'period', $7, 'conf', $4, 'upstream', "
					   "COALESCE((SELECT pg_catalog.jsonb_object_agg(u.n, u.v) "
					   "FROM ROWS FROM (pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(n, v)), '{}'::pg_catalog.jsonb))",
					   7, argtypes, args, NULL, 1, SPI_OK_SELECT, "building a run's payload");
		payload = DatumGetJsonbP(SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull),
												   false, -1));
		if (VARSIZE(payload) <= COORD_PAYLOAD_MAX_BYTES || n == 0 || attempt > 0)
			break;
		ereport(WARNING,
				(errmsg("upstream results of app \"%s\" for %s left out of its payload", d->name, AppsPeriodLabelIn(d, start)),
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
int64
AppsEnqueueRun(const AppDef *d, TimestampTz start, Jsonb *payload)
{
	char	   *origin = AppsRunOrigin(d, start);
	int64		id;

	/*
	 * run_at: the real time, so that workers can claim it at once whatever
	 * clock ticks use
	 */
	id = CoordEnqueueOrigin(d->queue, payload, GetCurrentTransactionStartTimestamp(), d->host,
							APP_MAX_ATTEMPTS, origin, AppsRunKey(d, start), InvalidOid);
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
	TimestampTz end = AppsPeriodNextIn(d, d->grain, start);
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
		switch (AppsCheckUpstreams(g, d, start, end, names, results))
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
	id = AppsEnqueueRun(d, start, AppsRunPayload(d, start, end, names, results, check ? d->ndeps : 0));
	args[0] = CStringGetTextDatum(d->name);
	args[1] = TimestampTzGetDatum(start);
	args[2] = TimestampTzGetDatum(end);
	args[3] = CStringGetTextDatum(d->queue);
	args[4] = d->host ? CStringGetTextDatum(d->host) : (Datum) 0;
	nulls[4] = d->host ? ' ' : 'n';
	args[5] = Int64GetDatum(id);
	nulls[5] = id > 0 ? ' ' : 'n';
	CoordExec(&plan_insert_run,
			  "INSERT INTO coord.app_runs (app, period_start, period_end, queue, host, state, job_id) "
			  "VALUES ($1, $2, $3, $4, $5, 'live', $6) ON CONFLICT DO NOTHING",
			  6, argtypes, args, nulls, SPI_OK_INSERT, "creating a run");
	/* a conflict: another transaction created it since RunExists looked */
	return SPI_processed == 1 ? RUN_CREATED : RUN_EXISTS;
}

/*
 * Takes the period's lock and creates the run when it is due; keeps the
 * lock (to commit) when it created one or with PERIOD_KEEP_LOCK.
 */
RunOutcome
AppsTryPeriod(AppGraph *g, const AppDef *d, TimestampTz start, int flags)
{
	LOCKTAG		tag;
	RunOutcome	r;

	if (d->first_null || start < d->first_period || !AppsHorizonAllows(g, d, start))
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
void
AppsSetError(const char *app, const char *error)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};

	args[0] = CStringGetTextDatum(app);
	args[1] = error ? CStringGetTextDatum(error) : (Datum) 0;
	nulls[1] = error ? ' ' : 'n';
	CoordExec(&plan_set_error,
			  "UPDATE coord.app_defs SET last_error = $2 WHERE name OPERATOR(pg_catalog.=) $1",
			  2, argtypes, args, nulls, SPI_OK_UPDATE, "recording an app's error");
	if (SPI_processed > 0)
		AppsGraphChanged();
}

/*
 * Runs fn(arg), the work of app `app`, in a subtransaction (CoordIsolated):
 * when it fails, a WARNING says what was skipped, the error is recorded
 * for the app, and false is returned; the caller's other apps go on.
 */
bool
AppsIsolated(const char *app, const char *what, CoordIsolatedFn fn, void *arg)
{
	ErrorData  *e = CoordIsolated(fn, arg);

	if (e == NULL)
		return true;
	ereport(WARNING,
			(errmsg("%s skipped app \"%s\"", what, app),
			 errdetail("%s", e->message),
			 errhint("The error is in coord.runs.app_error (coord.app_defs.last_error); the next tick tries again.")));
	AppsSetError(app, e->message);
	return false;
}

/* ---------- the finish hook ---------- */

/* "a:<app>:<label>" (AppsRunOrigin): the app and its period's start */
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
			from = AppsPeriodTruncIn(d, d->deps[j].grain, a->start);
			to = AppsPeriodNextIn(d, d->deps[j].grain, from);
			from = AppsPeriodCeilIn(d, d->grain, from);
		}
		else
		{
			from = AppsPeriodTruncIn(d, d->grain, a->start);
			to = AppsPeriodNextIn(d, d->grain, from);
		}
		for (p = from; p < to; p = AppsPeriodNextIn(d, d->grain, p))
			(void) AppsTryPeriod(a->g, d, p, PERIOD_CHECK_UPSTREAMS | PERIOD_KEEP_LOCK);
	}
}

/*
 * Each app that depends on name (an app, or "@signal"), for its run or
 * signal at start: fn on a DependentArgs, each dependent in its own
 * subtransaction (AppsIsolated; what names the cause in its warning).
 */
static void
ForEachDependent(AppGraph *g, const char *name, TimestampTz start, const char *what,
				 CoordIsolatedFn fn)
{
	int			i,
				j;

	for (i = 0; i < g->n; i++)
	{
		DependentArgs a;

		for (j = 0; j < g->apps[i].ndeps; j++)
			if (strcmp(g->apps[i].deps[j].app, name) == 0)
				break;
		if (j == g->apps[i].ndeps)
			continue;
		a.g = g;
		a.d = &g->apps[i];
		a.upstream = name;
		a.start = start;
		(void) AppsIsolated(a.d->name, what, fn, &a);
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
	CoordExec(&plan_finish,
			  "UPDATE coord.app_runs SET state = $3, result = $4, job_id = $5, "
			  "finished_at = pg_catalog.clock_timestamp(), "
			  "attempts = COALESCE((SELECT h.attempt FROM coord.job_history AS h "
			  "WHERE h.id OPERATOR(pg_catalog.=) $5), attempts) "
			  "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) $2 "
			  "AND state OPERATOR(pg_catalog.<>) 'done'",
			  5, argtypes, args, nulls, SPI_OK_UPDATE, "recording a run");
	if (SPI_processed != 1)
		return;					/* dropped app, or a run done already */
	AppsAlertsRunFinished(app, start, state, finished_at);
	if (strcmp(state, "done") != 0)
		return;

	/*
	 * The dependents, by name; their periods this run belongs to, in time
	 * order.  Each dependent in a subtransaction: a broken one must not fail
	 * the completion of its upstream's job, nor keep the other dependents
	 * from their runs; a tick repairs what it missed once it works.
	 */
	g = AppsCachedGraph();
	g->horizon_loaded = false;	/* the latest tick, as of now */
	if (AppsFind(g, app) == NULL)
		return;
	apps_graph_users++;
	PG_TRY();
	{
		ForEachDependent(g, app, start, "the completion of an upstream run", DependentRuns);
	}
	PG_FINALLY();
	{
		apps_graph_users--;
	}
	PG_END_TRY();
}

/* ---------- signals: external inputs ---------- */

/*
 * A dependency written "@name": "<grain>" is on the signal source name, not
 * on an app (app names cannot hold '@').  coord.signal(name, t, payload)
 * stores the row (name, t) of coord.app_signals once and, in the same
 * transaction, runs the dependents' check-and-create exactly as the
 * completion of an upstream run does (ForEachDependent: DependentRuns,
 * AppsTryPeriod with the (D, P) lock kept to commit, AppsCheckUpstreams); so two
 * signals, or a signal and an upstream completion, that complete one
 * period at once create its run once: the second to take (D, P) sees the
 * first's commit.
 * Lock order: the signal's row (its primary key entry), then the (D, P)
 * locks as a completion takes them.  A transaction that signals several
 * periods can deadlock with another signalling the same ones in another
 * order; PostgreSQL's detector aborts one of them.
 *
 * Which signals period P of app D needs, for "@name" declared with grain g:
 * the windows are those of an app upstream of grain g (AppsCheckUpstreams), and
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
bool
AppsIsSignalDep(const char *dep)
{
	return dep[0] == '@';
}

/* A signal name has the syntax of other names (CoordNameArg). */
void
AppsCheckSignalName(const char *signal, const char *app)
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
	uint64		n;

	if (*budget < 0)
		return (Datum) 0;
	/* each payload costs 8 bytes and more: rows past budget / 8 cannot fit */
	args[0] = CStringGetTextDatum(signal);
	args[1] = TimestampTzGetDatum(from);
	args[2] = TimestampTzGetDatum(to);
	n = CoordExecLimit(&plan_signal_payloads,
					   "SELECT payload FROM coord.app_signals WHERE name OPERATOR(pg_catalog.=) $1 "
					   "AND period_start OPERATOR(pg_catalog.>=) $2 "
					   "AND period_start OPERATOR(pg_catalog.<) $3 ORDER BY period_start",
					   3, argtypes, args, NULL, *budget / 8 + 2, SPI_OK_SELECT, "reading signals");
	return JsonArrayWithin(n, budget, "reading signals");	/* payload is NOT NULL */
}

/*
 * AppsCheckUpstreams for a dependency on a signal: UPSTREAM_DONE when each
 * dep->grain period of the window has a signal; then *name and *result
 * (when name is not NULL) get "@signal" and the window's payloads.
 */
static UpstreamState
CheckSignals(const AppDef *d, const AppDep *dep, TimestampTz start, TimestampTz end,
			 Datum *name, Datum *result, int64 *budget)
{
	TimestampTz wstart,
				wend;
	Datum	   *starts;
	Datum	   *ends;
	int			nstarts;
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID};
	Datum		args[3];
	bool		isnull;
	int64		nmet;

	/*
	 * the window, as for an app upstream of this grain; the signal's periods
	 * are d's, in d's zone (a signal source has no zone of its own)
	 */
	DepWindow(d, dep->grain, start, end, &wstart, &wend);
	starts = PeriodStarts(d, dep->grain, wstart, wend, &ends, &nstarts);
	if (nstarts == 0)
		return UPSTREAM_MISSING;
	args[0] = CStringGetTextDatum(dep->app + 1);
	args[1] = PointerGetDatum(construct_array(starts, nstarts, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(ends, nstarts, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	/* the periods of the window that have a signal */
	CoordExec(&plan_signal_count,
			  "SELECT pg_catalog.count(*) FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS w(s, e) "
			  "WHERE EXISTS (SELECT 1 FROM coord.app_signals AS x "
			  "WHERE x.name OPERATOR(pg_catalog.=) $1 "
			  "AND x.period_start OPERATOR(pg_catalog.>=) w.s "
			  "AND x.period_start OPERATOR(pg_catalog.<) w.e)",
			  3, argtypes, args, NULL, SPI_OK_SELECT, "reading signals");
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
	a->start = AppsPeriodTruncIn(a->d, a->d->deps[j].grain, a->start);
	DependentRuns(a);
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
	(void) AppsPeriodTrunc(G_YEARLY, t);
	payload = PG_GETARG_JSONB_P(2);
	CoordCheckSize("signal payload", VARSIZE(payload), COORD_RESULT_MAX_BYTES);
	who = GetUserNameFromId(GetUserId(), false);

	args[0] = CStringGetTextDatum(name);
	args[1] = TimestampTzGetDatum(t);
	args[2] = JsonbPGetDatum(payload);
	args[3] = CStringGetTextDatum(who);
	CoordSpiBegin(&sw);
	CoordExec(&plan_signal_insert,
			  "INSERT INTO coord.app_signals (name, period_start, payload, signalled_by) "
			  "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
			  4, argtypes, args, NULL, SPI_OK_INSERT, "signal");
	inserted = (SPI_processed == 1);
	if (inserted)
	{
		char	   *dep = psprintf("@%s", name);
		AppGraph   *g = AppsCachedGraph();

		g->horizon_loaded = false;	/* the latest tick, as of now */
		apps_graph_users++;
		PG_TRY();
		{
			/*
			 * The runs of each dependent's periods that t may complete; the
			 * signal's period is the dependent's: an hourly signal under a
			 * daily app in America/Chicago counts in the Chicago day holding
			 * it.
			 */
			ForEachDependent(g, dep, t, "a signal", SignalDependentRuns);
		}
		PG_FINALLY();
		{
			apps_graph_users--;
		}
		PG_END_TRY();
	}
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(inserted);
}

/* ---------- the definitions lock ---------- */

/* Serializes changes to the graph (define, drop, rerun, the signal purge). */
void
AppsLockDefinitions(void)
{
	LOCKTAG		tag;
	const char *k = "\napp definitions";

	CoordSetTag(&tag, CoordNameKey(k, strlen(k)), COORD_NS_APP);
	(void) CoordLockTake(&tag, ExclusiveLock, false, false);
}

/* ---------- for apps_rerun.c (coord.rerun and the tick's reset periods) ---------- */

/*
 * AppsTryPeriod for a period coord.rerun reset: with upstream checks when the
 * app has dependencies, under the period's lock (kept when it created the
 * run).
 */
AppRerunOutcome
AppsRerunTryPeriod(AppGraph *g, const AppDef *d, TimestampTz start)
{
	switch (AppsTryPeriod(g, d, start, d->ndeps > 0 ? PERIOD_CHECK_UPSTREAMS : 0))
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
AppsRerunLockPeriod(const char *app, TimestampTz start)
{
	LOCKTAG		tag;

	PeriodTag(&tag, app, start);
	(void) CoordLockTake(&tag, ExclusiveLock, false, false);
}

void
AppsRerunLockDefinitions(void)
{
	AppsLockDefinitions();
}

bool
AppsRerunIsolated(const char *app, const char *what, CoordIsolatedFn fn, void *arg)
{
	return AppsIsolated(app, what, fn, arg);
}

void
CoordAppsInit(void)
{
	CoordRegisterJobOrigin(COORD_ORIGIN_APP, CoordAppRunFinished);
	AppsGraphInit();
}
