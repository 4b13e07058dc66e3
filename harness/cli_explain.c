/* cli_explain.c — `swadiff explain` names the mask a failing backend
 * applied; `swadiff shrink` reduces a failing case while it keeps failing
 * and writes it as a case file.  Both find one case by exact id and run it
 * once through the same pipeline as `run`.
 *
 * Tested by tests/test_detect.c. */
#include <getopt.h>
#include <stdarg.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "harness/cli.h"
#include "harness/explain.h"
#include "harness/report.h"
#include "harness/run.h"

/* ---------------------------------------------------------------------------
 * explain and shrink share: find one case by exact id and run it once. */

typedef struct one_case_opts {
    const char *device_name;
    const char *backend;
    swa_mutant mutant;
    const char *id;
    const char *out_path;
    bool any_failure;     /* shrink: keep any failure, not the same diagnosis */
    int npaths;
    char **paths;
} one_case_opts;

static int parse_one_case(int argc, char **argv, one_case_opts *o, const char *cmd, bool need_backend)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'},
                                         {"backend", required_argument, 0, 'b'},
                                         {"mutant", required_argument, 0, 'm'},
                                         {"out", required_argument, 0, 'o'},
                                         {"any-failure", no_argument, 0, 'A'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->device_name = "auto";
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:b:m:o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': o->device_name = optarg; break;
        case 'b':
            if (!swa_backend_by_name(optarg)) {
                fprintf(stderr, "swadiff %s: --backend %s: unknown backend\n", cmd, optarg);
                return SWA_EXIT_USAGE;
            }
            o->backend = optarg;
            break;
        case 'm':
            o->mutant = swa_mutant_by_name(optarg);
            if (o->mutant == SWA_MUTANT_COUNT) {
                fprintf(stderr, "swadiff %s: --mutant %s: unknown (see `swadiff list mutants`)\n", cmd, optarg);
                return SWA_EXIT_USAGE;
            }
            break;
        case 'o': o->out_path = optarg; break;
        case 'A':
            if (!need_backend) { /* explain has nothing to keep */
                fprintf(stderr, "swadiff %s: --any-failure is a shrink option\n", cmd);
                return SWA_EXIT_USAGE;
            }
            o->any_failure = true;
            break;
        case 'h': return -1;
        default: return SWA_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "swadiff %s: missing CASE_ID\n", cmd);
        return SWA_EXIT_USAGE;
    }
    if (need_backend && !o->backend) {
        fprintf(stderr, "swadiff %s: --backend is required\n", cmd);
        return SWA_EXIT_USAGE;
    }
    o->id = argv[optind];
    o->npaths = argc - optind - 1;
    o->paths = argv + optind + 1;
    return 0;
}

static const swa_case *find_case(const swa_case_list *all, const char *id)
{
    for (int i = 0; i < all->count; i++)
        if (!strcmp(all->cases[i].id, id))
            return &all->cases[i];
    return NULL;
}

/* Loads the cases, finds o->id and resolves the device: what explain and
 * shrink both start with.  Returns 0, or the exit code (list freed). */
static int open_one_case(const one_case_opts *o, const char *cmd, swa_case_list *all, const swa_case **c,
                         const swa_device_ops **dev)
{
    int rc = swa_cli_load_cases(o->npaths, o->paths, all);
    if (rc)
        return rc;
    *c = find_case(all, o->id);
    if (!*c) {
        fprintf(stderr, "swadiff %s: no case with id '%s' (ids: `swadiff list cases`)\n", cmd, o->id);
        swa_case_list_free(all);
        return SWA_EXIT_USAGE;
    }
    int dev_rc = SWA_EXIT_USAGE;
    *dev = swa_cli_device(o->device_name, &dev_rc);
    if (!*dev) {
        swa_case_list_free(all);
        return dev_rc;
    }
    return 0;
}

