/*
 * fw_backend_optim.h - the optimizer kernel family of a backend (private to
 * framework/; see fw_backend.h). optim/optimizer.c reaches these through
 * fw_backend_family(b, b->optim, op) for the parameters' device.
 *
 * One fused pass over a parameter's data p, gradient g and state (vel, m,
 * v), all n contiguous elements of dt (float32 or float64) in device
 * memory; scalars are host values. Every entry returns 0 or a negative
 * FW_E* after fw_error_set(); FW_EDTYPE for a dtype the backend lacks.
 * The CPU splits large n over its pool; results do not depend on the split
 * (elementwise, except sumsq, which sums in double per chunk).
 */
#ifndef FW_BACKEND_OPTIM_H
#define FW_BACKEND_OPTIM_H

#include "fw_backend.h"

struct fw_optim_kernels {
    /* SGD: g' = g + l2*p; p -= lr*g'. */
    int (*sgd)(fw_dtype dt, void *p, const void *g, size_t n, double lr, double l2);
    /* Momentum (Paddle): g' = g + l2*p; vel = mu*vel + g';
     * p -= lr*vel, or with nesterov p -= lr*(g' + mu*vel). */
    int (*momentum)(fw_dtype dt, void *p, const void *g, void *vel, size_t n, double lr,
                    double mu, double l2, int nesterov);
    /* Adam/AdamW (Paddle): p -= lr*decay*p (decoupled, AdamW; 0 for Adam);
     * g' = g + l2*p (coupled, Adam's weight_decay; 0 for AdamW);
     * m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
     * lr_t = lr*sqrt(1-b2pow)/(1-b1pow);
     * p -= lr_t * m / (sqrt(v) + eps*sqrt(1-b2pow)).
     * b1pow, b2pow: beta1^t, beta2^t for this step t (1-based). */
    int (*adam)(fw_dtype dt, void *p, const void *g, void *m, void *v, size_t n, double lr,
                double b1, double b2, double eps, double b1pow, double b2pow, double l2,
                double decay);
    /* *out (host) = sum of x[i]^2, accumulated in double. */
    int (*sumsq)(fw_dtype dt, const void *x, size_t n, double *out);
    /* x[i] *= s (in place). */
    int (*scale)(fw_dtype dt, void *x, size_t n, double s);
};

#endif
