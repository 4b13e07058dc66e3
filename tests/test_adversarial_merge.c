/* test_adversarial_merge.c — `swadiff merge` given inputs that are not the
 * shards of one run, or that were forged: each is refused with a message
 * naming the inputs (exit 2) before it can count a result twice, mix
 * versions, allocate absurd sizes or print a terminal escape; an incomplete
 * or failed shard never merges into a green run (issue "Truthful runs").
 * Shard sets (report 1.4 records each shard's --shard I/N and selection):
 * a missing shard, two N, one I twice, two selections, a report without a
 * shard and forged shard fields are refused naming the files;
 * --allow-missing merges a set with gaps into an incomplete report (exit 3).
 *
 * Reports come from the shared fixture (tests/test_report_fixture.h),
 * written with swa_report_write_all and edited as JSON where a test forges
 * something.
 *
 * Run: ctest --test-dir build -R test_adversarial_merge --output-on-failure */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <sys/resource.h>

#include "tests/test_report_fixture.h"

/* ---- helpers ------------------------------------------------------------------- */

/* Writes rr as a report folder; path gets DIR/report.json. */
static void write_shard(const swa_run_results *rr, char *path, size_t n)
{
    char dir[256];
    fix_tmpdir(dir, sizeof dir);
    swa_error err = {0};
    cr_assert_eq(swa_report_write_all(rr, dir, &err), SWA_OK, "write_all: %s", err.message);
    snprintf(path, n, "%s/report.json", dir);
}

/* The fixture's six results split in two shards of one run: a = results
 * [0, split), b = [split, 6), b started 100 s later on another host. */
static void two_shards(char *a, char *b, size_t n, int split)
{
    swa_run_results rr;
    fix_results(&rr);
    swa_run_results sa = rr, sb = rr;
    sa.count = split;
    sb.items = rr.items + split;
    sb.count = rr.count - split;
    sb.started = rr.started + 100;
    snprintf(sb.env.host, sizeof sb.env.host, "ci-runner-8");
    fix_selection(&sa.selection, 1, 2);
    fix_selection(&sb.selection, 2, 2);
    write_shard(&sa, a, n);
    write_shard(&sb, b, n);
    swa_run_results_free(&rr);
}

/* Runs the swadiff binary's merge (stdout and stderr into out) so what a
 * terminal would see can be checked byte for byte.  Returns the exit code. */
static int merge_cli(char *out, size_t n, const char *const *inputs, int ninputs)
{
    char out_dir[256];
    fix_tmpdir(out_dir, sizeof out_dir);
    char *argv[16] = {(char *)SWADIFF_BINARY, "merge", out_dir};
    int k = 3;
    for (int i = 0; i < ninputs && k < 15; i++)
        argv[k++] = (char *)inputs[i];
    argv[k] = NULL;
    return fix_run(argv, out, n);
}

/* merge in this process; the exit code.  stdout is flushed first so the
 * summary does not interleave with Criterion's output. */
static int merge_here(const char *const *inputs, int ninputs, char *out_dir, size_t n)
{
    fix_tmpdir(out_dir, n);
    char *argv[16] = {"merge", out_dir};
    int k = 2;
    for (int i = 0; i < ninputs && k < 15; i++)
        argv[k++] = (char *)inputs[i];
    argv[k] = NULL;
    fflush(stdout);
    return swa_merge_main(k, argv);
}

/* ---- shards of one run, given wrongly ------------------------------------------ */

/* The same file twice, under its own name, through "./" and through a
 * symbolic link: one run's results would be counted twice. */
