/*-------------------------------------------------------------------------
 * metrics.h
 *		coord.metrics' counters: coord.tick's share (metrics.c).
 *-------------------------------------------------------------------------
 */
#ifndef COORD_METRICS_H
#define COORD_METRICS_H

extern void CoordMetricsTick(void);

#endif
