/*
 * fuzz_json.c - JSON request bodies: ed_json_parse_object() and the typed
 * getters a handler applies to the fields, plus ed_json_parse() at a depth
 * limit taken from the input and a round trip through ed_json_dumps().
 *
 * Input: the raw body. Byte 0 also picks the depth limit for ed_json_parse.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "ed_json.h"

/* Field names the API's bodies use, so the getters meet real keys. */
static const char *const keys[] = {"name", "id", "limit", "public", "items", "scopes",
                                   "description", "expires_in_days", "", "env"};

static void use_object(const json_t *obj)
{
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *s = NULL;
        int64_t n = 0;
        bool b = false;
        json_t *arr = NULL;
        bool req = (i & 1) != 0;

        if (ed_json_get_str(&s, obj, keys[i], req) == 0 && s != NULL)
            (void)strlen(s);
        (void)ed_json_get_int(&n, obj, keys[i], req);
        (void)ed_json_get_bool(&b, obj, keys[i], req);
        if (ed_json_get_array(&arr, obj, keys[i], req) == 0 && arr != NULL)
            (void)json_array_size(arr);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc = NULL;
    char *text;

    if (ed_json_parse_object(&doc, (const char *)data, size) == 0) {
        if (!json_is_object(doc))
            abort();   /* the contract: an object or an error */
        use_object(doc);
        if ((text = ed_json_dumps(doc)) != NULL) {
            /* What we serialise must parse back as an object. */
            json_t *again = NULL;
            if (ed_json_parse_object(&again, text, strlen(text)) != 0)
                abort();
            json_decref(again);
            free(text);
        }
        json_decref(doc);
    } else if (doc != NULL) {
        abort();       /* failure must leave *out NULL */
    }
    if (size > 0) {
        doc = NULL;
        if (ed_json_parse(&doc, (const char *)data + 1, size - 1, data[0] % 40) == 0)
            json_decref(doc);
    }
    ed_error_clear();
    return 0;
}