Test(adversarial_merge, same_file_twice_is_refused)
{
    char a[300], b[300], dotted[320], link[320], out[8192];
    two_shards(a, b, sizeof a, 3);
    char *slash = strrchr(a, '/');
    snprintf(dotted, sizeof dotted, "%.*s/./report.json", (int)(slash - a), a);
    snprintf(link, sizeof link, "%.*s/alias.json", (int)(slash - a), a);
    cr_assert_eq(symlink(a, link), 0);
    const char *spellings[] = {a, dotted, link};
    for (int s = 0; s < 3; s++) {
        const char *inputs[] = {a, b, spellings[s]};
        int rc = merge_cli(out, sizeof out, inputs, 3);
        cr_expect_eq(rc, SWA_EXIT_USAGE, "merge %s %s %s: exit %d\n%s", a, b, spellings[s], rc, out);
        cr_expect(strstr(out, "input 3") && strstr(out, "is the same file as input 1"),
                  "merge %s %s %s should name both inputs:\n%s", a, b, spellings[s], out);
    }
}

/* A copy of a shard (same created stamp, command line and results) under
 * another name is the same shard. */
Test(adversarial_merge, copy_of_a_shard_is_refused)
{
    char a[300], b[300], copy[300], out[8192];
    two_shards(a, b, sizeof a, 3);
    swa_run_results rr;
    fix_results(&rr);
    rr.count = 3; /* exactly shard a, written again elsewhere */
    fix_selection(&rr.selection, 1, 2);
    write_shard(&rr, copy, sizeof copy);
    rr.count = 6;
    swa_run_results_free(&rr);
    const char *inputs[] = {a, b, copy};
    int rc = merge_cli(out, sizeof out, inputs, 3);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "input 3") && strstr(out, "is a copy of input 1") &&
                  strstr(out, "created 2025-11-30T09:00:24Z") && strstr(out, "swadiff run cases/ --report out"),
              "the refusal should name the copy, the original, the stamp and the command line:\n%s", out);
}

/* Two shards that share a result (shard 2 run twice, a rerun given with the
 * original): refused at the first repeated (case, backend, device). */
Test(adversarial_merge, overlapping_shards_are_refused)
{
    swa_run_results rr;
    fix_results(&rr);
    swa_run_results sa = rr, sb = rr;
    sa.count = 3;
    sb.items = rr.items + 2; /* result 2 in both */
    sb.count = rr.count - 2;
    sb.started = rr.started + 50;
    fix_selection(&sa.selection, 1, 2);
    fix_selection(&sb.selection, 2, 2);
    char a[300], b[300], out_dir[256];
    write_shard(&sa, a, sizeof a);
    write_shard(&sb, b, sizeof b);
    swa_run_results_free(&rr);
    const char *inputs[] = {a, b};
    cr_expect_eq(merge_here(inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_USAGE);
    char path[300];
    snprintf(path, sizeof path, "%s/report.json", out_dir);
    cr_expect_neq(access(path, F_OK), 0, "a refused merge must write no report");
}

/* report_version: another major is refused (naming the file and the
 * version), another minor of ours is merged. */
struct version_case {
    char version[16];
    int exit_code;
};

ParameterizedTestParameters(adversarial_merge, report_version_majors_do_not_mix)
{
    static struct version_case params[] = {
        {"2.0", SWA_EXIT_USAGE}, {"10.0", SWA_EXIT_USAGE}, {"0.9", SWA_EXIT_USAGE}, {"1.7", SWA_EXIT_MISMATCH},
    };
    return cr_make_param_array(struct version_case, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct version_case *p, adversarial_merge, report_version_majors_do_not_mix)
{
    char a[300], b[300], out[8192];
    two_shards(a, b, sizeof a, 3);
    cJSON *j = fix_load_json(b);
    cJSON_ReplaceItemInObject(j, "report_version", cJSON_CreateString(p->version));
    fix_save_json(b, j);
    cJSON_Delete(j);
    const char *inputs[] = {a, b};
    int rc = merge_cli(out, sizeof out, inputs, 2);
    cr_expect_eq(rc, p->exit_code, "report_version \"%s\" next to \"1.0\": exit %d, expected %d\n%s", p->version, rc,
                 p->exit_code, out);
    if (p->exit_code == SWA_EXIT_USAGE) {
        char want[64];
        snprintf(want, sizeof want, "got \"%s\"", p->version);
        cr_expect(strstr(out, b) && strstr(out, "\"report_version\": expected \"1.x\"") && strstr(out, want),
                  "report_version \"%s\": the message should name the file, what is expected and what came:\n%s",
                  p->version, out);
    }
}

/* Shards written by two swadiff versions are not one run. */
Test(adversarial_merge, mixed_harness_versions_are_refused)
{
    char a[300], b[300], out[8192];
    two_shards(a, b, sizeof a, 3);
    cJSON *j = fix_load_json(b);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "environment"), "harness_version", cJSON_CreateString("0.2.0"));
    fix_save_json(b, j);
    cJSON_Delete(j);
    const char *inputs[] = {a, b};
    int rc = merge_cli(out, sizeof out, inputs, 2);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "was written by swadiff 0.2.0") && strstr(out, "by swadiff 0.1.0"),
              "both versions should be named:\n%s", out);
}

