/* external.h — backends that live outside swadiff: C plug-ins
 * (include/swadiff/plugin.h, `--plugin PATH.so`) and out-of-process
 * adapters (docs/adapter-protocol.md, `--adapter NAME[=COMMAND]`).
 *
 * Each external backend is an swa_backend named "NS:BACKEND" with flag 0:
 * it runs every case the run selects (not only the ones whose "backends"
 * names it), except cases that pin a refusal of a built-in backend
 * (expect_error).  Registration happens in the harness process and learns
 * the backend names from a probe: a forked child that loads the plug-in,
 * or one handshake with the adapter.  A plug-in that cannot be loaded, or an
 * adapter that fails its handshake, is registered as one backend "NS:*"
 * whose every result is an error naming the cause.  The plug-in itself is
 * loaded, and the adapter started, inside the isolated worker at its first
 * use, so a crash or a hang costs one (case, backend) result.
 *
 * Defined in: external.c (registry, problem staging), plugin.c, adapter.c.
 * Tested by tests/test_external.c. */
#ifndef SWADIFF_EXTERNAL_H
#define SWADIFF_EXTERNAL_H

#include "backends/backend.h"

#define SWA_EXTERNAL_MAX 64

/* The tile shape an external backend may declare (plug-in ABI v2
 * swadiff_plugin_backend.tiles, or "tiles" in an adapter's hello), used by
 * `explain` to narrow its tile-granular hypotheses to the kernel's own.
 * q_rows: query-tile heights; with gqa_packed 1 they count packed rows
 * (query row x head of a group, FlashInfer's CTA_TILE_Q), with 0 rows of
 * one head (FlashAttention), -1 undeclared (both).  kv_keys: KV-tile widths,
 * to which a per-tile KV start is aligned.  A count of 0: not declared. */
#define SWA_TILE_SHAPES_MAX 4
typedef struct swa_tile_shape {
    int num_q_rows, q_rows[SWA_TILE_SHAPES_MAX];
    int num_kv_keys, kv_keys[SWA_TILE_SHAPES_MAX];
    int gqa_packed;
} swa_tile_shape;

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the backends of the plug-in at path.  Returns SWA_OK (also when
 * the plug-in is broken: its results will say why), or SWA_ERR_INVALID when
 * no more backends fit.  A one-line note goes to *note (may be NULL). */
swa_status swa_external_add_plugin(const char *path, char *note, size_t note_size, swa_error *err);

/* Registers the backends of an adapter: command is run with /bin/sh -c. */
swa_status swa_external_add_adapter(const char *name, const char *command, char *note, size_t note_size,
                                    swa_error *err);

/* Looks NAME up in a registry file ({"adapters": {NAME: {"command": ...}}})
 * and registers it.  Errors name the file and what was wrong. */
swa_status swa_external_add_adapter_from_registry(const char *registry_path, const char *name, char *note,
                                                  size_t note_size, swa_error *err);

/* The registered external backends, in registration order. */
const swa_backend *const *swa_external_backends(int *count);
/* True when b is one of them. */
bool swa_external_is(const swa_backend *b);
/* The tile shape the registered external backend `name` (NS:BACKEND)
 * declared: true and *out filled, or false (unknown name, or nothing
 * declared; *out zeroed). */
bool swa_external_tile_shape(const char *name, swa_tile_shape *out);
/* The command-line options that register them all again ("--plugin P
 * --adapter N=CMD ..."), shell-quoted, for reproduce commands. */
void swa_external_options(char *buf, size_t n);

/* The marshalling controls (harness/controls.c): registers the built-in
 * control plug-in (swadiff_control:exact, swadiff_control:window_short) when
 * plugin, and the control adapters swadiff_control_numpy:all_forms and
 * swadiff_control_numpy_short:window_short (the shipped numpy adapters) when
 * adapter.  Idempotent.  note says what could not be registered, "" else. */
swa_status swa_external_add_controls(bool plugin, bool adapter, char *note, size_t note_size, swa_error *err);
/* Ends the adapter processes this process started (registrations stay; a
 * later run starts them again). */
void swa_external_stop_adapters(void);
/* True for a backend registered by swa_external_add_controls. */
bool swa_external_is_control(const char *full_name);
/* 0: a plug-in's backend, 1: an adapter's, -1: not a registered external one. */
int swa_external_kind(const char *full_name);

/* Seconds an adapter may take to answer one message (default 600). */
void swa_external_set_reply_timeout(double seconds);

/* Ends the adapters this process started and forgets every registration
 * (tests; a worker's adapters also end with it). */
void swa_external_reset(void);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_EXTERNAL_H */
