/*
 * bench_framework.c - the framework's side of the Eddy-vs-PyTorch benchmark
 * (run both with tests/bench/run_framework.sh; torch_peer.py is the peer).
 *
 * Workloads (same shapes as the peer):
 *   mlp    MLP 784-512-256-10 (ReLU), batch 128, cross-entropy, Adam: ms/step
 *   lenet  LeNet-5 (conv5-pool-conv5-pool-120-84-10), batch 64, Adam: ms/step
 *   ops    1000 small ops (x*1.0001 + 0.0001 on 4 floats) recorded with
 *          autograd: us/op forward, and forward+backward
 *   sgemm  1024x1024x1024 float32: fw_matmul vs cblas_sgemm called directly
 *
 * Output: one "name value" line per figure (median over the timed
 * iterations; p90 after it where printed), for the runner to join.
 * Usage: bench_framework [--threads N] [--iters N] [--only NAME]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw/init.h"
#include "fw/nn.h"
#include "fw/ops.h"
#include "fw/optim.h"
#include "fw/random.h"
#include "../../framework/core/fw_parallel.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

#define CHECK(call)                                                                 \
    do {                                                                            \
        int err_ = (call);                                                          \
        if (err_ < 0) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                    fw_error_last());                                               \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static fw_tensor *param(const int64_t *shape, int nd)
{
    fw_tensor *t = NULL;
    CHECK(fw_zeros(&t, FW_FLOAT32, shape, nd));
    CHECK(fw_tensor_set_stop_gradient(t, false));
    return t;
}

/* ---- MLP ---- */

typedef struct model {
    fw_tensor *p[16];
    int np;
} model;

static void linear_params(model *m, int64_t in, int64_t out)
{
    int64_t ws[2] = { in, out }, bs[1] = { out };
    fw_tensor *w = param(ws, 2), *b = param(bs, 1);
    CHECK(fw_init_linear_default(w, b, NULL));
    m->p[m->np++] = w;
    m->p[m->np++] = b;
}

static void conv_params(model *m, int64_t in, int64_t out, int64_t k)
{
    int64_t ws[4] = { out, in, k, k }, bs[1] = { out };
    fw_tensor *w = param(ws, 4), *b = param(bs, 1);
    CHECK(fw_init_conv_default(w, b, 1, NULL));
    m->p[m->np++] = w;
    m->p[m->np++] = b;
}

/* y = relu?(x @ w + b); consumes x's reference. */
static fw_tensor *dense(fw_tensor *x, fw_tensor *w, fw_tensor *b, int relu)
{
    fw_tensor *h = NULL, *a = NULL;
    CHECK(fw_linear(&h, x, w, b));
    fw_tensor_unref(x);
    if (!relu)
        return h;
    CHECK(fw_relu(&a, h));
    fw_tensor_unref(h);
    return a;
}

static fw_tensor *mlp_forward(model *m, fw_tensor *x)
{
    fw_tensor *h = dense(fw_tensor_ref(x), m->p[0], m->p[1], 1);
    h = dense(h, m->p[2], m->p[3], 1);
    return dense(h, m->p[4], m->p[5], 0);
}

static fw_tensor *lenet_forward(model *m, fw_tensor *x)
{
    const int64_t pad2[4] = { 2, 2, 2, 2 }, k2[2] = { 2, 2 };
    fw_tensor *c = NULL, *a = NULL, *p = NULL, *f = NULL;
    CHECK(fw_conv2d(&c, x, m->p[0], m->p[1], NULL, pad2, NULL, 1));    /* [N,6,28,28] */
    CHECK(fw_relu(&a, c));
    fw_tensor_unref(c);
    CHECK(fw_max_pool2d(&p, NULL, a, k2, NULL, NULL, false));           /* [N,6,14,14] */
    fw_tensor_unref(a);
    CHECK(fw_conv2d(&c, p, m->p[2], m->p[3], NULL, NULL, NULL, 1));     /* [N,16,10,10] */
    fw_tensor_unref(p);
    CHECK(fw_relu(&a, c));
    fw_tensor_unref(c);
    CHECK(fw_max_pool2d(&p, NULL, a, k2, NULL, NULL, false));           /* [N,16,5,5] */
    fw_tensor_unref(a);
    CHECK(fw_flatten(&f, p, 1, -1));                                      /* [N,400] */
    fw_tensor_unref(p);
    fw_tensor *h = dense(f, m->p[4], m->p[5], 1);
    h = dense(h, m->p[6], m->p[7], 1);
    return dense(h, m->p[8], m->p[9], 0);
}

