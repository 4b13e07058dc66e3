/* case_json.h — private to the case loader (harness/case_*.c): cJSON parsing
 * with source positions.
 *
 * cJSON builds a tree but forgets where each value came from.  After cJSON
 * has parsed a text, swa_json_doc_open walks the raw text once more in step
 * with the tree and records, for every cJSON item, the byte offset of its
 * value and (for object members) of its key.  The same walk enforces what
 * cJSON lets through: duplicate keys, numbers outside the JSON grammar
 * ("01", "1."), raw control characters in strings, trailing garbage.
 *
 * Tested through tests/test_case_load.c (every bad file asserts a
 * line:column).  Ownership: swa_json_doc_close frees the tree and the map. */
#ifndef SWADIFF_CASE_JSON_H
#define SWADIFF_CASE_JSON_H

#include <cjson/cJSON.h>

#include "harness/case_load.h"

typedef struct swa_json_pos {
    const cJSON *item;
    size_t key_offset;   /* offset of the member's key (its opening quote); SIZE_MAX: none */
    size_t value_offset; /* offset of the first character of the value */
} swa_json_pos;

typedef struct swa_json_doc {
    const char *file;    /* name used in messages */
    const char *text;
    size_t length;
    cJSON *root;
    swa_json_pos *positions; /* sorted by item address */
    size_t num_positions;
    size_t *line_starts;     /* offset of each line's first byte (line 1 at [0]); NULL: count from the start */
    size_t num_lines;
} swa_json_doc;

/* Parses text (need not be NUL-terminated) and maps positions.  Returns 0,
 * or -1 with err located at the problem (list of causes above). */
int swa_json_doc_open(swa_json_doc *doc, const char *file, const char *text, size_t length,
                      swa_load_error *err);
void swa_json_doc_close(swa_json_doc *doc);

/* Offsets of an item's value / key; 0 when the item is unknown (never for
 * items of this document's tree). */
size_t swa_json_value_offset(const swa_json_doc *doc, const cJSON *item);
size_t swa_json_key_offset(const swa_json_doc *doc, const cJSON *item);

/* 1-based line and column (in bytes) of a byte offset. */
void swa_json_line_col(const swa_json_doc *doc, size_t offset, int *line, int *column);

/* Fills err with file, the position of offset, path and a printf message.
 * Always returns -1 so callers can `return swa_json_fail(...)`. */
int swa_json_fail(const swa_json_doc *doc, swa_load_error *err, size_t offset, const char *path,
                  const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Appends a JSON-pointer token (RFC 6901: '~' -> "~0", '/' -> "~1") for a
 * key or an index to path (capacity n).  A token that does not fit is not
 * cut: the pointer ends in "/..." instead, and stays so. */
void swa_json_path_key(char *path, size_t n, const char *base, const char *key);
void swa_json_path_index(char *path, size_t n, const char *base, int index);

#endif /* SWADIFF_CASE_JSON_H */
