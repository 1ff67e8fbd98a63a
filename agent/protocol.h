/*-------------------------------------------------------------------------
 * protocol.h
 *		the statements coord-agent sends to pg_coord (protocol.c).
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_PROTOCOL_H
#define COORD_AGENT_PROTOCOL_H

#include "coord_agent.h"

extern bool set_session_limits(void);
extern bool listen_all(void);
extern char *fail_job(const Job *job, const char *error, msec_t retry_after);
extern char *complete_job(const Job *job, const char *result, bool *kept);

#endif							/* COORD_AGENT_PROTOCOL_H */
