/*-------------------------------------------------------------------------
 * partitions.c
 *		Partition groups (docs/partition-groups.md): coord.join,
 *		coord.leave, coord.owned, coord.segment_of, coord.segment_token, and
 *		what coord.claim(..., partition_group) asks of them.
 *
 * The family's top file: its SQL entry points and init.  By section: the
 * transaction callbacks and the members' statement trigger; the
 * SQL-callable functions (coord.join, coord.leave, coord.owned,
 * coord.segment_of, coord.segment_token, coord.member_alive,
 * coord.drop_group) and what the claim asks (partitions.h); retention,
 * the tick's share.  A backend's view of its groups and the sync that
 * keeps it true are partitions_sync.c's (partitions_int.h); who owns which
 * segment is partitions_assign.c's pure function.
 *
 * The family's protocol -- membership, a lost member lock, ownership by
 * rows, handoff, cost, retention, the lock order and what survives an
 * abort -- is src/partitions/README.md.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "partitions/partitions.h"
#include "partitions/partitions_assign.h"
#include "partitions/partitions_int.h"

PG_FUNCTION_INFO_V1(coord_join);
PG_FUNCTION_INFO_V1(coord_leave);
PG_FUNCTION_INFO_V1(coord_owned);
PG_FUNCTION_INFO_V1(coord_segment_of);
PG_FUNCTION_INFO_V1(coord_segment_of_int8);
PG_FUNCTION_INFO_V1(coord_segment_of_uuid);
PG_FUNCTION_INFO_V1(coord_segment_token);
PG_FUNCTION_INFO_V1(coord_member_alive);
PG_FUNCTION_INFO_V1(coord_partition_members_changed);
PG_FUNCTION_INFO_V1(coord_drop_group);

/* a member's meta: a few labels, not a payload */
#define PART_META_MAX	8192
#define PART_DEFAULT_SEGMENTS	1024
/* a group a worker's first join makes: 4096 segment rows at most */
#define PART_WORKER_MAX_SEGMENTS	4096
/* segment rows one tick deletes with the groups it drops (one group at least) */
#define PART_TICK_SEGMENTS	65536

static int32 SegmentOf(const char *key, int len, int segments);

static SPIPlanPtr plan_new_group = NULL;
static SPIPlanPtr plan_new_segments = NULL;
static SPIPlanPtr plan_lock_group = NULL;
static SPIPlanPtr plan_release_stale = NULL;
static SPIPlanPtr plan_upsert = NULL;

/* ---------- transactions and the members' trigger ---------- */

/*
 * The statement trigger of coord.partition_members (every join, leave,
 * removal of a dead member's row, and any change by hand, cascades of a
 * group's deletion too): at its commit, every backend reads the members
 * again before it trusts its settled state.
 */
Datum
coord_partition_members_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	/* as PostgreSQL's own trigger functions answer a direct call */
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" was not called by trigger manager",
						"coord.partition_members_changed")));
	CacheInvalidateRelcache(trigdata->tg_relation);
	PG_RETURN_POINTER(NULL);
}

static void
PartsXact(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		PartsForget();
}

static void
PartsSubXact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		PartsForget();
}

void
CoordPartitionsInit(void)
{
	RegisterXactCallback(PartsXact, NULL);
	RegisterSubXactCallback(PartsSubXact, NULL);
	CacheRegisterRelcacheCallback(PartsMembersInval, (Datum) 0);
}

/* ---------- SQL-callable functions ---------- */

/*
 * coord.join, in steps: read and check its arguments (JoinArgsRead), find
 * or make the group and check the call against it (JoinGroup), take the
 * member's lock (JoinMemberLock), serialise with the group's other new
 * members (JoinSerialise), write the member's row (JoinUpsert), let go of
 * what an earlier membership of this session left (JoinLetGoStale), then
 * sync.
 */

/* coord.join's arguments, checked */
typedef struct JoinArgs
{
	char	   *group;
	char	   *member;
	float4		weight;
	Jsonb	   *meta;
	bool		has_segments;
	int32		segments;
	char	   *assignor;
	bool		big_ok;			/* may make a group over
								 * PART_WORKER_MAX_SEGMENTS */
} JoinArgs;

