/*-------------------------------------------------------------------------
 * election.c
 *		Leader election (docs/election.md): coord.campaign,
 *		coord.leader, coord.resign, coord.drop_election and the tick's
 *		share (CoordElectionsTick).
 *
 * The leader of an election holds two session locks, both holds
 * (common_lock.c): the election lock (COORD_NS_ELECTION), which candidates
 * wait for first come first served, and the term lock (COORD_NS_TERM),
 * which only the term's leader ever takes.  A session that ends for any
 * reason loses both at once: no code of ours has to run.
 *
 * coord.elections keeps one row per election.  Terms come from one
 * sequence, written in the campaign's transaction: a term is never handed
 * out twice, and one issued after a crash or failover is larger than every
 * committed one.  coord.leader reports a row only while its term lock is
 * held.  Observers get a NOTIFY on "coord:leader:<election>" at the commit
 * of a change of this session's leadership.  campaign and resign refuse
 * during recovery and in read-only transactions, leader during recovery
 * (25006).
 *
 * Leadership, state, what wakes whom, retention and where it works:
 * src/README.md, "Election (election.c)".
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/common.h"
#include "compat.h"

/* "coord:leader:" plus the name stays within a NOTIFY channel (63 bytes). */
#define ELECTION_CHANNEL_PREFIX	"coord:leader:"
#define ELECTION_NAME_MAX	(NAMEDATALEN - 1 - (int) (sizeof(ELECTION_CHANNEL_PREFIX) - 1))
/* a leader's value: a few labels (8 kB), up to 64 kB for coord_admin */
#define ELECTION_VALUE_MAX	(64 * 1024)
#define ELECTION_WORKER_VALUE_MAX	(8 * 1024)

static SPIPlanPtr plan_win = NULL;
static SPIPlanPtr plan_current = NULL;
static SPIPlanPtr plan_restore = NULL;
static SPIPlanPtr plan_resign = NULL;
static SPIPlanPtr plan_leader = NULL;

PG_FUNCTION_INFO_V1(coord_campaign);
PG_FUNCTION_INFO_V1(coord_leader);
PG_FUNCTION_INFO_V1(coord_resign);
PG_FUNCTION_INFO_V1(coord_drop_election);

/* ---------- helpers ---------- */

static char *
ElectionArg(FunctionCallInfo fcinfo, int argno)
{
	char	   *name;
	int			len;
	int			i;

	CoordRequireArg(fcinfo, argno, "election");
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	len = strlen(name);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("election name must not be empty")));
	if (len > ELECTION_NAME_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("election name is too long"),
				 errdetail("An election name has at most %d bytes, so that its NOTIFY channel \"%s<election>\" fits in %d bytes; this one has %d.",
						   ELECTION_NAME_MAX, ELECTION_CHANNEL_PREFIX, NAMEDATALEN - 1, len)));
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) name[i];

		if (c < 0x20 || c == 0x7f)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid election name"),
					 errdetail("An election name must not contain control characters (byte %d is 0x%02x).",
							   i + 1, c)));
	}
	return name;
}

/* Hold keys of the election lock and of the term lock. */
static char *
ElectionHoldKey(const char *name)
{
	return psprintf("le:%s", name);
}

static char *
TermHoldKey(const char *name)
{
	return psprintf("lt:%s", name);
}

static void
ElectionTag(LOCKTAG *tag, const char *name)
{
	CoordSetTag(tag, CoordNameKey(name, strlen(name)), COORD_NS_ELECTION);
}

static void
TermTag(LOCKTAG *tag, int64 term)
{
	CoordSetTag(tag, (uint64) term, COORD_NS_TERM);
}

/*
 * The elections this transaction campaigned in or resigned from, for the
 * pre-commit NOTIFY: whether this session led the election when the
 * transaction first touched it, and the term of its latest campaign won.
 * Lives in TopTransactionContext.
 */
typedef struct Touched
{
	char		name[ELECTION_NAME_MAX + 1];	/* hash key: must be first */
	bool		led_before;
	int64		term;
} Touched;

static HTAB *touched = NULL;
static bool touched_callback = false;

