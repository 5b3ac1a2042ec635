/*
 * optim_kernels.h - private: fused optimizer update kernels (cpu/optim.c).
 * One pass over a parameter's data, gradient and state; float32 and float64.
 * Plain functions over pointers; n elements; all arrays of length n.
 */
#ifndef FW_OPTIM_KERNELS_H
#define FW_OPTIM_KERNELS_H

#include <stddef.h>

/* SGD: g' = g + l2*p; p -= lr*g'. */
void fw__sgd_f32(float *restrict p, const float *restrict g, size_t n, double lr, double l2);
void fw__sgd_f64(double *restrict p, const double *restrict g, size_t n, double lr, double l2);

/* Momentum (Paddle): g' = g + l2*p; vel = mu*vel + g';
 * p -= lr*vel, or with nesterov p -= lr*(g' + mu*vel). */
void fw__momentum_f32(float *restrict p, const float *restrict g, float *restrict vel, size_t n,
                      double lr, double mu, double l2, int nesterov);
void fw__momentum_f64(double *restrict p, const double *restrict g, double *restrict vel,
                      size_t n, double lr, double mu, double l2, int nesterov);

/* Adam/AdamW (Paddle): p -= lr*decay*p (decoupled, AdamW; 0 for Adam);
 * g' = g + l2*p (coupled, Adam's float weight_decay; 0 for AdamW);
 * m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
 * lr_t = lr*sqrt(1-b2pow)/(1-b1pow);
 * p -= lr_t * m / (sqrt(v) + eps*sqrt(1-b2pow)).
 * b1pow, b2pow are beta1^t, beta2^t for this step t (1-based). */
void fw__adam_f32(float *restrict p, const float *restrict g, float *restrict m,
                  float *restrict v, size_t n, double lr, double b1, double b2, double eps,
                  double b1pow, double b2pow, double l2, double decay);
void fw__adam_f64(double *restrict p, const double *restrict g, double *restrict m,
                  double *restrict v, size_t n, double lr, double b1, double b2, double eps,
                  double b1pow, double b2pow, double l2, double decay);

/* Sum of squares (accumulated in double) and in-place scaling, for
 * clip-by-global-norm. */
double fw__sumsq_f32(const float *x, size_t n);
double fw__sumsq_f64(const double *x, size_t n);
void fw__scale_f32(float *x, size_t n, double s);
void fw__scale_f64(double *x, size_t n, double s);

#endif
