/* named.c — a plug-in whose own name and backend name come from the
 * environment, for the name rules of tests/test_hostile_plugins.c:
 *   SWADIFF_TEST_PLUGIN_NAME      the plug-in's name (default "named")
 *   SWADIFF_TEST_PLUGIN_NAME_LEN  instead: that many 'n's (a 1 MB name...)
 *   SWADIFF_TEST_BACKEND_NAME_LEN the backend's name: that many 'b's
 *                                 (default "zeros")
 * Its backend writes zeros (the name tests never compare). */
#include <swadiff/plugin.h>

#include <stdlib.h>
#include <string.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan, (void)msg, (void)n;
    memset(o->out, 0, (size_t)p->total_qo * p->num_qo_heads * p->head_dim * (p->dtype == SWADIFF_FP32 ? 4 : 2));
    return SWADIFF_RC_OK;
}

static swadiff_plugin_backend backends[] = {
    {"zeros", "writes zeros", SWADIFF_MEM_HOST, 0, NULL, NULL, run, NULL, NULL},
};

static swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "named", 1, backends};

/* that many copies of c (leaked: the probe child exits) */
static const char *repeated(const char *len, char c)
{
    size_t n = (size_t)strtoul(len, NULL, 10);
    char *s = malloc(n + 1);
    if (!s)
        return "out_of_memory";
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void)
{
    const char *name = getenv("SWADIFF_TEST_PLUGIN_NAME"), *len = getenv("SWADIFF_TEST_PLUGIN_NAME_LEN");
    const char *backend_len = getenv("SWADIFF_TEST_BACKEND_NAME_LEN");
    if (name)
        plugin.name = name;
    if (len)
        plugin.name = repeated(len, 'n');
    if (backend_len)
        backends[0].name = repeated(backend_len, 'b');
    return &plugin;
}
