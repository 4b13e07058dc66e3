/* report_console.c — progress, failure lines, summary table and worst failures on
 * the console; the Markdown summary for GitHub Actions.  See console.h.
 *
 * Test: tests/test_report_console.c.
 */
#include "harness/report_console.h"
#include "harness/invariance.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "harness/report.h"

/* An error whose (backend, message) was printed already is counted, not
 * printed again: an adapter or plug-in that cannot start gives every case
 * the same error, and one line says it (the results still hold each one). */
#define SWA_CONSOLE_SEEN_MAX 4096

struct swa_console {
    FILE *out;
    int total, done;
    int counts[SWA_OUTCOME_COUNT];
    bool tty, color, verbose, quiet;
    bool progress_shown;
    int next_plain_percent;
    double started;
    uint64_t seen[SWA_CONSOLE_SEEN_MAX]; /* hashes of the error lines printed */
    int num_seen;
    int repeats;                         /* errors not printed: their line was */
};

#define RED "\033[1;31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define DIM "\033[2m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

static const char *tag(swa_outcome o)
{
    return o == SWA_OUTCOME_FAILED ? "FAIL " : o == SWA_OUTCOME_ERROR ? "ERROR" : o == SWA_OUTCOME_SKIPPED ? "SKIP "
         : o == SWA_OUTCOME_XFAILED ? "XFAIL" : o == SWA_OUTCOME_XPASSED ? "XPASS" : "PASS ";
}

static const char *tag_color(swa_outcome o)
{
    return o == SWA_OUTCOME_FAILED || o == SWA_OUTCOME_XPASSED ? RED : o == SWA_OUTCOME_ERROR ? YELLOW
         : o == SWA_OUTCOME_SKIPPED || o == SWA_OUTCOME_XFAILED ? DIM : GREEN;
}

/* Text from case files and kernels, made safe for a terminal and a log:
 * newlines become spaces (one line per result keeps logs grep-able), other
 * control characters (an ESC could drive the terminal) become \xNN. */
static void clean_text(const char *s, char *buf, size_t n)
{
    size_t len = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && len + 5 < n; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t')
            buf[len++] = ' ';
        else if (*p < 0x20 || *p == 0x7f)
            len += (size_t)snprintf(buf + len, n - len, "\\x%02X", *p);
        else
            buf[len++] = (char)*p;
    }
    if (n)
        buf[len < n ? len : n - 1] = '\0';
}

/* prints s cleaned */
static void put_clean(FILE *f, const char *s)
{
    char buf[4 * SWA_MSG_MAX + 16];
    clean_text(s, buf, sizeof buf);
    fputs(buf, f);
}

void swa_console_result_line(const swa_result *r, char *buf, size_t n)
{
    char raw[SWA_ID_MAX + SWA_MSG_MAX + 200];
    char known[SWA_XFAIL_REASON_MAX + 64] = "";
    if (r->outcome == SWA_OUTCOME_XPASSED)
        snprintf(known, sizeof known, "passed although marked as a known failure (%s): remove the mark", r->xfail);
    else if (r->outcome == SWA_OUTCOME_XFAILED)
        snprintf(known, sizeof known, "[known failure: %s] ", r->xfail);
    snprintf(raw, sizeof raw, "%s  %s/%s/%s  %s%s%s%s  %s%s", tag(r->outcome), r->backend, r->device,
             swa_dtype_name(r->dtype), r->id, r->mutant[0] ? " [mutant=" : "", r->mutant, r->mutant[0] ? "]" : "",
             known, r->outcome == SWA_OUTCOME_XPASSED ? "" : r->message);
    clean_text(raw, buf, n);
}

swa_console *swa_console_open(FILE *out, int total, bool verbose)
{
    swa_console *con = calloc(1, sizeof *con);
    if (!con)
        return NULL;
    con->out = out;
    con->total = total;
    con->verbose = verbose;
    con->tty = isatty(fileno(out));
    const char *term = getenv("TERM");
    con->color = con->tty && !getenv("NO_COLOR") && !(term && !strcmp(term, "dumb"));
    con->next_plain_percent = 10;
    con->started = swa_now();
    return con;
}

