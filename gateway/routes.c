/* Every route table the gateway serves, in matching order. A new area adds
 * its table here and declares it in gw_int.h. */
#include "gw_int.h"

const gw_route *const gw__route_tables[] = {
    gw__routes_meta,
    gw__routes_auth,
    gw__routes_files,
    gw__routes_projects,
    gw__routes_quota,
    gw__routes_sched,
    gw__routes_kernels,
    gw__routes_terminals,
    gw__routes_jupyter,
    gw__routes_datasets,
    gw__routes_dataset_files,
    gw__routes_dataset_previews,
    gw__routes_competitions,
    gw__routes_deployments,
    gw__routes_serve,
    gw__routes_static,
    NULL,
};
