/* cli_explain.c — `swadiff explain` names the mask a failing backend
 * applied; `swadiff shrink` reduces a failing case while it keeps failing
 * for the same reason and writes it as a case file.  Both find one case by
 * exact id and run it through the same pipeline as `run`, for built-in
 * backends and for the external ones of --plugin / --adapter (registered
 * as `run` registers them).
 *
 * Isolation, as in `run`: each attempt (one case on one backend, its
 * diagnosis included) runs in a forked child that streams the result back,
 * so a plug-in that crashes or hangs (--timeout) costs that attempt, not the
 * command; --no-isolate runs in-process (debuggers).
 *
 * Tested by tests/test_detect.c, tests/test_cli.c (shrink, usage errors)
 * and tests/test_external.c (explain and shrink with plug-ins and adapters). */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdarg.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness/cli.h"
#include "harness/explain.h"
#include "harness/report.h"
#include "harness/run.h"

/* ---------------------------------------------------------------------------
 * explain and shrink share: find one case by exact id and run it. */

typedef struct one_case_opts {
    const char *device_name;
    const char *backend;     /* a built-in name, or an NS:BACKEND glob of a --plugin / --adapter */
    bool external_backend;   /* backend is NS:BACKEND */
    swa_mutant mutant;
    const char *id;
    const char *out_path;
    bool any_failure;        /* shrink: keep any failure, not the same diagnosis */
    double timeout;          /* seconds per attempt (isolated only); 0: none */
    bool no_isolate;
    const char *plugins[SWA_EXTERNAL_MAX], *adapters[SWA_EXTERNAL_MAX];
    int nplugins, nadapters;
    const char *registry;
    int npaths;
    char **paths;
} one_case_opts;

static int parse_seconds(const char *cmd, const char *opt, const char *arg, double *out)
{
    if (swa_cli_parse_seconds(arg, out) != 0) {
        fprintf(stderr, "swadiff %s: %s %s: expected a positive number of seconds, at most %.0f\n", cmd, opt, arg,
                SWA_SECONDS_MAX);
        return SWA_EXIT_USAGE;
    }
    return 0;
}

