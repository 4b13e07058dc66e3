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
 * Truthful by refusal: merge combines the shards of one run, so it refuses
 * (exit 2, naming both inputs) what would count a result twice or compare
 * what does not compare:
 *   - the same file given twice (same device and inode, whatever the path);
 *   - a copy of a shard: the same created stamp, command line and result
 *     ids as an earlier one;
 *   - shards that overlap: a (case, backend, device, mutant) result in two
 *     inputs (the same --shard run twice, a rerun given with the original);
 *   - a report_version of another major (the reader refuses it) and shards
 *     written by different swadiff versions;
 *   - absurd sizes (the reader's caps, report_text.h) and more than
 *     SWA_REPORT_MAX_RESULTS results in all;
 *   - an incomplete or inconsistent shard set (report 1.4 records each
 *     shard's I/N and its selection): two values of N, two selections (other
 *     case files, other ids, backends, mutant or device), the same I twice,
 *     a missing I, or a report that records no shard at all.
 * --allow-missing merges a set with missing shards (or shards that record
 * none) anyway and marks the merged report incomplete, naming what is
 * missing; inconsistent sets are refused with or without it.
 * An incomplete shard (killed, or a results.jsonl) makes the merged run
 * incomplete, and a shard that recorded an exit code worse than its results
 * explain keeps the merged run there: no green report from a broken shard.
 * A complete merge records shard 1 of 1 with the shards' selection: it is
 * the unsharded run.  Everything merge prints goes through
 * swa_terminal_sanitize: a report's text may hold terminal escapes.
 *
 * Test: tests/test_report_json.c (merge of two shards),
 * tests/test_adversarial_merge.c (every refusal above, sanitized output),
 * tests/test_jobs.c (shards of a real run, a lost shard, --allow-missing).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/report_console.h"
#include "harness/report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: swadiff merge [--allow-missing] OUT_DIR REPORT.json [REPORT.json...]\n"
               "  Combines the reports of the shards of one run (`run --shard I/N`; report.json,\n"
               "  or results.jsonl of a shard that was killed) into OUT_DIR/report.json,\n"
               "  report.html and junit.xml.  Every shard 1..N must be given once, all with the\n"
               "  same N and the same selection (case files, filters, backends, mutant, device).\n"
               "  --allow-missing  merge a set with shards missing (or reports that record no\n"
               "                   shard) anyway; the merged report is marked incomplete (exit 3)\n"
               "  Exit code: that of the combined run (0 all passed, 1 a mismatch, 3 a runtime\n"
               "  error or an incomplete merge, 5 nothing compared), 2 when an input cannot be\n"
               "  read or the inputs are not the shards of one run (a file twice, overlapping\n"
               "  results, another swadiff version, another N or selection, a shard missing).\n");
}

/* How bad an exit code is, for keeping the worst: 0 < 5 < 3 (and any other
 * non-zero code) < 1, the order swa_run_results_summary gives them. */
