/*-------------------------------------------------------------------------
 * cli.c
 *		The command-line side that "coord-agent status" and coordctl share:
 *		connecting from -d or the PG* variables, errors fit for a terminal
 *		(no password, no control character), and tables sized to it.
 *
 * A password of the connection string is remembered (mask_conninfo)
 * before libpq sees the string, so that an error quoting it prints
 * "********" instead.  Tables never wrap on a terminal: left-aligned
 * columns are cut, widest first, until a line fits its width.
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "coord_agent.h"
#include "cli.h"

const char *cli_conninfo = NULL;

char *
cli_error(const char *msg)
{
	char	   *red = redact(msg ? msg : "");
	char	   *t = trim(red);
	char	   *p;
	char	   *esc;

	/* libpq's messages span lines: one line for a terminal */
	for (p = t; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	esc = escape_text(t);
	free(red);
	return esc;
}

PGconn *
cli_connect(const char *appname, char **errmsg)
{
	const char *keys[] = {"dbname", "fallback_application_name", "client_encoding", NULL};
	const char *vals[] = {cli_conninfo, appname, "UTF8", NULL};
	PGconn	   *conn;

	free(mask_conninfo(cli_conninfo));	/* remembers its password for redact() */
	conn = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		*errmsg = cli_error(PQerrorMessage(conn));
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* ---------- tables ---------- */

int
text_width(const char *s)
{
	int			w = 0;

	for (; *s; s++)
		if (((unsigned char) *s & 0xC0) != 0x80)
			w++;
	return w;
}

int
term_width(void)
{
	const char *cols = getenv("COLUMNS");
	struct winsize ws;

	if (cols && *cols)
	{
		char	   *end;
		long		n = strtol(cols, &end, 10);

		if (*end == '\0' && n > 0 && n < 100000)
			return (int) n;
	}
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}

/* Prints s in w columns: cut with "…" if wider, padded (pad) if narrower. */
static void
put_cell(const char *s, int w, bool pad)
{
	int			have = text_width(s);

	if (have > w)
	{
		const char *p = s;
		int			n = 0;

		/* w - 1 code points, then the ellipsis */
		while (*p && n < w - 1)
		{
			p++;
			while (((unsigned char) *p & 0xC0) == 0x80)
				p++;
			n++;
		}
		fwrite(s, 1, p - s, stdout);
		if (w > 0)
			fputs("\xE2\x80\xA6", stdout);
		return;
	}
	fputs(s, stdout);
	if (pad)
		printf("%*s", w - have, "");
}

void
print_table(const Table *t, int indent, bool color, int maxwidth)
{
	int			ncols = t->ncols;
	int		   *width = xmalloc(sizeof(int) * ncols);
	int			total,
				r,
				c;

	for (c = 0; c < ncols; c++)
	{
		width[c] = text_width(t->headers[c]);
		for (r = 0; r < t->nrows; r++)
		{
			int			w = text_width(t->cells[r * ncols + c]);

			if (w > width[c])
				width[c] = w;
		}
	}
	/* narrow the widest left-aligned column, one column at a time */
	total = indent + 2 * (ncols - 1);
	for (c = 0; c < ncols; c++)
		total += width[c];
	while (maxwidth > 0 && total > maxwidth)
	{
		int			widest = -1;

		for (c = 0; c < ncols; c++)
			if (!t->right[c] && width[c] > 4 && (widest < 0 || width[c] > width[widest]))
				widest = c;
		if (widest < 0)
			break;				/* nothing left to cut: it wraps */
		width[widest]--;
		total--;
	}

	printf("%*s%s", indent, "", color ? C_DIM : "");
	for (c = 0; c < ncols; c++)
	{
		bool		last = c == ncols - 1;
		int			pad = width[c] - text_width(t->headers[c]);

		if (c)
			printf("  ");
		if (t->right[c] && pad > 0)
			printf("%*s", pad, "");
		put_cell(t->headers[c], width[c], !t->right[c] && !last);
	}
	printf("%s\n", color ? C_RESET : "");
	for (r = 0; r < t->nrows; r++)
	{
		printf("%*s", indent, "");
		for (c = 0; c < ncols; c++)
		{
			const char *cell = t->cells[r * ncols + c];
			const char *colr = t->colors ? t->colors[r * ncols + c] : NULL;
			bool		last = c == ncols - 1;
			int			pad = width[c] - text_width(cell);

			if (c)
				printf("  ");
			/* an empty last cell gets no padding: no trailing blanks */
			if (t->right[c] && pad > 0 && !(last && *cell == '\0'))
				printf("%*s", pad, "");
			if (color && colr)
				fputs(colr, stdout);
			put_cell(cell, width[c], false);
			if (color && colr)
				fputs(C_RESET, stdout);
			if (!t->right[c] && !last && pad > 0)
				printf("%*s", pad, "");
		}
		printf("\n");
	}
	free(width);
}
