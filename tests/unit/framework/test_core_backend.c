/* The device backend table: a second device registered at run time (a
 * stand-in for CUDA backed by host memory and the CPU kernels) works with
 * the unchanged core - creation, transfer, ops, autograd across devices,
 * the caching allocator - and mixing devices is an error. */
#include "gradcheck.h"

#include "fw_alloc.h"
#include "fw_backend.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static int fake_allocs;

static void *fake_alloc(size_t n)
{
    void *p = NULL;
    fake_allocs++;
    return posix_memalign(&p, 64, n ? n : 64) == 0 ? p : NULL;
}

static void fake_free(void *p, size_t n) { (void)n; free(p); }

static int fake_copy(void *dst, fw_device dd, const void *src, fw_device sd, size_t n)
{
    (void)dd;
    (void)sd;
    memmove(dst, src, n);
    return 0;
}

static fw_backend fake;

static void register_fake(void)
{
    fake = *fw__cpu_backend();         /* the CPU kernels work on host memory */
    fake.name = "fake-cuda";
    fake.device = FW_CUDA;
    fake.host_accessible = false;      /* storage headers live apart from data */
    fake.alloc = fake_alloc;
    fake.free = fake_free;
    fake.copy = fake_copy;
    ck_assert_int_eq(fw_backend_register(&fake), 0);
}

START_TEST(a_registered_device_runs_ops_and_autograd_without_core_changes)
{
    double v[6] = {1, 2, 3, 4, 5, 6};
    int64_t s[2] = {2, 3};
    fw_tensor *x = NULL, *g = NULL, *y = NULL, *z = NULL, *m = NULL, *l = NULL, *back = NULL;

    register_fake();
    ck_assert(fw_device_available(FW_CUDA));
    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_FLOAT64, s, 2), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(x, false), 0);
    ck_assert_int_eq(fw_tensor_to(&g, x, FW_CUDA), 0);
    ck_assert_int_eq(fw_tensor_device(g), FW_CUDA);
    ck_assert_ptr_null(fw_tensor_data(g));          /* not host-addressable */
    ck_assert_int_gt(fake_allocs, 0);

    ck_assert_int_eq(fw_mul(&y, g, g), 0);           /* y = x^2 on the device */
    ck_assert_int_eq(fw_tensor_device(y), FW_CUDA);
    int perm[2] = {1, 0};
    ck_assert_int_eq(fw_transpose(&z, g, perm, 2), 0);
    ck_assert_int_eq(fw_matmul(&m, y, z, false, false), 0);  /* [2,3] @ [3,2] */
    ck_assert_int_eq(fw_sum(&l, m, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_device(l), FW_CUDA);
    ck_assert_int_eq(fw_tensor_to(&back, l, FW_CPU), 0);
    /* sum over i,j of sum_k x_ik^2 x_jk */
    double want = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++)
                want += v[i * 3 + k] * v[i * 3 + k] * v[j * 3 + k];
    ck_assert_msg(fw_expect_close(back, &want, 1, 1e-9, 0), "%s", fw_error_last());

    /* backward crosses the device boundary: the leaf's grad is on the CPU */
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    ck_assert_ptr_nonnull(fw_tensor_grad(x));
    ck_assert_int_eq(fw_tensor_device(fw_tensor_grad(x)), FW_CPU);
    double gw[6];
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 3; k++) {
            /* d/dx_ak: 2 x_ak * sum_j x_jk + sum_i x_ik^2 */
            double sj = 0, si = 0;
            for (int j = 0; j < 2; j++) {
                sj += v[j * 3 + k];
                si += v[j * 3 + k] * v[j * 3 + k];
            }
            gw[a * 3 + k] = 2 * v[a * 3 + k] * sj + si;
        }
    ck_assert_msg(fw_expect_close(fw_tensor_grad(x), gw, 6, 1e-9, 1e-12), "%s", fw_error_last());

    /* mixing devices is refused */
    fw_tensor *bad = NULL;
    ck_assert_int_eq(fw_add(&bad, x, g), FW_EDEVICE);
    ck_assert_str_eq(fw_error_last(), "add: inputs are on different devices (cpu and cuda)");
    /* reading a device tensor copies it through its backend */
    ck_assert_int_eq(fw_tensor_to_doubles(gw, 6, g), 0);

    fw_tensor_unref(x);
    fw_tensor_unref(g);
    fw_tensor_unref(y);
    fw_tensor_unref(z);
    fw_tensor_unref(m);
    fw_tensor_unref(l);
    fw_tensor_unref(back);
    fw_mem_stats st;
    fw_mem_stats_get(&st, FW_CUDA);
    ck_assert_uint_eq(st.bytes_in_use, 0);          /* every device block came back */
    ck_assert_uint_gt(st.bytes_cached, 0);
}
END_TEST

START_TEST(unregistered_device_is_an_error_everywhere)
{
    int64_t n = 2;
    fw_tensor *t = NULL;
    if (fw_device_available(FW_CUDA))
        return;                                      /* a real CUDA build registered one */
    ck_assert_int_eq(fw_tensor_empty_on(&t, FW_CUDA, FW_FLOAT32, &n, 1), FW_EDEVICE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "no backend for cuda"));
    ck_assert_int_eq(fw_backend_register(NULL), FW_EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_core_backend");
    TCase *tc = tcase_create("backend");
    tcase_add_test(tc, a_registered_device_runs_ops_and_autograd_without_core_changes);
    tcase_add_test(tc, unregistered_device_is_an_error_everywhere);
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
