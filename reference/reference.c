/* reference.c — the CPU oracle (docs/spec.md) and its low-precision twin
 * (§5, baseline-relative tolerance), on OpenBLAS.
 *
 * Work is cut into items (request, kv head, block of query rows).  An item
 * stacks the qo heads of the kv head's group as packed rows (row * group +
 * head_in_group, the order FlashInfer packs them), computes the key range
 * any packed row of the block can see from the mask spans (ref_mask.c),
 * and runs two GEMMs restricted to that range: S = Q K^T and O = P V.  The
 * exact per-element mask is applied between them, in double, so masked keys
 * get weight exactly 0 (and, if a V row in range is NaN/Inf, P V falls back
 * to a loop over each row's own keys so that 0 * Inf cannot leak a NaN).
 * Blocks of rows keep the scores block bounded (REF_SCORES_BUDGET) and,
 * under a window, keep the range close to the window (little mask waste).
 * K/V rows are widened to double a cache-sized chunk at a time; the
 * softmax's exp is ref_exp.h's (within 1 ulp of libm, 1.6x faster).
 *
 * A sample (swa_ref_sample) keeps the items whose rows and kv head it
 * selects; each row is computed exactly as without it.
 *
 * Tests: tests/test_reference.c (against an independent loop oracle),
 * tests/test_reference_lowp.c, tests/test_explain.c (samples, signatures).  Bench: `swadiff bench --reference`. */
#include "reference/ref_internal.h"
#include "reference/ref_exp.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Upper bound on one worker's scores block (doubles), 32 MiB.  With two
 * workers and the Q/K/V/O blocks this keeps a case with kv 8192+, qo 8192
 * and group 8 well under 100 MiB of scratch. */
#define REF_SCORES_BUDGET ((size_t)32 << 20)

static atomic_int g_threads = 0;
static atomic_int g_parallel_mode = REF_PAR_WORKERS;
static atomic_int g_block_rows_target = 0;
/* One reference computation at a time: it already uses every core, and the
 * OpenBLAS thread count it sets is process-wide state. */
static pthread_mutex_t g_call_lock = PTHREAD_MUTEX_INITIALIZER;

void swa_reference_set_threads(int threads) { atomic_store(&g_threads, threads > 0 ? threads : 0); }
void ref_set_parallel_mode(ref_parallel_mode mode) { atomic_store(&g_parallel_mode, (int)mode); }
void ref_set_block_rows_target(int packed_rows)
{
    atomic_store(&g_block_rows_target, packed_rows > 0 ? packed_rows : 0);
}

