/*-------------------------------------------------------------------------
 * metrics.c
 *		The per-queue part of coord.metrics, and the counters behind it.
 *
 * No job's enqueue, claim or finish writes anything for the metrics: the
 * counters are derived from the tables.  Per queue, the jobs finished are
 * coord.queue_totals (the fold) plus the history rows finished since
 * coord.metrics_state.folded_to (the tail, found by the history's BRIN
 * index on finished_at); the jobs enqueued are those plus the live and
 * waiting jobs.  A history row thus counts once, in the tail or the fold,
 * whatever happens to it later:
 *  - coord.tick folds the tail up to a horizon before which no transaction
 *    can still add a history row (the start of the oldest transaction open
 *    in this database, less a second), then moves folded_to there;
 *  - the trigger coord.metrics_purged, on every DELETE of history rows
 *    (purges, coord.retry, by hand), adds those of the tail to the fold.
 * Lock order: the trigger takes the coord.metrics_state row FOR SHARE and
 * reads folded_to; the fold takes it FOR UPDATE SKIP LOCKED (a tick never
 * waits: a busy row leaves the fold to the next tick) and only then counts,
 * with a new snapshot, so it sees every deletion of a trigger that read the
 * old folded_to.  Live jobs removed without a history row (a schedule's or
 * an app's unclaimed job: CoordDeleteUnclaimed) go to the fold as
 * cancelled.  Everything is in tables: a restart or a promoted standby goes
 * on from the same numbers, and a counter never goes back.
 *
 * Counting the live jobs costs about a microsecond a job.  While there are
 * fewer than METRICS_LIVE_MAX (by the last tick's count), coord.metrics
 * counts them at every read; beyond, each tick (at most every
 * METRICS_COUNT_EVERY) counts them into coord.queue_counts, and
 * coord.metrics reads that, the finished counters still exact.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "common/common.h"
#include "metrics.h"

/* live and waiting jobs beyond which coord.metrics reads the tick's counts */
#define METRICS_LIVE_MAX 50000
/* how often a tick counts them then, at most */
#define METRICS_COUNT_EVERY_S 10

PG_FUNCTION_INFO_V1(coord_metrics_queues);
PG_FUNCTION_INFO_V1(coord_metrics_purged);

static SPIPlanPtr plan_live = NULL;
static SPIPlanPtr plan_snap = NULL;
static SPIPlanPtr plan_mode = NULL;
static SPIPlanPtr plan_purged_any = NULL;
static SPIPlanPtr plan_purged_mark = NULL;
static SPIPlanPtr plan_purged_add = NULL;
static SPIPlanPtr plan_fold_lock = NULL;
static SPIPlanPtr plan_fold_horizon = NULL;
static SPIPlanPtr plan_fold_add = NULL;
static SPIPlanPtr plan_fold_mark = NULL;
static SPIPlanPtr plan_count_size = NULL;
static SPIPlanPtr plan_count_clear = NULL;
static SPIPlanPtr plan_count_take = NULL;
static SPIPlanPtr plan_count_mark = NULL;

/*
 * The finished counters per queue: the fold plus the tail.  folded_to is
 * read in the same statement, so under its snapshot: read apart, a fold
 * committing in between would count its range twice, and the counters would
 * go back at the next read.  A fragment of both readings below (fin).
 */
#define FINISHED_CTE \
	"tail AS (SELECT h.queue, " \
	"pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'done') AS done, " \
	"pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'dead') AS dead, " \
	"pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'cancelled') AS cancelled " \
	"FROM coord.job_history AS h WHERE h.finished_at OPERATOR(pg_catalog.>=) " \
	"(SELECT s.folded_to FROM coord.metrics_state AS s) GROUP BY h.queue), " \
	"fin AS (SELECT COALESCE(t.queue, f.queue) AS queue, " \
	"COALESCE(t.done, 0) OPERATOR(pg_catalog.+) COALESCE(f.done, 0) AS done, " \
	"COALESCE(t.dead, 0) OPERATOR(pg_catalog.+) COALESCE(f.dead, 0) AS dead, " \
	"COALESCE(t.cancelled, 0) OPERATOR(pg_catalog.+) COALESCE(f.cancelled, 0) AS cancelled " \
	"FROM tail AS t FULL JOIN coord.queue_totals AS f ON f.queue OPERATOR(pg_catalog.=) t.queue), " \
	"dead AS (SELECT h.queue, pg_catalog.count(*) AS dead FROM coord.job_history AS h " \
	"WHERE h.state OPERATOR(pg_catalog.<>) 'done' AND h.state OPERATOR(pg_catalog.=) 'dead' GROUP BY h.queue) "

