/*-------------------------------------------------------------------------
 * util.c
 *		coord-agent: logging, the monotonic clock, memory and byte buffers,
 *		text cleaning and escaping, password masking, and the duration
 *		syntax of the options and the config.
 *
 * Log lines go to stderr, one per event, with a wall-clock timestamp and the
 * agent's pid, so that several agents logging into one journal can be told
 * apart.  Every line passes redact() (the connection string's password
 * never shows) and escape_text() (no control character from the database
 * reaches a terminal).  Allocation failures end the agent: it cannot do anything useful
 * without memory, and a half-handled job would be worse than a restart.
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "coord_agent.h"

bool		verbose = false;

/* Milliseconds on the monotonic clock: immune to wall-clock jumps. */
msec_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (msec_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void log_line(const char *level, const char *fmt, va_list ap)
			__attribute__((format(printf, 2, 0)));

/* Writes one log line: "2026-11-29 10:00:00.123 coord-agent[42]: LEVEL msg". */
static void
log_line(const char *level, const char *fmt, va_list ap)
{
	struct timeval tv;
	struct tm	tm;
	char		stamp[32];
	char		msg[4096];

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* libpq's messages span lines: fold them, one event stays one line */
	{
		char	   *r,
				   *w;

		for (r = w = msg; *r; r++)
		{
			if (*r == '\n')
			{
				while (r[1] == ' ' || r[1] == '\t' || r[1] == '\n')
					r++;
				if (r[1] != '\0')
					*w++ = ' ';
			}
			else
				*w++ = *r;
		}
		*w = '\0';
	}

	/*
	 * Names, payload fields and server messages come from the database: a
	 * password never appears, and no control character reaches the terminal
	 * or journal that shows this line.
	 */
	{
		char	   *red = redact(msg);
		char	   *esc = escape_text(red);

		/* one fprintf per line: lines of concurrent writers do not interleave */
		fprintf(stderr, "%s.%03d coord-agent[%d]: %s%s\n",
				stamp, (int) (tv.tv_usec / 1000), (int) getpid(), level, esc);
		free(esc);
		free(red);
	}
	fflush(stderr);
}

void
log_info(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

void
log_verbose(const char *fmt,...)
{
	va_list		ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

void
log_warning(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	log_line("WARNING: ", fmt, ap);
	va_end(ap);
}

void
log_error(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	log_line("ERROR: ", fmt, ap);
	va_end(ap);
}

void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "coord-agent: out of memory\n");
		exit(1);
	}
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	void	   *q = realloc(p, n ? n : 1);

	if (q == NULL)
	{
		fprintf(stderr, "coord-agent: out of memory\n");
		exit(1);
	}
	return q;
}

char *
xstrdup(const char *s)
{
	size_t		n = strlen(s) + 1;
	char	   *p = xmalloc(n);

	memcpy(p, s, n);
	return p;
}

char *
xasprintf(const char *fmt,...)
{
	va_list		ap;
	char		small[256];
	int			n;
	char	   *p;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return xstrdup("");
	p = xmalloc((size_t) n + 1);
	if ((size_t) n < sizeof(small))
	{
		memcpy(p, small, (size_t) n + 1);
		return p;
	}
	va_start(ap, fmt);
	vsnprintf(p, (size_t) n + 1, fmt, ap);
	va_end(ap);
	return p;
}

