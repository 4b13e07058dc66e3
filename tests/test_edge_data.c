/* test_edge_data.c — the "edge" data mode (core/data.c) makes a one-key
 * window error visible at any window size.
 *
 *   ctest --test-dir build -R test_edge_data --output-on-failure
 *
 * With normal data, a window one key too short or too long at
 * window_left ~ 1024 moves a bf16 output by ~1e-3, under the 1e-2
 * tolerance.  On edge data, for window_left L in {1023, 4095, 8191}, bf16
 * and fp16, decode and a small prefill:
 *   - the exact reference with window L-1 and with L+1 differs from the one
 *     with window L by >= 10x the case's default allowance (compare.h,
 *     swa_tolerance_defaults) on EVERY (row, head) where the window binds;
 *   - the values are finite and in range (|x| < 65504, |logit| <= 2000);
 *   - on the host emulation the correct kernels pass with room to spare,
 *     and the off-by-one mutants fail on every row where the window binds.
 * The margins are printed (min over rows and heads of max_d |diff| /
 * allowed), so the figures of docs/cases.md can be checked. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/case_load.h"
#include "tests/test_case_util.h"
#include "harness/compare.h"
#include "harness/run.h"
#include "reference/reference.h"

typedef struct edge_param {
    int L;
    char dtype[8];
    char shape[8]; /* "decode" or "prefill" */
    int soft_cap;  /* 0: none */
} edge_param;

static edge_param PARAMS[] = {
    {1023, "bf16", "decode", 0},  {1023, "fp16", "decode", 0},  {1023, "bf16", "prefill", 0},
    {1023, "fp16", "prefill", 0}, {4095, "bf16", "decode", 0},  {4095, "fp16", "decode", 0},
    {4095, "bf16", "prefill", 0}, {4095, "fp16", "prefill", 0}, {8191, "bf16", "decode", 0},
    {8191, "fp16", "decode", 0},  {8191, "bf16", "prefill", 0}, {8191, "fp16", "prefill", 0},
    /* Gemma-2's logit soft cap compresses large logits: the data keep the
     * rows' edges where the cap is still steep */
    {4095, "bf16", "decode", 50}, {4095, "bf16", "prefill", 50}, {1023, "fp16", "prefill", 30},
};

/* Decode: the window binds by 1 key, by 100, by L, and not at all (kv_len
 * L - 5); prefill: 16 rows all past the window, and 16 rows of which the
 * first 8 are not (p = L - 8 ... L + 7). */
static swa_case_list load_case(const edge_param *p)
{
    char json[1024];
    const int L = p->L;
    if (!strcmp(p->shape, "decode"))
        snprintf(json, sizeof json,
                 "{\"name\": \"e\", \"requests\": [{\"qo_len\": 1, \"kv_len\": %d}, {\"qo_len\": 1, \"kv_len\": %d},"
                 " {\"qo_len\": 1, \"kv_len\": %d}, {\"qo_len\": 1, \"kv_len\": %d}], \"num_qo_heads\": 8,"
                 " \"num_kv_heads\": 2, \"head_dim\": 128, \"dtype\": \"%s\", \"page_size\": 16,"
                 " \"window_left\": %d, \"soft_cap\": %d, \"data\": \"edge\","
                 " \"backends\": [\"decode_fa2\", \"decode_aiter\"]}",
                 L + 2, L + 101, 2 * L + 1, L - 5, p->dtype, L, p->soft_cap);
    else
        snprintf(json, sizeof json,
                 "{\"name\": \"e\", \"requests\": [{\"qo_len\": 16, \"kv_len\": %d}, {\"qo_len\": 16, \"kv_len\": %d}],"
                 " \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 128, \"dtype\": \"%s\","
                 " \"page_size\": 16, \"window_left\": %d, \"soft_cap\": %d, \"data\": \"edge\","
                 " \"backends\": [\"prefill\"]}",
                 L + 40, L + 8, p->dtype, L, p->soft_cap);
    swa_case_list list = load_inline_case("edge.json", json);
    cr_assert_eq(list.count, 1);
    return list;
}

