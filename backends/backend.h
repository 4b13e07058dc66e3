/* backend.h — how backends and devices plug into the harness.
 *
 * A backend (prefill, decode_fa2, decode_aiter, and the decode_auto
 * selector) is a small table of function pointers: it says whether it can run
 * a case, builds a device-independent plan on the host (backends/plan.h) and
 * runs it on a device.  A device (host emulation, CUDA, HIP) is a second
 * table: it uploads a case's inputs once and executes plans.
 *
 * Output buffers: the harness allocates out and lse with guard_bytes of
 * guard_pattern on each side and the interior poisoned (all bits set, a NaN
 * in every dtype).  A device must hand back the whole guarded region as it
 * was after the kernels ran (CUDA copies it to the device and back), so the
 * harness can check that nothing was written outside and everything inside.
 *
 * Words: swadiff's *backend* is what ggml calls an op (one attention
 * algorithm with its plan), and swadiff's *device* is what ggml calls a
 * backend/device (where the plan executes).
 *
 * Slots: a device table may leave any executor slot NULL (marked optional
 * below); a backend then answers "unsupported" from supports() and run(),
 * never calls NULL.  Devices are found by name through the registry
 * (backends/registry.c), so the command line knows no device by name.
 *
 * Ownership: plan() allocates *plan, free() releases it; upload() allocates
 * the device copy of the inputs, release() frees it. */
#ifndef SWADIFF_BACKEND_H
#define SWADIFF_BACKEND_H

#include "core/case.h"
#include "core/data.h"
#include "backends/plan.h"

#define SWA_BACKEND_API_VERSION 1

typedef struct swa_out_args {
    void *out;            /* interior of the guarded out buffer, dtype, [total_qo][Hq][D] */
    float *lse;           /* interior of the guarded lse buffer [total_qo][Hq], or NULL */
    size_t out_bytes, lse_bytes;
    size_t guard_bytes;   /* guard on each side of out and of lse */
    uint8_t guard_pattern;
} swa_out_args;

/* What a device hands an external backend that asks for its memory
 * (include/swadiff/plugin.h, SWADIFF_MEM_CUDA / SWADIFF_MEM_HIP): device
 * pointers into the case's device copy (uploaded once per case; NULL for
 * an empty array), the stream every copy of the case goes to (a
 * cudaStream_t / hipStream_t) and the device ordinal. */
typedef struct swa_device_view {
    const void *q, *k_pages, *v_pages, *k_ragged, *v_ragged;
    const int *qo_indptr, *kv_indptr;                  /* swa_inputs' (kv_indptr: ragged rows) */
    const int *page_indptr, *page_indices, *last_page_len; /* FlashInfer form */
    const int *block_tables, *context_lens;            /* AITER / vLLM form */
    void *stream;
    int device;
} swa_device_view;

/* One call of an external backend on a device view; out and lse (NULL when
 * not asked for) are the interiors of the guarded outputs on the device. */
typedef swa_status (*swa_device_call_fn)(void *ctx, const swa_device_view *v, void *out, float *lse,
                                         swa_error *err);

struct swa_launch_target; /* backends/launch_choice.h */
struct swa_launch;

typedef struct swa_device_ops {
    swa_device kind;
    const char *name;
    /* required: true when usable; otherwise why not (e.g. "no CUDA device: ...") */
    bool (*available)(char *why, size_t n);
    /* required: one line: device model, toolkit/driver version */
    void (*describe)(char *buf, size_t n);
    /* required: SM / CU count the planner targets (host emulates an H200: 132) */
    int (*num_sms)(void);
    /* required: copy a case's inputs to the device / free that copy */
    swa_status (*upload)(const swa_inputs *in, void **dev_inputs, swa_error *err);
    void (*release)(void *dev_inputs);
    /* (optional) executors, one per plan type; NULL: the device cannot run it */
    swa_status (*prefill)(const swa_prefill_plan *p, void *dev_inputs, const swa_out_args *o,
                          bool write_lse, swa_error *err);
    swa_status (*decode_fa2)(const swa_decode_fa2_plan *p, void *dev_inputs, const swa_out_args *o,
                             bool write_lse, swa_error *err);
    /* (optional) CUDA-graph mode: capture with `captured`, update buffers
     * to `full`, replay; out gets the replay's result. */
    swa_status (*decode_fa2_graph)(swa_decode_fa2_plan *captured, const swa_decode_fa2_plan *full,
                                   void *dev_inputs, const swa_out_args *o, bool write_lse,
                                   swa_error *err);
    swa_status (*decode_aiter)(const swa_decode_aiter_plan *p, void *dev_inputs,
                               const swa_out_args *o, swa_error *err);
    /* (optional) free and total memory of the device, for the estimate the
     * harness checks before upload (harness/run.c).  NULL: the device has no
     * memory of its own (the host emulation reads the host's buffers). */
    bool (*memory)(size_t *free_bytes, size_t *total_bytes);
    /* (optional) the kernel variant the executor calls since the last reset
     * ran, one line (the CUDA build: "prefill wgmma-ws: 2 consumer
     * warpgroups + producer, 5-stage ring, K/V by cp.async"; a device with one variant
     * per executor leaves this NULL).  buf == NULL resets it; the harness
     * resets before a backend runs and reads after, so a result names the
     * engine that computed it and an external backend's result names none. */
    void (*last_kernel)(char *buf, size_t n);
    /* (optional) one line per visible GPU: its model, the code of this
     * binary it runs (e.g. "sm_90a image", "PTX compute_80, JIT-compiled
     * for sm_90 image") and the engines it gets, '\n'-separated, for `list
     * devices`; NULL: describe() says it all */
    void (*describe_each)(char *buf, size_t n);
    /* (optional) device memory for external backends: uploads the arrays
     * only they read (once per case), copies the guarded outputs to the
     * device, calls call(), synchronises the view's stream and copies the
     * outputs back; then checks what a foreign kernel may have broken: work
     * left on another stream, an input written or freed (restored, for the
     * backends after it).  Each is an error naming `who` and the cause; a
     * device fault is SWA_ERR_DEVICE.  NULL: the device has no memory of
     * its own to hand out (host). */
    swa_status (*external_run)(void *dev_inputs, const swa_inputs *in, const swa_out_args *o, bool want_lse,
                               const char *who, swa_device_call_fn call, void *call_ctx, swa_error *err);
    /* (optional) the GPU launch choices (backends/launch_choice.h): the
     * target the launchers choose for, and the record of what the executors
     * launched since the last reset (out == NULL resets), a union over the
     * launches of a result.  NULL: the device has one kernel per executor
     * (the host emulation). */
    void (*launch_target)(struct swa_launch_target *t);
    void (*last_launch)(struct swa_launch *out);
} swa_device_ops;

