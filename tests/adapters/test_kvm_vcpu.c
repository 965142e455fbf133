/* SPDX-License-Identifier: MIT */
/*
 * adapters/kvm's vCPU glue: which exits are the LAPIC's, and what the hooks
 * report to the VMM's loop. On the fake vCPU of kvm_fake.c (no /dev/kvm).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include <time.h>

#include "kvm_fake.h"
#include "lapict_kvm.h"
#include "tu_main.h"

/* Glue internals driven directly (kvm_internal.h). */
int lapict_kvm__deliver(struct lapict_kvm *k);
void lapict_kvm__window(struct lapict_kvm *k);

#define BASE 0xFEE00000ull

struct fx {
    struct lapict_kvm k;
    struct kvm_run run;
};

static int setup(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);

    struct fx *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    lt_fake_reset();
    assert_int_equal(lapict_kvm_init(&f->k, LT_FAKE_VCPU_FD, &f->run, &c), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    lapict_kvm_destroy(&f->k);
    free(f);
    return 0;
}

static void msr_exit(struct kvm_run *r, uint32_t reason, uint32_t msr,
                     uint64_t data)
{
    r->exit_reason = reason;
    r->msr.index = msr;
    r->msr.data = data;
    r->msr.error = 0;
}

/*
 * Rule: an MSR exit for an MSR that is not the LAPIC's (the VM gets UNKNOWN
 * and INVAL MSR exits for the LAPIC's x2APIC range) belongs to the VMM: it
 * is reported "not mine" and left untouched, never turned into a #GP.
 */
static void other_msr_is_not_mine(void **state)
{
    struct fx *f = *state;
    static const uint32_t others[] = {0x3A, 0xC0000080u, 0x4B564D00u,
                                      0x10, 0x7FF,       0x900};

    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        msr_exit(&f->run, KVM_EXIT_X86_RDMSR, others[i], 0x1234);
        assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_NOT_MINE);
        assert_int_equal(f->run.msr.error, 0);
        assert_int_equal(f->run.msr.data, 0x1234);
        msr_exit(&f->run, KVM_EXIT_X86_WRMSR, others[i], 0x5678);
        assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_NOT_MINE);
        assert_int_equal(f->run.msr.error, 0);
    }
    assert_int_equal(f->k.st.gp, 0);
    /* The LAPIC's own MSRs stay its own, #GP included. */
    msr_exit(&f->run, KVM_EXIT_X86_RDMSR, 0x1B, 0);
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    assert_int_equal(f->run.msr.error, 0);
    assert_int_equal(f->run.msr.data, 0xFEE00900u);
    msr_exit(&f->run, KVM_EXIT_X86_WRMSR, 0x839, 0); /* x2APIC off: #GP */
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    assert_int_equal(f->run.msr.error, 1);
}

static uint32_t mmio_rd(struct fx *f, uint32_t off)
{
    uint32_t v = 0;
    assert_int_equal(
        lapict_apic_mmio(&f->k.apic, BASE + off, (uint8_t *)&v, 4, false),
        LAPICT_OK);
    return v;
}

static void mmio_wr(struct fx *f, uint32_t off, uint32_t v)
{
    assert_int_equal(
        lapict_apic_mmio(&f->k.apic, BASE + off, (uint8_t *)&v, 4, true),
        LAPICT_OK);
}

/* The whole @ns, even when a kick signal interrupts the sleep. */
static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/*
 * A one-shot of 1 us (TDCR /1 at 1 GHz) with @vector on a software-enabled
 * APIC, the guest's IF as @if_flag, run out and serviced.
 */
static void expire_one_shot(struct fx *f, uint32_t vector, bool if_flag)
{
    mmio_wr(f, 0xF0, 0x1FF);
    mmio_wr(f, 0x3E0, 0xB);
    mmio_wr(f, 0x320, vector);
    f->run.if_flag = if_flag;
    f->run.ready_for_interrupt_injection = if_flag;
    mmio_wr(f, 0x380, 1000);
    sleep_ns(2000000);
    lapict_expire(&f->k.timer);
}

/* Rule: an expiry sets IRR; the interrupt is injected (KVM_INTERRUPT) only
 * with IF set, else an interrupt window is requested; EOI clears ISR. */
