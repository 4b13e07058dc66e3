/* ref_exp.c — the 2^(j/128) table of ref_exp.h, computed once in long
 * double (64-bit significand on x86) and split into a double hi part and
 * the double nearest to the rest, so hi + lo carries ~64 bits.
 * Tested by tests/test_reference.c (ref_exp suite). */
#include "reference/ref_exp.h"

#include <pthread.h>

double ref_exp_table[REF_EXP_TABLE_SIZE][2];
static pthread_once_t g_exp_once = PTHREAD_ONCE_INIT;

static void ref_exp_fill(void)
{
    for (int j = 0; j < REF_EXP_TABLE_SIZE; j++) {
        long double v = exp2l((long double)j / REF_EXP_TABLE_SIZE);
        ref_exp_table[j][0] = (double)v;
        ref_exp_table[j][1] = (double)(v - (long double)ref_exp_table[j][0]);
    }
}

void ref_exp_init(void) { pthread_once(&g_exp_once, ref_exp_fill); }
