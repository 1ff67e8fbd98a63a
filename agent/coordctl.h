/*-------------------------------------------------------------------------
 * coordctl.h
 *		coordctl, the command line for pg_coord (docs/coordctl.md, also its
 *		man page): what its files share.
 *
 * coordctl.c is the dispatcher (global options, the subcommand table);
 * coordctl_query.c the helpers every subcommand uses (its options, the
 * session, a statement whose missing privilege becomes exit 3 naming the
 * GRANT, a result as a table or as JSON); coordctl_metrics.c the
 * Prometheus renderer (coordctl_metrics.h); coordctl_jobs.c enqueue,
 * jobs, job, retry, cancel, await; coordctl_queues.c pause, resume,
 * stats; coordctl_views.c schedules, grid, rerun, locks, leaders, members,
 * alerts; serve*.c the dashboard (serve.h).  A file calls only files
 * before it in that list (test/static/deps.py, AGENT_ORDER).
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_COORDCTL_H
#define COORD_AGENT_COORDCTL_H

#include "coord_agent.h"
#include "cli.h"

/* ---------- coordctl_query.c ---------- */

/* the global options, set by coordctl.c (and again by a subcommand's own) */
extern bool ctl_json;			/* --json: JSON on stdout */
extern bool ctl_color;			/* ANSI colours: a terminal, no --no-color */
extern const char *ctl_cmd;		/* the subcommand, for messages */

/*
 * One option of a subcommand: --name (and -c if shortopt), with a value
 * (*value) or a flag (*flag).  --json, -d/--dbname and -h/--help every
 * subcommand takes; ctl_parse adds them.
 */
typedef struct CtlOpt
{
	const char *name;
	char		shortopt;		/* 0: none */
	const char **value;			/* NULL: a flag */
	bool	   *flag;
} CtlOpt;

/*
 * Parses argv[1..] (argv[0] the subcommand) into opts and positional words
 * (*args, *nargs: between min_args and max_args).  Returns -1 to go on, 0
 * after --help (printed usage_line), or CLI_EXIT_USAGE after saying what
 * is wrong.
 */
extern int	ctl_parse(int argc, char **argv, const CtlOpt *opts, const char *usage_line,
					  int min_args, int max_args, char ***args, int *nargs);

/* "coordctl CMD: message" on stderr and a hint; returns CLI_EXIT_USAGE */
extern int	ctl_usage(const char *fmt,...) __attribute__((format(printf, 1, 2)));

/* "coordctl CMD: message" on stderr (escaped); returns CLI_EXIT_ERROR */
extern int	ctl_fail(const char *fmt,...) __attribute__((format(printf, 1, 2)));

/* A session, or NULL (said why; *rc = CLI_EXIT_ERROR). */
extern PGconn *ctl_connect(int *rc);

/*
 * ctl_parse, then (id_arg >= 0) a check that args[id_arg] is a job id, then
 * ctl_connect: -1 with *conn open to go on; else the exit status, *args
 * freed and no session.
 */
extern int	ctl_begin(int argc, char **argv, const CtlOpt *opts, const char *usage_line,
					  int min_args, int max_args, int id_arg, char ***args, int *nargs,
					  PGconn **conn);

/* A positive bigint in decimal (a job id). */
extern bool ctl_valid_id(const char *s);

/* A subcommand that is one list: no argument, one statement (ctl_list). */
extern int	ctl_simple_list(int argc, char **argv, const char *sql, const char *grant,
							const char *empty);

/* Prints the one JSON value a statement returns (the first column); the exit status. */
extern int	ctl_print_json(PGconn *conn, const char *sql, int nparams, const char *const *params);

/*
 * Runs sql with its text parameters.  A failure is printed and *rc set:
 * insufficient_privilege (42501) is CLI_EXIT_PRIVILEGE, the message naming
 * "GRANT <grant> TO <current_user>"; anything else CLI_EXIT_ERROR; the
 * result is then NULL.  A result of any other status than want is a failure.
 */
extern PGresult *ctl_exec(PGconn *conn, const char *sql, int nparams,
						  const char *const *params, ExecStatusType want,
						  const char *grant, int *rc);

/*
 * A query's rows: as a JSON array of objects (ctl_json: the columns by
 * name, their JSON types), else as a table of the named columns (headers
 * the names upper-cased, numbers right-aligned), or the line empty when
 * there is no row.  Returns the exit status.
 */
extern int	ctl_list(PGconn *conn, const char *sql, int nparams, const char *const *params,
					 const char *grant, const char *empty);

/* A query's one row as a JSON object (ctl_json) or "name: value" lines. */
extern int	ctl_record(PGconn *conn, const char *sql, int nparams, const char *const *params,
					   const char *grant, const char *notfound);

/* ---------- the subcommands: argv[0] the subcommand; the exit status ---------- */

extern int	ctl_metrics(int argc, char **argv);
extern int	ctl_enqueue(int argc, char **argv);
extern int	ctl_jobs(int argc, char **argv);
extern int	ctl_job(int argc, char **argv);
extern int	ctl_retry(int argc, char **argv);
extern int	ctl_cancel(int argc, char **argv);
extern int	ctl_await(int argc, char **argv);
extern int	ctl_pause(int argc, char **argv);
extern int	ctl_resume(int argc, char **argv);
extern int	ctl_stats(int argc, char **argv);
extern int	ctl_schedules(int argc, char **argv);
extern int	ctl_grid(int argc, char **argv);
extern int	ctl_rerun(int argc, char **argv);
extern int	ctl_locks(int argc, char **argv);
extern int	ctl_leaders(int argc, char **argv);
extern int	ctl_members(int argc, char **argv);
extern int	ctl_alerts(int argc, char **argv);

#endif							/* COORD_AGENT_COORDCTL_H */
