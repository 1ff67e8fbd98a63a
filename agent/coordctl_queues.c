/*-------------------------------------------------------------------------
 * coordctl_queues.c
 *		coordctl pause, resume, stats (docs/coordctl.md): coord.pause,
 *		coord.resume and the view coord.queue_stats.
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordctl.h"

/*
 * pause and resume: the function's boolean says whether the state changed
 * (false: paused already, the new end replacing the old; not paused); both
 * are success.
 */
static int
pause_resume(int argc, char **argv, bool pause)
{
	const char *until = NULL,
			   *key = NULL;
	const CtlOpt pause_opts[] = {
		{"until", 0, &until, NULL},
		{"key", 'k', &key, NULL},
		{NULL, 0, NULL, NULL}
	};
	const CtlOpt *opts = pause_opts + (pause ? 0 : 1);
	char	  **args;
	int			nargs,
				rc;
	const char *params[3];
	PGconn	   *conn;
	PGresult   *res;

	if ((rc = ctl_begin(argc, argv, opts, pause ? "QUEUE [--until T] [--key K]" : "QUEUE [--key K]",
						1, 1, -1, &args, &nargs, &conn)) >= 0)
		return rc;
	params[0] = args[0];
	params[1] = key;
	params[2] = until;
	res = ctl_exec(conn, pause ?
				   "SELECT coord.pause($1, $3::pg_catalog.timestamptz, $2), "
				   "COALESCE($3::pg_catalog.timestamptz, 'infinity')" :
				   "SELECT coord.resume($1, $2), NULL::pg_catalog.timestamptz",
				   pause ? 3 : 2, params, PGRES_TUPLES_OK, "coord_admin", &rc);
	if (res)
	{
		bool		changed = PQgetvalue(res, 0, 0)[0] == 't';
		char	   *q = escape_text(args[0]);
		char	   *k = key ? escape_text(key) : NULL;
		const char *out[5];

		out[0] = args[0];
		out[1] = key;
		out[2] = pause ? "t" : "f";
		out[3] = PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1);
		out[4] = changed ? "t" : "f";
		if (ctl_json)
			rc = ctl_print_json(conn, "SELECT pg_catalog.json_build_object('queue', $1::pg_catalog.text, "
								"'key', $2::pg_catalog.text, 'paused', $3::pg_catalog.bool, "
								"'until', $4::pg_catalog.timestamptz, 'changed', $5::pg_catalog.bool)",
								5, out);
		else if (pause)
			printf("%s%s%s%s paused until %s%s\n", k ? "key " : "queue ", k ? k : q,
				   k ? " of queue " : "", k ? q : "",
				   strcmp(PQgetvalue(res, 0, 1), "infinity") == 0 ? "resumed" : PQgetvalue(res, 0, 1),
				   changed ? "" : " (it was paused already: the new end replaces the old)");
		else
			printf("%s%s%s%s %s\n", k ? "key " : "queue ", k ? k : q,
				   k ? " of queue " : "", k ? q : "",
				   changed ? "resumed" : "was not paused");
		free(q);
		free(k);
		PQclear(res);
		if (rc < 0)
			rc = 0;
	}
	PQfinish(conn);
	free(args);
	return rc;
}

int
ctl_pause(int argc, char **argv)
{
	return pause_resume(argc, argv, true);
}

int
ctl_resume(int argc, char **argv)
{
	return pause_resume(argc, argv, false);
}

int
ctl_stats(int argc, char **argv)
{
	return ctl_simple_list(argc, argv,
						   "SELECT queue, ready, scheduled, running, dead, done_last_hour, "
						   "pg_catalog.round(pg_catalog.date_part('epoch', oldest_ready_age)::pg_catalog.numeric, 3) AS oldest_ready_s, "
						   "paused_until, paused_keys, limited_keys "
						   "FROM coord.queue_stats ORDER BY queue",
						   "coord_monitor", "(no queue has jobs)");
}
