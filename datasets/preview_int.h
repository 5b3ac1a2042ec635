/*
 * preview_int.h - what the preview worker's files share (private to
 * datasets/): the CSV sniffer (csv_sniff.c), image thumbnails (thumb.c) and
 * the preview of one blob (preview_compute.c). None of them touches the
 * store; preview.c runs them on its worker thread and stores the result.
 */
#ifndef DS_PREVIEW_INT_H
#define DS_PREVIEW_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DS_PREVIEW_ROWS     20                  /* rows of a table shown */
#define DS_PREVIEW_TEXT     (64 * 1024)         /* bytes of a text or JSON head */
#define DS_PREVIEW_COLS     200                 /* columns of a table shown */
#define DS_PREVIEW_CELL     1000                /* bytes of one cell shown */
#define DS_PREVIEW_COUNT_MAX (INT64_C(10) << 30) /* bytes a row count reads at most */
#define DS_THUMB_MAX        256                 /* pixels of a thumbnail's longer side */
#define DS_IMAGE_PIXELS_MAX (INT64_C(64) << 20) /* pixels of an image decoded at most */
#define DS_IMAGE_FILE_MAX   (INT64_C(256) << 20) /* bytes of an image file read at most */

/* ---- csv_sniff.c --------------------------------------------------------- */

/* Fill `obj` with a table preview of `len` bytes of CSV/TSV text `head` (the
 * start of a file; `cut` when the file goes on, so its last record may be
 * partial and is dropped): "delimiter", "header" (bool), "columns"
 * [{name, type}] with types "int", "float", "bool", "date" or "string"
 * inferred from the rows in `head`, and the first DS_PREVIEW_ROWS "rows"
 * (arrays of strings). `prefer` is the delimiter the file's name suggests
 * ('\t' for .tsv, else 0). *out_delim gets the delimiter and *out_header
 * whether the first record is a header (for ds__csv_count). ED_EINVAL when
 * it is not text that reads as a table. */
int ds__csv_preview(json_t *obj, char *out_delim, bool *out_header, const char *head, size_t len, bool cut,
                    char prefer);

/* Count records of a CSV file streamed in pieces: newlines outside quoted
 * fields that end a non-blank line, plus a last line without one. */
typedef struct ds_csv_count {
    int64_t records;
    bool in_quotes, line_has_data;
} ds_csv_count;
void ds__csv_count_feed(ds_csv_count *c, const char *buf, size_t n);
int64_t ds__csv_count_end(ds_csv_count *c);

/* ---- thumb.c ------------------------------------------------------------- */

/* Fill `obj` with "width", "height" and "thumbnail" (a data: URL of a PNG at
 * most DS_THUMB_MAX pixels on its longer side) for a PNG, JPEG, GIF (first
 * frame) or BMP in `buf`. The size is read from the header first: over
 * DS_IMAGE_PIXELS_MAX is ED_ETOOBIG before anything is decoded; a file that
 * does not decode is ED_EINVAL with the decoder's reason. */
int ds__thumb(json_t *obj, const unsigned char *buf, size_t len);
/* "image/png" etc. when `buf` starts like one of those images, else NULL. */
const char *ds__image_sniff(const unsigned char *buf, size_t len);

/* ---- preview_compute.c --------------------------------------------------- */

/* The preview of a blob open at `fd` (`size` bytes) first seen as `path`
 * with media type `mt`: a new JSON object with "kind", "size",
 * "media_type" and the kind's fields, never NULL but out of memory. A
 * decoder's failure is kind "none" with *out_error (malloc'd) saying why.
 * `stop` (may be NULL) is polled while a large file is read: when it turns
 * true the work ends early and NULL is returned. */
json_t *ds__preview_compute(char **out_error, int fd, int64_t size, const char *path, const char *mt,
                            const bool *stop);

#endif
