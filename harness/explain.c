/* explain.c — names the mask a failing backend actually applied.
 *
 * Each hypothesis is a reference variant (reference/reference.h swa_ref_mask,
 * or the case with one parameter changed); the backend output is scored
 * against each with the result's element rule (the baseline mode's global
 * allowance included: judging with its bare floor made every hypothesis
 * "fail" and blamed the data path), and the variant with the fewest
 * mismatches is the diagnosis.  Only hypotheses the backend could produce
 * are scored (an AITER sentinel is no explanation for a prefill kernel); an
 * external backend, whose mechanisms we cannot see, gets every hypothesis a
 * kernel of its kind (prefill or decode, from the case; its tile shape when
 * it declares one) could show.  Variants that fit equally well are reported
 * together as ambiguous, and none is named unless it fits strictly better
 * than the spec.  Exact matches are reported as such; a partial match is
 * reported as "closest" with both ratios, so a reader can judge.
 *
 * Cost.  Variants whose masks give every row the same keys (many tile
 * shapes on a short request) are one variant: scored once (signature from
 * swa_ref_mask_signature).  The work of one diagnosis is bounded: when the
 * case is too large to score every distinct variant on all of it, every
 * variant is scored on the same deterministic sample of rows and heads
 * (runs of consecutive rows, so tiles stay whole, the failing ones first;
 * see choose_sample), and the verdict says so.
 *
 * NaN.  With poison data (core/data.c) the keys no row may see have K = NaN:
 * a kernel that gives one any weight writes NaN, and so does the variant's
 * reference on exactly the rows where that variant reads one.  NaN == NaN
 * is no match for the tolerance rule, so such a NaN is counted as a match
 * for a variant that predicts it — but only for a variant that predicts
 * every NaN of the output (a NaN it does not predict comes from elsewhere:
 * a page the request does not own, an overflow), and an output that is NaN
 * everywhere is reported as ambiguous with not_a_mask_variant, since a
 * kernel that writes NaN for any reason looks the same.
 *
 * Tested by tests/test_detect.c (the seed mutants diagnosed, restriction by
 * backend, ties, the diagnosis reaching the result, NaN evidence, samples),
 * tests/test_explain.c (the external hypothesis set, tile declarations,
 * sampling and dedup), tests/test_external.c (plug-ins and adapters through
 * explain and shrink) and tests/test_baseline.c (baseline mode). */
#include "harness/explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/compare.h"
#include "reference/reference.h"

/* Work bounds, in multiply-adds of the reference (Q K^T and P V): one
 * variant is scored on the whole case up to SWA_EXPLAIN_MAX_MACS, and all
 * distinct variants of one diagnosis together up to SWA_EXPLAIN_BUDGET_MACS
 * (about 2 s of the reference on two cores); beyond, on a sample. */
#define SWA_EXPLAIN_MAX_MACS 4e9
#define SWA_EXPLAIN_BUDGET_MACS 4e10
/* Rows of one sampled run: a whole query tile of the largest tile height
 * real kernels use (128 rows of one head). */
#define SAMPLE_RUN_ROWS 128

typedef struct hypothesis {
    char name[64];
    char description[256];
    swa_case c;          /* shallow copy of the case with one change */
    swa_ref_mask mask;
    uint64_t signature;  /* swa_ref_mask_signature of (c, mask) */
} hypothesis;

/* ---------------------------------------------------------------------------
 * what a backend could do */

/* Query-tile heights (in packed rows) and KV-start alignments to try. */
#define MAX_TILE_ROWS 12
#define MAX_ALIGNS 8

typedef struct traits {
    bool external;        /* a black box: wording without any library's internals */
    bool aiter;           /* AITER-style wording (sentinel, soft-cap quirk) */
    bool prefill_tiles;   /* query tiles with a per-tile KV-start skip */
    bool aligned_start;   /* one row's KV start rounded down (decode kernels of unknown make) */
    bool anchors;         /* per-request window anchors */
    bool rows_placed;     /* places rows itself (top-left alignment possible) */
    bool softcap_before;  /* can mask before the soft cap */
    bool right_bound;     /* takes window_right / causal as parameters */
    bool chunks;          /* takes attention_chunk_size */
    bool zero_sentinel;   /* may read window_left = 0 as "no window" */
    bool declared;        /* the tile shape below is the backend's own declaration */
    int num_tile_rows, tile_rows[MAX_TILE_ROWS];
    char tile_words[MAX_TILE_ROWS][80];
    int num_aligns, aligns[MAX_ALIGNS];
} traits;

static void add_tile_rows(traits *t, int rows, const char *words)
{
    if (rows < 1)
        return;
    for (int i = 0; i < t->num_tile_rows; i++)
        if (t->tile_rows[i] == rows)
            return;
    if (t->num_tile_rows == MAX_TILE_ROWS)
        return;
    t->tile_rows[t->num_tile_rows] = rows;
    snprintf(t->tile_words[t->num_tile_rows], sizeof t->tile_words[0], "%s", words);
    t->num_tile_rows++;
}

