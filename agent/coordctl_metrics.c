/*-------------------------------------------------------------------------
 * coordctl_metrics.c
 *		"coordctl metrics" and the renderer it shares with serve's GET
 *		/metrics (coordctl_metrics.h): the view coord.metrics in the
 *		Prometheus text exposition format 0.0.4.
 *
 * The view has a row per sample: metric, labels (a JSON object), value,
 * kind (counter, gauge, ...) and help, ordered by metric, so that the
 * samples of one metric come together, under one # HELP and one # TYPE (the
 * format requires it).  The labels come as the text jsonb prints, a flat
 * object of strings, read here (put_labels): spreading them over rows with
 * jsonb_each_text cost the server 130 ms of a 160 ms read of 10,000
 * samples.  The escaping the format asks for (a label value's \, " and
 * newline; HELP's \ and newline) and the names it accepts are this file's.
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordctl.h"
#include "coordctl_metrics.h"

/* a row per sample, in the view's order (by metric) */
static const char metrics_sql[] =
"SELECT s.metric, s.kind, s.help, s.value, s.labels::pg_catalog.text FROM coord.metrics AS s";

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

static const char *
skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static int
hex4(const char *p)
{
	int			v = 0,
				i;

	for (i = 0; i < 4; i++)
	{
		char		c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* code point cp as UTF-8 */
static void
put_utf8(Buf *b, unsigned cp)
{
	char		u[4];
	size_t		n;

	if (cp < 0x80)
	{
		u[0] = (char) cp;
		n = 1;
	}
	else if (cp < 0x800)
	{
		u[0] = (char) (0xC0 | (cp >> 6));
		u[1] = (char) (0x80 | (cp & 0x3F));
		n = 2;
	}
	else if (cp < 0x10000)
	{
		u[0] = (char) (0xE0 | (cp >> 12));
		u[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char) (0x80 | (cp & 0x3F));
		n = 3;
	}
	else
	{
		u[0] = (char) (0xF0 | (cp >> 18));
		u[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char) (0x80 | (cp & 0x3F));
		n = 4;
	}
	buf_append(b, u, n);
}

/*
 * A JSON string at *pp (its opening quote), unescaped into out (reset
 * first); *pp past its closing quote.  NULL on malformed input.
 */
static const char *
json_string(const char **pp, Buf *out)
{
	const char *p = *pp;

	buf_reset(out);
	buf_append(out, "", 0);
	if (*p++ != '"')
		return NULL;
	while (*p != '"')
	{
		const char *run = p;

		while (*p && *p != '"' && *p != '\\')
			p++;
		buf_append(out, run, p - run);
		if (*p == '\0')
			return NULL;
		if (*p == '\\')
		{
			int			cp;

			switch (p[1])
			{
				case '"':
				case '\\':
				case '/':
					buf_append(out, p + 1, 1);
					break;
				case 'b':
					buf_append(out, "\b", 1);
					break;
				case 'f':
					buf_append(out, "\f", 1);
					break;
				case 'n':
					buf_append(out, "\n", 1);
					break;
				case 'r':
					buf_append(out, "\r", 1);
					break;
				case 't':
					buf_append(out, "\t", 1);
					break;
				case 'u':
					if ((cp = hex4(p + 2)) < 0)
						return NULL;
					p += 4;
					/* a surrogate pair: one code point */
					if (cp >= 0xD800 && cp < 0xDC00 && p[2] == '\\' && p[3] == 'u')
					{
						int			lo = hex4(p + 4);

						if (lo >= 0xDC00 && lo < 0xE000)
						{
							cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
							p += 6;
						}
					}
					put_utf8(out, (unsigned) cp);
					break;
				default:
					return NULL;
			}
			p += 2;
		}
	}
	*pp = p + 1;
	return out->data;
}

/* one label of a sample: its name, its value escaped as the format asks */
typedef struct Label
{
	char	   *name;
	char	   *value;
} Label;

static int
label_cmp(const void *a, const void *b)
{
	return strcmp(((const Label *) a)->name, ((const Label *) b)->name);
}

/*
 * A sample's labels, as jsonb prints a flat object ({"k": "v", ...}):
 * {k="v",...} appended to b, sorted by name (jsonb keeps its keys by
 * length), nothing for {}.  A value that is not a string (a number, true,
 * false, null) goes in as printed.  False on anything else (coord.metrics
 * has only flat objects of strings).
 */
static bool
put_labels(Buf *b, const char *json)
{
	const char *p = skip_ws(json);
	Buf			s = {0},
				v = {0};
	Label	   *labels = NULL;
	size_t		n = 0,
				cap = 0,
				i;
	bool		ok = false;

	if (*p++ != '{')
		return false;
	p = skip_ws(p);
	if (*p == '}')
		return true;
	for (;;)
	{
		if (json_string(&p, &s) == NULL)
			break;
		if (n == cap)
		{
			cap = cap ? cap * 2 : 4;
			labels = xrealloc(labels, cap * sizeof(Label));
		}
		buf_reset(&v);
		put_name(&v, s.data, true);
		labels[n].name = xstrdup(v.data);
		labels[n].value = NULL;
		n++;
		p = skip_ws(p);
		if (*p++ != ':')
			break;
		p = skip_ws(p);
		buf_reset(&v);
		buf_append(&v, "", 0);
		if (*p == '"')
		{
			if (json_string(&p, &s) == NULL)
				break;
			put_escaped(&v, s.data, true);
		}
		else
		{
			const char *tok = p;

			while (*p && *p != ',' && *p != '}' && *p != ' ')
				p++;
			if (p == tok)
				break;
			buf_append(&v, tok, p - tok);
		}
		labels[n - 1].value = xstrdup(v.data);
		p = skip_ws(p);
		if (*p == ',')
		{
			p = skip_ws(p + 1);
			continue;
		}
		ok = *p == '}';
		break;
	}
	if (ok)
	{
		qsort(labels, n, sizeof(Label), label_cmp);
		for (i = 0; i < n; i++)
		{
			buf_append(b, i ? "," : "{", 1);
			buf_append(b, labels[i].name, strlen(labels[i].name));
			buf_append(b, "=\"", 2);
			buf_append(b, labels[i].value, strlen(labels[i].value));
			buf_append(b, "\"", 1);
		}
		buf_append(b, "}", 1);
	}
	for (i = 0; i < n; i++)
	{
		free(labels[i].name);
		free(labels[i].value);
	}
	free(labels);
	buf_free(&s);
	buf_free(&v);
	return ok;
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
	for (r = 0; r < n; r++)
	{
		const char *metric = PQgetvalue(res, r, 0);

		if (last_metric == NULL || strcmp(metric, last_metric) != 0)
		{
			buf_append(&b, "# HELP ", 7);
			put_name(&b, metric, false);
			buf_append(&b, " ", 1);
			put_escaped(&b, PQgetvalue(res, r, 2), false);
			buf_append(&b, "\n# TYPE ", 8);
			put_name(&b, metric, false);
			buf_append(&b, " ", 1);
			buf_append(&b, type_of(PQgetvalue(res, r, 1)), strlen(type_of(PQgetvalue(res, r, 1))));
			buf_append(&b, "\n", 1);
			last_metric = metric;
		}
		put_name(&b, metric, false);
		if (!PQgetisnull(res, r, 4) && !put_labels(&b, PQgetvalue(res, r, 4)))
		{
			char	   *shown = escape_text(PQgetvalue(res, r, 4));

			*errmsg = xasprintf("coord.metrics: the labels of a %s sample are not a flat JSON object: %.200s",
								metric, shown);
			free(shown);
			PQclear(res);
			buf_free(&b);
			return CLI_EXIT_ERROR;
		}
		buf_append(&b, " ", 1);
		put_value(&b, PQgetvalue(res, r, 3));
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
