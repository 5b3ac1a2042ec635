/*
 * csvsub.c - the streaming CSV reader for truths and submissions (csvsub.h).
 *
 * A record is parsed straight from the read buffer. When the buffer ends in
 * the middle of a record, the unread tail moves to the front, more is read,
 * and the record is parsed again from its start (a record is at most
 * COMP_CSV_MAX_RECORD bytes, so the buffer always holds a whole one).
 */
#include "csvsub.h"

#include "ed_error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUF_CAP ((size_t)COMP_CSV_MAX_RECORD * 2)

static int fail(comp_csv *r, int code, int64_t line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(comp_csv *r, int code, int64_t line, int col, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);
    r->err_code = code;
    r->err_line = line;
    r->err_col = col;
    return code;
}

int comp__csv_open(comp_csv *r, int fd, int64_t max_bytes)
{
    struct stat st;

    memset(r, 0, sizeof(*r));
    r->fd = fd;
    r->max_bytes = max_bytes;
    r->line = 1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        int64_t left = (int64_t)st.st_size - (at > 0 ? (int64_t)at : 0);
        if (left > max_bytes)
            return fail(r, ED_EUNPROC, 0, 0, "the file is %lld bytes, over the %lld-byte cap", (long long)left,
                        (long long)max_bytes);
    }
    r->cap = BUF_CAP;
    r->buf = malloc(r->cap);
    r->rec = malloc((size_t)COMP_CSV_MAX_RECORD + COMP_CSV_MAX_COLUMNS + 16);
    r->field = malloc(sizeof(*r->field) * (COMP_CSV_MAX_COLUMNS + 1));
    r->flen = malloc(sizeof(*r->flen) * (COMP_CSV_MAX_COLUMNS + 1));
    if (!r->buf || !r->rec || !r->field || !r->flen) {
        comp__csv_close(r);
        return fail(r, ED_ENOMEM, 0, 0, "out of memory for the CSV reader");
    }
    return 0;
}

void comp__csv_close(comp_csv *r)
{
    free(r->buf);
    free(r->rec);
    free(r->field);
    free(r->flen);
    r->buf = r->rec = NULL;
    r->field = NULL;
    r->flen = NULL;
}

/* Move the unread tail to the front and read more. 0, or an error. */
static int fill(comp_csv *r)
{
    ssize_t n;

    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    while (r->len < r->cap) {
        n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return fail(r, ED_EIO, 0, 0, "reading the file: %s", strerror(errno));
        }
        if (n == 0) {
            r->eof = 1;
            break;
        }
        r->len += (size_t)n;
        r->total += n;
        if (r->total > r->max_bytes)
            return fail(r, ED_EUNPROC, 0, 0, "the file is over the %lld-byte cap", (long long)r->max_bytes);
        if (r->len - r->pos >= COMP_CSV_MAX_RECORD + 2)
            break;          /* enough for a whole record; read more later */
    }
    return 0;
}

enum { S_START, S_UNQ, S_QUO, S_AFTERQ };

/* Bytes with no meaning to the parser: everything but , " CR LF and NUL. */
static const unsigned char plain[256] = {
    [0x01 ... 0x09] = 1, [0x0B ... 0x0C] = 1, [0x0E ... 0x21] = 1, [0x23 ... 0x2B] = 1, [0x2D ... 0xFF] = 1,
};

/* The common record: a whole line (LF or CRLF) in the buffer without
 * quotes, lone CRs or NULs, fields and the record within their bounds.
 * Found with memchr and copied with commas turned into NULs in one pass;
 * anything else goes to parse() below, which reads it (or reports its
 * error) exactly as before. 1: a record, 2: a blank line, -1: not this
 * kind (nothing consumed). */
#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
#define LOWS  0x7F7F7F7F7F7F7F7Full

/* 0x80 in each byte of v that is zero, nothing elsewhere (exact: no borrow
 * between bytes). */
static inline uint64_t zero_bytes(uint64_t v)
{
    return ~(((v & LOWS) + LOWS) | v | LOWS);
}

/* Turn the comma at rec[k] into a field end. 0, or -1 past a bound. */
static inline int fast_field(comp_csv *r, char *rec, size_t k, size_t *fstart, int *nf)
{
    if (k - *fstart > COMP_CSV_MAX_FIELD || *nf + 1 >= COMP_CSV_MAX_COLUMNS)
        return -1;
    rec[k] = '\0';
    r->field[*nf] = rec + *fstart;
    r->flen[*nf] = k - *fstart;
    (*nf)++;
    *fstart = k + 1;
    return 0;
}

