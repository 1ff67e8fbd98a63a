/*-------------------------------------------------------------------------
 * serve.h
 *		"coordctl serve": the web dashboard (serve*.c; docs/coordctl.md and
 *		docs/operations/dashboard.md).  coordctl.c calls coordctl_serve for
 *		"coordctl [GLOBAL OPTION]... serve [OPTION]...".
 *
 * What coordctl.c has done before the call:
 *  - parsed the global options; the connection string of -d/--dbname is
 *    cli_conninfo (cli.h; NULL: the PG* variables).  Open sessions with
 *    cli_connect(appname, &errmsg) (cli.h): it masks the password in every
 *    message, and cli_error() makes any server or libpq message fit for a
 *    terminal (one line, no password, no control character);
 *  - argv[0] is "serve", argv[1..argc-1] the words after it, unparsed
 *    (--listen ..., and --json/-d/--help too if given after "serve": parse
 *    them or refuse them); getopt's optind is reset (0), so getopt_long
 *    may parse argv as a fresh main's.
 *
 * It returns the exit status: 0, CLI_EXIT_ERROR (1), CLI_EXIT_USAGE (2), or
 * CLI_EXIT_PRIVILEGE (3, the message naming the GRANT) (cli.h).
 *
 * GET /metrics renders with coordctl_metrics.h's metrics_render(), the
 * function "coordctl metrics" uses.
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_SERVE_H
#define COORD_AGENT_SERVE_H

extern int	coordctl_serve(int argc, char **argv);

#endif							/* COORD_AGENT_SERVE_H */
