/*
 * sort.cu - the index family's lane sort on the device (fw_index_kernels.sort):
 * every lane (o, :, i) of x: (outer, len, inner) is copied out contiguous
 * with its positions as radix keys, sorted by CUB's stable segmented sort
 * (ascending; see sort_key for descending), and the first
 * k of each go back to (outer, k, inner).
 *
 * Same order as cpu/index.c's stable merge sort: NaN sorts as the largest
 * (every NaN becomes one quiet NaN in the keys, so NaNs tie and keep their
 * order), -0.0 and 0.0 tie (the keys hold +0.0), ties keep their order in
 * both directions; the values written are x's own (payloads and signs
 * intact). Scratch: two keys and two positions per element (cudaMallocAsync).
 */
#include "cu_family_kernels.h"
#include "cu_kern.cuh"

#include <cub/device/device_segmented_sort.cuh>

/* The radix key of v: ascending order of the keys is the order wanted.
 * Descending reverses the order with a bijection (negation for floats, ~
 * for ints), so one stable ascending sort serves both and keeps ties in
 * their order either way. */
template <typename T> __device__ __forceinline__ T sort_key(T v, bool desc)
{
    if constexpr (std::is_floating_point<T>::value) {
        if (v != v) {   /* CUB orders +NaN after +inf and -NaN before -inf */
            if constexpr (sizeof(T) == 4)
                return __uint_as_float(desc ? 0xffc00000u : 0x7fc00000u);
            else
                return __longlong_as_double(desc ? (long long)0xfff8000000000000ULL
                                                 : 0x7ff8000000000000LL);
        }
        T key = desc ? -v : v;
        return key == 0 ? (T)0 : key;   /* -0.0 ties with 0.0 */
    } else {
        return desc ? (T)~v : v;
    }
}

/* keys/pos: lane l's element j at l * len + j. */
template <typename T>
__global__ void k_lanes_in(T *keys, int64_t *pos, const T *x, int64_t len, int64_t inner,
                           int64_t n, bool desc)
{
    CU_FOR(e, n) {
        int64_t l = e / len, j = e - l * len;
        int64_t o = l / inner, i = l - o * inner;
        keys[e] = sort_key(x[(o * len + j) * inner + i], desc);
        pos[e] = j;
    }
}

__global__ void k_offsets(int64_t *off, int64_t lanes, int64_t len)
{
    CU_FOR(l, lanes + 1)
        off[l] = l * len;
}

template <typename T>
__global__ void k_lanes_out(T *vals, int64_t *idx, const T *x, const int64_t *pos, int64_t len,
                            int64_t inner, int64_t k, int64_t lanes)
{
    CU_FOR(e, lanes * k) {
        int64_t l = e / k, j = e - l * k;
        int64_t o = l / inner, i = l - o * inner;
        int64_t p = pos[l * len + j];
        int64_t w = (o * k + j) * inner + i;
        idx[w] = p;
        if (vals != nullptr)
            vals[w] = x[(o * len + p) * inner + i];
    }
}

#define LAUNCH(n) <<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>

template <typename T>
static int sort_typed(T *vals, int64_t *idx, const T *x, int64_t outer, int64_t len,
                      int64_t inner, int64_t k, int descending)
{
    cudaStream_t s = fw__cu_stream();
    int64_t lanes = outer * inner, n = lanes * len;
    size_t keys_bytes = ((size_t)n * sizeof(T) + 255) / 256 * 256;
    size_t pos_bytes = (size_t)n * sizeof(int64_t);
    size_t off_bytes = (size_t)(lanes + 1) * sizeof(int64_t);
    size_t tmp_bytes = 0;
    char *scratch = NULL;
    void *tmp = NULL;
    int err;

    err = fw__cu_error(cub::DeviceSegmentedSort::StableSortPairs(
                           NULL, tmp_bytes, (const T *)NULL, (T *)NULL, (const int64_t *)NULL,
                           (int64_t *)NULL, n, lanes, (const int64_t *)NULL,
                           (const int64_t *)NULL, s),
                       "sort");
    if (err < 0)
        return err;
    if ((err = cu_scratch((void **)&scratch, 2 * keys_bytes + 2 * pos_bytes + off_bytes, "sort")) <
        0)
        return err;
    if ((err = cu_scratch(&tmp, tmp_bytes, "sort")) < 0) {
        cu_scratch_free(scratch);
        return err;
    }
    T *kin = (T *)scratch, *kout = (T *)(scratch + keys_bytes);
    int64_t *pin = (int64_t *)(scratch + 2 * keys_bytes);
    int64_t *pout = (int64_t *)(scratch + 2 * keys_bytes + pos_bytes);
    int64_t *off = (int64_t *)(scratch + 2 * keys_bytes + 2 * pos_bytes);

    k_lanes_in<T> LAUNCH(n)(kin, pin, x, len, inner, n, descending != 0);
    k_offsets LAUNCH(lanes + 1)(off, lanes, len);
    if ((err = cu_launched("sort")) < 0)
        goto out;
    err = fw__cu_error(cub::DeviceSegmentedSort::StableSortPairs(
                           tmp, tmp_bytes, kin, kout, pin, pout, n, lanes, off, off + 1, s),
                       "sort");
    if (err < 0)
        goto out;
    k_lanes_out<T> LAUNCH(lanes * k)(vals, idx, x, pout, len, inner, k, lanes);
    err = cu_launched("sort");
out:
    cu_scratch_free(tmp);
    cu_scratch_free(scratch);
    return err;
}

extern "C" int fw__cu_sort(fw_dtype dt, void *vals, int64_t *idx, const void *x, int64_t outer,
                           int64_t len, int64_t inner, int64_t k, int descending)
{
    if (outer * inner * len == 0 || k == 0)
        return 0;
    switch (dt) {
    case FW_FLOAT32:
        return sort_typed((float *)vals, idx, (const float *)x, outer, len, inner, k, descending);
    case FW_FLOAT64:
        return sort_typed((double *)vals, idx, (const double *)x, outer, len, inner, k,
                          descending);
    case FW_INT32:
        return sort_typed((int32_t *)vals, idx, (const int32_t *)x, outer, len, inner, k,
                          descending);
    case FW_INT64:
        return sort_typed((int64_t *)vals, idx, (const int64_t *)x, outer, len, inner, k,
                          descending);
    case FW_UINT8: case FW_BOOL:
        return sort_typed((uint8_t *)vals, idx, (const uint8_t *)x, outer, len, inner, k,
                          descending);
    default:
        return fw__cu_error_set(FW_EDTYPE, "sort: dtype %s not supported by the cuda kernels",
                                cu_dtype_name(dt));
    }
}
