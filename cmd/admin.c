/* Placeholder until the module behind `eddy admin` lands. */
#include "cmd.h"

#include <stdio.h>

int cmd_admin(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eddy admin: not built yet\n");
    return 1;
}