static int parse_fast(comp_csv *r)
{
    const unsigned char *b = (const unsigned char *)r->buf + r->pos, *nl;
    size_t avail = r->len - r->pos, L, k, fstart = 0;
    uint64_t hi = 0;
    int nf = 0;
    char *rec = r->rec;

    if (avail == 0 || (nl = memchr(b, '\n', avail < COMP_CSV_MAX_RECORD ? avail : COMP_CSV_MAX_RECORD)) == NULL)
        return -1;
    L = (size_t)(nl - b);
    if (L > 0 && b[L - 1] == '\r')
        L--;
    memcpy(rec, b, L);
    /* 8 bytes at a time (the last word masked to the line; the buffer has
     * the bytes up to the newline at least): quotes, CRs and NULs send the
     * line to parse(); commas end fields. */
    for (k = 0; k < L; k += 8) {
        uint64_t w, valid = HIGHS, bad, comma;
        if (avail - k < 8)
            break;      /* the buffer's last bytes: one at a time below */
        memcpy(&w, b + k, 8);
        if (L - k < 8)
            valid = HIGHS & ((1ull << ((L - k) * 8)) - 1);
        hi |= w & valid;
        bad = (zero_bytes(w ^ ('"' * ONES)) | zero_bytes(w ^ ('\r' * ONES)) | zero_bytes(w)) & valid;
        if (bad)
            return -1;
        for (comma = zero_bytes(w ^ (',' * ONES)) & valid; comma; comma &= comma - 1)
            if (fast_field(r, rec, k + (size_t)(__builtin_ctzll(comma) >> 3), &fstart, &nf) < 0)
                return -1;
    }
    for (; k < L; k++) {
        unsigned c = b[k];
        hi |= c;
        if (c == '"' || c == '\r' || c == 0)
            return -1;
        if (c == ',' && fast_field(r, rec, k, &fstart, &nf) < 0)
            return -1;
    }
    if (L - fstart > COMP_CSV_MAX_FIELD)
        return -1;
    rec[L] = '\0';
    r->field[nf] = rec + fstart;
    r->flen[nf] = L - fstart;
    nf++;
    r->rec_line = r->line;
    r->nfields = nf;
    r->nonascii = (hi & HIGHS) != 0;
    r->pos += (size_t)(nl - b) + 1;
    r->line++;
    return nf == 1 && L == 0 ? 2 : 1;
}

/* Parse one record from buf[pos..len). 1: a record, 2: a blank line
 * (consumed, no record), 0: need more input, <0: error. */
