/*-------------------------------------------------------------------------
 * db.c
 *		coord-agent's database session (moved from agent.c).
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_agent.h"
#include "db.h"
#include "protocol.h"

#define BACKOFF_FIRST_MS	100
#define BACKOFF_CAP_MS		5000
/* how much longer than statement_timeout we wait for the server's answer */
#define STATEMENT_GRACE_MS	2000

PGconn	   *conn;
DbState		db_state = DB_DOWN;
PostgresPollingStatusType connect_dir;
msec_t		connect_started;
msec_t		reconnect_at;
static msec_t backoff;
static char *last_connect_error;

static void session_ready(void);

/* The connection's last error, one line, for a log line. */
const char *
conn_error(void)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "%s", conn ? PQerrorMessage(conn) : "no connection");
	return trim(buf);
}

static void
notice_processor(void *arg, const char *message)
{
	char	   *m = xstrdup(message);

	(void) arg;
	log_info("server: %s", trim(m));
	free(m);
}

/* Any NOTIFY on our channels means: claim now. */
void
drain_notifies(void)
{
	PGnotify   *n;

	while ((n = PQnotifies(conn)) != NULL)
	{
		log_verbose("notification on \"%s\"", n->relname);
		need_claim = true;
		PQfreemem(n);
	}
}

static void
schedule_reconnect(void)
{
	msec_t		now = now_ms();

	reconnect_at = now + backoff;
	backoff = backoff == 0 ? BACKOFF_FIRST_MS : backoff * 2;
	if (backoff > BACKOFF_CAP_MS)
		backoff = BACKOFF_CAP_MS;
}

/*
 * The connection is gone.  Session-bound claims went with it: their
 * children are killed at once (another agent may already be running the
 * job), and results not yet reported are dropped.  Lease claims live on
 * until their lease ends; their children keep running.
 */
void
lost_connection(const char *why)
{
	Job		   *j;
	char	   *msg = xstrdup(why ? why : "connection lost");

	log_error("lost the database connection: %s", trim(msg));
	free(msg);
	if (conn)
		PQfinish(conn);
	conn = NULL;
	db_state = DB_DOWN;
	for (j = jobs; j; j = j->next)
	{
		if (!j->session_bound || j->killed == KILL_LOST)
			continue;
		j->killed = KILL_LOST;
		if (!j->exited)
		{
			log_verbose("job %lld: session-bound claim lost with the session: killing pid %d",
						(long long) j->id, (int) j->pid);
			child_signal(j, SIGKILL);
		}
	}
	schedule_reconnect();
}

/*
 * Waits for the answer to the statement just sent, at most until deadline
 * (0: no limit); returns its first result (NULL: none), the rest is read
 * and dropped.  *timed_out says the deadline passed first.
 */
static PGresult *
wait_result(msec_t deadline, bool *timed_out)
{
	PGresult   *first = NULL;
	PGresult   *r;

	*timed_out = false;
	for (;;)
	{
		while (PQisBusy(conn))
		{
			struct pollfd pfd;
			msec_t		left = deadline ? deadline - now_ms() : 1000;
			int			rc;

			if (left <= 0)
			{
				*timed_out = true;
				if (first)
					PQclear(first);
				return NULL;
			}
			pfd.fd = PQsocket(conn);
			pfd.events = POLLIN;
			pfd.revents = 0;
			rc = poll(&pfd, 1, left > 1000 ? 1000 : (int) left);
			if (rc < 0 && errno != EINTR)
			{
				/* cannot wait: treat it as no answer (PQgetResult would block) */
				log_error("poll: %s", strerror(errno));
				*timed_out = true;
				if (first)
					PQclear(first);
				return NULL;
			}
			/* an error here leaves the connection bad: PQgetResult says why */
			if (rc > 0 && !PQconsumeInput(conn))
				break;
		}
		r = PQgetResult(conn);
		if (r == NULL)
			break;
		if (first == NULL)
			first = r;
		else
			PQclear(r);
		if (PQstatus(conn) == CONNECTION_BAD)
			break;
	}
	return first;
}

/* lost_connection, and no reconnect before delay ms. */
void
lost_connection_after(const char *why, msec_t delay)
{
	lost_connection(why);
	if (reconnect_at < now_ms() + delay)
		reconnect_at = now_ms() + delay;
}

/*
 * Runs one statement; returns its result when it has the expected status,
 * else NULL (after handling a lost connection).  sqlstate, if given, gets
 * the error's SQLSTATE: empty when the server sent none (libpq's own error:
 * the statement may have done its work).  A statement that the server does
 * not answer within statement_timeout plus a grace period is given up with
 * its connection.
 */
