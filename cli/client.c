/*
 * client.c - the HTTP client: one curl handle, Bearer auth, JSON in and out,
 * API error bodies turned into messages, Idempotency-Key and retries, and an
 * incremental Server-Sent Events reader.
 */
#include "cli.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_json.h"

#include <curl/curl.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_S 10L
#define REQUEST_TIMEOUT_S 900L    /* a 1 GiB upload on a slow link still fits */
#define TRANSPORT_RETRIES 2

struct cli {
    CURL  *curl;
    char   url[512];
    char  *key;          /* secret; NULL when none */
    char **extra;        /* NULL-terminated copied headers, or NULL */
    char   errbuf[CURL_ERROR_SIZE];
};

static int curl_ready;

static void strip_slashes(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '/')
        s[--n] = '\0';
}

int cli_open(cli **out, const char *url, bool need_key)
{
    cli_config cfg;
    const char *env_url = getenv("EDDY_URL"), *env_key = getenv("EDDY_API_KEY");
    bool have_cfg = false;
    cli *c;
    int err;

    *out = NULL;
    memset(&cfg, 0, sizeof(cfg));
    if ((err = cli_config_load(&cfg)) == 0)
        have_cfg = true;
    else if (err != ED_ENOTFOUND && ((need_key && !(env_key && *env_key)) ||
                                     (!(url && *url) && !(env_url && *env_url))))
        return err;   /* a broken or world-readable file must not be ignored silently */
    if (!url || !*url)
        url = env_url && *env_url ? env_url : NULL;
    if (!url && have_cfg)
        url = cfg.url;
    if (!url)
        return ed_error_set(CLI_EUSAGE, "no server: run `eddy login --url URL` or set EDDY_URL");
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return ed_error_set(CLI_EUSAGE, "server URL '%s' must start with http:// or https://", url);
    if (strlen(url) >= sizeof(c->url))
        return ed_error_set(CLI_EUSAGE, "server URL is too long");
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return ed_error_set(ED_EINTERNAL, "cannot initialise libcurl");
        curl_ready = 1;
    }
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "client");
    snprintf(c->url, sizeof(c->url), "%s", url);
    strip_slashes(c->url);
    if ((c->curl = curl_easy_init()) == NULL) {
        free(c);
        return ed_error_set(ED_EINTERNAL, "cannot make a curl handle");
    }
    /* the stored key goes only to the server that issued it */
    if (env_key && *env_key)
        err = cli_set_key(c, env_key);
    else if (have_cfg && cfg.api_key[0] && strcmp(cfg.url, c->url) == 0)
        err = cli_set_key(c, cfg.api_key);
    else
        err = 0;
    explicit_bzero(&cfg, sizeof(cfg));
    if (err == 0 && need_key && c->key == NULL)
        err = ed_error_set(CLI_EUSAGE, "not logged in to %s: run `eddy login` or set EDDY_API_KEY",
                           c->url);
    if (err < 0) {
        cli_free(c);
        return err;
    }
    *out = c;
    return 0;
}

void cli_free(cli *c)
{
    if (c == NULL)
        return;
    cli_set_key(c, NULL);
    cli_set_headers(c, NULL);
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c);
}

const char *cli_url(const cli *c) { return c->url; }

int cli_set_key(cli *c, const char *key)
{
    char *k = NULL;

    if (key) {
        for (const char *p = key; *p; p++)
            if (!isgraph((unsigned char)*p))
                return ed_error_set(CLI_EUSAGE, "the API key has a space or control character");
        if ((k = strdup(key)) == NULL)
            return ed_error_set(ED_ENOMEM, "key");
    }
    if (c->key) {
        explicit_bzero(c->key, strlen(c->key));
        free(c->key);
    }
    c->key = k;
    return 0;
}