/* Called for warnings a backend emits at plan time (printed once, kept in
 * the report). */
typedef void (*swa_warn_fn)(void *ctx, const char *backend, const char *message);

typedef struct swa_plan_opts {
    const swa_device_ops *device;
    swa_mutant mutant;
    int num_sms;            /* target occupancy for split decisions */
    swa_warn_fn warn;
    void *warn_ctx;
    const struct swa_backend *backend; /* the backend being planned (external backends find their state) */
    /* split-KV: 0 the planner's choice; 1 forced on, -1 forced off (the
     * "split" invariance, for backends with SWA_TRAIT_SPLIT_KNOB) */
    int split;
} swa_plan_opts;

/* What a backend declares about itself for a case (docs/invariance.md):
 * the invariance checks hold it to these bitwise. */
enum {
    SWA_TRAIT_DETERMINISTIC = 1u << 0,   /* the same inputs give the same bits, run after run */
    SWA_TRAIT_BATCH_INVARIANT = 1u << 1, /* a request's output does not depend on the other requests of
                                          * the batch, their order, or where its pages lie in the pool */
    SWA_TRAIT_SPLIT_KNOB = 1u << 2,      /* takes swa_plan_opts.split */
};

typedef struct swa_run_opts {
    bool window_left_set;   /* run(window_left=...) given explicitly */
    int window_left;
    bool return_lse;
} swa_run_opts;

typedef struct swa_backend {
    const char *name;
    const char *description;
    int api_version;
    unsigned flag;          /* SWA_BACKEND_* of case.h */
    double lse_base;        /* 2.0 for base-2 LSE; 0 when the kernel has none */
    /* required: NULL when the backend can run c on dev (dev NULL: on any
     * device that has its executor slots); else the reason, written to buf */
    const char *(*supports)(const swa_case *c, const swa_device_ops *dev, char *buf, size_t n);
    swa_status (*plan)(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o, void **plan,
                       swa_error *err);
    /* LSE base of what run() wrote (decode_aiter returns the shadow's 2.0) */
    double (*run_lse_base)(const void *plan, const swa_run_opts *r);
    swa_status (*run)(void *plan, void *dev_inputs, const swa_run_opts *r, const swa_out_args *o,
                      swa_error *err);
    void (*free)(void *plan);
    /* (optional) SWA_TRAIT_* the backend declares for c; NULL: none */
    unsigned (*traits)(const struct swa_backend *b, const swa_case *c);
} swa_backend;

#ifdef __cplusplus
extern "C" {
#endif
/* The registry (defined in backends/registry.c): every backend in the order
 * of SWA_BACKEND_LIST, and every device this binary knows. */
const swa_backend *const *swa_backends(int *count);
const swa_backend *swa_backend_by_name(const char *name);
const swa_backend *swa_backend_by_flag(unsigned flag);

/* Devices built into this binary (host always; cuda/hip when compiled in). */
const swa_device_ops *swa_device_get(swa_device kind); /* NULL when not built */
/* A device by name.  NULL when there is none; then *cmake_option (when not
 * NULL) is the CMake option that would build it, or NULL for an unknown name. */
const swa_device_ops *swa_device_by_name(const char *name, const char **cmake_option);
/* The first GPU device that is built and usable, in registry order; NULL
 * with the last reason in why when there is none. */
const swa_device_ops *swa_device_first_gpu(char *why, size_t n);
/* Device i (0 <= i < SWA_DEVICE_COUNT) of the registry, built or not: its
 * name and CMake option; the table, or NULL when not built. */
const swa_device_ops *swa_device_at(int i, const char **name, const char **cmake_option);
/* Every device name the registry knows, built or not, as "host, cuda or hip". */
void swa_device_names_text(char *buf, size_t n);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_BACKEND_H */
