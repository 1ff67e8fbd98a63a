/*-------------------------------------------------------------------------
 * coordctl_metrics.h
 *		The Prometheus text exposition (format 0.0.4) of the view
 *		coord.metrics (metric, labels jsonb, value double precision, kind,
 *		help), rendered by coordctl_metrics.c: "coordctl metrics" prints it,
 *		"coordctl serve" answers GET /metrics with it (Content-Type
 *		METRICS_CONTENT_TYPE).
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_COORDCTL_METRICS_H
#define COORD_AGENT_COORDCTL_METRICS_H

#include "libpq-fe.h"

#define METRICS_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

/*
 * Reads coord.metrics on conn (one statement, no transaction left open)
 * and renders it: "# HELP" and "# TYPE" once per metric, then its samples,
 * label values escaped (\\, \", \n), values as Prometheus reads them (NaN,
 * +Inf, -Inf).  Returns 0 and sets *out (malloc'd, NUL-terminated, ends in
 * a newline unless empty) and *outlen; else *out is NULL, *errmsg is set
 * (malloc'd, one line, no password, fit for a terminal) and it returns
 * CLI_EXIT_PRIVILEGE (3: the role may not read coord.metrics; *errmsg names
 * the GRANT) or CLI_EXIT_ERROR (1: any other failure).  Free both with free().
 */
extern int	metrics_render(PGconn *conn, char **out, size_t *outlen, char **errmsg);

#endif							/* COORD_AGENT_COORDCTL_METRICS_H */
