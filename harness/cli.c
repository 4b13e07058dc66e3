/* cli.c — the helpers every subcommand shares: loading case paths, device
 * selection, --shard and --backend parsing, the report environment.
 *
 * Tested end to end by tests/test_cli.c. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "reference/reference.h"
#include "harness/cli.h"
#include "harness/report_console.h"
#include "harness/report.h"
#include "harness/run.h"

int swa_cli_load_cases(int npaths, char **paths, swa_case_list *list)
{
    static char *default_paths[] = {"cases"};
    if (npaths == 0) {
        struct stat st;
        if (stat("cases", &st) != 0) {
            fprintf(stderr, "swadiff: no CASES given and no ./cases folder here: name case files or folders\n");
            return SWA_EXIT_USAGE;
        }
        npaths = 1;
        paths = default_paths;
    }
    int errors = 0;
    for (int i = 0; i < npaths; i++) {
        swa_load_error le;
        memset(&le, 0, sizeof le);
        if (swa_case_load_path(paths[i], list, &le) != 0) {
            char msg[2048];
            swa_load_error_format(&le, msg, sizeof msg);
            fprintf(stderr, "%s\n", msg);
            errors++;
        }
    }
    return errors ? SWA_EXIT_USAGE : 0;
}

/* "cuda:0,2" -> ids {0, 2}: distinct indices 0..1023.  Returns the count
 * (0 without ':'), or -1 after printing why.  A usage error comes before
 * any question to the device (exit 2, not 77). */
static int parse_gpu_list(const char *name, int *ids, int max)
{
    const char *colon = strchr(name, ':');
    if (!colon)
        return 0;
    char list[256];
    snprintf(list, sizeof list, "%s", colon + 1);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long id = strtol(tok, &end, 10);
        if (end == tok || *end || id < 0 || id > 1023 || n == max) {
            fprintf(stderr, "swadiff: --device %s: expected DEVICE:I[,J...] with GPU indices 0..1023\n", name);
            return -1;
        }
        for (int k = 0; k < n; k++)
            if (ids[k] == id) {
                fprintf(stderr, "swadiff: --device %s: GPU %ld named twice\n", name, id);
                return -1;
            }
        ids[n++] = (int)id;
    }
    if (n == 0) {
        fprintf(stderr, "swadiff: --device %s: no GPU index after ':'\n", name);
        return -1;
    }
    return n;
}

int swa_cli_gpu_ids(const char *device_arg, const swa_device_ops *dev, int *ids, int max, int *exit_code)
{
    if (!dev || dev->kind == SWA_DEVICE_HOST)
        return 0;
    const char *colon = device_arg ? strchr(device_arg, ':') : NULL;
    int n = 0;
    const char *env_name = dev->kind == SWA_DEVICE_HIP ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
    if (colon) {
        n = parse_gpu_list(device_arg, ids, max);
        if (n < 0) {
            *exit_code = SWA_EXIT_USAGE;
            return -1;
        }
    } else {
        /* under `ctest --resource-spec-file`, the GPU CTest allotted */
        const char *ctest = getenv("CTEST_RESOURCE_GROUP_COUNT") ? getenv("CTEST_RESOURCE_GROUP_0_GPUS") : NULL;
        if (ctest && strncmp(ctest, "id:", 3) == 0) {
            ids[0] = atoi(ctest + 3);
            return 1;
        }
        /* every visible GPU: the user's *_VISIBLE_DEVICES list, else the driver's */
        const char *vis = getenv(env_name);
        if (vis && *vis) {
            char list[256];
            snprintf(list, sizeof list, "%s", vis);
            for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
                ids[n++] = atoi(tok);
        } else {
            DIR *d = opendir(dev->kind == SWA_DEVICE_CUDA ? "/proc/driver/nvidia/gpus" : "/nonexistent");
            struct dirent *de;
            while (d && (de = readdir(d)) && n < max)
                if (de->d_name[0] != '.')
                    ids[n] = n, n++;
            if (d)
                closedir(d);
        }
        if (n == 0)
            ids[n++] = 0;
        if (!(vis && *vis))
            return n; /* the devices the driver lists: pin by index */
    }
    /* each named GPU must be usable on its own: probe it pinned */
    char *saved = getenv(env_name) ? strdup(getenv(env_name)) : NULL;
    for (int k = 0; k < n; k++) {
        char id[16], why[512] = "";
        snprintf(id, sizeof id, "%d", ids[k]);
        setenv(env_name, id, 1);
        bool ok = dev->available(why, sizeof why);
        if (!ok) {
            fprintf(stderr, "swadiff: --device %s: GPU %d is not usable: %s\n", device_arg, ids[k], why);
            *exit_code = SWA_EXIT_NO_GPU;
            n = -1;
            break;
        }
    }
    if (saved) {
        setenv(env_name, saved, 1);
        free(saved);
    } else {
        unsetenv(env_name);
    }
    return n;
}

