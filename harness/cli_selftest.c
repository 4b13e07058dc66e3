/* cli_selftest.c — `swadiff selftest`: the case library run unmutated and
 * under every mutant, with the kill matrix (mutant x case file, with the
 * mismatch ratio that killed it).  It exits 0 only if the unmutated run
 * passes and every mutant is killed.
 *
 * Tested by tests/test_detect.c; CI runs `swadiff selftest --device host`. */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness/cli.h"
#include "harness/explain.h"
#include "harness/report.h"
#include "harness/run.h"

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
    /* a mutant is killed by the reference comparison; the invariance checks
     * (a backend against itself, docs/invariance.md) are `run`'s and would
     * multiply every mutant's runs, so selftest leaves them out */
    for (int i = 0; i < all.count; i++)
        all.cases[i].invariance = 0;
    int dev_rc = SWA_EXIT_USAGE;
    const swa_device_ops *dev = swa_cli_device(device_name, &dev_rc);
    if (!dev) {
        swa_case_list_free(&all);
        return dev_rc;
    }

    /* the report folder is made and locked before the mutants run (minutes
     * on the library), as a run's is: a folder that cannot be written, or
     * that a run writes, was found only at the end */
    swa_run_results baseline = {0};
    swa_cli_environment(&baseline.env, dev, argc, argv, prog);
    int lock_fd = -1;
    if (report_dir && (lock_fd = swa_report_lock_dir(report_dir, "--report", &baseline.env)) < 0) {
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }

    static char files[256][SWA_PATH_MAX];
    int nfiles = 0;
    kill_cell(*cells)[256] = calloc(SWA_MUTANT_COUNT, sizeof *cells);
    int baseline_bad = 0, baseline_runs = 0, baseline_skipped = 0;
    char baseline_first[1024] = "";
    swa_run_config cfg = {.device = dev, .quiet = true, .no_isolate = true, .argv0 = prog};
    double t0 = swa_now();
    baseline.started = t0;

    int n;
    const swa_backend *const *bs = swa_backends(&n);
    for (int ci = 0; ci < all.count; ci++) {
        const swa_case *c = &all.cases[ci];
        int fi = file_index(files, &nfiles, c->file);
        if (fi >= 256) {
            fprintf(stderr, "swadiff selftest: more than 256 case files\n");
            if (lock_fd >= 0)
                close(lock_fd);
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
                    /* a skip here is one the case expects (expect_skip):
                     * any other skip of a backend the case names is a
                     * failure (harness/run.c), and kills the baseline */
                    baseline_runs++;
                    baseline_skipped += r.outcome == SWA_OUTCOME_SKIPPED;
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
    printf("unmutated: %d of %d results passed, %d skipped as their cases expect%s%s\n\n",
           baseline_runs - baseline_bad - baseline_skipped, baseline_runs, baseline_skipped,
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
    cJSON *jfiles = cJSON_AddArrayToObject(root, "files"); /* the matrix's columns, in load order */
    for (int f = 0; f < nfiles; f++)
        cJSON_AddItemToArray(jfiles, cJSON_CreateString(files[f]));
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
    bool report_failed = false;
    if (report_dir) {
        /* the unmutated run's report, with the kill matrix on top (the
         * HTML writer draws it from the same data as selftest.json) */
        baseline.duration = swa_now() - t0;
        baseline.exitcode = ok ? SWA_EXIT_OK : SWA_EXIT_MISMATCH;
        baseline.kill_matrix = root;
        swa_error werr = {0};
        if (swa_report_write_all(&baseline, report_dir, &werr) != SWA_OK) {
            fprintf(stderr, "swadiff selftest: --report %s: %s\n", report_dir, werr.message);
            report_failed = true;
        }
    }
    swa_run_results_free(&baseline);
    cJSON_AddNumberToObject(root, "survivors", survivors);
    cJSON_AddBoolToObject(root, "passed", ok);
    printf("\n%s: %d mutant%s survived; unmutated %s\n", ok ? "PASSED" : "FAILED", survivors,
           survivors == 1 ? "" : "s", baseline_bad ? "FAILED" : "passed");
    int exit_code = ok ? SWA_EXIT_OK : SWA_EXIT_MISMATCH;
    if (report_failed && exit_code == SWA_EXIT_OK)
        exit_code = SWA_EXIT_RUNTIME; /* the reports asked for are not there */
    if (report_dir) {
        char path[SWA_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/selftest.json", report_dir);
        char *text = cJSON_Print(root);
        if (!text || swa_write_text_file(path, text) != 0) {
            fprintf(stderr, "swadiff selftest: cannot write %s\n", path);
            exit_code = SWA_EXIT_RUNTIME;
        }
        cJSON_free(text);
    }
    cJSON_Delete(root);
    if (lock_fd >= 0)
        close(lock_fd);
    free(cells);
    swa_case_list_free(&all);
    return exit_code;
}

