/* report_html.c — report.html: one self-contained page (no external
 * scripts, styles, fonts or images) for the person whose CI went red.
 *
 * Layout, top to bottom: a verdict banner with the counts and the run's
 * environment; a filter bar (outcome checkboxes and a text box, a few lines
 * of inline JavaScript — without JavaScript the page is complete, the bar
 * says so); an overview table of every (case, backend), failing first, worst
 * first; then one <details> block per case: the torch-style statistics, the
 * diagnosis, a heatmap of error/allowed over (query row x head) as inline
 * SVG with a strip showing where the window binds, the region table, the
 * worst elements, LSE, warnings and the command that reruns the case.
 *
 * Everything that comes from case files or the command line goes through
 * swa_html_escape (text and quoted attributes); nothing from them reaches the
 * script.
 *
 * Stable links: each (case, backend) block's anchor is derived from the
 * result itself (its case id and backend, sanitized, and a short hash of id,
 * backend, device and mutant), never from its position, so a link into
 * yesterday's report still lands on the same case after cases were added.
 * The overview sorts on a click on any column head (inline script; without
 * it the table keeps its written order: failing first, worst first) and
 * scrolls sideways in its own box rather than squeezing case ids to a few
 * characters per line on narrow windows.  The heatmap colours error/allowed
 * on a log scale up to 10^6, so 100x and 10^5x look different.
 *
 * Test: tests/test_report_html.c (rendered in headless Chromium).
 */
#include "harness/report.h"
#include "harness/invariance.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEATMAP_MAX_COLUMNS 128 /* displayed row bins; more rows are binned (max) */
#define HEATMAP_MAX_TOOLTIPS 1024 /* cells with a <title>; larger maps stay lean */
#define HEATMAP_MAX_CASES 100   /* failing cases with a heatmap (the worst ones); keeps big runs' pages small */
#define OPEN_FAILURES 3         /* failing cases whose details start open */

static void esc(FILE *f, const char *s)
{
    char *e = swa_html_escape(s);
    if (e) {
        fputs(e, f);
        free(e);
    }
}

static void fmt_num(char *buf, size_t n, double v)
{
    if (isnan(v)) snprintf(buf, n, "NaN");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "∞" : "−∞");
    else snprintf(buf, n, "%.4g", v);
}

static void put_num(FILE *f, double v)
{
    char b[48];
    fmt_num(b, sizeof b, v);
    fputs(b, f);
}

static void put_index(FILE *f, const swa_index *ix)
{
    char b[96];
    if (ix->request < 0) {
        fputs("—", f);
        return;
    }
    swa_index_format(ix, b, sizeof b);
    fputs(b, f);
}

/* ---- colors --------------------------------------------------------------------
 * error/allowed -> color.  Within tolerance stays quiet (grey to pale
 * yellow); past it, log10(ratio) over [0, 6] runs through orange, red and
 * crimson to near-black brown, one stop per decade (a 100x bug and a 10^5x
 * bug are different colours; the old scale saturated at 100x); NaN, Inf and
 * unwritten elements are purple, a hue no ratio maps to. */
#define LOG_RATIO_MAX 6.0
static void lerp_color(char *buf, size_t n, const int a[3], const int b[3], double t)
{
    if (t < 0) t = 0;
    if (t > 1) t = 1;
    snprintf(buf, n, "#%02x%02x%02x", (int)lround(a[0] + (b[0] - a[0]) * t), (int)lround(a[1] + (b[1] - a[1]) * t),
             (int)lround(a[2] + (b[2] - a[2]) * t));
}

static void ratio_color(double ratio, char *buf, size_t n)
{
    static const int quiet[3] = {0xee, 0xf1, 0xf4}, edge[3] = {0xf7, 0xe3, 0x8c};
    /* one stop per decade past the tolerance: 1, 10, ..., 10^6 */
    static const int decades[7][3] = {{0xfd, 0xae, 0x61}, {0xf4, 0x6d, 0x43}, {0xd7, 0x30, 0x27}, {0xa5, 0x00, 0x26},
                                      {0x74, 0x00, 0x1b}, {0x47, 0x0a, 0x0a}, {0x1f, 0x0c, 0x06}};
    if (!isfinite(ratio) || isnan(ratio)) {
        snprintf(buf, n, "#7b2fbe");
    } else if (ratio <= 1) {
        lerp_color(buf, n, quiet, edge, ratio > 0 ? ratio * ratio : 0);
    } else {
        double t = log10(ratio);
        if (t >= LOG_RATIO_MAX)
            t = LOG_RATIO_MAX;
        int d = (int)t < (int)LOG_RATIO_MAX ? (int)t : (int)LOG_RATIO_MAX - 1;
        lerp_color(buf, n, decades[d], decades[d + 1], t - d);
    }
}

/* ---- anchors -------------------------------------------------------------------
 * "case-<id>--<backend>-<hash>": the id and backend with everything but
 * [A-Za-z0-9_-] turned into '_' (readable, safe in a URL fragment), cut to
 * a length, then 8 hex digits of FNV-1a over id, backend, device and mutant
 * so results that sanitize alike stay apart.  Two results with all four
 * equal (never in one run) get "~2", "~3" in run order. */
#define ANCHOR_MAX 160

static void sanitize_into(char *out, size_t n, const char *s, size_t max_chars)
{
    size_t k = 0;
    for (; *s && k + 1 < n && k < max_chars; s++) {
        char ch = *s;
        out[k++] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                           ch == '_'
                       ? ch
                       : '_';
    }
    out[k] = '\0';
}

static uint64_t fnv1a_field(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* field separator */
}

static void result_anchor(const swa_result *r, char *out, size_t n)
{
    char id[96], backend[48];
    sanitize_into(id, sizeof id, r->id, 80);
    sanitize_into(backend, sizeof backend, r->backend, 40);
    uint64_t h = 1469598103934665603ull;
    h = fnv1a_field(h, r->id);
    h = fnv1a_field(h, r->backend);
    h = fnv1a_field(h, r->device);
    h = fnv1a_field(h, r->mutant);
    snprintf(out, n, "case-%s--%s-%08x", id, backend, (unsigned)(h ^ (h >> 32)));
}

/* Anchors of every result, by item index (caller frees). */
static char (*make_anchors(const swa_run_results *rr))[ANCHOR_MAX]
{
    char (*a)[ANCHOR_MAX] = calloc((size_t)rr->count + 1, sizeof *a);
    if (!a)
        return NULL;
    for (int i = 0; i < rr->count; i++) {
        result_anchor(&rr->items[i], a[i], sizeof a[i]);
        int same = 1;
        for (int j = 0; j < i; j++) /* only exact repeats collide; rare and small */
            if (!strncmp(a[j], a[i], strlen(a[i])) && (a[j][strlen(a[i])] == '\0' || a[j][strlen(a[i])] == '~'))
                same++;
        if (same > 1) {
            size_t len = strlen(a[i]);
            snprintf(a[i] + len, sizeof a[i] - len, "~%d", same);
        }
    }
    return a;
}

/* ---- page head ---------------------------------------------------------------- */

