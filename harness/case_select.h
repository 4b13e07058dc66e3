/* case_select.h — the fields of an expanded case, and `--where`: selecting
 * cases (and backends) by those fields.
 *
 *   swadiff run --where 'dtype=bf16,backend=prefill,window_left>=0' cases
 *   swadiff list cases --fields cases/window_edges.json
 *
 * An expression is conditions joined by ',' (all must hold): FIELD OP VALUE
 * with OP one of = != < <= > >=.  A number field compares as a number, a
 * string field as a string (strcmp), a bool field (true/false) with = and
 * != only.  A field with a closed set of values (dtype, layout, kv_mode,
 * data, backend, tolerance.mode) refuses any other value.  `backend` is one
 * of the backends the case runs: a case matches when one of them meets
 * every condition, and a run then runs only the backends that do.
 *
 * Defined in case_select.c.  Test: tests/test_case_select.c (parsing,
 * errors, matching), tests/test_cli.c (run and list cases).
 * Ownership: swa_where_parse allocates; swa_where_free frees. */
#ifndef SWADIFF_CASE_SELECT_H
#define SWADIFF_CASE_SELECT_H

#include "core/case.h"

typedef enum { SWA_FIELD_NUMBER = 0, SWA_FIELD_STRING = 1, SWA_FIELD_BOOL = 2 } swa_field_kind;

/* One field of an expanded case.  values: the closed set of a string field
 * (NULL-terminated), NULL when any text is allowed. */
typedef struct swa_case_field {
    const char *name;
    swa_field_kind kind;
    const char *const *values;
    const char *meaning;
} swa_case_field;

/* The fields, in the order `list cases --fields` prints them; count in *n.
 * Per-request fields r<I>.qo_len and r<I>.kv_len are not in the table (one
 * per request): swa_case_field_value accepts them. */
const swa_case_field *swa_case_fields(int *n);

/* The value of field name for case c run by backend (NULL: the case's
 * first backend) as text into buf and, for a number field, *number.
 * Returns the field's kind, or -1 when name is no field (or a request
 * index the case does not have). */
int swa_case_field_value(const swa_case *c, const char *backend, const char *name, char *buf, size_t n,
                         double *number);

typedef struct swa_where swa_where;

/* Parses expr.  Returns NULL with err set to "--where EXPR: at column C
 * (CONDITION): what was expected" on an unknown field, operator or a value
 * of the wrong type. */
swa_where *swa_where_parse(const char *expr, char *err, size_t n);
void swa_where_free(swa_where *w);

/* True when case c run by backend meets every condition. */
bool swa_where_matches(const swa_where *w, const swa_case *c, const char *backend);
/* True when some built-in backend of c, or one of the extra backend names
 * (plug-ins and adapters, which run on every case), meets every condition. */
bool swa_where_matches_any(const swa_where *w, const swa_case *c, const char *const *extra, int nextra);
/* True when the expression has a condition on `backend`. */
bool swa_where_names_backend(const swa_where *w);
/* True when backend meets the conditions on `backend` (the others are not looked at). */
bool swa_where_backend_ok(const swa_where *w, const char *backend);

#endif /* SWADIFF_CASE_SELECT_H */
