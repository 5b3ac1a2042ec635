/*
 * serve.c - `eddy serve`: configuration, then the gateway until SIGTERM/SIGINT.
 *
 * Settings apply in order, later winning: built-in defaults, the --config
 * file, EDDY_* environment variables, command-line flags. Bad values exit 2.
 *
 * Started as root (and `user` is not "root"), it splits privileges before
 * any thread exists (sandbox/README.md "Privilege split"):
 *   1. the data directory is created and handed to `user` (default "eddy"):
 *      every entry owned by root or a job slot uid changes hands;
 *   2. a launcher is forked that stays root and does what needs root
 *      (sandboxes, cgroups, uid slots, handing trees to slot uids), answering
 *      requests on a SOCK_SEQPACKET socketpair (sbx_launcher_serve);
 *   3. this process becomes `user` for good: supplementary groups, gid, uid,
 *      every capability (CAP_NET_BIND_SERVICE kept only for a port below
 *      1024), no_new_privs, not dumpable; it checks that it cannot get root
 *      back, then serves, sending sandbox calls to the launcher.
 * If the launcher dies the server logs it and stops with status 1; if the
 * server dies the launcher kills every job and exits.
 */
#include "cmd.h"

#include "ed_error.h"
#include "ed_log.h"
#include "gw.h"
#include "sbx.h"
#include "sched.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: eddy serve [--data DIR] [--listen HOST:PORT] [--config FILE]\n"
               "\n"
               "  --data DIR          data directory (eddy.db, projects/); created 0700\n"
               "  --listen HOST:PORT  address to serve on; port 0 picks a free port\n"
               "  --config FILE       'key = value' settings (see deploy/eddy.conf.example)\n"
               "\n"
               "Settings: defaults < config file < EDDY_* environment < flags.\n"
               "Started as root it serves as the user 'eddy' (setting user, EDDY_USER; 'root': no\n"
               "split), which gets DIR, while a small launcher keeps root for the sandboxes.\n");
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

/* ---- the privilege split ---- */

static pid_t launcher_pid;
static volatile int launcher_stopping;     /* we closed it: its exit is expected */
static volatile int launcher_died;

/* Entries owned by root or by a slot uid (left by jobs of a server that
 * died) go to the serving user; links are never followed and the walk stays
 * on the data directory's file system. */
static int own_tree(int dfd, uid_t uid, gid_t gid, unsigned slot_base, unsigned slot_count, dev_t dev,
                    int depth)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    int dup_fd, rc = 0;

    if (fstat(dfd, &st) < 0)
        return -1;
    if ((st.st_uid == 0 || (st.st_uid >= slot_base && st.st_uid - slot_base < slot_count)) &&
        fchown(dfd, uid, gid) < 0)
        return -1;
    if (depth > 128 || (dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3)) < 0 || lseek(dup_fd, 0, SEEK_SET) < 0 ||
        (d = fdopendir(dup_fd)) == NULL)
        return depth > 128 ? 0 : -1;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (depth == 0 && strcmp(e->d_name, "launcher") == 0)
            continue;   /* the launcher's store (disk quota images): root's, never the server's */
        int fd = openat(dfd, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != dev) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            close(fd);
            if ((fd = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
                rc = own_tree(fd, uid, gid, slot_base, slot_count, dev, depth + 1);
                close(fd);
            }
            continue;
        }
        if ((st.st_uid == 0 || (st.st_uid >= slot_base && st.st_uid - slot_base < slot_count)) &&
            fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0)
            rc = -1;
        close(fd);
    }
    closedir(d);
    return rc;
}

/* 1 when the directory open at `dfd` is one Eddy made (or could have): empty,
 * or holding eddy.db, or only names Eddy puts there. Handing anything else
 * to the serving user (--data /var/lib by mistake) would give it the host. */
static int is_data_dir(int dfd)
{
    static const char *const ours[] = {"eddy.db", "eddy.db-wal", "eddy.db-shm", "eddy.db-journal", "projects",
                                       "jobs", "datasets", "models", "admin-password", "volume", "volume.img",
                                       "images", "launcher"};
    int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3), ok = 1, has_db = 0;
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    struct dirent *e;

    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        size_t i, n = sizeof(ours) / sizeof(ours[0]);
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        has_db |= strcmp(e->d_name, "eddy.db") == 0;
        for (i = 0; i < n && strcmp(e->d_name, ours[i]) != 0; i++)
            ;
        ok &= i < n;
    }
    rewinddir(d);       /* the offset is shared with dfd, which own_tree() reads next */
    closedir(d);
    return ok || has_db;
}

