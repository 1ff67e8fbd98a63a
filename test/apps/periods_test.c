/*-------------------------------------------------------------------------
 * periods_test.c
 *		Standalone tests of src/apps/apps_periods.c: where coord.define_app
 *		makes an app's runs start, for a new app, a redefinition with the
 *		same grain, one with another grain or zone, with and without
 *		catchup_from; and the periods in time zones, across their offset
 *		changes (table zones: America/Chicago, Europe/Berlin,
 *		Australia/Lord_Howe with its 30-minute change, Asia/Kolkata, and
 *		made-up zones whose changes cross midnight or skip a day).
 *
 * Each row gives the inputs and the periods expected (NULL or a time in
 * hours since the epoch of TimestampTz).  Run it through test/apps/run.sh.
 *-------------------------------------------------------------------------
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "apps/apps_periods.h"

#define HOUR	INT64_C(3600000000)
#define NUL		(-1)			/* an expected NULL period */

typedef struct PeriodsCase
{
	const char *what;
	bool		exists;
	Grain		stored_grain;
	int			stored_first;	/* hours, or NUL */
	int			stored_next;
	Grain		grain;
	bool		zone_changed;
	int			catchup;		/* hours (already a period start), or NUL: none */
	int			first;			/* expected */
	int			next;
} PeriodsCase;

static const PeriodsCase cases[] = {
	/* a new app */
	{"new, no catchup: NULL until the first tick", false, G_NONE, NUL, NUL, G_DAILY, false, NUL, NUL, NUL},
	{"new, catchup: both at its period", false, G_NONE, NUL, NUL, G_DAILY, false, 48, 48, 48},
	{"new, catchup at 0 is a time, not NULL", false, G_NONE, NUL, NUL, G_HOURLY, false, 0, 0, 0},
	/* the same grain again */
	{"same grain, no catchup: unchanged", true, G_DAILY, 24, 96, G_DAILY, false, NUL, 24, 96},
	{"same grain, never ticked, no catchup: still NULL", true, G_DAILY, NUL, NUL, G_DAILY, false, NUL, NUL, NUL},
	{"same grain, later catchup: unchanged", true, G_DAILY, 24, 96, G_DAILY, false, 72, 24, 96},
	{"same grain, catchup at the first period: unchanged", true, G_DAILY, 24, 96, G_DAILY, false, 24, 24, 96},
	{"same grain, earlier catchup: both move back", true, G_DAILY, 48, 96, G_DAILY, false, 24, 24, 24},
	{"same grain, never ticked, catchup: both there", true, G_DAILY, NUL, NUL, G_DAILY, false, 72, 72, 72},
	{"same grain, first set, next NULL, no catchup: unchanged", true, G_HOURLY, 5, NUL, G_HOURLY, false, NUL, 5, NUL},
	/* another grain: start over */
	{"grain changed, no catchup: NULL again", true, G_DAILY, 24, 96, G_HOURLY, false, NUL, NUL, NUL},
	{"grain changed, later catchup: there, not kept", true, G_DAILY, 24, 96, G_WEEKLY, false, 168, 168, 168},
	{"grain changed, earlier catchup: there", true, G_MONTHLY, 744, 1488, G_DAILY, false, 24, 24, 24},
	{"stored grain unreadable: start over", true, G_NONE, 24, 48, G_DAILY, false, NUL, NUL, NUL},
	/* another zone: other period boundaries, start over */
	{"zone changed, no catchup: NULL again", true, G_DAILY, 24, 96, G_DAILY, true, NUL, NUL, NUL},
	{"zone changed, later catchup: there", true, G_DAILY, 24, 96, G_DAILY, true, 72, 72, 72},
	{"zone changed, earlier catchup: there", true, G_HOURLY, 24, 96, G_HOURLY, true, 5, 5, 5},
};

static int	failures = 0;
static int	checks = 0;

/* ---------- time zones as tables ---------- */

#define SEC		INT64_C(1000000)
#define MIN		(60 * SEC)

/* An offset change: at UTC (y-m-d h:mi), the offset becomes off minutes. */
typedef struct TableChange
{
	int			y,
				m,
				d,
				h,
				mi;
	int			off;			/* minutes east of UTC, from then on */
} TableChange;

typedef struct TableZone
{
	const char *name;
	int			initial;		/* minutes, before the first change */
	int			n;
	const TableChange *changes;
} TableZone;

