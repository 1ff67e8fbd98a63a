/*-------------------------------------------------------------------------
 * coordctl_metrics.c
 *		coordctl metrics (docs/coordctl.md).
 *-------------------------------------------------------------------------
 */
#include "coordctl.h"
#include "coordctl_metrics.h"

int
metrics_render(PGconn *conn, char **out, size_t *outlen, char **errmsg)
{
	(void) conn;
	*out = NULL;
	*outlen = 0;
	*errmsg = xstrdup("not built yet");
	return CLI_EXIT_ERROR;
}

int
ctl_metrics(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	return ctl_fail("not built yet");
}
