/*
 * ed_json.h - JSON helpers over jansson for request bodies and responses.
 *
 * Request bodies come from the network: every getter checks the type and
 * says which field was wrong ("field 'name' must be a string").
 */
#ifndef ED_JSON_H
#define ED_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ED_JSON_MAX_DEPTH 32

/* Parse `len` bytes as one JSON value nested at most `max_depth` deep.
 * *out is a new reference the caller json_decref()s.
 * ED_EINVAL with the position of the error for malformed or too-deep input. */
int ed_json_parse(json_t **out, const char *buf, size_t len, int max_depth);

/* Parse a body that must be a JSON object. ED_EINVAL otherwise. */
int ed_json_parse_object(json_t **out, const char *buf, size_t len);

/* Field getters. With required=false a missing (or null) field leaves *out
 * unchanged and returns 0 (so set the default first); a field of the wrong type
 * is always ED_EINVAL naming the field. Strings are borrowed from `obj`. */
int ed_json_get_str(const char **out, const json_t *obj, const char *key, bool required);
int ed_json_get_int(int64_t *out, const json_t *obj, const char *key, bool required);
int ed_json_get_bool(bool *out, const json_t *obj, const char *key, bool required);
int ed_json_get_array(json_t **out, const json_t *obj, const char *key, bool required);

/* Serialise compactly into a malloc'd string (caller frees), or NULL. */
char *ed_json_dumps(const json_t *v);

#endif
