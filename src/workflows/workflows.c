/*-------------------------------------------------------------------------
 * workflows.c
 *		Job dependencies (docs/workflows.md): enqueue's after and
 *		on_parent_failure, the waiting state, coord.parent_results and
 *		coord.enqueue_flow.
 *
 * The queue (src/jobs/) keeps a waiting job in coord.job_wait and asks this
 * file, through the wait hooks of jobs.h, how many of its parents have not
 * ended (resolve), records the edges (link), and tells it of every job with
 * deps set that finishes (finished).  The protocol -- which lock makes a
 * child ready exactly once, why waiting jobs cost claims nothing, how a
 * cancel cascades without recursion -- is src/workflows/README.md.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "common/common.h"
#include "jobs/jobs.h"
#include "workflows/workflows.h"

#define RESOLVE_ROUNDS	5		/* a parent moving between tables meanwhile */
#define FLOW_NODES_MAX	10000	/* nodes of one coord.enqueue_flow */
#define EDGES_MAX		1000000 /* edges one enqueue may add */
#define FLOW_NAME_MAX	200

static SPIPlanPtr plan_mark_live = NULL;
static SPIPlanPtr plan_mark_wait = NULL;
static SPIPlanPtr plan_lock_live = NULL;
static SPIPlanPtr plan_lock_wait = NULL;
static SPIPlanPtr plan_ended = NULL;
static SPIPlanPtr plan_link = NULL;
static SPIPlanPtr plan_link_live = NULL;
static SPIPlanPtr plan_link_one = NULL;
static SPIPlanPtr plan_unlink = NULL;
static SPIPlanPtr plan_count_down = NULL;
static SPIPlanPtr plan_parents = NULL;
static SPIPlanPtr plan_flow_nodes = NULL;
static SPIPlanPtr plan_flow_keys = NULL;
static SPIPlanPtr plan_flow_enqueue = NULL;
static SPIPlanPtr plan_flow_result = NULL;

PG_FUNCTION_INFO_V1(coord_parent_results);
PG_FUNCTION_INFO_V1(coord_enqueue_flow);

