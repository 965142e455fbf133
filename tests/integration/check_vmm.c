/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm on /dev/kvm: it runs its guest with the timer emulated by
 * lapict (adapters/kvm, driven by lapict-vmm's own loop through the
 * adapter's hooks): the in-guest selftest passes, short tscdeadline and
 * periodic runs report early=0 and the requested sample count, and
 * --test=entry reports its floor. Where KVM
 * is unusable the test exits with LT_SKIP_RC, which ctest reports as
 * skipped. The adapter's own rules are in tests/adapters/test_kvm_*.c.
 *
 * Its options are checked without KVM, first, everywhere: a failure there
 * fails the test even where the KVM cases then skip.
 */
#define _GNU_SOURCE
#include "check_run.h"

#include "kvm_probe.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lapict/version.h>

#if defined(__linux__) && defined(__x86_64__) && defined(LAPICT_VMM_BIN)
/* Runs lapict-vmm with @args; returns its output (malloc'ed), *rc status. */
static char *vmm(const char *args, int *rc)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s --timeout=%d %s", LAPICT_VMM_BIN,
             LT_GUEST_TIMEOUT_S, args);
    return lt_run_capture(cmd, rc);
}

START_TEST(vmm_selftest_lib)
{
    int rc;
    char *o = vmm("--lapic=lib --test=selftest", &rc);
    ck_assert_msg(rc == 0, "selftest failed:\n%s", o);
    ck_assert_msg(strstr(o, " fail=0") && !strstr(o, "FAIL"), "%s", o);
    free(o);
}
END_TEST

START_TEST(vmm_tscdeadline_lib)
{
    int rc;
    char *o = vmm("--lapic=lib --test=tscdeadline --samples=300 "
                  "--quiet",
                  &rc);
    ck_assert_msg(rc == 0, "%s", o);
    ck_assert_msg(strstr(o, "RESULT test=tscdeadline lapic=lib wait=hlt "
                            "samples=300 "),
                  "%s", o);
    ck_assert_msg(strstr(o, " early=0"), "%s", o);
    free(o);
}
END_TEST

START_TEST(vmm_periodic_lib)
{
    int rc;
    char *o = vmm("--lapic=lib --test=periodic --samples=500 "
                  "--period-ns=1000000 --quiet",
                  &rc);
    ck_assert_msg(rc == 0, "%s", o);
    ck_assert_msg(strstr(o, "RESULT test=periodic lapic=lib wait=hlt "
                            "samples=500 "),
                  "%s", o);
    ck_assert_msg(strstr(o, " early=0"), "%s", o);
    ck_assert_msg(strstr(o, "period_err_ppm="), "%s", o);
    free(o);
}
END_TEST

/* --test=entry reports the floor it measured after the exit --wait names,
 * with the handler --entry-isr names: a RESULT line with samples and a
 * positive median (a lost interrupt hangs the guest: rc != 0). */
START_TEST(vmm_entry_lib)
{
    static const char *const waits[2] = {"spin", "hlt"};
    static const char *const exits[2] = {"pio", "hlt"};
    static const char *const isrs[2] = {"stub", "timer"};
    int rc;
    unsigned long long n = 0;
    long long med = 0;
    char args[160], head[64], *o;
    const char *l;

    snprintf(args, sizeof(args),
             "--lapic=lib --test=entry --wait=%s --entry-isr=%s "
             "--samples=300 --quiet",
             waits[_i & 1], isrs[_i >> 1]);
    o = vmm(args, &rc);
    snprintf(head, sizeof(head), "RESULT test=entry lapic=lib exit=%s isr=%s ",
             exits[_i & 1], isrs[_i >> 1]);
    l = strstr(o, head);
    ck_assert_msg(rc == 0, "%s: %s", args, o);
    ck_assert_msg(l, "%s: %s", args, o);
    ck_assert_msg(
        sscanf(l + strlen(head), "samples=%llu median=%lld ", &n, &med) == 2,
        "%s", o);
    ck_assert_msg(n == 300 && med > 0, "%s", o);
    ck_assert_msg(strstr(l, " p99="), "%s", o);
    free(o);
}
END_TEST

/* --compare --test=tscdeadline breaks the lib path down per sample and
 * sets it against the entry floor measured in the same run. */
