/*
 * fw_backend_random.h - the random-fill kernel family of a backend (private
 * to framework/; see fw_backend.h). The generator state (seed, offset)
 * stays host-side in random/: an op reserves counter blocks with
 * fw_generator_reserve() (advancing the offset) and passes the kernel the
 * key (seed) and its first block (base). Every backend must produce
 * exactly the CPU's numbers for the same (seed, base): the layout below is
 * the contract (random/philox.c computes it; the tests recompute it).
 *
 * Philox4x32-10 (Salmon et al. 2011; constants M0 0xD2511F53, M1
 * 0xCD9E8D57, W0 0x9E3779B9, W1 0xBB67AE85; fw_philox4x32_10 in
 * fw/random.h). Block b with attempt a:
 *   key = { (uint32)seed, (uint32)(seed >> 32) }
 *   ctr = { (uint32)b, (uint32)(b >> 32), a, 0 }  -> words w0 w1 w2 w3
 *   u53(hi, lo) = (((uint64)hi << 32 | lo) >> 11) * 2^-53   in [0, 1)
 *
 * Element i (0-based within the fill) of
 *   uniform, bernoulli, randint, normal: block base + i/2, attempt 0; even i
 *     uses words (w0, w1), odd i uses (w2, w3). Blocks reserved: (n+1)/2.
 *   - uniform: u = u53(w0,w1) (even) / u53(w2,w3) (odd); v = lo + (hi-lo)*u
 *     in double; float32 stores (float)v, and a value >= (float)hi (or
 *     >= hi for float64) becomes lo (the range stays half-open).
 *   - bernoulli: out[i] = u < p (u as uniform), uint8 0/1.
 *   - randint: x = (uint64)w0 << 32 | w1 (even) / w2 << 32 | w3 (odd);
 *     out[i] = low + ((unsigned __int128)x * range >> 64), range = high-low.
 *   - normal (Box-Muller per block): u1 = 1 - u53(w0,w1), u2 = u53(w2,w3),
 *     r = sqrt(-2 log u1); even i: r cos(2 pi u2), odd i: r sin(2 pi u2);
 *     v = mean + std*z in double, stored in dt.
 *   truncated normal: element i uses block base + i (blocks reserved: n),
 *     attempts a = 0, 1, ... (< 100000): the pair (z0, z1) of that attempt
 *     as for normal; the first of z0, z1 inside [za, zb] wins (else
 *     (za+zb)/2); v = mean + std*z clamped to [mean + za*std, mean + zb*std].
 *   randperm: blocks reserved (n+1)/2; out = 0..n-1, then Fisher-Yates from
 *     the top: for i = n-1 down to 1, x = the 64 bits of element i (as
 *     randint), j = (unsigned __int128)x * (i+1) >> 64, swap out[i], out[j].
 *
 * out is device memory of n elements; other arguments are host values.
 * Every entry returns 0 or a negative FW_E* (FW_EDTYPE for a dtype the
 * backend lacks); parameters were validated by the op.
 */
#ifndef FW_BACKEND_RANDOM_H
#define FW_BACKEND_RANDOM_H

#include "fw_backend.h"

struct fw_random_kernels {
    /* dt float32/float64. */
    int (*uniform)(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, double lo,
                   double hi);
    /* dt float32/float64. */
    int (*normal)(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, double mean,
                  double std);
    /* dt float32/float64; za < zb standardised bounds. */
    int (*truncated_normal)(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base,
                            double mean, double std, double za, double zb);
    /* uint8 mask: out[i] = u_i < p (dropout keeps with p = 1 - rate). */
    int (*bernoulli)(uint8_t *out, size_t n, uint64_t seed, uint64_t base, double p);
    /* dt int32/int64: low + the scaled 64 bits, range = high - low > 0. */
    int (*randint)(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, int64_t low,
                   uint64_t range);
    /* int64 permutation of 0..n-1 (sequential by nature; a device backend
     * may compute it on the host and copy). */
    int (*randperm)(int64_t *out, size_t n, uint64_t seed, uint64_t base);
};

/* Counter blocks a fill of n elements reserves (the layout above). */
static inline uint64_t fw_random_blocks(size_t n, bool truncated)
{
    return truncated ? (uint64_t)n : ((uint64_t)n + 1) / 2;
}

#endif
