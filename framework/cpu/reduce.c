/* reduce.c - CPU reductions over an axis mask, and argmax/argmin. */
#include "core_kernels.h"
#include "core/fw_int.h"
#include "core/fw_parallel.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Combine one element into an accumulator. NaN propagates through max/min. */
#define COMB_SUM(acc, v) ((acc) + (v))
#define COMB_PROD(acc, v) ((acc) * (v))
#define COMB_MAX(acc, v) (((v) > (acc) || (v) != (v)) ? (v) : (acc))
#define COMB_MIN(acc, v) (((v) < (acc) || (v) != (v)) ? (v) : (acc))

/*
 * x: contiguous, dims shape[0..nd); ostr: out strides aligned with x's dims
 * (0 on reduced dims). Iterates rows of the last dim: either reduces the
 * row into one out element (ostr[last] == 0) or combines it element-wise.
 */
/* A contiguous row reduced into one accumulator. Sums use 16 independent
 * lanes per block of 1024 elements (vectorisable without -ffast-math, and
 * each block's float partial goes into the ACC_T total, so long float sums
 * stay accurate); other ops combine one element at a time. */
#define ROW_SCALAR(TX, NAME, COMB, ACC_T)                                                 \
    static ACC_T NAME##_row(const TX *restrict x, int64_t n, ACC_T acc)                   \
    {                                                                                    \
        for (int64_t i = 0; i < n; i++)                                                  \
            acc = COMB(acc, (ACC_T)x[i]);                                                \
        return acc;                                                                      \
    }
#define ROW_SUM(TX, NAME, ACC_T)                                                          \
    static ACC_T NAME##_row(const TX *restrict x, int64_t n, ACC_T acc)                   \
    {                                                                                    \
        int64_t i = 0;                                                                   \
        while (n - i >= 16) {                                                            \
            TX lane[16] = {0};                                                           \
            int64_t end = i + ((n - i) / 16 > 64 ? 1024 : (n - i) / 16 * 16);             \
            for (; i < end; i += 16)                                                     \
                for (int l = 0; l < 16; l++)                                             \
                    lane[l] += x[i + l];                                                 \
            TX s8[8];                                                                    \
            for (int l = 0; l < 8; l++)                                                  \
                s8[l] = lane[l] + lane[l + 8];                                           \
            acc += (ACC_T)((s8[0] + s8[4]) + (s8[1] + s8[5])) +                          \
                   (ACC_T)((s8[2] + s8[6]) + (s8[3] + s8[7]));                           \
        }                                                                                \
        for (; i < n; i++)                                                               \
            acc += (ACC_T)x[i];                                                          \
        return acc;                                                                      \
    }

#define REDUCE_IMPL(TX, TO, NAME, COMB, ACC_T)                                           \
    static void NAME(TO *restrict out, const TX *restrict x, int nd, const int64_t *shape,  \
                     const int64_t *xstr, const int64_t *ostr)                           \
    {                                                                                    \
        int64_t rows = 1, inner = shape[nd - 1];                                         \
        int64_t xs = xstr[nd - 1], os = ostr[nd - 1];                                    \
        for (int d = 0; d < nd - 1; d++)                                                 \
            rows *= shape[d];                                                            \
        for (int64_t r = 0; r < rows; r++) {                                             \
            int64_t rem = r, xo = 0, oo = 0;                                             \
            for (int d = nd - 2; d >= 0; d--) {                                          \
                int64_t i = rem % shape[d];                                              \
                rem /= shape[d];                                                         \
                xo += i * xstr[d];                                                       \
                oo += i * ostr[d];                                                       \
            }                                                                            \
            const TX *xp = x + xo;                                                       \
            TO *op = out + oo;                                                           \
            if (os == 0 && xs == 1) {                                                    \
                op[0] = (TO)NAME##_row(xp, inner, (ACC_T)op[0]);                          \
            } else if (os == 0) {                                                        \
                ACC_T acc = (ACC_T)op[0];                                                \
                for (int64_t i = 0; i < inner; i++)                                      \
                    acc = COMB(acc, (ACC_T)xp[i * xs]);                                  \
                op[0] = (TO)acc;                                                         \
            } else if (os == 1 && xs == 1) {                                             \
                for (int64_t i = 0; i < inner; i++)                                      \
                    op[i] = COMB(op[i], (TO)xp[i]);                                      \
            } else {                                                                     \
                for (int64_t i = 0; i < inner; i++)                                      \
                    op[i * os] = COMB(op[i * os], (TO)xp[i * xs]);                       \
            }                                                                            \
        }                                                                                \
    }

