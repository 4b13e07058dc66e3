/* run.c — one (case, backend) through plan, run and comparison.
 *
 * The order of checks follows ggml's test-backend-ops: the guard bytes
 * around out/lse, then every element written, then NaN/Inf, then the
 * numeric distance (harness/compare.c).  A failure anywhere becomes the
 * result's outcome; nothing here aborts the run.
 *
 * Tested by tests/test_detect.c (one case through swa_run_one), end to end
 * by tests/test_cli.c and ci/run-harness.sh. */
#include "harness/run.h"
#include "harness/invariance.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backends/launch_choice.h"
#include "backends/plan_decisions.h"
#include "reference/reference.h"
#include "backends/layer_plans.h"
#include "harness/dump.h"

#define SWA_GUARD_BYTES 4096
#define SWA_GUARD_PATTERN 0xA5
#define SWA_POISON_BYTE 0xFF /* all bits set: NaN in fp16, bf16 and fp32 */

/* Quotes s for a POSIX shell when it holds anything but safe characters. */
static void shell_quote(const char *s, char *buf, size_t n)
{
    bool safe = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("/._-:=,+@%", *p)))
            safe = false;
    if (safe) {
        snprintf(buf, n, "%s", s);
        return;
    }
    size_t j = 0;
    if (j + 1 < n) buf[j++] = '\'';
    for (const char *p = s; *p && j + 5 < n; p++) {
        if (*p == '\'') {
            memcpy(buf + j, "'\\''", 4);
            j += 4;
        } else {
            buf[j++] = *p;
        }
    }
    if (j + 1 < n) buf[j++] = '\'';
    buf[j < n ? j : n - 1] = '\0';
}

void swa_reproduce_command(const swa_run_config *cfg, const swa_case *c, const char *backend,
                           char *out, size_t out_n)
{
    /* built whole, then kept only if it fits: a cut command would rerun
     * another path, or nothing ("not found") */
    char buf[16384];
    const size_t n = sizeof buf;
    char file[4 * SWA_PATH_MAX + 4], id[4 * SWA_ID_MAX + 4]; /* each ' quotes as '\'' */
    shell_quote(c->file, file, sizeof file);
    shell_quote(c->id, id, sizeof id);
    int k = snprintf(buf, n, "%s run %s --filter %s --backend %s --device %s",
                     cfg->argv0 ? cfg->argv0 : "swadiff", file, id, backend,
                     cfg->device ? cfg->device->name : "host");
    if (cfg->mutant != SWA_MUTANT_NONE && k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, " --mutant %s", swa_mutant_get(cfg->mutant)->name);
    if (cfg->repeat > 1 && k > 0 && (size_t)k < n) /* a nondeterministic result needs its repeats to show */
        k += snprintf(buf + k, n - (size_t)k, " --repeat %d", cfg->repeat);
    if (cfg->invariance && k > 0 && (size_t)k < n) {
        char names[64];
        swa_invariance_format(cfg->invariance, names, sizeof names);
        k += snprintf(buf + k, n - (size_t)k, " --invariance %s", names);
    }
    if (cfg->deterministic && k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, " --deterministic");
    const swa_backend *b = swa_backend_by_name(backend);
    if (!b && k > 0 && (size_t)k < n) /* an external backend: register its provider again */
        swa_external_options(buf + k, n - (size_t)k);
    size_t len = strlen(buf);
    if (len < out_n && len < n - 1)
        memcpy(out, buf, len + 1);
    else
        snprintf(out, out_n, "(not recorded: the command that reruns this case alone is %s%zu bytes, more than the "
                 "%zu a result keeps; run its case file with --filter and its id)", len >= n - 1 ? "over " : "", len,
                 out_n - 1);
}

/* Host memory a case may take: SWADIFF_MAX_HOST_BYTES when set (tests,
 * shared CI machines), else 80% of physical memory.  A malformed value is
 * refused: loading the cases already refused it (case_expand.c, exit 2), so
 * only a caller that builds its cases in memory sees it here, as the case's
 * error. */
static swa_status host_memory_budget(size_t *budget, swa_error *err)
{
    char why[SWA_MSG_MAX];
    size_t v;
    if (swa_env_bytes("SWADIFF_MAX_HOST_BYTES", &v, why, sizeof why))
        return swa_error_set(err, SWA_ERR_INVALID, "%s", why);
    *budget = v > 0 ? v : swa_host_memory_default();
    return SWA_OK;
}

/* Device memory a case may take: the device's free memory (less 5% for the
 * driver's own use and the plans' scratch), or SWADIFF_MAX_DEVICE_BYTES
 * when that is set and smaller.  Devices without memory of their own (the
 * host emulation) are checked only against SWADIFF_MAX_DEVICE_BYTES. */
static swa_status device_memory_check(const swa_case *c, const swa_device_ops *dev, swa_error *err)
{
    size_t need = swa_case_device_bytes(c, SWA_GUARD_BYTES);
    size_t budget = SIZE_MAX, free_b = 0, total_b = 0;
    const char *source = NULL;
    if (dev->memory && dev->memory(&free_b, &total_b)) {
        budget = (size_t)((double)free_b * 0.95);
        source = "free on the device";
    }
    size_t cap;
    char why[SWA_MSG_MAX];
    if (swa_env_bytes("SWADIFF_MAX_DEVICE_BYTES", &cap, why, sizeof why)) /* as host_memory_budget */
        return swa_error_set(err, SWA_ERR_INVALID, "%s", why);
    if (cap > 0 && cap < budget) {
        budget = cap;
        source = "allowed by SWADIFF_MAX_DEVICE_BYTES";
    }
    if (need <= budget)
        return SWA_OK;
    return swa_error_set(err, SWA_ERR_NOMEM,
                         "case %s needs about %.3f GiB (%zu bytes) of device memory on %s for its inputs and "
                         "outputs, but %.3f GiB (%zu bytes) are %s: split the case, run fewer jobs per device, "
                         "or use a larger device",
                         c->id, need / 1073741824.0, need, dev->name, budget / 1073741824.0, budget, source);
}