START_TEST(vmm_compare_floor)
{
    int rc;
    char *o = vmm("--compare --test=tscdeadline --samples=200 --quiet", &rc);
    ck_assert_msg(rc == 0, "%s", o);
    /* Both floors, after the HLT exit the lib path's entry follows. */
    ck_assert_msg(strstr(o, "RESULT test=entry lapic=lib exit=hlt isr=stub "
                            "samples=200 "),
                  "%s", o);
    ck_assert_msg(strstr(o, "RESULT test=entry lapic=lib exit=hlt isr=timer "
                            "samples=200 "),
                  "%s", o);
    ck_assert_msg(strstr(o, "BREAKDOWN lapic=lib samples=200 "), "%s", o);
    ck_assert_msg(strstr(o, " kvm_run->isr="), "%s", o);
    ck_assert_msg(strstr(o, "RESULT test=floor lib_median/entry_median="), "%s",
                  o);
    ck_assert_msg(strstr(o, " lib_median/entry_timer_isr_median="), "%s", o);
    free(o);
}
END_TEST

/* --test=immed reports cycles per iteration (a lost interrupt hangs the
 * guest: rc != 0). */
START_TEST(vmm_immed_lib)
{
    int rc;
    unsigned long long n = 0;
    long long med = 0;
    /* xAPIC (MMIO EOI), then x2APIC (the EOI an MSR). */
    char *o = vmm(_i ? "--lapic=lib --test=immed --x2apic=on --samples=200 "
                       "--quiet"
                     : "--lapic=lib --test=immed --samples=200 --quiet",
                  &rc);
    const char *l = strstr(o, "RESULT test=immed lapic=lib ");
    ck_assert_msg(rc == 0 && l, "%s", o);
    ck_assert_msg(sscanf(l,
                         "RESULT test=immed lapic=lib samples=%llu "
                         "median=%lld ",
                         &n, &med) == 2,
                  "%s", o);
    ck_assert_msg(n == 200 && med > 0, "%s", o);
    ck_assert_msg(strstr(l, _i ? " apic=x2apic " : " apic=xapic "), "%s", o);
    l = strstr(o, "BREAKDOWN test=immed lapic=lib samples=200 ");
    ck_assert_msg(l, "%s", o);
    /* Each iteration exits to the VMM at least for its WRMSR and its EOI,
     * and the VMM's own time between KVM_RUNs is counted. */
    {
        const char *e = strstr(l, " exits_per_iter="), *u;
        u = strstr(l, " vmm_per_iter=");
        ck_assert_msg(e && u, "%s", o);
        ck_assert_msg(strtod(e + 16, NULL) >= 2.0, "%s", o);
        ck_assert_msg(strtoull(u + 14, NULL, 10) > 0, "%s", o);
    }
    free(o);
}
END_TEST

/* --- options: parsed and range-checked before /dev/kvm is opened -------- */

/* Runs lapict-vmm with @args alone, for 20 s at most. */
static char *vmm_bounded(const char *args, int *rc)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "timeout 20 %s %s", LAPICT_VMM_BIN, args);
    return lt_run_capture(cmd, rc);
}

/* An option value and the range its message must name. */
struct bad_option {
    const char *arg, *option, *range;
};

static const struct bad_option bad_options[] = {
    /* A sign wraps nothing: --migrations=-1 ran until killed. */
    {"--test=migrate --migrations=-1", "--migrations", "(1 to 1000000)"},
    {"--test=migrate --migrations=0", "--migrations", "(1 to 1000000)"},
    {"--test=migrate --migrations=1000001", "--migrations", "(1 to 1000000)"},
    /* 2^32 + 1000 was cut to 1000 ns. */
    {"--advance=4294968296", "--advance", "(0 to 10000000)"},
    {"--advance=-5", "--advance", "(0 to 10000000)"},
    {"--advance=10000001", "--advance", "(0 to 10000000)"},
    {"--advance=adaptive --advance-max=0", "--advance-max", "(1 to 10000000)"},
    {"--advance=adaptive --advance-max=10000001", "--advance-max",
     "(1 to 10000000)"},
    {"--samples=0", "--samples", "(1 to 3145728)"},
    {"--samples=3145729", "--samples", "(1 to 3145728)"},
    {"--samples=", "--samples", "(1 to 3145728)"},
    {"--samples=12abc", "--samples", "(1 to 3145728)"},
    {"--samples=' 12'", "--samples", "(1 to 3145728)"},
    {"--delta=999", "--delta", "(1000 to 4294967295)"},
    {"--delta=4294967296", "--delta", "(1000 to 4294967295)"},
    {"--period-ns=0", "--period-ns", "(1 to 4000000000)"},
    {"--period-ns=4000000001", "--period-ns", "(1 to 4000000000)"},
    {"--guest=baremetal --timers=0", "--timers", "(1 to 16384)"},
    {"--guest=baremetal --timers=16385", "--timers", "(1 to 16384)"},
    {"--timeout=0", "--timeout", "(1 to 86400)"},
    {"--timeout=4294967297", "--timeout", "(1 to 86400)"},
    {"--test=migrate --downtime-us=10000001", "--downtime-us",
     "(0 to 10000000)"},
    {"--test=migrate --seed=-1", "--seed", "(0 to 18446744073709551615)"},
    {"--test=migrate --seed=18446744073709551616", "--seed",
     "(0 to 18446744073709551615)"},
    {"--test=migrate --seed=0x", "--seed", "(0 to 18446744073709551615)"},
};

