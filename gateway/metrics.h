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

#endif
