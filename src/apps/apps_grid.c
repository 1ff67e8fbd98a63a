/*-------------------------------------------------------------------------
 * apps_grid.c
 *		coord.grid: a text picture of apps x periods, one character per run.
 *
 * A reader only: it runs its statements as the extension owner (with JIT
 * off for them, in a GUC nest level undone before it returns), takes no
 * lock of its own, and writes nothing, so nothing survives an abort.  The
 * apps and their periods come from apps_graph.c through apps_int.h; the
 * states from the view coord.runs, and "late" (an unfinished run with an open
 * deadline alert, '!') from coord.app_alerts.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "jit/jit.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "apps/apps_int.h"

/* grid: at most this many columns; coarser columns beyond that */
#define GRID_MAX_COLUMNS	200

static SPIPlanPtr plan_grid_apps = NULL;
static SPIPlanPtr plan_grid_runs = NULL;

PG_FUNCTION_INFO_V1(coord_grid);

/* ---------- coord.grid ---------- */

typedef struct GridRow
{
	char	   *app;
	Grain		grain;
	char	   *cells;
	int			depth;			/* the longest chain of upstreams above it */
} GridRow;

/*
 * GridDepths: for each app of g, the length of its longest chain of
 * upstreams (0 for an app without any), at most 64.  An iterative
 * depth-first search that computes each app once, so it is linear in the
 * graph whatever its shape (counting chains one by one is exponential in a
 * graph of diamonds).
 */
static int *
GridDepths(AppGraph *g)
{
	int		   *depth = palloc0(sizeof(int) * Max(g->n, 1));
	char	   *state = palloc0(Max(g->n, 1));	/* 0 new, 1 on the path, 2
												 * done */
	int		   *stack = palloc(sizeof(int) * Max(g->n, 1));
	int		   *next = palloc0(sizeof(int) * Max(g->n, 1));
	int			root;

	for (root = 0; root < g->n; root++)
	{
		int			sp = 0;

		if (state[root] != 0)
			continue;
		stack[sp++] = root;
		state[root] = 1;
		while (sp > 0)
		{
			int			v = stack[sp - 1];
			AppDef	   *d = &g->apps[v];
			AppDef	   *u;
			int			ui;

			CHECK_FOR_INTERRUPTS();
			if (next[v] >= d->ndeps)
			{
				state[v] = 2;
				sp--;
				continue;
			}
			u = AppsFind(g, d->deps[next[v]++].app);
			if (u == NULL)
				continue;
			ui = u - g->apps;
			if (state[ui] == 0)
			{
				/* come back to this dependency once u is done */
				next[v]--;
				state[ui] = 1;
				stack[sp++] = ui;
				continue;
			}
			/* state 1: a cycle (define_app refuses them); it adds nothing */
			if (state[ui] == 2)
				depth[v] = Min(Max(depth[v], depth[ui] + 1), 64);
		}
	}
	return depth;
}

static int
GridRowCmp(const void *a, const void *b)
{
	const GridRow *x = a;
	const GridRow *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return strcmp(x->app, y->app);
}

/* How a state shows, and how much it matters when several runs share a cell. */
static char
StateSymbol(const char *state, int *rank)
{
	static const struct
	{
		const char *state;
		char		sym;
	}			syms[] = {
		{"done", '#'}, {"scheduled", '~'}, {"ready", 'o'}, {"running", '>'},
		{"late", '!'}, {"missing", '?'}, {"cancelled", 'c'}, {"dead", 'X'}
	};
	int			i;

	for (i = 0; i < lengthof(syms); i++)
		if (strcmp(state, syms[i].state) == 0)
		{
			*rank = i + 1;
			return syms[i].sym;
		}
	*rank = 0;
	return '?';
}

static int
SymbolRank(char c)
{
	const char *order = "#~o>!?cX";
	const char *p = (c == '\0' || c == '.' || c == '-') ? NULL : strchr(order, c);

	return p ? (int) (p - order) + 1 : 0;
}

