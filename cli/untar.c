/*
 * untar.c - unpack a dataset version's archive (a POSIX tar, ustar with pax
 * headers, as GET .../archive streams it) under a local directory while it
 * arrives, trusting nothing in it: every path goes through cli_under_open
 * (checked, no link followed, written aside and renamed), only regular files
 * and directories are accepted (links, devices, FIFOs are refused), and each
 * file must be one of the version's manifest with its size and sha256.
 */
#include "cli.h"

#include "ed_error.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK   512
#define PAX_MAX (64 * 1024)     /* bytes of one pax extended header */

enum { ST_HEADER, ST_DATA, ST_PAX, ST_SKIP, ST_END };

struct cli_untar {
    const char *root;
    json_t     *want;           /* path -> manifest entry {path, size, sha256} */
    size_t      expected;       /* files in the manifest */
    int         state;
    char        hdr[BLOCK];
    size_t      hdr_len;
    int64_t     left;           /* bytes of the entry's data still to come */
    int64_t     pad;            /* bytes of padding after it */
    char       *pax;            /* ST_PAX: the records so far */
    size_t      pax_len;
    bool        pax_global;
    char        pax_path[4097];
    int64_t     pax_size;       /* -1: none */
    int         zero_blocks;
    bool        open;           /* a file is being written */
    cli_under   f;
    char        cur[4097];
    const char *cur_sha;
    crypto_hash_sha256_state sh;
    size_t      files;
    int64_t     bytes;
};

int cli_untar_new(cli_untar **out, const char *root, const json_t *files)
{
    cli_untar *u;
    size_t i;
    json_t *e;

    *out = NULL;
    if ((u = calloc(1, sizeof(*u))) == NULL || (u->want = json_object()) == NULL) {
        free(u);
        return ed_error_set(ED_ENOMEM, "untar");
    }
    u->root = root;
    u->pax_size = -1;
    json_array_foreach(files, i, e) {
        const char *p = json_string_value(json_object_get(e, "path"));
        if (p == NULL || json_object_set(u->want, p, e) < 0) {
            cli_untar_free(u);
            return ed_error_set(ED_EIO, "the version's manifest is not a list of files");
        }
    }
    u->expected = json_object_size(u->want);
    *out = u;
    return 0;
}

void cli_untar_free(cli_untar *u)
{
    if (u == NULL)
        return;
    if (u->open)
        cli_under_abort(&u->f);
    json_decref(u->want);
    free(u->pax);
    free(u);
}

size_t cli_untar_files(const cli_untar *u) { return u->files; }
int64_t cli_untar_bytes(const cli_untar *u) { return u->bytes; }

/* A tar number field: octal digits, spaces and NULs around them. */
static int octal(int64_t *out, const char *f, size_t n)
{
    int64_t v = 0;
    size_t i = 0;

    if ((unsigned char)f[0] & 0x80)
        return ed_error_set(ED_EIO, "the archive uses a base-256 number: not an archive Eddy wrote");
    while (i < n && (f[i] == ' ' || f[i] == '\0'))
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
        if (v > (INT64_MAX >> 3))
            return ed_error_set(ED_EIO, "a number in the archive overflows");
        v = (v << 3) | (f[i] - '0');
    }
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != '\0')
            return ed_error_set(ED_EIO, "a header of the archive is damaged (a number field)");
    *out = v;
    return 0;
}

static int checksum_ok(const char *h)
{
    int64_t want = -1;
    unsigned sum = 0;

    if (octal(&want, h + 148, 8) < 0)
        return 0;
    for (size_t i = 0; i < BLOCK; i++)
        sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)h[i];
    return (int64_t)sum == want;
}

