/* data.c — deterministic inputs for a case (README (Adding a case file)).
 *
 * Test: tests/test_data.c (known SplitMix64 outputs, determinism, rounding,
 * poison placement).
 *
 * Streams.  Each tensor draws from its own SplitMix64 stream, seeded with
 * splitmix64(case.seed ^ fnv1a64(name)) for the names "q", "k", "v" (and
 * "pages" for the page shuffle in paged.c), so adding a tensor or changing
 * one tensor's size never shifts another's values.  Values are drawn in the
 * logical layout order (token, head, dim) and rounded to the case dtype with
 * swa_round_to before anyone sees them.
 *
 * Distributions.
 *   normal   Irwin–Hall: sum of 12 uniforms minus 6 (mean 0, variance 1,
 *            tails cut at +-6), summed as exact 53-bit integers and scaled
 *            once.  No libm, so every machine agrees bit for bit.
 *   uniform  2u - 1, in [-1, 1).
 *   poison   normal values, except that keys no query of their request may
 *            see get V = +4096 (even dims) / -4096 (odd dims).  With
 *            prefix_len = kv_len - qo_len and window_left L >= 0, the first
 *            query row sits at p = prefix_len and sees nothing left of
 *            p - L; later rows see even less on the left, so keys
 *            k < prefix_len - L are invisible to every row, causal or not.
 *            Any weight a kernel gives them shows up as an error of order
 *            weight * 4096 — far beyond any tolerance.  4096 = 2^12 is exact
 *            in fp16, bf16 and fp32, and the signs alternate by dim so leaked
 *            rows cannot cancel.  K of those keys stays normal: kernels may
 *            legitimately compute (and then mask) their logits.
 * In every distribution, pool pages that no request references, and the
 * slots past kv_len in a request's last page, are NaN (paged.c). */
#include "core/data.h"

#include "core/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON_VALUE 4096.0f

/* ---------------------------------------------------------------------------
 * size estimate */

static size_t add_sat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t mul_sat(size_t a, size_t b) { return (a && b > SIZE_MAX / a) ? SIZE_MAX : a * b; }

static size_t pool_pages(const swa_case *c)
{
    size_t used = 0;
    for (int r = 0; r < c->num_requests; r++)
        used = add_sat(used, ((size_t)c->kv_len[r] + (size_t)c->page_size - 1) / (size_t)c->page_size);
    return add_sat(used, used / 4 > 0 ? used / 4 : 1); /* spare pages, as paged.c allocates */
}

size_t swa_case_host_bytes(const swa_case *c)
{
    size_t dsize = swa_dtype_size(c->dtype);
    size_t q_elems = mul_sat(mul_sat((size_t)swa_case_total_qo(c), (size_t)c->num_qo_heads), (size_t)c->head_dim);
    size_t kv_elems = mul_sat(mul_sat((size_t)swa_case_total_kv(c), (size_t)c->num_kv_heads), (size_t)c->head_dim);
    size_t rows = mul_sat((size_t)swa_case_total_qo(c), (size_t)c->num_qo_heads);
    int backends = 0;
    for (unsigned b = c->backends; b; b >>= 1)
        backends += b & 1u;

    size_t bytes = 0;
    /* q, k, v as exact floats and in dtype storage */
    bytes = add_sat(bytes, mul_sat(add_sat(q_elems, mul_sat(kv_elems, 2)), 4 + dsize));
    /* the paged pool, K and V */
    size_t page_elems = mul_sat(mul_sat((size_t)c->page_size, (size_t)c->num_kv_heads), (size_t)c->head_dim);
    bytes = add_sat(bytes, mul_sat(mul_sat(pool_pages(c), page_elems), 2 * dsize));
    /* page tables: indices, block tables (worst case: every request as long as the longest) */
    bytes = add_sat(bytes, mul_sat(pool_pages(c), sizeof(int)));
    bytes = add_sat(bytes, mul_sat(mul_sat((size_t)c->num_requests,
                                           ((size_t)swa_case_max_kv(c) + (size_t)c->page_size - 1) / (size_t)c->page_size),
                                   sizeof(int)));
    /* one output + LSE per backend (dtype / float) */
    bytes = add_sat(bytes, mul_sat((size_t)(backends ? backends : 1), add_sat(mul_sat(q_elems, dsize), mul_sat(rows, 4))));
    /* the double reference (out + LSE) and the low-precision reference (float) */
    bytes = add_sat(bytes, mul_sat(q_elems, 8 + 4));
    bytes = add_sat(bytes, mul_sat(rows, 8));
    return bytes;
}

/* ---------------------------------------------------------------------------
 * inputs */

static float draw(swa_rng *rng, swa_dist dist)
{
    return (float)(dist == SWA_DIST_UNIFORM ? 2.0 * swa_rng_uniform(rng) - 1.0 : swa_rng_normal(rng));
}

