/*
 * fw/optim.h - optimizers, gradient clipping and learning-rate schedulers,
 * with Paddle 3.x formulas and defaults.
 *
 * Optimizers update parameters in place from their .grad with one fused C
 * kernel per parameter (float32 and float64 parameters; a parameter whose
 * grad is NULL is skipped, like Paddle). State (velocity, moments, beta
 * powers) is created lazily at a parameter's first update and can be read
 * and replaced by name for state_dict.
 *
 *   fw_optim_config c;
 *   fw_optim_config_default(&c, FW_OPTIM_ADAM);    // lr 0.001, betas, eps 1e-8
 *   c.lr = 1e-3;
 *   fw_optim *opt;
 *   if ((err = fw_optim_new(&opt, &c, params, nparams)) < 0) ...
 *   for (...) { forward; fw_tensor_backward(loss, NULL, false);
 *               fw_optim_step(opt); fw_optim_clear_grad(opt); }
 *   fw_optim_free(opt);
 *
 * Formulas (g = grad after clipping; t = the parameter's step, 1-based):
 *   SGD       p -= lr * (g + wd*p)
 *   Momentum  v = mu*v + (g + wd*p);  p -= lr*v
 *             nesterov: p -= lr*((g + wd*p) + mu*v)
 *   Adam      g' = g + wd*p (float weight_decay = coupled L2)
 *             m = b1*m + (1-b1)*g';  v = b2*v + (1-b2)*g'^2
 *             lr_t = lr*sqrt(1-b2^t)/(1-b1^t)
 *             p -= lr_t*m/(sqrt(v) + eps*sqrt(1-b2^t))
 *   AdamW     p -= lr*wd*p (decoupled, only for params with decay on),
 *             then Adam with no L2.
 * Clipping by global norm (when clip_norm > 0) happens before the update
 * and before L2 is added, as in Paddle.
 *
 * Errors: 0 or a negative FW_E* after fw_error_set(). Threads: an optimizer
 * is used by one thread at a time.
 */
