/* test_report_fixture.h — a fixed set of results for the report tests
 * (JSON, JUnit, HTML, console, partial runs), built the way the run loop
 * builds them: constructed outputs compared with swa_compare.
 *
 * Included by tests/test_report_*.c; not a test itself.
 */
#ifndef SWADIFF_TEST_REPORT_FIXTURE_H
#define SWADIFF_TEST_REPORT_FIXTURE_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include "harness/compare.h"
#include "harness/report.h"
#include "harness/results.h"

#define FIX_GUARD 32
#define FIX_PATTERN 0x5A
#define FIX_HOSTILE_ID "<script>alert(1)</script>&]]>\""

/* How the fake kernel goes wrong. */
typedef enum {
    FIX_EXACT,          /* output = reference rounded: passes */
    FIX_STALE_KEYS,     /* seed 000: error grows with the distance past the window */
    FIX_UNWRITTEN_ROWS, /* rows of the last request never written */
    FIX_LSE_UNWRITTEN,  /* out right, LSE never written (return_lse ignored) */
} fix_fault;

typedef struct fix_spec {
    const char *id, *file, *backend, *device, *mutant;
    swa_dtype dtype;
    int batch;
    int qo[4], kv[4];
    int heads, kv_heads, dim, window_left;
    bool lse;
    fix_fault fault;
} fix_spec;

/* deterministic "reference" values, exactly representable in bf16 */
static __attribute__((unused)) double fix_value(size_t i) { return (double)((int)((i * 37) % 29) - 14) / 16.0; }

/* Runs swa_compare on a constructed output and fills r like the run loop. */
static __attribute__((unused)) void fix_build(const fix_spec *s, swa_result *r)
{
    swa_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "%s", s->id);
    c.num_requests = s->batch;
    c.qo_len = (int *)s->qo;
    c.kv_len = (int *)s->kv;
    c.num_qo_heads = s->heads;
    c.num_kv_heads = s->kv_heads;
    c.head_dim = s->dim;
    c.dtype = s->dtype;
    c.causal = true;
    c.window_left = s->window_left;
    c.tol.mode = SWA_TOL_DEFAULT;
    swa_tolerance_defaults(s->dtype, &c.tol.atol, &c.tol.rtol, &c.tol.lse_atol);

    int rows = 0, indptr[5] = {0};
    for (int b = 0; b < s->batch; b++) {
        rows += s->qo[b];
        indptr[b + 1] = rows;
    }
    size_t elems = (size_t)rows * s->heads * s->dim, esize = swa_dtype_size(s->dtype);
    size_t lse_n = (size_t)rows * s->heads;
    double *ref = malloc(elems * sizeof *ref), *ref_lse = malloc(lse_n * sizeof *ref_lse);
    uint8_t *out = malloc(elems * esize + 2 * FIX_GUARD), *lse = malloc(lse_n * 4 + 2 * FIX_GUARD);
    memset(out, FIX_PATTERN, elems * esize + 2 * FIX_GUARD);
    memset(lse, FIX_PATTERN, lse_n * 4 + 2 * FIX_GUARD);
    memset(out + FIX_GUARD, 0xff, elems * esize);
    memset(lse + FIX_GUARD, 0xff, lse_n * 4);
    for (size_t i = 0; i < elems; i++)
        ref[i] = fix_value(i);
    for (size_t i = 0; i < lse_n; i++)
        ref_lse[i] = 1.5 + (double)(i % 7) * 0.25;

    int row = 0;
    for (int b = 0; b < s->batch; b++)
        for (int i = 0; i < s->qo[b]; i++, row++) {
            int p = s->kv[b] - s->qo[b] + i, dist = s->window_left >= 0 ? p - s->window_left : 0;
            for (int h = 0; h < s->heads; h++) {
                for (int d = 0; d < s->dim; d++) {
                    size_t k = ((size_t)row * s->heads + h) * s->dim + d;
                    double v = ref[k];
                    if (s->fault == FIX_STALE_KEYS && dist > 0)
                        v += (d % 2 ? -1 : 1) * 0.03 * dist * (1.0 + 0.15 * h);
                    if (s->fault == FIX_UNWRITTEN_ROWS && b == s->batch - 1)
                        continue;
                    swa_store(s->dtype, out + FIX_GUARD, k, (float)v);
                }
                if (s->fault != FIX_LSE_UNWRITTEN)
                    ((float *)(lse + FIX_GUARD))[(size_t)row * s->heads + h] =
                        (float)(ref_lse[(size_t)row * s->heads + h] / log(2.0));
            }
        }

    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", s->id);
    snprintf(r->file, sizeof r->file, "%s", s->file);
    snprintf(r->backend, sizeof r->backend, "%s", s->backend);
    snprintf(r->device, sizeof r->device, "%s", s->device);
    snprintf(r->mutant, sizeof r->mutant, "%s", s->mutant ? s->mutant : "");
    r->dtype = s->dtype;
    r->tol = c.tol;
    r->num_requests = s->batch;
    r->total_qo = rows;
    r->num_qo_heads = s->heads;
    r->num_kv_heads = s->kv_heads;
    r->head_dim = s->dim;
    r->window_left = s->window_left;
    r->duration = 0.25;
    snprintf(r->reproduce, sizeof r->reproduce, "swadiff run --backend %s --device %s --filter '%s'%s%s", s->backend,
             s->device, s->id, s->mutant ? " --mutant " : "", s->mutant ? s->mutant : "");
    swa_error err = {0};
    swa_status st = swa_compare(&c, indptr, out, elems * esize, s->lse ? (const float *)lse : NULL,
                                s->lse ? lse_n * 4 : 0, FIX_GUARD, FIX_PATTERN, 2.0, ref, s->lse ? ref_lse : NULL, NULL,
                                &r->cmp, &err);
    if (st != SWA_OK) {
        fprintf(stderr, "fixture: swa_compare failed: %s\n", err.message);
        abort();
    }
    r->has_compare = true;
    r->outcome = swa_compare_passed(&r->cmp) ? SWA_OUTCOME_PASSED : SWA_OUTCOME_FAILED;
    swa_compare_first_line(&r->cmp, r->message, sizeof r->message);
    free(ref);
    free(ref_lse);
    free(out);
    free(lse);
}

