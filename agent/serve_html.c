/*-------------------------------------------------------------------------
 * serve_html.c
 *		"coordctl serve": escaping, the page layout and the embedded assets.
 *
 * Every text that comes from the database or the request passes html_esc
 * (element content and quoted attribute values alike: & < > " ' become
 * entities), url_esc (a path segment or query value) or json_esc before it
 * is written; nothing is ever written raw but this file's own constants.
 * The style sheet and the script are compiled in and served from /static/,
 * so the pages load nothing from the network and the Content-Security-Policy
 * (serve.c) can forbid inline script altogether.
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"

void
bprintf(Buf *b, const char *fmt,...)
{
	va_list		ap;
	char		small[512];
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n < sizeof(small))
	{
		buf_append(b, small, n);
		return;
	}
	{
		char	   *big = xmalloc(n + 1);

		va_start(ap, fmt);
		vsnprintf(big, n + 1, fmt, ap);
		va_end(ap);
		buf_append(b, big, n);
		free(big);
	}
}

void
bputs(Buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

/* For element content and double- or single-quoted attribute values. */
void
html_esc(Buf *b, const char *s)
{
	const char *run = s;

	for (; *s; s++)
	{
		const char *ent;

		switch (*s)
		{
			case '&':
				ent = "&amp;";
				break;
			case '<':
				ent = "&lt;";
				break;
			case '>':
				ent = "&gt;";
				break;
			case '"':
				ent = "&quot;";
				break;
			case '\'':
				ent = "&#39;";
				break;
			default:
				continue;
		}
		buf_append(b, run, s - run);
		bputs(b, ent);
		run = s + 1;
	}
	buf_append(b, run, s - run);
}

/* A path segment or a query value: everything but unreserved characters. */
void
url_esc(Buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '-' || c == '_' || c == '.' || c == '~')
			buf_append(b, s, 1);
		else
		{
			char		pct[3] = {'%', hex[c >> 4], hex[c & 15]};

			buf_append(b, pct, 3);
		}
	}
}

/* A JSON string, quotes included; < and > escaped too (safe inside HTML). */
void
json_esc(Buf *b, const char *s)
{
	bputs(b, "\"");
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
			bprintf(b, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			bprintf(b, "\\u%04x", c);
		else
			buf_append(b, s, 1);
	}
	bputs(b, "\"");
}

static const struct
{
	const char *path;
	const char *label;
}			nav[] =

{
	{"/", "Queues"},
	{"/jobs", "Jobs"},
	{"/batches", "Batches"},
	{"/schedules", "Schedules"},
	{"/apps", "Apps"},
	{"/locks", "Locks"},
	{"/elections", "Elections"},
	{"/groups", "Groups"},
	{"/alerts", "Alerts"},
	{"/metrics", "Metrics"},
};

void
html_begin(ServeReq *r, const char *title)
{
	Buf		   *b = &r->out;

	r->content_type = "text/html; charset=utf-8";
	bputs(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
		  "<link rel=\"stylesheet\" href=\"/static/style.css\">"
		  "<link rel=\"icon\" href=\"data:,\">");
	bprintf(b, "<meta name=\"coord-refresh\" content=\"%d\">", r->refresh);
	if (r->actions)
	{
		bputs(b, "<meta name=\"csrf-token\" content=\"");
		html_esc(b, r->csrf);
		bputs(b, "\">");
	}
	bputs(b, "<script src=\"/static/app.js\" defer></script><title>");
	html_esc(b, title);
	bputs(b, " - pg_coord</title></head>\n<body><header><span class=\"brand\">pg_coord</span><nav>");
	for (size_t i = 0; i < sizeof(nav) / sizeof(nav[0]); i++)
	{
		bool		here = strcmp(nav[i].path, r->path) == 0 ||
		(strcmp(nav[i].path, "/jobs") == 0 && strncmp(r->path, "/jobs/", 6) == 0);

		bprintf(b, "<a href=\"%s\"%s>%s</a>", nav[i].path, here ? " class=\"here\"" : "",
				nav[i].label);
	}
	bputs(b, "</nav><span class=\"who\">");
	if (r->priv.user[0])
	{
		bputs(b, "role <b>");
		html_esc(b, r->priv.user);
		bputs(b, "</b>");
	}
	if (!r->actions)
		bputs(b, " <span class=\"badge ro\">read-only</span>");
	if (r->refresh > 0)
		bputs(b, " <label class=\"refresh\"><input type=\"checkbox\" id=\"autorefresh\" checked> auto refresh</label>");
	bputs(b, "</span></header>\n<main>");
	bputs(b, "<h1>");
	html_esc(b, title);
	bputs(b, "</h1>\n");
}