static Datum
IdArray(const int64 *ids, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = Int64GetDatum(ids[i]);
	return PointerGetDatum(construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* The ids of an SPI result's first column, into ids (n of them). */
static int
TakeIds(int64 *ids)
{
	uint64		i;

	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	return (int) SPI_processed;
}

/* Removes from rest (sorted) the ids in found (any order); returns the new count. */
static int
Subtract(int64 *rest, int n, int64 *found, int nfound)
{
	int			i;
	int			k = 0;

	if (nfound == 0)
		return n;
	qsort(found, nfound, sizeof(int64), CoordCmpInt64);
	for (i = 0; i < n; i++)
		if (bsearch(&rest[i], found, nfound, sizeof(int64), CoordCmpInt64) == NULL)
			rest[k++] = rest[i];
	return k;
}

/* ---------- the wait hooks ---------- */

/*
 * Steer: the statements here read a few rows by key out of tables that grow
 * and shrink with the work (coord.job_dep, coord.job_wait).  A plan cached
 * while such a table was small would scan all of it ever after (a flow of
 * 8,000 nodes took 12.6 s instead of 2.7 s, a cascade grew with the square
 * of its length): while this file's statements may be planned, sequential,
 * bitmap scans, hash and merge joins are off, so the plans use the indexes.
 */
static int
SteerBegin(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

static void
SteerEnd(int nest)
{
	AtEOXact_GUC(true, nest);
}

/*
 * SteeredExec: CoordExec with the settings of SteerBegin in force only when
 * the plan cache is about to plan (CoordPlanGeneration, as the claim does):
 * setting and resetting four settings cost an enqueue with after a tenth of
 * its instructions.  A plan made anew without them (an invalidation came in
 * between) is dropped, so that the next call prepares and steers it.
 */
static uint64
SteeredExec(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
			Datum *args, const char *nulls, int expected, const char *what)
{
	SPIPlanPtr	plan = CoordPlan(slot, sql, nargs, argtypes);
	int			generation = CoordPlanGeneration(plan);
	uint64		n;

	if (generation < 0)
	{
		int			nest = SteerBegin();

		n = CoordExecPlan(plan, args, nulls, expected, what);
		SteerEnd(nest);
	}
	else
	{
		n = CoordExecPlan(plan, args, nulls, expected, what);
		if (CoordPlanGeneration(plan) != generation)
		{
			CoordSpiCheck(SPI_freeplan(plan), 0, "SPI_freeplan");
			*slot = NULL;
		}
	}
	return n;
}


/*
 * The parents (args[0]) that are in coord.job (live) or coord.job_wait:
 * locked FOR KEY SHARE, and those not yet marked COORD_DEPS_PARENT marked
 * (an update, for a parent's first child only).  Their ids go to found;
 * returns how many.
 */
static int
LockParents(SPIPlanPtr *lock, SPIPlanPtr *mark, bool live, Datum *args, int64 *found)
{
	Oid			argtypes[1] = {INT8ARRAYOID};
	int64	   *unmarked;
	int			nu = 0;
	int			n;
	uint64		i;

	if (live)
		SteeredExec(lock,
					"SELECT id, (deps OPERATOR(pg_catalog.&) 1::pg_catalog.int2) OPERATOR(pg_catalog.<>) 0 "
					"FROM coord.job WHERE id OPERATOR(pg_catalog.=) ANY ($1) FOR KEY SHARE",
					1, argtypes, args, NULL, SPI_OK_SELECT, "locking parents");
	else
		SteeredExec(lock,
					"SELECT id, (deps OPERATOR(pg_catalog.&) 1::pg_catalog.int2) OPERATOR(pg_catalog.<>) 0 "
					"FROM coord.job_wait WHERE id OPERATOR(pg_catalog.=) ANY ($1) FOR KEY SHARE",
					1, argtypes, args, NULL, SPI_OK_SELECT, "locking parents");
	n = (int) SPI_processed;
	unmarked = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		found[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull)))
			unmarked[nu++] = found[i];
	}
	if (nu > 0)
	{
		Datum		margs[1];

		margs[0] = IdArray(unmarked, nu);
		if (live)
			SteeredExec(mark,
						"UPDATE coord.job SET deps = deps OPERATOR(pg_catalog.|) 1::pg_catalog.int2 "
						"WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
						1, argtypes, margs, NULL, SPI_OK_UPDATE, "marking parents");
		else
			SteeredExec(mark,
						"UPDATE coord.job_wait SET deps = deps OPERATOR(pg_catalog.|) 1::pg_catalog.int2 "
						"WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
						1, argtypes, margs, NULL, SPI_OK_UPDATE, "marking parents");
	}
	return n;
}

/*
 * resolve: parents (sorted, distinct) of a job being enqueued.  A live
 * parent (coord.job) or a waiting one (coord.job_wait) is locked -- FOR KEY
 * SHARE, which a claim's or heartbeat's update does not wait for, but the
 * DELETE that finishes or releases it does -- and marked COORD_DEPS_PARENT
 * (the first child only: an update), so its finish, which must wait for
 * this transaction, then sees the child and its edge.  One not found in
 * either has ended: the history says how.  A parent that moved between the
 * tables while the statements ran is looked for again (each statement sees
 * the commits before it).  Returns how many have not ended.
 */
static bool resolved_all_live = false;	/* the last resolve found no ended
										 * parent */

