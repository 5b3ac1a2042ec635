/*
 * fuzz_kernel_frame.c - the kernel socket's framing (kr_frame_read) and
 * message envelope (kr_msg_recv): what the gateway reads from a kernel
 * process running untrusted user code.
 *
 * Input: the byte stream as the reader would see it on the socket, served
 * from an in-memory file. Messages are read until the stream ends or
 * becomes unusable; each one is checked against kr.h's contract.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "kr.h"

#define MAX_FRAME (1u << 20)   /* small, so a huge prefix is refused quickly */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(path, data, size);
    int err;

    /* Raw frames first: each one a NUL-terminated copy of its payload. */
    for (;;) {
        char *buf;
        size_t len;
        err = kr_frame_read(&buf, &len, fd, MAX_FRAME);
        if (err != 0) {
            if (buf != NULL || len != 0)
                abort();
            break;
        }
        if (len > MAX_FRAME || buf[len] != '\0')
            abort();
        free(buf);
    }
    if (err != ED_ENOTFOUND && err != ED_EIO && err != ED_ETOOBIG)
        abort();

    /* Then the same stream as messages. */
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    for (;;) {
        json_t *m = NULL;
        err = kr_msg_recv(&m, fd, MAX_FRAME);
        if (err == ED_EINVAL)
            continue;   /* a bad message: the stream stays usable */
        if (err != 0)
            break;
        if (!json_is_object(m))
            abort();
        (void)strlen(kr_msg_type(m));
        (void)strlen(kr_msg_channel(m));
        (void)strlen(kr_msg_id(m));
        json_decref(m);
    }
    ed_error_clear();
    return 0;
}
