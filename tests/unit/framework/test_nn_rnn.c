/*
 * test_nn_rnn.c - LSTM and GRU cells with Paddle's gate order and formulas:
 * forward against float64 loops, backward against finite differences, the
 * sequence helpers against looping the cells, error paths.
 */
#include "test_nn_util.h"

static double sig(double v)
{
    return 1 / (1 + exp(-v));
}

/* pre [B, G*H] = x W_ih^T + b_ih (+ h W_hh^T + b_hh when hh) */
static void affine_ref(double *out, const double *x, const double *w, const double *b,
                       int64_t B, int64_t I, int64_t GH)
{
    for (int64_t n = 0; n < B; n++)
        for (int64_t j = 0; j < GH; j++) {
            double s = b ? b[j] : 0;
            for (int64_t k = 0; k < I; k++)
                s += x[n * I + k] * w[j * I + k];
            out[n * GH + j] = s;
        }
}

typedef struct cell_t {
    int64_t B, I, H;
    fw_tensor *x, *h, *c, *wih, *whh, *bih, *bhh;
} cell_t;

static cell_t cell_new(int gates, int64_t B, int64_t I, int64_t H, uint64_t seed, bool grad)
{
    cell_t t = {B, I, H, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    int64_t xs[2] = {B, I}, hs[2] = {B, H}, wih[2] = {gates * H, I}, whh[2] = {gates * H, H};
    int64_t bs[1] = {gates * H};
    t.x = nn_rand(FW_FLOAT64, xs, 2, seed, grad);
    t.h = nn_rand(FW_FLOAT64, hs, 2, seed + 1, grad);
    t.c = nn_rand(FW_FLOAT64, hs, 2, seed + 2, grad);
    t.wih = nn_rand(FW_FLOAT64, wih, 2, seed + 3, grad);
    t.whh = nn_rand(FW_FLOAT64, whh, 2, seed + 4, grad);
    t.bih = nn_rand(FW_FLOAT64, bs, 1, seed + 5, grad);
    t.bhh = nn_rand(FW_FLOAT64, bs, 1, seed + 6, grad);
    return t;
}

static void cell_free(cell_t *t)
{
    fw_tensor *ts[] = {t->x, t->h, t->c, t->wih, t->whh, t->bih, t->bhh};
    nn_unref_all(ts, 7);
}

START_TEST(lstm_cell_matches_paddle_formulas)
{
    uint64_t st = 12;
    for (int trial = 0; trial < 5; trial++) {
        int64_t B = nn_randint(&st, 1, 3), I = nn_randint(&st, 1, 4), H = nn_randint(&st, 1, 4);
        cell_t t = cell_new(4, B, I, H, 10 * trial, false);
        double *x = fw_test_doubles(t.x, NULL), *h = fw_test_doubles(t.h, NULL);
        double *c = fw_test_doubles(t.c, NULL), *wih = fw_test_doubles(t.wih, NULL);
        double *whh = fw_test_doubles(t.whh, NULL), *bih = fw_test_doubles(t.bih, NULL);
        double *bhh = fw_test_doubles(t.bhh, NULL);
        double *gx = malloc(sizeof(double) * (size_t)(B * 4 * H));
        double *gh = malloc(sizeof(double) * (size_t)(B * 4 * H));
        double *eh = malloc(sizeof(double) * (size_t)(B * H)), *ec = malloc(sizeof(double) * (size_t)(B * H));
        affine_ref(gx, x, wih, bih, B, I, 4 * H);
        affine_ref(gh, h, whh, bhh, B, H, 4 * H);
        for (int64_t n = 0; n < B; n++)
            for (int64_t j = 0; j < H; j++) {
                double *a = gx + n * 4 * H, *b = gh + n * 4 * H;
                double ig = sig(a[j] + b[j]), fg = sig(a[H + j] + b[H + j]);
                double gg = tanh(a[2 * H + j] + b[2 * H + j]), og = sig(a[3 * H + j] + b[3 * H + j]);
                ec[n * H + j] = fg * c[n * H + j] + ig * gg;
                eh[n * H + j] = og * tanh(ec[n * H + j]);
            }
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_dtype dt = nn_dtypes[d];
            fw_tensor *in[7] = {nn_as(t.x, dt, false), nn_as(t.h, dt, false), nn_as(t.c, dt, false),
                                nn_as(t.wih, dt, false), nn_as(t.whh, dt, false),
                                nn_as(t.bih, dt, false), nn_as(t.bhh, dt, false)};
            fw_tensor *ho = NULL, *co = NULL;
            ck_assert_msg(fw_lstm_cell(&ho, &co, in[0], in[1], in[2], in[3], in[4], in[5], in[6]) == 0,
                          "%s", fw_error_last());
            NN_EXPECT_CLOSE(ho, eh, B * H, dt);
            NN_EXPECT_CLOSE(co, ec, B * H, dt);
            nn_unref_all(in, 7);
            fw_tensor_unref(ho);
            fw_tensor_unref(co);
        }
        free(x); free(h); free(c); free(wih); free(whh); free(bih); free(bhh);
        free(gx); free(gh); free(eh); free(ec);
        cell_free(&t);
    }
}
END_TEST

