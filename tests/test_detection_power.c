/* test_detection_power.c — the non-window-shape bug classes of
 * docs/bugs.md (out-of-window reads and evicted pages, interleaved layers,
 * CUDA-graph padding, page-table units, soft-cap overflow, head-dim loops,
 * finite mask sentinels): where the poison data mode puts NaN and evicted
 * pages, the loader's located errors for the new case fields, and every
 * new mutant killed by the shipped case files on the host device (the same
 * pipeline as `swadiff selftest --device host`), the unmutated run passing.
 *
 *   ctest --test-dir build -R test_detection_power --output-on-failure */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/attn_primitives.h"
#include "backends/prefill.h"
#include "core/data.h"
#include "harness/case_load.h"
#include "tests/test_case_util.h"
#include "harness/run.h"

static swa_case_list load(const char *json) { return load_inline_case("inline.json", json); }

/* The loader must refuse json with a message containing want, at path. */
static void expect_refused(const char *json, const char *path, const char *want)
{
    swa_case_list list = {0};
    swa_load_error le;
    memset(&le, 0, sizeof le);
    int rc = swa_case_parse("bad.json", json, strlen(json), &list, &le);
    cr_assert_eq(rc, -1, "accepted: %s", json);
    cr_expect_str_eq(le.path, path, "error at %s, expected %s (%s)", le.path, path, le.message);
    cr_expect(strstr(le.message, want) != NULL, "message \"%s\" lacks \"%s\"", le.message, want);
    cr_expect_gt(le.line, 0, "no line for %s", le.message);
    swa_case_list_free(&list);
}

/* ---------------------------------------------------------------------------
 * poison: NaN keys and evicted pages */

static const char *POISON_CASE =
    "{\"name\": \"p\", \"requests\": [{\"qo_len\": 37, \"kv_len\": 1177}, {\"qo_len\": 1, \"kv_len\": 300},"
    " {\"qo_len\": 5, \"kv_len\": 200}, {\"qo_len\": 1, \"kv_len\": 1000}],"
    " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"bf16\", \"data\": \"poison\","
    " \"window_left\": [0, 13, 127, -1], \"page_size\": [1, 7, 16], \"backends\": [\"prefill\"]}";