static void add_align(traits *t, int keys)
{
    if (keys < 1)
        return;
    for (int i = 0; i < t->num_aligns; i++)
        if (t->aligns[i] == keys)
            return;
    if (t->num_aligns < MAX_ALIGNS)
        t->aligns[t->num_aligns++] = keys;
}

static bool case_is_decode(const swa_case *c)
{
    for (int r = 0; r < c->num_requests; r++)
        if (c->qo_len[r] != 1)
            return false;
    return c->num_requests > 0;
}

/* The built-in prefill's plan picks query tiles of 16, 64 or 128 packed
 * rows and KV tiles of 32 or 64 keys; 32 rows and the other alignments
 * cover its split and ragged paths. */
static void builtin_prefill_tiles(traits *t)
{
    static const int tiles[] = {16, 32, 64, 128}, aligns[] = {16, 32, 64, 128};
    for (int i = 0; i < 4; i++) {
        char words[80];
        snprintf(words, sizeof words, "%d-row query tiles", tiles[i]);
        add_tile_rows(t, tiles[i], words);
        add_align(t, aligns[i]);
    }
}

/* Tiles of a kernel we cannot see: FlashInfer-style CTA_TILE_Q of 16, 64 or
 * 128 packed rows (query rows x the heads of a group), FlashAttention-style
 * tiles of 64 or 128 rows of one head (x group packed rows), and KV tiles of
 * 16..128 keys; or exactly what the backend declared. */
static void external_tiles(traits *t, const swa_case *c, const swa_tile_shape *decl)
{
    int group = swa_case_group_size(c);
    char words[80];
    if (decl && decl->num_q_rows > 0) {
        for (int i = 0; i < decl->num_q_rows; i++) {
            int q = decl->q_rows[i];
            if (decl->gqa_packed != 0) {
                snprintf(words, sizeof words, "query tiles of %d packed rows (declared)", q);
                add_tile_rows(t, q, words);
            }
            if (decl->gqa_packed != 1) {
                snprintf(words, sizeof words, "query tiles of %d rows of one head (declared)", q);
                add_tile_rows(t, q * group, words);
            }
        }
    } else {
        static const int packed[] = {16, 64, 128}, per_head[] = {64, 128};
        for (int i = 0; i < 3; i++) {
            snprintf(words, sizeof words, "query tiles of %d packed rows (rows x heads of a group)", packed[i]);
            add_tile_rows(t, packed[i], words);
        }
        for (int i = 0; i < 2 && group > 1; i++) {
            snprintf(words, sizeof words, "query tiles of %d rows of one head", per_head[i]);
            add_tile_rows(t, per_head[i] * group, words);
        }
    }
    if (decl && decl->num_kv_keys > 0) {
        for (int i = 0; i < decl->num_kv_keys; i++)
            add_align(t, decl->kv_keys[i]);
    } else {
        /* an exact start (1: kv_start = p_first - L) is how FlashInfer's
         * fa2 prefill skips; seed 000 on the real library fits it */
        static const int aligns[] = {1, 16, 32, 64, 128};
        for (int i = 0; i < 5; i++)
            add_align(t, aligns[i]);
    }
}

static traits traits_of(const char *backend, const swa_case *c)
{
    traits t;
    memset(&t, 0, sizeof t);
    bool known = backend && !strchr(backend, ':');
    if (backend && strchr(backend, ':')) {
        /* an external backend: everything a kernel of the case's kind could do */
        t.external = true;
        swa_tile_shape decl;
        bool declared = swa_external_tile_shape(backend, &decl);
        t.declared = declared && (decl.num_q_rows > 0 || decl.num_kv_keys > 0);
        if (case_is_decode(c)) {
            t.aligned_start = true;
            if (declared && decl.num_kv_keys > 0) {
                for (int i = 0; i < decl.num_kv_keys; i++)
                    add_align(&t, decl.kv_keys[i]);
            } else {
                /* KV tiles, the page, and PA v1-style 256-key partitions */
                static const int aligns[] = {16, 32, 64, 128, 256};
                for (int i = 0; i < 5; i++)
                    add_align(&t, aligns[i]);
                if (c->page_size > 1)
                    add_align(&t, c->page_size);
            }
        } else {
            t.prefill_tiles = true;
            t.anchors = true;
            external_tiles(&t, c, declared ? &decl : NULL);
        }
        t.rows_placed = t.softcap_before = t.right_bound = t.chunks = t.zero_sentinel = true;
        return t;
    }
    bool prefill = !known || !strcmp(backend, "prefill");
    bool fa2 = !known || !strcmp(backend, "decode_fa2") || !strcmp(backend, "decode_auto");
    bool aiter = !known || !strcmp(backend, "decode_aiter") || !strcmp(backend, "decode_auto");
    if (!prefill && !fa2 && !aiter) /* a built-in name we do not know (NULL too): everything */
        prefill = fa2 = aiter = true;
    t.aiter = aiter;
    t.prefill_tiles = t.anchors = t.rows_placed = t.right_bound = prefill;
    if (prefill)
        builtin_prefill_tiles(&t);
    t.chunks = prefill || fa2;
    t.softcap_before = t.zero_sentinel = aiter;
    return t;
}

