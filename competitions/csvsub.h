/*
 * csvsub.h - the streaming CSV reader behind truths and submissions
 * (private to competitions/; the public API is score.h).
 *
 * RFC 4180: fields separated by ',', records by LF, CRLF or a lone CR;
 * quoted fields may hold ',', '"' (doubled) and line breaks. UTF-8 only: a
 * leading UTF-8 BOM is skipped, a UTF-16 BOM, invalid UTF-8 or a NUL byte
 * is an error. Blank lines are skipped. Bounded: a field holds at most
 * COMP_CSV_MAX_FIELD bytes, a record COMP_CSV_MAX_RECORD, at most
 * COMP_CSV_MAX_COLUMNS fields, and the whole input max_bytes.
 *
 * Memory: a fixed 2 MiB read buffer plus one record (at most
 * COMP_CSV_MAX_RECORD + COMP_CSV_MAX_COLUMNS bytes), allocated at open.
 *
 *     comp_csv r;
 *     if (comp__csv_open(&r, fd, cap) < 0) ...r.err...
 *     while ((rc = comp__csv_next(&r)) == 1)
 *         use r.nfields, r.field[i], r.flen[i], r.rec_line
 *     if (rc < 0) ...r.err, r.err_line, r.err_col...
 *     comp__csv_close(&r);
 */
#ifndef COMP_CSVSUB_H
#define COMP_CSVSUB_H

#include "score.h"

#include <stddef.h>
#include <stdint.h>

typedef struct comp_csv {
    int fd;
    int64_t max_bytes;      /* input cap */
    int64_t total;          /* bytes read so far */
    char *buf;              /* read buffer */
    size_t cap, len, pos;   /* capacity, bytes in buf, start of the next record */
    int eof;                /* read() returned 0 */
    int started;            /* the BOM check is done */
    int64_t line;           /* physical line (1-based) where the next record starts */
    /* The current record: field i is field[i] (NUL-terminated, unquoted and
     * unescaped), flen[i] bytes long; it started on physical line rec_line.
     * Valid until the next comp__csv_next(). */
    char *rec;
    char **field;
    size_t *flen;
    int nfields;
    int64_t rec_line;
    /* The last error: code (ED_EUNPROC: the input is malformed or over a
     * bound; ED_EIO; ED_ENOMEM), text without a position, the physical line
     * (0: the whole file) and the 1-based field (0: none). */
    int nonascii;           /* the current record may hold bytes >= 0x80 (UTF-8 checked) */
    int slow_only;          /* tests: without the fast path for plain lines (the fuzz
                             * target checks both read every input alike) */
    int err_code;
    char err[256];
    int64_t err_line;
    int err_col;
} comp_csv;

/* Start reading fd. ED_EUNPROC when fd is a regular file larger than
 * max_bytes; ED_ENOMEM. On error r needs no close. */
int comp__csv_open(comp_csv *r, int fd, int64_t max_bytes);

/* Read the next record: 1 when one is ready, 0 at the end, or a negative
 * code with r->err set (an empty input, holding nothing or only a BOM, is
 * an error: "the file is empty"). */
int comp__csv_next(comp_csv *r);

/* Free the reader's memory (not the fd); safe on a zeroed reader. */
void comp__csv_close(comp_csv *r);

/* 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or code points
 * above U+10FFFF). */
int comp__utf8_valid(const char *s, size_t n);

/* Parse a decimal number: optional spaces, [+-], digits with an optional
 * '.' and fraction, an optional exponent, optional spaces; correctly
 * rounded. Returns 0 with *out set, or:
 *   1 the text is a NaN ("nan", any case, signed or not),
 *   2 an infinity ("inf", "infinity", or a finite text that overflows),
 *   3 empty, 4 anything else. */
int comp__parse_double(double *out, const char *s, size_t n);

#endif
