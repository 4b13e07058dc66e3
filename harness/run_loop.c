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

#include <cblas.h>

#include "harness/controls.h"
#include "harness/report_console.h"
#include "harness/explain.h"
#include "harness/report.h"
#include "harness/run.h"
#include "harness/xfail.h"

#ifdef SWADIFF_COVERAGE
void __gcov_dump(void); /* libgcov */
#endif

enum { MSG_START = 1, MSG_RESULT = 2, MSG_CASE_ERROR = 3, MSG_IDLE = 4 };

typedef struct msg_header {
    int type;
    int sel;         /* index into the selected list */
    int backend;     /* index into the case's backend list */
    int ratio_count; /* floats following a MSG_RESULT */
} msg_header;

/* The backends a case runs: the built-in ones it names, in registry order,
 * then every registered external backend; both filtered by --backend. */
#define MAX_CASE_BACKENDS (SWA_BACKEND_COUNT + SWA_EXTERNAL_MAX)
/* A worker's own exit after a sticky device error (a kernel fault that
 * poisons the context): a status no plug-in is likely to exit with, so a
 * plug-in's exit(4) reads as what it is. */
#define SWA_WORKER_EXIT_DEVICE 213

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
        if (swa_external_is_control(ext[i]->name)) /* the controls run before the run, not in it */
            continue;
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
                            swa_result *r, bool first_of_case)
{
    void *out = NULL;
    float *lse = NULL;
    bool want = cfg->explain_failures;
    swa_run_one(cfg, ctx, b, r, want ? &out : NULL, want ? &lse : NULL);
    if (first_of_case) {
        r->stage[SWA_STAGE_DATA] = ctx->t_data;
        r->stage[SWA_STAGE_REFERENCE] = ctx->t_reference;
    }
    double t0 = swa_now();
    /* a result already diagnosed (nondeterministic: run 1 matched the
     * reference) has no mismatch for the mask hypotheses to explain */
    if (r->outcome == SWA_OUTCOME_FAILED && want && out && !r->diagnosis[0])
        swa_explain_attach(cfg, ctx, b, r, out, lse);
    r->stage[SWA_STAGE_COMPARE] += swa_now() - t0; /* the diagnosis is part of the comparison */
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

/* A worker: reads commands {sel, b0} ("run case sel from its backend b0
 * on") until {-1}, answers MSG_START / MSG_RESULT / MSG_CASE_ERROR and one
 * MSG_IDLE per command; exits 0 at the end, 4 after a sticky device error
 * (the parent starts a fresh one). */
typedef struct worker_cmd { int sel, b0, count; } worker_cmd; /* cases sel .. sel+count-1 */

static void worker_main(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int cmd_fd,
                        int fd)
{
    const char *fault = getenv("SWADIFF_TEST_FAULT");
    const char *hang = getenv("SWADIFF_TEST_HANG");
    worker_cmd cmd;
    while (read_all(cmd_fd, &cmd, sizeof cmd) == 0 && cmd.sel >= 0) {
      for (int s = cmd.sel; s < cmd.sel + cmd.count; s++) {
        const swa_case *c = &all->cases[selected[s]];
        const swa_backend *bs[MAX_CASE_BACKENDS];
        int nb = case_backends(cfg, c, bs);
        int first = s == cmd.sel ? cmd.b0 : 0;
        if (first < nb) {
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
                    _exit(SWA_WORKER_EXIT_DEVICE);
            } else {
                for (int bi = first; bi < nb; bi++) {
                    msg_header st = {MSG_START, s, bi, 0};
                    write_all(fd, &st, sizeof st);
                    swa_result r;
                    run_and_explain(cfg, &ctx, bs[bi], &r, bi == first);
                    send_result(fd, s, bi, &r);
                    bool device_fault = r.outcome == SWA_OUTCOME_ERROR && r.error_status == SWA_ERR_DEVICE;
                    swa_compare_result_free(&r.cmp);
                    if (device_fault) {
                        swa_case_ctx_free(&ctx);
                        _exit(SWA_WORKER_EXIT_DEVICE);
                    }
                }
                swa_case_ctx_free(&ctx);
            }
        }
      }
        msg_header idle = {MSG_IDLE, cmd.sel, 0, 0};
        write_all(fd, &idle, sizeof idle);
    }
    /* the worker's adapters leave with it, and their scratch folders too */
    swa_external_stop_adapters();
#ifdef SWADIFF_COVERAGE
    /* the coverage build (ci/coverage.sh): _exit skips gcov's exit handler,
     * so a worker writes its counters first */
    __gcov_dump();
#endif
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
    int *first_pair;   /* [nsel] pair index of each selected case's first backend */
} loop_state;

