/* test_hostile_plugins.c — plug-ins that break the ABI's promises in ways
 * the harness must contain (issue 32): a plug-in that writes into its const
 * inputs, two plug-ins under one name, names that are too long or carry
 * characters the header forbids.  Each Test is one promise a user relies on.
 *
 * Runs the built binary (SWADIFF_BINARY) with the fixtures of tests/plugins/
 * (SWADIFF_PLUGIN_DIR). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "test_util.h"

#define SWEEP SWADIFF_SOURCE_DIR "/tests/data/hostile/window_sweep.json"
#define WRITER SWADIFF_PLUGIN_DIR "/libconst_writer.so"
#define MINIMAL SWADIFF_PLUGIN_DIR "/libswadiff_minimal.so"

TestSuite(hostile_plugins, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

typedef struct writer_case {
    char backend[32]; /* of tests/plugins/const_writer.c */
    char input[32];   /* the input it writes */
    char when[32];    /* the call that wrote */
} writer_case;

ParameterizedTestParameters(hostile_plugins, a_plugin_writing_its_inputs_is_the_only_error)
{
    static writer_case cases[] = {
        {"zero_q", "input q ", "run()"},
        {"scribble_pages", "input kv_indices ", "run()"},
        {"plan_writes", "input kv_last_page_len ", "supports() or plan()"},
    };
    return cr_make_param_array(writer_case, cases, sizeof cases / sizeof cases[0]);
}

/* The sweep's three cases share one set of inputs; the writer runs after
 * the built-in backends of a case and before the example plug-in, so a
 * write that were not restored would fail minimal:exact in the same case
 * and decode_fa2/decode_aiter in the next ones. */
ParameterizedTest(writer_case *w, hostile_plugins, a_plugin_writing_its_inputs_is_the_only_error)
{
    int rc = sh("%s run --device host -q --plugin %s --plugin %s --backend decode_fa2 --backend decode_aiter "
                "--backend const_writer:%s --backend minimal:exact --report %s/rep %s",
                SWADIFF_BINARY, WRITER, MINIMAL, w->backend, tmpdir, SWEEP);
    cr_assert_eq(rc, 3, "%s: expected exit 3 (errors), got %d:\n%s", w->backend, rc, out);
    char path[400];
    snprintf(path, sizeof path, "%s/rep/report.json", tmpdir);
    cJSON *report = read_json_file(path);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(report, "cases");
    int writer_errors = 0, passes = 0;
    for (const cJSON *r = results ? results->child : NULL; r; r = r->next) {
        const char *backend = cJSON_GetObjectItemCaseSensitive(r, "backend")->valuestring;
        const char *outcome = cJSON_GetObjectItemCaseSensitive(r, "outcome")->valuestring;
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "message");
        const char *message = cJSON_IsString(m) ? m->valuestring : "";
        const char *id = cJSON_GetObjectItemCaseSensitive(r, "id")->valuestring;
        if (strncmp(backend, "const_writer:", 13) == 0) {
            cr_expect_str_eq(outcome, "error", "%s on %s: %s", backend, id, message);
            cr_expect(strstr(message, w->input) && strstr(message, w->when) && strstr(message, "restored"),
                      "%s on %s: the message names neither the input (%s) nor the call (%s): %s", backend, id,
                      w->input, w->when, message);
            writer_errors++;
        } else {
            cr_expect_str_eq(outcome, "passed", "%s on %s after const_writer:%s: %s", backend, id, w->backend,
                             message);
            passes++;
        }
    }
    cr_expect_eq(writer_errors, 3, "%s: one error per case", w->backend);
    cr_expect_eq(passes, 9, "%s: decode_fa2, decode_aiter and minimal:exact pass every case", w->backend);
    cJSON_Delete(report);
}
