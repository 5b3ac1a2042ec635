/*
 * lr.c - learning-rate schedulers (see fw/optim.h), after Paddle's
 * python/paddle/optimizer/lr.py: a scheduler holds base_lr, last_epoch and
 * last_lr; step() bumps the epoch and recomputes with get_lr(); step_to()
 * sets the epoch and uses the closed form where Paddle has one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/optim.h"

typedef enum { LR_STEP, LR_PIECEWISE, LR_COSINE, LR_EXP, LR_WARMUP } lr_kind;

struct fw_lr_sched {
    lr_kind kind;
    double base_lr;
    int64_t epoch;
    double last_lr;
    /* step */
    int64_t step_size;
    double gamma;
    /* piecewise */
    int64_t *bounds;
    double *values;
    size_t nb;
    /* cosine */
    int64_t T_max;
    double eta_min;
    /* warmup */
    fw_lr_sched *inner;
    int64_t warmup;
    double start_lr, end_lr;
};

static double closed_form(fw_lr_sched *s, int64_t e);

/* The value at epoch s->epoch given s->last_lr (the previous value). */
static double get_lr(fw_lr_sched *s, bool explicit_epoch)
{
    int64_t e = s->epoch;
    switch (s->kind) {
    case LR_COSINE:
        if (explicit_epoch)
            return closed_form(s, e);
        if (e == 0)
            return s->base_lr;
        if ((e - 1 - s->T_max) % (2 * s->T_max) == 0)
            return s->last_lr +
                   (s->base_lr - s->eta_min) * (1.0 - cos(M_PI / (double)s->T_max)) / 2.0;
        return (1.0 + cos(M_PI * (double)e / (double)s->T_max)) /
                   (1.0 + cos(M_PI * (double)(e - 1) / (double)s->T_max)) *
                   (s->last_lr - s->eta_min) +
               s->eta_min;
    case LR_WARMUP:
        if (e < s->warmup)
            return (s->end_lr - s->start_lr) * (double)e / (double)s->warmup + s->start_lr;
        if (s->inner != NULL) {
            fw_lr_sched_step_to(s->inner, e - s->warmup);
            return fw_lr_sched_get(s->inner);
        }
        return s->base_lr;
    default:
        return closed_form(s, e);
    }
}

static double closed_form(fw_lr_sched *s, int64_t e)
{
    switch (s->kind) {
    case LR_STEP:
        return s->base_lr * pow(s->gamma, (double)(e / s->step_size));
    case LR_PIECEWISE:
        for (size_t i = 0; i < s->nb; i++)
            if (e < s->bounds[i])
                return s->values[i];
        return s->values[s->nb];
    case LR_COSINE:
        return s->eta_min + (s->base_lr - s->eta_min) *
                                (1.0 + cos(M_PI * (double)e / (double)s->T_max)) / 2.0;
    case LR_EXP:
        return s->base_lr * pow(s->gamma, (double)e);
    case LR_WARMUP:
        return get_lr(s, true);
    }
    return s->base_lr;
}

static int sched_alloc(fw_lr_sched **out, lr_kind kind, double lr)
{
    fw_lr_sched *s;

    *out = NULL;
    if (!isfinite(lr))
        return fw_error_set(FW_EINVAL, "lr scheduler: learning rate %g is not finite", lr);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return fw_error_set(FW_ENOMEM, "lr scheduler");
    s->kind = kind;
    s->base_lr = lr;
    *out = s;
    return 0;
}

/* Paddle's constructor: last_epoch -1, then one step() to epoch 0. */
static void sched_start(fw_lr_sched *s)
{
    s->epoch = 0;
    s->last_lr = s->base_lr;
    s->last_lr = get_lr(s, false);
}

int fw_lr_step_decay_new(fw_lr_sched **out, double learning_rate, int64_t step_size,
                         double gamma)
{
    int err;

    *out = NULL;
    if (step_size <= 0)
        return fw_error_set(FW_EINVAL, "StepDecay: step_size %lld must be positive",
                            (long long)step_size);
    if (!isfinite(gamma))
        return fw_error_set(FW_EINVAL, "StepDecay: gamma %g is not finite", gamma);
    if ((err = sched_alloc(out, LR_STEP, learning_rate)) < 0)
        return err;
    (*out)->step_size = step_size;
    (*out)->gamma = gamma;
    sched_start(*out);
    return 0;
}