static void record(loop_state *ls, swa_result *r, int sel, int b)
{
    double t0 = swa_now();
    ls->done++;
    r->seq = ls->first_pair ? ls->first_pair[sel] + b : ls->done;
    swa_xfail_apply(swa_xfail_reason(ls->cfg->xfail, &ls->all->cases[ls->selected[sel]], r->backend), r);
    swa_controls_mark(&ls->rr->controls, r);
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
    ls->rr->report_seconds += swa_now() - t0;
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
    record(ls, &r, sel, b);
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
            run_and_explain(ls->cfg, &ctx, bs[b], &r, b == 0);
            record(ls, &r, s, b);
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
    else if (WIFEXITED(status) && WEXITSTATUS(status) == SWA_WORKER_EXIT_DEVICE)
        snprintf(buf, n, "device error: the worker restarted after a sticky device error");
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        snprintf(buf, n, "the worker process exited (status 0) before sending this result: code in it (a "
                 "plug-in's) closed swadiff's descriptors or ended the process");
    else
        snprintf(buf, n, "the worker process exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

void swa_run_worker_threads(int jobs)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int per = jobs > 0 && cores > 0 ? (int)(cores / jobs) : 1;
    openblas_set_num_threads(swa_blas_threads_cap(per > 0 ? per : 1)); /* ulimit -v: fewer */
}

/* One isolated worker as the parent sees it. */
typedef struct worker {
    pid_t pid;             /* 0: not running */
    int cmd_fd, res_fd;    /* parent ends */
    int slot;              /* which GPU / lane: SWADIFF_WORKER_SLOT, CUDA/HIP_VISIBLE_DEVICES */
    bool busy;             /* a command is in flight */
    int cmd_sel, cmd_end;  /* the cases of that command: [cmd_sel, cmd_end) */
    int cur_sel, cur_b;    /* the pair in flight (after MSG_START) */
    bool in_flight;
    double deadline;
    int failures;          /* consecutive deaths without a result */
} worker;

/* The report folder's lock (swa_run_selected), closed in every worker. */
static int report_lock_fd = -1;

static int start_worker(loop_state *ls, worker *w)
{
    int cmd[2], res[2];
    if (pipe(cmd) != 0)
        return -1;
    if (pipe(res) != 0) {
        close(cmd[0]);
        close(cmd[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(cmd[0]); close(cmd[1]); close(res[0]); close(res[1]);
        return -1;
    }
    if (pid == 0) {
        close(cmd[1]);
        close(res[0]);
        /* its own process group, which the parent ends with it: what a
         * plug-in forks dies with the worker */
        setpgid(0, 0);
        /* the report folder's lock stays the parent's: a helper a plug-in
         * forks must not keep holding it after the run */
        if (report_lock_fd >= 0)
            close(report_lock_fd);
        /* never outlive the harness: a killed parent takes its worker
         * (and, through the worker, any adapter) with it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(0);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        /* pin this worker before the device runtime starts (it starts here,
         * never in the parent): one GPU per worker */
        const swa_run_config *cfg = ls->cfg;
        if (cfg->num_gpus > 0) {
            char id[16];
            snprintf(id, sizeof id, "%d", cfg->gpus[w->slot % cfg->num_gpus]);
            setenv(cfg->device->kind == SWA_DEVICE_HIP ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES", id, 1);
        }
        swa_run_worker_threads(cfg->jobs);
        worker_main(cfg, ls->all, ls->selected, cmd[0], res[1]);
    }
    setpgid(pid, pid); /* also here: no window in which a kill of the group misses it */
    close(cmd[0]);
    close(res[1]);
    w->pid = pid;
    w->cmd_fd = cmd[1];
    w->res_fd = res[0];
    w->busy = w->in_flight = false;
    return 0;
}

static void stop_worker(worker *w, bool kill_it, int *status)
{
    if (!w->pid)
        return;
    if (kill_it) {
        kill(-w->pid, SIGKILL); /* the worker's process group: it and what its kernels forked */
        kill(w->pid, SIGKILL);
    }
    close(w->cmd_fd);
    close(w->res_fd);
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
    }
    kill(-w->pid, SIGKILL); /* a helper a plug-in forked must not outlive its worker */
    if (status)
        *status = st;
    w->pid = 0;
}

/* True (and reaped, status filled) when w has exited and nothing it wrote
 * is left unread in its result pipe: a worker whose pipe something it
 * forked holds open sends no EOF.  Checked without reaping first, so that
 * messages it wrote before it exited are still read. */
static bool worker_exited_drained(worker *w, int *status)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)w->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != w->pid)
        return false;
    struct pollfd q = {w->res_fd, POLLIN, 0};
    if (poll(&q, 1, 0) > 0 && (q.revents & POLLIN))
        return false; /* read what it sent first */
    return waitpid(w->pid, status, WNOHANG) == w->pid;
}

