#include "harness.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <libgen.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *it_eddy_bin(void)
{
    const char *env = getenv("EDDY_BIN");
    return env ? env : EDDY_BIN;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

/* A job's directories are mounts (disk quotas, sandbox/README.md "Disk
 * quotas"); a server stops by unmounting them, one that was killed leaves
 * them: unmount whatever is beneath `dir` before removing it, or the
 * mounts and their loop devices outlive the test. */
static void unmount_beneath(const char *dir)
{
    char line[4096], *list[256];
    size_t n = 0, len = strlen(dir);
    FILE *f = fopen("/proc/self/mountinfo", "re");

    if (f == NULL)
        return;
    while (n < 256 && fgets(line, sizeof(line), f)) {
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 4; i++)
            tok = strtok_r(NULL, " ", &save);
        if (tok && strncmp(tok, dir, len) == 0 && tok[len] == '/' && (list[n] = strdup(tok)) != NULL)
            n++;
    }
    fclose(f);
    while (n > 0) {              /* deepest first: mountinfo lists parents before children */
        umount2(list[--n], MNT_DETACH);
        free(list[n]);
    }
}

int it_serve_user_reaches_checkout(void)
{
    const char *user = getenv("EDDY_USER") ? getenv("EDDY_USER") : "eddy";
    struct passwd *pw;
    char bin[512];
    int st = -1;
    pid_t pid;

    if (geteuid() != 0 || strcmp(user, "root") == 0)
        return 0;
    if ((pw = getpwnam(user)) == NULL)
        return -1;
    snprintf(bin, sizeof(bin), "%s", it_eddy_bin());
    if ((pid = fork()) == 0) {
        if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
            _exit(1);
        _exit(access(dirname(bin), R_OK | X_OK) == 0 && access("/tmp", X_OK) == 0 ? 0 : 1);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static uid_t share_uid;
static gid_t share_gid;

static int share_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return lchown(path, share_uid, share_gid) == 0 ? 0 : -1;
}

void it_share_with_server(const char *path)
{
    const char *user = getenv("EDDY_USER") ? getenv("EDDY_USER") : "eddy";
    struct passwd *pw;

    if (geteuid() != 0 || it_serve_user_reaches_checkout() != 0 || strcmp(user, "root") == 0 ||
        (pw = getpwnam(user)) == NULL)
        return;
    share_uid = pw->pw_uid;
    share_gid = pw->pw_gid;
    nftw(path, share_one, 16, FTW_PHYS);
}

int it_server_start_in(it_server *s, const char *data_dir, const char *const *env)
{
    static int reach = 1;   /* 1 unknown, 0 yes, -1 no */
    char tmpl[] = "/tmp/eddy-it-XXXXXX";
    char listen_arg[] = "127.0.0.1:0";
    int out[2];
    char line[512];
    size_t used = 0;
    struct timespec start, now;

    memset(s, 0, sizeof(*s));
    if (data_dir) {
        snprintf(s->data_dir, sizeof(s->data_dir), "%s", data_dir);
        s->keep_data = 1;
    } else {
        if (mkdtemp(tmpl) == NULL)
            return -1;
        snprintf(s->data_dir, sizeof(s->data_dir), "%s/data", tmpl);
    }
    snprintf(s->log_path, sizeof(s->log_path), "%s.log", s->data_dir);
    {
        /* Started as root, eddy serve serves as the unprivileged user
         * `eddy` (sandbox/README.md "Privilege split"): it must be able to
         * pass through the temporary parent (mkdtemp makes it 0700). */
        char parent[256];
        struct stat sb;
        snprintf(parent, sizeof(parent), "%s", s->data_dir);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent)
            *slash = '\0';
        if (geteuid() == 0 && slash && stat(parent, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == 0 &&
            strncmp(parent, "/tmp/", 5) == 0)
            chmod(parent, (sb.st_mode & 07777) | 0711);
    }
    if (reach == 1 && (reach = it_serve_user_reaches_checkout()) < 0)
        fprintf(stderr, "harness: the user eddy serve drops to is missing or cannot reach %s: serving as "
                        "root (EDDY_USER=root)\n", it_eddy_bin());
    if (pipe(out) < 0)
        return -1;
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        int logfd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(out[1], 1);
        if (logfd >= 0)
            dup2(logfd, 2);
        close(out[0]);
        close(out[1]);
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        if (reach < 0)
            putenv("EDDY_USER=root");     /* see it_serve_user_reaches_checkout() */
        execl(it_eddy_bin(), "eddy", "serve", "--data", s->data_dir, "--listen", listen_arg,
              (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        ssize_t n = read(out[0], line + used, sizeof(line) - 1 - used);
        if (n > 0) {
            used += (size_t)n;
            line[used] = '\0';
            char *p = strstr(line, "listening on http://");
            if (p && strchr(p, '\n')) {
                char *colon = strrchr(strtok(p + strlen("listening on http://"), "\n/"), ':');
                if (colon) {
                    s->port = atoi(colon + 1);
                    break;
                }
            }
            if (used >= sizeof(line) - 1)
                used = 0;
        } else if (n == 0) {
            fprintf(stderr, "harness: eddy serve exited before listening (log %s)\n", s->log_path);
            waitpid(s->pid, NULL, 0);
            s->pid = 0;
            close(out[0]);
            return -1;
        } else {
            usleep(5000);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 10) {
            fprintf(stderr, "harness: eddy serve did not listen within 10 s (log %s)\n", s->log_path);
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            s->pid = 0;
            close(out[0]);
            return -1;
        }
    }
    close(out[0]); /* later stdout writes get EPIPE/SIGPIPE-ignored by the server */
    snprintf(s->base_url, sizeof(s->base_url), "http://127.0.0.1:%d", s->port);
    return 0;
}

int it_server_start(it_server *s, const char *const *env)
{
    return it_server_start_in(s, NULL, env);
}

int it_server_stop(it_server *s)
{
    int status = 0, result = -1;

    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        for (int i = 0; i < 1000; i++) {
            pid_t w = waitpid(s->pid, &status, WNOHANG);
            if (w == s->pid) {
                result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                break;
            }
            usleep(10000);
        }
        if (result == -1) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
        }
        s->pid = 0;
    }
    if (!s->keep_data && s->data_dir[0]) {
        char parent[256];
        snprintf(parent, sizeof(parent), "%s", s->data_dir);
        char *slash = strrchr(parent, '/');
        if (slash)
            *slash = '\0';
        unmount_beneath(parent);
        nftw(parent, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    return result;
}

typedef struct {
    char  *data;
    size_t len;
} sink;

static size_t sink_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    sink *k = ud;
    size_t n = size * nmemb;
    char *p = realloc(k->data, k->len + n + 1);

    if (p == NULL)
        return 0;
    k->data = p;
    memcpy(k->data + k->len, ptr, n);
    k->len += n;
    k->data[k->len] = '\0';
    return n;
}

int it_request_n(it_resp *r, it_server *s, const char *method, const char *path,
                 const char *body, long len, const char *const *headers)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    sink b = {0}, h = {0};
    char url[4096];
    CURLcode rc;

    memset(r, 0, sizeof(*r));
    if (c == NULL)
        return -1;
    snprintf(url, sizeof(url), "%s%s", s->base_url, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(len < 0 ? (long)strlen(body) : len));
    }
    hl = curl_slist_append(hl, "Expect:");
    if (body && !(headers && headers[0] && strncasecmp(headers[0], "Content-Type:", 13) == 0))
        hl = curl_slist_append(hl, "Content-Type: application/json");
    for (const char *const *p = headers; p && *p; p++)
        hl = curl_slist_append(hl, *p);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    r->body = b.data ? b.data : calloc(1, 1);
    r->body_len = b.len;
    r->headers = h.data ? h.data : calloc(1, 1);
    if (r->body_len)
        r->json = json_loadb(r->body, r->body_len, JSON_DECODE_ANY, NULL);
    return rc == CURLE_OK ? 0 : -1;
}

