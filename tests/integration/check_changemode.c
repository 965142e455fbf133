/* SPDX-License-Identifier: MIT */
/*
 * One-shot -> periodic switch at half count, looped (docs/spec/timer.md section
 * 3: "a running one-shot switched to periodic reloads with N at its expiry",
 * nothing is re-anchored). lapict-vmm --lapic=lib boots lapict-mbtest with
 * "changemode=N": the upstream APIC test's change-mode sequence N times,
 * in x2APIC and in xAPIC mode, the guest TSC read around every access.
 *
 * The guest classifies each iteration: pass; host stall (the count seen
 * at the half-way read can only run out if the TSC shows that many ticks
 * passed, i.e. the vCPU did not run); or defect (a count that does not fit
 * the TSC, a reload or a stop without the time for it). Any defect fails;
 * every stall record is checked again here from its raw TSC values, so a
 * guest that called a defect a stall would fail too; and at least a
 * quarter of the iterations must be conclusive, or the run proves nothing
 * (one more boot is allowed for that).
 *
 * Without a usable /dev/kvm the whole test is skipped: exit code 77, which
 * tests/CMakeLists.txt declares as SKIP_RETURN_CODE.
 */
#define _GNU_SOURCE
#include "check_run.h"

#include "kvm_probe.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ctest's SKIP_RETURN_CODE for this test (tests/CMakeLists.txt). */
#define SKIP_CODE LT_SKIP_RC

#if defined(__linux__) && defined(__x86_64__) && defined(LAPICT_HAVE_MULTIBOOT)
#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define ITERS 1000u
#define TMICT 0x999999u /* as in the guest (tests/guests/mbtest) */

static int tsc_khz;

/* The guest TSC rate lapict-vmm's vCPU will have: KVM's default. */
static int kvm_tsc_khz(void)
{
    int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC), vm = -1, vcpu = -1;
    int khz = -1;

    if (kvm >= 0 && (vm = ioctl(kvm, KVM_CREATE_VM, 0)) >= 0 &&
        (vcpu = ioctl(vm, KVM_CREATE_VCPU, 0)) >= 0)
        khz = ioctl(vcpu, KVM_GET_TSC_KHZ, 0);
    if (vcpu >= 0)
        close(vcpu);
    if (vm >= 0)
        close(vm);
    if (kvm >= 0)
        close(kvm);
    return khz;
}

static uint64_t field(const char *line, size_t len, const char *key)
{
    char pat[32];
    const char *p;

    snprintf(pat, sizeof(pat), " %s=", key);
    p = memmem(line, len, pat, strlen(pat));
    ck_assert_msg(p, "no %s in: %.*s", key, (int)len, line);
    return strtoull(p + strlen(pat), NULL, 0);
}

/* "name=before/after": the TSC readings around an access (relative). */
static void bracket(const char *line, size_t len, const char *name,
                    uint64_t *before, uint64_t *after)
{
    char pat[32], *end;
    const char *p;

    snprintf(pat, sizeof(pat), " %s=", name);
    p = memmem(line, len, pat, strlen(pat));
    ck_assert_msg(p, "no %s in: %.*s", name, (int)len, line);
    *before = strtoull(p + strlen(pat), &end, 10);
    ck_assert_msg(*end == '/', "%.*s", (int)len, line);
    *after = strtoull(end + 1, NULL, 10);
}

/* Cycles for @ticks at the 1 GHz timer clock, rounded up. */
static uint64_t ticks_cyc(uint64_t ticks)
{
    return (ticks * (uint64_t)tsc_khz + 999999u) / 1000000u;
}

/*
 * A stall record must show, in its raw TSC readings, the time for the
 * count to run out: the whole count from the TMICT write to step 2; or
 * the count seen at step 2 (c2) from there to the failing read, and then
 * either half a count in that window, or step 2 found the count low
 * after the time for it since the poll before (c_prev above half).
 */
static void check_stall_record(const char *line, size_t len)
{
    uint64_t c2 = field(line, len, "c2"), prev = field(line, len, "c_prev");
    uint64_t win = field(line, len, "win_cyc"), pb, pa, b, a;
    bool ok;

    bracket(line, len, "prev", &pb, &pa);
    bracket(line, len, "poll", &b, &a);
    if (memmem(line, len, " why=out-before-step-2 ", 23))
        ok = c2 == 0 && a >= ticks_cyc(TMICT);
    else if (memmem(line, len, "-after-stall-before-step-2 ", 27))
        ok = win >= ticks_cyc(c2) && prev > TMICT / 2 &&
             a - pb >= ticks_cyc(prev - c2);
    else
        ok = memmem(line, len, "-after-stall ", 13) &&
             win >= ticks_cyc(TMICT / 2) && win >= ticks_cyc(c2);
    ck_assert_msg(ok && field(line, len, "need_cyc") == ticks_cyc(c2),
                  "not a stall: %.*s", (int)len, line);
}

