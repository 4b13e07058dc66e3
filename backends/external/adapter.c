/* adapter.c — out-of-process adapters (docs/adapter-protocol.md): start
 * the adapter command once per process, frame JSON messages over two
 * pipes (fd 3 requests, fd 4 replies), stage tensors as .npy files in a
 * scratch folder, read the answer back and check its shape and dtype.
 *
 * Every failure of the adapter — it crashes, hangs past the reply timeout,
 * writes garbage, answers the wrong shape or dtype — becomes an error for
 * the (case, backend) in flight, quoting the end of the adapter's log; the
 * adapter is stopped and started afresh for the next pair.
 *
 * Test: tests/test_external.c (numpy_exact over the library, and
 * misbehaving adapters written for the test). */
#include "backends/external/external_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/npy.h"

#define FRAME_MAX (16u << 20)

double swa_adapter_reply_timeout = 600.0;

typedef struct adapter_proc {
    pid_t pid;                /* 0: not running */
    pid_t owner;              /* the process that started it (a forked worker starts its own) */
    int req, rep;             /* our ends: write requests, read replies */
    char scratch[512];
    char kept[512];           /* the last scratch folder kept for its log (an adapter that failed) */
    char log[600];
    unsigned long runs;
} adapter_proc;
static adapter_proc procs[SWA_EXTERNAL_MAX];

