/*
 * transfer.c - requests whose bodies are too large to hold in memory: a
 * request body read from a file as curl sends it (an upload chunk), and a
 * response body handed to a sink as it arrives (a download, an archive).
 *
 * It uses its own curl handle on the client's URL and credential, resolved
 * the way cli_open does (EDDY_API_KEY, else the credential file's key when
 * the file's URL is the one in use): client.c's handle and key stay its own.
 */
#include "cli.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_json.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_S 10L
#define LOW_SPEED_S       60L       /* a transfer under 1 byte/s for this long is broken */
#define ERROR_BODY_MAX    (1 << 20) /* bytes of an error answer kept */

typedef struct xfer {
    cli_resp     *r;
    long          status;
    bool          checked;      /* the status is known */
    /* request body */
    int           src_fd;
    int64_t       src_off, src_left;
    /* response body */
    cli_sink_fn   sink;
    void         *payload;
    int           sink_err;
    /* the test hook */
    int64_t       drop_after;   /* < 0: none */
    bool          drop_kill;
} xfer;

/* EDDY_TEST_UPLOAD_DROP_AFTER=N (tests only): once N bytes of request bodies
 * have been sent by this process, break the connection in the middle of the
 * body, once; with EDDY_TEST_UPLOAD_DROP_KILL=1 the process is SIGKILLed
 * there instead (a user's kill -9, a crash). The server then keeps only the
 * chunks it made durable; the next try resumes from its offset. */
static int64_t g_sent;
static bool g_dropped;

static int64_t env_drop_after(void)
{
    const char *s = getenv("EDDY_TEST_UPLOAD_DROP_AFTER");
    char *end;
    long long v;

    if (s == NULL || *s == '\0' || g_dropped)
        return -1;
    v = strtoll(s, &end, 10);
    return *end == '\0' && v >= 0 ? v : -1;
}

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t want = size * nmemb;
    ssize_t n;

    if ((int64_t)want > x->src_left)
        want = (size_t)x->src_left;
    if (want == 0)
        return 0;
    if (x->drop_after >= 0 && g_sent + (int64_t)want > x->drop_after) {
        want = (size_t)(x->drop_after - g_sent);
        if (want == 0) {
            g_dropped = true;
            if (x->drop_kill)
                raise(SIGKILL);
            return CURL_READFUNC_ABORT;
        }
    }
    do
        n = pread(x->src_fd, buf, want, x->src_off);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return CURL_READFUNC_ABORT;     /* the local file shrank or cannot be read */
    x->src_off += n;
    x->src_left -= n;
    g_sent += n;
    return (size_t)n;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;

    if (x->status >= 200 && x->status < 300 && x->sink) {
        int rc = x->sink(ptr, n, x->payload);
        if (rc < 0) {
            x->sink_err = rc;
            return 0;
        }
        return n;
    }
    if (x->r->body.len + n > ERROR_BODY_MAX)
        return n;   /* keep the start of an error answer */
    return ed_buf_append(&x->r->body, ptr, n) < 0 ? 0 : n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;

    if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0) {
        int major = 0, minor = 0, code = 0;
        ed_buf_reset(&x->r->headers);
        /* "HTTP/1.1 206 Partial Content": the status before the body arrives */
        if (sscanf(ptr, "HTTP/%d.%d %d", &major, &minor, &code) >= 3 ||
            sscanf(ptr, "HTTP/%d %d", &major, &code) == 2)
            x->status = code;
        x->checked = true;
    }
    return ed_buf_append(&x->r->headers, ptr, n) < 0 ? 0 : n;
}

/* The key cli_open would have chosen for this URL, or "" for none. */
static void key_for(char *out, size_t n, const char *url)
{
    const char *env = getenv("EDDY_API_KEY");
    cli_config cfg;

    out[0] = '\0';
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return;
    }
    memset(&cfg, 0, sizeof(cfg));
    if (cli_config_load(&cfg) == 0 && strcmp(cfg.url, url) == 0)
        snprintf(out, n, "%s", cfg.api_key);
    ed_error_clear();
    explicit_bzero(&cfg, sizeof(cfg));
}

