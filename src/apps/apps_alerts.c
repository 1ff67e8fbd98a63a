/*-------------------------------------------------------------------------
 * apps_alerts.c
 *		Alerts of app runs (docs/apps.md, Alerts): coord.app_alerts, read
 *		through the view coord.alerts, and the NOTIFY "coord:alerts".
 *
 * Three kinds (deadline, timeout, dead), each at most one open per run
 * (app, period_start): the unique index app_alerts_open makes a second
 * raise a no-op.  Every raise that inserts a row sends NOTIFY
 * "coord:alerts" in the same statement, so a listener hears of an alert
 * exactly when it becomes visible; clearing notifies nobody.
 *
 * All statements run inside SPI as the owner, in the caller's transaction
 * (the tick's, or the finishing one's); nothing here takes a lock of its
 * own beyond the rows and the index entries.
 *
 * Who raises and clears each kind, a deadline raised as its run finishes,
 * and retention: src/apps/README.md, "Alerts (apps_alerts.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "apps/apps_int.h"

/* the most deadline alerts one tick raises (the next tick raises the rest) */
#define ALERTS_PER_TICK		1000

static SPIPlanPtr plan_raise_deadline = NULL;
static SPIPlanPtr plan_purge_alerts = NULL;
static SPIPlanPtr plan_clear_alerts = NULL;
static SPIPlanPtr plan_raise_dead = NULL;
static SPIPlanPtr plan_raise_timeout = NULL;
static SPIPlanPtr plan_dead_by_timeout = NULL;
static SPIPlanPtr plan_drop_alerts = NULL;

/* the NOTIFY of the rows an INSERT ... RETURNING app, period_start, kind raised */
#define ALERT_NOTIFY \
	"SELECT pg_catalog.count(pg_catalog.pg_notify('coord:alerts', " \
	"pg_catalog.json_build_object('app', i.app, 'period_start', " \
	"pg_catalog.to_char(pg_catalog.timezone('UTC'::pg_catalog.text, i.period_start), 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), " \
	"'kind', i.kind)::pg_catalog.text)) " \
	"FROM i"

/*
 * The tick's share: raises the deadline alerts of late live runs as of now,
 * and purges cleared alerts past the retention.  Returns how many it raised.
 * The lateness test subtracts times (an interval) rather than adding the
 * deadline to a time, so that no deadline, however long, overflows.
 */
int64
AppsAlertsTick(TimestampTz now)
{
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		args[1];
	bool		isnull;
	int64		raised;

	args[0] = TimestampTzGetDatum(now);
	CoordExec(&plan_raise_deadline,
			  "WITH i AS (INSERT INTO coord.app_alerts (app, period_start, kind, raised_at, detail) "
			  "SELECT r.app, r.period_start, 'deadline', $1, "
			  "pg_catalog.format('unfinished %s after its period ended at %s (deadline %s)', "
			  "$1 OPERATOR(pg_catalog.-) r.period_end, r.period_end, d.deadline) "
			  "FROM coord.app_runs AS r "
			  "JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) r.app "
			  "WHERE r.state OPERATOR(pg_catalog.=) 'live' AND d.deadline IS NOT NULL "
			  "AND r.period_end OPERATOR(pg_catalog.<) $1 "
			  "AND ($1 OPERATOR(pg_catalog.-) r.period_end) OPERATOR(pg_catalog.>) d.deadline "
			  "AND NOT EXISTS (SELECT 1 FROM coord.app_alerts AS a "
			  "WHERE a.app OPERATOR(pg_catalog.=) r.app "
			  "AND a.period_start OPERATOR(pg_catalog.=) r.period_start "
			  "AND a.kind OPERATOR(pg_catalog.=) 'deadline' AND a.cleared_at IS NULL) "
			  "ORDER BY r.app COLLATE pg_catalog.\"C\", r.period_start "
			  "LIMIT " CppAsString2(ALERTS_PER_TICK) " FOR UPDATE OF r SKIP LOCKED "
			  "ON CONFLICT (app, period_start, kind) WHERE cleared_at IS NULL DO NOTHING "
			  "RETURNING app, period_start, kind) "
			  ALERT_NOTIFY,
			  1, argtypes, args, NULL, SPI_OK_SELECT, "tick");
	raised = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* cleared alerts go after the retention, like the runs' jobs */
	CoordExec(&plan_purge_alerts,
			  "DELETE FROM coord.app_alerts "
			  "WHERE cleared_at IS NOT NULL "
			  "AND cleared_at OPERATOR(pg_catalog.<) $1 "
			  "AND ($1 OPERATOR(pg_catalog.-) cleared_at) OPERATOR(pg_catalog.>) "
			  "pg_catalog.current_setting('coord.job_history_retention')::pg_catalog.interval "
			  "AND pg_catalog.current_setting('coord.job_history_retention')::pg_catalog.interval "
			  "OPERATOR(pg_catalog.>) '0'::pg_catalog.interval",
			  1, argtypes, args, NULL, SPI_OK_DELETE, "tick");
	return raised;
}

