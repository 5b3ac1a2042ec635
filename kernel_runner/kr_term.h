/*
 * kr_term.h - private to kernel_runner/: terminals inside eddy-kernel
 * (kr_term.c). No Python: kr_serve.c's reader thread hands eddy_terminal_*
 * messages over; tests drive it directly.
 *
 *     kr__terms *ts;
 *     kr__terms_new(&ts, "/home/aistudio/work", send, k);   // send(payload, type, content)
 *     kr__terms_handle(ts, "eddy_terminal_open", content);   // {name, rows?, cols?, cwd?}
 *     ...                                                      // send gets eddy_terminal_output ...
 *     kr__terms_free(ts);                                      // every shell killed
 */
#ifndef KR_TERM_H
#define KR_TERM_H

#include <jansson.h>
#include <stddef.h>

#include "kr.h"

typedef struct kr__terms kr__terms;

/* Frame one message of `msg_type` on the "terminal" channel; `content` is
 * taken (NULL when it could not be built: send nothing). From the relay
 * thread and from kr__terms_handle's caller; must be thread-safe. */
typedef int (*kr__term_send_fn)(void *payload, const char *msg_type, json_t *content);

/* A terminal table whose shells start in `cwd` (NULL: the current
 * directory). The relay thread starts with the first terminal. ED_ENOMEM, ED_EIO. */
int kr__terms_new(kr__terms **out, const char *cwd, kr__term_send_fn send, void *payload);

/* Act on one eddy_terminal_* message (`type`, its `content`):
 *   open   {name, rows?, cols?, cwd?}  a login shell on a new pty; answered
 *          with eddy_terminal_opened {name} or eddy_terminal_error {name,
 *          error, code} (ED_EEXISTS, ED_ELIMIT past KR_TERM_MAX, ED_EIO
 *          without a pty, ED_ENOTFOUND for a cwd that is not a folder)
 *   input  {name, data}   bytes for the shell (ED_ELIMIT when it has
 *          KR_TERM_INPUT_MAX bytes it did not read yet)
 *   resize {name, rows, cols}
 *   close  {name}         the shell's session gets SIGHUP, then SIGKILL
 * Output comes as eddy_terminal_output {name, data} and the end as
 * eddy_terminal_exit {name, status} (the exit code, 128 + a signal, -1
 * unknown). Returns 0 or the error (also for messages that get no answer). */
int kr__terms_handle(kr__terms *ts, const char *type, const json_t *content);

/* Open terminals (not closing). */
int kr__terms_count(kr__terms *ts);

/* Stop the relay and kill every shell's session (SIGHUP, then SIGKILL).
 * No exit messages are sent. NULL-safe. */
void kr__terms_free(kr__terms *ts);

/* `n` bytes of pty output as valid UTF-8 into `out` (room for 3n bytes):
 * invalid bytes become U+FFFD; a character cut at the end goes to `tail`
 * (*tail_len bytes, at most 3) for the next read. The output length. */
size_t kr__utf8_clean(char *out, const unsigned char *in, size_t n, unsigned char *tail, size_t *tail_len);

#endif