/* mkdir -p: parents 0755 (the serving user must pass through), the leaf 0700. */
static int make_data_dir(const char *path)
{
    char tmp[PATH_MAX];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(tmp))
        return -1;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* The read-only roots a job may bind: eddy-kernel's folder and the paddle
 * package, wherever exec_local.c looks for them (canonical paths). */
static size_t ro_roots(char (*out)[PATH_MAX], size_t max, const char *kernel_bin)
{
    char exe[PATH_MAX], dir[PATH_MAX], cand[6][PATH_MAX + 32];
    size_t n = 0, k = 0;
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (len > 0) {
        exe[len] = '\0';
        snprintf(dir, sizeof(dir), "%s", dirname(exe));
        snprintf(cand[k++], sizeof(cand[0]), "%s", dir);
        snprintf(cand[k++], sizeof(cand[0]), "%s/../kernel_runner", dir);
        snprintf(cand[k++], sizeof(cand[0]), "%s/../framework/python", dir);
    }
    if (getenv("EDDY_PADDLE_DIR") && getenv("EDDY_PADDLE_DIR")[0])
        snprintf(cand[k++], sizeof(cand[0]), "%s", getenv("EDDY_PADDLE_DIR"));
    if (kernel_bin[0]) {
        snprintf(dir, sizeof(dir), "%s", kernel_bin);
        snprintf(cand[k++], sizeof(cand[0]), "%s", dirname(dir));
    }
    for (size_t i = 0; i < k && n < max; i++) {
        struct stat st;
        if (realpath(cand[i], out[n]) && stat(out[n], &st) == 0 && S_ISDIR(st.st_mode) &&
            strcmp(out[n], "/") != 0)
            n++;
    }
    return n;
}

static int cap_last(void)
{
    FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
    int last = CAP_LAST_CAP;
    if (f) {
        if (fscanf(f, "%d", &last) != 1)
            last = CAP_LAST_CAP;
        fclose(f);
    }
    return last;
}

/* Become `pw` for good. With keep_bind, CAP_NET_BIND_SERVICE stays (a port
 * below 1024) and nothing else. */
static int drop_privileges(const struct passwd *pw, bool keep_bind)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];

    /* Out of the bounding set first, while we may (CAP_SETPCAP): no exec of
     * a set-uid program could bring them back. */
    for (int c = 0; c <= cap_last(); c++)
        if (!(keep_bind && c == CAP_NET_BIND_SERVICE) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
            errno != EINVAL)
            return ed_error_set(ED_EIO, "drop capability %d: %s", c, strerror(errno));
    if (keep_bind && prctl(PR_SET_KEEPCAPS, 1) < 0)
        return ed_error_set(ED_EIO, "keep capabilities: %s", strerror(errno));
    if (initgroups(pw->pw_name, pw->pw_gid) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
        return ed_error_set(ED_EIO, "become %s: %s", pw->pw_name, strerror(errno));
    memset(caps, 0, sizeof(caps));
    if (keep_bind)
        caps[0].effective = caps[0].permitted = 1u << CAP_NET_BIND_SERVICE;
    if (syscall(SYS_capset, &hdr, caps) < 0)
        return ed_error_set(ED_EIO, "set capabilities: %s", strerror(errno));
    prctl(PR_SET_KEEPCAPS, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0)
        return ed_error_set(ED_EIO, "no_new_privs: %s", strerror(errno));
    /* It must not be possible to get root back. */
    if (setuid(0) == 0 || seteuid(0) == 0 || setgid(0) == 0 || getuid() != pw->pw_uid ||
        geteuid() != pw->pw_uid || getgid() != pw->pw_gid || getegid() != pw->pw_gid)
        return ed_error_set(ED_EINTERNAL, "still able to become root after dropping to %s", pw->pw_name);
    memset(caps, 0, sizeof(caps));
    if (syscall(SYS_capget, &hdr, caps) < 0 ||
        (caps[0].effective | caps[0].permitted | caps[1].effective | caps[1].permitted) !=
            (keep_bind ? 1u << CAP_NET_BIND_SERVICE : 0u))
        return ed_error_set(ED_EINTERNAL, "capabilities left after dropping to %s", pw->pw_name);
    return 0;
}