/* The records "<len> key=value\n" of a pax header: path and size. */
static int pax_parse(cli_untar *u)
{
    size_t off = 0;

    while (off < u->pax_len) {
        char *end, *eq;
        unsigned long len = strtoul(u->pax + off, &end, 10);
        if (end == u->pax + off || *end != ' ' || len < 5 || off + len > u->pax_len || u->pax[off + len - 1] != '\n')
            return ed_error_set(ED_EIO, "the archive's pax header is damaged");
        eq = memchr(end + 1, '=', (size_t)(u->pax + off + len - 1 - (end + 1)));
        if (eq) {
            size_t klen = (size_t)(eq - (end + 1)), vlen = (size_t)(u->pax + off + len - 1 - (eq + 1));
            if (klen == 4 && strncmp(end + 1, "path", 4) == 0) {
                if (vlen >= sizeof(u->pax_path) || memchr(eq + 1, '\0', vlen))
                    return ed_error_set(ED_EPERM, "the archive names a path longer than 4096 bytes");
                memcpy(u->pax_path, eq + 1, vlen);
                u->pax_path[vlen] = '\0';
            } else if (klen == 4 && strncmp(end + 1, "size", 4) == 0) {
                char num[32], *e2;
                if (vlen == 0 || vlen >= sizeof(num))
                    return ed_error_set(ED_EIO, "the archive's pax size is damaged");
                memcpy(num, eq + 1, vlen);
                num[vlen] = '\0';
                u->pax_size = strtoll(num, &e2, 10);
                if (*e2 || u->pax_size < 0)
                    return ed_error_set(ED_EIO, "the archive's pax size is damaged");
            }
        }
        off += len;
    }
    return 0;
}

/* A whole header block is in u->hdr. */
static int on_header(cli_untar *u)
{
    const char *h = u->hdr;
    char type = h[156], path[4097];
    int64_t size = 0;
    const json_t *m;
    bool zero = true;
    int err;

    for (size_t i = 0; i < BLOCK && zero; i++)
        zero = h[i] == '\0';
    if (zero) {
        if (++u->zero_blocks == 2)
            u->state = ST_END;
        return 0;
    }
    if (u->zero_blocks)
        return ed_error_set(ED_EIO, "the archive is damaged (a lone zero block)");
    if (!checksum_ok(h))
        return ed_error_set(ED_EIO, "the archive is damaged (a header's checksum is wrong)");
    if ((err = octal(&size, h + 124, 12)) < 0)
        return err;
    if (type == 'x' || type == 'g') {
        if (size > PAX_MAX)
            return ed_error_set(ED_EIO, "the archive's pax header is over 64 KiB");
        free(u->pax);
        if ((u->pax = malloc((size_t)size + 1)) == NULL)
            return ed_error_set(ED_ENOMEM, "pax header");
        u->pax_len = 0;
        u->pax_global = type == 'g';
        u->left = size;
        u->pad = (BLOCK - size % BLOCK) % BLOCK;
        u->state = ST_PAX;
        if (size == 0)
            u->state = ST_SKIP;
        return 0;
    }
    if (u->pax_size >= 0)
        size = u->pax_size;
    if (u->pax_path[0])
        snprintf(path, sizeof(path), "%s", u->pax_path);
    else if (h[345])        /* ustar prefix + '/' + name */
        snprintf(path, sizeof(path), "%.155s/%.100s", h + 345, h);
    else
        snprintf(path, sizeof(path), "%.100s", h);
    u->pax_path[0] = '\0';
    u->pax_size = -1;
    u->pad = (BLOCK - size % BLOCK) % BLOCK;
    if (type == '5') {          /* a directory: made as its files need it */
        u->left = size;
        u->state = ST_SKIP;
        return 0;
    }
    if (type != '0' && type != '\0' && type != '7')
        return ed_error_set(ED_EPERM, "the archive holds '%.200s', which is not a regular file (type '%c'): "
                            "links and special files are refused, nothing more is written", path, type);
    if ((m = json_object_get(u->want, path)) == NULL)
        return ed_error_set(ED_EPERM, "the archive holds '%.200s', which the version's manifest does not list",
                            path);
    if (json_integer_value(json_object_get(m, "size")) != size)
        return ed_error_set(ED_EIO, "'%.200s' is %lld bytes in the archive but %lld in the manifest", path,
                            (long long)size, (long long)json_integer_value(json_object_get(m, "size")));
    if ((err = cli_under_open(&u->f, u->root, path)) < 0)
        return err;
    u->open = true;
    snprintf(u->cur, sizeof(u->cur), "%s", path);
    u->cur_sha = json_string_value(json_object_get(m, "sha256"));
    crypto_hash_sha256_init(&u->sh);
    u->left = size;
    u->state = ST_DATA;
    return 0;
}