int ref_resolved_threads(void)
{
    int t = atomic_load(&g_threads);
    if (t > 0)
        return t;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ------------------------------------------------------------------------- */
/* Argument checks: a malformed case or inputs gets a message, never a crash. */

static swa_status ref_validate(const swa_case *c, const swa_inputs *in, const swa_ref_mask *mask,
                               swa_error *err)
{
    if (!c || !in)
        return swa_error_set(err, SWA_ERR_INVALID, "reference: case or inputs is NULL");
    const char *id = c->id;
    if (c->num_requests < 0 || c->num_qo_heads <= 0 || c->num_kv_heads <= 0 || c->head_dim <= 0)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference: case %s: num_requests=%d num_qo_heads=%d num_kv_heads=%d "
                             "head_dim=%d; expected requests >= 0 and positive heads and head_dim",
                             id, c->num_requests, c->num_qo_heads, c->num_kv_heads, c->head_dim);
    if (c->num_qo_heads % c->num_kv_heads)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference: case %s: num_qo_heads=%d is not a multiple of num_kv_heads=%d",
                             id, c->num_qo_heads, c->num_kv_heads);
    if (in->num_requests != c->num_requests || in->num_qo_heads != c->num_qo_heads ||
        in->num_kv_heads != c->num_kv_heads || in->head_dim != c->head_dim)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference: case %s: inputs were built for another shape (requests %d/%d, "
                             "qo heads %d/%d, kv heads %d/%d, head_dim %d/%d as inputs/case)",
                             id, in->num_requests, c->num_requests, in->num_qo_heads, c->num_qo_heads,
                             in->num_kv_heads, c->num_kv_heads, in->head_dim, c->head_dim);
    if (!isfinite(c->sm_scale) || !(c->soft_cap >= 0) || !isfinite(c->soft_cap))
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference: case %s: sm_scale=%g soft_cap=%g; expected a finite sm_scale "
                             "and a finite soft_cap >= 0", id, c->sm_scale, c->soft_cap);
    if (c->num_requests > 0 && (!in->qo_indptr || !in->kv_indptr || !c->qo_len || !c->kv_len))
        return swa_error_set(err, SWA_ERR_INVALID, "reference: case %s: missing indptr or lengths", id);
    if (c->num_requests > 0 && (in->qo_indptr[0] != 0 || in->kv_indptr[0] != 0))
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference: case %s: qo_indptr[0]=%d kv_indptr[0]=%d; expected 0", id,
                             in->qo_indptr[0], in->kv_indptr[0]);
    for (int r = 0; r < c->num_requests; r++) {
        int qo = in->qo_indptr[r + 1] - in->qo_indptr[r];
        int kv = in->kv_indptr[r + 1] - in->kv_indptr[r];
        if (qo != c->qo_len[r] || kv != c->kv_len[r] || qo < 0 || kv < 0)
            return swa_error_set(err, SWA_ERR_INVALID,
                                 "reference: case %s: request %d: indptr gives qo_len=%d kv_len=%d, "
                                 "case says qo_len=%d kv_len=%d; expected equal and >= 0",
                                 id, r, qo, kv, c->qo_len[r], c->kv_len[r]);
    }
    int total_qo = c->num_requests ? in->qo_indptr[c->num_requests] : 0;
    int total_kv = c->num_requests ? in->kv_indptr[c->num_requests] : 0;
    if (in->total_qo != total_qo || in->total_kv != total_kv)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference: case %s: total_qo=%d total_kv=%d but indptr ends at %d/%d",
                             id, in->total_qo, in->total_kv, total_qo, total_kv);
    if ((total_qo > 0 && !in->q) || (total_kv > 0 && (!in->k || !in->v)))
        return swa_error_set(err, SWA_ERR_INVALID, "reference: case %s: q, k or v is NULL", id);
    return mask ? ref_mask_validate(mask, err) : SWA_OK;
}

/* ------------------------------------------------------------------------- */
/* Work items and per-worker scratch. */

typedef struct ref_item {
    int request, kv_head, row_begin, row_end;
} ref_item;

typedef struct ref_job {
    const swa_case *c;
    const swa_inputs *in;
    swa_ref_mask mask;
    bool lowp;
    double *out, *lse;          /* exact */
    float *out_f, *lse_f;       /* lowp */
    const swa_ref_sample *sample; /* NULL: every row and head */
    ref_item *items;
    int num_items;
    atomic_int next;
    atomic_int failed;          /* a worker ran out of memory */
} ref_job;

typedef struct ref_scratch {
    void *q, *k, *v, *s, *o;    /* double (exact) or float (lowp) */
    size_t q_cap, k_cap, v_cap, s_cap, o_cap; /* bytes */
    double *row_sum;
    float *row_sum_f;
    ref_row_span *spans;
    size_t rows_cap;
} ref_scratch;

static int ref_grow(void **p, size_t *cap, size_t bytes)
{
    if (bytes <= *cap)
        return 0;
    free(*p);
    *p = malloc(bytes ? bytes : 1);
    *cap = *p ? bytes : 0;
    return *p ? 0 : -1;
}

static void ref_scratch_free(ref_scratch *w)
{
    free(w->q); free(w->k); free(w->v); free(w->s); free(w->o);
    free(w->row_sum); free(w->row_sum_f); free(w->spans);
    memset(w, 0, sizeof *w);
}

/* kv_rows: keys per K/V chunk the block widens into scratch (0: none). */
static int ref_scratch_reserve(ref_scratch *w, size_t rows, size_t keys, size_t head_dim, size_t elem,
                               size_t kv_rows)
{
    size_t kv_bytes = kv_rows * head_dim * elem;
    if (ref_grow(&w->q, &w->q_cap, rows * head_dim * elem) ||
        ref_grow(&w->k, &w->k_cap, kv_bytes) ||
        ref_grow(&w->v, &w->v_cap, kv_bytes) ||
        ref_grow(&w->s, &w->s_cap, rows * keys * elem) ||
        ref_grow(&w->o, &w->o_cap, rows * head_dim * elem))
        return -1;
    if (rows > w->rows_cap) {
        free(w->row_sum); free(w->row_sum_f); free(w->spans);
        w->row_sum = malloc(rows * sizeof *w->row_sum);
        w->row_sum_f = malloc(rows * sizeof *w->row_sum_f);
        w->spans = malloc(rows * sizeof *w->spans);
        w->rows_cap = (w->row_sum && w->row_sum_f && w->spans) ? rows : 0;
        if (!w->rows_cap)
            return -1;
    }
    return 0;
}