START_TEST(gru_cell_matches_paddle_formulas)
{
    uint64_t st = 13;
    for (int trial = 0; trial < 5; trial++) {
        int64_t B = nn_randint(&st, 1, 3), I = nn_randint(&st, 1, 4), H = nn_randint(&st, 1, 4);
        cell_t t = cell_new(3, B, I, H, 10 * trial, false);
        double *x = fw_test_doubles(t.x, NULL), *h = fw_test_doubles(t.h, NULL);
        double *wih = fw_test_doubles(t.wih, NULL), *whh = fw_test_doubles(t.whh, NULL);
        double *bih = fw_test_doubles(t.bih, NULL), *bhh = fw_test_doubles(t.bhh, NULL);
        double *gx = malloc(sizeof(double) * (size_t)(B * 3 * H));
        double *gh = malloc(sizeof(double) * (size_t)(B * 3 * H));
        double *eh = malloc(sizeof(double) * (size_t)(B * H));
        affine_ref(gx, x, wih, bih, B, I, 3 * H);
        affine_ref(gh, h, whh, bhh, B, H, 3 * H);
        for (int64_t n = 0; n < B; n++)
            for (int64_t j = 0; j < H; j++) {
                double *a = gx + n * 3 * H, *b = gh + n * 3 * H;
                double r = sig(a[j] + b[j]), z = sig(a[H + j] + b[H + j]);
                double cc = tanh(a[2 * H + j] + r * b[2 * H + j]);
                eh[n * H + j] = z * h[n * H + j] + (1 - z) * cc;
            }
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_dtype dt = nn_dtypes[d];
            fw_tensor *in[6] = {nn_as(t.x, dt, false), nn_as(t.h, dt, false), nn_as(t.wih, dt, false),
                                nn_as(t.whh, dt, false), nn_as(t.bih, dt, false),
                                nn_as(t.bhh, dt, false)};
            fw_tensor *ho = NULL;
            ck_assert_msg(fw_gru_cell(&ho, in[0], in[1], in[2], in[3], in[4], in[5]) == 0, "%s",
                          fw_error_last());
            NN_EXPECT_CLOSE(ho, eh, B * H, dt);
            nn_unref_all(in, 6);
            fw_tensor_unref(ho);
        }
        free(x); free(h); free(wih); free(whh); free(bih); free(bhh);
        free(gx); free(gh); free(eh);
        cell_free(&t);
    }
}
END_TEST

/* out = h + 2*c so that both outputs of the LSTM cell carry gradient */
static int lstm_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    fw_tensor *h = NULL, *c = NULL, *c2 = NULL;
    int err;
    (void)ctx;
    if ((err = fw_lstm_cell(&h, &c, in[0], in[1], in[2], in[3], in[4], in[5], in[6])) == 0 &&
        (err = fw_mul_scalar(&c2, c, 2)) == 0)
        err = fw_add(out, h, c2);
    fw_tensor_unref(h);
    fw_tensor_unref(c);
    fw_tensor_unref(c2);
    return err;
}

static int gru_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    (void)ctx;
    return fw_gru_cell(out, in[0], in[1], in[2], in[3], in[4], in[5]);
}

