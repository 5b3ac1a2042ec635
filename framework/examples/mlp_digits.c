/*
 * mlp_digits.c - train an MLP (64-128-10, ReLU) on scikit-learn's digits with
 * Adam, using only the framework's C API: tensors, linear, relu,
 * cross_entropy, autograd, the Adam optimizer, Paddle's Linear init and
 * safetensors.
 *
 * Usage: fw_example_mlp_digits DIGITS_FILE [WEIGHTS.safetensors]
 *   DIGITS_FILE: "DIGT", int32 n, int32 d, float32 x[n*d] (pixels / 16),
 *   int32 y[n], little-endian. Export it with:
 *     /usr/bin/python3 -c 'import sys,numpy as np; from sklearn.datasets import
 *       load_digits; d=load_digits(); f=open(sys.argv[1],"wb"); f.write(b"DIGT");
 *       f.write(np.array(d.data.shape,"<i4").tobytes());
 *       f.write((d.data/16).astype("<f4").tobytes());
 *       f.write(d.target.astype("<i4").tobytes())' digits.bin
 * Prints the loss per epoch and the test accuracy (a fixed 80/20 split);
 * exits 0 when the accuracy is at least 95%.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw/init.h"
#include "fw/nn.h"
#include "fw/ops.h"
#include "fw/optim.h"
#include "fw/random.h"
#include "fw/safetensors.h"

#define HIDDEN 128
#define CLASSES 10
#define EPOCHS 30
#define BATCH 32

typedef struct digits {
    int32_t n, d;
    float *x;       /* [n, d] */
    int32_t *y;     /* [n] */
} digits;

int mlp_digits_run(const char *data_path, const char *weights_path, double *test_acc,
                   int verbose);

static int load(digits *ds, const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[4];
    memset(ds, 0, sizeof(*ds));
    if (f == NULL)
        return fw_error_set(FW_EIO, "cannot open %s", path);
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "DIGT", 4) != 0 ||
        fread(&ds->n, 4, 1, f) != 1 || fread(&ds->d, 4, 1, f) != 1 || ds->n <= 0 ||
        ds->d <= 0 || ds->n > 1000000 || ds->d > 100000) {
        fclose(f);
        return fw_error_set(FW_EFORMAT, "%s is not a digits file", path);
    }
    ds->x = malloc((size_t)ds->n * (size_t)ds->d * sizeof(float));
    ds->y = malloc((size_t)ds->n * sizeof(int32_t));
    if (ds->x == NULL || ds->y == NULL ||
        fread(ds->x, sizeof(float), (size_t)ds->n * (size_t)ds->d, f) != (size_t)ds->n * (size_t)ds->d ||
        fread(ds->y, sizeof(int32_t), (size_t)ds->n, f) != (size_t)ds->n) {
        fclose(f);
        free(ds->x);
        free(ds->y);
        return fw_error_set(FW_EFORMAT, "%s is truncated", path);
    }
    fclose(f);
    for (int32_t i = 0; i < ds->n; i++)
        if (ds->y[i] < 0 || ds->y[i] >= CLASSES) {
            free(ds->x);
            free(ds->y);
            return fw_error_set(FW_EFORMAT, "%s: label %d out of range", path, ds->y[i]);
        }
    return 0;
}

/* Rows idx[0..b) of the data set as x [b, d] float32 and y [b] int64. */
static int batch(fw_tensor **x, fw_tensor **y, const digits *ds, const int64_t *idx, int64_t b)
{
    float *xb = malloc((size_t)b * (size_t)ds->d * sizeof(float));
    int64_t *yb = malloc((size_t)b * sizeof(int64_t));
    int err = FW_ENOMEM;
    *x = *y = NULL;
    if (xb && yb) {
        for (int64_t i = 0; i < b; i++) {
            memcpy(xb + i * ds->d, ds->x + idx[i] * ds->d, (size_t)ds->d * sizeof(float));
            yb[i] = ds->y[idx[i]];
        }
        int64_t xs[2] = { b, ds->d };
        if ((err = fw_tensor_from_data(x, xb, FW_FLOAT32, xs, 2)) == 0 &&
            (err = fw_tensor_from_data(y, yb, FW_INT64, &b, 1)) < 0) {
            fw_tensor_unref(*x);
            *x = NULL;
        }
    } else {
        fw_error_set(FW_ENOMEM, "batch");
    }
    free(xb);
    free(yb);
    return err;
}

/* logits = relu(x @ w1 + b1) @ w2 + b2 */
static int forward(fw_tensor **logits, fw_tensor *x, fw_tensor *const *p)
{
    fw_tensor *h = NULL, *a = NULL;
    int err;
    *logits = NULL;
    if ((err = fw_linear(&h, x, p[0], p[1])) == 0 && (err = fw_relu(&a, h)) == 0)
        err = fw_linear(logits, a, p[2], p[3]);
    fw_tensor_unref(h);
    fw_tensor_unref(a);
    return err;
}

static int evaluate(double *acc, const digits *ds, const int64_t *idx, int64_t n,
                    fw_tensor *const *p)
{
    fw_tensor *x = NULL, *y = NULL, *logits = NULL, *pred = NULL;
    bool prev = fw_set_grad_enabled(false);
    int err;
    if ((err = batch(&x, &y, ds, idx, n)) == 0 && (err = forward(&logits, x, p)) == 0 &&
        (err = fw_argmax(&pred, logits, 1, false)) == 0) {
        const int64_t *pp = fw_tensor_data(pred), *yy = fw_tensor_data(y);
        int64_t right = 0;
        for (int64_t i = 0; i < n; i++)
            right += pp[i] == yy[i];
        *acc = (double)right / (double)n;
    }
    fw_set_grad_enabled(prev);
    fw_tensor_unref(x);
    fw_tensor_unref(y);
    fw_tensor_unref(logits);
    fw_tensor_unref(pred);
    return err;
}

