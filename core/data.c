/* data.c — deterministic inputs for a case (docs/cases.md).
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
 *   poison   normal values, except for what no query row of the request
 *            may see, which a correct kernel must exclude (never merely
 *            down-weight).  With prefix p0 = max(0, kv_len - qo_len), the
 *            first row with a key sits at p0 and its left bound
 *            f = max(p0 - L, floor(p0/C)*C, 0) (L = window_left >= 0, C =
 *            chunk_size > 0) is the lowest of all rows, causal or not:
 *            keys k < f are invisible to every row (swa_poison_first_visible).
 *            - Those keys get K = NaN and V = +4096 (even dims) / -4096 (odd
 *              dims).  K may be NaN because a correct kernel either skips
 *              a masked key's logit or replaces it (s = -inf): a tile that
 *              straddles the window start is loaded whole and masked by
 *              replacement, and NaN replaced is gone.  V must stay finite
 *              there: the P.V product of a loaded tile multiplies masked
 *              keys' V by P = 0, and 0 * NaN = NaN.  4096 = 2^12 is exact
 *              in fp16, bf16 and fp32; signs alternate by dim so leaked
 *              weight cannot cancel (error ~ weight * 4096).
 *            - Pages wholly before e = align_down(f, SWA_POISON_EVICT_ALIGN
 *              = 256) are evicted (swa_poison_evicted_pages), as an engine
 *              that frees out-of-window pages does: both page tables
 *              (FlashInfer indices and AITER block_tables) point those
 *              entries at one shared evicted page, and every evicted page,
 *              K and V, is NaN (paged.c swa_paged_evict_prefix).  Here V is
 *              NaN too, so only pages no correct backend loads at all may be
 *              evicted.  Where each backend starts loading: prefill at
 *              align_down(first visible key of the tile's first row,
 *              cta_tile_kv = 32 or 64) >= align_down(f, 64); decode_fa2 at
 *              the page holding its window start (>= f's page); decode_aiter
 *              skips partitions (256 keys, from key 0) wholly before the
 *              window and loads the straddling one whole, from
 *              align_down(f, 256).  256 is a multiple of every prefill tile,
 *              so every page a correct backend touches holds a key >= e and
 *              is not evicted.  A kernel that starts at key 0 (no KV-start
 *              skip) or reads a page before its window meets NaN.
 *            The logical k/v keep the same values (the evicted pages' real
 *            contents, with K NaN before f): the reference reads only
 *            visible keys.
 *   edge     window-edge data: a window one key too short or too long moves
 *            the output of every row by far more than the tolerance, for any
 *            window_left (the issue "Detection power, measured": with normal
 *            data a one-key error at L = 1023 moves a bf16 output by ~1e-3,
 *            under the 1e-2 tolerance).  Construction, per request:
 *            - Logits depend on the key only.  Every row has the same
 *              q . k_k = c_h * t(k): K is zero except dims 0 and 1, which
 *              hold t(k) = 64 * hi + lo (lo in [0, 64), |hi| <= 256: small
 *              integers, exact in fp16, bf16 and fp32), and q holds c_h and
 *              64 * c_h there (other dims of q are normal and meet zeros).
 *              The products and their sum c_h * t are exact in fp32, so
 *              every kernel and the reference see the same logits.
 *            - t(k) falls by one per key across the band of window edges
 *              [e_lo - M, e_hi + M], e_lo = p_first - L - 1 (the first
 *              row's first invisible key) and e_hi = p_last - L (the last
 *              row's first visible key), and is flat outside it.  So for
 *              every row the first visible key k = p - L has the highest
 *              logit of the window, the next ones fall geometrically
 *              (ratio e^-delta), and the first invisible key p - L - 1
 *              would rank above it.  M keys of margin past e_hi put the
 *              rest of the window at least 24 nats below the edge key:
 *              e^-24 = 3.8e-11 each, 3e-7 of the edge's weight in all for
 *              L = 8191.
 *            - c_h = delta_h / sm_scale, delta_h = delta * (1, 1.25, 1.5,
 *              1.75) by qo head % 4 (heads differ, so a head mix-up shows),
 *              delta = 2 nats unless the band is long (long prefill) or the
 *              dtype cannot hold 64 * c_h (fp16, tiny sm_scale): then delta
 *              shrinks to keep |logit| <= 2000 nats and q finite.  t is
 *              centred on the band, so the rows' edge keys sit at t in
 *              [-qo_len/2, qo_len/2]; under a soft cap delta also shrinks
 *              until their logits stay within +-cap/2, where the cap keeps
 *              them distinct (slope of c tanh(s/c) >= 0.79).
 *            - V alternates in sign with the key (and with dim and kv head),
 *              magnitudes 0.5 + uniform[0, 1).  The output of a row is
 *              about w0 v(p-L) + w1 v(p-L+1) + ..., dominated by the edge
 *              key with alternating signs, so moving the edge by one key
 *              flips the sign of most of the output: |diff| ~ 1 against a
 *              bf16 allowance of ~0.02 (tests/test_edge_data.c measures the
 *              margins for L = 1023, 4095, 8191).
 *            With window_left = -1 the edge is key 0 for every row.  Rows
 *            where the window does not bind see key 0 first and are
 *            dominated by it.
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

size_t swa_case_device_bytes(const swa_case *c, size_t guard_bytes)
{
    size_t dsize = swa_dtype_size(c->dtype);
    size_t q_elems = mul_sat(mul_sat((size_t)swa_case_total_qo(c), (size_t)c->num_qo_heads), (size_t)c->head_dim);
    size_t kv_elems = mul_sat(mul_sat((size_t)swa_case_total_kv(c), (size_t)c->num_kv_heads), (size_t)c->head_dim);
    size_t rows = mul_sat((size_t)swa_case_total_qo(c), (size_t)c->num_qo_heads);
    size_t page_elems = mul_sat(mul_sat((size_t)c->page_size, (size_t)c->num_kv_heads), (size_t)c->head_dim);
    size_t bytes = mul_sat(q_elems, dsize);
    bytes = add_sat(bytes, mul_sat(mul_sat(pool_pages(c), page_elems), 2 * dsize)); /* paged K, V */
    bytes = add_sat(bytes, mul_sat(kv_elems, 2 * dsize));                          /* ragged K, V */
    bytes = add_sat(bytes, mul_sat(add_sat(pool_pages(c), (size_t)c->num_requests + 1), sizeof(int)));
    bytes = add_sat(bytes, add_sat(mul_sat(q_elems, dsize), mul_sat(rows, 4)));     /* out, LSE */
    bytes = add_sat(bytes, mul_sat(guard_bytes, 4));
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
        if (c->qo_len[r] < 1 || c->kv_len[r] < 1) /* qo_len > kv_len: rows at p < 0, empty */
            return swa_error_set(err, SWA_ERR_INVALID, "case %s: request %d: expected qo_len >= 1 and kv_len >= 1, got "
                                 "%d and %d", c->id, r, c->qo_len[r], c->kv_len[r]);
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