START_TEST(rnn_cells_backward_match_finite_differences)
{
    cell_t t = cell_new(4, 2, 3, 3, 1, true);
    fw_tensor *lin[7] = {t.x, t.h, t.c, t.wih, t.whh, t.bih, t.bhh};
    NN_GRADCHECK(lstm_fn, NULL, 7, lin);
    cell_free(&t);
    t = cell_new(3, 3, 2, 3, 2, true);
    fw_tensor *gin[6] = {t.x, t.h, t.wih, t.whh, t.bih, t.bhh};
    NN_GRADCHECK(gru_fn, NULL, 6, gin);
    cell_free(&t);
}
END_TEST

START_TEST(rnn_cells_default_zero_state)
{
    cell_t t = cell_new(4, 2, 3, 2, 5, false);
    fw_tensor *z = NULL, *h1 = NULL, *c1 = NULL, *h2 = NULL, *c2 = NULL;
    int64_t hs[2] = {2, 2};
    ck_assert_int_eq(fw_zeros(&z, FW_FLOAT64, hs, 2), 0);
    ck_assert_int_eq(fw_lstm_cell(&h1, &c1, t.x, NULL, NULL, t.wih, t.whh, t.bih, t.bhh), 0);
    ck_assert_int_eq(fw_lstm_cell(&h2, &c2, t.x, z, z, t.wih, t.whh, t.bih, t.bhh), 0);
    double *e = fw_test_doubles(h2, NULL);
    ck_assert(fw_expect_close(h1, e, 4, 0, 0));
    free(e);
    fw_tensor *ts[] = {z, h1, c1, h2, c2};
    nn_unref_all(ts, 5);
    cell_free(&t);
}
END_TEST

typedef struct seq_ctx {
    int lstm, time_major;
} seq_ctx;

static int seq_fn(fw_tensor **out, fw_tensor *const *in, void *vctx)
{
    seq_ctx *c = vctx;
    fw_tensor *y = NULL, *h = NULL, *cc = NULL, *s = NULL, *s2 = NULL;
    int err;
    if (c->lstm)
        err = fw_lstm_sequence(&y, &h, &cc, in[0], in[1], in[2], in[3], in[4], in[5], in[6],
                               c->time_major);
    else
        err = fw_gru_sequence(&y, &h, in[0], in[1], in[3], in[4], in[5], in[6], c->time_major);
    /* y, h (and c) all reach the loss */
    if (err == 0 && (err = fw_sum(&s, y, NULL, 0, false)) == 0 &&
        (err = fw_add(&s2, s, h)) == 0) {
        if (cc != NULL)
            err = fw_add(out, s2, cc);
        else
            *out = fw_tensor_ref(s2);
    }
    fw_tensor *ts[] = {y, h, cc, s, s2};
    nn_unref_all(ts, 5);
    return err;
}