static void
HeaderLines(Grain cg, TimestampTz *cols, int ncols, int indent, StringInfo top, StringInfo tens, StringInfo units)
{
	int			c;
	int			last_end = -1;

	appendStringInfoSpaces(top, indent);
	appendStringInfoSpaces(tens, indent);
	appendStringInfoSpaces(units, indent);
	for (c = 0; c < ncols; c++)
	{
		struct pg_tm tm;
		int			v = 0;
		bool		boundary;
		char	   *label = NULL;

		AppsTmFromTs(cols[c], &tm);
		switch (cg)
		{
			case G_HOURLY:
				v = tm.tm_hour;
				boundary = (tm.tm_hour == 0);
				label = psprintf("%04d-%02d-%02d", tm.tm_year, tm.tm_mon, tm.tm_mday);
				break;
			case G_DAILY:
				v = tm.tm_mday;
				boundary = (tm.tm_mday == 1);
				label = psprintf("%04d-%02d", tm.tm_year, tm.tm_mon);
				break;
			case G_WEEKLY:
				{
					int			y = tm.tm_year;

					v = date2isoweek(tm.tm_year, tm.tm_mon, tm.tm_mday);
					if (v == 1 && tm.tm_mon == 12)
						y++;
					boundary = (v == 1);
					label = psprintf("%04d-W", y);
				}
				break;
			case G_MONTHLY:
				v = tm.tm_mon;
				boundary = (tm.tm_mon == 1);
				label = psprintf("%04d", tm.tm_year);
				break;
			default:
				v = tm.tm_year % 100;
				boundary = (tm.tm_year % 100 == 0);
				label = psprintf("%02d", tm.tm_year / 100);
				break;
		}
		if ((boundary || c == 0) && c > last_end)
		{
			appendStringInfoString(top, label);
			last_end = c + strlen(label);
		}
		else if (c >= last_end)
			appendStringInfoChar(top, ' ');
		appendStringInfoChar(tens, '0' + (v / 10) % 10);
		appendStringInfoChar(units, '0' + v % 10);
	}
}

/* One coord.grid call: its arguments and the picture its steps build. */
typedef struct Grid
{
	bool		all;			/* every app: the apps argument is NULL */
	TimestampTz from;
	TimestampTz to;
	Datum		args[3];		/* both statements': apps, from, to */
	char		nulls[3];
	GridRow    *rows;
	int			nrows;
	int			width;			/* the apps' names' column */
	Grain		cg;				/* the columns' grain */
	TimestampTz *cols;			/* the columns' starts, and the last's end */
	int			ncols;
} Grid;

/* both statements' parameters: apps, from, to */
static const Oid grid_argtypes[3] = {TEXTARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZOID};

/* The arguments, checked before anything runs. */
static void
GridArgsRead(FunctionCallInfo fcinfo, Grid *g)
{
	CoordRequireArg(fcinfo, 0, "from");
	CoordRequireArg(fcinfo, 1, "to");
	g->from = PG_GETARG_TIMESTAMPTZ(0);
	g->to = PG_GETARG_TIMESTAMPTZ(1);
	if (TIMESTAMP_NOT_FINITE(g->from) || TIMESTAMP_NOT_FINITE(g->to) || g->to <= g->from)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("grid needs finite times with from before to")));
	/* a NULL element would be looked up as an app named "(null)" */
	if (!PG_ARGISNULL(2) && array_contains_nulls(PG_GETARG_ARRAYTYPE_P(2)))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("apps must not contain null elements"),
				 errhint("Pass NULL instead of the array to show every app.")));
	g->all = PG_ARGISNULL(2);
	g->args[0] = g->all ? (Datum) 0 : PG_GETARG_DATUM(2);
	g->nulls[0] = g->all ? 'n' : ' ';
	g->args[1] = TimestampTzGetDatum(g->from);
	g->nulls[1] = ' ';
	g->args[2] = TimestampTzGetDatum(g->to);
	g->nulls[2] = ' ';
}

/*
 * No JIT for the grid's statements, in a GUC nest level that the caller
 * pops (before CoordSpiEnd): the planner's guesses for these small queries
 * can pass jit_above_cost, and compiling costs a grid tens of milliseconds.
 */
static int
GridJitOff(void)
{
	int			nest = NewGUCNestLevel();

	if (jit_enabled)
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

/*
 * The rows: the apps named, in their order, or every app by name; an app
 * named that does not exist is an error.  Also the finest grain among them
 * and the width of the names' column.
 */
static void
GridReadApps(Grid *g)
{
	g->nrows = CoordExec(&plan_grid_apps,
						 "SELECT x.name, x.grain FROM ("
						 "SELECT w.name, a.grain, w.o AS k FROM pg_catalog.unnest($1) WITH ORDINALITY AS w(name, o) "
						 "LEFT JOIN coord.app_defs AS a ON a.name OPERATOR(pg_catalog.=) w.name WHERE $1 IS NOT NULL "
						 "UNION ALL "
						 "SELECT a.name, a.grain, NULL FROM coord.app_defs AS a WHERE $1 IS NULL"
						 ") AS x ORDER BY x.k, x.name COLLATE pg_catalog.\"C\"",
						 3, grid_argtypes, g->args, g->nulls, SPI_OK_SELECT, "grid");
	g->rows = palloc0(sizeof(GridRow) * Max(g->nrows, 1));
	g->cg = G_YEARLY;
	g->width = 3;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		GridRow    *row = &g->rows[i];
		char	   *grain = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		row->app = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		if (grain == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("app \"%s\" does not exist", row->app ? row->app : "(null)")));
		row->grain = AppsGrainFromName(grain);
		g->cg = Min(g->cg, row->grain);
		g->width = Max(g->width, (int) strlen(row->app));
	}
	g->width += 2;
}

