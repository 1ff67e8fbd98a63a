/*-------------------------------------------------------------------------
 * apps_periods.c
 *		Where an app's runs start when coord.define_app stores it.
 *
 * The rules (README, "Apps"):
 *	- a new app, or one whose grain changed (another period length: its
 *	  old periods mean nothing now), starts over: at catchup_from's period
 *	  when it is given, else at the period of its first tick (both periods
 *	  NULL until then);
 *	- a stored app with the same grain keeps its periods, unless
 *	  catchup_from's period is earlier than its first period (or it has
 *	  none yet): then both move there, and the periods from there on that
 *	  have no run get one.  A later catchup_from changes nothing: runs
 *	  created are never taken back.
 *
 * Pure: inputs in, the answer out; no catalog, no SPI, no allocation, no
 * error.  define_app reads the inputs (as the owner, under the definitions
 * lock) and writes the answer.
 *-------------------------------------------------------------------------
 */
#include "apps_periods.h"

AppPeriods
coord_app_periods(const AppPeriodsInput *in)
{
	AppPeriods	out = {true, 0, true, 0};

	if (!in->exists || in->stored_grain != in->grain)
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