/* The live jobs per queue, counted now (the state as coord.jobs derives it) */
#define LIVE_CTE \
	"live AS (SELECT l.queue, " \
	"pg_catalog.count(*) FILTER (WHERE NOT l.running AND l.run_at OPERATOR(pg_catalog.<=) pg_catalog.now()) AS ready, " \
	"pg_catalog.count(*) FILTER (WHERE NOT l.running AND l.run_at OPERATOR(pg_catalog.>) pg_catalog.now()) AS scheduled, " \
	"pg_catalog.count(*) FILTER (WHERE l.running) AS running, " \
	"pg_catalog.min(l.run_at) FILTER (WHERE NOT l.running AND l.run_at OPERATOR(pg_catalog.<=) pg_catalog.now()) AS oldest_ready " \
	"FROM (SELECT j.queue, j.run_at, COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false) " \
	"OR coord.job_claimed(j.id) AS running FROM coord.job AS j) AS l GROUP BY l.queue), " \
	"wait AS (SELECT w.queue, pg_catalog.count(*) AS waiting FROM coord.job_wait AS w GROUP BY w.queue) "

/*
 * coord.metrics_queues(): one row per queue with jobs or counts, as its OUT
 * columns: queue, ready, scheduled, running, waiting, dead,
 * oldest_ready_age, enqueued, completed, failed, cancelled.
 */
typedef struct QueueRows
{
	ReturnSetInfo *rsinfo;
} QueueRows;

static void
QueueRow(HeapTuple row, TupleDesc desc, void *arg)
{
	QueueRows  *qr = (QueueRows *) arg;
	Datum		values[11];
	bool		nulls[11];

	heap_deform_tuple(row, desc, values, nulls);
	tuplestore_putvalues(qr->rsinfo->setResult, qr->rsinfo->setDesc, values, nulls);
}