/* Query rows per item.  Big blocks feed the GEMMs well (M = rows * group;
 * 256 packed rows was the best of 64..1024 on the Gemma prefill shape, by
 * a margin within this machine's noise); under a window the key range of a
 * block is window + rows wide, so rows are capped at a quarter of the
 * window to keep the computed-then-masked part under ~20% (11% for Gemma:
 * 64 rows, 576 keys computed, 513 visible). */
static int ref_block_rows(const swa_case *c, const swa_ref_mask *mask, int qo_len, int kv_len)
{
    int group = swa_case_group_size(c);
    int target = atomic_load(&g_block_rows_target);
    if (target <= 0)
        target = 256;
    long long rows = (target + group - 1) / group;
    int L = mask->window_left;
    if (L >= 0 && c->causal && mask->tile_rows == 0 && !mask->anchor_request_start) {
        long long cap = ((long long)L + 1) / 4;
        if (cap < 16)
            cap = 16;
        if (rows > cap)
            rows = cap;
    }
    long long keys = kv_len > 0 ? kv_len : 1;
    long long by_memory = (long long)(REF_SCORES_BUDGET / sizeof(double)) / (keys * group);
    if (rows > by_memory)
        rows = by_memory;
    if (rows > qo_len)
        rows = qo_len;
    return rows < 1 ? 1 : (int)rows;
}

/* Spans of the block's packed rows and the key range that covers them. */
static void ref_block_spans(const ref_job *job, const ref_item *it, ref_row_span *spans,
                            int *range_begin, int *range_end)
{
    const swa_case *c = job->c;
    int group = swa_case_group_size(c);
    int qo_len = c->qo_len[it->request], kv_len = c->kv_len[it->request];
    int rows = (it->row_end - it->row_begin) * group;
    int lo = kv_len, hi = 0;
    for (int pr = 0; pr < rows; pr++) {
        ref_row_span *sp = &spans[pr];
        ref_row_span_compute(&job->mask, c->causal, c->soft_cap, qo_len, kv_len, group,
                             it->row_begin * group + pr, sp);
        if (sp->processed_end > sp->processed_begin) {
            if (sp->processed_begin < lo) lo = sp->processed_begin;
            if (sp->processed_end > hi) hi = sp->processed_end;
        }
    }
    *range_begin = lo;
    *range_end = hi > lo ? hi : lo;
}

/* Global offset (elements) of packed row pr of an item in q/out. */
static size_t ref_q_offset(const ref_job *job, const ref_item *it, int pr)
{
    const swa_case *c = job->c;
    int group = swa_case_group_size(c);
    size_t row = (size_t)job->in->qo_indptr[it->request] + it->row_begin + pr / group;
    size_t head = (size_t)it->kv_head * group + pr % group;
    return (row * c->num_qo_heads + head) * c->head_dim;
}

/* ------------------------------------------------------------------------- */
/* Exact block, double. */

/* Keys per chunk of the exact path: the double copies of a K or V chunk
 * (chunk * head_dim * 8 bytes) stay within 256 KiB, so widening and the
 * GEMM that reads them meet in L2 instead of going through memory. */
static int ref_key_chunk(int width, int head_dim)
{
    int chunk = (int)(((size_t)256 << 10) / ((size_t)head_dim * sizeof(double)));
    if (chunk < 32)
        chunk = 32;
    return chunk < width ? chunk : width;
}

/* dst[n][D] = src rows (stride floats apart) widened to double.  Returns
 * false when a value is NaN or Inf (x * 0 is NaN exactly then). */
