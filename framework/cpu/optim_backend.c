/*
 * optim_backend.c - the CPU backend's optimizer family
 * (core/fw_backend_optim.h) over the fused loops of cpu/optim.c: dtype
 * dispatch and the split of one parameter over the pool (elementwise, so
 * any split gives the same bits).
 */
#include "core/fw_backend_optim.h"
#include "core/fw_parallel.h"
#include "core_kernels.h"
#include "optim_kernels.h"

#define UPDATE_GRAIN 65536

typedef enum { U_SGD, U_MOMENTUM, U_ADAM } update_kind;

typedef struct update_job {
    update_kind kind;
    bool f32;
    char *p, *vel_m, *v;
    const char *g;
    double lr, mu, b1, b2, eps, b1pow, b2pow, l2, decay;
    int nesterov;
} update_job;

static void update_chunk(void *ctx, int64_t b, int64_t e)
{
    const update_job *j = ctx;
    size_t n = (size_t)(e - b), es = j->f32 ? sizeof(float) : sizeof(double);
    size_t off = (size_t)b * es;
    char *p = j->p + off, *b1 = j->vel_m ? j->vel_m + off : NULL;
    char *b2 = j->v ? j->v + off : NULL;
    const char *g = j->g + off;

    switch (j->kind) {
    case U_SGD:
        if (j->f32)
            fw__sgd_f32((float *)p, (const float *)g, n, j->lr, j->l2);
        else
            fw__sgd_f64((double *)p, (const double *)g, n, j->lr, j->l2);
        break;
    case U_MOMENTUM:
        if (j->f32)
            fw__momentum_f32((float *)p, (const float *)g, (float *)b1, n, j->lr, j->mu, j->l2,
                             j->nesterov);
        else
            fw__momentum_f64((double *)p, (const double *)g, (double *)b1, n, j->lr, j->mu,
                             j->l2, j->nesterov);
        break;
    case U_ADAM:
        if (j->f32)
            fw__adam_f32((float *)p, (const float *)g, (float *)b1, (float *)b2, n, j->lr,
                         j->b1, j->b2, j->eps, j->b1pow, j->b2pow, j->l2, j->decay);
        else
            fw__adam_f64((double *)p, (const double *)g, (double *)b1, (double *)b2, n, j->lr,
                         j->b1, j->b2, j->eps, j->b1pow, j->b2pow, j->l2, j->decay);
        break;
    }
}

static int check_dt(const char *op, fw_dtype dt)
{
    if (dt != FW_FLOAT32 && dt != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "%s: dtype %s not supported by the cpu kernels", op,
                            fw_dtype_name(dt));
    return 0;
}

static int run(update_job *j, fw_dtype dt, size_t n, const char *op)
{
    int err;
    if ((err = check_dt(op, dt)) < 0)
        return err;
    j->f32 = dt == FW_FLOAT32;
    fw_parallel_for((int64_t)n, UPDATE_GRAIN, update_chunk, j);
    return 0;
}

static int k_sgd(fw_dtype dt, void *p, const void *g, size_t n, double lr, double l2)
{
    update_job j = {.kind = U_SGD, .p = p, .g = g, .lr = lr, .l2 = l2};
    return run(&j, dt, n, "sgd");
}

static int k_momentum(fw_dtype dt, void *p, const void *g, void *vel, size_t n, double lr,
                      double mu, double l2, int nesterov)
{
    update_job j = {.kind = U_MOMENTUM, .p = p, .g = g, .vel_m = vel, .lr = lr, .mu = mu,
                    .l2 = l2, .nesterov = nesterov};
    return run(&j, dt, n, "momentum");
}

static int k_adam(fw_dtype dt, void *p, const void *g, void *m, void *v, size_t n, double lr,
                  double b1, double b2, double eps, double b1pow, double b2pow, double l2,
                  double decay)
{
    update_job j = {.kind = U_ADAM, .p = p, .g = g, .vel_m = m, .v = v, .lr = lr, .b1 = b1,
                    .b2 = b2, .eps = eps, .b1pow = b1pow, .b2pow = b2pow, .l2 = l2,
                    .decay = decay};
    return run(&j, dt, n, "adam");
}

static int k_sumsq(fw_dtype dt, const void *x, size_t n, double *out)
{
    int err;
    if ((err = check_dt("sumsq", dt)) < 0)
        return err;
    *out = dt == FW_FLOAT32 ? fw__sumsq_f32(x, n) : fw__sumsq_f64(x, n);
    return 0;
}

static int k_scale(fw_dtype dt, void *x, size_t n, double s)
{
    int err;
    if ((err = check_dt("scale", dt)) < 0)
        return err;
    if (dt == FW_FLOAT32)
        fw__scale_f32(x, n, s);
    else
        fw__scale_f64(x, n, s);
    return 0;
}

const struct fw_optim_kernels fw__cpu_optim = {
    .sgd = k_sgd,
    .momentum = k_momentum,
    .adam = k_adam,
    .sumsq = k_sumsq,
    .scale = k_scale,
};
