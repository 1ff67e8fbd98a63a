/*-------------------------------------------------------------------------
 * common_spi.c
 *		Running SQL as the owner of schema coord (common family; see
 *		common.c): the owner's id and the check that the catalog is of the
 *		library's version, the owner switch, CoordSpiBegin/CoordSpiEnd,
 *		saved plans, statements run in one call (CoordExec and its kin,
 *		CoordPurge for a tick's purges),
 *		the one SPI error style, a definition's work in a
 *		subtransaction of its own, and the memory contexts of the
 *		backend-local caches.
 *
 * Protocol.  Every statement pg_coord runs as the owner goes between
 * CoordSpiBegin (SPI_connect, then the owner switch) and CoordSpiEnd (the
 * reverse).  The two statements that must run as the caller (common.h says
 * which and why) go between CoordSpiConnectAsCaller and
 * CoordSpiFinishAsCaller instead.  Nothing of the switch or the connection
 * survives an abort; what is per backend does.
 *
 * Why the switch needs no grants and no trust in the caller's search_path,
 * and what survives an abort: src/common/README.md, "Running SQL as the
 * owner (common_spi.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "common/common.h"
#include "compat.h"

/* The owner of schema coord, looked up once per backend (CoordOwnerId). */
static Oid	owner_cache = InvalidOid;

/*
 * Any change to pg_namespace (ALTER SCHEMA OWNER, DROP EXTENSION) or to
 * pg_proc (ALTER EXTENSION UPDATE re-creates functions) forgets it, and with
 * it the catalog version check.
 */
static void
OwnerCacheInval(Datum arg, int cacheid, uint32 hashvalue)
{
	owner_cache = InvalidOid;
}

/* The OID of role coord_admin (InvalidOid: none), looked up once per backend. */
static Oid	admin_role = InvalidOid;
static bool admin_role_valid = false;

/* Any change to pg_authid (CREATE, DROP, ALTER ROLE ... RENAME) forgets it. */
static void
AdminRoleInval(Datum arg, int cacheid, uint32 hashvalue)
{
	admin_role_valid = false;
}

/*
 * CoordAdminRoleId returns the OID of role coord_admin, or InvalidOid when
 * there is none.  Completions, failures and heartbeats ask on every call.
 */
Oid
CoordAdminRoleId(void)
{
	if (!admin_role_valid)
	{
		admin_role = get_role_oid("coord_admin", true);
		admin_role_valid = true;
	}
	return admin_role;
}

/*
 * CoordIsAdmin: may role do what coord_admin may (the larger per-call caps,
 * coord.drop_group)?  A member of coord_admin with its privileges, a
 * superuser, or the extension owner.
 */
bool
CoordIsAdmin(Oid role)
{
	Oid			admin;

	if (superuser_arg(role) || role == CoordOwnerId())
		return true;
	admin = CoordAdminRoleId();
	return OidIsValid(admin) && has_privs_of_role(role, admin);
}

/* "a.b.c" -> a * 1000000 + b * 1000 + c; -1 when it is not of that form */
static int64
VersionNumber(const char *v)
{
	int			a,
				b,
				c;
	char		rest;

	if (sscanf(v, "%d.%d.%d%c", &a, &b, &c, &rest) != 3 || a < 0 || b < 0 || c < 0)
		return -1;
	return (int64) a * 1000000 + (int64) b * 1000 + c;
}

/*
 * CheckCatalogVersion makes sure that the pg_coord catalog of this database
 * is the one this library serves: the library's statements name the tables
 * and columns of its own version, and meeting another version's catalog
 * would give wrong results or cryptic errors (the library is shared by
 * every database of the installation, and `make install` of a new release
 * replaces it before anyone runs ALTER EXTENSION UPDATE).  Returns false,
 * and the caller caches nothing, while the extension's own script runs.
 */
