/* launch_choice.c — the GPU dispatch's launch choices as a pure function,
 * their recorded form, the space a target can take and the prediction from
 * a plan (launch_choice.h has the model).
 *
 * Tested by tests/test_launch_choice.c; the CUDA/HIP launchers call the two
 * choosers, so the GPU run checks them against what ran. */
#include "backends/launch_choice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/plan_common.h"
#include "backends/prefill.h"

/* ---- the recorded keys ---------------------------------------------------------- */

#define HEAD_DIMS {"64", "128", "256"}
#define DTYPES {"fp16", "bf16"}
#define DECODE_KERNELS {"mma_sync_w2", "mma_sync_w4", "portable"}
#define ROW_BLOCKS {"1", "2", "3", "4", "5_up"}

static const swa_launch_def launch_table[SWA_LA_COUNT] = {
    [SWA_LA_PREFILL_KERNEL] = {"prefill.kernel",
                               {"mma_sync_16", "mma_sync_64", "mma_sync_128", "wgmma_ws_64", "wgmma_ws_128",
                                "portable_16"},
                               "the prefill kernel variant (engine, rows per CTA)"},
    [SWA_LA_PREFILL_GRID] = {"prefill.grid", {"per_item", "persistent"},
                             "one CTA per work item, or the persistent grid of one CTA per SM"},
    [SWA_LA_PREFILL_SUB_TILES] = {"prefill.sub_tiles", {"1", "2", "4", "8"},
                                  "CTAs sharing one plan tile's KV range (cta_tile_q / rows per CTA)"},
    [SWA_LA_PREFILL_MERGE] = {"prefill.merge", {"none", "merge"}, "the split-KV merge kernel after the work items"},
    [SWA_LA_PREFILL_HEAD_DIM] = {"prefill.head_dim", HEAD_DIMS, "the head_dim template instance"},
    [SWA_LA_PREFILL_DTYPE] = {"prefill.dtype", DTYPES, "the dtype template instance"},
    [SWA_LA_FA2_KERNEL] = {"decode_fa2.kernel", DECODE_KERNELS, "the decode_fa2 kernel variant (warps per KV tile)"},
    [SWA_LA_FA2_ROW_BLOCKS] = {"decode_fa2.row_blocks", ROW_BLOCKS,
                               "16-row blocks of a GQA group (one CTA each): group_size 1-16, 17-32, ..."},
    [SWA_LA_FA2_MERGE] = {"decode_fa2.merge", {"none", "merge"}, "the split-KV merge kernel"},
    [SWA_LA_FA2_HEAD_DIM] = {"decode_fa2.head_dim", HEAD_DIMS, "the head_dim template instance"},
    [SWA_LA_FA2_DTYPE] = {"decode_fa2.dtype", DTYPES, "the dtype template instance"},
    [SWA_LA_AITER_KERNEL] = {"decode_aiter.kernel", DECODE_KERNELS,
                             "the decode_aiter kernel variant (warps per KV tile)"},
    [SWA_LA_AITER_ROW_BLOCKS] = {"decode_aiter.row_blocks", ROW_BLOCKS, "16-row blocks of a GQA group"},
    [SWA_LA_AITER_PARTITIONS] = {"decode_aiter.partitions", {"1", "2_4", "5_16", "17_up"},
                                 "max_num_partitions of the launch (256-token partitions)"},
    [SWA_LA_AITER_HEAD_DIM] = {"decode_aiter.head_dim", HEAD_DIMS, "the head_dim template instance"},
    [SWA_LA_AITER_DTYPE] = {"decode_aiter.dtype", DTYPES, "the dtype template instance"},
};