static const char CSS[] =
    ":root{--fail:#b3261e;--pass:#1e7b34;--err:#b45309;--skip:#5f6b7a;--ink:#1b1f24;--muted:#5b6472;"
    "--line:#d8dee4;--bg:#f6f8fa;--card:#fff;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--ink);background:var(--bg)}"
    "main{max-width:1280px;margin:0 auto;padding:0 20px 60px}"
    "header.banner{padding:18px 20px 14px;color:#fff}"
    "header.banner.failed{background:var(--fail)}header.banner.passed{background:var(--pass)}"
    "header.banner.error{background:var(--err)}"
    "header.banner .incomplete{margin-top:6px;font-weight:600}"
    "header.banner .inner{max-width:1280px;margin:0 auto}"
    "header.banner h1{margin:0 0 4px;font-size:22px;font-weight:650}"
    "header.banner .sub{opacity:.9}"
    ".counts{display:flex;gap:10px;margin:14px 0 4px;flex-wrap:wrap}"
    ".count{background:rgba(255,255,255,.16);border-radius:8px;padding:6px 14px;min-width:92px}"
    ".count b{display:block;font-size:22px;line-height:1.1}"
    ".count span{font-size:12px;text-transform:uppercase;letter-spacing:.04em;opacity:.92}"
    "section{margin-top:22px}"
    "h2{font-size:16px;margin:0 0 8px}"
    "table{border-collapse:collapse;background:var(--card)}"
    "th,td{padding:4px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}"
    "th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em;background:#f0f3f6}"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "table.env{width:100%;border:1px solid var(--line)}table.env th{width:160px;text-transform:none;font-size:13px}"
    "table.env td{font-family:var(--mono);font-size:12.5px;white-space:pre-wrap;word-break:break-all}"
    /* narrow windows scroll the table sideways in its own box; an id keeps
     * at least 40 characters per line instead of a few */
    ".table-scroll{overflow-x:auto;max-width:100%;border:1px solid var(--line)}"
    "table.overview{width:100%}"
    "table.overview th,table.overview td{white-space:nowrap}"
    "table.overview td.id{font-family:var(--mono);font-size:12.5px;white-space:normal;min-width:40ch;"
    "overflow-wrap:anywhere}"
    "table.overview th button.sort{background:none;border:0;padding:0;margin:0;font:inherit;color:inherit;"
    "text-transform:inherit;letter-spacing:inherit;cursor:pointer}"
    "table.overview th[aria-sort=ascending] button.sort::after{content:' \\25B2'}"
    "table.overview th[aria-sort=descending] button.sort::after{content:' \\25BC'}"
    "table.overview td.id .mutant{display:block;color:var(--muted);font-style:italic;font-family:inherit}"
    "table.overview td.backend{white-space:nowrap}"
    "table.overview tr.failed td:first-child{border-left:4px solid var(--fail)}"
    "table.overview tr.error td:first-child{border-left:4px solid var(--err)}"
    "table.overview tr.passed td:first-child{border-left:4px solid var(--pass)}"
    "table.overview tr.skipped td:first-child{border-left:4px solid var(--skip)}"
    ".badge{display:inline-block;border-radius:4px;padding:0 7px;font-size:11.5px;font-weight:700;color:#fff;"
    "text-transform:uppercase;letter-spacing:.04em}"
    ".badge.failed{background:var(--fail)}.badge.passed{background:var(--pass)}.badge.error{background:var(--err)}"
    ".badge.skipped{background:var(--skip)}.badge.xfailed{background:var(--skip)}.badge.xpassed{background:var(--fail)}"
    "table.overview tr.xpassed td:first-child{border-left:4px solid var(--fail)}"
    "details.case.xpassed{border-left:5px solid var(--fail)}details.case.xfailed{border-left:5px solid var(--skip)}"
    ".filters{display:flex;gap:16px;align-items:center;flex-wrap:wrap;background:var(--card);border:1px solid var(--line);"
    "border-radius:8px;padding:8px 12px;margin-top:16px}"
    ".filters input[type=search]{flex:1;min-width:240px;padding:5px 8px;border:1px solid var(--line);border-radius:6px;font:inherit}"
    ".filters .hint{color:var(--muted);font-size:12px}"
    "details.case{background:var(--card);border:1px solid var(--line);border-radius:8px;margin:10px 0}"
    "details.case.failed{border-left:5px solid var(--fail)}details.case.error{border-left:5px solid var(--err)}"
    "details.case.passed{border-left:5px solid var(--pass)}details.case.skipped{border-left:5px solid var(--skip)}"
    "details.case>summary{cursor:pointer;padding:9px 12px;list-style-position:outside}"
    "details.case>summary .id{font-family:var(--mono);font-weight:600;overflow-wrap:anywhere}"
    "details.case>summary .meta{color:var(--muted);margin-left:6px}"
    "details.case>summary .first{display:block;font-family:var(--mono);font-size:12.5px;margin-top:3px;color:var(--ink)}"
    ".body{padding:4px 16px 16px;border-top:1px solid var(--line)}"
    ".body h3{font-size:13px;margin:16px 0 6px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}"
    "pre{font-family:var(--mono);font-size:12.5px;background:#f3f5f7;border:1px solid var(--line);border-radius:6px;"
    "padding:8px 10px;white-space:pre-wrap;word-break:break-word;margin:6px 0}"
    "pre.stats{background:#fff7f6;border-color:#f1c9c5}"
    ".diagnosis{background:#fff8e1;border:1px solid #f0d68a;border-radius:6px;padding:8px 12px;margin:10px 0}"
    ".diagnosis b{color:#7a4b00}"
    "table.diag{border-collapse:collapse;margin:6px 0}table.diag td,table.diag th{padding:4px 10px;"
    "border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}table.diag td.diag-case{word-break:break-all}"
    ".kernel{font-size:13px;margin:6px 0;color:#444}"
    ".warn{background:#fff4e5;border:1px solid #f5c98b;border-radius:6px;padding:6px 10px;margin:8px 0;font-size:13px}"
    ".grid2{display:flex;gap:24px;flex-wrap:wrap;align-items:flex-start}"
    "table.small td,table.small th{padding:3px 8px;font-size:12.5px}"
    "table.small td{font-family:var(--mono)}"
    "tbody th{text-transform:none;font-size:12.5px;color:var(--ink);font-weight:600}"
    ".bar{display:inline-block;height:9px;background:var(--fail);border-radius:2px;vertical-align:middle}"
    ".bar.zero{background:var(--line);width:2px}"
    "svg.heatmap{background:#fff;max-width:100%;height:auto}"
    "svg text{font:11px system-ui,sans-serif;fill:#3a4350}"
    ".caption{color:var(--muted);font-size:12.5px;margin:2px 0 6px}"
    ".repro{display:flex;gap:8px;align-items:flex-start}.repro pre{flex:1;margin:0}"
    "button.copy{font:inherit;font-size:12px;padding:4px 10px;border:1px solid var(--line);border-radius:6px;background:#fff;cursor:pointer}"
    ".empty{color:var(--muted);font-style:italic}"
    "footer{color:var(--muted);font-size:12px;margin-top:30px}"
    "@media print{.filters{display:none}details.case{break-inside:avoid}}";

