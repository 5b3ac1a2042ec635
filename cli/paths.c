/*
 * paths.c - URL escaping, and writing files the server named under a local
 * directory without ever leaving it. Paths from the server are untrusted:
 * a hostile or buggy server must not make `eddy pull` write ~/.bashrc, so
 * every component is checked, every directory is opened with O_NOFOLLOW
 * relative to the one above (openat), and files are written to a temporary
 * name and renamed into place.
 */
#include "cli.h"

#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_MAX ((size_t)1 << 30)

char *cli_escape(const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1), *o = out;

    if (out == NULL)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/')) {
            *o++ = (char)ch;
        } else {
            *o++ = '%';
            *o++ = hex[ch >> 4];
            *o++ = hex[ch & 15];
        }
    }
    *o = '\0';
    return out;
}

bool cli_path_is_safe(const char *rel)
{
    size_t n = rel ? strlen(rel) : 0;
    const char *p = rel;

    if (n == 0 || n > 4096 || rel[0] == '/')
        return false;
    for (const unsigned char *q = (const unsigned char *)rel; *q; q++)
        if (*q < 0x20 || *q == 0x7f || *q == '\\')
            return false;
    while (*p) {
        size_t len = strcspn(p, "/");
        if (len == 0 || len > 255 || (len == 1 && p[0] == '.') ||
            (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += len;
        if (*p == '/') {
            p++;
            if (*p == '\0')
                return false;   /* trailing slash: not a file */
        }
    }
    return true;
}

/* One file written whole: the streamed writer (transfer.c) with one write. */
int cli_write_under(const char *root, const char *rel, const void *buf, size_t len)
{
    cli_under f;
    int err;

    if ((err = cli_under_open(&f, root, rel)) < 0)
        return err;
    if ((err = cli_under_write(&f, buf, len)) < 0) {
        cli_under_abort(&f);
        return err;
    }
    return cli_under_commit(&f);
}

int cli_read_file(char **out, size_t *len, const char *path)
{
    struct stat sb;
    char *buf;
    size_t off = 0;
    int fd;

    *out = NULL;
    *len = 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ed_error_set(CLI_EUSAGE, "%s is not a regular file", path);
    }
    if ((size_t)sb.st_size > READ_MAX) {
        close(fd);
        return ed_error_set(CLI_EUSAGE, "%s is over 1 GiB", path);
    }
    if ((buf = malloc((size_t)sb.st_size + 1)) == NULL) {
        close(fd);
        return ed_error_set(ED_ENOMEM, "%s", path);
    }
    while (off < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + off, (size_t)sb.st_size - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(fd);
    if (off != (size_t)sb.st_size) {
        free(buf);
        return ed_error_set(ED_EIO, "cannot read %s", path);
    }
    buf[off] = '\0';
    *out = buf;
    *len = off;
    return 0;
}
