/* The random family reproduces paddle.seed streams: the CPU table
 * (cpu/random_backend.c, reached by fw_rand & co. through the backend of
 * the default device) against the counter layout documented in
 * core/fw_backend_random.h, recomputed here from scratch (its own
 * Philox4x32-10, u53, Box-Muller). A CUDA backend that follows the layout
 * produces these same numbers. */
#include "gradcheck.h"

#include "fw/random.h"
#include "fw_backend.h"
#include "fw_backend_random.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the documented layout, written independently ---- */

static void philox(uint32_t w[4], uint64_t blk, uint32_t attempt, uint64_t seed)
{
    uint32_t c[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), attempt, 0};
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int r = 0; r < 10; r++) {
        uint64_t a = (uint64_t)0xD2511F53u * c[0], b = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n[4] = {(uint32_t)(b >> 32) ^ c[1] ^ k[0], (uint32_t)b,
                         (uint32_t)(a >> 32) ^ c[3] ^ k[1], (uint32_t)a};
        memcpy(c, n, sizeof(c));
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    memcpy(w, c, sizeof(c));
}

static double u53(uint32_t hi, uint32_t lo)
{
    return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1.0p-53;
}

/* element i of a fill at base: the uniform, the 64 bits, the normal */
static double uni(uint64_t seed, uint64_t base, uint64_t i)
{
    uint32_t w[4];
    philox(w, base + i / 2, 0, seed);
    return i % 2 ? u53(w[2], w[3]) : u53(w[0], w[1]);
}

static uint64_t bits(uint64_t seed, uint64_t base, uint64_t i)
{
    uint32_t w[4];
    philox(w, base + i / 2, 0, seed);
    return i % 2 ? ((uint64_t)w[2] << 32 | w[3]) : ((uint64_t)w[0] << 32 | w[1]);
}

static void pair(double z[2], uint64_t seed, uint64_t blk, uint32_t attempt)
{
    uint32_t w[4];
    philox(w, blk, attempt, seed);
    double r = sqrt(-2.0 * log(1.0 - u53(w[0], w[1]))), t = 2.0 * M_PI * u53(w[2], w[3]);
    z[0] = r * cos(t);
    z[1] = r * sin(t);
}

static double nrm(uint64_t seed, uint64_t base, uint64_t i)
{
    double z[2];
    pair(z, seed, base + i / 2, 0);
    return z[i % 2];
}

/* ---- tests ---- */

START_TEST(seeded_creation_ops_follow_the_layout)
{
    const uint64_t seed = 0x123456789abcULL;
    int64_t n1 = 1001, n2 = 10, n3 = 33, n4 = 17;
    fw_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    float fa[1001], fb[10];
    double dc[33];
    int64_t id[17];

    fw_seed(seed);                 /* paddle.seed(seed) */
    ck_assert_uint_eq(fw_generator_get_offset(NULL), 0);
    ck_assert_int_eq(fw_uniform(&a, &n1, 1, FW_FLOAT32, -2.0, 3.0, NULL), 0);
    ck_assert_uint_eq(fw_generator_get_offset(NULL), 501);       /* (n+1)/2 blocks */
    ck_assert_int_eq(fw_rand(&b, &n2, 1, FW_FLOAT32, NULL), 0);
    ck_assert_int_eq(fw_normal(&c, &n3, 1, FW_FLOAT64, 0.5, 2.0, NULL), 0);
    ck_assert_int_eq(fw_randint(&d, -5, 1000, &n4, 1, FW_INT64, NULL), 0);
    ck_assert_uint_eq(fw_generator_get_offset(NULL), 501 + 5 + 17 + 9);
    ck_assert_int_eq(fw_tensor_copy_to(fa, sizeof(fa), a), 0);
    ck_assert_int_eq(fw_tensor_copy_to(fb, sizeof(fb), b), 0);
    ck_assert_int_eq(fw_tensor_copy_to(dc, sizeof(dc), c), 0);
    ck_assert_int_eq(fw_tensor_copy_to(id, sizeof(id), d), 0);
    for (int64_t i = 0; i < n1; i++) {
        float e = (float)(-2.0 + 5.0 * uni(seed, 0, (uint64_t)i));
        if (e >= 3.0f)
            e = -2.0f;
        ck_assert_msg(fa[i] == e, "uniform %lld: %.9g vs %.9g", (long long)i, fa[i], e);
    }
    for (int64_t i = 0; i < n2; i++)
        ck_assert(fb[i] == (float)uni(seed, 501, (uint64_t)i));
    for (int64_t i = 0; i < n3; i++)
        ck_assert(dc[i] == 0.5 + 2.0 * nrm(seed, 506, (uint64_t)i));
    for (int64_t i = 0; i < n4; i++) {
        uint64_t x = bits(seed, 523, (uint64_t)i);
        ck_assert_int_eq(id[i], -5 + (int64_t)(((unsigned __int128)x * 1005) >> 64));
    }
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    fw_tensor_unref(c);
    fw_tensor_unref(d);
}
END_TEST

