/*
 * safetensors.c - safetensors load (mmap + validation) and save (see
 * fw/safetensors.h). The header is read by a small strict JSON reader in
 * this file (RFC 8259 grammar, UTF-8 checked up front, nesting depth bound):
 * the framework depends on no JSON library.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw/safetensors.h"

#define MAX_DEPTH 64

static _Thread_local fw_st_error last_kind;

fw_st_error fw_safetensors_error_kind(void)
{
    return last_kind;
}

/* Set the kind and the framework error; returns code. */
__attribute__((format(printf, 3, 4)))
static int st_fail(fw_st_error kind, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    last_kind = kind;
    return fw_error_set(code, "safetensors: %s", msg);
}

typedef struct st_entry {
    char *name;
    fw_dtype dtype;
    int ndim;
    int64_t shape[FW_MAX_DIMS];
    uint64_t begin, end;    /* relative to the data section */
} st_entry;

/* The file mapping, shared by the open file and every zero-copy view of it
 * (fw_safetensors_tensor_view): unmapped when the last holder lets go. */
typedef struct st_map {
    _Atomic int refs;
    void *addr;
    size_t len;
} st_map;

static void map_unref(st_map *m)
{
    if (m != NULL && atomic_fetch_sub(&m->refs, 1) == 1) {
        munmap(m->addr, m->len);
        free(m);
    }
}

static void view_release(void *data, void *payload)
{
    (void)data;
    map_unref(payload);
}

struct fw_safetensors {
    st_map *map;            /* NULL for memory images and empty files */
    const uint8_t *data;    /* data section */
    size_t data_len;
    st_entry *e;
    size_t n, cap;
    char **mkeys, **mvals;
    size_t nmeta, mcap;
};

/* ---- dtypes ---- */

static const struct { const char *name; fw_dtype dt; } known_dtypes[] = {
    { "F64", FW_FLOAT64 }, { "F32", FW_FLOAT32 }, { "F16", FW_FLOAT16 },
    { "BF16", FW_BFLOAT16 }, { "I64", FW_INT64 }, { "I32", FW_INT32 },
    { "U8", FW_UINT8 },    { "BOOL", FW_BOOL },
};
/* In the format but not loadable here. */
static const char *const unsupported_dtypes[] = {
    "I8", "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
    "F6_E3M2", "C64",
};

static const char *dtype_st_name(fw_dtype dt)
{
    for (size_t i = 0; i < sizeof(known_dtypes) / sizeof(known_dtypes[0]); i++)
        if (known_dtypes[i].dt == dt)
            return known_dtypes[i].name;
    return NULL;
}

/* ---- strict JSON reader over the header ---- */

typedef struct jr {
    const char *s;
    size_t len, pos;
} jr;

static int jerr(jr *r, const char *what)
{
    return st_fail(FW_ST_EJSON, FW_EFORMAT, "header is not valid JSON: %s at byte %zu", what,
                   r->pos);
}

static void ws(jr *r)
{
    while (r->pos < r->len && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' ||
                               r->s[r->pos] == '\n' || r->s[r->pos] == '\r'))
        r->pos++;
}

static bool peek(jr *r, char c)
{
    ws(r);
    return r->pos < r->len && r->s[r->pos] == c;
}

static int expect(jr *r, char c)
{
    ws(r);
    if (r->pos >= r->len || r->s[r->pos] != c) {
        char what[32];
        snprintf(what, sizeof(what), "expected '%c'", c);
        return jerr(r, what);
    }
    r->pos++;
    return 0;
}

