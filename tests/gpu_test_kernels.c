/* gpu_test_kernels.c — the CUDA kernels (prefill paged/ragged, decode_fa2
 * plain and CUDA-graph, decode_aiter) run through the backends' real plans
 * on the GPU, checked against a double-precision attention loop
 * (tests/test_backend_fixture.h) and against the host emulation of the same
 * plans: window edges, GQA, page sizes 1/16/odd, NHD/HND, head_dim
 * 64/128/256, split and unsplit plans, fp16/bf16, soft cap, poisoned outputs
 * with guard bytes; and every kernel-level mutant doing on the GPU what it
 * does in the host emulation.
 *
 * Needs a CUDA device: exits 77 (skipped) without one.  The device check
 * runs in a child process so Criterion's per-test forks start with a clean
 * CUDA state.
 *
 *   ctest --test-dir build -L gpu --output-on-failure
 *   ./build/tests/gpu_test_kernels --verbose          (one line per case) */
#include <criterion/criterion.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/prefill.h"
#include "tests/test_backend_fixture.h"

/* the CUDA device of this binary (NULL when built without CUDA: skipped) */
#define CUDA_DEV swa_device_get(SWA_DEVICE_CUDA)

/* -------------------------------------------------------------------------
 * running one backend on one device */

typedef struct gpu_shape {
    const char *name;
    int num_requests;
    int qo_len[8], kv_len[8]; /* qo_len all 0: decode (1 each) */
    int hq, hk, head_dim, page_size, window_left;
    swa_dtype dtype;
    swa_layout layout;
    swa_kv_mode kv_mode;
    bool noncausal;
    double soft_cap;
} gpu_shape;

static void shape_setup(fx *f, const gpu_shape *t, bool graph, int capture)
{
    static const int ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    bool decode = t->qo_len[0] == 0;
    fx_spec s = {.num_requests = t->num_requests, .qo_len = decode ? ones : t->qo_len, .kv_len = t->kv_len,
                 .num_qo_heads = t->hq, .num_kv_heads = t->hk, .head_dim = t->head_dim, .dtype = t->dtype,
                 .page_size = t->page_size, .layout = t->layout, .kv_mode = t->kv_mode,
                 .noncausal = t->noncausal, .window_left = t->window_left, .soft_cap = t->soft_cap,
                 .cuda_graph = graph, .graph_capture_requests = capture, .return_lse = true};
    fx_setup(f, &s);
}

/* What the planner chose, for failure messages. */
static void plan_summary(const swa_backend *b, const void *plan, char *buf, size_t n)
{
    if (b == &swa_backend_prefill) {
        const swa_prefill_plan *p = swa_prefill_plan_of(plan);
        snprintf(buf, n, "tile_q %d tile_kv %d split %d chunk %d work %d", p->cta_tile_q, p->cta_tile_kv,
                 p->split_kv, p->kv_chunk_size, p->num_work);
    } else if (b == &swa_backend_decode_fa2) {
        const swa_decode_fa2_plan *p = swa_decode_fa2_plan_of(plan);
        snprintf(buf, n, "split %d chunk %d work %d grid %d graph %d", p->split_kv, p->kv_chunk_size, p->num_work,
                 p->grid_work, p->graph);
    } else {
        const swa_decode_aiter_plan *p = swa_decode_aiter_plan_of(plan);
        snprintf(buf, n, "S %d partitions %d", p->sliding_window, p->max_num_partitions);
    }
}

/* Plans b for dev and runs it on fresh poisoned outputs (fx_run with a device). */
static swa_status run_on(fx *f, const swa_device_ops *dev, const swa_backend *b, swa_mutant m, bool return_lse,
                         char *summary, size_t summary_n, swa_error *err)
{
    fx_out_reset(f);
    swa_plan_opts o = {.device = dev, .mutant = m, .num_sms = 0, .warn = fx_warn, .warn_ctx = f};
    void *plan = NULL, *dev_in = NULL;
    swa_status st = b->plan(&f->c, &f->in, &o, &plan, err);
    if (st != SWA_OK)
        return st;
    if (summary)
        plan_summary(b, plan, summary, summary_n);
    st = dev->upload(&f->in, &dev_in, err);
    if (st == SWA_OK) {
        swa_run_opts r = {.window_left_set = true, .window_left = f->c.window_left, .return_lse = return_lse};
        st = b->run(plan, dev_in, &r, &f->o, err);
        dev->release(dev_in);
    }
    b->free(plan);
    return st;
}

static float *copy_out(const fx *f)
{
    float *c = malloc(sizeof(float) * (f->out_elems ? f->out_elems : 1));
    for (size_t i = 0; i < f->out_elems; i++)
        c[i] = swa_load(f->c.dtype, f->o.out, i);
    return c;
}

/* Elements where a and b differ by more than tol (NaN must match NaN). */
static long count_diff(const float *a, const float *b, size_t n, double tol, double *worst)
{
    long bad = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i])) {
            if (isnan(a[i]) != isnan(b[i]))
                bad++;
            continue;
        }
        double d = fabs((double)a[i] - b[i]);
        if (d > *worst)
            *worst = d;
        if (d > tol + tol * fabs(b[i]))
            bad++;
    }
    return bad;
}

/* The GPU's tolerance: P goes through the dtype into the tensor cores and
 * the softmax uses ex2.approx; the same envelope as the host emulation. */
static double gpu_tol(swa_dtype d) { return d == SWA_DTYPE_BF16 ? 8e-3 : 2e-3; }

/* Runs one shape on the GPU and on the host; checks the GPU against the
 * reference (output, LSE, guards) and against the host emulation. */
