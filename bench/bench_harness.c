/* bench_harness.c — `swadiff bench --harness [--device D] [--jobs N[,M...]]
 * [--small] [--json FILE]`: the harness's own throughput.
 *
 * The matrix (written as two case files into a temporary folder and loaded
 * like any other, so it exercises the loader and the sweeps too):
 *   prefill: extend lengths 6, 8, 12, 64 over kv 64 and 300, causal and not,
 *            window_left 0, 31, 127, 1023 and saturation (4095), fp16/bf16,
 *            page sizes 1 and 16, 4/2 and 8/1 heads, head_dim 64 and 128;
 *   decode:  kv 256, 1024, 4096, batch 1 and 8, the same windows, fp16/bf16,
 *            page sizes 1 and 16, 32/8 and 8/1 heads, on decode_fa2,
 *            decode_aiter and decode_auto;
 * 3,040 cases, 4,000 pairs (--small: 96, for tests).  For each --jobs value the
 * whole matrix runs through the normal run loop (isolated workers, no
 * report files) and the bench prints results/s and the share of the
 * workers' time in each stage, plus the parent's recording time.
 *
 * Test: tests/test_jobs.c (bench --harness --small). */
#include "bench/bench_harness.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/case_load.h"
#include "harness/cli.h"
#include "harness/run.h"

static const char *PREFILL =
    "{\"name\": \"prefill\", \"requests\": [{\"qo_len\": [6, 8, 12, 64], \"kv_len\": [64, 300]}],"
    " \"num_qo_heads\": [4, 8], \"num_kv_heads\": [2, 1], \"head_dim\": [64, 128],"
    " \"dtype\": [\"fp16\", \"bf16\"], \"page_size\": [1, 16], \"causal\": [true, false],"
    " \"window_left\": [0, 31, 127, 1023, 4095], \"backends\": [\"prefill\"]}";
static const char *DECODE =
    "{\"name\": \"decode\", \"requests\": [{\"qo_len\": 1, \"kv_len\": [256, 1024, 4096], \"count\": [1, 8]}],"
    " \"num_qo_heads\": [32, 8], \"num_kv_heads\": [8, 1], \"head_dim\": 128,"
    " \"dtype\": [\"fp16\", \"bf16\"], \"page_size\": [1, 16],"
    " \"window_left\": [0, 31, 127, 1023, 4095], \"backends\": [\"decode_fa2\", \"decode_aiter\", \"decode_auto\"]}";