/* Exact reference of c with the window set to L (the spec's mask otherwise). */
static double *reference_with_window(const swa_case *c, const swa_inputs *in, int L)
{
    swa_case v = *c;
    v.window_left = L;
    swa_ref_mask m = swa_ref_mask_spec(&v);
    size_t n = (size_t)in->total_qo * c->num_qo_heads * c->head_dim;
    double *out = malloc(n * sizeof *out);
    cr_assert(out);
    swa_error err = {0};
    cr_assert_eq(swa_reference(&v, in, &m, out, NULL, &err), SWA_OK, "%s", err.message);
    return out;
}

/* Row position and whether the window binds (some key left of it). */
static bool row_binds(const swa_case *c, const swa_inputs *in, int row, int *pos)
{
    int r = 0;
    while (row >= in->qo_indptr[r + 1])
        r++;
    *pos = c->kv_len[r] - c->qo_len[r] + (row - in->qo_indptr[r]);
    return c->window_left >= 0 && *pos - c->window_left > 0;
}

/* min over binding (row, head) of max_d |a - b| / (atol + rtol |a|). */
static double min_margin(const swa_case *c, const swa_inputs *in, const double *a, const double *b, int *rows)
{
    double atol, rtol;
    swa_tolerance_defaults(c->dtype, &atol, &rtol, NULL);
    const int H = c->num_qo_heads, D = c->head_dim;
    double worst = INFINITY;
    *rows = 0;
    for (int row = 0; row < in->total_qo; row++) {
        int pos;
        if (!row_binds(c, in, row, &pos))
            continue;
        ++*rows;
        for (int h = 0; h < H; h++) {
            double best = 0;
            for (int d = 0; d < D; d++) {
                size_t i = ((size_t)row * H + h) * D + d;
                double ratio = fabs(a[i] - b[i]) / (atol + rtol * fabs(a[i]));
                if (ratio > best)
                    best = ratio;
            }
            if (best < worst)
                worst = best;
        }
    }
    return worst;
}

ParameterizedTestParameters(edge_data, one_key_moves_every_binding_row)
{
    return cr_make_param_array(edge_param, PARAMS, sizeof PARAMS / sizeof PARAMS[0]);
}

ParameterizedTest(edge_param *p, edge_data, one_key_moves_every_binding_row)
{
    swa_case_list list = load_case(p);
    const swa_case *c = &list.cases[0];
    swa_inputs in;
    swa_error err = {0};
    cr_assert_eq(swa_inputs_create(c, &in, &err), SWA_OK, "%s", err.message);

    /* finite and in range: q, k, v below fp16's largest value, logits
     * (q . k * sm_scale) far below what fp32 exp-with-max-subtraction takes */
    const int H = c->num_qo_heads, Hk = c->num_kv_heads, D = c->head_dim, group = H / Hk;
    size_t nq = (size_t)in.total_qo * H * D, nk = (size_t)in.total_kv * Hk * D;
    for (size_t i = 0; i < nq; i++)
        cr_assert(isfinite(in.q[i]) && fabsf(in.q[i]) < 65504.0f, "q[%zu] = %g", i, in.q[i]);
    for (size_t i = 0; i < nk; i++) {
        cr_assert(isfinite(in.k[i]) && fabsf(in.k[i]) < 65504.0f, "k[%zu] = %g", i, in.k[i]);
        cr_assert(isfinite(in.v[i]) && fabsf(in.v[i]) <= 2.0f, "v[%zu] = %g", i, in.v[i]);
    }
    double max_logit = 0;
    for (int r = 0; r < c->num_requests; r++)
        for (int row = in.qo_indptr[r]; row < in.qo_indptr[r + 1]; row++)
            for (int h = 0; h < H; h += group) /* one head per kv head: the others differ by a factor <= 1.75 */
                for (int t = in.kv_indptr[r]; t < in.kv_indptr[r + 1]; t++) {
                    const float *q = in.q + ((size_t)row * H + h) * D, *k = in.k + ((size_t)t * Hk + h / group) * D;
                    double s = 0;
                    for (int d = 0; d < D; d++)
                        s += (double)q[d] * k[d];
                    s = fabs(s * c->sm_scale);
                    if (s > max_logit)
                        max_logit = s;
                }
    cr_assert_leq(max_logit * 1.75, 2000.0, "|logit| up to %g", max_logit * 1.75);

    double *ref = reference_with_window(c, &in, p->L);
    double *shorter = reference_with_window(c, &in, p->L - 1);
    double *longer = reference_with_window(c, &in, p->L + 1);
    int rows = 0;
    double m_short = min_margin(c, &in, ref, shorter, &rows);
    double m_long = min_margin(c, &in, ref, longer, &rows);
    fprintf(stderr, "edge margins: L=%d %s %-7s cap %2d: %d binding rows, min over (row, head) of max|diff|/allowed: "
            "window L-1 %.1f, window L+1 %.1f (max |logit| %.1f)\n",
            p->L, p->dtype, p->shape, p->soft_cap, rows, m_short, m_long, max_logit * 1.75);
    cr_assert_gt(rows, 0);
    cr_assert_geq(m_short, 10.0, "L=%d %s %s: dropping the edge key moves some row by only %.2f x the allowance",
                  p->L, p->dtype, p->shape, m_short);
    cr_assert_geq(m_long, 10.0, "L=%d %s %s: adding the key before the edge moves some row by only %.2f x the "
                  "allowance", p->L, p->dtype, p->shape, m_long);
    free(ref);
    free(shorter);
    free(longer);
    swa_inputs_free(&in);
    swa_case_list_free(&list);
}

