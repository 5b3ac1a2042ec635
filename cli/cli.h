/*
 * cli.h - the `eddy` command-line client's HTTP side (libcurl + jansson).
 *
 * A `cli` holds the server's base URL, the API key it sends as
 * `Authorization: Bearer`, and one curl handle. The key comes from
 * EDDY_API_KEY or the credential file ~/.config/eddy/config.json (0600,
 * written by `eddy login`); the URL from --url, EDDY_URL or that file. A stored
 * key is only ever sent to the URL it was issued for.
 *
 *     cli *c = NULL;
 *     cli_resp r = {0};
 *     if ((err = cli_open(&c, url_flag, true)) < 0 ||
 *         (err = cli_call(&r, c, "GET", "/api/v1/me", NULL, 0, NULL, 0)) < 0)
 *         return cli_report(err);            // message on stderr, exit status
 *     ...
 *     cli_resp_free(&r);
 *     cli_free(c);
 *
 * Errors follow ed_error.h: 0 or a negative code with a message. Two codes are
 * the client's own: CLI_ETRANSPORT (the server could not be reached, exit 3)
 * and CLI_EUSAGE (bad input caught before any request, exit 2). A refusal from
 * the server maps its HTTP status to an ED_E* code (404 -> ED_ENOTFOUND, ...)
 * with the message "<api code>: <api message>" (exit 1).
 */
#ifndef EDDY_CLI_H
#define EDDY_CLI_H

#include "ed_buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    CLI_ETRANSPORT = -64,   /* could not reach the server, or the connection broke */
    CLI_EUSAGE     = -65,   /* bad arguments or local input, found before any request */
};

/* Exit statuses of every client command. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_REFUSED = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_TRANSPORT = 3 };

/* ---- options shared by every client command ------------------------------ */

typedef struct cli_globals {
    const char *url;   /* --url URL, or NULL (borrowed from argv) */
    bool        json;  /* --json: print the server's JSON as it came */
} cli_globals;

/* Take --json, --url URL and --url=URL out of argv (up to a "--"), shifting
 * the rest down and updating *argc. CLI_EUSAGE when --url has no value. */
int cli_globals_take(cli_globals *out, int *argc, char **argv);

/* ---- the credential file ------------------------------------------------- */

typedef struct cli_config {
    char    url[512];      /* the server the key belongs to, no trailing '/' */
    char    api_key[256];  /* secret: never printed */
    int64_t key_id;        /* for `eddy logout` (DELETE /api/v1/keys/{id}) */
    char    username[128];
} cli_config;

/* The credential file's path: $XDG_CONFIG_HOME/eddy/config.json, else
 * $HOME/.config/eddy/config.json. CLI_EUSAGE when neither is set. */
int cli_config_path(char *out, size_t n);

/* Read the credential file. ED_ENOTFOUND when there is none; ED_EPERM when
 * others can read it (mode & 077: fix with chmod 600); ED_EINVAL when it is
 * not the JSON this module writes. */
int cli_config_load(cli_config *out);

/* Write the credential file atomically (temporary file, fsync, rename), mode
 * 0600 in a 0700 directory. ED_EIO with the reason on failure; the old file
 * is then left as it was. */
int cli_config_save(const cli_config *cfg);

/* Delete the credential file; 0 when there was none. */
int cli_config_remove(void);

/* ---- the client ----------------------------------------------------------- */

typedef struct cli cli;

/* Make a client. The URL is `url` (--url), else EDDY_URL, else the file's.
 * The key is EDDY_API_KEY, else the file's when the file's URL is the one in
 * use. CLI_EUSAGE for no URL at all, for need_key without a key ("not logged
 * in"), and for a URL that is not http:// or https://; ED_EPERM / ED_EINVAL
 * from cli_config_load when the file is needed but unusable. No request is
 * made. Caller frees with cli_free(). */
int cli_open(cli **out, const char *url, bool need_key);
void cli_free(cli *c);

/* The base URL in use (borrowed until cli_free()). */
const char *cli_url(const cli *c);

/* Replace the key (or drop it with NULL) for the following requests. */
int cli_set_key(cli *c, const char *key);

/* Extra headers for the following requests ("Cookie: ...", "X-CSRF-Token:
 * ..."); NULL clears them. Copied. */
int cli_set_headers(cli *c, const char *const *headers);

typedef struct cli_resp {
    long    status;      /* HTTP status, 0 when no response came */
    ed_buf  body;        /* raw body, NUL-terminated */
    ed_buf  headers;     /* raw response headers */
    json_t *json;        /* the body parsed, when it is JSON; owned */
} cli_resp;

