/* test_case_sweep.c — sweep expansion, ids, defaults, filters, the shipped
 * case library, and writing a case back (tests/data/cases_good/, cases/).
 *
 * Run: ctest --test-dir build -R test_case_sweep --output-on-failure */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness/case_load.h"
#include "backends/backend.h" /* the registry, for the backend-name check */
#include "harness/case_internal.h" /* the loader's key table, for the schema check */

static swa_case_list load(const char *path)
{
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    char msg[2048];
    if (swa_case_load_path(path, &list, &err)) {
        swa_load_error_format(&err, msg, sizeof msg);
        cr_assert_fail("loading %s failed: %s", path, msg);
    }
    return list;
}

static swa_case_list load_good(const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cases_good/%s", SWADIFF_TEST_DATA, file);
    return load(path);
}

/* The cartesian product in file order, last axis fastest, ids naming only
 * the swept axes. */
Test(case_sweep, product_order_and_ids)
{
    swa_case_list list = load_good("sweep_order.json");
    const int kv[] = {9, 40}, count[] = {1, 3}, window[] = {-1, 0, 7};
    const char *dtype[] = {"fp16", "bf16"}, *cap[] = {"0", "2.5"};
    cr_assert_eq(list.count, 2 * 2 * 2 * 3 * 2, "expanded to %d cases", list.count);
    int i = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++)
                for (int d = 0; d < 3; d++)
                    for (int e = 0; e < 2; e++, i++) {
                        char id[SWA_ID_MAX];
                        snprintf(id, sizeof id, "sweep_order/grid:r0.kv_len=%d,r1.count=%d,dtype=%s,window_left=%d,soft_cap=%s",
                                 kv[a], count[b], dtype[c], window[d], cap[e]);
                        const swa_case *k = &list.cases[i];
                        cr_assert_str_eq(k->id, id, "case %d", i);
                        cr_expect_eq(k->num_requests, 1 + count[b], "%s", id);
                        cr_expect_eq(k->kv_len[0], kv[a], "%s", id);
                        for (int r = 1; r < k->num_requests; r++)
                            cr_expect(k->qo_len[r] == 1 && k->kv_len[r] == 5, "%s: request %d", id, r);
                        cr_expect_eq(k->dtype, c == 0 ? SWA_DTYPE_FP16 : SWA_DTYPE_BF16, "%s", id);
                        cr_expect_eq(k->window_left, window[d], "%s", id);
                        cr_expect_eq(k->soft_cap, e ? 2.5 : 0.0, "%s", id);
                        cr_expect_eq(k->backends, SWA_BACKEND_DECODE_FA2 | SWA_BACKEND_DECODE_AITER, "%s", id);
                        cr_expect_str_eq(k->name, "grid");
                        cr_expect_eq(k->line, 1);
                    }
    swa_case_list_free(&list);
}

/* Absent keys take the documented defaults; nothing else is filled in. */
Test(case_sweep, documented_defaults)
{
    swa_case_list list = load_good("minimal.json");
    cr_assert_eq(list.count, 1);
    const swa_case *c = &list.cases[0];
    cr_expect_str_eq(c->id, "minimal/only_required");
    cr_expect_eq(c->page_size, 16);
    cr_expect_eq(c->layout, SWA_LAYOUT_NHD);
    cr_expect_eq(c->kv_mode, SWA_KV_PAGED);
    cr_expect(c->causal);
    cr_expect_eq(c->soft_cap, 0.0);
    cr_expect_float_eq(c->sm_scale, 1.0 / sqrt(128.0), 1e-15, "sm_scale %.17g", c->sm_scale);
    cr_expect_eq(c->dist, SWA_DIST_NORMAL);
    cr_expect_eq(c->seed, 0u);
    cr_expect(!c->cuda_graph);
    cr_expect_eq(c->graph_capture_requests, 0);
    cr_expect(!c->return_lse);
    cr_expect_str_eq(c->expect_error, "");
    cr_expect_eq(c->tol.mode, SWA_TOL_DEFAULT);
    cr_expect_eq(c->tol.atol, 0.0);
    cr_expect_eq(c->tol.rtol, 0.0);
    cr_expect_lt(c->tol.lse_atol, 0.0, "lse_atol %g: negative means 'per-dtype default'", c->tol.lse_atol);
    cr_expect(!c->tol.equal_nan);
    cr_expect_eq(c->dtype, SWA_DTYPE_FP32);
    cr_expect_eq(swa_case_total_qo(c), 3);
    cr_expect_eq(swa_case_total_kv(c), 10);
    swa_case_list_free(&list);
}

