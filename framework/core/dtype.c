/* dtype.c - dtype sizes, names, promotion, float16/bfloat16 conversion. */
#include "fw/tensor.h"

#include <string.h>

static const size_t sizes[FW_NDTYPES] = {4, 8, 2, 2, 4, 8, 1, 1, 8, 16};
static const char *const names[FW_NDTYPES] = {
    "float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "uint8",
    "complex64", "complex128"};

bool fw_dtype_is_valid(fw_dtype dt) { return (unsigned)dt < FW_NDTYPES; }

size_t fw_dtype_size(fw_dtype dt) { return fw_dtype_is_valid(dt) ? sizes[dt] : 0; }

const char *fw_dtype_name(fw_dtype dt) { return fw_dtype_is_valid(dt) ? names[dt] : "invalid"; }

int fw_dtype_from_name(fw_dtype *out, const char *name)
{
    for (int i = 0; name && i < FW_NDTYPES; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (fw_dtype)i;
            return 0;
        }
    return fw_error_set(FW_EDTYPE, "unknown dtype '%s'", name ? name : "(null)");
}

bool fw_dtype_is_float(fw_dtype dt)
{
    return dt == FW_FLOAT32 || dt == FW_FLOAT64 || dt == FW_FLOAT16 || dt == FW_BFLOAT16;
}

bool fw_dtype_is_complex(fw_dtype dt) { return dt == FW_COMPLEX64 || dt == FW_COMPLEX128; }

fw_dtype fw_dtype_real_part(fw_dtype dt)
{
    return dt == FW_COMPLEX64 ? FW_FLOAT32 : dt == FW_COMPLEX128 ? FW_FLOAT64 : dt;
}

fw_dtype fw_dtype_to_complex(fw_dtype dt)
{
    return dt == FW_FLOAT64 || dt == FW_COMPLEX128 ? FW_COMPLEX128 : FW_COMPLEX64;
}

/* Rank in the promotion lattice (float16 and bfloat16 share a rank). */
static int rank(fw_dtype dt)
{
    switch (dt) {
    case FW_BOOL: return 0;
    case FW_UINT8: return 1;
    case FW_INT32: return 2;
    case FW_INT64: return 3;
    case FW_FLOAT16: case FW_BFLOAT16: return 4;
    case FW_FLOAT32: return 5;
    case FW_FLOAT64: return 6;
    case FW_COMPLEX64: return 7;
    case FW_COMPLEX128: return 8;
    default: return -1;
    }
}

fw_dtype fw_dtype_promote(fw_dtype a, fw_dtype b)
{
    if (a == b)
        return a;
    if ((a == FW_FLOAT16 && b == FW_BFLOAT16) || (a == FW_BFLOAT16 && b == FW_FLOAT16))
        return FW_FLOAT32;
    if ((a == FW_COMPLEX64 && b == FW_FLOAT64) || (a == FW_FLOAT64 && b == FW_COMPLEX64))
        return FW_COMPLEX128;
    return rank(a) >= rank(b) ? a : b;
}

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t fw_float_to_half(float f)
{
    uint32_t x = f2u(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;

    if (absx >= 0x7f800000u)                       /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
    if (absx >= 0x477ff000u)                       /* rounds to >= 65520: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) {                      /* subnormal half or zero */
        /* value * 2^24 rounded to nearest even, done in float arithmetic */
        float v = u2f(absx) * 16777216.0f;         /* exact scaling */
        uint32_t m = (uint32_t)v;
        float rem = v - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1u)))
            m++;
        return (uint16_t)(sign | m);
    }
    /* normal: rebias exponent, round mantissa 23 -> 10 bits to nearest even */
    uint32_t mant = absx & 0x7fffffu;
    uint32_t exp = (absx >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;                                        /* may carry into exponent: fine */
    return (uint16_t)(sign | h);
}

float fw_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0) {
        float v = (float)mant / 16777216.0f;       /* mant * 2^-24 */
        return sign ? -v : v;
    }
    if (exp == 31)
        return u2f(sign | 0x7f800000u | (mant << 13));
    return u2f(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t fw_float_to_bf16(float f)
{
    uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)           /* nan: keep quiet nan */
        return (uint16_t)((x >> 16) | 0x40u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

float fw_bf16_to_float(uint16_t h) { return u2f((uint32_t)h << 16); }