static bool
CheckCatalogVersion(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *catalog = NULL;
	Oid			extoid = InvalidOid;
	int64		have,
				want;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("pg_coord"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		extoid = ((Form_pg_extension) GETSTRUCT(tup))->oid;
		if (!isnull)
			catalog = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (!OidIsValid(extoid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"pg_coord\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION pg_coord.")));
	/* CREATE or ALTER EXTENSION pg_coord: its script sets the catalog up */
	if (creating_extension && CurrentExtensionObject == extoid)
		return false;
	if (catalog != NULL && strcmp(catalog, COORD_VERSION) == 0)
		return true;

	have = catalog ? VersionNumber(catalog) : -1;
	want = VersionNumber(COORD_VERSION);
	if (have >= 0 && have < want)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_coord's catalog in this database is at version %s, but the installed library is version %s",
						catalog, COORD_VERSION),
				 errdetail("The library serves only the catalog of its own version."),
				 errhint("Run ALTER EXTENSION pg_coord UPDATE.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("pg_coord's catalog in this database is at version %s, but the installed library is version %s",
					catalog ? catalog : "(none)", COORD_VERSION),
			 errdetail("The library serves only the catalog of its own version; this catalog is newer."),
			 errhint("Install the library of pg_coord %s (make install of that release) and reconnect.",
					 catalog ? catalog : "(none)")));
	return false;				/* not reached */
}

/*
 * CoordOwnerId returns the owner of schema coord, which the install script
 * creates, so it is the role that installed the extension.  Cached until
 * pg_namespace or pg_proc changes: every call of every function asks.  The
 * first lookup also checks that the catalog is of the library's version
 * (CheckCatalogVersion), so a library never serves a catalog it cannot.
 */
Oid
CoordOwnerId(void)
{
	Oid			nspid;
	HeapTuple	tup;
	Oid			owner;
	bool		cache;

	if (OidIsValid(owner_cache))
		return owner_cache;
	cache = CheckCatalogVersion();
	nspid = get_namespace_oid(COORD_SCHEMA, true);

	if (!OidIsValid(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema \"%s\" does not exist", COORD_SCHEMA),
				 errhint("Run CREATE EXTENSION pg_coord in this database.")));
	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nspid);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	if (cache)
		owner_cache = owner;
	return owner;
}

/*
 * CoordBecomeOwner switches to the extension owner for SPI work: the one
 * owner switch, which every statement pg_coord runs as the owner goes
 * through.  Three things change together:
 *
 * - the user becomes the owner of schema coord;
 * - SECURITY_RESTRICTED_OPERATION keeps the owner's rights from being used
 *   for anything but our own statements (no SET ROLE, no temp objects);
 * - search_path is pinned to "pg_catalog, pg_temp" in a GUC nest level of
 *   its own, as a function's SET clause would do.  Without it, a name in
 *   statement text would be resolved through the caller's search_path, and
 *   the caller's temporary schema is searched first for types and
 *   relations: a temporary domain named "jsonb" whose CHECK calls the
 *   caller's function would run that function as the owner.  pg_temp is
 *   named last so that it cannot come first.  Statement texts also name
 *   every object with its schema (test/static/qualified.py checks it).
 *
 * CoordRestoreUser undoes all three.  An error undoes them through
 * (sub)transaction abort, which restores the user id and pops GUC nest
 * levels.  A nested switch (a finish hook inside a completion) finds the
 * path pinned already and leaves the GUC alone: setting it costs a
 * recomputation of the namespace search path on each side.
 */
