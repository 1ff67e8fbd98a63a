/*-------------------------------------------------------------------------
 * requests.h
 *		The duplicate-work coordinator's interface to the job queue
 *		(requests.c): coord.mark_queued(key, queue, ...) marks a request
 *		queued and enqueues its job in one transaction.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_REQUESTS_H
#define PG_COORD_REQUESTS_H

#include "postgres.h"

extern void CoordRequestMarkQueued(const char *key);

#endif							/* PG_COORD_REQUESTS_H */
