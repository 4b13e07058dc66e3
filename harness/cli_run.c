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

/* ---------------------------------------------------------------------------
 * run, in three steps: parse argv into run_options, select (the backends,
 * the cases, the device) into run_selection, run.  Each step returns an exit
 * code, or SWA_CLI_GO_ON for the next; swa_cmd_run frees everything in
 * one place. */

/* What the command line (and SWADIFF_NO_ISOLATE) asked for. */
typedef struct run_options {
    const char *device_name, *report_dir, *dump_dir, *mutant_only, *where_text;
    const char *plugins[SWA_EXTERNAL_MAX], *adapters[SWA_EXTERNAL_MAX];
    int nplugins, nadapters;
    const char *registry;                          /* --adapters, $SWADIFF_ADAPTERS or the default */
    const char *externals[SWA_EXTERNAL_MAX];       /* NS:BACKEND globs of --backend */
    char external_names[SWA_EXTERNAL_MAX][160];    /* what externals point to */
    int nexternals;
    bool backends_selected;                        /* a --backend was given */
    unsigned backend_mask;                         /* its built-in backends */
    int jobs;                                      /* 0: the default (cores for the host, one per GPU) */
    const char *filters[64];
    int nfilters, shard_i, shard_n;
    swa_mutant mutant;
    double timeout;
    int repeat;
    unsigned invariance;
    bool explain, quiet, no_isolate, deterministic;
    swa_xfail_list xfail;                          /* every --xfail FILE */
    int npaths;                                    /* the CASES operands */
    char **paths;
} run_options;

/* What runs: the backends (after --where on `backend`), the selected cases
 * (indices into all), the device and its workers. */
typedef struct run_selection {
    swa_where *where;
    unsigned backend_mask;
    bool backends_selected;
    const char *externals[SWA_EXTERNAL_MAX * 4];   /* the globs, or the names --where lets run */
    int nexternals;
    swa_case_list all;
    int *selected, nsel;
    const swa_device_ops *dev;
    int gpus[64], num_gpus;
    int jobs;
} run_selection;

/* -b LIST: built-in names into backend_mask, NS:BACKEND globs kept as given. */
static int run_parse_backends(run_options *o, const char *arg)
{
    char list[512], bad[128];
    o->backends_selected = true;
    snprintf(list, sizeof list, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strchr(tok, ':')) { /* NS:BACKEND of a plug-in or adapter (a glob) */
            if (o->nexternals == SWA_EXTERNAL_MAX) {
                fprintf(stderr, "swadiff run: at most %d external --backend names\n", SWA_EXTERNAL_MAX);
                return SWA_EXIT_USAGE;
            }
            snprintf(o->external_names[o->nexternals], sizeof o->external_names[o->nexternals], "%s", tok);
            o->externals[o->nexternals] = o->external_names[o->nexternals];
            o->nexternals++;
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
        o->backend_mask |= flag;
    }
    return SWA_CLI_GO_ON;
}

/* The options whose value is checked: -j, --adapter-timeout, -s, -m,
 * --timeout, --repeat, --invariance. */
