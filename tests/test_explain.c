/* test_explain.c — the full diagnosis (harness/explain.c) on the host:
 *
 *  - the reference pieces it rests on: the sampled reference equals the full
 *    one on the sample and leaves the rest alone; mask signatures tell masks
 *    apart exactly when their spans differ; the exclusive chunk start;
 *  - an external backend scored against every hypothesis of its kind
 *    (decode: aligned KV starts; non-causal: right-bound variants; chunked:
 *    the chunk variants), the built-in mutants of those kinds named;
 *  - a declared tile shape (plug-in ABI 2) narrows the tile hypotheses, and
 *    an impossible one is refused naming the field;
 *  - NaN evidence with poison data: a leaked poisoned key is named, an
 *    all-NaN output stays ambiguous with not_a_mask_variant, a NaN no mask
 *    predicts earns nothing, and without poison data nothing is credited;
 *  - a case too large to score on all of it is diagnosed on a deterministic
 *    sample of rows and heads, and says so.
 *
 * Each test builds its case from inline JSON (the real loader) and runs the
 * backend through the pipeline of `swadiff run` (swa_run_one). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/external/external_internal.h"
#include "harness/explain.h"
#include "harness/run.h"
#include "reference/ref_internal.h"
#include "tests/test_case_util.h"

static swa_case_list load(const char *json) { return load_inline_case("inline.json", json); }

static bool has_family(const swa_explanation *ex, const char *family)
{
    for (int i = 0; i < ex->count; i++)
        if (!strncmp(ex->scores[i].name, family, strlen(family)))
            return true;
    return false;
}

static const swa_hypothesis_score *find(const swa_explanation *ex, const char *name)
{
    for (int i = 0; i < ex->count; i++)
        if (!strcmp(ex->scores[i].name, name))
            return &ex->scores[i];
    return NULL;
}

/* Runs built-in backend `ran` under mutant m on the case and explains its
 * output as if it came from backend `as`. */
static void explain_as(const char *json, const char *ran, swa_mutant m, const char *as, swa_explanation *ex)
{
    swa_case_list list = load(json);
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_run_config cfg = {.device = host, .mutant = m, .quiet = true, .no_isolate = true, .argv0 = "swadiff"};
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, &list.cases[0], host, &err), SWA_OK, "%s", err.message);
    const swa_backend *b = swa_backend_by_name(ran);
    cr_assert(b);
    swa_result r;
    void *out = NULL;
    float *lse = NULL;
    swa_run_one(&cfg, &ctx, b, &r, &out, &lse);
    cr_assert_eq(r.outcome, SWA_OUTCOME_FAILED, "%s under %s: %s", ran, swa_mutant_get(m)->name, r.message);
    cr_assert_eq(swa_explain_backend(&ctx, &r.tol, as, out, lse, b->lse_base, ex, &err), SWA_OK, "%s", err.message);
    free(out);
    free(lse);
    swa_compare_result_free(&r.cmp);
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
}

/* Explains a made-up output: NaN in every element of the rows where
 * nan_row(row) says so, the spec's value elsewhere. */
static void explain_made_up(const char *json, const char *as, bool (*nan_row)(int row), swa_explanation *ex)
{
    swa_case_list list = load(json);
    const swa_case *c = &list.cases[0];
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, c, host, &err), SWA_OK, "%s", err.message);
    size_t per_row = (size_t)c->num_qo_heads * c->head_dim, n = (size_t)ctx.in.total_qo * per_row;
    void *out = malloc(n * swa_dtype_size(c->dtype));
    cr_assert(out);
    for (size_t i = 0; i < n; i++)
        swa_store(c->dtype, out, i, nan_row((int)(i / per_row)) ? NAN : (float)ctx.ref_out[i]);
    swa_tolerance tol = swa_tolerance_resolve(c);
    cr_assert_eq(swa_explain_backend(&ctx, &tol, as, out, NULL, 0, ex, &err), SWA_OK, "%s", err.message);
    free(out);
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
}

/* ---------------------------------------------------------------------------
 * the reference pieces */

