/* gjson.c - see gjson.h. Recursive descent with an explicit depth bound. */
#include "gjson.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fw/tensor.h"

/* Every allocation of a document hangs off one list, freed together. */
typedef struct blk { struct blk *next; } blk;

struct fw_gj_doc {
    blk *blocks;
    fw_gj *root;
};

typedef struct {
    fw_gj_doc *d;
    const char *s;
    size_t n, i;
} rd;

static void *dalloc(fw_gj_doc *d, size_t sz)
{
    blk *b = malloc(sizeof(blk) + sz);

    if (b == NULL)
        return NULL;
    b->next = d->blocks;
    d->blocks = b;
    memset(b + 1, 0, sz);
    return b + 1;
}

static int bad(rd *r, const char *what)
{
    return fw_error_set(FW_EFORMAT, "graph: JSON %s at byte %zu", what, r->i);
}

static void ws(rd *r)
{
    while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\n' || r->s[r->i] == '\t' ||
                           r->s[r->i] == '\r'))
        r->i++;
}

static int utf8_len(const unsigned char *p, size_t left)
{
    unsigned c = p[0];
    int n;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return -1;
    if ((size_t)n > left)
        return -1;
    for (int k = 1; k < n; k++)
        if ((p[k] & 0xc0) != 0x80)
            return -1;
    if (n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f)))
        return -1;
    if (n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f)))
        return -1;
    return n;
}

static int hex4(rd *r, unsigned *v)
{
    *v = 0;
    if (r->n - r->i < 4)
        return bad(r, "truncated \\u escape");
    for (int k = 0; k < 4; k++) {
        char c = r->s[r->i++];
        *v <<= 4;
        if (c >= '0' && c <= '9')
            *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *v |= (unsigned)(c - 'A' + 10);
        else
            return bad(r, "bad \\u escape");
    }
    return 0;
}

static int put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int pstring(rd *r, char **out)
{
    size_t start, cap;
    char *o;
    size_t k = 0;

    r->i++; /* opening quote */
    start = r->i;
    /* The decoded string is never longer than its source. */
    while (r->i < r->n && r->s[r->i] != '"') {
        if (r->s[r->i] == '\\')
            r->i++;
        r->i++;
    }
    if (r->i >= r->n)
        return bad(r, "unterminated string");
    cap = r->i - start + 1;
    r->i = start;
    if ((o = dalloc(r->d, cap)) == NULL)
        return fw_error_set(FW_ENOMEM, "graph: JSON string");
    while (r->s[r->i] != '"') {
        unsigned char c = (unsigned char)r->s[r->i];
        if (c < 0x20)
            return bad(r, "control character in string");
        if (c == '\\') {
            char e;
            r->i++;
            e = r->s[r->i++];
            switch (e) {
            case '"': o[k++] = '"'; break;
            case '\\': o[k++] = '\\'; break;
            case '/': o[k++] = '/'; break;
            case 'b': o[k++] = '\b'; break;
            case 'f': o[k++] = '\f'; break;
            case 'n': o[k++] = '\n'; break;
            case 'r': o[k++] = '\r'; break;
            case 't': o[k++] = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                int err;
                if ((err = hex4(r, &cp)) < 0)
                    return err;
                if (cp >= 0xdc00 && cp <= 0xdfff)
                    return bad(r, "lone surrogate");
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (r->n - r->i < 6 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u')
                        return bad(r, "lone surrogate");
                    r->i += 2;
                    if ((err = hex4(r, &lo)) < 0)
                        return err;
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return bad(r, "bad surrogate pair");
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (cp == 0)
                    return bad(r, "NUL in string");
                /* An escape is 6 source bytes: never more than its UTF-8. */
                k += (size_t)put_utf8(o + k, cp);
                break;
            }
            default:
                return bad(r, "bad escape");
            }
        } else {
            int len = utf8_len((const unsigned char *)r->s + r->i, r->n - r->i);
            if (len < 0)
                return bad(r, "invalid UTF-8");
            memcpy(o + k, r->s + r->i, (size_t)len);
            k += (size_t)len;
            r->i += (size_t)len;
        }
    }
    r->i++;
    o[k] = '\0';
    *out = o;
    return 0;
}

static int pnumber(rd *r, double *v)
{
    size_t st = r->i;
    char buf[64];
    char *end;

    if (r->i < r->n && r->s[r->i] == '-')
        r->i++;
    if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
        return bad(r, "bad number");
    if (r->s[r->i] == '0')
        r->i++;
    else
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9')
            r->i++;
    if (r->i < r->n && r->s[r->i] == '.') {
        r->i++;
        if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
            return bad(r, "bad number");
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9')
            r->i++;
    }
    if (r->i < r->n && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
        r->i++;
        if (r->i < r->n && (r->s[r->i] == '+' || r->s[r->i] == '-'))
            r->i++;
        if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
            return bad(r, "bad number");
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9')
            r->i++;
    }
    if (r->i - st >= sizeof(buf))
        return bad(r, "number too long");
    memcpy(buf, r->s + st, r->i - st);
    buf[r->i - st] = '\0';
    *v = strtod(buf, &end);
    return 0;
}

