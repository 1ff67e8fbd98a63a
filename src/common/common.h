/*-------------------------------------------------------------------------
 * common.h
 *		Helpers shared by every pg_coord concern: lock-tag namespaces,
 *		argument validation, path parsing and hashing, time zones, running
 *		SPI as the extension owner with saved plans.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_COMMON_H
#define PG_COORD_COMMON_H

#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "pgtime.h"
#include "storage/lock.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/*
 * Advisory lock-tag namespaces (locktag field4).  Core PostgreSQL only ever
 * uses 1 and 2 there, so no application pg_advisory_lock() key can collide
 * with ours; Citus uses 4-15 and TimescaleDB 29749.  Values stay below 32768
 * because pg_locks shows field4 as int2.
 */
#define COORD_NS_PATH		17201	/* coord.lock and friends */
#define COORD_NS_REGISTRY	17202	/* one registrar at a time per name key */
#define COORD_NS_REQUEST	17203	/* coord.request: the owner of a key */
#define COORD_NS_JOB		17204	/* coord.claim: the claimer of a job id */
#define COORD_NS_IDLE		17205	/* claimers idle on a queue or host
									 * channel */
#define COORD_NS_TICK		17206	/* coord.tick: one at a time */
#define COORD_NS_APP		17207	/* apps.c: one run creation per (app,
									 * period) at a time */
#define COORD_NS_ELECTION	17212	/* election.c: the leader of an election */
#define COORD_NS_TERM		17214	/* election.c: the leader of one term */
#define COORD_NS_MEMBER		17208	/* partitions.c: the session of a group's
									 * member (17209, for segments, is unused:
									 * segments are owned by rows) */
#define COORD_NS_PERMIT		17210	/* semaphores.c: permit k of a path */
#define COORD_NS_PERMIT_GATE	17211	/* semaphores.c: the waiters' gate */
#define COORD_NS_LIMIT		17220	/* jobs_limits.c: count and take of a
									 * (queue, limit_key) */
#define COORD_NS_AWAIT		17221	/* jobs_control.c: coord.await of a job id */
#define COORD_NS_AWAIT_ANY	17222	/* jobs_control.c: some coord.await waits */
#define COORD_NS_AWAIT_PREP	17223	/* jobs_common.c: a prepared transaction
									 * finished a job id (0: more than
									 * AWAIT_PREP_IDS_MAX of them) */
#define COORD_NS_BATCH		17231	/* workflows_batch.c: a batch's gate */
#define COORD_NS_BATCH_END	17232	/* workflows_batch.c: who ends a batch */
#define COORD_NS_BATCH_SKIP	17233	/* workflows_batch.c: finishers not last */
/* every namespace above lies in this range: the lock budget counts them all */
#define COORD_NS_FIRST		17201
#define COORD_NS_LAST		17299

/* Path limits: the contract's 1024 bytes, and a depth we take intention locks for. */
#define COORD_PATH_MAX_BYTES	1024
#define COORD_PATH_MAX_DEPTH	64

#define COORD_SCHEMA		"coord"

/* queue, host, schedule and app names; job payloads */
#define COORD_NAME_MAX			48
#define COORD_PAYLOAD_MAX_BYTES	(1024 * 1024)

/*
 * What callers store that flows elsewhere later.  A job's result is at most
 * what a payload may be.  An app's conf is small enough that a run's payload
 * (conf, a few names and times, and the upstream results, which are left out
 * when they would not fit; apps.c) always stays under the payload limit.
 * An error text is kept short: it is copied into every later claim's
 * last_error and history row.
 */
#define COORD_RESULT_MAX_BYTES	COORD_PAYLOAD_MAX_BYTES
#define COORD_CONF_MAX_BYTES	(64 * 1024)
#define COORD_ERROR_MAX_BYTES	(64 * 1024)

/*
 * A validated lock path.  Segment i spans path[0 .. ends[i]) as a prefix, and
 * keys[i] is the 64-bit name hash of that prefix.  The last entry is the path
 * itself; the ones before it are the ancestors that take intention locks.
 */
typedef struct CoordPath
{
	char	   *path;			/* NUL-terminated copy */
	int			len;
	int			depth;
	int			ends[COORD_PATH_MAX_DEPTH];
	uint64		keys[COORD_PATH_MAX_DEPTH];
} CoordPath;

/*
 * Saved user id, security context and GUC nest level while running as the
 * extension owner (CoordBecomeOwner .. CoordRestoreUser).
 */
typedef struct CoordUserSwitch
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel; /* 0: search_path was already pinned */
} CoordUserSwitch;

/* The search_path every statement run as the owner sees. */
#define COORD_OWNER_SEARCH_PATH	"pg_catalog, pg_temp"

