/*
 * optim.cu - the CUDA backend's optimizer family (core/fw_backend_optim.h):
 * fused SGD, Momentum, Adam/AdamW, sum of squares and scale, one pass per
 * parameter.
 *
 * The updates are cpu/optim.c's operations in its order, with the
 * hyper-parameters rounded to the parameter's type once, and every multiply
 * and add rounded on its own (the _rn intrinsics: nvcc would otherwise fuse
 * them into FMAs the CPU does not use), so a step gives the CPU's bits.
 * sumsq accumulates in double in a fixed order (per-thread partials, then a
 * block tree, then the blocks in order): not the CPU's order, so it agrees
 * to rounding, and it is the same from run to run.
 */
#include "cu_family_kernels.h"
#include "cu_kern.cuh"

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float divide(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double divide(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float root(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double root(double a) { return __dsqrt_rn(a); }

#define LAUNCH(n) <<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>

static int no_dtype(const char *op, fw_dtype dt)
{
    return fw__cu_error_set(FW_EDTYPE, "%s: dtype %s not supported by the cuda kernels", op,
                            cu_dtype_name(dt));
}

/* p, g: (n,) */
template <typename T>
__global__ void k_sgd(T *p, const T *g, int64_t n, T lr, T l2, bool decay)
{
    CU_FOR(i, n) {
        T gi = decay ? add(g[i], mul(l2, p[i])) : g[i];
        p[i] = sub(p[i], mul(lr, gi));
    }
}

/* p, g, vel: (n,) */
template <typename T>
__global__ void k_momentum(T *p, const T *g, T *vel, int64_t n, T lr, T mu, T l2, bool nesterov)
{
    CU_FOR(i, n) {
        T gi = add(g[i], mul(l2, p[i]));
        T vi = add(mul(mu, vel[i]), gi);
        vel[i] = vi;
        p[i] = sub(p[i], mul(lr, nesterov ? add(gi, mul(mu, vi)) : vi));
    }
}

/* p, g, m, v: (n,); the constants as ADAM_CONSTS in cpu/optim.c */
template <typename T>
__global__ void k_adam(T *p, const T *g, T *m, T *v, int64_t n, T lr_t, T eps_t, T b1, T b2,
                       T ob1, T ob2, T l2, T dk)
{
    CU_FOR(i, n) {
        T pi = mul(p[i], dk);
        T gi = add(g[i], mul(l2, pi));
        T mi = add(mul(b1, m[i]), mul(ob1, gi));
        T vi = add(mul(b2, v[i]), mul(mul(ob2, gi), gi));
        m[i] = mi;
        v[i] = vi;
        p[i] = sub(pi, divide(mul(lr_t, mi), add(root(vi), eps_t)));
    }
}

template <typename T> __global__ void k_scale(T *x, int64_t n, T s)
{
    CU_FOR(i, n)
        x[i] = mul(x[i], s);
}

#define SUMSQ_BLOCKS 1024

/* part[b] = the double sum of x[i]^2 over block b's grid-stride share. */
template <typename T> __global__ void k_sumsq(const T *x, int64_t n, double *part)
{
    __shared__ double s[FW_CU_THREADS];
    double acc = 0;
    CU_FOR(i, n) {
        double xi = (double)x[i];
        acc = __dadd_rn(acc, __dmul_rn(xi, xi));
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = FW_CU_THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w)
            s[threadIdx.x] = __dadd_rn(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        part[blockIdx.x] = s[0];
}

__global__ void k_sum_parts(double *out, const double *part, int nb)
{
    double acc = 0;
    for (int b = 0; b < nb; b++)
        acc = __dadd_rn(acc, part[b]);
    *out = acc;
}

static int c_sgd(fw_dtype dt, void *p, const void *g, size_t n, double lr, double l2)
{
    if (n == 0)
        return 0;
    if (dt == FW_FLOAT32)
        k_sgd<float> LAUNCH(n)((float *)p, (const float *)g, (int64_t)n, (float)lr, (float)l2,
                               l2 != 0);
    else if (dt == FW_FLOAT64)
        k_sgd<double> LAUNCH(n)((double *)p, (const double *)g, (int64_t)n, lr, l2, l2 != 0);
    else
        return no_dtype("sgd", dt);
    return cu_launched("sgd");
}

static int c_momentum(fw_dtype dt, void *p, const void *g, void *vel, size_t n, double lr,
                      double mu, double l2, int nesterov)
{
    if (n == 0)
        return 0;
    if (dt == FW_FLOAT32)
        k_momentum<float> LAUNCH(n)((float *)p, (const float *)g, (float *)vel, (int64_t)n,
                                    (float)lr, (float)mu, (float)l2, nesterov != 0);
    else if (dt == FW_FLOAT64)
        k_momentum<double> LAUNCH(n)((double *)p, (const double *)g, (double *)vel, (int64_t)n,
                                     lr, mu, l2, nesterov != 0);
    else
        return no_dtype("momentum", dt);
    return cu_launched("momentum");
}

template <typename T>
static void adam(void *p, const void *g, void *m, void *v, size_t n, double lr, double b1,
                 double b2, double eps, double b1pow, double b2pow, double l2, double decay)
{
    const double c2 = sqrt(1.0 - b2pow);
    k_adam<T> LAUNCH(n)((T *)p, (const T *)g, (T *)m, (T *)v, (int64_t)n,
                        (T)(lr * c2 / (1.0 - b1pow)), (T)(eps * c2), (T)b1, (T)b2,
                        (T)(1.0 - b1), (T)(1.0 - b2), (T)l2, (T)(1.0 - lr * decay));
}

static int c_adam(fw_dtype dt, void *p, const void *g, void *m, void *v, size_t n, double lr,
                  double b1, double b2, double eps, double b1pow, double b2pow, double l2,
                  double decay)
{
    if (n == 0)
        return 0;
    if (dt == FW_FLOAT32)
        adam<float>(p, g, m, v, n, lr, b1, b2, eps, b1pow, b2pow, l2, decay);
    else if (dt == FW_FLOAT64)
        adam<double>(p, g, m, v, n, lr, b1, b2, eps, b1pow, b2pow, l2, decay);
    else
        return no_dtype("adam", dt);
    return cu_launched("adam");
}

static int c_sumsq(fw_dtype dt, const void *x, size_t n, double *out)
{
    unsigned nb = fw__cu_blocks((long long)n);
    double *part = NULL;
    int err;

    *out = 0;
    if (dt != FW_FLOAT32 && dt != FW_FLOAT64)
        return no_dtype("sumsq", dt);
    if (n == 0)
        return 0;
    nb = nb < SUMSQ_BLOCKS ? nb : SUMSQ_BLOCKS;
    if ((err = cu_scratch((void **)&part, (nb + 1) * sizeof(double), "sumsq")) < 0)
        return err;
    if (dt == FW_FLOAT32)
        k_sumsq<float><<<nb, FW_CU_THREADS, 0, fw__cu_stream()>>>((const float *)x, (int64_t)n,
                                                                   part);
    else
        k_sumsq<double><<<nb, FW_CU_THREADS, 0, fw__cu_stream()>>>((const double *)x,
                                                                    (int64_t)n, part);
    k_sum_parts<<<1, 1, 0, fw__cu_stream()>>>(part + nb, part, (int)nb);
    if ((err = cu_launched("sumsq")) < 0)
        goto out;
    /* a value the host needs: wait for it */
    if ((err = fw__cu_error(cudaMemcpyAsync(out, part + nb, sizeof(*out), cudaMemcpyDeviceToHost,
                                            fw__cu_stream()), "sumsq")) < 0)
        goto out;
    err = fw__cu_error(cudaStreamSynchronize(fw__cu_stream()), "sumsq");
out:
    cu_scratch_free(part);
    return err;
}

static int c_scale(fw_dtype dt, void *x, size_t n, double s)
{
    if (n == 0)
        return 0;
    if (dt == FW_FLOAT32)
        k_scale<float> LAUNCH(n)((float *)x, (int64_t)n, (float)s);
    else if (dt == FW_FLOAT64)
        k_scale<double> LAUNCH(n)((double *)x, (int64_t)n, s);
    else
        return no_dtype("scale", dt);
    return cu_launched("scale");
}

static_assert(sizeof(struct fw_optim_kernels) == 5 * sizeof(void (*)(void)),
              "fw_optim_kernels changed: update the table below");

extern "C" const struct fw_optim_kernels fw__cu_optim_kernels = {
    c_sgd,
    c_momentum,
    c_adam,
    c_sumsq,
    c_scale,
};