/* Runs (c, b) and reports whether it failed; out/lse copies on request. */
static swa_outcome run_case_once(const swa_run_config *cfg, const swa_case *c, const swa_backend *b,
                                 swa_result *r, swa_case_ctx *ctx_keep, void **out, float **lse)
{
    swa_case_ctx ctx;
    swa_error err = {0};
    if (swa_case_ctx_init(&ctx, c, cfg->device, &err) != SWA_OK) {
        swa_result_init(cfg, c, b->name, r);
        r->error_status = err.status;
        if (out)
            *out = NULL;
        if (lse)
            *lse = NULL;
        if (ctx_keep)
            memset(ctx_keep, 0, sizeof *ctx_keep);
        r->outcome = SWA_OUTCOME_ERROR;
        snprintf(r->message, sizeof r->message, "%s", err.message);
        return r->outcome;
    }
    void *own_out = NULL;
    float *own_lse = NULL;
    bool explain_here = cfg->explain_failures && !out; /* shrink: the diagnosis decides */
    swa_run_one(cfg, &ctx, b, r, explain_here ? &own_out : out, explain_here ? &own_lse : lse);
    if (explain_here) {
        if (r->outcome == SWA_OUTCOME_FAILED && own_out)
            swa_explain_attach(cfg, &ctx, b, r, own_out, own_lse);
        free(own_out);
        free(own_lse);
    }
    if (ctx_keep)
        *ctx_keep = ctx;
    else
        swa_case_ctx_free(&ctx);
    return r->outcome;
}

