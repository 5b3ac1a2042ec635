/* metrics.c - request counters and duration histograms for /metrics, the
 * process-wide connection figures, and who may read them (metrics_access). */
#include "metrics.h"
#include "gw_int.h"

#include "ed_buf.h"
#include "ed_error.h"
#include "ed_time.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Seconds; the +Inf bucket is the count. */
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};

typedef struct counter {
    const char *method;   /* one of methods[] or "OTHER" */
    const char *route;
    int         status;
    uint64_t    n;
} counter;

typedef struct histo {
    const char *route;
    uint64_t    bucket[NBUCKETS];
    uint64_t    count;
    double      sum;
} histo;

struct gw_metrics {
    pthread_mutex_t lock;
    counter        *counters;
    size_t          ncounters, capcounters;
    histo          *histos;
    size_t          nhistos, caphistos;
    int64_t         start_ms;
    int64_t         start_mono_ns;
};

static atomic_llong stats[GW_STAT_COUNT];

static const struct {
    const char *name, *type, *help;
} stat_info[GW_STAT_COUNT] = {
    [GW_STAT_CONNECTIONS] = {"eddy_http_connections", "gauge",
                             "HTTP connections open (WebSockets and event streams included)."},
    [GW_STAT_CONN_REFUSED] = {"eddy_http_connections_refused_total", "counter",
                              "Connections refused by the per-address and fair-share limits."},
    [GW_STAT_HEADER_TIMEOUTS] = {"eddy_http_header_timeouts_total", "counter",
                                 "Connections closed for not completing their request headers "
                                 "within header_timeout_s."},
};

void gw__stat_add(int which, long long delta)
{
    if (which >= 0 && which < GW_STAT_COUNT)
        atomic_fetch_add(&stats[which], delta);
}

/* A peer on 127.0.0.0/8 or ::1 (or ::ffff:127.x.y.z). */
static bool ip_is_loopback(const char *ip)
{
    unsigned char b[16];

    if (ip == NULL)
        return false;
    if (inet_pton(AF_INET, ip, b) == 1)
        return b[0] == 127;
    if (inet_pton(AF_INET6, ip, b) == 1) {
        static const unsigned char one[16] = {[15] = 1};
        static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
        return memcmp(b, one, 16) == 0 || (memcmp(b, mapped, 12) == 0 && b[12] == 127);
    }
    return false;
}

int gw__metrics_access_check(const gw_request *req)
{
    const char *mode = req->srv->cfg.metrics_access;
    bool admin = req->auth.user_id != 0 && req->auth.role && strcmp(req->auth.role, "admin") == 0 &&
                 (req->auth.scopes & GW_SCOPE_ADMIN);

    if (strcmp(mode, "public") == 0 || admin)
        return 0;
    if (strcmp(mode, "admin") != 0 && ip_is_loopback(req->ip))
        return 0;
    if (req->auth.user_id != 0)
        return ed_error_set(ED_EPERM, "/metrics is for admins%s (metrics_access = %s)",
                            strcmp(mode, "admin") == 0 ? "" : " and loopback peers", mode);
    return ed_error_set(ED_EAUTH, "/metrics needs an admin's credentials%s (metrics_access = %s)",
                        strcmp(mode, "admin") == 0 ? "" : " from a non-loopback address", mode);
}

int gw__metrics_new(struct gw_metrics **out)
{
    struct gw_metrics *m = calloc(1, sizeof(*m));

    *out = NULL;
    if (m == NULL)
        return ed_error_set(ED_ENOMEM, "metrics");
    pthread_mutex_init(&m->lock, NULL);
    m->start_ms = ed_now_ms();
    m->start_mono_ns = ed_mono_ns();
    *out = m;
    return 0;
}

void gw__metrics_free(struct gw_metrics *m)
{
    if (m == NULL)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m->counters);
    free(m->histos);
    free(m);
}

static const char *method_label(const char *method)
{
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (method && strcmp(method, methods[i]) == 0)
            return methods[i];
    return "OTHER";
}

