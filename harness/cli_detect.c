/* cli_detect.c — detection power: `swadiff selftest`, `explain`, `shrink`.
 *
 * selftest runs the case library under every mutant and prints a kill
 * matrix (mutant x case file, with the mismatch ratio that killed it); it
 * exits 0 only if the unmutated run passes and every mutant is killed.
 * explain names the mask a failing backend applied; shrink reduces a
 * failing case while it keeps failing and writes it as a case file.
 *
 * Tested by tests/test_detect.c; CI runs `swadiff selftest --device host`. */
#include <getopt.h>
#include <stdarg.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "explain.h"
#include "report.h"
#include "run.h"

/* ---------------------------------------------------------------------------
 * selftest */

typedef struct kill_cell {
    int runs;        /* (case, backend) results in this file for this mutant */
    int killed;      /* of which failed or errored */
    double ratio;    /* largest mismatch ratio among the failures */
    bool guard;      /* a guard violation or an error killed it */
} kill_cell;

static bool mutant_touches(swa_mutant m, unsigned backends)
{
    const char *list = swa_mutant_get(m)->backends;
    int n;
    const swa_backend *const *bs = swa_backends(&n);
    for (int i = 0; i < n; i++) {
        if (!(backends & bs[i]->flag))
            continue;
        /* decode_auto routes to decode_aiter or decode_fa2 */
        const char *name = bs[i]->name;
        if (strstr(list, name))
            return true;
        if (!strcmp(name, "decode_auto") && (strstr(list, "decode_fa2") || strstr(list, "decode_aiter")))
            return true;
    }
    return false;
}

static int file_index(char files[][SWA_PATH_MAX], int *nfiles, const char *file)
{
    for (int i = 0; i < *nfiles; i++)
        if (!strcmp(files[i], file))
            return i;
    snprintf(files[*nfiles], SWA_PATH_MAX, "%s", file);
    return (*nfiles)++;
}

static const char *file_stem(const char *path, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/');
    snprintf(buf, n, "%s", slash ? slash + 1 : path);
    char *dot = strrchr(buf, '.');
    if (dot)
        *dot = '\0';
    return buf;
}

/* Appends printf-style text to a growing buffer. */
static void append(char **buf, size_t *cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (k < 0 || !*buf)
            return;
        if (*len + (size_t)k < *cap) {
            *len += (size_t)k;
            return;
        }
        char *grown = realloc(*buf, *cap * 2 + (size_t)k);
        if (!grown)
            return;
        *buf = grown;
        *cap = *cap * 2 + (size_t)k;
    }
}

/* The kill matrix as an HTML section (mutants x case files). */
static void html_matrix(char **buf, size_t *cap, size_t *len, const cJSON *root, char files[][SWA_PATH_MAX],
                        int nfiles)
{
    char stem[128];
    const cJSON *mutants = cJSON_GetObjectItem(root, "mutants");
    append(buf, cap, len, "<section id=\"selftest\"><h2>Selftest: mutant kill matrix</h2>\n<p>Each row is a known bug "
           "(<code>swadiff list mutants</code>) switched on; each cell the largest mismatch ratio among the "
           "results of that case file that it broke (&#8212;: not killed by that file; blank: the file has no "
           "case for the mutant's backends). The table below lists the unmutated run.</p>\n"
           "<div style=\"overflow-x:auto\"><table class=\"overview\"><thead><tr><th>mutant</th><th>class</th>"
           "<th>killed</th>");
    for (int f = 0; f < nfiles; f++) {
        char *e = swa_html_escape(file_stem(files[f], stem, sizeof stem));
        append(buf, cap, len, "<th>%s</th>", e ? e : "");
        free(e);
    }
    append(buf, cap, len, "</tr></thead><tbody>\n");
    const cJSON *m;
    cJSON_ArrayForEach(m, mutants) {
        bool killed = cJSON_IsTrue(cJSON_GetObjectItem(m, "killed"));
        char *name = swa_html_escape(cJSON_GetObjectItem(m, "name")->valuestring);
        append(buf, cap, len, "<tr><td><code>%s</code></td><td>%d</td><td>%s</td>", name ? name : "",
               cJSON_GetObjectItem(m, "class")->valueint,
               killed ? "yes" : "<b style=\"color:#b00\">SURVIVED</b>");
        free(name);
        for (int f = 0; f < nfiles; f++) {
            const cJSON *cell = NULL, *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(m, "files"))
                if (!strcmp(cJSON_GetObjectItem(c, "file")->valuestring, files[f]))
                    cell = c;
            if (!cell) {
                append(buf, cap, len, "<td></td>");
            } else if (cJSON_GetObjectItem(cell, "killed")->valueint == 0) {
                append(buf, cap, len, "<td>&#8212;</td>");
            } else {
                double ratio = cJSON_GetObjectItem(cell, "max_ratio")->valuedouble;
                if (ratio > 0)
                    append(buf, cap, len, "<td>%.1f%%</td>", 100 * ratio);
                else
                    append(buf, cap, len, "<td>guard/error</td>");
            }
        }
        append(buf, cap, len, "</tr>\n");
    }
    append(buf, cap, len, "</tbody></table></div></section>\n");
}

