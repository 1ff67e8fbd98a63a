/*-------------------------------------------------------------------------
 * coordctl_query.c
 *		What every coordctl subcommand uses (coordctl.h): its options, the
 *		session, statements whose missing privilege becomes exit 3 with the
 *		GRANT that fixes it, and results printed as tables or as JSON.
 *
 * JSON is the server's: a list is the query wrapped in json_agg (each row
 * an object, the view's column names, their JSON types), so that the
 * shapes docs/coordctl.md states are the views' and nothing here can
 * escape a value wrongly.  Tables print every text escaped (a payload or a
 * queue name could carry terminal escapes) and fit the terminal (cli.c).
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordctl.h"

static int	print_json(PGconn *conn, const char *sql, int nparams,
					   const char *const *params, const char *grant);

bool		ctl_json = false;
bool		ctl_color = false;
const char *ctl_cmd = "";

static void vsay(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void
vsay(const char *fmt, va_list ap)
{
	char	   *msg;
	char	   *esc;
	va_list		cp;
	int			n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	msg = xmalloc(n + 1);
	vsnprintf(msg, n + 1, fmt, ap);
	esc = cli_error(msg);
	fprintf(stderr, "coordctl %s: %s\n", ctl_cmd, esc);
	free(esc);
	free(msg);
}

int
ctl_usage(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try \"coordctl %s --help\" for more information.\n", ctl_cmd);
	return CLI_EXIT_USAGE;
}

int
ctl_fail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	return CLI_EXIT_ERROR;
}

/* The option of opts named by the word "--name" or "-c" (len: the name's). */
static const CtlOpt *
find_opt(const CtlOpt *opts, const char *word, size_t len)
{
	const CtlOpt *o;

	for (o = opts; o && o->name; o++)
	{
		if (word[1] == '-' && strlen(o->name) == len - 2 && strncmp(word + 2, o->name, len - 2) == 0)
			return o;
		if (word[1] != '-' && len == 2 && o->shortopt == word[1])
			return o;
	}
	return NULL;
}

int
ctl_parse(int argc, char **argv, const CtlOpt *opts, const char *usage_line,
		  int min_args, int max_args, char ***args, int *nargs)
{
	static bool help;
	static bool no_color;
	static const char *dbname;
	const CtlOpt common[] = {
		{"json", 0, NULL, &ctl_json},
		{"dbname", 'd', &dbname, NULL},
		{"no-color", 0, NULL, &no_color},
		{"help", 'h', NULL, &help},
		{NULL, 0, NULL, NULL}
	};
	bool		words_only = false;
	int			i;

	*args = xmalloc(sizeof(char *) * (argc + 1));
	*nargs = 0;
	help = false;
	dbname = NULL;
	for (i = 1; i < argc; i++)
	{
		char	   *w = argv[i];
		const char *eq;
		size_t		len;
		const CtlOpt *o;

		/* "-" alone and negative numbers are words, "--" ends the options */
		if (words_only || w[0] != '-' || w[1] == '\0' || (w[1] >= '0' && w[1] <= '9'))
		{
			(*args)[(*nargs)++] = w;
			continue;
		}
		if (strcmp(w, "--") == 0)
		{
			words_only = true;
			continue;
		}
		eq = w[1] == '-' ? strchr(w, '=') : NULL;
		len = eq ? (size_t) (eq - w) : strlen(w);
		if (w[1] != '-' && len > 2)
			len = 2;			/* -dVALUE */
		o = find_opt(opts, w, len);
		if (o == NULL)
			o = find_opt(common, w, len);
		if (o == NULL)
			return ctl_usage("unknown option \"%.*s\"", (int) len, w);
		if (o->value == NULL)
		{
			if (eq || (w[1] != '-' && w[2] != '\0'))
				return ctl_usage("option --%s takes no value", o->name);
			*o->flag = true;
			continue;
		}
		if (eq)
			*o->value = eq + 1;
		else if (w[1] != '-' && w[2] != '\0')
			*o->value = w + 2;
		else if (i + 1 < argc)
			*o->value = argv[++i];
		else
			return ctl_usage("option --%s needs a value", o->name);
	}
	if (dbname)
		cli_conninfo = dbname;
	if (no_color)
		ctl_color = false;
	if (help)
	{
		printf("Usage: coordctl %s %s\n(options of every subcommand: --json, -d CONNINFO, --no-color; man coordctl)\n",
			   ctl_cmd, usage_line);
		return 0;
	}
	if (*nargs < min_args)
		return ctl_usage("too few arguments (usage: coordctl %s %s)", ctl_cmd, usage_line);
	if (*nargs > max_args)
		return ctl_usage("too many arguments (usage: coordctl %s %s)", ctl_cmd, usage_line);
	return -1;
}

