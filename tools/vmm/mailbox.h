/* SPDX-License-Identifier: MIT */
/*
 * The contract between lapict-vmm and its guest: a mailbox in guest memory
 * at a fixed physical address (parameters in, results out) and the I/O
 * ports the guest uses to talk to the VMM (VMCALL is not usable here).
 */
#ifndef LAPICT_VMM_MAILBOX_H
#define LAPICT_VMM_MAILBOX_H

#include <stdint.h>

#define MB_ADDR 0x8000u
#define MB_MAGIC 0x4C41504Du
#define GUEST_LOAD 0x100000u
#define GUEST_STACK_TOP 0x9F000u
#define SAMPLES_ADDR 0x1000000u /* 16 MiB */
#define GUEST_RAM (64u << 20)
#define SAMPLES_MAX ((GUEST_RAM - SAMPLES_ADDR) / 16u)
/* The bare-metal guest's virtual timers (mailbox.timers) at most. */
#define MB_TIMERS_MAX 16384u
/* --test=tscdeadline: the deadline of each sample (guest TSC), after the
 * samples' lateness. */
#define DEADLINES_ADDR (SAMPLES_ADDR + SAMPLES_MAX * 8u)
/* --test=immed: the same area holds three segments per iteration (from
 * the WRMSR to the ISR, the ISR's EOI, the rest), for the first
 * SAMPLES_MAX / 3 iterations. */
#define IMMED_PARTS_ADDR DEADLINES_ADDR

/* Ports (32-bit OUT). */
#define PORT_PUTS 0x500u /* value: guest address of a NUL-terminated line */
#define PORT_DONE 0x504u /* value: 0 ok, else failure code */
#define PORT_PING 0x508u /* the exit-round-trip test target */
/* --test=migrate: the guest just switched the timer's mode (value: the
 * phase, MIG_PH_*): a stop point the VMM may take. */
#define PORT_MODE 0x50Cu
/* --test=migrate: the VMM refreshes mig.missed_ticks now. */
#define PORT_SYNC 0x514u
/* --test=entry: value ENTRY_RAISE: the VMM records the previous round's
 * sample (if any) and raises ENTRY_VEC for the next entry; ENTRY_LAST:
 * it records the previous round only. */
#define PORT_ENTRY 0x518u
/* --test=migrate: the guest is between two TMCCT samples of a running
 * one-shot, interrupts off, as mig.tmcct_req asked: a stop point the VMM
 * takes, so that the sample after it straddles a migration. */
#define PORT_TMCCT 0x51Cu
#define ENTRY_RAISE 0u
#define ENTRY_LAST 1u
#define ENTRY_VEC 0x41u
/* The handler stamps the TSC as its first instruction (a stub that may
 * clobber RAX/RDX); or the timer interrupt's own path (entry.S's
 * timer_stub: registers saved, then timer_isr(), which stamps where every
 * latency test does). */
#define ENTRY_ISR_STUB 0u
#define ENTRY_ISR_TIMER 1u

enum mb_test {
    T_TSCDEADLINE = 0,
    T_ONESHOT = 1,
    T_PERIODIC = 2,
    T_SELFTEST = 3,
    T_EXIT = 4,
    T_MIGRATE = 5,
    T_ENTRY = 6,
    T_IMMED = 7,
};

/* --test=migrate phases (the timer mode the guest keeps busy). */
enum mb_mig_phase {
    MIG_PH_PERIODIC = 1,
    MIG_PH_ONESHOT = 2,
    MIG_PH_DEADLINE = 3
};

enum mb_wait { W_HLT = 0, W_SPIN = 1 };

struct mailbox {
    /* VMM -> guest. */
    uint32_t magic, test, wait;
    /* --test=entry: ENTRY_ISR_STUB or ENTRY_ISR_TIMER (which handler). */
    uint32_t entry_isr;
    /* Non-zero: the guest switches its APIC to x2APIC mode and reaches it
     * through MSRs (--x2apic=on with --test=immed or tscdeadline). */
    uint32_t x2apic;
    uint64_t samples, delta, period_ns, tsc_khz, bus_hz;
    /* guest -> VMM: samples[] at SAMPLES_ADDR (lateness, signed cycles, or
     * for periodic the raw arrival TSC), counts. */
    uint64_t nsamples, early, pass, fail;
    uint64_t t_first, t_last, t_start;
    /* VMM -> guest: virtual timers of the bare-metal guest (0: default;
     * at most MB_TIMERS_MAX). */
    uint64_t timers;
    /*
     * --test=migrate. VMM -> guest, written while the guest is stopped:
     * the migrations so far (count first and last, so that a reader sees
     * a torn update as a changed count), the time the timer stood still
     * across them (docs/spec/timer.md section 8: count-downs resume where they
     * were), as lower and upper bounds in ns, the periodic ticks lapict
     * coalesced or dropped (the missed-tick policy), the seed and stop.
     * Guest -> VMM: what its checks found.
     */
    struct {
        uint64_t seq0, frozen_lo_ns, frozen_hi_ns, seq1;
        uint64_t missed_ticks, seed, stop;
        /* VMM -> guest: stop at PORT_TMCCT between the next two samples. */
        uint64_t tmcct_req;
        uint64_t interrupts, lost, doubled, early, phases;
        uint64_t tmcct_checks, tmcct_across, tmcct_bad;
        uint64_t periodic_ticks, oneshots, deadlines;
        uint64_t bad_detail[4], early_detail[4];
    } mig;
    /* --test=entry, guest -> VMM: the guest TSC at the first instruction
     * of the ENTRY_VEC handler (0: not run yet this round). */
    uint64_t entry_isr_tsc;
};

#endif