int it_request(it_resp *r, it_server *s, const char *method, const char *path,
               const char *body, const char *const *headers)
{
    return it_request_n(r, s, method, path, body, -1, headers);
}

const char *it_resp_header(const it_resp *r, const char *name)
{
    static _Thread_local char value[1024];
    size_t nl = strlen(name);

    for (const char *p = r->headers; p && *p;) {
        const char *eol = strstr(p, "\r\n");
        size_t linelen = eol ? (size_t)(eol - p) : strlen(p);
        if (linelen > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = linelen - (size_t)(v - p);
            if (vl >= sizeof(value))
                vl = sizeof(value) - 1;
            memcpy(value, v, vl);
            value[vl] = '\0';
            return value;
        }
        if (eol == NULL)
            break;
        p = eol + 2;
    }
    return NULL;
}

const char *it_resp_error_code(const it_resp *r)
{
    json_t *e = r->json ? json_object_get(r->json, "error") : NULL;
    return e ? json_string_value(json_object_get(e, "code")) : NULL;
}

void it_resp_free(it_resp *r)
{
    free(r->body);
    free(r->headers);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

/* POST /api/v1/auth/login: 0 with the session cookie (name=value) and the
 * CSRF token copied out, or -1 with the reason on stderr. */
static int login_parts(it_server *s, const char *username, const char *password, char *cookie,
                       size_t cookie_len, char *csrf, size_t csrf_len)
{
    char body[512];
    it_resp r;
    const char *set_cookie, *token;
    int ok = -1;

    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"password\":\"%s\"}", username, password);
    it_request(&r, s, "POST", "/api/v1/auth/login", body, NULL);
    set_cookie = it_resp_header(&r, "Set-Cookie");
    token = r.json ? json_string_value(json_object_get(r.json, "csrf_token")) : NULL;
    if (r.status == 200 && set_cookie && token) {
        snprintf(cookie, cookie_len, "%.*s", (int)strcspn(set_cookie, ";"), set_cookie);
        snprintf(csrf, csrf_len, "%s", token);
        ok = 0;
    } else {
        fprintf(stderr, "harness: login %s -> %ld %s\n", username, r.status, r.body);
    }
    it_resp_free(&r);
    return ok;
}

int it_login(it_server *s, const char *username, const char *password, char *cookie_hdr,
             size_t cookie_len, char *csrf_hdr, size_t csrf_len)
{
    char cookie[512], csrf[256];

    if (login_parts(s, username, password, cookie, sizeof(cookie), csrf, sizeof(csrf)) < 0)
        return -1;
    snprintf(cookie_hdr, cookie_len, "Cookie: %s", cookie);
    snprintf(csrf_hdr, csrf_len, "X-CSRF-Token: %s", csrf);
    return 0;
}

