/*
 * nn_rnn.c - fused gate kernels of the LSTM and GRU cells, with Paddle's
 * gate order (LSTM: i, f, g, o; GRU: r, z, c) and formulas. The matmuls that
 * produce the gate pre-activations run on BLAS in the op layer.
 */
#ifndef NN_T
#include <math.h>
#include <stdint.h>

#include "nn_kernels.h"

#define NN_T float
#define NN_S(name) name##_f32
#define NN_EXP expf
#define NN_TANH tanhf
#include "nn_rnn.c"
#undef NN_T
#undef NN_S
#undef NN_EXP
#undef NN_TANH
#define NN_T double
#define NN_S(name) name##_f64
#define NN_EXP exp
#define NN_TANH tanh
#include "nn_rnn.c"
#undef NN_T
#undef NN_S
#undef NN_EXP
#undef NN_TANH

#else /* template body ------------------------------------------------- */

static NN_T NN_S(sig)(NN_T v)
{
    return 1 / (1 + NN_EXP(-v));
}

/* G, act [B, 4H]; c_prev, h, c [B, H] */
void NN_S(fw__nn_lstm_gates_fwd)(NN_T *h, NN_T *c, NN_T *act, const NN_T *G,
                                 const NN_T *c_prev, int64_t B, int64_t H)
{
    for (int64_t b = 0; b < B; b++) {
        const NN_T *gr = G + b * 4 * H;
        NN_T *ar = act + b * 4 * H;
        for (int64_t j = 0; j < H; j++) {
            NN_T i = NN_S(sig)(gr[j]), f = NN_S(sig)(gr[H + j]);
            NN_T g = NN_TANH(gr[2 * H + j]), o = NN_S(sig)(gr[3 * H + j]);
            NN_T cn = f * c_prev[b * H + j] + i * g;
            ar[j] = i;
            ar[H + j] = f;
            ar[2 * H + j] = g;
            ar[3 * H + j] = o;
            c[b * H + j] = cn;
            h[b * H + j] = o * NN_TANH(cn);
        }
    }
}

/* dh, dc [B, H] (either NULL) -> dG [B, 4H], dc_prev [B, H] */
void NN_S(fw__nn_lstm_gates_bwd)(NN_T *dG, NN_T *dc_prev, const NN_T *act, const NN_T *c,
                                 const NN_T *c_prev, const NN_T *dh, const NN_T *dc, int64_t B,
                                 int64_t H)
{
    for (int64_t b = 0; b < B; b++) {
        const NN_T *ar = act + b * 4 * H;
        NN_T *dr = dG != NULL ? dG + b * 4 * H : NULL;
        for (int64_t j = 0; j < H; j++) {
            int64_t k = b * H + j;
            NN_T i = ar[j], f = ar[H + j], g = ar[2 * H + j], o = ar[3 * H + j];
            NN_T tc = NN_TANH(c[k]);
            NN_T gh = dh != NULL ? dh[k] : 0;
            NN_T gc = (dc != NULL ? dc[k] : 0) + gh * o * (1 - tc * tc);
            if (dr != NULL) {
                dr[j] = gc * g * i * (1 - i);
                dr[H + j] = gc * c_prev[k] * f * (1 - f);
                dr[2 * H + j] = gc * i * (1 - g * g);
                dr[3 * H + j] = gh * tc * o * (1 - o);
            }
            if (dc_prev != NULL)
                dc_prev[k] = gc * f;
        }
    }
}

/* xg, hg, act [B, 3H]; h_prev, h [B, H] */
void NN_S(fw__nn_gru_gates_fwd)(NN_T *h, NN_T *act, const NN_T *xg, const NN_T *hg,
                                const NN_T *h_prev, int64_t B, int64_t H)
{
    for (int64_t b = 0; b < B; b++) {
        const NN_T *xr = xg + b * 3 * H, *hr = hg + b * 3 * H;
        NN_T *ar = act + b * 3 * H;
        for (int64_t j = 0; j < H; j++) {
            NN_T r = NN_S(sig)(xr[j] + hr[j]);
            NN_T z = NN_S(sig)(xr[H + j] + hr[H + j]);
            NN_T cc = NN_TANH(xr[2 * H + j] + r * hr[2 * H + j]);
            ar[j] = r;
            ar[H + j] = z;
            ar[2 * H + j] = cc;
            h[b * H + j] = z * h_prev[b * H + j] + (1 - z) * cc;
        }
    }
}

/* dh [B, H] -> dxg, dhg [B, 3H], dh_prev [B, H] (the direct path only) */
void NN_S(fw__nn_gru_gates_bwd)(NN_T *dxg, NN_T *dhg, NN_T *dh_prev, const NN_T *act,
                                const NN_T *hg, const NN_T *h_prev, const NN_T *dh, int64_t B,
                                int64_t H)
{
    for (int64_t b = 0; b < B; b++) {
        const NN_T *ar = act + b * 3 * H, *hr = hg + b * 3 * H;
        for (int64_t j = 0; j < H; j++) {
            int64_t k = b * H + j;
            NN_T r = ar[j], z = ar[H + j], cc = ar[2 * H + j], g = dh[k];
            NN_T dpc = g * (1 - z) * (1 - cc * cc);
            NN_T dpz = g * (h_prev[k] - cc) * z * (1 - z);
            NN_T dpr = dpc * hr[2 * H + j] * r * (1 - r);
            if (dxg != NULL) {
                dxg[b * 3 * H + j] = dpr;
                dxg[b * 3 * H + H + j] = dpz;
                dxg[b * 3 * H + 2 * H + j] = dpc;
            }
            if (dhg != NULL) {
                dhg[b * 3 * H + j] = dpr;
                dhg[b * 3 * H + H + j] = dpz;
                dhg[b * 3 * H + 2 * H + j] = dpc * r;
            }
            if (dh_prev != NULL)
                dh_prev[k] = g * z;
        }
    }
}

#endif