/* Appends n bytes; the data stays NUL-terminated for the string users. */
void
buf_append(Buf *b, const char *data, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 256;

		while (cap < b->len + n + 1)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
buf_reset(Buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/*
 * Length of the valid UTF-8 sequence at s (at most len bytes), or 0 if the
 * bytes there are not one.  Overlong forms and surrogates count as invalid:
 * the server would refuse them.
 */
static int
utf8_seq(const unsigned char *s, size_t len)
{
	int			n,
				i;
	unsigned int cp;

	if (s[0] < 0x80)
		return 1;
	else if ((s[0] & 0xE0) == 0xC0)
	{
		n = 2;
		cp = s[0] & 0x1F;
	}
	else if ((s[0] & 0xF0) == 0xE0)
	{
		n = 3;
		cp = s[0] & 0x0F;
	}
	else if ((s[0] & 0xF8) == 0xF0)
	{
		n = 4;
		cp = s[0] & 0x07;
	}
	else
		return 0;
	if ((size_t) n > len)
		return 0;
	for (i = 1; i < n; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
		cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/*
 * A copy of s fit for a terminal: control characters (C0, DEL, and the C1
 * range U+0080-U+009F, which some terminals obey too), and bytes that are
 * not UTF-8, become \xNN; a backslash stays a backslash.
 */
char *
escape_text(const char *s)
{
	size_t		len = strlen(s);
	char	   *out = xmalloc(len * 4 + 1);
	size_t		i = 0,
				o = 0;

	while (i < len)
	{
		const unsigned char *u = (const unsigned char *) s + i;
		int			n = utf8_seq(u, len - i);
		int			k;

		if (n == 0 || (n == 1 && (u[0] < 0x20 || u[0] == 0x7F)) ||
			(n == 2 && u[0] == 0xC2 && u[1] < 0xA0))
		{
			if (n == 0)
				n = 1;
			for (k = 0; k < n; k++)
				o += sprintf(out + o, "\\x%02x", u[k]);
		}
		else
		{
			memcpy(out + o, u, n);
			o += n;
		}
		i += n;
	}
	out[o] = '\0';
	return out;
}

/* ---------- passwords ---------- */

#define MAX_SECRETS 8
static char *secrets[MAX_SECRETS];
static int	nsecrets;

/*
 * Remembers a password that must never be printed: redact() replaces it
 * wherever it shows up (libpq quotes parts of a bad connection string in
 * its errors).  Very short ones are not remembered: masking them would
 * garble every line, and they are not secrets anyway.
 */
static void
add_secret(const char *s, size_t n)
{
	int			i;

	if (n < 4 || nsecrets >= MAX_SECRETS)
		return;
	for (i = 0; i < nsecrets; i++)
		if (strlen(secrets[i]) == n && memcmp(secrets[i], s, n) == 0)
			return;
	secrets[nsecrets] = xmalloc(n + 1);
	memcpy(secrets[nsecrets], s, n);
	secrets[nsecrets][n] = '\0';
	nsecrets++;
}

/* A copy of s with every remembered password replaced by "********". */
char *
redact(const char *s)
{
	Buf			b = {0};
	const char *p = s;

	buf_append(&b, "", 0);
	while (*p)
	{
		int			i;
		size_t		n = 0;

		for (i = 0; i < nsecrets; i++)
			if (strncmp(p, secrets[i], strlen(secrets[i])) == 0)
			{
				n = strlen(secrets[i]);
				break;
			}
		if (n > 0)
		{
			buf_append(&b, "********", 8);
			p += n;
		}
		else
			buf_append(&b, p++, 1);
	}
	return b.data;
}

static bool
is_uri(const char *s)
{
	return strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0;
}

/*
 * A copy of a connection string (key=value or URI) with its passwords
 * replaced by "********", for display; each password is also remembered
 * for redact().  Works on the text alone, so that also a connection string
 * libpq refuses (whose error may quote it) is masked.
 */
static char *
mask_text(const char *s)
{
	Buf			b = {0};
	const char *p = s;

	buf_append(&b, "", 0);
	if (s == NULL)
		return b.data;
	if (is_uri(s))
	{
		const char *auth = strstr(s, "://") + 3;
		size_t		authlen = strcspn(auth, "/?");
		const char *at = NULL;
		const char *q;

		/* user:password@ -- the last '@' of the authority */
		for (q = auth; q < auth + authlen; q++)
			if (*q == '@')
				at = q;
		if (at != NULL)
		{
			const char *colon = memchr(auth, ':', at - auth);

			if (colon != NULL)
			{
				buf_append(&b, s, colon + 1 - s);
				add_secret(colon + 1, at - colon - 1);
				buf_append(&b, "********", 8);
				p = at;
			}
		}
		/* ?...&password=...& */
		while (*p)
		{
			if ((*p == '?' || *p == '&') && strncmp(p + 1, "password=", 9) == 0)
			{
				size_t		n = strcspn(p + 10, "&");

				buf_append(&b, p, 10);
				add_secret(p + 10, n);
				buf_append(&b, "********", 8);
				p += 10 + n;
			}
			else
				buf_append(&b, p++, 1);
		}
		return b.data;
	}
	while (*p)
	{
		const char *k = p;

		/*
		 * at the start of a key: is it "password" (blanks allowed before
		 * '=')?
		 */
		if ((k == s || isspace((unsigned char) k[-1])) && strncmp(k, "password", 8) == 0)
		{
			const char *v = k + 8;

			while (isspace((unsigned char) *v))
				v++;
			if (*v == '=')
			{
				const char *start;

				v++;
				while (isspace((unsigned char) *v))
					v++;
				buf_append(&b, k, v - k);
				start = v;
				if (*v == '\'')
				{
					for (v++; *v && *v != '\''; v++)
						if (*v == '\\' && v[1])
							v++;
					add_secret(start + 1, v - start - 1);
					if (*v == '\'')
						v++;
				}
				else
				{
					while (*v && !isspace((unsigned char) *v))
						v++;
				}
				add_secret(start, v - start);
				buf_append(&b, "********", 8);
				p = v;
				continue;
			}
		}
		buf_append(&b, p++, 1);
	}
	return b.data;
}

char *
mask_conninfo(const char *s)
{
	char	   *masked = mask_text(s);
	PQconninfoOption *opts;

	/* and the password as libpq decodes it (quotes, %-escapes) */
	if (s != NULL && (opts = PQconninfoParse(s, NULL)) != NULL)
	{
		PQconninfoOption *o;

		for (o = opts; o->keyword; o++)
			if (strcmp(o->keyword, "password") == 0 && o->val != NULL)
				add_secret(o->val, strlen(o->val));
		PQconninfoFree(opts);
	}
	return masked;
}

/*
 * A copy of len bytes of child output that the server accepts as text:
 * invalid UTF-8 and control characters other than newline and tab become
 * '?', and a NUL can no longer cut the string short.
 */
char *
clean_text(const char *s, size_t len)
{
	char	   *out = xmalloc(len + 1);
	size_t		i = 0,
				o = 0;

	while (i < len)
	{
		unsigned char c = (unsigned char) s[i];
		int			n = utf8_seq((const unsigned char *) s + i, len - i);

		if (n == 0)
		{
			out[o++] = '?';
			i++;
		}
		else if (n == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F))
		{
			out[o++] = '?';
			i++;
		}
		else
		{
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * Parses a duration: a number with an optional unit, "500ms", "30s",
 * "1.5 min", "2h", "1d"; a bare number is seconds.  Also "0".
 */
bool
parse_duration(const char *s, msec_t *ms)
{
	char	   *end;
	double		v;
	double		mult;

	while (isspace((unsigned char) *s))
		s++;
	if (!isdigit((unsigned char) *s) && *s != '.')
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || v < 0 || !isfinite(v))
		return false;
	while (isspace((unsigned char) *end))
		end++;
	if (*end == '\0' || strcmp(end, "s") == 0 || strcmp(end, "sec") == 0 ||
		strcmp(end, "second") == 0 || strcmp(end, "seconds") == 0)
		mult = 1000;
	else if (strcmp(end, "ms") == 0 || strcmp(end, "msec") == 0)
		mult = 1;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0 ||
			 strcmp(end, "minute") == 0 || strcmp(end, "minutes") == 0)
		mult = 60 * 1000;
	else if (strcmp(end, "h") == 0 || strcmp(end, "hour") == 0 || strcmp(end, "hours") == 0)
		mult = 3600 * 1000;
	else if (strcmp(end, "d") == 0 || strcmp(end, "day") == 0 || strcmp(end, "days") == 0)
		mult = 86400 * 1000;
	else
		return false;
	v *= mult;
	/* ten years is plenty, and keeps every sum of deadlines far from overflow */
	if (v > 10.0 * 365 * 86400 * 1000)
		return false;
	*ms = (msec_t) llround(v);
	return true;
}

/* A duration for people: "850ms", "12.3s", "4m05s", "2h03m", "3d04h". */
char *
format_duration(msec_t ms, char *out, size_t outlen)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(out, outlen, "%dms", (int) ms);
	else if (ms < 60 * 1000)
		snprintf(out, outlen, "%.1fs", ms / 1000.0);
	else if (ms < 3600 * 1000)
		snprintf(out, outlen, "%dm%02ds", (int) (ms / 60000), (int) (ms / 1000 % 60));
	else if (ms < 86400 * 1000)
		snprintf(out, outlen, "%dh%02dm", (int) (ms / 3600000), (int) (ms / 60000 % 60));
	else
		snprintf(out, outlen, "%dd%02dh", (int) (ms / 86400000), (int) (ms / 3600000 % 24));
	return out;
}

/* Trims leading and trailing white space in place. */
char *
trim(char *s)
{
	char	   *e;

	while (isspace((unsigned char) *s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char) e[-1]))
		*--e = '\0';
	return s;
}

/* ---------- a JSON syntax check (RFC 8259) ---------- */

#define JSON_MAX_DEPTH 512

static const char *json_value(const char *p, int depth);

static const char *
json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *
json_string(const char *p)
{
	p++;						/* the opening quote */
	for (;;)
	{
		unsigned char c = (unsigned char) *p;

		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;		/* also the end of the string */
		if (c == '\\')
		{
			p++;
			if (*p == 'u')
			{
				int			i;

				for (i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char) p[i]))
						return NULL;
				p += 5;
				continue;
			}
			if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0')
				return NULL;
		}
		p++;
	}
}