static int32
WaitResolve(const int64 *parents, int n, bool *failed)
{
	Oid			argtypes[1] = {INT8ARRAYOID};
	Datum		args[1];
	int64	   *rest = palloc(sizeof(int64) * n);
	int64	   *found = palloc(sizeof(int64) * n);
	int			nrest = n;
	int32		pending = 0;
	int			round;

	memcpy(rest, parents, sizeof(int64) * n);
	*failed = false;
	for (round = 0; round < RESOLVE_ROUNDS && nrest > 0; round++)
	{
		uint64		i;
		int			nf;

		args[0] = IdArray(rest, nrest);
		nf = LockParents(&plan_lock_live, &plan_mark_live, true, args, found);
		pending += nf;
		nrest = Subtract(rest, nrest, found, nf);
		if (nrest == 0)
			break;

		args[0] = IdArray(rest, nrest);
		nf = LockParents(&plan_lock_wait, &plan_mark_wait, false, args, found);
		pending += nf;
		nrest = Subtract(rest, nrest, found, nf);
		if (nrest == 0)
			break;

		args[0] = IdArray(rest, nrest);
		SteeredExec(&plan_ended,
					"SELECT id, state OPERATOR(pg_catalog.<>) 'done' FROM coord.job_history "
					"WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
					1, argtypes, args, NULL, SPI_OK_SELECT, "finding ended parents");
		for (i = 0; i < SPI_processed; i++)
		{
			bool		isnull;

			if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull)))
				*failed = true;
		}
		nf = TakeIds(found);
		nrest = Subtract(rest, nrest, found, nf);
		CHECK_FOR_INTERRUPTS();
	}
	resolved_all_live = (pending == n);
	if (nrest > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("job %lld does not exist", (long long) rest[0]),
				 errdetail("Every job in after must exist (live, waiting, or finished and not yet purged).")));
	return pending;
}

/*
 * link: an edge from each parent to each new job; ended already for a
 * parent in the history (resolve holds the others: none ends meanwhile).
 */
static void
WaitLink(const int64 *parents, int n, const int64 *ids, int nids)
{
	Oid			argtypes[2] = {INT8ARRAYOID, INT8ARRAYOID};
	Datum		args[2];

	if ((int64) n * nids > EDGES_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many dependencies in one enqueue"),
				 errdetail("Jobs times parents is %lld; at most %d edges are added at once.",
						   (long long) n * nids, EDGES_MAX),
				 errhint("Enqueue the jobs in several calls.")));
	if (n == 1 && nids == 1)
	{
		/*
		 * The common case, one parent and one job: a plain VALUES.  The
		 * parent has ended unless resolve found it live or waiting.
		 */
		Oid			types1[3] = {INT8OID, INT8OID, BOOLOID};
		Datum		args1[3];

		args1[0] = Int64GetDatum(parents[0]);
		args1[1] = Int64GetDatum(ids[0]);
		args1[2] = BoolGetDatum(!resolved_all_live);
		CoordExec(&plan_link_one,
				  "INSERT INTO coord.job_dep (parent, child, ended) VALUES ($1, $2, $3)",
				  3, types1, args1, NULL, SPI_OK_INSERT, "recording dependencies");
		return;
	}
	args[0] = IdArray(parents, n);
	args[1] = IdArray(ids, nids);
	if (resolved_all_live)
		SteeredExec(&plan_link_live,
					"INSERT INTO coord.job_dep (parent, child) "
					"SELECT p, c FROM pg_catalog.unnest($1) AS p, pg_catalog.unnest($2) AS c",
					2, argtypes, args, NULL, SPI_OK_INSERT, "recording dependencies");
	else
		SteeredExec(&plan_link,
					"INSERT INTO coord.job_dep (parent, child, ended) "
					"SELECT p, c, EXISTS (SELECT 1 FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) p) "
					"FROM pg_catalog.unnest($1) AS p, pg_catalog.unnest($2) AS c",
					2, argtypes, args, NULL, SPI_OK_INSERT, "recording dependencies");
}

/*
 * finished: a job with deps ended.  Jobs that end while this runs (the
 * children it cancels) are queued and handled by the loop of the outermost
 * call, a round per generation, so a chain of any length needs no stack;
 * each edge is counted down once (its ended flag), so the whole cascade is
 * linear in the edges.
 */
typedef struct Ended
{
	int64		id;
	bool		failed;
	int16		deps;
} Ended;

static Ended *ended = NULL;		/* in TopTransactionContext */
static int	nended = 0;
static int	ended_cap = 0;
static bool in_cascade = false;

static void
PushEnded(int64 id, bool failed, int16 deps)
{
	if (nended == ended_cap)
	{
		int			cap = Max(16, ended_cap * 2);

		ended = ended ? repalloc(ended, sizeof(Ended) * cap)
			: MemoryContextAlloc(TopTransactionContext, sizeof(Ended) * cap);
		ended_cap = cap;
	}
	ended[nended].id = id;
	ended[nended].failed = failed;
	ended[nended].deps = deps;
	nended++;
}

