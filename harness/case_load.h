/* case_load.h — loading case files (the JSON format of cases/schema/
 * case.schema.json) into expanded swa_case records, and writing one back.
 *
 * A case file may give any scalar as a list; the loader expands the
 * cartesian product into concrete cases, each with a stable id that
 * `--filter` accepts.
 *
 * Defined in: case_load.c (swa_case_parse, swa_load_error_format),
 * case_file.c (swa_case_load_path, swa_case_write_json).
 * Ownership: the cases appended to a list are freed with
 * swa_case_list_free (core/case.h). */
#ifndef SWADIFF_CASE_LOAD_H
#define SWADIFF_CASE_LOAD_H

#include "core/case.h"

/* A located load error: "file:line:column: /json/path: what was expected". */
typedef struct swa_load_error {
    char file[SWA_PATH_MAX];
    int line, column;
    char path[256];            /* JSON pointer, e.g. /requests/0/kv_len */
    char message[512];
} swa_load_error;

#ifdef __cplusplus
extern "C" {
#endif

/* Formats err as "file:line:column: /path: message" into buf. */
void swa_load_error_format(const swa_load_error *err, char *buf, size_t n);

/* Parses one case file held in memory.  Returns 0 and appends the expanded
 * cases to list, or -1 with err filled (list unchanged).  max_cases caps the
 * expansion (0: the default cap, SWA_MAX_EXPANDED_CASES). */
#define SWA_MAX_EXPANDED_CASES 100000
int swa_case_parse(const char *file_name, const char *text, size_t len,
                   swa_case_list *list, swa_load_error *err);

/* Loads a file, or every *.json under a folder (recursively, sorted by path,
 * skipping folders named "schema").  Same return convention. */
int swa_case_load_path(const char *path, swa_case_list *list, swa_load_error *err);

/* Writes one expanded case back as a standalone case file (used by shrink). */
int swa_case_write_json(const swa_case *c, const char *path, swa_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_CASE_LOAD_H */
