/*-------------------------------------------------------------------------
 * jobs_int.h
 *		What the files of the job queue share among themselves: jobs.c,
 *		jobs_claim.c, jobs_finish.c, jobs_next.c and the others include it, and no
 *		other file may (the queue's interface is jobs.h).
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_JOBS_INT_H
#define PG_COORD_JOBS_INT_H

#include "postgres.h"

#include "storage/itemptr.h"
#include "storage/lock.h"
#include "access/tupdesc.h"

#include "common/common.h"
#include "compat.h"
#include "jobs/jobs.h"

/*
 * Not exported from the library: these names are the family's own, and a
 * library loaded before ours (RTLD_GLOBAL) with a symbol of the same name
 * would otherwise take over our calls to it.
 */
#ifdef __GNUC__
#pragma GCC visibility push(hidden)
#endif

/* GUCs (jobs_common.c defines them) */
extern bool coord_notify;
extern int	coord_job_history_retention;
extern int	coord_claim_rescan_interval;
extern int	coord_claim_rescan_max;
extern int	coord_max_retry_after;
extern int	coord_max_idle_marks;

/*
 * The OIDs of coord.job, coord.job_history and coord.job_token_seq, looked
 * up by name once (JobsLookupRels); marked stale, with the caches built on
 * the relations (jobs_claim.c's column numbers, jobs_finish.c's archive
 * map) forgotten, when the relcache entry of any of them is invalidated
 * (DDL, DROP and CREATE EXTENSION, but also statistics updates and cache
 * resets, which can arrive at any catalog access in the middle of a call),
 * so the next call looks again.  The OIDs themselves stay readable until
 * then: a call in flight keeps using the ones it started with.
 */
typedef struct JobRels
{
	Oid			job;
	Oid			history;
	Oid			token_seq;
	Oid			limit;			/* coord.job_limit and coord.job_pause: their */
	Oid			pause;			/* invalidations reset jobs_limits.c's cache */
	bool		valid;			/* false: look them up again at the next call */
} JobRels;

extern JobRels jobs_rels;

/*
 * The caches of jobs_claim.c, jobs_finish.c and jobs_limits.c, called by
 * jobs_common.c's relcache and transaction callbacks (registered by
 * CoordJobsInit, jobs.c): rels_inval when coord.job, job_history or
 * job_token_seq changes, limits_inval when coord.job_limit or job_pause
 * does, xact_end at the end of every transaction.
 */
typedef struct JobsCacheHooks
{
	void		(*rels_inval) (void);
	void		(*limits_inval) (void);
	void		(*xact_end) (void);
} JobsCacheHooks;

/* jobs_common.c: relations, claim locks, wake-ups, session claims */
extern void JobsCommonInit(const JobsCacheHooks *hooks);
extern void JobsLookupRels(void);
extern void JobsJobTag(LOCKTAG *tag, int64 id);
extern void JobsWakeAtCommit(const char *queue, const char *host);
extern void JobsSetIdle(const char *channel, bool idle);
extern char *JobsClaimKey(int64 id);
extern bool JobsHoldsSessionClaim(int64 id);
extern bool JobsSessionClaimLive(int64 id);
extern bool JobsActsForAnyClaimant(Oid caller);
extern void JobsDropSessionClaim(int64 id);
extern void JobsForgetClaimIfGone(int64 id);
extern void JobsNoteFinished(int64 id);

/* jobs_claim.c */
extern void JobsClaimInit(void);
extern void JobsClaimRelsInval(void);

/* jobs_enqueue.c: enqueue and waiting jobs */
extern int32 JobsMaxAttemptsArg(FunctionCallInfo fcinfo, int argno);
extern Datum JobsIdsArray(const int64 *ids, int n);
extern int64 JobsEnqueueKeyed(const char *queue, Jsonb *payload, Datum run_at, bool run_at_null, int32 priority,
							  const char *host, int32 max_attempts, const char *request_key, Oid enqueued_by);

/* jobs_claim_row.c: the claim's writes through the table access method */
typedef struct ClaimWriter
{
	Relation	rel;
	Oid			token_seq;
	TupleTableSlot *old;
	TupleTableSlot *new;
	EState	   *estate;			/* only once an update was not HOT */
	ResultRelInfo *rri;
} ClaimWriter;
extern void JobsClaimWriterOpen(ClaimWriter *w);
extern void JobsClaimWriterClose(ClaimWriter *w);
extern HeapTuple JobsClaimRow(ClaimWriter *w, ItemPointer tid, bool session_bound, Oid claimant, Datum lease,
							  TupleDesc outdesc, MemoryContext cxt, bool *mine);

/* jobs_limits.c: flow control (its header; src/jobs/README.md) */
typedef struct LimitSpec
{
	int32		conc;			/* 0: no concurrency limit */
	int32		rate;			/* 0: no rate limit */
	int64		per_us;
	int32		burst;
} LimitSpec;

typedef struct QueueLimits
{
	char		queue[COORD_NAME_MAX + 1];	/* hash key: must be first */
	bool		valid;
	bool		any;			/* anything below applies */
	LimitSpec	q;				/* the whole queue's */
	LimitSpec	k;				/* each limit_key's */
	TimestampTz paused_until;	/* 0: not paused; DT_NOEND: until resumed */
	bool		key_pauses;		/* some key of the queue may be paused */
} QueueLimits;

