/*
 * dataset_mounts.h - the gateway's glue between datasets/ and the scheduler
 * (dataset_mounts.c): the resolver a start asks what to mount, the in-use
 * hook a delete asks, and the JSON of what a job or kernel mounts.
 */
#ifndef GW_DATASET_MOUNTS_H
#define GW_DATASET_MOUNTS_H

#include "gw_int.h"
#include "ds.h"
#include "sched.h"

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

/* One mount of version `version` of dataset `dataset_id` as user `user`
 * (who must be able to read it) sees it: name "<owner>/<slug>", its tree
 * built. For work the platform starts with that user's authority on someone
 * else's behalf (a code competition's hidden inputs, read as the host).
 * ED_ENOTFOUND, ED_EUNPROC, ED_EIO. */
int gw__dataset_version_mount(sched_mount *out, gw_server *srv, int64_t user, const char *dataset_id,
                              int64_t version);

/* [{dataset_id, name, version, path}] of what job `job_id` mounts (a new
 * reference; [] when none or on error). */
json_t *gw__job_datasets_json(gw_server *srv, int64_t job_id);

#endif
