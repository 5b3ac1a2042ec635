/*
 * static.c - serve the built browser app (web/, built into cfg.web_dir).
 *
 * The app is a single page: its own routes (/projects/..., /account, ...)
 * all answer index.html and the script picks the page from the URL
 * (history routing). Hashed files under /assets/ never change under one name,
 * so they are cached for a year; index.html is revalidated every time and
 * carries the Content-Security-Policy. The app's routes are listed explicitly
 * rather than as a catch-all so an unknown /api/ path, or a POST to a path
 * that does not exist, stays the plain 404 it was.
 *
 * Paths are checked before any file is opened: only [A-Za-z0-9._-] in each
 * segment, no segment that starts with '.', so neither ".." nor hidden files
 * can be reached, and only regular files are served (O_NOFOLLOW, fstat).
 * When the client accepts gzip and the build wrote NAME.gz next to NAME, the
 * compressed copy is sent with Content-Encoding: gzip.
 */
#include "gw_int.h"

#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Scripts and styles only from this origin; user HTML outputs render in
 * sandboxed iframes (srcdoc, no allow-same-origin) that inherit this policy. */
#define WEB_CSP                                                                             \
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "             \
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "               \
    "frame-src 'self' blob: data:; object-src 'none'; base-uri 'none'; "                    \
    "form-action 'self'; frame-ancestors 'none'"

#define WEB_MAX_FILE (INT64_C(32) << 20)   /* nothing the build writes comes close */

static const struct {
    const char *ext, *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".woff2", "font/woff2"},
    {".woff", "font/woff"},
    {".ttf", "font/ttf"},
    {".txt", "text/plain; charset=utf-8"},
};

static const char *content_type_for(const char *path)
{
    const char *dot = strrchr(path, '.');

    if (dot != NULL && strchr(dot, '/') == NULL)
        for (size_t i = 0; i < sizeof(content_types) / sizeof(content_types[0]); i++)
            if (strcmp(dot, content_types[i].ext) == 0)
                return content_types[i].type;
    return "application/octet-stream";
}

/* Is `rel` (relative, '/'-separated) safe to join under the web dir? */
static bool path_is_safe(const char *rel)
{
    const char *s = rel;

    if (*s == '\0' || strlen(rel) > 256)
        return false;
    while (*s) {
        const char *end = strchr(s, '/');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 0 || s[0] == '.')
            return false;   /* empty segment, "..", ".", hidden file */
        for (size_t i = 0; i < n; i++) {
            char c = s[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-'))
                return false;
        }
        s += n;
        if (*s == '/')
            s++;
    }
    return true;
}

/* Read a regular file whole. ED_ENOTFOUND when it is missing, a link or not
 * a regular file; ED_EIO when reading fails; ED_EBUSY (503) out of memory.
 * Caller frees *out. */
static int read_whole(char **out, size_t *out_len, const char *path)
{
    struct stat sb;
    char *buf = NULL;
    size_t got = 0;
    int fd, err = 0;

    *out = NULL;
    *out_len = 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return ed_error_set(errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? ED_ENOTFOUND
                                                                                  : ED_EIO,
                            "no such file in the web app");
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > WEB_MAX_FILE) {
        err = ed_error_set(ED_ENOTFOUND, "no such file in the web app");
        goto done;
    }
    if ((buf = malloc((size_t)sb.st_size + 1)) == NULL) {
        err = ed_error_set(ED_EBUSY, "out of memory reading a web app file");
        goto done;
    }
    while (got < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = ed_error_set(ED_EIO, "reading a web app file: %s", n < 0 ? strerror(errno)
                                                                           : "short read");
            goto done;
        }
        got += (size_t)n;
    }
    *out = buf;
    *out_len = got;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return err;
}

static bool accepts_gzip(gw_request *req)
{
    const char *ae = gw_request_header(req, "Accept-Encoding");

    return ae != NULL && strstr(ae, "gzip") != NULL;
}