static int terminal_width(FILE *out)
{
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 100;
}

static void clear_progress(swa_console *con)
{
    if (con->tty && con->progress_shown) {
        fputs("\r\033[K", con->out);
        con->progress_shown = false;
    }
}

static void draw_progress(swa_console *con, const swa_result *last)
{
    char line[512];
    int width = terminal_width(con->out) - 1;
    if (width > (int)sizeof line - 1)
        width = (int)sizeof line - 1;
    int pct = con->total > 0 ? (int)(100.0 * con->done / con->total) : 0;
    int len = snprintf(line, sizeof line, "[%*d/%d] %3d%%  %d passed, %d failed, %d errors  %.0fs  %s %s", 4, con->done,
                       con->total, pct, con->counts[SWA_OUTCOME_PASSED], con->counts[SWA_OUTCOME_FAILED],
                       con->counts[SWA_OUTCOME_ERROR], swa_now() - con->started, last->backend, last->id);
    if (len > width)
        line[width] = '\0';
    char clean[sizeof line * 4];
    clean_text(line, clean, sizeof clean); /* the id comes from a case file */
    fprintf(con->out, "\r\033[K%s", clean);
    swa_flush(con->out);
    con->progress_shown = true;
}

void swa_console_set_quiet(swa_console *con) { con->quiet = true; }

/* FNV-1a over the backend, a separator and the message; a multi-layer
 * case's "layer N (window_left L): " prefix (run.c) is left out, so the
 * same cause in every layer of every case is one line. */
static uint64_t error_key(const swa_result *r)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)r->backend; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
    const char *msg = r->message;
    const char *cut = strstr(msg, "): ");
    if (strncmp(msg, "layer ", 6) == 0 && cut && strstr(msg, " (window_left ") && strstr(msg, " (window_left ") < cut)
        msg = cut + 3;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* True when this error's line was printed already (then it is counted). */
static bool repeated_error(swa_console *con, const swa_result *r)
{
    if (r->outcome != SWA_OUTCOME_ERROR || con->verbose)
        return false;
    uint64_t key = error_key(r);
    for (int i = 0; i < con->num_seen; i++)
        if (con->seen[i] == key) {
            con->repeats++;
            return true;
        }
    if (con->num_seen < SWA_CONSOLE_SEEN_MAX)
        con->seen[con->num_seen++] = key;
    return false;
}

void swa_console_add(swa_console *con, const swa_result *r)
{
    if (!con)
        return;
    con->done++;
    if ((unsigned)r->outcome < SWA_OUTCOME_COUNT)
        con->counts[r->outcome]++;
    if (con->quiet)
        return;
    bool print = r->outcome == SWA_OUTCOME_FAILED || r->outcome == SWA_OUTCOME_ERROR ||
                 r->outcome == SWA_OUTCOME_XPASSED || con->verbose;
    if (print && repeated_error(con, r))
        print = false;
    if (print) {
        char line[SWA_ID_MAX + SWA_MSG_MAX + 200];
        swa_console_result_line(r, line, sizeof line);
        clear_progress(con);
        if (con->color)
            fprintf(con->out, "%s%.5s" RESET "%s\n", tag_color(r->outcome), line, line + 5);
        else
            fprintf(con->out, "%s\n", line);
    }
    if (con->tty) {
        draw_progress(con, r);
    } else if (con->total > 0 && 100 * con->done >= con->next_plain_percent * con->total && con->done < con->total) {
        fprintf(con->out, "[%d/%d] %d%%: %d passed, %d failed, %d errors, %d skipped (%.0f s)\n", con->done, con->total,
                100 * con->done / con->total, con->counts[SWA_OUTCOME_PASSED], con->counts[SWA_OUTCOME_FAILED],
                con->counts[SWA_OUTCOME_ERROR], con->counts[SWA_OUTCOME_SKIPPED], swa_now() - con->started);
        while (con->next_plain_percent * con->total <= 100 * con->done)
            con->next_plain_percent += 10;
    }
    swa_flush(con->out);
}