static int run_parse_checked(run_options *o, int ch, const char *arg)
{
    switch (ch) {
    case 'j': {
        char *end;
        long j = strtol(arg, &end, 10);
        if (end == arg || *end || j < 1 || j > 1024) {
            fprintf(stderr, "swadiff run: --jobs %s: expected a number of workers from 1 to 1024\n", arg);
            return SWA_EXIT_USAGE;
        }
        o->jobs = (int)j;
        break;
    }
    case 'W': {
        double t;
        if (swa_cli_parse_seconds(arg, &t) != 0) {
            fprintf(stderr, "swadiff run: --adapter-timeout %s: expected a positive number of seconds, at most "
                    "%.0f\n", arg, SWA_SECONDS_MAX);
            return SWA_EXIT_USAGE;
        }
        swa_external_set_reply_timeout(t);
        break;
    }
    case 's':
        if (swa_cli_parse_shard(arg, &o->shard_i, &o->shard_n) != 0) {
            fprintf(stderr, "swadiff run: --shard %s: expected I/N with 1 <= I <= N\n", arg);
            return SWA_EXIT_USAGE;
        }
        break;
    case 'm':
        o->mutant = swa_mutant_by_name(arg);
        if (o->mutant == SWA_MUTANT_COUNT) {
            fprintf(stderr, "swadiff run: --mutant %s: unknown (see `swadiff list mutants`)\n", arg);
            return SWA_EXIT_USAGE;
        }
        break;
    case 'T':
        if (swa_cli_parse_seconds(arg, &o->timeout) != 0) {
            fprintf(stderr, "swadiff run: --timeout %s: expected a positive number of seconds, at most %.0f\n",
                    arg, SWA_SECONDS_MAX);
            return SWA_EXIT_USAGE;
        }
        break;
    case 'N':
        if (swa_cli_parse_repeat(arg, &o->repeat) != 0) {
            fprintf(stderr, "swadiff run: --repeat %s: expected a whole number of runs from 1 to %d\n", arg,
                    SWA_REPEAT_MAX);
            return SWA_EXIT_USAGE;
        }
        break;
    case 'V':
        if (swa_cli_parse_invariance(arg, &o->invariance) != 0) {
            char names[96];
            swa_invariance_names_text(names, sizeof names);
            fprintf(stderr, "swadiff run: --invariance %s: expected a comma-separated list of %s, or all\n",
                    arg, names);
            return SWA_EXIT_USAGE;
        }
        break;
    default: break; /* run_parse_option sends only the options above */
    }
    return SWA_CLI_GO_ON;
}

/* One option from getopt_long (ch) with its argument (arg, NULL for none). */
static int run_parse_option(run_options *o, int ch, const char *arg)
{
    switch (ch) {
    case 'd': o->device_name = arg; break;
    case 'b': return run_parse_backends(o, arg);
    case 'P':
    case 'A':
        if ((ch == 'P' ? o->nplugins : o->nadapters) == SWA_EXTERNAL_MAX) {
            fprintf(stderr, "swadiff run: at most %d --plugin / --adapter options\n", SWA_EXTERNAL_MAX);
            return SWA_EXIT_USAGE;
        }
        if (ch == 'P')
            o->plugins[o->nplugins++] = arg;
        else
            o->adapters[o->nadapters++] = arg;
        break;
    case 'R': o->registry = arg; break;
    case 'f':
        if (o->nfilters == 64) {
            fprintf(stderr, "swadiff run: at most 64 --filter options\n");
            return SWA_EXIT_USAGE;
        }
        o->filters[o->nfilters++] = arg;
        break;
    case 'w':
        if (o->where_text) {
            fprintf(stderr, "swadiff run: --where given twice: join the conditions with ',' in one --where\n");
            return SWA_EXIT_USAGE;
        }
        o->where_text = arg;
        break;
    case 'X': {
        char why[SWA_PATH_MAX + 300];
        if (swa_xfail_load(arg, &o->xfail, why, sizeof why) != 0) {
            fprintf(stderr, "swadiff run: --xfail %s\n", why);
            return SWA_EXIT_USAGE;
        }
        break;
    }
    case 'j':
    case 'W':
    case 's':
    case 'm':
    case 'T':
    case 'N':
    case 'V':
        return run_parse_checked(o, ch, arg);
    case 'r': o->report_dir = arg; break;
    case 'D': o->dump_dir = arg; break;
    case 'Z': o->deterministic = true; break;
    case 'E': o->explain = false; break;
    case 'I': o->no_isolate = true; break;
    case 'O': o->mutant_only = arg; break;
    case 'q': o->quiet = true; break;
    case 'h': return run_usage(stdout);
    default: return run_usage(stderr);
    }
    return SWA_CLI_GO_ON;
}

