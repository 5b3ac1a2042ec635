/* The CUDA nn kernel family (framework/cuda/nn.cu, cudnn_conv.cu) against
 * the CPU's (cpu/nn_backend.c), entry by entry: the same random inputs go
 * through both tables (fw_backend_get(FW_CPU)->nn on host arrays, the CUDA
 * table on device copies) and the outputs are compared, float32 within
 * 1e-5 relative (1e-4 where the GPU sums in another order: conv, linear,
 * norms' per-channel sums, scatters), float64 within 1e-10. Edge cases:
 * ignore_index, class weights, padding_idx, asymmetric padding, groups,
 * stride, dilation, exclusive/inclusive avg pool, NULL optional outputs.
 * Without a usable device it exits 77 ("no CUDA device: <reason>").
 * No Check fork mode: CUDA does not survive fork(). */
#include "fw_backend.h"
#include "fw_backend_nn.h"
#include "fw_int.h"

#include "fw/device.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fw_backend *gpu;
static const struct fw_nn_kernels *kc, *kg;
static const fw_dtype DTS[2] = {FW_FLOAT32, FW_FLOAT64};

/* ---- arrays: h the CPU's (host), d the GPU's (device) ------------------------------- */

typedef struct arr {
    void *h, *d;
    size_t n;        /* bytes */
} arr;

static uint64_t rs = 88172645463325252ULL;

static double urand(double lo, double hi)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return lo + (hi - lo) * ((double)(rs >> 11) / 9007199254740992.0);
}

static arr upload(const void *src, size_t n)
{
    arr a = {calloc(1, n ? n : 1), gpu->alloc(n ? n : 1), n};
    ck_assert(a.h != NULL && a.d != NULL);
    if (src != NULL)
        memcpy(a.h, src, n);
    ck_assert_msg(gpu->copy(a.d, FW_CUDA, a.h, FW_CPU, n ? n : 1) == 0, "upload: %s",
                  fw_error_last());
    return a;
}

/* n random elements of dt in [lo, hi) */
static arr rnd(fw_dtype dt, int64_t n, double lo, double hi)
{
    size_t es = fw_dtype_size(dt);
    char *p = calloc((size_t)(n ? n : 1), es);
    ck_assert(p != NULL);
    for (int64_t i = 0; i < n; i++)
        fw__store_double(p + (size_t)i * es, dt, urand(lo, hi));
    arr a = upload(p, (size_t)n * es);
    free(p);
    return a;
}

/* An output: both copies filled with garbage (outputs are overwritten). */
static arr out(fw_dtype dt, int64_t n)
{
    arr a = rnd(dt, n, 1e3, 2e3);
    return a;
}

static arr ids(const int64_t *v, int64_t n) { return upload(v, (size_t)n * sizeof(int64_t)); }

static void afree(arr *a)
{
    free(a->h);
    gpu->free(a->d, a->n ? a->n : 1);
    a->h = a->d = NULL;
}

#define H(a) ((a).h)
#define D(a) ((a).d)

/* The GPU copy of a against the CPU's: |g - c| <= tol * (1 + |c|). */
static void cmp(const char *what, fw_dtype dt, const arr *a, double tol32)
{
    size_t es = fw_dtype_size(dt);
    int64_t n = (int64_t)(a->n / es);
    double tol = dt == FW_FLOAT32 ? tol32 : 1e-10;
    char *g = malloc(a->n ? a->n : 1);
    ck_assert(g != NULL);
    ck_assert_msg(gpu->copy(g, FW_CPU, a->d, FW_CUDA, a->n ? a->n : 1) == 0, "download: %s",
                  fw_error_last());
    for (int64_t i = 0; i < n; i++) {
        double c = dt == FW_FLOAT32 ? ((float *)a->h)[i] : ((double *)a->h)[i];
        double v = dt == FW_FLOAT32 ? ((float *)g)[i] : ((double *)g)[i];
        ck_assert_msg(fabs(v - c) <= tol * (1 + fabs(c)) || (c != c && v != v),
                      "%s %s [%lld]: cuda %.9g cpu %.9g", what, fw_dtype_name(dt),
                      (long long)i, v, c);
    }
    free(g);
}

static void cmp_i64(const char *what, const arr *a)
{
    int64_t *g = malloc(a->n ? a->n : 1);
    ck_assert(g != NULL);
    ck_assert(gpu->copy(g, FW_CPU, a->d, FW_CUDA, a->n ? a->n : 1) == 0);
    ck_assert_msg(memcmp(g, a->h, a->n) == 0, "%s: indices differ", what);
    free(g);
}

