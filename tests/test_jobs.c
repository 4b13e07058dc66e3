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
#include <unistd.h>

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
    /* and it records what the unsharded run records: shard 1 of 1, the same selection */
    char path[400];
    const char *keys[] = {"shard", "selection"};
    snprintf(path, sizeof path, "%s/report.json", whole);
    cJSON *jw = read_json_file(path);
    snprintf(path, sizeof path, "%s/report.json", merged);
    cJSON *jm = read_json_file(path);
    for (int k = 0; k < 2; k++) {
        char *w = cJSON_PrintUnformatted(cJSON_GetObjectItem(jw, keys[k]));
        char *m = cJSON_PrintUnformatted(cJSON_GetObjectItem(jm, keys[k]));
        cr_expect(w && m && strcmp(w, m) == 0, "merged %s %s, the unsharded run's %s", keys[k], m ? m : "(none)",
                  w ? w : "(none)");
        free(w);
        free(m);
    }
    cJSON_Delete(jw);
    cJSON_Delete(jm);
}

/* Each shard's report records --shard I/N and its selection; merge refuses
 * a set with a shard lost (naming it), and --allow-missing merges what is
 * there into a report marked incomplete, which exits 3, never 0. */
Test(jobs, a_lost_shard_is_refused_unless_allow_missing_marks_the_merge_incomplete)
{
    char given[1024] = "";
    for (int i = 1; i <= 4; i++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/shard-%d", tmpdir, i);
        cr_assert_eq(sh("'%s' run --device host --shard %d/4 --report '%s' -q %s", SWADIFF_BINARY, i, dir, CASES), 0,
                     "shard %d: %s", i, out);
        cJSON *j = NULL;
        char path[400];
        snprintf(path, sizeof path, "%s/report.json", dir);
        j = read_json_file(path);
        cJSON *shard = cJSON_GetObjectItem(j, "shard");
        cr_expect_eq(cJSON_GetObjectItem(shard, "index") ? cJSON_GetObjectItem(shard, "index")->valueint : -1, i);
        cr_expect_eq(cJSON_GetObjectItem(shard, "count") ? cJSON_GetObjectItem(shard, "count")->valueint : -1, 4);
        cr_expect(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "selection"), "case_ids_digest")),
                  "shard %d records no selection", i);
        cJSON_Delete(j);
        if (i != 3) {
            size_t len = strlen(given);
            snprintf(given + len, sizeof given - len, " '%s/report.json'", dir);
        }
    }
    cr_expect_eq(sh("'%s' merge '%s/m'%s", SWADIFF_BINARY, tmpdir, given), 2, "%s", out);
    cr_expect(strstr(out, "shard 3 of 4 is missing"), "the refusal should name the lost shard:\n%s", out);
    char path[400];
    snprintf(path, sizeof path, "%s/m/report.json", tmpdir);
    cr_expect(access(path, F_OK) != 0, "a refused merge writes no report");

    cr_expect_eq(sh("'%s' merge --allow-missing '%s/m'%s", SWADIFF_BINARY, tmpdir, given), 3, "%s", out);
    cr_expect(strstr(out, "INCOMPLETE"), "%s", out);
    cJSON *j = read_json_file(path);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(j, "incomplete")));
    cJSON *reason = cJSON_GetObjectItem(j, "incomplete_reason");
    cr_expect(cJSON_IsString(reason) && strstr(reason->valuestring, "--allow-missing: shard 3 of 4 missing"), "%s",
              cJSON_IsString(reason) ? reason->valuestring : "(no reason)");
    cr_expect_eq(cJSON_GetObjectItem(j, "exitcode")->valueint, 3);
    cJSON_Delete(j);

    /* the complete set merges green; --allow-missing changes nothing then */
    size_t len = strlen(given);
    snprintf(given + len, sizeof given - len, " '%s/shard-3/report.json'", tmpdir);
    cr_expect_eq(sh("'%s' merge --allow-missing '%s/m2'%s", SWADIFF_BINARY, tmpdir, given), 0, "%s", out);
    snprintf(path, sizeof path, "%s/m2/report.json", tmpdir);
    j = read_json_file(path);
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(j, "incomplete")));
    cJSON_Delete(j);
}

/* The merge commands of the ci/examples/ YAML files, run as written over the layout
 * the pipelines leave (GitHub: each artifact in shards/<name>/; GitLab:
 * shard-<i>/ in the job's folder): green with all four shards, red (exit 2,
 * naming the lost shard) with one lost.  The files are read as YAML, so an
 * example that stops being valid YAML fails here too. */
/* Writes body to tmpdir/name and runs it with the first python3 that has
 * the yaml module (PATH's, else Debian's: ci/setup-deps.sh installs
 * python3-yaml) and args; returns its exit code, its output in `out`. */
static int run_yaml_python(const char *name, const char *body, const char *args)
{
    char script[400];
    snprintf(script, sizeof script, "%s/%s", tmpdir, name);
    FILE *f = fopen(script, "w");
    cr_assert(f, "cannot write %s", script);
    fputs(body, f);
    fclose(f);
    return sh("for p in python3 /usr/bin/python3; do if $p -c 'import yaml' 2>/dev/null; then exec $p '%s' %s; "
              "fi; done; echo 'no python3 with the yaml module'; exit 9", script, args);
}

