/* case.c — operations on the swa_case record (free, copy, filters,
 * totals) and the backend name table derived from SWA_BACKEND_LIST.
 *
 * Test: tests/test_case_sweep.c (filters, totals, the name table against
 * the schema's enum). */
#include "core/case.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * backend names */

const char *const swa_invariance_names[] = {"batch", "pages", "split", NULL};

unsigned swa_invariance_flag_by_name(const char *name)
{
    for (int i = 0; name && swa_invariance_names[i]; i++)
        if (strcmp(name, swa_invariance_names[i]) == 0)
            return 1u << i;
    return 0;
}

void swa_invariance_names_text(char *buf, size_t n)
{
    snprintf(buf, n, "\"batch\", \"pages\" or \"split\"");
}

size_t swa_invariance_format(unsigned set, char *buf, size_t n)
{
    size_t k = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; swa_invariance_names[i]; i++)
        if ((set & (1u << i)) && k < n)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? "," : "", swa_invariance_names[i]);
    return k < n ? k : (n ? n - 1 : 0);
}

const char *const swa_dist_names[] = {
    [SWA_DIST_NORMAL] = "normal", [SWA_DIST_UNIFORM] = "uniform", [SWA_DIST_POISON] = "poison",
    [SWA_DIST_EDGE] = "edge", [SWA_DIST_EDGE + 1] = NULL,
};

#define SWA_X_NAME(e, n, d) n,
const char *const swa_backend_names[] = {SWA_BACKEND_LIST(SWA_X_NAME) NULL};
#undef SWA_X_NAME

unsigned swa_backend_flag_by_name(const char *name)
{
    for (int i = 0; name && i < SWA_BACKEND_COUNT; i++)
        if (strcmp(swa_backend_names[i], name) == 0)
            return 1u << i;
    return 0;
}

const char *swa_backend_flag_name(unsigned flag)
{
    for (int i = 0; i < SWA_BACKEND_COUNT; i++)
        if (flag == 1u << i)
            return swa_backend_names[i];
    return NULL;
}

void swa_backend_names_text(char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < SWA_BACKEND_COUNT; i++) {
        const char *sep = i == 0 ? "" : i == SWA_BACKEND_COUNT - 1 ? " or " : ", ";
        int w = snprintf(buf + used, used < n ? n - used : 0, "%s\"%s\"", sep, swa_backend_names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* ---------------------------------------------------------------------------
 * lists, copies, totals, filters */

void swa_case_free(swa_case *c)
{
    if (!c)
        return;
    free(c->qo_len);
    free(c->kv_len);
    c->qo_len = c->kv_len = NULL;
}

void swa_case_list_free(swa_case_list *list)
{
    if (!list)
        return;
    for (int i = 0; i < list->count; i++)
        swa_case_free(&list->cases[i]);
    free(list->cases);
    list->cases = NULL;
    list->count = 0;
}

int swa_case_copy(swa_case *dst, const swa_case *src)
{
    *dst = *src;
    size_t n = (size_t)(src->num_requests > 0 ? src->num_requests : 1);
    dst->qo_len = malloc(n * sizeof *dst->qo_len);
    dst->kv_len = malloc(n * sizeof *dst->kv_len);
    if (!dst->qo_len || !dst->kv_len) {
        swa_case_free(dst);
        return -1;
    }
    if (src->num_requests > 0) {
        memcpy(dst->qo_len, src->qo_len, (size_t)src->num_requests * sizeof *dst->qo_len);
        memcpy(dst->kv_len, src->kv_len, (size_t)src->num_requests * sizeof *dst->kv_len);
    }
    return 0;
}

/* Ids never contain glob characters (the loader allows none), so a filter
 * that is an exact id matches that case and no other. */
bool swa_case_matches(const swa_case *c, const char *filter)
{
    if (!filter)
        return true;
    return strcmp(c->id, filter) == 0 || fnmatch(filter, c->id, 0) == 0;
}

int swa_case_total_qo(const swa_case *c)
{
    int total = 0;
    for (int r = 0; r < c->num_requests; r++)
        total += c->qo_len[r];
    return total;
}

int swa_case_total_kv(const swa_case *c)
{
    int total = 0;
    for (int r = 0; r < c->num_requests; r++)
        total += c->kv_len[r];
    return total;
}

int swa_case_max_kv(const swa_case *c)
{
    int max = 0;
    for (int r = 0; r < c->num_requests; r++)
        if (c->kv_len[r] > max)
            max = c->kv_len[r];
    return max;
}

