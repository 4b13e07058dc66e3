/* rng.c — the deterministic random streams every input is drawn from.
 *
 * Test: tests/test_data.c (known SplitMix64 outputs, determinism). */
#include "core/rng.h"

uint64_t swa_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t swa_fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

void swa_rng_seed(swa_rng *rng, uint64_t case_seed, const char *stream_name)
{
    uint64_t s = case_seed ^ swa_fnv1a64(stream_name);
    rng->state = swa_splitmix64(&s);
}

double swa_rng_uniform(swa_rng *rng)
{
    return (double)(swa_splitmix64(&rng->state) >> 11) * 0x1.0p-53;
}

/* The twelve 53-bit integers are summed exactly (they fit in 57 bits) and
 * scaled once: no rounding depends on the order of floating-point adds. */
double swa_rng_normal(swa_rng *rng)
{
    uint64_t sum = 0;
    for (int i = 0; i < 12; i++)
        sum += swa_splitmix64(&rng->state) >> 11;
    return (double)(int64_t)(sum - (6ull << 53)) * 0x1.0p-53;
}

/* Rejection of the low 2^64 mod n outputs makes every residue equally likely. */
uint64_t swa_rng_below(swa_rng *rng, uint64_t n)
{
    if (n <= 1)
        return 0;
    uint64_t threshold = (0 - n) % n; /* == 2^64 mod n */
    for (;;) {
        uint64_t r = swa_splitmix64(&rng->state);
        if (r >= threshold)
            return r % n;
    }
}

