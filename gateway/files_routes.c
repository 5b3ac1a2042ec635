/* files_routes.c - changes to a project's working tree beyond one file's
 * bytes: rename or move, and new folders (the notebook's file browser). */
#include "gw_int.h"

const gw_route gw__routes_files[] = {
    {NULL, NULL, NULL, 0, NULL},
};