static const swa_launch_pair pair_table[] = {
    {SWA_LA_PREFILL_KERNEL, SWA_LA_PREFILL_HEAD_DIM}, {SWA_LA_PREFILL_KERNEL, SWA_LA_PREFILL_DTYPE},
    {SWA_LA_PREFILL_KERNEL, SWA_LA_PREFILL_MERGE},    {SWA_LA_PREFILL_KERNEL, SWA_LA_PREFILL_SUB_TILES},
    {SWA_LA_PREFILL_GRID, SWA_LA_PREFILL_HEAD_DIM},   {SWA_LA_FA2_KERNEL, SWA_LA_FA2_HEAD_DIM},
    {SWA_LA_FA2_KERNEL, SWA_LA_FA2_DTYPE},            {SWA_LA_FA2_ROW_BLOCKS, SWA_LA_FA2_HEAD_DIM},
    {SWA_LA_FA2_MERGE, SWA_LA_FA2_ROW_BLOCKS},        {SWA_LA_AITER_KERNEL, SWA_LA_AITER_HEAD_DIM},
    {SWA_LA_AITER_KERNEL, SWA_LA_AITER_DTYPE},        {SWA_LA_AITER_ROW_BLOCKS, SWA_LA_AITER_HEAD_DIM},
    {SWA_LA_AITER_PARTITIONS, SWA_LA_AITER_ROW_BLOCKS},
};
_Static_assert(sizeof pair_table / sizeof pair_table[0] <= 16, "swa_launch_space holds 16 pairs");

const swa_launch_def *swa_launch_def_at(int key) { return key >= 0 && key < SWA_LA_COUNT ? &launch_table[key] : NULL; }

int swa_launch_value_count(int key)
{
    const swa_launch_def *d = swa_launch_def_at(key);
    return d ? swa_closed_count(d->values, SWA_LAUNCH_MAX_VALUES) : 0;
}

int swa_launch_value_index(int key, const char *value)
{
    const swa_launch_def *d = swa_launch_def_at(key);
    return d ? swa_closed_index(d->values, SWA_LAUNCH_MAX_VALUES, value) : -1;
}

const swa_launch_pair *swa_launch_pairs(int *count)
{
    if (count)
        *count = (int)(sizeof pair_table / sizeof pair_table[0]);
    return pair_table;
}

/* ---- the choosers --------------------------------------------------------------- */

static const int prefill_rows[] = {16, 64, 128, 64, 128, 16};
static const int prefill_warps[] = {4, 4, 4, 8, 12, 2};
static const char *const prefill_names[] = {"mma_sync_16", "mma_sync_64",  "mma_sync_128",
                                            "wgmma_ws_64", "wgmma_ws_128", "portable_16"};

const char *swa_prefill_kernel_name(swa_prefill_kernel k)
{
    return (unsigned)k < sizeof prefill_names / sizeof prefill_names[0] ? prefill_names[k] : "?";
}

/* The rule of backends/cuda/prefill.cu (swa_prefill_launch_d):
 *  - the portable engine everywhere in a portable build;
 *  - 16-row plan tiles: mma.sync with the keys over 4 warps;
 *  - head_dim <= 128 with the wgmma engine ready (and not turned off,
 *    prefill_engine 0): two consumer warpgroups for 128-row tiles, one for
 *    64; else 128-row tiles as one mma.sync CTA of 32-row warps when the
 *    knob says 32;
 *  - head_dim 256 with wgmma: one consumer warpgroup (64 rows; O takes 128
 *    registers per thread), a 128-row plan tile as two CTAs;
 *  - else mma.sync, 4 warps x 16 rows.
 * The persistent grid: the two-warpgroup warp-specialised kernel, unless
 * the knob asks for one CTA per item, when the items outnumber its CTAs. */
