/*-------------------------------------------------------------------------
 * partitions_int.h
 *		What the partitions family's files share and nothing outside it
 *		includes: a backend's state of one group (PartState), the claims
 *		from segments it keeps, and the sync's entry points.
 *
 * partitions_sync.c defines all of it; partitions.c (the SQL entry points)
 * uses it.  The memory: parts_cxt holds every PartState and is reset at
 * any (sub)transaction abort (Forget); claims live in claims_cxt and
 * survive aborts (a claim that rolled back is finished anyway).
 * members_gen grows at every relcache invalidation of
 * coord.partition_members (PartsMembersInval); owned_version whenever what this
 * session owns may have changed.
 *-------------------------------------------------------------------------
 */
#ifndef PARTITIONS_INT_H
#define PARTITIONS_INT_H

#include "storage/lock.h"
#include "utils/array.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "partitions/partitions_assign.h"

#pragma GCC visibility push(hidden)

/* a live member, as read at the last sync */
typedef struct PartLive
{
	char	   *name;
	float4		weight;
	int32		pid;
	TimestampTz start;
} PartLive;

/* what this backend knows of one group */
typedef struct PartState
{
	char		group[COORD_NAME_MAX + 1];	/* hash key: must be first */
	bool		exists;			/* the group's row was there */
	TimestampTz created_at;		/* tells a group dropped and made again */
	uint64		group_gen;		/* members_gen when the row was read */
	int			segments;
	PartAssignor assignor;
	bool		member;			/* this session is a member */
	char		me[COORD_NAME_MAX + 1];
	int			nlive;			/* -1: target not computed */
	PartLive   *live;			/* sorted by name */
	int32	   *target;			/* member index per segment */
	int			my_index;
	int64	   *token;			/* per segment: ours if > 0 */
	int			nowned;
	ArrayType  *owned;			/* coord.owned's answer, or NULL: to build */
	uint64		owned_at;		/* owned_version it was built at */
	bytea	   *owned_bits;		/* the same, a bit per segment (claims) */
	uint64		owned_bits_at;
	char		hk[2 * COORD_NAME_MAX + 8]; /* the member lock's hold key, or
											 * "" */
	/* member rows read at the last sync that are not live (pid, start) */
	int			ndead;
	PartLive   *dead;

	/*
	 * Settled: at the last sync this session owned exactly its target
	 * segments, read in a transaction of its own snapshots (READ COMMITTED),
	 * at invalidation generation gen.  While that holds, no join or leave has
	 * committed since (members_gen) and every other live member still holds
	 * its member lock, a sync has nothing to do (the fast path).
	 */
	bool		settled;
	uint64		gen;
} PartState;

/* A claim from a segment, unfinished while its job keeps its token. */
typedef struct PartClaim
{
	char		group[COORD_NAME_MAX + 1];
	int64		id;
	int64		token;
	int32		segment;
} PartClaim;

extern MemoryContext parts_cxt;
extern HTAB *parts;
extern uint64 parts_members_gen;
extern uint64 parts_owned_version;
extern MemoryContext parts_claims_cxt;
extern PartClaim *parts_claims;
extern int	parts_nclaims;
extern int	parts_maxclaims;

extern const char *const PartsAssignorNames[3];

extern int	PartsAssignorOf(const char *name);
extern PartState *PartsGetState(const char *group);
extern void PartsLeaveGroup(PartState *st);
extern bool PartsMemberAlive(PartState *st, const char *name, int32 pid, TimestampTz start);
extern char *PartsMemberLock(const char *group, const char *member, LOCKTAG *tag);
extern bool PartsMemberLockHeld(PartState *st);
extern ArrayType *PartsOwnedArray(PartState *st);
extern void PartsReadLive(PartState *st);
extern void PartsReadMine(PartState *st);
extern void PartsSync(PartState *st);
extern bool PartsSyncFast(PartState *st);
extern void PartsUnknownGroup(const char *group);
extern void PartsForget(void);
extern void PartsForgetMembership(PartState *st);
extern void PartsMembersInval(Datum arg, Oid relid);

#pragma GCC visibility pop

#endif							/* PARTITIONS_INT_H */
