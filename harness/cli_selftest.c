/* cli_selftest.c — `swadiff selftest`: the case library run unmutated and
 * under every mutant, with the kill matrix (mutant x case file, with the
 * mismatch ratio that killed it).  It exits 0 only if the unmutated run
 * passes and every mutant is killed.
 *
 * Tested by tests/test_cli.c, tests/test_env_caps.c and tests/test_hostile_env.c; CI
 * runs `swadiff selftest --device host`. */
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

/* file's index in files (appended when new); max: the table's size, which
 * is returned, and nothing written, when a new file would not fit */
static int file_index(char files[][SWA_PATH_MAX], int *nfiles, int max, const char *file)
{
    for (int i = 0; i < *nfiles; i++)
        if (!strcmp(files[i], file))
            return i;
    if (*nfiles >= max)
        return max;
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

/* ---------------------------------------------------------------------------
 * selftest, in three steps as `run`'s (cli_run.c): parse argv into
 * selftest_options, select (the cases, the device, the report folder) into
 * selftest_selection, run the mutants into selftest_tally and report.  Each
 * step returns an exit code, or SWA_CLI_GO_ON for the next; swa_cmd_selftest
 * frees everything in one place. */

enum { SELFTEST_FILES_MAX = 256 };

/* What the command line asked for. */
typedef struct selftest_options {
    const char *device_name, *report_dir;
    bool only[SWA_MUTANT_COUNT];    /* the --mutant NAMEs */
    bool any_only;                  /* a --mutant was given */
    int npaths;                     /* the CASES operands */
    char **paths;
} selftest_options;

/* What runs: the cases, the device, and the lock on the report folder. */
typedef struct selftest_selection {
    swa_case_list all;
    const swa_device_ops *dev;
    int lock_fd;                    /* -1: no --report, or not locked yet */
} selftest_selection;

/* What the runs found: the unmutated run and the kill matrix. */
typedef struct selftest_tally {
    swa_run_results baseline;       /* the unmutated results, for --report */
    kill_cell (*cells)[SELFTEST_FILES_MAX]; /* [mutant][case file] */
    int nfiles;                     /* the matrix's columns, in selftest_files */
    int baseline_bad, baseline_runs, baseline_skipped;
    char baseline_first[1024];      /* the unmutated run's first failure */
    double t0;
    cJSON *root;                    /* selftest.json */
} selftest_tally;

static char selftest_files[SELFTEST_FILES_MAX][SWA_PATH_MAX];

/* argv into o, which starts zeroed. */
static int selftest_parse(int argc, char **argv, selftest_options *o)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'},
                                         {"mutant", required_argument, 0, 'm'},
                                         {"report", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    o->device_name = "auto";
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:m:r:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': o->device_name = optarg; break;
        case 'm': {
            swa_mutant m = swa_mutant_by_name(optarg);
            if (m == SWA_MUTANT_COUNT || m == SWA_MUTANT_NONE || m == SWA_MUTANT_DEVICE_FAULT) {
                fprintf(stderr, "swadiff selftest: --mutant %s: unknown (see `swadiff list mutants`)\n", optarg);
                return SWA_EXIT_USAGE;
            }
            o->only[m] = o->any_only = true;
            break;
        }
        case 'r': o->report_dir = optarg; break;
        case 'h': return selftest_usage(stdout);
        default: return selftest_usage(stderr);
        }
    }
    o->npaths = argc - optind;
    o->paths = argv + optind;
    return SWA_CLI_GO_ON;
}

/* The cases, the device, and the report folder, in the order of their
 * checks; the environment goes into baseline, whose report the lock guards. */
