/* main.c — the swadiff command line.  See README.md ("Command line"). */
#include <stdio.h>
#include "common.h"

int main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "swadiff %s: command line under construction\n", SWADIFF_VERSION);
    return SWA_EXIT_USAGE;
}
