/* ref_exp.h — exp(x) for x <= 0 in double, for the reference's softmax.
 *
 * Why not libm's exp: on the prefill bench shape the softmax makes one exp
 * call per visible (row, key) pair and libm's exp (a call, a wrapper, errno
 * handling) took about a quarter of the reference's time on an idle Xeon.
 * This is the textbook table method (Tang 1989): x = (k*128 + j) * ln2/128
 * + r, exp(x) = 2^k * 2^(j/128) * exp(r), |r| <= ln2/256, exp(r) - 1 by
 * its Taylor polynomial to r^5 (truncation below 1e-18 relative).  The 128
 * values 2^(j/128) are kept as hi + lo pairs computed in long double, and
 * the result is assembled as hi + (hi * (exp(r) - 1) + lo), so the only
 * sizeable rounding is the last addition: within about 1 ulp of libm
 * (tests/test_reference.c checks it over [-746, 0] and at the special
 * values).  That is ~2e-16 relative, far below the 1e-12 the reference is
 * held to.
 *
 * Domain: x <= 0, -inf and NaN (x - max in a softmax); x > 0 goes to libm. */
#ifndef SWADIFF_REF_EXP_H
#define SWADIFF_REF_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define REF_EXP_TABLE_BITS 7
#define REF_EXP_TABLE_SIZE (1 << REF_EXP_TABLE_BITS)

/* 2^(j/128) = [j][0] + [j][1], j = 0..127; filled by ref_exp_init
 * (idempotent, thread-safe). */
extern double ref_exp_table[REF_EXP_TABLE_SIZE][2];
void ref_exp_init(void);

static inline double ref_exp_nonpositive(double x)
{
    /* 128 / ln 2, and ln 2 / 128 split so that k * hi is exact for
     * |k| < 2^18 (hi has 32 significant bits; |k| <= 138000 here) */
    const double inv_step = 184.6649652337873;             /* 128 / ln2 */
    const double step_hi = 0x1.62e42fefp-8;                 /* ln2 / 128, high part */
    const double step_lo = 0x1.473de6af278edp-41;           /* ln2 / 128 - step_hi */
    if (!(x >= -745.2)) /* NaN stays NaN; below -745.13 exp underflows to 0 */
        return x != x ? x : 0.0;
    if (x > 0)
        return exp(x);
    double kd = (x * inv_step + 0x1.8p52) - 0x1.8p52; /* round to nearest integer */
    long long k = (long long)kd;
    double r = (x - kd * step_hi) - kd * step_lo;
    double q = r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120))))); /* e^r - 1 */
    long long m = k >> REF_EXP_TABLE_BITS;   /* floor(k / 128): k <= 0 */
    int j = (int)(k & (REF_EXP_TABLE_SIZE - 1));
    double y = ref_exp_table[j][0] + (ref_exp_table[j][0] * q + ref_exp_table[j][1]);
    if (m < -1022)
        return ldexp(y, (int)m);   /* subnormal result: let ldexp round it */
    uint64_t bits = (uint64_t)(m + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

#endif /* SWADIFF_REF_EXP_H */