static void check_shape(const gpu_shape *t, const swa_backend *b, bool graph, int capture)
{
    fx f;
    shape_setup(&f, t, graph, capture);
    swa_error err = {0};
    char plan_cuda[160] = "", plan_host[160] = "";
    bool lse = b != &swa_backend_decode_aiter;
    swa_status st = run_on(&f, CUDA_DEV, b, SWA_MUTANT_NONE, lse, plan_cuda, sizeof plan_cuda, &err);
    cr_assert_eq(st, SWA_OK, "%s [%s %s %s hd%d ps%d L%d]: cuda run failed: %s", t->name, b->name,
                 swa_dtype_name(t->dtype), swa_layout_name(t->layout), t->head_dim, t->page_size, t->window_left,
                 err.message);
    double tol = gpu_tol(t->dtype), worst = 0;
    long bad = fx_out_mismatches(&f, tol, tol, &worst);
    cr_expect_eq(bad, 0, "%s [%s %s %s hd%d ps%d L%d; plan %s]: %ld of %zu elements off the reference, max err %g",
                 t->name, b->name, swa_dtype_name(t->dtype), swa_layout_name(t->layout), t->head_dim,
                 t->page_size, t->window_left, plan_cuda, bad, f.out_elems, worst);
    if (lse) {
        long lbad = fx_lse_mismatches(&f, 2.0, 1e-2);
        cr_expect_eq(lbad, 0, "%s [%s]: %ld of %zu LSE values off the reference", t->name, b->name, lbad,
                     f.lse_elems);
    }
    cr_expect(fx_guards_ok(&f), "%s [%s]: guard bytes around out/lse were written", t->name, b->name);
    float *gpu = copy_out(&f);

    st = run_on(&f, &swa_host_device_ops, b, SWA_MUTANT_NONE, lse, plan_host, sizeof plan_host, &err);
    cr_assert_eq(st, SWA_OK, "%s [%s]: host run failed: %s", t->name, b->name, err.message);
    cr_expect_str_eq(plan_cuda, plan_host, "%s [%s]: host and cuda got different plans", t->name, b->name);
    float *host = copy_out(&f);
    double worst_h;
    long hbad = count_diff(gpu, host, f.out_elems, 2 * tol, &worst_h);
    cr_expect_eq(hbad, 0, "%s [%s]: %ld elements differ from the host emulation (max %g)", t->name, b->name, hbad,
                 worst_h);
    if (criterion_options.logging_threshold <= CRITERION_INFO)
        cr_log_info("%-34s %-12s %s %s hd%-3d ps%-2d L%-5d plan {%s} max err %.2e (host diff %.2e)", t->name,
                    b->name, swa_dtype_name(t->dtype), swa_layout_name(t->layout), t->head_dim, t->page_size,
                    t->window_left, plan_cuda, worst, worst_h);
    free(gpu);
    free(host);
    fx_teardown(&f);
}

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define FP16 SWA_DTYPE_FP16
#define BF16 SWA_DTYPE_BF16
#define NHD SWA_LAYOUT_NHD
#define HND SWA_LAYOUT_HND
#define PAGED SWA_KV_PAGED
#define RAGGED SWA_KV_RAGGED

/* -------------------------------------------------------------------------
 * prefill */

static const gpu_shape prefill_shapes[] = {
    {"seed000 extend 6/8/12 L4 prefix", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, FP16},
    {"seed000 extend 6/8/12 L4 no prefix", 3, {6, 8, 12}, {6, 8, 12}, 4, 4, 64, 16, 4, BF16},
    {"long no-prefix above window", 1, {100}, {100}, 2, 2, 128, 16, 4, FP16},
    {"window 0 one key, page 5", 2, {9, 3}, {9, 40}, 4, 2, 64, 5, 0, FP16},
    {"no window GQA 8/2", 2, {17, 33}, {50, 33}, 8, 2, 64, 16, -1, BF16},
    {"window saturated, page 1", 1, {20}, {30}, 4, 4, 64, 1, 1000, FP16},
    {"HND page 7 window 31", 2, {40, 70}, {90, 70}, 4, 1, 128, 7, 31, FP16, HND},
    {"HND page 1 hd256 L63", 2, {30, 65}, {80, 65}, 4, 2, 256, 1, 63, BF16, HND},
    {"ragged window 4", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, FP16, NHD, RAGGED},
    {"ragged hd128 GQA 8/1 L127", 2, {300, 90}, {700, 90}, 8, 1, 128, 16, 127, BF16, NHD, RAGGED},
    {"non-causal window 5", 2, {10, 7}, {30, 7}, 2, 2, 64, 16, 5, FP16, NHD, PAGED, true},
    {"soft cap 50 window 16", 1, {48}, {80}, 4, 2, 64, 16, 16, BF16, NHD, PAGED, false, 50},
    {"soft cap 2 window 16 hd128", 1, {48}, {80}, 4, 2, 128, 16, 16, FP16, NHD, PAGED, false, 2},
    {"hd256 split long KV L512", 1, {24}, {1500}, 4, 1, 256, 16, 512, BF16},
    {"split no window", 1, {16}, {2000}, 2, 2, 64, 16, -1, FP16},
    {"split hd128 page 13 L1023", 2, {40, 8}, {3000, 2100}, 8, 2, 128, 13, 1023, FP16, HND},
    {"128-row tiles GQA 4, L255", 2, {260, 200}, {600, 200}, 16, 4, 128, 16, 255, FP16},
    {"128-row tiles hd64 no window", 1, {512}, {512}, 4, 4, 64, 16, -1, BF16},
    {"gemma-like hd256 G4 L512", 1, {700}, {700}, 4, 1, 256, 16, 512, BF16},
    {"mistral-like hd128 32/8 L4096", 1, {300}, {5000}, 32, 8, 128, 16, 4096, FP16},
};

Test(gpu_prefill, matches_reference_and_host_emulation)
{
    for (size_t n = 0; n < N_ELEMS(prefill_shapes); n++)
        check_shape(&prefill_shapes[n], &swa_backend_prefill, false, 0);
}

/* -------------------------------------------------------------------------
 * decode */

static const gpu_shape decode_shapes[] = {
    {"L0 one key", 3, {0}, {1, 17, 300}, 8, 2, 128, 16, 0, FP16},
    {"L31 page 16", 4, {0}, {5, 32, 33, 700}, 32, 8, 128, 16, 31, BF16},
    {"L127 page 1", 3, {0}, {100, 128, 129}, 4, 4, 64, 1, 127, FP16},
    {"L1023 page 7 HND", 3, {0}, {1000, 1024, 3001}, 16, 2, 128, 7, 1023, FP16, HND},
    {"saturated L4096", 2, {0}, {4000, 4097}, 8, 1, 64, 16, 4096, BF16},
    {"no window long", 2, {0}, {8000, 300}, 32, 8, 128, 16, -1, FP16},
    {"hd256 gemma 4/1 L512", 3, {0}, {1500, 513, 100}, 4, 1, 256, 16, 512, BF16},
    {"GQA 16 hd64 page 3", 2, {0}, {250, 999}, 16, 1, 64, 3, 200, FP16, HND},
    {"soft cap 50 L64", 2, {0}, {300, 65}, 8, 2, 128, 16, 64, BF16, NHD, PAGED, false, 50},
    {"GQA 32 (two row blocks)", 2, {0}, {600, 40}, 32, 1, 128, 16, 100, FP16},
};

