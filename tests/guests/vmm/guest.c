/* SPDX-License-Identifier: MIT */
/*
 * The lapict-vmm guest: freestanding, 64-bit, one vCPU. Parameters come in
 * the mailbox; lines go out through PORT_PUTS; samples are left in memory
 * for the VMM. Uses the xAPIC MMIO page and IA32_TSC_DEADLINE.
 */
#include <stdbool.h>
#include <stdint.h>

#include "mailbox.h"
#include "runtime.h"

#define A_EOI 0xB0u
#define A_SVR 0xF0u
#define A_ESR 0x280u
#define A_LVTT 0x320u
#define A_TMICT 0x380u
#define A_TMCCT 0x390u
#define A_TDCR 0x3E0u
#define MSR_TSC_DEADLINE 0x6E0u
#define VEC 0x40u
#define MODE_ONESHOT 0x00000u
#define MODE_PERIODIC 0x20000u
#define MODE_TSCDL 0x40000u
#define MASKED 0x10000u

static struct mailbox *const mb = (struct mailbox *)(uintptr_t)MB_ADDR;
static uint64_t *const samples = (uint64_t *)(uintptr_t)SAMPLES_ADDR;
static uint64_t *const deadlines = (uint64_t *)(uintptr_t)DEADLINES_ADDR;

/* What the timer ISR does with an interrupt. */
enum isr_mode {
    ISR_COUNT,
    ISR_LATENCY_DL,
    ISR_LATENCY_OS,
    ISR_PERIODIC,
    ISR_MIGRATE,
    ISR_IMMED,
    ISR_ENTRY
};
static volatile int isr_mode;
/* --test=entry: the TSC its handler stamped (0: not run yet this round). */
__attribute__((used)) volatile uint64_t entry_tsc;
static volatile uint64_t n_irq, expected, last_irq_tsc, immed_eoi_tsc;
static uint64_t delta, os_ticks, early;

/*
 * Host stalls: this guest runs nested on a shared machine, where the vCPU
 * thread can lose the CPU for milliseconds. The selftest's timing windows
 * (e.g. "two periodic interrupts within 2.5 ms") cannot hold across such a
 * stall, so the largest gap seen between two consecutive observations of
 * the TSC is tracked, and a check that fails after a stall is run again.
 */
static uint64_t max_gap, gap_prev;

static inline void gap_note(uint64_t now)
{
    /* An interrupt handler may have noted a later TSC meanwhile. */
    if ((int64_t)(now - gap_prev) <= 0)
        return;
    if (gap_prev && now - gap_prev > max_gap)
        max_gap = now - gap_prev;
    gap_prev = now;
}

/* In x2APIC mode (mb->x2apic) the registers are MSRs 0x800 + offset/16. */
static bool x2;

static inline uint32_t apic_read(uint32_t off)
{
    uint32_t v;

    gap_note(rdtsc());
    if (x2)
        v = (uint32_t)rdmsr(0x800u + (off >> 4));
    else
        v = *(volatile uint32_t *)(uintptr_t)(APIC + off);
    gap_note(rdtsc());
    return v;
}

static inline void apic_write(uint32_t off, uint32_t v)
{
    gap_note(rdtsc());
    if (x2)
        wrmsr(0x800u + (off >> 4), v);
    else
        *(volatile uint32_t *)(uintptr_t)(APIC + off) = v;
    gap_note(rdtsc());
}

static uint64_t ns_to_tsc_floor(uint64_t ns)
{
    return ns * mb->tsc_khz / 1000000u;
}

static uint64_t tsc_to_ns_floor(uint64_t tsc)
{
    return tsc * 1000000u / mb->tsc_khz;
}

/* Timer ticks (divide by 1) for a TSC delta, rounded down. */
static uint64_t tsc_to_ticks(uint64_t tsc)
{
    return tsc_to_ns_floor(tsc) * (mb->bus_hz / 1000000u) / 1000u;
}

static uint64_t ticks_to_tsc_floor(uint64_t ticks)
{
    return ns_to_tsc_floor(ticks * 1000u / (mb->bus_hz / 1000000u));
}

static void record_latency(uint64_t now)
{
    uint64_t n = n_irq;
    if ((int64_t)(now - expected) < 0)
        early++;
    if (n < mb->samples) {
        samples[n] = now - expected;
        deadlines[n] = expected;
    }
    n_irq = n + 1;
}

static void migrate_isr(void);

void timer_isr(void)
{
    uint64_t now;

    if (isr_mode == ISR_MIGRATE) {
        migrate_isr();
        apic_write(A_EOI, 0);
        return;
    }
    now = rdtsc();
    switch (isr_mode) {
    case ISR_LATENCY_DL:
        record_latency(now);
        apic_write(A_EOI, 0);
        if (n_irq < mb->samples) {
            expected = rdtsc() + delta;
            wrmsr(MSR_TSC_DEADLINE, expected);
        }
        return;
    case ISR_LATENCY_OS:
        record_latency(now);
        apic_write(A_EOI, 0);
        if (n_irq < mb->samples) {
            expected = rdtsc() + ticks_to_tsc_floor(os_ticks);
            apic_write(A_TMICT, (uint32_t)os_ticks);
        }
        return;
    case ISR_PERIODIC:
        if (n_irq < mb->samples)
            samples[n_irq] = now;
        n_irq = n_irq + 1;
        if (n_irq >= mb->samples)
            apic_write(A_TMICT, 0);
        apic_write(A_EOI, 0);
        return;
    case ISR_ENTRY:
        /* --test=entry with ENTRY_ISR_TIMER: the wait EOIs. */
        entry_tsc = now;
        return;
    case ISR_IMMED:
        /* --test=immed: when the ISR ran, when its EOI was done. */
        last_irq_tsc = now;
        apic_write(A_EOI, 0);
        immed_eoi_tsc = rdtsc();
        n_irq = n_irq + 1;
        return;
    default:
        last_irq_tsc = now;
        n_irq = n_irq + 1;
        apic_write(A_EOI, 0);
        return;
    }
}

