/* The CUDA backend's runtime on a GPU (framework/cuda/: device.c, memory.c,
 * blas.c, block_pool.c): host <-> device round trips (contiguous and
 * strided), gemm in float32/float64/float16/bfloat16 against the CPU,
 * the allocator's counters against live tensors, peaks, empty_cache, fresh
 * memory reading zeros, device queries. Without a usable device it exits
 * 77 ("no CUDA device: <reason>"), which CTest reports as skipped.
 * Runs without Check's fork mode: CUDA does not survive fork(). */
#include "gradcheck.h"

#include "fw_backend.h"
#include "fw_int.h"

#include "fw/device.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rnd_state = 88172645463325252ULL;

static double urand(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (double)(rnd_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static fw_tensor *cpu_random(const int64_t *shape, int nd, fw_dtype dt)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    fw_tensor *t = NULL;
    for (int64_t i = 0; i < n; i++)
        v[i] = urand();
    ck_assert_int_eq(fw_tensor_from_doubles(&t, v, dt, shape, nd), 0);
    free(v);
    return t;
}

static fw_tensor *to_dev(fw_tensor *t, fw_device d)
{
    fw_tensor *y = NULL;
    ck_assert_msg(fw_tensor_to(&y, t, d) == 0, "to: %s", fw_error_last());
    return y;
}

static double *values(fw_tensor *t)
{
    int64_t n = fw_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ck_assert_msg(fw_tensor_to_doubles(v, n, t) == 0, "to_doubles: %s", fw_error_last());
    return v;
}

/* max |a-b| / (|b| + 1) over all elements */
static double max_rel(fw_tensor *a, fw_tensor *b)
{
    ck_assert_int_eq(fw_tensor_numel(a), fw_tensor_numel(b));
    double *x = values(a), *y = values(b), worst = 0;
    for (int64_t i = 0; i < fw_tensor_numel(a); i++) {
        double e = fabs(x[i] - y[i]) / (fabs(y[i]) + 1.0);
        if (!(e <= worst))
            worst = e;
    }
    free(x);
    free(y);
    return worst;
}

START_TEST(device_queries)
{
    fw_device_props p;
    ck_assert(fw_device_compiled(FW_CUDA));
    ck_assert_int_gt(fw_device_count(FW_CUDA), 0);
    ck_assert_str_eq(fw_device_unavailable_reason(FW_CUDA), "");
    ck_assert_int_eq(fw_device_set_current(FW_CUDA, 0), 0);
    ck_assert_int_eq(fw_device_current(FW_CUDA), 0);
    ck_assert_int_eq(fw_device_set_current(FW_CUDA, fw_device_count(FW_CUDA)), FW_EDEVICE);
    ck_assert_int_eq(fw_device_properties(FW_CUDA, 0, &p), 0);
    ck_assert(p.name[0] != '\0');
    ck_assert_int_ge(p.major, 7);
    ck_assert_uint_gt(p.total_memory, (uint64_t)1 << 30);
    ck_assert_int_eq(fw_device_synchronize(FW_CUDA, -1), 0);
    printf("cuda device 0: %s (sm_%d%d, %d SMs, %.1f GiB)\n", p.name, p.major, p.minor,
           p.multi_processor_count, (double)p.total_memory / (1 << 30));
}
END_TEST

START_TEST(round_trips_contiguous_and_strided)
{
    int64_t shape[3] = {5, 7, 9};
    fw_tensor *c = cpu_random(shape, 3, FW_FLOAT32), *g = to_dev(c, FW_CUDA), *back;
    ck_assert_int_eq(fw_tensor_device(g), FW_CUDA);
    ck_assert_ptr_null(fw_tensor_data(g));
    back = to_dev(g, FW_CPU);
    ck_assert_mem_eq(fw_tensor_data(back), fw_tensor_data(c), 5 * 7 * 9 * sizeof(float));
    fw_tensor_unref(back);

    /* a transposed, stepped view on the device reads back like the CPU's */
    int perm[3] = {2, 0, 1};
    int axes[1] = {1};
    int64_t st[1] = {1}, en[1] = {7}, sp[1] = {2};
    fw_tensor *gt = NULL, *ct = NULL, *gs = NULL, *cs = NULL;
    ck_assert_int_eq(fw_transpose(&gt, g, perm, 3), 0);
    ck_assert_int_eq(fw_transpose(&ct, c, perm, 3), 0);
    ck_assert_int_eq(fw_slice(&gs, gt, axes, st, en, sp, 1), 0);
    ck_assert_int_eq(fw_slice(&cs, ct, axes, st, en, sp, 1), 0);
    ck_assert_double_eq(max_rel(gs, cs), 0);
    fw_tensor *gd = NULL;
    ck_assert_int_eq(fw_contiguous(&gd, gs), 0);            /* strided copy on the device */
    ck_assert_int_eq(fw_tensor_device(gd), FW_CUDA);
    ck_assert_double_eq(max_rel(gd, cs), 0);
    /* a cast on the device, read back as bytes */
    fw_tensor *g64 = NULL;
    ck_assert_int_eq(fw_cast(&g64, gs, FW_FLOAT64), 0);
    ck_assert_double_eq(max_rel(g64, cs), 0);
    double item = 0;
    fw_tensor *one = NULL;
    ck_assert_int_eq(fw_select(&one, g, 0, 3), 0);
    fw_tensor *one2 = NULL, *one3 = NULL;
    ck_assert_int_eq(fw_select(&one2, one, 0, 4), 0);
    ck_assert_int_eq(fw_select(&one3, one2, 0, 8), 0);
    ck_assert_int_eq(fw_tensor_item(&item, one3), 0);
    ck_assert_double_eq(item, ((float *)fw_tensor_data(c))[3 * 63 + 4 * 9 + 8]);
    /* a large transfer (beyond the staging buffers) */
    int64_t big = (int64_t)9 << 20;
    fw_tensor *cb = cpu_random(&big, 1, FW_FLOAT32), *gb = to_dev(cb, FW_CUDA), *bb = to_dev(gb, FW_CPU);
    ck_assert_int_eq(memcmp(fw_tensor_data(bb), fw_tensor_data(cb), (size_t)big * 4), 0);
    fw_tensor *tensors[] = {c, g, gt, ct, gs, cs, gd, g64, one, one2, one3, cb, gb, bb};
    for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]); i++)
        fw_tensor_unref(tensors[i]);
}
END_TEST

