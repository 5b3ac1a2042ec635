/*
 * random_int.h - private: per-element Philox draws (framework/random, the
 * CPU random family cpu/random_backend.c, and the tests). Element i of a
 * fill whose first counter block is `base` gets the same value whichever
 * chunk [start, start+n) computes it.
 */
#ifndef FW_RANDOM_INT_H
#define FW_RANDOM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Uniform [0, 1) doubles for elements start..start+n-1. */
void fw__random_uniform_at(double *out, size_t n, uint64_t seed, uint64_t base, uint64_t start);
/* Standard normal doubles for elements start..start+n-1. */
void fw__random_normal_at(double *out, size_t n, uint64_t seed, uint64_t base, uint64_t start);
/* Standard normal truncated to [a, b] (standardised bounds). */
void fw__random_truncnorm_at(double *out, size_t n, uint64_t seed, uint64_t base,
                             uint64_t start, double a, double b);
/* The 64 random bits of element i (lanes as the uniforms use them) and
 * randint's value from them (low + x*range >> 64). */
uint64_t fw__random_bits64_at(uint64_t seed, uint64_t base, uint64_t i);
int64_t fw__random_randint_at(uint64_t seed, uint64_t base, uint64_t i, int64_t low,
                              uint64_t range);

/* Parameter checks shared by the raw fills and the tensor ops (FW_EINVAL
 * with the message the ops report). */
int fw__random_check_uniform(double low, double high);
int fw__random_check_normal(double mean, double std);
int fw__random_check_randint(int64_t low, int64_t high, bool i32);

#endif
