/* SPDX-License-Identifier: MIT */
/*
 * The KVM adapter and lapict-vmm.
 *
 * "fake" cases (run everywhere on Linux x86-64): the adapter's userspace
 * LAPIC against a fake vCPU (tests/adapters/kvm_fake.c on the adapter's
 * syscall seam, a zeroed struct kvm_run): xAPIC
 * MMIO and x2APIC/IA32_APIC_BASE MSR decoding, #GP rules, delivery with
 * the interrupt window, and the timer thread's kick (run under TSan too).
 *
 * "kvm" cases (skipped with a message when /dev/kvm is missing or
 * unusable): lapict-vmm runs its guest with the timer emulated by lapict:
 * the in-guest selftest passes, short tscdeadline and periodic runs report
 * early=0 and the requested sample count.
 */
#define _GNU_SOURCE
#include <check.h>

#include "kvm_probe.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__) && defined(__x86_64__) && defined(LAPICT_HAVE_KVM)
#include <fcntl.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "kvm_fake.h"
#include "lapict_kvm.h"

/* Adapter internals the fake-vCPU cases drive directly. */
void lapict_kvm__sync_tpr(struct lapict_kvm *k);
void lapict_kvm__window(struct lapict_kvm *k);

#define BASE 0xFEE00000ull

static struct lapict_kvm *k;
static struct kvm_run *run;

static void fake_setup(void)
{
    struct lapict_kvm_config c = {.tsc_khz = 1000000, .timer_thread = false,
                                  .sys = &lt_fake_sys};
    lt_fake_reset();
    run = calloc(1, sizeof(*run));
    k = calloc(1, sizeof(*k));
    ck_assert_ptr_nonnull(run);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(lapict_kvm_init(k, LT_FAKE_VCPU_FD, run, &c), 0);
}

static void fake_teardown(void)
{
    lapict_kvm_destroy(k);
    free(k);
    free(run);
}

static uint32_t mmio_rd(uint32_t off)
{
    uint32_t v = 0;
    ck_assert(lapict_kvm_mmio(k, BASE + off, (uint8_t *)&v, 4, false));
    return v;
}

static void mmio_wr(uint32_t off, uint32_t v)
{
    ck_assert(lapict_kvm_mmio(k, BASE + off, (uint8_t *)&v, 4, true));
}

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* Rule: the xAPIC page decodes ID, version, TPR (mirrored in CR8), SVR,
 * the other LVTs, and hands the timer registers to the core. */
START_TEST(xapic_mmio_decoding)
{
    uint8_t b[8];

    ck_assert_uint_eq(mmio_rd(0x30), LAPICT_KVM_APIC_VERSION);
    ck_assert_uint_eq(mmio_rd(0x20), 0);
    ck_assert_uint_eq(mmio_rd(0xF0), 0xFF); /* SVR reset: disabled */
    mmio_wr(0xF0, 0x1FF);
    ck_assert_uint_eq(mmio_rd(0xF0), 0x1FF);
    mmio_wr(0x80, 0x25);
    ck_assert_uint_eq(mmio_rd(0x80), 0x25);
    ck_assert_uint_eq(run->cr8, 2);
    ck_assert_uint_eq(mmio_rd(0xA0), 0x25); /* PPR = TPR, ISR empty */
    mmio_wr(0x350, 0x700);                  /* LINT0 ExtINT */
    ck_assert_uint_eq(mmio_rd(0x350), 0x700);
    mmio_wr(0x3E0, 0xB);
    ck_assert_uint_eq(lapict_tdcr_read(&k->timer), 0xB);
    mmio_wr(0x320, 0x20040); /* periodic, vector 0x40 */
    ck_assert_uint_eq(lapict_lvtt_read(&k->timer), 0x20040);
    mmio_wr(0x380, 5000000);
    ck_assert_uint_eq(mmio_rd(0x380), 5000000);
    ck_assert_uint_le(mmio_rd(0x390), 5000000);
    ck_assert_uint_gt(mmio_rd(0x390), 0);
    /* Not the APIC page; bytes between registers read 0. */
    ck_assert(!lapict_kvm_mmio(k, BASE + 4096, b, 4, false));
    ck_assert(!lapict_kvm_mmio(k, BASE - 4, b, 4, false));
    ck_assert_uint_eq(mmio_rd(0x34), 0);
    /* Guest CR8 writes show up as TPR. */
    run->cr8 = 7;
    lapict_kvm__sync_tpr(k);
    ck_assert_uint_eq(mmio_rd(0x80), 0x70);
}
END_TEST

