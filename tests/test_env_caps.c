/* test_env_caps.c — the memory caps SWADIFF_MAX_CASE_BYTES, _HOST_BYTES and
 * _DEVICE_BYTES: the parser (swa_env_bytes, core/common.c) takes digits only
 * and refuses anything else with a message naming the variable and its
 * value; the loader refuses a malformed cap before reading a case
 * (harness/case_expand.c), so run, validate, selftest and list cases exit 2
 * and run nothing; a context built without the loader gets the message as
 * the case's error (harness/run.c), never a crash or a silent default.
 *
 * Criterion runs each test in a process of its own, so setenv stays in it. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "core/common.h"
#include "harness/case_load.h"
#include "harness/run.h"
#include "tests/test_case_util.h"
#include "tests/test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"

/* ---------------------------------------------------------------------------
 * the parser */

static int parse(const char *value, size_t *v, char *why, size_t n)
{
    if (value)
        cr_assert_eq(setenv("SWADIFF_MAX_HOST_BYTES", value, 1), 0);
    else
        unsetenv("SWADIFF_MAX_HOST_BYTES");
    *v = 12345; /* must be overwritten */
    return swa_env_bytes("SWADIFF_MAX_HOST_BYTES", v, why, n);
}

Test(env_caps, unset_and_empty_mean_the_default)
{
    size_t v;
    char why[256];
    cr_assert_eq(parse(NULL, &v, why, sizeof why), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(parse("", &v, why, sizeof why), 0);
    cr_assert_eq(v, 0);
}

Test(env_caps, digits_are_a_byte_count)
{
    size_t v;
    char why[256], max[32];
    cr_assert_eq(parse("200000", &v, why, sizeof why), 0, "%s", why);
    cr_assert_eq(v, 200000);
    cr_assert_eq(parse("1", &v, why, sizeof why), 0, "%s", why);
    cr_assert_eq(v, 1);
    cr_assert_eq(parse("007", &v, why, sizeof why), 0, "%s", why);
    cr_assert_eq(v, 7);
    snprintf(max, sizeof max, "%zu", (size_t)SIZE_MAX);
    cr_assert_eq(parse(max, &v, why, sizeof why), 0, "%s", why);
    cr_assert_eq(v, SIZE_MAX);
}

Test(env_caps, anything_else_is_refused_with_the_variable_and_the_value)
{
    static const struct {
        const char *value, *expected;
    } bad[] = {
        {"12GB", "digits only"}, {"abc", "digits only"}, {"1e9", "digits only"}, {"-5", "digits only"},
        {"-1", "digits only"}, {"+5", "digits only"}, {" 5", "digits only"}, {"5 ", "digits only"},
        {"5\t", "digits only"}, {"0x10", "digits only"}, {"1.5", "digits only"}, {"1x", "digits only"},
        {"1_000", "digits only"}, {"0", "positive"}, {"000", "positive"},
        {"99999999999999999999999", "no larger than"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v;
        char why[512], quoted[64];
        int rc = parse(bad[i].value, &v, why, sizeof why);
        cr_assert_eq(rc, -1, "\"%s\" accepted as %zu", bad[i].value, v);
        cr_assert_eq(v, 0, "\"%s\" left *out = %zu", bad[i].value, v);
        snprintf(quoted, sizeof quoted, "SWADIFF_MAX_HOST_BYTES=\"%s\"", bad[i].value);
        if (!strchr(bad[i].value, '\t'))
            cr_assert(strstr(why, quoted), "\"%s\": the message quotes neither name nor value: %s", bad[i].value,
                      why);
        cr_assert(strstr(why, "expected"), "%s", why);
        cr_assert(strstr(why, bad[i].expected), "\"%s\": expected \"%s\" in: %s", bad[i].value, bad[i].expected,
                  why);
    }
}

Test(env_caps, one_past_size_max_overflows)
{
    char text[32], why[256];
    snprintf(text, sizeof text, "%zu", (size_t)SIZE_MAX);
    text[strlen(text) - 1]++; /* ...615 -> ...616 (ends in 5 for 32 and 64 bits) */
    size_t v;
    cr_assert_eq(parse(text, &v, why, sizeof why), -1, "%s accepted", text);
    cr_assert(strstr(why, "no larger than"), "%s", why);
    cr_assert_eq(v, 0);
}

Test(env_caps, the_message_shows_no_raw_control_characters_and_stays_short)
{
    size_t v;
    char why[512];
    cr_assert_eq(parse("1\x1b[31mred", &v, why, sizeof why), -1);
    cr_assert(strchr(why, '\x1b') == NULL, "raw escape in: %s", why);
    cr_assert(strstr(why, "\\x1b[31mred"), "%s", why);
    char longv[400];
    memset(longv, 'z', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    cr_assert_eq(parse(longv, &v, why, sizeof why), -1);
    cr_assert(strstr(why, "zzz...\""), "a long value is cut: %s", why);
    cr_assert_lt(strlen(why), 200, "%s", why);
    /* no room for a message: still refused, nothing written past why */
    cr_assert_eq(parse("12GB", &v, NULL, 0), -1);
    char tiny[8] = "xxxxxxx";
    cr_assert_eq(parse("12GB", &v, tiny, 4), -1);
    cr_assert_eq(strlen(tiny), 3);
    cr_assert_eq(tiny[4], 'x');
}

/* ---------------------------------------------------------------------------
 * the loader and a run without the loader */

static const char *CASE = "{\"name\": \"c\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 17}], \"num_qo_heads\": 4,"
                          " \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\", \"page_size\": 16,"
                          " \"window_left\": 31, \"backends\": [\"decode_fa2\"], \"seed\": 7}";

Test(env_caps, the_loader_refuses_each_malformed_cap_and_blames_the_environment)
{
    static const char *const names[] = {"SWADIFF_MAX_CASE_BYTES", "SWADIFF_MAX_HOST_BYTES",
                                        "SWADIFF_MAX_DEVICE_BYTES"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(setenv(names[i], "12GB", 1), 0);
        swa_case_list list = {0};
        swa_load_error le;
        memset(&le, 0, sizeof le);
        cr_assert_eq(swa_case_parse("c.json", CASE, strlen(CASE), &list, &le), -1, "%s=12GB accepted", names[i]);
        cr_assert_eq(list.count, 0);
        char msg[2048], want[128];
        swa_load_error_format(&le, msg, sizeof msg);
        snprintf(want, sizeof want, "swadiff: %s=\"12GB\" in the environment: expected a whole number of bytes",
                 names[i]);
        cr_assert(strstr(msg, want), "expected \"%s\" in: %s", want, msg);
        cr_assert(strstr(msg, "c.json") == NULL, "the file is not at fault: %s", msg);
        unsetenv(names[i]);
    }
    swa_case_list list = load_inline_case("c.json", CASE); /* and well-formed again */
    cr_assert_eq(list.count, 1);
    swa_case_list_free(&list);
}

Test(env_caps, a_context_built_without_the_loader_gets_the_message_as_its_error)
{
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    static const char *const names[] = {"SWADIFF_MAX_HOST_BYTES", "SWADIFF_MAX_DEVICE_BYTES"};
    for (int i = 0; i < 2; i++) {
        swa_case_list list = load_inline_case("c.json", CASE);
        cr_assert_eq(setenv(names[i], "1x", 1), 0);
        swa_case_ctx ctx;
        swa_error err = {0};
        cr_assert_eq(swa_case_ctx_init(&ctx, &list.cases[0], host, &err), SWA_ERR_INVALID, "%s=1x: %s", names[i],
                     err.message);
        char want[96];
        snprintf(want, sizeof want, "%s=\"1x\" in the environment: expected", names[i]);
        cr_assert(strstr(err.message, want), "expected \"%s\" in: %s", want, err.message);
        unsetenv(names[i]);
        swa_case_list_free(&list);
    }
}

/* ---------------------------------------------------------------------------
 * the command line: exit 2, the variable and its value, nothing run */

TestSuite(env_caps_cli, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

static const struct {
    const char *name, *value;
} BAD[] = {
    {"SWADIFF_MAX_HOST_BYTES", "12GB"},
    {"SWADIFF_MAX_HOST_BYTES", "-5"},
    {"SWADIFF_MAX_HOST_BYTES", "abc"},
    {"SWADIFF_MAX_HOST_BYTES", "99999999999999999999999"},
    {"SWADIFF_MAX_HOST_BYTES", "0"},
    {"SWADIFF_MAX_DEVICE_BYTES", "1x"},
    {"SWADIFF_MAX_CASE_BYTES", "1e9"},
};

static void expect_refused(const char *what, const char *name, const char *value, int rc)
{
    char want[160];
    snprintf(want, sizeof want, "swadiff: %s=\"%s\" in the environment: expected", name, value);
    cr_assert_eq(rc, 2, "%s with %s=%s: exit %d, output:\n%s", what, name, value, rc, out);
    cr_assert(strstr(out, want), "%s with %s=%s: expected \"%s\" in:\n%s", what, name, value, want, out);
}

Test(env_caps_cli, run_refuses_a_malformed_cap_before_any_case)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        int rc = sh("%s='%s' " SWADIFF_BINARY " run --device host --report %s/r%zu " FIVE, BAD[i].name, BAD[i].value,
                    tmpdir, i);
        expect_refused("run", BAD[i].name, BAD[i].value, rc);
        cr_assert(strstr(out, "decode_fa2") == NULL, "a case ran:\n%s", out);
        char path[512];
        snprintf(path, sizeof path, "%s/r%zu/report.json", tmpdir, i);
        cr_assert(access(path, F_OK) != 0, "a report was written although the environment was invalid");
    }
}

Test(env_caps_cli, validate_selftest_and_list_refuse_it_the_same_way)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        int rc = sh("%s='%s' " SWADIFF_BINARY " validate " FIVE, BAD[i].name, BAD[i].value);
        expect_refused("validate", BAD[i].name, BAD[i].value, rc);
        cr_assert(strstr(out, "valid") == NULL, "%s", out);
        rc = sh("%s='%s' " SWADIFF_BINARY " selftest --device host --mutant left_bound_gt --report %s/st " FIVE,
                BAD[i].name, BAD[i].value, tmpdir);
        expect_refused("selftest", BAD[i].name, BAD[i].value, rc);
        rc = sh("%s='%s' " SWADIFF_BINARY " list cases " FIVE, BAD[i].name, BAD[i].value);
        expect_refused("list cases", BAD[i].name, BAD[i].value, rc);
    }
}

Test(env_caps_cli, bench_harness_refuses_it_the_same_way)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        int rc = sh("%s='%s' " SWADIFF_BINARY " bench --harness --device host --small --jobs 1", BAD[i].name,
                    BAD[i].value);
        expect_refused("bench --harness", BAD[i].name, BAD[i].value, rc);
        cr_assert(strstr(out, "results/s") == NULL, "the benchmark ran:\n%s", out);
    }
}

Test(env_caps_cli, well_formed_caps_still_work)
{
    int rc = sh("SWADIFF_MAX_HOST_BYTES=100000000000 SWADIFF_MAX_DEVICE_BYTES=100000000000 "
                "SWADIFF_MAX_CASE_BYTES=100000000 " SWADIFF_BINARY " run --device host --quiet --report %s/r " FIVE,
                tmpdir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    char path[512];
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cJSON *j = read_json_file(path);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "cases")), 5, "expected the five cases run");
    cJSON_Delete(j);
    rc = sh("SWADIFF_MAX_DEVICE_BYTES=200000 " SWADIFF_BINARY " validate " FIVE);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    /* empty is unset */
    rc = sh("SWADIFF_MAX_HOST_BYTES= " SWADIFF_BINARY " validate " FIVE);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
}