const swa_device_ops *swa_cli_device(const char *name, int *exit_code)
{
    return swa_cli_device_why(name, exit_code, NULL, 0);
}

const swa_device_ops *swa_cli_device_why(const char *name, int *exit_code, char *why_host, size_t why_n)
{
    char why[512] = "";
    if (why_host && why_n)
        why_host[0] = '\0';
    if (!name || !strcmp(name, "auto")) {
        const swa_device_ops *gpu = swa_device_first_gpu(why, sizeof why);
        if (!gpu && why_host) {
            bool any_gpu_built = false;
            for (int k = 0; k < SWA_DEVICE_COUNT; k++) {
                const swa_device_ops *d = swa_device_at(k, NULL, NULL);
                any_gpu_built = any_gpu_built || (d && d->kind != SWA_DEVICE_HOST);
            }
            snprintf(why_host, why_n, "%s", any_gpu_built ? why : "this swadiff was built without a GPU device");
        }
        return gpu ? gpu : swa_device_get(SWA_DEVICE_HOST);
    }
    int ids[64];
    if (parse_gpu_list(name, ids, 64) < 0) {
        *exit_code = SWA_EXIT_USAGE;
        return NULL;
    }
    const char *cmake_option = NULL;
    char base[32];
    snprintf(base, sizeof base, "%.*s", (int)strcspn(name, ":"), name); /* "cuda:0,2" -> "cuda" */
    const swa_device_ops *d = swa_device_by_name(base, &cmake_option);
    if (!d && !cmake_option) {
        char names[128];
        swa_device_names_text(names, sizeof names);
        fprintf(stderr, "swadiff: --device %s: expected %s (or auto)\n", name, names);
        *exit_code = SWA_EXIT_USAGE;
        return NULL;
    }
    if (!d) {
        fprintf(stderr, "swadiff: --device %s: this swadiff was built without the %s device "
                        "(reconfigure with -D%s=ON)\n",
                name, base, cmake_option);
        *exit_code = SWA_EXIT_NO_GPU;
        return NULL;
    }
    if (!d->available(why, sizeof why)) {
        fprintf(stderr, "swadiff: --device %s: %s\n", name, why);
        *exit_code = d->kind == SWA_DEVICE_HOST ? SWA_EXIT_RUNTIME : SWA_EXIT_NO_GPU;
        return NULL;
    }
    return d;
}

int swa_cli_parse_shard(const char *s, int *index, int *count)
{
    char *end;
    errno = 0;
    long i = strtol(s, &end, 10);
    if (errno || end == s || *end != '/')
        return -1;
    const char *p = end + 1;
    long n = strtol(p, &end, 10);
    if (errno || end == p || *end != '\0' || n < 1 || i < 1 || i > n || n > 1000000)
        return -1;
    *index = (int)i;
    *count = (int)n;
    return 0;
}

int swa_cli_parse_seconds(const char *s, double *out)
{
    char *end;
    double t = strtod(s, &end);
    if (end == s || *end || !(t > 0) || !(t <= SWA_SECONDS_MAX))
        return -1;
    *out = t;
    return 0;
}

int swa_cli_parse_invariance(const char *s, unsigned *set)
{
    unsigned v = 0;
    if (!*s)
        return -1;
    if (!strcmp(s, "all")) {
        *set = SWA_INV_ALL;
        return 0;
    }
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned f = swa_invariance_flag_by_name(tok);
        if (!f)
            return -1;
        v |= f;
    }
    if (!v || s[strlen(s) - 1] == ',' || s[0] == ',' || strstr(s, ",,"))
        return -1;
    *set = v;
    return 0;
}

