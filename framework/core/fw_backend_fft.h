/*
 * fw_backend_fft.h - the DFT kernel family of a backend (private to
 * framework/; see fw_backend.h). ops/fft.c reaches it through
 * fw_backend_family(b, b->fft, op); a backend keeps its own plans (the CPU:
 * double-precision plans inside cpu/, made per call).
 *
 * All transforms run along the last axis over `rows` independent lines of
 * contiguous x (rows, in_len) into contiguous y (rows, out_len), computed in
 * double precision, then scaled by `scale` and stored in y's dtype. x and y
 * are device memory. Complex values are interleaved (re, im). dtypes:
 * complex64/complex128 for complex sides, float32/float64 for real sides.
 * Returns 0 or a negative FW_E* (FW_ENOMEM for plans/scratch).
 */
#ifndef FW_BACKEND_FFT_H
#define FW_BACKEND_FFT_H

#include "fw_backend.h"

typedef enum {
    /* complex x -> complex y (out_len n): x zero-padded or cut to n, then
     * forward exp(-2 pi i jk/n), or inverse (+) when `inverse`. */
    FW_FFT_C2C,
    /* real x (in_len <= n, zero-padded) -> bins 0..n/2 (out_len n/2+1),
     * forward. */
    FW_FFT_R2C,
    /* complex bins 0..n/2 (in_len n/2+1) -> real y (out_len n): the
     * Hermitian extension (imaginary parts of bin 0, and n/2 for even n,
     * dropped) run inverse; real parts stored. */
    FW_FFT_C2R,
    /* adjoint of R2C: complex g (in_len n/2+1, zero-padded to n) run
     * inverse; real parts stored (out_len n). */
    FW_FFT_R2C_GRAD,
    /* adjoint of C2R: real g (in_len n) run forward; bins 0..n/2 stored
     * (out_len n/2+1), bins other than 0 (and n/2 for even n) doubled. */
    FW_FFT_C2R_GRAD
} fw_fft_kind;

struct fw_fft_kernels {
    int (*lines)(fw_fft_kind kind, int64_t n, bool inverse, double scale, fw_dtype xdt,
                 const void *x, int64_t in_len, fw_dtype ydt, void *y, int64_t out_len,
                 int64_t rows);
};

#endif
