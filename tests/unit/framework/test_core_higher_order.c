/* Higher-order gradients (create_graph), fw_autograd_grad, gradient hooks
 * and custom (callback) nodes of the autograd engine. */
#include "gradcheck.h"

#include "fw_op.h"
#include "fw/nn.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static fw_tensor *vec(const double *v, int64_t n, bool requires_grad)
{
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&t, v, FW_FLOAT64, &n, 1), 0);
    if (requires_grad)
        ck_assert_int_eq(fw_tensor_set_stop_gradient(t, false), 0);
    return t;
}

static fw_tensor *sum_all(fw_tensor *x)
{
    fw_tensor *l = NULL;
    ck_assert_int_eq(fw_sum(&l, x, NULL, 0, false), 0);
    return l;
}

START_TEST(second_derivative_of_a_cube_and_of_tanh)
{
    double v[3] = {0.5, -1.25, 2.0};
    fw_tensor *x = vec(v, 3, true), *c = NULL, *t = NULL, *y = NULL, *l, *g = NULL, *gs, *h = NULL;

    /* l = sum(x^3 + tanh(x)): dl/dx = 3x^2 + 1 - tanh^2,
     * d(sum dl/dx)/dx = 6x - 2 tanh (1 - tanh^2) */
    ck_assert_int_eq(fw_pow_scalar(&c, x, 3.0), 0);
    ck_assert_int_eq(fw_tanh(&t, x), 0);
    ck_assert_int_eq(fw_add(&y, c, t), 0);
    l = sum_all(y);
    ck_assert_msg(fw_autograd_grad(&g, 1, &l, NULL, 1, &x, false, true) == 0, "%s",
                  fw_error_last());
    ck_assert(!fw_tensor_stop_gradient(g));
    ck_assert_ptr_null(fw_tensor_grad(x));     /* paddle.grad accumulates nothing */
    double want1[3], want2[3];
    for (int i = 0; i < 3; i++) {
        double th = tanh(v[i]);
        want1[i] = 3 * v[i] * v[i] + 1 - th * th;
        want2[i] = 6 * v[i] - 2 * th * (1 - th * th);
    }
    ck_assert(fw_expect_close(g, want1, 3, 1e-12, 1e-12));
    gs = sum_all(g);
    ck_assert_int_eq(fw_autograd_grad(&h, 1, &gs, NULL, 1, &x, false, false), 0);
    ck_assert(fw_expect_close(h, want2, 3, 1e-12, 1e-12));
    ck_assert(fw_tensor_stop_gradient(h));
    fw_tensor_unref(h);
    fw_tensor_unref(gs);
    fw_tensor_unref(g);
    fw_tensor_unref(l);
    fw_tensor_unref(y);
    fw_tensor_unref(t);
    fw_tensor_unref(c);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(backward_with_create_graph_gives_a_differentiable_grad)
{
    double v[2] = {1.5, -0.5};
    fw_tensor *x = vec(v, 2, true), *e = NULL, *l, *gl;

    /* l = sum(exp(x)); x.grad = exp(x) with history; d sum(x.grad) = exp(x) */
    ck_assert_int_eq(fw_exp(&e, x), 0);
    l = sum_all(e);
    ck_assert_int_eq(fw_tensor_backward_ex(l, NULL, false, true), 0);
    fw_tensor *g1 = fw_tensor_ref(fw_tensor_grad(x));
    ck_assert(!fw_tensor_stop_gradient(g1));
    fw_tensor_set_grad(x, NULL);
    gl = sum_all(g1);
    ck_assert_int_eq(fw_tensor_backward(gl, NULL, false), 0);
    double want[2] = {exp(1.5), exp(-0.5)};
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 2, 1e-12, 1e-12));
    fw_tensor_unref(gl);
    fw_tensor_unref(g1);
    fw_tensor_unref(l);
    fw_tensor_unref(e);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(grad_of_an_intermediate_and_unused_inputs)
{
    double v[2] = {2, 3};
    fw_tensor *x = vec(v, 2, true), *z = vec(v, 2, true), *y = NULL, *l = NULL, *l2, *g[3];

    ck_assert_int_eq(fw_mul_scalar(&y, x, 4.0), 0);      /* y = 4x */
    ck_assert_int_eq(fw_mul(&l, y, y), 0);               /* l = y^2 */
    l2 = sum_all(l);
    fw_tensor *ins[3] = {y, x, z};
    ck_assert_int_eq(fw_autograd_grad(g, 1, &l2, NULL, 3, ins, false, false), 0);
    double dy[2] = {16, 24}, dx[2] = {64, 96};
    ck_assert(fw_expect_close(g[0], dy, 2, 1e-12, 0));
    ck_assert(fw_expect_close(g[1], dx, 2, 1e-12, 0));
    ck_assert_ptr_null(g[2]);                            /* z is not used */
    for (int i = 0; i < 2; i++)
        fw_tensor_unref(g[i]);
    fw_tensor_unref(l2);
    fw_tensor_unref(l);
    fw_tensor_unref(y);
    fw_tensor_unref(z);
    fw_tensor_unref(x);
}
END_TEST

static int freed;
static void free_ctx(void *ctx) { (void)ctx; freed++; }

static int double_it(void *ctx, fw_tensor *g, fw_tensor **r)
{
    (void)ctx;
    return fw_mul_scalar(r, g, 2.0);
}