static void
JoinArgsRead(FunctionCallInfo fcinfo, JoinArgs *a)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	char	   *member = CoordNameArg(fcinfo, 1, "member", false);
	float8		weight8;
	float4		weight;
	Jsonb	   *meta;
	bool		has_segments = !PG_ARGISNULL(4);
	int32		segments = has_segments ? PG_GETARG_INT32(4) : PART_DEFAULT_SEGMENTS;
	char	   *assignor = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	bool		big_ok;

	CoordRequireArg(fcinfo, 2, "weight");
	CoordRequireArg(fcinfo, 3, "meta");
	weight8 = PG_GETARG_FLOAT8(2);
	meta = PG_GETARG_JSONB_P(3);
	if (!(weight8 > 0) || isinf(weight8))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weight must be positive and finite"),
				 errdetail("weight is %g.", weight8)));

	/*
	 * The argument is double precision so that drivers' floats and integers
	 * resolve without a cast; a member's weight is stored as real.
	 */
	weight = (float4) weight8;
	if (!(weight > 0) || isinf(weight))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("weight is out of range for type real"),
				 errdetail("weight is %g; a member's weight is stored as real.", weight8)));
	CoordCheckSize("member's meta", VARSIZE(meta), PART_META_MAX);
	if (segments < 1 || segments > PART_MAX_SEGMENTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("segments must be between 1 and %d", PART_MAX_SEGMENTS),
				 errdetail("segments is %d.", segments)));
	if (assignor != NULL && PartsAssignorOf(assignor) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid assignor \"%s\"", assignor),
				 errhint("The assignors are sticky, range and rendezvous.")));

	CoordNotInParallel(fcinfo);
	/* asked before the owner switch, of the caller */
	big_ok = segments <= PART_WORKER_MAX_SEGMENTS || CoordIsAdmin(GetUserId());
	a->group = group;
	a->member = member;
	a->weight = weight;
	a->meta = meta;
	a->has_segments = has_segments;
	a->segments = segments;
	a->assignor = assignor;
	a->big_ok = big_ok;
}

/* The group, made at its first join; the call checked against it. */
static PartState *
JoinGroup(JoinArgs *a)
{
	char	   *group = a->group;
	char	   *member = a->member;
	bool		has_segments = a->has_segments;
	int32		segments = a->segments;
	char	   *assignor = a->assignor;
	bool		big_ok = a->big_ok;
	PartState  *st;

	st = PartsGetState(group);
	if (st == NULL)
	{
		Oid			types[3] = {TEXTOID, INT4OID, TEXTOID};
		Datum		args[3];

		if (!big_ok)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a new partition group has at most %d segments", PART_WORKER_MAX_SEGMENTS),
					 errdetail("segments is %d; the first join writes a row per segment.", segments),
					 errhint("A member of coord_admin may make a group of up to %d segments; "
							 "later joins by others then find it.", PART_MAX_SEGMENTS)));
		args[0] = CStringGetTextDatum(group);
		args[1] = Int32GetDatum(segments);
		args[2] = CStringGetTextDatum(assignor ? assignor : "sticky");
		CoordExec(&plan_new_group,
				  "INSERT INTO coord.partition_groups (partition_group, segments, assignor) "
				  "VALUES ($1, $2, $3) ON CONFLICT (partition_group) DO NOTHING",
				  3, types, args, NULL, SPI_OK_INSERT, "creating a partition group");
		if (SPI_processed == 1)
		{
			/* every segment's row, ownerless: takers then only update rows */
			CoordExec(&plan_new_segments,
					  "INSERT INTO coord.partition_segments "
					  "(partition_group, segment, owner_pid, owner_start, token, taken_at) "
					  "SELECT $1, g.g, NULL, NULL, 0, pg_catalog.now() "
					  "FROM pg_catalog.generate_series(0, $2 OPERATOR(pg_catalog.-) 1) AS g(g) "
					  "ON CONFLICT (partition_group, segment) DO NOTHING",
					  2, types, args, NULL,
					  SPI_OK_INSERT, "creating a partition group's segments");
		}
		st = PartsGetState(group);
		if (st == NULL)
		{
			/*
			 * Another session's first join created the group after this
			 * transaction's snapshot was taken (REPEATABLE READ or
			 * SERIALIZABLE): its row is not visible here.
			 */
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("partition group \"%s\" was created by a concurrent transaction", group),
					 errdetail("This transaction's snapshot predates the group's creation."),
					 errhint("Retry the transaction, or join in a READ COMMITTED transaction.")));
		}
	}
	if (has_segments && segments != st->segments)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition group \"%s\" has %d segments, not %d", group, st->segments, segments),
				 errdetail("A group's segments are fixed at its first join."),
				 errhint("Omit segments, or pass NULL.")));
	if (assignor != NULL && PartsAssignorOf(assignor) != (int) st->assignor)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition group \"%s\" uses the %s assignor, not %s", group,
						PartsAssignorNames[st->assignor], assignor),
				 errdetail("A group's assignor is fixed at its first join."),
				 errhint("Omit assignor, or pass NULL.")));
	if (st->member && strcmp(st->me, member) != 0 && PartsMemberLockHeld(st))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("this session is already member \"%s\" of partition group \"%s\"", st->me, group),
				 errhint("Call coord.leave first to join under another name.")));

	return st;
}