static __attribute__((unused)) void fix_environment(swa_environment *env)
{
    memset(env, 0, sizeof *env);
    snprintf(env->harness_version, sizeof env->harness_version, "0.1.0");
    snprintf(env->git_revision, sizeof env->git_revision, "0123456789ab");
    snprintf(env->host, sizeof env->host, "ci-runner-7");
    snprintf(env->devices, sizeof env->devices, "host: emulated H200 (132 SMs)\ncuda: not built");
    snprintf(env->toolkit, sizeof env->toolkit, "gcc 12.2, OpenBLAS 0.3.21");
    snprintf(env->command_line, sizeof env->command_line, "swadiff run cases/ --report out");
    /* report 1.6: the GPU the launch choices were made for */
    snprintf(env->launch_target, sizeof env->launch_target,
             "portable=0;wgmma=1;sm_count=132;prefill_engine=2;rows_per_warp=32;decode_warps=2;ws_ctas=0");
}

/* What a `swadiff run cases/ --shard I/N` records (report 1.4): the
 * fixture's results are one unsharded run (1/1) of this selection. */
static __attribute__((unused)) void fix_selection(swa_selection *sel, int index, int count)
{
    memset(sel, 0, sizeof *sel);
    sel->shard_index = index;
    sel->shard_count = count;
    sel->cases_selected = 6;
    snprintf(sel->case_files_digest, sizeof sel->case_files_digest, "0123456789abcdef");
    snprintf(sel->case_ids_digest, sizeof sel->case_ids_digest, "fedcba9876543210");
    snprintf(sel->paths, sizeof sel->paths, "cases/");
    snprintf(sel->device, sizeof sel->device, "host");
}