/* The adapter child's exit status when it could not set up its descriptors. */
#define SWA_ADAPTER_SETUP_FAILED 212

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The last lines of the adapter's log, for messages. */
static void log_tail(const adapter_proc *ap, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(ap->log, "rb");
    if (!f)
        return;
    char text[4096];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > (long)sizeof text - 1 ? size - (long)sizeof text + 1 : 0;
    fseek(f, from, SEEK_SET);
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    while (got && (text[got - 1] == '\n' || text[got - 1] == ' '))
        text[--got] = '\0';
    /* keep the last 3 lines */
    int lines = 0;
    char *start = text;
    for (char *c = text + got; c > text; c--)
        if (c[-1] == '\n' && ++lines == 3) {
            start = c;
            break;
        }
    for (char *c = start; *c; c++)
        if (*c == '\n')
            *c = '|';
    if (*start)
        snprintf(buf, n, "; adapter log (%s): %s", ap->log, start);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[1200];
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void stop(adapter_proc *ap, bool keep_scratch)
{
    if (ap->pid > 0 && ap->owner == getpid()) {
        close(ap->req);
        close(ap->rep);
        /* give it a moment to leave on EOF, then end its whole group */
        double until = now_mono() + 0.5;
        int status;
        while (waitpid(ap->pid, &status, WNOHANG) == 0) {
            if (now_mono() > until) {
                kill(-ap->pid, SIGKILL);
                kill(ap->pid, SIGKILL);
                waitpid(ap->pid, &status, 0);
                break;
            }
            usleep(10000);
        }
        if (!keep_scratch) {
            remove_tree(ap->scratch);
        } else {
            /* the log of the latest failure stays (its errors cite it); an
             * adapter restarted after every pair does not leave one per pair */
            if (ap->kept[0] && strcmp(ap->kept, ap->scratch))
                remove_tree(ap->kept);
            snprintf(ap->kept, sizeof ap->kept, "%s", ap->scratch);
        }
    }
    ap->pid = 0;
}

static void exit_reason(adapter_proc *ap, char *buf, size_t n);

static swa_status send_frame(adapter_proc *ap, const cJSON *msg, const char *name, swa_error *err)
{
    char *text = cJSON_PrintUnformatted(msg);
    if (!text)
        return swa_error_set(err, SWA_ERR_NOMEM, "adapter %s: no memory for a message", name);
    size_t len = strlen(text);
    char head[32];
    int hl = snprintf(head, sizeof head, "%zu\n", len);
    signal(SIGPIPE, SIG_IGN);
    bool ok = write(ap->req, head, (size_t)hl) == hl;
    for (size_t done = 0; ok && done < len;) {
        ssize_t w = write(ap->req, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        done += w > 0 ? (size_t)w : 0;
    }
    cJSON_free(text);
    if (!ok) {
        /* why the pipe is shut, as after an EOF on the reply pipe: which of
         * the two the adapter's exit shows first is a race */
        char tail[900], why[200];
        exit_reason(ap, why, sizeof why);
        log_tail(ap, tail, sizeof tail);
        return swa_error_set(err, SWA_ERR_INVALID, "adapter %s: cannot send a message: it %s%s", name, why, tail);
    }
    return SWA_OK;
}

/* Reads exactly n bytes before the deadline: 0, -1 EOF/error, -2 timeout. */
static int read_exact(int fd, char *buf, size_t n, double deadline)
{
    size_t used = 0;
    while (used < n) {
        double left = deadline - now_mono();
        if (left <= 0)
            return -2;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, left > 3600 ? 3600000 : (int)(left * 1000) + 1); /* no int overflow: poll again */
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue;
        ssize_t got = read(fd, buf + used, n - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        used += (size_t)got;
    }
    return 0;
}

/* Why the adapter went away, after an EOF. */
static void exit_reason(adapter_proc *ap, char *buf, size_t n)
{
    int status;
    pid_t r = 0;
    if (ap->pid <= 0) { /* reaped before: never waitpid(-1), another child's */
        snprintf(buf, n, "had exited");
        return;
    }
    for (int i = 0; i < 50 && (r = waitpid(ap->pid, &status, WNOHANG)) == 0; i++)
        usleep(10000);
    if (r == ap->pid && WIFEXITED(status) && WEXITSTATUS(status) == SWA_ADAPTER_SETUP_FAILED)
        snprintf(buf, n, "could not set up its process (descriptors for /dev/null, its log or its pipes: "
                 "ulimit -n?), so it exited");
    else if (r == ap->pid && WIFEXITED(status))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
    else if (r == ap->pid && WIFSIGNALED(status))
        snprintf(buf, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, n, "closed its reply pipe");
    if (r == ap->pid)
        ap->pid = -1; /* reaped */
}

/* Receives one frame as a JSON object, or an error naming what went wrong. */
static cJSON *recv_frame(adapter_proc *ap, const char *name, swa_error *err)
{
    double deadline = now_mono() + swa_adapter_reply_timeout;
    char head[16];
    size_t hl = 0;
    int rc = 0;
    for (;;) {
        rc = read_exact(ap->rep, head + hl, 1, deadline);
        if (rc != 0)
            break;
        if (head[hl] == '\n')
            break;
        if (head[hl] < '0' || head[hl] > '9' || hl == 8) {
            head[hl + 1] = '\0';
            char tail[900];
            log_tail(ap, tail, sizeof tail);
            swa_error_set(err, SWA_ERR_INVALID, "adapter %s broke the protocol: expected a frame length "
                          "(decimal digits then a newline), read \"%.*s\"%s", name, (int)hl + 1, head, tail);
            return NULL;
        }
        hl++;
    }
    char tail[900];
    if (rc == -2) {
        log_tail(ap, tail, sizeof tail);
        swa_error_set(err, SWA_ERR_TIMEOUT, "adapter %s did not answer within %.0f s (hung?)%s", name,
                      swa_adapter_reply_timeout, tail);
        return NULL;
    }
    if (rc == -1) {
        char why[128];
        exit_reason(ap, why, sizeof why);
        log_tail(ap, tail, sizeof tail);
        swa_error_set(err, SWA_ERR_INVALID, "adapter %s %s before answering%s", name, why, tail);
        return NULL;
    }
    if (hl == 0) {
        swa_error_set(err, SWA_ERR_INVALID, "adapter %s broke the protocol: empty frame length", name);
        return NULL;
    }
    head[hl] = '\0';
    size_t len = strtoul(head, NULL, 10);
    if (len == 0 || len > FRAME_MAX) {
        swa_error_set(err, SWA_ERR_INVALID, "adapter %s broke the protocol: frame of %zu bytes (1..%u)", name, len,
                      FRAME_MAX);
        return NULL;
    }
    char *body = malloc(len + 1);
    if (!body) {
        swa_error_set(err, SWA_ERR_NOMEM, "adapter %s: no memory for a %zu-byte frame", name, len);
        return NULL;
    }
    rc = read_exact(ap->rep, body, len, deadline);
    if (rc != 0) {
        free(body);
        log_tail(ap, tail, sizeof tail);
        swa_error_set(err, rc == -2 ? SWA_ERR_TIMEOUT : SWA_ERR_INVALID,
                      "adapter %s: frame of %zu bytes %s%s", name, len,
                      rc == -2 ? "not complete before the reply timeout" : "cut short (adapter exited?)", tail);
        return NULL;
    }
    body[len] = '\0';
    cJSON *msg = cJSON_ParseWithLength(body, len);
    if (!msg || !cJSON_IsObject(msg) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(msg, "type"))) {
        swa_error_set(err, SWA_ERR_INVALID, "adapter %s broke the protocol: expected a JSON object with a "
                      "\"type\", got \"%.80s\"", name, body);
        cJSON_Delete(msg);
        free(body);
        return NULL;
    }
    free(body);
    return msg;
}

static const char *msg_type(const cJSON *m) { return cJSON_GetObjectItemCaseSensitive(m, "type")->valuestring; }

/* The folder holding swadiff_adapter.py, so that an adapter anywhere can
 * `import swadiff_adapter`: $SWADIFF_ADAPTER_DIR, else adapters/ beside the
 * binary's folder (a build folder of a checkout), else the installed copy
 * (PREFIX/bin/swadiff -> PREFIX/share/swadiff/adapters, cmake/install.cmake),
 * else, for the binary in the build folder it was linked in (a parent
 * project's add_subdirectory puts it anywhere), the source tree's adapters/,
 * else ./adapters.  Empty when none holds it. */
void swa_adapter_helper_dir(char *buf, size_t n)
{
    char exe[1024], cand[5][1200];
    int nc = 0;
    const char *env = getenv("SWADIFF_ADAPTER_DIR");
    if (env && *env)
        snprintf(cand[nc++], sizeof cand[0], "%s", env);
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(cand[nc++], sizeof cand[0], "%s/../adapters", exe);
            snprintf(cand[nc++], sizeof cand[0], "%s/../share/swadiff/adapters", exe);
#if defined(SWADIFF_BUILD_BINARY_DIR) && defined(SWADIFF_SOURCE_ADAPTER_DIR)
            char built[PATH_MAX];
            if (realpath(SWADIFF_BUILD_BINARY_DIR, built) && strcmp(built, exe) == 0)
                snprintf(cand[nc++], sizeof cand[0], "%s", SWADIFF_SOURCE_ADAPTER_DIR);
#endif
        }
    }
    if (getcwd(exe, sizeof exe))
        snprintf(cand[nc++], sizeof cand[0], "%s/adapters", exe);
    buf[0] = '\0';
    for (int i = 0; i < nc; i++) {
        char probe[1300];
        snprintf(probe, sizeof probe, "%s/swadiff_adapter.py", cand[i]);
        if (access(probe, R_OK) == 0) {
            if (!realpath(cand[i], buf) && n)
                snprintf(buf, n, "%s", cand[i]);
            return;
        }
    }
}