/* The member name is another live session's: its lock, or its row. */
static void
MemberTaken(const char *group, const char *member)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("member \"%s\" of partition group \"%s\" is another live session's", member, group),
			 errdetail("A member name belongs to one session at a time, until that session leaves or ends.")));
}

/* This session's lock of the member name; true for a fresh membership. */
static bool
JoinMemberLock(JoinArgs *a, PartState *st)
{
	char	   *group = a->group;
	char	   *member = a->member;
	LOCKTAG		tag;
	LOCKMODE	mode = ExclusiveLock;
	char	   *hk;
	CoordHoldStatus held;
	bool		fresh;

	/*
	 * One session per member name: its lock.  Other members probe it for a
	 * moment now and then (PartsMemberAlive), so a short wait tells such a
	 * probe from a live holder.
	 */
	hk = PartsMemberLock(group, member, &tag);
	held = CoordHoldState(hk);
	fresh = (held == HOLD_NONE);
	if (held == HOLD_NONE && st->member)
	{
		/*
		 * Our member lock went behind our back and no sync has noticed yet:
		 * the others may have taken our segments.  Join afresh.
		 */
		PartsForgetMembership(st);
	}
	if (held == HOLD_RELEASING)
		CoordHoldKeep(hk);
	else if (held == HOLD_NONE)
	{
		if (!CoordAcquire(&tag, &mode, 1, true, 0, false) &&
			!CoordAcquire(&tag, &mode, 1, true, PART_JOIN_PROBE_WAIT_US, false))
			MemberTaken(group, member);
		CoordHoldTaken(hk, &tag);
	}

	return fresh;
}

/*
 * A new member of the group: waits for the group's other joiners, then
 * checks the member caps.
 */
static void
JoinSerialise(JoinArgs *a, PartState *st)
{
	char	   *group = a->group;
	Oid			types[1] = {TEXTOID};
	Datum		args[1];

	/*
	 * New members of a group join one at a time: an update of the group's
	 * row, which the next joiner waits for (READ COMMITTED: it then reads the
	 * members afresh) or fails to serialize with (40001), so the member caps
	 * below are exact.
	 */
	args[0] = CStringGetTextDatum(group);
	CoordExec(&plan_lock_group,
			  "UPDATE coord.partition_groups SET empty_since = NULL "
			  "WHERE partition_group OPERATOR(pg_catalog.=) $1",
			  1, types, args, NULL, SPI_OK_UPDATE, "serialising joins of a partition group");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("partition group \"%s\" was dropped by a concurrent transaction", group),
				 errdetail("The group had no live member, and coord.tick or coord.drop_group deleted it."),
				 errhint("Join again: the group is made afresh.")));
	PartsReadLive(st);
	if (st->nlive >= PART_MAX_MEMBERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("partition group \"%s\" has %d live members already", group, st->nlive),
				 errdetail("A group has at most %d members.", PART_MAX_MEMBERS)));
	if ((int64) (st->nlive + 1) * st->segments > PART_MAX_MEMBER_SEGMENTS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("partition group \"%s\" cannot have more than %d members", group,
						(int) (PART_MAX_MEMBER_SEGMENTS / st->segments)),
				 errdetail("A group's members times its segments (%d) stay at most %d.",
						   st->segments, PART_MAX_MEMBER_SEGMENTS)));
}