static int selftest_usage(FILE *f)
{
    fprintf(f,
            "usage: swadiff selftest [OPTIONS] [CASES...]\n"
            "\n"
            "Runs the case library (default ./cases) unmutated and then under every mutant\n"
            "(swadiff list mutants), and prints the kill matrix: for each mutant, the case\n"
            "files whose results failed, with the largest mismatch ratio.  Exit 0 only when\n"
            "the unmutated run passes and every mutant is killed; 1 otherwise.\n"
            "\n"
            "  -d, --device D     host | cuda | hip | auto (default auto)\n"
            "  -m, --mutant NAME  only this mutant (repeatable)\n"
            "  -r, --report DIR   write DIR/selftest.json, and the unmutated run's report\n"
            "                     (report.html with the kill matrix on top, report.json, junit.xml)\n"
            "  -h, --help         this text\n");
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

int swa_cmd_selftest(int argc, char **argv, const char *prog)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'},
                                         {"mutant", required_argument, 0, 'm'},
                                         {"report", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *device_name = "auto", *report_dir = NULL;
    bool only[SWA_MUTANT_COUNT] = {false};
    bool any_only = false;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:m:r:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': device_name = optarg; break;
        case 'm': {
            swa_mutant m = swa_mutant_by_name(optarg);
            if (m == SWA_MUTANT_COUNT || m == SWA_MUTANT_NONE || m == SWA_MUTANT_DEVICE_FAULT) {
                fprintf(stderr, "swadiff selftest: --mutant %s: unknown (see `swadiff list mutants`)\n", optarg);
                return SWA_EXIT_USAGE;
            }
            only[m] = any_only = true;
            break;
        }
        case 'r': report_dir = optarg; break;
        case 'h': return selftest_usage(stdout);
        default: return selftest_usage(stderr);
        }
    }
    swa_case_list all = {0};
    int rc = swa_cli_load_cases(argc - optind, argv + optind, &all);
    if (rc) {
        swa_case_list_free(&all);
        return rc;
    }
    int dev_rc = SWA_EXIT_USAGE;
    const swa_device_ops *dev = swa_cli_device(device_name, &dev_rc);
    if (!dev) {
        swa_case_list_free(&all);
        return dev_rc;
    }

    static char files[256][SWA_PATH_MAX];
    int nfiles = 0;
    kill_cell(*cells)[256] = calloc(SWA_MUTANT_COUNT, sizeof *cells);
    int baseline_bad = 0, baseline_runs = 0;
    char baseline_first[1024] = "";
    swa_run_config cfg = {.device = dev, .quiet = true, .no_isolate = true, .argv0 = prog};
    double t0 = swa_now();
    swa_run_results baseline = {0};
    baseline.started = t0;

    int n;
    const swa_backend *const *bs = swa_backends(&n);
    for (int ci = 0; ci < all.count; ci++) {
        const swa_case *c = &all.cases[ci];
        int fi = file_index(files, &nfiles, c->file);
        if (fi >= 256) {
            fprintf(stderr, "swadiff selftest: more than 256 case files\n");
            free(cells);
            swa_case_list_free(&all);
            return SWA_EXIT_USAGE;
        }
        swa_case_ctx ctx;
        swa_error err = {0};
        if (swa_case_ctx_init(&ctx, c, dev, &err) != SWA_OK) {
            baseline_bad++;
            if (!baseline_first[0])
                snprintf(baseline_first, sizeof baseline_first, "%s: %s", c->id, err.message);
            continue;
        }
        for (int m = 0; m < SWA_MUTANT_COUNT; m++) {
            if (m != SWA_MUTANT_NONE && any_only && !only[m])
                continue;
            if (m == SWA_MUTANT_DEVICE_FAULT) /* crashes on purpose: tested by the fault-isolation tests */
                continue;
            if (m != SWA_MUTANT_NONE && !mutant_touches((swa_mutant)m, c->backends))
                continue;
            cfg.mutant = (swa_mutant)m;
            for (int b = 0; b < n; b++) {
                if (!(c->backends & bs[b]->flag))
                    continue;
                swa_result r;
                swa_run_one(&cfg, &ctx, bs[b], &r, NULL, NULL);
                bool dead = r.outcome == SWA_OUTCOME_FAILED || r.outcome == SWA_OUTCOME_ERROR;
                if (m == SWA_MUTANT_NONE && report_dir) {
                    swa_result copy = r;
                    if (swa_compare_result_copy(&copy.cmp, &r.cmp) == 0)
                        swa_run_results_add(&baseline, &copy);
                }
                if (m == SWA_MUTANT_NONE) {
                    baseline_runs++;
                    if (dead) {
                        baseline_bad++;
                        if (!baseline_first[0])
                            snprintf(baseline_first, sizeof baseline_first, "%s [%s]: %s", c->id, bs[b]->name,
                                     r.message);
                    }
                } else if (r.outcome != SWA_OUTCOME_SKIPPED) {
                    kill_cell *k = &cells[m][fi];
                    k->runs++;
                    if (dead) {
                        k->killed++;
                        double ratio = r.has_compare ? r.cmp.ratio : 0;
                        if (r.has_compare && r.cmp.lse_compared && r.cmp.lse_total)
                            ratio = ratio > (double)r.cmp.lse_mismatched / r.cmp.lse_total
                                        ? ratio : (double)r.cmp.lse_mismatched / r.cmp.lse_total;
                        if (ratio > k->ratio)
                            k->ratio = ratio;
                        if (!r.has_compare || r.cmp.guard_violation || r.cmp.unwritten)
                            k->guard = true;
                    }
                }
                swa_compare_result_free(&r.cmp);
            }
        }
        swa_case_ctx_free(&ctx);
    }

    /* the matrix */
    char stem[128];
    printf("swadiff selftest on %s: %d cases in %d files, %.1f s\n\n", dev->name, all.count, nfiles,
           swa_now() - t0);
    printf("unmutated: %d of %d results passed%s%s\n\n", baseline_runs - baseline_bad, baseline_runs,
           baseline_bad ? " — FIRST FAILURE: " : "", baseline_first);
    printf("%-26s %-7s %s\n", "mutant", "killed", "killed by (case file: largest mismatch ratio)");
    int survivors = 0;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "selftest_version", 1);
    cJSON_AddStringToObject(root, "device", dev->name);
    cJSON_AddNumberToObject(root, "cases", all.count);
    cJSON *jb = cJSON_AddObjectToObject(root, "unmutated");
    cJSON_AddNumberToObject(jb, "results", baseline_runs);
    cJSON_AddNumberToObject(jb, "failed", baseline_bad);
    cJSON_AddStringToObject(jb, "first_failure", baseline_first);
    cJSON *jm = cJSON_AddArrayToObject(root, "mutants");
    for (int m = 1; m < SWA_MUTANT_COUNT; m++) {
        if ((any_only && !only[m]) || m == SWA_MUTANT_DEVICE_FAULT)
            continue;
        const swa_mutant_info *mi = swa_mutant_get((swa_mutant)m);
        bool killed = false;
        int runs = 0;
        char line[4096] = "";
        size_t k = 0;
        cJSON *jo = cJSON_CreateObject();
        cJSON_AddStringToObject(jo, "name", mi->name);
        cJSON_AddNumberToObject(jo, "class", mi->bug_class);
        cJSON *jf = cJSON_AddArrayToObject(jo, "files");
        for (int f = 0; f < nfiles; f++) {
            kill_cell *cell = &cells[m][f];
            runs += cell->runs;
            if (!cell->runs)
                continue;
            cJSON *jc = cJSON_CreateObject();
            cJSON_AddStringToObject(jc, "file", files[f]);
            cJSON_AddNumberToObject(jc, "results", cell->runs);
            cJSON_AddNumberToObject(jc, "killed", cell->killed);
            cJSON_AddNumberToObject(jc, "max_ratio", cell->ratio);
            cJSON_AddBoolToObject(jc, "guard_or_error", cell->guard);
            cJSON_AddItemToArray(jf, jc);
            if (!cell->killed)
                continue;
            killed = true;
            if (k < sizeof line - 200) {
                if (cell->ratio > 0)
                    k += (size_t)snprintf(line + k, sizeof line - k, "%s%s: %.1f%%", k ? ", " : "",
                                          file_stem(files[f], stem, sizeof stem), 100 * cell->ratio);
                else
                    k += (size_t)snprintf(line + k, sizeof line - k, "%s%s: %s", k ? ", " : "",
                                          file_stem(files[f], stem, sizeof stem), "guard/error");
            }
        }
        cJSON_AddBoolToObject(jo, "killed", killed);
        cJSON_AddNumberToObject(jo, "results", runs);
        cJSON_AddItemToArray(jm, jo);
        if (!killed)
            survivors++;
        printf("%-26s %-7s %s\n", mi->name, killed ? "yes" : "NO", killed ? line
               : runs ? "SURVIVED every case it ran on" : "no case exercises its backend");
    }
    bool ok = baseline_bad == 0 && survivors == 0;
    if (report_dir) {
        /* the unmutated run's report, with the kill matrix on top */
        size_t cap = 1 << 16, len = 0;
        char *html = malloc(cap);
        html_matrix(&html, &cap, &len, root, files, nfiles);
        swa_cli_environment(&baseline.env, dev, argc, argv, prog);
        baseline.duration = swa_now() - t0;
        baseline.exitcode = ok ? SWA_EXIT_OK : SWA_EXIT_MISMATCH;
        baseline.extra_html = html;
        swa_error werr = {0};
        mkdir(report_dir, 0777);
        if (swa_report_write_all(&baseline, report_dir, &werr) != SWA_OK)
            fprintf(stderr, "swadiff selftest: %s\n", werr.message);
        free(html);
    }
    swa_run_results_free(&baseline);
    cJSON_AddNumberToObject(root, "survivors", survivors);
    cJSON_AddBoolToObject(root, "passed", ok);
    printf("\n%s: %d mutant%s survived; unmutated %s\n", ok ? "PASSED" : "FAILED", survivors,
           survivors == 1 ? "" : "s", baseline_bad ? "FAILED" : "passed");
    int exit_code = ok ? SWA_EXIT_OK : SWA_EXIT_MISMATCH;
    if (report_dir) {
        mkdir(report_dir, 0777);
        char path[SWA_PATH_MAX + 32], tmp[SWA_PATH_MAX + 40];
        snprintf(path, sizeof path, "%s/selftest.json", report_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        char *text = cJSON_Print(root);
        FILE *f = fopen(tmp, "w");
        if (!f || !text || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
            fprintf(stderr, "swadiff selftest: cannot write %s\n", path);
            exit_code = SWA_EXIT_RUNTIME;
        }
        cJSON_free(text);
    }
    cJSON_Delete(root);
    free(cells);
    swa_case_list_free(&all);
    return exit_code;
}

