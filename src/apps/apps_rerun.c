/*-------------------------------------------------------------------------
 * apps_rerun.c
 *		coord.rerun: reruns and backfills of app runs (docs/apps.md, Reruns
 *		and backfills), and the tick's share of them (AppsRerunTick).
 *
 * A rerun resets runs: a finished run (done, dead or cancelled) is copied
 * to coord.app_run_history as an earlier attempt, its coord.app_runs row is
 * deleted, and its period goes into coord.app_reruns.  The period's run is
 * made again only by apps.c's one check-and-create path (AppsTryPeriod),
 * at most APP_MAX_LIVE_RUNS unfinished runs per app.  An unfinished run is
 * never reset, and an unfinished downstream one is an error (55000).
 *
 * Lock order: the tick lock, the definitions lock, the rows of the app's
 * finished runs, then the (D, P) locks in (app name, period) order, kept
 * to the end of the transaction (at most RERUN_MAX_LOCKS per call).
 *
 * Who makes the runs again, which runs a rerun resets, and why the locks
 * come in this order: src/apps/README.md, "Reruns (apps_rerun.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "apps/apps.h"
#include "apps/apps_int.h"

/* Downstream periods one rerun may lock (each is a lock-table entry). */
#define RERUN_MAX_LOCKS		2000

/* One (app, period) of a rerun: what to lock and to reset. */
typedef struct RerunPeriod
{
	int			app;			/* index in the graph */
	TimestampTz start;
} RerunPeriod;

/* The periods of one app that a rerun reaches. */
typedef struct PeriodSet
{
	int			n;
	int			cap;
	TimestampTz *starts;
	bool		reached;		/* downstream of the rerun app */
	int			pending_ups;	/* upstreams reached and not yet processed */
} PeriodSet;

static SPIPlanPtr plan_targets = NULL;
static SPIPlanPtr plan_downstream = NULL;
static SPIPlanPtr plan_to_history = NULL;
static SPIPlanPtr plan_delete_runs = NULL;
static SPIPlanPtr plan_add_reruns = NULL;
static SPIPlanPtr plan_pending = NULL;
static SPIPlanPtr plan_drop_pending = NULL;
static SPIPlanPtr plan_gone = NULL;

PG_FUNCTION_INFO_V1(coord_rerun);

static void
SetAdd(PeriodSet *s, TimestampTz t)
{
	if (s->n == s->cap)
	{
		s->cap = s->cap ? s->cap * 2 : 64;
		s->starts = s->starts ? repalloc(s->starts, sizeof(TimestampTz) * s->cap)
			: palloc(sizeof(TimestampTz) * s->cap);
	}
	s->starts[s->n++] = t;
}

