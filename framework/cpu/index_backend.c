/*
 * index_backend.c - the CPU backend's index/join family
 * (core/fw_backend_index.h) over the kernels of cpu/index.c: dtype
 * dispatch, the lane-parallel sort, flat index maps.
 */
#include "core/fw_backend_index.h"
#include "core/fw_parallel.h"
#include "core_kernels.h"
#include "index_cpu.h"

#include <stdatomic.h>
#include <stdlib.h>

static int no_dtype(const char *op, fw_dtype dt)
{
    return fw_error_set(FW_EDTYPE, "%s: dtype %s not supported by the cpu kernels", op,
                        fw_dtype_name(dt));
}

/* T of an int/uint8/bool dtype by suffix; floats handled by callers. */
#define DISPATCH5(op, dt, CALL)                            \
    switch (dt) {                                          \
    case FW_FLOAT32: CALL(f32, float); break;              \
    case FW_FLOAT64: CALL(f64, double); break;             \
    case FW_INT32: CALL(i32, int32_t); break;              \
    case FW_INT64: CALL(i64, int64_t); break;              \
    case FW_UINT8: case FW_BOOL: CALL(u8, uint8_t); break; \
    default: return no_dtype(op, dt);                      \
    }

#define DISPATCH_F(op, dt, CALL)                           \
    switch (dt) {                                          \
    case FW_FLOAT32: CALL(f32, float); break;              \
    case FW_FLOAT64: CALL(f64, double); break;             \
    default: return no_dtype(op, dt);                      \
    }

static int k_concat(size_t es, void *out, const void *const *ins, const int64_t *len, int n,
                    int64_t outer, int64_t inner)
{
    fw__cpu_concat(out, ins, len, n, outer, inner, es);
    return 0;
}

static int k_split(size_t es, void *const *outs, const void *in, const int64_t *len, int n,
                   int64_t outer, int64_t inner)
{
    fw__cpu_split(outs, in, len, n, outer, inner, es);
    return 0;
}

static int k_gather(size_t es, void *out, const void *in, const int64_t *idx, int64_t nidx,
                    int64_t outer, int64_t axis_len, int64_t inner)
{
    fw__cpu_gather(out, in, idx, nidx, outer, axis_len, inner, es);
    return 0;
}

static int k_take_along(size_t es, void *out, const void *in, const int64_t *idx,
                        int64_t outer, int64_t in_len, int64_t idx_len, int64_t inner)
{
    fw__cpu_take_along(out, in, idx, outer, in_len, idx_len, inner, es);
    return 0;
}

static int k_index_copy(size_t es, void *out, const void *src, const int64_t *idx,
                        int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner,
                        const void *fill)
{
    fw__cpu_index_copy(out, src, idx, nidx, outer, axis_len, inner, fill, es);
    return 0;
}

static int k_scatter_along(size_t es, void *out, const void *src, const int64_t *idx,
                           int64_t outer, int64_t out_len, int64_t idx_len, int64_t inner,
                           const void *fill)
{
    fw__cpu_scatter_along(out, src, idx, outer, out_len, idx_len, inner, fill, es);
    return 0;
}

/* The flat maps as the per-dim pointers cpu/index.c takes. */
static void split_maps(const int64_t *m[FW_MAX_DIMS], const int64_t *maps, int ndim,
                       const int64_t *out_shape)
{
    for (int d = 0; d < ndim; d++) {
        m[d] = maps;
        maps += out_shape[d];
    }
}

static int k_map_copy(size_t es, void *out, const void *in, int ndim, const int64_t *out_shape,
                      const int64_t *in_shape, const int64_t *maps, const void *fill)
{
    const int64_t *m[FW_MAX_DIMS];
    split_maps(m, maps, ndim, out_shape);
    fw__cpu_map_copy(out, in, ndim, out_shape, in_shape, m, fill, es);
    return 0;
}

