/*-------------------------------------------------------------------------
 * partitions_sync.c
 *		A backend's view of its partition groups and the sync that keeps it
 *		true (docs/partition-groups.md).
 *
 * By section: backend memory (this session's view of its groups, kept in
 * parts_cxt and forgotten at any (sub)transaction abort: Forget, called by
 * partitions.c's transaction callbacks); reading the group inside SPI, as
 * the owner: the group row, this session's own member row, the live
 * members (each probed by its member lock), the segments' owners; the
 * sync, which applies partitions_assign.c's target (takes free segments,
 * gives back those no longer ours once their claims finish), and its fast
 * path (PartsSyncFast: a settled group whose members' relcache generation has
 * not moved needs no read at all); leaving a group.
 *
 * Called by partitions.c (the SQL entry points) only, through
 * partitions_int.h; it calls nothing of partitions.c.  The protocol --
 * membership, a lost member lock, ownership by rows, handoff, the lock
 * order and what survives an abort -- is src/partitions/README.md.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"


#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "partitions/partitions.h"
#include "partitions/partitions_assign.h"
#include "partitions/partitions_int.h"

MemoryContext parts_cxt = NULL;
HTAB	   *parts = NULL;

/*
 * Grows at every relcache invalidation of coord.partition_members, which
 * coord.join and coord.leave send at their commit (and at any cache reset).
 */
uint64		parts_members_gen = 1;
static Oid	members_relid = InvalidOid;

/* grows whenever what this session owns may have changed (claim frontiers) */
uint64		parts_owned_version = 1;

/* Claims are kept across aborts: a claim that rolled back is finished anyway. */
MemoryContext parts_claims_cxt = NULL;
PartClaim  *parts_claims = NULL;
int			parts_nclaims = 0;
int			parts_maxclaims = 0;

static int32 *OwnedList(PartState *st, int *n);
static void MemberTag(const char *group, const char *member, LOCKTAG *tag);

static SPIPlanPtr plan_group = NULL;
static SPIPlanPtr plan_me = NULL;
static SPIPlanPtr plan_mine = NULL;
static SPIPlanPtr plan_live = NULL;
static SPIPlanPtr plan_dead = NULL;
static SPIPlanPtr plan_busy = NULL;
static SPIPlanPtr plan_take = NULL;
static SPIPlanPtr plan_lock_segments = NULL;
static SPIPlanPtr plan_release = NULL;
static SPIPlanPtr plan_release_all = NULL;
static SPIPlanPtr plan_delete_me = NULL;
static SPIPlanPtr plan_unfinished = NULL;

/* ---------- backend memory ---------- */

/* At any (sub)transaction abort: what was read or written may be undone. */
void
PartsForget(void)
{
	if (parts_cxt != NULL)
		MemoryContextReset(parts_cxt);
	parts = NULL;
	parts_owned_version++;
}

void
PartsMembersInval(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == members_relid || members_relid == InvalidOid)
		parts_members_gen++;
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
 * The assignors by their SQL names, indexed by PartAssignor; -1 for an
 * unknown name.
 */
const char *const PartsAssignorNames[] = {"sticky", "range", "rendezvous"};

int
PartsAssignorOf(const char *name)
{
	for (int i = 0; i < (int) lengthof(PartsAssignorNames); i++)
		if (strcmp(name, PartsAssignorNames[i]) == 0)
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
	CoordExecLimit(&plan_group,
				   "SELECT segments, assignor, created_at FROM coord.partition_groups "
				   "WHERE partition_group OPERATOR(pg_catalog.=) $1",
				   1, types, args, NULL, 1, SPI_OK_SELECT, "reading coord.partition_groups");
	st->exists = SPI_processed == 1;
	if (!st->exists)
		return;
	st->created_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	st->segments = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	assignor = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	st->assignor = PartsAssignorOf(assignor);
}

/*
 * The rows (segment, token) of the statement just run are this session's:
 * each segment in range is recorded as owned once.
 */
static void
OwnRows(PartState *st)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int32		s = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		int64		t = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));

		if (s >= 0 && s < st->segments && st->token[s] == 0)
		{
			st->token[s] = t;
			st->nowned++;
		}
	}
}

