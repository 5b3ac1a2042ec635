/*
 * jupyter_int.h - private to the Jupyter Server API files of gateway/:
 * jupyter_routes.c (meta, kernelspecs, kernels, the route table),
 * jupyter_channels.c (the channels WebSocket), jupyter_sessions.c
 * (/api/sessions) and contents.c (/api/contents and the caller's default
 * project). Prefix gw__jupyter_ (STYLE.md: the gateway's internal names).
 */
#ifndef JUPYTER_INT_H
#define JUPYTER_INT_H

#include "gw_int.h"
#include "kh.h"

/* The Jupyter Server REST API version these routes follow (GET /api). */
#define GW_JUPYTER_SERVER_VERSION "1.23.4"

/* gw_respond_json(res, status, body), or ED_ENOMEM when body is NULL (its
 * building ran out of memory). Steals body. */
int gw__jupyter_respond(gw_response *res, int status, json_t *body);

/* The caller's default project (the root of /api/contents, and where kernels
 * start when no project is named): the caller's own project named "default",
 * created on first use. `out` gets its id. ED_EIO, ED_EQUOTA from projects/. */
int gw__jupyter_default_project(char out[14], gw_request *req);

/* Start a kernel from a Jupyter body {name?, path?, env?: {EDDY_PROJECT_ID,
 * EDDY_RESOURCE}, project_id?} (body may be NULL). Errors of kh_kernel_start;
 * ED_ENOTFOUND for a kernelspec other than python3. */
int gw__jupyter_kernel_start(kh_kernel *out, gw_request *req, const json_t *body);
/* A kernel as Jupyter shows it: {id, name, last_activity, execution_state,
 * connections} plus an "eddy" object. New reference, NULL when out of memory. */
json_t *gw__jupyter_kernel_model(gw_request *req, const kh_kernel *k);
/* A v1.kernel.websocket.jupyter.org binary frame into a message object with
 * "channel" (buffers base64 in "buffers"). ED_EINVAL for a malformed frame. */
int gw__jupyter_v1_decode(json_t **out, const uint8_t *b, size_t len);

/* Handlers. */
int gw__jupyter_kernel_channels(gw_request *req, gw_response *res);
int gw__jupyter_list_sessions(gw_request *req, gw_response *res);
int gw__jupyter_create_session(gw_request *req, gw_response *res);
int gw__jupyter_get_session(gw_request *req, gw_response *res);
int gw__jupyter_update_session(gw_request *req, gw_response *res);
int gw__jupyter_delete_session(gw_request *req, gw_response *res);
int gw__jupyter_contents_get(gw_request *req, gw_response *res);
int gw__jupyter_contents_put(gw_request *req, gw_response *res);
int gw__jupyter_contents_post(gw_request *req, gw_response *res);
int gw__jupyter_contents_patch(gw_request *req, gw_response *res);
int gw__jupyter_contents_delete(gw_request *req, gw_response *res);

#endif
