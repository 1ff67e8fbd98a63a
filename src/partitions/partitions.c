/*-------------------------------------------------------------------------
 * partitions.c
 *		Partition groups (README.md, Partition groups): coord.join,
 *		coord.leave, coord.owned, coord.segment_of, coord.segment_token, and
 *		what coord.claim(..., partition_group) asks of them.
 *
 * The family's top file.  By section: backend memory (this session's view
 * of its groups, forgotten at any (sub)transaction abort); reading the
 * group inside SPI, as the owner (Sync, and SyncFast for a settled
 * group); the SQL-callable functions (coord.join, coord.leave,
 * coord.owned, coord.segment_of, coord.segment_token, coord.member_alive,
 * the members' statement trigger, coord.drop_group) and what the claim
 * asks (partitions.h); retention, the tick's share.  Who owns which
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

static MemoryContext parts_cxt = NULL;
static HTAB *parts = NULL;

/*
 * Grows at every relcache invalidation of coord.partition_members, which
 * coord.join and coord.leave send at their commit (and at any cache reset).
 */
static uint64 members_gen = 1;
static Oid	members_relid = InvalidOid;

/* grows whenever what this session owns may have changed (claim frontiers) */
static uint64 owned_version = 1;

/* Claims are kept across aborts: a claim that rolled back is finished anyway. */
static MemoryContext claims_cxt = NULL;
static PartClaim *claims = NULL;
static int	nclaims = 0;
static int	maxclaims = 0;

static int32 SegmentOf(const char *key, int len, int segments);
static int32 *OwnedList(PartState *st, int *n);
static void LeaveGroup(PartState *st);
static bool MemberLockHeld(PartState *st);
static char *MemberLock(const char *group, const char *member, LOCKTAG *tag);
static void MemberTag(const char *group, const char *member, LOCKTAG *tag);
static void Sync(PartState *st);

static SPIPlanPtr plan_group = NULL;
static SPIPlanPtr plan_new_group = NULL;
static SPIPlanPtr plan_new_segments = NULL;
static SPIPlanPtr plan_lock_group = NULL;
static SPIPlanPtr plan_me = NULL;
static SPIPlanPtr plan_mine = NULL;
static SPIPlanPtr plan_live = NULL;
static SPIPlanPtr plan_dead = NULL;
static SPIPlanPtr plan_busy = NULL;
static SPIPlanPtr plan_take = NULL;
static SPIPlanPtr plan_lock_segments = NULL;
static SPIPlanPtr plan_release = NULL;
static SPIPlanPtr plan_release_all = NULL;
static SPIPlanPtr plan_release_stale = NULL;
static SPIPlanPtr plan_upsert = NULL;
static SPIPlanPtr plan_delete_me = NULL;
static SPIPlanPtr plan_unfinished = NULL;

/* ---------- backend memory ---------- */

/* At any (sub)transaction abort: what was read or written may be undone. */
static void
Forget(void)
{
	if (parts_cxt != NULL)
		MemoryContextReset(parts_cxt);
	parts = NULL;
	owned_version++;
}

static void
MembersInval(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == members_relid || members_relid == InvalidOid)
		members_gen++;
}

/* coord.partition_members's oid (inside SPI, as the owner) */
static Oid
MembersRelid(void)
{
	if (!OidIsValid(members_relid))
		members_relid = get_relname_relid("partition_members",
										  get_namespace_oid(COORD_SCHEMA, false));
	return members_relid;
}

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
		Forget();
}

static void
PartsSubXact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		Forget();
}

void
CoordPartitionsInit(void)
{
	RegisterXactCallback(PartsXact, NULL);
	RegisterSubXactCallback(PartsSubXact, NULL);
	CacheRegisterRelcacheCallback(MembersInval, (Datum) 0);
}

/*
 * The assignors by their SQL names, indexed by PartAssignor; -1 for an
 * unknown name.
 */
static const char *const AssignorNames[] = {"sticky", "range", "rendezvous"};

static int
AssignorOf(const char *name)
{
	for (int i = 0; i < (int) lengthof(AssignorNames); i++)
		if (strcmp(name, AssignorNames[i]) == 0)
			return i;
	return -1;
}

static ArrayType *
IntArray(const int32 *v, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * (n > 0 ? n : 1));

	for (int i = 0; i < n; i++)
		d[i] = Int32GetDatum(v[i]);
	return construct_array(d, n, INT4OID, sizeof(int32), true, TYPALIGN_INT);
}

/* ---------- reading the group (inside SPI, as the owner) ---------- */

static void
ReadGroup(PartState *st)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;
	char	   *assignor;

	args[0] = CStringGetTextDatum(st->group);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_group,
											 "SELECT segments, assignor, created_at FROM coord.partition_groups "
											 "WHERE partition_group OPERATOR(pg_catalog.=) $1",
											 1, types), args, NULL, false, 1),
				  SPI_OK_SELECT, "reading coord.partition_groups");
	st->exists = SPI_processed == 1;
	if (!st->exists)
		return;
	st->created_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	st->segments = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	assignor = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	st->assignor = AssignorOf(assignor);
}

