/* swadiff/plugin.h — the C plug-in ABI: the only header a plug-in needs.
 *
 * A plug-in is a shared object that exports one function,
 *
 *     const swadiff_plugin *swadiff_plugin_entry(void);
 *
 * returning a table that lives as long as the library is loaded.  swadiff
 * loads it with `swadiff run --plugin PATH.so` (repeatable) inside its
 * isolated worker process, so a plug-in that crashes or hangs costs one
 * (case, backend) result, not the run.  Each backend of the table is named
 * `PLUGIN:BACKEND` on the command line and in the reports.
 *
 * The problem is described the way serving engines pass it: ragged queries
 * (qo_indptr), the paged KV cache in FlashInfer form (kv_indptr, kv_indices,
 * kv_last_page_len; NHD or HND) and in AITER / vLLM form (block_tables,
 * context_lens), and the same keys as contiguous per-request K/V.  Every
 * window convention is swadiff's (FlashInfer's): window_left = L keeps keys
 * [p - L, ...], -1 is "no window"; convert to your library's convention in
 * the plug-in, and say how in your README (AITER: S = L + 1, L = -1 -> 0).
 * window_right is the case's own (a non-causal two-sided band [p-L, p+R]);
 * a plug-in that cannot bound the right side must refuse a non-causal
 * problem with window_right >= 0 in supports(), never run it dense.
 * Chunked local attention (a case's attention_chunk_size) has no field in
 * the ABI (versions 1 and 2): swadiff does not give chunked cases to
 * plug-ins, nor cases with qo_len > kv_len (empty rows), so the contract
 * below holds.
 *
 * Versioning: SWADIFF_PLUGIN_ABI_VERSION changes whenever any struct here
 * changes (swadiff_plugin_backend is read as an array, so even an appended
 * field is a new version).  Fields are only ever appended, and swadiff
 * reads a table by the version it declares: it loads plug-ins built for
 * versions 1, 2 and 3 (this header), and refuses any other version,
 * naming both.  Version 3 appended `invariance` to swadiff_plugin_backend
 * (what the kernel declares about itself; zero in older tables).  Version 2 appended `tiles` to swadiff_plugin_backend and
 * qo_indptr_dev, stream and device to swadiff_problem (device memory); a
 * version-1 backend that declares device memory is skipped (it cannot
 * know the stream).  Enumerations travel as int32_t fields, so the layout
 * does not depend on the compiler's enum size.
 *
 * The contract, beyond the field comments:
 *  - num_qo_heads is a multiple of num_kv_heads.
 *  - lse is log_base(sum over visible keys of exp(s)), s after sm_scale and
 *    the soft cap; a row with no visible key has output 0 and lse -inf.
 *  - For host memory the *_dev pointers equal the host ones, stream is NULL
 *    and device is -1.
 *  - A plan may keep pointers into the problem: the problem and its arrays
 *    live until plan_free.
 *  - Inputs are const: never write into q, k, v, the caches or an index
 *    array, in any memory, and never free anything swadiff allocated (the
 *    inputs, out, lse).  Free what you allocate, in plan_free or before run
 *    returns.  swadiff checksums the host inputs it hands out before
 *    supports()/plan() and after every call: a write is an error for that
 *    backend naming the input, and the inputs are restored for the backends
 *    and cases after it (cases of a sweep share one set of inputs).
 *
 * Device memory (a backend whose memory is SWADIFF_MEM_CUDA or
 * SWADIFF_MEM_HIP; it runs only under `swadiff run --device cuda` or
 * `--device hip` respectively, and is skipped with that reason elsewhere):
 *  - Every tensor and every *_dev index array is a device pointer of the
 *    device `device`, which is current when supports, plan, run and
 *    plan_free are called.  The case's inputs are uploaded once and shared
 *    by every backend of the case; the host index arrays stay valid.
 *  - supports and plan see the device problem too (they are called in the
 *    worker, after the upload, just before the first run of a plan).
 *  - `stream` (a cudaStream_t or hipStream_t) is the stream the case's
 *    copies go to.  run may enqueue its work on it and return: swadiff
 *    synchronises that stream after run returns and then copies out and
 *    lse back.  Work on any other stream (your own, or the legacy default
 *    stream 0) must be complete when run returns; swadiff records an error
 *    when the legacy or per-thread default stream is still busy then, or
 *    when the outputs still change after the given stream is done.
 *  - CUDA graphs: plan or run may capture work on `stream`
 *    (cudaStreamBeginCapture ... cudaStreamEndCapture) and launch the graph
 *    on it, as serving engines do; destroy it in run or plan_free.
 *  - out and lse are guarded and poisoned on the device as on the host;
 *    swadiff checksums the inputs after each run and checks that none of
 *    its device buffers was freed: a run that wrote into an input or freed
 *    a buffer is recorded as an error naming the buffer, and the inputs are
 *    restored for the backends after it.  A device fault (illegal address)
 *    costs the result, and swadiff restarts its worker for the rest.
 *
 * Pure C99; also compiles as C++. */