static void delivery_and_window(void **state)
{
    struct fx *f = *state;

    expire_one_shot(f, 0x40, true);
    assert_int_equal(mmio_rd(f, 0x220) & 1, 1); /* IRR bit 0x40 */
    f->run.if_flag = 0;
    assert_int_equal(lapict_kvm__deliver(&f->k), -1);
    assert_int_equal(f->run.request_interrupt_window, 1);
    f->run.if_flag = 1;
    assert_int_equal(lapict_kvm__deliver(&f->k), 0x40);
    assert_int_equal(lt_fake.last_vector, 0x40);
    assert_int_equal(mmio_rd(f, 0x220) & 1, 0);
    assert_int_equal(mmio_rd(f, 0x120) & 1, 1); /* ISR */
    assert_int_equal(mmio_rd(f, 0xA0), 0x40);   /* PPR from ISR */
    mmio_wr(f, 0xB0, 0);
    assert_int_equal(mmio_rd(f, 0x120) & 1, 0);
}

/* Rule: a timer interrupt refused while IF is clear is held by the core and
 * delivered once the window opens (no pre-injection into a closed window). */
static void refused_then_window(void **state)
{
    struct fx *f = *state;

    expire_one_shot(f, 0x41, false);
    assert_int_equal(mmio_rd(f, 0x220) & 2, 0);
    assert_true(f->k.timer_refused);
    lapict_kvm__deliver(&f->k);
    assert_int_equal(f->run.request_interrupt_window, 1);
    f->run.if_flag = 1;
    f->run.ready_for_interrupt_injection = 1;
    lapict_kvm__window(&f->k);
    assert_int_equal(lapict_kvm__deliver(&f->k), 0x41);
}

/* Rule: RDMSR/WRMSR/MMIO exits of the LAPIC are taken (#GP becomes
 * run->msr.error = 1); other MMIO and I/O are the VMM's; CR8 written by
 * the guest is TPR after the exit. */
static void lapic_exits(void **state)
{
    struct fx *f = *state;
    uint32_t v;

    msr_exit(&f->run, KVM_EXIT_X86_WRMSR, 0x839, 0);
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    assert_int_equal(f->run.msr.error, 1); /* x2APIC off: #GP */
    msr_exit(&f->run, KVM_EXIT_X86_RDMSR, 0x1B, 0);
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    assert_int_equal(f->run.msr.error, 0);
    assert_int_equal(f->run.msr.data, BASE | 0x900);
    f->run.exit_reason = KVM_EXIT_MMIO;
    f->run.mmio.phys_addr = BASE + 0x30;
    f->run.mmio.len = 4;
    f->run.mmio.is_write = 0;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    memcpy(&v, f->run.mmio.data, 4);
    assert_int_equal(v, LAPICT_APIC_VERSION);
    f->run.mmio.phys_addr = 0xFEC00000;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_NOT_MINE);
    f->run.exit_reason = KVM_EXIT_IO;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_NOT_MINE);
    f->run.cr8 = 7;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_NOT_MINE);
    assert_int_equal(mmio_rd(f, 0x80), 0x70);
}

/* Rule: a kick (KVM_RUN -EINTR) is the LAPIC's, whatever stale exit_reason
 * the run structure still holds (an MMIO write is not done twice). */
static void kick_is_mine_and_not_replayed(void **state)
{
    struct fx *f = *state;
    uint32_t tpr = 0x30;

    f->run.exit_reason = KVM_EXIT_MMIO;
    f->run.mmio.phys_addr = BASE + 0x80;
    f->run.mmio.len = 4;
    f->run.mmio.is_write = 1;
    memcpy(f->run.mmio.data, &tpr, 4);
    f->run.cr8 = 0;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    assert_int_equal(mmio_rd(f, 0x80), 0x30);
    mmio_wr(f, 0x80, 0x10);
    f->run.cr8 = 1;
    f->run.immediate_exit = 1;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, -EINTR), LAPICT_KVM_MINE);
    assert_int_equal(mmio_rd(f, 0x80), 0x10); /* not replayed */
    assert_int_equal(f->run.immediate_exit, 0);
    /* Any other KVM_RUN failure is an error with its errno. */
    assert_int_equal(lapict_kvm_handle_exit(&f->k, -EFAULT), LAPICT_E_SYSTEM);
    assert_int_equal(lapict_kvm_errno(&f->k), EFAULT);
    assert_string_equal(lapict_kvm_errcall(&f->k), "KVM_RUN");
}

