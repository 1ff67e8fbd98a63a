/*-------------------------------------------------------------------------
 * common_tz.c
 *		Time zones as pg_coord's cron schedules (schedules.c) and app
 *		periods (apps_graph.c) see them (common family; see common.c): a zone
 *		name resolved against PostgreSQL's time zone database, and where a
 *		zone's UTC offset changes.
 *
 * Protocol.  No state of ours, no locks, no SPI: pg_tzset caches the zones
 * it loads for the backend's life, so nothing to undo at abort.
 *
 * Names.  CoordZoneLookup and CoordZoneArg accept what pg_tzset accepts and
 * give back the name as PostgreSQL spells it (America/Chicago for
 * america/chicago), which callers store and compare.  A zone that is UTC at
 * every instant (UTC, Etc/UTC, Zulu) is returned as NULL, so that its users
 * take their plain UTC paths (cron.c's search, UTC period labels).  A zone
 * with leap seconds (right/...) is refused: PostgreSQL's timestamps have
 * none.  Errors are 22023, with the same messages for schedules and apps.
 *
 * Offset changes.  cron.c and apps_periods.c are plain C and learn a
 * zone's offsets one change at a time through a callback of one shape
 * (CoordCronZone, AppZone); CoordZoneNextChangeUnix and
 * CoordZoneNextChangeTs are that callback over pg_next_dst_boundary, in
 * seconds since 1970 (cron) and in TimestampTz microseconds (apps).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "pgtime.h"

#include "common/common.h"

/* pg_time_t is seconds since 1970, TimestampTz microseconds since 2000 */
#define TZ_UNIX_EPOCH_SECS	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

/*
 * The offset of tz at the second t (seconds since 1970, east of UTC) and the
 * first change strictly after t.  pg_next_dst_boundary answers "at or
 * after" at the zone's very first transition, hence the second try.
 */
static bool
ZoneNextChange(const pg_tz *tz, pg_time_t t, pg_time_t *when, int32_t *off_at_t, int32_t *off_after)
{
	pg_time_t	from = t;
	pg_time_t	boundary = 0;
	long int	before_off = 0;
	long int	after_off = 0;
	int			before_dst;
	int			after_dst;
	int			r;

	r = pg_next_dst_boundary(&from, &before_off, &before_dst, &boundary,
							 &after_off, &after_dst, tz);
	if (r == 1 && boundary <= from)
	{
		from = t + 1;
		r = pg_next_dst_boundary(&from, &before_off, &before_dst, &boundary,
								 &after_off, &after_dst, tz);
	}
	if (r < 0)
		elog(ERROR, "could not find the next UTC offset change of a time zone after " INT64_FORMAT,
			 (int64) t);
	*off_at_t = (int32_t) before_off;
	if (r == 0)
		return false;
	*when = boundary;
	*off_after = (int32_t) after_off;
	return true;
}

/* The callback in seconds since 1970 (cron.h's CoordCronZone); arg: pg_tz */
bool
CoordZoneNextChangeUnix(void *arg, int64_t t, int64_t *when, int32_t *off_at_t, int32_t *off_after)
{
	pg_time_t	w = 0;
	bool		r = ZoneNextChange((const pg_tz *) arg, (pg_time_t) t, &w, off_at_t, off_after);

	if (r)
		*when = (int64_t) w;
	return r;
}

/*
 * The callback in TimestampTz (apps_periods.h's AppZone); arg: pg_tz.
 * Changes fall on whole seconds, so the second holding t decides.
 */
bool
CoordZoneNextChangeTs(void *arg, int64_t t, int64_t *when, int32_t *off_at_t, int32_t *off_after)
{
	pg_time_t	secs = (pg_time_t) (t / USECS_PER_SEC - (t % USECS_PER_SEC < 0 ? 1 : 0));
	pg_time_t	w = 0;
	bool		r = ZoneNextChange((const pg_tz *) arg, secs + TZ_UNIX_EPOCH_SECS, &w, off_at_t, off_after);

	if (r)
		*when = ((int64_t) w - TZ_UNIX_EPOCH_SECS) * USECS_PER_SEC;
	return r;
}

/*
 * Why a name is not a zone we take: COORD_ZONE_OK when it is one.  *zone and
 * *canonical are set when it is.
 */
typedef enum CoordZoneFailure
{
	COORD_ZONE_OK,
	COORD_ZONE_TOO_LONG,
	COORD_ZONE_UNKNOWN,
	COORD_ZONE_LEAP_SECONDS
} CoordZoneFailure;

static CoordZoneFailure
ResolveZone(const char *name, pg_tz **zone, char **canonical)
{
	pg_tz	   *tz = NULL;
	long int	gmtoff;

	*zone = NULL;
	/* the default of every tz argument needs no lookup */
	if (strcmp(name, "UTC") == 0)
	{
		*canonical = pstrdup("UTC");
		return COORD_ZONE_OK;
	}
	if (strlen(name) > TZ_STRLEN_MAX)
		return COORD_ZONE_TOO_LONG;
	if (name[0] != '\0')
		tz = pg_tzset(name);
	if (tz == NULL)
		return COORD_ZONE_UNKNOWN;
	if (!pg_tz_acceptable(tz))
		return COORD_ZONE_LEAP_SECONDS;
	*canonical = pstrdup(pg_get_timezone_name(tz));
	if (!(pg_get_timezone_offset(tz, &gmtoff) && gmtoff == 0))
		*zone = tz;
	return COORD_ZONE_OK;
}

/*
 * The zone a stored name names: false when it names none we take (a zone
 * database changed under a stored definition); the caller decides what
 * that means.  *zone is NULL for UTC (see the header).
 */
bool
CoordZoneLookup(const char *name, pg_tz **zone, char **canonical)
{
	return ResolveZone(name, zone, canonical) == COORD_ZONE_OK;
}

/* The zone of a tz argument (NULL for UTC), or 22023. */
pg_tz *
CoordZoneArg(const char *name, char **canonical)
{
	pg_tz	   *zone;

	switch (ResolveZone(name, &zone, canonical))
	{
		case COORD_ZONE_OK:
			break;
		case COORD_ZONE_TOO_LONG:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time zone name is longer than %d bytes", TZ_STRLEN_MAX)));
			break;
		case COORD_ZONE_UNKNOWN:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time zone \"%s\" not recognized", name),
					 errhint("Use a name from pg_timezone_names, such as America/Chicago, or UTC.")));
			break;
		case COORD_ZONE_LEAP_SECONDS:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time zone \"%s\" appears to use leap seconds", name),
					 errdetail("PostgreSQL does not support leap seconds.")));
			break;
	}
	return zone;
}
