/*-------------------------------------------------------------------------
 * workflows_batch.h
 *		Batches (workflows_batch.c; protocol in src/workflows/README.md):
 *		their module init, which registers the queue's jobs-ended and
 *		batch-join hooks (jobs.h), and the tick's purge of ended batches.
 *		The SQL functions are bound by name.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_WORKFLOWS_BATCH_H
#define PG_COORD_WORKFLOWS_BATCH_H

#include "utils/timestamp.h"

/* The tick deletes at most this many ended batches (each takes a lock). */
#define BATCHES_TICK_MAX	200

extern void CoordWorkflowsBatchInit(void);
extern int64 CoordBatchesTick(TimestampTz at);

#endif							/* PG_COORD_WORKFLOWS_BATCH_H */
