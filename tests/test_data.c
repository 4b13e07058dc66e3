/* test_data.c — deterministic inputs: the PRNG against published values,
 * per-tensor streams, dtype rounding, poison placement, the size estimate.
 *
 * Run: ctest --test-dir build -R test_data --output-on-failure */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/rng.h"

/* SplitMix64 reference outputs (Vigna's splitmix64.c; the seed-1234567
 * sequence is the one Java's SplittableRandom documentation and many ports
 * test against).  Also recomputed by hand from the three xor-shift-multiply
 * steps before being written here. */
Test(data, splitmix64_known_outputs)
{
    const uint64_t from_zero[5] = {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full,
                                   0xf88bb8a8724c81ecull, 0x1b39896a51a8749bull};
    const uint64_t from_1234567[5] = {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull,
                                      4593380528125082431ull, 16408922859458223821ull};
    uint64_t s = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t x = swa_splitmix64(&s);
        cr_expect_eq(x, from_zero[i], "seed 0, output %d: %#llx", i, (unsigned long long)x);
    }
    s = 1234567;
    for (int i = 0; i < 5; i++) {
        uint64_t x = swa_splitmix64(&s);
        cr_expect_eq(x, from_1234567[i], "seed 1234567, output %d: %llu", i, (unsigned long long)x);
    }
}

/* FNV-1a 64 test vectors (Fowler/Noll/Vo). */
Test(data, fnv1a64_known_hashes)
{
    cr_expect_eq(swa_fnv1a64(""), 0xcbf29ce484222325ull);
    cr_expect_eq(swa_fnv1a64("a"), 0xaf63dc4c8601ec8cull);
    cr_expect_eq(swa_fnv1a64("foobar"), 0x85944171f73967e8ull);
}

/* A stream is seeded with splitmix64(seed ^ fnv1a64(name)), as data.h
 * documents: the first raw output of stream "q" under seed 0. */
Test(data, stream_seeding_as_documented)
{
    swa_rng rng;
    swa_rng_seed(&rng, 0, "q");
    uint64_t x = swa_splitmix64(&rng.state);
    cr_expect_eq(x, 0x2df45138c25fcd50ull, "first output of stream q: %#llx", (unsigned long long)x);
    swa_rng_seed(&rng, 0, "q");
    double u = swa_rng_uniform(&rng);
    cr_expect_eq(u, (double)(0x2df45138c25fcd50ull >> 11) / 9007199254740992.0, "uniform %.17g", u);
    swa_rng a, b;
    swa_rng_seed(&a, 5, "k");
    swa_rng_seed(&b, 5, "v");
    cr_expect_neq(a.state, b.state, "streams k and v of one seed must differ");
}

Test(data, distributions_have_their_moments)
{
    swa_rng rng;
    swa_rng_seed(&rng, 99, "moments");
    const int n = 200000;
    double sum = 0, sum2 = 0, umin = 1, umax = 0, nmin = 0, nmax = 0;
    for (int i = 0; i < n; i++) {
        double u = swa_rng_uniform(&rng);
        umin = fmin(umin, u);
        umax = fmax(umax, u);
        double z = swa_rng_normal(&rng);
        nmin = fmin(nmin, z);
        nmax = fmax(nmax, z);
        sum += z;
        sum2 += z * z;
    }
    cr_expect(umin >= 0.0 && umax < 1.0, "uniform outside [0, 1): %g..%g", umin, umax);
    cr_expect(umin < 1e-3 && umax > 1 - 1e-3, "uniform does not cover [0, 1): %g..%g", umin, umax);
    double mean = sum / n, var = sum2 / n - mean * mean;
    cr_expect(fabs(mean) < 0.01, "normal mean %g", mean);
    cr_expect(fabs(var - 1.0) < 0.02, "normal variance %g", var);
    cr_expect(nmin >= -6.0 && nmax <= 6.0, "Irwin-Hall(12) - 6 lies in [-6, 6]: %g..%g", nmin, nmax);
}

