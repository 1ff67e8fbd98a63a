/*-------------------------------------------------------------------------
 * partitions_assign.h
 *		The target owner of every segment of a partition group, as a pure
 *		function of the live members and their weights.
 *
 * Plain C99 with no PostgreSQL headers and no allocation (as cron.h and
 * apps_periods.h), so that the extension and the standalone harness in
 * test/parts link the same code.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_PARTITIONS_ASSIGN_H
#define PG_COORD_PARTITIONS_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the bounds coord.join enforces (54000 above them, 22023 for segments) */
#define PART_MAX_MEMBERS	1000
#define PART_MAX_SEGMENTS	65536

typedef enum PartAssignor
{
	PART_STICKY = 0,			/* weighted rendezvous hashing */
	PART_RANGE					/* contiguous slices in member order */
} PartAssignor;

typedef struct PartMember
{
	const char *name;			/* NUL-terminated */
	size_t		len;			/* strlen(name) */
	double		weight;			/* > 0 and finite */
} PartMember;

/*
 * owner[s] for s in 0 .. segments-1 receives the index (into members) of
 * the segment's target owner.  The members must be sorted by name (byte
 * order, strcmp) and distinct; range slices follow that order.  Returns
 * false (owner untouched) on input outside the bounds above.
 */
extern bool part_assign(const PartMember *members, int nmembers, int segments,
						PartAssignor assignor, int32_t * owner);

/* the stable 64-bit hash of (member name, segment) that sticky ranks by */
extern uint64_t part_hash(const char *name, size_t len, int segment);

#endif							/* PG_COORD_PARTITIONS_ASSIGN_H */