Test(detection_power, poison_nan_keys_and_evicted_pages)
{
    swa_case_list list = load(POISON_CASE);
    int evicted_total = 0;
    for (int i = 0; i < list.count; i++) {
        const swa_case *c = &list.cases[i];
        swa_inputs in;
        swa_error err = {0};
        cr_assert_eq(swa_inputs_create(c, &in, &err), SWA_OK, "%s", err.message);
        const swa_paged_kv *kv = &in.paged;
        size_t row = (size_t)c->num_kv_heads * c->head_dim;
        int evicted_any = 0;
        for (int r = 0; r < c->num_requests; r++) {
            int prefix = c->kv_len[r] - c->qo_len[r];
            int f = swa_poison_first_visible(c, r);
            cr_assert_eq(f, c->window_left < 0 ? 0 : (prefix - c->window_left > 0 ? prefix - c->window_left : 0),
                         "%s r%d: first visible key %d", c->id, r, f);
            /* keys before f: K NaN, V +-4096; from f on: finite normal values */
            for (int t = 0; t < c->kv_len[r]; t++) {
                const float *k = &in.k[(in.kv_indptr[r] + (size_t)t) * row];
                const float *v = &in.v[(in.kv_indptr[r] + (size_t)t) * row];
                for (size_t j = 0; j < row; j += 17) {
                    if (t < f) {
                        cr_assert(isnan(k[j]), "%s r%d key %d: K = %g, expected NaN", c->id, r, t, k[j]);
                        cr_assert_eq(fabsf(v[j]), 4096.0f, "%s r%d key %d: V = %g", c->id, r, t, v[j]);
                    } else {
                        cr_assert(fabsf(k[j]) <= 6.0f && fabsf(v[j]) <= 6.0f, "%s r%d visible key %d: %g %g",
                                  c->id, r, t, k[j], v[j]);
                    }
                }
            }
            /* evicted pages: wholly before align_down(f, 256), both tables on
             * the shared page, which is NaN; the rest own their pages */
            int ev = swa_poison_evicted_pages(c, r);
            int keep = f - f % SWA_POISON_EVICT_ALIGN;
            cr_assert_eq(ev, keep / c->page_size, "%s r%d: %d evicted pages", c->id, r, ev);
            evicted_any += ev;
            int pages = kv->indptr[r + 1] - kv->indptr[r];
            for (int p = 0; p < pages; p++) {
                int id = kv->indices[kv->indptr[r] + p];
                int bt = kv->block_tables[(size_t)r * kv->max_blocks_per_seq + p];
                cr_assert_eq(id, bt, "%s r%d page %d: the two tables disagree (%d, %d)", c->id, r, p, id, bt);
                if (p < ev) {
                    cr_assert_eq(id, in.evicted_page, "%s r%d page %d not on the evicted page", c->id, r, p);
                } else {
                    cr_assert_neq(id, in.evicted_page, "%s r%d page %d (kept) on the evicted page", c->id, r, p);
                    /* a kept page holds the request's own values */
                    int t = p * c->page_size;
                    float got[64];
                    swa_paged_gather(kv, 1, r, t, 1, got);
                    const float *want = &in.v[(in.kv_indptr[r] + (size_t)t) * row + c->head_dim];
                    cr_assert_eq(got[3], want[3], "%s r%d token %d: paged V %g, logical %g", c->id, r, t, got[3],
                                 want[3]);
                }
            }
            if (ev > 0) {
                float got[64];
                swa_paged_gather(kv, 0, r, 0, 0, got);
                cr_assert(isnan(got[0]), "%s r%d: the evicted page's K is %g, expected NaN", c->id, r, got[0]);
                swa_paged_gather(kv, 1, r, 0, 1, got);
                cr_assert(isnan(got[5]), "%s r%d: the evicted page's V is %g, expected NaN", c->id, r, got[5]);
            }
            /* no correct backend starts loading inside an evicted page:
             * prefill tiles of 32 and 64 keys from any query tile's first
             * row, decode's page holding the window start */
            for (int tile_kv = 32; tile_kv <= 64; tile_kv *= 2)
                for (int i0 = 0; i0 < c->qo_len[r]; i0++) {
                    int p0 = prefix + i0;
                    int begin = swa_prefill_kv_begin(0, p0, p0, c->window_left, 0, tile_kv, SWA_MUTANT_NONE);
                    cr_assert_geq(begin / c->page_size, ev, "%s r%d row %d: prefill loads evicted page %d", c->id, r,
                                  i0, begin / c->page_size);
                }
            if (c->qo_len[r] == 1) {
                int ws = swa_decode_window_start(c->kv_len[r], c->window_left, 0, SWA_MUTANT_NONE);
                int base = swa_decode_chunk_base(ws, c->page_size, SWA_MUTANT_NONE);
                cr_assert_geq(base / c->page_size, ev, "%s r%d: decode loads evicted page", c->id, r);
                cr_assert_geq(ws - ws % 256, ev * c->page_size, "%s r%d: aiter's partition reaches an evicted page",
                              c->id, r);
            }
        }
        if (c->window_left < 0)
            cr_assert_eq(in.evicted_page, -1, "%s: no window, nothing evicted", c->id);
        evicted_total += evicted_any;
        swa_inputs_free(&in);
    }
    cr_assert_gt(evicted_total, 0, "the case evicts nothing: the test checks no eviction");
    swa_case_list_free(&list);
}

/* ---------------------------------------------------------------------------
 * the loader: "layers" */