static bool ref_widen_rows(double *dst, const float *src, int n, size_t stride, int D)
{
    double poison[4] = {0, 0, 0, 0};
    for (int t = 0; t < n; t++) {
        const float *row = src + (size_t)t * stride;
        double *out = dst + (size_t)t * D;
        int d = 0;
        for (; d + 4 <= D; d += 4)
            for (int u = 0; u < 4; u++) {
                out[d + u] = row[d + u];
                poison[u] += out[d + u] * 0.0;
            }
        for (; d < D; d++) {
            out[d] = row[d];
            poison[0] += out[d] * 0.0;
        }
    }
    return !isnan(poison[0] + poison[1] + poison[2] + poison[3]);
}

static int ref_block_exact(ref_job *job, ref_scratch *w, const ref_item *it)
{
    const swa_case *c = job->c;
    const swa_inputs *in = job->in;
    const int group = swa_case_group_size(c), D = c->head_dim, Hkv = c->num_kv_heads;
    const int rows = (it->row_end - it->row_begin) * group;
    const double cap = c->soft_cap;

    if (ref_scratch_reserve(w, (size_t)rows, 0, (size_t)D, sizeof(double), 0))
        return -1;
    int lo, hi;
    ref_block_spans(job, it, w->spans, &lo, &hi);
    const int W = hi - lo;
    if (W == 0) { /* no packed row of the block sees a key */
        for (int pr = 0; pr < rows; pr++) {
            size_t off = ref_q_offset(job, it, pr);
            memset(job->out + off, 0, (size_t)D * sizeof(double));
            if (job->lse)
                job->lse[off / D] = -INFINITY;
        }
        return 0;
    }
    const int chunk = ref_key_chunk(W, D);
    if (ref_scratch_reserve(w, (size_t)rows, (size_t)W, (size_t)D, sizeof(double), chunk))
        return -1;
    double *q = w->q, *k = w->k, *v = w->v, *s = w->s, *o = w->o;

    for (int pr = 0; pr < rows; pr++) {
        const float *src = in->q + ref_q_offset(job, it, pr);
        for (int d = 0; d < D; d++)
            q[(size_t)pr * D + d] = src[d];
    }
    const size_t kv_stride = (size_t)Hkv * D;
    const size_t kv_first = (((size_t)in->kv_indptr[it->request] + lo) * Hkv + it->kv_head) * D;

    /* S = (Q K^T) * sm_scale over the block's key range, a chunk of keys at
     * a time so the double copy of K stays in cache */
    for (int c0 = 0; c0 < W; c0 += chunk) {
        int n = W - c0 < chunk ? W - c0 : chunk;
        ref_widen_rows(k, in->k + kv_first + (size_t)c0 * kv_stride, n, kv_stride, D);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, D, c->sm_scale, q, D, k, D, 0.0,
                    s + c0, W);
    }

    /* exact mask + soft cap + max-subtracted softmax numerators, per row */
    for (int pr = 0; pr < rows; pr++) {
        const ref_row_span *sp = &w->spans[pr];
        double *row = s + (size_t)pr * W;
        int pb = sp->processed_begin - lo, pe = sp->processed_end - lo;
        int vb = sp->visible_begin - lo, ve = sp->visible_end - lo;
        if (pe <= pb) {
            memset(row, 0, (size_t)W * sizeof(double));
            w->row_sum[pr] = 0.0;
            continue;
        }
        for (int j = 0; j < pb; j++) row[j] = 0.0;
        for (int j = pe; j < W; j++) row[j] = 0.0;
        if (cap > 0)
            for (int j = vb; j < ve; j++)
                row[j] = cap * tanh(row[j] / cap);
        /* processed but masked keys: the soft-cap-before-mask quirk */
        for (int j = pb; j < vb; j++) row[j] = -cap;
        for (int j = ve > pb ? ve : pb; j < pe; j++) row[j] = -cap;
        double m = -INFINITY;
        bool nan_seen = false;
        for (int j = pb; j < pe; j++) {
            m = row[j] > m ? row[j] : m;
            nan_seen |= row[j] != row[j];
        }
        if (nan_seen) /* a NaN logit makes the whole row NaN, as in exact math */
            m = NAN;
        double sum = 0.0;
        for (int j = pb; j < pe; j++) {
            double e = ref_exp_nonpositive(row[j] - m);
            row[j] = e;
            sum += e;
        }
        w->row_sum[pr] = sum;
        if (job->lse)
            job->lse[ref_q_offset(job, it, pr) / D] = m + log(sum);
    }

    /* O = P V, chunk by chunk.  Masked weights are exact zeros, which is
     * exclusion unless a V value in the chunk is NaN/Inf (0 * Inf = NaN):
     * then each row sums only its own keys of that chunk. */
    for (int c0 = 0; c0 < W; c0 += chunk) {
        int n = W - c0 < chunk ? W - c0 : chunk;
        bool finite = ref_widen_rows(v, in->v + kv_first + (size_t)c0 * kv_stride, n, kv_stride, D);
        if (finite) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, n, 1.0, s + c0, W, v, D,
                        c0 ? 1.0 : 0.0, o, D);
            continue;
        }
        for (int pr = 0; pr < rows; pr++) {
            const ref_row_span *sp = &w->spans[pr];
            double *orow = o + (size_t)pr * D;
            const double *prow = s + (size_t)pr * W;
            if (c0 == 0)
                for (int d = 0; d < D; d++) orow[d] = 0.0;
            int jb = sp->processed_begin - lo > c0 ? sp->processed_begin - lo : c0;
            int je = sp->processed_end - lo < c0 + n ? sp->processed_end - lo : c0 + n;
            for (int j = jb; j < je; j++)
                for (int d = 0; d < D; d++)
                    orow[d] += prow[j] * v[(size_t)(j - c0) * D + d];
        }
    }
    for (int pr = 0; pr < rows; pr++) {
        double *dst = job->out + ref_q_offset(job, it, pr);
        const ref_row_span *sp = &w->spans[pr];
        if (sp->processed_end <= sp->processed_begin) { /* no visible key: 0 and -inf */
            memset(dst, 0, (size_t)D * sizeof(double));
            if (job->lse)
                job->lse[ref_q_offset(job, it, pr) / D] = -INFINITY;
            continue;
        }
        double sum = w->row_sum[pr];
        for (int d = 0; d < D; d++)
            dst[d] = o[(size_t)pr * D + d] / sum;
    }
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Low-precision block: what a straightforward kernel in the case dtype
 * rounds, the way FlashAttention's test reference does without upcasting:
 * scores are fp32 dot products, scaled and rounded to dtype (and the soft
 * cap's result rounded again), probabilities are computed in fp32 and
 * rounded to dtype, P V accumulates in fp32 and is rounded to dtype.  The
 * LSE is fp32 (no kernel stores it in dtype). */

static int ref_block_lowp(ref_job *job, ref_scratch *w, const ref_item *it)
{
    const swa_case *c = job->c;
    const swa_inputs *in = job->in;
    const swa_dtype dt = c->dtype;
    const int group = swa_case_group_size(c), D = c->head_dim, Hkv = c->num_kv_heads;
    const int rows = (it->row_end - it->row_begin) * group;
    const float cap = (float)c->soft_cap, scale = (float)c->sm_scale;

    if (ref_scratch_reserve(w, (size_t)rows, 0, (size_t)D, sizeof(float), 0))
        return -1;
    int lo, hi;
    ref_block_spans(job, it, w->spans, &lo, &hi);
    const int W = hi - lo;
    if (W == 0) {
        for (int pr = 0; pr < rows; pr++) {
            size_t off = ref_q_offset(job, it, pr);
            memset(job->out_f + off, 0, (size_t)D * sizeof(float));
            if (job->lse_f)
                job->lse_f[off / D] = -INFINITY;
        }
        return 0;
    }
    if (ref_scratch_reserve(w, (size_t)rows, (size_t)W, (size_t)D, sizeof(float), 0))
        return -1;
    float *q = w->q, *s = w->s, *o = w->o;
    for (int pr = 0; pr < rows; pr++)
        memcpy(q + (size_t)pr * D, in->q + ref_q_offset(job, it, pr), (size_t)D * sizeof(float));
    /* K and V rows of one kv head are evenly strided: no copy needed */
    size_t kv_off = (((size_t)in->kv_indptr[it->request] + lo) * Hkv + it->kv_head) * D;
    const float *k = in->k + kv_off, *v = in->v + kv_off;
    const int ld = Hkv * D;
    float poison[4] = {0, 0, 0, 0}; /* x * 0 is NaN exactly when x is NaN or Inf */
    for (int t = 0; t < W; t++)
        for (int d = 0; d < D; d++)
            poison[d & 3] += v[(size_t)t * ld + d] * 0.0f;
    const float v_poison = poison[0] + poison[1] + poison[2] + poison[3];

    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, W, D, 1.0f, q, D, k, ld, 0.0f, s, W);

    for (int pr = 0; pr < rows; pr++) {
        const ref_row_span *sp = &w->spans[pr];
        float *row = s + (size_t)pr * W;
        int pb = sp->processed_begin - lo, pe = sp->processed_end - lo;
        int vb = sp->visible_begin - lo, ve = sp->visible_end - lo;
        if (pe <= pb) {
            memset(row, 0, (size_t)W * sizeof(float));
            w->row_sum_f[pr] = 0.0f;
            continue;
        }
        for (int j = 0; j < pb; j++) row[j] = 0.0f;
        for (int j = pe; j < W; j++) row[j] = 0.0f;
        float m = -INFINITY;
        for (int j = pb; j < pe; j++) {
            float x;
            if (j >= vb && j < ve) {
                x = swa_round_to(dt, row[j] * scale);
                if (cap > 0)
                    x = swa_round_to(dt, cap * tanhf(x / cap));
            } else {
                x = swa_round_to(dt, -cap);
            }
            row[j] = x;
            if (x > m || isnan(x))
                m = isnan(m) ? m : x;
        }
        float sum = 0.0f;
        for (int j = pb; j < pe; j++) {
            float e = expf(row[j] - m);
            row[j] = e;
            sum += e;
        }
        for (int j = pb; j < pe; j++)
            row[j] = swa_round_to(dt, row[j] / sum);
        w->row_sum_f[pr] = sum;
        if (job->lse_f)
            job->lse_f[ref_q_offset(job, it, pr) / D] = m + logf(sum);
    }

    if (!isnan(v_poison)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, W, 1.0f, s, W, v, ld, 0.0f, o, D);
    } else {
        for (int pr = 0; pr < rows; pr++) {
            const ref_row_span *sp = &w->spans[pr];
            float *orow = o + (size_t)pr * D;
            const float *prow = s + (size_t)pr * W;
            for (int d = 0; d < D; d++) orow[d] = 0.0f;
            for (int j = sp->processed_begin - lo; j < sp->processed_end - lo; j++)
                for (int d = 0; d < D; d++)
                    orow[d] += prow[j] * v[(size_t)j * ld + d];
        }
    }
    for (int pr = 0; pr < rows; pr++) {
        size_t off = ref_q_offset(job, it, pr);
        float *dst = job->out_f + off;
        const ref_row_span *sp = &w->spans[pr];
        if (sp->processed_end <= sp->processed_begin) {
            memset(dst, 0, (size_t)D * sizeof(float));
            if (job->lse_f)
                job->lse_f[off / D] = -INFINITY;
            continue;
        }
        for (int d = 0; d < D; d++)
            dst[d] = swa_round_to(dt, o[(size_t)pr * D + d]);
    }
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Scheduling. */

