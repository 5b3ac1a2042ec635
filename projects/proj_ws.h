/*
 * proj_ws.h - the workspace quota: each project's working tree
 * (<root>/<id>/, the kernel's /home/aistudio/work) is one disk-quota tree
 * (sandbox/sbx_disk.c) limited to its owner's tier's workspace_bytes, so a
 * write past it fails with ENOSPC/EDQUOT wherever it comes from (a kernel,
 * a job, the API). README.md "Workspace quota".
 *
 *     proj_root_open(&r, st, "/var/lib/eddy/projects", 0);
 *     proj_root_set_disk(r, disk);     // the scheduler's probed sbx_disk
 *     ...
 *     if ((err = proj_workspace_attach(r, uid, id)) < 0) ... // before a kernel binds the tree
 *
 * Without proj_root_set_disk (or with NULL) projects are plain directories
 * with no limit, as before.
 */
#ifndef PROJ_WS_H
#define PROJ_WS_H

#include "proj.h"

struct sbx_disk;

/* Use `disk` (borrowed; must outlive the root; NULL: no workspace quotas)
 * for project trees from now on, and remove what interrupted creates and
 * deletes left (a workspaces row whose project does not exist: its tree,
 * image and directory). Trees of existing projects are attached lazily, at
 * their first use. 0 or an ED_E* code (the sweep only logs). */
int proj_root_set_disk(proj_root *r, const struct sbx_disk *disk);

/* The mechanism workspaces use ("prjquota", "loop volume", "loop images",
 * "none"), or "off" when no disk was set. */
const char *proj_workspace_mechanism(proj_root *r);

/* The tier workspace limit of `user_id` (0: none). */
int proj_workspace_limit(int64_t *out, proj_root *r, int64_t user_id);

/* A tier's workspace_bytes (0: no limit). Set: 0 or 1 MiB..1 PiB, else
 * ED_EUNPROC naming the field; ED_ENOTFOUND for an unknown tier. Setting it
 * does not touch trees: call proj_workspace_sync(r, 0, tier) after. */
int proj_workspace_tier_get(int64_t *out, proj_root *r, const char *tier);
int proj_workspace_tier_set(proj_root *r, const char *tier, int64_t workspace_bytes);

/* Make sure project `id`'s tree is attached with its owner's current limit
 * (after a restart: mounted again; a project made before workspace quotas,
 * or whose tier had no limit, is converted into a tree first: its files and
 * .git copied, nothing lost on a crash). What a kernel start calls before
 * binding <root>/<id>. ED_ENOTFOUND / ED_EPERM as proj_get; ED_EUNPROC when
 * the owner's tier has a workspace limit and the host has no quota
 * mechanism (fail closed: the message says what is missing). */
int proj_workspace_attach(proj_root *r, int64_t user_id, const char *id);

/* Apply the current tier limits again to the trees of `user_id`'s projects
 * (user_id > 0) or of every owner in `tier` (tier != NULL): after an admin
 * changed a user's tier or a tier's workspace_bytes. Only trees attached by
 * this process are touched now (the others read the limit when they are
 * attached), so the cost is bounded by the projects in use. Failures are
 * logged; returns how many projects were updated, or an ED_E* code. */
int proj_workspace_sync(proj_root *r, int64_t user_id, const char *tier);

typedef struct proj_ws_item {
    char    id[PROJ_ID_LEN + 1];
    int64_t used_bytes;
} proj_ws_item;

typedef struct proj_ws_usage {
    int64_t       used_bytes;    /* sum over the user's own projects */
    int64_t       limit_bytes;   /* per project (the tier's workspace_bytes); 0: none */
    size_t        count;
    proj_ws_item *items;         /* one per owned project, newest first */
} proj_ws_usage;

/* `user_id`'s workspace usage: for an attached tree what its quota counts
 * now (files and .git, block-rounded), else the project's recorded size. */
int proj_workspace_usage(proj_ws_usage **out, proj_root *r, int64_t user_id);
void proj_ws_usage_free(proj_ws_usage *u);

/* ---- private to projects/ (workspace.c) -------------------------------- */

struct proj_ws;
void proj__ws_free(struct proj_ws *ws);

/* Attach project `id`'s tree (see proj_workspace_attach) if this process has
 * not yet; with the project's stripe held. 0 when there are no quotas. */
int proj__ws_attach(proj_root *r, const char *id);

/* A new project's directory <root>/<id>, made in place (empty, then a tree
 * with `owner`'s limit when there are quotas), after its workspaces row:
 * *disk_id. ED_EUNPROC when the tier has a limit and no mechanism. */
int proj__ws_prepare(proj_root *r, int64_t owner, const char *id, int64_t *disk_id);

/* Undo proj__ws_prepare (the project row was not committed), or remove a
 * deleted project's tree and directory (its row is gone): tree, directory,
 * a conversion's copy, then the workspaces row. Logs what it cannot do. */
void proj__ws_remove(proj_root *r, const char *id);

/* Inside the transaction that deletes the project row: make sure a
 * workspaces row exists (a project older than the quota has none) so a
 * crash before proj__ws_remove leaves something the next start sweeps. */
int proj__ws_mark(proj_root *r, const char *id);

#endif