/* Wait (interrupts on) until n_irq reaches @n, by HLT or by spinning. */
static void wait_irqs(uint64_t n)
{
    if (mb->wait == W_SPIN) {
        __asm__ volatile("sti" ::: "memory");
        while (n_irq < n)
            __asm__ volatile("pause" ::: "memory");
        __asm__ volatile("cli" ::: "memory");
        return;
    }
    while (n_irq < n)
        __asm__ volatile("sti; hlt; cli" ::: "memory");
}

/* Spin with interrupts on for @ns; returns early when n_irq reaches @n. */
static bool spin_ns(uint64_t ns, uint64_t n)
{
    uint64_t end = rdtsc() + ns_to_tsc_floor(ns), now;
    __asm__ volatile("sti" ::: "memory");
    while ((int64_t)((now = rdtsc()) - end) < 0 && n_irq < n) {
        gap_note(now);
        __asm__ volatile("pause" ::: "memory");
    }
    __asm__ volatile("cli" ::: "memory");
    gap_note(rdtsc());
    return n_irq >= n;
}

static void test_tscdeadline(void)
{
    isr_mode = ISR_LATENCY_DL;
    apic_write(A_LVTT, MODE_TSCDL | VEC);
    expected = rdtsc() + delta;
    wrmsr(MSR_TSC_DEADLINE, expected);
    wait_irqs(mb->samples);
}

/*
 * kvm-unit-tests' vmexit tscdeadline_immed, per iteration: a deadline of
 * now (due at once), CPUID, the ISR, its EOI; the sample is the whole
 * iteration in cycles.
 */
static void test_immed(void)
{
    bool spin = mb->wait == W_SPIN;

    uint64_t *parts = (uint64_t *)(uintptr_t)IMMED_PARTS_ADDR;

    isr_mode = ISR_IMMED;
    apic_write(A_LVTT, MODE_TSCDL | VEC);
    __asm__ volatile("sti" ::: "memory");
    for (uint64_t i = 0; i < mb->samples; i++) {
        uint64_t t0 = rdtsc(), t3;
        uint32_t a = 0, b, c = 0, d;
        wrmsr(MSR_TSC_DEADLINE, rdtsc());
        __asm__ volatile("cpuid"
                         : "+a"(a), "=b"(b), "+c"(c), "=d"(d)
                         :
                         : "memory");
        if (spin) {
            while (n_irq <= i)
                __asm__ volatile("pause" ::: "memory");
        } else {
            /* STI's shadow covers the HLT: an interrupt between the
             * check and the HLT still ends the HLT. */
            __asm__ volatile("cli" ::: "memory");
            while (n_irq <= i)
                __asm__ volatile("sti; hlt; cli" ::: "memory");
            __asm__ volatile("sti" ::: "memory");
        }
        t3 = rdtsc();
        samples[i] = t3 - t0;
        if (i < SAMPLES_MAX / 3) {
            parts[3 * i] = last_irq_tsc - t0;
            parts[3 * i + 1] = immed_eoi_tsc - last_irq_tsc;
            parts[3 * i + 2] = t3 - immed_eoi_tsc;
        }
    }
    __asm__ volatile("cli" ::: "memory");
}

static void test_oneshot(void)
{
    isr_mode = ISR_LATENCY_OS;
    os_ticks = tsc_to_ticks(delta);
    apic_write(A_TDCR, 0xB);
    apic_write(A_LVTT, MODE_ONESHOT | VEC);
    expected = rdtsc() + ticks_to_tsc_floor(os_ticks);
    apic_write(A_TMICT, (uint32_t)os_ticks);
    wait_irqs(mb->samples);
}

static void test_periodic(void)
{
    uint64_t ticks = mb->period_ns * (mb->bus_hz / 1000000u) / 1000u;

    isr_mode = ISR_PERIODIC;
    apic_write(A_TDCR, 0xB);
    apic_write(A_LVTT, MODE_PERIODIC | VEC);
    mb->t_start = rdtsc();
    apic_write(A_TMICT, (uint32_t)ticks);
    wait_irqs(mb->samples);
}

static void test_exit(void)
{
    for (uint64_t i = 0; i < mb->samples; i++) {
        uint64_t t0 = rdtsc();
        outl(PORT_PING, (uint32_t)t0);
        samples[i] = rdtsc() - t0;
    }
    n_irq = mb->samples;
}

/* --- entry ----------------------------------------------------------- */

