/* SPDX-License-Identifier: MIT */
/*
 * lapict-timers: a multiboot v1 guest (the shape of lapict-mbtest, whose
 * entry, common/longmode.S, it shares) that runs the APIC timer's
 * scenarios on its own LAPIC
 * and times every interrupt in its handler: TSC-deadline shots, one-shots
 * and periodic runs at every divide 1 to 128. It needs the timing leaf of
 * its hypervisor (CPUID 0x40000010: EAX the guest TSC rate, EBX the APIC
 * timer's input clock, both kHz), which lapict-hv offers; its checks hold
 * at any guest TSC rate (lapict-hv's half=odd gives odd vCPUs 0.5x).
 *
 * Never early, from inside the guest: a TSC-deadline interrupt at or after
 * its deadline; a count-down's k-th interrupt at or after (TSC read just
 * before the TMICT write) + k x count x divide TSC ticks per count (the
 * write's own instant is later, so this bound is safe). Every interrupt
 * asked for must arrive, one per expiry. One "PASS: name" or "FAIL: name"
 * line per check on COM1, "BENCH ..." lines with the lateness measured in
 * guest TSC ticks after that bound, then "SUMMARY: <n> tests, <f>
 * failures", then isa-debug-exit with 0 (all passed) or 1.
 *
 * Command line words (after argv[0]): "shots=N" TSC-deadline and one-shot
 * interrupts per divide (default 40), "periods=N" periodic interrupts of
 * the long run (default 10000), "period_us=N" the periodic timer's period
 * (200 to 100000 us, default 500: longer where many vCPUs share a CPU),
 * "wait=hlt" to wait for an interrupt halted instead of spinning with
 * interrupts open.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/longmode.h"
#include "../vmm/cmdline.h"
#include "../vmm/cpu.h"

#define MSR_APIC_BASE 0x1Bu
#define MSR_TSC_DEADLINE 0x6E0u
#define BASE_EN 0x800ull
#define BASE_EXTD 0x400ull
#define APIC_DEFAULT 0xFEE00000ull

enum {
    R_EOI = 0xB0,
    R_SVR = 0xF0,
    R_LVTT = 0x320,
    R_TMICT = 0x380,
    R_TDCR = 0x3E0,
};

#define T_ONESHOT 0x00000u
#define T_PERIODIC 0x20000u
#define T_TSCDL 0x40000u
#define V_TIMER 0xE0u
#define SAMPLES 16384u

struct mb_info {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
};

static struct idt_gate idt[256];
static volatile uint32_t irq_count;
static volatile uint64_t irq_tsc[SAMPLES];
static uint64_t late[SAMPLES];
static unsigned n_tests, n_fail;
static bool x2;
static uint32_t tsc_khz, bus_khz;
static uint64_t seed = 0x9E3779B97F4A7C15ull;

/* --- output ----------------------------------------------------------- */

static void putc_com1(char c)
{
    while (!(inb(0x3FD) & 0x20))
        ;
    outb(0x3F8, (uint8_t)c);
}

static void put_num(uint64_t v)
{
    char buf[24];
    int i = 0;
    do {
        buf[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i)
        putc_com1(buf[--i]);
}

/* %s %u %lu only. */
static void printk(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (; *fmt; fmt++) {
        bool l = false;
        if (*fmt != '%') {
            putc_com1(*fmt);
            continue;
        }
        fmt++;
        while (*fmt == 'l') {
            l = true;
            fmt++;
        }
        if (*fmt == 's')
            for (const char *s = va_arg(ap, const char *); *s; s++)
                putc_com1(*s);
        else if (*fmt == 'u')
            put_num(l ? va_arg(ap, uint64_t) : va_arg(ap, unsigned));
        else
            putc_com1(*fmt);
    }
    va_end(ap);
}

static void report(bool ok, const char *name, const char *detail)
{
    n_tests++;
    if (!ok)
        n_fail++;
    printk("%s: %s%s\n", ok ? "PASS" : "FAIL", name, detail);
}

static void debug_exit(uint32_t code)
{
    outl(0xF4, code);
    for (;;)
        __asm__ volatile("cli; hlt");
}

/* --- the local APIC ---------------------------------------------------- */

static void apic_write(uint32_t reg, uint32_t v)
{
    if (x2)
        wrmsr(0x800u + reg / 16u, v);
    else
        *(volatile uint32_t *)(uintptr_t)(APIC_DEFAULT + reg) = v;
}

void mb_trap(struct frame *f)
{
    uint64_t t = rdtsc();
    if (f->vector == V_TIMER) {
        if (irq_count < SAMPLES)
            irq_tsc[irq_count] = t;
        irq_count++;
        apic_write(R_EOI, 0);
        return;
    }
    if (f->vector == 0xFF)
        return;
    printk("FAIL: unexpected exception %lu at rip %lu\n", f->vector, f->rip);
    debug_exit(0x7F);
}

/* Until @n timer interrupts have arrived in all, or the TSC passes
 * @limit: spinning with interrupts open (the vCPU runs when its timer
 * expires), or halted with "wait=hlt" (it waits blocked). */
static bool halt_wait;

static bool wait_irqs(uint32_t n, uint64_t limit)
{
    bool ok = true;
    if (!halt_wait)
        __asm__ volatile("sti" ::: "memory");
    while (irq_count < n) {
        if (rdtsc() > limit) {
            ok = false;
            break;
        }
        /* Checked with interrupts off; STI's shadow covers the HLT, so an
         * interrupt that comes after the check ends the HLT instead of
         * coming before it and leaving the vCPU halted for good. */
        if (halt_wait)
            __asm__ volatile("sti; hlt; cli" ::: "memory");
    }
    __asm__ volatile("cli" ::: "memory");
    return ok;
}

static uint64_t rnd(uint64_t below)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed % below;
}

