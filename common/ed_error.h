/*
 * ed_error.h - error codes and the thread-local last-error message.
 *
 * A function that can fail returns int: 0, or a negative ED_E* code after
 * setting a message once with ed_error_set(). Callers that pass the error up
 * return the code unchanged; the message stays. Only gateway/ maps codes to
 * HTTP statuses.
 *
 *     if (n < 0)
 *         return ed_error_set(ED_EINVAL, "limit %d is negative", n);
 */
#ifndef ED_ERROR_H
#define ED_ERROR_H

enum {
    ED_OK        = 0,
    ED_EINVAL    = -1,   /* bad input: malformed, wrong type, out of range */
    ED_ENOMEM    = -2,   /* allocation failed */
    ED_ENOTFOUND = -3,   /* no such object (or not visible to the caller) */
    ED_EEXISTS   = -4,   /* conflicts with an existing object */
    ED_EPERM     = -5,   /* authenticated but not allowed */
    ED_EAUTH     = -6,   /* not authenticated */
    ED_ETOOBIG   = -7,   /* over a size limit */
    ED_EUNPROC   = -8,   /* well-formed but semantically refused (bad notebook) */
    ED_EQUOTA    = -9,   /* over a quota or out of funds */
    ED_ELIMIT    = -10,  /* rate limited */
    ED_EIO       = -11,  /* filesystem, database, or library failure */
    ED_EBUSY     = -12,  /* temporarily unavailable */
    ED_ECONFLICT = -13,  /* state conflict (idempotency key reused, stale) */
    ED_EINTERNAL = -14,  /* a bug: an invariant did not hold */
    ED_EPRECOND  = -15   /* a precondition failed (If-Match: the object changed) */
};

/* Set the thread's last error to `code` and a printf-formatted message.
 * Returns `code`, so it can be returned directly. */
int ed_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The thread's last message (borrowed, valid until the next ed_error_set on
 * this thread); "" when none was set. */
const char *ed_error_last(void);

/* The thread's last code, ED_OK when none was set. */
int ed_error_code(void);

/* Forget the thread's last error. */
void ed_error_clear(void);

/* A stable lower-case name for a code: "invalid", "not_found", ... */
const char *ed_error_name(int code);

#endif