#ifndef SWADIFF_PLUGIN_H
#define SWADIFF_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define SWADIFF_PLUGIN_ABI_VERSION 3
#define SWADIFF_PLUGIN_ABI_OLDEST 1 /* the oldest version swadiff still loads */
#define SWADIFF_PLUGIN_ENTRY "swadiff_plugin_entry"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum swadiff_dtype {
    SWADIFF_FP16 = 0, /* IEEE binary16 */
    SWADIFF_BF16 = 1, /* bfloat16 (upper half of a binary32) */
    SWADIFF_FP32 = 2,
} swadiff_dtype;

typedef enum swadiff_layout {
    SWADIFF_NHD = 0, /* pages [num_pages][page_size][num_kv_heads][head_dim] */
    SWADIFF_HND = 1, /* pages [num_pages][num_kv_heads][page_size][head_dim] */
} swadiff_layout;

/* Where the tensors of a problem live.  A backend declares the memory it
 * wants; swadiff copies the inputs there once per case and the guarded
 * outputs there and back around each run. */
typedef enum swadiff_memory {
    SWADIFF_MEM_HOST = 0,
    SWADIFF_MEM_CUDA = 1, /* device pointers of the current CUDA device (--device cuda) */
    SWADIFF_MEM_HIP = 2,  /* device pointers of the current HIP device (--device hip) */
} swadiff_memory;

/* Return codes of supports / plan / run. */
typedef enum swadiff_rc {
    SWADIFF_RC_OK = 0,
    SWADIFF_RC_UNSUPPORTED = 1, /* recorded as a skip, with the message */
    SWADIFF_RC_ERROR = 2,       /* recorded as an error, with the message */
} swadiff_rc;

/* One attention problem.  Sizes and index arrays on the host are always
 * valid; the tensor pointers and the *_dev index arrays point into
 * `memory`.  All index arrays are int32. */
typedef struct swadiff_problem {
    uint32_t struct_size;      /* sizeof(swadiff_problem) as swadiff built it */
    int32_t memory;            /* swadiff_memory */

    int32_t num_requests;      /* B */
    int32_t total_qo, total_kv;
    int32_t num_qo_heads, num_kv_heads, head_dim; /* qo head h reads kv head h / (Hq / Hkv) */
    int32_t dtype;             /* swadiff_dtype */

    /* masking; query row i of request r sits at p = kv_len[r] - qo_len[r] + i */
    int32_t causal;            /* 1: key k visible only if k <= p */
    int32_t window_left;       /* -1: none; L >= 0: key k visible only if k >= p - L */
    int32_t window_right;      /* -1: none; R >= 0: key k visible only if k <= p + R */
    float sm_scale;            /* logits s = (q . k) * sm_scale */
    float soft_cap;            /* 0: none; else s = soft_cap * tanh(s / soft_cap) */
    int32_t return_lse;        /* 1: write lse (see swadiff_plugin_backend.lse_base) */

    /* host copies (always valid) */
    const int32_t *qo_indptr;  /* [B + 1] query rows of each request */
    const int32_t *qo_len;     /* [B] */
    const int32_t *kv_len;     /* [B], kv_len[r] >= qo_len[r] */

    /* queries, in `memory`: [total_qo][num_qo_heads][head_dim] of dtype */
    const void *q;

    /* contiguous K/V, in `memory`: [total_kv][num_kv_heads][head_dim];
     * request r's keys are rows kv_seq_indptr[r] .. kv_seq_indptr[r + 1] */
    const void *k, *v;
    const int32_t *kv_seq_indptr;      /* host */
    const int32_t *kv_seq_indptr_dev;  /* in `memory` */

    /* paged cache, in `memory`: a pool of num_pages pages in `layout`.
     * Pages no request references, and slots past kv_len in a last page,
     * hold NaN: a correct kernel never lets them reach an output. */
    int32_t page_size, num_pages;
    int32_t layout;            /* swadiff_layout */
    const void *k_cache, *v_cache;
    /* FlashInfer form: token t of request r is slot t % page_size of page
     * kv_indices[kv_indptr[r] + t / page_size]. */
    const int32_t *kv_indptr, *kv_indices, *kv_last_page_len;             /* host */
    const int32_t *kv_indptr_dev, *kv_indices_dev, *kv_last_page_len_dev; /* in `memory` */
    /* AITER / vLLM form: block_tables[r][t / page_size], unused slots -1;
     * context_lens equals kv_len (context_lens_dev is kv_len in `memory`) */
    int32_t max_blocks_per_seq;
    const int32_t *block_tables, *context_lens;         /* host */
    const int32_t *block_tables_dev, *context_lens_dev; /* in `memory` */

    /* (version 2) qo_indptr in `memory`; and for device memory only (see
     * the head comment) the stream to run on, a cudaStream_t /
     * hipStream_t, and the device ordinal: NULL and -1 for host memory.
     * Appended, so a version-1 plug-in's view of the fields above holds. */
    const int32_t *qo_indptr_dev;
    void *stream;
    int32_t device;
} swadiff_problem;

