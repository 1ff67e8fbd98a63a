/*-------------------------------------------------------------------------
 * coordctl_jobs.c
 *		coordctl enqueue, jobs, job, retry, cancel, await (docs/coordctl.md).
 *-------------------------------------------------------------------------
 */
#include "coordctl.h"

int
ctl_enqueue(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_jobs(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_job(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_retry(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_cancel(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}

int
ctl_await(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}
