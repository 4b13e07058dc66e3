/* test_hip_build.c — the ROCm HIP build as CI and a user see it:
 *   - every kernel object hipcc produced carries a code object (an AMDGPU
 *     ELF) for each target of SWADIFF_HIP_ARCHITECTURES (the offload bundle
 *     inside the object's .hip_fatbin section is parsed here, no tools);
 *   - the binary has the "hip" device, `swadiff list devices` lists it, and
 *     on a machine without an AMD GPU `swadiff run --device hip` exits 77
 *     with "no ROCm device";
 *   - a binary built without HIP says so and exits 77 as well.
 *
 * Run: ctest --test-dir build -R test_hip_build (cmake/hip.cmake decides
 * whether the build has HIP; both halves are meaningful). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"

#define DATA SWADIFF_SOURCE_DIR "/tests/data/cli"

/* Runs a shell command, captures stdout+stderr into out, returns the exit code. */
static int run(const char *cmd, char *out, size_t n)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert(p, "popen(%s)", cmd);
    size_t k = fread(out, 1, n - 1, p);
    out[k] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#ifdef SWADIFF_HAVE_HIP

/* An AMD GPU this process could use (the ROCm kernel driver's node). */
static int machine_has_amd_gpu(void) { return access("/dev/kfd", F_OK) == 0; }

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s (the HIP object should have been built)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n);
    cr_assert(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "short read of %s", path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Checks that the clang offload bundle in obj holds a non-empty AMDGPU ELF
 * for target `arch` (entry "hipv4-amdgcn-amd-amdhsa--<arch>", optionally
 * followed by ":features").  Bundle layout: magic, u64 count, then per entry
 * u64 offset, u64 size, u64 id length, id (offsets from the magic). */
static void expect_code_object(const char *path, const unsigned char *obj, size_t len, const char *arch)
{
    static const char magic[] = "__CLANG_OFFLOAD_BUNDLE__";
    const size_t mlen = sizeof magic - 1;
    const unsigned char *b = NULL;
    for (size_t i = 0; i + mlen <= len; i++)
        if (!memcmp(obj + i, magic, mlen)) {
            b = obj + i;
            break;
        }
    cr_assert(b, "%s: no offload bundle (no device code at all)", path);
    size_t avail = len - (size_t)(b - obj), at = mlen;
    cr_assert(avail >= at + 8, "%s: truncated bundle header", path);
    uint64_t count = le64(b + at);
    at += 8;
    char want[128];
    snprintf(want, sizeof want, "hipv4-amdgcn-amd-amdhsa--%s", arch);
    size_t wlen = strlen(want);
    for (uint64_t e = 0; e < count; e++) {
        cr_assert(avail >= at + 24, "%s: truncated bundle entry %llu", path, (unsigned long long)e);
        uint64_t off = le64(b + at), size = le64(b + at + 8), idlen = le64(b + at + 16);
        at += 24;
        cr_assert(avail >= at + idlen, "%s: truncated bundle id %llu", path, (unsigned long long)e);
        const char *id = (const char *)b + at;
        at += idlen;
        if (idlen < wlen || memcmp(id, want, wlen) || (idlen > wlen && id[wlen] != ':')) continue;
        cr_assert(size >= 64 && off + size <= avail, "%s: code object for %s has size %llu at %llu", path, arch,
                  (unsigned long long)size, (unsigned long long)off);
        const unsigned char *elf = b + off;
        cr_assert(!memcmp(elf, "\x7f" "ELF", 4), "%s: the %s entry is not an ELF code object", path, arch);
        unsigned machine = elf[18] | (elf[19] << 8);
        cr_assert_eq(machine, 224u, "%s: the %s code object has e_machine %u, expected 224 (EM_AMDGPU)", path, arch,
                     machine);
        return;
    }
    cr_assert_fail("%s: no code object for %s among %llu bundle entries", path, arch, (unsigned long long)count);
}

Test(hip_build, every_kernel_object_carries_every_target)
{
    const char *objects[] = {"prefill.o", "decode_fa2.o", "decode_aiter.o"};
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SWADIFF_HIP_OBJECT_DIR, objects[i]);
        size_t len;
        unsigned char *obj = read_file(path, &len);
        char targets[256];
        snprintf(targets, sizeof targets, "%s", SWADIFF_HIP_TARGET_LIST);
        int n = 0;
        for (char *save = NULL, *t = strtok_r(targets, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
            expect_code_object(path, obj, len, t);
        cr_expect_gt(n, 0, "no HIP targets configured (%s)", SWADIFF_HIP_TARGET_LIST);
        free(obj);
    }
}

Test(hip_build, hip_device_is_in_the_registry)
{
    const swa_device_ops *d = swa_device_get(SWA_DEVICE_HIP);
    cr_assert_not_null(d, "built with SWADIFF_HAVE_HIP but the registry has no HIP device");
    cr_expect_str_eq(d->name, "hip");
    cr_expect_eq(d->kind, SWA_DEVICE_HIP);
    if (machine_has_amd_gpu()) return;
    char why[512] = "";
    cr_expect_not(d->available(why, sizeof why), "available() said yes on a machine without /dev/kfd");
    cr_expect(strncmp(why, "no ROCm device: ", 16) == 0, "available() reason: '%s'", why);
}

Test(hip_build, list_devices_lists_hip)
{
    char out[8192];
    int rc = run(SWADIFF_BINARY " list devices", out, sizeof out);
    cr_assert_eq(rc, 0, "swadiff list devices exited %d:\n%s", rc, out);
    const char *line = strstr(out, "\nhip ");
    if (!line && !strncmp(out, "hip ", 4)) line = out - 1;
    cr_assert(line, "no hip line in `swadiff list devices`:\n%s", out);
    char hip_line[1024];
    snprintf(hip_line, sizeof hip_line, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
    cr_expect(strstr(hip_line, "not built into this binary") == NULL, "hip listed as not built: %s", hip_line);
    if (!machine_has_amd_gpu())
        cr_expect(!strncmp(hip_line, "hip   unavailable: no ROCm device: ", 35), "hip line: %s", hip_line);
}

Test(hip_build, run_device_hip_without_rocm_gpu_exits_77)
{
    if (machine_has_amd_gpu()) cr_skip_test("this machine has an AMD GPU (/dev/kfd)");
    char out[8192];
    int rc = run(SWADIFF_BINARY " run --device hip " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 77, "exit %d (expected 77, no usable GPU):\n%s", rc, out);
    cr_expect(strstr(out, "no ROCm device") != NULL, "the message should say why:\n%s", out);
}

#else /* built without HIP */

Test(hip_build, without_hip_the_device_is_absent_and_run_exits_77)
{
    cr_expect_null(swa_device_get(SWA_DEVICE_HIP));
    char out[8192];
    int rc = run(SWADIFF_BINARY " run --device hip " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 77, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "built without the hip device") != NULL, "message:\n%s", out);
    rc = run(SWADIFF_BINARY " list devices", out, sizeof out);
    cr_assert_eq(rc, 0, "list devices exited %d:\n%s", rc, out);
    cr_expect(strstr(out, "hip   not built into this binary") != NULL, "list devices:\n%s", out);
}

#endif
