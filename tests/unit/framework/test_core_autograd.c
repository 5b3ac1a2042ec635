/* Autograd semantics of the framework core: accumulation, stop_gradient,
 * no-grad mode, retain_graph, non-scalar backward, shared inputs. */
#include "gradcheck.h"

#include "fw_op.h"

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

/* loss = sum(x * x) */
static fw_tensor *sum_sq(fw_tensor *x)
{
    fw_tensor *y = NULL, *l = NULL;
    ck_assert_int_eq(fw_mul(&y, x, x), 0);
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    fw_tensor_unref(y);
    return l;
}

START_TEST(grads_accumulate_over_two_backward_calls)
{
    double v[3] = {1, -2, 3};
    fw_tensor *x = vec(v, 3, true);
    for (int round = 1; round <= 2; round++) {
        fw_tensor *l = sum_sq(x);
        ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
        fw_tensor_unref(l);
        double want[3] = {2 * v[0] * round, 2 * v[1] * round, 2 * v[2] * round};
        ck_assert_msg(fw_expect_close(fw_tensor_grad(x), want, 3, 1e-12, 0), "%s", fw_error_last());
    }
    fw_tensor_clear_grad(x, true);                 /* zeroed in place */
    double zero[3] = {0, 0, 0};
    ck_assert(fw_expect_close(fw_tensor_grad(x), zero, 3, 0, 0));
    fw_tensor_clear_grad(x, false);
    ck_assert_ptr_null(fw_tensor_grad(x));
    fw_tensor_unref(x);
}
END_TEST

START_TEST(second_backward_fails_unless_graph_retained)
{
    double v[2] = {1, 2};
    fw_tensor *x = vec(v, 2, true);
    fw_tensor *l = sum_sq(x);

    ck_assert_int_eq(fw_tensor_backward(l, NULL, true), 0);   /* keep the graph */
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);  /* runs, then frees */
    double want[2] = {4, 8};
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 2, 1e-12, 0));
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), FW_EGRAD);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "retain_graph"));
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "already freed"));
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 2, 1e-12, 0));  /* unchanged */
    fw_tensor_unref(l);

    /* a graph whose nodes saved nothing (add, sum) can run again */
    fw_tensor *a = NULL, *s = NULL;
    fw_tensor_clear_grad(x, false);
    ck_assert_int_eq(fw_add(&a, x, x), 0);
    ck_assert_int_eq(fw_sum(&s, a, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(s, NULL, false), 0);
    ck_assert_int_eq(fw_tensor_backward(s, NULL, false), 0);
    double twice[2] = {4, 4};
    ck_assert(fw_expect_close(fw_tensor_grad(x), twice, 2, 0, 0));
    fw_tensor_unref(a);
    fw_tensor_unref(s);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(stop_gradient_inputs_get_no_grad)
{
    double a[2] = {1, 2}, b[2] = {3, 4};
    fw_tensor *x = vec(a, 2, false), *w = vec(b, 2, true), *y = NULL, *l = NULL;

    ck_assert(fw_tensor_stop_gradient(x));          /* data tensors default to no grad */
    ck_assert(!fw_tensor_stop_gradient(w));
    ck_assert_int_eq(fw_mul(&y, x, w), 0);
    ck_assert(!fw_tensor_stop_gradient(y));
    ck_assert(!fw_tensor_is_leaf(y));
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    ck_assert_ptr_null(fw_tensor_grad(x));
    ck_assert(fw_expect_close(fw_tensor_grad(w), a, 2, 1e-12, 0));
    fw_tensor_unref(y);
    fw_tensor_unref(l);

    /* an op over stop_gradient inputs only records nothing */
    ck_assert_int_eq(fw_add(&y, x, x), 0);
    ck_assert(fw_tensor_stop_gradient(y));
    ck_assert(fw_tensor_is_leaf(y));
    ck_assert_int_eq(fw_tensor_backward(y, NULL, false), FW_EGRAD);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "stop_gradient"));
    fw_tensor_unref(y);
    fw_tensor_unref(x);
    fw_tensor_unref(w);
}
END_TEST

