/* null_table.c — the entry point exists but returns NULL (a plug-in whose
 * initialization failed).  swadiff must refuse the plug-in with an error
 * naming the file, not dereference the NULL. */
#include <swadiff/plugin.h>

#include <stddef.h>

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return NULL; }
