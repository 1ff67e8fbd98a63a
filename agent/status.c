/*-------------------------------------------------------------------------
 * status.c
 *		"coord-agent status": the state of the coordination database for a
 *		person at a terminal -- queues, held and awaited locks, running jobs
 *		and, once apps exist, the grid of apps by periods.
 *
 * Everything comes from the public views (coord.queue_stats, coord.locks,
 * coord.jobs) and, only if it exists, coord.grid(); the function is looked
 * up with to_regprocedure so that this works against a pg_coord without
 * apps.  The statements are protocol.c's (proto_status_*, which say what
 * columns they return); this file connects, checks and prints.  Every text from the database is printed with its control
 * characters escaped (a job's task name could carry terminal escapes), and
 * the session has the agent's statement_timeout and lock_timeout, so that
 * a lock held elsewhere cannot hang it.  Colour (ANSI) only when stdout is
 * a terminal, and never with --no-color or NO_COLOR set: piped output stays
 * plain text.
 *
 * The views are coord_monitor's, not coord_worker's: the privileges are
 * checked first, a section the role may not read says so instead of
 * failing, and the run ends with the GRANT that would show it all (exit
 * STATUS_DENIED, not 1, which is for no connection or a failed query).
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_agent.h"
#include "cli.h"
#include "protocol.h"

static bool use_color;

static const char *
col(const char *code)
{
	return use_color ? code : "";
}

static const char *
reset(void)
{
	return use_color ? C_RESET : "";
}

static void
section(const char *title)
{
	printf("\n%s%s%s\n", col(C_BOLD), title, reset());
}

/* An error for stderr: no password, no control character. */
static void
print_error(const char *what, const char *msg)
{
	char	   *esc = cli_error(msg);

	fprintf(stderr, "coord-agent status: %s%s\n", what, esc);
	free(esc);
}

/* A cell: the value with its control characters escaped. */
static char *
cell(const PGresult *res, int r, int c)
{
	return escape_text(PQgetvalue(res, r, c));
}

/* A query's result, or NULL (its error printed, *ok false) if it failed. */
static PGresult *
checked(PGconn *conn, PGresult *res, bool *ok)
{
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		print_error("", PQerrorMessage(conn));
		PQclear(res);
		*ok = false;
		return NULL;
	}
	return res;
}

/* An age in milliseconds (text, maybe empty) for people. */
static char *
age_text(const char *ms)
{
	char		b[32];

	if (ms == NULL || *ms == '\0')
		return xstrdup("");
	return xstrdup(format_duration(strtoll(ms, NULL, 10), b, sizeof(b)));
}

/*
 * What this role may read: set once per run from has_*_privilege, so that a
 * role without coord_monitor gets one clear line per section rather than the
 * server's "permission denied" for each.
 */
typedef struct Access
{
	char	   *role;			/* current_user, escaped for printing */
	char	   *grantee;		/* current_user, quote_ident'ed and escaped */
	bool		queue_stats;
	bool		jobs;
	bool		jobs_payload;	/* coord_monitor reads no payload column */
	bool		locks;
	bool		grid_exists;
	bool		grid;
	bool		denied;			/* some section was not shown */
} Access;

/* A section the role may not read: says so, and what grants it. */
static bool
denied(Access *acc, bool allowed, const char *object)
{
	if (allowed)
		return false;
	printf("  %s(role %s may not read %s: needs coord_monitor)%s\n", col(C_YELLOW), acc->role, object, reset());
	acc->denied = true;
	return true;
}

/*
 * A section's table (show_table): its columns, the line said when there is
 * no row, and the colours of a row (NULL: none).  Every table's last
 * column is an age in milliseconds (proto_status_*), printed for people;
 * the columns before it are the result's, escaped.
 */
typedef struct StatusTable
{
	int			ncols;
	const char *const *headers;
	const bool *right;			/* right-aligned columns */
	const char *empty;			/* the line when there is no row */
	/* colours of row r's cells (made already; each colour starts NULL) */
	void		(*colors) (const PGresult *res, int r, char *const *cells,
						   const char **colors);
} StatusTable;

/*
 * Prints a query's result (NULL: it failed, and said so) as the table t;
 * returns how many rows it printed.  The caller clears the result.
 */
