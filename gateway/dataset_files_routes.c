/* dataset_files_routes.c - see gw_int.h (gw__routes_dataset_files). */
#include "gw_int.h"

const gw_route gw__routes_dataset_files[] = {
    {NULL, NULL, NULL, 0, NULL},
};
