/*
 * datasets_int.h - private to gateway/: the JSON of datasets, versions and
 * files that every datasets route file (datasets_routes.c,
 * dataset_files_routes.c, dataset_preview_routes.c) answers with, so the
 * shapes are written once (datasets_json.c).
 */
#ifndef GW_DATASETS_INT_H
#define GW_DATASETS_INT_H

#include "gw_int.h"
#include "ds.h"

/* Where a kernel or job sees a dataset: /home/aistudio/data/<owner>-<slug>. */
#define GW_DS_MOUNT_ROOT "/home/aistudio/data"

/* {id, owner (username), owner_id, slug, name, description, license, tags,
 * visibility, latest_version, created_at, updated_at (RFC 3339), can_write}.
 * The owner's username is read through accounts/ (null when the user is
 * gone). NULL when out of memory. */
json_t *gw__ds_dataset_json(gw_server *srv, const ds_dataset *s);
/* {number, message, source (parsed JSON or null), size_bytes, file_count,
 * created_at, created_by, files (only when v->files is set)}. */
json_t *gw__ds_version_json(const ds_version *v);
/* {path, size, sha256, media_type}. */
json_t *gw__ds_file_json(const ds_file *f);
/* [file, ...] of a list (NULL: an empty array). */
json_t *gw__ds_files_json(const ds_file_list *l);
/* The owner's username into out (size >= 33); "" when the user is gone. */
void gw__ds_owner_name(char *out, size_t size, gw_server *srv, int64_t owner_id);

/* datasets_gc.c: ds_gc at start and every 10 minutes on a thread of its
 * own; stop joins it (NULL-safe). server.c starts it after ds_open and stops
 * it before ds_free. */
struct gw_ds_gc;
int  gw__ds_gc_start(struct gw_ds_gc **out, ds *d);
void gw__ds_gc_stop(struct gw_ds_gc *g);

#endif