/*
 * --test=entry: the floor of a timer interrupt under a userspace LAPIC,
 * the entry that carries an injected interrupt. The VMM stamps its TSC
 * right before that KVM_RUN. With ENTRY_ISR_STUB the handler's first
 * instruction stamps the guest TSC: the only code it can interrupt is
 * test_entry()'s wait, which gives up RAX and RDX to it, so nothing is
 * saved before the stamp. With ENTRY_ISR_TIMER the handler is the timer's
 * own (timer_stub saves the registers, timer_isr() stamps), so the floor
 * includes what every latency test's ISR does before its stamp: under
 * software virtualisation (PVM) the first stack writes after an exit to
 * userspace are a large part of it.
 * EOI is left to the wait, after the stamp. mb->wait picks the exit the
 * entry follows: a PIO exit (W_SPIN) or a HLT exit (W_HLT).
 */
void entry_stub(void);
extern void timer_stub(void);
__asm__(".text\n"
        ".globl entry_stub\n"
        "entry_stub:\n"
        "    rdtsc\n"
        "    shl $32, %rdx\n"
        "    or %rdx, %rax\n"
        "    mov %rax, entry_tsc(%rip)\n"
        "    iretq\n");

static void test_entry(void)
{
    if (mb->entry_isr == ENTRY_ISR_TIMER) {
        isr_mode = ISR_ENTRY;
        setup_gate(ENTRY_VEC, timer_stub);
    } else {
        setup_gate(ENTRY_VEC, entry_stub);
    }
    for (uint64_t i = 0; i < mb->samples; i++) {
        uint64_t a = ENTRY_RAISE, d = PORT_ENTRY;
        entry_tsc = 0;
        if (mb->wait == W_SPIN) {
            /* The NOP ends STI's interrupt shadow before the exit, so the
             * entry after it may carry the interrupt. */
            __asm__ volatile("sti\n"
                             "nop\n"
                             "outl %%eax, %%dx\n"
                             "1: cmpq $0, entry_tsc(%%rip)\n"
                             "je 1b\n"
                             "cli\n"
                             : "+a"(a), "+d"(d)
                             :
                             : "memory", "cc");
        } else {
            /*
             * As a halted guest's timer interrupt arrives: raised with IF
             * clear (the entry after the OUT cannot carry it), then STI;HLT
             * (the HLT in STI's shadow), so the entry that carries it is
             * the one after the HLT exit.
             */
            __asm__ volatile("cli\n"
                             "outl %%eax, %%dx\n"
                             "sti\n"
                             "hlt\n"
                             "1: cmpq $0, entry_tsc(%%rip)\n"
                             "je 1b\n"
                             "cli\n"
                             : "+a"(a), "+d"(d)
                             :
                             : "memory", "cc");
        }
        mb->entry_isr_tsc = entry_tsc;
        apic_write(A_EOI, 0);
    }
    outl(PORT_ENTRY, ENTRY_LAST);
}

/* --- selftest -------------------------------------------------------- */

static uint64_t pass, fail;
/* Per attempt of one selftest group (see run_check). */
static uint64_t att_pass, att_fail;
static bool att_last, att_stalled;

/* A gap longer than this between two TSC observations is a host stall. */
#define STALL_NS 300000u
#define ATTEMPTS 6

static void check(bool ok, const char *name, uint64_t a, uint64_t b)
{
    if (ok) {
        att_pass++;
        out("PASS %s", name);
    } else if (att_stalled || max_gap > ns_to_tsc_floor(STALL_NS)) {
        /* Not conclusive: the host stalled the vCPU inside the window. */
        att_stalled = true;
        if (att_last) {
            att_fail++;
            out("FAIL %s (%u %u) after %u attempts with host stalls", name, a,
                b, (uint64_t)ATTEMPTS);
        } else {
            out("RETRY %s (%u %u): host stall of %u cycles", name, a, b,
                max_gap);
        }
    } else {
        att_fail++;
        out("FAIL %s (%u %u)", name, a, b);
    }
}

static void timer_off(void);

/* Run one group of checks, again while host stalls make it inconclusive. */
static void run_check(void (*fn)(void))
{
    for (int i = 0; i < ATTEMPTS; i++) {
        att_pass = att_fail = 0;
        att_stalled = false;
        att_last = i == ATTEMPTS - 1;
        timer_off();
        /* Let an interrupt raised before the stop drain (an IRR bit
         * survives a TMICT=0 write), so it is not counted by @fn. */
        spin_ns(200000, ~0ull);
        max_gap = gap_prev = 0;
        fn();
        timer_off();
        if (!att_stalled || att_last)
            break;
    }
    pass += att_pass;
    fail += att_fail;
}

static void timer_off(void)
{
    apic_write(A_TMICT, 0);
    apic_write(A_LVTT, MASKED);
    wrmsr(MSR_TSC_DEADLINE, 0);
}

static void st_deadline_once(void)
{
    bool ok = true;
    uint64_t bad_n = 0, bad_msr = 0;

    apic_write(A_LVTT, MODE_TSCDL | VEC);
    for (int i = 0; i < 5; i++) {
        uint64_t n0 = n_irq, d = rdtsc() + ns_to_tsc_floor(200000);
        wrmsr(MSR_TSC_DEADLINE, d);
        spin_ns(100000000, n0 + 1);
        spin_ns(600000, n0 + 2); /* would see a second interrupt */
        uint64_t msr = rdmsr(MSR_TSC_DEADLINE);
        if (n_irq != n0 + 1 || msr != 0 || last_irq_tsc < d) {
            ok = false;
            bad_n = n_irq - n0;
            bad_msr = msr;
        }
    }
    check(ok,
          "tscdeadline: one interrupt per write, not early, MSR reads 0 "
          "after",
          bad_n, bad_msr);
}