/* This session's member row and segments, read back after an abort. */
static void
ReadMine(PartState *st)
{
	Oid			types[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
	Oid			mtypes[4] = {TEXTOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[3];
	Datum		margs[4];
	bool		isnull;
	TimestampTz joined_at = 0;

	args[0] = CStringGetTextDatum(st->group);
	args[1] = Int32GetDatum(MyProcPid);
	args[2] = TimestampTzGetDatum(MyStartTimestamp);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_me,
											 "SELECT member, joined_at FROM coord.partition_members "
											 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
											 "AND pid OPERATOR(pg_catalog.=) $2 "
											 "AND backend_start OPERATOR(pg_catalog.=) $3",
											 3, types), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading coord.partition_members");

	/*
	 * Our member row is the one whose lock we hold: a row without it (let go
	 * by DISCARD ALL or pg_advisory_unlock_all, perhaps under another name
	 * since) is no membership, and what its rows name is not ours any more.
	 */
	st->member = false;
	for (uint64 i = 0; i < SPI_processed && !st->member; i++)
	{
		strlcpy(st->me, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1), sizeof(st->me));
		st->hk[0] = '\0';
		if (MemberLockHeld(st))
		{
			st->member = true;
			joined_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
		}
	}
	if (!st->member)
	{
		st->me[0] = '\0';
		st->hk[0] = '\0';
		st->token = MemoryContextAllocZero(parts_cxt, sizeof(int64) * st->segments);
		st->nowned = 0;
		return;
	}

	st->token = MemoryContextAllocZero(parts_cxt, sizeof(int64) * st->segments);
	st->nowned = 0;
	margs[0] = args[0];
	margs[1] = args[1];
	margs[2] = args[2];
	margs[3] = TimestampTzGetDatum(joined_at);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_mine,
											 "SELECT segment, token FROM coord.partition_segments "
											 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
											 "AND owner_pid OPERATOR(pg_catalog.=) $2 "
											 "AND owner_start OPERATOR(pg_catalog.=) $3 "
											 "AND taken_at OPERATOR(pg_catalog.>=) $4",
											 4, mtypes), margs, NULL, false, 0),
				  SPI_OK_SELECT, "reading coord.partition_segments");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int32		s = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		int64		t = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));

		if (s >= 0 && s < st->segments && st->token[s] == 0)
		{
			st->token[s] = t;
			st->nowned++;
		}
	}
}

/*
 * The state of group, read if this backend does not know it yet.  NULL
 * when the group does not exist (nothing is kept then).
 */
static PartState *
GetState(const char *group)
{
	PartState  *st;
	bool		found;

	CoordCacheContext(&parts_cxt, "pg_coord partition groups");
	CoordLocalHashIn(&parts, parts_cxt, "pg_coord partition groups", COORD_NAME_MAX + 1,
					 sizeof(PartState), HASH_STRINGS);
	st = hash_search(parts, group, HASH_FIND, NULL);
	if (st != NULL)
	{
		PartState	now;

		/*
		 * A group deleted by hand cascades to its members, whose trigger
		 * invalidates: then see whether it is still the group we know.
		 */
		AcceptInvalidationMessages();
		if (st->group_gen == members_gen)
			return st;
		memset(&now, 0, sizeof(now));
		strlcpy(now.group, group, sizeof(now.group));
		now.group_gen = members_gen;
		ReadGroup(&now);
		if (now.exists && now.created_at == st->created_at && now.segments == st->segments &&
			now.assignor == st->assignor)
		{
			st->group_gen = now.group_gen;
			return st;
		}
		/* another group now, or none: everything is read again */
		Forget();
		CoordLocalHashIn(&parts, parts_cxt, "pg_coord partition groups", COORD_NAME_MAX + 1,
						 sizeof(PartState), HASH_STRINGS);
	}

	st = palloc0(sizeof(PartState));
	strlcpy(st->group, group, sizeof(st->group));
	AcceptInvalidationMessages();
	st->group_gen = members_gen;
	ReadGroup(st);
	if (!st->exists)
	{
		pfree(st);
		return NULL;
	}
	st->nlive = -1;
	ReadMine(st);
	{
		PartState  *entry = hash_search(parts, group, HASH_ENTER, &found);

		memcpy(entry, st, sizeof(PartState));
		pfree(st);
		return entry;
	}
}

/*
 * Is member (name, pid, start) of st alive?  While it holds its member
 * lock: a lock of this database, so rows restored into another database
 * name no live member there, and a member whose lock went (DISCARD ALL,
 * pg_advisory_unlock_all) is gone for everyone although its backend lives.
 * Another session's lock is probed without waiting, as coord.leader probes
 * a term lock: a share request cannot be had while the member holds its
 * exclusive lock.  A session that takes a dead member's name holds the
 * lock before its row commits, so the old row counts as alive until then:
 * never a false "gone".
 */
static bool
MemberAlive(PartState *st, const char *name, int32 pid, TimestampTz start)
{
	LOCKTAG		tag;
	char	   *hk;
	bool		alive;

	if (pid == MyProcPid && start == MyStartTimestamp)
	{
		hk = MemberLock(st->group, name, &tag);
		alive = CoordHoldState(hk) != HOLD_NONE;
		pfree(hk);
		return alive;
	}
	MemberTag(st->group, name, &tag);
	{
		LockAcquireResult r = CoordLockTake(&tag, ShareLock, false, true);

		alive = (r == LOCKACQUIRE_NOT_AVAIL);
		if (!alive)
			CoordLockLetGo(&tag, ShareLock, false);
	}
	return alive;
}

static int
CmpLive(const void *a, const void *b)
{
	return strcmp(((const PartLive *) a)->name, ((const PartLive *) b)->name);
}

/*
 * Reads the live members (deleting dead members' rows) and recomputes the
 * target owners when the live membership differs from the last sync's.
 */