Test(data, below_is_in_range_and_even)
{
    swa_rng rng;
    swa_rng_seed(&rng, 3, "below");
    int counts[3] = {0};
    for (int i = 0; i < 30000; i++) {
        uint64_t x = swa_rng_below(&rng, 3);
        cr_assert_lt(x, 3u);
        counts[x]++;
    }
    for (int i = 0; i < 3; i++)
        cr_expect(abs(counts[i] - 10000) < 400, "value %d drawn %d times of 30000", i, counts[i]);
    cr_expect_eq(swa_rng_below(&rng, 1), 0u);
    uint64_t big = swa_rng_below(&rng, UINT64_MAX);
    cr_expect_lt(big, UINT64_MAX);
}

/* --------------------------------------------------------------------------- */

static int qo_small[3] = {3, 1, 8}, kv_small[3] = {20, 9, 8};

static swa_case small_case(swa_dtype dtype, swa_dist dist, uint64_t seed)
{
    swa_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "test/small");
    c.num_requests = 3;
    c.qo_len = qo_small;
    c.kv_len = kv_small;
    c.num_qo_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 64;
    c.dtype = dtype;
    c.page_size = 7;
    c.layout = SWA_LAYOUT_NHD;
    c.causal = true;
    c.window_left = 4;
    c.sm_scale = 0.125;
    c.backends = SWA_BACKEND_PREFILL;
    c.dist = dist;
    c.seed = seed;
    return c;
}

static size_t q_elems(const swa_inputs *in) { return (size_t)in->total_qo * in->num_qo_heads * in->head_dim; }
static size_t kv_elems(const swa_inputs *in) { return (size_t)in->total_kv * in->num_kv_heads * in->head_dim; }