Test(case_sweep, every_field_read)
{
    swa_case_list list = load_good("all_fields.json");
    cr_assert_eq(list.count, 1);
    const swa_case *c = &list.cases[0];
    cr_expect_eq(c->num_requests, 4);
    const int kv[] = {100, 100, 100, 7};
    for (int r = 0; r < 4; r++)
        cr_expect(c->qo_len[r] == 1 && c->kv_len[r] == kv[r], "request %d: %d/%d", r, c->qo_len[r], c->kv_len[r]);
    cr_expect_eq(swa_case_max_kv(c), 100);
    cr_expect_eq(swa_case_group_size(c), 4);
    cr_expect_eq(c->head_dim, 256);
    cr_expect_eq(c->dtype, SWA_DTYPE_BF16);
    cr_expect_eq(c->page_size, 7);
    cr_expect_eq(c->layout, SWA_LAYOUT_HND);
    cr_expect(!c->causal);
    cr_expect_eq(c->window_left, 1023);
    cr_expect_eq(c->soft_cap, 50.0);
    cr_expect_eq(c->sm_scale, 0.0625);
    cr_expect_eq(c->backends, SWA_BACKEND_DECODE_AUTO | SWA_BACKEND_DECODE_FA2);
    cr_expect_eq(c->tol.mode, SWA_TOL_BASELINE);
    cr_expect_eq(c->tol.factor, 2.5);
    cr_expect_eq(c->tol.lse_atol, 0.001);
    cr_expect(c->tol.equal_nan);
    cr_expect_eq(c->dist, SWA_DIST_UNIFORM);
    cr_expect_eq(c->seed, UINT64_MAX, "seed %llu (a double would have rounded it)", (unsigned long long)c->seed);
    cr_expect(c->cuda_graph);
    cr_expect_eq(c->graph_capture_requests, 2);
    cr_expect(c->return_lse);
    cr_expect_str_eq(c->expect_error, "CUDA-graph");
    for (int k = 0; k < SWA_BACKEND_COUNT; k++)
        cr_expect_str_eq(c->expect_skip[k], k == SWA_BACKEND_INDEX_DECODE_FA2 ? "no fp64 path" : "",
                         "expect_skip of %s", swa_backend_names[k]);
    swa_case_list_free(&list);
}

/* Cases inherit what they do not set; their own keys win and come first
 * in the id; a tolerance object replaces the default one as a whole. */
Test(case_sweep, defaults_inherited_and_overridden)
{
    swa_case_list list = load_good("with_defaults.json");
    const char *ids[] = {
        "with_defaults/inherits:dtype=fp16",
        "with_defaults/inherits:dtype=bf16",
        "with_defaults/overrides:window_left=3",
        "with_defaults/overrides:window_left=4",
        "with_defaults/own_requests:r0.kv_len=5,dtype=fp16",
        "with_defaults/own_requests:r0.kv_len=5,dtype=bf16",
        "with_defaults/own_requests:r0.kv_len=9,dtype=fp16",
        "with_defaults/own_requests:r0.kv_len=9,dtype=bf16",
    };
    cr_assert_eq(list.count, 8, "got %d cases", list.count);
    for (int i = 0; i < 8; i++)
        cr_expect_str_eq(list.cases[i].id, ids[i], "case %d", i);
    const swa_case *inherits = &list.cases[0];
    cr_expect_eq(inherits->window_left, 15);
    cr_expect_eq(inherits->kv_len[0], 64);
    cr_expect_eq(inherits->tol.mode, SWA_TOL_ABS_REL);
    cr_expect_eq(inherits->tol.atol, 0.02);
    cr_expect_eq(inherits->tol.rtol, 0.01);
    cr_expect_eq(inherits->line, 14);
    const swa_case *overrides = &list.cases[2];
    cr_expect_eq(overrides->dtype, SWA_DTYPE_FP32);
    cr_expect_eq(overrides->tol.mode, SWA_TOL_DEFAULT);
    cr_expect(overrides->tol.equal_nan);
    const swa_case *own = &list.cases[6];
    cr_expect_eq(own->qo_len[0], 5);
    cr_expect_eq(own->kv_len[0], 9);
    cr_expect_eq(own->backends, SWA_BACKEND_PREFILL);
    swa_case_list_free(&list);
}