static const char *
json_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (isdigit((unsigned char) *p))
		while (isdigit((unsigned char) *p))
			p++;
	else
		return NULL;
	if (*p == '.')
	{
		p++;
		if (!isdigit((unsigned char) *p))
			return NULL;
		while (isdigit((unsigned char) *p))
			p++;
	}
	if (*p == 'e' || *p == 'E')
	{
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char) *p))
			return NULL;
		while (isdigit((unsigned char) *p))
			p++;
	}
	return p;
}

static const char *
json_value(const char *p, int depth)
{
	if (depth > JSON_MAX_DEPTH)
		return NULL;
	p = json_ws(p);
	switch (*p)
	{
		case '{':
			p = json_ws(p + 1);
			if (*p == '}')
				return p + 1;
			for (;;)
			{
				if (*p != '"' || (p = json_string(p)) == NULL)
					return NULL;
				p = json_ws(p);
				if (*p != ':')
					return NULL;
				if ((p = json_value(p + 1, depth + 1)) == NULL)
					return NULL;
				p = json_ws(p);
				if (*p == '}')
					return p + 1;
				if (*p != ',')
					return NULL;
				p = json_ws(p + 1);
			}
		case '[':
			p = json_ws(p + 1);
			if (*p == ']')
				return p + 1;
			for (;;)
			{
				if ((p = json_value(p, depth + 1)) == NULL)
					return NULL;
				p = json_ws(p);
				if (*p == ']')
					return p + 1;
				if (*p != ',')
					return NULL;
				p++;
			}
		case '"':
			return json_string(p);
		case 't':
			return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
		case 'f':
			return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
		case 'n':
			return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
		default:
			return json_number(p);
	}
}

/*
 * Whether s is one JSON value.  Only a pre-check, so that a child whose last
 * line is plain text does not cost an ERROR in the server log: the server's
 * jsonb input has the last word (it also refuses \u0000, for one).
 */
bool
json_valid(const char *s)
{
	const char *end = json_value(s, 0);

	return end != NULL && *json_ws(end) == '\0';
}