/* TimestampTz of a UTC wall time */
static int64_t
Ts(int y, int m, int d, int h, int mi)
{
	/* days from civil, 2000-01-01 = 0 */
	int64_t		yy = y - (m <= 2);
	int64_t		era = (yy >= 0 ? yy : yy - 399) / 400;
	int64_t		yoe = yy - era * 400;
	int64_t		doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t		doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	int64_t		days = era * 146097 + doe - 719468 - 10957;

	return days * 24 * 60 * MIN + (int64_t) h * 60 * MIN + (int64_t) mi * MIN;
}

static bool
TableNextChange(void *arg, int64_t t, int64_t *when, int32_t *off_at_t, int32_t *off_after)
{
	const TableZone *z = (const TableZone *) arg;
	int			off = z->initial;
	int			i;

	for (i = 0; i < z->n; i++)
	{
		const TableChange *c = &z->changes[i];
		int64_t		at = Ts(c->y, c->m, c->d, c->h, c->mi);

		if (at > t)
		{
			*off_at_t = off * 60;
			*when = at;
			*off_after = c->off * 60;
			return true;
		}
		off = c->off;
	}
	*off_at_t = off * 60;
	return false;
}

/* 2025 to 2027 (from zic's output for these zones) */
static const TableChange chicago_ch[] = {
	{2025, 3, 9, 8, 0, -300}, {2025, 11, 2, 7, 0, -360},
	{2026, 3, 8, 8, 0, -300}, {2026, 11, 1, 7, 0, -360},
	{2027, 3, 14, 8, 0, -300}, {2027, 11, 7, 7, 0, -360},
};
static const TableChange berlin_ch[] = {
	{2025, 3, 30, 1, 0, 120}, {2025, 10, 26, 1, 0, 60},
	{2026, 3, 29, 1, 0, 120}, {2026, 10, 25, 1, 0, 60},
	{2027, 3, 28, 1, 0, 120}, {2027, 10, 31, 1, 0, 60},
};
static const TableChange lordhowe_ch[] = {
	{2025, 4, 5, 15, 0, 630}, {2025, 10, 4, 15, 30, 660},
	{2026, 4, 4, 15, 0, 630}, {2026, 10, 3, 15, 30, 660},
	{2027, 4, 3, 15, 0, 630}, {2027, 10, 2, 15, 30, 660},
};
/* made up: a fall-back from 00:30 to 23:30 the day before; a gap over midnight */
static const TableChange midnight_ch[] = {
	{2026, 5, 31, 23, 30, 0}, {2026, 9, 1, 0, 0, 60},
};
/* Pacific/Apia skipped 2011-12-30 */
static const TableChange apia_ch[] = {
	{2011, 12, 30, 10, 0, 840},
};

static const TableZone chicago = {"America/Chicago", -360, 6, chicago_ch};
static const TableZone berlin = {"Europe/Berlin", 60, 6, berlin_ch};
static const TableZone lordhowe = {"Australia/Lord_Howe", 660, 6, lordhowe_ch};
static const TableZone kolkata = {"Asia/Kolkata", 330, 0, NULL};
static const TableZone midnight = {"made-up midnight", 60, 2, midnight_ch};
static const TableZone apia = {"Pacific/Apia 2011", -600, 1, apia_ch};
static const TableZone utc = {"UTC", 0, 0, NULL};

/* A UTC wall time */
typedef struct Wall
{
	int			y,
				m,
				d,
				h,
				mi;
} Wall;

/* A period: an instant in it, and what trunc, next and the label say. */
typedef struct ZoneRow
{
	const TableZone *zone;
	Grain		grain;
	Wall		t;
	Wall		start;			/* expected */
	Wall		next;
	const char *label;
} ZoneRow;

