/*-------------------------------------------------------------------------
 * apps_periods.c
 *		An app's periods in its time zone, their labels, and where its runs
 *		start when coord.define_app stores it.
 *
 * A period starts when the local clock first reaches or jumps past its
 * local start (FirstReach); the periods partition time, a coarser period
 * is exactly a union of finer ones, and labels carry the UTC offset in a
 * zone, so the two 01:00 hours of a fall-back differ.
 *
 * The zone is a callback (AppZone): the extension asks PostgreSQL's time
 * zone database, test/apps a table.  Every loop here is bounded by a small
 * constant whatever the zone says.
 *
 * Pure: inputs in, the answer out; no catalog, no SPI, no allocation, no
 * error.  define_app reads the inputs (as the owner, under the definitions
 * lock) and writes the answer.
 *
 * Periods in a time zone (days of 23 or 25 hours, split hours) and where
 * runs start (coord_app_periods): src/apps/README.md, "Periods in a time
 * zone (apps_periods.c)".
 *-------------------------------------------------------------------------
 */
#include <stdio.h>

#include "apps/apps_periods.h"

#define SEC		INT64_C(1000000)
#define MINUTE	(60 * SEC)
#define HOUR	(60 * MINUTE)
#define DAY		(24 * HOUR)
/* more than any UTC offset (+14:00, -12:00, LMT of old times) */
#define OFFSET_REACH	(26 * HOUR)
/* times far outside years 1 to 9999, so that no sum here overflows */
#define T_LIMIT		INT64_C(1000000000000000000)
/* offset changes looked at per question: zones change rarely */
#define MAX_SPANS	64
/* periods that a change can make empty in a row (Pacific/Apia, 2011) */
#define MAX_EMPTY	16