/* A folder loads every *.json below it in path order. */
Test(case_sweep, folder_loads_in_path_order)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cases_good", SWADIFF_TEST_DATA);
    swa_case_list list = load(path);
    cr_assert_eq(list.count, 1 + 1 + 1 + 48 + 8, "got %d", list.count);
    cr_expect_str_eq(list.cases[0].id, "aiter_graph_rejected/aiter_rejects_graph");
    cr_expect_str_eq(list.cases[0].expect_error, "CUDA-graph");
    cr_expect_str_eq(list.cases[1].id, "all_fields/everything_set");
    cr_expect_str_eq(list.cases[2].id, "minimal/only_required");
    cr_expect_str_eq(list.cases[3].id, "sweep_order/grid:r0.kv_len=9,r1.count=1,dtype=fp16,window_left=-1,soft_cap=0");
    cr_expect(strstr(list.cases[1].file, "cases_good/all_fields.json") != NULL, "file %s", list.cases[1].file);
    swa_case_list_free(&list);
}

static swa_case_list load_library(void)
{
    return load(SWADIFF_SOURCE_DIR "/cases");
}

/* Every id of the shipped library is unique, shell-safe, glob-free, and
 * --filter with it selects exactly that case. */
Test(case_sweep, library_ids_select_exactly_one_case)
{
    swa_case_list list = load_library(); /* also proves cases/schema/ is skipped */
    cr_assert_gt(list.count, 100);
    for (int i = 0; i < list.count; i++) {
        const char *id = list.cases[i].id;
        for (const char *s = id; *s; s++)
            cr_assert(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:=,+", *s),
                      "id %s has the character '%c', not shell-safe", id, *s);
        int matches = 0;
        for (int j = 0; j < list.count; j++)
            matches += swa_case_matches(&list.cases[j], id);
        cr_assert_eq(matches, 1, "--filter %s selects %d cases", id, matches);
    }
    swa_case_list_free(&list);
}

Test(case_sweep, filter_globs)
{
    swa_case_list list = load_good("sweep_order.json");
    int n = 0;
    for (int i = 0; i < list.count; i++)
        n += swa_case_matches(&list.cases[i], "sweep_order/grid:*window_left=0,*");
    cr_expect_eq(n, 16, "window_left=0 glob selected %d", n);
    n = 0;
    for (int i = 0; i < list.count; i++)
        n += swa_case_matches(&list.cases[i], "sweep_order/*");
    cr_expect_eq(n, list.count);
    n = 0;
    for (int i = 0; i < list.count; i++)
        n += swa_case_matches(&list.cases[i], "sweep_order/grid");
    cr_expect_eq(n, 0, "the bare name of a swept case selects none of its expansions");
    cr_expect(swa_case_matches(&list.cases[0], NULL), "no filter selects everything");
    swa_case_list_free(&list);
}