/* Rule: HLT with IF set and nothing deliverable is a halt for the VMM to
 * wait in; with an interrupt deliverable it re-enters; with IF clear it is
 * the VMM's (nothing can wake it). */
static void hlt_outcomes(void **state)
{
    struct fx *f = *state;

    f->run.exit_reason = KVM_EXIT_HLT;
    f->run.if_flag = 1;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_HALTED);
    mmio_wr(f, 0xF0, 0x1FF);
    assert_true(lapict_apic_set_irq(&f->k.apic, 0x50));
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    f->run.if_flag = 0;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_NOT_MINE);
}

/* The VMM's apic_ops, recorded (lapict_kvm_config.apic_ops). */
struct vmm_rec {
    unsigned ipis, nmis, bases, eois;
    int ipi_rc;
    struct lapict_apic_ipi ipi;
};

static int vmm_ipi(void *ctx, const struct lapict_apic_ipi *ipi)
{
    struct vmm_rec *r = ctx;
    r->ipis++;
    r->ipi = *ipi;
    return r->ipi_rc;
}

static int vmm_nmi(void *ctx)
{
    ((struct vmm_rec *)ctx)->nmis++;
    return LAPICT_OK;
}

static int vmm_base(void *ctx, uint64_t base)
{
    (void)base;
    ((struct vmm_rec *)ctx)->bases++;
    return LAPICT_OK;
}

static void vmm_eoi(void *ctx)
{
    ((struct vmm_rec *)ctx)->eois++;
}

/* An ICR write by the guest, as KVM reports it (an MMIO exit). */
static int icr_exit(struct fx *f, uint32_t lo)
{
    f->run.exit_reason = KVM_EXIT_MMIO;
    f->run.mmio.phys_addr = BASE + 0x300;
    f->run.mmio.len = 4;
    f->run.mmio.is_write = 1;
    memcpy(f->run.mmio.data, &lo, 4);
    return lapict_kvm_handle_exit(&f->k, 0);
}

/*
 * Rule: the VMM's apic_ops get what the model hands on: the IPIs for other
 * vCPUs, INIT and SIPI (ipi), and, after KVM's part (KVM_NMI, KVM_SET_MSRS),
 * NMIs, base changes and EOIs; an ipi op's error is the exit's. Without an
 * ipi op the IPIs are counted in apic.st.ipis_unrouted. A table of
 * version 0 is refused.
 */
