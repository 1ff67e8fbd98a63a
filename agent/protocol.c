/*-------------------------------------------------------------------------
 * protocol.c
 *		Every statement coord-agent sends to pg_coord, one function each:
 *		the agent's contract with the extension, readable in one place.
 *
 * The agent's session (through db_run, on db.c's connection; each is one
 * round trip, bounded by statement_timeout and STATEMENT_GRACE_MS): a
 * session's opening and reload, the partition group's join and leave, and
 * claim, a running job's LISTEN (its cancel), heartbeat, complete,
 * fail, claim_state and next_due.  "coord-agent
 * status" (its own blocking connection, status.c): reads of coord_monitor's
 * views, whose columns status.c reads in the order the statements give.
 *
 * A claim result is checked before anything of it is used; the statements
 * that change a claim say when their outcome is unknown.  Every parameter
 * is sent as text with no type (ids and tokens in decimal), and the
 * statement casts it where the function's argument is not text.
 *
 * Apart from a second complete when the server refuses a result, nothing
 * here decides what to do about a failure: that is the loop's (agent.c)
 * or the session's (db.c).
 *
 * Each statement, and what an unreadable or unknown result means:
 * agent/README.md, "The statements (protocol.c)".
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_agent.h"
#include "db.h"
#include "protocol.h"

/* the session's limits: the agent's session and status's */
static const char *const set_limits_sql =
"SELECT pg_catalog.set_config('statement_timeout', $1, false), "
"pg_catalog.set_config('lock_timeout', $2, false)";

/* ---------- the agent's session ---------- */

/*
 * The session's statement_timeout and lock_timeout, from the
 * configuration: at connect, and again after a reload.
 */
static bool
proto_set_limits(msec_t statement_timeout, msec_t lock_timeout)
{
	char		st[32],
				lt[32];
	const char *values[2] = {st, lt};
	PGresult   *res;

	snprintf(st, sizeof(st), "%lldms", (long long) statement_timeout);
	snprintf(lt, sizeof(lt), "%lldms", (long long) lock_timeout);
	res = db_run(set_limits_sql, 2, values, PGRES_TUPLES_OK, NULL);
	if (res == NULL)
		return false;
	PQclear(res);
	log_verbose("session: statement_timeout %s, lock_timeout %s", st, lt);
	return true;
}

/* Whether pg_coord is installed: 1 yes, 0 no, -1 the statement failed. */
static int
proto_extension_installed(void)
{
	PGresult   *res = db_run("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_coord'",
							 0, NULL, PGRES_TUPLES_OK, NULL);
	int			installed;

	if (res == NULL)
		return -1;
	installed = PQntuples(res) > 0;
	PQclear(res);
	return installed;
}

/* LISTEN on every channel that can bring us work. */
static bool
proto_listen_all(const AgentConfig *cfg)
{
	int			i;

	for (i = 0; i <= cfg->nqueues; i++)
	{
		char	   *channel;
		char	   *ident;
		char	   *sql;
		PGresult   *res;

		if (i < cfg->nqueues)
			channel = xasprintf("coord:%s", cfg->queues[i]);
		else
			channel = xasprintf("coord:host:%s", cfg->host);
		ident = PQescapeIdentifier(db_conn(), channel, strlen(channel));
		sql = xasprintf("LISTEN %s", ident ? ident : "\"\"");
		res = db_run(sql, 0, NULL, PGRES_COMMAND_OK, NULL);

		log_verbose("LISTEN %s", ident ? ident : channel);
		PQfreemem(ident);
		free(sql);
		free(channel);
		if (res == NULL)
			return false;
		PQclear(res);
	}
	return true;
}

/*
 * LISTEN (or UNLISTEN) on a running job's channel, "coord:job:<id>", where
 * coord.cancel sends "cancel".  false: not done (db_state says whether the
 * connection went).
 */
