/* case_internal.h — private to the case loader (harness/case_load.c reads
 * and validates case objects into sweep axes, harness/case_expand.c expands
 * them into swa_case records and names them).  Not part of the contract
 * between helpers; nothing outside harness/case_*.c includes it.
 *
 * Test: tests/test_case_load.c, tests/test_case_sweep.c. */
#ifndef SWADIFF_CASE_INTERNAL_H
#define SWADIFF_CASE_INTERNAL_H

#include "harness/case_json.h"

#define MAX_HEADS 1024
#define MAX_TOKENS (1 << 24)      /* per request, qo_len and kv_len */
#define MAX_COUNT 65536           /* repeat count of one request entry */
#define MAX_REQUESTS 65536        /* requests of one expanded case */
#define MAX_PAGE_SIZE 65536
#define NAME_LEN_MAX 100
/* The widest window a case may ask for: 2^30.  A window wider than any
 * request (kv_len <= MAX_TOKENS = 2^24) already sees every key, so nothing
 * is lost, and the bound keeps every window expression the backends, the
 * reference and explain compute in int (L + 1 for AITER's S = L + 1, L + 1
 * and L - 1 for explain's hypotheses, p - L - 1 for the mutants, kv_len - 1
 * - L) at least 2^30 away from INT_MAX / INT_MIN.  2147483647 was accepted
 * before and overflowed `window_left + 1` in backends/plan.h
 * (swa_aiter_sliding_window) and in harness/explain.c. */
#define MAX_WINDOW_LEFT (1 << 30)
/* window_right shares the bound (p + R + 1 stays inside int); a chunk size
 * is at most the longest request (a larger chunk is the causal mask). */
#define MAX_WINDOW_RIGHT MAX_WINDOW_LEFT
#define MAX_CHUNK_SIZE MAX_TOKENS
/* Scalars a fp32 kernel can hold and still be judged (docs/internals.md,
 * "Promises a run keeps"; the schema says the same).  soft_cap: 0 (none) or in
 * [1e-3, 1e4]: below, c * tanh(s / c) squashes every logit to +-c (and s / c
 * leaves fp16 range in kernels that keep it there); above, the cap never
 * binds for any score fp16/bf16 inputs produce, so the case tests nothing it
 * claims to.  sm_scale: finite, in [1e-8, 1e4]: below, every scaled score
 * rounds to the same exp in fp32 (attention becomes a plain average); above,
 * softmax becomes an argmax decided by the rounding of the largest score, and
 * scaled poison scores (+-4096 values) head for fp32's range.  Before, 1e300
 * or 1e-300 was accepted and became inf or 0 when a kernel took it as float. */
#define SOFT_CAP_MIN 1e-3
#define SOFT_CAP_MAX 1e4
#define SM_SCALE_MIN 1e-8
#define SM_SCALE_MAX 1e4
/* Loading caps (docs/internals.md, "Promises a run keeps"): expanded cases in one load
 * (a run loads every path into one list), and the bytes the loaded case
 * records take themselves (each keeps its qo_len/kv_len arrays: 100000
 * cases of 65536 requests were 51 GB from a 330-byte file). */
#define MAX_LOADED_CASES 200000
#define MAX_LOADED_RECORD_BYTES ((size_t)512 << 20)
#define PATH_N sizeof ((swa_load_error *)0)->path

/* ---------------------------------------------------------------------------
 * The keys a case may hold. */

typedef enum { K_INT, K_U64, K_NUM, K_BOOL, K_ENUM, K_SPECIAL } key_kind;

typedef enum {
    F_NAME, F_DESCRIPTION, F_REQUESTS, F_NUM_QO_HEADS, F_NUM_KV_HEADS, F_HEAD_DIM, F_DTYPE,
    F_PAGE_SIZE, F_LAYOUT, F_KV_MODE, F_CAUSAL, F_WINDOW_LEFT, F_WINDOW_RIGHT, F_ATTENTION_CHUNK_SIZE,
    F_SOFT_CAP, F_SM_SCALE,
    F_BACKENDS, F_TOLERANCE, F_DATA, F_SEED, F_CUDA_GRAPH, F_GRAPH_CAPTURE_REQUESTS,
    F_RETURN_LSE, F_EXPECT_ERROR, F_EXPECT_SKIP, F_LAYERS, F_XFAIL, F_DETERMINISTIC, F_INVARIANCE, F_COUNT
} field_id;