/* Grow an array by doubling; false when out of memory (the sample is lost). */
static bool grow(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 32;
    void *p = realloc(*arr, ncap * size);
    if (p == NULL)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

void gw__metrics_observe(struct gw_metrics *m, const char *method, const char *route, int status,
                         double seconds)
{
    const char *ml = method_label(method);
    counter *c = NULL;
    histo *h = NULL;

    if (m == NULL)
        return;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->ncounters; i++) {
        counter *x = &m->counters[i];
        if (x->status == status && x->method == ml && strcmp(x->route, route) == 0) {
            c = x;
            break;
        }
    }
    if (c == NULL && grow((void **)&m->counters, &m->capcounters, m->ncounters, sizeof(counter))) {
        c = &m->counters[m->ncounters++];
        *c = (counter){ml, route, status, 0};
    }
    if (c)
        c->n++;
    for (size_t i = 0; i < m->nhistos; i++) {
        if (strcmp(m->histos[i].route, route) == 0) {
            h = &m->histos[i];
            break;
        }
    }
    if (h == NULL && grow((void **)&m->histos, &m->caphistos, m->nhistos, sizeof(histo))) {
        h = &m->histos[m->nhistos++];
        memset(h, 0, sizeof(*h));
        h->route = route;
    }
    if (h) {
        for (size_t b = 0; b < NBUCKETS; b++)
            if (seconds <= buckets[b])
                h->bucket[b]++;
        h->count++;
        h->sum += seconds;
    }
    pthread_mutex_unlock(&m->lock);
}

/* A label value with Prometheus' escapes (\\, \", \n). */
static void label(ed_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            ed_buf_printf(b, "\\%c", *s);
        else if (*s == '\n')
            ed_buf_puts(b, "\\n");
        else
            ed_buf_append(b, s, 1);
    }
}

int gw__metrics_render(char **out, size_t *len, struct gw_metrics *m)
{
    ed_buf b = {0};

    *out = NULL;
    *len = 0;
    pthread_mutex_lock(&m->lock);
    ed_buf_puts(&b, "# HELP eddy_http_requests_total HTTP requests served, by method, route "
                    "pattern and status.\n# TYPE eddy_http_requests_total counter\n");
    for (size_t i = 0; i < m->ncounters; i++) {
        counter *c = &m->counters[i];
        ed_buf_printf(&b, "eddy_http_requests_total{method=\"%s\",route=\"", c->method);
        label(&b, c->route);
        ed_buf_printf(&b, "\",status=\"%d\"} %llu\n", c->status, (unsigned long long)c->n);
    }
    ed_buf_puts(&b, "# HELP eddy_http_request_duration_seconds Time from the request line to the "
                    "response being queued, by route pattern.\n"
                    "# TYPE eddy_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i < m->nhistos; i++) {
        histo *h = &m->histos[i];
        for (size_t k = 0; k < NBUCKETS; k++) {
            ed_buf_puts(&b, "eddy_http_request_duration_seconds_bucket{route=\"");
            label(&b, h->route);
            ed_buf_printf(&b, "\",le=\"%g\"} %llu\n", buckets[k], (unsigned long long)h->bucket[k]);
        }
        ed_buf_puts(&b, "eddy_http_request_duration_seconds_bucket{route=\"");
        label(&b, h->route);
        ed_buf_printf(&b, "\",le=\"+Inf\"} %llu\n", (unsigned long long)h->count);
        ed_buf_puts(&b, "eddy_http_request_duration_seconds_sum{route=\"");
        label(&b, h->route);
        ed_buf_printf(&b, "\"} %.6f\n", h->sum);
        ed_buf_puts(&b, "eddy_http_request_duration_seconds_count{route=\"");
        label(&b, h->route);
        ed_buf_printf(&b, "\"} %llu\n", (unsigned long long)h->count);
    }
    pthread_mutex_unlock(&m->lock);
    for (int i = 0; i < GW_STAT_COUNT; i++)
        ed_buf_printf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", stat_info[i].name,
                      stat_info[i].help, stat_info[i].name, stat_info[i].type, stat_info[i].name,
                      (long long)atomic_load(&stats[i]));
    {
        long long open, slow;
        gw__ws_counts(&open, &slow);
        ed_buf_printf(&b, "# HELP eddy_websockets WebSocket connections open.\n"
                          "# TYPE eddy_websockets gauge\neddy_websockets %lld\n"
                          "# HELP eddy_websocket_slow_peer_closes_total WebSockets closed because "
                          "the peer did not read what was sent.\n"
                          "# TYPE eddy_websocket_slow_peer_closes_total counter\n"
                          "eddy_websocket_slow_peer_closes_total %lld\n",
                      open, slow);
    }
    ed_buf_printf(&b,
                  "# HELP eddy_process_uptime_seconds Seconds since the server started.\n"
                  "# TYPE eddy_process_uptime_seconds gauge\n"
                  "eddy_process_uptime_seconds %.3f\n"
                  "# HELP process_start_time_seconds Start time of the process since the Unix "
                  "epoch in seconds.\n# TYPE process_start_time_seconds gauge\n"
                  "process_start_time_seconds %.3f\n",
                  (double)(ed_mono_ns() - m->start_mono_ns) / 1e9, (double)m->start_ms / 1e3);
    if (b.data == NULL)
        return ed_error_set(ED_ENOMEM, "metrics");
    *len = b.len;
    *out = ed_buf_steal(&b);
    return *out ? 0 : ed_error_set(ED_ENOMEM, "metrics");
}
