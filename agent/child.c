/*-------------------------------------------------------------------------
 * child.c
 *		coord-agent: the child process of a job.  Starts the allow-listed
 *		argv with the job in its environment and on its stdin, reads its
 *		stdout and stderr without ever blocking, and signals its process
 *		group.
 *
 * Each child gets its own process group (so a timeout kills the whole tree
 * a shell script may have started) and PR_SET_PDEATHSIG(SIGKILL) (so that
 * if the agent is SIGKILLed, the child dies with it instead of working on
 * a job whose session-bound claim has just been handed to another agent).
 * PDEATHSIG reaches the direct child only; task commands that start
 * long-lived grandchildren should exec them or watch their parent.
 *
 * Nothing from the job ever reaches a command line: the argv comes from
 * the config file, the job only from COORD_* environment variables and the
 * payload JSON on stdin.  Values from the payload are set only up to a size
 * (ENV_*_MAX), so that no job can make the exec fail.  The agent's own
 * database settings (the PG* variables: PGPASSWORD, PGHOST, ...) are not
 * handed on unless the task's pass_env names them: a task gets no access
 * to the database the agent's credentials give.
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "coord_agent.h"

extern char **environ;

/* Sets "NAME=value" in a NULL-terminated environment, replacing NAME. */
static void
env_put(char ***envp, int *n, char *entry)
{
	size_t		namelen = strcspn(entry, "=");
	int			i;

	for (i = 0; i < *n; i++)
		if (strncmp((*envp)[i], entry, namelen) == 0 && (*envp)[i][namelen] == '=')
		{
			free((*envp)[i]);
			(*envp)[i] = entry;
			return;
		}
	*envp = xrealloc(*envp, sizeof(char *) * (*n + 2));
	(*envp)[(*n)++] = entry;
	(*envp)[*n] = NULL;
}

/* Whether a PG* variable ("NAME=value") is one pass_env lets through. */
static bool
pass_pg(const char *entry, char *const *pass, int npass)
{
	size_t		namelen = strcspn(entry, "=");
	int			i;

	for (i = 0; i < npass; i++)
	{
		size_t		k = strlen(pass[i]);

		if (k > 0 && pass[i][k - 1] == '*')
		{
			if (namelen >= k - 1 && strncmp(entry, pass[i], k - 1) == 0)
				return true;
		}
		else if (k == namelen && strncmp(entry, pass[i], k) == 0)
			return true;
	}
	return false;
}

/* Sets NAME=value from the payload if it is not too long; says so if it is. */
static void
env_put_capped(char ***envp, int *n, const Job *job, const char *name, const char *value, size_t max)
{
	size_t		len = strlen(value);

	if (len <= max)
		env_put(envp, n, xasprintf("%s=%s", name, value));
	else
		log_warning("job %lld: %s not set: the payload's value is %zu bytes (at most %zu; the payload is on stdin)",
					(long long) job->id, name, len, max);
}

/*
 * The child's environment: the agent's own (without stale COORD_
 * variables, and without PG* ones unless the task passes them), the task's
 * env lines, then the job.  Built before fork, so that the child only has
 * to exec.
 */
static char **
build_env(const Job *job, const TaskConfig *task, const AgentConfig *cfg)
{
	char	  **pass = task->pass_env_set ? task->pass_env : cfg->pass_env;
	int			npass = task->pass_env_set ? task->npass_env : cfg->npass_env;
	char	  **envp = NULL;
	int			n = 0;
	char	  **e;
	int			i;

	envp = xmalloc(sizeof(char *));
	envp[0] = NULL;
	for (e = environ; *e; e++)
		if (strncmp(*e, "COORD_", 6) != 0 &&
			(strncmp(*e, "PG", 2) != 0 || pass_pg(*e, pass, npass)))
			env_put(&envp, &n, xstrdup(*e));
	for (i = 0; i < task->nenv; i++)
		env_put(&envp, &n, xstrdup(task->env[i]));
	env_put(&envp, &n, xasprintf("COORD_JOB_ID=%lld", (long long) job->id));
	env_put(&envp, &n, xasprintf("COORD_TOKEN=%lld", (long long) job->token));
	env_put(&envp, &n, xasprintf("COORD_QUEUE=%s", job->queue));
	env_put(&envp, &n, xasprintf("COORD_ATTEMPT=%d", job->attempt));
	env_put(&envp, &n, xasprintf("COORD_SNOOZES=%d", job->snoozes));
	env_put(&envp, &n, xasprintf("COORD_TASK=%s", job->task));
	env_put(&envp, &n, xasprintf("COORD_HOST=%s", cfg->host));
	if (strlen(job->payload) <= ENV_PAYLOAD_MAX)
		env_put(&envp, &n, xasprintf("COORD_PAYLOAD=%s", job->payload));
	if (job->app)
		env_put_capped(&envp, &n, job, "COORD_APP", job->app, ENV_APP_MAX);
	if (job->period_start)
		env_put_capped(&envp, &n, job, "COORD_PERIOD_START", job->period_start, ENV_PERIOD_MAX);
	if (job->period_end)
		env_put_capped(&envp, &n, job, "COORD_PERIOD_END", job->period_end, ENV_PERIOD_MAX);
	return envp;
}