/* One generation: the edges of the jobs that ended. */
static void
CascadeRound(Ended *batch, int n)
{
	Oid			argtypes[2] = {INT8ARRAYOID, BOOLARRAYOID};
	Datum		args[2];
	int64	   *ids = palloc(sizeof(int64) * n);
	Datum	   *fl = palloc(sizeof(Datum) * n);
	int64	   *children = palloc(sizeof(int64) * n);
	int64	   *ready;
	int64	   *cancel;
	int			nready = 0;
	int			ncancel = 0;
	int			np = 0;
	int			nc = 0;
	int			i;
	uint64		r;

	for (i = 0; i < n; i++)
	{
		if (batch[i].deps & COORD_DEPS_CHILD)
			children[nc++] = batch[i].id;
		if (batch[i].deps & COORD_DEPS_PARENT)
		{
			ids[np] = batch[i].id;
			fl[np] = BoolGetDatum(batch[i].failed);
			np++;
		}
	}
	if (nc > 0)
	{
		args[0] = IdArray(children, nc);
		CoordExec(&plan_unlink,
				  "DELETE FROM coord.job_dep WHERE child OPERATOR(pg_catalog.=) ANY ($1)",
				  1, argtypes, args, NULL, SPI_OK_DELETE, "dropping a finished job's dependencies");
	}
	if (np == 0)
		return;

	/*
	 * One statement for every child of the generation: the edges end, and
	 * each waiting child counts down by its ended edges.  Two parents of one
	 * child ending at once both update its coord.job_wait row: the second
	 * waits for the first and counts down from the row the first committed
	 * (READ COMMITTED re-reads it), so exactly one of them sees zero.
	 */
	args[0] = IdArray(ids, np);
	args[1] = PointerGetDatum(construct_array(fl, np, BOOLOID, 1, true, TYPALIGN_CHAR));
	CoordExec(&plan_count_down,
			  "WITH e AS (UPDATE coord.job_dep AS d SET ended = true "
			  "WHERE d.parent OPERATOR(pg_catalog.=) ANY ($1) AND NOT d.ended RETURNING d.child, d.parent), "
			  "x AS (SELECT e.child, pg_catalog.count(*)::pg_catalog.int4 AS n, pg_catalog.bool_or(p.failed) AS failed "
			  "FROM e JOIN ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS p(id, failed) "
			  "ON p.id OPERATOR(pg_catalog.=) e.parent GROUP BY e.child) "
			  "UPDATE coord.job_wait AS w SET pending = w.pending OPERATOR(pg_catalog.-) x.n "
			  "FROM x WHERE w.id OPERATOR(pg_catalog.=) x.child "
			  "RETURNING w.id, w.pending OPERATOR(pg_catalog.=) 0, "
			  "x.failed AND w.on_parent_failure OPERATOR(pg_catalog.=) 'cancel'",
			  2, argtypes, args, NULL, SPI_OK_UPDATE_RETURNING, "counting down waiting jobs");
	ready = palloc(sizeof(int64) * Max(SPI_processed, 1));
	cancel = palloc(sizeof(int64) * Max(SPI_processed, 1));
	for (r = 0; r < SPI_processed; r++)
	{
		HeapTuple	row = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull));

		if (DatumGetBool(SPI_getbinval(row, desc, 3, &isnull)))
			cancel[ncancel++] = id;
		else if (DatumGetBool(SPI_getbinval(row, desc, 2, &isnull)))
			ready[nready++] = id;
	}
	if (nready > 0)
		(void) CoordReleaseWaiting(IdArray(ready, nready));
	if (ncancel > 0)
		(void) CoordCancelWaiting(IdArray(cancel, ncancel), "a parent job ended dead or cancelled");
}

static void
WaitFinished(int64 id, const char *state, int16 deps)
{
	PushEnded(id, strcmp(state, "done") != 0, deps);
}

/*
 * The jobs one statement of the queue ended are handled at once (10,000
 * parents of one child completed together count it down in one update, not
 * 10,000 versions of its row); a call inside a cascade leaves them to the
 * cascade's loop.
 */
