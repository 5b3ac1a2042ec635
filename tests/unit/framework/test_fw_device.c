/* The device API (fw/device.h) on any machine: the CPU is one device; FW_CUDA
 * is compiled when the CUDA plugin was built, and without a usable GPU it
 * has no devices and a reason naming the cause (not compiled, the plugin's
 * dlopen error, no driver, no device); using it then fails with FW_EDEVICE
 * and that reason. The default device of creation functions, with a
 * stand-in device registered at run time (host memory, the CPU's kernels),
 * and ops refusing inputs on two devices. Each case runs in its own
 * process (Check's fork mode), so the plugin is loaded afresh. */
#include "gradcheck.h"

#include "fw_backend.h"
#include "fw_op.h"

#include "fw/device.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool cuda_usable(void) { return fw_device_count(FW_CUDA) > 0; }

START_TEST(cpu_is_one_device)
{
    fw_device_props pr;
    fw_device_memory mem;
    ck_assert(fw_device_compiled(FW_CPU));
    ck_assert_int_eq(fw_device_count(FW_CPU), 1);
    ck_assert_str_eq(fw_device_unavailable_reason(FW_CPU), "");
    ck_assert_int_eq(fw_device_current(FW_CPU), 0);
    ck_assert_int_eq(fw_device_set_current(FW_CPU, 0), 0);
    ck_assert_int_eq(fw_device_set_current(FW_CPU, 1), FW_EDEVICE);
    ck_assert_int_eq(fw_device_synchronize(FW_CPU, -1), 0);
    ck_assert_int_eq(fw_device_properties(FW_CPU, 0, &pr), 0);
    ck_assert_str_eq(pr.name, "cpu");
    ck_assert_int_eq(fw_device_properties(FW_CPU, 0, NULL), FW_EINVAL);
    ck_assert_int_eq(fw_device_memory_stats(FW_CPU, -1, &mem), 0);
    ck_assert_uint_le(mem.allocated, mem.reserved);
    ck_assert_int_eq(fw_device_empty_cache(FW_CPU), 0);
    ck_assert_int_eq(fw_device_reset_peak(FW_CPU, 0), 0);
    ck_assert_int_eq(fw_device_count((fw_device)7), 0);
    ck_assert_int_eq(fw_device_set_current((fw_device)7, 0), FW_EDEVICE);
}
END_TEST

START_TEST(cuda_without_a_device_says_why)
{
    int64_t n = 4;
    fw_tensor *t = NULL;
    fw_device_memory mem;
    char reason[512];

    if (cuda_usable())
        return;                                 /* a GPU machine: test_cuda_runtime covers it */
    ck_assert_int_eq(fw_device_count(FW_CUDA), 0);
    snprintf(reason, sizeof(reason), "%s", fw_device_unavailable_reason(FW_CUDA));
    ck_assert_msg(reason[0] != '\0', "no reason given");
    if (!fw_device_compiled(FW_CUDA))
        ck_assert_str_eq(reason, "not compiled with CUDA");
    else                                        /* the plugin loaded: the driver or device */
        ck_assert_msg(strstr(reason, "cudaGetDeviceCount") || strstr(reason, ".so"),
                      "reason names no cause: %s", reason);
    ck_assert_int_eq(fw_device_set_current(FW_CUDA, 0), FW_EDEVICE);
    ck_assert_int_eq(fw_device_synchronize(FW_CUDA, -1), FW_EDEVICE);
    ck_assert_int_eq(fw_device_memory_stats(FW_CUDA, -1, &mem), FW_EDEVICE);
    ck_assert_int_eq(fw_device_empty_cache(FW_CUDA), FW_EDEVICE);
    ck_assert_int_eq(fw_device_set_default(FW_CUDA), FW_EDEVICE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), reason));
    ck_assert_int_eq(fw_device_default(), FW_CPU);
    ck_assert_int_eq(fw_tensor_empty_on(&t, FW_CUDA, FW_FLOAT32, &n, 1), FW_EDEVICE);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(fw_error_last(), reason) != NULL, "'%s' lacks the reason '%s'",
                  fw_error_last(), reason);
    ck_assert(!fw_device_available(FW_CUDA));
}
END_TEST

START_TEST(plugin_path_from_the_environment)
{
    setenv("EDDY_FW_CUDA_PLUGIN", "/nonexistent/libeddy_fw_cuda.so", 1);
    ck_assert_int_eq(fw_device_count(FW_CUDA), 0);
    const char *r = fw_device_unavailable_reason(FW_CUDA);
    if (!fw_device_compiled(FW_CUDA))
        ck_assert_str_eq(r, "not compiled with CUDA");
    else                                        /* dlopen's own message */
        ck_assert_msg(strstr(r, "/nonexistent/libeddy_fw_cuda.so") &&
                      strstr(r, "No such file"), "reason: %s", r);
}
END_TEST