static void
free_env(char **envp)
{
	char	  **e;

	for (e = envp; *e; e++)
		free(*e);
	free(envp);
}

static void
close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

/*
 * Starts the job's child.  On failure (no pipes, no fork) returns false with
 * a message; a command that cannot be executed is a child that writes why
 * to its stderr and exits 127, so it fails like any other failing command.
 */
bool
child_start(Job *job, const TaskConfig *task, const AgentConfig *cfg, char **errmsg)
{
	int			in[2] = {-1, -1},
				out[2] = {-1, -1},
				err[2] = {-1, -1};
	char	  **envp;
	sigset_t	all,
				old;
	pid_t		parent = getpid();
	pid_t		pid;

	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
	{
		*errmsg = xasprintf("could not create pipes: %s", strerror(errno));
		close_pair(in);
		close_pair(out);
		close_pair(err);
		return false;
	}
	envp = build_env(job, task, cfg);

	/*
	 * Block signals across fork: until the child has reset the handlers, a
	 * signal would run the agent's handler in the child and write into the
	 * agent's self-pipe.
	 */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid == 0)
	{
		struct sigaction sa;
		int			sig;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		for (sig = 1; sig < NSIG; sig++)
			(void) sigaction(sig, &sa, NULL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);

		/* die with the agent; and if it is already gone, do not start */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(127);
		(void) setpgid(0, 0);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(127);
		if (task->dir && chdir(task->dir) != 0)
		{
			dprintf(2, "coord-agent: cannot change to directory \"%s\": %s\n", task->dir, strerror(errno));
			_exit(127);
		}
		execve(task->argv[0], task->argv, envp);
		dprintf(2, "coord-agent: cannot execute \"%s\": %s\n", task->argv[0], strerror(errno));
		_exit(127);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	free_env(envp);
	if (pid < 0)
	{
		*errmsg = xasprintf("could not fork: %s", strerror(errno));
		close_pair(in);
		close_pair(out);
		close_pair(err);
		return false;
	}

	/* also here: the group must exist before we could ever signal it */
	(void) setpgid(pid, pid);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	job->pid = pid;
	job->fd_in = in[1];
	job->fd_out = out[0];
	job->fd_err = err[0];
	job->in_off = 0;
	fcntl(job->fd_in, F_SETFL, fcntl(job->fd_in, F_GETFL) | O_NONBLOCK);
	fcntl(job->fd_out, F_SETFL, fcntl(job->fd_out, F_GETFL) | O_NONBLOCK);
	fcntl(job->fd_err, F_SETFL, fcntl(job->fd_err, F_GETFL) | O_NONBLOCK);
	child_pump_stdin(job);
	return true;
}

/*
 * Writes what the pipe takes of the payload to the child's stdin; closes
 * it when all is written, or when the child will not read (EPIPE).
 */
void
child_pump_stdin(Job *job)
{
	size_t		len = strlen(job->payload);

	while (job->fd_in >= 0 && job->in_off < len)
	{
		ssize_t		w = write(job->fd_in, job->payload + job->in_off, len - job->in_off);

		if (w > 0)
			job->in_off += (size_t) w;
		else if (w < 0 && errno == EINTR)
			continue;
		else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		else
			break;
	}
	if (job->fd_in >= 0)
	{
		close(job->fd_in);
		job->fd_in = -1;
	}
}

/* A stdout line ended: remember it if it has anything but white space. */
static void
end_line(Job *job)
{
	if (job->line_overflow)
	{
		job->last_overflow = true;
		buf_reset(&job->last_line);
	}
	else if (job->line.len > 0 && job->line.data[strspn(job->line.data, " \t\r\f\v")] != '\0')
	{
		Buf			tmp = job->last_line;

		job->last_line = job->line;
		job->line = tmp;
		job->last_overflow = false;
	}
	buf_reset(&job->line);
	job->line_overflow = false;
}