/* ---- forged sizes --------------------------------------------------------------- */

/* A forged field of a failing result (cases[0] has the heatmap matrix);
 * each is refused with the key named, before any allocation it implies. */
struct forged {
    char what[48];
    char object[24];   /* "matrix" (row_head_ratio) or "shape" */
    char key[16];
    double value;
    char message[96];
};

ParameterizedTestParameters(adversarial_merge, forged_sizes_are_refused_before_allocating)
{
    static struct forged params[] = {
        {"rows 1e9", "matrix", "rows", 1e9, "\"rows\": expected an integer in [0, 256], got 1000000000"},
        {"heads 2^31", "matrix", "heads", 2147483648.0, "\"heads\": expected an integer in [0, 1024], got 2147483648"},
        {"rows 1e300", "matrix", "rows", 1e300, "\"rows\": expected an integer"},
        {"row_bin 0", "matrix", "row_bin", 0, "\"row_bin\": expected an integer in [1, 2147483647], got 0"},
        {"total_qo 2^40", "shape", "total_qo", 1099511627776.0, "\"total_qo\": expected an integer in [0, 2147483647]"},
        {"window_left -7", "shape", "window_left", -7, "\"window_left\": expected an integer in [-1, 2147483647], got -7"},
    };
    return cr_make_param_array(struct forged, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct forged *p, adversarial_merge, forged_sizes_are_refused_before_allocating)
{
    char a[300], b[300], out_dir[256];
    two_shards(a, b, sizeof a, 3);
    cJSON *j = fix_load_json(a);
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "cases"), 0);
    cJSON *target = !strcmp(p->object, "shape") ? cJSON_GetObjectItem(c0, "shape")
                                                  : cJSON_GetObjectItem(cJSON_GetObjectItem(c0, "mismatch"), "row_head_ratio");
    cr_assert(cJSON_IsObject(target), "fixture: cases[0] has no %s", p->object);
    cJSON_ReplaceItemInObject(target, p->key, cJSON_CreateNumber(p->value));
    fix_save_json(a, j);
    cJSON_Delete(j);

    swa_run_results rr = {0};
    swa_error err = {0};
    cr_expect_neq(swa_report_read(a, &rr, &err), SWA_OK, "%s: read back without complaint", p->what);
    cr_expect(strstr(err.message, a) && strstr(err.message, "cases[0]") && strstr(err.message, p->message),
              "%s: expected the file, cases[0] and \"%s\" in:\n%s", p->what, p->message, err.message);
    swa_run_results_free(&rr);
    const char *inputs[] = {a, b};
    cr_expect_eq(merge_here(inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_USAGE, "%s: merge accepted it", p->what);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    cr_expect_lt(ru.ru_maxrss, 512L << 10, "%s: peak memory %ld KiB", p->what, ru.ru_maxrss);
}

/* A report over 1 GiB is refused from its size, before a byte is read (a
 * sparse file: no disk is used). */
Test(adversarial_merge, report_over_one_gib_is_refused_unread)
{
    char dir[256], path[300];
    fix_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/report.json", dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)(1LL << 30) + 1), 0);
    close(fd);
    swa_run_results rr = {0};
    swa_error err = {0};
    cr_expect_neq(swa_report_read(path, &rr, &err), SWA_OK);
    cr_expect(strstr(err.message, "expected a report of at most 1073741824 bytes (1 GiB), got 1073741825 bytes"),
              "%s", err.message);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    cr_expect_lt(ru.ru_maxrss, 256L << 10, "peak memory %ld KiB: the file was read", ru.ru_maxrss);
    swa_run_results_free(&rr);
}