#define T(y, m, d, h, mi) {y, m, d, h, mi}
static const ZoneRow zrows[] = {
	/* Chicago, spring forward 2026-03-08 02:00 CST -> 03:00 CDT (08:00Z) */
	{&chicago, G_HOURLY, T(2026, 3, 8, 7, 59), T(2026, 3, 8, 7, 0), T(2026, 3, 8, 8, 0), "2026-03-08-0100-0600"},
	{&chicago, G_HOURLY, T(2026, 3, 8, 8, 0), T(2026, 3, 8, 8, 0), T(2026, 3, 8, 9, 0), "2026-03-08-0300-0500"},
	{&chicago, G_DAILY, T(2026, 3, 8, 12, 0), T(2026, 3, 8, 6, 0), T(2026, 3, 9, 5, 0), "2026-03-08-0000-0600"},
	{&chicago, G_DAILY, T(2026, 3, 8, 5, 59), T(2026, 3, 7, 6, 0), T(2026, 3, 8, 6, 0), "2026-03-07-0000-0600"},
	{&chicago, G_WEEKLY, T(2026, 3, 8, 12, 0), T(2026, 3, 2, 6, 0), T(2026, 3, 9, 5, 0), "2026-03-02-0000-0600"},
	{&chicago, G_WEEKLY, T(2026, 3, 9, 5, 0), T(2026, 3, 9, 5, 0), T(2026, 3, 16, 5, 0), "2026-03-09-0000-0500"},
	{&chicago, G_MONTHLY, T(2026, 3, 15, 0, 0), T(2026, 3, 1, 6, 0), T(2026, 4, 1, 5, 0), "2026-03-01-0000-0600"},
	/* Chicago, fall back 2026-11-01 02:00 CDT -> 01:00 CST (07:00Z): two 01:00 hours */
	{&chicago, G_HOURLY, T(2026, 11, 1, 6, 30), T(2026, 11, 1, 6, 0), T(2026, 11, 1, 7, 0), "2026-11-01-0100-0500"},
	{&chicago, G_HOURLY, T(2026, 11, 1, 7, 30), T(2026, 11, 1, 7, 0), T(2026, 11, 1, 8, 0), "2026-11-01-0100-0600"},
	{&chicago, G_DAILY, T(2026, 11, 1, 7, 30), T(2026, 11, 1, 5, 0), T(2026, 11, 2, 6, 0), "2026-11-01-0000-0500"},
	{&chicago, G_WEEKLY, T(2026, 11, 1, 7, 30), T(2026, 10, 26, 5, 0), T(2026, 11, 2, 6, 0), "2026-10-26-0000-0500"},
	{&chicago, G_MONTHLY, T(2026, 11, 1, 4, 59), T(2026, 10, 1, 5, 0), T(2026, 11, 1, 5, 0), "2026-10-01-0000-0500"},
	{&chicago, G_MONTHLY, T(2026, 11, 30, 0, 0), T(2026, 11, 1, 5, 0), T(2026, 12, 1, 6, 0), "2026-11-01-0000-0500"},
	{&chicago, G_YEARLY, T(2026, 7, 1, 0, 0), T(2026, 1, 1, 6, 0), T(2027, 1, 1, 6, 0), "2026-01-01-0000-0600"},
	/* Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z), 2026-10-25 03:00 -> 02:00 (01:00Z) */
	{&berlin, G_DAILY, T(2026, 3, 29, 12, 0), T(2026, 3, 28, 23, 0), T(2026, 3, 29, 22, 0), "2026-03-29-0000+0100"},
	{&berlin, G_HOURLY, T(2026, 3, 29, 1, 0), T(2026, 3, 29, 1, 0), T(2026, 3, 29, 2, 0), "2026-03-29-0300+0200"},
	{&berlin, G_DAILY, T(2026, 10, 25, 12, 0), T(2026, 10, 24, 22, 0), T(2026, 10, 25, 23, 0), "2026-10-25-0000+0200"},
	{&berlin, G_HOURLY, T(2026, 10, 25, 0, 59), T(2026, 10, 25, 0, 0), T(2026, 10, 25, 1, 0), "2026-10-25-0200+0200"},
	{&berlin, G_HOURLY, T(2026, 10, 25, 1, 0), T(2026, 10, 25, 1, 0), T(2026, 10, 25, 2, 0), "2026-10-25-0200+0100"},
	{&berlin, G_WEEKLY, T(2026, 10, 25, 12, 0), T(2026, 10, 18, 22, 0), T(2026, 10, 25, 23, 0), "2026-10-19-0000+0200"},
	/* Lord_Howe: 2026-04-05 02:00 +11 -> 01:30 +10:30 (04-04 15:00Z) */
	{&lordhowe, G_HOURLY, T(2026, 4, 4, 14, 59), T(2026, 4, 4, 14, 0), T(2026, 4, 4, 15, 0), "2026-04-05-0100+1100"},
	{&lordhowe, G_HOURLY, T(2026, 4, 4, 15, 10), T(2026, 4, 4, 15, 0), T(2026, 4, 4, 15, 30), "2026-04-05-0130+1030"},
	{&lordhowe, G_HOURLY, T(2026, 4, 4, 15, 30), T(2026, 4, 4, 15, 30), T(2026, 4, 4, 16, 30), "2026-04-05-0200+1030"},
	{&lordhowe, G_DAILY, T(2026, 4, 4, 15, 10), T(2026, 4, 4, 13, 0), T(2026, 4, 5, 13, 30), "2026-04-05-0000+1100"},
	/* Lord_Howe: 2026-10-04 02:00 +10:30 -> 02:30 +11 (10-03 15:30Z) */
	{&lordhowe, G_HOURLY, T(2026, 10, 3, 15, 29), T(2026, 10, 3, 14, 30), T(2026, 10, 3, 15, 30), "2026-10-04-0100+1030"},
	{&lordhowe, G_HOURLY, T(2026, 10, 3, 15, 45), T(2026, 10, 3, 15, 30), T(2026, 10, 3, 16, 0), "2026-10-04-0230+1100"},
	{&lordhowe, G_DAILY, T(2026, 10, 3, 15, 45), T(2026, 10, 3, 13, 30), T(2026, 10, 4, 13, 0), "2026-10-04-0000+1030"},
	/* Kolkata: +05:30 all year */
	{&kolkata, G_HOURLY, T(2026, 3, 8, 12, 0), T(2026, 3, 8, 11, 30), T(2026, 3, 8, 12, 30), "2026-03-08-1700+0530"},
	{&kolkata, G_DAILY, T(2026, 3, 8, 12, 0), T(2026, 3, 7, 18, 30), T(2026, 3, 8, 18, 30), "2026-03-08-0000+0530"},
	{&kolkata, G_WEEKLY, T(2026, 3, 8, 12, 0), T(2026, 3, 1, 18, 30), T(2026, 3, 8, 18, 30), "2026-03-02-0000+0530"},
	{&kolkata, G_MONTHLY, T(2026, 2, 28, 18, 30), T(2026, 2, 28, 18, 30), T(2026, 3, 31, 18, 30), "2026-03-01-0000+0530"},
	/* made up: the fall-back at 00:30 repeats 23:30-00:30; June 1 began at the first 00:00 */
	{&midnight, G_DAILY, T(2026, 5, 31, 23, 45), T(2026, 5, 31, 23, 0), T(2026, 6, 2, 0, 0), "2026-06-01-0000+0100"},
	{&midnight, G_HOURLY, T(2026, 5, 31, 23, 45), T(2026, 5, 31, 23, 30), T(2026, 6, 1, 0, 0), "2026-05-31-2330+0000"},
	/* made up: a gap from 00:00 to 01:00 on September 1: that day starts at the gap's end */
	{&midnight, G_DAILY, T(2026, 9, 1, 0, 30), T(2026, 9, 1, 0, 0), T(2026, 9, 1, 23, 0), "2026-09-01-0100+0100"},
	{&midnight, G_MONTHLY, T(2026, 9, 1, 0, 30), T(2026, 9, 1, 0, 0), T(2026, 9, 30, 23, 0), "2026-09-01-0100+0100"},
	/* Apia: 2011-12-30 never happened; its day is empty and skipped */
	{&apia, G_DAILY, T(2011, 12, 30, 9, 59), T(2011, 12, 29, 10, 0), T(2011, 12, 30, 10, 0), "2011-12-29-0000-1000"},
	{&apia, G_DAILY, T(2011, 12, 30, 10, 0), T(2011, 12, 30, 10, 0), T(2011, 12, 31, 10, 0), "2011-12-31-0000+1400"},
	/* UTC through a table and through NULL (below) */
	{&utc, G_WEEKLY, T(2026, 3, 8, 12, 0), T(2026, 3, 2, 0, 0), T(2026, 3, 9, 0, 0), "2026-03-02-0000+0000"},
	{NULL, G_WEEKLY, T(2026, 3, 8, 12, 0), T(2026, 3, 2, 0, 0), T(2026, 3, 9, 0, 0), "2026-03-02-0000"},
	{NULL, G_HOURLY, T(2026, 11, 1, 7, 30), T(2026, 11, 1, 7, 0), T(2026, 11, 1, 8, 0), "2026-11-01-0700"},
	{NULL, G_YEARLY, T(1, 6, 1, 0, 0), T(1, 1, 1, 0, 0), T(2, 1, 1, 0, 0), "0001-01-01-0000"},
};
#undef T

