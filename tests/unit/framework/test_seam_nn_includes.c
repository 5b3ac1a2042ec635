/* The nn ops (framework/ops/nn_*.c, nn_*.h, conv_grad.c) include no cpu/
 * header: they reach kernels only through the backend table
 * (core/fw_backend_nn.h). Reads the sources next to this file's tree. */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* framework/ops/ of the tree this test was built from */
static void ops_dir(char *out, size_t n)
{
    const char *self = __FILE__; /* .../tests/unit/framework/test_seam_nn_includes.c */
    const char *cut = strstr(self, "tests/unit/framework/");
    ck_assert_ptr_nonnull(cut);
    snprintf(out, n, "%.*sframework/ops", (int)(cut - self), self);
}

static int is_nn_source(const char *name)
{
    size_t len = strlen(name);
    if (strcmp(name, "conv_grad.c") == 0)
        return 1;
    return strncmp(name, "nn_", 3) == 0 && len > 2 &&
           (strcmp(name + len - 2, ".c") == 0 || strcmp(name + len - 2, ".h") == 0);
}

START_TEST(nn_ops_include_no_cpu_header)
{
    char dir[PATH_MAX], path[PATH_MAX + 256], line[1024];
    struct dirent *de;
    DIR *d;
    int files = 0;

    ops_dir(dir, sizeof(dir));
    d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    while ((de = readdir(d)) != NULL) {
        FILE *f;
        int lineno = 0;
        if (!is_nn_source(de->d_name))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        f = fopen(path, "r");
        ck_assert_msg(f != NULL, "cannot read %s", path);
        files++;
        while (fgets(line, sizeof(line), f) != NULL) {
            const char *p = line;
            lineno++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != '#')
                continue;
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (strncmp(p, "include", 7) != 0)
                continue;
            ck_assert_msg(strstr(p, "cpu/") == NULL && strstr(p, "_kernels.h") == NULL,
                          "%s:%d includes a CPU header: %s", de->d_name, lineno, line);
        }
        fclose(f);
    }
    closedir(d);
    /* nn_{common,conv,loss,norm,pool,rnn,softmax}.c, nn_int.h, conv_grad.c */
    ck_assert_int_ge(files, 9);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fw_seam_nn_includes");
    TCase *tc = tcase_create("includes");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, nn_ops_include_no_cpu_header);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
