/*-------------------------------------------------------------------------
 * config.c
 *		coord-agent: the configuration file, whose [task NAME] sections are
 *		the allow-list of the commands this host may run.
 *
 * The format (docs/coord-agent.md, CONFIGURATION) is deliberately small:
 * "key = value" lines, whole-line comments starting with '#' or ';',
 * global keys before the first section (or in an [agent] section), and
 * one "[task NAME]" section per task.  A task's command is split into argv
 * words here, once, with shell-like quotes but no expansion of any kind:
 * the agent never hands a string to a shell, and nothing in a job's payload
 * ever becomes part of a command line.
 *
 * A file that fails to parse is refused as a whole, so that a SIGHUP with
 * a broken file keeps the old allow-list instead of half of a new one.
 * So is a file that someone other than the agent's user (or root) could
 * have written, as sshd and sudo refuse theirs: whoever can write it
 * chooses the commands the agent runs.
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord_agent.h"

/* Queue and host names: 1-48 bytes of letters, digits and _ - . : / */
bool
valid_name(const char *s)
{
	size_t		n = strlen(s);
	size_t		i;

	if (n == 0 || n > NAME_MAX_BYTES)
		return false;
	for (i = 0; i < n; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (!(isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':' || c == '/'))
			return false;
	}
	return true;
}

/*
 * A member's weight: a whole decimal number, positive and finite also as
 * the server's real (float4), which is what coord.join takes.
 */
bool
parse_weight(const char *s, double *out)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v <= 0 ||
		v > FLT_MAX || (float) v <= 0)
		return false;
	*out = v;
	return true;
}

/*
 * A new member name for the agent's partition group: HOST:PID:R, R 64 bits
 * from /dev/urandom in hex.  coord.join refuses a name another live session
 * holds, so a name others can guess (HOST:PID) lets a worker that takes it
 * first keep the agent out of its group.  HOST is cut to fit NAME_MAX_BYTES
 * (R makes the name unique).  NULL when /dev/urandom cannot be read; the
 * caller frees it.
 */