START_TEST(rnn_sequences_match_looped_cells_and_gradients)
{
    for (int lstm = 0; lstm < 2; lstm++) {
        for (int tm = 0; tm < 2; tm++) {
            int64_t B = 2, T = 3, I = 2, H = 2, G = lstm ? 4 : 3;
            int64_t xs[3] = {tm ? T : B, tm ? B : T, I}, hs[2] = {B, H};
            int64_t wih[2] = {G * H, I}, whh[2] = {G * H, H}, bs[1] = {G * H};
            fw_tensor *in[7] = {nn_rand(FW_FLOAT64, xs, 3, 1, true), nn_rand(FW_FLOAT64, hs, 2, 2, true),
                                nn_rand(FW_FLOAT64, hs, 2, 3, true), nn_rand(FW_FLOAT64, wih, 2, 4, true),
                                nn_rand(FW_FLOAT64, whh, 2, 5, true), nn_rand(FW_FLOAT64, bs, 1, 6, true),
                                nn_rand(FW_FLOAT64, bs, 1, 7, true)};
            fw_tensor *y = NULL, *h = NULL, *c = NULL;
            if (lstm)
                ck_assert_int_eq(fw_lstm_sequence(&y, &h, &c, in[0], in[1], in[2], in[3], in[4],
                                                  in[5], in[6], tm), 0);
            else
                ck_assert_int_eq(fw_gru_sequence(&y, &h, in[0], in[1], in[3], in[4], in[5], in[6],
                                                 tm), 0);
            int64_t ys[3] = {xs[0], xs[1], H};
            ck_assert(fw_expect_shape(y, ys, 3));
            /* loop the cells by hand and compare every step */
            fw_tensor *hc = fw_tensor_ref(in[1]), *cc = fw_tensor_ref(in[2]);
            double *yv = fw_test_doubles(y, NULL);
            for (int64_t t = 0; t < T; t++) {
                fw_tensor *xt = NULL, *hn = NULL, *cn = NULL;
                ck_assert_int_eq(fw_select(&xt, in[0], tm ? 0 : 1, t), 0);
                if (lstm)
                    ck_assert_int_eq(fw_lstm_cell(&hn, &cn, xt, hc, cc, in[3], in[4], in[5], in[6]), 0);
                else
                    ck_assert_int_eq(fw_gru_cell(&hn, xt, hc, in[3], in[4], in[5], in[6]), 0);
                double *hv = fw_test_doubles(hn, NULL);
                for (int64_t b = 0; b < B; b++)
                    for (int64_t j = 0; j < H; j++) {
                        int64_t at = (tm ? t * B + b : b * T + t) * H + j;
                        ck_assert_double_eq_tol(yv[at], hv[b * H + j], 1e-14);
                    }
                free(hv);
                fw_tensor_unref(xt);
                fw_tensor_unref(hc);
                fw_tensor_unref(cc);
                hc = hn;
                cc = cn;
            }
            double *hl = fw_test_doubles(hc, NULL);
            ck_assert(fw_expect_close(h, hl, B * H, 0, 0));
            free(hl);
            free(yv);
            seq_ctx ctx = {lstm, tm};
            if (!lstm)
                fw_tensor_set_stop_gradient(in[2], true); /* the GRU has no cell state */
            NN_GRADCHECK(seq_fn, &ctx, 7, in);
            fw_tensor *ts[] = {y, h, c, hc, cc};
            nn_unref_all(ts, 5);
            nn_unref_all(in, 7);
        }
    }
}
END_TEST

START_TEST(rnn_cells_reject_bad_shapes)
{
    cell_t t = cell_new(4, 2, 3, 2, 5, false);
    int64_t hs[2] = {3, 2}, xs[1] = {3};
    fw_tensor *hb = nn_rand(FW_FLOAT64, hs, 2, 1, false), *x1 = nn_rand(FW_FLOAT64, xs, 1, 1, false);
    fw_tensor *h = NULL, *c = NULL;
    NN_EXPECT_ERR(fw_lstm_cell(&h, &c, t.x, hb, NULL, t.wih, t.whh, NULL, NULL), FW_ESHAPE,
                  "h_prev must be [2, 2], got [3, 2]");
    NN_EXPECT_ERR(fw_lstm_cell(&h, &c, x1, NULL, NULL, t.wih, t.whh, NULL, NULL), FW_ESHAPE,
                  "x must be 2-D [batch, input_size]");
    NN_EXPECT_ERR(fw_gru_cell(&h, t.x, NULL, t.wih, t.whh, NULL, NULL), FW_ESHAPE,
                  "weight_hh must be [3*hidden, hidden]");
    NN_EXPECT_ERR(fw_lstm_cell(&h, &c, t.x, NULL, NULL, t.whh, t.whh, NULL, NULL), FW_ESHAPE,
                  "weight_ih must be [8, 3]");
    ck_assert_ptr_null(h);
    ck_assert_ptr_null(c);
    fw_tensor_unref(hb);
    fw_tensor_unref(x1);
    cell_free(&t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nn_rnn");
    TCase *tc = tcase_create("rnn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lstm_cell_matches_paddle_formulas);
    tcase_add_test(tc, gru_cell_matches_paddle_formulas);
    tcase_add_test(tc, rnn_cells_backward_match_finite_differences);
    tcase_add_test(tc, rnn_cells_default_zero_state);
    tcase_add_test(tc, rnn_sequences_match_looped_cells_and_gradients);
    tcase_add_test(tc, rnn_cells_reject_bad_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
