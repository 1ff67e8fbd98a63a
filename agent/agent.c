/*-------------------------------------------------------------------------
 * agent.c
 *		coord-agent's main loop: claiming and starting jobs, heartbeats,
 *		the children's lifecycle (start, timeouts, reaping, reporting) and
 *		the signals (SIGTERM drains, SIGHUP reloads).
 *
 * One thread, one poll().  Signals only write a byte into a self-pipe;
 * children are started and read in the loop; the database session is
 * db.c's, and every statement is one of protocol.c's, one bounded round
 * trip each: no lock held by someone else and no stuck server stops the
 * loop for longer.
 *
 * Claims follow docs/jobs.md ("Waking idle workers"): LISTEN first, then
 * claim until a claim comes back empty, and poll every `poll`.  A claim
 * whose result cannot be read, or whose outcome is unknown, drops the
 * connection.  A complete or fail whose outcome is unknown keeps its job
 * in_doubt until coord.claim_state says what became of it.  A child whose
 * claim is gone (its session lost, its lease run out) is killed.
 *
 * The loop, wake-ups and next_due's floor and back-off, session-bound and
 * lease claims, unreadable claims and unknown outcomes: agent/README.md,
 * "The loop (agent.c)".
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord_agent.h"
#include "db.h"
#include "protocol.h"

/* the reconnect after an unreadable claim: not at once, it may recur */
#define BROKEN_CLAIM_DELAY_MS 1000
/* the shortest sleep coord.next_due makes: no busy loop on a near time */
#define NEXT_DUE_FLOOR_MS 10

static AgentConfig *cfg;
static const CliOverrides *cli_over;
static const char *cfg_path;

static Job *jobs;
static int	njobs;

static bool need_claim;
static msec_t next_claim;		/* the next round by the clock */
static msec_t due_backoff;		/* after next_due hints due already, 0: none */
static int	queue_rr;
static char *last_claim_error;
static char *last_next_due_error;

static bool draining;

/* claiming (below), also for a report that claims (report_job) */
static void claim_in_doubt(const char *queue, ClaimStatus status, const char *why);
static int	start_claimed(PGresult *res, const char *queue, int n, msec_t sent);
static void claimed_in_doubt(const Job *job, const char *how);
static msec_t drain_deadline;
static bool drain_killed;

static int	sigpipe_fds[2] = {-1, -1};
static bool got_term;
static bool got_hup;

/* ---------- signals ---------- */

static void
on_signal(int sig)
{
	int			save = errno;
	unsigned char c = (unsigned char) sig;
	ssize_t		r = write(sigpipe_fds[1], &c, 1);

	(void) r;					/* a full pipe already holds a wake-up */
	errno = save;
}

