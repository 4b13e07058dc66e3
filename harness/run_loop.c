/* run_loop.c — runs the selected cases in an isolated worker process.
 *
 * Why a worker: a backend that faults on the device (illegal address,
 * launch failure) leaves a sticky CUDA error that poisons the whole
 * process, and a kernel that hangs never returns.  The parent never touches
 * the device; a forked worker runs (case, backend) pairs in order and
 * streams each result back over a pipe.  If the worker dies, reports a
 * device error, or overruns --timeout, the parent records an `error` result
 * for the pair in flight, starts a fresh worker at the next pair, and every
 * finished result is already in the reports.
 *
 * Test hooks: SWADIFF_TEST_FAULT=<id glob> makes the worker crash (SIGSEGV)
 * when it starts a matching case, SWADIFF_TEST_HANG=<id glob> makes it hang
 * — the simulated faults of tests/test_cli.c.
 *
 * --no-isolate (SWADIFF_NO_ISOLATE=1) runs in-process, for debuggers. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/report_console.h"
#include "harness/explain.h"
#include "harness/report.h"
#include "harness/run.h"

enum { MSG_START = 1, MSG_RESULT = 2, MSG_CASE_ERROR = 3 };

typedef struct msg_header {
    int type;
    int sel;         /* index into the selected list */
    int backend;     /* index into the case's backend list */
    int ratio_count; /* floats following a MSG_RESULT */
} msg_header;

/* The backends a case runs: the built-in ones it names, in registry order,
 * then every registered external backend; both filtered by --backend. */