static void vmm_apic_ops_get_ipis(void **state)
{
    static const struct lapict_apic_ops vmm = {
        .version = LAPICT_APIC_OPS_VERSION,
        .nmi = vmm_nmi,
        .base_changed = vmm_base,
        .eoi = vmm_eoi,
        .ipi = vmm_ipi,
    };
    static const struct lapict_apic_ops v0 = {.ipi = vmm_ipi};
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    struct fx *f = *state, *d = calloc(1, sizeof(*d));
    struct vmm_rec rec = {0};

    /* The fixture's instance has no apic_ops: counted, nothing else. */
    assert_int_equal(icr_exit(f, 0xC4500), LAPICT_KVM_MINE); /* INIT */
    assert_int_equal(f->k.apic.st.ipis_unrouted, 1);

    assert_non_null(d);
    c.apic_ops = &v0;
    assert_int_equal(lapict_kvm_init(&d->k, LT_FAKE_VCPU_FD, &d->run, &c),
                     LAPICT_E_OPS);
    c.apic_ops = &vmm;
    c.apic_ctx = &rec;
    assert_int_equal(lapict_kvm_init(&d->k, LT_FAKE_VCPU_FD, &d->run, &c),
                     LAPICT_OK);
    mmio_wr(d, 0xF0, 0x1FF);
    mmio_wr(d, 0x310, 0x01000000); /* ICR2: APIC ID 1 */
    assert_int_equal(icr_exit(d, 0x4500), LAPICT_KVM_MINE); /* INIT */
    assert_int_equal(rec.ipis, 1);
    assert_int_equal(rec.ipi.mode, LAPICT_APIC_DM_INIT);
    assert_int_equal(rec.ipi.dest, 1);
    assert_int_equal(icr_exit(d, 0x4620), LAPICT_KVM_MINE); /* SIPI 0x20 */
    assert_int_equal(rec.ipis, 2);
    assert_int_equal(rec.ipi.mode, LAPICT_APIC_DM_STARTUP);
    assert_int_equal(rec.ipi.vector, 0x20);
    assert_int_equal(icr_exit(d, 0x80041), LAPICT_KVM_MINE); /* all */
    assert_int_equal(rec.ipis, 3);
    assert_true(rec.ipi.delivered_here);
    assert_true(lapict_apic_irr_test(&d->k.apic, 0x41));
    assert_int_equal(d->k.apic.st.ipis_unrouted, 0);
    rec.ipi_rc = LAPICT_E_SYSTEM;
    assert_int_equal(icr_exit(d, 0x42), LAPICT_E_SYSTEM);
    assert_int_equal(rec.ipis, 4);
    /* NMI to self: KVM_NMI, then the VMM hears of it. */
    mmio_wr(d, 0x310, 0);
    assert_int_equal(icr_exit(d, 0x400), LAPICT_KVM_MINE);
    assert_int_equal(lt_fake.nmis, 1);
    assert_int_equal(rec.nmis, 1);
    assert_int_equal(rec.ipis, 4); /* self only: not routed */
    mmio_wr(d, 0xB0, 0);
    assert_int_equal(rec.eois, 1);
    msr_exit(&d->run, KVM_EXIT_X86_WRMSR, 0x1B, BASE | 0xD00);
    assert_int_equal(lapict_kvm_handle_exit(&d->k, 0), LAPICT_KVM_MINE);
    assert_int_equal(lt_fake.apic_base, BASE | 0xD00);
    assert_int_equal(rec.bases, 1);
    lapict_kvm_destroy(&d->k);
    free(d);
}

/* A second vCPU's LAPIC on the fake (the destination of a migration). */
static struct fx *fx_new(void)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    struct fx *d = calloc(1, sizeof(*d));

    assert_non_null(d);
    assert_int_equal(lapict_kvm_init(&d->k, LT_FAKE_VCPU_FD, &d->run, &c), 0);
    return d;
}

static void fx_free(struct fx *d)
{
    lapict_kvm_destroy(&d->k);
    free(d);
}

/* Both blobs of @f's LAPIC. */
static void save_both(struct fx *f, uint8_t *a, uint8_t *t)
{
    assert_int_equal(lapict_apic_save(&f->k.apic, a, LAPICT_APIC_STATE_SIZE),
                     LAPICT_OK);
    assert_int_equal(lapict_state_save(&f->k.timer, t, LAPICT_STATE_SIZE),
                     LAPICT_OK);
}

/*
 * Rule (state.h, docs/spec/timer.md "Save and restore"): a timer interrupt held
 * pending at the save (IF clear) is delivered exactly once after
 * lapict_kvm_restore(), at the first window; a rejected pair of blobs (one
 * corrupt, or model and timer that disagree on SVR) changes nothing; a
 * vCPU restored halted is woken by the pending interrupt, and stays halted
 * without one.
 */