/* The library carries the seed cases (docs/bugs.md) and the shapes they need around them (docs/cases.md). */
Test(case_sweep, library_carries_the_seed_cases)
{
    swa_case_list list = load_library();
    bool extend_prefix = false, extend_no_prefix = false, long_above_window = false, ragged = false;
    bool page1 = false, page16 = false, page_odd = false;
    bool decode_window[4][2][2] = {{{false}}}; /* window x dtype x backend (fa2, aiter) */
    bool saturation = false, batch1 = false, batch8 = false, gqa1 = false, gqa4 = false;
    bool lse_window = false, lse_no_window = false, graph_fa2 = false, graph_auto = false, poison = false;
    bool hnd = false, hd64 = false, hd128 = false, hd256 = false;
    const int windows[4] = {0, 31, 127, 1023};
    for (int i = 0; i < list.count; i++) {
        const swa_case *c = &list.cases[i];
        bool prefill = c->backends & SWA_BACKEND_PREFILL;
        bool aiter = c->backends & SWA_BACKEND_DECODE_AITER, fa2 = c->backends & SWA_BACKEND_DECODE_FA2;
        if (prefill && c->window_left == 4) {
            for (int r = 0; r < c->num_requests; r++) {
                bool extend = c->qo_len[r] == 6 || c->qo_len[r] == 8 || c->qo_len[r] == 12;
                if (extend && c->kv_len[r] > c->qo_len[r] && c->kv_mode == SWA_KV_PAGED)
                    extend_prefix = true;
                if (extend && c->kv_len[r] == c->qo_len[r] && c->kv_mode == SWA_KV_PAGED)
                    extend_no_prefix = true;
                if (extend && c->kv_mode == SWA_KV_RAGGED)
                    ragged = true;
                if (c->kv_len[r] == c->qo_len[r] && c->qo_len[r] > 64 && c->kv_mode == SWA_KV_PAGED)
                    long_above_window = true;
            }
            page1 |= c->page_size == 1;
            page16 |= c->page_size == 16;
            page_odd |= c->page_size % 2 == 1 && c->page_size > 1;
        }
        if (fa2 || aiter) {
            for (int w = 0; w < 4; w++)
                if (c->window_left == windows[w] && c->dtype != SWA_DTYPE_FP32) {
                    if (fa2)
                        decode_window[w][c->dtype][0] = true;
                    if (aiter)
                        decode_window[w][c->dtype][1] = true;
                }
            if (aiter && c->window_left >= swa_case_max_kv(c) - 1)
                saturation = true;
            if (aiter && c->num_requests == 1)
                batch1 = true;
            if (aiter && c->num_requests == 8)
                batch8 = true;
            gqa1 |= aiter && swa_case_group_size(c) == 1;
            gqa4 |= aiter && swa_case_group_size(c) == 4;
        }
        if (aiter && c->return_lse) {
            lse_window |= c->window_left >= 0;
            lse_no_window |= c->window_left < 0;
        }
        if (c->cuda_graph && c->graph_capture_requests < c->num_requests) {
            graph_fa2 |= fa2;
            graph_auto |= (c->backends & SWA_BACKEND_DECODE_AUTO) != 0;
        }
        poison |= c->dist == SWA_DIST_POISON;
        hnd |= c->layout == SWA_LAYOUT_HND;
        hd64 |= c->head_dim == 64 && aiter;
        hd128 |= c->head_dim == 128 && aiter;
        hd256 |= c->head_dim == 256 && aiter;
    }
    cr_expect(extend_prefix && extend_no_prefix && long_above_window && ragged, "seed 000 extend cases");
    cr_expect(page1 && page16 && page_odd, "seed 000 page sizes 1, 16, odd");
    for (int w = 0; w < 4; w++)
        for (int d = 0; d < 2; d++)
            for (int b = 0; b < 2; b++)
                cr_expect(decode_window[w][d][b], "decode window_left %d, %s, %s missing", windows[w],
                          d ? "bf16" : "fp16", b ? "decode_aiter" : "decode_fa2");
    cr_expect(saturation, "saturation regime window_left >= max_kv_len - 1");
    cr_expect(batch1 && batch8 && gqa1 && gqa4, "batch 1/8, GQA 1/4");
    cr_expect(lse_window && lse_no_window, "return_lse on decode_aiter with and without a window");
    cr_expect(graph_fa2 && graph_auto, "CUDA-graph replay with a larger batch on decode_fa2 and decode_auto");
    cr_expect(poison, "poisoned inputs");
    cr_expect(hnd && hd64 && hd128 && hd256, "HND and head_dim 64/128/256 on decode_aiter");
    swa_case_list_free(&list);
}

