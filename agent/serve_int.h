/*-------------------------------------------------------------------------
 * serve_int.h
 *		"coordctl serve", the web dashboard: what its files share.
 *
 * serve.c owns the HTTP side (libmicrohttpd, one internal thread: every
 * request is handled by that thread, one at a time, so the one database
 * connection needs no lock), the command line, the CSRF secret and the
 * POST actions.  serve_pages.c runs each page's statements and renders the
 * rows as HTML or JSON; serve_html.c has the escaping, the layout and the
 * embedded assets (style sheet, script: nothing is fetched from the
 * network).  A file calls only files before it: serve_html, serve_pages,
 * serve.
 *-------------------------------------------------------------------------
 */
#ifndef COORD_SERVE_INT_H
#define COORD_SERVE_INT_H

#include "coord_agent.h"

/* What the connecting role may do and read, asked once per request. */
typedef struct ServePriv
{
	char		user[128];
	bool		retry;			/* EXECUTE on coord.retry(bigint) */
	bool		cancel;
	bool		pause;
	bool		resume;
	bool		rerun;
	bool		payload;		/* column privileges on coord.jobs */
	bool		result;
	bool		last_error;
	bool		progress;
	bool		parents;		/* SELECT on coord.job_parents: a job's
								 * parents */
	bool		elections;		/* SELECT on coord.elections */
	bool		metrics;		/* coord.metrics exists and may be read */
	bool		metrics_queues; /* coord.metrics_queues(): per-queue counts
								 * without a pass over the jobs */
} ServePriv;

/* One request, as the page renderers see it. */
typedef struct ServeReq
{
	PGconn	   *conn;
	struct MHD_Connection *mhd;
	const char *path;			/* the page's path, "/jobs" (no /api, no
								 * .json) */
	bool		json;			/* /api/<page>.json */
	bool		actions;		/* not --read-only */
	const char *csrf;			/* the token forms carry */
	int			refresh;		/* seconds between automatic reloads, 0: none */
	ServePriv	priv;
	int			status;			/* HTTP status of the answer */
	char		sqlstate[6];	/* of the last failed statement */
	char		errmsg[1024];
	const char *content_type;
	Buf			out;			/* the answer's body */
} ServeReq;

/* ---------- serve_html.c ---------- */

extern void bprintf(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void bputs(Buf *b, const char *s);
extern void html_esc(Buf *b, const char *s);
extern void url_esc(Buf *b, const char *s);
extern void json_esc(Buf *b, const char *s);
extern void html_begin(ServeReq *r, const char *title);
extern void html_end(ServeReq *r);
extern void html_form_begin(ServeReq *r, const char *action_fmt, const char *arg);
extern void html_error(ServeReq *r, int status, const char *what, const char *sqlstate,
					   const char *message);
extern const char *serve_asset(const char *path, const char **type, size_t *len);

/* ---------- serve_pages.c ---------- */

extern void serve_page(ServeReq *r);
extern bool serve_priv(ServeReq *r);
extern PGresult *serve_query(ServeReq *r, const char *sql, int nparams,
							 const char *const *params);

#endif							/* COORD_SERVE_INT_H */