/*
 * Rule: a numeric option out of its range, negative or malformed is a
 * usage error (status 2) whose message names the option and its range,
 * given before /dev/kvm is opened (so it holds without KVM too).
 */
START_TEST(vmm_numeric_option_out_of_range_is_usage_error)
{
    const struct bad_option *b = &bad_options[_i];
    char want[96];
    int rc;
    char *o = vmm_bounded(b->arg, &rc);

    snprintf(want, sizeof(want), "lapict-vmm: %s: ", b->option);
    ck_assert_msg(rc == 2 && strstr(o, want) && strstr(o, b->range) &&
                      !strstr(o, "Success"),
                  "%s: status %d, expected 2 and a message naming %s and "
                  "%s:\n%s",
                  b->arg, rc, b->option, b->range, o);
    free(o);
}
END_TEST

/* Both ends of each range, in decimal or 0x hexadecimal. */
static const char *const good_options[] = {
    "--samples=1 --delta=1000 --period-ns=1 --advance=0 --timeout=1",
    "--samples=3145728 --delta=0xffffffff --period-ns=4000000000 "
    "--advance=10000000 --timeout=86400",
    "--advance=adaptive --advance-max=1",
    "--advance=adaptive --advance-max=10000000",
    "--guest=baremetal --timers=1",
    "--guest=baremetal --timers=16384",
    "--test=migrate --migrations=1 --downtime-us=0 --seed=0",
    "--test=migrate --migrations=1000000 --downtime-us=10000000 "
    "--seed=18446744073709551615",
};

/* Rule: --dry-run refuses what a run refuses, the checks across options
 * too. */
START_TEST(vmm_dry_run_refuses_what_a_run_refuses)
{
    static const char *const bad[] = {
        "--dry-run --test=migrate --lapic=kernel",
        "--dry-run --test=entry --lapic=kernel",
        "--dry-run --test=oneshot --x2apic=on",
    };
    int rc;
    char *o = vmm_bounded(bad[_i], &rc);

    ck_assert_msg(rc == 2 && strstr(o, "lapict-vmm: "), "%s: status %d:\n%s",
                  bad[_i], rc, o);
    free(o);
}
END_TEST

/*
 * Rule: the ends of each range are accepted; --dry-run checks the options
 * and stops there, with status 0 and no output, without KVM.
 */
START_TEST(vmm_numeric_option_range_ends_accepted)
{
    char args[512];
    int rc;
    char *o;

    snprintf(args, sizeof(args), "--dry-run %s", good_options[_i]);
    o = vmm_bounded(args, &rc);
    ck_assert_msg(rc == 0 && !*o, "%s: status %d:\n%s", args, rc, o);
    free(o);
}
END_TEST

/*
 * Runs lapict-vmm with @args alone, for 20 s at most; returns its standard
 * output, its standard error in *@err (both malloc'ed).
 */
static char *vmm_split(const char *args, int *rc, char **err)
{
    char path[] = "/tmp/lapict-check-vmm-XXXXXX", cmd[1024];
    int fd = mkstemp(path);
    size_t len = 0;
    char *out;
    FILE *f;

    ck_assert_msg(fd >= 0, "mkstemp");
    close(fd);
    /* lt_run_capture() joins the group's stderr, not the command's. */
    snprintf(cmd, sizeof(cmd), "{ timeout 20 %s %s 2>'%s'; }", LAPICT_VMM_BIN,
             args, path);
    out = lt_run_capture(cmd, rc);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    *err = calloc(1, 65536);
    ck_assert_ptr_nonnull(*err);
    len = fread(*err, 1, 65535, f);
    (*err)[len] = '\0';
    fclose(f);
    unlink(path);
    return out;
}

/* Rule: --version prints the tool and the lapict version on stdout, and
 * nothing else, with status 0, without KVM. */
