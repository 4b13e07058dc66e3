/* invariance.c — the invariance checks' records, transformed cases and
 * comparisons (harness/invariance.h, docs/invariance.md). */
#include "harness/invariance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const swa_inv_state_names[] = {"same", "differs", "skipped", "error", NULL};

#define PAGE_ORDER_SALT 0x9e3779b97f4a7c15ull /* another shuffle of the same pages */

static const struct {
    const char *name;
    unsigned set;     /* the SWA_INV_* name that asks for it */
    bool batch_held;  /* held bitwise for a batch-invariant backend */
} KINDS[SWA_IV_COUNT] = {
    [SWA_IV_ALONE] = {"batch.alone", SWA_INV_BATCH, true},
    [SWA_IV_REVERSED] = {"batch.reversed", SWA_INV_BATCH, true},
    [SWA_IV_PAGE_ORDER] = {"pages.order", SWA_INV_PAGES, true},
    [SWA_IV_PAGE_SIZE] = {"pages.size", SWA_INV_PAGES, false},
    [SWA_IV_SPLIT_ON] = {"split.on", SWA_INV_SPLIT, false},
    [SWA_IV_SPLIT_OFF] = {"split.off", SWA_INV_SPLIT, false},
};

static void skip(swa_inv_record *r, const char *why)
{
    r->state = SWA_INV_SKIPPED;
    snprintf(r->message, sizeof r->message, "%s", why);
}

int swa_invariance_count(const swa_case *c, swa_iv_kind kind)
{
    if (kind != SWA_IV_ALONE)
        return 1;
    return c->num_requests < SWA_INV_ALONE_MAX ? c->num_requests : SWA_INV_ALONE_MAX;
}

/* Request j of the ones batch.alone runs: all of them when few, else
 * SWA_INV_ALONE_MAX spread evenly, the first and the last included. */
static int alone_request(const swa_case *c, int j)
{
    int n = swa_invariance_count(c, SWA_IV_ALONE);
    if (n == c->num_requests || n < 2)
        return j;
    return (int)((long long)j * (c->num_requests - 1) / (n - 1));
}

int swa_invariance_records(const swa_case *c, unsigned asked, unsigned traits, swa_inv_record *rec,
                           swa_iv_kind *kinds)
{
    int n = 0;
    bool batch_inv = (traits & SWA_TRAIT_BATCH_INVARIANT) != 0;
    for (int k = 0; k < SWA_IV_COUNT && n < SWA_INV_RECORDS; k++) {
        if (!(asked & KINDS[k].set))
            continue;
        swa_inv_record *r = &rec[n];
        memset(r, 0, sizeof *r);
        kinds[n++] = (swa_iv_kind)k;
        snprintf(r->name, sizeof r->name, "%s", KINDS[k].name);
        r->bitwise = batch_inv && KINDS[k].batch_held;
        switch ((swa_iv_kind)k) {
        case SWA_IV_ALONE:
            if (swa_invariance_count(c, SWA_IV_ALONE) < c->num_requests)
                snprintf(r->detail, sizeof r->detail, "%d of the %d requests, each run alone",
                         swa_invariance_count(c, SWA_IV_ALONE), c->num_requests);
            else
                snprintf(r->detail, sizeof r->detail, "each of the %d requests run alone", c->num_requests);
            if (c->num_requests < 2)
                skip(r, "one request: the case is its own batch");
            else if (c->cuda_graph && c->graph_capture_requests < c->num_requests)
                skip(r, "a CUDA-graph case that captures a smaller batch than it replays: one request alone has "
                        "no smaller batch to capture");
            break;
        case SWA_IV_REVERSED:
            snprintf(r->detail, sizeof r->detail, "the %d requests in reverse order", c->num_requests);
            if (c->num_requests < 2)
                skip(r, "one request: no other order");
            break;
        case SWA_IV_PAGE_ORDER:
            snprintf(r->detail, sizeof r->detail, "the same KV cache in another physical page order");
            if (c->kv_mode == SWA_KV_RAGGED)
                skip(r, "ragged K/V: no pages");
            break;
        case SWA_IV_PAGE_SIZE:
            snprintf(r->detail, sizeof r->detail, "the same KV cache in pages of another size");
            if (c->kv_mode == SWA_KV_RAGGED)
                skip(r, "ragged K/V: no pages");
            break;
        case SWA_IV_SPLIT_ON:
        case SWA_IV_SPLIT_OFF:
            snprintf(r->detail, sizeof r->detail, "split-KV forced %s", k == SWA_IV_SPLIT_ON ? "on" : "off");
            if (!(traits & SWA_TRAIT_SPLIT_KNOB))
                skip(r, "the backend has no split-KV knob");
            break;
        default:
            break;
        }
    }
    return n;
}

void swa_invariance_case_free(swa_inv_case *ic)
{
    swa_case_free(&ic->c);
    swa_inputs_free(&ic->in);
    free(ic->from);
    memset(ic, 0, sizeof *ic);
}