/* Rule: a software-disabled APIC masks the LVTs, LVTT included. */
START_TEST(svr_disable_masks)
{
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0x320, 0x40);
    mmio_wr(0x360, 0x400);
    mmio_wr(0xF0, 0xFF);
    ck_assert_uint_eq(mmio_rd(0x320) & 0x10000, 0x10000);
    ck_assert_uint_eq(mmio_rd(0x360) & 0x10000, 0x10000);
    mmio_wr(0x320, 0x40); /* stays masked while disabled */
    ck_assert_uint_eq(mmio_rd(0x320) & 0x10000, 0x10000);
}
END_TEST

/* Rule: an expiry sets IRR; KVM_INTERRUPT only with IF set (else an
 * interrupt window is requested); EOI clears ISR. */
START_TEST(delivery_and_window)
{
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0x3E0, 0xB);
    mmio_wr(0x320, 0x40);
    run->if_flag = 1;
    run->ready_for_interrupt_injection = 1;
    mmio_wr(0x380, 1000); /* 1 us at 1 GHz */
    sleep_ns(2000000);
    lapict_expire(&k->timer);
    ck_assert_uint_eq(mmio_rd(0x220) & 1, 1); /* IRR bit 0x40 */
    run->if_flag = 0;
    ck_assert_int_eq(lapict_kvm_deliver(k), -1);
    ck_assert_uint_eq(run->request_interrupt_window, 1);
    run->if_flag = 1;
    ck_assert_int_eq(lapict_kvm_deliver(k), 0x40);
    ck_assert_int_eq(lt_fake.last_vector, 0x40);
    ck_assert_uint_eq(mmio_rd(0x220) & 1, 0);
    ck_assert_uint_eq(mmio_rd(0x120) & 1, 1); /* ISR */
    ck_assert_uint_eq(mmio_rd(0xA0), 0x40);   /* PPR from ISR */
    mmio_wr(0xB0, 0);
    ck_assert_uint_eq(mmio_rd(0x120) & 1, 0);
}
END_TEST

/* Rule: a timer interrupt refused while IF is clear is held by the core and
 * delivered once the window opens (no pre-injection into a closed window). */
START_TEST(refused_then_window)
{
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0x3E0, 0xB);
    mmio_wr(0x320, 0x41);
    run->if_flag = 0;
    mmio_wr(0x380, 1000);
    sleep_ns(2000000);
    lapict_expire(&k->timer);
    ck_assert_uint_eq(mmio_rd(0x220) & 2, 0);
    ck_assert(k->timer_refused);
    lapict_kvm_deliver(k);
    ck_assert_uint_eq(run->request_interrupt_window, 1);
    run->if_flag = 1;
    run->ready_for_interrupt_injection = 1;
    lapict_kvm__window(k);
    ck_assert_int_eq(lapict_kvm_deliver(k), 0x41);
}
END_TEST

static int rd(uint32_t msr, uint64_t *v)
{
    return lapict_kvm_rdmsr(k, msr, v);
}

/* Rule: IA32_APIC_BASE transitions ("x2APIC State Transitions") and the
 * x2APIC MSR #GP rules. */
