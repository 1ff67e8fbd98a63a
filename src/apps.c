/*-------------------------------------------------------------------------
 * apps.c
 *		Apps: period-keyed dependency scheduling (DESIGN.md 3.5).
 *		(Placeholder until the apps issue lands.)
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common.h"

void
CoordAppRunFinished(const char *origin, int64 job_id, const char *state, Datum result, bool result_null)
{
}

int64
CoordAppsTick(TimestampTz now)
{
	return 0;
}
