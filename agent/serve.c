/*-------------------------------------------------------------------------
 * serve.c
 *		"coordctl serve" (serve.h; docs/operations/dashboard.md): the web
 *		dashboard on libmicrohttpd.
 *
 * One process, one database session, one HTTP thread: libmicrohttpd's
 * internal polling thread calls answer() for every request, one at a time,
 * so the session (opened at start, opened again after it is lost) needs no
 * lock; the main thread only waits for SIGINT/SIGTERM.  Each request asks
 * the role's privileges (serve_priv), then runs its page's statements
 * (serve_pages.c).  The session has search_path pg_catalog, pg_temp and a
 * statement_timeout, so that a lock held elsewhere cannot hang the page.
 *
 * Security (docs/operations/dashboard.md, "Security model"):
 *  - it listens on 127.0.0.1 unless --listen says otherwise; while it
 *    listens on a loopback address, a request whose Host is not a loopback
 *    name is refused (421): a DNS-rebinding page cannot read it;
 *  - every change is a POST carrying the CSRF token, a secret drawn from
 *    /dev/urandom at start (forms carry it; a POST without it, or with
 *    another, gets 403), and a POST whose Origin is not this server gets
 *    403 too;
 *  - what a POST may do is the database's to say: it calls the function
 *    as the connected role, and 42501 (insufficient privilege) is a 403;
 *    the buttons are shown only where has_function_privilege allows, and
 *    --read-only shows none and refuses every POST (403);
 *  - every value is escaped (serve_html.c), pages forbid inline script and
 *    framing (Content-Security-Policy), answers are not cached.
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cli.h"
#include "coordctl_metrics.h"
#include "serve.h"
#include "serve_int.h"

#define POST_MAX		(16 * 1024)
#define CSRF_BYTES		32

static PGconn *conn;
static bool read_only;
static bool loopback;
static int	refresh_secs = 10;
static int	statement_timeout_ms = 10000;
static char csrf[CSRF_BYTES * 2 + 1];
static char origin_port[8];

/* The body of a POST, gathered over the calls of one request. */
typedef struct Upload
{
	Buf			body;
	bool		too_big;
} Upload;

static void
usage(FILE *f)
{
	fprintf(f,
			"Usage: coordctl [-d CONNINFO] serve [--listen HOST:PORT] [--read-only]\n"
			"                [--refresh SECONDS] [--statement-timeout MS]\n"
			"\n"
			"The pg_coord web dashboard, as the role it connects as.\n"
			"  --listen HOST:PORT     where to listen (default 127.0.0.1:8080; port 0: any free one)\n"
			"  --read-only            no action buttons; every POST is refused\n"
			"  --refresh SECONDS      pages reload their data this often (default 10; 0: never)\n"
			"  --statement-timeout MS each statement's limit (default 10000)\n");
}

/* ---------- the session ---------- */

static bool
session_ok(char **errmsg)
{
	PGresult   *res;
	char	   *set;

	if (conn && PQstatus(conn) == CONNECTION_OK)
		return true;
	if (conn)
		PQfinish(conn);
	conn = cli_connect("coordctl serve", errmsg);
	if (!conn)
		return false;
	set = xasprintf("SET search_path = pg_catalog, pg_temp; SET statement_timeout = %d; "
					"SET lock_timeout = %d; SET idle_in_transaction_session_timeout = 60000",
					statement_timeout_ms, statement_timeout_ms);
	res = PQexec(conn, set);
	free(set);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		*errmsg = cli_error(PQerrorMessage(conn));
		PQclear(res);
		PQfinish(conn);
		conn = NULL;
		return false;
	}
	PQclear(res);
	return true;
}

/* ---------- answers ---------- */

