/* case.h — one expanded test case (the record every part of swadiff reads)
 * and the closed set of backend names a case may ask for.  Loading case
 * files is the harness's business: harness/case_load.h.
 *
 * Defined in core/case.c: the record operations below and the backend
 * name table.
 *
 * Ownership: swa_case_list_free releases a list and every case in it
 * (including the per-request arrays); swa_case_copy makes a deep copy. */
#ifndef SWADIFF_CASE_H
#define SWADIFF_CASE_H

#include "core/common.h"

#define SWA_ID_MAX 256
#define SWA_PATH_MAX 1024
#define SWA_NAME_MAX 128
#define SWA_MAX_LAYERS 16  /* windows of one interleaved-layer case */
#define SWA_EXPECT_SKIP_MAX 64 /* an expect_skip reason text, with its terminator */
#define SWA_XFAIL_REASON_MAX 200 /* a known failure's reason, with its terminator */

/* The backends a case may name, in registry order: X(ENUM, "name", decode).
 * Everything that lists backends (the flags, the loader's "expected ..."
 * texts, the help text, the decode-only rules, the schema's enum, checked by
 * tests/test_case_sweep.c) derives from this one list. */
#define SWA_BACKEND_LIST(X)                   \
    X(PREFILL, "prefill", 0)                  \
    X(DECODE_FA2, "decode_fa2", 1)            \
    X(DECODE_AITER, "decode_aiter", 1)        \
    X(DECODE_AUTO, "decode_auto", 1) /* resolves to fa2 or aiter at plan time */

enum {
#define SWA_X_INDEX(e, n, d) SWA_BACKEND_INDEX_##e,
    SWA_BACKEND_LIST(SWA_X_INDEX)
#undef SWA_X_INDEX
    SWA_BACKEND_COUNT
};
/* Bit flags of a case's backend set. */
enum {
#define SWA_X_FLAG(e, n, d) SWA_BACKEND_##e = 1u << SWA_BACKEND_INDEX_##e,
    SWA_BACKEND_LIST(SWA_X_FLAG)
#undef SWA_X_FLAG
};
/* The backends that take one query row per request. */
#define SWA_X_DECODE(e, n, d) | ((d) ? SWA_BACKEND_##e : 0u)
#define SWA_BACKEND_DECODE_MASK (0u SWA_BACKEND_LIST(SWA_X_DECODE))

typedef enum {
    SWA_TOL_DEFAULT = 0,  /* per-dtype defaults (docs/cases.md) */
    SWA_TOL_ABS_REL = 1,  /* explicit atol/rtol from the case */
    SWA_TOL_BASELINE = 2, /* error <= factor * error of the low-precision reference */
} swa_tol_mode;

typedef struct swa_tolerance {
    swa_tol_mode mode;
    double atol, rtol;    /* resolved for every mode (defaults filled in) */
    double factor;        /* SWA_TOL_BASELINE only */
    double lse_atol;      /* LSE (natural log) absolute tolerance; < 0 when the case
                           * file gave none: use the per-dtype default */
    bool equal_nan;       /* NaN on both sides counts as equal */
} swa_tolerance;

/* Self-comparisons a case asks for (docs/invariance.md): the backend's
 * output under a transformation of the problem that must not change it,
 * compared with its own output on the case (harness/invariance.c). */
enum {
    SWA_INV_BATCH = 1u << 0, /* each request alone, and the batch reordered */
    SWA_INV_PAGES = 1u << 1, /* another physical page order, another page size */
    SWA_INV_SPLIT = 1u << 2, /* split-KV forced on and off (backends with the knob) */
    SWA_INV_ALL = (1u << 3) - 1
};
/* The names by bit index ("batch", "pages", "split"), NULL-terminated. */
extern const char *const swa_invariance_names[];
/* The bit of a name, 0 when it is not one. */
unsigned swa_invariance_flag_by_name(const char *name);
/* "batch, pages or split" (for "expected ..." messages). */
void swa_invariance_names_text(char *buf, size_t n);
/* "batch,pages" for a set of bits ("" for none); returns the length. */
size_t swa_invariance_format(unsigned set, char *buf, size_t n);

