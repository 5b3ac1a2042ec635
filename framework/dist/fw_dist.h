/* fw_dist.h: the CPU communicator of paddle.distributed (issue 20).
 *
 * Ranks of one job connect in a full mesh of TCP sockets (loopback when all
 * ranks share a host); collectives run over any ordered subset of the ranks
 * (a group), as rings: all-reduce is a reduce-scatter followed by an
 * all-gather, each step sending one segment to the next rank while receiving
 * one from the previous rank, reduced piece by piece as the bytes arrive.
 *
 * Every function returns 0 or a negative FWD_E* code after setting a message
 * that fwd_error_last() reads (thread-local). A peer that dies closes its
 * sockets, so its neighbours fail at once ("rank 3 closed the connection");
 * one that hangs makes them fail after the communicator's timeout ("timed out
 * after 30000 ms waiting for rank 3").
 *
 * A communicator is used by one thread at a time (paddle.distributed runs
 * every collective of a process on one worker thread, in program order, which
 * is what keeps the ranks' sequences of collectives matched).
 * The library is loaded with ctypes by paddle/distributed/comm.py. */
#ifndef FW_DIST_H
#define FW_DIST_H

#include <stddef.h>
#include <stdint.h>

#define FWD_EINVAL   (-1)   /* bad argument */
#define FWD_ENOMEM   (-2)
#define FWD_ECONNECT (-3)   /* could not connect / accept during setup */
#define FWD_ETIMEOUT (-4)   /* a peer did not answer within the timeout */
#define FWD_EPEER    (-5)   /* a peer closed its connection or failed */
#define FWD_EIO      (-6)   /* socket error */

/* dtypes (paddle's dtype codes of _C.dtype_code where they exist) */
#define FWD_FLOAT32 0
#define FWD_FLOAT64 1
#define FWD_INT32   4
#define FWD_INT64   5

/* reduce ops: paddle.distributed.ReduceOp's values */
#define FWD_SUM  0
#define FWD_MAX  1
#define FWD_MIN  2
#define FWD_PROD 3
#define FWD_AVG  4

typedef struct fwd_comm fwd_comm;

/* Connects rank `rank` of `nranks` to every other rank. endpoints is
 * "host:port,host:port,..." with one entry per rank (PADDLE_TRAINER_ENDPOINTS);
 * this rank listens on its own entry's port. timeout_ms bounds the setup and
 * every later wait for a peer. Caller frees with fwd_comm_free(). */
int fwd_comm_init(fwd_comm **out, int rank, int nranks, const char *endpoints,
                  int timeout_ms);
void fwd_comm_free(fwd_comm *c);            /* NULL-safe; closes the sockets */
int fwd_comm_rank(const fwd_comm *c);
int fwd_comm_size(const fwd_comm *c);
void fwd_comm_set_timeout(fwd_comm *c, int timeout_ms);

/* In every collective, ranks[0..nr-1] lists the group's global ranks in group
 * order (every member passes the same list, which must hold the caller);
 * ranks == NULL means all ranks 0..nranks-1. */

/* buf[0..count) of dtype is replaced by op over all members' buffers. */
int fwd_all_reduce(fwd_comm *c, const int *ranks, int nr, void *buf, size_t count,
                   int dtype, int op);
/* bytes of buf of the member with group index root go to every member. */
int fwd_broadcast(fwd_comm *c, const int *ranks, int nr, void *buf, size_t bytes,
                  int root);
/* out[i*bytes..] receives member i's in (out holds nr*bytes; in may lie in
 * out at this member's slot). */
int fwd_all_gather(fwd_comm *c, const int *ranks, int nr, const void *in, void *out,
                   size_t bytes);
/* in holds nr*count elements; out (count elements) receives op over the
 * members' in[i*count..] where i is this member's group index. */
int fwd_reduce_scatter(fwd_comm *c, const int *ranks, int nr, const void *in, void *out,
                       size_t count, int dtype, int op);
/* Returns once every member has entered it. */
int fwd_barrier(fwd_comm *c, const int *ranks, int nr);
/* Point to point: bytes of buf to / from global rank peer (the peer posts
 * the matching call with the same size). */
int fwd_send(fwd_comm *c, int peer, const void *buf, size_t bytes);
int fwd_recv(fwd_comm *c, int peer, void *buf, size_t bytes);

const char *fwd_error_last(void);           /* this thread's last message */

/* ---- NCCL (nccl.c): the same collectives on CUDA device memory ------------
 * libnccl.so.2 and libcudart.so are opened with dlopen at fwd_nccl_init, so
 * the library builds and loads without CUDA; there FWD_EUNAVAIL says why.
 * A group's NCCL communicator is set up over the CPU communicator (rank
 * ranks[0] makes the unique id and broadcasts it). Buffers are device
 * pointers on `device`; every call enqueues on the default stream and waits
 * for it. Untested here: it runs only where two GPUs exist. */
#define FWD_EUNAVAIL (-7)   /* NCCL or the CUDA runtime is not available */
#define FWD_FLOAT16  2
#define FWD_BFLOAT16 3
typedef struct fwd_nccl fwd_nccl;
int fwd_nccl_init(fwd_nccl **out, fwd_comm *cpu, const int *ranks, int nr, int device);
void fwd_nccl_free(fwd_nccl *n);            /* NULL-safe */
int fwd_nccl_all_reduce(fwd_nccl *n, void *buf, size_t count, int dtype, int op);
int fwd_nccl_broadcast(fwd_nccl *n, void *buf, size_t count, int dtype, int root);
int fwd_nccl_all_gather(fwd_nccl *n, const void *in, void *out, size_t count, int dtype);
int fwd_nccl_reduce_scatter(fwd_nccl *n, const void *in, void *out, size_t count, int dtype, int op);

#endif
