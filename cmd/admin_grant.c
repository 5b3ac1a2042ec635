/* Placeholder until quota/ lands: `eddy admin grant`. */
#include "cmd.h"

#include <stdio.h>

int cmd_admin_grant(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eddy admin grant: not built yet\n");
    return 1;
}