static void
WaitFinishedEnd(void)
{
	int			nest;

	if (in_cascade)
		return;
	in_cascade = true;
	nest = SteerBegin();
	PG_TRY();
	{
		while (nended > 0)
		{
			int			n = nended;
			Ended	   *batch = palloc(sizeof(Ended) * n);
			CoordUserSwitch sw;

			CHECK_FOR_INTERRUPTS();
			memcpy(batch, ended, sizeof(Ended) * n);
			nended = 0;

			/*
			 * A connection of its own per round (the owner already: the
			 * switch changes nothing): its SPI results and what it allocates
			 * go when the round ends.  A chain of 10,000 kept every round's
			 * result tables (one per statement, each a memory context with a
			 * copy of coord.job's descriptor) until the cascade's end, and
			 * spent most of its time faulting fresh pages in.
			 */
			CoordSpiBegin(&sw);
			CascadeRound(batch, n);
			CoordSpiEnd(&sw);
			pfree(batch);
		}
	}
	PG_FINALLY();
	{
		in_cascade = false;
		nended = 0;
	}
	PG_END_TRY();
	SteerEnd(nest);
}

/* TopTransactionContext goes at the end of every transaction */
static void
WorkflowsXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		ended = NULL;
		nended = 0;
		ended_cap = 0;
		in_cascade = false;
	}
}

static const CoordJobWaitHooks wait_hooks = {WaitResolve, WaitLink, WaitFinished, WaitFinishedEnd};

void
CoordWorkflowsInit(void)
{
	CoordRegisterJobWait(&wait_hooks);
	RegisterXactCallback(WorkflowsXactCallback, NULL);
}

/* ---------- coord.parent_results ---------- */

/*
 * coord.parent_results(id, token): the parents of a job whose claim (id,
 * token) is the caller's, with the state each ended in and its result.
 * Not the caller's claim (stale token, another role's): no rows, as
 * heartbeat answers NULL.
 */
Datum
coord_parent_results(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	int64		id;
	int64		token;
	uint64		r;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	id = PG_GETARG_INT64(0);
	token = PG_GETARG_INT64(1);
	InitMaterializedSRF(fcinfo, 0);
	CoordSpiBegin(&sw);
	if (CoordJobClaimAttempt(id, token, sw.save_userid, false) > 0)
	{
		int			nest = SteerBegin();

		args[0] = Int64GetDatum(id);
		CoordExec(&plan_parents,
				  "SELECT d.parent, h.state, h.result FROM coord.job_dep AS d "
				  "LEFT JOIN coord.job_history AS h ON h.id OPERATOR(pg_catalog.=) d.parent "
				  "WHERE d.child OPERATOR(pg_catalog.=) $1 ORDER BY d.parent",
				  1, argtypes, args, NULL, SPI_OK_SELECT, "parent_results");
		for (r = 0; r < SPI_processed; r++)
		{
			Datum		values[3];
			bool		nulls[3];
			int			i;

			CHECK_FOR_INTERRUPTS();
			for (i = 0; i < 3; i++)
				values[i] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, i + 1, &nulls[i]);
			/* the tuplestore copies them out of SPI's memory */
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		SteerEnd(nest);
	}
	CoordSpiEnd(&sw);
	return (Datum) 0;
}

/* ---------- coord.enqueue_flow ---------- */

typedef struct FlowName
{
	char		name[FLOW_NAME_MAX + 1];	/* hash key: must be first */
	int			index;
} FlowName;

#define NODE_KEYS "'{name,queue,payload,run_at,priority,key,host,max_attempts,group_key,limit_key," \
	"max_snoozes,expires_at,after,on_parent_failure,batch,trace}'::text[]"

/*
 * coord.enqueue_flow(nodes jsonb) returns jsonb: {name: id}.  The nodes are
 * read by one statement (each after element tagged: "n" and a name, "#"
 * and an id); names are resolved through a hash table and the graph is
 * ordered by Kahn's algorithm (linear in nodes and edges; a node left
 * unordered is on a cycle); then each node is enqueued, parents first,
 * by coord.enqueue with after the ids of its parents.  An error anywhere
 * leaves nothing enqueued: the whole is one statement of the caller's.
 */
