/*
 * copy.cu - strided copy with casting, and fill, on the device. Same
 * results as cpu/backend.c's fw__cpu_copy_strided / fw__cpu_fill, bit for
 * bit: the casts follow core/fw_int.h (float -> int truncates and
 * saturates, NaN -> 0, uint8 wraps, complex -> real keeps the real part).
 */
#include "cu_core_kernels.h"
#include "cu_kern.cuh"

/* dst = src, same dtype, E the element's storage. */
template <typename E>
__global__ void copy_same(cu_layout l, int64_t n, E *d, const E *s)
{
    CU_FOR(i, n) {
        int64_t off[2];
        cu_offsets<2>(l, i, off);
        d[off[0]] = s[off[1]];
    }
}

/* Between the four float dtypes: through their compute types, which is
 * what the CPU's double round trip gives (every step is exact but the last). */
template <typename D, typename S>
__global__ void copy_float(cu_layout l, int64_t n, D *d, const S *s)
{
    CU_FOR(i, n) {
        int64_t off[2];
        cu_offsets<2>(l, i, off);
        d[off[0]] = cu_num<D>::store((typename cu_num<D>::calc)cu_num<S>::load(s[off[1]]));
    }
}

/* complex64 <-> complex128: both parts. */
template <typename D, typename S>
__global__ void copy_complex(cu_layout l, int64_t n, D *d, const S *s)
{
    CU_FOR(i, n) {
        int64_t off[2];
        cu_offsets<2>(l, i, off);
        d[2 * off[0]] = (D)s[2 * off[1]];
        d[2 * off[0] + 1] = (D)s[2 * off[1] + 1];
    }
}

/* int/bool/uint8 -> int/bool/uint8 through int64 (wraps like the CPU). */
__global__ void copy_ints(cu_layout l, int64_t n, char *d, fw_dtype dt, int dsz, const char *s,
                          fw_dtype sdt, int ssz)
{
    CU_FOR(i, n) {
        int64_t off[2];
        cu_offsets<2>(l, i, off);
        cu_store_i(d + off[0] * dsz, dt, cu_load_i(s + off[1] * ssz, sdt));
    }
}

/* Anything else through a double, as the CPU's load_d / fw__store_double. */
__global__ void copy_generic(cu_layout l, int64_t n, char *d, fw_dtype dt, int dsz,
                             const char *s, fw_dtype sdt, int ssz)
{
    CU_FOR(i, n) {
        int64_t off[2];
        cu_offsets<2>(l, i, off);
        cu_store_d(d + off[0] * dsz, dt, cu_load_d(s + off[1] * ssz, sdt));
    }
}

template <typename E>
static void launch_same(const cu_layout &l, int64_t n, void *d, const void *s)
{
    copy_same<E><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
        l, n, (E *)d, (const E *)s);
}

template <typename D, typename S>
static void launch_float2(const cu_layout &l, int64_t n, void *d, const void *s)
{
    copy_float<D, S><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
        l, n, (D *)d, (const S *)s);
}

template <typename D>
static void launch_float(const cu_layout &l, int64_t n, void *d, const void *s, fw_dtype sdt)
{
    switch (sdt) {
    case FW_FLOAT32: launch_float2<D, float>(l, n, d, s); break;
    case FW_FLOAT64: launch_float2<D, double>(l, n, d, s); break;
    case FW_FLOAT16: launch_float2<D, cu_half>(l, n, d, s); break;
    default: launch_float2<D, cu_bf16>(l, n, d, s); break;
    }
}

static bool is_real_float(fw_dtype d)
{
    return d == FW_FLOAT32 || d == FW_FLOAT64 || d == FW_FLOAT16 || d == FW_BFLOAT16;
}

