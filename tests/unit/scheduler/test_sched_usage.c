/* Unit tests for the live meters' arithmetic (scheduler/usage.c,
 * gpu_usage.c): CPU % from two readings, and GPU figures through a fake
 * NVML table (devices matched by minor number, errors left unknown). */
#include "sched.h"
#include "sched_int.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

START_TEST(cpu_percent_is_of_one_core)
{
    ck_assert(sched_cpu_percent(1000000, 1000) == 100.0);   /* one core for a second */
    ck_assert(sched_cpu_percent(2500000, 1000) == 250.0);   /* two and a half cores */
    ck_assert(sched_cpu_percent(370000, 1000) == 37.0);
    ck_assert(sched_cpu_percent(0, 2000) == 0.0);
    ck_assert(sched_cpu_percent(1, 3) == 0.0);              /* rounded to a tenth */
    ck_assert(sched_cpu_percent(1234, 10) == 12.3);
}
END_TEST

START_TEST(cpu_percent_unknown_without_a_window)
{
    ck_assert(sched_cpu_percent(-1, 1000) < 0);
    ck_assert(sched_cpu_percent(1000, 0) < 0);
    ck_assert(sched_cpu_percent(1000, -5) < 0);
}
END_TEST

/* A fake NVML: three devices at indices 0..2 whose minor numbers are 2, 0, 1
 * (PCI order is not minor order); device index 2 fails its utilisation. */
static int dev_ids[3] = {0, 1, 2};
static const unsigned minors[3] = {2, 0, 1};
static int fail_count;

static int f_count(unsigned *n)
{
    *n = 3;
    return fail_count ? 3 : 0;
}

static int f_by_index(unsigned i, void **dev)
{
    if (i >= 3)
        return 2;
    *dev = &dev_ids[i];
    return 0;
}

static int f_minor(void *dev, unsigned *minor)
{
    *minor = minors[*(int *)dev];
    return 0;
}

static int f_util(void *dev, unsigned *gpu, unsigned *mem)
{
    int i = *(int *)dev;
    if (i == 2)
        return 999;
    *gpu = 10 + 40u * (unsigned)i;
    *mem = 5;
    return 0;
}

static int f_memory(void *dev, uint64_t *total, uint64_t *free_b, uint64_t *used)
{
    int i = *(int *)dev;
    *total = 16ULL << 30;
    *used = (uint64_t)(i + 1) << 30;
    *free_b = *total - *used;
    return 0;
}

static const sched_nvml fake = {f_count, f_by_index, f_minor, f_util, f_memory, NULL, NULL};

START_TEST(gpus_are_matched_by_minor_number)
{
    sched_gpu_usage g[3];
    int devs[3] = {0, 1, 2};

    fail_count = 0;
    ck_assert_int_eq(sched_gpu_read(g, devs, 3, &fake), 3);
    /* /dev/nvidia0 is NVML index 1 */
    ck_assert_int_eq(g[0].index, 0);
    ck_assert_int_eq(g[0].util_percent, 50);
    ck_assert_int_eq(g[0].memory_bytes, 2LL << 30);
    ck_assert_int_eq(g[0].memory_total_bytes, 16LL << 30);
    /* /dev/nvidia1 is index 2, whose utilisation fails: unknown, memory known */
    ck_assert_int_eq(g[1].util_percent, -1);
    ck_assert_int_eq(g[1].memory_bytes, 3LL << 30);
    /* /dev/nvidia2 is index 0 */
    ck_assert_int_eq(g[2].util_percent, 10);
    ck_assert_int_eq(g[2].memory_bytes, 1LL << 30);
}
END_TEST

START_TEST(unknown_devices_and_a_failing_nvml_give_unknowns)
{
    sched_gpu_usage g[2];
    int devs[2] = {7, 0};

    fail_count = 0;
    ck_assert_int_eq(sched_gpu_read(g, devs, 2, &fake), 1);
    ck_assert_int_eq(g[0].index, 7);
    ck_assert_int_eq(g[0].util_percent, -1);
    ck_assert_int_eq(g[0].memory_bytes, -1);
    ck_assert_int_eq(g[0].memory_total_bytes, -1);
    ck_assert_int_eq(g[1].util_percent, 50);
    fail_count = 1;
    ck_assert_int_eq(sched_gpu_read(g, devs, 2, &fake), 0);
    ck_assert_int_eq(g[1].index, 0);
    ck_assert_int_eq(g[1].util_percent, -1);
    ck_assert_int_eq(g[1].memory_bytes, -1);
}
END_TEST

