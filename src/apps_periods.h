/*-------------------------------------------------------------------------
 * apps_periods.h
 *		Where an app's runs start when coord.define_app stores it: the
 *		decision, as a pure function.
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
	bool		has_catchup;	/* catchup_from was given */
	int64_t		catchup_start;	/* the start of the period of grain that holds
								 * it */
} AppPeriodsInput;

/*
 * The periods define_app stores (apps_periods.c has the rules).  A NULL
 * period is returned as 0.
 */
extern AppPeriods coord_app_periods(const AppPeriodsInput *in);

#endif							/* PG_COORD_APPS_PERIODS_H */