/*
 * Module init of the infrastructure here (common.c) and of locks.c, which
 * has no other interface; the other concerns declare theirs in their own
 * headers (jobs.h, schedules.h, apps.h).  _PG_init (pg_coord.c) calls them
 * all, the queue's before those of the concerns that register finish hooks
 * with it.
 */
extern void CoordCommonInit(void);
extern void CoordLocksInit(void);

/* Arguments */
/* qsort/bsearch comparator of int64 values (job ids) */
static inline int
CoordCmpInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

extern void CoordRequireArg(FunctionCallInfo fcinfo, int argno, const char *argname);
extern char *CoordNameArg(FunctionCallInfo fcinfo, int argno, const char *what, bool nullable);
extern Jsonb *CoordCheckPayload(Jsonb *payload);
extern void CoordCheckSize(const char *what, Size size, Size max);
extern int64 CoordIntervalToMicroseconds(const Interval *span, const char *argname,
										 bool allow_zero);

/* Timestamp arithmetic that stays inside the timestamptz range (22008) */
extern TimestampTz CoordTimeAdd(TimestampTz t, int64 usec, const char *what);

/* First in every function that changes state or takes locks: 25000 in a parallel worker */
extern void CoordNotInParallel(FunctionCallInfo fcinfo);

/*
 * Time zones (common_tz.c): a tz argument resolved (NULL for a zone that is
 * UTC always; 22023 otherwise unknown, too long or with leap seconds), a
 * stored name looked up without an error, and where a zone's UTC offset
 * changes, as the callbacks of cron.c (seconds since 1970) and
 * apps_periods.c (TimestampTz) want it; their arg is the pg_tz.
 */
extern pg_tz *CoordZoneArg(const char *name, char **canonical);
extern bool CoordZoneLookup(const char *name, pg_tz **zone, char **canonical);
extern bool CoordZoneNextChangeUnix(void *arg, int64_t t, int64_t *when,
									int32_t *off_at_t, int32_t *off_after);
extern bool CoordZoneNextChangeTs(void *arg, int64_t t, int64_t *when,
								  int32_t *off_at_t, int32_t *off_after);

/* Paths and name keys (common_args.c) */
extern void CoordParsePath(text *path_text, CoordPath *out);
extern uint64 CoordNameKey(const char *name, int len);

/* Lock-manager helpers shared by locks, requests and jobs (common_lock.c) */
extern void CoordSetTag(LOCKTAG *tag, uint64 key, uint16 ns);
extern bool CoordAcquire(const LOCKTAG *tags, const LOCKMODE *modes, int n,
						 bool session, int64 timeout_us, bool keep_inflight);
extern void CoordInflightDone(void);
extern void CoordLockBudget(int nnew);
extern void CoordLockCounted(const LOCKTAG *tag, LockAcquireResult r, bool session);
extern bool CoordLockRoom(int nnew);
extern LockAcquireResult CoordLockTake(const LOCKTAG *tag, LOCKMODE mode, bool session, bool dontWait);
extern void CoordLockLetGo(const LOCKTAG *tag, LOCKMODE mode, bool session);
extern void CoordReleaseTags(const LOCKTAG *tags, const LOCKMODE *modes, int n, bool session);
extern const char *CoordModeName(LOCKMODE mode);
extern Datum CoordLockStatus(FunctionCallInfo fcinfo, uint16 ns);
extern bool CoordBackendAlive(int pid, TimestampTz started);

/* Session locks kept across transactions, taken and let go transactionally (common_lock.c) */
typedef enum CoordHoldStatus
{
	HOLD_NONE,
	HOLD_ACTIVE,
	HOLD_RELEASING
} CoordHoldStatus;
extern bool CoordHoldsAny(void);
extern void CoordHoldTaken(const char *key, const LOCKTAG *tag);
extern void CoordHoldRelease(const char *key);
extern void CoordHoldKeep(const char *key);
extern void CoordHoldDrop(const char *key);
extern CoordHoldStatus CoordHoldState(const char *key);

/*
 * Running SPI as the owner of schema coord, so tables need no grants to
 * callers (common_spi.c).  Every statement run as the owner runs between
 * CoordSpiBegin and CoordSpiEnd (SPI_connect and the owner switch; undone
 * in the reverse order).  An error in between needs no CoordSpiEnd:
 * (sub)transaction abort restores the user and search_path and closes the
 * SPI connection.  What must outlive CoordSpiEnd is copied into the
 * caller's memory first (CoordSpiText, SPI_palloc).  CoordBecomeOwner and
 * CoordRestoreUser are the switch alone, for the pair: test/static/
 * spi_style.py refuses them, and hand-paired SPI, anywhere else.
 *
 * SPI as the caller, without the switch: CoordSpiConnectAsCaller and
 * CoordSpiFinishAsCaller, only where running as the owner would be wrong
 * or is already so.  Two callers: the claim's group probe (GroupFree in
 * jobs_claim.c, called from coord.claim_free inside the claim's statement,
 * which already runs as the owner with search_path pinned), and
 * coord.cron_install (tick.c), whose pg_cron job must belong to the
 * caller.  spi_style.py accepts them in those two functions only.
 *
 * SPI errors, in one style.  A statement's own errors (a unique violation,
 * a cancel, a lock timeout) are raised by PostgreSQL as they are.  A result
 * code other than the one an SPI call must return cannot happen: every
 * call's code goes through CoordSpiCheck(rc, expected, what), or
 * CoordSpiError(rc, what) where the call returns no code of its own
 * (SPI_prepare's NULL), which raise elog(ERROR) (XX000) "<what> failed:
 * <SPI_result_code_string>".  what names the step in words ("reading
 * coord.lock_names"), or the SPI call.
 */
