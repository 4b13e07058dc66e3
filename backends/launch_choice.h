/* launch_choice.h — the GPU kernels' launch choices: which kernel variant,
 * grid and helper kernels a launch of each executor takes on a GPU, as one
 * pure function of (GPU, tuning, shape) that the CUDA/HIP dispatch calls
 * (backends/cuda/prefill.cu, decode_fa2.cu, decode_aiter.cu), and the same
 * choices recorded like the plan decisions (plan_decisions.h): a key with a
 * closed set of values (issue 28, item 6).
 *
 * Three uses, one function:
 *  - dispatch: the launcher asks swa_prefill_choose / swa_decode_choose and
 *    instantiates the template the choice names (a kernel whose own shape
 *    disagrees with the choice is an error, not a silent launch);
 *  - record: what ran is put in a swa_launch (union over the launches of a
 *    result) and written to report.json as "launch";
 *  - gate: swa_launch_space enumerates the values and pairs a target can
 *    take over every shape its planners produce, swa_launch_predict says what
 *    a plan will launch, and `swadiff coverage --launches` reports what the
 *    case library never makes a GPU launch, and any result whose recorded
 *    launch differs from the prediction (harness/cli_coverage.c).
 *
 * Plain C with no device code, so that the host build tests it
 * (tests/test_launch_choice.c) and predicts for a GPU it does not have. */
#ifndef SWADIFF_LAUNCH_CHOICE_H
#define SWADIFF_LAUNCH_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/backend.h"

#define SWA_LAUNCH_MAX_VALUES 8

/* The GPU and the knobs the dispatch reads.  A target is named in
 * report.json ("launch_target") so that a report can be gated elsewhere. */
typedef struct swa_launch_target {
    bool portable;             /* the portable engine only (the HIP build) */
    bool wgmma;                /* an sm_90a image on a compute capability 9.0 GPU */
    int sm_count;              /* the persistent grid's CTAs and the planners' target */
    int prefill_engine;        /* 0 mma.sync, 2 wgmma warp-specialised (the default) */
    int prefill_rows_per_warp; /* 16 or 32 (the default): 128-row mma.sync tiles as one CTA */
    int decode_warps;          /* 2 (the default) or 4 */
    int ws_ctas;               /* SWA_LAUNCH_WS_CTAS_PER_SM (0, default), N > 0, SWA_LAUNCH_WS_CTAS_PER_ITEM (-1) */
} swa_launch_target;
#define SWA_LAUNCH_WS_CTAS_PER_SM 0
#define SWA_LAUNCH_WS_CTAS_PER_ITEM (-1)

/* The prefill kernel variants (rows per CTA in the name). */
typedef enum {
    SWA_PK_MMA_16 = 0, /* mma.sync, 16 rows, keys over 4 warps */
    SWA_PK_MMA_64,     /* mma.sync, 4 warps x 16 rows */
    SWA_PK_MMA_128,    /* mma.sync, 4 warps x 32 rows (two m-tiles per warp) */
    SWA_PK_WS_64,      /* warp-specialised wgmma, one consumer warpgroup + producer */
    SWA_PK_WS_128,     /* warp-specialised wgmma, two consumer warpgroups + producer */
    SWA_PK_PORTABLE_16 /* the portable engine, 16 rows, 2 warps */
} swa_prefill_kernel;

typedef enum {
    SWA_DK_MMA_W2 = 0, /* 2 warps split each 32-key tile */
    SWA_DK_MMA_W4,     /* 4 warps split each 64-key tile */
    SWA_DK_PORTABLE
} swa_decode_kernel;

typedef struct swa_prefill_choice {
    bool launches;          /* false: no work item (only the merge, if any, runs) */
    swa_prefill_kernel kernel;
    int rows, warps;        /* of one CTA of the kernel */
    int sub_tiles;          /* CTAs per plan tile: cta_tile_q / rows (at least 1) */
    long long items;        /* work items x sub_tiles x kv heads */
    bool persistent;        /* the persistent grid of ctas CTAs over the items */
    int ctas;               /* CTAs launched */
    bool merge;             /* the split-KV merge kernel runs */
} swa_prefill_choice;

typedef struct swa_decode_choice {
    bool launches;          /* the attention kernel runs (work or partitions to do) */
    swa_decode_kernel kernel;
    int warps;
    int row_blocks;         /* 16-row blocks of a GQA group, one CTA each */
    bool merge;             /* decode_fa2: the split-KV merge; decode_aiter: the reduce */
    int partitions;         /* decode_aiter: max_num_partitions (0 for decode_fa2) */
} swa_decode_choice;

typedef struct swa_prefill_shape {
    int head_dim, cta_tile_q, num_work, num_kv_heads, total_qo;
    bool split_kv;
} swa_prefill_shape;

typedef struct swa_decode_shape {
    bool aiter;             /* decode_aiter, else decode_fa2 */
    int head_dim, group_size;
    int grid_work;          /* decode_fa2: work items launched */
    int merge_requests;     /* decode_fa2: requests the merge covers (0: none) */
    bool split_kv;          /* decode_fa2 */
    int num_seqs, max_num_partitions; /* decode_aiter */
} swa_decode_shape;

