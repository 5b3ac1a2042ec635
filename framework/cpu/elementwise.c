/* elementwise.c - CPU binary kernels with broadcasting (strided a, b). */
#include "core_kernels.h"
#include "core/fw_int.h"
#include "core/fw_parallel.h"

#include <math.h>
#include <string.h>

/* AVX2 and baseline versions of the hot loops, picked at load time (an
 * ifunc). Not under sanitizers: their resolvers would run instrumented
 * before the sanitizer runtime is up. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define FW_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FW_CLONES
#endif

typedef struct bin_job {
    fw_binop op;
    int ndim;
    int64_t shape[FW_MAX_DIMS];
    int64_t st[3][FW_MAX_DIMS];      /* out, a, b */
    char *o;
    const char *a, *b;
    fw_dtype dt;                      /* dtype of a and b */
    fw_dtype odt;
} bin_job;

/* One inner row: n elements, out stride so, a stride sa, b stride sb. The
 * contiguous/broadcast-scalar cases are split out so the compiler
 * vectorises them. */
#define ARITH_ROW(T, NAME, EXPR)                                                         \
    FW_CLONES static void NAME(T *restrict o, const T *restrict a, const T *restrict b, int64_t n,  \
                     int64_t so, int64_t sa, int64_t sb)                                 \
    {                                                                                    \
        if (so == 1 && sa == 1 && sb == 1) {                                             \
            for (int64_t i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = (EXPR); }      \
        } else if (so == 1 && sa == 1 && sb == 0) {                                      \
            T y = b[0];                                                                  \
            for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = (EXPR); }                \
        } else if (so == 1 && sa == 0 && sb == 1) {                                      \
            T x = a[0];                                                                  \
            for (int64_t i = 0; i < n; i++) { T y = b[i]; o[i] = (EXPR); }                \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = a[i * sa], y = b[i * sb];                                          \
                o[i * so] = (EXPR);                                                      \
            }                                                                            \
        }                                                                                \
    }