#define OK(call) ck_assert_msg((call) == 0, "%s: %s", #call, fw_error_last())
/* The same call on both tables: e(k, X) with X(a) the side's pointer. */
#define BOTH(expr_c, expr_g) do { OK(expr_c); OK(expr_g); } while (0)

/* ---- softmax ------------------------------------------------------------------------- */

START_TEST(softmax_matches_cpu)
{
    static const int64_t shapes[][3] = {{3, 7, 5}, {2, 1000, 1}, {1, 1, 4}};
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        for (size_t s = 0; s < 3; s++) {
            int64_t o = shapes[s][0], C = shapes[s][1], in = shapes[s][2], n = o * C * in;
            arr x = rnd(dt, n, -8, 8), dy = rnd(dt, n, -1, 1), y = out(dt, n), ly = out(dt, n);
            arr dx = out(dt, n), ldx = out(dt, n);
            BOTH(kc->softmax_fwd(dt, H(y), H(x), o, C, in),
                 kg->softmax_fwd(dt, D(y), D(x), o, C, in));
            BOTH(kc->log_softmax_fwd(dt, H(ly), H(x), o, C, in),
                 kg->log_softmax_fwd(dt, D(ly), D(x), o, C, in));
            cmp("softmax", dt, &y, 1e-5);
            cmp("log_softmax", dt, &ly, 1e-5);
            /* backward from the CPU's forward output on both sides */
            arr yc = upload(H(y), y.n), lyc = upload(H(ly), ly.n);
            BOTH(kc->softmax_bwd(dt, H(dx), H(yc), H(dy), o, C, in),
                 kg->softmax_bwd(dt, D(dx), D(yc), D(dy), o, C, in));
            BOTH(kc->log_softmax_bwd(dt, H(ldx), H(lyc), H(dy), o, C, in),
                 kg->log_softmax_bwd(dt, D(ldx), D(lyc), D(dy), o, C, in));
            cmp("softmax backward", dt, &dx, 1e-5);
            cmp("log_softmax backward", dt, &ldx, 1e-5);
            afree(&x); afree(&dy); afree(&y); afree(&ly); afree(&dx); afree(&ldx);
            afree(&yc); afree(&lyc);
        }
    }
}
END_TEST

/* ---- linear -------------------------------------------------------------------------- */

START_TEST(linear_matches_cpu)
{
    const int64_t M = 9, K = 17, N = 6;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        arr x = rnd(dt, M * K, -1, 1), w = rnd(dt, K * N, -1, 1), b = rnd(dt, N, -1, 1);
        arr dy = rnd(dt, M * N, -1, 1), y = out(dt, M * N), y0 = out(dt, M * N);
        arr dx = out(dt, M * K), dw = out(dt, K * N), db = out(dt, N);
        BOTH(kc->linear_fwd(dt, H(y), H(x), H(w), H(b), M, K, N),
             kg->linear_fwd(dt, D(y), D(x), D(w), D(b), M, K, N));
        BOTH(kc->linear_fwd(dt, H(y0), H(x), H(w), NULL, M, K, N),
             kg->linear_fwd(dt, D(y0), D(x), D(w), NULL, M, K, N));
        BOTH(kc->linear_bwd(dt, H(dx), H(dw), H(db), H(x), H(w), H(dy), M, K, N),
             kg->linear_bwd(dt, D(dx), D(dw), D(db), D(x), D(w), D(dy), M, K, N));
        cmp("linear", dt, &y, 1e-4);
        cmp("linear no bias", dt, &y0, 1e-4);
        cmp("linear dx", dt, &dx, 1e-4);
        cmp("linear dw", dt, &dw, 1e-4);
        cmp("linear db", dt, &db, 1e-4);
        afree(&x); afree(&w); afree(&b); afree(&dy); afree(&y); afree(&y0);
        afree(&dx); afree(&dw); afree(&db);
    }
}
END_TEST

/* ---- conv2d -------------------------------------------------------------------------- */

static fw_nn_conv_geom geom(int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH,
                            int64_t KW, int64_t s, int64_t ph0, int64_t ph1, int64_t pw0,
                            int64_t pw1, int64_t dil, int64_t groups)
{
    fw_nn_conv_geom g = {.N = N, .C = C, .H = H, .W = W, .OC = OC, .KH = KH, .KW = KW,
                         .sh = s, .sw = s, .ph0 = ph0, .ph1 = ph1, .pw0 = pw0, .pw1 = pw1,
                         .dh = dil, .dw = dil, .groups = groups};
    g.OH = (H + ph0 + ph1 - dil * (KH - 1) - 1) / s + 1;
    g.OW = (W + pw0 + pw1 - dil * (KW - 1) - 1) / s + 1;
    return g;
}

