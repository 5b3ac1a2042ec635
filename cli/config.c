/*
 * config.c - the credential file ~/.config/eddy/config.json:
 *   {"url": "...", "api_key": "...", "key_id": 12, "username": "..."}
 * Mode 0600 in a 0700 directory, written atomically. It holds a secret, so
 * a file that others can read is refused rather than used.
 */
#include "cli.h"

#include "ed_error.h"
#include "ed_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX 65536

int cli_config_path(char *out, size_t n)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int w;

    if (xdg && xdg[0] == '/')
        w = snprintf(out, n, "%s/eddy/config.json", xdg);
    else if (home && home[0] == '/')
        w = snprintf(out, n, "%s/.config/eddy/config.json", home);
    else
        return ed_error_set(CLI_EUSAGE, "neither HOME nor XDG_CONFIG_HOME is set to an absolute path");
    if (w < 0 || (size_t)w >= n)
        return ed_error_set(CLI_EUSAGE, "the credential file's path is too long");
    return 0;
}

static int copy_str(char *out, size_t n, const json_t *o, const char *key, bool required,
                    const char *path)
{
    const json_t *v = json_object_get(o, key);

    if (v == NULL || json_is_null(v)) {
        if (required)
            return ed_error_set(ED_EINVAL, "%s has no \"%s\": run `eddy login` again", path, key);
        out[0] = '\0';
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) >= n)
        return ed_error_set(ED_EINVAL, "%s: \"%s\" is not a string of fitting length", path, key);
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

int cli_config_load(cli_config *out)
{
    char path[4096], *buf = NULL;
    struct stat sb;
    json_t *j = NULL;
    ssize_t n;
    int fd, err;

    memset(out, 0, sizeof(*out));
    if ((err = cli_config_path(path, sizeof(path))) < 0)
        return err;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        if (errno == ENOENT)
            return ed_error_set(ED_ENOTFOUND, "no credential file at %s", path);
        return ed_error_set(ED_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ed_error_set(ED_EIO, "%s is not a regular file", path);
    }
    if (sb.st_mode & 077) {
        close(fd);
        return ed_error_set(ED_EPERM, "%s holds an API key but others can read it: "
                                      "run `chmod 600 %s`", path, path);
    }
    if (sb.st_size > CONFIG_MAX || (buf = malloc((size_t)sb.st_size + 1)) == NULL) {
        close(fd);
        return ed_error_set(ED_EINVAL, "%s is too large to be a credential file", path);
    }
    n = read(fd, buf, (size_t)sb.st_size);
    close(fd);
    if (n != sb.st_size) {
        free(buf);
        return ed_error_set(ED_EIO, "cannot read %s", path);
    }
    err = ed_json_parse_object(&j, buf, (size_t)n);
    explicit_bzero(buf, (size_t)n);
    free(buf);
    if (err < 0)
        return ed_error_set(ED_EINVAL, "%s is not valid JSON: %s", path, ed_error_last());
    if ((err = copy_str(out->url, sizeof(out->url), j, "url", true, path)) < 0 ||
        (err = copy_str(out->api_key, sizeof(out->api_key), j, "api_key", false, path)) < 0 ||
        (err = copy_str(out->username, sizeof(out->username), j, "username", false, path)) < 0)
        goto done;
    out->key_id = json_integer_value(json_object_get(j, "key_id"));
done:
    json_decref(j);
    if (err < 0)
        explicit_bzero(out, sizeof(*out));
    return err;
}

/* mkdir -p for the directories above the file, each 0700 when made */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST) {
            int e = errno;
            *p = '/';
            return ed_error_set(ED_EIO, "cannot create %s: %s", path, strerror(e));
        }
        *p = '/';
    }
    return 0;
}

int cli_config_save(const cli_config *cfg)
{
    char path[4096], tmp[4200], *text = NULL;
    json_t *j;
    size_t len, off = 0;
    int fd, err;

    if ((err = cli_config_path(path, sizeof(path))) < 0)
        return err;
    j = json_pack("{s:s, s:s, s:I, s:s}", "url", cfg->url, "api_key", cfg->api_key, "key_id",
                  (json_int_t)cfg->key_id, "username", cfg->username);
    if (j == NULL || (text = json_dumps(j, JSON_INDENT(2))) == NULL) {
        json_decref(j);
        return ed_error_set(ED_ENOMEM, "credential file");
    }
    json_decref(j);
    len = strlen(text);
    snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid());
    if ((err = make_dirs(tmp)) < 0)
        goto out;
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
        err = ed_error_set(ED_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (off < len || write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
        err = ed_error_set(ED_EIO, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        err = ed_error_set(ED_EIO, "cannot replace %s: %s", path, strerror(errno));
        unlink(tmp);
    }
out:
    explicit_bzero(text, len);
    free(text);
    return err;
}

int cli_config_remove(void)
{
    char path[4096];
    int err;

    if ((err = cli_config_path(path, sizeof(path))) < 0)
        return err;
    if (unlink(path) < 0 && errno != ENOENT)
        return ed_error_set(ED_EIO, "cannot delete %s: %s", path, strerror(errno));
    return 0;
}
