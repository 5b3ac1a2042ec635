/* eddy-kernel run FILE.py: scripts run as python runs them (sys.argv,
 * __main__, exit codes, stdout and stderr passed through), plus the
 * command line's answers to bad input. The real binary, real processes. */
#include "kt_util.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;

static void setup(void) { dir = kt_tmpdir(); }
static void teardown(void) { kt_rmrf(dir); free(dir); }

static void run_script(kt_proc *p, const char *name, const char *const *args,
                       const char *const *env)
{
    const char *argv[16] = {KERNEL_BIN, "run", name};
    int n = 3;
    for (; args && *args && n < 15; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    kt_run(p, argv, dir, env, 60);
}

START_TEST(script_sees_argv_and_runs_as_main)
{
    kt_proc p;
    kt_write(dir, "a.py", "import sys\nprint(__name__, sys.argv)\n");
    run_script(&p, "a.py", (const char *[]){"x", "--y", "z z", NULL}, NULL);
    ck_assert_int_eq(p.status, 0);
    ck_assert_str_eq(p.out, "__main__ ['a.py', 'x', '--y', 'z z']\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(script_sys_exit_code_is_the_exit_status)
{
    kt_proc p;
    kt_write(dir, "e.py", "import sys\nprint('before')\nsys.exit(3)\nprint('after')\n");
    run_script(&p, "e.py", NULL, NULL);
    ck_assert_int_eq(p.status, 3);
    ck_assert_str_eq(p.out, "before\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(script_uncaught_exception_exits_1_with_traceback)
{
    kt_proc p;
    kt_write(dir, "boom.py", "def f():\n    raise ValueError('boom')\nf()\n");
    run_script(&p, "boom.py", NULL, NULL);
    ck_assert_int_eq(p.status, 1);
    ck_assert_ptr_nonnull(strstr(p.err, "Traceback (most recent call last):"));
    ck_assert_ptr_nonnull(strstr(p.err, "line 2, in f"));
    ck_assert_ptr_nonnull(strstr(p.err, "ValueError: boom"));
    kt_proc_free(&p);
}
END_TEST

START_TEST(script_stdout_and_stderr_pass_through_separately)
{
    kt_proc p;
    kt_write(dir, "io.py", "import sys, os\nprint('to out')\nprint('to err', file=sys.stderr)\n"
                           "sys.stdout.flush()\nos.write(1, b'raw out\\n')\n");
    run_script(&p, "io.py", NULL, NULL);
    ck_assert_int_eq(p.status, 0);
    ck_assert_str_eq(p.out, "to out\nraw out\n");
    ck_assert_str_eq(p.err, "to err\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(script_folder_is_first_on_sys_path)
{
    kt_proc p;
    kt_write(dir, "helper.py", "VALUE = 42\n");
    kt_write(dir, "main.py", "import helper\nprint(helper.VALUE)\n");
    run_script(&p, "main.py", NULL, NULL);
    ck_assert_int_eq(p.status, 0);
    ck_assert_str_eq(p.out, "42\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(script_imports_numpy_from_debian)
{
    kt_proc p;
    kt_write(dir, "np.py", "import numpy as np\nprint(int(np.arange(5).sum()))\n");
    run_script(&p, "np.py", NULL, NULL);
    ck_assert_msg(p.status == 0, "%s", p.err);
    ck_assert_str_eq(p.out, "10\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(eddy_pythonpath_decides_where_paddle_comes_from)
{
    kt_proc p;
    char env[1100];
    kt_write(dir, "p.py", "import paddle\nprint(paddle.WHO)\n");
    char pk[1100];
    snprintf(pk, sizeof(pk), "%s/paddle", dir);
    ck_assert_int_eq(mkdir(pk, 0700), 0);
    kt_write(dir, "paddle/__init__.py", "WHO = 'stub paddle'\n");
    snprintf(env, sizeof(env), "EDDY_PYTHONPATH=%s", dir);
    run_script(&p, "p.py", NULL, (const char *[]){env, NULL});
    ck_assert_msg(p.status == 0, "%s", p.err);
    ck_assert_str_eq(p.out, "stub paddle\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(default_sys_path_has_the_framework_python_folders)
{
    kt_proc p;
    kt_write(dir, "sp.py", "import sys\nprint(sum(1 for d in sys.path "
                           "if d.endswith('/framework/python')))\n");
    run_script(&p, "sp.py", NULL, NULL);
    ck_assert_int_eq(p.status, 0);
    ck_assert_str_eq(p.out, "2\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(run_module_runs_it_as_main)
{
    kt_proc p;
    kt_write(dir, "mymod.py", "import sys\nprint(__name__, sys.argv[1:])\n");
    kt_run(&p, (const char *[]){KERNEL_BIN, "run", "-m", "mymod", "a", NULL}, dir, NULL, 60);
    ck_assert_msg(p.status == 0, "%s", p.err);
    ck_assert_str_eq(p.out, "__main__ ['a']\n");
    kt_proc_free(&p);
}
END_TEST

START_TEST(missing_script_exits_2_naming_it)
{
    kt_proc p;
    run_script(&p, "nope.py", NULL, NULL);
    ck_assert_int_eq(p.status, 2);
    ck_assert_ptr_nonnull(strstr(p.err, "nope.py"));
    kt_proc_free(&p);
}
END_TEST

START_TEST(bad_command_lines_exit_2_with_usage)
{
    const char *const cases[][4] = {
        {KERNEL_BIN, NULL}, {KERNEL_BIN, "frobnicate", NULL}, {KERNEL_BIN, "run", NULL},
        {KERNEL_BIN, "serve", NULL}, {KERNEL_BIN, "serve", "--fd", "abc"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kt_proc p;
        const char *argv[5] = {0};
        memcpy(argv, cases[i], sizeof(cases[i]));
        kt_run(&p, argv, dir, NULL, 30);
        ck_assert_msg(p.status == 2, "case %zu exited %d", i, p.status);
        ck_assert_msg(strstr(p.err, "usage") || strstr(p.err, "eddy-kernel:"), "case %zu: %s", i,
                      p.err);
        kt_proc_free(&p);
    }
}
END_TEST

START_TEST(version_names_python_and_protocol)
{
    kt_proc p;
    kt_run(&p, (const char *[]){KERNEL_BIN, "--version", NULL}, dir, NULL, 30);
    ck_assert_int_eq(p.status, 0);
    ck_assert_ptr_nonnull(strstr(p.out, "Python 3."));
    ck_assert_ptr_nonnull(strstr(p.out, "5.3"));
    kt_proc_free(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_script");
    TCase *t = tcase_create("script");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, script_sees_argv_and_runs_as_main);
    tcase_add_test(t, script_sys_exit_code_is_the_exit_status);
    tcase_add_test(t, script_uncaught_exception_exits_1_with_traceback);
    tcase_add_test(t, script_stdout_and_stderr_pass_through_separately);
    tcase_add_test(t, script_folder_is_first_on_sys_path);
    tcase_add_test(t, script_imports_numpy_from_debian);
    tcase_add_test(t, eddy_pythonpath_decides_where_paddle_comes_from);
    tcase_add_test(t, default_sys_path_has_the_framework_python_folders);
    tcase_add_test(t, run_module_runs_it_as_main);
    tcase_add_test(t, missing_script_exits_2_naming_it);
    tcase_add_test(t, bad_command_lines_exit_2_with_usage);
    tcase_add_test(t, version_names_python_and_protocol);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