START_TEST(no_grad_mode_records_nothing)
{
    double v[2] = {1, 2};
    fw_tensor *x = vec(v, 2, true), *y = NULL;

    ck_assert(fw_grad_enabled());
    ck_assert(fw_set_grad_enabled(false) == true);
    ck_assert(!fw_grad_enabled());
    ck_assert_int_eq(fw_exp(&y, x), 0);
    ck_assert(fw_tensor_stop_gradient(y));
    ck_assert(fw_tensor_is_leaf(y));
    ck_assert(fw_set_grad_enabled(true) == false);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_exp(&y, x), 0);
    ck_assert(!fw_tensor_stop_gradient(y));
    fw_tensor_unref(y);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(non_scalar_backward_uses_the_given_gradient)
{
    double v[3] = {0.5, 1, 2}, g[3] = {1, 10, 100};
    fw_tensor *x = vec(v, 3, true), *y = NULL, *gt = vec(g, 3, false);

    ck_assert_int_eq(fw_mul_scalar(&y, x, 3.0), 0);
    /* Paddle: a non-scalar tensor starts from a gradient of ones */
    ck_assert_int_eq(fw_tensor_backward(y, NULL, true), 0);
    double ones[3] = {3, 3, 3};
    ck_assert(fw_expect_close(fw_tensor_grad(x), ones, 3, 1e-12, 0));
    fw_tensor_clear_grad(x, false);
    ck_assert_int_eq(fw_tensor_backward(y, gt, false), 0);
    double want[3] = {3, 30, 300};
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 3, 1e-12, 0));

    /* a gradient of the wrong shape or dtype is refused */
    fw_tensor *y2 = NULL, *bad = vec(g, 2, false), *badf = NULL;
    ck_assert_int_eq(fw_mul_scalar(&y2, x, 3.0), 0);
    ck_assert_int_eq(fw_tensor_backward(y2, bad, false), FW_ESHAPE);
    ck_assert_int_eq(fw_cast(&badf, gt, FW_FLOAT32), 0);
    ck_assert_int_eq(fw_tensor_backward(y2, badf, false), FW_EDTYPE);
    fw_tensor_unref(bad);
    fw_tensor_unref(badf);
    fw_tensor_unref(y2);
    fw_tensor_unref(y);
    fw_tensor_unref(gt);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(tensor_used_twice_sums_both_paths)
{
    /* l = sum(x*x + x) -> dl/dx = 2x + 1; and a diamond through exp */
    double v[3] = {1, 2, -3};
    fw_tensor *x = vec(v, 3, true), *a = NULL, *b = NULL, *l = NULL;

    ck_assert_int_eq(fw_mul(&a, x, x), 0);
    ck_assert_int_eq(fw_add(&b, a, x), 0);
    ck_assert_int_eq(fw_sum(&l, b, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double want[3] = {3, 5, -5};
    ck_assert_msg(fw_expect_close(fw_tensor_grad(x), want, 3, 1e-12, 0), "%s", fw_error_last());
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    fw_tensor_unref(l);
    fw_tensor_clear_grad(x, false);

    fw_tensor *e = NULL, *p = NULL, *q = NULL, *r = NULL;
    ck_assert_int_eq(fw_exp(&e, x), 0);          /* e used by two branches */
    ck_assert_int_eq(fw_mul_scalar(&p, e, 2.0), 0);
    ck_assert_int_eq(fw_mul(&q, e, e), 0);
    ck_assert_int_eq(fw_add(&r, p, q), 0);
    ck_assert_int_eq(fw_sum(&l, r, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double w2[3];
    for (int i = 0; i < 3; i++)
        w2[i] = 2 * exp(v[i]) + 2 * exp(2 * v[i]);
    ck_assert_msg(fw_expect_close(fw_tensor_grad(x), w2, 3, 1e-9, 1e-12), "%s", fw_error_last());
    fw_tensor_unref(e);
    fw_tensor_unref(p);
    fw_tensor_unref(q);
    fw_tensor_unref(r);
    fw_tensor_unref(l);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(backward_on_leaf_and_detach)
{
    double v[2] = {1, 2};
    fw_tensor *x = vec(v, 2, true), *d = NULL, *y = NULL;

    /* backward on a leaf itself accumulates the given grad */
    fw_tensor *g = vec(v, 2, false);
    ck_assert_int_eq(fw_tensor_backward(x, g, false), 0);
    ck_assert(fw_expect_close(fw_tensor_grad(x), v, 2, 0, 0));
    fw_tensor_clear_grad(x, false);

    ck_assert_int_eq(fw_tensor_detach(&d, x), 0);
    ck_assert(fw_tensor_stop_gradient(d));
    ck_assert(fw_tensor_is_leaf(d));
    ck_assert_ptr_eq(fw_tensor_data(d), fw_tensor_data(x));  /* shares storage */
    ck_assert_int_eq(fw_exp(&y, d), 0);
    ck_assert(fw_tensor_stop_gradient(y));
    fw_tensor_unref(y);
    fw_tensor_unref(d);
    fw_tensor_unref(g);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(deep_chain_backward_and_free_do_not_recurse)
{
    double v[1] = {0.5};
    fw_tensor *x = vec(v, 1, true), *y = fw_tensor_ref(x);
    const int depth = 200000;

    for (int i = 0; i < depth; i++) {
        fw_tensor *z = NULL;
        ck_assert_int_eq(fw_mul_scalar(&z, y, 1.0), 0);
        fw_tensor_unref(y);
        y = z;
    }
    ck_assert_int_eq(fw_tensor_backward(y, NULL, false), 0);
    double one = 1;
    ck_assert(fw_expect_close(fw_tensor_grad(x), &one, 1, 1e-12, 0));
    fw_tensor_unref(y);                 /* frees a 200k-node graph iteratively */
    fw_tensor_unref(x);
}
END_TEST

START_TEST(set_grad_and_stop_gradient_validate)
{
    double v[2] = {1, 2};
    int64_t n3 = 3;
    fw_tensor *x = vec(v, 2, true), *g = NULL, *i = NULL;

    ck_assert_int_eq(fw_zeros(&g, FW_FLOAT64, &n3, 1), 0);
    ck_assert_int_eq(fw_tensor_set_grad(x, g), FW_ESHAPE);
    fw_tensor_unref(g);
    ck_assert_int_eq(fw_zeros(&i, FW_INT64, &n3, 1), 0);
    /* Paddle accepts stop_gradient=false on an integer tensor; no gradient
     * flows through it: ops on it record nothing */
    ck_assert_int_eq(fw_tensor_set_stop_gradient(i, false), 0);
    ck_assert(!fw_tensor_stop_gradient(i));
    fw_tensor *i2 = NULL;
    ck_assert_int_eq(fw_mul_scalar(&i2, i, 2.0), 0);
    ck_assert(fw_tensor_is_leaf(i2));
    ck_assert(fw_tensor_stop_gradient(i2));
    fw_tensor_unref(i2);
    fw_tensor_unref(i);
    /* in-place write into a leaf that needs grad is refused while grad is on */
    fw_tensor *src = vec(v, 2, false);
    ck_assert_int_eq(fw_tensor_assign(x, src), FW_EGRAD);
    bool was = fw_set_grad_enabled(false);
    ck_assert_int_eq(fw_tensor_assign(x, src), 0);
    fw_set_grad_enabled(was);
    fw_tensor_unref(src);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(float16_graph_backpropagates_through_casts)
{
    double v[3] = {0.5, 1, 2};
    int64_t n = 3;
    fw_tensor *x = NULL, *y = NULL, *l = NULL;

    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_FLOAT16, &n, 1), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(x, false), 0);
    ck_assert_int_eq(fw_mul(&y, x, x), 0);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_FLOAT16);
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_msg(fw_tensor_backward(l, NULL, false) == 0, "%s", fw_error_last());
    ck_assert_int_eq(fw_tensor_dtype(fw_tensor_grad(x)), FW_FLOAT16);
    double want[3] = {1, 2, 4};
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 3, 1e-3, 1e-3));
    fw_tensor_unref(y);
    fw_tensor_unref(l);
    fw_tensor_unref(x);
}
END_TEST

/* A two-output op written with fw_op.h: (x * 2, x * 3) from x, with an
 * optional second input that is ignored (NULL allowed). */
static int two_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *a = NULL, *b = NULL;
    int err;
    ck_assert(!fw_node_needs_grad(n, 1));            /* the NULL input */
    ck_assert_ptr_nonnull(gout[0]);                  /* zeros when unused */
    ck_assert_ptr_nonnull(gout[1]);
    if ((err = fw_mul_scalar(&a, gout[0], 2.0)) == 0 && (err = fw_mul_scalar(&b, gout[1], 3.0)) == 0)
        err = fw_add(&gin[0], a, b);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    return err;
}

static int two_outputs(fw_tensor **y0, fw_tensor **y1, fw_tensor *x)
{
    fw_tensor *ins[2] = {x, NULL}, *outs[2];
    fw_node *node;
    bool was = fw_set_grad_enabled(false);       /* compute without recording */
    int err = fw_mul_scalar(y0, x, 2.0);
    if (err == 0)
        err = fw_mul_scalar(y1, x, 3.0);
    fw_set_grad_enabled(was);
    if (err < 0)
        return err;
    outs[0] = *y0;
    outs[1] = *y1;
    return fw_node_record(&node, "two_outputs", two_backward, 2, ins, 2, outs, 0, 0);
}

START_TEST(multi_output_node_gets_zeros_for_unused_outputs)
{
    double v[2] = {1, 2};
    fw_tensor *x = vec(v, 2, true), *y0 = NULL, *y1 = NULL, *l = NULL;

    ck_assert_int_eq(two_outputs(&y0, &y1, x), 0);
    ck_assert(!fw_tensor_stop_gradient(y0));
    ck_assert(!fw_tensor_stop_gradient(y1));
    ck_assert_int_eq(fw_sum(&l, y1, NULL, 0, false), 0);     /* only y1 used */
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double want[2] = {3, 3};
    ck_assert_msg(fw_expect_close(fw_tensor_grad(x), want, 2, 0, 0), "%s", fw_error_last());
    fw_tensor_unref(l);
    fw_tensor_clear_grad(x, false);
    /* both outputs used: contributions add up */
    fw_tensor *s = NULL;
    ck_assert_int_eq(fw_add(&s, y0, y1), 0);
    ck_assert_int_eq(fw_sum(&l, s, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double want2[2] = {5, 5};
    ck_assert(fw_expect_close(fw_tensor_grad(x), want2, 2, 0, 0));
    fw_tensor_unref(s);
    fw_tensor_unref(l);
    fw_tensor_unref(y0);
    fw_tensor_unref(y1);
    fw_tensor_unref(x);
}
END_TEST

static int bad_shape_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    int64_t one = 1;
    (void)n;
    (void)gout;
    return fw_zeros(&gin[0], FW_FLOAT64, &one, 1);   /* wrong: input has 2 elements */
}

START_TEST(backward_reports_a_gradient_of_the_wrong_shape)
{
    double v[2] = {1, 2};
    fw_tensor *x = vec(v, 2, true), *y = NULL, *l = NULL;
    fw_node *node;
    bool was = fw_set_grad_enabled(false);
    ck_assert_int_eq(fw_mul_scalar(&y, x, 1.0), 0);
    fw_set_grad_enabled(was);
    ck_assert_int_eq(fw_node_record(&node, "bad_op", bad_shape_backward, 1, &x, 1, &y, 0, 0), 0);
    ck_assert_ptr_nonnull(node);
    ck_assert_str_eq(fw_node_name(node), "bad_op");
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), FW_EINTERNAL);
    ck_assert_str_eq(fw_error_last(),
                     "backward of 'bad_op' gave a gradient of shape [1] for input 0 of shape [2]");
    ck_assert_ptr_null(fw_tensor_grad(x));
    fw_tensor_unref(y);
    fw_tensor_unref(l);
    fw_tensor_unref(x);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_core_autograd");
    TCase *tc = tcase_create("autograd");
    tcase_add_test(tc, grads_accumulate_over_two_backward_calls);
    tcase_add_test(tc, second_backward_fails_unless_graph_retained);
    tcase_add_test(tc, stop_gradient_inputs_get_no_grad);
    tcase_add_test(tc, no_grad_mode_records_nothing);
    tcase_add_test(tc, non_scalar_backward_uses_the_given_gradient);
    tcase_add_test(tc, tensor_used_twice_sums_both_paths);
    tcase_add_test(tc, backward_on_leaf_and_detach);
    tcase_add_test(tc, deep_chain_backward_and_free_do_not_recurse);
    tcase_add_test(tc, set_grad_and_stop_gradient_validate);
    tcase_add_test(tc, float16_graph_backpropagates_through_casts);
    tcase_add_test(tc, multi_output_node_gets_zeros_for_unused_outputs);
    tcase_add_test(tc, backward_reports_a_gradient_of_the_wrong_shape);
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