/* ---------------------------------------------------------------------------
 * the hypotheses */

static int build_hypotheses(const swa_case *c, const traits *t, hypothesis *h, int max)
{
    int n = 0;
    int L = c->window_left;
    bool prefix = false, multi_row = false;
    for (int r = 0; r < c->num_requests; r++) {
        prefix |= c->kv_len[r] > c->qo_len[r];
        multi_row |= c->qo_len[r] > 1;
    }
    const bool aiter = t->aiter && !t->external;
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
#define LAST (&h[n - 1])
    if (L >= 1) {
        ADD("window_l_minus_1", "window one key short: the kernel applied window_left = %d instead of %d "
            "(left bound k > p-L%s)", L - 1, L, aiter ? ", or AITER sliding_window = L instead of L+1" : "");
        LAST->c.window_left = L - 1;
        LAST->mask.window_left = L - 1;
    }
    if (L >= 0) {
        ADD("window_l_plus_1", "window one key long: the kernel applied window_left = %d instead of %d "
            "(left bound k >= p-L-1)", L + 1, L);
        LAST->c.window_left = L + 1;
        LAST->mask.window_left = L + 1;
        if (t->zero_sentinel && L == 0 && aiter)
            ADD("no_window", "no window applied at all: full %s attention (AITER sliding_window = 0, its "
                "'disabled' sentinel, for window_left = 0)", c->causal ? "causal" : "non-causal");
        else if (t->zero_sentinel && L == 0)
            ADD("no_window", "no window applied at all: full %s attention for window_left = 0 (a window of "
                "0 taken as the 'disabled' sentinel, or the window dropped)", c->causal ? "causal" : "non-causal");
        else
            ADD("no_window", "no window applied at all: full %s attention for window_left = %d (the window "
                "was dropped or its mask disabled)", c->causal ? "causal" : "non-causal", L);
        LAST->c.window_left = -1;
        LAST->mask.window_left = -1;
        for (int q = 0; q < t->num_tile_rows && t->prefill_tiles; q++)
            for (int a = 0; a < t->num_aligns; a++) {
                if (t->external)
                    ADD("tile_granular_start", "per-element window mask missing: only a per-tile KV-start skip "
                        "applies (%s, start aligned to %d keys), so rows past the window edge inside a tile "
                        "attend to keys left of their window", t->tile_words[q], t->aligns[a]);
                else
                    ADD("tile_granular_start", "per-element window mask missing: only the per-tile KV-start "
                        "skip applies (%s, start aligned to %d keys), so rows past the window edge inside a "
                        "tile attend to stale keys (seed 000)", t->tile_words[q], t->aligns[a]);
                LAST->mask.tile_rows = t->tile_rows[q];
                LAST->mask.tile_kv_align = t->aligns[a];
                snprintf(LAST->name, sizeof LAST->name, "tile_granular_start:q%d,kv%d", t->tile_rows[q],
                         t->aligns[a]);
            }
        for (int a = 0; a < t->num_aligns && t->aligned_start; a++) {
            ADD("tile_granular_start", "window mask missing in the first KV tile: the KV loop starts at the "
                "window start rounded down to %d keys%s and the keys before the window in that tile or page get "
                "weight", t->aligns[a], t->declared ? " (declared)" : "");
            LAST->mask.tile_rows = swa_case_group_size(c); /* one row (all heads of its group) per tile */
            LAST->mask.tile_kv_align = t->aligns[a];
            snprintf(LAST->name, sizeof LAST->name, "tile_granular_start:kv%d", t->aligns[a]);
        }
        if (t->anchors && (multi_row || prefix)) {
            ADD("request_anchored", "window anchored at the request's first new token instead of each query "
                "row (every row sees keys from prefix_len - %d)", L);
            LAST->mask.anchor_request_start = true;
        }
    }
    /* the window kinds: only backends that take them can lose them */
    if (!c->causal && t->right_bound) {
        int R = c->window_right;
        if (R >= 0) {
            ADD("right_bound_ignored", "right bound dropped: the kernel ran without window_right = %d, so every "
                "non-causal row sees all keys right of itself%s", R,
                t->external ? "" : " (the plan took R, the kernel never got it)");
            LAST->c.window_right = -1;
            LAST->mask.window_right = -1;
            if (R >= 1) {
                ADD("window_right_minus_1", "right bound one key short: window_right = %d instead of %d (keys up "
                    "to p+R-1)", R - 1, R);
                LAST->c.window_right = R - 1;
                LAST->mask.window_right = R - 1;
            }
            ADD("window_right_plus_1", "right bound one key long: window_right = %d instead of %d (keys up to "
                "p+R+1)", R + 1, R);
            LAST->c.window_right = R + 1;
            LAST->mask.window_right = R + 1;
        }
        ADD("causal_instead", "non-causal attention run as causal: no row sees a key right of itself%s",
            R >= 0 ? " (window_right ignored as well)" : "");
        LAST->c.causal = true;
        LAST->c.window_right = 0;
        LAST->mask.window_right = -1;
    }
    if (c->chunk_size > 0 && t->chunks) {
        ADD("chunk_as_window", "chunked attention run as a sliding window: keys [p - %d, p] (window_left = "
            "C - 1) instead of the row's chunk [floor(p/%d)*%d, p]", c->chunk_size - 1, c->chunk_size,
            c->chunk_size);
        LAST->c.chunk_size = 0;
        LAST->c.window_left = c->chunk_size - 1;
        LAST->mask.chunk_size = 0;
        LAST->mask.window_left = c->chunk_size - 1;
        ADD("no_chunk", "chunk mask dropped: plain causal attention instead of the row's chunk "
            "[floor(p/%d)*%d, p]", c->chunk_size, c->chunk_size);
        LAST->c.chunk_size = 0;
        LAST->mask.chunk_size = 0;
        ADD("chunk_start_off_by_one", "chunk start taken as exclusive: keys (floor(p/%d)*%d, p], so each "
            "chunk's first key is lost and a row at a chunk start sees nothing", c->chunk_size, c->chunk_size);
        LAST->mask.chunk_start_exclusive = true;
    }
    if (prefix && t->rows_placed) {
        ADD("top_left", "top-left alignment: query row i placed at position i instead of kv_len - qo_len + i");
        LAST->mask.align = SWA_ALIGN_TOP_LEFT;
    }
    if (c->soft_cap > 0) {
        if (L >= 0 && t->softcap_before) {
            ADD("softcap_before_mask", "soft cap applied before the mask: masked keys get logit -%g and keep "
                "weight instead of being excluded%s", c->soft_cap, aiter ? " (AITER PA v1 quirk)" : "");
            LAST->mask.softcap_before_mask = true;
        }
        ADD("softcap_missing", "soft cap (%g) not applied", c->soft_cap);
        LAST->c.soft_cap = 0;
    }
#undef LAST
#undef ADD
    return n;
}

