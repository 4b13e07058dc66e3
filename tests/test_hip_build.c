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

static uint32_t le32(const unsigned char *p) { return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static unsigned le16(const unsigned char *p) { return p[0] | p[1] << 8; }

/* The .hip_fatbin section of an ELF64 relocatable object, found through its
 * section headers (not by searching for the bundle's magic, which may also
 * occur elsewhere in the file); every offset is checked against the file
 * size, and a failure says what the file holds. */
static const unsigned char *hip_fatbin(const char *path, const unsigned char *obj, size_t len, size_t *size)
{
    cr_assert(len >= 64 && !memcmp(obj, "\x7f" "ELF", 4) && obj[4] == 2,
              "%s (%zu bytes): not an ELF64 object", path, len);
    uint64_t shoff = le64(obj + 0x28);
    unsigned shentsize = le16(obj + 0x3a), shnum = le16(obj + 0x3c), shstrndx = le16(obj + 0x3e);
    cr_assert(shentsize >= 64 && shstrndx < shnum && shoff <= len && (uint64_t)shnum * shentsize <= len - shoff,
              "%s (%zu bytes): section header table (offset %llu, %u x %u bytes) lies outside the file", path, len,
              (unsigned long long)shoff, shnum, shentsize);
    const unsigned char *strsh = obj + shoff + (size_t)shstrndx * shentsize;
    uint64_t stroff = le64(strsh + 24), strsize = le64(strsh + 32);
    cr_assert(stroff <= len && strsize <= len - stroff, "%s (%zu bytes): section name table outside the file", path,
              len);
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = obj + shoff + (size_t)i * shentsize;
        uint32_t name = le32(sh);
        if (name >= strsize || strncmp((const char *)obj + stroff + name, ".hip_fatbin", strsize - name) != 0)
            continue;
        uint64_t off = le64(sh + 24), sz = le64(sh + 32);
        cr_assert(off <= len && sz <= len - off,
                  "%s (%zu bytes): .hip_fatbin (offset %llu, %llu bytes) runs past the end of the file", path, len,
                  (unsigned long long)off, (unsigned long long)sz);
        *size = (size_t)sz;
        return obj + off;
    }
    cr_assert_fail("%s (%zu bytes, %u sections): no .hip_fatbin section (no device code at all)", path, len, shnum);
    return NULL;
}

/* Checks that the clang offload bundle in the object's .hip_fatbin holds a
 * non-empty AMDGPU ELF for target `arch` (entry
 * "hipv4-amdgcn-amd-amdhsa--<arch>", optionally followed by ":features").
 * Bundle layout: magic, u64 count, then per entry u64 offset, u64 size, u64
 * id length, id (offsets from the magic). */
static void expect_code_object(const char *path, const unsigned char *obj, size_t len, const char *arch)
{
    static const char magic[] = "__CLANG_OFFLOAD_BUNDLE__";
    const size_t mlen = sizeof magic - 1;
    size_t avail = 0;
    const unsigned char *b = hip_fatbin(path, obj, len, &avail);
    cr_assert(avail >= mlen + 8 && !memcmp(b, magic, mlen),
              "%s: .hip_fatbin (%zu bytes) does not start with %s (was /dev/null a regular file holding an object "
              "when hipcc ran? its bundler reads /dev/null as the host input)",
              path, avail, magic);
    size_t at = mlen;
    uint64_t count = le64(b + at);
    at += 8;
    char want[128];
    snprintf(want, sizeof want, "hipv4-amdgcn-amd-amdhsa--%s", arch);
    size_t wlen = strlen(want);
    for (uint64_t e = 0; e < count; e++) {
        cr_assert(avail >= at + 24, "%s: bundle entry %llu of %llu past the end of .hip_fatbin (%zu bytes)", path,
                  (unsigned long long)e, (unsigned long long)count, avail);
        uint64_t off = le64(b + at), size = le64(b + at + 8), idlen = le64(b + at + 16);
        at += 24;
        cr_assert(idlen <= avail - at, "%s: bundle entry %llu of %llu has an id of %llu bytes at %zu, past the end of "
                  ".hip_fatbin (%zu bytes)", path, (unsigned long long)e, (unsigned long long)count,
                  (unsigned long long)idlen, at, avail);
        const char *id = (const char *)b + at;
        at += idlen;
        if (idlen < wlen || memcmp(id, want, wlen) || (idlen > wlen && id[wlen] != ':')) continue;
        cr_assert(size >= 64 && off <= avail && size <= avail - off, "%s: code object for %s has size %llu at %llu "
                  "(.hip_fatbin: %zu bytes)", path, arch, (unsigned long long)size, (unsigned long long)off, avail);
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
