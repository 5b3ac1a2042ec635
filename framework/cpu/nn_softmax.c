/*
 * nn_softmax.c - softmax and log_softmax over one axis, numerically stable
 * (the row maximum is subtracted before exp). x is viewed as [outer, C, inner].
 */
#ifndef NN_T
#include <math.h>
#include <stdint.h>

#include "nn_kernels.h"

#define NN_T float
#define NN_S(name) name##_f32
#define NN_EXP expf
#define NN_LOG logf
#include "nn_softmax.c"
#undef NN_T
#undef NN_S
#undef NN_EXP
#undef NN_LOG
#define NN_T double
#define NN_S(name) name##_f64
#define NN_EXP exp
#define NN_LOG log
#include "nn_softmax.c"
#undef NN_T
#undef NN_S
#undef NN_EXP
#undef NN_LOG

#else /* template body ------------------------------------------------- */

/* x, y: [outer, C, inner] */
static void NN_S(softmax_any)(NN_T *y, const NN_T *x, int64_t outer, int64_t C, int64_t inner,
                              int log_form)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const NN_T *xr = x + o * C * inner + i;
            NN_T *yr = y + o * C * inner + i;
            NN_T m = xr[0];
            NN_T s = 0;
            for (int64_t c = 1; c < C; c++)
                if (xr[c * inner] > m)
                    m = xr[c * inner];
            for (int64_t c = 0; c < C; c++) {
                NN_T e = NN_EXP(xr[c * inner] - m);
                s += e;
                if (!log_form)
                    yr[c * inner] = e;
            }
            if (log_form) {
                NN_T lse = m + NN_LOG(s);
                for (int64_t c = 0; c < C; c++)
                    yr[c * inner] = xr[c * inner] - lse;
            } else {
                NN_T inv = (NN_T)1 / s;
                for (int64_t c = 0; c < C; c++)
                    yr[c * inner] *= inv;
            }
        }
    }
}

void NN_S(fw__nn_softmax_fwd)(NN_T *y, const NN_T *x, int64_t outer, int64_t C, int64_t inner)
{
    NN_S(softmax_any)(y, x, outer, C, inner, 0);
}

void NN_S(fw__nn_log_softmax_fwd)(NN_T *y, const NN_T *x, int64_t outer, int64_t C,
                                  int64_t inner)
{
    NN_S(softmax_any)(y, x, outer, C, inner, 1);
}

/* y, dy, dx: [outer, C, inner] */
void NN_S(fw__nn_softmax_bwd)(NN_T *dx, const NN_T *y, const NN_T *dy, int64_t outer,
                              int64_t C, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * C * inner + i;
            NN_T dot = 0;
            for (int64_t c = 0; c < C; c++)
                dot += dy[base + c * inner] * y[base + c * inner];
            for (int64_t c = 0; c < C; c++)
                dx[base + c * inner] = y[base + c * inner] * (dy[base + c * inner] - dot);
        }
    }
}

void NN_S(fw__nn_log_softmax_bwd)(NN_T *dx, const NN_T *y, const NN_T *dy, int64_t outer,
                                  int64_t C, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * C * inner + i;
            NN_T s = 0;
            for (int64_t c = 0; c < C; c++)
                s += dy[base + c * inner];
            for (int64_t c = 0; c < C; c++)
                dx[base + c * inner] = dy[base + c * inner] - NN_EXP(y[base + c * inner]) * s;
        }
    }
}

#endif
