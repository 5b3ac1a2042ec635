/*
 * fuzz.h - shared by the fuzz targets in tests/fuzz/.
 *
 * Each target defines LLVMFuzzerTestOneInput(). It is linked either with
 * libFuzzer (preset `fuzz`, EDDY_FUZZ=ON) or with replay_main.c, which runs
 * it over every file of the committed corpus (CTest label `fuzz`).
 *
 * Rules for a target: never crash, leak or hit undefined behaviour on any
 * input; free everything it allocates before returning; keep no state between
 * calls that changes what the next input does.
 */
#ifndef EDDY_FUZZ_H
#define EDDY_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated malloc'd copy of `n` bytes (the input may hold NULs, which
 * then end the C string early: that is the view a C API gets). Aborts when
 * out of memory: a fuzz run cannot continue anyway. */
static inline char *fuzz_strndup(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (s == NULL)
        abort();
    if (n > 0)
        memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* An anonymous in-memory file holding exactly `data` (created once per
 * process, rewritten on each call), with its offset at 0. `path` gets a name
 * open()/fopen() accept: "/proc/self/fd/N". Nothing is left on disk. */
static inline int fuzz_memfile(char path[64], const uint8_t *data, size_t n)
{
    static int fd = -1;
    size_t off = 0;

    if (fd < 0 && (fd = memfd_create("eddy-fuzz", MFD_CLOEXEC)) < 0) {
        perror("memfd_create");
        abort();
    }
    if (ftruncate(fd, 0) != 0)
        abort();
    while (off < n) {
        ssize_t w = pwrite(fd, data + off, n - off, (off_t)off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
