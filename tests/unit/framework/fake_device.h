/*
 * fake_device.h - a stand-in FW_CUDA backend for the seam tests (header
 * only: each test file includes it once). Its memory is host memory the
 * fake tracks (on_device() tells whether a pointer is in it), marked not
 * host-accessible so ops must copy through the backend; its kernels are the
 * CPU's. fake_register() installs it with the CPU's kernel families (tests
 * then swap in NULL or recording tables: the registry keeps a pointer to
 * `fake`); fake_restore() puts back whatever FW_CUDA backend was there.
 */
#ifndef FAKE_DEVICE_H
#define FAKE_DEVICE_H

#include "fw/device.h"
#include "fw_backend.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_MAX_BLOCKS 4096
static struct {
    uintptr_t p;
    size_t n;
} fake_blocks[FAKE_MAX_BLOCKS];
static int fake_n_blocks;

static void *fake_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0)
        return NULL;
    if (fake_n_blocks < FAKE_MAX_BLOCKS) {
        fake_blocks[fake_n_blocks].p = (uintptr_t)p;
        fake_blocks[fake_n_blocks].n = n ? n : 64;
        fake_n_blocks++;
    }
    return p;
}

static void fake_free(void *p, size_t n)
{
    (void)n;
    for (int i = 0; i < fake_n_blocks; i++)
        if (fake_blocks[i].p == (uintptr_t)p) {
            fake_blocks[i] = fake_blocks[--fake_n_blocks];
            break;
        }
    free(p);
}

static int fake_copy(void *dst, fw_device dd, const void *src, fw_device sd, size_t n)
{
    (void)dd;
    (void)sd;
    memmove(dst, src, n);
    return 0;
}

/* Whether p points into memory the fake device allocated. */
static int on_device(const void *p)
{
    for (int i = 0; i < fake_n_blocks; i++)
        if ((uintptr_t)p >= fake_blocks[i].p && (uintptr_t)p < fake_blocks[i].p + fake_blocks[i].n)
            return 1;
    return 0;
}

static int fake_one_device(void) { return 1; }
static int fake_device_zero(void) { return 0; }
static const fw_device_ops fake_dev = {.count = fake_one_device, .current = fake_device_zero};

static fw_backend fake;
static const fw_backend *fake_saved_cuda;

static void fake_register(void)
{
    fake_saved_cuda = fw_backend_get(FW_CUDA);
    fake = *fw__cpu_backend();       /* the CPU's core kernels work on host memory */
    fake.name = "cuda";
    fake.device = FW_CUDA;
    fake.host_accessible = false;    /* ops must not read device data on the host */
    fake.alloc = fake_alloc;
    fake.free = fake_free;
    fake.copy = fake_copy;
    fake.caches_itself = true;       /* every block comes from fake_alloc as is */
    fake.dev = &fake_dev;
    ck_assert_int_eq(fw_backend_register(&fake), 0);
}

static void fake_restore(void)
{
    ck_assert_int_eq(fw_device_set_default(FW_CPU), 0);
    if (fake_saved_cuda != NULL)
        ck_assert_int_eq(fw_backend_register(fake_saved_cuda), 0);
}

#endif