bool
proto_listen_job(int64_t id, bool listen)
{
	char		sql[64];
	PGresult   *res;

	snprintf(sql, sizeof(sql), "%s \"coord:job:%lld\"", listen ? "LISTEN" : "UNLISTEN", (long long) id);
	res = db_run(sql, 0, NULL, PGRES_COMMAND_OK, NULL);
	if (res == NULL)
		return false;
	log_verbose("%s", sql);
	PQclear(res);
	return true;
}

/* UNLISTEN *: before a LISTEN on a changed set of channels. */
static bool
proto_unlisten_all(void)
{
	PGresult   *res = db_run("UNLISTEN *", 0, NULL, PGRES_COMMAND_OK, NULL);

	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/*
 * A new connection, before it counts as a session: its limits, the
 * extension check, LISTEN.  NULL when all went well, else why not
 * (malloc'd, for the log; db_state says whether the connection went too).
 */
char *
proto_open_session(const AgentConfig *cfg)
{
	char	   *why = NULL;
	int			installed;

	if (!proto_set_limits(cfg->statement_timeout, cfg->lock_timeout))
		why = xstrdup("could not set statement_timeout and lock_timeout");
	else if ((installed = proto_extension_installed()) < 0)
		why = xstrdup("could not check for the pg_coord extension");
	else if (installed == 0)
		why = xasprintf("the pg_coord extension is not installed in database \"%s\"", PQdb(db_conn()));
	if (why == NULL && db_state == DB_READY && !proto_listen_all(cfg))
		why = xstrdup("LISTEN failed");
	return why;
}

/*
 * SIGHUP, on the open session: the new limits, and LISTEN again if the
 * channels changed (relisten).  A failure does not end the session (or
 * db_state says the connection went with it).
 */
void
proto_reload_session(const AgentConfig *cfg, bool relisten)
{
	if (db_state == DB_READY)
		(void) proto_set_limits(cfg->statement_timeout, cfg->lock_timeout);
	if (relisten && db_state == DB_READY)
	{
		(void) proto_unlisten_all();
		if (db_state == DB_READY)
			(void) proto_listen_all(cfg);
	}
}

/*
 * coord.join of the configured partition group as member with its weight
 * (again: the weight is updated); *sqlstate gets the error's (23505:
 * another live session has the name).  Logs the segments owned.
 */
bool
proto_join(const AgentConfig *cfg, const char *member, char *sqlstate)
{
	char		weight[64];
	const char *values[3];
	PGresult   *res;

	snprintf(weight, sizeof(weight), "%.9g", cfg->weight);
	values[0] = cfg->partition_group;
	values[1] = member;
	values[2] = weight;
	res = db_run("SELECT pg_catalog.cardinality(coord.join($1, $2, weight => $3::real))",
				 3, values, PGRES_TUPLES_OK, sqlstate);
	if (res != NULL)
		log_info("joined partition group %s as %s, weight %s: %s segment(s) owned now",
				 cfg->partition_group, member, weight, PQgetvalue(res, 0, 0));
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/* coord.leave of a group this session joined before a reload. */
bool
proto_leave(const char *group)
{
	const char *values[1] = {group};
	PGresult   *res = db_run("SELECT coord.leave($1)", 1, values, PGRES_TUPLES_OK, NULL);

	if (res == NULL)
		return false;
	PQclear(res);
	log_info("left partition group %s", group);
	return true;
}

/* Whether text is a whole decimal integer (what the claim's numbers must be). */
static bool
is_integer(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '\0' || strlen(s) > 19)
		return false;
	return strspn(s, "0123456789") == strlen(s);
}

/*
 * Why a claim's result cannot be used, or NULL if it can: the columns the
 * statement asks for, at most n rows, and in every row an id, a queue, a
 * payload, an attempt and a token.
 */
static const char *
unreadable_claim(const PGresult *res, int n, int ncols)
{
	int			r;

	if (PQnfields(res) != ncols)
		return "wrong number of columns";
	if (PQntuples(res) > n)
		return "more rows than asked for";
	for (r = 0; r < PQntuples(res); r++)
	{
		int			c;

		for (c = 0; c < 5; c++)
			if (PQgetisnull(res, r, c))
				return "a row with a NULL id, queue, payload, attempt or token";
		if (!is_integer(PQgetvalue(res, r, 0)) || !is_integer(PQgetvalue(res, r, 3)) ||
			!is_integer(PQgetvalue(res, r, 4)))
			return "a row whose id, attempt or token is not an integer";
		if (!valid_name(PQgetvalue(res, r, 1)))
			return "a row with an invalid queue name";
	}
	return NULL;
}

/*
 * coord.claim of up to n jobs from a queue for this host: session-bound
 * when lease is 0, else with that lease; with pgroup only jobs of the
 * segments this session owns in that group.  CLAIM_OK: *rows holds the jobs
 * (read them with proto_claim_job; the caller clears it).  CLAIM_FAILED:
 * an error the server sent, or the connection is gone (db_state says).
 * CLAIM_UNKNOWN (the outcome is unknown, db_doubt() says why) and
 * CLAIM_UNREADABLE (*why says what is wrong with the result): the session
 * may hold claims we cannot know.
 */
ClaimStatus
proto_claim(const char *queue, int n, msec_t lease, const char *host, const char *pgroup,
			PGresult **rows, const char **why)
{
	static const char *sql =
	"SELECT id, queue, payload::text, attempt, token, "
	"payload->>'task', payload->>'app', payload->>'period_start', payload->>'period_end', "
	"COALESCE(coord.job_snoozes(id), 0) "
	"FROM coord.claim($1, $2::integer, $3::interval, $4, session_bound => $5::boolean, "
	"partition_group => $6)";
	char		nbuf[16],
				interval[48];
	const char *values[6];
	PGresult   *res;
	char		sqlstate[6];
	bool		session_bound = lease == 0;

	*rows = NULL;
	*why = NULL;
	snprintf(nbuf, sizeof(nbuf), "%d", n);
	snprintf(interval, sizeof(interval), "%lld milliseconds", (long long) (session_bound ? 300000 : lease));
	values[0] = queue;
	values[1] = nbuf;
	values[2] = interval;
	values[3] = host;
	values[4] = session_bound ? "true" : "false";
	values[5] = pgroup;
	res = db_run(sql, 6, values, PGRES_TUPLES_OK, sqlstate);
	if (res == NULL && db_doubt() != NULL)
		return CLAIM_UNKNOWN;
	if (res != NULL && (*why = unreadable_claim(res, n, 10)) != NULL)
	{
		PQclear(res);
		return CLAIM_UNREADABLE;
	}
	if (res == NULL)
		return CLAIM_FAILED;
	*rows = res;
	return CLAIM_OK;
}

static char *
dup_field(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return NULL;
	return xstrdup(PQgetvalue(res, row, col));
}

/*
 * Row r of a claim into job: id, token, attempt, queue, payload, the task
 * (payload "task", else "app", else the queue's name) and the app run's
 * fields.
 */
void
proto_claim_job(const PGresult *rows, int r, Job *job)
{
	const char *names[3] = {PQgetvalue(rows, r, 5), PQgetvalue(rows, r, 6), PQgetvalue(rows, r, 1)};
	bool		isnull[3] = {PQgetisnull(rows, r, 5), PQgetisnull(rows, r, 6), false};
	int			k;

	job->id = strtoll(PQgetvalue(rows, r, 0), NULL, 10);
	job->queue = xstrdup(PQgetvalue(rows, r, 1));
	job->payload = xstrdup(PQgetvalue(rows, r, 2));
	job->attempt = atoi(PQgetvalue(rows, r, 3));
	job->snoozes = atoi(PQgetvalue(rows, r, 9));
	job->token = strtoll(PQgetvalue(rows, r, 4), NULL, 10);
	for (k = 0; k < 3; k++)
		if (!isnull[k] && names[k][0] != '\0')
			break;
	job->task = xstrdup(names[k < 3 ? k : 2]);
	job->app = dup_field(rows, r, 6);
	job->period_start = dup_field(rows, r, 7);
	job->period_end = dup_field(rows, r, 8);
}

/*
 * coord.heartbeat of a job's claim: HEARTBEAT_VALID (*valid_until, which the
 * caller frees, the claim's new end as the server prints it),
 * HEARTBEAT_LOST (NULL: cancelled, timed out or taken over),
 * HEARTBEAT_FAILED (an error or the connection: try again later), or
 * HEARTBEAT_UNKNOWN (no whole answer: the lease may not have been renewed).
 */
HeartbeatStatus
proto_heartbeat(const Job *job, char **valid_until)
{
	char		id[24],
				token[24];
	const char *values[2];
	PGresult   *res;
	HeartbeatStatus status;

	*valid_until = NULL;
	snprintf(id, sizeof(id), "%lld", (long long) job->id);
	snprintf(token, sizeof(token), "%lld", (long long) job->token);
	values[0] = id;
	values[1] = token;
	res = db_run("SELECT coord.heartbeat($1::bigint, $2::bigint)", 2, values, PGRES_TUPLES_OK, NULL);
	if (res == NULL)
		return db_doubt() ? HEARTBEAT_UNKNOWN : HEARTBEAT_FAILED;
	if (PQgetisnull(res, 0, 0))
		status = HEARTBEAT_LOST;
	else
	{
		*valid_until = xstrdup(PQgetvalue(res, 0, 0));
		status = HEARTBEAT_VALID;
	}
	PQclear(res);
	return status;
}

/* The claim columns of a report that also claims, before the report's own (the last). */
#define NEXT_COLUMNS \
	"SELECT c.id, c.queue, c.payload::text, c.attempt, c.token, " \
	"c.payload->>'task', c.payload->>'app', c.payload->>'period_start', c.payload->>'period_end', " \
	"CASE WHEN c.id IS NOT NULL THEN COALESCE(coord.job_snoozes(c.id), 0) END, "

/* The claim arguments of a report that also claims, from parameter first on. */
static void
next_values(const NextClaim *next, const char **values, char *nbuf, size_t nlen,
			char *interval, size_t ilen)
{
	snprintf(nbuf, nlen, "%d", next->n);
	snprintf(interval, ilen, "%lld milliseconds", (long long) (next->lease == 0 ? 300000 : next->lease));
	values[0] = nbuf;
	values[1] = interval;
	values[2] = next->lease == 0 ? "true" : "false";
	values[3] = next->host;
	values[4] = next->pgroup;
}

/*
 * The jobs a report that also claimed got: next->rows (NULL when it claimed
 * none: its one row has NULL job columns) and next->status; false when the
 * result cannot be read (next->why; the session may hold claims we cannot
 * know).  The report's own answer is the last column of the first row.
 */
static bool
next_claimed(PGresult *res, NextClaim *next)
{
	int			last = PQnfields(res) - 1;

	next->rows = NULL;
	next->why = NULL;
	if (PQntuples(res) < 1 || PQnfields(res) != 11)
		next->why = "wrong number of rows or columns";
	else if (PQntuples(res) == 1 && PQgetisnull(res, 0, 0))
	{
		next->status = CLAIM_OK;	/* nothing claimed */
		return true;
	}
	else
	{
		for (int r = 1; r < PQntuples(res) && next->why == NULL; r++)
			if (PQgetisnull(res, r, last) != PQgetisnull(res, 0, last) ||
				strcmp(PQgetvalue(res, r, last), PQgetvalue(res, 0, last)) != 0)
				next->why = "rows that disagree on the report's outcome";
		if (next->why == NULL)
			next->why = unreadable_claim(res, next->n, 11);
	}
	if (next->why != NULL)
	{
		next->status = CLAIM_UNREADABLE;
		return false;
	}
	next->status = CLAIM_OK;
	next->rows = res;
	return true;
}

/*
 * coord.fail; returns the new state ('scheduled', 'dead'), "lost" when the
 * claim was no longer ours, "unknown" when it may or may not have committed
 * (db_doubt() says why), or NULL when it did not (connection or statement
 * error).
 */
char *
proto_fail(const Job *job, const char *error, msec_t retry_after, NextClaim *next)
{
	char		id[24],
				token[24],
				delay[48],
				nbuf[16],
				interval[48];
	const char *values[9];
	PGresult   *res;
	char	   *state;
	char	   *clean = clean_text(error, strlen(error));
	bool		claims = next != NULL && next->n > 0;

	snprintf(id, sizeof(id), "%lld", (long long) job->id);
	snprintf(token, sizeof(token), "%lld", (long long) job->token);
	snprintf(delay, sizeof(delay), "%lld milliseconds", (long long) retry_after);
	values[0] = id;
	values[1] = token;
	values[2] = clean;
	values[3] = retry_after >= 0 ? delay : NULL;
	if (claims)
		next_values(next, values + 4, nbuf, sizeof(nbuf), interval, sizeof(interval));

	/*
	 * NULL stays NULL (a failure, not a snooze); LEAST ignores the NULL of a
	 * server without the setting
	 */
	if (claims)
		res = db_run(NEXT_COLUMNS "c.state "
					 "FROM coord.fail_and_claim($1::bigint, $2::bigint, $3::text, "
					 "CASE WHEN $4::interval IS NOT NULL THEN LEAST($4::interval, "
					 "pg_catalog.current_setting('coord.max_retry_after', true)::interval) END, "
					 "n => $5::integer, lease => $6::interval, session_bound => $7::boolean, "
					 "host => $8, partition_group => $9) AS c",
					 9, values, PGRES_TUPLES_OK, NULL);
	else
		res = db_run("SELECT coord.fail($1::bigint, $2::bigint, $3::text, "
					 "CASE WHEN $4::interval IS NOT NULL THEN LEAST($4::interval, "
					 "pg_catalog.current_setting('coord.max_retry_after', true)::interval) END)",
					 4, values, PGRES_TUPLES_OK, NULL);
	free(clean);
	if (claims)
	{
		next->rows = NULL;
		next->status = res == NULL ? (db_doubt() ? CLAIM_UNKNOWN : CLAIM_FAILED) : CLAIM_OK;
	}
	if (res == NULL)
		return db_doubt() ? xstrdup("unknown") : NULL;
	if (claims)
	{
		int			last = PQnfields(res) - 1;

		if (!next_claimed(res, next))
		{
			/* the report is read when it can be; the caller drops the session */
			log_error("job %lld: coord.fail_and_claim returned what the agent cannot read (%s)",
					  (long long) job->id, next->why);
			state = PQntuples(res) >= 1 && PQnfields(res) == 11 ?
				xstrdup(PQgetisnull(res, 0, last) ? "lost" : PQgetvalue(res, 0, last)) : NULL;
			PQclear(res);
			return state;
		}
		state = xstrdup(PQgetisnull(res, 0, last) ? "lost" : PQgetvalue(res, 0, last));
		if (next->rows == NULL)
			PQclear(res);
		return state;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 1)
	{
		log_error("job %lld: coord.fail returned %d row(s) of %d column(s)",
				  (long long) job->id, PQntuples(res), PQnfields(res));
		PQclear(res);
		return NULL;
	}
	state = xstrdup(PQgetisnull(res, 0, 0) ? "lost" : PQgetvalue(res, 0, 0));
	PQclear(res);
	return state;
}

/*
 * coord.complete with the result, or with NULL if the server will not take
 * it (*kept says which); returns "done", "lost" (the claim was no longer
 * ours), "unknown" (it may or may not have committed: db_doubt() says why)
 * or NULL (it did not: connection or statement error).
 */
char *
proto_complete(const Job *job, const char *result, bool *kept, NextClaim *next)
{
	static const char *plain = "SELECT coord.complete($1::bigint, $2::bigint, $3::jsonb)";
	static const char *claiming = NEXT_COLUMNS "c.completed "
	"FROM coord.complete_and_claim($1::bigint, $2::bigint, $3::jsonb, n => $4::integer, "
	"lease => $5::interval, session_bound => $6::boolean, host => $7, partition_group => $8) AS c";
	char		id[24],
				token[24],
				nbuf[16],
				interval[48];
	const char *values[8];
	PGresult   *res;
	char		sqlstate[6];
	char	   *state;
	bool		claims = next != NULL && next->n > 0;
	const char *sql = claims ? claiming : plain;
	int			nparams = claims ? 8 : 3;
	int			last;

	snprintf(id, sizeof(id), "%lld", (long long) job->id);
	snprintf(token, sizeof(token), "%lld", (long long) job->token);
	values[0] = id;
	values[1] = token;
	values[2] = result;
	if (claims)
		next_values(next, values + 3, nbuf, sizeof(nbuf), interval, sizeof(interval));
	*kept = (result != NULL);
	res = db_run(sql, nparams, values, PGRES_TUPLES_OK, sqlstate);
	if (res == NULL && result != NULL && db_state == DB_READY && strncmp(sqlstate, "22", 2) == 0)
	{
		/* not JSON after all (data exception): the result is NULL */
		log_verbose("job %lld: the last line of stdout is not JSON the server takes; result NULL",
					(long long) job->id);
		values[2] = NULL;
		*kept = false;
		res = db_run(sql, nparams, values, PGRES_TUPLES_OK, NULL);
	}
	if (claims)
	{
		next->rows = NULL;
		next->status = res == NULL ? (db_doubt() ? CLAIM_UNKNOWN : CLAIM_FAILED) : CLAIM_OK;
	}
	if (res == NULL)
		return db_doubt() ? xstrdup("unknown") : NULL;
	if (claims)
	{
		last = PQnfields(res) - 1;
		if (!next_claimed(res, next))
		{
			/* the report is read when it can be; the caller drops the session */
			log_error("job %lld: coord.complete_and_claim returned what the agent cannot read (%s)",
					  (long long) job->id, next->why);
			state = PQntuples(res) >= 1 && PQnfields(res) == 11 ?
				xstrdup(strcmp(PQgetvalue(res, 0, last), "t") == 0 ? "done" : "lost") : NULL;
			PQclear(res);
			return state;
		}
		state = xstrdup(strcmp(PQgetvalue(res, 0, last), "t") == 0 ? "done" : "lost");
		if (next->rows == NULL)
			PQclear(res);
		return state;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 1)
	{
		log_error("job %lld: coord.complete returned %d row(s) of %d column(s)",
				  (long long) job->id, PQntuples(res), PQnfields(res));
		PQclear(res);
		return NULL;
	}
	state = xstrdup(strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? "done" : "lost");
	PQclear(res);
	return state;
}

/*
 * coord.claim_state of the job's claim (its token): "claimed", "released",
 * "scheduled", "done", "dead", "cancelled", or "none" (NULL: claimed again
 * since, or gone); NULL when it could not be said (sqlstate, if the server
 * sent one; db_doubt() when the answer was not whole).  The transaction
 * also writes a logical message, so that its commit waits for the
 * synchronous standby, if there is one, like any other: a whole answer
 * then says that everything this server committed before it, the report
 * in doubt included, is on the standby too.
 */
char *
proto_claim_state(const Job *job, char *sqlstate)
{
	char		id[24],
				token[24];
	const char *values[2];
	PGresult   *res;
	char	   *state;

	snprintf(id, sizeof(id), "%lld", (long long) job->id);
	snprintf(token, sizeof(token), "%lld", (long long) job->token);
	values[0] = id;
	values[1] = token;
	res = db_run("SELECT coord.claim_state($1::bigint, $2::bigint) "
				 "FROM pg_catalog.pg_logical_emit_message(true, 'coord-agent', 'claim_state') AS fence",
				 2, values, PGRES_TUPLES_OK, sqlstate);
	if (res == NULL)
		return NULL;
	if (PQntuples(res) != 1 || PQnfields(res) != 1)
	{
		log_error("job %lld: coord.claim_state returned %d row(s) of %d column(s)",
				  (long long) job->id, PQntuples(res), PQnfields(res));
		PQclear(res);
		return NULL;
	}
	state = xstrdup(PQgetisnull(res, 0, 0) ? "none" : PQgetvalue(res, 0, 0));
	PQclear(res);
	return state;
}

/*
 * When the earliest job of the agent's queues could be claimed, by the
 * server's clock: *wait_ms the milliseconds from now (0: due already), or
 * -1 when no queue names a time (coord.next_due is NULL: no job waits, or
 * every one waits for coord.resume, which wakes; an infinite time counts as
 * none).  The difference is taken on the server, so that a skew of the
 * agent's clock changes nothing.  False on an error (db_state says whether
 * the connection went with it).
 */
bool
proto_next_due(const AgentConfig *cfg, msec_t *wait_ms)
{
	static const char *sql =
	"SELECT pg_catalog.ceil(EXTRACT(EPOCH FROM pg_catalog.min(d) OPERATOR(pg_catalog.-) "
	"pg_catalog.clock_timestamp()) * 1000)::pg_catalog.int8 "
	"FROM (SELECT coord.next_due(q) AS d FROM pg_catalog.unnest($1::pg_catalog.text[]) AS q) AS s "
	"WHERE pg_catalog.isfinite(d)";
	const char *values[1];
	PGresult   *res;
	char	   *list;
	size_t		len = 3;
	size_t		off = 0;
	int			i;

	*wait_ms = -1;
	/* an array literal: queue names are valid_name()s, nothing to escape */
	for (i = 0; i < cfg->nqueues; i++)
		len += strlen(cfg->queues[i]) + 3;
	list = xmalloc(len);
	list[off++] = '{';
	for (i = 0; i < cfg->nqueues; i++)
		off += snprintf(list + off, len - off, "%s\"%s\"", i ? "," : "", cfg->queues[i]);
	snprintf(list + off, len - off, "}");
	values[0] = list;
	res = db_run(sql, 1, values, PGRES_TUPLES_OK, NULL);
	free(list);
	if (res == NULL)
		return false;
	if (PQntuples(res) != 1 || PQnfields(res) != 1)
	{
		log_error("coord.next_due returned %d row(s) of %d column(s)", PQntuples(res), PQnfields(res));
		PQclear(res);
		return false;
	}
	if (!PQgetisnull(res, 0, 0))
	{
		long long	ms = strtoll(PQgetvalue(res, 0, 0), NULL, 10);

		*wait_ms = ms > 0 ? (msec_t) ms : 0;
	}
	PQclear(res);
	return true;
}

/* ---------- "coord-agent status" ---------- */

/* The session's limits (as proto_set_limits, on status's connection). */
PGresult *
proto_status_limits(PGconn *conn, msec_t statement_timeout, msec_t lock_timeout)
{
	char		st[32],
				lt[32];
	const char *limits[2] = {st, lt};

	snprintf(st, sizeof(st), "%lldms", (long long) statement_timeout);
	snprintf(lt, sizeof(lt), "%lldms", (long long) lock_timeout);
	return PQexecParams(conn, set_limits_sql, 2, NULL, limits, NULL, NULL, 0);
}

/*
 * One row: pg_coord's extversion (NULL: not installed), the database, the
 * server's time.
 */
PGresult *
proto_status_header(PGconn *conn)
{
	return PQexec(conn,
				  "SELECT (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_coord'), "
				  "pg_catalog.current_database(), pg_catalog.to_char(pg_catalog.now(), 'YYYY-MM-DD HH24:MI:SS TZ')");
}

/*
 * One row, what the role may read: current_user, it quote_ident'ed, then
 * booleans: coord.queue_stats, coord.jobs (any column), coord.locks,
 * whether coord.grid() exists, EXECUTE on it, coord.jobs.payload.
 * to_regclass/to_regprocedure give NULL (and so do the privilege
 * functions) for an object this pg_coord does not have.
 */
PGresult *
proto_status_access(PGconn *conn)
{
	return PQexec(conn,
				  "SELECT CURRENT_USER, pg_catalog.quote_ident(CURRENT_USER), "
				  "pg_catalog.has_table_privilege(pg_catalog.to_regclass('coord.queue_stats'), 'SELECT'), "
				  "pg_catalog.has_any_column_privilege(pg_catalog.to_regclass('coord.jobs'), 'SELECT'), "
				  "pg_catalog.has_table_privilege(pg_catalog.to_regclass('coord.locks'), 'SELECT'), "
				  "g IS NOT NULL, pg_catalog.has_function_privilege(g, 'EXECUTE'), "
				  "pg_catalog.has_column_privilege(pg_catalog.to_regclass('coord.jobs'), 'payload', 'SELECT') "
				  "FROM pg_catalog.to_regprocedure('coord.grid(timestamptz,timestamptz,text[])') AS g");
}

/*
 * coord.queue_stats by queue: queue, ready, running, scheduled, dead,
 * done_last_hour, and the oldest ready job's age in ms ('' if none).
 */
PGresult *
proto_status_queues(PGconn *conn)
{
	return PQexec(conn,
				  "SELECT queue, ready, running, scheduled, dead, done_last_hour, "
				  "COALESCE(floor(extract(epoch FROM oldest_ready_age) * 1000)::bigint::text, '') "
				  "FROM coord.queue_stats ORDER BY queue");
}

/*
 * The first 30 running jobs of coord.jobs, longest running first: id,
 * queue, task (only with payload: the task is named in the payload, which
 * only coord_admin may read), attempt, host (''), ms since the claim, and
 * how many run in all.
 */
PGresult *
proto_status_running(PGconn *conn, bool payload)
{
	return PQexec(conn, payload ?
				  "SELECT id, queue, COALESCE(NULLIF(payload->>'task', ''), NULLIF(payload->>'app', ''), queue), "
				  "attempt, COALESCE(host, ''), "
				  "COALESCE(floor(extract(epoch FROM now() - claimed_at) * 1000)::bigint::text, ''), "
				  "count(*) OVER () "
				  "FROM coord.jobs WHERE state = 'running' ORDER BY claimed_at, id LIMIT 30" :
				  "SELECT id, queue, '(payload not readable)', "
				  "attempt, COALESCE(host, ''), "
				  "COALESCE(floor(extract(epoch FROM now() - claimed_at) * 1000)::bigint::text, ''), "
				  "count(*) OVER () "
				  "FROM coord.jobs WHERE state = 'running' ORDER BY claimed_at, id LIMIT 30");
}

/*
 * coord.locks: path, mode, 'held' or 'waiting', pid, application_name (''),
 * client_addr ('local'), ms waited ('' when held).
 */
PGresult *
proto_status_locks(PGconn *conn)
{
	return PQexec(conn,
				  "SELECT path, mode, CASE WHEN granted THEN 'held' ELSE 'waiting' END, pid, "
				  "COALESCE(application_name, ''), COALESCE(client_addr::text, 'local'), "
				  "COALESCE(floor(extract(epoch FROM now() - wait_start) * 1000)::bigint::text, '') "
				  "FROM coord.locks ORDER BY path, granted DESC, pid");
}

/* coord.grid() of the last day: its lines, to print as they come. */
PGresult *
proto_status_grid(PGconn *conn)
{
	return PQexec(conn, "SELECT * FROM coord.grid(pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::pg_catalog.interval, "
				  "pg_catalog.now(), NULL)");
}
