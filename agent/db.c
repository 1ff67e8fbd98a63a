/*-------------------------------------------------------------------------
 * db.c
 *		coord-agent's database session: the one libpq connection, opened
 *		without blocking, the bounded round trip every statement makes,
 *		LISTEN at connect, notices and notifications, and the reconnect with
 *		backoff after the session is lost.
 *
 * The connection is opened with PQconnectStartParams/PQconnectPoll, so that
 * a database that is down or slow never stops the loop.  A session counts
 * as up only once protocol.c's statements have opened it, and every
 * connect joins the partition group (if any) again, under a new name.
 *
 * db_run is the only way a statement goes out: one round trip, at most
 * statement_timeout + STATEMENT_GRACE_MS of waiting for the answer.  A
 * result counts only once the answer is whole (ReadyForQuery); else its
 * outcome is unknown: db_run returns NULL and db_doubt() says why.  A lost
 * session calls the loop's session_lost before the reconnect is scheduled;
 * "cancel" on a running job's channel calls its job_cancelled.
 *
 * db.c sits below protocol.c and agent.c and calls neither: what it needs
 * of them are the DbCallbacks agent.c gives db_init (db.h).
 *
 * The states, a session's opening and join, the round trip, unknown
 * outcomes and the configuration: agent/README.md, "The database session".
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_agent.h"
#include "db.h"

#define CONNECT_TIMEOUT_MS	10000
#define BACKOFF_FIRST_MS	100
#define BACKOFF_CAP_MS		5000
/* how much longer than statement_timeout we wait for the server's answer */
#define STATEMENT_GRACE_MS	2000

DbState		db_state = DB_DOWN;

static const AgentConfig *cfg;
static const DbCallbacks *cb;
static PGconn *conn;
static PostgresPollingStatusType connect_dir;
static msec_t connect_started;
static msec_t reconnect_at;
static msec_t backoff;
static char *last_connect_error;

/*
 * The statement in flight: whether a notice said its commit skipped the
 * synchronous standby, and why the last statement's outcome is unknown
 * (empty: it is known).
 */
static bool syncrep_cancelled;
static char doubt[512];

/* sessions opened so far: which one a claim or a report was made in */
static unsigned long sessions;

/* the group (and weight) this session joined, or NULL */
static char *joined_group;
static double joined_weight;

/* this session's member name (NULL: a new one at the next join) */
static char *member;

/* a failed join: when to try again, the backoff, the last error logged */
#define JOIN_RETRY_FIRST_MS	500
#define JOIN_RETRY_CAP_MS	5000
static msec_t join_at;
static msec_t join_backoff;
static char *last_join_error;

/* The connection's last error, one line, for a log line. */
const char *
db_error(void)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "%s", conn ? PQerrorMessage(conn) : "no connection");
	return trim(buf);
}

/*
 * A notice from the server: logged.  One says that the commit of the
 * statement in flight did not wait for its synchronous standby (a cancel
 * or a terminate of the wait): committed here, it may be lost at a
 * failover.  It is known by its source file (locale-proof), or else by its
 * detail.
 */
static void
notice_receiver(void *arg, const PGresult *res)
{
	const char *file = PQresultErrorField(res, PG_DIAG_SOURCE_FILE);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	char	   *m = xstrdup(PQresultErrorMessage(res));

	(void) arg;
	if ((file && strcmp(file, "syncrep.c") == 0) ||
		(detail && strstr(detail, "committed locally") != NULL))
		syncrep_cancelled = true;
	log_info("server: %s", trim(m));
	free(m);
}

/*
 * A NOTIFY on a queue's or the host's channel means: claim now.  One on a
 * running job's channel ("coord:job:<id>") is no work: "cancel" there goes
 * to the loop at once (progress reports are ignored).
 */
