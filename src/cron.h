/*-------------------------------------------------------------------------
 * cron.h
 *		Five-field cron expressions: parsing, and the next fire time in UTC.
 *
 * Plain C99 with no PostgreSQL headers and no allocation, so that the
 * extension and the standalone harness in test/cron link the same code.
 * cron.c describes the accepted syntax and the matching rules.
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
 * text began with '*', which decides how the two day fields combine.
 */
typedef struct CoordCron
{
	uint64_t	minutes;		/* bit m set: minute m (0-59) */
	uint32_t	hours;			/* bit h: hour 0-23 */
	uint32_t	mdays;			/* bit d: day of month 1-31 */
	uint16_t	months;			/* bit m: month 1-12 */
	uint8_t		wdays;			/* bit w: day of week 0-6, 0 = Sunday */
	bool		mday_star;		/* field text began with '*' */
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

#endif							/* PG_COORD_CRON_H */