/* This session's member row and segments, read back after an abort. */
void
PartsReadMine(PartState *st)
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
	CoordExec(&plan_me,
			  "SELECT member, joined_at FROM coord.partition_members "
			  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
			  "AND pid OPERATOR(pg_catalog.=) $2 "
			  "AND backend_start OPERATOR(pg_catalog.=) $3",
			  3, types, args, NULL, SPI_OK_SELECT, "reading coord.partition_members");

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
		if (PartsMemberLockHeld(st))
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
	CoordExec(&plan_mine,
			  "SELECT segment, token FROM coord.partition_segments "
			  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
			  "AND owner_pid OPERATOR(pg_catalog.=) $2 "
			  "AND owner_start OPERATOR(pg_catalog.=) $3 "
			  "AND taken_at OPERATOR(pg_catalog.>=) $4",
			  4, mtypes, margs, NULL, SPI_OK_SELECT, "reading coord.partition_segments");
	OwnRows(st);
}

/*
 * The state of group, read if this backend does not know it yet.  NULL
 * when the group does not exist (nothing is kept then).
 */
PartState *
PartsGetState(const char *group)
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
		if (st->group_gen == parts_members_gen)
			return st;
		memset(&now, 0, sizeof(now));
		strlcpy(now.group, group, sizeof(now.group));
		now.group_gen = parts_members_gen;
		ReadGroup(&now);
		if (now.exists && now.created_at == st->created_at && now.segments == st->segments &&
			now.assignor == st->assignor)
		{
			st->group_gen = now.group_gen;
			return st;
		}
		/* another group now, or none: everything is read again */
		PartsForget();
		CoordLocalHashIn(&parts, parts_cxt, "pg_coord partition groups", COORD_NAME_MAX + 1,
						 sizeof(PartState), HASH_STRINGS);
	}

	st = palloc0(sizeof(PartState));
	strlcpy(st->group, group, sizeof(st->group));
	AcceptInvalidationMessages();
	st->group_gen = parts_members_gen;
	ReadGroup(st);
	if (!st->exists)
	{
		pfree(st);
		return NULL;
	}
	st->nlive = -1;
	PartsReadMine(st);
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
bool
PartsMemberAlive(PartState *st, const char *name, int32 pid, TimestampTz start)
{
	LOCKTAG		tag;
	char	   *hk;
	bool		alive;

	if (pid == MyProcPid && start == MyStartTimestamp)
	{
		hk = PartsMemberLock(st->group, name, &tag);
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
 * The group's member rows (name, weight, pid, start), read now (in the
 * caller's memory): a fresh snapshot in READ COMMITTED.  PartsReadLive judges
 * them alive or dead; a taker reads them again after its row locks.
 */
static PartLive *
ReadMemberRows(PartState *st, int *n)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	PartLive   *rows;

	args[0] = CStringGetTextDatum(st->group);
	CoordExec(&plan_live,
			  "SELECT member, weight, pid, backend_start FROM coord.partition_members "
			  "WHERE partition_group OPERATOR(pg_catalog.=) $1",
			  1, types, args, NULL, SPI_OK_SELECT, "reading coord.partition_members");
	rows = palloc(sizeof(PartLive) * (SPI_processed > 0 ? SPI_processed : 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		rows[i].name = SPI_getvalue(tup, desc, 1);
		rows[i].weight = DatumGetFloat4(SPI_getbinval(tup, desc, 2, &isnull));
		rows[i].pid = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		rows[i].start = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
	}
	*n = (int) SPI_processed;
	return rows;
}

/*
 * Reads the live members (deleting dead members' rows) and recomputes the
 * target owners when the live membership differs from the last sync's.
 */
void
PartsReadLive(PartState *st)
{
	Oid			dtypes[4] = {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID};
	Datum		gname = CStringGetTextDatum(st->group);
	PartLive   *rows;
	int			n;
	PartLive   *live;
	int			nlive = 0;
	bool		same;

	/* invalidations up to now are answered by the read below */
	AcceptInvalidationMessages();
	st->gen = parts_members_gen;
	(void) MembersRelid();
	rows = ReadMemberRows(st, &n);
	live = palloc(sizeof(PartLive) * (n > 0 ? n : 1));
	if (st->dead != NULL)
	{
		for (int i = 0; i < st->ndead; i++)
			pfree(st->dead[i].name);
		pfree(st->dead);
	}
	st->dead = MemoryContextAlloc(parts_cxt, sizeof(PartLive) * (n > 0 ? n : 1));
	st->ndead = 0;
	for (int i = 0; i < n; i++)
	{
		PartLive	m = rows[i];

		CHECK_FOR_INTERRUPTS();
		if (PartsMemberAlive(st, m.name, m.pid, m.start))
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
			dargs[0] = gname;
			dargs[1] = CStringGetTextDatum(m.name);
			dargs[2] = Int32GetDatum(m.pid);
			dargs[3] = TimestampTzGetDatum(m.start);
			CoordExec(&plan_dead,
					  "DELETE FROM coord.partition_members "
					  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
					  "AND member OPERATOR(pg_catalog.=) $2 "
					  "AND pid OPERATOR(pg_catalog.=) $3 "
					  "AND backend_start OPERATOR(pg_catalog.=) $4",
					  4, dtypes, dargs, NULL, SPI_OK_DELETE, "deleting a dead member");
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
	for (int i = 0; i < parts_nclaims; i++)
		if (strcmp(parts_claims[i].group, st->group) == 0)
			k++;
	if (k == 0)
		return;
	ids = palloc(sizeof(Datum) * k);
	tokens = palloc(sizeof(Datum) * k);
	k = 0;
	for (int i = 0; i < parts_nclaims; i++)
		if (strcmp(parts_claims[i].group, st->group) == 0)
		{
			ids[k] = Int64GetDatum(parts_claims[i].id);
			tokens[k] = Int64GetDatum(parts_claims[i].token);
			k++;
		}
	args[0] = PointerGetDatum(construct_array(ids, k, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
	args[1] = PointerGetDatum(construct_array(tokens, k, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
	CoordExec(&plan_unfinished,
			  "SELECT c.id FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS c(id, token) "
			  "JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) c.id "
			  "AND j.token OPERATOR(pg_catalog.=) c.token "
			  "AND (j.lease_until OPERATOR(pg_catalog.>) pg_catalog.statement_timestamp() "
			  "     OR (j.lease_until IS NULL AND coord.job_claimed(j.id)))",
			  2, types, args, NULL, SPI_OK_SELECT, "reading claims from segments");

	/* keep only the claims still unfinished */
	for (int i = 0; i < parts_nclaims; i++)
	{
		bool		live = true;

		if (strcmp(parts_claims[i].group, st->group) == 0)
		{
			live = false;
			for (uint64 r = 0; r < SPI_processed; r++)
			{
				bool		isnull;

				if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull)) == parts_claims[i].id)
					live = true;
			}
			if (live)
				for (int j = 0; j < n; j++)
					if (segs[j] == parts_claims[i].segment)
						keep[j] = true;
		}
		if (live)
			parts_claims[w++] = parts_claims[i];
	}
	parts_nclaims = w;
}

/*
 * This session is no member of st any more and owns none of its segments:
 * what LostMembership forgets, and a coord.join that finds its member lock
 * gone before any sync noticed (JoinMemberLock).
 */
void
PartsForgetMembership(PartState *st)
{
	memset(st->token, 0, sizeof(int64) * st->segments);
	st->nowned = 0;
	st->member = false;
	st->nlive = -1;
	st->settled = false;
	parts_owned_version++;
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
	PartsForgetMembership(st);
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
bool
PartsSyncFast(PartState *st)
{
	if (!st->settled || !st->member || parts_nclaims >= 1024)
		return false;
	AcceptInvalidationMessages();
	if (st->gen != parts_members_gen)
		return false;
	if (!PartsMemberLockHeld(st))
		return false;
	for (int i = 0; i < st->nlive; i++)
	{
		if (i == st->my_index)
			continue;
		if (!PartsMemberAlive(st, st->live[i].name, st->live[i].pid, st->live[i].start))
			return false;
	}
	return true;
}

/*
 * Is the owner (pid, start) of a segment row a live member of st, as the
 * rows read by this sync's PartsReadLive say?  A member row that is not live
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
 * Sync, step 1: the members read afresh.  A member lock lost behind our back
 * ends the membership with an error (LostMembership); a worker that claims
 * much and never moves forgets its finished claims here, so they stay few.
 */
static void
SyncReadMembers(PartState *st)
{
	if (!PartsMemberLockHeld(st))
		LostMembership(st);
	/* a worker that claims much and never moves: forget finished claims */
	if (parts_nclaims >= 1024)
		MarkUnfinished(st, NULL, 0, NULL);
	PartsReadLive(st);
	if (st->my_index < 0)
	{
		/* our row is gone (an admin deleted it): we are no member */
		st->member = false;
	}
}

/*
 * Sync, step 2: against the target, the segments to take (ours, not held)
 * and to give (held, not ours: all of them once we are no member).
 */
static void
SyncPlan(PartState *st, int32 *take, int *ntake, int32 *give, int *ngive)
{
	*ntake = 0;
	*ngive = 0;
	for (int s = 0; s < st->segments; s++)
	{
		bool		mine = st->member && st->target[s] == st->my_index;

		if (mine && st->token[s] == 0)
			take[(*ntake)++] = s;
		else if (!mine && st->token[s] > 0)
			give[(*ngive)++] = s;
	}
}

/*
 * Sync, step 3: of the segments to give, those with an unfinished claim are
 * kept until a later sync (a claim's job keeps the ownership it was claimed
 * under).  Returns how many are still to give, first in give[].
 */
static int
SyncKeepClaimed(PartState *st, int32 *give, int ngive, bool *settled)
{
	bool	   *keep = palloc(sizeof(bool) * ngive);
	int			w = 0;

	MarkUnfinished(st, give, ngive, keep);
	for (int i = 0; i < ngive; i++)
		if (!keep[i])
			give[w++] = give[i];
	if (w < ngive)
		*settled = false;		/* kept for a claim: let go at a later sync */
	return w;
}

/*
 * One of the sync's updates (SyncLetGo, TakeRows), sql, with its parameters:
 * $1 the group, $2 the segments segs[0 .. n), $3 and $4 this session (pid,
 * backend start).
 */
static void
SegmentUpdate(SPIPlanPtr *slot, const char *sql, PartState *st, const int32 *segs, int n,
			  int expected, const char *what)
{
	Oid			types[4] = {TEXTOID, INT4ARRAYOID, INT4OID, TIMESTAMPTZOID};
	Datum		args[4];

	args[0] = CStringGetTextDatum(st->group);
	args[1] = PointerGetDatum(IntArray(segs, n));
	args[2] = Int32GetDatum(MyProcPid);
	args[3] = TimestampTzGetDatum(MyStartTimestamp);
	CoordExec(slot, sql, 4, types, args, NULL, expected, what);
}

/* Sync, step 4: our rows of give[0 .. ngive) name no owner any more. */
static void
SyncLetGo(PartState *st, const int32 *give, int ngive)
{
	SegmentUpdate(&plan_release,
				  "UPDATE coord.partition_segments SET owner_pid = NULL, owner_start = NULL "
				  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
				  "AND segment OPERATOR(pg_catalog.=) ANY ($2) "
				  "AND owner_pid OPERATOR(pg_catalog.=) $3 "
				  "AND owner_start OPERATOR(pg_catalog.=) $4",
				  st, give, ngive, SPI_OK_UPDATE, "letting go of segments");
	for (int i = 0; i < ngive; i++)
		st->token[give[i]] = 0;
	st->nowned -= ngive;
	parts_owned_version++;
}

/* ReadSegments's statement; locked, it ends FOR UPDATE SKIP LOCKED */
#define SEGMENTS_SQL "SELECT segment, owner_pid, owner_start FROM coord.partition_segments " \
	"WHERE partition_group OPERATOR(pg_catalog.=) $1 " \
	"AND segment OPERATOR(pg_catalog.=) ANY ($2) " \
	"ORDER BY segment"

/*
 * The rows (segment, owner_pid, owner_start) of segs[0 .. n), in segment
 * order, into SPI_tuptable: read plainly (to choose what to lock), or locked
 * (to take).  Returns how many.
 */
static uint64
ReadSegments(PartState *st, const int32 *segs, int n, bool lock)
{
	Oid			types[2] = {TEXTOID, INT4ARRAYOID};
	Datum		args[2];

	args[0] = CStringGetTextDatum(st->group);
	args[1] = PointerGetDatum(IntArray(segs, n));
	if (lock)
		return CoordExec(&plan_lock_segments, SEGMENTS_SQL " FOR UPDATE SKIP LOCKED", 2, types,
						 args, NULL, SPI_OK_SELECT, "locking coord.partition_segments");
	return CoordExec(&plan_busy, SEGMENTS_SQL, 2, types,
					 args, NULL, SPI_OK_SELECT, "reading coord.partition_segments");
}

/*
 * Row i of tt, a ReadSegments answer: false for a segment out of st's range;
 * else its segment *s, and *other when another session (*pid, *start) is
 * its owner.
 */
static bool
SegmentRow(PartState *st, SPITupleTable *tt, uint64 i, int32 *s, int32 *pid, TimestampTz *start, bool *other)
{
	bool		isnull;
	bool		snull;

	*s = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull));
	*pid = DatumGetInt32(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));
	*start = DatumGetTimestampTz(SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &snull));
	if (*s < 0 || *s >= st->segments)
		return false;
	*other = !isnull && !snull && !(*pid == MyProcPid && *start == MyStartTimestamp);
	return true;
}

/*
 * Sync, step 5: first a read, so that a taker row-locks only the segments
 * it may take: no owner, or one that was no live member at this sync's
 * PartsReadLive.  Returns how many may be taken, first in take[].
 */
static int
TakeCandidates(PartState *st, int32 *take, int ntake, bool *settled)
{
	uint64		n = ReadSegments(st, take, ntake, false);
	SPITupleTable *tt = SPI_tuptable;
	int			w = 0;

	for (uint64 i = 0; i < n; i++)
	{
		int32		s;
		int32		pid;
		TimestampTz start;
		bool		other;

		if (!SegmentRow(st, tt, i, &s, &pid, &start, &other))
			continue;
		if (other && OwnerAlive(st, pid, start))
			continue;			/* a live owner's: it lets go first */
		take[w++] = s;
	}
	if (w < ntake)
		*settled = false;		/* some are still another's: take them later */
	return w;
}

/*
 * Sync, step 6: the row locks, SKIP LOCKED: a row another taker holds is
 * not taken now (no wait for that taker's transaction).  Under the row lock
 * the latest version's owner is judged again, with member rows read after
 * the lock (READ COMMITTED: a fresh snapshot, which sees the member row of
 * any owner whose take has committed) and a probe of the owner's member
 * lock now: no owner can come back and retake a row this transaction holds,
 * so two sessions never own a segment at once.  Returns the rows of take[]
 * locked and free, *ngot of them.
 */
static int32 *
TakeLock(PartState *st, const int32 *take, int ntake, int *ngot, bool *settled)
{
	uint64		n = ReadSegments(st, take, ntake, true);
	SPITupleTable *tt = SPI_tuptable;
	int32	   *got = palloc(sizeof(int32) * (n > 0 ? n : 1));
	PartLive   *owners = NULL;	/* fresh member rows, read at most once */
	int			nowners = -1;

	*ngot = 0;
	if (n < (uint64) ntake)
		*settled = false;
	for (uint64 i = 0; i < n; i++)
	{
		int32		s;
		int32		pid;
		TimestampTz start;
		bool		other;
		bool		alive = false;

		if (!SegmentRow(st, tt, i, &s, &pid, &start, &other))
			continue;
		if (other)
		{
			if (nowners < 0)
				owners = ReadMemberRows(st, &nowners);
			for (int k = 0; k < nowners && !alive; k++)
				if (owners[k].pid == pid && owners[k].start == start)
					alive = PartsMemberAlive(st, owners[k].name, pid, start);
		}
		if (alive)
			*settled = false;	/* locked in vain: its owner lives */
		else
			got[(*ngot)++] = s;
	}
	return got;
}

/*
 * Sync, step 7: the locked rows got[0 .. ngot) become ours, each with a new
 * fencing token.
 */
static void
TakeRows(PartState *st, const int32 *got, int ngot)
{
	SegmentUpdate(&plan_take,
				  "UPDATE coord.partition_segments "
				  "SET owner_pid = $3, owner_start = $4, "
				  "token = pg_catalog.nextval('coord.segment_token_seq'::pg_catalog.regclass), "
				  "taken_at = pg_catalog.clock_timestamp() "
				  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
				  "AND segment OPERATOR(pg_catalog.=) ANY ($2) "
				  "RETURNING segment, token",
				  st, got, ngot, SPI_OK_UPDATE_RETURNING, "taking segments");
	OwnRows(st);
	parts_owned_version++;
}

/*
 * Sync: take the target segments that are free, let go of the ones that
 * moved away (but those with an unfinished claim).  Inside SPI, as the owner.
 * Settled at the end only when nothing was left for a later sync.
 */
void
PartsSync(PartState *st)
{
	int32	   *take;
	int32	   *give;
	int			ntake,
				ngive;
	bool		settled;

	st->settled = false;
	if (!st->member)
		return;
	SyncReadMembers(st);
	take = palloc(sizeof(int32) * st->segments);
	give = palloc(sizeof(int32) * st->segments);
	SyncPlan(st, take, &ntake, give, &ngive);
	/* only a sync whose reads were fresh may let later ones skip theirs */
	settled = st->member && !IsolationUsesXactSnapshot();
	if (ngive > 0)
		ngive = SyncKeepClaimed(st, give, ngive, &settled);
	if (ngive > 0)
		SyncLetGo(st, give, ngive);
	if (ntake > 0)
		ntake = TakeCandidates(st, take, ntake, &settled);
	if (ntake > 0)
	{
		int			ngot;
		int32	   *got = TakeLock(st, take, ntake, &ngot, &settled);

		if (ngot > 0)
			TakeRows(st, got, ngot);
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
	CoordExec(&plan_release_all,
			  "UPDATE coord.partition_segments SET owner_pid = NULL, owner_start = NULL "
			  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
			  "AND owner_pid OPERATOR(pg_catalog.=) $2 "
			  "AND owner_start OPERATOR(pg_catalog.=) $3",
			  3, types, args, NULL, SPI_OK_UPDATE, "letting go of segments");
	memset(st->token, 0, sizeof(int64) * st->segments);
	st->nowned = 0;
	parts_owned_version++;
}

/*
 * Lets go of st's segments and membership (coord.leave, or a member lock
 * lost behind pg_coord's back).  Owned segments go even when no member row
 * is left.
 */
void
PartsLeaveGroup(PartState *st)
{
	LOCKTAG		tag;

	ReleaseAll(st);
	if (st->member)
	{
		Oid			types[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
		Datum		args[3];
		char	   *hk = PartsMemberLock(st->group, st->me, &tag);

		args[0] = CStringGetTextDatum(st->group);
		args[1] = Int32GetDatum(MyProcPid);
		args[2] = TimestampTzGetDatum(MyStartTimestamp);
		CoordExec(&plan_delete_me,
				  "DELETE FROM coord.partition_members "
				  "WHERE partition_group OPERATOR(pg_catalog.=) $1 "
				  "AND pid OPERATOR(pg_catalog.=) $2 "
				  "AND backend_start OPERATOR(pg_catalog.=) $3",
				  3, types, args, NULL, SPI_OK_DELETE, "leaving a partition group");
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
bool
PartsMemberLockHeld(PartState *st)
{
	if (st->hk[0] == '\0')
		snprintf(st->hk, sizeof(st->hk), "p:%s %s", st->group, st->me);
	return CoordHoldState(st->hk) != HOLD_NONE;
}

/*
 * coord.owned's answer, in the caller's memory: a copy of the array built
 * when what this session owns last changed.
 */
ArrayType *
PartsOwnedArray(PartState *st)
{
	if (st->owned == NULL || st->owned_at != parts_owned_version)
	{
		MemoryContext old = MemoryContextSwitchTo(parts_cxt);
		int32	   *v;
		int			n;

		if (st->owned != NULL)
			pfree(st->owned);
		v = OwnedList(st, &n);
		st->owned = IntArray(v, n);
		st->owned_at = parts_owned_version;
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

void
PartsUnknownGroup(const char *group)
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
char *
PartsMemberLock(const char *group, const char *member, LOCKTAG *tag)
{
	MemberTag(group, member, tag);
	return psprintf("p:%s %s", group, member);
}