ROW_SUM(float, sum_f32, double)
ROW_SCALAR(float, prod_f32, COMB_PROD, double)
ROW_SCALAR(float, max_f32, COMB_MAX, float)
ROW_SCALAR(float, min_f32, COMB_MIN, float)
ROW_SUM(double, sum_f64, double)
ROW_SCALAR(double, prod_f64, COMB_PROD, double)
ROW_SCALAR(double, max_f64, COMB_MAX, double)
ROW_SCALAR(double, min_f64, COMB_MIN, double)
ROW_SCALAR(int32_t, sum_i32, COMB_SUM, int64_t)
ROW_SCALAR(int32_t, prod_i32, COMB_PROD, int64_t)
ROW_SCALAR(int32_t, max_i32, COMB_MAX, int32_t)
ROW_SCALAR(int32_t, min_i32, COMB_MIN, int32_t)
ROW_SCALAR(int64_t, sum_i64, COMB_SUM, int64_t)
ROW_SCALAR(int64_t, prod_i64, COMB_PROD, int64_t)
ROW_SCALAR(int64_t, max_i64, COMB_MAX, int64_t)
ROW_SCALAR(int64_t, min_i64, COMB_MIN, int64_t)
ROW_SCALAR(uint8_t, sum_u8, COMB_SUM, int64_t)
ROW_SCALAR(uint8_t, prod_u8, COMB_PROD, int64_t)
ROW_SCALAR(uint8_t, max_u8, COMB_MAX, uint8_t)
ROW_SCALAR(uint8_t, min_u8, COMB_MIN, uint8_t)

/* float sums accumulate rows in double for accuracy */
REDUCE_IMPL(float, float, sum_f32, COMB_SUM, double)
REDUCE_IMPL(float, float, prod_f32, COMB_PROD, double)
REDUCE_IMPL(float, float, max_f32, COMB_MAX, float)
REDUCE_IMPL(float, float, min_f32, COMB_MIN, float)
REDUCE_IMPL(double, double, sum_f64, COMB_SUM, double)
REDUCE_IMPL(double, double, prod_f64, COMB_PROD, double)
REDUCE_IMPL(double, double, max_f64, COMB_MAX, double)
REDUCE_IMPL(double, double, min_f64, COMB_MIN, double)
REDUCE_IMPL(int32_t, int64_t, sum_i32, COMB_SUM, int64_t)
REDUCE_IMPL(int32_t, int64_t, prod_i32, COMB_PROD, int64_t)
REDUCE_IMPL(int32_t, int32_t, max_i32, COMB_MAX, int32_t)
REDUCE_IMPL(int32_t, int32_t, min_i32, COMB_MIN, int32_t)
REDUCE_IMPL(int64_t, int64_t, sum_i64, COMB_SUM, int64_t)
REDUCE_IMPL(int64_t, int64_t, prod_i64, COMB_PROD, int64_t)
REDUCE_IMPL(int64_t, int64_t, max_i64, COMB_MAX, int64_t)
REDUCE_IMPL(int64_t, int64_t, min_i64, COMB_MIN, int64_t)
REDUCE_IMPL(uint8_t, int64_t, sum_u8, COMB_SUM, int64_t)
REDUCE_IMPL(uint8_t, int64_t, prod_u8, COMB_PROD, int64_t)
REDUCE_IMPL(uint8_t, uint8_t, max_u8, COMB_MAX, uint8_t)
REDUCE_IMPL(uint8_t, uint8_t, min_u8, COMB_MIN, uint8_t)