/* The member's row, this session's. */
static void
JoinUpsert(JoinArgs *a, bool fresh)
{
	char	   *group = a->group;
	char	   *member = a->member;
	float4		weight = a->weight;
	Jsonb	   *meta = a->meta;
	Oid			types[7] = {TEXTOID, TEXTOID, FLOAT4OID, JSONBOID, INT4OID, TIMESTAMPTZOID, BOOLOID};
	Datum		args[7];

	args[0] = CStringGetTextDatum(group);
	args[1] = CStringGetTextDatum(member);
	args[2] = Float4GetDatum(weight);
	args[3] = JsonbPGetDatum(meta);
	args[4] = Int32GetDatum(MyProcPid);
	args[5] = TimestampTzGetDatum(MyStartTimestamp);
	args[6] = BoolGetDatum(fresh);

	/*
	 * This session holds the name's lock now, so whoever the row names is no
	 * live member: the row is ours.  A fresh membership starts a new
	 * joined_at, on the clock: after an abort, PartsReadMine adopts only
	 * segments taken since (never one an earlier, lost membership of this
	 * session left, which a taker may be taking).
	 */
	CoordExec(&plan_upsert,
			  "INSERT INTO coord.partition_members AS m "
			  "(partition_group, member, weight, meta, pid, backend_start, joined_at) "
			  "VALUES ($1, $2, $3, $4, $5, $6, pg_catalog.clock_timestamp()) "
			  "ON CONFLICT (partition_group, member) DO UPDATE "
			  "SET weight = excluded.weight, meta = excluded.meta, pid = excluded.pid, "
			  "backend_start = excluded.backend_start, "
			  "joined_at = CASE WHEN NOT $7 AND m.pid OPERATOR(pg_catalog.=) excluded.pid "
			  "AND m.backend_start OPERATOR(pg_catalog.=) excluded.backend_start "
			  "THEN m.joined_at ELSE excluded.joined_at END",
			  7, types, args, NULL, SPI_OK_INSERT, "joining a partition group");
	if (SPI_processed != 1)
		MemberTaken(group, member);
}

/* A fresh membership: rows an earlier one of this session left, let go. */
static void
JoinLetGoStale(JoinArgs *a, PartState *st)
{
	char	   *group = a->group;
	Oid			types[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
	Datum		args[3];

	/*
	 * A new membership owns nothing yet: rows an earlier, lost one of this
	 * session left naming it are let go (the others count this session alive
	 * again now, and would never take them).  Rows a taker has locked are its
	 * own to take.
	 */
	args[0] = CStringGetTextDatum(group);
	args[1] = Int32GetDatum(MyProcPid);
	args[2] = TimestampTzGetDatum(MyStartTimestamp);
	CoordExec(&plan_release_stale,
			  "UPDATE coord.partition_segments SET owner_pid = NULL, owner_start = NULL "
			  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
			  "AND segment OPERATOR(pg_catalog.=) ANY (ARRAY("
			  "SELECT s.segment FROM coord.partition_segments AS s "
			  "WHERE s.partition_group OPERATOR(pg_catalog.=) $1 "
			  "AND s.owner_pid OPERATOR(pg_catalog.=) $2 "
			  "AND s.owner_start OPERATOR(pg_catalog.=) $3 "
			  "FOR UPDATE SKIP LOCKED)) "
			  "AND owner_pid OPERATOR(pg_catalog.=) $2 "
			  "AND owner_start OPERATOR(pg_catalog.=) $3",
			  3, types, args, NULL,
			  SPI_OK_UPDATE, "letting go of an earlier membership's segments");
	memset(st->token, 0, sizeof(int64) * st->segments);
	st->nowned = 0;
	parts_owned_version++;
}

/*
 * coord.join(partition_group text, member text, weight double precision
 * DEFAULT 1, meta jsonb DEFAULT '{}', segments integer DEFAULT NULL, assignor
 * text DEFAULT NULL) returns integer[]
 */
Datum
coord_join(PG_FUNCTION_ARGS)
{
	JoinArgs	a;
	PartState  *st;
	bool		fresh;
	CoordUserSwitch sw;
	ArrayType  *result;

	JoinArgsRead(fcinfo, &a);
	CoordSpiBegin(&sw);
	st = JoinGroup(&a);
	fresh = JoinMemberLock(&a, st);
	if (!st->member)
		JoinSerialise(&a, st);
	JoinUpsert(&a, fresh);
	if (fresh)
		JoinLetGoStale(&a, st);
	st->member = true;
	strlcpy(st->me, a.member, sizeof(st->me));
	st->hk[0] = '\0';
	st->nlive = -1;				/* our own row changed */
	PartsSync(st);
	CoordSpiEnd(&sw);
	result = PartsOwnedArray(st);
	PG_RETURN_ARRAYTYPE_P(result);
}

/* coord.leave(partition_group text) returns boolean */
Datum
coord_leave(PG_FUNCTION_ARGS)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	PartState  *st;
	CoordUserSwitch sw;
	bool		was;

	CoordNotInParallel(fcinfo);
	CoordSpiBegin(&sw);
	st = PartsGetState(group);
	was = st != NULL && st->member;
	if (st != NULL)
		PartsLeaveGroup(st);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(was);
}

