/*-------------------------------------------------------------------------
 * main.c
 *		coord-agent's command line: options, --help, and the choice between
 *		running the agent, "status" and "check".
 *
 * Options given here win over the config file's keys, also after a SIGHUP
 * reload, so that an operator's command line is never silently undone by
 * an edit of the file.
 *-------------------------------------------------------------------------
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord_agent.h"

static void
usage(FILE *out)
{
	fprintf(out,
			"coord-agent runs pg_coord jobs on this host as processes from an allow-list.\n"
			"\n"
			"Usage:\n"
			"  coord-agent [OPTION]...          claim jobs and run them (until SIGTERM)\n"
			"  coord-agent [OPTION]... status   queues, running jobs, locks and apps, for a person\n"
			"  coord-agent [OPTION]... check    the configuration as the agent reads it\n"
			"\n"
			"Options:\n"
			"  -d, --dbname=CONNINFO     database connection string or URI (default: PG* variables)\n"
			"  -f, --config=FILE         config file with the [task NAME] allow-list\n"
			"                            (default: $COORD_AGENT_CONFIG, else %s)\n"
			"  -q, --queue=NAME          claim from this queue; repeat or use commas (default: apps)\n"
			"  -H, --host=NAME           this host's name for host-targeted jobs (default: hostname)\n"
			"  -c, --concurrency=N       at most N jobs at once (default: number of CPUs)\n"
			"      --partition-group=NAME  join this partition group (member HOST:PID:R, R\n"
			"                            random) and claim only its owned segments' jobs\n"
			"      --weight=W            this agent's weight in the group (default: 1)\n"
			"  -l, --lease=DURATION      lease claims with heartbeats instead of session-bound\n"
			"                            claims (\"session\": session-bound, the default)\n"
			"  -g, --grace=DURATION      on SIGTERM, wait this long for running jobs (default: 30s)\n"
			"  -p, --poll=DURATION       claim at least this often while idle (default: 1s)\n"
			"  -v, --verbose             log claims, notifications, heartbeats and kills\n"
			"      --no-color            plain text status even on a terminal\n"
			"  -V, --version             print the version and exit\n"
			"  -h, --help                print this help and exit\n"
			"\n"
			"Durations: 500ms, 30s, 5m, 2h, 1d (a bare number is seconds).\n"
			"Signals: SIGTERM/SIGINT drain and exit, SIGHUP reloads the config file.\n"
			"A job runs the task named by its payload's \"task\" field, else its \"app\" field,\n"
			"else its queue's name; a task not in the config file is failed and nothing runs.\n",
			DEFAULT_CONFIG_PATH);
}

/* The standard descriptors must exist: pipes must never become 0, 1 or 2. */
static void
ensure_std_fds(void)
{
	int			fd;

	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

int
main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"config", required_argument, NULL, 'f'},
		{"queue", required_argument, NULL, 'q'},
		{"host", required_argument, NULL, 'H'},
		{"concurrency", required_argument, NULL, 'c'},
		{"partition-group", required_argument, NULL, 'G'},
		{"weight", required_argument, NULL, 'W'},
		{"lease", required_argument, NULL, 'l'},
		{"grace", required_argument, NULL, 'g'},
		{"poll", required_argument, NULL, 'p'},
		{"verbose", no_argument, NULL, 'v'},
		{"no-color", no_argument, NULL, 'C'},
		{"no-colour", no_argument, NULL, 'C'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	CliOverrides cli;
	const char *config_path = getenv("COORD_AGENT_CONFIG");
	bool		config_given = false;
	bool		no_color = false;
	const char *command = "run";
	int			c;

	memset(&cli, 0, sizeof(cli));
	cli.lease = cli.grace = cli.poll = -1;
	ensure_std_fds();

	while ((c = getopt_long(argc, argv, "d:f:q:H:c:l:g:p:vVh", long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				cli.dbname = optarg;
				break;
			case 'f':
				config_path = optarg;
				config_given = true;
				break;
			case 'q':
				{
					char	   *copy = xstrdup(optarg);
					char	   *tok,
							   *save = NULL;

					for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
					{
						cli.queues = xrealloc(cli.queues, sizeof(char *) * (cli.nqueues + 1));
						cli.queues[cli.nqueues++] = xstrdup(tok);
					}
					free(copy);
				}
				break;
			case 'H':
				cli.host = optarg;
				break;
			case 'G':
				if (*optarg == '\0')
				{
					fprintf(stderr, "coord-agent: --partition-group must not be empty\n");
					return 2;
				}
				cli.partition_group = optarg;
				break;
			case 'W':
				if (!parse_weight(optarg, &cli.weight))
				{
					fprintf(stderr, "coord-agent: invalid --weight \"%s\" (a positive, finite number such as 3 or 0.5)\n", optarg);
					return 2;
				}
				break;
			case 'c':
				cli.concurrency = atoi(optarg);
				if (cli.concurrency < 1)
				{
					fprintf(stderr, "coord-agent: --concurrency must be a positive integer\n");
					return 2;
				}
				break;
			case 'l':
				if (strcmp(optarg, "session") == 0)
					cli.lease = 0;
				else if (!parse_duration(optarg, &cli.lease))
				{
					fprintf(stderr, "coord-agent: invalid --lease \"%s\" (a duration such as 30s, or \"session\")\n", optarg);
					return 2;
				}
				break;
			case 'g':
				if (!parse_duration(optarg, &cli.grace))
				{
					fprintf(stderr, "coord-agent: invalid --grace \"%s\" (a duration such as 30s)\n", optarg);
					return 2;
				}
				break;
			case 'p':
				if (!parse_duration(optarg, &cli.poll))
				{
					fprintf(stderr, "coord-agent: invalid --poll \"%s\" (a duration such as 1s)\n", optarg);
					return 2;
				}
				break;
			case 'v':
				verbose = true;
				break;
			case 'C':
				no_color = true;
				break;
			case 'V':
				printf("coord-agent %s (pg_coord)\n", COORD_AGENT_VERSION);
				return 0;
			case 'h':
				usage(stdout);
				return 0;
			default:
				fprintf(stderr, "Try \"coord-agent --help\" for more information.\n");
				return 2;
		}
	}
	if (optind < argc)
		command = argv[optind++];
	if (optind < argc)
	{
		fprintf(stderr, "coord-agent: too many arguments (first extra: \"%s\")\n", argv[optind]);
		fprintf(stderr, "Try \"coord-agent --help\" for more information.\n");
		return 2;
	}
	if (config_path == NULL || *config_path == '\0')
		config_path = DEFAULT_CONFIG_PATH;
	else
		config_given = true;

	if (strcmp(command, "status") == 0)
	{
		/* the config file is optional here: it may only say which database */
		char	   *err = NULL;
		AgentConfig *cfg = config_load(config_path, config_given, &err);
		const char *dbname;
		bool		color;
		int			rc;

		if (cfg == NULL)
		{
			fprintf(stderr, "coord-agent: %s\n", err);
			free(err);
			return 1;
		}
		dbname = cli.dbname ? cli.dbname : cfg->dbname;
		color = !no_color && isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
		rc = status_run(dbname, color, cfg->statement_timeout, cfg->lock_timeout);
		config_free(cfg);
		return rc;
	}
	if (strcmp(command, "check") == 0)
	{
		char	   *err = NULL;
		AgentConfig *cfg = config_load_checked(config_path, &cli, &err);

		if (cfg == NULL)
		{
			fprintf(stderr, "coord-agent: %s\n", err);
			free(err);
			return 1;
		}
		config_print(cfg, stdout);
		config_free(cfg);
		return 0;
	}
	if (strcmp(command, "run") != 0)
	{
		fprintf(stderr, "coord-agent: unknown command \"%s\" (run, status or check)\n", command);
		fprintf(stderr, "Try \"coord-agent --help\" for more information.\n");
		return 2;
	}
	return agent_run(config_path, &cli);
}
