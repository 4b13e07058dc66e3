/* external_internal.h — what external.c, plugin.c and adapter.c share: the
 * record of one registered external backend and of its provider (a plug-in
 * file or an adapter command), and the plan state.  Not for other code. */
#ifndef SWADIFF_EXTERNAL_INTERNAL_H
#define SWADIFF_EXTERNAL_INTERNAL_H

#include "backends/external/external.h"
#include "include/swadiff/plugin.h"

typedef enum { EXT_PLUGIN = 0, EXT_ADAPTER = 1 } ext_kind;

/* external.c: names of plug-ins, adapters and their backends are 1 to
 * SWA_EXT_NAME_MAX of [A-Za-z0-9_.-] (include/swadiff/plugin.h) */
#define SWA_EXT_NAME_MAX 63
#define SWA_EXT_NAME_SHOWN 40 /* bytes of a bad name an error quotes */
/* NULL when name is one; else why not in buf, starting with what and the
 * name quoted (escaped, cut with "..." and its length) */
const char *swa_external_bad_name(const char *what, const char *name, char *buf, size_t n);
/* s in double quotes, bytes outside printable ASCII as \xNN, cut after
 * SWA_EXT_NAME_SHOWN bytes with its length; returns the length it needed */
size_t swa_external_quote(const char *s, char *buf, size_t n);

typedef struct ext_provider {
    ext_kind kind;
    char name[SWA_EXT_NAME_MAX + 2]; /* the NS of NS:BACKEND (one over: a longer one is refused, not cut) */
    char location[1024];      /* plug-in path, or adapter command */
} ext_provider;

typedef struct ext_backend {
    swa_backend b;            /* first: o->backend points here */
    int provider;             /* index into the providers */
    char full_name[160];      /* NS:BACKEND */
    char backend_name[96];    /* BACKEND, as the provider names it */
    char description[256];
    char load_error[768];     /* non-empty: every result is this error */
    int memory;               /* plug-ins: swadiff_memory */
    bool prefill, decode;     /* adapters: which cases it takes */
    swa_tile_shape tiles;     /* declared tile shape (counts 0: none) */
    unsigned traits;          /* SWA_TRAIT_* declared (plug-in ABI 3 "invariance", adapter hello) */
} ext_backend;

/* lent_inputs.c: checksums of the case's host inputs handed to plug-in
 * code (q, k_cache, v_cache, k, v, then the index arrays) */
#define SWA_LENT_MAX 12
typedef struct swa_lent_sums {
    uint64_t sum[SWA_LENT_MAX];
    bool tensors; /* the tensors too (host memory); else the index arrays only */
} swa_lent_sums;
void swa_lent_take(const swa_inputs *in, bool tensors, swa_lent_sums *s);
/* false: nothing changed since swa_lent_take.  true: found says which
 * inputs plug-in code wrote, and they were restored (from a fresh
 * generation of c's inputs) */
bool swa_lent_check(const swa_case *c, const swa_inputs *in, const swa_lent_sums *s, char *found, size_t n);

/* The state behind a plan: the problem in plug-in form, pointing into the
 * case's host inputs. */
typedef struct ext_plan {
    const ext_backend *e;
    const ext_provider *prov; /* e's provider */
    const swa_case *c;
    const swa_inputs *in;
    const swa_device_ops *device; /* the run's device (device-memory plug-ins run through it) */
    swadiff_problem problem;
    int32_t *qo_len;          /* [B] */
    void *provider_plan;      /* a plug-in's own plan */
    bool planned;             /* device memory: supports() and plan() ran (at the first run) */
    double lse_base;          /* of what run wrote */
    swa_lent_sums lent;       /* plug-ins: the host inputs before plug-in code saw them */
} ext_plan;

/* marshal_fault.c: a deliberate staging fault, for testing the controls only
 * (tests/test_controls.c): $SWADIFF_TEST_MARSHAL_FAULT "window_as_key_count"
 * hands plug-ins and adapters L + 1 for a window L >= 0 (a key count, the
 * mistake a review once made), "layout_swapped" declares the other page
 * layout.  Unset or empty: none; another value: none, said once on stderr. */
typedef enum { SWA_FAULT_NONE = 0, SWA_FAULT_WINDOW_AS_KEY_COUNT, SWA_FAULT_LAYOUT_SWAPPED } swa_marshal_fault_kind;
swa_marshal_fault_kind swa_marshal_fault(void);
/* c's window and layout as the staging hands them (the fault applied) */
int swa_marshal_window_left(const swa_case *c);
swa_layout swa_marshal_layout(swa_layout layout);

/* control.c: the marshalling controls' plug-in, built in (harness/controls.c
 * runs it).  Registered as a plug-in whose location is SWA_CONTROL_LOCATION
 * (plugin.c loads it from here instead of dlopen). */
#define SWA_CONTROL_PLUGIN_NAME "swadiff_control"
#define SWA_CONTROL_LOCATION "(built in: swadiff's marshalling controls)"
const swadiff_plugin *swa_control_plugin(void);

/* adapter.c: the folder holding swadiff_adapter.py (and the shipped
 * adapters), "" when none is found */
void swa_adapter_helper_dir(char *buf, size_t n);

/* tile_shape.c: NULL, or what is wrong with a declared tile shape (in buf) */
const char *swa_tile_shape_check(const swa_tile_shape *t, char *buf, size_t n);

/* plugin.c */
swa_status swa_plugin_probe(const char *path, ext_provider *prov, ext_backend *out, int max, int *count,
                            char *why, size_t n);
swa_status swa_plugin_plan(ext_plan *p, swa_error *err);
swa_status swa_plugin_run(ext_plan *p, void *dev_inputs, const swa_out_args *o, bool write_lse, swa_error *err);
/* NULL when a plug-in backend declaring `memory` can run on dev; else why not */
const char *swa_plugin_memory_unsupported(int memory, const swa_device_ops *dev, char *buf, size_t n);
void swa_plugin_plan_free(ext_plan *p);

/* adapter.c */
swa_status swa_adapter_probe(const ext_provider *prov, ext_backend *out, int max, int *count, char *why,
                             size_t n);
swa_status swa_adapter_run(ext_plan *p, const swa_out_args *o, bool write_lse, swa_error *err);
void swa_adapter_reset(void);
extern double swa_adapter_reply_timeout;

#endif /* SWADIFF_EXTERNAL_INTERNAL_H */