/* Filtering: hides rows and cases whose outcome is unchecked or whose text
 * does not contain the query.  Reads only data attributes and textContent. */
static const char SCRIPT[] =
    "(function(){\n"
    "  var bar = document.getElementById('filters');\n"
    "  bar.hidden = false;\n"
    "  document.getElementById('nojs').hidden = true;\n"
    "  var boxes = bar.querySelectorAll('input[type=checkbox]');\n"
    "  var text = document.getElementById('filter-text');\n"
    "  var items = document.querySelectorAll('[data-outcome]');\n"
    "  function apply() {\n"
    "    var show = {};\n"
    "    boxes.forEach(function (b) { show[b.value] = b.checked; });\n"
    "    var q = text.value.toLowerCase();\n"
    "    var shown = 0;\n"
    "    items.forEach(function (el) {\n"
    "      var ok = show[el.dataset.outcome] && (!q || el.dataset.text.toLowerCase().indexOf(q) >= 0);\n"
    "      el.hidden = !ok;\n"
    "      if (ok && el.tagName === 'TR') shown++;\n"
    "    });\n"
    "    document.getElementById('shown').textContent = shown + ' shown';\n"
    "  }\n"
    "  function save() {\n"
    "    var on = [];\n"
    "    boxes.forEach(function (b) { if (b.checked) on.push(b.value); });\n"
    "    var h = 'show=' + on.join(',') + (text.value ? '&q=' + encodeURIComponent(text.value) : '');\n"
    "    history.replaceState(null, '', '#' + h);\n"
    "  }\n"
    "  // a link like report.html#show=failed&q=decode opens filtered (shareable)\n"
    "  var hash = new URLSearchParams(location.hash.slice(1));\n"
    "  if (hash.has('show')) {\n"
    "    var want = hash.get('show').split(',');\n"
    "    boxes.forEach(function (b) { b.checked = want.indexOf(b.value) >= 0; });\n"
    "  }\n"
    "  if (hash.has('q')) text.value = hash.get('q');\n"
    "  boxes.forEach(function (b) { b.addEventListener('change', function () { apply(); save(); }); });\n"
    "  text.addEventListener('input', function () { apply(); save(); });\n"
    "  // click-to-sort: a column head becomes a button; rows carry the value to\n"
    "  // sort by in data-v (numbers) or their text; ties keep the written order\n"
    "  var table = document.querySelector('table.overview');\n"
    "  if (table) {\n"
    "    var body = table.tBodies[0];\n"
    "    var heads = table.tHead.rows[0].cells;\n"
    "    Array.prototype.forEach.call(body.rows, function (r, i) { r.dataset.order = i; });\n"
    "    Array.prototype.forEach.call(heads, function (th, col) {\n"
    "      var b = document.createElement('button');\n"
    "      b.type = 'button';\n"
    "      b.className = 'sort';\n"
    "      b.textContent = th.textContent;\n"
    "      th.textContent = '';\n"
    "      th.appendChild(b);\n"
    "      b.addEventListener('click', function () {\n"
    "        var up = th.getAttribute('aria-sort') !== 'ascending';\n"
    "        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });\n"
    "        th.setAttribute('aria-sort', up ? 'ascending' : 'descending');\n"
    "        var numeric = th.dataset.type === 'number';\n"
    "        function key(r) {\n"
    "          var c = r.cells[col];\n"
    "          return numeric ? parseFloat(c.dataset.v) : (c.dataset.v || c.textContent).toLowerCase();\n"
    "        }\n"
    "        var rows = Array.prototype.slice.call(body.rows);\n"
    "        rows.sort(function (x, y) {\n"
    "          var a = key(x), z = key(y);\n"
    "          var d = a < z ? -1 : a > z ? 1 : 0;\n"
    "          return (up ? d : -d) || x.dataset.order - y.dataset.order;\n"
    "        });\n"
    "        rows.forEach(function (r) { body.appendChild(r); });\n"
    "      });\n"
    "    });\n"
    "  }\n"
    "  document.querySelectorAll('button.copy').forEach(function (b) {\n"
    "    b.hidden = false;\n"
    "    b.addEventListener('click', function () {\n"
    "      var t = b.parentNode.querySelector('code').textContent;\n"
    "      if (navigator.clipboard) navigator.clipboard.writeText(t);\n"
    "      b.textContent = 'copied';\n"
    "    });\n"
    "  });\n"
    "  apply();\n"
    "})();\n";

/* what the text filter matches: id, backend, device, dtype, mutant, message */
static void put_filter_text(FILE *f, const swa_result *r)
{
    char text[SWA_ID_MAX + SWA_MSG_MAX + 200];
    snprintf(text, sizeof text, "%s %s %s %s %s %s %s", r->id, r->backend, r->device, swa_dtype_name(r->dtype),
             r->mutant, swa_outcome_name(r->outcome), r->message);
    esc(f, text);
}

static void put_env_row(FILE *f, const char *name, const char *value)
{
    fprintf(f, "<tr><th>%s</th><td>", name);
    if (value && *value)
        esc(f, value);
    else
        fputs("<span class=\"empty\">unknown</span>", f);
    fputs("</td></tr>\n", f);
}

