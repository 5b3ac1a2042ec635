/* Placeholder until the module behind `eddy sandbox` lands. */
#include "cmd.h"

#include <stdio.h>

int cmd_sandbox(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eddy sandbox: not built yet\n");
    return 1;
}