static void print_lines(const char *o, const char *prefix, const char *mode)
{
    for (const char *t = strstr(o, prefix); t; t = strstr(t + 1, prefix))
        printf("check_changemode %s: %.*s\n", mode, (int)strcspn(t, "\r\n"), t);
}

/* One boot of ITERS iterations; returns how many were conclusive. */
static unsigned run_once(bool x2apic)
{
    char cmd[1024], *o, *line;
    unsigned iters = 0, pass = 0, stalls = ~0u, defects = ~0u, printed = 0;
    unsigned recs = 0;
    int status;
    const char *mode = x2apic ? "x2apic" : "xapic";

    snprintf(cmd, sizeof(cmd),
             "%s --timeout=%d --quiet --lapic=lib --x2apic=%s --kernel %s "
             "--append 'changemode=%u tsc_khz=%d cm_print=%u'",
             LAPICT_VMM_BIN, LT_GUEST_TIMEOUT_S, x2apic ? "on" : "off",
             LAPICT_MBTEST, ITERS, tsc_khz, ITERS);
    o = lt_run_capture(cmd, &status);
    ck_assert_msg(strstr(o, x2apic ? "mode: x2apic" : "mode: xapic"), "%s", o);
    line = strstr(o, "CM-SUMMARY ");
    ck_assert_msg(line, "did not finish (status %d):\n%s", status, o);
    ck_assert_int_eq(sscanf(line,
                            "CM-SUMMARY mode=%*s iters=%u pass=%u stalls=%u "
                            "defects=%u printed=%u",
                            &iters, &pass, &stalls, &defects, &printed),
                     5);
    /* The distribution of host stalls goes to the test log. */
    print_lines(o, "CM-GAP ", mode);
    print_lines(o, "CM-WIN ", mode);
    print_lines(o, "CM-HIST ", mode);
    print_lines(o, "CM-SUMMARY ", mode);
    ck_assert_uint_eq(iters, ITERS);
    ck_assert_uint_eq(pass + stalls + defects, ITERS);
    for (line = strstr(o, "CM-REC "); line;
         line = strstr(line + 1, "CM-REC ")) {
        size_t len = strcspn(line, "\n");
        recs++;
        ck_assert_msg(!memmem(line, len, " kind=defect ", 13),
                      "--x2apic=%s: %.*s", x2apic ? "on" : "off", (int)len,
                      line);
        ck_assert_msg(memmem(line, len, " kind=stall ", 12), "%.*s", (int)len,
                      line);
        check_stall_record(line, len);
    }
    ck_assert_msg(defects == 0 && strstr(o, "PASS: one-shot -> periodic"),
                  "%u defects:\n%s", defects, o);
    ck_assert_uint_eq(recs, stalls);
    ck_assert_uint_eq(printed, stalls);
    /* isa-debug-exit: (0 << 1) | 1, all checks passed. */
    ck_assert_msg(status == 1, "status %d:\n%s", status, o);
    free(o);
    return pass;
}

/*
 * Every iteration runs the same sequence, so a defect in the switch shows
 * in each conclusive one; the floor of a quarter only keeps a run that
 * proves nothing (a host that stalled nearly every iteration) from
 * passing. A loaded machine can fall short once, so one more boot is
 * allowed before calling it a failure. A defect fails at once, in either
 * boot.
 */
#define CONCLUSIVE_MIN (ITERS / 4)

static void run_changemode(bool x2apic)
{
    unsigned pass = run_once(x2apic);

    if (pass < CONCLUSIVE_MIN) {
        printf("check_changemode: only %u of %u conclusive, again\n", pass,
               ITERS);
        pass = run_once(x2apic);
    }
    ck_assert_msg(pass >= CONCLUSIVE_MIN,
                  "only %u of %u iterations conclusive, twice (host "
                  "stalls): the machine is too loaded for this test",
                  pass, ITERS);
}

START_TEST(changemode_lib_x2apic)
{
    run_changemode(true);
}
END_TEST
START_TEST(changemode_lib_xapic)
{
    run_changemode(false);
}
END_TEST

int main(void)
{
    const char *why = lt_kvm_unusable();
    Suite *s;
    TCase *tc;

    if (!why && (tsc_khz = kvm_tsc_khz()) <= 0)
        why = "KVM_GET_TSC_KHZ failed";
    if (why) {
        printf("check_changemode: SKIP: %s\n", why);
        return SKIP_CODE;
    }
    lt_guest_priority("check_changemode");
    s = suite_create("changemode");
    tc = tcase_create("kvm");
    tcase_add_test(tc, changemode_lib_x2apic);
    tcase_add_test(tc, changemode_lib_xapic);
    /* Two boots at most (run_changemode()). */
    tcase_set_timeout(tc, 2 * LT_GUEST_CASE_S);
    suite_add_tcase(s, tc);
    return lt_check_run(s);
}
#else
int main(void)
{
    printf("check_changemode: SKIP: lapict-vmm and lapict-mbtest are not "
           "built on this platform\n");
    return SKIP_CODE;
}
#endif