static int k_where(size_t es, void *out, const uint8_t *cond, const int64_t *cs, const void *x,
                   const int64_t *xs, const void *y, const int64_t *ys, int ndim,
                   const int64_t *shape)
{
    fw__cpu_where(out, cond, cs, x, xs, y, ys, ndim, shape, es);
    return 0;
}

static int k_strided_copy(size_t es, void *out, const void *in, const int64_t *st, int ndim,
                          const int64_t *shape)
{
    fw__cpu_strided_copy(out, in, st, ndim, shape, es);
    return 0;
}

static int k_strided_write(size_t es, void *dst, const int64_t *ds, const void *src,
                           const int64_t *ss, int ndim, const int64_t *shape)
{
    fw__cpu_strided_write(dst, ds, src, ss, ndim, shape, es);
    return 0;
}

static int k_masked_fill(size_t es, void *dst, const int64_t *ds, const uint8_t *mask,
                         const int64_t *ms, int ndim, const int64_t *shape, const void *val)
{
    fw__cpu_masked_fill(dst, ds, mask, ms, ndim, shape, val, es);
    return 0;
}

static int k_masked_select(size_t es, void *out, const void *x, const uint8_t *mask, int64_t n,
                           int64_t *count)
{
    *count = fw__cpu_masked_select(out, x, mask, n, es);
    return 0;
}

static int k_masked_scatter(size_t es, void *gx, const void *g, const uint8_t *mask, int64_t n)
{
    fw__cpu_masked_scatter(gx, g, mask, n, es);
    return 0;
}

static int k_index_add(fw_dtype dt, void *out, const void *src, const int64_t *idx,
                       int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner)
{
#define CALL(S, T) fw__cpu_index_add_##S(out, src, idx, nidx, outer, axis_len, inner)
    DISPATCH5("index_add", dt, CALL)
#undef CALL
    return 0;
}

static int k_scatter_add_along(fw_dtype dt, void *out, const void *src, const int64_t *idx,
                               int64_t outer, int64_t out_len, int64_t idx_len, int64_t inner)
{
#define CALL(S, T) fw__cpu_scatter_add_along_##S(out, src, idx, outer, out_len, idx_len, inner)
    DISPATCH5("scatter_add", dt, CALL)
#undef CALL
    return 0;
}

static int k_map_add(fw_dtype dt, void *in, const void *out, int ndim, const int64_t *out_shape,
                     const int64_t *in_shape, const int64_t *maps)
{
    const int64_t *m[FW_MAX_DIMS];
    split_maps(m, maps, ndim, out_shape);
#define CALL(S, T) fw__cpu_map_add_##S(in, out, ndim, out_shape, in_shape, m)
    DISPATCH_F("map_add", dt, CALL)
#undef CALL
    return 0;
}

/* v converted to an integer type of range [mn, mx], saturating. */
#define SAT(T, v, mn, mx) ((v) >= (double)(mx) ? (T)(mx) : (v) <= (double)(mn) ? (T)(mn) : (T)(v))
#define SAT_f32(v) ((float)(v))
#define SAT_f64(v) (v)
#define SAT_i32(v) SAT(int32_t, v, INT32_MIN, INT32_MAX)
#define SAT_i64(v) SAT(int64_t, v, INT64_MIN, INT64_MAX)
#define SAT_u8(v) SAT(uint8_t, v, 0, 255)

static int k_clip(fw_dtype dt, void *out, const void *x, int64_t n, int has_lo, double lo,
                  int has_hi, double hi)
{
#define CALL(S, T) fw__cpu_clip_##S(out, x, n, has_lo, SAT_##S(lo), has_hi, SAT_##S(hi))
    DISPATCH5("clip", dt, CALL)
#undef CALL
    return 0;
}

static int k_clip_grad(fw_dtype dt, void *gx, const void *g, const void *x, int64_t n,
                       int has_lo, double lo, int has_hi, double hi)
{
#define CALL(S, T) fw__cpu_clip_grad_##S(gx, g, x, n, has_lo, (T)lo, has_hi, (T)hi)
    DISPATCH_F("clip backward", dt, CALL)
#undef CALL
    return 0;
}