static int
TsCmp(const void *a, const void *b)
{
	TimestampTz x = *(const TimestampTz *) a;
	TimestampTz y = *(const TimestampTz *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Sorts a set and drops its duplicates. */
static void
SetFinish(PeriodSet *s)
{
	int			i,
				k = 0;

	if (s->n == 0)
		return;
	qsort(s->starts, s->n, sizeof(TimestampTz), TsCmp);
	for (i = 1; i < s->n; i++)
		if (s->starts[i] != s->starts[k])
			s->starts[++k] = s->starts[i];
	s->n = k + 1;
}

static int
RerunPeriodCmp(const void *a, const void *b)
{
	const RerunPeriod *x = (const RerunPeriod *) a;
	const RerunPeriod *y = (const RerunPeriod *) b;

	/* graph indexes are in name order (strcmp), as completions lock */
	if (x->app != y->app)
		return x->app < y->app ? -1 : 1;
	return TsCmp(&x->start, &y->start);
}

static Datum
StartsArray(const TimestampTz *starts, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		elems[i] = TimestampTzGetDatum(starts[i]);
	return PointerGetDatum(construct_array(elems, n, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* Whether d depends on the app named u. */
static bool
DependsOn(const AppDef *d, const char *u, Grain *grain)
{
	int			j;

	for (j = 0; j < d->ndeps; j++)
		if (strcmp(d->deps[j].app, u) == 0)
		{
			*grain = d->deps[j].grain;
			return true;
		}
	return false;
}

/*
 * Adds to ds the periods of dependent d that contain the period of its
 * upstream starting at s (the windows DependentRuns in apps.c looks at).
 */
static void
AddContaining(const AppDef *d, Grain dep_grain, TimestampTz s, PeriodSet *ds)
{
	TimestampTz from,
				to,
				p;

	if (dep_grain > d->grain)
	{
		from = AppsPeriodTruncIn(d, dep_grain, s);
		to = AppsPeriodNextIn(d, dep_grain, from);
		p = AppsPeriodTruncIn(d, d->grain, from);
		from = (p == from) ? p : AppsPeriodNextIn(d, d->grain, p);
	}
	else
	{
		from = AppsPeriodTruncIn(d, d->grain, s);
		to = AppsPeriodNextIn(d, d->grain, from);
	}
	for (p = from; p < to; p = AppsPeriodNextIn(d, d->grain, p))
	{
		CHECK_FOR_INTERRUPTS();
		SetAdd(ds, p);
	}
}

/*
 * The downstream closure: for every app depending (transitively) on
 * g->apps[root], the periods containing a period of an upstream in the
 * closure, starting from sets[root].  Apps are processed once all their
 * reached upstreams are (Kahn's order), so each set is complete before it
 * is propagated; linear in the graph plus the periods.
 */
static void
DownstreamClosure(AppGraph *g, int root, PeriodSet *sets)
{
	int		   *queue = palloc(sizeof(int) * Max(g->n, 1));
	int			head = 0,
				tail = 0;
	int			i,
				j;

	/* which apps are reached: a walk over dependents */
	queue[tail++] = root;
	sets[root].reached = true;
	while (head < tail)
	{
		int			x = queue[head++];

		for (i = 0; i < g->n; i++)
		{
			Grain		gr;

			CHECK_FOR_INTERRUPTS();
			if (!sets[i].reached && DependsOn(&g->apps[i], g->apps[x].name, &gr))
			{
				sets[i].reached = true;
				queue[tail++] = i;
			}
		}
	}
	/* the reached upstreams of each reached app */
	for (i = 0; i < g->n; i++)
	{
		if (!sets[i].reached || i == root)
			continue;
		for (j = 0; j < g->apps[i].ndeps; j++)
		{
			AppDef	   *u = AppsFind(g, g->apps[i].deps[j].app);

			if (u != NULL && sets[u - g->apps].reached)
				sets[i].pending_ups++;
		}
	}
	/* propagate in dependency order */
	head = tail = 0;
	queue[tail++] = root;
	while (head < tail)
	{
		int			x = queue[head++];

		SetFinish(&sets[x]);
		for (i = 0; i < g->n; i++)
		{
			Grain		gr;
			int			k;

			if (i == root || !sets[i].reached || !DependsOn(&g->apps[i], g->apps[x].name, &gr))
				continue;
			for (k = 0; k < sets[x].n; k++)
				AddContaining(&g->apps[i], gr, sets[x].starts[k], &sets[i]);
			if (--sets[i].pending_ups == 0)
				queue[tail++] = i;
		}
	}
	pfree(queue);
}

/*
 * Moves the finished runs of app at starts to the history (the next
 * attempt numbers), deletes them and marks their periods reset; returns
 * how many.
 */
static int64
ResetRuns(const char *app, Datum starts)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZARRAYOID};
	Datum		args[2];
	int64		n;

	args[0] = CStringGetTextDatum(app);
	args[1] = starts;
	n = (int64) CoordExec(&plan_to_history,
						  "INSERT INTO coord.app_run_history (app, period_start, attempt_no, period_end, queue, host, "
						  "state, attempts, job_id, created_at, finished_at, result) "
						  "SELECT r.app, r.period_start, "
						  "(SELECT pg_catalog.count(*) FROM coord.app_run_history AS h "
						  "WHERE h.app OPERATOR(pg_catalog.=) r.app "
						  "AND h.period_start OPERATOR(pg_catalog.=) r.period_start)::pg_catalog.int4 "
						  "OPERATOR(pg_catalog.+) 1, "
						  "r.period_end, r.queue, r.host, r.state, r.attempts, r.job_id, r.created_at, "
						  "r.finished_at, r.result FROM coord.app_runs AS r "
						  "WHERE r.app OPERATOR(pg_catalog.=) $1 AND r.period_start OPERATOR(pg_catalog.=) ANY ($2) "
						  "AND r.state OPERATOR(pg_catalog.<>) 'live'",
						  2, argtypes, args, NULL, SPI_OK_INSERT, "rerun");
	CoordExec(&plan_delete_runs,
			  "DELETE FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
			  "AND period_start OPERATOR(pg_catalog.=) ANY ($2) "
			  "AND state OPERATOR(pg_catalog.<>) 'live'",
			  2, argtypes, args, NULL, SPI_OK_DELETE, "rerun");
	if ((int64) SPI_processed != n)
		elog(ERROR, "rerun of app \"%s\" moved " INT64_FORMAT " runs but deleted " UINT64_FORMAT,
			 app, n, SPI_processed);
	CoordExec(&plan_add_reruns,
			  "INSERT INTO coord.app_reruns (app, period_start, period_end) "
			  "SELECT h.app, h.period_start, h.period_end FROM coord.app_run_history AS h "
			  "WHERE h.app OPERATOR(pg_catalog.=) $1 AND h.period_start OPERATOR(pg_catalog.=) ANY ($2) "
			  "AND h.replaced_at OPERATOR(pg_catalog.=) pg_catalog.now() "
			  "ON CONFLICT DO NOTHING",
			  2, argtypes, args, NULL, SPI_OK_INSERT, "rerun");
	return n;
}

typedef struct PendingArgs
{
	AppGraph   *g;
	AppDef	   *d;
	int64		created;
} PendingArgs;

/*
 * Creates the runs of d's reset periods that can run now, in time order,
 * while d has fewer than APP_MAX_LIVE_RUNS unfinished runs; forgets the
 * periods that have their run again or never will.
 */
static void
CreatePending(void *arg)
{
	PendingArgs *a = (PendingArgs *) arg;
	AppDef	   *d = a->d;
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZARRAYOID};
	Datum		args[2];
	bool		isnull;
	int64		budget;
	TimestampTz *starts;
	TimestampTz *gone;
	int			n,
				ngone = 0,
				i;

	args[0] = CStringGetTextDatum(d->name);
	CoordExec(&plan_pending,
			  "SELECT period_start FROM coord.app_reruns WHERE app OPERATOR(pg_catalog.=) $1 "
			  "ORDER BY period_start LIMIT " CppAsString2(APP_TICK_STEPS),
			  1, argtypes, args, NULL, SPI_OK_SELECT, "rerun");
	n = (int) SPI_processed;
	if (n == 0)
		return;
	starts = palloc(sizeof(TimestampTz) * n);
	gone = palloc(sizeof(TimestampTz) * n);
	for (i = 0; i < n; i++)
		starts[i] = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	budget = AppsLiveBudget(d->name, "rerun");
	for (i = 0; i < n && budget > 0; i++)
	{
		CHECK_FOR_INTERRUPTS();
		switch (AppsRerunTryPeriod(a->g, d, starts[i]))
		{
			case RERUN_CREATED:
				a->created++;
				budget--;
				gone[ngone++] = starts[i];
				break;
			case RERUN_EXISTS:
			case RERUN_NEVER:
				gone[ngone++] = starts[i];
				break;
			case RERUN_WAITING:
				break;
		}
	}
	if (ngone > 0)
	{
		args[1] = StartsArray(gone, ngone);
		CoordExec(&plan_drop_pending,
				  "DELETE FROM coord.app_reruns WHERE app OPERATOR(pg_catalog.=) $1 "
				  "AND period_start OPERATOR(pg_catalog.=) ANY ($2)",
				  2, argtypes, args, NULL, SPI_OK_DELETE, "rerun");
	}
}

/*
 * The tick's share for app d (called by CoordAppsTick before d's own
 * periods): its reset periods, isolated like the rest of d's tick.
 * Returns how many runs it created.
 */
int64
AppsRerunTick(AppGraph *g, AppDef *d)
{
	PendingArgs a;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	/* periods whose run came back through a completion: forgotten */
	args[0] = CStringGetTextDatum(d->name);
	CoordExec(&plan_gone,
			  "DELETE FROM coord.app_reruns AS p WHERE p.app OPERATOR(pg_catalog.=) $1 "
			  "AND EXISTS (SELECT 1 FROM coord.app_runs AS r WHERE r.app OPERATOR(pg_catalog.=) p.app "
			  "AND r.period_start OPERATOR(pg_catalog.=) p.period_start)",
			  1, argtypes, args, NULL, SPI_OK_DELETE, "tick");
	a.g = g;
	a.d = d;
	a.created = 0;
	if (!AppsRerunIsolated(d->name, "the rerun of its periods by coord.tick", CreatePending, &a))
		return 0;
	return a.created;
}

/*
 * coord.rerun(app, from, to, downstream): see the header and
 * src/apps/README.md, "Reruns (apps_rerun.c)".  Returns how many runs it
 * reset (those of app and, with downstream, of its dependents).
 */
Datum
coord_rerun(PG_FUNCTION_ARGS)
{
	char	   *name;
	TimestampTz from,
				to;
	bool		downstream;
	CoordUserSwitch sw;
	LOCKTAG		tag;
	AppGraph	g;
	AppDef	   *t;
	int			ti,
				i,
				k;
	PeriodSet  *sets;
	RerunPeriod *locks;
	int			nlocks = 0,
				ndown = 0;
	int64		reset = 0;
	Oid			argtypes[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[3];
	PendingArgs pa;

	CoordNotInParallel(fcinfo);
	name = CoordNameArg(fcinfo, 0, "app", false);
	CoordRequireArg(fcinfo, 1, "from");
	CoordRequireArg(fcinfo, 2, "to");
	CoordRequireArg(fcinfo, 3, "downstream");
	from = PG_GETARG_TIMESTAMPTZ(1);
	to = PG_GETARG_TIMESTAMPTZ(2);
	downstream = PG_GETARG_BOOL(3);
	if (TIMESTAMP_NOT_FINITE(from) || TIMESTAMP_NOT_FINITE(to))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from and to of a rerun must be finite times")));
	if (from >= to)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from must be earlier than to"),
				 errdetail("A rerun covers the periods starting in [from, to).")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("coord.rerun requires READ COMMITTED isolation"),
				 errdetail("A rerun waits for ticks, completions and other reruns and must then see their work.")));

	/* one at a time, and never during a tick (tick.c's lock) */
	CoordSetTag(&tag, 0, COORD_NS_TICK);
	(void) CoordLockTake(&tag, ExclusiveLock, false, false);

	CoordSpiBegin(&sw);
	AppsRerunLockDefinitions();
	AppsLoad(&g, 0);
	t = AppsFind(&g, name);
	if (t == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("app \"%s\" does not exist", name)));
	ti = t - g.apps;
	sets = palloc0(sizeof(PeriodSet) * Max(g.n, 1));

	/* the app's finished runs in the range, locked */
	args[0] = CStringGetTextDatum(name);
	args[1] = TimestampTzGetDatum(from);
	args[2] = TimestampTzGetDatum(to);
	CoordExec(&plan_targets,
			  "SELECT period_start FROM coord.app_runs WHERE app OPERATOR(pg_catalog.=) $1 "
			  "AND period_start OPERATOR(pg_catalog.>=) $2 AND period_start OPERATOR(pg_catalog.<) $3 "
			  "AND state OPERATOR(pg_catalog.<>) 'live' ORDER BY period_start FOR UPDATE",
			  3, argtypes, args, NULL, SPI_OK_SELECT, "rerun");
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		SetAdd(&sets[ti], DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull)));
	}
	if (sets[ti].n == 0)
	{
		CoordSpiEnd(&sw);
		PG_RETURN_INT32(0);
	}

	if (downstream)
		DownstreamClosure(&g, ti, sets);
	for (i = 0; i < g.n; i++)
		if (i != ti && sets[i].reached)
			ndown += sets[i].n;
	if (ndown > RERUN_MAX_LOCKS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rerun of app \"%s\" would reach %d downstream periods, more than %d",
						name, ndown, RERUN_MAX_LOCKS),
				 errdetail("A rerun holds a lock on every downstream period it resets until it commits."),
				 errhint("Rerun a shorter range at a time.")));

	/*
	 * the locks, in (app, period) order: every downstream period, and the
	 * app's own first periods, which it creates at once
	 */
	locks = palloc(sizeof(RerunPeriod) * (ndown + APP_MAX_LIVE_RUNS + 1));
	for (k = 0; k < sets[ti].n && k < APP_MAX_LIVE_RUNS; k++)
	{
		locks[nlocks].app = ti;
		locks[nlocks++].start = sets[ti].starts[k];
	}
	for (i = 0; i < g.n; i++)
		if (i != ti && sets[i].reached)
			for (k = 0; k < sets[i].n; k++)
			{
				locks[nlocks].app = i;
				locks[nlocks++].start = sets[i].starts[k];
			}
	qsort(locks, nlocks, sizeof(RerunPeriod), RerunPeriodCmp);
	for (k = 0; k < nlocks; k++)
	{
		CHECK_FOR_INTERRUPTS();
		AppsRerunLockPeriod(g.apps[locks[k].app].name, locks[k].start);
	}

	/* downstream runs: an unfinished one is an error, finished ones reset */
	for (i = 0; i < g.n; i++)
	{
		Oid			dargtypes[2] = {TEXTOID, TIMESTAMPTZARRAYOID};
		Datum		dargs[2];

		if (i == ti || !sets[i].reached || sets[i].n == 0)
			continue;
		dargs[0] = CStringGetTextDatum(g.apps[i].name);
		dargs[1] = StartsArray(sets[i].starts, sets[i].n);
		CoordExec(&plan_downstream,
				  "SELECT period_start, state OPERATOR(pg_catalog.=) 'live' FROM coord.app_runs "
				  "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) ANY ($2) "
				  "ORDER BY period_start FOR UPDATE",
				  2, dargtypes, dargs, NULL, SPI_OK_SELECT, "rerun");
		for (k = 0; k < (int) SPI_processed; k++)
		{
			bool		isnull;

			if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 2, &isnull)))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("cannot rerun app \"%s\" with its downstream while a run of app \"%s\" it feeds is unfinished",
								name, g.apps[i].name),
						 errdetail("The run of app \"%s\" for the period starting %s is computing from the results a rerun would replace.",
								   g.apps[i].name,
								   timestamptz_to_str(DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[k],
																						SPI_tuptable->tupdesc, 1, &isnull)))),
						 errhint("Wait for it to finish (or cancel it), then rerun.")));
		}
		reset += ResetRuns(g.apps[i].name, dargs[1]);
	}
	reset += ResetRuns(name, StartsArray(sets[ti].starts, sets[ti].n));

	/* the app's own reset periods, as many as its bound allows, now */
	pa.g = &g;
	pa.d = t;
	pa.created = 0;
	CreatePending(&pa);

	CoordSpiEnd(&sw);
	PG_RETURN_INT32((int32) Min(reset, PG_INT32_MAX));
}
