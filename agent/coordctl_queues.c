/*-------------------------------------------------------------------------
 * coordctl_queues.c
 *		coordctl pause, resume, stats (docs/coordctl.md).
 *-------------------------------------------------------------------------
 */
#include "coordctl.h"

int
ctl_pause(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_resume(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_stats(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}