/*
 * group's state, synced: by the fast path when it holds, else by a sync
 * inside SPI, which a claim (member) allows only to a member.
 */
static PartState *
SyncedState(const char *group, bool member)
{
	PartState  *st;
	CoordUserSwitch sw;

	st = parts ? hash_search(parts, group, HASH_FIND, NULL) : NULL;
	if (st == NULL || !PartsSyncFast(st))
	{
		CoordSpiBegin(&sw);
		st = PartsGetState(group);
		if (st == NULL)
			PartsUnknownGroup(group);
		if (member && !st->member)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("this session is no member of partition group \"%s\"", group),
					 errhint("Call coord.join first.")));
		PartsSync(st);
		CoordSpiEnd(&sw);
	}
	return st;
}

/* coord.owned(partition_group text) returns integer[] */
Datum
coord_owned(PG_FUNCTION_ARGS)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	PartState  *st;
	ArrayType  *result;

	CoordNotInParallel(fcinfo);
	st = SyncedState(group, false);
	result = PartsOwnedArray(st);
	PG_RETURN_ARRAYTYPE_P(result);
}

bytea *
CoordPartitionOwnedForClaim(const char *group, int *n, int32 *segments, uint64 *version)
{
	PartState  *st = SyncedState(group, true);

	*segments = st->segments;
	*version = parts_owned_version;
	*n = st->nowned;
	/* built once per change of what this session owns */
	if (st->owned_bits == NULL || st->owned_bits_at != parts_owned_version)
	{
		int			len = (st->segments + 7) / 8;
		unsigned char *b;

		if (st->owned_bits != NULL)
			pfree(st->owned_bits);
		st->owned_bits = MemoryContextAllocZero(parts_cxt, VARHDRSZ + len);
		SET_VARSIZE(st->owned_bits, VARHDRSZ + len);
		b = (unsigned char *) VARDATA(st->owned_bits);
		/* get_bit's order: bit n is bit n % 8 (from the right) of byte n / 8 */
		for (int s = 0; s < st->segments; s++)
			if (st->token[s] > 0)
				b[s / 8] |= (unsigned char) (1 << (s % 8));
		st->owned_bits_at = parts_owned_version;
	}
	/* a copy: a subtransaction aborting within the claim resets ours */
	return (bytea *) pg_detoast_datum_copy((struct varlena *) st->owned_bits);
}