/* The host emulation, which rounds as the kernels do: the correct kernels
 * pass with room to spare (edge data must never need a looser tolerance),
 * and each off-by-one mutant fails on every (row, head) where the window
 * binds. */
static void run_backend(const swa_case *c, swa_case_ctx *ctx, const char *backend, swa_mutant m, swa_result *r)
{
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_run_config cfg = {.device = host, .mutant = m, .quiet = true, .no_isolate = true, .argv0 = "swadiff"};
    const swa_backend *b = swa_backend_by_name(backend);
    cr_assert(b);
    (void)c;
    swa_run_one(&cfg, ctx, b, r, NULL, NULL);
}

ParameterizedTestParameters(edge_data, host_kernels_pass_and_off_by_one_fails_every_row)
{
    return cr_make_param_array(edge_param, PARAMS, sizeof PARAMS / sizeof PARAMS[0]);
}

ParameterizedTest(edge_param *p, edge_data, host_kernels_pass_and_off_by_one_fails_every_row)
{
    swa_case_list list = load_case(p);
    const swa_case *c = &list.cases[0];
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, c, host, &err), SWA_OK, "%s", err.message);

    bool decode = !strcmp(p->shape, "decode");
    const char *correct[2] = {decode ? "decode_fa2" : "prefill", decode ? "decode_aiter" : NULL};
    for (int i = 0; i < 2 && correct[i]; i++) {
        swa_result r;
        run_backend(c, &ctx, correct[i], SWA_MUTANT_NONE, &r);
        cr_assert_eq(r.outcome, SWA_OUTCOME_PASSED, "%s unmutated: %s", correct[i], r.message);
        double used = r.cmp.max_abs_allowed > 0 ? r.cmp.max_abs_diff / r.cmp.max_abs_allowed : 0;
        fprintf(stderr, "edge host: L=%d %s %-7s cap %2d %-12s unmutated: greatest |diff| %.3g (%.2f of its "
                "allowance)\n", p->L, p->dtype, p->shape, p->soft_cap, correct[i], r.cmp.max_abs_diff, used);
        cr_assert_leq(used, 0.5, "%s: a correct kernel used %.2f of the allowance on edge data", correct[i], used);
        swa_compare_result_free(&r.cmp);
    }

    const struct {
        const char *backend, *mutant;
    } bugs[] = {
        {decode ? "decode_fa2" : "prefill", "left_bound_gt"},
        {decode ? "decode_fa2" : "prefill", "left_bound_minus1"},
        {decode ? "decode_aiter" : NULL, "aiter_s_eq_l"},
    };
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
        if (!bugs[i].backend)
            continue;
        swa_result r;
        run_backend(c, &ctx, bugs[i].backend, swa_mutant_by_name(bugs[i].mutant), &r);
        cr_assert_eq(r.outcome, SWA_OUTCOME_FAILED, "%s/%s survived: %s", bugs[i].backend, bugs[i].mutant, r.message);
        /* every binding (row, head) is out of tolerance, by >= 10x */
        double worst = INFINITY;
        for (int row = 0; row < r.cmp.rows; row++) {
            int pos;
            if (!row_binds(c, &ctx.in, row, &pos))
                continue;
            for (int h = 0; h < r.cmp.heads; h++) {
                float ratio = r.cmp.row_head_ratio[(size_t)row * r.cmp.heads + h];
                if (ratio < worst)
                    worst = ratio;
            }
        }
        fprintf(stderr, "edge host: L=%d %s %-7s cap %2d %-12s %-17s: min over binding (row, head) of worst "
                "|diff|/allowed %.1f\n", p->L, p->dtype, p->shape, p->soft_cap, bugs[i].backend, bugs[i].mutant, worst);
        cr_assert_geq(worst, 10.0, "%s/%s: some binding row moved by only %.2f x the allowance", bugs[i].backend,
                      bugs[i].mutant, worst);
        swa_compare_result_free(&r.cmp);
    }
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
}