static int
show_table(const PGresult *res, const StatusTable *t)
{
	int			n,
				r,
				c;
	char	  **cells;
	const char **colors;

	if (res == NULL)
		return 0;
	n = PQntuples(res);
	if (n == 0)
	{
		printf("  %s\n", t->empty);
		return 0;
	}
	cells = xmalloc(sizeof(char *) * n * t->ncols);
	colors = xmalloc(sizeof(char *) * n * t->ncols);
	for (r = 0; r < n; r++)
	{
		char	  **row = cells + r * t->ncols;
		const char **rowc = colors + r * t->ncols;

		for (c = 0; c < t->ncols - 1; c++)
		{
			row[c] = cell(res, r, c);
			rowc[c] = NULL;
		}
		row[c] = age_text(PQgetvalue(res, r, c));
		rowc[c] = NULL;
		if (t->colors)
			t->colors(res, r, row, rowc);
	}
	{
		Table		tab = {t->ncols, t->headers, t->right, n, cells, colors};

		print_table(&tab, 2, use_color, term_width());
	}
	for (r = 0; r < n * t->ncols; r++)
		free(cells[r]);
	free(cells);
	free(colors);
	return n;
}

/* Queues: the names cyan, ready work yellow when it has waited over a minute. */
static void
queue_colors(const PGresult *res, int r, char *const *cells, const char **colors)
{
	long long	oldest = strtoll(PQgetvalue(res, r, 6), NULL, 10);

	colors[6] = oldest > 60000 ? C_YELLOW : NULL;
	colors[0] = C_CYAN;
	if (atoll(cells[1]) > 0)
		colors[1] = oldest > 60000 ? C_YELLOW : NULL;
	if (atoll(cells[2]) > 0)
		colors[2] = C_GREEN;
	if (atoll(cells[4]) > 0)
		colors[4] = C_RED;
}

static void
show_queues(PGconn *conn, Access *acc, bool *ok)
{
	static const char *const headers[] = {"QUEUE", "READY", "RUNNING", "SCHEDULED", "DEAD", "DONE/1H", "OLDEST READY"};
	static const bool right[] = {false, true, true, true, true, true, true};
	static const StatusTable table = {7, headers, right, "(no queue has jobs)", queue_colors};
	PGresult   *res;

	section("Queues");
	if (denied(acc, acc->queue_stats, "coord.queue_stats"))
		return;
	res = checked(conn, proto_status_queues(conn), ok);
	show_table(res, &table);
	PQclear(res);
}

static void
show_running(PGconn *conn, Access *acc, bool *ok)
{
	static const char *const headers[] = {"JOB", "QUEUE", "TASK", "ATTEMPT", "TARGET HOST", "RUNNING FOR"};
	static const bool right[] = {true, false, false, true, false, true};
	static const StatusTable table = {6, headers, right, "(none)", NULL};
	PGresult   *res;
	int			n;

	section("Running jobs");
	if (denied(acc, acc->jobs, "coord.jobs"))
		return;
	/* the task is named in the payload, which only coord_admin may read */
	res = checked(conn, proto_status_running(conn, acc->jobs_payload), ok);
	n = show_table(res, &table);
	if (n > 0 && atoll(PQgetvalue(res, 0, 6)) > n)
		printf("  ... and %lld more\n", atoll(PQgetvalue(res, 0, 6)) - n);
	PQclear(res);
}

/* Locks: the paths cyan, held green, awaited yellow. */
static void
lock_colors(const PGresult *res, int r, char *const *cells, const char **colors)
{
	bool		held = strcmp(PQgetvalue(res, r, 2), "held") == 0;

	(void) cells;
	colors[0] = C_CYAN;
	colors[2] = held ? C_GREEN : C_YELLOW;
}

static void
show_locks(PGconn *conn, Access *acc, bool *ok)
{
	static const char *const headers[] = {"PATH", "MODE", "STATE", "PID", "APPLICATION", "CLIENT", "WAITING FOR"};
	static const bool right[] = {false, false, false, true, false, false, true};
	static const StatusTable table = {7, headers, right, "(no lock is held or awaited)", lock_colors};
	PGresult   *res;

	section("Locks");
	if (denied(acc, acc->locks, "coord.locks"))
		return;
	res = checked(conn, proto_status_locks(conn), ok);
	show_table(res, &table);
	PQclear(res);
}