/* The real NVML where there is one; on a host without it, every figure is
 * unknown and nothing is made up. */
START_TEST(real_nvml_or_unknowns)
{
    sched_gpu_usage g[1];
    int devs[1] = {0};
    int n = sched_gpu_read(g, devs, 1, NULL);

    ck_assert_int_eq(g[0].index, 0);
    if (n == 0) {
        printf("no NVML device 0 here: figures unknown\n");
        ck_assert_int_eq(g[0].util_percent, -1);
        ck_assert_int_eq(g[0].memory_bytes, -1);
    } else {
        printf("NVML device 0: %d%% busy, %lld of %lld bytes\n", g[0].util_percent, (long long)g[0].memory_bytes,
               (long long)g[0].memory_total_bytes);
        ck_assert_int_ge(g[0].util_percent, 0);
        ck_assert_int_le(g[0].util_percent, 100);
        ck_assert_int_gt(g[0].memory_total_bytes, 0);
        ck_assert_int_le(g[0].memory_bytes, g[0].memory_total_bytes);
    }
}
END_TEST

/* Names and UUIDs for discovery: device index 2's are garbage (a control
 * character, a UUID that is not "GPU-<hex>") and must not pass through. */
static int f_name(void *dev, char *buf, unsigned len)
{
    int i = *(int *)dev;
    snprintf(buf, len, i == 2 ? "Bad\nName" : "Dev %d", i);
    return 0;
}

static int f_uuid(void *dev, char *buf, unsigned len)
{
    int i = *(int *)dev;
    snprintf(buf, len, i == 2 ? "GPU-12;rm -rf" : "GPU-0000-%04d", i);
    return 0;
}

static const sched_nvml fake_named = {f_count, f_by_index, f_minor, f_util, f_memory, f_name, f_uuid};

START_TEST(discovery_lists_gpus_in_minor_order_with_clean_names)
{
    sched_gpu g[SCHED_MAX_GPUS];

    fail_count = 0;
    ck_assert_int_eq(sched__gpu_discover(g, SCHED_MAX_GPUS, &fake_named), 3);
    /* minors 2, 0, 1 at NVML indices 0, 1, 2: sorted by minor */
    ck_assert_int_eq(g[0].minor, 0);
    ck_assert_int_eq(g[0].nvml_index, 1);
    ck_assert_str_eq(g[0].name, "Dev 1");
    ck_assert_str_eq(g[0].uuid, "GPU-0000-0001");
    ck_assert_int_eq(g[0].memory_total_bytes, 16LL << 30);
    ck_assert_int_eq(g[0].util_percent, -1);      /* live figures are not discovery's */
    ck_assert_int_eq(g[0].job_id, 0);
    ck_assert_int_eq(g[1].minor, 1);
    ck_assert_str_eq(g[1].name, "");              /* a control character: unknown */
    ck_assert_str_eq(g[1].uuid, "");              /* not GPU-<hex>: never into CUDA_VISIBLE_DEVICES */
    ck_assert_int_eq(g[2].minor, 2);
    ck_assert_str_eq(g[2].uuid, "GPU-0000-0000");
    /* at most `max` */
    ck_assert_int_eq(sched__gpu_discover(g, 1, &fake_named), 1);
    /* a failing NVML finds nothing */
    fail_count = 1;
    ck_assert_int_eq(sched__gpu_discover(g, SCHED_MAX_GPUS, &fake_named), 0);
    fail_count = 0;
}
END_TEST

START_TEST(gpu_read_names_the_device)
{
    sched_gpu_usage g[1];
    int devs[1] = {0};

    fail_count = 0;
    ck_assert_int_eq(sched_gpu_read(g, devs, 1, &fake_named), 1);
    ck_assert_str_eq(g[0].name, "Dev 1");
    ck_assert_int_eq(sched_gpu_read(g, devs, 1, &fake), 1);
    ck_assert_str_eq(g[0].name, "");              /* no name call: unknown */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sched_usage");
    TCase *t = tcase_create("usage");
    tcase_add_test(t, cpu_percent_is_of_one_core);
    tcase_add_test(t, cpu_percent_unknown_without_a_window);
    tcase_add_test(t, gpus_are_matched_by_minor_number);
    tcase_add_test(t, unknown_devices_and_a_failing_nvml_give_unknowns);
    tcase_add_test(t, real_nvml_or_unknowns);
    tcase_add_test(t, discovery_lists_gpus_in_minor_order_with_clean_names);
    tcase_add_test(t, gpu_read_names_the_device);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