static enum MHD_Result
send_answer(struct MHD_Connection *mhd, int status, const char *type, const char *body,
			size_t len)
{
	struct MHD_Response *resp =
	MHD_create_response_from_buffer(len, (void *) body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "same-origin");
	MHD_add_response_header(resp, "Content-Security-Policy",
							"default-src 'none'; script-src 'self'; style-src 'self'; "
							"img-src 'self' data:; connect-src 'self'; form-action 'self'; "
							"frame-ancestors 'none'; base-uri 'none'");
	ret = MHD_queue_response(mhd, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
send_req(ServeReq *r)
{
	enum MHD_Result ret = send_answer(r->mhd, r->status, r->content_type,
									  r->out.data ? r->out.data : "", r->out.len);

	buf_free(&r->out);
	return ret;
}

/* ---------- checks ---------- */

/* Constant time: how long the comparison takes says nothing of the token. */
static bool
token_ok(const char *given)
{
	size_t		n = strlen(csrf);
	unsigned char diff = 0;

	if (!given || strlen(given) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char) given[i] ^ (unsigned char) csrf[i];
	return diff == 0;
}

/* "localhost", "127.0.0.1", "[::1]", with or without a port. */
static bool
loopback_host(const char *host)
{
	size_t		n;
	const char *colon;

	if (!host)
		return false;
	if (host[0] == '[')
		return strncmp(host, "[::1]", 5) == 0 && (host[5] == '\0' || host[5] == ':');
	colon = strchr(host, ':');
	n = colon ? (size_t) (colon - host) : strlen(host);
	return (n == 9 && strncmp(host, "localhost", 9) == 0) ||
		(n >= 4 && strncmp(host, "127.", 4) == 0 && strspn(host, "0123456789.") == n);
}

/* An Origin, when the browser sends one, must be this server. */
static bool
origin_ok(struct MHD_Connection *mhd)
{
	const char *origin = MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, "Origin");
	const char *host = MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, "Host");
	const char *rest;

	if (!origin)
		return true;
	if (!host)
		return false;
	if (strncmp(origin, "http://", 7) == 0)
		rest = origin + 7;
	else if (strncmp(origin, "https://", 8) == 0)
		rest = origin + 8;
	else
		return false;
	return strcmp(rest, host) == 0;
}

