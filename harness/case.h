/* case.h — one expanded test case, and loading case files (DESIGN.md §8).
 *
 * A case file (cases/NAME.json, schema in cases/schema/case.schema.json) may
 * give any scalar as a list; the loader expands the cartesian product into
 * concrete swa_case records, each with a stable id that `--filter` accepts.
 *
 * Ownership: swa_case_list_load* allocate; swa_case_list_free releases the
 * list and every case in it (including the per-request arrays). */
#ifndef SWADIFF_CASE_H
#define SWADIFF_CASE_H

#include "common.h"

#define SWA_ID_MAX 256
#define SWA_PATH_MAX 1024
#define SWA_NAME_MAX 128

/* Backends a case may ask for (bit flags; names in backends/backend.h). */
enum {
    SWA_BACKEND_PREFILL = 1u << 0,
    SWA_BACKEND_DECODE_FA2 = 1u << 1,
    SWA_BACKEND_DECODE_AITER = 1u << 2,
    SWA_BACKEND_DECODE_AUTO = 1u << 3, /* resolves to fa2 or aiter at plan time */
};

typedef enum {
    SWA_TOL_DEFAULT = 0,  /* per-dtype defaults (README) */
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

typedef struct swa_case {
    char id[SWA_ID_MAX];       /* "<file stem>/<name>" + ":k=v,k=v" for swept axes */
    char file[SWA_PATH_MAX];   /* the case file it came from */
    char name[SWA_NAME_MAX];   /* "name" field of the file */
    int line;                  /* line of the case object in the file (for messages) */

    int num_requests;
    int *qo_len;               /* [num_requests], owned */
    int *kv_len;               /* [num_requests], owned; kv_len >= qo_len */

    int num_qo_heads, num_kv_heads, head_dim;
    swa_dtype dtype;
    int page_size;
    swa_layout layout;
    swa_kv_mode kv_mode;       /* prefill: paged (default) or ragged */
    bool causal;
    int window_left;           /* -1: no window; L >= 0: keys [p-L, p] */
    double soft_cap;           /* 0: none */
    double sm_scale;           /* resolved: default 1/sqrt(head_dim) */
    unsigned backends;         /* SWA_BACKEND_* flags */
    swa_tolerance tol;
    swa_dist dist;
    uint64_t seed;
    bool cuda_graph;           /* plan for capture, capture, replay with the full batch */
    int graph_capture_requests;/* requests in the captured batch (< num_requests) */
    bool return_lse;
    /* Non-empty: the case must be refused — every listed backend's plan
     * must fail with a message containing this text (e.g. "CUDA-graph"
     * for decode_aiter with cuda_graph); running it is the failure. */
    char expect_error[SWA_NAME_MAX];
} swa_case;

typedef struct swa_case_list {
    swa_case *cases;
    int count;
} swa_case_list;

/* A located load error: "file:line:column: /json/path: what was expected". */
typedef struct swa_load_error {
    char file[SWA_PATH_MAX];
    int line, column;
    char path[256];            /* JSON pointer, e.g. /requests/0/kv_len */
    char message[512];
} swa_load_error;

#ifdef __cplusplus
extern "C" {
#endif

/* Formats err as "file:line:column: /path: message" into buf. */
void swa_load_error_format(const swa_load_error *err, char *buf, size_t n);

/* Parses one case file held in memory.  Returns 0 and appends the expanded
 * cases to list, or -1 with err filled (list unchanged).  max_cases caps the
 * expansion (0: the default cap, SWA_MAX_EXPANDED_CASES). */
#define SWA_MAX_EXPANDED_CASES 100000
int swa_case_parse(const char *file_name, const char *text, size_t len,
                   swa_case_list *list, swa_load_error *err);

/* Loads a file, or every *.json under a folder (recursively, sorted by path,
 * skipping folders named "schema").  Same return convention. */
int swa_case_load_path(const char *path, swa_case_list *list, swa_load_error *err);

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
static inline int swa_case_group_size(const swa_case *c) { return c->num_qo_heads / c->num_kv_heads; }

/* Writes one expanded case back as a standalone case file (used by shrink). */
int swa_case_write_json(const swa_case *c, const char *path, swa_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_CASE_H */