typedef struct swa_case {
    char id[SWA_ID_MAX];       /* "<file stem>/<name>" + ":k=v,k=v" for swept axes */
    char file[SWA_PATH_MAX];   /* the case file it came from */
    char name[SWA_NAME_MAX];   /* "name" field of the file */
    int line;                  /* line of the case object in the file (for messages) */

    int num_requests;
    int *qo_len;               /* [num_requests], owned */
    int *kv_len;               /* [num_requests], owned; kv_len >= 1; prefill may have
                                * qo_len > kv_len (rows at p < 0 see no key) */

    int num_qo_heads, num_kv_heads, head_dim;
    swa_dtype dtype;
    int page_size;
    swa_layout layout;
    swa_kv_mode kv_mode;       /* prefill: paged (default) or ragged */
    bool causal;
    int window_left;           /* -1: no window; L >= 0: keys [p-L, p] */
    int window_right;          /* -1: unbounded; R >= 0: keys k <= p+R (causal: 0) */
    int chunk_size;            /* 0: off; C >= 1: chunked local attention, keys
                                * [floor(p/C)*C, p] (causal only, window_left -1) */
    double soft_cap;           /* 0: none */
    double sm_scale;           /* resolved: default 1/sqrt(head_dim) */
    unsigned backends;         /* SWA_BACKEND_* flags */
    swa_tolerance tol;
    swa_dist dist;
    uint64_t seed;
    bool cuda_graph;           /* plan for capture, capture, replay with the full batch */
    int graph_capture_requests;/* requests in the captured batch (< num_requests) */
    bool return_lse;
    /* Plan the built-in backends in their deterministic mode: a split-KV
     * chunk and query tile that depend on no other request of the batch
     * (docs/invariance.md), as sglang's deterministic inference asks. */
    bool deterministic;
    unsigned invariance;       /* SWA_INV_* self-comparisons the case asks for */
    /* Interleaved layers (num_layers 0: none).  The case file's "layers"
     * expands to one record per layer (id suffix "layer=<i>"): each record
     * carries every layer's window, window_left is layer `layer`'s.  A run
     * plans every layer over the same batch, then runs them in order
     * 0..num_layers-1 and compares layer `layer`'s output (harness/run.c). */
    int num_layers, layer;
    int layer_window_left[SWA_MAX_LAYERS];
    /* Non-empty: the case must be refused — every listed backend's plan
     * must fail with a message containing this text (e.g. "CUDA-graph"
     * for decode_aiter with cuda_graph); running it is the failure. */
    char expect_error[SWA_NAME_MAX];
    /* Non-empty for backend b (index in SWA_BACKEND_LIST): the case file
     * expects b to skip this case with a reason containing this text.  A
     * skip of a backend the case names is otherwise a failure, and an
     * expected skip that does not happen is one too (harness/run.c). */
    char expect_skip[SWA_BACKEND_COUNT][SWA_EXPECT_SKIP_MAX];
    /* Non-empty: a known failure ("xfail"): a result of a backend in
     * xfail_backends ("" every backend; ','-separated names or NS:BACKEND
     * globs) that fails is "xfailed", one that passes "xpassed"
     * (harness/xfail.h, docs/selection.md). */
    char xfail[SWA_XFAIL_REASON_MAX];
    char xfail_backends[256];
} swa_case;

typedef struct swa_case_list {
    swa_case *cases;
    int count;
} swa_case_list;

#ifdef __cplusplus
extern "C" {
#endif

void swa_case_list_free(swa_case_list *list);

/* Deep copy (the copy owns its arrays).  Returns 0, -1 on allocation failure. */
int swa_case_copy(swa_case *dst, const swa_case *src);
void swa_case_free(swa_case *c); /* frees the arrays of one case, not c itself */

/* True when id matches filter: an exact id, or an fnmatch(3) glob. */
bool swa_case_matches(const swa_case *c, const char *filter);

/* Totals used everywhere. */
int swa_case_total_qo(const swa_case *c);
int swa_case_total_kv(const swa_case *c);
int swa_case_max_kv(const swa_case *c);
/* The input distributions by swa_dist value, NULL-terminated (the loader's
 * accepted names and the writer's). */
extern const char *const swa_dist_names[];

/* The backend names in registry order, NULL-terminated. */
extern const char *const swa_backend_names[];
/* SWA_BACKEND_* flag of a name, 0 when the name is not a backend. */
unsigned swa_backend_flag_by_name(const char *name);
/* Name of a single SWA_BACKEND_* flag, NULL when flag is not one. */
const char *swa_backend_flag_name(unsigned flag);
/* The names as "\"a\", \"b\" or \"c\"" (for "expected ..." messages). */
void swa_backend_names_text(char *buf, size_t n);

static inline int swa_case_group_size(const swa_case *c) { return c->num_qo_heads / c->num_kv_heads; }

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_CASE_H */