/* C = op(A) @ op(B) through the backend's gemm_batched in dtype dt, against
 * the CPU's float64 product of the same (rounded) inputs. */
static double gemm_case(fw_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        int64_t batch, bool uneven)
{
    const fw_backend *b = fw_backend_get(FW_CUDA);
    int64_t as[3] = {batch, ta ? k : m, ta ? m : k}, bs[3] = {batch, tb ? n : k, tb ? k : n};
    int64_t cs[3] = {batch, m, n};
    fw_tensor *a = cpu_random(as, 3, dt), *bb = cpu_random(bs, 3, dt);
    fw_tensor *a64 = NULL, *b64 = NULL, *ga = to_dev(a, FW_CUDA), *gb = to_dev(bb, FW_CUDA);
    fw_tensor *gc = NULL, *ref = NULL, *got = NULL;
    int64_t *aoff = malloc(sizeof(int64_t) * (size_t)batch * 2), *boff = aoff + batch;

    ck_assert_int_eq(fw_cast(&a64, a, FW_FLOAT64), 0);
    ck_assert_int_eq(fw_cast(&b64, bb, FW_FLOAT64), 0);
    ck_assert_int_eq(fw_tensor_empty_on(&gc, FW_CUDA, dt, cs, 3), 0);
    ck_assert_int_eq(fw_tensor_empty_on(&ref, FW_CPU, FW_FLOAT64, cs, 3), 0);
    for (int64_t i = 0; i < batch; i++) {
        /* uneven: a permutation (2, 1, 0, 5, 4, 3 for 6), not evenly spaced */
        int64_t j = uneven ? (i * 5 + 2) % batch : i;
        aoff[i] = j * as[1] * as[2];
        boff[i] = j * bs[1] * bs[2];
        const double *pa = (const double *)fw_tensor_data(a64) + aoff[i];
        const double *pb = (const double *)fw_tensor_data(b64) + boff[i];
        double *pc = (double *)fw_tensor_data(ref) + i * m * n;
        for (int64_t r = 0; r < m; r++)
            for (int64_t q = 0; q < n; q++) {
                double s = 0;
                for (int64_t l = 0; l < k; l++)
                    s += (ta ? pa[l * m + r] : pa[r * k + l]) * (tb ? pb[q * k + l] : pb[l * n + q]);
                pc[r * n + q] = s;
            }
    }
    int err = b->gemm_batched(dt, ta, tb, m, n, k, fw__ptr(ga), as[2], aoff, fw__ptr(gb), bs[2],
                              boff, fw__ptr(gc), n, m * n, batch);
    ck_assert_msg(err == 0, "gemm: %s", fw_error_last());
    ck_assert_int_eq(fw_cast(&got, gc, FW_FLOAT64), 0);
    double e = max_rel(got, ref);
    fw_tensor *ts[] = {a, bb, a64, b64, ga, gb, gc, ref, got};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        fw_tensor_unref(ts[i]);
    free(aoff);
    return e;
}

