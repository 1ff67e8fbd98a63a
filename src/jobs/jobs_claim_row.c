/*-------------------------------------------------------------------------
 * jobs_claim_row.c
 *		The claim's writes (jobs family; src/jobs/README.md): the rows a claim
 *		statement has locked are claimed through the table access method.
 *
 * Owns where coord.job's columns are (JobCols, forgotten by
 * JobsClaimRelsInval on a relcache invalidation), the writer a claim opens
 * once per statement (ClaimWriter: the relation, two slots, and an executor
 * state only once an update was not HOT), and JobsClaimRow, which claims one
 * locked row: attempt + 1, a new token, the lease, claimed_at/claimed_by,
 * last_error.  Invariant: JobsClaimRow is given only rows the claim statement
 * has locked FOR UPDATE, by the ctid of the version locked, so any result
 * but success is an error.  Called by jobs_claim.c only.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "jobs/jobs_int.h"

/* Where the claim reads and writes coord.job's columns (attribute numbers). */
typedef struct JobCols
{
	Oid			relid;
	TupleDesc	desc;			/* the relcache's, to notice a changed table */
	AttrNumber	id,
				queue,
				payload,
				attempt,
				max_attempts,
				token,
				lease,
				lease_until,
				key,
				group_key,
				host,
				run_at,
				claimed_at,
				claimed_by,
				last_error,
				expires_at,
				trace;
} JobCols;

static JobCols jobcols;

void
JobsClaimRelsInval(void)
{
	jobcols.relid = InvalidOid;
}

static AttrNumber
JobCol(TupleDesc desc, const char *name)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return i + 1;
	elog(ERROR, "coord.job has no column %s", name);
	return 0;					/* keep compiler quiet */
}

static void
LoadJobCols(Relation rel)
{
	TupleDesc	d = RelationGetDescr(rel);

	if (jobcols.relid == RelationGetRelid(rel) && jobcols.desc == d)
		return;
	jobcols.relid = InvalidOid;
	jobcols.id = JobCol(d, "id");
	jobcols.queue = JobCol(d, "queue");
	jobcols.payload = JobCol(d, "payload");
	jobcols.attempt = JobCol(d, "attempt");
	jobcols.max_attempts = JobCol(d, "max_attempts");
	jobcols.token = JobCol(d, "token");
	jobcols.lease = JobCol(d, "lease");
	jobcols.lease_until = JobCol(d, "lease_until");
	jobcols.key = JobCol(d, "key");
	jobcols.group_key = JobCol(d, "group_key");
	jobcols.host = JobCol(d, "host");
	jobcols.run_at = JobCol(d, "run_at");
	jobcols.claimed_at = JobCol(d, "claimed_at");
	jobcols.claimed_by = JobCol(d, "claimed_by");
	jobcols.last_error = JobCol(d, "last_error");
	jobcols.expires_at = JobCol(d, "expires_at");
	jobcols.trace = JobCol(d, "trace");
	jobcols.desc = d;
	jobcols.relid = RelationGetRelid(rel);
}

/*
 * The claimed jobs' rows are written through the table access method: the
 * claim statement has locked each one (FOR UPDATE) and returned its ctid,
 * which is that of the version it locked, so the update cannot meet a
 * concurrent change.  A claim changes only unindexed columns, so the update
 * is HOT and touches no index unless the page is full; only then are the
 * indexes opened.  This spares the claim an UPDATE's ModifyTable, its
 * primary-key scan and its projections.
 */

void
JobsClaimWriterOpen(ClaimWriter *w)
{
	JobsLookupRels();
	w->token_seq = jobs_rels.token_seq;
	w->rel = table_open(jobs_rels.job, RowExclusiveLock);
	LoadJobCols(w->rel);
	w->old = table_slot_create(w->rel, NULL);
	w->new = MakeSingleTupleTableSlot(RelationGetDescr(w->rel), &TTSOpsVirtual);
	w->estate = NULL;
	w->rri = NULL;
}

void
JobsClaimWriterClose(ClaimWriter *w)
{
	if (w->rri != NULL)
	{
		ExecCloseIndices(w->rri);
		FreeExecutorState(w->estate);
	}
	ExecDropSingleTupleTableSlot(w->old);
	ExecDropSingleTupleTableSlot(w->new);
	table_close(w->rel, NoLock);
	CommandCounterIncrement();
}

/*
 * JobsClaimRow claims the locked row at tid: attempt + 1, a new token, the lease
 * (or none for a session-bound claim), claimed_at, the claiming role
 * (claimed_by), and in last_error why an
 * unfinished previous claim was lost.  Returns the claimed job as a row of
 * outdesc (coord.claimed_job), in the claim call's context; NULL, claiming
 * nothing, for a job past its expires_at (tested here, where the row is
 * deformed anyway, rather than in the claim's statement, whose every
 * candidate would then be walked to its last columns) or whose every
 * attempt is spent, and NULL with *mine for a job this transaction has
 * claimed already.  The row lock rules out a concurrent change, so
 * anything but success is an error.
 */