/* Inputs are the slowest stage for large cases (Irwin–Hall needs twelve
 * draws a value), and a sweep over windows, backends' flags or tolerances
 * regenerates the same tensors case after case.  The last inputs made are
 * kept and lent to the next case when everything that decides their values
 * is equal: shapes, lengths, dtype, paging, seed, and a distribution that
 * does not depend on the window (normal, uniform).  Lent inputs are never
 * written (backends and the reference take them const). */
static struct {
    bool valid;
    int users;
    swa_case key;
    swa_inputs in;
} input_cache;

bool swa_case_same_inputs(const swa_case *a, const swa_case *b)
{
    if (!(a->dist == SWA_DIST_NORMAL || a->dist == SWA_DIST_UNIFORM) || a->dist != b->dist)
        return false;
    if (a->num_requests != b->num_requests || a->num_qo_heads != b->num_qo_heads ||
        a->num_kv_heads != b->num_kv_heads || a->head_dim != b->head_dim || a->dtype != b->dtype ||
        a->page_size != b->page_size || a->layout != b->layout || a->seed != b->seed)
        return false;
    for (int r = 0; r < a->num_requests; r++)
        if (a->qo_len[r] != b->qo_len[r] || a->kv_len[r] != b->kv_len[r])
            return false;
    return true;
}

static swa_status inputs_for(swa_case_ctx *ctx, const swa_case *c, swa_error *err)
{
    if (input_cache.valid && swa_case_same_inputs(&input_cache.key, c)) {
        ctx->in = input_cache.in;
        ctx->inputs_borrowed = true;
        input_cache.users++;
        return SWA_OK;
    }
    swa_status st = swa_inputs_create(c, &ctx->in, err);
    if (st != SWA_OK || input_cache.users > 0 || !(c->dist == SWA_DIST_NORMAL || c->dist == SWA_DIST_UNIFORM))
        return st;
    /* keep these for the next case: the cache owns them, this case borrows */
    if (input_cache.valid) {
        swa_inputs_free(&input_cache.in);
        swa_case_free(&input_cache.key);
        input_cache.valid = false;
    }
    if (swa_case_copy(&input_cache.key, c) != 0)
        return SWA_OK; /* no memory to cache: the case keeps its own inputs */
    input_cache.in = ctx->in;
    input_cache.valid = true;
    input_cache.users = 1;
    ctx->inputs_borrowed = true;
    return SWA_OK;
}

swa_status swa_case_ctx_init(swa_case_ctx *ctx, const swa_case *c, const swa_device_ops *dev,
                             swa_error *err)
{
    return swa_case_ctx_init_dump(ctx, c, dev, NULL, err);
}