START_TEST(gemm_against_the_cpu)
{
    static const struct { fw_dtype dt; double tol; } dts[] = {
        {FW_FLOAT32, 1e-5}, {FW_FLOAT64, 1e-12}, {FW_FLOAT16, 1e-2}, {FW_BFLOAT16, 5e-2}};
    for (size_t d = 0; d < 4; d++)
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            double e1 = gemm_case(dts[d].dt, ta, tb, 33, 17, 65, 1, false);
            double e2 = gemm_case(dts[d].dt, ta, tb, 8, 24, 16, 5, false);
            double e3 = gemm_case(dts[d].dt, ta, tb, 8, 3, 16, 6, true);     /* pointer arrays */
            double e4 = gemm_case(dts[d].dt, ta, tb, 1, 7, 5, 2, false);     /* a row vector */
            ck_assert_msg(e1 <= dts[d].tol && e2 <= dts[d].tol && e3 <= dts[d].tol &&
                          e4 <= dts[d].tol, "%s ta=%d tb=%d: errors %g %g %g %g",
                          fw_dtype_name(dts[d].dt), ta, tb, e1, e2, e3, e4);
        }
    /* matmul through the op: float32, broadcast batch, against the CPU */
    int64_t xs[4] = {3, 1, 20, 30}, ys[3] = {4, 30, 10};
    fw_tensor *x = cpu_random(xs, 4, FW_FLOAT32), *y = cpu_random(ys, 3, FW_FLOAT32);
    fw_tensor *gx = to_dev(x, FW_CUDA), *gy = to_dev(y, FW_CUDA), *z = NULL, *gz = NULL;
    ck_assert_int_eq(fw_matmul(&z, x, y, false, false), 0);
    ck_assert_msg(fw_matmul(&gz, gx, gy, false, false) == 0, "%s", fw_error_last());
    ck_assert_int_eq(fw_tensor_device(gz), FW_CUDA);
    ck_assert_double_le(max_rel(gz, z), 1e-5);
    fw_tensor *ts[] = {x, y, gx, gy, z, gz};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        fw_tensor_unref(ts[i]);
}
END_TEST

static fw_device_memory mem(void)
{
    fw_device_memory m;
    ck_assert_int_eq(fw_device_memory_stats(FW_CUDA, -1, &m), 0);
    return m;
}

START_TEST(allocator_counters_match_live_tensors)
{
    enum { N = 16 };
    fw_tensor *t[N];
    fw_device_memory m0 = mem(), m1, m2;
    uint64_t sum = 0;
    for (int i = 0; i < N; i++) {
        int64_t n = 1000 + 777 * i;              /* bytes 4000.. rounded to 512 */
        ck_assert_int_eq(fw_tensor_empty_on(&t[i], FW_CUDA, FW_FLOAT32, &n, 1), 0);
        sum += ((uint64_t)n * 4 + 511) / 512 * 512;
    }
    m1 = mem();
    ck_assert_uint_eq(m1.allocated - m0.allocated, sum);
    ck_assert_uint_ge(m1.peak_allocated, m1.allocated);
    ck_assert_uint_ge(m1.reserved, m1.allocated);
    for (int i = 0; i < N; i++)
        fw_tensor_unref(t[i]);
    m2 = mem();
    ck_assert_uint_eq(m2.allocated, m0.allocated);
    ck_assert_uint_ge(m2.peak_allocated, m1.allocated);
    ck_assert_int_eq(fw_device_reset_peak(FW_CUDA, -1), 0);
    ck_assert_uint_eq(mem().peak_allocated, m2.allocated);

    /* a large tensor: reserved grows; freed it stays cached; empty_cache gives it back */
    int64_t big = (int64_t)64 << 20;             /* 256 MiB */
    fw_tensor *b = NULL;
    ck_assert_int_eq(fw_tensor_empty_on(&b, FW_CUDA, FW_FLOAT32, &big, 1), 0);
    fw_device_memory m3 = mem();
    ck_assert_uint_ge(m3.reserved, m2.reserved + ((uint64_t)256 << 20));
    fw_tensor_unref(b);
    fw_device_memory m4 = mem();
    ck_assert_uint_eq(m4.reserved, m3.reserved);
    ck_assert_uint_eq(m4.peak_allocated, m3.allocated);
    ck_assert_int_eq(fw_device_empty_cache(FW_CUDA), 0);
    fw_device_memory m5 = mem();
    ck_assert_uint_lt(m5.reserved, m4.reserved);
    ck_assert_uint_le(m5.reserved, m2.reserved);
}
END_TEST