int cli_set_headers(cli *c, const char *const *headers)
{
    size_t n = 0;
    char **copy = NULL;

    for (const char *const *h = headers; h && *h; h++)
        n++;
    if (headers && (copy = calloc(n + 1, sizeof(*copy))) == NULL)
        return ed_error_set(ED_ENOMEM, "headers");
    for (size_t i = 0; i < n; i++)
        if ((copy[i] = strdup(headers[i])) == NULL) {
            for (size_t j = 0; j < i; j++)
                free(copy[j]);
            free(copy);
            return ed_error_set(ED_ENOMEM, "headers");
        }
    for (char **h = c->extra; h && *h; h++) {
        explicit_bzero(*h, strlen(*h));
        free(*h);
    }
    free(c->extra);
    c->extra = copy;
    return 0;
}

void cli_resp_free(cli_resp *r)
{
    if (r == NULL)
        return;
    ed_buf_free(&r->body);
    ed_buf_free(&r->headers);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

int cli_resp_header(char *out, size_t n, const cli_resp *r, const char *name)
{
    size_t nl = strlen(name);
    const char *p = r->headers.data;

    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            len -= (size_t)(v - p);
            while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == ' '))
                len--;
            snprintf(out, n, "%.*s", (int)len, v);
            return 0;
        }
        p = eol ? eol + 1 : NULL;
    }
    return ED_ENOTFOUND;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ed_buf *b = ud;
    return ed_buf_append(b, ptr, size * nmemb) < 0 ? 0 : size * nmemb;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ed_buf *b = ud;
    /* a new status line (after a 100 Continue) starts a new header block */
    if (size * nmemb >= 5 && strncmp(ptr, "HTTP/", 5) == 0)
        ed_buf_reset(b);
    return ed_buf_append(b, ptr, size * nmemb) < 0 ? 0 : size * nmemb;
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
    case 422: return ED_EUNPROC;
    case 429: return ED_ELIMIT;
    case 503: return ED_EBUSY;
    case 500: return ED_EINTERNAL;
    default:  return ED_EIO;
    }
}

/* Turn a non-2xx response into an error code and message. */
static int refusal(const cli_resp *r, const cli *c)
{
    const json_t *e = r->json ? json_object_get(r->json, "error") : NULL;
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    char retry[32] = "";
    int ec = status_code(r->status);

    if (r->status == 429 && cli_resp_header(retry, sizeof(retry), r, "Retry-After") == 0)
        return ed_error_set(ec, "%s: %s (retry after %s s)", code ? code : "rate_limited",
                            msg ? msg : "too many requests", retry);
    if (code && msg)
        return ed_error_set(ec, "%s: %s%s", code, msg,
                            r->status == 401 && c->key ? " (run `eddy login` again?)" : "");
    /* not an API error body: a proxy, or not Eddy at all */
    size_t n = r->body.len > 200 ? 200 : r->body.len;
    const char *b = r->body.data ? r->body.data : "";
    size_t cut = strcspn(b, "\r\n");
    if (cut < n)
        n = cut;
    return ed_error_set(ec, "HTTP %ld from %s%s%.*s", r->status, c->url, n ? ": " : "", (int)n, b);
}