swa_status swa_prefill_choose(const swa_launch_target *t, const swa_prefill_shape *s, swa_prefill_choice *c,
                              swa_error *err)
{
    memset(c, 0, sizeof *c);
    if (s->head_dim != 64 && s->head_dim != 128 && s->head_dim != 256)
        return swa_error_set(err, SWA_ERR_INVALID, "prefill launch: head_dim %d (64, 128 or 256)", s->head_dim);
    if (s->cta_tile_q != 16 && s->cta_tile_q != 64 && s->cta_tile_q != 128)
        return swa_error_set(err, SWA_ERR_INVALID, "prefill launch: cta_tile_q %d (16, 64 or 128)", s->cta_tile_q);
    swa_prefill_kernel k;
    bool wg = t->wgmma && !t->portable && t->prefill_engine == 2;
    if (t->portable)
        k = SWA_PK_PORTABLE_16;
    else if (s->cta_tile_q <= 16)
        k = SWA_PK_MMA_16;
    else if (wg)
        k = s->head_dim <= 128 && s->cta_tile_q >= 128 ? SWA_PK_WS_128 : SWA_PK_WS_64;
    else if (s->head_dim <= 128 && s->cta_tile_q >= 128 && t->prefill_rows_per_warp == 32)
        k = SWA_PK_MMA_128;
    else
        k = SWA_PK_MMA_64;
    c->kernel = k;
    c->rows = prefill_rows[k];
    c->warps = prefill_warps[k];
    c->sub_tiles = s->cta_tile_q > c->rows ? s->cta_tile_q / c->rows : 1;
    c->items = (long long)(s->num_work > 0 ? s->num_work : 0) * c->sub_tiles * s->num_kv_heads;
    c->launches = s->num_work > 0;
    c->ctas = (int)(c->items < 0x7fffffff ? c->items : 0x7fffffff);
    if (k == SWA_PK_WS_128 && t->ws_ctas != SWA_LAUNCH_WS_CTAS_PER_ITEM) {
        long long want = t->ws_ctas == SWA_LAUNCH_WS_CTAS_PER_SM ? t->sm_count : t->ws_ctas;
        if (want > 0 && want < c->items) {
            c->persistent = true;
            c->ctas = (int)want;
        }
    }
    c->merge = s->split_kv && s->total_qo > 0;
    return SWA_OK;
}

/* The rule of decode_fa2.cu / decode_aiter.cu (swa_*_launch_d): the
 * portable engine in a portable build, else mma.sync with the warps the knob
 * asks for (2 by default).  decode_fa2 launches its kernel over grid_work
 * items and the merge over the requests when split; decode_aiter its kernel
 * over the partitions and always the reduce. */
swa_status swa_decode_choose(const swa_launch_target *t, const swa_decode_shape *s, swa_decode_choice *c,
                             swa_error *err)
{
    memset(c, 0, sizeof *c);
    if (s->head_dim != 64 && s->head_dim != 128 && s->head_dim != 256)
        return swa_error_set(err, SWA_ERR_INVALID, "decode launch: head_dim %d (64, 128 or 256)", s->head_dim);
    if (s->group_size < 1)
        return swa_error_set(err, SWA_ERR_INVALID, "decode launch: group_size %d (at least 1)", s->group_size);
    c->kernel = t->portable ? SWA_DK_PORTABLE : t->decode_warps == 4 ? SWA_DK_MMA_W4 : SWA_DK_MMA_W2;
    c->warps = c->kernel == SWA_DK_MMA_W4 ? 4 : 2;
    c->row_blocks = (s->group_size + 15) / 16;
    if (s->aiter) {
        c->launches = s->num_seqs > 0 && s->max_num_partitions > 0;
        c->partitions = s->max_num_partitions;
        c->merge = s->num_seqs > 0;
    } else {
        c->launches = s->grid_work > 0;
        c->merge = s->split_kv && s->merge_requests > 0;
    }
    return SWA_OK;
}

/* ---- the record ----------------------------------------------------------------- */

static void put(swa_launch *l, swa_launch_key k, const char *value)
{
    int v = swa_launch_value_index(k, value);
    if (v >= 0) /* every value passed below is one of the table's */
        l->set[k] |= 1u << v;
}

