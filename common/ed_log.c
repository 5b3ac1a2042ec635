#include "ed_log.h"
#include "ed_buf.h"
#include "ed_time.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static ed_log_level min_level = ED_LOG_INFO;
static int log_fd = 2;
static _Thread_local char request_id[64];

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void ed_log_set_level(ed_log_level level) { min_level = level; }

void ed_log_init(int fd)
{
    const char *env = getenv("EDDY_LOG_LEVEL");

    log_fd = fd;
    if (env == NULL)
        return;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(env, level_names[i]) == 0)
            min_level = (ed_log_level)i;
}

void ed_log_set_request_id(const char *id)
{
    if (id == NULL)
        request_id[0] = '\0';
    else
        snprintf(request_id, sizeof(request_id), "%s", id);
}

/* Append `s` as a JSON string body (no quotes), escaping what JSON requires. */
static void json_escape(ed_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            ed_buf_printf(b, "\\%c", c);
        else if (c == '\n')
            ed_buf_puts(b, "\\n");
        else if (c < 0x20)
            ed_buf_printf(b, "\\u%04x", c);
        else
            ed_buf_append(b, s, 1);
    }
}

void ed_log(ed_log_level level, const char *event, const char *fmt, ...)
{
    char ts[ED_RFC3339_LEN], msg[2048];
    ed_buf b = {0};
    va_list ap;

    if (level < min_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ed_time_rfc3339(ts, sizeof(ts), ed_now_ms());
    ed_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"event\":\"", ts, level_names[level]);
    json_escape(&b, event);
    ed_buf_puts(&b, "\"");
    if (request_id[0])
        ed_buf_printf(&b, ",\"request_id\":\"%s\"", request_id);
    ed_buf_puts(&b, ",\"msg\":\"");
    json_escape(&b, msg);
    ed_buf_puts(&b, "\"}\n");
    if (b.data && write(log_fd, b.data, b.len) < 0) {
        /* nowhere left to report a failed log write */
    }
    ed_buf_free(&b);
}
