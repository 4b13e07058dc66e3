/* test_jobs.c — `--jobs N`: isolated workers pulling cases from one queue.
 * The promise: results, reports and exit codes are the same for any N and
 * any arrival order (apart from timings); a worker that crashes costs its
 * pair only; bad values are usage errors.
 *
 * Runs the built binary (SWADIFF_BINARY). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "test_util.h"

#define CASES SWADIFF_SOURCE_DIR "/cases/window_edges.json " SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"

TestSuite(jobs, .init = make_tmp, .fini = remove_tmp, .timeout = 200);

/* report.json without what may differ between runs: times, the command line. */
static char *report_data(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/report.json", dir);
    cJSON *j = read_json_file(path);
    const char *drop[] = {"created", "created_unix", "duration", "environment"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        cJSON_DeleteItemFromObject(j, drop[i]);
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases"))
    {
        cJSON_DeleteItemFromObject(c, "duration");
        cJSON *repro = cJSON_GetObjectItem(c, "reproduce");
        (void)repro;
    }
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

Test(jobs, any_number_of_workers_gives_the_same_report)
{
    char *base = NULL;
    int jobs[] = {1, 2, 7};
    for (int i = 0; i < 3; i++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/j%d", tmpdir, jobs[i]);
        /* a mutant makes failures (with diagnoses and matrices) part of what must agree */
        int rc = sh("'%s' run --device host --jobs %d --mutant left_bound_minus1 --report '%s' -q %s", SWADIFF_BINARY,
                    jobs[i], dir, CASES);
        cr_expect_eq(rc, 1, "--jobs %d: exit %d\n%s", jobs[i], rc, out);
        char *data = report_data(dir);
        if (!base)
            base = data;
        else {
            cr_expect(strcmp(base, data) == 0, "--jobs %d gives another report than --jobs 1", jobs[i]);
            free(data);
        }
    }
    free(base);
}

Test(jobs, more_workers_than_cases_is_fine)
{
    cr_expect_eq(sh("'%s' run --device host --jobs 64 -q '%s'", SWADIFF_BINARY,
                    SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"), 0, "%s", out);
    cr_expect(strstr(out, "PASSED: 5 passed"), "%s", out);
}

Test(jobs, bad_job_counts_are_usage_errors)
{
    const char *bad[] = {"0", "-1", "x", "2000"};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(sh("'%s' run --device host --jobs %s '%s'", SWADIFF_BINARY, bad[i],
                        SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"), 2, "--jobs %s: %s", bad[i], out);
        cr_expect(strstr(out, "--jobs"), "%s", out);
    }
    cr_expect_eq(sh("'%s' run --device host --jobs 2 --no-isolate '%s'", SWADIFF_BINARY,
                    SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"), 2, "%s", out);
}

/* A worker that crashes in case 3 of 5 costs that pair; the other workers
 * (and the restarted one) produce the rest. */
Test(jobs, a_crashing_worker_costs_its_pair_only)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/crash", tmpdir);
    int rc = sh("SWADIFF_TEST_FAULT='five/five:r0.kv_len=65' '%s' run --device host --jobs 2 --report '%s' -q '%s'",
                SWADIFF_BINARY, dir, SWADIFF_SOURCE_DIR "/tests/data/cli/five.json");
    cr_expect_eq(rc, 3, "%s", out);
    cr_expect(strstr(out, "4 passed, 0 failed, 1 errors"), "%s", out);
}

/* A GPU index that does not exist is refused before anything runs. */
Test(jobs, a_gpu_that_does_not_exist_is_refused)
{
    int rc = sh("'%s' run --device cuda:999 '%s'", SWADIFF_BINARY, SWADIFF_SOURCE_DIR "/tests/data/cli/five.json");
    cr_expect_eq(rc, 77, "%s", out);
    /* a malformed list is a usage error before any question to a device */
    cr_expect_eq(sh("'%s' run --device cuda:0,0 '%s'", SWADIFF_BINARY, SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"),
                 2, "%s", out);
    cr_expect(strstr(out, "named twice"), "%s", out);
    cr_expect_eq(sh("'%s' run --device cuda:x '%s'", SWADIFF_BINARY, SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"),
                 2, "%s", out);
}

/* The CI-matrix recipe of ci/examples/: N shards, then merge, give the same
 * results as one unsharded run (compared as sets: shards list their own
 * results in their own order). */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static cJSON *cases_sorted(const char *dir)
{
    char *text = report_data(dir);
    cJSON *j = cJSON_Parse(text);
    free(text);
    cJSON *cases = cJSON_DetachItemFromObject(j, "cases");
    cJSON_Delete(j);
    int n = cJSON_GetArraySize(cases);
    char **keys = calloc((size_t)n, sizeof *keys);
    for (int i = 0; i < n; i++) {
        cJSON *c = cJSON_GetArrayItem(cases, i);
        cJSON_DeleteItemFromObject(c, "reproduce"); /* names the shard's own command line */
        keys[i] = cJSON_PrintUnformatted(c);
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_str);
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(out, cJSON_CreateString(keys[i]));
        free(keys[i]);
    }
    free(keys);
    cJSON_Delete(cases);
    return out;
}

Test(jobs, shards_merged_equal_the_unsharded_run)
{
    char whole[300], merged[300], shards[1024] = "";
    snprintf(whole, sizeof whole, "%s/whole", tmpdir);
    snprintf(merged, sizeof merged, "%s/merged", tmpdir);
    cr_expect_eq(sh("'%s' run --device host --mutant left_bound_minus1 --report '%s' -q %s", SWADIFF_BINARY, whole,
                    CASES), 1, "%s", out);
    for (int i = 1; i <= 3; i++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/shard-%d", tmpdir, i);
        sh("'%s' run --device host --mutant left_bound_minus1 --shard %d/3 --report '%s' -q %s", SWADIFF_BINARY, i,
           dir, CASES);
        size_t len = strlen(shards);
        snprintf(shards + len, sizeof shards - len, " '%s/report.json'", dir);
    }
    cr_expect_eq(sh("'%s' merge '%s'%s", SWADIFF_BINARY, merged, shards), 1, "merge: %s", out);
    cJSON *a = cases_sorted(whole), *b = cases_sorted(merged);
    char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(b);
    cr_expect_eq(cJSON_GetArraySize(a), cJSON_GetArraySize(b), "result counts");
    cr_expect(strcmp(sa, sb) == 0, "merged shards differ from the unsharded run");
    free(sa);
    free(sb);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* `bench --harness` runs its generated matrix through the real loop for
 * each --jobs value and accounts for the time it measured. */
Test(jobs, harness_bench_runs_the_matrix_and_writes_its_figures)
{
    char json[300];
    snprintf(json, sizeof json, "%s/bench.json", tmpdir);
    cr_expect_eq(sh("'%s' bench --harness --device host --small --jobs 1,2 --json '%s'", SWADIFF_BINARY, json), 0,
                 "%s", out);
    cJSON *j = read_json_file(json);
    cJSON *runs = cJSON_GetObjectItem(j, "runs");
    cr_expect_eq(cJSON_GetArraySize(runs), 2);
    cJSON *r;
    cJSON_ArrayForEach(r, runs)
    {
        cr_expect_eq(cJSON_GetObjectItem(r, "pairs")->valueint, cJSON_GetObjectItem(j, "cases")->valueint);
        cr_expect_eq(cJSON_GetObjectItem(r, "passed")->valueint, cJSON_GetObjectItem(r, "pairs")->valueint);
        double sum = 0;
        cJSON *s;
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(r, "share_percent")) sum += s->valuedouble;
        cr_expect(sum > 99.0 && sum < 101.0, "stage shares add up to %g%%", sum);
    }
    cJSON_Delete(j);
}