/* Request flags. */
enum {
    CLI_IDEMPOTENT = 1 << 0,  /* send a fresh Idempotency-Key (work or money) and
                                 retry a broken connection with the same key */
};

/* Send one request: `path` starts with "/" and is already escaped; `body`
 * (may be NULL) is sent with `content_type`. *r gets the response whatever
 * the status (free it with cli_resp_free). 0 for a 2xx answer; a refusal
 * maps to an ED_E* code with "<code>: <message>" from the error body;
 * CLI_ETRANSPORT when the server could not be reached. GETs, and requests
 * with CLI_IDEMPOTENT, are retried twice on a transport error. */
int cli_call(cli_resp *r, cli *c, const char *method, const char *path, const void *body,
             size_t len, const char *content_type, unsigned flags);

/* cli_call with a JSON body (NULL for none); *out gets a new reference to the
 * response's JSON (json null for an empty body) on success. */
int cli_call_json(json_t **out, cli *c, const char *method, const char *path, const json_t *body,
                  unsigned flags);

/* A response header's value copied into out (case-insensitive name);
 * 0, or ED_ENOTFOUND. */
int cli_resp_header(char *out, size_t n, const cli_resp *r, const char *name);

void cli_resp_free(cli_resp *r);

/* One Server-Sent Event: called with the event name ("message" when none
 * was given), the last `id:` seen on the stream (or "") and the data lines
 * joined by '\n'. Return 0 to go on, 1 to stop reading, or a negative code. */
typedef int (*cli_sse_fn)(const char *event, const char *id, const char *data, void *payload);

/* GET `path` as an event stream (Accept: text/event-stream; Last-Event-ID
 * when last_id is not NULL) and call fn for each event until the server
 * closes the response (0), fn stops it (1), or an error (negative; an error
 * answer is reported like cli_call's). No overall timeout. */
int cli_sse(cli *c, const char *path, const char *last_id, cli_sse_fn fn, void *payload);

/* ---- paths ------------------------------------------------------------------ */

/* Percent-encode `s` for a URL path; with keep_slash, '/' stays. malloc'd
 * result (caller frees), NULL when out of memory. */
char *cli_escape(const char *s, bool keep_slash);

/* Whether a relative path from the server is safe to create under a local
 * directory: not empty, not absolute, no "." / ".." / empty component, no
 * backslash or control character, at most 4096 bytes. */
bool cli_path_is_safe(const char *rel);

/* Write `len` bytes to `root`/`rel`, creating directories, never following a
 * symbolic link on the way and never leaving `root` (rel is checked with
 * cli_path_is_safe: ED_EPERM "unsafe path" otherwise). The file is written
 * to a temporary name and renamed, so a failure leaves no partial file.
 * ED_EIO with the reason on failure. */
int cli_write_under(const char *root, const char *rel, const void *buf, size_t len);

/* Read a whole local file into *out (malloc'd, caller frees) and *len.
 * ED_EIO with the reason; CLI_EUSAGE for a file over 1 GiB. */
int cli_read_file(char **out, size_t *len, const char *path);

/* ---- output ----------------------------------------------------------------- */

/* How a table cell shows a JSON value. */
typedef enum cli_fmt {
    CLI_FMT_TEXT,    /* strings as they are, numbers in decimal, null as "-" */
    CLI_FMT_COINS,   /* an mcoins integer as A-coins with 3 decimals */
    CLI_FMT_LIST,    /* an array of strings joined with ',' */
    CLI_FMT_BYTES,   /* an integer byte count as 12.3 KiB */
    CLI_FMT_MS,      /* milliseconds as a duration (1h02m, 45s) */
} cli_fmt;

typedef struct cli_col {
    const char *header;  /* "ID" */
    const char *key;     /* JSON field, or "a.b" for a nested one */
    cli_fmt     fmt;
} cli_col;

/* Print `items` (an array of objects) as an aligned table on stdout, header
 * first; "(none)" when empty. Cells never exceed 60 characters. */
void cli_print_table(const json_t *items, const cli_col *cols, size_t ncols);

/* Print one object as "Label: value" lines, in `cols` order. */
void cli_print_fields(const json_t *obj, const cli_col *cols, size_t ncols);

/* One cell's text into out. */
void cli_format(char *out, size_t n, const json_t *v, cli_fmt fmt);

/* Print the response's raw body followed by a newline (for --json). */
void cli_print_raw(const cli_resp *r);