int swa_cmd_explain(int argc, char **argv, const char *prog)
{
    one_case_opts o;
    int rc = parse_one_case(argc, argv, &o, "explain", false);
    if (rc == -1) {
        printf("usage: swadiff explain CASE_ID [--backend B] [--mutant M] [--device D] [CASES...]\n\n"
               "Runs the case (found by exact id in CASES, default ./cases), and for each failing\n"
               "backend scores its output against reference variants (window L-1, L+1, none,\n"
               "tile-granular start, request-anchored, top-left alignment, soft cap before the\n"
               "mask or missing) and names the one that matches.\n");
        return SWA_EXIT_OK;
    }
    if (rc)
        return rc;
    swa_case_list all = {0};
    const swa_case *c;
    const swa_device_ops *dev;
    if ((rc = open_one_case(&o, "explain", &all, &c, &dev)) != 0)
        return rc;
    swa_run_config cfg = {.device = dev, .mutant = o.mutant, .quiet = true, .no_isolate = true, .argv0 = prog};
    int n, failures = 0, errors = 0;
    const swa_backend *const *bs = swa_backends(&n);
    for (int i = 0; i < n; i++) {
        if (!(c->backends & bs[i]->flag) || (o.backend && strcmp(o.backend, bs[i]->name)))
            continue;
        swa_case_ctx ctx;
        swa_result r;
        void *out = NULL;
        float *lse = NULL;
        swa_outcome oc = run_case_once(&cfg, c, bs[i], &r, &ctx, &out, &lse);
        printf("%s [%s on %s]: %s — %s\n", c->id, bs[i]->name, dev->name, swa_outcome_name(oc), r.message);
        if (oc == SWA_OUTCOME_FAILED && out) {
            failures++;
            swa_explanation ex;
            swa_error err = {0};
            if (swa_explain_backend(&ctx, &r.tol, bs[i]->name, out, lse, bs[i]->lse_base, &ex, &err) != SWA_OK) {
                printf("  explain failed: %s\n", err.message);
            } else {
                printf("  diagnosis: %s\n", ex.verdict);
                for (int h = 0; h < ex.count; h++)
                    printf("    %6.2f%%  %s%s\n", 100 * ex.scores[h].ratio, ex.scores[h].name,
                           h == ex.best ? "  <- best" : "");
                printf("    %6.2f%%  (the spec)\n", 100 * ex.spec_ratio);
            }
        } else if (oc == SWA_OUTCOME_ERROR) {
            errors++;
        }
        swa_case_ctx_free(&ctx);
        swa_compare_result_free(&r.cmp);
        free(out);
        free(lse);
    }
    swa_case_list_free(&all);
    return failures ? SWA_EXIT_MISMATCH : errors ? SWA_EXIT_RUNTIME : SWA_EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * shrink */

/* What a smaller case must still show.  A reduction that trades the bug for
 * another one (a window off by one becoming a page-table fault on a page
 * size of 1) would hand the reader the wrong bug: shrink keeps the
 * diagnosis family (harness/explain.h) of the original failure.  When the
 * original cannot be explained (too large to score every hypothesis), the
 * first explainable failure on the way down fixes it. */
typedef struct shrink_goal {
    bool any_failure;     /* --any-failure: any failure will do */
    char key[128];        /* "" until fixed */
    char diagnosis[512];  /* of the current case */
} shrink_goal;

static bool key_is_fixed(const char *key)
{
    return strcmp(key, "too_large") != 0 && strcmp(key, "unexplained") != 0 && strcmp(key, "explain_failed") != 0;
}

static bool still_fails(const swa_run_config *cfg, const swa_case *c, const swa_backend *b, int *tries,
                        shrink_goal *goal)
{
    swa_result r;
    (*tries)++;
    swa_outcome oc = run_case_once(cfg, c, b, &r, NULL, NULL, NULL);
    swa_compare_result_free(&r.cmp);
    if (oc != SWA_OUTCOME_FAILED)
        return false;
    char key[128];
    swa_diagnosis_key(r.diagnosis, key, sizeof key);
    if (!goal->any_failure && goal->key[0] && strcmp(key, goal->key) != 0)
        return false;
    if (!goal->key[0] && key_is_fixed(key))
        snprintf(goal->key, sizeof goal->key, "%s", key);
    snprintf(goal->diagnosis, sizeof goal->diagnosis, "%s", r.diagnosis);
    return true;
}

/* Replaces *cur with cand when cand still fails (as goal says); frees cand
 * otherwise. */
static bool try_candidate(const swa_run_config *cfg, swa_case *cur, swa_case *cand, const swa_backend *b,
                          int *tries, shrink_goal *goal)
{
    if (b->supports(cand, cfg->device, (char[256]){0}, 256) == NULL && still_fails(cfg, cand, b, tries, goal)) {
        swa_case_free(cur);
        *cur = *cand;
        return true;
    }
    swa_case_free(cand);
    return false;
}

int swa_cmd_shrink(int argc, char **argv, const char *prog)
{
    one_case_opts o;
    int rc = parse_one_case(argc, argv, &o, "shrink", true);
    if (rc == -1) {
        printf("usage: swadiff shrink CASE_ID --backend B [--mutant M] [--device D] [--out FILE]\n"
               "                      [--any-failure] [CASES...]\n\n"
               "Reduces a failing case (one request, fewest heads, smallest head_dim, bisected\n"
               "lengths, smallest page size) while it still fails with the same diagnosis (the\n"
               "family `explain` names; --any-failure: any failure), writes the minimal case as\n"
               "a case file (default ./shrunk-<name>.json) and prints the command that reruns it.\n");
        return SWA_EXIT_OK;
    }
    if (rc)
        return rc;
    swa_case_list all = {0};
    const swa_case *orig;
    const swa_device_ops *dev;
    if ((rc = open_one_case(&o, "shrink", &all, &orig, &dev)) != 0)
        return rc;
    const swa_backend *b = swa_backend_by_name(o.backend);
    swa_run_config cfg = {.device = dev, .mutant = o.mutant, .quiet = true, .no_isolate = true, .argv0 = prog,
                          .explain_failures = true};
    int tries = 0;
    shrink_goal goal = {.any_failure = o.any_failure};
    if (!(orig->backends & b->flag)) {
        fprintf(stderr, "swadiff shrink: case %s does not run backend %s\n", o.id, o.backend);
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    if (!still_fails(&cfg, orig, b, &tries, &goal)) {
        fprintf(stderr, "swadiff shrink: %s passes on %s with %s%s%s: nothing to shrink\n", o.id, o.backend,
                dev->name, o.mutant ? " under mutant " : "", o.mutant ? swa_mutant_get(o.mutant)->name : "");
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    swa_case cur, cand;
    if (swa_case_copy(&cur, orig) != 0) {
        swa_case_list_free(&all);
        return SWA_EXIT_RUNTIME;
    }
    cur.backends = b->flag;
    bool changed = true;
    while (changed) {
        changed = false;
        /* one request */
        for (int r = 0; cur.num_requests > 1 && r < cur.num_requests; r++) {
            if (swa_case_copy(&cand, &cur) != 0) break;
            cand.num_requests = 1;
            cand.qo_len[0] = cur.qo_len[r];
            cand.kv_len[0] = cur.kv_len[r];
            if (cand.cuda_graph) cand.cuda_graph = false;
            if (try_candidate(&cfg, &cur, &cand, b, &tries, &goal)) { changed = true; break; }
        }
        /* drop half of the requests (keeps a batch when one alone passes) */
        if (cur.num_requests > 2) {
            if (swa_case_copy(&cand, &cur) == 0) {
                cand.num_requests = cur.num_requests / 2 + (cur.cuda_graph ? 1 : 0);
                if (cand.cuda_graph && cand.graph_capture_requests >= cand.num_requests)
                    cand.graph_capture_requests = cand.num_requests - 1;
                if (cand.num_requests < cur.num_requests && try_candidate(&cfg, &cur, &cand, b, &tries, &goal))
                    changed = true;
                else if (cand.num_requests >= cur.num_requests)
                    swa_case_free(&cand);
            }
        }
        /* fewer heads: one kv head, then smaller groups */
        if (cur.num_kv_heads > 1 && swa_case_copy(&cand, &cur) == 0) {
            int group = cur.num_qo_heads / cur.num_kv_heads;
            cand.num_kv_heads = 1;
            cand.num_qo_heads = group;
            changed |= try_candidate(&cfg, &cur, &cand, b, &tries, &goal);
        }
        if (cur.num_qo_heads > cur.num_kv_heads && swa_case_copy(&cand, &cur) == 0) {
            int group = cur.num_qo_heads / cur.num_kv_heads;
            cand.num_qo_heads = cur.num_kv_heads * (group / 2 > 0 ? group / 2 : 1);
            changed |= try_candidate(&cfg, &cur, &cand, b, &tries, &goal);
        }
        /* smallest head_dim */
        static const int dims[] = {64, 128};
        for (int d = 0; d < 2; d++)
            if (dims[d] < cur.head_dim && swa_case_copy(&cand, &cur) == 0) {
                cand.head_dim = dims[d];
                cand.sm_scale = cur.sm_scale; /* keep the logit scale the failure was seen with */
                if (try_candidate(&cfg, &cur, &cand, b, &tries, &goal)) { changed = true; break; }
            }
        /* bisect lengths: shorter prefix, then fewer new tokens */
        for (int r = 0; r < cur.num_requests; r++) {
            int prefix = cur.kv_len[r] - cur.qo_len[r];
            if (prefix > 0 && swa_case_copy(&cand, &cur) == 0) {
                cand.kv_len[r] = cur.qo_len[r] + prefix / 2;
                changed |= try_candidate(&cfg, &cur, &cand, b, &tries, &goal);
            }
            if (cur.qo_len[r] > 1 && swa_case_copy(&cand, &cur) == 0) {
                int cut = cur.qo_len[r] - cur.qo_len[r] / 2;
                cand.qo_len[r] = cur.qo_len[r] / 2;
                cand.kv_len[r] = cur.kv_len[r] - cut;
                changed |= try_candidate(&cfg, &cur, &cand, b, &tries, &goal);
            }
        }
        /* smallest page size */
        if (cur.page_size > 1 && swa_case_copy(&cand, &cur) == 0) {
            cand.page_size = 1;
            if (try_candidate(&cfg, &cur, &cand, b, &tries, &goal)) {
                changed = true;
            } else if (cur.page_size > 2 && swa_case_copy(&cand, &cur) == 0) {
                cand.page_size = cur.page_size / 2;
                changed |= try_candidate(&cfg, &cur, &cand, b, &tries, &goal);
            }
        }
    }

    char path[SWA_PATH_MAX];
    if (o.out_path)
        snprintf(path, sizeof path, "%s", o.out_path);
    else
        snprintf(path, sizeof path, "shrunk-%s.json", cur.name);
    snprintf(cur.name, sizeof cur.name, "%s_shrunk", orig->name);
    swa_error err = {0};
    if (swa_case_write_json(&cur, path, &err) != SWA_OK) {
        fprintf(stderr, "swadiff shrink: %s\n", err.message);
        swa_case_free(&cur);
        swa_case_list_free(&all);
        return SWA_EXIT_RUNTIME;
    }
    int total_qo = swa_case_total_qo(&cur);
    printf("shrunk %s in %d runs: %d request%s, %d/%d heads, head_dim %d, page_size %d, %d query rows\n", o.id,
           tries, cur.num_requests, cur.num_requests == 1 ? "" : "s", cur.num_qo_heads, cur.num_kv_heads,
           cur.head_dim, cur.page_size, total_qo);
    for (int r = 0; r < cur.num_requests; r++)
        printf("  request %d: qo_len %d, kv_len %d\n", r, cur.qo_len[r], cur.kv_len[r]);
    if (goal.any_failure)
        printf("diagnosis (any failure was kept): %s\n", goal.diagnosis);
    else if (goal.key[0])
        printf("diagnosis kept: %s\n", goal.diagnosis);
    else
        printf("diagnosis: %s (no explainable failure on the way down: any failure was kept)\n", goal.diagnosis);
    printf("wrote %s\nrerun: %s run %s --backend %s --device %s%s%s\n", path, prog, path, o.backend, dev->name,
           o.mutant ? " --mutant " : "", o.mutant ? swa_mutant_get(o.mutant)->name : "");
    swa_case_free(&cur);
    swa_case_list_free(&all);
    return SWA_EXIT_OK;
}
