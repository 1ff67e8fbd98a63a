/*-------------------------------------------------------------------------
 * jobs_control.c
 *		Job control (docs/job-control.md): a running job's progress
 *		(coord.progress), cancel pushed to its holder (coord.cancel), and
 *		waiting for a job to finish (coord.await).
 *
 * Who may: progress, like heartbeat, only the holder of the live claim
 * (its token, and the claiming role or session); cancel coord_admin or the
 * role that enqueued the job (coord.job.enqueued_by, the caller's role
 * that coord.enqueue saved before its owner switch), or a role with its
 * privileges; await those and coord_monitor.
 *
 * What wakes whom: progress and cancel send NOTIFY on "coord:job:<id>"
 * (payloads "progress <json>" and "cancel"), delivered at their commit.  A
 * cancelled job's row is gone from coord.job, so its holder's next
 * heartbeat answers NULL and its progress, complete and fail find nothing:
 * learning of a cancel costs the holder's calls nothing.  coord.await
 * sleeps on its latch, holding two lock-table marks: (COORD_NS_AWAIT_ANY)
 * and (COORD_NS_AWAIT, id); the transaction that finishes the job sets the
 * latches of the marks' holders at its COMMIT (jobs_common.c,
 * JobsNoteFinished), after the commit is visible, and the awaiter looks
 * again with a new snapshot.  It takes its marks before its first look, so
 * a commit either shows in a look or finds the marks.  src/jobs/README.md
 * ("Job control") says why this and not a lock wait.  A finisher that
 * PREPAREs marks its jobs first with locks the prepared transaction holds
 * (COORD_NS_AWAIT_PREP, jobs_common.c) and sets the latches; the awaiter
 * takes a share lock on its job's mark without waiting for each look:
 * refused, it looks again every 10 ms to 1 s until COMMIT or ROLLBACK
 * PREPARED (which sets no latch) releases it.
 *
 * What survives an abort: nothing.  The marks are transaction locks,
 * released by the abort that a cancelled await (statement_timeout,
 * pg_cancel_backend) raises; NOTIFY is sent only at commit.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "jobs/jobs_int.h"

/* the most a progress report may hold: it is rewritten at every report */
#define PROGRESS_MAX_BYTES	(64 * 1024)
/* async.c's NOTIFY_PAYLOAD_MAX_LENGTH (not exported): a payload is shorter */
#define NOTIFY_PAYLOAD_MAX	(BLCKSZ - NAMEDATALEN - 128)
/* the longest single sleep of an await (it then looks again) */
#define AWAIT_SLEEP_MAX_MS	(3600 * 1000)
/* how often an await looks while a prepared transaction holds its job */
#define AWAIT_PREP_POLL_MIN_MS	10
#define AWAIT_PREP_POLL_MAX_MS	1000

static SPIPlanPtr plan_progress = NULL;
static SPIPlanPtr plan_progress_any = NULL;
static SPIPlanPtr plan_cancel_owner = NULL;
static SPIPlanPtr plan_await = NULL;

PG_FUNCTION_INFO_V1(coord_progress);
PG_FUNCTION_INFO_V1(coord_cancel);
PG_FUNCTION_INFO_V1(coord_await);

/* A job's channel: "coord:job:<id>". */
static char *
JobChannel(int64 id)
{
	return psprintf("coord:job:" INT64_FORMAT, id);
}

/* ---------- progress ---------- */

/*
 * coord.progress(id, token, progress jsonb) returns boolean: the holder of
 * the claim stores its progress (an unindexed column: a HOT update) and
 * NOTIFYs the job's channel at commit, with the progress in the payload
 * when it fits.  The claim test is heartbeat's: a lease claim of the
 * caller's role (or any, for coord_admin), or the session-bound claim this
 * session holds; false otherwise, with nothing changed.
 */
