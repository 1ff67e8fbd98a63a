/*-------------------------------------------------------------------------
 * apps_periods.h
 *		Where an app's runs start when coord.define_app stores it, and the
 *		periods themselves (local calendar periods in a time zone): pure
 *		functions.
 *
 * Plain C99 with no PostgreSQL headers and no allocation (as cron.h), so
 * that the extension and the standalone harness in test/apps link the same
 * code.  Times are TimestampTz values: microseconds since 2000-01-01 UTC.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_APPS_PERIODS_H
#define PG_COORD_APPS_PERIODS_H

#include <stdbool.h>
#include <stdint.h>

/* An app's period length (its grain), or of a dependency. */
typedef enum Grain
{
	G_NONE = 0,
	G_HOURLY,
	G_DAILY,
	G_WEEKLY,
	G_MONTHLY,
	G_YEARLY
} Grain;

/* coord.app_defs.first_period and next_period; *_null: SQL NULL */
typedef struct AppPeriods
{
	bool		first_null;
	int64_t		first_period;
	bool		next_null;
	int64_t		next_period;
} AppPeriods;

typedef struct AppPeriodsInput
{
	bool		exists;			/* the app is stored already */
	Grain		stored_grain;	/* its stored grain (when exists) */
	AppPeriods	stored;			/* its stored periods (when exists) */
	Grain		grain;			/* the new definition's grain */
	bool		zone_changed;	/* the new definition has another tz */
	bool		has_catchup;	/* catchup_from was given */
	int64_t		catchup_start;	/* the start of the period of grain that holds
								 * it */
} AppPeriodsInput;

/*
 * The periods define_app stores (apps_periods.c has the rules).  A NULL
 * period is returned as 0.
 */
extern AppPeriods coord_app_periods(const AppPeriodsInput *in);

/*
 * A time zone as the period functions see it: its UTC offset as a function
 * of time, told one change at a time (the extension feeds it PostgreSQL's
 * time zone database through pg_next_dst_boundary, the harness a table).
 * next_change sets *off_at_t to the offset in effect at instant t (seconds
 * east of UTC) and returns whether the offset changes after t; if so, *when
 * is the first change strictly after t and *off_after the offset from then
 * on.  A change that keeps the offset may be reported.  Times here are
 * TimestampTz; changes fall on whole seconds.  A NULL zone is UTC.
 */
typedef struct AppZone
{
	bool		(*next_change) (void *arg, int64_t t, int64_t *when,
								int32_t *off_at_t, int32_t *off_after);
	void	   *arg;
} AppZone;

/*
 * The periods of grain g in zone z (apps_periods.c, "Periods in a time
 * zone").  coord_period_trunc: the start of the period that contains t;
 * coord_period_next: the start of the period after the one starting at
 * start (always later than start).  Both return false when the answer
 * would lie outside the years 1 to 9999 of local time (or t is not a
 * time those years can hold).
 */
extern bool coord_period_trunc(Grain g, int64_t t, const AppZone *z, int64_t *out);
extern bool coord_period_next(Grain g, int64_t start, const AppZone *z, int64_t *out);

/* Longest label with its terminating NUL: 2026-11-01-010000+055328 */
#define COORD_PERIOD_LABEL_LEN	32

/*
 * The label of a period start, as run keys and job origins carry it.  UTC
 * (z NULL): "YYYY-MM-DD-HH24MI" of the UTC time.  In a zone: the local wall
 * time and the UTC offset in effect at start, "YYYY-MM-DD-HH24MI+HHMM" (or
 * -HHMM; seconds appended to either when they are not zero), so that the
 * two 01:00 hours of a fall-back night have different labels.  buf has
 * COORD_PERIOD_LABEL_LEN bytes.  coord_period_parse_label reads either
 * form back to the start it was made from; false if s is not a label.
 */
extern void coord_period_label(int64_t start, const AppZone *z, char *buf);
extern bool coord_period_parse_label(const char *s, int64_t *start);

#endif							/* PG_COORD_APPS_PERIODS_H */