Datum
coord_enqueue_flow(PG_FUNCTION_ARGS)
{
	Oid			eargtypes[15] = {TEXTOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8ARRAYOID, TEXTOID, TEXTOID, TEXTOID};
	Oid			jtype[1] = {JSONBOID};
	Oid			rtypes[2] = {TEXTARRAYOID, INT8ARRAYOID};
	Datum		jarg[1];
	CoordUserSwitch sw;
	int			n;
	int			i;
	int			j;
	HTAB	   *names;
	HASHCTL		ctl;
	SPITupleTable *tt;
	int		   *indeg;
	int		  **kids;			/* per node: the nodes after it */
	int		   *nkids;
	int		   *order;
	int			nord = 0;
	int64	   *ids;
	Datum	   *name_d;
	Datum	   *id_d;
	Datum		rargs[2];
	Datum		result;
	bool		isnull;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "nodes");
	jarg[0] = PG_GETARG_DATUM(0);
	if (!JB_ROOT_IS_ARRAY(DatumGetJsonbP(jarg[0])) || JB_ROOT_IS_SCALAR(DatumGetJsonbP(jarg[0])))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("nodes must be a JSON array")));
	CoordSpiBegin(&sw);

	/*
	 * the first node that is not an object, or has an unknown field, or a bad
	 * after
	 */
	CoordExecLimit(&plan_flow_keys,
				   "SELECT e.ord, pg_catalog.jsonb_typeof(e.n) OPERATOR(pg_catalog.=) 'object', "
				   "pg_catalog.jsonb_typeof(e.n OPERATOR(pg_catalog.->) 'after') "
				   "FROM pg_catalog.jsonb_array_elements($1) WITH ORDINALITY AS e(n, ord) "
				   "WHERE pg_catalog.jsonb_typeof(e.n) OPERATOR(pg_catalog.<>) 'object' "
				   "OR pg_catalog.jsonb_typeof(e.n OPERATOR(pg_catalog.->) 'after') NOT IN ('array', 'null') "
				   "OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_object_keys(e.n) AS k "
				   "WHERE k OPERATOR(pg_catalog.<>) ALL (" NODE_KEYS ")) "
				   "OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(CASE WHEN "
				   "pg_catalog.jsonb_typeof(e.n OPERATOR(pg_catalog.->) 'after') OPERATOR(pg_catalog.=) 'array' "
				   "THEN e.n OPERATOR(pg_catalog.->) 'after' ELSE '[]' END) AS a(v) "
				   "WHERE pg_catalog.jsonb_typeof(a.v) NOT IN ('string', 'number')) "
				   "ORDER BY e.ord",
				   1, jtype, jarg, NULL, 1, SPI_OK_SELECT, "enqueue_flow");
	if (SPI_processed > 0)
	{
		char	   *ord = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		bool		object = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));

		if (!object)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("node %s of the flow is not an object", ord)));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("node %s of the flow has an unknown field or an invalid after", ord),
				 errdetail("A node takes name, after (an array of node names and job ids) and the arguments of coord.enqueue by name.")));
	}

	/* every node's fields, as text but the payload; after elements tagged */
	CoordExec(&plan_flow_nodes,
			  "SELECT e.n OPERATOR(pg_catalog.->>) 'queue', e.n OPERATOR(pg_catalog.->) 'payload', "
			  "e.n OPERATOR(pg_catalog.->>) 'run_at', e.n OPERATOR(pg_catalog.->>) 'priority', "
			  "e.n OPERATOR(pg_catalog.->>) 'key', e.n OPERATOR(pg_catalog.->>) 'host', "
			  "e.n OPERATOR(pg_catalog.->>) 'max_attempts', e.n OPERATOR(pg_catalog.->>) 'group_key', "
			  "e.n OPERATOR(pg_catalog.->>) 'limit_key', e.n OPERATOR(pg_catalog.->>) 'max_snoozes', "
			  "e.n OPERATOR(pg_catalog.->>) 'expires_at', NULL::pg_catalog.int8[], "
			  "e.n OPERATOR(pg_catalog.->>) 'on_parent_failure', e.n OPERATOR(pg_catalog.->>) 'batch', "
			  "e.n OPERATOR(pg_catalog.->>) 'name', "
			  "(SELECT pg_catalog.array_agg(CASE WHEN pg_catalog.jsonb_typeof(a.v) OPERATOR(pg_catalog.=) 'number' "
			  "THEN '#' OPERATOR(pg_catalog.||) (a.v)::pg_catalog.text "
			  "ELSE 'n' OPERATOR(pg_catalog.||) (a.v OPERATOR(pg_catalog.#>>) '{}') END ORDER BY a.o) "
			  "FROM pg_catalog.jsonb_array_elements(COALESCE(e.n OPERATOR(pg_catalog.->) 'after', '[]')) "
			  "WITH ORDINALITY AS a(v, o)), "
			  "e.n OPERATOR(pg_catalog.->>) 'trace' "
			  "FROM pg_catalog.jsonb_array_elements($1) WITH ORDINALITY AS e(n, ord) ORDER BY e.ord",
			  1, jtype, jarg, NULL, SPI_OK_SELECT, "enqueue_flow");
	tt = SPI_tuptable;
	n = (int) SPI_processed;
	if (n > FLOW_NODES_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many nodes for coord.enqueue_flow"),
				 errdetail("A flow has at most %d nodes; %d were given.", FLOW_NODES_MAX, n),
				 errhint("Enqueue the rest in another call, after the ids this one returns.")));

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = FLOW_NAME_MAX + 1;
	ctl.entrysize = sizeof(FlowName);
	ctl.hcxt = CurrentMemoryContext;
	names = hash_create("pg_coord flow names", Max(n, 16), &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	for (i = 0; i < n; i++)
	{
		char	   *name = SPI_getvalue(tt->vals[i], tt->tupdesc, 15);
		FlowName   *e;
		bool		found;

		CHECK_FOR_INTERRUPTS();
		if (name == NULL || name[0] == '\0' || strlen(name) > FLOW_NAME_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("node %d of the flow needs a name of 1 to %d bytes", i + 1, FLOW_NAME_MAX)));
		e = hash_search(names, name, HASH_ENTER, &found);
		if (found)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the flow has two nodes named \"%s\"", name)));
		e->index = i;
	}

	/*
	 * edges between nodes: kids, in-degrees; ids given as numbers stay in the
	 * row
	 */
	indeg = palloc0(sizeof(int) * n);
	nkids = palloc0(sizeof(int) * n);
	kids = palloc0(sizeof(int *) * n);
	for (i = 0; i < n; i++)
	{
		Datum		a = SPI_getbinval(tt->vals[i], tt->tupdesc, 16, &isnull);
		Datum	   *el;
		int			nel;

		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(a), TEXTOID, -1, false, TYPALIGN_INT, &el, NULL, &nel);
		for (j = 0; j < nel; j++)
		{
			char	   *v = TextDatumGetCString(el[j]);
			FlowName   *p;

			CHECK_FOR_INTERRUPTS();
			if (v[0] == '#')
				continue;
			p = strlen(v + 1) <= FLOW_NAME_MAX ? hash_search(names, v + 1, HASH_FIND, NULL) : NULL;
			if (p == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("node \"%s\" of the flow is after \"%s\", which is not a node of it",
								SPI_getvalue(tt->vals[i], tt->tupdesc, 15), v + 1)));
			if (nkids[p->index] % 8 == 0)
				kids[p->index] = kids[p->index] ? repalloc(kids[p->index], sizeof(int) * (nkids[p->index] + 8))
					: palloc(sizeof(int) * 8);
			kids[p->index][nkids[p->index]++] = i;
			indeg[i]++;
		}
	}

	/* Kahn: parents first; what is left is on a cycle */
	order = palloc(sizeof(int) * Max(n, 1));
	for (i = 0; i < n; i++)
		if (indeg[i] == 0)
			order[nord++] = i;
	for (i = 0; i < nord; i++)
	{
		int			k = order[i];

		CHECK_FOR_INTERRUPTS();
		for (j = 0; j < nkids[k]; j++)
			if (--indeg[kids[k][j]] == 0)
				order[nord++] = kids[k][j];
	}
	if (nord < n)
	{
		for (i = 0; i < n && indeg[i] == 0; i++)
			;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the flow has a cycle through node \"%s\"",
						SPI_getvalue(tt->vals[i], tt->tupdesc, 15))));
	}

	/* enqueue, parents first */
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		int			k = order[i];
		Datum		args[15];
		char		nulls[15];
		Datum		a = SPI_getbinval(tt->vals[k], tt->tupdesc, 16, &isnull);
		int64	   *after = NULL;
		int			nafter = 0;

		CHECK_FOR_INTERRUPTS();
		for (j = 0; j < 14; j++)
		{
			bool		null;

			args[j] = SPI_getbinval(tt->vals[k], tt->tupdesc, j + 1, &null);
			nulls[j] = null ? 'n' : ' ';
		}
		{
			bool		null;

			/* trace: column 17, after the name (15) and the after tags (16) */
			args[14] = SPI_getbinval(tt->vals[k], tt->tupdesc, 17, &null);
			nulls[14] = null ? 'n' : ' ';
		}
		if (!isnull)
		{
			Datum	   *el;
			int			nel;

			deconstruct_array(DatumGetArrayTypeP(a), TEXTOID, -1, false, TYPALIGN_INT, &el, NULL, &nel);
			after = palloc(sizeof(int64) * Max(nel, 1));
			for (j = 0; j < nel; j++)
			{
				char	   *v = TextDatumGetCString(el[j]);

				if (v[0] == '#')
					after[nafter++] = DatumGetInt64(DirectFunctionCall1(int8in, CStringGetDatum(v + 1)));
				else
					after[nafter++] = ids[((FlowName *) hash_search(names, v + 1, HASH_FIND, NULL))->index];
			}
			args[11] = IdArray(after, nafter);
			nulls[11] = ' ';
		}

		/*
		 * as the caller (search_path stays pinned): coord.enqueue records it
		 * as the job's enqueued_by and checks its right to the node's batch
		 */
		SetUserIdAndSecContext(sw.save_userid, sw.save_sec_context);
		CoordExec(&plan_flow_enqueue,
				  "SELECT coord.enqueue(queue => $1, payload => COALESCE($2, '{}'::pg_catalog.jsonb), "
				  "run_at => $3::pg_catalog.timestamptz, priority => COALESCE($4::pg_catalog.int4, 0), key => $5, host => $6, "
				  "max_attempts => COALESCE($7::pg_catalog.int4, 25), group_key => $8, limit_key => $9, "
				  "max_snoozes => COALESCE($10::pg_catalog.int4, 100), expires_at => $11::pg_catalog.timestamptz, after => $12, "
				  "on_parent_failure => COALESCE($13, 'cancel'), batch => $14::pg_catalog.int8, trace => $15)",
				  15, eargtypes, args, nulls, SPI_OK_SELECT, "enqueue_flow");
		SetUserIdAndSecContext(CoordOwnerId(), sw.save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		ids[k] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}

	name_d = palloc(sizeof(Datum) * Max(n, 1));
	id_d = palloc(sizeof(Datum) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		name_d[i] = CStringGetTextDatum(SPI_getvalue(tt->vals[i], tt->tupdesc, 15));
		id_d[i] = Int64GetDatum(ids[i]);
	}
	rargs[0] = PointerGetDatum(construct_array(name_d, n, TEXTOID, -1, false, TYPALIGN_INT));
	rargs[1] = PointerGetDatum(construct_array(id_d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	CoordExec(&plan_flow_result,
			  "SELECT COALESCE(pg_catalog.jsonb_object_agg(u.name, u.id), '{}'::pg_catalog.jsonb) "
			  "FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS u(name, id)",
			  2, rtypes, rargs, NULL, SPI_OK_SELECT, "enqueue_flow");
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	result = SPI_datumTransfer(result, false, -1);
	CoordSpiEnd(&sw);
	PG_RETURN_DATUM(result);
}