/* A (queue, key) in one claim call: decided once, under its lock. */
typedef struct KeyState
{
	uint64		hkey;			/* hash key: must be first */
	char	   *key;
	int			keylen;
	bool		per_key;		/* a limit_key's scope, or the whole queue's */
	bool		decided;
	bool		ok;
	bool		locked_here;
	bool		has_bucket;
	bool		has_conc;
	TimestampTz bucket_at;		/* tokens are as of this time (has_bucket) */
	int			room;			/* claims it may take in all */
	int			pending;		/* taken by this call */
	int32	   *free;			/* free slot numbers (has_conc) */
	int			nfree;
	int			used;			/* of free, written by JobsLimitScanEnd */
	int			nrows;			/* rows of free slots: their numbers, tids */
	int32	   *row_slot;
	ItemPointerData *row_tid;
	double		tokens;
	LOCKTAG		tag;
} KeyState;

typedef struct LimitScan
{
	QueueLimits *ql;
	char	   *queue;
	MemoryContext cxt;
	TimestampTz now;
	KeyState	qs;				/* the whole queue (key '') */
	HTAB	   *keys;			/* KeyState by hash of limit_key */
	int64		last_id;		/* the job JobsLimitFree let through last */
	KeyState   *last;
	int			n;				/* jobs the claim wants */
	KeyState  **taken;			/* the key of each job taken (NULL: none) */
	int64	   *taken_ids;
	int			ntaken;
	bool		skipped;		/* a job was left behind for its limit */
	bool		contended;		/* a key was skipped because its lock was busy */
	LOCKTAG		contended_tag;
} LimitScan;

extern void JobsLimitsInval(void);
extern void JobsLimitsXactEnd(void);
extern bool JobsLimitsAnywhere(void);
extern QueueLimits *JobsLimitsFor(const char *queue);
extern LimitScan *JobsLimitScanBegin(const char *queue, QueueLimits *ql, MemoryContext cxt, int n,
									 bool *claimable);
extern bool JobsLimitFree(LimitScan *ls, int64 id, text *limit_key);
extern bool JobsLimitTakeOk(LimitScan *ls, int64 id);
extern void JobsLimitTaken(LimitScan *ls, int64 id);
extern void JobsLimitScanEnd(LimitScan *ls, const int64 *ids, const int64 *tokens, int n);
extern bool JobsLimitWaitContended(LimitScan *ls, int got);
extern void JobsLimitJobFinished(const char *queue);
extern bool JobsLimitPause(const char *queue, text *key, TimestampTz until, bool extend);
extern void JobsLimitsChanged(bool pauses, const char *queue);
extern double JobsBucketNow(double tokens, TimestampTz refilled_at, TimestampTz now, const LimitSpec *s);
extern TimestampTz JobsBucketRefill(double tokens, TimestampTz now, const LimitSpec *s);
extern void JobsKeyTag(LOCKTAG *tag, const char *queue, const char *key, int keylen);

/*
 * jobs.c: complete's and fail's work, for coord.complete_and_claim and
 * fail_and_claim (jobs_next.c): their arguments, checked by *Args as
 * coord.complete and coord.fail check them (before any work), then the work.
 */
typedef struct JobsComplete
{
	int64		id;
	int64		token;
	Datum		result;			/* jsonb; (Datum) 0 when result_null */
	bool		result_null;
} JobsComplete;
typedef struct JobsFail
{
	int64		id;
	int64		token;
	char	   *error;			/* or NULL */
	int64		delay_us;		/* retry_after; -1: none (backoff) */
	bool		pause_key;
} JobsFail;
extern void JobsCompleteArgs(FunctionCallInfo fcinfo, JobsComplete *cm);
extern bool JobsCompleteOne(const JobsComplete *cm, Oid caller, char **queue, MemoryContext cxt);
extern char *JobsRowQueue(MemoryContext cxt);
extern void JobsFailArgs(FunctionCallInfo fcinfo, JobsFail *f);
extern const char *JobsFailOne(const JobsFail *f, Oid caller, char **queue, MemoryContext cxt);

/*
 * jobs_claim.c: a claim for other entry points than coord.claim
 * (jobs_next.c).  JobsClaimArgPos names the argument numbers of the claim's
 * arguments (-1: not an argument, its default); JobsClaimArgs checks them
 * (before any work) and JobsClaimRun claims from queue, outside SPI (it
 * runs its own, as coord.claim does): the rows, formed with outdesc
 * (coord.claimed_job's columns), in claim order, in the caller's context.
 */
typedef struct JobsClaimArgPos
{
	int			queue;
	int			n;
	int			lease;
	int			host;
	int			session_bound;
	int			partition;
	int			partitions;
	int			pgroup;
} JobsClaimArgPos;
typedef struct ClaimCall ClaimCall;
extern ClaimCall *JobsClaimArgs(FunctionCallInfo fcinfo, const JobsClaimArgPos *pos);
extern int	JobsClaimRun(ClaimCall *c, char *queue, TupleDesc outdesc, HeapTuple **rows);

/* jobs_finish.c: inside SPI, as the owner */
extern void JobsFinishRelsInval(void);
extern uint64 JobsArchive(const char *st, const char *error, Datum result, bool result_null);
extern const CoordJobWaitHooks *JobsWaitHooks(void);
extern bool JobsMoveToHistory(int64 id, bool with_token, int64 token, const char *st, const char *error);

#ifdef __GNUC__
#pragma GCC visibility pop
#endif

#endif							/* PG_COORD_JOBS_INT_H */
