#include "ed_time.h"

#include <stdio.h>
#include <time.h>

int64_t ed_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ed_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

char *ed_time_rfc3339(char *out, size_t outlen, int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    int millis = (int)(ms % 1000);
    struct tm tm;

    if (millis < 0) {
        millis += 1000;
        secs -= 1;
    }
    gmtime_r(&secs, &tm);
    snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    return out;
}

int64_t ed_time_day_start_ms(int64_t ms)
{
    const int64_t day = 86400000;
    int64_t r = ms % day;

    return r < 0 ? ms - r - day : ms - r;
}
