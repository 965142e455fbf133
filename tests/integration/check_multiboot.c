/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm's multiboot path (tools/vmm/multiboot.c, platform.c) and
 * the project's multiboot test kernel (tests/guests/mbtest).
 *
 * "loader" cases (no /dev/kvm needed): the ELF32 multiboot v1 loader on
 * synthetic images, good and hostile, and the platform ports (COM1, fw_cfg,
 * isa-debug-exit, PIC, unassigned MMIO) against a fake kvm_run. The LAPIC
 * rules these guests need are tested in tests/adapters/test_apic.c.
 *
 * "kvm" cases (ctest check_multiboot_kvm; skipped, exit LT_SKIP_RC, with
 * a message when /dev/kvm is missing or unusable): lapict-vmm boots
 * lapict-mbtest, which checks the loader path, ports, fw_cfg, the
 * IA32_APIC_BASE rules, the interrupt path and the APIC timer from inside the
 * guest, under --lapic=lib and --lapic=kernel with
 * --x2apic=on and off. Under lib every check must pass; under kernel
 * (KVM's own LAPIC, the reference) only the differences listed in
 * kvm_known[] may fail.
 */
#define _GNU_SOURCE
#include "check_run.h"

#include "kvm_probe.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__) && defined(__x86_64__) && defined(LAPICT_HAVE_MULTIBOOT)
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform.h"

#define RAM (8u << 20)

static uint8_t *mem;

static void mem_setup(void)
{
    mem = calloc(1, RAM);
    ck_assert_ptr_nonnull(mem);
}

static void mem_teardown(void)
{
    free(mem);
}

/* A minimal image: ELF32 header, one PT_LOAD, the multiboot header. */
struct image {
    uint8_t b[512];
};

static void put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}
static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

#define PH 52u    /* program header offset */
#define MBH 0x60u /* multiboot header offset */
#define LOAD 0x100000u

static void make_image(struct image *im)
{
    uint8_t *b = im->b;

    memset(b, 0, sizeof(im->b));
    memcpy(b, "\177ELF", 4);
    b[4] = 1; /* ELFCLASS32 */
    b[5] = 1; /* little-endian */
    b[6] = 1;
    put16(b + 16, 2); /* ET_EXEC */
    put16(b + 18, 3); /* EM_386 */
    put32(b + 20, 1);
    put32(b + 24, LOAD + MBH + 12); /* entry */
    put32(b + 28, PH);
    put16(b + 40, 52);
    put16(b + 42, 32);
    put16(b + 44, 1);
    /* PT_LOAD: the whole 512-byte file at 1 MiB, 64 KiB in memory. */
    put32(b + PH + 0, 1);
    put32(b + PH + 4, 0);
    put32(b + PH + 8, LOAD);
    put32(b + PH + 12, LOAD);
    put32(b + PH + 16, sizeof(im->b));
    put32(b + PH + 20, 0x10000);
    put32(b + MBH, 0x1BADB002u);
    put32(b + MBH + 4, 0);
    put32(b + MBH + 8, (uint32_t)-0x1BADB002);
    b[MBH + 12] = 0xF4; /* hlt */
}

static int load(const struct image *im, size_t len, const char *cmdline,
                const char *mod, struct lapict_vmm_mb_boot *bt, char *err)
{
    return lapict_vmm_mb_load(mem, RAM, im->b, len, cmdline,
                              (const uint8_t *)mod, mod ? strlen(mod) : 0, bt,
                              err, 160);
}

static uint32_t rd32(uint32_t pa)
{
    uint32_t v;
    memcpy(&v, mem + pa, 4);
    return v;
}

/* Rule: PT_LOAD copied to p_paddr, bss zeroed, entry = e_entry; the
 * information holds mem_upper (KiB above 1 MiB), cmdline and one module. */