/* Keeps only the last line of stdout: the job's result, or retry_after=. */
static void
feed_stdout(Job *job, const char *p, size_t n)
{
	while (n > 0)
	{
		const char *nl = memchr(p, '\n', n);
		size_t		seg = nl ? (size_t) (nl - p) : n;

		if (!job->line_overflow)
		{
			if (job->line.len + seg > STDOUT_LINE_MAX)
			{
				job->line_overflow = true;
				buf_reset(&job->line);
			}
			else
				buf_append(&job->line, p, seg);
		}
		if (nl == NULL)
			break;
		end_line(job);
		p = nl + 1;
		n -= seg + 1;
	}
}

/* Keeps the last STDERR_TAIL_BYTES of stderr in a ring. */
static void
feed_stderr(Job *job, const char *p, size_t n)
{
	if (n > STDERR_TAIL_BYTES)
	{
		job->err_total += n - STDERR_TAIL_BYTES;
		p += n - STDERR_TAIL_BYTES;
		n = STDERR_TAIL_BYTES;
	}
	while (n > 0)
	{
		size_t		pos = job->err_total % STDERR_TAIL_BYTES;
		size_t		k = STDERR_TAIL_BYTES - pos;

		if (k > n)
			k = n;
		memcpy(job->err_ring + pos, p, k);
		job->err_total += k;
		p += k;
		n -= k;
	}
}

/*
 * Reads what fd (the job's stdout or stderr) has now, at most max_chunks
 * reads of 64 KiB (a child that writes without pause must not keep the loop
 * from everything else); closes it at EOF.
 */
void
child_read(Job *job, int fd, int max_chunks)
{
	char		chunk[65536];
	int			n;

	for (n = 0; n < max_chunks; n++)
	{
		ssize_t		r = read(fd, chunk, sizeof(chunk));

		if (r > 0)
		{
			if (fd == job->fd_out)
				feed_stdout(job, chunk, (size_t) r);
			else
				feed_stderr(job, chunk, (size_t) r);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* EOF or an error: nothing more will come */
		close(fd);
		if (fd == job->fd_out)
			job->fd_out = -1;
		else
			job->fd_err = -1;
		return;
	}
}

/* Closes the child's pipes that are still open. */
static void
job_close_fds(Job *job)
{
	if (job->fd_in >= 0)
		close(job->fd_in);
	if (job->fd_out >= 0)
		close(job->fd_out);
	if (job->fd_err >= 0)
		close(job->fd_err);
	job->fd_in = job->fd_out = job->fd_err = -1;
}

/*
 * The child has exited: take what its pipes still hold and close them.
 * Does not wait for EOF: a grandchild may keep the pipes open forever.
 */
void
child_drain_and_close(Job *job)
{
	/* what is in the pipes (a grandchild might write forever: bounded) */
	if (job->fd_out >= 0)
		child_read(job, job->fd_out, 256);
	if (job->fd_err >= 0)
		child_read(job, job->fd_err, 256);
	job_close_fds(job);
	if (job->line.len > 0 || job->line_overflow)
		end_line(job);
}

/* Signals the child's whole process group. */
void
child_signal(Job *job, int sig)
{
	if (job->pid <= 0 || job->exited)
		return;
	if (kill(-job->pid, sig) != 0 && errno == ESRCH)
		(void) kill(job->pid, sig);
}

/* The last non-empty stdout line, or NULL (none, or longer than allowed). */
const char *
child_last_line(const Job *job)
{
	if (job->last_overflow || job->last_line.len == 0)
		return NULL;
	return job->last_line.data;
}

/* The tail of stderr as clean text ("..." first when cut), or "" if none. */
char *
child_stderr_tail(const Job *job)
{
	size_t		n = job->err_total < STDERR_TAIL_BYTES ? job->err_total : STDERR_TAIL_BYTES;
	size_t		start = (job->err_total - n) % STDERR_TAIL_BYTES;
	char		tmp[STDERR_TAIL_BYTES + 4];
	char	   *clean,
			   *t,
			   *res;
	size_t		first = STDERR_TAIL_BYTES - start;
	size_t		skip = 0;

	if (first > n)
		first = n;
	memcpy(tmp, job->err_ring + start, first);
	memcpy(tmp + first, job->err_ring, n - first);
	/* a cut tail starts mid-character: skip UTF-8 continuation bytes */
	if (job->err_total > STDERR_TAIL_BYTES)
		while (skip < n && ((unsigned char) tmp[skip] & 0xC0) == 0x80)
			skip++;
	clean = clean_text(tmp + skip, n - skip);
	t = trim(clean);
	res = job->err_total > STDERR_TAIL_BYTES ? xasprintf("...%s", t) : xstrdup(t);
	free(clean);
	return res;
}

void
job_free(Job *job)
{
	job_close_fds(job);
	free(job->queue);
	free(job->payload);
	free(job->task);
	free(job->app);
	free(job->period_start);
	free(job->period_end);
	buf_free(&job->line);
	buf_free(&job->last_line);
	free(job);
}