/* argv (and SWADIFF_NO_ISOLATE) into o, which starts zeroed. */
static int run_parse(int argc, char **argv, run_options *o)
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
    o->device_name = "auto";
    o->registry = getenv("SWADIFF_ADAPTERS");
    if (!o->registry || !*o->registry)
        o->registry = "adapters/registry.json";
    o->shard_i = o->shard_n = 1;
    o->mutant = SWA_MUTANT_NONE;
    o->repeat = 1;
    o->explain = true;
    optind = 1;
    int ch, rc;
    while ((ch = getopt_long(argc, argv, "d:b:f:r:s:m:j:w:qh", opts, NULL)) != -1)
        if ((rc = run_parse_option(o, ch, optarg)) != SWA_CLI_GO_ON)
            return rc;
    o->npaths = argc - optind;
    o->paths = argv + optind;

    /* SWADIFF_NO_ISOLATE=1 is --no-isolate, with its refusals; any other
     * value but 0 or empty is a mistake, not a quiet switch */
    const char *no_iso_env = getenv("SWADIFF_NO_ISOLATE");
    if (no_iso_env && *no_iso_env && strcmp(no_iso_env, "0")) {
        if (strcmp(no_iso_env, "1")) {
            fprintf(stderr, "swadiff run: SWADIFF_NO_ISOLATE=%.40s: expected 1 (run in this process, as --no-isolate) "
                            "or 0 / unset (isolated workers)\n", no_iso_env);
            return SWA_EXIT_USAGE;
        }
        o->no_isolate = true;
    }
    return SWA_CLI_GO_ON;
}

/* --where on `backend`: only the backends that meet it run (built-in
 * and external alike), on the cases the rest of it selects */
static void run_where_backends(const run_options *o, run_selection *s)
{
    unsigned allowed = 0;
    int n;
    const swa_backend *const *bs = swa_backends(&n);
    for (int i = 0; i < n; i++)
        if (swa_where_backend_ok(s->where, bs[i]->name))
            allowed |= bs[i]->flag;
    s->backend_mask = o->backends_selected || o->backend_mask ? o->backend_mask & allowed : allowed;
    const swa_backend *const *ext = swa_external_backends(&n);
    int kept_ext = 0;
    for (int i = 0; i < n && kept_ext < SWA_EXTERNAL_MAX * 4; i++) {
        bool runs = !o->backends_selected;
        for (int g = 0; !runs && g < o->nexternals; g++)
            runs = fnmatch(o->externals[g], ext[i]->name, 0) == 0;
        if (runs && swa_where_backend_ok(s->where, ext[i]->name))
            s->externals[kept_ext++] = ext[i]->name;
    }
    s->nexternals = kept_ext;
    s->backends_selected = true;
}

/* --where parsed; the plug-ins and adapters registered and each NS:BACKEND
 * glob checked against their backends; then --where on `backend`. */
static int run_select_backends(const run_options *o, run_selection *s)
{
    char where_err[1600];
    s->where = o->where_text ? swa_where_parse(o->where_text, where_err, sizeof where_err) : NULL;
    if (o->where_text && !s->where) {
        fprintf(stderr, "swadiff run: %s\n", where_err);
        return SWA_EXIT_USAGE;
    }
    /* plug-ins and adapters: probed here, loaded in the worker */
    int reg_rc = swa_cli_register_externals("run", o->plugins, o->nplugins, o->adapters, o->nadapters, o->registry,
                                            o->quiet);
    if (reg_rc)
        return reg_rc;
    for (int g = 0; g < o->nexternals; g++) {
        int n, matched = 0;
        const swa_backend *const *ext = swa_external_backends(&n);
        for (int i = 0; i < n; i++)
            matched += fnmatch(o->externals[g], ext[i]->name, 0) == 0;
        if (!matched) {
            fprintf(stderr, "swadiff run: --backend %s: no --plugin or --adapter backend has that name%s\n",
                    o->externals[g], n ? " (see the registered names above)" : " (none registered)");
            return SWA_EXIT_USAGE;
        }
    }
    s->backend_mask = o->backend_mask;
    s->backends_selected = o->backends_selected;
    for (int g = 0; g < o->nexternals; g++)
        s->externals[g] = o->externals[g];
    s->nexternals = o->nexternals;
    if (swa_where_names_backend(s->where))
        run_where_backends(o, s);
    return SWA_CLI_GO_ON;
}