/* ---------------------------------------------------------------------------
 * explain and shrink share: find one case by exact id and run it once. */

typedef struct one_case_opts {
    const char *device_name;
    const char *backend;
    swa_mutant mutant;
    const char *id;
    const char *out_path;
    int npaths;
    char **paths;
} one_case_opts;

static int parse_one_case(int argc, char **argv, one_case_opts *o, const char *cmd, bool need_backend)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'},
                                         {"backend", required_argument, 0, 'b'},
                                         {"mutant", required_argument, 0, 'm'},
                                         {"out", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->device_name = "auto";
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:b:m:o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': o->device_name = optarg; break;
        case 'b':
            if (!swa_backend_by_name(optarg)) {
                fprintf(stderr, "swadiff %s: --backend %s: unknown backend\n", cmd, optarg);
                return SWA_EXIT_USAGE;
            }
            o->backend = optarg;
            break;
        case 'm':
            o->mutant = swa_mutant_by_name(optarg);
            if (o->mutant == SWA_MUTANT_COUNT) {
                fprintf(stderr, "swadiff %s: --mutant %s: unknown (see `swadiff list mutants`)\n", cmd, optarg);
                return SWA_EXIT_USAGE;
            }
            break;
        case 'o': o->out_path = optarg; break;
        case 'h': return -1;
        default: return SWA_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "swadiff %s: missing CASE_ID\n", cmd);
        return SWA_EXIT_USAGE;
    }
    if (need_backend && !o->backend) {
        fprintf(stderr, "swadiff %s: --backend is required\n", cmd);
        return SWA_EXIT_USAGE;
    }
    o->id = argv[optind];
    o->npaths = argc - optind - 1;
    o->paths = argv + optind + 1;
    return 0;
}