Test(explain_reference, sampled_reference_equals_the_full_one_on_the_sample)
{
    swa_case_list list = load("{\"name\": \"s\", \"requests\": [{\"qo_len\": 37, \"kv_len\": 90}, {\"qo_len\": 5, "
                              "\"kv_len\": 5}], \"num_qo_heads\": 6, \"num_kv_heads\": 3, \"head_dim\": 64, \"dtype\": "
                              "\"bf16\", \"window_left\": 9, \"backends\": [\"prefill\"], \"seed\": 4}");
    const swa_case *c = &list.cases[0];
    swa_inputs in;
    swa_error err = {0};
    cr_assert_eq(swa_inputs_create(c, &in, &err), SWA_OK, "%s", err.message);
    size_t per_row = (size_t)c->num_qo_heads * c->head_dim, n = (size_t)in.total_qo * per_row;
    double *full = malloc(n * sizeof *full), *part = malloc(n * sizeof *part);
    cr_assert(full && part);
    unsigned char rows[42] = {0}, heads[3] = {1, 0, 1};
    for (int r = 0; r < in.total_qo; r++)
        rows[r] = (r % 7 == 0) || (r >= 20 && r < 30) || r == 41;
    swa_ref_sample s = {rows, heads};
    swa_ref_mask variants[3] = {swa_ref_mask_spec(c), swa_ref_mask_spec(c), swa_ref_mask_spec(c)};
    variants[1].tile_rows = 16, variants[1].tile_kv_align = 32;
    variants[2].window_left = -1;
    for (int v = 0; v < 3; v++) {
        cr_assert_eq(swa_reference(c, &in, &variants[v], full, NULL, &err), SWA_OK, "%s", err.message);
        for (size_t i = 0; i < n; i++)
            part[i] = 12345.0;
        cr_assert_eq(swa_reference_sampled(c, &in, &variants[v], &s, part, NULL, &err), SWA_OK, "%s", err.message);
        size_t sampled = 0;
        for (size_t i = 0; i < n; i++) {
            int row = (int)(i / per_row), head = (int)(i % per_row) / c->head_dim, kv_head = head / 2;
            if (rows[row] && heads[kv_head]) {
                cr_assert_eq(part[i], full[i], "variant %d element %zu (row %d, head %d): %g, full %g", v, i, row,
                             head, part[i], full[i]);
                sampled++;
            } else {
                cr_assert_eq(part[i], 12345.0, "variant %d: element %zu outside the sample was written", v, i);
            }
        }
        cr_assert_gt(sampled, 0);
    }
    free(full);
    free(part);
    swa_inputs_free(&in);
    swa_case_list_free(&list);
}

Test(explain_reference, signatures_differ_exactly_when_the_keys_differ)
{
    swa_case_list list = load("{\"name\": \"g\", \"requests\": [{\"qo_len\": 5, \"kv_len\": 5}, {\"qo_len\": 3, "
                              "\"kv_len\": 40}], \"num_qo_heads\": 2, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": "
                              "\"fp16\", \"window_left\": 2, \"backends\": [\"prefill\"]}");
    swa_case c = list.cases[0];
    swa_ref_mask spec = swa_ref_mask_spec(&c), m = spec;
    uint64_t s0 = swa_ref_mask_signature(&c, &spec);
    cr_expect_eq(swa_ref_mask_signature(&c, &m), s0, "a signature is a function of the mask");
    m.window_left = 3;
    cr_expect_neq(swa_ref_mask_signature(&c, &m), s0, "window L+1 sees one more key");
    /* two tile heights over requests shorter than either tile: one mask */
    swa_ref_mask t16 = spec, t64 = spec;
    t16.tile_rows = 16, t16.tile_kv_align = 16;
    t64.tile_rows = 64, t64.tile_kv_align = 16;
    cr_expect_eq(swa_ref_mask_signature(&c, &t16), swa_ref_mask_signature(&c, &t64));
    swa_ref_mask t_align = t16;
    t_align.tile_kv_align = 64; /* request 1's tile starts at 37 - 2 = 35: 32 aligned to 16, 0 to 64 */
    cr_expect_neq(swa_ref_mask_signature(&c, &t_align), swa_ref_mask_signature(&c, &t16));
    swa_case capped = c;
    capped.soft_cap = 5;
    cr_expect_neq(swa_ref_mask_signature(&capped, &spec), s0, "the soft cap changes every logit");
    swa_case_list_free(&list);
}

