/*-------------------------------------------------------------------------
 * semaphores.h
 *		Counting semaphores (semaphores.c): module init.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_SEMAPHORES_H
#define PG_COORD_SEMAPHORES_H

extern void CoordSemaphoresInit(void);

#endif							/* PG_COORD_SEMAPHORES_H */