/* ---- what merge prints ---------------------------------------------------------- */

/* Bytes a report may carry that must never reach a terminal raw. */
static const char *const HOSTILE[] = {
    "\x1b]0;pwned\x07",     /* OSC: retitle the terminal */
    "\x1b[2J\x1b[H",        /* clear the screen */
    "\xc2\x9b" "31m",       /* C1 CSI, UTF-8 encoded */
    "\x9b" "1A",            /* C1 CSI, raw byte */
    "\xe2\x80\xae" "lmth",  /* U+202E right-to-left override */
    "\r\b\x7f",
};

static void expect_no_control(const char *out, const char *what)
{
    for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
        bool bad = (*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || *p == 0x9b;
        if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            bad = true;
        if (p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae)
            bad = true;
        cr_assert_not(bad, "%s: raw byte 0x%02x at offset %zu of the output:\n%s", what, *p,
                      (size_t)(p - (const unsigned char *)out), out);
    }
}

Test(adversarial_merge, terminal_escapes_in_a_report_are_never_printed)
{
    swa_run_results rr;
    fix_results(&rr);
    char id[SWA_ID_MAX] = "case/", backend[64] = "bk";
    for (size_t i = 0; i < sizeof HOSTILE / sizeof HOSTILE[0]; i++)
        strncat(id, HOSTILE[i], sizeof id - strlen(id) - 1);
    strncat(backend, HOSTILE[1], sizeof backend - strlen(backend) - 1);
    /* the failing results are printed with their ids, messages, mutants,
     * backends and reproduce commands */
    for (int k = 0; k < rr.count; k++) {
        snprintf(rr.items[k].id, sizeof rr.items[k].id, "%s%d", id, k);
        snprintf(rr.items[k].mutant, sizeof rr.items[k].mutant, "%s", rr.items[k].mutant[0] ? HOSTILE[0] : "");
        snprintf(rr.items[k].reproduce, sizeof rr.items[k].reproduce, "rerun %s", HOSTILE[4]);
        snprintf(rr.items[k].message, sizeof rr.items[k].message, "msg %s %s", HOSTILE[2], HOSTILE[3]);
    }
    snprintf(rr.items[0].backend, sizeof rr.items[0].backend, "%s", backend);
    snprintf(rr.env.host, sizeof rr.env.host, "host%s", HOSTILE[1]);
    char a[300], out[1 << 15];
    write_shard(&rr, a, sizeof a);
    swa_run_results_free(&rr);

    const char *inputs[] = {a};
    int rc = merge_cli(out, sizeof out, inputs, 1);
    cr_expect_eq(rc, SWA_EXIT_MISMATCH, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "Merged 1 report") != NULL, "%s", out);
    expect_no_control(out, "summary of a hostile report");
    cr_expect(strstr(out, "\\x1B") != NULL, "escapes should be shown, visibly:\n%s", out);

    /* and on the refusal path, where merge quotes a report's environment */
    char b[300];
    swa_run_results other;
    fix_results(&other);
    other.count = 1;
    other.started += 10;
    snprintf(other.env.harness_version, sizeof other.env.harness_version, "9%s", HOSTILE[0]);
    write_shard(&other, b, sizeof b);
    other.count = 6;
    swa_run_results_free(&other);
    const char *inputs2[] = {a, b};
    rc = merge_cli(out, sizeof out, inputs2, 2);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "exit %d\n%s", rc, out);
    expect_no_control(out, "refusal quoting a hostile harness_version");
    cr_expect(strstr(out, "9\\x1B]0;pwned\\x07") != NULL, "the version should be quoted visibly:\n%s", out);
}

/* ---- no green merge from a broken shard ----------------------------------------- */

