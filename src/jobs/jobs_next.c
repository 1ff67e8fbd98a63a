/*-------------------------------------------------------------------------
 * jobs_next.c
 *		One commit per job: coord.complete_and_claim and coord.fail_and_claim
 *		finish a job and claim the next ones of its queue in one statement
 *		(docs/jobs.md, "One commit per job").
 *
 * Each is complete's or fail's work (jobs.c: JobsCompleteOne, JobsFailOne,
 * with their fencing rule and claimant test) and then a claim of the
 * finished job's queue (jobs_claim.c: JobsClaimRun, with coord.claim's
 * semantics: frontiers, flow control, idle marks for wake-ups, partition
 * groups).  Both run in the caller's transaction, so they commit, or roll
 * back, together.  A completion that did not count (the token is stale,
 * the job was cancelled, the caller is not its claimant) still claims: the
 * worker wants work either way, and queues are not tenants (SECURITY.md),
 * so the job's queue is read from the live job or its history row; a job
 * whose history row was purged has no queue left to claim from.
 *
 * The result, SETOF coord.claimed_after_complete or coord.claimed_after_fail
 * (composite types): one row per job claimed, each carrying what coord.complete
 * (completed boolean) or coord.fail (state text) would have returned, then
 * coord.claimed_job's columns; when nothing was claimed, exactly one row,
 * with the job columns NULL.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "jobs/jobs_int.h"

PG_FUNCTION_INFO_V1(coord_complete_and_claim);
PG_FUNCTION_INFO_V1(coord_fail_and_claim);

/* complete_and_claim(id, token, result, n, lease, session_bound, host, partition_group) */
static const JobsClaimArgPos complete_pos = {-1, 3, 4, 6, 5, -1, -1, 7};

/* fail_and_claim(id, token, error, retry_after, pause_key, n, lease, session_bound, host, partition_group) */
static const JobsClaimArgPos fail_pos = {-1, 5, 6, 8, 7, -1, -1, 9};

/*
 * The queue of a job whose completion did not count: the live job's (claimed
 * again since, by this role or another), or its history row's (finished,
 * cancelled); NULL once purged.  Inside SPI, as the owner.
 */
static char *
QueueOfJob(int64 id, MemoryContext cxt)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];

	args[0] = Int64GetDatum(id);
	CoordExecReadOnly(&plan,
					  "SELECT j.queue FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) $1 "
					  "UNION ALL "
					  "SELECT h.queue FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) $1",
					  1, argtypes, args, NULL, 1, "finding a job's queue");
	if (SPI_processed == 0)
		return NULL;
	return MemoryContextStrdup(cxt, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}

/*
 * The result's rows: the finish's answer (first, first_null) in the first
 * column of each, then the jobs claimed (rows, formed with claimdesc).
 */
static void
EmitNext(ReturnSetInfo *rsinfo, TupleDesc claimdesc, Datum first, bool first_null,
		 HeapTuple *rows, int got)
{
	int			natts = rsinfo->setDesc->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);

	values[0] = first;
	nulls[0] = first_null;
	if (got == 0)
	{
		for (int i = 1; i < natts; i++)
			nulls[i] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		return;
	}
	for (int r = 0; r < got; r++)
	{
		heap_deform_tuple(rows[r], claimdesc, values + 1, nulls + 1);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* The result's columns after the first: coord.claimed_job's, which the claim forms its rows with. */
static TupleDesc
ClaimDesc(TupleDesc setdesc)
{
	TupleDesc	d = CreateTemplateTupleDesc(setdesc->natts - 1);

	for (int i = 1; i < setdesc->natts; i++)
		TupleDescCopyEntry(d, i, setdesc, i + 1);
	return d;
}

/*
 * Both entry points, once their finish's arguments are checked (cm for
 * complete_and_claim, else f): the claim's arguments, the finish inside SPI
 * as the owner, then the claim of the job's queue outside it (JobsClaimRun
 * runs its own SPI, as coord.claim does).
 */
static Datum
FinishAndClaim(FunctionCallInfo fcinfo, const JobsComplete *cm, const JobsFail *f)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext callcxt = CurrentMemoryContext;
	ClaimCall  *c;
	CoordUserSwitch sw;
	int64		id = cm != NULL ? cm->id : f->id;
	char	   *queue = NULL;
	bool		ok = false;
	const char *state = NULL;
	HeapTuple  *rows = NULL;
	int			got = 0;
	TupleDesc	claimdesc;

	c = JobsClaimArgs(fcinfo, cm != NULL ? &complete_pos : &fail_pos);
	InitMaterializedSRF(fcinfo, 0);
	claimdesc = ClaimDesc(rsinfo->setDesc);

	CoordSpiBegin(&sw);
	if (cm != NULL)
		ok = JobsCompleteOne(cm, sw.save_userid, &queue, callcxt);
	else
	{
		state = JobsFailOne(f, sw.save_userid, &queue, callcxt);
		ok = state != NULL;
	}
	if (!ok)
		queue = QueueOfJob(id, callcxt);
	CoordSpiEnd(&sw);

	if (queue != NULL)
		got = JobsClaimRun(c, queue, claimdesc, &rows);
	if (cm != NULL)
		EmitNext(rsinfo, claimdesc, BoolGetDatum(ok), false, rows, got);
	else
		EmitNext(rsinfo, claimdesc, ok ? CStringGetTextDatum(state) : (Datum) 0, !ok, rows, got);
	return (Datum) 0;
}

/*
 * coord.complete_and_claim(id, token, result, n, lease, session_bound, host,
 * partition_group) returns SETOF coord.claimed_after_complete: completed
 * boolean (as coord.complete returns it), then coord.claimed_job's columns.
 */
Datum
coord_complete_and_claim(PG_FUNCTION_ARGS)
{
	JobsComplete cm;

	CoordNotInParallel(fcinfo);
	JobsCompleteArgs(fcinfo, &cm);
	return FinishAndClaim(fcinfo, &cm, NULL);
}

/*
 * coord.fail_and_claim(id, token, error, retry_after, pause_key, n, lease,
 * session_bound, host, partition_group) returns SETOF
 * coord.claimed_after_fail: state text (as coord.fail returns it), then
 * coord.claimed_job's columns.
 */
Datum
coord_fail_and_claim(PG_FUNCTION_ARGS)
{
	JobsFail	f;

	CoordNotInParallel(fcinfo);
	JobsFailArgs(fcinfo, &f);
	return FinishAndClaim(fcinfo, NULL, &f);
}