/*
 * The finish hook's share, for a run just recorded in state `state`: clears
 * its open deadline and timeout alerts (and its dead alert once it is done),
 * and raises a dead alert when it died.
 */
void
AppsAlertsRunFinished(const char *app, TimestampTz start, const char *state, TimestampTz finished_at)
{
	Oid			argtypes[4] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, BOOLOID};
	Datum		args[4];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(start);
	args[2] = TimestampTzGetDatum(finished_at);
	args[3] = BoolGetDatum(strcmp(state, "done") == 0);
	CoordExec(&plan_clear_alerts,
			  "UPDATE coord.app_alerts SET cleared_at = $3 "
			  "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) $2 "
			  "AND cleared_at IS NULL "
			  "AND (kind OPERATOR(pg_catalog.<>) 'dead' OR $4)",
			  4, argtypes, args, NULL, SPI_OK_UPDATE, "recording a run");
	if (strcmp(state, "dead") != 0)
		return;
	CoordExec(&plan_raise_dead,
			  "WITH i AS (INSERT INTO coord.app_alerts (app, period_start, kind, raised_at, detail) "
			  "SELECT r.app, r.period_start, 'dead', $3, "
			  "pg_catalog.format('died after %s %s', r.attempts, "
			  "CASE WHEN r.attempts OPERATOR(pg_catalog.=) 1 THEN 'attempt' ELSE 'attempts' END) "
			  "FROM coord.app_runs AS r "
			  "WHERE r.app OPERATOR(pg_catalog.=) $1 AND r.period_start OPERATOR(pg_catalog.=) $2 "
			  "ON CONFLICT (app, period_start, kind) WHERE cleared_at IS NULL DO NOTHING "
			  "RETURNING app, period_start, kind) "
			  ALERT_NOTIFY,
			  4, argtypes, args, NULL, SPI_OK_SELECT, "recording a run");
}

/*
 * A tick revoked the claim of a run past its timeout (at the tick's now):
 * retried (died false), it raises the run's timeout alert or counts one more
 * event of the open one; died (its last attempt), the dead alert the finish
 * hook raised says why.
 */
void
AppsAlertTimeout(const char *app, TimestampTz start, TimestampTz now, const char *why, bool died)
{
	Oid			argtypes[4] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID};
	Datum		args[4];

	args[0] = CStringGetTextDatum(app);
	args[1] = TimestampTzGetDatum(start);
	args[2] = TimestampTzGetDatum(now);
	args[3] = CStringGetTextDatum(why);
	if (died)
	{
		CoordExec(&plan_dead_by_timeout,
				  "UPDATE coord.app_alerts SET detail = detail OPERATOR(pg_catalog.||) ', the last ' "
				  "OPERATOR(pg_catalog.||) $4 "
				  "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) $2 "
				  "AND kind OPERATOR(pg_catalog.=) 'dead' AND cleared_at IS NULL",
				  4, argtypes, args, NULL, SPI_OK_UPDATE, "tick");
		return;
	}
	CoordExec(&plan_raise_timeout,
			  "WITH u AS (UPDATE coord.app_alerts SET events = events OPERATOR(pg_catalog.+) 1, detail = $4 "
			  "WHERE app OPERATOR(pg_catalog.=) $1 AND period_start OPERATOR(pg_catalog.=) $2 "
			  "AND kind OPERATOR(pg_catalog.=) 'timeout' AND cleared_at IS NULL RETURNING 1), "
			  "i AS (INSERT INTO coord.app_alerts (app, period_start, kind, raised_at, detail) "
			  "SELECT $1, $2, 'timeout', $3, $4 WHERE NOT EXISTS (SELECT 1 FROM u) "
			  "ON CONFLICT (app, period_start, kind) WHERE cleared_at IS NULL DO NOTHING "
			  "RETURNING app, period_start, kind) "
			  ALERT_NOTIFY,
			  4, argtypes, args, NULL, SPI_OK_SELECT, "tick");
}

/* drop_app: the app's alerts go with its runs */
void
AppsAlertsDropApp(const char *app)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = CStringGetTextDatum(app);
	CoordExec(&plan_drop_alerts,
			  "DELETE FROM coord.app_alerts WHERE app OPERATOR(pg_catalog.=) $1",
			  1, argtypes, args, NULL, SPI_OK_DELETE, "drop_app");
}