extern void CoordSpiBegin(CoordUserSwitch *sw);
extern void CoordSpiEnd(const CoordUserSwitch *sw);
extern void CoordSpiConnectAsCaller(void);
extern void CoordSpiFinishAsCaller(void);
extern void CoordSpiCheck(int rc, int expected, const char *what);

/* 18 replaced pg_attribute_noreturn() (after) by pg_noreturn (before) */
#ifdef pg_noreturn
pg_noreturn extern void CoordSpiError(int rc, const char *what);
#else
extern void CoordSpiError(int rc, const char *what) pg_attribute_noreturn();
#endif
extern Oid	CoordOwnerId(void);
extern Oid	CoordAdminRoleId(void);
extern void CoordBecomeOwner(CoordUserSwitch *sw);
extern void CoordRestoreUser(const CoordUserSwitch *sw);
extern SPIPlanPtr CoordPlan(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes);
extern int	CoordPlanGeneration(SPIPlanPtr plan);

/*
 * A statement in one call: plan (once), execute, check the result code,
 * return SPI_processed (common_spi.c says which runs how).  Every statement
 * is one of these calls; spi_style.py refuses SPI_execute* anywhere else.
 */
extern uint64 CoordExec(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
						Datum *args, const char *nulls, int expected, const char *what);
extern uint64 CoordExecLimit(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
							 Datum *args, const char *nulls, long tcount, int expected,
							 const char *what);
extern uint64 CoordExecReadOnly(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
								Datum *args, const char *nulls, long tcount, const char *what);
extern uint64 CoordExecLatest(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
							  Datum *args, const char *nulls, const char *what);
extern uint64 CoordExecPlan(SPIPlanPtr plan, Datum *args, const char *nulls, int expected,
							const char *what);
typedef void (*CoordRowFn) (HeapTuple row, TupleDesc desc, void *arg);
extern uint64 CoordExecEach(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
							Datum *args, const char *nulls, const char *what,
							CoordRowFn fn, void *arg);
extern text *CoordSpiText(const char *s);

/* One definition's work in a subtransaction of its own (common_spi.c) */
typedef void (*CoordIsolatedFn) (void *arg);
extern ErrorData *CoordIsolated(CoordIsolatedFn fn, void *arg);

/*
 * Backend-local caches, each in a memory context of its own under "pg_coord
 * caches", forgotten by resetting that context (common_spi.c).
 */
extern MemoryContext CoordCacheContext(MemoryContext *cxt, const char *name);
extern HTAB *CoordLocalHash(HTAB **table, const char *name, Size keysize, Size entrysize, int flags);
extern HTAB *CoordLocalHashIn(HTAB **table, MemoryContext cxt, const char *name,
							  Size keysize, Size entrysize, int flags);

/* The common family's parts of CoordCommonInit (common_lock.c, common_spi.c) */
extern void CoordCommonLockInit(void);
extern void CoordCommonSpiInit(void);

/*
 * Retention (tick.c): coord.tick purges what is dead and older than
 * coord.retention (seconds; 0 keeps everything), at most
 * COORD_PURGE_BATCH rows of a table per tick, so that a backlog drains over
 * several ticks.  Each share takes horizon (the tick's now, never later than
 * the real clock, less the retention) and returns how many rows it deleted.
 */
#define COORD_PURGE_BATCH	1000
extern int64 CoordPurge(SPIPlanPtr *slot, const char *sql, TimestampTz horizon, const char *what);
extern int	coord_retention;
extern void CoordTickInit(void);
extern int64 CoordLocksTick(TimestampTz horizon);	/* locks.c: names, fences */
extern int64 CoordLeasesTick(TimestampTz horizon);	/* leases.c */
extern int64 CoordElectionsTick(TimestampTz horizon);	/* election.c */

/* Is role a member of coord_admin (with its privileges), a superuser or the owner? */
extern bool CoordIsAdmin(Oid role);

#endif							/* PG_COORD_COMMON_H */