/*
 * Every app shown: upstream ones first, by the longest chain of upstreams
 * above them, then by name.
 */
static void
GridSortByDepth(Grid *g)
{
	AppGraph	graph;
	int		   *depth;

	AppsLoad(&graph, 0);
	depth = GridDepths(&graph);
	for (int r = 0; r < g->nrows; r++)
	{
		AppDef	   *d = AppsFind(&graph, g->rows[r].app);

		g->rows[r].depth = d ? depth[d - graph.apps] : 0;
	}
	qsort(g->rows, g->nrows, sizeof(GridRow), GridRowCmp);
}

/*
 * The columns: periods of the finest grain shown, coarser while there would
 * be more than GRID_MAX_COLUMNS; every cell starts as '.' (no run).
 */
static void
GridColumns(Grid *g)
{
	TimestampTz t;
	int			c;

	for (;;)
	{
		g->ncols = 0;
		for (t = AppsPeriodTrunc(g->cg, g->from); t < g->to && g->ncols <= GRID_MAX_COLUMNS; t = AppsPeriodNext(g->cg, t))
			g->ncols++;
		if (g->ncols <= GRID_MAX_COLUMNS || g->cg == G_YEARLY)
			break;
		g->cg++;
	}
	g->ncols = Min(g->ncols, GRID_MAX_COLUMNS);
	g->cols = palloc(sizeof(TimestampTz) * (g->ncols + 1));
	for (c = 0, t = AppsPeriodTrunc(g->cg, g->from); c < g->ncols; c++, t = AppsPeriodNext(g->cg, t))
		g->cols[c] = t;
	g->cols[g->ncols] = t;
	for (int r = 0; r < g->nrows; r++)
	{
		g->rows[r].cells = palloc(g->ncols + 1);
		memset(g->rows[r].cells, '.', g->ncols);
		g->rows[r].cells[g->ncols] = '\0';
	}
}

/*
 * A run of [ps, pe) with state sym (of rank rank) in row's cells: the column
 * where it starts (or the first shown) takes the state that matters most,
 * the columns it continues into '-'.
 */
static void
GridMark(const Grid *g, GridRow *row, TimestampTz ps, TimestampTz pe, char sym, int rank)
{
	for (int c = 0; c < g->ncols; c++)
	{
		if (g->cols[c + 1] <= ps || g->cols[c] >= pe)
			continue;
		if (ps >= g->cols[c] || c == 0)
		{
			/*
			 * the column where the run starts (or the first shown): the worst
			 * state wins
			 */
			if (SymbolRank(row->cells[c]) < rank)
				row->cells[c] = sym;
		}
		else if (row->cells[c] == '.')
			row->cells[c] = '-';
	}
}

static int
GridRowNameCmp(const void *a, const void *b)
{
	return strcmp((*(GridRow *const *) a)->app, (*(GridRow *const *) b)->app);
}