static const char *SMALL =
    "{\"name\": \"small\", \"requests\": [{\"qo_len\": [1, 6, 12], \"kv_len\": [20, 64]}],"
    " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": [\"fp16\", \"bf16\"],"
    " \"page_size\": [1, 16], \"window_left\": [0, 4, 31, 127], \"backends\": [\"prefill\"]}";

static int usage(FILE *f)
{
    fprintf(f, "usage: swadiff bench --harness [--device host|cuda|hip|cuda:0,1] [--jobs N[,M...]] [--small]\n"
               "                            [--json FILE]\n"
               "Runs a generated matrix of about 3,000 (case, backend) pairs from the seeds' grid once per\n"
               "--jobs value (default: 1 and the default worker count) and prints results/s and the share\n"
               "of time in data generation, reference, backend, comparison and reporting.\n");
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

int swa_bench_harness(int argc, char **argv, const char *prog)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'}, {"jobs", required_argument, 0, 'j'},
                                         {"json", required_argument, 0, 'J'},   {"small", no_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *device_name = "auto", *json_path = NULL, *jobs_arg = NULL;
    bool small = false;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:j:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': device_name = optarg; break;
        case 'j': jobs_arg = optarg; break;
        case 'J': json_path = optarg; break;
        case 's': small = true; break;
        case 'h': return usage(stdout);
        default: return usage(stderr);
        }
    }
    int rc = SWA_EXIT_USAGE;
    const swa_device_ops *dev = swa_cli_device(device_name, &rc);
    if (!dev)
        return rc;
    static int gpus[64];
    int num_gpus = swa_cli_gpu_ids(device_name, dev, gpus, 64, &rc);
    if (num_gpus < 0)
        return rc;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int default_jobs = num_gpus > 0 ? num_gpus : cores > 0 ? (int)cores : 1;
    int jobs_list[16], njobs = 0;
    if (jobs_arg) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", jobs_arg);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && njobs < 16; t = strtok_r(NULL, ",", &save)) {
            char *end;
            long j = strtol(t, &end, 10);
            if (end == t || *end || j < 1 || j > 1024) {
                fprintf(stderr, "swadiff bench --harness: --jobs %s: expected worker counts 1..1024\n", jobs_arg);
                return SWA_EXIT_USAGE;
            }
            jobs_list[njobs++] = (int)j;
        }
    } else {
        jobs_list[njobs++] = 1;
        if (default_jobs > 1)
            jobs_list[njobs++] = default_jobs;
    }

    /* a malformed memory cap is a usage error here too, as in every command
     * that loads case files (harness/case_expand.c), not a runtime failure
     * of the generated matrix */
    char why[256];
    if (swa_env_caps_check(why, sizeof why) != 0) {
        fprintf(stderr, "swadiff: %s\n", why);
        return SWA_EXIT_USAGE;
    }

    char dir[] = "/tmp/swadiff-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "swadiff bench --harness: mkdtemp: %s\n", strerror(errno));
        return SWA_EXIT_RUNTIME;
    }
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "%s/%s.json", dir, small ? "small" : "prefill");
    snprintf(p2, sizeof p2, "%s/decode.json", dir);
    swa_case_list all = {0};
    swa_load_error le = {0};
    bool ok = swa_write_text_file(p1, small ? SMALL : PREFILL) == 0 && (small || swa_write_text_file(p2, DECODE) == 0) &&
              swa_case_load_path(dir, &all, &le) == 0;
    unlink(p1);
    if (!small)
        unlink(p2);
    rmdir(dir);
    if (!ok) {
        char msg[1024];
        swa_load_error_format(&le, msg, sizeof msg);
        fprintf(stderr, "swadiff bench --harness: the generated matrix: %s\n", msg);
        swa_case_list_free(&all);
        return SWA_EXIT_RUNTIME;
    }
    int *selected = malloc(sizeof(int) * (size_t)all.count);
    for (int i = 0; i < all.count; i++)
        selected[i] = i;

    char desc[400] = "";
    dev->describe(desc, sizeof desc);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", dev->name);
    cJSON_AddStringToObject(root, "device_description", desc);
    cJSON_AddNumberToObject(root, "cores", (double)cores);
    cJSON_AddNumberToObject(root, "gpus", num_gpus);
    cJSON_AddNumberToObject(root, "cases", all.count);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    printf("harness bench on %s (%s), %ld cores, %d GPU(s): %d cases\n", dev->name, desc, cores, num_gpus, all.count);
    printf("%6s %7s %9s %11s %7s %7s %8s %8s %8s %7s\n", "jobs", "pairs", "seconds", "results/s", "passed",
           "data", "reference", "backend", "compare", "report");
    int exit_code = SWA_EXIT_OK;
    double base_rate = 0;
    for (int k = 0; k < njobs; k++) {
        swa_run_config cfg = {.device = dev, .explain_failures = true, .quiet = true, .jobs = jobs_list[k],
                              .gpus = gpus, .num_gpus = num_gpus, .argv0 = prog};
        swa_run_results rr = {0};
        rr.started = swa_now();
        /* the console would print a summary per run: send it to /dev/null */
        fflush(stdout);
        int saved = dup(1);
        FILE *null = fopen("/dev/null", "w");
        if (null)
            dup2(fileno(null), 1);
        int code = swa_run_selected(&cfg, &all, selected, all.count, NULL, &rr);
        fflush(stdout);
        if (saved >= 0) {
            dup2(saved, 1);
            close(saved);
        }
        if (null)
            fclose(null);
        double stage[4] = {0, 0, 0, 0}, total = 0;
        int passed = 0;
        swa_run_results_summary(&rr, &passed, NULL, NULL, NULL);
        for (int i = 0; i < rr.count; i++)
            for (int s = 0; s < 4; s++)
                stage[s] += rr.items[i].stage[s];
        for (int s = 0; s < 4; s++)
            total += stage[s];
        total += rr.report_seconds;
        double rate = rr.duration > 0 ? rr.count / rr.duration : 0;
        if (k == 0)
            base_rate = rate;
        double share[5];
        for (int s = 0; s < 4; s++)
            share[s] = total > 0 ? 100 * stage[s] / total : 0;
        share[4] = total > 0 ? 100 * rr.report_seconds / total : 0;
        printf("%6d %7d %9.2f %11.1f %7d %6.1f%% %8.1f%% %7.1f%% %7.1f%% %6.1f%%", jobs_list[k], rr.count,
               rr.duration, rate, passed, share[0], share[1], share[2], share[3], share[4]);
        if (k > 0 && base_rate > 0)
            printf("  %.2fx", rate / base_rate);
        printf("\n");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "jobs", jobs_list[k]);
        cJSON_AddNumberToObject(o, "pairs", rr.count);
        cJSON_AddNumberToObject(o, "seconds", rr.duration);
        cJSON_AddNumberToObject(o, "results_per_second", rate);
        cJSON_AddNumberToObject(o, "speedup_vs_first", base_rate > 0 ? rate / base_rate : 0);
        cJSON_AddNumberToObject(o, "passed", passed);
        cJSON_AddNumberToObject(o, "exitcode", code);
        const char *names[5] = {"data", "reference", "backend", "compare", "report"};
        cJSON *sh = cJSON_AddObjectToObject(o, "share_percent");
        for (int s = 0; s < 5; s++)
            cJSON_AddNumberToObject(sh, names[s], share[s]);
        cJSON_AddItemToArray(runs, o);
        if (code != SWA_EXIT_OK)
            exit_code = code;
        swa_run_results_free(&rr);
    }
    if (json_path) {
        char *text = cJSON_Print(root);
        if (!text || swa_write_text_file(json_path, text) != 0) {
            fprintf(stderr, "swadiff bench --harness: cannot write %s\n", json_path);
            exit_code = SWA_EXIT_RUNTIME;
        }
        cJSON_free(text);
    }
    cJSON_Delete(root);
    free(selected);
    swa_case_list_free(&all);
    return exit_code;
}