static double identity(fw_redop op, fw_dtype dt)
{
    switch (op) {
    case FW_RED_SUM: return 0;
    case FW_RED_PROD: return 1;
    case FW_RED_MAX:
        return dt == FW_FLOAT32 || dt == FW_FLOAT64 ? -INFINITY
             : dt == FW_INT32 ? (double)INT32_MIN : dt == FW_INT64 ? -9.2233720368547758e18 : 0;
    default:
        return dt == FW_FLOAT32 || dt == FW_FLOAT64 ? INFINITY
             : dt == FW_INT32 ? (double)INT32_MAX : dt == FW_INT64 ? 9.2233720368547758e18 : 255;
    }
}

typedef struct red_job {
    fw_redop op;
    fw_dtype dt;
    int nd;
    int64_t shape[FW_MAX_DIMS];
    int64_t st[2][FW_MAX_DIMS];
    char *out;
    const char *x;
    int64_t osz, xsz;
} red_job;

/* Rows [r0, r1) of the first dim (r1 < 0: the whole tensor). */
static void red_rows(void *ctx, int64_t r0, int64_t r1)
{
    const red_job *j = ctx;
    int64_t shape[FW_MAX_DIMS];
    char *o = j->out;
    const char *x = j->x;

    memcpy(shape, j->shape, sizeof(shape));
    if (r1 >= 0) {
        shape[0] = r1 - r0;
        o += r0 * j->st[1][0] * j->osz;
        x += r0 * j->st[0][0] * j->xsz;
    }
#define DISPATCH(SFX)                                                                        \
    switch (j->op) {                                                                         \
    case FW_RED_SUM: sum_##SFX((void *)o, (const void *)x, j->nd, shape, j->st[0], j->st[1]); break; \
    case FW_RED_PROD: prod_##SFX((void *)o, (const void *)x, j->nd, shape, j->st[0], j->st[1]); break; \
    case FW_RED_MAX: max_##SFX((void *)o, (const void *)x, j->nd, shape, j->st[0], j->st[1]); break; \
    default: min_##SFX((void *)o, (const void *)x, j->nd, shape, j->st[0], j->st[1]); break; \
    }
    switch (j->dt) {
    case FW_FLOAT32: DISPATCH(f32); break;
    case FW_FLOAT64: DISPATCH(f64); break;
    case FW_INT32: DISPATCH(i32); break;
    case FW_INT64: DISPATCH(i64); break;
    default: DISPATCH(u8); break;
    }
#undef DISPATCH
}

