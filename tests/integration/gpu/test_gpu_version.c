/*
 * test_gpu_version.c - GET /api/v1/version's `cuda` is true only when the
 * framework's CUDA backend was built (its plugin next to the paddle package
 * jobs import) and NVML reports a GPU; the server never loads CUDA to find
 * out. Runs on any host: the GPUs come from the fake NVML (fake_nvml.c),
 * the plugin from a stand-in file the server must only find, never open.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char pkg[128];      /* an EDDY_PADDLE_DIR: <pkg>/paddle/ */

/* /api/v1/version of a server started with `env`; its `cuda` and detail. */
static int version_cuda(const char *const *env, char *detail, size_t n)
{
    it_server s;
    it_resp r;
    int cuda;

    ck_assert_int_eq(it_server_start(&s, env), 0);
    ck_assert_int_eq(it_request(&r, &s, "GET", "/api/v1/version", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_is_boolean(json_object_get(r.json, "cuda")));
    ck_assert(json_is_boolean(json_object_get(r.json, "cuda_toolkit")));
    cuda = json_is_true(json_object_get(r.json, "cuda"));
    snprintf(detail, n, "%s", it_json_str(r.json, "cuda_detail"));
    ck_assert_msg(cuda ? json_is_null(json_object_get(r.json, "cuda_detail")) : detail[0] != '\0',
                  "cuda_detail: %s", r.body);
    it_resp_free(&r);
    ck_assert_int_eq(it_server_stop(&s), 0);
    return cuda;
}

START_TEST(cuda_is_false_without_an_nvml_gpu)
{
    char pdir[200], detail[400];
    const char *env[] = {"EDDY_NVML_LIB=/nonexistent/libnvidia-ml.so.1", pdir, NULL};

    snprintf(pdir, sizeof(pdir), "EDDY_PADDLE_DIR=%s", pkg);
    /* the plugin is there, but no driver */
    ck_assert_int_eq(version_cuda(env, detail, sizeof(detail)), 0);
    ck_assert_msg(strstr(detail, "NVML reports no GPU") != NULL, "%s", detail);
    /* NVML there, with no device */
    const char *env0[] = {"EDDY_NVML_LIB=" FAKE_NVML_LIB, "FAKE_NVML_GPUS=0", pdir, NULL};
    ck_assert_int_eq(version_cuda(env0, detail, sizeof(detail)), 0);
    ck_assert_msg(strstr(detail, "NVML reports no GPU") != NULL, "%s", detail);
}
END_TEST

START_TEST(cuda_is_false_without_the_plugin)
{
    char pdir[200], detail[400], empty[160];
    const char *env[] = {"EDDY_NVML_LIB=" FAKE_NVML_LIB, "FAKE_NVML_GPUS=2", pdir, NULL};

    snprintf(empty, sizeof(empty), "%s/empty", pkg);
    ck_assert(mkdir(empty, 0755) == 0 || errno == EEXIST);
    snprintf(pdir, sizeof(pdir), "EDDY_PADDLE_DIR=%s", empty);
    ck_assert_int_eq(version_cuda(env, detail, sizeof(detail)), 0);
    ck_assert_msg(strstr(detail, "without its CUDA backend") != NULL, "%s", detail);
}
END_TEST

START_TEST(cuda_is_true_with_the_plugin_and_an_nvml_gpu)
{
    char pdir[200], detail[400];
    const char *env[] = {"EDDY_NVML_LIB=" FAKE_NVML_LIB, "FAKE_NVML_GPUS=1", pdir, NULL};

    snprintf(pdir, sizeof(pdir), "EDDY_PADDLE_DIR=%s", pkg);
    ck_assert_int_eq(version_cuda(env, detail, sizeof(detail)), 1);
}
END_TEST

int main(void)
{
    char path[200];
    int fd, failed;

    /* a package folder with a stand-in plugin: garbage, so loading it
     * (which the server must not do) would fail loudly */
    snprintf(pkg, sizeof(pkg), "/tmp/eddy-it-gpuver-XXXXXX");
    if (mkdtemp(pkg) == NULL)
        return 1;
    snprintf(path, sizeof(path), "%s/paddle", pkg);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/paddle/libeddy_fw_cuda.so", pkg);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 || write(fd, "not an ELF\n", 11) != 11)
        return 1;
    close(fd);
    it_share_with_server(pkg);

    Suite *su = suite_create("gpu_version");
    TCase *tc = tcase_create("version");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cuda_is_false_without_an_nvml_gpu);
    tcase_add_test(tc, cuda_is_false_without_the_plugin);
    tcase_add_test(tc, cuda_is_true_with_the_plugin_and_an_nvml_gpu);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    it_dir_remove(pkg);
    return failed ? 1 : 0;
}
