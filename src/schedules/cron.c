/*-------------------------------------------------------------------------
 * cron.c
 *		Five-field cron expressions (minute hour day-of-month month
 *		day-of-week): parsing, and the next fire time in UTC or in the
 *		local wall time of a time zone.
 *
 * Plain C99 that calls nothing of the extension: everything is UTC on the
 * proleptic Gregorian calendar, computed here rather than with
 * gmtime/timegm, and a zone is a callback (CoordCronZone) that tells where
 * its offset changes: cron.c knows no time zone database.  Expressions
 * over COORD_CRON_MAX_LEN bytes are rejected unread, and @reboot always.
 *
 * The search moves a month at a time with bit masks, never through minutes,
 * and a zone adds one callback per offset change crossed.  In a zone,
 * wildcard expressions follow the wall clock and fixed-time ones fire once
 * per local time reached.  coord_cron_next returns -1 exactly for the
 * expressions that can never fire.
 *
 * The syntax, the day fields, the rules for offset changes and why an
 * expression that can fire fires at least every 40 years:
 * src/schedules/README.md, "Cron expressions (cron.c)".
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>

#include "schedules/cron.h"

/* Range of `after` we accept: 0001-01-01T00:00:00 .. 9999-12-31T23:59:59. */
#define CRON_MIN_AFTER	INT64_C(-62135596800)
#define CRON_MAX_AFTER	INT64_C(253402300799)

#define SECS_PER_DAY	86400

/* Masks of the bits each field may use. */
#define MINUTES_ALL		((UINT64_C(1) << 60) - 1)
#define HOURS_ALL		((UINT32_C(1) << 24) - 1)
#define WDAYS_ALL		((uint8_t) 0x7F)

/* Days 1, 8, 15, 22, 29: the days of a month that share day 1's weekday. */
#define SAME_WDAY_AS_1ST	((UINT64_C(1) << 1) | (UINT64_C(1) << 8) | \
							 (UINT64_C(1) << 15) | (UINT64_C(1) << 22) | \
							 (UINT64_C(1) << 29))

/* What one field accepts. */
typedef struct CronField
{
	const char *name;			/* for error messages */
	int			lo;				/* smallest value */
	int			hi;				/* largest value, and largest step */
	int			open_hi;		/* where '*' and N/S stop */
	const char *const *names;	/* three-letter names, or NULL */
	int			names_base;		/* value of names[0] */
	int			nnames;
} CronField;

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec"
};

static const char *const wday_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat"
};

#define FIELD_MINUTE	0
#define FIELD_HOUR		1
#define FIELD_MDAY		2
#define FIELD_MONTH		3
#define FIELD_WDAY		4
#define NUM_FIELDS		5

static const CronField cron_fields[NUM_FIELDS] = {
	{"minute", 0, 59, 59, NULL, 0, 0},
	{"hour", 0, 23, 23, NULL, 0, 0},
	{"day-of-month", 1, 31, 31, NULL, 0, 0},
	{"month", 1, 12, 12, month_names, 1, 12},
	{"day-of-week", 0, 7, 6, wday_names, 0, 7},
};

/* Macros and the five fields each stands for. */
static const struct
{
	const char *name;
	const char *fields;
}			cron_macros[] = {
	{"@yearly", "0 0 1 1 *"},
	{"@annually", "0 0 1 1 *"},
	{"@monthly", "0 0 1 * *"},
	{"@weekly", "0 0 * * 0"},
	{"@daily", "0 0 * * *"},
	{"@midnight", "0 0 * * *"},
	{"@hourly", "0 * * * *"},
};

/*
 * Character classes by hand: <ctype.h> depends on the locale and is
 * undefined for negative chars, and cron syntax is plain ASCII.
 */