static int exit_rank(int code)
{
    return code == SWA_EXIT_OK ? 0 : code == SWA_EXIT_NOTHING_COMPARED ? 1 : code == SWA_EXIT_MISMATCH ? 3 : 2;
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

/* Prints text to f with terminal escapes and other controls made visible. */
static void put_safe(FILE *f, const char *text)
{
    char *clean = swa_terminal_sanitize(text);
    fputs(clean ? clean : "(no memory to print this safely)\n", f);
    free(clean);
}

static void fail_message(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void fail_message(const char *fmt, ...)
{
    char msg[3 * SWA_PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fputs("swadiff merge: ", stderr);
    put_safe(stderr, msg);
    fputc('\n', stderr);
}

/* What identifies one input, kept after its results moved into merged. */
typedef struct shard_info {
    const char *path;
    bool have_file;
    dev_t dev;
    ino_t ino;
    double started;
    char command_line[sizeof ((swa_environment *)0)->command_line];
    int first, count;     /* its results in merged */
    uint64_t ids_hash;    /* order-independent hash of its result keys */
    int shard_index, shard_count; /* its --shard I/N (0/0: not recorded) */
} shard_info;

/* The first way two selections differ, as "what: A vs B" (NULL: none).
 * The case paths as typed are not compared (checkouts differ between
 * machines); the digests say whether the cases are the same. */
static const char *selection_difference(const swa_selection *a, const swa_selection *b, char *buf, size_t n)
{
#define SEL_SHOW(s) ((s)[0] ? (s) : "(none)")
    if (strcmp(a->case_files_digest, b->case_files_digest))
        snprintf(buf, n, "other case files (content digest %s vs %s: another version of the case files, or "
                 "another set of them; cases given: %s vs %s)", a->case_files_digest, b->case_files_digest,
                 a->paths, b->paths);
    else if (strcmp(a->case_ids_digest, b->case_ids_digest) || a->cases_selected != b->cases_selected)
        snprintf(buf, n, "other cases selected (%d cases, ids digest %s vs %d cases, ids digest %s; --filter %s "
                 "vs %s)", a->cases_selected, a->case_ids_digest, b->cases_selected, b->case_ids_digest,
                 SEL_SHOW(a->filters), SEL_SHOW(b->filters));
    else if (strcmp(a->filters, b->filters))
        snprintf(buf, n, "other --filter values (%s vs %s)", SEL_SHOW(a->filters), SEL_SHOW(b->filters));
    else if (strcmp(a->backends, b->backends))
        snprintf(buf, n, "other --backend (%s vs %s)", a->backends[0] ? a->backends : "(each case's own)",
                 b->backends[0] ? b->backends : "(each case's own)");
    else if (strcmp(a->external, b->external))
        snprintf(buf, n, "other plug-in / adapter backends (%s vs %s)", SEL_SHOW(a->external), SEL_SHOW(b->external));
    else if (strcmp(a->mutant, b->mutant) || strcmp(a->mutant_only, b->mutant_only))
        snprintf(buf, n, "another --mutant (%s%s%s vs %s%s%s)", SEL_SHOW(a->mutant), a->mutant_only[0] ? " only on " : "",
                 a->mutant_only, SEL_SHOW(b->mutant), b->mutant_only[0] ? " only on " : "", b->mutant_only);
    else if (strcmp(a->device, b->device))
        snprintf(buf, n, "another device (%s vs %s)", a->device, b->device);
    else
        return NULL;
#undef SEL_SHOW
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ',';
    return buf;
}

/* "3, 5, 6" (at most max numbers, then ", ...") of the indices 1..n not in seen */
static int missing_list(const unsigned char *seen, int n, char *buf, size_t size, int max)
{
    int missing = 0;
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 1; i <= n; i++) {
        if (seen[i])
            continue;
        if (missing < max && len < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%d", missing ? ", " : "", i);
        else if (missing == max && len < size)
            len += (size_t)snprintf(buf + len, size - len, ", ...");
        missing++;
    }
    return missing;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* a separator: ("ab","c") != ("a","bc") */
}

/* One result's identity in a merge: the same case on the same backend and
 * device under the same mutant must come from exactly one shard. */
static uint64_t result_key(const swa_result *r)
{
    uint64_t h = 1469598103934665603ull;
    h = fnv1a(h, r->id);
    h = fnv1a(h, r->backend);
    h = fnv1a(h, r->device);
    return fnv1a(h, r->mutant);
}

static bool same_result(const swa_result *a, const swa_result *b)
{
    return !strcmp(a->id, b->id) && !strcmp(a->backend, b->backend) && !strcmp(a->device, b->device) &&
           !strcmp(a->mutant, b->mutant);
}

/* Open-addressing set of indices into merged.items. */
typedef struct key_set {
    int *slots;
    size_t capacity;
} key_set;

/* Inserts item index i; returns the index already holding an equal result,
 * -1 after inserting, -2 out of memory. */
static int key_set_insert(key_set *set, const swa_run_results *rr, int i)
{
    if (!set->slots) {
        size_t cap = 1024;
        while (cap < (size_t)SWA_REPORT_MAX_RESULTS * 2 && cap < (size_t)rr->count * 4)
            cap *= 2;
        set->slots = malloc(cap * sizeof *set->slots);
        if (!set->slots)
            return -2;
        for (size_t k = 0; k < cap; k++)
            set->slots[k] = -1;
        set->capacity = cap;
    }
    size_t mask = set->capacity - 1, j = result_key(&rr->items[i]) & mask;
    while (set->slots[j] >= 0) {
        if (same_result(&rr->items[set->slots[j]], &rr->items[i]))
            return set->slots[j];
        j = (j + 1) & mask;
    }
    set->slots[j] = i;
    return -1;
}

static int shard_of(const shard_info *shards, int n, int item)
{
    for (int s = 0; s < n; s++)
        if (item >= shards[s].first && item < shards[s].first + shards[s].count)
            return s;
    return 0;
}

int swa_merge_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"allow-missing", no_argument, 0, 'M'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool allow_missing = false;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 'M') {
            allow_missing = true;
        } else {
            usage(ch == 'h' ? stdout : stderr);
            return ch == 'h' ? SWA_EXIT_OK : SWA_EXIT_USAGE;
        }
    }
    if (argc - optind < 2) {
        usage(stderr);
        return SWA_EXIT_USAGE;
    }
    const char *out_dir = argv[optind];
    char **inputs = argv + optind + 1;
    const int nshards = argc - optind - 1;
    /* the folder's lock, as a run takes it: a merge never writes into a
     * folder a live run (or another merge) is writing */
    static swa_environment lock_env;
    snprintf(lock_env.command_line, sizeof lock_env.command_line, "swadiff merge %s (%d inputs)", out_dir, nshards);
    int lock_fd = swa_report_lock_dir(out_dir, "merge", &lock_env);
    if (lock_fd < 0)
        return SWA_EXIT_USAGE;
    swa_run_results merged = {0};
    shard_info *shards = calloc((size_t)nshards, sizeof *shards);
    key_set keys = {NULL, 0};
    if (!shards) {
        fail_message("no memory for %d inputs", nshards);
        return SWA_EXIT_RUNTIME;
    }
    double first_start = 0, last_end = 0;
    char hosts[sizeof merged.env.host] = "";
    int code = SWA_EXIT_OK, shard_exit = SWA_EXIT_OK, shard_exit_from = -1;
    long long expected = 0;
    bool expected_known = true;
    /* the shard set: the first input that records its shard is the
     * reference every other one is checked against */
    int ref = -1, unrecorded = -1;
    swa_selection ref_sel = {0};
    unsigned char *seen = NULL; /* [1..N]: which shard indices were given */
    for (int i = 0; i < nshards && code == SWA_EXIT_OK; i++) {
        shard_info *me = &shards[i];
        me->path = inputs[i];
        struct stat sb;
        if (stat(me->path, &sb) == 0) {
            me->have_file = true;
            me->dev = sb.st_dev;
            me->ino = sb.st_ino;
            for (int j = 0; j < i; j++)
                if (shards[j].have_file && shards[j].dev == me->dev && shards[j].ino == me->ino) {
                    fail_message("input %d (%s) is the same file as input %d (%s): give each shard once", i + 1,
                                 me->path, j + 1, shards[j].path);
                    code = SWA_EXIT_USAGE;
                }
            if (code)
                break;
        }
        swa_run_results shard = {0};
        swa_error err = {0};
        if (swa_report_read(me->path, &shard, &err) != SWA_OK) {
            fail_message("%s", err.message);
            swa_run_results_free(&shard);
            code = SWA_EXIT_USAGE;
            break;
        }
        if (i > 0 && strcmp(shard.env.harness_version, merged.env.harness_version)) {
            fail_message("input %d (%s) was written by swadiff %s, input 1 (%s) by swadiff %s: merge reports of one "
                         "swadiff version (results of different versions are not comparable)",
                         i + 1, me->path, shard.env.harness_version[0] ? shard.env.harness_version : "(unknown)",
                         shards[0].path, merged.env.harness_version[0] ? merged.env.harness_version : "(unknown)");
            swa_run_results_free(&shard);
            code = SWA_EXIT_USAGE;
            break;
        }
        /* one shard set: the same N and the same selection, each I once */
        const swa_selection *sel = &shard.selection;
        me->shard_index = sel->shard_index;
        me->shard_count = sel->shard_count;
        char diff[2048];
        if (sel->shard_count == 0) {
            if (!allow_missing) {
                fail_message("input %d (%s) records no \"shard\" (a report older than report 1.4, or one not "
                             "written by `swadiff run`): merge cannot tell whether the set is complete; rerun the "
                             "shards with this swadiff, or give --allow-missing to merge anyway (the merged report "
                             "is then marked incomplete)", i + 1, me->path);
                code = SWA_EXIT_USAGE;
            } else if (unrecorded < 0) {
                unrecorded = i;
            }
        } else if (ref < 0) {
            ref = i;
            ref_sel = *sel;
            seen = calloc((size_t)sel->shard_count + 1, 1);
            if (!seen) {
                fail_message("no memory for a set of %d shards", sel->shard_count);
                code = SWA_EXIT_RUNTIME;
            }
        } else if (sel->shard_count != ref_sel.shard_count) {
            fail_message("input %d (%s) is shard %d of %d, input %d (%s) shard %d of %d: the shards of one run share "
                         "N (--shard I/N); these come from two runs", i + 1, me->path, sel->shard_index,
                         sel->shard_count, ref + 1, shards[ref].path, ref_sel.shard_index, ref_sel.shard_count);
            code = SWA_EXIT_USAGE;
        } else if (selection_difference(sel, &ref_sel, diff, sizeof diff)) {
            fail_message("input %d (%s) selected differently from input %d (%s): %s; the shards of one run select "
                         "the same cases", i + 1, me->path, ref + 1, shards[ref].path, diff);
            code = SWA_EXIT_USAGE;
        }
        if (code) {
            swa_run_results_free(&shard);
            break;
        }
        if (shard.count > SWA_REPORT_MAX_RESULTS - merged.count) {
            fail_message("input %d (%s): expected at most %d results in all inputs together, got %d", i + 1, me->path,
                         SWA_REPORT_MAX_RESULTS, merged.count + shard.count);
            swa_run_results_free(&shard);
            code = SWA_EXIT_USAGE;
            break;
        }
        me->started = shard.started;
        snprintf(me->command_line, sizeof me->command_line, "%s", shard.env.command_line);
        me->first = merged.count;
        me->count = shard.count;
        for (int k = 0; k < shard.count; k++)
            me->ids_hash += result_key(&shard.items[k]); /* a sum: the order of results does not matter */
        /* a copy of an earlier shard (the same run's report twice, under
         * another name or as report.json and results.jsonl) */
        for (int j = 0; j < i && !code; j++)
            if (shards[j].started == me->started && !strcmp(shards[j].command_line, me->command_line) &&
                shards[j].count == me->count && shards[j].ids_hash == me->ids_hash) {
                char created[32];
                swa_report_iso8601(me->started, created, sizeof created);
                fail_message("input %d (%s) is a copy of input %d (%s): the same run (created %s, command line "
                             "\"%s\") with the same %d results; give each shard once",
                             i + 1, me->path, j + 1, shards[j].path, created, me->command_line, me->count);
                code = SWA_EXIT_USAGE;
            }
        /* the same shard again (a rerun, or a copy the check above did not
         * recognize): before its results are compared one by one */
        if (!code && me->shard_count > 0) {
            if (seen[me->shard_index]) {
                int other = 0;
                while (other < i && !(shards[other].shard_count && shards[other].shard_index == me->shard_index))
                    other++;
                fail_message("input %d (%s) and input %d (%s) are both shard %d of %d: give each shard once (the "
                             "same shard run twice, or a rerun given with the original?)", i + 1, me->path, other + 1,
                             shards[other].path, me->shard_index, me->shard_count);
                code = SWA_EXIT_USAGE;
            }
            seen[me->shard_index] = 1;
        }
        if (code) {
            swa_run_results_free(&shard);
            break;
        }
        if (i == 0)
            merged.env = shard.env;
        else if (strcmp(merged.env.launch_target, shard.env.launch_target) != 0)
            merged.env.launch_target[0] = '\0'; /* shards of other GPUs: no one target to gate the launches by */
        add_unique_lines(merged.env.devices, sizeof merged.env.devices, shard.env.devices);
        add_unique_line(hosts, sizeof hosts, shard.env.host);
        if (i == 0 || (shard.started > 0 && shard.started < first_start))
            first_start = shard.started;
        if (shard.started + shard.duration > last_end)
            last_end = shard.started + shard.duration;
        if (shard.incomplete && !merged.incomplete) {
            merged.incomplete = true;
            snprintf(merged.incomplete_reason, sizeof merged.incomplete_reason, "input %d (%s) is incomplete: %s",
                     i + 1, me->path, shard.incomplete_reason);
        }
        if (shard.expected > 0)
            expected += shard.expected;
        else
            expected_known = false;
        /* an exit code the shard's results do not explain (a report that
         * could not be written, a device that failed outside any result) */
        int own = swa_run_results_summary(&shard, NULL, NULL, NULL, NULL);
        if (exit_rank(shard.exitcode) > exit_rank(own) && exit_rank(shard.exitcode) > exit_rank(shard_exit)) {
            shard_exit = shard.exitcode;
            shard_exit_from = i;
        }
        for (int k = 0; k < shard.count && !code; k++) {
            if (swa_run_results_add(&merged, &shard.items[k]) != 0) {
                fail_message("no memory for %d results", merged.count + 1);
                for (int rest = k + 1; rest < shard.count; rest++)
                    swa_compare_result_free(&shard.items[rest].cmp);
                code = SWA_EXIT_RUNTIME;
                break;
            }
            int holder = key_set_insert(&keys, &merged, merged.count - 1);
            if (holder == -2) {
                fail_message("no memory to check %d results for overlaps", merged.count);
                code = SWA_EXIT_RUNTIME;
            } else if (holder >= 0) {
                const swa_result *r = &merged.items[merged.count - 1];
                int other = shard_of(shards, i + 1, holder);
                fail_message("input %d (%s) repeats a result of input %d (%s): %s on %s (%s%s%s); shards of one run "
                             "never overlap (the same shard run twice, or a rerun given with the original?)",
                             i + 1, me->path, other + 1, shards[other].path, r->id, r->backend, r->device,
                             r->mutant[0] ? ", mutant " : "", r->mutant);
                code = SWA_EXIT_USAGE;
            }
            if (code)
                for (int rest = k + 1; rest < shard.count; rest++)
                    swa_compare_result_free(&shard.items[rest].cmp);
        }
        shard.count = 0; /* the results moved into merged (or were freed above) */
        swa_run_results_free(&shard);
    }
    free(keys.slots);
    /* a complete set: every shard 1..N given */
    char missing_text[160] = "";
    int missing = 0;
    if (code == SWA_EXIT_OK && ref >= 0) {
        missing = missing_list(seen, ref_sel.shard_count, missing_text, sizeof missing_text, 12);
        if (missing && !allow_missing) {
            fail_message("the shard set is incomplete: shard%s %s of %d %s missing (%d of %d given; input %d is %s); "
                         "give every shard's report, or --allow-missing to merge what is there (the merged report "
                         "is then marked incomplete)", missing == 1 ? "" : "s", missing_text, ref_sel.shard_count,
                         missing == 1 ? "is" : "are", ref_sel.shard_count - missing, ref_sel.shard_count, ref + 1,
                         shards[ref].path);
            code = SWA_EXIT_USAGE;
        }
    }
    free(seen);
    if (code != SWA_EXIT_OK) {
        free(shards);
        swa_run_results_free(&merged);
        return code;
    }
    /* what --allow-missing let through is said first: it is why the
     * merged report is incomplete even when every given shard finished */
    char why[sizeof merged.incomplete_reason] = "";
    if (missing)
        snprintf(why, sizeof why, "merged with --allow-missing: shard%s %s of %d missing", missing == 1 ? "" : "s",
                 missing_text, ref_sel.shard_count);
    if (unrecorded >= 0) {
        size_t len = strlen(why);
        snprintf(why + len, sizeof why - len, "%sinput %d (%s) records no shard, so the set's completeness is unknown",
                 len ? "; " : "merged with --allow-missing: ", unrecorded + 1, shards[unrecorded].path);
    }
    if (why[0]) {
        if (merged.incomplete) {
            char shard_reason[sizeof merged.incomplete_reason];
            snprintf(shard_reason, sizeof shard_reason, "%s", merged.incomplete_reason);
            snprintf(merged.incomplete_reason, sizeof merged.incomplete_reason, "%s; %s", why, shard_reason);
        } else {
            snprintf(merged.incomplete_reason, sizeof merged.incomplete_reason, "%s", why);
        }
        merged.incomplete = true;
    }
    /* the merged run is the unsharded run of the same selection */
    if (ref >= 0) {
        merged.selection = ref_sel;
        merged.selection.shard_index = merged.selection.shard_count = 1;
    }
    for (char *p = hosts; *p; p++)
        if (*p == '\n')
            *p = ',';
    snprintf(merged.env.host, sizeof merged.env.host, "%s", hosts);
    snprintf(merged.env.command_line, sizeof merged.env.command_line, "swadiff merge of %d report%s", nshards,
             nshards == 1 ? "" : "s");
    merged.started = first_start;
    merged.duration = last_end > first_start ? last_end - first_start : 0;
    merged.expected = expected_known && expected <= INT32_MAX ? (int)expected : 0;
    merged.exitcode = swa_run_results_summary(&merged, NULL, NULL, NULL, NULL);
    /* only a merge that would not fail anyway takes it (0 or 5); one that
     * already fails keeps its own reason */
    if ((merged.exitcode == SWA_EXIT_OK || merged.exitcode == SWA_EXIT_NOTHING_COMPARED) &&
        exit_rank(shard_exit) > exit_rank(merged.exitcode)) {
        fail_message("input %d (%s) recorded exit code %d, worse than its results give: the merged run keeps it",
                     shard_exit_from + 1, shards[shard_exit_from].path, shard_exit);
        merged.exitcode = shard_exit;
    }

    swa_error err = {0};
    if (swa_report_write_all(&merged, out_dir, &err) != SWA_OK) {
        fail_message("%s", err.message);
        free(shards);
        swa_run_results_free(&merged);
        return SWA_EXIT_RUNTIME;
    }
    /* the summary names ids and backends from the reports: printed through
     * a buffer that is sanitized first */
    char *summary = NULL;
    size_t summary_len = 0;
    FILE *mem = open_memstream(&summary, &summary_len);
    if (mem) {
        swa_console_write_summary(mem, &merged, false);
        fprintf(mem, "Merged %d report%s into %s/report.html (also report.json, junit.xml)\n", nshards,
                nshards == 1 ? "" : "s", out_dir);
        fclose(mem);
        put_safe(stdout, summary);
        free(summary);
    }
    swa_flush(stdout);
    code = merged.exitcode;
    free(shards);
    swa_run_results_free(&merged);
    return code;
}