PGconn *
ctl_connect(int *rc)
{
	char	   *err = NULL;
	char	   *app = xasprintf("coordctl %s", ctl_cmd);
	PGconn	   *conn = cli_connect(app, &err);

	free(app);
	if (conn == NULL)
	{
		fprintf(stderr, "coordctl %s: could not connect: %s\n", ctl_cmd, err);
		free(err);
		*rc = CLI_EXIT_ERROR;
	}
	return conn;
}

bool
ctl_valid_id(const char *s)
{
	size_t		n = strspn(s, "0123456789");

	return n > 0 && n <= 18 && s[n] == '\0' && strspn(s, "0") < n;
}

int
ctl_begin(int argc, char **argv, const CtlOpt *opts, const char *usage_line,
		  int min_args, int max_args, int id_arg, char ***args, int *nargs, PGconn **conn)
{
	int			rc = ctl_parse(argc, argv, opts, usage_line, min_args, max_args, args, nargs);

	*conn = NULL;
	if (rc < 0 && id_arg >= 0 && !ctl_valid_id((*args)[id_arg]))
		rc = ctl_usage("a job id is a positive integer, not \"%s\"", (*args)[id_arg]);
	if (rc < 0 && (*conn = ctl_connect(&rc)) != NULL)
		return -1;
	free(*args);
	*args = NULL;
	return rc;
}

/* "GRANT role TO me", the role name quoted as an identifier */
static void
say_grant(PGconn *conn, const char *msg, const char *grant)
{
	PGresult   *res = PQexec(conn, "SELECT pg_catalog.quote_ident(current_user::pg_catalog.text)");
	char	   *who = escape_text(PQresultStatus(res) == PGRES_TUPLES_OK ? PQgetvalue(res, 0, 0) : "ROLE");
	char	   *esc = cli_error(msg);

	fprintf(stderr, "coordctl %s: %s\n", ctl_cmd, esc);
	fprintf(stderr, "coordctl %s: role %s lacks the privilege: it needs %s, which a superuser or %s's admin grants with: GRANT %s TO %s;\n",
			ctl_cmd, who, grant, grant, grant, who);
	free(esc);
	free(who);
	PQclear(res);
}

PGresult *
ctl_exec(PGconn *conn, const char *sql, int nparams, const char *const *params,
		 ExecStatusType want, const char *grant, int *rc)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	const char *state;

	if (PQresultStatus(res) == want)
		return res;
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	if (state && strcmp(state, "42501") == 0 && grant)
	{
		say_grant(conn, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), grant);
		*rc = CLI_EXIT_PRIVILEGE;
	}
	else
	{
		const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
		const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
		char	   *esc = cli_error(primary ? primary : PQerrorMessage(conn));

		fprintf(stderr, "coordctl %s: %s\n", ctl_cmd, esc);
		free(esc);
		if (detail)
		{
			esc = cli_error(detail);
			fprintf(stderr, "DETAIL: %s\n", esc);
			free(esc);
		}
		if (hint)
		{
			esc = cli_error(hint);
			fprintf(stderr, "HINT: %s\n", esc);
			free(esc);
		}
		*rc = CLI_EXIT_ERROR;
	}
	PQclear(res);
	return NULL;
}

int
ctl_print_json(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	return print_json(conn, sql, nparams, params, NULL);
}