/* --- statistics ---------------------------------------------------------- */

static void sort(uint64_t *a, unsigned n)
{
    for (unsigned gap = n / 2; gap; gap /= 2)
        for (unsigned i = gap; i < n; i++)
            for (unsigned j = i; j >= gap && a[j - gap] > a[j]; j -= gap) {
                uint64_t t = a[j];
                a[j] = a[j - gap];
                a[j - gap] = t;
            }
}

static void bench(const char *what, unsigned div, unsigned n)
{
    if (!n)
        return;
    sort(late, n);
    printk("BENCH mode=%s div=%u n=%u min=%lu median=%lu p99=%lu max=%lu\n",
           what, div, n, late[0], late[n / 2], late[(n * 99) / 100],
           late[n - 1]);
}

/* Guest TSC ticks that @counts timer counts at divide @div last, rounded
 * down (a lower bound of the interval). */
static uint64_t counts_to_tsc(uint64_t counts, unsigned div)
{
    return counts * div * tsc_khz / bus_khz;
}

/* --- the scenarios ------------------------------------------------------ */

static void deadlines(unsigned shots)
{
    unsigned early = 0, lost = 0, n = 0;
    apic_write(R_LVTT, T_TSCDL | V_TIMER);
    for (unsigned i = 0; i < shots; i++) {
        /* 0.02 to 2 ms ahead, a few already due. */
        uint64_t ahead = i % 8 == 7 ? 0 : tsc_khz / 50 + rnd(2 * tsc_khz);
        uint64_t dl = rdtsc() + ahead;
        uint32_t c = irq_count;
        wrmsr(MSR_TSC_DEADLINE, dl);
        if (!wait_irqs(c + 1, dl + 100 * (uint64_t)tsc_khz)) {
            lost++;
            continue;
        }
        if (irq_tsc[c % SAMPLES] < dl)
            early++;
        else
            late[n++] = irq_tsc[c % SAMPLES] - dl;
    }
    report(!early && !lost && irq_count, "tsc deadline: never early, none lost",
           "");
    bench("deadline", 1, n);
}

static const unsigned divs[8] = {1, 2, 4, 8, 16, 32, 64, 128};
static const uint32_t tdcr_of[8] = {0xB, 0x0, 0x1, 0x2, 0x3, 0x8, 0x9, 0xA};

static void oneshots(unsigned shots)
{
    for (unsigned d = 0; d < 8; d++) {
        unsigned early = 0, lost = 0, extra = 0, n = 0;
        apic_write(R_TDCR, tdcr_of[d]);
        apic_write(R_LVTT, T_ONESHOT | V_TIMER);
        for (unsigned i = 0; i < shots; i++) {
            /* 0.02 to 2 ms of timer time. */
            uint64_t ticks = bus_khz / 50 + rnd(2 * (uint64_t)bus_khz);
            uint32_t count = (uint32_t)(ticks / divs[d]) + 1, c = irq_count;
            uint64_t t0 = rdtsc(), at = t0 + counts_to_tsc(count, divs[d]);
            apic_write(R_TMICT, count);
            if (!wait_irqs(c + 1, at + 100 * (uint64_t)tsc_khz)) {
                lost++;
                continue;
            }
            if (irq_tsc[c % SAMPLES] < at)
                early++;
            else
                late[n++] = irq_tsc[c % SAMPLES] - at;
            /* A one-shot fires once: nothing more for another 0.2 ms. */
            {
                uint64_t q = rdtsc() + tsc_khz / 5;
                while (rdtsc() < q)
                    __asm__ volatile("sti; nop; cli");
            }
            if (irq_count != c + 1)
                extra++;
        }
        printk("one-shot divide %u: ", divs[d]);
        report(!early && !lost && !extra, "never early, one per TMICT", "");
        bench("oneshot", divs[d], n);
    }
}