void
CoordPartitionClaimed(const char *group, int32 segments, int64 id, int64 token, text *key)
{
	MemoryContext cxt = CoordCacheContext(&parts_claims_cxt, "pg_coord partition claims");
	int32		segment;

	/*
	 * The group's segment count comes from the claim, not from the state this
	 * backend keeps: a subtransaction that aborted during the claim (a finish
	 * hook's, burying an exhausted job) forgets that state, and the claim
	 * must be remembered all the same, or its segment could be let go while
	 * the claim is unfinished.
	 */
	segment = key ? SegmentOf(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key), segments)
		: SegmentOf((const char *) &id, sizeof(id), segments);

	if (parts_nclaims == parts_maxclaims)
	{
		int			newmax = parts_maxclaims ? parts_maxclaims * 2 : 64;

		parts_claims = parts_claims ? repalloc(parts_claims, sizeof(PartClaim) * newmax)
			: MemoryContextAlloc(cxt, sizeof(PartClaim) * newmax);
		parts_maxclaims = newmax;
	}
	strlcpy(parts_claims[parts_nclaims].group, group, sizeof(parts_claims[parts_nclaims].group));
	parts_claims[parts_nclaims].id = id;
	parts_claims[parts_nclaims].token = token;
	parts_claims[parts_nclaims].segment = segment;
	parts_nclaims++;
}

/*
 * The segment of a key: coord.job_part's position (so a job's segment is
 * that of its key) modulo the group's segments.
 */
static int32
SegmentOf(const char *key, int len, int segments)
{
	uint64		h = CoordNameKey(key, len);

	return (int32) ((h & 0x7fffffff) % (uint64) segments);
}

/* group's state, read inside SPI (no sync); an unknown group is an error */
static PartState *
KnownState(const char *group)
{
	PartState  *st;
	CoordUserSwitch sw;

	CoordSpiBegin(&sw);
	st = PartsGetState(group);
	CoordSpiEnd(&sw);
	if (st == NULL)
		PartsUnknownGroup(group);
	return st;
}

/* The segment of key (len bytes) in the group of argument 0. */
static int32
GroupSegmentOf(FunctionCallInfo fcinfo, const char *key, int len)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	PartState  *st;

	st = parts ? hash_search(parts, group, HASH_FIND, NULL) : NULL;
	/* a change of the members (a group dropped, made again) reads it again */
	if (st == NULL || st->group_gen != parts_members_gen)
		st = KnownState(group);
	return SegmentOf(key, len, st->segments);
}

/* coord.segment_of(partition_group text, key text) returns integer */
Datum
coord_segment_of(PG_FUNCTION_ARGS)
{
	text	   *key;

	CoordRequireArg(fcinfo, 1, "key");
	key = PG_GETARG_TEXT_PP(1);
	PG_RETURN_INT32(GroupSegmentOf(fcinfo, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
}

/*
 * coord.segment_of(partition_group text, key bigint) and (..., key uuid)
 * return integer: the segment of the key's text form (key::text), which is
 * what a job enqueued with key => that text is routed to.
 */
Datum
coord_segment_of_int8(PG_FUNCTION_ARGS)
{
	char		buf[MAXINT8LEN + 1];
	int			len;

	CoordRequireArg(fcinfo, 1, "key");
	len = pg_lltoa(PG_GETARG_INT64(1), buf);
	PG_RETURN_INT32(GroupSegmentOf(fcinfo, buf, len));
}

Datum
coord_segment_of_uuid(PG_FUNCTION_ARGS)
{
	char	   *key;

	CoordRequireArg(fcinfo, 1, "key");
	key = DatumGetCString(DirectFunctionCall1(uuid_out, PG_GETARG_DATUM(1)));
	PG_RETURN_INT32(GroupSegmentOf(fcinfo, key, strlen(key)));
}

/* coord.segment_token(partition_group text, segment integer) returns bigint */
Datum
coord_segment_token(PG_FUNCTION_ARGS)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	int32		segment;
	PartState  *st;

	CoordRequireArg(fcinfo, 1, "segment");
	segment = PG_GETARG_INT32(1);
	st = KnownState(group);
	if (segment < 0 || segment >= st->segments)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("segment must be between 0 and %d", st->segments - 1),
				 errdetail("Partition group \"%s\" has %d segments; segment is %d.",
						   group, st->segments, segment)));
	/* none is ours once our member lock went (DISCARD ALL, unlock_all) */
	if (st->token[segment] <= 0 || !st->member || !PartsMemberLockHeld(st))
		PG_RETURN_NULL();
	PG_RETURN_INT64(st->token[segment]);
}

