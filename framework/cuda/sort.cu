/*
 * sort.cu - the index family's lane sort on the device (fw_index_kernels.sort):
 * every lane (o, :, i) of x: (outer, len, inner) is copied out contiguous
 * as unsigned radix keys with its positions, sorted by CUB's stable
 * segmented sort (ascending), and the first k of each go back to
 * (outer, k, inner) with x's own values.
 *
 * The keys (sort_key) order as cpu/index.c's stable merge sort compares:
 * NaN is the largest and every NaN ties with every other, -0.0 ties with
 * 0.0, and descending complements the keys, so one stable ascending sort
 * keeps ties in their order in both directions. Keys are 32 bits for
 * float32, int32, uint8 and bool and 64 bits for float64 and int64: two
 * instantiations of CUB's sort (it dominates the plugin's build time).
 * Scratch: two keys and two positions per element (cudaMallocAsync).
 */
#include "cu_family_kernels.h"
#include "cu_kern.cuh"

#include <cub/device/device_segmented_sort.cuh>

/* An unsigned key whose order is v's order (see the file comment). */
template <typename T> struct sort_key_of;
template <> struct sort_key_of<float> {
    typedef uint32_t K;
    static __device__ __forceinline__ K get(float v)
    {
        uint32_t u = v != v ? 0x7fc00000u : v == 0 ? 0u : __float_as_uint(v);
        return (u & 0x80000000u) ? ~u : u | 0x80000000u;
    }
};
template <> struct sort_key_of<double> {
    typedef uint64_t K;
    static __device__ __forceinline__ K get(double v)
    {
        uint64_t u = v != v ? 0x7ff8000000000000ULL : v == 0 ? 0ULL
                   : (uint64_t)__double_as_longlong(v);
        return (u >> 63) ? ~u : u | (1ULL << 63);
    }
};
template <> struct sort_key_of<int32_t> {
    typedef uint32_t K;
    static __device__ __forceinline__ K get(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
};
template <> struct sort_key_of<int64_t> {
    typedef uint64_t K;
    static __device__ __forceinline__ K get(int64_t v) { return (uint64_t)v ^ (1ULL << 63); }
};
template <> struct sort_key_of<uint8_t> {
    typedef uint32_t K;
    static __device__ __forceinline__ K get(uint8_t v) { return v; }
};

/* keys/pos: lane l's element j at l * len + j. */
template <typename T, typename K>
__global__ void k_lanes_in(K *keys, int64_t *pos, const T *x, int64_t len, int64_t inner,
                           int64_t n, bool desc)
{
    CU_FOR(e, n) {
        int64_t l = e / len, j = e - l * len;
        int64_t o = l / inner, i = l - o * inner;
        K key = sort_key_of<T>::get(x[(o * len + j) * inner + i]);
        keys[e] = desc ? (K)~key : key;
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

/* Sort lanes of keys made by `fill_keys` (a launch over n elements);
 * pout: the sorted positions. */
template <typename K, typename F>
static int sort_lanes(int64_t lanes, int64_t len, F fill_keys, int64_t **pout_h, char **scratch_h)
{
    cudaStream_t s = fw__cu_stream();
    int64_t n = lanes * len;
    size_t keys_bytes = ((size_t)n * sizeof(K) + 255) / 256 * 256;
    size_t pos_bytes = (size_t)n * sizeof(int64_t);
    size_t off_bytes = (size_t)(lanes + 1) * sizeof(int64_t);
    size_t tmp_bytes = 0;
    char *scratch = NULL;
    void *tmp = NULL;
    int err;

    *scratch_h = NULL;
    err = fw__cu_error(cub::DeviceSegmentedSort::StableSortPairs(
                           NULL, tmp_bytes, (const K *)NULL, (K *)NULL, (const int64_t *)NULL,
                           (int64_t *)NULL, n, lanes, (const int64_t *)NULL,
                           (const int64_t *)NULL, s),
                       "sort");
    if (err < 0)
        return err;
    if ((err = cu_scratch((void **)&scratch, 2 * keys_bytes + 2 * pos_bytes + off_bytes, "sort")) <
        0)
        return err;
    *scratch_h = scratch;
    if ((err = cu_scratch(&tmp, tmp_bytes, "sort")) < 0)
        return err;
    K *kin = (K *)scratch, *kout = (K *)(scratch + keys_bytes);
    int64_t *pin = (int64_t *)(scratch + 2 * keys_bytes);
    int64_t *pout = (int64_t *)(scratch + 2 * keys_bytes + pos_bytes);
    int64_t *off = (int64_t *)(scratch + 2 * keys_bytes + 2 * pos_bytes);
    *pout_h = pout;

    fill_keys(kin, pin);
    k_offsets LAUNCH(lanes + 1)(off, lanes, len);
    if ((err = cu_launched("sort")) == 0)
        err = fw__cu_error(cub::DeviceSegmentedSort::StableSortPairs(
                               tmp, tmp_bytes, kin, kout, pin, pout, n, lanes, off, off + 1, s),
                           "sort");
    cu_scratch_free(tmp);
    return err;
}

template <typename T>
static int sort_typed(T *vals, int64_t *idx, const T *x, int64_t outer, int64_t len,
                      int64_t inner, int64_t k, int descending)
{
    typedef typename sort_key_of<T>::K K;
    int64_t lanes = outer * inner, n = lanes * len;
    int64_t *pout = NULL;
    char *scratch = NULL;
    bool desc = descending != 0;
    auto fill = [=](K *kin, int64_t *pin) {
        k_lanes_in<T, K> LAUNCH(n)(kin, pin, x, len, inner, n, desc);
    };
    int err = sort_lanes<K>(lanes, len, fill, &pout, &scratch);

    if (err == 0) {
        k_lanes_out<T> LAUNCH(lanes * k)(vals, idx, x, pout, len, inner, k, lanes);
        err = cu_launched("sort");
    }
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
