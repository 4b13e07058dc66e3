/* test_repeat.c — `swadiff run --repeat N`: every (case, backend) runs N
 * times on the same inputs, run 1 against the reference, runs 2..N bitwise
 * against run 1; a pair whose runs differ fails as nondeterministic, says
 * where and by how much, and the reports record N.
 *
 *  - the built-in backends and a steady plug-in pass with --repeat;
 *  - a plug-in that flips one output bit every second run passes without
 *    --repeat (one ulp is within the tolerance) and fails with it, the
 *    element, the run and the difference named; one that moves an LSE entry
 *    fails on the LSE alone;
 *  - the record survives a merge; the reproduce command carries --repeat;
 *  - --timeout covers N runs; --no-isolate works; bad counts are usage errors.
 *
 * Runs the built binary (SWADIFF_BINARY) with the fixture plug-in
 * tests/plugins/flaky.c (SWADIFF_PLUGIN_DIR). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"
#define FLAKY SWADIFF_PLUGIN_DIR "/libflaky.so"

TestSuite(repeat, .init = make_tmp, .fini = remove_tmp, .timeout = 300);

static int swadiff(const char *args)
{
    return sh("cd '%s' && '%s' %s", SWADIFF_SOURCE_DIR, SWADIFF_BINARY, args);
}

/* Every result of backend: its outcome, its repeat count; returns how many. */
static int expect_results(const cJSON *rep, const char *backend, const char *outcome, int repeat)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        if (strcmp(str(c, "backend"), backend))
            continue;
        n++;
        cr_expect_str_eq(str(c, "outcome"), outcome, "%s %s: outcome (message: %s)", str(c, "id"), backend,
                         str(c, "message"));
        cr_expect_eq(num(c, "repeat"), repeat, "%s %s: the report should record --repeat %d", str(c, "id"), backend,
                     repeat);
    }
    return n;
}

Test(repeat, deterministic_backends_pass_and_the_report_records_n)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --repeat 4 --plugin %s --backend decode_fa2,flaky:steady -q "
             "--report %s/r %s", FLAKY, tmpdir, FIVE);
    int rc = swadiff(args);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *rep = report_in("r");
    cr_expect_eq(expect_results(rep, "decode_fa2", "passed", 4), 5);
    cr_expect_eq(expect_results(rep, "flaky:steady", "passed", 4), 5);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
        cr_expect(cJSON_IsNull(cJSON_GetObjectItem(c, "nondeterministic")), "%s: nothing differed", str(c, "id"));
    cJSON_Delete(rep);
}

Test(repeat, one_flipped_bit_passes_once_and_fails_as_nondeterministic_when_repeated)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s --backend flaky:one_bit -q --report %s/once %s", FLAKY,
             tmpdir, FIVE);
    int rc = swadiff(args);
    cr_expect_eq(rc, 0, "without --repeat one ulp is within the tolerance: exit %d:\n%s", rc, out);

    snprintf(args, sizeof args, "run --device host --plugin %s --backend flaky:one_bit --repeat 3 --report %s/rep %s",
             FLAKY, tmpdir, FIVE);
    rc = swadiff(args);
    cr_expect_eq(rc, 1, "with --repeat 3: exit %d (1: a failure):\n%s", rc, out);
    cr_expect(strstr(out, "nondeterministic"), "the console should group the failures as nondeterministic:\n%s", out);
    cJSON *rep = report_in("rep");
    cr_expect_eq(expect_results(rep, "flaky:one_bit", "failed", 3), 5);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        cr_expect(strstr(str(c, "message"), "Nondeterministic: "), "message: %s", str(c, "message"));
        cr_expect(strstr(str(c, "message"), " / 256 output elements differ"), "message: %s", str(c, "message"));
        cr_expect(!strncmp(str(c, "diagnosis"), "[nondeterministic] run 1 matches the reference", 46),
                  "diagnosis: %s", str(c, "diagnosis"));
        cr_expect(strstr(str(c, "reproduce"), " --repeat 3"), "reproduce: %s", str(c, "reproduce"));
        const cJSON *nd = cJSON_GetObjectItem(c, "nondeterministic");
        cr_assert(cJSON_IsObject(nd), "%s: the nondeterministic record", str(c, "id"));
        /* one bit of one element in one of the two repeats */
        cr_expect_eq(num(nd, "runs_differing"), 1);
        cr_expect_eq(num(nd, "elements"), 1);
        cr_expect_eq(num(nd, "total"), 256);
        cr_expect_eq(num(nd, "lse_entries"), 0);
        cr_expect_eq(num(nd, "guard_bytes"), 0);
        cr_expect_eq(num(nd, "first_run"), 2, "run 2 has the other parity");
        const cJSON *fi = cJSON_GetObjectItem(nd, "first_index");
        cr_expect(cJSON_IsObject(fi) && num(fi, "row") == 0 && num(fi, "head") == 0 && num(fi, "dim") == 0,
                  "element 0 is the one that moves");
        const cJSON *abs = cJSON_GetObjectItem(nd, "max_abs_diff");
        double v = num(abs, "value");
        cr_expect(v > 0 && v < 1e-2, "one ulp of an fp16 output: %g", v);
        cr_expect(cJSON_IsObject(cJSON_GetObjectItem(abs, "index")), "the element is named");
    }
    cJSON_Delete(rep);

    /* the record survives a merge (the reader reads it back) */
    snprintf(args, sizeof args, "merge %s/merged %s/rep/report.json", tmpdir, tmpdir);
    rc = swadiff(args);
    cr_expect_eq(rc, 1, "merge of a failed report: exit %d:\n%s", rc, out);
    rep = report_in("merged");
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        cr_expect_eq(num(c, "repeat"), 3);
        cr_expect_eq(num(cJSON_GetObjectItem(c, "nondeterministic"), "elements"), 1, "%s after merge", str(c, "id"));
    }
    cJSON_Delete(rep);
}