static swa_status start(adapter_proc *ap, const ext_provider *prov, swa_error *err)
{
    const char *tmp = getenv("TMPDIR");
    int need = snprintf(ap->scratch, sizeof ap->scratch, "%s/swadiff-adapter-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
                        prov->name);
    if (need < 0 || (size_t)need >= sizeof ap->scratch - 32) /* room for run-N/ and the files in it */
        return swa_error_set(err, SWA_ERR_INVALID, "adapter %s: TMPDIR is %zu bytes long: the scratch folder's paths "
                             "must fit %zu bytes; set a shorter TMPDIR", prov->name, tmp ? strlen(tmp) : 0,
                             sizeof ap->scratch - 32);
    if (!mkdtemp(ap->scratch))
        return swa_error_set(err, SWA_ERR_IO, "adapter %s: cannot make a scratch folder %s: %s", prov->name,
                             ap->scratch, strerror(errno));
    snprintf(ap->log, sizeof ap->log, "%s/adapter.log", ap->scratch);
    /* worked out before the fork: the child only sets it */
    char helper[PATH_MAX], pythonpath[2 * PATH_MAX + 8] = "";
    swa_adapter_helper_dir(helper, sizeof helper);
    if (helper[0]) {
        const char *old = getenv("PYTHONPATH");
        snprintf(pythonpath, sizeof pythonpath, "%s%s%s", helper, old && *old ? ":" : "", old && *old ? old : "");
    }
    int req[2], rep[2];
    if (pipe(req) != 0 || pipe(rep) != 0)
        return swa_error_set(err, SWA_ERR_IO, "adapter %s: pipe: %s", prov->name, strerror(errno));
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return swa_error_set(err, SWA_ERR_IO, "adapter %s: fork: %s", prov->name, strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int devnull = open("/dev/null", O_RDONLY);
        int log = open(ap->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        /* move the pipe ends out of the way of 3 and 4 first */
        int in = fcntl(req[0], F_DUPFD, 10), out = fcntl(rep[1], F_DUPFD, 10);
        if (devnull < 0 || log < 0 || in < 0 || out < 0) {
            /* said in the log when it opened (the parent quotes it), and by
             * a status of its own: 127 reads as "command not found" */
            if (log >= 0)
                dprintf(log, "swadiff: cannot set up the adapter's process (%s): too few file descriptors? "
                        "(ulimit -n)\n", strerror(errno));
            _exit(SWA_ADAPTER_SETUP_FAILED);
        }
        dup2(devnull, 0);
        dup2(log, 1);
        dup2(log, 2);
        dup2(in, 3);
        dup2(out, 4);
        for (int fd = 5; fd < 1024; fd++)
            close(fd);
        setenv("SWADIFF_PROTOCOL_FDS", "3,4", 1);
        setenv("SWADIFF_PROTOCOL", "1", 1);
        setenv("SWADIFF_SCRATCH", ap->scratch, 1);
        if (pythonpath[0]) {
            setenv("PYTHONPATH", pythonpath, 1);
            setenv("SWADIFF_ADAPTER_DIR", helper, 1);
        }
        /* a simple command runs as `exec COMMAND`: the adapter itself, not a
         * shell above it, then holds the parent-death signal set above (it
         * survives exec), so a worker killed by --timeout or a signal takes
         * a hung adapter with it.  A compound command (pipes, lists,
         * redirections) keeps its shell: write `exec` into it yourself. */
        char simple[sizeof prov->location + 8];
        bool compound = strpbrk(prov->location, ";&|\n`()<>") != NULL || !strncmp(prov->location, "exec ", 5);
        snprintf(simple, sizeof simple, "%s%s", compound ? "" : "exec ", prov->location);
        execl("/bin/sh", "sh", "-c", simple, (char *)NULL);
        fprintf(stderr, "swadiff: cannot run /bin/sh: %s\n", strerror(errno));
        _exit(127);
    }
    close(req[0]);
    close(rep[1]);
    fcntl(req[1], F_SETFD, FD_CLOEXEC);
    fcntl(rep[0], F_SETFD, FD_CLOEXEC);
    ap->pid = pid;
    ap->owner = getpid();
    ap->req = req[1];
    ap->rep = rep[0];
    ap->runs = 0;
    return SWA_OK;
}

/* Starts the adapter and shakes hands; on success *hello is its answer. */
static swa_status start_and_hello(adapter_proc *ap, const ext_provider *prov, cJSON **hello, swa_error *err)
{
    swa_status st = start(ap, prov, err);
    if (st != SWA_OK)
        return st;
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "type", "hello");
    cJSON_AddNumberToObject(msg, "protocol", 1);
    cJSON_AddStringToObject(msg, "swadiff", SWADIFF_VERSION);
    st = send_frame(ap, msg, prov->name, err);
    cJSON_Delete(msg);
    cJSON *reply = st == SWA_OK ? recv_frame(ap, prov->name, err) : NULL;
    if (!reply) {
        stop(ap, true);
        return err->status ? err->status : SWA_ERR_INVALID;
    }
    const cJSON *proto = cJSON_GetObjectItemCaseSensitive(reply, "protocol");
    if (strcmp(msg_type(reply), "hello") != 0 || !cJSON_IsNumber(proto) || proto->valuedouble != 1) {
        char *text = cJSON_PrintUnformatted(reply);
        swa_error_set(err, SWA_ERR_INVALID, "adapter %s: expected {\"type\": \"hello\", \"protocol\": 1, ...}, got "
                      "%.200s", prov->name, text ? text : "?");
        cJSON_free(text);
        cJSON_Delete(reply);
        stop(ap, true);
        return SWA_ERR_INVALID;
    }
    *hello = reply;
    return SWA_OK;
}

