/*
 * serve.c - `eddy serve`: configuration, then the gateway until SIGTERM/SIGINT.
 *
 * Settings apply in order, later winning: built-in defaults, the --config
 * file, EDDY_* environment variables, command-line flags. Bad values exit 2.
 */
#include "cmd.h"

#include "ed_error.h"
#include "ed_log.h"
#include "gw.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: eddy serve [--data DIR] [--listen HOST:PORT] [--config FILE]\n"
               "\n"
               "  --data DIR          data directory (eddy.db, projects/); created 0700\n"
               "  --listen HOST:PORT  address to serve on; port 0 picks a free port\n"
               "  --config FILE       'key = value' settings (see deploy/eddy.conf.example)\n"
               "\n"
               "Settings: defaults < config file < EDDY_* environment < flags.\n");
}

/* "--name VALUE" or "--name=VALUE": the value, advancing *i; NULL if absent. */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "eddy serve: %s needs a value\n", name);
        return "";
    }
    return argv[++*i];
}

int cmd_serve(int argc, char **argv)
{
    const char *data = NULL, *listen = NULL, *config = NULL;
    gw_config cfg;
    gw_server *srv = NULL;
    sigset_t stop_signals;
    int sig = 0, err;

    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if ((v = flag_value(argc, argv, &i, "--data")) != NULL)
            data = v;
        else if ((v = flag_value(argc, argv, &i, "--listen")) != NULL)
            listen = v;
        else if ((v = flag_value(argc, argv, &i, "--config")) != NULL)
            config = v;
        else {
            fprintf(stderr, "eddy serve: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (*v == '\0') {
            fprintf(stderr, "eddy serve: %s has an empty value\n", argv[i]);
            return 2;
        }
    }

    gw_config_defaults(&cfg);
    if (config && gw_config_load_file(&cfg, config) < 0) {
        fprintf(stderr, "eddy serve: %s\n", ed_error_last());
        return 2;
    }
    if (gw_config_apply_env(&cfg) < 0) {
        fprintf(stderr, "eddy serve: %s\n", ed_error_last());
        return 2;
    }
    if (data) {
        if (strlen(data) >= sizeof(cfg.data_dir)) {
            fprintf(stderr, "eddy serve: --data path is too long\n");
            return 2;
        }
        snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", data);
    }
    if (listen && gw_config_set_listen(&cfg, listen) < 0) {
        fprintf(stderr, "eddy serve: --listen: %s\n", ed_error_last());
        return 2;
    }
    if ((cfg.tls_cert[0] != '\0') != (cfg.tls_key[0] != '\0')) {
        fprintf(stderr, "eddy serve: TLS needs both tls_cert and tls_key\n");
        return 2;
    }

    /* Writes to a closed client socket or stdout must fail, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    /* Block the stop signals before any thread exists so every worker
     * inherits the mask and only sigwait() below receives them. */
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    if ((err = gw_server_start(&srv, &cfg)) < 0) {
        fprintf(stderr, "eddy serve: %s\n", ed_error_last());
        ed_log_error("serve.start", "%s", ed_error_last());
        return err == ED_EINVAL ? 2 : 1;
    }
    printf("eddy: listening on %s://%s%s%s:%d\n", cfg.tls_cert[0] ? "https" : "http",
           strchr(cfg.listen_host, ':') ? "[" : "", cfg.listen_host,
           strchr(cfg.listen_host, ':') ? "]" : "", gw_server_port(srv));
    fflush(stdout);

    while (sigwait(&stop_signals, &sig) != 0)
        ;
    ed_log_info("serve.stop", "%s: no new connections; finishing in-flight requests",
                sig == SIGINT ? "SIGINT" : "SIGTERM");
    gw_server_stop(srv);
    ed_log_info("serve.stop", "stopped cleanly");
    return 0;
}