/* Answer `rel` from the web dir with `cache_control`. */
static int serve_file(gw_request *req, gw_response *res, const char *rel, const char *cache_control,
                      bool html)
{
    const char *dir = req->srv->cfg.web_dir;
    char path[1024];
    char *buf = NULL;
    size_t len = 0;
    bool gz = false;
    int err, n;

    if (!path_is_safe(rel))
        return ed_error_set(ED_ENOTFOUND, "no such file in the web app");
    if (dir[0] == '\0')
        return ed_error_set(ED_EBUSY, "the web app is not configured (set web_dir or EDDY_WEB_DIR)");
    if (accepts_gzip(req)) {
        n = snprintf(path, sizeof(path), "%s/%s.gz", dir, rel);
        if (n > 0 && (size_t)n < sizeof(path) && read_whole(&buf, &len, path) == 0)
            gz = true;
        ed_error_clear();
    }
    if (!gz) {
        n = snprintf(path, sizeof(path), "%s/%s", dir, rel);
        if (n < 0 || (size_t)n >= sizeof(path))
            return ed_error_set(ED_ENOTFOUND, "no such file in the web app");
        if ((err = read_whole(&buf, &len, path)) < 0) {
            if (err == ED_ENOTFOUND && html)
                return ed_error_set(ED_EBUSY, "the web app is not built: no index.html in %s "
                                              "(run `npm ci && npm run build` in web/)", dir);
            return err;
        }
    }
    if (gw_response_header(res, "Cache-Control", cache_control) < 0 ||
        gw_response_header(res, "Vary", "Accept-Encoding") < 0 ||
        (gz && gw_response_header(res, "Content-Encoding", "gzip") < 0) ||
        (html && (gw_response_header(res, "Content-Security-Policy", WEB_CSP) < 0 ||
                  gw_response_header(res, "X-Frame-Options", "DENY") < 0))) {
        free(buf);
        return ed_error_set(ED_EBUSY, "out of memory answering a web app file");
    }
    return gw_respond_bytes(res, 200, content_type_for(rel), buf, len);
}

/* Every page of the app: index.html, never cached without revalidation. */
static int get_app(gw_request *req, gw_response *res)
{
    return serve_file(req, res, "index.html", "no-cache", true);
}

/* Content-hashed build output: cached for a year. */
static int get_asset(gw_request *req, gw_response *res)
{
    char rel[300];
    int n = snprintf(rel, sizeof(rel), "assets/%s", req->params[0]);

    if (n < 0 || (size_t)n >= sizeof(rel))
        return ed_error_set(ED_ENOTFOUND, "no such file in the web app");
    return serve_file(req, res, rel, "public, max-age=31536000, immutable", false);
}

/* Unhashed files at the root of the build (the icon). */
static int get_root_file(gw_request *req, gw_response *res)
{
    return serve_file(req, res, req->path + 1, "public, max-age=3600", false);
}

#define APP(p) {"GET", p, get_app, GW_PUBLIC, "The web app (index.html)"}

const gw_route gw__routes_static[] = {
    APP("/"),
    APP("/login"),
    APP("/signup"),
    APP("/projects"),
    APP("/projects/{rest*}"),
    APP("/account"),
    APP("/admin"),
    APP("/admin/{rest*}"),
    APP("/jobs"),
    APP("/jobs/{rest*}"),
    APP("/datasets"),
    APP("/datasets/{rest*}"),
    APP("/competitions"),
    APP("/competitions/{rest*}"),
    APP("/deployments"),
    APP("/deployments/{rest*}"),
    {"GET", "/assets/{path*}", get_asset, GW_PUBLIC, "The web app's hashed scripts and styles"},
    {"GET", "/favicon.svg", get_root_file, GW_PUBLIC, "The web app's icon"},
    {NULL, NULL, NULL, 0, NULL},
};