static double parse_base(const cJSON *v, bool *ok)
{
    *ok = true;
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "e"))
            return M_E;
        if (!strcmp(v->valuestring, "2"))
            return 2.0;
        if (!strcmp(v->valuestring, "none"))
            return 0.0;
    }
    *ok = false;
    return 0.0;
}

/* A backend's optional "tiles": {"q_rows": [64, 128], "gqa_packed": true,
 * "kv_keys": [32]} (docs/adapter-protocol.md).  Returns NULL or the error. */
static const char *parse_tiles(const cJSON *v, swa_tile_shape *t, char *buf, size_t n)
{
    memset(t, 0, sizeof *t);
    t->gqa_packed = -1;
    if (!v)
        return NULL;
    if (!cJSON_IsObject(v)) {
        snprintf(buf, n, "\"tiles\" must be an object {\"q_rows\": [...], \"gqa_packed\": bool, \"kv_keys\": [...]}");
        return buf;
    }
    for (const cJSON *f = v->child; f; f = f->next) {
        bool rows = !strcmp(f->string, "q_rows"), keys = !strcmp(f->string, "kv_keys");
        if (rows || keys) {
            int *count = rows ? &t->num_q_rows : &t->num_kv_keys, *vals = rows ? t->q_rows : t->kv_keys;
            if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) > SWA_TILE_SHAPES_MAX) {
                snprintf(buf, n, "\"tiles\".%s must be a list of at most %d integers", f->string,
                         SWA_TILE_SHAPES_MAX);
                return buf;
            }
            for (const cJSON *x = f->child; x; x = x->next) {
                if (!cJSON_IsNumber(x) || x->valuedouble != (double)(int)x->valuedouble) {
                    snprintf(buf, n, "\"tiles\".%s must hold integers", f->string);
                    return buf;
                }
                vals[(*count)++] = (int)x->valuedouble;
            }
        } else if (!strcmp(f->string, "gqa_packed")) {
            if (!cJSON_IsBool(f)) {
                snprintf(buf, n, "\"tiles\".gqa_packed must be true or false");
                return buf;
            }
            t->gqa_packed = cJSON_IsTrue(f) ? 1 : 0;
        } else {
            snprintf(buf, n, "\"tiles\" has an unknown key \"%s\" (expected q_rows, gqa_packed, kv_keys)",
                     f->string);
            return buf;
        }
    }
    return swa_tile_shape_check(t, buf, n);
}

