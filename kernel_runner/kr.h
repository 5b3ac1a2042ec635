/*
 * kr.h - eddy-kernel, the process that runs notebooks and scripts, and the
 * framing of the socket it speaks Jupyter messages over.
 *
 * The program (kr_main) has three modes:
 *
 *     eddy-kernel run FILE.py [ARGS...]        a script, like python would
 *     eddy-kernel run NB.ipynb --out OUT.ipynb [--allow-errors] [--timeout S]
 *     eddy-kernel serve --fd N | --connect ADDR [--token T]
 *
 * Serve mode speaks Jupyter messaging 5.3 over one stream socket. Each frame
 * is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON:
 * one message, with a "channel" field ("shell", "iopub", "stdin",
 * "control") since all channels share the socket. README.md describes the
 * messages. The gateway and the tests use the functions below to speak it.
 *
 *     json_t *m;
 *     kr_msg_new(&m, "shell", "kernel_info_request", session, NULL, json_object());
 *     kr_msg_send(fd, m);
 *     json_decref(m);
 *     kr_msg_recv(&m, fd, KR_FRAME_MAX);   // status busy, reply, status idle...
 */
#ifndef KR_H
#define KR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define KR_PROTOCOL_VERSION "5.3"
#define KR_FRAME_MAX        (64u * 1024u * 1024u)  /* bytes of JSON in one frame */
#define KR_FRAME_HDR        4                      /* bytes of length prefix */
/* The largest frame a kernel may send (kernel -> gateway): the gateway stops a
 * kernel that announces more (stop reason protocol_error), and serve mode
 * never sends more (a larger stream is split, a larger display is replaced
 * by a notice). 8 MiB holds a ~6 MiB PNG once base64'd with its envelope. */
#define KR_OUT_FRAME_MAX    (8u * 1024u * 1024u)
/* Serve mode never sends faster than this many bytes a second (beyond a
 * one-second burst): its writes wait instead. The gateway stops a kernel
 * sending more than twice as fast (it is then not eddy-kernel speaking). */
#define KR_OUT_RATE_MAX     (32u * 1024u * 1024u)
/* Serve mode moves its socket to the lowest free descriptor at or above this
 * (close-on-exec), out of the way of code that assumes small numbers. */
#define KR_SOCKET_FD_MIN    900

/* ---- terminals ---------------------------------------------------------------- */
/* Serve mode runs terminals (a login shell on a pty, inside the kernel's
 * sandbox) on the same socket. To the kernel, on any channel ("control" by
 * convention): eddy_terminal_open {name, rows?, cols?, cwd?},
 * eddy_terminal_input {name, data}, eddy_terminal_resize {name, rows, cols},
 * eddy_terminal_close {name}. From it, on channel "terminal":
 * eddy_terminal_opened {name}, eddy_terminal_error {name, error, code},
 * eddy_terminal_output {name, data}, eddy_terminal_exit {name, status}.
 * The reader thread acts on them at once, whatever Python does. */
#define KR_TERM_OPEN     "eddy_terminal_open"
#define KR_TERM_INPUT    "eddy_terminal_input"
#define KR_TERM_RESIZE   "eddy_terminal_resize"
#define KR_TERM_CLOSE    "eddy_terminal_close"
#define KR_TERM_OPENED   "eddy_terminal_opened"
#define KR_TERM_ERROR    "eddy_terminal_error"
#define KR_TERM_OUTPUT   "eddy_terminal_output"
#define KR_TERM_EXIT     "eddy_terminal_exit"
#define KR_TERM_PREFIX   "eddy_terminal_"
#define KR_TERM_CHANNEL  "terminal"
#define KR_TERM_MAX       4                 /* terminals per kernel */
#define KR_TERM_NAME_MAX  32                /* [A-Za-z0-9_-]{1,32} */
#define KR_TERM_CHUNK     8192              /* bytes of pty output per frame (JSON-escaped < 64 KiB) */
#define KR_TERM_INPUT_MAX (64 * 1024)       /* input bytes a terminal may hold unread */
#define KR_TERM_RATE      (1024 * 1024)     /* output bytes a second, all terminals together */