static void put_header(FILE *f, const swa_run_results *rr)
{
    int n[SWA_OUTCOME_COUNT];
    swa_run_results_counts(rr, n);
    int passed = n[SWA_OUTCOME_PASSED], failed = n[SWA_OUTCOME_FAILED], error = n[SWA_OUTCOME_ERROR],
        skipped = n[SWA_OUTCOME_SKIPPED], xfailed = n[SWA_OUTCOME_XFAILED], xpassed = n[SWA_OUTCOME_XPASSED];
    /* green only for a complete run that exited 0: an incomplete run, or one
     * whose exit code says something its results do not (a report that
     * could not be written, a shard merged with its failure), is not */
    bool not_green = rr->incomplete || rr->exitcode != SWA_EXIT_OK;
    const char *verdict = failed || xpassed ? "failed" : error || not_green ? "error" : "passed";
    char created[32];
    swa_report_iso8601(rr->started, created, sizeof created);
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<title>swadiff: %d failed, %d errors, %d passed</title>\n<style>%s</style>\n</head>\n<body>\n",
            failed, error, passed, CSS);
    fprintf(f, "<header class=\"banner %s\" id=\"summary\"><div class=\"inner\">\n", verdict);
    if (failed)
        fprintf(f, "<h1>swadiff: %d of %d failed</h1>\n", failed, rr->count);
    else if (xpassed)
        fprintf(f, "<h1>swadiff: %d known failure%s passed (xpassed): remove the mark%s</h1>\n", xpassed,
                xpassed == 1 ? "" : "s", xpassed == 1 ? "" : "s");
    else if (error)
        fprintf(f, "<h1>swadiff: %d runtime error%s, no mismatch</h1>\n", error, error == 1 ? "" : "s");
    else if (rr->incomplete)
        fprintf(f, "<h1>swadiff: incomplete run, %d result%s</h1>\n", rr->count, rr->count == 1 ? "" : "s");
    else if (passed + xfailed == 0)
        fprintf(f, "<h1>swadiff: nothing compared (%d result%s, all skipped): no kernel was checked</h1>\n",
                rr->count, rr->count == 1 ? "" : "s");
    else if (not_green)
        fprintf(f, "<h1>swadiff: exit code %d, no failing result</h1>\n", rr->exitcode);
    else if (xfailed)
        fprintf(f, "<h1>swadiff: all %d passed, %d known failure%s</h1>\n", passed, xfailed, xfailed == 1 ? "" : "s");
    else
        fprintf(f, "<h1>swadiff: all %d passed</h1>\n", passed);
    fprintf(f, "<div class=\"sub\">%s · %.1f s · exit code %d", created, rr->duration, rr->exitcode);
    /* a selftest-style run with one mutant on: say so before anyone panics */
    bool one_mutant = rr->count > 0 && rr->items[0].mutant[0];
    for (int i = 1; one_mutant && i < rr->count; i++)
        one_mutant = !strcmp(rr->items[i].mutant, rr->items[0].mutant);
    if (one_mutant) {
        fputs(" · mutant <b>", f);
        esc(f, rr->items[0].mutant);
        fputs("</b> switched on (a known bug, injected on purpose: failures are the point)", f);
    }
    fputs("</div>\n", f);
    if (rr->incomplete) {
        if (rr->expected > 0)
            fprintf(f, "<div class=\"incomplete\" id=\"incomplete\">Incomplete: %d of %d results. ", rr->count,
                    rr->expected);
        else
            fputs("<div class=\"incomplete\" id=\"incomplete\">Incomplete. ", f);
        esc(f, rr->incomplete_reason);
        fputs("</div>\n", f);
    }
    if (rr->controls.state != SWA_CONTROLS_NONE) { /* the marshalling controls (harness/controls.h) */
        fprintf(f, "<div class=\"incomplete\" id=\"controls\" data-state=\"%s\">",
                rr->controls.state == SWA_CONTROLS_SOUND ? "sound" : rr->controls.state == SWA_CONTROLS_BROKEN ?
                "broken" : "not_run");
        esc(f, rr->controls.summary);
        fputs("</div>\n", f);
    }
    fprintf(f,
            "<div class=\"counts\">"
            "<div class=\"count\" id=\"count-total\"><b>%d</b><span>total</span></div>"
            "<div class=\"count\" id=\"count-failed\"><b>%d</b><span>failed</span></div>"
            "<div class=\"count\" id=\"count-error\"><b>%d</b><span>errors</span></div>"
            "<div class=\"count\" id=\"count-passed\"><b>%d</b><span>passed</span></div>"
            "<div class=\"count\" id=\"count-skipped\"><b>%d</b><span>skipped</span></div>"
            "<div class=\"count\" id=\"count-xfailed\"><b>%d</b><span>xfailed</span></div>"
            "<div class=\"count\" id=\"count-xpassed\"><b>%d</b><span>xpassed</span></div></div>\n",
            rr->count, failed, error, passed, skipped, xfailed, xpassed);
    fputs("</div></header>\n<main>\n", f);
    fputs("<section id=\"environment\"><details><summary><b>Environment</b> — ", f);
    esc(f, rr->env.host[0] ? rr->env.host : "unknown host");
    fputs(", swadiff ", f);
    esc(f, rr->env.harness_version);
    fputs(" (", f);
    esc(f, rr->env.git_revision);
    fputs(")</summary>\n<table class=\"env\">\n", f);
    put_env_row(f, "Command line", rr->env.command_line);
    put_env_row(f, "Devices", rr->env.devices);
    put_env_row(f, "Toolkit", rr->env.toolkit);
    put_env_row(f, "Host", rr->env.host);
    put_env_row(f, "swadiff", rr->env.harness_version);
    put_env_row(f, "Git revision", rr->env.git_revision);
    put_env_row(f, "Created", created);
    fputs("</table></details></section>\n", f);
    fputs("<div class=\"filters\" id=\"filters\" hidden>\n<b>Show</b>\n", f);
    static const char *const outs[] = {"failed", "xpassed", "error", "skipped", "xfailed", "passed"};
    const int counts[] = {failed, xpassed, error, skipped, xfailed, passed};
    for (int i = 0; i < 6; i++)
        fprintf(f, "<label><input type=\"checkbox\" value=\"%s\" checked> %s (%d)</label>\n", outs[i], outs[i], counts[i]);
    fputs("<input type=\"search\" id=\"filter-text\" placeholder=\"filter by case id, backend, dtype, mutant, message\">\n"
          "<span class=\"hint\" id=\"shown\"></span>\n</div>\n"
          "<p class=\"hint\" id=\"nojs\">All cases are listed below, failing first (filtering needs JavaScript).</p>\n",
          f);
}

/* ---- overview ------------------------------------------------------------------ */

static void put_ratio_cell(FILE *f, const swa_result *r)
{
    double s = swa_result_severity(r);
    if (!r->has_compare) {
        fputs("<td class=\"num\" data-v=\"-1\">—</td>", f);
        return;
    }
    char color[16];
    ratio_color(s, color, sizeof color);
    if (isinf(s) || isnan(s))
        fputs("<td class=\"num\" data-v=\"Infinity\">", f);
    else
        fprintf(f, "<td class=\"num\" data-v=\"%.17g\">", s);
    fprintf(f, "<span style=\"display:inline-block;width:10px;height:10px;border-radius:2px;"
               "background:%s;margin-right:5px\"></span>", color);
    if (isinf(s))
        fputs("NaN/∞", f);
    else
        fprintf(f, "%.3g×", s);
    fputs("</td>", f);
}

/* The sort rank of an outcome: the written order's (failing first). */
static int outcome_rank(swa_outcome o)
{
    return o == SWA_OUTCOME_FAILED ? 0 : o == SWA_OUTCOME_XPASSED ? 1 : o == SWA_OUTCOME_ERROR ? 2
         : o == SWA_OUTCOME_SKIPPED ? 3 : o == SWA_OUTCOME_XFAILED ? 4 : 5;
}

/* Failures grouped by diagnosis family: one row per kind of bug seen, with
 * its count, backends and a link to its worst failure. */