swa_status swa_case_ctx_init_dump(swa_case_ctx *ctx, const swa_case *c, const swa_device_ops *dev,
                                  const char *dump_dir, swa_error *err)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->c = c;
    ctx->device = dev;
    /* refuse before allocating: a case that cannot fit must not take the
     * machine (or the CI runner) down with it */
    size_t need = swa_case_host_bytes(c), budget = 0;
    swa_status st = host_memory_budget(&budget, err);
    if (st != SWA_OK)
        return st;
    if (need > budget)
        return swa_error_set(err, SWA_ERR_NOMEM,
                             "case %s needs about %.2f GiB of host memory (inputs, paged pool, references, "
                             "outputs) but %.2f GiB are available to swadiff: split the case or run it on a "
                             "larger machine", c->id, need / 1073741824.0, budget / 1073741824.0);
    /* ulimit -v: the case's data and the reference's BLAS buffers (once per
     * process: a buffer mapped for an earlier case is counted in what is
     * mapped) must fit in what the limit leaves; OpenBLAS retries a buffer
     * it cannot map for ever, so this is an error now or a hang later */
    static bool blas_mapped;
    size_t as_limit, as_left = swa_address_space_left(&as_limit);
    size_t blas = blas_mapped ? 0 : SWA_BLAS_THREAD_BYTES; /* more threads only where they fit (swa_blas_threads_cap) */
    if (as_left != SIZE_MAX && need + blas > as_left)
        return swa_error_set(err, SWA_ERR_NOMEM,
                             "case %s needs about %.0f MiB of address space (%.0f MiB of data, %.0f MiB for the "
                             "reference's BLAS buffers) but the address-space limit (ulimit -v, RLIMIT_AS) of %.0f "
                             "MiB leaves %.0f MiB: raise ulimit -v by at least %.0f MiB, or remove it",
                             c->id, (need + blas) / 1048576.0, need / 1048576.0, blas / 1048576.0,
                             as_limit / 1048576.0, as_left / 1048576.0, (need + blas - as_left) / 1048576.0 + 1);
    double t0 = swa_now();
    st = inputs_for(ctx, c, err);
    if (st != SWA_OK)
        return st;
    ctx->t_data = swa_now() - t0;
    t0 = swa_now();
    size_t n_out = (size_t)ctx->in.total_qo * c->num_qo_heads * c->head_dim;
    size_t n_lse = (size_t)ctx->in.total_qo * c->num_qo_heads;
    ctx->ref_out = malloc(n_out * sizeof(double));
    ctx->ref_lse = malloc(n_lse * sizeof(double));
    if (!ctx->ref_out || !ctx->ref_lse) {
        swa_case_ctx_free(ctx);
        return swa_error_set(err, SWA_ERR_NOMEM, "out of host memory for the reference (%zu elements)", n_out);
    }
    st = swa_reference(c, &ctx->in, NULL, ctx->ref_out, ctx->ref_lse, err);
    if (st != SWA_OK) {
        swa_case_ctx_free(ctx);
        return st;
    }
    blas_mapped = true;
    if (c->tol.mode == SWA_TOL_BASELINE) {
        ctx->lowp_out = malloc(n_out * sizeof(float));
        ctx->lowp_lse = malloc(n_lse * sizeof(float));
        if (!ctx->lowp_out || !ctx->lowp_lse) {
            swa_case_ctx_free(ctx);
            return swa_error_set(err, SWA_ERR_NOMEM, "out of host memory for the low-precision reference");
        }
        st = swa_reference_lowp(c, &ctx->in, ctx->lowp_out, ctx->lowp_lse, err);
        if (st != SWA_OK) {
            swa_case_ctx_free(ctx);
            return st;
        }
    }
    if (dump_dir) {
        swa_error derr = {0};
        if (swa_dump_case(dump_dir, c, &ctx->in, ctx->ref_out, ctx->ref_lse, &derr) != SWA_OK) {
            /* each of the case's results says so (dump_failed) */
            snprintf(ctx->dump_error, sizeof ctx->dump_error, "%s", derr.message);
            fprintf(stderr, "swadiff: --dump for %s: %s\n", c->id, derr.message);
        }
    }
    ctx->t_reference = swa_now() - t0;
    t0 = swa_now();
    if ((st = device_memory_check(c, dev, err)) != SWA_OK) {
        swa_case_ctx_free(ctx);
        return st;
    }
    st = dev->upload(&ctx->in, &ctx->dev_inputs, err);
    if (st != SWA_OK) {
        swa_case_ctx_free(ctx);
        return st;
    }
    ctx->t_data += swa_now() - t0; /* the upload counts as data */
    ctx->ready = true;
    return SWA_OK;
}

void swa_case_ctx_free(swa_case_ctx *ctx)
{
    if (ctx->dev_inputs && ctx->device)
        ctx->device->release(ctx->dev_inputs);
    ctx->dev_inputs = NULL;
    free(ctx->ref_out);
    free(ctx->ref_lse);
    free(ctx->lowp_out);
    free(ctx->lowp_lse);
    ctx->ref_out = ctx->ref_lse = NULL;
    ctx->lowp_out = ctx->lowp_lse = NULL;
    if (ctx->inputs_borrowed) {
        if (input_cache.users > 0)
            input_cache.users--;
        memset(&ctx->in, 0, sizeof ctx->in);
        ctx->inputs_borrowed = false;
    } else {
        swa_inputs_free(&ctx->in);
    }
    ctx->ready = false;
}

typedef struct warn_sink {
    char *buf;
    size_t n;
} warn_sink;

static void collect_warning(void *p, const char *backend, const char *message)
{
    warn_sink *w = p;
    size_t len = strlen(w->buf);
    if (len + 4 < w->n)
        snprintf(w->buf + len, w->n - len, "%s%s: %s", len ? "; " : "", backend, message);
}

/* Allocates guard + size + guard bytes: guards set to the pattern, the
 * interior poisoned. */
static uint8_t *guarded_alloc(size_t size)
{
    uint8_t *p = malloc(size + 2 * SWA_GUARD_BYTES);
    if (!p)
        return NULL;
    memset(p, SWA_GUARD_PATTERN, SWA_GUARD_BYTES);
    memset(p + SWA_GUARD_BYTES, SWA_POISON_BYTE, size);
    memset(p + SWA_GUARD_BYTES + size, SWA_GUARD_PATTERN, SWA_GUARD_BYTES);
    return p;
}

swa_run_config swa_config_for_case(const swa_run_config *cfg, const swa_case *c)
{
    swa_run_config local = *cfg;
    if (cfg->mutant_only && fnmatch(cfg->mutant_only, c->id, 0) != 0)
        local.mutant = SWA_MUTANT_NONE;
    return local;
}

void swa_result_init(const swa_run_config *cfg_in, const swa_case *c, const char *backend, swa_result *r)
{
    swa_run_config cfg = swa_config_for_case(cfg_in, c);
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", c->id);
    snprintf(r->file, sizeof r->file, "%s", c->file);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    snprintf(r->device, sizeof r->device, "%s", cfg.device->name);
    snprintf(r->mutant, sizeof r->mutant, "%s",
             cfg.mutant == SWA_MUTANT_NONE ? "" : swa_mutant_get(cfg.mutant)->name);
    r->dtype = c->dtype;
    r->tol = swa_tolerance_resolve(c);
    r->num_requests = c->num_requests;
    r->total_qo = swa_case_total_qo(c);
    r->num_qo_heads = c->num_qo_heads;
    r->num_kv_heads = c->num_kv_heads;
    r->head_dim = c->head_dim;
    r->window_left = c->window_left;
    r->window_right = c->window_right;
    r->chunk_size = c->chunk_size;
    r->causal = c->causal;
    r->repeat = cfg.repeat > 1 ? cfg.repeat : 1;
    swa_reproduce_command(&cfg, c, backend, r->reproduce, sizeof r->reproduce);
}