/* Where a backend writes its answer (in `problem->memory`).  The buffers
 * are poisoned before the call and guarded on both sides: write exactly
 * the elements below, nothing outside. */
typedef struct swadiff_output {
    uint32_t struct_size;
    void *out;   /* [total_qo][num_qo_heads][head_dim] of problem->dtype */
    float *lse;  /* [total_qo][num_qo_heads] in lse_base, or NULL when not asked */
} swadiff_output;

/* The tile shape of a tiled kernel (optional, ABI 2).  `swadiff explain`
 * uses it to score only the tile-granular mask hypotheses your kernel can
 * show (a window mask applied per tile instead of per element): without
 * it, every tile shape real kernels use is tried.  Unused entries are 0. */
typedef struct swadiff_tile_shape {
    int32_t num_q_rows;        /* entries of q_rows (0: query tiles not declared) */
    int32_t q_rows[4];         /* query-tile heights the kernel picks from, 1..65536 */
    int32_t gqa_packed;        /* 1: q_rows count packed rows, query row x qo head of a
                                * group (FlashInfer's CTA_TILE_Q); 0: rows of one head
                                * (FlashAttention); -1: either */
    int32_t num_kv_keys;       /* entries of kv_keys (0: not declared) */
    int32_t kv_keys[4];        /* KV-tile widths, 1..65536: a tile's KV start is
                                * aligned down to one of them */
} swadiff_tile_shape;

typedef struct swadiff_plugin_backend {
    const char *name;          /* [A-Za-z0-9_.-]+, unique within the plug-in */
    const char *description;   /* one line */
    int32_t memory;            /* swadiff_memory: where it wants the tensors */
    double lse_base;           /* 2.0 (FlashInfer), 2.718281828459045 (natural), 0: no LSE */

    /* Optional (NULL: every problem).  Returns SWADIFF_RC_OK, or
     * SWADIFF_RC_UNSUPPORTED with the reason in msg. */
    swadiff_rc (*supports)(const swadiff_problem *p, char *msg, size_t msg_size);
    /* Optional plan/run split (NULL: run gets plan == NULL).  plan sees the
     * same problem run will see; plan_free releases what plan made. */
    swadiff_rc (*plan)(const swadiff_problem *p, void **plan, char *msg, size_t msg_size);
    /* Required.  Computes out (and lse when p->return_lse).  For device
     * memory, enqueue on p->stream (swadiff synchronises it) or finish
     * before returning; see the head comment. */
    swadiff_rc (*run)(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size);
    void (*plan_free)(void *plan); /* optional */
    /* ABI 2.  Optional (NULL: not declared): the kernel's tile shape. */
    const swadiff_tile_shape *tiles;
    /* ABI 3.  SWADIFF_INVARIANCE_* bits the kernel declares (0: none).
     * `swadiff run --invariance` / --repeat hold a declared kernel to them
     * bitwise: a difference fails the result (docs/invariance.md). */
    uint32_t invariance;
} swadiff_plugin_backend;

/* Declared in swadiff_plugin_backend.invariance. */
#define SWADIFF_INVARIANCE_DETERMINISTIC 1u /* the same problem gives the same bits, run after run */
#define SWADIFF_INVARIANCE_BATCH 2u         /* a request's output does not depend on the rest of the
                                             * batch, its order, or where its pages lie */

typedef struct swadiff_plugin {
    uint32_t abi_version;      /* SWADIFF_PLUGIN_ABI_VERSION (the layout of `backends`) */
    const char *name;          /* [A-Za-z0-9_.-]+ */
    int32_t num_backends;
    const swadiff_plugin_backend *backends;
} swadiff_plugin;

typedef const swadiff_plugin *(*swadiff_plugin_entry_fn)(void);

/* The one symbol a plug-in exports (declare it with this macro so the
 * signature cannot drift):  SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) */
#if defined(__GNUC__)
#define SWADIFF_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define SWADIFF_PLUGIN_EXPORT
#endif
SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_PLUGIN_H */
