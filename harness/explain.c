/* explain.c — names the mask a failing backend actually applied.
 *
 * Each hypothesis is a reference variant (reference/reference.h swa_ref_mask,
 * or the case with one parameter changed); the backend output is scored
 * against each with the case's element rule, and the variant with the
 * fewest mismatches is the diagnosis.  Exact matches are reported as such;
 * a partial match is reported as "closest" with both ratios, so a reader can
 * judge.  Tested by tests/test_detect.c (the seed mutants diagnosed, the
 * diagnosis reaching the result). */
#include "harness/explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "reference/reference.h"

/* Work bound: explain is skipped for cases whose reference costs more than
 * this many multiply-adds per variant (model-sized cases: shrink them first). */
#define SWA_EXPLAIN_MAX_MACS 4e9

typedef struct hypothesis {
    char name[64];
    char description[256];
    swa_case c;          /* shallow copy of the case with one change */
    swa_ref_mask mask;
} hypothesis;

static double case_macs(const swa_case *c)
{
    double macs = 0;
    for (int r = 0; r < c->num_requests; r++)
        macs += (double)c->qo_len[r] * c->kv_len[r];
    return macs * c->num_qo_heads * c->head_dim * 2;
}

static int build_hypotheses(const swa_case *c, hypothesis *h, int max)
{
    int n = 0;
    int L = c->window_left;
    bool prefix = false, multi_row = false;
    for (int r = 0; r < c->num_requests; r++) {
        prefix |= c->kv_len[r] > c->qo_len[r];
        multi_row |= c->qo_len[r] > 1;
    }
#define ADD(key, ...)                                                              \
    do {                                                                           \
        if (n < max) {                                                             \
            snprintf(h[n].name, sizeof h[n].name, "%s", key);                      \
            snprintf(h[n].description, sizeof h[n].description, __VA_ARGS__);      \
            h[n].c = *c;                                                           \
            h[n].mask = swa_ref_mask_spec(c);                                      \
            n++;                                                                   \
        }                                                                          \
    } while (0)
    if (L >= 1) {
        ADD("window_l_minus_1", "window one key short: the kernel applied window_left = %d instead of %d "
            "(left bound k > p-L, or AITER sliding_window = L instead of L+1)", L - 1, L);
        h[n - 1].c.window_left = L - 1;
        h[n - 1].mask.window_left = L - 1;
    }
    if (L >= 0) {
        ADD("window_l_plus_1", "window one key long: the kernel applied window_left = %d instead of %d "
            "(left bound k >= p-L-1)", L + 1, L);
        h[n - 1].c.window_left = L + 1;
        h[n - 1].mask.window_left = L + 1;
        ADD("no_window", "no window applied at all: full %s attention (mask disabled, e.g. AITER "
            "sliding_window = 0, its 'disabled' sentinel, for window_left = %d)",
            c->causal ? "causal" : "non-causal", L);
        h[n - 1].c.window_left = -1;
        h[n - 1].mask.window_left = -1;
        static const int tiles[] = {16, 32, 64, 128};
        static const int aligns[] = {16, 32, 64, 128};
        for (int t = 0; t < 4; t++)
            for (int a = 0; a < 4; a++) {
                ADD("tile_granular_start", "per-element window mask missing: only the per-tile KV-start skip "
                    "applies (%d-row query tiles, start aligned to %d keys), so rows past the window edge "
                    "inside a tile attend to stale keys (seed 000)", tiles[t], aligns[a]);
                h[n - 1].mask.tile_rows = tiles[t];
                h[n - 1].mask.tile_kv_align = aligns[a];
                snprintf(h[n - 1].name, sizeof h[n - 1].name, "tile_granular_start:q%d,kv%d", tiles[t], aligns[a]);
            }
        if (multi_row || prefix) {
            ADD("request_anchored", "window anchored at the request's first new token instead of each query "
                "row (every row sees keys from prefix_len - %d)", L);
            h[n - 1].mask.anchor_request_start = true;
        }
    }
    if (prefix) {
        ADD("top_left", "top-left alignment: query row i placed at position i instead of kv_len - qo_len + i");
        h[n - 1].mask.align = SWA_ALIGN_TOP_LEFT;
    }
    if (c->soft_cap > 0) {
        if (L >= 0) {
            ADD("softcap_before_mask", "soft cap applied before the mask: masked keys get logit -%g and keep "
                "weight instead of being excluded (AITER PA v1 quirk)", c->soft_cap);
            h[n - 1].mask.softcap_before_mask = true;
        }
        ADD("softcap_missing", "soft cap (%g) not applied", c->soft_cap);
        h[n - 1].c.soft_cap = 0;
    }
#undef ADD
    return n;
}

static double score(const swa_case *c, const swa_tolerance *tol, const void *out, const double *ref, size_t count)
{
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += swa_element_mismatch(swa_load(c->dtype, out, i), ref[i], tol->atol + tol->rtol * fabs(ref[i]),
                                    tol->equal_nan);
    return count ? (double)bad / (double)count : 0;
}

