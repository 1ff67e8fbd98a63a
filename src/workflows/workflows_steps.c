/*-------------------------------------------------------------------------
 * workflows_steps.c
 *		Durable steps (docs/durable-steps.md): coord.step reads the result an
 *		earlier attempt of a job recorded for a named step, coord.step_done
 *		records one, fenced by the claim's token; coord.job_step holds them,
 *		deleted with the job's history row (a statement trigger) and, for a
 *		job removed without one, by the tick (CoordStepsTick).
 *
 * Protocol (src/workflows/README.md): step_done checks the claim and locks
 * the job's row FOR NO KEY UPDATE in one statement (CoordJobClaimAttempt),
 * then inserts the step.  The row lock is what fences it: a claim that
 * would take the job skips a locked row, and one that took it first
 * changed the token, which the check then reads (READ COMMITTED re-reads a
 * row it waited for), so a step is recorded only under the live claim and
 * commits before any newer claim of the job exists.  The lock also puts
 * two step_done calls of one job one after the other, which keeps step_no
 * (the step's number, max + 1) exact and the bound on steps per job exact.
 * A step is recorded once: the first result wins; step_done again with an
 * equal result answers true, with another result 23505.  Nothing here is
 * kept across calls but the plans.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "jobs/jobs.h"
#include "workflows/workflows.h"

PG_FUNCTION_INFO_V1(coord_step);
PG_FUNCTION_INFO_V1(coord_step_done);
PG_FUNCTION_INFO_V1(coord_job_steps_purge);

static SPIPlanPtr plan_step = NULL;
static SPIPlanPtr plan_recorded = NULL;
static SPIPlanPtr plan_insert = NULL;
static SPIPlanPtr plan_purge = NULL;
static SPIPlanPtr plan_orphans = NULL;

/* A step's name, checked: 1 to STEP_NAME_MAX bytes. */
static text *
StepName(FunctionCallInfo fcinfo, int argno)
{
	text	   *name;
	int			len;

	CoordRequireArg(fcinfo, argno, "name");
	name = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(name);
	if (len == 0 || len > STEP_NAME_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("step name must have 1 to %d bytes", STEP_NAME_MAX),
				 errdetail("This one has %d bytes.", len)));
	return name;
}

static void
JobNotClaimed(int64 id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("job " INT64_FORMAT " is not claimed with this token", id),
			 errdetail("Its claim was lost (its lease expired and another claim took it, or it finished), or the token or the role is not the claim's."),
			 errhint("Stop working on it: its steps belong to the live claim.")));
}

/*
 * coord.step(id, token, name): the result an earlier attempt recorded for
 * the step, or NULL (do it now).  A claim that is not the caller's live one
 * is an error (55000), not NULL: a zombie attempt must not take NULL for
 * "do the step".
 */
Datum
coord_step(PG_FUNCTION_ARGS)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	CoordUserSwitch sw;
	int64		id;
	Datum		result = (Datum) 0;
	bool		isnull = true;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	id = PG_GETARG_INT64(0);
	args[0] = Int64GetDatum(id);
	args[1] = PointerGetDatum(StepName(fcinfo, 2));

	CoordSpiBegin(&sw);
	if (CoordJobClaimAttempt(id, PG_GETARG_INT64(1), sw.save_userid, false) == 0)
		JobNotClaimed(id);
	CoordExecLimit(&plan_step,
				   "SELECT result FROM coord.job_step WHERE job_id OPERATOR(pg_catalog.=) $1 "
				   "AND name OPERATOR(pg_catalog.=) $2",
				   2, argtypes, args, NULL, 1, SPI_OK_SELECT, "step");
	if (SPI_processed == 1)
		result = SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull),
								   false, -1);
	CoordSpiEnd(&sw);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * coord.step_done(id, token, name, result): records the step's result under
 * the caller's live claim; false, recording nothing, when the claim is not
 * (a zombie attempt).
 */