Datum
coord_progress(PG_FUNCTION_ARGS)
{
	int64		id;
	Jsonb	   *progress;
	Oid			argtypes[5] = {INT8OID, INT8OID, JSONBOID, OIDOID, BOOLOID};
	Datum		args[5];
	CoordUserSwitch sw;
	bool		ok;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	CoordRequireArg(fcinfo, 1, "token");
	CoordRequireArg(fcinfo, 2, "progress");
	progress = PG_GETARG_JSONB_P(2);
	CoordCheckSize("job progress", VARSIZE(progress), PROGRESS_MAX_BYTES);
	id = PG_GETARG_INT64(0);
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(PG_GETARG_INT64(1));
	args[2] = JsonbPGetDatum(progress);
	args[4] = BoolGetDatum(JobsSessionClaimLive(id));

	CoordSpiBegin(&sw);
	args[3] = ObjectIdGetDatum(sw.save_userid);
	if (CoordIsAdmin(sw.save_userid))
		CoordExec(&plan_progress_any,
				  "UPDATE coord.job SET progress = $3 "
				  "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
				  "AND (lease_until IS NOT NULL OR $5)",
				  5, argtypes, args, NULL, SPI_OK_UPDATE, "progress");
	else
		CoordExec(&plan_progress,
				  "UPDATE coord.job SET progress = $3 "
				  "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
				  "AND ((lease_until IS NOT NULL AND claimed_by OPERATOR(pg_catalog.=) $4) OR $5)",
				  5, argtypes, args, NULL, SPI_OK_UPDATE, "progress");
	ok = (SPI_processed == 1);
	if (!ok)
		JobsForgetClaimIfGone(id);
	CoordSpiEnd(&sw);
	if (ok)
	{
		char	   *json = JsonbToCString(NULL, &progress->root, VARSIZE(progress));
		char	   *payload = psprintf("progress %s", json);

		/* NOTIFY's payload is under 8000 bytes: a larger one only says so */
		Async_Notify(JobChannel(id), strlen(payload) < NOTIFY_PAYLOAD_MAX ? payload : "progress");
	}
	PG_RETURN_BOOL(ok);
}

/* ---------- cancel ---------- */

/*
 * coord.cancel(id) returns boolean: moves a job that has not finished to
 * the history as cancelled; false when there is no such live job.  For
 * coord_admin (a superuser, the owner) any job; for anyone else (EXECUTE is
 * granted to coord_worker) only a job enqueued by a role whose privileges
 * the caller has, else 42501.  enqueued_by never changes while a job is
 * live, so the test needs no lock before the DELETE.  The holder of a
 * running job is sent NOTIFY cancel on the job's channel at commit.
 */
Datum
coord_cancel(PG_FUNCTION_ARGS)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	int64		id;
	bool		moved = false;
	bool		allowed = true;

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	id = PG_GETARG_INT64(0);
	args[0] = Int64GetDatum(id);
	CoordSpiBegin(&sw);
	if (!CoordIsAdmin(sw.save_userid))
	{
		CoordExecLimit(&plan_cancel_owner,
					   "SELECT enqueued_by FROM coord.job WHERE id OPERATOR(pg_catalog.=) $1 "
					   "UNION ALL "
					   "SELECT enqueued_by FROM coord.job_wait WHERE id OPERATOR(pg_catalog.=) $1",
					   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "cancel");
		if (SPI_processed == 0)
			allowed = false;	/* nothing to cancel: false, as for anyone */
		else
		{
			bool		isnull;
			Datum		by = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			if (isnull || !has_privs_of_role(sw.save_userid, DatumGetObjectId(by)))
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied to cancel job " INT64_FORMAT, id),
						 errdetail("Only coord_admin and the role that enqueued a job may cancel it."),
						 errhint("Ask a member of coord_admin, or the role in coord.jobs.enqueued_by.")));
		}
	}
	if (allowed)
	{
		moved = JobsMoveToHistory(id, false, 0, "cancelled", NULL);
		/* a waiting job (and its waiting descendants, by the wait hooks) */
		if (!moved && JobsWaitHooks() != NULL)
			moved = CoordCancelWaiting(JobsIdsArray(&id, 1), NULL) == 1;
	}
	CoordSpiEnd(&sw);
	JobsDropSessionClaim(id);
	if (moved)
		Async_Notify(JobChannel(id), "cancel");
	PG_RETURN_BOOL(moved);
}