static void
ReadLive(PartState *st)
{
	Oid			types[1] = {TEXTOID};
	Oid			dtypes[4] = {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID};
	Datum		args[1];
	SPITupleTable *tt;
	uint64		n;
	PartLive   *live;
	int			nlive = 0;
	bool		same;

	/* invalidations up to now are answered by the read below */
	AcceptInvalidationMessages();
	st->gen = members_gen;
	(void) MembersRelid();
	args[0] = CStringGetTextDatum(st->group);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_live,
											 "SELECT member, weight, pid, backend_start FROM coord.partition_members "
											 "WHERE partition_group OPERATOR(pg_catalog.=) $1",
											 1, types), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading coord.partition_members");
	tt = SPI_tuptable;
	n = SPI_processed;
	live = palloc(sizeof(PartLive) * (n > 0 ? n : 1));
	if (st->dead != NULL)
	{
		for (int i = 0; i < st->ndead; i++)
			pfree(st->dead[i].name);
		pfree(st->dead);
	}
	st->dead = MemoryContextAlloc(parts_cxt, sizeof(PartLive) * (n > 0 ? n : 1));
	st->ndead = 0;
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;
		PartLive	m;

		m.name = SPI_getvalue(tt->vals[i], tt->tupdesc, 1);
		m.weight = DatumGetFloat4(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));
		m.pid = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &isnull));
		m.start = DatumGetTimestampTz(SPI_getbinval(tt->vals[i], tt->tupdesc, 4, &isnull));
		CHECK_FOR_INTERRUPTS();
		if (MemberAlive(st, m.name, m.pid, m.start))
			live[nlive++] = m;
		else
		{
			Datum		dargs[4];

			st->dead[st->ndead] = m;
			st->dead[st->ndead].name = MemoryContextStrdup(parts_cxt, m.name);
			st->ndead++;

			/*
			 * gone: its row goes, unless a new session took the name
			 * meanwhile
			 */
			dargs[0] = args[0];
			dargs[1] = CStringGetTextDatum(m.name);
			dargs[2] = Int32GetDatum(m.pid);
			dargs[3] = TimestampTzGetDatum(m.start);
			CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_dead,
													 "DELETE FROM coord.partition_members "
													 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
													 "AND member OPERATOR(pg_catalog.=) $2 "
													 "AND pid OPERATOR(pg_catalog.=) $3 "
													 "AND backend_start OPERATOR(pg_catalog.=) $4",
													 4, dtypes), dargs, NULL, false, 0),
						  SPI_OK_DELETE, "deleting a dead member");
		}
	}
	qsort(live, nlive, sizeof(PartLive), CmpLive);

	same = nlive == st->nlive;
	for (int i = 0; same && i < nlive; i++)
		same = strcmp(live[i].name, st->live[i].name) == 0 &&
			live[i].weight == st->live[i].weight &&
			live[i].pid == st->live[i].pid && live[i].start == st->live[i].start;
	if (same)
		return;

	/* a new live membership: keep it, and its assignment */
	{
		MemoryContext old = MemoryContextSwitchTo(parts_cxt);
		PartMember *pm;

		if (st->live != NULL)
		{
			for (int i = 0; i < st->nlive; i++)
				pfree(st->live[i].name);
			pfree(st->live);
		}
		if (st->target == NULL)
			st->target = palloc(sizeof(int32) * st->segments);
		st->live = palloc(sizeof(PartLive) * (nlive > 0 ? nlive : 1));
		st->my_index = -1;
		pm = palloc(sizeof(PartMember) * (nlive > 0 ? nlive : 1));
		for (int i = 0; i < nlive; i++)
		{
			st->live[i] = live[i];
			st->live[i].name = pstrdup(live[i].name);
			pm[i].name = st->live[i].name;
			pm[i].len = strlen(pm[i].name);
			pm[i].weight = live[i].weight;
			if (st->member && strcmp(st->me, pm[i].name) == 0 &&
				live[i].pid == MyProcPid && live[i].start == MyStartTimestamp)
				st->my_index = i;
		}
		st->nlive = nlive;
		if (nlive == 0 || nlive > PART_MAX_MEMBERS ||
			!part_assign(pm, nlive, st->segments, st->assignor, st->target))
		{
			/* no member (or more than a group may have): no target */
			for (int s = 0; s < st->segments; s++)
				st->target[s] = -1;
		}
		pfree(pm);
		MemoryContextSwitchTo(old);
	}
}

/*
 * Of the segments segs[0 .. n) that this session would let go, marks in
 * keep[] those from which it has an unfinished claim: a job it claimed that
 * still has the token of that claim and a claim that has not run out.
 */
static void
MarkUnfinished(PartState *st, const int32 *segs, int n, bool *keep)
{
	int			k = 0;
	Datum	   *ids;
	Datum	   *tokens;
	Oid			types[2] = {INT8ARRAYOID, INT8ARRAYOID};
	Datum		args[2];
	int			w = 0;

	if (n > 0)
		memset(keep, 0, sizeof(bool) * n);
	for (int i = 0; i < nclaims; i++)
		if (strcmp(claims[i].group, st->group) == 0)
			k++;
	if (k == 0)
		return;
	ids = palloc(sizeof(Datum) * k);
	tokens = palloc(sizeof(Datum) * k);
	k = 0;
	for (int i = 0; i < nclaims; i++)
		if (strcmp(claims[i].group, st->group) == 0)
		{
			ids[k] = Int64GetDatum(claims[i].id);
			tokens[k] = Int64GetDatum(claims[i].token);
			k++;
		}
	args[0] = PointerGetDatum(construct_array(ids, k, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
	args[1] = PointerGetDatum(construct_array(tokens, k, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_unfinished,
											 "SELECT c.id FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS c(id, token) "
											 "JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) c.id "
											 "AND j.token OPERATOR(pg_catalog.=) c.token "
											 "AND (j.lease_until OPERATOR(pg_catalog.>) pg_catalog.statement_timestamp() "
											 "     OR (j.lease_until IS NULL AND coord.job_claimed(j.id)))",
											 2, types), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading claims from segments");

	/* keep only the claims still unfinished */
	for (int i = 0; i < nclaims; i++)
	{
		bool		live = true;

		if (strcmp(claims[i].group, st->group) == 0)
		{
			live = false;
			for (uint64 r = 0; r < SPI_processed; r++)
			{
				bool		isnull;

				if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull)) == claims[i].id)
					live = true;
			}
			if (live)
				for (int j = 0; j < n; j++)
					if (segs[j] == claims[i].segment)
						keep[j] = true;
		}
		if (live)
			claims[w++] = claims[i];
	}
	nclaims = w;
}

