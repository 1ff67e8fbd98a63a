/*-------------------------------------------------------------------------
 * cron_test.c
 *		Standalone tests of src/schedules/cron.c: a table of expressions
 *		with expected next fire times or error messages, checks of the edges
 *		of the API, and a randomized comparison with a brute-force
 *		reference; the same for time zones (coord_cron_next_tz), with
 *		zones given as tables.
 *
 * The harness has its own calendar (year-by-year loops, nothing shared with
 * cron.c), so a wrong days-from-civil cannot agree with itself.  Run it
 * through test/cron/run.sh.
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schedules/cron.h"

/*
 * One table row.  `next` is the expected fire time after `after`, or "none";
 * for an error row, `after` and `next` are NULL and `error` is a substring
 * the message must contain.
 */
typedef struct CronCase
{
	const char *expr;
	const char *after;
	const char *next;
	const char *error;
} CronCase;

#define OK(e, a, n)		{e, a, n, NULL}
#define NONE(e, a)		{e, a, "none", NULL}
#define ERR(e, s)		{e, NULL, NULL, s}

/* 2025-01-01 is a Wednesday; January 2025 has Mondays on 6, 13, 20, 27. */
static const CronCase cases[] = {
	/* minute field */
	OK("* * * * *", "2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z"),
	OK("* * * * *", "2025-01-01T00:00:30Z", "2025-01-01T00:01:00Z"),
	OK("0 * * * *", "2025-01-01T00:00:00Z", "2025-01-01T01:00:00Z"),
	OK("59 * * * *", "2025-01-01T00:59:00Z", "2025-01-01T01:59:00Z"),
	OK("*/15 * * * *", "2025-01-01T00:14:59Z", "2025-01-01T00:15:00Z"),
	OK("*/15 * * * *", "2025-01-01T00:45:00Z", "2025-01-01T01:00:00Z"),
	OK("1-30/5 * * * *", "2025-01-01T00:12:00Z", "2025-01-01T00:16:00Z"),
	OK("1-30/5 * * * *", "2025-01-01T00:26:00Z", "2025-01-01T01:01:00Z"),
	OK("5/10 * * * *", "2025-01-01T00:46:00Z", "2025-01-01T00:55:00Z"),
	OK("5/10 * * * *", "2025-01-01T00:55:00Z", "2025-01-01T01:05:00Z"),
	OK("0,30 * * * *", "2025-01-01T00:30:00Z", "2025-01-01T01:00:00Z"),
	OK("10-12 * * * *", "2025-01-01T00:12:00Z", "2025-01-01T01:10:00Z"),
	OK("7,3,5 * * * *", "2025-01-01T00:05:00Z", "2025-01-01T00:07:00Z"),
	OK("0-5,50-55/2 * * * *", "2025-01-01T00:05:00Z", "2025-01-01T00:50:00Z"),
	OK("0-5,50-55/2 * * * *", "2025-01-01T00:54:00Z", "2025-01-01T01:00:00Z"),
	OK("0-59 * * * *", "2025-01-01T00:59:59Z", "2025-01-01T01:00:00Z"),
	OK("*/59 * * * *", "2025-01-01T00:00:00Z", "2025-01-01T00:59:00Z"),

	/* hour field */
	OK("0 0 * * *", "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
	OK("30 23 * * *", "2025-01-01T23:30:00Z", "2025-01-02T23:30:00Z"),
	OK("0 */6 * * *", "2025-01-01T18:00:00Z", "2025-01-02T00:00:00Z"),
	OK("15 9-17 * * *", "2025-01-01T08:20:00Z", "2025-01-01T09:15:00Z"),
	OK("15 9-17 * * *", "2025-01-01T17:15:00Z", "2025-01-02T09:15:00Z"),
	OK("0 3/8 * * *", "2025-01-01T11:00:00Z", "2025-01-01T19:00:00Z"),
	OK("45 0,12 * * *", "2025-01-01T12:44:59Z", "2025-01-01T12:45:00Z"),
	OK("0 23 * * *", "2025-01-01T23:00:00Z", "2025-01-02T23:00:00Z"),
	OK("0-1 22-23 * * *", "2025-01-01T22:01:00Z", "2025-01-01T23:00:00Z"),

	/* day-of-month field and month ends */
	OK("0 0 1 * *", "2025-01-15T00:00:00Z", "2025-02-01T00:00:00Z"),
	OK("0 0 31 * *", "2025-01-31T00:00:00Z", "2025-03-31T00:00:00Z"),
	OK("0 0 31 * *", "2025-03-31T00:00:00Z", "2025-05-31T00:00:00Z"),
	OK("0 0 31 * *", "2025-05-31T00:00:00Z", "2025-07-31T00:00:00Z"),
	OK("0 0 31 * *", "2025-07-31T00:00:00Z", "2025-08-31T00:00:00Z"),
	OK("0 0 31 * *", "2025-08-31T00:00:00Z", "2025-10-31T00:00:00Z"),
	OK("0 0 30 * *", "2025-01-30T00:00:00Z", "2025-03-30T00:00:00Z"),
	OK("0 0 29 * *", "2025-01-29T00:00:00Z", "2025-03-29T00:00:00Z"),
	OK("0 0 29 * *", "2024-01-29T00:00:00Z", "2024-02-29T00:00:00Z"),
	OK("0 0 1-7 * *", "2025-01-07T00:00:00Z", "2025-02-01T00:00:00Z"),
	OK("0 12 */10 * *", "2025-01-21T12:00:00Z", "2025-01-31T12:00:00Z"),
	OK("0 12 */10 * *", "2025-02-21T12:00:00Z", "2025-03-01T12:00:00Z"),
	OK("0 0 20/5 * *", "2025-01-30T00:00:00Z", "2025-02-20T00:00:00Z"),

	/* month field, numbers and names */
	OK("0 0 1 1 *", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
	OK("0 0 1 jan *", "2025-06-01T00:00:00Z", "2026-01-01T00:00:00Z"),
	OK("0 0 1 JUN *", "2025-01-01T00:00:00Z", "2025-06-01T00:00:00Z"),
	OK("0 0 1 Jun-Aug *", "2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z"),
	OK("0 0 1 jan,jul *", "2025-02-01T00:00:00Z", "2025-07-01T00:00:00Z"),
	OK("0 0 1 */3 *", "2025-10-01T00:00:00Z", "2026-01-01T00:00:00Z"),
	OK("0 0 1 2/5 *", "2025-07-01T00:00:00Z", "2025-12-01T00:00:00Z"),
	OK("0 0 1 12 *", "2025-12-01T00:00:00Z", "2026-12-01T00:00:00Z"),
	OK("0 0 1 feb-apr/2 *", "2025-02-01T00:00:00Z", "2025-04-01T00:00:00Z"),
	OK("0 0 1 1-12/4,dec *", "2025-09-01T00:00:00Z", "2025-12-01T00:00:00Z"),
	OK("0 0 1 sep-DEC *", "2025-01-01T00:00:00Z", "2025-09-01T00:00:00Z"),

	/* day-of-week field, numbers and names; 0 and 7 are both Sunday */
	OK("0 0 * * 0", "2025-01-01T00:00:00Z", "2025-01-05T00:00:00Z"),
	OK("0 0 * * 7", "2025-01-01T00:00:00Z", "2025-01-05T00:00:00Z"),
	OK("0 0 * * sun", "2025-01-05T00:00:00Z", "2025-01-12T00:00:00Z"),
	OK("0 9 * * MON", "2025-01-01T00:00:00Z", "2025-01-06T09:00:00Z"),
	OK("0 9 * * mon-fri", "2025-01-03T09:00:00Z", "2025-01-06T09:00:00Z"),
	OK("0 9 * * Mon-Fri", "2025-01-01T09:00:00Z", "2025-01-02T09:00:00Z"),
	OK("0 9 * * 1-5", "2025-01-04T08:00:00Z", "2025-01-06T09:00:00Z"),
	OK("0 0 * * sat,sun", "2025-01-01T00:00:00Z", "2025-01-04T00:00:00Z"),
	OK("0 0 * * 5-7", "2025-01-04T00:00:00Z", "2025-01-05T00:00:00Z"),
	OK("0 0 * * 0-7", "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
	OK("0 0 * * */2", "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
	OK("0 0 * * 1/2", "2025-01-03T00:00:00Z", "2025-01-06T00:00:00Z"),
	OK("0 0 * * tue,thu", "2025-01-02T00:00:00Z", "2025-01-07T00:00:00Z"),
	OK("0 0 * * wed-fri/2", "2025-01-01T00:00:00Z", "2025-01-03T00:00:00Z"),
	OK("0 0 * * 7,mon", "2025-01-05T00:00:00Z", "2025-01-06T00:00:00Z"),
	OK("0 0 * * 6", "2025-12-28T00:00:00Z", "2026-01-03T00:00:00Z"),

	/* macros */
	OK("@hourly", "2025-01-01T00:00:00Z", "2025-01-01T01:00:00Z"),
	OK("@daily", "2025-01-01T12:00:00Z", "2025-01-02T00:00:00Z"),
	OK("@midnight", "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
	OK("@weekly", "2025-01-01T00:00:00Z", "2025-01-05T00:00:00Z"),
	OK("@monthly", "2025-01-31T23:59:00Z", "2025-02-01T00:00:00Z"),
	OK("@yearly", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
	OK("@annually", "2025-07-04T00:00:00Z", "2026-01-01T00:00:00Z"),
	OK(" \t@DAILY \t", "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),

	/* leap days */
	OK("0 0 29 2 *", "2025-01-01T00:00:00Z", "2028-02-29T00:00:00Z"),
	OK("0 0 29 2 *", "2024-02-29T00:00:00Z", "2028-02-29T00:00:00Z"),
	OK("0 0 29 2 *", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z"),
	OK("0 0 29 2 *", "1896-03-01T00:00:00Z", "1904-02-29T00:00:00Z"),
	OK("0 0 29 2 *", "1999-03-01T00:00:00Z", "2000-02-29T00:00:00Z"),
	OK("0 0 29 feb *", "1696-03-01T00:00:00Z", "1704-02-29T00:00:00Z"),
	OK("0 0 28 2 *", "2024-02-28T00:00:00Z", "2025-02-28T00:00:00Z"),
	OK("0 0 * 2 *", "2024-02-28T00:00:00Z", "2024-02-29T00:00:00Z"),
	OK("0 0 * 2 *", "2025-02-28T00:00:00Z", "2026-02-01T00:00:00Z"),

	/* both day fields restricted: either one matching is enough */
	OK("0 0 13 * fri", "2025-01-01T00:00:00Z", "2025-01-03T00:00:00Z"),
	OK("0 0 13 * fri", "2025-01-10T00:00:00Z", "2025-01-13T00:00:00Z"),
	OK("0 0 1 * mon", "2025-01-01T00:00:00Z", "2025-01-06T00:00:00Z"),
	OK("0 0 1,15 * sun", "2025-01-12T00:00:00Z", "2025-01-15T00:00:00Z"),
	OK("0 0 31 4 mon", "2025-01-01T00:00:00Z", "2025-04-07T00:00:00Z"),
	OK("0 0 13 * 0-6", "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
	/* one begins with '*': that one matches every day, or keeps its step */
	OK("0 0 * * fri", "2025-01-10T00:00:00Z", "2025-01-17T00:00:00Z"),
	OK("0 0 13 * *", "2025-01-01T00:00:00Z", "2025-01-13T00:00:00Z"),
	OK("0 0 */2 * mon", "2025-01-01T00:00:00Z", "2025-01-13T00:00:00Z"),
	OK("0 0 */2 * mon", "2025-01-13T00:00:00Z", "2025-01-27T00:00:00Z"),
	OK("0 0 13 * */7", "2025-01-01T00:00:00Z", "2025-04-13T00:00:00Z"),
	OK("0 0 13 * */7", "2025-04-13T00:00:00Z", "2025-07-13T00:00:00Z"),
	/* sparse under that rule: further apart than 8 years, and still found */
	OK("0 0 29 2 */7", "2005-01-01T00:00:00Z", "2032-02-29T00:00:00Z"),
	OK("0 0 */30 2 mon", "2027-02-02T00:00:00Z", "2038-02-01T00:00:00Z"),

	/* year rollover */
	OK("59 23 31 12 *", "2025-06-01T00:00:00Z", "2025-12-31T23:59:00Z"),
	OK("59 23 31 12 *", "2025-12-31T23:59:00Z", "2026-12-31T23:59:00Z"),
	OK("* * * * *", "2025-12-31T23:59:59Z", "2026-01-01T00:00:00Z"),
	OK("*/5 * * * *", "2025-12-31T23:58:00Z", "2026-01-01T00:00:00Z"),
	OK("0 0 1 1 *", "1999-12-31T23:59:59Z", "2000-01-01T00:00:00Z"),

	/* `after` exactly on a fire time gives the next one */
	OK("30 12 * * *", "2025-06-15T12:30:00Z", "2025-06-16T12:30:00Z"),
	OK("30 12 * * *", "2025-06-15T12:29:59Z", "2025-06-15T12:30:00Z"),
	OK("30 12 15 6 *", "2025-06-15T12:30:00Z", "2026-06-15T12:30:00Z"),

	/* impossible dates */
	NONE("0 0 30 2 *", "2025-01-01T00:00:00Z"),
	NONE("0 0 31 4 *", "2025-01-01T00:00:00Z"),
	NONE("0 0 31 2,4,6,9,11 *", "2025-01-01T00:00:00Z"),
	NONE("0 0 30,31 feb *", "1970-01-01T00:00:00Z"),
	NONE("0 0 31 4 */7", "2025-01-01T00:00:00Z"),

	/* far from 1970 */
	OK("* * * * *", "1969-12-31T23:59:30Z", "1970-01-01T00:00:00Z"),
	OK("0 0 * * mon", "1900-01-01T00:00:00Z", "1900-01-08T00:00:00Z"),
	OK("0 0 1 1 *", "0001-01-01T00:00:00Z", "0002-01-01T00:00:00Z"),
	OK("0 0 * * *", "0001-02-28T00:00:00Z", "0001-03-01T00:00:00Z"),
	OK("* * * * *", "9999-12-31T23:59:00Z", "10000-01-01T00:00:00Z"),
	OK("0 0 29 2 *", "9999-01-01T00:00:00Z", "10000-02-29T00:00:00Z"),

	/* blanks */
	OK("\t0  0\t * *   *  ", "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
	OK("0\t0\t1\t1\t*", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),

	/* errors */
	ERR("", "cron expression is empty"),
	ERR(" \t ", "cron expression is empty"),
	ERR("* * * *", "expected 5 fields (minute hour day-of-month month day-of-week), found 4"),
	ERR("* * * * * *", "found 6"),
	ERR("60 * * * *", "minute field: value 60 is out of range 0-59"),
	ERR("* 24 * * *", "hour field: value 24 is out of range 0-23"),
	ERR("* * 0 * *", "day-of-month field: value 0 is out of range 1-31"),
	ERR("* * 32 * *", "day-of-month field: value 32 is out of range 1-31"),
	ERR("* * * 13 *", "month field: value 13 is out of range 1-12"),
	ERR("* * * 0 *", "month field: value 0 is out of range 1-12"),
	ERR("* * * * 8", "day-of-week field: value 8 is out of range 0-7"),
	ERR("0-60 * * * *", "minute field: value 60 is out of range 0-59"),
	ERR("*/0 * * * *", "minute field: step 0 is out of range 1-59"),
	ERR("*/ * * * *", "minute field: missing step after '/'"),
	ERR("*/60 * * * *", "minute field: step 60 is out of range 1-59"),
	ERR("0 */24 * * *", "hour field: step 24 is out of range 1-23"),
	ERR("0 0 * * 1/", "day-of-week field: missing step after '/'"),
	ERR("0 0 * * 1/x", "day-of-week field: unexpected character 'x'"),
	ERR("5-1 * * * *", "minute field: range 5-1 is reversed"),
	ERR("0 0 * * fri-mon", "day-of-week field: range fri-mon is reversed"),
	ERR("0 0 * * mon-sun", "use 7 for Sunday"),
	ERR("0 0 * * funday", "day-of-week field: unknown name \"funday\""),
	ERR("0 0 * * monday", "day-of-week field: unknown name \"monday\""),
	ERR("0 0 * foo *", "month field: unknown name \"foo\""),
	ERR("mon * * * *", "minute field: unknown name \"mon\""),
	ERR("0 0 * jan-sun *", "month field: unknown name \"sun\""),
	ERR("@reboot", "@reboot is not supported"),
	ERR("@fortnightly", "unknown macro \"@fortnightly\""),
	ERR("@daily 0", "macro @daily must stand alone"),
	ERR("0 0 * * mon;", "day-of-week field: unexpected character ';'"),
	ERR("0 0 $ * *", "day-of-month field: unexpected character '$'"),
	ERR("1.5 * * * *", "minute field: unexpected character '.'"),
	ERR("*-5 * * * *", "minute field: unexpected character '-'"),
	ERR("0 0 -1 * *", "day-of-month field: unexpected character '-'"),
	ERR("0 0 1,,2 * *", "day-of-month field: empty item in list"),
	ERR("0 0 1, * *", "day-of-month field: empty item in list"),
	ERR("0 0 1- * *", "day-of-month field: missing value"),
	ERR("0 0 * *\n* *", "month field: unexpected byte 0x0a"),
	ERR("0 0 * * \xc3\xa9", "day-of-week field: unexpected byte 0xc3"),
	ERR("99999999999 * * * *", "minute field: value 99999999999 is out of range 0-59"),
	ERR("0 0 * * */99999999999", "day-of-week field: step 99999999999 is out of range 1-7"),
};

static int	failures = 0;
static int	checks = 0;

static void
fail(const char *what, const char *detail)
{
	failures++;
	printf("FAIL: %s: %s\n", what, detail);
}

/* ---- An independent calendar: slow, obvious loops. ---- */

static bool
ref_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
ref_dim(int64_t y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return days[m - 1] + (m == 2 && ref_leap(y));
}

static int64_t
ref_days(int64_t y, int m, int d)
{
	int64_t		days = 0;
	int64_t		yy;
	int			mm;

	if (y >= 1970)
		for (yy = 1970; yy < y; yy++)
			days += ref_leap(yy) ? 366 : 365;
	else
		for (yy = y; yy < 1970; yy++)
			days -= ref_leap(yy) ? 366 : 365;
	for (mm = 1; mm < m; mm++)
		days += ref_dim(y, mm);
	return days + d - 1;
}

typedef struct RefTime
{
	int64_t		y;
	int			m;
	int			d;
	int			hh;
	int			mi;
	int			ss;
	int			wday;			/* 0 = Sunday */
} RefTime;

static void
ref_split(int64_t t, RefTime *r)
{
	int64_t		days = t / 86400;
	int64_t		secs = t % 86400;

	if (secs < 0)
	{
		secs += 86400;
		days--;
	}
	r->wday = (int) (((days % 7) + 7 + 4) % 7);
	r->y = 1970;
	while (days < 0)
	{
		r->y--;
		days += ref_leap(r->y) ? 366 : 365;
	}
	while (days >= (ref_leap(r->y) ? 366 : 365))
	{
		days -= ref_leap(r->y) ? 366 : 365;
		r->y++;
	}
	r->m = 1;
	while (days >= ref_dim(r->y, r->m))
	{
		days -= ref_dim(r->y, r->m);
		r->m++;
	}
	r->d = (int) days + 1;
	r->hh = (int) (secs / 3600);
	r->mi = (int) (secs % 3600 / 60);
	r->ss = (int) (secs % 60);
}

static void
ref_format(int64_t t, char *buf, size_t len)
{
	RefTime		r;

	if (t == -1)
	{
		snprintf(buf, len, "none");
		return;
	}
	ref_split(t, &r);
	snprintf(buf, len, "%04lld-%02d-%02dT%02d:%02d:%02dZ",
			 (long long) r.y, r.m, r.d, r.hh, r.mi, r.ss);
}

/* Parses "YYYY-MM-DDTHH:MM:SSZ" (four or more year digits). */
static bool
ref_parse_iso(const char *s, int64_t *t)
{
	long long	y;
	int			m,
				d,
				hh,
				mi,
				ss;
	char		z;

	if (sscanf(s, "%lld-%d-%dT%d:%d:%d%c", &y, &m, &d, &hh, &mi, &ss, &z) != 7 ||
		z != 'Z' || m < 1 || m > 12 || d < 1 || d > ref_dim(y, m) ||
		hh < 0 || hh > 23 || mi < 0 || mi > 59 || ss < 0 || ss > 59)
		return false;
	*t = ref_days(y, m, d) * 86400 + hh * 3600 + mi * 60 + ss;
	return true;
}

/* ---- The table. ---- */

static void
run_case(const CronCase *tc)
{
	CoordCron	c;
	char		err[256];
	char		what[400];
	char		detail[600];
	bool		ok;

	snprintf(what, sizeof(what), "\"%s\"%s%s", tc->expr,
			 tc->after ? " after " : "", tc->after ? tc->after : "");
	checks++;
	memset(err, 'x', sizeof(err));
	ok = coord_cron_parse(tc->expr, &c, err, sizeof(err));
	if (memchr(err, '\0', sizeof(err)) == NULL)
	{
		fail(what, "error buffer not NUL-terminated");
		return;
	}

	if (tc->error != NULL)
	{
		if (ok)
			fail(what, "parsed, expected an error");
		else if (strstr(err, tc->error) == NULL)
		{
			snprintf(detail, sizeof(detail), "error \"%s\" lacks \"%s\"",
					 err, tc->error);
			fail(what, detail);
		}
		return;
	}

	if (!ok)
	{
		snprintf(detail, sizeof(detail), "parse failed: %s", err);
		fail(what, detail);
		return;
	}
	if (err[0] != '\0')
	{
		fail(what, "error buffer not emptied on success");
		return;
	}

	{
		int64_t		after;
		int64_t		want = -1;
		int64_t		got;
		char		gotbuf[64];

		if (!ref_parse_iso(tc->after, &after) ||
			(strcmp(tc->next, "none") != 0 && !ref_parse_iso(tc->next, &want)))
		{
			fail(what, "bad ISO time in the table");
			return;
		}
		got = coord_cron_next(&c, after);
		if (got != want)
		{
			ref_format(got, gotbuf, sizeof(gotbuf));
			snprintf(detail, sizeof(detail), "got %s, expected %s",
					 gotbuf, tc->next);
			fail(what, detail);
		}
	}
}

/* ---- Edges of the API. ---- */

static void
check(bool cond, const char *what)
{
	checks++;
	if (!cond)
		fail(what, "check failed");
}

static void
run_api_checks(void)
{
	CoordCron	c;
	CoordCron	keep;
	char		expr[COORD_CRON_MAX_LEN + 2];
	char		err[128];
	char		tiny[8];
	int64_t		t;

	/* Exactly the limit parses; one byte more does not. */
	memset(expr, ' ', sizeof(expr));
	memcpy(expr, "0 0 * * *", 9);
	expr[COORD_CRON_MAX_LEN] = '\0';
	check(coord_cron_parse(expr, &c, err, sizeof(err)), "256-byte expression parses");
	expr[COORD_CRON_MAX_LEN] = ' ';
	expr[COORD_CRON_MAX_LEN + 1] = '\0';
	check(!coord_cron_parse(expr, &c, err, sizeof(err)) &&
		  strstr(err, "longer than 256 bytes") != NULL,
		  "257-byte expression is rejected");

	check(!coord_cron_parse(NULL, &c, err, sizeof(err)) &&
		  strstr(err, "null") != NULL, "NULL expression is rejected");
	check(!coord_cron_parse("61 * * * *", &c, NULL, 0), "NULL error buffer is allowed");
	check(!coord_cron_parse("61 * * * *", &c, tiny, sizeof(tiny)) &&
		  strlen(tiny) == sizeof(tiny) - 1, "long message is cut to the buffer");
	check(coord_cron_parse("* * * * *", &c, tiny, 0), "zero-length error buffer");

	/* A failed parse leaves *out alone. */
	memset(&keep, 0xA5, sizeof(keep));
	c = keep;
	check(!coord_cron_parse("* * * * 9", &c, err, sizeof(err)) &&
		  memcmp(&c, &keep, sizeof(c)) == 0, "failed parse leaves the output");

	/* Masks and flags. */
	check(coord_cron_parse("* * * * *", &c, err, sizeof(err)) &&
		  c.minutes == ((UINT64_C(1) << 60) - 1) && c.hours == 0xFFFFFF &&
		  c.mdays == 0xFFFFFFFE && c.months == 0x1FFE && c.wdays == 0x7F &&
		  c.mday_star && c.wday_star && c.minute_star && c.hour_star, "masks of * * * * *");
	check(coord_cron_parse("0 0 1 1 7", &c, err, sizeof(err)) &&
		  c.minutes == 1 && c.hours == 1 && c.mdays == 2 && c.months == 2 &&
		  c.wdays == 1 && !c.mday_star && !c.wday_star && !c.minute_star && !c.hour_star,
		  "masks of 0 0 1 1 7");
	check(coord_cron_parse("0 0 */2 * 1/2", &c, err, sizeof(err)) &&
		  c.mday_star && !c.wday_star && c.wdays == 0x2A &&
		  c.mdays == 0xAAAAAAAA, "masks of 0 0 */2 * 1/2");
	check(coord_cron_parse("0 0 * * 7/2", &c, err, sizeof(err)) && c.wdays == 1,
		  "7/2 in day-of-week is Sunday alone");
	check(coord_cron_parse("0 0 * * sun-sat", &c, err, sizeof(err)) && c.wdays == 0x7F,
		  "sun-sat is every day");
	check(coord_cron_parse("@weekly", &c, err, sizeof(err)) &&
		  c.mday_star && !c.wday_star && c.wdays == 1, "masks of @weekly");
	/* The wildcard flags read the text, as cronie does: not the masks. */
	check(coord_cron_parse("@hourly", &c, err, sizeof(err)) &&
		  !c.minute_star && c.hour_star, "@hourly has a wildcard hour");
	check(coord_cron_parse("*/5 1 * * *", &c, err, sizeof(err)) &&
		  c.minute_star && !c.hour_star, "*/5 1 * * * has a wildcard minute");
	check(coord_cron_parse("0-59 0-23 * * *", &c, err, sizeof(err)) &&
		  !c.minute_star && !c.hour_star && c.hours == 0xFFFFFF,
		  "0-59 0-23 * * * is every minute but fixed-time");
	check(coord_cron_parse("0 1,*/2 * * *", &c, err, sizeof(err)) && !c.hour_star,
		  "a list counts by its first item");

	/* `after` outside years 1..9999, or empty masks: no fire time. */
	coord_cron_parse("* * * * *", &c, err, sizeof(err));
	check(coord_cron_next(&c, INT64_MIN) == -1, "next after INT64_MIN is -1");
	check(coord_cron_next(&c, INT64_MAX) == -1, "next after INT64_MAX is -1");
	check(ref_parse_iso("0000-12-31T23:59:59Z", &t) && coord_cron_next(&c, t) == -1,
		  "next after year 0 is -1");
	check(ref_parse_iso("10000-01-01T00:00:00Z", &t) && coord_cron_next(&c, t) == -1,
		  "next after year 10000 is -1");
	check(ref_parse_iso("0001-01-01T00:00:00Z", &t) && coord_cron_next(&c, t) == t + 60,
		  "next after the first second of year 1");
	check(coord_cron_next(NULL, 0) == -1, "next of NULL is -1");
	c.minutes = 0;
	check(coord_cron_next(&c, 0) == -1, "no minutes: -1");
	coord_cron_parse("* * * * *", &c, err, sizeof(err));
	c.months = 0;
	check(coord_cron_next(&c, 0) == -1, "no months: -1");
	/* Bits outside a field's range are ignored. */
	coord_cron_parse("0 0 * * *", &c, err, sizeof(err));
	c.minutes |= UINT64_C(1) << 63;
	c.hours |= UINT32_C(1) << 31;
	check(coord_cron_next(&c, 0) == 86400, "stray high bits are ignored");
}

/*
 * The sparsity claims of src/schedules/README.md (cron.c, Impossible
 * expressions).  Every possible expression fires on some (month, day,
 * weekday), so the gaps between the occurrences of a single such
 * combination bound every expression's gaps: each must occur within 400
 * years, on that day, and at most 40 years after the last.  And 29
 * February alone is at most 8 years apart.
 */
static void
run_calendar_checks(void)
{
	CoordCron	c;
	int			m,
				d,
				w;
	int64_t		t0 = ref_days(2000, 1, 1) * 86400;
	int64_t		t_end = ref_days(2800, 1, 1) * 86400;
	bool		all = true;
	bool		first_ok = true;
	int64_t		worst = 0;
	int			worst_m = 0,
				worst_d = 0,
				worst_w = 0;

	for (m = 1; m <= 12; m++)
		for (d = 1; d <= ref_dim(2000, m); d++)
			for (w = 0; w < 7; w++)
			{
				int64_t		t = t0;
				int			n = 0;

				memset(&c, 0, sizeof(c));
				c.minutes = 1;
				c.hours = 1;
				c.months = (uint16_t) (1u << m);
				c.mdays = UINT32_C(1) << d;
				c.wdays = (uint8_t) (1u << w);
				c.mday_star = true;
				/* Two whole 400-year cycles, so every gap is seen. */
				while (t < t_end)
				{
					int64_t		next = coord_cron_next(&c, t);
					RefTime		r;

					if (next <= t)
					{
						all = false;
						break;
					}
					ref_split(next, &r);
					if (r.m != m || r.d != d || r.wday != w || r.hh != 0 || r.mi != 0)
						all = false;
					if (n == 0 && next - t > (int64_t) 400 * 366 * 86400)
						first_ok = false;
					if (n > 0 && next - t > worst)
					{
						worst = next - t;
						worst_m = m;
						worst_d = d;
						worst_w = w;
					}
					n++;
					t = next;
				}
			}
	check(all, "every (month, day, weekday) occurs, on that day");
	check(first_ok, "every (month, day, weekday) occurs within 400 years");
	check(worst <= (int64_t) (40 * 365 + 10) * 86400,
		  "a (month, day, weekday) is at most 40 years apart");
	printf("largest gap of one (month, day, weekday): %lld days (%02d-%02d on weekday %d)\n",
		   (long long) (worst / 86400), worst_m, worst_d, worst_w);

	{
		int64_t		t = t0;
		int64_t		gap = 0;

		coord_cron_parse("0 0 29 2 *", &c, NULL, 0);
		while (t < t_end)
		{
			int64_t		next = coord_cron_next(&c, t);

			if (next <= t)
				break;
			if (next - t > gap)
				gap = next - t;
			t = next;
		}
		check(t >= ref_days(2796, 2, 29) * 86400 &&
			  gap == (int64_t) (8 * 365 + 1) * 86400,
			  "29 February is at most 8 years apart");
	}
}

/* ---- Randomized comparison with a brute-force reference. ---- */

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t
rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static int
rng_int(int lo, int hi)
{
	return lo + (int) (rng() % (uint64_t) (hi - lo + 1));
}

typedef struct RefCron
{
	bool		min[60];
	bool		hour[24];
	bool		mday[32];
	bool		month[13];
	bool		wday[7];
	bool		min_star;		/* minute text begins with '*' */
	bool		hour_star;
	bool		mday_star;
	bool		wday_star;
} RefCron;

static const char *const ref_month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"
};
static const char *const ref_wday_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/* Appends a value, sometimes as a name in random case. */
static void
gen_value(char *buf, size_t len, int field, int v)
{
	const char *name = NULL;
	size_t		n = strlen(buf);

	if (field == 3 && rng_int(0, 2) == 0)
		name = ref_month_names[v - 1];
	else if (field == 4 && v < 7 && rng_int(0, 2) == 0)
		name = ref_wday_names[v];
	if (name == NULL)
		snprintf(buf + n, len - n, "%d", v);
	else
	{
		int			i;

		for (i = 0; i < 3 && n + 1 < len; i++)
			buf[n++] = rng_int(0, 1) ? (char) (name[i] - 'a' + 'A') : name[i];
		buf[n] = '\0';
	}
}

/*
 * Generates the text of one field and, independently of cron.c, the set of
 * values it means.
 */
static void
gen_field(char *buf, size_t len, int field, bool *set, bool *star)
{
	static const int lo[5] = {0, 0, 1, 1, 0};
	static const int hi[5] = {59, 23, 31, 12, 7};
	static const int open_hi[5] = {59, 23, 31, 12, 6};
	int			items = rng_int(0, 3) == 0 ? rng_int(2, 3) : 1;
	int			i;

	buf[0] = '\0';
	*star = false;
	for (i = 0; i < items; i++)
	{
		int			kind = rng_int(0, 5);
		int			a = rng_int(lo[field], hi[field]);
		int			b = rng_int(lo[field], hi[field]);
		int			step = rng_int(1, hi[field] < 12 ? hi[field] : 12);
		int			v;
		size_t		n;

		if (a > b)
		{
			int			tmp = a;

			a = b;
			b = tmp;
		}
		/* Day fields: favour the sparse end of the month. */
		if (field == 2 && rng_int(0, 3) == 0)
			a = b = rng_int(28, 31);
		if (i > 0)
			strcat(buf, ",");
		n = strlen(buf);
		switch (kind)
		{
			case 0:
				snprintf(buf + n, len - n, "*");
				a = lo[field];
				b = open_hi[field];
				step = 1;
				break;
			case 1:
				snprintf(buf + n, len - n, "*/%d", step);
				a = lo[field];
				b = open_hi[field];
				break;
			case 2:
				gen_value(buf, len, field, a);
				b = a;
				step = 1;
				break;
			case 3:
				gen_value(buf, len, field, a);
				strcat(buf, "-");
				gen_value(buf, len, field, b);
				step = 1;
				break;
			case 4:
				gen_value(buf, len, field, a);
				strcat(buf, "-");
				gen_value(buf, len, field, b);
				n = strlen(buf);
				snprintf(buf + n, len - n, "/%d", step);
				break;
			default:
				gen_value(buf, len, field, a);
				n = strlen(buf);
				snprintf(buf + n, len - n, "/%d", step);
				b = open_hi[field] > a ? open_hi[field] : a;
				break;
		}
		if (i == 0 && kind <= 1)
			*star = true;
		for (v = a; v <= b; v += step)
			set[field == 4 && v == 7 ? 0 : v] = true;
	}
}

static bool
ref_day_matches(const RefCron *rc, const RefTime *r)
{
	if (rc->mday_star || rc->wday_star)
		return rc->mday[r->d] && rc->wday[r->wday];
	return rc->mday[r->d] || rc->wday[r->wday];
}

/* Day by day for up to 400 years, minute by minute within a matching day. */
static int64_t
ref_next(const RefCron *rc, int64_t after)
{
	int64_t		start = after - ((after % 60) + 60) % 60 + 60;
	RefTime		r;
	int			hh,
				mi;
	long		n;

	ref_split(start, &r);
	hh = r.hh;
	mi = r.mi;
	for (n = 0; n <= 146097 + 366; n++)
	{
		if (rc->month[r.m] && ref_day_matches(rc, &r))
		{
			for (; hh < 24; hh++, mi = 0)
				if (rc->hour[hh])
					for (; mi < 60; mi++)
						if (rc->min[mi])
							return ref_days(r.y, r.m, r.d) * 86400 + hh * 3600 + mi * 60;
		}
		hh = 0;
		mi = 0;
		r.wday = (r.wday + 1) % 7;
		if (++r.d > ref_dim(r.y, r.m))
		{
			r.d = 1;
			if (++r.m > 12)
			{
				r.m = 1;
				r.y++;
			}
		}
	}
	return -1;
}

static int
run_random(int rounds)
{
	int			compared = 0;
	int			i;

	for (i = 0; i < rounds; i++)
	{
		RefCron		rc;
		CoordCron	c;
		char		fields[5][128];
		char		expr[700];
		char		err[256];
		bool		dummy;
		int64_t		after;
		int			k;
		int			f;

		memset(&rc, 0, sizeof(rc));
		gen_field(fields[0], sizeof(fields[0]), 0, rc.min, &rc.min_star);
		gen_field(fields[1], sizeof(fields[1]), 1, rc.hour, &rc.hour_star);
		gen_field(fields[2], sizeof(fields[2]), 2, rc.mday, &rc.mday_star);
		gen_field(fields[3], sizeof(fields[3]), 3, rc.month, &dummy);
		gen_field(fields[4], sizeof(fields[4]), 4, rc.wday, &rc.wday_star);
		snprintf(expr, sizeof(expr), "%s %s %s %s %s",
				 fields[0], fields[1], fields[2], fields[3], fields[4]);

		checks++;
		if (!coord_cron_parse(expr, &c, err, sizeof(err)))
		{
			fail(expr, err);
			continue;
		}
		for (f = 0; f < 60; f++)
			if (rc.min[f] != ((c.minutes >> f) & 1))
				break;
		for (k = 0; f == 60 && k < 24; k++)
			if (rc.hour[k] != ((c.hours >> k) & 1))
				f = -1;
		for (k = 1; f == 60 && k < 32; k++)
			if (rc.mday[k] != ((c.mdays >> k) & 1))
				f = -1;
		for (k = 1; f == 60 && k < 13; k++)
			if (rc.month[k] != ((c.months >> k) & 1))
				f = -1;
		for (k = 0; f == 60 && k < 7; k++)
			if (rc.wday[k] != ((c.wdays >> k) & 1))
				f = -1;
		if (f != 60 || rc.mday_star != c.mday_star || rc.wday_star != c.wday_star ||
			rc.min_star != c.minute_star || rc.hour_star != c.hour_star)
		{
			fail(expr, "masks differ from the generator's");
			continue;
		}

		/* Mostly near now; some anywhere in years 1..9999; some at the ends. */
		switch (rng_int(0, 9))
		{
			case 0:
				after = ref_days(rng_int(1, 2), 1, 1) * 86400 + (int64_t) (rng() % (366 * 86400));
				break;
			case 1:
				after = ref_days(rng_int(9998, 9999), 1, 1) * 86400 + (int64_t) (rng() % (365 * 86400));
				break;
			case 2:
			case 3:
			case 4:
				after = ref_days(rng_int(1, 9999), 1, 1) * 86400 + (int64_t) (rng() % (365 * 86400));
				break;
			default:
				after = ref_days(rng_int(1900, 2100), 1, 1) * 86400 + (int64_t) (rng() % (365 * 86400));
				break;
		}

		/* Follow a chain, so most `after` values are fire times themselves. */
		for (k = 0; k < 4; k++)
		{
			int64_t		want = ref_next(&rc, after);
			int64_t		got = coord_cron_next(&c, after);

			compared++;
			if (got != want)
			{
				char		a[64],
							g[64],
							w[64],
							detail[300];

				ref_format(after, a, sizeof(a));
				ref_format(got, g, sizeof(g));
				ref_format(want, w, sizeof(w));
				snprintf(detail, sizeof(detail), "after %s: got %s, reference %s", a, g, w);
				fail(expr, detail);
				break;
			}
			if (got == -1 || got > INT64_C(253402300799))
				break;
			after = got;
		}
	}
	return compared;
}

/* ---- Time zones: coord_cron_next_tz with zones given as tables. ---- */

/*
 * A fake zone: its offset before the first change, and each change's
 * instant and new offset (seconds east of UTC).  The real zones' tables
 * cover 2026, where the table rows lie; their expected values were checked
 * against Python's zoneinfo and PostgreSQL's AT TIME ZONE.
 */
typedef struct FakeZone
{
	const char *name;
	int32_t		initial;
	int			nchanges;
	const char *when[8];
	int32_t		off[8];
} FakeZone;

#define Z_CHICAGO	0
#define Z_BERLIN	1
#define Z_LORD_HOWE 2
#define Z_KOLKATA	3
#define Z_APIA		4
#define Z_ABBR		5
#define Z_LMT		6
#define Z_SYNTH		7
#define Z_NEW_YORK	8

static FakeZone fake_zones[] = {
	{"America/Chicago 2026", -6 * 3600, 2,
	{"2026-03-08T08:00:00Z", "2026-11-01T07:00:00Z"}, {-5 * 3600, -6 * 3600}},
	{"Europe/Berlin 2026", 3600, 2,
	{"2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z"}, {7200, 3600}},
	/* 30-minute shifts */
	{"Australia/Lord_Howe 2026", 11 * 3600, 2,
	{"2026-04-04T15:00:00Z", "2026-10-03T15:30:00Z"}, {10 * 3600 + 1800, 11 * 3600}},
	{"Asia/Kolkata", 5 * 3600 + 1800, 0, {NULL}, {0}},
	/* a whole day skipped (Pacific/Apia 2011), and a made-up day repeated */
	{"Apia-like", -10 * 3600, 2,
	{"2011-12-30T10:00:00Z", "2012-06-01T00:00:00Z"}, {14 * 3600, -10 * 3600}},
	/* a change of abbreviation only */
	{"abbreviation change", 3600, 1, {"2026-06-01T00:00:00Z"}, {3600}},

	/* local mean time (America/Chicago until 1883): not whole minutes */
	{"Chicago LMT", -21036, 1, {"1883-11-18T18:00:00Z"}, {-6 * 3600}},
	/* filled in by run_tz_random */
	{"synthetic", 0, 0, {NULL}, {0}},
	{"America/New_York 2026", -5 * 3600, 2,
	{"2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z"}, {-4 * 3600, -5 * 3600}},
};

/* The synthetic zone has more changes than the fixed table allows. */
#define SYNTH_CHANGES 40
static int64_t synth_when[SYNTH_CHANGES];
static int32_t synth_off[SYNTH_CHANGES];

static int64_t
fake_when(const FakeZone *z, int i)
{
	int64_t		t = 0;

	if (z == &fake_zones[Z_SYNTH])
		return synth_when[i];
	if (!ref_parse_iso(z->when[i], &t))
		fail(z->name, "bad change time in the zone table");
	return t;
}

static int32_t
fake_off(const FakeZone *z, int i)
{
	return z == &fake_zones[Z_SYNTH] ? synth_off[i] : z->off[i];
}

static int	fake_calls = 0;

/* CoordCronZone.next_change over a FakeZone, by a plain scan. */
static bool
fake_next_change(void *arg, int64_t t, int64_t *when, int32_t *off_at_t, int32_t *off_after)
{
	const FakeZone *z = (const FakeZone *) arg;
	int32_t		off = z->initial;
	int			i;

	fake_calls++;
	for (i = 0; i < z->nchanges; i++)
	{
		int64_t		w = fake_when(z, i);

		if (w > t)
		{
			*off_at_t = off;
			*when = w;
			*off_after = fake_off(z, i);
			return true;
		}
		off = fake_off(z, i);
	}
	*off_at_t = off;
	return false;
}

/* The offset in effect at t. */
static int32_t
fake_offset_at(const FakeZone *z, int64_t t)
{
	int64_t		w;
	int32_t		off;
	int32_t		next;

	fake_next_change((void *) z, t, &w, &off, &next);
	return off;
}

typedef struct TzCase
{
	int			zone;
	const char *expr;
	const char *after;
	const char *next;
} TzCase;

#define TZ(z, e, a, n)	{z, e, a, n}

static const TzCase tz_cases[] = {
	/*
	 * America/Chicago: 2026-03-08 02:00 CST -> 03:00 CDT (08:00Z); 2026-11-01
	 * 02:00 CDT -> 01:00 CST (07:00Z)
	 */
	TZ(Z_CHICAGO, "30 2 * * *", "2026-03-07T12:00:00Z", "2026-03-08T08:00:00Z"),
	TZ(Z_CHICAGO, "30 2 * * *", "2026-03-08T08:00:00Z", "2026-03-09T07:30:00Z"),
	TZ(Z_CHICAGO, "0 2 * * *", "2026-03-07T12:00:00Z", "2026-03-08T08:00:00Z"),
	TZ(Z_CHICAGO, "0 3 * * *", "2026-03-07T12:00:00Z", "2026-03-08T08:00:00Z"),
	TZ(Z_CHICAGO, "59 1 * * *", "2026-03-07T12:00:00Z", "2026-03-08T07:59:00Z"),
	TZ(Z_CHICAGO, "*/15 * * * *", "2026-03-08T07:45:00Z", "2026-03-08T08:00:00Z"),
	TZ(Z_CHICAGO, "*/15 * * * *", "2026-03-08T08:00:00Z", "2026-03-08T08:15:00Z"),
	TZ(Z_CHICAGO, "0 0 * * *", "2026-03-07T12:00:00Z", "2026-03-08T06:00:00Z"),
	TZ(Z_CHICAGO, "0 0 * * *", "2026-03-08T06:00:00Z", "2026-03-09T05:00:00Z"),
	TZ(Z_CHICAGO, "0 9 * * 1", "2026-03-06T00:00:00Z", "2026-03-09T14:00:00Z"),
	TZ(Z_CHICAGO, "0 1 * * *", "2026-10-31T12:00:00Z", "2026-11-01T06:00:00Z"),
	TZ(Z_CHICAGO, "30 1 * * *", "2026-11-01T06:30:00Z", "2026-11-02T07:30:00Z"),
	TZ(Z_CHICAGO, "45 1 * * *", "2026-11-01T06:50:00Z", "2026-11-02T07:45:00Z"),
	TZ(Z_CHICAGO, "55 1 * * *", "2026-11-01T06:50:00Z", "2026-11-01T06:55:00Z"),
	/* wildcard minute or hour: the repeated 01:00 CST runs again */
	TZ(Z_CHICAGO, "*/30 * * * *", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"),
	TZ(Z_CHICAGO, "0 * * * *", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"),
	TZ(Z_CHICAGO, "0 2 * * *", "2026-10-31T12:00:00Z", "2026-11-01T08:00:00Z"),
	TZ(Z_CHICAGO, "0 0 * * *", "2026-11-01T05:00:00Z", "2026-11-02T06:00:00Z"),
	TZ(Z_CHICAGO, "0 0 1 * *", "2026-10-15T00:00:00Z", "2026-11-01T05:00:00Z"),

	/*
	 * Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z); 2026-10-25
	 * 03:00 CEST -> 02:00 CET (01:00Z)
	 */
	TZ(Z_BERLIN, "30 2 * * *", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z"),
	TZ(Z_BERLIN, "30 2 * * *", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"),
	TZ(Z_BERLIN, "0 3 * * *", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z"),
	TZ(Z_BERLIN, "30 2 * * *", "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z"),
	TZ(Z_BERLIN, "30 2 * * *", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"),
	TZ(Z_BERLIN, "0 3 * * *", "2026-10-24T12:00:00Z", "2026-10-25T02:00:00Z"),
	TZ(Z_BERLIN, "0 * * * *", "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"),
	TZ(Z_BERLIN, "0 */2 * * *", "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"),
	TZ(Z_BERLIN, "0 */2 * * *", "2026-03-28T23:00:00Z", "2026-03-29T02:00:00Z"),
	TZ(Z_BERLIN, "30 * * * *", "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"),
	TZ(Z_BERLIN, "0 6 * * 0", "2026-03-27T00:00:00Z", "2026-03-29T04:00:00Z"),

	/*
	 * Australia/Lord_Howe: 2026-04-05 02:00 +11 -> 01:30 +10:30
	 * (2026-04-04T15:00Z); 2026-10-04 02:00 +10:30 -> 02:30 +11
	 * (2026-10-03T15:30Z)
	 */
	TZ(Z_LORD_HOWE, "15 2 * * *", "2026-10-03T12:00:00Z", "2026-10-03T15:30:00Z"),
	TZ(Z_LORD_HOWE, "0 2 * * *", "2026-10-03T12:00:00Z", "2026-10-03T15:30:00Z"),
	TZ(Z_LORD_HOWE, "30 2 * * *", "2026-10-03T12:00:00Z", "2026-10-03T15:30:00Z"),
	TZ(Z_LORD_HOWE, "45 2 * * *", "2026-10-03T12:00:00Z", "2026-10-03T15:45:00Z"),
	TZ(Z_LORD_HOWE, "15 2 * * *", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"),
	TZ(Z_LORD_HOWE, "45 1 * * *", "2026-04-04T12:00:00Z", "2026-04-04T14:45:00Z"),
	TZ(Z_LORD_HOWE, "45 1 * * *", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"),
	TZ(Z_LORD_HOWE, "*/10 * * * *", "2026-04-04T14:50:00Z", "2026-04-04T15:00:00Z"),
	TZ(Z_LORD_HOWE, "*/10 * * * *", "2026-10-03T15:10:00Z", "2026-10-03T15:20:00Z"),
	TZ(Z_LORD_HOWE, "15 * * * *", "2026-10-03T15:00:00Z", "2026-10-03T16:15:00Z"),
	TZ(Z_LORD_HOWE, "0 2 * * *", "2026-04-04T12:00:00Z", "2026-04-04T15:30:00Z"),
	TZ(Z_LORD_HOWE, "0 0 * * *", "2026-04-04T12:00:00Z", "2026-04-04T13:00:00Z"),
	TZ(Z_LORD_HOWE, "0 0 * * *", "2026-04-04T13:00:00Z", "2026-04-05T13:30:00Z"),
	/* Asia/Kolkata: +05:30, no changes since 1945 */
	TZ(Z_KOLKATA, "0 9 * * *", "2026-01-01T00:00:00Z", "2026-01-01T03:30:00Z"),
	TZ(Z_KOLKATA, "0 0 * * *", "2026-03-01T18:30:00Z", "2026-03-02T18:30:00Z"),
	TZ(Z_KOLKATA, "30 23 31 12 *", "2026-06-01T00:00:00Z", "2026-12-31T18:00:00Z"),
	TZ(Z_KOLKATA, "0 0 1 1 *", "2026-06-01T00:00:00Z", "2026-12-31T18:30:00Z"),
	TZ(Z_KOLKATA, "15 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T00:45:00Z"),
	TZ(Z_KOLKATA, "0 9 * * 1", "2026-11-01T00:00:00Z", "2026-11-02T03:30:00Z"),

	/*
	 * fake zones of the harness only (values checked against PostgreSQL's
	 * real zones where they exist)
	 */
	TZ(Z_APIA, "0 12 30 12 *", "2011-12-29T00:00:00Z", "2011-12-30T10:00:00Z"),
	TZ(Z_APIA, "0 0 * * *", "2011-12-29T12:00:00Z", "2011-12-30T10:00:00Z"),
	TZ(Z_APIA, "0 0 * * *", "2011-12-30T10:00:00Z", "2011-12-31T10:00:00Z"),
	TZ(Z_APIA, "0 12 * * *", "2012-05-31T23:00:00Z", "2012-06-02T22:00:00Z"),
	TZ(Z_APIA, "0 12 * * *", "2012-06-01T20:00:00Z", "2012-06-02T22:00:00Z"),
	TZ(Z_APIA, "0 16 * * *", "2012-05-31T23:00:00Z", "2012-06-02T02:00:00Z"),
	TZ(Z_APIA, "0 13 * * *", "2012-05-31T22:30:00Z", "2012-05-31T23:00:00Z"),
	TZ(Z_ABBR, "0 1 * * *", "2026-05-31T12:00:00Z", "2026-06-01T00:00:00Z"),
	TZ(Z_ABBR, "0 1 * * *", "2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z"),
	TZ(Z_LMT, "0 0 * * *", "1800-01-01T12:00:00Z", "1800-01-02T05:50:36Z"),
	TZ(Z_LMT, "5 12 * * *", "1883-11-18T17:00:00Z", "1883-11-18T17:55:36Z"),
	TZ(Z_LMT, "5 12 * * *", "1883-11-18T17:55:36Z", "1883-11-19T18:05:00Z"),
	TZ(Z_LMT, "15 12 * * *", "1883-11-18T17:55:36Z", "1883-11-18T18:15:00Z"),

	/*
	 * America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z);
	 * 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).  A wildcard minute or hour
	 * follows the wall clock: both 01:00s of November 1, none of the 02:00s
	 * of March 8; fixed times fire once, the skipped one at 03:00 EDT.
	 */
	TZ(Z_NEW_YORK, "0 * * * *", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z"),
	TZ(Z_NEW_YORK, "0 * * * *", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"),
	TZ(Z_NEW_YORK, "@hourly", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z"),
	TZ(Z_NEW_YORK, "*/15 * * * *", "2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z"),
	TZ(Z_NEW_YORK, "0 */2 * * *", "2026-11-01T04:00:00Z", "2026-11-01T07:00:00Z"),
	TZ(Z_NEW_YORK, "* 1 * * *", "2026-11-01T05:59:00Z", "2026-11-01T06:00:00Z"),
	TZ(Z_NEW_YORK, "30 1 * * *", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z"),
	TZ(Z_NEW_YORK, "30 1 * * *", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"),
	TZ(Z_NEW_YORK, "0 0-23 * * *", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"),
	TZ(Z_NEW_YORK, "0 * * * *", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"),
	TZ(Z_NEW_YORK, "30 * * * *", "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z"),
	TZ(Z_NEW_YORK, "*/15 * * * *", "2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z"),
	TZ(Z_NEW_YORK, "0 */2 * * *", "2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z"),
	TZ(Z_NEW_YORK, "* 2 * * *", "2026-03-08T06:00:00Z", "2026-03-09T06:00:00Z"),
	TZ(Z_NEW_YORK, "30 2 * * *", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"),
	TZ(Z_NEW_YORK, "0 0-23 * * *", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"),
};

/*
 * How many times an expression fires in one local day (from its first
 * instant up to the next day's): hourly apps count a fall-back day's 25
 * real hours and a spring-forward day's 23, and so do wildcard hours.
 */
typedef struct TzDayCase
{
	int			zone;
	const char *expr;
	const char *day_start;
	const char *day_end;
	int			fires;
} TzDayCase;

static const TzDayCase tz_day_cases[] = {
	{Z_NEW_YORK, "0 * * * *", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 25},
	{Z_NEW_YORK, "*/15 * * * *", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 100},
	{Z_NEW_YORK, "0 */2 * * *", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 12},
	{Z_NEW_YORK, "* 1 * * *", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 120},
	{Z_NEW_YORK, "30 1 * * *", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 1},
	{Z_NEW_YORK, "0 0-23 * * *", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 24},
	{Z_NEW_YORK, "0 * * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 23},
	{Z_NEW_YORK, "30 * * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 23},
	{Z_NEW_YORK, "*/15 * * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 92},
	{Z_NEW_YORK, "0 */2 * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 11},
	{Z_NEW_YORK, "* 2 * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 0},
	{Z_NEW_YORK, "30 2 * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 1},
	{Z_NEW_YORK, "0 0-23 * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 23},
	{Z_BERLIN, "0 * * * *", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", 25},
	{Z_BERLIN, "0 */2 * * *", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", 13},
	{Z_BERLIN, "30 2 * * *", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", 1},
	{Z_BERLIN, "0 * * * *", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", 23},
	{Z_BERLIN, "0 */2 * * *", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", 11},
	{Z_BERLIN, "30 2 * * *", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", 1},
};

static void
run_tz_case(const TzCase *tc)
{
	CoordCron	c;
	CoordCronZone zone;
	int64_t		after;
	int64_t		want;
	int64_t		got;
	char		what[300];
	char		detail[300];
	char		gotbuf[64];

	snprintf(what, sizeof(what), "\"%s\" in %s after %s", tc->expr,
			 fake_zones[tc->zone].name, tc->after);
	checks++;
	if (!coord_cron_parse(tc->expr, &c, NULL, 0) ||
		!ref_parse_iso(tc->after, &after) || !ref_parse_iso(tc->next, &want))
	{
		fail(what, "bad row");
		return;
	}
	zone.next_change = fake_next_change;
	zone.arg = &fake_zones[tc->zone];
	got = coord_cron_next_tz(&c, after, &zone);
	if (got != want)
	{
		ref_format(got, gotbuf, sizeof(gotbuf));
		snprintf(detail, sizeof(detail), "got %s, expected %s", gotbuf, tc->next);
		fail(what, detail);
	}
}

static void
run_tz_day_case(const TzDayCase *dc)
{
	CoordCron	c;
	CoordCronZone zone;
	int64_t		t;
	int64_t		end;
	int			n = 0;
	char		what[300];
	char		detail[100];

	snprintf(what, sizeof(what), "\"%s\" in %s on the local day from %s", dc->expr,
			 fake_zones[dc->zone].name, dc->day_start);
	checks++;
	if (!coord_cron_parse(dc->expr, &c, NULL, 0) ||
		!ref_parse_iso(dc->day_start, &t) || !ref_parse_iso(dc->day_end, &end))
	{
		fail(what, "bad row");
		return;
	}
	zone.next_change = fake_next_change;
	zone.arg = &fake_zones[dc->zone];
	/* from the second before the day, so that its first instant counts */
	for (t = coord_cron_next_tz(&c, t - 1, &zone); t != -1 && t < end && n <= 2000;
		 t = coord_cron_next_tz(&c, t, &zone))
		n++;
	if (n != dc->fires)
	{
		snprintf(detail, sizeof(detail), "fires %d times, expected %d", n, dc->fires);
		fail(what, detail);
	}
}

static void
run_tz_api_checks(void)
{
	CoordCron	c;
	CoordCronZone zone;
	int64_t		t;
	int64_t		t2;

	zone.next_change = fake_next_change;
	zone.arg = &fake_zones[Z_KOLKATA];
	coord_cron_parse("0 0 30 2 *", &c, NULL, 0);
	check(coord_cron_next_tz(&c, 0, &zone) == -1, "tz: 30 February never fires");
	check(coord_cron_next_tz(NULL, 0, &zone) == -1, "tz: next of NULL is -1");
	coord_cron_parse("0 0 * * *", &c, NULL, 0);
	check(coord_cron_next_tz(&c, INT64_MAX, &zone) == -1 &&
		  coord_cron_next_tz(&c, INT64_MIN, &zone) == -1, "tz: after out of range is -1");
	check(ref_parse_iso("2026-07-01T12:00:00Z", &t) &&
		  coord_cron_next_tz(&c, t, NULL) == coord_cron_next(&c, t),
		  "tz: a NULL zone is UTC");
	/* before 1970: negative times are fire times, not "never" */
	check(ref_parse_iso("1900-01-01T12:00:00Z", &t) && ref_parse_iso("1900-01-01T18:30:00Z", &t2) &&
		  coord_cron_next_tz(&c, t, &zone) == t2, "tz: a fire time before 1970");
	/* a year-long walk through a zone with two changes costs a few calls */
	zone.arg = &fake_zones[Z_CHICAGO];
	coord_cron_parse("0 0 1 1 *", &c, NULL, 0);
	fake_calls = 0;
	check(ref_parse_iso("2026-01-01T12:00:00Z", &t) && ref_parse_iso("2027-01-01T06:00:00Z", &t2) &&
		  coord_cron_next_tz(&c, t, &zone) == t2 && fake_calls <= 6,
		  "tz: crossing two changes asks the zone a few times");
	coord_cron_parse("0 * 1 1 *", &c, NULL, 0);
	fake_calls = 0;
	check(ref_parse_iso("2026-01-02T12:00:00Z", &t) &&
		  coord_cron_next_tz(&c, t, &zone) == t2 && fake_calls <= 6,
		  "tz: so does a wildcard hour");
}

/*
 * The reference: minute by minute in UTC (the synthetic zone's offsets and
 * changes are whole minutes), with the rules read literally.  A wildcard
 * expression (minute or hour text begins with '*') fires at u when the
 * local clock shows a matching minute at u.  Any other: a matching local
 * minute fires at the first instant the local clock reaches or jumps past
 * it, i.e. at u when it lies after everything the clock showed before u
 * and not after what it shows at u.  The clock's history starts a week
 * back.  Gives up after `limit` minutes (-2).
 */
static bool
ref_local_matches(const RefCron *rc, int64_t local)
{
	RefTime		r;

	ref_split(local, &r);
	return rc->month[r.m] && ref_day_matches(rc, &r) && rc->hour[r.hh] && rc->min[r.mi];
}

static int64_t
ref_next_tz(const RefCron *rc, const FakeZone *z, int64_t after, long limit)
{
	int64_t		first = after - ((after % 60) + 60) % 60 + 60;
	int64_t		u = first - 7 * 86400;
	int64_t		shown = u - 60 + fake_offset_at(z, u - 60);
	long		n;

	for (n = 0; n < limit; u += 60)
	{
		int64_t		before = u - 1 + fake_offset_at(z, u - 1);
		int64_t		now = u + fake_offset_at(z, u);
		int64_t		l;

		if (before > shown)
			shown = before;
		if (u >= first)
		{
			if (rc->min_star || rc->hour_star)
			{
				if (ref_local_matches(rc, now))
					return u;
			}
			else
				/* minute-aligned local times in (shown, now] */
				for (l = shown - ((shown % 60) + 60) % 60 + 60; l <= now; l += 60)
					if (ref_local_matches(rc, l))
						return u;
			n++;
		}
		if (now > shown)
			shown = now;
	}
	return -2;
}

/* A zone with changes every few hours to days, of many sizes, both ways. */
static void
make_synth_zone(void)
{
	static const int32_t shifts[] = {3600, 1800, 2700, 7200, 86400, 900, 3600};
	int64_t		t = ref_days(2030, 1, 1) * 86400;
	int32_t		off = 0;
	int			i;

	for (i = 0; i < SYNTH_CHANGES; i++)
	{
		int32_t		shift = shifts[(i / 2) % (int) (sizeof(shifts) / sizeof(shifts[0]))];

		t += (int64_t) rng_int(6 * 60, 5 * 24 * 60) * 60;
		off += (i % 2 == 0) ? shift : -shift;
		synth_when[i] = t;
		synth_off[i] = off;
	}
	fake_zones[Z_SYNTH].initial = 0;
	fake_zones[Z_SYNTH].nchanges = SYNTH_CHANGES;
}

static int
run_tz_random(int rounds)
{
	const FakeZone *z = &fake_zones[Z_SYNTH];
	CoordCronZone zone;
	int			compared = 0;
	int			i;

	make_synth_zone();
	zone.next_change = fake_next_change;
	zone.arg = (void *) z;
	for (i = 0; i < rounds; i++)
	{
		RefCron		rc;
		CoordCron	c;
		char		fields[5][128];
		char		expr[700];
		int64_t		after;
		int			k;
		const long	limit = 8 * 1440;

		memset(&rc, 0, sizeof(rc));
		gen_field(fields[0], sizeof(fields[0]), 0, rc.min, &rc.min_star);
		gen_field(fields[1], sizeof(fields[1]), 1, rc.hour, &rc.hour_star);
		/* day fields mostly '*', so that most fire within the scan */
		if (rng_int(0, 3) == 0)
			gen_field(fields[2], sizeof(fields[2]), 2, rc.mday, &rc.mday_star);
		else
		{
			strcpy(fields[2], "*");
			for (k = 1; k <= 31; k++)
				rc.mday[k] = true;
			rc.mday_star = true;
		}
		strcpy(fields[3], "*");
		for (k = 1; k <= 12; k++)
			rc.month[k] = true;
		if (rng_int(0, 3) == 0)
			gen_field(fields[4], sizeof(fields[4]), 4, rc.wday, &rc.wday_star);
		else
		{
			strcpy(fields[4], "*");
			for (k = 0; k < 7; k++)
				rc.wday[k] = true;
			rc.wday_star = true;
		}
		snprintf(expr, sizeof(expr), "%s %s %s %s %s",
				 fields[0], fields[1], fields[2], fields[3], fields[4]);
		checks++;
		if (!coord_cron_parse(expr, &c, NULL, 0))
		{
			fail(expr, "does not parse");
			continue;
		}
		/* near a change, or anywhere in the zone's stretch */
		k = rng_int(0, SYNTH_CHANGES - 1);
		after = (rng_int(0, 1) == 0) ?
			synth_when[k] + rng_int(-3 * 3600, 3 * 3600) :
			synth_when[0] + (int64_t) (rng() % (uint64_t) (synth_when[SYNTH_CHANGES - 1] - synth_when[0]));
		if (rng_int(0, 3) == 0)
			after -= after % 60;

		for (k = 0; k < 6; k++)
		{
			int64_t		want = ref_next_tz(&rc, z, after, limit);
			int64_t		got = coord_cron_next_tz(&c, after, &zone);
			char		a[64],
						g[64],
						w[64],
						detail[300];

			if (want == -2)
			{
				/* the reference gave up: the answer must lie beyond its scan */
				checks++;
				if (got != -1 && got <= after + limit * 60 - 60)
				{
					ref_format(after, a, sizeof(a));
					ref_format(got, g, sizeof(g));
					snprintf(detail, sizeof(detail), "after %s: got %s, reference: none within its scan", a, g);
					fail(expr, detail);
				}
				break;
			}
			compared++;
			if (got != want)
			{
				ref_format(after, a, sizeof(a));
				ref_format(got, g, sizeof(g));
				ref_format(want, w, sizeof(w));
				snprintf(detail, sizeof(detail), "after %s: got %s, reference %s", a, g, w);
				fail(expr, detail);
				break;
			}
			after = got;
		}
	}
	return compared;
}

/* ---- Speed: worst cases must stay in microseconds. ---- */

static void
run_timing(void)
{
	static const char *const exprs[] = {
		"0 0 29 2 */7", "0 0 */30 2 mon", "0 0 30 2 *", "0 0 31 2,4,6,9,11 *",
		"0 0 29 2 *", "59 23 31 12 *", "* * * * *", "0 0 13 * fri"
	};
	int			e;

	for (e = 0; e < (int) (sizeof(exprs) / sizeof(exprs[0])); e++)
	{
		CoordCron	c;
		clock_t		t0;
		double		us;
		volatile int64_t sink = 0;
		int			i;
		const int	n = 20000;

		coord_cron_parse(exprs[e], &c, NULL, 0);
		t0 = clock();
		for (i = 0; i < n; i++)
			sink += coord_cron_next(&c, ref_days(2000, 1, 1) * 86400 + (int64_t) i * 7919 * 60);
		(void) sink;			/* read once: gcc 15 warns of a sum never read */
		us = (double) (clock() - t0) * 1e6 / CLOCKS_PER_SEC / n;
		printf("timing: %-22s %6.3f us per call\n", exprs[e], us);
		/* Generous, for sanitizer builds: a minute-by-minute search takes ms. */
		check(us < 100.0, "next-time search is fast");
	}
}

int
main(void)
{
	int			ncases = (int) (sizeof(cases) / sizeof(cases[0]));
	int			nok = 0;
	int			i;
	int			fixed;
	int			compared;

	for (i = 0; i < ncases; i++)
	{
		run_case(&cases[i]);
		if (cases[i].error == NULL)
			nok++;
	}
	run_api_checks();
	run_calendar_checks();
	run_timing();
	fixed = checks;
	compared = run_random(3000);
	printf("%d table rows (%d fire times or none, %d errors), %d API, calendar and timing checks\n",
		   ncases, nok, ncases - nok, fixed - ncases);
	printf("%d random expressions, %d fire times compared with the reference\n",
		   checks - fixed, compared);
	{
		int			ntz = (int) (sizeof(tz_cases) / sizeof(tz_cases[0]));
		int			ndays = (int) (sizeof(tz_day_cases) / sizeof(tz_day_cases[0]));
		int			before = checks;
		int			tz_compared;

		for (i = 0; i < ntz; i++)
			run_tz_case(&tz_cases[i]);
		for (i = 0; i < ndays; i++)
			run_tz_day_case(&tz_day_cases[i]);
		run_tz_api_checks();
		fixed += checks - before;
		before = checks;
		tz_compared = run_tz_random(1500);
		printf("time zones: %d table rows, %d local days counted, %d random expressions in a zone of %d changes, %d fire times compared with the reference\n",
			   ntz, ndays, checks - before, SYNTH_CHANGES, tz_compared);
	}

	if (failures > 0)
	{
		printf("cron: %d of %d cases FAILED\n", failures, checks);
		return 1;
	}
	printf("cron: %d cases passed\n", fixed);
	return 0;
}