static void put_diagnosis_groups(FILE *f, const swa_run_results *rr, char (*anchors)[ANCHOR_MAX])
{
    swa_diag_group groups[SWA_DIAG_GROUPS_MAX];
    int ungrouped = 0;
    int ng = swa_diagnosis_groups(rr, groups, SWA_DIAG_GROUPS_MAX, &ungrouped);
    if (ng == 0)
        return;
    fputs("<section id=\"by-diagnosis\"><h2>Failures by diagnosis</h2>\n<div class=\"table-scroll\">"
          "<table class=\"diag\">\n<thead><tr><th class=\"num\">Failures</th>"
          "<th>Diagnosis</th><th>Backends</th><th>Worst case</th><th>What it means</th></tr></thead>\n<tbody>\n",
          f);
    for (int k = 0; k < ng; k++) {
        const swa_result *w = &rr->items[groups[k].first];
        fprintf(f, "<tr><td class=\"num\">%d</td><td><code>", groups[k].count);
        esc(f, groups[k].key);
        fputs("</code></td><td class=\"backend\">", f);
        esc(f, groups[k].backends);
        fprintf(f, "</td><td class=\"diag-case\"><a href=\"#%s\">", anchors[groups[k].first]);
        esc(f, w->id);
        /* the worst case's verdict, after its "[key] ": the family in words */
        const char *v = w->diagnosis[0] == '[' && strchr(w->diagnosis, ']') ? strchr(w->diagnosis, ']') + 1 : w->diagnosis;
        while (*v == ' ')
            v++;
        char cut[320];
        snprintf(cut, sizeof cut, "%.*s%s", 300, v, strlen(v) > 300 ? "..." : "");
        fputs("</a></td><td class=\"meaning\">", f);
        esc(f, cut);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
    fputs("<p class=\"hint\" id=\"diagnosis-legend\">A diagnosis names the mask variant whose reference matches "
          "the output: <code>window_l_minus_1</code> / <code>window_l_plus_1</code> (the window one key short / "
          "long), <code>no_window</code>, <code>tile_granular_start</code> (a per-tile KV start without the "
          "per-element mask), <code>request_anchored</code>, <code>top_left</code> (top-left alignment), and the "
          "others each case lists. <code>ambiguous:A,B</code>: several variants fit equally on this shape (shrink "
          "or a longer case separates them); <code>closest:A</code>: A fits far better than the spec but not "
          "exactly; <code>weak_fit</code>: the best variant fits only a little better than the spec; "
          "<code>not_a_mask_variant</code>: no mask variant fits better than the spec (look at the data path: "
          "page table, head mapping, split merge, or the arithmetic); <code>lse_natural_log</code> / "
          "<code>lse_or_guards</code>: the output is right, the LSE (its base) or the guard bytes are not; "
          "<code>no_hypothesis</code>: no variant applies to this kind of case.</p>\n", f);
    if (ungrouped)
        fprintf(f, "<p class=\"hint\">%d more failures of further kinds are not grouped.</p>\n", ungrouped);
    fputs("</section>\n", f);
}

/* Columns with data-type="number" sort by their cells' data-v; the others
 * by text (the script in SCRIPT). */
static void put_overview(FILE *f, const swa_run_results *rr, const int *order, char (*anchors)[ANCHOR_MAX])
{
    fputs("<section id=\"overview\"><h2>Cases</h2>\n<div class=\"table-scroll\"><table class=\"overview\">\n"
          "<thead><tr><th data-type=\"number\">Outcome</th><th>Backend</th><th>Dtype</th><th>Case</th>"
          "<th class=\"num\" data-type=\"number\">Mismatched</th>"
          "<th class=\"num\" data-type=\"number\">Worst error / allowed</th>"
          "<th class=\"num\" data-type=\"number\">Time</th></tr></thead>\n<tbody>\n",
          f);
    for (int k = 0; k < rr->count; k++) {
        const swa_result *r = &rr->items[order[k]];
        const char *o = swa_outcome_name(r->outcome);
        fprintf(f, "<tr class=\"%s\" data-outcome=\"%s\" data-text=\"", o, o);
        put_filter_text(f, r);
        fprintf(f, "\"><td data-v=\"%d\"><span class=\"badge %s\">%s</span></td><td class=\"backend\">",
                outcome_rank(r->outcome), o, o);
        esc(f, r->backend);
        fputs(" <span class=\"empty\">", f);
        esc(f, r->device);
        fprintf(f, "</span></td><td>%s</td><td class=\"id\"><a href=\"#%s\">", swa_dtype_name(r->dtype),
                anchors[order[k]]);
        esc(f, r->id);
        fputs("</a>", f);
        if (r->mutant[0]) {
            fputs("<span class=\"mutant\">mutant ", f);
            esc(f, r->mutant);
            fputs("</span>", f);
        }
        fputs("</td>", f);
        if (r->has_compare && isfinite(r->cmp.ratio))
            fprintf(f, "<td class=\"num\" data-v=\"%.17g\">%lld / %lld (%.1f%%)</td>", r->cmp.ratio, r->cmp.mismatched,
                    r->cmp.total, 100.0 * r->cmp.ratio);
        else
            fputs("<td class=\"num\" data-v=\"-1\">—</td>", f);
        put_ratio_cell(f, r);
        fprintf(f, "<td class=\"num\" data-v=\"%.17g\">%.3f s</td></tr>\n", isfinite(r->duration) ? r->duration : -1.0,
                r->duration);
    }
    fputs("</tbody></table></div></section>\n", f);
}

/* ---- heatmap ------------------------------------------------------------------- */

static void put_legend(FILE *f, int x, int y)
{
    /* within tolerance, then one box per decade of the log scale */
    static const double stops[] = {0, 0.5, 1, 10, 100, 1e3, 1e4, 1e5, 1e6};
    static const char *labels[] = {"0", "0.5", "1", "10", "100", "1e3", "1e4", "1e5", "≥1e6"};
    enum { NSTOPS = sizeof stops / sizeof stops[0] };
    fprintf(f, "<text x=\"%d\" y=\"%d\">error / allowed:</text>\n", x, y + 11);
    int lx = x + 104;
    for (int i = 0; i < NSTOPS; i++) {
        char color[16];
        ratio_color(stops[i], color, sizeof color);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"34\" height=\"12\" fill=\"%s\" stroke=\"#c9d1d9\" stroke-width=\"0.5\"/>"
                   "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                lx + 38 * i, y + 1, color, lx + 38 * i + 17, y + 26, labels[i]);
    }
    int nx = lx + 38 * NSTOPS + 14;
    char color[16];
    ratio_color(INFINITY, color, sizeof color);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"34\" height=\"12\" fill=\"%s\"/>"
               "<text x=\"%d\" y=\"%d\">NaN / Inf / unwritten</text>\n",
            nx, y + 1, color, nx + 40, y + 11);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#1b1f24\" stroke-width=\"1.5\"/>"
               "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">tolerance</text>\n",
            lx + 38 * 2 + 17, y - 2, lx + 38 * 2 + 17, y + 15, lx + 38 * 2 + 17, y - 5);
}