/* ---------------------------------------------------------------------------
 * the element rule and the sample */

/* allowed(i) for reference value ref: the result's rule.  Baseline mode
 * has one allowance for the whole output (compare.c). */
typedef struct element_rule {
    bool global;
    double allowed, atol, rtol;
    bool equal_nan;
} element_rule;

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

static bool element_bad(const swa_case *c, const element_rule *rule, const void *out, const double *ref, size_t i)
{
    return swa_element_mismatch(swa_load(c->dtype, out, i), ref[i],
                                rule->global ? rule->allowed : rule->atol + rule->rtol * fabs(ref[i]),
                                rule->equal_nan);
}

/* The (row, qo head) pairs every variant is scored on. */
typedef struct sample {
    unsigned char *rows;      /* [total_qo] */
    unsigned char *kv_heads;  /* [num_kv_heads] */
    int *row_list, num_rows;  /* selected rows, ascending */
    int *head_list, num_heads;/* selected qo heads, ascending */
    bool partial;             /* not the whole output */
} sample;

static void sample_free(sample *s)
{
    free(s->rows);
    free(s->kv_heads);
    free(s->row_list);
    free(s->head_list);
    memset(s, 0, sizeof *s);
}

/* Keys the costliest variant (no window) reads for row i of request r. */
static double row_keys(const swa_case *c, int r, int i)
{
    long long p = (long long)c->kv_len[r] - c->qo_len[r] + i;
    long long keys = c->causal ? p + 1 : c->kv_len[r];
    if (keys > c->kv_len[r])
        keys = c->kv_len[r];
    return keys < 1 ? 1 : (double)keys;
}

/* Index of x in the van der Corput order over [0, n): spreads a prefix of
 * the order evenly over the range. */
static unsigned bit_reverse(unsigned x, int bits)
{
    unsigned y = 0;
    for (int b = 0; b < bits; b++)
        y |= ((x >> b) & 1u) << (bits - 1 - b);
    return y;
}

typedef struct run_span {
    int request, first_row, rows; /* first_row: global row index */
    bool bad;                     /* holds a mismatch against the spec */
} run_span;