START_TEST(conv2d_matches_cpu)
{
    const fw_nn_conv_geom gs[] = {
        geom(2, 4, 7, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1),   /* plain, symmetric padding */
        geom(2, 4, 9, 8, 6, 3, 2, 2, 0, 1, 1, 0, 2, 2),   /* asymmetric, stride, dilation, groups */
        geom(1, 6, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6),   /* depthwise */
        geom(3, 3, 1, 11, 5, 1, 4, 1, 0, 0, 2, 1, 1, 1),  /* 1-D as H = KH = 1 */
    };
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        for (size_t i = 0; i < sizeof(gs) / sizeof(gs[0]); i++) {
            const fw_nn_conv_geom *g = &gs[i];
            int64_t nx = g->N * g->C * g->H * g->W, nw = g->OC * (g->C / g->groups) * g->KH * g->KW;
            int64_t ny = g->N * g->OC * g->OH * g->OW;
            arr x = rnd(dt, nx, -1, 1), w = rnd(dt, nw, -1, 1), b = rnd(dt, g->OC, -1, 1);
            arr dy = rnd(dt, ny, -1, 1), y = out(dt, ny), dx = out(dt, nx), dw = out(dt, nw);
            arr db = out(dt, g->OC), dx2 = out(dt, nx);
            BOTH(kc->conv2d_fwd(dt, H(y), H(x), H(w), H(b), g),
                 kg->conv2d_fwd(dt, D(y), D(x), D(w), D(b), g));
            BOTH(kc->conv2d_bwd(dt, H(dx), H(dw), H(db), H(x), H(w), H(dy), g),
                 kg->conv2d_bwd(dt, D(dx), D(dw), D(db), D(x), D(w), D(dy), g));
            BOTH(kc->conv2d_bwd(dt, H(dx2), NULL, NULL, NULL, H(w), H(dy), g),
                 kg->conv2d_bwd(dt, D(dx2), NULL, NULL, NULL, D(w), D(dy), g));
            cmp("conv2d", dt, &y, 1e-4);
            cmp("conv2d dx", dt, &dx, 1e-4);
            cmp("conv2d dw", dt, &dw, 1e-4);
            cmp("conv2d db", dt, &db, 1e-4);
            cmp("conv2d dx alone", dt, &dx2, 1e-4);
            afree(&x); afree(&w); afree(&b); afree(&dy); afree(&y); afree(&dx); afree(&dw);
            afree(&db); afree(&dx2);
        }
    }
}
END_TEST

/* ---- pooling ------------------------------------------------------------------------- */