Test(data, same_case_same_tensors)
{
    swa_case c = small_case(SWA_DTYPE_BF16, SWA_DIST_NORMAL, 7);
    swa_inputs a, b;
    swa_error err;
    cr_assert_eq(swa_inputs_create(&c, &a, &err), SWA_OK, "%s", err.message);
    cr_assert_eq(swa_inputs_create(&c, &b, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(a.total_qo, 12);
    cr_expect_eq(a.total_kv, 37);
    cr_expect_eq(memcmp(a.q, b.q, q_elems(&a) * 4), 0);
    cr_expect_eq(memcmp(a.k, b.k, kv_elems(&a) * 4), 0);
    cr_expect_eq(memcmp(a.v, b.v, kv_elems(&a) * 4), 0);
    cr_expect_eq(memcmp(a.k_raw, b.k_raw, kv_elems(&a) * 2), 0);
    cr_assert_eq(a.paged.num_pages, b.paged.num_pages);
    size_t pool = (size_t)a.paged.num_pages * a.paged.page_size * a.paged.num_kv_heads * a.paged.head_dim * 2;
    cr_expect_eq(memcmp(a.paged.k_pages, b.paged.k_pages, pool), 0, "pools differ (NaN bits included)");
    cr_expect_eq(memcmp(a.paged.indices, b.paged.indices, (size_t)a.paged.indptr[3] * sizeof(int)), 0);
    swa_inputs_free(&a);
    swa_inputs_free(&b);
}

Test(data, different_seeds_and_tensors_differ)
{
    swa_case c1 = small_case(SWA_DTYPE_FP32, SWA_DIST_NORMAL, 1);
    swa_case c2 = small_case(SWA_DTYPE_FP32, SWA_DIST_NORMAL, 2);
    swa_inputs a, b;
    swa_error err;
    cr_assert_eq(swa_inputs_create(&c1, &a, &err), SWA_OK, "%s", err.message);
    cr_assert_eq(swa_inputs_create(&c2, &b, &err), SWA_OK, "%s", err.message);
    size_t same = 0;
    for (size_t i = 0; i < q_elems(&a); i++)
        same += a.q[i] == b.q[i];
    cr_expect_lt(same, q_elems(&a) / 100, "seeds 1 and 2 share %zu of %zu q values", same, q_elems(&a));
    same = 0;
    for (size_t i = 0; i < kv_elems(&a); i++)
        same += a.k[i] == a.v[i];
    cr_expect_lt(same, kv_elems(&a) / 100, "k and v share %zu values", same);
    swa_inputs_free(&a);
    swa_inputs_free(&b);
}

/* Every value is the documented stream's draw rounded to the dtype, and the
 * raw storage holds exactly that value. */
Test(data, values_are_rounded_draws)
{
    const swa_dtype dtypes[3] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16, SWA_DTYPE_FP32};
    const swa_dist dists[2] = {SWA_DIST_NORMAL, SWA_DIST_UNIFORM};
    for (int d = 0; d < 3; d++) {
        for (int s = 0; s < 2; s++) {
            swa_case c = small_case(dtypes[d], dists[s], 11);
            swa_inputs in;
            swa_error err;
            cr_assert_eq(swa_inputs_create(&c, &in, &err), SWA_OK, "%s", err.message);
            swa_rng rng;
            swa_rng_seed(&rng, 11, "k");
            size_t changed_by_rounding = 0;
            for (size_t i = 0; i < kv_elems(&in); i++) {
                double draw = dists[s] == SWA_DIST_UNIFORM ? 2.0 * swa_rng_uniform(&rng) - 1.0 : swa_rng_normal(&rng);
                float expected = swa_round_to(dtypes[d], (float)draw);
                cr_assert_eq(in.k[i], expected, "%s %s k[%zu] = %.9g, expected %.9g", swa_dtype_name(dtypes[d]),
                             s ? "uniform" : "normal", i, in.k[i], expected);
                cr_assert_eq(swa_load(dtypes[d], in.k_raw, i), in.k[i], "raw k[%zu] differs", i);
                changed_by_rounding += (double)expected != draw;
                if (dists[s] == SWA_DIST_UNIFORM)
                    cr_assert(in.k[i] >= -1.0f && in.k[i] <= 1.0f, "uniform k[%zu] = %g", i, in.k[i]);
            }
            cr_expect_gt(changed_by_rounding, kv_elems(&in) / 2, "%s: rounding changed only %zu values",
                         swa_dtype_name(dtypes[d]), changed_by_rounding);
            for (size_t i = 0; i < q_elems(&in); i++)
                cr_assert_eq(in.q[i], swa_round_to(dtypes[d], in.q[i]), "q[%zu] not representable", i);
            swa_inputs_free(&in);
        }
    }
}

/* Visibility computed straight from docs/spec.md, independently of data.c. */
static bool key_visible_to_some_row(int qo_len, int kv_len, bool causal, int window_left, int key)
{
    for (int row = 0; row < qo_len; row++) {
        int p = kv_len - qo_len + row;
        bool visible = (!causal || key <= p) && (window_left < 0 || key >= p - window_left);
        if (visible)
            return true;
    }
    return false;
}

Test(data, poison_marks_exactly_the_invisible_keys)
{
    int qo[4] = {1, 6, 12, 5}, kv[4] = {64, 20, 12, 5};
    const int windows[] = {-1, 0, 1, 4, 11, 19, 63, 64, 1000};
    for (int causal = 0; causal < 2; causal++) {
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
            swa_case c = small_case(SWA_DTYPE_FP16, SWA_DIST_POISON, 5);
            c.num_requests = 4;
            c.qo_len = qo;
            c.kv_len = kv;
            c.causal = causal;
            c.window_left = windows[w];
            c.window_right = causal ? 0 : -1;
            swa_inputs in;
            swa_error err;
            cr_assert_eq(swa_inputs_create(&c, &in, &err), SWA_OK, "%s", err.message);
            int row = in.num_kv_heads * in.head_dim;
            for (int r = 0; r < 4; r++) {
                for (int t = 0; t < kv[r]; t++) {
                    bool invisible = !key_visible_to_some_row(qo[r], kv[r], causal, windows[w], t);
                    const float *v = &in.v[(size_t)(in.kv_indptr[r] + t) * row];
                    const float *k = &in.k[(size_t)(in.kv_indptr[r] + t) * row];
                    for (int j = 0; j < row; j++) {
                        float want = (j % in.head_dim) % 2 ? -4096.0f : 4096.0f;
                        if (invisible)
                            cr_assert_eq(v[j], want, "causal %d L %d r %d key %d: v[%d] = %g, expected poison", causal,
                                         windows[w], r, t, j, v[j]);
                        else
                            cr_assert(fabsf(v[j]) <= 6.0f, "causal %d L %d r %d key %d visible but v[%d] = %g", causal,
                                      windows[w], r, t, j, v[j]);
                        if (invisible)
                            cr_assert(isnan(k[j]), "causal %d L %d r %d key %d: k = %g, expected NaN", causal,
                                      windows[w], r, t, k[j]);
                        else
                            cr_assert(fabsf(k[j]) <= 6.0f, "visible K stays normal: k = %g", k[j]);
                    }
                    float paged[64];
                    swa_paged_gather(&in.paged, 1, r, t, 0, paged);
                    cr_assert_eq(paged[0], v[0], "the paged V carries the poison too");
                }
            }
            swa_inputs_free(&in);
        }
    }
}