/* ic->c becomes c restricted to / reordered as from[0..n). */
static swa_status derive_case(const swa_case *c, const int *from, int n, swa_inv_case *ic, swa_error *err)
{
    if (swa_case_copy(&ic->c, c) != 0)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of host memory for a transformed case");
    ic->from = malloc((size_t)n * sizeof *ic->from);
    if (!ic->from)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of host memory for a transformed case");
    ic->c.num_requests = n;
    for (int i = 0; i < n; i++) {
        ic->from[i] = from[i];
        ic->c.qo_len[i] = c->qo_len[from[i]];
        ic->c.kv_len[i] = c->kv_len[from[i]];
    }
    return SWA_OK;
}

swa_status swa_invariance_build(const swa_case *c, const swa_inputs *in, swa_iv_kind kind, int j,
                                const swa_backend *b, const swa_device_ops *dev, swa_inv_case *out,
                                swa_error *err)
{
    memset(out, 0, sizeof *out);
    int B = c->num_requests;
    int *from = malloc((size_t)(B > 0 ? B : 1) * sizeof *from);
    if (!from)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of host memory for a transformed case");
    int n = B;
    for (int i = 0; i < B; i++)
        from[i] = kind == SWA_IV_REVERSED ? B - 1 - i : i;
    if (kind == SWA_IV_ALONE) {
        n = 1;
        from[0] = alone_request(c, j);
    }
    swa_status st = derive_case(c, from, n, out, err);
    free(from);
    if (st != SWA_OK) {
        swa_invariance_case_free(out);
        return st;
    }
    uint64_t page_seed = c->seed;
    if (kind == SWA_IV_PAGE_ORDER)
        page_seed ^= PAGE_ORDER_SALT;
    if (kind == SWA_IV_SPLIT_ON || kind == SWA_IV_SPLIT_OFF)
        out->split = kind == SWA_IV_SPLIT_ON ? 1 : -1;
    if (kind == SWA_IV_PAGE_SIZE) {
        int sizes[2] = {c->page_size / 2, c->page_size * 2}, chosen = 0;
        char why[2][256] = {"", ""};
        for (int i = 0; i < 2 && !chosen; i++) {
            if (sizes[i] < 1 || (i == 0 && c->page_size % 2)) {
                snprintf(why[i], sizeof why[i], "no whole half of %d", c->page_size);
                continue;
            }
            out->c.page_size = sizes[i];
            char buf[256];
            const char *no = b->supports(&out->c, dev, buf, sizeof buf);
            if (!no)
                chosen = sizes[i];
            else
                snprintf(why[i], sizeof why[i], "%s", no);
        }
        if (!chosen) {
            swa_invariance_case_free(out);
            return swa_error_set(err, SWA_ERR_UNSUPPORTED, "the backend takes neither page size %d (%s) nor %d (%s)",
                                 sizes[0], why[0], sizes[1], why[1]);
        }
        out->c.page_size = chosen;
    }
    st = swa_inputs_derive(in, c, &out->c, out->from, page_seed, &out->in, err);
    if (st == SWA_OK && kind == SWA_IV_PAGE_ORDER &&
        !memcmp(out->in.paged.indices, in->paged.indices, (size_t)in->paged.indptr[B] * sizeof(int)))
        st = swa_error_set(err, SWA_ERR_UNSUPPORTED, "another shuffle of the %d pages gave the same page table",
                           in->paged.indptr[B]);
    if (st == SWA_OK && kind != SWA_IV_PAGE_SIZE) { /* (pages.size asked it of the size it chose) */
        char why[512];
        const char *no = b->supports(&out->c, dev, why, sizeof why);
        if (no)
            st = swa_error_set(err, SWA_ERR_UNSUPPORTED, "the backend does not take the transformed case: %s", no);
    }
    if (st != SWA_OK)
        swa_invariance_case_free(out);
    return st;
}

static void first_diff(swa_inv_record *rec, swa_index ix)
{
    if (!rec->elements)
        rec->first_index = ix;
}