/* ---- summary ---------------------------------------------------------------------- */

typedef struct group_row {
    const char *backend, *device;
    swa_dtype dtype;
    int n[SWA_OUTCOME_COUNT];
} group_row;

static int collect_groups(const swa_run_results *rr, group_row *g)
{
    int ng = 0;
    for (int i = 0; i < rr->count; i++) {
        const swa_result *r = &rr->items[i];
        int k = 0;
        while (k < ng && !(g[k].dtype == r->dtype && !strcmp(g[k].backend, r->backend) && !strcmp(g[k].device, r->device)))
            k++;
        if (k == ng) {
            g[ng] = (group_row){r->backend, r->device, r->dtype, {0}};
            ng++;
        }
        if ((unsigned)r->outcome < SWA_OUTCOME_COUNT)
            g[k].n[r->outcome]++;
    }
    return ng;
}

/* failed results, worst first (mismatch ratio, then error/allowed) */
static int collect_worst(const swa_run_results *rr, int *idx)
{
    int n = 0;
    swa_report_order(rr, idx);
    for (int k = 0; k < rr->count; k++)
        if (rr->items[idx[k]].outcome == SWA_OUTCOME_FAILED)
            idx[n++] = idx[k];
    return n;
}

void swa_console_write_summary(FILE *f, const swa_run_results *rr, bool color)
{
    group_row *g = calloc((size_t)rr->count + 1, sizeof *g);
    int *idx = malloc(((size_t)rr->count + 1) * sizeof *idx);
    if (!g || !idx) {
        free(g);
        free(idx);
        fprintf(f, "swadiff: no memory for the summary\n");
        return;
    }
    int ng = collect_groups(rr, g);
    int counts[SWA_OUTCOME_COUNT];
    swa_run_results_counts(rr, counts);
    int passed = counts[SWA_OUTCOME_PASSED], failed = counts[SWA_OUTCOME_FAILED], error = counts[SWA_OUTCOME_ERROR],
        skipped = counts[SWA_OUTCOME_SKIPPED], xfailed = counts[SWA_OUTCOME_XFAILED],
        xpassed = counts[SWA_OUTCOME_XPASSED];
    bool known = xfailed + xpassed > 0; /* the known-failure columns, when a run has any */
    int w = 14;
    for (int k = 0; k < ng; k++)
        if ((int)strlen(g[k].backend) > w)
            w = (int)strlen(g[k].backend);
    fprintf(f, "\n%s%-*s %-6s %-5s %7s %7s %7s %7s%s%s\n", color ? BOLD : "", w, "backend", "device", "dtype", "passed",
            "failed", "errors", "skipped", known ? " xfailed xpassed" : "", color ? RESET : "");
    for (int k = 0; k < ng; k++) {
        fprintf(f, "%-*s %-6s %-5s %7d ", w, g[k].backend, g[k].device, swa_dtype_name(g[k].dtype),
                g[k].n[SWA_OUTCOME_PASSED]);
        if (color && g[k].n[SWA_OUTCOME_FAILED])
            fprintf(f, RED "%7d" RESET, g[k].n[SWA_OUTCOME_FAILED]);
        else
            fprintf(f, "%7d", g[k].n[SWA_OUTCOME_FAILED]);
        fprintf(f, " %7d %7d", g[k].n[SWA_OUTCOME_ERROR], g[k].n[SWA_OUTCOME_SKIPPED]);
        if (known)
            fprintf(f, " %7d %7d", g[k].n[SWA_OUTCOME_XFAILED], g[k].n[SWA_OUTCOME_XPASSED]);
        fputc('\n', f);
    }
    /* the widest group name decides the first column (external backends are long) */
    fprintf(f, "%-*s %7d %7d %7d %7d", w + 12, "total", passed, failed, error, skipped);
    if (known)
        fprintf(f, " %7d %7d", xfailed, xpassed);
    fputc('\n', f);
    if (xpassed) {
        fprintf(f, "\n%sXPASSED%s: %d result%s marked as known failures passed; the run fails until the marks "
                   "(--xfail file, case \"xfail\") are removed:\n", color ? RED : "", color ? RESET : "", xpassed,
                xpassed == 1 ? "" : "s");
        for (int i = 0, shown = 0; i < rr->count && shown < SWA_CONSOLE_WORST; i++)
            if (rr->items[i].outcome == SWA_OUTCOME_XPASSED) {
                fprintf(f, "  %s  ", rr->items[i].backend);
                put_clean(f, rr->items[i].id);
                fputs("  (", f);
                put_clean(f, rr->items[i].xfail);
                fputs(")\n", f);
                shown++;
            }
    }

    int nw = collect_worst(rr, idx);
    if (nw) {
        fprintf(f, "\n%sWorst failures%s (by share of mismatched elements; %d of %d shown):\n", color ? BOLD : "",
                color ? RESET : "", nw < SWA_CONSOLE_WORST ? nw : SWA_CONSOLE_WORST, nw);
        for (int k = 0; k < nw && k < SWA_CONSOLE_WORST; k++) {
            const swa_result *r = &rr->items[idx[k]];
            fprintf(f, "%2d. %s/%s/%s  ", k + 1, r->backend, r->device, swa_dtype_name(r->dtype));
            put_clean(f, r->id);
            if (r->mutant[0])
                fprintf(f, " [mutant=%s]", r->mutant);
            fputs("\n    ", f);
            put_clean(f, r->message);
            fputc('\n', f);
            if (r->diagnosis[0]) {
                fputs("    diagnosis: ", f);
                put_clean(f, r->diagnosis);
                fputc('\n', f);
            }
            if (r->kernel[0]) {
                fputs("    kernel: ", f);
                put_clean(f, r->kernel);
                fputc('\n', f);
            }
            fputs("    rerun: ", f);
            put_clean(f, r->reproduce[0] ? r->reproduce : "(no reproduce command recorded)");
            fputc('\n', f);
        }
    }
    if (nw) {
        swa_diag_group groups[SWA_DIAG_GROUPS_MAX];
        int ungrouped = 0;
        int ngr = swa_diagnosis_groups(rr, groups, SWA_DIAG_GROUPS_MAX, &ungrouped);
        fprintf(f, "\n%sFailures by diagnosis%s (%d failure%s, %d kind%s):\n", color ? BOLD : "", color ? RESET : "",
                nw, nw == 1 ? "" : "s", ngr, ngr == 1 ? "" : "s");
        for (int k = 0; k < ngr && k < SWA_CONSOLE_WORST * 2; k++) {
            fprintf(f, "%6d  ", groups[k].count);
            put_clean(f, groups[k].key);
            fputs("  [", f);
            put_clean(f, groups[k].backends);
            fputs("]  e.g. ", f);
            put_clean(f, rr->items[groups[k].first].id);
            fputc('\n', f);
        }
        if (ngr > SWA_CONSOLE_WORST * 2 || ungrouped)
            fprintf(f, "  ... %d more kinds (see report.html)\n",
                    ngr > SWA_CONSOLE_WORST * 2 ? ngr - SWA_CONSOLE_WORST * 2 + (ungrouped ? 1 : 0) : 1);
    }
    /* the marshalling controls (harness/controls.h): a broken staging, or
     * external results nothing checked, is said again above the verdict */
    if (rr->controls.state == SWA_CONTROLS_BROKEN || rr->controls.state == SWA_CONTROLS_NOT_RUN) {
        bool broken = rr->controls.state == SWA_CONTROLS_BROKEN;
        fprintf(f, "\n%s%s%s: ", color ? (broken ? RED : YELLOW) : "", broken ? "UNTRUSTWORTHY" : "UNCHECKED",
                color ? RESET : "");
        put_clean(f, rr->controls.summary);
        fputc('\n', f);
    }
    if (rr->incomplete)
        fprintf(f, "\n%sINCOMPLETE%s: %s\n", color ? YELLOW : "", color ? RESET : "", rr->incomplete_reason);
    if (rr->count == 0)
        fprintf(f, "\n%sNOTHING COMPARED%s: the run has no result; it checked no kernel.\n", color ? YELLOW : "",
                color ? RESET : "");
    if (rr->count > 0 && passed + failed + error + xfailed + xpassed == 0)
    {
        fprintf(f, "\n%sNOTHING COMPARED%s: all %d results were skipped; this run checked no kernel. Reasons:\n",
                color ? YELLOW : "", color ? RESET : "", skipped);
        for (int i = 0, shown = 0; i < rr->count && shown < 3; i++) {
            bool seen = false;
            for (int j = 0; j < i && !seen; j++)
                seen = !strcmp(rr->items[j].message, rr->items[i].message);
            if (seen)
                continue;
            fputs("  - ", f);
            put_clean(f, rr->items[i].message);
            fputc('\n', f);
            shown++;
        }
    }
    /* the verdict names the exit code's reason, in its precedence (1, 3, 5, 0) */
    bool nothing = passed + xfailed == 0;
    const char *verdict = failed ? "FAILED" : xpassed ? "FAILED (xpassed)" : error ? "ERROR"
                        : rr->incomplete ? "INCOMPLETE" : nothing ? "NOTHING COMPARED" : "PASSED";
    char known_text[64] = "";
    if (known)
        snprintf(known_text, sizeof known_text, ", %d xfailed, %d xpassed", xfailed, xpassed);
    fprintf(f, "\n%s%s%s: %d passed, %d failed, %d errors, %d skipped%s in %.1f s\n",
            color ? (failed || xpassed ? RED : error || rr->incomplete || nothing ? YELLOW : GREEN) : "", verdict,
            color ? RESET : "", passed, failed, error, skipped, known_text, rr->duration);
    free(g);
    free(idx);
}