/* The cases loaded, then the filters, then the shard over what the filters kept. */
static int run_select_cases(const run_options *o, run_selection *s)
{
    int rc = swa_cli_load_cases(o->npaths, o->paths, &s->all);
    if (rc)
        return rc;
    /* --invariance and --deterministic apply to every case, as if each case
     * file said so (the reproduce commands repeat them) */
    for (int i = 0; i < s->all.count; i++) {
        s->all.cases[i].invariance |= o->invariance;
        s->all.cases[i].deterministic = s->all.cases[i].deterministic || o->deterministic;
    }
    s->selected = malloc(sizeof(int) * (size_t)(s->all.count > 0 ? s->all.count : 1));
    int kept = 0;
    swa_run_config sel_cfg = {.backend_mask = s->backend_mask, .backends_selected = s->backends_selected,
                              .external_globs = s->externals, .num_external_globs = s->nexternals};
    for (int i = 0; i < s->all.count; i++) {
        if (!swa_cli_case_selected(&s->all.cases[i], o->filters, o->nfilters, s->where, &sel_cfg))
            continue;
        if (kept++ % o->shard_n == o->shard_i - 1)
            s->selected[s->nsel++] = i;
    }
    if ((o->nfilters || s->where) && kept == 0) {
        if (s->where)
            fprintf(stderr, "swadiff run: no case matches %s%s%s--where %s (fields: `swadiff list cases --fields`)\n",
                    o->nfilters ? "--filter " : "", o->nfilters ? o->filters[0] : "", o->nfilters ? " and " : "",
                    o->where_text);
        else
            fprintf(stderr, "swadiff run: no case matches --filter %s (ids: `swadiff list cases`)\n", o->filters[0]);
        return SWA_EXIT_USAGE;
    }
    return SWA_CLI_GO_ON;
}

/* What needs the isolated worker; a --dump folder that cannot be written
 * fails here, not once per case. */
static int run_check_options(const run_options *o)
{
    if (o->jobs > 1 && o->no_isolate) {
        fprintf(stderr, "swadiff run: --jobs %d needs isolated workers; drop --no-isolate (or SWADIFF_NO_ISOLATE=1) or "
                        "--jobs\n", o->jobs);
        return SWA_EXIT_USAGE;
    }
    if (o->timeout > 0 && o->no_isolate) {
        fprintf(stderr, "swadiff run: --timeout needs the isolated worker: it cannot stop a (case, backend) "
                        "running in this process; drop --no-isolate (or SWADIFF_NO_ISOLATE=1) or --timeout\n");
        return SWA_EXIT_USAGE;
    }
    if (o->dump_dir) {
        swa_error derr = {0};
        if (swa_dump_prepare(o->dump_dir, &derr) != SWA_OK) {
            const char *why = derr.message;
            fprintf(stderr, "swadiff run: --dump %s: %s\n", o->dump_dir, why + (strncmp(why, "dump: ", 6) ? 0 : 6));
            return SWA_EXIT_USAGE;
        }
    }
    return SWA_CLI_GO_ON;
}

