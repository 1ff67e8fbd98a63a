/*-------------------------------------------------------------------------
 * serve_pages.c
 *		"coordctl serve": the pages.  Each page is a few sections, each one
 *		statement over pg_coord's public views; the same statements answer
 *		/api/<page>.json (wrapped in json_agg: one JSON object, a key per
 *		section) and the HTML page (rendered here, every value escaped).
 *
 * The role the dashboard connects as decides what it shows: coord.jobs
 * withholds payload, result, last_error and progress from coord_monitor
 * (column privileges), so the statements name only the columns the role
 * may read (readable_columns), and a page the role may not read at all says
 * which GRANT it needs.  Action buttons appear only when the role may
 * execute the function the action calls (serve_priv: has_function_privilege
 * on each, asked once per request), and never with --read-only; the POST
 * itself is checked again by the database (serve.c).
 *
 * Statements run with search_path pg_catalog, pg_temp (serve.c) and name
 * the coord schema; per-queue counts come from coord.queue_stats (one
 * grouped pass, not a statement per queue).
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "cli.h"
#include "serve_int.h"

/* type oids of the values that get special rendering */
#define BOOLOID			16
#define JSONOID			114
#define JSONBOID		3802
#define TIMESTAMPTZOID	1184
#define INTERVALOID		1186

typedef void (*RenderFn) (ServeReq *r, PGresult *res);

typedef struct Section
{
	const char *key;			/* the JSON key */
	const char *title;			/* an <h2>, or NULL */
	char	   *sql;			/* malloc'd */
	int			nparams;
	const char *params[6];
	RenderFn	render;			/* NULL: a plain table */
	bool		single;			/* JSON: the first row as an object, or null */
	const char *empty;			/* HTML when there is no row */
} Section;

#define MAX_SECTIONS 4

typedef struct Page
{
	const char *title;
	int			nsec;
	Section		sec[MAX_SECTIONS];
	void		(*before) (ServeReq *r);	/* HTML above the sections */
	void		(*after) (ServeReq *r); /* HTML below them */
	int			status_if_empty;	/* e.g. 404 for a job that is not there */
} Page;

static Section *
add_section(Page *p, const char *key, const char *title, char *sql, RenderFn render)
{
	Section    *s = &p->sec[p->nsec++];

	memset(s, 0, sizeof(*s));
	s->key = key;
	s->title = title;
	s->sql = sql;
	s->render = render;
	s->empty = "None.";
	return s;
}

/* ---------- the session ---------- */