/*
 * coord.member_alive(partition_group text, member text, pid integer,
 * backend_start timestamptz) returns boolean: does that member row count
 * (coord.members' alive)?  While its member lock is held in this database.
 */
Datum
coord_member_alive(PG_FUNCTION_ARGS)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	char	   *member = CoordNameArg(fcinfo, 1, "member", false);
	PartState	probe;

	CoordRequireArg(fcinfo, 2, "pid");
	CoordRequireArg(fcinfo, 3, "backend_start");
	CoordNotInParallel(fcinfo); /* it probes the lock manager */
	memset(&probe, 0, sizeof(probe));
	strlcpy(probe.group, group, sizeof(probe.group));
	PG_RETURN_BOOL(PartsMemberAlive(&probe, member, PG_GETARG_INT32(2), PG_GETARG_TIMESTAMPTZ(3)));
}

/* ---------- retention ---------- */

/* a member row of group g. that counts (a fragment of the statements below) */
#define PART_LIVE_MEMBER(g) \
	"EXISTS (SELECT 1 FROM coord.partition_members AS m " \
	"WHERE m.partition_group OPERATOR(pg_catalog.=) " g ".partition_group " \
	"AND coord.member_alive(m.partition_group, m.member, m.pid, m.backend_start))"

/*
 * The names of the groups of names[0 .. n) whose rows this transaction
 * locked now (FOR UPDATE: wait, else SKIP LOCKED); palloc'd, *got of them.
 */
static Datum *
LockGroups(Datum *names, int n, bool wait, int *got)
{
	static SPIPlanPtr plan_wait = NULL;
	static SPIPlanPtr plan_skip = NULL;
	Oid			types[1] = {TEXTARRAYOID};
	Datum		args[1];
	Datum	   *out;

	args[0] = PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
	if (wait)
		CoordExec(&plan_wait,
				  "SELECT partition_group FROM coord.partition_groups "
				  "WHERE partition_group OPERATOR(pg_catalog.=) ANY ($1) FOR UPDATE",
				  1, types, args, NULL, SPI_OK_SELECT, "locking partition groups");
	else
		CoordExec(&plan_skip,
				  "SELECT partition_group FROM coord.partition_groups "
				  "WHERE partition_group OPERATOR(pg_catalog.=) ANY ($1) FOR UPDATE SKIP LOCKED",
				  1, types, args, NULL, SPI_OK_SELECT, "locking partition groups");
	*got = (int) SPI_processed;
	out = palloc(sizeof(Datum) * Max(*got, 1));
	for (int i = 0; i < *got; i++)
	{
		bool		isnull;

		out[i] = SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull),
								   false, -1);
	}
	return out;
}

/*
 * CoordPartitionsTick: the tick's share (docs/operations/sizing.md;
 * src/partitions/README.md).  Reads the groups without a live member that are
 * unmarked or marked before horizon (up to a batch, and those to delete up to
 * PART_TICK_SEGMENTS segment rows), locks their rows (skipping those a joiner
 * holds), and then, reading the members again with fresh snapshots, deletes
 * the ones marked before horizon and marks the unmarked ones empty as of at.
 * Returns how many groups it deleted.
 */
