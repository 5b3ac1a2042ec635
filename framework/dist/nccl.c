/* nccl.c: the NCCL communicator (see fw_dist.h), over dlopen'ed libnccl and
 * libcudart so that nothing here needs CUDA headers or libraries to build.
 * The few NCCL/CUDA declarations below are the stable C ABI of NCCL 2.x. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fw_dist.h"
#include "fwd_int.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } nccl_uid;      /* ncclUniqueId */
typedef void *nccl_comm_t;                             /* ncclComm_t */

typedef struct {
    int (*get_unique_id)(nccl_uid *);
    int (*comm_init_rank)(nccl_comm_t *, int, nccl_uid, int);
    int (*comm_destroy)(nccl_comm_t);
    int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
    int (*broadcast)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
    int (*all_gather)(const void *, void *, size_t, int, nccl_comm_t, void *);
    int (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
    const char *(*error_string)(int);
    int (*set_device)(int);
    int (*stream_sync)(void *);
    const char *(*cuda_error_string)(int);
} nccl_api;

struct fwd_nccl {
    nccl_comm_t comm;
    int device;
};

static nccl_api api;
static int api_state;            /* 0 unknown, 1 loaded, -1 unavailable */
static char api_why[256];


static int load(void)
{
    void *n, *c;
    if (api_state == 1)
        return 0;
    if (api_state == -1)
        return fwd__error_set(FWD_EUNAVAIL, "%s", api_why);
    if ((n = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL)) == NULL ||
        (c = dlopen("libcudart.so", RTLD_NOW | RTLD_GLOBAL)) == NULL) {
        snprintf(api_why, sizeof(api_why), "NCCL is not available: %s", dlerror());
        api_state = -1;
        return fwd__error_set(FWD_EUNAVAIL, "%s", api_why);
    }
#define SYM(lib, field, name) \
    if ((*(void **)&api.field = dlsym(lib, name)) == NULL) goto missing
    SYM(n, get_unique_id, "ncclGetUniqueId");
    SYM(n, comm_init_rank, "ncclCommInitRank");
    SYM(n, comm_destroy, "ncclCommDestroy");
    SYM(n, all_reduce, "ncclAllReduce");
    SYM(n, broadcast, "ncclBroadcast");
    SYM(n, all_gather, "ncclAllGather");
    SYM(n, reduce_scatter, "ncclReduceScatter");
    SYM(n, error_string, "ncclGetErrorString");
    SYM(c, set_device, "cudaSetDevice");
    SYM(c, stream_sync, "cudaStreamSynchronize");
    SYM(c, cuda_error_string, "cudaGetErrorString");
#undef SYM
    api_state = 1;
    return 0;
missing:
    snprintf(api_why, sizeof(api_why), "NCCL is not available: %s", dlerror());
    api_state = -1;
    return fwd__error_set(FWD_EUNAVAIL, "%s", api_why);
}

/* fw_dist codes -> ncclDataType_t / ncclRedOp_t */
static int nccl_dtype(int d)
{
    switch (d) {
    case FWD_FLOAT32: return 7;
    case FWD_FLOAT64: return 8;
    case FWD_INT32: return 2;
    case FWD_INT64: return 4;
    case FWD_FLOAT16: return 6;
    case FWD_BFLOAT16: return 9;
    default: return -1;
    }
}

static int nccl_op(int op)
{
    static const int map[] = { 0 /* sum */, 2 /* max */, 3 /* min */, 1 /* prod */, 4 /* avg */ };
    return op >= FWD_SUM && op <= FWD_AVG ? map[op] : -1;
}

static int check(int rc, const char *what)
{
    if (rc != 0)
        return fwd__error_set(FWD_EPEER, "%s: %s", what, api.error_string(rc));
    return 0;
}

static int sync_stream(const char *what)
{
    int rc = api.stream_sync(NULL);
    if (rc != 0)
        return fwd__error_set(FWD_EIO, "%s: %s", what, api.cuda_error_string(rc));
    return 0;
}

