/* test_launch_choice.c — the GPU kernels' launch choices
 * (backends/launch_choice.c): the chooser the CUDA/HIP dispatch calls, the
 * recorded form and its text, the space a target can take, the prediction
 * from a plan, and what swa_run_one records on a device that reports its
 * launches (report 1.6 "launch", "launch_predicted").
 *
 * The device of the last tests is the host emulation with the launch hooks
 * added, its prefill executor noting what the CUDA launcher would (once
 * right, once as a dispatch that drifted from the chooser); the real
 * launchers are checked against the chooser on the GPU by the run itself
 * (a result whose launch differs keeps the prediction, and `swadiff coverage
 * --launches-from` fails on it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "backends/launch_choice.h"
#include "backends/plan.h"
#include "harness/case_load.h"
#include "harness/run.h"
#include "tests/test_case_util.h"

static swa_launch_target named(const char *name)
{
    swa_launch_target t;
    cr_assert(swa_launch_target_named(name, &t), "no target %s", name);
    return t;
}

static swa_prefill_choice prefill(const swa_launch_target *t, int head_dim, int tile, int work, int kv_heads)
{
    swa_prefill_shape s = {.head_dim = head_dim, .cta_tile_q = tile, .num_work = work, .num_kv_heads = kv_heads,
                           .total_qo = 1, .split_kv = false};
    swa_prefill_choice c;
    swa_error err = {0};
    cr_assert_eq(swa_prefill_choose(t, &s, &c, &err), SWA_OK, "%s", err.message);
    return c;
}

Test(launch_choice, prefill_follows_the_dispatch_rule_on_each_target)
{
    swa_launch_target h200 = named("h200"), sm80 = named("sm80"), portable = named("portable");
    /* Hopper: the warp-specialised engine; 16-row tiles stay on mma.sync */
    swa_prefill_choice c = prefill(&h200, 128, 128, 4, 8);
    cr_expect_eq(c.kernel, SWA_PK_WS_128);
    cr_expect_eq(c.rows, 128);
    cr_expect_eq(c.warps, 12, "two consumer warpgroups and the producer");
    cr_expect_not(c.persistent, "32 items fit 132 SMs: one CTA per item");
    cr_expect_eq(c.ctas, 32);
    cr_expect_eq(prefill(&h200, 64, 64, 4, 8).kernel, SWA_PK_WS_64);
    cr_expect_eq(prefill(&h200, 128, 16, 4, 8).kernel, SWA_PK_MMA_16);
    /* head_dim 256: one warpgroup of 64 rows; the planner never gives it a
     * 128-row tile, but a 128-row tile would run as two CTAs */
    c = prefill(&h200, 256, 128, 1, 1);
    cr_expect_eq(c.kernel, SWA_PK_WS_64);
    cr_expect_eq(c.sub_tiles, 2);
    /* without wgmma: 128-row tiles as one CTA of 32-row warps (the default
     * knob), head_dim 256 on 4 warps x 16 rows */
    cr_expect_eq(prefill(&sm80, 128, 128, 4, 8).kernel, SWA_PK_MMA_128);
    c = prefill(&sm80, 256, 64, 4, 8);
    cr_expect_eq(c.kernel, SWA_PK_MMA_64);
    cr_expect_eq(c.sub_tiles, 1);
    swa_launch_target knob = sm80;
    knob.prefill_rows_per_warp = 16;
    c = prefill(&knob, 128, 128, 4, 8);
    cr_expect_eq(c.kernel, SWA_PK_MMA_64);
    cr_expect_eq(c.sub_tiles, 2, "a 128-row tile as two 64-row CTAs");
    /* the portable engine: 16-row CTAs, a 128-row tile as 8 */
    c = prefill(&portable, 128, 128, 3, 2);
    cr_expect_eq(c.kernel, SWA_PK_PORTABLE_16);
    cr_expect_eq(c.sub_tiles, 8);
    cr_expect_eq(c.items, 3 * 8 * 2);
    /* the knob turns the wgmma engine off (SWADIFF_CUDA_PREFILL_ENGINE=mma) */
    knob = h200;
    knob.prefill_engine = 0;
    cr_expect_eq(prefill(&knob, 128, 128, 4, 8).kernel, SWA_PK_MMA_128);
    cr_expect_eq(prefill(&knob, 256, 64, 4, 8).kernel, SWA_PK_MMA_64);
}

