/*-------------------------------------------------------------------------
 * cli.h
 *		What the two command-line programs of agent/ share (cli.c):
 *		"coord-agent status" (status.c) and coordctl (coordctl*.c, serve*.c)
 *		connect the same way, print errors without passwords or control
 *		characters, and print tables sized to the terminal.
 *
 * cli.c sits just above util.c and calls nothing else of agent/.
 *-------------------------------------------------------------------------
 */
#ifndef COORD_AGENT_CLI_H
#define COORD_AGENT_CLI_H

#include "coord_agent.h"

/*
 * Exit statuses of coordctl (and of "coord-agent status", whose 3 is
 * STATUS_DENIED): 1 any other error (no connection, a failed statement),
 * 2 a usage error, 3 the role lacks a privilege (the message names the
 * GRANT).
 */
#define CLI_EXIT_ERROR		1
#define CLI_EXIT_USAGE		2
#define CLI_EXIT_PRIVILEGE	3

/*
 * The connection string given with -d, or NULL: the PG* variables.  Set by
 * the command line (coordctl.c, main.c); read by cli_connect.
 */
extern const char *cli_conninfo;

/*
 * A session on cli_conninfo, with fallback_application_name appname and
 * client_encoding UTF8; NULL and *errmsg (malloc'd, one line, no password,
 * no control character) if it could not connect.  cli_conninfo's password
 * is remembered first, so that redact() and cli_error() mask it anywhere.
 */
extern PGconn *cli_connect(const char *appname, char **errmsg);

/* A message for stderr from the server or libpq: one line, no password, escaped. */
extern char *cli_error(const char *msg);

/* A result column of a number type (int2/4/8, float4/8, numeric, oid): shown right-aligned. */
extern bool cli_numeric_type(Oid type);

/* ---------- tables ---------- */

/* Display width of UTF-8 text: its code points (good enough for names). */
extern int	text_width(const char *s);

/*
 * The width tables must fit: $COLUMNS if set to a number, else the
 * terminal's on stdout (ioctl), else 0: no limit (a pipe or a file).
 */
extern int	term_width(void);

/*
 * Rows of cells in aligned columns.  cells and colors are row-major
 * (nrows x ncols); a NULL colors, or a NULL color, is the terminal's
 * default.  indent blanks before each line; color: ANSI colours (the
 * header dim).  maxwidth > 0: left-aligned columns are narrowed, widest
 * first, and their cells cut with "…", until each line fits in maxwidth
 * (right-aligned columns, numbers, are never cut).  No line ends in blanks.
 */
typedef struct Table
{
	int			ncols;
	const char *const *headers;
	const bool *right;			/* right-aligned columns */
	int			nrows;
	char	  **cells;
	const char **colors;
} Table;

extern void print_table(const Table *t, int indent, bool color, int maxwidth);

/* ANSI colours of print_table's cells */
#define C_RESET		"\033[0m"
#define C_BOLD		"\033[1m"
#define C_DIM		"\033[2m"
#define C_RED		"\033[31m"
#define C_GREEN		"\033[32m"
#define C_YELLOW	"\033[33m"
#define C_CYAN		"\033[36m"

#endif							/* COORD_AGENT_CLI_H */