Test(detection_power, layers_expand_one_record_per_layer)
{
    swa_case_list list = load("{\"name\": \"g\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 50}],"
                              " \"num_qo_heads\": 2, \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\","
                              " \"layers\": [{\"window_left\": 7}, {\"window_left\": -1}],"
                              " \"page_size\": [1, 16], \"backends\": [\"decode_fa2\"]}");
    cr_assert_eq(list.count, 4);
    cr_expect_str_eq(list.cases[0].id, "inline/g:page_size=1,layer=0");
    cr_expect_str_eq(list.cases[1].id, "inline/g:page_size=1,layer=1");
    cr_expect_str_eq(list.cases[3].id, "inline/g:page_size=16,layer=1");
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(list.cases[i].num_layers, 2);
        cr_expect_eq(list.cases[i].layer, i % 2);
        cr_expect_eq(list.cases[i].window_left, i % 2 ? -1 : 7);
        cr_expect_eq(list.cases[i].layer_window_left[0], 7);
        cr_expect_eq(list.cases[i].layer_window_left[1], -1);
    }
    swa_case_list_free(&list);
}

#define LAYER_HEAD "{\"name\": \"g\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 50}], \"num_qo_heads\": 2," \
                   " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"backends\": [\"decode_fa2\"]"

Test(detection_power, layers_errors_are_located)
{
    expect_refused(LAYER_HEAD ", \"layers\": []}", "/layers", "1 to 16 layer objects");
    expect_refused(LAYER_HEAD ", \"layers\": 5}", "/layers", "1 to 16 layer objects");
    expect_refused(LAYER_HEAD ", \"layers\": [{\"window_left\": 3}, 4]}", "/layers/1", "expected a layer object");
    expect_refused(LAYER_HEAD ", \"layers\": [{\"window_left\": -2}]}", "/layers/0/window_left", "[-1, 1073741824]");
    expect_refused(LAYER_HEAD ", \"layers\": [{\"window_left\": 2.5}]}", "/layers/0/window_left", "got 2.5");
    expect_refused(LAYER_HEAD ", \"layers\": [{\"window_left\": [1, 2]}]}", "/layers/0/window_left", "cannot be swept");
    expect_refused(LAYER_HEAD ", \"layers\": [{\"window_left\": 1}, {}]}", "/layers/1", "missing required key");
    expect_refused(LAYER_HEAD ", \"layers\": [{\"window_lft\": 1}]}", "/layers/0/window_lft", "window_left");
    expect_refused(LAYER_HEAD ", \"window_left\": 3, \"layers\": [{\"window_left\": 1}]}", "/window_left",
                   "no \"window_left\" in a case with \"layers\"");
    /* a case without layers still needs its window */
    expect_refused(LAYER_HEAD "}", "/", "missing required key \"window_left\"");
    /* defaults' window_left is for the cases without layers */
    swa_case_list list = load("{\"defaults\": {\"window_left\": 5}, \"cases\": [" LAYER_HEAD
                              ", \"layers\": [{\"window_left\": 1}]}, {\"name\": \"h\", \"requests\": [{\"qo_len\": 1,"
                              " \"kv_len\": 9}], \"num_qo_heads\": 1, \"num_kv_heads\": 1, \"head_dim\": 64,"
                              " \"dtype\": \"fp16\", \"backends\": [\"decode_fa2\"]}]}");
    cr_assert_eq(list.count, 2);
    cr_expect_eq(list.cases[0].window_left, 1);
    cr_expect_eq(list.cases[1].window_left, 5);
    cr_expect_eq(list.cases[1].num_layers, 0);
    swa_case_list_free(&list);
}

/* ---------------------------------------------------------------------------
 * the new mutants, killed by the shipped case files on the host */

typedef struct tally {
    int passed, failed, other;
} tally;

/* Runs every case of the shipped file whose id matches filter on every
 * backend of the case that the mutant touches (all backends for NONE). */