/* Picks the sample for a per-variant budget of `budget` multiply-adds.
 * Whole case when it fits.  Else: kv heads 0, the last and the one of the
 * first mismatch (every qo head of their groups: packed tiles need them
 * all); runs of up to SAMPLE_RUN_ROWS consecutive rows of a request, those
 * holding mismatches first (up to half the budget), then the rest in van
 * der Corput order, row by row until the budget is spent. */
static swa_status choose_sample(const swa_case_ctx *ctx, const element_rule *rule, const void *out, double budget,
                                sample *s, swa_error *err)
{
    const swa_case *c = ctx->c;
    const int total_qo = ctx->in.total_qo, Hq = c->num_qo_heads, Hkv = c->num_kv_heads, D = c->head_dim;
    const int group = swa_case_group_size(c);
    memset(s, 0, sizeof *s);
    s->rows = calloc((size_t)(total_qo > 0 ? total_qo : 1), 1);
    s->kv_heads = calloc((size_t)Hkv, 1);
    s->row_list = malloc((size_t)(total_qo > 0 ? total_qo : 1) * sizeof *s->row_list);
    s->head_list = malloc((size_t)Hq * sizeof *s->head_list);
    unsigned char *row_bad = calloc((size_t)(total_qo > 0 ? total_qo : 1), 1);
    run_span *runs = NULL;
    if (!s->rows || !s->kv_heads || !s->row_list || !s->head_list || !row_bad) {
        free(row_bad);
        sample_free(s);
        return swa_error_set(err, SWA_ERR_NOMEM, "out of memory for explain's sample");
    }
    double full = 0;
    for (int r = 0; r < c->num_requests; r++)
        for (int i = 0; i < c->qo_len[r]; i++)
            full += row_keys(c, r, i);
    full *= 2.0 * Hq * D;
    if (full <= budget) {
        memset(s->rows, 1, (size_t)total_qo);
        memset(s->kv_heads, 1, (size_t)Hkv);
    } else {
        s->partial = true;
        int first_bad_head = -1;
        for (int row = 0; row < total_qo; row++)
            for (size_t e = (size_t)row * Hq * D; e < (size_t)(row + 1) * Hq * D; e++)
                if (element_bad(c, rule, out, ctx->ref_out, e)) {
                    row_bad[row] = 1;
                    if (first_bad_head < 0)
                        first_bad_head = (int)((e / D) % Hq) / group;
                    break;
                }
        s->kv_heads[0] = s->kv_heads[Hkv - 1] = 1;
        if (first_bad_head >= 0)
            s->kv_heads[first_bad_head] = 1;
        int kv_sampled = 0;
        for (int g = 0; g < Hkv; g++)
            kv_sampled += s->kv_heads[g];
        double per_key = 2.0 * kv_sampled * group * D;
        int nruns = 0;
        for (int r = 0; r < c->num_requests; r++)
            nruns += (c->qo_len[r] + SAMPLE_RUN_ROWS - 1) / SAMPLE_RUN_ROWS;
        runs = malloc((size_t)(nruns > 0 ? nruns : 1) * sizeof *runs);
        if (!runs) {
            free(row_bad);
            sample_free(s);
            return swa_error_set(err, SWA_ERR_NOMEM, "out of memory for explain's sample");
        }
        int k = 0;
        for (int r = 0; r < c->num_requests; r++)
            for (int i = 0; i < c->qo_len[r]; i += SAMPLE_RUN_ROWS) {
                run_span *sp = &runs[k++];
                sp->request = r;
                sp->first_row = ctx->in.qo_indptr[r] + i;
                sp->rows = c->qo_len[r] - i < SAMPLE_RUN_ROWS ? c->qo_len[r] - i : SAMPLE_RUN_ROWS;
                sp->bad = false;
                for (int j = 0; j < sp->rows; j++)
                    sp->bad |= row_bad[sp->first_row + j];
            }
        int bits = 0;
        while ((1u << bits) < (unsigned)nruns)
            bits++;
        double spent = 0;
        bool any = false;
        for (int phase = 0; phase < 2; phase++) {
            double cap = phase == 0 ? budget / 2 : budget;
            for (unsigned x = 0; x < (1u << bits) && spent < cap; x++) {
                unsigned j = bit_reverse(x, bits);
                if (j >= (unsigned)nruns || (phase == 0 && !runs[j].bad))
                    continue;
                const run_span *sp = &runs[j];
                int local = sp->first_row - ctx->in.qo_indptr[sp->request];
                for (int t = 0; t < sp->rows; t++) {
                    int row = sp->first_row + t;
                    if (s->rows[row])
                        continue;
                    double cost = row_keys(c, sp->request, local + t) * per_key;
                    if (any && spent + cost > cap)
                        break;
                    s->rows[row] = 1;
                    spent += cost;
                    any = true;
                }
            }
        }
    }
    for (int row = 0; row < total_qo; row++)
        if (s->rows[row])
            s->row_list[s->num_rows++] = row;
    for (int h = 0; h < Hq; h++)
        if (s->kv_heads[h / group])
            s->head_list[s->num_heads++] = h;
    free(runs);
    free(row_bad);
    return SWA_OK;
}