Test(gpu_decode, fa2_matches_reference_and_host_emulation)
{
    for (size_t n = 0; n < N_ELEMS(decode_shapes); n++)
        check_shape(&decode_shapes[n], &swa_backend_decode_fa2, false, 0);
}

Test(gpu_decode, aiter_matches_reference_and_host_emulation)
{
    for (size_t n = 0; n < N_ELEMS(decode_shapes); n++)
        check_shape(&decode_shapes[n], &swa_backend_decode_aiter, false, 0);
}

Test(gpu_decode, fa2_graph_replay_with_larger_batch)
{
    /* captured with the first request(s), replayed on the whole batch */
    static const gpu_shape graph_shapes[] = {
        {"graph L31 capture 1 of 4", 4, {0}, {40, 700, 33, 2000}, 8, 2, 128, 16, 31, FP16},
        {"graph no window capture 2 of 3", 3, {0}, {100, 5000, 64}, 32, 8, 128, 16, -1, BF16},
        {"graph L1023 page 5 capture 1 of 3", 3, {0}, {3000, 10, 1500}, 4, 1, 64, 5, 1023, FP16, HND},
    };
    static const int capture[] = {1, 2, 1};
    for (size_t n = 0; n < N_ELEMS(graph_shapes); n++)
        check_shape(&graph_shapes[n], &swa_backend_decode_fa2, true, capture[n]);
}

/* The ordering of host -> device copies against the case's non-blocking
 * stream (backends/cuda/cuda_device.cu, the rule above upload_bytes).  A
 * copy on the legacy stream from pageable memory returns once its bytes are
 * staged; if the DMA is still queued when the graph starts on the
 * non-blocking stream, the replay reads the captured batch's plan arrays
 * and most requests stay unwritten.  It shows when many processes share the
 * GPU: on the H200 the pre-fix build failed 6 of 12 plain `--jobs 16` runs
 * of these two files (the run trust-2026-12-02, docs/evidence.md), while one
 * process replaying graphs 180 times under a copy load never did.  So the
 * test is the harness itself: both CUDA-graph files with 16 workers, every
 * pair repeated, bitwise against its first run and against the reference.
 * The binary and the source tree: $SWADIFF_BINARY and $SWADIFF_SOURCE_DIR
 * (a GPU machine running a bundle), or the build's. */
Test(gpu_ordering, graph_files_with_16_workers_repeated)
{
    const char *bin = getenv("SWADIFF_BINARY") ? getenv("SWADIFF_BINARY") : SWADIFF_BINARY;
    const char *src = getenv("SWADIFF_SOURCE_DIR") ? getenv("SWADIFF_SOURCE_DIR") : SWADIFF_SOURCE_DIR;
    const char *repeat = getenv("SWADIFF_ORDERING_REPEATS") ? getenv("SWADIFF_ORDERING_REPEATS") : "30";
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && log=$(mktemp) && '%s' run cases/cuda_graph.json cases/cuda_graph_models.json --device cuda "
             "--jobs 16 --repeat '%s' --quiet --no-explain > \"$log\" 2>&1; rc=$?; tail -4 \"$log\"; rm -f \"$log\"; "
             "exit $rc",
             src, bin, repeat);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "popen(%s)", cmd);
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    int st = pclose(p);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "PASSED: "),
              "the CUDA-graph files with --jobs 16 --repeat %s should pass (exit %d):\n%s", repeat,
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
}


/* -------------------------------------------------------------------------
 * kernel variants (backends/cuda tuning knobs; the tests above run the
 * defaults: the warp-specialised wgmma prefill engine where it applies
 * (compute capability 9.0, an sm_90a build), else mma.sync with 32 rows per
 * warp for 128-row tiles; 2-warp decode CTAs): the mma.sync engine, its
 * 64-row prefill CTAs, the wgmma engine by name and its grids, 4-warp
 * decode CTAs */

#ifdef SWADIFF_HAVE_CUDA /* the knobs exist only in a CUDA build (else main skips with 77) */
void swa_cuda_set_tuning(int prefill_rows_per_warp, int decode_warps); /* cuda_common.cu */
void swa_cuda_set_prefill_engine(int engine);                          /* cuda_common.cu */
int swa_cuda_prefill_wgmma_available(void);                            /* prefill.cu */
long swa_cuda_prefill_wgmma_launches(void);                            /* prefill.cu */
void swa_cuda_set_prefill_ws_ctas(int ctas);                          /* cuda_common.cu */
enum { WS_CTAS_PER_SM = 0, WS_CTAS_PER_ITEM = -1 }; /* its grids besides N CTAs (cuda_internal.cuh SWA_WS_CTAS_*) */

/* The mma.sync prefill engine on a GPU where the default is wgmma
 * (elsewhere it is the default and the tests above ran it): every prefill
 * shape, and its prefill mutants. */
Test(gpu_variants, prefill_mma_sync_engine)
{
    swa_cuda_set_prefill_engine(0);
    long before = swa_cuda_prefill_wgmma_launches();
    for (size_t n = 0; n < N_ELEMS(prefill_shapes); n++)
        check_shape(&prefill_shapes[n], &swa_backend_prefill, false, 0);
    cr_expect_eq(swa_cuda_prefill_wgmma_launches(), before, "prefill_engine 0 still reached the wgmma kernel");
}

Test(gpu_variants, prefill_one_m_tile_per_warp)
{
    swa_cuda_set_prefill_engine(0); /* the knob belongs to the mma.sync engine */
    swa_cuda_set_tuning(16, 2);
    for (size_t n = 0; n < N_ELEMS(prefill_shapes); n++)
        check_shape(&prefill_shapes[n], &swa_backend_prefill, false, 0);
}

