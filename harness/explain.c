/* explain.c — names the mask a failing backend actually applied.
 *
 * Each hypothesis is a reference variant (reference/reference.h swa_ref_mask,
 * or the case with one parameter changed); the backend output is scored
 * against each with the result's element rule (the baseline mode's global
 * allowance included: judging with its bare floor made every hypothesis
 * "fail" and blamed the data path), and the variant with the fewest
 * mismatches is the diagnosis.  Only hypotheses the backend could produce
 * are scored (an AITER sentinel is no explanation for a prefill kernel);
 * variants that fit equally well are reported together as ambiguous, and
 * none is named unless it fits strictly better than the spec.  Exact
 * matches are reported as such; a partial match is reported as "closest"
 * with both ratios, so a reader can judge.  Tested by tests/test_detect.c
 * (the seed mutants diagnosed, restriction by backend, ties, the diagnosis
 * reaching the result) and tests/test_baseline.c (baseline mode). */
#include "harness/explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/compare.h"
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

/* What a backend could do, from its name.  Built-in backends have known
 * mechanisms; an external one ("NS:BACKEND") is a black box: it gets the
 * generic hypotheses and the prefill ones (tile-granular KV start, with an
 * exact start too, and a request-anchored window), not the AITER or FA2
 * decode quirks; an unknown name (NULL) gets everything. */
enum {
    CAN_PREFILL = 1u,  /* query tiles, KV-start skip, per-row anchors, alignment */
    CAN_FA2 = 2u,      /* FlashInfer-style decode */
    CAN_AITER = 4u,    /* AITER PA v1: sliding_window = S mapping, 0 sentinel, soft cap before mask */
    CAN_GENERIC = 8u,  /* a kernel we know nothing about */
};

static unsigned backend_kind(const char *backend)
{
    if (!backend)
        return CAN_PREFILL | CAN_FA2 | CAN_AITER | CAN_GENERIC;
    if (strchr(backend, ':'))
        return CAN_GENERIC;
    if (!strcmp(backend, "prefill"))
        return CAN_PREFILL;
    if (!strcmp(backend, "decode_fa2"))
        return CAN_FA2;
    if (!strcmp(backend, "decode_aiter"))
        return CAN_AITER;
    if (!strcmp(backend, "decode_auto")) /* routes to fa2 or aiter at plan time */
        return CAN_FA2 | CAN_AITER;
    return CAN_PREFILL | CAN_FA2 | CAN_AITER | CAN_GENERIC;
}