START_TEST(loader_good_image)
{
    struct image im;
    struct lapict_vmm_mb_boot bt;
    char err[160] = "";

    make_image(&im);
    memset(mem + LOAD, 0xAA, 0x10000); /* bss must be zeroed */
    ck_assert_int_eq(
        load(&im, sizeof(im.b), "k.flat 1 2", "A=1\nB=2\n", &bt, err), 0);
    ck_assert_uint_eq(bt.entry, LOAD + MBH + 12);
    ck_assert_uint_eq(bt.mbi, LAPICT_VMM_MB_INFO);
    ck_assert_uint_eq(bt.load_end, LOAD + 0x10000);
    ck_assert_int_eq(memcmp(mem + LOAD, im.b, sizeof(im.b)), 0);
    for (uint32_t i = sizeof(im.b); i < 0x10000; i++)
        ck_assert_uint_eq(mem[LOAD + i], 0);
    ck_assert_uint_eq(rd32(bt.mbi) & 0xD, 0xD); /* mem, cmdline, mods */
    ck_assert_uint_eq(rd32(bt.mbi + 8), (RAM - (1u << 20)) / 1024);
    ck_assert_str_eq((char *)mem + rd32(bt.mbi + 16), "k.flat 1 2");
    ck_assert_uint_eq(rd32(bt.mbi + 20), 1);
    uint32_t mods = rd32(bt.mbi + 24);
    ck_assert_uint_eq(rd32(mods + 4) - rd32(mods), 8);
    ck_assert_int_eq(memcmp(mem + rd32(mods), "A=1\nB=2\n", 8), 0);
    /* Without a module: no MODS flag, no module. */
    ck_assert_int_eq(load(&im, sizeof(im.b), "k.flat", NULL, &bt, err), 0);
    ck_assert_uint_eq(rd32(bt.mbi) & 0x8, 0);
    ck_assert_uint_eq(rd32(bt.mbi + 20), 0);
}
END_TEST

/* Rule: every field read from the image is checked; a hostile image is
 * refused with a message, never loaded outside RAM. */
