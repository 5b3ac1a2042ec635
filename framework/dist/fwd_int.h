/* fwd_int.h: private to framework/dist/. */
#ifndef FWD_INT_H
#define FWD_INT_H

/* Sets this thread's message (fwd_error_last); returns code. */
int fwd__error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
