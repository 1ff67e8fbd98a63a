/*-------------------------------------------------------------------------
 * periods_test.c
 *		Standalone tests of src/apps_periods.c: where coord.define_app makes
 *		an app's runs start, for a new app, a redefinition with the same
 *		grain, one with another grain, with and without catchup_from.
 *
 * Each row gives the inputs and the periods expected (NULL or a time in
 * hours since the epoch of TimestampTz).  Run it through test/apps/run.sh.
 *-------------------------------------------------------------------------
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "apps_periods.h"

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
	int			catchup;		/* hours (already a period start), or NUL: none */
	int			first;			/* expected */
	int			next;
} PeriodsCase;

static const PeriodsCase cases[] = {
	/* a new app */
	{"new, no catchup: NULL until the first tick", false, G_NONE, NUL, NUL, G_DAILY, NUL, NUL, NUL},
	{"new, catchup: both at its period", false, G_NONE, NUL, NUL, G_DAILY, 48, 48, 48},
	{"new, catchup at 0 is a time, not NULL", false, G_NONE, NUL, NUL, G_HOURLY, 0, 0, 0},
	/* the same grain again */
	{"same grain, no catchup: unchanged", true, G_DAILY, 24, 96, G_DAILY, NUL, 24, 96},
	{"same grain, never ticked, no catchup: still NULL", true, G_DAILY, NUL, NUL, G_DAILY, NUL, NUL, NUL},
	{"same grain, later catchup: unchanged", true, G_DAILY, 24, 96, G_DAILY, 72, 24, 96},
	{"same grain, catchup at the first period: unchanged", true, G_DAILY, 24, 96, G_DAILY, 24, 24, 96},
	{"same grain, earlier catchup: both move back", true, G_DAILY, 48, 96, G_DAILY, 24, 24, 24},
	{"same grain, never ticked, catchup: both there", true, G_DAILY, NUL, NUL, G_DAILY, 72, 72, 72},
	{"same grain, first set, next NULL, no catchup: unchanged", true, G_HOURLY, 5, NUL, G_HOURLY, NUL, 5, NUL},
	/* another grain: start over */
	{"grain changed, no catchup: NULL again", true, G_DAILY, 24, 96, G_HOURLY, NUL, NUL, NUL},
	{"grain changed, later catchup: there, not kept", true, G_DAILY, 24, 96, G_WEEKLY, 168, 168, 168},
	{"grain changed, earlier catchup: there", true, G_MONTHLY, 744, 1488, G_DAILY, 24, 24, 24},
	{"stored grain unreadable: start over", true, G_NONE, 24, 48, G_DAILY, NUL, NUL, NUL},
};

static int	failures = 0;

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

int
main(void)
{
	size_t		i;
	int			checks = 0;

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
	printf("apps periods: %d rows, %d checks, %d failed\n",
		   (int) (sizeof(cases) / sizeof(cases[0])), checks, failures);
	return failures == 0 ? 0 : 1;
}