static void st_deadline_past(void)
{
    uint64_t n0 = n_irq;
    apic_write(A_LVTT, MODE_TSCDL | VEC);
    wrmsr(MSR_TSC_DEADLINE, rdtsc() - 1000);
    bool got = spin_ns(2000000, n0 + 1);
    check(got && rdmsr(MSR_TSC_DEADLINE) == 0,
          "tscdeadline: a deadline in the past fires at once", n_irq - n0, 0);
}

static void st_oneshot_never_early(void)
{
    uint64_t worst = 0, bad = 0;
    bool ok = true;

    apic_write(A_TDCR, 0xB);
    apic_write(A_LVTT, MODE_ONESHOT | VEC);
    for (int i = 0; i < 20; i++) {
        uint64_t ticks = 50000u + 25000u * (uint64_t)i; /* ns at 1 GHz */
        ticks = ticks * (mb->bus_hz / 1000000u) / 1000u;
        uint64_t n0 = n_irq, t0 = rdtsc();
        apic_write(A_TMICT, (uint32_t)ticks);
        spin_ns(100000000, n0 + 1);
        uint64_t exp = t0 + ticks_to_tsc_floor(ticks);
        if (n_irq != n0 + 1 || (int64_t)(last_irq_tsc - exp) < 0) {
            ok = false;
            bad = exp - last_irq_tsc;
        }
        if (apic_read(A_TMCCT) != 0)
            ok = false;
        worst = n_irq - n0;
    }
    check(ok, "oneshot: never early, one interrupt, TMCCT 0 after", bad, worst);
}

static void st_tmict_zero_stops(void)
{
    uint64_t n0 = n_irq;
    apic_write(A_TDCR, 0xB);
    apic_write(A_LVTT, MODE_ONESHOT | VEC);
    apic_write(A_TMICT, tsc_to_ticks(ns_to_tsc_floor(2000000)));
    apic_write(A_TMICT, 0);
    uint32_t cct = apic_read(A_TMCCT);
    spin_ns(4000000, n0 + 1);
    check(n_irq == n0 && cct == 0, "oneshot: TMICT 0 stops the timer",
          n_irq - n0, cct);
}

static void st_mode_switch(void)
{
    uint64_t n0, ticks = tsc_to_ticks(ns_to_tsc_floor(1000000));
    uint32_t cct;
    bool ok;

    apic_write(A_TDCR, 0xB);
    /* Periodic running, switched to one-shot: one more expiry, then 0. */
    apic_write(A_LVTT, MODE_PERIODIC | VEC);
    n0 = n_irq;
    apic_write(A_TMICT, (uint32_t)ticks);
    /* Five periods: a slow kick may coalesce ticks, two must arrive. */
    spin_ns(5500000, ~0ull);
    cct = apic_read(A_TMCCT);
    ok = n_irq - n0 >= 2 && cct > 0 && cct <= ticks;
    check(ok, "periodic: reloads, TMCCT in (0, TMICT]", n_irq - n0, cct);
    /*
     * Switch right after a tick arrives, so that no tick of the periodic
     * phase is still on its way (delivery here can take most of a period).
     */
    spin_ns(3000000, n_irq + 1);
    n0 = n_irq;
    apic_write(A_LVTT, MODE_ONESHOT | VEC);
    spin_ns(3500000, ~0ull);
    cct = apic_read(A_TMCCT);
    check(n_irq - n0 == 1 && cct == 0,
          "periodic->oneshot: fires once more, then TMCCT 0", n_irq - n0, cct);
    /* Running one-shot switched to periodic: it reloads. */
    n0 = n_irq;
    apic_write(A_TMICT, (uint32_t)ticks);
    apic_write(A_LVTT, MODE_PERIODIC | VEC);
    spin_ns(5500000, ~0ull);
    cct = apic_read(A_TMCCT);
    check(n_irq - n0 >= 2 && cct > 0,
          "oneshot->periodic: reloads at expiry, TMCCT nonzero", n_irq - n0,
          cct);
    apic_write(A_TMICT, 0);
}

static void st_deadline_outside_mode(void)
{
    uint64_t n0 = n_irq;
    apic_write(A_LVTT, MODE_ONESHOT | VEC);
    apic_write(A_TMICT, 0);
    wrmsr(MSR_TSC_DEADLINE, rdtsc() + ns_to_tsc_floor(100000));
    uint64_t msr = rdmsr(MSR_TSC_DEADLINE);
    spin_ns(1000000, n0 + 1);
    check(msr == 0 && n_irq == n0,
          "tscdeadline: MSR writes ignored outside the mode", msr, n_irq - n0);
}

static void st_tmict_inside_deadline(void)
{
    uint64_t n0 = n_irq;
    apic_write(A_LVTT, MODE_TSCDL | VEC);
    apic_write(A_TMICT, 100000);
    uint32_t ict = apic_read(A_TMICT), cct = apic_read(A_TMCCT);
    spin_ns(1000000, n0 + 1);
    check(ict == 0 && cct == 0 && n_irq == n0,
          "tscdeadline: TMICT ignored in the mode", ict, n_irq - n0);
}

