/*-------------------------------------------------------------------------
 * common_args.c
 *		Checks of what callers pass in (common family; see common.c):
 *		required and named arguments, durations, payload and value sizes,
 *		lock paths and the 64-bit name keys names hash to, time arithmetic
 *		that stays inside the timestamptz range, and the refusal of
 *		parallel workers.
 *
 * Protocol.  Functions of their arguments alone: no state, no locks, no
 * SPI, so nothing to undo at abort.  Errors carry the contract's
 * SQLSTATEs: 22004 for a NULL where a value is required, 22023 for a
 * malformed value, 54000 for one too large, 22015 and 22008 for a
 * duration or time out of range, 25000 in a parallel worker.
 *
 * Name keys are stored (coord.lock_names) and shown (pg_locks), so their
 * hash and its seed never change.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "common/common.h"

/* Seed of the name hash; changing it would move every lock to a new key. */
#define COORD_NAME_HASH_SEED	UINT64CONST(0x636f6f72645f7631)

/*
 * CoordRequireArg raises 22004 when a required argument is NULL.  The SQL
 * functions are not STRICT so that a NULL gets an error, never a silent NULL.
 */
void
CoordRequireArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
}

/*
 * CoordIntervalToMicroseconds turns a duration argument into microseconds,
 * counting a month as 30 days as PostgreSQL does for interval arithmetic.
 */
int64
CoordIntervalToMicroseconds(const Interval *span, const char *argname, bool allow_zero)
{
	int64		days;
	int64		usec;

	days = (int64) span->month * DAYS_PER_MONTH + span->day;
	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &usec) ||
		pg_add_s64_overflow(usec, span->time, &usec))
		ereport(ERROR,
				(errcode(ERRCODE_INTERVAL_FIELD_OVERFLOW),
				 errmsg("%s is out of range", argname)));
	if (usec < 0 || (usec == 0 && !allow_zero))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s", argname,
						allow_zero ? "zero or positive" : "positive"),
				 errdetail("The value given was %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(span))))));
	return usec;
}

/*
 * PathForMessage clips a path so that an error message stays readable.
 */
static const char *
PathForMessage(const char *path, int len)
{
	int			clip;

	if (len <= 80)
		return path;
	clip = pg_mbcliplen(path, len, 80);
	return psprintf("%.*s...", clip, path);
}

static void
InvalidPath(const char *path, int len, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid lock path \"%s\"", PathForMessage(path, len)),
			 errdetail("%s", detail),
			 errhint("A lock path looks like \"/component/batch-7\": it starts with \"/\" and has non-empty segments separated by \"/\".")));
}

/*
 * CoordParsePath validates a lock path and computes the name key of the path
 * and of each ancestor.  The rules are those of ZooKeeper node paths.
 */
void
CoordParsePath(text *path_text, CoordPath *out)
{
	char	   *path = text_to_cstring(path_text);
	int			len = strlen(path);
	int			seg_start;
	int			i;

	out->path = path;
	out->len = len;
	out->depth = 0;

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock path must not be empty"),
				 errhint("A lock path looks like \"/component/batch-7\".")));
	if (len > COORD_PATH_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock path is too long"),
				 errdetail("A lock path has at most %d bytes; this one has %d.",
						   COORD_PATH_MAX_BYTES, len)));
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) path[i];

		/* C0 controls, DEL, and in UTF-8 the C1 controls U+0080..U+009F */
		if (c < 0x20 || c == 0x7f ||
			(c == 0xc2 && i + 1 < len && (unsigned char) path[i + 1] >= 0x80 &&
			 (unsigned char) path[i + 1] <= 0x9f && GetDatabaseEncoding() == PG_UTF8))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid lock path"),
					 errdetail("A lock path must not contain control characters (byte %d is 0x%02x).",
							   i + 1, c)));
	}
	if (path[0] != '/')
		InvalidPath(path, len, "A lock path must start with \"/\".");
	if (len == 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot lock the root path \"/\""),
				 errdetail("The root is the parent of every path and takes no locks."),
				 errhint("Lock a path below it, such as \"/app\".")));
	if (path[len - 1] == '/')
		InvalidPath(path, len, "A lock path must not end with \"/\".");

	seg_start = 1;
	for (i = 1; i <= len; i++)
	{
		int			seglen;

		if (i < len && path[i] != '/')
			continue;
		seglen = i - seg_start;
		if (seglen == 0)
			InvalidPath(path, len, "A lock path must not contain an empty segment (\"//\").");
		if ((seglen == 1 && path[seg_start] == '.') ||
			(seglen == 2 && path[seg_start] == '.' && path[seg_start + 1] == '.'))
			InvalidPath(path, len, "A lock path must not contain \".\" or \"..\" segments.");
		if (out->depth >= COORD_PATH_MAX_DEPTH)
			InvalidPath(path, len, psprintf("A lock path has at most %d segments.",
											COORD_PATH_MAX_DEPTH));
		out->ends[out->depth] = i;
		out->keys[out->depth] = CoordNameKey(path, i);
		out->depth++;
		seg_start = i + 1;
	}
}