START_TEST(cpu_table_follows_the_layout)
{
    const struct fw_random_kernels *k = fw__cpu_backend()->random;
    const uint64_t seed = 77, base = 0xfffffffeULL;   /* crosses the counter's low word */
    enum { N = 40000 };                               /* several parallel chunks */
    uint8_t *m = malloc(N);
    float *t = malloc(sizeof(float) * 64);
    int64_t *perm = malloc(sizeof(int64_t) * 50), ref[50];
    int32_t *ri = malloc(sizeof(int32_t) * 9);

    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(k->bernoulli(m, N, seed, base, 0.3), 0);
    for (uint64_t i = 0; i < N; i++)
        ck_assert_int_eq(m[i], uni(seed, base, i) < 0.3);
    ck_assert_int_eq(k->truncated_normal(FW_FLOAT32, t, 64, seed, base, 1.0, 0.5, -1.0, 0.5), 0);
    for (uint64_t i = 0; i < 64; i++) {
        double z[2], v = 0.0 / 0.0;
        for (uint32_t att = 0; att < 100000; att++) {
            pair(z, seed, base + i, att);
            if (z[0] >= -1.0 && z[0] <= 0.5) { v = z[0]; break; }
            if (z[1] >= -1.0 && z[1] <= 0.5) { v = z[1]; break; }
        }
        v = 1.0 + 0.5 * v;
        v = v < 0.5 ? 0.5 : v > 1.25 ? 1.25 : v;
        ck_assert(t[i] == (float)v);
    }
    ck_assert_int_eq(k->randint(FW_INT32, ri, 9, seed, base, 10, 3), 0);
    for (uint64_t i = 0; i < 9; i++)
        ck_assert_int_eq(ri[i], 10 + (int32_t)(((unsigned __int128)bits(seed, base, i) * 3) >> 64));
    ck_assert_int_eq(k->randperm(perm, 50, seed, base), 0);
    for (int i = 0; i < 50; i++)
        ref[i] = i;
    for (uint64_t i = 49; i >= 1; i--) {
        uint64_t j = (uint64_t)(((unsigned __int128)bits(seed, base, i) * (i + 1)) >> 64);
        int64_t tmp = ref[i];
        ref[i] = ref[j];
        ref[j] = tmp;
    }
    ck_assert_mem_eq(perm, ref, sizeof(ref));
    /* the raw fills and the tensor ops share the table: same numbers */
    {
        fw_generator *g = NULL;
        uint8_t m2[100];
        ck_assert_int_eq(fw_generator_new(&g, seed), 0);
        fw_generator_set_state(g, seed, base);
        ck_assert_int_eq(fw_random_bernoulli_u8(g, m2, 100, 0.3), 0);
        ck_assert_mem_eq(m2, m, 100);
        ck_assert_uint_eq(fw_generator_get_offset(g), base + 50);
        fw_generator_free(g);
    }
    ck_assert_int_eq(k->uniform(FW_FLOAT16, t, 4, seed, base, 0, 1), FW_EDTYPE);
    free(m);
    free(t);
    free(perm);
    free(ri);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fw_seam_random");
    TCase *tc = tcase_create("layout");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, seeded_creation_ops_follow_the_layout);
    tcase_add_test(tc, cpu_table_follows_the_layout);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
