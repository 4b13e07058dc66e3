/* bad_table.c — a plug-in table with two defects in its one backend: the
 * required run is NULL and the name "bad name" has a character outside
 * [A-Za-z0-9_.-].  swadiff must refuse it with an error naming the defect(s). */
#include <swadiff/plugin.h>

#include <stddef.h>

static const swadiff_plugin_backend backends[] = {
    {"bad name", "run missing and a space in the name", SWADIFF_MEM_HOST, 0.0, NULL, NULL, NULL,
     NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "bad_table", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
