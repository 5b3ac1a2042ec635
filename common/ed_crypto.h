/*
 * ed_crypto.h - randomness, hashing and comparisons over libsodium.
 *
 * ed_crypto_init() must run once before any other call (eddy's main does it).
 */
#ifndef ED_CRYPTO_H
#define ED_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/* Initialise libsodium. 0 or ED_EINTERNAL. Safe to call more than once. */
int ed_crypto_init(void);
/* Fill `buf` with `n` cryptographically random bytes. */
void ed_random_bytes(void *buf, size_t n);
/* A random token of `chars` characters from [A-Za-z0-9] into `out`
 * (at least chars+1 bytes), NUL-terminated. Unbiased. */
void ed_random_token(char *out, size_t chars);
/* A uniformly random 64-bit integer. */
uint64_t ed_random_u64(void);
/* A random (version 4, RFC 9562) UUID in its 36-character lowercase form,
 * "xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx", into `out` (NUL-terminated).
 * Kernel and Jupyter session ids. */
#define ED_UUID_LEN 37
void ed_uuid4(char out[ED_UUID_LEN]);
/* SHA-256 of `n` bytes as 64 lowercase hex characters into `hex` (65 bytes). */
void ed_sha256_hex(char hex[65], const void *data, size_t n);
/* Constant-time equality of two equal-length buffers (1 equal, 0 not). */
int ed_ct_equal(const void *a, const void *b, size_t n);

#endif