/* A case written back as a file loads to the same case. */
static void expect_same_case(const swa_case *a, const swa_case *b)
{
    cr_expect_str_eq(a->name, b->name);
    cr_assert_eq(a->num_requests, b->num_requests, "%s", a->id);
    for (int r = 0; r < a->num_requests; r++)
        cr_expect(a->qo_len[r] == b->qo_len[r] && a->kv_len[r] == b->kv_len[r], "%s: request %d", a->id, r);
    cr_expect(a->num_qo_heads == b->num_qo_heads && a->num_kv_heads == b->num_kv_heads && a->head_dim == b->head_dim,
              "%s: shape", a->id);
    cr_expect(a->dtype == b->dtype && a->page_size == b->page_size && a->layout == b->layout && a->kv_mode == b->kv_mode,
              "%s: storage", a->id);
    cr_expect(a->causal == b->causal && a->window_left == b->window_left, "%s: mask", a->id);
    cr_expect(a->soft_cap == b->soft_cap && a->sm_scale == b->sm_scale, "%s: scale %.17g vs %.17g", a->id, a->sm_scale,
              b->sm_scale);
    cr_expect_eq(a->backends, b->backends, "%s", a->id);
    cr_expect(a->tol.mode == b->tol.mode && a->tol.atol == b->tol.atol && a->tol.rtol == b->tol.rtol &&
                  a->tol.factor == b->tol.factor && a->tol.lse_atol == b->tol.lse_atol &&
                  a->tol.equal_nan == b->tol.equal_nan,
              "%s: tolerance", a->id);
    cr_expect(a->dist == b->dist && a->seed == b->seed, "%s: data", a->id);
    cr_expect(a->cuda_graph == b->cuda_graph && a->graph_capture_requests == b->graph_capture_requests &&
                  a->return_lse == b->return_lse && strcmp(a->expect_error, b->expect_error) == 0,
              "%s: run options", a->id);
    for (int k = 0; k < SWA_BACKEND_COUNT; k++)
        cr_expect_str_eq(b->expect_skip[k], a->expect_skip[k], "%s: expect_skip of %s", a->id, swa_backend_names[k]);
}

Test(case_sweep, write_json_round_trip)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cases_good", SWADIFF_TEST_DATA);
    swa_case_list list = load(path);
    swa_case_list library = load_library();
    char dir[] = "/tmp/swadiff_case_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char file[1100];
    snprintf(file, sizeof file, "%s/shrunk.json", dir);
    for (int pass = 0; pass < 2; pass++) {
        const swa_case_list *src = pass ? &library : &list;
        for (int i = 0; i < src->count; i += pass ? 7 : 1) {
            swa_error err;
            cr_assert_eq(swa_case_write_json(&src->cases[i], file, &err), 0, "%s", err.message);
            swa_case_list back = load(file);
            /* a layered case writes every layer: one record per layer again */
            int layers = src->cases[i].num_layers, k = layers > 0 ? src->cases[i].layer : 0;
            cr_assert_eq(back.count, layers > 0 ? layers : 1, "%s wrote %d cases", src->cases[i].id, back.count);
            char id[SWA_ID_MAX];
            if (layers > 0)
                snprintf(id, sizeof id, "shrunk/%s:layer=%d", src->cases[i].name, k);
            else
                snprintf(id, sizeof id, "shrunk/%s", src->cases[i].name);
            cr_expect_str_eq(back.cases[k].id, id);
            expect_same_case(&src->cases[i], &back.cases[k]);
            cr_expect_eq(back.cases[k].num_layers, layers, "%s: layers", id);
            for (int l = 0; l < layers; l++)
                cr_expect_eq(back.cases[k].layer_window_left[l], src->cases[i].layer_window_left[l], "%s: layer %d",
                             id, l);
            swa_case_list_free(&back);
        }
    }
    unlink(file);
    rmdir(dir);
    swa_case_list_free(&list);
    swa_case_list_free(&library);
}