/* The Hopper wgmma prefill engine (attn_engine_sm90.cuh) runs 64- and 128-row plan tiles of head_dim 64/128/256.  Every shape here
 * plans such tiles (average packed rows per request > 16), so each run
 * must reach the wgmma kernel: fp16 and bf16, head_dim 64, 128 and 256, causal
 * without a window, windows 0 / mid-tile / a whole 64- or 128-key tile /
 * long, non-causal
 * bands, GQA groups 1, 4, 8, page sizes 1, 16 and odd (5, 7, 13), NHD and
 * HND, ragged, split-KV, soft cap, 64-row tiles (one warpgroup). */
static const gpu_shape prefill_wgmma_shapes[] = {
    {"wg causal hd128 G4 no window", 1, {300}, {300}, 16, 4, 128, 16, -1, FP16},
    {"wg causal hd64 G1 window 0", 1, {200}, {200}, 2, 2, 64, 16, 0, BF16},
    {"wg window 37 mid-tile page 1", 2, {150, 90}, {400, 90}, 8, 8, 128, 1, 37, FP16},
    {"wg window 100 page 5 G4 hd64", 2, {130, 70}, {260, 200}, 4, 1, 64, 5, 100, BF16},
    {"wg window 64 (one tile) prefix", 1, {129}, {1000}, 4, 4, 128, 16, 64, FP16},
    {"wg window 128 (one 128-key tile)", 2, {257, 131}, {1201, 131}, 4, 4, 128, 16, 128, BF16},
    {"wg window 127 hd64 page 3", 1, {200}, {777}, 8, 2, 64, 3, 127, FP16},
    {"wg GQA 8 L255 HND page 7", 1, {100}, {900}, 32, 4, 128, 7, 255, BF16, HND},
    {"wg non-causal window 20 (64-row)", 2, {70, 33}, {150, 33}, 4, 4, 64, 16, 20, FP16, NHD, PAGED, true},
    {"wg non-causal no window hd128", 1, {90}, {300}, 8, 8, 128, 16, -1, BF16, NHD, PAGED, true},
    {"wg ragged bf16 hd128 G4 L63", 2, {200, 64}, {500, 64}, 16, 4, 128, 16, 63, BF16, NHD, RAGGED},
    {"wg ragged hd64 64-row tiles", 3, {20, 30, 40}, {100, 30, 300}, 2, 2, 64, 16, -1, FP16, NHD, RAGGED},
    {"wg split hd128 page 13 L1023", 2, {40, 8}, {3000, 2100}, 8, 2, 128, 13, 1023, FP16, HND},
    {"wg split bf16 hd64 no window", 1, {64}, {4000}, 8, 2, 64, 16, -1, BF16},
    {"wg soft cap 30 L16 hd128", 1, {96}, {160}, 8, 2, 128, 16, 16, BF16, NHD, PAGED, false, 30},
    {"wg soft cap 2 hd64 64-row", 1, {40}, {100}, 4, 4, 64, 16, 16, FP16, NHD, PAGED, false, 2},
    {"wg hd128 64-row window 10", 2, {50, 40}, {80, 40}, 4, 4, 128, 16, 10, BF16},
    {"wg mistral-like 32/8 L4096", 1, {300}, {5000}, 32, 8, 128, 16, 4096, FP16},
    /* page sizes 8, 32, 64 and above 64, NHD and HND, partial last tiles */
    {"wg page 64 HND L200", 2, {180, 70}, {700, 333}, 8, 2, 128, 64, 200, BF16, HND},
    {"wg page 128 G4 causal", 1, {256}, {1100}, 16, 4, 128, 128, -1, FP16},
    {"wg page 8 hd64 L63", 2, {100, 77}, {300, 200}, 4, 2, 64, 8, 63, FP16},
    {"wg page 32 HND split L500", 1, {48}, {3500}, 8, 2, 128, 32, 500, BF16, HND},
    /* head_dim 256 (one consumer warpgroup of 64 rows; a 128-row plan tile as two CTAs) */
    {"wg hd256 G2 window 100", 1, {200}, {600}, 8, 4, 256, 16, 100, FP16},
    {"wg hd256 split HND page 13 L1023", 2, {40, 8}, {3000, 2100}, 8, 2, 256, 13, 1023, BF16, HND},
    {"wg hd256 ragged G4 causal", 2, {150, 64}, {300, 64}, 8, 2, 256, 16, -1, FP16, NHD, RAGGED},
    {"wg hd256 soft cap 50 L32", 1, {96}, {200}, 4, 2, 256, 16, 32, BF16, NHD, PAGED, false, 50},
    {"wg hd256 page 64 HND L200", 1, {130}, {500}, 4, 2, 256, 64, 200, FP16, HND},
};

/* Turns the wgmma engine on: skipped on a GPU that is not compute
 * capability 9.0 (sm_90a code runs there only); on one that is, the build
 * must have it. */
static void wgmma_engine_on(void)
{
    char buf[256];
    CUDA_DEV->describe(buf, sizeof buf);
    if (!strstr(buf, ", cc 9.0,"))
        cr_skip_test("the wgmma prefill engine needs compute capability 9.0 (sm_90a): %s", buf);
    swa_cuda_set_prefill_engine(2);
    cr_assert_eq(swa_cuda_prefill_wgmma_available(), 1,
                 "compute capability 9.0, but the loaded image has no wgmma engine (build with "
                 "SWADIFF_CUDA_ARCHITECTURES=90a): %s",
                 buf);
}

/* Every wgmma shape, each of which must reach the wgmma kernel; note: a
 * text the kernel of each 128-row run must contain (NULL: any). */