/* First key that some query row of request r may see (see the header):
 * a row's left bound max(p - L, floor(p/C)*C, 0) grows with p, so the first
 * row with p >= 0 bounds the request.  0 when nothing is cut off. */
int swa_poison_first_visible(const swa_case *c, int r)
{
    long long p = (long long)c->kv_len[r] - c->qo_len[r];
    if (p < 0)
        p = 0;
    long long lo = 0;
    if (c->window_left >= 0 && p - c->window_left > lo)
        lo = p - c->window_left;
    if (c->chunk_size > 0 && p - p % c->chunk_size > lo)
        lo = p - p % c->chunk_size;
    return lo > c->kv_len[r] ? c->kv_len[r] : (int)lo;
}

/* Pages of request r that are evicted under poison: those wholly before
 * SWA_POISON_EVICT_ALIGN-aligned first visible key (see the header). */
int swa_poison_evicted_pages(const swa_case *c, int r)
{
    int keep_from = swa_poison_first_visible(c, r);
    keep_from -= keep_from % SWA_POISON_EVICT_ALIGN;
    return keep_from / c->page_size;
}

/* K = NaN, V = +-4096 for the keys no query row of the request may see. */
static void poison_invisible_keys(const swa_case *c, swa_inputs *in)
{
    size_t row = (size_t)c->num_kv_heads * (size_t)c->head_dim;
    float nan = swa_bits_f32(0x7fc00000u);
    for (int r = 0; r < c->num_requests; r++) {
        int invisible = swa_poison_first_visible(c, r);
        for (int t = 0; t < invisible; t++) {
            size_t base = ((size_t)in->kv_indptr[r] + (size_t)t) * row;
            for (size_t j = 0; j < row; j++) {
                size_t d = j % (size_t)c->head_dim;
                float value = (d & 1) ? -POISON_VALUE : POISON_VALUE;
                in->v[base + j] = value;
                swa_store(c->dtype, in->v_raw, base + j, value);
                in->k[base + j] = nan;
                swa_store(c->dtype, in->k_raw, base + j, nan);
            }
        }
    }
}

