/*-------------------------------------------------------------------------
 * partitions.h
 *		Partition groups (partitions.c): what the queue's claim asks of them.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_PARTITIONS_H
#define PG_COORD_PARTITIONS_H

#include "postgres.h"

extern void CoordPartitionsInit(void);

/*
 * coord.owned's work for coord.claim(..., partition_group): takes what became
 * free, lets go of what moved away (unless a claim from it is unfinished),
 * and returns the segments this session owns (palloc'd in the caller's
 * context; *n of them, possibly none) and the group's segment count.  42704
 * when the group does not exist, 55000 when this session is no member.
 * *version changes whenever what this session owns may have changed.
 */
extern int32 *CoordPartitionOwnedForClaim(const char *group, int *n, int32 *segments,
										  uint64 *version);

/*
 * A job the claim took (its key, or NULL: its segment is of its id): a
 * claim from its segment, unfinished while the job keeps that token and
 * its claim lives.
 */
extern void CoordPartitionClaimed(const char *group, int32 segments, int64 id, int64 token, text *key);

#endif							/* PG_COORD_PARTITIONS_H */