static void run_wgmma_shapes_noting(const char *note)
{
    int noted = 0;
    for (size_t n = 0; n < N_ELEMS(prefill_wgmma_shapes); n++) {
        const gpu_shape *t = &prefill_wgmma_shapes[n];
        long before = swa_cuda_prefill_wgmma_launches();
        check_shape(t, &swa_backend_prefill, false, 0);
        cr_expect_eq(swa_cuda_prefill_wgmma_launches() - before, 1, "%s: the prefill run did not use the wgmma kernel",
                     t->name);
        if (note) {
            /* the persistent kernel takes the 128-row tiles (two consumer warpgroups) */
            char kernel[192] = "";
            CUDA_DEV->last_kernel(kernel, sizeof kernel);
            if (strstr(kernel, "2 consumer warpgroups")) {
                noted++;
                cr_expect(strstr(kernel, note) != NULL, "%s: the kernel \"%s\" does not say \"%s\"", t->name, kernel,
                          note);
            }
        }
    }
    if (note) cr_expect_gt(noted, 0, "no shape ran on 128-row tiles");
}
Test(gpu_variants, prefill_wgmma_ws_engine)
{
    wgmma_engine_on();
    run_wgmma_shapes_noting(NULL);
}

/* The warp-specialised engine's persistent kernel (128-row tiles): one
 * CTA running every work item of a shape in turn (the ring's and the Q
 * buffers' barrier phases wrap across items, the next item's loads overlap
 * the last one's epilogue), and three CTAs sharing the items (the snake order).  Every shape here has several
 * work items (heads or tiles). */
Test(gpu_variants, prefill_wgmma_ws_engine_one_persistent_cta)
{
    wgmma_engine_on();
    swa_cuda_set_prefill_ws_ctas(1);
    run_wgmma_shapes_noting("persistent: 1 CTA for ");
}

Test(gpu_variants, prefill_wgmma_ws_engine_three_persistent_ctas)
{
    wgmma_engine_on();
    swa_cuda_set_prefill_ws_ctas(3);
    run_wgmma_shapes_noting("persistent: 3 CTAs for ");
}

/* The grids of a shape with more 128-row work items than the GPU has SMs
 * (8 kv heads x 69 tiles): the persistent kernel on one CTA per SM (the
 * default, and asked for), and one CTA per work item. */
static const gpu_shape many_items = {"wg L255 2200 tokens 32/8 (552 items)", 1, {2200}, {2200}, 32, 8, 128, 16, 255, FP16};

static void run_many_items(bool persistent)
{
    check_shape(&many_items, &swa_backend_prefill, false, 0);
    char kernel[192] = "";
    CUDA_DEV->last_kernel(kernel, sizeof kernel);
    cr_expect(strstr(kernel, "2 consumer warpgroups") != NULL, "%s: \"%s\" is not the 128-row kernel", many_items.name,
              kernel);
    cr_expect((strstr(kernel, ", persistent: ") != NULL) == persistent, "%s: \"%s\" is %sthe persistent kernel",
              many_items.name, kernel, persistent ? "not " : "");
}

Test(gpu_variants, prefill_wgmma_ws_engine_default_grid_is_persistent)
{
    wgmma_engine_on();
    run_many_items(true);
}

Test(gpu_variants, prefill_wgmma_ws_engine_persistent_cta_per_sm)
{
    wgmma_engine_on();
    swa_cuda_set_prefill_ws_ctas(WS_CTAS_PER_SM);
    run_many_items(true);
}

Test(gpu_variants, prefill_wgmma_ws_engine_cta_per_item)
{
    wgmma_engine_on();
    swa_cuda_set_prefill_ws_ctas(WS_CTAS_PER_ITEM);
    run_many_items(false);
}

/* The common prefill shapes with the knob on: 16-row tiles and head_dim 256
 * stay on mma.sync, the rest runs on wgmma. */
static void run_common_prefill_shapes_on_wgmma(void)
{
    long before = swa_cuda_prefill_wgmma_launches();
    for (size_t n = 0; n < N_ELEMS(prefill_shapes); n++)
        check_shape(&prefill_shapes[n], &swa_backend_prefill, false, 0);
    cr_expect_gt(swa_cuda_prefill_wgmma_launches() - before, 0, "no common prefill shape reached the wgmma kernel");
}

Test(gpu_variants, prefill_wgmma_ws_engine_common_shapes)
{
    wgmma_engine_on();
    run_common_prefill_shapes_on_wgmma();
}

Test(gpu_variants, decode_four_warps)
{
    swa_cuda_set_tuning(32, 4);
    for (size_t n = 0; n < N_ELEMS(decode_shapes); n++) {
        check_shape(&decode_shapes[n], &swa_backend_decode_fa2, false, 0);
        check_shape(&decode_shapes[n], &swa_backend_decode_aiter, false, 0);
    }
}
#endif /* SWADIFF_HAVE_CUDA */

/* -------------------------------------------------------------------------
 * mutants: on the GPU each kernel-level mutant must break the case the host
 * emulation's breaks, the same way */

typedef struct gpu_mutant_case {
    swa_mutant mutant;
    const swa_backend *backend;
    gpu_shape shape;
    bool graph;
} gpu_mutant_case;

static void check_mutant(const gpu_mutant_case *k)
{
    const char *name = swa_mutant_get(k->mutant)->name;
    const gpu_shape *t = &k->shape;
    const swa_backend *b = k->backend;
    bool lse = b != &swa_backend_decode_aiter;
    fx f;
    shape_setup(&f, t, k->graph, k->graph ? 1 : 0);
    swa_error err = {0};
    swa_status st = run_on(&f, CUDA_DEV, b, k->mutant, lse, NULL, 0, &err);
    cr_assert_eq(st, SWA_OK, "mutant %s on %s [%s]: cuda run failed: %s", name, t->name, b->name, err.message);
    double tol = gpu_tol(t->dtype);
    long gpu_bad = fx_out_mismatches(&f, tol, tol, NULL);
    long gpu_lse_bad = lse ? fx_lse_mismatches(&f, 2.0, 1e-2) : 0;
    bool gpu_guard = fx_guards_ok(&f);
    float *gpu = copy_out(&f);

    st = run_on(&f, &swa_host_device_ops, b, k->mutant, lse, NULL, 0, &err);
    cr_assert_eq(st, SWA_OK, "mutant %s on %s: host run failed: %s", name, t->name, err.message);
    long host_bad = fx_out_mismatches(&f, tol, tol, NULL);
    long host_lse_bad = lse ? fx_lse_mismatches(&f, 2.0, 1e-2) : 0;
    bool host_guard = fx_guards_ok(&f);
    float *host = copy_out(&f);

    cr_expect(host_bad > 0 || host_lse_bad > 0 || !host_guard,
              "mutant %s on %s [%s]: the host emulation does not change anything (case chosen badly)", name,
              t->name, b->name);
    cr_expect_eq(gpu_bad > 0, host_bad > 0, "mutant %s on %s [%s]: output off on cuda %ld, host %ld", name,
                 t->name, b->name, gpu_bad, host_bad);
    cr_expect_eq(gpu_lse_bad > 0, host_lse_bad > 0, "mutant %s on %s [%s]: LSE off on cuda %ld, host %ld", name,
                 t->name, b->name, gpu_lse_bad, host_lse_bad);
    cr_expect_eq(gpu_guard, host_guard, "mutant %s on %s [%s]: guards intact on cuda %d, host %d", name, t->name,
                 b->name, gpu_guard, host_guard);
    double worst;
    long diff = count_diff(gpu, host, f.out_elems, 2 * tol, &worst);
    cr_expect_eq(diff, 0, "mutant %s on %s [%s]: cuda and host outputs differ in %ld elements (max %g)", name,
                 t->name, b->name, diff, worst);
    free(gpu);
    free(host);
    fx_teardown(&f);
}