START_TEST(pools_match_cpu)
{
    fw_nn_pool_geom gs[] = {
        {.P = 6, .H = 8, .W = 8, .OH = 4, .OW = 4, .KH = 2, .KW = 2, .sh = 2, .sw = 2},
        {.P = 4, .H = 7, .W = 9, .OH = 4, .OW = 5, .KH = 3, .KW = 3, .sh = 2, .sw = 2,
         .ph = 1, .pw = 1, .exclusive = 1},
        {.P = 4, .H = 7, .W = 9, .OH = 4, .OW = 5, .KH = 3, .KW = 3, .sh = 2, .sw = 2,
         .ph = 1, .pw = 1, .exclusive = 0},
        {.P = 2, .H = 5, .W = 5, .OH = 3, .OW = 3, .KH = 3, .KW = 3, .sh = 1, .sw = 1},
    };
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        for (size_t i = 0; i < sizeof(gs) / sizeof(gs[0]); i++) {
            const fw_nn_pool_geom *g = &gs[i];
            int64_t nx = g->P * g->H * g->W, ny = g->P * g->OH * g->OW;
            arr x = rnd(dt, nx, -5, 5), dy = rnd(dt, ny, -1, 1), y = out(dt, ny);
            arr idx = upload(NULL, (size_t)ny * sizeof(int64_t)), dx = out(dt, nx);
            arr ay = out(dt, ny), adx = out(dt, nx);
            BOTH(kc->maxpool2d_fwd(dt, H(y), H(idx), H(x), g),
                 kg->maxpool2d_fwd(dt, D(y), D(idx), D(x), g));
            cmp("max_pool2d", dt, &y, 1e-5);
            cmp_i64("max_pool2d mask", &idx);
            BOTH(kc->maxpool2d_bwd(dt, H(dx), H(idx), H(dy), g),
                 kg->maxpool2d_bwd(dt, D(dx), D(idx), D(dy), g));
            cmp("max_pool2d backward", dt, &dx, 1e-5);
            BOTH(kc->avgpool2d_fwd(dt, H(ay), H(x), g), kg->avgpool2d_fwd(dt, D(ay), D(x), g));
            BOTH(kc->avgpool2d_bwd(dt, H(adx), H(dy), g), kg->avgpool2d_bwd(dt, D(adx), D(dy), g));
            cmp("avg_pool2d", dt, &ay, 1e-5);
            cmp("avg_pool2d backward", dt, &adx, 1e-5);
            afree(&x); afree(&dy); afree(&y); afree(&idx); afree(&dx); afree(&ay); afree(&adx);
        }
        /* adaptive: bins that overlap (7 -> 3) and that split evenly (8 -> 4) */
        arr x = rnd(dt, 3 * 7 * 8, -5, 5), dy = rnd(dt, 3 * 3 * 4, -1, 1);
        arr y = out(dt, 3 * 3 * 4), dx = out(dt, 3 * 7 * 8);
        BOTH(kc->adaptive_avgpool2d_fwd(dt, H(y), H(x), 3, 7, 8, 3, 4),
             kg->adaptive_avgpool2d_fwd(dt, D(y), D(x), 3, 7, 8, 3, 4));
        BOTH(kc->adaptive_avgpool2d_bwd(dt, H(dx), H(dy), 3, 7, 8, 3, 4),
             kg->adaptive_avgpool2d_bwd(dt, D(dx), D(dy), 3, 7, 8, 3, 4));
        cmp("adaptive_avg_pool2d", dt, &y, 1e-5);
        cmp("adaptive_avg_pool2d backward", dt, &dx, 1e-5);
        afree(&x); afree(&dy); afree(&y); afree(&dx);
    }
}
END_TEST

/* ---- batch norm, layer norm ---------------------------------------------------------- */