swa_status swa_adapter_probe(const ext_provider *prov, ext_backend *out, int max, int *count, char *why, size_t n)
{
    *count = 0;
    adapter_proc ap = {0};
    cJSON *hello = NULL;
    swa_error err = {0};
    if (start_and_hello(&ap, prov, &hello, &err) != SWA_OK) {
        snprintf(why, n, "%s", err.message);
        return SWA_ERR_INVALID;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(hello, "backends");
    swa_status st = SWA_OK;
    if (!cJSON_IsArray(list) || !list->child) {
        snprintf(why, n, "its hello declares no \"backends\" list");
        st = SWA_ERR_INVALID;
    }
    for (const cJSON *b = list ? list->child : NULL; st == SWA_OK && b && *count < max; b = b->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(b, "name");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(b, "description");
        const cJSON *kinds = cJSON_GetObjectItemCaseSensitive(b, "kinds");
        bool ok;
        double base = parse_base(cJSON_GetObjectItemCaseSensitive(b, "lse_base"), &ok);
        char bad[300];
        if (!cJSON_IsString(name) || swa_external_bad_name("\"name\"", name->valuestring, bad, sizeof bad)) {
            snprintf(why, n, "backends[%d]: %s", *count, cJSON_IsString(name) ? bad : "\"name\" must be a string");
            st = SWA_ERR_INVALID;
            break;
        }
        if (!ok) {
            snprintf(why, n, "backend %s: \"lse_base\" must be \"e\", \"2\" or \"none\"", name->valuestring);
            st = SWA_ERR_INVALID;
            break;
        }
        ext_backend *e = &out[*count];
        memset(e, 0, sizeof *e);
        char tiles_why[200];
        if (parse_tiles(cJSON_GetObjectItemCaseSensitive(b, "tiles"), &e->tiles, tiles_why, sizeof tiles_why)) {
            snprintf(why, n, "backend %s: %s", name->valuestring, tiles_why);
            st = SWA_ERR_INVALID;
            break;
        }
        const cJSON *det = cJSON_GetObjectItemCaseSensitive(b, "deterministic");
        const cJSON *inv = cJSON_GetObjectItemCaseSensitive(b, "batch_invariant");
        if ((det && !cJSON_IsBool(det)) || (inv && !cJSON_IsBool(inv))) {
            snprintf(why, n, "backend %s: \"%s\" must be true or false", name->valuestring,
                     det && !cJSON_IsBool(det) ? "deterministic" : "batch_invariant");
            st = SWA_ERR_INVALID;
            break;
        }
        e->traits = (cJSON_IsTrue(det) ? SWA_TRAIT_DETERMINISTIC : 0u) |
                    (cJSON_IsTrue(inv) ? SWA_TRAIT_BATCH_INVARIANT : 0u);
        snprintf(e->backend_name, sizeof e->backend_name, "%s", name->valuestring);
        snprintf(e->description, sizeof e->description, "%s",
                 cJSON_IsString(desc) ? desc->valuestring : "(adapter backend)");
        e->b.lse_base = base;
        e->prefill = e->decode = !cJSON_IsArray(kinds);
        for (const cJSON *k = cJSON_IsArray(kinds) ? kinds->child : NULL; k; k = k->next) {
            if (cJSON_IsString(k) && !strcmp(k->valuestring, "prefill"))
                e->prefill = true;
            else if (cJSON_IsString(k) && !strcmp(k->valuestring, "decode"))
                e->decode = true;
        }
        (*count)++;
    }
    cJSON_Delete(hello);
    cJSON *bye = cJSON_CreateObject();
    cJSON_AddStringToObject(bye, "type", "bye");
    send_frame(&ap, bye, prov->name, &err);
    cJSON_Delete(bye);
    stop(&ap, false);
    return st;
}

/* ---------------------------------------------------------------------------
 * one run */

static const char *case_descr(swa_dtype d) { return d == SWA_DTYPE_FP16 ? "<f2" : d == SWA_DTYPE_BF16 ? "<u2" : "<f4"; }

static swa_status stage(const ext_plan *p, const char *dir, swa_error *err)
{
    const swa_case *c = p->c;
    const swa_inputs *in = p->in;
    const swa_paged_kv *kv = &in->paged;
    const char *d = case_descr(c->dtype);
    size_t B = (size_t)c->num_requests, Hq = (size_t)c->num_qo_heads, Hk = (size_t)c->num_kv_heads,
           D = (size_t)c->head_dim;
    char path[1200];
    struct {
        const char *name, *descr;
        const void *data;
        size_t shape[4];
        int ndim;
    } files[] = {
        {"q.npy", d, in->q_raw, {(size_t)in->total_qo, Hq, D}, 3},
        {"k.npy", d, in->k_raw, {(size_t)in->total_kv, Hk, D}, 3},
        {"v.npy", d, in->v_raw, {(size_t)in->total_kv, Hk, D}, 3},
        {"k_cache.npy", d, kv->k_pages, {(size_t)kv->num_pages, 0, 0, D}, 4},
        {"v_cache.npy", d, kv->v_pages, {(size_t)kv->num_pages, 0, 0, D}, 4},
        {"qo_indptr.npy", "<i4", in->qo_indptr, {B + 1}, 1},
        {"kv_seq_indptr.npy", "<i4", in->kv_indptr, {B + 1}, 1},
        {"kv_indptr.npy", "<i4", kv->indptr, {B + 1}, 1},
        {"kv_indices.npy", "<i4", kv->indices, {(size_t)kv->indptr[B]}, 1},
        {"kv_last_page_len.npy", "<i4", kv->last_page_len, {B}, 1},
        {"block_tables.npy", "<i4", kv->block_tables, {B, (size_t)kv->max_blocks_per_seq}, 2},
        {"context_lens.npy", "<i4", kv->context_lens, {B}, 1},
    };
    for (int i = 3; i <= 4; i++) {
        bool nhd = kv->layout == SWA_LAYOUT_NHD;
        files[i].shape[1] = nhd ? (size_t)kv->page_size : Hk;
        files[i].shape[2] = nhd ? Hk : (size_t)kv->page_size;
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        swa_status st = swa_npy_write(path, files[i].descr, files[i].shape, files[i].ndim, files[i].data, err);
        if (st != SWA_OK)
            return st;
    }
    return SWA_OK;
}

static cJSON *problem_json(const ext_plan *p)
{
    const swa_case *c = p->c;
    const swa_inputs *in = p->in;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "num_requests", c->num_requests);
    cJSON_AddItemToObject(o, "qo_len", cJSON_CreateIntArray(c->qo_len, c->num_requests));
    cJSON_AddItemToObject(o, "kv_len", cJSON_CreateIntArray(c->kv_len, c->num_requests));
    cJSON_AddNumberToObject(o, "total_qo", in->total_qo);
    cJSON_AddNumberToObject(o, "total_kv", in->total_kv);
    cJSON_AddNumberToObject(o, "num_qo_heads", c->num_qo_heads);
    cJSON_AddNumberToObject(o, "num_kv_heads", c->num_kv_heads);
    cJSON_AddNumberToObject(o, "head_dim", c->head_dim);
    cJSON_AddStringToObject(o, "dtype", swa_dtype_name(c->dtype));
    cJSON_AddBoolToObject(o, "causal", c->causal);
    cJSON_AddNumberToObject(o, "window_left", swa_marshal_window_left(c));
    cJSON_AddNumberToObject(o, "window_right", p->problem.window_right);
    cJSON_AddNumberToObject(o, "attention_chunk_size", c->chunk_size); /* 0: off */
    cJSON_AddNumberToObject(o, "sm_scale", c->sm_scale);
    cJSON_AddNumberToObject(o, "soft_cap", c->soft_cap);
    cJSON_AddBoolToObject(o, "return_lse", p->problem.return_lse);
    cJSON_AddNumberToObject(o, "page_size", in->paged.page_size);
    cJSON_AddNumberToObject(o, "num_pages", in->paged.num_pages);
    cJSON_AddStringToObject(o, "layout", swa_layout_name(swa_marshal_layout(in->paged.layout)));
    cJSON_AddNumberToObject(o, "max_blocks_per_seq", in->paged.max_blocks_per_seq);
    return o;
}