/* One execution of a backend on a prepared case: its plan (every layer's
 * plan for an interleaved-layer case) and a run into freshly poisoned,
 * guarded outputs.  Run 1 and every --repeat run go through here, so the
 * repeats are the same plan-and-run a serving engine does step after step. */
typedef struct swa_exec {
    void *plan;                  /* the compared layer's plan (owned by layers when num_layers > 0) */
    swa_layer_plans layers;
    uint8_t *out_g, *lse_g;      /* guarded outputs */
    uint8_t *other_out, *other_lse; /* the other layers' outputs */
    swa_out_args oa;
} swa_exec;

static void exec_free(const swa_case *c, const swa_backend *b, swa_exec *x)
{
    if (c->num_layers > 0)
        swa_layer_plans_free(b, &x->layers);
    else if (x->plan)
        b->free(x->plan);
    free(x->out_g);
    free(x->lse_g);
    free(x->other_out);
    free(x->other_lse);
    memset(x, 0, sizeof *x);
}

static swa_status exec_plan(swa_case_ctx *ctx, const swa_backend *b, const swa_plan_opts *po, swa_exec *x,
                            swa_error *err)
{
    const swa_case *c = ctx->c;
    if (c->num_layers == 0)
        return b->plan(c, &ctx->in, po, &x->plan, err);
    /* interleaved layers: plan every layer, run them all below */
    swa_status st = swa_layer_plans_build(b, c, &ctx->in, po, &x->layers, err);
    if (st == SWA_OK)
        x->plan = x->layers.plan[c->layer];
    return st;
}

static swa_status exec_run(swa_case_ctx *ctx, const swa_backend *b, const swa_run_opts *ro, size_t out_bytes,
                           size_t lse_bytes, swa_exec *x, swa_error *err)
{
    const swa_case *c = ctx->c;
    x->out_g = guarded_alloc(out_bytes);
    x->lse_g = guarded_alloc(lse_bytes);
    if (!x->out_g || !x->lse_g)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of host memory for the output buffers (%zu bytes)", out_bytes);
    x->oa = (swa_out_args){
        .out = x->out_g + SWA_GUARD_BYTES,
        .lse = ro->return_lse ? (float *)(x->lse_g + SWA_GUARD_BYTES) : NULL,
        .out_bytes = out_bytes,
        .lse_bytes = lse_bytes,
        .guard_bytes = SWA_GUARD_BYTES,
        .guard_pattern = SWA_GUARD_PATTERN,
    };
    if (c->num_layers == 0)
        return b->run(x->plan, ctx->dev_inputs, ro, &x->oa, err);
    /* every layer in model order over the same batch, as a forward pass
     * does; this record's layer writes oa, the others a scratch output */
    x->other_out = guarded_alloc(out_bytes);
    x->other_lse = guarded_alloc(lse_bytes);
    if (!x->other_out || !x->other_lse)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of host memory for the other layers' outputs");
    swa_out_args other = x->oa;
    other.out = x->other_out + SWA_GUARD_BYTES;
    other.lse = x->oa.lse ? (float *)(x->other_lse + SWA_GUARD_BYTES) : NULL;
    swa_status st = SWA_OK;
    for (int l = 0; l < c->num_layers && st == SWA_OK; l++) {
        swa_run_opts lro = *ro;
        lro.window_left = c->layer_window_left[l];
        st = b->run(x->layers.plan[l], ctx->dev_inputs, &lro, l == c->layer ? &x->oa : &other, err);
        if (st != SWA_OK) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            swa_error_set(err, st, "layer %d (window_left %d): %s", l, c->layer_window_left[l], why);
        }
    }
    return st;
}

/* One run of b on transformed case ic (its own upload, plan and run), added
 * to rec against run 1's outputs x. */
static swa_status invariance_run_one(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b,
                                     const swa_plan_opts *po, const swa_run_opts *ro, const swa_exec *x,
                                     swa_inv_case *ic, const swa_result *r, swa_inv_record *rec, swa_error *err)
{
    swa_case_ctx d = *ctx;
    d.c = &ic->c;
    d.in = ic->in;
    d.dev_inputs = NULL;
    swa_status st = device_memory_check(&ic->c, cfg->device, err);
    if (st == SWA_OK)
        st = cfg->device->upload(&ic->in, &d.dev_inputs, err);
    if (st != SWA_OK)
        return st;
    swa_plan_opts tpo = *po;
    tpo.split = ic->split;
    size_t out_bytes = (size_t)ic->in.total_qo * ic->c.num_qo_heads * ic->c.head_dim * swa_dtype_size(ic->c.dtype);
    size_t lse_bytes = (size_t)ic->in.total_qo * ic->c.num_qo_heads * sizeof(float);
    swa_exec y = {0};
    st = exec_plan(&d, b, &tpo, &y, err);
    if (st == SWA_OK)
        st = exec_run(&d, b, ro, out_bytes, lse_bytes, &y, err);
    if (st == SWA_OK)
        swa_invariance_compare(rec, ctx->c, &ctx->in, ic, x->out_g + SWA_GUARD_BYTES,
                               ro->return_lse ? (const float *)(x->lse_g + SWA_GUARD_BYTES) : NULL,
                               y.out_g + SWA_GUARD_BYTES,
                               ro->return_lse ? (const float *)(y.lse_g + SWA_GUARD_BYTES) : NULL, r->cmp.atol,
                               r->cmp.rtol, ctx->ref_out);
    exec_free(&ic->c, b, &y);
    cfg->device->release(d.dev_inputs);
    return st;
}