Datum
coord_step_done(PG_FUNCTION_ARGS)
{
	Oid			argtypes[4] = {INT8OID, TEXTOID, JSONBOID, INT4OID};
	Datum		args[4];
	CoordUserSwitch sw;
	int64		id;
	int32		attempt;
	Jsonb	   *result;
	bool		isnull;
	int64		count;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	id = PG_GETARG_INT64(0);
	args[0] = Int64GetDatum(id);
	args[1] = PointerGetDatum(StepName(fcinfo, 2));
	CoordRequireArg(fcinfo, 3, "result");
	result = PG_GETARG_JSONB_P(3);
	CoordCheckSize("step result", VARSIZE(result), COORD_RESULT_MAX_BYTES);
	if (JB_ROOT_IS_SCALAR(result))
	{
		JsonbValue	v;

		if (JsonbExtractScalar(&result->root, &v) && v.type == jbvNull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a step's result cannot be JSON null"),
					 errdetail("coord.step answers NULL for a step not done yet, and drivers read JSON null as NULL too."),
					 errhint("Record true or {} for a step without a result.")));
	}
	args[2] = JsonbPGetDatum(result);

	CoordSpiBegin(&sw);
	attempt = CoordJobClaimAttempt(id, PG_GETARG_INT64(1), sw.save_userid, true);
	if (attempt == 0)
	{
		CoordSpiEnd(&sw);
		PG_RETURN_BOOL(false);
	}
	args[3] = Int32GetDatum(attempt);

	/* recorded already: the first result stays */
	CoordExecLimit(&plan_recorded,
				   "SELECT result OPERATOR(pg_catalog.=) $3 FROM coord.job_step "
				   "WHERE job_id OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) $2",
				   3, argtypes, args, NULL, 1, SPI_OK_SELECT, "step_done");
	if (SPI_processed == 1)
	{
		bool		same = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		if (isnull || !same)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("step \"%s\" of job " INT64_FORMAT " is recorded already, with another result",
							text_to_cstring(DatumGetTextPP(args[1])), id),
					 errdetail("A step's result is recorded once; the first one stays."),
					 errhint("Read it with coord.step before doing the step.")));
		CoordSpiEnd(&sw);
		PG_RETURN_BOOL(true);
	}

	/* the next number; the row lock above keeps it exact */
	CoordExec(&plan_insert,
			  "INSERT INTO coord.job_step (job_id, name, step_no, attempt, result, recorded_at) "
			  "SELECT $1, $2, COALESCE(pg_catalog.max(step_no), 0) OPERATOR(pg_catalog.+) 1, $4, $3, "
			  "pg_catalog.now() FROM coord.job_step WHERE job_id OPERATOR(pg_catalog.=) $1 "
			  "RETURNING step_no",
			  4, argtypes, args, NULL, SPI_OK_INSERT_RETURNING, "step_done");
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (count > STEPS_PER_JOB_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("job " INT64_FORMAT " has too many steps", id),
				 errdetail("A job records at most %d steps.", STEPS_PER_JOB_MAX),
				 errhint("Split the work into several jobs, or record a batch of items as one step.")));
	CoordSpiEnd(&sw);
	PG_RETURN_BOOL(true);
}

/*
 * The statement trigger of coord.job_history AFTER DELETE (coord.purge_jobs,
 * the tick's purge, coord.retry, a DELETE by hand): the steps of the jobs
 * deleted go too, but not those of a job that is live again (coord.retry
 * moves it back to coord.job before it deletes its history row: a retried
 * job keeps its steps).
 */
Datum
coord_job_steps_purge(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	CoordUserSwitch sw;
	int			rc;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" was not called by trigger manager",
						"coord.job_steps_purge")));
	CoordSpiBegin(&sw);
	rc = SPI_register_trigger_data(trigdata);
	CoordSpiCheck(rc, SPI_OK_TD_REGISTER, "registering the deleted history rows");
	CoordExec(&plan_purge,
			  "DELETE FROM coord.job_step AS s USING purged_jobs AS p "
			  "WHERE s.job_id OPERATOR(pg_catalog.=) p.id AND NOT EXISTS "
			  "(SELECT FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) s.job_id)",
			  0, NULL, NULL, NULL, SPI_OK_DELETE, "deleting the steps of purged jobs");
	CoordSpiEnd(&sw);
	PG_RETURN_POINTER(NULL);
}

/*
 * CoordStepsTick (workflows.h): the steps of jobs removed without a history
 * row (an unclaimed job of a dropped app or schedule, deleted between two
 * attempts), at most STEPS_TICK_MAX a tick.  Only steps older than
 * coord.job_history_retention are looked at (0 keeps them all): a job's
 * steps are younger than its history row, which the purge takes with its
 * steps, so the scan (by recorded_at) sees few others.  Inside SPI, as the
 * owner.
 */
int64
CoordStepsTick(TimestampTz at)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, INT4OID};
	Datum		args[2];
	const char *keep = GetConfigOption("coord.job_history_retention", true, false);
	int64		seconds = keep != NULL ? pg_strtoint64(keep) : 0;

	if (seconds <= 0)
		return 0;
	args[0] = TimestampTzGetDatum(at - seconds * USECS_PER_SEC);
	args[1] = Int32GetDatum(STEPS_TICK_MAX);
	return (int64) CoordExec(&plan_orphans,
							 "DELETE FROM coord.job_step WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
							 "SELECT s.ctid FROM coord.job_step AS s "
							 "WHERE s.recorded_at OPERATOR(pg_catalog.<) $1 "
							 "AND NOT EXISTS (SELECT FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) s.job_id) "
							 "AND NOT EXISTS (SELECT FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) s.job_id) "
							 "LIMIT $2))",
							 2, argtypes, args, NULL, SPI_OK_DELETE, "tick");
}
