/* bench_ref.c — `swadiff bench --reference` (see bench_ref.h).
 *
 *   build/swadiff bench --reference [--threads N] [--min-time S] [--no-naive]
 *
 * Two shapes: a Gemma-3-1B prefill (1 request, 1500 tokens, 4/1 heads,
 * head_dim 256, window 512, causal) and a Mistral-7B decode batch (8
 * requests, kv 4096, 32/8 heads, head_dim 128, window 4095).  FLOPs are
 * counted as the attention a kernel must do: 4 * head_dim per visible
 * (query row, key) pair per qo head (2 for QK^T, 2 for PV); masked pairs
 * the reference computes anyway are not counted.
 *
 * Rows: the reference with its own worker threads (single-threaded BLAS in
 * each), the reference with one block at a time and threaded BLAS, the
 * reference on one thread, the naive loop oracle (reference/naive.c, one
 * thread), and plain cblas_dgemm doing the same FLOPs densely (S = Q K^T
 * then O = P V over exactly the visible width, no mask, operands already
 * double) — the ceiling the reference is measured against.
 * Inputs are generated here (not by core/data.c) so the bench depends on
 * nothing but the reference. */
#include "bench/bench_ref.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reference/naive.h"
#include "reference/ref_internal.h"

typedef struct bench_shape {
    const char *name;
    int num_requests, qo_len, kv_len, num_qo_heads, num_kv_heads, head_dim, window_left;
    bool causal;
    swa_dtype dtype;
} bench_shape;

static const bench_shape k_shapes[] = {
    {"gemma3-1b prefill 1x1500, 4/1 heads, hd 256, L 512", 1, 1500, 1500, 4, 1, 256, 512, true,
     SWA_DTYPE_BF16},
    {"mistral-7b decode 8x(1|4096), 32/8 heads, hd 128, L 4095", 8, 1, 4096, 32, 8, 128, 4095, true,
     SWA_DTYPE_FP16},
};

static double bench_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double bench_now(void) { return bench_clock(CLOCK_MONOTONIC); }

/* Wall time and process CPU time (all threads) of one run.  On a shared
 * machine the wall time suffers from other tenants; CPU time per FLOP
 * ("GFLOP per core-second") does much less, so the table shows both. */
typedef struct bench_time { double wall, cpu; } bench_time;

static bench_time bench_start(void)
{
    bench_time t = {bench_now(), bench_clock(CLOCK_PROCESS_CPUTIME_ID)};
    return t;
}
static bench_time bench_since(bench_time t0)
{
    bench_time t = {bench_now() - t0.wall, bench_clock(CLOCK_PROCESS_CPUTIME_ID) - t0.cpu};
    return t;
}
/* keeps the best wall and the best CPU time seen (each its own minimum) */
static void bench_keep_best(bench_time *best, bench_time t)
{
    if (t.wall < best->wall) best->wall = t.wall;
    if (t.cpu < best->cpu) best->cpu = t.cpu;
}

typedef struct bench_case {
    swa_case c;
    swa_inputs in;
    double *out, *lse;
    double flops;
    long long visible_per_head; /* visible (row, key) pairs of one qo head */
} bench_case;

static void bench_case_free(bench_case *b)
{
    free(b->c.qo_len); free(b->c.kv_len);
    free(b->in.qo_indptr); free(b->in.kv_indptr);
    free(b->in.q); free(b->in.k); free(b->in.v);
    free(b->out); free(b->lse);
    memset(b, 0, sizeof *b);
}

