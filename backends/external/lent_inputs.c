/* lent_inputs.c — the case's host inputs that plug-in code is lent, checked
 * after every call into it.
 *
 * Why: the ABI hands a plug-in swadiff's own buffers (const in the header,
 * writable in fact), and one case's inputs are lent to every case after it
 * that shares them (a window sweep, harness/run.c's input cache).  A
 * plug-in that writes into them (an in-place RoPE on q, a page table fixed
 * up in place) would make the correct backends after it fail.  So each
 * input's checksum is taken before plug-in code first sees the plan and
 * compared after supports()/plan() and after every run(); a changed input
 * is an error for that backend, naming the input, and is restored from a
 * fresh generation of the case's inputs (they are a pure function of the
 * case), so the backends and cases after it read what they should have.
 * The device path (a device table's external_run) does the same for the
 * case's device copy.  Adapters need none of this: they read copies staged
 * as .npy files, and their outputs are only read back (adapter.c).
 *
 * Test: tests/test_hostile_plugins.c (tests/plugins/const_writer.c). */
#include "backends/external/external_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"

typedef struct lent_span {
    const char *name; /* as include/swadiff/plugin.h names it */
    void *data;
    size_t bytes;
    bool tensor; /* a tensor (device-memory plug-ins get the device copy instead) */
} lent_span;

/* The host arrays a plug-in's problem points at, in a fixed order. */
static int lent_spans(const swa_inputs *in, lent_span *s)
{
    size_t row = (size_t)in->head_dim * swa_dtype_size(in->dtype), I = sizeof(int);
    const swa_paged_kv *pk = &in->paged;
    size_t B = (size_t)in->num_requests;
    size_t pool = (size_t)pk->num_pages * pk->page_size * pk->num_kv_heads * row;
    size_t ragged = (size_t)in->total_kv * in->num_kv_heads * row;
    const lent_span all[SWA_LENT_MAX] = {
        {"q", in->q_raw, (size_t)in->total_qo * in->num_qo_heads * row, true},
        {"k_cache", pk->k_pages, pool, true},
        {"v_cache", pk->v_pages, pool, true},
        {"k", in->k_raw, ragged, true},
        {"v", in->v_raw, ragged, true},
        {"kv_indptr", pk->indptr, pk->indptr ? (B + 1) * I : 0, false},
        {"kv_indices", pk->indices, pk->indptr ? (size_t)pk->indptr[B] * I : 0, false},
        {"qo_indptr", in->qo_indptr, in->qo_indptr ? (B + 1) * I : 0, false},
        {"kv_seq_indptr", in->kv_indptr, in->kv_indptr ? (B + 1) * I : 0, false},
        {"kv_last_page_len", pk->last_page_len, pk->last_page_len ? B * I : 0, false},
        {"block_tables", pk->block_tables, pk->block_tables ? B * (size_t)pk->max_blocks_per_seq * I : 0, false},
        {"context_lens", pk->context_lens, pk->context_lens ? B * I : 0, false},
    };
    memcpy(s, all, sizeof all);
    return SWA_LENT_MAX;
}

/* splitmix64's finaliser: every input bit reaches every output bit */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Sum of mix(word + position), as the device path's checksum kernel:
 * position-dependent, so moved bytes count too. */
static uint64_t checksum(const void *data, size_t bytes)
{
    const unsigned char *p = data;
    size_t words = bytes / 8;
    uint64_t acc = 0;
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + i * 8, 8);
        acc += mix(w + i * 0x9e3779b97f4a7c15ull);
    }
    for (size_t b = words * 8; b < bytes; b++)
        acc += mix(p[b] + ((uint64_t)b << 40));
    return acc;
}

void swa_lent_take(const swa_inputs *in, bool tensors, swa_lent_sums *s)
{
    lent_span span[SWA_LENT_MAX];
    lent_spans(in, span);
    s->tensors = tensors;
    for (int i = 0; i < SWA_LENT_MAX; i++)
        s->sum[i] = span[i].data && (tensors || !span[i].tensor) ? checksum(span[i].data, span[i].bytes) : 0;
}

/* Appends ", " and text to buf. */
static void note(char *buf, size_t n, const char *text)
{
    size_t used = strlen(buf);
    snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? ", " : "", text);
}

bool swa_lent_check(const swa_case *c, const swa_inputs *in, const swa_lent_sums *s, char *found, size_t n)
{
    lent_span span[SWA_LENT_MAX];
    lent_spans(in, span);
    bool changed[SWA_LENT_MAX] = {false}, any = false;
    found[0] = '\0';
    for (int i = 0; i < SWA_LENT_MAX; i++) {
        if (!span[i].data || (span[i].tensor && !s->tensors))
            continue;
        changed[i] = checksum(span[i].data, span[i].bytes) != s->sum[i];
        any |= changed[i];
    }
    if (!any)
        return false;
    char names[200] = "";
    for (int i = 0; i < SWA_LENT_MAX; i++)
        if (changed[i])
            note(names, sizeof names, span[i].name);
    /* the inputs are a pure function of the case: generate them again and
     * copy back what was written */
    swa_inputs fresh;
    swa_error gen = {SWA_OK, ""};
    bool restored = swa_inputs_create(c, &fresh, &gen) == SWA_OK;
    if (restored) {
        lent_span again[SWA_LENT_MAX];
        lent_spans(&fresh, again);
        for (int i = 0; i < SWA_LENT_MAX; i++)
            if (changed[i] && again[i].bytes == span[i].bytes)
                memcpy(span[i].data, again[i].data, span[i].bytes);
            else if (changed[i])
                restored = false;
        swa_inputs_free(&fresh);
    }
    if (restored)
        snprintf(found, n, "wrote into swadiff's input %s (inputs are const: copy what you change); restored for "
                 "the backends and cases after it", names);
    else
        snprintf(found, n, "wrote into swadiff's input %s (inputs are const: copy what you change); they could not "
                 "be restored (%s), so later results of this case and of the cases sharing its inputs are suspect",
                 names, gen.message[0] ? gen.message : "their size changed");
    return true;
}
