#include "ed_crypto.h"
#include "ed_error.h"

#include <sodium.h>
#include <stdio.h>

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

void ed_uuid4(char out[ED_UUID_LEN])
{
    uint8_t b[16];

    randombytes_buf(b, sizeof(b));
    b[6] = (uint8_t)((b[6] & 0x0F) | 0x40);   /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3F) | 0x80);   /* variant 10 */
    snprintf(out, ED_UUID_LEN, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
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
