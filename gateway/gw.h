/*
 * gw.h - the gateway: Eddy's HTTP server (libmicrohttpd) and its
 * configuration. (The account operations operators run from the command line
 * are the accounts module's: accounts/acct.h.)
 *
 * Only gateway/ knows HTTP. `eddy serve` (cmd/serve.c) fills a gw_config from
 * defaults, a config file and EDDY_* environment variables, then calls
 * gw_server_start(); SIGTERM leads to gw_server_stop(), which lets in-flight
 * requests finish and closes the store cleanly.
 */
#ifndef GW_H
#define GW_H

#include "ed_store.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct gw_server gw_server;

/* ---- configuration --------------------------------------------------- */

typedef struct gw_config {
    char     data_dir[512];        /* DATA: eddy.db, projects/, ... */
    char     listen_host[256];     /* "127.0.0.1" */
    int      listen_port;          /* 8080; 0 picks a free port */
    char     tls_cert[512];        /* PEM file; TLS is on when both are set */
    char     tls_key[512];
    int      threads;              /* libmicrohttpd worker threads */
    int64_t  max_body_bytes;       /* larger bodies: 413 */
    int      max_header_bytes;     /* larger request headers: 431 */
    int      conn_timeout_s;       /* idle connection timeout */
    int      header_timeout_s;     /* a connection's request headers must be complete within this (s) */
    int      max_conns;            /* total connection cap; 0: from RLIMIT_NOFILE (raised to the hard limit) */
    int      max_conns_per_ip;     /* per-address cap (IPv6 per /64); fair shares below it near the cap */
    char     metrics_access[16];   /* who reads /metrics: "loopback" (and admins), "admin", "public" */
    bool     signup_open;          /* default for the admin setting signup_open */
    int64_t  user_storage_bytes;   /* per-user limit over all owned projects */
    int64_t  volume_bytes;         /* loop volume for disk quotas (sandbox/sbx_disk.c): 0 auto, -1 none */
    int      job_retention_days;   /* ended jobs' directories deleted after; 0 keeps them */
    int      login_attempts_per_min;       /* per account and per IP */
    int      default_key_rate_per_min;     /* per API key unless the key says */
    int64_t  session_ttl_ms;       /* session cookie lifetime */
    char     env_name[16];         /* "dev"|"test"|"prod": env of keys this server accepts */
    char     trusted_proxies[256]; /* comma-separated peer IPs whose X-Forwarded-For is believed */
    char     web_dir[512];         /* the built web app (web/dist); default set at compile time */
    char     user[64];             /* started as root, serve as this user ("eddy"); "root": no split */
    char     key_envs[32];         /* "dev,prod": API key envs accepted ("" = dev, test and prod) */
    char     allow_origins[1024];  /* comma-separated extra origins cookie callers may come from ("*" = any) */
    /* interactive kernels (kernels/: kh_config, kernels/README.md "Limits") */
    int      kernel_output_msgs_per_s;     /* iopub output messages a second, over the window (0: no limit) */
    int64_t  kernel_output_bytes_per_s;    /* iopub output bytes a second, over the window (0: no limit) */
    int      kernel_output_window_ms;      /* the window both rates are averaged over */
    int64_t  kernel_flood_bytes_per_s;     /* frame bytes a second past which a kernel is stopped (protocol_error) */
    int64_t  kernel_journal_max_bytes;     /* per kernel; oldest output pruned past it (0: no cap) */
    int64_t  kernel_journal_retention_ms;  /* dead kernels' journals deleted after this (0: kept) */
    int      jupyter_sessions_per_user;    /* /api/sessions rows per user */
    int      kernel_dead_journals_per_user; /* dead kernels' journals a user keeps, newest first (0: no cap) */
    int64_t  version_large_file_bytes;     /* versions keep larger files out of git (projects/README.md) */
} gw_config;

/* Fill `c` with the built-in defaults (listen 127.0.0.1:8080, data ./data, ...). */
void gw_config_defaults(gw_config *c);
/* Read a config file of `key = value` lines ('#' comments); keys are the
 * field names above. ED_EINVAL names the line of an unknown key or bad value. */
int gw_config_load_file(gw_config *c, const char *path);
/* Override from EDDY_<FIELD> environment variables (EDDY_DATA_DIR,
 * EDDY_LISTEN_PORT, ...). ED_EINVAL names a bad variable. */
int gw_config_apply_env(gw_config *c);
/* Parse "HOST:PORT" into listen_host/listen_port. ED_EINVAL on bad input. */
int gw_config_set_listen(gw_config *c, const char *hostport);

/* ---- server ------------------------------------------------------------ */

/* Open the data directory (creating it), the store and the projects root,
 * and start serving. Caller stops with gw_server_stop(). */
int gw_server_start(gw_server **out, const gw_config *cfg);
/* The port actually bound (useful with listen_port 0). */
int gw_server_port(const gw_server *srv);
/* Stop accepting, let in-flight requests finish, close the store, free.
 * NULL-safe. */
void gw_server_stop(gw_server *srv);

#endif
