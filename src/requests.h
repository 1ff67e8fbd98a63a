/*-------------------------------------------------------------------------
 * requests.h
 *		The duplicate-work coordinator's interface to the job queue
 *		(requests.c): coord.mark_queued(key, queue, ...) marks a request
 *		queued and enqueues its job in one transaction, and when that job
 *		finishes the queue settles the request.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_REQUESTS_H
#define PG_COORD_REQUESTS_H

#include "postgres.h"

#include "utils/timestamp.h"

extern void CoordRequestMarkQueued(const char *key);

/* inside SPI, as the owner, in the transaction that finished the job */
extern void CoordRequestJobFinished(const char *request_key, bool done);

/* the tick's purge of requested keys whose owner is gone (docs/operations/sizing.md) */
extern int64 CoordRequestsTick(TimestampTz horizon);

#endif							/* PG_COORD_REQUESTS_H */