static void
setup_signals(void)
{
	struct sigaction sa;

	if (pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
	{
		log_error("could not create the signal pipe: %s", strerror(errno));
		exit(1);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	/* a child that closed its stdin must not kill us when we write to it */
	sigaction(SIGPIPE, &sa, NULL);
}

static void
read_signals(void)
{
	unsigned char buf[64];
	ssize_t		n;
	ssize_t		i;

	while ((n = read(sigpipe_fds[0], buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i++)
		{
			if (buf[i] == SIGTERM || buf[i] == SIGINT)
				got_term = true;
			else if (buf[i] == SIGHUP)
				got_hup = true;
			/* SIGCHLD only has to wake poll(): every loop reaps */
		}
}

/* ---------- jobs list ---------- */

static Job *
job_new(void)
{
	Job		   *j = xmalloc(sizeof(Job));

	memset(j, 0, sizeof(*j));
	j->fd_in = j->fd_out = j->fd_err = -1;
	j->next = jobs;
	jobs = j;
	njobs++;
	return j;
}

static void
job_remove(Job *job)
{
	Job		  **pp;

	for (pp = &jobs; *pp; pp = &(*pp)->next)
		if (*pp == job)
		{
			/* its channel: the session LISTENs only on its running jobs' */
			if (job->listened != 0 && job->listened == db_session() && db_state == DB_READY)
				(void) proto_listen_job(job->id, false);
			*pp = job->next;
			njobs--;
			job_free(job);
			/* a slot is free: look for work now, not at the next poll */
			need_claim = true;
			return;
		}
}

static char *
fmt_secs(msec_t ms, char *buf, size_t len)
{
	snprintf(buf, len, "%.3fs", ms / 1000.0);
	return buf;
}

/* The first line of a text, cut to max bytes, for a log line. */
static char *
first_line(const char *s, size_t max)
{
	size_t		n = strcspn(s, "\n");

	if (n > max)
		n = max;
	return xasprintf("%.*s%s", (int) n, s, s[n] ? "..." : "");
}

/* ---------- what the session tells the loop (db.h's DbCallbacks) ---------- */

/* A notification on our channels, or a new session: claim now. */
static void
agent_wake(void)
{
	need_claim = true;
}

/*
 * The session is gone, and its session-bound claims with it: their
 * children are killed at once (another agent may already be running the
 * job), and results not yet reported are dropped (finish_exited).
 */
static void
agent_session_lost(void)
{
	Job		   *j;

	for (j = jobs; j; j = j->next)
	{
		/* a report in doubt is resolved after the reconnect */
		if (!j->session_bound || j->killed == KILL_LOST || j->in_doubt)
			continue;
		j->killed = KILL_LOST;
		if (!j->exited)
		{
			log_verbose("job %lld: session-bound claim lost with the session: killing pid %d",
						(long long) j->id, (int) j->pid);
			child_signal(j, SIGKILL);
		}
	}
}

/*
 * coord.cancel of a running job (NOTIFY cancel on its channel): the claim
 * is gone, so its process group is killed at once, as for a heartbeat that
 * says so, and nothing is reported.
 */
static void
agent_job_cancelled(int64_t id)
{
	Job		   *j;

	for (j = jobs; j; j = j->next)
		if (j->id == id && !j->exited && j->killed == KILL_NONE && !j->in_doubt)
		{
			log_info("job %lld: cancelled (NOTIFY cancel): killing pid %d and its process group",
					 (long long) j->id, (int) j->pid);
			j->killed = KILL_LOST;
			child_signal(j, SIGKILL);
		}
}

/*
 * What db.c, below this file and protocol.c, calls up to: the statements
 * that open and reload a session and join and leave a partition group, and
 * the two above.
 */
static const DbCallbacks db_callbacks = {
	.open = proto_open_session,
	.reload = proto_reload_session,
	.join = proto_join,
	.leave = proto_leave,
	.wake = agent_wake,
	.session_lost = agent_session_lost,
	.job_cancelled = agent_job_cancelled,
};

/* ---------- reporting a finished job ---------- */

/* Logs the end of a job: one line, the fields people grep for. */
static void
log_end(const Job *job, const char *outcome, const char *extra)
{
	char		b[32];

	log_info("job %lld end task=%s duration=%s outcome=%s%s%s",
			 (long long) job->id, job->task,
			 fmt_secs((job->ended ? job->ended : now_ms()) - job->started, b, sizeof(b)),
			 outcome, extra && *extra ? " " : "", extra ? extra : "");
}

/* What is reported for an exited child's job (make_report). */
typedef struct Report
{
	const char *outcome;		/* done, retry, failed, timeout, shutdown */
	bool		complete;		/* coord.complete, else coord.fail */
	char	   *result;			/* complete: the JSON result, or NULL */
	char	   *error;			/* fail: the error */
	msec_t		retry_after;	/* fail: the delay, -1: the backoff */
	char	   *extra;			/* fields for the end line, or NULL */
	char	   *tail;			/* the end of stderr */
} Report;

/*
 * What to report for an exited child (the same each time it is asked):
 * complete on exit 0, fail with retry_after on exit 75, fail otherwise.
 */
static void
make_report(Job *job, Report *r)
{
	const char *last = child_last_line(job);
	char		b1[32],
				b2[32];

	memset(r, 0, sizeof(*r));
	r->tail = child_stderr_tail(job);
	r->retry_after = -1;
	if (job->killed == KILL_SHUTDOWN)
	{
		/* hand the job back at once, without using up an attempt */
		r->outcome = "shutdown";
		r->error = xasprintf("coord-agent on host %s shut down before the job finished%s%s",
							 cfg->host, *r->tail ? "; stderr: " : "", r->tail);
		r->retry_after = 0;
	}
	else if (job->killed == KILL_TIMEOUT)
	{
		r->outcome = "timeout";
		r->error = xasprintf("timed out after %s (task timeout %s); the process group was killed%s%s",
							 format_duration(job->ended - job->started, b1, sizeof(b1)),
							 format_duration(job->timeout, b2, sizeof(b2)),
							 *r->tail ? "; stderr: " : "", r->tail);
	}
	else if (WIFEXITED(job->status) && WEXITSTATUS(job->status) == 0)
	{
		r->outcome = "done";
		r->complete = true;
		if (last)
		{
			char	   *t = xstrdup(last);

			if (json_valid(trim(t)))
				r->result = xstrdup(trim(t));
			free(t);
		}
	}
	else if (WIFEXITED(job->status) && WEXITSTATUS(job->status) == 75)
	{
		msec_t		delay = job->retry_after;

		r->outcome = "retry";
		if (last && strncmp(last, "retry_after=", 12) == 0)
		{
			msec_t		d;

			if (parse_duration(last + 12, &d))
				delay = d;
			else if (!job->in_doubt)
				log_warning("job %lld: ignoring \"%s\": not a number of seconds", (long long) job->id, last);
		}
		r->error = xasprintf("temporary failure (exit 75), retry after %s%s%s",
							 format_duration(delay, b1, sizeof(b1)), *r->tail ? "; stderr: " : "", r->tail);
		r->retry_after = delay;
		r->extra = xasprintf("exit=75 retry_after=%s", format_duration(delay, b1, sizeof(b1)));
	}
	else
	{
		r->outcome = "failed";
		if (WIFEXITED(job->status))
		{
			r->error = xasprintf("exit status %d%s%s", WEXITSTATUS(job->status),
								 *r->tail ? ": " : " (nothing on stderr)", r->tail);
			r->extra = xasprintf("exit=%d", WEXITSTATUS(job->status));
		}
		else
		{
			int			sig = WTERMSIG(job->status);

			r->error = xasprintf("killed by signal %d (%s)%s%s", sig, strsignal(sig),
								 *r->tail ? ": " : "", r->tail);
			r->extra = xasprintf("signal=%d", sig);
		}
	}
}

static void
free_report(Report *r)
{
	free(r->result);
	free(r->error);
	free(r->extra);
	free(r->tail);
}

/*
 * A report in doubt (job->in_doubt): what coord.claim_state says became of
 * the claim, asked in a transaction whose commit confirms the report's
 * (protocol.c).  Returns what the report would have answered -- "done",
 * "scheduled" or "dead" (it committed), "lost" (the claim is no longer
 * ours) -- with *why for the log; "released" (nothing committed, and the
 * session-bound claim ended with its session); "again" (nothing committed
 * and the claim still holds: report again); "later" (not said yet: ask
 * again); or "unknown" (it cannot be said: *why).
 */
static char *
resolve_report(Job *job, const Report *r, char **why)
{
	char		sqlstate[6];
	char	   *st = proto_claim_state(job, sqlstate);
	char	   *answer;
	const char *shown;

	*why = NULL;
	if (st == NULL)
	{
		/* 42883: a pg_coord without coord.claim_state; 42501: not allowed */
		if (db_doubt() == NULL && db_state == DB_READY &&
			(strcmp(sqlstate, "42883") == 0 || strcmp(sqlstate, "42501") == 0))
		{
			*why = xasprintf("coord.claim_state could not say what became of the claim: %s", db_error());
			return xstrdup("unknown");
		}
		if (db_state == DB_READY)
			log_warning("job %lld: could not resolve the unknown outcome yet (%s); trying again",
						(long long) job->id, db_doubt() ? db_doubt() : db_error());
		return xstrdup("later");
	}
	shown = strcmp(st, "none") == 0 ? "NULL" : st;
	if (strcmp(st, "claimed") == 0)
	{
		/* a session-bound claim held by our old session, which lingers */
		if (job->session_bound && job->doubt_session != db_session())
		{
			log_verbose("job %lld: coord.claim_state: claimed: our old session still holds the claim; asking again",
						(long long) job->id);
			answer = xstrdup("later");
		}
		else
			answer = xstrdup("again");
	}
	else if (strcmp(st, "released") == 0)
		answer = xstrdup("released");
	else if (r->complete ? strcmp(st, "done") == 0 :
			 (strcmp(st, "scheduled") == 0 || strcmp(st, "dead") == 0))
	{
		answer = xstrdup(st);
		*why = xasprintf("coord.claim_state: %s, so it committed", st);
	}
	else
	{
		answer = xstrdup("lost");
		*why = xasprintf("coord.claim_state: %s, so it did not commit", shown);
	}
	free(st);
	return answer;
}

/*
 * Reports an exited child's job (make_report), or resolves the report
 * whose outcome was unknown.  Returns true when the job is done with (its
 * end logged); false when it is to be kept: job->in_doubt (resolve it when
 * connected), or the report failed (a statement error, or the connection
 * went away: the caller keeps the job for later or drops it).
 */
static bool
report_job(Job *job)
{
	Report		r;
	char	   *state = NULL;
	char	   *why = NULL;
	bool		kept = false;
	bool		ok;

	make_report(job, &r);
	if (job->in_doubt)
	{
		state = resolve_report(job, &r, &why);
		if (strcmp(state, "later") == 0)
		{
			job->report_at = now_ms() + 1000;
			free(state);
			free_report(&r);
			return false;
		}
		if (strcmp(state, "released") == 0 || strcmp(state, "unknown") == 0)
		{
			bool		released = strcmp(state, "released") == 0;
			char	   *more = released ?
			xstrdup("(its report's outcome was unknown; coord.claim_state: released: nothing committed, and the session-bound claim ended with its session; nothing reported)") :
			xasprintf("(%s)", why);

			if (!released)
				claimed_in_doubt(job, "its outcome stays unknown");

			log_end(job, released ? "lost" : "unknown", more);
			free(more);
			free(why);
			free(state);
			free_report(&r);
			return true;
		}
		if (strcmp(state, "again") == 0)
		{
			/* nothing committed, and the claim is still ours: report again */
			log_info("job %lld: coord.claim_state: claimed: its report did not commit; reporting again",
					 (long long) job->id);
			free(state);
			state = NULL;
			job->in_doubt = false;
		}
		else
		{
			/* committed: so did the claim of a report that also claimed */
			claimed_in_doubt(job, "that committed");
			kept = job->doubt_kept;
			job->in_doubt = false;
		}
		job->doubt_claimed = false;
	}
	if (state == NULL)
	{
		KillReason	killed = job->killed;
		NextClaim	next;
		msec_t		sent = now_ms();

		/*
		 * One commit per job: the report claims the next jobs of the queue
		 * too, for the slots free once this job is gone (its own and any
		 * other).  Only with one queue: an agent of several takes them in
		 * turn (claim_jobs), which a report of one queue's job would not.
		 */
		memset(&next, 0, sizeof(next));
		if (!draining && db_state == DB_READY && db_group_ready() && cfg->nqueues == 1 &&
			strcmp(job->queue, cfg->queues[0]) == 0)
			next.n = cfg->concurrency - njobs + 1;
		next.lease = cfg->lease;
		next.host = cfg->host;
		next.pgroup = cfg->partition_group;
		if (r.complete)
			state = proto_complete(job, r.result, &kept, &next);
		else
			state = proto_fail(job, r.error, r.retry_after, &next);

		/*
		 * A report that also claimed: its claims are started; when its
		 * outcome is unknown, so is the claim's, and it is settled with the
		 * report's (claimed_in_doubt): no claim if it did not commit.
		 */
		if (next.n > 0)
		{
			job->doubt_claimed = next.status == CLAIM_UNKNOWN;
			if (next.status == CLAIM_UNREADABLE)
				claim_in_doubt(cfg->queues[0], next.status, next.why);
			else if (next.status == CLAIM_OK && state != NULL)
				(void) start_claimed(next.rows, cfg->queues[0], next.n, sent);
		}
		if (state != NULL && strcmp(state, "unknown") == 0)
		{
			/* a lost session said KILL_LOST: not so before it is resolved */
			job->killed = killed;
			job->in_doubt = true;
			job->doubt_kept = kept;
			job->doubt_session = db_session();
			job->report_at = 0;
			log_warning("job %lld: the outcome of coord.%s is unknown (%s); resolving it %s",
						(long long) job->id, r.complete ? "complete" : "fail", db_doubt(),
						db_state == DB_READY ? "now" : "after the reconnect");
			free(state);
			free_report(&r);
			return false;
		}
	}
	if (r.complete && state != NULL)
	{
		char	   *e = xasprintf("%s%s", kept ? "result=json" : "result=null",
								  r.extra ? r.extra : "");

		free(r.extra);
		r.extra = e;
	}

	ok = (state != NULL);
	if (ok)
	{
		char	   *more;
		char	   *err1 = r.error && strcmp(r.outcome, "retry") != 0 ? first_line(r.tail, 200) : NULL;
		char	   *res = why ? xasprintf(" (its report's outcome was unknown; %s)", why) : xstrdup("");

		if (strcmp(state, "lost") == 0)
			more = xasprintf("%s%sstate=unchanged (the claim was no longer ours; nothing reported)%s",
							 r.extra ? r.extra : "", r.extra ? " " : "", res);
		else
			more = xasprintf("%s%sstate=%s%s%s%s%s", r.extra ? r.extra : "", r.extra ? " " : "", state,
							 err1 && *err1 ? " stderr=\"" : "", err1 && *err1 ? err1 : "",
							 err1 && *err1 ? "\"" : "", res);
		log_end(job, strcmp(state, "lost") == 0 ? "stale" : r.outcome, more);
		free(more);
		free(err1);
		free(res);
	}
	free(why);
	free(state);
	free_report(&r);
	return ok;
}

/*
 * Every exited child's job: report it if we can, keep it while a lease
 * claim may still be reported after a reconnect or while its report is in
 * doubt, or drop it.
 */
static void
finish_exited(msec_t now)
{
	Job		   *j,
			   *next;

	for (j = jobs; j; j = next)
	{
		next = j->next;
		if (!j->exited)
			continue;
		if (j->killed == KILL_LOST && !j->in_doubt)
		{
			log_end(j, "lost", "(the claim is gone: killed, nothing reported)");
			job_remove(j);
			continue;
		}
		if (db_state != DB_READY)
		{
			if (j->in_doubt)
				continue;		/* resolved after the reconnect */
			if (j->session_bound)
			{
				log_end(j, "lost", "(the session-bound claim ended with the database session; nothing reported)");
				job_remove(j);
			}
			else if (now >= j->lease_valid_until)
			{
				log_end(j, "lost", "(the lease ran out before the result could be reported)");
				job_remove(j);
			}
			continue;
		}
		if (now < j->report_at)
			continue;
		if (report_job(j))
			job_remove(j);
		else if (j->in_doubt)
			continue;			/* resolved now, later, or after the reconnect */
		else if (db_state == DB_READY)
		{
			/*
			 * A statement error, not the connection.  Keep the job (and its
			 * slot) and try again: dropping it would leave a session-bound
			 * claim held by this session for as long as it lives.
			 */
			log_error("job %lld: could not report the outcome (%s); trying again in 5s",
					  (long long) j->id, db_error());
			j->report_at = now + 5000;
		}
		else if (j->session_bound)
		{
			log_end(j, "lost", "(the connection went down while reporting; nothing reported)");
			job_remove(j);
		}
		/* lease: tried again after the reconnect */
	}
}

/* ---------- claiming and starting ---------- */

/* A claimed job whose task is not in the allow-list: fail it, run nothing. */
static void
reject_job(Job *job)
{
	char	   *error = xasprintf("task \"%s\" is not in the allow-list of coord-agent on host %s (config %s); nothing was run",
								  job->task, cfg->host, cfg->path ? cfg->path : "(none)");
	char	   *state;

	job->started = job->ended = now_ms();
	state = proto_fail(job, error, -1, NULL);
	log_info("job %lld rejected task=%s queue=%s attempt=%d outcome=rejected state=%s error=\"%s\"",
			 (long long) job->id, job->task, job->queue, job->attempt,
			 state ? state : "unknown", error);
	free(state);
	free(error);
}

/* Starts the child of a claimed job, or fails the job if it cannot. */
static void
start_job(Job *job)
{
	TaskConfig *task = config_find_task(cfg, job->task);
	char	   *err = NULL;
	msec_t		now = now_ms();

	if (task == NULL)
	{
		reject_job(job);
		job_remove(job);
		return;
	}
	job->timeout = task->timeout >= 0 ? task->timeout : cfg->timeout;
	job->retry_after = task->retry_after >= 0 ? task->retry_after : cfg->retry_after;
	job->started = now;
	job->deadline = job->timeout > 0 ? now + job->timeout : 0;
	job->next_heartbeat = now + (job->session_bound ? cfg->check : job->lease / 3);
	if (!child_start(job, task, cfg, &err))
	{
		char	   *error = xasprintf("coord-agent could not start the task: %s", err);
		char	   *state;

		/* our trouble, not the job's: no attempt used */
		state = proto_fail(job, error, 5000, NULL);
		log_error("job %lld: %s (state %s)", (long long) job->id, error, state ? state : "unknown");
		free(state);
		free(error);
		free(err);
		job_remove(job);
		return;
	}
	log_info("job %lld start task=%s queue=%s attempt=%d pid=%d",
			 (long long) job->id, job->task, job->queue, job->attempt, (int) job->pid);
}

/* Whether an empty claim has marked this session idle on some queue. */
static bool marked_idle = false;

/*
 * A claim (or a report that also claimed) whose outcome is unknown or whose
 * result cannot be read: the session may hold claims we cannot know.
 */
static void
claim_in_doubt(const char *queue, ClaimStatus status, const char *why)
{
	bool		session_bound = cfg->lease == 0;

	if (status == CLAIM_UNKNOWN)
	{
		/* it may have claimed: drop the session that may hold claims */
		char		b[32];
		char	   *m = xasprintf("the outcome of a claim from queue %s is unknown (%s): %s",
								  queue, db_doubt(),
								  !session_bound ? "jobs it may have claimed come back when their lease runs out" :
								  db_state == DB_READY ? "reconnecting, so that the session's claims are released" :
								  "any claim it made ended with the session");

		if (!session_bound)
			log_error("%s (%s)", m, format_duration(cfg->lease, b, sizeof(b)));
		else
			log_error("%s", m);
		free(m);
		if (db_state == DB_READY)
			db_lost_after("claim outcome unknown", BROKEN_CLAIM_DELAY_MS);
		return;
	}
	log_error("claim from queue %s returned what the agent cannot read (%s): reconnecting, so that the session's claims are released",
			  queue, why);
	db_lost_after("unreadable claim result", BROKEN_CLAIM_DELAY_MS);
}

/*
 * A report that also claimed, whose outcome was in doubt, is resolved:
 * committed (or still unknown), its claims may be held by the session that
 * sent it, and we do not know them.  Session-bound: drop that session, if
 * it is still ours, so that they are released; lease: they come back when
 * their lease runs out.  Not committed: it claimed nothing.
 */
static void
claimed_in_doubt(const Job *job, const char *how)
{
	char		b[32];

	if (!job->doubt_claimed)
		return;
	if (cfg->lease != 0)
		log_warning("job %lld: its report also claimed from queue %s and %s: jobs it may have claimed come back when their lease runs out (%s)",
					(long long) job->id, job->queue, how, format_duration(cfg->lease, b, sizeof(b)));
	else if (db_state == DB_READY && job->doubt_session == db_session())
	{
		log_warning("job %lld: its report also claimed from queue %s and %s: reconnecting, so that the claims it may have made are released",
					(long long) job->id, job->queue, how);
		db_lost_after("report and claim outcome unknown", BROKEN_CLAIM_DELAY_MS);
	}
}

/*
 * Starts the jobs of a claim's rows (sent: when the claim was sent, which
 * a lease counts from); clears res.  Returns how many it claimed.
 */
static int
start_claimed(PGresult *res, const char *queue, int n, msec_t sent)
{
	bool		session_bound = cfg->lease == 0;
	int			got = res ? PQntuples(res) : 0;
	int			r;

	if (got > 0)
		log_verbose("claimed %d job(s) from queue %s", got, queue);
	else if (n > 0)
		marked_idle = true;
	for (r = 0; r < got && db_state == DB_READY; r++)
	{
		Job		   *job = job_new();

		proto_claim_job(res, r, job);
		job->session_bound = session_bound;
		job->lease = session_bound ? 0 : cfg->lease;
		job->lease_valid_until = session_bound ? 0 : sent + cfg->lease;
		start_job(job);
	}
	if (r < got)
		log_info("the connection went down during the claim: %d claimed job(s) not started", got - r);
	if (res)
		PQclear(res);
	return got;
}

/*
 * One claim of up to n jobs from a queue; starts them.  Returns how many it
 * got, or -1 on an error.  n = 0 claims nothing and drops the idle mark.
 */
static int
claim_from(const char *queue, int n)
{
	PGresult   *res;
	msec_t		sent = now_ms();
	const char *why;
	ClaimStatus status = proto_claim(queue, n, cfg->lease, cfg->host, cfg->partition_group, &res, &why);

	switch (status)
	{
		case CLAIM_UNKNOWN:
		case CLAIM_UNREADABLE:
			claim_in_doubt(queue, status, why);
			return -1;
		case CLAIM_FAILED:
			if (db_state == DB_READY)
			{
				char	   *m = xasprintf("claim from queue %s failed: %s", queue, db_error());

				/* once per distinct error: the poll repeats it every second */
				if (last_claim_error == NULL || strcmp(last_claim_error, m) != 0)
					log_error("%s", m);
				free(last_claim_error);
				last_claim_error = m;
			}
			return -1;
		case CLAIM_OK:
			break;
	}
	free(last_claim_error);
	last_claim_error = NULL;
	return start_claimed(res, queue, n, sent);
}

/*
 * After a round that left slots free (every queue came back empty): the
 * next round at coord.next_due of the queues, if that comes before the poll
 * (agent/README.md, The loop: the floor and the back-off).
 */
static void
sleep_until_due(void)
{
	msec_t		wait;
	msec_t		now;
	char		b[32];

	if (!proto_next_due(cfg, &wait))
	{
		if (db_state == DB_READY)
		{
			char	   *m = xasprintf("coord.next_due failed (claiming every poll): %s", db_error());

			if (last_next_due_error == NULL || strcmp(last_next_due_error, m) != 0)
				log_error("%s", m);
			free(last_next_due_error);
			last_next_due_error = m;
		}
		return;
	}
	free(last_next_due_error);
	last_next_due_error = NULL;
	now = now_ms();
	if (wait < 0)
	{
		due_backoff = 0;
		return;
	}
	if (wait == 0)
	{
		due_backoff = due_backoff == 0 ? NEXT_DUE_FLOOR_MS : due_backoff * 2;
		if (due_backoff > cfg->poll)
			due_backoff = cfg->poll;
		wait = due_backoff;
	}
	else
		due_backoff = 0;
	if (wait < NEXT_DUE_FLOOR_MS)
		wait = NEXT_DUE_FLOOR_MS;
	if (now + wait < next_claim)
	{
		next_claim = now + wait;
		log_verbose("nothing to claim: next claim in %s (coord.next_due%s)",
					fmt_secs(wait, b, sizeof(b)), due_backoff ? ", due already: backing off" : "");
	}
}

/*
 * Claims while there are free slots: every queue in turn (a different one
 * first each round), each until it comes back empty, so that the session
 * holds the idle mark of every queue it could take work from.
 */
static void
claim_jobs(msec_t now)
{
	int			k;

	/* a group's claims wait for its join (db.c) */
	if (draining || db_state != DB_READY || !db_group_ready())
		return;
	if (njobs >= cfg->concurrency)
	{
		/* full: say we are not waiting, so that enqueues do not NOTIFY us */
		if (marked_idle)
		{
			marked_idle = false;
			for (k = 0; k < cfg->nqueues && db_state == DB_READY; k++)
				(void) claim_from(cfg->queues[k], 0);
		}
		return;
	}
	if (!need_claim && now < next_claim)
		return;
	need_claim = false;
	next_claim = now + cfg->poll;
	for (k = 0; k < cfg->nqueues && njobs < cfg->concurrency; k++)
	{
		const char *q = cfg->queues[(queue_rr + k) % cfg->nqueues];

		while (njobs < cfg->concurrency)
		{
			int			got = claim_from(q, cfg->concurrency - njobs);

			if (got < 0)
				return;
			if (got == 0)
				break;
		}
	}
	queue_rr = (queue_rr + 1) % cfg->nqueues;
	if (njobs < cfg->concurrency && db_state == DB_READY)
		sleep_until_due();
}

/* ---------- heartbeats, timeouts, kills ---------- */

/*
 * coord.heartbeat for every running child that is due: at a third of the
 * lease (lease mode), every `check` (session-bound: it notices a job that
 * was cancelled or timed out by the server).  NULL: the claim is gone.
 */
static void
heartbeats(msec_t now)
{
	Job		   *j;

	for (j = jobs; j && db_state == DB_READY; j = j->next)
	{
		char	   *valid_until;
		HeartbeatStatus hb;
		msec_t		sent = now_ms();

		if (j->exited || j->killed != KILL_NONE)
			continue;

		/*
		 * A job's channel first (a new job, or a new session): coord.cancel
		 * NOTIFYs it.  The heartbeat after the LISTEN then sees a cancel that
		 * committed before it; a later one is delivered.
		 */
		if (j->listened != db_session())
		{
			if (!proto_listen_job(j->id, true))
				continue;
			j->listened = db_session();
			if (j->killed != KILL_NONE)
				continue;		/* a cancel came with the LISTEN's answer */
		}
		else if (now < j->next_heartbeat)
			continue;
		hb = proto_heartbeat(j, &valid_until);
		if (hb == HEARTBEAT_FAILED || hb == HEARTBEAT_UNKNOWN)
		{
			/*
			 * Lost connection (handled) or an error: try again later.  An
			 * unknown outcome renews nothing by our clock: the lease runs out
			 * by it unless a later heartbeat succeeds.
			 */
			if (hb == HEARTBEAT_UNKNOWN && !j->session_bound)
				log_warning("job %lld: the outcome of its heartbeat is unknown (%s): the lease is not counted as renewed; trying again later",
							(long long) j->id, db_doubt());
			else if (hb == HEARTBEAT_FAILED && db_state == DB_READY)
				log_warning("job %lld: heartbeat failed (%s); trying again later",
							(long long) j->id, db_error());
			j->next_heartbeat = now + (j->session_bound ? cfg->check : j->lease / 3);
			continue;
		}
		if (hb == HEARTBEAT_LOST)
		{
			log_info("job %lld: the claim is no longer ours (cancelled, timed out or taken over): killing pid %d",
					 (long long) j->id, (int) j->pid);
			j->killed = KILL_LOST;
			child_signal(j, SIGKILL);
		}
		else
		{
			log_verbose("job %lld: heartbeat, claim valid until %s", (long long) j->id, valid_until);
			if (!j->session_bound)
				j->lease_valid_until = sent + j->lease;
		}
		free(valid_until);
		j->next_heartbeat = now + (j->session_bound ? cfg->check : j->lease / 3);
	}
}

/* Kills the process group: SIGTERM now, SIGKILL after kill_after. */
static void
terminate_child(Job *j, KillReason why)
{
	if (j->killed == KILL_NONE)
		j->killed = why;
	child_signal(j, SIGTERM);
	j->kill_at = now_ms() + cfg->kill_after;
}

static void
check_deadlines(msec_t now)
{
	Job		   *j;

	for (j = jobs; j; j = j->next)
	{
		if (j->exited)
			continue;
		if (j->deadline && now >= j->deadline && j->killed == KILL_NONE)
		{
			log_verbose("job %lld: timeout (%lld ms): SIGTERM to process group %d",
						(long long) j->id, (long long) j->timeout, (int) j->pid);
			terminate_child(j, KILL_TIMEOUT);
		}
		if (j->kill_at && now >= j->kill_at)
		{
			log_verbose("job %lld: still running %lld ms after SIGTERM: SIGKILL",
						(long long) j->id, (long long) cfg->kill_after);
			child_signal(j, SIGKILL);
			j->kill_at = 0;
		}

		/*
		 * Connected or not: once the lease may have run out (heartbeats
		 * failing, or none possible), anyone may claim the job again.
		 */
		if (!j->session_bound && j->killed != KILL_LOST && now >= j->lease_valid_until)
		{
			log_info("job %lld: lease ran out (by the agent's clock) %s: killing pid %d",
					 (long long) j->id,
					 db_state == DB_READY ? "while its heartbeats failed" : "while disconnected",
					 (int) j->pid);
			j->killed = KILL_LOST;
			child_signal(j, SIGKILL);
		}
	}
	if (draining && !drain_killed && now >= drain_deadline)
	{
		drain_killed = true;
		for (j = jobs; j; j = j->next)
			if (!j->exited)
			{
				log_info("job %lld: grace period over: stopping pid %d", (long long) j->id, (int) j->pid);
				terminate_child(j, KILL_SHUTDOWN);
			}
	}
}

static void
reap_children(void)
{
	for (;;)
	{
		int			status;
		pid_t		pid = waitpid(-1, &status, WNOHANG);
		Job		   *j;

		if (pid <= 0)
			break;
		for (j = jobs; j; j = j->next)
			if (j->pid == pid && !j->exited)
				break;
		if (j == NULL)
			continue;
		j->exited = true;
		j->status = status;
		j->ended = now_ms();
		child_drain_and_close(j);
		/* we killed it: leave nothing of its process group behind */
		if (j->killed != KILL_NONE)
			(void) kill(-pid, SIGKILL);
	}
}

/* ---------- SIGTERM, SIGHUP ---------- */

static void
begin_drain(void)
{
	char		b[32];

	if (!draining)
	{
		draining = true;
		drain_deadline = now_ms() + cfg->grace;
		log_info("SIGTERM: no more claims; waiting up to %s for %d running job(s)",
				 format_duration(cfg->grace, b, sizeof(b)), njobs);
	}
	else if (!drain_killed)
	{
		log_info("SIGTERM again: stopping the running jobs now");
		drain_deadline = now_ms();
	}
}

static bool
same_channels(const AgentConfig *a, const AgentConfig *b)
{
	int			i;

	if (a->nqueues != b->nqueues || strcmp(a->host, b->host) != 0)
		return false;
	for (i = 0; i < a->nqueues; i++)
		if (strcmp(a->queues[i], b->queues[i]) != 0)
			return false;
	return true;
}

/* SIGHUP: a new allow-list for the jobs claimed from now on. */
static void
reload(void)
{
	char	   *err = NULL;
	AgentConfig *n = config_load_checked(cfg_path, cli_over, &err);
	bool		relisten;
	int			ntasks = 0;
	TaskConfig *t;

	if (n == NULL)
	{
		log_error("SIGHUP: keeping the old configuration: %s", err);
		free(err);
		return;
	}
	free(mask_conninfo(n->dbname)); /* remembers its password for redact() */
	relisten = !same_channels(cfg, n);
	config_free(cfg);
	cfg = n;
	for (t = cfg->tasks; t; t = t->next)
		ntasks++;
	log_info("SIGHUP: reloaded %s: %d task(s), %d queue(s), concurrency %d",
			 cfg->path, ntasks, cfg->nqueues, cfg->concurrency);
	db_reload(cfg, relisten);
	if (relisten)
	{
		Job		   *j;

		/* UNLISTEN * dropped the jobs' channels too: LISTEN again */
		for (j = jobs; j; j = j->next)
			j->listened = 0;
	}
	need_claim = true;
}

/* ---------- the loop ---------- */

static msec_t
min_deadline(msec_t a, msec_t b)
{
	return (a == 0 || (b != 0 && b < a)) ? b : a;
}

/* The next moment the loop has something to do by the clock (0: none). */
static msec_t
next_wakeup(void)
{
	msec_t		t = 0;
	Job		   *j;

	if (db_state == DB_READY && db_group_ready() && !draining && njobs < cfg->concurrency)
		t = min_deadline(t, need_claim || next_claim == 0 ? now_ms() : next_claim);
	t = min_deadline(t, db_next_wakeup(!draining || jobs != NULL));
	if (draining && !drain_killed)
		t = min_deadline(t, drain_deadline);
	for (j = jobs; j; j = j->next)
	{
		if (j->exited)
		{
			if (!j->session_bound && db_state != DB_READY && !j->in_doubt)
				t = min_deadline(t, j->lease_valid_until);
			if (db_state == DB_READY)
				t = min_deadline(t, j->report_at ? j->report_at : 1);
			continue;
		}
		if (j->killed == KILL_NONE)
			t = min_deadline(t, j->deadline);
		t = min_deadline(t, j->kill_at);
		if (db_state == DB_READY && j->killed == KILL_NONE)
			t = min_deadline(t, j->listened != db_session() ? 1 : j->next_heartbeat);
		if (!j->session_bound && j->killed != KILL_LOST)
			t = min_deadline(t, j->lease_valid_until);
	}
	return t;
}

int
agent_run(const char *config_path, const CliOverrides *cli)
{
	char	   *err = NULL;
	struct pollfd *pfds = NULL;
	Job		  **pjobs = NULL;
	int			cap = 0;
	int			ntasks = 0;
	TaskConfig *t;
	char		b[32];

	cfg_path = config_path;
	cli_over = cli;
	cfg = config_load_checked(config_path, cli, &err);
	if (cfg == NULL)
	{
		fprintf(stderr, "coord-agent: %s\n", err);
		free(err);
		return 1;
	}
	free(mask_conninfo(cfg->dbname));	/* remembers its password for redact() */
	{
		char	   *w = config_password_warning(cfg);

		if (w)
			log_warning("%s", w);
		free(w);
	}
	for (t = cfg->tasks; t; t = t->next)
		ntasks++;
	if (ntasks == 0)
		log_warning("%s allows no task: every job claimed will fail", config_path);
	setup_signals();
	log_info("starting (version %s): config %s, %d task(s), host %s, %d queue(s), concurrency %d, %s%s",
			 COORD_AGENT_VERSION, config_path, ntasks, cfg->host, cfg->nqueues, cfg->concurrency,
			 cfg->lease > 0 ? "lease claims of " : "session-bound claims",
			 cfg->lease > 0 ? format_duration(cfg->lease, b, sizeof(b)) : "");
	db_init(cfg, &db_callbacks);

	for (;;)
	{
		msec_t		now,
					wake;
		int			nfds = 0,
					timeout,
					conn_idx = -1,
					i;

		read_signals();
		if (got_hup)
		{
			got_hup = false;
			reload();
		}
		if (got_term)
		{
			got_term = false;
			begin_drain();
		}
		reap_children();
		now = now_ms();
		check_deadlines(now);
		finish_exited(now);

		if (draining && jobs == NULL)
			break;
		/* draining, every child gone, and no way to report the rest: give up */
		if (draining && drain_killed && db_state != DB_READY)
		{
			Job		   *j;
			bool		running = false;

			for (j = jobs; j; j = j->next)
				running |= !j->exited;
			if (!running)
			{
				while (jobs)
				{
					if (jobs->in_doubt)
						log_end(jobs, "unknown", "(shutting down without a database connection: the outcome of its report is unknown)");
					else
						log_end(jobs, "unreported", "(shutting down without a database connection)");
					job_remove(jobs);
				}
				break;
			}
		}

		db_tick(now, !draining || jobs != NULL);
		if (db_state == DB_READY)
		{
			heartbeats(now);
			finish_exited(now_ms());	/* a heartbeat may have lost the
										 * connection */
			claim_jobs(now_ms());
		}

		/* what to wait for */
		if (cap < njobs * 3 + 2)
		{
			cap = njobs * 3 + 16;
			pfds = xrealloc(pfds, sizeof(struct pollfd) * cap);
			pjobs = xrealloc(pjobs, sizeof(Job *) * cap);
		}
		pfds[nfds].fd = sigpipe_fds[0];
		pfds[nfds].events = POLLIN;
		pjobs[nfds++] = NULL;
		if (db_poll_fd(&pfds[nfds]))
		{
			conn_idx = nfds;
			pjobs[nfds++] = NULL;
		}
		{
			Job		   *j;

			for (j = jobs; j; j = j->next)
			{
				if (j->fd_in >= 0)
				{
					pfds[nfds].fd = j->fd_in;
					pfds[nfds].events = POLLOUT;
					pjobs[nfds++] = j;
				}
				if (j->fd_out >= 0)
				{
					pfds[nfds].fd = j->fd_out;
					pfds[nfds].events = POLLIN;
					pjobs[nfds++] = j;
				}
				if (j->fd_err >= 0)
				{
					pfds[nfds].fd = j->fd_err;
					pfds[nfds].events = POLLIN;
					pjobs[nfds++] = j;
				}
			}
		}
		wake = next_wakeup();
		now = now_ms();
		timeout = 1000;			/* at least once a second, whatever happens */
		if (wake != 0)
			timeout = wake <= now ? 0 : (wake - now < 1000 ? (int) (wake - now) : 1000);

		if (poll(pfds, nfds, timeout) < 0 && errno != EINTR)
		{
			log_error("poll: %s", strerror(errno));
			sleep(1);
			continue;
		}

		for (i = 0; i < nfds; i++)
		{
			Job		   *j = pjobs[i];

			if (pfds[i].revents == 0 || j == NULL)
				continue;
			if (pfds[i].fd == j->fd_in)
				child_pump_stdin(j);
			else if (pfds[i].fd == j->fd_out || pfds[i].fd == j->fd_err)
				child_read(j, pfds[i].fd, 16);
		}
		if (conn_idx >= 0 && pfds[conn_idx].revents != 0)
			db_socket_ready();
	}

	db_close();
	log_info("stopped");
	free(pfds);
	free(pjobs);
	config_free(cfg);
	return 0;
}