START_TEST(plugin_that_is_not_a_library)
{
    setenv("EDDY_FW_CUDA_PLUGIN", "/proc/self/status", 1);
    ck_assert_int_eq(fw_device_count(FW_CUDA), 0);
    if (fw_device_compiled(FW_CUDA))
        ck_assert_ptr_nonnull(strstr(fw_device_unavailable_reason(FW_CUDA), "/proc/self/status"));
}
END_TEST

/* ---- a stand-in device with device queries --------------------------------------- */

static fw_backend fake;
static int fake_current;

static int fake_count(void) { return 2; }
static int fake_set_current(int i) { fake_current = i; return 0; }
static int fake_get_current(void) { return fake_current; }
static int fake_sync(int i) { (void)i; return 0; }

static const fw_device_ops fake_ops = {
    .count = fake_count, .set_current = fake_set_current, .current = fake_get_current,
    .synchronize = fake_sync,
};

static int fake_copy(void *dst, fw_device dd, const void *src, fw_device sd, size_t n)
{
    (void)dd;
    (void)sd;
    memmove(dst, src, n);
    return 0;
}

static void register_fake(void)
{
    fake = *fw__cpu_backend();         /* host memory: the CPU kernels work on it */
    fake.name = "fake-cuda";
    fake.device = FW_CUDA;
    fake.host_accessible = false;      /* the core must go through copy */
    fake.dev = &fake_ops;
    fake.copy = fake_copy;
    ck_assert_int_eq(fw_backend_register(&fake), 0);
}

static double value_at(fw_tensor *t, int64_t i)
{
    double buf[64];
    ck_assert_int_le(fw_tensor_numel(t), 64);
    ck_assert_int_eq(fw_tensor_to_doubles(buf, 64, t), 0);
    return buf[i];
}

START_TEST(device_queries_go_through_the_backend)
{
    register_fake();
    ck_assert_int_eq(fw_device_count(FW_CUDA), 2);
    ck_assert_str_eq(fw_device_unavailable_reason(FW_CUDA), "");
    ck_assert_int_eq(fw_device_set_current(FW_CUDA, 1), 0);
    ck_assert_int_eq(fw_device_current(FW_CUDA), 1);
    ck_assert_int_eq(fw_device_set_current(FW_CUDA, 2), FW_EDEVICE);
    ck_assert_int_eq(fw_device_set_current(FW_CUDA, -1), FW_EDEVICE);
    ck_assert_int_eq(fw_device_current(FW_CUDA), 1);
    ck_assert_int_eq(fw_device_synchronize(FW_CUDA, -1), 0);
    ck_assert_int_eq(fw_device_synchronize(FW_CUDA, 5), FW_EDEVICE);
    fw_device_props pr;
    ck_assert_int_eq(fw_device_properties(FW_CUDA, 0, &pr), FW_EUNSUPPORTED);
}
END_TEST

START_TEST(creation_uses_the_default_device)
{
    int64_t shape[2] = {2, 3};
    float data[6] = {1, 2, 3, 4, 5, 6};
    double dd[2] = {7, 8};
    fw_tensor *t = NULL;

    register_fake();
    ck_assert_int_eq(fw_device_default(), FW_CPU);
    ck_assert_int_eq(fw_device_set_default(FW_CUDA), 0);
    ck_assert_int_eq(fw_device_default(), FW_CUDA);

    ck_assert_int_eq(fw_tensor_empty(&t, FW_FLOAT32, shape, 2), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    ck_assert_ptr_null(fw_tensor_data(t));              /* not host-accessible */
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_tensor_from_data(&t, data, FW_FLOAT32, shape, 2), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    ck_assert_double_eq(value_at(t, 5), 6);
    float back[6] = {0};
    ck_assert_int_eq(fw_tensor_copy_to(back, sizeof(back), t), 0);
    ck_assert_mem_eq(back, data, sizeof(data));
    double it = 0;
    fw_tensor *sl = NULL;
    ck_assert_int_eq(fw_transpose(&sl, t, (const int[]){1, 0}, 2), 0);      /* a strided view reads in C order */
    ck_assert_double_eq(value_at(sl, 1), 4);
    fw_tensor_unref(sl);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_tensor_from_doubles(&t, dd, FW_INT64, shape, 1), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    ck_assert_double_eq(value_at(t, 1), 8);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_full(&t, FW_FLOAT64, shape, 2, 2.5), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    ck_assert_double_eq(value_at(t, 4), 2.5);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_zeros(&t, FW_FLOAT32, shape, 2), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_arange(&t, 0, 5, 1, FW_FLOAT32), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    ck_assert_double_eq(value_at(t, 4), 4);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_linspace(&t, 0, 1, 3, FW_FLOAT64), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    ck_assert_double_eq(value_at(t, 1), 0.5);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_eye(&t, 3, -1, FW_FLOAT32), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CUDA);
    ck_assert_double_eq(value_at(t, 4), 1);
    ck_assert_double_eq(value_at(t, 5), 0);
    ck_assert_int_eq(fw_tensor_numel(t), 9);
    fw_tensor_unref(t);

    int64_t one = 1;
    ck_assert_int_eq(fw_full(&t, FW_FLOAT32, &one, 1, 3.0), 0);
    ck_assert_int_eq(fw_tensor_item(&it, t), 0);
    ck_assert_double_eq(it, 3.0);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_device_set_default(FW_CPU), 0);
    ck_assert_int_eq(fw_tensor_empty(&t, FW_FLOAT32, shape, 2), 0);
    ck_assert_int_eq(fw_tensor_device(t), FW_CPU);
    fw_tensor_unref(t);
}
END_TEST