START_TEST(norms_match_cpu)
{
    const int64_t N = 4, C = 5, L = 37, n = N * C * L;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        arr x = rnd(dt, n, -3, 5), dy = rnd(dt, n, -1, 1), w = rnd(dt, C, 0.5, 2);
        arr b = rnd(dt, C, -1, 1), rm = rnd(dt, C, -1, 1), rv = rnd(dt, C, 0.5, 2);
        arr y = out(dt, n), sm = out(dt, C), si = out(dt, C), yi = out(dt, n), sii = out(dt, C);
        BOTH(kc->batch_norm_train_fwd(dt, H(y), H(sm), H(si), H(rm), H(rv), H(x), H(w), H(b),
                                      N, C, L, 0.9, 1e-5),
             kg->batch_norm_train_fwd(dt, D(y), D(sm), D(si), D(rm), D(rv), D(x), D(w), D(b),
                                      N, C, L, 0.9, 1e-5));
        cmp("batch_norm", dt, &y, 1e-4);
        cmp("batch_norm mean", dt, &sm, 1e-5);
        cmp("batch_norm invstd", dt, &si, 1e-5);
        cmp("batch_norm running mean", dt, &rm, 1e-5);
        cmp("batch_norm running var", dt, &rv, 1e-5);
        BOTH(kc->batch_norm_infer_fwd(dt, H(yi), H(sii), H(x), H(rm), H(rv), NULL, H(b), N, C,
                                      L, 1e-5),
             kg->batch_norm_infer_fwd(dt, D(yi), D(sii), D(x), D(rm), D(rv), NULL, D(b), N, C,
                                      L, 1e-5));
        cmp("batch_norm infer", dt, &yi, 1e-5);
        cmp("batch_norm infer invstd", dt, &sii, 1e-5);
        arr smc = upload(H(sm), sm.n), sic = upload(H(si), si.n);
        for (int training = 0; training < 2; training++) {
            arr dx = out(dt, n), dw = out(dt, C), db = out(dt, C);
            BOTH(kc->batch_norm_bwd(dt, H(dx), H(dw), H(db), H(x), H(dy), H(smc), H(sic), H(w),
                                    N, C, L, training),
                 kg->batch_norm_bwd(dt, D(dx), D(dw), D(db), D(x), D(dy), D(smc), D(sic), D(w),
                                    N, C, L, training));
            cmp("batch_norm dx", dt, &dx, 1e-4);
            cmp("batch_norm dw", dt, &dw, 1e-4);
            cmp("batch_norm db", dt, &db, 1e-4);
            afree(&dx); afree(&dw); afree(&db);
        }
        /* layer norm over D = L rows of M = N*C */
        const int64_t M = N * C, Dd = L;
        arr lw = rnd(dt, Dd, 0.5, 2), lb = rnd(dt, Dd, -1, 1), ly = out(dt, n);
        arr mu = out(dt, M), rstd = out(dt, M), ly0 = out(dt, n);
        BOTH(kc->layer_norm_fwd(dt, H(ly), H(mu), H(rstd), H(x), H(lw), H(lb), M, Dd, 1e-5),
             kg->layer_norm_fwd(dt, D(ly), D(mu), D(rstd), D(x), D(lw), D(lb), M, Dd, 1e-5));
        BOTH(kc->layer_norm_fwd(dt, H(ly0), NULL, NULL, H(x), NULL, NULL, M, Dd, 1e-5),
             kg->layer_norm_fwd(dt, D(ly0), NULL, NULL, D(x), NULL, NULL, M, Dd, 1e-5));
        cmp("layer_norm", dt, &ly, 1e-5);
        cmp("layer_norm no affine", dt, &ly0, 1e-5);
        cmp("layer_norm mean", dt, &mu, 1e-5);
        cmp("layer_norm rstd", dt, &rstd, 1e-5);
        arr muc = upload(H(mu), mu.n), rc_ = upload(H(rstd), rstd.n);
        arr ldx = out(dt, n), ldw = out(dt, Dd), ldb = out(dt, Dd);
        BOTH(kc->layer_norm_bwd(dt, H(ldx), H(ldw), H(ldb), H(x), H(dy), H(muc), H(rc_), H(lw),
                                M, Dd),
             kg->layer_norm_bwd(dt, D(ldx), D(ldw), D(ldb), D(x), D(dy), D(muc), D(rc_), D(lw),
                                M, Dd));
        cmp("layer_norm dx", dt, &ldx, 1e-4);
        cmp("layer_norm dw", dt, &ldw, 1e-4);
        cmp("layer_norm db", dt, &ldb, 1e-4);
        afree(&x); afree(&dy); afree(&w); afree(&b); afree(&rm); afree(&rv); afree(&y);
        afree(&sm); afree(&si); afree(&yi); afree(&sii); afree(&smc); afree(&sic);
        afree(&lw); afree(&lb); afree(&ly); afree(&mu); afree(&rstd); afree(&ly0);
        afree(&muc); afree(&rc_); afree(&ldx); afree(&ldw); afree(&ldb);
    }
}
END_TEST

/* ---- dropout, embedding -------------------------------------------------------------- */

/* layer norm rows longer than a block (the block-per-row kernels) */
START_TEST(long_layer_norm_rows_match_cpu)
{
    const int64_t M = 3, Dd = 700, n = M * Dd;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        arr x = rnd(dt, n, -3, 5), dy = rnd(dt, n, -1, 1), w = rnd(dt, Dd, 0.5, 2);
        arr y = out(dt, n), mu = out(dt, M), rstd = out(dt, M);
        arr dx = out(dt, n), dw = out(dt, Dd), db = out(dt, Dd);
        BOTH(kc->layer_norm_fwd(dt, H(y), H(mu), H(rstd), H(x), H(w), NULL, M, Dd, 1e-5),
             kg->layer_norm_fwd(dt, D(y), D(mu), D(rstd), D(x), D(w), NULL, M, Dd, 1e-5));
        cmp("layer_norm long", dt, &y, 1e-5);
        cmp("layer_norm long rstd", dt, &rstd, 1e-5);
        arr muc = upload(H(mu), mu.n), rc_ = upload(H(rstd), rstd.n);
        BOTH(kc->layer_norm_bwd(dt, H(dx), H(dw), NULL, H(x), H(dy), H(muc), H(rc_), H(w), M,
                                Dd),
             kg->layer_norm_bwd(dt, D(dx), D(dw), NULL, D(x), D(dy), D(muc), D(rc_), D(w), M,
                                Dd));
        cmp("layer_norm long dx", dt, &dx, 1e-4);
        cmp("layer_norm long dw", dt, &dw, 1e-4);
        afree(&x); afree(&dy); afree(&w); afree(&y); afree(&mu); afree(&rstd); afree(&dx);
        afree(&dw); afree(&db); afree(&muc); afree(&rc_);
    }
}
END_TEST