#define PF &swa_backend_prefill
#define FA2 &swa_backend_decode_fa2
#define AIT &swa_backend_decode_aiter
static const gpu_mutant_case mutant_cases[] = {
    {SWA_MUTANT_MASK_COMPILED_OUT, PF, {"seed000 L4 long", 1, {100}, {100}, 2, 2, 128, 16, 4, FP16}},
    {SWA_MUTANT_LEFT_BOUND_GT, PF, {"prefill L4", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, FP16}},
    {SWA_MUTANT_LEFT_BOUND_MINUS1, PF, {"prefill L4", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, FP16}},
    {SWA_MUTANT_TOP_LEFT_ALIGN, PF, {"prefill L4", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, FP16}},
    {SWA_MUTANT_REQUEST_ANCHORED, PF, {"prefill L4 long", 1, {100}, {100}, 2, 2, 128, 16, 4, FP16}},
    {SWA_MUTANT_SOFTCAP_COMPILED_OUT, PF, {"prefill cap 2", 1, {48}, {80}, 4, 2, 64, 16, 16, FP16, NHD, PAGED, false, 2}},
    {SWA_MUTANT_LSE_WRONG_BASE, PF, {"prefill L4", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, FP16}},
    {SWA_MUTANT_LSE_MERGE_DROPPED, PF, {"prefill split", 1, {16}, {2000}, 2, 2, 64, 16, -1, FP16}},
    {SWA_MUTANT_GQA_MOD_MAPPING, PF, {"prefill GQA 8/2", 2, {17, 33}, {50, 33}, 8, 2, 64, 16, -1, BF16}},
    {SWA_MUTANT_LEFT_BOUND_GT, FA2, {"decode L31", 3, {0}, {100, 700, 33}, 8, 2, 128, 16, 31, FP16}},
    {SWA_MUTANT_LEFT_BOUND_MINUS1, FA2, {"decode L31", 3, {0}, {100, 700, 33}, 8, 2, 128, 16, 31, FP16}},
    {SWA_MUTANT_SOFTCAP_COMPILED_OUT, FA2, {"decode cap 2", 2, {0}, {300, 65}, 8, 2, 128, 16, 64, BF16, NHD, PAGED, false, 2}},
    {SWA_MUTANT_LSE_WRONG_BASE, FA2, {"decode L31", 3, {0}, {100, 700, 33}, 8, 2, 128, 16, 31, FP16}},
    {SWA_MUTANT_LSE_MERGE_DROPPED, FA2, {"decode split uneven", 2, {0}, {1000, 510}, 8, 2, 128, 16, -1, FP16}},
    {SWA_MUTANT_GQA_MOD_MAPPING, FA2, {"decode GQA 8/2", 3, {0}, {100, 700, 33}, 8, 2, 128, 16, 31, FP16}},
    {SWA_MUTANT_FOREIGN_PAGE_READ, FA2, {"decode foreign page", 3, {0}, {100, 700, 33}, 8, 2, 128, 16, -1, FP16}},
    {SWA_MUTANT_WINDOW_PAGE_CROSS, FA2, {"decode page cross", 3, {0}, {100, 700, 37}, 8, 2, 128, 16, 31, FP16}},
    {SWA_MUTANT_OOB_WRITE, FA2, {"decode oob", 2, {0}, {100, 70}, 8, 2, 64, 16, 31, FP16}},
    {SWA_MUTANT_OOB_WRITE, FA2, {"decode oob graph", 2, {0}, {100, 70}, 8, 2, 64, 16, 31, FP16}, true},
    {SWA_MUTANT_GRAPH_CAPTURED_SCALARS, FA2, {"graph captured scalars", 3, {0}, {40, 700, 2000}, 8, 2, 128, 16, 31, FP16}, true},
    {SWA_MUTANT_SOFTCAP_BEFORE_MASK, AIT, {"aiter cap 2 L31", 2, {0}, {300, 700}, 8, 2, 128, 16, 31, BF16, NHD, PAGED, false, 2}},
    {SWA_MUTANT_GQA_MOD_MAPPING, AIT, {"aiter GQA 8/2", 3, {0}, {100, 700, 33}, 8, 2, 128, 16, 31, FP16}},
    {SWA_MUTANT_FOREIGN_PAGE_READ, AIT, {"aiter foreign page", 3, {0}, {100, 700, 33}, 8, 2, 128, 16, -1, FP16}},
    {SWA_MUTANT_AITER_S_EQ_L, AIT, {"aiter S=L", 2, {0}, {300, 700}, 8, 2, 128, 16, 31, FP16}},
};

Test(gpu_mutants, each_behaves_as_in_the_host_emulation)
{
    for (size_t n = 0; n < N_ELEMS(mutant_cases); n++)
        check_mutant(&mutant_cases[n]);
}

#ifdef SWADIFF_HAVE_CUDA
/* The prefill kernel-level mutants again, on the wgmma engine: shapes whose
 * plans have 64/128-row tiles, so the engine's mask, soft-cap, edge-tile
 * and epilogue hooks are the ones that run. */
