/*-------------------------------------------------------------------------
 * serve.c
 *		"coordctl serve" (serve.h): a stub until the dashboard is built.
 *-------------------------------------------------------------------------
 */
#include <stdio.h>

#include "coord_agent.h"
#include "cli.h"
#include "serve.h"

int
coordctl_serve(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	fprintf(stderr, "coordctl serve: not built\n");
	return CLI_EXIT_ERROR;
}
