/*-------------------------------------------------------------------------
 * partitions_assign.h
 *		The target owner of every segment of a partition group, as a pure
 *		function of the live members and their weights.
 *
 * Plain C99 with no PostgreSQL headers (as cron.h and apps_periods.h), so
 * that the extension and the standalone harness in test/parts (built with
 * -DCOORD_ASSIGN_STANDALONE: malloc for palloc, no interrupts, no ereport)
 * link the same code.
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

/*
 * The most members x segments part_assign computes (54000 in the backend
 * above it; a caller checks it before it lets a group grow): today the
 * whole of the bounds above, about 0.2 s of work.
 */
#define COORD_ASSIGN_MAX_WORK	65536000

typedef enum PartAssignor
{
	PART_STICKY = 0,			/* weighted rendezvous within quotas */
	PART_RANGE,					/* contiguous slices in member order */
	PART_RENDEZVOUS				/* plain weighted rendezvous: no quotas */
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
 * order, strcmp) and distinct; range slices follow that order.  Every
 * member gets floor or ceil of segments * weight / total weight (see
 * part_quotas).  Returns false (owner untouched) on input outside the
 * bounds above; in the backend, members x segments above
 * COORD_ASSIGN_MAX_WORK is an ERROR (54000) instead.  Checks for
 * interrupts in the backend.
 */
extern bool part_assign(const PartMember *members, int nmembers, int segments,
						PartAssignor assignor, int32_t *owner);

/*
 * quota[i] for valid input: the count part_assign gives member i, the floor
 * or ceiling of segments * weight_i / total weight, summing to segments
 * (largest remainder; equal remainders favour the first name).
 */
extern void part_quotas(const PartMember *members, int nmembers, int segments,
						int *quota);

/* the stable 64-bit hash of (member name, segment) that sticky ranks by */
extern uint64_t part_hash(const char *name, size_t len, int segment);

#endif							/* PG_COORD_PARTITIONS_ASSIGN_H */