Test(repeat, an_lse_that_moves_fails_on_the_lse_alone)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s --backend flaky:lse_only --repeat 2 -q --report %s/r %s",
             FLAKY, tmpdir, FIVE);
    int rc = swadiff(args);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cJSON *rep = report_in("r");
    cr_expect_eq(expect_results(rep, "flaky:lse_only", "failed", 2), 5);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        const cJSON *nd = cJSON_GetObjectItem(c, "nondeterministic");
        cr_assert(cJSON_IsObject(nd));
        cr_expect_eq(num(nd, "elements"), 0);
        cr_expect_eq(num(nd, "lse_entries"), 1);
        cr_expect_eq(num(nd, "lse_total"), 4);
        cr_expect(cJSON_IsNull(cJSON_GetObjectItem(nd, "first_index")), "no output element differs");
        cr_expect(strstr(str(c, "message"), "LSE: 1 / 4 entries differ"), "message: %s", str(c, "message"));
    }
    cJSON_Delete(rep);
}

Test(repeat, works_without_isolation)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --no-isolate --plugin %s --backend flaky:one_bit,decode_fa2 "
             "--repeat 2 -q --report %s/r %s", FLAKY, tmpdir, FIVE);
    int rc = swadiff(args);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cJSON *rep = report_in("r");
    cr_expect_eq(expect_results(rep, "flaky:one_bit", "failed", 2), 5);
    cr_expect_eq(expect_results(rep, "decode_fa2", "passed", 2), 5);
    cJSON_Delete(rep);
}

Test(repeat, timeout_covers_every_run)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/libhang.so --backend 'hang:*' --timeout 1 --repeat 3 "
             "-q --report %s/r --filter 'five/five:r0.kv_len=17' %s", SWADIFF_PLUGIN_DIR, tmpdir, FIVE);
    int rc = swadiff(args);
    cr_expect_eq(rc, 3, "exit %d:\n%s", rc, out);
    cJSON *rep = report_in("r");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "cases"), 0);
    cr_assert(c);
    cr_expect(strstr(str(c, "message"), "no result within 3 s (--timeout times --repeat)"), "message: %s",
              str(c, "message"));
    cJSON_Delete(rep);
}

Test(repeat, bad_counts_are_usage_errors)
{
    static const char *const bad[] = {"0", "-1", "10001", "", "2x", " 2", "+2", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "run --device host --repeat '%s' %s", bad[i], FIVE);
        int rc = swadiff(args);
        cr_expect_eq(rc, 2, "--repeat '%s': exit %d (2)", bad[i], rc);
        cr_expect(strstr(out, "--repeat") && strstr(out, "expected a whole number of runs from 1 to 10000"),
                  "--repeat '%s': the error should say what is expected:\n%s", bad[i], out);
    }
    int rc = swadiff("run --device host --repeat 10000 --help");
    cr_expect_eq(rc, 0, "the largest count is accepted: exit %d:\n%s", rc, out);
}
