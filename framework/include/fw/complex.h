/*
 * fw/complex.h - complex tensors (complex64 / complex128) and the FFT.
 *
 * Complex tensors store (real, imag) pairs interleaved, so fw_real,
 * fw_imag and fw_as_real are views into the same storage (strides doubled)
 * and fw_as_complex is a view when the pairs are adjacent. Arithmetic on
 * complex tensors (fw_add/sub/mul/div, their scalar forms, fw_neg, fw_abs,
 * fw_sum, fw_mean, fw_matmul) is built from these views and the real ops,
 * so it broadcasts and differentiates like them. Gradients follow Paddle
 * and PyTorch: the gradient of a real loss L with respect to z = a + ib is
 * dL/da + i dL/db (so the gradient of |z|^2 is 2z). Other ops refuse
 * complex inputs with FW_EDTYPE.
 *
 * The FFT (cpu/fft.c) works along the last axis on contiguous rows, in
 * double precision whatever the dtype: radix-2 for powers of two and
 * Bluestein's chirp-z (through a power-of-two FFT) for every other length,
 * so any length costs O(n log n). `scale` multiplies the result (1, 1/n or
 * 1/sqrt(n) for Paddle's norm modes, chosen by the caller). Each op's
 * backward is the adjoint transform.
 */
#ifndef FW_COMPLEX_H
#define FW_COMPLEX_H

#include "fw/tensor.h"

/* Real and imaginary parts (views). On a real tensor, real is x itself and
 * imag is zeros of its shape. */
int fw_real(fw_tensor **out, fw_tensor *x);
int fw_imag(fw_tensor **out, fw_tensor *x);
/* re + i im: re and im broadcast; float32 gives complex64, float64 (either
 * side) complex128; integer parts count as float32. */
int fw_complex(fw_tensor **out, fw_tensor *re, fw_tensor *im);
/* complex [..] -> float [.., 2] (a view). */
int fw_as_real(fw_tensor **out, fw_tensor *x);
/* float32/64 [.., 2] -> complex [..] (a view when the pairs are adjacent,
 * else a copy). FW_ESHAPE when the last dimension is not 2. */
int fw_as_complex(fw_tensor **out, fw_tensor *x);
/* Complex conjugate (x itself for real tensors). */
int fw_conj(fw_tensor **out, fw_tensor *x);
/* Argument atan2(imag, real) of a complex tensor, in its real dtype; for
 * real tensors 0 where x >= 0 and pi where x < 0. */
int fw_angle(fw_tensor **out, fw_tensor *x);

/* Complex-to-complex DFT along the last axis: forward (exp(-2 pi i k t / n))
 * or inverse (+), unnormalised, times scale. */
int fw_fft_c2c(fw_tensor **out, fw_tensor *x, bool inverse, double scale);
/* Real [.., n] -> its first n/2+1 DFT bins [.., n/2+1], times scale. */
int fw_fft_r2c(fw_tensor **out, fw_tensor *x, double scale);
/* The inverse of r2c: x [.., n/2+1] holds the bins of a real signal of
 * length n (imaginary parts of bin 0 and, for even n, bin n/2 ignored),
 * -> real [.., n], unnormalised inverse DFT times scale. FW_ESHAPE unless
 * x's last dimension is n/2+1. */
int fw_fft_c2r(fw_tensor **out, fw_tensor *x, int64_t n, double scale);

#endif