Test(case_sweep, copy_is_deep)
{
    swa_case_list list = load_good("all_fields.json");
    swa_case copy;
    cr_assert_eq(swa_case_copy(&copy, &list.cases[0]), 0);
    cr_expect_neq(copy.kv_len, list.cases[0].kv_len);
    copy.kv_len[0] = 1;
    cr_expect_eq(list.cases[0].kv_len[0], 100);
    cr_expect_str_eq(copy.id, list.cases[0].id);
    swa_case_free(&copy);
    swa_case_list_free(&list);
}

Test(case_sweep, sweep_cap_counts_the_whole_file)
{
    /* 2 cases of 60000 each: each fits, together they pass 100000 */
    const char *text =
        "{\"defaults\": {\"requests\": [{\"qo_len\": 1, \"kv_len\": 8}], \"num_qo_heads\": 1, \"num_kv_heads\": 1,"
        " \"head_dim\": 64, \"dtype\": \"fp16\", \"backends\": [\"decode_fa2\"]},\n"
        " \"cases\": [{\"name\": \"a\", \"window_left\": -1},\n"
        "           {\"name\": \"b\", \"window_left\": 1}]}";
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("cap.json", text, strlen(text), &list, &err), 0, "%s", err.message);
    cr_expect_eq(list.count, 2);
    swa_case_list_free(&list);

    /* seeds 0..59999 written out */
    size_t cap = 2u << 20;
    char *big = malloc(cap);
    size_t n = (size_t)snprintf(big, cap,
                                "{\"defaults\": {\"requests\": [{\"qo_len\": 1, \"kv_len\": 8}], \"num_qo_heads\": 1,"
                                " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": 0,"
                                " \"backends\": [\"decode_fa2\"], \"seed\": [");
    for (int s = 0; s < 60000; s++)
        n += (size_t)snprintf(big + n, cap - n, "%s%d", s ? "," : "", s);
    n += (size_t)snprintf(big + n, cap - n, "]},\n \"cases\": [{\"name\": \"a\"},\n {\"name\": \"b\"}]}");
    cr_assert_eq(swa_case_parse("cap.json", big, n, &list, &err), -1);
    cr_expect_eq(list.count, 0);
    cr_expect_eq(err.line, 3);
    cr_expect_eq(err.column, 2);
    cr_expect_str_eq(err.path, "/cases/1");
    cr_expect_str_eq(err.message, "expected at most 100000 expanded cases per file, got 120000 with this case (seed: 60000)",
                     "%s", err.message);
    free(big);
}

