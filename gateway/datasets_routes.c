/* datasets_routes.c - see gw_int.h (gw__routes_datasets). */
#include "gw_int.h"

const gw_route gw__routes_datasets[] = {
    {NULL, NULL, NULL, 0, NULL},
};