int fw__cpu_reduce(fw_redop op, const fw_kview *out, const fw_kview *x, unsigned mask)
{
    int64_t shape[FW_MAX_DIMS], st[2][FW_MAX_DIMS], ocont[FW_MAX_DIMS];
    int nd = x->ndim, k = 0;
    fw_kview o = *out;

    /* out strides over x's dims */
    int64_t acc = 1;
    for (int i = out->ndim - 1; i >= 0; i--) {
        ocont[i] = acc;
        acc *= out->shape[i];
    }
    /* out may have kept reduced dims (keepdim) of size 1: map x's kept dims
     * to out's dims in order, skipping out's size-1 dims that match reduced
     * dims when out->ndim == x->ndim */
    for (int i = 0; i < nd; i++) {
        shape[i] = x->shape[i];
        st[0][i] = x->strides[i];
        if (mask & (1u << i)) {
            st[1][i] = 0;
            if (out->ndim == nd)
                k++;
        } else {
            st[1][i] = ocont[k++];
        }
    }
    /* fill with the identity */
    if (op == FW_RED_MAX || op == FW_RED_MIN) {
        if (out->dtype == FW_INT64) {
            int64_t *p = out->data, v = op == FW_RED_MAX ? INT64_MIN : INT64_MAX;
            for (int64_t i = 0; i < acc; i++)
                p[i] = v;
        } else {
            for (int i = 0; i < o.ndim; i++)
                o.strides[i] = ocont[i];
            fw__cpu_fill(&o, identity(op, out->dtype));
        }
    } else {
        for (int i = 0; i < o.ndim; i++)
            o.strides[i] = ocont[i];
        fw__cpu_fill(&o, identity(op, out->dtype));
    }
    if (nd == 0) {
        shape[0] = 1;
        st[0][0] = 1;
        st[1][0] = 0;
        nd = 1;
    }
    for (int i = 0; i < nd; i++)
        if (shape[i] == 0)
            return 0;                          /* empty input: identity */
    nd = fw__coalesce(nd, shape, 2, st);

    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16 || x->dtype >= FW_NDTYPES ||
        fw_dtype_is_complex(x->dtype))
        return fw_error_set(FW_EDTYPE, "reduce kernel has no %s version", fw_dtype_name(x->dtype));
    red_job j = {op, x->dtype, nd, {0}, {{0}}, out->data, x->data,
                 (int64_t)fw_dtype_size(out->dtype), (int64_t)fw_dtype_size(x->dtype)};
    memcpy(j.shape, shape, sizeof(shape));
    memcpy(j.st, st, sizeof(st));
    /* rows that each reduce into their own output element split across the
     * pool (x [R, N] reduced over N); other layouts run on one thread */
    if (nd == 2 && st[1][1] == 0 && st[1][0] == 1 && shape[0] > 1 &&
        shape[0] * shape[1] > 2 * FW_GRAIN_ELEMENTWISE)
        fw_parallel_for(shape[0], FW_GRAIN_ELEMENTWISE / shape[1] + 1, red_rows, &j);
    else
        red_rows(&j, 0, nd == 2 && st[1][1] == 0 && st[1][0] == 1 ? shape[0] : -1);
    return 0;
}

#define ARG_IMPL(T, SFX)                                                                   \
    static void arg_##SFX(bool is_max, int64_t *out, const T *x, int64_t outer, int64_t n,   \
                          int64_t inner)                                                   \
    {                                                                                      \
        for (int64_t o = 0; o < outer; o++)                                                \
            for (int64_t in = 0; in < inner; in++) {                                       \
                const T *p = x + o * n * inner + in;                                       \
                T best = p[0];                                                             \
                int64_t bi = 0;                                                            \
                for (int64_t i = 1; i < n && best == best; i++) {                          \
                    T v = p[i * inner];                                                    \
                    if (v != v || (is_max ? v > best : v < best)) {                        \
                        best = v;                                                          \
                        bi = i;                                                            \
                    }                                                                      \
                }                                                                          \
                out[o * inner + in] = bi;                                                  \
            }                                                                              \
    }
ARG_IMPL(float, f32)
ARG_IMPL(double, f64)
ARG_IMPL(int32_t, i32)
ARG_IMPL(int64_t, i64)
ARG_IMPL(uint8_t, u8)

int fw__cpu_arg_reduce(bool is_max, int64_t *out, const void *x, fw_dtype dt, int64_t outer,
                       int64_t n, int64_t inner)
{
    switch (dt) {
    case FW_FLOAT32: arg_f32(is_max, out, x, outer, n, inner); break;
    case FW_FLOAT64: arg_f64(is_max, out, x, outer, n, inner); break;
    case FW_INT32: arg_i32(is_max, out, x, outer, n, inner); break;
    case FW_INT64: arg_i64(is_max, out, x, outer, n, inner); break;
    case FW_UINT8: case FW_BOOL: arg_u8(is_max, out, x, outer, n, inner); break;
    default:
        return fw_error_set(FW_EDTYPE, "arg reduce kernel has no %s version", fw_dtype_name(dt));
    }
    return 0;
}