/*
 * The member lock went behind pg_coord's back (DISCARD ALL, a pooler's reset
 * query, or pg_advisory_unlock_all): other sessions count this member gone
 * from that moment and take its segments, so none is ours any more.  Forget
 * them (the rows are left to the takers: an error would roll our writes
 * back anyway) and say so once; this session is then no member, and a new
 * coord.join makes it one again.
 */
static void
LostMembership(PartState *st)
{
	char		me[COORD_NAME_MAX + 1];

	strlcpy(me, st->me, sizeof(me));
	memset(st->token, 0, sizeof(int64) * st->segments);
	st->nowned = 0;
	st->member = false;
	st->nlive = -1;
	st->settled = false;
	owned_version++;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("this session lost its membership \"%s\" of partition group \"%s\"", me, st->group),
			 errdetail("Its member lock was released (DISCARD ALL or pg_advisory_unlock_all); its segments are no longer its own and go to the other members."),
			 errhint("Call coord.join again to become a member.")));
}

/*
 * The fast path of a sync: true when nothing can have changed since a
 * settled sync (see PartState.settled).  No SPI and no row: the local
 * invalidation queue, this session's hold, and one conditional probe of
 * each other live member's lock.
 */
static bool
SyncFast(PartState *st)
{
	if (!st->settled || !st->member || nclaims >= 1024)
		return false;
	AcceptInvalidationMessages();
	if (st->gen != members_gen)
		return false;
	if (!MemberLockHeld(st))
		return false;
	for (int i = 0; i < st->nlive; i++)
	{
		if (i == st->my_index)
			continue;
		if (!MemberAlive(st, st->live[i].name, st->live[i].pid, st->live[i].start))
			return false;
	}
	return true;
}

/*
 * The group's member rows (name, pid, start), read now (in the caller's
 * memory): a fresh snapshot in READ COMMITTED.
 */
static PartLive *
ReadOwners(PartState *st, int *n)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	PartLive   *rows;

	args[0] = CStringGetTextDatum(st->group);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_live,
											 "SELECT member, weight, pid, backend_start FROM coord.partition_members "
											 "WHERE partition_group OPERATOR(pg_catalog.=) $1",
											 1, types), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading coord.partition_members");
	rows = palloc(sizeof(PartLive) * (SPI_processed > 0 ? SPI_processed : 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		rows[i].name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		rows[i].weight = 0;
		rows[i].pid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull));
		rows[i].start = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4, &isnull));
	}
	*n = (int) SPI_processed;
	return rows;
}

/*
 * Is the owner (pid, start) of a segment row a live member of st, as the
 * rows read by this sync's ReadLive say?  A member row that is not live
 * (gone, or its lock let go) is not; an owner with no member row is no
 * member (its membership ended: its name was taken over by a new session,
 * or its row deleted), so its ownership counts for nothing either.
 */
static bool
OwnerAlive(PartState *st, int32 pid, TimestampTz start)
{
	for (int i = 0; i < st->nlive; i++)
		if (st->live[i].pid == pid && st->live[i].start == start)
			return true;
	return false;
}

/*
 * Sync: take the target segments that are free, let go of the ones that
 * moved away (but those with an unfinished claim).  Inside SPI, as the owner.
 */