static int build_hypotheses(const swa_case *c, unsigned kind, hypothesis *h, int max)
{
    int n = 0;
    int L = c->window_left;
    bool prefix = false, multi_row = false;
    for (int r = 0; r < c->num_requests; r++) {
        prefix |= c->kv_len[r] > c->qo_len[r];
        multi_row |= c->qo_len[r] > 1;
    }
    /* a black-box kernel can skip KV tiles or anchor its window like any prefill: it gets
     * those hypotheses too (seed 000 on the real FlashInfer is one) */
    const bool aiter = kind & CAN_AITER, prefill = kind & (CAN_PREFILL | CAN_GENERIC);
    const bool rows_placed = kind & (CAN_PREFILL | CAN_GENERIC); /* decode kernels put their row at kv_len - 1 */
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
            "(left bound k > p-L%s)", L - 1, L, aiter ? ", or AITER sliding_window = L instead of L+1" : "");
        h[n - 1].c.window_left = L - 1;
        h[n - 1].mask.window_left = L - 1;
    }
    if (L >= 0) {
        ADD("window_l_plus_1", "window one key long: the kernel applied window_left = %d instead of %d "
            "(left bound k >= p-L-1)", L + 1, L);
        h[n - 1].c.window_left = L + 1;
        h[n - 1].mask.window_left = L + 1;
        if (aiter && L == 0)
            ADD("no_window", "no window applied at all: full %s attention (AITER sliding_window = 0, its "
                "'disabled' sentinel, for window_left = 0)", c->causal ? "causal" : "non-causal");
        else
            ADD("no_window", "no window applied at all: full %s attention for window_left = %d (the window "
                "was dropped or its mask disabled)", c->causal ? "causal" : "non-causal", L);
        h[n - 1].c.window_left = -1;
        h[n - 1].mask.window_left = -1;
        static const int tiles[] = {16, 32, 64, 128};
        /* an exact start (align 1) is how FlashInfer skips (kv_start = p_first - L); swadiff's
         * own kernels align it, so only an external kernel gets that variant, where on one-tile
         * shapes it is the same mask as request_anchored */
        static const int aligns[] = {1, 16, 32, 64, 128};
        for (int t = 0; t < 4 && prefill; t++)
            for (int a = (kind & CAN_GENERIC) ? 0 : 1; a < 5; a++) {
                ADD("tile_granular_start", "per-element window mask missing: only the per-tile KV-start skip "
                    "applies (%d-row query tiles, start aligned to %d keys), so rows past the window edge "
                    "inside a tile attend to stale keys (seed 000)", tiles[t], aligns[a]);
                h[n - 1].mask.tile_rows = tiles[t];
                h[n - 1].mask.tile_kv_align = aligns[a];
                snprintf(h[n - 1].name, sizeof h[n - 1].name, "tile_granular_start:q%d,kv%d", tiles[t], aligns[a]);
            }
        if (prefill && (multi_row || prefix)) {
            ADD("request_anchored", "window anchored at the request's first new token instead of each query "
                "row (every row sees keys from prefix_len - %d)", L);
            h[n - 1].mask.anchor_request_start = true;
        }
    }
    /* the window kinds: only backends that take them (prefill for R; prefill
     * and decode_fa2 for chunks) can lose them */
    if (!c->causal && c->window_right >= 0 && (kind & (CAN_PREFILL | CAN_GENERIC))) {
        ADD("right_bound_ignored", "right bound dropped: the kernel ran without window_right = %d, so every "
            "non-causal row sees all keys right of itself (the plan took R, the kernel never got it)",
            c->window_right);
        h[n - 1].c.window_right = -1;
        h[n - 1].mask.window_right = -1;
    }
    if (c->chunk_size > 0 && (kind & (CAN_PREFILL | CAN_FA2 | CAN_GENERIC))) {
        ADD("chunk_as_window", "chunked attention run as a sliding window: keys [p - %d, p] (window_left = "
            "C - 1) instead of the row's chunk [floor(p/%d)*%d, p]", c->chunk_size - 1, c->chunk_size,
            c->chunk_size);
        h[n - 1].c.chunk_size = 0;
        h[n - 1].c.window_left = c->chunk_size - 1;
        h[n - 1].mask.chunk_size = 0;
        h[n - 1].mask.window_left = c->chunk_size - 1;
        ADD("no_chunk", "chunk mask dropped: plain causal attention instead of the row's chunk "
            "[floor(p/%d)*%d, p]", c->chunk_size, c->chunk_size);
        h[n - 1].c.chunk_size = 0;
        h[n - 1].mask.chunk_size = 0;
    }
    if (prefix && rows_placed) {
        ADD("top_left", "top-left alignment: query row i placed at position i instead of kv_len - qo_len + i");
        h[n - 1].mask.align = SWA_ALIGN_TOP_LEFT;
    }
    if (c->soft_cap > 0) {
        if (L >= 0 && (kind & (CAN_AITER | CAN_GENERIC))) {
            ADD("softcap_before_mask", "soft cap applied before the mask: masked keys get logit -%g and keep "
                "weight instead of being excluded%s", c->soft_cap, aiter ? " (AITER PA v1 quirk)" : "");
            h[n - 1].mask.softcap_before_mask = true;
        }
        ADD("softcap_missing", "soft cap (%g) not applied", c->soft_cap);
        h[n - 1].c.soft_cap = 0;
    }
#undef ADD
    return n;
}

/* allowed(i) for reference value ref: the result's rule.  Baseline mode
 * has one allowance for the whole output (compare.c). */
typedef struct element_rule {
    bool global;
    double allowed, atol, rtol;
    bool equal_nan;
} element_rule;

static double score(const swa_case *c, const element_rule *rule, const void *out, const double *ref, size_t count)
{
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += swa_element_mismatch(swa_load(c->dtype, out, i), ref[i],
                                    rule->global ? rule->allowed : rule->atol + rule->rtol * fabs(ref[i]),
                                    rule->equal_nan);
    return count ? (double)bad / (double)count : 0;
}

/* The hypothesis family: the name up to ':' (tile_granular_start:q16,kv64). */
static void family_of(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s", name);
    char *colon = strchr(buf, ':');
    if (colon)
        *colon = '\0';
}