static int hex4(jr *r, unsigned *out)
{
    unsigned v = 0;
    if (r->pos + 4 > r->len)
        return jerr(r, "short \\u escape");
    for (int i = 0; i < 4; i++) {
        char c = r->s[r->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return jerr(r, "bad \\u escape");
    }
    *out = v;
    return 0;
}

/* Parse a string; *out (may be NULL to skip) gets a malloc'd decoded copy. */
static int jstring(jr *r, char **out, size_t *outlen)
{
    int err;
    if (out)
        *out = NULL;
    if ((err = expect(r, '"')) < 0)
        return err;
    size_t cap = 16, n = 0;
    char *buf = out ? malloc(cap) : NULL;
    if (out && buf == NULL)
        return st_fail(FW_ST_EIO, FW_ENOMEM, "out of memory reading the header");
    for (;;) {
        if (r->pos >= r->len) {
            free(buf);
            return jerr(r, "unterminated string");
        }
        unsigned char c = (unsigned char)r->s[r->pos++];
        char tmp[4];
        size_t tn = 0;
        if (c == '"')
            break;
        if (c < 0x20) {
            free(buf);
            return jerr(r, "control character in string");
        }
        if (c != '\\') {
            tmp[tn++] = (char)c;
        } else {
            if (r->pos >= r->len) {
                free(buf);
                return jerr(r, "unterminated escape");
            }
            char e = r->s[r->pos++];
            unsigned cp;
            switch (e) {
            case '"': tmp[tn++] = '"'; break;
            case '\\': tmp[tn++] = '\\'; break;
            case '/': tmp[tn++] = '/'; break;
            case 'b': tmp[tn++] = '\b'; break;
            case 'f': tmp[tn++] = '\f'; break;
            case 'n': tmp[tn++] = '\n'; break;
            case 'r': tmp[tn++] = '\r'; break;
            case 't': tmp[tn++] = '\t'; break;
            case 'u':
                if ((err = hex4(r, &cp)) < 0) {
                    free(buf);
                    return err;
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (r->pos + 2 > r->len || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u') {
                        free(buf);
                        return jerr(r, "lone surrogate");
                    }
                    r->pos += 2;
                    if ((err = hex4(r, &lo)) < 0) {
                        free(buf);
                        return err;
                    }
                    if (lo < 0xDC00 || lo > 0xDFFF) {
                        free(buf);
                        return jerr(r, "bad surrogate pair");
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    free(buf);
                    return jerr(r, "lone surrogate");
                }
                if (cp < 0x80) {
                    tmp[tn++] = (char)cp;
                } else if (cp < 0x800) {
                    tmp[tn++] = (char)(0xC0 | (cp >> 6));
                    tmp[tn++] = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    tmp[tn++] = (char)(0xE0 | (cp >> 12));
                    tmp[tn++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    tmp[tn++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    tmp[tn++] = (char)(0xF0 | (cp >> 18));
                    tmp[tn++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    tmp[tn++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    tmp[tn++] = (char)(0x80 | (cp & 0x3F));
                }
                break;
            default:
                free(buf);
                return jerr(r, "bad escape");
            }
        }
        if (buf) {
            if (n + tn + 1 > cap) {
                cap = 2 * cap + tn;
                char *nb = realloc(buf, cap);
                if (nb == NULL) {
                    free(buf);
                    return st_fail(FW_ST_EIO, FW_ENOMEM, "out of memory reading the header");
                }
                buf = nb;
            }
            memcpy(buf + n, tmp, tn);
        }
        n += tn;
    }
    if (buf) {
        buf[n] = '\0';
        *out = buf;
    }
    if (outlen)
        *outlen = n;
    return 0;
}

/* A JSON number. *is_uint / *u are set when it is a plain non-negative
 * integer that fits uint64. */
static int jnumber(jr *r, bool *is_uint, uint64_t *u)
{
    size_t p = r->pos;
    const char *s = r->s;
    bool intonly = true, ovf = false;
    uint64_t v = 0;
    *is_uint = false;
    if (p < r->len && s[p] == '-') {
        intonly = false;
        p++;
    }
    if (p >= r->len || s[p] < '0' || s[p] > '9')
        return jerr(r, "bad number");
    if (s[p] == '0') {
        p++;
    } else {
        while (p < r->len && s[p] >= '0' && s[p] <= '9') {
            unsigned d = (unsigned)(s[p] - '0');
            if (v > (UINT64_MAX - d) / 10)
                ovf = true;
            v = v * 10 + d;
            p++;
        }
    }
    if (p < r->len && s[p] == '.') {
        intonly = false;
        p++;
        if (p >= r->len || s[p] < '0' || s[p] > '9')
            return jerr(r, "bad number");
        while (p < r->len && s[p] >= '0' && s[p] <= '9')
            p++;
    }
    if (p < r->len && (s[p] == 'e' || s[p] == 'E')) {
        intonly = false;
        p++;
        if (p < r->len && (s[p] == '+' || s[p] == '-'))
            p++;
        if (p >= r->len || s[p] < '0' || s[p] > '9')
            return jerr(r, "bad number");
        while (p < r->len && s[p] >= '0' && s[p] <= '9')
            p++;
    }
    r->pos = p;
    *is_uint = intonly && !ovf;
    *u = v;
    return 0;
}

static int jliteral(jr *r, const char *lit)
{
    size_t l = strlen(lit);
    if (r->pos + l > r->len || memcmp(r->s + r->pos, lit, l) != 0)
        return jerr(r, "unexpected token");
    r->pos += l;
    return 0;
}

/* Validate and skip any value. */
static int jskip(jr *r, int depth)
{
    int err;
    bool iu;
    uint64_t u;
    if (depth > MAX_DEPTH)
        return jerr(r, "nesting too deep");
    ws(r);
    if (r->pos >= r->len)
        return jerr(r, "unexpected end");
    switch (r->s[r->pos]) {
    case '"':
        return jstring(r, NULL, NULL);
    case '{':
        r->pos++;
        if (peek(r, '}')) {
            r->pos++;
            return 0;
        }
        for (;;) {
            if ((err = jstring(r, NULL, NULL)) < 0 || (err = expect(r, ':')) < 0 ||
                (err = jskip(r, depth + 1)) < 0)
                return err;
            if (peek(r, ',')) { r->pos++; continue; }
            return expect(r, '}');
        }
    case '[':
        r->pos++;
        if (peek(r, ']')) {
            r->pos++;
            return 0;
        }
        for (;;) {
            if ((err = jskip(r, depth + 1)) < 0)
                return err;
            if (peek(r, ',')) { r->pos++; continue; }
            return expect(r, ']');
        }
    case 't':
        return jliteral(r, "true");
    case 'f':
        return jliteral(r, "false");
    case 'n':
        return jliteral(r, "null");
    default:
        return jnumber(r, &iu, &u);
    }
}

/* An array of non-negative integers into vals (at most maxn; *n gets the
 * count). A non-integer element is an FW_ST_EENTRY error; a syntax error is
 * FW_ST_EJSON. */
static int juint_array(jr *r, uint64_t *vals, size_t maxn, size_t *n, const char *name,
                       const char *field)
{
    int err;
    *n = 0;
    ws(r);
    if (!peek(r, '['))
        return st_fail(FW_ST_EENTRY, FW_EFORMAT, "tensor '%s': %s must be an array", name,
                       field);
    r->pos++;
    if (peek(r, ']')) {
        r->pos++;
        return 0;
    }
    for (;;) {
        bool iu;
        uint64_t u;
        ws(r);
        if (r->pos >= r->len || !(r->s[r->pos] == '-' || (r->s[r->pos] >= '0' && r->s[r->pos] <= '9'))) {
            if ((err = jskip(r, 1)) < 0)
                return err;
            return st_fail(FW_ST_EENTRY, FW_EFORMAT, "tensor '%s': %s must hold non-negative "
                           "integers", name, field);
        }
        if ((err = jnumber(r, &iu, &u)) < 0)
            return err;
        if (!iu)
            return st_fail(FW_ST_EENTRY, FW_EFORMAT, "tensor '%s': %s must hold non-negative "
                           "integers below 2^64", name, field);
        if (*n >= maxn)
            return st_fail(maxn == 2 ? FW_ST_EENTRY : FW_ST_ESHAPE,
                           maxn == 2 ? FW_EFORMAT : FW_EUNSUPPORTED,
                           "tensor '%s': %s has more than %zu entries", name, field, maxn);
        vals[(*n)++] = u;
        if (peek(r, ',')) { r->pos++; continue; }
        return expect(r, ']');
    }
}

/* ---- the header ---- */

static int add_entry(fw_safetensors *f, st_entry *e)
{
    if (f->n == f->cap) {
        size_t nc = f->cap ? 2 * f->cap : 16;
        st_entry *ne = realloc(f->e, nc * sizeof(*ne));
        if (ne == NULL)
            return st_fail(FW_ST_EIO, FW_ENOMEM, "out of memory reading the header");
        f->e = ne;
        f->cap = nc;
    }
    f->e[f->n++] = *e;
    return 0;
}

static int parse_dtype(fw_dtype *dt, const char *s, const char *name)
{
    for (size_t i = 0; i < sizeof(known_dtypes) / sizeof(known_dtypes[0]); i++)
        if (strcmp(s, known_dtypes[i].name) == 0) {
            *dt = known_dtypes[i].dt;
            return 0;
        }
    for (size_t i = 0; i < sizeof(unsupported_dtypes) / sizeof(unsupported_dtypes[0]); i++)
        if (strcmp(s, unsupported_dtypes[i]) == 0)
            return st_fail(FW_ST_EDTYPE, FW_EUNSUPPORTED, "tensor '%s': unsupported dtype '%s' "
                           "(supported: F64 F32 F16 BF16 I64 I32 U8 BOOL)", name, s);
    return st_fail(FW_ST_EDTYPE, FW_EFORMAT, "tensor '%s': unknown dtype '%.40s'", name, s);
}

/* One tensor entry object: {"dtype": .., "shape": [..], "data_offsets": [b, e]}. */
static int parse_entry(jr *r, st_entry *e)
{
    int err;
    bool have_dt = false, have_shape = false, have_off = false;
    if (!peek(r, '{'))
        return st_fail(FW_ST_EENTRY, FW_EFORMAT, "tensor '%s': entry must be an object",
                       e->name);
    r->pos++;
    if (peek(r, '}'))
        r->pos++;
    else
        for (;;) {
            char *key = NULL;
            if ((err = jstring(r, &key, NULL)) < 0)
                return err;
            if ((err = expect(r, ':')) < 0) {
                free(key);
                return err;
            }
            if (strcmp(key, "dtype") == 0) {
                char *v = NULL;
                free(key);
                if (!peek(r, '"'))
                    return st_fail(FW_ST_EENTRY, FW_EFORMAT, "tensor '%s': dtype must be a "
                                   "string", e->name);
                if ((err = jstring(r, &v, NULL)) < 0)
                    return err;
                err = parse_dtype(&e->dtype, v, e->name);
                free(v);
                if (err < 0)
                    return err;
                have_dt = true;
            } else if (strcmp(key, "shape") == 0) {
                uint64_t dims[FW_MAX_DIMS];
                size_t nd;
                free(key);
                if ((err = juint_array(r, dims, FW_MAX_DIMS, &nd, e->name, "shape")) < 0)
                    return err;
                for (size_t k = 0; k < nd; k++) {
                    if (dims[k] > (uint64_t)INT64_MAX)
                        return st_fail(FW_ST_ESHAPE, FW_EFORMAT, "tensor '%s': dimension %llu "
                                       "too large", e->name, (unsigned long long)dims[k]);
                    e->shape[k] = (int64_t)dims[k];
                }
                e->ndim = (int)nd;
                have_shape = true;
            } else if (strcmp(key, "data_offsets") == 0) {
                uint64_t off[2];
                size_t no;
                free(key);
                if ((err = juint_array(r, off, 2, &no, e->name, "data_offsets")) < 0)
                    return err;
                if (no != 2)
                    return st_fail(FW_ST_EENTRY, FW_EFORMAT, "tensor '%s': data_offsets must "
                                   "be [begin, end]", e->name);
                e->begin = off[0];
                e->end = off[1];
                have_off = true;
            } else {
                free(key);      /* unknown fields are ignored, like the reference */
                if ((err = jskip(r, 2)) < 0)
                    return err;
            }
            if (peek(r, ',')) { r->pos++; continue; }
            if ((err = expect(r, '}')) < 0)
                return err;
            break;
        }
    if (!have_dt || !have_shape || !have_off)
        return st_fail(FW_ST_EENTRY, FW_EFORMAT, "tensor '%s': missing %s", e->name,
                       !have_dt ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return 0;
}

static int parse_metadata(fw_safetensors *f, jr *r)
{
    int err;
    if (!peek(r, '{'))
        return st_fail(FW_ST_EMETADATA, FW_EFORMAT, "__metadata__ must be an object of strings");
    r->pos++;
    if (peek(r, '}')) {
        r->pos++;
        return 0;
    }
    for (;;) {
        char *k = NULL, *v = NULL;
        if ((err = jstring(r, &k, NULL)) < 0)
            return err;
        if ((err = expect(r, ':')) < 0) {
            free(k);
            return err;
        }
        if (!peek(r, '"')) {
            free(k);
            if ((err = jskip(r, 2)) < 0)
                return err;
            return st_fail(FW_ST_EMETADATA, FW_EFORMAT, "__metadata__ values must be strings");
        }
        if ((err = jstring(r, &v, NULL)) < 0) {
            free(k);
            return err;
        }
        for (size_t i = 0; i < f->nmeta; i++)
            if (strcmp(f->mkeys[i], k) == 0) {
                free(k);
                free(v);
                return st_fail(FW_ST_EMETADATA, FW_EFORMAT, "__metadata__ key '%s' repeats",
                               f->mkeys[i]);
            }
        if (f->nmeta == f->mcap) {
            size_t nc = f->mcap ? 2 * f->mcap : 8;
            char **nk = realloc(f->mkeys, nc * sizeof(char *));
            if (nk) f->mkeys = nk;
            char **nv = nk ? realloc(f->mvals, nc * sizeof(char *)) : NULL;
            if (nv) f->mvals = nv;
            if (!nk || !nv) {
                free(k);
                free(v);
                return st_fail(FW_ST_EIO, FW_ENOMEM, "out of memory reading the header");
            }
            f->mcap = nc;
        }
        f->mkeys[f->nmeta] = k;
        f->mvals[f->nmeta++] = v;
        if (peek(r, ',')) { r->pos++; continue; }
        return expect(r, '}');
    }
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

static int cmp_begin(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Strict UTF-8 (no overlongs, surrogates or code points over U+10FFFF). */
static bool utf8_valid(const uint8_t *s, size_t n, size_t *bad)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        else if (c >= 0xC2 && c <= 0xDF) { k = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { k = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 3; cp = c & 0x07; }
        else { *bad = i; return false; }
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xC0) != 0x80) { *bad = i; return false; }
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10FFFF))) {
            *bad = i;
            return false;
        }
        i += k + 1;
    }
    return true;
}

static int parse_header(fw_safetensors *f, const uint8_t *buf, size_t len)
{
    int err;
    if (len < 8)
        return st_fail(FW_ST_ETRUNCATED, FW_EFORMAT, "file is %zu bytes; the 8-byte header "
                       "length is missing", len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | buf[i];
    if (hlen > FW_SAFETENSORS_MAX_HEADER)
        return st_fail(FW_ST_EHEADER_TOO_LARGE, FW_EFORMAT, "header length %llu is over the "
                       "limit of %llu bytes", (unsigned long long)hlen,
                       (unsigned long long)FW_SAFETENSORS_MAX_HEADER);
    if (hlen > len - 8)
        return st_fail(FW_ST_ETRUNCATED, FW_EFORMAT, "header length %llu runs past the end "
                       "of the %zu-byte file", (unsigned long long)hlen, len);
    size_t bad;
    if (!utf8_valid(buf + 8, (size_t)hlen, &bad))
        return st_fail(FW_ST_EUTF8, FW_EFORMAT, "header is not valid UTF-8 (byte %zu)", bad);
    f->data = buf + 8 + hlen;
    f->data_len = len - 8 - (size_t)hlen;

    jr r = { (const char *)buf + 8, (size_t)hlen, 0 };
    if (hlen == 0 || r.s[0] != '{')
        return st_fail(FW_ST_EJSON, FW_EFORMAT, "header is not a JSON object (must start "
                       "with '{')");
    r.pos = 1;
    bool seen_meta = false;
    if (peek(&r, '}')) {
        r.pos++;
    } else {
        for (;;) {
            st_entry e;
            memset(&e, 0, sizeof(e));
            size_t nl;
            if ((err = jstring(&r, &e.name, &nl)) < 0)
                return err;
            if ((err = expect(&r, ':')) < 0) {
                free(e.name);
                return err;
            }
            if (strcmp(e.name, "__metadata__") == 0) {
                free(e.name);
                if (seen_meta)
                    return st_fail(FW_ST_EDUPLICATE, FW_EFORMAT, "__metadata__ appears twice");
                seen_meta = true;
                if ((err = parse_metadata(f, &r)) < 0)
                    return err;
            } else {
                if (nl != strlen(e.name)) {
                    err = st_fail(FW_ST_EENTRY, FW_EFORMAT, "a tensor name contains NUL");
                    free(e.name);
                    return err;
                }
                if ((err = parse_entry(&r, &e)) < 0 || (err = add_entry(f, &e)) < 0) {
                    free(e.name);
                    return err;
                }
            }
            if (peek(&r, ',')) { r.pos++; continue; }
            if ((err = expect(&r, '}')) < 0)
                return err;
            break;
        }
    }
    ws(&r);          /* the header may be padded with whitespace */
    if (r.pos != r.len)
        return jerr(&r, "trailing characters after the object");

    /* duplicates */
    if (f->n > 1) {
        st_entry *tmp = malloc(f->n * sizeof(*tmp));
        if (tmp == NULL)
            return st_fail(FW_ST_EIO, FW_ENOMEM, "out of memory");
        memcpy(tmp, f->e, f->n * sizeof(*tmp));
        qsort(tmp, f->n, sizeof(*tmp), cmp_name);
        for (size_t i = 1; i < f->n; i++)
            if (strcmp(tmp[i].name, tmp[i - 1].name) == 0) {
                err = st_fail(FW_ST_EDUPLICATE, FW_EFORMAT, "tensor name '%s' appears twice",
                              tmp[i].name);
                free(tmp);
                return err;
            }
        free(tmp);
    }
    /* per entry: span and bounds */
    for (size_t i = 0; i < f->n; i++) {
        st_entry *e = &f->e[i];
        if (e->end < e->begin)
            return st_fail(FW_ST_EOFFSETS, FW_EFORMAT, "tensor '%s': data_offsets [%llu, %llu] "
                           "end before begin", e->name, (unsigned long long)e->begin,
                           (unsigned long long)e->end);
        unsigned __int128 bytes = fw_dtype_size(e->dtype);
        for (int k = 0; k < e->ndim; k++) {
            bytes *= (uint64_t)e->shape[k];
            if (bytes > (unsigned __int128)UINT64_MAX)
                return st_fail(FW_ST_ESHAPE, FW_EFORMAT, "tensor '%s': shape overflows", e->name);
        }
        if (bytes != e->end - e->begin)
            return st_fail(FW_ST_ESHAPE, FW_EFORMAT, "tensor '%s': shape needs %llu bytes of %s "
                           "but data_offsets [%llu, %llu] span %llu", e->name,
                           (unsigned long long)bytes, dtype_st_name(e->dtype),
                           (unsigned long long)e->begin, (unsigned long long)e->end,
                           (unsigned long long)(e->end - e->begin));
        if (e->end > f->data_len)
            return st_fail(FW_ST_EBOUNDS, FW_EFORMAT, "tensor '%s': data_offsets [%llu, %llu] "
                           "beyond the %zu-byte data section", e->name,
                           (unsigned long long)e->begin, (unsigned long long)e->end, f->data_len);
    }
    /* contiguous cover of the data section */
    if (f->n > 1) /* f->e is NULL for a file without tensors */
        qsort(f->e, f->n, sizeof(*f->e), cmp_begin);
    uint64_t at = 0;
    for (size_t i = 0; i < f->n; i++) {
        st_entry *e = &f->e[i];
        if (e->begin != at)
            return st_fail(FW_ST_EOFFSETS, FW_EFORMAT, "tensor '%s' begins at %llu but the "
                           "previous data ends at %llu (%s)", e->name,
                           (unsigned long long)e->begin, (unsigned long long)at,
                           e->begin < at ? "overlap" : "gap");
        at = e->end;
    }
    if (at != f->data_len)
        return st_fail(FW_ST_EOFFSETS, FW_EFORMAT, "tensors cover %llu bytes of the %zu-byte "
                       "data section", (unsigned long long)at, f->data_len);
    return 0;
}

int fw_safetensors_open_memory(fw_safetensors **out, const void *buf, size_t len)
{
    fw_safetensors *f;
    int err;

    *out = NULL;
    last_kind = FW_ST_OK;
    if (buf == NULL && len > 0)
        return st_fail(FW_ST_EARG, FW_EINVAL, "NULL buffer");
    if ((f = calloc(1, sizeof(*f))) == NULL)
        return st_fail(FW_ST_EIO, FW_ENOMEM, "out of memory");
    if ((err = parse_header(f, buf, len)) < 0) {
        fw_safetensors_close(f);
        return err;
    }
    *out = f;
    return 0;
}

int fw_safetensors_open(fw_safetensors **out, const char *path)
{
    struct stat st;
    void *addr = NULL;
    st_map *m = NULL;
    int fd, err;

    *out = NULL;
    last_kind = FW_ST_OK;
    if (path == NULL)
        return st_fail(FW_ST_EARG, FW_EINVAL, "NULL path");
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return st_fail(FW_ST_EIO, FW_EIO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        err = st_fail(FW_ST_EIO, FW_EIO, "%s is not a regular file", path);
        close(fd);
        return err;
    }
    size_t len = (size_t)st.st_size;
    /* private and writable: views may be written to (copy-on-write pages);
     * the file never changes */
    if (len > 0 &&
        (addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
        err = st_fail(FW_ST_EIO, FW_EIO, "cannot map %s: %s", path, strerror(errno));
        close(fd);
        return err;
    }
    close(fd);
    if (addr != NULL) {
        if ((m = malloc(sizeof(*m))) == NULL) {
            munmap(addr, len);
            return st_fail(FW_ST_EIO, FW_ENOMEM, "out of memory");
        }
        atomic_init(&m->refs, 1);
        m->addr = addr;
        m->len = len;
    }
    if ((err = fw_safetensors_open_memory(out, addr, len)) < 0) {
        map_unref(m);
        return err;
    }
    (*out)->map = m;
    return 0;
}

void fw_safetensors_close(fw_safetensors *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n; i++)
        free(f->e[i].name);
    free(f->e);
    for (size_t i = 0; i < f->nmeta; i++) {
        free(f->mkeys[i]);
        free(f->mvals[i]);
    }
    free(f->mkeys);
    free(f->mvals);
    map_unref(f->map);
    free(f);
}

size_t fw_safetensors_count(const fw_safetensors *f) { return f->n; }

int64_t fw_safetensors_find(const fw_safetensors *f, const char *name)
{
    for (size_t i = 0; name != NULL && i < f->n; i++)
        if (strcmp(f->e[i].name, name) == 0)
            return (int64_t)i;
    return -1;
}

const char *fw_safetensors_name(const fw_safetensors *f, size_t i)
{
    return i < f->n ? f->e[i].name : NULL;
}

fw_dtype fw_safetensors_dtype(const fw_safetensors *f, size_t i)
{
    return i < f->n ? f->e[i].dtype : FW_NDTYPES;
}

int fw_safetensors_ndim(const fw_safetensors *f, size_t i)
{
    return i < f->n ? f->e[i].ndim : -1;
}

const int64_t *fw_safetensors_shape(const fw_safetensors *f, size_t i)
{
    return i < f->n ? f->e[i].shape : NULL;
}

const void *fw_safetensors_data(const fw_safetensors *f, size_t i, size_t *nbytes)
{
    if (i >= f->n) {
        if (nbytes)
            *nbytes = 0;
        return NULL;
    }
    if (nbytes)
        *nbytes = (size_t)(f->e[i].end - f->e[i].begin);
    return f->data + f->e[i].begin;
}

int fw_safetensors_tensor(fw_tensor **out, const fw_safetensors *f, size_t i)
{
    *out = NULL;
    if (i >= f->n)
        return fw_error_set(FW_ERANGE, "safetensors: tensor index %zu of %zu", i, f->n);
    const st_entry *e = &f->e[i];
    static const uint8_t empty[8];
    const void *src = e->end > e->begin ? (const void *)(f->data + e->begin) : empty;
    return fw_tensor_from_data(out, src, e->dtype, e->shape, e->ndim);
}

int fw_safetensors_tensor_view(fw_tensor **out, fw_safetensors *f, size_t i)
{
    int err;

    *out = NULL;
    if (i >= f->n)
        return fw_error_set(FW_ERANGE, "safetensors: tensor index %zu of %zu", i, f->n);
    const st_entry *e = &f->e[i];
    void *p = (void *)(f->data + e->begin);
    if (f->map == NULL || e->end == e->begin ||
        (uintptr_t)p % fw_dtype_size(e->dtype) != 0)
        return fw_safetensors_tensor(out, f, i);       /* copy */
    atomic_fetch_add(&f->map->refs, 1);
    if ((err = fw_tensor_from_blob(out, p, e->dtype, e->shape, e->ndim, view_release,
                                   f->map)) < 0)
        map_unref(f->map);
    return err;
}

int fw_safetensors_get(fw_tensor **out, const fw_safetensors *f, const char *name)
{
    int64_t i = fw_safetensors_find(f, name);
    *out = NULL;
    if (i < 0)
        return fw_error_set(FW_ERANGE, "safetensors: no tensor named '%s'",
                            name ? name : "(null)");
    return fw_safetensors_tensor(out, f, (size_t)i);
}

size_t fw_safetensors_metadata_count(const fw_safetensors *f) { return f->nmeta; }

const char *fw_safetensors_metadata_key(const fw_safetensors *f, size_t i)
{
    return i < f->nmeta ? f->mkeys[i] : NULL;
}

const char *fw_safetensors_metadata_value(const fw_safetensors *f, size_t i)
{
    return i < f->nmeta ? f->mvals[i] : NULL;
}

const char *fw_safetensors_metadata_get(const fw_safetensors *f, const char *key)
{
    for (size_t i = 0; key != NULL && i < f->nmeta; i++)
        if (strcmp(f->mkeys[i], key) == 0)
            return f->mvals[i];
    return NULL;
}

/* ---- save ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (np == NULL) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

__attribute__((format(printf, 2, 3)))
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    sb_put(b, tmp, (size_t)k < sizeof(tmp) ? (size_t)k : sizeof(tmp) - 1);
}

static void sb_jstr(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            sb_printf(b, "\\u%04x", c);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *q = p;
    while (n > 0) {
        ssize_t w = write(fd, q, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        q += w;
        n -= (size_t)w;
    }
    return 0;
}

int fw_safetensors_save(const char *path, const char *const *names, fw_tensor *const *tensors,
                        size_t n, const char *const *meta_keys,
                        const char *const *meta_values, size_t nmeta)
{
    sbuf h = { 0 };
    char *tmppath = NULL;
    void *chunk = NULL;
    int fd = -1, err = 0;

    last_kind = FW_ST_OK;
    if (path == NULL || (n > 0 && (names == NULL || tensors == NULL)) ||
        (nmeta > 0 && (meta_keys == NULL || meta_values == NULL)))
        return st_fail(FW_ST_EARG, FW_EINVAL, "save: NULL path, names, tensors or metadata");
    for (size_t i = 0; i < n; i++) {
        if (names[i] == NULL || names[i][0] == '\0' || strcmp(names[i], "__metadata__") == 0)
            return st_fail(FW_ST_EARG, FW_EINVAL, "save: tensor %zu has a bad name '%s'", i,
                           names[i] ? names[i] : "(null)");
        size_t bad;
        if (!utf8_valid((const uint8_t *)names[i], strlen(names[i]), &bad))
            return st_fail(FW_ST_EARG, FW_EINVAL, "save: tensor name %zu is not valid UTF-8", i);
        if (tensors[i] == NULL)
            return st_fail(FW_ST_EARG, FW_EINVAL, "save: tensor '%s' is NULL", names[i]);
        if (fw_tensor_device(tensors[i]) != FW_CPU)
            return st_fail(FW_ST_EARG, FW_EDEVICE, "save: tensor '%s' is not on the CPU",
                           names[i]);
        if (dtype_st_name(fw_tensor_dtype(tensors[i])) == NULL)
            return st_fail(FW_ST_EARG, FW_EDTYPE, "save: tensor '%s' has dtype %s", names[i],
                           fw_dtype_name(fw_tensor_dtype(tensors[i])));
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return st_fail(FW_ST_EARG, FW_EINVAL, "save: tensor name '%s' repeats",
                               names[i]);
    }
    for (size_t i = 0; i < nmeta; i++) {
        size_t bad;
        if (meta_keys[i] == NULL || meta_values[i] == NULL)
            return st_fail(FW_ST_EARG, FW_EINVAL, "save: metadata entry %zu is NULL", i);
        if (!utf8_valid((const uint8_t *)meta_keys[i], strlen(meta_keys[i]), &bad) ||
            !utf8_valid((const uint8_t *)meta_values[i], strlen(meta_values[i]), &bad))
            return st_fail(FW_ST_EARG, FW_EINVAL, "save: metadata entry %zu is not valid UTF-8",
                           i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(meta_keys[i], meta_keys[j]) == 0)
                return st_fail(FW_ST_EARG, FW_EINVAL, "save: metadata key '%s' repeats",
                               meta_keys[i]);
    }

    /* header */
    uint64_t off = 0;
    sb_put(&h, "{", 1);
    if (nmeta > 0) {
        sb_jstr(&h, "__metadata__");
        sb_put(&h, ":{", 2);
        for (size_t i = 0; i < nmeta; i++) {
            if (i)
                sb_put(&h, ",", 1);
            sb_jstr(&h, meta_keys[i]);
            sb_put(&h, ":", 1);
            sb_jstr(&h, meta_values[i]);
        }
        sb_put(&h, "}", 1);
    }
    for (size_t i = 0; i < n; i++) {
        fw_tensor *t = tensors[i];
        uint64_t bytes = (uint64_t)fw_tensor_numel(t) * fw_dtype_size(fw_tensor_dtype(t));
        if (i || nmeta)
            sb_put(&h, ",", 1);
        sb_jstr(&h, names[i]);
        sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtype_st_name(fw_tensor_dtype(t)));
        for (int k = 0; k < fw_tensor_ndim(t); k++)
            sb_printf(&h, "%s%lld", k ? "," : "", (long long)fw_tensor_shape(t)[k]);
        sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                  (unsigned long long)(off + bytes));
        off += bytes;
    }
    sb_put(&h, "}", 1);
    while (!h.oom && h.n % 8 != 0)
        sb_put(&h, " ", 1);
    if (h.oom) {
        err = st_fail(FW_ST_EIO, FW_ENOMEM, "save: out of memory");
        goto done;
    }

    size_t pl = strlen(path);
    if ((tmppath = malloc(pl + 16)) == NULL) {
        err = st_fail(FW_ST_EIO, FW_ENOMEM, "save: out of memory");
        goto done;
    }
    snprintf(tmppath, pl + 16, "%s.tmpXXXXXX", path);
    if ((fd = mkstemp(tmppath)) < 0) {
        err = st_fail(FW_ST_EIO, FW_EIO, "save: cannot create %s: %s", tmppath, strerror(errno));
        free(tmppath);
        tmppath = NULL;
        goto done;
    }
    (void)fchmod(fd, 0644);   /* mkstemp makes 0600; a weights file is not secret */
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
    if (write_all(fd, len8, 8) < 0 || write_all(fd, h.p, h.n) < 0) {
        err = st_fail(FW_ST_EIO, FW_EIO, "save: writing %s: %s", path, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        fw_tensor *t = tensors[i];
        size_t bytes = (size_t)fw_tensor_numel(t) * fw_dtype_size(fw_tensor_dtype(t));
        if (bytes == 0)
            continue;
        const void *src;
        if (fw_tensor_is_contiguous(t)) {
            src = fw_tensor_data(t);
        } else {
            free(chunk);
            if ((chunk = malloc(bytes)) == NULL) {
                err = st_fail(FW_ST_EIO, FW_ENOMEM, "save: out of memory");
                goto done;
            }
            if ((err = fw_tensor_copy_to(chunk, bytes, t)) < 0)
                goto done;
            src = chunk;
        }
        if (write_all(fd, src, bytes) < 0) {
            err = st_fail(FW_ST_EIO, FW_EIO, "save: writing %s: %s", path, strerror(errno));
            goto done;
        }
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        fd = -1;
        err = st_fail(FW_ST_EIO, FW_EIO, "save: flushing %s: %s", path, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmppath, path) < 0) {
        err = st_fail(FW_ST_EIO, FW_EIO, "save: renaming onto %s: %s", path, strerror(errno));
        goto done;
    }
    free(tmppath);
    tmppath = NULL;
done:
    if (fd >= 0)
        close(fd);
    if (tmppath) {
        unlink(tmppath);
        free(tmppath);
    }
    free(chunk);
    free(h.p);
    return err;
}