PGresult *
serve_query(ServeReq *r, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = PQexecParams(r->conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return res;
	{
		const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		snprintf(r->sqlstate, sizeof(r->sqlstate), "%s", code ? code : "");
		snprintf(r->errmsg, sizeof(r->errmsg), "%s",
				 msg ? msg : PQerrorMessage(r->conn));
	}
	PQclear(res);
	return NULL;
}

/*
 * What the role may do and read.  to_regprocedure/to_regclass: NULL (not
 * allowed) for an object an older pg_coord does not have.
 */
bool
serve_priv(ServeReq *r)
{
	static const char *sql =
	"SELECT current_user, "
	"COALESCE(has_function_privilege(to_regprocedure('coord.retry(bigint)'), 'EXECUTE'), false), "
	"COALESCE(has_function_privilege(to_regprocedure('coord.cancel(bigint)'), 'EXECUTE'), false), "
	"COALESCE(has_function_privilege(to_regprocedure('coord.pause(text, timestamp with time zone, text)'), 'EXECUTE'), false), "
	"COALESCE(has_function_privilege(to_regprocedure('coord.resume(text, text)'), 'EXECUTE'), false), "
	"COALESCE(has_function_privilege(to_regprocedure('coord.rerun(text, timestamp with time zone, timestamp with time zone, boolean)'), 'EXECUTE'), false), "
	"COALESCE(has_column_privilege(to_regclass('coord.jobs'), 'payload', 'SELECT'), false), "
	"COALESCE(has_column_privilege(to_regclass('coord.jobs'), 'result', 'SELECT'), false), "
	"COALESCE(has_column_privilege(to_regclass('coord.jobs'), 'last_error', 'SELECT'), false), "
	"COALESCE(has_column_privilege(to_regclass('coord.jobs'), 'progress', 'SELECT'), false), "
	"COALESCE(has_table_privilege(to_regclass('coord.job_parents'), 'SELECT'), false), "
	"COALESCE(has_table_privilege(to_regclass('coord.elections'), 'SELECT'), false), "
	"COALESCE(has_table_privilege(to_regclass('coord.metrics'), 'SELECT'), false), "
	"COALESCE(has_function_privilege(to_regprocedure('coord.metrics_queues()'), 'EXECUTE'), false), "
	"to_regclass('coord.jobs') IS NOT NULL";
	PGresult   *res = serve_query(r, sql, 0, NULL);
	bool	   *flags[] = {&r->priv.retry, &r->priv.cancel, &r->priv.pause, &r->priv.resume,
		&r->priv.rerun, &r->priv.payload, &r->priv.result, &r->priv.last_error,
		&r->priv.progress, &r->priv.parents, &r->priv.elections, &r->priv.metrics,
	&r->priv.metrics_queues};

	if (!res)
		return false;
	snprintf(r->priv.user, sizeof(r->priv.user), "%s", PQgetvalue(res, 0, 0));
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		*flags[i] = strcmp(PQgetvalue(res, 0, i + 1), "t") == 0;
	if (strcmp(PQgetvalue(res, 0, 14), "t") != 0)
	{
		PQclear(res);
		snprintf(r->sqlstate, sizeof(r->sqlstate), "42P01");
		snprintf(r->errmsg, sizeof(r->errmsg),
				 "pg_coord is not installed in this database (CREATE EXTENSION pg_coord)");
		return false;
	}
	PQclear(res);
	return true;
}

/*
 * "a, b, c": the columns of view the role may read, but those in skip (a
 * comma-separated list), in the view's order; NULL (r->errmsg set) when it
 * may read none.
 */
static char *
readable_columns(ServeReq *r, const char *view, const char *skip)
{
	const char *params[2] = {view, skip};
	PGresult   *res = serve_query(r,
								  "SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) "
								  "FROM pg_attribute AS a "
								  "WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped "
								  "AND a.attname <> ALL (string_to_array($2, ',')::name[]) "
								  "AND has_column_privilege(a.attrelid, a.attnum, 'SELECT')",
								  2, params);
	char	   *cols;

	if (!res)
		return NULL;
	if (PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		snprintf(r->sqlstate, sizeof(r->sqlstate), "42501");
		snprintf(r->errmsg, sizeof(r->errmsg), "permission denied for view %s", view);
		return NULL;
	}
	cols = xstrdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return cols;
}

/* ---------- cells ---------- */

static int
colnum(PGresult *res, const char *name)
{
	return PQfnumber(res, name);
}

static const char *
val(PGresult *res, int row, const char *name)
{
	int			c = colnum(res, name);

	if (c < 0 || PQgetisnull(res, row, c))
		return NULL;
	return PQgetvalue(res, row, c);
}

/* A state as a badge; its class from letters only. */
static void
badge(Buf *b, const char *state)
{
	bputs(b, "<span class=\"badge s-");
	for (const char *p = state; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			buf_append(b, p, 1);
	bputs(b, "\">");
	html_esc(b, state);
	bputs(b, "</span>");
}

/* The text of a value without the fractions of a second (timestamps, intervals). */
static void
no_fraction(Buf *b, const char *v)
{
	const char *p = v;

	while (*p)
	{
		if (*p == '.' && p > v && p[-1] >= '0' && p[-1] <= '9' && p[1] >= '0' && p[1] <= '9')
		{
			p++;
			while (*p >= '0' && *p <= '9')
				p++;
			continue;
		}
		{
			char		one[2] = {*p, 0};

			html_esc(b, one);
		}
		p++;
	}
}

static void
job_link(Buf *b, const char *id)
{
	bputs(b, "<a href=\"/jobs/");
	url_esc(b, id);
	bputs(b, "\">");
	html_esc(b, id);
	bputs(b, "</a>");
}

/* One value, linked where it names a job or a queue. */
static void
cell_content(Buf *b, PGresult *res, int row, int col)
{
	const char *name = PQfname(res, col);
	const char *v = PQgetvalue(res, row, col);
	Oid			type = PQftype(res, col);

	if (PQgetisnull(res, row, col))
		bputs(b, "&mdash;");
	else if (strcmp(name, "id") == 0 || strcmp(name, "job_id") == 0 ||
			 strcmp(name, "callback_job") == 0 || strcmp(name, "parent") == 0)
		job_link(b, v);
	else if (strcmp(name, "queue") == 0 || strcmp(name, "callback_queue") == 0)
	{
		bputs(b, "<a href=\"/jobs?queue=");
		url_esc(b, v);
		bputs(b, "\">");
		html_esc(b, v);
		bputs(b, "</a>");
	}
	else if (strcmp(name, "state") == 0 || strcmp(name, "last_state") == 0)
		badge(b, v);
	else if (type == BOOLOID)
		bputs(b, v[0] == 't' ? "yes" : "no");
	else if (type == TIMESTAMPTZOID || type == INTERVALOID)
		no_fraction(b, v);
	else if (type == JSONOID || type == JSONBOID || strchr(v, '\n') || strlen(v) > 80)
	{
		bputs(b, "<pre>");
		html_esc(b, v);
		bputs(b, "</pre>");
	}
	else
		html_esc(b, v);
}

static void
td(Buf *b, PGresult *res, int row, int col)
{
	bool		null = PQgetisnull(res, row, col);

	/* cells keep to one line, but long texts (errors, details), which wrap */
	bprintf(b, "<td%s>", null ? " class=\"null\"" :
			cli_numeric_type(PQftype(res, col)) ? " class=\"num\"" :
			PQgetlength(res, row, col) > 40 || strstr(PQfname(res, col), "error") ||
			strcmp(PQfname(res, col), "detail") == 0 ? " class=\"wrap\"" : "");
	cell_content(b, res, row, col);
	bputs(b, "</td>");
}

/* A column's name as a header: its '_' shown as blanks, where it may wrap. */
static void
header(Buf *b, const char *name)
{
	bputs(b, "<th>");
	for (const char *p = name; *p; p++)
	{
		if (*p == '_')
			bputs(b, " ");
		else
		{
			char		one[2] = {*p, 0};

			html_esc(b, one);
		}
	}
	bputs(b, "</th>");
}

typedef void (*ActionsFn) (ServeReq *r, PGresult *res, int row);

/* A table of every column; actions adds a last column of buttons. */
static void
table(ServeReq *r, PGresult *res, ActionsFn actions)
{
	Buf		   *b = &r->out;
	int			ncols = PQnfields(res);

	bputs(b, "<div class=\"scroll\"><table><thead><tr>");
	for (int c = 0; c < ncols; c++)
		header(b, PQfname(res, c));
	if (actions)
		bputs(b, "<th></th>");
	bputs(b, "</tr></thead><tbody>\n");
	for (int row = 0; row < PQntuples(res); row++)
	{
		bputs(b, "<tr>");
		for (int c = 0; c < ncols; c++)
			td(b, res, row, c);
		if (actions)
		{
			bputs(b, "<td class=\"actions\">");
			actions(r, res, row);
			bputs(b, "</td>");
		}
		bputs(b, "</tr>\n");
	}
	bputs(b, "</tbody></table></div>\n");
}

static void
plain_table(ServeReq *r, PGresult *res)
{
	table(r, res, NULL);
}

/* ---------- actions (buttons) ---------- */

static void
job_buttons(ServeReq *r, const char *id, const char *state)
{
	if (!r->actions || !id || !state)
		return;
	if (r->priv.retry && strcmp(state, "dead") == 0)
	{
		html_form_begin(r, "/jobs/%s/retry", id);
		bputs(&r->out, "<button type=\"submit\" name=\"do\" value=\"retry\">Retry</button></form>");
	}
	if (r->priv.cancel && (strcmp(state, "ready") == 0 || strcmp(state, "scheduled") == 0 ||
						   strcmp(state, "waiting") == 0 || strcmp(state, "running") == 0))
	{
		html_form_begin(r, "/jobs/%s/cancel", id);
		bputs(&r->out, "<button type=\"submit\" class=\"danger\" name=\"do\" value=\"cancel\">Cancel</button></form>");
	}
}

static bool
any_job_action(ServeReq *r)
{
	return r->actions && (r->priv.retry || r->priv.cancel);
}

static void
job_row_actions(ServeReq *r, PGresult *res, int row)
{
	job_buttons(r, val(res, row, "id"), val(res, row, "state"));
}

static void
pause_form(ServeReq *r, const char *queue, const char *key)
{
	html_form_begin(r, "/queues/%s/pause", queue);
	if (key)
	{
		bputs(&r->out, "<input type=\"hidden\" name=\"key\" value=\"");
		html_esc(&r->out, key);
		bputs(&r->out, "\">");
	}
	bputs(&r->out, "<button type=\"submit\">Pause</button></form>");
}

static void
resume_form(ServeReq *r, const char *queue, const char *key)
{
	html_form_begin(r, "/queues/%s/resume", queue);
	if (key)
	{
		bputs(&r->out, "<input type=\"hidden\" name=\"key\" value=\"");
		html_esc(&r->out, key);
		bputs(&r->out, "\">");
	}
	bputs(&r->out, "<button type=\"submit\">Resume</button></form>");
}

/* ---------- / (queues) ---------- */

static void
queue_actions(ServeReq *r, PGresult *res, int row)
{
	const char *q = val(res, row, "queue");

	if (!q)
		return;
	if (val(res, row, "paused_until"))
	{
		if (r->priv.resume)
			resume_form(r, q, NULL);
	}
	else if (r->priv.pause)
		pause_form(r, q, NULL);
}

/* rate: done per minute of each row (NULL: no such column) */
static void
render_queue_table(ServeReq *r, PGresult *res, char **rate)
{
	Buf		   *b = &r->out;
	bool		acts = r->actions && (r->priv.pause || r->priv.resume);
	int			ncols = PQnfields(res);
	int			dead = colnum(res, "dead");
	int			paused = colnum(res, "paused_until");

	bputs(b, "<div class=\"scroll\"><table id=\"queues\"><thead><tr>");
	for (int c = 0; c < ncols; c++)
		header(b, PQfname(res, c));
	if (rate)
		bputs(b, "<th title=\"jobs completed per minute, since this dashboard's earlier sample\">done/min</th>");
	if (acts)
		bputs(b, "<th></th>");
	bputs(b, "</tr></thead><tbody>\n");
	for (int row = 0; row < PQntuples(res); row++)
	{
		const char *q = PQgetvalue(res, row, 0);

		bputs(b, "<tr>");
		for (int c = 0; c < ncols; c++)
		{
			if (c == dead && strcmp(PQgetvalue(res, row, c), "0") != 0)
			{
				bputs(b, "<td class=\"num\"><a class=\"badge s-dead\" href=\"/jobs?state=dead&amp;queue=");
				url_esc(b, q);
				bputs(b, "\">");
				html_esc(b, PQgetvalue(res, row, c));
				bputs(b, "</a></td>");
			}
			else if (c == paused && !PQgetisnull(res, row, c))
			{
				bputs(b, "<td><span class=\"badge s-paused\">paused</span> ");
				if (strcmp(PQgetvalue(res, row, c), "infinity") == 0)
					bputs(b, "until resumed");
				else
				{
					bputs(b, "until ");
					no_fraction(b, PQgetvalue(res, row, c));
				}
				bputs(b, "</td>");
			}
			else
				td(b, res, row, c);
		}
		if (rate)
			bprintf(b, "<td class=\"%s\">%s</td>", rate[row] ? "num" : "null",
					rate[row] ? rate[row] : "&mdash;");
		if (acts)
		{
			bputs(b, "<td class=\"actions\">");
			queue_actions(r, res, row);
			bputs(b, "</td>");
		}
		bputs(b, "</tr>\n");
	}
	bputs(b, "</tbody></table></div>\n");
}

static void
render_queues(ServeReq *r, PGresult *res)
{
	render_queue_table(r, res, NULL);
}

static void
limit_actions(ServeReq *r, PGresult *res, int row)
{
	const char *q = val(res, row, "queue");
	const char *key = val(res, row, "limit_key");

	if (q && val(res, row, "paused_until") && r->priv.resume)
		resume_form(r, q, key);
}

static void
render_limits(ServeReq *r, PGresult *res)
{
	table(r, res, r->actions && r->priv.resume ? limit_actions : NULL);
}

static void
queues_after(ServeReq *r)
{
	if (!r->actions || !r->priv.pause)
		return;
	/* a queue or one key of it, for a while or until resumed */
	bputs(&r->out, "<h2>Pause</h2><form class=\"search\" method=\"post\" id=\"pause-form\" "
		  "action=\"/queues/-/pause\"><input type=\"hidden\" name=\"csrf\" value=\"");
	html_esc(&r->out, r->csrf);
	bputs(&r->out, "\"><input name=\"queue\" placeholder=\"queue\" required>"
		  "<input name=\"key\" placeholder=\"limit key (optional)\">"
		  "<input name=\"until\" placeholder=\"until (optional timestamp)\">"
		  "<button type=\"submit\">Pause</button></form>\n");
}

/*
 * Throughput: jobs completed per minute, from the completed counters of
 * coord.metrics_queues() sampled by this process (one thread: no lock).
 * The rate is over the time since the base sample, which is replaced once
 * it is 5 minutes old; the first overview after the start shows none.
 */
#define RATE_MAX_QUEUES 4096
typedef struct RateSample
{
	msec_t		at;
	int			n;
	char	  **queue;
	double	   *completed;
} RateSample;

static RateSample rate_base;

static void
rate_forget(RateSample *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->queue[i]);
	free(s->queue);
	free(s->completed);
	memset(s, 0, sizeof(*s));
}

/* The rate of each row (NULL: none yet), then the base renewed if old. */
static char **
rates(PGresult *res)
{
	int			n = PQntuples(res);
	int			qc = colnum(res, "queue");
	int			cc = colnum(res, "completed_total");
	msec_t		now = now_ms();
	char	  **out = calloc(n ? n : 1, sizeof(char *));

	if (!out || qc < 0 || cc < 0)
		return out;
	if (rate_base.n > 0 && now - rate_base.at >= 5000)
	{
		/* both lists are in queue order: one merge pass */
		int			j = 0;

		for (int i = 0; i < n; i++)
		{
			const char *q = PQgetvalue(res, i, qc);

			while (j < rate_base.n && strcmp(rate_base.queue[j], q) < 0)
				j++;
			if (j < rate_base.n && strcmp(rate_base.queue[j], q) == 0 && !PQgetisnull(res, i, cc))
			{
				double		d = atof(PQgetvalue(res, i, cc)) - rate_base.completed[j];

				if (d >= 0)
					out[i] = xasprintf("%.1f", d * 60000.0 / (double) (now - rate_base.at));
			}
		}
	}
	if (rate_base.n == 0 || now - rate_base.at >= 300000)
	{
		rate_forget(&rate_base);
		if (n > RATE_MAX_QUEUES)
			return out;
		rate_base.at = now;
		rate_base.queue = xmalloc(sizeof(char *) * (n ? n : 1));
		rate_base.completed = xmalloc(sizeof(double) * (n ? n : 1));
		for (int i = 0; i < n; i++)
		{
			rate_base.queue[i] = xstrdup(PQgetvalue(res, i, qc));
			rate_base.completed[i] = PQgetisnull(res, i, cc) ? 0 : atof(PQgetvalue(res, i, cc));
		}
		rate_base.n = n;
	}
	return out;
}

static void
render_queues_rated(ServeReq *r, PGresult *res)
{
	char	  **rate = rates(res);

	render_queue_table(r, res, rate);
	if (!rate)
		return;
	for (int i = 0; i < PQntuples(res); i++)
		free(rate[i]);
	free(rate);
}

static void
page_queues(ServeReq *r, Page *p)
{
	p->title = "Queues";
	if (r->priv.metrics_queues)

		/*
		 * coord.metrics_queues(): the counts without a pass over every job (a
		 * snapshot taken by coord.tick when the jobs are many), and the
		 * counters; the pauses from coord.limits
		 */
		add_section(p, "queues", NULL,
					xstrdup("SELECT COALESCE(q.queue, f.queue) AS queue, COALESCE(q.ready, 0) AS ready, "
							"COALESCE(q.scheduled, 0) AS scheduled, COALESCE(q.running, 0) AS running, "
							"COALESCE(q.waiting, 0) AS waiting, COALESCE(q.dead, 0) AS dead, "
							"make_interval(secs => round(q.oldest_ready_age)) AS oldest_ready_age, "
							"COALESCE(q.completed, 0) AS completed_total, COALESCE(q.failed, 0) AS failed_total, "
							"f.paused_until, COALESCE(f.paused_keys, 0) AS paused_keys "
							"FROM coord.metrics_queues() AS q FULL JOIN ("
							"SELECT l.queue, max(l.paused_until) FILTER (WHERE l.limit_key IS NULL) AS paused_until, "
							"count(*) FILTER (WHERE l.limit_key IS NOT NULL AND l.paused_until IS NOT NULL) AS paused_keys "
							"FROM coord.limits AS l GROUP BY l.queue) AS f ON f.queue = q.queue "
		/* byte order: rates() merges with the last sample by strcmp */
							"ORDER BY COALESCE(q.queue, f.queue) COLLATE \"C\""),
					render_queues_rated)->empty = "No queue has a job.";
	else
		add_section(p, "queues", NULL,
					xstrdup("SELECT queue, ready, scheduled, running, dead, done_last_hour, "
							"date_trunc('second', oldest_ready_age) AS oldest_ready_age, paused_until, "
							"paused_keys, limited_keys FROM coord.queue_stats ORDER BY queue"),
					render_queues)->empty = "No queue has a job.";
	add_section(p, "limits", "Limits and paused keys",
				xstrdup("SELECT queue, limit_key, concurrency, running, rate, per, "
						"round(tokens::numeric, 2) AS tokens, paused_until "
						"FROM coord.limits ORDER BY queue, limit_key NULLS FIRST"),
				render_limits)->empty = "No limit, no pause.";
	p->after = queues_after;
}

/* ---------- /jobs ---------- */

static const char *
arg(ServeReq *r, const char *name)
{
	const char *v = MHD_lookup_connection_value(r->mhd, MHD_GET_ARGUMENT_KIND, name);

	return v && v[0] ? v : NULL;
}

static bool
all_digits(const char *s)
{
	if (!s || !*s || strlen(s) > 18)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static void
jobs_before(ServeReq *r)
{
	static const char *states[] = {"", "waiting", "scheduled", "ready", "running", "done",
	"dead", "cancelled"};
	const char *state = arg(r, "state");
	const char *fields[][2] = {{"id", "job id"}, {"key", "key"}, {"queue", "queue"}};

	bputs(&r->out, "<form class=\"search\" method=\"get\" action=\"/jobs\">");
	for (size_t i = 0; i < 3; i++)
	{
		const char *v = arg(r, fields[i][0]);

		bprintf(&r->out, "<input name=\"%s\" placeholder=\"%s\" value=\"", fields[i][0], fields[i][1]);
		html_esc(&r->out, v ? v : "");
		bputs(&r->out, "\">");
	}
	bputs(&r->out, "<select name=\"state\">");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		bprintf(&r->out, "<option value=\"%s\"%s>%s</option>", states[i],
				state && strcmp(state, states[i]) == 0 ? " selected" : "",
				states[i][0] ? states[i] : "any state");
	bputs(&r->out, "</select><button type=\"submit\">Find</button></form>\n");
}

static void
render_jobs(ServeReq *r, PGresult *res)
{
	table(r, res, any_job_action(r) ? job_row_actions : NULL);
}

static void
page_jobs(ServeReq *r, Page *p)
{
	Section    *s;
	const char *id = arg(r, "id");
	const char *limit = arg(r, "limit");

	p->title = "Jobs";
	p->before = jobs_before;
	s = add_section(p, "jobs", NULL,
					xasprintf("SELECT id, queue, state, key, priority, "
							  "attempt::text || '/' || max_attempts::text AS attempts, run_at, "
							  "finished_at%s FROM coord.jobs "
							  "WHERE ($1::bigint IS NULL OR id = $1::bigint) "
							  "AND ($2::text IS NULL OR key = $2) AND ($3::text IS NULL OR queue = $3) "
							  "AND ($4::text IS NULL OR state = $4) "
							  "ORDER BY id DESC LIMIT least(greatest(COALESCE($5::bigint, 100), 1), 1000)",
							  r->priv.last_error ? ", left(last_error, 120) AS last_error" : ""),
					render_jobs);
	s->nparams = 5;
	/* not a number: no job (an id is a bigint), not an error */
	s->params[0] = id ? (all_digits(id) ? id : "-1") : NULL;
	s->params[1] = arg(r, "key");
	s->params[2] = arg(r, "queue");
	s->params[3] = arg(r, "state");
	s->params[4] = all_digits(limit) ? limit : NULL;
	s->empty = "No job matches.";
}

/* ---------- /jobs/<id> ---------- */

static void
render_job(ServeReq *r, PGresult *res)
{
	Buf		   *b = &r->out;

	if (PQntuples(res) == 0)
		return;
	bputs(b, "<dl class=\"kv\" id=\"job\">");
	for (int c = 0; c < PQnfields(res); c++)
	{
		bputs(b, "<dt>");
		html_esc(b, PQfname(res, c));
		bputs(b, "</dt><dd>");
		cell_content(b, res, 0, c);
		bputs(b, "</dd>");
	}
	if (!(r->priv.payload && r->priv.result && r->priv.last_error && r->priv.progress))
		bputs(b, "<dt>hidden</dt><dd class=\"hint\">payload, result, last_error and progress "
			  "are for coord_admin (or the role that enqueued the job: coord.my_jobs)</dd>");
	if (!r->priv.parents)
		bputs(b, "<dt>parents</dt><dd class=\"hint\">shown to a role that may read coord.job_parents</dd>");
	bputs(b, "</dl>\n");
	if (any_job_action(r))
	{
		bputs(b, "<p>");
		job_buttons(r, val(res, 0, "id"), val(res, 0, "state"));
		bputs(b, "</p>");
	}
}

static void
page_job(ServeReq *r, Page *p, const char *id)
{
	Section    *s;
	char	   *cols;

	p->title = "Job";
	if (!all_digits(id))
	{
		snprintf(r->sqlstate, sizeof(r->sqlstate), "22P02");
		snprintf(r->errmsg, sizeof(r->errmsg), "a job id is a number");
		return;
	}
	/* every column the role may read but the claim's token */
	cols = readable_columns(r, "coord.jobs", "token");
	if (!cols)
		return;
	s = add_section(p, "job", NULL, xasprintf("SELECT %s FROM coord.jobs WHERE id = $1::bigint", cols),
					render_job);
	free(cols);
	s->nparams = 1;
	s->params[0] = id;
	s->single = true;
	s->empty = "No such job (never enqueued, or purged from the history).";
	p->status_if_empty = 404;
	if (r->priv.parents)
	{
		s = add_section(p, "parents", "Parents",
						xstrdup("SELECT d.parent, j.queue, j.state, d.ended "
								"FROM coord.job_parents AS d LEFT JOIN coord.jobs AS j ON j.id = d.parent "
								"WHERE d.job = $1::bigint ORDER BY d.parent"),
						plain_table);
		s->nparams = 1;
		s->params[0] = id;
		s->empty = "None waited for (a job's parents are kept until it finishes).";
	}
}

/* ---------- /apps (the grid) ---------- */

static int
state_rank(const char *s)
{
	static const char *order[] = {"late", "dead", "running", "ready", "scheduled", "waiting",
	"missing", "done", "cancelled"};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (strcmp(s, order[i]) == 0)
			return (int) i;
	return 99;
}

static char
state_symbol(const char *s)
{
	switch (state_rank(s))
	{
		case 0:
			return '!';
		case 1:
			return 'X';
		case 2:
			return '>';
		case 3:
			return '.';
		case 4:
			return ':';
		case 5:
			return 'w';
		case 6:
			return '?';
		case 7:
			return '#';
		case 8:
			return 'c';
		default:
			return ' ';
	}
}

/*
 * Rows (app, col, hour, state, period_start, job_id), ordered by app and
 * col; col -1 rows carry the hour labels (one per column).  One row of the
 * table per app, one cell per hour: the worst state of the runs that
 * overlap it.
 */
static void
render_grid(ServeReq *r, PGresult *res)
{
	Buf		   *b = &r->out;
	int			n = PQntuples(res);
	int			ncols = 0;
	int			row = 0;

	while (row < n && strcmp(PQgetvalue(res, row, 1), "-1") != 0)
		row++;
	for (int i = 0; i < n; i++)
		if (strcmp(PQgetvalue(res, i, 1), "-1") == 0)
			ncols++;
	bputs(b, "<div class=\"scroll\"><table class=\"grid\" id=\"grid\"><thead><tr><th>app</th>");
	for (int i = 0; i < n; i++)
		if (strcmp(PQgetvalue(res, i, 1), "-1") == 0)
		{
			bputs(b, "<th class=\"h\" title=\"");
			html_esc(b, PQgetvalue(res, i, 2));
			bputs(b, "\">");
			html_esc(b, PQgetvalue(res, i, 2) + 11);	/* "HH" of "YYYY-MM-DD
														 * HH" */
			bputs(b, "</th>");
		}
	if (r->actions && r->priv.rerun)
		bputs(b, "<th></th>");
	bputs(b, "</tr></thead><tbody>\n");
	row = 0;
	while (row < n)
	{
		const char *app;
		int			col = 0;

		if (PQgetisnull(res, row, 0))
		{
			row++;
			continue;
		}
		app = PQgetvalue(res, row, 0);
		bputs(b, "<tr><th>");
		html_esc(b, app);
		bputs(b, "</th>");
		while (col < ncols)
		{
			int			best = -1;

			for (; row < n && !PQgetisnull(res, row, 0) && strcmp(PQgetvalue(res, row, 0), app) == 0 &&
				 atoi(PQgetvalue(res, row, 1)) == col; row++)
				if (best < 0 || state_rank(PQgetvalue(res, row, 3)) < state_rank(PQgetvalue(res, best, 3)))
					best = row;
			if (best < 0)
				bputs(b, "<td class=\"c\"></td>");
			else
			{
				const char *st = PQgetvalue(res, best, 3);

				/* the badge inside the cell: a cell itself stays a table cell */
				bputs(b, "<td class=\"c\"><span class=\"badge s-");
				for (const char *q = st; *q; q++)
					if (*q >= 'a' && *q <= 'z')
						buf_append(b, q, 1);
				bputs(b, "\" title=\"");
				html_esc(b, app);
				bputs(b, " ");
				html_esc(b, PQgetvalue(res, best, 4));
				bputs(b, ": ");
				html_esc(b, st);
				bputs(b, "\">");
				if (!PQgetisnull(res, best, 5))
				{
					bputs(b, "<a href=\"/jobs/");
					url_esc(b, PQgetvalue(res, best, 5));
					bprintf(b, "\">%c</a>", state_symbol(st));
				}
				else
					bprintf(b, "%c", state_symbol(st));
				bputs(b, "</span></td>");
			}
			col++;
		}
		/* rows of this app past the last column (none expected) */
		while (row < n && !PQgetisnull(res, row, 0) && strcmp(PQgetvalue(res, row, 0), app) == 0)
			row++;
		if (r->actions && r->priv.rerun)
		{
			bputs(b, "<td class=\"actions\">");
			html_form_begin(r, "/apps/%s/rerun", app);
			bputs(b, "<input type=\"hidden\" name=\"from\" value=\"");
			html_esc(b, PQgetvalue(res, 0, 6));
			bputs(b, "\"><input type=\"hidden\" name=\"to\" value=\"");
			html_esc(b, PQgetvalue(res, 0, 7));
			bputs(b, "\"><button type=\"submit\" title=\"coord.rerun over the grid's hours\">Rerun</button></form></td>");
		}
		bputs(b, "</tr>\n");
	}
	bputs(b, "</tbody></table></div>\n<p class=\"hint\">! late (open deadline alert) &middot; X dead &middot; "
		  "&gt; running &middot; . ready &middot; : scheduled &middot; w waiting &middot; ? missing "
		  "&middot; # done &middot; c cancelled</p>\n");
}

static void
apps_before(ServeReq *r)
{
	const char *h = arg(r, "hours");

	bputs(&r->out, "<form class=\"search\" method=\"get\" action=\"/apps\">hours "
		  "<input name=\"hours\" size=\"4\" value=\"");
	html_esc(&r->out, h ? h : "24");
	bputs(&r->out, "\"><button type=\"submit\">Show</button></form>\n");
}

static void
page_apps(ServeReq *r, Page *p)
{
	Section    *s;
	const char *hours = arg(r, "hours");

	p->title = "Apps";
	p->before = apps_before;

	/*
	 * The hours (col -1 rows, the labels) and the current runs overlapping
	 * them; late: unfinished with an open deadline alert (coord.grid's rule).
	 */
	s = add_section(p, "grid", NULL, xstrdup(
											 "WITH w AS (SELECT least(greatest(COALESCE($1::int, 24), 1), 336) AS n, "
											 "date_trunc('hour', now()) AS t1), "
											 "h AS (SELECT i, w.t1 - (w.n - 1 - i) * interval '1 hour' AS t FROM w, generate_series(0, w.n - 1) AS i), "
											 "cells AS ("
											 "SELECT r.app, h.i AS col, NULL::text AS hour, "
											 "CASE WHEN r.state = ANY ('{scheduled,ready,running,missing,waiting}') AND EXISTS ("
											 "SELECT 1 FROM coord.alerts AS a WHERE a.app = r.app AND a.period_start = r.period_start "
											 "AND a.kind = 'deadline' AND a.cleared_at IS NULL) THEN 'late' ELSE r.state END AS state, "
											 "r.period_start, r.job_id "
											 "FROM coord.runs AS r JOIN h ON r.period_start < h.t + interval '1 hour' AND r.period_end > h.t "
											 "WHERE r.current "
											 "UNION ALL SELECT NULL, -1, to_char(h.t, 'YYYY-MM-DD HH24'), NULL, NULL, NULL FROM h) "
											 "SELECT c.app, c.col, c.hour, c.state, c.period_start, c.job_id, "
											 "(SELECT min(t) FROM h) AS grid_from, (SELECT max(t) + interval '1 hour' FROM h) AS grid_to "
											 "FROM cells AS c ORDER BY c.app NULLS FIRST, c.col, c.hour, c.period_start"),
					render_grid);
	s->nparams = 1;
	s->params[0] = all_digits(hours) ? hours : NULL;
	add_section(p, "alerts", "Open alerts",
				xstrdup("SELECT app, period_start, kind, raised_at, detail, events FROM coord.alerts "
						"WHERE cleared_at IS NULL ORDER BY raised_at DESC LIMIT 100"),
				plain_table)->empty = "No open alert.";
}

/* ---------- the plain pages ---------- */

static void
render_locks(ServeReq *r, PGresult *res)
{
	plain_table(r, res);
}

/* Members with their owned share drawn against their weight's. */
static void
render_members(ServeReq *r, PGresult *res)
{
	Buf		   *b = &r->out;
	int			own = colnum(res, "owned_share");
	int			tgt = colnum(res, "target_share");

	table(r, res, NULL);
	if (own < 0 || tgt < 0 || PQntuples(res) == 0)
		return;
	bputs(b, "<h2>Shares against weights</h2><div class=\"scroll\"><table id=\"shares\"><thead><tr><th>group</th><th>member</th>"
		  "<th>owned share / target share</th></tr></thead><tbody>");
	for (int row = 0; row < PQntuples(res); row++)
	{
		double		o = PQgetisnull(res, row, own) ? 0 : atof(PQgetvalue(res, row, own));
		double		t = PQgetisnull(res, row, tgt) ? 0 : atof(PQgetvalue(res, row, tgt));

		bputs(b, "<tr><td>");
		html_esc(b, PQgetvalue(res, row, colnum(res, "partition_group")));
		bputs(b, "</td><td>");
		html_esc(b, PQgetvalue(res, row, colnum(res, "member")));

		/*
		 * SVG attributes, not style attributes: the CSP allows no inline
		 * style
		 */
		bprintf(b, "</td><td><svg class=\"bars\" width=\"300\" height=\"22\">"
				"<rect class=\"own\" x=\"0\" y=\"1\" width=\"%d\" height=\"9\"></rect>"
				"<rect class=\"target\" x=\"0\" y=\"12\" width=\"%d\" height=\"9\"></rect></svg> "
				"owned %.0f%% &middot; target %.0f%%</td></tr>",
				(int) (o * 300 + 0.5), (int) (t * 300 + 0.5), o * 100, t * 100);
	}
	bputs(b, "</tbody></table></div>\n");
}

static void
elections_before(ServeReq *r)
{
	const char *name = arg(r, "election");

	bputs(&r->out, "<form class=\"search\" method=\"get\" action=\"/elections\">"
		  "<input name=\"election\" placeholder=\"election\" value=\"");
	html_esc(&r->out, name ? name : "");
	bputs(&r->out, "\"><button type=\"submit\">Who leads?</button></form>\n");
}

static void
page_elections(ServeReq *r, Page *p)
{
	Section    *s;
	const char *name = arg(r, "election");

	p->title = "Elections";
	p->before = elections_before;
	if (name)
	{
		/* coord.leader is coord_monitor's: any election by its name */
		s = add_section(p, "elections", NULL,
						xstrdup("SELECT $1::text AS election, l.term, l.value, l.pid, l.since "
								"FROM (SELECT 1) AS one LEFT JOIN coord.leader($1) AS l ON true"),
						plain_table);
		s->nparams = 1;
		s->params[0] = name;
	}
	else if (r->priv.elections)
		add_section(p, "elections", NULL,
					xstrdup("SELECT e.election, l.term, l.value, l.pid, l.since, "
							"e.term AS last_term, e.since AS last_since "
							"FROM coord.elections AS e LEFT JOIN LATERAL coord.leader(e.election) AS l ON true "
							"ORDER BY e.election"),
					plain_table)->empty = "No election.";
	else if (r->priv.metrics)
		/* the metrics view reads the elections table as its owner */
		add_section(p, "elections", NULL,
					xstrdup("SELECT e.election, l.term, l.value, l.pid, l.since "
							"FROM (SELECT DISTINCT m.labels ->> 'election' AS election FROM coord.metrics AS m "
							"WHERE m.labels ? 'election') AS e "
							"LEFT JOIN LATERAL coord.leader(e.election) AS l ON true ORDER BY e.election"),
					plain_table)->empty = "No election.";
	else
		add_section(p, "elections", NULL,
					xstrdup("SELECT NULL::text AS election WHERE false"), plain_table)->empty =
			"This role may not list the elections: ask for one by its name.";
}

static void
page_simple(ServeReq *r, Page *p, const char *title, const char *key, const char *view,
			const char *skip, const char *order, RenderFn render)
{
	char	   *cols = readable_columns(r, view, skip);

	p->title = title;
	if (!cols)
		return;
	add_section(p, key, NULL, xasprintf("SELECT %s FROM %s %s", cols, view, order), render);
	free(cols);
}

/* ---------- the driver ---------- */

/* JSON: {"key": [rows...], ...}, each section's rows from json_agg. */
static bool
run_json(ServeReq *r, Page *p)
{
	bputs(&r->out, "{");
	for (int i = 0; i < p->nsec; i++)
	{
		Section    *s = &p->sec[i];
		char	   *sql = xasprintf(s->single ?
									"SELECT (SELECT row_to_json(t) FROM (%s) AS t LIMIT 1)::text" :
									"SELECT COALESCE(json_agg(t), '[]'::json)::text FROM (%s) AS t",
									s->sql);
		PGresult   *res = serve_query(r, sql, s->nparams, s->params);

		free(sql);
		if (!res)
			return false;
		if (i)
			bputs(&r->out, ", ");
		json_esc(&r->out, s->key);
		bputs(&r->out, ": ");
		if (PQgetisnull(res, 0, 0))
		{
			bputs(&r->out, "null");
			if (p->status_if_empty && i == 0)
				r->status = p->status_if_empty;
		}
		else
			bputs(&r->out, PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	bputs(&r->out, "}\n");
	r->content_type = "application/json";
	return true;
}

static bool
run_html(ServeReq *r, Page *p)
{
	html_begin(r, p->title);
	if (p->before)
		p->before(r);
	for (int i = 0; i < p->nsec; i++)
	{
		Section    *s = &p->sec[i];
		PGresult   *res = serve_query(r, s->sql, s->nparams, s->params);

		if (!res)
			return false;
		if (s->title)
		{
			bputs(&r->out, "<h2>");
			html_esc(&r->out, s->title);
			bputs(&r->out, "</h2>\n");
		}
		if (PQntuples(res) == 0)
		{
			bputs(&r->out, "<p class=\"hint\">");
			html_esc(&r->out, s->empty);
			bputs(&r->out, "</p>\n");
			if (p->status_if_empty && i == 0)
				r->status = p->status_if_empty;
		}
		else
			(s->render ? s->render : plain_table) (r, res);
		PQclear(res);
	}
	if (p->after)
		p->after(r);
	html_end(r);
	return true;
}

/*
 * r->path is a page's path (a JSON request's too); the answer goes into
 * r->out, r->status and r->content_type.
 */
void
serve_page(ServeReq *r)
{
	Page		p = {0};
	const char *path = r->path;
	bool		ok;

	r->status = 200;
	if (strcmp(path, "/") == 0 || strcmp(path, "/queues") == 0)
		page_queues(r, &p);
	else if (strcmp(path, "/jobs") == 0)
		page_jobs(r, &p);
	else if (strncmp(path, "/jobs/", 6) == 0)
		page_job(r, &p, path + 6);
	else if (strcmp(path, "/batches") == 0)
		page_simple(r, &p, "Batches", "batches", "coord.batches", "", "ORDER BY batch DESC LIMIT 500",
					plain_table);
	else if (strcmp(path, "/schedules") == 0)
		page_simple(r, &p, "Schedules", "schedules", "coord.schedules", "", "ORDER BY next_run_at, name",
					plain_table);
	else if (strcmp(path, "/apps") == 0)
		page_apps(r, &p);
	else if (strcmp(path, "/locks") == 0)
		page_simple(r, &p, "Locks", "locks", "coord.locks", "key",
					"ORDER BY path, granted DESC, wait_start NULLS FIRST LIMIT 1000", render_locks);
	else if (strcmp(path, "/elections") == 0)
		page_elections(r, &p);
	else if (strcmp(path, "/groups") == 0)
		page_simple(r, &p, "Groups", "members", "coord.members", "",
					"ORDER BY partition_group, member", render_members);
	else if (strcmp(path, "/alerts") == 0)
		page_simple(r, &p, "Alerts", "alerts", "coord.alerts", "",
					"ORDER BY cleared_at IS NULL DESC, raised_at DESC LIMIT 500", plain_table);
	else
	{
		html_error(r, 404, "Not found", NULL, "There is no such page.");
		return;
	}
	if (r->errmsg[0])
		ok = false;
	else if (r->json)
		ok = run_json(r, &p);
	else
		ok = run_html(r, &p);
	for (int i = 0; i < p.nsec; i++)
		free(p.sec[i].sql);
	if (!ok)
	{
		int			status = strcmp(r->sqlstate, "42501") == 0 ? 403 :
		strcmp(r->sqlstate, "22P02") == 0 ? 400 : 500;
		char	   *msg = xstrdup(r->errmsg);

		html_error(r, status, status == 403 ? "Not allowed" : "Error", r->sqlstate, msg);
		free(msg);
	}
}