static void
ElectionXactCallback(XactEvent event, void *arg)
{
	HASH_SEQ_STATUS status;
	Touched    *t;

	if (event == XACT_EVENT_PRE_COMMIT && touched != NULL)
	{
		hash_seq_init(&status, touched);
		while ((t = hash_seq_search(&status)) != NULL)
		{
			CoordHoldStatus now = CoordHoldState(ElectionHoldKey(t->name));
			const char *payload = NULL;

			if (now == HOLD_ACTIVE && !t->led_before)
				payload = psprintf(INT64_FORMAT, t->term);
			else if (now == HOLD_RELEASING)
				payload = "";
			if (payload != NULL)
				Async_Notify(psprintf("%s%s", ELECTION_CHANNEL_PREFIX, t->name), payload);
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
		touched = NULL;			/* went with TopTransactionContext */
}

/* Notes that this transaction touches the election; its entry. */
static Touched *
Touch(const char *name, bool leading)
{
	Touched    *t;
	bool		found;

	if (!touched_callback)
	{
		RegisterXactCallback(ElectionXactCallback, NULL);
		touched_callback = true;
	}
	if (touched == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = ELECTION_NAME_MAX + 1;
		ctl.entrysize = sizeof(Touched);
		ctl.hcxt = TopTransactionContext;
		touched = hash_create("pg_coord elections touched", 16, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	t = hash_search(touched, name, HASH_ENTER, &found);
	if (!found)
	{
		t->led_before = leading;
		t->term = 0;
	}
	return t;
}

static void
RequireWritable(const char *what)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s during recovery", what),
				 errdetail("Leadership lives in the primary's lock manager."),
				 errhint("Connect to the primary, for example with target_session_attrs=read-write.")));
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s in a read-only transaction", what),
				 errdetail("The term is written to coord.elections.")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s under REPEATABLE READ or SERIALIZABLE", what),
				 errdetail("The snapshot can predate the commit of the leader before, whose row this transaction updates."),
				 errhint("Call it in its own READ COMMITTED transaction.")));
}

/* Runs one saved statement on the election's row, as the owner (inside SPI). */
static void
RunElectionPlan(SPIPlanPtr *slot, const char *sql, int expected, const char *name,
				text *value, bool with_owner)
{
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Oid			argtypes[4] = {TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID};
	int			nargs = 1;

	args[0] = PointerGetDatum(cstring_to_text(name));
	if (with_owner)
	{
		args[1] = Int32GetDatum(MyProcPid);
		args[2] = TimestampTzGetDatum(MyStartTimestamp);
		args[3] = PointerGetDatum(value);
		nulls[3] = value == NULL ? 'n' : ' ';
		nargs = 4;
	}
	CoordExec(slot, sql, nargs, argtypes, args, nulls, expected, "a statement on coord.elections");
}

static int64
FirstTerm(const char *what)
{
	bool		isnull;
	Datum		d;

	if (SPI_processed != 1)
		elog(ERROR, "%s found no row of coord.elections", what);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "%s found no term", what);
	return DatumGetInt64(d);
}

/* ---------- SQL-callable functions ---------- */

/*
 * coord.campaign(election text, value text DEFAULT NULL, timeout interval
 * DEFAULT NULL) returns bigint: this session's term once it leads; NULL on
 * timeout.  A session that leads already gets its current term back at
 * once; its value and since stay as they were.
 */