PGresult *
run_sql(const char *sql, int nparams, const char *const *values, ExecStatusType want,
		char *sqlstate)
{
	PGresult   *res;
	bool		timed_out;
	msec_t		deadline = cfg->statement_timeout > 0
		? now_ms() + cfg->statement_timeout + STATEMENT_GRACE_MS : 0;

	if (sqlstate)
		sqlstate[0] = '\0';
	if (db_state != DB_READY)
		return NULL;
	if (!PQsendQueryParams(conn, sql, nparams, NULL, values, NULL, NULL, 0))
		res = NULL;
	else
	{
		res = wait_result(deadline, &timed_out);
		if (timed_out)
		{
			char		b[32];
			char	   *why = xasprintf("no answer within %s (statement_timeout and %d ms)",
										format_duration(cfg->statement_timeout, b, sizeof(b)),
										STATEMENT_GRACE_MS);

			lost_connection(why);
			free(why);
			return NULL;
		}
	}
	if (res && PQresultStatus(res) == want)
	{
		drain_notifies();
		return res;
	}
	if (PQstatus(conn) == CONNECTION_BAD)
	{
		if (res)
			PQclear(res);
		lost_connection(PQerrorMessage(conn));
		return NULL;
	}
	if (sqlstate && res && PQresultErrorField(res, PG_DIAG_SQLSTATE))
		snprintf(sqlstate, 6, "%s", PQresultErrorField(res, PG_DIAG_SQLSTATE));
	{
		char	   *m = xstrdup(res ? PQresultErrorMessage(res) : PQerrorMessage(conn));

		log_verbose("statement failed: %s", trim(m));
		free(m);
	}
	if (res)
		PQclear(res);
	drain_notifies();
	return NULL;
}

/* Connected: check the extension, LISTEN, and look for work at once. */
static void
session_ready(void)
{
	PGresult   *res;
	char	   *why = NULL;

	PQsetNoticeProcessor(conn, notice_processor, NULL);
	db_state = DB_READY;
	if (!set_session_limits())
		why = xstrdup("could not set statement_timeout and lock_timeout");
	res = why ? NULL : run_sql("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_coord'",
				  0, NULL, PGRES_TUPLES_OK, NULL);
	if (why != NULL)
		;
	else if (res == NULL)
		why = xstrdup("could not check for the pg_coord extension");
	else if (PQntuples(res) == 0)
		why = xasprintf("the pg_coord extension is not installed in database \"%s\"", PQdb(conn));
	if (res)
		PQclear(res);
	if (why == NULL && db_state == DB_READY && !listen_all())
		why = xstrdup("LISTEN failed");
	if (why != NULL)
	{
		if (last_connect_error == NULL || strcmp(last_connect_error, why) != 0)
			log_error("%s; retrying", why);
		free(last_connect_error);
		last_connect_error = why;
		if (conn)
			PQfinish(conn);
		conn = NULL;
		db_state = DB_DOWN;
		schedule_reconnect();
		return;
	}
	free(last_connect_error);
	last_connect_error = NULL;
	backoff = 0;
	need_claim = true;
	log_info("connected to database \"%s\" (server pid %d); host %s, %d queue(s), concurrency %d, %s claims",
			 PQdb(conn), PQbackendPID(conn), cfg->host, cfg->nqueues, cfg->concurrency,
			 cfg->lease > 0 ? "lease" : "session-bound");
}

void
connect_failed(const char *why)
{
	char	   *m = xstrdup(why);
	char		b[32];

	trim(m);
	if (conn)
		PQfinish(conn);
	conn = NULL;
	db_state = DB_DOWN;
	schedule_reconnect();
	if (last_connect_error == NULL || strcmp(last_connect_error, m) != 0 || verbose)
		log_error("could not connect: %s (retrying %s%s)", m,
				  reconnect_at > now_ms() ? "in " : "now",
				  reconnect_at > now_ms() ? format_duration(reconnect_at - now_ms(), b, sizeof(b)) : "");
	free(last_connect_error);
	last_connect_error = m;
}

void
start_connect(void)
{
	/* after dbname, so that they win over its client_encoding */
	const char *keys[] = {"dbname", "fallback_application_name", "client_encoding", NULL};
	const char *vals[] = {cfg->dbname, "coord-agent", "UTF8", NULL};

	conn = PQconnectStartParams(keys, vals, 1);
	if (conn == NULL)
	{
		log_error("out of memory");
		exit(1);
	}
	if (PQstatus(conn) == CONNECTION_BAD)
	{
		connect_failed(PQerrorMessage(conn));
		return;
	}
	db_state = DB_CONNECTING;
	connect_dir = PGRES_POLLING_WRITING;
	connect_started = now_ms();
	log_verbose("connecting");
}

void
advance_connect(void)
{
	connect_dir = PQconnectPoll(conn);
	if (connect_dir == PGRES_POLLING_OK)
		session_ready();
	else if (connect_dir == PGRES_POLLING_FAILED)
		connect_failed(PQerrorMessage(conn));
}