/* The invariance checks the case asks for (harness/invariance.h), after
 * run 1 produced outputs x; then the judgement on r. */
static void run_invariance(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b,
                           const swa_plan_opts *po, const swa_run_opts *ro, const swa_exec *x, swa_result *r)
{
    const swa_case *c = ctx->c;
    if (!c->invariance)
        return;
    swa_iv_kind kinds[SWA_INV_RECORDS];
    r->num_invariance = swa_invariance_records(c, c->invariance, r->traits, r->invariance, kinds);
    for (int k = 0; k < r->num_invariance; k++) {
        swa_inv_record *rec = &r->invariance[k];
        int n = rec->state == SWA_INV_SKIPPED ? 0 : swa_invariance_count(c, kinds[k]);
        for (int j = 0; j < n && rec->state != SWA_INV_SKIPPED && rec->state != SWA_INV_ERROR; j++) {
            swa_inv_case ic;
            swa_error err = {0};
            swa_status st = swa_invariance_build(c, &ctx->in, kinds[k], j, b, cfg->device, &ic, &err);
            if (st == SWA_OK) { /* a case b takes (swa_invariance_build asked it) */
                st = invariance_run_one(cfg, ctx, b, po, ro, x, &ic, r, rec, &err);
                swa_invariance_case_free(&ic);
            }
            if (st != SWA_OK) {
                rec->state = st == SWA_ERR_UNSUPPORTED ? SWA_INV_SKIPPED : SWA_INV_ERROR;
                snprintf(rec->message, sizeof rec->message, "%s", err.message[0] ? err.message : "failed");
            }
        }
    }
    swa_invariance_judge(r);
}

/* (request, row, position, head, dim) of element i of an output laid out
 * [total_qo][heads][head_dim] (dim < 0: an LSE entry [total_qo][heads]). */
static swa_index element_index(const swa_case *c, const int *qo_indptr, size_t i, bool lse)
{
    size_t per_row = (size_t)c->num_qo_heads * (lse ? 1 : (size_t)c->head_dim);
    int g = (int)(i / per_row), r = 0;
    while (r + 1 < c->num_requests && qo_indptr[r + 1] <= g)
        r++;
    int row = g - qo_indptr[r];
    swa_index ix = {r, row, c->kv_len[r] - c->qo_len[r] + row,
                    (int)(lse ? i % (size_t)c->num_qo_heads : (i / (size_t)c->head_dim) % (size_t)c->num_qo_heads),
                    lse ? -1 : (int)(i % (size_t)c->head_dim)};
    return ix;
}

/* Bitwise comparison of run k's outputs with run 1's (--repeat): the
 * interior element by element in the case dtype, the LSE entry by entry,
 * and the guard bytes.  Adds run k to r->nondet when anything differs. */
static void nondet_add(const swa_case *c, const int *qo_indptr, const swa_exec *first, const swa_exec *again,
                       size_t out_bytes, size_t lse_bytes, bool with_lse, int run, swa_nondet *nd)
{
    size_t es = swa_dtype_size(c->dtype), n = out_bytes / es;
    const uint8_t *a = first->out_g + SWA_GUARD_BYTES, *b = again->out_g + SWA_GUARD_BYTES;
    long long elements = 0, nonfinite = 0, lse_entries = 0, guard = 0;
    size_t first_at = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(a + i * es, b + i * es, es) == 0)
            continue;
        if (!elements++)
            first_at = i;
        double x = swa_load(c->dtype, a, i), y = swa_load(c->dtype, b, i);
        if (!isfinite(x) || !isfinite(y)) {
            nonfinite++;
            continue;
        }
        double d = fabs(x - y);
        if (d > nd->max_abs_diff || nd->max_abs_run == 0) {
            nd->max_abs_diff = d;
            nd->max_abs_index = element_index(c, qo_indptr, i, false);
            nd->max_abs_run = run;
        }
    }
    if (with_lse) {
        const uint8_t *la = first->lse_g + SWA_GUARD_BYTES, *lb = again->lse_g + SWA_GUARD_BYTES;
        for (size_t i = 0; i < lse_bytes / sizeof(float); i++)
            lse_entries += memcmp(la + i * sizeof(float), lb + i * sizeof(float), sizeof(float)) != 0;
    }
    const uint8_t *guards[2][2] = {{first->out_g, again->out_g}, {first->lse_g, again->lse_g}};
    size_t tails[2] = {SWA_GUARD_BYTES + out_bytes, SWA_GUARD_BYTES + lse_bytes};
    for (int g = 0; g < (with_lse ? 2 : 1); g++)
        for (size_t i = 0; i < SWA_GUARD_BYTES; i++)
            guard += (guards[g][0][i] != guards[g][1][i]) + (guards[g][0][tails[g] + i] != guards[g][1][tails[g] + i]);
    nd->total = (long long)n;
    nd->lse_total = with_lse ? (long long)(lse_bytes / sizeof(float)) : 0;
    if (!elements && !lse_entries && !guard)
        return;
    if (!nd->runs_differing++) {
        nd->first_run = run;
        nd->first_index = element_index(c, qo_indptr, first_at, false);
        if (!elements)
            nd->first_index.request = -1; /* only the LSE or the guards differ */
    }
    if (elements > nd->elements || (elements == nd->elements && lse_entries + guard > nd->lse_entries + nd->guard_bytes)) {
        nd->elements = elements;
        nd->nonfinite = nonfinite;
        nd->lse_entries = lse_entries;
        nd->guard_bytes = guard;
        nd->worst_run = run;
    }
}

