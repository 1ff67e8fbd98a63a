/*-------------------------------------------------------------------------
 * apps.h
 *		Apps' interface: module init (apps.c), which registers their
 *		runs' finish hook with the queue, and their share of coord.tick
 *		(apps_tick.c).
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_APPS_H
#define PG_COORD_APPS_H

#include "postgres.h"

#include "utils/timestamp.h"

extern void CoordAppsInit(void);

/* inside SPI, as the owner */
extern int64 CoordAppsTick(TimestampTz now);

/* the tick's purge of signals no app depends on (docs/operations/sizing.md) */
extern int64 CoordSignalsTick(TimestampTz at);

#endif							/* PG_COORD_APPS_H */