void
html_end(ServeReq *r)
{
	bputs(&r->out, "</main>\n<footer>coordctl serve " COORD_AGENT_VERSION
		  " &middot; <span id=\"stamp\"></span></footer></body></html>\n");
}

/*
 * Opens a POST form to action_fmt (one %s: arg, URL-escaped), with the CSRF
 * token.  The caller writes the fields and the button, then "</form>".
 */
void
html_form_begin(ServeReq *r, const char *action_fmt, const char *arg)
{
	Buf			act = {0};
	const char *pct = strstr(action_fmt, "%s");

	if (pct)
	{
		buf_append(&act, action_fmt, pct - action_fmt);
		url_esc(&act, arg);
		bputs(&act, pct + 2);
	}
	else
		bputs(&act, action_fmt);
	buf_append(&act, "", 1);
	bputs(&r->out, "<form class=\"act\" method=\"post\" action=\"");
	html_esc(&r->out, act.data);
	bputs(&r->out, "\"><input type=\"hidden\" name=\"csrf\" value=\"");
	html_esc(&r->out, r->csrf);
	bputs(&r->out, "\">");
	buf_free(&act);
}

/*
 * An error answer: an HTML page or {"error": ..., "sqlstate": ...}.  A
 * missing privilege says which GRANT would give it.
 */
void
html_error(ServeReq *r, int status, const char *what, const char *sqlstate,
		   const char *message)
{
	buf_reset(&r->out);
	r->status = status;
	if (r->json)
	{
		r->content_type = "application/json";
		bputs(&r->out, "{\"error\": ");
		json_esc(&r->out, message ? message : what);
		if (sqlstate && sqlstate[0])
		{
			bputs(&r->out, ", \"sqlstate\": ");
			json_esc(&r->out, sqlstate);
		}
		bputs(&r->out, "}\n");
		return;
	}
	html_begin(r, what);
	bputs(&r->out, "<p class=\"error\">");
	html_esc(&r->out, message ? message : what);
	if (sqlstate && sqlstate[0])
	{
		bputs(&r->out, " <span class=\"dim\">(SQLSTATE ");
		html_esc(&r->out, sqlstate);
		bputs(&r->out, ")</span>");
	}
	bputs(&r->out, "</p>");
	if (sqlstate && strcmp(sqlstate, "42501") == 0)
		bputs(&r->out, "<p class=\"hint\">The dashboard acts as the role it connects as. "
			  "Reading needs <code>GRANT coord_monitor TO <i>role</i></code>; "
			  "retry, cancel, pause, resume and rerun need <code>GRANT coord_admin TO <i>role</i></code>.</p>");
	html_end(r);
}

/* ---------- embedded assets ---------- */