/* The recorded form: keys per executor, each a closed set of values. */
typedef enum {
    SWA_LA_PREFILL_KERNEL = 0,
    SWA_LA_PREFILL_GRID,
    SWA_LA_PREFILL_SUB_TILES,
    SWA_LA_PREFILL_MERGE,
    SWA_LA_PREFILL_HEAD_DIM,
    SWA_LA_PREFILL_DTYPE,
    SWA_LA_FA2_KERNEL,
    SWA_LA_FA2_ROW_BLOCKS,
    SWA_LA_FA2_MERGE,
    SWA_LA_FA2_HEAD_DIM,
    SWA_LA_FA2_DTYPE,
    SWA_LA_AITER_KERNEL,
    SWA_LA_AITER_ROW_BLOCKS,
    SWA_LA_AITER_PARTITIONS,
    SWA_LA_AITER_HEAD_DIM,
    SWA_LA_AITER_DTYPE,
    SWA_LA_COUNT
} swa_launch_key;

typedef struct swa_launch_def {
    const char *key;                                /* "prefill.kernel", as written in report.json */
    const char *values[SWA_LAUNCH_MAX_VALUES + 1];  /* NULL-terminated */
    const char *meaning;
} swa_launch_def;

/* Bit v of set[k]: value v of key k was taken by some launch. */
typedef struct swa_launch {
    unsigned set[SWA_LA_COUNT];
} swa_launch;

typedef struct swa_launch_pair {
    swa_launch_key a, b;
} swa_launch_pair;

/* What a target can take: reachable values and pairs of values. */
typedef struct swa_launch_space {
    swa_launch values;
    unsigned pair[16][SWA_LAUNCH_MAX_VALUES]; /* pair i: bit vb of pair[i][va] */
} swa_launch_space;

#ifdef __cplusplus
extern "C" {
#endif

const swa_launch_def *swa_launch_def_at(int key); /* NULL outside 0..SWA_LA_COUNT-1 */
int swa_launch_value_count(int key);
int swa_launch_value_index(int key, const char *value); /* -1: not one of its values */
const swa_launch_pair *swa_launch_pairs(int *count);

/* The dispatch's choices.  SWA_ERR_INVALID for a shape no launcher takes
 * (head_dim other than 64/128/256, cta_tile_q other than 16/64/128). */
swa_status swa_prefill_choose(const swa_launch_target *t, const swa_prefill_shape *s, swa_prefill_choice *c,
                              swa_error *err);
swa_status swa_decode_choose(const swa_launch_target *t, const swa_decode_shape *s, swa_decode_choice *c,
                             swa_error *err);
const char *swa_prefill_kernel_name(swa_prefill_kernel k); /* "wgmma_ws_128" */

/* Adds a choice to a record (a result's launches are a union). */
void swa_launch_add_prefill(swa_launch *l, const swa_prefill_choice *c, int head_dim, swa_dtype dtype);
void swa_launch_add_decode(swa_launch *l, const swa_decode_choice *c, bool aiter, int head_dim, swa_dtype dtype);

/* "prefill.kernel=wgmma_ws_128;prefill.grid=persistent+per_item;..." in
 * table order; returns the length written (cut at n - 1). */
size_t swa_launch_format(const swa_launch *l, char *buf, size_t n);
/* Parses that text back (report.json's values, joined); SWA_ERR_INVALID
 * naming the key or value it does not know. */
swa_status swa_launch_parse(const char *text, swa_launch *l, swa_error *err);
bool swa_launch_empty(const swa_launch *l);
/* dst gets every value src took (a result's launches are a union). */
void swa_launch_union(swa_launch *dst, const swa_launch *src);

/* Every value and pair the target's launchers take over every shape the
 * built-in planners can produce (head dims, query tiles from the prefill
 * planner's own rule, GQA groups up to 128 query heads per KV head,
 * partitions up to 64, split or not, few or many work items). */
void swa_launch_space_of(const swa_launch_target *t, swa_launch_space *s);

/* What plan (b->plan() for c, b a built-in backend) launches on target t,
 * the shadow decode_fa2 plan of decode_aiter included when it serves the
 * LSE.  SWA_ERR_UNSUPPORTED for a backend with no launch model here. */
swa_status swa_launch_predict(const swa_launch_target *t, const swa_backend *b, const void *plan, bool want_lse,
                              swa_launch *l, swa_error *err);

/* Named targets for prediction without the GPU: "h200" (sm_90a image, 132
 * SMs, default knobs), "sm80" (mma.sync only, 108 SMs), "portable" (the
 * HIP build's engine, 304 CUs).  false for an unknown name. */
bool swa_launch_target_named(const char *name, swa_launch_target *t);
const char *swa_launch_target_names(void); /* "h200, sm80, portable" */
/* "portable=0;wgmma=1;sm_count=132;prefill_engine=2;rows_per_warp=32;
 * decode_warps=2;ws_ctas=0" (report.json's environment.launch_target), and
 * back: SWA_ERR_INVALID naming what is missing or out of range. */
size_t swa_launch_target_format(const swa_launch_target *t, char *buf, size_t n);
swa_status swa_launch_target_parse(const char *text, swa_launch_target *t, swa_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_LAUNCH_CHOICE_H */