static void merge_command(const char *yml, const char *which, char *cmd, size_t n)
{
    char args[600];
    snprintf(args, sizeof args, "'%s' %s", yml, which);
    int rc = run_yaml_python("merge_command.py", "import sys, yaml\n"
          "d = yaml.safe_load(open(sys.argv[1]))\n"
          "if sys.argv[2] == 'github':\n"
          "    print([s['run'] for s in d['jobs']['merge']['steps'] if s.get('name') == 'merge'][0])\n"
          "else:\n"
          "    print([l for l in d['swadiff:merge']['script'] if 'swadiff merge' in l][0])\n", args);
    cr_assert_eq(rc, 0, "%s: no merge command found:\n%s", yml, out);
    snprintf(cmd, n, "%s", out);
    cmd[strcspn(cmd, "\n")] = '\0';
    cr_assert(strstr(cmd, "swadiff merge") && !strstr(cmd, "--allow-missing"), "%s: merge command \"%s\"", yml, cmd);
}

Test(jobs, ci_examples_turn_red_when_a_shard_is_lost)
{
    static const struct { const char *file, *which, *shard_dir; } examples[] = {
        {SWADIFF_SOURCE_DIR "/ci/examples/github-actions.yml", "github", "shards/swadiff-shard-%d"},
        {SWADIFF_SOURCE_DIR "/ci/examples/gitlab-ci.yml", "gitlab", "shard-%d"},
    };
    for (int i = 1; i <= 4; i++)
        cr_assert_eq(sh("'%s' run --device host --shard %d/4 --report '%s/run-%d' -q %s", SWADIFF_BINARY, i, tmpdir, i,
                        CASES), 0, "shard %d: %s", i, out);
    for (int e = 0; e < 2; e++) {
        char cmd[1024], job[400], sub[64];
        merge_command(examples[e].file, examples[e].which, cmd, sizeof cmd);
        snprintf(job, sizeof job, "%s/%s", tmpdir, examples[e].which);
        cr_assert_eq(sh("mkdir -p '%s/build' && ln -s '%s' '%s/build/swadiff'", job, SWADIFF_BINARY, job), 0, "%s", out);
        for (int i = 1; i <= 4; i++) {
            snprintf(sub, sizeof sub, examples[e].shard_dir, i);
            cr_assert_eq(sh("mkdir -p \"$(dirname '%s/%s')\" && cp -r '%s/run-%d' '%s/%s'", job, sub, tmpdir, i, job,
                            sub), 0, "%s", out);
        }
        cr_expect_eq(sh("cd '%s' && %s", job, cmd), 0, "%s: `%s` with every shard:\n%s", examples[e].file, cmd, out);
        snprintf(sub, sizeof sub, examples[e].shard_dir, 2);
        cr_assert_eq(sh("rm -rf '%s/%s' '%s/merged'", job, sub, job), 0, "%s", out);
        int rc = sh("cd '%s' && %s", job, cmd);
        cr_expect_eq(rc, 2, "%s: `%s` with shard 2 lost exited %d:\n%s", examples[e].file, cmd, rc, out);
        cr_expect(strstr(out, "shard 2 of 4 is missing"), "%s: the failure should name the lost shard:\n%s",
                  examples[e].file, out);
    }
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

/* Every job of the ci/examples/ files installs what it needs with the
 * project's own script before it builds, and builds without the test suite
 * (a stock runner has no Criterion).  The merge job's two commands are then
 * run as written (the install in check-only mode: this machine has the
 * packages) in a copy of the tree, and the binary they build runs. */
Test(jobs, ci_examples_install_their_dependencies_and_build, .timeout = 900)
{
    char args[600];
    snprintf(args, sizeof args, "'%s/ci/examples/github-actions.yml' '%s/ci/examples/gitlab-ci.yml'", SWADIFF_SOURCE_DIR,
             SWADIFF_SOURCE_DIR);
    int rc = run_yaml_python("steps.py",
          "import sys, yaml\n"
          "def jobs(path):\n"
          "    d = yaml.safe_load(open(path))\n"
          "    if 'jobs' in d:\n"
          "        return {n: [s['run'] for s in j['steps'] if 'run' in s] for n, j in d['jobs'].items()}\n"
          "    return {n: j['script'] for n, j in d.items() if isinstance(j, dict) and 'script' in j}\n"
          "bad = []\n"
          "for path in sys.argv[1:]:\n"
          "    for name, cmds in jobs(path).items():\n"
          "        deps = [i for i, c in enumerate(cmds) if 'ci/setup-deps.sh --run-only' in c]\n"
          "        builds = [i for i, c in enumerate(cmds) if 'ci/build.sh' in c]\n"
          "        if not builds or not deps or deps[0] > builds[0]:\n"
          "            bad.append(f'{path}: job {name}: no ci/setup-deps.sh --run-only before ci/build.sh')\n"
          "        bad += [f'{path}: job {name}: {cmds[i]!r} builds the tests' for i in builds\n"
          "                if '-DSWADIFF_BUILD_TESTS=OFF' not in cmds[i]]\n"
          "        if 'merge' in name:\n"
          "            print(cmds[deps[0]].replace('sudo ', '').split('#')[0].strip())\n"
          "            print(cmds[builds[0]])\n"
          "print('\\n'.join(bad), file=sys.stderr)\n"
          "sys.exit(1 if bad else 0)\n", args);
    cr_assert_eq(rc, 0, "%s", out);
    char deps[256], build[256];
    cr_assert_eq(sscanf(out, "%255[^\n]\n%255[^\n]", deps, build), 2, "%s", out);
    rc = sh("mkdir -p '%s/tree' && git -C '%s' ls-files -z | tar -C '%s' --null -T - -cf - | tar -C '%s/tree' -xf - "
            "&& cd '%s/tree' && SWADIFF_SKIP_APT=1 %s && %s && build/swadiff --version",
            tmpdir, SWADIFF_SOURCE_DIR, SWADIFF_SOURCE_DIR, tmpdir, tmpdir, deps, build);
    cr_expect_eq(rc, 0, "`%s` then `%s`:\n%s", deps, build, out);
    cr_expect(strstr(out, "swadiff "), "%s", out);
}