START_TEST(dropout_and_embedding_match_cpu)
{
    const int64_t n = 301, V = 11, Dd = 7, ni = 9;
    const int64_t idv[9] = {3, 0, 3, 10, 2, 3, 7, 2, 0};
    uint8_t mk[301];
    for (int64_t i = 0; i < n; i++)
        mk[i] = urand(0, 1) < 0.7;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        arr x = rnd(dt, n, -2, 2), m = upload(mk, sizeof(mk)), y = out(dt, n);
        BOTH(kc->dropout_apply(dt, H(y), H(x), H(m), n, 1 / 0.7),
             kg->dropout_apply(dt, D(y), D(x), D(m), n, 1 / 0.7));
        cmp("dropout", dt, &y, 1e-5);
        arr w = rnd(dt, V * Dd, -1, 1), id = ids(idv, ni), dy = rnd(dt, ni * Dd, -1, 1);
        for (int64_t pad = -1; pad <= 3; pad += 4) {
            arr e = out(dt, ni * Dd), dw = out(dt, V * Dd);
            BOTH(kc->embedding_fwd(dt, H(e), H(w), H(id), ni, Dd, pad),
                 kg->embedding_fwd(dt, D(e), D(w), D(id), ni, Dd, pad));
            BOTH(kc->embedding_bwd(dt, H(dw), H(dy), H(id), ni, V, Dd, pad),
                 kg->embedding_bwd(dt, D(dw), D(dy), D(id), ni, V, Dd, pad));
            cmp("embedding", dt, &e, 1e-5);
            cmp("embedding backward", dt, &dw, 1e-5);
            afree(&e); afree(&dw);
        }
        afree(&x); afree(&m); afree(&y); afree(&w); afree(&id); afree(&dy);
    }
}
END_TEST

/* ---- cross entropy, nll, pointwise losses -------------------------------------------- */