static int pvalue(rd *r, fw_gj **out, int depth);

static int grow(rd *r, void ***arr, size_t n, size_t *cap)
{
    void **na;

    if (n < *cap)
        return 0;
    *cap = *cap ? *cap * 2 : 8;
    if ((na = dalloc(r->d, *cap * sizeof(void *))) == NULL)
        return fw_error_set(FW_ENOMEM, "graph: JSON array");
    if (n)
        memcpy(na, *arr, n * sizeof(void *));
    *arr = na;
    return 0;
}

static int pcontainer(rd *r, fw_gj *v, int depth, bool obj)
{
    size_t cap = 0, kcap = 0;
    char close = obj ? '}' : ']';
    int err;

    r->i++;
    ws(r);
    if (r->i < r->n && r->s[r->i] == close) {
        r->i++;
        return 0;
    }
    for (;;) {
        fw_gj *item;
        ws(r);
        if (obj) {
            char *key;
            if (r->i >= r->n || r->s[r->i] != '"')
                return bad(r, "expected a key");
            if ((err = pstring(r, &key)) < 0)
                return err;
            ws(r);
            if (r->i >= r->n || r->s[r->i] != ':')
                return bad(r, "expected ':'");
            r->i++;
            if ((err = grow(r, (void ***)&v->keys, v->n, &kcap)) < 0)
                return err;
            v->keys[v->n] = key;
        }
        if ((err = pvalue(r, &item, depth + 1)) < 0)
            return err;
        if ((err = grow(r, (void ***)&v->items, v->n, &cap)) < 0)
            return err;
        v->items[v->n++] = item;
        ws(r);
        if (r->i >= r->n)
            return bad(r, "unterminated container");
        if (r->s[r->i] == ',') {
            r->i++;
            continue;
        }
        if (r->s[r->i] == close) {
            r->i++;
            return 0;
        }
        return bad(r, "expected ',' or a closing bracket");
    }
}

static int pvalue(rd *r, fw_gj **out, int depth)
{
    fw_gj *v;
    char c;

    if (depth > FW_GJ_MAX_DEPTH)
        return bad(r, "nested too deeply");
    ws(r);
    if (r->i >= r->n)
        return bad(r, "unexpected end");
    if ((v = dalloc(r->d, sizeof(*v))) == NULL)
        return fw_error_set(FW_ENOMEM, "graph: JSON value");
    *out = v;
    c = r->s[r->i];
    if (c == '{' || c == '[') {
        v->kind = c == '{' ? FW_GJ_OBJ : FW_GJ_ARR;
        return pcontainer(r, v, depth, c == '{');
    }
    if (c == '"') {
        v->kind = FW_GJ_STR;
        return pstring(r, &v->str);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->kind = FW_GJ_NUM;
        return pnumber(r, &v->num);
    }
    if (r->n - r->i >= 4 && memcmp(r->s + r->i, "true", 4) == 0) {
        v->kind = FW_GJ_BOOL;
        v->b = true;
        r->i += 4;
        return 0;
    }
    if (r->n - r->i >= 5 && memcmp(r->s + r->i, "false", 5) == 0) {
        v->kind = FW_GJ_BOOL;
        r->i += 5;
        return 0;
    }
    if (r->n - r->i >= 4 && memcmp(r->s + r->i, "null", 4) == 0) {
        v->kind = FW_GJ_NULL;
        r->i += 4;
        return 0;
    }
    return bad(r, "unexpected character");
}

int fw__gj_parse(fw_gj_doc **out, const char *text, size_t len)
{
    fw_gj_doc *d;
    rd r;
    int err;

    *out = NULL;
    if ((d = calloc(1, sizeof(*d))) == NULL)
        return fw_error_set(FW_ENOMEM, "graph: JSON document");
    r = (rd){ .d = d, .s = text, .n = len, .i = 0 };
    if ((err = pvalue(&r, &d->root, 0)) < 0)
        goto fail;
    ws(&r);
    if (r.i != r.n) {
        err = bad(&r, "trailing bytes");
        goto fail;
    }
    *out = d;
    return 0;
fail:
    fw__gj_free(d);
    return err;
}

void fw__gj_free(fw_gj_doc *d)
{
    if (d == NULL)
        return;
    while (d->blocks) {
        blk *b = d->blocks;
        d->blocks = b->next;
        free(b);
    }
    free(d);
}

const fw_gj *fw__gj_root(const fw_gj_doc *d) { return d->root; }

const fw_gj *fw__gj_get(const fw_gj *o, const char *key)
{
    if (o == NULL || o->kind != FW_GJ_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return o->items[i];
    return NULL;
}