/* How many periods of grain inner lie in the outer period around t. */
typedef struct CountRow
{
	const TableZone *zone;
	Grain		outer;
	Grain		inner;
	int			y,
				m,
				d;				/* a UTC noon in the outer period */
	int			count;
	int64_t		length_min;		/* of the outer period */
} CountRow;

static const CountRow counts[] = {
	{&chicago, G_DAILY, G_HOURLY, 2026, 3, 8, 23, 23 * 60},
	{&chicago, G_DAILY, G_HOURLY, 2026, 3, 9, 24, 24 * 60},
	{&chicago, G_DAILY, G_HOURLY, 2026, 11, 1, 25, 25 * 60},
	{&chicago, G_WEEKLY, G_DAILY, 2026, 3, 8, 7, 167 * 60},
	{&chicago, G_WEEKLY, G_DAILY, 2026, 11, 1, 7, 169 * 60},
	{&chicago, G_WEEKLY, G_HOURLY, 2026, 11, 1, 169, 169 * 60},
	{&chicago, G_MONTHLY, G_DAILY, 2026, 2, 15, 28, 28 * 24 * 60},
	{&chicago, G_YEARLY, G_HOURLY, 2026, 6, 1, 8760, 8760 * 60},
	{&chicago, G_YEARLY, G_DAILY, 2026, 6, 1, 365, 8760 * 60},
	{&berlin, G_DAILY, G_HOURLY, 2026, 3, 29, 23, 23 * 60},
	{&berlin, G_DAILY, G_HOURLY, 2026, 10, 25, 25, 25 * 60},
	{&lordhowe, G_DAILY, G_HOURLY, 2026, 4, 5, 25, 24 * 60 + 30},
	{&lordhowe, G_DAILY, G_HOURLY, 2026, 10, 4, 24, 23 * 60 + 30},
	{&lordhowe, G_YEARLY, G_HOURLY, 2026, 6, 1, 8761, 8760 * 60},
	{&kolkata, G_DAILY, G_HOURLY, 2026, 3, 8, 24, 24 * 60},
	{&kolkata, G_YEARLY, G_WEEKLY, 2026, 6, 1, 53, 8760 * 60},
	{&apia, G_WEEKLY, G_DAILY, 2011, 12, 28, 6, 6 * 24 * 60},
};

