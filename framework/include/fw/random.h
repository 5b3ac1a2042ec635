/*
 * fw/random.h - counter-based random numbers (Philox4x32-10).
 *
 * A generator is a 64-bit seed plus a 64-bit counter offset. Every fill
 * reserves a range of counter blocks atomically and element i of the fill
 * takes its value from block (start + i/2) (uniform, normal, randint,
 * bernoulli) or block (start + i) (truncated normal), so a value depends only
 * on (seed, offset, i): the same seed gives the same numbers on every run,
 * on every thread count, however a parallel loop splits the work.
 *
 * float32 and float64 fills use the same double-precision draw, so
 * fw_random_uniform_f32 returns the float64 numbers rounded to float.
 *
 * Errors: functions that can fail return 0 or a negative FW_E* code after
 * fw_error_set() (FW_EINVAL for bad ranges/probabilities, FW_ENOMEM).
 * Every `fw_generator *g` argument may be NULL, meaning the global default
 * generator (fw_default_generator()); fw_seed() reseeds it.
 *
 * Threads: generators are safe to share between threads (the offset is
 * advanced atomically); two threads drawing from one generator get disjoint
 * ranges, in an order that depends on scheduling.
 */
/* API-STABLE */
#ifndef FW_RANDOM_H
#define FW_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "fw/tensor.h"

typedef struct fw_generator fw_generator;

/* The Philox4x32-10 block function: out = philox(ctr, key). Pure. */
void fw_philox4x32_10(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2]);

/* A new generator seeded with `seed`, offset 0. Caller frees with
 * fw_generator_free(). FW_ENOMEM. */
int fw_generator_new(fw_generator **out, uint64_t seed);

/* NULL-safe. Never free the default generator (it is ignored). */
void fw_generator_free(fw_generator *g);

/* Reseed: seed = `seed`, offset = 0. */
void fw_generator_seed(fw_generator *g, uint64_t seed);

/* Generator state, for saving and restoring (get_rng_state/set_rng_state). */
uint64_t fw_generator_get_seed(const fw_generator *g);
uint64_t fw_generator_get_offset(const fw_generator *g);
void fw_generator_set_state(fw_generator *g, uint64_t seed, uint64_t offset);

/* Atomically reserve `nblocks` counter blocks; returns the first. For ops
 * that generate numbers themselves (e.g. inside a parallel kernel) with
 * fw_philox4x32_10 and the seed. */
uint64_t fw_generator_reserve(fw_generator *g, uint64_t nblocks);

/* The process-wide default generator (borrowed, lives forever; seed 0 at
 * start unless fw_seed() was called). */
fw_generator *fw_default_generator(void);

/* Reseed the default generator (paddle.seed). */
void fw_seed(uint64_t seed);

/* ---- raw fills over caller memory (n elements) ---- */

/* Uniform in [low, high). FW_EINVAL unless low < high, both finite. */
int fw_random_uniform_f32(fw_generator *g, float *out, size_t n, double low, double high);
int fw_random_uniform_f64(fw_generator *g, double *out, size_t n, double low, double high);

/* Normal(mean, std) by Box-Muller. FW_EINVAL if std < 0 or not finite. */
int fw_random_normal_f32(fw_generator *g, float *out, size_t n, double mean, double std);
int fw_random_normal_f64(fw_generator *g, double *out, size_t n, double mean, double std);

/* Normal(mean, std) truncated to [a, b] (absolute bounds, Paddle's
 * TruncatedNormal(mean, std, a, b)) by per-element rejection. FW_EINVAL
 * unless std > 0 and a < b, or if [a, b] holds under 1e-6 of the mass. */
int fw_random_truncated_normal_f32(fw_generator *g, float *out, size_t n, double mean,
                                   double std, double a, double b);
int fw_random_truncated_normal_f64(fw_generator *g, double *out, size_t n, double mean,
                                   double std, double a, double b);

/* Integers uniform in [low, high). FW_EINVAL unless low < high (and the
 * range fits the type). */
int fw_random_randint_i64(fw_generator *g, int64_t *out, size_t n, int64_t low, int64_t high);
int fw_random_randint_i32(fw_generator *g, int32_t *out, size_t n, int64_t low, int64_t high);

/* Bernoulli mask: out[i] = 1 with probability p, else 0 (dropout keeps an
 * element when its mask is 1: pass p = 1 - drop_prob). FW_EINVAL unless
 * 0 <= p <= 1. */
int fw_random_bernoulli_u8(fw_generator *g, uint8_t *out, size_t n, double p);

/* A uniformly random permutation of 0..n-1 (Fisher-Yates). */
int fw_random_randperm_i64(fw_generator *g, int64_t *out, size_t n);

/* ---- creation ops (new contiguous CPU tensors, stop_gradient = true) ----
 * Caller owns *out (fw_tensor_unref). Float ops accept FW_FLOAT32,
 * FW_FLOAT64, FW_FLOAT16 and FW_BFLOAT16 (the last two drawn in float32 and
 * rounded; FW_EDTYPE otherwise); fw_randint accepts FW_INT32 and FW_INT64;
 * fw_randperm FW_INT32 and FW_INT64. On error *out is NULL. */

/* Uniform [0, 1) (paddle.rand). */
int fw_rand(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, fw_generator *g);
/* Standard normal (paddle.randn). */
int fw_randn(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, fw_generator *g);
/* Uniform [min, max) (paddle.uniform). */
int fw_uniform(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, double min,
               double max, fw_generator *g);
/* Normal(mean, std) (paddle.normal). */
int fw_normal(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, double mean,
              double std, fw_generator *g);
/* Integers in [low, high) (paddle.randint). */
int fw_randint(fw_tensor **out, int64_t low, int64_t high, const int64_t *shape, int ndim,
               fw_dtype dtype, fw_generator *g);
/* A permutation of 0..n-1 as a 1-D tensor (paddle.randperm). */
int fw_randperm(fw_tensor **out, int64_t n, fw_dtype dtype, fw_generator *g);

#endif