int fwd_nccl_init(fwd_nccl **out, fwd_comm *cpu, const int *ranks, int nr, int device)
{
    nccl_uid uid;
    int err, me = -1, n;
    fwd_nccl *c;

    *out = NULL;
    if (cpu == NULL)
        return fwd__error_set(FWD_EINVAL, "fwd_nccl_init needs the CPU communicator");
    if ((err = load()) < 0)
        return err;
    n = ranks ? nr : fwd_comm_size(cpu);
    for (int i = 0; i < n; i++)
        if ((ranks ? ranks[i] : i) == fwd_comm_rank(cpu))
            me = i;
    if (me < 0)
        return fwd__error_set(FWD_EINVAL, "rank %d is not a member of this group", fwd_comm_rank(cpu));
    if ((err = api.set_device(device)) != 0)
        return fwd__error_set(FWD_EINVAL, "cudaSetDevice(%d): %s", device, api.cuda_error_string(err));
    memset(&uid, 0, sizeof(uid));
    if (me == 0 && (err = check(api.get_unique_id(&uid), "ncclGetUniqueId")) < 0)
        return err;
    if ((err = fwd_broadcast(cpu, ranks, nr, &uid, sizeof(uid), 0)) < 0)
        return err;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return fwd__error_set(FWD_ENOMEM, "nccl communicator");
    c->device = device;
    if ((err = check(api.comm_init_rank(&c->comm, n, uid, me), "ncclCommInitRank")) < 0) {
        free(c);
        return err;
    }
    *out = c;
    return 0;
}

void fwd_nccl_free(fwd_nccl *n)
{
    if (n == NULL)
        return;
    if (n->comm)
        api.comm_destroy(n->comm);
    free(n);
}

static int args(int dtype, int op, int *nd, int *no)
{
    if ((*nd = nccl_dtype(dtype)) < 0)
        return fwd__error_set(FWD_EINVAL, "dtype code %d is not supported by NCCL", dtype);
    if ((*no = nccl_op(op)) < 0)
        return fwd__error_set(FWD_EINVAL, "reduce op %d is not one of SUM, MAX, MIN, PROD, AVG", op);
    return 0;
}

int fwd_nccl_all_reduce(fwd_nccl *n, void *buf, size_t count, int dtype, int op)
{
    int nd = 0, no = 0, err;
    if ((err = args(dtype, op, &nd, &no)) < 0 ||
        (err = check(api.all_reduce(buf, buf, count, nd, no, n->comm, NULL), "ncclAllReduce")) < 0)
        return err;
    return sync_stream("ncclAllReduce");
}

int fwd_nccl_broadcast(fwd_nccl *n, void *buf, size_t count, int dtype, int root)
{
    int nd = 0, no = 0, err;
    if ((err = args(dtype, FWD_SUM, &nd, &no)) < 0 ||
        (err = check(api.broadcast(buf, buf, count, nd, root, n->comm, NULL), "ncclBroadcast")) < 0)
        return err;
    return sync_stream("ncclBroadcast");
}

int fwd_nccl_all_gather(fwd_nccl *n, const void *in, void *out, size_t count, int dtype)
{
    int nd = 0, no = 0, err;
    if ((err = args(dtype, FWD_SUM, &nd, &no)) < 0 ||
        (err = check(api.all_gather(in, out, count, nd, n->comm, NULL), "ncclAllGather")) < 0)
        return err;
    return sync_stream("ncclAllGather");
}

int fwd_nccl_reduce_scatter(fwd_nccl *n, const void *in, void *out, size_t count, int dtype, int op)
{
    int nd = 0, no = 0, err;
    if ((err = args(dtype, op, &nd, &no)) < 0 ||
        (err = check(api.reduce_scatter(in, out, count, nd, no, n->comm, NULL), "ncclReduceScatter")) < 0)
        return err;
    return sync_stream("ncclReduceScatter");
}
