/*
 * test_example_mlp.c - the framework/examples/mlp_digits.c example as a
 * test: export scikit-learn's digits with /usr/bin/python3 at test time,
 * train the MLP with Adam, and require at least 95% test accuracy; the
 * trained weights round-trip through safetensors.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MLP_DIGITS_NO_MAIN
#include "../../../framework/examples/mlp_digits.c"

static const char *export_py =
    "import sys, numpy as np\n"
    "from sklearn.datasets import load_digits\n"
    "d = load_digits()\n"
    "with open(sys.argv[1], 'wb') as f:\n"
    "    f.write(b'DIGT')\n"
    "    f.write(np.array(d.data.shape, '<i4').tobytes())\n"
    "    f.write((d.data / 16.0).astype('<f4').tobytes())\n"
    "    f.write(d.target.astype('<i4').tobytes())\n";

START_TEST(mlp_on_sklearn_digits_reaches_95_percent)
{
    char dir[] = "/tmp/fw_digits_XXXXXX", data[96], script[96], weights[96], cmd[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof(data), "%s/digits.bin", dir);
    snprintf(script, sizeof(script), "%s/export.py", dir);
    snprintf(weights, sizeof(weights), "%s/mlp.safetensors", dir);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fputs(export_py, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s", script, data);
    ck_assert_msg(system(cmd) == 0, "exporting the digits with %s failed", cmd);

    double acc = 0;
    int err = mlp_digits_run(data, weights, &acc, 1);
    ck_assert_msg(err == 0, "training failed: %s", fw_error_last());
    ck_assert_msg(acc >= 0.95, "test accuracy %.4f is under 0.95", acc);

    /* a digits file that is not one is refused with a message */
    err = mlp_digits_run(script, NULL, &acc, 0);
    ck_assert_int_eq(err, FW_EFORMAT);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_example_mlp");
    TCase *tc = tcase_create("mlp_digits");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, mlp_on_sklearn_digits_reaches_95_percent);
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
