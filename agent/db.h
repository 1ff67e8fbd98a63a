/*-------------------------------------------------------------------------
 * db.h
 *		coord-agent's database session (db.c).
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_DB_H
#define COORD_AGENT_DB_H

#include "coord_agent.h"

#define CONNECT_TIMEOUT_MS	10000

typedef enum DbState
{
	DB_DOWN,
	DB_CONNECTING,
	DB_READY
} DbState;

extern PGconn *conn;
extern DbState db_state;
extern PostgresPollingStatusType connect_dir;
extern msec_t connect_started;
extern msec_t reconnect_at;

extern const char *conn_error(void);
extern void drain_notifies(void);
extern void lost_connection(const char *why);
extern void lost_connection_after(const char *why, msec_t delay);
extern PGresult *run_sql(const char *sql, int nparams, const char *const *values,
						 ExecStatusType want, char *sqlstate);
extern void connect_failed(const char *why);
extern void start_connect(void);
extern void advance_connect(void);

/* the loop's state (agent.c) */
extern AgentConfig *cfg;
extern Job *jobs;
extern bool need_claim;

#endif							/* COORD_AGENT_DB_H */
