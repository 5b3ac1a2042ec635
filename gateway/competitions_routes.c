/* competitions_routes.c - see gw_int.h (gw__routes_competitions). */
#include "gw_int.h"

const gw_route gw__routes_competitions[] = {
    {NULL, NULL, NULL, 0, NULL},
};
