/* test_hostile_reports.c — report folders and report files made to trick
 * the writer or the reader (issue 32): symbolic links planted inside a
 * report folder, merges into a folder a live run holds, shards whose
 * reports carry impossible numbers.  Each Test is one promise.
 *
 * Runs the built binary (SWADIFF_BINARY). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"

TestSuite(hostile_reports, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static void expect_text(const char *path, const char *want)
{
    char got[256] = "";
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s is gone", path);
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    got[n] = '\0';
    cr_expect_str_eq(got, want, "%s was written through a link", path);
}

typedef struct planted {
    char file[32]; /* a link in the report folder to ../victim */
} planted;

ParameterizedTestParameters(hostile_reports, a_link_in_the_report_folder_is_refused_not_followed)
{
    static planted files[] = {{"results.jsonl"}, {".swadiff.lock"}, {"report.json"}, {"junit.xml"}, {"report.html"}};
    return cr_make_param_array(planted, files, sizeof files / sizeof files[0]);
}

/* Before: results.jsonl and .swadiff.lock were opened through the link
 * (the victim received the run's lines, or was truncated). */
ParameterizedTest(planted *p, hostile_reports, a_link_in_the_report_folder_is_refused_not_followed)
{
    char victim[400], link[400];
    snprintf(victim, sizeof victim, "%s/victim", tmpdir);
    snprintf(link, sizeof link, "%s/rep/%s", tmpdir, p->file);
    write_text(victim, "precious\n");
    cr_assert_eq(sh("mkdir %s/rep && ln -s ../victim %s", tmpdir, link), 0);
    int rc = sh("%s run --device host -q --report %s/rep %s", SWADIFF_BINARY, tmpdir, FIVE);
    cr_expect_neq(rc, 0, "%s: a link in the folder must fail the run:\n%s", p->file, out);
    char want[500];
    snprintf(want, sizeof want, "%s is a symbolic link", link);
    cr_expect(strstr(out, want), "%s: expected <%s> in:\n%s", p->file, want, out);
    expect_text(victim, "precious\n");
    struct stat st;
    cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "%s: the link was replaced", p->file);
}

/* A report FOLDER that is a link is the user's choice (a CI cache mount):
 * it is written as before. */
Test(hostile_reports, a_report_folder_that_is_a_link_is_written)
{
    cr_assert_eq(sh("mkdir %s/real && ln -s real %s/rep", tmpdir, tmpdir), 0);
    int rc = sh("%s run --device host -q --report %s/rep %s", SWADIFF_BINARY, tmpdir, FIVE);
    cr_assert_eq(rc, 0, "%s", out);
    char path[400];
    snprintf(path, sizeof path, "%s/real/report.json", tmpdir);
    cr_assert_eq(access(path, F_OK), 0, "no report.json in the linked folder");
}

Test(hostile_reports, a_merge_into_a_folder_with_a_link_is_refused)
{
    cr_assert_eq(sh("%s run --device host -q --report %s/a %s", SWADIFF_BINARY, tmpdir, FIVE), 0, "%s", out);
    char victim[400];
    snprintf(victim, sizeof victim, "%s/victim", tmpdir);
    write_text(victim, "precious\n");
    cr_assert_eq(sh("mkdir %s/m && ln -s ../victim %s/m/report.json", tmpdir, tmpdir), 0);
    int rc = sh("%s merge %s/m %s/a/report.json", SWADIFF_BINARY, tmpdir, tmpdir);
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "m/report.json is a symbolic link"), "%s", out);
    expect_text(victim, "precious\n");
}