/* Print `j` as one line of compact JSON ("null" when it cannot be dumped). */
void cli_print_json(const json_t *j);

/* Print "eddy: <message>" on stderr and return the exit status for `err`:
 * CLI_EXIT_TRANSPORT for CLI_ETRANSPORT, CLI_EXIT_USAGE for CLI_EUSAGE,
 * CLI_EXIT_REFUSED otherwise. */
int cli_report(int err);

/* Parse "12", "12.5" or "0.001" A-coins into mcoins. CLI_EUSAGE otherwise. */
int cli_parse_coins(int64_t *out, const char *s);

/* Parse a decimal integer in [min, max]; CLI_EUSAGE naming `what` otherwise. */
int cli_parse_int(int64_t *out, const char *s, int64_t min, int64_t max, const char *what);

/* ---- helpers for the commands ------------------------------------------------ */

/* Resolve a project named on the command line: an id ("p" + 12 characters)
 * is used as it is when the server knows it; otherwise one of the caller's
 * projects with that exact name. The id goes to out. ED_ENOTFOUND, or
 * CLI_EUSAGE when two of the caller's projects have that name. */
int cli_project_resolve(char *out, size_t n, cli *c, const char *ref);

/* End a command: free the client and turn err into an exit status with
 * cli_report(). */
int cli_done(cli *c, int err);

/* ---- large transfers (transfer.c) -------------------------------------------- */

/* Takes `n` bytes of a response body as they arrive; 0 to go on, or a
 * negative code (with its message) to stop the transfer. */
typedef int (*cli_sink_fn)(const char *buf, size_t n, void *payload);

/* One request whose bodies never sit whole in memory: with src_fd >= 0 the
 * request body is src_len bytes of that file from src_off, read as curl
 * sends them (PUT unless `method` says otherwise); a 2xx response body goes
 * to `sink` (NULL: dropped) as it arrives, a refusal's body to r->body (its
 * first MiB) and becomes "<code>: <message>" like cli_call's. `headers`:
 * extra NULL-terminated lines ("Range: bytes=10-"). r->status and
 * r->headers as cli_call fills them. No retries: the caller decides (a
 * chunk is resumed from the server's offset). CLI_ETRANSPORT when the
 * connection failed or broke (a body slower than 1 byte/s for 60 s counts),
 * or the sink's code. For tests, EDDY_TEST_UPLOAD_DROP_AFTER=N breaks the
 * connection once after N request-body bytes of this process
 * (EDDY_TEST_UPLOAD_DROP_KILL=1: SIGKILL there instead). */
int cli_stream(cli_resp *r, cli *c, const char *method, const char *path, const char *const *headers,
               int src_fd, int64_t src_off, int64_t src_len, cli_sink_fn sink, void *payload);

/* A file being written under a local directory as cli_write_under does
 * (checked path, no link followed, a temporary name renamed at the end),
 * for bodies that arrive in pieces. */
typedef struct cli_under {
    int  dfd, fd;
    char name[256], tmp[300];
} cli_under;
/* Open `root`/`rel` for writing (ED_EPERM for an unsafe path or a link on
 * the way, ED_EIO). Then cli_under_write, and cli_under_commit (rename into
 * place) or cli_under_abort (nothing is left). */
int  cli_under_open(cli_under *f, const char *root, const char *rel);
int  cli_under_write(cli_under *f, const void *buf, size_t len);
int  cli_under_commit(cli_under *f);
void cli_under_abort(cli_under *f);

/* ---- unpacking a dataset version's archive (untar.c) -------------------------- */

/* A tar read as it arrives and written under `root` (borrowed), each entry
 * through cli_under_open: only regular files (directories are implied) that
 * `files` (a version's manifest, [{path, size, sha256}], copied) lists, with
 * that size and sha256; a link, a special file, an unlisted path or a wrong
 * hash stops it with a message (ED_EPERM, ED_EIO), leaving no partial file. */
typedef struct cli_untar cli_untar;
int  cli_untar_new(cli_untar **out, const char *root, const json_t *files);
/* A cli_sink_fn: feed the next bytes (payload is the cli_untar). */
int  cli_untar_feed(const char *buf, size_t n, void *payload);
/* After the last byte: ED_EIO unless the archive ended properly with every
 * file of the manifest written. */
int  cli_untar_finish(cli_untar *u);
size_t  cli_untar_files(const cli_untar *u);
int64_t cli_untar_bytes(const cli_untar *u);
void cli_untar_free(cli_untar *u);

#endif
