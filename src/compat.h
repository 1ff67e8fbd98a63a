/*-------------------------------------------------------------------------
 * compat.h
 *		The server APIs whose signatures differ between the PostgreSQL
 *		majors pg_coord supports (15, 16, 17, 18), behind one name each.
 *
 * Every wrapper keeps 15's behaviour on every major: on 15 each expands to
 * the very call the code made before this header existed.  The 16 branches
 * are written from the 16 headers (no 16 server is tested here; see
 * README.md).  Include it after the headers of the calls it wraps.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_COMPAT_H
#define PG_COORD_COMPAT_H

#include "access/tableam.h"
#include "catalog/namespace.h"
#include "executor/executor.h"
#include "storage/lock.h"
#include "utils/backend_status.h"

#if PG_VERSION_NUM < 150000
#error "pg_coord needs PostgreSQL 15 or later"
#endif

/*
 * Is this exact lock mode held by this backend?  17 added "orstronger";
 * false keeps the exact-mode test.
 */
#if PG_VERSION_NUM >= 170000
#define CoordLockHeldByMe(tag, mode)	LockHeldByMe((tag), (mode), false)
#else
#define CoordLockHeldByMe(tag, mode)	LockHeldByMe((tag), (mode))
#endif

/*
 * This backend's number, 1 .. MaxBackends: unique among live backends
 * (17 renamed MyBackendId to MyProcNumber, counted from 0).
 */
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#define CoordMyBackendNumber()			((int32) MyProcNumber + 1)
#else
#include "storage/backendid.h"
#define CoordMyBackendNumber()			((int32) MyBackendId)
#endif

/*
 * The idx'th (1-based) entry of this backend's snapshot of backend status.
 * 17 renamed pgstat_fetch_stat_local_beentry; the indexing is unchanged.
 */
#if PG_VERSION_NUM >= 170000
#define CoordLocalBackendStatus(idx)	pgstat_get_local_beentry_by_index(idx)
#else
#define CoordLocalBackendStatus(idx)	pgstat_fetch_stat_local_beentry(idx)
#endif

/*
 * Does a cached plan's saved search_path match the current one?  17 renamed
 * OverrideSearchPath to SearchPathMatcher (CachedPlanSource.search_path
 * changed type with it).
 */
#if PG_VERSION_NUM >= 170000
#define CoordSearchPathMatches(sp)		SearchPathMatchesCurrentEnvironment(sp)
#else
#define CoordSearchPathMatches(sp)		OverrideSearchPathMatchesCurrent(sp)
#endif

/*
 * Which indexes need entries for a tuple: table_tuple_update's
 * update_indexes result, or COORD_INDEXES_ALL after table_tuple_insert.
 * 15 says yes or no (false after a HOT update); 16 made it an enum, with
 * TU_Summarizing for a HOT update that still needs entries in summarizing
 * (BRIN) indexes, and gave ExecInsertIndexTuples an onlySummarizing flag.
 *
 * CoordExecInsertIndexTuples inserts them with update = false, noDupErr =
 * false, no speculative insertion and no arbiter indexes.
 */
/*
 * The PGPROC of a lock holder GetLockConflicts answered (NULL: gone).  17
 * made a virtual transaction id carry the proc number instead of the
 * backend id.
 */
#if PG_VERSION_NUM >= 170000
#define CoordVxidProc(vxid)		GetPGProcByNumber((vxid).procNumber)
#else
#define CoordVxidProc(vxid)		BackendIdGetProc((vxid).backendId)
#endif

#if PG_VERSION_NUM >= 160000
typedef TU_UpdateIndexes CoordUpdateIndexes;
#define COORD_INDEXES_ALL				TU_All
#define CoordNeedsIndexTuples(u)		((u) != TU_None)
#define CoordExecInsertIndexTuples(rri, slot, estate, u) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, \
						  (u) == TU_Summarizing)
#else
typedef bool CoordUpdateIndexes;
#define COORD_INDEXES_ALL				true
#define CoordNeedsIndexTuples(u)		(u)
#define CoordExecInsertIndexTuples(rri, slot, estate, u) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

#endif							/* PG_COORD_COMPAT_H */