extern "C" int fw__cu_copy_strided(const fw_kview *dst, const fw_kview *src)
{
    const fw_kview *v[2] = {dst, src};
    cu_layout l;
    int64_t n = cu_layout_of(&l, v, 2);
    fw_dtype dt = dst->dtype, sdt = src->dtype;
    int dsz = cu_dtype_size(dt), ssz = cu_dtype_size(sdt);

    if (dsz == 0 || ssz == 0)
        return fw__cu_error_set(FW_EDTYPE, "copy: invalid dtype %d -> %d", (int)sdt, (int)dt);
    if (n == 0)
        return 0;
    if (dt == sdt && l.ndim == 1 && l.st[0][0] == 1 && l.st[1][0] == 1)
        return fw__cu_error(cudaMemcpyAsync(dst->data, src->data, (size_t)n * dsz,
                                            cudaMemcpyDeviceToDevice, fw__cu_stream()),
                            "copy");
    if (dt == sdt) {
        switch (dsz) {
        case 1: launch_same<uint8_t>(l, n, dst->data, src->data); break;
        case 2: launch_same<uint16_t>(l, n, dst->data, src->data); break;
        case 4: launch_same<uint32_t>(l, n, dst->data, src->data); break;
        case 8: launch_same<uint64_t>(l, n, dst->data, src->data); break;
        default: launch_same<cu_el16>(l, n, dst->data, src->data); break;
        }
    } else if (is_real_float(dt) && is_real_float(sdt)) {
        switch (dt) {
        case FW_FLOAT32: launch_float<float>(l, n, dst->data, src->data, sdt); break;
        case FW_FLOAT64: launch_float<double>(l, n, dst->data, src->data, sdt); break;
        case FW_FLOAT16: launch_float<cu_half>(l, n, dst->data, src->data, sdt); break;
        default: launch_float<cu_bf16>(l, n, dst->data, src->data, sdt); break;
        }
    } else if (dt == FW_COMPLEX64 && sdt == FW_COMPLEX128) {
        copy_complex<float, double><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
            l, n, (float *)dst->data, (const double *)src->data);
    } else if (dt == FW_COMPLEX128 && sdt == FW_COMPLEX64) {
        copy_complex<double, float><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
            l, n, (double *)dst->data, (const float *)src->data);
    } else if (cu_is_int(dt) && cu_is_int(sdt)) {
        copy_ints<<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
            l, n, (char *)dst->data, dt, dsz, (const char *)src->data, sdt, ssz);
    } else {
        copy_generic<<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
            l, n, (char *)dst->data, dt, dsz, (const char *)src->data, sdt, ssz);
    }
    return cu_launched("copy");
}

/* ---- fill ----------------------------------------------------------------------------- */

template <typename E>
__global__ void fill_kernel(cu_layout l, int64_t n, E *d, E v)
{
    CU_FOR(i, n) {
        int64_t off[1];
        cu_offsets<1>(l, i, off);
        d[off[0]] = v;
    }
}

template <typename E>
static void launch_fill(const cu_layout &l, int64_t n, void *d, const char *one)
{
    E v;
    memcpy(&v, one, sizeof(E));
    fill_kernel<E><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(l, n, (E *)d, v);
}

extern "C" int fw__cu_fill(const fw_kview *dst, double value)
{
    const fw_kview *v[1] = {dst};
    cu_layout l;
    int64_t n = cu_layout_of(&l, v, 1);
    int sz = cu_dtype_size(dst->dtype);
    char one[16];

    if (sz == 0)
        return fw__cu_error_set(FW_EDTYPE, "fill: invalid dtype %d", (int)dst->dtype);
    if (n == 0)
        return 0;
    /* the element's bytes, as fw__cpu_fill makes them */
    memset(one, 0, sizeof(one));
    cu_store_d(one, dst->dtype, value);
    if ((dst->dtype == FW_INT32 || dst->dtype == FW_INT64) && value == value)
        cu_store_i(one, dst->dtype, (int64_t)value);
    bool same_bytes = true;
    for (int b = 1; b < sz; b++)
        same_bytes = same_bytes && one[b] == one[0];
    if (same_bytes && l.ndim == 1 && l.st[0][0] == 1)
        return fw__cu_error(cudaMemsetAsync(dst->data, (unsigned char)one[0], (size_t)n * sz,
                                            fw__cu_stream()),
                            "fill");
    switch (sz) {
    case 1: launch_fill<uint8_t>(l, n, dst->data, one); break;
    case 2: launch_fill<uint16_t>(l, n, dst->data, one); break;
    case 4: launch_fill<uint32_t>(l, n, dst->data, one); break;
    case 8: launch_fill<uint64_t>(l, n, dst->data, one); break;
    default: launch_fill<cu_el16>(l, n, dst->data, one); break;
    }
    return cu_launched("fill");
}