START_TEST(vmm_version)
{
    int rc;
    char *err, *o = vmm_split("--version", &rc, &err);

    ck_assert_msg(rc == 0 &&
                      !strcmp(o, "lapict-vmm " LAPICT_VERSION_STRING "\n") &&
                      !*err,
                  "--version: status %d, stdout '%s', stderr '%s'", rc, o, err);
    free(o);
    free(err);
}
END_TEST

/*
 * Rule: an argument that is no option, wherever it stands, or an unknown
 * option is a usage error (status 2): a message naming it and the usage on
 * stderr, nothing on stdout.
 */
START_TEST(vmm_stray_argument_is_usage_error)
{
    static const char *const args[3] = {
        "--dry-run stray", "stray --dry-run --samples=5", "--dry-run --bogus"};
    static const char *const want[3] = {"unexpected argument 'stray'",
                                        "unexpected argument 'stray'",
                                        "'--bogus'"};
    int rc;
    char *err, *o = vmm_split(args[_i], &rc, &err);

    ck_assert_msg(rc == 2 && !*o && strstr(err, want[_i]) &&
                      strstr(err, "usage: lapict-vmm"),
                  "%s: status %d, stdout '%s', stderr '%s'", args[_i], rc, o,
                  err);
    free(o);
    free(err);
}
END_TEST

/* --- --dry-run: what a run reads before its guest starts ---------------- */

/* A temporary file holding @len bytes of @text; its path in @path. */
static void temp_file(char *path, size_t size, const void *text, size_t len)
{
    int fd;

    snprintf(path, size, "/tmp/lapict-check-vmm-XXXXXX");
    fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp");
    ck_assert_msg(write(fd, text, len) == (ssize_t)len, "write %s", path);
    close(fd);
}

/*
 * Rule: --dry-run fails as a run fails on a --restore file it cannot use
 * (missing, not a snapshot): the same status 2 and the same message on
 * stderr, nothing on stdout. A run reads that file before it opens
 * /dev/kvm, so both are compared here without KVM.
 */
START_TEST(vmm_dry_run_restore_fails_as_the_run_does)
{
    static const char junk[] = "not a snapshot\n";
    char path[64], dry[128], real[128];
    char *dry_err, *real_err, *dry_out, *real_out;
    int dry_rc, real_rc;

    if (_i == 0) {
        snprintf(path, sizeof(path), "/nonexistent/lapict-vmm.state");
    } else {
        temp_file(path, sizeof(path), junk, sizeof(junk) - 1);
    }
    snprintf(dry, sizeof(dry), "--dry-run --restore=%s", path);
    snprintf(real, sizeof(real), "--restore=%s", path);
    dry_out = vmm_split(dry, &dry_rc, &dry_err);
    real_out = vmm_split(real, &real_rc, &real_err);
    if (_i)
        unlink(path);
    ck_assert_msg(real_rc == 2 && strstr(real_err, "--restore: "),
                  "%s: status %d, stderr '%s'", real, real_rc, real_err);
    ck_assert_msg(dry_rc == real_rc && !strcmp(dry_err, real_err) && !*dry_out,
                  "%s: status %d, stdout '%s', stderr '%s'; the run: status "
                  "%d, stderr '%s'",
                  dry, dry_rc, dry_out, dry_err, real_rc, real_err);
    free(dry_out);
    free(dry_err);
    free(real_out);
    free(real_err);
}
END_TEST

/* A file a run reads after /dev/kvm opens, and the message it fails with. */
struct bad_file {
    const char *args, *message;
};

static const struct bad_file bad_files[] = {
    {"--guest=/nonexistent", "cannot load guest image /nonexistent: "},
    {"--guest=/dev/null", "cannot load guest image /dev/null: empty"},
    {"--test=migrate --guest=/nonexistent",
     "cannot load guest image /nonexistent: "},
    {"--compare --guest=/nonexistent", "cannot load guest image /nonexistent"},
    {"--kernel=/nonexistent", "cannot read kernel /nonexistent: "},
    {"--kernel=/dev/null", "no multiboot v1 header"},
};

/*
 * Rule: --dry-run reads the guest image or the kernel as a run would and
 * fails as it would: status 2, the run's message on stderr, nothing on
 * stdout, without KVM.
 */
START_TEST(vmm_dry_run_checks_the_files_a_run_reads)
{
    const struct bad_file *b = &bad_files[_i];
    char args[256], *err, *o;
    int rc;

    snprintf(args, sizeof(args), "--dry-run %s", b->args);
    o = vmm_split(args, &rc, &err);
    ck_assert_msg(rc == 2 && !*o && strstr(err, b->message),
                  "%s: status %d, stdout '%s', stderr '%s'", args, rc, o, err);
    free(o);
    free(err);
}
END_TEST