static const gpu_mutant_case wgmma_mutant_cases[] = {
    {SWA_MUTANT_MASK_COMPILED_OUT, PF, {"wg L4 long", 1, {200}, {200}, 2, 2, 128, 16, 4, FP16}},
    {SWA_MUTANT_LEFT_BOUND_GT, PF, {"wg L37", 2, {150, 90}, {400, 90}, 4, 4, 64, 16, 37, FP16}},
    {SWA_MUTANT_LEFT_BOUND_MINUS1, PF, {"wg L37", 2, {150, 90}, {400, 90}, 4, 4, 64, 16, 37, FP16}},
    {SWA_MUTANT_TOP_LEFT_ALIGN, PF, {"wg L37 prefix", 2, {150, 90}, {400, 90}, 4, 4, 128, 16, 37, BF16}},
    {SWA_MUTANT_REQUEST_ANCHORED, PF, {"wg L4 long", 1, {200}, {200}, 2, 2, 128, 16, 4, FP16}},
    {SWA_MUTANT_SOFTCAP_COMPILED_OUT, PF, {"wg cap 2", 1, {96}, {160}, 4, 2, 64, 16, 16, FP16, NHD, PAGED, false, 2}},
    {SWA_MUTANT_LSE_WRONG_BASE, PF, {"wg L37", 2, {150, 90}, {400, 90}, 4, 4, 64, 16, 37, FP16}},
    {SWA_MUTANT_LSE_MERGE_DROPPED, PF, {"wg split", 1, {64}, {4000}, 8, 2, 64, 16, -1, FP16}},
    {SWA_MUTANT_GQA_MOD_MAPPING, PF, {"wg GQA 8/2", 2, {40, 70}, {90, 70}, 8, 2, 64, 16, -1, BF16}},
    {SWA_MUTANT_WINDOW_MASK_SKIPPED_IN_EDGE_TILE, PF, {"wg edge tile L37", 1, {200}, {200}, 4, 4, 64, 16, 37, FP16}},
};

/* The prefill mutants of the list above again on the mma.sync engine
 * (where wgmma is the default, the test above ran them on wgmma). */
Test(gpu_mutants, prefill_on_the_mma_sync_engine)
{
    swa_cuda_set_prefill_engine(0);
    long before = swa_cuda_prefill_wgmma_launches();
    int n_prefill = 0;
    for (size_t n = 0; n < N_ELEMS(mutant_cases); n++)
        if (mutant_cases[n].backend == &swa_backend_prefill) {
            check_mutant(&mutant_cases[n]);
            n_prefill++;
        }
    cr_expect_gt(n_prefill, 0);
    cr_expect_eq(swa_cuda_prefill_wgmma_launches(), before, "prefill_engine 0 still reached the wgmma kernel");
}

static void run_wgmma_mutants(void)
{
    for (size_t n = 0; n < N_ELEMS(wgmma_mutant_cases); n++) {
        long before = swa_cuda_prefill_wgmma_launches();
        check_mutant(&wgmma_mutant_cases[n]);
        cr_expect_eq(swa_cuda_prefill_wgmma_launches() - before, 1, "mutant %s on %s: the run did not use the wgmma kernel",
                     swa_mutant_get(wgmma_mutant_cases[n].mutant)->name, wgmma_mutant_cases[n].shape.name);
    }
}

Test(gpu_mutants, prefill_on_the_wgmma_ws_engine)
{
    wgmma_engine_on();
    run_wgmma_mutants();
}

/* ... and with one persistent CTA running all of a case's work items */
Test(gpu_mutants, prefill_on_the_wgmma_ws_engine_one_persistent_cta)
{
    wgmma_engine_on();
    swa_cuda_set_prefill_ws_ctas(1);
    run_wgmma_mutants();
}
#endif /* SWADIFF_HAVE_CUDA */

/* -------------------------------------------------------------------------
 * device plumbing */

Test(gpu_device, describe_and_plan_mismatch_errors)
{
    char buf[256];
    CUDA_DEV->describe(buf, sizeof buf);
    cr_expect(strstr(buf, "SMs") != NULL, "describe() should name the SM count: %s", buf);
    cr_expect_gt(CUDA_DEV->num_sms(), 0, "num_sms() of a present device");

    /* a plan for other heads than the uploaded inputs: a clear error, no fault */
    const gpu_shape *t = &decode_shapes[1];
    fx f;
    shape_setup(&f, t, false, 0);
    swa_plan_opts o = {.device = CUDA_DEV};
    swa_decode_fa2_plan *p = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_decode_fa2_plan_build(&f.c, &f.in.paged, f.c.num_requests, &o, &p, &err), SWA_OK, "%s",
                 err.message);
    void *dev = NULL;
    cr_assert_eq(CUDA_DEV->upload(&f.in, &dev, &err), SWA_OK, "%s", err.message);
    p->num_qo_heads *= 2;
    swa_status st = CUDA_DEV->decode_fa2(p, dev, &f.o, false, &err);
    cr_expect_eq(st, SWA_ERR_INVALID, "mismatched plan should be SWA_ERR_INVALID, got %d (%s)", st, err.message);
    cr_expect(strstr(err.message, "does not match") != NULL, "message should say what differs: %s", err.message);
    p->num_qo_heads /= 2;
    /* and the device is still usable afterwards */
    cr_expect_eq(CUDA_DEV->decode_fa2(p, dev, &f.o, true, &err), SWA_OK, "%s", err.message);
    double tol = gpu_tol(t->dtype);
    cr_expect_eq(fx_out_mismatches(&f, tol, tol, NULL), 0, "run after a rejected plan");
    CUDA_DEV->release(dev);
    swa_decode_fa2_plan_free(p);
    fx_teardown(&f);
}

Test(gpu_device, device_fault_becomes_an_error_status)
{
    /* mutant device_fault stores far outside every allocation: the run must
     * come back as SWA_ERR_DEVICE naming the CUDA error, not abort (this
     * test's own process loses its CUDA context; Criterion forks per test) */
    const gpu_shape *t = &decode_shapes[1];
    fx f;
    shape_setup(&f, t, false, 0);
    swa_error err = {0};
    swa_status st = run_on(&f, CUDA_DEV, &swa_backend_decode_fa2, SWA_MUTANT_DEVICE_FAULT, true, NULL, 0, &err);
    cr_expect_eq(st, SWA_ERR_DEVICE, "device_fault run returned %d (%s), expected SWA_ERR_DEVICE", st, err.message);
    cr_expect(strstr(err.message, "cudaError") != NULL, "the message should name the CUDA error: %s", err.message);
    fx_teardown(&f);
}