static void st_masked_counts(void)
{
    uint64_t n0 = n_irq, ticks = tsc_to_ticks(ns_to_tsc_floor(2000000));
    apic_write(A_TDCR, 0xB);
    apic_write(A_LVTT, MODE_ONESHOT | MASKED | VEC);
    apic_write(A_TMICT, (uint32_t)ticks);
    uint32_t c1 = apic_read(A_TMCCT);
    spin_ns(500000, ~0ull);
    uint32_t c2 = apic_read(A_TMCCT);
    spin_ns(2500000, ~0ull);
    uint32_t c3 = apic_read(A_TMCCT);
    apic_write(A_LVTT, MODE_ONESHOT | VEC);
    spin_ns(500000, n0 + 1);
    check(c1 > c2 && c2 > 0 && c3 == 0 && n_irq == n0,
          "masked: counts down, reaches 0, no interrupt", c1, c2);
    if (c3 || n_irq != n0)
        out("  masked: c3=%u irqs=%u", (uint64_t)c3, n_irq - n0);
}

static void st_tdcr_all(void)
{
    static const uint32_t vals[8] = {0x0, 0x1, 0x2, 0x3, 0x8, 0x9, 0xA, 0xB};
    static const uint32_t divs[8] = {2, 4, 8, 16, 32, 64, 128, 1};
    bool ok = true;
    uint64_t bad_d = 0, bad_m = 0;

    apic_write(A_LVTT, MODE_ONESHOT | MASKED | VEC);
    for (int i = 0; i < 8; i++) {
        apic_write(A_TDCR, vals[i]);
        if (apic_read(A_TDCR) != vals[i])
            ok = false;
        apic_write(A_TMICT, 0xFFFFFFFFu);
        /*
         * Each TMCCT read is a VM exit whose count is taken somewhere
         * inside its own TSC bracket: the ticks between the two reads lie
         * between the ticks of the inner span (after the first read
         * returned, before the second began) and those of the outer one.
         * A host stall inside an exit only widens the outer span, so the
         * check holds however long the host takes (2 ticks of rounding).
         */
        uint64_t t0 = rdtsc();
        uint32_t c0 = apic_read(A_TMCCT);
        uint64_t t0b = rdtsc();
        spin_ns(2000000, ~0ull);
        uint64_t t1a = rdtsc();
        uint32_t c1 = apic_read(A_TMCCT);
        uint64_t t1 = rdtsc();
        uint64_t per_us = mb->bus_hz / 1000000u;
        uint64_t lo = tsc_to_ns_floor(t1a - t0b) * per_us / 1000u / divs[i];
        uint64_t hi = (tsc_to_ns_floor(t1 - t0) + 1) * per_us / 1000u / divs[i];
        uint64_t got = (uint64_t)(c0 - c1);
        if (got + 2 < lo || got > hi + 2) {
            ok = false;
            bad_d = divs[i];
            bad_m = got;
        }
        apic_write(A_TMICT, 0);
    }
    check(ok, "TDCR: every divide value reads back and sets the rate", bad_d,
          bad_m);
    apic_write(A_TDCR, 0xB);
}

static void test_selftest(void)
{
    isr_mode = ISR_COUNT;
    run_check(st_deadline_once);
    run_check(st_deadline_past);
    run_check(st_oneshot_never_early);
    run_check(st_tmict_zero_stops);
    run_check(st_mode_switch);
    run_check(st_deadline_outside_mode);
    run_check(st_tmict_inside_deadline);
    run_check(st_masked_counts);
    run_check(st_tdcr_all);
    mb->pass = pass;
    mb->fail = fail;
}

/* --- migrate ---------------------------------------------------------- */

/*
 * --test=migrate: the timer kept busy in every mode while the VMM
 * migrates the VM again and again (vmm.c), each interrupt checked against
 * its architectural instant. The timer stands still while the VM is
 * stopped (docs/spec/timer.md section 8: count-downs resume where they were)
 * and the TSC does not (the VMM keeps it continuous), so a count-down's instant
 * is its arming plus its length plus the time the timer stood still since:
 * the VMM reports that as bounds (mig.frozen_lo_ns / frozen_hi_ns). A
 * TSC deadline's instant is the deadline itself.
 */
#define PH_DRAIN 4u
#define LOST_NS 200000000u /* an interrupt this late counts as lost */

static uint64_t rng;
static volatile uint32_t phase;
/* Periodic: arming (TSC before the TMICT write), period, arrivals. */
static volatile uint64_t per_t0, per_f0, per_p_tsc, per_count, per_last;
/* The standstill as of the last arrival (read before its TSC). */
static volatile uint64_t per_last_flo;
/* One-shot / deadline: an interrupt is owed; its instant (count-down:
 * before the time stood still since os_f0). */
static volatile uint64_t armed, exp_tsc, os_f0;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t rnd_in(uint64_t lo, uint64_t hi)
{
    return lo + rnd() % (hi - lo + 1);
}

struct frz {
    uint64_t seq, lo, hi;
};

/* The VMM's migration counters, untorn (it writes them while we stop). */
static void frozen(struct frz *f)
{
    volatile uint64_t *m = &mb->mig.seq0;
    for (;;) {
        uint64_t s0 = m[0], lo = m[1], hi = m[2], s1 = m[3];
        if (s0 == s1) {
            f->seq = s0;
            f->lo = lo;
            f->hi = hi;
            return;
        }
    }
}

static uint64_t tsc_to_ns_ceil(uint64_t tsc)
{
    return (tsc * 1000000u + mb->tsc_khz - 1) / mb->tsc_khz;
}