int swa_cli_parse_repeat(const char *s, int *count)
{
    long v = 0;
    if (!*s)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > SWA_REPEAT_MAX)
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > SWA_REPEAT_MAX)
        return -1;
    *count = (int)v;
    return 0;
}

unsigned swa_cli_parse_backends(const char *s, char *bad, size_t n)
{
    unsigned mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const swa_backend *b = swa_backend_by_name(tok);
        if (!b) {
            snprintf(bad, n, "%s", tok);
            return 0;
        }
        mask |= b->flag;
    }
    if (!mask)
        snprintf(bad, n, "%s", s);
    return mask;
}

void swa_cli_environment(swa_environment *env, const swa_device_ops *dev, int argc, char **argv,
                             const char *prog)
{
    memset(env, 0, sizeof *env);
    snprintf(env->harness_version, sizeof env->harness_version, "%s", SWADIFF_VERSION);
    snprintf(env->git_revision, sizeof env->git_revision, "%s", SWADIFF_GIT_REVISION);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(env->host, sizeof env->host, "%s %s %s", u.nodename, u.sysname, u.machine);
    char desc[400] = "";
    dev->describe(desc, sizeof desc);
    snprintf(env->devices, sizeof env->devices, "%s: %s", dev->name, desc);
    snprintf(env->toolkit, sizeof env->toolkit, "%s", desc);

    size_t k = (size_t)snprintf(env->command_line, sizeof env->command_line, "%s", prog);
    for (int i = 0; i < argc && k < sizeof env->command_line; i++)
        k += (size_t)snprintf(env->command_line + k, sizeof env->command_line - k, " %s", argv[i]);
}


/* ---- what a run selected (report 1.4) -------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* s appended to a '\n'-separated list (cut short, never overrun, when full) */
static void list_add(char *list, size_t n, const char *s)
{
    size_t used = strlen(list);
    snprintf(list + used, n - used, "%s%s", used ? "\n" : "", s);
}

/* The bytes of one case file into the digest; a file that cannot be read
 * again (removed since it was loaded) counts as its path and errno. */
static uint64_t digest_file(uint64_t h, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        char why[SWA_PATH_MAX + 64];
        int n = snprintf(why, sizeof why, "unreadable %s: %d", path, errno);
        return fnv1a(h, why, (size_t)(n > 0 ? n : 0));
    }
    char buf[1 << 14];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        h = fnv1a(h, buf, got);
    fclose(f);
    return fnv1a(h, "\0", 1); /* a separator: two files are not their concatenation */
}

bool swa_cli_case_selected(const swa_case *c, const char *const *filters, int nfilters, const swa_where *where,
                           const swa_run_config *cfg)
{
    bool match = nfilters == 0;
    for (int f = 0; f < nfilters && !match; f++)
        match = swa_case_matches(c, filters[f]);
    if (!match || !where)
        return match;
    /* the backends this run lets run the case: its own built-in ones (less
     * what --backend leaves out), and the plug-in / adapter ones */
    swa_case own = *c;
    if (cfg->backends_selected || cfg->backend_mask)
        own.backends &= cfg->backend_mask;
    int n;
    const swa_backend *const *ext = swa_external_backends(&n);
    const char *names[SWA_EXTERNAL_MAX * 4];
    int nnames = 0;
    for (int i = 0; i < n && nnames < (int)(sizeof names / sizeof *names); i++) {
        bool runs = !cfg->backends_selected;
        for (int g = 0; !runs && g < cfg->num_external_globs; g++)
            runs = fnmatch(cfg->external_globs[g], ext[i]->name, 0) == 0;
        if (runs)
            names[nnames++] = ext[i]->name;
    }
    return swa_where_matches_any(where, &own, names, nnames);
}

