/*
 * metrics.h - private to gateway/: request counters and latency histograms
 * for GET /metrics (Prometheus text format 0.0.4).
 *
 * Labels are bounded: `route` is the matched pattern ("/api/v1/projects/{id}")
 * or "unmatched", never the raw path; unknown methods count as "OTHER".
 * Thread-safe (one mutex; an observation is a short linear scan).
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stddef.h>

struct gw_metrics;

/* A new, empty registry; the process start time is taken now. Free with
 * gw__metrics_free(). ED_ENOMEM. */
int gw__metrics_new(struct gw_metrics **out);
/* NULL-safe. */
void gw__metrics_free(struct gw_metrics *m);
/* Count one finished request. `route` must outlive the registry (a pattern
 * from a route table or a string literal). NULL `m` is ignored. */
void gw__metrics_observe(struct gw_metrics *m, const char *method, const char *route, int status,
                         double seconds);
/* Render every series as Prometheus text into a malloc'd *out (caller frees).
 * ED_ENOMEM. */
int gw__metrics_render(char **out, size_t *len, struct gw_metrics *m);

/* Process-wide connection figures, rendered with the registry's (atomics:
 * safe and cheap from any thread). ws.c counts its own (gw__ws_counts). */
enum {
    GW_STAT_CONNECTIONS,      /* gauge: HTTP connections open (WebSockets and streams included) */
    GW_STAT_CONN_REFUSED,     /* counter: refused by the per-address / fair-share policy */
    GW_STAT_HEADER_TIMEOUTS,  /* counter: closed for not sending their headers in time */
    GW_STAT_COUNT
};
void gw__stat_add(int which, long long delta);

/* Whether `req` may read /metrics under cfg.metrics_access: "public"
 * (anyone), "admin" (an authenticated admin), "loopback" (the default: a
 * peer on 127.0.0.0/8 or ::1, or an admin). 0, or ED_EAUTH (anonymous) /
 * ED_EPERM (authenticated, not an admin) with a message. The route is
 * GW_AUTH_OPTIONAL so that an admin's credentials are read. */
struct gw_request;
int gw__metrics_access_check(const struct gw_request *req);

#endif