static int parse(comp_csv *r)
{
    const unsigned char *b = (const unsigned char *)r->buf;
    size_t i = r->pos, end = r->len, o = 0, fstart = 0;
    int64_t line = r->line, qline = 0;
    int st = S_START, nf = 0, quoted = 0;
    unsigned hi = 0;        /* OR of the unquoted bytes: 0x80 set when one is not ASCII */
    char *rec = r->rec;

    for (;;) {
        int c, done_field = 0, done_rec = 0;
        if (i - r->pos > COMP_CSV_MAX_RECORD)
            return fail(r, ED_EUNPROC, r->line, nf + 1, "a record is over %u bytes", COMP_CSV_MAX_RECORD);
        if (i >= end) {
            if (!r->eof)
                return 0;
            if (st == S_QUO)
                return fail(r, ED_EUNPROC, qline, nf + 1, "a quote opened on line %lld is never closed",
                            (long long)qline);
            if (i == r->pos)
                return 3;   /* nothing left */
            done_field = done_rec = 1;
        } else {
            c = b[i];
            if (c == 0)
                return fail(r, ED_EUNPROC, line, nf + 1, "a NUL byte (is the file UTF-16 or binary?)");
            switch (st) {
            case S_START:
            case S_UNQ:
                if (c == ',') {
                    done_field = 1;
                    i++;
                } else if (c == '\n') {
                    done_field = done_rec = 1;
                    i++;
                    line++;
                } else if (c == '\r') {
                    if (i + 1 >= end && !r->eof)
                        return 0;   /* need to see whether LF follows */
                    i += (i + 1 < end && b[i + 1] == '\n') ? 2 : 1;
                    line++;
                    done_field = done_rec = 1;
                } else if (c == '"') {
                    if (st == S_UNQ)
                        return fail(r, ED_EUNPROC, line, nf + 1, "a quote inside an unquoted field");
                    st = S_QUO;
                    quoted = 1;
                    hi |= 0x80;     /* quoted fields: checked field by field */
                    qline = line;
                    i++;
                } else {
                    /* a run of ordinary bytes at once (bounded like the loop) */
                    size_t lim = end < r->pos + COMP_CSV_MAX_RECORD + 1 ? end : r->pos + COMP_CSV_MAX_RECORD + 1;
                    st = S_UNQ;
                    rec[o++] = (char)c;
                    hi |= (unsigned)c;
                    for (i++; i < lim && plain[b[i]]; i++) {
                        rec[o++] = (char)b[i];
                        hi |= b[i];
                    }
                }
                break;
            case S_QUO:
                if (c == '"') {
                    st = S_AFTERQ;
                } else if (plain[c] || c == ',') {
                    size_t lim = end < r->pos + COMP_CSV_MAX_RECORD + 1 ? end : r->pos + COMP_CSV_MAX_RECORD + 1;
                    rec[o++] = (char)c;
                    for (i++; i < lim && (plain[b[i]] || b[i] == ','); i++)
                        rec[o++] = (char)b[i];
                    i--;    /* the common i++ below */
                } else {
                    if (c == '\n' || (c == '\r' && !(i + 1 < end && b[i + 1] == '\n')))
                        line++;
                    rec[o++] = (char)c;
                }
                i++;
                break;
            case S_AFTERQ:
                if (c == '"') {
                    rec[o++] = '"';
                    st = S_QUO;
                    i++;
                } else if (c == ',' || c == '\n' || c == '\r') {
                    st = S_UNQ;     /* ends like an unquoted field: loop again */
                    continue;
                } else {
                    return fail(r, ED_EUNPROC, line, nf + 1, "text after a closing quote");
                }
                break;
            }
            if (o - fstart > COMP_CSV_MAX_FIELD)
                return fail(r, ED_EUNPROC, r->line, nf + 1, "a field is over %d bytes", COMP_CSV_MAX_FIELD);
        }
        if (done_field) {
            if (nf >= COMP_CSV_MAX_COLUMNS)
                return fail(r, ED_EUNPROC, r->line, nf + 1, "a record has over %d fields", COMP_CSV_MAX_COLUMNS);
            r->field[nf] = rec + fstart;
            r->flen[nf] = o - fstart;
            rec[o++] = '\0';
            nf++;
            fstart = o;
            st = S_START;
            if (done_rec) {
                r->rec_line = r->line;
                r->nfields = nf;
                r->nonascii = (hi & 0x80) != 0;
                r->pos = i;
                r->line = line;
                if (nf == 1 && r->flen[0] == 0 && !quoted)
                    return 2;
                return 1;
            }
        }
    }
}

int comp__csv_next(comp_csv *r)
{
    int rc, i;

    if (!r->started) {
        if ((rc = fill(r)) < 0)
            return rc;
        r->started = 1;
        if (r->len >= 2 && (((unsigned char)r->buf[0] == 0xFF && (unsigned char)r->buf[1] == 0xFE) ||
                            ((unsigned char)r->buf[0] == 0xFE && (unsigned char)r->buf[1] == 0xFF)))
            return fail(r, ED_EUNPROC, 1, 0, "the file is UTF-16 (it starts with a UTF-16 byte order mark); "
                                             "save it as UTF-8");
        if (r->len >= 3 && !memcmp(r->buf, "\xEF\xBB\xBF", 3))
            r->pos = 3;
        if (r->pos == r->len)
            return fail(r, ED_EUNPROC, 0, 0, "the file is empty");
    }
    for (;;) {
        if (r->slow_only || (rc = parse_fast(r)) < 0)
            rc = parse(r);
        if (rc < 0)
            return rc;
        if (rc == 3)
            return 0;
        if (rc == 2)
            continue;
        if (rc == 1)
            break;
        if (r->eof)
            return fail(r, ED_EINTERNAL, r->line, 0, "reader stalled at end of input");
        if ((rc = fill(r)) < 0)
            return rc;
    }
    for (i = 0; r->nonascii && i < r->nfields; i++) {
        const unsigned char *f = (const unsigned char *)r->field[i];
        size_t k, n = r->flen[i];
        for (k = 0; k < n && f[k] < 0x80; k++)
            ;
        if (k < n && !comp__utf8_valid(r->field[i], n))
            return fail(r, ED_EUNPROC, r->rec_line, i + 1, "invalid UTF-8 (save the file as UTF-8)");
    }
    return 1;
}