/* cases/schema/case.schema.json, parsed (caller: cJSON_Delete). */
static cJSON *load_case_schema(void)
{
    FILE *f = fopen(SWADIFF_SOURCE_DIR "/cases/schema/case.schema.json", "rb");
    cr_assert_not_null(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *schema = cJSON_Parse(text);
    cr_assert_not_null(schema, "schema is not JSON");
    return schema;
}

/* The published schema and the loader agree on the keys, and every key is
 * documented (the schema is the format's reference). */
Test(case_sweep, schema_documents_every_loader_key)
{
    cJSON *schema = load_case_schema();
    cJSON *defs = cJSON_GetObjectItemCaseSensitive(schema, "$defs");
    cJSON *props = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(defs, "caseKeys"), "properties");
    cr_assert_not_null(props);
    int documented = 0;
    for (cJSON *p = props->child; p; p = p->next, documented++) {
        bool known = false;
        for (int k = 0; k < F_COUNT; k++)
            known = known || strcmp(swa_case_keys[k].key, p->string) == 0;
        cr_expect(known, "schema documents \"%s\", which the loader rejects", p->string);
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(p, "description");
        if (!d) /* a $ref'd definition carries the description */
            d = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(defs, p->string), "description");
        cr_expect(cJSON_IsString(d) && strlen(d->valuestring) > 10, "\"%s\" has no description", p->string);
    }
    cr_expect_eq(documented, F_COUNT, "schema documents %d keys, the loader knows %d", documented, F_COUNT);
    cJSON *required = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(defs, "case"), "required");
    for (int k = 0; k < F_COUNT; k++) {
        bool listed = false;
        for (cJSON *r = required ? required->child : NULL; r; r = r->next)
            listed = listed || strcmp(r->valuestring, swa_case_keys[k].key) == 0;
        if (k == F_WINDOW_LEFT) /* required unless "layers" sets the windows: an if/then/else of the schema */
            continue;
        cr_expect_eq(listed, swa_case_keys[k].required, "\"%s\": required in the schema %d, in the loader %d",
                     swa_case_keys[k].key, listed, swa_case_keys[k].required);
    }
    cJSON *request = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(defs, "request"), "properties");
    const char *request_keys[] = {"qo_len", "kv_len", "count"};
    cr_expect_eq(cJSON_GetArraySize(request), 3);
    for (int k = 0; k < 3; k++)
        cr_expect_not_null(cJSON_GetObjectItemCaseSensitive(request, request_keys[k]), "request key %s", request_keys[k]);
    cJSON_Delete(schema);
}

/* The backend names are one closed set: the schema's enum, the core table
 * (SWA_BACKEND_LIST) and the registry agree name for name, in order. */
Test(case_sweep, schema_backend_enum_equals_the_backend_table)
{
    cJSON *schema = load_case_schema();
    cJSON *props = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(schema, "$defs"), "caseKeys"), "properties");
    cJSON *names = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(props, "backends"), "items"), "enum");
    cr_assert(cJSON_IsArray(names), "schema: $defs/caseKeys/properties/backends/items/enum missing");
    cr_expect_eq(cJSON_GetArraySize(names), SWA_BACKEND_COUNT, "schema lists %d backends, SWA_BACKEND_LIST %d",
                 cJSON_GetArraySize(names), SWA_BACKEND_COUNT);
    int count = 0;
    const swa_backend *const *registry = swa_backends(&count);
    cr_expect_eq(count, SWA_BACKEND_COUNT, "registry has %d backends, SWA_BACKEND_LIST %d", count, SWA_BACKEND_COUNT);
    int i = 0;
    for (cJSON *e = names->child; e && i < SWA_BACKEND_COUNT; e = e->next, i++) {
        cr_expect_str_eq(e->valuestring, swa_backend_names[i], "schema enum[%d]", i);
        cr_expect_eq(swa_backend_flag_by_name(swa_backend_names[i]), 1u << i);
        cr_expect_str_eq(swa_backend_flag_name(1u << i), swa_backend_names[i]);
        if (i < count) {
            cr_expect_str_eq(registry[i]->name, swa_backend_names[i], "registry[%d]", i);
            cr_expect_eq(registry[i]->flag, 1u << i, "registry[%d] flag", i);
        }
    }
    /* expect_skip's keys are the same closed set */
    cJSON *skip_names = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(props, "expect_skip"), "propertyNames"),
        "enum");
    cr_assert(cJSON_IsArray(skip_names), "schema: $defs/caseKeys/properties/expect_skip/propertyNames/enum missing");
    cr_expect_eq(cJSON_GetArraySize(skip_names), SWA_BACKEND_COUNT);
    i = 0;
    for (cJSON *e = skip_names->child; e && i < SWA_BACKEND_COUNT; e = e->next, i++)
        cr_expect_str_eq(e->valuestring, swa_backend_names[i], "schema expect_skip enum[%d]", i);
    cr_expect_eq(swa_backend_flag_by_name("triton"), 0u);
    char text_names[256];
    swa_backend_names_text(text_names, sizeof text_names);
    cr_expect_str_eq(text_names, "\"prefill\", \"decode_fa2\", \"decode_aiter\" or \"decode_auto\"");
    cJSON_Delete(schema);
}