#define ARITH_SET(T, SFX, POWF)                                                  \
    ARITH_ROW(T, add_##SFX, x + y)                                               \
    ARITH_ROW(T, sub_##SFX, x - y)                                               \
    ARITH_ROW(T, mul_##SFX, x * y)                                               \
    ARITH_ROW(T, div_##SFX, x / y)                                               \
    ARITH_ROW(T, max_##SFX, (x > y || x != x) ? x : y)                           \
    ARITH_ROW(T, min_##SFX, (x < y || x != x) ? x : y)                           \
    ARITH_ROW(T, pow_##SFX, (T)POWF(x, y))                                       \
    ARITH_ROW(T, powga_##SFX, (T)(y * POWF(x, y - 1)))                           \
    ARITH_ROW(T, powgb_##SFX, x > 0 ? (T)(POWF(x, y) * log(x)) : (T)0)           \
    ARITH_ROW(T, gemask_##SFX, x >= y ? (T)1 : (T)0)                             \
    ARITH_ROW(T, ltmask_##SFX, x < y ? (T)1 : (T)0)

ARITH_SET(float, f32, powf)
ARITH_SET(double, f64, pow)

/* Python floor division and modulo for floats (IEEE: /0 gives inf/nan). */
ARITH_ROW(float, floordiv_f32, floorf(x / y))
ARITH_ROW(double, floordiv_f64, floor(x / y))
static inline float pymodf(float x, float y)
{
    float r = fmodf(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
static inline double pymod(double x, double y)
{
    double r = fmod(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
ARITH_ROW(float, mod_f32, pymodf(x, y))
ARITH_ROW(double, mod_f64, pymod(x, y))

/* Integer versions: the op checked that no divisor is 0; x / -1 is done
 * as a negation so INT_MIN / -1 wraps instead of trapping. */
#define INT_DIVMOD(T, UT, SFX)                                                          \
    static inline T fdiv_##SFX(T x, T y)                                                \
    {                                                                                   \
        if (y == -1)                                                                    \
            return (T)(0 - (UT)x);                                                      \
        T q = (T)(x / y);                                                               \
        return (T)((x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q);                   \
    }                                                                                   \
    static inline T fmod_##SFX(T x, T y)                                                \
    {                                                                                   \
        if (y == -1)                                                                    \
            return 0;                                                                   \
        T r = (T)(x % y);                                                               \
        return (T)((r != 0 && ((r < 0) != (y < 0))) ? r + y : r);                       \
    }                                                                                   \
    ARITH_ROW(T, floordiv_##SFX, fdiv_##SFX(x, y))                                      \
    ARITH_ROW(T, mod_##SFX, fmod_##SFX(x, y))
INT_DIVMOD(int32_t, uint32_t, i32)
INT_DIVMOD(int64_t, uint64_t, i64)
ARITH_ROW(uint8_t, floordiv_u8, (uint8_t)(x / y))
ARITH_ROW(uint8_t, mod_u8, (uint8_t)(x % y))

#define INT_SET(T, SFX)                                                          \
    ARITH_ROW(T, add_##SFX, (T)(x + y))                                          \
    ARITH_ROW(T, sub_##SFX, (T)(x - y))                                          \
    ARITH_ROW(T, mul_##SFX, (T)(x * y))                                          \
    ARITH_ROW(T, max_##SFX, x > y ? x : y)                                       \
    ARITH_ROW(T, min_##SFX, x < y ? x : y)                                       \
    ARITH_ROW(T, gemask_##SFX, x >= y ? (T)1 : (T)0)                             \
    ARITH_ROW(T, ltmask_##SFX, x < y ? (T)1 : (T)0)

INT_SET(int32_t, i32)
INT_SET(int64_t, i64)
INT_SET(uint8_t, u8)

/* Comparisons and logical ops: T in, uint8 out. */
#define CMP_ROW(T, NAME, EXPR)                                                           \
    static void NAME(uint8_t *restrict o, const T *restrict a, const T *restrict b,        \
                     int64_t n, int64_t so, int64_t sa, int64_t sb)                      \
    {                                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                \
            T x = a[i * sa], y = b[i * sb];                                              \
            o[i * so] = (uint8_t)(EXPR);                                                 \
        }                                                                                \
    }

#define CMP_SET(T, SFX)                        \
    CMP_ROW(T, eq_##SFX, x == y)               \
    CMP_ROW(T, ne_##SFX, x != y)               \
    CMP_ROW(T, lt_##SFX, x < y)                \
    CMP_ROW(T, le_##SFX, x <= y)               \
    CMP_ROW(T, gt_##SFX, x > y)                \
    CMP_ROW(T, ge_##SFX, x >= y)               \
    CMP_ROW(T, and_##SFX, (x != 0) && (y != 0)) \
    CMP_ROW(T, or_##SFX, (x != 0) || (y != 0))  \
    CMP_ROW(T, xor_##SFX, (x != 0) != (y != 0))

CMP_SET(float, f32)
CMP_SET(double, f64)
CMP_SET(int32_t, i32)
CMP_SET(int64_t, i64)
CMP_SET(uint8_t, u8)

typedef void (*row_fn)(void *o, const void *a, const void *b, int64_t n, int64_t so,
                       int64_t sa, int64_t sb);

#define PICK(SFX)                                                                        \
    static row_fn pick_##SFX(fw_binop op)                                                \
    {                                                                                    \
        switch (op) {                                                                    \
        case FW_BIN_EQ: return (row_fn)eq_##SFX;                                         \
        case FW_BIN_NE: return (row_fn)ne_##SFX;                                         \
        case FW_BIN_LT: return (row_fn)lt_##SFX;                                         \
        case FW_BIN_LE: return (row_fn)le_##SFX;                                         \
        case FW_BIN_GT: return (row_fn)gt_##SFX;                                         \
        case FW_BIN_GE: return (row_fn)ge_##SFX;                                         \
        case FW_BIN_AND: return (row_fn)and_##SFX;                                       \
        case FW_BIN_OR: return (row_fn)or_##SFX;                                         \
        case FW_BIN_XOR: return (row_fn)xor_##SFX;                                       \
        case FW_BIN_ADD: return (row_fn)add_##SFX;                                       \
        case FW_BIN_SUB: return (row_fn)sub_##SFX;                                       \
        case FW_BIN_MUL: return (row_fn)mul_##SFX;                                       \
        case FW_BIN_MAX: return (row_fn)max_##SFX;                                       \
        case FW_BIN_MIN: return (row_fn)min_##SFX;                                       \
        case FW_BIN_GE_MASK: return (row_fn)gemask_##SFX;                                \
        case FW_BIN_LT_MASK: return (row_fn)ltmask_##SFX;                                \
        case FW_BIN_FLOORDIV: return (row_fn)floordiv_##SFX;                             \
        case FW_BIN_MOD: return (row_fn)mod_##SFX;                                       \
        default: return PICK_FLOAT_##SFX(op);                                            \
        }                                                                                \
    }

#define FLOAT_ONLY(SFX)                                                                  \
    static row_fn pickf_##SFX(fw_binop op)                                               \
    {                                                                                    \
        switch (op) {                                                                    \
        case FW_BIN_DIV: return (row_fn)div_##SFX;                                       \
        case FW_BIN_POW: return (row_fn)pow_##SFX;                                       \
        case FW_BIN_POW_GRAD_A: return (row_fn)powga_##SFX;                              \
        case FW_BIN_POW_GRAD_B: return (row_fn)powgb_##SFX;                              \
        default: return NULL;                                                            \
        }                                                                                \
    }
FLOAT_ONLY(f32)
FLOAT_ONLY(f64)
static row_fn none(fw_binop op) { (void)op; return NULL; }
#define PICK_FLOAT_f32 pickf_f32
#define PICK_FLOAT_f64 pickf_f64
#define PICK_FLOAT_i32 none
#define PICK_FLOAT_i64 none
#define PICK_FLOAT_u8 none
PICK(f32)
PICK(f64)
PICK(i32)
PICK(i64)
PICK(u8)

typedef struct bin_run {
    row_fn fn;
    int ndim;
    int64_t shape[FW_MAX_DIMS];
    int64_t st[3][FW_MAX_DIMS];
    char *o;
    const char *a, *b;
    size_t osz, isz;
} bin_run;

static void bin_rows(void *ctx, int64_t r0, int64_t r1)
{
    const bin_run *j = ctx;
    int nd = j->ndim;
    int64_t inner = j->shape[nd - 1];

    for (int64_t r = r0; r < r1; r++) {
        int64_t rem = r, oo = 0, ao = 0, bo = 0;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t i = rem % j->shape[d];
            rem /= j->shape[d];
            oo += i * j->st[0][d];
            ao += i * j->st[1][d];
            bo += i * j->st[2][d];
        }
        j->fn(j->o + oo * (int64_t)j->osz, j->a + ao * (int64_t)j->isz,
              j->b + bo * (int64_t)j->isz, inner, j->st[0][nd - 1], j->st[1][nd - 1],
              j->st[2][nd - 1]);
    }
}

int fw__cpu_binary(fw_binop op, const fw_kview *out, const fw_kview *a, const fw_kview *b)
{
    bin_run j;
    row_fn fn;

    switch (a->dtype) {
    case FW_FLOAT32: fn = pick_f32(op); break;
    case FW_FLOAT64: fn = pick_f64(op); break;
    case FW_INT32: fn = pick_i32(op); break;
    case FW_INT64: fn = pick_i64(op); break;
    case FW_UINT8: case FW_BOOL: fn = pick_u8(op); break;
    default: fn = NULL;
    }
    if (fn == NULL)
        return fw_error_set(FW_EDTYPE, "binary kernel %d has no %s version", (int)op,
                            fw_dtype_name(a->dtype));
    j.fn = fn;
    j.ndim = out->ndim;
    for (int i = 0; i < out->ndim; i++) {
        j.shape[i] = out->shape[i];
        j.st[0][i] = out->strides[i];
        j.st[1][i] = a->strides[i];
        j.st[2][i] = b->strides[i];
    }
    j.ndim = fw__coalesce(j.ndim, j.shape, 3, j.st);
    j.o = out->data;
    j.a = a->data;
    j.b = b->data;
    j.osz = fw_dtype_size(out->dtype);
    j.isz = fw_dtype_size(a->dtype);
    int64_t rows = 1;
    for (int i = 0; i < j.ndim - 1; i++)
        rows *= j.shape[i];
    int64_t inner = j.shape[j.ndim - 1];
    int64_t grain = FW_GRAIN_ELEMENTWISE / (inner > 0 ? inner : 1);
    if (rows == 1 && inner > 2 * FW_GRAIN_ELEMENTWISE && fw_parallel_num_threads() > 1) {
        /* one long row: split it instead */
        j.ndim = 2;
        int64_t parts = fw_parallel_num_threads() * 4;
        while (inner % parts != 0 && parts > 1)
            parts--;
        if (parts > 1) {
            int64_t len = inner / parts;
            j.shape[0] = parts;
            j.shape[1] = len;
            for (int k = 0; k < 3; k++) {
                j.st[k][1] = j.st[k][0];
                j.st[k][0] = j.st[k][1] * len;
            }
            fw_parallel_for(parts, 1, bin_rows, &j);
            return 0;
        }
        j.ndim = 1;
    }
    fw_parallel_for(rows, grain > 0 ? grain : 1, bin_rows, &j);
    return 0;
}