static void result_path(const char *dir, const char *name, char *buf, size_t n)
{
    if (name[0] == '/')
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "%s/%s", dir, name);
}

static swa_status read_out(const ext_plan *p, const char *dir, const cJSON *reply, const swa_out_args *o,
                           bool write_lse, swa_error *err)
{
    const char *who = p->e->full_name;
    const swa_case *c = p->c;
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(reply, "out");
    if (!cJSON_IsString(out))
        return swa_error_set(err, SWA_ERR_INVALID, "%s: the result names no \"out\" file", who);
    char path[1200];
    result_path(dir, out->valuestring, path, sizeof path);
    swa_npy a;
    char why[SWA_MSG_MAX];
    /* a generous cap: a wrong dtype or shape is reported as such below */
    swa_status st = swa_npy_read(path, o->out_bytes * 4 + 4096, &a, err);
    if (st != SWA_OK) {
        memcpy(why, err->message, sizeof why);
        return swa_error_set(err, st, "%s: output: %s", who, why);
    }
    size_t want[3] = {(size_t)p->in->total_qo, (size_t)c->num_qo_heads, (size_t)c->head_dim};
    bool shape_ok = a.ndim == 3 && a.shape[0] == want[0] && a.shape[1] == want[1] && a.shape[2] == want[2];
    if (strcmp(a.descr, case_descr(c->dtype)) != 0 || !shape_ok) {
        char got[96] = "";
        size_t used = 0;
        for (int i = 0; i < a.ndim; i++)
            used += (size_t)snprintf(got + used, sizeof got - used, "%s%zu", i ? ", " : "", a.shape[i]);
        swa_error_set(err, SWA_ERR_INVALID, "%s: output %s is '%s' of shape (%s); expected '%s' (%s) of shape "
                      "(%zu, %zu, %zu)", who, out->valuestring, a.descr, got, case_descr(c->dtype),
                      swa_dtype_name(c->dtype), want[0], want[1], want[2]);
        swa_npy_free(&a);
        return SWA_ERR_INVALID;
    }
    memcpy(o->out, a.data, o->out_bytes);
    swa_npy_free(&a);
    if (!write_lse)
        return SWA_OK;
    const cJSON *lse = cJSON_GetObjectItemCaseSensitive(reply, "lse");
    if (!cJSON_IsString(lse))
        return swa_error_set(err, SWA_ERR_INVALID, "%s: the case asks for the LSE and the result names no \"lse\" "
                             "file", who);
    result_path(dir, lse->valuestring, path, sizeof path);
    if ((st = swa_npy_read(path, o->lse_bytes * 4 + 4096, &a, err)) != SWA_OK) {
        memcpy(why, err->message, sizeof why);
        return swa_error_set(err, st, "%s: lse: %s", who, why);
    }
    bool lse_ok = a.ndim == 2 && a.shape[0] == want[0] && a.shape[1] == want[1] &&
                  (!strcmp(a.descr, "<f4") || !strcmp(a.descr, "<f8"));
    if (!lse_ok) {
        swa_error_set(err, SWA_ERR_INVALID, "%s: lse %s is '%s' with %d dimensions; expected '<f4' or '<f8' of "
                      "shape (%zu, %zu)", who, lse->valuestring, a.descr, a.ndim, want[0], want[1]);
        swa_npy_free(&a);
        return SWA_ERR_INVALID;
    }
    for (size_t i = 0; i < a.count; i++)
        o->lse[i] = a.item_size == 4 ? ((const float *)a.data)[i] : (float)((const double *)a.data)[i];
    swa_npy_free(&a);
    return SWA_OK;
}

