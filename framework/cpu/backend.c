/* backend.c - the CPU backend table: memory, strided copy/cast, fill. */
#include "core_kernels.h"
#include "core/fw_int.h"
#include "core/fw_parallel.h"

#include <stdlib.h>
#include <string.h>

static void *cpu_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0)
        return NULL;
    return p;
}

static void cpu_free(void *p, size_t n) { (void)n; free(p); }

static int cpu_copy(void *dst, fw_device dd, const void *src, fw_device sd, size_t n)
{
    if (dd != FW_CPU || sd != FW_CPU)
        return fw_error_set(FW_EDEVICE, "copy: the CPU backend cannot reach another device");
    memmove(dst, src, n);
    return 0;
}

static int cpu_memset(void *dst, int byte, size_t n)
{
    memset(dst, byte, n);
    return 0;
}

int fw__coalesce(int ndim, int64_t *shape, int nops, int64_t (*strides)[FW_MAX_DIMS])
{
    int out = 0;

    if (ndim == 0) {
        shape[0] = 1;
        for (int k = 0; k < nops; k++)
            strides[k][0] = 0;
        return 1;
    }
    /* drop size-1 dims, then merge */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1)
            continue;
        if (out > 0) {
            bool merge = true;
            for (int k = 0; k < nops && merge; k++)
                merge = strides[k][out - 1] == strides[k][i] * shape[i];
            if (merge) {
                shape[out - 1] *= shape[i];
                for (int k = 0; k < nops; k++)
                    strides[k][out - 1] = strides[k][i];
                continue;
            }
        }
        shape[out] = shape[i];
        for (int k = 0; k < nops; k++)
            strides[k][out] = strides[k][i];
        out++;
    }
    if (out == 0) {
        shape[0] = 1;
        for (int k = 0; k < nops; k++)
            strides[k][0] = 0;
        out = 1;
    }
    return out;
}

/* ---- strided copy with casting ------------------------------------------------------ */

static inline bool is_int(fw_dtype d) { return d == FW_INT32 || d == FW_INT64 || d == FW_BOOL || d == FW_UINT8; }

static inline double load_d(const char *p, fw_dtype dt)
{
    switch (dt) {
    case FW_FLOAT32: return *(const float *)p;
    case FW_FLOAT64: return *(const double *)p;
    case FW_FLOAT16: return fw_half_to_float(*(const uint16_t *)p);
    case FW_BFLOAT16: return fw_bf16_to_float(*(const uint16_t *)p);
    case FW_INT32: return *(const int32_t *)p;
    case FW_INT64: return (double)*(const int64_t *)p;
    case FW_BOOL: case FW_UINT8: return *(const uint8_t *)p;
    case FW_COMPLEX64: return ((const float *)p)[0];      /* complex -> real: the real part */
    case FW_COMPLEX128: return ((const double *)p)[0];
    default: return 0;
    }
}

static inline int64_t load_i(const char *p, fw_dtype dt)
{
    switch (dt) {
    case FW_INT32: return *(const int32_t *)p;
    case FW_INT64: return *(const int64_t *)p;
    default: return *(const uint8_t *)p;
    }
}

static inline void store_i(char *p, fw_dtype dt, int64_t v)
{
    switch (dt) {
    case FW_INT32: *(int32_t *)p = (int32_t)v; break;
    case FW_INT64: *(int64_t *)p = v; break;
    case FW_BOOL: *(uint8_t *)p = v != 0; break;
    default: *(uint8_t *)p = (uint8_t)v; break;
    }
}

/* complex128's element: copied as two words */
typedef struct { uint64_t w[2]; } el16;

typedef struct copy_job {
    int ndim;
    int64_t shape[FW_MAX_DIMS];
    int64_t st[2][FW_MAX_DIMS];
    char *d;
    const char *s;
    fw_dtype dt, sdt;
    size_t dsz, ssz;
} copy_job;

/* Destination and source of outer index `rem` over dims [0, last] of j
 * (the dims inside `last` are walked by the caller). */
static inline void job_at(char **dp, const char **sp, const copy_job *j, int64_t rem, int last)
{
    int64_t doff = 0, soff = 0;

    for (int d = last; d >= 0; d--) {
        int64_t i = rem % j->shape[d];
        rem /= j->shape[d];
        doff += i * j->st[0][d];
        soff += i * j->st[1][d];
    }
    *dp = j->d + doff * (int64_t)j->dsz;
    *sp = j->s + soff * (int64_t)j->ssz;
}

/* dp[0..n) = the one element at sp (`sz` bytes each). */
static void fill_row(char *dp, const char *sp, int64_t n, size_t sz)
{
    bool same_bytes = true;

    for (size_t b = 1; b < sz; b++)
        same_bytes = same_bytes && sp[b] == sp[0];
    if (same_bytes) {   /* 0.0f, 0, -1, ...: memset writes the same bits */
        memset(dp, (unsigned char)sp[0], (size_t)n * sz);
        return;
    }
    switch (sz) {
    case 2: { uint16_t v; memcpy(&v, sp, 2); for (int64_t i = 0; i < n; i++) ((uint16_t *)dp)[i] = v; break; }
    case 4: { uint32_t v; memcpy(&v, sp, 4); for (int64_t i = 0; i < n; i++) ((uint32_t *)dp)[i] = v; break; }
    case 8: { uint64_t v; memcpy(&v, sp, 8); for (int64_t i = 0; i < n; i++) ((uint64_t *)dp)[i] = v; break; }
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dp + i * (int64_t)sz, sp, sz);
        break;
    }
}