int it_signup_login(it_server *s, const char *username, const char *password, char **cookie,
                    char **csrf)
{
    char body[512], c[512], t[256];
    it_resp r;

    *cookie = *csrf = NULL;
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"email\":\"%s@example.com\",\"password\":\"%s\"}",
             username, username, password);
    it_request(&r, s, "POST", "/api/v1/auth/signup", body, NULL);
    if (r.status != 201) {
        fprintf(stderr, "harness: signup %s -> %ld %s\n", username, r.status, r.body);
        it_resp_free(&r);
        return -1;
    }
    it_resp_free(&r);
    if (login_parts(s, username, password, c, sizeof(c), t, sizeof(t)) < 0)
        return -1;
    *cookie = strdup(c);
    *csrf = strdup(t);
    return 0;
}

int it_eddy_status(char *const argv[])
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execv(it_eddy_bin(), argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void it_slurp(char *buf, size_t n, const char *path)
{
    FILE *f = fopen(path, "r");
    size_t got = 0;

    if (f) {
        got = fread(buf, 1, n - 1, f);
        fclose(f);
    }
    buf[got] = '\0';
}

void it_run_eddy(it_run *o, const char *scratch, const char *home, const char *input,
                 const char *const *env, const char *const *argv)
{
    char op[300], ep[300], ip[300];
    FILE *f;
    pid_t pid;
    int st;

    snprintf(op, sizeof(op), "%s/stdout", scratch);
    snprintf(ep, sizeof(ep), "%s/stderr", scratch);
    snprintf(ip, sizeof(ip), "%s/stdin", scratch);
    if ((f = fopen(ip, "w")) != NULL) {
        if (input)
            fputs(input, f);
        fclose(f);
    }
    pid = fork();
    if (pid == 0) {
        int in = open(ip, O_RDONLY), out = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0600),
            er = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(in, 0);
        dup2(out, 1);
        dup2(er, 2);
        setsid();
        setenv("HOME", home, 1);
        unsetenv("XDG_CONFIG_HOME");
        unsetenv("EDDY_URL");
        unsetenv("EDDY_API_KEY");
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        execv(it_eddy_bin(), (char *const *)argv);
        _exit(127);
    }
    o->status = -1;
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
        o->status = WEXITSTATUS(st);
    it_slurp(o->out, sizeof(o->out), op);
    it_slurp(o->err, sizeof(o->err), ep);
}

/* ---- an operator, users, projects and jobs ----------------------------------- */

int it_admin_data_make(char *dir, size_t dir_len, char *data, size_t data_len, const char *tag)
{
    char *argv[] = {"eddy", "admin", "create-user", "--data", data, "--username", IT_ADMIN_USER,
                    "--email", "root@example.com", "--password", IT_ADMIN_PASSWORD, "--role", "admin", NULL};
    int st;

    snprintf(dir, dir_len, "/tmp/eddy-it-%s-XXXXXX", tag);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "harness: mkdtemp %s: %s\n", dir, strerror(errno));
        return -1;
    }
    snprintf(data, data_len, "%s/data", dir);
    if (mkdir(data, 0700) < 0) {
        fprintf(stderr, "harness: mkdir %s: %s\n", data, strerror(errno));
        it_dir_remove(dir);
        return -1;
    }
    if ((st = it_eddy_status(argv)) != 0) {
        fprintf(stderr, "harness: eddy admin create-user --data %s -> exit %d\n", data, st);
        it_dir_remove(dir);
        return -1;
    }
    return 0;
}

int it_admin_server_start(it_server *s, char *dir, size_t dir_len, const char *tag, const char *const *env,
                          char *cookie_hdr, size_t cookie_len, char *csrf_hdr, size_t csrf_len)
{
    char data[300];

    if (it_admin_data_make(dir, dir_len, data, sizeof(data), tag) < 0)
        return -1;
    if (it_server_start_in(s, data, env) < 0) {
        it_dir_remove(dir);
        return -1;
    }
    if (it_login(s, IT_ADMIN_USER, IT_ADMIN_PASSWORD, cookie_hdr, cookie_len, csrf_hdr, csrf_len) < 0) {
        it_server_stop(s);
        it_dir_remove(dir);
        return -1;
    }
    return 0;
}

static int rm_entry_said(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    if (remove(path) == 0)
        return 0;
    fprintf(stderr, "harness: remove %s: %s\n", path, strerror(errno));
    return -1;
}

int it_dir_remove(const char *dir)
{
    struct stat sb;

    if (lstat(dir, &sb) < 0 && errno == ENOENT)
        return 0;
    unmount_beneath(dir);
    return nftw(dir, rm_entry_said, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int it_user_make(it_user *u, it_server *s, const char *admin_cookie, const char *admin_csrf, const char *name,
                 int64_t grant_mcoins)
{
    char body[512], path[128], idem[96];
    const char *ah[] = {admin_cookie, admin_csrf, idem, NULL};
    it_resp r;

    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "%s", name);
    snprintf(u->pw, sizeof(u->pw), "pass-%s-123", name);
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"email\":\"%s@example.com\",\"password\":\"%s\"}", name,
             name, u->pw);
    it_request(&r, s, "POST", "/api/v1/auth/signup", body, NULL);
    if (r.status != 201) {
        fprintf(stderr, "harness: signup %s -> %ld %s\n", name, r.status, r.body);
        it_resp_free(&r);
        return -1;
    }
    u->id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    if (grant_mcoins > 0) {
        snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)u->id);
        snprintf(idem, sizeof(idem), "Idempotency-Key: grant-%s", name);
        snprintf(body, sizeof(body), "{\"amount_mcoins\": %lld, \"reason\": \"test\"}", (long long)grant_mcoins);
        it_request(&r, s, "POST", path, body, ah);
        if (r.status != 201) {
            fprintf(stderr, "harness: grant to %s -> %ld %s\n", name, r.status, r.body);
            it_resp_free(&r);
            return -1;
        }
        it_resp_free(&r);
    }
    if (it_login(s, u->name, u->pw, u->cookie, sizeof(u->cookie), u->csrf, sizeof(u->csrf)) < 0)
        return -1;
    u->hdrs[0] = u->cookie;
    u->hdrs[1] = u->csrf;
    return 0;
}

