/* Placeholder until the module behind `eddy serve` lands. */
#include "cmd.h"

#include <stdio.h>

int cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eddy serve: not built yet\n");
    return 1;
}