void swa_nondet_format(const swa_nondet *nd, int repeat, char *buf, size_t n)
{
    char first[96] = "", worst[96] = "";
    if (nd->first_index.request >= 0) {
        swa_index_format(&nd->first_index, first, sizeof first);
    }
    if (nd->max_abs_run > 0)
        swa_index_format(&nd->max_abs_index, worst, sizeof worst);
    int k = snprintf(buf, n,
                     "Nondeterministic: %d of %d repeat runs differ bitwise from run 1; run %d: %lld / %lld output "
                     "elements differ (%.1f%%)",
                     nd->runs_differing, repeat - 1, nd->worst_run, nd->elements, nd->total,
                     nd->total ? 100.0 * (double)nd->elements / (double)nd->total : 0.0);
    if (k > 0 && (size_t)k < n && first[0])
        k += snprintf(buf + k, n - (size_t)k, ", the first at %s (run %d)", first, nd->first_run);
    if (k > 0 && (size_t)k < n && nd->max_abs_run > 0)
        k += snprintf(buf + k, n - (size_t)k, "; greatest absolute difference %.3g at %s (run %d)", nd->max_abs_diff,
                      worst, nd->max_abs_run);
    if (k > 0 && (size_t)k < n && nd->nonfinite)
        k += snprintf(buf + k, n - (size_t)k, "; %lld where one side is NaN or Inf", nd->nonfinite);
    if (k > 0 && (size_t)k < n && nd->lse_entries)
        k += snprintf(buf + k, n - (size_t)k, "; LSE: %lld / %lld entries differ", nd->lse_entries, nd->lse_total);
    if (k > 0 && (size_t)k < n && nd->guard_bytes)
        snprintf(buf + k, n - (size_t)k, "; %lld guard bytes around the outputs differ", nd->guard_bytes);
}

/* The index of b in the case's "backends" when the case file names it
 * there, else -1 (external backends run every case and are never named). */
static int named_backend(const swa_case *c, const swa_backend *b)
{
    for (int i = 0; b->flag && i < SWA_BACKEND_COUNT; i++)
        if (b->flag == 1u << i)
            return (c->backends & b->flag) ? i : -1;
    return -1;
}

/* r was skipped with r->message as the reason.  A backend the case file
 * names in "backends" must run it: its skip is a failure (a router that
 * sends a case to a kernel that refuses it turns red), unless the case
 * expects that skip with "expect_skip" and the reason says what it
 * expects.  Skips of external backends stay skips. */
static void judge_skip(const swa_case *c, const swa_backend *b, swa_result *r)
{
    int named = named_backend(c, b);
    if (named < 0)
        return;
    char reason[sizeof r->message];
    snprintf(reason, sizeof reason, "%s", r->message);
    const char *expected = c->expect_skip[named];
    if (expected[0] && strstr(reason, expected)) {
        snprintf(r->message, sizeof r->message, "expected skip: %s", reason);
        return;
    }
    r->outcome = SWA_OUTCOME_FAILED;
    /* a diagnosis key groups these apart from kernel failures in the reports */
    snprintf(r->diagnosis, sizeof r->diagnosis, "[named_backend_skipped] the case file names %s in \"backends\", and "
             "it did not run the case%s", b->name, expected[0] ? " (for another reason than expect_skip names)" : "");
    if (expected[0])
        snprintf(r->message, sizeof r->message, "expected %s to skip with a reason containing \"%s\", but it "
                 "skipped with: %s", b->name, expected, reason);
    else
        snprintf(r->message, sizeof r->message, "%s skipped a case whose file names it in \"backends\": %s (a skip "
                 "of a named backend fails unless the case expects it: \"expect_skip\": {\"%s\": \"...\"})",
                 b->name, reason, b->name);
}

/* What the GPU kernels launched (the device's record since the reset
 * before the run), and the launch chooser's prediction from the plans (every
 * layer's for an interleaved-layer case) kept where it differs: a
 * difference is the model's fault, which `swadiff coverage --launches`
 * reports.  Nothing on a device without launch choices, nothing predicted
 * for a backend the model does not know (external ones). */
static void record_launch(const swa_device_ops *dev, const swa_case *c, const swa_backend *b, const swa_exec *x,
                          const swa_run_opts *ro, swa_result *r)
{
    if (!dev->last_launch || !dev->launch_target)
        return;
    swa_launch got, want;
    dev->last_launch(&got);
    swa_launch_format(&got, r->launch, sizeof r->launch);
    swa_launch_target t;
    dev->launch_target(&t);
    swa_launch_target_format(&t, r->launch_target, sizeof r->launch_target);
    memset(&want, 0, sizeof want);
    for (int l = 0; l < (c->num_layers > 0 ? c->num_layers : 1); l++) {
        swa_launch one;
        if (swa_launch_predict(&t, b, c->num_layers > 0 ? x->layers.plan[l] : x->plan, ro->return_lse, &one,
                               &(swa_error){0}) != SWA_OK)
            return;
        swa_launch_union(&want, &one);
    }
    if (memcmp(&got, &want, sizeof got) != 0)
        swa_launch_format(&want, r->launch_predicted, sizeof r->launch_predicted);
}

