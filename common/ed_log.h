/*
 * ed_log.h - structured logs: one JSON object per line on stderr (or a file).
 *
 *     {"ts":"2026-11-30T06:18:21.123Z","level":"info","event":"http.request",
 *      "request_id":"4f1c...","msg":"GET /healthz 200 0.3ms"}
 *
 * `event` is a stable dotted name to filter on; `msg` is for people. The
 * thread's current request id (set by the gateway for the request it is
 * serving) is added when present. Thread-safe, one order for all threads:
 * info/debug lines are batched (written within ~5 ms, and at exit()),
 * warn/error lines are written at once, after any batched ones.
 */
#ifndef ED_LOG_H
#define ED_LOG_H

typedef enum { ED_LOG_DEBUG, ED_LOG_INFO, ED_LOG_WARN, ED_LOG_ERROR } ed_log_level;

/* Lines below `level` are dropped. Default ED_LOG_INFO; env EDDY_LOG_LEVEL
 * (debug|info|warn|error) is read by ed_log_init(). */
void ed_log_set_level(ed_log_level level);
/* Read EDDY_LOG_LEVEL; send lines to `fd` (2 for stderr). */
void ed_log_init(int fd);
/* The request id attached to this thread's lines (NULL to clear). The string
 * is copied. */
void ed_log_set_request_id(const char *id);

void ed_log(ed_log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define ed_log_debug(ev, ...) ed_log(ED_LOG_DEBUG, ev, __VA_ARGS__)
#define ed_log_info(ev, ...)  ed_log(ED_LOG_INFO, ev, __VA_ARGS__)
#define ed_log_warn(ev, ...)  ed_log(ED_LOG_WARN, ev, __VA_ARGS__)
#define ed_log_error(ev, ...) ed_log(ED_LOG_ERROR, ev, __VA_ARGS__)

#endif