void
CoordBecomeOwner(CoordUserSwitch *sw)
{
	GetUserIdAndSecContext(&sw->save_userid, &sw->save_sec_context);
	SetUserIdAndSecContext(CoordOwnerId(),
						   sw->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (namespace_search_path != NULL &&
		strcmp(namespace_search_path, COORD_OWNER_SEARCH_PATH) == 0)
		sw->save_nestlevel = 0;
	else
	{
		sw->save_nestlevel = NewGUCNestLevel();
		(void) set_config_option("search_path", COORD_OWNER_SEARCH_PATH,
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
}

void
CoordRestoreUser(const CoordUserSwitch *sw)
{
	if (sw->save_nestlevel > 0)
		AtEOXact_GUC(true, sw->save_nestlevel);
	SetUserIdAndSecContext(sw->save_userid, sw->save_sec_context);
}

/*
 * CoordSpiBegin connects to SPI and switches to the owner; CoordSpiEnd
 * switches back and disconnects.  Every statement pg_coord runs as the
 * owner goes between them (see common.h).
 */
void
CoordSpiBegin(CoordUserSwitch *sw)
{
	CoordSpiCheck(SPI_connect(), SPI_OK_CONNECT, "SPI_connect");
	CoordBecomeOwner(sw);
}

void
CoordSpiEnd(const CoordUserSwitch *sw)
{
	CoordRestoreUser(sw);
	CoordSpiCheck(SPI_finish(), SPI_OK_FINISH, "SPI_finish");
}

/*
 * CoordSpiConnectAsCaller and CoordSpiFinishAsCaller: SPI without the owner
 * switch, for the few statements that must run as whoever is current (see
 * common.h for who and why).  The same error style as the pair above.
 */
void
CoordSpiConnectAsCaller(void)
{
	CoordSpiCheck(SPI_connect(), SPI_OK_CONNECT, "SPI_connect");
}

void
CoordSpiFinishAsCaller(void)
{
	CoordSpiCheck(SPI_finish(), SPI_OK_FINISH, "SPI_finish");
}

/*
 * CoordSpiText copies a C string into a text in the caller's memory, which
 * outlives CoordSpiEnd.  Call it inside SPI.
 */
text *
CoordSpiText(const char *s)
{
	Size		len = strlen(s);
	text	   *t = (text *) SPI_palloc(VARHDRSZ + len);

	SET_VARSIZE(t, VARHDRSZ + len);
	memcpy(VARDATA(t), s, len);
	return t;
}

/*
 * Backend-local caches.  Each lives in a memory context of its own under
 * "pg_coord caches" (visible in pg_backend_memory_contexts), so that a
 * cache is forgotten by resetting its context, never by freeing pieces, and
 * nothing of pg_coord's is allocated in TopMemoryContext directly.
 */
static MemoryContext cache_parent = NULL;

/*
 * CoordCacheContext returns the context *cxt, made on first use as a child
 * of "pg_coord caches"; NULL cxt: that parent itself.  name must be a
 * string constant (contexts keep the pointer).  Reset the context to forget
 * what the cache holds.
 */
MemoryContext
CoordCacheContext(MemoryContext *cxt, const char *name)
{
	if (cache_parent == NULL)
		cache_parent = AllocSetContextCreate(TopMemoryContext, "pg_coord caches",
											 ALLOCSET_SMALL_SIZES);
	if (cxt == NULL)
		return cache_parent;
	if (*cxt == NULL)
		*cxt = AllocSetContextCreateInternal(cache_parent, name, ALLOCSET_SMALL_SIZES);
	return *cxt;
}

/*
 * CoordLocalHashIn makes a backend-local hash table in cxt on first use
 * (dynahash gives it a context of its own below cxt, so resetting cxt
 * destroys it: set *table to NULL then).  flags: HASH_BLOBS or HASH_STRINGS.
 */
HTAB *
CoordLocalHashIn(HTAB **table, MemoryContext cxt, const char *name, Size keysize,
				 Size entrysize, int flags)
{
	if (*table == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = keysize;
		ctl.entrysize = entrysize;
		ctl.hcxt = cxt;
		*table = hash_create(name, 16, &ctl, HASH_ELEM | HASH_CONTEXT | flags);
	}
	return *table;
}

/* CoordLocalHash: a cache whose entries hold no pointers, under "pg_coord caches". */
HTAB *
CoordLocalHash(HTAB **table, const char *name, Size keysize, Size entrysize, int flags)
{
	if (*table != NULL)
		return *table;
	return CoordLocalHashIn(table, CoordCacheContext(NULL, NULL), name, keysize, entrysize, flags);
}

/*
 * CoordPlan returns the saved plan in *slot, preparing and keeping it on
 * first use.  Must be called inside SPI.  Saved plans
 * are revalidated by the plan cache after DDL, so they survive a DROP and
 * CREATE EXTENSION in the same backend.
 */
SPIPlanPtr
CoordPlan(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes)
{
	if (*slot == NULL)
	{
		/*
		 * Generic plans only: every statement here is a short index lookup
		 * whose plan does not depend on its parameters, and a custom plan
		 * would be planned anew on every call.
		 */
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, (Oid *) argtypes, CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			CoordSpiError(SPI_result, psprintf("SPI_prepare of \"%s\"", sql));
		CoordSpiCheck(SPI_keepplan(plan), 0, "SPI_keepplan");
		*slot = plan;
	}
	return *slot;
}

/*
 * CoordPlanGeneration returns the generation of a saved plan's generic plan
 * when the next execution will use it as it is, or -1 when it will plan
 * first (not planned yet, invalidated, transient, or made for another
 * search_path or role).  Callers that steer planning with settings set them
 * only then, and compare generations after the execution to catch a replan
 * that an invalidation arriving in between caused.
 */
int
CoordPlanGeneration(SPIPlanPtr plan)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);
	CachedPlanSource *ps;

	if (list_length(sources) != 1)
		return -1;
	ps = (CachedPlanSource *) linitial(sources);
	if (!ps->is_valid || ps->gplan == NULL || !ps->gplan->is_valid ||
		TransactionIdIsValid(ps->gplan->saved_xmin) ||
		(ps->search_path != NULL && !CoordSearchPathMatches(ps->search_path)) ||
		(ps->gplan->dependsOnRole && ps->gplan->planRoleId != GetUserId()))
		return -1;
	return ps->generation;
}

/*
 * One statement, one call.  CoordExec runs the saved plan in *slot
 * (CoordPlan: prepared from sql, nargs and argtypes on first use) with args
 * and nulls, raises CoordSpiCheck's error naming what unless SPI returned
 * expected, and returns SPI_processed; SPI_tuptable holds the rows, as
 * after any SPI call.  Callers that need no count ignore it.
 *
 * CoordExecLimit stops after tcount rows (0: all of them).
 * CoordExecReadOnly runs a SELECT with SPI's read_only: no
 * CommandCounterIncrement and no new snapshot, the calling statement's, as
 * a statement run from inside another's scan (coord.claim_free within the
 * claim) or from a STABLE function must.  CoordExecPlan runs a plan the
 * caller prepared itself (the claim's steered plans, statements whose text
 * is built once).
 */
static inline uint64
Exec(SPIPlanPtr plan, Datum *args, const char *nulls, bool read_only, long tcount,
	 int expected, const char *what)
{
	CoordSpiCheck(SPI_execute_plan(plan, args, nulls, read_only, tcount), expected, what);
	return SPI_processed;
}

uint64
CoordExec(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
		  Datum *args, const char *nulls, int expected, const char *what)
{
	return Exec(CoordPlan(slot, sql, nargs, argtypes), args, nulls, false, 0, expected, what);
}

uint64
CoordExecLimit(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
			   Datum *args, const char *nulls, long tcount, int expected, const char *what)
{
	return Exec(CoordPlan(slot, sql, nargs, argtypes), args, nulls, false, tcount, expected, what);
}

uint64
CoordExecReadOnly(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
				  Datum *args, const char *nulls, long tcount, const char *what)
{
	return Exec(CoordPlan(slot, sql, nargs, argtypes), args, nulls, true, tcount, SPI_OK_SELECT, what);
}

/*
 * CoordExecLatest runs a SELECT under the latest snapshot rather than the
 * transaction's: a check made after taking a lock must see every commit of
 * the lock's earlier holders, also under REPEATABLE READ.  The calling
 * transaction's own changes up to the last command counter increment count.
 */
uint64
CoordExecLatest(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
				Datum *args, const char *nulls, const char *what)
{
	SPIPlanPtr	plan = CoordPlan(slot, sql, nargs, argtypes);

	CoordSpiCheck(SPI_execute_snapshot(plan, args, nulls, GetLatestSnapshot(), InvalidSnapshot,
									   true, false, 0),
				  SPI_OK_SELECT, what);
	return SPI_processed;
}

uint64
CoordExecPlan(SPIPlanPtr plan, Datum *args, const char *nulls, int expected, const char *what)
{
	return Exec(plan, args, nulls, false, 0, expected, what);
}

/*
 * CoordExecEach: the "select rows, then act on each" loops.  Runs a SELECT
 * as CoordExec does, then fn(row, desc, arg) on each row in order, checking
 * for interrupts before each, and returns how many rows there were.  fn may
 * run statements of its own, in a subtransaction too (CoordIsolated): the
 * rows stay valid meanwhile, since SPI frees a result only on
 * SPI_freetuptable, at the end of the subtransaction that made it, or at
 * SPI_finish.
 */
/*
 * CoordPurge: one statement of a tick's share (common.h, "Retention"), a
 * DELETE whose $1 is the share's time (its horizon) and $2
 * COORD_PURGE_BATCH (its candidates' LIMIT); returns how many rows it
 * deleted.
 */
int64
CoordPurge(SPIPlanPtr *slot, const char *sql, TimestampTz horizon, const char *what)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Datum		args[2];

	args[0] = TimestampTzGetDatum(horizon);
	args[1] = Int32GetDatum(COORD_PURGE_BATCH);
	return (int64) CoordExec(slot, sql, 2, argtypes, args, NULL, SPI_OK_DELETE, what);
}

