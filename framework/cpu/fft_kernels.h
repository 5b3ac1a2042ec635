/* fft_kernels.h - complex DFT plans in double precision (cpu/fft.c),
 * private to framework/. */
#ifndef FW_FFT_KERNELS_H
#define FW_FFT_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fw_fft_plan fw_fft_plan;

/* A plan for length n (1 .. 2^40); -1 when out of memory. Read-only once
 * made: threads share it, each with its own scratch. */
int fw__fft_plan_new(fw_fft_plan **out, int64_t n);
void fw__fft_plan_free(fw_fft_plan *p);
/* Doubles of scratch fw__fft_exec needs (0 for powers of two). */
int64_t fw__fft_scratch_len(const fw_fft_plan *p);
/* In place on n interleaved complex values: forward exp(-2 pi i jk/n) or
 * inverse (+), unnormalised. */
void fw__fft_exec(const fw_fft_plan *p, double *x, bool inverse, double *scratch);

#endif
