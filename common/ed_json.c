#include "ed_json.h"
#include "ed_error.h"

/* Nesting depth of a JSON text, counting brackets outside strings. Run before
 * jansson so a deeply nested body is refused without deep recursion. */
static int json_depth_exceeds(const char *buf, size_t len, int max_depth)
{
    int depth = 0;
    int in_string = 0;

    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth)
                return 1;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 0;
}

int ed_json_parse(json_t **out, const char *buf, size_t len, int max_depth)
{
    json_error_t jerr;
    json_t *v;

    *out = NULL;
    if (buf == NULL || len == 0)
        return ed_error_set(ED_EINVAL, "empty body: expected JSON");
    if (json_depth_exceeds(buf, len, max_depth))
        return ed_error_set(ED_EINVAL, "JSON nested deeper than %d levels", max_depth);
    v = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (v == NULL)
        return ed_error_set(ED_EINVAL, "malformed JSON at line %d column %d: %s", jerr.line,
                            jerr.column, jerr.text);
    *out = v;
    return 0;
}

int ed_json_parse_object(json_t **out, const char *buf, size_t len)
{
    int err = ed_json_parse(out, buf, len, ED_JSON_MAX_DEPTH);

    if (err < 0)
        return err;
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return ed_error_set(ED_EINVAL, "body must be a JSON object");
    }
    return 0;
}

static int lookup(json_t **v, const json_t *obj, const char *key, bool required)
{
    *v = json_object_get(obj, key);
    if (*v == NULL || json_is_null(*v)) {
        *v = NULL;
        if (required)
            return ed_error_set(ED_EINVAL, "field '%s' is required", key);
    }
    return 0;
}

int ed_json_get_str(const char **out, const json_t *obj, const char *key, bool required)
{
    json_t *v;
    int err;

    if ((err = lookup(&v, obj, key, required)) < 0 || v == NULL)
        return err;
    if (!json_is_string(v))
        return ed_error_set(ED_EINVAL, "field '%s' must be a string", key);
    *out = json_string_value(v);
    return 0;
}

int ed_json_get_int(int64_t *out, const json_t *obj, const char *key, bool required)
{
    json_t *v;
    int err;

    if ((err = lookup(&v, obj, key, required)) < 0 || v == NULL)
        return err;
    if (!json_is_integer(v))
        return ed_error_set(ED_EINVAL, "field '%s' must be an integer", key);
    *out = json_integer_value(v);
    return 0;
}

int ed_json_get_bool(bool *out, const json_t *obj, const char *key, bool required)
{
    json_t *v;
    int err;

    if ((err = lookup(&v, obj, key, required)) < 0 || v == NULL)
        return err;
    if (!json_is_boolean(v))
        return ed_error_set(ED_EINVAL, "field '%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

int ed_json_get_array(json_t **out, const json_t *obj, const char *key, bool required)
{
    json_t *v;
    int err;

    if ((err = lookup(&v, obj, key, required)) < 0 || v == NULL)
        return err;
    if (!json_is_array(v))
        return ed_error_set(ED_EINVAL, "field '%s' must be an array", key);
    *out = v;
    return 0;
}

char *ed_json_dumps(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