/* ---- frames ----------------------------------------------------------------- */

/* Write the 4-byte big-endian prefix of a `len`-byte frame into `hdr`. */
void kr_frame_header(unsigned char hdr[KR_FRAME_HDR], uint32_t len);

/* The length a 4-byte prefix announces. */
uint32_t kr_frame_length(const unsigned char hdr[KR_FRAME_HDR]);

/* Write one frame (prefix + `len` bytes) to `fd`, all of it, retrying on
 * EINTR and short writes. ED_ETOOBIG when len > KR_FRAME_MAX, ED_EIO when the
 * write fails (the peer closed: EPIPE; callers should ignore SIGPIPE). */
int kr_frame_write(int fd, const void *buf, size_t len);

/* Read one frame from `fd`, blocking. *out gets a malloc'd NUL-terminated
 * copy of the payload (caller frees), *out_len its length. ED_ENOTFOUND when
 * the peer closed the connection cleanly between frames; ED_EIO on a read
 * error or a connection closed inside a frame; ED_ETOOBIG when the prefix
 * announces more than `max` bytes (the stream is then unusable). */
int kr_frame_read(char **out, size_t *out_len, int fd, size_t max);

/* The string value of the first `"key"` in the `n` bytes at `p` (the start
 * of a frame), whitespace allowed around the colon, searched after the first
 * `after` (a literal, e.g. "\"header\"") when that is not NULL. Into `out`
 * (NUL-terminated); "" when absent, not a string, escaped, cut off or longer
 * than outn-1. Never reads past p+n. A heuristic for a reader that must
 * classify a large frame before (or instead of) parsing it: eddy-kernel's
 * frames name their channel, then a header with msg_id and msg_type, first. */
void kr_frame_peek(char *out, size_t outn, const char *p, size_t n, const char *after, const char *key);

/* ---- messages ------------------------------------------------------------------ */

/* A new Jupyter message: {channel, header{msg_id, msg_type, session,
 * username, date, version}, parent_header, metadata, content, msg_id,
 * msg_type, buffers}. `parent_header` may be NULL ({}); it is copied.
 * `content` is taken (even on failure); NULL means {}. Caller json_decref()s
 * *out. ED_EINVAL for a NULL channel or type, ED_ENOMEM. */
int kr_msg_new(json_t **out, const char *channel, const char *msg_type, const char *session,
               const json_t *parent_header, json_t *content);

/* Serialise `msg` and write it as one frame. ED_ENOMEM, ED_ETOOBIG, ED_EIO. */
int kr_msg_send(int fd, const json_t *msg);

/* Read one frame and parse it as a message: a JSON object whose header is an
 * object with a string msg_type. *out is a new reference. Errors as
 * kr_frame_read, plus ED_EINVAL for a frame that is not such a message (the
 * stream stays usable). */
int kr_msg_recv(json_t **out, int fd, size_t max);

/* Borrowed fields of a message ("" when absent): its msg_type (header's),
 * its channel ("shell" when absent), its header's msg_id. */
const char *kr_msg_type(const json_t *msg);
const char *kr_msg_channel(const json_t *msg);
const char *kr_msg_id(const json_t *msg);

/* A random 32-hex-digit id (a UUID4's digits) into `out`. */
void kr_msg_new_id(char out[33]);

/* ---- the program ------------------------------------------------------------------ */

/* Run eddy-kernel with its command line; returns the process exit status:
 * the script's for `run FILE.py`, 0/1 for a notebook (1: a cell failed),
 * 0 for serve after a shutdown or a closed connection, 2 for usage errors. */
int kr_main(int argc, char **argv);

#endif
