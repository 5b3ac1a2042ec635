/* .eddyignore: gitignore-syntax rules naming files that versions keep out of
 * git history (versions.c). Our own matcher rather than libgit2's ignore
 * machinery: git_ignore_path_is_ignored always mixes in every .gitignore of
 * the tree and .git/info/exclude, and a project's .gitignore must not change
 * what a version holds.
 *
 * Syntax (gitignore(5)): blank lines and lines starting with '#' are skipped;
 * "\#" and "\!" escape a leading '#' or '!'; unescaped trailing spaces are
 * dropped; '!' negates (re-includes); a trailing '/' matches directories
 * only; a pattern with a '/' elsewhere is anchored at the tree root (a
 * leading '/' is dropped), one without matches a name at any depth; '*', '?'
 * and [...] never match '/'; a leading "**" segment matches any leading
 * directories, a middle one zero or more, a trailing one everything inside.
 * The last matching rule wins, and a file under an ignored directory cannot
 * be re-included (as in git).
 */
#include "proj_int.h"

#include "ed_error.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEGS 64

typedef struct rule {
    char  **segs;     /* pattern split on '/' ("**" kept as is) */
    size_t  nsegs;
    bool    negate;
    bool    dir_only;
} rule;

struct proj__ignore {
    rule  *rules;
    size_t count;
};

void proj__ignore_free(proj__ignore *ig)
{
    if (ig == NULL)
        return;
    for (size_t i = 0; i < ig->count; i++) {
        for (size_t j = 0; j < ig->rules[i].nsegs; j++)
            free(ig->rules[i].segs[j]);
        free(ig->rules[i].segs);
    }
    free(ig->rules);
    free(ig);
}

/* Parse one line (NUL-terminated, no newline) into *r; 1 if it is a rule,
 * 0 for a blank or comment line. */
static int parse_line(rule *r, char *line)
{
    size_t n = strlen(line), nsegs = 0;
    bool anchored;
    char *p, *segs[MAX_SEGS + 1];

    memset(r, 0, sizeof(*r));
    if (n && line[n - 1] == '\r')
        line[--n] = '\0';
    /* trailing spaces, unless escaped */
    while (n && line[n - 1] == ' ' && !(n >= 2 && line[n - 2] == '\\'))
        line[--n] = '\0';
    if (n == 0 || line[0] == '#')
        return 0;
    p = line;
    if (p[0] == '!') {
        r->negate = true;
        p++;
    } else if (p[0] == '\\' && (p[1] == '!' || p[1] == '#')) {
        p++;
    }
    n = strlen(p);
    if (n && p[n - 1] == '/') {
        r->dir_only = true;
        p[--n] = '\0';
    }
    if (n == 0)
        return 0;
    anchored = strchr(p, '/') != NULL;
    if (p[0] == '/')
        p++;
    if (!anchored)
        segs[nsegs++] = "**";   /* a bare name matches at any depth */
    for (char *s = p;;) {
        char *slash = strchr(s, '/');
        if (slash)
            *slash = '\0';
        if (*s != '\0') {   /* "a//b" is "a/b" */
            if (nsegs == MAX_SEGS)
                return 0;   /* deeper than any path: cannot match */
            segs[nsegs++] = s;
        }
        if (slash == NULL)
            break;
        s = slash + 1;
    }
    if (nsegs == 0)
        return 0;
    if ((r->segs = calloc(nsegs, sizeof(*r->segs))) == NULL)
        return ed_error_set(ED_ENOMEM, ".eddyignore");
    for (size_t i = 0; i < nsegs; i++) {
        if ((r->segs[i] = strdup(segs[i])) == NULL) {
            r->nsegs = i;
            return ed_error_set(ED_ENOMEM, ".eddyignore");
        }
    }
    r->nsegs = nsegs;
    return 1;
}

int proj__ignore_parse(proj__ignore **out, const char *text, size_t len)
{
    proj__ignore *ig = calloc(1, sizeof(*ig));
    size_t cap = 0, start = 0;
    int err = 0;

    *out = NULL;
    if (ig == NULL)
        return ed_error_set(ED_ENOMEM, ".eddyignore");
    while (start < len) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        char *line = strndup(text + start, end - start);
        rule r;
        int got;

        start = end + 1;
        if (line == NULL) {
            err = ed_error_set(ED_ENOMEM, ".eddyignore");
            break;
        }
        got = parse_line(&r, line);
        free(line);
        if (got < 0) {
            for (size_t j = 0; j < r.nsegs; j++)
                free(r.segs[j]);
            free(r.segs);
            err = got;
            break;
        }
        if (got == 0)
            continue;
        if (ig->count == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            rule *rs = realloc(ig->rules, ncap * sizeof(*rs));
            if (rs == NULL) {
                for (size_t j = 0; j < r.nsegs; j++)
                    free(r.segs[j]);
                free(r.segs);
                err = ed_error_set(ED_ENOMEM, ".eddyignore");
                break;
            }
            ig->rules = rs;
            cap = ncap;
        }
        ig->rules[ig->count++] = r;
    }
    if (err < 0) {
        proj__ignore_free(ig);
        return err;
    }
    *out = ig;
    return 0;
}

/* Do pattern segments ps[0..np) match path segments ts[0..nt) exactly? */
static bool match_segs(char *const *ps, size_t np, char *const *ts, size_t nt)
{
    while (np > 0) {
        if (strcmp(ps[0], "**") == 0) {
            /* a trailing "**" matches everything inside: at least one */
            if (np == 1)
                return nt >= 1;
            for (size_t k = 0; k <= nt; k++)
                if (match_segs(ps + 1, np - 1, ts + k, nt - k))
                    return true;
            return false;
        }
        if (nt == 0 || fnmatch(ps[0], ts[0], 0) != 0)
            return false;
        ps++, np--, ts++, nt--;
    }
    return nt == 0;
}

/* The verdict of the rules for one path (segments ts[0..nt)): 1 ignored,
 * 0 re-included by a negation, -1 no rule matched. */
static int verdict(const proj__ignore *ig, char *const *ts, size_t nt, bool is_dir)
{
    for (size_t i = ig->count; i-- > 0;) {
        const rule *r = &ig->rules[i];
        if (r->dir_only && !is_dir)
            continue;
        if (match_segs(r->segs, r->nsegs, ts, nt))
            return r->negate ? 0 : 1;
    }
    return -1;
}

bool proj__ignore_match(const proj__ignore *ig, const char *path)
{
    char buf[PROJ_PATH_MAX + 1], *ts[MAX_SEGS + 1];
    size_t nt = 0, n = strlen(path);

    if (ig == NULL || ig->count == 0 || n == 0 || n > PROJ_PATH_MAX)
        return false;
    memcpy(buf, path, n + 1);
    for (char *s = buf;;) {
        char *slash = strchr(s, '/');
        if (nt == MAX_SEGS)
            return false;
        ts[nt++] = s;
        if (slash == NULL)
            break;
        *slash = '\0';
        s = slash + 1;
    }
    /* each parent directory first: an ignored one ignores all below it */
    for (size_t k = 1; k < nt; k++)
        if (verdict(ig, ts, k, true) == 1)
            return true;
    return verdict(ig, ts, nt, false) == 1;
}