static void md(FILE *f, const char *s)
{
    char *e = swa_markdown_cell(s);
    if (e) {
        fputs(e, f);
        free(e);
    }
}

int swa_console_write_markdown(FILE *f, const swa_run_results *rr, const char *report_dir)
{
    group_row *g = calloc((size_t)rr->count + 1, sizeof *g);
    int *idx = malloc(((size_t)rr->count + 1) * sizeof *idx);
    if (!g || !idx) {
        free(g);
        free(idx);
        return -1;
    }
    int counts[SWA_OUTCOME_COUNT];
    swa_run_results_counts(rr, counts);
    int passed = counts[SWA_OUTCOME_PASSED], failed = counts[SWA_OUTCOME_FAILED], error = counts[SWA_OUTCOME_ERROR],
        skipped = counts[SWA_OUTCOME_SKIPPED], xfailed = counts[SWA_OUTCOME_XFAILED],
        xpassed = counts[SWA_OUTCOME_XPASSED];
    bool known = xfailed + xpassed > 0;
    fprintf(f, "## swadiff: %s\n\n", failed ? "mismatches found" : xpassed ? "known failures passed (xpassed)"
                                     : error ? "runtime errors" : rr->incomplete ? "incomplete run"
                                     : passed + xfailed == 0 ? "nothing compared" : "all passed");
    fprintf(f, "**%d** passed, **%d** failed, **%d** errors, **%d** skipped", passed, failed, error, skipped);
    if (known)
        fprintf(f, ", **%d** xfailed (known failures), **%d** xpassed", xfailed, xpassed);
    fprintf(f, " in %.1f s\n\n", rr->duration);
    fprintf(f, "| backend | device | dtype | passed | failed | errors | skipped |%s\n|---|---|---|---:|---:|---:|---:|%s\n",
            known ? " xfailed | xpassed |" : "", known ? "---:|---:|" : "");
    int ng = collect_groups(rr, g);
    for (int k = 0; k < ng; k++) {
        fputs("| ", f);
        md(f, g[k].backend);
        fputs(" | ", f);
        md(f, g[k].device);
        fprintf(f, " | %s | %d | %d | %d | %d |", swa_dtype_name(g[k].dtype), g[k].n[SWA_OUTCOME_PASSED],
                g[k].n[SWA_OUTCOME_FAILED], g[k].n[SWA_OUTCOME_ERROR], g[k].n[SWA_OUTCOME_SKIPPED]);
        if (known)
            fprintf(f, " %d | %d |", g[k].n[SWA_OUTCOME_XFAILED], g[k].n[SWA_OUTCOME_XPASSED]);
        fputc('\n', f);
    }
    if (xpassed) {
        fputs("\n### Known failures that passed (xpassed: remove the mark)\n\n| case | backend | mark |\n|---|---|---|\n",
              f);
        for (int i = 0, shown = 0; i < rr->count && shown < 20; i++)
            if (rr->items[i].outcome == SWA_OUTCOME_XPASSED) {
                fputs("| ", f);
                md(f, rr->items[i].id);
                fputs(" | ", f);
                md(f, rr->items[i].backend);
                fputs(" | ", f);
                md(f, rr->items[i].xfail);
                fputs(" |\n", f);
                shown++;
            }
    }
    if (rr->controls.state == SWA_CONTROLS_BROKEN || rr->controls.state == SWA_CONTROLS_NOT_RUN) {
        fprintf(f, "\n**%s**: ", rr->controls.state == SWA_CONTROLS_BROKEN ? "UNTRUSTWORTHY" : "UNCHECKED");
        md(f, rr->controls.summary);
        fputs("\n", f);
    }
    int nw = collect_worst(rr, idx);
    if (nw) { /* the kinds of bug first: one row per diagnosis family */
        swa_diag_group groups[SWA_DIAG_GROUPS_MAX];
        int ungrouped = 0;
        int ngr = swa_diagnosis_groups(rr, groups, SWA_DIAG_GROUPS_MAX, &ungrouped);
        fprintf(f, "\n### Failures by diagnosis (%d failure%s, %d kind%s)\n\n| failures | diagnosis | backends | "
                   "example | what it means |\n|---:|---|---|---|---|\n", nw, nw == 1 ? "" : "s", ngr,
                ngr == 1 ? "" : "s");
        for (int k = 0; k < ngr && k < 30; k++) {
            const swa_result *r = &rr->items[groups[k].first];
            fprintf(f, "| %d | `", groups[k].count);
            md(f, groups[k].key);
            fputs("` | ", f);
            md(f, groups[k].backends);
            fputs(" | ", f);
            md(f, r->id);
            fputs(" | ", f);
            /* the verdict after "[key] ", cut: the full text is in the report */
            const char *v = r->diagnosis[0] == '[' && strchr(r->diagnosis, ']') ? strchr(r->diagnosis, ']') + 1 : r->diagnosis;
            while (*v == ' ')
                v++;
            char cut[240];
            snprintf(cut, sizeof cut, "%.*s%s", 200, v, strlen(v) > 200 ? "..." : "");
            md(f, cut);
            fputs(" |\n", f);
        }
        if (ungrouped)
            fprintf(f, "\n(%d more failures in kinds not listed: see the report)\n", ungrouped);
    }
    if (nw) {
        fputs("\n### Worst failures\n\n| case | backend | first mismatch line |\n|---|---|---|\n", f);
        for (int k = 0; k < nw && k < 20; k++) {
            const swa_result *r = &rr->items[idx[k]];
            fputs("| ", f);
            md(f, r->id);
            fputs(" | ", f);
            md(f, r->backend);
            fprintf(f, "/%s | ", swa_dtype_name(r->dtype));
            md(f, r->message);
            fputs(" |\n", f);
        }
        fputs("\n<details><summary>Reproduce commands</summary>\n\n", f);
        for (int k = 0; k < nw && k < SWA_CONSOLE_WORST; k++) {
            /* a fenced block shows the command verbatim; a fence longer than
             * any backtick run inside keeps it closed */
            const char *cmd = rr->items[idx[k]].reproduce;
            int run = 0, longest = 0;
            for (const char *p = cmd; *p; p++) {
                run = *p == '`' ? run + 1 : 0;
                longest = run > longest ? run : longest;
            }
            int fence = longest >= 3 ? longest + 1 : 3;
            fprintf(f, "%.*ssh\n%s\n%.*s\n", fence, "``````````````````````````````", cmd, fence,
                    "``````````````````````````````");
        }
        fputs("\n</details>\n", f);
    }
    if (report_dir) {
        fputs("\nFull report: `", f);
        md(f, report_dir);
        fputs("/report.html` (JSON: `report.json`, JUnit: `junit.xml`).\n", f);
    }
    fputc('\n', f);
    free(g);
    free(idx);
    return ferror(f) ? -1 : 0;
}