static void
Fail(const char *zone, const char *what, long long a, long long b)
{
	failures++;
	printf("FAIL %s: %s: got %lld, expected %lld\n", zone, what, a, b);
}

/* A zone whose offsets have seconds: one change at 1883-11-18 18:00Z. */
typedef struct LmtZone
{
	int32_t		before;
	int32_t		after;
} LmtZone;

static const LmtZone lmt_forward = {-21036, -21600};
static const LmtZone lmt_backward = {-21600, -21036};

static bool
LmtNextChange(void *arg, int64_t t, int64_t *when, int32_t *off_at_t, int32_t *off_after)
{
	const LmtZone *z = (const LmtZone *) arg;
	int64_t		at = Ts(1883, 11, 18, 18, 0);

	*off_at_t = t < at ? z->before : z->after;
	if (t >= at)
		return false;
	*when = at;
	*off_after = z->after;
	return true;
}

static void
ZoneOf(const TableZone *tz, AppZone *z, const AppZone **zp)
{
	z->next_change = TableNextChange;
	z->arg = (void *) tz;
	*zp = tz ? z : NULL;
}

/*
 * The partition: across a year of each zone, every period of every grain
 * is what trunc says for each instant in it (start, middle, last
 * microsecond), no period is empty, every coarser start is a finer start,
 * and each label reads back to its start.
 */