static int selftest_select(const selftest_options *o, selftest_selection *s, swa_run_results *baseline, int argc,
                           char **argv, const char *prog)
{
    int rc = swa_cli_load_cases(o->npaths, o->paths, &s->all);
    if (rc)
        return rc;
    /* a mutant is killed by the reference comparison; the invariance checks
     * (a backend against itself, docs/invariance.md) are `run`'s and would
     * multiply every mutant's runs, so selftest leaves them out */
    for (int i = 0; i < s->all.count; i++)
        s->all.cases[i].invariance = 0;
    int dev_rc = SWA_EXIT_USAGE;
    s->dev = swa_cli_device(o->device_name, &dev_rc);
    if (!s->dev)
        return dev_rc;

    /* the report folder is made and locked before the mutants run (minutes
     * on the library), as a run's is: a folder that cannot be written, or
     * that a run writes, was found only at the end */
    swa_cli_environment(&baseline->env, s->dev, argc, argv, prog);
    if (o->report_dir && (s->lock_fd = swa_report_lock_dir(o->report_dir, "--report", &baseline->env)) < 0)
        return SWA_EXIT_USAGE;
    return SWA_CLI_GO_ON;
}

/* Whether mutant m runs on case c at all. */
static bool selftest_runs_mutant(const selftest_options *o, int m, const swa_case *c)
{
    if (m != SWA_MUTANT_NONE && o->any_only && !o->only[m])
        return false;
    if (m == SWA_MUTANT_DEVICE_FAULT) /* crashes on purpose: tested by the fault-isolation tests */
        return false;
    if (m != SWA_MUTANT_NONE && !mutant_touches((swa_mutant)m, c->backends))
        return false;
    return true;
}

/* One mutated result into its kill cell. */
static void selftest_count_kill(kill_cell *k, const swa_result *r, bool dead)
{
    k->runs++;
    if (!dead)
        return;
    k->killed++;
    double ratio = r->has_compare ? r->cmp.ratio : 0;
    if (r->has_compare && r->cmp.lse_compared && r->cmp.lse_total)
        ratio = ratio > (double)r->cmp.lse_mismatched / r->cmp.lse_total
                    ? ratio : (double)r->cmp.lse_mismatched / r->cmp.lse_total;
    if (ratio > k->ratio)
        k->ratio = ratio;
    if (!r->has_compare || r->cmp.guard_violation || r->cmp.unwritten)
        k->guard = true;
}

/* One result of case c on backend b under mutant m into t. */
static void selftest_count(const selftest_options *o, selftest_tally *t, int m, int fi, const swa_case *c,
                           const swa_backend *b, const swa_result *r)
{
    bool dead = r->outcome == SWA_OUTCOME_FAILED || r->outcome == SWA_OUTCOME_ERROR;
    if (m == SWA_MUTANT_NONE && o->report_dir) {
        swa_result copy = *r;
        if (swa_compare_result_copy(&copy.cmp, &r->cmp) == 0)
            swa_run_results_add(&t->baseline, &copy);
    }
    if (m == SWA_MUTANT_NONE) {
        /* a skip here is one the case expects (expect_skip):
         * any other skip of a backend the case names is a
         * failure (harness/run.c), and kills the baseline */
        t->baseline_runs++;
        t->baseline_skipped += r->outcome == SWA_OUTCOME_SKIPPED;
        if (dead) {
            t->baseline_bad++;
            if (!t->baseline_first[0])
                snprintf(t->baseline_first, sizeof t->baseline_first, "%s [%s]: %s", c->id, b->name, r->message);
        }
    } else if (r->outcome != SWA_OUTCOME_SKIPPED) {
        selftest_count_kill(&t->cells[m][fi], r, dead);
    }
}

/* Case c, from case file fi, unmutated and under every mutant that touches it. */
static void selftest_run_case(const selftest_options *o, const selftest_selection *s, selftest_tally *t,
                              const swa_case *c, int fi, swa_run_config *cfg)
{
    swa_case_ctx ctx;
    swa_error err = {0};
    if (swa_case_ctx_init(&ctx, c, s->dev, &err) != SWA_OK) {
        t->baseline_bad++;
        if (!t->baseline_first[0])
            snprintf(t->baseline_first, sizeof t->baseline_first, "%s: %s", c->id, err.message);
        return;
    }
    int n;
    const swa_backend *const *bs = swa_backends(&n);
    for (int m = 0; m < SWA_MUTANT_COUNT; m++) {
        if (!selftest_runs_mutant(o, m, c))
            continue;
        cfg->mutant = (swa_mutant)m;
        for (int b = 0; b < n; b++) {
            if (!(c->backends & bs[b]->flag))
                continue;
            swa_result r;
            swa_run_one(cfg, &ctx, bs[b], &r, NULL, NULL);
            selftest_count(o, t, m, fi, c, bs[b], &r);
            swa_compare_result_free(&r.cmp);
        }
    }
    swa_case_ctx_free(&ctx);
}