START_TEST(hooks_replace_the_gradient)
{
    double v[2] = {1, 2};
    fw_tensor *x = vec(v, 2, true), *y = NULL, *z = NULL, *l;

    freed = 0;
    ck_assert_int_eq(fw_mul_scalar(&y, x, 3.0), 0);
    ck_assert_int_eq(fw_tensor_register_hook(y, double_it, NULL, free_ctx), 0);   /* node */
    ck_assert_int_eq(fw_tensor_register_hook(x, double_it, NULL, free_ctx), 0);   /* leaf */
    ck_assert_int_eq(fw_mul(&z, y, y), 0);
    l = sum_all(z);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    /* dl/dy = 2y = 6x, doubled -> 12x; times 3 -> 36x; doubled at the leaf */
    double want[2] = {72, 144};
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 2, 1e-12, 0));
    fw_tensor_unref(l);
    fw_tensor_unref(z);
    fw_tensor_unref(y);
    ck_assert_int_eq(freed, 1);          /* the node's hook went with the graph */
    fw_tensor_unref(x);
    ck_assert_int_eq(freed, 2);
}
END_TEST

/* custom node: y = x (identity forward), backward multiplies by ctx */
static int scale_bw(void *ctx, int n_out, fw_tensor *const *gout, int n_in, fw_tensor **gin)
{
    ck_assert_int_eq(n_out, 1);
    ck_assert_int_eq(n_in, 1);
    return fw_mul_scalar(&gin[0], gout[0], *(double *)ctx);
}

START_TEST(custom_node_runs_its_callback)
{
    double v[2] = {1, 2}, k = 5;
    fw_tensor *x = vec(v, 2, true), *y = NULL, *l;

    freed = 0;
    ck_assert_int_eq(fw_tensor_detach(&y, x), 0);
    ck_assert_int_eq(fw_custom_node(1, &x, 1, &y, scale_bw, &k, free_ctx), 1);
    ck_assert(!fw_tensor_is_leaf(y));
    l = sum_all(y);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double want[2] = {5, 5};
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 2, 1e-12, 0));
    fw_tensor_unref(l);
    fw_tensor_unref(y);
    ck_assert_int_eq(freed, 1);
    /* nothing needs grad: nothing recorded, the caller keeps its context */
    fw_tensor *c = vec(v, 2, false), *d = NULL;
    ck_assert_int_eq(fw_tensor_detach(&d, c), 0);
    ck_assert_int_eq(fw_custom_node(1, &c, 1, &d, scale_bw, &k, free_ctx), 0);
    ck_assert(fw_tensor_is_leaf(d));
    fw_tensor_unref(d);
    fw_tensor_unref(c);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(double_backward_through_softmax_and_mse)
{
    /* gradcheck-style: the gradient of sum(grad) through softmax and
     * mse_loss against central differences of the first gradient */
    double v[4] = {0.1, -0.4, 0.9, 0.3}, lab[4] = {0.2, 0.1, 0.5, -0.3};
    int64_t shape[2] = {2, 2};
    fw_tensor *x = NULL, *yl = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_FLOAT64, shape, 2), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&yl, lab, FW_FLOAT64, shape, 2), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(x, false), 0);
    double first[4], second[4], num[4];
    for (int pass = -1; pass < 8; pass++) {
        /* pass -1: analytic second derivative; 0..7: +-eps per element */
        double w[4];
        memcpy(w, v, sizeof w);
        if (pass >= 0)
            w[pass / 2] += (pass % 2 ? -1e-6 : 1e-6);
        fw_tensor *xx = NULL, *s = NULL, *l = NULL, *g = NULL;
        ck_assert_int_eq(fw_tensor_from_doubles(&xx, w, FW_FLOAT64, shape, 2), 0);
        ck_assert_int_eq(fw_tensor_set_stop_gradient(xx, false), 0);
        ck_assert_int_eq(fw_softmax(&s, xx, 1), 0);
        ck_assert_int_eq(fw_mse_loss(&l, s, yl, FW_REDUCTION_SUM), 0);
        ck_assert_int_eq(fw_autograd_grad(&g, 1, &l, NULL, 1, &xx, false, true), 0);
        if (pass < 0) {
            fw_tensor *gs = sum_all(g), *h = NULL;
            memcpy(first, fw_tensor_data(g), sizeof first);
            ck_assert_int_eq(fw_autograd_grad(&h, 1, &gs, NULL, 1, &xx, false, false), 0);
            memcpy(second, fw_tensor_data(h), sizeof second);
            fw_tensor_unref(h);
            fw_tensor_unref(gs);
        } else {
            const double *d = fw_tensor_data(g);
            double tot = d[0] + d[1] + d[2] + d[3];
            if (pass % 2 == 0)
                num[pass / 2] = tot;
            else
                num[pass / 2] = (num[pass / 2] - tot) / 2e-6;
        }
        fw_tensor_unref(g);
        fw_tensor_unref(l);
        fw_tensor_unref(s);
        fw_tensor_unref(xx);
    }
    (void)first;
    for (int i = 0; i < 4; i++)
        ck_assert_msg(fabs(second[i] - num[i]) < 1e-6, "d2[%d] = %g, numeric %g", i, second[i],
                      num[i]);
    fw_tensor_unref(yl);
    fw_tensor_unref(x);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("core_higher_order");
    TCase *tc = tcase_create("higher_order");
    tcase_add_test(tc, second_derivative_of_a_cube_and_of_tanh);
    tcase_add_test(tc, backward_with_create_graph_gives_a_differentiable_grad);
    tcase_add_test(tc, grad_of_an_intermediate_and_unused_inputs);
    tcase_add_test(tc, hooks_replace_the_gradient);
    tcase_add_test(tc, custom_node_runs_its_callback);
    tcase_add_test(tc, double_backward_through_softmax_and_mse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