static void
PartitionCheck(const char *name, const AppZone *zp, int year)
{
	int			g;

	for (g = G_HOURLY; g <= G_YEARLY; g++)
	{
		int64_t		p,
					end = Ts(year + 1, 1, 1, 0, 0);
		bool		ok = true;

		if (!coord_period_trunc((Grain) g, Ts(year, 1, 1, 0, 0), zp, &p))
		{
			Fail(name, "trunc of the year's first instant failed", 0, 1);
			continue;
		}
		while (p < end && ok)
		{
			int64_t		n,
						s,
						back;
			char		label[COORD_PERIOD_LABEL_LEN];

			ok = coord_period_next((Grain) g, p, zp, &n) && n > p;
			if (!ok)
			{
				Fail(name, "next is not later", (long long) n, (long long) p);
				break;
			}
			if (!coord_period_trunc((Grain) g, p, zp, &s) || s != p)
				ok = false, Fail(name, "trunc of a start", (long long) s, (long long) p);
			if (!coord_period_trunc((Grain) g, p + (n - p) / 2, zp, &s) || s != p)
				ok = false, Fail(name, "trunc of a middle", (long long) s, (long long) p);
			if (!coord_period_trunc((Grain) g, n - 1, zp, &s) || s != p)
				ok = false, Fail(name, "trunc of a last microsecond", (long long) s, (long long) p);
			if (g > G_HOURLY && (!coord_period_trunc((Grain) (g == G_MONTHLY ? G_DAILY : g - 1), p, zp, &s) || s != p))
				ok = false, Fail(name, "a coarser start is not a finer start", (long long) s, (long long) p);
			coord_period_label(p, zp, label);
			if (!coord_period_parse_label(label, &back) || back != p)
				ok = false, Fail(name, label, (long long) back, (long long) p);
			checks += 6;
			p = n;
		}
	}
}

static void
ZoneTests(void)
{
	size_t		i;
	static const char *const bad[] = {
		"", "2026-11-01", "2026-11-01-010", "2026-13-01-0100", "2026-02-29-0000", "2026-11-01-2400",
		"2026-11-01-0100-05", "2026-11-01-0100x0500", "2026-11-01-0100-0500-", "2026-11-01-0160",
		"2026-11-01-0100-0500x", "0000-01-01-0000",
	};

	for (i = 0; i < sizeof(zrows) / sizeof(zrows[0]); i++)
	{
		const ZoneRow *r = &zrows[i];
		AppZone		z;
		const AppZone *zp;
		int64_t		s = 0,
					n = 0,
					back = 0;
		char		label[COORD_PERIOD_LABEL_LEN];
		const char *name = r->zone ? r->zone->name : "NULL (UTC)";

		int64_t		t = Ts(r->t.y, r->t.m, r->t.d, r->t.h, r->t.mi);
		int64_t		start = Ts(r->start.y, r->start.m, r->start.d, r->start.h, r->start.mi);
		int64_t		next = Ts(r->next.y, r->next.m, r->next.d, r->next.h, r->next.mi);

		ZoneOf(r->zone, &z, &zp);
		if (!coord_period_trunc(r->grain, t, zp, &s) || s != start)
			Fail(name, r->label, (long long) ((s - start) / MIN), 0);
		if (!coord_period_next(r->grain, start, zp, &n) || n != next)
			Fail(name, r->label, (long long) ((n - next) / MIN), 0);
		coord_period_label(start, zp, label);
		if (strcmp(label, r->label) != 0)
		{
			failures++;
			printf("FAIL %s: label %s, expected %s\n", name, label, r->label);
		}
		if (!coord_period_parse_label(r->label, &back) || back != start)
			Fail(name, r->label, (long long) back, (long long) start);
		checks += 4;
	}
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
	{
		const CountRow *c = &counts[i];
		AppZone		z;
		const AppZone *zp;
		int64_t		a = 0,
					b = 0,
					p;
		int			k = 0;

		ZoneOf(c->zone, &z, &zp);
		if (!coord_period_trunc(c->outer, Ts(c->y, c->m, c->d, 12, 0), zp, &a) ||
			!coord_period_next(c->outer, a, zp, &b))
		{
			Fail(c->zone->name, "count row", 0, 1);
			continue;
		}
		for (p = a; p < b && coord_period_next(c->inner, p, zp, &p);)
			k++;
		if (k != c->count)
			Fail(c->zone->name, "periods inside", k, c->count);
		if ((b - a) / MIN != c->length_min)
			Fail(c->zone->name, "length (minutes)", (long long) ((b - a) / MIN), (long long) c->length_min);
		checks += 2;
	}
	{
		static const TableZone *const zones[] = {&chicago, &berlin, &lordhowe, &kolkata, &midnight, &utc, NULL};
		AppZone		z;
		const AppZone *zp;
		AppZone		lmt = {LmtNextChange, (void *) &lmt_forward};
		AppZone		lmt_back = {LmtNextChange, (void *) &lmt_backward};
		char		label[COORD_PERIOD_LABEL_LEN];
		int64_t		t = 0;

		for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++)
		{
			ZoneOf(zones[i], &z, &zp);
			PartitionCheck(zones[i] ? zones[i]->name : "NULL (UTC)", zp, 2026);
		}
		ZoneOf(&apia, &z, &zp);
		PartitionCheck(apia.name, zp, 2011);
		/* offsets with seconds: Chicago's local mean time, and the reverse */
		PartitionCheck("LMT -05:50:36 to -06:00", &lmt, 1883);
		PartitionCheck("-06:00 to LMT -05:50:36", &lmt_back, 1883);
		if (!coord_period_trunc(G_DAILY, Ts(1883, 6, 1, 12, 0), &lmt, &t))
			Fail("LMT", "trunc", 0, 1);
		coord_period_label(t, &lmt, label);
		if (strcmp(label, "1883-06-01-0000-055036") != 0)
			failures++, printf("FAIL LMT: label %s\n", label);
		if (!coord_period_trunc(G_HOURLY, Ts(1883, 11, 18, 18, 0), &lmt_back, &t))
			Fail("LMT", "trunc", 0, 1);
		coord_period_label(t, &lmt_back, label);
		if (strcmp(label, "1883-11-18-120924-055036") != 0)
			failures++, printf("FAIL LMT back: label %s\n", label);
		checks += 2;
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		int64_t		t;

		if (coord_period_parse_label(bad[i], &t))
		{
			failures++;
			printf("FAIL label \"%s\" was read\n", bad[i]);
		}
		checks++;
	}
	/* out of range: 22008 in the extension */
	{
		int64_t		t;

		if (coord_period_next(G_YEARLY, Ts(9999, 1, 1, 0, 0), NULL, &t))
			Fail("UTC", "next after the year 9999 succeeded", 1, 0);
		if (coord_period_trunc(G_DAILY, INT64_MAX, NULL, &t))
			Fail("UTC", "trunc of infinity succeeded", 1, 0);
		if (coord_period_trunc(G_DAILY, Ts(10000, 1, 1, 0, 0), NULL, &t))
			Fail("UTC", "trunc in the year 10000 succeeded", 1, 0);
		checks += 3;
	}
}