static void
Sync(PartState *st)
{
	int32	   *take;
	int32	   *give;
	int			ntake = 0,
				ngive = 0;
	Oid			types[4] = {TEXTOID, INT4ARRAYOID, INT4OID, TIMESTAMPTZOID};
	Datum		args[4];
	bool		settled;

	st->settled = false;
	if (!st->member)
		return;
	if (!MemberLockHeld(st))
		LostMembership(st);
	/* a worker that claims much and never moves: forget finished claims */
	if (nclaims >= 1024)
		MarkUnfinished(st, NULL, 0, NULL);
	ReadLive(st);
	if (st->my_index < 0)
	{
		/* our row is gone (an admin deleted it): we are no member */
		st->member = false;
	}

	take = palloc(sizeof(int32) * st->segments);
	give = palloc(sizeof(int32) * st->segments);
	for (int s = 0; s < st->segments; s++)
	{
		bool		mine = st->member && st->target[s] == st->my_index;

		if (mine && st->token[s] == 0)
			take[ntake++] = s;
		else if (!mine && st->token[s] > 0)
			give[ngive++] = s;
	}
	/* only a sync whose reads were fresh may let later ones skip theirs */
	settled = st->member && !IsolationUsesXactSnapshot();
	if (ntake == 0 && ngive == 0)
	{
		st->settled = settled;
		return;
	}

	args[0] = CStringGetTextDatum(st->group);
	args[2] = Int32GetDatum(MyProcPid);
	args[3] = TimestampTzGetDatum(MyStartTimestamp);

	if (ngive > 0)
	{
		bool	   *keep = palloc(sizeof(bool) * ngive);
		int			w = 0;

		MarkUnfinished(st, give, ngive, keep);
		for (int i = 0; i < ngive; i++)
			if (!keep[i])
				give[w++] = give[i];
		if (w < ngive)
			settled = false;	/* kept for a claim: let go at a later sync */
		ngive = w;
	}
	if (ngive > 0)
	{
		args[1] = PointerGetDatum(IntArray(give, ngive));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_release,
												 "UPDATE coord.partition_segments SET owner_pid = NULL, owner_start = NULL "
												 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
												 "AND segment OPERATOR(pg_catalog.=) ANY ($2) "
												 "AND owner_pid OPERATOR(pg_catalog.=) $3 "
												 "AND owner_start OPERATOR(pg_catalog.=) $4",
												 4, types), args, NULL, false, 0),
					  SPI_OK_UPDATE, "letting go of segments");
		for (int i = 0; i < ngive; i++)
			st->token[give[i]] = 0;
		st->nowned -= ngive;
		owned_version++;
	}

	if (ntake > 0)
	{
		SPITupleTable *tt;
		uint64		n;
		int			w = 0;
		int32	   *got;
		int			ngot = 0;
		PartLive   *owners = NULL;	/* fresh member rows, read at most once */
		int			nowners = -1;

		/*
		 * First a read: a taker row-locks only the segments it may take: no
		 * owner, or one that was no live member at this sync's ReadLive.
		 */
		args[1] = PointerGetDatum(IntArray(take, ntake));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_busy,
												 "SELECT segment, owner_pid, owner_start FROM coord.partition_segments "
												 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
												 "AND segment OPERATOR(pg_catalog.=) ANY ($2) "
												 "ORDER BY segment",
												 2, types), args, NULL, false, 0),
					  SPI_OK_SELECT, "reading coord.partition_segments");
		tt = SPI_tuptable;
		n = SPI_processed;
		for (uint64 i = 0; i < n; i++)
		{
			bool		isnull;
			bool		snull;
			int32		s = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull));
			int32		pid = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));
			TimestampTz start = DatumGetTimestampTz(SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &snull));

			if (s < 0 || s >= st->segments)
				continue;
			if (!isnull && !snull && !(pid == MyProcPid && start == MyStartTimestamp) &&
				OwnerAlive(st, pid, start))
				continue;		/* a live owner's: it lets go first */
			take[w++] = s;
		}
		if (w < ntake)
			settled = false;	/* some are still another's: take them later */
		ntake = w;
		if (ntake == 0)
		{
			st->settled = settled;
			return;
		}

		/*
		 * Then the row locks, SKIP LOCKED: a row another taker holds is not
		 * taken now (no wait for that taker's transaction).  Under the row
		 * lock the latest version's owner is judged again, with member rows
		 * read after the lock (READ COMMITTED: a fresh snapshot, which sees
		 * the member row of any owner whose take has committed) and a probe
		 * of the owner's member lock now: no owner can come back and retake a
		 * row this transaction holds, so two sessions never own a segment at
		 * once.
		 */
		args[1] = PointerGetDatum(IntArray(take, ntake));
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_lock_segments,
												 "SELECT segment, owner_pid, owner_start FROM coord.partition_segments "
												 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
												 "AND segment OPERATOR(pg_catalog.=) ANY ($2) "
												 "ORDER BY segment FOR UPDATE SKIP LOCKED",
												 2, types), args, NULL, false, 0),
					  SPI_OK_SELECT, "locking coord.partition_segments");
		tt = SPI_tuptable;
		n = SPI_processed;
		if (n < (uint64) ntake)
			settled = false;
		got = palloc(sizeof(int32) * (n > 0 ? n : 1));
		for (uint64 i = 0; i < n; i++)
		{
			bool		isnull;
			bool		snull;
			int32		s = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull));
			int32		pid = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));
			TimestampTz start = DatumGetTimestampTz(SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &snull));
			bool		alive = false;

			if (s < 0 || s >= st->segments)
				continue;
			if (!isnull && !snull && !(pid == MyProcPid && start == MyStartTimestamp))
			{
				if (nowners < 0)
				{
					SPITupleTable *save = tt;

					owners = ReadOwners(st, &nowners);
					tt = save;
				}
				for (int k = 0; k < nowners && !alive; k++)
					if (owners[k].pid == pid && owners[k].start == start)
						alive = MemberAlive(st, owners[k].name, pid, start);
			}
			if (alive)
				settled = false;	/* locked in vain: its owner lives */
			else
				got[ngot++] = s;
		}
		if (ngot > 0)
		{
			args[1] = PointerGetDatum(IntArray(got, ngot));
			CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_take,
													 "UPDATE coord.partition_segments "
													 "SET owner_pid = $3, owner_start = $4, "
													 "token = pg_catalog.nextval('coord.segment_token_seq'::pg_catalog.regclass), "
													 "taken_at = pg_catalog.clock_timestamp() "
													 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
													 "AND segment OPERATOR(pg_catalog.=) ANY ($2) "
													 "RETURNING segment, token",
													 4, types), args, NULL, false, 0),
						  SPI_OK_UPDATE_RETURNING, "taking segments");
			tt = SPI_tuptable;
			n = SPI_processed;
			for (uint64 i = 0; i < n; i++)
			{
				bool		isnull;
				int32		s = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull));
				int64		t = DatumGetInt64(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));

				if (s >= 0 && s < st->segments && st->token[s] == 0)
				{
					st->token[s] = t;
					st->nowned++;
				}
			}
			owned_version++;
		}
	}
	st->settled = settled;
}

/* Lets go of every segment (leave). */
static void
ReleaseAll(PartState *st)
{
	Oid			types[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
	Datum		args[3];

	if (st->nowned == 0)
		return;
	/* every row naming this session: no list of segments to match */
	args[0] = CStringGetTextDatum(st->group);
	args[1] = Int32GetDatum(MyProcPid);
	args[2] = TimestampTzGetDatum(MyStartTimestamp);
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_release_all,
											 "UPDATE coord.partition_segments SET owner_pid = NULL, owner_start = NULL "
											 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
											 "AND owner_pid OPERATOR(pg_catalog.=) $2 "
											 "AND owner_start OPERATOR(pg_catalog.=) $3",
											 3, types), args, NULL, false, 0),
				  SPI_OK_UPDATE, "letting go of segments");
	memset(st->token, 0, sizeof(int64) * st->segments);
	st->nowned = 0;
	owned_version++;
}

/*
 * Lets go of st's segments and membership (coord.leave, or a member lock
 * lost behind pg_coord's back).  Owned segments go even when no member row
 * is left.
 */
