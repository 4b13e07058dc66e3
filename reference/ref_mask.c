/* ref_mask.c — the masks the reference knows: the spec's (docs/spec.md)
 * and the buggy variants `explain` scores a failing output against (§9).
 *
 * Written from the spec text alone; nothing here is shared with backends/,
 * so a mask bug in a kernel cannot hide by being the reference's bug too.
 * Tested by tests/test_reference.c against an element-by-element predicate
 * written independently in the test; the exclusive chunk start and the
 * signatures by tests/test_explain.c.
 *
 * Positions are computed in long long: with L up to INT_MAX, p - L must not
 * overflow. */
#include "reference/ref_internal.h"

swa_ref_mask swa_ref_mask_spec(const swa_case *c)
{
    swa_ref_mask m;
    memset(&m, 0, sizeof m);
    m.window_left = c->window_left;
    m.window_right = c->causal ? -1 : c->window_right; /* causal rows end at p anyway */
    m.chunk_size = c->chunk_size;
    m.align = SWA_ALIGN_BOTTOM_RIGHT;
    m.anchor_request_start = false;
    m.tile_rows = 0;
    m.tile_kv_align = 1;
    m.softcap_before_mask = false;
    m.chunk_start_exclusive = false;
    return m;
}

swa_status ref_mask_validate(const swa_ref_mask *m, swa_error *err)
{
    if (m->window_left < -1)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference mask: window_left = %d; expected -1 (no window) or >= 0",
                             m->window_left);
    if (m->window_right < -1)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference mask: window_right = %d; expected -1 (no right bound) or >= 0",
                             m->window_right);
    if (m->chunk_size < 0)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference mask: chunk_size = %d; expected 0 (off) or >= 1", m->chunk_size);
    if (m->align != SWA_ALIGN_BOTTOM_RIGHT && m->align != SWA_ALIGN_TOP_LEFT)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference mask: align = %d; expected SWA_ALIGN_BOTTOM_RIGHT (0) or "
                             "SWA_ALIGN_TOP_LEFT (1)", (int)m->align);
    if (m->tile_rows < 0)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference mask: tile_rows = %d; expected 0 (off) or > 0", m->tile_rows);
    if (m->tile_rows > 0 && m->tile_kv_align < 1)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "reference mask: tile_kv_align = %d with tile_rows = %d; expected >= 1",
                             m->tile_kv_align, m->tile_rows);
    return SWA_OK;
}

/* Absolute position of query row `row`. */
static long long ref_position(const swa_ref_mask *m, int qo_len, int kv_len, int row)
{
    if (m->align == SWA_ALIGN_TOP_LEFT)
        return row;
    return (long long)kv_len - qo_len + row; /* negative only when qo_len > kv_len */
}

static int ref_clamp_key(long long k, int kv_len)
{
    return k < 0 ? 0 : k > kv_len ? kv_len : (int)k;
}

void ref_row_span_compute(const swa_ref_mask *m, bool causal, double soft_cap, int qo_len,
                          int kv_len, int group, int packed_row, ref_row_span *span)
{
    int row = packed_row / group;
    long long p = ref_position(m, qo_len, kv_len, row);
    /* one past the last key the row may see; the causal bound is kept by
     * every variant (no kernel in scope compiles causality out) */
    int end = causal ? ref_clamp_key(p + 1, kv_len) : kv_len;
    /* right bound of a non-causal band: keys up to p + R */
    if (!causal && m->window_right >= 0)
        end = ref_clamp_key(p + m->window_right + 1, kv_len);
    int L = m->window_left;
    long long begin;

    if (m->tile_rows > 0) {
        /* per-element mask compiled out: the whole tile starts where its
         * first packed row's window starts, rounded down to the KV tile */
        int first_packed = (packed_row / m->tile_rows) * m->tile_rows;
        long long p_first = ref_position(m, qo_len, kv_len, first_packed / group);
        begin = L >= 0 && p_first - L > 0 ? p_first - L : 0;
        begin -= begin % m->tile_kv_align;
        span->processed_begin = span->visible_begin = ref_clamp_key(begin, kv_len);
        span->processed_end = span->visible_end = end;
    } else {
        if (L < 0)
            begin = 0;
        else if (m->anchor_request_start)
            begin = (long long)kv_len - qo_len - L; /* prefix_len - L, the same for every row */
        else
            begin = p - L;
        /* chunked local attention: from the first key of p's chunk */
        if (m->chunk_size > 0 && p >= 0) {
            long long chunk_first = p / m->chunk_size * m->chunk_size + (m->chunk_start_exclusive ? 1 : 0);
            if (chunk_first > begin)
                begin = chunk_first;
        }
        span->visible_begin = ref_clamp_key(begin, kv_len);
        span->visible_end = end;
        if (m->softcap_before_mask && soft_cap > 0 && L >= 0) {
            /* the kernel reads every causally allowed key and masks to
             * -FLT_MAX before the cap: tanh turns that into -soft_cap */
            span->processed_begin = 0;
            span->processed_end = end;
        } else {
            span->processed_begin = span->visible_begin;
            span->processed_end = span->visible_end;
        }
    }
    if (span->visible_begin > span->visible_end)
        span->visible_begin = span->visible_end;
    if (span->processed_begin > span->processed_end)
        span->processed_begin = span->processed_end;
}

/* FNV-1a over the spans of every packed row, request by request.  The
 * soft cap enters as its bits: softcap_missing changes the case, not the
 * mask, and capped logits differ from uncapped ones on every key. */
static uint64_t fnv_mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t swa_ref_mask_signature(const swa_case *c, const swa_ref_mask *m)
{
    uint64_t h = 14695981039346656037ull;
    uint64_t cap_bits;
    double cap = c->soft_cap;
    memcpy(&cap_bits, &cap, sizeof cap_bits);
    h = fnv_mix(h, cap_bits);
    h = fnv_mix(h, (uint64_t)c->causal);
    int group = c->num_kv_heads > 0 ? c->num_qo_heads / c->num_kv_heads : 1;
    if (group < 1)
        group = 1;
    for (int r = 0; r < c->num_requests; r++) {
        h = fnv_mix(h, (uint64_t)0xffffffffu + (uint64_t)r);
        for (int pr = 0; pr < c->qo_len[r] * group; pr++) {
            ref_row_span sp;
            ref_row_span_compute(m, c->causal, c->soft_cap, c->qo_len[r], c->kv_len[r], group, pr, &sp);
            if (sp.visible_end <= sp.visible_begin) /* every empty interval is the same interval */
                sp.visible_begin = sp.visible_end = 0;
            if (sp.processed_end <= sp.processed_begin)
                sp.processed_begin = sp.processed_end = 0;
            h = fnv_mix(h, ((uint64_t)(uint32_t)sp.visible_begin << 32) | (uint32_t)sp.visible_end);
            h = fnv_mix(h, ((uint64_t)(uint32_t)sp.processed_begin << 32) | (uint32_t)sp.processed_end);
        }
    }
    return h;
}
