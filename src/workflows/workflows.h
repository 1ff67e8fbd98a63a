/*-------------------------------------------------------------------------
 * workflows.h
 *		Workflows (src/workflows/README.md): job dependencies and flows
 *		(workflows.c: the module init registers the queue's wait hooks),
 *		durable steps (workflows_steps.c), and the tick's share of them.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_WORKFLOWS_H
#define PG_COORD_WORKFLOWS_H

#include "postgres.h"

#include "utils/timestamp.h"

/* A step's name has 1 to STEP_NAME_MAX bytes (22023 else). */
#define STEP_NAME_MAX			256
/* A job records at most this many steps (54000 beyond). */
#define STEPS_PER_JOB_MAX		10000
/* The tick deletes at most this many steps of vanished jobs. */
#define STEPS_TICK_MAX			10000

extern int64 CoordStepsTick(TimestampTz at);

extern void CoordWorkflowsInit(void);

#endif							/* PG_COORD_WORKFLOWS_H */