int mlp_digits_run(const char *data_path, const char *weights_path, double *test_acc,
                   int verbose)
{
    digits ds;
    fw_tensor *p[4] = { NULL, NULL, NULL, NULL };
    fw_optim *opt = NULL;
    int64_t *perm = NULL, *order = NULL;
    int err;

    *test_acc = 0;
    if ((err = load(&ds, data_path)) < 0)
        return err;
    fw_seed(2024);
    const int64_t ntrain = ds.n * 8 / 10, ntest = ds.n - ntrain;
    perm = malloc((size_t)ds.n * sizeof(int64_t));
    order = malloc((size_t)ntrain * sizeof(int64_t));
    if (perm == NULL || order == NULL) {
        err = fw_error_set(FW_ENOMEM, "permutation");
        goto done;
    }
    fw_random_randperm_i64(NULL, perm, (size_t)ds.n);     /* fixed split */

    const int64_t shapes[4][2] = { { ds.d, HIDDEN }, { HIDDEN, 0 }, { HIDDEN, CLASSES },
                                   { CLASSES, 0 } };
    for (int i = 0; i < 4; i++) {
        if ((err = fw_zeros(&p[i], FW_FLOAT32, shapes[i], i % 2 ? 1 : 2)) < 0 ||
            (err = fw_tensor_set_stop_gradient(p[i], false)) < 0)
            goto done;
    }
    if ((err = fw_init_linear_default(p[0], p[1], NULL)) < 0 ||
        (err = fw_init_linear_default(p[2], p[3], NULL)) < 0)
        goto done;

    fw_optim_config cfg;
    fw_optim_config_default(&cfg, FW_OPTIM_ADAM);
    cfg.lr = 0.003;
    if ((err = fw_optim_new(&opt, &cfg, p, 4)) < 0)
        goto done;

    fw_cross_entropy_opts ce = FW_CROSS_ENTROPY_DEFAULTS;
    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        double total = 0;
        int nb = 0;
        fw_random_randperm_i64(NULL, order, (size_t)ntrain);     /* shuffle */
        for (int64_t i = 0; i < ntrain; i++)
            order[i] = perm[order[i]];
        for (int64_t s = 0; s < ntrain; s += BATCH) {
            int64_t b = ntrain - s < BATCH ? ntrain - s : BATCH;
            fw_tensor *x = NULL, *y = NULL, *logits = NULL, *loss = NULL;
            double lv = 0;
            if ((err = batch(&x, &y, &ds, order + s, b)) == 0 &&
                (err = forward(&logits, x, p)) == 0 &&
                (err = fw_cross_entropy(&loss, logits, y, &ce)) == 0 &&
                (err = fw_tensor_item(&lv, loss)) == 0 &&
                (err = fw_tensor_backward(loss, NULL, false)) == 0 &&
                (err = fw_optim_step(opt)) == 0)
                fw_optim_clear_grad(opt, false);
            fw_tensor_unref(x);
            fw_tensor_unref(y);
            fw_tensor_unref(logits);
            fw_tensor_unref(loss);
            if (err < 0)
                goto done;
            total += lv;
            nb++;
        }
        if (verbose)
            printf("epoch %2d  loss %.4f\n", epoch + 1, total / nb);
    }
    if ((err = evaluate(test_acc, &ds, perm + ntrain, ntest, p)) < 0)
        goto done;
    if (verbose)
        printf("test accuracy %.2f%% (%lld samples)\n", 100 * *test_acc, (long long)ntest);

    if (weights_path != NULL) {
        /* Paddle's state-dict names for a Sequential of two Linear layers */
        const char *names[4] = { "0.weight", "0.bias", "2.weight", "2.bias" };
        const char *mk[1] = { "format" }, *mv[1] = { "eddy" };
        fw_safetensors *f = NULL;
        fw_tensor *q[4] = { NULL, NULL, NULL, NULL };
        double acc2 = 0;
        if ((err = fw_safetensors_save(weights_path, names, p, 4, mk, mv, 1)) < 0 ||
            (err = fw_safetensors_open(&f, weights_path)) < 0)
            goto done;
        for (int i = 0; i < 4 && err == 0; i++)
            err = fw_safetensors_get(&q[i], f, names[i]);
        if (err == 0)
            err = evaluate(&acc2, &ds, perm + ntrain, ntest, q);
        if (err == 0 && acc2 != *test_acc)
            err = fw_error_set(FW_EINTERNAL, "reloaded weights give %.4f, not %.4f", acc2,
                               *test_acc);
        for (int i = 0; i < 4; i++)
            fw_tensor_unref(q[i]);
        fw_safetensors_close(f);
        if (err == 0 && verbose)
            printf("weights saved to %s and reloaded\n", weights_path);
    }
done:
    fw_optim_free(opt);
    for (int i = 0; i < 4; i++)
        fw_tensor_unref(p[i]);
    free(perm);
    free(order);
    free(ds.x);
    free(ds.y);
    return err;
}

#ifndef MLP_DIGITS_NO_MAIN
int main(int argc, char **argv)
{
    double acc;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s DIGITS_FILE [WEIGHTS.safetensors]\n", argv[0]);
        return 2;
    }
    if (mlp_digits_run(argv[1], argc > 2 ? argv[2] : NULL, &acc, 1) < 0) {
        fprintf(stderr, "mlp_digits: %s\n", fw_error_last());
        return 1;
    }
    return acc >= 0.95 ? 0 : 1;
}
#endif