/* The current file's bytes are all written: check and rename it. */
static int file_done(cli_untar *u)
{
    unsigned char d[crypto_hash_sha256_BYTES];
    char hex[2 * crypto_hash_sha256_BYTES + 1];
    int err;

    crypto_hash_sha256_final(&u->sh, d);
    sodium_bin2hex(hex, sizeof(hex), d, sizeof(d));
    if (u->cur_sha == NULL || strcmp(hex, u->cur_sha) != 0) {
        cli_under_abort(&u->f);
        u->open = false;
        return ed_error_set(ED_EIO, "'%.200s' arrived with sha256 %s but the manifest says %s", u->cur, hex,
                            u->cur_sha ? u->cur_sha : "?");
    }
    u->open = false;
    if ((err = cli_under_commit(&u->f)) < 0)
        return err;
    json_object_del(u->want, u->cur);   /* each path once */
    u->files++;
    return 0;
}

int cli_untar_feed(const char *buf, size_t n, void *payload)
{
    cli_untar *u = payload;
    int err;

    while (n > 0) {
        size_t k;

        switch (u->state) {
        case ST_END:
            return 0;           /* what follows the end (more zero blocks) is ignored */
        case ST_HEADER:
            k = BLOCK - u->hdr_len < n ? BLOCK - u->hdr_len : n;
            memcpy(u->hdr + u->hdr_len, buf, k);
            u->hdr_len += k;
            buf += k;
            n -= k;
            if (u->hdr_len == BLOCK) {
                u->hdr_len = 0;
                if ((err = on_header(u)) < 0)
                    return err;
                if (u->state == ST_DATA && u->left == 0 && (err = file_done(u)) < 0)
                    return err;
                if (u->state == ST_DATA && u->left == 0)
                    u->state = ST_SKIP;
            }
            break;
        case ST_DATA:
            k = (int64_t)n < u->left ? n : (size_t)u->left;
            if ((err = cli_under_write(&u->f, buf, k)) < 0)
                return err;
            crypto_hash_sha256_update(&u->sh, (const unsigned char *)buf, k);
            u->bytes += (int64_t)k;
            u->left -= (int64_t)k;
            buf += k;
            n -= k;
            if (u->left == 0) {
                if ((err = file_done(u)) < 0)
                    return err;
                u->state = ST_SKIP;
            }
            break;
        case ST_PAX:
            k = (int64_t)n < u->left ? n : (size_t)u->left;
            memcpy(u->pax + u->pax_len, buf, k);
            u->pax_len += k;
            u->left -= (int64_t)k;
            buf += k;
            n -= k;
            if (u->left == 0) {
                if (!u->pax_global && (err = pax_parse(u)) < 0)
                    return err;
                u->state = ST_SKIP;
            }
            break;
        case ST_SKIP:           /* a directory's (empty) data, then padding */
            if (u->left > 0) {
                k = (int64_t)n < u->left ? n : (size_t)u->left;
                u->left -= (int64_t)k;
            } else {
                k = (int64_t)n < u->pad ? n : (size_t)u->pad;
                u->pad -= (int64_t)k;
            }
            buf += k;
            n -= k;
            if (u->left == 0 && u->pad == 0)
                u->state = ST_HEADER;
            break;
        }
        if (u->state == ST_SKIP && u->left == 0 && u->pad == 0)
            u->state = ST_HEADER;
    }
    return 0;
}

int cli_untar_finish(cli_untar *u)
{
    if (u->state != ST_END)
        return ed_error_set(ED_EIO, "the archive ended early (after %zu of %zu files): download it again",
                            u->files, u->expected);
    if (u->files != u->expected)
        return ed_error_set(ED_EIO, "the archive held %zu of the version's %zu files", u->files, u->expected);
    return 0;
}