/* An incomplete shard (killed, or still running when its report was
 * written) makes the merged run incomplete and non-zero, whatever its
 * results say; results.jsonl (which cannot say whether its run finished)
 * counts as incomplete too. */
Test(adversarial_merge, incomplete_shard_makes_the_merge_incomplete)
{
    swa_run_results rr;
    fix_results(&rr);
    /* two passing-only shards: the decode pass and the skip */
    swa_run_results sa = rr, sb = rr;
    sa.items = rr.items + 1;
    sa.count = 1;
    sb.items = rr.items + 5;
    sb.count = 1;
    sb.started += 100;
    fix_selection(&sa.selection, 1, 2);
    fix_selection(&sb.selection, 2, 2);
    sb.incomplete = true;
    snprintf(sb.incomplete_reason, sizeof sb.incomplete_reason, "interrupted by signal 15 (Terminated)");
    char a[300], b[300], out_dir[256], path[300];
    write_shard(&sa, a, sizeof a);
    write_shard(&sb, b, sizeof b);
    const char *inputs[] = {a, b};
    int rc = merge_here(inputs, 2, out_dir, sizeof out_dir);
    cr_expect_eq(rc, SWA_EXIT_RUNTIME, "a merge with an incomplete shard exited %d", rc);
    snprintf(path, sizeof path, "%s/report.json", out_dir);
    cJSON *j = fix_load_json(path);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(j, "incomplete")), "merged report.json should say incomplete");
    const cJSON *reason = cJSON_GetObjectItem(j, "incomplete_reason");
    cr_expect(cJSON_IsString(reason) && strstr(reason->valuestring, "input 2") &&
                  strstr(reason->valuestring, "signal 15"),
              "reason should name the shard and its reason: %s", cJSON_IsString(reason) ? reason->valuestring : "-");
    cJSON_Delete(j);

    /* a complete shard's results.jsonl: no end marker, so not green */
    sb.incomplete = false;
    sb.incomplete_reason[0] = '\0';
    char dir[256];
    fix_tmpdir(dir, sizeof dir);
    swa_error err = {0};
    swa_report *rep = swa_report_open_selection(dir, &sb.env, &sb.selection, &err);
    cr_assert_not_null(rep, "%s", err.message);
    cr_assert_eq(swa_report_add(rep, &sb.items[0], &err), SWA_OK, "%s", err.message);
    cr_assert_eq(swa_report_close(rep, 0, &err), SWA_OK, "%s", err.message);
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    const char *inputs2[] = {a, path};
    rc = merge_here(inputs2, 2, out_dir, sizeof out_dir);
    cr_expect_eq(rc, SWA_EXIT_RUNTIME, "a merge with a results.jsonl exited %d", rc);
    swa_run_results_free(&rr);
}

/* A shard that recorded a non-zero exit code although its results passed
 * (its report could not be written, a device failed outside any result)
 * keeps the merged run non-zero. */
Test(adversarial_merge, failed_shard_exit_code_survives)
{
    swa_run_results rr;
    fix_results(&rr);
    swa_run_results sa = rr;
    sa.items = rr.items + 1;
    sa.count = 1;
    sa.exitcode = SWA_EXIT_RUNTIME;
    char a[300], out_dir[256];
    write_shard(&sa, a, sizeof a);
    const char *inputs[] = {a};
    cr_expect_eq(merge_here(inputs, 1, out_dir, sizeof out_dir), SWA_EXIT_RUNTIME);
    swa_run_results_free(&rr);
}

/* The shards of one run still merge: disjoint results, one version, one
 * harness (the positive case next to every refusal above). */
