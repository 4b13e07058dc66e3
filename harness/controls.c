/* controls.c — the marshalling controls (controls.h).
 *
 * Test: tests/test_controls.c. */
#include "harness/controls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/external/external.h"
#include "harness/case_load.h"

/* Two cases that always run, between them every form of the problem: a
 * prefill with a prefix, GQA 2, pages of 4 in HND, fp16; a decode batch
 * with GQA 4, pages of 16 in NHD, bf16, one request shorter than the window.
 * Small windows, so the one-key-short twin is far outside the tolerance. */
static const char control_cases[] =
    "{\"description\": \"swadiff's marshalling controls (harness/controls.c)\", \"cases\": ["
    "{\"name\": \"prefill_hnd\", \"requests\": [{\"qo_len\": 5, \"kv_len\": 40}, {\"qo_len\": 7, \"kv_len\": 7},"
    " {\"qo_len\": 3, \"kv_len\": 21}], \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64,"
    " \"dtype\": \"fp16\", \"page_size\": 4, \"layout\": \"HND\", \"window_left\": 6, \"seed\": 7,"
    " \"backends\": [\"prefill\"]},"
    "{\"name\": \"decode_nhd\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 50}, {\"qo_len\": 1, \"kv_len\": 3},"
    " {\"qo_len\": 1, \"kv_len\": 33}], \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 64,"
    " \"dtype\": \"bf16\", \"page_size\": 16, \"layout\": \"NHD\", \"window_left\": 9, \"seed\": 8,"
    " \"backends\": [\"decode_fa2\"]}]}";

#define SAMPLE_MAX 4              /* of the run's own cases */
#define SAMPLE_WORK 20000000.0    /* q.k products a sampled case may take (the controls are double loops) */
#define NEGATIVE_WINDOW_MAX 32    /* a one-key-short window is sure to fail only where windows are short */

/* Cases a plug-in is given and the controls can take quickly. */
static bool eligible(const swa_case *c)
{
    if (c->chunk_size > 0 || c->expect_error[0])
        return false;
    double work = 0;
    for (int r = 0; r < c->num_requests; r++) {
        if (c->kv_len[r] < c->qo_len[r])
            return false;
        work += (double)c->qo_len[r] * c->kv_len[r];
    }
    return work * c->num_qo_heads * c->head_dim <= SAMPLE_WORK;
}

/* Does dropping the oldest key of a window change some row: L >= 1 and a
 * row whose key p - L exists. */
static bool window_binds(const swa_case *c)
{
    if (c->window_left < 1)
        return false;
    for (int r = 0; r < c->num_requests; r++)
        if (c->kv_len[r] - 1 >= c->window_left) /* the last row's p */
            return true;
    return false;
}

/* The features a sampled case adds: decode/prefill, layout, page size 1 or
 * more, one or more requests, GQA, window binding or not, causal, soft cap,
 * dtype. */
static unsigned features(const swa_case *c)
{
    bool decode = true;
    for (int r = 0; r < c->num_requests; r++)
        decode = decode && c->qo_len[r] == 1;
    unsigned f = 0;
    f |= decode ? 1u << 0 : 1u << 1;
    f |= c->layout == SWA_LAYOUT_NHD ? 1u << 2 : 1u << 3;
    f |= c->page_size > 1 ? 1u << 4 : 1u << 5;
    f |= c->num_requests > 1 ? 1u << 6 : 0;
    f |= c->num_qo_heads > c->num_kv_heads ? 1u << 7 : 0;
    f |= window_binds(c) ? 1u << 8 : 1u << 9;
    f |= c->causal ? 0 : 1u << 10;
    f |= c->soft_cap > 0 ? 1u << 11 : 0;
    f |= 1u << (12 + (int)c->dtype);
    return f;
}

/* Up to SAMPLE_MAX of the run's cases, each adding features the ones before
 * lacked, in the run's order: deterministic for a selection. */
static int sample(const swa_case_list *all, const int *selected, int nsel, const swa_case **out)
{
    unsigned seen = 0;
    int n = 0;
    for (int s = 0; s < nsel && n < SAMPLE_MAX; s++) {
        const swa_case *c = &all->cases[selected[s]];
        if (!eligible(c))
            continue;
        unsigned f = features(c);
        if ((f & ~seen) == 0)
            continue;
        seen |= f;
        out[n++] = c;
    }
    return n;
}

