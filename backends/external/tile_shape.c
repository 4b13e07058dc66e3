/* tile_shape.c — the check of a tile shape a plug-in (ABI 2) or an adapter
 * (its hello) declares (external.h swa_tile_shape).  A leaf of its own:
 * plugin.c and adapter.c both use it, and external.c uses them.
 *
 * Test: tests/test_external.c (plugin_declaring_impossible_tiles,
 * adapter_declaring_impossible_tiles). */
#include "backends/external/external_internal.h"

#include <stdio.h>

const char *swa_tile_shape_check(const swa_tile_shape *t, char *buf, size_t n)
{
    if (t->num_q_rows < 0 || t->num_q_rows > SWA_TILE_SHAPES_MAX || t->num_kv_keys < 0 ||
        t->num_kv_keys > SWA_TILE_SHAPES_MAX) {
        snprintf(buf, n, "declares %d query-tile heights and %d KV-tile widths (expected 0..%d each)",
                 t->num_q_rows, t->num_kv_keys, SWA_TILE_SHAPES_MAX);
        return buf;
    }
    for (int i = 0; i < t->num_q_rows; i++)
        if (t->q_rows[i] < 1 || t->q_rows[i] > 65536) {
            snprintf(buf, n, "declares a query-tile height of %d (expected 1..65536)", t->q_rows[i]);
            return buf;
        }
    for (int i = 0; i < t->num_kv_keys; i++)
        if (t->kv_keys[i] < 1 || t->kv_keys[i] > 65536) {
            snprintf(buf, n, "declares a KV-tile width of %d (expected 1..65536)", t->kv_keys[i]);
            return buf;
        }
    if (t->gqa_packed < -1 || t->gqa_packed > 1) {
        snprintf(buf, n, "declares gqa_packed = %d (expected 1 packed, 0 per head, -1 either)", t->gqa_packed);
        return buf;
    }
    return NULL;
}