#define MAX_CASE_BACKENDS (SWA_BACKEND_COUNT + SWA_EXTERNAL_MAX)
static int case_backends(const swa_run_config *cfg, const swa_case *c, const swa_backend **out)
{
    int n, k = 0;
    const swa_backend *const *all = swa_backends(&n);
    for (int i = 0; i < n; i++) {
        if (!(c->backends & all[i]->flag))
            continue;
        if ((cfg->backend_mask || cfg->backends_selected) && !(cfg->backend_mask & all[i]->flag))
            continue;
        out[k++] = all[i];
    }
    const swa_backend *const *ext = swa_external_backends(&n);
    for (int i = 0; i < n; i++) {
        bool selected = !cfg->backends_selected;
        for (int g = 0; !selected && g < cfg->num_external_globs; g++)
            selected = fnmatch(cfg->external_globs[g], ext[i]->name, 0) == 0;
        if (selected)
            out[k++] = ext[i];
    }
    return k;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void run_and_explain(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b,
                            swa_result *r)
{
    void *out = NULL;
    float *lse = NULL;
    bool want = cfg->explain_failures;
    swa_run_one(cfg, ctx, b, r, want ? &out : NULL, want ? &lse : NULL);
    if (r->outcome == SWA_OUTCOME_FAILED && want && out)
        swa_explain_attach(cfg, ctx, b, r, out, lse);
    free(out);
    free(lse);
}

/* A result crosses the pipe as the struct, then (when it has one) its
 * (row, head) matrix and the per-row arrays that share its allocation. */
static void send_result(int fd, int sel, int b, const swa_result *r)
{
    msg_header h = {MSG_RESULT, sel, b, 0};
    if (r->has_compare && r->cmp.row_head_ratio)
        h.ratio_count = r->cmp.rows * r->cmp.heads;
    write_all(fd, &h, sizeof h);
    write_all(fd, r, sizeof *r);
    if (h.ratio_count) {
        write_all(fd, r->cmp.row_head_ratio, sizeof(float) * (size_t)h.ratio_count);
        write_all(fd, r->cmp.row_request, sizeof(int) * (size_t)r->cmp.rows);
        write_all(fd, r->cmp.row_past_edge, sizeof(int) * (size_t)r->cmp.rows);
    }
}

static int receive_matrix(int fd, swa_result *r, int count)
{
    r->cmp.row_head_ratio = NULL;
    r->cmp.row_request = NULL;
    r->cmp.row_past_edge = NULL;
    if (count <= 0)
        return 0;
    int rows = r->cmp.rows, heads = r->cmp.heads, row_bin = r->cmp.row_bin;
    if (rows <= 0 || heads <= 0 || (long long)rows * heads != count ||
        swa_compare_result_alloc_matrix(&r->cmp, rows, heads) != 0)
        return -1;
    r->cmp.row_bin = row_bin;
    if (read_all(fd, r->cmp.row_head_ratio, sizeof(float) * (size_t)count) != 0 ||
        read_all(fd, r->cmp.row_request, sizeof(int) * (size_t)rows) != 0 ||
        read_all(fd, r->cmp.row_past_edge, sizeof(int) * (size_t)rows) != 0) {
        swa_compare_result_free(&r->cmp);
        return -1;
    }
    return 0;
}

/* Runs pairs from (sel0, b0) on; exits 0 when done, 4 after a device error
 * (the parent restarts a fresh process). */
static void worker_main(const swa_run_config *cfg, const swa_case_list *all, const int *selected,
                        int nsel, int sel0, int b0, int fd)
{
    const char *fault = getenv("SWADIFF_TEST_FAULT");
    const char *hang = getenv("SWADIFF_TEST_HANG");
    for (int s = sel0; s < nsel; s++) {
        const swa_case *c = &all->cases[selected[s]];
        const swa_backend *bs[MAX_CASE_BACKENDS];
        int nb = case_backends(cfg, c, bs);
        int first = s == sel0 ? b0 : 0;
        if (first >= nb)
            continue;
        msg_header start = {MSG_START, s, first, 0};
        write_all(fd, &start, sizeof start);
        if (fault && fnmatch(fault, c->id, 0) == 0)
            raise(SIGSEGV);
        if (hang && fnmatch(hang, c->id, 0) == 0)
            for (;;)
                pause();
        swa_case_ctx ctx;
        swa_error err = {0};
        if (swa_case_ctx_init_dump(&ctx, c, cfg->device, cfg->dump_dir, &err) != SWA_OK) {
            msg_header h = {MSG_CASE_ERROR, s, first, 0};
            write_all(fd, &h, sizeof h);
            write_all(fd, &err, sizeof err);
            if (err.status == SWA_ERR_DEVICE)
                _exit(4);
            continue;
        }
        for (int b = first; b < nb; b++) {
            msg_header st = {MSG_START, s, b, 0};
            write_all(fd, &st, sizeof st);
            swa_result r;
            run_and_explain(cfg, &ctx, bs[b], &r);
            send_result(fd, s, b, &r);
            bool device_fault = r.outcome == SWA_OUTCOME_ERROR && r.error_status == SWA_ERR_DEVICE;
            swa_compare_result_free(&r.cmp);
            if (device_fault) {
                swa_case_ctx_free(&ctx);
                _exit(4);
            }
        }
        swa_case_ctx_free(&ctx);
    }
    _exit(0);
}

/* A signal that asks the run to stop (SIGINT, SIGTERM, SIGHUP): the loop
 * sees it between messages, kills the worker, records the run as
 * incomplete and writes every report before exiting. */
static volatile sig_atomic_t stop_signal;
static void on_stop_signal(int sig) { stop_signal = sig; }

typedef struct loop_state {
    const swa_run_config *cfg;
    const swa_case_list *all;
    const int *selected;
    int nsel;
    swa_run_results *rr;
    swa_report *report;
    swa_console *console;
    int done;
    int total_pairs;
    bool report_warned;
} loop_state;

static void record(loop_state *ls, swa_result *r)
{
    ls->done++;
    if (ls->report) {
        swa_error err = {0};
        if (swa_report_add(ls->report, r, &err) != SWA_OK && !ls->report_warned) {
            fprintf(stderr, "swadiff: warning: report: %s\n", err.message);
            ls->report_warned = true;
        }
    }
    if (ls->console)
        swa_console_add(ls->console, r);
    swa_run_results_add(ls->rr, r);
}

/* A result for a pair that never produced one (crash, timeout, case error). */
static void record_error(loop_state *ls, int sel, int b, const char *message)
{
    const swa_case *c = &ls->all->cases[ls->selected[sel]];
    const swa_backend *bs[MAX_CASE_BACKENDS];
    int nb = case_backends(ls->cfg, c, bs);
    if (b >= nb)
        return;
    swa_result r;
    swa_result_init(ls->cfg, c, bs[b]->name, &r);
    r.outcome = SWA_OUTCOME_ERROR;
    snprintf(r.message, sizeof r.message, "%s", message);
    record(ls, &r);
}

int swa_run_count_pairs(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int nsel)
{
    int total = 0;
    const swa_backend *bs[MAX_CASE_BACKENDS];
    for (int s = 0; s < nsel; s++)
        total += case_backends(cfg, &all->cases[selected[s]], bs);
    return total;
}

static void run_in_process(loop_state *ls)
{
    for (int s = 0; s < ls->nsel; s++) {
        const swa_case *c = &ls->all->cases[ls->selected[s]];
        const swa_backend *bs[MAX_CASE_BACKENDS];
        int nb = case_backends(ls->cfg, c, bs);
        if (!nb)
            continue;
        swa_case_ctx ctx;
        swa_error err = {0};
        if (swa_case_ctx_init_dump(&ctx, c, ls->cfg->device, ls->cfg->dump_dir, &err) != SWA_OK) {
            for (int b = 0; b < nb; b++)
                record_error(ls, s, b, err.message);
            continue;
        }
        for (int b = 0; b < nb && !stop_signal; b++) {
            swa_result r;
            run_and_explain(ls->cfg, &ctx, bs[b], &r);
            record(ls, &r);
        }
        swa_case_ctx_free(&ctx);
        if (stop_signal)
            return;
    }
}

static void describe_exit(int status, char *buf, size_t n)
{
    if (WIFSIGNALED(status))
        snprintf(buf, n, "the worker process died with signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
        snprintf(buf, n, "device error: the worker restarted after a sticky device error");
    else
        snprintf(buf, n, "the worker process exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void run_isolated(loop_state *ls)
{
    int sel = 0, b = 0; /* next pair to run */
    while (sel < ls->nsel) {
        int fds[2];
        if (pipe(fds) != 0) {
            perror("swadiff: pipe");
            run_in_process(ls);
            return;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("swadiff: fork");
            close(fds[0]);
            close(fds[1]);
            run_in_process(ls);
            return;
        }
        if (pid == 0) {
            close(fds[0]);
            /* never outlive the harness: a killed parent takes its worker
             * (and, through the worker, any adapter) with it */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() == 1)
                _exit(0);
            signal(SIGPIPE, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            signal(SIGHUP, SIG_DFL);
            worker_main(ls->cfg, ls->all, ls->selected, ls->nsel, sel, b, fds[1]);
        }
        close(fds[1]);
        int cur_sel = sel, cur_b = b;
        bool in_flight = false, timed_out = false;
        double deadline = 0;
        for (;;) {
            int wait_ms = -1;
            if (in_flight && ls->cfg->timeout > 0) {
                double left = deadline - swa_now();
                wait_ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
            }
            if (stop_signal) {
                kill(pid, SIGKILL);
                break;
            }
            struct pollfd pfd = {fds[0], POLLIN, 0};
            int pr = poll(&pfd, 1, wait_ms);
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr == 0) {
                timed_out = true;
                kill(pid, SIGKILL);
                break;
            }
            msg_header h;
            if (read_all(fds[0], &h, sizeof h) != 0)
                break; /* worker gone */
            if (h.type == MSG_START) {
                cur_sel = h.sel;
                cur_b = h.backend;
                in_flight = true;
                deadline = swa_now() + ls->cfg->timeout;
            } else if (h.type == MSG_RESULT) {
                swa_result r;
                if (read_all(fds[0], &r, sizeof r) != 0)
                    break;
                if (receive_matrix(fds[0], &r, h.ratio_count) != 0)
                    break;
                record(ls, &r);
                in_flight = false;
                cur_sel = h.sel;
                cur_b = h.backend + 1;
            } else if (h.type == MSG_CASE_ERROR) {
                swa_error err;
                if (read_all(fds[0], &err, sizeof err) != 0)
                    break;
                const swa_backend *bs[MAX_CASE_BACKENDS];
                int nb = case_backends(ls->cfg, &ls->all->cases[ls->selected[h.sel]], bs);
                for (int k = h.backend; k < nb; k++)
                    record_error(ls, h.sel, k, err.message);
                in_flight = false;
                cur_sel = h.sel + 1;
                cur_b = 0;
            }
        }
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (stop_signal)
            return; /* the pair in flight has no result: the run is incomplete */
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !timed_out)
            return; /* worker finished everything */
        if (in_flight) {
            char msg[256];
            if (timed_out)
                snprintf(msg, sizeof msg, "timeout: no result within %.3g s (--timeout); the worker was killed",
                         ls->cfg->timeout);
            else
                describe_exit(status, msg, sizeof msg);
            record_error(ls, cur_sel, cur_b, msg);
            cur_b++;
        }
        /* resume at the next pair */
        sel = cur_sel;
        b = cur_b;
        const swa_backend *bs[MAX_CASE_BACKENDS];
        while (sel < ls->nsel && b >= case_backends(ls->cfg, &ls->all->cases[ls->selected[sel]], bs)) {
            sel++;
            b = 0;
        }
    }
}

/* One run per report folder: an exclusive lock on DIR/.swadiff.lock,
 * holding the holder's pid and command line for the message. */
static int lock_report_dir(const char *dir, const swa_environment *env)
{
    char path[SWA_PATH_MAX + 32];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "swadiff: --report %s: cannot create the folder: %s\n", dir, strerror(errno));
        return -2;
    }
    snprintf(path, sizeof path, "%s/.swadiff.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "swadiff: --report %s: cannot open %s: %s\n", dir, path, strerror(errno));
        return -2;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char holder[600] = "";
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        char *nl = strchr(holder, '\n');
        if (nl && nl[1] == '\0')
            *nl = '\0';
        fprintf(stderr, "swadiff: --report %s: another swadiff run writes this folder (%s); give each run "
                        "its own --report folder\n", dir, holder[0] ? holder : "holder unknown");
        close(fd);
        return -1;
    }
    if (ftruncate(fd, 0) == 0) {
        char text[1200];
        int len = snprintf(text, sizeof text, "pid %d: %s\n", (int)getpid(), env->command_line);
        (void)!pwrite(fd, text, (size_t)(len < (int)sizeof text ? len : (int)sizeof text - 1), 0);
    }
    return fd; /* held until the process exits */
}