/* adapter.log is the adapter's stderr, appended to (O_APPEND).  Past
 * LOG_MAX bytes it is cut to its last LOG_KEEP bytes, after a line that says
 * so, between requests (the adapter is idle then): a chatty adapter cannot
 * fill TMPDIR. */
#define LOG_MAX (8L << 20)
#define LOG_KEEP (1L << 20)
static void cap_log(const adapter_proc *ap)
{
    struct stat st;
    if (stat(ap->log, &st) != 0 || st.st_size <= LOG_MAX)
        return;
    FILE *f = fopen(ap->log, "r+b");
    char *tail = malloc(LOG_KEEP);
    if (!f || !tail || fseek(f, -LOG_KEEP, SEEK_END) != 0) {
        if (f)
            fclose(f);
        free(tail);
        return;
    }
    size_t got = fread(tail, 1, LOG_KEEP, f);
    if (ftruncate(fileno(f), 0) == 0 && fseek(f, 0, SEEK_SET) == 0) {
        fprintf(f, "[swadiff: %lld earlier bytes of this log dropped; the last %zu follow]\n",
                (long long)st.st_size - (long long)got, got);
        fwrite(tail, 1, got, f);
    }
    fclose(f);
    free(tail);
}

/* Bytes waiting on the reply pipe now: a reply nobody asked for. */
static bool reply_pending(const adapter_proc *ap)
{
    struct pollfd pf = {ap->rep, POLLIN, 0};
    return poll(&pf, 1, 0) > 0 && (pf.revents & POLLIN);
}

