/* `eddy datasets download` against a server the real one never is: archives
 * (built here with Python's tarfile) holding "../" and absolute paths, a
 * symbolic link, a hard link, an entry the manifest does not list, bytes
 * whose sha256 is not the manifest's, a cut-off archive, and a link planted
 * in the output directory; and a single file whose bytes do not match. The
 * client refuses each with a message and exit 1, writes nothing outside the
 * output directory, and leaves no partial file behind. A small HTTP
 * responder (a child process on 127.0.0.1:0) answers from a table with
 * binary bodies. */
#include "harness.h"

#include "ed_crypto.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DSID "11111111-2222-3333-4444-555555555555"

typedef struct route {
    const char *request;    /* "GET /path" */
    const char *head;       /* status line and headers, without the blank line */
    const char *body;
    size_t      len;
} route;

static char dir[64], home[128], work[128], url_env[80];
static const char key_env[] = "EDDY_API_KEY=eddy_test_notarealkey_0000";
static pid_t fake_pid;

static void write_all(int c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(c, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void serve_one(int c, const route *routes)
{
    char req[16384], line[2048], head[1024];
    size_t used = 0;
    const route *hit = NULL;

    while (used < sizeof(req) - 1) {
        ssize_t n = read(c, req + used, sizeof(req) - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        req[used] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    req[used] = '\0';
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(req, "\r\n"), req);
    if (strrchr(line, ' '))
        *strrchr(line, ' ') = '\0';
    for (const route *r = routes; r->request; r++)
        if (strcmp(r->request, line) == 0)
            hit = r;
    if (hit == NULL) {
        static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                                 "{\"error\":{\"code\":\"not_found\",\"message\":\"no route\"}}";
        write_all(c, nf, sizeof(nf) - 1);
    } else {
        snprintf(head, sizeof(head), "%s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", hit->head, hit->len);
        write_all(c, head, strlen(head));
        write_all(c, hit->body, hit->len);
    }
    close(c);
}

static void fake_start(const route *routes)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t al = sizeof(a);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    ck_assert_int_ge(s, 0);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(s, 16), 0);
    ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &al), 0);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=http://127.0.0.1:%d", ntohs(a.sin_port));
    fake_pid = fork();
    ck_assert_int_ge(fake_pid, 0);
    if (fake_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive a failed test */
        alarm(120);
        for (;;) {
            int c = accept(s, NULL, NULL);
            if (c >= 0)
                serve_one(c, routes);
        }
    }
    close(s);
}

static void fake_stop(void)
{
    if (fake_pid > 0) {
        kill(fake_pid, SIGKILL);
        waitpid(fake_pid, NULL, 0);
        fake_pid = 0;
    }
}

static void eddy(it_run *o, const char *const *argv)
{
    const char *const env[] = {url_env, key_env, NULL};
    it_run_eddy(o, dir, home, NULL, env, argv);
}

#define EDDY(o, ...) eddy((o), (const char *const[]){"eddy", __VA_ARGS__, NULL})

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/eddy-it-clidsh-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(work, sizeof(work), "%s/work", dir);
    mkdir(home, 0700);
    mkdir(work, 0700);
}