static int k_cumsum(fw_dtype dt, void *out, const void *x, int64_t outer, int64_t len,
                    int64_t inner, int reverse)
{
#define CALL(S, T) fw__cpu_cumsum_##S(out, x, outer, len, inner, reverse)
    DISPATCH5("cumsum", dt, CALL)
#undef CALL
    return 0;
}

/* One parallel job: sort lanes [begin, end) with scratch of its own. */
typedef struct {
    void *vals;
    int64_t *idx;
    const void *x;
    fw_dtype dt;
    int64_t len, inner, k;
    int desc;
    atomic_int failed;
} sort_job;

static void sort_chunk(void *ctx, int64_t begin, int64_t end)
{
    sort_job *j = ctx;
    int64_t *tmp = malloc((size_t)(2 * j->len + 1) * sizeof(*tmp));

    if (tmp == NULL) {
        atomic_store(&j->failed, 1);
        return;
    }
#define CALL(S, T) \
    fw__cpu_sort_##S(j->vals, j->idx, j->x, j->len, j->inner, j->k, j->desc, begin, end, tmp)
    switch (j->dt) {
    case FW_FLOAT32: CALL(f32, float); break;
    case FW_FLOAT64: CALL(f64, double); break;
    case FW_INT32: CALL(i32, int32_t); break;
    case FW_INT64: CALL(i64, int64_t); break;
    default: CALL(u8, uint8_t); break;
    }
#undef CALL
    free(tmp);
}

static int k_sort(fw_dtype dt, void *vals, int64_t *idx, const void *x, int64_t outer,
                  int64_t len, int64_t inner, int64_t k, int descending)
{
    switch (dt) {
    case FW_FLOAT32: case FW_FLOAT64: case FW_INT32: case FW_INT64: case FW_UINT8: case FW_BOOL:
        break;
    default:
        return no_dtype("sort", dt);
    }
    sort_job j = {vals, idx, x, dt, len, inner, k, descending, 0};
    int64_t lanes = outer * inner;
    int64_t grain = 32768 / (len > 0 ? len : 1);
    fw_parallel_for(lanes, grain > 0 ? grain : 1, sort_chunk, &j);
    if (atomic_load(&j.failed))
        return fw_error_set(FW_ENOMEM, "sort: scratch for an axis of %lld", (long long)len);
    return 0;
}

static int k_strided_add(fw_dtype dt, void *dst, const int64_t *ds, const void *src, int ndim,
                         const int64_t *shape)
{
#define CALL(S, T) fw__cpu_strided_add_##S(dst, ds, src, ndim, shape)
    DISPATCH5("strided_add", dt, CALL)
#undef CALL
    return 0;
}

static int k_one_hot(fw_dtype dt, void *out, const int64_t *idx, int64_t n, int64_t c)
{
    if (dt != FW_FLOAT32)
        return no_dtype("one_hot", dt);
    fw__cpu_one_hot_f32(out, idx, n, c);
    return 0;
}

const struct fw_index_kernels fw__cpu_index = {
    .concat = k_concat,
    .split = k_split,
    .gather = k_gather,
    .take_along = k_take_along,
    .index_copy = k_index_copy,
    .scatter_along = k_scatter_along,
    .map_copy = k_map_copy,
    .where = k_where,
    .strided_copy = k_strided_copy,
    .strided_write = k_strided_write,
    .masked_fill = k_masked_fill,
    .masked_select = k_masked_select,
    .masked_scatter = k_masked_scatter,
    .index_add = k_index_add,
    .scatter_add_along = k_scatter_add_along,
    .map_add = k_map_add,
    .clip = k_clip,
    .clip_grad = k_clip_grad,
    .cumsum = k_cumsum,
    .sort = k_sort,
    .strided_add = k_strided_add,
    .one_hot = k_one_hot,
};
