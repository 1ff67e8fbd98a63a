/*-------------------------------------------------------------------------
 * pg_coord.c
 *		Module initialisation: the magic block, and one init call per
 *		concern, each defining its own GUCs under the "coord." prefix.
 *
 * pg_coord works without shared_preload_libraries; every concern keeps its
 * state in tables and in PostgreSQL's lock manager, never in shared memory
 * of its own.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "common/common.h"
#include "apps/apps.h"
#include "jobs/jobs.h"
#include "partitions/partitions.h"
#include "schedules/schedules.h"
#include "workflows/workflows.h"
#include "semaphores.h"
#include "workflows/workflows_batch.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	CoordCommonInit();
	CoordLocksInit();
	CoordJobsInit();
	CoordWorkflowsInit();
	CoordSchedulesInit();
	CoordAppsInit();
	CoordPartitionsInit();
	CoordSemaphoresInit();
	CoordWorkflowsBatchInit();
	CoordTickInit();
	MarkGUCPrefixReserved("coord");
}
