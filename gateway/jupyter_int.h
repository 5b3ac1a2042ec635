/*
 * jupyter_int.h - private to the Jupyter Server API files of gateway/
 * (jupyter_routes.c: meta, kernelspecs, kernels, channels, sessions;
 * contents.c: /api/contents and the caller's default project).
 */
#ifndef JUPYTER_INT_H
#define JUPYTER_INT_H

#include "gw_int.h"
#include "kernel_hub.h"

/* The Jupyter Server REST API version these routes follow (GET /api). */
#define JUP_SERVER_VERSION "1.23.4"

/* The caller's default project (the root of /api/contents, and where kernels
 * start when no project is named): the caller's own project named "default",
 * created on first use. `out` gets its id. ED_EIO, ED_EQUOTA from projects/. */
int jup__default_project(char out[14], gw_request *req);

/* Start a kernel from a Jupyter body {name?, path?, env?: {EDDY_PROJECT_ID,
 * EDDY_RESOURCE}, project_id?} (body may be NULL). Errors of kh_kernel_start;
 * ED_ENOTFOUND for a kernelspec other than python3. */
int jup__kernel_start(kh_kernel *out, gw_request *req, const json_t *body);
/* A kernel as Jupyter shows it: {id, name, last_activity, execution_state,
 * connections} plus an "eddy" object. New reference, NULL when out of memory. */
json_t *jup__kernel_model(gw_request *req, const kh_kernel *k);
/* A v1.kernel.websocket.jupyter.org binary frame into a message object with
 * "channel" (buffers base64 in "buffers"). ED_EINVAL for a malformed frame. */
int jup__v1_decode(json_t **out, const uint8_t *b, size_t len);

/* Handlers. */
int jup__list_sessions(gw_request *req, gw_response *res);
int jup__create_session(gw_request *req, gw_response *res);
int jup__get_session(gw_request *req, gw_response *res);
int jup__update_session(gw_request *req, gw_response *res);
int jup__delete_session(gw_request *req, gw_response *res);
int jup__contents_get(gw_request *req, gw_response *res);
int jup__contents_put(gw_request *req, gw_response *res);
int jup__contents_post(gw_request *req, gw_response *res);
int jup__contents_patch(gw_request *req, gw_response *res);
int jup__contents_delete(gw_request *req, gw_response *res);

#endif
