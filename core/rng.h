/* rng.h — SplitMix64 streams (Steele, Lea, Flood 2014), one per tensor,
 * seeded with splitmix64(case.seed ^ fnv1a64(stream name)).  Uniform values
 * are the top 53 bits / 2^53; "normal" is the Irwin–Hall sum of 12 uniforms
 * minus 6, which needs no libm, so every machine draws the same bits.
 * Defined in core/rng.c. */
#ifndef SWADIFF_RNG_H
#define SWADIFF_RNG_H

#include <stdint.h>

typedef struct swa_rng { uint64_t state; } swa_rng;

#ifdef __cplusplus
extern "C" {
#endif
uint64_t swa_splitmix64(uint64_t *state);
uint64_t swa_fnv1a64(const char *s);
void swa_rng_seed(swa_rng *rng, uint64_t case_seed, const char *stream_name);
double swa_rng_uniform(swa_rng *rng);   /* [0, 1) */
double swa_rng_normal(swa_rng *rng);    /* Irwin–Hall(12) - 6 */
uint64_t swa_rng_below(swa_rng *rng, uint64_t n); /* [0, n), unbiased */
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_RNG_H */
