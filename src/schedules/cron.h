/*-------------------------------------------------------------------------
 * cron.h
 *		Five-field cron expressions: parsing, and the next fire time in UTC
 *		or in the local wall time of a time zone.
 *
 * Plain C99 with no PostgreSQL headers and no allocation, so that the
 * extension and the standalone harness in test/cron link the same code.
 * src/schedules/README.md ("Cron expressions") describes the accepted
 * syntax and the matching rules.
 *-------------------------------------------------------------------------
 */
#ifndef PG_COORD_CRON_H
#define PG_COORD_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longer expressions are rejected before any parsing. */
#define COORD_CRON_MAX_LEN	256

/*
 * A parsed expression: one bit per allowed value of each field.  Day of week
 * 7 is folded into 0 (Sunday).  The *_star flags record whether the field's
 * text began with '*' (@hourly's hour does): the day fields' decide how
 * they combine, the minute's and hour's whether the expression follows the
 * wall clock through an offset change (see coord_cron_next_tz).
 */
typedef struct CoordCron
{
	uint64_t	minutes;		/* bit m set: minute m (0-59) */
	uint32_t	hours;			/* bit h: hour 0-23 */
	uint32_t	mdays;			/* bit d: day of month 1-31 */
	uint16_t	months;			/* bit m: month 1-12 */
	uint8_t		wdays;			/* bit w: day of week 0-6, 0 = Sunday */
	bool		minute_star;	/* field text began with '*' */
	bool		hour_star;
	bool		mday_star;
	bool		wday_star;
} CoordCron;

/*
 * Returns true on success; on failure writes a sentence naming the field
 * into err (always NUL-terminated when errlen > 0) and leaves *out alone.
 */
extern bool coord_cron_parse(const char *expr, CoordCron *out,
							 char *err, size_t errlen);

/*
 * Smallest fire time strictly greater than `after`, both in seconds since
 * 1970-01-01 00:00:00 UTC; results are always at second 0 of a minute.
 * Returns -1 when the expression can never fire (such as 30 February), or
 * when `after` lies outside years 1..9999.
 */
extern int64_t coord_cron_next(const CoordCron *c, int64_t after);

/*
 * A time zone as coord_cron_next_tz sees it: its UTC offset as a function
 * of time, told one change at a time (the extension feeds it PostgreSQL's
 * time zone database, the harness a table).  next_change sets *off_at_t to
 * the offset in effect at instant t (seconds east of UTC) and returns
 * whether the offset changes after t; if so, *when is the first change
 * strictly after t and *off_after the offset from *when on.  A change that
 * keeps the offset (only the abbreviation changes) may be reported.
 */
typedef struct CoordCronZone
{
	bool		(*next_change) (void *arg, int64_t t, int64_t *when,
								int32_t *off_at_t, int32_t *off_after);
	void	   *arg;
} CoordCronZone;

/*
 * As coord_cron_next, but the fields match local wall time in `zone`
 * (NULL: UTC).  An expression whose minute or hour field begins with '*'
 * (a wildcard, as in cronie) fires whenever the local clock shows a
 * matching minute: twice in a repeated hour, never in a skipped one.  Any
 * other fires each matching local time once, at the first instant the
 * local clock reaches it or jumps past it: a time that a spring-forward
 * skips at the change itself, the first instant after the gap, and one
 * that a fall-back repeats at its first occurrence only.  Results are UTC
 * seconds, at second 0 of a local minute or at a change; -1 as for
 * coord_cron_next.
 */
extern int64_t coord_cron_next_tz(const CoordCron *c, int64_t after,
								  const CoordCronZone *zone);

#endif							/* PG_COORD_CRON_H */