static void
drain_notifies(void)
{
	PGnotify   *n;

	while ((n = PQnotifies(conn)) != NULL)
	{
		log_verbose("notification on \"%s\"", n->relname);
		if (strncmp(n->relname, "coord:job:", 10) == 0)
		{
			char	   *end;
			long long	id = strtoll(n->relname + 10, &end, 10);

			if (*end == '\0' && end != n->relname + 10 && strcmp(n->extra, "cancel") == 0)
				cb->job_cancelled((int64_t) id);
		}
		else
			cb->wake();
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
 * The connection is gone.  Session-bound claims went with it: the loop
 * kills their children at once (another agent may already be running the
 * job) and drops results not yet reported.  Lease claims live on until
 * their lease ends; their children keep running.
 */
void
db_lost(const char *why)
{
	char	   *msg = xstrdup(why ? why : "connection lost");

	log_error("lost the database connection: %s", trim(msg));
	free(msg);
	if (conn)
		PQfinish(conn);
	conn = NULL;
	db_state = DB_DOWN;
	free(joined_group);
	joined_group = NULL;
	free(member);
	member = NULL;
	cb->session_lost();
	schedule_reconnect();
}

/*
 * Reads the whole answer to the statement just sent, at most until deadline
 * (0: no limit): its results, then ReadyForQuery, which libpq has seen
 * when PQgetResult returns NULL on a good connection (*ended).  Returns the
 * first result (NULL: none), and in *later the first error the server sent
 * after it (an error after the result is the commit's); the rest is dropped.
 * *timed_out says the deadline passed first (nothing is returned then).
 * With the extended protocol the rows and CommandComplete come before the
 * commit: without *ended, nothing says it committed.
 */
static PGresult *
wait_result(msec_t deadline, bool *timed_out, bool *ended, PGresult **later)
{
	PGresult   *first = NULL;
	PGresult   *r;

	*timed_out = false;
	*ended = false;
	*later = NULL;
	for (;;)
	{
		while (PQisBusy(conn))
		{
			struct pollfd pfd;
			msec_t		left = deadline ? deadline - now_ms() : 1000;
			int			rc;

			if (left <= 0)
				*timed_out = true;
			else
			{
				pfd.fd = PQsocket(conn);
				pfd.events = POLLIN;
				pfd.revents = 0;
				rc = poll(&pfd, 1, left > 1000 ? 1000 : (int) left);
				if (rc < 0 && errno != EINTR)
				{
					/* cannot wait: no answer (PQgetResult would block) */
					log_error("poll: %s", strerror(errno));
					*timed_out = true;
				}

				/*
				 * an error here leaves the connection bad: PQgetResult says
				 * why
				 */
				else if (rc > 0 && !PQconsumeInput(conn))
					break;
			}
			if (*timed_out)
			{
				if (first)
					PQclear(first);
				if (*later)
					PQclear(*later);
				*later = NULL;
				return NULL;
			}
		}
		r = PQgetResult(conn);
		if (r == NULL)
		{
			*ended = PQstatus(conn) == CONNECTION_OK;
			break;
		}
		if (first == NULL)
			first = r;
		else if (*later == NULL && PQresultErrorField(r, PG_DIAG_SQLSTATE) != NULL)
			*later = r;
		else
			PQclear(r);
		if (PQstatus(conn) == CONNECTION_BAD)
			break;
	}
	return first;
}

/* Why the last db_run's outcome is unknown, or NULL when it is known. */
const char *
db_doubt(void)
{
	return doubt[0] ? doubt : NULL;
}

/* db_lost, and no reconnect before delay ms. */
void
db_lost_after(const char *why, msec_t delay)
{
	db_lost(why);
	if (reconnect_at < now_ms() + delay)
		reconnect_at = now_ms() + delay;
}

/*
 * Runs one statement; returns its result when it has the expected status
 * and its outcome is known, else NULL (after handling a lost connection).
 * sqlstate, if given, gets the error's SQLSTATE (empty when the server sent
 * none).  A statement that the server does not answer within
 * statement_timeout plus a grace period is given up with its connection.
 *
 * The outcome is known only when the answer is whole: the result, then
 * ReadyForQuery, and no notice that the commit skipped its synchronous
 * standby; or an ERROR the server sent (the transaction rolled back).
 * Otherwise (no answer, libpq's own error, the connection lost after the
 * result, a FATAL after it, the standby's wait cancelled) the statement
 * may or may not have committed: db_doubt() says why, and it returns NULL
 * even with a result in hand.
 */
PGresult *
db_run(const char *sql, int nparams, const char *const *values, ExecStatusType want,
	   char *sqlstate)
{
	PGresult   *res = NULL;
	PGresult   *later = NULL;
	bool		timed_out = false;
	bool		ended = false;
	msec_t		deadline = 0;
	const char *state;

	if (cfg->statement_timeout > 0)
		deadline = now_ms() + cfg->statement_timeout + STATEMENT_GRACE_MS;
	if (sqlstate)
		sqlstate[0] = '\0';
	doubt[0] = '\0';
	syncrep_cancelled = false;
	if (db_state != DB_READY)
		return NULL;
	if (PQsendQueryParams(conn, sql, nparams, NULL, values, NULL, NULL, 0))
		res = wait_result(deadline, &timed_out, &ended, &later);
	if (timed_out)
	{
		char		b[32];
		char	   *why = xasprintf("no answer within %s (statement_timeout and %d ms)",
									format_duration(cfg->statement_timeout, b, sizeof(b)),
									STATEMENT_GRACE_MS);

		snprintf(doubt, sizeof(doubt), "%s", why);
		db_lost(why);
		free(why);
		return NULL;
	}
	if (res && PQresultStatus(res) == want)
	{
		if (later)
		{
			const char *severity = PQresultErrorField(later, PG_DIAG_SEVERITY_NONLOCALIZED);

			/* the commit's ERROR rolled it back; a FATAL may follow a commit */
			if (severity == NULL || strcmp(severity, "ERROR") != 0)
			{
				char	   *m = xstrdup(PQresultErrorMessage(later));

				snprintf(doubt, sizeof(doubt), "the server ended the session after the result: %s", trim(m));
				free(m);
			}
			PQclear(res);
			res = later;
			later = NULL;
		}
		else if (ended && !syncrep_cancelled)
		{
			drain_notifies();
			return res;
		}
		else
			snprintf(doubt, sizeof(doubt), "%s", ended ?
					 "the server cancelled the commit's wait for its synchronous standby: committed on this server only" :
					 "the connection was lost after the result, before the server confirmed the commit");
	}
	if (later)
		PQclear(later);
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (doubt[0] == '\0' && state == NULL &&
		(res == NULL || PQresultStatus(res) == PGRES_FATAL_ERROR))
	{
		char	   *m = xstrdup(res ? PQresultErrorMessage(res) : PQerrorMessage(conn));

		/* libpq's own error, or nothing: the statement may have done its work */
		snprintf(doubt, sizeof(doubt), "no answer from the server: %s", trim(m));
		free(m);
	}
	if (sqlstate && state && doubt[0] == '\0')
		snprintf(sqlstate, 6, "%s", state);
	if (doubt[0] == '\0')
	{
		char	   *m = xstrdup(res ? PQresultErrorMessage(res) : PQerrorMessage(conn));

		log_verbose("statement failed: %s", trim(m));
		free(m);
	}
	if (res)
		PQclear(res);
	if (PQstatus(conn) == CONNECTION_BAD)
	{
		db_lost(PQerrorMessage(conn));
		return NULL;
	}
	drain_notifies();
	return NULL;
}

/* A partition group is configured and not joined (or not with its weight). */
static bool
join_wanted(void)
{
	return cfg->partition_group != NULL &&
		(joined_group == NULL || strcmp(joined_group, cfg->partition_group) != 0 ||
		 joined_weight != cfg->weight);
}

/* Whether the loop may claim: no group, or this session is its member. */
bool
db_group_ready(void)
{
	return cfg->partition_group == NULL ||
		(joined_group != NULL && strcmp(joined_group, cfg->partition_group) == 0);
}

/*
 * coord.join of cfg's partition group.  A failure keeps the session: it is
 * logged (once per distinct error) and db_tick tries again after a backoff;
 * 23505 (the name is another live session's) picks a new name.
 */
static void
join_group(void)
{
	char		sqlstate[6] = "";
	char	   *why;
	char		b[32];

	if (member == NULL)
		member = member_name(cfg);
	if (member != NULL && cb->join(cfg, member, sqlstate))
	{
		free(joined_group);
		joined_group = xstrdup(cfg->partition_group);
		joined_weight = cfg->weight;
		join_backoff = 0;
		free(last_join_error);
		last_join_error = NULL;
		cb->wake();
		return;
	}
	if (db_state != DB_READY)
		return;					/* the session went: the next one joins */
	if (member == NULL)
		why = xasprintf("could not join partition group \"%s\": no member name (could not read /dev/urandom)",
						cfg->partition_group);
	else
	{
		why = xasprintf("could not join partition group \"%s\" as %s: %s", cfg->partition_group, member,
						strcmp(sqlstate, "23505") == 0 ? "the name is another live session's" : db_error());
		if (strcmp(sqlstate, "23505") == 0)
		{
			free(member);
			member = NULL;
		}
	}
	join_backoff = join_backoff == 0 ? JOIN_RETRY_FIRST_MS : join_backoff * 2;
	if (join_backoff > JOIN_RETRY_CAP_MS)
		join_backoff = JOIN_RETRY_CAP_MS;
	join_at = now_ms() + join_backoff;
	if (last_join_error == NULL || strcmp(last_join_error, why) != 0)
		log_error("%s; %s, trying again in %s", why,
				  db_group_ready() ? "claiming with the old weight" : "claiming nothing until a join succeeds",
				  format_duration(join_backoff, b, sizeof(b)));
	free(last_join_error);
	last_join_error = why;
}

/*
 * Connected: the session's limits, the extension check, LISTEN (the open
 * callback), and look for work at once; up to here the session does not
 * count as up: a failure is a failed connect (logged once per distinct
 * error, backoff kept).  Then the join of the partition group, under a new
 * name.
 */
static void
session_ready(void)
{
	char	   *why;

	PQsetNoticeReceiver(conn, notice_receiver, NULL);
	db_state = DB_READY;
	why = cb->open(cfg);
	free(joined_group);
	joined_group = NULL;
	free(member);
	member = NULL;
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
	sessions++;
	join_backoff = 0;
	if (cfg->partition_group != NULL)
		join_group();
	if (db_state != DB_READY)
		return;
	cb->wake();
	log_info("connected to database \"%s\" (server pid %d); host %s, %d queue(s), concurrency %d, %s claims%s%s",
			 PQdb(conn), PQbackendPID(conn), cfg->host, cfg->nqueues, cfg->concurrency,
			 cfg->lease > 0 ? "lease" : "session-bound",
			 cfg->partition_group ? ", partition group " : "",
			 cfg->partition_group ? cfg->partition_group : "");
}

static void
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

static void
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

static void
advance_connect(void)
{
	connect_dir = PQconnectPoll(conn);
	if (connect_dir == PGRES_POLLING_OK)
		session_ready();
	else if (connect_dir == PGRES_POLLING_FAILED)
		connect_failed(PQerrorMessage(conn));
}

/* ---------- what the loop calls ---------- */

/*
 * The configuration at start, and the callbacks of the files above (kept:
 * the caller's, for good); the first connect is due at once.
 */
void
db_init(const AgentConfig *config, const DbCallbacks *callbacks)
{
	cfg = config;
	cb = callbacks;
	reconnect_at = now_ms();
}

/*
 * SIGHUP: the new configuration, its limits on the open session, and LISTEN
 * again if the channels changed (the reload callback).
 */
void
db_reload(const AgentConfig *config, bool relisten)
{
	cfg = config;
	cb->reload(cfg, relisten);
	/* a changed group or weight: leave the old group, join (again) */
	if (db_state == DB_READY && joined_group != NULL &&
		(cfg->partition_group == NULL || strcmp(joined_group, cfg->partition_group) != 0))
	{
		(void) cb->leave(joined_group);
		free(joined_group);
		joined_group = NULL;
	}
	if (db_state == DB_READY && join_wanted())
	{
		join_backoff = 0;
		join_group();
	}
}

/*
 * Starts a connect when one is due and wanted (the loop does not want one
 * while it drains with nothing left to report), and gives up a connect that
 * takes too long.
 */
void
db_tick(msec_t now, bool wanted)
{
	if (db_state == DB_DOWN && wanted && now >= reconnect_at)
		start_connect();
	if (db_state == DB_READY && join_wanted() && now >= join_at)
		join_group();
	if (db_state == DB_CONNECTING && now - connect_started > CONNECT_TIMEOUT_MS)
		connect_failed("timeout expired");
}

/* When db_tick has something to do (0: nothing by the clock). */
msec_t
db_next_wakeup(bool wanted)
{
	if (db_state == DB_DOWN && wanted)
		return reconnect_at > 0 ? reconnect_at : 1;
	if (db_state == DB_CONNECTING)
		return connect_started + CONNECT_TIMEOUT_MS;
	if (db_state == DB_READY && join_wanted())
		return join_at > 0 ? join_at : 1;
	return 0;
}

/* What poll() waits for on the connection; false: nothing to wait for. */
bool
db_poll_fd(struct pollfd *pfd)
{
	if ((db_state != DB_READY && db_state != DB_CONNECTING) || PQsocket(conn) < 0)
		return false;
	pfd->fd = PQsocket(conn);
	pfd->events = (db_state == DB_CONNECTING && connect_dir == PGRES_POLLING_WRITING)
		? POLLOUT : POLLIN;
	return true;
}

/* poll() saw the connection's socket: the connect's next step, or input. */
void
db_socket_ready(void)
{
	if (db_state == DB_CONNECTING)
		advance_connect();
	else if (db_state == DB_READY)
	{
		if (!PQconsumeInput(conn) || PQstatus(conn) == CONNECTION_BAD)
			db_lost(PQerrorMessage(conn));
		else
			drain_notifies();
	}
}

/* The number of the session that is up (or was last): changes at each connect. */
unsigned long
db_session(void)
{
	return sessions;
}

/* The connection, for libpq calls that need one (NULL: none). */
PGconn *
db_conn(void)
{
	return conn;
}

/* At exit. */
void
db_close(void)
{
	if (conn)
		PQfinish(conn);
	conn = NULL;
	db_state = DB_DOWN;
}