swa_status swa_explain(const swa_case_ctx *ctx, const swa_tolerance *tol, const void *out, const float *lse_ln,
                       double lse_declared_base, swa_explanation *ex, swa_error *err)
{
    const swa_case *c = ctx->c;
    memset(ex, 0, sizeof *ex);
    ex->best = -1;
    size_t count = (size_t)ctx->in.total_qo * c->num_qo_heads * c->head_dim;
    ex->spec_ratio = score(c, tol, out, ctx->ref_out, count);

    if (ex->spec_ratio == 0) {
        /* values are right: the failure is elsewhere (LSE, guards, unwritten) */
        if (lse_ln && lse_declared_base > 0 && lse_declared_base != M_E) {
            size_t n = (size_t)ctx->in.total_qo * c->num_qo_heads, bad = 0, bad_natural = 0;
            double k = log(lse_declared_base);
            for (size_t i = 0; i < n; i++) {
                double e = ctx->ref_lse[i];
                double as_declared = lse_ln[i], as_natural = lse_ln[i] / k;
                if (isinf(e)) {
                    bad += as_declared != e;
                    bad_natural += as_natural != e;
                    continue;
                }
                bad += !(fabs(as_declared - e) <= tol->lse_atol);
                bad_natural += !(fabs(as_natural - e) <= tol->lse_atol);
            }
            if (bad && !bad_natural) {
                snprintf(ex->verdict, sizeof ex->verdict,
                         "output matches the reference; the LSE is in natural log although the backend "
                         "declares base %g (all %zu LSE values match once read as natural log)",
                         lse_declared_base, n);
                return SWA_OK;
            }
        }
        snprintf(ex->verdict, sizeof ex->verdict,
                 "output values match the reference; the failure is in the LSE, the guard bytes or "
                 "unwritten elements (see the message)");
        return SWA_OK;
    }
    if (case_macs(c) > SWA_EXPLAIN_MAX_MACS) {
        snprintf(ex->verdict, sizeof ex->verdict,
                 "not explained: the case is too large to score every hypothesis (run `swadiff shrink` first)");
        return SWA_OK;
    }

    hypothesis hyps[SWA_MAX_HYPOTHESES];
    int n = build_hypotheses(c, hyps, SWA_MAX_HYPOTHESES);
    double *ref = malloc(count * sizeof(double));
    if (!ref)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of memory for explain");
    for (int i = 0; i < n; i++) {
        swa_status st = swa_reference(&hyps[i].c, &ctx->in, &hyps[i].mask, ref, NULL, err);
        if (st != SWA_OK) {
            free(ref);
            return st;
        }
        swa_hypothesis_score *s = &ex->scores[ex->count++];
        snprintf(s->name, sizeof s->name, "%s", hyps[i].name);
        snprintf(s->description, sizeof s->description, "%s", hyps[i].description);
        s->ratio = score(c, tol, out, ref, count);
        if (ex->best < 0 || s->ratio < ex->scores[ex->best].ratio)
            ex->best = ex->count - 1;
    }
    free(ref);

    if (ex->best < 0) {
        snprintf(ex->verdict, sizeof ex->verdict,
                 "no hypothesis applies to this case (no window, no soft cap, no prefix)");
        return SWA_OK;
    }
    const swa_hypothesis_score *b = &ex->scores[ex->best];
    if (b->ratio == 0) {
        ex->exact = true;
        /* other hypotheses can fit this case's data equally (e.g. with no
         * prefix and one query tile, "no window" and "tile-granular start"
         * give the same mask): name them, so nobody is misled */
        char also[256] = "";
        size_t k = 0;
        for (int i = 0; i < ex->count; i++) {
            char family[64];
            snprintf(family, sizeof family, "%s", ex->scores[i].name);
            char *colon = strchr(family, ':');
            if (colon)
                *colon = '\0';
            if (i == ex->best || ex->scores[i].ratio != 0 || strstr(also, family) ||
                !strncmp(b->name, family, strlen(family)))
                continue;
            k += (size_t)snprintf(also + k, sizeof also - k, "%s%s", k ? ", " : "", family);
            if (k >= sizeof also)
                break;
        }
        snprintf(ex->verdict, sizeof ex->verdict, "%s — matches exactly (0%% mismatched against it, %.1f%% "
                 "against the spec)%s%s%s", b->description, 100 * ex->spec_ratio,
                 also[0] ? "; on this case's shape these fit equally: " : "", also, also[0] ? "" : "");
    } else if (b->ratio < 0.25 * ex->spec_ratio) {
        snprintf(ex->verdict, sizeof ex->verdict, "closest: %s (%.2f%% mismatched against it, %.1f%% against "
                 "the spec)", b->description, 100 * b->ratio, 100 * ex->spec_ratio);
    } else {
        snprintf(ex->verdict, sizeof ex->verdict, "no known mask explains the output (best: %s at %.1f%% vs "
                 "%.1f%% against the spec): suspect the data path (page table, head mapping, merge)",
                 b->name, 100 * b->ratio, 100 * ex->spec_ratio);
    }
    return SWA_OK;
}

void swa_explain_attach(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b, swa_result *r,
                        const void *out, const float *lse_ln)
{
    (void)cfg;
    swa_explanation ex;
    swa_error err = {0};
    double base = b->lse_base;
    if (swa_explain(ctx, &r->tol, out, lse_ln, base, &ex, &err) != SWA_OK) {
        snprintf(r->diagnosis, sizeof r->diagnosis, "explain failed: %s", err.message);
        return;
    }
    snprintf(r->diagnosis, sizeof r->diagnosis, "%s", ex.verdict);
}
