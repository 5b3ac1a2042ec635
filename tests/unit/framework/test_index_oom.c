/*
 * test_index_oom.c - when memory runs out, the indexing/joining ops return
 * FW_ENOMEM with NULL outputs and leave their inputs as they were. The
 * address space is capped with RLIMIT_AS inside the test's own process
 * (Check forks each test), so the allocations fail for real. Skipped (exit
 * 77) under AddressSanitizer, whose shadow memory does not fit under such a
 * cap.
 */
#include "test_index_util.h"

#include <stdio.h>
#include <sys/resource.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#else
#define UNDER_ASAN 0
#endif

/* Cap the soft address-space limit at what is mapped now plus `extra`. */
static bool cap_address_space(size_t extra)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    struct rlimit rl;

    if (f == NULL)
        return false;
    if (fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    fclose(f);
    if (pages == 0 || getrlimit(RLIMIT_AS, &rl) != 0)
        return false;
    rl.rlim_cur = (rlim_t)pages * 4096 + extra;
    return setrlimit(RLIMIT_AS, &rl) == 0;
}

START_TEST(ops_report_enomem_with_null_outputs_and_untouched_inputs)
{
    int64_t s[] = {1024}, big_r = 1 << 18, sec[] = {1, -1}; /* 2 GiB of float64 */
    double one = 1;
    fw_tensor *x = tu_rand(FW_FLOAT64, s, 1, 1), *out = NULL, *o2[2] = {NULL, NULL};
    fw_tensor *i0 = NULL;
    double *before = fw_test_doubles(x, NULL);
    int64_t big_pad[] = {0, INT64_C(1) << 28};
    fw_tensor *big = NULL;

    ck_assert_msg(cap_address_space((size_t)256 << 20), "cannot cap the address space");
    CK_ERR(fw_tile(&out, x, &big_r, 1), FW_ENOMEM, "");
    ck_assert_ptr_null(out);
    CK_ERR(fw_pad(&out, x, big_pad, 2, FW_PAD_REPLICATE, 0), FW_ENOMEM, "");
    ck_assert_ptr_null(out);
    CK_ERR(fw_one_hot(&out, i0 = tu_tensor(&one, FW_INT64, NULL, 0), INT64_C(1) << 29),
           FW_ENOMEM, "");
    ck_assert_ptr_null(out);
    /* a tensor that fits, then joins that do not */
    CK_OK(fw_tile(&big, x, (int64_t[]){8192}, 1)); /* 64 MiB */
    fw_tensor *many[8] = {big, big, big, big, big, big, big, big};
    CK_ERR(fw_concat(&out, many, 8, 0), FW_ENOMEM, "");
    CK_ERR(fw_stack(&out, many, 8, 0), FW_ENOMEM, "");
    ck_assert_ptr_null(out);
    CK_OK(fw_split(o2, x, 2, sec, 0)); /* small ones still work */
    tu_free(o2, 2);
    CK_CLOSE(x, before, 1024, 0, 0);
    free(before);
    fw_tensor *all[] = {x, i0, big};
    tu_free(all, 3);
}
END_TEST

int main(void)
{
    if (UNDER_ASAN) {
        /* a skip, not a pass: CTest reports it (SKIP_RETURN_CODE 77) */
        fprintf(stderr, "skipped: RLIMIT_AS does not work under AddressSanitizer\n");
        return 77;
    }
    Suite *s = suite_create("fw_index_oom");
    TCase *tc = tcase_create("oom");
    tcase_add_test(tc, ops_report_enomem_with_null_outputs_and_untouched_inputs);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK); /* the cap must stay in the child */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
