/*
 * memory.c - device memory of the CUDA backend: one caching block pool per
 * device over cudaMalloc (block_pool.c), fresh segments scrubbed with
 * cudaMemsetAsync on the compute stream, and host transfers through pinned
 * staging buffers.
 *
 * Host -> device: the bytes are copied into one of two pinned buffers and
 * queued (cudaMemcpyAsync on the compute stream); the call returns without
 * waiting, since the source was already copied out. A buffer is reused
 * once the event recorded after its last copy has completed.
 * Device -> host waits for the stream: that is where Python needs values
 * (numpy(), item(), printing); it also reports earlier asynchronous errors.
 */
#include "cu_runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define STAGE_BYTES ((size_t)4 << 20)
#define DIRECT_D2H_BYTES ((size_t)32 << 20)

static fw_block_pool pools[FW_CU_MAX_DEVICES];
static int pool_index[FW_CU_MAX_DEVICES];

typedef struct staging {
    pthread_mutex_t lock;
    void *buf[2];
    cudaEvent_t ev[2];
    bool pending[2];
    int next;
} staging;

static staging stages[FW_CU_MAX_DEVICES];

/* ---- the pool's driver callbacks --------------------------------------------------- */

static void *drv_alloc(void *ctx, size_t n)
{
    int d = *(const int *)ctx;
    void *p = NULL;
    int prev = -1;

    (void)cudaGetDevice(&prev);
    if (prev != d)
        (void)cudaSetDevice(d);
    if (cudaMalloc(&p, n) != cudaSuccess) {
        (void)cudaGetLastError();         /* out of memory is not sticky */
        p = NULL;
    }
    if (prev != d && prev >= 0)
        (void)cudaSetDevice(prev);
    return p;
}

static void drv_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    /* cudaFree waits for the device: no queued work still uses the segment */
    if (cudaFree(p) != cudaSuccess)
        (void)cudaGetLastError();
}