Datum
coord_metrics_queues(PG_FUNCTION_ARGS)
{
	CoordUserSwitch sw;
	QueueRows	qr;
	bool		isnull;
	bool		large;

	CoordNotInParallel(fcinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	qr.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CoordSpiBegin(&sw);
	CoordExecReadOnly(&plan_mode,
					  "SELECT s.large FROM coord.metrics_state AS s",
					  0, NULL, NULL, NULL, 1, "metrics");
	if (SPI_processed != 1)
		elog(ERROR, "coord.metrics_state has no row");
	large = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (!large)
		CoordExecEach(&plan_live,
					  "WITH " LIVE_CTE ", " FINISHED_CTE ", "
					  "qs AS (SELECT l.queue FROM live AS l UNION SELECT w.queue FROM wait AS w "
					  "UNION SELECT f.queue FROM fin AS f UNION SELECT d.queue FROM dead AS d) "
					  "SELECT q.queue, COALESCE(l.ready, 0), COALESCE(l.scheduled, 0), COALESCE(l.running, 0), "
					  "COALESCE(w.waiting, 0), COALESCE(d.dead, 0), "
					  "pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) l.oldest_ready), "
					  "COALESCE(f.done, 0) OPERATOR(pg_catalog.+) COALESCE(f.dead, 0) OPERATOR(pg_catalog.+) "
					  "COALESCE(f.cancelled, 0) OPERATOR(pg_catalog.+) COALESCE(l.ready, 0) OPERATOR(pg_catalog.+) "
					  "COALESCE(l.scheduled, 0) OPERATOR(pg_catalog.+) COALESCE(l.running, 0) OPERATOR(pg_catalog.+) "
					  "COALESCE(w.waiting, 0), "
					  "COALESCE(f.done, 0), COALESCE(f.dead, 0), COALESCE(f.cancelled, 0) "
					  "FROM qs AS q LEFT JOIN live AS l ON l.queue OPERATOR(pg_catalog.=) q.queue "
					  "LEFT JOIN wait AS w ON w.queue OPERATOR(pg_catalog.=) q.queue "
					  "LEFT JOIN fin AS f ON f.queue OPERATOR(pg_catalog.=) q.queue "
					  "LEFT JOIN dead AS d ON d.queue OPERATOR(pg_catalog.=) q.queue",
					  0, NULL, NULL, NULL, "metrics", QueueRow, &qr);
	else

		/*
		 * the tick's counts; enqueued as of then, or the jobs finished since
		 * if more (both only grow)
		 */
		CoordExecEach(&plan_snap,
					  "WITH " FINISHED_CTE ", "
					  "qs AS (SELECT c.queue FROM coord.queue_counts AS c "
					  "UNION SELECT f.queue FROM fin AS f UNION SELECT d.queue FROM dead AS d) "
					  "SELECT q.queue, COALESCE(c.ready, 0), COALESCE(c.scheduled, 0), COALESCE(c.running, 0), "
					  "COALESCE(c.waiting, 0), COALESCE(d.dead, 0), "
					  "pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) c.oldest_ready), "
					  "GREATEST(COALESCE(c.enqueued, 0), COALESCE(f.done, 0) OPERATOR(pg_catalog.+) "
					  "COALESCE(f.dead, 0) OPERATOR(pg_catalog.+) COALESCE(f.cancelled, 0)), "
					  "COALESCE(f.done, 0), COALESCE(f.dead, 0), COALESCE(f.cancelled, 0) "
					  "FROM qs AS q LEFT JOIN coord.queue_counts AS c ON c.queue OPERATOR(pg_catalog.=) q.queue "
					  "LEFT JOIN fin AS f ON f.queue OPERATOR(pg_catalog.=) q.queue "
					  "LEFT JOIN dead AS d ON d.queue OPERATOR(pg_catalog.=) q.queue",
					  0, NULL, NULL, NULL, "metrics", QueueRow, &qr);
	CoordSpiEnd(&sw);
	return (Datum) 0;
}

/*
 * The trigger coord.metrics_purged: history rows of the tail that go are
 * added to the fold.
 */
Datum
coord_metrics_purged(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		args[1];
	CoordUserSwitch sw;
	bool		isnull;
	int			rc;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" was not called by trigger manager",
						"coord.metrics_purged")));
	CoordSpiBegin(&sw);
	rc = SPI_register_trigger_data(trigdata);
	CoordSpiCheck(rc, SPI_OK_TD_REGISTER, "registering the deleted history rows");
	CoordExecLimit(&plan_purged_any, "SELECT FROM purged_rows", 0, NULL, NULL, NULL, 1,
				   SPI_OK_SELECT, "counting purged jobs");
	if (SPI_processed > 0)
	{
		/* FOR SHARE: a fold in progress moves folded_to first */
		CoordExec(&plan_purged_mark,
				  "SELECT s.folded_to FROM coord.metrics_state AS s FOR SHARE",
				  0, NULL, NULL, NULL, SPI_OK_SELECT, "counting purged jobs");
		if (SPI_processed != 1)
			elog(ERROR, "coord.metrics_state has no row");
		args[0] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		CoordExec(&plan_purged_add,
				  "INSERT INTO coord.queue_totals AS t (queue, done, dead, cancelled) "
				  "SELECT p.queue, "
				  "pg_catalog.count(*) FILTER (WHERE p.state OPERATOR(pg_catalog.=) 'done'), "
				  "pg_catalog.count(*) FILTER (WHERE p.state OPERATOR(pg_catalog.=) 'dead'), "
				  "pg_catalog.count(*) FILTER (WHERE p.state OPERATOR(pg_catalog.=) 'cancelled') "
				  "FROM purged_rows AS p WHERE p.finished_at OPERATOR(pg_catalog.>=) $1 GROUP BY p.queue "
				  "ON CONFLICT (queue) DO UPDATE SET done = t.done OPERATOR(pg_catalog.+) excluded.done, "
				  "dead = t.dead OPERATOR(pg_catalog.+) excluded.dead, "
				  "cancelled = t.cancelled OPERATOR(pg_catalog.+) excluded.cancelled",
				  1, argtypes, args, NULL, SPI_OK_INSERT, "counting purged jobs");
	}
	CoordSpiEnd(&sw);
	PG_RETURN_POINTER(NULL);
}

