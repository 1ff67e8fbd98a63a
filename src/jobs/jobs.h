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

/* For the concerns that make jobs: inside SPI, as the owner */
extern int64 CoordEnqueueOrigin(const char *queue, Jsonb *payload, TimestampTz run_at,
								const char *host, int32 max_attempts, const char *origin,
								const char *key);
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

/* The queue's share of coord.tick (tick.c); inside SPI, as the owner */
extern int64 CoordJobsTick(TimestampTz now);

/* the tick's purge of idle flow-control rows (jobs_limits_sql.c; docs/operations/sizing.md) */
extern int64 CoordLimitsTick(TimestampTz horizon);

#endif							/* PG_COORD_JOBS_H */
