/*
 * serve_wire.h - private to serving/: the framed protocol between the hub
 * and a replica (eddy-serve-replica) over a stream socketpair.
 *
 * A frame is a 12-byte header (u32 magic "EDSV", u32 type, u32 length,
 * little-endian) and `length` bytes of payload, at most SERVE_FRAME_MAX.
 * Frames: HELLO (replica -> hub, once, after loading: u32 status, then the
 * model's message or nothing), RUN (hub -> replica: tensors), RESULT
 * (replica -> hub: u32 status; 0 then tensors, else a message). A tensor is
 * u16 name length, the name, u8 dtype (fw_dtype), u8 ndim, ndim x i64
 * dims, u64 nbytes, the bytes; a tensor list is u32 count then tensors.
 * Every field is bounds-checked on decode: a malformed frame is an error,
 * never a read past the payload. Plain libc: the replica links it alone.
 */
#ifndef SERVE_WIRE_H
#define SERVE_WIRE_H

#include "serve.h"

#include <stddef.h>
#include <stdint.h>

#define SERVE_WIRE_MAGIC 0x56534445u  /* "EDSV" */
#define SERVE_FRAME_MAX  (256u << 20)
enum { SERVE_W_HELLO = 1, SERVE_W_RUN = 2, SERVE_W_RESULT = 3 };

typedef struct serve_wbuf {
    char  *p;
    size_t len, cap;
    int    oom;
} serve_wbuf;

void serve__wbuf_put(serve_wbuf *b, const void *p, size_t n);
void serve__wbuf_u32(serve_wbuf *b, uint32_t v);
/* Append a tensor list. */
void serve__wbuf_tensors(serve_wbuf *b, const serve_tensor *t, int n);

/* Write a whole frame (retrying EINTR and short writes). 0 or -1 (errno). */
int serve__frame_write(int fd, uint32_t type, const void *payload, size_t len);
/* Read one frame within timeout_ms (-1: forever): 0 with *type, *out
 * (malloc'd, caller frees) and *len; -1 on EOF, error, bad magic, a frame
 * over `max`, or timeout (errno ETIMEDOUT). */
int serve__frame_read(int fd, uint32_t *type, char **out, size_t *len, size_t max, int timeout_ms);

/* Decode a tensor list at p[*off..len): tensors' data malloc'd into t[]
 * (caller frees each .data). 0, or -1 with a message in `err` (cap bytes). */
int serve__decode_tensors(serve_tensor *t, int *n, int max, const char *p, size_t len, size_t *off, char *err,
                          size_t cap);
int serve__decode_u32(uint32_t *v, const char *p, size_t len, size_t *off);

/* numel x size of `dtype`, or 0 (with *bad set) when a dim is negative or
 * the product overflows `limit`. */
size_t serve__tensor_bytes(fw_dtype dtype, int ndim, const int64_t *shape, size_t limit, int *bad);

#endif