/* The result's one JSON value (the first column of the first row) on stdout. */
static int
print_json(PGconn *conn, const char *sql, int nparams, const char *const *params,
		   const char *grant)
{
	int			rc = 0;
	PGresult   *res = ctl_exec(conn, sql, nparams, params, PGRES_TUPLES_OK, grant, &rc);

	if (res == NULL)
		return rc;
	if (PQntuples(res) > 0)
		printf("%s\n", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int
ctl_list(PGconn *conn, const char *sql, int nparams, const char *const *params,
		 const char *grant, const char *empty)
{
	PGresult   *res;
	int			rc = 0;
	int			n,
				nf,
				r,
				c;
	Table		t;
	char	  **headers;
	bool	   *right;

	if (ctl_json)
	{
		char	   *wrapped = xasprintf("SELECT COALESCE(pg_catalog.json_agg(q), '[]'::pg_catalog.json) FROM (%s) AS q", sql);

		rc = print_json(conn, wrapped, nparams, params, grant);
		free(wrapped);
		return rc;
	}
	res = ctl_exec(conn, sql, nparams, params, PGRES_TUPLES_OK, grant, &rc);
	if (res == NULL)
		return rc;
	n = PQntuples(res);
	nf = PQnfields(res);
	if (n == 0)
	{
		printf("%s\n", empty);
		PQclear(res);
		return 0;
	}
	headers = xmalloc(sizeof(char *) * nf);
	right = xmalloc(sizeof(bool) * nf);
	for (c = 0; c < nf; c++)
	{
		char	   *h = escape_text(PQfname(res, c));
		char	   *p;

		for (p = h; *p; p++)
			*p = (*p == '_') ? ' ' : (*p >= 'a' && *p <= 'z') ? *p - 32 : *p;
		headers[c] = h;
		right[c] = cli_numeric_type(PQftype(res, c));
	}
	t.ncols = nf;
	t.headers = (const char *const *) headers;
	t.right = right;
	t.nrows = n;
	t.cells = xmalloc(sizeof(char *) * n * nf);
	t.colors = NULL;
	for (r = 0; r < n; r++)
		for (c = 0; c < nf; c++)
			t.cells[r * nf + c] = escape_text(PQgetvalue(res, r, c));
	print_table(&t, 0, ctl_color, term_width());
	for (r = 0; r < n * nf; r++)
		free(t.cells[r]);
	for (c = 0; c < nf; c++)
		free(headers[c]);
	free(t.cells);
	free(headers);
	free(right);
	PQclear(res);
	return 0;
}

int
ctl_record(PGconn *conn, const char *sql, int nparams, const char *const *params,
		   const char *grant, const char *notfound)
{
	PGresult   *res;
	int			rc = 0;
	int			nf,
				c,
				w = 0;

	if (ctl_json)
	{
		char	   *wrapped = xasprintf("SELECT pg_catalog.row_to_json(q) FROM (%s) AS q", sql);

		res = ctl_exec(conn, wrapped, nparams, params, PGRES_TUPLES_OK, grant, &rc);
		free(wrapped);
	}
	else
		res = ctl_exec(conn, sql, nparams, params, PGRES_TUPLES_OK, grant, &rc);
	if (res == NULL)
		return rc;
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		return ctl_fail("%s", notfound);
	}
	if (ctl_json)
	{
		printf("%s\n", PQgetvalue(res, 0, 0));
		PQclear(res);
		return 0;
	}
	nf = PQnfields(res);
	for (c = 0; c < nf; c++)
		if (text_width(PQfname(res, c)) > w)
			w = text_width(PQfname(res, c));
	for (c = 0; c < nf; c++)
	{
		char	   *name = escape_text(PQfname(res, c));
		char	   *v = escape_text(PQgetvalue(res, 0, c));

		printf("%s%s:%s%*s%s\n", ctl_color ? C_DIM : "", name, ctl_color ? C_RESET : "",
			   w - text_width(name) + 1, "", v);
		free(name);
		free(v);
	}
	PQclear(res);
	return 0;
}

int
ctl_simple_list(int argc, char **argv, const char *sql, const char *grant, const char *empty)
{
	char	  **args;
	int			nargs,
				rc;
	PGconn	   *conn;

	if ((rc = ctl_begin(argc, argv, NULL, "", 0, 0, -1, &args, &nargs, &conn)) >= 0)
		return rc;
	free(args);
	rc = ctl_list(conn, sql, 0, NULL, grant, empty);
	PQfinish(conn);
	return rc;
}
