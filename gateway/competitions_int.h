/*
 * competitions_int.h - private to gateway/: the competitions routes'
 * shared pieces (competitions_json.c: bodies into comp_spec, structs into
 * JSON; competitions_routes.c: the routes) and the handle's start and stop
 * (server.c).
 *
 * Secrecy: nothing here reads or writes a private score. The only route that
 * returns one, GET .../submissions/{sid}/private, calls
 * comp_submission_private_get, which is ED_EPERM before end_at for everyone.
 */
#ifndef GW_COMPETITIONS_INT_H
#define GW_COMPETITIONS_INT_H

#include "gw_int.h"
#include "comp.h"

/* Open srv->competitions after the datasets (their in-use hook asks it),
 * recover what a crash left (comp_recover, one watchdog run) and start the
 * worker (scoring, the watchdog every 30 s; EDDY_COMP_WATCHDOG_MS overrides
 * it). Stop: comp_free (joins the worker) before ds_free; NULL-safe. */
int  gw__competitions_start(gw_server *srv);
void gw__competitions_stop(gw_server *srv);
/* competitions_runner.c: the thread that runs code submissions as
 * scheduler jobs; started once the scheduler is (server.c), stopped by
 * gw__competitions_stop. */
int  gw__competitions_runner_start(gw_server *srv);
void gw__competitions_runner_stop(gw_server *srv);

/* A create body (API.md) into `spec` (strings borrowed from `body` or in the
 * request arena). With `base` (PUT), fields the body leaves out keep base's
 * values. ED_EINVAL / ED_EUNPROC naming the field. */
int gw__comp_spec_parse(comp_spec *spec, gw_request *req, const json_t *body,
                        const comp_competition *base);

/* Responses (new references; NULL on out of memory). */
json_t *gw__comp_json(gw_request *req, const comp_competition *k);
json_t *gw__comp_submission_json(gw_request *req, const comp_submission *s);
json_t *gw__comp_team_json(gw_request *req, const comp_team *t);
json_t *gw__comp_entry_json(gw_request *req, const comp_board_entry *e);

/* "2026-12-05T10:00:00Z" (fraction and offset allowed) into UTC ms.
 * ED_EINVAL naming `name`. */
int gw__comp_time_parse(int64_t *out, const char *s, const char *name);

#endif
