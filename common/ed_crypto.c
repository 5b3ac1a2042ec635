#include "ed_crypto.h"
#include "ed_error.h"

#include <sodium.h>

int ed_crypto_init(void)
{
    if (sodium_init() < 0)
        return ed_error_set(ED_EINTERNAL, "libsodium failed to initialise");
    return 0;
}

void ed_random_bytes(void *buf, size_t n) { randombytes_buf(buf, n); }

void ed_random_token(char *out, size_t chars)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    for (size_t i = 0; i < chars; i++)
        out[i] = alphabet[randombytes_uniform(sizeof(alphabet) - 1)];
    out[chars] = '\0';
}

uint64_t ed_random_u64(void)
{
    uint64_t v;

    randombytes_buf(&v, sizeof(v));
    return v;
}

void ed_sha256_hex(char hex[65], const void *data, size_t n)
{
    unsigned char digest[crypto_hash_sha256_BYTES];

    crypto_hash_sha256(digest, data, n);
    sodium_bin2hex(hex, 65, digest, sizeof(digest));
}

int ed_ct_equal(const void *a, const void *b, size_t n)
{
    return sodium_memcmp(a, b, n) == 0;
}