uint64
CoordExecEach(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
			  Datum *args, const char *nulls, const char *what, CoordRowFn fn, void *arg)
{
	uint64		n = CoordExec(slot, sql, nargs, argtypes, args, nulls, SPI_OK_SELECT, what);
	SPITupleTable *tt = SPI_tuptable;

	for (uint64 i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		fn(tt->vals[i], tt->tupdesc, arg);
	}
	return n;
}

/*
 * CoordSpiCheck raises a can't-happen error when an SPI call did not return
 * what it must; CoordSpiError raises it for result code rc.  The one style
 * of SPI errors (common.h).
 */
void
CoordSpiCheck(int rc, int expected, const char *what)
{
	if (unlikely(rc != expected))
		CoordSpiError(rc, what);
}

void
CoordSpiError(int rc, const char *what)
{
	elog(ERROR, "%s failed: %s", what, SPI_result_code_string(rc));
	pg_unreachable();
}

/*
 * CoordIsolated runs fn(arg) in a subtransaction, so that one broken
 * definition (an app, a schedule) cannot stop the work of the others in a
 * tick, nor the completion of the job whose finish hook reached it.  Returns
 * NULL when fn succeeded; otherwise its error, copied into the caller's
 * memory context, after rolling the subtransaction back.
 *
 * Call it inside SPI and the owner switch: the subtransaction starts as the
 * owner with search_path pinned, and its abort restores exactly that (the
 * user id saved at its start, the GUC nest levels from its own up), while
 * the SPI connection survives (AtEOSubXact_SPI frees only what the
 * subtransaction made).  Errors that are not the definition's fault are
 * raised again after the rollback, so a cancel, statement_timeout or
 * shutdown still ends the call, and a deadlock, serialization failure, lock
 * timeout or exhausted resource still fails it (the caller retries later):
 * SQLSTATE classes 40, 53, 57 and 58, and 55P03.
 */