static const swa_case *find_case(const swa_case_list *all, const char *id)
{
    for (int i = 0; i < all->count; i++)
        if (!strcmp(all->cases[i].id, id))
            return &all->cases[i];
    return NULL;
}

/* Loads the cases, finds o->id and resolves the device: what explain and
 * shrink both start with.  Returns 0, or the exit code (list freed). */
static int open_one_case(const one_case_opts *o, const char *cmd, swa_case_list *all, const swa_case **c,
                         const swa_device_ops **dev)
{
    int rc = swa_cli_load_cases(o->npaths, o->paths, all);
    if (rc)
        return rc;
    *c = find_case(all, o->id);
    if (!*c) {
        fprintf(stderr, "swadiff %s: no case with id '%s' (ids: `swadiff list cases`)\n", cmd, o->id);
        swa_case_list_free(all);
        return SWA_EXIT_USAGE;
    }
    int dev_rc = SWA_EXIT_USAGE;
    *dev = swa_cli_device(o->device_name, &dev_rc);
    if (!*dev) {
        swa_case_list_free(all);
        return dev_rc;
    }
    return 0;
}

/* Runs (c, b) and reports whether it failed; out/lse copies on request. */
static swa_outcome run_case_once(const swa_run_config *cfg, const swa_case *c, const swa_backend *b,
                                 swa_result *r, swa_case_ctx *ctx_keep, void **out, float **lse)
{
    swa_case_ctx ctx;
    swa_error err = {0};
    if (swa_case_ctx_init(&ctx, c, cfg->device, &err) != SWA_OK) {
        memset(r, 0, sizeof *r);
        if (ctx_keep)
            memset(ctx_keep, 0, sizeof *ctx_keep);
        r->outcome = SWA_OUTCOME_ERROR;
        snprintf(r->message, sizeof r->message, "%s", err.message);
        return r->outcome;
    }
    swa_run_one(cfg, &ctx, b, r, out, lse);
    if (ctx_keep)
        *ctx_keep = ctx;
    else
        swa_case_ctx_free(&ctx);
    return r->outcome;
}