static int parse_one_case(int argc, char **argv, one_case_opts *o, const char *cmd, bool need_backend)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'},
                                         {"backend", required_argument, 0, 'b'},
                                         {"mutant", required_argument, 0, 'm'},
                                         {"out", required_argument, 0, 'o'},
                                         {"any-failure", no_argument, 0, 'A'},
                                         {"plugin", required_argument, 0, 'P'},
                                         {"adapter", required_argument, 0, 'a'},
                                         {"adapters", required_argument, 0, 'R'},
                                         {"adapter-timeout", required_argument, 0, 'W'},
                                         {"timeout", required_argument, 0, 'T'},
                                         {"no-isolate", no_argument, 0, 'I'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->device_name = "auto";
    o->registry = getenv("SWADIFF_ADAPTERS");
    if (!o->registry || !*o->registry)
        o->registry = "adapters/registry.json";
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:b:m:o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': o->device_name = optarg; break;
        case 'b':
            if (strchr(optarg, ':')) { /* checked once the plug-ins and adapters are registered */
                o->external_backend = true;
            } else if (!swa_backend_by_name(optarg)) {
                fprintf(stderr, "swadiff %s: --backend %s: unknown backend (a built-in name, or NAME:BACKEND of "
                        "a --plugin or --adapter)\n", cmd, optarg);
                return SWA_EXIT_USAGE;
            } else {
                o->external_backend = false;
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
        case 'P':
        case 'a':
            if ((ch == 'P' ? o->nplugins : o->nadapters) == SWA_EXTERNAL_MAX) {
                fprintf(stderr, "swadiff %s: at most %d --plugin / --adapter options\n", cmd, SWA_EXTERNAL_MAX);
                return SWA_EXIT_USAGE;
            }
            if (ch == 'P')
                o->plugins[o->nplugins++] = optarg;
            else
                o->adapters[o->nadapters++] = optarg;
            break;
        case 'R': o->registry = optarg; break;
        case 'W': {
            double t;
            if (parse_seconds(cmd, "--adapter-timeout", optarg, &t))
                return SWA_EXIT_USAGE;
            swa_external_set_reply_timeout(t);
            break;
        }
        case 'T':
            if (parse_seconds(cmd, "--timeout", optarg, &o->timeout))
                return SWA_EXIT_USAGE;
            break;
        case 'I': o->no_isolate = true; break;
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
    if (o->timeout > 0 && o->no_isolate) {
        fprintf(stderr, "swadiff %s: --timeout needs the isolated attempt: it cannot stop a backend running in "
                        "this process; drop --no-isolate or --timeout\n", cmd);
        return SWA_EXIT_USAGE;
    }
    o->id = argv[optind];
    o->npaths = argc - optind - 1;
    o->paths = argv + optind + 1;
    if (o->out_path && !need_backend) {
        fprintf(stderr, "swadiff %s: --out is a shrink option\n", cmd);
        return SWA_EXIT_USAGE;
    }
    if (o->out_path && strlen(o->out_path) >= SWA_PATH_MAX) { /* it was cut, and the case written there */
        char shown[300];
        swa_path_abbrev(o->out_path, shown, sizeof shown);
        fprintf(stderr, "swadiff %s: --out %s: expected a path of at most %d bytes (give a shorter or relative "
                        "path)\n", cmd, shown, SWA_PATH_MAX - 1);
        return SWA_EXIT_USAGE;
    }
    int rc = swa_cli_register_externals(cmd, o->plugins, o->nplugins, o->adapters, o->nadapters, o->registry,
                                        false);
    if (rc)
        return rc;
    if (o->external_backend) {
        int n, matched = 0;
        const swa_backend *const *ext = swa_external_backends(&n);
        for (int i = 0; i < n; i++)
            matched += fnmatch(o->backend, ext[i]->name, 0) == 0;
        if (!matched) {
            fprintf(stderr, "swadiff %s: --backend %s: no --plugin or --adapter backend has that name%s\n", cmd,
                    o->backend, n ? " (see the registered names above)" : " (none registered)");
            return SWA_EXIT_USAGE;
        }
        if (need_backend && matched > 1) {
            fprintf(stderr, "swadiff %s: --backend %s names %d backends; shrink takes exactly one\n", cmd,
                    o->backend, matched);
            return SWA_EXIT_USAGE;
        }
    }
    return 0;
}

/* The backends explain or shrink runs on case c: the built-in ones the case
 * names, then every registered external one (externals run every case, as
 * in `run`), both filtered by --backend. */
static int case_backends(const one_case_opts *o, const swa_case *c, const swa_backend **out, int max)
{
    int n, k = 0;
    const swa_backend *const *bs = swa_backends(&n);
    for (int i = 0; i < n && k < max; i++)
        if ((c->backends & bs[i]->flag) && (!o->backend || (!o->external_backend && !strcmp(o->backend, bs[i]->name))))
            out[k++] = bs[i];
    const swa_backend *const *ext = swa_external_backends(&n);
    for (int i = 0; i < n && k < max; i++)
        if (!o->backend || (o->external_backend && fnmatch(o->backend, ext[i]->name, 0) == 0))
            out[k++] = ext[i];
    return k;
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

/* One attempt: (case, backend) run once and, when it fails with an output,
 * explained.  What crosses the pipe from an isolated attempt. */
typedef struct attempt {
    swa_result r;           /* r.cmp's arrays are not kept */
    bool explained;         /* ex holds the diagnosis */
    swa_explanation ex;
} attempt;

static void attempt_here(const swa_run_config *cfg, const swa_case *c, const swa_backend *b, attempt *a)
{
    memset(a, 0, sizeof *a);
    swa_case_ctx ctx;
    swa_error err = {0};
    if (swa_case_ctx_init(&ctx, c, cfg->device, &err) != SWA_OK) {
        swa_result_init(cfg, c, b->name, &a->r);
        a->r.error_status = err.status;
        a->r.outcome = SWA_OUTCOME_ERROR;
        snprintf(a->r.message, sizeof a->r.message, "%s", err.message);
        return;
    }
    void *out = NULL;
    float *lse = NULL;
    swa_run_one(cfg, &ctx, b, &a->r, &out, &lse);
    if (a->r.outcome == SWA_OUTCOME_FAILED && out) {
        if (swa_explain_backend(&ctx, &a->r.tol, b->name, out, lse, b->lse_base, &a->ex, &err) != SWA_OK) {
            snprintf(a->r.diagnosis, sizeof a->r.diagnosis, "[explain_failed] explain failed: %s", err.message);
        } else {
            a->explained = true;
            snprintf(a->r.diagnosis, sizeof a->r.diagnosis, "[%s] %s", a->ex.key, a->ex.verdict);
        }
    }
    free(out);
    free(lse);
    swa_compare_result_free(&a->r.cmp);
    swa_case_ctx_free(&ctx);
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads n bytes by the deadline (0: none).  0, -1 (closed early), -2 (timeout). */
static int read_until(int fd, void *buf, size_t n, double deadline)
{
    char *p = buf;
    while (n) {
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - swa_now();
            if (left <= 0)
                return -2;
            ms = (int)(left * 1000) + 1;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        int pr = poll(&pfd, 1, ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            return -2;
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* The attempt in a forked child, as `run`'s worker: a crash, a sticky
 * device error or a hang past the timeout costs this attempt only. */
static void attempt_isolated(const one_case_opts *o, const swa_run_config *cfg, const swa_case *c,
                             const swa_backend *b, attempt *a)
{
    int fds[2];
    memset(a, 0, sizeof *a);
    if (pipe(fds) != 0) {
        attempt_here(cfg, c, b, a); /* no isolation to be had: still answer */
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        attempt_here(cfg, c, b, a);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the command (an adapter dies with us) */
        if (getppid() == 1)
            _exit(0);
        signal(SIGPIPE, SIG_DFL);
        attempt *mine = malloc(sizeof *mine);
        if (!mine)
            _exit(3);
        attempt_here(cfg, c, b, mine);
        int rc = write_all(fds[1], mine, sizeof *mine);
        _exit(rc ? 3 : 0);
    }
    close(fds[1]);
    int rd = read_until(fds[0], a, sizeof *a, o->timeout > 0 ? swa_now() + o->timeout : 0);
    close(fds[0]);
    if (rd != 0)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    memset(&a->r.cmp, 0, sizeof a->r.cmp); /* the child's pointers */
    if (rd == 0)
        return;
    memset(a, 0, sizeof *a);
    swa_result_init(cfg, c, b->name, &a->r);
    a->r.outcome = SWA_OUTCOME_ERROR;
    if (rd == -2)
        snprintf(a->r.message, sizeof a->r.message, "timeout: no result within %.3g s (--timeout); the attempt was "
                 "killed", o->timeout);
    else if (WIFSIGNALED(status))
        snprintf(a->r.message, sizeof a->r.message, "the worker process died with signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(a->r.message, sizeof a->r.message, "the worker process exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void run_attempt(const one_case_opts *o, const swa_run_config *cfg, const swa_case *c, const swa_backend *b,
                        attempt *a)
{
    if (o->no_isolate)
        attempt_here(cfg, c, b, a);
    else
        attempt_isolated(o, cfg, c, b, a);
}

int swa_cmd_explain(int argc, char **argv, const char *prog)
{
    one_case_opts o;
    int rc = parse_one_case(argc, argv, &o, "explain", false);
    if (rc == -1) {
        printf("usage: swadiff explain CASE_ID [--backend B] [--mutant M] [--device D]\n"
               "                       [--plugin PATH.so] [--adapter NAME[=COMMAND]] [--adapters FILE]\n"
               "                       [--adapter-timeout SEC] [--timeout SEC] [--no-isolate] [CASES...]\n\n"
               "Runs the case (found by exact id in CASES, default ./cases) on each backend that runs\n"
               "it (the built-in ones it names and every --plugin / --adapter backend; --backend B:\n"
               "one built-in name or a NAME:BACKEND glob), and for each failing one scores its\n"
               "output against reference variants (window L-1, L+1, none, tile-granular start,\n"
               "request-anchored, top-left alignment, soft cap before the mask or missing, right\n"
               "bound and chunk variants) and names the one that matches; large cases are scored\n"
               "on a sample of rows and heads.  Each attempt runs in an isolated worker.\n");
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
    const swa_backend *bs[SWA_BACKEND_COUNT + SWA_EXTERNAL_MAX];
    int nb = case_backends(&o, c, bs, (int)(sizeof bs / sizeof bs[0]));
    if (nb == 0) {
        fprintf(stderr, "swadiff explain: case %s runs no backend%s%s\n", o.id, o.backend ? " named " : "",
                o.backend ? o.backend : "");
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    int failures = 0, errors = 0;
    attempt *a = malloc(sizeof *a);
    if (!a) {
        swa_case_list_free(&all);
        return SWA_EXIT_RUNTIME;
    }
    for (int i = 0; i < nb; i++) {
        run_attempt(&o, &cfg, c, bs[i], a);
        swa_outcome oc = a->r.outcome;
        printf("%s [%s on %s]: %s — %s\n", c->id, bs[i]->name, dev->name, swa_outcome_name(oc), a->r.message);
        if (oc == SWA_OUTCOME_FAILED) {
            failures++;
            const swa_explanation *ex = &a->ex;
            if (!a->explained) {
                printf("  %s\n", a->r.diagnosis[0] ? a->r.diagnosis : "not explained (no output to score)");
            } else {
                printf("  diagnosis: [%s] %s\n", ex->key, ex->verdict);
                for (int h = 0; h < ex->count; h++)
                    printf("    %6.2f%%  %s%s\n", 100 * ex->scores[h].ratio, ex->scores[h].name,
                           h == ex->best ? "  <- best" : "");
                printf("    %6.2f%%  (the spec)\n", 100 * ex->spec_ratio);
                if (ex->sampled)
                    printf("    (scored on a sample of %d rows x %d heads of %d x %d)\n", ex->sample_rows,
                           ex->sample_heads, ex->total_rows, ex->total_heads);
            }
        } else if (oc == SWA_OUTCOME_ERROR) {
            errors++;
        }
    }
    free(a);
    swa_case_list_free(&all);
    return failures ? SWA_EXIT_MISMATCH : errors ? SWA_EXIT_RUNTIME : SWA_EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * shrink */

/* What a smaller case must still show.  A reduction that trades the bug for
 * another one (a window off by one becoming a page-table fault on a page
 * size of 1) would hand the reader the wrong bug: shrink keeps the
 * diagnosis family (harness/explain.h) of the original failure.  When the
 * original cannot be explained (explain failed), the first explainable
 * failure on the way down fixes it. */
typedef struct shrink_goal {
    const one_case_opts *o;
    bool any_failure;     /* --any-failure: any failure will do */
    char key[128];        /* "" until fixed */
    char diagnosis[sizeof ((swa_result *)0)->diagnosis]; /* of the current case */
    attempt *a;           /* scratch for one attempt */
} shrink_goal;

static bool key_is_fixed(const char *key)
{
    /* "too_large": reports written before the sampled diagnosis */
    return strcmp(key, "too_large") != 0 && strcmp(key, "unexplained") != 0 && strcmp(key, "explain_failed") != 0;
}

static bool still_fails(const swa_run_config *cfg, const swa_case *c, const swa_backend *b, int *tries,
                        shrink_goal *goal)
{
    (*tries)++;
    run_attempt(goal->o, cfg, c, b, goal->a);
    const swa_result *r = &goal->a->r;
    if (r->outcome != SWA_OUTCOME_FAILED)
        return false;
    char key[128];
    swa_diagnosis_key(r->diagnosis, key, sizeof key);
    if (!goal->any_failure && goal->key[0] && strcmp(key, goal->key) != 0)
        return false;
    if (!goal->key[0] && key_is_fixed(key))
        snprintf(goal->key, sizeof goal->key, "%s", key);
    snprintf(goal->diagnosis, sizeof goal->diagnosis, "%s", r->diagnosis);
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
               "                      [--any-failure] [--plugin PATH.so] [--adapter NAME[=COMMAND]]\n"
               "                      [--adapters FILE] [--adapter-timeout SEC] [--timeout SEC]\n"
               "                      [--no-isolate] [CASES...]\n\n"
               "Reduces a failing case (one request, fewest heads, smallest head_dim, bisected\n"
               "lengths, smallest page size) while it still fails with the same diagnosis (the\n"
               "family `explain` names; --any-failure: any failure), writes the minimal case as\n"
               "a case file (default ./shrunk-<name>.json) and prints the command that reruns it.\n"
               "B is a built-in backend or one NAME:BACKEND of a --plugin / --adapter (the rerun\n"
               "command registers it again).  Each attempt runs in an isolated worker.\n");
        return SWA_EXIT_OK;
    }
    if (rc)
        return rc;
    swa_case_list all = {0};
    const swa_case *orig;
    const swa_device_ops *dev;
    if ((rc = open_one_case(&o, "shrink", &all, &orig, &dev)) != 0)
        return rc;
    const swa_backend *bs[SWA_BACKEND_COUNT + SWA_EXTERNAL_MAX];
    swa_run_config cfg = {.device = dev, .mutant = o.mutant, .quiet = true, .no_isolate = true, .argv0 = prog,
                          .explain_failures = true};
    int tries = 0;
    shrink_goal goal = {.o = &o, .any_failure = o.any_failure, .a = malloc(sizeof(attempt))};
    if (case_backends(&o, orig, bs, (int)(sizeof bs / sizeof bs[0])) != 1) {
        fprintf(stderr, "swadiff shrink: case %s does not run backend %s\n", o.id, o.backend);
        free(goal.a);
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    const swa_backend *b = bs[0];
    if (!goal.a || !still_fails(&cfg, orig, b, &tries, &goal)) {
        if (goal.a)
            fprintf(stderr, "swadiff shrink: %s does not fail on %s with %s%s%s (%s: %s): nothing to shrink\n",
                    o.id, b->name, dev->name, o.mutant ? " under mutant " : "",
                    o.mutant ? swa_mutant_get(o.mutant)->name : "", swa_outcome_name(goal.a->r.outcome),
                    goal.a->r.message[0] ? goal.a->r.message : "no message");
        free(goal.a);
        swa_case_list_free(&all);
        return goal.a ? SWA_EXIT_USAGE : SWA_EXIT_RUNTIME;
    }
    swa_case cur, cand;
    if (swa_case_copy(&cur, orig) != 0) {
        free(goal.a);
        swa_case_list_free(&all);
        return SWA_EXIT_RUNTIME;
    }
    if (!swa_external_is(b)) /* an external backend runs every case: keep the file's list */
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
    free(goal.a);
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
    char externals[4096] = "";
    if (swa_external_is(b))
        swa_external_options(externals, sizeof externals);
    printf("wrote %s\nrerun: %s run %s --backend %s --device %s%s%s%s\n", path, prog, path, b->name, dev->name,
           o.mutant ? " --mutant " : "", o.mutant ? swa_mutant_get(o.mutant)->name : "", externals);
    swa_case_free(&cur);
    swa_case_list_free(&all);
    return SWA_EXIT_OK;
}