static int bench_case_make(bench_case *b, const bench_shape *s)
{
    memset(b, 0, sizeof *b);
    swa_case *c = &b->c;
    swa_inputs *in = &b->in;
    int B = s->num_requests;
    snprintf(c->id, sizeof c->id, "bench/%s", s->name);
    c->num_requests = in->num_requests = B;
    c->qo_len = malloc((size_t)B * sizeof(int));
    c->kv_len = malloc((size_t)B * sizeof(int));
    in->qo_indptr = malloc((size_t)(B + 1) * sizeof(int));
    in->kv_indptr = malloc((size_t)(B + 1) * sizeof(int));
    if (!c->qo_len || !c->kv_len || !in->qo_indptr || !in->kv_indptr)
        return -1;
    in->qo_indptr[0] = in->kv_indptr[0] = 0;
    for (int r = 0; r < B; r++) {
        c->qo_len[r] = s->qo_len;
        c->kv_len[r] = s->kv_len;
        in->qo_indptr[r + 1] = in->qo_indptr[r] + s->qo_len;
        in->kv_indptr[r + 1] = in->kv_indptr[r] + s->kv_len;
    }
    c->num_qo_heads = in->num_qo_heads = s->num_qo_heads;
    c->num_kv_heads = in->num_kv_heads = s->num_kv_heads;
    c->head_dim = in->head_dim = s->head_dim;
    c->dtype = in->dtype = s->dtype;
    c->causal = s->causal;
    c->window_left = s->window_left;
    c->window_right = s->causal ? 0 : -1;
    c->sm_scale = 1.0 / sqrt((double)s->head_dim);
    in->total_qo = in->qo_indptr[B];
    in->total_kv = in->kv_indptr[B];
    size_t nq = (size_t)in->total_qo * s->num_qo_heads * s->head_dim;
    size_t nk = (size_t)in->total_kv * s->num_kv_heads * s->head_dim;
    in->q = malloc(nq * sizeof(float));
    in->k = malloc(nk * sizeof(float));
    in->v = malloc(nk * sizeof(float));
    b->out = malloc(nq * sizeof(double));
    b->lse = malloc((size_t)in->total_qo * s->num_qo_heads * sizeof(double));
    if (!in->q || !in->k || !in->v || !b->out || !b->lse)
        return -1;
    uint64_t x = 0x243F6A8885A308D3ULL; /* values uniform in [-2, 2), rounded to dtype */
    float *bufs[3] = {in->q, in->k, in->v};
    size_t lens[3] = {nq, nk, nk};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < lens[t]; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            float f = (float)((double)(x >> 40) / 16777216.0 * 4.0 - 2.0);
            bufs[t][i] = swa_round_to(s->dtype, f);
        }
    for (int i = 0; i < s->qo_len; i++) {
        long long p = (long long)s->kv_len - s->qo_len + i;
        long long first = 0, last = s->causal ? p : s->kv_len - 1;
        if (s->window_left >= 0 && p - s->window_left > first)
            first = p - s->window_left;
        b->visible_per_head += last >= first ? last - first + 1 : 0;
    }
    b->visible_per_head *= B;
    b->flops = 4.0 * (double)b->visible_per_head * s->head_dim * s->num_qo_heads;
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Plain dgemm of the same work: per (request, kv head), the group's rows
 * times the visible width, split across threads by rows, operands in
 * double, distinct K/V per (request, kv head) so decode streams memory as
 * the reference does. */

typedef struct dgemm_job {
    int items, rows, width, head_dim, threads;
    double *q, *kv, *s, *o; /* q/s/o per thread; kv per item: K then V */
} dgemm_job;

typedef struct dgemm_part {
    dgemm_job *job;
    int tid;
} dgemm_part;

static void *dgemm_worker(void *arg)
{
    dgemm_part *part = arg;
    dgemm_job *j = part->job;
    int D = j->head_dim, W = j->width;
    /* items first, then rows: decode has many small items, prefill one big */
    int units = j->items >= j->threads ? j->items : j->threads;
    for (int u = part->tid; u < units; u += j->threads) {
        int item = j->items >= j->threads ? u : 0;
        int row0 = 0, rows = j->rows;
        if (j->items < j->threads) {
            int per = (j->rows + j->threads - 1) / j->threads;
            row0 = u * per;
            rows = row0 + per <= j->rows ? per : j->rows - row0;
            if (rows <= 0)
                continue;
        }
        const double *k = j->kv + (size_t)item * 2 * W * D, *v = k + (size_t)W * D;
        double *q = j->q + (size_t)part->tid * j->rows * D + (size_t)row0 * D;
        double *s = j->s + (size_t)part->tid * j->rows * W;
        double *o = j->o + (size_t)part->tid * j->rows * D;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, W, D, 1.0, q, D, k, D, 0.0, s, W);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, W, 1.0, s, W, v, D, 0.0, o, D);
    }
    return NULL;
}