int fw_lr_piecewise_decay_new(fw_lr_sched **out, const int64_t *boundaries, size_t nb,
                              const double *values, size_t nvalues)
{
    fw_lr_sched *s;
    int err;

    *out = NULL;
    if (values == NULL || (nb > 0 && boundaries == NULL) || nvalues != nb + 1)
        return fw_error_set(FW_EINVAL, "PiecewiseDecay: %zu boundaries need %zu values, "
                            "got %zu", nb, nb + 1, nvalues);
    for (size_t i = 0; i < nvalues; i++)
        if (!isfinite(values[i]))
            return fw_error_set(FW_EINVAL, "PiecewiseDecay: values[%zu] = %g is not finite",
                                i, values[i]);
    for (size_t i = 1; i < nb; i++)
        if (boundaries[i] <= boundaries[i - 1])
            return fw_error_set(FW_EINVAL, "PiecewiseDecay: boundaries must increase "
                                "(boundaries[%zu] = %lld after %lld)", i,
                                (long long)boundaries[i], (long long)boundaries[i - 1]);
    if ((err = sched_alloc(&s, LR_PIECEWISE, values[0])) < 0)
        return err;
    s->bounds = malloc((nb ? nb : 1) * sizeof(int64_t));
    s->values = malloc(nvalues * sizeof(double));
    if (s->bounds == NULL || s->values == NULL) {
        fw_lr_sched_free(s);
        return fw_error_set(FW_ENOMEM, "PiecewiseDecay");
    }
    if (nb > 0)
        memcpy(s->bounds, boundaries, nb * sizeof(int64_t));
    memcpy(s->values, values, nvalues * sizeof(double));
    s->nb = nb;
    sched_start(s);
    *out = s;
    return 0;
}

int fw_lr_cosine_annealing_new(fw_lr_sched **out, double learning_rate, int64_t T_max,
                               double eta_min)
{
    int err;

    *out = NULL;
    if (T_max <= 0)
        return fw_error_set(FW_EINVAL, "CosineAnnealingDecay: T_max %lld must be positive",
                            (long long)T_max);
    if (!isfinite(eta_min))
        return fw_error_set(FW_EINVAL, "CosineAnnealingDecay: eta_min %g is not finite",
                            eta_min);
    if ((err = sched_alloc(out, LR_COSINE, learning_rate)) < 0)
        return err;
    (*out)->T_max = T_max;
    (*out)->eta_min = eta_min;
    sched_start(*out);
    return 0;
}

int fw_lr_exponential_decay_new(fw_lr_sched **out, double learning_rate, double gamma)
{
    int err;

    *out = NULL;
    if (!isfinite(gamma))
        return fw_error_set(FW_EINVAL, "ExponentialDecay: gamma %g is not finite", gamma);
    if ((err = sched_alloc(out, LR_EXP, learning_rate)) < 0)
        return err;
    (*out)->gamma = gamma;
    sched_start(*out);
    return 0;
}

int fw_lr_linear_warmup_new(fw_lr_sched **out, fw_lr_sched *inner, double learning_rate,
                            int64_t warmup_steps, double start_lr, double end_lr)
{
    int err;

    *out = NULL;
    if (warmup_steps <= 0) {
        fw_lr_sched_free(inner);
        return fw_error_set(FW_EINVAL, "LinearWarmup: warmup_steps %lld must be positive",
                            (long long)warmup_steps);
    }
    if (!isfinite(start_lr) || !isfinite(end_lr)) {
        fw_lr_sched_free(inner);
        return fw_error_set(FW_EINVAL, "LinearWarmup: start_lr %g / end_lr %g not finite",
                            start_lr, end_lr);
    }
    if ((err = sched_alloc(out, LR_WARMUP, inner ? fw_lr_sched_get(inner) : learning_rate)) < 0) {
        fw_lr_sched_free(inner);
        return err;
    }
    (*out)->inner = inner;
    (*out)->warmup = warmup_steps;
    (*out)->start_lr = start_lr;
    (*out)->end_lr = end_lr;
    /* Paddle's LinearWarmup.base_lr is start_lr; last_lr follows get_lr */
    sched_start(*out);
    return 0;
}

double fw_lr_sched_get(const fw_lr_sched *s)
{
    return s->last_lr;
}

void fw_lr_sched_step(fw_lr_sched *s)
{
    s->epoch++;
    s->last_lr = get_lr(s, false);
}

int fw_lr_sched_step_to(fw_lr_sched *s, int64_t epoch)
{
    if (epoch < 0)
        return fw_error_set(FW_EINVAL, "lr scheduler: epoch %lld is negative",
                            (long long)epoch);
    s->epoch = epoch;
    s->last_lr = get_lr(s, true);
    return 0;
}

int fw_lr_sched_set_state(fw_lr_sched *s, int64_t epoch, double last_lr)
{
    if (epoch < 0 || !isfinite(last_lr))
        return fw_error_set(FW_EINVAL, "lr scheduler: bad state (epoch %lld, lr %g)",
                            (long long)epoch, last_lr);
    if (s->kind == LR_WARMUP && s->inner != NULL && epoch >= s->warmup)
        fw_lr_sched_step_to(s->inner, epoch - s->warmup);
    s->epoch = epoch;
    s->last_lr = last_lr;
    return 0;
}

int64_t fw_lr_sched_epoch(const fw_lr_sched *s)
{
    return s->epoch;
}

void fw_lr_sched_free(fw_lr_sched *s)
{
    if (s == NULL)
        return;
    fw_lr_sched_free(s->inner);
    free(s->bounds);
    free(s->values);
    free(s);
}