void swa_cli_selection(swa_selection *sel, const swa_case_list *all, int npaths, char **paths,
                       const char *const *filters, int nfilters, const swa_where *where, const char *where_text,
                       int shard_i, int shard_n, const swa_run_config *cfg)
{
    memset(sel, 0, sizeof *sel);
    sel->shard_index = shard_i;
    sel->shard_count = shard_n;
    if (npaths == 0)
        list_add(sel->paths, sizeof sel->paths, "cases");
    for (int i = 0; i < npaths; i++)
        list_add(sel->paths, sizeof sel->paths, paths[i]);
    for (int f = 0; f < nfilters; f++)
        list_add(sel->filters, sizeof sel->filters, filters[f]);
    if (where_text) { /* a shard selected with another --where is another run */
        char line[600];
        snprintf(line, sizeof line, "--where %s", where_text);
        list_add(sel->filters, sizeof sel->filters, line);
    }
    /* every case file loaded, each once, in load order (cases of one file
     * are contiguous in the list) */
    uint64_t files = 1469598103934665603ull, ids = 1469598103934665603ull;
    for (int i = 0; i < all->count; i++)
        if (i == 0 || strcmp(all->cases[i].file, all->cases[i - 1].file) != 0)
            files = digest_file(files, all->cases[i].file);
    /* the ids the filters keep, as `run` selects them before the shard */
    for (int i = 0; i < all->count; i++) {
        if (!swa_cli_case_selected(&all->cases[i], filters, nfilters, where, cfg))
            continue;
        sel->cases_selected++;
        ids = fnv1a(ids, all->cases[i].id, strlen(all->cases[i].id) + 1);
    }
    snprintf(sel->case_files_digest, sizeof sel->case_files_digest, "%016llx", (unsigned long long)files);
    snprintf(sel->case_ids_digest, sizeof sel->case_ids_digest, "%016llx", (unsigned long long)ids);
    /* --backend in registry order (the order it was typed in changes nothing) */
    if (cfg->backends_selected) {
        int n;
        const swa_backend *const *bs = swa_backends(&n);
        for (int i = 0; i < n; i++)
            if (cfg->backend_mask & bs[i]->flag)
                list_add(sel->backends, sizeof sel->backends, bs[i]->name);
        for (int g = 0; g < cfg->num_external_globs; g++)
            list_add(sel->backends, sizeof sel->backends, cfg->external_globs[g]);
        for (char *p = sel->backends; *p; p++)
            if (*p == '\n')
                *p = ',';
    }
    int n;
    const swa_backend *const *ext = swa_external_backends(&n);
    for (int i = 0; i < n; i++) {
        bool selected = !cfg->backends_selected;
        for (int g = 0; !selected && g < cfg->num_external_globs; g++)
            selected = fnmatch(cfg->external_globs[g], ext[i]->name, 0) == 0;
        if (selected)
            list_add(sel->external, sizeof sel->external, ext[i]->name);
    }
    if (cfg->mutant != SWA_MUTANT_NONE)
        snprintf(sel->mutant, sizeof sel->mutant, "%s", swa_mutant_get(cfg->mutant)->name);
    snprintf(sel->mutant_only, sizeof sel->mutant_only, "%s", cfg->mutant_only ? cfg->mutant_only : "");
    snprintf(sel->device, sizeof sel->device, "%s", cfg->device->name);
}

int swa_cli_register_externals(const char *cmd, const char *const *plugins, int nplugins,
                               const char *const *adapters, int nadapters, const char *registry, bool quiet)
{
    for (int i = 0; i < nplugins + nadapters; i++) {
        swa_error err = {0};
        char note[900] = "";
        swa_status st;
        if (i < nplugins) {
            st = swa_external_add_plugin(plugins[i], note, sizeof note, &err);
        } else {
            const char *spec = adapters[i - nplugins], *eq = strchr(spec, '=');
            if (eq) {
                char *name = strndup(spec, (size_t)(eq - spec)); /* whole: a long name is refused, not cut */
                st = name ? swa_external_add_adapter(name, eq + 1, note, sizeof note, &err)
                          : swa_error_set(&err, SWA_ERR_NOMEM, "no memory for an adapter name");
                free(name);
            } else {
                st = swa_external_add_adapter_from_registry(registry, spec, note, sizeof note, &err);
            }
        }
        if (st != SWA_OK) {
            fprintf(stderr, "swadiff %s: %s: %s\n", cmd, i < nplugins ? "--plugin" : "--adapter", err.message);
            return SWA_EXIT_USAGE;
        }
        if (!quiet)
            fprintf(stderr, "swadiff: %s\n", note);
    }
    return 0;
}
