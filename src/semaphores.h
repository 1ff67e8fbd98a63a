/*-------------------------------------------------------------------------
 * semaphores.h
 *		Counting semaphores (semaphores.c): module init, the tick's share.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_SEMAPHORES_H
#define PG_COORD_SEMAPHORES_H

extern void CoordSemaphoresInit(void);
extern int64 CoordSemaphoresTick(void);

#endif							/* PG_COORD_SEMAPHORES_H */