void swa_invariance_compare(swa_inv_record *rec, const swa_case *c, const swa_inputs *in, const swa_inv_case *ic,
                            const void *base_out, const float *base_lse, const void *out, const float *lse,
                            double atol, double rtol, const double *ref_out)
{
    size_t es = swa_dtype_size(c->dtype);
    int H = c->num_qo_heads, D = c->head_dim, total = in->total_qo;
    rec->grid_rows = total < SWA_INV_GRID_ROWS ? (total > 0 ? total : 1) : SWA_INV_GRID_ROWS;
    rec->grid_heads = H < SWA_INV_GRID_HEADS ? H : SWA_INV_GRID_HEADS;
    rec->runs++;
    bool any = false;
    for (int i = 0; i < ic->c.num_requests; i++) {
        int r = ic->from[i];
        for (int row = 0; row < ic->c.qo_len[i]; row++) {
            int g = in->qo_indptr[r] + row, gt = ic->in.qo_indptr[i] + row;
            int cell_row = (int)((long long)g * rec->grid_rows / (total > 0 ? total : 1));
            for (int h = 0; h < H; h++) {
                float *cell = &rec->grid[cell_row * SWA_INV_GRID_HEADS + h * rec->grid_heads / H];
                if (base_lse && lse) {
                    rec->lse_total++;
                    size_t li = (size_t)g * H + h, lt = (size_t)gt * H + h;
                    if (memcmp(&base_lse[li], &lse[lt], sizeof(float))) {
                        rec->lse_entries++;
                        any = true;
                    }
                }
                for (int d = 0; d < D; d++) {
                    size_t bi = ((size_t)g * H + h) * D + d, ti = ((size_t)gt * H + h) * D + d;
                    rec->total++;
                    if (!memcmp((const char *)base_out + bi * es, (const char *)out + ti * es, es))
                        continue;
                    any = true;
                    swa_index ix = {r, row, c->kv_len[r] - c->qo_len[r] + row, h, d};
                    first_diff(rec, ix);
                    rec->elements++;
                    double a = swa_load(c->dtype, base_out, bi), t = swa_load(c->dtype, out, ti);
                    if (!isfinite(a) || !isfinite(t)) {
                        rec->nonfinite++;
                        *cell = -1.0f; /* a NaN or Inf on one side */
                        continue;
                    }
                    double diff = fabs(a - t), allowed = atol + rtol * fabs(ref_out[bi]);
                    double ratio = allowed > 0 ? diff / allowed : (diff > 0 ? 1e30 : 0);
                    if (ratio < 1e-12)
                        ratio = 1e-12; /* a difference of signed zeros still shows */
                    if (*cell >= 0 && ratio > *cell)
                        *cell = (float)ratio;
                    if (diff > rec->max_abs_diff)
                        rec->max_abs_diff = diff;
                    if (ratio > rec->max_tol_ratio) {
                        rec->max_tol_ratio = ratio;
                        rec->worst_index = ix;
                    }
                }
            }
        }
    }
    if (any && rec->state == SWA_INV_SAME)
        rec->state = SWA_INV_DIFFERS;
}

void swa_invariance_line(const swa_inv_record *rec, char *buf, size_t n)
{
    if (rec->state == SWA_INV_SKIPPED || rec->state == SWA_INV_ERROR) {
        snprintf(buf, n, "%s: %s: %s", rec->name, rec->state == SWA_INV_SKIPPED ? "skipped" : "error", rec->message);
        return;
    }
    if (rec->state == SWA_INV_SAME) {
        snprintf(buf, n, "%s: bitwise equal (%s; %lld elements%s)", rec->name, rec->detail, rec->total,
                 rec->lse_total ? " and their LSE" : "");
        return;
    }
    char first[96] = "", worst[96] = "";
    swa_index_format(&rec->first_index, first, sizeof first);
    swa_index_format(&rec->worst_index, worst, sizeof worst);
    int k = snprintf(buf, n, "%s: %lld / %lld output elements differ (%.3g%%) (%s)", rec->name, rec->elements,
                     rec->total, rec->total ? 100.0 * (double)rec->elements / (double)rec->total : 0.0, rec->detail);
    if (k > 0 && (size_t)k < n && rec->elements)
        k += snprintf(buf + k, n - (size_t)k, ", the first at %s", first);
    if (k > 0 && (size_t)k < n && rec->max_tol_ratio > 0)
        k += snprintf(buf + k, n - (size_t)k, "; greatest difference %.3g = %.3g of the tolerance at %s",
                      rec->max_abs_diff, rec->max_tol_ratio, worst);
    if (k > 0 && (size_t)k < n && rec->nonfinite)
        k += snprintf(buf + k, n - (size_t)k, "; %lld where one side is NaN or Inf", rec->nonfinite);
    if (k > 0 && (size_t)k < n && rec->lse_entries)
        snprintf(buf + k, n - (size_t)k, "; LSE: %lld / %lld entries differ", rec->lse_entries, rec->lse_total);
}

void swa_invariance_judge(swa_result *r)
{
    for (int i = 0; i < r->num_invariance; i++) {
        const swa_inv_record *rec = &r->invariance[i];
        char line[SWA_MSG_MAX];
        swa_invariance_line(rec, line, sizeof line);
        if (rec->state == SWA_INV_ERROR && r->outcome == SWA_OUTCOME_PASSED) {
            r->outcome = SWA_OUTCOME_ERROR;
            r->error_status = SWA_ERR_INVALID;
            snprintf(r->message, sizeof r->message, "invariance %s", line);
            return;
        }
        if (rec->state == SWA_INV_DIFFERS && rec->bitwise && r->outcome == SWA_OUTCOME_PASSED) {
            r->outcome = SWA_OUTCOME_FAILED;
            snprintf(r->message, sizeof r->message, "Batch variance: %s", line);
            snprintf(r->diagnosis, sizeof r->diagnosis,
                     "[batch_variant] the backend declares itself batch-invariant and matches the reference, but "
                     "its output changes under %s (%s): a split, tile or kernel chosen from the batch, or a read "
                     "that depends on where the pages lie", rec->name, rec->detail);
            return;
        }
    }
}