/* --dump was asked for and r's files could not be written (why): a pass or
 * a skip becomes an error saying so (the run exits 3, not 0, and the reports
 * agree with the exit code); a failure stays a failure (exit 1 outranks 3)
 * and its message gets the note. */
static void dump_failed(swa_result *r, const char *why)
{
    if (!strncmp(why, "dump: ", 6))
        why += 6; /* the writer's prefix; "--dump failed" says it */
    char was[sizeof r->message];
    snprintf(was, sizeof was, "%s", r->message);
    if (r->outcome == SWA_OUTCOME_FAILED || r->outcome == SWA_OUTCOME_ERROR) {
        size_t k = strlen(r->message);
        snprintf(r->message + k, sizeof r->message - k, "; and --dump failed: %s", why);
        return;
    }
    const char *outcome = r->outcome == SWA_OUTCOME_PASSED ? "passed" : "skipped";
    r->outcome = SWA_OUTCOME_ERROR;
    r->error_status = SWA_ERR_IO;
    snprintf(r->message, sizeof r->message, "--dump failed: %s (the result itself: %s%s%s)", why, outcome,
             was[0] ? ": " : "", was);
}

void swa_run_one(const swa_run_config *cfg_in, swa_case_ctx *ctx, const swa_backend *b, swa_result *r,
                 void **out_copy, float **lse_copy)
{
    const swa_case *c = ctx->c;
    swa_run_config cfg_local = swa_config_for_case(cfg_in, c);
    const swa_run_config *cfg = &cfg_local;
    const int named = named_backend(c, b); /* its index in the case's "backends", or -1 */
    double t0 = swa_now();
    swa_result_init(cfg, c, b->name, r);
    r->traits = b->traits ? b->traits(b, c) : 0u;
    if (out_copy) *out_copy = NULL;
    if (lse_copy) *lse_copy = NULL;

    char reason[512];
    const char *why = b->supports(c, cfg->device, reason, sizeof reason);
    if (why) {
        r->outcome = SWA_OUTCOME_SKIPPED;
        snprintf(r->message, sizeof r->message, "%s", why);
        judge_skip(c, b, r);
        if (ctx->dump_error[0])
            dump_failed(r, ctx->dump_error);
        r->duration = swa_now() - t0;
        return;
    }

    swa_error err = {0};
    warn_sink sink = {r->warnings, sizeof r->warnings};
    swa_plan_opts po = {
        .device = cfg->device,
        .mutant = cfg->mutant,
        .num_sms = cfg->device->num_sms(),
        .warn = collect_warning,
        .warn_ctx = &sink,
        .backend = b,
    };
    swa_exec x = {0};
    float *lse_ln = NULL;
    swa_status st = exec_plan(ctx, b, &po, &x, &err);
    if (st != SWA_OK)
        goto fail;
    swa_decisions decisions;
    if (swa_plan_decisions(b, c, x.plan, &decisions, &(swa_error){0}) == SWA_OK)
        swa_decisions_format(&decisions, r->decisions, sizeof r->decisions);

    size_t out_bytes = (size_t)ctx->in.total_qo * c->num_qo_heads * c->head_dim * swa_dtype_size(c->dtype);
    size_t lse_bytes = (size_t)ctx->in.total_qo * c->num_qo_heads * sizeof(float);
    swa_run_opts ro = {.window_left_set = false, .window_left = c->window_left,
                       .return_lse = c->return_lse || b->lse_base != 0};
    /* the device names the kernel the run below launches (read after it) */
    if (cfg->device->last_kernel) cfg->device->last_kernel(NULL, 0);
    if (cfg->device->last_launch) cfg->device->last_launch(NULL);
    st = exec_run(ctx, b, &ro, out_bytes, lse_bytes, &x, &err);
    if (cfg->device->last_kernel) cfg->device->last_kernel(r->kernel, sizeof r->kernel);
    if (st == SWA_OK) record_launch(cfg->device, c, b, &x, &ro, r);
    if (st != SWA_OK)
        goto fail;
    r->stage[SWA_STAGE_BACKEND] = swa_now() - t0;
    double t_cmp = swa_now();

    double lse_base = b->run_lse_base(x.plan, &ro);
    st = swa_compare(c, ctx->in.qo_indptr, x.out_g, out_bytes, ro.return_lse ? (const float *)x.lse_g : NULL,
                     lse_bytes, SWA_GUARD_BYTES, SWA_GUARD_PATTERN, lse_base, ctx->ref_out,
                     ro.return_lse ? ctx->ref_lse : NULL, ctx->lowp_out, &r->cmp, &err);
    if (st != SWA_OK)
        goto fail;
    r->has_compare = true;
    if (named >= 0 && c->expect_skip[named][0]) {
        /* the backend ran although the case expects it to skip */
        r->outcome = SWA_OUTCOME_FAILED;
        snprintf(r->message, sizeof r->message, "expected %s to skip this case (a reason containing \"%s\"), but "
                 "it ran (%s)", b->name, c->expect_skip[named],
                 r->cmp.mismatched ? "and mismatched" : "and matched the reference");
        snprintf(r->diagnosis, sizeof r->diagnosis, "[expected_skip_not_taken] the case expects %s to skip it "
                 "(expect_skip), and it ran", b->name);
        goto done;
    }
    if (c->expect_error[0]) {
        /* the backend ran although the case pins a refusal */
        r->outcome = SWA_OUTCOME_FAILED;
        snprintf(r->message, sizeof r->message, "expected an error containing \"%s\", but %s ran (%s)",
                 c->expect_error, b->name, r->cmp.mismatched ? "and mismatched" : "and matched the reference");
        goto done;
    }
    r->stage[SWA_STAGE_COMPARE] = swa_now() - t_cmp;
    r->outcome = swa_compare_passed(&r->cmp) ? SWA_OUTCOME_PASSED : SWA_OUTCOME_FAILED;
    swa_compare_first_line(&r->cmp, r->message, sizeof r->message);

    /* --repeat: runs 2..N on the same inputs, each a fresh plan and run,
     * bitwise against run 1 (which alone is compared with the reference) */
    double t_repeat = swa_now();
    for (int k = 2; k <= r->repeat; k++) {
        swa_exec y = {0};
        st = exec_plan(ctx, b, &po, &y, &err);
        if (st == SWA_OK)
            st = exec_run(ctx, b, &ro, out_bytes, lse_bytes, &y, &err);
        if (st == SWA_OK)
            nondet_add(c, ctx->in.qo_indptr, &x, &y, out_bytes, lse_bytes, ro.return_lse, k, &r->nondet);
        exec_free(c, b, &y);
        if (st != SWA_OK) {
            char msg[sizeof err.message];
            snprintf(msg, sizeof msg, "%s", err.message);
            swa_error_set(&err, st, "repeat run %d of %d (run 1 %s): %s", k, r->repeat,
                          r->outcome == SWA_OUTCOME_PASSED ? "passed" : "failed", msg);
            goto fail;
        }
    }
    if (r->nondet.runs_differing) {
        char text[sizeof r->message];
        swa_nondet_format(&r->nondet, r->repeat, text, sizeof text);
        if (r->outcome == SWA_OUTCOME_PASSED && !(r->traits & SWA_TRAIT_DETERMINISTIC)) {
            /* measured, not judged: the backend does not declare itself deterministic */
            size_t k = strlen(r->message);
            snprintf(r->message + k, sizeof r->message - k, "%s(measured, the backend does not declare itself "
                     "deterministic) %s", k ? "; " : "", text);
        } else if (r->outcome == SWA_OUTCOME_PASSED) {
            /* the headline: run 1 matched the reference, a later run did not match run 1 */
            r->outcome = SWA_OUTCOME_FAILED;
            snprintf(r->message, sizeof r->message, "%s", text);
            snprintf(r->diagnosis, sizeof r->diagnosis,
                     "[nondeterministic] run 1 matches the reference, but %d of %d later runs on the same inputs "
                     "differ from it bitwise: a race, an unordered copy, or a plan that depends on timing",
                     r->nondet.runs_differing, r->repeat - 1);
        }
    }
    /* the invariance checks: the backend against itself on transformed cases */
    run_invariance(cfg, ctx, b, &po, &ro, &x, r);
    r->stage[SWA_STAGE_BACKEND] += swa_now() - t_repeat; /* the repeats and the invariance runs are backend time */

    if (out_copy) {
        *out_copy = malloc(out_bytes);
        if (*out_copy) memcpy(*out_copy, x.out_g + SWA_GUARD_BYTES, out_bytes);
    }
    /* the LSE in natural log, for explain and --dump */
    if ((lse_copy || cfg->dump_dir) && ro.return_lse && lse_base > 0) {
        size_t n = lse_bytes / sizeof(float);
        lse_ln = malloc(lse_bytes);
        if (lse_ln) {
            const float *src = (const float *)(x.lse_g + SWA_GUARD_BYTES);
            double scale = log(lse_base);
            for (size_t i = 0; i < n; i++)
                lse_ln[i] = (float)(src[i] * scale);
        }
    }
    if (cfg->dump_dir && !ctx->dump_error[0]) {
        swa_error derr = {0};
        if (swa_dump_backend(cfg->dump_dir, c, b->name, x.out_g + SWA_GUARD_BYTES, lse_ln, &derr) != SWA_OK) {
            fprintf(stderr, "swadiff: --dump for %s/%s: %s\n", c->id, b->name, derr.message);
            dump_failed(r, derr.message);
        }
    }
    if (lse_copy) {
        *lse_copy = lse_ln;
        lse_ln = NULL;
    }
    goto done;

fail:
    r->outcome = st == SWA_ERR_UNSUPPORTED ? SWA_OUTCOME_SKIPPED : SWA_OUTCOME_ERROR;
    r->error_status = st;
    snprintf(r->message, sizeof r->message, "%s", err.message[0] ? err.message : "backend failed without a message");
    if (st == SWA_ERR_UNSUPPORTED && (!c->expect_error[0] || (named >= 0 && c->expect_skip[named][0]))) {
        /* a refusal at plan or run time is a skip, judged as one; where the
         * case pins a refusal (expect_error), that decides instead, except
         * for a backend whose skip the case expects */
        judge_skip(c, b, r);
    } else if (c->expect_error[0] && st != SWA_ERR_DEVICE && st != SWA_ERR_NOMEM) {
        /* the case pins a refusal: the right error is a pass */
        if (strstr(err.message, c->expect_error)) {
            r->outcome = SWA_OUTCOME_PASSED;
        } else {
            r->outcome = SWA_OUTCOME_FAILED;
            snprintf(r->message, sizeof r->message, "expected an error containing \"%s\", got: %s",
                     c->expect_error, err.message);
        }
    }
done:
    if (ctx->dump_error[0])
        dump_failed(r, ctx->dump_error);
    exec_free(c, b, &x);
    free(lse_ln);
    r->duration = swa_now() - t0;
}
