#include "ed_error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_message[1024];
static _Thread_local int last_code;

int ed_error_set(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_message, sizeof(last_message), fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

const char *ed_error_last(void) { return last_message; }
int ed_error_code(void) { return last_code; }

void ed_error_clear(void)
{
    last_message[0] = '\0';
    last_code = ED_OK;
}

const char *ed_error_name(int code)
{
    switch (code) {
    case ED_OK:        return "ok";
    case ED_EINVAL:    return "invalid";
    case ED_ENOMEM:    return "out_of_memory";
    case ED_ENOTFOUND: return "not_found";
    case ED_EEXISTS:   return "exists";
    case ED_EPERM:     return "forbidden";
    case ED_EAUTH:     return "unauthorized";
    case ED_ETOOBIG:   return "too_big";
    case ED_EUNPROC:   return "unprocessable";
    case ED_EQUOTA:    return "quota_exceeded";
    case ED_ELIMIT:    return "rate_limited";
    case ED_EIO:       return "io";
    case ED_EBUSY:     return "busy";
    case ED_ECONFLICT: return "conflict";
    case ED_EINTERNAL: return "internal";
    case ED_EPRECOND:  return "precondition_failed";
    }
    return "unknown";
}