int it_key_make(it_key *k, it_server *s, const char *const *hdrs, const char *body)
{
    const char *key;
    it_resp r;
    int ok = -1;

    memset(k, 0, sizeof(*k));
    it_request(&r, s, "POST", "/api/v1/keys", body, hdrs);
    key = r.json ? json_string_value(json_object_get(r.json, "key")) : NULL;
    if (r.status == 201 && key) {
        k->id = json_integer_value(json_object_get(r.json, "id"));
        snprintf(k->auth, sizeof(k->auth), "Authorization: Bearer %s", key);
        k->hdrs[0] = k->auth;
        ok = 0;
    } else {
        fprintf(stderr, "harness: POST /api/v1/keys %s -> %ld %s\n", body, r.status, r.body);
    }
    it_resp_free(&r);
    return ok;
}

int it_project_make(char *pid, size_t pid_len, it_server *s, const char *const *hdrs, const char *name,
                    const char *file, const char *content)
{
    char body[256], path[512];
    const char *id;
    it_resp r;

    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"visibility\":\"private\"}", name);
    it_request(&r, s, "POST", "/api/v1/projects", body, hdrs);
    id = r.json ? json_string_value(json_object_get(r.json, "id")) : NULL;
    if (r.status != 201 || id == NULL) {
        fprintf(stderr, "harness: POST /api/v1/projects %s -> %ld %s\n", body, r.status, r.body);
        it_resp_free(&r);
        return -1;
    }
    snprintf(pid, pid_len, "%s", id);
    it_resp_free(&r);
    if (file == NULL)
        return 0;
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", pid, file);
    it_request(&r, s, "PUT", path, content, hdrs);
    if (r.status < 200 || r.status >= 300) {
        fprintf(stderr, "harness: PUT %s -> %ld %s\n", path, r.status, r.body);
        it_resp_free(&r);
        return -1;
    }
    it_resp_free(&r);
    return 0;
}

long it_request_status(it_server *s, const char *method, const char *path, const char *body,
                       const char *const *hdrs)
{
    it_resp r;
    long st;

    it_request(&r, s, method, path, body, hdrs);
    st = r.status;
    it_resp_free(&r);
    return st;
}

json_t *it_get_json(it_server *s, const char *const *hdrs, const char *path)
{
    it_resp r;
    json_t *j = NULL;

    it_request(&r, s, "GET", path, NULL, hdrs);
    if (r.status == 200 && r.json)
        j = json_incref(r.json);
    else
        fprintf(stderr, "harness: GET %s -> %ld %s\n", path, r.status, r.body);
    it_resp_free(&r);
    return j;
}