static void *ref_worker_main(void *arg)
{
    ref_job *job = arg;
    ref_scratch w;
    memset(&w, 0, sizeof w);
    for (;;) {
        if (atomic_load(&job->failed))
            break;
        int i = atomic_fetch_add(&job->next, 1);
        if (i >= job->num_items)
            break;
        int rc = job->lowp ? ref_block_lowp(job, &w, &job->items[i])
                           : ref_block_exact(job, &w, &job->items[i]);
        if (rc) {
            atomic_store(&job->failed, 1);
            break;
        }
    }
    ref_scratch_free(&w);
    return NULL;
}

static swa_status ref_build_items(ref_job *job, swa_error *err)
{
    const swa_case *c = job->c;
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        n = 0;
        for (int r = 0; r < c->num_requests; r++) {
            int qo_len = c->qo_len[r];
            if (qo_len == 0)
                continue;
            int block = ref_block_rows(c, &job->mask, qo_len, c->kv_len[r]);
            const swa_ref_sample *s = job->sample;
            const unsigned char *rows = s && s->rows ? s->rows + job->in->qo_indptr[r] : NULL;
            for (int g = 0; g < c->num_kv_heads; g++) {
                if (s && s->kv_heads && !s->kv_heads[g])
                    continue;
                /* blocks of consecutive selected rows (all rows without a sample) */
                for (int row = 0; row < qo_len;) {
                    if (rows && !rows[row]) {
                        row++;
                        continue;
                    }
                    int end = row + 1;
                    while (end < qo_len && end - row < block && (!rows || rows[end]))
                        end++;
                    if (pass == 1) {
                        ref_item *it = &job->items[n];
                        it->request = r;
                        it->kv_head = g;
                        it->row_begin = row;
                        it->row_end = end;
                    }
                    n++;
                    row = end;
                }
            }
        }
        if (pass == 0) {
            if (n > (size_t)INT32_MAX)
                return swa_error_set(err, SWA_ERR_INVALID, "reference: case %s: too many work items",
                                     c->id);
            job->items = malloc((n ? n : 1) * sizeof *job->items);
            if (!job->items)
                return swa_error_set(err, SWA_ERR_NOMEM, "reference: case %s: out of memory (%zu items)",
                                     c->id, n);
        }
    }
    job->num_items = (int)n;
    return SWA_OK;
}

