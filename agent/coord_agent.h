/*-------------------------------------------------------------------------
 * coord_agent.h
 *		coord-agent, the per-host job manager of pg_coord
 *		(docs/coord-agent.md, which is also its man page): the types and
 *		functions every file of the agent shares.
 *
 * The agent is one single-threaded process: one poll() loop over a
 * self-pipe (signals), the libpq socket and the pipes of its children.
 * agent.c is that loop; db.c the database session (db.h); protocol.c every
 * statement sent to pg_coord (protocol.h); child.c starts, feeds, reads and
 * kills the child processes; config.c reads the allow-list; status.c is
 * "coord-agent status"; util.c holds logging, clocks, buffers, parsing,
 * escaping and password masking; main.c the command line.  This header
 * has what all of them use (the configuration, a job, the utilities); the
 * session and the statements have headers of their own, included only by
 * the files that use them.  A file calls only files before it in util,
 * config, db, protocol, child, status, agent, main (test/static/deps.py):
 * db.c reaches protocol.c and the loop through the DbCallbacks agent.c
 * gives it (db.h).
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_H
#define COORD_AGENT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "libpq-fe.h"

/* the extension's version, from pg_coord.control (agent/Makefile) */
#ifndef COORD_AGENT_VERSION
#define COORD_AGENT_VERSION		"unknown"
#endif
#define DEFAULT_CONFIG_PATH		"/etc/coord-agent.conf"

/* Queue and host names: what coord.enqueue accepts (they become channels). */
#define NAME_MAX_BYTES			48

/* Bytes of a child's stderr kept for the error of a failed job. */
#define STDERR_TAIL_BYTES		2048

/* A stdout line longer than this is never a result (a payload's limit). */
#define STDOUT_LINE_MAX			(1024 * 1024)

/*
 * Larger payloads reach the child on stdin only: Linux refuses (E2BIG) any
 * single environment string over 128 KiB.
 */
#define ENV_PAYLOAD_MAX			(64 * 1024)

/* Milliseconds on the monotonic clock: every deadline of the agent. */
typedef int64_t msec_t;

/* ---------- configuration (config.c) ---------- */

/* One allow-list entry: "[task NAME]" and its keys. */
typedef struct TaskConfig
{
	char	   *name;
	char	  **argv;			/* NULL-terminated; argv[0] an absolute path */
	int			argc;
	char	  **env;			/* "NAME=value" strings added to the child's */
	int			nenv;
	char	   *dir;			/* working directory, or NULL */
	msec_t		timeout;		/* 0: no limit; -1: the global default */
	msec_t		retry_after;	/* delay after exit 75; -1: the global default */
	char	  **pass_env;		/* PG* variables the child may see (NAME or
								 * PREFIX*) */
	int			npass_env;
	bool		pass_env_set;	/* false: the global pass_env */
	struct TaskConfig *next;
} TaskConfig;

/* Everything a config file (and the command line over it) sets. */
typedef struct AgentConfig
{
	char	   *path;			/* the file it came from, or NULL */
	char	   *dbname;			/* conninfo, or NULL: PG* variables */
	char	  **queues;
	int			nqueues;
	char	   *host;
	char	   *partition_group;	/* claim only this group's segments, or
									 * NULL */
	double		weight;			/* this agent's weight in partition_group */
	bool		weight_set;		/* weight was given (file or command line) */
	int			concurrency;
	msec_t		lease;			/* 0: session-bound claims */
	msec_t		grace;			/* SIGTERM: how long to wait for children */
	msec_t		poll;			/* claim at least this often while idle */
	msec_t		kill_after;		/* SIGTERM to SIGKILL of a child's group */
	msec_t		check;			/* heartbeat of session-bound claims */
	msec_t		timeout;		/* default task timeout, 0: none */
	msec_t		retry_after;	/* default delay after exit 75 */
	msec_t		statement_timeout;	/* the session's; 0: none */
	msec_t		lock_timeout;	/* the session's; 0: none */
	char	  **pass_env;		/* default of the tasks' pass_env */
	int			npass_env;
	unsigned int file_mode;		/* the file's permission bits */
	TaskConfig *tasks;
} AgentConfig;

/* Settings given on the command line; they win over the file's. */
typedef struct CliOverrides
{
	const char *dbname;
	char	  **queues;
	int			nqueues;
	const char *host;
	const char *partition_group;
	double		weight;			/* 0: not given */
	int			concurrency;	/* 0: not given */
	msec_t		lease;			/* -1: not given */
	msec_t		grace;
	msec_t		poll;
} CliOverrides;

extern AgentConfig *config_load(const char *path, bool must_exist, char **errmsg);
extern AgentConfig *config_load_checked(const char *path, const CliOverrides *cli,
										char **errmsg);