Test(explain_reference, exclusive_chunk_start_drops_the_chunk_first_key)
{
    swa_ref_mask m = {.window_left = -1, .window_right = -1, .chunk_size = 8, .align = SWA_ALIGN_BOTTOM_RIGHT,
                      .tile_kv_align = 1, .chunk_start_exclusive = true};
    for (int row = 0; row < 30; row++) {
        ref_row_span sp;
        ref_row_span_compute(&m, true, 0, 30, 30, 1, row, &sp);
        int first = row / 8 * 8 + 1;
        if (first > row) /* a row at its chunk's first key sees nothing */
            cr_expect_eq(sp.visible_end - sp.visible_begin, 0, "row %d: [%d, %d)", row, sp.visible_begin,
                         sp.visible_end);
        else
            cr_expect(sp.visible_begin == first && sp.visible_end == row + 1, "row %d: [%d, %d), expected [%d, %d)",
                      row, sp.visible_begin, sp.visible_end, first, row + 1);
    }
}

/* ---------------------------------------------------------------------------
 * the hypotheses of an external backend */

#define DECODE(L, extra)                                                                                   \
    "{\"name\": \"d\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 300}, {\"qo_len\": 1, \"kv_len\": 77}],"     \
    " \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\", \"page_size\": 24,"   \
    " \"window_left\": " #L ", \"backends\": [\"decode_fa2\"], \"seed\": 2" extra "}"

Test(explain_external, decode_kernels_get_aligned_kv_starts_and_no_query_tiles)
{
    swa_explanation ex;
    explain_as(DECODE(40, ""), "decode_fa2", SWA_MUTANT_LEFT_BOUND_GT, "mylib:decode", &ex);
    static const char *aligned[] = {"tile_granular_start:kv16", "tile_granular_start:kv32", "tile_granular_start:kv64",
                                    "tile_granular_start:kv128", "tile_granular_start:kv256",
                                    "tile_granular_start:kv24"};
    for (size_t i = 0; i < sizeof aligned / sizeof aligned[0]; i++)
        cr_expect(find(&ex, aligned[i]), "decode kind not offered %s (the page size is 24)", aligned[i]);
    for (int i = 0; i < ex.count; i++)
        cr_expect(!strstr(ex.scores[i].name, ":q"), "query tiles offered to a decode case: %s", ex.scores[i].name);
    cr_expect(!has_family(&ex, "request_anchored"), "one row per request has no per-request anchor");
    cr_expect(!strcmp(ex.key, "window_l_minus_1") && ex.exact, "[%s] %s", ex.key, ex.verdict);
}

Test(explain_external, window_kinds_are_scored_and_named)
{
    static const char *noncausal =
        "{\"name\": \"nc\", \"requests\": [{\"qo_len\": 24, \"kv_len\": 60}], \"num_qo_heads\": 4, \"num_kv_heads\": 2,"
        " \"head_dim\": 64, \"dtype\": \"fp16\", \"causal\": false, \"window_left\": 6, \"window_right\": 3,"
        " \"backends\": [\"prefill\"], \"seed\": 6}";
    swa_explanation ex;
    explain_as(noncausal, "prefill", SWA_MUTANT_RIGHT_BOUND_DROPPED, "mylib:flash", &ex);
    static const char *kinds[] = {"right_bound_ignored", "window_right_minus_1", "window_right_plus_1", "causal_instead"};
    for (size_t i = 0; i < 4; i++)
        cr_expect(find(&ex, kinds[i]), "non-causal band: %s not offered", kinds[i]);
    cr_expect(!strcmp(ex.key, "right_bound_ignored") && ex.exact, "[%s] %s", ex.key, ex.verdict);

    static const char *chunked =
        "{\"name\": \"ch\", \"requests\": [{\"qo_len\": 24, \"kv_len\": 60}], \"num_qo_heads\": 4, \"num_kv_heads\": 2,"
        " \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": -1, \"attention_chunk_size\": 8,"
        " \"backends\": [\"prefill\"], \"seed\": 6}";
    const char *as[] = {"prefill", "mylib:flash"};
    for (int k = 0; k < 2; k++) {
        explain_as(chunked, "prefill", SWA_MUTANT_CHUNK_START_OFF_BY_ONE, as[k], &ex);
        cr_expect(!strcmp(ex.key, "chunk_start_off_by_one") && ex.exact, "as %s: [%s] %s", as[k], ex.key, ex.verdict);
        explain_as(chunked, "prefill", SWA_MUTANT_CHUNK_AS_WINDOW, as[k], &ex);
        cr_expect(!strcmp(ex.key, "chunk_as_window") && ex.exact, "as %s: [%s] %s", as[k], ex.key, ex.verdict);
    }
}

