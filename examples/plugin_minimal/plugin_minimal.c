/* plugin_minimal.c — the "hello world" of swadiff plug-ins.
 *
 * Plain per-element attention over the paged KV cache (FlashInfer form),
 * on the host, accumulated in double.  Copy it, then replace the body of
 * attend() with a call into your kernel.  Three backends:
 *
 *   minimal:exact          supports + run (no plan)
 *   minimal:exact_planned  plan precomputes each query row's visible key
 *                          interval [lo, hi]; run uses it; plan_free frees it
 *   minimal:window_short   deliberately wrong: keeps [p - L + 1, p], L keys
 *                          instead of L + 1, for swadiff to find and explain
 *
 * Build: cc -std=c11 -O2 -fPIC -shared -I<swadiff>/include plugin_minimal.c \
 *           -o libswadiff_minimal.so -lm
 * Run:   swadiff run --plugin ./libswadiff_minimal.so --backend minimal:exact cases */
#include <swadiff/plugin.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtype conversions (exact; one rounding, to nearest even) ---------- */

static double fp16_to_double(uint16_t h)
{
    const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double mag = exp == 0x1f ? (man ? NAN : INFINITY)
                 : exp == 0  ? ldexp(man, -24)              /* subnormal */
                             : ldexp(man | 0x400, exp - 25); /* 1.man * 2^(exp-15) */
    return (h & 0x8000) ? -mag : mag;
}

static double bf16_to_double(uint16_t h) /* bf16 is the upper half of a binary32 */
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round x to a 16-bit binary float with `frac` fraction bits and `ebits`
 * exponent bits (fp16: 10, 5; bf16: 7, 8).  The significand is scaled to an
 * integer and rounded with nearbyint (default mode: to nearest, ties to
 * even); a carry out of the significand lands in the exponent by itself. */
static uint16_t double_to_16(double x, int frac, int ebits)
{
    const int bias = (1 << (ebits - 1)) - 1, emax = (1 << ebits) - 1;
    const uint16_t sign = signbit(x) ? 0x8000 : 0, inf = (uint16_t)(emax << frac);
    if (isnan(x))
        return sign | inf | (uint16_t)(1 << (frac - 1)); /* quiet NaN, sign kept */
    x = fabs(x);
    if (x == 0.0 || isinf(x))
        return sign | (x == 0.0 ? 0 : inf);
    int e;
    frexp(x, &e);                   /* x in [2^(e-1), 2^e) */
    int E = e - 1;
    if (E < 1 - bias)
        E = 1 - bias;               /* subnormals share the smallest exponent */
    if (E + bias >= emax)
        return sign | inf;          /* far too large */
    const double m = nearbyint(ldexp(x, frac - E)); /* significand, in ulps */
    /* normals: m in [2^frac, 2^(frac+1)], the implicit 1 adds one to the
     * exponent field; subnormals: m < 2^frac, the field stays 0.  The
     * largest carry gives exactly inf. */
    return sign | (uint16_t)(((uint32_t)(E + bias - 1) << frac) + (uint32_t)m);
}

static double load(const void *base, size_t i, swadiff_dtype dt)
{
    if (dt == SWADIFF_FP16) return fp16_to_double(((const uint16_t *)base)[i]);
    if (dt == SWADIFF_BF16) return bf16_to_double(((const uint16_t *)base)[i]);
    return ((const float *)base)[i];
}

static void store(void *base, size_t i, swadiff_dtype dt, double x)
{
    if (dt == SWADIFF_FP16) ((uint16_t *)base)[i] = double_to_16(x, 10, 5);
    else if (dt == SWADIFF_BF16) ((uint16_t *)base)[i] = double_to_16(x, 7, 8);
    else ((float *)base)[i] = (float)x;
}

/* ---- the paged cache ---------------------------------------------------- */

/* Keys of request r, from the page table: full pages plus the last one. */
static int paged_kv_len(const swadiff_problem *p, int r)
{
    const int pages = p->kv_indptr[r + 1] - p->kv_indptr[r];
    return pages == 0 ? 0 : (pages - 1) * p->page_size + p->kv_last_page_len[r];
}