/*
 * The fold: history rows finished before the horizon go into
 * coord.queue_totals.  Not under a transaction snapshot (REPEATABLE READ
 * would count rows a trigger counted already), nor while a prepared
 * transaction of this database may hold history rows of any age.
 */
static void
MetricsFold(void)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[2];
	Oid			dbtype = OIDOID;
	Datum		db = ObjectIdGetDatum(MyDatabaseId);
	bool		isnull;

	if (IsolationUsesXactSnapshot())
		return;
	CoordExec(&plan_fold_lock,
			  "SELECT s.folded_to FROM coord.metrics_state AS s FOR UPDATE SKIP LOCKED",
			  0, NULL, NULL, NULL, SPI_OK_SELECT, "folding the metrics");
	if (SPI_processed != 1)
		return;
	args[0] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

	/*
	 * the oldest open transaction's start: a history row's finished_at is a
	 * clock reading taken inside its transaction; a second for a transaction
	 * that has taken its start time but not yet shown it
	 */
	CoordExec(&plan_fold_horizon,
			  "SELECT CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_prepared_xacts AS x "
			  "WHERE x.database OPERATOR(pg_catalog.=) pg_catalog.current_database()) THEN NULL ELSE "
			  "LEAST(pg_catalog.clock_timestamp(), (SELECT pg_catalog.min(a.xact_start) "
			  "FROM pg_catalog.pg_stat_get_activity(NULL) AS a "
			  "WHERE a.datid OPERATOR(pg_catalog.=) $1 AND a.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid())) "
			  "OPERATOR(pg_catalog.-) '1 second'::pg_catalog.interval END",
			  1, &dbtype, &db, NULL, SPI_OK_SELECT, "folding the metrics");
	args[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull || DatumGetTimestampTz(args[1]) <= DatumGetTimestampTz(args[0]))
		return;
	CoordExec(&plan_fold_add,
			  "INSERT INTO coord.queue_totals AS t (queue, done, dead, cancelled) "
			  "SELECT h.queue, "
			  "pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'done'), "
			  "pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'dead'), "
			  "pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'cancelled') "
			  "FROM coord.job_history AS h WHERE h.finished_at OPERATOR(pg_catalog.>=) $1 "
			  "AND h.finished_at OPERATOR(pg_catalog.<) $2 GROUP BY h.queue "
			  "ON CONFLICT (queue) DO UPDATE SET done = t.done OPERATOR(pg_catalog.+) excluded.done, "
			  "dead = t.dead OPERATOR(pg_catalog.+) excluded.dead, "
			  "cancelled = t.cancelled OPERATOR(pg_catalog.+) excluded.cancelled",
			  2, argtypes, args, NULL, SPI_OK_INSERT, "folding the metrics");
	CoordExec(&plan_fold_mark,
			  "UPDATE coord.metrics_state SET folded_to = $2",
			  2, argtypes, args, NULL, SPI_OK_UPDATE, "folding the metrics");
}

/*
 * The counts of the live jobs for coord.metrics while they are many: taken
 * when the planner's estimate or the last count says so, at most every
 * METRICS_COUNT_EVERY_S.  The state row taken SKIP LOCKED, as the fold
 * takes it: a history DELETE in a long transaction holds it FOR SHARE (the
 * purge trigger), and a tick never waits for that.
 */
