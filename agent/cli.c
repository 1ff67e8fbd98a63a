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

/* n blanks */
static void
pad_to(Buf *b, int n)
{
	for (; n > 0; n--)
		buf_append(b, " ", 1);
}

/* s in at most w columns: cut with "…" if wider, padded with pad blanks if narrower */
static void
put_cell(Buf *b, const char *s, int w, bool pad)
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
		buf_append(b, s, p - s);
		if (w > 0)
			buf_append(b, "\xE2\x80\xA6", 3);
		return;
	}
	buf_append(b, s, strlen(s));
	if (pad)
		pad_to(b, w - have);
}

/* The line without its trailing blanks, then end (a colour's reset) and a newline. */
static void
end_line(Buf *b, const char *end)
{
	while (b->len > 0 && b->data[b->len - 1] == ' ')
		b->len--;
	fwrite(b->data, 1, b->len, stdout);
	fputs(end, stdout);
	fputc('\n', stdout);
	buf_reset(b);
}

void
print_table(const Table *t, int indent, bool color, int maxwidth)
{
	int			ncols = t->ncols;
	int		   *width = xmalloc(sizeof(int) * ncols);
	int		   *data = xmalloc(sizeof(int) * ncols);	/* widest cell */
	Buf			line = {0};
	int			total,
				phase,
				r,
				c;

	for (c = 0; c < ncols; c++)
	{
		data[c] = 0;
		for (r = 0; r < t->nrows; r++)
		{
			int			w = text_width(t->cells[r * ncols + c]);

			if (w > data[c])
				data[c] = w;
		}
		width[c] = data[c] > text_width(t->headers[c]) ? data[c] : text_width(t->headers[c]);
	}

	/*
	 * Too wide: narrow the widest text column, down to 10; then numbers to
	 * their widest value (their headers cut); then text down to 4.
	 */
	total = indent + 2 * (ncols - 1);
	for (c = 0; c < ncols; c++)
		total += width[c];
	for (phase = 0; phase < 3 && maxwidth > 0 && total > maxwidth; phase++)
		while (total > maxwidth)
		{
			int			widest = -1;

			for (c = 0; c < ncols; c++)
			{
				int			floor = phase == 0 ? 10 : phase == 2 ? 4 : data[c] > 3 ? data[c] : 3;

				if (t->right[c] == (phase == 1) && width[c] > floor &&
					(widest < 0 || width[c] > width[widest]))
					widest = c;
			}
			if (widest < 0)
				break;			/* the next phase, or it wraps */
			width[widest]--;
			total--;
		}

	pad_to(&line, indent);
	if (color)
		buf_append(&line, C_DIM, strlen(C_DIM));
	for (c = 0; c < ncols; c++)
	{
		int			pad = width[c] - text_width(t->headers[c]);

		if (c)
			pad_to(&line, 2);
		if (t->right[c])
			pad_to(&line, pad);
		put_cell(&line, t->headers[c], width[c], !t->right[c]);
	}
	end_line(&line, color ? C_RESET : "");
	for (r = 0; r < t->nrows; r++)
	{
		pad_to(&line, indent);
		for (c = 0; c < ncols; c++)
		{
			const char *cell = t->cells[r * ncols + c];
			const char *colr = color && t->colors ? t->colors[r * ncols + c] : NULL;
			int			pad = width[c] - text_width(cell);

			if (c)
				pad_to(&line, 2);
			if (t->right[c])
				pad_to(&line, pad);
			if (colr)
				buf_append(&line, colr, strlen(colr));
			put_cell(&line, cell, width[c], false);
			if (colr)
				buf_append(&line, C_RESET, strlen(C_RESET));
			if (!t->right[c])
				pad_to(&line, pad);
		}
		end_line(&line, "");
	}
	buf_free(&line);
	free(width);
	free(data);
}

bool
cli_numeric_type(Oid type)
{
	/* the types' oids (catalog/pg_type_d.h, which a libpq program has not) */
	return type == 20 || type == 21 || type == 23 || type == 700 || type == 701 ||
		type == 1700 || type == 26;
}