/* ---------- the POST body ---------- */

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The value of field name in an application/x-www-form-urlencoded body (malloc'd), or NULL. */
static char *
form_value(const Upload *up, const char *name)
{
	const char *p = up->body.data;
	const char *end = p ? p + up->body.len : NULL;
	size_t		nlen = strlen(name);

	while (p && p < end)
	{
		const char *amp = memchr(p, '&', end - p);
		const char *fend = amp ? amp : end;

		if ((size_t) (fend - p) > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=')
		{
			char	   *out = xmalloc(fend - p);
			char	   *w = out;

			for (const char *q = p + nlen + 1; q < fend; q++)
			{
				if (*q == '+')
					*w++ = ' ';
				else if (*q == '%' && q + 2 < fend && hexval(q[1]) >= 0 && hexval(q[2]) >= 0)
				{
					*w++ = (char) (hexval(q[1]) * 16 + hexval(q[2]));
					q += 2;
				}
				else
					*w++ = *q;
			}
			*w = '\0';
			if (strlen(out) != (size_t) (w - out))
			{
				free(out);		/* a NUL inside: not a value we pass on */
				return NULL;
			}
			return out;
		}
		p = amp ? amp + 1 : end;
	}
	return NULL;
}

static char *
nonempty(char *s)
{
	if (s && !s[0])
	{
		free(s);
		return NULL;
	}
	return s;
}

/* ---------- actions ---------- */

/*
 * POST /jobs/<id>/retry|cancel, /queues/<q>/pause|resume, /apps/<app>/rerun:
 * calls the function as the connected role and says what it did.
 */
static void
do_action(ServeReq *r, const Upload *up, const char *path)
{
	const char *slash = strrchr(path, '/');
	char	   *object = NULL;
	const char *verb = slash ? slash + 1 : "";
	const char *sql = NULL;
	const char *params[4] = {NULL, NULL, NULL, NULL};
	int			nparams = 1;
	char	   *key = NULL,
			   *until = NULL,
			   *from = NULL,
			   *to = NULL;
	const char *back = "/";
	char	   *backbuf = NULL;
	PGresult   *res;

	if (slash && strncmp(path, "/jobs/", 6) == 0 && slash > path + 6)
		object = strndup(path + 6, slash - (path + 6));
	else if (slash && strncmp(path, "/queues/", 8) == 0 && slash > path + 8)
		object = strndup(path + 8, slash - (path + 8));
	else if (slash && strncmp(path, "/apps/", 6) == 0 && slash > path + 6)
		object = strndup(path + 6, slash - (path + 6));
	params[0] = object;

	if (object && strncmp(path, "/jobs/", 6) == 0 && strspn(object, "0123456789") == strlen(object) &&
		strlen(object) <= 18)
	{
		if (strcmp(verb, "retry") == 0)
			sql = "SELECT coord.retry($1::bigint)";
		else if (strcmp(verb, "cancel") == 0)
			sql = "SELECT coord.cancel($1::bigint)";
		backbuf = xasprintf("/jobs/%s", object);
		back = backbuf;
	}
	else if (object && strncmp(path, "/queues/", 8) == 0)
	{
		/* the pause form of the queues page names its queue in a field */
		if (strcmp(object, "-") == 0)
		{
			free(object);
			object = nonempty(form_value(up, "queue"));
			params[0] = object;
		}
		key = nonempty(form_value(up, "key"));
		until = nonempty(form_value(up, "until"));
		if (strcmp(verb, "pause") == 0)
		{
			sql = "SELECT coord.pause($1, $2::timestamptz, $3)";
			params[1] = until;
			params[2] = key;
			nparams = 3;
		}
		else if (strcmp(verb, "resume") == 0)
		{
			sql = "SELECT coord.resume($1, $2)";
			params[1] = key;
			nparams = 2;
		}
	}
	else if (object && strncmp(path, "/apps/", 6) == 0 && strcmp(verb, "rerun") == 0)
	{
		from = nonempty(form_value(up, "from"));
		to = nonempty(form_value(up, "to"));
		sql = "SELECT coord.rerun($1, $2::timestamptz, $3::timestamptz)";
		params[1] = from;
		params[2] = to;
		nparams = 3;
		back = "/apps";
	}

	if (!sql || !params[0] || (nparams == 3 && strcmp(verb, "rerun") == 0 && (!from || !to)))
		html_error(r, 404, "Not found", NULL, "There is no such action (or a field it needs is missing).");
	else if ((res = serve_query(r, sql, nparams, params)) == NULL)
	{
		int			status = strcmp(r->sqlstate, "42501") == 0 ? 403 :
		strncmp(r->sqlstate, "22", 2) == 0 ? 400 :
		strncmp(r->sqlstate, "23", 2) == 0 || strncmp(r->sqlstate, "55", 2) == 0 ? 409 : 500;
		char	   *msg = xstrdup(r->errmsg);

		html_error(r, status, status == 403 ? "Not allowed" : "Action failed", r->sqlstate, msg);
		free(msg);
	}
	else
	{
		const char *v = PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0);
		Buf			what = {0};
		bool		did = strcmp(v, "f") != 0;

		if (strcmp(verb, "retry") == 0)
			bprintf(&what, did ? "Job %s is ready again (coord.retry)." :
					"Job %s was not retried: it is not dead (coord.retry returned false).", object);
		else if (strcmp(verb, "cancel") == 0)
			bprintf(&what, did ? "Job %s is cancelled (coord.cancel)." :
					"Job %s was not cancelled: it has already finished (coord.cancel returned false).",
					object);
		else if (strcmp(verb, "pause") == 0)
			bprintf(&what, "Queue %s%s%s is paused %s%s (coord.pause).", object,
					key ? ", key " : "", key ? key : "", until ? "until " : "until resumed",
					until ? until : "");
		else if (strcmp(verb, "resume") == 0)
			bprintf(&what, did ? "Queue %s%s%s is resumed (coord.resume)." :
					"Queue %s%s%s was not paused (coord.resume returned false).",
					object, key ? ", key " : "", key ? key : "");
		else
			bprintf(&what, "App %s: %s run(s) from %s to %s will run again (coord.rerun).",
					object, v, from, to);
		buf_append(&what, "", 1);
		PQclear(res);
		r->status = 200;
		r->refresh = 0;
		html_begin(r, "Done");
		bputs(&r->out, "<p class=\"ok\" id=\"done\">");
		html_esc(&r->out, what.data);
		bputs(&r->out, "</p><p><a id=\"back\" href=\"");
		html_esc(&r->out, back);
		bputs(&r->out, "\">Back</a></p>");
		html_end(r);
		buf_free(&what);
	}
	free(object);
	free(key);
	free(until);
	free(from);
	free(to);
	free(backbuf);
}

/* ---------- the request handler ---------- */

static void
answer_metrics(ServeReq *r)
{
	char	   *text = NULL;
	size_t		len = 0;
	char	   *err = NULL;
	int			rc = metrics_render(r->conn, &text, &len, &err);

	if (rc == 0)
	{
		r->status = 200;
		r->content_type = METRICS_CONTENT_TYPE;
		buf_append(&r->out, text, len);
	}
	else
	{
		r->status = rc == CLI_EXIT_PRIVILEGE ? 403 : 500;
		r->content_type = "text/plain; charset=utf-8";
		bprintf(&r->out, "%s\n", err ? err : "metrics failed");
	}
	free(text);
	free(err);
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *mhd, const char *url, const char *method,
	   const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	ServeReq	r;
	bool		post = strcmp(method, "POST") == 0;
	char	   *path = NULL;
	char	   *errmsg = NULL;
	enum MHD_Result ret;

	(void) cls;
	(void) version;
	/* a POST's body arrives over several calls: gather it */
	if (post)
	{
		Upload	   *up = *con_cls;

		if (!up)
		{
			*con_cls = up = calloc(1, sizeof(Upload));
			return up ? MHD_YES : MHD_NO;
		}
		if (*upload_data_size)
		{
			if (up->body.len + *upload_data_size > POST_MAX)
				up->too_big = true;
			else
				buf_append(&up->body, upload_data, *upload_data_size);
			*upload_data_size = 0;
			return MHD_YES;
		}
	}

	memset(&r, 0, sizeof(r));
	r.mhd = mhd;
	r.actions = !read_only;
	r.csrf = csrf;
	r.refresh = refresh_secs;
	r.status = 200;
	r.content_type = "text/html; charset=utf-8";

	if (loopback && !loopback_host(MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, "Host")))
	{
		static const char msg[] = "This dashboard listens on loopback and answers only requests for "
		"localhost or 127.0.0.1 (--listen to serve other names).\n";

		return send_answer(mhd, 421, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
	}

	if (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
	{
		static const char msg[] = "Method not allowed\n";

		return send_answer(mhd, 405, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
	}

	{
		const char *asset_type;
		size_t		asset_len;
		const char *asset = serve_asset(url, &asset_type, &asset_len);

		if (asset && !post)
			return send_answer(mhd, 200, asset_type, asset, asset_len);
	}

	/* /api/<page>.json is the page's data */
	if (strncmp(url, "/api/", 5) == 0 && strlen(url) > 10 &&
		strcmp(url + strlen(url) - 5, ".json") == 0 && !post)
	{
		r.json = true;
		path = xasprintf("/%.*s", (int) (strlen(url) - 10), url + 5);
		if (strcmp(path, "/queues") == 0 || strcmp(path, "/index") == 0)
		{
			free(path);
			path = xstrdup("/");
		}
		r.content_type = "application/json";
	}
	else
		path = xstrdup(url);
	/* no trailing slash but the root's */
	while (strlen(path) > 1 && path[strlen(path) - 1] == '/')
		path[strlen(path) - 1] = '\0';
	r.path = path;

	if (post)
	{
		Upload	   *up = *con_cls;
		char	   *token = form_value(up, "csrf");

		r.refresh = 0;
		if (read_only)
			html_error(&r, 403, "Read-only", NULL,
					   "This dashboard runs with --read-only: it changes nothing.");
		else if (up->too_big)
			html_error(&r, 413, "Too large", NULL, "The form is too large.");
		else if (!token_ok(token))
			html_error(&r, 403, "Forbidden", NULL,
					   "The form's CSRF token is missing or wrong: reload the page and try again.");
		else if (!origin_ok(mhd))
			html_error(&r, 403, "Forbidden", NULL, "The request comes from another site.");
		else if (!session_ok(&errmsg))
			html_error(&r, 503, "No database", NULL, errmsg);
		else
		{
			r.conn = conn;
			if (serve_priv(&r))
				do_action(&r, up, path);
			else
			{
				char	   *msg = xstrdup(r.errmsg);

				html_error(&r, 500, "Error", r.sqlstate, msg);
				free(msg);
			}
		}
		free(token);
	}
	else if (!session_ok(&errmsg))
		html_error(&r, 503, "No database", NULL, errmsg);
	else
	{
		r.conn = conn;
		if (strcmp(path, "/metrics") == 0 && !r.json)
			answer_metrics(&r);
		else if (!serve_priv(&r))
		{
			char	   *msg = xstrdup(r.errmsg);

			html_error(&r, strcmp(r.sqlstate, "42P01") == 0 ? 503 : 500, "Error", r.sqlstate, msg);
			free(msg);
		}
		else
			serve_page(&r);
	}
	ret = send_req(&r);
	free(path);
	free(errmsg);
	return ret;
}

static void
request_done(void *cls, struct MHD_Connection *mhd, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	Upload	   *up = *con_cls;

	(void) cls;
	(void) mhd;
	(void) toe;
	if (up)
	{
		buf_free(&up->body);
		free(up);
		*con_cls = NULL;
	}
}

/* ---------- start ---------- */

static bool
make_secret(void)
{
	unsigned char raw[CSRF_BYTES];
	int			fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	size_t		got = 0;

	if (fd < 0)
		return false;
	while (got < sizeof(raw))
	{
		ssize_t		n = read(fd, raw + got, sizeof(raw) - got);

		if (n <= 0)
		{
			close(fd);
			return false;
		}
		got += n;
	}
	close(fd);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(csrf + 2 * i, 3, "%02x", raw[i]);
	return true;
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT" into an address. */
static bool
parse_listen(const char *spec, struct sockaddr_storage *addr, socklen_t *len)
{
	char	   *host;
	const char *port;
	struct addrinfo hints = {0},
			   *ai;
	int			rc;

	if (spec[0] == '[')
	{
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':')
			return false;
		host = strndup(spec + 1, close - spec - 1);
		port = close + 2;
	}
	else if (strrchr(spec, ':'))
	{
		const char *colon = strrchr(spec, ':');

		host = colon == spec ? xstrdup("127.0.0.1") : strndup(spec, colon - spec);
		port = colon + 1;
	}
	else
	{
		host = xstrdup("127.0.0.1");
		port = spec;
	}
	if (!*port || strspn(port, "0123456789") != strlen(port) || atoi(port) > 65535)
	{
		free(host);
		return false;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &ai);
	free(host);
	if (rc != 0)
		return false;
	memcpy(addr, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return true;
}

static bool
is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *) a)->sin_addr.s_addr) >> 24) == 127;
	if (a->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) a)->sin6_addr);
	return false;
}

