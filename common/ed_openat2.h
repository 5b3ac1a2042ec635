/*
 * ed_openat2.h - what openat2(2) needs where the C library or the kernel
 * headers are older than it: struct open_how, the RESOLVE_* flags Eddy uses
 * and the syscall number. Header-only; code calls it as
 * syscall(SYS_openat2, dirfd, path, &how, sizeof(how)).
 */
#ifndef ED_OPENAT2_H
#define ED_OPENAT2_H

#include <stdint.h>
#include <sys/syscall.h>

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#else
struct open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS   0x04
#define RESOLVE_BENEATH       0x08
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#endif