Test(launch_choice, the_persistent_grid_takes_over_when_items_outnumber_the_sms)
{
    swa_launch_target h200 = named("h200");
    swa_prefill_choice c = prefill(&h200, 128, 128, 17, 8); /* 136 items */
    cr_expect(c.persistent);
    cr_expect_eq(c.ctas, 132);
    c = prefill(&h200, 128, 128, 16, 8 + 0); /* 128 items: one CTA each */
    cr_expect_not(c.persistent);
    c = prefill(&h200, 64, 64, 1000, 8); /* the 64-row kernel has no persistent form */
    cr_expect_not(c.persistent);
    h200.ws_ctas = SWA_LAUNCH_WS_CTAS_PER_ITEM;
    cr_expect_not(prefill(&h200, 128, 128, 1000, 8).persistent);
    h200.ws_ctas = 4;
    c = prefill(&h200, 128, 128, 2, 8);
    cr_expect(c.persistent, "at most 4 CTAs over 16 items");
    cr_expect_eq(c.ctas, 4);
}

Test(launch_choice, shapes_no_launcher_takes_are_refused_by_name)
{
    swa_launch_target h200 = named("h200");
    swa_prefill_shape s = {.head_dim = 96, .cta_tile_q = 64, .num_work = 1, .num_kv_heads = 1};
    swa_prefill_choice c;
    swa_error err = {0};
    cr_expect_eq(swa_prefill_choose(&h200, &s, &c, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "head_dim 96") != NULL, "%s", err.message);
    s.head_dim = 64;
    s.cta_tile_q = 32;
    cr_expect_eq(swa_prefill_choose(&h200, &s, &c, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "cta_tile_q 32") != NULL, "%s", err.message);
    swa_decode_shape d = {.head_dim = 128, .group_size = 0};
    swa_decode_choice dc;
    cr_expect_eq(swa_decode_choose(&h200, &d, &dc, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "group_size 0") != NULL, "%s", err.message);
}

Test(launch_choice, decode_row_blocks_partitions_and_merges)
{
    swa_launch_target h200 = named("h200");
    swa_error err = {0};
    swa_decode_choice c;
    swa_decode_shape s = {.aiter = false, .head_dim = 128, .group_size = 40, .grid_work = 3, .merge_requests = 2,
                          .split_kv = true};
    cr_assert_eq(swa_decode_choose(&h200, &s, &c, &err), SWA_OK);
    cr_expect_eq(c.kernel, SWA_DK_MMA_W2);
    cr_expect_eq(c.row_blocks, 3, "40 query heads per KV head: three 16-row blocks");
    cr_expect(c.launches && c.merge);
    s.grid_work = 0; /* a batch with no work still merges (empty rows get 0 / -inf) */
    cr_assert_eq(swa_decode_choose(&h200, &s, &c, &err), SWA_OK);
    cr_expect_not(c.launches);
    cr_expect(c.merge);
    h200.decode_warps = 4;
    swa_decode_shape a = {.aiter = true, .head_dim = 64, .group_size = 16, .num_seqs = 2, .max_num_partitions = 20};
    cr_assert_eq(swa_decode_choose(&h200, &a, &c, &err), SWA_OK);
    cr_expect_eq(c.kernel, SWA_DK_MMA_W4);
    cr_expect_eq(c.warps, 4);
    cr_expect_eq(c.row_blocks, 1);
    swa_launch l = {{0}};
    swa_launch_add_decode(&l, &c, true, 64, SWA_DTYPE_FP16);
    char text[256];
    swa_launch_format(&l, text, sizeof text);
    cr_expect_str_eq(text, "decode_aiter.kernel=mma_sync_w4;decode_aiter.row_blocks=1;decode_aiter.partitions=17_up;"
                           "decode_aiter.head_dim=64;decode_aiter.dtype=fp16");
    a.max_num_partitions = 0; /* nothing to launch: no record at all */
    cr_assert_eq(swa_decode_choose(&h200, &a, &c, &err), SWA_OK);
    cr_expect_not(c.launches);
    swa_launch none = {{0}};
    swa_launch_add_decode(&none, &c, true, 64, SWA_DTYPE_FP16);
    cr_expect(swa_launch_empty(&none));
}