/* Every case, unmutated and under the mutants, into t. */
static int selftest_run_cases(const selftest_options *o, const selftest_selection *s, selftest_tally *t,
                              const char *prog)
{
    t->cells = calloc(SWA_MUTANT_COUNT, sizeof *t->cells);
    swa_run_config cfg = {.device = s->dev, .quiet = true, .no_isolate = true, .argv0 = prog};
    t->t0 = swa_now();
    t->baseline.started = t->t0;
    for (int ci = 0; ci < s->all.count; ci++) {
        const swa_case *c = &s->all.cases[ci];
        int fi = file_index(selftest_files, &t->nfiles, SELFTEST_FILES_MAX, c->file);
        if (fi >= SELFTEST_FILES_MAX) {
            fprintf(stderr, "swadiff selftest: more than 256 case files\n");
            return SWA_EXIT_USAGE;
        }
        selftest_run_case(o, s, t, c, fi, &cfg);
    }
    return SWA_CLI_GO_ON;
}

/* Mutant m's row of the matrix, printed and added to jm; whether it was killed. */
static bool selftest_mutant_row(const selftest_tally *t, int m, cJSON *jm)
{
    const swa_mutant_info *mi = swa_mutant_get((swa_mutant)m);
    bool killed = false;
    int runs = 0;
    char line[4096] = "", stem[128];
    size_t k = 0;
    cJSON *jo = cJSON_CreateObject();
    cJSON_AddStringToObject(jo, "name", mi->name);
    cJSON_AddNumberToObject(jo, "class", mi->bug_class);
    cJSON *jf = cJSON_AddArrayToObject(jo, "files");
    for (int f = 0; f < t->nfiles; f++) {
        const kill_cell *cell = &t->cells[m][f];
        runs += cell->runs;
        if (!cell->runs)
            continue;
        cJSON *jc = cJSON_CreateObject();
        cJSON_AddStringToObject(jc, "file", selftest_files[f]);
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
                                      file_stem(selftest_files[f], stem, sizeof stem), 100 * cell->ratio);
            else
                k += (size_t)snprintf(line + k, sizeof line - k, "%s%s: %s", k ? ", " : "",
                                      file_stem(selftest_files[f], stem, sizeof stem), "guard/error");
        }
    }
    cJSON_AddBoolToObject(jo, "killed", killed);
    cJSON_AddNumberToObject(jo, "results", runs);
    cJSON_AddItemToArray(jm, jo);
    printf("%-26s %-7s %s\n", mi->name, killed ? "yes" : "NO", killed ? line
           : runs ? "SURVIVED every case it ran on" : "no case exercises its backend");
    return killed;
}

/* The matrix, printed and into t->root; how many mutants survived. */
static int selftest_matrix(const selftest_options *o, const selftest_selection *s, selftest_tally *t)
{
    printf("swadiff selftest on %s: %d cases in %d files, %.1f s\n\n", s->dev->name, s->all.count, t->nfiles,
           swa_now() - t->t0);
    printf("unmutated: %d of %d results passed, %d skipped as their cases expect%s%s\n\n",
           t->baseline_runs - t->baseline_bad - t->baseline_skipped, t->baseline_runs, t->baseline_skipped,
           t->baseline_bad ? " — FIRST FAILURE: " : "", t->baseline_first);
    printf("%-26s %-7s %s\n", "mutant", "killed", "killed by (case file: largest mismatch ratio)");
    int survivors = 0;
    cJSON *root = t->root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "selftest_version", 1);
    cJSON_AddStringToObject(root, "device", s->dev->name);
    cJSON_AddNumberToObject(root, "cases", s->all.count);
    cJSON *jb = cJSON_AddObjectToObject(root, "unmutated");
    cJSON_AddNumberToObject(jb, "results", t->baseline_runs);
    cJSON_AddNumberToObject(jb, "failed", t->baseline_bad);
    cJSON_AddStringToObject(jb, "first_failure", t->baseline_first);
    cJSON *jfiles = cJSON_AddArrayToObject(root, "files"); /* the matrix's columns, in load order */
    for (int f = 0; f < t->nfiles; f++)
        cJSON_AddItemToArray(jfiles, cJSON_CreateString(selftest_files[f]));
    cJSON *jm = cJSON_AddArrayToObject(root, "mutants");
    for (int m = 1; m < SWA_MUTANT_COUNT; m++) {
        if ((o->any_only && !o->only[m]) || m == SWA_MUTANT_DEVICE_FAULT)
            continue;
        if (!selftest_mutant_row(t, m, jm))
            survivors++;
    }
    return survivors;
}