Test(adversarial_merge, disjoint_shards_of_one_run_merge)
{
    char a[300], b[300], out_dir[256], path[300];
    two_shards(a, b, sizeof a, 2);
    const char *inputs[] = {a, b};
    cr_expect_eq(merge_here(inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_MISMATCH);
    snprintf(path, sizeof path, "%s/report.json", out_dir);
    swa_run_results m = {0};
    swa_error err = {0};
    cr_assert_eq(swa_report_read(path, &m, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(m.count, 6);
    cr_expect_not(m.incomplete, "%s", m.incomplete_reason);
    swa_run_results_free(&m);
}

/* ---- shard sets (report 1.4: every report records --shard I/N and its
 * selection) ----------------------------------------------------------------------- */

/* merge with options (--allow-missing) in this process; the exit code */
static int merge_opts(const char *opt, const char *const *inputs, int ninputs, char *out_dir, size_t n)
{
    fix_tmpdir(out_dir, n);
    char *argv[16] = {"merge", (char *)opt, out_dir};
    int k = 3;
    for (int i = 0; i < ninputs && k < 15; i++)
        argv[k++] = (char *)inputs[i];
    argv[k] = NULL;
    fflush(stdout);
    return swa_merge_main(k, argv);
}

/* Shard `index` of `count` holding the fixture's result `item`. */
static void one_result_shard(int item, int index, int count, char *path, size_t n)
{
    swa_run_results rr;
    fix_results(&rr);
    swa_run_results s = rr;
    s.items = rr.items + item;
    s.count = 1;
    s.started = rr.started + 10 * index;
    s.exitcode = swa_run_results_summary(&s, NULL, NULL, NULL, NULL);
    fix_selection(&s.selection, index, count);
    write_shard(&s, path, n);
    swa_run_results_free(&rr);
}

/* A lost shard: refused (exit 2) naming the missing index, no report
 * written; with --allow-missing the merge is written, marked incomplete
 * with the missing index, and exits 3 although every result given passed. */
Test(adversarial_merge, missing_shard_is_refused_unless_allow_missing)
{
    char a[300], c[300], out[8192], out_dir[256], path[300];
    one_result_shard(1, 1, 3, a, sizeof a); /* the decode pass */
    one_result_shard(5, 3, 3, c, sizeof c); /* the skip */
    const char *inputs[] = {a, c};
    int rc = merge_cli(out, sizeof out, inputs, 2);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "the shard set is incomplete: shard 2 of 3 is missing (2 of 3 given") &&
                  strstr(out, "--allow-missing"),
              "the refusal should name the missing shard and the way out:\n%s", out);
    cr_expect_eq(merge_here(inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_USAGE);
    snprintf(path, sizeof path, "%s/report.json", out_dir);
    cr_expect_neq(access(path, F_OK), 0, "a refused merge must write no report");

    rc = merge_opts("--allow-missing", inputs, 2, out_dir, sizeof out_dir);
    cr_expect_eq(rc, SWA_EXIT_RUNTIME, "an incomplete merge must not be green: exit %d", rc);
    snprintf(path, sizeof path, "%s/report.json", out_dir);
    swa_run_results m = {0};
    swa_error err = {0};
    cr_assert_eq(swa_report_read(path, &m, &err), SWA_OK, "%s", err.message);
    cr_expect(m.incomplete, "the merged report should say incomplete");
    cr_expect(strstr(m.incomplete_reason, "merged with --allow-missing: shard 2 of 3 missing"), "%s",
              m.incomplete_reason);
    cr_expect_eq(m.exitcode, SWA_EXIT_RUNTIME);
    cr_expect_eq(m.count, 2);
    swa_run_results_free(&m);
}

/* Shards of two runs: two values of N, or the same I twice, are refused
 * with or without --allow-missing, naming both inputs. */
Test(adversarial_merge, two_values_of_n_or_one_index_twice_are_refused)
{
    char a[300], b[300], out[8192], out_dir[256];
    one_result_shard(1, 1, 2, a, sizeof a);
    one_result_shard(5, 2, 3, b, sizeof b);
    const char *inputs[] = {a, b};
    int rc = merge_cli(out, sizeof out, inputs, 2);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "input 2") && strstr(out, b) && strstr(out, "is shard 2 of 3, input 1") && strstr(out, a) &&
                  strstr(out, "shard 1 of 2: the shards of one run share N"),
              "both inputs and both N should be named:\n%s", out);
    cr_expect_eq(merge_opts("--allow-missing", inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_USAGE);

    one_result_shard(5, 1, 2, b, sizeof b); /* another result, but shard 1 again */
    rc = merge_cli(out, sizeof out, inputs, 2);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "are both shard 1 of 2"), "%s", out);
    cr_expect_eq(merge_opts("--allow-missing", inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_USAGE);
}