/*
 * The apps x periods grid, if this pg_coord has coord.grid(); its lines as
 * they come (with no app defined, one line that says so).
 */
static void
show_grid(PGconn *conn, Access *acc, bool *ok)
{
	PGresult   *res;
	int			n,
				r,
				c;

	if (!acc->grid_exists)
		return;
	section("Apps (last day)");
	if (denied(acc, acc->grid, "coord.grid()"))
		return;
	res = checked(conn, proto_status_grid(conn), ok);
	if (res == NULL)
		return;
	n = PQntuples(res);
	if (n == 0)
		printf("  (no app runs)\n");
	for (r = 0; r < n; r++)
	{
		printf("  ");
		for (c = 0; c < PQnfields(res); c++)
		{
			char	   *v = cell(res, r, c);

			printf("%s%s", c ? " " : "", v);
			free(v);
		}
		printf("\n");
	}
	PQclear(res);
}

/* What the role may read (an object this pg_coord does not have: false). */
static bool
load_access(PGconn *conn, Access *acc, bool *ok)
{
	PGresult   *res = checked(conn, proto_status_access(conn), ok);

	if (res == NULL)
		return false;
	acc->role = cell(res, 0, 0);
	acc->grantee = cell(res, 0, 1);
	acc->queue_stats = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
	acc->jobs = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
	acc->locks = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
	acc->grid_exists = strcmp(PQgetvalue(res, 0, 5), "t") == 0;
	acc->grid = strcmp(PQgetvalue(res, 0, 6), "t") == 0;
	acc->jobs_payload = strcmp(PQgetvalue(res, 0, 7), "t") == 0;
	acc->denied = false;
	PQclear(res);
	return true;
}

/*
 * Exit status: 0 all shown; 1 no connection, no pg_coord, or a query
 * failed; STATUS_DENIED the role may not read some sections (coord_monitor
 * grants them all).
 */
int
status_run(const char *conninfo, bool color, msec_t statement_timeout, msec_t lock_timeout)
{
	PGconn	   *conn;
	char	   *err = NULL;
	PGresult   *res;
	bool		ok = true;
	Access		acc;

	cli_conninfo = conninfo;
	conn = cli_connect("coord-agent status", &err);
	use_color = color;
	if (conn == NULL)
	{
		fprintf(stderr, "coord-agent status: could not connect: %s\n", err);
		free(err);
		return 1;
	}
	res = proto_status_limits(conn, statement_timeout, lock_timeout);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		print_error("", PQerrorMessage(conn));
		PQclear(res);
		PQfinish(conn);
		return 1;
	}
	PQclear(res);
	res = checked(conn, proto_status_header(conn), &ok);
	if (res == NULL)
	{
		PQfinish(conn);
		return 1;
	}
	if (PQgetisnull(res, 0, 0))
	{
		char	   *db = cell(res, 0, 1);

		fprintf(stderr, "coord-agent status: the pg_coord extension is not installed in database \"%s\"\n", db);
		free(db);
		PQclear(res);
		PQfinish(conn);
		return 1;
	}
	{
		char	   *v = cell(res, 0, 0),
				   *db = cell(res, 0, 1),
				   *h = escape_text(PQhost(conn) ? PQhost(conn) : "localhost");

		printf("%spg_coord %s%s, database %s on %s, %s\n", col(C_BOLD), v, reset(), db, h,
			   PQgetvalue(res, 0, 2));
		free(v);
		free(db);
		free(h);
	}
	PQclear(res);

	if (!load_access(conn, &acc, &ok))
	{
		PQfinish(conn);
		return 1;
	}
	show_queues(conn, &acc, &ok);
	show_running(conn, &acc, &ok);
	show_locks(conn, &acc, &ok);
	show_grid(conn, &acc, &ok);
	PQfinish(conn);
	fflush(stdout);				/* the advice comes after the sections */
	if (acc.denied)
		fprintf(stderr, "coord-agent status: role %s may not read all of pg_coord's views; "
				"status needs the privileges of coord_monitor, which a superuser grants with: "
				"GRANT coord_monitor TO %s;\n", acc.role, acc.grantee);
	free(acc.role);
	free(acc.grantee);
	if (!ok)
		return 1;
	return acc.denied ? STATUS_DENIED : 0;
}
