/*-------------------------------------------------------------------------
 * workflows.h
 *		Job dependencies' interface (workflows.c): the module init, which
 *		registers the queue's wait hooks.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_WORKFLOWS_H
#define PG_COORD_WORKFLOWS_H

#include "postgres.h"

extern void CoordWorkflowsInit(void);

#endif							/* PG_COORD_WORKFLOWS_H */