static int status_code(long status)
{
    switch (status) {
    case 400: return ED_EINVAL;
    case 401: return ED_EAUTH;
    case 402: return ED_EQUOTA;
    case 403: return ED_EPERM;
    case 404: return ED_ENOTFOUND;
    case 409: return ED_ECONFLICT;
    case 412: return ED_EPRECOND;
    case 413: return ED_ETOOBIG;
    case 416: return ED_EINVAL;
    case 422: return ED_EUNPROC;
    case 429: return ED_ELIMIT;
    case 503: return ED_EBUSY;
    case 500: return ED_EINTERNAL;
    default:  return ED_EIO;
    }
}

/* A non-2xx answer as "<code>: <message>" (the API's error body), as cli_call words it. */
static int refusal(cli_resp *r, const char *url)
{
    const json_t *e;
    const char *code, *msg;

    if (r->body.len > 0 && ed_json_parse(&r->json, r->body.data, r->body.len, 64) < 0)
        r->json = NULL;
    e = r->json ? json_object_get(r->json, "error") : NULL;
    code = json_string_value(json_object_get(e, "code"));
    msg = json_string_value(json_object_get(e, "message"));
    if (code && msg)
        return ed_error_set(status_code(r->status), "%s: %s", code, msg);
    return ed_error_set(status_code(r->status), "HTTP %ld from %s", r->status, url);
}