static bool send_cmd(worker *w, int sel, int b0, int count)
{
    worker_cmd cmd = {sel, b0, count};
    w->busy = true;
    w->cmd_sel = sel;
    w->cmd_end = sel + count;
    w->cur_sel = sel;
    w->cur_b = b0;
    w->in_flight = false;
    return write_all(w->cmd_fd, &cmd, sizeof cmd) == 0;
}

/* Reads one message of w; returns false when the worker is gone. */
static bool read_message(loop_state *ls, worker *w)
{
    msg_header h;
    if (read_all(w->res_fd, &h, sizeof h) != 0)
        return false;
    if (h.type == MSG_START) {
        w->cur_sel = h.sel;
        w->cur_b = h.backend;
        w->in_flight = true;
        /* --timeout is per run: a pair with --repeat N gets N times it */
        w->deadline = swa_now() + ls->cfg->timeout * (ls->cfg->repeat > 1 ? ls->cfg->repeat : 1);
    } else if (h.type == MSG_RESULT) {
        swa_result r;
        if (read_all(w->res_fd, &r, sizeof r) != 0 || receive_matrix(w->res_fd, &r, h.ratio_count) != 0)
            return false;
        record(ls, &r, h.sel, h.backend);
        w->in_flight = false;
        w->failures = 0;
        w->cur_sel = h.sel;
        w->cur_b = h.backend + 1;
    } else if (h.type == MSG_CASE_ERROR) {
        swa_error err;
        if (read_all(w->res_fd, &err, sizeof err) != 0)
            return false;
        const swa_backend *bs[MAX_CASE_BACKENDS];
        int nb = case_backends(ls->cfg, &ls->all->cases[ls->selected[h.sel]], bs);
        for (int k = h.backend; k < nb; k++)
            record_error(ls, h.sel, k, err.message);
        w->in_flight = false;
        w->cur_b = nb;
    } else if (h.type == MSG_IDLE) {
        w->busy = false;
        w->in_flight = false;
    }
    return true;
}

/* N isolated workers pull whole cases (one context, every backend) from one
 * queue in selection order.  A worker that dies or overruns --timeout costs
 * the pair in flight; a fresh worker takes the rest of that case.  Results
 * carry their pair index, so the reports are the same for any N. */
