/* mutants.c — the table of named mutants (backends/mutants.h), built from
 * the X-macro so names, classes and descriptions live in one place.
 * Tested by tests/test_backend_registry.c. */
#include "backends/mutants.h"

#include <string.h>

static const swa_mutant_info mutant_table[SWA_MUTANT_COUNT] = {
#define SWA_MUTANT_INFO(e, name, cls, backends, what, origin) \
    {SWA_MUTANT_##e, name, cls, backends, what, origin},
    SWA_MUTANT_LIST(SWA_MUTANT_INFO)
#undef SWA_MUTANT_INFO
};

const swa_mutant_info *swa_mutant_get(swa_mutant m)
{
    if ((int)m < 0 || m >= SWA_MUTANT_COUNT)
        return NULL;
    return &mutant_table[m];
}

swa_mutant swa_mutant_by_name(const char *name)
{
    if (!name)
        return SWA_MUTANT_COUNT;
    for (int i = 0; i < SWA_MUTANT_COUNT; i++)
        if (strcmp(mutant_table[i].name, name) == 0)
            return (swa_mutant)i;
    return SWA_MUTANT_COUNT;
}
