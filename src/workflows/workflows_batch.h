/*-------------------------------------------------------------------------
 * workflows_batch.h
 *		Batches (workflows_batch.c; protocol in src/workflows/README.md):
 *		their module init, which registers the queue's jobs-ended and
 *		batch-join hooks (jobs.h).  The SQL functions are bound by name.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_WORKFLOWS_BATCH_H
#define PG_COORD_WORKFLOWS_BATCH_H

extern void CoordWorkflowsBatchInit(void);

#endif							/* PG_COORD_WORKFLOWS_BATCH_H */
