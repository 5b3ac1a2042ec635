/* infer_bench.c - the C inference runtime (eddy_infer.h) on the models
 * infer_models.py saved: per call reshape + copy_from_cpu + run +
 * copy_to_cpu, median over ITERS after a warm-up. Prints `NAME_bB_us MEDIAN`
 * lines (joined with infer_peer.py's by infer_bench.sh) and writes each
 * output to DIR/NAME_bB_c.f32 so the runner can check it against eager.
 *
 *   infer_bench DIR ITERS THREADS [BATCH]    # BATCH: only that one (1 or 64)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eddy_infer.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *read_floats(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    float *buf = malloc(n * sizeof(float));
    if (f == NULL || buf == NULL || fread(buf, sizeof(float), n, f) != n) {
        fprintf(stderr, "infer_bench: cannot read %zu floats from %s\n", n, path);
        exit(1);
    }
    fclose(f);
    return buf;
}

static void bench(const char *dir, const char *name, int ndim, const int64_t *sample,
                  int iters, int threads, int only)
{
    char path[4096];
    fw_infer_config *cfg = fw_infer_config_new();
    fw_infer_predictor *p;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (cfg == NULL || fw_infer_config_set_model(cfg, path, NULL) < 0 ||
        fw_infer_config_set_cpu_threads(cfg, threads) < 0 ||
        fw_infer_predictor_create(&p, cfg) < 0) {
        fprintf(stderr, "infer_bench: %s: %s\n", name, fw_infer_last_error());
        exit(1);
    }
    fw_infer_config_free(cfg);
    fw_infer_tensor *in = fw_infer_get_input_handle(p, fw_infer_input_name(p, 0));
    fw_infer_tensor *out = fw_infer_get_output_handle(p, fw_infer_output_name(p, 0));
    for (int64_t batch = 1; batch <= 64; batch *= 64) {
        if (only && batch != only)
            continue;
        int64_t shape[8] = {batch};
        size_t n = (size_t)batch;
        for (int d = 1; d < ndim; d++) {
            shape[d] = sample[d - 1];
            n *= (size_t)sample[d - 1];
        }
        snprintf(path, sizeof(path), "%s/%s_b%lld.f32", dir, name, (long long)batch);
        float *x = read_floats(path, n);
        float y[64 * 10];
        int warm = iters / 10 + 1;
        double *t = malloc((size_t)iters * sizeof(double));
        for (int i = 0; i < warm + iters; i++) {
            double t0 = now_us();
            if (fw_infer_tensor_reshape(in, ndim, shape) < 0 ||
                fw_infer_tensor_copy_from_cpu(in, x, n * sizeof(float)) < 0 ||
                fw_infer_predictor_run(p) < 0 ||
                fw_infer_tensor_copy_to_cpu(out, y, sizeof(y)) < 0) {
                fprintf(stderr, "infer_bench: %s: %s\n", name, fw_infer_last_error());
                exit(1);
            }
            double t1 = now_us();
            if (i >= warm)
                t[i - warm] = t1 - t0;
        }
        qsort(t, (size_t)iters, sizeof(double), cmp_double);
        printf("%s_b%lld_us %.2f\n", name, (long long)batch, t[iters / 2]);
        snprintf(path, sizeof(path), "%s/%s_b%lld_c.f32", dir, name, (long long)batch);
        FILE *f = fopen(path, "wb");
        if (f) {
            fwrite(y, sizeof(float), (size_t)batch * 10, f);
            fclose(f);
        }
        free(t);
        free(x);
    }
    fw_infer_predictor_free(p);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: infer_bench DIR ITERS THREADS [BATCH]\n");
        return 2;
    }
    int iters = atoi(argv[2]), threads = atoi(argv[3]), only = argc == 5 ? atoi(argv[4]) : 0;
    if (iters < 1 || threads < 1) {
        fprintf(stderr, "infer_bench: ITERS and THREADS must be >= 1\n");
        return 2;
    }
    bench(argv[1], "lenet", 4, (int64_t[]){1, 28, 28}, iters, threads, only);
    bench(argv[1], "mlp", 2, (int64_t[]){784}, iters, threads, only);
    bench(argv[1], "tiny", 2, (int64_t[]){4}, iters, threads, only);
    return 0;
}