/* The first of byname[0 .. n) (sorted by name) named app or after it. */
static int
GridFirstNamed(GridRow **byname, int n, const char *app)
{
	int			lo = 0,
				hi = n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (strcmp(byname[mid]->app, app) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The runs in the grid's time, each marked in its app's row (in each of
 * them, for an app named twice), found by name in a sorted index of the
 * rows: (runs + apps) log apps, not runs x apps.  An unfinished run with an
 * open deadline alert shows as late.
 */
static void
GridReadRuns(Grid *g)
{
	GridRow   **byname = palloc(sizeof(GridRow *) * Max(g->nrows, 1));

	for (int r = 0; r < g->nrows; r++)
		byname[r] = &g->rows[r];
	qsort(byname, g->nrows, sizeof(GridRow *), GridRowNameCmp);
	CoordExec(&plan_grid_runs,
			  "SELECT r.app, r.period_start, r.period_end, "
			  "CASE WHEN r.state OPERATOR(pg_catalog.=) ANY (ARRAY['scheduled', 'ready', 'running']) "
			  "AND EXISTS (SELECT 1 FROM coord.app_alerts AS a "
			  "WHERE a.app OPERATOR(pg_catalog.=) r.app AND a.period_start OPERATOR(pg_catalog.=) r.period_start "
			  "AND a.kind OPERATOR(pg_catalog.=) 'deadline' AND a.cleared_at IS NULL) "
			  "THEN 'late' ELSE r.state END "
			  "FROM coord.runs AS r "
			  "WHERE r.current AND ($1 IS NULL OR r.app OPERATOR(pg_catalog.=) ANY ($1)) "
			  "AND r.period_end OPERATOR(pg_catalog.>) $2 AND r.period_start OPERATOR(pg_catalog.<) $3",
			  3, grid_argtypes, g->args, g->nulls, SPI_OK_SELECT, "grid");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		bool		isnull;
		char	   *app = SPI_getvalue(row, SPI_tuptable->tupdesc, 1);
		TimestampTz ps = DatumGetTimestampTz(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
		TimestampTz pe = DatumGetTimestampTz(SPI_getbinval(row, SPI_tuptable->tupdesc, 3, &isnull));
		int			rank;
		char		sym = StateSymbol(SPI_getvalue(row, SPI_tuptable->tupdesc, 4), &rank);

		CHECK_FOR_INTERRUPTS();
		for (int r = GridFirstNamed(byname, g->nrows, app);
			 r < g->nrows && strcmp(byname[r]->app, app) == 0; r++)
			GridMark(g, byname[r], ps, pe, sym, rank);
	}
}

/* One line of the answer (the tuplestore copies it out of SPI's memory). */
static void
GridPutLine(ReturnSetInfo *rsinfo, const char *line)
{
	Datum		v[1];
	bool		n[1] = {false};

	v[0] = CStringGetTextDatum(line);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
}

/* The grid's first line: how many apps, which time, which columns. */
static char *
GridTitle(const Grid *g)
{
	struct pg_tm a,
				b;
	Grain		cg = g->cg;

	AppsTmFromTs(g->cols[0], &a);
	AppsTmFromTs(g->cols[g->ncols], &b);
	return psprintf("runs of %d %s, %04d-%02d-%02d %02d:%02d to %04d-%02d-%02d %02d:%02d UTC, "
					"one column per %s period",
					g->nrows, g->nrows == 1 ? "app" : "apps",
					a.tm_year, a.tm_mon, a.tm_mday, a.tm_hour, a.tm_min,
					b.tm_year, b.tm_mon, b.tm_mday, b.tm_hour, b.tm_min,
					cg == G_HOURLY ? "hour's" : cg == G_DAILY ? "day's" :
					cg == G_WEEKLY ? "ISO week's" : cg == G_MONTHLY ? "month's" : "year's");
}

/* The text: the title, three header lines, a line per app, the legend. */
static void
GridRender(const Grid *g, ReturnSetInfo *rsinfo)
{
	StringInfoData top,
				tens,
				units;

	initStringInfo(&top);
	initStringInfo(&tens);
	initStringInfo(&units);
	GridPutLine(rsinfo, GridTitle(g));
	HeaderLines(g->cg, g->cols, g->ncols, g->width, &top, &tens, &units);
	GridPutLine(rsinfo, top.data);
	GridPutLine(rsinfo, tens.data);
	GridPutLine(rsinfo, units.data);
	for (int r = 0; r < g->nrows; r++)
		GridPutLine(rsinfo, psprintf("%-*s%s", g->width, g->rows[r].app, g->rows[r].cells));
	GridPutLine(rsinfo, "legend: # done  > running  o ready  ~ scheduled (waits to retry)  ! late  "
				"X dead  c cancelled  ? job missing  . no run  - period continues");
}

/*
 * coord.grid(from, to, apps) returns SETOF text: apps x periods with each
 * run's state as one character.  Columns are periods of the finest grain of
 * the apps shown (coarser when there would be more than GRID_MAX_COLUMNS).
 * A coarser app shows its run in the column where its period starts and '-'
 * for the rest of it; a finer app shows, per column, the state of its runs
 * there that matters most (dead over cancelled over running ... over done).
 * With no app to show, one line: "no apps defined" ("no apps named" for an
 * empty list).
 */
Datum
coord_grid(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Grid		g;
	CoordUserSwitch sw;
	int			nest;

	GridArgsRead(fcinfo, &g);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	CoordSpiBegin(&sw);
	nest = GridJitOff();
	GridReadApps(&g);
	/* nothing to draw: one plain line, not a header over no rows */
	if (g.nrows == 0)
		GridPutLine(rsinfo, g.all ? "no apps defined" : "no apps named");
	else
	{
		if (g.all && g.nrows > 1)
			GridSortByDepth(&g);
		GridColumns(&g);
		GridReadRuns(&g);
		GridRender(&g, rsinfo);
	}
	/* nest first: the switch's own pop would take it too (common_spi.c) */
	AtEOXact_GUC(true, nest);
	CoordSpiEnd(&sw);
	return (Datum) 0;
}