static bool
cron_is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static bool
cron_is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool
cron_is_alpha(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static char
cron_lower(char ch)
{
	return (ch >= 'A' && ch <= 'Z') ? (char) (ch - 'A' + 'a') : ch;
}

/* Case-insensitive comparison of s[0..len) with the NUL-terminated word. */
static bool
cron_word_eq(const char *s, size_t len, const char *word)
{
	size_t		i;

	if (strlen(word) != len)
		return false;
	for (i = 0; i < len; i++)
		if (cron_lower(s[i]) != word[i])
			return false;
	return true;
}

/*
 * Reports a character the grammar does not allow there; bytes that would
 * not print are shown in hex so the message stays readable.
 */
static void
cron_unexpected(const CronField *f, char ch, char *err, size_t errlen)
{
	unsigned char uch = (unsigned char) ch;

	if (uch > 0x20 && uch < 0x7f)
		snprintf(err, errlen, "%s field: unexpected character '%c'",
				 f->name, ch);
	else
		snprintf(err, errlen, "%s field: unexpected byte 0x%02x",
				 f->name, (unsigned int) uch);
}

/*
 * Parses one value, a number or a name, at *p (before end), checks it
 * against the field's range and advances *p past it.
 */
static bool
cron_parse_value(const CronField *f, const char **p, const char *end,
				 int *value, char *err, size_t errlen)
{
	const char *s = *p;
	const char *q = s;

	if (q < end && cron_is_digit(*q))
	{
		long		v = 0;

		/*
		 * Stop accumulating once out of range, so huge numbers cannot
		 * overflow.
		 */
		for (; q < end && cron_is_digit(*q); q++)
			if (v <= 1000000)
				v = v * 10 + (*q - '0');
		if (v < f->lo || v > f->hi)
		{
			snprintf(err, errlen, "%s field: value %.*s is out of range %d-%d",
					 f->name, (int) (q - s), s, f->lo, f->hi);
			return false;
		}
		*value = (int) v;
	}
	else if (q < end && cron_is_alpha(*q))
	{
		int			i;

		while (q < end && cron_is_alpha(*q))
			q++;
		for (i = 0; i < f->nnames; i++)
			if (cron_word_eq(s, (size_t) (q - s), f->names[i]))
				break;
		if (i >= f->nnames)
		{
			snprintf(err, errlen, "%s field: unknown name \"%.*s\"",
					 f->name, (int) (q - s), s);
			return false;
		}
		*value = f->names_base + i;
	}
	else if (q >= end || *q == ',')
	{
		snprintf(err, errlen, "%s field: missing value", f->name);
		return false;
	}
	else
	{
		cron_unexpected(f, *q, err, errlen);
		return false;
	}
	*p = q;
	return true;
}

/*
 * Parses one field, text[0..end), into a mask with bit v set for each
 * allowed value v.
 */
static bool
cron_parse_field(const CronField *f, const char *text, const char *end,
				 uint64_t *mask, char *err, size_t errlen)
{
	const char *p = text;

	*mask = 0;
	for (;;)
	{
		const char *item = p;
		int			first;
		int			last;
		int			step = 1;
		int			v;

		if (p >= end || *p == ',')
		{
			snprintf(err, errlen, "%s field: empty item in list", f->name);
			return false;
		}

		if (*p == '*')
		{
			p++;
			first = f->lo;
			last = f->open_hi;
		}
		else
		{
			if (!cron_parse_value(f, &p, end, &first, err, errlen))
				return false;
			last = first;
			if (p < end && *p == '-')
			{
				p++;
				if (!cron_parse_value(f, &p, end, &last, err, errlen))
					return false;
				if (first > last)
				{
					/* Sunday is 7 at the end of a range: say so. */
					snprintf(err, errlen, "%s field: range %.*s is reversed%s",
							 f->name, (int) (p - item), item,
							 (f == &cron_fields[FIELD_WDAY] && last == 0) ?
							 " (use 7 for Sunday at the end of a range)" : "");
					return false;
				}
			}
			else if (p < end && *p == '/')
				last = f->open_hi > first ? f->open_hi : first;
		}

		if (p < end && *p == '/')
		{
			const char *s = ++p;
			long		n = 0;

			if (p >= end || !cron_is_digit(*p))
			{
				if (p >= end || *p == ',')
					snprintf(err, errlen, "%s field: missing step after '/'",
							 f->name);
				else
					cron_unexpected(f, *p, err, errlen);
				return false;
			}
			for (; p < end && cron_is_digit(*p); p++)
				if (n <= 1000000)
					n = n * 10 + (*p - '0');
			if (n < 1 || n > f->hi)
			{
				snprintf(err, errlen, "%s field: step %.*s is out of range 1-%d",
						 f->name, (int) (p - s), s, f->hi);
				return false;
			}
			step = (int) n;
		}

		for (v = first; v <= last; v += step)
			*mask |= UINT64_C(1) << v;

		if (p >= end)
			return true;
		if (*p != ',')
		{
			cron_unexpected(f, *p, err, errlen);
			return false;
		}
		p++;
	}
}

/*
 * Parses five blank-separated fields (the text of an expression or of a
 * macro's expansion) into *out.
 */
static bool
cron_parse_fields(const char *expr, CoordCron *out, char *err, size_t errlen)
{
	const char *starts[NUM_FIELDS];
	const char *ends[NUM_FIELDS];
	uint64_t	masks[NUM_FIELDS];
	const char *p = expr;
	int			nfields = 0;
	int			i;

	/* Count every field, so the message can say how many there were. */
	for (;;)
	{
		const char *s;

		while (cron_is_blank(*p))
			p++;
		if (*p == '\0')
			break;
		s = p;
		while (*p != '\0' && !cron_is_blank(*p))
			p++;
		if (nfields < NUM_FIELDS)
		{
			starts[nfields] = s;
			ends[nfields] = p;
		}
		nfields++;
	}
	if (nfields != NUM_FIELDS)
	{
		snprintf(err, errlen,
				 "expected 5 fields (minute hour day-of-month month day-of-week), found %d",
				 nfields);
		return false;
	}

	for (i = 0; i < NUM_FIELDS; i++)
		if (!cron_parse_field(&cron_fields[i], starts[i], ends[i],
							  &masks[i], err, errlen))
			return false;

	out->minutes = masks[FIELD_MINUTE];
	out->hours = (uint32_t) masks[FIELD_HOUR];
	out->mdays = (uint32_t) masks[FIELD_MDAY];
	out->months = (uint16_t) masks[FIELD_MONTH];
	/* Fold 7 into 0: both are Sunday. */
	out->wdays = (uint8_t) ((masks[FIELD_WDAY] | (masks[FIELD_WDAY] >> 7)) & WDAYS_ALL);
	out->minute_star = (*starts[FIELD_MINUTE] == '*');
	out->hour_star = (*starts[FIELD_HOUR] == '*');
	out->mday_star = (*starts[FIELD_MDAY] == '*');
	out->wday_star = (*starts[FIELD_WDAY] == '*');
	return true;
}

/*
 * coord_cron_parse: see cron.h.  The result is built in a local and copied
 * out only on success.
 */
bool
coord_cron_parse(const char *expr, CoordCron *out, char *err, size_t errlen)
{
	CoordCron	result;
	const char *p;
	size_t		len;

	/* snprintf with size 0 writes nothing, and may then take a NULL buffer. */
	if (err == NULL)
		errlen = 0;
	if (errlen > 0)
		err[0] = '\0';

	if (expr == NULL)
	{
		snprintf(err, errlen, "cron expression is null");
		return false;
	}

	/*
	 * Measure no further than the limit: the input may be long or
	 * unterminated past it.
	 */
	for (len = 0; len <= COORD_CRON_MAX_LEN && expr[len] != '\0'; len++)
		;
	if (len > COORD_CRON_MAX_LEN)
	{
		snprintf(err, errlen, "cron expression is longer than %d bytes",
				 COORD_CRON_MAX_LEN);
		return false;
	}

	p = expr;
	while (cron_is_blank(*p))
		p++;
	if (*p == '\0')
	{
		snprintf(err, errlen, "cron expression is empty");
		return false;
	}

	if (*p == '@')
	{
		const char *s = p;
		size_t		n;
		size_t		i;

		while (*p != '\0' && !cron_is_blank(*p))
			p++;
		n = (size_t) (p - s);
		while (cron_is_blank(*p))
			p++;

		if (cron_word_eq(s, n, "@reboot"))
		{
			snprintf(err, errlen,
					 "@reboot is not supported: a schedule must be a set of clock times");
			return false;
		}
		for (i = 0; i < sizeof(cron_macros) / sizeof(cron_macros[0]); i++)
			if (cron_word_eq(s, n, cron_macros[i].name))
				break;
		if (i >= sizeof(cron_macros) / sizeof(cron_macros[0]))
		{
			snprintf(err, errlen,
					 "unknown macro \"%.*s\" (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)",
					 (int) n, s);
			return false;
		}
		if (*p != '\0')
		{
			snprintf(err, errlen, "macro %s must stand alone, without fields after it",
					 cron_macros[i].name);
			return false;
		}
		if (!cron_parse_fields(cron_macros[i].fields, &result, err, errlen))
			return false;
	}
	else if (!cron_parse_fields(p, &result, err, errlen))
		return false;

	if (out != NULL)
		*out = result;
	return true;
}

/* Floor division and its remainder, for times before 1970. */
static int64_t
cron_floor_div(int64_t a, int64_t b)
{
	int64_t		q = a / b;

	if (a % b < 0)
		q--;
	return q;
}

/*
 * Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil: years counted from March, so the leap day ends a year).
 */
static int64_t
cron_days_from_civil(int64_t y, int m, int d)
{
	int64_t		era;
	int64_t		yoe;
	int64_t		doy;
	int64_t		doe;

	y -= (m <= 2);
	era = cron_floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The inverse of cron_days_from_civil. */
static void
cron_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t		era;
	int64_t		doe;
	int64_t		yoe;
	int64_t		doy;
	int64_t		mp;

	z += 719468;
	era = cron_floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static bool
cron_is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
cron_days_in_month(int64_t y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return (m == 2 && cron_is_leap(y)) ? 29 : days[m - 1];
}

/* Lowest set bit of mask at or above `from` and below `limit`, or -1. */
static int
cron_next_bit(uint64_t mask, int from, int limit)
{
	int			i;

	if (from >= limit)
		return -1;
	mask >>= from;
	for (i = from; mask != 0 && i < limit; i++, mask >>= 1)
		if (mask & 1)
			return i;
	return -1;
}

/*
 * Whether the two day fields combine with AND: Vixie cron ORs them only when
 * both are restricted, i.e. neither text began with '*'.
 */
static bool
cron_days_and(const CoordCron *c)
{
	return c->mday_star || c->wday_star;
}

/*
 * The days of month (y, m) that the day fields accept, as a mask with bit d
 * for day d.
 */
static uint32_t
cron_month_days(const CoordCron *c, int64_t y, int m)
{
	int			dim = cron_days_in_month(y, m);
	uint32_t	valid = (uint32_t) (((UINT64_C(1) << dim) - 1) << 1);
	int64_t		day1 = cron_days_from_civil(y, m, 1);
	int			wday1;
	uint64_t	wmask = 0;
	uint32_t	dmask;
	int			w;

	/* 1970-01-01 was a Thursday (4). */
	wday1 = (int) (day1 + 4 - cron_floor_div(day1 + 4, 7) * 7);
	for (w = 0; w < 7; w++)
		if (c->wdays & (1u << w))
			wmask |= SAME_WDAY_AS_1ST << ((w - wday1 + 7) % 7);

	dmask = c->mdays & valid;
	if (cron_days_and(c))
		return dmask & (uint32_t) wmask;
	return (dmask | (uint32_t) wmask) & valid;
}

/*
 * Whether the expression can ever fire.  Every month, day and weekday that
 * can exist together does within any 400 years, so it is enough that some
 * allowed month has an allowed day in its longest form (February with 29).
 */
static bool
cron_can_fire(const CoordCron *c)
{
	int			m;

	if ((c->minutes & MINUTES_ALL) == 0 || (c->hours & HOURS_ALL) == 0)
		return false;
	for (m = 1; m <= 12; m++)
	{
		uint32_t	dmask;

		if (!(c->months & (1u << m)))
			continue;
		/* 2000 is a leap year, so this is each month's longest form. */
		dmask = c->mdays & (uint32_t) (((UINT64_C(1) << cron_days_in_month(2000, m)) - 1) << 1);
		if (cron_days_and(c) ? (dmask != 0 && (c->wdays & WDAYS_ALL) != 0) :
			(dmask != 0 || (c->wdays & WDAYS_ALL) != 0))
			return true;
	}
	return false;
}

/*
 * Earliest (hour, minute) at or after (hour, minute) in a day the day fields
 * accept; false when the rest of the day has none.
 */
static bool
cron_time_in_day(const CoordCron *c, int hour, int minute, int *h, int *mi)
{
	int			hh;

	for (hh = cron_next_bit(c->hours, hour, 24); hh >= 0;
		 hh = cron_next_bit(c->hours, hh + 1, 24))
	{
		int			mm = cron_next_bit(c->minutes, hh == hour ? minute : 0, 60);

		if (mm >= 0)
		{
			*h = hh;
			*mi = mm;
			return true;
		}
	}
	return false;
}

/*
 * coord_cron_next: see cron.h.  Starts at the minute after `after` and moves
 * month by month; within a month, the day mask gives the candidate days in
 * order, and only the first of them can be cut short by the start time.
 */
int64_t
coord_cron_next(const CoordCron *c, int64_t after)
{
	int64_t		start;
	int64_t		days;
	int64_t		y;
	int			m;
	int			d;
	int			hour;
	int			minute;
	int			i;

	if (c == NULL || after < CRON_MIN_AFTER || after > CRON_MAX_AFTER)
		return -1;
	if (!cron_can_fire(c))
		return -1;

	/* The next whole minute strictly after `after`. */
	start = (cron_floor_div(after, 60) + 1) * 60;
	days = cron_floor_div(start, SECS_PER_DAY);
	minute = (int) ((start - days * SECS_PER_DAY) / 60);
	hour = minute / 60;
	minute %= 60;
	cron_civil_from_days(days, &y, &m, &d);

	/*
	 * cron_can_fire promised a match within 400 years; the bound only guards
	 * against a broken promise.
	 */
	for (i = 0; i <= 400 * 12; i++)
	{
		if (c->months & (1u << m))
		{
			uint32_t	daymask = cron_month_days(c, y, m) & (UINT32_C(0xFFFFFFFF) << d);
			int			dd;

			for (dd = cron_next_bit(daymask, d, 32); dd >= 0;
				 dd = cron_next_bit(daymask, dd + 1, 32))
			{
				int			h;
				int			mi;

				if (cron_time_in_day(c, dd == d ? hour : 0, dd == d ? minute : 0,
									 &h, &mi))
					return cron_days_from_civil(y, m, dd) * SECS_PER_DAY +
						h * 3600 + mi * 60;
			}
		}
		if (++m > 12)
		{
			m = 1;
			y++;
		}
		d = 1;
		hour = 0;
		minute = 0;
	}
	return -1;
}


/* How far before `after` the zone search starts: longer than any fall-back. */
#define CRON_ZONE_LOOKBACK	(3 * SECS_PER_DAY)

/*
 * Offset changes crossed per search at most: a guard against a zone callback
 * that never gets anywhere, far above the few per year of real zones over
 * the 40 years an expression may wait.
 */
#define CRON_ZONE_MAX_SPANS 100000

/* One span of constant offset. */
typedef struct CronSpan
{
	int64_t		start;			/* its first instant */
	int64_t		end;			/* the next change, or INT64_MAX */
	int32_t		off;			/* offset within, seconds east of UTC */
} CronSpan;

/*
 * The span that begins at `start`: the zone's offset there, and its next
 * change; a change not after `start` (a broken callback) counts as none, so
 * the walk always moves forward.
 */
static void
cron_zone_span(const CoordCronZone *zone, int64_t start, CronSpan *s)
{
	int64_t		when = INT64_MAX;
	int32_t		off = 0;
	int32_t		next_off = 0;

	if (!zone->next_change(zone->arg, start, &when, &off, &next_off) || when <= start)
		when = INT64_MAX;
	s->start = start;
	s->off = off;
	s->end = when;
}

/*
 * The first match strictly after local time lo, remembered: the answer for
 * a larger bound is the same while it is still above that bound.
 */
typedef struct CronMatchCache
{
	bool		valid;
	int64_t		lo;
	int64_t		next;
} CronMatchCache;

static int64_t
cron_match_after(const CoordCron *c, int64_t lo, CronMatchCache *k)
{
	if (k->valid && lo >= k->lo && (k->next == -1 || k->next > lo))
		return k->next;
	k->valid = true;
	k->lo = lo;
	k->next = coord_cron_next(c, lo);
	return k->next;
}

/*
 * The wildcard rule ("Zones" above): the first instant after `after` at
 * which the local clock shows a matching minute.
 */
static int64_t
cron_next_wall(const CoordCron *c, int64_t after, const CoordCronZone *zone)
{
	CronSpan	s;
	CronMatchCache cache = {false, 0, -1};
	int64_t		lo = after;		/* fire times lie after it */
	int64_t		next;
	int			i;

	cron_zone_span(zone, after, &s);
	for (i = 0; i < CRON_ZONE_MAX_SPANS; i++)
	{
		/* the span's instants after lo show local times after lo + s.off */
		next = cron_match_after(c, lo + s.off, &cache);
		if (next == -1)
			return -1;
		if (next - s.off < s.end)
			return next - s.off;
		lo = s.end - 1;
		cron_zone_span(zone, s.end, &s);
	}
	return -1;
}

/* coord_cron_next_tz: see cron.h and "Zones" above. */
int64_t
coord_cron_next_tz(const CoordCron *c, int64_t after, const CoordCronZone *zone)
{
	CronSpan	s;
	CronMatchCache cache = {false, 0, -1};
	int64_t		reached;		/* the latest local second reached so far */
	int64_t		next;
	int			i;

	if (zone == NULL)
		return coord_cron_next(c, after);
	if (c == NULL || after < CRON_MIN_AFTER || after > CRON_MAX_AFTER)
		return -1;
	if (!cron_can_fire(c))
		return -1;
	if (c->minute_star || c->hour_star)
		return cron_next_wall(c, after, zone);

	/* walk from a few days back to the span that holds `after` */
	cron_zone_span(zone, after - CRON_ZONE_LOOKBACK, &s);
	reached = s.start + s.off;
	for (i = 0; s.end <= after && i < CRON_ZONE_MAX_SPANS; i++)
	{
		if (s.end - 1 + s.off > reached)
			reached = s.end - 1 + s.off;
		cron_zone_span(zone, s.end, &s);
	}
	if (after + s.off > reached)
		reached = after + s.off;

	for (i = 0; i < CRON_ZONE_MAX_SPANS; i++)
	{
		/* the first local time after `reached` that matches */
		next = cron_match_after(c, reached, &cache);
		if (next == -1)
			return -1;
		/* it was skipped by the clock jumping forward: it fires at the change */
		if (next < s.start + s.off)
			return s.start;
		if (next - s.off < s.end)
			return next - s.off;
		if (s.end - 1 + s.off > reached)
			reached = s.end - 1 + s.off;
		cron_zone_span(zone, s.end, &s);
	}
	return -1;
}