static void
check(const PeriodsCase *c, const char *which, bool got_null, int64_t got, int want)
{
	bool		ok = (want == NUL) ? got_null : (!got_null && got == (int64_t) want * HOUR);

	if (!ok)
	{
		failures++;
		printf("FAIL %s: %s is %s%lld h, expected %s%d h\n", c->what, which,
			   got_null ? "NULL " : "", (long long) (got / HOUR), want == NUL ? "NULL " : "",
			   want == NUL ? 0 : want);
	}
}

static void ZoneTests(void);

int
main(void)
{
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		const PeriodsCase *c = &cases[i];
		AppPeriodsInput in;
		AppPeriods	out;

		in.exists = c->exists;
		in.stored_grain = c->stored_grain;
		in.stored.first_null = (c->stored_first == NUL);
		in.stored.first_period = c->stored_first == NUL ? 0 : c->stored_first * HOUR;
		in.stored.next_null = (c->stored_next == NUL);
		in.stored.next_period = c->stored_next == NUL ? 0 : c->stored_next * HOUR;
		in.grain = c->grain;
		in.zone_changed = c->zone_changed;
		in.has_catchup = (c->catchup != NUL);
		in.catchup_start = c->catchup == NUL ? 0 : c->catchup * HOUR;
		out = coord_app_periods(&in);
		check(c, "first_period", out.first_null, out.first_period, c->first);
		check(c, "next_period", out.next_null, out.next_period, c->next);
		/* a NULL period is 0, so that nothing stale is written beside the NULL */
		if ((out.first_null && out.first_period != 0) || (out.next_null && out.next_period != 0))
		{
			failures++;
			printf("FAIL %s: a NULL period is not 0\n", c->what);
		}
		checks += 3;
	}
	ZoneTests();
	printf("apps periods: %d rows, %d checks, %d failed\n",
		   (int) (sizeof(cases) / sizeof(cases[0])) + (int) (sizeof(zrows) / sizeof(zrows[0])) +
		   (int) (sizeof(counts) / sizeof(counts[0])), checks, failures);
	return failures == 0 ? 0 : 1;
}