/* Does the ", "-separated list hold this family? */
static bool list_has(const char *list, const char *family)
{
    size_t len = strlen(family);
    for (const char *p = list; (p = strstr(p, family)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == '\0' || p[len] == ','))
            return true;
    return false;
}

static swa_status element_rule_of(const swa_case_ctx *ctx, const swa_tolerance *tol, size_t count,
                                  element_rule *rule, swa_error *err)
{
    const swa_case *c = ctx->c;
    memset(rule, 0, sizeof *rule);
    rule->atol = tol->atol;
    rule->rtol = tol->rtol;
    rule->equal_nan = tol->equal_nan;
    if (tol->mode != SWA_TOL_BASELINE)
        return SWA_OK;
    rule->global = true;
    if (ctx->lowp_out) {
        rule->allowed = swa_baseline_allowance(c->dtype, tol, ctx->lowp_out, ctx->ref_out, count);
        return SWA_OK;
    }
    /* a context built without it (not through swa_case_ctx_init): compute it */
    float *lowp = malloc((count ? count : 1) * sizeof *lowp);
    if (!lowp)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of memory for explain's low-precision reference");
    swa_status st = swa_reference_lowp(c, &ctx->in, lowp, NULL, err);
    if (st == SWA_OK)
        rule->allowed = swa_baseline_allowance(c->dtype, tol, lowp, ctx->ref_out, count);
    free(lowp);
    return st;
}