/* Set up the handle for one request; *hl gets the header list to free. */
static int prepare(cli *c, struct curl_slist **hl, const char *method, const char *path,
                   const void *body, size_t len, const char *content_type, const char *idem,
                   const char *accept, const char *last_id)
{
    char url[4608], h[512];
    struct curl_slist *l = NULL, *t;
    CURL *k = c->curl;

    *hl = NULL;
    if (snprintf(url, sizeof(url), "%s%s", c->url, path) >= (int)sizeof(url))
        return ed_error_set(CLI_EUSAGE, "request path is too long");
    curl_easy_reset(k);
    curl_easy_setopt(k, CURLOPT_URL, url);
    curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(k, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);   /* never carry the key elsewhere */
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(k, CURLOPT_USERAGENT, "eddy-cli/" EDDY_VERSION);
    if (strcmp(method, "GET") != 0) {
        if (body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
            strcmp(method, "PATCH") == 0) {
            curl_easy_setopt(k, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
            curl_easy_setopt(k, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
        }
        curl_easy_setopt(k, CURLOPT_CUSTOMREQUEST, method);
    }
#define ADD(s)                                                                                  \
    do {                                                                                        \
        if ((t = curl_slist_append(l, (s))) == NULL)                                            \
            goto oom;                                                                           \
        l = t;                                                                                  \
    } while (0)
    ADD(accept ? accept : "Accept: application/json");
    if (body || strcmp(method, "GET") != 0) {
        snprintf(h, sizeof(h), "Content-Type: %s", content_type ? content_type : "application/json");
        ADD(h);
        ADD("Expect:");   /* no 100-continue round trip */
    }
    if (idem) {
        snprintf(h, sizeof(h), "Idempotency-Key: %s", idem);
        ADD(h);
    }
    if (last_id) {
        snprintf(h, sizeof(h), "Last-Event-ID: %.400s", last_id);
        ADD(h);
    }
    if (c->key) {
        char *auth;
        size_t n = strlen(c->key) + 32;
        if ((auth = malloc(n)) == NULL)
            goto oom;
        snprintf(auth, n, "Authorization: Bearer %s", c->key);
        t = curl_slist_append(l, auth);
        explicit_bzero(auth, n);
        free(auth);
        if (t == NULL)
            goto oom;
        l = t;
    }
    for (char **e = c->extra; e && *e; e++)
        ADD(*e);
#undef ADD
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, l);
    *hl = l;
    return 0;
oom:
    curl_slist_free_all(l);
    return ed_error_set(ED_ENOMEM, "request headers");
}

static int transport_error(cli *c, CURLcode rc)
{
    return ed_error_set(CLI_ETRANSPORT, "cannot reach %s: %s", c->url,
                        c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
}

int cli_call(cli_resp *r, cli *c, const char *method, const char *path, const void *body,
             size_t len, const char *content_type, unsigned flags)
{
    char idem[48];
    bool retry = strcmp(method, "GET") == 0 || (flags & CLI_IDEMPOTENT);
    CURLcode rc = CURLE_OK;
    int err;

    memset(r, 0, sizeof(*r));
    if (flags & CLI_IDEMPOTENT) {
        memcpy(idem, "cli-", 4);
        ed_random_token(idem + 4, 32);
    }
    for (int attempt = 0; attempt <= (retry ? TRANSPORT_RETRIES : 0); attempt++) {
        struct curl_slist *hl = NULL;

        if (attempt > 0)
            usleep(300000u * (unsigned)attempt);
        cli_resp_free(r);
        c->errbuf[0] = '\0';
        if ((err = prepare(c, &hl, method, path, body, len, content_type,
                           (flags & CLI_IDEMPOTENT) ? idem : NULL, NULL, NULL)) < 0)
            return err;
        curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
        curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &r->body);
        curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &r->headers);
        rc = curl_easy_perform(c->curl);
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(hl);
        if (rc == CURLE_OK)
            break;
        if (rc == CURLE_WRITE_ERROR)
            return ed_error_set(ED_ENOMEM, "response body");
    }
    if (rc != CURLE_OK)
        return transport_error(c, rc);
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->body.len > 0 && ed_json_parse(&r->json, r->body.data, r->body.len, 64) < 0)
        r->json = NULL;   /* not JSON: raw bytes (a file, logs) */
    ed_error_clear();
    if (r->status < 200 || r->status >= 300)
        return refusal(r, c);
    return 0;
}

int cli_call_json(json_t **out, cli *c, const char *method, const char *path, const json_t *body,
                  unsigned flags)
{
    char *text = NULL;
    cli_resp r;
    int err;

    *out = NULL;
    if (body && (text = ed_json_dumps(body)) == NULL)
        return ed_error_set(ED_ENOMEM, "request body");
    err = cli_call(&r, c, method, path, text, text ? strlen(text) : 0, "application/json", flags);
    free(text);
    if (err == 0) {
        if (r.json)
            *out = json_incref(r.json);
        else if (r.body.len == 0)
            *out = json_null();
        else
            err = ed_error_set(ED_EIO, "%s %s answered something that is not JSON", method, path);
    }
    cli_resp_free(&r);
    return err;
}

/* ---- Server-Sent Events ------------------------------------------------------ */

typedef struct sse_state {
    cli        *c;
    cli_resp   *r;
    cli_sse_fn  fn;
    void       *payload;
    ed_buf      line, data;
    char        event[64], id[128];
    int         result;     /* 1 stopped by fn, <0 fn's error */
    bool        stream;     /* the response is 2xx: parse it as events */
    bool        checked;
} sse_state;