START_TEST(fresh_memory_reads_zero)
{
    /* dirty a segment, give it back to the driver, then take a fresh one */
    int64_t n = (int64_t)24 << 20;               /* 96 MiB of float32 */
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_empty_on(&t, FW_CUDA, FW_FLOAT32, &n, 1), 0);
    ck_assert_int_eq(fw_tensor_fill(t, 1234.5), 0);
    fw_tensor_unref(t);
    ck_assert_int_eq(fw_device_empty_cache(FW_CUDA), 0);
    ck_assert_int_eq(fw_tensor_empty_on(&t, FW_CUDA, FW_FLOAT32, &n, 1), 0);
    float *h = malloc((size_t)n * 4);
    ck_assert_int_eq(fw_tensor_copy_to(h, (size_t)n * 4, t), 0);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; i++)
        nonzero += h[i] != 0;
    ck_assert_int_eq(nonzero, 0);
    free(h);
    fw_tensor_unref(t);
}
END_TEST

START_TEST(ops_run_on_the_device)
{
    int64_t s[2] = {31, 17};
    fw_tensor *a = cpu_random(s, 2, FW_FLOAT32), *b = cpu_random(s, 2, FW_FLOAT32);
    fw_tensor *ga = to_dev(a, FW_CUDA), *gb = to_dev(b, FW_CUDA), *c = NULL, *gc = NULL;
    ck_assert_int_eq(fw_add(&c, a, b), 0);
    ck_assert_msg(fw_add(&gc, ga, gb) == 0, "%s", fw_error_last());
    ck_assert_double_le(max_rel(gc, c), 1e-6);
    fw_tensor_unref(c);
    fw_tensor_unref(gc);
    ck_assert_int_eq(fw_mul_scalar(&c, a, 3.0), 0);
    ck_assert_msg(fw_mul_scalar(&gc, ga, 3.0) == 0, "%s", fw_error_last());
    ck_assert_double_le(max_rel(gc, c), 1e-6);
    fw_tensor_unref(c);
    fw_tensor_unref(gc);
    ck_assert_int_eq(fw_mean(&c, a, NULL, 0, false), 0);
    ck_assert_msg(fw_mean(&gc, ga, NULL, 0, false) == 0, "%s", fw_error_last());
    ck_assert_double_le(max_rel(gc, c), 1e-5);
    ck_assert_int_eq(fw_add(&c, a, gb), FW_EDEVICE);    /* c still set: unref below is fine */
    fw_tensor *ts[] = {a, b, ga, gb, gc};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        fw_tensor_unref(ts[i]);
    ck_assert_int_eq(fw_device_synchronize(FW_CUDA, -1), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_cuda_runtime");
    TCase *tc = tcase_create("cuda");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, device_queries);
    tcase_add_test(tc, round_trips_contiguous_and_strided);
    tcase_add_test(tc, gemm_against_the_cpu);
    tcase_add_test(tc, allocator_counters_match_live_tensors);
    tcase_add_test(tc, fresh_memory_reads_zero);
    tcase_add_test(tc, ops_run_on_the_device);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (fw_device_count(FW_CUDA) == 0) {
        printf("no CUDA device: %s\n", fw_device_unavailable_reason(FW_CUDA));
        return 77;
    }
    SRunner *sr = srunner_create(suite());
    srunner_set_fork_status(sr, CK_NOFORK);      /* CUDA does not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