/* API-STABLE */
#ifndef FW_OPTIM_H
#define FW_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- learning-rate schedulers ------------------------------------------
 * A scheduler starts at epoch 0 (Paddle's constructor steps once from
 * last_epoch -1). fw_lr_sched_step() advances by one epoch; step_to() jumps
 * (Paddle's step(epoch), closed forms). Caller frees with fw_lr_sched_free().
 * Errors: FW_EINVAL for non-finite rates or bad sizes, FW_ENOMEM. */
typedef struct fw_lr_sched fw_lr_sched;

/* lr = base * gamma^(epoch / step_size) (integer division). Paddle default
 * gamma 0.1. step_size > 0. */
int fw_lr_step_decay_new(fw_lr_sched **out, double learning_rate, int64_t step_size,
                         double gamma);
/* lr = values[i] for the first i with epoch < boundaries[i], else
 * values[nb]. nvalues must be nb + 1; boundaries strictly increasing. */
int fw_lr_piecewise_decay_new(fw_lr_sched **out, const int64_t *boundaries, size_t nb,
                              const double *values, size_t nvalues);
/* Cosine annealing, Paddle's recursive form on step():
 *   lr_0 = base
 *   if (epoch-1-T_max) % (2*T_max) == 0:
 *       lr = last + (base-eta_min)*(1-cos(pi/T_max))/2
 *   else lr = eta_min + (last-eta_min)*(1+cos(pi*e/T_max))/(1+cos(pi*(e-1)/T_max))
 * and the closed form eta_min + (base-eta_min)*(1+cos(pi*e/T_max))/2 on
 * step_to(). T_max > 0. */
int fw_lr_cosine_annealing_new(fw_lr_sched **out, double learning_rate, int64_t T_max,
                               double eta_min);
/* lr = base * gamma^epoch. */
int fw_lr_exponential_decay_new(fw_lr_sched **out, double learning_rate, double gamma);
/* Linear warmup: for epoch < warmup_steps lr = start + (end-start)*epoch/warmup;
 * afterwards the wrapped scheduler stepped to (epoch - warmup_steps), or
 * the constant `learning_rate` when inner is NULL. Takes `inner` (freed
 * with the warmup, also on error). warmup_steps > 0. */
int fw_lr_linear_warmup_new(fw_lr_sched **out, fw_lr_sched *inner, double learning_rate,
                            int64_t warmup_steps, double start_lr, double end_lr);

/* The current learning rate. */
double fw_lr_sched_get(const fw_lr_sched *s);
/* Advance one epoch and recompute. */
void fw_lr_sched_step(fw_lr_sched *s);
/* Set the epoch (>= 0) and recompute (closed forms; for restoring state).
 * FW_EINVAL for a negative epoch. */
int fw_lr_sched_step_to(fw_lr_sched *s, int64_t epoch);
/* Restore a saved (epoch, last_lr) pair exactly (Paddle's scheduler
 * state_dict: last_epoch, last_lr); the next step() continues from it.
 * FW_EINVAL for a negative epoch or a non-finite lr. */
int fw_lr_sched_set_state(fw_lr_sched *s, int64_t epoch, double last_lr);
/* The current epoch (0 after construction). */
int64_t fw_lr_sched_epoch(const fw_lr_sched *s);
/* NULL-safe; frees a wrapped inner scheduler too. */
void fw_lr_sched_free(fw_lr_sched *s);

/* ---- clipping ------------------------------------------------------------ */

/* ClipGradByGlobalNorm: norm = sqrt(sum of squares of every grad);
 * each grad *= clip_norm / max(norm, clip_norm), in place. Params with no
 * grad are skipped. *global_norm (may be NULL) receives the norm before
 * clipping. FW_EINVAL if clip_norm <= 0; FW_EDTYPE for grads that are not
 * float32/float64. */
int fw_clip_grad_by_global_norm(double *global_norm, fw_tensor *const *params, size_t n,
                                double clip_norm);

/* ---- optimizers ---------------------------------------------------------- */

typedef enum {
    FW_OPTIM_SGD = 0,
    FW_OPTIM_MOMENTUM = 1,
    FW_OPTIM_ADAM = 2,
    FW_OPTIM_ADAMW = 3
} fw_optim_kind;

typedef struct fw_optim_config {
    fw_optim_kind kind;
    double lr;            /* learning rate when sched is NULL */
    fw_lr_sched *sched;   /* borrowed; when set, each step uses its get() */
    double momentum;      /* Momentum: mu (default 0.9) */
    bool nesterov;        /* Momentum: use_nesterov (default false) */
    double beta1, beta2;  /* Adam/AdamW (0.9, 0.999) */
    double epsilon;       /* Adam/AdamW (1e-8) */
    double weight_decay;  /* SGD/Momentum/Adam: coupled L2 coeff (default 0);
                             AdamW: decoupled coeff (default 0.01) */
    double clip_norm;     /* > 0: clip grads by global norm before updating */
} fw_optim_config;

/* Fill *c with Paddle's defaults for `kind` (lr 0.001 for all). */
void fw_optim_config_default(fw_optim_config *c, fw_optim_kind kind);

typedef struct fw_optim fw_optim;

/* A new optimizer over params[0..n) (refs taken; params must be float32 or
 * float64, contiguous, distinct, all on one device whose backend has an
 * optimizer family: FW_EDEVICE otherwise). Caller frees with
 * fw_optim_free(). Errors: FW_EINVAL (bad hyper-parameters: lr < 0,
 * betas outside [0, 1), eps <= 0, momentum < 0; NULL or repeated param;
 * non-contiguous param), FW_EDTYPE, FW_ENOMEM. */
int fw_optim_new(fw_optim **out, const fw_optim_config *cfg, fw_tensor *const *params,
                 size_t n);
/* NULL-safe; drops the param refs and the state. */
void fw_optim_free(fw_optim *o);

/* Update every param that has a grad. Errors: FW_ESHAPE/FW_EDTYPE if a
 * grad does not match its param (nothing is updated then), FW_ENOMEM
 * creating state (no param updated). */
int fw_optim_step(fw_optim *o);
/* Drop (set_to_zero false) or zero every param's grad. */
void fw_optim_clear_grad(fw_optim *o, bool set_to_zero);

/* The learning rate the next step will use (the scheduler's, if any). */
double fw_optim_get_lr(const fw_optim *o);
/* Set a constant lr. FW_EINVAL if a scheduler is attached or lr < 0. */
int fw_optim_set_lr(fw_optim *o, double lr);
/* AdamW's apply_decay_param_fun: whether param i is decayed (default
 * true). Ignored by other kinds. FW_ERANGE for a bad index. */
int fw_optim_set_decay(fw_optim *o, size_t i, bool apply);

/* ParamAttr(learning_rate=scale): param i is updated with lr * scale
 * (default 1; also scales AdamW's decay, like Paddle's lr_ratio).
 * FW_ERANGE for a bad index, FW_EINVAL for a negative scale. */
int fw_optim_set_lr_scale(fw_optim *o, size_t i, double scale);
/* ParamAttr(need_clip=false): leave param i out of global-norm clipping
 * (its grad neither counts in the norm nor is scaled). FW_ERANGE. */
int fw_optim_set_need_clip(fw_optim *o, size_t i, bool need_clip);

/* Number of params, and param i (borrowed). */
size_t fw_optim_nparams(const fw_optim *o);
fw_tensor *fw_optim_param(const fw_optim *o, size_t i);

/* ---- state (state_dict) ---------------------------------------------------
 * Names per kind, as Paddle's accumulators:
 *   Momentum: "velocity"
 *   Adam/AdamW: "moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"
 * moments and velocity have the param's shape and dtype; beta pows are
 * float32 tensors of shape [1] holding beta^t of the NEXT step (Paddle's
 * convention: beta1 before the first step). */

/* The names for this optimizer's kind (borrowed, static); *n gets the count. */
const char *const *fw_optim_state_names(const fw_optim *o, size_t *n);
/* A copy of param i's state `name` into *out (caller unrefs). FW_ENOTFOUND-
 * like: FW_ERANGE when the param has no state yet (never stepped) or the
 * index is bad; FW_EINVAL for an unknown name. */
int fw_optim_state_get(fw_tensor **out, const fw_optim *o, size_t i, const char *name);
/* Replace param i's state `name` with a copy of value (cast to the param's
 * dtype; beta pows take the single value), creating the state if needed.
 * FW_ESHAPE if the shape is wrong, FW_EINVAL for an unknown name,
 * FW_ERANGE for a bad index. */
int fw_optim_state_set(fw_optim *o, size_t i, const char *name, const fw_tensor *value);

#ifdef __cplusplus
}
#endif
#endif