static const char *dtype_value(swa_dtype d) { return d == SWA_DTYPE_BF16 ? "bf16" : d == SWA_DTYPE_FP16 ? "fp16" : NULL; }

static void put_int(swa_launch *l, swa_launch_key k, int value)
{
    char text[16];
    snprintf(text, sizeof text, "%d", value);
    put(l, k, text);
}

static const char *row_blocks_value(int rb)
{
    static const char *const v[] = {"1", "2", "3", "4", "5_up"};
    return rb < 1 ? NULL : rb >= 5 ? v[4] : v[rb - 1];
}

static const char *partitions_value(int n)
{
    return n < 1 ? NULL : n == 1 ? "1" : n <= 4 ? "2_4" : n <= 16 ? "5_16" : "17_up";
}

void swa_launch_add_prefill(swa_launch *l, const swa_prefill_choice *c, int head_dim, swa_dtype dtype)
{
    if (c->launches) {
        put(l, SWA_LA_PREFILL_KERNEL, swa_prefill_kernel_name(c->kernel));
        put(l, SWA_LA_PREFILL_GRID, c->persistent ? "persistent" : "per_item");
        put_int(l, SWA_LA_PREFILL_SUB_TILES, c->sub_tiles);
        put_int(l, SWA_LA_PREFILL_HEAD_DIM, head_dim);
        put(l, SWA_LA_PREFILL_DTYPE, dtype_value(dtype));
    }
    if (c->launches || c->merge)
        put(l, SWA_LA_PREFILL_MERGE, c->merge ? "merge" : "none");
}

void swa_launch_add_decode(swa_launch *l, const swa_decode_choice *c, bool aiter, int head_dim, swa_dtype dtype)
{
    static const char *const kernels[] = DECODE_KERNELS;
    swa_launch_key kk = aiter ? SWA_LA_AITER_KERNEL : SWA_LA_FA2_KERNEL;
    swa_launch_key kr = aiter ? SWA_LA_AITER_ROW_BLOCKS : SWA_LA_FA2_ROW_BLOCKS;
    swa_launch_key kh = aiter ? SWA_LA_AITER_HEAD_DIM : SWA_LA_FA2_HEAD_DIM;
    swa_launch_key kd = aiter ? SWA_LA_AITER_DTYPE : SWA_LA_FA2_DTYPE;
    if (c->launches) {
        put(l, kk, kernels[c->kernel]);
        put(l, kr, row_blocks_value(c->row_blocks));
        put_int(l, kh, head_dim);
        put(l, kd, dtype_value(dtype));
        if (aiter)
            put(l, SWA_LA_AITER_PARTITIONS, partitions_value(c->partitions));
    }
    if (!aiter && (c->launches || c->merge))
        put(l, SWA_LA_FA2_MERGE, c->merge ? "merge" : "none");
}

bool swa_launch_empty(const swa_launch *l)
{
    for (int k = 0; k < SWA_LA_COUNT; k++)
        if (l->set[k])
            return false;
    return true;
}

void swa_launch_union(swa_launch *dst, const swa_launch *src)
{
    for (int k = 0; k < SWA_LA_COUNT; k++)
        dst->set[k] |= src->set[k];
}

size_t swa_launch_format(const swa_launch *l, char *buf, size_t n)
{
    size_t len = 0;
    if (n) buf[0] = '\0';
    for (int k = 0; k < SWA_LA_COUNT && n; k++) {
        if (!l->set[k])
            continue;
        int w = snprintf(buf + len, n - len, "%s%s=", len ? ";" : "", launch_table[k].key);
        if (w < 0 || (size_t)w >= n - len)
            return n - 1;
        len += (size_t)w;
        bool first = true;
        for (int v = 0; v < swa_launch_value_count(k); v++) {
            if (!(l->set[k] & (1u << v)))
                continue;
            w = snprintf(buf + len, n - len, "%s%s", first ? "" : "+", launch_table[k].values[v]);
            if (w < 0 || (size_t)w >= n - len)
                return n - 1;
            len += (size_t)w;
            first = false;
        }
    }
    return len;
}