Test(launch_choice, records_read_back_and_bad_text_is_named)
{
    swa_launch_target h200 = named("h200");
    swa_launch l = {{0}};
    swa_prefill_choice a = prefill(&h200, 128, 128, 200, 1), b = prefill(&h200, 128, 16, 1, 1);
    swa_launch_add_prefill(&l, &a, 128, SWA_DTYPE_BF16);
    swa_launch_add_prefill(&l, &b, 128, SWA_DTYPE_BF16); /* a second layer: the record is a union */
    char text[512];
    swa_launch_format(&l, text, sizeof text);
    cr_expect_str_eq(text, "prefill.kernel=mma_sync_16+wgmma_ws_128;prefill.grid=per_item+persistent;"
                           "prefill.sub_tiles=1;prefill.merge=none;prefill.head_dim=128;prefill.dtype=bf16");
    swa_launch back;
    swa_error err = {0};
    cr_assert_eq(swa_launch_parse(text, &back, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(memcmp(&back, &l, sizeof l), 0);
    cr_expect_eq(swa_launch_parse("prefill.kernel=wgmma_ws_256", &back, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "prefill.kernel: unknown value \"wgmma_ws_256\""), "%s", err.message);
    cr_expect_eq(swa_launch_parse("prefill.rows=16", &back, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "unknown key \"prefill.rows\""), "%s", err.message);
    cr_expect_eq(swa_launch_parse("prefill.kernel", &back, &err), SWA_ERR_INVALID);
    cr_expect_eq(swa_launch_parse("prefill.kernel=mma_sync_16+", &back, &err), SWA_ERR_INVALID);

    swa_launch_target t;
    swa_launch_target_format(&h200, text, sizeof text);
    cr_expect_str_eq(text, "portable=0;wgmma=1;sm_count=132;prefill_engine=2;rows_per_warp=32;decode_warps=2;ws_ctas=0");
    cr_assert_eq(swa_launch_target_parse(text, &t, &err), SWA_OK, "%s", err.message);
    /* field by field: the struct has padding */
    cr_expect(t.portable == h200.portable && t.wgmma == h200.wgmma && t.sm_count == h200.sm_count &&
              t.prefill_engine == h200.prefill_engine && t.prefill_rows_per_warp == h200.prefill_rows_per_warp &&
              t.decode_warps == h200.decode_warps && t.ws_ctas == h200.ws_ctas);
    cr_expect_eq(swa_launch_target_parse("portable=0;wgmma=1;sm_count=0;prefill_engine=2;rows_per_warp=32;"
                                         "decode_warps=2;ws_ctas=0",
                                         &t, &err),
                 SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "sm_count must be a whole number from 1"), "%s", err.message);
    cr_expect_eq(swa_launch_target_parse("portable=0;wgmma=1;sm_count=132;prefill_engine=1;rows_per_warp=32;"
                                         "decode_warps=2;ws_ctas=0",
                                         &t, &err),
                 SWA_ERR_INVALID, "the serial wgmma engine (prefill_engine 1) is gone");
    cr_expect(strstr(err.message, "prefill_engine 1 (the serial wgmma engine) is gone"), "%s", err.message);
    cr_expect_eq(swa_launch_target_parse("portable=0;wgmma=1", &t, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "expected sm_count="), "%s", err.message);
}

static bool has(const swa_launch_space *s, swa_launch_key k, const char *value)
{
    int v = swa_launch_value_index(k, value);
    cr_assert_geq(v, 0, "%s is not a value of %s", value, swa_launch_def_at(k)->key);
    return s->values.set[k] & (1u << v);
}

Test(launch_choice, each_target_takes_only_its_own_kernels)
{
    swa_launch_target h200 = named("h200"), sm80 = named("sm80"), portable = named("portable");
    swa_launch_space s;
    swa_launch_space_of(&h200, &s);
    cr_expect(has(&s, SWA_LA_PREFILL_KERNEL, "wgmma_ws_128") && has(&s, SWA_LA_PREFILL_KERNEL, "wgmma_ws_64") &&
              has(&s, SWA_LA_PREFILL_KERNEL, "mma_sync_16"));
    cr_expect_not(has(&s, SWA_LA_PREFILL_KERNEL, "mma_sync_128"), "no mma.sync 128-row kernel where wgmma runs");
    cr_expect_not(has(&s, SWA_LA_PREFILL_KERNEL, "mma_sync_64"),
                  "every 64- and 128-row tile runs on the wgmma engine where it is ready");
    cr_expect(has(&s, SWA_LA_PREFILL_GRID, "persistent"));
    cr_expect_not(has(&s, SWA_LA_PREFILL_SUB_TILES, "2"), "head_dim 256 never gets a 128-row tile");
    cr_expect(has(&s, SWA_LA_FA2_ROW_BLOCKS, "5_up") && has(&s, SWA_LA_AITER_PARTITIONS, "17_up"));
    cr_expect_not(has(&s, SWA_LA_FA2_KERNEL, "mma_sync_w4"));
    swa_launch_space_of(&sm80, &s);
    cr_expect(has(&s, SWA_LA_PREFILL_KERNEL, "mma_sync_128") && has(&s, SWA_LA_PREFILL_KERNEL, "mma_sync_64"));
    cr_expect_not(has(&s, SWA_LA_PREFILL_KERNEL, "wgmma_ws_128"));
    cr_expect_not(has(&s, SWA_LA_PREFILL_GRID, "persistent"));
    swa_launch_space_of(&portable, &s);
    cr_expect(has(&s, SWA_LA_PREFILL_SUB_TILES, "8") && has(&s, SWA_LA_PREFILL_SUB_TILES, "4"));
    cr_expect(has(&s, SWA_LA_FA2_KERNEL, "portable"));
    cr_expect_not(has(&s, SWA_LA_PREFILL_KERNEL, "mma_sync_16"));
}

/* ---- what a run records ------------------------------------------------------------- */

static const swa_device_ops *host;
static swa_launch noted;
static int drift; /* 1: the "launcher" records another kernel than the chooser picks */

static void target_of(swa_launch_target *t) { cr_assert(swa_launch_target_named("h200", t)); }

static void last_launch(swa_launch *out)
{
    if (!out)
        memset(&noted, 0, sizeof noted);
    else
        *out = noted;
}

/* what backends/cuda/prefill.cu does around its kernel, on the host's arithmetic */
static swa_status noting_prefill(const swa_prefill_plan *p, void *dev_inputs, const swa_out_args *o, bool write_lse,
                                 swa_error *err)
{
    swa_launch_target t;
    target_of(&t);
    swa_prefill_shape s = {p->head_dim, p->cta_tile_q, p->num_work, p->num_kv_heads, p->qo_indptr[p->num_requests],
                           p->split_kv};
    swa_prefill_choice c;
    swa_status st = swa_prefill_choose(&t, &s, &c, err);
    if (st != SWA_OK)
        return st;
    if (drift)
        c.kernel = SWA_PK_MMA_64;
    swa_launch_add_prefill(&noted, &c, p->head_dim, p->dtype);
    return host->prefill(p, dev_inputs, o, write_lse, err);
}

static const char CASE[] =
    "{\"name\": \"l\", \"requests\": [{\"qo_len\": 100, \"kv_len\": 140}, {\"qo_len\": 90, \"kv_len\": 90}],"
    " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"bf16\", \"window_left\": 31,"
    " \"backends\": [\"prefill\"]}";

static void run(const swa_device_ops *dev, swa_result *r)
{
    swa_case_list list = load_inline_case("launch.json", CASE);
    swa_run_config cfg = {.device = dev, .quiet = true, .no_isolate = true, .argv0 = "swadiff"};
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, &list.cases[0], dev, &err), SWA_OK, "%s", err.message);
    swa_run_one(&cfg, &ctx, swa_backend_by_name("prefill"), r, NULL, NULL);
    swa_compare_result_free(&r->cmp);
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
}