Test(explain_external, an_impossible_tile_shape_is_refused_naming_the_field)
{
    char why[200];
    swa_tile_shape ok = {.num_q_rows = 1, .q_rows = {64}, .num_kv_keys = 2, .kv_keys = {32, 64}, .gqa_packed = 1};
    cr_expect_null(swa_tile_shape_check(&ok, why, sizeof why), "%s", why);
    static const struct {
        swa_tile_shape t;
        const char *message;
    } bad[] = {
        {{.num_q_rows = 5, .q_rows = {16, 16, 16, 16}, .gqa_packed = 1},
         "declares 5 query-tile heights and 0 KV-tile widths (expected 0..4 each)"},
        {{.num_kv_keys = -1, .gqa_packed = 1}, "declares 0 query-tile heights and -1 KV-tile widths"},
        {{.num_q_rows = 1, .q_rows = {70000}, .gqa_packed = 1}, "query-tile height of 70000 (expected 1..65536)"},
        {{.num_kv_keys = 1, .kv_keys = {65537}, .gqa_packed = -1}, "KV-tile width of 65537 (expected 1..65536)"},
        {{.num_q_rows = 1, .q_rows = {64}, .gqa_packed = 2},
         "gqa_packed = 2 (expected 1 packed, 0 per head, -1 either)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *msg = swa_tile_shape_check(&bad[i].t, why, sizeof why);
        cr_expect(msg && strstr(msg, bad[i].message), "shape %zu: %s", i, msg ? msg : "(accepted)");
    }
}

#define TILE_CASE                                                                                          \
    "{\"name\": \"m\", \"requests\": [{\"qo_len\": 16, \"kv_len\": 300}, {\"qo_len\": 40, \"kv_len\": 200}],"     \
    " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\", \"page_size\": 16,"     \
    " \"window_left\": 6, \"backends\": [\"prefill\"], \"seed\": 3}"

Test(explain_external, a_declared_tile_shape_narrows_the_tile_hypotheses)
{
    char note[900];
    swa_error err = {0};
    cr_assert_eq(swa_external_add_plugin(SWADIFF_PLUGIN_DIR "/libtiled_prefill.so", note, sizeof note, &err), SWA_OK,
                 "%s", err.message);
    swa_tile_shape t;
    cr_assert(swa_external_tile_shape("tiled:mask_planned_off", &t), "the declaration did not reach the registry");
    cr_expect(t.num_q_rows == 1 && t.q_rows[0] == 64 && t.gqa_packed == 1 && t.num_kv_keys == 1 && t.kv_keys[0] == 32,
              "declared %d rows %d packed %d, %d keys %d", t.num_q_rows, t.q_rows[0], t.gqa_packed, t.num_kv_keys,
              t.kv_keys[0]);
    cr_expect(!swa_external_tile_shape("tiled:mask_planned_off_undeclared", &t));
    cr_expect(!swa_external_tile_shape("nobody:here", &t));

    swa_explanation ex;
    explain_as(TILE_CASE, "prefill", SWA_MUTANT_MASK_COMPILED_OUT, "tiled:mask_planned_off", &ex);
    int tiles = 0;
    for (int i = 0; i < ex.count; i++)
        if (!strncmp(ex.scores[i].name, "tile_granular_start", 19)) {
            tiles++;
            cr_expect_str_eq(ex.scores[i].name, "tile_granular_start:q64,kv32");
            cr_expect(strstr(ex.scores[i].description, "(declared)"), "%s", ex.scores[i].description);
        }
    cr_expect_eq(tiles, 1, "a declared shape gives its one tile hypothesis");
    explain_as(TILE_CASE, "prefill", SWA_MUTANT_MASK_COMPILED_OUT, "tiled:mask_planned_off_undeclared", &ex);
    tiles = 0;
    for (int i = 0; i < ex.count; i++)
        tiles += !strncmp(ex.scores[i].name, "tile_granular_start", 19);
    /* 16, 64, 128 packed rows and 64, 128 rows of one head (group 2: 128 and
     * 256 packed rows, 128 a duplicate), by 5 alignments (an exact start, 16, 32, 64, 128 keys) */
    cr_expect_eq(tiles, 20, "undeclared: every tile shape real kernels use (%d)", tiles);
    cr_expect(!strcmp(ex.key, "tile_granular_start") && ex.exact, "[%s] %s", ex.key, ex.verdict);
    swa_external_reset();
}

/* ---------------------------------------------------------------------------
 * NaN evidence (poison data) */

#define POISON_PREFILL                                                                                     \
    "{\"name\": \"pp\", \"requests\": [{\"qo_len\": 6, \"kv_len\": 40}, {\"qo_len\": 8, \"kv_len\": 8},"        \
    " {\"qo_len\": 12, \"kv_len\": 100}], \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 128,"      \
    " \"dtype\": \"bf16\", \"data\": \"poison\", \"seed\": 12, \"window_left\": 4, \"page_size\": 5,"        \
    " \"backends\": [\"prefill\"]}"
/* poison.json's decode case at window_left 0 */
#define POISON_DECODE(L)                                                                                   \
    "{\"name\": \"pd\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 64}, {\"qo_len\": 1, \"kv_len\": 1000},"     \
    " {\"qo_len\": 1, \"kv_len\": 300}], \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 128,"      \
    " \"dtype\": \"bf16\", \"data\": \"poison\", \"seed\": 12, \"window_left\": " #L ","                     \
    " \"backends\": [\"decode_fa2\", \"decode_aiter\"]}"

Test(explain_nan, a_leaked_poisoned_key_is_named)
{
    /* one key too many: the first row of each request with a prefix reads a
     * poisoned key (NaN), the others read a real one (finite but wrong) */
    const char *as[] = {"prefill", "mylib:flash"};
    for (int k = 0; k < 2; k++) {
        swa_explanation ex;
        explain_as(POISON_PREFILL, "prefill", SWA_MUTANT_LEFT_BOUND_MINUS1, as[k], &ex);
        cr_expect(!strcmp(ex.key, "window_l_plus_1") && ex.exact, "as %s: [%s] %s", as[k], ex.key, ex.verdict);
        cr_expect_gt(ex.nan_credited, 0, "as %s: the NaN rows are the evidence", as[k]);
        cr_expect(strstr(ex.verdict, "poisoned key"), "the verdict says what the NaN means: %s", ex.verdict);
        /* the rows that read a real out-of-window key are finite and wrong:
         * the extra key demonstrably got weight */
        cr_expect_gt(ex.finite_shown, 0, "as %s", as[k]);
        cr_expect(!strstr(ex.verdict, "hides whether"), "as %s: %s", as[k], ex.verdict);
    }
}

/* F5's shrunk shape (FlashInfer 0.7.2.post1 fa3 paged prefill on the H200):
 * the two requests whose first KV tile starts left of the window are NaN,
 * the third is right.  NaN is the only evidence: a read, not proven weight. */
#define POISON_F5                                                                                          \
    "{\"name\": \"f5\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 64}, {\"qo_len\": 1, \"kv_len\": 500},"     \
    " {\"qo_len\": 1, \"kv_len\": 300}], \"num_qo_heads\": 1, \"num_kv_heads\": 1, \"head_dim\": 64,"        \
    " \"dtype\": \"bf16\", \"data\": \"poison\", \"seed\": 12, \"window_left\": 31, \"page_size\": 1,"      \
    " \"backends\": [\"decode_fa2\"]}"

static bool f5_rows(int row) { return row >= 1; }

Test(explain_nan, nan_alone_says_read_not_weighted)
{
    swa_explanation ex;
    explain_made_up(POISON_F5, "flashinfer_wrappers:paged_fa3", f5_rows, &ex);
    cr_assert(ex.best >= 0 && ex.exact, "[%s] %s", ex.key, ex.verdict);
    cr_expect(strstr(ex.tied, "tile_granular_start"), "the fa3 tile start is among the fits: %s", ex.tied);
    cr_expect_gt(ex.nan_credited, 0);
    cr_expect_eq(ex.finite_shown, 0, "no finite output differs from the spec");
    cr_expect(strstr(ex.verdict, "NaN hides whether they get weight") && strstr(ex.verdict, "finite data"),
              "the verdict must not claim the keys got weight, and says how to tell: %s", ex.verdict);
}

Test(explain_nan, aiter_sentinel_on_poisoned_decode_is_ambiguous_with_its_alternatives)
{
    /* window 0 read as "disabled": every row reads the poisoned keys and is
     * NaN.  So is the output of a window one key long, and of any kernel that
     * writes NaN: the diagnosis names all three, never one of them alone */
    const char *as[] = {"decode_aiter", "mylib:decode"};
    for (int k = 0; k < 2; k++) {
        swa_explanation ex;
        explain_as(POISON_DECODE(0), "decode_aiter", SWA_MUTANT_AITER_L0_SENTINEL, as[k], &ex);
        cr_expect(!strncmp(ex.key, "ambiguous:", 10) && ex.exact, "as %s: [%s] %s", as[k], ex.key, ex.verdict);
        cr_expect(strstr(ex.tied, "no_window") && strstr(ex.tied, "window_l_plus_1") &&
                      strstr(ex.tied, "not_a_mask_variant"), "as %s: tied %s", as[k], ex.tied);
        const swa_hypothesis_score *nw = find(&ex, "no_window");
        cr_assert(nw);
        cr_expect(nw->ratio == 0 && strstr(nw->description, "sentinel"), "as %s: %s %.3f", as[k], nw->description,
                  nw->ratio);
        cr_expect(strstr(ex.verdict, "NaN from elsewhere"), "%s", ex.verdict);
    }
}

static bool every_row(int row) { (void)row; return true; }
static bool middle_rows(int row) { return row == 9 || row == 10; }

Test(explain_nan, nan_that_no_mask_predicts_earns_nothing)
{
    swa_explanation ex;
    /* NaN everywhere: request 1 (8 rows over 8 keys) has no poisoned key,
     * so no variant predicts its NaN */
    explain_made_up(POISON_PREFILL, "mylib:nan", every_row, &ex);
    cr_expect_str_eq(ex.key, "not_a_mask_variant", "%s", ex.verdict);
    /* a NaN in two rows of request 1, the rest right */
    explain_made_up(POISON_PREFILL, "prefill", middle_rows, &ex);
    cr_expect_str_eq(ex.key, "not_a_mask_variant", "%s", ex.verdict);
    for (int i = 0; i < ex.count; i++)
        cr_expect_geq(ex.scores[i].ratio, ex.spec_ratio, "%s fits better than the spec", ex.scores[i].name);
    /* NaN everywhere on the poisoned decode: ambiguous, not_a_mask_variant among the answers */
    explain_made_up(POISON_DECODE(31), "mylib:nan", every_row, &ex);
    cr_expect(!strncmp(ex.key, "ambiguous:", 10) && strstr(ex.key, "not_a_mask_variant"), "[%s] %s", ex.key,
              ex.verdict);
    /* without poison data a NaN is never evidence */
    explain_made_up(DECODE(31, ""), "mylib:nan", every_row, &ex);
    cr_expect_str_eq(ex.key, "not_a_mask_variant", "%s", ex.verdict);
    cr_expect_eq(ex.nan_credited, 0);
}

/* ---------------------------------------------------------------------------
 * large cases: a sample, said so */

#define LARGE                                                                                              \
    "{\"name\": \"big\", \"requests\": [{\"qo_len\": 1024, \"kv_len\": 4096}], \"num_qo_heads\": 8,"            \
    " \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"bf16\", \"page_size\": 16, \"window_left\": 333,"    \
    " \"backends\": [\"prefill\"], \"seed\": 1}"

Test(explain_sample, a_large_case_is_diagnosed_on_a_deterministic_sample)
{
    swa_explanation ex, again;
    explain_as(LARGE, "prefill", SWA_MUTANT_LEFT_BOUND_GT, "prefill", &ex);
    cr_expect(ex.sampled, "a 1024 x 4096 case with 20 hypotheses exceeds the budget: %s", ex.verdict);
    cr_expect(ex.sample_rows > 0 && ex.sample_rows < ex.total_rows, "%d of %d rows", ex.sample_rows, ex.total_rows);
    cr_expect_eq(ex.total_heads, 8);
    cr_expect(!strcmp(ex.key, "window_l_minus_1") && ex.exact, "[%s] %s", ex.key, ex.verdict);
    char says[80];
    snprintf(says, sizeof says, "on a sample of %d rows x %d heads", ex.sample_rows, ex.sample_heads);
    cr_expect(strstr(ex.verdict, says), "the verdict must say it was sampled: %s", ex.verdict);
    cr_expect(!strstr(ex.verdict, "too_large") && !strstr(ex.verdict, "shrink"), "%s", ex.verdict);
    explain_as(LARGE, "prefill", SWA_MUTANT_LEFT_BOUND_GT, "prefill", &again);
    cr_expect_str_eq(again.verdict, ex.verdict, "the sample is deterministic");
    cr_expect_eq(again.sample_rows, ex.sample_rows);
}
