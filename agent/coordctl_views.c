/*-------------------------------------------------------------------------
 * coordctl_views.c
 *		coordctl schedules, grid, rerun, locks, leaders, members, alerts
 *		(docs/coordctl.md): the views coord.schedules, coord.runs,
 *		coord.locks, coord.members, coord.alerts, and the functions
 *		coord.grid, coord.rerun, coord.leader.
 *
 * No view lists the elections (their table is the owner's): "leaders"
 * asks coord.leader for the elections it is given, else for those
 * coord.metrics names (label "election"), when this pg_coord has it.
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordctl.h"

int
ctl_schedules(int argc, char **argv)
{
	return ctl_simple_list(argc, argv,
						   "SELECT name, queue, every, cron, tz, "
						   "pg_catalog.date_trunc('second', next_run_at) AS next_run_at, "
						   "pg_catalog.date_trunc('second', last_run_at) AS last_run_at, "
						   "last_state, running, job_id FROM coord.schedules ORDER BY name",
						   "coord_monitor", "(no schedules)");
}

int
ctl_locks(int argc, char **argv)
{
	return ctl_simple_list(argc, argv,
						   "SELECT path, mode, CASE WHEN granted THEN 'held' ELSE 'waiting' END AS state, pid, "
						   "application_name AS application, client_addr::pg_catalog.text AS client, "
						   "pg_catalog.round(pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) wait_start)::pg_catalog.numeric, 3) AS waiting_s "
						   "FROM coord.locks ORDER BY path, granted DESC, wait_start",
						   "coord_monitor", "(no lock is held or awaited)");
}

int
ctl_members(int argc, char **argv)
{
	return ctl_simple_list(argc, argv,
						   "SELECT partition_group AS \"group\", member, weight, alive, pid, owned, "
						   "pg_catalog.round(target_share::pg_catalog.numeric, 4) AS target_share, "
						   "pg_catalog.round(owned_share::pg_catalog.numeric, 4) AS owned_share "
						   "FROM coord.members ORDER BY partition_group, member",
						   "coord_monitor", "(no partition group has members)");
}

int
ctl_alerts(int argc, char **argv)
{
	bool		all = false;
	const CtlOpt opts[] = {
		{"all", 'a', NULL, &all},
		{NULL, 0, NULL, NULL}
	};
	char	  **args;
	int			nargs,
				rc;
	PGconn	   *conn;
	const char *all_param;

	if ((rc = ctl_begin(argc, argv, opts, "[--all]", 0, 0, -1, &args, &nargs, &conn)) >= 0)
		return rc;
	free(args);
	all_param = all ? "t" : "f";
	/* $1: all, else the open ones only */
	rc = ctl_list(conn,
				  "SELECT app, period_start, kind, pg_catalog.date_trunc('second', raised_at) AS raised_at, "
				  "pg_catalog.date_trunc('second', cleared_at) AS cleared_at, events, detail "
				  "FROM coord.alerts WHERE $1::pg_catalog.bool OR cleared_at IS NULL ORDER BY raised_at DESC, app",
				  1, &all_param,
				  "coord_monitor", all ? "(no alerts)" : "(no open alerts)");
	PQfinish(conn);
	return rc;
}

int
ctl_grid(int argc, char **argv)
{
	const char *from = NULL,
			   *to = NULL;
	const CtlOpt opts[] = {
		{"from", 0, &from, NULL},
		{"to", 0, &to, NULL},
		{NULL, 0, NULL, NULL}
	};
	char	  **args;
	int			nargs,
				rc,
				r;
	const char *params[2];
	PGconn	   *conn;
	PGresult   *res;

	if ((rc = ctl_begin(argc, argv, opts, "[--from T] [--to T]", 0, 0, -1, &args, &nargs, &conn)) >= 0)
		return rc;
	free(args);
	params[0] = from;
	params[1] = to;
	if (ctl_json)

		/*
		 * the grid's data: the current run of each app and period in the
		 * window
		 */
		rc = ctl_list(conn,
					  "SELECT app, period_start, period_end, state, attempts, job_id, host "
					  "FROM coord.runs WHERE current "
					  "AND period_end OPERATOR(pg_catalog.>) COALESCE($1::pg_catalog.timestamptz, pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::pg_catalog.interval) "
					  "AND period_start OPERATOR(pg_catalog.<) COALESCE($2::pg_catalog.timestamptz, pg_catalog.now()) "
					  "ORDER BY app, period_start",
					  2, params, "coord_monitor", "[]");
	else
	{
		res = ctl_exec(conn,
					   "SELECT g FROM coord.grid(COALESCE($1::pg_catalog.timestamptz, pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::pg_catalog.interval), "
					   "COALESCE($2::pg_catalog.timestamptz, pg_catalog.now())) AS g",
					   2, params, PGRES_TUPLES_OK, "coord_monitor", &rc);
		if (res)
		{
			for (r = 0; r < PQntuples(res); r++)
			{
				char	   *line = escape_text(PQgetvalue(res, r, 0));

				printf("%s\n", line);
				free(line);
			}
			PQclear(res);
			rc = 0;
		}
	}
	PQfinish(conn);
	return rc;
}