char *
member_name(const AgentConfig *cfg)
{
	unsigned char r[8];
	char		tail[64];
	int			fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t		got = fd < 0 ? -1 : read(fd, r, sizeof(r));
	int			room;

	if (fd >= 0)
		close(fd);
	if (got != (ssize_t) sizeof(r))
		return NULL;
	snprintf(tail, sizeof(tail), ":%d:%02x%02x%02x%02x%02x%02x%02x%02x", (int) getpid(),
			 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
	room = NAME_MAX_BYTES - (int) strlen(tail);
	return xasprintf("%.*s%s", room, cfg->host, tail);
}

/* Task names: anything printable without ']', so that app names fit. */
static bool
valid_task_name(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if ((unsigned char) *s < 0x20 || *s == 0x7F || *s == ']')
			return false;
	return true;
}

static void
add_string(char ***arr, int *n, const char *s)
{
	*arr = xrealloc(*arr, sizeof(char *) * (*n + 2));
	(*arr)[(*n)++] = xstrdup(s);
	(*arr)[*n] = NULL;
}

static void
free_strings(char **arr, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		free(arr[i]);
	free(arr);
}

/*
 * Splits a command line into words: white space separates them; '...'
 * keeps everything literally; "..." keeps everything but \" and \\; a
 * backslash outside quotes takes the next character literally.  Returns
 * false with a message on an unterminated quote.
 */
static bool
split_command(const char *s, char ***argv, int *argc, char **errmsg)
{
	Buf			word = {0};
	bool		in_word = false;

	*argv = NULL;
	*argc = 0;
	while (*s)
	{
		if (isspace((unsigned char) *s))
		{
			if (in_word)
			{
				add_string(argv, argc, word.data ? word.data : "");
				buf_reset(&word);
				in_word = false;
			}
			s++;
			continue;
		}
		in_word = true;
		if (*s == '\'')
		{
			const char *e = strchr(s + 1, '\'');

			if (e == NULL)
			{
				*errmsg = xstrdup("unterminated single quote");
				goto fail;
			}
			buf_append(&word, s + 1, e - s - 1);
			s = e + 1;
		}
		else if (*s == '"')
		{
			s++;
			while (*s && *s != '"')
			{
				if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
					s++;
				buf_append(&word, s, 1);
				s++;
			}
			if (*s != '"')
			{
				*errmsg = xstrdup("unterminated double quote");
				goto fail;
			}
			s++;
		}
		else if (*s == '\\' && s[1] != '\0')
		{
			buf_append(&word, s + 1, 1);
			s += 2;
		}
		else
		{
			buf_append(&word, s, 1);
			s++;
		}
	}
	if (in_word)
		add_string(argv, argc, word.data ? word.data : "");
	buf_free(&word);
	return true;

fail:
	buf_free(&word);
	free_strings(*argv, *argc);
	*argv = NULL;
	*argc = 0;
	return false;
}

static void
task_free(TaskConfig *t)
{
	free(t->name);
	free_strings(t->argv, t->argc);
	free_strings(t->env, t->nenv);
	free_strings(t->pass_env, t->npass_env);
	free(t->dir);
	free(t);
}

void
config_free(AgentConfig *cfg)
{
	TaskConfig *t,
			   *next;

	if (cfg == NULL)
		return;
	free(cfg->path);
	free(cfg->dbname);
	free_strings(cfg->queues, cfg->nqueues);
	free(cfg->host);
	free(cfg->partition_group);
	free_strings(cfg->pass_env, cfg->npass_env);
	for (t = cfg->tasks; t; t = next)
	{
		next = t->next;
		task_free(t);
	}
	free(cfg);
}

TaskConfig *
config_find_task(const AgentConfig *cfg, const char *name)
{
	TaskConfig *t;

	for (t = cfg->tasks; t; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

/* Sets a list of names from "a, b c": commas and/or white space separate. */
static void
set_name_list(char ***arr, int *n, const char *value)
{
	char	   *copy = xstrdup(value);
	char	   *tok,
			   *save = NULL;

	free_strings(*arr, *n);
	*arr = NULL;
	*n = 0;
	for (tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
		add_string(arr, n, tok);
	free(copy);
}

/* pass_env: names of variables, or prefixes ending in '*' ("PG*"). */
static bool
set_pass_env(char ***arr, int *n, const char *value, char **why)
{
	int			i;

	set_name_list(arr, n, value);
	for (i = 0; i < *n; i++)
	{
		const char *v = (*arr)[i];
		size_t		k = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

		if (k == 0 || !(v[k] == '\0' || (v[k] == '*' && v[k + 1] == '\0')))
		{
			*why = xasprintf("pass_env: \"%s\" is not a variable name (or a prefix ending in *)", v);
			return false;
		}
	}
	return true;
}

static bool
parse_int(const char *s, int *out)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *trim(end) != '\0' || v < INT_MIN || v > INT_MAX)
		return false;
	*out = (int) v;
	return true;
}

/* A global key; returns false with a message for a bad key or value. */
static bool
set_global(AgentConfig *cfg, const char *key, const char *value, char **why)
{
	msec_t		ms;

	if (strcmp(key, "dbname") == 0)
	{
		free(cfg->dbname);
		cfg->dbname = xstrdup(value);
		return true;
	}
	if (strcmp(key, "queues") == 0 || strcmp(key, "queue") == 0)
	{
		set_name_list(&cfg->queues, &cfg->nqueues, value);
		return true;
	}
	if (strcmp(key, "host") == 0)
	{
		free(cfg->host);
		cfg->host = xstrdup(value);
		return true;
	}
	if (strcmp(key, "pass_env") == 0)
		return set_pass_env(&cfg->pass_env, &cfg->npass_env, value, why);
	if (strcmp(key, "partition_group") == 0)
	{
		if (*value == '\0')
		{
			*why = xstrdup("partition_group must not be empty");
			return false;
		}
		free(cfg->partition_group);
		cfg->partition_group = xstrdup(value);
		return true;
	}
	if (strcmp(key, "weight") == 0)
	{
		if (!parse_weight(value, &cfg->weight))
		{
			*why = xasprintf("weight must be a positive, finite number, not \"%s\"", value);
			return false;
		}
		cfg->weight_set = true;
		return true;
	}
	if (strcmp(key, "concurrency") == 0)
	{
		if (!parse_int(value, &cfg->concurrency))
		{
			*why = xstrdup("concurrency must be an integer");
			return false;
		}
		return true;
	}
	if (strcmp(key, "lease") == 0 && strcmp(value, "session") == 0)
	{
		cfg->lease = 0;
		return true;
	}
	if (!parse_duration(value, &ms))
	{
		if (strcmp(key, "lease") == 0 || strcmp(key, "grace") == 0 || strcmp(key, "poll") == 0 ||
			strcmp(key, "kill_after") == 0 || strcmp(key, "check") == 0 ||
			strcmp(key, "timeout") == 0 || strcmp(key, "retry_after") == 0 ||
			strcmp(key, "statement_timeout") == 0 || strcmp(key, "lock_timeout") == 0)
			*why = xasprintf("\"%s\" is not a duration (examples: 500ms, 30s, 5m, 2h)", value);
		else
			*why = xasprintf("unknown key \"%s\"", key);
		return false;
	}
	if (strcmp(key, "lease") == 0)
		cfg->lease = ms;
	else if (strcmp(key, "grace") == 0)
		cfg->grace = ms;
	else if (strcmp(key, "poll") == 0)
		cfg->poll = ms;
	else if (strcmp(key, "kill_after") == 0)
		cfg->kill_after = ms;
	else if (strcmp(key, "check") == 0)
		cfg->check = ms;
	else if (strcmp(key, "timeout") == 0)
		cfg->timeout = ms;
	else if (strcmp(key, "retry_after") == 0)
		cfg->retry_after = ms;
	else if (strcmp(key, "statement_timeout") == 0)
		cfg->statement_timeout = ms;
	else if (strcmp(key, "lock_timeout") == 0)
		cfg->lock_timeout = ms;
	else
	{
		*why = xasprintf("unknown key \"%s\"", key);
		return false;
	}
	return true;
}

/* A key of a [task NAME] section. */
static bool
set_task_key(TaskConfig *t, const char *key, const char *value, char **why)
{
	if (strcmp(key, "command") == 0)
	{
		char	  **argv;
		int			argc;

		if (!split_command(value, &argv, &argc, why))
			return false;
		if (argc == 0)
		{
			*why = xstrdup("command is empty");
			return false;
		}
		if (argv[0][0] != '/')
		{
			*why = xasprintf("command must start with an absolute path, not \"%s\" (no PATH search is done)",
							 argv[0]);
			free_strings(argv, argc);
			return false;
		}
		free_strings(t->argv, t->argc);
		t->argv = argv;
		t->argc = argc;
		return true;
	}
	if (strcmp(key, "env") == 0)
	{
		const char *eq = strchr(value, '=');

		if (eq == NULL || eq == value)
		{
			*why = xstrdup("env must look like NAME=value");
			return false;
		}
		if (strncmp(value, "COORD_", 6) == 0)
		{
			*why = xstrdup("env must not set COORD_ variables: the agent sets them for each job");
			return false;
		}
		add_string(&t->env, &t->nenv, value);
		return true;
	}
	if (strcmp(key, "pass_env") == 0)
	{
		t->pass_env_set = true;
		return set_pass_env(&t->pass_env, &t->npass_env, value, why);
	}
	if (strcmp(key, "dir") == 0)
	{
		if (value[0] != '/')
		{
			*why = xstrdup("dir must be an absolute path");
			return false;
		}
		free(t->dir);
		t->dir = xstrdup(value);
		return true;
	}
	if (strcmp(key, "timeout") == 0 || strcmp(key, "retry_after") == 0)
	{
		msec_t		ms;

		if (!parse_duration(value, &ms))
		{
			*why = xasprintf("\"%s\" is not a duration (examples: 500ms, 30s, 5m, 2h)", value);
			return false;
		}
		if (key[0] == 't')
			t->timeout = ms;
		else
			t->retry_after = ms;
		return true;
	}
	*why = xasprintf("unknown key \"%s\" in a task section (known: command, timeout, retry_after, dir, env, pass_env)",
					 key);
	return false;
}

/*
 * Whether the open config file is one only the agent's user or root can
 * have written: a regular file, owned by the effective uid or by root, not
 * writable by group or others.  (The file itself, as sudo checks sudoers;
 * keep its directory as tight.)
 */
static bool
safe_file(FILE *f, const char *path, unsigned int *mode, char **errmsg)
{
	struct stat st;

	if (fstat(fileno(f), &st) != 0)
	{
		*errmsg = xasprintf("could not stat config file \"%s\": %s", path, strerror(errno));
		return false;
	}
	if (!S_ISREG(st.st_mode))
	{
		*errmsg = xasprintf("config file \"%s\" is not a regular file", path);
		return false;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0)
	{
		*errmsg = xasprintf("config file \"%s\" is owned by uid %d, not by the agent's user (uid %d) or root: refusing it, since it decides which commands run",
							path, (int) st.st_uid, (int) geteuid());
		return false;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH))
	{
		*errmsg = xasprintf("config file \"%s\" is writable by %s (mode %04o): refusing it, since it decides which commands run (chmod go-w)",
							path, (st.st_mode & S_IWOTH) ? "others" : "its group",
							(unsigned int) (st.st_mode & 07777));
		return false;
	}
	*mode = (unsigned int) (st.st_mode & 07777);
	return true;
}

/*
 * Reads a config file.  With must_exist false a missing file gives the
 * defaults (coord-agent status needs no allow-list).  NULL with *errmsg set
 * ("file:line: why") on any error.
 */
AgentConfig *
config_load(const char *path, bool must_exist, char **errmsg)
{
	AgentConfig *cfg = xmalloc(sizeof(AgentConfig));
	FILE	   *f;
	char	   *line = NULL;
	size_t		linecap = 0;
	ssize_t		n;
	int			lineno = 0;
	TaskConfig *cur = NULL;
	TaskConfig **tail;
	bool		in_agent = true;

	memset(cfg, 0, sizeof(*cfg));
	cfg->concurrency = 0;
	cfg->weight = 1;
	cfg->lease = 0;
	cfg->grace = 30 * 1000;
	cfg->poll = 1000;
	cfg->kill_after = 5 * 1000;
	cfg->check = 5 * 1000;
	cfg->timeout = 0;
	cfg->retry_after = 30 * 1000;
	cfg->statement_timeout = 5 * 1000;
	cfg->lock_timeout = 2 * 1000;
	cfg->path = path ? xstrdup(path) : NULL;
	tail = &cfg->tasks;
	*errmsg = NULL;

	if (path == NULL)
		return cfg;
	f = fopen(path, "r");
	if (f == NULL)
	{
		if (!must_exist && errno == ENOENT)
			return cfg;
		*errmsg = xasprintf("could not open config file \"%s\": %s", path, strerror(errno));
		config_free(cfg);
		return NULL;
	}
	if (!safe_file(f, path, &cfg->file_mode, errmsg))
	{
		fclose(f);
		config_free(cfg);
		return NULL;
	}

	while ((n = getline(&line, &linecap, f)) >= 0)
	{
		char	   *s = trim(line);
		char	   *eq,
				   *key,
				   *value,
				   *why = NULL;

		lineno++;
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (*s == '[')
		{
			size_t		len = strlen(s);
			char	   *inner;

			if (s[len - 1] != ']')
			{
				why = xstrdup("a section header must end with ']'");
				goto bad;
			}
			s[len - 1] = '\0';
			inner = trim(s + 1);
			if (strcmp(inner, "agent") == 0)
			{
				in_agent = true;
				cur = NULL;
				continue;
			}
			if (strncmp(inner, "task", 4) != 0 || !isspace((unsigned char) inner[4]))
			{
				why = xasprintf("unknown section [%s] (known: [agent], [task NAME])", inner);
				goto bad;
			}
			inner = trim(inner + 4);
			if (!valid_task_name(inner))
			{
				why = xasprintf("invalid task name \"%s\"", inner);
				goto bad;
			}
			if (config_find_task(cfg, inner))
			{
				why = xasprintf("task \"%s\" is defined twice", inner);
				goto bad;
			}
			cur = xmalloc(sizeof(TaskConfig));
			memset(cur, 0, sizeof(*cur));
			cur->name = xstrdup(inner);
			cur->timeout = -1;
			cur->retry_after = -1;
			*tail = cur;
			tail = &cur->next;
			in_agent = false;
			continue;
		}
		eq = strchr(s, '=');
		if (eq == NULL)
		{
			why = xstrdup("expected \"key = value\"");
			goto bad;
		}
		*eq = '\0';
		key = trim(s);
		value = trim(eq + 1);
		if (*key == '\0')
		{
			why = xstrdup("missing key before '='");
			goto bad;
		}
		if (in_agent ? set_global(cfg, key, value, &why) : set_task_key(cur, key, value, &why))
			continue;

bad:
		*errmsg = xasprintf("%s:%d: %s", path, lineno, why ? why : "syntax error");
		free(why);
		free(line);
		fclose(f);
		config_free(cfg);
		return NULL;
	}
	free(line);
	fclose(f);

	for (cur = cfg->tasks; cur; cur = cur->next)
		if (cur->argc == 0)
		{
			*errmsg = xasprintf("%s: task \"%s\" has no command", path, cur->name);
			config_free(cfg);
			return NULL;
		}
	return cfg;
}

/* The command line wins over the file; then the defaults that need the system. */
static void
config_apply(AgentConfig *cfg, const CliOverrides *cli)
{
	int			i;

	if (cli->dbname)
	{
		free(cfg->dbname);
		cfg->dbname = xstrdup(cli->dbname);
	}
	if (cli->nqueues > 0)
	{
		free_strings(cfg->queues, cfg->nqueues);
		cfg->queues = NULL;
		cfg->nqueues = 0;
		for (i = 0; i < cli->nqueues; i++)
			add_string(&cfg->queues, &cfg->nqueues, cli->queues[i]);
	}
	if (cli->host)
	{
		free(cfg->host);
		cfg->host = xstrdup(cli->host);
	}
	if (cli->partition_group)
	{
		free(cfg->partition_group);
		cfg->partition_group = xstrdup(cli->partition_group);
	}
	if (cli->weight > 0)
	{
		cfg->weight = cli->weight;
		cfg->weight_set = true;
	}
	if (cli->concurrency > 0)
		cfg->concurrency = cli->concurrency;
	if (cli->lease >= 0)
		cfg->lease = cli->lease;
	if (cli->grace >= 0)
		cfg->grace = cli->grace;
	if (cli->poll >= 0)
		cfg->poll = cli->poll;

	if (cfg->nqueues == 0)
		add_string(&cfg->queues, &cfg->nqueues, "apps");
	if (cfg->host == NULL)
	{
		char		name[256];

		if (gethostname(name, sizeof(name)) != 0)
			strcpy(name, "localhost");
		name[sizeof(name) - 1] = '\0';
		cfg->host = xstrdup(name);
	}
	if (cfg->concurrency <= 0)
	{
		long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		cfg->concurrency = ncpu > 0 ? (int) ncpu : 1;
	}
}

/* Checks what the server would refuse, before any claim is made. */
static bool
config_validate(AgentConfig *cfg, char **errmsg)
{
	int			i;

	for (i = 0; i < cfg->nqueues; i++)
		if (!valid_name(cfg->queues[i]))
		{
			*errmsg = xasprintf("invalid queue name \"%s\": 1-%d bytes of letters, digits and _ - . : /",
								cfg->queues[i], NAME_MAX_BYTES);
			return false;
		}
	if (!valid_name(cfg->host))
	{
		*errmsg = xasprintf("invalid host name \"%s\": 1-%d bytes of letters, digits and _ - . : / (set host or --host)",
							cfg->host, NAME_MAX_BYTES);
		return false;
	}
	if (cfg->partition_group != NULL)
	{
		if (!valid_name(cfg->partition_group))
		{
			*errmsg = xasprintf("invalid partition group name \"%s\": 1-%d bytes of letters, digits and _ - . : /",
								cfg->partition_group, NAME_MAX_BYTES);
			return false;
		}
	}
	else if (cfg->weight_set)
	{
		*errmsg = xstrdup("weight needs a partition group (partition_group or --partition-group)");
		return false;
	}
	if (cfg->concurrency < 1 || cfg->concurrency > 1024)
	{
		*errmsg = xstrdup("concurrency must be between 1 and 1024");
		return false;
	}
	if (cfg->lease != 0 && cfg->lease < 1000)
	{
		*errmsg = xstrdup("lease must be at least 1s (or \"session\")");
		return false;
	}
	if (cfg->poll < 10 || cfg->check < 10)
	{
		*errmsg = xstrdup("poll and check must be at least 10ms");
		return false;
	}
	/* the server's limit for both settings */
	if (cfg->statement_timeout > INT_MAX || cfg->lock_timeout > INT_MAX)
	{
		*errmsg = xstrdup("statement_timeout and lock_timeout must be at most 24d");
		return false;
	}
	if ((cfg->statement_timeout > 0 && cfg->statement_timeout < 100) ||
		(cfg->lock_timeout > 0 && cfg->lock_timeout < 100))
	{
		*errmsg = xstrdup("statement_timeout and lock_timeout must be 0 (none) or at least 100ms");
		return false;
	}
	return true;
}

/*
 * The configuration the agent runs with (and "check" prints): the file,
 * which must exist (config_load), the command line over it (config_apply),
 * checked (config_validate).  NULL and *errmsg when any step fails.
 */
AgentConfig *
config_load_checked(const char *path, const CliOverrides *cli, char **errmsg)
{
	AgentConfig *cfg = config_load(path, true, errmsg);

	if (cfg != NULL)
	{
		config_apply(cfg, cli);
		if (!config_validate(cfg, errmsg))
		{
			config_free(cfg);
			cfg = NULL;
		}
	}
	return cfg;
}

/*
 * A warning when the file's dbname holds a password and others may read
 * the file, or NULL.  (Only a warning: the file may be meant to be read by
 * a group, and a password-less dbname is common.)
 */
char *
config_password_warning(const AgentConfig *cfg)
{
	char	   *masked;
	bool		has_password;

	if (cfg->path == NULL || cfg->dbname == NULL || (cfg->file_mode & 077) == 0)
		return NULL;
	masked = mask_conninfo(cfg->dbname);
	has_password = strcmp(masked, cfg->dbname) != 0;
	free(masked);
	if (!has_password)
		return NULL;
	return xasprintf("config file \"%s\" has a password in dbname and is readable by others (mode %04o): chmod 600 it, or use ~/.pgpass",
					 cfg->path, cfg->file_mode);
}

/* For "coord-agent check": what the agent would do with this file. */
void
config_print(const AgentConfig *cfg, FILE *out)
{
	const TaskConfig *t;
	char		b1[32],
				b2[32];
	int			i;

	fprintf(out, "config:      %s\n", cfg->path ? cfg->path : "(none)");
	{
		char	   *masked = mask_conninfo(cfg->dbname);

		fprintf(out, "dbname:      %s\n", cfg->dbname ? masked : "(PG* environment variables)");
		free(masked);
	}
	fprintf(out, "host:        %s\n", cfg->host);
	fprintf(out, "queues:     ");
	for (i = 0; i < cfg->nqueues; i++)
		fprintf(out, " %s", cfg->queues[i]);
	fprintf(out, "\nconcurrency: %d\n", cfg->concurrency);
	if (cfg->partition_group)
		fprintf(out, "partition group: %s, weight %g (member %s:PID:<64 random bits>)\n",
				cfg->partition_group, cfg->weight, cfg->host);
	if (cfg->lease > 0)
		fprintf(out, "claims:      lease %s\n", format_duration(cfg->lease, b1, sizeof(b1)));
	else
		fprintf(out, "claims:      session-bound\n");
	fprintf(out, "grace:       %s\n", format_duration(cfg->grace, b1, sizeof(b1)));
	fprintf(out, "statement_timeout: %s, lock_timeout: %s\n",
			cfg->statement_timeout > 0 ? format_duration(cfg->statement_timeout, b1, sizeof(b1)) : "none",
			cfg->lock_timeout > 0 ? format_duration(cfg->lock_timeout, b2, sizeof(b2)) : "none");
	for (t = cfg->tasks; t; t = t->next)
	{
		msec_t		to = t->timeout >= 0 ? t->timeout : cfg->timeout;
		msec_t		ra = t->retry_after >= 0 ? t->retry_after : cfg->retry_after;

		fprintf(out, "task %s:\n  argv:", t->name);
		for (i = 0; i < t->argc; i++)
			fprintf(out, " [%s]", t->argv[i]);
		fprintf(out, "\n  timeout: %s, retry_after: %s\n",
				to > 0 ? format_duration(to, b1, sizeof(b1)) : "none",
				format_duration(ra, b2, sizeof(b2)));
		{
			char	  **pe = t->pass_env_set ? t->pass_env : cfg->pass_env;
			int			npe = t->pass_env_set ? t->npass_env : cfg->npass_env;

			fprintf(out, "  pass_env:");
			for (i = 0; i < npe; i++)
				fprintf(out, " %s", pe[i]);
			fprintf(out, "%s\n", npe == 0 ? " (no PG* variable)" : "");
		}
		if (access(t->argv[0], X_OK) != 0)
			fprintf(out, "  WARNING: %s is not executable: %s\n", t->argv[0], strerror(errno));
	}
	if (cfg->tasks == NULL)
		fprintf(out, "no tasks: every job would fail\n");
	{
		char	   *w = config_password_warning(cfg);

		if (w)
			fprintf(out, "WARNING: %s\n", w);
		free(w);
	}
}
