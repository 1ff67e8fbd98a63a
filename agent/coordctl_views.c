/*-------------------------------------------------------------------------
 * coordctl_views.c
 *		coordctl schedules, grid, rerun, locks, leaders, members, alerts (docs/coordctl.md).
 *-------------------------------------------------------------------------
 */
#include "coordctl.h"

int
ctl_schedules(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_grid(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_rerun(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_locks(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_leaders(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_members(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_alerts(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}