#ifdef LAPICT_MBTEST
/*
 * Rule: --dry-run --kernel loads the kernel as the boot does: the project's
 * multiboot kernel passes (status 0, no output), its first 8 KiB alone
 * (header found, segments cut off) fail with the loader's message, and so
 * does an --initrd that cannot be read.
 */
START_TEST(vmm_dry_run_loads_the_kernel)
{
    static char head[8192];
    char path[64], args[512], *err, *o;
    FILE *f = fopen(LAPICT_MBTEST, "rb");
    int rc;

    ck_assert_msg(f && fread(head, 1, sizeof(head), f) == sizeof(head),
                  "cannot read %s", LAPICT_MBTEST);
    fclose(f);

    snprintf(args, sizeof(args), "--dry-run --kernel=%s --append=x=1",
             LAPICT_MBTEST);
    o = vmm_split(args, &rc, &err);
    ck_assert_msg(rc == 0 && !*o && !*err,
                  "%s: status %d, stdout '%s', "
                  "stderr '%s'",
                  args, rc, o, err);
    free(o);
    free(err);

    snprintf(args, sizeof(args), "--dry-run --kernel=%s --initrd=/nonexistent",
             LAPICT_MBTEST);
    o = vmm_split(args, &rc, &err);
    ck_assert_msg(rc == 2 && !*o &&
                      strstr(err, "cannot read initrd /nonexistent: "),
                  "%s: status %d, stdout '%s', stderr '%s'", args, rc, o, err);
    free(o);
    free(err);

    temp_file(path, sizeof(path), head, sizeof(head));
    snprintf(args, sizeof(args), "--dry-run --kernel=%s", path);
    o = vmm_split(args, &rc, &err);
    unlink(path);
    ck_assert_msg(rc == 2 && !*o && strstr(err, "outside the image"),
                  "%s (8 KiB of the kernel): status %d, stdout '%s', "
                  "stderr '%s'",
                  args, rc, o, err);
    free(o);
    free(err);
}
END_TEST
#endif

/* Runs the option cases; their failures count whatever KVM can do. */
static int run_option_cases(void)
{
    Suite *s = suite_create("vmm_options");
    TCase *tc = tcase_create("options");

    tcase_add_loop_test(tc, vmm_numeric_option_out_of_range_is_usage_error, 0,
                        (int)(sizeof(bad_options) / sizeof(bad_options[0])));
    tcase_add_loop_test(tc, vmm_dry_run_refuses_what_a_run_refuses, 0, 3);
    tcase_add_loop_test(tc, vmm_numeric_option_range_ends_accepted, 0,
                        (int)(sizeof(good_options) / sizeof(good_options[0])));
    tcase_add_test(tc, vmm_version);
    tcase_add_loop_test(tc, vmm_stray_argument_is_usage_error, 0, 3);
    tcase_add_loop_test(tc, vmm_dry_run_restore_fails_as_the_run_does, 0, 2);
    tcase_add_loop_test(tc, vmm_dry_run_checks_the_files_a_run_reads, 0,
                        (int)(sizeof(bad_files) / sizeof(bad_files[0])));
#ifdef LAPICT_MBTEST
    tcase_add_test(tc, vmm_dry_run_loads_the_kernel);
#endif
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return lt_check_run(s);
}

int main(void)
{
    const char *why;
    Suite *s;
    TCase *v;

    if (run_option_cases())
        return EXIT_FAILURE;
    why = lt_kvm_unusable();
    if (why) {
        printf("check_vmm: options passed; KVM cases SKIP: %s\n", why);
        return LT_SKIP_RC;
    }
    lt_guest_priority("check_vmm");
    s = suite_create("vmm");
    v = tcase_create("kvm");
    tcase_add_test(v, vmm_selftest_lib);
    tcase_add_test(v, vmm_tscdeadline_lib);
    tcase_add_test(v, vmm_periodic_lib);
    tcase_add_loop_test(v, vmm_entry_lib, 0, 4);
    tcase_add_test(v, vmm_compare_floor);
    tcase_add_loop_test(v, vmm_immed_lib, 0, 2);
    tcase_set_timeout(v, LT_GUEST_CASE_S);
    suite_add_tcase(s, v);
    return lt_check_run(s);
}

#else /* no lapict-vmm on this platform */

int main(void)
{
    printf("check_vmm: SKIP: lapict-vmm needs Linux on x86-64\n");
    return LT_SKIP_RC;
}

#endif