START_TEST(msr_decoding)
{
    uint64_t v = 0;

    ck_assert_int_eq(rd(0x1B, &v), 0);
    ck_assert_uint_eq(v, BASE | 0x900);
    /* x2APIC MSRs #GP in xAPIC mode. */
    ck_assert_int_eq(rd(0x802, &v), LAPICT_E_GP);
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x808, 0), LAPICT_E_GP);
    /* Reserved bits, x2APIC without enable. */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x1B, BASE | 0x801), LAPICT_E_GP);
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x1B, BASE | 0x400), LAPICT_E_GP);
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x1B, BASE | 0xC00), 0);
    ck_assert_int_eq(rd(0x1B, &v), 0);
    ck_assert_uint_eq(v, BASE | 0xD00);
    /* x2APIC -> xAPIC directly is invalid. */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x1B, BASE | 0x800), LAPICT_E_GP);
    ck_assert_int_eq(rd(0x802, &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(rd(0x803, &v), 0);
    ck_assert_uint_eq(v, LAPICT_KVM_APIC_VERSION);
    ck_assert_int_eq(rd(0x80D, &v), 0);
    ck_assert_uint_eq(v, 1); /* LDR derived from ID 0 */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x802, 1), LAPICT_E_GP);
    ck_assert_int_eq(rd(0x80B, &v), LAPICT_E_GP); /* EOI write-only */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x80B, 1), LAPICT_E_GP);
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x80B, 0), 0);
    ck_assert_int_eq(rd(0x80E, &v), LAPICT_E_GP); /* no DFR */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x80F, 0x1FF), 0);
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x80F, 1ull << 32), LAPICT_E_GP);
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x839, 0), LAPICT_E_GP); /* TMCCT */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x832, 0x40040), 0);
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x6E0, 1ull << 62), 0);
    ck_assert_int_eq(rd(0x6E0, &v), 0);
    ck_assert_uint_eq(v, 1ull << 62);
    ck_assert_int_eq(rd(0x10, &v), LAPICT_E_NOREG);
    /* The xAPIC page reads all-ones in x2APIC mode. */
    ck_assert_uint_eq(mmio_rd(0x30), 0xFFFFFFFFu);
    /* Self IPI sets IRR. */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x83F, 0x55), 0);
    ck_assert_int_eq(rd(0x822, &v), 0); /* IRR bits 64-95 */
    ck_assert_uint_eq(v, 1u << (0x55 - 0x40));
    /* Disabling resets the APIC. */
    ck_assert_int_eq(lapict_kvm_wrmsr(k, 0x1B, BASE), 0);
    ck_assert_uint_eq(lapict_lvtt_read(&k->timer), 0x10000);
}
END_TEST

/* Rule: RDMSR/WRMSR exits: #GP becomes run->msr.error = 1. */
START_TEST(msr_exits)
{
    run->exit_reason = KVM_EXIT_X86_WRMSR;
    run->msr.index = 0x839;
    run->msr.data = 0;
    run->msr.error = 0;
    ck_assert(lapict_kvm_handle_exit(k));
    ck_assert_uint_eq(run->msr.error, 1); /* x2APIC off: #GP */
    run->exit_reason = KVM_EXIT_X86_RDMSR;
    run->msr.index = 0x1B;
    ck_assert(lapict_kvm_handle_exit(k));
    ck_assert_uint_eq(run->msr.error, 0);
    ck_assert_uint_eq(run->msr.data, BASE | 0x900);
    run->exit_reason = KVM_EXIT_MMIO;
    run->mmio.phys_addr = BASE + 0x30;
    run->mmio.len = 4;
    run->mmio.is_write = 0;
    ck_assert(lapict_kvm_handle_exit(k));
    ck_assert_uint_eq(*(uint32_t *)run->mmio.data, LAPICT_KVM_APIC_VERSION);
    run->mmio.phys_addr = 0xFEC00000;
    ck_assert(!lapict_kvm_handle_exit(k));
    run->exit_reason = KVM_EXIT_IO;
    ck_assert(!lapict_kvm_handle_exit(k));
}
END_TEST