int comp__utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (i + 2 >= n || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (i + 3 >= n || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80 ||
                (s[i + 3] & 0xC0) != 0x80)
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static int ieq(const char *s, size_t n, const char *lit)
{
    size_t k;

    if (strlen(lit) != n)
        return 0;
    for (k = 0; k < n; k++)
        if ((s[k] | 0x20) != lit[k])
            return 0;
    return 1;
}

/* Exact powers of ten a double holds (Clinger's fast path). */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

int comp__parse_double(double *out, const char *s, size_t n)
{
    size_t i = 0, j, digits = 0, sig = 0;
    uint64_t m = 0;
    int neg = 0, exp10 = 0, eneg = 0, e = 0, any = 0;
    char tmp[128];
    double v;

    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i == n)
        return 3;
    j = i;
    if (s[i] == '+' || s[i] == '-')
        neg = s[i++] == '-';
    {
        /* The common form, [digits][.digits] with at most 19 digits in all
         * (leading zeros included) and no exponent: the digits are exact in
         * m, and m < 2^53 over an exact power of ten <= 1e22 is correctly
         * rounded (Clinger's fast path, as below). Anything else: below. */
        const unsigned char *u = (const unsigned char *)s;
        size_t k = i, fd = 0, nd;
        uint64_t q = 0;     /* wraps past 19 digits: then nd says so */
        for (; k < n; k++) {
            unsigned d = (unsigned)u[k] - '0';
            if (d > 9)
                break;
            q = q * 10 + d;
        }
        nd = k - i;
        if (k < n && s[k] == '.') {
            size_t f0 = ++k;
            for (; k < n; k++) {
                unsigned d = (unsigned)u[k] - '0';
                if (d > 9)
                    break;
                q = q * 10 + d;
            }
            fd = k - f0;
            nd += fd;
        }
        if (k == n && nd > 0 && nd <= 19 && q < ((uint64_t)1 << 53) && fd <= 22) {
            v = (double)q;
            if (fd > 0)
                v /= pow10_exact[fd];
            *out = neg ? -v : v;
            return 0;
        }
    }
    if (i < n && (s[i] | 0x20) >= 'a') {    /* a letter: nan or inf? */
        if (ieq(s + i, n - i, "nan"))
            return 1;
        if (ieq(s + i, n - i, "inf") || ieq(s + i, n - i, "infinity"))
            return 2;
    }
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
        if (m == 0 && s[i] == '0') {
            continue;       /* leading zeros carry nothing */
        }
        if (sig < 19)
            m = m * 10 + (uint64_t)(s[i] - '0');
        else
            exp10++;
        sig++;
        digits++;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
            if (m == 0 && s[i] == '0') {
                exp10--;
                continue;
            }
            if (sig < 19) {
                m = m * 10 + (uint64_t)(s[i] - '0');
                exp10--;
            }
            sig++;
        }
    }
    if (!any)
        return 4;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        if (i == n || s[i] < '0' || s[i] > '9')
            return 4;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        exp10 += eneg ? -e : e;
    }
    if (i != n)
        return 4;
    (void)digits;
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return 0;
    }
    if (sig <= 19 && m < ((uint64_t)1 << 53) && exp10 >= -22 && exp10 <= 22) {
        v = (double)m;
        v = exp10 < 0 ? v / pow10_exact[-exp10] : v * pow10_exact[exp10];
        *out = neg ? -v : v;
        return 0;
    }
    /* Slow path: strtod on a bounded copy gives the correctly rounded value. */
    if (n - j >= sizeof(tmp)) {
        /* Too long to copy: only possible with very many digits. Keep the
         * significant prefix is not exact, so copy onto the heap. */
        char *h = malloc(n - j + 1);
        if (!h)
            return 4;
        memcpy(h, s + j, n - j);
        h[n - j] = '\0';
        v = strtod(h, NULL);
        free(h);
    } else {
        memcpy(tmp, s + j, n - j);
        tmp[n - j] = '\0';
        v = strtod(tmp, NULL);
    }
    if (isinf(v))
        return 2;
    *out = v;
    return 0;
}