/* Two selections: each field that decides the case set, changed in shard
 * 2 alone, is refused, naming the file and what differs. */
struct selection_edit {
    char field[24];
    char value[48];
    char message[96];
};

ParameterizedTestParameters(adversarial_merge, two_selections_are_refused)
{
    static struct selection_edit params[] = {
        {"case_files_digest", "00000000000000ff", "other case files (content digest 00000000000000ff vs 0123456789abcdef"},
        {"case_ids_digest", "00000000000000ff", "other cases selected (6 cases, ids digest 00000000000000ff vs 6 cases"},
        {"cases_selected", "7", "other cases selected (7 cases"},
        {"filters", "decode/*", "other --filter values (decode/* vs (none))"},
        {"backends", "decode_fa2", "other --backend (decode_fa2 vs (each case's own))"},
        {"external_backends", "minimal:exact", "other plug-in / adapter backends (minimal:exact vs (none))"},
        {"mutant", "left_bound_minus1", "another --mutant (left_bound_minus1 vs (none))"},
        {"device", "cuda", "another device (cuda vs host)"},
    };
    return cr_make_param_array(struct selection_edit, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct selection_edit *p, adversarial_merge, two_selections_are_refused)
{
    char a[300], b[300], out[8192], out_dir[256];
    two_shards(a, b, sizeof a, 3);
    cJSON *j = fix_load_json(b);
    cJSON *sel = cJSON_GetObjectItem(j, "selection");
    cJSON *v = !strcmp(p->field, "cases_selected") ? cJSON_CreateNumber(atoi(p->value))
             : !strcmp(p->field, "filters") || !strcmp(p->field, "external_backends")
                 ? cJSON_CreateStringArray((const char *const[]){p->value}, 1)
                 : cJSON_CreateString(p->value);
    cr_assert(cJSON_ReplaceItemInObject(sel, p->field, v), "fixture: no selection.%s", p->field);
    fix_save_json(b, j);
    cJSON_Delete(j);
    const char *inputs[] = {a, b};
    int rc = merge_cli(out, sizeof out, inputs, 2);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "%s: exit %d\n%s", p->field, rc, out);
    cr_expect(strstr(out, b) && strstr(out, "selected differently from input 1") && strstr(out, p->message),
              "%s: expected the file and \"%s\" in:\n%s", p->field, p->message, out);
    cr_expect_eq(merge_opts("--allow-missing", inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_USAGE, "%s", p->field);
    /* the case paths as typed are not compared: checkouts differ */
    if (!strcmp(p->field, "device")) {
        two_shards(a, b, sizeof a, 3);
        j = fix_load_json(b);
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "selection"), "cases",
                                  cJSON_CreateStringArray((const char *const[]){"/builds/x/cases"}, 1));
        fix_save_json(b, j);
        cJSON_Delete(j);
        cr_expect_eq(merge_cli(out, sizeof out, inputs, 2), SWA_EXIT_MISMATCH, "%s", out);
    }
}

/* A report that records no shard (written before report 1.4, or not by
 * `swadiff run`): refused by name, since nobody can tell whether its set is
 * complete; --allow-missing merges it into an incomplete report. */
