/*-------------------------------------------------------------------------
 * db.h
 *		coord-agent's database session (db.c): the connection, the bounded
 *		round trip of every statement, LISTEN, notices, the reconnect.
 *
 * Who calls whom: the loop (agent.c) drives the session and reads
 * db_state; protocol.c sends every statement through db_run.  db.c is
 * below both and calls neither: it opens each new session with
 * protocol.c's statements and tells the loop of wake-ups and of a lost
 * session through the DbCallbacks below, which agent.c gives db_init.
 * status.c has a connection of its own and uses none of this.
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

/*
 * What db.c needs from the files above it, installed by the loop (agent.c)
 * with db_init.  The statements (protocol.c's) run through db_run and may
 * lose the session (db_state then says so).
 */
typedef struct DbCallbacks
{
	/*
	 * A new connection: its limits, the extension check, LISTEN; NULL when
	 * the session is open, else why not (malloc'd, for the log)
	 */
	char	   *(*open) (const AgentConfig *cfg);
	/* SIGHUP: the limits again, and LISTEN again when relisten */
	void		(*reload) (const AgentConfig *cfg, bool relisten);
	/* coord.join of cfg's partition group; *sqlstate gets the error's */
	bool		(*join) (const AgentConfig *cfg, const char *member, char *sqlstate);
	/* coord.leave of a group this session joined */
	bool		(*leave) (const char *group);
	/* the loop: claim now (a notification, a new session, a join) */
	void		(*wake) (void);
	/* the loop: the session is gone, and its session-bound claims with it */
	void		(*session_lost) (void);
	/* the loop: NOTIFY cancel on a job's channel, "coord:job:<id>" */
	void		(*job_cancelled) (int64_t id);
} DbCallbacks;

/* the loop's side */
extern void db_init(const AgentConfig *config, const DbCallbacks *callbacks);
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

#endif							/* COORD_AGENT_DB_H */
