/*-------------------------------------------------------------------------
 * db.h
 *		coord-agent's database session (db.c): the connection, the bounded
 *		round trip of every statement, LISTEN, notices, the reconnect.
 *
 * Who calls whom: the loop (agent.c) drives the session and reads
 * db_state; protocol.c sends every statement through db_run; db.c opens
 * each new session with protocol.c's statements and tells the loop of
 * wake-ups and of a lost session through the two agent_* functions below,
 * which agent.c defines.  status.c has a connection of its own and uses
 * none of this.
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_DB_H
#define COORD_AGENT_DB_H

#include <poll.h>

#include "coord_agent.h"

typedef enum DbState
{
	DB_DOWN,
	DB_CONNECTING,
	DB_READY
} DbState;

/* read-only outside db.c */
extern DbState db_state;

/* the loop's side */
extern void db_init(const AgentConfig *config);
extern void db_reload(const AgentConfig *config, bool relisten);
extern void db_tick(msec_t now, bool wanted);
extern bool db_group_ready(void);
extern msec_t db_next_wakeup(bool wanted);
extern bool db_poll_fd(struct pollfd *pfd);
extern void db_socket_ready(void);
extern void db_close(void);

/* statements (protocol.c) and errors */
extern PGresult *db_run(const char *sql, int nparams, const char *const *values,
						ExecStatusType want, char *sqlstate);
extern const char *db_error(void);
extern const char *db_doubt(void);
extern unsigned long db_session(void);
extern PGconn *db_conn(void);
extern void db_lost(const char *why);
extern void db_lost_after(const char *why, msec_t delay);

/*
 * Defined by the loop (agent.c), called by db.c: agent_wake on a
 * notification or a new session (claim now), agent_session_lost when the
 * session is gone (and its session-bound claims with it).
 */
extern void agent_wake(void);
extern void agent_session_lost(void);

#endif							/* COORD_AGENT_DB_H */
