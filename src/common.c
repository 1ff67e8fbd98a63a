/*-------------------------------------------------------------------------
 * common.c
 *		Helpers shared by every pg_coord concern.
 *
 * Argument checks raise the contract's SQLSTATEs (22004 for a NULL where a
 * value is required, 22023 for a malformed value).  SPI work runs as the
 * owner of schema coord with SECURITY_RESTRICTED_OPERATION, so the tables
 * behind the functions need no grants to callers, and every statement names
 * its objects and operators with a schema, so the caller's search_path can
 * never substitute objects of its own.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "common.h"

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
 * CoordSetPathTag builds the lock tag of a path key: database, the two
 * halves of the key (as pg_advisory_lock(bigint) lays them out), and our
 * namespace in field4.
 */
void
CoordSetPathTag(LOCKTAG *tag, uint64 key)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (key >> 32), (uint32) key,
						 COORD_NS_PATH);
}

/*
 * CoordOwnerId returns the owner of schema coord, which the install script
 * creates, so it is the role that installed the extension.
 */
Oid
CoordOwnerId(void)
{
	Oid			nspid = get_namespace_oid(COORD_SCHEMA, true);
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema \"%s\" does not exist", COORD_SCHEMA),
				 errhint("Run CREATE EXTENSION pg_coord in this database.")));
	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nspid);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * CoordBecomeOwner switches to the extension owner for SPI work.  The
 * restricted-operation flag keeps the owner's rights from being used for
 * anything but our own statements; an error restores the caller's identity
 * through transaction abort.
 */
void
CoordBecomeOwner(CoordUserSwitch *sw)
{
	GetUserIdAndSecContext(&sw->save_userid, &sw->save_sec_context);
	SetUserIdAndSecContext(CoordOwnerId(),
						   sw->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

void
CoordRestoreUser(const CoordUserSwitch *sw)
{
	SetUserIdAndSecContext(sw->save_userid, sw->save_sec_context);
}

/*
 * CoordPlan returns the saved plan in *slot, preparing and keeping it on
 * first use.  Must be called between SPI_connect and SPI_finish.  Saved plans
 * are revalidated by the plan cache after DDL, so they survive a DROP and
 * CREATE EXTENSION in the same backend.
 */
SPIPlanPtr
CoordPlan(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes)
{
	if (*slot == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, (Oid *) argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s",
				 sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*slot = plan;
	}
	return *slot;
}
