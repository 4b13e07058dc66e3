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
#define PATH_N sizeof ((swa_load_error *)0)->path

/* ---------------------------------------------------------------------------
 * The keys a case may hold. */

typedef enum { K_INT, K_U64, K_NUM, K_BOOL, K_ENUM, K_SPECIAL } key_kind;

typedef enum {
    F_NAME, F_DESCRIPTION, F_REQUESTS, F_NUM_QO_HEADS, F_NUM_KV_HEADS, F_HEAD_DIM, F_DTYPE,
    F_PAGE_SIZE, F_LAYOUT, F_KV_MODE, F_CAUSAL, F_WINDOW_LEFT, F_SOFT_CAP, F_SM_SCALE,
    F_BACKENDS, F_TOLERANCE, F_DATA, F_SEED, F_CUDA_GRAPH, F_GRAPH_CAPTURE_REQUESTS,
    F_RETURN_LSE, F_EXPECT_ERROR, F_COUNT
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
    bool exclusive_min;          /* K_NUM: > min instead of >= min */
    const char *hint;            /* what the key means, for "missing" messages */
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
    swa_tolerance tol;
    const char *expect_error;     /* NULL: none */
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
