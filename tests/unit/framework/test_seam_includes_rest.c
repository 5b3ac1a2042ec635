/* No file in framework/ outside cpu/ includes a cpu/ header: ops, optim,
 * random, core, io, ... reach CPU kernels only through the backend table
 * (core/fw_backend*.h). A header counts as a cpu/ one when the include
 * names "cpu/" or the name of a header that lives in framework/cpu/. The
 * nn op files (ops/nn_*, ops/conv_grad.c) are test_seam_nn_includes.c's. */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_HDRS 64
static char cpu_hdrs[MAX_HDRS][NAME_MAX + 1];
static int n_cpu_hdrs, n_files;

/* framework/ of the tree this test was built from */
static void fw_dir(char *out, size_t n)
{
    const char *self = __FILE__;
    const char *cut = strstr(self, "tests/unit/framework/");
    ck_assert_ptr_nonnull(cut);
    snprintf(out, n, "%.*sframework", (int)(cut - self), self);
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int is_source(const char *name)
{
    return has_suffix(name, ".c") || has_suffix(name, ".h") || has_suffix(name, ".cu") ||
           has_suffix(name, ".cuh");
}

static void load_cpu_headers(const char *fw)
{
    char path[PATH_MAX + 8];
    struct dirent *de;
    DIR *d;

    snprintf(path, sizeof(path), "%s/cpu", fw);
    ck_assert_msg((d = opendir(path)) != NULL, "cannot open %s", path);
    while ((de = readdir(d)) != NULL)
        if (has_suffix(de->d_name, ".h") && n_cpu_hdrs < MAX_HDRS)
            snprintf(cpu_hdrs[n_cpu_hdrs++], NAME_MAX + 1, "%s", de->d_name);
    closedir(d);
    ck_assert_int_ge(n_cpu_hdrs, 4);  /* core_kernels.h, index_cpu.h, optim_kernels.h, ... */
}

/* The file name an #include line names, or NULL. */
static const char *included(const char *line, char *buf, size_t n)
{
    const char *p = line, *q;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '#')
        return NULL;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "include", 7) != 0)
        return NULL;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '"' && *p != '<')
        return NULL;
    q = strpbrk(p + 1, "\">");
    if (q == NULL || (size_t)(q - p - 1) >= n)
        return NULL;
    snprintf(buf, n, "%.*s", (int)(q - p - 1), p + 1);
    return buf;
}

static void check_file(const char *path, const char *rel)
{
    char line[1024], inc[512];
    int lineno = 0;
    FILE *f = fopen(path, "r");

    ck_assert_msg(f != NULL, "cannot read %s", path);
    n_files++;
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *name, *base;
        lineno++;
        if ((name = included(line, inc, sizeof(inc))) == NULL)
            continue;
        ck_assert_msg(strstr(name, "cpu/") == NULL, "%s:%d includes %s", rel, lineno, name);
        base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        for (int i = 0; i < n_cpu_hdrs; i++)
            ck_assert_msg(strcmp(base, cpu_hdrs[i]) != 0 || strchr(name, '/') != NULL,
                          "%s:%d includes the cpu/ header %s", rel, lineno, name);
    }
    fclose(f);
}

static void walk(const char *dir, const char *rel)
{
    char path[2 * PATH_MAX + 2], sub[2 * PATH_MAX + 2];
    struct dirent *de;
    struct stat st;
    DIR *d = opendir(dir);

    ck_assert_msg(d != NULL, "cannot open %s", dir);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (strcmp(sub, "cpu") != 0)
                walk(path, sub);
            continue;
        }
        if (!S_ISREG(st.st_mode) || !is_source(de->d_name))
            continue;
        if (strncmp(sub, "ops/nn_", 7) == 0 || strcmp(sub, "ops/conv_grad.c") == 0)
            continue;              /* test_seam_nn_includes.c */
        check_file(path, sub);
    }
    closedir(d);
}

START_TEST(no_file_outside_cpu_includes_a_cpu_header)
{
    char fw[PATH_MAX];

    fw_dir(fw, sizeof(fw));
    load_cpu_headers(fw);
    walk(fw, "");
    ck_assert_int_ge(n_files, 40);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fw_seam_includes_rest");
    TCase *tc = tcase_create("includes");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, no_file_outside_cpu_includes_a_cpu_header);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