int
ctl_rerun(int argc, char **argv)
{
	bool		no_downstream = false;
	const CtlOpt opts[] = {
		{"no-downstream", 0, NULL, &no_downstream},
		{NULL, 0, NULL, NULL}
	};
	char	  **args;
	int			nargs,
				rc;
	const char *params[4];
	PGconn	   *conn;
	PGresult   *res;

	if ((rc = ctl_begin(argc, argv, opts, "APP FROM TO [--no-downstream]", 3, 3, -1, &args, &nargs, &conn)) >= 0)
		return rc;
	params[0] = args[0];
	params[1] = args[1];
	params[2] = args[2];
	params[3] = no_downstream ? "f" : "t";
	res = ctl_exec(conn,
				   "SELECT coord.rerun($1, $2::pg_catalog.timestamptz, $3::pg_catalog.timestamptz, $4::pg_catalog.bool), "
				   "pg_catalog.json_build_object('app', $1::pg_catalog.text, 'from', $2::pg_catalog.timestamptz, "
				   "'to', $3::pg_catalog.timestamptz, 'downstream', $4::pg_catalog.bool)::pg_catalog.jsonb",
				   4, params, PGRES_TUPLES_OK, "coord_admin", &rc);
	if (res)
	{
		char	   *app = escape_text(args[0]);

		if (ctl_json)
		{
			/* {"app", "from", "to", "downstream", "reset"} */
			const char *obj = PQgetvalue(res, 0, 1);

			printf("%.*s, \"reset\": %s}\n", (int) strlen(obj) - 1, obj, PQgetvalue(res, 0, 0));
		}
		else
			printf("app %s: %s run%s reset\n", app, PQgetvalue(res, 0, 0),
				   strcmp(PQgetvalue(res, 0, 0), "1") == 0 ? "" : "s");
		free(app);
		PQclear(res);
		rc = 0;
	}
	PQfinish(conn);
	free(args);
	return rc;
}

int
ctl_leaders(int argc, char **argv)
{
	char	  **args;
	int			nargs,
				rc,
				i;
	PGconn	   *conn;
	Buf			arr = {0};
	const char *params[1];

	if ((rc = ctl_begin(argc, argv, NULL, "[ELECTION]...", 0, 1000, -1, &args, &nargs, &conn)) >= 0)
		return rc;
	/* the names as a text[] literal, each quoted */
	buf_append(&arr, "{", 1);
	for (i = 0; i < nargs; i++)
	{
		const char *p;

		buf_append(&arr, i ? ",\"" : "\"", i ? 2 : 1);
		for (p = args[i]; *p; p++)
		{
			if (*p == '"' || *p == '\\')
				buf_append(&arr, "\\", 1);
			buf_append(&arr, p, 1);
		}
		buf_append(&arr, "\"", 1);
	}
	buf_append(&arr, "}", 2);
	params[0] = nargs ? arr.data : NULL;
	if (nargs == 0)
	{
		PGresult   *res = ctl_exec(conn, "SELECT pg_catalog.to_regclass('coord.metrics') IS NOT NULL",
								   0, NULL, PGRES_TUPLES_OK, NULL, &rc);

		if (res && PQgetvalue(res, 0, 0)[0] != 't')
		{
			PQclear(res);
			PQfinish(conn);
			free(args);
			buf_free(&arr);
			return ctl_usage("name the elections: this pg_coord has no coord.metrics to list them");
		}
		PQclear(res);
	}
	rc = ctl_list(conn, nargs ?
				  "SELECT e.election, l.value, l.pid, pg_catalog.date_trunc('second', l.since) AS since, l.term "
				  "FROM (SELECT DISTINCT x AS election FROM pg_catalog.unnest($1::pg_catalog.text[]) AS x) AS e "
				  "LEFT JOIN LATERAL coord.leader(e.election) AS l ON true ORDER BY e.election" :
				  "SELECT e.election, l.value, l.pid, pg_catalog.date_trunc('second', l.since) AS since, l.term "
				  "FROM (SELECT DISTINCT m.labels OPERATOR(pg_catalog.->>) 'election' AS election FROM coord.metrics AS m "
				  "      WHERE m.labels OPERATOR(pg_catalog.?) 'election') AS e "
				  "LEFT JOIN LATERAL coord.leader(e.election) AS l ON true ORDER BY e.election",
				  nargs ? 1 : 0, params, "coord_monitor", "(no elections)");
	PQfinish(conn);
	buf_free(&arr);
	free(args);
	return rc;
}