/* Evicts the pages wholly before every row's reach (see the header). */
static swa_status poison_evict_pages(const swa_case *c, swa_inputs *in, swa_error *err)
{
    int *evict = malloc((size_t)c->num_requests * sizeof *evict);
    if (!evict)
        return swa_error_set(err, SWA_ERR_NOMEM, "case %s: out of host memory for the eviction list", c->id);
    for (int r = 0; r < c->num_requests; r++)
        evict[r] = swa_poison_evicted_pages(c, r);
    in->evicted_page = swa_paged_evict_prefix(&in->paged, evict);
    free(evict);
    return SWA_OK;
}

/* ---------------------------------------------------------------------------
 * edge data (see the header comment) */

#define EDGE_DELTA 2.0         /* nats between neighbouring keys of the band */
#define EDGE_TAIL 24.0         /* nats from a row's edge key down to the flat interior */
#define EDGE_MAX_NATS 2000.0   /* bound on |logit| anywhere */
#define EDGE_HEAD_SPAN 1.75    /* delta_h / delta of the steepest head */
#define EDGE_DIGIT 64          /* t = EDGE_DIGIT * hi + lo */
#define EDGE_T_MAX 16383       /* |hi| <= 256: exact integers in bf16 */
#define EDGE_MARGIN_MAX 4096

typedef struct edge_band {
    long long right, left; /* t falls from left to right; flat outside [left, right] */
    long long centre;      /* t = (right - clamp(k)) - centre */
    double delta;          /* nats per key of head 0 (heads % 4 == 0) */
} edge_band;

static edge_band edge_band_of(const swa_case *c, int r)
{
    const long long qo = c->qo_len[r], kv = c->kv_len[r], L = c->window_left, C = c->chunk_size;
    /* e_hi: the last row's first visible key; e_lo: the first row's first
     * invisible key.  No window: key 0 is every row's edge.  Chunked: the
     * rows' first keys are the chunk starts floor(p/C)*C, from the first
     * row's chunk (swa_poison_first_visible) to the last row's. */
    long long e_hi = L >= 0 ? kv - 1 - L : 0, e_lo = L >= 0 ? kv - qo - L - 1 : -1;
    if (C > 0) {
        e_hi = (kv - 1) - (kv - 1) % C;
        e_lo = (long long)swa_poison_first_visible(c, r) - 1;
    }
    double scale = c->sm_scale < 0 ? -c->sm_scale : c->sm_scale;
    double delta = EDGE_DELTA;
    /* fp16 must hold 64 * c_h: c_h <= 1023 */
    double c_max = c->dtype == SWA_DTYPE_FP16 ? 1023.0 : 1e30;
    if (delta * EDGE_HEAD_SPAN > c_max * scale)
        delta = c_max * scale / EDGE_HEAD_SPAN;
    /* the rows' edge keys sit at t in [-qo/2, qo/2]: keep their logits
     * within +-cap/2, where c tanh(s/c) still has slope >= 0.79 */
    if (c->soft_cap > 0 && delta * EDGE_HEAD_SPAN * (double)qo > c->soft_cap)
        delta = c->soft_cap / (EDGE_HEAD_SPAN * (double)qo);
    long long margin = 1;
    for (int it = 0; it < 16; it++) { /* margin and delta depend on each other; converges in 2-3 */
        double m = EDGE_TAIL / (delta > 0 ? delta : 1e-30);
        margin = m > EDGE_MARGIN_MAX ? EDGE_MARGIN_MAX : (long long)m + 1;
        double n = (double)(e_hi - e_lo) + 2.0 * (double)margin;
        double limit = 2.0 * EDGE_MAX_NATS / (EDGE_HEAD_SPAN * n);
        if (delta <= limit)
            break;
        delta = limit;
    }
    edge_band b = {e_hi + margin, e_lo - margin, 0, delta};
    b.centre = (b.right - b.left) / 2;
    return b;
}