int64
CoordPartitionsTick(TimestampTz at, TimestampTz horizon)
{
	static SPIPlanPtr plan_candidates = NULL;
	static SPIPlanPtr plan_drop = NULL;
	static SPIPlanPtr plan_mark = NULL;
	Oid			ctypes[2] = {TIMESTAMPTZOID, INT4OID};
	Oid			types[2] = {TEXTARRAYOID, TIMESTAMPTZOID};
	Datum		args[2];
	Datum	   *drop;
	Datum	   *mark;
	Datum	   *locked;
	int			ndrop = 0,
				nmark = 0,
				nlocked;
	int64		rows = 0;
	int64		dropped = 0;
	uint64		n;

	args[0] = TimestampTzGetDatum(horizon);
	args[1] = Int32GetDatum(COORD_PURGE_BATCH);
	n = CoordExec(&plan_candidates,
				  "SELECT g.partition_group, g.segments, g.empty_since IS NOT NULL "
				  "FROM coord.partition_groups AS g "
				  "WHERE (g.empty_since IS NULL OR g.empty_since OPERATOR(pg_catalog.<) $1) "
				  "AND NOT " PART_LIVE_MEMBER("g") " "
				  "ORDER BY g.empty_since NULLS LAST LIMIT $2",
				  2, ctypes, args, NULL, SPI_OK_SELECT, "reading empty partition groups");
	if (n == 0)
		return 0;
	drop = palloc(sizeof(Datum) * n);
	mark = palloc(sizeof(Datum) * n);
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		name = SPI_datumTransfer(SPI_getbinval(tup, desc, 1, &isnull), false, -1);
		int32		segments = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));

		CHECK_FOR_INTERRUPTS();
		if (!DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)))
			mark[nmark++] = name;
		else if (ndrop == 0 || rows + segments <= PART_TICK_SEGMENTS)
		{
			drop[ndrop++] = name;
			rows += segments;
		}
	}
	if (ndrop > 0)
	{
		locked = LockGroups(drop, ndrop, false, &nlocked);
		if (nlocked > 0)
		{
			args[0] = PointerGetDatum(construct_array(locked, nlocked, TEXTOID, -1, false, TYPALIGN_INT));
			args[1] = TimestampTzGetDatum(horizon);
			dropped = (int64) CoordExec(&plan_drop,
										"DELETE FROM coord.partition_groups AS g "
										"WHERE g.partition_group OPERATOR(pg_catalog.=) ANY ($1) "
										"AND g.empty_since OPERATOR(pg_catalog.<) $2 "
										"AND NOT " PART_LIVE_MEMBER("g"),
										2, types, args, NULL, SPI_OK_DELETE, "dropping empty partition groups");
		}
	}
	if (nmark > 0)
	{
		locked = LockGroups(mark, nmark, false, &nlocked);
		if (nlocked > 0)
		{
			args[0] = PointerGetDatum(construct_array(locked, nlocked, TEXTOID, -1, false, TYPALIGN_INT));
			args[1] = TimestampTzGetDatum(at);
			CoordExec(&plan_mark,
					  "UPDATE coord.partition_groups AS g SET empty_since = $2 "
					  "WHERE g.partition_group OPERATOR(pg_catalog.=) ANY ($1) "
					  "AND g.empty_since IS NULL "
					  "AND NOT " PART_LIVE_MEMBER("g"),
					  2, types, args, NULL, SPI_OK_UPDATE, "marking empty partition groups");
		}
	}
	return dropped;
}

/*
 * coord.drop_group(partition_group text) returns boolean: deletes the group
 * now, with its segments (coord_admin's); false when there is none, 55000
 * while it has a live member.
 */
Datum
coord_drop_group(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_drop = NULL;
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	CoordUserSwitch sw;
	Datum		name;
	Datum		args[1];
	Oid			types[1] = {TEXTOID};
	int			got;
	bool		dropped;

	CoordNotInParallel(fcinfo);
	name = CStringGetTextDatum(group);
	CoordSpiBegin(&sw);
	/* the group's row first: a joiner in flight is waited for */
	(void) LockGroups(&name, 1, true, &got);
	if (got == 0)
	{
		CoordSpiEnd(&sw);
		PG_RETURN_BOOL(false);
	}
	args[0] = name;
	CoordExec(&plan_drop,
			  "DELETE FROM coord.partition_groups AS g "
			  "WHERE g.partition_group OPERATOR(pg_catalog.=) $1 "
			  "AND NOT " PART_LIVE_MEMBER("g"),
			  1, types, args, NULL, SPI_OK_DELETE, "dropping a partition group");
	dropped = SPI_processed == 1;
	CoordSpiEnd(&sw);
	if (!dropped)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition group \"%s\" has live members", group),
				 errdetail("A group is dropped only while none of its members is alive."),
				 errhint("Members give it up with coord.leave, or their sessions end.")));
	PG_RETURN_BOOL(true);
}