static void run_isolated(loop_state *ls)
{
    int jobs = ls->cfg->jobs > 0 ? ls->cfg->jobs : 1;
    if (jobs > ls->nsel)
        jobs = ls->nsel > 0 ? ls->nsel : 1;
    worker *ws = calloc((size_t)jobs, sizeof *ws);
    int *resume_b = calloc((size_t)ls->nsel + 1, sizeof *resume_b); /* requeued remainder of a case */
    int *requeue = calloc((size_t)ls->nsel + 1, sizeof *requeue);
    struct pollfd *pfd = calloc((size_t)jobs, sizeof *pfd);
    int next = 0, nrequeue = 0, live = 0, why = ENOMEM;
    for (int i = 0; ws && resume_b && requeue && pfd && i < jobs; i++) {
        ws[i].slot = i;
        if (start_worker(ls, &ws[i]) == 0)
            live++;
        else
            why = errno;
    }
    if (!live) {
        /* never fall back to this process: that would drop --timeout and
         * the containment the results rely on.  Every pair is an error. */
        char msg[400];
        snprintf(msg, sizeof msg, "no worker process could be started (%s): the isolated run cannot go on (raise "
                 "`ulimit -n` / `ulimit -u`, use fewer --jobs, or --no-isolate, which has no --timeout)",
                 strerror(why));
        fprintf(stderr, "swadiff: %s\n", msg);
        for (int s = 0; s < ls->nsel; s++) {
            const swa_backend *bs[MAX_CASE_BACKENDS];
            int nb = case_backends(ls->cfg, &ls->all->cases[ls->selected[s]], bs);
            for (int b = 0; b < nb; b++)
                record_error(ls, s, b, msg);
        }
        free(ws); free(resume_b); free(requeue); free(pfd);
        return;
    }
    for (;;) {
        if (stop_signal)
            break;
        /* hand out work */
        bool pending = false;
        for (int i = 0; i < jobs; i++) {
            worker *w = &ws[i];
            if (!w->pid || w->busy)
                continue;
            if (nrequeue > 0) {
                int sel = requeue[--nrequeue];
                if (!send_cmd(w, sel, resume_b[sel], 1))
                    w->busy = true; /* the poll below sees the worker gone */
            } else if (next < ls->nsel) {
                /* consecutive cases with the same inputs (a window sweep) go to
                 * one worker, which makes the tensors once for all of them;
                 * batches stay small enough that every worker gets work */
                int left = ls->nsel - next, cap = left / jobs;
                cap = cap < 1 ? 1 : cap > 16 ? 16 : cap;
                int count = 1;
                while (count < cap && swa_case_same_inputs(&ls->all->cases[ls->selected[next]],
                                                           &ls->all->cases[ls->selected[next + count]]))
                    count++;
                if (!send_cmd(w, next, 0, count))
                    w->busy = true;
                next += count;
            }
        }
        int nfd = 0;
        int wait_ms = -1;
        for (int i = 0; i < jobs; i++) {
            pfd[i] = (struct pollfd){ws[i].pid && ws[i].busy ? ws[i].res_fd : -1, POLLIN, 0};
            if (ws[i].pid && ws[i].busy) {
                pending = true;
                nfd++;
                if (ws[i].in_flight && ls->cfg->timeout > 0) {
                    double left = ws[i].deadline - swa_now();
                    int ms = left <= 0 ? 0 : left > 3600 ? 3600000 : (int)(left * 1000) + 1; /* poll again later */
                    if (wait_ms < 0 || ms < wait_ms)
                        wait_ms = ms;
                }
            }
        }
        if (!pending)
            break; /* queue empty, every worker idle */
        /* wake up twice a second to reap workers that died while something
         * they forked still holds their result pipe open (no EOF comes) */
        if (wait_ms < 0 || wait_ms > 500)
            wait_ms = 500;
        int pr = poll(pfd, (nfds_t)jobs, wait_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        for (int i = 0; i < jobs; i++) {
            worker *w = &ws[i];
            if (!w->pid || !w->busy)
                continue;
            bool timed_out = w->in_flight && ls->cfg->timeout > 0 && swa_now() >= w->deadline;
            bool gone = false, reaped = false;
            int status = 0;
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                gone = !read_message(ls, w);
            else if (timed_out)
                gone = true;
            else if (worker_exited_drained(w, &status))
                gone = reaped = true; /* exited; its pipe is held open by something it forked */
            if (!gone)
                continue;
            if (reaped) {
                close(w->cmd_fd);
                close(w->res_fd);
                kill(-w->pid, SIGKILL); /* what it left in its process group */
                w->pid = 0;
            }
            /* the result pipe ended: give the worker a moment to exit by
             * itself, so that its own status is reported, not our kill */
            bool still_running = false;
            if (!timed_out && !reaped) {
                double until = swa_now() + 1.0;
                pid_t r;
                while ((r = waitpid(w->pid, &status, WNOHANG)) == 0 && swa_now() < until)
                    usleep(5000);
                if (r == w->pid) {
                    close(w->cmd_fd);
                    close(w->res_fd);
                    kill(-w->pid, SIGKILL);
                    w->pid = 0;
                } else {
                    still_running = true;
                }
            }
            stop_worker(w, true, &status);
            if (w->in_flight) {
                char msg[256];
                if (timed_out)
                    snprintf(msg, sizeof msg, "timeout: no result within %.3g s (--timeout%s); the worker was killed",
                             ls->cfg->timeout * (ls->cfg->repeat > 1 ? ls->cfg->repeat : 1),
                             ls->cfg->repeat > 1 ? " times --repeat" : "");
                else if (still_running)
                    snprintf(msg, sizeof msg, "the worker's result pipe closed while it still ran (code in the "
                             "worker, a plug-in's, closed or broke swadiff's descriptors); swadiff killed it");
                else
                    describe_exit(status, msg, sizeof msg);
                record_error(ls, w->cur_sel, w->cur_b, msg);
                w->cur_b++;
            }
            /* the rest of the case, and of its batch, goes back to the queue */
            const swa_backend *bs[MAX_CASE_BACKENDS];
            if (w->busy && w->cur_b < case_backends(ls->cfg, &ls->all->cases[ls->selected[w->cur_sel]], bs)) {
                resume_b[w->cur_sel] = w->cur_b;
                requeue[nrequeue++] = w->cur_sel;
            }
            for (int later = w->cur_sel + 1; w->busy && later < w->cmd_end; later++) {
                resume_b[later] = 0;
                requeue[nrequeue++] = later;
            }
            w->busy = w->in_flight = false;
            /* a worker that keeps dying without a result is retired (a GPU
             * that fails for good); the others take the queue */
            if (++w->failures < 3 || live == 1)
                start_worker(ls, w);
            if (!w->pid)
                live--;
        }
        if (!live)
            break;
    }
    for (int i = 0; i < jobs; i++) {
        if (!ws[i].pid)
            continue;
        worker_cmd quit = {-1, 0, 0};
        write_all(ws[i].cmd_fd, &quit, sizeof quit);
        stop_worker(&ws[i], stop_signal != 0, NULL);
    }
    free(ws);
    free(resume_b);
    free(requeue);
    free(pfd);
}

int swa_run_selected(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int nsel,
                     const char *report_dir, swa_run_results *rr)
{
    loop_state ls = {cfg, all, selected, nsel, rr, NULL, NULL, 0, 0, false, NULL};
    ls.total_pairs = swa_run_count_pairs(cfg, all, selected, nsel);
    ls.first_pair = malloc(((size_t)nsel + 1) * sizeof *ls.first_pair);
    for (int s = 0, at = 0; ls.first_pair && s < nsel; s++) {
        const swa_backend *bs[MAX_CASE_BACKENDS];
        ls.first_pair[s] = at;
        at += case_backends(cfg, &all->cases[selected[s]], bs);
    }
    rr->expected = ls.total_pairs;
    /* the marshalling controls, when external backends run: before the run,
     * so that every result is marked as it is recorded */
    bool has_plugin = false, has_adapter = false;
    for (int s = 0; s < nsel && !(has_plugin && has_adapter); s++) {
        const swa_backend *bs[MAX_CASE_BACKENDS];
        int nb = case_backends(cfg, &all->cases[selected[s]], bs);
        for (int b = 0; b < nb; b++) {
            int kind = swa_external_kind(bs[b]->name);
            has_plugin |= kind == 0;
            has_adapter |= kind == 1;
        }
    }
    swa_controls_run(cfg, all, selected, nsel, has_plugin, has_adapter, rr);
    int lock_fd = -1;
    if (report_dir) {
        lock_fd = swa_report_lock_dir(report_dir, "--report", &rr->env);
        report_lock_fd = lock_fd;
        if (lock_fd < 0) {
            free(ls.first_pair);
            return SWA_EXIT_USAGE;
        }
        swa_error err = {0};
        ls.report = swa_report_open_selection(report_dir, &rr->env, &rr->selection, &err);
        if (!ls.report) {
            fprintf(stderr, "swadiff: --report %s: %s\n", report_dir, err.message);
            close(lock_fd);
            free(ls.first_pair);
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
    if (cfg->no_isolate) { /* --no-isolate or SWADIFF_NO_ISOLATE=1 (cli_run.c) */
        run_in_process(&ls);
        swa_external_stop_adapters();
    } else {
        run_isolated(&ls);
    }
    int sig = stop_signal;
    free(ls.first_pair);
    /* results arrive in any order from N workers: list them in pair order */
    swa_run_results_sort(rr);
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
            /* a report that cannot be written is a runtime error (3
             * outranks 5 and 0, not a mismatch) */
            if (rr->exitcode == SWA_EXIT_OK || rr->exitcode == SWA_EXIT_NOTHING_COMPARED)
                rr->exitcode = SWA_EXIT_RUNTIME;
        }
    }
    if (lock_fd >= 0)
        close(lock_fd);
    report_lock_fd = -1;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    return rr->exitcode;
}