int swa_cmd_explain(int argc, char **argv, const char *prog)
{
    one_case_opts o;
    int rc = parse_one_case(argc, argv, &o, "explain", false);
    if (rc == -1) {
        printf("usage: swadiff explain CASE_ID [--backend B] [--mutant M] [--device D] [CASES...]\n\n"
               "Runs the case (found by exact id in CASES, default ./cases), and for each failing\n"
               "backend scores its output against reference variants (window L-1, L+1, none,\n"
               "tile-granular start, request-anchored, top-left alignment, soft cap before the\n"
               "mask or missing) and names the one that matches.\n");
        return SWA_EXIT_OK;
    }
    if (rc)
        return rc;
    swa_case_list all = {0};
    const swa_case *c;
    const swa_device_ops *dev;
    if ((rc = open_one_case(&o, "explain", &all, &c, &dev)) != 0)
        return rc;
    swa_run_config cfg = {.device = dev, .mutant = o.mutant, .quiet = true, .no_isolate = true, .argv0 = prog};
    int n, failures = 0, errors = 0;
    const swa_backend *const *bs = swa_backends(&n);
    for (int i = 0; i < n; i++) {
        if (!(c->backends & bs[i]->flag) || (o.backend && strcmp(o.backend, bs[i]->name)))
            continue;
        swa_case_ctx ctx;
        swa_result r;
        void *out = NULL;
        float *lse = NULL;
        swa_outcome oc = run_case_once(&cfg, c, bs[i], &r, &ctx, &out, &lse);
        printf("%s [%s on %s]: %s — %s\n", c->id, bs[i]->name, dev->name, swa_outcome_name(oc), r.message);
        if (oc == SWA_OUTCOME_FAILED && out) {
            failures++;
            swa_explanation ex;
            swa_error err = {0};
            if (swa_explain(&ctx, &r.tol, out, lse, bs[i]->lse_base, &ex, &err) != SWA_OK) {
                printf("  explain failed: %s\n", err.message);
            } else {
                printf("  diagnosis: %s\n", ex.verdict);
                for (int h = 0; h < ex.count; h++)
                    printf("    %6.2f%%  %s%s\n", 100 * ex.scores[h].ratio, ex.scores[h].name,
                           h == ex.best ? "  <- best" : "");
                printf("    %6.2f%%  (the spec)\n", 100 * ex.spec_ratio);
            }
        } else if (oc == SWA_OUTCOME_ERROR) {
            errors++;
        }
        swa_case_ctx_free(&ctx);
        swa_compare_result_free(&r.cmp);
        free(out);
        free(lse);
    }
    swa_case_list_free(&all);
    return failures ? SWA_EXIT_MISMATCH : errors ? SWA_EXIT_RUNTIME : SWA_EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * shrink */

static bool still_fails(const swa_run_config *cfg, const swa_case *c, const swa_backend *b, int *tries)
{
    swa_result r;
    (*tries)++;
    swa_outcome oc = run_case_once(cfg, c, b, &r, NULL, NULL, NULL);
    swa_compare_result_free(&r.cmp);
    return oc == SWA_OUTCOME_FAILED;
}

/* Replaces *cur with cand when cand still fails; frees cand otherwise. */
static bool try_candidate(const swa_run_config *cfg, swa_case *cur, swa_case *cand, const swa_backend *b,
                          int *tries)
{
    if (b->supports(cand, cfg->device->kind, (char[256]){0}, 256) == NULL && still_fails(cfg, cand, b, tries)) {
        swa_case_free(cur);
        *cur = *cand;
        return true;
    }
    swa_case_free(cand);
    return false;
}

int swa_cmd_shrink(int argc, char **argv, const char *prog)
{
    one_case_opts o;
    int rc = parse_one_case(argc, argv, &o, "shrink", true);
    if (rc == -1) {
        printf("usage: swadiff shrink CASE_ID --backend B [--mutant M] [--device D] [--out FILE] [CASES...]\n\n"
               "Reduces a failing case (one request, fewest heads, smallest head_dim, bisected\n"
               "lengths, smallest page size) while it still fails, writes the minimal case as a\n"
               "case file (default ./shrunk-<name>.json) and prints the command that reruns it.\n");
        return SWA_EXIT_OK;
    }
    if (rc)
        return rc;
    swa_case_list all = {0};
    const swa_case *orig;
    const swa_device_ops *dev;
    if ((rc = open_one_case(&o, "shrink", &all, &orig, &dev)) != 0)
        return rc;
    const swa_backend *b = swa_backend_by_name(o.backend);
    swa_run_config cfg = {.device = dev, .mutant = o.mutant, .quiet = true, .no_isolate = true, .argv0 = prog};
    int tries = 0;
    if (!(orig->backends & b->flag)) {
        fprintf(stderr, "swadiff shrink: case %s does not run backend %s\n", o.id, o.backend);
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    if (!still_fails(&cfg, orig, b, &tries)) {
        fprintf(stderr, "swadiff shrink: %s passes on %s with %s%s%s: nothing to shrink\n", o.id, o.backend,
                dev->name, o.mutant ? " under mutant " : "", o.mutant ? swa_mutant_get(o.mutant)->name : "");
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    swa_case cur, cand;
    if (swa_case_copy(&cur, orig) != 0) {
        swa_case_list_free(&all);
        return SWA_EXIT_RUNTIME;
    }
    cur.backends = b->flag;
    bool changed = true;
    while (changed) {
        changed = false;
        /* one request */
        for (int r = 0; cur.num_requests > 1 && r < cur.num_requests; r++) {
            if (swa_case_copy(&cand, &cur) != 0) break;
            cand.num_requests = 1;
            cand.qo_len[0] = cur.qo_len[r];
            cand.kv_len[0] = cur.kv_len[r];
            if (cand.cuda_graph) cand.cuda_graph = false;
            if (try_candidate(&cfg, &cur, &cand, b, &tries)) { changed = true; break; }
        }
        /* drop half of the requests (keeps a batch when one alone passes) */
        if (cur.num_requests > 2) {
            if (swa_case_copy(&cand, &cur) == 0) {
                cand.num_requests = cur.num_requests / 2 + (cur.cuda_graph ? 1 : 0);
                if (cand.cuda_graph && cand.graph_capture_requests >= cand.num_requests)
                    cand.graph_capture_requests = cand.num_requests - 1;
                if (cand.num_requests < cur.num_requests && try_candidate(&cfg, &cur, &cand, b, &tries))
                    changed = true;
                else if (cand.num_requests >= cur.num_requests)
                    swa_case_free(&cand);
            }
        }
        /* fewer heads: one kv head, then smaller groups */
        if (cur.num_kv_heads > 1 && swa_case_copy(&cand, &cur) == 0) {
            int group = cur.num_qo_heads / cur.num_kv_heads;
            cand.num_kv_heads = 1;
            cand.num_qo_heads = group;
            changed |= try_candidate(&cfg, &cur, &cand, b, &tries);
        }
        if (cur.num_qo_heads > cur.num_kv_heads && swa_case_copy(&cand, &cur) == 0) {
            int group = cur.num_qo_heads / cur.num_kv_heads;
            cand.num_qo_heads = cur.num_kv_heads * (group / 2 > 0 ? group / 2 : 1);
            changed |= try_candidate(&cfg, &cur, &cand, b, &tries);
        }
        /* smallest head_dim */
        static const int dims[] = {64, 128};
        for (int d = 0; d < 2; d++)
            if (dims[d] < cur.head_dim && swa_case_copy(&cand, &cur) == 0) {
                cand.head_dim = dims[d];
                cand.sm_scale = cur.sm_scale; /* keep the logit scale the failure was seen with */
                if (try_candidate(&cfg, &cur, &cand, b, &tries)) { changed = true; break; }
            }
        /* bisect lengths: shorter prefix, then fewer new tokens */
        for (int r = 0; r < cur.num_requests; r++) {
            int prefix = cur.kv_len[r] - cur.qo_len[r];
            if (prefix > 0 && swa_case_copy(&cand, &cur) == 0) {
                cand.kv_len[r] = cur.qo_len[r] + prefix / 2;
                changed |= try_candidate(&cfg, &cur, &cand, b, &tries);
            }
            if (cur.qo_len[r] > 1 && swa_case_copy(&cand, &cur) == 0) {
                int cut = cur.qo_len[r] - cur.qo_len[r] / 2;
                cand.qo_len[r] = cur.qo_len[r] / 2;
                cand.kv_len[r] = cur.kv_len[r] - cut;
                changed |= try_candidate(&cfg, &cur, &cand, b, &tries);
            }
        }
        /* smallest page size */
        if (cur.page_size > 1 && swa_case_copy(&cand, &cur) == 0) {
            cand.page_size = 1;
            if (try_candidate(&cfg, &cur, &cand, b, &tries)) {
                changed = true;
            } else if (cur.page_size > 2 && swa_case_copy(&cand, &cur) == 0) {
                cand.page_size = cur.page_size / 2;
                changed |= try_candidate(&cfg, &cur, &cand, b, &tries);
            }
        }
    }

    char path[SWA_PATH_MAX];
    if (o.out_path)
        snprintf(path, sizeof path, "%s", o.out_path);
    else
        snprintf(path, sizeof path, "shrunk-%s.json", cur.name);
    snprintf(cur.name, sizeof cur.name, "%s_shrunk", orig->name);
    swa_error err = {0};
    if (swa_case_write_json(&cur, path, &err) != SWA_OK) {
        fprintf(stderr, "swadiff shrink: %s\n", err.message);
        swa_case_free(&cur);
        swa_case_list_free(&all);
        return SWA_EXIT_RUNTIME;
    }
    int total_qo = swa_case_total_qo(&cur);
    printf("shrunk %s in %d runs: %d request%s, %d/%d heads, head_dim %d, page_size %d, %d query rows\n", o.id,
           tries, cur.num_requests, cur.num_requests == 1 ? "" : "s", cur.num_qo_heads, cur.num_kv_heads,
           cur.head_dim, cur.page_size, total_qo);
    for (int r = 0; r < cur.num_requests; r++)
        printf("  request %d: qo_len %d, kv_len %d\n", r, cur.qo_len[r], cur.kv_len[r]);
    printf("wrote %s\nrerun: %s run %s --backend %s --device %s%s%s\n", path, prog, path, o.backend, dev->name,
           o.mutant ? " --mutant " : "", o.mutant ? swa_mutant_get(o.mutant)->name : "");
    swa_case_free(&cur);
    swa_case_list_free(&all);
    return SWA_EXIT_OK;
}