START_TEST(ops_keep_their_inputs_device)
{
    int64_t shape[2] = {2, 3};
    float data[6] = {1, 2, 3, 4, 5, 6};
    fw_tensor *c = NULL, *g = NULL, *y = NULL, *s = NULL;

    register_fake();
    /* the default is the CPU; the input is on the other device */
    ck_assert_int_eq(fw_tensor_from_data(&c, data, FW_FLOAT32, shape, 2), 0);
    ck_assert_int_eq(fw_tensor_to(&g, c, FW_CUDA), 0);
    ck_assert_int_eq(fw_add_scalar(&y, g, 1.0), 0);           /* scalar made on g's device */
    ck_assert_int_eq(fw_tensor_device(y), FW_CUDA);
    ck_assert_double_eq(value_at(y, 0), 2);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_compare_scalar(&y, g, ">", 3.0), 0);
    ck_assert_int_eq(fw_tensor_device(y), FW_CUDA);
    ck_assert_double_eq(value_at(y, 3), 1);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_mean(&s, g, NULL, 0, false), 0);      /* mean's 1/n on g's device */
    ck_assert_int_eq(fw_tensor_device(s), FW_CUDA);
    ck_assert_double_eq(value_at(s, 0), 3.5);
    fw_tensor_unref(s);
    ck_assert_int_eq(fw_exp(&y, g), 0);
    ck_assert_int_eq(fw_tensor_device(y), FW_CUDA);
    fw_tensor_unref(y);
    fw_tensor *gt = NULL;
    ck_assert_int_eq(fw_transpose(&gt, g, (const int[]){1, 0}, 2), 0);
    ck_assert_int_eq(fw_matmul(&y, g, gt, false, false), 0);
    ck_assert_int_eq(fw_tensor_device(y), FW_CUDA);
    ck_assert_double_eq(value_at(y, 0), 14);
    fw_tensor_unref(y);
    fw_tensor_unref(gt);
    bool close = false;
    ck_assert_int_eq(fw_isclose(&y, g, g, 1e-5, 1e-8, false), 0);
    ck_assert_int_eq(fw_tensor_device(y), FW_CUDA);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_allclose(&close, g, g, 1e-5, 1e-8, false), 0);
    ck_assert(close);

    /* mixed devices: FW_EDEVICE naming both */
    ck_assert_int_eq(fw_add(&y, c, g), FW_EDEVICE);
    ck_assert_ptr_null(y);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "cpu and cuda"));
    ck_assert_int_eq(fw_matmul(&y, g, c, false, true), FW_EDEVICE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "cuda and cpu"));
    ck_assert_int_eq(fw_lt(&y, c, g), FW_EDEVICE);
    ck_assert_int_eq(fw_isclose(&y, c, g, 1e-5, 1e-8, false), FW_EDEVICE);
    fw_tensor_unref(g);
    fw_tensor_unref(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_device");
    TCase *tc = tcase_create("device");
    tcase_add_test(tc, cpu_is_one_device);
    tcase_add_test(tc, cuda_without_a_device_says_why);
    tcase_add_test(tc, plugin_path_from_the_environment);
    tcase_add_test(tc, plugin_that_is_not_a_library);
    tcase_add_test(tc, device_queries_go_through_the_backend);
    tcase_add_test(tc, creation_uses_the_default_device);
    tcase_add_test(tc, ops_keep_their_inputs_device);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* each case loads (or not) the plugin in its own process: Check's
     * default fork mode (CK_FORK=no would share one load between cases) */
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