START_TEST(losses_match_cpu)
{
    const int64_t o = 4, C = 6, in = 3, n = o * C * in, ns = o * in;
    int64_t lab[12];
    for (int64_t i = 0; i < ns; i++)
        lab[i] = i % 5 == 4 ? -100 : (int64_t)(urand(0, 1) * C) % C;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        arr lg = rnd(dt, n, -4, 4), pr = rnd(dt, n, 0.05, 0.95), cw = rnd(dt, C, 0.5, 2);
        arr soft = rnd(dt, n, 0, 1), g = rnd(dt, ns, -1, 1), lb = ids(lab, ns);
        for (int us = 0; us < 2; us++) {
            for (int wi = 0; wi < 2; wi++) {
                const void *wc = wi ? H(cw) : NULL, *wg = wi ? D(cw) : NULL;
                arr x = us ? lg : pr;
                arr loss = out(dt, ns), lsm = out(dt, n), dx = out(dt, n);
                arr sl = out(dt, ns), slsm = out(dt, n), sdx = out(dt, n);
                BOTH(kc->ce_hard_fwd(dt, H(loss), H(lsm), H(x), H(lb), wc, o, C, in, -100, us),
                     kg->ce_hard_fwd(dt, D(loss), D(lsm), D(x), D(lb), wg, o, C, in, -100, us));
                cmp("cross_entropy", dt, &loss, 1e-5);
                if (us)
                    cmp("cross_entropy lsm", dt, &lsm, 1e-5);
                arr lc = upload(H(lsm), lsm.n);
                BOTH(kc->ce_hard_bwd(dt, H(dx), us ? H(lc) : NULL, H(x), H(lb), wc, H(g), o, C,
                                     in, -100, us),
                     kg->ce_hard_bwd(dt, D(dx), us ? D(lc) : NULL, D(x), D(lb), wg, D(g), o, C,
                                     in, -100, us));
                cmp("cross_entropy backward", dt, &dx, 1e-5);
                BOTH(kc->ce_soft_fwd(dt, H(sl), H(slsm), H(x), H(soft), wc, o, C, in, us),
                     kg->ce_soft_fwd(dt, D(sl), D(slsm), D(x), D(soft), wg, o, C, in, us));
                cmp("soft cross_entropy", dt, &sl, 1e-5);
                arr slc = upload(H(slsm), slsm.n);
                BOTH(kc->ce_soft_bwd(dt, H(sdx), us ? H(slc) : NULL, H(x), H(soft), wc, H(g),
                                     o, C, in, us),
                     kg->ce_soft_bwd(dt, D(sdx), us ? D(slc) : NULL, D(x), D(soft), wg, D(g),
                                     o, C, in, us));
                cmp("soft cross_entropy backward", dt, &sdx, 1e-5);
                afree(&loss); afree(&lsm); afree(&dx); afree(&sl); afree(&slsm); afree(&sdx);
                afree(&lc); afree(&slc);
            }
        }
        for (int wi = 0; wi < 2; wi++) {
            const void *wc = wi ? H(cw) : NULL, *wg = wi ? D(cw) : NULL;
            arr loss = out(dt, ns), dx = out(dt, n);
            BOTH(kc->nll_fwd(dt, H(loss), H(lg), H(lb), wc, o, C, in, -100),
                 kg->nll_fwd(dt, D(loss), D(lg), D(lb), wg, o, C, in, -100));
            BOTH(kc->nll_bwd(dt, H(dx), H(lb), wc, H(g), o, C, in, -100),
                 kg->nll_bwd(dt, D(dx), D(lb), wg, D(g), o, C, in, -100));
            cmp("nll", dt, &loss, 1e-5);
            cmp("nll backward", dt, &dx, 1e-5);
            afree(&loss); afree(&dx);
        }
        /* pointwise: x, y per kind; weights and pos_weight on and off; g per
         * element and one scalar */
        arr pw = rnd(dt, n, 0.5, 3), ew = rnd(dt, n, 0, 2), y01 = rnd(dt, n, 0, 1);
        arr gg = rnd(dt, n, -1, 1);
        for (int kind = FW_NN_LOSS_MSE; kind <= FW_NN_LOSS_BCE_LOGITS; kind++) {
            arr x = kind == FW_NN_LOSS_BCE ? pr : lg, yy = kind >= FW_NN_LOSS_BCE ? y01 : soft;
            for (int wi = 0; wi < 2; wi++) {
                const void *wc = wi ? H(ew) : NULL, *wg = wi ? D(ew) : NULL;
                const void *pc = wi && kind == FW_NN_LOSS_BCE_LOGITS ? H(pw) : NULL;
                const void *pg = wi && kind == FW_NN_LOSS_BCE_LOGITS ? D(pw) : NULL;
                arr loss = out(dt, n), dx = out(dt, n), dyo = out(dt, n);
                BOTH(kc->pointwise_loss_fwd(dt, H(loss), (fw_nn_loss_kind)kind, H(x), H(yy), wc,
                                            pc, n),
                     kg->pointwise_loss_fwd(dt, D(loss), (fw_nn_loss_kind)kind, D(x), D(yy), wg,
                                            pg, n));
                cmp("pointwise loss", dt, &loss, 1e-5);
                BOTH(kc->pointwise_loss_bwd(dt, H(dx), H(dyo), (fw_nn_loss_kind)kind, H(x),
                                            H(yy), wc, pc, H(gg), wi, n),
                     kg->pointwise_loss_bwd(dt, D(dx), D(dyo), (fw_nn_loss_kind)kind, D(x),
                                            D(yy), wg, pg, D(gg), wi, n));
                cmp("pointwise loss dx", dt, &dx, 1e-5);
                cmp("pointwise loss dy", dt, &dyo, 1e-5);
                afree(&loss); afree(&dx); afree(&dyo);
            }
        }
        afree(&lg); afree(&pr); afree(&cw); afree(&soft); afree(&g); afree(&lb);
        afree(&pw); afree(&ew); afree(&y01); afree(&gg);
    }
}
END_TEST

/* ---- recurrent cells ----------------------------------------------------------------- */