/* ---------- await ---------- */

/* What one look at a job found (in the caller's memory). */
typedef struct AwaitLook
{
	bool		finished;
	text	   *state;
	Datum		result;
	bool		result_null;
	text	   *error;
} AwaitLook;

/*
 * One look at the job, with a new snapshot (READ COMMITTED): its history
 * row, or its live row.  The first look also decides whether the caller
 * may await it.  P0002 when neither exists; 55000 when this transaction
 * enqueued it (no one else can see it until this one ends).
 */
static void
AwaitLookAt(int64 id, bool first, AwaitLook *look)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	CoordUserSwitch sw;
	SPITupleTable *tt;
	HeapTuple	row;
	bool		isnull;
	Datum		by;
	Datum		xmin;

	args[0] = Int64GetDatum(id);
	memset(look, 0, sizeof(*look));
	CoordSpiBegin(&sw);
	/* one statement, one snapshot: the job is in exactly one of the three */
	CoordExecLimit(&plan_await,
				   "SELECT h.state, h.result, h.last_error, h.enqueued_by, NULL::pg_catalog.xid "
				   "FROM coord.job_history AS h WHERE h.id OPERATOR(pg_catalog.=) $1 "
				   "UNION ALL "
				   "SELECT NULL, NULL, NULL, j.enqueued_by, j.xmin "
				   "FROM coord.job AS j WHERE j.id OPERATOR(pg_catalog.=) $1 "
				   "UNION ALL "
				   "SELECT NULL, NULL, NULL, w.enqueued_by, w.xmin "
				   "FROM coord.job_wait AS w WHERE w.id OPERATOR(pg_catalog.=) $1",
				   1, argtypes, args, NULL, 1, SPI_OK_SELECT, "await");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("job " INT64_FORMAT " does not exist", id),
				 errdetail("It is neither live nor in the history (it may have been purged).")));
	tt = SPI_tuptable;
	row = tt->vals[0];
	if (first)
	{
		Oid			caller = sw.save_userid;
		Oid			monitor = get_role_oid("coord_monitor", true);

		by = SPI_getbinval(row, tt->tupdesc, 4, &isnull);
		if (!CoordIsAdmin(caller) &&
			!(OidIsValid(monitor) && has_privs_of_role(caller, monitor)) &&
			(isnull || !has_privs_of_role(caller, DatumGetObjectId(by))))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to await job " INT64_FORMAT, id),
					 errdetail("Only the role that enqueued a job, coord_monitor and coord_admin may await it.")));
	}
	(void) SPI_getbinval(row, tt->tupdesc, 1, &isnull);
	if (!isnull)
	{
		Datum		d;

		look->finished = true;
		look->state = CoordSpiText(SPI_getvalue(row, tt->tupdesc, 1));
		d = SPI_getbinval(row, tt->tupdesc, 2, &look->result_null);
		if (!look->result_null)
			look->result = SPI_datumTransfer(d, false, -1);
		/* the error of a job that did not end done */
		(void) SPI_getbinval(row, tt->tupdesc, 3, &isnull);
		if (!isnull && strcmp(SPI_getvalue(row, tt->tupdesc, 1), "done") != 0)
			look->error = CoordSpiText(SPI_getvalue(row, tt->tupdesc, 3));
	}
	else
	{
		xmin = SPI_getbinval(row, tt->tupdesc, 5, &isnull);
		if (!isnull && TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot await job " INT64_FORMAT ": this transaction enqueued it", id),
					 errdetail("No worker can claim it before this transaction commits, so it would never finish."),
					 errhint("Commit first, then await it.")));
	}
	CoordSpiEnd(&sw);
}

/*
 * Share locks on the job's prepared-finish mark and on the mark of key 0,
 * without waiting.  false (and neither held) when a transaction that
 * finished the job -- or more jobs than it names -- has prepared or is
 * preparing (jobs_common.c, MarkPreparedFinished).
 */