/* The logits are the same in every kernel: q . k is a sum of products of
 * small integers and dtype values that fp32 holds exactly in any order, so
 * accumulation order (MMA fragments, split K) cannot move them.  And the
 * data are deterministic, like every distribution. */
Test(edge_data, logits_exact_in_fp32_and_deterministic)
{
    const char *json =
        "{\"name\": \"x\", \"requests\": [{\"qo_len\": 40, \"kv_len\": 300}, {\"qo_len\": 1, \"kv_len\": 77}],"
        " \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": [\"fp16\", \"bf16\"],"
        " \"window_left\": [-1, 0, 5, 100], \"soft_cap\": [0, 30], \"data\": \"edge\", \"backends\": [\"prefill\"]}";
    swa_case_list list = {0};
    swa_load_error le;
    cr_assert_eq(swa_case_parse("x.json", json, strlen(json), &list, &le), 0);
    for (int ci = 0; ci < list.count; ci++) {
        const swa_case *c = &list.cases[ci];
        swa_inputs in, again;
        swa_error err = {0};
        cr_assert_eq(swa_inputs_create(c, &in, &err), SWA_OK, "%s", err.message);
        cr_assert_eq(swa_inputs_create(c, &again, &err), SWA_OK, "%s", err.message);
        const int H = c->num_qo_heads, Hk = c->num_kv_heads, D = c->head_dim, group = H / Hk;
        size_t nq = (size_t)in.total_qo * H * D, nk = (size_t)in.total_kv * Hk * D;
        cr_assert(!memcmp(in.q, again.q, nq * sizeof(float)) && !memcmp(in.k, again.k, nk * sizeof(float)) &&
                      !memcmp(in.v, again.v, nk * sizeof(float)),
                  "%s: two creations differ", c->id);
        for (int r = 0; r < c->num_requests; r++)
            for (int row = in.qo_indptr[r]; row < in.qo_indptr[r + 1]; row++)
                for (int h = 0; h < H; h++)
                    for (int t = in.kv_indptr[r]; t < in.kv_indptr[r + 1]; t++) {
                        const float *q = in.q + ((size_t)row * H + h) * D;
                        const float *k = in.k + ((size_t)t * Hk + h / group) * D;
                        float fwd = 0, bwd = 0;
                        double exact = 0;
                        for (int d = 0; d < D; d++) {
                            fwd += q[d] * k[d];
                            bwd += q[D - 1 - d] * k[D - 1 - d];
                            exact += (double)q[d] * k[d];
                        }
                        cr_assert((double)fwd == exact && (double)bwd == exact,
                                  "%s: row %d head %d key %d: fp32 %.9g / %.9g, exact %.17g", c->id, row, h, t,
                                  fwd, bwd, exact);
                    }
        swa_inputs_free(&in);
        swa_inputs_free(&again);
    }
    swa_case_list_free(&list);
}