static const char style_css[] =
"*{box-sizing:border-box}"
"body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;color:#1d2330;background:#f5f6f8}"
"header{display:flex;align-items:center;gap:18px;padding:8px 18px;background:#1f2a44;color:#e8ecf4;flex-wrap:wrap}"
"header .brand{font-weight:700;letter-spacing:.5px}"
"header nav a{color:#c3cbe0;text-decoration:none;margin-right:12px;padding:3px 0}"
"header nav a.here,header nav a:hover{color:#fff;border-bottom:2px solid #7fb2ff}"
"header .who{margin-left:auto;font-size:13px;color:#c3cbe0}"
"main{padding:14px 18px 30px;max-width:1500px}"
"h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:22px 0 8px}"
"table{border-collapse:collapse;background:#fff;box-shadow:0 1px 2px rgba(0,0,0,.08);margin-bottom:10px}"
"th,td{padding:5px 10px;border-bottom:1px solid #e6e8ee;text-align:left;vertical-align:top;white-space:nowrap}"
"th{background:#eef1f6;font-weight:600;font-size:12.5px;color:#3b4459;white-space:normal;vertical-align:bottom}"
".scroll{overflow-x:auto;max-width:100%}.scroll table{margin-bottom:10px}"
"td.num{text-align:right;font-variant-numeric:tabular-nums}"
"td.null{color:#a0a6b4}"
"td.wrap{white-space:normal;min-width:9em;max-width:30em;overflow-wrap:anywhere}"
"a{color:#1d5fd1}"
"pre{margin:0;white-space:pre-wrap;word-break:break-word;max-width:900px;font:12.5px/1.4 'DejaVu Sans Mono',monospace}"
".badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;background:#e3e6ee}"
".badge.ro{background:#6b3f00;color:#ffe2b8}"
".s-dead,.s-late{background:#fbd5d5;color:#8a1010}"
".s-running{background:#d6e6ff;color:#123f8a}"
".s-ready,.s-done{background:#d7f2dd;color:#155a26}"
".s-scheduled,.s-waiting{background:#f0ead2;color:#6a5200}"
".s-cancelled,.s-missing{background:#e6e6e6;color:#555}"
".s-paused{background:#ffe6bf;color:#7a4500}"
"form.act{display:inline-block;margin:0 4px 0 0}"
"form.act input[type=text]{width:13em}"
"button{font:inherit;font-size:12.5px;padding:2px 10px;border:1px solid #9aa6bf;border-radius:4px;background:#fff;cursor:pointer}"
"button:hover{background:#eef3ff}button.danger{border-color:#c66;color:#8a1010}"
"form.search{margin-bottom:12px;display:flex;gap:8px;flex-wrap:wrap;align-items:center}"
"form.search input,form.search select{font:inherit;padding:3px 6px}"
".error{color:#8a1010;background:#fde8e8;padding:8px 12px;border-radius:4px}"
".ok{color:#155a26;background:#e0f5e5;padding:8px 12px;border-radius:4px}"
".hint,.dim{color:#677086}"
".grid td{padding:2px;min-width:18px;text-align:center;font-size:11px}"
".grid th.h{font-weight:400;font-size:11px;padding:2px 3px}"
".grid td.c{border:1px solid #fff;width:20px}"
".grid td.c .badge{padding:0 5px}.grid td.c a{color:inherit;text-decoration:none}"
"svg.bars{vertical-align:middle;background:#f0f2f6}"
"svg.bars rect.own{fill:#3d7be0}svg.bars rect.target{fill:#b6c4de}"
"dl.kv{display:grid;grid-template-columns:max-content auto;gap:4px 16px;background:#fff;padding:10px 14px;box-shadow:0 1px 2px rgba(0,0,0,.08)}"
"dl.kv dt{font-weight:600;color:#3b4459}dl.kv dd{margin:0}"
"footer{padding:8px 18px;color:#8a91a3;font-size:12px}";

static const char app_js[] =
"'use strict';\n"
"(function () {\n"
"  var stamp = document.getElementById('stamp');\n"
"  function now() { if (stamp) stamp.textContent = 'loaded ' + new Date().toLocaleTimeString(); }\n"
"  now();\n"
"  var m = document.querySelector('meta[name=\"coord-refresh\"]');\n"
"  var secs = m ? parseInt(m.content, 10) : 0;\n"
"  var box = document.getElementById('autorefresh');\n"
"  if (!box || !(secs > 0)) return;\n"
"  try { box.checked = window.localStorage.getItem('coord-autorefresh') !== 'off'; } catch (e) {}\n"
"  box.addEventListener('change', function () {\n"
"    try { window.localStorage.setItem('coord-autorefresh', box.checked ? 'on' : 'off'); } catch (e) {}\n"
"  });\n"
"  setInterval(function () {\n"
"    if (!box.checked || document.hidden) return;\n"
"    var a = document.activeElement;\n"
"    if (a && a !== box && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(a.tagName)) return;\n"
"    fetch(window.location.href, {credentials: 'same-origin'}).then(function (r) {\n"
"      return r.ok ? r.text() : null;\n"
"    }).then(function (t) {\n"
"      if (!t) return;\n"
"      var fresh = new DOMParser().parseFromString(t, 'text/html').querySelector('main');\n"
"      var old = document.querySelector('main');\n"
"      if (fresh && old) { old.replaceWith(fresh); now(); }\n"
"    }).catch(function () {});\n"
"  }, secs * 1000);\n"
"})();\n";

const char *
serve_asset(const char *path, const char **type, size_t *len)
{
	if (strcmp(path, "/static/style.css") == 0)
	{
		*type = "text/css; charset=utf-8";
		*len = sizeof(style_css) - 1;
		return style_css;
	}
	if (strcmp(path, "/static/app.js") == 0)
	{
		*type = "text/javascript; charset=utf-8";
		*len = sizeof(app_js) - 1;
		return app_js;
	}
	return NULL;
}