START_TEST(rnn_gates_match_cpu)
{
    const int64_t B = 3, Hh = 5;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = DTS[d];
        arr G = rnd(dt, B * 4 * Hh, -3, 3), cp = rnd(dt, B * Hh, -1, 1);
        arr h = out(dt, B * Hh), c = out(dt, B * Hh), act = out(dt, B * 4 * Hh);
        BOTH(kc->lstm_gates_fwd(dt, H(h), H(c), H(act), H(G), H(cp), B, Hh),
             kg->lstm_gates_fwd(dt, D(h), D(c), D(act), D(G), D(cp), B, Hh));
        cmp("lstm h", dt, &h, 1e-5);
        cmp("lstm c", dt, &c, 1e-5);
        cmp("lstm act", dt, &act, 1e-5);
        arr ac = upload(H(act), act.n), cc = upload(H(c), c.n);
        arr dh = rnd(dt, B * Hh, -1, 1), dc = rnd(dt, B * Hh, -1, 1);
        arr dG = out(dt, B * 4 * Hh), dcp = out(dt, B * Hh), dG2 = out(dt, B * 4 * Hh);
        BOTH(kc->lstm_gates_bwd(dt, H(dG), H(dcp), H(ac), H(cc), H(cp), H(dh), H(dc), B, Hh),
             kg->lstm_gates_bwd(dt, D(dG), D(dcp), D(ac), D(cc), D(cp), D(dh), D(dc), B, Hh));
        BOTH(kc->lstm_gates_bwd(dt, H(dG2), NULL, H(ac), H(cc), H(cp), H(dh), NULL, B, Hh),
             kg->lstm_gates_bwd(dt, D(dG2), NULL, D(ac), D(cc), D(cp), D(dh), NULL, B, Hh));
        cmp("lstm dG", dt, &dG, 1e-5);
        cmp("lstm dc_prev", dt, &dcp, 1e-5);
        cmp("lstm dG (no dc)", dt, &dG2, 1e-5);
        arr xg = rnd(dt, B * 3 * Hh, -2, 2), hg = rnd(dt, B * 3 * Hh, -2, 2);
        arr hp = rnd(dt, B * Hh, -1, 1), gh = out(dt, B * Hh), gact = out(dt, B * 3 * Hh);
        BOTH(kc->gru_gates_fwd(dt, H(gh), H(gact), H(xg), H(hg), H(hp), B, Hh),
             kg->gru_gates_fwd(dt, D(gh), D(gact), D(xg), D(hg), D(hp), B, Hh));
        cmp("gru h", dt, &gh, 1e-5);
        cmp("gru act", dt, &gact, 1e-5);
        arr gac = upload(H(gact), gact.n);
        arr dxg = out(dt, B * 3 * Hh), dhg = out(dt, B * 3 * Hh), dhp = out(dt, B * Hh);
        BOTH(kc->gru_gates_bwd(dt, H(dxg), H(dhg), H(dhp), H(gac), H(hg), H(hp), H(dh), B, Hh),
             kg->gru_gates_bwd(dt, D(dxg), D(dhg), D(dhp), D(gac), D(hg), D(hp), D(dh), B, Hh));
        cmp("gru dxg", dt, &dxg, 1e-5);
        cmp("gru dhg", dt, &dhg, 1e-5);
        cmp("gru dh_prev", dt, &dhp, 1e-5);
        afree(&G); afree(&cp); afree(&h); afree(&c); afree(&act); afree(&ac); afree(&cc);
        afree(&dh); afree(&dc); afree(&dG); afree(&dcp); afree(&dG2); afree(&xg); afree(&hg);
        afree(&hp); afree(&gh); afree(&gact); afree(&gac); afree(&dxg); afree(&dhg);
        afree(&dhp);
    }
}
END_TEST

START_TEST(other_dtypes_are_refused)
{
    arr x = rnd(FW_FLOAT32, 8, 0, 1), y = out(FW_FLOAT32, 8);
    ck_assert((kg->dtypes & (1u << FW_FLOAT16)) == 0);
    ck_assert_int_eq(kg->softmax_fwd(FW_FLOAT16, D(y), D(x), 1, 4, 1), FW_EDTYPE);
    ck_assert_int_eq(kg->dropout_apply(FW_INT32, D(y), D(x), NULL, 8, 1.0), FW_EDTYPE);
    afree(&x); afree(&y);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cuda_nn");
    TCase *tc = tcase_create("cuda_nn");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, softmax_matches_cpu);
    tcase_add_test(tc, linear_matches_cpu);
    tcase_add_test(tc, conv2d_matches_cpu);
    tcase_add_test(tc, pools_match_cpu);
    tcase_add_test(tc, norms_match_cpu);
    tcase_add_test(tc, long_layer_norm_rows_match_cpu);
    tcase_add_test(tc, dropout_and_embedding_match_cpu);
    tcase_add_test(tc, losses_match_cpu);
    tcase_add_test(tc, rnn_gates_match_cpu);
    tcase_add_test(tc, other_dtypes_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (fw_device_count(FW_CUDA) == 0) {
        printf("no CUDA device: %s\n", fw_device_unavailable_reason(FW_CUDA));
        return 77;
    }
    gpu = fw_backend_get(FW_CUDA);
    if (gpu == NULL || gpu->nn == NULL || fw_backend_get(FW_CPU) == NULL) {
        printf("no CUDA device: %s\n", fw_device_unavailable_reason(FW_CUDA));
        return 77;
    }
    kc = fw_backend_get(FW_CPU)->nn;
    kg = gpu->nn;
    SRunner *sr = srunner_create(suite());
    srunner_set_fork_status(sr, CK_NOFORK);      /* CUDA does not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
