/* cli_run.c — `swadiff run`, `validate` and `list`.
 *
 * Tested end to end by tests/test_cli.c (exit codes, filters, shards). */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "reference/reference.h"
#include "harness/cli.h"
#include "harness/dump.h"
#include "harness/report_console.h"
#include "harness/report.h"
#include "harness/run.h"
#include "harness/xfail.h"

static int run_usage(FILE *f)
{
    char backend_names[256];
    swa_backend_names_text(backend_names, sizeof backend_names);
    fprintf(f,
            "usage: swadiff run [OPTIONS] [CASES...]\n"
            "\n"
            "Runs every expanded case of the given case files or folders (default ./cases)\n"
            "through the backends each case names, on one device, and compares each output\n"
            "with the CPU reference.\n"
            "\n"
            "  -d, --device D      host | cuda | hip | auto (default auto: a GPU when usable);\n"
            "                      cuda:0,2 pins workers to those GPUs, cuda alone uses every visible GPU\n"
            "  -b, --backend B     only these backends (comma-separated): %s\n"
            "                      or PLUGIN:BACKEND (a glob) of a --plugin / --adapter\n"
            "      --plugin PATH   load a C plug-in (include/swadiff/plugin.h); its backends run\n"
            "                      as NAME:BACKEND on every case (repeatable)\n"
            "      --adapter NAME[=COMMAND]  start an out-of-process adapter\n"
            "                      (docs/adapter-protocol.md); without =COMMAND, NAME is looked\n"
            "                      up in the registry file (repeatable)\n"
            "      --adapters FILE adapter registry (default $SWADIFF_ADAPTERS or\n"
            "                      adapters/registry.json)\n"
            "      --adapter-timeout SEC  longest an adapter may take to answer (default 600)\n"
            "  -j, --jobs N        isolated workers pulling cases from one queue (default: the\n"
            "                      cores for the host, one per GPU); results are the same for any N\n"
            "  -f, --filter ID     only cases whose id equals ID or matches it as a glob\n"
            "                      (repeatable; a failing id pasted back reruns exactly it)\n"
            "  -w, --where EXPR    only cases (and backends) whose fields meet every condition:\n"
            "                      'dtype=bf16,backend=prefill,window_left>=0' (= != < <= > >=;\n"
            "                      fields: `swadiff list cases --fields`; docs/selection.md)\n"
            "      --xfail FILE    known failures, one `ID_GLOB [BACKEND_GLOB] # reason` a line\n"
            "                      (repeatable): a marked result that fails is xfailed (green),\n"
            "                      one that passes is xpassed (exit 1: remove the mark); a case's\n"
            "                      \"xfail\" key marks it too (docs/selection.md)\n"
            "  -r, --report DIR    write report.json, report.html, junit.xml (and\n"
            "                      results.jsonl, kept up to date as results arrive) in DIR\n"
            "  -s, --shard I/N     run only shard I of N (1-based, deterministic round robin\n"
            "                      over the selected cases in load order)\n"
            "  -m, --mutant NAME   switch on a known bug (swadiff list mutants)\n"
            "      --mutant-only ID  apply --mutant only to cases whose id matches ID (glob)\n"
            "      --dump DIR      write inputs, reference and outputs as .npy per case\n"
            "      --timeout SEC   per (case, backend) time limit, reported as error: timeout\n"
            "                      (with --repeat N, N times SEC)\n"
            "      --repeat N      run every (case, backend) N times on the same inputs (1 to %d);\n"
            "                      run 1 is compared with the reference, runs 2..N must equal it\n"
            "                      bitwise (output, LSE, guard bytes), else the result fails as\n"
            "                      nondeterministic (a backend that declares itself deterministic;\n"
            "                      for any other the differences are reported, not judged)\n"
            "      --invariance LIST  add self-comparisons to every case: batch (each request\n"
            "                      alone, the batch reversed), pages (another page order and\n"
            "                      size), split (split-KV forced on and off), comma-separated,\n"
            "                      or all (docs/invariance.md)\n"
            "      --deterministic plan the built-in backends in their deterministic mode\n"
            "      --no-explain    don't attach a diagnosis to failing results\n"
            "      --no-isolate    run in this process instead of a worker (for debuggers;\n"
            "                      a device fault then ends the run)\n"
            "  -q, --quiet         no per-result lines\n"
            "  -h, --help          this text\n"
            "\n"
            "exit: 0 all passed (skips allowed when something passed), 1 a mismatch or an xpassed,\n"
            "      2 usage or case-file error, 3 runtime error, 5 nothing compared (every\n"
            "      result skipped), 77 the device asked for is not usable here;\n"
            "      1 outranks 3, 3 outranks 5 (docs/spec.md)\n",
            backend_names, SWA_REPEAT_MAX);
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

int swa_cmd_run(int argc, char **argv, const char *prog)
{
    static const struct option opts[] = {
        {"device", required_argument, 0, 'd'}, {"backend", required_argument, 0, 'b'},
        {"filter", required_argument, 0, 'f'}, {"report", required_argument, 0, 'r'},
        {"shard", required_argument, 0, 's'},  {"mutant", required_argument, 0, 'm'},
        {"dump", required_argument, 0, 'D'},   {"timeout", required_argument, 0, 'T'},
        {"no-explain", no_argument, 0, 'E'},   {"quiet", no_argument, 0, 'q'},
        {"no-isolate", no_argument, 0, 'I'},   {"mutant-only", required_argument, 0, 'O'},
        {"plugin", required_argument, 0, 'P'}, {"adapter", required_argument, 0, 'A'},
        {"jobs", required_argument, 0, 'j'},
        {"adapters", required_argument, 0, 'R'}, {"adapter-timeout", required_argument, 0, 'W'},
        {"repeat", required_argument, 0, 'N'}, {"where", required_argument, 0, 'w'},
        {"xfail", required_argument, 0, 'X'},
        {"invariance", required_argument, 0, 'V'}, {"deterministic", no_argument, 0, 'Z'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    const char *device_name = "auto", *report_dir = NULL, *dump_dir = NULL, *mutant_only = NULL;
    const char *where_text = NULL;
    /* static: reachable until exit on every early return (no leak report) */
    static swa_xfail_list xfail;
    swa_xfail_free(&xfail);
    const char *plugins[SWA_EXTERNAL_MAX], *adapters[SWA_EXTERNAL_MAX], *externals[SWA_EXTERNAL_MAX];
    int nplugins = 0, nadapters = 0, nexternals = 0;
    const char *registry = getenv("SWADIFF_ADAPTERS");
    if (!registry || !*registry)
        registry = "adapters/registry.json";
    bool backends_selected = false;
    int jobs = 0; /* 0: the default (cores for the host, one per GPU) */
    const char *filters[64];
    int nfilters = 0, shard_i = 1, shard_n = 1;
    unsigned backend_mask = 0;
    swa_mutant mutant = SWA_MUTANT_NONE;
    double timeout = 0;
    int repeat = 1;
    unsigned invariance = 0;
    bool explain = true, quiet = false, no_isolate = false, deterministic = false;
    char bad[128];
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:b:f:r:s:m:j:w:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': device_name = optarg; break;
        case 'b': {
            backends_selected = true;
            char list[512];
            snprintf(list, sizeof list, "%s", optarg);
            for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (strchr(tok, ':')) { /* NS:BACKEND of a plug-in or adapter (a glob) */
                    if (nexternals == SWA_EXTERNAL_MAX) {
                        fprintf(stderr, "swadiff run: at most %d external --backend names\n", SWA_EXTERNAL_MAX);
                        return SWA_EXIT_USAGE;
                    }
                    static char stored[SWA_EXTERNAL_MAX][160];
                    snprintf(stored[nexternals], sizeof stored[nexternals], "%s", tok);
                    externals[nexternals] = stored[nexternals];
                    nexternals++;
                    continue;
                }
                unsigned flag = swa_cli_parse_backends(tok, bad, sizeof bad);
                if (!flag) {
                    char names[256];
                    swa_backend_names_text(names, sizeof names);
                    fprintf(stderr, "swadiff run: --backend: unknown backend '%s' (expected %s, or PLUGIN:BACKEND "
                                    "of a --plugin or --adapter)\n", bad, names);
                    return SWA_EXIT_USAGE;
                }
                backend_mask |= flag;
            }
            break;
        }
        case 'P':
        case 'A':
            if ((ch == 'P' ? nplugins : nadapters) == SWA_EXTERNAL_MAX) {
                fprintf(stderr, "swadiff run: at most %d --plugin / --adapter options\n", SWA_EXTERNAL_MAX);
                return SWA_EXIT_USAGE;
            }
            if (ch == 'P')
                plugins[nplugins++] = optarg;
            else
                adapters[nadapters++] = optarg;
            break;
        case 'R': registry = optarg; break;
        case 'j': {
            char *end;
            long j = strtol(optarg, &end, 10);
            if (end == optarg || *end || j < 1 || j > 1024) {
                fprintf(stderr, "swadiff run: --jobs %s: expected a number of workers from 1 to 1024\n", optarg);
                return SWA_EXIT_USAGE;
            }
            jobs = (int)j;
            break;
        }
        case 'W': {
            double t;
            if (swa_cli_parse_seconds(optarg, &t) != 0) {
                fprintf(stderr, "swadiff run: --adapter-timeout %s: expected a positive number of seconds, at most "
                        "%.0f\n", optarg, SWA_SECONDS_MAX);
                return SWA_EXIT_USAGE;
            }
            swa_external_set_reply_timeout(t);
            break;
        }
        case 'f':
            if (nfilters == 64) {
                fprintf(stderr, "swadiff run: at most 64 --filter options\n");
                return SWA_EXIT_USAGE;
            }
            filters[nfilters++] = optarg;
            break;
        case 'w':
            if (where_text) {
                fprintf(stderr, "swadiff run: --where given twice: join the conditions with ',' in one --where\n");
                return SWA_EXIT_USAGE;
            }
            where_text = optarg;
            break;
        case 'X': {
            char why[SWA_PATH_MAX + 300];
            if (swa_xfail_load(optarg, &xfail, why, sizeof why) != 0) {
                fprintf(stderr, "swadiff run: --xfail %s\n", why);
                return SWA_EXIT_USAGE;
            }
            break;
        }
        case 'r': report_dir = optarg; break;
        case 's':
            if (swa_cli_parse_shard(optarg, &shard_i, &shard_n) != 0) {
                fprintf(stderr, "swadiff run: --shard %s: expected I/N with 1 <= I <= N\n", optarg);
                return SWA_EXIT_USAGE;
            }
            break;
        case 'm':
            mutant = swa_mutant_by_name(optarg);
            if (mutant == SWA_MUTANT_COUNT) {
                fprintf(stderr, "swadiff run: --mutant %s: unknown (see `swadiff list mutants`)\n", optarg);
                return SWA_EXIT_USAGE;
            }
            break;
        case 'D': dump_dir = optarg; break;
        case 'T': {
            if (swa_cli_parse_seconds(optarg, &timeout) != 0) {
                fprintf(stderr, "swadiff run: --timeout %s: expected a positive number of seconds, at most %.0f\n",
                        optarg, SWA_SECONDS_MAX);
                return SWA_EXIT_USAGE;
            }
            break;
        }
        case 'N':
            if (swa_cli_parse_repeat(optarg, &repeat) != 0) {
                fprintf(stderr, "swadiff run: --repeat %s: expected a whole number of runs from 1 to %d\n", optarg,
                        SWA_REPEAT_MAX);
                return SWA_EXIT_USAGE;
            }
            break;
        case 'V':
            if (swa_cli_parse_invariance(optarg, &invariance) != 0) {
                char names[96];
                swa_invariance_names_text(names, sizeof names);
                fprintf(stderr, "swadiff run: --invariance %s: expected a comma-separated list of %s, or all\n",
                        optarg, names);
                return SWA_EXIT_USAGE;
            }
            break;
        case 'Z': deterministic = true; break;
        case 'E': explain = false; break;
        case 'I': no_isolate = true; break;
        case 'O': mutant_only = optarg; break;
        case 'q': quiet = true; break;
        case 'h': return run_usage(stdout);
        default: return run_usage(stderr);
        }
    }

    /* SWADIFF_NO_ISOLATE=1 is --no-isolate, with its refusals; any other
     * value but 0 or empty is a mistake, not a quiet switch */
    const char *no_iso_env = getenv("SWADIFF_NO_ISOLATE");
    if (no_iso_env && *no_iso_env && strcmp(no_iso_env, "0")) {
        if (strcmp(no_iso_env, "1")) {
            fprintf(stderr, "swadiff run: SWADIFF_NO_ISOLATE=%.40s: expected 1 (run in this process, as --no-isolate) "
                            "or 0 / unset (isolated workers)\n", no_iso_env);
            return SWA_EXIT_USAGE;
        }
        no_isolate = true;
    }

    char where_err[1600];
    /* static: reachable until exit on every early return below (no leak report) */
    static swa_where *where;
    where = where_text ? swa_where_parse(where_text, where_err, sizeof where_err) : NULL;
    if (where_text && !where) {
        fprintf(stderr, "swadiff run: %s\n", where_err);
        return SWA_EXIT_USAGE;
    }
    /* plug-ins and adapters: probed here, loaded in the worker */
    int reg_rc = swa_cli_register_externals("run", plugins, nplugins, adapters, nadapters, registry, quiet);
    if (reg_rc)
        return reg_rc;
    for (int g = 0; g < nexternals; g++) {
        int n, matched = 0;
        const swa_backend *const *ext = swa_external_backends(&n);
        for (int i = 0; i < n; i++)
            matched += fnmatch(externals[g], ext[i]->name, 0) == 0;
        if (!matched) {
            fprintf(stderr, "swadiff run: --backend %s: no --plugin or --adapter backend has that name%s\n",
                    externals[g], n ? " (see the registered names above)" : " (none registered)");
            return SWA_EXIT_USAGE;
        }
    }

    /* --where on `backend`: only the backends that meet it run (built-in
     * and external alike), on the cases the rest of it selects */
    static const char *where_externals[SWA_EXTERNAL_MAX * 4];
    if (swa_where_names_backend(where)) {
        unsigned allowed = 0;
        int n;
        const swa_backend *const *bs = swa_backends(&n);
        for (int i = 0; i < n; i++)
            if (swa_where_backend_ok(where, bs[i]->name))
                allowed |= bs[i]->flag;
        backend_mask = backends_selected || backend_mask ? backend_mask & allowed : allowed;
        const swa_backend *const *ext = swa_external_backends(&n);
        int kept_ext = 0;
        for (int i = 0; i < n && kept_ext < SWA_EXTERNAL_MAX * 4; i++) {
            bool runs = !backends_selected;
            for (int g = 0; !runs && g < nexternals; g++)
                runs = fnmatch(externals[g], ext[i]->name, 0) == 0;
            if (runs && swa_where_backend_ok(where, ext[i]->name))
                where_externals[kept_ext++] = ext[i]->name;
        }
        for (int g = 0; g < kept_ext; g++)
            externals[g] = where_externals[g];
        nexternals = kept_ext;
        backends_selected = true;
    }

    swa_case_list all = {0};
    int rc = swa_cli_load_cases(argc - optind, argv + optind, &all);
    if (rc) {
        swa_case_list_free(&all);
        return rc;
    }
    /* --invariance and --deterministic apply to every case, as if each case
     * file said so (the reproduce commands repeat them) */
    for (int i = 0; i < all.count; i++) {
        all.cases[i].invariance |= invariance;
        all.cases[i].deterministic = all.cases[i].deterministic || deterministic;
    }
    /* select: filters, then the shard over what the filters kept */
    int *selected = malloc(sizeof(int) * (size_t)(all.count > 0 ? all.count : 1));
    int nsel = 0, kept = 0;
    swa_run_config sel_cfg = {.backend_mask = backend_mask, .backends_selected = backends_selected,
                              .external_globs = externals, .num_external_globs = nexternals};
    for (int i = 0; i < all.count; i++) {
        if (!swa_cli_case_selected(&all.cases[i], filters, nfilters, where, &sel_cfg))
            continue;
        if (kept++ % shard_n == shard_i - 1)
            selected[nsel++] = i;
    }
    if ((nfilters || where) && kept == 0) {
        if (where)
            fprintf(stderr, "swadiff run: no case matches %s%s%s--where %s (fields: `swadiff list cases --fields`)\n",
                    nfilters ? "--filter " : "", nfilters ? filters[0] : "", nfilters ? " and " : "", where_text);
        else
            fprintf(stderr, "swadiff run: no case matches --filter %s (ids: `swadiff list cases`)\n", filters[0]);
        free(selected);
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }

    if (jobs > 1 && no_isolate) {
        fprintf(stderr, "swadiff run: --jobs %d needs isolated workers; drop --no-isolate (or SWADIFF_NO_ISOLATE=1) or "
                        "--jobs\n", jobs);
        free(selected);
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    if (timeout > 0 && no_isolate) {
        fprintf(stderr, "swadiff run: --timeout needs the isolated worker: it cannot stop a (case, backend) "
                        "running in this process; drop --no-isolate (or SWADIFF_NO_ISOLATE=1) or --timeout\n");
        free(selected);
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }

    if (dump_dir) {
        /* a folder that cannot be written fails here, not once per case */
        swa_error derr = {0};
        if (swa_dump_prepare(dump_dir, &derr) != SWA_OK) {
            const char *why = derr.message;
            fprintf(stderr, "swadiff run: --dump %s: %s\n", dump_dir, why + (strncmp(why, "dump: ", 6) ? 0 : 6));
            free(selected);
            swa_case_list_free(&all);
            return SWA_EXIT_USAGE;
        }
    }

    int dev_rc = SWA_EXIT_USAGE;
    char why_host[512] = "";
    const swa_device_ops *dev = swa_cli_device_why(device_name, &dev_rc, why_host, sizeof why_host);
    if (!dev) {
        free(selected);
        swa_case_list_free(&all);
        return dev_rc;
    }
    static int gpus[64];
    int num_gpus = swa_cli_gpu_ids(device_name, dev, gpus, 64, &dev_rc);
    if (num_gpus < 0) {
        free(selected);
        swa_case_list_free(&all);
        return dev_rc;
    }
    if (jobs == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = num_gpus > 0 ? num_gpus : cores > 0 ? (int)cores : 1;
    }
    /* always say where the kernels ran, and why not on a GPU when auto fell back */
    char desc[400] = "";
    dev->describe(desc, sizeof desc);
    fprintf(stderr, "swadiff: device %s (%s)%s%s; %d worker%s", dev->name, desc,
            why_host[0] ? "; --device auto: no GPU used: " : "", why_host, no_isolate ? 1 : jobs,
            !no_isolate && jobs > 1 ? "s" : "");
    for (int g = 0; g < num_gpus; g++)
        fprintf(stderr, "%s%d", g ? "," : " on GPU ", gpus[g]);
    fputc('\n', stderr);

    swa_run_config cfg = {
        .device = dev, .backend_mask = backend_mask, .mutant = mutant, .dump_dir = dump_dir,
        .backends_selected = backends_selected, .external_globs = externals, .num_external_globs = nexternals,
        .timeout = timeout, .explain_failures = explain, .quiet = quiet, .no_isolate = no_isolate,
        .mutant_only = mutant_only, .jobs = jobs, .gpus = gpus, .num_gpus = num_gpus,
        .repeat = repeat, .argv0 = prog, .xfail = &xfail, .invariance = invariance,
        .deterministic = deterministic,
    };
    if (swa_run_count_pairs(&cfg, &all, selected, nsel) == 0) {
        fprintf(stderr, "swadiff run: nothing to run: the %d selected case(s) and the backend selection give no "
                        "(case, backend) pair%s\n", nsel,
                nsel == 0 && shard_n > 1 ? " (this --shard is empty: use fewer shards than cases)" :
                backends_selected ? " (no selected case names a --backend given, and no plug-in or adapter matches)" : "");
        free(selected);
        swa_case_list_free(&all);
        return SWA_EXIT_USAGE;
    }
    swa_run_results rr = {0};
    swa_cli_environment(&rr.env, dev, argc, argv, prog);
    swa_cli_selection(&rr.selection, &all, argc - optind, argv + optind, filters, nfilters, where, where_text, shard_i,
                      shard_n, &cfg);
    rr.started = swa_now();
    rc = swa_run_selected(&cfg, &all, selected, nsel, report_dir, &rr);
    free(selected);
    swa_run_results_free(&rr);
    swa_case_list_free(&all);
    swa_where_free(where);
    where = NULL;
    swa_xfail_free(&xfail);
    return rc;
}

static int validate_usage(FILE *f)
{
    fprintf(f, "usage: swadiff validate CASES...\n\n"
               "Loads the case files (files or folders) strictly and prints how many cases each\n"
               "expands to.  Exit 0 when all are valid, 2 with file:line:column: /path: message\n"
               "for the first problem of each file otherwise.  Nothing is run.\n");
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

int swa_cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1)
        return ch == 'h' ? validate_usage(stdout) : validate_usage(stderr);
    if (optind >= argc)
        return validate_usage(stderr);
    /* one list for every path, as `run` loads them: duplicate ids across
     * paths and the per-load caps are checked exactly as a run checks them */
    int bad = 0, total = 0;
    swa_case_list list = {0};
    for (int i = optind; i < argc; i++) {
        swa_load_error le;
        memset(&le, 0, sizeof le);
        int before = list.count;
        if (swa_case_load_path(argv[i], &list, &le) != 0) {
            char msg[2048];
            swa_load_error_format(&le, msg, sizeof msg);
            fprintf(stderr, "%s\n", msg);
            bad++;
        } else {
            int added = list.count - before;
            printf("%s: ok, %d case%s\n", argv[i], added, added == 1 ? "" : "s");
            total += added;
        }
    }
    swa_case_list_free(&list);
    if (bad)
        return SWA_EXIT_USAGE;
    printf("%d case%s valid\n", total, total == 1 ? "" : "s");
    return SWA_EXIT_OK;
}

