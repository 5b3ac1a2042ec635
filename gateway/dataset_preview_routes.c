/* dataset_preview_routes.c - see gw_int.h (gw__routes_dataset_previews). */
#include "gw_int.h"

const gw_route gw__routes_dataset_previews[] = {
    {NULL, NULL, NULL, 0, NULL},
};
