/*
 * fuzz_kernel_frame.c - the kernel socket's framing (kr_frame_read) and
 * message envelope (kr_msg_recv): what the gateway reads from a kernel
 * process running untrusted user code.
 *
 * Input: the byte stream as the reader would see it on the socket, served
 * from an in-memory file (and, first, as the prefix kr_frame_peek classifies). Messages are read until the stream ends or
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

    /* The prefix peek the gateway uses on large frames: bounded, terminated. */
    {
        static const char *const keys[][2] = {{NULL, "channel"}, {"\"header\"", "msg_type"},
                                              {"\"parent_header\"", "msg_id"}, {NULL, ""}};
        size_t outns[] = {1, 8, 64};
        char out[64];
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            for (size_t j = 0; j < sizeof(outns) / sizeof(outns[0]); j++) {
                memset(out, 'x', sizeof(out));
                kr_frame_peek(out, outns[j], (const char *)data, size, keys[i][0], keys[i][1]);
                if (memchr(out, '\0', outns[j]) == NULL || strchr(out, '"') != NULL)
                    abort();
            }
    }

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