static void
LeaveGroup(PartState *st)
{
	LOCKTAG		tag;

	ReleaseAll(st);
	if (st->member)
	{
		Oid			types[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
		Datum		args[3];
		char	   *hk = MemberLock(st->group, st->me, &tag);

		args[0] = CStringGetTextDatum(st->group);
		args[1] = Int32GetDatum(MyProcPid);
		args[2] = TimestampTzGetDatum(MyStartTimestamp);
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_delete_me,
												 "DELETE FROM coord.partition_members "
												 "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
												 "AND pid OPERATOR(pg_catalog.=) $2 "
												 "AND backend_start OPERATOR(pg_catalog.=) $3",
												 3, types), args, NULL, false, 0),
					  SPI_OK_DELETE, "leaving a partition group");
		if (CoordHoldState(hk) == HOLD_ACTIVE)
			CoordHoldRelease(hk);
		st->member = false;
		st->nlive = -1;
		st->settled = false;
	}
}

/*
 * Does this session still hold st's member lock?  DISCARD ALL (a pooler's
 * reset query) and pg_advisory_unlock_all let go of it behind pg_coord's
 * back; the holds notice that (common_lock.c).
 */
static bool
MemberLockHeld(PartState *st)
{
	if (st->hk[0] == '\0')
		snprintf(st->hk, sizeof(st->hk), "p:%s %s", st->group, st->me);
	return CoordHoldState(st->hk) != HOLD_NONE;
}

/*
 * coord.owned's answer, in the caller's memory: a copy of the array built
 * when what this session owns last changed.
 */
static ArrayType *
OwnedArray(PartState *st)
{
	if (st->owned == NULL || st->owned_at != owned_version)
	{
		MemoryContext old = MemoryContextSwitchTo(parts_cxt);
		int32	   *v;
		int			n;

		if (st->owned != NULL)
			pfree(st->owned);
		v = OwnedList(st, &n);
		st->owned = IntArray(v, n);
		st->owned_at = owned_version;
		pfree(v);
		MemoryContextSwitchTo(old);
	}
	return (ArrayType *) pg_detoast_datum_copy((struct varlena *) st->owned);
}

/* The owned segments, ascending, in the caller's memory. */
static int32 *
OwnedList(PartState *st, int *n)
{
	int32	   *v = palloc(sizeof(int32) * (st->nowned > 0 ? st->nowned : 1));
	int			k = 0;

	for (int s = 0; s < st->segments; s++)
		if (st->token[s] > 0)
			v[k++] = s;
	*n = k;
	return v;
}

static void
UnknownGroup(const char *group)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("partition group \"%s\" does not exist", group),
			 errhint("A group exists from the first coord.join of it.")));
}

/* The lock tag of (group, member). */
static void
MemberTag(const char *group, const char *member, LOCKTAG *tag)
{
	char		buf[2 * (COORD_NAME_MAX + 1)];
	int			gl = strlen(group);
	int			ml = strlen(member);

	memcpy(buf, group, gl);
	buf[gl] = '\0';				/* names never hold a NUL: no ambiguity */
	memcpy(buf + gl + 1, member, ml);
	CoordSetTag(tag, CoordNameKey(buf, gl + 1 + ml), COORD_NS_MEMBER);
}

/* The hold key and lock tag of (group, member). */
static char *
MemberLock(const char *group, const char *member, LOCKTAG *tag)
{
	MemberTag(group, member, tag);
	return psprintf("p:%s %s", group, member);
}

/* ---------- SQL-callable functions ---------- */

/*
 * coord.join(partition_group text, member text, weight double precision
 * DEFAULT 1, meta jsonb DEFAULT '{}', segments integer DEFAULT NULL, assignor
 * text DEFAULT NULL) returns integer[]
 */
