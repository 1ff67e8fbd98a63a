/*-------------------------------------------------------------------------
 * protocol.h
 *		Every statement coord-agent sends to pg_coord (protocol.c).
 *
 * The proto_* functions of the agent's session send through db.c (db_run)
 * and may lose the session (db_state then says so); the loop (agent.c)
 * calls them, and hands the four db.c needs to it as its DbCallbacks
 * (db.h).  The proto_status_* ones run on the connection status.c passes
 * and return PQexec's result.
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_PROTOCOL_H
#define COORD_AGENT_PROTOCOL_H

#include "coord_agent.h"

/* the agent's session */

typedef enum ClaimStatus
{
	CLAIM_OK,					/* *rows: 0 to n readable rows */
	CLAIM_FAILED,				/* the server's error, or no connection */
	CLAIM_UNKNOWN,				/* the outcome is unknown (db_doubt()): it may
								 * have claimed */
	CLAIM_UNREADABLE			/* a result we cannot use: *why */
} ClaimStatus;

typedef enum HeartbeatStatus
{
	HEARTBEAT_VALID,			/* the claim is still ours */
	HEARTBEAT_LOST,				/* cancelled, timed out or taken over */
	HEARTBEAT_FAILED,			/* not said: an error or the connection */
	HEARTBEAT_UNKNOWN			/* the outcome is unknown (db_doubt()): the
								 * lease may not be renewed */
} HeartbeatStatus;

extern char *proto_open_session(const AgentConfig *cfg);
extern void proto_reload_session(const AgentConfig *cfg, bool relisten);
extern bool proto_join(const AgentConfig *cfg, const char *member, char *sqlstate);
extern bool proto_leave(const char *group);
extern ClaimStatus proto_claim(const char *queue, int n, msec_t lease, const char *host,
							   const char *pgroup,
							   PGresult **rows, const char **why);
extern void proto_claim_job(const PGresult *rows, int r, Job *job);
extern bool proto_listen_job(int64_t id, bool listen);
extern HeartbeatStatus proto_heartbeat(const Job *job, char **valid_until);

/*
 * One commit per job: a report that also claims up to n jobs of the job's
 * queue (coord.complete_and_claim, coord.fail_and_claim), as proto_claim
 * would; n = 0, or no NextClaim, reports only.  status and rows are as
 * proto_claim's (CLAIM_OK: rows holds 0 to n jobs, read with
 * proto_claim_job; the caller clears it); why for CLAIM_UNREADABLE.
 */
typedef struct NextClaim
{
	int			n;
	msec_t		lease;			/* 0: session-bound */
	const char *host;
	const char *pgroup;
	ClaimStatus status;
	PGresult   *rows;
	const char *why;
} NextClaim;

extern char *proto_complete(const Job *job, const char *result, bool *kept, NextClaim *next);
extern char *proto_fail(const Job *job, const char *error, msec_t retry_after, NextClaim *next);
extern char *proto_claim_state(const Job *job, char *sqlstate);
extern bool proto_next_due(const AgentConfig *cfg, msec_t *wait_ms);

/* "coord-agent status" */

extern PGresult *proto_status_limits(PGconn *conn, msec_t statement_timeout,
									 msec_t lock_timeout);
extern PGresult *proto_status_header(PGconn *conn);
extern PGresult *proto_status_access(PGconn *conn);
extern PGresult *proto_status_queues(PGconn *conn);
extern PGresult *proto_status_running(PGconn *conn, bool payload);
extern PGresult *proto_status_locks(PGconn *conn);
extern PGresult *proto_status_grid(PGconn *conn);

#endif							/* COORD_AGENT_PROTOCOL_H */