/* The invariance checks of the run in a few lines: how many held, and the
 * measured differences (not judged) worst first, at most SWA_CONSOLE_WORST. */
static void invariance_summary(FILE *f, const swa_run_results *rr)
{
    long long counts[4] = {0, 0, 0, 0}, held = 0, broken = 0;
    for (int i = 0; i < rr->count; i++)
        for (int k = 0; k < rr->items[i].num_invariance; k++) {
            const swa_inv_record *v = &rr->items[i].invariance[k];
            counts[v->state]++;
            held += v->bitwise && v->state == SWA_INV_SAME;
            broken += v->bitwise && v->state == SWA_INV_DIFFERS;
        }
    if (!counts[0] && !counts[1] && !counts[2] && !counts[3])
        return;
    fprintf(f, "Invariance: %lld checks bitwise equal (%lld held for backends declaring it), %lld differ (%lld of them "
            "declared invariant: failures), %lld skipped, %lld errors (docs/invariance.md)\n",
            counts[SWA_INV_SAME], held, counts[SWA_INV_DIFFERS], broken, counts[SWA_INV_SKIPPED],
            counts[SWA_INV_ERROR]);
    for (int shown = 0; shown < SWA_CONSOLE_WORST;) {
        const swa_result *best = NULL;
        const swa_inv_record *bv = NULL;
        static const swa_inv_record *done[SWA_CONSOLE_WORST];
        for (int i = 0; i < rr->count; i++)
            for (int k = 0; k < rr->items[i].num_invariance; k++) {
                const swa_inv_record *v = &rr->items[i].invariance[k];
                bool seen = false;
                for (int d = 0; d < shown; d++)
                    seen = seen || done[d] == v;
                if (v->state == SWA_INV_DIFFERS && !v->bitwise && !seen &&
                    (!bv || v->max_tol_ratio > bv->max_tol_ratio)) {
                    best = &rr->items[i];
                    bv = v;
                }
            }
        if (!bv)
            break;
        done[shown++] = bv;
        char line[SWA_MSG_MAX];
        swa_invariance_line(bv, line, sizeof line);
        fprintf(f, "  measured: %s %s: %s\n", best->id, best->backend, line);
    }
}

void swa_console_close(swa_console *con, const swa_run_results *rr, const char *report_dir)
{
    if (!con)
        return;
    clear_progress(con);
    if (con->repeats)
        fprintf(con->out, "(%d more error%s repeat%s a backend's message printed above; the reports list each)\n",
                con->repeats, con->repeats == 1 ? "" : "s", con->repeats == 1 ? "s" : "");
    swa_console_write_summary(con->out, rr, con->color);
    invariance_summary(con->out, rr);
    if (report_dir)
        fprintf(con->out, "Report: %s/report.html (also report.json, junit.xml)\n", report_dir);
    const char *step = getenv("GITHUB_STEP_SUMMARY");
    if (step && *step) {
        FILE *f = fopen(step, "a");
        if (!f || swa_console_write_markdown(f, rr, report_dir) != 0)
            fprintf(stderr, "swadiff: cannot append the summary to GITHUB_STEP_SUMMARY=%s\n", step);
        if (f)
            fclose(f);
    }
    swa_flush(con->out);
    free(con);
}
