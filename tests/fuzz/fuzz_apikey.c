/*
 * fuzz_apikey.c - what the gateway checks in a credential before any
 * database lookup: the API key's shape and checksum (acct_key_parse, called
 * on every "Authorization: Bearer eddy_..." header), the scope list syntax
 * (acct_scopes_parse_list, acct_scopes_from_json) and the account field
 * validators of signup (username, email, password).
 *
 * Input: the candidate string (a key, a scope list, a field value).
 * An accepted key is checked against the contract in accounts/acct.h: prefix
 * "eddy_<env>_", 32 base62 characters, '_', a 6-character checksum that any
 * single-character change breaks.
 */
#include "fuzz.h"

#include "acct.h"
#include "ed_error.h"

static void check_key(const char *key, const char *env)
{
    size_t len = strlen(key);
    char *mut, env2[8];

    if (len > ACCT_KEY_MAX_LEN || strncmp(key, "eddy_", 5) != 0 || acct_key_env_check(env) != 0)
        abort();
    if (len != 5 + strlen(env) + 1 + ACCT_KEY_RANDOM_CHARS + 1 + ACCT_KEY_CHECK_CHARS)
        abort();
    /* Change the last checksum character: the key must now be refused. */
    if ((mut = strdup(key)) == NULL)
        abort();
    mut[len - 1] = mut[len - 1] == 'A' ? 'B' : 'A';
    if (acct_key_parse(env2, mut) == 0)
        abort();
    free(mut);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_strndup(data, size);
    char env[8], key[ACCT_KEY_MAX_LEN + 1], csv[64];
    unsigned bits;
    int err;

    err = acct_key_parse(env, s);
    if (err == 0)
        check_key(s, env);
    else if (err != ED_EAUTH)
        abort();   /* the contract: 0 or ED_EAUTH */

    /* A freshly generated key of each env parses, and is a different string. */
    if (size > 0) {
        static const char *const envs[] = {"dev", "test", "prod"};
        const char *e = envs[data[0] % 3];
        if (acct_key_generate(key, e) != 0 || acct_key_parse(env, key) != 0 || strcmp(env, e) != 0)
            abort();
    }

    if (acct_scopes_parse_list(&bits, s) == 0) {
        /* What we print back must parse to the same bits. */
        unsigned again;
        acct_scopes_to_csv(csv, sizeof(csv), bits);
        if (acct_scopes_parse_list(&again, csv) != 0 || again != bits)
            abort();
    }
    {
        json_t *arr = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        if (arr != NULL) {
            if (acct_scopes_from_json(&bits, arr) == 0 && bits == 0)
                abort();
            json_decref(arr);
        }
    }
    (void)acct_username_check(s);
    (void)acct_email_check(s);
    (void)acct_password_check(s);
    (void)acct_role_check(s);
    (void)acct_key_crc32(data, size);
    free(s);
    ed_error_clear();
    return 0;
}