static void teardown(void)
{
    char cmd[128];
    fake_stop();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Build a tar with Python's tarfile from `py` (statements using `t`, an open
 * tarfile, and add(name, data)); its bytes into *out (malloc'd). */
static size_t tar_build(char **out, const char *py)
{
    char script[4096], path[200], cmd[400];
    FILE *f;
    size_t n;
    struct stat sb;

    snprintf(path, sizeof(path), "%s/evil.tar", dir);
    snprintf(script, sizeof(script),
             "import io, tarfile\n"
             "t = tarfile.open('%s', 'w', format=tarfile.PAX_FORMAT)\n"
             "def add(name, data):\n"
             "    i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))\n"
             "%s"
             "t.close()\n",
             path, py);
    snprintf(cmd, sizeof(cmd), "%s/mk.py", dir);
    f = fopen(cmd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(script, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/mk.py", dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(stat(path, &sb), 0);
    *out = malloc((size_t)sb.st_size);
    f = fopen(path, "rb");
    n = fread(*out, 1, (size_t)sb.st_size, f);
    fclose(f);
    return n;
}

/* A manifest entry {path, size, sha256} of `data`. */
static void entry(char *out, size_t n, const char *path, const char *data)
{
    char hex[65];
    ed_sha256_hex(hex, data, strlen(data));
    snprintf(out, n, "{\"path\":\"%s\",\"size\":%zu,\"sha256\":\"%s\",\"media_type\":\"text/plain\"}", path,
             strlen(data), hex);
}

/* Entries no file or directory of `d` (recursively) is other than those
 * named in `allowed` (NULL-terminated relative paths): how many others. */
static int strays(const char *d, const char *rel, const char *const *allowed)
{
    char path[600], sub[600];
    struct dirent *de;
    DIR *dd;
    int n = 0;

    snprintf(path, sizeof(path), "%s%s%s", d, rel[0] ? "/" : "", rel);
    if ((dd = opendir(path)) == NULL)
        return 0;
    while ((de = readdir(dd)) != NULL) {
        bool ok = false;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, sub) == 0;
        if (!ok) {
            fprintf(stderr, "stray: %s/%s\n", d, sub);
            n++;
        }
        if (de->d_type == DT_DIR)
            n += strays(d, sub, allowed);
    }
    closedir(dd);
    return n;
}

typedef struct evil {
    const char *what;
    const char *py;         /* the archive */
    bool        two;        /* the manifest lists the second (hostile) entry too */
    const char *message;    /* a part of the error */
} evil;

START_TEST(download_refuses_hostile_archives)
{
    char ok_entry[300], esc_entry[300], abs_entry[300], link_entry[300], hard_entry[300], files[2000],
        version[2400], out[300], probe[300];
    const evil cases[] = {
        {"dot-dot", "add('ok.txt', b'fine')\nadd('../escape.txt', b'gotcha')\n", true, "unsafe path"},
        {"absolute", "add('ok.txt', b'fine')\nadd('/tmp/eddy-cli-ds-abs.txt', b'gotcha')\n", true, "unsafe path"},
        {"symlink",
         "add('ok.txt', b'fine')\ni = tarfile.TarInfo('link'); i.type = tarfile.SYMTYPE; i.linkname = "
         "'/etc/passwd'; t.addfile(i)\n",
         true, "not a regular file"},
        {"hardlink",
         "add('ok.txt', b'fine')\ni = tarfile.TarInfo('hard'); i.type = tarfile.LNKTYPE; i.linkname = "
         "'ok.txt'; t.addfile(i)\n",
         true, "not a regular file"},
        {"unlisted", "add('ok.txt', b'fine')\nadd('extra.txt', b'more')\n", false, "does not list"},
        {"wrong bytes", "add('ok.txt', b'FINE')\n", false, "sha256"},
        {"cut off", "add('ok.txt', b'fine')\nadd('big.txt', b'x' * 100000)\n", false, "ended early"},
    };
    char *tar = NULL;
    it_run o;

    entry(ok_entry, sizeof(ok_entry), "ok.txt", "fine");
    entry(esc_entry, sizeof(esc_entry), "../escape.txt", "gotcha");
    entry(abs_entry, sizeof(abs_entry), "/tmp/eddy-cli-ds-abs.txt", "gotcha");
    snprintf(link_entry, sizeof(link_entry), "{\"path\":\"link\",\"size\":0,\"sha256\":\"%064d\"}", 0);
    snprintf(hard_entry, sizeof(hard_entry), "{\"path\":\"hard\",\"size\":0,\"sha256\":\"%064d\"}", 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const evil *e = &cases[i];
        const char *second = i == 0 ? esc_entry : i == 1 ? abs_entry : i == 2 ? link_entry : hard_entry;
        size_t n = tar_build(&tar, e->py);
        const char *allowed[] = {NULL};
        if (strcmp(e->what, "cut off") == 0)
            n -= 60000;     /* in the middle of big.txt */
        if (e->two)
            snprintf(files, sizeof(files), "%s,%s", ok_entry, second);
        else
            snprintf(files, sizeof(files), "%s", ok_entry);
        if (strcmp(e->what, "cut off") == 0) {
            char big[300], *x = malloc(100001);
            memset(x, 'x', 100000);
            x[100000] = '\0';
            entry(big, sizeof(big), "big.txt", x);
            free(x);
            snprintf(files, sizeof(files), "%s,%s", ok_entry, big);
        }
        snprintf(version, sizeof(version), "{\"number\":1,\"size_bytes\":4,\"file_count\":2,\"files\":[%s]}", files);
        const route routes[] = {
            {"GET /api/v1/datasets/" DSID, "HTTP/1.1 200 OK\r\nContent-Type: application/json",
             "{\"id\":\"" DSID "\",\"owner\":\"eve\",\"slug\":\"evil\"}",
             strlen("{\"id\":\"" DSID "\",\"owner\":\"eve\",\"slug\":\"evil\"}")},
            {"GET /api/v1/datasets/" DSID "/versions/latest", "HTTP/1.1 200 OK\r\nContent-Type: application/json",
             version, strlen(version)},
            {"GET /api/v1/datasets/" DSID "/versions/1/archive", "HTTP/1.1 200 OK\r\nContent-Type: application/x-tar", tar,
             n},
            {NULL, NULL, NULL, 0},
        };
        fake_start(routes);
        snprintf(out, sizeof(out), "%s/out%zu", work, i);
        EDDY(&o, "datasets", "download", DSID, "-o", out);
        ck_assert_msg(o.status == 1, "%s: exit %d\n%s\n%s", e->what, o.status, o.out, o.err);
        ck_assert_msg(strstr(o.err, e->message) != NULL, "%s: %s", e->what, o.err);
        fake_stop();
        free(tar);
        /* nothing but files the manifest names, and never a temporary file */
        {
            const char *okonly[] = {"ok.txt", NULL};
            ck_assert_int_eq(strays(out, "", strcmp(e->what, "wrong bytes") == 0 ? allowed : okonly), 0);
        }
    }
    snprintf(probe, sizeof(probe), "%s/escape.txt", work);
    ck_assert_int_ne(access(probe, F_OK), 0);
    ck_assert_int_ne(access("/tmp/eddy-cli-ds-abs.txt", F_OK), 0);
}
END_TEST

START_TEST(download_never_follows_a_planted_link)
{
    char files[400], e1[300], version[600], out[300], target[300], probe[400], *tar = NULL;
    size_t n = tar_build(&tar, "add('sub/a.txt', b'alpha')\n");
    it_run o;

    entry(e1, sizeof(e1), "sub/a.txt", "alpha");
    snprintf(files, sizeof(files), "%s", e1);
    snprintf(version, sizeof(version), "{\"number\":1,\"size_bytes\":5,\"file_count\":1,\"files\":[%s]}", files);
    const route routes[] = {
        {"GET /api/v1/datasets/" DSID, "HTTP/1.1 200 OK\r\nContent-Type: application/json",
         "{\"id\":\"" DSID "\",\"owner\":\"eve\",\"slug\":\"evil\"}",
         strlen("{\"id\":\"" DSID "\",\"owner\":\"eve\",\"slug\":\"evil\"}")},
        {"GET /api/v1/datasets/" DSID "/versions/latest", "HTTP/1.1 200 OK\r\nContent-Type: application/json", version,
         strlen(version)},
        {"GET /api/v1/datasets/" DSID "/versions/1/archive", "HTTP/1.1 200 OK\r\nContent-Type: application/x-tar", tar,
         n},
        {NULL, NULL, NULL, 0},
    };
    /* out/sub is a link to a directory outside */
    snprintf(out, sizeof(out), "%s/out", work);
    snprintf(target, sizeof(target), "%s/elsewhere", work);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    ck_assert_int_eq(mkdir(target, 0755), 0);
    snprintf(probe, sizeof(probe), "%s/sub", out);
    ck_assert_int_eq(symlink(target, probe), 0);
    fake_start(routes);
    EDDY(&o, "datasets", "download", DSID, "-o", out);
    ck_assert_msg(o.status == 1, "exit %d\n%s", o.status, o.err);
    ck_assert_ptr_nonnull(strstr(o.err, "is a link or not a directory"));
    snprintf(probe, sizeof(probe), "%s/a.txt", target);
    ck_assert_int_ne(access(probe, F_OK), 0);
    fake_stop();
    free(tar);
}
END_TEST

START_TEST(single_file_with_wrong_bytes_is_not_kept)
{
    char e1[300], version[600], out[300], probe[400];
    static const char body[] = "EVIL";
    it_run o;

    entry(e1, sizeof(e1), "a.txt", "good");
    snprintf(version, sizeof(version), "{\"number\":1,\"size_bytes\":4,\"file_count\":1,\"files\":[%s]}", e1);
    const route routes[] = {
        {"GET /api/v1/datasets/" DSID, "HTTP/1.1 200 OK\r\nContent-Type: application/json",
         "{\"id\":\"" DSID "\",\"owner\":\"eve\",\"slug\":\"evil\"}",
         strlen("{\"id\":\"" DSID "\",\"owner\":\"eve\",\"slug\":\"evil\"}")},
        {"GET /api/v1/datasets/" DSID "/versions/latest", "HTTP/1.1 200 OK\r\nContent-Type: application/json", version,
         strlen(version)},
        {"GET /api/v1/datasets/" DSID "/versions/1/files/a.txt", "HTTP/1.1 200 OK\r\nContent-Type: text/plain", body,
         4},
        {NULL, NULL, NULL, 0},
    };
    fake_start(routes);
    snprintf(out, sizeof(out), "%s/a.txt", work);
    EDDY(&o, "datasets", "download", DSID, "a.txt", "-o", out);
    ck_assert_msg(o.status == 1, "exit %d\n%s", o.status, o.err);
    ck_assert_ptr_nonnull(strstr(o.err, "sha256"));
    ck_assert_int_ne(access(out, F_OK), 0);
    snprintf(probe, sizeof(probe), "%s.eddy-part", out);
    ck_assert_int_ne(access(probe, F_OK), 0);
    fake_stop();
}
END_TEST

int main(void)
{
    const TTest *tests[] = {download_refuses_hostile_archives, download_never_follows_a_planted_link,
                            single_file_with_wrong_bytes_is_not_kept, NULL};
    return it_tests_run("cli_datasets_hostile", 120, setup, teardown, tests);
}