static void restore_pending_once(void **state)
{
    struct fx *f = *state, *d = fx_new(), *h = fx_new();
    uint8_t a[LAPICT_APIC_STATE_SIZE], t[LAPICT_STATE_SIZE];
    uint8_t b[LAPICT_APIC_STATE_SIZE], a0[LAPICT_APIC_STATE_SIZE];
    uint8_t t0[LAPICT_STATE_SIZE], a1[LAPICT_APIC_STATE_SIZE];
    uint8_t t1[LAPICT_STATE_SIZE];
    uint32_t lvtt = 0;

    mmio_wr(f, 0xF0, 0x1FF);
    mmio_wr(f, 0x3E0, 0xB);
    mmio_wr(f, 0x320, 0x40);
    f->run.if_flag = 0; /* the guest in a cli section */
    f->run.ready_for_interrupt_injection = 0;
    mmio_wr(f, 0x380, 20000); /* 20 us */
    sleep_ns(200000);
    assert_true(lapict_kvm_poll(&f->k));
    assert_false(lapict_apic_irr_test(&f->k.apic, 0x40)); /* held */
    assert_int_equal(lapict_xapic_read(&f->k.timer, 0x320, &lvtt), LAPICT_OK);
    assert_true(lvtt & 0x1000u);
    save_both(f, a, t);

    /* Rejected: the destination is left exactly as it was. */
    save_both(d, a0, t0);
    memcpy(b, a, sizeof(b));
    b[20] ^= 1; /* TPR, checksum now wrong */
    assert_int_equal(
        lapict_kvm_restore(&d->k, b, sizeof(b), t, sizeof(t), false),
        LAPICT_E_STATE_CHECKSUM);
    assert_int_equal(
        lapict_kvm_restore(&d->k, a, sizeof(a), t, sizeof(t) - 1, false),
        LAPICT_E_STATE_SIZE);
    /* The destination's own model (SVR software-disabled) with the
     * source's timer (enabled): not one APIC. */
    assert_int_equal(
        lapict_kvm_restore(&d->k, a0, sizeof(a0), t, sizeof(t), false),
        LAPICT_E_STATE_FIELD);
    assert_int_equal(
        lapict_kvm_restore(NULL, a, sizeof(a), t, sizeof(t), false),
        LAPICT_E_INVAL);
    save_both(d, a1, t1);
    assert_memory_equal(a0, a1, sizeof(a0));
    assert_memory_equal(t0 + 8, t1 + 8, 16); /* registers and flags */

    /* Accepted: nothing offered before the guest can take it. */
    assert_int_equal(
        lapict_kvm_restore(&d->k, a, sizeof(a), t, sizeof(t), false),
        LAPICT_OK);
    assert_false(lapict_apic_irr_test(&d->k.apic, 0x40));
    lapict_kvm__window(&d->k); /* IF still clear: no window yet */
    assert_false(lapict_apic_irr_test(&d->k.apic, 0x40));
    d->run.if_flag = 1;
    d->run.ready_for_interrupt_injection = 1;
    lapict_kvm__window(&d->k);
    assert_true(lapict_apic_irr_test(&d->k.apic, 0x40));
    lt_fake.injections = 0;
    assert_int_equal(lapict_kvm__deliver(&d->k), 0x40);
    assert_int_equal(lt_fake.injections, 1);
    /* Exactly once: another window, an EOI, nothing more to deliver. */
    d->k.injected = false;
    mmio_wr(d, 0xB0, 0);
    lapict_kvm__window(&d->k);
    assert_int_equal(lapict_kvm__deliver(&d->k), -1);
    assert_int_equal(lt_fake.injections, 1);

    /* Halted: the pending interrupt wakes it. */
    assert_int_equal(
        lapict_kvm_restore(&h->k, a, sizeof(a), t, sizeof(t), true), LAPICT_OK);
    assert_true(lapict_apic_irr_test(&h->k.apic, 0x40));
    fx_free(h);
    /* Halted with nothing pending (the destination after its EOI): it
     * stays halted. */
    save_both(d, a, t);
    h = fx_new();
    assert_int_equal(
        lapict_kvm_restore(&h->k, a, sizeof(a), t, sizeof(t), true),
        LAPICT_KVM_HALTED);
    assert_int_equal(lapict_apic_deliverable(&h->k.apic), -1);
    fx_free(h);
    fx_free(d);
}

TU_MAIN(cmocka_unit_test_setup_teardown(other_msr_is_not_mine, setup, teardown),
        cmocka_unit_test_setup_teardown(delivery_and_window, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_then_window, setup, teardown),
        cmocka_unit_test_setup_teardown(lapic_exits, setup, teardown),
        cmocka_unit_test_setup_teardown(kick_is_mine_and_not_replayed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(hlt_outcomes, setup, teardown),
        cmocka_unit_test_setup_teardown(vmm_apic_ops_get_ipis, setup, teardown),
        cmocka_unit_test_setup_teardown(restore_pending_once, setup, teardown))
