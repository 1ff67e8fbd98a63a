/*-------------------------------------------------------------------------
 * protocol.c
 *		the statements coord-agent sends to pg_coord (moved from agent.c).
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_agent.h"
#include "db.h"
#include "protocol.h"

/*
 * The session's statement_timeout and lock_timeout, from the
 * configuration: at connect, and again after a reload.
 */
bool
set_session_limits(void)
{
	char		st[32],
				lt[32];
	const char *values[2] = {st, lt};
	PGresult   *res;

	snprintf(st, sizeof(st), "%lldms", (long long) cfg->statement_timeout);
	snprintf(lt, sizeof(lt), "%lldms", (long long) cfg->lock_timeout);
	res = run_sql("SELECT pg_catalog.set_config('statement_timeout', $1, false), "
				  "pg_catalog.set_config('lock_timeout', $2, false)",
				  2, values, PGRES_TUPLES_OK, NULL);
	if (res == NULL)
		return false;
	PQclear(res);
	log_verbose("session: statement_timeout %s, lock_timeout %s", st, lt);
	return true;
}

/* LISTEN on every channel that can bring us work. */
bool
listen_all(void)
{
	int			i;

	for (i = 0; i <= cfg->nqueues; i++)
	{
		char	   *channel = i < cfg->nqueues ? xasprintf("coord:%s", cfg->queues[i])
			: xasprintf("coord:host:%s", cfg->host);
		char	   *ident = PQescapeIdentifier(conn, channel, strlen(channel));
		char	   *sql = xasprintf("LISTEN %s", ident ? ident : "\"\"");
		PGresult   *res = run_sql(sql, 0, NULL, PGRES_COMMAND_OK, NULL);

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
 * coord.fail; returns the new state ('scheduled', 'dead'), "lost" when the
 * claim was no longer ours, or NULL when it could not be said (connection
 * or statement error).
 */
char *
fail_job(const Job *job, const char *error, msec_t retry_after)
{
	char		id[24],
				token[24],
				delay[48];
	const char *values[4];
	PGresult   *res;
	char	   *state;
	char	   *clean = clean_text(error, strlen(error));

	snprintf(id, sizeof(id), "%lld", (long long) job->id);
	snprintf(token, sizeof(token), "%lld", (long long) job->token);
	snprintf(delay, sizeof(delay), "%lld milliseconds", (long long) retry_after);
	values[0] = id;
	values[1] = token;
	values[2] = clean;
	values[3] = retry_after >= 0 ? delay : NULL;
	res = run_sql("SELECT coord.fail($1::bigint, $2::bigint, $3::text, $4::interval)",
				  4, values, PGRES_TUPLES_OK, NULL);
	free(clean);
	if (res == NULL)
		return NULL;
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
 * it (*kept says which).
 */
char *
complete_job(const Job *job, const char *result, bool *kept)
{
	char		id[24],
				token[24];
	const char *values[3];
	PGresult   *res;
	char		sqlstate[6];
	char	   *state;

	snprintf(id, sizeof(id), "%lld", (long long) job->id);
	snprintf(token, sizeof(token), "%lld", (long long) job->token);
	values[0] = id;
	values[1] = token;
	values[2] = result;
	*kept = (result != NULL);
	res = run_sql("SELECT coord.complete($1::bigint, $2::bigint, $3::jsonb)",
				  3, values, PGRES_TUPLES_OK, sqlstate);
	if (res == NULL && result != NULL && db_state == DB_READY && strncmp(sqlstate, "22", 2) == 0)
	{
		/* not JSON after all (data exception): the result is NULL */
		log_verbose("job %lld: the last line of stdout is not JSON the server takes; result NULL",
					(long long) job->id);
		values[2] = NULL;
		*kept = false;
		res = run_sql("SELECT coord.complete($1::bigint, $2::bigint, $3::jsonb)",
					  3, values, PGRES_TUPLES_OK, NULL);
	}
	if (res == NULL)
		return NULL;
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