static int64_t
FloorDiv(int64_t a, int64_t b)
{
	int64_t		q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t
FloorMod(int64_t a, int64_t b)
{
	return a - FloorDiv(a, b) * b;
}

/* Days since 2000-01-01 of a proleptic Gregorian date (H. Hinnant's). */
static int64_t
DaysFromCivil(int64_t y, int m, int d)
{
	int64_t		era;
	int64_t		yoe,
				doy,
				doe;

	y -= m <= 2;
	era = FloorDiv(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468 - 10957;
}

static void
CivilFromDays(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t		era,
				doe,
				yoe,
				doy,
				mp;

	z += 719468 + 10957;
	era = FloorDiv(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static bool
YearOk(int64_t y)
{
	return y >= 1 && y <= 9999;
}

/* The UTC offset at t, in microseconds; *has and *when: the next change after t. */
static int64_t
OffsetAt(const AppZone *z, int64_t t, bool *has, int64_t *when)
{
	int32_t		off = 0;
	int32_t		after = 0;
	int64_t		w = 0;
	bool		h = false;

	if (z != NULL)
		h = z->next_change(z->arg, t, &w, &off, &after);
	if (has)
		*has = h;
	if (when)
		*when = w;
	return (int64_t) off * SEC;
}

/*
 * The first instant at which the local clock reaches or jumps past local
 * time l: the smallest u with u + offset(u) >= l, walking the offset spans
 * from l - OFFSET_REACH, before which no instant can qualify.
 */
static int64_t
FirstReach(const AppZone *z, int64_t l)
{
	int64_t		u;
	int			i;

	if (z == NULL)
		return l;
	u = l - OFFSET_REACH;
	for (i = 0; i < MAX_SPANS; i++)
	{
		bool		has;
		int64_t		w;
		int64_t		o = OffsetAt(z, u, &has, &w);
		int64_t		cand = l - o > u ? l - o : u;

		if (!has || cand < w)
			return cand;
		u = w;
	}
	/* a zone changing this often is not one: its offset at l decides */
	return l - OffsetAt(z, l, NULL, NULL);
}

/*
 * The local start of the period of grain g (daily or coarser) containing
 * local time l; false outside the years 1 to 9999 (of l's day, before a
 * week is taken back to its Monday).
 */
static bool
LocalTrunc(Grain g, int64_t l, int64_t *out)
{
	int64_t		days = FloorDiv(l, DAY);
	int64_t		y;
	int			m,
				d;

	CivilFromDays(days, &y, &m, &d);
	if (!YearOk(y))
		return false;
	switch (g)
	{
		case G_WEEKLY:
			/* 2000-01-01 was a Saturday: Monday is 0 */
			days -= FloorMod(days + 5, 7);
			break;
		case G_MONTHLY:
			days = DaysFromCivil(y, m, 1);
			break;
		case G_YEARLY:
			days = DaysFromCivil(y, 1, 1);
			break;
		default:
			break;
	}
	*out = days * DAY;
	return true;
}

/* The local start of the period after the one starting at local time l. */
static bool
LocalNext(Grain g, int64_t l, int64_t *out)
{
	int64_t		y;
	int			m,
				d;

	switch (g)
	{
		case G_DAILY:
			*out = l + DAY;
			return true;
		case G_WEEKLY:
			*out = l + 7 * DAY;
			return true;
		case G_MONTHLY:
			CivilFromDays(FloorDiv(l, DAY), &y, &m, &d);
			if (++m > 12)
			{
				m = 1;
				y++;
			}
			break;
		case G_YEARLY:
			CivilFromDays(FloorDiv(l, DAY), &y, &m, &d);
			y++;
			m = 1;
			break;
		default:
			return false;
	}
	if (!YearOk(y))
		return false;
	*out = DaysFromCivil(y, m, 1) * DAY;
	return true;
}

bool
coord_period_trunc(Grain g, int64_t t, const AppZone *z, int64_t *out)
{
	int64_t		l;
	int64_t		lb,
				b;
	int			i;

	if (t < -T_LIMIT || t > T_LIMIT || g < G_HOURLY || g > G_YEARLY)
		return false;
	l = t + OffsetAt(z, t, NULL, NULL);
	if (g == G_HOURLY)
	{
		int64_t		y;
		int			m,
					d;
		int64_t		c = t - FloorMod(l, HOUR);
		int64_t		x = c;

		CivilFromDays(FloorDiv(l, DAY), &y, &m, &d);
		if (!YearOk(y))
			return false;
		/* an offset change since that hour began starts a period */
		for (i = 0; z != NULL && i < MAX_SPANS; i++)
		{
			bool		has;
			int64_t		w;

			(void) OffsetAt(z, x, &has, &w);
			if (!has || w > t)
				break;
			c = x = w;
		}
		*out = c;
		return true;
	}
	if (!LocalTrunc(g, l, &lb))
		return false;
	b = FirstReach(z, lb);
	/* a fall-back across a period start: t is in the period begun then */
	for (i = 0; i < MAX_EMPTY; i++)
	{
		int64_t		ln,
					n;

		if (!LocalNext(g, lb, &ln))
			break;
		n = FirstReach(z, ln);
		if (n > t)
			break;
		lb = ln;
		b = n;
	}
	*out = b;
	return true;
}

bool
coord_period_next(Grain g, int64_t start, const AppZone *z, int64_t *out)
{
	bool		has;
	int64_t		w;
	int64_t		off;
	int64_t		lb;
	int			i;

	if (start < -T_LIMIT || start > T_LIMIT || g < G_HOURLY || g > G_YEARLY)
		return false;
	off = OffsetAt(z, start, &has, &w);
	if (g == G_HOURLY)
	{
		int64_t		c = start - FloorMod(start + off, HOUR) + HOUR;

		*out = (has && w < c) ? w : c;
		return true;
	}
	if (!LocalTrunc(g, start + off, &lb))
		return false;
	for (i = 0; i < MAX_EMPTY; i++)
	{
		int64_t		ln,
					n;

		if (!LocalNext(g, lb, &ln))
			return false;
		n = FirstReach(z, ln);
		if (n > start)
		{
			*out = n;
			return true;
		}
		lb = ln;				/* an empty period: a change skipped it */
	}
	return false;
}

void
coord_period_label(int64_t start, const AppZone *z, char *buf)
{
	int64_t		off = OffsetAt(z, start, NULL, NULL);
	int64_t		l = start + off;
	int64_t		secs = FloorMod(l, DAY) / SEC;
	int64_t		y;
	int			m,
				d;
	int			n;

	CivilFromDays(FloorDiv(l, DAY), &y, &m, &d);
	n = snprintf(buf, COORD_PERIOD_LABEL_LEN, "%04lld-%02d-%02d-%02d%02d", (long long) y, m, d,
				 (int) (secs / 3600), (int) (secs / 60 % 60));
	if (z == NULL || n < 0 || n >= COORD_PERIOD_LABEL_LEN)
		return;
	if (secs % 60 != 0)
		n += snprintf(buf + n, COORD_PERIOD_LABEL_LEN - n, "%02d", (int) (secs % 60));
	{
		int64_t		a = (off < 0 ? -off : off) / SEC;

		n += snprintf(buf + n, COORD_PERIOD_LABEL_LEN - n, "%c%02d%02d", off < 0 ? '-' : '+',
					  (int) (a / 3600), (int) (a / 60 % 60));
		if (a % 60 != 0 && n < COORD_PERIOD_LABEL_LEN)
			(void) snprintf(buf + n, COORD_PERIOD_LABEL_LEN - n, "%02d", (int) (a % 60));
	}
}

/* n decimal digits at *s; advances *s */
static bool
Digits(const char **s, int n, int *out)
{
	int			v = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		char		c = (*s)[i];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*s += n;
	*out = v;
	return true;
}

/* HHMM, then SS if two more digits follow; into seconds */
static bool
ClockDigits(const char **s, int max_hour, int *secs)
{
	int			hh,
				mi,
				ss = 0;

	if (!Digits(s, 2, &hh) || !Digits(s, 2, &mi) || hh > max_hour || mi > 59)
		return false;
	if (**s >= '0' && **s <= '9' && (!Digits(s, 2, &ss) || ss > 59))
		return false;
	*secs = hh * 3600 + mi * 60 + ss;
	return true;
}

bool
coord_period_parse_label(const char *s, int64_t *start)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			y,
				m,
				d,
				clock,
				off = 0;
	int64_t		days;
	int64_t		y2;
	int			m2,
				d2;

	if (!Digits(&s, 4, &y) || *s++ != '-' || !Digits(&s, 2, &m) || *s++ != '-' ||
		!Digits(&s, 2, &d) || *s++ != '-' || !ClockDigits(&s, 23, &clock))
		return false;
	if (y < 1 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return false;
	days = DaysFromCivil(y, m, d);
	CivilFromDays(days, &y2, &m2, &d2);
	if (m2 != m)
		return false;			/* 29 February of a common year */
	if (*s == '+' || *s == '-')
	{
		int			sign = (*s++ == '-') ? -1 : 1;

		if (!ClockDigits(&s, 23, &off))
			return false;
		off *= sign;
	}
	if (*s != '\0')
		return false;
	*start = days * DAY + (int64_t) clock * SEC - (int64_t) off * SEC;
	return true;
}

AppPeriods
coord_app_periods(const AppPeriodsInput *in)
{
	AppPeriods	out = {true, 0, true, 0};

	if (!in->exists || in->stored_grain != in->grain || in->zone_changed)
	{
		if (in->has_catchup)
		{
			out.first_null = out.next_null = false;
			out.first_period = out.next_period = in->catchup_start;
		}
		return out;
	}
	out = in->stored;
	if (in->has_catchup && (in->stored.first_null || in->catchup_start < in->stored.first_period))
	{
		/* an earlier catch-up: periods without a run from there on get one */
		out.first_null = out.next_null = false;
		out.first_period = out.next_period = in->catchup_start;
	}
	if (out.first_null)
		out.first_period = 0;
	if (out.next_null)
		out.next_period = 0;
	return out;
}
