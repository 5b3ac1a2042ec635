/*
 * names.c - what a dataset's name, slug, file paths and visibility may be.
 */
#include "ds_int.h"

#include "ed_error.h"
#include "ed_fs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names --------------------------------------------------------------- */

/* Length of the UTF-8 sequence at s (at most n bytes), 0 when malformed
 * (overlong forms, surrogates and values past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Valid UTF-8 without control characters (C0, DEL, C1). */
int ds__text_check(const char *s, size_t len, const char *field, bool newlines)
{
    const unsigned char *p = (const unsigned char *)s;

    for (size_t i = 0; i < len;) {
        size_t k = utf8_len(p + i, len - i);
        if (k == 0)
            return ed_error_set(ED_EINVAL, "%s is not valid UTF-8", field);
        if (k == 1 && (p[i] < 0x20 || p[i] == 0x7f) && !(newlines && (p[i] == '\n' || p[i] == '\t' || p[i] == '\r')))
            return ed_error_set(ED_EINVAL, "%s has a control character (0x%02x)", field, p[i]);
        if (k == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)
            return ed_error_set(ED_EINVAL, "%s has a control character (U+%04X)", field, p[i + 1]);
        i += k;
    }
    return 0;
}

int ds_name_validate(const char *name, size_t len)
{
    int err;
    size_t i;

    if (!name || len == 0)
        return ed_error_set(ED_EINVAL, "name is empty");
    if (len > DS_NAME_MAX)
        return ed_error_set(ED_EINVAL, "name is longer than %d bytes", DS_NAME_MAX);
    if (memchr(name, '\0', len))
        return ed_error_set(ED_EINVAL, "name has a NUL byte");
    if ((err = ds__text_check(name, len, "name", false)) < 0)
        return err;
    if (memchr(name, '/', len))
        return ed_error_set(ED_EINVAL, "name has a '/'");
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
        return ed_error_set(ED_EINVAL, "name is '.' or '..'");
    for (i = 0; i < len && name[i] == ' '; i++)
        ;
    if (i == len)
        return ed_error_set(ED_EINVAL, "name is blank");
    return 0;
}

int ds_slug_validate(const char *slug, size_t len)
{
    if (!slug || len == 0)
        return ed_error_set(ED_EINVAL, "slug is empty");
    if (len > DS_SLUG_MAX)
        return ed_error_set(ED_EINVAL, "slug is longer than %d bytes", DS_SLUG_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)slug[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.')
            return ed_error_set(ED_EINVAL, "slug may hold only A-Z, a-z, 0-9, '.', '_' and '-' (byte 0x%02x)", c);
    }
    if (!isalnum((unsigned char)slug[0]))
        return ed_error_set(ED_EINVAL, "slug must start with a letter or a digit");
    if (slug[len - 1] == '.')
        return ed_error_set(ED_EINVAL, "slug must not end in '.'");
    if (memmem(slug, len, "..", 2))
        return ed_error_set(ED_EINVAL, "slug has '..'");
    return 0;
}

int ds_path_validate(const char *path, size_t len)
{
    int depth = 0;
    int err;

    if (!path || len == 0)
        return ed_error_set(ED_EINVAL, "path is empty");
    if (len > DS_PATH_MAX)
        return ed_error_set(ED_EINVAL, "path is longer than %d bytes", DS_PATH_MAX);
    if (memchr(path, '\0', len))
        return ed_error_set(ED_EINVAL, "path has a NUL byte");
    if (path[0] == '/')
        return ed_error_set(ED_EINVAL, "path '%.*s' is absolute", (int)len, path);
    if ((err = ds__text_check(path, len, "path", false)) < 0)
        return err;
    if (ed_fs_path_check(path, len) < 0)
        return ed_error_set(ED_EINVAL, "path '%.*s' has an empty, '.' or '..' component, or one over 255 bytes",
                            (int)len, path);
    for (size_t i = 0; i < len; i++)
        if (path[i] == '/' && ++depth > DS_PATH_DEPTH)
            return ed_error_set(ED_EINVAL, "path is more than %d directories deep", DS_PATH_DEPTH);
    return 0;
}

static const char *const vis_names[] = {"private", "unlisted", "public"};

int ds_visibility_parse(ds_visibility *out, const char *s)
{
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, vis_names[i]) == 0) {
            *out = (ds_visibility)i;
            return 0;
        }
    return ed_error_set(ED_EINVAL, "visibility must be private, unlisted or public");
}

const char *ds_visibility_name(ds_visibility v)
{
    return (unsigned)v < 3 ? vis_names[v] : "private";
}
