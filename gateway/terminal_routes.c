/* terminal_routes.c - terminals: a shell in a kernel's sandbox, over REST,
 * Jupyter Server's /api/terminals and a WebSocket. */
#include "gw_int.h"

const gw_route gw__routes_terminals[] = {
    {NULL, NULL, NULL, 0, NULL},
};