static void train_bench(const char *name, model *m, fw_tensor *(*fwd)(model *, fw_tensor *),
                        const int64_t *xshape, int xnd, int iters)
{
    fw_tensor *x = NULL, *y = NULL, *logits, *loss;
    fw_optim *opt = NULL;
    fw_optim_config cfg;
    fw_cross_entropy_opts ce = FW_CROSS_ENTROPY_DEFAULTS;
    CHECK(fw_randn(&x, xshape, xnd, FW_FLOAT32, NULL));
    CHECK(fw_randint(&y, 0, 10, xshape, 1, FW_INT64, NULL));
    fw_optim_config_default(&cfg, FW_OPTIM_ADAM);
    CHECK(fw_optim_new(&opt, &cfg, m->p, (size_t)m->np));
    double *t = malloc((size_t)iters * sizeof(double));
    for (int i = -5; i < iters; i++) {          /* 5 warm-up steps */
        double t0 = now_ms();
        logits = fwd(m, x);
        CHECK(fw_cross_entropy(&loss, logits, y, &ce));
        CHECK(fw_tensor_backward(loss, NULL, false));
        CHECK(fw_optim_step(opt));
        fw_optim_clear_grad(opt, true);
        fw_tensor_unref(logits);
        fw_tensor_unref(loss);
        if (i >= 0)
            t[i] = now_ms() - t0;
    }
    double med = pct(t, iters, 0.5), p90 = pct(t, iters, 0.9);
    printf("%s_step_ms %.4f\n%s_step_p90_ms %.4f\n", name, med, name, p90);
    fflush(stdout);
    free(t);
    fw_optim_free(opt);
    fw_tensor_unref(x);
    fw_tensor_unref(y);
    for (int i = 0; i < m->np; i++)
        fw_tensor_unref(m->p[i]);
}

static void bench_ops(int iters)
{
    enum { NOPS = 1000 };
    int64_t s = 4;
    fw_tensor *x = param(&s, 1);
    CHECK(fw_init_constant(x, 1.0));
    double *tf = malloc((size_t)iters * sizeof(double)), *tb = malloc((size_t)iters * sizeof(double));
    for (int it = -3; it < iters; it++) {
        double t0 = now_ms();
        fw_tensor *y = fw_tensor_ref(x), *z = NULL, *loss = NULL;
        for (int k = 0; k < NOPS / 2; k++) {
            CHECK(fw_mul_scalar(&z, y, 1.0001));
            fw_tensor_unref(y);
            CHECK(fw_add_scalar(&y, z, 0.0001));
            fw_tensor_unref(z);
        }
        double t1 = now_ms();
        CHECK(fw_sum(&loss, y, NULL, 0, false));
        CHECK(fw_tensor_backward(loss, NULL, false));
        double t2 = now_ms();
        fw_tensor_unref(y);
        fw_tensor_unref(loss);
        fw_tensor_clear_grad(x, false);
        if (it >= 0) {
            tf[it] = (t1 - t0) * 1e3 / NOPS;
            tb[it] = (t2 - t0) * 1e3 / NOPS;
        }
    }
    printf("op_fwd_us %.4f\nop_fwd_bwd_us %.4f\n", pct(tf, iters, 0.5), pct(tb, iters, 0.5));
    fflush(stdout);
    free(tf);
    free(tb);
    fw_tensor_unref(x);
}

static void bench_sgemm(int iters)
{
    const int64_t s[2] = { 1024, 1024 };
    fw_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK(fw_randn(&a, s, 2, FW_FLOAT32, NULL));
    CHECK(fw_randn(&b, s, 2, FW_FLOAT32, NULL));
    float *cc = malloc(1024 * 1024 * sizeof(float));
    double *tf = malloc((size_t)iters * sizeof(double)), *tb = malloc((size_t)iters * sizeof(double));
    for (int it = -2; it < iters; it++) {
        /* alternate so neither side always runs with a warmer cache */
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1024, 1024, 1024, 1.0f,
                    fw_tensor_data(a), 1024, fw_tensor_data(b), 1024, 0.0f, cc, 1024);
        double t1 = now_ms();
        CHECK(fw_matmul(&c, a, b, false, false));
        double t2 = now_ms();
        fw_tensor_unref(c);
        if (it >= 0) {
            tb[it] = t1 - t0;
            tf[it] = t2 - t1;
        }
    }
    printf("sgemm_ms %.4f\nsgemm_openblas_ms %.4f\n", pct(tf, iters, 0.5), pct(tb, iters, 0.5));
    fflush(stdout);
    free(cc);
    free(tf);
    free(tb);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
}

int main(int argc, char **argv)
{
    int threads = 0, iters = 30;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--threads N] [--iters N] [--only mlp|lenet|ops|sgemm]\n",
                    argv[0]);
            return 2;
        }
    }
    if (iters < 1)
        iters = 1;
    if (threads > 0)
        fw_parallel_set_num_threads(threads);
    printf("threads %d\n", fw_parallel_num_threads());
    fw_seed(0);
    if (only == NULL || strcmp(only, "mlp") == 0) {
        model m = { .np = 0 };
        const int64_t xs[2] = { 128, 784 };
        linear_params(&m, 784, 512);
        linear_params(&m, 512, 256);
        linear_params(&m, 256, 10);
        train_bench("mlp", &m, mlp_forward, xs, 2, iters);
    }
    if (only == NULL || strcmp(only, "lenet") == 0) {
        model m = { .np = 0 };
        const int64_t xs[4] = { 64, 1, 28, 28 };
        conv_params(&m, 1, 6, 5);
        conv_params(&m, 6, 16, 5);
        linear_params(&m, 400, 120);
        linear_params(&m, 120, 84);
        linear_params(&m, 84, 10);
        train_bench("lenet", &m, lenet_forward, xs, 4, iters);
    }
    if (only == NULL || strcmp(only, "ops") == 0)
        bench_ops(iters * 3);
    if (only == NULL || strcmp(only, "sgemm") == 0)
        bench_sgemm(iters);
    return 0;
}
