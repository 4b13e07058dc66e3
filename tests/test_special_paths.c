/* test_special_paths.c — an output path that is a device or a FIFO
 * (/dev/null above all) is written in place, never replaced: the writers
 * put a temporary next to the target and rename it over, and a rename over
 * /dev/null as root leaves a regular file there for every later program
 * (a CI machine had one; hipcc's offload bundler then read a leftover
 * object from it and wrote the HIP fatbins in another format).
 *
 * The device nodes are made here (mknod c 1 3 in a temporary folder, as
 * root); the tests are skipped where mknod is not allowed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/common.h"
#include "test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"

TestSuite(special_paths, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

/* a null device at path (as /dev/null is), or skip */
static void make_null(const char *path)
{
    if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) != 0)
        cr_skip_test("mknod %s: %s (a device node needs root)", path, strerror(errno));
}

static void expect_still_a_device(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
    cr_expect(S_ISCHR(st.st_mode), "%s was replaced by a %s", path, S_ISREG(st.st_mode) ? "regular file" : "non-device");
}

Test(special_paths, write_text_file_writes_a_device_in_place)
{
    char p[512], tmp[600];
    snprintf(p, sizeof p, "%s/null", tmpdir);
    make_null(p);
    cr_expect(swa_path_is_special(p));
    cr_expect_eq(swa_write_text_file(p, "{\"x\": 1}\n"), 0, "%s", strerror(errno));
    expect_still_a_device(p);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    cr_expect_neq(access(tmp, F_OK), 0, "a temporary was left next to the device");

    /* a regular file is still replaced whole (the atomic path) */
    snprintf(p, sizeof p, "%s/plain.json", tmpdir);
    cr_expect_not(swa_path_is_special(p), "a missing path is not special");
    cr_assert_eq(swa_write_text_file(p, "old old old\n"), 0);
    cr_assert_eq(swa_write_text_file(p, "new\n"), 0);
    FILE *f = fopen(p, "r");
    char buf[64] = "";
    cr_assert(f);
    cr_expect(fgets(buf, sizeof buf, f) && strcmp(buf, "new\n") == 0, "got '%s'", buf);
    fclose(f);
}

Test(special_paths, a_report_file_that_is_a_device_stays_one)
{
    char dir[512], node[600], junit[600];
    snprintf(dir, sizeof dir, "%s/rep", tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(node, sizeof node, "%s/report.json", dir);
    make_null(node);
    int rc = sh("'%s' run --device host --quiet --no-explain --report '%s' " FIVE, SWADIFF_BINARY, dir);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    expect_still_a_device(node);
    snprintf(junit, sizeof junit, "%s/junit.xml", dir);
    cr_expect_eq(access(junit, R_OK), 0, "the other report files are still written");
    (void)read_json_file; /* test_util.h's, not needed here */
}

Test(special_paths, json_options_write_a_device_in_place)
{
    char node[512];
    snprintf(node, sizeof node, "%s/null", tmpdir);
    make_null(node);
    int rc = sh("'%s' coverage -q --device host --json '%s' " FIVE, SWADIFF_BINARY, node);
    cr_expect(rc == 0 || rc == 1, "coverage exit %d:\n%s", rc, out); /* 1: gaps in this small file */
    expect_still_a_device(node);
    rc = sh("'%s' bench --harness --device host --small --jobs 1 --json '%s'", SWADIFF_BINARY, node);
    cr_expect_eq(rc, 0, "bench --harness exit %d:\n%s", rc, out);
    expect_still_a_device(node);
}