swa_status swa_launch_parse(const char *text, swa_launch *l, swa_error *err)
{
    memset(l, 0, sizeof *l);
    const char *p = text ? text : "";
    while (*p) {
        const char *end = strchr(p, ';'), *eq = strchr(p, '=');
        if (!end) end = p + strlen(p);
        if (!eq || eq > end)
            return swa_error_set(err, SWA_ERR_INVALID, "launch \"%.*s\": expected key=value", (int)(end - p), p);
        int k = 0;
        while (k < SWA_LA_COUNT && !(strlen(launch_table[k].key) == (size_t)(eq - p) &&
                                     !strncmp(launch_table[k].key, p, (size_t)(eq - p))))
            k++;
        if (k == SWA_LA_COUNT)
            return swa_error_set(err, SWA_ERR_INVALID, "launch: unknown key \"%.*s\"", (int)(eq - p), p);
        const char *v = eq + 1;
        while (v <= end) {
            const char *ve = v;
            while (ve < end && *ve != '+')
                ve++;
            char value[32];
            if (ve - v <= 0 || ve - v >= (long)sizeof value)
                return swa_error_set(err, SWA_ERR_INVALID, "launch %s: an empty or overlong value", launch_table[k].key);
            memcpy(value, v, (size_t)(ve - v));
            value[ve - v] = '\0';
            int vi = swa_launch_value_index(k, value);
            if (vi < 0)
                return swa_error_set(err, SWA_ERR_INVALID, "launch %s: unknown value \"%s\"", launch_table[k].key,
                                     value);
            l->set[k] |= 1u << vi;
            v = ve + 1;
        }
        p = *end ? end + 1 : end;
    }
    return SWA_OK;
}

/* ---- the space of a target ------------------------------------------------------ */

static void space_add(swa_launch_space *s, const swa_launch *l)
{
    int np;
    const swa_launch_pair *pairs = swa_launch_pairs(&np);
    for (int k = 0; k < SWA_LA_COUNT; k++)
        s->values.set[k] |= l->set[k];
    for (int i = 0; i < np; i++)
        for (int va = 0; va < SWA_LAUNCH_MAX_VALUES; va++)
            if (l->set[pairs[i].a] & (1u << va))
                s->pair[i][va] |= l->set[pairs[i].b];
}

void swa_launch_space_of(const swa_launch_target *t, swa_launch_space *s)
{
    static const int dims[] = {64, 128, 256};
    static const swa_dtype dtypes[] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16};
    /* the prefill planner's own tile rule over the packed query lengths
     * that select each tile; work counts one (under any grid) and far
     * beyond a persistent grid */
    static const double avg_packed[] = {1, 32, 1000};
    static const int works[] = {1, 1 << 20};
    memset(s, 0, sizeof *s);
    swa_error err = {0};
    for (int d = 0; d < 3; d++)
        for (int ty = 0; ty < 2; ty++) {
            for (int a = 0; a < 3; a++)
                for (int w = 0; w < 2; w++)
                    for (int split = 0; split < 2; split++) {
                        swa_prefill_shape ps = {.head_dim = dims[d],
                                                .cta_tile_q = swa_prefill_cta_tile_q(avg_packed[a], dims[d]),
                                                .num_work = works[w],
                                                .num_kv_heads = 1,
                                                .total_qo = 1,
                                                .split_kv = split};
                        swa_prefill_choice pc;
                        swa_launch l = {{0}};
                        if (swa_prefill_choose(t, &ps, &pc, &err) == SWA_OK) {
                            swa_launch_add_prefill(&l, &pc, dims[d], dtypes[ty]);
                            space_add(s, &l);
                        }
                    }
            for (int aiter = 0; aiter < 2; aiter++)
                for (int g = 1; g <= 128; g++)
                    for (int parts = 1; parts <= (aiter ? 64 : 1); parts++)
                        for (int split = 0; split < (aiter ? 1 : 2); split++) {
                            swa_decode_shape ds = {.aiter = aiter,
                                                   .head_dim = dims[d],
                                                   .group_size = g,
                                                   .grid_work = 1,
                                                   .merge_requests = 1,
                                                   .split_kv = split,
                                                   .num_seqs = 1,
                                                   .max_num_partitions = parts};
                            swa_decode_choice dc;
                            swa_launch l = {{0}};
                            if (swa_decode_choose(t, &ds, &dc, &err) == SWA_OK) {
                                swa_launch_add_decode(&l, &dc, aiter, dims[d], dtypes[ty]);
                                space_add(s, &l);
                            }
                        }
        }
}

