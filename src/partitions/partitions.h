/*-------------------------------------------------------------------------
 * partitions.h
 *		Partition groups (partitions.c): what the queue's claim asks of them.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_PARTITIONS_H
#define PG_COORD_PARTITIONS_H

#include "postgres.h"

#include "utils/timestamp.h"

extern void CoordPartitionsInit(void);

/*
 * A group's members times its segments stay at most this (54000 at a join
 * past it): a sync's assignment costs one hash per member and segment.
 */
#define PART_MAX_MEMBER_SEGMENTS	(1024 * 1024)

/*
 * How long coord.join waits for a member lock another session holds before
 * it says the name is taken (23505): long enough to outlast another
 * member's probe of that lock, which holds it for microseconds.
 */
#define PART_JOIN_PROBE_WAIT_US		(20 * 1000)

/*
 * coord.owned's work for coord.claim(..., partition_group): takes what became
 * free, lets go of what moved away (unless a claim from it is unfinished),
 * and returns the segments this session owns as a bit string of the group's
 * *segments bits (get_bit's order: bit n is bit n % 8 of byte n / 8;
 * palloc'd in the caller's context), *n of them set, possibly none.  42704
 * when the group does not exist, 55000 when this session is no member.
 * *version changes whenever what this session owns may have changed.
 */
extern bytea *CoordPartitionOwnedForClaim(const char *group, int *n, int32 *segments,
										  uint64 *version);

/*
 * A job the claim took (its key, or NULL: its segment is of its id): a
 * claim from its segment, unfinished while the job keeps that token and
 * its claim lives.
 */
extern void CoordPartitionClaimed(const char *group, int32 segments, int64 id, int64 token, text *key);

/*
 * The tick's share (docs/operations/sizing.md): marks groups found without a live
 * member empty as of at, and deletes those marked before horizon.
 */
extern int64 CoordPartitionsTick(TimestampTz at, TimestampTz horizon);

#endif							/* PG_COORD_PARTITIONS_H */
