/*
 * gjson.h - a small strict JSON reader for graph files (private to graph/).
 *
 * fw__gj_parse builds a tree of fw_gj values in one arena freed with
 * fw__gj_free. Bounded: nesting depth FW_GJ_MAX_DEPTH, strings must be valid
 * UTF-8 without NUL (\u0000 is refused), numbers are doubles (integers are
 * exact up to 2^53). Errors: FW_EFORMAT with "graph: JSON ... at byte N",
 * FW_ENOMEM.
 */
#ifndef FW_GJSON_H
#define FW_GJSON_H

#include <stdbool.h>
#include <stddef.h>

#define FW_GJ_MAX_DEPTH 32

typedef enum { FW_GJ_NULL, FW_GJ_BOOL, FW_GJ_NUM, FW_GJ_STR, FW_GJ_ARR, FW_GJ_OBJ } fw_gj_kind;

typedef struct fw_gj fw_gj;
struct fw_gj {
    fw_gj_kind kind;
    bool b;
    double num;
    char *str;          /* STR: NUL-terminated */
    size_t n;           /* ARR/OBJ: element count */
    fw_gj **items;      /* ARR/OBJ values */
    char **keys;        /* OBJ keys */
};

typedef struct fw_gj_doc fw_gj_doc;

int fw__gj_parse(fw_gj_doc **out, const char *text, size_t len);
void fw__gj_free(fw_gj_doc *d);
const fw_gj *fw__gj_root(const fw_gj_doc *d);
/* Member `key` of an object, or NULL (also when o is not an object). */
const fw_gj *fw__gj_get(const fw_gj *o, const char *key);

#endif