/*
 * CoordNameKey is the 64-bit name key of a path (or of any other name).
 * hash_bytes_extended is stable across platforms and releases (hash
 * partitioning stores its results), so keys can be kept in tables.
 */
uint64
CoordNameKey(const char *name, int len)
{
	return hash_bytes_extended((const unsigned char *) name, len, COORD_NAME_HASH_SEED);
}

/*
 * CoordNotInParallel comes first in every function that changes state or
 * takes locks, before any lock, SPI or cache work (only argument fetching
 * and checks in declarations precede it).  Reached from a parallel worker
 * (a caller's function wrongly marked PARALLEL SAFE under
 * force_parallel_mode, debug_parallel_query from PostgreSQL 16), its locks
 * would belong to a process that is about to exit, and its writes are
 * refused by the core, some only as an internal error (XX000) deep inside;
 * refuse it up front, with the SQLSTATE the core uses for writes in
 * parallel mode.  One test per call: cheap enough for claims.
 */
void
CoordNotInParallel(FunctionCallInfo fcinfo)
{
	char	   *name = NULL;

	if (likely(!IsInParallelMode()))
		return;
	if (fcinfo->flinfo != NULL)
		name = get_func_name(fcinfo->flinfo->fn_oid);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
			 errmsg("cannot call %s%s during a parallel operation",
					name ? "coord." : "a pg_coord function", name ? name : ""),
			 errdetail("pg_coord's functions that change state or take locks run only in the session's own backend."),
			 errhint("Do not mark a function that calls it PARALLEL SAFE.")));
}

/* Queue and host names become NOTIFY channels: a short, plain alphabet. */
char *
CoordNameArg(FunctionCallInfo fcinfo, int argno, const char *what, bool nullable)
{
	char	   *name;
	int			len;
	int			i;

	if (nullable && PG_ARGISNULL(argno))
		return NULL;
	CoordRequireArg(fcinfo, argno, what);
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	len = strlen(name);
	if (len == 0 || len > COORD_NAME_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s name must have 1 to %d bytes", what, COORD_NAME_MAX)));
	for (i = 0; i < len; i++)
	{
		char		c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-' || c == '.' || c == ':' || c == '/'))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid %s name \"%s\"", what, name),
					 errdetail("Such a name has only letters, digits and the characters _ - . : /.")));
	}
	return name;
}

Jsonb *
CoordCheckPayload(Jsonb *payload)
{
	if (VARSIZE(payload) > COORD_PAYLOAD_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("job payload is too large"),
				 errdetail("A payload has at most %d bytes; this one has %d.",
						   COORD_PAYLOAD_MAX_BYTES, (int) VARSIZE(payload)),
				 errhint("Store large data in a table and put its key in the payload.")));
	return payload;
}

/*
 * CoordCheckSize raises 54000 when a value a caller stores (what: "job
 * result", ...) has more than max bytes.
 */
void
CoordCheckSize(const char *what, Size size, Size max)
{
	if (size > max)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is too large", what),
				 errdetail("A %s has at most %zu bytes; this one has %zu.", what, max, size),
				 errhint("Store large data in a table and refer to it by its key.")));
}

/*
 * CoordTimeAdd is t + usec, or 22008 when that is outside the timestamptz
 * range: nothing pg_coord stores may be a time PostgreSQL cannot read back
 * (or restore from a dump).  what names the time in the message.
 */
TimestampTz
CoordTimeAdd(TimestampTz t, int64 usec, const char *what)
{
	TimestampTz r;

	if (TIMESTAMP_NOT_FINITE(t) || pg_add_s64_overflow(t, usec, &r) || !IS_VALID_TIMESTAMP(r))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range", what),
				 errdetail("It would lie outside the range of timestamp with time zone.")));
	return r;
}