static long long edge_t(const edge_band *b, long long k)
{
    long long kk = k < b->left ? b->left : k > b->right ? b->right : k;
    long long t = (b->right - kk) - b->centre;
    return t < -EDGE_T_MAX ? -EDGE_T_MAX : t > EDGE_T_MAX ? EDGE_T_MAX : t;
}

static void put(const swa_case *c, float *values, void *raw, size_t i, float x)
{
    values[i] = swa_round_to(c->dtype, x);
    swa_store(c->dtype, raw, i, values[i]);
}

static void fill_edge(const swa_case *c, swa_inputs *in)
{
    const int D = c->head_dim, Hq = c->num_qo_heads, Hk = c->num_kv_heads;
    swa_rng qrng, vrng;
    swa_rng_seed(&qrng, c->seed, "q");
    swa_rng_seed(&vrng, c->seed, "v");
    for (int r = 0; r < c->num_requests; r++) {
        edge_band band = edge_band_of(c, r);
        /* q: normal except dims 0 and 1, which carry c_h and 64 c_h */
        for (int i = in->qo_indptr[r]; i < in->qo_indptr[r + 1]; i++)
            for (int h = 0; h < Hq; h++) {
                size_t base = ((size_t)i * Hq + h) * D;
                for (int d = 0; d < D; d++)
                    put(c, in->q, in->q_raw, base + d, (float)swa_rng_normal(&qrng));
                double ch = c->sm_scale == 0 ? 0 : band.delta * (1.0 + 0.25 * (h % 4)) / c->sm_scale;
                put(c, in->q, in->q_raw, base, (float)ch);
                if (D > 1) /* 64 x a dtype value: exact */
                    put(c, in->q, in->q_raw, base + 1, in->q[base] * (float)EDGE_DIGIT);
            }
        /* k: t(k) in dims 0 and 1, zero elsewhere; v: alternating signs */
        for (int t = 0; t < c->kv_len[r]; t++) {
            long long tk = edge_t(&band, t);
            long long lo = ((tk % EDGE_DIGIT) + EDGE_DIGIT) % EDGE_DIGIT, hi = (tk - lo) / EDGE_DIGIT;
            if (D == 1) /* one dim: t itself, clamped to what bf16 holds exactly */
                lo = tk < -256 ? -256 : tk > 256 ? 256 : tk;
            for (int hk = 0; hk < Hk; hk++) {
                size_t base = (((size_t)in->kv_indptr[r] + t) * Hk + hk) * D;
                for (int d = 0; d < D; d++) {
                    float kx = d == 0 ? (float)lo : d == 1 ? (float)hi : 0.0f;
                    put(c, in->k, in->k_raw, base + d, kx);
                    float mag = (float)(0.5 + swa_rng_uniform(&vrng));
                    put(c, in->v, in->v_raw, base + d, ((t + d + hk) & 1) ? -mag : mag);
                }
            }
        }
    }
}

/* The paged cache of c's requests from in's logical K/V (pages shuffled by
 * seed), poisoned pages evicted: the last step of swa_inputs_create and of
 * swa_inputs_derive.  Frees in on failure. */
static swa_status build_pages(const swa_case *c, swa_inputs *in, uint64_t seed, swa_error *err)
{
    swa_status st = swa_paged_build(&in->paged, c->dtype, c->layout, c->page_size, c->num_requests, c->kv_len,
                                    c->num_kv_heads, c->head_dim, in->k, in->v, seed, err);
    in->evicted_page = -1;
    if (st == SWA_OK && c->dist == SWA_DIST_POISON)
        st = poison_evict_pages(c, in, err);
    if (st != SWA_OK)
        swa_inputs_free(in);
    return st;
}

swa_status swa_inputs_create(const swa_case *c, swa_inputs *in, swa_error *err)
{
    memset(in, 0, sizeof *in);
    in->evicted_page = -1;
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

    if (c->dist == SWA_DIST_EDGE) {
        fill_edge(c, in);
    } else {
        fill_tensor(in->q, in->q_raw, q_elems, c, "q");
        fill_tensor(in->k, in->k_raw, kv_elems, c, "k");
        fill_tensor(in->v, in->v_raw, kv_elems, c, "v");
        if (c->dist == SWA_DIST_POISON)
            poison_invisible_keys(c, in);
    }

    return build_pages(c, in, c->seed, err);

nomem:
    swa_inputs_free(in);
    return swa_error_set(err, SWA_ERR_NOMEM, "case %s: out of host memory for its inputs (about %zu bytes)", c->id,
                         swa_case_host_bytes(c));
}