/* The device, its GPUs and the workers; says where the kernels run. */
static int run_select_device(const run_options *o, run_selection *s)
{
    int dev_rc = SWA_EXIT_USAGE;
    char why_host[512] = "";
    s->dev = swa_cli_device_why(o->device_name, &dev_rc, why_host, sizeof why_host);
    if (!s->dev)
        return dev_rc;
    s->num_gpus = swa_cli_gpu_ids(o->device_name, s->dev, s->gpus, 64, &dev_rc);
    if (s->num_gpus < 0)
        return dev_rc;
    s->jobs = o->jobs;
    if (s->jobs == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        s->jobs = s->num_gpus > 0 ? s->num_gpus : cores > 0 ? (int)cores : 1;
    }
    /* always say where the kernels ran, and why not on a GPU when auto fell back */
    char desc[400] = "";
    s->dev->describe(desc, sizeof desc);
    fprintf(stderr, "swadiff: device %s (%s)%s%s; %d worker%s", s->dev->name, desc,
            why_host[0] ? "; --device auto: no GPU used: " : "", why_host, o->no_isolate ? 1 : s->jobs,
            !o->no_isolate && s->jobs > 1 ? "s" : "");
    for (int g = 0; g < s->num_gpus; g++)
        fprintf(stderr, "%s%d", g ? "," : " on GPU ", s->gpus[g]);
    fputc('\n', stderr);
    return SWA_CLI_GO_ON;
}

/* Everything run selects, in the order of its checks (each one's message
 * and exit code outrank the later ones'). */
static int run_select(const run_options *o, run_selection *s)
{
    int rc = run_select_backends(o, s);
    if (rc == SWA_CLI_GO_ON)
        rc = run_select_cases(o, s);
    if (rc == SWA_CLI_GO_ON)
        rc = run_check_options(o);
    if (rc == SWA_CLI_GO_ON)
        rc = run_select_device(o, s);
    return rc;
}

/* Runs the selected (case, backend) pairs into rr and writes the reports. */
static int run_execute(const run_options *o, const run_selection *s, swa_run_results *rr, int argc, char **argv,
                       const char *prog)
{
    swa_run_config cfg = {
        .device = s->dev, .backend_mask = s->backend_mask, .mutant = o->mutant, .dump_dir = o->dump_dir,
        .backends_selected = s->backends_selected, .external_globs = s->externals,
        .num_external_globs = s->nexternals, .timeout = o->timeout, .explain_failures = o->explain,
        .quiet = o->quiet, .no_isolate = o->no_isolate, .mutant_only = o->mutant_only, .jobs = s->jobs,
        .gpus = s->gpus, .num_gpus = s->num_gpus, .repeat = o->repeat, .argv0 = prog, .xfail = &o->xfail,
        .invariance = o->invariance, .deterministic = o->deterministic,
    };
    if (swa_run_count_pairs(&cfg, &s->all, s->selected, s->nsel) == 0) {
        fprintf(stderr, "swadiff run: nothing to run: the %d selected case(s) and the backend selection give no "
                        "(case, backend) pair%s\n", s->nsel,
                s->nsel == 0 && o->shard_n > 1 ? " (this --shard is empty: use fewer shards than cases)" :
                s->backends_selected ? " (no selected case names a --backend given, and no plug-in or adapter "
                                       "matches)" : "");
        return SWA_EXIT_USAGE;
    }
    swa_cli_environment(&rr->env, s->dev, argc, argv, prog);
    swa_cli_selection(&rr->selection, &s->all, o->npaths, o->paths, o->filters, o->nfilters, s->where, o->where_text,
                      o->shard_i, o->shard_n, &cfg);
    rr->started = swa_now();
    return swa_run_selected(&cfg, &s->all, s->selected, s->nsel, o->report_dir, rr);
}

int swa_cmd_run(int argc, char **argv, const char *prog)
{
    run_options o = {0};
    run_selection s = {0};
    swa_run_results rr = {0};
    int rc = run_parse(argc, argv, &o);
    if (rc != SWA_CLI_GO_ON)
        goto out;
    rc = run_select(&o, &s);
    if (rc != SWA_CLI_GO_ON)
        goto out;
    rc = run_execute(&o, &s, &rr, argc, argv, prog);
out:
    free(s.selected);
    swa_run_results_free(&rr);
    swa_case_list_free(&s.all);
    swa_where_free(s.where);
    swa_xfail_free(&o.xfail);
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