static void bad(uint64_t *counter, uint64_t what, uint64_t got, uint64_t want)
{
    volatile uint64_t *d =
        counter == &mb->mig.early ? mb->mig.early_detail : mb->mig.bad_detail;
    *counter = *counter + 1;
    if (!d[0]) {
        d[0] = what;
        d[1] = got;
        d[2] = want;
        d[3] = phase;
    }
}

static void migrate_isr(void)
{
    struct frz f;
    uint64_t want, now;

    /*
     * The standstill first, then the TSC: the VMM may stop the vCPU at any
     * instruction (a kick), and a migration between the two reads must
     * count in neither (the TSC read after it includes its downtime).
     */
    frozen(&f);
    now = rdtsc();
    mb->mig.interrupts++;
    switch (phase) {
    case MIG_PH_PERIODIC:
    case PH_DRAIN:
        /* The j-th arrival is for grid point j or a later one (coalesced
         * ticks); the grid moved by the time the timer stood still. */
        per_count = per_count + 1;
        per_last = now;
        per_last_flo = f.lo;
        if (per_count < 256) {
            samples[2 * per_count] = now;
            samples[2 * per_count + 1] = f.seq | f.lo << 16;
        }
        want = per_t0 + per_count * per_p_tsc + ns_to_tsc_floor(f.lo - per_f0);
        if (now < want)
            bad(&mb->mig.early, 1, now - per_t0, want - per_t0);
        return;
    case MIG_PH_ONESHOT:
    case MIG_PH_DEADLINE:
        if (!armed) {
            bad(&mb->mig.doubled, 2, now, phase);
            return;
        }
        want = exp_tsc;
        if (phase == MIG_PH_ONESHOT)
            want += ns_to_tsc_floor(f.lo - os_f0);
        if (now < want)
            bad(&mb->mig.early, 3, now, want);
        armed = 0;
        return;
    default:
        bad(&mb->mig.doubled, 4, now, 0); /* nothing owed one */
        return;
    }
}

/* Spin with interrupts on for about @ns. */
static void spin_on(uint64_t ns)
{
    uint64_t end = rdtsc() + ns_to_tsc_floor(ns);
    __asm__ volatile("sti" ::: "memory");
    while ((int64_t)(rdtsc() - end) < 0)
        __asm__ volatile("pause" ::: "memory");
    __asm__ volatile("cli" ::: "memory");
}

/*
 * One slice of waiting, in one of the ways a guest waits: halted (only
 * when an interrupt is owed: @may_halt), spinning with interrupts on, or
 * in a cli section (an interrupt that comes then waits, pending, for the
 * sti: the VMM may stop the VM right then).
 */
static void wait_slice(bool may_halt)
{
    uint64_t r = rnd() % 10;

    if (r < 3 && may_halt) {
        __asm__ volatile("sti; hlt; cli" ::: "memory");
    } else if (r < 6) {
        uint64_t end = rdtsc() + ns_to_tsc_floor(rnd_in(20000, 300000));
        while ((int64_t)(rdtsc() - end) < 0)
            __asm__ volatile("pause" ::: "memory");
        __asm__ volatile("sti; nop; cli" ::: "memory");
    } else {
        spin_on(rnd_in(10000, 200000));
    }
}

static void mode_switched(uint32_t ph)
{
    phase = ph;
    outl(PORT_MODE, ph);
}

static uint64_t missed_now(void)
{
    outl(PORT_SYNC, 0);
    return mb->mig.missed_ticks;
}

/*
 * Periodic: n ticks of a random period, then stopped right after a tick
 * (none is pending then). Count check: the timer ran for the time between
 * arming and stopping less the time it stood still; the ticks delivered
 * plus those lapict coalesced (the missed-tick policy) cover every grid
 * point in it, and no more arrived than grid points.
 */