/* Element offset of (request r, token t, kv head kvh, d = 0) in the pool. */
static size_t kv_offset(const swadiff_problem *p, int r, int t, int kvh)
{
    const size_t page = (size_t)p->kv_indices[p->kv_indptr[r] + t / p->page_size];
    const size_t slot = (size_t)(t % p->page_size), ps = (size_t)p->page_size;
    const size_t Hkv = (size_t)p->num_kv_heads, D = (size_t)p->head_dim;
    if (p->layout == SWADIFF_NHD)
        return ((page * ps + slot) * Hkv + (size_t)kvh) * D;
    return ((page * Hkv + (size_t)kvh) * ps + slot) * D; /* HND */
}

/* ---- the mask ----------------------------------------------------------- */

/* Visible keys [*lo, *hi] of a query at position pos (empty when lo > hi).
 * short_window = 1 is the deliberate bug of window_short. */
static void visible(const swadiff_problem *p, int kv_len, int pos, int short_window, int *lo,
                    int *hi)
{
    long long l = 0, h = (long long)kv_len - 1;
    if (p->causal && pos < h)
        h = pos;
    if (p->window_right >= 0 && (long long)pos + p->window_right < h)
        h = (long long)pos + p->window_right;
    if (p->window_left >= 0) {
        long long L = p->window_left;
        if (short_window && L >= 1)
            L -= 1; /* BUG on purpose: p - (L - 1) drops the oldest key */
        if (pos - L > l)
            l = pos - L;
    }
    *lo = (int)l;
    *hi = (int)h;
}

/* ---- the attention ------------------------------------------------------ */

/* bounds: [total_qo][2] from plan, or NULL to compute them here. */
static swadiff_rc attend(const swadiff_problem *p, const swadiff_output *o, const int *bounds,
                         int short_window, char *msg, size_t msg_size)
{
    const int Hq = p->num_qo_heads, Hkv = p->num_kv_heads, D = p->head_dim, group = Hq / Hkv;
    const swadiff_dtype dt = p->dtype;
    int max_kv = 1;
    for (int r = 0; r < p->num_requests; r++) {
        const int kv_len = paged_kv_len(p, r);
        if (kv_len != p->kv_len[r]) {
            snprintf(msg, msg_size, "request %d: page table holds %d keys, kv_len is %d", r,
                     kv_len, p->kv_len[r]);
            return SWADIFF_RC_ERROR;
        }
        if (kv_len > max_kv)
            max_kv = kv_len;
    }
    double *s = malloc((size_t)max_kv * sizeof *s), *acc = malloc((size_t)D * sizeof *acc);
    if (!s || !acc) {
        free(s);
        free(acc);
        snprintf(msg, msg_size, "out of host memory");
        return SWADIFF_RC_ERROR;
    }
    for (int r = 0; r < p->num_requests; r++) {
        const int qo_len = p->qo_len[r], kv_len = p->kv_len[r];
        for (int i = 0; i < qo_len; i++) {
            const int row = p->qo_indptr[r] + i, pos = kv_len - qo_len + i; /* bottom-right */
            int lo, hi;
            if (bounds) {
                lo = bounds[2 * row];
                hi = bounds[2 * row + 1];
            } else {
                visible(p, kv_len, pos, short_window, &lo, &hi);
            }
            for (int h = 0; h < Hq; h++) {
                const size_t qo = ((size_t)row * Hq + h) * D; /* q and out share the layout */
                const int kvh = h / group;                    /* GQA */
                double m = -INFINITY, sum = 0.0;
                for (int t = lo; t <= hi; t++) {   /* logits of the visible keys only */
                    const size_t ko = kv_offset(p, r, t, kvh);
                    double dot = 0.0;
                    for (int d = 0; d < D; d++)
                        dot += load(p->q, qo + d, dt) * load(p->k_cache, ko + d, dt);
                    double x = dot * p->sm_scale;
                    if (p->soft_cap != 0.0f)
                        x = p->soft_cap * tanh(x / p->soft_cap);
                    s[t - lo] = x;
                    m = x > m ? x : m;
                }
                for (int d = 0; d < D; d++)
                    acc[d] = 0.0;
                for (int t = lo; t <= hi; t++) {   /* softmax weights times V */
                    const size_t vo = kv_offset(p, r, t, kvh);
                    const double w = exp(s[t - lo] - m);
                    sum += w;
                    for (int d = 0; d < D; d++)
                        acc[d] += w * load(p->v_cache, vo + d, dt);
                }
                const int empty = lo > hi; /* no visible key: output 0, lse -inf */
                for (int d = 0; d < D; d++)
                    store(o->out, qo + d, dt, empty ? 0.0 : acc[d] / sum);
                if (p->return_lse && o->lse)
                    o->lse[(size_t)row * Hq + h] = empty ? -INFINITY : (float)(m + log(sum));
            }
        }
    }
    free(s);
    free(acc);
    return SWADIFF_RC_OK;
}