ErrorData *
CoordIsolated(CoordIsolatedFn fn, void *arg)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;
	Oid			userid;
	int			sec_context;
	bool		pinned;

	pinned = namespace_search_path != NULL &&
		strcmp(namespace_search_path, COORD_OWNER_SEARCH_PATH) == 0;
	GetUserIdAndSecContext(&userid, &sec_context);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	if (edata != NULL)
	{
		int			category = ERRCODE_TO_CATEGORY(edata->sqlerrcode);
		Oid			now_userid;
		int			now_sec_context;

		/* the rollback must have left the owner switch as it found it */
		GetUserIdAndSecContext(&now_userid, &now_sec_context);
		if (now_userid != userid || now_sec_context != sec_context ||
			(pinned && strcmp(namespace_search_path, COORD_OWNER_SEARCH_PATH) != 0))
			elog(ERROR, "the owner switch did not survive a subtransaction abort");

		if (category == ERRCODE_TRANSACTION_ROLLBACK ||
			category == ERRCODE_INSUFFICIENT_RESOURCES ||
			category == ERRCODE_OPERATOR_INTERVENTION ||
			category == ERRCODE_SYSTEM_ERROR ||
			edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
	}
	return edata;
}

/* CoordCommonInit's part: forgetting the owner's and coord_admin's OIDs */
void
CoordCommonSpiInit(void)
{
	CacheRegisterSyscacheCallback(NAMESPACEOID, OwnerCacheInval, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, OwnerCacheInval, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, AdminRoleInval, (Datum) 0);
}