static void put_heatmap(FILE *f, const swa_result *r)
{
    const swa_compare_result *c = &r->cmp;
    if (!c->row_head_ratio || c->rows <= 0 || c->heads <= 0)
        return;
    const int src_bin = c->row_bin > 0 ? c->row_bin : 1;
    const int bin = (c->rows + HEATMAP_MAX_COLUMNS - 1) / HEATMAP_MAX_COLUMNS;
    const int cols = (c->rows + bin - 1) / bin;
    const int heads = c->heads;
    const long long rows_per_col = (long long)bin * src_bin;
    /* no more rows than the matrix covers (the reader refuses a total_qo
     * that disagrees; the axis below draws from it) */
    long long source_rows = r->total_qo > 0 ? r->total_qo : (long long)c->rows * src_bin;
    if (source_rows > (long long)cols * rows_per_col)
        source_rows = (long long)cols * rows_per_col;

    int cw = 880 / cols;
    cw = cw > 56 ? 56 : cw < 4 ? 4 : cw;
    int ch = 260 / heads;
    ch = ch > 22 ? 22 : ch < 5 ? 5 : ch;
    const int left = 62, top = 34, strip = 8;
    const int plot_w = cw * cols, plot_h = ch * heads;
    const int width = left + (plot_w > 660 ? plot_w : 660) + 20; /* the legend is ~650 px wide */
    const int height = top + strip + 4 + plot_h + 44 + 40;

    fprintf(f, "<p class=\"caption\">Worst error / allowed per query row (x) and qo head (y)");
    if (rows_per_col > 1)
        fprintf(f, ", %lld rows per column (maximum shown)", rows_per_col);
    fprintf(f, ". The blue strip marks rows where the window binds (some key is left of p − L); "
               "thin lines separate requests.</p>\n");
    fprintf(f, "<svg class=\"heatmap\" role=\"img\" aria-label=\"mismatch heatmap\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", width, height, width, height);
    /* window strip */
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">window</text>\n", left - 6, top + strip);
    for (int x = 0; x < cols; x++) {
        int e = 0;
        for (int k = x * bin; k < (x + 1) * bin && k < c->rows; k++)
            if (c->row_past_edge && c->row_past_edge[k] > e)
                e = c->row_past_edge[k];
        if (e > 0)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#5b8def\"><title>window binds: p − L = %d"
                       "</title></rect>\n", left + x * cw, top, cw, strip, e);
    }
    const int y0 = top + strip + 4;
    const bool tooltips = cols * heads <= HEATMAP_MAX_TOOLTIPS;
    /* cells */
    for (int h = 0; h < heads; h++) {
        for (int x = 0; x < cols; x++) {
            float v = 0;
            for (int k = x * bin; k < (x + 1) * bin && k < c->rows; k++) {
                float q = c->row_head_ratio[(size_t)k * heads + h];
                if (q > v || isnan(q))
                    v = isnan(q) ? INFINITY : q;
            }
            char color[16];
            ratio_color(v, color, sizeof color);
            long long first = x * rows_per_col, last = (x + 1) * rows_per_col - 1;
            if (last >= source_rows)
                last = source_rows - 1;
            if (!tooltips) {
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", left + x * cw,
                        y0 + h * ch, cw, ch, color);
                continue;
            }
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>", left + x * cw,
                    y0 + h * ch, cw, ch, color);
            if (first == last)
                fprintf(f, "row %lld", first);
            else
                fprintf(f, "rows %lld–%lld", first, last);
            if (c->row_request)
                fprintf(f, " (request %d)", c->row_request[x * bin]);
            fprintf(f, ", head %d: ", h);
            if (isinf(v))
                fputs("NaN/Inf/unwritten", f);
            else
                fprintf(f, "%.3g× allowed", v);
            fputs("</title></rect>\n", f);
        }
    }
    /* grid lines between cells when they are big enough to read */
    if (cw >= 10 && ch >= 10) {
        for (int x = 1; x < cols; x++)
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#fff\" stroke-width=\"1\"/>\n",
                    left + x * cw, y0, left + x * cw, y0 + plot_h);
        for (int h = 1; h < heads; h++)
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#fff\" stroke-width=\"1\"/>\n", left,
                    y0 + h * ch, left + plot_w, y0 + h * ch);
    }
    /* request boundaries */
    for (int x = 1; c->row_request && x < cols; x++)
        if (c->row_request[x * bin] != c->row_request[(x - 1) * bin])
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#1b1f24\" stroke-width=\"1.2\"/>\n",
                    left + x * cw, top - 2, left + x * cw, y0 + plot_h + 3);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#8c959f\"/>\n", left, y0, plot_w,
            plot_h);
    /* y axis: heads */
    int hstep = ch >= 11 ? 1 : (11 + ch - 1) / ch;
    for (int h = 0; h < heads; h += hstep)
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s%d</text>\n", left - 6, y0 + h * ch + ch / 2 + 4,
                h == 0 ? "head " : "", h);
    /* x axis: query rows at round numbers (1, 2, 5 x 10^k), >= 70 px apart */
    double px_per_row = (double)cw / rows_per_col;
    static const int mantissa[3] = {1, 2, 5};
    long step = 1, decade = 1;
    for (int k = 0; step * px_per_row < 70; k++) {
        if (k == 3) {
            k = 0;
            decade *= 10;
        }
        step = mantissa[k] * decade;
    }
    for (long long row = 0; row < source_rows; row += step) {
        int x = left + (int)((row + 0.5) * px_per_row);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#8c959f\"/>", x, y0 + plot_h, x,
                y0 + plot_h + 4);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%lld</text>\n", x, y0 + plot_h + 16, row);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\">query row → (packed over %d request%s; %lld rows × %d heads)"
               "</text>\n",
            left, y0 + plot_h + 32, r->num_requests, r->num_requests == 1 ? "" : "s", source_rows, heads);
    put_legend(f, left, y0 + plot_h + 48);
    fputs("</svg>\n", f);
}

/* ---- per-case details ---------------------------------------------------------- */

static void put_region_row(FILE *f, const char *name, const swa_region_stats *s)
{
    double pct = s->count ? 100.0 * (double)s->mismatched / (double)s->count : 0;
    fprintf(f, "<tr><th>%s</th><td class=\"num\">%lld</td><td class=\"num\">%lld</td><td class=\"num\">%.1f%% ", name,
            s->count, s->mismatched, pct);
    if (s->mismatched)
        fprintf(f, "<span class=\"bar\" style=\"width:%dpx\"></span>", 2 + (int)(pct * 0.6));
    else
        fputs("<span class=\"bar zero\"></span>", f);
    fputs("</td><td class=\"num\">", f);
    put_num(f, s->max_abs_diff);
    fputs("</td></tr>\n", f);
}

static void put_regions(FILE *f, const swa_result *r)
{
    const swa_compare_result *c = &r->cmp;
    fputs("<div><h3>Regions</h3><table class=\"small regions\"><thead><tr><th>rows</th><th class=\"num\">elements</th>"
          "<th class=\"num\">mismatched</th><th class=\"num\">%</th><th class=\"num\">max abs diff</th></tr></thead><tbody>\n",
          f);
    if (r->window_left < 0) {
        put_region_row(f, "all (no window)", &c->window_free);
    } else {
        put_region_row(f, "window binds", &c->window_binds);
        put_region_row(f, "window does not bind", &c->window_free);
        for (int b = 0; b < SWA_DIST_BUCKETS; b++) {
            if (!c->past_edge[b].count)
                continue;
            char name[48];
            snprintf(name, sizeof name, "&nbsp;&nbsp;p − L = %s", swa_past_edge_bucket_label(b));
            /* the label contains '>' for the last bucket */
            if (b == SWA_DIST_BUCKETS - 1)
                snprintf(name, sizeof name, "&nbsp;&nbsp;p − L &gt; 16");
            put_region_row(f, name, &c->past_edge[b]);
        }
    }
    fputs("</tbody></table></div>\n", f);
}