Datum
coord_campaign(PG_FUNCTION_ARGS)
{
	char	   *name;
	text	   *value = NULL;
	int64		timeout_us = -1;
	char	   *ekey;
	char	   *tkey;
	CoordHoldStatus held;
	LOCKTAG		etag;
	LOCKTAG		ttag;
	LOCKMODE	mode = ExclusiveLock;
	CoordUserSwitch sw;
	int64		term;
	Touched    *touch;

	CoordNotInParallel(fcinfo);
	name = ElectionArg(fcinfo, 0);
	if (!PG_ARGISNULL(1))
	{
		value = PG_GETARG_TEXT_PP(1);
		CoordCheckSize("leader value", VARSIZE_ANY_EXHDR(value), ELECTION_VALUE_MAX);
		if (VARSIZE_ANY_EXHDR(value) > ELECTION_WORKER_VALUE_MAX && !CoordIsAdmin(GetUserId()))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("leader value is too large"),
					 errdetail("A leader value has at most %d bytes; this one has %zu.",
							   ELECTION_WORKER_VALUE_MAX, (Size) VARSIZE_ANY_EXHDR(value)),
					 errhint("Members of coord_admin may announce up to %d bytes.", ELECTION_VALUE_MAX)));
	}
	if (!PG_ARGISNULL(2))
		timeout_us = CoordIntervalToMicroseconds(PG_GETARG_INTERVAL_P(2), "timeout", true);
	RequireWritable("campaign");

	ekey = ElectionHoldKey(name);
	tkey = TermHoldKey(name);
	held = CoordHoldState(ekey);
	touch = Touch(name, held == HOLD_ACTIVE && CoordHoldState(tkey) == HOLD_ACTIVE);
	if (held != HOLD_NONE && CoordHoldState(tkey) == held)
	{
		/* leading already (or resigned earlier in this transaction) */
		CoordSpiBegin(&sw);
		if (held == HOLD_ACTIVE)
			RunElectionPlan(&plan_current,
							"SELECT term FROM coord.elections "
							"WHERE election OPERATOR(pg_catalog.=) $1 "
							"AND pid OPERATOR(pg_catalog.=) $2 "
							"AND backend_start OPERATOR(pg_catalog.=) $3",
							SPI_OK_SELECT, name, NULL, true);
		else
			RunElectionPlan(&plan_restore,
							"UPDATE coord.elections SET pid = $2, backend_start = $3 "
							"WHERE election OPERATOR(pg_catalog.=) $1 RETURNING term",
							SPI_OK_UPDATE_RETURNING, name, NULL, true);
		term = FirstTerm("campaigning again");
		CoordSpiEnd(&sw);
		if (held == HOLD_RELEASING)
		{
			/* the resign is undone: keep both locks past the commit */
			CoordHoldKeep(ekey);
			CoordHoldKeep(tkey);
		}
		PG_RETURN_INT64(term);
	}
	/* one of the two let go behind our back: what is left of it goes too */
	CoordHoldDrop(ekey);
	CoordHoldDrop(tkey);

	ElectionTag(&etag, name);
	if (!CoordAcquire(&etag, &mode, 1, true, timeout_us, false))
		PG_RETURN_NULL();
	CoordHoldTaken(ekey, &etag);	/* released if this transaction aborts */

	CoordSpiBegin(&sw);
	RunElectionPlan(&plan_win,
					"INSERT INTO coord.elections AS e "
					"(election, term, value, pid, backend_start, since) "
					"VALUES ($1, pg_catalog.nextval('coord.election_term_seq'::pg_catalog.regclass), "
					"$4, $2, $3, pg_catalog.clock_timestamp()) "
					"ON CONFLICT (election) DO UPDATE SET term = excluded.term, "
					"value = excluded.value, pid = excluded.pid, "
					"backend_start = excluded.backend_start, since = excluded.since "
					"RETURNING e.term",
					SPI_OK_INSERT_RETURNING, name, value, true);
	term = FirstTerm("winning an election");
	CoordSpiEnd(&sw);

	/* nobody else ever takes a new term's lock: granted at once */
	TermTag(&ttag, term);
	if (!CoordAcquire(&ttag, &mode, 1, true, -1, false))
		elog(ERROR, "could not take the lock of term " INT64_FORMAT, term);
	CoordHoldTaken(tkey, &ttag);

	touch->term = term;			/* notified at commit if still leading */
	PG_RETURN_INT64(term);
}

/*
 * coord.resign(election text) returns boolean: true if this session led;
 * it leads no more once this transaction commits (a rollback keeps it
 * leading).  False, changing nothing, if it did not lead.
 */
Datum
coord_resign(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *ekey;
	char	   *tkey;
	CoordUserSwitch sw;

	CoordNotInParallel(fcinfo);
	name = ElectionArg(fcinfo, 0);
	ekey = ElectionHoldKey(name);
	tkey = TermHoldKey(name);
	if (CoordHoldState(ekey) != HOLD_ACTIVE || CoordHoldState(tkey) != HOLD_ACTIVE)
		PG_RETURN_BOOL(false);
	RequireWritable("resign");
	(void) Touch(name, true);

	CoordSpiBegin(&sw);
	RunElectionPlan(&plan_resign,
					"UPDATE coord.elections SET pid = NULL, backend_start = NULL "
					"WHERE election OPERATOR(pg_catalog.=) $1 "
					"AND pid OPERATOR(pg_catalog.=) $2 "
					"AND backend_start OPERATOR(pg_catalog.=) $3",
					SPI_OK_UPDATE, name, NULL, true);
	CoordSpiEnd(&sw);

	CoordHoldRelease(ekey);
	CoordHoldRelease(tkey);
	PG_RETURN_BOOL(true);
}

/*
 * coord.leader(election text) returns (value, pid, since, term): one row
 * while a session leads, none otherwise.
 */