swa_status swa_inputs_derive(const swa_inputs *base, const swa_case *base_case, const swa_case *nc,
                             const int *from, uint64_t page_seed, swa_inputs *in, swa_error *err)
{
    memset(in, 0, sizeof *in);
    in->evicted_page = -1;
    swa_status st = check_case(nc, err);
    if (st != SWA_OK)
        return st;
    int n = nc->num_requests;
    for (int i = 0; i < n; i++)
        if (from[i] < 0 || from[i] >= base->num_requests || nc->qo_len[i] != base_case->qo_len[from[i]] ||
            nc->kv_len[i] != base_case->kv_len[from[i]])
            return swa_error_set(err, SWA_ERR_INVALID, "case %s: derived request %d does not match request %d of "
                                 "the case", nc->id, i, from[i]);
    in->num_requests = n;
    in->num_qo_heads = base->num_qo_heads;
    in->num_kv_heads = base->num_kv_heads;
    in->head_dim = base->head_dim;
    in->dtype = base->dtype;
    in->qo_indptr = malloc((size_t)(n + 1) * sizeof *in->qo_indptr);
    in->kv_indptr = malloc((size_t)(n + 1) * sizeof *in->kv_indptr);
    if (!in->qo_indptr || !in->kv_indptr)
        goto nomem;
    in->qo_indptr[0] = in->kv_indptr[0] = 0;
    for (int i = 0; i < n; i++) {
        in->qo_indptr[i + 1] = in->qo_indptr[i] + nc->qo_len[i];
        in->kv_indptr[i + 1] = in->kv_indptr[i] + nc->kv_len[i];
    }
    in->total_qo = in->qo_indptr[n];
    in->total_kv = in->kv_indptr[n];
    size_t q_row = (size_t)base->num_qo_heads * (size_t)base->head_dim;
    size_t kv_row = (size_t)base->num_kv_heads * (size_t)base->head_dim;
    size_t dsize = swa_dtype_size(base->dtype);
    in->q = malloc((size_t)in->total_qo * q_row * sizeof(float) + 1);
    in->k = malloc((size_t)in->total_kv * kv_row * sizeof(float) + 1);
    in->v = malloc((size_t)in->total_kv * kv_row * sizeof(float) + 1);
    in->q_raw = malloc((size_t)in->total_qo * q_row * dsize + 1);
    in->k_raw = malloc((size_t)in->total_kv * kv_row * dsize + 1);
    in->v_raw = malloc((size_t)in->total_kv * kv_row * dsize + 1);
    if (!in->q || !in->k || !in->v || !in->q_raw || !in->k_raw || !in->v_raw)
        goto nomem;
    for (int i = 0; i < n; i++) {
        int r = from[i];
        size_t qd = (size_t)in->qo_indptr[i] * q_row, qs = (size_t)base->qo_indptr[r] * q_row;
        size_t qn = (size_t)nc->qo_len[i] * q_row;
        memcpy(in->q + qd, base->q + qs, qn * sizeof(float));
        memcpy((char *)in->q_raw + qd * dsize, (const char *)base->q_raw + qs * dsize, qn * dsize);
        size_t kd = (size_t)in->kv_indptr[i] * kv_row, ks = (size_t)base->kv_indptr[r] * kv_row;
        size_t kn = (size_t)nc->kv_len[i] * kv_row;
        memcpy(in->k + kd, base->k + ks, kn * sizeof(float));
        memcpy(in->v + kd, base->v + ks, kn * sizeof(float));
        memcpy((char *)in->k_raw + kd * dsize, (const char *)base->k_raw + ks * dsize, kn * dsize);
        memcpy((char *)in->v_raw + kd * dsize, (const char *)base->v_raw + ks * dsize, kn * dsize);
    }
    return build_pages(nc, in, page_seed, err);

nomem:
    swa_inputs_free(in);
    return swa_error_set(err, SWA_ERR_NOMEM, "case %s: out of host memory for its derived inputs", nc->id);
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