static tally run_shipped(const char *file, const char *filter, swa_mutant m)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cases/%s", SWADIFF_SOURCE_DIR, file);
    swa_case_list list = {0};
    swa_load_error le;
    memset(&le, 0, sizeof le);
    cr_assert_eq(swa_case_load_path(path, &list, &le), 0, "%s: %s", path, le.message);
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_run_config cfg = {.device = host, .mutant = m, .quiet = true, .no_isolate = true, .argv0 = "swadiff"};
    const char *touched = m == SWA_MUTANT_NONE ? NULL : swa_mutant_get(m)->backends;
    tally t = {0, 0, 0};
    for (int i = 0; i < list.count; i++) {
        const swa_case *c = &list.cases[i];
        if (!swa_case_matches(c, filter))
            continue;
        swa_case_ctx ctx;
        swa_error err = {0};
        cr_assert_eq(swa_case_ctx_init(&ctx, c, host, &err), SWA_OK, "%s: %s", c->id, err.message);
        for (int b = 0; swa_backend_names[b]; b++) {
            if (!(c->backends & (1u << b)))
                continue;
            if (touched && !strstr(touched, swa_backend_names[b]))
                continue;
            swa_result r;
            swa_run_one(&cfg, &ctx, swa_backend_by_name(swa_backend_names[b]), &r, NULL, NULL);
            if (r.outcome == SWA_OUTCOME_PASSED)
                t.passed++;
            else if (r.outcome == SWA_OUTCOME_FAILED)
                t.failed++;
            else
                t.other++;
            swa_compare_result_free(&r.cmp);
        }
        swa_case_ctx_free(&ctx);
    }
    swa_case_list_free(&list);
    return t;
}

static void expect_killed(const char *file, const char *filter, swa_mutant m)
{
    tally clean = run_shipped(file, filter, SWA_MUTANT_NONE);
    cr_assert_gt(clean.passed, 0, "%s %s: nothing ran", file, filter);
    cr_assert_eq(clean.failed + clean.other, 0, "%s %s: %d failed, %d other without a mutant", file, filter,
                 clean.failed, clean.other);
    tally mut = run_shipped(file, filter, m);
    cr_assert_gt(mut.failed, 0, "%s %s: mutant %s survived (%d passed)", file, filter, swa_mutant_get(m)->name,
                 mut.passed);
}

Test(detection_power, out_of_window_mutants_killed_by_poison)
{
    expect_killed("poison.json", "poison/evicted_one_wave*", SWA_MUTANT_KV_START_SKIP_DROPPED);
    expect_killed("poison.json", "poison/evicted_prefill*", SWA_MUTANT_WINDOW_MASK_SKIPPED_IN_EDGE_TILE);
    expect_killed("poison.json", "poison/evicted_decode*", SWA_MUTANT_WINDOW_MASK_SKIPPED_IN_EDGE_TILE);
}

Test(detection_power, plan_reuse_killed_by_layers)
{
    expect_killed("layers.json", "layers/prefill_local_global*", SWA_MUTANT_PLAN_REUSED_ACROSS_WINDOWS);
    expect_killed("layers.json", "layers/decode_local_global*", SWA_MUTANT_PLAN_REUSED_ACROSS_WINDOWS);
    expect_killed("layers.json", "layers/global_first_graph*", SWA_MUTANT_PLAN_REUSED_ACROSS_WINDOWS);
}

Test(detection_power, graph_replay_with_fewer_live_requests)
{
    expect_killed("cuda_graph.json", "cuda_graph/fa2_replay_fewer_live*", SWA_MUTANT_GRAPH_STALE_PARTIAL_OFFSETS);
}

Test(detection_power, page_units_exact_at_page_size_1_only)
{
    tally one = run_shipped("page_units.json", "page_units/decode:*page_size=1", SWA_MUTANT_PAGE_UNITS_TOKENS);
    cr_expect_eq(one.failed + one.other, 0, "page size 1: tokens and pages agree, the mutant must pass");
    cr_expect_gt(one.passed, 0);
    expect_killed("page_units.json", "page_units/decode:*page_size=13", SWA_MUTANT_PAGE_UNITS_TOKENS);
    expect_killed("page_units.json", "page_units/decode:*page_size=16", SWA_MUTANT_PAGE_UNITS_TOKENS);
}

Test(detection_power, soft_cap_head_dim_and_sentinel_mutants_killed)
{
    expect_killed("softcap_large.json", "softcap_large/*", SWA_MUTANT_SOFTCAP_TANH_OVERFLOW);
    expect_killed("head_dims.json", "head_dims/decode:head_dim=64", SWA_MUTANT_HEAD_DIM_LOOP_TRUNCATED);
    expect_killed("finite_sentinel.json", "finite_sentinel/*", SWA_MUTANT_FINITE_SENTINEL_EMPTY_ROW);
}