/* 4096 is exact in every dtype, so the poison survives rounding. */
Test(data, poison_value_exact_in_every_dtype)
{
    cr_expect_eq(swa_round_to(SWA_DTYPE_FP16, 4096.0f), 4096.0f);
    cr_expect_eq(swa_round_to(SWA_DTYPE_BF16, -4096.0f), -4096.0f);
    swa_case c = small_case(SWA_DTYPE_BF16, SWA_DIST_POISON, 1);
    swa_inputs in;
    swa_error err;
    cr_assert_eq(swa_inputs_create(&c, &in, &err), SWA_OK, "%s", err.message);
    /* request 0: qo 3, kv 20, L 4: keys 0..12 are invisible */
    cr_expect_eq(swa_load(SWA_DTYPE_BF16, in.v_raw, 0), 4096.0f);
    cr_expect_eq(swa_load(SWA_DTYPE_BF16, in.v_raw, 1), -4096.0f);
    size_t row = (size_t)in.num_kv_heads * in.head_dim;
    cr_expect_eq(in.v[12 * row], 4096.0f, "key 12 = prefix 17 - L 4 - 1 is invisible");
    cr_expect_neq(in.v[13 * row], 4096.0f, "key 13 is seen by row 0");
    swa_inputs_free(&in);
}

Test(data, host_bytes_covers_the_allocations)
{
    swa_case c = small_case(SWA_DTYPE_FP16, SWA_DIST_NORMAL, 0);
    swa_inputs in;
    swa_error err;
    cr_assert_eq(swa_inputs_create(&c, &in, &err), SWA_OK, "%s", err.message);
    size_t ds = 2;
    size_t allocated = q_elems(&in) * (4 + ds) + 2 * kv_elems(&in) * (4 + ds) +
                       (size_t)in.paged.num_pages * in.paged.page_size * in.num_kv_heads * in.head_dim * 2 * ds;
    size_t outputs = q_elems(&in) * (ds + 8 + 4);
    size_t estimate = swa_case_host_bytes(&c);
    cr_expect_geq(estimate, allocated + outputs, "estimate %zu < inputs %zu + outputs %zu", estimate, allocated, outputs);
    cr_expect_lt(estimate, 4 * (allocated + outputs), "estimate %zu far above %zu", estimate, allocated + outputs);
    swa_inputs_free(&in);

    /* a huge case is estimated, not allocated */
    int big_qo[1] = {1}, big_kv[1] = {1 << 24};
    c.num_requests = 1;
    c.qo_len = big_qo;
    c.kv_len = big_kv;
    c.num_kv_heads = 1024;
    c.num_qo_heads = 1024;
    c.head_dim = 256;
    cr_expect_gt(swa_case_host_bytes(&c), (size_t)1 << 42, "%zu", swa_case_host_bytes(&c));
}

Test(data, invalid_case_is_an_error_not_a_crash)
{
    swa_case c = small_case(SWA_DTYPE_FP16, SWA_DIST_NORMAL, 0);
    int bad_kv[3] = {0, 9, 8};
    c.kv_len = bad_kv; /* request 0: no key (qo_len > kv_len >= 1 is valid: empty rows) */
    swa_inputs in;
    swa_error err;
    cr_expect_eq(swa_inputs_create(&c, &in, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "request 0") != NULL, "%s", err.message);
    c = small_case(SWA_DTYPE_FP16, SWA_DIST_NORMAL, 0);
    c.num_kv_heads = 3;
    cr_expect_eq(swa_inputs_create(&c, &in, &err), SWA_ERR_INVALID);
}
