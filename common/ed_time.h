/*
 * ed_time.h - time as integer milliseconds since the Unix epoch (UTC), as the
 * store keeps it, and monotonic clocks for measuring durations.
 */
#ifndef ED_TIME_H
#define ED_TIME_H

#include <stddef.h>
#include <stdint.h>

/* Wall-clock milliseconds since 1970-01-01T00:00:00Z. */
int64_t ed_now_ms(void);
/* Monotonic nanoseconds (arbitrary origin) for durations and timeouts. */
int64_t ed_mono_ns(void);
/* Format `ms` as RFC 3339 with milliseconds, "2026-11-30T06:18:21.123Z", into
 * `out` (at least 25 bytes). Returns out. */
char *ed_time_rfc3339(char *out, size_t outlen, int64_t ms);
/* Milliseconds at the most recent 00:00 UTC at or before `ms`. */
int64_t ed_time_day_start_ms(int64_t ms);

#define ED_RFC3339_LEN 32

#endif
