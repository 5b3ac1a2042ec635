/*
 * plan.c - memory planning (fw_graph_plan_memory).
 *
 * Each intermediate value lives from the step of the node that writes it to
 * the step of its last reader (graph outputs to the end). Offsets in one
 * arena are assigned greedily, largest buffer first, at the lowest 64-byte
 * aligned offset that overlaps no placed buffer whose lifetime overlaps; the
 * arena's size is the planned peak. The executor frees each buffer after its
 * last reader (exec.c), so the allocator's cache realises the same reuse.
 */
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"

typedef struct {
    int64_t size, off;
    int first, last;
} buf;

static int by_size_desc(const void *a, const void *b)
{
    const buf *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    return x->first - y->first;
}

static int64_t align64(int64_t n) { return (n + 63) & ~(int64_t)63; }

int fw_graph_plan_memory(fw_graph_plan *plan, const fw_graph *g, fw_tensor *const *inputs)
{
    int64_t *sizes = NULL;
    int *first = NULL, *last = NULL;
    buf *bufs = NULL;
    fw_tensor *outs[FW_GRAPH_MAX_IO];
    int nb = 0, step = 0, err;

    if (plan == NULL || g == NULL)
        return fw_error_set(FW_EINVAL, "graph plan: NULL argument");
    memset(plan, 0, sizeof(*plan));
    sizes = calloc((size_t)g->nvalues, sizeof(int64_t));
    first = malloc((size_t)g->nvalues * sizeof(int));
    last = malloc((size_t)g->nvalues * sizeof(int));
    bufs = calloc((size_t)g->nvalues, sizeof(buf));
    if (sizes == NULL || first == NULL || last == NULL || bufs == NULL) {
        err = fw_error_set(FW_ENOMEM, "graph plan");
        goto done;
    }
    if ((err = fw__graph_run_sized(g, inputs, outs, sizes)) < 0)
        goto done;
    for (int o = 0; o < g->nout; o++)
        fw_tensor_unref(outs[o]);
    for (int v = 0; v < g->nvalues; v++)
        first[v] = last[v] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const g_node *n = &g->nodes[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                last[n->in[k]] = step;
        first[n->out] = step;
        if (last[n->out] < step)
            last[n->out] = step;
        step++;
    }
    for (int o = 0; o < g->nout; o++)
        last[g->out[o]] = step;
    for (int v = 0; v < g->nvalues; v++)
        if (g->values[v].kind == GV_INTER && first[v] >= 0)
            bufs[nb++] = (buf){ align64(sizes[v]), 0, first[v], last[v] };
    for (int t = 0; t <= step; t++) {
        int64_t live = 0;
        for (int k = 0; k < nb; k++)
            if (bufs[k].first <= t && t <= bufs[k].last)
                live += bufs[k].size;
        if (live > plan->peak_live_bytes)
            plan->peak_live_bytes = live;
    }
    qsort(bufs, (size_t)nb, sizeof(buf), by_size_desc);
    for (int k = 0; k < nb; k++) {
        int64_t off = 0;
        bool moved = true;
        /* bump past every placed, time-overlapping buffer we collide with */
        while (moved) {
            moved = false;
            for (int j = 0; j < k; j++) {
                const buf *p = &bufs[j];
                if (p->last < bufs[k].first || bufs[k].last < p->first)
                    continue;
                if (off < p->off + p->size && p->off < off + bufs[k].size) {
                    off = p->off + p->size;
                    moved = true;
                }
            }
        }
        bufs[k].off = off;
        if (off + bufs[k].size > plan->arena_bytes)
            plan->arena_bytes = off + bufs[k].size;
        plan->total_bytes += bufs[k].size;
    }
    plan->buffers = nb;
done:
    free(sizes);
    free(first);
    free(last);
    free(bufs);
    return err;
}