const char *it_json_str(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

json_t *it_status_wait(it_server *s, const char *const *hdrs, const char *path, const char *status, int max_s)
{
    for (int i = 0; i < max_s * 10; i++) {
        json_t *j = it_get_json(s, hdrs, path);
        const char *now;

        if (j == NULL)
            return NULL;
        now = it_json_str(j, "status");
        if (status ? strcmp(now, status) == 0 : strcmp(now, "queued") != 0 && strcmp(now, "running") != 0)
            return j;
        if (strcmp(now, "dead") == 0 || strcmp(now, "succeeded") == 0 || strcmp(now, "failed") == 0 ||
            strcmp(now, "cancelled") == 0) {
            fprintf(stderr, "harness: %s is %s (stop_reason %s, failure_reason %s), not %s\n", path, now,
                    it_json_str(j, "stop_reason"), it_json_str(j, "failure_reason"), status ? status : "ended");
            json_decref(j);
            return NULL;
        }
        json_decref(j);
        usleep(100000);
    }
    fprintf(stderr, "harness: %s never became %s within %d s\n", path, status ? status : "ended", max_s);
    return NULL;
}

void it_curl_global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void it_curl_global_cleanup(void)
{
    curl_global_cleanup();
}

/* ---- jobs and kernels ------------------------------------------------------------ */

/* The output of `eddy sandbox check --data /tmp`, run as root, into `out`
 * (NUL-terminated, cut at `outn`). 0, or -1 with the reason in `why`
 * (`what` "need root"). */
static int sandbox_check(char *out, size_t outn, const char *what, char *why, size_t n)
{
    char cmd[512];
    size_t len = 0, k;
    FILE *p;

    if (geteuid() != 0) {
        snprintf(why, n, "%s need root", what);
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "%s sandbox check --data /tmp 2>&1", it_eddy_bin());
    if ((p = popen(cmd, "r")) == NULL) {
        snprintf(why, n, "cannot run eddy sandbox check");
        return -1;
    }
    while (len < outn - 1 && (k = fread(out + len, 1, outn - 1 - len, p)) > 0)
        len += k;
    out[len] = '\0';
    pclose(p);
    return 0;
}

/* The line of `out` that starts with `prefix`, without its newline, into
 * `line`: `line`, or NULL when there is none. */
static const char *check_line(char *line, size_t n, const char *out, const char *prefix)
{
    for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n'))
        if (strncmp(l, prefix, strlen(prefix)) == 0) {
            snprintf(line, n, "%.*s", (int)strcspn(l, "\n"), l);
            return line;
        }
    return NULL;
}

int it_host_disk_quotas(char *why, size_t n)
{
    char out[16384], line[1024];

    if (sandbox_check(out, sizeof(out), "disk quotas", why, n) < 0)
        return 0;
    snprintf(why, n, "eddy sandbox check said nothing about disk quotas");
    if (check_line(line, sizeof(line), out, "disk quota detail"))
        snprintf(why, n, "no disk quota mechanism: %s", line);
    return check_line(line, sizeof(line), out, "disk quotas ") && strstr(line, " none") == NULL;
}

int it_version_make(char *vid, size_t vid_len, it_server *s, const char *const *hdrs, const char *pid,
                    const char *message)
{
    char path[256];
    json_t *b = json_pack("{s:s}", "message", message);
    char *body = json_dumps(b, JSON_COMPACT);
    const char *id;
    it_resp r;
    int ok = -1;

    snprintf(path, sizeof(path), "/api/v1/projects/%s/versions", pid);
    it_request(&r, s, "POST", path, body, hdrs);
    id = r.json ? json_string_value(json_object_get(r.json, "id")) : NULL;
    if (r.status == 201 && id) {
        snprintf(vid, vid_len, "%s", id);
        ok = 0;
    } else {
        fprintf(stderr, "harness: POST %s -> %ld %s\n", path, r.status, r.body);
    }
    it_resp_free(&r);
    free(body);
    json_decref(b);
    return ok;
}

/* `base` with the members of the JSON object text `more` (NULL: none) added;
 * its compact text (malloc'd), or NULL when `more` is not an object. */
static char *json_with(json_t *base, const char *more)
{
    char *text = NULL;

    if (more) {
        json_t *m = json_loads(more, 0, NULL);
        if (!json_is_object(m) || json_object_update(base, m) < 0) {
            fprintf(stderr, "harness: not a JSON object: %s\n", more);
            json_decref(m);
            json_decref(base);
            return NULL;
        }
        json_decref(m);
    }
    text = json_dumps(base, JSON_COMPACT);
    json_decref(base);
    return text;
}

/* POST `path` with `body` as the caller of `hdrs`: the status (0 on a
 * transport error). When it is `want`, *answer (may be NULL) gets the JSON
 * answer (a new reference); else the status and body go to stderr and the
 * error code into `code` (may be NULL). */
static long post_for(json_t **answer, char *code, size_t code_len, it_server *s, const char *const *hdrs,
                     const char *path, const char *body, long want)
{
    it_resp r;
    long st;

    it_request(&r, s, "POST", path, body, hdrs);
    st = r.status;
    if (st == want && answer)
        *answer = json_incref(r.json);
    if (st != want) {
        fprintf(stderr, "harness: POST %s %s -> %ld %.300s\n", path, body, st, r.body ? r.body : "");
        if (code)
            snprintf(code, code_len, "%s", it_resp_error_code(&r) ? it_resp_error_code(&r) : "");
    }
    it_resp_free(&r);
    return st;
}

long it_job_submit(int64_t *id, char *code, size_t code_len, it_server *s, const char *const *hdrs, const char *pid,
                   const char *vid, const char *entry, int max_runtime_s, const char *more)
{
    json_t *b = json_pack("{s:s, s:s, s:s, s:i}", "project_id", pid, "entry", entry, "resource", "cpu-basic",
                          "max_runtime_s", max_runtime_s);
    json_t *a = NULL;
    char *body;
    long st;

    *id = 0;
    if (code)
        code[0] = '\0';
    if (vid)
        json_object_set_new(b, "version", json_string(vid));
    if ((body = json_with(b, more)) == NULL)
        return 0;
    st = post_for(&a, code, code_len, s, hdrs, "/api/v1/jobs", body, 201);
    if (st == 201)
        *id = json_integer_value(json_object_get(a, "id"));
    json_decref(a);
    free(body);
    return st;
}

json_t *it_job_wait(it_server *s, const char *const *hdrs, int64_t id, const char *status, int max_s)
{
    char path[64];

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    return it_status_wait(s, hdrs, path, status, max_s);
}

long it_kernel_post(char *kid, size_t kid_len, char *code, size_t code_len, it_server *s, const char *const *hdrs,
                    const char *api, const char *pid)
{
    json_t *b = json_pack("{s:s, s:s}", "project_id", pid, "resource", "cpu-basic");
    json_t *a = NULL;
    char *body = json_dumps(b, JSON_COMPACT);
    long st;

    if (code)
        code[0] = '\0';
    st = post_for(&a, code, code_len, s, hdrs, api, body, 201);
    if (st == 201 && kid)
        snprintf(kid, kid_len, "%s", it_json_str(a, "id"));
    json_decref(a);
    free(body);
    json_decref(b);
    return st;
}

json_t *it_kernel_wait(it_server *s, const char *const *hdrs, const char *kid, const char *status, int max_s)
{
    char path[128];

    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    return it_status_wait(s, hdrs, path, status, max_s);
}

int it_kernel_start(char *kid, size_t kid_len, it_server *s, const char *const *hdrs, const char *pid, int max_s)
{
    json_t *k;

    if (it_kernel_post(kid, kid_len, NULL, 0, s, hdrs, "/api/v1/kernels", pid) != 201)
        return -1;
    if ((k = it_kernel_wait(s, hdrs, kid, "idle", max_s)) == NULL)
        return -1;
    json_decref(k);
    return 0;
}

int it_kernel_execute(char *msg_id, size_t msg_id_len, it_server *s, const char *const *hdrs, const char *kid,
                      const char *code, const char *extra)
{
    char path[128];
    char *body = json_with(json_pack("{s:s}", "code", code), extra);
    json_t *a = NULL;
    int ok = -1;

    msg_id[0] = '\0';
    if (body == NULL)
        return -1;
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/execute", kid);
    if (post_for(&a, NULL, 0, s, hdrs, path, body, 202) == 202) {
        snprintf(msg_id, msg_id_len, "%s", it_json_str(a, "msg_id"));
        if (msg_id[0])
            ok = 0;
        else
            fprintf(stderr, "harness: POST %s: no msg_id\n", path);
    }
    json_decref(a);
    free(body);
    return ok;
}

const char *it_msg_type(const json_t *m)
{
    return it_json_str(json_object_get(m, "header"), "msg_type");
}

const char *it_msg_parent(const json_t *m)
{
    return it_json_str(json_object_get(m, "parent_header"), "msg_id");
}

/* ---- a Server-Sent Events reader for it_kernel_events() ---------------------------- */

typedef struct sse {
    char       *buf;
    size_t      len, cap;
    json_t     *msgs;         /* every message event, in order */
    const char *parent;       /* stop at this request's ... */
    int         stop;         /* ... IT_EV_* */
    int         done, ended, bad;
    long long   last_id;
    int         ids_match;    /* each `id:` equals its message's seq, increasing */
} sse;

static void sse_event(sse *s, const char *ev)
{
    char event[32] = "message";
    const char *data = NULL;
    long long id = -1;
    json_t *m;

    for (const char *line = ev; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        if (ll > 4 && strncmp(line, "id: ", 4) == 0)
            id = atoll(line + 4);
        else if (ll > 7 && strncmp(line, "event: ", 7) == 0)
            snprintf(event, sizeof(event), "%.*s", (int)(ll - 7), line + 7);
        else if (ll > 6 && strncmp(line, "data: ", 6) == 0)
            data = line + 6;
        line = nl ? nl + 1 : NULL;
    }
    if (strcmp(event, "end") == 0) {
        s->ended = s->done = 1;
        return;
    }
    if (data == NULL)
        return;   /* a comment (heartbeat) */
    if ((m = json_loadb(data, strcspn(data, "\n"), 0, NULL)) == NULL) {
        fprintf(stderr, "harness: an event that is not JSON: %.200s\n", data);
        s->bad = s->done = 1;
        return;
    }
    if (json_integer_value(json_object_get(m, "seq")) != id || id <= s->last_id)
        s->ids_match = 0;
    s->last_id = id;
    json_array_append_new(s->msgs, m);
    if (s->parent && strcmp(it_msg_parent(m), s->parent) == 0) {
        const char *t = it_msg_type(m);
        if ((s->stop == IT_EV_REPLY && strcmp(t, "execute_reply") == 0) ||
            (s->stop == IT_EV_STREAM && strcmp(t, "stream") == 0) ||
            (strcmp(t, "status") == 0 &&
             strcmp(it_json_str(json_object_get(m, "content"), "execution_state"), "idle") == 0))
            s->done = 1;
    }
}

static size_t sse_write(char *p, size_t sz, size_t nm, void *ud)
{
    sse *s = ud;
    size_t n = sz * nm;
    char *end;

    if (s->len + n + 1 > s->cap) {
        char *nb = realloc(s->buf, (s->len + n + 1) * 2);
        if (nb == NULL) {
            s->bad = 1;
            return 0;
        }
        s->buf = nb;
        s->cap = (s->len + n + 1) * 2;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
    while (!s->done && (end = strstr(s->buf, "\n\n")) != NULL) {
        size_t used;
        *end = '\0';
        sse_event(s, s->buf);
        used = (size_t)(end + 2 - s->buf);
        memmove(s->buf, end + 2, s->len - used + 1);
        s->len -= used;
    }
    return s->done ? 0 : n;   /* 0 aborts the transfer: we have what we wanted */
}

json_t *it_kernel_events(it_server *s, const char *const *hdrs, const char *kid, long long after, const char *parent,
                         int stop, long timeout_s, int *ended)
{
    char url[256];
    sse e = {.msgs = json_array(), .parent = parent, .stop = stop, .last_id = after, .ids_match = 1};
    struct curl_slist *h = NULL;
    CURL *c = curl_easy_init();
    CURLcode rc;
    long status = 0;

    snprintf(url, sizeof(url), "%s/api/v1/kernels/%s/events?after=%lld", s->base_url, kid, after);
    for (; hdrs && *hdrs; hdrs++)
        h = curl_slist_append(h, *hdrs);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &e);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(e.buf);
    if (ended)
        *ended = e.ended;
    if (status != 200 || !e.done || e.bad || !e.ids_match) {
        fprintf(stderr, "harness: events of kernel %s: status %ld, %s (curl %d) after %zu messages%s\n", kid, status,
                e.done ? "stopped" : "ended early", (int)rc, json_array_size(e.msgs),
                e.ids_match ? "" : "; event ids are not the increasing seq of each message");
        json_decref(e.msgs);
        return NULL;
    }
    return e.msgs;
}

/* ---- a small WebSocket client ------------------------------------------------------ */

static int64_t ws_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to `left_ms` for c->fd to be readable, then read what fits
 * (at most `room` bytes) behind c->buf + c->len: the bytes read, 0 on
 * timeout, -1 when the connection closed or failed. */
static ssize_t ws_fill(it_ws *c, size_t room, int64_t left_ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    ssize_t n;

    if (left_ms <= 0 || poll(&p, 1, (int)left_ms) != 1)
        return 0;
    n = recv(c->fd, c->buf + c->len, room, 0);
    if (n <= 0)
        return -1;
    c->len += (size_t)n;
    return n;
}

long it_ws_open(it_ws *c, it_server *s, const char *src, const char *path, const char *const *headers, size_t cap,
                int timeout_ms)
{
    static const char key[] = "dGhlIHNhbXBsZSBub25jZQ==", accept[] = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    int64_t deadline = ws_now_ms() + timeout_ms;
    char req[4096], *end = NULL, *p;
    size_t used, hl;
    long status = 0;
    int one = 1;

    memset(c, 0, sizeof(*c));
    c->cap = cap < 8192 ? 8192 : cap;
    if ((c->buf = malloc(c->cap + 1)) == NULL || (c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
        c->fd = -1;
        fprintf(stderr, "harness: WebSocket to %s: %s\n", path, strerror(errno));
        return -1;
    }
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (src) {
        struct sockaddr_in from = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &from.sin_addr);
        if (bind(c->fd, (struct sockaddr *)&from, sizeof(from)) < 0) {
            fprintf(stderr, "harness: WebSocket from %s: bind: %s\n", src, strerror(errno));
            return -1;
        }
    }
    if (connect(c->fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
        fprintf(stderr, "harness: WebSocket to %s: connect: %s\n", path, strerror(errno));
        return -1;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    used = (size_t)snprintf(req, sizeof(req),
                            "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
                            path, key);
    for (; headers && *headers && used < sizeof(req); headers++)
        used += (size_t)snprintf(req + used, sizeof(req) - used, "%s\r\n", *headers);
    if (used < sizeof(req))
        used += (size_t)snprintf(req + used, sizeof(req) - used, "\r\n");
    if (used >= sizeof(req) || send(c->fd, req, used, MSG_NOSIGNAL) != (ssize_t)used) {
        fprintf(stderr, "harness: WebSocket to %s: the request was not sent\n", path);
        return -1;
    }
    while (end == NULL) {
        if (ws_fill(c, c->cap - c->len, deadline - ws_now_ms()) <= 0) {
            fprintf(stderr, "harness: WebSocket to %s: no handshake answer\n", path);
            return -1;
        }
        c->buf[c->len] = 0;
        end = strstr((char *)c->buf, "\r\n\r\n");
    }
    sscanf((char *)c->buf, "HTTP/1.1 %ld", &status);
    if (status == 101) {
        *end = '\0';
        if ((p = strcasestr((char *)c->buf, "Sec-WebSocket-Protocol: ")) != NULL)
            sscanf(p + 24, "%63[^\r]", c->protocol);
        p = strcasestr((char *)c->buf, "Sec-WebSocket-Accept: ");
        if (p == NULL || strncmp(p + 22, accept, sizeof(accept) - 1) != 0) {
            fprintf(stderr, "harness: WebSocket to %s: no or a wrong Sec-WebSocket-Accept\n", path);
            return -1;
        }
    }
    hl = (size_t)(end + 4 - (char *)c->buf);
    memmove(c->buf, c->buf + hl, c->len - hl);
    c->len -= hl;
    return status;
}

int it_ws_send(it_ws *c, int b0, const void *data, size_t len, int mask)
{
    uint8_t *f = malloc(len + 14), m[4] = {1, 2, 3, 4};
    size_t h = 2;
    ssize_t sent;

    if (f == NULL)
        return -1;
    f[0] = (uint8_t)b0;
    f[1] = mask ? 0x80 : 0;
    if (len < 126) {
        f[1] |= (uint8_t)len;
    } else if (len < 65536) {
        f[1] |= 126;
        f[2] = (uint8_t)(len >> 8);
        f[3] = (uint8_t)len;
        h = 4;
    } else {
        f[1] |= 127;
        for (int i = 0; i < 8; i++)
            f[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        h = 10;
    }
    if (mask) {
        memcpy(f + h, m, 4);
        h += 4;
    }
    for (size_t i = 0; i < len; i++)
        f[h + i] = (uint8_t)(((const uint8_t *)data)[i] ^ (mask ? m[i & 3] : 0));
    sent = send(c->fd, f, h + len, MSG_NOSIGNAL);
    free(f);
    return sent == (ssize_t)(h + len) ? 0 : -1;
}

int it_ws_recv(it_ws *c, int *opcode, char **data, size_t *len, int timeout_ms)
{
    int64_t deadline = ws_now_ms() + timeout_ms;

    for (;;) {
        if (c->len >= 2) {
            uint64_t plen = c->buf[1] & 0x7F;
            size_t h = 2;
            int have = 1;
            if (c->buf[1] & 0x80) {
                fprintf(stderr, "harness: a masked frame from the server\n");
                return -2;
            }
            if (plen == 126) {
                have = c->len >= 4;
                if (have)
                    plen = (uint64_t)c->buf[2] << 8 | c->buf[3];
                h = 4;
            } else if (plen == 127) {
                have = c->len >= 10;
                if (have) {
                    plen = 0;
                    for (int i = 0; i < 8; i++)
                        plen = plen << 8 | c->buf[2 + i];
                }
                h = 10;
            }
            if (have && h + plen > c->cap) {
                fprintf(stderr, "harness: a frame of %llu bytes (room for %zu)\n", (unsigned long long)plen, c->cap);
                return -2;
            }
            if (have && c->len >= h + plen) {
                *opcode = c->buf[0] & 0x0F;
                if ((*data = malloc((size_t)plen + 1)) == NULL)
                    return -2;
                memcpy(*data, c->buf + h, (size_t)plen);
                (*data)[plen] = '\0';
                *len = (size_t)plen;
                memmove(c->buf, c->buf + h + plen, c->len - h - (size_t)plen);
                c->len -= h + (size_t)plen;
                return 1;
            }
        }
        switch (ws_fill(c, c->cap - c->len, deadline - ws_now_ms())) {
        case 0:
            return 0;
        case -1:
            return -1;
        default:
            break;
        }
    }
}

void it_ws_close(it_ws *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

int it_fds_reserve(unsigned long need, char *why, size_t n)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        snprintf(why, n, "getrlimit: %s", strerror(errno));
        return -1;
    }
    if (rl.rlim_cur < need && rl.rlim_max != rl.rlim_cur) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < need) {
        snprintf(why, n, "RLIMIT_NOFILE %llu is below the %lu this test needs", (unsigned long long)rl.rlim_cur,
                 need);
        return -1;
    }
    return 0;
}

long it_tier_set(it_server *s, const char *const *hdrs, const char *tier, const char *field, const char *value)
{
    char path[128], *body;
    json_t *v = json_loads(value, JSON_DECODE_ANY, NULL);
    json_t *b = json_object();
    it_resp r;
    long st;

    if (v == NULL) {
        fprintf(stderr, "harness: not a JSON value: %s\n", value);
        json_decref(b);
        return -1;
    }
    json_object_set(b, field, v);
    body = json_dumps(b, JSON_COMPACT);
    snprintf(path, sizeof(path), "/api/v1/admin/tiers/%s", tier);
    it_request(&r, s, "PUT", path, body, hdrs);
    st = r.status;
    if ((st == 422 && (r.body == NULL || strstr(r.body, field) == NULL)) ||
        (st == 200 && !json_equal(json_object_get(r.json, field), v))) {
        fprintf(stderr, "harness: PUT %s %s -> %ld %.300s\n", path, body, st, r.body ? r.body : "");
        st = -1;
    }
    it_resp_free(&r);
    free(body);
    json_decref(b);
    json_decref(v);
    return st;
}

/* ---- workspaces ------------------------------------------------------------------- */

int it_host_idmap(char *why, size_t n)
{
    char out[16384], line[512];

    if (sandbox_check(out, sizeof(out), "kernels on a project's tree (real sandboxes)", why, n) < 0)
        return 0;
    if (check_line(line, sizeof(line), out, "workspaces") == NULL) {
        snprintf(why, n, "this host cannot idmap bind mounts");
        return 0;
    }
    if (strstr(line, "idmapped bind mounts: yes"))
        return 1;
    snprintf(why, n, "this host cannot idmap bind mounts: %s", line);
    return 0;
}

char *it_kernel_run(it_server *s, const char *const *hdrs, const char *kid, const char *pid, const char *code,
                    int max_s)
{
    static int cell;
    char res[64], path[160], msg_id[128], *wrapped, *out = NULL;
    size_t cap = strlen(code) * 2 + 1024, at = 0;
    it_resp r;

    snprintf(res, sizeof(res), "_res/%d-%d.txt", (int)getpid(), ++cell);
    if ((wrapped = malloc(cap)) == NULL)
        return NULL;
    at += (size_t)snprintf(wrapped + at, cap - at, "def _cell():\n    out = ''\n");
    for (const char *line = code; *line;) {
        size_t k = strcspn(line, "\n");
        at += (size_t)snprintf(wrapped + at, cap - at, "    %.*s\n", (int)k, line);
        line += k + (line[k] == '\n');
    }
    snprintf(wrapped + at, cap - at,
             "    return out\n"
             "import os as _os, traceback as _tb\n"
             "try:\n    _o = 'OK ' + str(_cell())\n"
             "except BaseException:\n    _o = 'TRACEBACK ' + _tb.format_exc()\n"
             "_os.makedirs('/home/aistudio/work/_res', exist_ok=True)\n"
             "open('/home/aistudio/work/%s.tmp', 'w').write(_o)\n"
             "_os.rename('/home/aistudio/work/%s.tmp', '/home/aistudio/work/%s')\n",
             res, res, res);
    if (it_kernel_execute(msg_id, sizeof(msg_id), s, hdrs, kid, wrapped, NULL) < 0) {
        free(wrapped);
        return NULL;
    }
    free(wrapped);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", pid, res);
    for (int i = 0; i < max_s * 10 && out == NULL; i++) {
        it_request(&r, s, "GET", path, NULL, hdrs);
        if (r.status == 200 && r.body)
            out = strdup(r.body);
        it_resp_free(&r);
        if (out == NULL)
            usleep(100 * 1000);
    }
    if (out == NULL) {
        fprintf(stderr, "harness: cell %d wrote no result within %d s:\n%s\n", cell, max_s, code);
        return NULL;
    }
    if (strncmp(out, "OK ", 3) != 0) {
        fprintf(stderr, "harness: cell %d failed: %s\n", cell, out);
        free(out);
        return NULL;
    }
    memmove(out, out + 3, strlen(out + 3) + 1);
    return out;
}
