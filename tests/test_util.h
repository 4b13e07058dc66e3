/* test_util.h — what the command-line tests share: a temporary folder per
 * test (make_tmp / remove_tmp, for TestSuite .init / .fini), running a
 * shell command with its output captured in `out` (sh), and reading the
 * reports it writes (read_json_file, report_in; str and num for a field).
 *
 * Header-only and static: each test file is its own executable. */
#ifndef SWADIFF_TEST_UTIL_H
#define SWADIFF_TEST_UTIL_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

static char tmpdir[256];
static char out[1 << 16];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/swadiff-test-XXXXXX");
    cr_assert(mkdtemp(tmpdir));
}

static void remove_tmp(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    (void)!system(cmd);
}

/* Runs a printf-formatted shell command (stderr joined to stdout) into
 * `out`; returns its exit code, -1 when it did not exit. */
static int sh(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[4200];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert(p, "popen(%s)", cmd);
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The JSON file at path, parsed (caller: cJSON_Delete); fails the test,
 * quoting the last command's output, when it is missing or not JSON. */
static __attribute__((unused)) cJSON *read_json_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "no %s; output:\n%s", path, out);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    cr_assert(text);
    size_t n = fread(text, 1, (size_t)len, f);
    fclose(f);
    text[n] = '\0';
    cJSON *j = cJSON_Parse(text);
    free(text);
    cr_assert(j, "%s is not JSON", path);
    return j;
}

/* The report a run wrote with --report <tmpdir>/sub, parsed (caller:
 * cJSON_Delete). */
static __attribute__((unused)) cJSON *report_in(const char *sub)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s/report.json", tmpdir, sub);
    return read_json_file(path);
}

/* The string field key of o, "" when it is missing or not a string. */
static __attribute__((unused)) const char *str(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(it) ? it->valuestring : "";
}

/* The number field key of o; fails the test when it is not a number. */
static __attribute__((unused)) double num(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsNumber(it), "\"%s\" should be a number", key);
    return it->valuedouble;
}

#endif /* SWADIFF_TEST_UTIL_H */