int swa_run_selected(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int nsel,
                     const char *report_dir, swa_run_results *rr)
{
    loop_state ls = {cfg, all, selected, nsel, rr, NULL, NULL, 0, 0, false};
    ls.total_pairs = swa_run_count_pairs(cfg, all, selected, nsel);
    rr->expected = ls.total_pairs;
    int lock_fd = -1;
    if (report_dir) {
        lock_fd = lock_report_dir(report_dir, &rr->env);
        if (lock_fd < 0)
            return SWA_EXIT_USAGE;
        swa_error err = {0};
        ls.report = swa_report_open(report_dir, &rr->env, &err);
        if (!ls.report) {
            fprintf(stderr, "swadiff: --report %s: %s\n", report_dir, err.message);
            close(lock_fd);
            return SWA_EXIT_USAGE;
        }
        swa_report_set_expected(ls.report, ls.total_pairs);
        /* results.jsonl gets every result at once (fsync'ed); the three
         * whole-run files are rewritten at most every 2 s and at the end */
        swa_report_set_flush_interval(ls.report, 2.0);
    }
    /* --quiet drops the per-result lines, never the summary and verdict */
    ls.console = swa_console_open(stdout, cfg->quiet ? 0 : ls.total_pairs, false);
    if (ls.console && cfg->quiet)
        swa_console_set_quiet(ls.console);
    /* stop cleanly on a signal; a closed stdout (| head) must not kill the
     * run: writes then fail with EPIPE and the reports are still written */
    struct sigaction sa = {0}, old_int, old_term, old_hup, old_pipe;
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    struct sigaction ign = {0};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_pipe);
    const char *no_iso = getenv("SWADIFF_NO_ISOLATE");
    if ((no_iso && *no_iso && strcmp(no_iso, "0")) || cfg->no_isolate)
        run_in_process(&ls);
    else
        run_isolated(&ls);
    int sig = stop_signal;
    rr->duration = swa_now() - rr->started;
    if (sig || ls.done < ls.total_pairs) {
        rr->incomplete = true;
        if (sig)
            snprintf(rr->incomplete_reason, sizeof rr->incomplete_reason,
                     "interrupted by signal %d (%s) after %d of %d results", sig, strsignal(sig), ls.done,
                     ls.total_pairs);
        else
            snprintf(rr->incomplete_reason, sizeof rr->incomplete_reason, "only %d of %d results were produced",
                     ls.done, ls.total_pairs);
    }
    rr->exitcode = swa_run_results_summary(rr, NULL, NULL, NULL, NULL);
    if (ls.console)
        swa_console_close(ls.console, rr, report_dir);
    if (ls.report) {
        swa_error err = {0};
        if (swa_report_finish(ls.report, rr, &err) != SWA_OK) {
            fprintf(stderr, "swadiff: --report %s: %s\n", report_dir, err.message);
            if (rr->exitcode == SWA_EXIT_OK)
                rr->exitcode = SWA_EXIT_RUNTIME;
        }
    }
    if (lock_fd >= 0)
        close(lock_fd);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    return rr->exitcode;
}
