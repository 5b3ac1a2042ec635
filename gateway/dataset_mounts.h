/*
 * dataset_mounts.h - the gateway's glue between datasets/ and the scheduler
 * (dataset_mounts.c): the resolver a start asks what to mount, the in-use
 * hook a delete asks, and the JSON of what a job or kernel mounts.
 */
#ifndef GW_DATASET_MOUNTS_H
#define GW_DATASET_MOUNTS_H

#include "gw_int.h"
#include "ds.h"

#include <jansson.h>
#include <stdint.h>

/* Install both hooks (after sched_open, with srv->datasets open): the
 * scheduler's mounts resolver and the datasets' in-use hook. */
void gw__dataset_mounts_install(gw_server *srv);

/* More answers to "is this version in use?" (competitions: a version a
 * competition uses). The installed hook asks the scheduler first (queued
 * and running jobs and kernels), then each function added here in order;
 * the first that answers 1 gives the reason. Add before serving (at most
 * 4); not thread-safe against a delete running meanwhile. ED_EINVAL past 4. */
int gw__dataset_in_use_add(ds_in_use_fn fn, void *payload);

/* [{dataset_id, name, version, path}] of what job `job_id` mounts (a new
 * reference; [] when none or on error). */
json_t *gw__job_datasets_json(gw_server *srv, int64_t job_id);

#endif