#ifdef SWADIFF_HAVE_CUDA /* a CUDA build's variable (else main skips with 77) */
/* SWADIFF_CUDA_PREFILL_ENGINE picks the prefill engine of a whole run:
 * "mma" and (on compute capability 9.0) "wgmma-ws" and "wgmma-ws:N" run a
 * prefill case file and pass; any other value makes every prefill result an error
 * naming the variable, never a silent default.  The binary and the source tree: $SWADIFF_BINARY and
 * $SWADIFF_SOURCE_DIR (a GPU machine running a bundle), or the build's. */
static int run_case_with_engine(const char *value, const char *case_file, const char *dir, char *out, size_t n)
{
    const char *bin = getenv("SWADIFF_BINARY") ? getenv("SWADIFF_BINARY") : SWADIFF_BINARY;
    const char *src = getenv("SWADIFF_SOURCE_DIR") ? getenv("SWADIFF_SOURCE_DIR") : SWADIFF_SOURCE_DIR;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "SWADIFF_CUDA_PREFILL_ENGINE='%s' '%s' run --device cuda --quiet --no-explain --report '%s/%s' "
             "'%s/cases/%s' 2>&1",
             value, bin, dir, value, src, case_file);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "popen(%s)", cmd);
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static int run_with_engine(const char *value, const char *dir, char *out, size_t n)
{
    return run_case_with_engine(value, "seed000_paged_prefill.json", dir, out, n);
}

static bool file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    static char buf[1 << 22];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = 0;
    fclose(f);
    return strstr(buf, needle) != NULL;
}

Test(gpu_env, prefill_engine_variable)
{
    char dir[] = "/tmp/swadiff-engine-env-XXXXXX", out[16384], report[512];
    cr_assert(mkdtemp(dir), "mkdtemp");

    int rc = run_with_engine("mma", dir, out, sizeof out);
    cr_expect_eq(rc, 0, "SWADIFF_CUDA_PREFILL_ENGINE=mma: exit %d\n%s", rc, out);
    /* each result names the kernel that computed it (report 1.3) */
    snprintf(report, sizeof report, "%s/mma/report.json", dir);
    cr_expect(file_contains(report, "\"kernel\":\t\"prefill mma.sync: "),
              "SWADIFF_CUDA_PREFILL_ENGINE=mma: the results should name the mma.sync prefill kernel (%s)", report);

    char buf[256];
    CUDA_DEV->describe(buf, sizeof buf);
    bool hopper = strstr(buf, ", cc 9.0,") != NULL;
    rc = run_with_engine("wgmma-ws", dir, out, sizeof out);
    snprintf(report, sizeof report, "%s/wgmma-ws/report.json", dir);
    if (hopper && swa_cuda_prefill_wgmma_available()) {
        cr_expect_eq(rc, 0, "SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws on %s: exit %d\n%s", buf, rc, out);
        cr_expect(file_contains(report, "\"kernel\":\t\"prefill wgmma-ws: "),
                  "SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws: the results should name the kernel (%s)", report);
    } else
        cr_expect(rc == 3 && file_contains(report, "has no wgmma engine"),
                  "SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws without the engine: exit %d (expected 3 and a reason)\n%s",
                  rc, out);

    /* the persistent kernel on one CTA: a case file whose plans have
     * 128-row tiles (the kernel's shape), every work item of a case run
     * by that CTA in turn */
    rc = run_case_with_engine("wgmma-ws:1", "gqa_window_tile.json", dir, out, sizeof out);
    snprintf(report, sizeof report, "%s/wgmma-ws:1/report.json", dir);
    if (hopper && swa_cuda_prefill_wgmma_available()) {
        cr_expect_eq(rc, 0, "SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws:1 on %s: exit %d\n%s", buf, rc, out);
        cr_expect(file_contains(report, ", persistent: 1 CTA for "),
                  "SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws:1: the results should name the persistent kernel "
                  "on one CTA (%s)", report);
    } else
        cr_expect(rc == 3 && file_contains(report, "SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws:1: this GPU"),
                  "SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws:1 without the engine: exit %d (expected 3 and a "
                  "reason naming the value)\n%s", rc, out);

    /* the values of the engines that are gone (issue 31) are errors too */
    static const char *const bad[] = {"bogus", "wgmma-ws:0", "wgmma-ws:2x", "wgmma-wsX", "wgmma",
                                      "wgmma-ws-per-item", "wgmma-ws-persistent:2"};
    for (int b = 0; b < 7; b++) {
        rc = run_with_engine(bad[b], dir, out, sizeof out);
        snprintf(report, sizeof report, "%s/%s/report.json", dir, bad[b]);
        cr_expect_eq(rc, 3, "SWADIFF_CUDA_PREFILL_ENGINE=%s: exit %d (expected 3: error results)\n%s", bad[b], rc, out);
        char want[128];
        snprintf(want, sizeof want, "SWADIFF_CUDA_PREFILL_ENGINE=\\\"%s\\\": expected", bad[b]);
        cr_expect(file_contains(report, want), "the error results should name the variable and its value (%s in %s)",
                  want, report);
    }
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    cr_expect_eq(system(rm), 0);
}
#endif /* SWADIFF_HAVE_CUDA */

/* -------------------------------------------------------------------------
 * main: skip (77) without a usable device; probe it in a child so that no
 * CUDA state is inherited by Criterion's forked tests. */

static int probe_device(char *why, size_t n)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        char msg[256] = "this swadiff was built without the CUDA device";
        bool ok = CUDA_DEV && CUDA_DEV->available(msg, sizeof msg);
        if (!ok && write(fds[1], msg, strlen(msg)) < 0)
            _exit(2);
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], why, n - 1);
    why[got > 0 ? got : 0] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    char why[256] = "";
    int rc = probe_device(why, sizeof why);
    if (rc != 0) {
        fprintf(stderr, "gpu_test_kernels: skipped: %s\n", rc < 0 ? "could not fork the device probe" : why);
        return SWA_EXIT_NO_GPU;
    }
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
