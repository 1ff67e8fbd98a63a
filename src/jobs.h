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

/* For the concerns that make jobs: inside SPI, as the owner */
extern int64 CoordEnqueueOrigin(const char *queue, Jsonb *payload, TimestampTz run_at,
								const char *host, int32 max_attempts, const char *origin,
								const char *key);
extern int64 CoordOriginJob(const char *origin);
extern int64 CoordRevokeJob(int64 id, int64 token, const char *error);

/* The queue's share of coord.tick (tick.c); inside SPI, as the owner */
extern int64 CoordJobsTick(TimestampTz now);

#endif							/* PG_COORD_JOBS_H */