/* @periods interrupts of one periodic timer (periods of @period_ticks
 * timer clocks: at least lapict's default minimum of 0.2 ms): the k-th at or
 * after the bound k x period; the lateness of the last against the second is
 * the drift of the grid (the first also holds the path of the TMICT write). */
static void periodic(unsigned d, unsigned periods, uint64_t period_ticks)
{
    uint32_t count = (uint32_t)(period_ticks / divs[d]);
    uint64_t step = counts_to_tsc(count, divs[d]), t0;
    uint32_t c0;
    unsigned early = 0, n = 0;
    bool ok;
    int64_t drift;

    apic_write(R_TDCR, tdcr_of[d]);
    apic_write(R_LVTT, T_PERIODIC | V_TIMER);
    c0 = irq_count;
    t0 = rdtsc();
    apic_write(R_TMICT, count);
    ok = wait_irqs(c0 + periods, t0 + (periods + 100) * step);
    apic_write(R_TMICT, 0);
    for (unsigned k = 0; k < periods && c0 + k < irq_count; k++) {
        uint64_t at = t0 + (k + 1) * step, t = irq_tsc[(c0 + k) % SAMPLES];
        if (t < at)
            early++;
        else
            late[n++] = t - at;
    }
    /* From period 2: period 1 also holds the arming path of the write. */
    drift = n > 1 ? (int64_t)late[n - 1] - (int64_t)late[1] : 0;
    printk("periodic divide %u, %u periods of %lu ticks: ", divs[d], periods,
           step);
    report(ok && !early && n == periods, "never early, none lost", "");
    printk("DRIFT div=%u periods=%u first=%lu second=%lu last=%lu "
           "drift=%s%lu\n",
           divs[d], periods, n ? late[0] : 0, n > 1 ? late[1] : 0,
           n ? late[n - 1] : 0, drift < 0 ? "-" : "",
           (uint64_t)(drift < 0 ? -drift : drift));
    bench("periodic", divs[d], n);
}

void mb_main(void)
{
    const struct mb_info *mbi = (const struct mb_info *)(uintptr_t)mb_boot_info;
    const char *cmdline =
        (mbi->flags & 4) ? (const char *)(uintptr_t)mbi->cmdline : "";
    uint32_t a, b, c, d;
    uint64_t shots = 40, periods = 10000, period_us = 500;

    printk("lapict-timers: APIC timer scenarios\n");
    word_value(cmdline, "shots=", &shots);
    word_value(cmdline, "periods=", &periods);
    word_value(cmdline, "period_us=", &period_us);
    halt_wait = has_word(cmdline, "wait=hlt");
    if (period_us < 200)
        period_us = 200;
    if (period_us > 100000)
        period_us = 100000;
    if (shots > SAMPLES)
        shots = SAMPLES;
    if (periods > SAMPLES)
        periods = SAMPLES;
    idt_init(idt);
    cpuid(0x40000000u, &a, &b, &c, &d);
    if (a >= 0x40000010u) {
        cpuid(0x40000010u, &a, &b, &c, &d);
        tsc_khz = a;
        bus_khz = b;
    }
    report(tsc_khz && bus_khz, "cpuid 0x40000010: TSC and bus rates", "");
    if (!tsc_khz || !bus_khz) {
        printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
        debug_exit(1);
    }
    printk("guest TSC %u kHz, APIC timer clock %u kHz\n", tsc_khz, bus_khz);
    cpuid(1, &a, &b, &c, &d);
    if (c & (1u << 21)) {
        wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | BASE_EN | BASE_EXTD);
        x2 = true;
    }
    apic_write(R_SVR, 0x1FF);

    deadlines((unsigned)shots);
    oneshots((unsigned)shots);
    for (unsigned dv = 0; dv < 8; dv++)
        periodic(dv, (unsigned)(dv == 0 ? periods : periods / 50 + 1),
                 (uint64_t)bus_khz * period_us / 1000);
    printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
    debug_exit(n_fail ? 1 : 0);
}