/* ---------------------------------------------------------------------------
 * scoring */

typedef struct score_state {
    const swa_case *c;
    const element_rule *rule;
    const void *out;
    const double *spec;     /* the spec's reference */
    const sample *s;
    bool poison;            /* poison data: a NaN can be a poisoned key seen */
    size_t elements;        /* scored */
} score_state;

typedef struct score_result {
    double ratio;
    long long nan_credited; /* NaN outputs this variant predicts, counted as matches */
    long long finite_shown; /* finite outputs off the spec that this variant predicts: its extra keys
                             * (or missing ones) demonstrably changed a value, not only got read */
} score_result;

static score_result score(const score_state *st, const double *ref)
{
    const swa_case *c = st->c;
    const int Hq = c->num_qo_heads, D = c->head_dim;
    size_t bad = 0, predicted = 0, unpredicted = 0, shown = 0;
    for (int ri = 0; ri < st->s->num_rows; ri++)
        for (int hi = 0; hi < st->s->num_heads; hi++) {
            size_t base = ((size_t)st->s->row_list[ri] * Hq + st->s->head_list[hi]) * D;
            for (size_t i = base; i < base + (size_t)D; i++) {
                bool b = element_bad(c, st->rule, st->out, ref, i);
                bad += b;
                if (!b && !isnan(swa_load(c->dtype, st->out, i)) && element_bad(c, st->rule, st->out, st->spec, i))
                    shown++;
                if (st->poison && b && !isnan(st->spec[i]) && isnan(swa_load(c->dtype, st->out, i))) {
                    if (isnan(ref[i]))
                        predicted++;
                    else
                        unpredicted++;
                }
            }
        }
    score_result sr = {0, 0, (long long)shown};
    if (predicted > 0 && unpredicted == 0) { /* every NaN of the output is one this mask reads */
        bad -= predicted;
        sr.nan_credited = (long long)predicted;
    }
    sr.ratio = st->elements ? (double)bad / (double)st->elements : 0;
    return sr;
}

/* True when the output is NaN at every scored element where the spec is
 * finite (and there is one): no finite value tells the variants apart from
 * a kernel that writes NaN for any reason. */
static bool output_all_nan(const score_state *st)
{
    const swa_case *c = st->c;
    const int Hq = c->num_qo_heads, D = c->head_dim;
    bool any = false;
    for (int ri = 0; ri < st->s->num_rows; ri++)
        for (int hi = 0; hi < st->s->num_heads; hi++) {
            size_t base = ((size_t)st->s->row_list[ri] * Hq + st->s->head_list[hi]) * D;
            for (size_t i = base; i < base + (size_t)D; i++) {
                if (isnan(st->spec[i]))
                    continue;
                if (!isnan(swa_load(c->dtype, st->out, i)))
                    return false;
                any = true;
            }
        }
    return any;
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

/* Scores every hypothesis into ex->scores (distinct masks once). */
static swa_status score_hypotheses(const swa_case_ctx *ctx, const score_state *st, hypothesis *hyps, int n,
                                   uint64_t spec_signature, long long *credited, long long *shown,
                                   swa_explanation *ex, swa_error *err)
{
    const swa_case *c = ctx->c;
    size_t count = (size_t)ctx->in.total_qo * c->num_qo_heads * c->head_dim;
    double *ref = malloc((count ? count : 1) * sizeof(double));
    if (!ref)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of memory for explain");
    swa_ref_sample rs = {st->s->partial ? st->s->rows : NULL, st->s->partial ? st->s->kv_heads : NULL};
    for (int i = 0; i < n; i++) {
        swa_hypothesis_score *s = &ex->scores[ex->count++];
        snprintf(s->name, sizeof s->name, "%s", hyps[i].name);
        snprintf(s->description, sizeof s->description, "%s", hyps[i].description);
        int same = -1;
        for (int j = 0; j < i && same < 0; j++)
            if (hyps[j].signature == hyps[i].signature)
                same = j;
        if (hyps[i].signature == spec_signature) {
            /* the spec's own mask on this case's shape: explains nothing */
            s->ratio = ex->spec_ratio;
            credited[i] = 0;
            shown[i] = 0;
        } else if (same >= 0) {
            s->ratio = ex->scores[same].ratio;
            credited[i] = credited[same];
            shown[i] = shown[same];
        } else {
            swa_status rc = swa_reference_sampled(&hyps[i].c, &ctx->in, &hyps[i].mask, &rs, ref, NULL, err);
            if (rc != SWA_OK) {
                free(ref);
                return rc;
            }
            score_result sr = score(st, ref);
            s->ratio = sr.ratio;
            credited[i] = sr.nan_credited;
            shown[i] = sr.finite_shown;
        }
    }
    free(ref);
    return SWA_OK;
}

/* " — scored on a sample of ..." for a sampled diagnosis, else "". */
static void sample_note(const swa_explanation *ex, char *buf, size_t n)
{
    if (!ex->sampled) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, n, "; scored on a sample of %d rows x %d heads of %d x %d (the case is too large to score "
             "every hypothesis on all of it)", ex->sample_rows, ex->sample_heads, ex->total_rows, ex->total_heads);
}