int
coordctl_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"read-only", no_argument, NULL, 'r'},
		{"refresh", required_argument, NULL, 'R'},
		{"statement-timeout", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	const char *listen = "127.0.0.1:8080";
	struct sockaddr_storage addr;
	socklen_t	addrlen;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	char		hostbuf[INET6_ADDRSTRLEN];
	char	   *errmsg = NULL;
	sigset_t	sigs;
	int			sig;
	int			c;

	opterr = 0;					/* our own message: "coordctl serve: ..." */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
	{
		switch (c)
		{
			case 'l':
				listen = optarg;
				break;
			case 'r':
				read_only = true;
				break;
			case 'R':
				if (strspn(optarg, "0123456789") != strlen(optarg) || !*optarg || atoi(optarg) > 86400)
				{
					fprintf(stderr, "coordctl serve: --refresh takes seconds, 0 to 86400\n");
					return CLI_EXIT_USAGE;
				}
				refresh_secs = atoi(optarg);
				break;
			case 'T':
				if (strspn(optarg, "0123456789") != strlen(optarg) || !*optarg || atoi(optarg) > 3600000)
				{
					fprintf(stderr, "coordctl serve: --statement-timeout takes milliseconds, 0 to 3600000\n");
					return CLI_EXIT_USAGE;
				}
				statement_timeout_ms = atoi(optarg);
				break;
			case 'h':
				usage(stdout);
				return 0;
			default:
				fprintf(stderr, "coordctl serve: %s \"%s\"\n",
						optopt == 'l' || optopt == 'R' || optopt == 'T' ?
						"a value is missing after" : "unknown option", argv[optind - 1]);
				usage(stderr);
				return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "coordctl serve: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!parse_listen(listen, &addr, &addrlen))
	{
		fprintf(stderr, "coordctl serve: --listen wants HOST:PORT (such as 127.0.0.1:8080), not \"%s\"\n",
				listen);
		return CLI_EXIT_USAGE;
	}
	loopback = is_loopback(&addr);
	if (!make_secret())
	{
		fprintf(stderr, "coordctl serve: could not read /dev/urandom: %s\n", strerror(errno));
		return CLI_EXIT_ERROR;
	}
	/* the database first: a wrong -d fails now, not at the first page */
	if (!session_ok(&errmsg))
	{
		fprintf(stderr, "coordctl serve: %s\n", errmsg);
		free(errmsg);
		return CLI_EXIT_ERROR;
	}

	/* SIGINT/SIGTERM for sigwait below, blocked before the thread starts */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
						 (addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
						 0, NULL, NULL, answer, NULL,
						 MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &addr,
						 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) 30,
						 MHD_OPTION_CONNECTION_LIMIT, (unsigned int) 64,
						 MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
						 MHD_OPTION_END);
	if (!d)
	{
		fprintf(stderr, "coordctl serve: could not listen on %s (in use? not this host's address?)\n",
				listen);
		PQfinish(conn);
		return CLI_EXIT_ERROR;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(origin_port, sizeof(origin_port), "%u", info ? (unsigned) info->port : 0);
	if (addr.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &addr)->sin6_addr, hostbuf, sizeof(hostbuf));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *) &addr)->sin_addr, hostbuf, sizeof(hostbuf));
	fprintf(stderr, "coordctl serve: listening on http://%s%s%s:%s/ as role %s%s\n",
			addr.ss_family == AF_INET6 ? "[" : "", hostbuf, addr.ss_family == AF_INET6 ? "]" : "",
			origin_port, PQuser(conn), read_only ? " (read-only)" : "");
	fflush(stderr);

	sigwait(&sigs, &sig);
	MHD_stop_daemon(d);
	PQfinish(conn);
	return 0;
}