START_TEST(loader_rejects)
{
    struct image im;
    struct lapict_vmm_mb_boot bt;
    char err[160];
    static const struct {
        uint32_t off, val;
        const char *why;
    } bad[] = {
        {MBH + 8, 0, "checksum"},
        {PH + 12, 0x1000, "segment below 1 MiB"},
        {PH + 12, RAM - 0x8000, "segment past RAM"},
        {PH + 4, 0x1000, "file bytes past the end"},
        {PH + 16, 0x20000, "filesz > memsz"},
        {28, 0x10000, "program headers past the end"},
        {24, 0x200000, "entry outside the image"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        make_image(&im);
        put32(im.b + bad[i].off, bad[i].val);
        err[0] = 0;
        ck_assert_msg(load(&im, sizeof(im.b), "k", NULL, &bt, err) == -1,
                      "accepted: %s", bad[i].why);
        ck_assert_msg(err[0], "no message: %s", bad[i].why);
    }
    make_image(&im);
    put16(im.b + 18, 62); /* EM_X86_64 */
    ck_assert_int_eq(load(&im, sizeof(im.b), "k", NULL, &bt, err), -1);
    make_image(&im);
    ck_assert_int_eq(load(&im, 40, "k", NULL, &bt, err), -1); /* truncated */
    make_image(&im);
    im.b[0] = 0;
    put32(im.b + MBH + 4, 0x10000);
    put32(im.b + MBH + 8, (uint32_t) - (0x1BADB002 + 0x10000));
    ck_assert_int_eq(load(&im, sizeof(im.b), "k", NULL, &bt, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "a.out"));
    /* Oversized command line and module. */
    make_image(&im);
    char *big = malloc(LAPICT_VMM_MB_MODULE_MAX + 2);
    ck_assert_ptr_nonnull(big);
    memset(big, 'x', LAPICT_VMM_MB_MODULE_MAX + 1);
    big[LAPICT_VMM_MB_MODULE_MAX + 1] = 0;
    ck_assert_int_eq(load(&im, sizeof(im.b), big, NULL, &bt, err), -1);
    ck_assert_int_eq(load(&im, sizeof(im.b), "k", big, &bt, err), -1);
    free(big);
}
END_TEST

/* A fake kvm_run with room for the I/O data after it. */
static struct {
    struct kvm_run run;
    uint8_t data[64];
} fr;

static uint32_t io(struct lapict_vmm_platform *p, uint16_t port, bool in,
                   uint8_t size, uint32_t val)
{
    uint32_t v = 0;
    memset(&fr, 0, sizeof(fr));
    fr.run.exit_reason = KVM_EXIT_IO;
    fr.run.io.direction = in ? KVM_EXIT_IO_IN : KVM_EXIT_IO_OUT;
    fr.run.io.size = size;
    fr.run.io.port = port;
    fr.run.io.count = 1;
    fr.run.io.data_offset = sizeof(fr.run);
    memcpy(fr.data, &val, size);
    lapict_vmm_platform_io(p, &fr.run);
    memcpy(&v, fr.data, size);
    return v;
}

/* Rule: COM1 THR bytes reach the output without CR, LSR says THR empty;
 * fw_cfg 0x510/0x511 serves the signature and key 0x05 = 1; PIC ports
 * accept mask writes; isa-debug-exit records the value; unassigned MMIO
 * reads all-ones. */
START_TEST(platform_ports)
{
    struct lapict_vmm_platform p;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    uint32_t sig = 0;

    ck_assert_ptr_nonnull(out);
    lapict_vmm_platform_init(&p, out, 128u << 20);
    ck_assert_uint_eq(io(&p, 0x3FD, true, 1, 0) & 0x60, 0x60);
    io(&p, 0x3F8, false, 1, 'h');
    io(&p, 0x3F8, false, 1, '\r');
    io(&p, 0x3F8, false, 1, '\n');
    io(&p, 0x3FB, false, 1, 0x83); /* DLAB: divisor, not output */
    io(&p, 0x3F8, false, 1, 0x01);
    ck_assert_uint_eq(io(&p, 0x3F8, true, 1, 0), 0x01);
    io(&p, 0x3FB, false, 1, 0x03);
    fflush(out);
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(memcmp(buf, "h\n", 2), 0);

    io(&p, 0x510, false, 2, 0x0000);
    for (int i = 0; i < 4; i++)
        sig |= io(&p, 0x511, true, 1, 0) << (8 * i);
    ck_assert_uint_eq(sig, 0x554D4551u); /* "QEMU" */
    io(&p, 0x510, false, 2, 0x0005);
    ck_assert_uint_eq(io(&p, 0x511, true, 1, 0), 1);
    ck_assert_uint_eq(io(&p, 0x511, true, 1, 0), 0);
    io(&p, 0x510, false, 2, 0x0003);
    ck_assert_uint_eq(io(&p, 0x511, true, 4, 0), 0x08000000u); /* 128 MiB */
    io(&p, 0x510, false, 2, 0x1234);
    ck_assert_uint_eq(io(&p, 0x511, true, 1, 0), 0);

    io(&p, 0x21, false, 1, 0xFF);
    io(&p, 0xA1, false, 1, 0xFF);
    ck_assert_uint_eq(io(&p, 0x1234, true, 2, 0), 0xFFFF);
    ck_assert(!p.exited);
    io(&p, 0xF4, false, 4, 0x11);
    ck_assert(p.exited);
    ck_assert_uint_eq(p.exit_value, 0x11);

    memset(&fr, 0, sizeof(fr));
    fr.run.mmio.len = 4;
    lapict_vmm_platform_mmio(&p, &fr.run);
    ck_assert_uint_eq(fr.run.mmio.data[0] & fr.run.mmio.data[3], 0xFF);
    fclose(out);
    free(buf);
}
END_TEST

/* --- lapict-vmm boots lapict-mbtest on /dev/kvm ----------------------- */

/* Runs lapict-vmm with @args; returns its output, *status the exit code. */
static char *vmm(const char *args, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s --timeout=%d --quiet %s", LAPICT_VMM_BIN,
             LT_GUEST_TIMEOUT_S, args);
    return lt_run_capture(cmd, status);
}

/*
 * Where KVM's in-kernel LAPIC differs here (the reference run): it keeps
 * SVR over a hardware disable, accepts a non-zero x2APIC EOI write, and
 * delivers a TSC deadline already in the past only later (from its
 * hrtimer), not on the entry right after the WRMSR.
 */
static const char *const kvm_known[] = {
    "enable: disable reset the registers (SVR 0xFF)",
    "x2APIC: non-zero EOI write is #GP",
    "tsc deadline in the past: delivered right after WRMSR",
};