static void *watch_launcher(void *arg)
{
    int st = 0;
    (void)arg;
    while (waitpid(launcher_pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!launcher_stopping) {
        launcher_died = 1;
        ed_log_error("serve.launcher", "the sandbox launcher (pid %d) %s %d: stopping the server",
                     (int)launcher_pid, WIFSIGNALED(st) ? "was killed by signal" : "exited with status",
                     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        kill(getpid(), SIGTERM);
    }
    return NULL;
}

/* Steps 1-3 above. 0, or an exit status with the message printed. */
static int split_privileges(gw_config *cfg)
{
    struct passwd *pw = getpwnam(cfg->user);
    char data[PATH_MAX], roots[6][PATH_MAX];
    sched_config sc;
    sbx_launcher_config lc;
    struct stat st;
    int sv[2], fd;
    pid_t server = getpid();

    if (!pw) {
        fprintf(stderr, "eddy serve: started as root, but the user '%s' to serve as does not exist: create it "
                        "(deploy/install-deps.sh: useradd --system --no-create-home --shell /usr/sbin/nologin %s) "
                        "or set user = root to serve as root\n", cfg->user, cfg->user);
        return 2;
    }
    if (pw->pw_uid == 0 || pw->pw_gid == 0) {
        fprintf(stderr, "eddy serve: user '%s' has uid or gid 0\n", cfg->user);
        return 2;
    }
    if (sched_config_defaults(&sc, cfg->data_dir) < 0) {
        fprintf(stderr, "eddy serve: %s\n", ed_error_last());
        return 2;
    }
    if (pw->pw_uid >= sc.slot_base && pw->pw_uid - sc.slot_base < sc.slot_count) {
        fprintf(stderr, "eddy serve: user '%s' (uid %u) lies in the job slot range\n", cfg->user,
                (unsigned)pw->pw_uid);
        return 2;
    }
    if (make_data_dir(cfg->data_dir) < 0 || realpath(cfg->data_dir, data) == NULL ||
        strlen(data) >= sizeof(cfg->data_dir)) {
        fprintf(stderr, "eddy serve: data directory %s: %s\n", cfg->data_dir, strerror(errno));
        return 1;
    }
    snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", data);
    if ((fd = open(data, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0 &&
        (strcmp(data, "/") == 0 || !is_data_dir(fd))) {
        fprintf(stderr, "eddy serve: %s is not empty and holds no eddy.db: not handing it to user %s; point "
                        "--data at an Eddy data directory or a new one\n", data, cfg->user);
        close(fd);
        return 2;
    }
    if (fd < 0 || fstat(fd, &st) < 0 ||
        own_tree(fd, pw->pw_uid, pw->pw_gid, sc.slot_base, sc.slot_count, st.st_dev, 0) < 0) {
        fprintf(stderr, "eddy serve: cannot hand %s to %s: %s\n", data, cfg->user, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    close(fd);

    memset(&lc, 0, sizeof(lc));
    lc.data_dir = data;
    lc.n_ro_roots = ro_roots(roots, 6, sc.kernel_bin);
    for (size_t i = 0; i < lc.n_ro_roots; i++)
        lc.ro_roots[i] = roots[i];
    lc.server_uid = pw->pw_uid;
    lc.server_gid = pw->pw_gid;
    lc.server_pid = server;
    lc.slot_dir = sc.slot_dir;
    lc.slot_base = sc.slot_base;
    lc.slot_count = sc.slot_count;
    lc.allow_degraded = getenv("EDDY_SANDBOX_DEGRADED") && strcmp(getenv("EDDY_SANDBOX_DEGRADED"), "1") == 0;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        fprintf(stderr, "eddy serve: launcher socket: %s\n", strerror(errno));
        return 1;
    }
    fflush(NULL);
    if ((launcher_pid = fork()) < 0) {
        fprintf(stderr, "eddy serve: cannot start the sandbox launcher: %s\n", strerror(errno));
        return 1;
    }
    if (launcher_pid == 0) {
        close(sv[0]);
        int rc = sbx_launcher_serve(sv[1], &lc);
        if (rc < 0)
            fprintf(stderr, "eddy-launcher: %s\n", ed_error_last());
        _exit(rc < 0 ? 1 : 0);
    }
    close(sv[1]);
    if (drop_privileges(pw, cfg->listen_port > 0 && cfg->listen_port < 1024) < 0) {
        fprintf(stderr, "eddy serve: %s\n", ed_error_last());
        close(sv[0]);
        return 1;
    }
    if (access(data, R_OK | W_OK | X_OK) < 0) {
        fprintf(stderr, "eddy serve: user %s cannot use %s (%s): every parent directory must be searchable "
                        "by it\n", cfg->user, data, strerror(errno));
        close(sv[0]);
        return 1;
    }
    const char *tls[] = {cfg->tls_cert, cfg->tls_key};
    for (int i = 0; i < 2; i++)
        if (tls[i][0] && access(tls[i], R_OK) < 0) {
            fprintf(stderr, "eddy serve: user %s cannot read %s (%s): give it to group %s, mode 0640\n",
                    cfg->user, tls[i], strerror(errno), cfg->user);
            close(sv[0]);
            return 1;
        }
    if (sbx_launcher_use(sv[0], launcher_pid) < 0) {
        fprintf(stderr, "eddy serve: %s\n", ed_error_last());
        return 1;
    }
    ed_log_info("serve.privileges", "serving as %s (uid %u); sandbox launcher pid %d runs as root", cfg->user,
                (unsigned)pw->pw_uid, (int)launcher_pid);
    return 0;
}

int cmd_become_data_owner(const char *data)
{
    struct stat st;
    struct passwd *pw;

    if (geteuid() != 0 || stat(data, &st) < 0 || st.st_uid == 0)
        return 0;
    /* A data directory served by an unprivileged user: what an operator
     * command as root creates there (a WAL file, a project) must stay that
     * user's, or the server could not open it. */
    pw = getpwuid(st.st_uid);
    if ((pw ? initgroups(pw->pw_name, st.st_gid) : setgroups(0, NULL)) < 0 ||
        setresgid(st.st_gid, st.st_gid, st.st_gid) < 0 || setresuid(st.st_uid, st.st_uid, st.st_uid) < 0) {
        fprintf(stderr, "eddy: cannot become the owner of %s (uid %u): %s\n", data, (unsigned)st.st_uid,
                strerror(errno));
        return 1;
    }
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    const char *data = NULL, *listen = NULL, *config = NULL;
    gw_config cfg;
    gw_server *srv = NULL;
    sigset_t stop_signals;
    pthread_t watcher;
    bool split = false;
    int sig = 0, err, rc;

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

    /* Before any thread exists: fork the launcher, then drop. */
    if (geteuid() == 0 && strcmp(cfg.user, "root") != 0) {
        if ((rc = split_privileges(&cfg)) != 0)
            return rc;
        split = true;
    }

    /* Writes to a closed client socket or stdout must fail, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    /* Block the stop signals before any thread exists so every worker
     * inherits the mask and only sigwait() below receives them. */
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    if (split && pthread_create(&watcher, NULL, watch_launcher, NULL) != 0) {
        fprintf(stderr, "eddy serve: cannot watch the sandbox launcher\n");
        return 1;
    }

    if ((err = gw_server_start(&srv, &cfg)) < 0) {
        fprintf(stderr, "eddy serve: %s\n", ed_error_last());
        ed_log_error("serve.start", "%s", ed_error_last());
        if (split) {
            launcher_stopping = 1;
            sbx_launcher_use(-1, 0);
            pthread_join(watcher, NULL);
        }
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
    if (split) {
        /* Closing the socket tells the launcher to kill what is left and exit. */
        launcher_stopping = 1;
        sbx_launcher_use(-1, 0);
        pthread_join(watcher, NULL);
        if (launcher_died) {
            fprintf(stderr, "eddy serve: the sandbox launcher died; the server stopped\n");
            ed_log_error("serve.stop", "stopped because the sandbox launcher died");
            return 1;
        }
    }
    ed_log_info("serve.stop", "stopped cleanly");
    return 0;
}