/* ---- the ABI ------------------------------------------------------------ */

/* Called before plan/run; UNSUPPORTED is recorded as a skip, with the reason. */
static swadiff_rc supports(const swadiff_problem *p, char *msg, size_t msg_size)
{
    const char *why = NULL;
    if (p->struct_size < sizeof *p)
        why = "swadiff_problem is older than this plug-in's header";
    else if (p->num_kv_heads < 1 || p->num_qo_heads % p->num_kv_heads != 0)
        why = "num_qo_heads is not a multiple of num_kv_heads";
    else if ((unsigned)p->dtype > SWADIFF_FP32 || (unsigned)p->layout > SWADIFF_HND)
        why = "unknown dtype or layout";
    if (!why)
        return SWADIFF_RC_OK;
    snprintf(msg, msg_size, "%s", why);
    return SWADIFF_RC_UNSUPPORTED;
}

/* The plan of exact_planned: [total_qo][2] visible intervals, made once. */
static swadiff_rc plan_exact(const swadiff_problem *p, void **plan, char *msg, size_t msg_size)
{
    int *bounds = malloc((size_t)(p->total_qo > 0 ? p->total_qo : 1) * 2 * sizeof *bounds);
    if (!bounds) {
        snprintf(msg, msg_size, "out of host memory");
        return SWADIFF_RC_ERROR;
    }
    for (int r = 0; r < p->num_requests; r++)
        for (int i = 0; i < p->qo_len[r]; i++) {
            const int row = p->qo_indptr[r] + i;
            visible(p, p->kv_len[r], p->kv_len[r] - p->qo_len[r] + i, 0, &bounds[2 * row],
                    &bounds[2 * row + 1]);
        }
    *plan = bounds;
    return SWADIFF_RC_OK;
}

static void plan_free(void *plan) { free(plan); }

/* One run for both exact backends: exact has no plan, so swadiff passes
 * plan == NULL and attend() computes the mask itself. */
static swadiff_rc run_exact(void *plan, const swadiff_problem *p, const swadiff_output *o,
                            char *msg, size_t msg_size)
{
    return attend(p, o, plan, 0, msg, msg_size);
}

static swadiff_rc run_window_short(void *plan, const swadiff_problem *p,
                                   const swadiff_output *o, char *msg, size_t msg_size)
{
    (void)plan;
    return attend(p, o, NULL, 1, msg, msg_size);
}

#define LN_BASE 2.718281828459045 /* lse in natural log */
/* What each backend declares (ABI 3, docs/invariance.md): every output
 * element is computed on its own in double, whatever the batch or the page
 * layout, so these are deterministic and batch-invariant, and `swadiff run
 * --invariance batch,pages` holds them to it bitwise.  A kernel whose split
 * or tiles follow the batch declares 0 and gets its differences measured. */
#define HELD (SWADIFF_INVARIANCE_DETERMINISTIC | SWADIFF_INVARIANCE_BATCH)

static const swadiff_plugin_backend backends[] = {
    {"exact", "per-element attention over the paged cache, double accumulation",
     SWADIFF_MEM_HOST, LN_BASE, supports, NULL, run_exact, NULL, NULL, HELD},
    {"exact_planned", "exact, with the visible key interval of each row computed in plan",
     SWADIFF_MEM_HOST, LN_BASE, supports, plan_exact, run_exact, plan_free, NULL, HELD},
    {"window_short", "deliberately wrong: drops the oldest key of each window (L-1), to show a diagnosis",
     SWADIFF_MEM_HOST, LN_BASE, supports, NULL, run_window_short, NULL, NULL, HELD},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "minimal",
                                      (int32_t)(sizeof backends / sizeof backends[0]), backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