static void copy_rows(void *ctx, int64_t r0, int64_t r1)
{
    const copy_job *j = ctx;
    int nd = j->ndim;
    int64_t inner = j->shape[nd - 1];
    int64_t ds = j->st[0][nd - 1], ss = j->st[1][nd - 1];

    for (int64_t r = r0; r < r1; r++) {
        char *dp;
        const char *sp;
        job_at(&dp, &sp, j, r, nd - 2);
        if (j->dt == j->sdt) {
            if (ds == 1 && ss == 1) {
                memcpy(dp, sp, (size_t)inner * j->dsz);
                continue;
            }
            if (ds == 1 && ss == 0) {   /* a fill (zero_grad): contiguous, vectorisable */
                fill_row(dp, sp, inner, j->dsz);
                continue;
            }
            switch (j->dsz) {
            case 1: for (int64_t i = 0; i < inner; i++) ((uint8_t *)dp)[i * ds] = ((const uint8_t *)sp)[i * ss]; break;
            case 2: for (int64_t i = 0; i < inner; i++) ((uint16_t *)dp)[i * ds] = ((const uint16_t *)sp)[i * ss]; break;
            case 4: for (int64_t i = 0; i < inner; i++) ((uint32_t *)dp)[i * ds] = ((const uint32_t *)sp)[i * ss]; break;
            case 16: for (int64_t i = 0; i < inner; i++) ((el16 *)dp)[i * ds] = ((const el16 *)sp)[i * ss]; break;
            default: for (int64_t i = 0; i < inner; i++) ((uint64_t *)dp)[i * ds] = ((const uint64_t *)sp)[i * ss]; break;
            }
        } else if (j->dt == FW_FLOAT32 && j->sdt == FW_FLOAT64) {
            for (int64_t i = 0; i < inner; i++)
                ((float *)dp)[i * ds] = (float)((const double *)sp)[i * ss];
        } else if (j->dt == FW_FLOAT64 && j->sdt == FW_FLOAT32) {
            for (int64_t i = 0; i < inner; i++)
                ((double *)dp)[i * ds] = ((const float *)sp)[i * ss];
        } else if (j->dt == FW_FLOAT32 && j->sdt == FW_FLOAT16) {
            for (int64_t i = 0; i < inner; i++)
                ((float *)dp)[i * ds] = fw_half_to_float(((const uint16_t *)sp)[i * ss]);
        } else if (j->dt == FW_FLOAT16 && j->sdt == FW_FLOAT32) {
            for (int64_t i = 0; i < inner; i++)
                ((uint16_t *)dp)[i * ds] = fw_float_to_half(((const float *)sp)[i * ss]);
        } else if (j->dt == FW_COMPLEX64 && j->sdt == FW_COMPLEX128) {
            for (int64_t i = 0; i < inner; i++) {
                ((float *)dp)[2 * i * ds] = (float)((const double *)sp)[2 * i * ss];
                ((float *)dp)[2 * i * ds + 1] = (float)((const double *)sp)[2 * i * ss + 1];
            }
        } else if (j->dt == FW_COMPLEX128 && j->sdt == FW_COMPLEX64) {
            for (int64_t i = 0; i < inner; i++) {
                ((double *)dp)[2 * i * ds] = ((const float *)sp)[2 * i * ss];
                ((double *)dp)[2 * i * ds + 1] = ((const float *)sp)[2 * i * ss + 1];
            }
        } else if (is_int(j->dt) && is_int(j->sdt)) {
            for (int64_t i = 0; i < inner; i++)
                store_i(dp + i * ds * (int64_t)j->dsz, j->dt, load_i(sp + i * ss * (int64_t)j->ssz, j->sdt));
        } else {
            for (int64_t i = 0; i < inner; i++)
                fw__store_double(dp + i * ds * (int64_t)j->dsz, j->dt, load_d(sp + i * ss * (int64_t)j->ssz, j->sdt));
        }
    }
}

/* Same-dtype copy where src's last two dims are swapped relative to dst
 * (src stride 1 on dim nd-2, dst stride 1 on dim nd-1): copy 32x32 tiles so
 * both sides stay in cache. Rows of tiles are split across the pool. */
typedef struct tr_job {
    const copy_job *j;
    int64_t outer, rows, cols, tiles_r;
} tr_job;

#define TILE 32
/* Through a local tile: reads run along src's contiguous dim, writes along
 * dst's, and power-of-two strides cannot thrash one L1 set. */
