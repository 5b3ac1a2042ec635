/* error.c - the thread-local last error (fw_error_set/fw_error_last). */
#include "fw/tensor.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local int last_code;
static _Thread_local char last_msg[512];

int fw_error_set(int code, const char *fmt, ...)
{
    va_list ap;

    last_code = code;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
    return code;
}

const char *fw_error_last(void) { return last_msg; }

int fw_error_code(void) { return last_code; }

void fw_error_clear(void)
{
    last_code = FW_OK;
    last_msg[0] = '\0';
}

const char *fw_error_name(int code)
{
    switch (code) {
    case FW_OK: return "ok";
    case FW_EINVAL: return "invalid";
    case FW_ENOMEM: return "no_memory";
    case FW_ESHAPE: return "shape";
    case FW_EDTYPE: return "dtype";
    case FW_EAXIS: return "axis";
    case FW_EDEVICE: return "device";
    case FW_EGRAD: return "grad";
    case FW_EIO: return "io";
    case FW_EFORMAT: return "format";
    case FW_ERANGE: return "range";
    case FW_EUNSUPPORTED: return "unsupported";
    case FW_EINTERNAL: return "internal";
    default: return "unknown";
    }
}