static bench_time bench_dgemm_once(dgemm_job *j)
{
    pthread_t tid[64];
    dgemm_part parts[64];
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(1);
    bench_time t0 = bench_start();
    int started = 0;
    for (int t = 1; t < j->threads; t++) {
        parts[t].job = j;
        parts[t].tid = t;
        if (pthread_create(&tid[t], NULL, dgemm_worker, &parts[t]) == 0)
            started = t;
        else
            break;
    }
    parts[0].job = j;
    parts[0].tid = 0;
    dgemm_worker(&parts[0]);
    for (int t = 1; t <= started; t++)
        pthread_join(tid[t], NULL);
    bench_time dt = bench_since(t0);
    openblas_set_num_threads(saved);
    return dt;
}

/* ------------------------------------------------------------------------- */

typedef struct bench_row {
    char impl[64];
    int threads;
    bench_time best;
    double gflops, gflops_cpu; /* per wall second, per CPU second */
} bench_row;

static bench_time bench_time_reference(bench_case *b, double min_time, swa_error *err, int *ok)
{
    bench_time best = {INFINITY, INFINITY};
    double spent = 0;
    for (int reps = 0; reps < 2 || (spent < min_time && reps < 50); reps++) {
        bench_time t0 = bench_start();
        if (swa_reference(&b->c, &b->in, NULL, b->out, b->lse, err) != SWA_OK) {
            *ok = 0;
            return best;
        }
        bench_time dt = bench_since(t0);
        spent += dt.wall;
        bench_keep_best(&best, dt);
    }
    return best;
}

static void bench_row_set(bench_row *row, const char *impl, int threads, bench_time best, double flops)
{
    snprintf(row->impl, sizeof row->impl, "%s", impl);
    row->threads = threads;
    row->best = best;
    row->gflops = flops / best.wall * 1e-9;
    row->gflops_cpu = flops / best.cpu * 1e-9;
}

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: swadiff bench --reference [--threads N] [--min-time SECONDS] [--no-naive]\n"
               "                                 [--shape prefill|decode] [--block-rows N]\n"
               "  --threads N       threads for the parallel rows (default: all usable cores)\n"
               "  --min-time S      keep repeating each timed run for S seconds, report the\n"
               "                    best (default 1.0; the naive oracle runs once)\n"
               "  --shape WHICH     only the prefill or only the decode shape\n"
               "  --no-naive        skip the naive loop oracle (it takes seconds)\n"
               "  --block-rows N    packed rows per reference block (tuning; default heuristic)\n");
}

static void bench_cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *colon = strchr(line, ':');
            if (colon) {
                snprintf(buf, n, "%s", colon + 2);
                buf[strcspn(buf, "\n")] = 0;
            }
            break;
        }
    }
    fclose(f);
}