Datum
coord_leader(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	CoordUserSwitch sw;
	Datum		values[4];
	bool		nulls[4];
	TimestampTz started = 0;
	TimestampTz since = 0;
	int64		term = 0;
	bool		found = false;
	LOCKTAG		ttag;

	CoordNotInParallel(fcinfo); /* it probes the lock manager */
	name = ElectionArg(fcinfo, 0);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot read the leader during recovery"),
				 errdetail("Leadership lives in the primary's lock manager, which a standby does not see."),
				 errhint("Connect to the primary, for example with target_session_attrs=read-write.")));
	InitMaterializedSRF(fcinfo, 0);

	CoordSpiBegin(&sw);
	RunElectionPlan(&plan_leader,
					"SELECT value, pid, since, term, backend_start FROM coord.elections "
					"WHERE election OPERATOR(pg_catalog.=) $1 AND pid IS NOT NULL",
					SPI_OK_SELECT, name, NULL, false);
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			i;

		for (i = 0; i < 4; i++)
			values[i] = SPI_getbinval(tup, desc, i + 1, &nulls[i]);
		values[0] = nulls[0] ? (Datum) 0 : SPI_datumTransfer(values[0], false, -1);
		started = DatumGetTimestampTz(SPI_getbinval(tup, desc, 5, &isnull));
		found = !nulls[1] && !nulls[2] && !nulls[3] && !isnull;
		if (found)
		{
			since = DatumGetTimestampTz(values[2]);
			term = DatumGetInt64(values[3]);
		}
	}
	CoordSpiEnd(&sw);
	if (!found)
		return (Datum) 0;
	values[2] = TimestampTzGetDatum(since);
	values[3] = Int64GetDatum(term);

	TermTag(&ttag, term);
	if (DatumGetInt32(values[1]) == MyProcPid && started == MyStartTimestamp)
		found = CoordLockHeldByMe(&ttag, ExclusiveLock);
	else
	{
		/* held by the term's leader iff a share probe cannot have it */
		LockAcquireResult r = CoordLockTake(&ttag, ShareLock, false, true);

		found = (r == LOCKACQUIRE_NOT_AVAIL);
		if (!found)
			CoordLockLetGo(&ttag, ShareLock, false);
	}
	if (found)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* The statement both purges share: an election's row without a live leader. */
#define ELECTION_GONE(e) \
	"(" e ".pid IS NULL OR NOT EXISTS (SELECT 1 FROM coord.leader(" e ".election)))"

/*
 * CoordElectionsTick: the tick's share (docs/operations/sizing.md).  Deletes up to
 * a batch of rows without a live leader whose term began before horizon;
 * rows a campaign or resign has locked are skipped (coord.leader reads the
 * row again with a fresh snapshot, and probes the term lock).
 */
int64
CoordElectionsTick(TimestampTz horizon)
{
	static SPIPlanPtr plan_purge = NULL;

	return CoordPurge(&plan_purge,
					  "DELETE FROM coord.elections AS e "
					  "WHERE e.election OPERATOR(pg_catalog.=) ANY (ARRAY("
					  "SELECT x.election FROM coord.elections AS x "
					  "WHERE x.since OPERATOR(pg_catalog.<) $1 AND " ELECTION_GONE("x") " "
					  "LIMIT $2 FOR UPDATE SKIP LOCKED))",
					  horizon, "purging elections");
}

/*
 * coord.drop_election(election text) returns boolean: deletes the
 * election's row now (coord_admin's); false when there is none, 55000 while
 * a session leads it.  Candidates waiting keep waiting: the one that wins
 * inserts the row again, with a new term.
 */
Datum
coord_drop_election(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan_lock = NULL;
	static SPIPlanPtr plan_drop = NULL;
	char	   *name;
	CoordUserSwitch sw;
	Datum		args[1];
	Oid			argtypes[1] = {TEXTOID};
	bool		dropped;

	CoordNotInParallel(fcinfo);
	name = ElectionArg(fcinfo, 0);
	RequireWritable("drop an election");
	args[0] = PointerGetDatum(cstring_to_text(name));
	CoordSpiBegin(&sw);
	/* the row first: a campaign or resign in flight is waited for */
	CoordExec(&plan_lock,
			  "SELECT e.term, e.pid FROM coord.elections AS e "
			  "WHERE e.election OPERATOR(pg_catalog.=) $1 FOR UPDATE",
			  1, argtypes, args, NULL, SPI_OK_SELECT, "locking an election");
	if (SPI_processed == 0)
	{
		CoordSpiEnd(&sw);
		PG_RETURN_BOOL(false);
	}
	CoordExec(&plan_drop,
			  "DELETE FROM coord.elections AS e "
			  "WHERE e.election OPERATOR(pg_catalog.=) $1 AND " ELECTION_GONE("e"),
			  1, argtypes, args, NULL, SPI_OK_DELETE, "dropping an election");
	dropped = SPI_processed == 1;
	CoordSpiEnd(&sw);
	if (!dropped)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("election \"%s\" has a leader", name),
				 errdetail("An election is dropped only while nobody leads it."),
				 errhint("The leader gives up with coord.resign, or its session ends.")));
	PG_RETURN_BOOL(true);
}