/* NaN says a key was read, not that it got weight: 0 * NaN is NaN too.  When
 * no finite output shows the variant's keys changing a value, the note says
 * so and how to tell the two apart (FlashInfer's fa3 paged prefill loads
 * the out-of-window keys of its first tile and multiplies them by 0: NaN
 * under poison, exact on finite data: finding F5 of the H200 run real-libraries-2026-12-02,
 * docs/evidence.md). */
static void nan_note(const swa_explanation *ex, char *buf, size_t n)
{
    if (ex->nan_credited <= 0)
        buf[0] = '\0';
    else if (ex->finite_shown > 0)
        snprintf(buf, n, "; %lld NaN outputs are where this mask reads a poisoned key, counted as matches",
                 ex->nan_credited);
    else
        snprintf(buf, n, "; %lld NaN outputs are where this mask reads a poisoned key, counted as matches, and "
                 "they are the only evidence: the keys are read, but NaN hides whether they get weight "
                 "(0 x NaN = NaN) — if the case passes with finite data (\"data\": \"normal\"), they are "
                 "loaded and multiplied by 0, a read outside the window", ex->nan_credited);
}

/* Scores the hypotheses and writes the verdict (the spec ratio is set). */
static swa_status explain_hypotheses(const swa_case_ctx *ctx, const element_rule *rule_in, const void *out,
                                     hypothesis *hyps, int n, swa_explanation *ex, swa_error *err)
{
    const swa_case *c = ctx->c;
    const element_rule rule = *rule_in;
    swa_status st;
    swa_ref_mask spec_mask = swa_ref_mask_spec(c);
    uint64_t spec_signature = swa_ref_mask_signature(c, &spec_mask);
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        hyps[i].signature = swa_ref_mask_signature(&hyps[i].c, &hyps[i].mask);
        bool seen = hyps[i].signature == spec_signature;
        for (int j = 0; j < i && !seen; j++)
            seen = hyps[j].signature == hyps[i].signature;
        distinct += !seen;
    }
    double budget = distinct ? SWA_EXPLAIN_BUDGET_MACS / distinct : SWA_EXPLAIN_MAX_MACS;
    if (budget > SWA_EXPLAIN_MAX_MACS)
        budget = SWA_EXPLAIN_MAX_MACS;
    sample smp;
    if ((st = choose_sample(ctx, &rule, out, budget, &smp, err)) != SWA_OK)
        return st;
    score_state ss = {c, &rule, out, ctx->ref_out, &smp, c->dist == SWA_DIST_POISON,
                      (size_t)smp.num_rows * smp.num_heads * c->head_dim};
    ex->sampled = smp.partial;
    ex->sample_rows = smp.num_rows;
    ex->sample_heads = smp.num_heads;
    if (smp.partial) /* every ratio, the spec's included, on the same elements */
        ex->spec_ratio = score(&ss, ctx->ref_out).ratio;
    long long credited[SWA_MAX_HYPOTHESES], shown[SWA_MAX_HYPOTHESES];
    st = score_hypotheses(ctx, &ss, hyps, n, spec_signature, credited, shown, ex, err);
    bool all_nan = st == SWA_OK && ss.poison && output_all_nan(&ss);
    sample_free(&smp);
    if (st != SWA_OK)
        return st;

    int first_best = 0;
    for (int i = 1; i < ex->count; i++)
        if (ex->scores[i].ratio < ex->scores[first_best].ratio)
            first_best = i;
    char snote[200], nnote[480];
    sample_note(ex, snote, sizeof snote);
    const swa_hypothesis_score *b = &ex->scores[first_best];
    if (!(b->ratio < ex->spec_ratio)) {
        /* naming a variant that fits no better than the spec would mislead */
        snprintf(ex->key, sizeof ex->key, "not_a_mask_variant");
        snprintf(ex->verdict, sizeof ex->verdict,
                 "no mask hypothesis fits better than the spec (%.1f%% mismatched against it; the best "
                 "variant, %s, %.1f%%): the error is not a window-mask variant — look at the data path "
                 "(page table, head mapping, split merge) or the arithmetic%s",
                 100 * ex->spec_ratio, b->name, 100 * b->ratio, snote);
        return SWA_OK;
    }
    ex->best = first_best;
    ex->exact = b->ratio == 0;
    ex->nan_credited = credited[first_best];
    ex->finite_shown = shown[first_best];
    nan_note(ex, nnote, sizeof nnote);
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
    /* NaN everywhere: the masks that read a poisoned key on every row
     * predict it, and so does any other source of NaN */
    bool nan_only = all_nan && ex->nan_credited > 0;
    if (nan_only) {
        ex->ambiguous = true;
        if (k < sizeof ex->tied)
            k += (size_t)snprintf(ex->tied + k, sizeof ex->tied - k, ", not_a_mask_variant");
    }
    if (ex->ambiguous) {
        char tied_key[sizeof ex->tied];
        size_t t2 = 0;
        for (const char *q = ex->tied; *q && t2 + 1 < sizeof tied_key; q++)
            if (*q != ' ')
                tied_key[t2++] = *q;
        tied_key[t2] = '\0';
        snprintf(ex->key, sizeof ex->key, "ambiguous:%s", tied_key);
    } else if (ex->exact) {
        snprintf(ex->key, sizeof ex->key, "%s", best_family);
    } else if (b->ratio < 0.25 * ex->spec_ratio) {
        snprintf(ex->key, sizeof ex->key, "closest:%s", best_family);
    } else {
        snprintf(ex->key, sizeof ex->key, "weak_fit");
    }
    if (nan_only) {
        snprintf(ex->verdict, sizeof ex->verdict, "ambiguous: every output element is NaN where the spec is "
                 "finite; %s read a poisoned key on every row and predict exactly that (%.2f%% mismatched), but "
                 "a NaN from elsewhere (a page the request does not own, an overflow) looks the same; first: "
                 "%s%s", ex->tied, 100 * b->ratio, b->description, snote);
    } else if (ex->exact && !ex->ambiguous) {
        snprintf(ex->verdict, sizeof ex->verdict, "%s — matches exactly (0%% mismatched against it, %.1f%% "
                 "against the spec%s)%s", b->description, 100 * ex->spec_ratio, nnote, snote);
    } else if (ex->ambiguous) {
        snprintf(ex->verdict, sizeof ex->verdict, "ambiguous: %s fit equally (%.2f%% mismatched against each, "
                 "%.1f%% against the spec%s) on this case's shape; first: %s%s", ex->tied, 100 * b->ratio,
                 100 * ex->spec_ratio, nnote, b->description, snote);
    } else if (b->ratio < 0.25 * ex->spec_ratio) {
        snprintf(ex->verdict, sizeof ex->verdict, "closest: %s (%.2f%% mismatched against it, %.1f%% against "
                 "the spec%s)%s", b->description, 100 * b->ratio, 100 * ex->spec_ratio, nnote, snote);
    } else {
        snprintf(ex->verdict, sizeof ex->verdict, "no mask hypothesis explains the output; %s fits a little "
                 "better than the spec (%.1f%% vs %.1f%% mismatched), which is weak evidence%s", b->name,
                 100 * b->ratio, 100 * ex->spec_ratio, snote);
    }
    return SWA_OK;
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
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += element_bad(c, &rule, out, ctx->ref_out, i);
    ex->spec_ratio = count ? (double)bad / (double)count : 0;
    ex->total_rows = ctx->in.total_qo;
    ex->total_heads = c->num_qo_heads;

    if (ex->spec_ratio == 0) {
        /* values are right: the failure is elsewhere (LSE, guards, unwritten) */
        if (lse_ln && lse_declared_base > 0 && lse_declared_base != M_E) {
            size_t n = (size_t)ctx->in.total_qo * c->num_qo_heads, lse_bad = 0, bad_natural = 0;
            double k = log(lse_declared_base);
            for (size_t i = 0; i < n; i++) {
                double e = ctx->ref_lse[i];
                double as_declared = lse_ln[i], as_natural = lse_ln[i] / k;
                if (isinf(e)) {
                    lse_bad += as_declared != e;
                    bad_natural += as_natural != e;
                    continue;
                }
                lse_bad += !(fabs(as_declared - e) <= tol->lse_atol);
                bad_natural += !(fabs(as_natural - e) <= tol->lse_atol);
            }
            if (lse_bad && !bad_natural) {
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

    hypothesis *hyps = malloc(SWA_MAX_HYPOTHESES * sizeof *hyps); /* each holds a case: not on the stack */
    if (!hyps)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of memory for explain's hypotheses");
    traits t = traits_of(backend, c);
    int n = build_hypotheses(c, &t, hyps, SWA_MAX_HYPOTHESES);
    st = n > 0 ? explain_hypotheses(ctx, &rule, out, hyps, n, ex, err) : SWA_OK;
    free(hyps);
    if (n == 0) {
        snprintf(ex->key, sizeof ex->key, "no_hypothesis");
        snprintf(ex->verdict, sizeof ex->verdict,
                 "no mask hypothesis applies to this case and backend (no window, no soft cap, no prefix): "
                 "the error is not in the window mask");
        return SWA_OK;
    }
    return st;
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
