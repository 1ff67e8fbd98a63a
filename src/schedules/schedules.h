/*-------------------------------------------------------------------------
 * schedules.h
 *		Recurring events' interface (schedules.c): module init, which
 *		registers their jobs' finish hook with the queue, and their share of
 *		coord.tick.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_SCHEDULES_H
#define PG_COORD_SCHEDULES_H

#include "postgres.h"

#include "utils/timestamp.h"

extern void CoordSchedulesInit(void);

/* inside SPI, as the owner */
extern int64 CoordSchedulesTick(TimestampTz now);

#endif							/* PG_COORD_SCHEDULES_H */