/* `list cases --fields`: every field --where can test, "name=value" on an
 * indented line; backend lists each backend the case runs, '|'-separated
 * (--where backend=X holds for any of them). */
static void print_case_fields(const swa_case *c)
{
    int n;
    const swa_case_field *fs = swa_case_fields(&n);
    fputs("   ", stdout);
    for (int k = 0; k < n; k++) {
        char value[SWA_PATH_MAX];
        if (!strcmp(fs[k].name, "backend")) {
            fputs(" backend=", stdout);
            for (int b = 0, first = 1; b < SWA_BACKEND_COUNT; b++)
                if (c->backends & (1u << b)) {
                    printf("%s%s", first ? "" : "|", swa_backend_names[b]);
                    first = 0;
                }
            continue;
        }
        if (swa_case_field_value(c, NULL, fs[k].name, value, sizeof value, NULL) < 0)
            continue;
        printf(" %s=%s", fs[k].name, value);
    }
    for (int r = 0; r < c->num_requests; r++)
        printf(" r%d.qo_len=%d r%d.kv_len=%d", r, c->qo_len[r], r, c->kv_len[r]);
    fputc('\n', stdout);
}

static int list_usage(FILE *f)
{
    fprintf(f, "usage: swadiff list backends | devices | mutants | cases [CASES...]\n"
               "       swadiff list cases [--where EXPR] [--fields] [CASES...]\n"
               "           --where: only the cases whose fields meet EXPR (as `run --where`);\n"
               "           --fields: under each id, every field --where can test, with its value\n"
               "       swadiff list devices --ctest-resource-spec FILE   (CTest resource spec: one slot per GPU)\n");
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

int swa_cmd_list(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"ctest-resource-spec", required_argument, 0, 'R'},
                                         {"where", required_argument, 0, 'w'},
        {"xfail", required_argument, 0, 'X'},
                                         {"fields", no_argument, 0, 'F'},
                                         {0, 0, 0, 0}};
    optind = 1;
    int ch;
    const char *spec_path = NULL, *where_text = NULL;
    bool fields = false;
    while ((ch = getopt_long(argc, argv, "hw:", opts, NULL)) != -1) {
        if (ch == 'R')
            spec_path = optarg;
        else if (ch == 'w')
            where_text = optarg;
        else if (ch == 'F')
            fields = true;
        else
            return ch == 'h' ? list_usage(stdout) : list_usage(stderr);
    }
    if (optind >= argc)
        return list_usage(stderr);
    const char *what = argv[optind];
    if (!strcmp(what, "backends")) {
        int n;
        const swa_backend *const *bs = swa_backends(&n);
        for (int i = 0; i < n; i++)
            printf("%-14s api %d  lse %-6s %s\n", bs[i]->name, bs[i]->api_version,
                   bs[i]->lse_base == 2.0 ? "base-2" : bs[i]->lse_base == 0 ? "none" : "natural",
                   bs[i]->description);
        return SWA_EXIT_OK;
    }
    if ((where_text || fields) && strcmp(what, "cases") != 0) {
        fprintf(stderr, "swadiff list: --where and --fields go with `list cases`\n");
        return SWA_EXIT_USAGE;
    }
    if (spec_path && strcmp(what, "devices") != 0) {
        fprintf(stderr, "swadiff list: --ctest-resource-spec goes with `list devices`\n");
        return SWA_EXIT_USAGE;
    }
    if (spec_path) {
        /* a CTest resource spec: one "gpus" slot per usable GPU of the
         * first GPU device (cmake/SwadiffCases.cmake asks for gpus:1) */
        const char *path = spec_path;
        char why[512] = "";
        int ids[64], n = 0, rc = 0;
        const swa_device_ops *gpu = swa_device_first_gpu(why, sizeof why);
        if (gpu)
            n = swa_cli_gpu_ids(gpu->name, gpu, ids, 64, &rc);
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "swadiff: cannot write %s: %s\n", path, strerror(errno));
            return SWA_EXIT_RUNTIME;
        }
        fprintf(f, "{\n  \"version\": {\"major\": 1, \"minor\": 0},\n  \"local\": [\n    {\n      \"gpus\": [");
        for (int i = 0; i < (n > 0 ? n : 0); i++)
            fprintf(f, "%s{\"id\": \"%d\", \"slots\": 1}", i ? ", " : "", ids[i]);
        fprintf(f, "]\n    }\n  ]\n}\n");
        if (fclose(f) != 0) {
            fprintf(stderr, "swadiff: writing %s failed: %s\n", path, strerror(errno));
            return SWA_EXIT_RUNTIME;
        }
        printf("%s: %d GPU slot(s)%s%s\n", path, n > 0 ? n : 0, gpu ? "" : " (no usable GPU: ", gpu ? "" : why);
        if (!gpu)
            printf(")\n");
        return SWA_EXIT_OK;
    }
    if (!strcmp(what, "devices")) {
        for (int k = 0; k < SWA_DEVICE_COUNT; k++) {
            const char *name = NULL, *cmake_option = NULL;
            const swa_device_ops *d = swa_device_at(k, &name, &cmake_option);
            if (!d) {
                printf("%-5s not built into this binary (-D%s=ON)\n", name, cmake_option);
                continue;
            }
            char why[512] = "", desc[512] = "";
            bool ok = d->available(why, sizeof why);
            if (ok)
                d->describe(desc, sizeof desc);
            printf("%-5s %s %s\n", d->name, ok ? "available:" : "unavailable:", ok ? desc : why);
            char each[SWA_MSG_MAX * 4] = "";
            if (d->describe_each)
                d->describe_each(each, sizeof each);
            for (char *save = NULL, *line = strtok_r(each, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                printf("      %s\n", line);
        }
        return SWA_EXIT_OK;
    }
    if (!strcmp(what, "mutants")) {
        for (int m = 1; m < SWA_MUTANT_COUNT; m++) {
            const swa_mutant_info *mi = swa_mutant_get((swa_mutant)m);
            printf("%-26s class %-2d [%s]\n    %s\n    from: %s\n", mi->name, mi->bug_class, mi->backends,
                   mi->what, mi->origin);
        }
        return SWA_EXIT_OK;
    }
    if (!strcmp(what, "cases")) {
        char where_err[1600];
        swa_where *where = where_text ? swa_where_parse(where_text, where_err, sizeof where_err) : NULL;
        if (where_text && !where) {
            fprintf(stderr, "swadiff list: %s\n", where_err);
            return SWA_EXIT_USAGE;
        }
        swa_case_list list = {0};
        int rc = swa_cli_load_cases(argc - optind - 1, argv + optind + 1, &list);
        int shown = 0;
        for (int i = 0; !rc && i < list.count; i++) {
            const swa_case *c = &list.cases[i];
            if (!swa_where_matches_any(where, c, NULL, 0))
                continue;
            shown++;
            printf("%s\n", c->id);
            if (fields)
                print_case_fields(c);
        }
        if (!rc && where && shown == 0) {
            fprintf(stderr, "swadiff list: no case matches --where %s (fields: `swadiff list cases --fields`)\n",
                    where_text);
            rc = SWA_EXIT_USAGE;
        }
        swa_where_free(where);
        swa_case_list_free(&list);
        return rc;
    }
    fprintf(stderr, "swadiff list: unknown list '%s'\n", what);
    return list_usage(stderr);
}