swa_status swa_explain_backend(const swa_case_ctx *ctx, const swa_tolerance *tol, const char *backend,
                               const void *out, const float *lse_ln, double lse_declared_base,
                               swa_explanation *ex, swa_error *err)
{
    const swa_case *c = ctx->c;
    memset(ex, 0, sizeof *ex);
    ex->best = -1;
    size_t count = (size_t)ctx->in.total_qo * c->num_qo_heads * c->head_dim;
    element_rule rule;
    swa_status st = element_rule_of(ctx, tol, count, &rule, err);
    if (st != SWA_OK)
        return st;
    ex->spec_ratio = score(c, &rule, out, ctx->ref_out, count);

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
                snprintf(ex->key, sizeof ex->key, "lse_natural_log");
                snprintf(ex->verdict, sizeof ex->verdict,
                         "output matches the reference; the LSE is in natural log although the backend "
                         "declares base %g (all %zu LSE values match once read as natural log)",
                         lse_declared_base, n);
                return SWA_OK;
            }
        }
        snprintf(ex->key, sizeof ex->key, "lse_or_guards");
        snprintf(ex->verdict, sizeof ex->verdict,
                 "output values match the reference; the failure is in the LSE, the guard bytes or "
                 "unwritten elements (see the message)");
        return SWA_OK;
    }
    if (case_macs(c) > SWA_EXPLAIN_MAX_MACS) {
        snprintf(ex->key, sizeof ex->key, "too_large");
        snprintf(ex->verdict, sizeof ex->verdict,
                 "not explained: the case is too large to score every hypothesis (run `swadiff shrink` first)");
        return SWA_OK;
    }

    hypothesis hyps[SWA_MAX_HYPOTHESES];
    int n = build_hypotheses(c, backend_kind(backend), hyps, SWA_MAX_HYPOTHESES);
    double *ref = malloc((count ? count : 1) * sizeof(double));
    if (!ref)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of memory for explain");
    int first_best = -1;
    for (int i = 0; i < n; i++) {
        st = swa_reference(&hyps[i].c, &ctx->in, &hyps[i].mask, ref, NULL, err);
        if (st != SWA_OK) {
            free(ref);
            return st;
        }
        swa_hypothesis_score *s = &ex->scores[ex->count++];
        snprintf(s->name, sizeof s->name, "%s", hyps[i].name);
        snprintf(s->description, sizeof s->description, "%s", hyps[i].description);
        s->ratio = score(c, &rule, out, ref, count);
        if (first_best < 0 || s->ratio < ex->scores[first_best].ratio)
            first_best = ex->count - 1;
    }
    free(ref);

    if (first_best < 0) {
        snprintf(ex->key, sizeof ex->key, "no_hypothesis");
        snprintf(ex->verdict, sizeof ex->verdict,
                 "no mask hypothesis applies to this case and backend (no window, no soft cap, no prefix): "
                 "the error is not in the window mask");
        return SWA_OK;
    }
    const swa_hypothesis_score *b = &ex->scores[first_best];
    if (!(b->ratio < ex->spec_ratio)) {
        /* naming a variant that fits no better than the spec would mislead */
        snprintf(ex->key, sizeof ex->key, "not_a_mask_variant");
        snprintf(ex->verdict, sizeof ex->verdict,
                 "no mask hypothesis fits better than the spec (%.1f%% mismatched against it; the best "
                 "variant, %s, %.1f%%): the error is not a window-mask variant — look at the data path "
                 "(page table, head mapping, split merge) or the arithmetic",
                 100 * ex->spec_ratio, b->name, 100 * b->ratio);
        return SWA_OK;
    }
    ex->best = first_best;
    ex->exact = b->ratio == 0;
    /* every family that fits exactly as well as the best: with no prefix and
     * one query tile, "no window" and "tile-granular start" are one mask;
     * the reader must see all of them, not the first one built */
    char best_family[64];
    family_of(b->name, best_family, sizeof best_family);
    size_t k = (size_t)snprintf(ex->tied, sizeof ex->tied, "%s", best_family);
    for (int i = 0; i < ex->count; i++) {
        char family[64];
        family_of(ex->scores[i].name, family, sizeof family);
        if (ex->scores[i].ratio != b->ratio || list_has(ex->tied, family))
            continue;
        ex->ambiguous = true;
        if (k < sizeof ex->tied)
            k += (size_t)snprintf(ex->tied + k, sizeof ex->tied - k, ", %s", family);
    }
    if (ex->ambiguous) {
        char tied_key[sizeof ex->tied];
        size_t t = 0;
        for (const char *q = ex->tied; *q && t + 1 < sizeof tied_key; q++)
            if (*q != ' ')
                tied_key[t++] = *q;
        tied_key[t] = '\0';
        snprintf(ex->key, sizeof ex->key, "ambiguous:%s", tied_key);
    } else if (ex->exact) {
        snprintf(ex->key, sizeof ex->key, "%s", best_family);
    } else if (b->ratio < 0.25 * ex->spec_ratio) {
        snprintf(ex->key, sizeof ex->key, "closest:%s", best_family);
    } else {
        snprintf(ex->key, sizeof ex->key, "weak_fit");
    }
    if (ex->exact && !ex->ambiguous) {
        snprintf(ex->verdict, sizeof ex->verdict, "%s — matches exactly (0%% mismatched against it, %.1f%% "
                 "against the spec)", b->description, 100 * ex->spec_ratio);
    } else if (ex->ambiguous) {
        snprintf(ex->verdict, sizeof ex->verdict, "ambiguous: %s fit equally (%.2f%% mismatched against each, "
                 "%.1f%% against the spec) on this case's shape; first: %s", ex->tied, 100 * b->ratio,
                 100 * ex->spec_ratio, b->description);
    } else if (b->ratio < 0.25 * ex->spec_ratio) {
        snprintf(ex->verdict, sizeof ex->verdict, "closest: %s (%.2f%% mismatched against it, %.1f%% against "
                 "the spec)", b->description, 100 * b->ratio, 100 * ex->spec_ratio);
    } else {
        snprintf(ex->verdict, sizeof ex->verdict, "no mask hypothesis explains the output; %s fits a little "
                 "better than the spec (%.1f%% vs %.1f%% mismatched), which is weak evidence", b->name,
                 100 * b->ratio, 100 * ex->spec_ratio);
    }
    return SWA_OK;
}

swa_status swa_explain(const swa_case_ctx *ctx, const swa_tolerance *tol, const void *out, const float *lse_ln,
                       double lse_declared_base, swa_explanation *ex, swa_error *err)
{
    return swa_explain_backend(ctx, tol, NULL, out, lse_ln, lse_declared_base, ex, err);
}

void swa_explain_attach(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b, swa_result *r,
                        const void *out, const float *lse_ln)
{
    (void)cfg;
    swa_explanation ex;
    swa_error err = {0};
    double base = b->lse_base;
    if (swa_explain_backend(ctx, &r->tol, b->name, out, lse_ln, base, &ex, &err) != SWA_OK) {
        snprintf(r->diagnosis, sizeof r->diagnosis, "[explain_failed] explain failed: %s", err.message);
        return;
    }
    snprintf(r->diagnosis, sizeof r->diagnosis, "[%s] %s", ex.key, ex.verdict);
}