extern void config_free(AgentConfig *cfg);
extern TaskConfig *config_find_task(const AgentConfig *cfg, const char *name);
extern bool valid_name(const char *s);
extern bool parse_weight(const char *s, double *out);
extern char *member_name(const AgentConfig *cfg);
extern void config_print(const AgentConfig *cfg, FILE *out);
extern char *config_password_warning(const AgentConfig *cfg);

/* ---------- children (child.c) ---------- */

/* Why the agent killed a child (NONE: it ended on its own). */
typedef enum KillReason
{
	KILL_NONE = 0,
	KILL_TIMEOUT,				/* the task's timeout */
	KILL_LOST,					/* the claim is gone: heartbeat NULL, session
								 * lost */
	KILL_SHUTDOWN				/* SIGTERM's grace period ran out */
} KillReason;

/* A growable byte buffer. */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

/* One claimed job and, once started, its child process. */
typedef struct Job
{
	int64_t		id;
	int64_t		token;
	int			attempt;
	int			snoozes;		/* times it was snoozed (exit 75):
								 * COORD_SNOOZES */
	char	   *queue;
	char	   *payload;		/* JSON text */
	char	   *task;			/* task name: payload task, app, or the queue */
	char	   *app;			/* payload fields for app runs, or NULL */
	char	   *period_start;
	char	   *period_end;
	bool		session_bound;
	msec_t		lease;			/* lease mode: the claim's lease */

	pid_t		pid;			/* also the process group id; 0: not started */
	int			fd_in;			/* pipes, -1 once closed */
	int			fd_out;
	int			fd_err;
	size_t		in_off;			/* payload bytes written to stdin */

	msec_t		started;
	msec_t		deadline;		/* task timeout, 0: none */
	msec_t		kill_at;		/* SIGKILL escalation, 0: none */
	msec_t		next_heartbeat;
	unsigned long listened;		/* db_session() that LISTENs on its channel,
								 * 0: none */
	msec_t		lease_valid_until;	/* lease mode: our own view of the lease */
	msec_t		timeout;		/* copied from the task: a reload must not
								 * change it */
	msec_t		retry_after;
	KillReason	killed;

	bool		exited;
	int			status;			/* waitpid status */
	msec_t		ended;
	msec_t		report_at;		/* a report failed: try again then */
	bool		in_doubt;		/* its complete or fail has an unknown
								 * outcome: resolve it (coord.claim_state)
								 * before anything else */
	bool		doubt_kept;		/* the complete in doubt sent the result */
	unsigned long doubt_session;	/* db_session() of the report in doubt */
	bool		doubt_claimed;	/* the report in doubt also claimed (n > 0) */

	Buf			line;			/* stdout: the line being read */
	Buf			last_line;		/* stdout: the last non-empty line */
	bool		line_overflow;
	bool		last_overflow;
	char		err_ring[STDERR_TAIL_BYTES];
	size_t		err_total;		/* bytes ever read from stderr */

	struct Job *next;
} Job;

/*
 * Environment values from the job's payload: longer ones are not set (the
 * child has the payload on stdin), so that no payload can make the exec
 * fail (E2BIG) or fill the child's environment.
 */
#define ENV_APP_MAX				1024
#define ENV_PERIOD_MAX			64

extern bool child_start(Job *job, const TaskConfig *task, const AgentConfig *cfg, char **errmsg);
extern void child_pump_stdin(Job *job);
extern void child_read(Job *job, int fd, int max_chunks);
extern void child_drain_and_close(Job *job);
extern void child_signal(Job *job, int sig);
extern char *child_stderr_tail(const Job *job);
extern const char *child_last_line(const Job *job);
extern void job_free(Job *job);

/* ---------- the loop (agent.c) and status (status.c) ---------- */

extern int	agent_run(const char *config_path, const CliOverrides *cli);

/* status's exit status when the role may not read some of its sections */
#define STATUS_DENIED 3
extern int	status_run(const char *conninfo, bool color, msec_t statement_timeout,
					   msec_t lock_timeout);

/* ---------- util.c ---------- */

extern bool verbose;

extern msec_t now_ms(void);
extern void log_info(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void log_verbose(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void log_warning(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void log_error(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void *xmalloc(size_t n);
extern void *xrealloc(void *p, size_t n);
extern char *xstrdup(const char *s);
extern char *xasprintf(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void buf_append(Buf *b, const char *data, size_t n);
extern void buf_reset(Buf *b);
extern void buf_free(Buf *b);
extern char *clean_text(const char *s, size_t len);
extern char *escape_text(const char *s);
extern char *redact(const char *s);
extern char *mask_conninfo(const char *s);
extern bool parse_duration(const char *s, msec_t *ms);
extern char *format_duration(msec_t ms, char *out, size_t outlen);
extern char *trim(char *s);
extern bool json_valid(const char *s);

#endif							/* COORD_AGENT_H */