static void put_worst(FILE *f, const swa_compare_result *c)
{
    fputs("<div><h3>Worst elements</h3>", f);
    if (!c->worst_count) {
        fputs("<p class=\"empty\">every element equal to the reference</p></div>\n", f);
        return;
    }
    fputs("<table class=\"small worst\"><thead><tr><th>#</th><th>index</th><th class=\"num\">actual</th>"
          "<th class=\"num\">expected</th><th class=\"num\">|diff|</th><th class=\"num\">allowed</th>"
          "<th class=\"num\">× allowed</th></tr></thead><tbody>\n",
          f);
    for (int i = 0; i < c->worst_count; i++) {
        const swa_elem *e = &c->worst[i];
        fprintf(f, "<tr><td>%d</td><td>", i + 1);
        put_index(f, &e->index);
        fputs("</td><td class=\"num\">", f);
        put_num(f, e->actual);
        fputs("</td><td class=\"num\">", f);
        put_num(f, e->expected);
        fputs("</td><td class=\"num\">", f);
        put_num(f, e->abs_diff);
        fputs("</td><td class=\"num\">", f);
        put_num(f, e->allowed);
        fputs("</td><td class=\"num\">", f);
        if (isnan(e->abs_diff))
            fputs("NaN", f);
        else
            put_num(f, e->allowed > 0 ? e->abs_diff / e->allowed : INFINITY);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
}

/* The invariance checks of a result: one row per transformation, and for
 * each that differs a heatmap of the worst |transformed - case| / allowed
 * over (query-row bucket x head bucket); -1 cells (a NaN or Inf on one
 * side) are drawn as non-finite. */
static void put_invariance(FILE *f, const swa_result *r)
{
    if (r->num_invariance <= 0)
        return;
    fputs("<h3>Invariance (the backend against itself)</h3>\n<p class=\"caption\">Declared: ", f);
    fputs(r->traits & SWA_TRAIT_DETERMINISTIC ? "deterministic" : "not deterministic", f);
    fputs(r->traits & SWA_TRAIT_BATCH_INVARIANT ? ", batch-invariant" : ", not batch-invariant", f);
    fputs(". Checks marked <b>held</b> must be bitwise equal; the others are measured "
          "(docs/invariance.md).</p>\n<div class=\"table\"><table><thead><tr><th>check</th><th>held</th><th>state"
          "</th><th>elements differing</th><th>greatest / allowed</th><th>where</th></tr></thead><tbody>\n", f);
    for (int i = 0; i < r->num_invariance; i++) {
        const swa_inv_record *v = &r->invariance[i];
        fputs("<tr><td>", f);
        esc(f, v->name);
        fputs("<br><small>", f);
        esc(f, v->detail);
        fprintf(f, "</small></td><td>%s</td><td>%s</td>", v->bitwise ? "held" : "measured",
                swa_inv_state_names[v->state]);
        if (v->state == SWA_INV_SKIPPED || v->state == SWA_INV_ERROR) {
            fputs("<td colspan=\"3\">", f);
            esc(f, v->message);
            fputs("</td></tr>\n", f);
            continue;
        }
        char where[96] = "";
        if (v->max_tol_ratio > 0)
            swa_index_format(&v->worst_index, where, sizeof where);
        fprintf(f, "<td>%lld / %lld%s</td><td>%.3g</td><td>", v->elements, v->total,
                v->lse_entries ? " (and LSE)" : "", v->max_tol_ratio);
        esc(f, where);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
    for (int i = 0; i < r->num_invariance; i++) {
        const swa_inv_record *v = &r->invariance[i];
        if (v->state != SWA_INV_DIFFERS || v->grid_rows <= 0 || v->grid_heads <= 0)
            continue;
        const int cw = 24, ch = 14, left = 70, top = 8;
        int width = left + cw * v->grid_rows + 20, height = top + ch * v->grid_heads + 34;
        fputs("<p class=\"caption\">", f);
        esc(f, v->name);
        fprintf(f, ": worst |transformed − case| / allowed per query-row bucket (x, %d buckets over the %d rows) and "
                   "head bucket (y)</p>\n", v->grid_rows, r->total_qo);
        fprintf(f, "<svg class=\"heatmap\" role=\"img\" aria-label=\"invariance heatmap\" width=\"%d\" "
                   "height=\"%d\" viewBox=\"0 0 %d %d\">\n", width, height, width, height);
        for (int h = 0; h < v->grid_heads; h++)
            for (int x = 0; x < v->grid_rows; x++) {
                float q = v->grid[x * SWA_INV_GRID_HEADS + h];
                char color[16];
                ratio_color(q < 0 ? INFINITY : q, color, sizeof color);
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>rows bucket %d, "
                           "heads bucket %d: %s</title></rect>\n", left + x * cw, top + h * ch, cw, ch,
                        q == 0 ? "#ffffff" : color, x, h, q < 0 ? "NaN/Inf on one side" : q == 0 ? "bitwise equal" : "differs");
            }
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">heads</text>"
                   "<text x=\"%d\" y=\"%d\">query rows →</text>\n</svg>\n", left - 6, top + 12, left,
                top + ch * v->grid_heads + 18);
    }
}