static swa_status ref_run(ref_job *job, swa_error *err)
{
    ref_exp_init();
    swa_status st = ref_build_items(job, err);
    if (st != SWA_OK)
        return st;
    atomic_store(&job->next, 0);
    atomic_store(&job->failed, 0);

    pthread_mutex_lock(&g_call_lock);
    int saved_blas_threads = openblas_get_num_threads();
    /* under ulimit -v, no more threads than have room for their BLAS
     * buffers: OpenBLAS spins for ever on one it cannot map */
    int threads = swa_blas_threads_cap(ref_resolved_threads());
    if (atomic_load(&g_parallel_mode) == REF_PAR_BLAS) {
        openblas_set_num_threads(threads);
        ref_worker_main(job);
    } else {
        int workers = threads < job->num_items ? threads : job->num_items;
        if (workers < 1)
            workers = 1;
        pthread_t tid[256];
        if (workers > 256)
            workers = 256;
        openblas_set_num_threads(1);
        int started = 0;
        for (int i = 1; i < workers; i++) {
            if (pthread_create(&tid[started], NULL, ref_worker_main, job) != 0)
                break; /* fewer workers; the items still all get done */
            started++;
        }
        ref_worker_main(job);
        for (int i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
    }
    openblas_set_num_threads(saved_blas_threads);
    pthread_mutex_unlock(&g_call_lock);

    free(job->items);
    job->items = NULL;
    if (atomic_load(&job->failed))
        return swa_error_set(err, SWA_ERR_NOMEM,
                             "reference: case %s: out of memory for the per-block scratch (scores "
                             "block up to %zu MiB per thread); try fewer threads", job->c->id,
                             REF_SCORES_BUDGET >> 20);
    return SWA_OK;
}

swa_status swa_reference(const swa_case *c, const swa_inputs *in, const swa_ref_mask *mask,
                         double *out, double *lse, swa_error *err)
{
    return swa_reference_sampled(c, in, mask, NULL, out, lse, err);
}

swa_status swa_reference_sampled(const swa_case *c, const swa_inputs *in, const swa_ref_mask *mask,
                                 const swa_ref_sample *sample, double *out, double *lse, swa_error *err)
{
    swa_status st = ref_validate(c, in, mask, err);
    if (st != SWA_OK)
        return st;
    if (!out && in->total_qo > 0)
        return swa_error_set(err, SWA_ERR_INVALID, "reference: case %s: out is NULL", c->id);
    ref_job job;
    memset(&job, 0, sizeof job);
    job.c = c;
    job.in = in;
    job.mask = mask ? *mask : swa_ref_mask_spec(c);
    job.sample = sample;
    job.out = out;
    job.lse = lse;
    return ref_run(&job, err);
}

swa_status swa_reference_lowp(const swa_case *c, const swa_inputs *in, float *out, float *lse,
                              swa_error *err)
{
    swa_status st = ref_validate(c, in, NULL, err);
    if (st != SWA_OK)
        return st;
    if (!out && in->total_qo > 0)
        return swa_error_set(err, SWA_ERR_INVALID, "reference (low precision): case %s: out is NULL",
                             c->id);
    ref_job job;
    memset(&job, 0, sizeof job);
    job.c = c;
    job.in = in;
    job.mask = swa_ref_mask_spec(c);
    job.lowp = true;
    job.out_f = out;
    job.lse_f = lse;
    return ref_run(&job, err);
}