/* The unmutated run's report (with the kill matrix on top), the verdict and
 * selftest.json; the exit code. */
static int selftest_report(const selftest_options *o, selftest_tally *t, int survivors)
{
    bool ok = t->baseline_bad == 0 && survivors == 0;
    bool report_failed = false;
    if (o->report_dir) {
        /* the unmutated run's report, with the kill matrix on top (the
         * HTML writer draws it from the same data as selftest.json) */
        t->baseline.duration = swa_now() - t->t0;
        t->baseline.exitcode = ok ? SWA_EXIT_OK : SWA_EXIT_MISMATCH;
        t->baseline.kill_matrix = t->root;
        swa_error werr = {0};
        if (swa_report_write_all(&t->baseline, o->report_dir, &werr) != SWA_OK) {
            fprintf(stderr, "swadiff selftest: --report %s: %s\n", o->report_dir, werr.message);
            report_failed = true;
        }
    }
    cJSON_AddNumberToObject(t->root, "survivors", survivors);
    cJSON_AddBoolToObject(t->root, "passed", ok);
    printf("\n%s: %d mutant%s survived; unmutated %s\n", ok ? "PASSED" : "FAILED", survivors,
           survivors == 1 ? "" : "s", t->baseline_bad ? "FAILED" : "passed");
    int exit_code = ok ? SWA_EXIT_OK : SWA_EXIT_MISMATCH;
    if (report_failed && exit_code == SWA_EXIT_OK)
        exit_code = SWA_EXIT_RUNTIME; /* the reports asked for are not there */
    if (o->report_dir) {
        char path[SWA_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/selftest.json", o->report_dir);
        char *text = cJSON_Print(t->root);
        if (!text || swa_write_text_file(path, text) != 0) {
            fprintf(stderr, "swadiff selftest: cannot write %s\n", path);
            exit_code = SWA_EXIT_RUNTIME;
        }
        cJSON_free(text);
    }
    return exit_code;
}

/* Runs the mutants into t, prints the matrix and writes the reports. */
static int selftest_execute(const selftest_options *o, const selftest_selection *s, selftest_tally *t,
                            const char *prog)
{
    int rc = selftest_run_cases(o, s, t, prog);
    if (rc != SWA_CLI_GO_ON)
        return rc;
    int survivors = selftest_matrix(o, s, t);
    return selftest_report(o, t, survivors);
}

int swa_cmd_selftest(int argc, char **argv, const char *prog)
{
    selftest_options o = {0};
    selftest_selection s = {.lock_fd = -1};
    selftest_tally t = {0};
    int rc = selftest_parse(argc, argv, &o);
    if (rc != SWA_CLI_GO_ON)
        goto out;
    rc = selftest_select(&o, &s, &t.baseline, argc, argv, prog);
    if (rc != SWA_CLI_GO_ON)
        goto out;
    rc = selftest_execute(&o, &s, &t, prog);
out:
    cJSON_Delete(t.root);
    swa_run_results_free(&t.baseline);
    if (s.lock_fd >= 0)
        close(s.lock_fd);
    free(t.cells);
    swa_case_list_free(&s.all);
    return rc;
}
