/*-------------------------------------------------------------------------
 * jobs.h
 *		The job queue's interface to the other concerns (jobs.c and its
 *		family; the SQL functions are bound by name).
 *
 * Concerns that make jobs (schedules, apps) give them an origin, which
 * starts with a prefix of their own, and register a finish hook for that
 * prefix: the queue calls it when such a job finishes.  The queue itself
 * knows no concern by name.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_JOBS_H
#define PG_COORD_JOBS_H

#include "postgres.h"

#include "executor/spi.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/*
 * Jobs that schedules and app runs create carry an origin: "s:<schedule>" or
 * "a:<app>:<period>".  At most one live job has a given origin.  The
 * prefixes are listed here, in one place, so that no two concerns share one.
 */
#define COORD_ORIGIN_SCHEDULE	"s:"
#define COORD_ORIGIN_APP		"a:"

extern void CoordJobsInit(void);

/*
 * A finish hook: called in the transaction that finished a job (done, dead
 * or cancelled) whose origin starts with the prefix it was registered for,
 * inside SPI, as the owner, after the job's history row is in.  It gets the
 * whole origin; result is the job's result (result_null unless it is done
 * with one).  A hook that must not fail the completion isolates its own
 * work (CoordIsolated).  Registered from a module init (_PG_init); prefix
 * is kept, not copied (a literal).
 */
typedef void (*CoordJobFinishedHook) (const char *origin, int64 job_id, const char *state,
									  TimestampTz finished_at, Datum result, bool result_null);
extern void CoordRegisterJobOrigin(const char *prefix, CoordJobFinishedHook hook);

/*
 * Hooks for concerns that tag jobs rather than make them (workflows: a
 * job's batch).  A jobs-ended hook is called for every statement that
 * finished jobs (done, dead or cancelled), in that transaction, inside SPI,
 * as the owner, after their history rows are in: rows are the jobs as
 * coord.job held them (n of them, all in state).  It runs on the hot path
 * of every completion, so it returns at once for rows it has nothing to do
 * with.  A batch-join hook is called by the enqueue functions after they
 * added n > 0 jobs into a batch (coord.enqueue's batch), in that statement,
 * inside SPI, as the owner; caller is the role that called the enqueue.
 * It raises the error that refuses the join (the enqueue then rolls back).
 * coord.retry calls it too (retried: a dead job of the batch is live again,
 * which joins even a sealed batch).
 * One of each at most; registered from a module init.
 */
typedef void (*CoordJobsEndedHook) (HeapTuple *rows, TupleDesc desc, uint64 n, const char *state);
typedef void (*CoordBatchJoinHook) (int64 batch, int64 n, Oid caller, bool retried);
extern void CoordRegisterJobsEnded(CoordJobsEndedHook hook);
extern void CoordRegisterBatchJoin(CoordBatchJoinHook hook);
extern void CoordBatchJoin(int64 batch, int64 n, Oid caller, bool retried);

/* For the concerns that make jobs: inside SPI, as the owner */
extern int64 CoordEnqueueOrigin(const char *queue, Jsonb *payload, TimestampTz run_at,
								const char *host, int32 max_attempts, const char *origin,
								const char *key, Oid enqueued_by);
extern int64 CoordOriginJob(const char *origin);
extern int64 CoordRevokeJob(int64 id, int64 token, const char *error);
extern uint64 CoordDeleteUnclaimed(SPIPlanPtr *slot, const char *which, int nargs,
								   Oid *argtypes, Datum *args);

/*
 * For concerns that act for the holder of a claim (durable steps): the
 * attempt of the caller's live claim of job id under token, else 0; with
 * lock, that claim stays live until the transaction ends (jobs_common.c).
 * Inside SPI, as the owner; caller is the calling user.
 */
extern int32 CoordJobClaimAttempt(int64 id, int64 token, Oid caller, bool lock);

/*
 * Jobs that wait for other jobs (src/workflows/, docs/workflows.md).  The
 * queue keeps a waiting job in coord.job_wait, out of every index a claim
 * walks, and knows nothing of why it waits: an enqueue with after asks the
 * registered wait hooks.  resolve(parents, n, &failed), inside SPI as the
 * owner, locks the parents that have not ended (none can then end unseen
 * before this transaction commits), marks them (deps bit 1) and answers
 * how many have not ended; failed when one ended dead or cancelled.  The
 * queue inserts the job into coord.job (none pending), or coord.job_wait,
 * with deps bit 2, and calls link(parents, n, ids, nids); a job to be
 * cancelled at once (failed, on_parent_failure 'cancel') goes in waiting and
 * is then cancelled with CoordCancelWaiting.  finished(id, state, deps) is
 * called for every job with deps set that finishes (done, dead, cancelled),
 * after its history row is in, and finished_end once after the last job
 * of the same statement (so that the hook handles them all at once),
 * inside SPI as the owner.
 */
#define COORD_DEPS_PARENT	1	/* jobs wait on it */
#define COORD_DEPS_CHILD	2	/* it was enqueued with after */

typedef struct CoordJobWaitHooks
{
	int32		(*resolve) (const int64 *parents, int n, bool *failed);
	void		(*link) (const int64 *parents, int n, const int64 *ids, int nids);
	void		(*finished) (int64 id, const char *state, int16 deps);
	void		(*finished_end) (void);
} CoordJobWaitHooks;
extern void CoordRegisterJobWait(const CoordJobWaitHooks *hooks);

/* For the wait hooks: inside SPI, as the owner; ids is a bigint[] */
extern uint64 CoordReleaseWaiting(Datum ids);
extern uint64 CoordCancelWaiting(Datum ids, const char *error);

/* The queue's share of coord.tick (tick.c); inside SPI, as the owner */
extern int64 CoordJobsTick(TimestampTz now);

/* the tick's purge of idle flow-control rows (jobs_limits_sql.c; docs/operations/sizing.md) */
extern int64 CoordLimitsTick(TimestampTz horizon);

#endif							/* PG_COORD_JOBS_H */