/* The six results every report test uses, in run order. */
static __attribute__((unused)) void fix_results(swa_run_results *rr)
{
    static const fix_spec specs[] = {
        {"seeds/000_paged_prefill:extend=[6,8,12]", "cases/seeds/000_paged_prefill.json", "prefill", "host",
         "mask_compiled_out", SWA_DTYPE_BF16, 3, {6, 8, 12}, {6, 12, 32}, 4, 1, 8, 4, false, FIX_STALE_KEYS},
        {"decode/window_sweep:window_left=31,dtype=fp16", "cases/decode/window_sweep.json", "decode_fa2", "host", NULL,
         SWA_DTYPE_FP16, 4, {1, 1, 1, 1}, {100, 37, 1, 513}, 8, 2, 4, 31, true, FIX_EXACT},
        {FIX_HOSTILE_ID, "cases/evil/\"quotes\"&<tags>.json", "decode_fa2", "host", NULL, SWA_DTYPE_FP32, 2, {1, 1},
         {9, 40}, 2, 1, 4, 8, false, FIX_UNWRITTEN_ROWS},
        {"decode/aiter_lse:window_left=0", "cases/decode/aiter_lse.json", "decode_aiter", "host", "return_lse_ignored",
         SWA_DTYPE_FP16, 2, {1, 1}, {7, 3}, 4, 1, 4, 0, true, FIX_LSE_UNWRITTEN},
    };
    memset(rr, 0, sizeof *rr);
    fix_environment(&rr->env);
    fix_selection(&rr->selection, 1, 1);
    rr->started = 1764493224.0; /* 2025-11-30T09:00:24Z */
    rr->duration = 12.5;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        swa_result r;
        fix_build(&specs[i], &r);
        swa_run_results_add(rr, &r);
    }
    swa_result *hostile = &rr->items[2];
    /* a control character and a stray byte from a case file's message */
    snprintf(hostile->diagnosis, sizeof hostile->diagnosis, "rows of request 1 never written \x01 (bell\x07) \xff end");

    /* a kernel name with markup and a control character (report 1.3) */
    snprintf(hostile->kernel, sizeof hostile->kernel, "decode_fa2 <b>&\"warps\"</b> \x01");

    /* --repeat 20 and a run that differed (report 1.4) */
    swa_result *sweep = &rr->items[1];
    sweep->repeat = 20;
    sweep->nondet = (swa_nondet){.runs_differing = 3, .first_run = 4, .first_index = {2, 0, 0, 5, 17},
                                 .worst_run = 9, .elements = 96, .total = 512, .nonfinite = 2,
                                 .lse_entries = 6, .lse_total = 32, .guard_bytes = 0, .max_abs_diff = 0.125,
                                 .max_abs_index = {3, 0, 512, 7, 3}, .max_abs_run = 9};

    swa_result *seed = &rr->items[0];
    snprintf(seed->diagnosis, sizeof seed->diagnosis,
             "matches the reference with a tile-granular window (16-row tiles, KV start aligned to 16) and no "
             "per-element mask: rows past the window attend to stale keys");
    snprintf(seed->kernel, sizeof seed->kernel,
             "prefill wgmma-ws: 2 consumer warpgroups + producer, 5-stage ring, K/V by cp.async");
    /* report 1.6: what it launched, and a prediction that differs */
    snprintf(seed->launch, sizeof seed->launch,
             "prefill.kernel=mma_sync_16+wgmma_ws_128;prefill.grid=persistent;prefill.sub_tiles=1;prefill.merge=none;"
             "prefill.head_dim=128;prefill.dtype=bf16");
    snprintf(seed->launch_predicted, sizeof seed->launch_predicted, "prefill.kernel=wgmma_ws_128;prefill.grid=per_item");

    swa_result e, s;
    memset(&e, 0, sizeof e);
    snprintf(e.id, sizeof e.id, "decode/cuda_graph:batch=8");
    snprintf(e.file, sizeof e.file, "cases/decode/cuda_graph.json");
    snprintf(e.backend, sizeof e.backend, "decode_aiter");
    snprintf(e.device, sizeof e.device, "host");
    e.dtype = SWA_DTYPE_BF16;
    e.outcome = SWA_OUTCOME_ERROR;
    e.duration = 0.001;
    e.num_requests = 8;
    e.total_qo = 8;
    e.num_qo_heads = 8;
    e.num_kv_heads = 1;
    e.head_dim = 128;
    e.window_left = -1;
    swa_tolerance_defaults(e.dtype, &e.tol.atol, &e.tol.rtol, &e.tol.lse_atol);
    snprintf(e.message, sizeof e.message,
             "decode_aiter: incompatible with CUDA-graph capture: the launch grid is sized from per-plan scalars "
             "(max_kv_len, max_blocks_per_seq) baked into the captured graph; use decode_fa2 or auto");
    snprintf(e.warnings, sizeof e.warnings, "decode_aiter: return_lse requested: served by the shadow decode_fa2 plan");
    snprintf(e.reproduce, sizeof e.reproduce, "swadiff run --backend decode_aiter --filter 'decode/cuda_graph:batch=8'");
    swa_run_results_add(rr, &e);

    s = e;
    snprintf(s.id, sizeof s.id, "models/gemma3_1b:prompt=1500");
    snprintf(s.file, sizeof s.file, "cases/models/gemma3_1b.json");
    snprintf(s.backend, sizeof s.backend, "prefill");
    snprintf(s.device, sizeof s.device, "cuda");
    s.outcome = SWA_OUTCOME_SKIPPED;
    s.warnings[0] = '\0';
    snprintf(s.message, sizeof s.message, "no CUDA device: cudaGetDeviceCount returned 0");
    snprintf(s.reproduce, sizeof s.reproduce, "swadiff run --device cuda --filter 'models/gemma3_1b:prompt=1500'");
    swa_run_results_add(rr, &s);
    rr->exitcode = swa_run_results_summary(rr, NULL, NULL, NULL, NULL);
}

