/*
 * fuzz_dataset_preview.c - a dataset file's preview (datasets/
 * preview_compute.c): the CSV/TSV sniffer (delimiter, quoting, header,
 * types, the streamed row count), JSON Lines, JSON, the UTF-8 text head and
 * the image path (header check, stb decoders, thumbnail), which read files
 * users upload.
 *
 * Input: byte 0 picks the file's name (mod 6: .csv, .tsv, .jsonl, .json,
 * .txt, .png), the rest is the file, seen through an in-memory file. The
 * result must be an object with a known kind and the size it was given; a
 * table's rows hold no more cells than it has columns, and at most 20 rows.
 */
#include "fuzz.h"

#include "preview_int.h"

#include <jansson.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"a.csv", "b.tsv", "c.jsonl", "d.json", "e.txt", "f.png"};
    static const char *const types[] = {"text/csv", "text/tab-separated-values", "application/x-ndjson",
                                        "application/json", "text/plain", "image/png"};
    char path[64], *error = NULL;
    const char *kind;
    json_t *p, *cols, *rows;
    int which, fd;

    if (size < 1)
        return 0;
    which = data[0] % 6;
    fd = fuzz_memfile(path, data + 1, size - 1);
    p = ds__preview_compute(&error, fd, (int64_t)(size - 1), names[which], types[which], NULL);
    if (!p)
        abort();                /* only out of memory or a stop answer NULL */
    kind = json_string_value(json_object_get(p, "kind"));
    if (!kind || (strcmp(kind, "table") && strcmp(kind, "image") && strcmp(kind, "text") && strcmp(kind, "json") &&
                  strcmp(kind, "none")))
        abort();
    if (json_integer_value(json_object_get(p, "size")) != (json_int_t)(size - 1))
        abort();
    cols = json_object_get(p, "columns");
    rows = json_object_get(p, "rows");
    if (!strcmp(kind, "table")) {
        size_t i;
        json_t *row;
        if (!json_is_array(cols) || !json_is_array(rows) || json_array_size(rows) > DS_PREVIEW_ROWS ||
            json_array_size(cols) > DS_PREVIEW_COLS || json_integer_value(json_object_get(p, "row_count")) < 0)
            abort();
        json_array_foreach(rows, i, row) {
            if (json_array_size(row) > json_array_size(cols))
                abort();
        }
    }
    if (!strcmp(kind, "image") && !json_is_string(json_object_get(p, "thumbnail")))
        abort();
    {
        char *s = json_dumps(p, JSON_COMPACT);  /* every string is valid UTF-8 */
        if (!s)
            abort();
        free(s);
    }
    json_decref(p);
    free(error);
    return 0;
}