#define TR_TILE(T)                                                                      \
    {                                                                                   \
        T buf[TILE][TILE];                                                              \
        int64_t nr = r1 - r0;                                                           \
        for (int64_t c0 = 0; c0 < t->cols; c0 += TILE) {                                \
            int64_t nc = c0 + TILE < t->cols ? TILE : t->cols - c0;                     \
            for (int64_t c = 0; c < nc; c++)                                            \
                for (int64_t r = 0; r < nr; r++)                                        \
                    buf[c][r] = ((const T *)sp)[r0 + r + (c0 + c) * ss1];               \
            for (int64_t r = 0; r < nr; r++)                                            \
                for (int64_t c = 0; c < nc; c++)                                        \
                    ((T *)dp)[(r0 + r) * ds0 + c0 + c] = buf[c][r];                     \
        }                                                                               \
    }

static void tr_rows(void *ctx, int64_t b0, int64_t b1)
{
    const tr_job *t = ctx;
    const copy_job *j = t->j;
    int nd = j->ndim;
    int64_t ds0 = j->st[0][nd - 2], ss1 = j->st[1][nd - 1];

    for (int64_t b = b0; b < b1; b++) {
        int64_t tr = b % t->tiles_r;
        char *dp;
        const char *sp;
        job_at(&dp, &sp, j, b / t->tiles_r, nd - 3);
        int64_t r0 = tr * TILE, r1 = r0 + TILE < t->rows ? r0 + TILE : t->rows;
        switch (j->dsz) {
        case 1: TR_TILE(uint8_t) break;
        case 2: TR_TILE(uint16_t) break;
        case 4: TR_TILE(uint32_t) break;
        case 16: TR_TILE(el16) break;
        default: TR_TILE(uint64_t) break;
        }
    }
}

int fw__cpu_copy_strided(const fw_kview *dst, const fw_kview *src)
{
    copy_job j;
    int64_t rows;

    j.ndim = dst->ndim;
    for (int i = 0; i < dst->ndim; i++) {
        j.shape[i] = dst->shape[i];
        j.st[0][i] = dst->strides[i];
        j.st[1][i] = src->strides[i];
    }
    j.ndim = fw__coalesce(j.ndim, j.shape, 2, j.st);
    j.d = dst->data;
    j.s = src->data;
    j.dt = dst->dtype;
    j.sdt = src->dtype;
    j.dsz = fw_dtype_size(dst->dtype);
    j.ssz = fw_dtype_size(src->dtype);
    if (j.dt == j.sdt && j.ndim >= 2 && j.st[0][j.ndim - 1] == 1 && j.st[1][j.ndim - 2] == 1 &&
        j.st[1][j.ndim - 1] != 1 && j.shape[j.ndim - 1] >= 8 && j.shape[j.ndim - 2] >= 8) {
        tr_job t = {&j, 1, j.shape[j.ndim - 2], j.shape[j.ndim - 1], 0};
        for (int i = 0; i < j.ndim - 2; i++)
            t.outer *= j.shape[i];
        t.tiles_r = (t.rows + TILE - 1) / TILE;
        int64_t per = TILE * t.cols;
        fw_parallel_for(t.outer * t.tiles_r, FW_GRAIN_ELEMENTWISE / (per > 0 ? per : 1) + 1,
                        tr_rows, &t);
        return 0;
    }
    rows = 1;
    for (int i = 0; i < j.ndim - 1; i++)
        rows *= j.shape[i];
    int64_t inner = j.shape[j.ndim - 1];
    int64_t grain = FW_GRAIN_ELEMENTWISE / (inner > 0 ? inner : 1);
    fw_parallel_for(rows, grain > 0 ? grain : 1, copy_rows, &j);
    return 0;
}

int fw__cpu_fill(const fw_kview *dst, double value)
{
    /* fill a 1-element source broadcast over dst */
    char one[16];
    fw_kview s = *dst;

    memset(one, 0, sizeof(one));
    fw__store_double(one, dst->dtype, value);
    if ((dst->dtype == FW_INT32 || dst->dtype == FW_INT64) && value == value)
        store_i(one, dst->dtype, (int64_t)value);
    s.data = one;
    for (int i = 0; i < s.ndim; i++)
        s.strides[i] = 0;
    return fw__cpu_copy_strided(dst, &s);
}

static const fw_backend cpu_backend = {
    .name = "cpu",
    .device = FW_CPU,
    .host_accessible = true,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .memset = cpu_memset,
    .copy_strided = fw__cpu_copy_strided,
    .fill = fw__cpu_fill,
    .binary = fw__cpu_binary,
    .unary = fw__cpu_unary,
    .unary_grad = fw__cpu_unary_grad,
    .reduce = fw__cpu_reduce,
    .arg_reduce = fw__cpu_arg_reduce,
    .gemm_batched = fw__cpu_gemm_batched,
    .nn = &fw__cpu_nn_kernels,
    .index = &fw__cpu_index,
    .optim = &fw__cpu_optim,
    .random = &fw__cpu_random,
    .fft = &fw__cpu_fft,
};

const fw_backend *fw__cpu_backend(void) { return &cpu_backend; }