Test(adversarial_merge, report_without_shard_is_refused_unless_allow_missing)
{
    char a[300], b[300], out[8192], out_dir[256], path[300];
    two_shards(a, b, sizeof a, 3);
    cJSON *j = fix_load_json(b);
    cJSON_DeleteItemFromObject(j, "shard");
    cJSON_DeleteItemFromObject(j, "selection");
    cJSON_ReplaceItemInObject(j, "report_version", cJSON_CreateString("1.3"));
    fix_save_json(b, j);
    cJSON_Delete(j);
    const char *inputs[] = {a, b};
    int rc = merge_cli(out, sizeof out, inputs, 2);
    cr_expect_eq(rc, SWA_EXIT_USAGE, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "input 2") && strstr(out, b) && strstr(out, "records no \"shard\""), "%s", out);
    rc = merge_opts("--allow-missing", inputs, 2, out_dir, sizeof out_dir);
    cr_expect_eq(rc, SWA_EXIT_MISMATCH, "the fixture's mismatches still decide: exit %d", rc);
    snprintf(path, sizeof path, "%s/report.json", out_dir);
    swa_run_results m = {0};
    swa_error err = {0};
    cr_assert_eq(swa_report_read(path, &m, &err), SWA_OK, "%s", err.message);
    cr_expect(m.incomplete && strstr(m.incomplete_reason, "records no shard"), "%s", m.incomplete_reason);
    swa_run_results_free(&m);
}

/* Forged shard fields are refused by the reader, naming the file and key. */
struct forged_shard {
    char object[12];
    char key[24];
    char value[24];
    bool number;
    char message[96];
};

ParameterizedTestParameters(adversarial_merge, forged_shard_fields_are_refused)
{
    static struct forged_shard params[] = {
        {"shard", "index", "3", true, "shard: \"index\": expected an integer in [1, 2] (the count), got 3"},
        {"shard", "count", "0", true, "shard: \"count\": expected an integer in [1, 1000000], got 0"},
        {"shard", "index", "1.5", true, "shard: \"index\": expected an integer"},
        {"selection", "case_ids_digest", "xyz", false, "selection: \"case_ids_digest\": expected 16 lower-case hex"},
        {"selection", "device", "1", true, "selection: \"device\": expected a string"},
    };
    return cr_make_param_array(struct forged_shard, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct forged_shard *p, adversarial_merge, forged_shard_fields_are_refused)
{
    char a[300], b[300], out_dir[256];
    two_shards(a, b, sizeof a, 3);
    cJSON *j = fix_load_json(b);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, p->object), p->key,
                              p->number ? cJSON_CreateNumber(atof(p->value)) : cJSON_CreateString(p->value));
    fix_save_json(b, j);
    cJSON_Delete(j);
    swa_run_results rr = {0};
    swa_error err = {0};
    cr_expect_neq(swa_report_read(b, &rr, &err), SWA_OK, "%s.%s read back without complaint", p->object, p->key);
    cr_expect(strstr(err.message, b) && strstr(err.message, p->message), "expected the file and \"%s\" in:\n%s",
              p->message, err.message);
    swa_run_results_free(&rr);
    const char *inputs[] = {a, b};
    cr_expect_eq(merge_here(inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_USAGE);
}

/* A merge of shards whose results are all skips compared nothing: 5. */
Test(adversarial_merge, a_merge_of_skips_only_exits_5)
{
    char a[300], b[300], out_dir[256];
    one_result_shard(5, 1, 2, a, sizeof a);
    one_result_shard(5, 2, 2, b, sizeof b);
    /* the second shard holds the same skip under another id */
    cJSON *j = fix_load_json(b);
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "cases"), 0);
    cJSON_ReplaceItemInObject(c0, "id", cJSON_CreateString("models/gemma3_1b:prompt=3000"));
    fix_save_json(b, j);
    cJSON_Delete(j);
    const char *inputs[] = {a, b};
    cr_expect_eq(merge_here(inputs, 2, out_dir, sizeof out_dir), SWA_EXIT_NOTHING_COMPARED);
}

/* The usage: --help is 0, an unknown option 2. */
Test(adversarial_merge, merge_options)
{
    char *help[] = {"merge", "--help", NULL};
    cr_expect_eq(swa_merge_main(2, help), SWA_EXIT_OK);
    char *bad[] = {"merge", "--allow-everything", "out", "a.json", NULL};
    cr_expect_eq(swa_merge_main(4, bad), SWA_EXIT_USAGE);
    char *none[] = {"merge", "--allow-missing", "out", NULL};
    cr_expect_eq(swa_merge_main(3, none), SWA_EXIT_USAGE);
}