static int sse_line(sse_state *s, const char *line)
{
    const char *v;

    if (*line == '\0') {   /* blank line: dispatch */
        int rc = 0;
        if (s->data.len > 0 || s->event[0]) {
            if (s->data.len > 0 && s->data.data[s->data.len - 1] == '\n')
                s->data.data[--s->data.len] = '\0';
            rc = s->fn(s->event[0] ? s->event : "message", s->id, s->data.data ? s->data.data : "",
                       s->payload);
        }
        ed_buf_reset(&s->data);
        s->event[0] = '\0';
        return rc;
    }
    if (*line == ':')
        return 0;   /* comment / keep-alive */
    v = strchr(line, ':');
    size_t fl = v ? (size_t)(v - line) : strlen(line);
    v = v ? v + 1 : "";
    if (*v == ' ')
        v++;
    if (fl == 4 && strncmp(line, "data", 4) == 0) {
        if (ed_buf_puts(&s->data, v) < 0 || ed_buf_puts(&s->data, "\n") < 0)
            return ed_error_set(ED_ENOMEM, "event data");
    } else if (fl == 5 && strncmp(line, "event", 5) == 0) {
        snprintf(s->event, sizeof(s->event), "%s", v);
    } else if (fl == 2 && strncmp(line, "id", 2) == 0) {
        snprintf(s->id, sizeof(s->id), "%s", v);
    }
    return 0;
}

static size_t on_sse(char *ptr, size_t size, size_t nmemb, void *ud)
{
    sse_state *s = ud;
    size_t n = size * nmemb;

    if (!s->checked) {
        long status = 0;
        curl_easy_getinfo(s->c->curl, CURLINFO_RESPONSE_CODE, &status);
        s->stream = status >= 200 && status < 300;
        s->checked = true;
    }
    if (!s->stream)
        return ed_buf_append(&s->r->body, ptr, n) < 0 ? 0 : n;
    for (size_t i = 0; i < n; i++) {
        char ch = ptr[i];
        if (ch == '\n') {
            int rc;
            if (s->line.len > 0 && s->line.data[s->line.len - 1] == '\r')
                s->line.data[--s->line.len] = '\0';
            rc = sse_line(s, s->line.data ? s->line.data : "");
            ed_buf_reset(&s->line);
            if (rc != 0) {
                s->result = rc;
                return 0;   /* stop the transfer */
            }
        } else if (ed_buf_append(&s->line, &ch, 1) < 0) {
            s->result = ed_error_set(ED_ENOMEM, "event line");
            return 0;
        }
    }
    return n;
}

int cli_sse(cli *c, const char *path, const char *last_id, cli_sse_fn fn, void *payload)
{
    struct curl_slist *hl = NULL;
    cli_resp r;
    sse_state s;
    CURLcode rc;
    int err;

    memset(&r, 0, sizeof(r));
    memset(&s, 0, sizeof(s));
    s.c = c;
    s.r = &r;
    s.fn = fn;
    s.payload = payload;
    if (last_id)
        snprintf(s.id, sizeof(s.id), "%s", last_id);
    c->errbuf[0] = '\0';
    if ((err = prepare(c, &hl, "GET", path, NULL, 0, NULL, NULL, "Accept: text/event-stream",
                       last_id)) < 0)
        return err;
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_sse);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &r.headers);
    rc = curl_easy_perform(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r.status);
    if (s.result != 0)
        err = s.result;
    else if (rc != CURLE_OK)
        err = transport_error(c, rc);
    else if (r.status < 200 || r.status >= 300) {
        if (r.body.len > 0 && ed_json_parse(&r.json, r.body.data, r.body.len, 64) < 0)
            r.json = NULL;
        err = refusal(&r, c);
    } else {
        /* a last event without its blank line still counts */
        if (s.line.len > 0)
            err = sse_line(&s, s.line.data);
        if (err == 0)
            err = sse_line(&s, "");
    }
    ed_buf_free(&s.line);
    ed_buf_free(&s.data);
    cli_resp_free(&r);
    return err;
}