static swa_device_ops launching_device(void)
{
    host = swa_device_get(SWA_DEVICE_HOST);
    cr_assert_not_null(host);
    cr_assert_null(host->last_launch, "the host emulation makes no launch choices");
    swa_device_ops dev = *host;
    dev.prefill = noting_prefill;
    dev.launch_target = target_of;
    dev.last_launch = last_launch;
    return dev;
}

Test(launch_choice, a_result_records_its_launch_and_no_prediction_when_they_agree)
{
    swa_device_ops dev = launching_device();
    memset(&noted, 0xff, sizeof noted); /* left by an earlier run: must be reset before this one */
    swa_result r;
    run(&dev, &r);
    cr_expect_eq(r.outcome, SWA_OUTCOME_PASSED, "%s", r.message);
    /* 190 packed rows per request on average: 128-row tiles, 4 work items x 2 KV heads, no split */
    cr_expect_str_eq(r.launch, "prefill.kernel=wgmma_ws_128;prefill.grid=per_item;prefill.sub_tiles=1;"
                               "prefill.merge=none;prefill.head_dim=64;prefill.dtype=bf16");
    cr_expect_str_eq(r.launch_predicted, "", "the chooser predicted what ran: nothing to keep");
}

Test(launch_choice, a_dispatch_that_drifted_from_the_chooser_keeps_the_prediction)
{
    swa_device_ops dev = launching_device();
    drift = 1;
    swa_result r;
    run(&dev, &r);
    cr_expect_eq(r.outcome, SWA_OUTCOME_PASSED, "the numbers are right; the model is what is wrong: %s", r.message);
    cr_expect(strstr(r.launch, "prefill.kernel=mma_sync_64;") != NULL, "%s", r.launch);
    cr_expect(strstr(r.launch_predicted, "prefill.kernel=wgmma_ws_128;") != NULL, "%s", r.launch_predicted);
}

Test(launch_choice, the_host_emulation_records_nothing)
{
    host = swa_device_get(SWA_DEVICE_HOST);
    swa_result r;
    run(host, &r);
    cr_expect_eq(r.outcome, SWA_OUTCOME_PASSED, "%s", r.message);
    cr_expect_str_eq(r.launch, "");
    cr_expect_str_eq(r.launch_predicted, "");
}
