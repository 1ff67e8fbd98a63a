/*-------------------------------------------------------------------------
 * coordctl_metrics.c
 *		"coordctl metrics" and the renderer it shares with serve's GET
 *		/metrics (coordctl_metrics.h): the view coord.metrics in the
 *		Prometheus text exposition format 0.0.4.
 *
 * The view has a row per sample: metric, labels (a JSON object), value,
 * kind (counter, gauge, ...) and help.  The statement spreads each
 * sample's labels over rows (jsonb_each_text, the keys sorted), so that no
 * JSON is parsed here; the escaping the format asks for (a label value's
 * \, " and newline; HELP's \ and newline) and names it accepts are this
 * file's.  Samples of one metric come together, under one # HELP and one
 * # TYPE (the format requires it).
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordctl.h"
#include "coordctl_metrics.h"

/* a row per (sample, label); a sample without labels has one row, key NULL */
static const char metrics_sql[] =
"SELECT m.n, m.metric, m.kind, m.help, m.value, l.key, l.value "
"FROM (SELECT pg_catalog.row_number() OVER (ORDER BY s.metric, s.labels::pg_catalog.text) AS n, s.* "
"      FROM coord.metrics AS s) AS m "
"LEFT JOIN LATERAL pg_catalog.jsonb_each_text(m.labels) AS l ON true "
"ORDER BY m.n, l.key";

/* A name as the format allows it: [a-zA-Z_:][a-zA-Z0-9_:]* (labels: no ':'). */
static void
put_name(Buf *b, const char *s, bool label)
{
	const char *p;

	if (*s == '\0' || (*s >= '0' && *s <= '9'))
		buf_append(b, "_", 1);
	for (p = s; *p; p++)
	{
		char		c = *p;
		bool		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '_' || (c == ':' && !label);

		buf_append(b, ok ? &c : "_", 1);
	}
}

/* Text with \ and newline escaped, and " too in a label value. */
static void
put_escaped(Buf *b, const char *s, bool quote)
{
	const char *p;

	for (p = s; *p; p++)
	{
		if (*p == '\\')
			buf_append(b, "\\\\", 2);
		else if (*p == '\n')
			buf_append(b, "\\n", 2);
		else if (*p == '"' && quote)
			buf_append(b, "\\\"", 2);
		else
			buf_append(b, p, 1);
	}
}

/* PostgreSQL's float8 text as Prometheus reads it */
static void
put_value(Buf *b, const char *v)
{
	if (strcmp(v, "Infinity") == 0)
		v = "+Inf";
	else if (strcmp(v, "-Infinity") == 0)
		v = "-Inf";
	else if (*v == '\0')
		v = "NaN";				/* a NULL value */
	buf_append(b, v, strlen(v));
}

static const char *
type_of(const char *kind)
{
	static const char *const kinds[] = {"counter", "gauge", "histogram", "summary", "untyped", NULL};
	int			i;

	for (i = 0; kinds[i]; i++)
		if (strcmp(kind, kinds[i]) == 0)
			return kinds[i];
	return "untyped";
}

/* *errmsg for a failed statement: names the GRANT for 42501 */
static int
render_error(PGconn *conn, PGresult *res, char **errmsg)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	char	   *msg = cli_error(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) ?
								PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) :
								PQerrorMessage(conn));

	if (state && strcmp(state, "42501") == 0)
	{
		PGresult   *who = PQexec(conn, "SELECT pg_catalog.quote_ident(current_user::pg_catalog.text)");
		char	   *name = escape_text(PQresultStatus(who) == PGRES_TUPLES_OK ? PQgetvalue(who, 0, 0) : "ROLE");

		*errmsg = xasprintf("%s: reading coord.metrics needs coord_monitor, which a superuser grants with: "
							"GRANT coord_monitor TO %s;", msg, name);
		free(name);
		free(msg);
		PQclear(who);
		return CLI_EXIT_PRIVILEGE;
	}
	if (state && strcmp(state, "42P01") == 0)
	{
		*errmsg = xasprintf("%s (coord.metrics came with pg_coord 0.4.0: ALTER EXTENSION pg_coord UPDATE)", msg);
		free(msg);
		return CLI_EXIT_ERROR;
	}
	*errmsg = msg;
	return CLI_EXIT_ERROR;
}

int
metrics_render(PGconn *conn, char **out, size_t *outlen, char **errmsg)
{
	PGresult   *res = PQexec(conn, metrics_sql);
	Buf			b = {0};
	const char *last_metric = NULL;
	int			n,
				r;

	*out = NULL;
	*outlen = 0;
	*errmsg = NULL;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		int			rc = render_error(conn, res, errmsg);

		PQclear(res);
		return rc;
	}
	buf_append(&b, "", 0);
	n = PQntuples(res);
	for (r = 0; r < n;)
	{
		const char *sample = PQgetvalue(res, r, 0);
		const char *metric = PQgetvalue(res, r, 1);
		bool		first = true;

		if (last_metric == NULL || strcmp(metric, last_metric) != 0)
		{
			buf_append(&b, "# HELP ", 7);
			put_name(&b, metric, false);
			buf_append(&b, " ", 1);
			put_escaped(&b, PQgetvalue(res, r, 3), false);
			buf_append(&b, "\n# TYPE ", 8);
			put_name(&b, metric, false);
			buf_append(&b, " ", 1);
			buf_append(&b, type_of(PQgetvalue(res, r, 2)), strlen(type_of(PQgetvalue(res, r, 2))));
			buf_append(&b, "\n", 1);
			last_metric = metric;
		}
		put_name(&b, metric, false);
		/* the sample's labels: its consecutive rows */
		for (; r < n && strcmp(PQgetvalue(res, r, 0), sample) == 0; r++)
		{
			if (PQgetisnull(res, r, 5))
				continue;
			buf_append(&b, first ? "{" : ",", 1);
			put_name(&b, PQgetvalue(res, r, 5), true);
			buf_append(&b, "=\"", 2);
			put_escaped(&b, PQgetvalue(res, r, 6), true);
			buf_append(&b, "\"", 1);
			first = false;
		}
		if (!first)
			buf_append(&b, "}", 1);
		buf_append(&b, " ", 1);
		put_value(&b, PQgetvalue(res, r - 1, 4));
		buf_append(&b, "\n", 1);
	}
	PQclear(res);
	*out = b.data;
	*outlen = b.len;
	return 0;
}

int
ctl_metrics(int argc, char **argv)
{
	char	  **args;
	int			nargs,
				rc;
	PGconn	   *conn;
	char	   *text,
			   *err;
	size_t		len;

	if ((rc = ctl_begin(argc, argv, NULL, "[--json]", 0, 0, -1, &args, &nargs, &conn)) >= 0)
		return rc;
	free(args);
	if (ctl_json)
		rc = ctl_list(conn, "SELECT metric, labels, value, kind, help FROM coord.metrics ORDER BY metric, labels::pg_catalog.text",
					  0, NULL, "coord_monitor", "[]");
	else if ((rc = metrics_render(conn, &text, &len, &err)) == 0)
	{
		fwrite(text, 1, len, stdout);
		free(text);
	}
	else
	{
		fprintf(stderr, "coordctl metrics: %s\n", err);
		free(err);
	}
	PQfinish(conn);
	return rc;
}