int cli_stream(cli_resp *r, cli *c, const char *method, const char *path, const char *const *headers,
               int src_fd, int64_t src_off, int64_t src_len, cli_sink_fn sink, void *payload)
{
    char url[4608], key[300], h[400];
    struct curl_slist *l = NULL, *t;
    xfer x;
    CURL *k;
    CURLcode rc;
    int err = 0;

    memset(r, 0, sizeof(*r));
    memset(&x, 0, sizeof(x));
    x.r = r;
    x.src_fd = src_fd;
    x.src_off = src_off;
    x.src_left = src_fd >= 0 ? src_len : 0;
    x.sink = sink;
    x.payload = payload;
    x.drop_after = src_fd >= 0 ? env_drop_after() : -1;
    x.drop_kill = getenv("EDDY_TEST_UPLOAD_DROP_KILL") && strcmp(getenv("EDDY_TEST_UPLOAD_DROP_KILL"), "1") == 0;
    if (snprintf(url, sizeof(url), "%s%s", cli_url(c), path) >= (int)sizeof(url))
        return ed_error_set(CLI_EUSAGE, "request path is too long");
    if ((k = curl_easy_init()) == NULL)
        return ed_error_set(ED_EINTERNAL, "cannot make a curl handle");
    curl_easy_setopt(k, CURLOPT_URL, url);
    curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(k, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(k, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_S);
    curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);   /* never carry the key elsewhere */
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(k, CURLOPT_USERAGENT, "eddy-cli/" EDDY_VERSION);
    if (src_fd >= 0) {
        curl_easy_setopt(k, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(k, CURLOPT_INFILESIZE_LARGE, (curl_off_t)src_len);
        curl_easy_setopt(k, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(k, CURLOPT_READDATA, &x);
    }
    if (strcmp(method, "GET") != 0 && !(src_fd >= 0 && strcmp(method, "PUT") == 0))
        curl_easy_setopt(k, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(k, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(k, CURLOPT_HEADERDATA, &x);
#define ADD(s)                                                                                  \
    do {                                                                                        \
        if ((t = curl_slist_append(l, (s))) == NULL)                                            \
            goto oom;                                                                           \
        l = t;                                                                                  \
    } while (0)
    if (src_fd >= 0) {
        ADD("Content-Type: application/octet-stream");
        ADD("Expect:");
    }
    for (const char *const *e = headers; e && *e; e++)
        ADD(*e);
    key_for(key, sizeof(key), cli_url(c));
    if (key[0]) {
        snprintf(h, sizeof(h), "Authorization: Bearer %s", key);
        t = curl_slist_append(l, h);
        explicit_bzero(h, sizeof(h));
        if (t == NULL)
            goto oom;
        l = t;
    }
    explicit_bzero(key, sizeof(key));
#undef ADD
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, l);
    rc = curl_easy_perform(k);
    curl_easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r->status);
    if (x.sink_err < 0)
        err = x.sink_err;
    else if (rc != CURLE_OK)
        err = ed_error_set(CLI_ETRANSPORT, "transfer with %s broke: %s", cli_url(c), curl_easy_strerror(rc));
    else if (r->status < 200 || r->status >= 300)
        err = refusal(r, cli_url(c));
    curl_slist_free_all(l);
    curl_easy_cleanup(k);
    if (err == 0 && r->body.len > 0 && ed_json_parse(&r->json, r->body.data, r->body.len, 64) < 0)
        r->json = NULL;
    return err;
oom:
    curl_slist_free_all(l);
    curl_easy_cleanup(k);
    return ed_error_set(ED_ENOMEM, "request headers");
}

/* ---- files written under a directory, streamed ---------------------------------- */

int cli_under_open(cli_under *f, const char *root, const char *rel)
{
    char comp[256], tok[17];
    const char *p = rel;
    int dfd;

    memset(f, 0, sizeof(*f));
    f->dfd = f->fd = -1;
    if (!cli_path_is_safe(rel))
        return ed_error_set(ED_EPERM, "refusing the unsafe path '%.200s' from the server", rel);
    if ((dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "cannot open %s: %s", root, strerror(errno));
    for (;;) {
        size_t n = strcspn(p, "/");
        memcpy(comp, p, n);
        comp[n] = '\0';
        p += n;
        if (*p == '\0')
            break;
        p++;
        if (mkdirat(dfd, comp, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            close(dfd);
            return ed_error_set(ED_EIO, "cannot create %s/%s: %s", root, rel, strerror(e));
        }
        int next = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dfd);
        if (next < 0)
            return ed_error_set(ED_EPERM, "refusing to write %s/%s: '%s' is a link or not a directory", root,
                                rel, comp);
        dfd = next;
    }
    snprintf(f->name, sizeof(f->name), "%s", comp);
    ed_random_token(tok, 16);
    snprintf(f->tmp, sizeof(f->tmp), ".%.200s.eddy-%s", comp, tok);
    if ((f->fd = openat(dfd, f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) {
        int e = errno;
        close(dfd);
        return ed_error_set(ED_EIO, "cannot create %s/%s: %s", root, rel, strerror(e));
    }
    f->dfd = dfd;
    return 0;
}

int cli_under_write(cli_under *f, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = write(f->fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return ed_error_set(ED_EIO, "cannot write %s: %s", f->name, strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int cli_under_commit(cli_under *f)
{
    int err = 0;

    if (close(f->fd) < 0)
        err = ed_error_set(ED_EIO, "cannot write %s: %s", f->name, strerror(errno));
    f->fd = -1;
    /* renameat replaces a symlink named like the file itself, never what it points to */
    if (err == 0 && renameat(f->dfd, f->tmp, f->dfd, f->name) < 0)
        err = ed_error_set(ED_EIO, "cannot write %s: %s", f->name, strerror(errno));
    if (err < 0)
        unlinkat(f->dfd, f->tmp, 0);
    close(f->dfd);
    f->dfd = -1;
    return err;
}

void cli_under_abort(cli_under *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->dfd >= 0) {
        unlinkat(f->dfd, f->tmp, 0);
        close(f->dfd);
    }
    f->fd = f->dfd = -1;
}