static void mig_periodic(void)
{
    uint64_t p_ns = rnd_in(300000, 2000000), n = rnd_in(5, 40);
    uint64_t ticks = p_ns * (mb->bus_hz / 1000000u) / 1000u;
    uint64_t miss0, t0b, ts0, ts1, f0hi, limit, c, run_min, run_max;
    uint64_t span, emin, emax, miss, late, slop, early0;
    struct frz f, fe, fb;

    apic_write(A_TDCR, 0xB);
    miss0 = missed_now();
    early0 = mb->mig.early;
    per_count = 0;
    per_p_tsc = ns_to_tsc_floor(p_ns);
    apic_write(A_LVTT, MODE_PERIODIC | VEC);
    per_t0 = rdtsc();
    frozen(&f);
    per_f0 = f.lo;
    f0hi = f.hi;
    /* Nothing of the phase before may be left in IRR (or in service). */
    if ((apic_read(0x220) | apic_read(0x120)) & 1u)
        bad(&mb->mig.doubled, 10, apic_read(0x220), apic_read(0x120));
    apic_write(A_TMICT, (uint32_t)ticks);
    t0b = rdtsc();
    mode_switched(MIG_PH_PERIODIC);
    limit = per_t0 + (n + 2) * per_p_tsc + ns_to_tsc_floor(LOST_NS);
    while (per_count < n) {
        frozen(&fe);
        if (rdtsc() > limit + ns_to_tsc_floor(fe.hi - f0hi))
            break; /* counted as lost below */
        wait_slice(true);
    }
    /*
     * Stop right after a tick that came within half a period of its grid
     * point, so that the next grid point is still ahead: a tick that is due
     * but undelivered when TMICT is written is dropped (docs/spec/timer.md
     * section 3). Should one be dropped all the same (the vCPU held up before
     * the write), the VMM counts it in mig.missed_ticks. The grid point is
     * known within the arming's exit and the bounds of the time the timer
     * stood still.
     */
    for (;;) {
        uint64_t since;
        c = per_count;
        __asm__ volatile("sti" ::: "memory");
        while (per_count == c) {
            frozen(&fe);
            if (rdtsc() > limit + ns_to_tsc_floor(fe.hi - f0hi))
                break;
            __asm__ volatile("pause" ::: "memory");
        }
        __asm__ volatile("cli" ::: "memory");
        frozen(&fe);
        if (per_count == c)
            break; /* timed out: lost, counted below */
        since = per_last - per_t0 - ns_to_tsc_floor(per_last_flo - per_f0);
        late = since % per_p_tsc;
        slop = (t0b - per_t0) +
               ns_to_tsc_floor((fe.hi - f0hi) - (fe.lo - per_f0)) + 1000u;
        if (late + slop < per_p_tsc / 2)
            break;
    }
    /* The standstill read before the stop bounds the longest the timer
     * can have run, the one after it the shortest (a migration in between
     * then only weakens the check). */
    frozen(&fb);
    ts0 = rdtsc();
    apic_write(A_TMICT, 0);
    ts1 = rdtsc();
    frozen(&fe);
    /* A tick raised before the stop may still be on its way. */
    phase = PH_DRAIN;
    spin_on(300000);
    phase = 0;
    miss = missed_now() - miss0;
    span = tsc_to_ns_ceil(ts1 - per_t0);
    run_max = span > fb.lo - per_f0 ? span - (fb.lo - per_f0) : 0;
    span = tsc_to_ns_floor(ts0 - t0b);
    run_min = span > fe.hi - f0hi ? span - (fe.hi - f0hi) : 0;
    /* 50 ppm between the host clock and the TSC, and the kHz rounding. */
    emax = (run_max + run_max / 20000u + 1000u) / p_ns;
    run_min = run_min > run_min / 20000u + 1000u
                  ? run_min - run_min / 20000u - 1000u
                  : 0;
    emin = run_min / p_ns;
    if (per_count > emax)
        bad(&mb->mig.doubled, 5, per_count, emax);
    if (per_count + miss < emin || mb->mig.early != early0) {
        if (per_count + miss < emin)
            bad(&mb->mig.lost, 6, per_count + miss, emin);
        out("migrate: periodic %u ns: %u ticks + %u missed vs %u (migrations "
            "%u..%u, frozen %u..%u ns)",
            p_ns, per_count, miss, emin, f.seq, fe.seq, fe.lo - per_f0,
            fe.hi - f0hi);
        /* Each arrival: time since arming, migrations and standstill so
         * far (low 16 bits: the migration count). */
        for (uint64_t i = 1; i <= per_count && i < 256; i++)
            out("  tick %u at +%u ns seq %u frozen %u", i,
                tsc_to_ns_floor(samples[2 * i] - per_t0),
                samples[2 * i + 1] & 0xFFFF,
                (samples[2 * i + 1] >> 16) - per_f0);
    }
    mb->mig.periodic_ticks += per_count;
}

struct smp {
    uint64_t seq, lo, hi, t0, t1;
    uint32_t c;
};

static bool tmcct_sample(struct smp *s)
{
    struct frz a, b;

    frozen(&a);
    s->t0 = rdtsc();
    s->c = apic_read(A_TMCCT);
    s->t1 = rdtsc();
    frozen(&b);
    /* A migration right at the read: its place in between is unknown. */
    if (a.seq != b.seq)
        return false;
    s->seq = a.seq;
    s->lo = a.lo;
    s->hi = a.hi;
    return true;
}

/*
 * TMCCT of a one-shot (÷1) drains one tick per bus-clock ns of the time
 * the timer ran: between two reads, their TSC distance less the time it
 * stood still (migrations in between). Across a migration this is the
 * rule "TMCCT after restore = TMCCT before less the time run, the
 * downtime not counted".
 */
static void tmcct_check(const struct smp *a, const struct smp *b)
{
    uint64_t dlo = b->lo - a->lo, dhi = b->hi - a->hi;
    uint64_t smin = tsc_to_ns_floor(b->t0 - a->t1);
    uint64_t smax = tsc_to_ns_ceil(b->t1 - a->t0);
    uint64_t rmin = smin > dhi ? smin - dhi : 0;
    uint64_t rmax = smax > dlo ? smax - dlo : 0;
    uint64_t khz = mb->bus_hz / 1000000u;
    uint64_t mind = rmin * khz / 1000u, maxd = (rmax * khz + 999u) / 1000u;
    uint64_t slack = 2 + maxd / 20000u, lo_c, hi_c;

    mind = mind > slack ? mind - slack : 0;
    maxd += slack;
    hi_c = a->c > mind ? a->c - mind : 0;
    lo_c = a->c > maxd ? a->c - maxd : 0;
    mb->mig.tmcct_checks++;
    if (a->seq != b->seq)
        mb->mig.tmcct_across++;
    if (b->c < lo_c || b->c > hi_c)
        bad(&mb->mig.tmcct_bad, 7, b->c, b->c < lo_c ? lo_c : hi_c);
}

/* Wait for the owed interrupt; lost if it has not come by @limit (TSC,
 * plus the time the timer stood still when @frozen_counts). */