typedef enum { R_QO_LEN, R_KV_LEN, R_COUNT, R_FIELDS } request_field;

typedef struct key_spec {
    const char *key;
    key_kind kind;
    bool required;
    long long min, max;          /* K_INT */
    const int *choices;          /* K_INT restricted to a set (head_dim) */
    int num_choices;
    const char *const *names;    /* K_ENUM, NULL-terminated */
    bool exclusive_min;          /* K_NUM: > min instead of >= min (unused when num_max > 0) */
    const char *hint;            /* what the key means, for "missing" messages */
    double num_min, num_max;     /* K_NUM: finite and in [num_min, num_max] when num_max > 0 */
    bool zero_ok;                /* K_NUM with bounds: 0 is accepted too ("none") */
} key_spec;

extern const key_spec swa_case_keys[F_COUNT];

/* ---------------------------------------------------------------------------
 * Values and sweep axes. */

typedef struct value {
    long long i;    /* K_INT, K_BOOL (0/1), K_ENUM (index) */
    uint64_t u;     /* K_U64 */
    double d;       /* K_NUM */
    const cJSON *node;
} value;

typedef struct axis {
    char name[48];        /* "window_left", "r0.kv_len" */
    const key_spec *spec;
    int field;            /* field_id, or request_field when request >= 0 */
    int request;          /* index in "requests", -1 for case-level keys */
    bool swept;           /* given as a list: named in the id */
    char path[PATH_N];    /* JSON pointer of the key's value */
    int count;
    value *values;
} axis;

typedef struct case_state {
    const swa_json_doc *doc;
    swa_load_error *err;
    const cJSON *object;          /* the case object (position of "missing" errors) */
    int line;                     /* its line, computed once for all expansions */
    char object_path[PATH_N];
    const cJSON *present[F_COUNT];/* member node of each key present (value) */
    const cJSON *name_node;
    const char *name;
    int num_request_entries;
    char requests_path[PATH_N];   /* where "requests" was given (maybe in defaults) */
    int *request_axis;            /* [entries][R_FIELDS], -1: key absent (count) */
    axis *axes;
    int num_axes, cap_axes;
    int field_axis[F_COUNT];      /* axis of a case-level key, -1 when absent */
    unsigned backends;
    unsigned invariance;          /* "invariance": SWA_INV_* */
    swa_tolerance tol;
    const char *expect_error;     /* NULL: none */
    const cJSON *expect_skip;     /* the "expect_skip" object (NULL: none), checked against
                                   * backends once the whole case is read */
    char expect_skip_path[PATH_N];/* its JSON pointer (the case's or defaults') */
    const cJSON *xfail;           /* the "xfail" value (NULL: none), backends checked like expect_skip's */
    char xfail_path[PATH_N];
    int num_layers;               /* "layers": 0 when absent */
    int layer_windows[SWA_MAX_LAYERS];
} case_state;

void swa_case_state_init(case_state *cs, const swa_json_doc *doc, swa_load_error *err);
void swa_case_state_free(case_state *cs);

/* Reads a case object and the "defaults" it inherits (may be NULL) into
 * cs: validated values, sweep axes, the keys present.  0 or -1 (err set). */
int swa_case_read(case_state *cs, const cJSON *obj, const char *path, const cJSON *defaults,
                  const char *defaults_path);
/* Checks a "defaults" object on its own (unknown keys, bad values). */
int swa_case_check_defaults(const swa_json_doc *doc, swa_load_error *err, const cJSON *defaults, const char *path);

/* "got ..." text for a value in messages: the raw number, the quoted
 * string, or what kind of value it is. */
void swa_case_describe_value(const swa_json_doc *doc, const cJSON *v, char *buf, size_t n);
/* Fails with "unknown key", suggesting a close match from allowed. */
int swa_case_fail_unknown_key(const swa_json_doc *doc, swa_load_error *err, const cJSON *member, const char *path,
                              const char *const *allowed, const char *extra);

#endif /* SWADIFF_CASE_INTERNAL_H */