Datum
coord_join(PG_FUNCTION_ARGS)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	char	   *member = CoordNameArg(fcinfo, 1, "member", false);
	float8		weight8;
	float4		weight;
	Jsonb	   *meta;
	bool		has_segments = !PG_ARGISNULL(4);
	int32		segments = has_segments ? PG_GETARG_INT32(4) : PART_DEFAULT_SEGMENTS;
	char	   *assignor = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	PartState  *st;
	LOCKTAG		tag;
	LOCKMODE	mode = ExclusiveLock;
	char	   *hk;
	CoordHoldStatus held;
	bool		fresh;
	CoordUserSwitch sw;
	ArrayType  *result;
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
	if (assignor != NULL && AssignorOf(assignor) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid assignor \"%s\"", assignor),
				 errhint("The assignors are sticky, range and rendezvous.")));

	CoordNotInParallel(fcinfo);
	/* asked before the owner switch, of the caller */
	big_ok = segments <= PART_WORKER_MAX_SEGMENTS || CoordIsAdmin(GetUserId());
	CoordSpiBegin(&sw);
	st = GetState(group);
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
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_new_group,
												 "INSERT INTO coord.partition_groups (partition_group, segments, assignor) "
												 "VALUES ($1, $2, $3) ON CONFLICT (partition_group) DO NOTHING",
												 3, types), args, NULL, false, 0),
					  SPI_OK_INSERT, "creating a partition group");
		if (SPI_processed == 1)
		{
			/* every segment's row, ownerless: takers then only update rows */
			CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_new_segments,
													 "INSERT INTO coord.partition_segments "
													 "(partition_group, segment, owner_pid, owner_start, token, taken_at) "
													 "SELECT $1, g.g, NULL, NULL, 0, pg_catalog.now() "
													 "FROM pg_catalog.generate_series(0, $2 OPERATOR(pg_catalog.-) 1) AS g(g) "
													 "ON CONFLICT (partition_group, segment) DO NOTHING",
													 2, types), args, NULL, false, 0),
						  SPI_OK_INSERT, "creating a partition group's segments");
		}
		st = GetState(group);
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
	if (assignor != NULL && AssignorOf(assignor) != (int) st->assignor)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition group \"%s\" uses the %s assignor, not %s", group,
						AssignorNames[st->assignor], assignor),
				 errdetail("A group's assignor is fixed at its first join."),
				 errhint("Omit assignor, or pass NULL.")));
	if (st->member && strcmp(st->me, member) != 0 && MemberLockHeld(st))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("this session is already member \"%s\" of partition group \"%s\"", st->me, group),
				 errhint("Call coord.leave first to join under another name.")));

	/*
	 * One session per member name: its lock.  Other members probe it for a
	 * moment now and then (MemberAlive), so a short wait tells such a probe
	 * from a live holder.
	 */
	hk = MemberLock(group, member, &tag);
	held = CoordHoldState(hk);
	fresh = (held == HOLD_NONE);
	if (held == HOLD_NONE && st->member)
	{
		/*
		 * Our member lock went behind our back and no sync has noticed yet:
		 * the others may have taken our segments.  Join afresh.
		 */
		memset(st->token, 0, sizeof(int64) * st->segments);
		st->nowned = 0;
		st->member = false;
		st->nlive = -1;
		st->settled = false;
		owned_version++;
	}
	if (held == HOLD_RELEASING)
		CoordHoldKeep(hk);
	else if (held == HOLD_NONE)
	{
		if (!CoordAcquire(&tag, &mode, 1, true, 0, false) &&
			!CoordAcquire(&tag, &mode, 1, true, PART_JOIN_PROBE_WAIT_US, false))
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("member \"%s\" of partition group \"%s\" is another live session's", member, group),
					 errdetail("A member name belongs to one session at a time, until that session leaves or ends.")));
		CoordHoldTaken(hk, &tag);
	}

	if (!st->member)
	{
		Oid			types[1] = {TEXTOID};
		Datum		args[1];

		/*
		 * New members of a group join one at a time: an update of the group's
		 * row, which the next joiner waits for (READ COMMITTED: it then reads
		 * the members afresh) or fails to serialize with (40001), so the
		 * member caps below are exact.
		 */
		args[0] = CStringGetTextDatum(group);
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_lock_group,
												 "UPDATE coord.partition_groups SET empty_since = NULL "
												 "WHERE partition_group OPERATOR(pg_catalog.=) $1",
												 1, types), args, NULL, false, 0),
					  SPI_OK_UPDATE, "serialising joins of a partition group");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("partition group \"%s\" was dropped by a concurrent transaction", group),
					 errdetail("The group had no live member, and coord.tick or coord.drop_group deleted it."),
					 errhint("Join again: the group is made afresh.")));
		ReadLive(st);
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

	{
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
		 * This session holds the name's lock now, so whoever the row names is
		 * no live member: the row is ours.  A fresh membership starts a new
		 * joined_at, on the clock: after an abort, ReadMine adopts only
		 * segments taken since (never one an earlier, lost membership of this
		 * session left, which a taker may be taking).
		 */
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_upsert,
												 "INSERT INTO coord.partition_members AS m "
												 "(partition_group, member, weight, meta, pid, backend_start, joined_at) "
												 "VALUES ($1, $2, $3, $4, $5, $6, pg_catalog.clock_timestamp()) "
												 "ON CONFLICT (partition_group, member) DO UPDATE "
												 "SET weight = excluded.weight, meta = excluded.meta, pid = excluded.pid, "
												 "backend_start = excluded.backend_start, "
												 "joined_at = CASE WHEN NOT $7 AND m.pid OPERATOR(pg_catalog.=) excluded.pid "
												 "AND m.backend_start OPERATOR(pg_catalog.=) excluded.backend_start "
												 "THEN m.joined_at ELSE excluded.joined_at END",
												 7, types), args, NULL, false, 0),
					  SPI_OK_INSERT, "joining a partition group");
		if (SPI_processed != 1)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("member \"%s\" of partition group \"%s\" is another live session's", member, group),
					 errdetail("A member name belongs to one session at a time, until that session leaves or ends.")));
	}
	if (fresh)
	{
		Oid			types[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
		Datum		args[3];

		/*
		 * A new membership owns nothing yet: rows an earlier, lost one of
		 * this session left naming it are let go (the others count this
		 * session alive again now, and would never take them).  Rows a taker
		 * has locked are its own to take.
		 */
		args[0] = CStringGetTextDatum(group);
		args[1] = Int32GetDatum(MyProcPid);
		args[2] = TimestampTzGetDatum(MyStartTimestamp);
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_release_stale,
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
												 3, types), args, NULL, false, 0),
					  SPI_OK_UPDATE, "letting go of an earlier membership's segments");
		memset(st->token, 0, sizeof(int64) * st->segments);
		st->nowned = 0;
		owned_version++;
	}
	st->member = true;
	strlcpy(st->me, member, sizeof(st->me));
	st->hk[0] = '\0';
	st->nlive = -1;				/* our own row changed */
	Sync(st);
	CoordSpiEnd(&sw);
	result = OwnedArray(st);
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
	st = GetState(group);
	was = st != NULL && st->member;
	if (st != NULL)
		LeaveGroup(st);
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(was);
}

/* coord.owned(partition_group text) returns integer[] */
Datum
coord_owned(PG_FUNCTION_ARGS)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	PartState  *st;
	CoordUserSwitch sw;
	ArrayType  *result;

	CoordNotInParallel(fcinfo);
	st = parts ? hash_search(parts, group, HASH_FIND, NULL) : NULL;
	if (st == NULL || !SyncFast(st))
	{
		CoordSpiBegin(&sw);
		st = GetState(group);
		if (st == NULL)
			UnknownGroup(group);
		Sync(st);
		CoordSpiEnd(&sw);
	}
	result = OwnedArray(st);
	PG_RETURN_ARRAYTYPE_P(result);
}