swa_status swa_adapter_run(ext_plan *p, const swa_out_args *o, bool write_lse, swa_error *err)
{
    const ext_provider *prov = p->prov;
    adapter_proc *ap = &procs[p->e->provider];
    if (ap->pid > 0 && ap->owner != getpid())
        ap->pid = 0; /* inherited through fork: the worker starts its own */
    if (ap->pid <= 0) {
        cJSON *hello = NULL;
        swa_status st = start_and_hello(ap, prov, &hello, err);
        if (st != SWA_OK)
            return st;
        cJSON_Delete(hello);
    }
    char dir[700];
    snprintf(dir, sizeof dir, "%s/run-%lu", ap->scratch, ++ap->runs);
    if (mkdir(dir, 0755) != 0)
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot make %s: %s", p->e->full_name, dir, strerror(errno));
    swa_status st = stage(p, dir, err);
    cJSON *reply = NULL;
    /* one reply per request: a reply already waiting answers an earlier
     * request, and read now it would shift every later answer by one */
    if (st == SWA_OK && reply_pending(ap))
        st = swa_error_set(err, SWA_ERR_INVALID, "adapter %s broke the protocol: a reply was waiting before request "
                           "%s was sent (a second reply to an earlier request; one reply per request)", prov->name,
                           p->c->id);
    if (st == SWA_OK) {
        cJSON *msg = cJSON_CreateObject();
        cJSON_AddStringToObject(msg, "type", "run");
        cJSON_AddStringToObject(msg, "id", p->c->id);
        cJSON_AddStringToObject(msg, "backend", p->e->backend_name);
        cJSON_AddStringToObject(msg, "dir", dir);
        cJSON_AddItemToObject(msg, "problem", problem_json(p));
        st = send_frame(ap, msg, p->e->full_name, err);
        cJSON_Delete(msg);
    }
    if (st == SWA_OK && !(reply = recv_frame(ap, p->e->full_name, err)))
        st = err->status ? err->status : SWA_ERR_INVALID;
    if (st == SWA_OK) { /* "id", when the reply has one, must be the request's */
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(reply, "id");
        if (id && !(cJSON_IsString(id) && !strcmp(id->valuestring, p->c->id)))
            st = swa_error_set(err, SWA_ERR_INVALID, "adapter %s broke the protocol: its reply names request %.200s%s%s "
                               "while %s was asked", prov->name, cJSON_IsString(id) ? "\"" : "",
                               cJSON_IsString(id) ? id->valuestring : "(not a string)", cJSON_IsString(id) ? "\"" : "",
                               p->c->id);
        else if (reply_pending(ap))
            st = swa_error_set(err, SWA_ERR_INVALID, "adapter %s broke the protocol: a second reply followed its answer "
                               "to %s (one reply per request)", prov->name, p->c->id);
        if (st != SWA_OK) {
            cJSON_Delete(reply);
            reply = NULL;
        }
    }
    if (st != SWA_OK) {
        remove_tree(dir);
        stop(ap, true); /* a fresh adapter for the next pair; keep the log */
        return st;
    }
    cap_log(ap);
    const char *type = msg_type(reply);
    if (!strcmp(type, "result")) {
        bool ok = true;
        const cJSON *base = cJSON_GetObjectItemCaseSensitive(reply, "lse_base");
        if (base) {
            double b = parse_base(base, &ok);
            if (ok)
                p->lse_base = b;
        }
        st = ok ? read_out(p, dir, reply, o, write_lse && p->lse_base != 0, err)
                : swa_error_set(err, SWA_ERR_INVALID, "%s: result lse_base must be \"e\", \"2\" or \"none\"",
                                p->e->full_name);
        if (st == SWA_OK && write_lse && p->lse_base == 0)
            st = swa_error_set(err, SWA_ERR_INVALID, "%s: the result says lse_base \"none\" but an LSE was asked",
                               p->e->full_name);
    } else if (!strcmp(type, "unsupported")) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(reply, "reason");
        st = swa_error_set(err, SWA_ERR_UNSUPPORTED, "%s: %s", p->e->full_name,
                           cJSON_IsString(r) ? r->valuestring : "unsupported (no reason given)");
    } else if (!strcmp(type, "error")) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(reply, "message");
        st = swa_error_set(err, SWA_ERR_INVALID, "%s: the adapter reports an error: %s", p->e->full_name,
                           cJSON_IsString(m) ? m->valuestring : "(no message)");
    } else {
        st = swa_error_set(err, SWA_ERR_INVALID, "%s broke the protocol: a reply of type \"%s\" (expected result, "
                           "unsupported or error)", p->e->full_name, type);
    }
    cJSON_Delete(reply);
    remove_tree(dir);
    return st;
}

void swa_adapter_reset(void)
{
    for (int i = 0; i < SWA_EXTERNAL_MAX; i++)
        stop(&procs[i], false);
}
