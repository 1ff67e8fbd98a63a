/*-------------------------------------------------------------------------
 * coordctl.c
 *		coordctl's command line: the global options and the choice of
 *		subcommand (docs/coordctl.md).
 *
 *   coordctl [-d CONNINFO] [--json] [--no-color] SUBCOMMAND [ARG]... [OPTION]...
 *
 * The global options may also follow the subcommand (ctl_parse takes
 * --json, -d and --help everywhere).  Exit: 0, 1 an error, 2 a usage
 * error, 3 a missing privilege (cli.h).
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordctl.h"
#include "serve.h"

typedef struct Subcommand
{
	const char *name;
	int			(*run) (int argc, char **argv);
	const char *help;
} Subcommand;

static const Subcommand subcommands[] = {
	{"enqueue", ctl_enqueue, "QUEUE [PAYLOAD] [--run-at T] [--key K] [--priority N] [--after ID,...]"},
	{"jobs", ctl_jobs, "[--queue Q] [--state S] [--limit N]"},
	{"job", ctl_job, "ID"},
	{"retry", ctl_retry, "ID"},
	{"cancel", ctl_cancel, "ID"},
	{"await", ctl_await, "ID [--timeout S]"},
	{"pause", ctl_pause, "QUEUE [--until T] [--key K]"},
	{"resume", ctl_resume, "QUEUE [--key K]"},
	{"stats", ctl_stats, ""},
	{"schedules", ctl_schedules, ""},
	{"grid", ctl_grid, ""},
	{"rerun", ctl_rerun, "APP FROM TO"},
	{"locks", ctl_locks, ""},
	{"leaders", ctl_leaders, ""},
	{"members", ctl_members, ""},
	{"alerts", ctl_alerts, ""},
	{"metrics", ctl_metrics, ""},
	{"serve", coordctl_serve, "[--listen 127.0.0.1:8080] [--read-only]"},
	{NULL, NULL, NULL}
};

static void
usage(FILE *out)
{
	const Subcommand *s;

	fprintf(out,
			"coordctl enqueues, lists, retries and cancels pg_coord jobs, and shows queues,\n"
			"schedules, apps, locks, elections, groups, alerts and metrics.\n"
			"\n"
			"Usage:\n"
			"  coordctl [OPTION]... SUBCOMMAND [ARG]...\n"
			"\n"
			"Subcommands:\n");
	for (s = subcommands; s->name; s++)
		fprintf(out, "  %s%*s%s\n", s->name, *s->help ? 10 - (int) strlen(s->name) : 0, "", s->help);
	fprintf(out,
			"\n"
			"Options (before or after the subcommand):\n"
			"  -d, --dbname=CONNINFO     database connection string or URI (default: PG* variables)\n"
			"      --json                JSON on stdout (shapes: man coordctl)\n"
			"      --no-color            no colour even on a terminal\n"
			"  -h, --help                print this help (after a subcommand: its usage) and exit\n"
			"\n"
			"  -V, --version             print the version and exit\n"
			"\n"
			"Exit status: 0 done, 1 an error, 2 a usage error, 3 a missing privilege\n"
			"(the message names the GRANT).\n");
}

int
main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{"no-color", no_argument, NULL, 'C'},
		{"no-colour", no_argument, NULL, 'C'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	bool		no_color = false;
	const Subcommand *s;
	int			c;

	/* "+": stop at the subcommand, whose options are its own */
	while ((c = getopt_long(argc, argv, "+d:Vh", long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				cli_conninfo = optarg;
				break;
			case 'j':
				ctl_json = true;
				break;
			case 'C':
				no_color = true;
				break;
			case 'V':
				printf("coordctl %s (pg_coord)\n", COORD_AGENT_VERSION);
				return 0;
			case 'h':
				usage(stdout);
				return 0;
			default:
				fprintf(stderr, "Try \"coordctl --help\" for more information.\n");
				return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
	{
		fprintf(stderr, "coordctl: no subcommand given\n");
		fprintf(stderr, "Try \"coordctl --help\" for more information.\n");
		return CLI_EXIT_USAGE;
	}
	ctl_color = !no_color && isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
	for (s = subcommands; s->name; s++)
		if (strcmp(s->name, argv[optind]) == 0)
		{
			ctl_cmd = s->name;
			argv += optind;
			argc -= optind;
			optind = 0;			/* a fresh getopt for the subcommand */
			return s->run(argc, argv);
		}
	{
		char	   *esc = escape_text(argv[optind]);

		fprintf(stderr, "coordctl: unknown subcommand \"%s\"\n", esc);
		free(esc);
	}
	fprintf(stderr, "Try \"coordctl --help\" for more information.\n");
	return CLI_EXIT_USAGE;
}