bytea *
CoordPartitionOwnedForClaim(const char *group, int *n, int32 *segments, uint64 *version)
{
	PartState  *st;
	CoordUserSwitch sw;

	st = parts ? hash_search(parts, group, HASH_FIND, NULL) : NULL;
	if (st == NULL || !SyncFast(st))
	{
		CoordSpiBegin(&sw);
		st = GetState(group);
		if (st == NULL)
			UnknownGroup(group);
		if (!st->member)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("this session is no member of partition group \"%s\"", group),
					 errhint("Call coord.join first.")));
		Sync(st);
		CoordSpiEnd(&sw);
	}
	*segments = st->segments;
	*version = owned_version;
	*n = st->nowned;
	/* built once per change of what this session owns */
	if (st->owned_bits == NULL || st->owned_bits_at != owned_version)
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
		st->owned_bits_at = owned_version;
	}
	/* a copy: a subtransaction aborting within the claim resets ours */
	return (bytea *) pg_detoast_datum_copy((struct varlena *) st->owned_bits);
}

void
CoordPartitionClaimed(const char *group, int32 segments, int64 id, int64 token, text *key)
{
	MemoryContext cxt = CoordCacheContext(&claims_cxt, "pg_coord partition claims");
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

	if (nclaims == maxclaims)
	{
		int			newmax = maxclaims ? maxclaims * 2 : 64;

		claims = claims ? repalloc(claims, sizeof(PartClaim) * newmax)
			: MemoryContextAlloc(cxt, sizeof(PartClaim) * newmax);
		maxclaims = newmax;
	}
	strlcpy(claims[nclaims].group, group, sizeof(claims[nclaims].group));
	claims[nclaims].id = id;
	claims[nclaims].token = token;
	claims[nclaims].segment = segment;
	nclaims++;
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

/* The segment of key (len bytes) in the group of argument 0. */
static int32
GroupSegmentOf(FunctionCallInfo fcinfo, const char *key, int len)
{
	char	   *group = CoordNameArg(fcinfo, 0, "partition group", false);
	PartState  *st;
	CoordUserSwitch sw;

	st = parts ? hash_search(parts, group, HASH_FIND, NULL) : NULL;
	/* a change of the members (a group dropped, made again) reads it again */
	if (st != NULL && st->group_gen != members_gen)
		st = NULL;
	if (st == NULL)
	{
		CoordSpiBegin(&sw);
		st = GetState(group);
		CoordSpiEnd(&sw);
		if (st == NULL)
			UnknownGroup(group);
	}
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
	CoordUserSwitch sw;

	CoordRequireArg(fcinfo, 1, "segment");
	segment = PG_GETARG_INT32(1);
	CoordSpiBegin(&sw);
	st = GetState(group);
	CoordSpiEnd(&sw);
	if (st == NULL)
		UnknownGroup(group);
	if (segment < 0 || segment >= st->segments)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("segment must be between 0 and %d", st->segments - 1),
				 errdetail("Partition group \"%s\" has %d segments; segment is %d.",
						   group, st->segments, segment)));
	/* none is ours once our member lock went (DISCARD ALL, unlock_all) */
	if (st->token[segment] <= 0 || !st->member || !MemberLockHeld(st))
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
	PG_RETURN_BOOL(MemberAlive(&probe, member, PG_GETARG_INT32(2), PG_GETARG_TIMESTAMPTZ(3)));
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
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_wait,
												 "SELECT partition_group FROM coord.partition_groups "
												 "WHERE partition_group OPERATOR(pg_catalog.=) ANY ($1) FOR UPDATE",
												 1, types), args, NULL, false, 0),
					  SPI_OK_SELECT, "locking partition groups");
	else
		CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_skip,
												 "SELECT partition_group FROM coord.partition_groups "
												 "WHERE partition_group OPERATOR(pg_catalog.=) ANY ($1) FOR UPDATE SKIP LOCKED",
												 1, types), args, NULL, false, 0),
					  SPI_OK_SELECT, "locking partition groups");
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
 * CoordPartitionsTick: the tick's share (README.md, Retention;
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
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_candidates,
											 "SELECT g.partition_group, g.segments, g.empty_since IS NOT NULL "
											 "FROM coord.partition_groups AS g "
											 "WHERE (g.empty_since IS NULL OR g.empty_since OPERATOR(pg_catalog.<) $1) "
											 "AND NOT " PART_LIVE_MEMBER("g") " "
											 "ORDER BY g.empty_since NULLS LAST LIMIT $2",
											 2, ctypes), args, NULL, false, 0),
				  SPI_OK_SELECT, "reading empty partition groups");
	n = SPI_processed;
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
			CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_drop,
													 "DELETE FROM coord.partition_groups AS g "
													 "WHERE g.partition_group OPERATOR(pg_catalog.=) ANY ($1) "
													 "AND g.empty_since OPERATOR(pg_catalog.<) $2 "
													 "AND NOT " PART_LIVE_MEMBER("g"),
													 2, types), args, NULL, false, 0),
						  SPI_OK_DELETE, "dropping empty partition groups");
			dropped = (int64) SPI_processed;
		}
	}
	if (nmark > 0)
	{
		locked = LockGroups(mark, nmark, false, &nlocked);
		if (nlocked > 0)
		{
			args[0] = PointerGetDatum(construct_array(locked, nlocked, TEXTOID, -1, false, TYPALIGN_INT));
			args[1] = TimestampTzGetDatum(at);
			CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_mark,
													 "UPDATE coord.partition_groups AS g SET empty_since = $2 "
													 "WHERE g.partition_group OPERATOR(pg_catalog.=) ANY ($1) "
													 "AND g.empty_since IS NULL "
													 "AND NOT " PART_LIVE_MEMBER("g"),
													 2, types), args, NULL, false, 0),
						  SPI_OK_UPDATE, "marking empty partition groups");
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
	CoordSpiCheck(SPI_execute_plan(CoordPlan(&plan_drop,
											 "DELETE FROM coord.partition_groups AS g "
											 "WHERE g.partition_group OPERATOR(pg_catalog.=) $1 "
											 "AND NOT " PART_LIVE_MEMBER("g"),
											 1, types), args, NULL, false, 0),
				  SPI_OK_DELETE, "dropping a partition group");
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