/* ---- prediction from a plan ----------------------------------------------------- */

static swa_status predict_fa2(const swa_launch_target *t, const swa_decode_fa2_plan *p,
                              const swa_decode_fa2_plan *captured, swa_launch *l, swa_error *err)
{
    /* graph mode launches the captured plan: its padded grid, the merge
     * over its request capacity (cuda_device.cu, decode_fa2_graph) */
    const swa_decode_fa2_plan *q = captured ? captured : p;
    swa_decode_shape ds = {.aiter = false,
                           .head_dim = q->head_dim,
                           .group_size = q->group_size,
                           .grid_work = q->grid_work,
                           .merge_requests = captured ? captured->capacity_requests : p->num_requests,
                           .split_kv = q->split_kv};
    swa_decode_choice c;
    swa_status st = swa_decode_choose(t, &ds, &c, err);
    if (st == SWA_OK)
        swa_launch_add_decode(l, &c, false, q->head_dim, q->dtype);
    return st;
}

swa_status swa_launch_predict(const swa_launch_target *t, const swa_backend *b, const void *plan, bool want_lse,
                              swa_launch *l, swa_error *err)
{
    memset(l, 0, sizeof *l);
    if (!b || !plan)
        return swa_error_set(err, SWA_ERR_INVALID, "launch prediction: no backend or no plan");
    const swa_backend *inner = b;
    const void *inner_plan = plan;
    if (b == &swa_backend_decode_auto) {
        inner_plan = swa_decode_auto_plan_of(plan);
        inner = swa_decode_auto_chosen(plan);
    }
    if (inner == &swa_backend_prefill) {
        const swa_prefill_plan *p = swa_prefill_plan_of(inner_plan);
        swa_prefill_shape ps = {.head_dim = p->head_dim,
                                .cta_tile_q = p->cta_tile_q,
                                .num_work = p->num_work,
                                .num_kv_heads = p->num_kv_heads,
                                .total_qo = p->qo_indptr[p->num_requests],
                                .split_kv = p->split_kv};
        swa_prefill_choice c;
        swa_status st = swa_prefill_choose(t, &ps, &c, err);
        if (st == SWA_OK)
            swa_launch_add_prefill(l, &c, p->head_dim, p->dtype);
        return st;
    }
    if (inner == &swa_backend_decode_fa2)
        return predict_fa2(t, swa_decode_fa2_plan_of(inner_plan), swa_decode_fa2_captured_of(inner_plan), l, err);
    if (inner == &swa_backend_decode_aiter) {
        const swa_decode_aiter_plan *p = swa_decode_aiter_plan_of(inner_plan);
        if (want_lse && p->shadow) /* run(return_lse) runs the shadow decode_fa2 plan instead */
            return predict_fa2(t, p->shadow, NULL, l, err);
        swa_decode_shape ds = {.aiter = true,
                               .head_dim = p->head_dim,
                               .group_size = p->group_size,
                               .num_seqs = p->num_seqs,
                               .max_num_partitions = p->max_num_partitions};
        swa_decode_choice c;
        swa_status st = swa_decode_choose(t, &ds, &c, err);
        if (st == SWA_OK)
            swa_launch_add_decode(l, &c, true, p->head_dim, p->dtype);
        return st;
    }
    return swa_error_set(err, SWA_ERR_UNSUPPORTED, "launch prediction: %s is not a built-in backend", b->name);
}