static void run_mbtest(bool lib, bool x2apic)
{
    char args[768], *o, *line;
    char env[] = "/tmp/lapict-mbtest-env-XXXXXX";
    int fd = mkstemp(env), status;
    static const char text[] = "TEST_DEVICE=0\nLAPICT_MBTEST=ok\n";
    unsigned fails = 0;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, sizeof(text) - 1),
                     (int)(sizeof(text) - 1));
    close(fd);
    snprintf(args, sizeof(args),
             "--lapic=%s --x2apic=%s --kernel %s --initrd %s "
             "--append 'initrd=1 x2apic=%d'",
             lib ? "lib" : "kernel", x2apic ? "on" : "off", LAPICT_MBTEST, env,
             x2apic);
    o = vmm(args, &status);
    unlink(env);
    ck_assert_msg(strstr(o, "cmdline: lapict-mbtest.flat initrd=1"),
                  "argv[0] and the arguments:\n%s", o);
    ck_assert_msg(strstr(o, "SUMMARY: "), "did not finish:\n%s", o);
    ck_assert_msg(strstr(o, x2apic ? "mode: x2apic" : "mode: xapic"), "%s", o);
    /* mbtest's IPIs to all excluding self (fixed, INIT, SIPI) reach no
     * CPU of this one-vCPU VM: lib says so, and counts them. */
    if (lib)
        ck_assert_msg(strstr(o, "not delivered: this VM has one vCPU"),
                      "no report of the undelivered IPIs:\n%s", o);
    for (line = strstr(o, "FAIL: "); line; line = strstr(line + 1, "FAIL: ")) {
        bool known = false;
        size_t len = strcspn(line + 6, "\n");
        fails++;
        for (size_t i = 0; !lib && i < sizeof(kvm_known) / sizeof(*kvm_known);
             i++)
            known |= len == strlen(kvm_known[i]) &&
                     !strncmp(line + 6, kvm_known[i], len);
        ck_assert_msg(known, "--lapic=%s --x2apic=%s: %.*s\n%s",
                      lib ? "lib" : "kernel", x2apic ? "on" : "off",
                      (int)len + 6, line, o);
    }
    /* isa-debug-exit: (0 << 1) | 1 when all passed, (1 << 1) | 1 if not. */
    ck_assert_msg(status == (fails ? 3 : 1), "status %d:\n%s", status, o);
    free(o);
}

START_TEST(mbtest_lib_x2apic)
{
    run_mbtest(true, true);
}
END_TEST
START_TEST(mbtest_lib_xapic)
{
    run_mbtest(true, false);
}
END_TEST
START_TEST(mbtest_kernel_x2apic)
{
    run_mbtest(false, true);
}
END_TEST
START_TEST(mbtest_kernel_xapic)
{
    run_mbtest(false, false);
}
END_TEST

/* Rule: a file the loader refuses is a VMM error (status 2), not a run. */
START_TEST(vmm_refuses_non_multiboot)
{
    int status;
    char args[512], *o;

    snprintf(args, sizeof(args), "--kernel %s", LAPICT_VMM_BIN);
    o = vmm(args, &status);
    ck_assert_msg(status == 2 && strstr(o, "no multiboot v1 header"), "%s", o);
    free(o);
}
END_TEST

static Suite *loader_suite(void)
{
    Suite *s = suite_create("multiboot");
    TCase *l = tcase_create("loader");

    tcase_add_checked_fixture(l, mem_setup, mem_teardown);
    tcase_add_test(l, loader_good_image);
    tcase_add_test(l, loader_rejects);
    tcase_add_test(l, platform_ports);
    suite_add_tcase(s, l);
    return s;
}

static Suite *kvm_suite(void)
{
    Suite *s = suite_create("multiboot-kvm");
    TCase *v = tcase_create("kvm");

    tcase_add_test(v, mbtest_lib_x2apic);
    tcase_add_test(v, mbtest_lib_xapic);
    tcase_add_test(v, mbtest_kernel_x2apic);
    tcase_add_test(v, mbtest_kernel_xapic);
    tcase_add_test(v, vmm_refuses_non_multiboot);
    tcase_set_timeout(v, LT_GUEST_CASE_S);
    suite_add_tcase(s, v);
    return s;
}

/* "check_multiboot": the loader cases; "check_multiboot kvm": the cases
 * that boot under KVM, exit LT_SKIP_RC where KVM is unusable. */
int main(int argc, char **argv)
{
    bool kvm = argc > 1 && !strcmp(argv[1], "kvm");
    const char *why = kvm ? lt_kvm_unusable() : NULL;

    if (why) {
        printf("check_multiboot: SKIP the lapict-vmm cases: %s\n", why);
        return LT_SKIP_RC;
    }
    if (kvm)
        lt_guest_priority("check_multiboot");
    return lt_check_run(kvm ? kvm_suite() : loader_suite());
}
#else
int main(void)
{
    printf("check_multiboot: SKIP: lapict-vmm and its multiboot path are "
           "not built on this platform\n");
    return LT_SKIP_RC;
}
#endif