static swa_status check_case(const swa_case *c, swa_error *err)
{
    if (c->num_requests < 1 || !c->qo_len || !c->kv_len)
        return swa_error_set(err, SWA_ERR_INVALID, "case %s: expected at least one request", c->id);
    if (c->num_qo_heads < 1 || c->num_kv_heads < 1 || c->num_qo_heads % c->num_kv_heads)
        return swa_error_set(err, SWA_ERR_INVALID, "case %s: expected num_qo_heads (%d) a multiple of num_kv_heads (%d)",
                             c->id, c->num_qo_heads, c->num_kv_heads);
    if (c->head_dim < 1 || c->page_size < 1)
        return swa_error_set(err, SWA_ERR_INVALID, "case %s: expected head_dim and page_size >= 1, got %d and %d",
                             c->id, c->head_dim, c->page_size);
    long long total_qo = 0, total_kv = 0;
    for (int r = 0; r < c->num_requests; r++) {
        if (c->qo_len[r] < 1 || c->kv_len[r] < c->qo_len[r])
            return swa_error_set(err, SWA_ERR_INVALID, "case %s: request %d: expected 1 <= qo_len <= kv_len, got %d and %d",
                                 c->id, r, c->qo_len[r], c->kv_len[r]);
        total_qo += c->qo_len[r];
        total_kv += c->kv_len[r];
    }
    if (total_qo > INT32_MAX || total_kv > INT32_MAX)
        return swa_error_set(err, SWA_ERR_INVALID, "case %s: expected at most 2^31-1 tokens in all requests", c->id);
    return SWA_OK;
}

static swa_status fill_tensor(float *values, void *raw, size_t n, const swa_case *c, const char *stream)
{
    swa_rng rng;
    swa_rng_seed(&rng, c->seed, stream);
    for (size_t i = 0; i < n; i++) {
        values[i] = swa_round_to(c->dtype, draw(&rng, c->dist));
        swa_store(c->dtype, raw, i, values[i]);
    }
    return SWA_OK;
}

/* V of keys that no query row of the request may see (see the header). */
static void poison_invisible_values(const swa_case *c, swa_inputs *in)
{
    if (c->window_left < 0)
        return;
    size_t row = (size_t)c->num_kv_heads * (size_t)c->head_dim;
    for (int r = 0; r < c->num_requests; r++) {
        long long invisible = (long long)(c->kv_len[r] - c->qo_len[r]) - c->window_left;
        for (long long t = 0; t < invisible; t++) {
            size_t base = ((size_t)in->kv_indptr[r] + (size_t)t) * row;
            for (size_t j = 0; j < row; j++) {
                size_t d = j % (size_t)c->head_dim;
                float value = (d & 1) ? -POISON_VALUE : POISON_VALUE;
                in->v[base + j] = value;
                swa_store(c->dtype, in->v_raw, base + j, value);
            }
        }
    }
}

swa_status swa_inputs_create(const swa_case *c, swa_inputs *in, swa_error *err)
{
    memset(in, 0, sizeof *in);
    swa_status st = check_case(c, err);
    if (st != SWA_OK)
        return st;
    if (swa_case_host_bytes(c) == SIZE_MAX)
        return swa_error_set(err, SWA_ERR_NOMEM, "case %s: its tensors need more host memory than can be addressed", c->id);

    in->num_requests = c->num_requests;
    in->num_qo_heads = c->num_qo_heads;
    in->num_kv_heads = c->num_kv_heads;
    in->head_dim = c->head_dim;
    in->dtype = c->dtype;
    in->qo_indptr = malloc((size_t)(c->num_requests + 1) * sizeof *in->qo_indptr);
    in->kv_indptr = malloc((size_t)(c->num_requests + 1) * sizeof *in->kv_indptr);
    if (!in->qo_indptr || !in->kv_indptr)
        goto nomem;
    in->qo_indptr[0] = in->kv_indptr[0] = 0;
    for (int r = 0; r < c->num_requests; r++) {
        in->qo_indptr[r + 1] = in->qo_indptr[r] + c->qo_len[r];
        in->kv_indptr[r + 1] = in->kv_indptr[r] + c->kv_len[r];
    }
    in->total_qo = in->qo_indptr[c->num_requests];
    in->total_kv = in->kv_indptr[c->num_requests];

    size_t q_elems = (size_t)in->total_qo * (size_t)c->num_qo_heads * (size_t)c->head_dim;
    size_t kv_elems = (size_t)in->total_kv * (size_t)c->num_kv_heads * (size_t)c->head_dim;
    size_t dsize = swa_dtype_size(c->dtype);
    in->q = malloc(q_elems * sizeof(float));
    in->k = malloc(kv_elems * sizeof(float));
    in->v = malloc(kv_elems * sizeof(float));
    in->q_raw = malloc(q_elems * dsize);
    in->k_raw = malloc(kv_elems * dsize);
    in->v_raw = malloc(kv_elems * dsize);
    if (!in->q || !in->k || !in->v || !in->q_raw || !in->k_raw || !in->v_raw)
        goto nomem;

    fill_tensor(in->q, in->q_raw, q_elems, c, "q");
    fill_tensor(in->k, in->k_raw, kv_elems, c, "k");
    fill_tensor(in->v, in->v_raw, kv_elems, c, "v");
    if (c->dist == SWA_DIST_POISON)
        poison_invisible_values(c, in);

    st = swa_paged_build(&in->paged, c->dtype, c->layout, c->page_size, c->num_requests, c->kv_len,
                         c->num_kv_heads, c->head_dim, in->k, in->v, c->seed, err);
    if (st != SWA_OK) {
        swa_inputs_free(in);
        return st;
    }
    return SWA_OK;

nomem:
    swa_inputs_free(in);
    return swa_error_set(err, SWA_ERR_NOMEM, "case %s: out of host memory for its inputs (about %zu bytes)", c->id,
                         swa_case_host_bytes(c));
}

void swa_inputs_free(swa_inputs *in)
{
    if (!in)
        return;
    free(in->qo_indptr);
    free(in->kv_indptr);
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->q_raw);
    free(in->k_raw);
    free(in->v_raw);
    swa_paged_free(&in->paged);
    memset(in, 0, sizeof *in);
}