/* ---- named targets -------------------------------------------------------------- */

bool swa_launch_target_named(const char *name, swa_launch_target *t)
{
    swa_launch_target base = {.portable = false,
                              .wgmma = false,
                              .sm_count = 132,
                              .prefill_engine = 2,
                              .prefill_rows_per_warp = 32,
                              .decode_warps = 2,
                              .ws_ctas = SWA_LAUNCH_WS_CTAS_PER_SM};
    if (!name)
        return false;
    if (!strcmp(name, "h200")) {
        base.wgmma = true;
    } else if (!strcmp(name, "sm80")) {
        base.sm_count = 108;
    } else if (!strcmp(name, "portable")) {
        base.portable = true;
        base.sm_count = 304;
    } else {
        return false;
    }
    *t = base;
    return true;
}

const char *swa_launch_target_names(void) { return "h200, sm80, portable"; }

size_t swa_launch_target_format(const swa_launch_target *t, char *buf, size_t n)
{
    int w = snprintf(buf, n, "portable=%d;wgmma=%d;sm_count=%d;prefill_engine=%d;rows_per_warp=%d;decode_warps=%d;"
                     "ws_ctas=%d",
                     t->portable ? 1 : 0, t->wgmma ? 1 : 0, t->sm_count, t->prefill_engine, t->prefill_rows_per_warp,
                     t->decode_warps, t->ws_ctas);
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n ? n - 1 : 0;
}

swa_status swa_launch_target_parse(const char *text, swa_launch_target *t, swa_error *err)
{
    static const struct {
        const char *key;
        long lo, hi;
    } fields[] = {{"portable", 0, 1},       {"wgmma", 0, 1},        {"sm_count", 1, 100000},
                  {"prefill_engine", 0, 2}, {"rows_per_warp", 16, 32}, {"decode_warps", 2, 4},
                  {"ws_ctas", -1, 1000000}};
    long v[7];
    const char *p = text ? text : "";
    for (int i = 0; i < 7; i++) {
        size_t kl = strlen(fields[i].key);
        if (strncmp(p, fields[i].key, kl) || p[kl] != '=')
            return swa_error_set(err, SWA_ERR_INVALID, "launch_target \"%.120s\": expected %s= at \"%.40s\"",
                                 text ? text : "", fields[i].key, p);
        char *end = NULL;
        v[i] = strtol(p + kl + 1, &end, 10);
        if (end == p + kl + 1 || v[i] < fields[i].lo || v[i] > fields[i].hi || (*end != ';' && *end != '\0') ||
            (i == 6 && *end))
            return swa_error_set(err, SWA_ERR_INVALID, "launch_target: %s must be a whole number from %ld to %ld%s",
                                 fields[i].key, fields[i].lo, fields[i].hi, i == 6 ? ", the last field" : "");
        if (i == 3 && v[i] == 1)
            return swa_error_set(err, SWA_ERR_INVALID, "launch_target: prefill_engine 1 (the serial wgmma engine) "
                                 "is gone; 0 (mma.sync) or 2 (the warp-specialised wgmma engine)");
        p = *end ? end + 1 : end;
    }
    t->portable = v[0];
    t->wgmma = v[1];
    t->sm_count = (int)v[2];
    t->prefill_engine = (int)v[3];
    t->prefill_rows_per_warp = (int)v[4];
    t->decode_warps = (int)v[5];
    t->ws_ctas = (int)v[6];
    return SWA_OK;
}