static void
MetricsCount(void)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		args[2];
	bool		isnull;

	args[0] = Int64GetDatum(METRICS_LIVE_MAX);
	args[1] = Int32GetDatum(METRICS_COUNT_EVERY_S);
	CoordExec(&plan_count_size,
			  "SELECT (s.large OR (SELECT pg_catalog.sum(GREATEST(c.reltuples, 0)) FROM pg_catalog.pg_class AS c "
			  "WHERE c.oid OPERATOR(pg_catalog.=) ANY (ARRAY['coord.job'::pg_catalog.regclass, "
			  "'coord.job_wait'::pg_catalog.regclass])) OPERATOR(pg_catalog.>=) ($1 OPERATOR(pg_catalog./) 2)) "
			  "AND (s.counted_at IS NULL OR s.counted_at OPERATOR(pg_catalog.<=) (pg_catalog.clock_timestamp() "
			  "OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $2))) "
			  "FROM coord.metrics_state AS s FOR UPDATE OF s SKIP LOCKED",
			  2, argtypes, args, NULL, SPI_OK_SELECT, "counting the live jobs");
	if (SPI_processed != 1 ||
		!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) || isnull)
		return;
	CoordExec(&plan_count_clear, "DELETE FROM coord.queue_counts", 0, NULL, NULL, NULL,
			  SPI_OK_DELETE, "counting the live jobs");
	CoordExec(&plan_count_take,
			  "INSERT INTO coord.queue_counts (queue, ready, scheduled, running, waiting, oldest_ready, enqueued) "
			  "WITH " LIVE_CTE ", " FINISHED_CTE ", "
			  "qs AS (SELECT l.queue FROM live AS l UNION SELECT w.queue FROM wait AS w) "
			  "SELECT q.queue, COALESCE(l.ready, 0), COALESCE(l.scheduled, 0), COALESCE(l.running, 0), "
			  "COALESCE(w.waiting, 0), l.oldest_ready, "
			  "COALESCE(f.done, 0) OPERATOR(pg_catalog.+) COALESCE(f.dead, 0) OPERATOR(pg_catalog.+) "
			  "COALESCE(f.cancelled, 0) OPERATOR(pg_catalog.+) COALESCE(l.ready, 0) OPERATOR(pg_catalog.+) "
			  "COALESCE(l.scheduled, 0) OPERATOR(pg_catalog.+) COALESCE(l.running, 0) OPERATOR(pg_catalog.+) "
			  "COALESCE(w.waiting, 0) "
			  "FROM qs AS q LEFT JOIN live AS l ON l.queue OPERATOR(pg_catalog.=) q.queue "
			  "LEFT JOIN wait AS w ON w.queue OPERATOR(pg_catalog.=) q.queue "
			  "LEFT JOIN fin AS f ON f.queue OPERATOR(pg_catalog.=) q.queue",
			  0, NULL, NULL, NULL, SPI_OK_INSERT, "counting the live jobs");
	args[0] = Int64GetDatum(METRICS_LIVE_MAX);
	CoordExec(&plan_count_mark,
			  "UPDATE coord.metrics_state SET counted_at = pg_catalog.clock_timestamp(), "
			  "large = (SELECT COALESCE(pg_catalog.sum(c.ready OPERATOR(pg_catalog.+) c.scheduled "
			  "OPERATOR(pg_catalog.+) c.running OPERATOR(pg_catalog.+) c.waiting), 0) "
			  "FROM coord.queue_counts AS c) OPERATOR(pg_catalog.>=) $1",
			  1, argtypes, args, NULL, SPI_OK_UPDATE, "counting the live jobs");
}

static void
MetricsTickOne(void *arg)
{
	MetricsFold();
	MetricsCount();
}

/*
 * coord.tick's share (as the owner, in its SPI connection): the fold, then
 * the counts when due.  In a subtransaction: a failure costs a WARNING.
 */
void
CoordMetricsTick(void)
{
	ErrorData  *e = CoordIsolated(MetricsTickOne, NULL);

	if (e != NULL)
		ereport(WARNING,
				(errmsg("coord.tick could not count the metrics"),
				 errdetail("%s", e->message),
				 errhint("The next tick tries again; coord.metrics stays exact meanwhile.")));
}