HeapTuple
JobsClaimRow(ClaimWriter *w, ItemPointer tid, bool session_bound, Oid claimant, Datum lease,
			 TupleDesc outdesc, MemoryContext cxt, bool *mine)
{
	TupleDesc	desc = RelationGetDescr(w->rel);
	Datum	   *v;
	bool	   *n;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	CoordUpdateIndexes update_indexes;
	TM_Result	res;
	bool		was_claimed,
				had_lease;
	Datum		out[11];
	bool		outnull[11];
	AttrNumber	outcols[11];
	HeapTuple	result;
	MemoryContext old;
	int			i;

	*mine = false;
	if (!table_tuple_fetch_row_version(w->rel, tid, SnapshotAny, w->old))
		elog(ERROR, "a job the claim locked is gone");
	slot_getallattrs(w->old);

	/*
	 * Claimed by this transaction already (its version, claimed at this
	 * transaction's start), whose lease has passed since: a transaction
	 * claims a job once, as when a lease claim held a transaction lock.  A
	 * new claim would hand the job it still works on out again, with a new
	 * token, or kill it at its last attempt.  Rolled back to a savepoint, the
	 * version is not this one; failed by the transaction, claimed_at is NULL.
	 */
	{
		bool		isnull;
		Datum		xmin = slot_getsysattr(w->old, MinTransactionIdAttributeNumber, &isnull);

		if (!isnull && TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)) &&
			!w->old->tts_isnull[jobcols.claimed_at - 1] &&
			DatumGetTimestampTz(w->old->tts_values[jobcols.claimed_at - 1]) ==
			GetCurrentTransactionStartTimestamp())
		{
			*mine = true;
			ExecClearTuple(w->old);
			return NULL;
		}
	}

	/*
	 * past its expires_at or spent: not claimed (the caller sets it aside to
	 * die)
	 */
	if ((!w->old->tts_isnull[jobcols.expires_at - 1] &&
		 DatumGetTimestampTz(w->old->tts_values[jobcols.expires_at - 1]) <= GetCurrentStatementStartTimestamp()) ||
		DatumGetInt32(w->old->tts_values[jobcols.attempt - 1]) >=
		DatumGetInt32(w->old->tts_values[jobcols.max_attempts - 1]))
		return NULL;
	ExecClearTuple(w->new);
	v = w->new->tts_values;
	n = w->new->tts_isnull;
	memcpy(v, w->old->tts_values, sizeof(Datum) * desc->natts);
	memcpy(n, w->old->tts_isnull, sizeof(bool) * desc->natts);

	was_claimed = !n[jobcols.claimed_at - 1];
	had_lease = !n[jobcols.lease_until - 1];
	v[jobcols.attempt - 1] = Int32GetDatum(DatumGetInt32(v[jobcols.attempt - 1]) + 1);
	v[jobcols.token - 1] = Int64GetDatum(nextval_internal(w->token_seq, false));
	if (session_bound)
	{
		n[jobcols.lease - 1] = true;
		n[jobcols.lease_until - 1] = true;
	}
	else
	{
		v[jobcols.lease - 1] = lease;
		n[jobcols.lease - 1] = false;
		v[jobcols.lease_until - 1] =
			DirectFunctionCall2(timestamptz_pl_interval,
								TimestampTzGetDatum(GetCurrentTimestamp()), lease);
		n[jobcols.lease_until - 1] = false;
	}
	v[jobcols.claimed_at - 1] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	n[jobcols.claimed_at - 1] = false;
	v[jobcols.claimed_by - 1] = ObjectIdGetDatum(claimant);
	n[jobcols.claimed_by - 1] = false;
	if (was_claimed)
	{
		/* its previous claim never finished (fail clears claimed_at) */
		v[jobcols.last_error - 1] = CStringGetTextDatum(had_lease ?
														"claim lost: the lease expired" :
														"claim lost: the claiming session ended");
		n[jobcols.last_error - 1] = false;
	}
	ExecStoreVirtualTuple(w->new);

	res = table_tuple_update(w->rel, tid, w->new, GetCurrentCommandId(true),
							 GetActiveSnapshot(), InvalidSnapshot, true,
							 &tmfd, &lockmode, &update_indexes);
	if (res != TM_Ok)
		elog(ERROR, "unexpected table_tuple_update status %d for a job the claim locked", (int) res);
	if (CoordNeedsIndexTuples(update_indexes))
	{
		if (w->rri == NULL)
		{
			MemoryContext o = MemoryContextSwitchTo(cxt);

			w->estate = CreateExecutorState();
			w->rri = makeNode(ResultRelInfo);
			InitResultRelInfo(w->rri, w->rel, 1, NULL, 0);
			ExecOpenIndices(w->rri, false);
			MemoryContextSwitchTo(o);
		}

		/*
		 * update = false: true would read the range table we have none of. It
		 * only hints bottom-up index deletion; a claim is rarely not HOT.
		 */
		(void) CoordExecInsertIndexTuples(w->rri, w->new, w->estate, update_indexes);
		ResetPerTupleExprContext(w->estate);
	}

	/*
	 * id, queue, payload, attempt, token, lease_until, key, group_key, host,
	 * run_at, trace (the row is deformed whole already: the trace costs the
	 * claim one more column of its result)
	 */
	outcols[0] = jobcols.id;
	outcols[1] = jobcols.queue;
	outcols[2] = jobcols.payload;
	outcols[3] = jobcols.attempt;
	outcols[4] = jobcols.token;
	outcols[5] = jobcols.lease_until;
	outcols[6] = jobcols.key;
	outcols[7] = jobcols.group_key;
	outcols[8] = jobcols.host;
	outcols[9] = jobcols.run_at;
	outcols[10] = jobcols.trace;
	if (outdesc->natts != 11)
		elog(ERROR, "coord.claimed_job has %d columns, not 11", outdesc->natts);
	for (i = 0; i < 11; i++)
	{
		out[i] = v[outcols[i] - 1];
		outnull[i] = n[outcols[i] - 1];
	}
	old = MemoryContextSwitchTo(cxt);
	result = heap_form_tuple(outdesc, out, outnull);
	MemoryContextSwitchTo(old);
	ExecClearTuple(w->new);
	ExecClearTuple(w->old);
	return result;
}