static int drv_scrub(void *ctx, void *p, size_t n)
{
    int d = *(const int *)ctx;
    if (cudaMemsetAsync(p, 0, n, fw__cu_stream_of(d)) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return 0;
}

int fw__cu_pools_init(int ndev)
{
    for (int d = 0; d < ndev && d < FW_CU_MAX_DEVICES; d++) {
        fw_bp_ops ops = {&pool_index[d], drv_alloc, drv_free, drv_scrub};
        pool_index[d] = d;
        if (fw_bp_init(&pools[d], &ops) != 0)
            return -1;
        if (pthread_mutex_init(&stages[d].lock, NULL) != 0)
            return -1;
    }
    return 0;
}

void *fw__cu_alloc(size_t nbytes)
{
    int d = fw__cu_device();
    return fw_bp_alloc(&pools[d], nbytes ? nbytes : 1);
}

void fw__cu_free(void *p, size_t nbytes)
{
    int d = fw__cu_device();

    (void)nbytes;
    if (p == NULL || fw_bp_free(&pools[d], p))
        return;
    for (int i = 0; i < fw__cu_ndev; i++)      /* made while another device was current */
        if (i != d && fw_bp_free(&pools[i], p))
            return;
}

void fw__cu_pool_stats(int index, fw_bp_stats *out)
{
    fw_bp_stats_get(&pools[index], out);
}

void fw__cu_pool_reset_peak(int index) { fw_bp_reset_peak(&pools[index]); }

int fw__cu_pool_empty_cache(void)
{
    for (int d = 0; d < fw__cu_ndev; d++)
        fw_bp_empty_cache(&pools[d]);
    return 0;
}

/* ---- copies ------------------------------------------------------------------------- */

/* The staging buffers of device d (locked by the caller), made on first use. */
static int stage_ready(staging *s, int d)
{
    cudaError_t e;

    if (s->buf[0])
        return 0;
    (void)d;
    for (int i = 0; i < 2; i++) {
        if ((e = cudaHostAlloc(&s->buf[i], STAGE_BYTES, cudaHostAllocPortable)) != cudaSuccess)
            return fw__cu_error(e, "copy: pinned staging buffer");
        if ((e = cudaEventCreateWithFlags(&s->ev[i], cudaEventDisableTiming)) != cudaSuccess)
            return fw__cu_error(e, "copy: staging event");
    }
    return 0;
}

static int to_device(char *dst, const char *src, size_t n)
{
    int d = fw__cu_device();
    cudaStream_t st = fw__cu_stream_of(d);
    staging *s = &stages[d];
    cudaError_t e = cudaSuccess;
    int err;

    pthread_mutex_lock(&s->lock);
    if ((err = stage_ready(s, d)) < 0)
        goto out;
    for (size_t off = 0; off < n; off += STAGE_BYTES) {
        size_t len = n - off < STAGE_BYTES ? n - off : STAGE_BYTES;
        int i = s->next;
        s->next ^= 1;
        if (s->pending[i] && (e = cudaEventSynchronize(s->ev[i])) != cudaSuccess)
            break;
        s->pending[i] = false;
        memcpy(s->buf[i], src + off, len);
        if ((e = cudaMemcpyAsync(dst + off, s->buf[i], len, cudaMemcpyHostToDevice, st)) !=
            cudaSuccess)
            break;
        if ((e = cudaEventRecord(s->ev[i], st)) != cudaSuccess)
            break;
        s->pending[i] = true;
    }
    err = fw__cu_error(e, "copy to cuda");
out:
    pthread_mutex_unlock(&s->lock);
    return err;
}

static int to_host(char *dst, const char *src, size_t n)
{
    int d = fw__cu_device();
    cudaStream_t st = fw__cu_stream_of(d);
    staging *s = &stages[d];
    cudaError_t e = cudaSuccess;
    int err;

    if (n >= DIRECT_D2H_BYTES) {          /* large: the driver's own staging */
        e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, st);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(st);
        return fw__cu_error(e, "copy to host");
    }
    pthread_mutex_lock(&s->lock);
    if ((err = stage_ready(s, d)) < 0)
        goto out;
    for (size_t off = 0; off < n; off += STAGE_BYTES) {
        size_t len = n - off < STAGE_BYTES ? n - off : STAGE_BYTES;
        int i = s->next;
        s->next ^= 1;
        if (s->pending[i] && (e = cudaEventSynchronize(s->ev[i])) != cudaSuccess)
            break;
        s->pending[i] = false;
        if ((e = cudaMemcpyAsync(s->buf[i], src + off, len, cudaMemcpyDeviceToHost, st)) !=
            cudaSuccess)
            break;
        if ((e = cudaStreamSynchronize(st)) != cudaSuccess)
            break;
        memcpy(dst + off, s->buf[i], len);
    }
    if (n == 0)
        e = cudaStreamSynchronize(st);
    err = fw__cu_error(e, "copy to host");
out:
    pthread_mutex_unlock(&s->lock);
    return err;
}

int fw__cu_copy(void *dst, fw_device dst_dev, const void *src, fw_device src_dev,
                size_t nbytes)
{
    if (dst_dev == FW_CUDA && src_dev == FW_CUDA) {
        if (nbytes == 0 || dst == src)
            return 0;
        return fw__cu_error(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, fw__cu_stream()),
                            "copy");
    }
    if (dst_dev == FW_CUDA && src_dev == FW_CPU)
        return nbytes ? to_device(dst, src, nbytes) : 0;
    if (dst_dev == FW_CPU && src_dev == FW_CUDA)
        return to_host(dst, src, nbytes);
    return fw__cu_error_set(FW_EDEVICE, "copy: the CUDA backend copies only to or from cuda");
}

int fw__cu_memset(void *dst, int byte, size_t nbytes)
{
    if (nbytes == 0)
        return 0;
    return fw__cu_error(cudaMemsetAsync(dst, byte, nbytes, fw__cu_stream()), "memset");
}