/* ---- small process helpers ------------------------------------------------------ */

/* Runs argv (no shell), captures stdout+stderr into buf.  Returns the exit
 * status, 127 when the program cannot be started. */
static __attribute__((unused)) int fix_run(char *const argv[], char *buf, size_t n)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 127;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t got;
    char sink[4096];
    while ((got = read(fds[0], len + 1 < n ? buf + len : sink, len + 1 < n ? n - len - 1 : sizeof sink)) > 0)
        if (len + 1 < n)
            len += (size_t)got;
    close(fds[0]);
    if (n)
        buf[len < n ? len : n - 1] = '\0';
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static __attribute__((unused)) char *fix_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

/* The JSON file at path, parsed (caller: cJSON_Delete); fails the test
 * when it cannot be read or is not JSON. */
static __attribute__((unused)) cJSON *fix_load_json(const char *path)
{
    char *text = fix_read_file(path);
    cr_assert_not_null(text, "cannot read %s", path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(j, "%s is not JSON", path);
    return j;
}

/* j written to path (formatted); j stays the caller's. */
static __attribute__((unused)) void fix_save_json(const char *path, const cJSON *j)
{
    char *text = cJSON_Print(j);
    cr_assert_not_null(text, "cannot print the JSON for %s", path);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    cJSON_free(text);
}

/* Temporary folders live until the test process exits (Criterion runs
 * each test in its own process); SWADIFF_KEEP_TEST_DIRS=1 keeps them for
 * a look after a failure. */
static char fix_dirs[16][256];
static int fix_ndirs;

static void fix_remove_dirs(void)
{
    if (getenv("SWADIFF_KEEP_TEST_DIRS"))
        return;
    for (int i = 0; i < fix_ndirs; i++) {
        char out[256];
        char *argv[] = {"rm", "-rf", fix_dirs[i], NULL};
        fix_run(argv, out, sizeof out);
    }
    fix_ndirs = 0;
}

static __attribute__((unused)) void fix_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/swadiff-report-test-XXXXXX");
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        abort();
    }
    if (fix_ndirs == 0)
        atexit(fix_remove_dirs);
    if (fix_ndirs < 16)
        snprintf(fix_dirs[fix_ndirs++], sizeof fix_dirs[0], "%s", buf);
}

/* Known failures (--xfail): the fixture's stale-keys prefill failure
 * again, marked (xfailed), and its exact decode, marked (xpassed). */
static __attribute__((unused)) void fix_add_known_failures(swa_run_results *rr)
{
    swa_result x = rr->items[0], p = rr->items[1];
    x.cmp.row_head_ratio = NULL; /* no shared arrays: the copies own nothing */
    x.has_compare = false;
    p.cmp.row_head_ratio = NULL;
    p.has_compare = false;
    snprintf(x.id, sizeof x.id, "seeds/000_paged_prefill:known");
    snprintf(x.xfail, sizeof x.xfail, "stale keys past the window (issue #12)");
    x.xfail_was = SWA_OUTCOME_FAILED;
    x.outcome = SWA_OUTCOME_XFAILED;
    snprintf(p.id, sizeof p.id, "decode/window_sweep:known");
    snprintf(p.xfail, sizeof p.xfail, "fixed in 0.7.3 <b>&\"</b>");
    p.xfail_was = SWA_OUTCOME_PASSED;
    p.outcome = SWA_OUTCOME_XPASSED;
    p.repeat = 1;
    memset(&p.nondet, 0, sizeof p.nondet);
    swa_run_results_add(rr, &x);
    swa_run_results_add(rr, &p);
}

#endif /* SWADIFF_TEST_REPORT_FIXTURE_H */
