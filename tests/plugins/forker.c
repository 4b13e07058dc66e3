/* forker.c — kernels that leave a process behind: run() forks a helper
 * that sleeps for a minute, holding every descriptor the worker had (its
 * result pipe, stdout, whatever the harness lent it), named
 * "swa-forker-kid" so a test can look for it.
 *   helper        then returns (an output of zeros: a mismatch);
 *   helper_crash  then crashes (SIGSEGV).
 * The run must end promptly, take no helper with it past its end, and leave
 * the report folder free for the next run. */
#include <swadiff/plugin.h>

#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void spawn(void)
{
    if (fork() == 0) {
        prctl(PR_SET_NAME, "swa-forker-kid", 0, 0, 0);
        sleep(60);
        _exit(0);
    }
}

static swadiff_rc helper(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size)
{
    (void)plan, (void)msg, (void)msg_size;
    spawn();
    memset(o->out, 0, (size_t)p->total_qo * p->num_qo_heads * p->head_dim * (p->dtype == SWADIFF_FP32 ? 4 : 2));
    return SWADIFF_RC_OK;
}

static swadiff_rc helper_crash(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                               size_t msg_size)
{
    (void)plan, (void)p, (void)o, (void)msg, (void)msg_size;
    spawn();
    volatile int *volatile null = NULL;
    *null = 1;
    return SWADIFF_RC_OK;
}

static const swadiff_plugin_backend backends[] = {
    {"helper", "forks a sleeping helper, then returns zeros", SWADIFF_MEM_HOST, 0.0, NULL, NULL, helper, NULL, NULL},
    {"helper_crash", "forks a sleeping helper, then crashes", SWADIFF_MEM_HOST, 0.0, NULL, NULL, helper_crash, NULL,
     NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "forker", 2, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
