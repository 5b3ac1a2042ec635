/*
 * random_int.h - private: per-element Philox draws (framework/random only,
 * and the tests). Element i of a fill whose first counter block is `base`
 * gets the same value whichever chunk [start, start+n) computes it.
 */
#ifndef FW_RANDOM_INT_H
#define FW_RANDOM_INT_H

#include <stddef.h>
#include <stdint.h>

/* Uniform [0, 1) doubles for elements start..start+n-1. */
void fw__random_uniform_at(double *out, size_t n, uint64_t seed, uint64_t base, uint64_t start);
/* Standard normal doubles for elements start..start+n-1. */
void fw__random_normal_at(double *out, size_t n, uint64_t seed, uint64_t base, uint64_t start);
/* Standard normal truncated to [a, b] (standardised bounds). */
void fw__random_truncnorm_at(double *out, size_t n, uint64_t seed, uint64_t base,
                             uint64_t start, double a, double b);

#endif
