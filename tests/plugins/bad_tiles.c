/* bad_tiles.c — a plug-in whose backend declares an impossible tile shape
 * (a KV-tile width of 0).  swadiff must refuse to load it, naming the
 * backend and the field, and never call any of its functions. */
#include <swadiff/plugin.h>

#include <stdio.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "bad_tiles: run must never be called (the table check should refuse this plug-in)");
    return SWADIFF_RC_ERROR;
}

static const swadiff_tile_shape tiles = {1, {64, 0, 0, 0}, 1, 1, {0, 0, 0, 0}};

static const swadiff_plugin_backend backends[] = {
    {"tiled", "declares KV tiles of 0 keys", SWADIFF_MEM_HOST, 0.0, NULL, NULL, run, NULL, &tiles},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "bad_tiles", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