/* Rule (TIMER.md "Concurrency"): the timer thread only sets the flag and
 * kicks; the owner thread consumes it and calls lapict_expire(). The kick
 * sets immediate_exit for the next KVM_RUN. Meant to run under TSan too. */
START_TEST(timer_thread_kick)
{
    /* kick_thread: the kick timer is armed only by lapict_kvm_run(). */
    struct lapict_kvm_config c = {.tsc_khz = 1000000, .timer_thread = true,
                                  .kick_signal = SIGUSR1,
                                  .kick_thread = true, .sys = &lt_fake_sys};
    struct kvm_run *r2 = calloc(1, sizeof(*r2));
    struct lapict_kvm *k2 = calloc(1, sizeof(*k2));
    int i, rounds;

    ck_assert_ptr_nonnull(r2);
    ck_assert_ptr_nonnull(k2);
    ck_assert_int_eq(lapict_kvm_init(k2, LT_FAKE_VCPU_FD, r2, &c), 0);
    r2->if_flag = 1;
    r2->ready_for_interrupt_injection = 1;
    struct lapict_kvm *saved = k;

    lapict_kvm_wrmsr(k2, 0x1B, BASE | 0x800);
    k = k2;
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0x3E0, 0xB);
    mmio_wr(0x320, 0x40);
    for (rounds = 0; rounds < 20; rounds++) {
        mmio_wr(0x380, 200000); /* 200 us */
        for (i = 0; i < 1000 && !__atomic_load_n(&r2->immediate_exit,
                                                 __ATOMIC_RELAXED);
             i++)
            sleep_ns(100000);
        ck_assert_uint_eq(r2->immediate_exit, 1);
        r2->immediate_exit = 0;
        ck_assert(lapict_kvm_poll(k2));
        ck_assert_int_eq(lapict_kvm_deliver(k2), 0x40);
        k2->injected = false; /* the guest entry took it */
        mmio_wr(0xB0, 0);
    }
    lapict_kvm_destroy(k2);
    free(k2);
    free(r2);
    k = saved;
}
END_TEST

/* --- lapict-vmm on /dev/kvm ------------------------------------------ */

#ifdef LAPICT_VMM_BIN
/* Runs lapict-vmm with @args; returns its output (malloc'ed), *rc status. */
static char *vmm(const char *args, int *rc)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s --timeout=30 %s", LAPICT_VMM_BIN, args);
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
#endif /* LAPICT_VMM_BIN */

static Suite *suite(void)
{
    Suite *s = suite_create("vmm");
    TCase *f = tcase_create("fake");

    tcase_add_checked_fixture(f, fake_setup, fake_teardown);
    tcase_add_test(f, xapic_mmio_decoding);
    tcase_add_test(f, svr_disable_masks);
    tcase_add_test(f, delivery_and_window);
    tcase_add_test(f, refused_then_window);
    tcase_add_test(f, msr_decoding);
    tcase_add_test(f, msr_exits);
    tcase_add_test(f, timer_thread_kick);
    tcase_set_timeout(f, 30);
    suite_add_tcase(s, f);
#ifdef LAPICT_VMM_BIN
    const char *why = lt_kvm_unusable();
    if (why) {
        printf("check_vmm: SKIP the lapict-vmm cases: %s\n", why);
    } else {
        TCase *v = tcase_create("kvm");
        tcase_add_test(v, vmm_selftest_lib);
        tcase_add_test(v, vmm_tscdeadline_lib);
        tcase_add_test(v, vmm_periodic_lib);
        tcase_set_timeout(v, 60);
        suite_add_tcase(s, v);
    }
#else
    printf("check_vmm: SKIP the lapict-vmm cases: LAPICT_VMM_BIN not set\n");
#endif
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#else /* not Linux x86-64 with the KVM adapter */

int main(void)
{
    printf("check_vmm: SKIP: the KVM adapter needs Linux on x86-64\n");
    return EXIT_SUCCESS;
}

#endif
