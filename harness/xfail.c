/* xfail.c — known failures (xfail.h): the --xfail file and the marks.
 *
 * Test: tests/test_xfail.c (file format and errors, the outcomes), and
 * tests/test_report_*.c (each report counts xfailed and xpassed). */
#include "harness/xfail.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XFAIL_FORMAT "ID_GLOB [BACKEND_GLOB] # REASON"

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

int swa_xfail_load(const char *path, swa_xfail_list *list, char *err, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, n, "%s: cannot open the --xfail file: %s", path, strerror(errno));
        return -1;
    }
    swa_xfail_entry *items = NULL;
    int count = 0, cap = 0, line_no = 0;
    char line[4096];
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        line_no++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            snprintf(err, n, "%s:%d: expected a line of at most %zu characters (" XFAIL_FORMAT ")", path, line_no,
                     sizeof line - 2);
            rc = -1;
            break;
        }
        char *hash = strchr(line, '#');
        char *reason = hash ? trim(hash + 1) : NULL;
        if (hash)
            *hash = '\0';
        char *fields = trim(line);
        if (!*fields)
            continue; /* blank, or a comment */
        char *id = strtok(fields, " \t"), *backend = strtok(NULL, " \t"), *extra = strtok(NULL, " \t");
        const char *problem = extra ? "a third field" : !reason ? "no '# reason'" : !*reason ? "an empty reason" : NULL;
        if (!problem && strlen(id) >= sizeof items->id_glob)
            problem = "an id glob that is too long";
        if (!problem && backend && strlen(backend) >= sizeof items->backend_glob)
            problem = "a backend glob that is too long";
        if (!problem && strlen(reason) >= sizeof items->reason)
            problem = "a reason that is too long (at most 199 characters)";
        if (problem) {
            snprintf(err, n, "%s:%d: expected " XFAIL_FORMAT " (a known failure and why), got %s%s%s", path,
                     line_no, problem, extra ? ": " : "", extra ? extra : "");
            rc = -1;
            break;
        }
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            swa_xfail_entry *grown = realloc(items, (size_t)cap * sizeof *items);
            if (!grown) {
                snprintf(err, n, "%s:%d: no memory for the entries", path, line_no);
                rc = -1;
                break;
            }
            items = grown;
        }
        swa_xfail_entry *e = &items[count++];
        snprintf(e->id_glob, sizeof e->id_glob, "%s", id);
        snprintf(e->backend_glob, sizeof e->backend_glob, "%s", backend ? backend : "");
        snprintf(e->reason, sizeof e->reason, "%s", reason);
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, n, "%s: read failed: %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    if (rc) {
        free(items);
        return -1;
    }
    if (count) {
        swa_xfail_entry *all = realloc(list->items, (size_t)(list->count + count) * sizeof *all);
        if (!all) {
            free(items);
            snprintf(err, n, "%s: no memory for the entries", path);
            return -1;
        }
        memcpy(all + list->count, items, (size_t)count * sizeof *items);
        list->items = all;
        list->count += count;
    }
    free(items);
    return 0;
}

void swa_xfail_free(swa_xfail_list *list)
{
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

/* backend in the case's ','-separated "xfail" backends ("" every one) */
static bool case_mark_covers(const swa_case *c, const char *backend)
{
    if (!c->xfail_backends[0])
        return true;
    char names[sizeof c->xfail_backends];
    snprintf(names, sizeof names, "%s", c->xfail_backends);
    for (char *save = NULL, *tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (fnmatch(tok, backend, 0) == 0)
            return true;
    return false;
}

const char *swa_xfail_reason(const swa_xfail_list *list, const swa_case *c, const char *backend)
{
    if (c->xfail[0] && case_mark_covers(c, backend))
        return c->xfail;
    for (int i = 0; list && i < list->count; i++) {
        const swa_xfail_entry *e = &list->items[i];
        if (swa_case_matches(c, e->id_glob) && (!e->backend_glob[0] || fnmatch(e->backend_glob, backend, 0) == 0))
            return e->reason;
    }
    return NULL;
}

void swa_xfail_apply(const char *reason, swa_result *r)
{
    if (!reason || r->outcome == SWA_OUTCOME_SKIPPED || r->outcome >= SWA_OUTCOME_XFAILED)
        return;
    snprintf(r->xfail, sizeof r->xfail, "%s", reason);
    r->xfail_was = r->outcome;
    r->outcome = r->outcome == SWA_OUTCOME_PASSED ? SWA_OUTCOME_XPASSED : SWA_OUTCOME_XFAILED;
}
