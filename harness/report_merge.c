/* report_merge.c — `swadiff merge OUT_DIR REPORT.json...`: combines the reports of
 * shards (CI jobs that each ran part of the cases, possibly on different
 * machines) into one report set: report.json, report.html, junit.xml.
 *
 * Inputs are read back with swa_report_read, so a shard killed mid-run can
 * contribute its results.jsonl instead of a report.json.  The combined
 * run: created = the earliest shard start, duration = from that start to
 * the latest shard end, environment of the first shard with the devices and
 * hosts of all shards, exit code recomputed from the combined outcomes.
 *
 * Test: tests/test_report_json.c (merge of two shards).
 */
#include <stdio.h>
#include <string.h>

#include "harness/report_console.h"
#include "harness/report.h"

static void usage(void)
{
    fprintf(stderr, "usage: swadiff merge OUT_DIR REPORT.json [REPORT.json...]\n"
                    "  Combines shard reports (report.json, or results.jsonl of a run that was killed)\n"
                    "  into OUT_DIR/report.json, report.html and junit.xml.\n"
                    "  Exit code: that of the combined run (0 all passed, 1 a mismatch, 3 a runtime\n"
                    "  error), 2 when an input cannot be read.\n");
}

/* appends line to a '\n'-separated list unless it is already there */
static void add_unique_line(char *list, size_t n, const char *line)
{
    if (!*line)
        return;
    for (const char *p = list; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len == strlen(line) && !strncmp(p, line, len))
            return;
        p += len + (nl ? 1 : 0);
    }
    size_t used = strlen(list);
    if (used + strlen(line) + 2 < n)
        snprintf(list + used, n - used, "%s%s", used ? "\n" : "", line);
}

static void add_unique_lines(char *list, size_t n, const char *lines)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", lines);
    for (char *save = NULL, *tok = strtok_r(copy, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
        add_unique_line(list, n, tok);
}

int swa_merge_main(int argc, char **argv)
{
    if (argc < 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage();
        return argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? SWA_EXIT_OK : SWA_EXIT_USAGE;
    }
    const char *out_dir = argv[1];
    swa_run_results merged = {0};
    double first_start = 0, last_end = 0;
    char hosts[sizeof merged.env.host] = "";
    for (int i = 2; i < argc; i++) {
        swa_run_results shard = {0};
        swa_error err = {0};
        if (swa_report_read(argv[i], &shard, &err) != SWA_OK) {
            fprintf(stderr, "swadiff merge: %s\n", err.message);
            swa_run_results_free(&shard);
            swa_run_results_free(&merged);
            return SWA_EXIT_USAGE;
        }
        if (i == 2) {
            merged.env = shard.env;
        }
        add_unique_lines(merged.env.devices, sizeof merged.env.devices, shard.env.devices);
        add_unique_line(hosts, sizeof hosts, shard.env.host);
        if (i == 2 || (shard.started > 0 && shard.started < first_start))
            first_start = shard.started;
        if (shard.started + shard.duration > last_end)
            last_end = shard.started + shard.duration;
        for (int k = 0; k < shard.count; k++) {
            if (swa_run_results_add(&merged, &shard.items[k]) != 0) {
                fprintf(stderr, "swadiff merge: no memory for %d results\n", merged.count + 1);
                swa_run_results_free(&shard);
                swa_run_results_free(&merged);
                return SWA_EXIT_RUNTIME;
            }
        }
        shard.count = 0; /* the results moved into merged */
        swa_run_results_free(&shard);
    }
    for (char *p = hosts; *p; p++)
        if (*p == '\n')
            *p = ',';
    snprintf(merged.env.host, sizeof merged.env.host, "%s", hosts);
    snprintf(merged.env.command_line, sizeof merged.env.command_line, "swadiff merge of %d report%s", argc - 2,
             argc - 2 == 1 ? "" : "s");
    merged.started = first_start;
    merged.duration = last_end > first_start ? last_end - first_start : 0;
    merged.exitcode = swa_run_results_summary(&merged, NULL, NULL, NULL, NULL);

    swa_error err = {0};
    if (swa_report_write_all(&merged, out_dir, &err) != SWA_OK) {
        fprintf(stderr, "swadiff merge: %s\n", err.message);
        swa_run_results_free(&merged);
        return SWA_EXIT_RUNTIME;
    }
    swa_console_write_summary(stdout, &merged, false);
    printf("Merged %d report%s into %s/report.html (also report.json, junit.xml)\n", argc - 2, argc - 2 == 1 ? "" : "s",
           out_dir);
    int code = merged.exitcode;
    swa_run_results_free(&merged);
    return code;
}