static bool
AwaitPrepTake(const LOCKTAG *job, const LOCKTAG *all)
{
	if (CoordLockTake(job, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	if (CoordLockTake(all, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
	{
		CoordLockLetGo(job, ShareLock, false);
		return false;
	}
	return true;
}

/*
 * coord.await(id, timeout DEFAULT NULL) returns (state, result, error):
 * how the job finished (done, dead, cancelled; result of a done job, error
 * of the others), or all NULL when timeout passed first.  NULL timeout:
 * no end.  It sleeps on its latch between looks (header comment): no CPU,
 * woken by the finishing commit, by a cancel or statement_timeout (an
 * ERROR, as for any statement), or at the timeout.
 */
Datum
coord_await(PG_FUNCTION_ARGS)
{
	int64		id;
	int64		timeout_us = -1;
	TimestampTz deadline = 0;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {true, true, true};
	LOCKTAG		any_tag,
				job_tag,
				prep_tag,
				prep_all_tag;
	AwaitLook	look;
	bool		first = true;
	long		poll_ms = 0;	/* while a prepared transaction holds the job */

	CoordNotInParallel(fcinfo);
	CoordRequireArg(fcinfo, 0, "id");
	id = PG_GETARG_INT64(0);
	if (!PG_ARGISNULL(1))
	{
		timeout_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(1), "timeout", true);
		deadline = CoordTimeAdd(GetCurrentTimestamp(), timeout_us, "timeout");
	}
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "coord.await must return a record");
	desc = BlessTupleDesc(desc);

	/* the marks first, then the look: a commit after the look finds them */
	CoordSetTag(&any_tag, 0, COORD_NS_AWAIT_ANY);
	CoordSetTag(&job_tag, (uint64) id, COORD_NS_AWAIT);
	(void) CoordLockTake(&any_tag, ShareLock, false, true);
	(void) CoordLockTake(&job_tag, ShareLock, false, true);
	CoordSetTag(&prep_tag, (uint64) id, COORD_NS_AWAIT_PREP);
	CoordSetTag(&prep_all_tag, 0, COORD_NS_AWAIT_PREP);
	for (;;)
	{
		long		sleep_ms = AWAIT_SLEEP_MAX_MS;

		/*
		 * The prepared-finish marks are held during the look, so no finisher
		 * prepares between the check and the look.  Refused, a prepared
		 * transaction finished the job: its COMMIT PREPARED sets no latch, so
		 * look again at 10 ms, doubling to 1 s, until the marks go.
		 */
		bool		prep_free = AwaitPrepTake(&prep_tag, &prep_all_tag);

		AwaitLookAt(id, first, &look);
		if (prep_free)
		{
			CoordLockLetGo(&prep_all_tag, ShareLock, false);
			CoordLockLetGo(&prep_tag, ShareLock, false);
		}
		first = false;
		if (look.finished)
			break;
		poll_ms = prep_free ? 0 : (poll_ms == 0 ? AWAIT_PREP_POLL_MIN_MS : Min(poll_ms * 2, AWAIT_PREP_POLL_MAX_MS));
		if (IsolationUsesXactSnapshot())
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
					 errmsg("coord.await cannot wait in a REPEATABLE READ or SERIALIZABLE transaction"),
					 errdetail("The transaction's snapshot would never show the job finishing."),
					 errhint("Call it in a READ COMMITTED transaction, or outside a transaction block.")));
		if (timeout_us >= 0)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (now >= deadline)
				break;
			/* rounded up: no wake-up just before the deadline */
			sleep_ms = Min((long) ((deadline - now + 999) / 1000), (long) AWAIT_SLEEP_MAX_MS);
		}
		if (poll_ms > 0)
			sleep_ms = Min(sleep_ms, poll_ms);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	CoordLockLetGo(&job_tag, ShareLock, false);
	CoordLockLetGo(&any_tag, ShareLock, false);

	if (look.finished)
	{
		values[0] = PointerGetDatum(look.state);
		nulls[0] = false;
		values[1] = look.result;
		nulls[1] = look.result_null;
		values[2] = PointerGetDatum(look.error);
		nulls[2] = (look.error == NULL);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