static const swa_backend *external_named(const char *name)
{
    int n;
    const swa_backend *const *ext = swa_external_backends(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(ext[i]->name, name) == 0)
            return ext[i];
    return NULL;
}

typedef struct pair {
    const char *positive, *negative;
} pair;

/* Runs one control backend on one prepared case into the next item. */
static void run_control(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b, bool positive,
                        swa_controls *ctl)
{
    if (ctl->count == SWA_CONTROLS_MAX)
        return;
    swa_result r;
    swa_run_one(cfg, ctx, b, &r, NULL, NULL);
    swa_control_result *it = &ctl->items[ctl->count++];
    snprintf(it->backend, sizeof it->backend, "%s", b->name);
    snprintf(it->case_id, sizeof it->case_id, "%s", ctx->c->id);
    it->positive = positive;
    it->outcome = r.outcome;
    it->as_expected = positive ? r.outcome == SWA_OUTCOME_PASSED : r.outcome == SWA_OUTCOME_FAILED;
    snprintf(it->message, sizeof it->message, "%s", r.message);
    swa_compare_result_free(&r.cmp);
}

void swa_controls_run(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int nsel,
                      bool has_plugin, bool has_adapter, swa_run_results *rr)
{
    swa_controls *ctl = &rr->controls;
    memset(ctl, 0, sizeof *ctl);
    if (!has_plugin && !has_adapter)
        return;
    const char *off = getenv("SWADIFF_NO_CONTROLS");
    if (off && *off && strcmp(off, "0")) {
        ctl->state = SWA_CONTROLS_NOT_RUN;
        snprintf(ctl->summary, sizeof ctl->summary, "marshalling controls not run (SWADIFF_NO_CONTROLS is set): the "
                 "external results are unchecked");
        fprintf(stderr, "swadiff: %s\n", ctl->summary);
        return;
    }
    char note[400] = "";
    swa_error err = {0};
    if (swa_external_add_controls(has_plugin, has_adapter, note, sizeof note, &err) != SWA_OK) {
        ctl->state = SWA_CONTROLS_NOT_RUN;
        snprintf(ctl->summary, sizeof ctl->summary, "marshalling controls not run: %s", err.message);
    }
    pair pairs[2];
    int npairs = 0;
    if (has_plugin)
        pairs[npairs++] = (pair){"swadiff_control:exact", "swadiff_control:window_short"};
    if (has_adapter && !note[0])
        pairs[npairs++] = (pair){"swadiff_control_numpy:all_forms", "swadiff_control_numpy_short:window_short"};
    /* the control cases: two built in, then the sample */
    swa_case_list builtin = {0};
    swa_load_error lerr;
    memset(&lerr, 0, sizeof lerr);
    if (swa_case_parse("controls.json", control_cases, sizeof control_cases - 1, &builtin, &lerr) != 0) {
        char why[400];
        swa_load_error_format(&lerr, why, sizeof why);
        ctl->state = SWA_CONTROLS_NOT_RUN;
        snprintf(ctl->summary, sizeof ctl->summary, "marshalling controls not run: their cases: %s", why);
    }
    const swa_case *cases[2 + SAMPLE_MAX];
    int ncases = 0;
    for (int i = 0; i < builtin.count && ncases < 2; i++)
        cases[ncases++] = &builtin.cases[i];
    int nbuiltin = ncases;
    ncases += sample(all, selected, nsel, cases + ncases);
    swa_run_config host = {.device = swa_device_get(SWA_DEVICE_HOST), .quiet = true, .no_isolate = true,
                           .argv0 = cfg->argv0};
    int pos = 0, pos_ok = 0, neg = 0, neg_failed = 0;
    char first_bad[500] = "";
    for (int k = 0; k < ncases && ctl->state == SWA_CONTROLS_NONE; k++) {
        swa_case_ctx ctx;
        if (swa_case_ctx_init(&ctx, cases[k], host.device, &err) != SWA_OK) {
            snprintf(first_bad, sizeof first_bad, "case %s: %s", cases[k]->id, err.message);
            continue;
        }
        bool negative_here = window_binds(cases[k]) && cases[k]->window_left <= NEGATIVE_WINDOW_MAX;
        for (int p = 0; p < npairs; p++) {
            const swa_backend *pb = external_named(pairs[p].positive), *nb = external_named(pairs[p].negative);
            if (!pb || !nb) { /* a control adapter that did not start: its NS:* says why */
                char ns[120];
                snprintf(ns, sizeof ns, "%.*s:*", (int)strcspn(pb ? pairs[p].negative : pairs[p].positive, ":"),
                         pb ? pairs[p].negative : pairs[p].positive);
                const swa_backend *broken = external_named(ns);
                if (broken && !note[0])
                    snprintf(note, sizeof note, "%s", broken->description);
                continue;
            }
            int before = ctl->count;
            run_control(&host, &ctx, pb, true, ctl);
            if (negative_here)
                run_control(&host, &ctx, nb, false, ctl);
            for (int i = before; i < ctl->count; i++) {
                swa_control_result *it = &ctl->items[i];
                if (it->positive) {
                    pos++;
                    pos_ok += it->as_expected;
                } else {
                    neg++;
                    neg_failed += it->as_expected;
                }
                if (it->positive && !it->as_expected && !first_bad[0])
                    snprintf(first_bad, sizeof first_bad, "the positive control %s %s on %s: %s", it->backend,
                             swa_outcome_name(it->outcome), it->case_id, it->message);
            }
        }
        swa_case_ctx_free(&ctx);
    }
    swa_case_list_free(&builtin);
    swa_external_stop_adapters(); /* the workers start their own */
    if (ctl->state == SWA_CONTROLS_NONE) {
        /* an adapter control that could not start (no python3, no numpy) is
         * an environment problem, not a verdict on the staging */
        bool env_failure = pos > 0 && pos_ok == 0;
        for (int i = 0; env_failure && i < ctl->count; i++)
            env_failure = ctl->items[i].outcome == SWA_OUTCOME_ERROR &&
                          (strstr(ctl->items[i].message, "adapter swadiff_control") != NULL ||
                           strstr(ctl->items[i].message, "did not start") != NULL);
        if (pos == 0 || env_failure || note[0]) {
            ctl->state = SWA_CONTROLS_NOT_RUN;
            snprintf(ctl->summary, sizeof ctl->summary, "marshalling controls could not run (%s): the external "
                     "results are unchecked", note[0] ? note : first_bad[0] ? first_bad : "no control backend");
        } else if (pos_ok < pos || (neg > 0 && neg_failed == 0)) {
            ctl->state = SWA_CONTROLS_BROKEN;
            if (pos_ok < pos)
                snprintf(ctl->summary, sizeof ctl->summary, "MARSHALLING BROKEN: %d of %d positive control runs did "
                         "not pass (%s); swadiff's own staging of external backends is wrong, so every external "
                         "result of this run is untrustworthy", pos - pos_ok, pos, first_bad);
            else
                snprintf(ctl->summary, sizeof ctl->summary, "MARSHALLING BROKEN: the one-key-short negative control "
                         "passed all %d of its runs (it must fail where a window binds: the window does not reach "
                         "external backends as L); every external result of this run is untrustworthy", neg);
        } else {
            ctl->state = SWA_CONTROLS_SOUND;
            snprintf(ctl->summary, sizeof ctl->summary, "marshalling controls sound on %d cases (%d built in): "
                     "positive %d/%d passed, negative %d/%d failed as they must", ncases, nbuiltin, pos_ok, pos, neg_failed, neg);
        }
    }
    /* like the device line, said even under --quiet: it is what the run's greens rest on */
    fprintf(stderr, "swadiff: %s\n", ctl->summary);
}

void swa_controls_mark(const swa_controls *ctl, swa_result *r)
{
    if (!ctl || ctl->state != SWA_CONTROLS_BROKEN || swa_external_kind(r->backend) < 0 ||
        swa_external_is_control(r->backend))
        return;
    r->untrustworthy = true;
    if (r->outcome != SWA_OUTCOME_PASSED && r->outcome != SWA_OUTCOME_XPASSED)
        return;
    char was[SWA_MSG_MAX];
    snprintf(was, sizeof was, "%s", r->message);
    r->outcome = SWA_OUTCOME_ERROR;
    r->error_status = SWA_ERR_INVALID;
    snprintf(r->message, sizeof r->message, "untrustworthy: the marshalling controls failed, so this pass proves "
             "nothing (it said: %.600s)", was);
}