static void put_case(FILE *f, const swa_result *r, const char *anchor, bool open, bool heatmap)
{
    const char *o = swa_outcome_name(r->outcome);
    fprintf(f, "<details class=\"case %s\" id=\"%s\" data-outcome=\"%s\" data-text=\"", o, anchor, o);
    put_filter_text(f, r);
    fprintf(f, "\"%s>\n<summary><span class=\"badge %s\">%s</span> <span class=\"id\">", open ? " open" : "", o, o);
    esc(f, r->id);
    fputs("</span><span class=\"meta\">", f);
    esc(f, r->backend);
    fputs(" · ", f);
    esc(f, r->device);
    fprintf(f, " · %s", swa_dtype_name(r->dtype));
    if (r->mutant[0]) {
        fputs(" · mutant ", f);
        esc(f, r->mutant);
    }
    fputs("</span><span class=\"first\">", f);
    esc(f, r->message);
    fputs("</span></summary>\n<div class=\"body\">\n", f);

    if (r->xfail[0]) {
        fprintf(f, "<div class=\"warn xfail\"><b>%s</b> ", r->outcome == SWA_OUTCOME_XPASSED
                ? "Known failure that passed (xpassed: remove the mark):" : "Known failure (xfailed):");
        esc(f, r->xfail);
        fprintf(f, " (it %s)</div>\n", r->xfail_was == SWA_OUTCOME_PASSED ? "passed" : r->xfail_was == SWA_OUTCOME_ERROR
                ? "errored" : "failed");
    }
    if (r->diagnosis[0]) {
        fputs("<div class=\"diagnosis\"><b>Diagnosis:</b> ", f);
        esc(f, r->diagnosis);
        fputs("</div>\n", f);
    }
    if (r->kernel[0]) {
        fputs("<div class=\"kernel\"><b>Kernel:</b> ", f);
        esc(f, r->kernel);
        fputs("</div>\n", f);
    }
    if (r->warnings[0]) {
        fputs("<div class=\"warn\"><b>Plan-time warnings:</b> ", f);
        esc(f, r->warnings);
        fputs("</div>\n", f);
    }
    fprintf(f, "<p class=\"caption\">%d request%s, %d query rows, %d qo / %d kv heads, head_dim %d, %s, window_left %d",
            r->num_requests, r->num_requests == 1 ? "" : "s", r->total_qo, r->num_qo_heads, r->num_kv_heads, r->head_dim,
            r->causal ? "causal" : "non-causal", r->window_left);
    if (!r->causal)
        fprintf(f, ", window_right %d", r->window_right);
    if (r->chunk_size > 0)
        fprintf(f, ", attention_chunk_size %d", r->chunk_size);
    fputs(" · case file <code>", f);
    esc(f, r->file);
    fprintf(f, "</code> · %.3f s", r->duration);
    if (r->window_left >= 0 && r->causal)
        fprintf(f, "<br>Window: a query at position p sees keys [p − %d, p]; the window binds (cuts keys off) from "
                   "p = %lld on.", r->window_left, (long long)r->window_left + 1); /* a read-back report may hold INT_MAX */
    else if (!r->causal && (r->window_left >= 0 || r->window_right >= 0))
        fprintf(f, "<br>Band: a query at position p sees keys [%s, %s] (clipped to the request's keys).",
                r->window_left >= 0 ? "p − L" : "0", r->window_right >= 0 ? "p + R" : "kv_len − 1");
    if (r->chunk_size > 0)
        fprintf(f, "<br>Chunked: a query at position p sees keys [⌊p / %d⌋ · %d, p].", r->chunk_size, r->chunk_size);
    fputs("</p>\n", f);

    if (r->has_compare) {
        const swa_compare_result *c = &r->cmp;
        char first[512], details[4096];
        swa_compare_first_line(c, first, sizeof first);
        swa_compare_format_details(c, details, sizeof details);
        fprintf(f, "<pre class=\"%s\">", r->outcome == SWA_OUTCOME_FAILED ? "stats" : "plain");
        esc(f, first);
        fputc('\n', f);
        esc(f, details);
        fputs("</pre>\n", f);
        /* the heatmap shows output errors; an LSE-only failure has none */
        if (r->outcome == SWA_OUTCOME_FAILED && (c->mismatched || c->unwritten)) {
            fputs("<h3>Where it goes wrong</h3>\n", f);
            if (heatmap)
                put_heatmap(f, r);
            else
                fprintf(f, "<p class=\"empty\">Heatmap left out: only the %d worst failures carry one in this page "
                           "(the matrix is in report.json, row_head_ratio).</p>\n", HEATMAP_MAX_CASES);
        }
        /* a pass: the statistics above say enough; big runs stay small */
        if (r->outcome != SWA_OUTCOME_PASSED) {
            fputs("<div class=\"grid2\">\n", f);
            put_regions(f, r);
            put_worst(f, c);
            fputs("</div>\n", f);
        }
    } else if (r->outcome != SWA_OUTCOME_PASSED) {
        fputs("<pre>", f);
        esc(f, r->message);
        fputs("</pre>\n", f);
    }
    put_invariance(f, r);
    fputs("<h3>Reproduce</h3><div class=\"repro\"><pre><code>", f);
    esc(f, r->reproduce[0] ? r->reproduce : "(no reproduce command recorded)");
    fputs("</code></pre><button class=\"copy\" type=\"button\" hidden>copy</button></div>\n</div></details>\n", f);
}

/* selftest's kill matrix (mutants x case files), from the data of
 * selftest.json: each cell the largest mismatch ratio among the results of
 * that case file the mutant broke. */
static void put_kill_matrix(FILE *f, const cJSON *root)
{
    fputs("<section id=\"selftest\"><h2>Selftest: mutant kill matrix</h2>\n<p>Each row is a known bug "
          "(<code>swadiff list mutants</code>) switched on; each cell the largest mismatch ratio among the "
          "results of that case file that it broke (&#8212;: not killed by that file; blank: the file has no "
          "case for the mutant's backends). The table below lists the unmutated run.</p>\n"
          "<div style=\"overflow-x:auto\"><table class=\"overview\"><thead><tr><th>mutant</th><th>class</th>"
          "<th>killed</th>",
          f);
    const cJSON *files = cJSON_GetObjectItem(root, "files"), *file;
    cJSON_ArrayForEach(file, files) {
        const char *path = cJSON_GetStringValue(file) ? cJSON_GetStringValue(file) : "";
        const char *slash = strrchr(path, '/');
        char stem[128];
        snprintf(stem, sizeof stem, "%s", slash ? slash + 1 : path);
        char *dot = strrchr(stem, '.');
        if (dot)
            *dot = '\0';
        fputs("<th>", f);
        esc(f, stem);
        fputs("</th>", f);
    }
    fputs("</tr></thead><tbody>\n", f);
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(root, "mutants")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
        fputs("<tr><td><code>", f);
        esc(f, name ? name : "");
        fprintf(f, "</code></td><td>%d</td><td>%s</td>", cJSON_GetObjectItem(m, "class")->valueint,
                cJSON_IsTrue(cJSON_GetObjectItem(m, "killed")) ? "yes" : "<b style=\"color:#b00\">SURVIVED</b>");
        cJSON_ArrayForEach(file, files) {
            const cJSON *cell = NULL, *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(m, "files"))
                if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "file")), cJSON_GetStringValue(file)))
                    cell = c;
            if (!cell)
                fputs("<td></td>", f);
            else if (cJSON_GetObjectItem(cell, "killed")->valueint == 0)
                fputs("<td>&#8212;</td>", f);
            else if (cJSON_GetObjectItem(cell, "max_ratio")->valuedouble > 0)
                fprintf(f, "<td>%.1f%%</td>", 100 * cJSON_GetObjectItem(cell, "max_ratio")->valuedouble);
            else
                fputs("<td>guard/error</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div></section>\n", f);
}


int swa_report_write_html(const swa_run_results *rr, FILE *f)
{
    int *order = malloc(((size_t)rr->count + 1) * sizeof *order);
    char (*anchors)[ANCHOR_MAX] = make_anchors(rr);
    if (!order || !anchors) {
        free(order);
        free(anchors);
        return -1;
    }
    swa_report_order(rr, order);
    put_header(f, rr);
    if (rr->kill_matrix)
        put_kill_matrix(f, rr->kill_matrix);
    if (rr->count == 0)
        fputs("<section><p class=\"empty\">No results yet.</p></section>\n", f);
    else {
        put_diagnosis_groups(f, rr, anchors);
        put_overview(f, rr, order, anchors);
    }
    fputs("<section id=\"details\"><h2>Details</h2>\n", f);
    int opened = 0;
    for (int k = 0; k < rr->count; k++) {
        const swa_result *r = &rr->items[order[k]];
        bool open = r->outcome == SWA_OUTCOME_FAILED && opened < OPEN_FAILURES;
        opened += open;
        put_case(f, r, anchors[order[k]], open, k < HEATMAP_MAX_CASES);
    }
    fputs("</section>\n<footer>Generated by swadiff ", f);
    esc(f, rr->env.harness_version);
    fputs(". Each case lists the command that reruns it alone. Colors: error / allowed, where allowed = "
          "atol + rtol·|expected| (or the baseline rule).</footer>\n</main>\n<script>\n", f);
    fputs(SCRIPT, f);
    fputs("</script>\n</body>\n</html>\n", f);
    free(order);
    free(anchors);
    return ferror(f) ? -1 : 0;
}
