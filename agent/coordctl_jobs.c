/*-------------------------------------------------------------------------
 * coordctl_jobs.c
 *		coordctl enqueue, jobs, job, retry, cancel, await (docs/coordctl.md):
 *		coord.enqueue, the view coord.jobs (coord.my_jobs for a role that may
 *		read only its own jobs), coord.retry, coord.cancel, coord.await.
 *
 * Arguments are checked here first (an id is a number, a payload JSON)
 * so that a mistyped command is a usage error (2), not the server's.
 * Columns a role may not read (coord_monitor: payload, result,
 * last_error, progress) are left out rather than failing the statement.
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordctl.h"

static const char *const job_states[] = {"scheduled", "ready", "running", "waiting", "done", "dead", "cancelled", NULL};

static bool
valid_int(const char *s)
{
	char	   *end;
	long		v = strtol(s, &end, 10);

	return *s && *end == '\0' && v >= -2147483647L && v <= 2147483647L;
}

/* "1,2, 3" as the array literal "{1,2,3}"; NULL if an element is not an id */
static char *
id_list(const char *s)
{
	Buf			b = {0};
	char	   *copy = xstrdup(s);
	char	   *tok,
			   *save = NULL;
	bool		ok = true;

	buf_append(&b, "{", 1);
	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
	{
		if (!ctl_valid_id(tok))
			ok = false;
		if (b.len > 1)
			buf_append(&b, ",", 1);
		buf_append(&b, tok, strlen(tok));
	}
	buf_append(&b, "}", 2);
	free(copy);
	if (!ok || b.len <= 3)
	{
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* All of stdin (a payload given as "-"). */
static char *
read_stdin(void)
{
	Buf			b = {0};
	char		chunk[8192];
	ssize_t		n;

	buf_append(&b, "", 0);
	while ((n = read(STDIN_FILENO, chunk, sizeof(chunk))) > 0)
		buf_append(&b, chunk, n);
	buf_append(&b, "", 1);
	return b.data;
}

int
ctl_enqueue(int argc, char **argv)
{
	const char *run_at = NULL,
			   *key = NULL,
			   *priority = NULL,
			   *after = NULL;
	const CtlOpt opts[] = {
		{"run-at", 0, &run_at, NULL},
		{"key", 0, &key, NULL},
		{"priority", 0, &priority, NULL},
		{"after", 0, &after, NULL},
		{NULL, 0, NULL, NULL}
	};
	char	  **args;
	int			nargs,
				rc;
	char	   *payload = NULL,
			   *after_arr = NULL;
	const char *params[6];
	PGconn	   *conn;
	PGresult   *res;

	rc = ctl_parse(argc, argv, opts, "QUEUE [PAYLOAD|-] [--run-at T] [--key K] [--priority N] [--after ID,...]",
				   1, 2, &args, &nargs);
	if (rc >= 0)
		goto out;
	if (nargs == 2)
	{
		payload = strcmp(args[1], "-") == 0 ? read_stdin() : xstrdup(args[1]);
		if (!json_valid(payload))
		{
			rc = ctl_usage("the payload is not JSON: %.60s", payload);
			goto out;
		}
	}
	if (priority && !valid_int(priority))
	{
		rc = ctl_usage("--priority takes an integer, not \"%s\"", priority);
		goto out;
	}
	if (after && (after_arr = id_list(after)) == NULL)
	{
		rc = ctl_usage("--after takes job ids separated by commas, not \"%s\"", after);
		goto out;
	}
	if ((conn = ctl_connect(&rc)) == NULL)
		goto out;
	params[0] = args[0];
	params[1] = payload;
	params[2] = run_at;
	params[3] = priority;
	params[4] = key;
	params[5] = after_arr;
	res = ctl_exec(conn,
				   "SELECT coord.enqueue($1, COALESCE($2::pg_catalog.jsonb, '{}'::pg_catalog.jsonb), "
				   "run_at => $3::pg_catalog.timestamptz, priority => COALESCE($4::pg_catalog.int4, 0), "
				   "key => $5, after => $6::pg_catalog.int8[])",
				   6, params, PGRES_TUPLES_OK, "coord_worker", &rc);
	if (res)
	{
		if (ctl_json)
			printf("{\"id\": %s}\n", PQgetvalue(res, 0, 0));
		else
			printf("%s\n", PQgetvalue(res, 0, 0));
		PQclear(res);
		rc = 0;
	}
	PQfinish(conn);
out:
	free(payload);
	free(after_arr);
	free(args);
	return rc;
}

/*
 * Which view holds the jobs this role may read: coord.jobs (coord_monitor,
 * coord_admin), else coord.my_jobs (its own jobs); whether it may read the
 * columns coord_monitor may not; and (parents, when not NULL) whether it may
 * read coord.job_parents.  NULL: a failed statement (*rc).
 */
static const char *
jobs_view(PGconn *conn, bool *secrets, bool *parents, int *rc)
{
	PGresult   *res = ctl_exec(conn,
							   "SELECT pg_catalog.has_any_column_privilege('coord.jobs', 'SELECT'), "
							   "pg_catalog.has_column_privilege('coord.jobs', 'payload', 'SELECT'), "
							   "pg_catalog.has_table_privilege('coord.my_jobs', 'SELECT'), "
							   "COALESCE(pg_catalog.has_table_privilege("
							   "pg_catalog.to_regclass('coord.job_parents'), 'SELECT'), false)",
							   0, NULL, PGRES_TUPLES_OK, NULL, rc);
	const char *view;

	if (res == NULL)
		return NULL;
	/* coord.job_parents (0.4.0): for coord_monitor and coord_admin */
	if (parents)
		*parents = PQgetvalue(res, 0, 3)[0] == 't';
	if (PQgetvalue(res, 0, 0)[0] == 't')
	{
		view = "coord.jobs";
		*secrets = PQgetvalue(res, 0, 1)[0] == 't';
	}
	else if (PQgetvalue(res, 0, 2)[0] == 't')
	{
		view = "coord.my_jobs";
		*secrets = true;
	}
	else
		view = "coord.jobs";	/* and the error names the GRANT */
	PQclear(res);
	return view;
}

int
ctl_jobs(int argc, char **argv)
{
	const char *queue = NULL,
			   *state = NULL,
			   *limit = "50";
	const CtlOpt opts[] = {
		{"queue", 'q', &queue, NULL},
		{"state", 's', &state, NULL},
		{"limit", 'n', &limit, NULL},
		{NULL, 0, NULL, NULL}
	};
	char	  **args;
	int			nargs,
				rc,
				i;
	bool		secrets = false;
	const char *view;
	const char *params[3];
	char	   *sql;
	PGconn	   *conn;

	rc = ctl_parse(argc, argv, opts, "[--queue Q] [--state S] [--limit N]", 0, 0, &args, &nargs);
	free(args);
	if (rc >= 0)
		return rc;
	if (state)
	{
		for (i = 0; job_states[i] && strcmp(job_states[i], state) != 0; i++)
			;
		if (job_states[i] == NULL)
			return ctl_usage("--state is one of scheduled, ready, running, waiting, done, dead, cancelled; not \"%s\"", state);
	}
	if (!ctl_valid_id(limit) || strspn(limit, "0") == strlen(limit))
		return ctl_usage("--limit takes a positive integer, not \"%s\"", limit);
	if ((conn = ctl_connect(&rc)) == NULL)
		return rc;
	if ((view = jobs_view(conn, &secrets, NULL, &rc)) == NULL)
	{
		PQfinish(conn);
		return rc;
	}
	params[0] = queue;
	params[1] = state;
	params[2] = limit;
	sql = xasprintf("SELECT id, queue, state, attempt, max_attempts, key, priority, "
					"pg_catalog.date_trunc('second', run_at) AS run_at, "
					"pg_catalog.date_trunc('second', enqueued_at) AS enqueued_at, "
					"pg_catalog.date_trunc('second', finished_at) AS finished_at%s "
					"FROM %s WHERE ($1::pg_catalog.text IS NULL OR queue OPERATOR(pg_catalog.=) $1) "
					"AND ($2::pg_catalog.text IS NULL OR state OPERATOR(pg_catalog.=) $2) "
					"ORDER BY id DESC LIMIT $3::pg_catalog.int8",
					secrets ? ", last_error" : "", view);
	rc = ctl_list(conn, sql, 3, params, "coord_monitor", "(no jobs)");
	free(sql);
	PQfinish(conn);
	return rc;
}

int
ctl_job(int argc, char **argv)
{
	char	  **args;
	int			nargs,
				rc;
	bool		secrets = false,
				parents = false;
	const char *view;
	char	   *sql,
			   *notfound;
	PGconn	   *conn;

	if ((rc = ctl_begin(argc, argv, NULL, "ID", 1, 1, 0, &args, &nargs, &conn)) >= 0)
		return rc;
	if ((view = jobs_view(conn, &secrets, &parents, &rc)) == NULL)
	{
		PQfinish(conn);
		free(args);
		return rc;
	}
	sql = xasprintf("SELECT id, queue, state, %s run_at, priority, key, group_key, limit_key, host, "
					"attempt, max_attempts, snoozes, %s enqueued_at, enqueued_by::pg_catalog.text AS enqueued_by, "
					"claimed_at, claimed_by::pg_catalog.text AS claimed_by, lease_until, finished_at, "
					"expires_at, origin%s "
					"FROM %s AS j WHERE id OPERATOR(pg_catalog.=) $1::pg_catalog.int8",
					secrets ? "payload," : "",
					secrets ? "result, last_error, progress," : "",
					parents ? ", (SELECT pg_catalog.array_agg(p.parent ORDER BY p.parent) "
					"FROM coord.job_parents AS p WHERE p.job OPERATOR(pg_catalog.=) j.id) AS parents" : "",
					view);
	notfound = xasprintf("no job %s (never enqueued, purged from the history, or not this role's)", args[0]);
	rc = ctl_record(conn, sql, 1, (const char *const *) args, "coord_monitor", notfound);
	free(notfound);
	free(sql);
	PQfinish(conn);
	free(args);
	return rc;
}

/*
 * retry and cancel: one id, one function returning boolean; false is exit 1
 * with the job's state (why it was refused).
 */
static int
job_action(int argc, char **argv, const char *fn, const char *done, const char *grant)
{
	char	  **args;
	int			nargs,
				rc;
	PGconn	   *conn;
	PGresult   *res;
	char	   *sql;

	if ((rc = ctl_begin(argc, argv, NULL, "ID", 1, 1, 0, &args, &nargs, &conn)) >= 0)
		return rc;
	sql = xasprintf("SELECT %s($1::pg_catalog.int8), coord.job_state($1::pg_catalog.int8)", fn);
	res = ctl_exec(conn, sql, 1, (const char *const *) args, PGRES_TUPLES_OK, grant, &rc);
	free(sql);
	if (res)
	{
		bool		ok = PQgetvalue(res, 0, 0)[0] == 't';
		const char *state = PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1);

		if (ctl_json)
			printf("{\"id\": %s, \"%s\": %s, \"state\": %s%s%s}\n", args[0], done, ok ? "true" : "false",
				   state ? "\"" : "", state ? state : "null", state ? "\"" : "");
		else if (ok)
			printf("job %s %s (now %s)\n", args[0], done, state ? state : "unknown");
		if (!ok)
		{
			if (state)
				ctl_fail("job %s was not %s: it is %s", args[0], done, state);
			else
				ctl_fail("job %s was not %s: no such job (or purged)", args[0], done);
		}
		rc = ok ? 0 : CLI_EXIT_ERROR;
		PQclear(res);
	}
	PQfinish(conn);
	free(args);
	return rc;
}

int
ctl_retry(int argc, char **argv)
{
	return job_action(argc, argv, "coord.retry", "retried", "coord_admin");
}

int
ctl_cancel(int argc, char **argv)
{
	return job_action(argc, argv, "coord.cancel", "cancelled", "coord_admin");
}

int
ctl_await(int argc, char **argv)
{
	const char *timeout = NULL;
	const CtlOpt opts[] = {
		{"timeout", 't', &timeout, NULL},
		{NULL, 0, NULL, NULL}
	};
	char	  **args;
	int			nargs,
				rc;
	msec_t		ms = 0;
	char		secs[32];
	const char *params[2];
	PGconn	   *conn;
	PGresult   *res;

	rc = ctl_parse(argc, argv, opts, "ID [--timeout S]", 1, 1, &args, &nargs);
	if (rc < 0 && !ctl_valid_id(args[0]))
		rc = ctl_usage("a job id is a positive integer, not \"%s\"", args[0]);
	if (rc < 0 && timeout && !parse_duration(timeout, &ms))
		rc = ctl_usage("--timeout takes seconds or a duration such as 30s or 5m, not \"%s\"", timeout);
	if (rc >= 0 || (conn = ctl_connect(&rc)) == NULL)
	{
		free(args);
		return rc;
	}
	snprintf(secs, sizeof(secs), "%.3f", ms / 1000.0);
	params[0] = args[0];
	params[1] = timeout ? secs : NULL;
	rc = 0;
	res = ctl_exec(conn,
				   "SELECT state, result, error FROM coord.await($1::pg_catalog.int8, "
				   "pg_catalog.make_interval(secs => $2::pg_catalog.float8))",
				   2, params, PGRES_TUPLES_OK, "coord_monitor", &rc);
	if (res)
	{
		bool		timed_out = PQgetisnull(res, 0, 0);
		const char *state = PQgetvalue(res, 0, 0);
		const char *out[4];

		out[0] = args[0];
		out[1] = timed_out ? NULL : state;
		out[2] = PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1);
		out[3] = PQgetisnull(res, 0, 2) ? NULL : PQgetvalue(res, 0, 2);
		if (ctl_json)
			rc = ctl_print_json(conn, "SELECT pg_catalog.json_build_object('id', $1::pg_catalog.int8, "
								"'state', $2::pg_catalog.text, 'result', $3::pg_catalog.jsonb, 'error', $4::pg_catalog.text)",
								4, out);
		else if (!timed_out)
		{
			char	   *r = escape_text(PQgetvalue(res, 0, 1)),
					   *e = escape_text(PQgetvalue(res, 0, 2));

			printf("job %s %s%s%s%s%s\n", args[0], state,
				   *r ? ": " : "", r, *e ? ": " : "", e);
			free(r);
			free(e);
		}
		if (timed_out)
			rc = ctl_fail("job %s had not finished when the timeout passed", args[0]);
		else if (rc == 0 && strcmp(state, "done") != 0)
			rc = CLI_EXIT_ERROR;
		PQclear(res);
	}
	PQfinish(conn);
	free(args);
	return rc;
}
