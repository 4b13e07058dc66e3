/* test_report_partial.c — a run killed halfway (SIGKILL, no chance to clean
 * up) leaves a readable report: results.jsonl, report.json, junit.xml and
 * report.html on disk hold every result that finished.
 *
 * Run: ctest --test-dir build -R test_report_partial --output-on-failure
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>

#include "tests/test_report_fixture.h"

/* child: open a report, add three results, die without closing */
static void run_and_die(const char *dir, double flush_interval)
{
    swa_run_results rr;
    fix_results(&rr);
    swa_error err = {0};
    swa_report *rep = swa_report_open_selection(dir, &rr.env, &rr.selection, &err);
    if (!rep) {
        fprintf(stderr, "child: %s\n", err.message);
        _exit(10);
    }
    swa_report_set_flush_interval(rep, flush_interval);
    for (int i = 0; i < 3; i++)
        if (swa_report_add(rep, &rr.items[i], &err) != SWA_OK) {
            fprintf(stderr, "child: %s\n", err.message);
            _exit(11);
        }
    raise(SIGKILL);
    _exit(12); /* not reached */
}

static void kill_after_three(char *dir, size_t n, double flush_interval)
{
    fix_tmpdir(dir, n);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0)
        run_and_die(dir, flush_interval);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child should die of SIGKILL (status %d)", status);
}

Test(report_partial, killed_run_leaves_every_finished_result)
{
    char dir[256], path[300];
    kill_after_three(dir, sizeof dir, 0);

    /* report.json: valid JSON with the three results */
    snprintf(path, sizeof path, "%s/report.json", dir);
    char *text = fix_read_file(path);
    cr_assert_not_null(text, "%s missing after the kill", path);
    cJSON *root = cJSON_Parse(text);
    cr_assert_not_null(root, "%s is not valid JSON after the kill", path);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "cases")), 3);
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "summary"), "failed")->valueint, 2);
    cr_expect_eq(cJSON_GetObjectItem(root, "exitcode")->valueint, SWA_EXIT_MISMATCH,
                 "a partial report says what the run had found so far");
    cJSON_Delete(root);
    free(text);

    /* junit.xml: parses, three test cases */
    snprintf(path, sizeof path, "%s/junit.xml", dir);
    char out[1024];
    char *argv[] = {"python3", "-c",
                    "import sys, xml.etree.ElementTree as ET\n"
                    "print(len(ET.parse(sys.argv[1]).getroot().findall('./testsuite/testcase')))\n",
                    path, NULL};
    cr_expect_eq(fix_run(argv, out, sizeof out), 0, "junit.xml does not parse after the kill:\n%s", out);
    cr_expect_eq(atoi(out), 3, "test cases in junit.xml: %s", out);

    /* report.html: all three cases */
    snprintf(path, sizeof path, "%s/report.html", dir);
    text = fix_read_file(path);
    cr_assert_not_null(text);
    int cases = 0;
    for (const char *p = text; (p = strstr(p, "<details class=\"case ")); p++)
        cases++;
    cr_expect_eq(cases, 3, "cases in report.html");
    cr_expect(strstr(text, "</html>") != NULL, "report.html should be complete, not cut short");
    free(text);

    /* results.jsonl: readable back, and merge takes it */
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    swa_run_results back = {0};
    swa_error err = {0};
    cr_assert_eq(swa_report_read(path, &back, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(back.count, 3);
    cr_expect_str_eq(back.env.host, "ci-runner-7");
    /* the header carries the shard (report 1.4): a killed shard still merges into its set */
    cr_expect(back.selection.shard_index == 1 && back.selection.shard_count == 1, "shard %d/%d",
              back.selection.shard_index, back.selection.shard_count);
    cr_expect_str_eq(back.selection.case_files_digest, "0123456789abcdef");
    swa_run_results_free(&back);

    /* every rewrite finished with its rename: no temporary file is left */
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));)
        cr_expect(strstr(e->d_name, ".tmp.") == NULL, "left behind: %s", e->d_name);
    closedir(d);
}

Test(report_partial, throttled_flush_still_keeps_results_jsonl)
{
    /* with a long flush interval the report files lag behind, but
     * results.jsonl has every result, and merge turns it into a report */
    char dir[256], path[300], out_dir[256];
    kill_after_three(dir, sizeof dir, 3600);
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    fix_tmpdir(out_dir, sizeof out_dir);
    char *argv[] = {"merge", out_dir, path, NULL};
    fflush(stdout);
    cr_expect_eq(swa_merge_main(3, argv), SWA_EXIT_MISMATCH);
    char merged[300];
    snprintf(merged, sizeof merged, "%s/report.json", out_dir);
    swa_run_results back = {0};
    swa_error err = {0};
    cr_assert_eq(swa_report_read(merged, &back, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(back.count, 3);
    swa_run_results_free(&back);
}
