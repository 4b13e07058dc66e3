/* tiled_prefill.c — a tiled prefill kernel in a user's own plug-in, for
 * `explain`: query tiles of 64 packed rows (query row x qo head of a group,
 * FlashInfer's packing), each tile's KV loop starting at its first row's
 * window start aligned down to 32 keys.  Three backends:
 *
 *   tiled:exact               the per-element window mask applied in every
 *                             tile: correct (passes)
 *   tiled:mask_planned_off    seed 000's bug: the mask planned without the
 *                             window, so only the per-tile KV-start skip
 *                             applies; declares its tile shape (ABI 2)
 *   tiled:mask_planned_off_undeclared
 *                             the same bug, tile shape not declared: explain
 *                             must find it among every tile shape it knows
 *
 * Exact arithmetic in double over the paged cache (FlashInfer form); the
 * output is rounded once to the dtype.  Test: tests/test_external.c. */
#include <swadiff/plugin.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TILE_Q 64  /* packed rows */
#define TILE_KV 32 /* keys */

static double from_16(uint16_t h, int bf16)
{
    if (bf16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double mag = exp == 0x1f ? (man ? NAN : INFINITY) : exp == 0 ? ldexp(man, -24) : ldexp(man | 0x400, exp - 25);
    return (h & 0x8000) ? -mag : mag;
}

/* Round to a 16-bit float with `frac` fraction and `ebits` exponent bits,
 * to nearest even (nearbyint in the default rounding mode). */
static uint16_t to_16(double x, int frac, int ebits)
{
    const int bias = (1 << (ebits - 1)) - 1, emax = (1 << ebits) - 1;
    const uint16_t sign = signbit(x) ? 0x8000 : 0, inf = (uint16_t)(emax << frac);
    if (isnan(x))
        return sign | inf | (uint16_t)(1 << (frac - 1));
    x = fabs(x);
    if (x == 0.0 || isinf(x))
        return sign | (x == 0.0 ? 0 : inf);
    int e;
    frexp(x, &e);
    int E = e - 1 < 1 - bias ? 1 - bias : e - 1;
    if (E + bias >= emax)
        return sign | inf;
    const double m = nearbyint(ldexp(x, frac - E));
    return sign | (uint16_t)(((uint32_t)(E + bias - 1) << frac) + (uint32_t)m);
}

static double load(const void *base, size_t i, int32_t dt)
{
    if (dt == SWADIFF_FP32)
        return ((const float *)base)[i];
    return from_16(((const uint16_t *)base)[i], dt == SWADIFF_BF16);
}

static void store(void *base, size_t i, int32_t dt, double x)
{
    if (dt == SWADIFF_FP32)
        ((float *)base)[i] = (float)x;
    else
        ((uint16_t *)base)[i] = dt == SWADIFF_FP16 ? to_16(x, 10, 5) : to_16(x, 7, 8);
}

static size_t kv_offset(const swadiff_problem *p, int r, int t, int kvh)
{
    const size_t page = (size_t)p->kv_indices[p->kv_indptr[r] + t / p->page_size];
    const size_t slot = (size_t)(t % p->page_size), ps = (size_t)p->page_size;
    const size_t Hkv = (size_t)p->num_kv_heads, D = (size_t)p->head_dim;
    if (p->layout == SWADIFF_NHD)
        return ((page * ps + slot) * Hkv + (size_t)kvh) * D;
    return ((page * Hkv + (size_t)kvh) * ps + slot) * D;
}

static swadiff_rc attend(const swadiff_problem *p, const swadiff_output *o, int mask_window, char *msg, size_t n)
{
    const int Hq = p->num_qo_heads, Hkv = p->num_kv_heads, D = p->head_dim, group = Hq / Hkv;
    int max_kv = 1;
    for (int r = 0; r < p->num_requests; r++)
        max_kv = p->kv_len[r] > max_kv ? p->kv_len[r] : max_kv;
    double *s = malloc((size_t)max_kv * sizeof *s), *acc = malloc((size_t)D * sizeof *acc);
    if (!s || !acc) {
        free(s);
        free(acc);
        strncpy(msg, "out of host memory", n);
        return SWADIFF_RC_ERROR;
    }
    for (int r = 0; r < p->num_requests; r++) {
        const int qo = p->qo_len[r], kv = p->kv_len[r];
        for (int kvh = 0; kvh < Hkv; kvh++)
            for (int tile = 0; tile * TILE_Q < qo * group; tile++) {
                /* the per-tile KV-start skip, from the tile's first packed row */
                long long p_first = (long long)kv - qo + (tile * TILE_Q) / group, start = 0;
                if (p->window_left >= 0 && p_first - p->window_left > 0)
                    start = p_first - p->window_left;
                start -= start % TILE_KV;
                for (int pr = tile * TILE_Q; pr < (tile + 1) * TILE_Q && pr < qo * group; pr++) {
                    const int i = pr / group, h = kvh * group + pr % group;
                    const long long pos = (long long)kv - qo + i;
                    long long lo = start, hi = kv - 1;
                    if (p->causal && pos < hi)
                        hi = pos;
                    if (!p->causal && p->window_right >= 0 && pos + p->window_right < hi)
                        hi = pos + p->window_right;
                    if (mask_window && p->window_left >= 0 && pos - p->window_left > lo)
                        lo = pos - p->window_left; /* the per-element mask */
                    const size_t row = (size_t)p->qo_indptr[r] + (size_t)i, qoff = (row * Hq + h) * D;
                    double m = -INFINITY, sum = 0;
                    for (long long t = lo; t <= hi; t++) {
                        const size_t ko = kv_offset(p, r, (int)t, kvh);
                        double dot = 0;
                        for (int d = 0; d < D; d++)
                            dot += load(p->q, qoff + d, p->dtype) * load(p->k_cache, ko + d, p->dtype);
                        double x = dot * p->sm_scale;
                        if (p->soft_cap != 0.0f)
                            x = p->soft_cap * tanh(x / p->soft_cap);
                        s[t - lo] = x;
                        m = x > m ? x : m;
                    }
                    for (int d = 0; d < D; d++)
                        acc[d] = 0;
                    for (long long t = lo; t <= hi; t++) {
                        const size_t vo = kv_offset(p, r, (int)t, kvh);
                        const double w = exp(s[t - lo] - m);
                        sum += w;
                        for (int d = 0; d < D; d++)
                            acc[d] += w * load(p->v_cache, vo + d, p->dtype);
                    }
                    for (int d = 0; d < D; d++)
                        store(o->out, qoff + d, p->dtype, lo > hi ? 0.0 : acc[d] / sum);
                    if (p->return_lse && o->lse)
                        o->lse[row * Hq + h] = lo > hi ? -INFINITY : (float)(m + log(sum));
                }
            }
    }
    free(s);
    free(acc);
    return SWADIFF_RC_OK;
}

static swadiff_rc run_exact(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    return attend(p, o, 1, msg, n);
}

static swadiff_rc run_planned_off(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                                  size_t n)
{
    (void)plan;
    return attend(p, o, 0, msg, n);
}

static const swadiff_tile_shape tiles = {1, {TILE_Q, 0, 0, 0}, 1, 1, {TILE_KV, 0, 0, 0}};

static const swadiff_plugin_backend backends[] = {
    {"exact", "64-row packed query tiles, KV start aligned to 32 keys, per-element window mask",
     SWADIFF_MEM_HOST, 2.718281828459045, NULL, NULL, run_exact, NULL, &tiles},
    {"mask_planned_off", "the same tiles with the window mask planned off: only the per-tile KV-start skip",
     SWADIFF_MEM_HOST, 2.718281828459045, NULL, NULL, run_planned_off, NULL, &tiles},
    {"mask_planned_off_undeclared", "mask_planned_off without a tile-shape declaration",
     SWADIFF_MEM_HOST, 2.718281828459045, NULL, NULL, run_planned_off, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "tiled", 3, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
