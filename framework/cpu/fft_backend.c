/*
 * fft_backend.c - the CPU backend's DFT family (core/fw_backend_fft.h):
 * rows split across the pool; each chunk converts its rows to double, runs
 * the double-precision plan of cpu/fft.c in a scratch buffer of its own and
 * writes the output dtype back. A plan is made per call.
 */
#include <stdlib.h>
#include <string.h>

#include "core/fw_backend_fft.h"
#include "core/fw_parallel.h"
#include "core_kernels.h"
#include "fft_kernels.h"

typedef struct fft_job {
    fw_fft_kind kind;
    const fw_fft_plan *plan;
    int64_t n;              /* transform length */
    int64_t in_len, out_len; /* elements per row (complex or real) */
    fw_dtype idt, odt;
    const void *x;
    void *y;
    double scale;
    bool inverse;
    int failed;
} fft_job;

/* Row r's input into buf as n interleaved complex doubles. */
static void load_row(const fft_job *j, int64_t r, double *buf)
{
    const int64_t n = j->n, len = j->in_len;
    const bool f32 = j->idt == FW_FLOAT32 || j->idt == FW_COMPLEX64;
    const bool cx = fw_dtype_is_complex(j->idt);

    memset(buf, 0, sizeof(double) * 2 * (size_t)n);
    if (cx) {
        const int64_t cnt = len < n ? len : n;
        if (f32) {
            const float *s = (const float *)j->x + 2 * r * len;
            for (int64_t k = 0; k < 2 * cnt; k++)
                buf[k] = s[k];
        } else {
            memcpy(buf, (const double *)j->x + 2 * r * len, sizeof(double) * 2 * (size_t)cnt);
        }
    } else if (f32) {
        const float *s = (const float *)j->x + r * len;
        for (int64_t k = 0; k < len; k++)
            buf[2 * k] = s[k];
    } else {
        const double *s = (const double *)j->x + r * len;
        for (int64_t k = 0; k < len; k++)
            buf[2 * k] = s[k];
    }
    if (j->kind == FW_FFT_C2R) {
        /* the Hermitian extension of bins 0..n/2; imaginary parts of the
         * bins that must be real (0, and n/2 for even n) are dropped */
        buf[1] = 0;
        if (n % 2 == 0)
            buf[n + 1] = 0;
        for (int64_t k = n / 2 + 1; k < n; k++) {
            buf[2 * k] = buf[2 * (n - k)];
            buf[2 * k + 1] = -buf[2 * (n - k) + 1];
        }
    }
}

static void store_row(const fft_job *j, int64_t r, const double *buf)
{
    const int64_t n = j->n, len = j->out_len;
    const double s = j->scale;
    const bool f32 = j->odt == FW_FLOAT32 || j->odt == FW_COMPLEX64;

    if (fw_dtype_is_complex(j->odt)) {
        /* C2C: n values; R2C and C2R_GRAD: bins 0..n/2 */
        double w[2] = {s, s};
        for (int64_t k = 0; k < len; k++) {
            double f = s;
            if (j->kind == FW_FFT_C2R_GRAD && k != 0 && !(n % 2 == 0 && k == n / 2))
                f = 2 * s;
            w[0] = buf[2 * k] * f;
            w[1] = buf[2 * k + 1] * f;
            if (f32) {
                ((float *)j->y)[2 * (r * len + k)] = (float)w[0];
                ((float *)j->y)[2 * (r * len + k) + 1] = (float)w[1];
            } else {
                ((double *)j->y)[2 * (r * len + k)] = w[0];
                ((double *)j->y)[2 * (r * len + k) + 1] = w[1];
            }
        }
    } else if (f32) {
        float *d = (float *)j->y + r * len;
        for (int64_t k = 0; k < len; k++)
            d[k] = (float)(buf[2 * k] * s);
    } else {
        double *d = (double *)j->y + r * len;
        for (int64_t k = 0; k < len; k++)
            d[k] = buf[2 * k] * s;
    }
}

static void fft_rows(void *ctx, int64_t r0, int64_t r1)
{
    fft_job *j = ctx;
    const int64_t n = j->n;
    double *buf = malloc(sizeof(double) * (size_t)(2 * n + fw__fft_scratch_len(j->plan)));

    if (buf == NULL) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    bool inv = j->kind == FW_FFT_C2C ? j->inverse
                                     : j->kind == FW_FFT_C2R || j->kind == FW_FFT_R2C_GRAD;
    for (int64_t r = r0; r < r1; r++) {
        load_row(j, r, buf);
        fw__fft_exec(j->plan, buf, inv, buf + 2 * n);
        store_row(j, r, buf);
    }
    free(buf);
}

static int k_lines(fw_fft_kind kind, int64_t n, bool inverse, double scale, fw_dtype xdt,
                   const void *x, int64_t in_len, fw_dtype ydt, void *y, int64_t out_len,
                   int64_t rows)
{
    fw_fft_plan *plan = NULL;

    if ((xdt != FW_FLOAT32 && xdt != FW_FLOAT64 && xdt != FW_COMPLEX64 && xdt != FW_COMPLEX128) ||
        (ydt != FW_FLOAT32 && ydt != FW_FLOAT64 && ydt != FW_COMPLEX64 && ydt != FW_COMPLEX128))
        return fw_error_set(FW_EDTYPE, "fft: dtypes %s -> %s not supported by the cpu kernels",
                            fw_dtype_name(xdt), fw_dtype_name(ydt));
    if (rows <= 0)
        return 0;
    if (fw__fft_plan_new(&plan, n) < 0)
        return fw_error_set(FW_ENOMEM, "fft: out of memory planning a length-%lld transform",
                            (long long)n);
    fft_job j = {kind, plan, n, in_len, out_len, xdt, ydt, x, y, scale, inverse, 0};
    int64_t grain = 16384 / n;
    fw_parallel_for(rows, grain > 0 ? grain : 1, fft_rows, &j);
    fw__fft_plan_free(plan);
    if (j.failed)
        return fw_error_set(FW_ENOMEM, "fft: out of memory");
    return 0;
}

const struct fw_fft_kernels fw__cpu_fft = {
    .lines = k_lines,
};