int swa_bench_reference(int argc, char **argv)
{
    int threads = 0, block_rows = 0;
    double min_time = 1.0;
    bool naive = true;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            bench_usage(stdout);
            return SWA_EXIT_OK;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1 || threads > 64) {
                fprintf(stderr, "swadiff bench --reference: --threads %s: expected 1..64\n", argv[i]);
                return SWA_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) {
            min_time = atof(argv[++i]);
            if (!(min_time >= 0 && min_time <= 600)) {
                fprintf(stderr, "swadiff bench --reference: --min-time %s: expected 0..600 seconds\n",
                        argv[i]);
                return SWA_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--block-rows") && i + 1 < argc) {
            block_rows = atoi(argv[++i]);
            if (block_rows < 1) {
                fprintf(stderr, "swadiff bench --reference: --block-rows %s: expected >= 1\n", argv[i]);
                return SWA_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            only = argv[++i];
            if (strcmp(only, "prefill") && strcmp(only, "decode")) {
                fprintf(stderr, "swadiff bench --reference: --shape %s: expected prefill or decode\n", only);
                return SWA_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--no-naive")) {
            naive = false;
        } else {
            fprintf(stderr, "swadiff bench --reference: unknown option '%s'\n", argv[i]);
            bench_usage(stderr);
            return SWA_EXIT_USAGE;
        }
    }
    swa_reference_set_threads(threads);
    int T = ref_resolved_threads();
    ref_set_block_rows_target(block_rows);
    char cpu[256];
    bench_cpu_name(cpu, sizeof cpu);
    printf("swadiff bench --reference: GFLOP/s = 4 * head_dim * visible (row, key) pairs per qo head\n");
    printf("machine: %s, %d usable threads; %s\n\n", cpu, T, openblas_get_config());

    int rc = SWA_EXIT_OK;
    for (size_t si = 0; si < sizeof k_shapes / sizeof *k_shapes; si++) {
        const bench_shape *s = &k_shapes[si];
        if (only && !strstr(s->name, only))
            continue;
        bench_case b;
        if (bench_case_make(&b, s)) {
            fprintf(stderr, "swadiff bench --reference: out of memory building %s\n", s->name);
            bench_case_free(&b);
            return SWA_EXIT_RUNTIME;
        }
        bench_row rows[8];
        int nrows = 0, ok = 1;
        swa_error err = {0};

        /* reference, worker threads / BLAS threads / one thread */
        const struct { const char *impl; ref_parallel_mode mode; int threads; } refs[] = {
            {"reference (worker threads)", REF_PAR_WORKERS, T},
            {"reference (threaded BLAS)", REF_PAR_BLAS, T},
            {"reference", REF_PAR_WORKERS, 1},
        };
        for (size_t r = 0; r < sizeof refs / sizeof *refs; r++) {
            if (refs[r].threads == 1 && T == 1 && r < 2)
                continue;
            ref_set_parallel_mode(refs[r].mode);
            swa_reference_set_threads(refs[r].threads);
            bench_time t = bench_time_reference(&b, min_time, &err, &ok);
            bench_row_set(&rows[nrows++], refs[r].impl, refs[r].threads, t, b.flops);
        }
        ref_set_parallel_mode(REF_PAR_WORKERS);
        swa_reference_set_threads(threads);
        if (!ok) {
            fprintf(stderr, "swadiff bench --reference: %s\n", err.message);
            bench_case_free(&b);
            return SWA_EXIT_RUNTIME;
        }
        bench_row *naive_row = NULL;
        if (naive) {
            bench_time t0 = bench_start();
            if (swa_reference_naive(&b.c, &b.in, b.out, b.lse, &err) != SWA_OK) {
                fprintf(stderr, "swadiff bench --reference: %s\n", err.message);
                bench_case_free(&b);
                return SWA_EXIT_RUNTIME;
            }
            naive_row = &rows[nrows++];
            bench_row_set(naive_row, "naive loops (reference/naive.c)", 1, bench_since(t0), b.flops);
        }

        /* plain dgemm: visible width per row, dense */
        int group = s->num_qo_heads / s->num_kv_heads;
        dgemm_job j;
        memset(&j, 0, sizeof j);
        j.items = s->num_requests * s->num_kv_heads;
        j.rows = s->qo_len * group;
        j.head_dim = s->head_dim;
        j.width = (int)(b.visible_per_head / ((long long)s->num_requests * s->qo_len));
        double dense_flops = 4.0 * j.items * (double)j.rows * j.width * j.head_dim;
        bench_row *dgemm_rows[2] = {NULL, NULL};
        for (int pass = 0; pass < 2; pass++) {
            j.threads = pass == 0 ? T : 1;
            if (pass == 1 && T == 1)
                break;
            j.q = malloc((size_t)j.threads * j.rows * j.head_dim * sizeof(double));
            j.s = malloc((size_t)j.threads * j.rows * j.width * sizeof(double));
            j.o = malloc((size_t)j.threads * j.rows * j.head_dim * sizeof(double));
            j.kv = malloc((size_t)j.items * 2 * j.width * j.head_dim * sizeof(double));
            if (!j.q || !j.s || !j.o || !j.kv) {
                free(j.q); free(j.s); free(j.o); free(j.kv);
                fprintf(stderr, "swadiff bench --reference: out of memory for the dgemm run\n");
                bench_case_free(&b);
                return SWA_EXIT_RUNTIME;
            }
            for (size_t i = 0; i < (size_t)j.threads * j.rows * j.head_dim; i++) j.q[i] = 0.25;
            for (size_t i = 0; i < (size_t)j.items * 2 * j.width * j.head_dim; i++)
                j.kv[i] = (double)(i % 7) * 0.125;
            bench_time best = {INFINITY, INFINITY};
            double spent = 0;
            for (int reps = 0; reps < 2 || (spent < min_time && reps < 50); reps++) {
                bench_time dt = bench_dgemm_once(&j);
                spent += dt.wall;
                bench_keep_best(&best, dt);
            }
            free(j.q); free(j.s); free(j.o); free(j.kv);
            char impl[64];
            snprintf(impl, sizeof impl, "plain cblas_dgemm %dx%dx%d", j.rows, j.width, j.head_dim);
            dgemm_rows[pass] = &rows[nrows++];
            bench_row_set(dgemm_rows[pass], impl, j.threads, best, dense_flops);
        }

        /* ratios: against the naive row, and against the dgemm row with the
         * same thread count; wall-clock and CPU-time based */
        printf("%s  (%.3g GFLOP)\n", s->name, b.flops * 1e-9);
        printf("  %-36s %7s %9s %9s %8s %8s %7s %7s %7s %7s\n", "implementation", "threads", "wall ms",
               "cpu ms", "GFLOP/s", "/core-s", "x naive", "(cpu)", "/dgemm", "(cpu)");
        for (int r = 0; r < nrows; r++) {
            const bench_row *row = &rows[r], *dg = dgemm_rows[0];
            if (dgemm_rows[1] && row->threads == 1)
                dg = dgemm_rows[1];
            printf("  %-36s %7d %9.1f %9.1f %8.2f %8.2f", row->impl, row->threads, row->best.wall * 1e3,
                   row->best.cpu * 1e3, row->gflops, row->gflops_cpu);
            if (naive_row)
                printf(" %7.1f %7.1f", row->gflops / naive_row->gflops, row->gflops_cpu / naive_row->gflops_cpu);
            else
                printf(" %7s %7s", "-", "-");
            printf(" %7.2f %7.2f\n", row->gflops / dg->gflops, row->gflops_cpu / dg->gflops_cpu);
        }
        if (si == 0) {
            const bench_row *ref = &rows[0];
            if (naive_row)
                printf("  target reference >= 20x naive (wall): %s (%.1fx)\n",
                       ref->gflops >= 20 * naive_row->gflops ? "met" : "NOT met", ref->gflops / naive_row->gflops);
            printf("  target reference >= 0.5x plain dgemm (wall, %d threads): %s (%.2fx)\n", T,
                   ref->gflops >= 0.5 * dgemm_rows[0]->gflops ? "met" : "NOT met",
                   ref->gflops / dgemm_rows[0]->gflops);
        }
        printf("\n");
        bench_case_free(&b);
    }
    ref_set_block_rows_target(0);
    swa_reference_set_threads(0);
    return rc;
}