static void wait_owed(uint64_t limit, bool frozen_counts, uint64_t f0hi,
                      bool sample)
{
    struct smp prev, cur;
    bool have = false;
    struct frz f;

    while (armed) {
        if (sample && tmcct_sample(&cur)) {
            if (have)
                tmcct_check(&prev, &cur);
            prev = cur;
            have = true;
            /*
             * The VMM asks for a migration right here: interrupts are off
             * (wait_slice() ends in cli), so the next sample follows it
             * whether or not the count ran out meanwhile, and checks TMCCT
             * across it.
             */
            if (mb->mig.tmcct_req) {
                outl(PORT_TMCCT, 0);
                if (tmcct_sample(&cur)) {
                    tmcct_check(&prev, &cur);
                    prev = cur;
                }
            }
        }
        frozen(&f);
        if (rdtsc() >
            limit + (frozen_counts ? ns_to_tsc_floor(f.hi - f0hi) : 0)) {
            if (armed)
                bad(&mb->mig.lost, 8, rdtsc(), limit);
            armed = 0;
            return;
        }
        wait_slice(true);
    }
}

static void mig_oneshot(void)
{
    uint64_t m = rnd_in(3, 10), khz = mb->bus_hz / 1000000u;
    struct frz f;

    apic_write(A_TDCR, 0xB);
    apic_write(A_LVTT, MODE_ONESHOT | VEC);
    mode_switched(MIG_PH_ONESHOT);
    for (uint64_t i = 0; i < m; i++) {
        uint64_t ns = rnd_in(30000, 3000000), ticks = ns * khz / 1000u;
        uint64_t t0 = rdtsc();
        frozen(&f);
        os_f0 = f.lo;
        exp_tsc = t0 + ticks_to_tsc_floor(ticks);
        armed = 1;
        apic_write(A_TMICT, (uint32_t)ticks);
        wait_owed(exp_tsc + ns_to_tsc_floor(LOST_NS), true, f.hi, true);
        mb->mig.oneshots++;
    }
    apic_write(A_TMICT, 0);
}

static void mig_deadline(void)
{
    uint64_t m = rnd_in(3, 12);
    struct frz f;

    apic_write(A_LVTT, MODE_TSCDL | VEC);
    mode_switched(MIG_PH_DEADLINE);
    for (uint64_t i = 0; i < m; i++) {
        uint64_t k = rnd() % 10, now = rdtsc(), d;
        if (k == 0)
            d = now - 1000; /* in the past: at once */
        else if (k < 6)
            d = now + ns_to_tsc_floor(rnd_in(5000, 100000)); /* near */
        else if (k < 9)
            d = now + ns_to_tsc_floor(rnd_in(1000000, 10000000)); /* far */
        else
            d = now + ns_to_tsc_floor(rnd_in(20000000, 40000000));
        armed = 1;
        exp_tsc = d;
        if (rnd() % 4 == 0) {
            /* Re-armed before it fired: only the second one is owed. */
            wrmsr(MSR_TSC_DEADLINE, now + ns_to_tsc_floor(50000000));
            spin_on(rnd_in(0, 50000));
            exp_tsc = d;
        }
        wrmsr(MSR_TSC_DEADLINE, d);
        /* A deadline does not move, but a long downtime delays delivery. */
        frozen(&f);
        wait_owed(d + ns_to_tsc_floor(LOST_NS), true, f.hi, false);
        if (rdmsr(MSR_TSC_DEADLINE) != 0)
            bad(&mb->mig.doubled, 9, rdmsr(MSR_TSC_DEADLINE), d);
        mb->mig.deadlines++;
    }
    wrmsr(MSR_TSC_DEADLINE, 0);
}

static void test_migrate(void)
{
    isr_mode = ISR_MIGRATE;
    rng = mb->mig.seed | 1;
    for (uint64_t k = rnd() % 3; !mb->mig.stop; k++) {
        if (k % 3 == 0)
            mig_periodic();
        else if (k % 3 == 1)
            mig_oneshot();
        else
            mig_deadline();
        mb->mig.phases++;
    }
    apic_write(A_LVTT, MASKED);
    phase = 0;
}

void guest_main(void)
{
    if (mb->magic != MB_MAGIC) {
        puts_("bad mailbox");
        outl(PORT_DONE, 1);
        return;
    }
    setup_idt(VEC);
    delta = mb->delta;
    if (mb->x2apic) {
        /* xAPIC -> x2APIC: EN stays set, EXTD set (IA32_APIC_BASE). */
        wrmsr(0x1Bu, rdmsr(0x1Bu) | (1u << 10));
        x2 = true;
    }
    apic_write(A_SVR, 0x1FF); /* software-enable, spurious vector 0xFF */
    apic_write(A_ESR, 0);
    switch (mb->test) {
    case T_TSCDEADLINE:
        test_tscdeadline();
        break;
    case T_ONESHOT:
        test_oneshot();
        break;
    case T_PERIODIC:
        test_periodic();
        break;
    case T_SELFTEST:
        test_selftest();
        break;
    case T_EXIT:
        test_exit();
        break;
    case T_MIGRATE:
        test_migrate();
        break;
    case T_ENTRY:
        test_entry();
        break;
    case T_IMMED:
        test_immed();
        break;
    default:
        puts_("unknown test");
        outl(PORT_DONE, 2);
        return;
    }
    timer_off();
    mb->nsamples = n_irq;
    mb->early = early;
    outl(PORT_DONE, 0);
}
