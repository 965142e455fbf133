/* SPDX-License-Identifier: MIT */
/*
 * lapict-mbtest: the project's own multiboot test kernel. It boots the way
 * kvm-unit-tests' x86 binaries do (ELF32 multiboot v1, 32-bit entry that
 * switches to long mode itself) and checks, from inside the guest, what
 * lapict-vmm must provide for them: the multiboot information, COM1, fw_cfg,
 * the isa-debug-exit port, CPUID, the IA32_APIC_BASE rules, the interrupt
 * path (self-IPI, broadcast, NMI, TPR/ISR priority) and the APIC timer
 * (one-shot, periodic, mode changes, TSC deadline), and, where CPUID offers
 * SVM, the TSC across VMRUN and #VMEXIT. One "PASS: name" or
 * "FAIL: name" line per check on COM1, then "SUMMARY: <n> tests, <f>
 * failures", then isa-debug-exit with 0 (all passed) or 1.
 *
 * For hosts without QEMU's devices (Bochs): "fwcfg=0" skips the fw_cfg
 * checks with a SKIP line saying why, and "exit=bochs" also ends the run
 * through Bochs's shutdown port (0x8900) after isa-debug-exit, which such
 * a host does not have. "tscwrite=1" adds a check that writes IA32_TSC.
 *
 * Command line words (after argv[0]): "initrd=1" makes the module check
 * mandatory; "x2apic=1" / "x2apic=0" states what CPUID must say.
 * "changemode=N tsc_khz=K [cm_print=P] [cm_prelude=1]" runs only the
 * looped one-shot -> periodic check instead (check_changemode), N
 * iterations, K the guest TSC rate in kHz. "memsoak=1" runs only the
 * memory-coherence loop for migration checks (see memsoak()). "svmtsc=1"
 * runs only the nested SVM check of the TSC (see check_svm_tsc()).
 * "nodl=1" runs only the checks of a CPU without TSC-deadline mode (see
 * check_no_deadline()); "nodl=2" the same on a host whose unimplemented
 * MSRs read 0 and ignore writes, as QEMU's TCG does. "park=S" runs only
 * the TSC-deadline check around a wait with no deadline armed, for a host
 * to migrate the guest in (see check_park()); "tscw=S" the same around a
 * TSC the guest wrote (see check_tsc_write_park()). "snap=M tsc_khz=K
 * bus_khz=B" runs only the checks of timers armed across a host's
 * snapshot, taken where the guest stops Bochs's debugger (see
 * check_snap()). Interrupts are taken in 64-bit mode only.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/longmode.h"
#include "../vmm/cmdline.h"
#include "../vmm/cpu.h"

#define APIC_DEFAULT 0xFEE00000ull
#define APIC_ALT 0xFED40000ull
#define MSR_TSC 0x10u
#define MSR_APIC_BASE 0x1Bu
#define MSR_TSC_DEADLINE 0x6E0u
#define BASE_BSP 0x100ull
#define BASE_EXTD 0x400ull
#define BASE_EN 0x800ull
#define APIC_VERSION 0x00050014u

enum {
    R_ID = 0x20,
    R_VER = 0x30,
    R_TPR = 0x80,
    R_PPR = 0xA0,
    R_EOI = 0xB0,
    R_LDR = 0xD0,
    R_SVR = 0xF0,
    R_ISR = 0x100,
    R_IRR = 0x200,
    R_ICR = 0x300,
    R_ICR2 = 0x310,
    R_LVTT = 0x320,
    R_TMICT = 0x380,
    R_TMCCT = 0x390,
    R_TDCR = 0x3E0,
    R_SELF = 0x3F0,
};

#define LVT_MASKED 0x10000u
#define T_ONESHOT 0x00000u
#define T_PERIODIC 0x20000u
#define T_TSCDL 0x40000u
#define T_MODE 0x60000u

#define V_TIMER 0xEEu
#define V_TSCDL 0xEFu
#define V_SELF 0xF1u
#define V_BCAST 0xCFu
#define V_HIGH 0x81u
#define V_LOW 0x71u
#define V_TPR 0xE1u

/* Spin bound: about a second at the TSC rates of real machines. */
#define SPIN_CYCLES 3000000000ull
/* "Nothing arrives" window: >= 20 ms at any TSC rate up to 5 GHz. */
#define QUIET_CYCLES 100000000ull

struct mb_info {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
    uint32_t mods_count, mods_addr;
};

struct mb_module {
    uint32_t start, end, cmdline, reserved;
};

static struct idt_gate idt[256];

/* A large bss, as kvm-unit-tests binaries carry: the loader zeroes it. */
uint8_t big_bss[12u << 20];

static volatile uint32_t irq_count[256];
static volatile uint64_t irq_tsc[256];
static volatile uint32_t nmi_count, spurious_count;
static volatile int gp_expected, gp_seen;
static volatile uint32_t low_before_eoi;
static unsigned n_tests, n_fail;

static bool x2;                         /* accesses through x2APIC MSRs */
static uint64_t apic_pa = APIC_DEFAULT; /* xAPIC page in use */

/* --- instructions --------------------------------------------------- */

static inline void outw(uint16_t port, uint16_t v)
{
    __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port) : "memory");
}

static inline uint64_t read_cr8(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr8, %0" : "=r"(v));
    return v;
}

static inline void write_cr8(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr8" ::"r"(v) : "memory");
}

static inline void sti(void)
{
    __asm__ volatile("sti" ::: "memory");
}
static inline void cli(void)
{
    __asm__ volatile("cli" ::: "memory");
}
static inline void pause(void)
{
    __asm__ volatile("pause" ::: "memory");
}

/* Any exit to the VMM: where a userspace LAPIC looks at its IRR again. */
static inline void vm_exit(void)
{
    (void)inb(0x3FD);
}

static bool wrmsr_gp(uint32_t msr, uint64_t v)
{
    gp_seen = 0;
    gp_expected = 1;
    wrmsr(msr, v);
    gp_expected = 0;
    return gp_seen;
}

static bool rdmsr_gp(uint32_t msr)
{
    gp_seen = 0;
    gp_expected = 1;
    (void)rdmsr(msr);
    gp_expected = 0;
    return gp_seen;
}

/* --- output ----------------------------------------------------------- */

static void putc_com1(char c)
{
    while (!(inb(0x3FD) & 0x20))
        ;
    outb(0x3F8, (uint8_t)c);
}

static void puts_com1(const char *s)
{
    for (; *s; s++) {
        if (*s == '\n')
            putc_com1('\r');
        putc_com1(*s);
    }
}

static void put_num(uint64_t v, unsigned base)
{
    char buf[24];
    int i = 0;
    do {
        buf[i++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (i)
        putc_com1(buf[--i]);
}

/* %s %c %d %u %x, with l/ll for 64 bits. */
static void printk(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (; *fmt; fmt++) {
        bool l = false;
        if (*fmt != '%') {
            if (*fmt == '\n')
                putc_com1('\r');
            putc_com1(*fmt);
            continue;
        }
        fmt++;
        while (*fmt == 'l') {
            l = true;
            fmt++;
        }
        switch (*fmt) {
        case 's':
            puts_com1(va_arg(ap, const char *));
            break;
        case 'c':
            putc_com1((char)va_arg(ap, int));
            break;
        case 'd': {
            int64_t v = l ? va_arg(ap, int64_t) : va_arg(ap, int);
            if (v < 0) {
                putc_com1('-');
                v = -v;
            }
            put_num((uint64_t)v, 10);
            break;
        }
        case 'u':
            put_num(l ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 10);
            break;
        case 'x':
            put_num(l ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 16);
            break;
        default:
            putc_com1(*fmt);
            break;
        }
    }
    va_end(ap);
}

/* "exit=bochs": end the run through Bochs's shutdown port too. */
static bool exit_bochs;
/* "tscwrite=1": the TSC-deadline check after a WRMSR to IA32_TSC. */
static bool tsc_write_check;

static void debug_exit(uint32_t code)
{
    outl(0xF4, code);
    if (exit_bochs) {
        /* COM1 drained first: Bochs drops what its UART still holds. */
        for (uint32_t i = 0; i < 1000000u && !(inb(0x3FD) & 0x40); i++)
            ;
        for (const char *p = "Shutdown"; *p; p++)
            outb(0x8900, (uint8_t)*p);
    }
    for (;;) {
        cli();
        __asm__ volatile("hlt");
    }
}

static void report(bool ok, const char *name)
{
    n_tests++;
    if (!ok)
        n_fail++;
    printk("%s: %s\n", ok ? "PASS" : "FAIL", name);
}

/* --- the local APIC, through MMIO or x2APIC MSRs ---------------------- */

static volatile uint32_t *mmio(uint64_t pa, uint32_t reg)
{
    return (volatile uint32_t *)(uintptr_t)(pa + reg);
}

static uint32_t apic_read(uint32_t reg)
{
    return x2 ? (uint32_t)rdmsr(0x800u + reg / 16u) : *mmio(apic_pa, reg);
}

static void apic_write(uint32_t reg, uint32_t v)
{
    if (x2)
        wrmsr(0x800u + reg / 16u, v);
    else
        *mmio(apic_pa, reg) = v;
}

static void icr_write(uint32_t lo, uint32_t dest)
{
    if (x2) {
        wrmsr(0x830u, ((uint64_t)dest << 32) | lo);
        return;
    }
    *mmio(apic_pa, R_ICR2) = dest << 24;
    *mmio(apic_pa, R_ICR) = lo;
}

static void eoi(void)
{
    apic_write(R_EOI, 0);
}

static bool irr_bit(unsigned v)
{
    return apic_read(R_IRR + (v / 32u) * 16u) & (1u << (v % 32u));
}

static bool has_x2apic_cpuid(void)
{
    uint32_t a, b, c, d;
    cpuid(1, &a, &b, &c, &d);
    return c & (1u << 21);
}

static bool cpuid_apic_bit(void)
{
    uint32_t a, b, c, d;
    cpuid(1, &a, &b, &c, &d);
    return d & (1u << 9);
}

/* xAPIC, enabled, at its current base; software-enabled. */
static void reset_xapic(void)
{
    uint64_t b = rdmsr(MSR_APIC_BASE);
    wrmsr(MSR_APIC_BASE, b & ~(BASE_EN | BASE_EXTD));
    wrmsr(MSR_APIC_BASE, (b & ~(BASE_EN | BASE_EXTD)) | BASE_EN);
    x2 = false;
    apic_write(R_SVR, 0x1FF);
}

static void enter_x2apic(void)
{
    wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | BASE_EN | BASE_EXTD);
    x2 = true;
    apic_write(R_SVR, 0x1FF);
}

/* --- interrupts --------------------------------------------------------- */

void mb_trap(struct frame *f)
{
    unsigned v = (unsigned)f->vector;

    if (v == 2) {
        nmi_count++;
        return;
    }
    if (v == 13 && gp_expected) {
        gp_seen = 1;
        f->rip += 2; /* skip the faulting WRMSR/RDMSR */
        return;
    }
    if (v < 32) {
        printk("FAIL: unexpected exception %u, error %lx, rip %lx\n", v,
               f->error, f->rip);
        debug_exit(0x7F);
    }
    if (v == 0xFF) {
        spurious_count++;
        return; /* spurious: no EOI */
    }
    irq_tsc[v] = rdtsc();
    irq_count[v]++;
    if (v == V_HIGH) {
        /* A lower class sent from inside a handler waits for its EOI. */
        icr_write(0x40000u | V_LOW, 0);
        vm_exit();
        vm_exit();
        low_before_eoi = irq_count[V_LOW];
    }
    eoi();
}

/* Spin until @v has arrived @n times in total; false after ~1 s. */
static bool wait_count(unsigned v, uint32_t n)
{
    uint64_t t0 = rdtsc();
    while (irq_count[v] < n)
        if (rdtsc() - t0 > SPIN_CYCLES)
            return false;
    return true;
}

static void spin_cycles(uint64_t c)
{
    uint64_t t0 = rdtsc();
    while (rdtsc() - t0 < c)
        pause();
}

/* --- helpers for the multiboot checks ----------------------------------- */

/* Does the module hold the line @line (lines end in \n or at the end)? */
static bool module_has_line(const char *p, const char *end, const char *line)
{
    while (p < end) {
        const char *q = p, *l = line;
        while (q < end && *q != '\n' && *l && *q == *l) {
            q++;
            l++;
        }
        if (!*l && (q == end || *q == '\n'))
            return true;
        while (p < end && *p != '\n')
            p++;
        p++;
    }
    return false;
}

static uint64_t fw_cfg_read(uint16_t key, unsigned bytes)
{
    uint64_t v = 0;
    outw(0x510, key);
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)inb(0x511) << (8 * i);
    return v;
}

/* --- the checks ---------------------------------------------------------- */

static void check_boot(void)
{
    const struct mb_info *mbi = (const struct mb_info *)(uintptr_t)mb_boot_info;
    const char *cmdline = "";
    bool want_initrd;
    uint32_t sum = 0;

    report(mb_boot_magic == 0x2BADB002u, "multiboot: EAX holds 0x2BADB002");
    report((mbi->flags & 1u) && mbi->mem_upper >= 31u * 1024u,
           "multiboot: mem_upper >= 31 MiB");
    if (mbi->flags & 4u)
        cmdline = (const char *)(uintptr_t)mbi->cmdline;
    printk("cmdline: %s\n", cmdline);
    report((mbi->flags & 4u) && cmdline[0] && cmdline[0] != ' ',
           "multiboot: cmdline starts with argv[0]");
    want_initrd = has_word(cmdline, "initrd=1");
    if (want_initrd || ((mbi->flags & 8u) && mbi->mods_count)) {
        const struct mb_module *m =
            (const struct mb_module *)(uintptr_t)mbi->mods_addr;
        bool ok = (mbi->flags & 8u) && mbi->mods_count == 1 &&
                  m->end > m->start &&
                  module_has_line((const char *)(uintptr_t)m->start,
                                  (const char *)(uintptr_t)m->end,
                                  "LAPICT_MBTEST=ok");
        report(ok, "multiboot: one module holding LAPICT_MBTEST=ok");
    }
    for (uint32_t i = 0; i < sizeof(big_bss); i += 4096)
        sum |= ((volatile uint8_t *)big_bss)[i];
    report(sum == 0, "loader: 12 MiB bss zeroed");
    /*
     * THRE and TEMT: a UART that models the shift register (Bochs) clears
     * TEMT while the last character goes out, so the transmitter gets a
     * bounded time to drain (at 9600 baud a character is about 1 ms).
     */
    for (uint32_t i = 0; i < 1000000u && (inb(0x3FD) & 0x60) != 0x60; i++)
        ;
    report((inb(0x3FD) & 0x60) == 0x60, "COM1: LSR reports THR empty");
    if (has_word(cmdline, "fwcfg=0")) {
        printk("SKIP: fw_cfg: signature, CPU count (fwcfg=0: the host has "
               "no fw_cfg device)\n");
    } else {
        report(fw_cfg_read(0x00, 4) == 0x554D4551u, "fw_cfg: signature QEMU");
        report(fw_cfg_read(0x05, 2) == 1, "fw_cfg: CPU count (key 0x05) is 1");
    }
    outb(0x21, 0xFF);
    outb(0xA1, 0xFF);
    report(true, "PIC: mask writes accepted");
}

static void check_cpuid(const char *cmdline)
{
    uint32_t a, b, c, d;
    cpuid(1, &a, &b, &c, &d);
    report(d & (1u << 9), "cpuid: APIC");
    report(c & (1u << 24), "cpuid: TSC-deadline");
    report((b >> 24) == 0, "cpuid: initial APIC ID 0");
    if (has_word(cmdline, "x2apic=1"))
        report(c & (1u << 21), "cpuid: x2APIC as asked");
    if (has_word(cmdline, "x2apic=0"))
        report(!(c & (1u << 21)), "cpuid: no x2APIC as asked");
}

static void check_apic_base(void)
{
    uint64_t base = rdmsr(MSR_APIC_BASE), b;
    uint32_t a, bx, c, d, maxphy = 36;

    report(base == (APIC_DEFAULT | BASE_BSP | BASE_EN),
           "apic base: 0xFEE00000, enabled, BSP");
    report(*mmio(APIC_DEFAULT, R_VER) == APIC_VERSION,
           "apic: version 0x00050014");
    report((*mmio(APIC_DEFAULT, R_ID) >> 24) == 0, "apic: xAPIC ID 0");
    apic_write(R_SVR, 0x1FF);

    /* Disable: the APIC resets, its page reads all-ones, CPUID follows. */
    b = base & ~(BASE_EN | BASE_EXTD);
    apic_write(R_TPR, 0x20);
    wrmsr(MSR_APIC_BASE, b);
    report(!(rdmsr(MSR_APIC_BASE) & BASE_EN), "disable: EN clear");
    report(!cpuid_apic_bit(), "disable: CPUID.1:EDX.APIC clear");
    report(*mmio(APIC_DEFAULT, R_VER) == 0xFFFFFFFFu,
           "disable: MMIO reads all-ones");
    *mmio(APIC_DEFAULT, R_TPR) = 0x30;
    report(*mmio(APIC_DEFAULT, R_TPR) == 0xFFFFFFFFu,
           "disable: MMIO writes dropped");
    write_cr8(0xF);
    report(read_cr8() == 0xF, "disable: CR8 still works");
    write_cr8(0);
    report(rdmsr(MSR_TSC_DEADLINE) == 0, "disable: TSC deadline reads 0");
    report(wrmsr_gp(MSR_APIC_BASE, b | BASE_EXTD),
           "disable: -> EXTD without EN is #GP");
    report(wrmsr_gp(MSR_APIC_BASE, b | BASE_EN | BASE_EXTD),
           "disable: -> x2APIC directly is #GP");
    wrmsr(MSR_APIC_BASE, b | BASE_EN);
    report(cpuid_apic_bit(), "enable: CPUID.1:EDX.APIC set");
    report(*mmio(APIC_DEFAULT, R_VER) == APIC_VERSION,
           "enable: version readable again");
    /* "Local APIC Status and Location": disabling resets the APIC. */
    report(*mmio(APIC_DEFAULT, R_SVR) == 0xFF,
           "enable: disable reset the registers (SVR 0xFF)");
    report(wrmsr_gp(MSR_APIC_BASE, b | BASE_EXTD),
           "xAPIC -> EXTD without EN is #GP");
    apic_write(R_SVR, 0x1FF);

    if (has_x2apic_cpuid()) {
        enter_x2apic();
        report((rdmsr(MSR_APIC_BASE) & (BASE_EN | BASE_EXTD)) ==
                   (BASE_EN | BASE_EXTD),
               "x2APIC: enabled from xAPIC");
        report(*mmio(APIC_DEFAULT, R_VER) == 0xFFFFFFFFu,
               "x2APIC: MMIO page reads all-ones");
        report(apic_read(R_VER) == APIC_VERSION, "x2APIC: version MSR");
        report(apic_read(R_ID) == 0, "x2APIC: ID 0");
        report(apic_read(R_LDR) == 1, "x2APIC: LDR derived from the ID");
        report(wrmsr_gp(0x802, 1), "x2APIC: ID write is #GP");
        report(rdmsr_gp(0x80B), "x2APIC: EOI read is #GP");
        report(rdmsr_gp(0x83F), "x2APIC: SELF_IPI read is #GP");
        report(rdmsr_gp(0x831), "x2APIC: no ICR2 (#GP)");
        report(wrmsr_gp(0x80B, 1), "x2APIC: non-zero EOI write is #GP");
        report(wrmsr_gp(0x808, 1ull << 32), "x2APIC: high bits are #GP");
        report(wrmsr_gp(0x839, 1), "x2APIC: TMCCT write is #GP");
        report(wrmsr_gp(MSR_APIC_BASE, b | BASE_EN), "x2APIC -> xAPIC is #GP");
        report(wrmsr_gp(MSR_APIC_BASE, b | BASE_EXTD),
               "x2APIC -> EXTD without EN is #GP");
        report(!wrmsr_gp(MSR_APIC_BASE, b), "x2APIC -> disabled");
        x2 = false;
        report(!wrmsr_gp(MSR_APIC_BASE, b | BASE_EN), "disabled -> xAPIC");
        apic_write(R_SVR, 0x1FF);
    } else {
        report(wrmsr_gp(MSR_APIC_BASE, base | BASE_EXTD),
               "no x2APIC in CPUID: EXTD is #GP");
        report(rdmsr_gp(0x803), "no x2APIC: x2APIC MSRs are #GP");
    }

    /* Relocation. */
    cpuid(0x80000000u, &a, &bx, &c, &d);
    if (a >= 0x80000008u) {
        cpuid(0x80000008u, &a, &bx, &c, &d);
        maxphy = a & 0xFF;
    }
    wrmsr(MSR_APIC_BASE, b);
    wrmsr(MSR_APIC_BASE, APIC_ALT | BASE_BSP | BASE_EN);
    report(*mmio(APIC_ALT, R_VER) == APIC_VERSION,
           "relocate: APIC answers at 0xFED40000");
    report(*mmio(APIC_DEFAULT, R_VER) == 0xFFFFFFFFu,
           "relocate: 0xFEE00000 is unassigned");
    report(wrmsr_gp(MSR_APIC_BASE, base | (1ull << maxphy)),
           "apic base: bit MAXPHYADDR is #GP");
    report(wrmsr_gp(MSR_APIC_BASE, base | 1), "apic base: bit 0 is #GP");
    wrmsr(MSR_APIC_BASE, base);
    report(*mmio(APIC_DEFAULT, R_VER) == APIC_VERSION,
           "relocate: back at 0xFEE00000");
    apic_write(R_SVR, 0x1FF);
}

static void check_interrupts(void)
{
    uint32_t n;

    sti();
    n = irq_count[V_SELF];
    icr_write(0x40000u | V_SELF, 0); /* shorthand self, fixed */
    report(wait_count(V_SELF, n + 1), "self IPI (shorthand self)");
    if (!x2)
        report(!(apic_read(R_ICR) & 0x1000u), "ICR delivery status idle");
    n = irq_count[V_SELF];
    icr_write(V_SELF, 0); /* physical, own ID */
    report(wait_count(V_SELF, n + 1), "self IPI (physical, own ID)");
    n = irq_count[V_BCAST];
    icr_write(V_BCAST, x2 ? 0xFFFFFFFFu : 0xFFu);
    report(wait_count(V_BCAST, n + 1), "fixed IPI to the broadcast ID");
    icr_write(0x80000u | V_BCAST, 0); /* all including self */
    report(wait_count(V_BCAST, n + 2), "fixed IPI to all including self");
    icr_write(0xC0000u | V_BCAST, 0); /* all excluding self */
    icr_write(0xC0500u, 0);           /* INIT to the others: no one */
    icr_write(0xC0600u | 0x10, 0);    /* SIPI to the others: no one */
    spin_cycles(QUIET_CYCLES / 10);
    report(irq_count[V_BCAST] == n + 2, "all excluding self: not delivered");
    n = nmi_count;
    icr_write(0x400u, 0); /* NMI, physical, own ID */
    spin_cycles(1000);
    vm_exit();
    report(nmi_count == n + 1, "NMI IPI to self");

    /* Priority: TPR holds back a lower class until lowered. */
    write_cr8(0xF);
    n = irq_count[V_TPR];
    icr_write(0x40000u | V_TPR, 0);
    vm_exit();
    report(irq_count[V_TPR] == n && irr_bit(V_TPR),
           "TPR 0xF0 holds vector 0xE1 in IRR");
    report((apic_read(R_PPR) & 0xF0u) == 0xF0u, "PPR follows TPR");
    write_cr8(0);
    vm_exit();
    report(wait_count(V_TPR, n + 1), "TPR 0 lets it in");
    /* ISR: a lower class sent in a handler waits for its EOI. */
    n = irq_count[V_LOW];
    icr_write(0x40000u | V_HIGH, 0);
    report(wait_count(V_HIGH, 1) && low_before_eoi == n &&
               wait_count(V_LOW, n + 1),
           "ISR 0x81 holds 0x71 until EOI");
    report(apic_read(R_ISR + 0x20) == 0 && apic_read(R_ISR + 0x30) == 0 &&
               apic_read(R_ISR + 0x40) == 0,
           "ISR empty after EOIs");
}

static uint64_t tmcct_read_tsc; /* TSC just before the last TMCCT read */
static uint32_t tmcct_last;     /* and the value it returned */

/* Wait until TMCCT is at most @limit; false on timeout. */
static bool tmcct_below(uint32_t limit)
{
    uint64_t t0 = rdtsc();
    for (;;) {
        tmcct_read_tsc = rdtsc();
        if ((tmcct_last = apic_read(R_TMCCT)) <= limit)
            return true;
        if (tmcct_read_tsc - t0 > SPIN_CYCLES)
            return false;
    }
}

static void set_mode(uint32_t mode)
{
    apic_write(R_LVTT, (apic_read(R_LVTT) & ~T_MODE) | mode);
}

/*
 * Start a count of @tmict in mode @from, let it fall to half, switch to
 * @to and read TMCCT into @c. A host stall between the last read and the
 * switch (the guest runs nested on a shared machine) could let the count
 * run out and make the read meaningless: such attempts are repeated. An
 * attempt counts if the count was seen between a quarter and a half and
 * the switch followed within @tmict / 4 TSC cycles: with a timer clock no
 * faster than the TSC, fewer than @tmict / 4 counts, so it cannot have
 * run out.
 */
static bool switch_at_half(uint32_t tmict, uint32_t from, uint32_t to,
                           uint32_t *c)
{
    for (int tries = 0; tries < 20; tries++) {
        set_mode(from);
        apic_write(R_TMICT, tmict);
        if (!tmcct_below(tmict / 2))
            return false;
        set_mode(to);
        *c = apic_read(R_TMCCT);
        uint64_t gap = rdtsc() - tmcct_read_tsc;
        if (gap < tmict / 4 && tmcct_last > tmict / 4)
            return true;
        printk("(host stall during a mode switch: again)\n");
    }
    return false;
}

static void check_timer(void)
{
    const uint32_t interval = 0x10000, tmict = 0x2000000; /* ~34 ms at 1 GHz */
    const uint64_t period = 1000000; /* bus ticks: 1 ms at 1 GHz */
    uint64_t t0, t1, dl;
    uint32_t n, c;
    bool ok;

    sti();
    /* One-shot, divide by 1: one interrupt, never before the count. */
    apic_write(R_LVTT, T_ONESHOT | V_TIMER);
    apic_write(R_TDCR, 0xB);
    n = irq_count[V_TIMER];
    t0 = rdtsc();
    apic_write(R_TMICT, interval);
    ok = wait_count(V_TIMER, n + 1);
    t1 = irq_tsc[V_TIMER];
    spin_cycles(QUIET_CYCLES / 10);
    report(ok && irq_count[V_TIMER] == n + 1 && t1 - t0 >= interval,
           "one-shot: one interrupt, not before the count (timer clock <= "
           "TSC)");

    /* Mode changes. */
    apic_write(R_TMICT, tmict);
    set_mode(T_PERIODIC);
    report(apic_read(R_TMICT) == tmict, "mode change keeps TMICT");
    set_mode(T_ONESHOT);
    apic_write(R_TMICT, tmict);
    report(apic_read(R_TMCCT) != 0, "one-shot: TMCCT counts");
    report(tmcct_below(0) && apic_read(R_TMCCT) == 0,
           "one-shot: TMCCT reaches 0 and stays");
    ok = switch_at_half(tmict, T_ONESHOT, T_PERIODIC, &c);
    report(ok && c != 0 && c < tmict / 2,
           "one-shot -> periodic: TMCCT continues, not reloaded");
    /* Wait for the reload: the count goes up again past half. */
    t0 = rdtsc();
    while ((c = apic_read(R_TMCCT)) <= tmict / 2 && rdtsc() - t0 < SPIN_CYCLES)
        ;
    report(c > tmict / 2, "periodic: TMCCT reloads from TMICT");
    ok = switch_at_half(tmict, T_PERIODIC, T_ONESHOT, &c);
    report(ok && c != 0 && c < tmict / 2,
           "periodic -> one-shot: TMCCT continues, not reloaded");
    report(tmcct_below(0) && apic_read(R_TMCCT) == 0,
           "one-shot: TMCCT reaches 0");
    set_mode(T_PERIODIC);
    report(apic_read(R_TMCCT) == 0, "expired one-shot -> periodic: TMCCT 0");
    apic_write(R_TMICT, 0);

    /* Periodic: five interrupts, no period shorter than the count. */
    apic_write(R_LVTT, T_PERIODIC | V_TIMER);
    n = irq_count[V_TIMER];
    t0 = rdtsc();
    apic_write(R_TMICT, (uint32_t)period);
    ok = wait_count(V_TIMER, n + 5);
    t1 = irq_tsc[V_TIMER];
    report(ok && t1 - t0 >= 5 * period, "periodic: 5 interrupts, 5 periods");
    apic_write(R_TMICT, 0);
    n = irq_count[V_TIMER];
    spin_cycles(QUIET_CYCLES);
    report(irq_count[V_TIMER] <= n + 1 && apic_read(R_TMCCT) == 0,
           "periodic: TMICT 0 stops it");
    apic_write(R_LVTT, T_PERIODIC | V_TIMER | LVT_MASKED);
    apic_write(R_TMICT, (uint32_t)period);
    n = irq_count[V_TIMER];
    spin_cycles(QUIET_CYCLES / 10);
    report(irq_count[V_TIMER] == n && apic_read(R_TMCCT) != 0,
           "masked periodic: counts, no interrupt");
    apic_write(R_TMICT, 0);

    /* TSC-deadline mode. */
    apic_write(R_LVTT, T_TSCDL | V_TSCDL);
    apic_write(R_TMICT, 0x1000);
    report(apic_read(R_TMICT) == 0 && apic_read(R_TMCCT) == 0,
           "tsc deadline: TMICT ignored, TMCCT 0");
    n = irq_count[V_TSCDL];
    dl = rdtsc() + 2000000;
    wrmsr(MSR_TSC_DEADLINE, dl);
    report(rdmsr(MSR_TSC_DEADLINE) == dl || irq_count[V_TSCDL] > n,
           "tsc deadline: MSR reads back while armed");
    ok = wait_count(V_TSCDL, n + 1);
    report(ok && irq_tsc[V_TSCDL] >= dl, "tsc deadline: fires, not early");
    report(rdmsr(MSR_TSC_DEADLINE) == 0, "tsc deadline: MSR 0 after firing");

    /* A deadline already past: delivered on the entry after the WRMSR. */
    n = irq_count[V_TSCDL];
    wrmsr(MSR_TSC_DEADLINE, rdmsr(MSR_TSC));
    __asm__ volatile("nop");
    c = irq_count[V_TSCDL];
    report(c == n + 1, "tsc deadline in the past: delivered right after "
                       "WRMSR");
    report(rdmsr(MSR_TSC_DEADLINE) == 0, "tsc deadline: clearing");
    wait_count(V_TSCDL, n + 1);

    /* Writing 0 disarms. */
    n = irq_count[V_TSCDL];
    wrmsr(MSR_TSC_DEADLINE, rdtsc() + 4 * QUIET_CYCLES);
    wrmsr(MSR_TSC_DEADLINE, 0);
    spin_cycles(QUIET_CYCLES / 2);
    report(irq_count[V_TSCDL] == n && rdmsr(MSR_TSC_DEADLINE) == 0,
           "tsc deadline: writing 0 disarms");

    /* Leaving the mode disarms. */
    wrmsr(MSR_TSC_DEADLINE, rdtsc() + 4 * QUIET_CYCLES);
    set_mode(T_ONESHOT);
    spin_cycles(QUIET_CYCLES / 2);
    report(irq_count[V_TSCDL] == n, "tsc deadline: leaving the mode disarms");

    /* HLT until the deadline. */
    apic_write(R_LVTT, T_TSCDL | V_TSCDL);
    n = irq_count[V_TSCDL];
    dl = rdtsc() + 2000000;
    wrmsr(MSR_TSC_DEADLINE, dl);
    t0 = rdtsc();
    while (irq_count[V_TSCDL] == n && rdtsc() - t0 < SPIN_CYCLES)
        __asm__ volatile("sti; hlt" ::: "memory");
    report(irq_count[V_TSCDL] == n + 1 && irq_tsc[V_TSCDL] >= dl,
           "tsc deadline: wakes HLT, not early");

    /*
     * "TSC-Deadline Mode": the deadline is compared with the TSC, which a
     * WRMSR to IA32_TSC moves. Set 5 M cycles back, a deadline 100 000
     * cycles ahead of the new value fires then, not at once.
     */
    if (tsc_write_check) {
        n = irq_count[V_TSCDL];
        wrmsr(MSR_TSC, rdtsc() - 5000000);
        dl = rdtsc() + 100000;
        wrmsr(MSR_TSC_DEADLINE, dl);
        t0 = rdtsc();
        while (irq_count[V_TSCDL] == n && rdtsc() - t0 < SPIN_CYCLES)
            __asm__ volatile("sti; hlt" ::: "memory");
        report(irq_count[V_TSCDL] == n + 1 && irq_tsc[V_TSCDL] >= dl,
               "tsc deadline after an IA32_TSC write: fires, not early");
    }
    apic_write(R_LVTT, LVT_MASKED);
}

/* --- one-shot -> periodic at half count, looped ------------------------- */

/*
 * The change-mode sequence of the upstream APIC test, looped: TMICT =
 * 0x999999 in one-shot mode (TDCR /1, 1 GHz bus), poll TMCCT down to half
 * (step 2), switch to periodic by a read-modify-write of LVTT and read it
 * back (step 3), read TMCCT (step 4: must be non-zero) and again (step 5:
 * must be below half). The guest TSC is read before and after every access
 * of an iteration (of the polls, the last two are kept, the others only
 * feed the longest gap), so that a failure can be told apart: the count
 * seen at step 2 can only run out (one-shot: TMCCT 0; periodic: a reload
 * above half) if that many ticks passed between the two reads, i.e. if the
 * host stalled the vCPU, either there (half a count or more) or between
 * the last two polls, which then left step 2 a count well below half.
 * Every count read is also checked against the TSC brackets of the one
 * before it, so that a count running early or late is a defect even where
 * both steps pass.
 *
 * Lines on COM1 (all key=value, TSC values relative to the iteration's
 * first TSC reading): "CM-BEGIN", one "CM-REC" per failed iteration (up to
 * cm_print=N, default 40), "CM-GAP" / "CM-WIN" percentiles and "CM-HIST",
 * "CM-SUMMARY", then the PASS/FAIL line of the check. cm_prelude=1 runs
 * the upstream test's earlier steps before each iteration (about 10 ms
 * more each).
 */
#define CM_TMICT 0x999999u
#define CM_ITERS_MAX 4000u
#define CM_PRINT_DEFAULT 40u
/* lapict-vmm's timer clock for both LAPICs: 1 GHz, so a tick is a ns. */
#define CM_BUS_KHZ 1000000u

enum cm_access {
    CM_TMICT_W,
    CM_PREV,
    CM_POLL,
    CM_LVTT_R,
    CM_LVTT_W,
    CM_LVTT_RB,
    CM_TMCCT4,
    CM_TMCCT5,
    CM_N
};
static const char *const cm_name[CM_N] = {
    "tmict", "prev", "poll", "lvtt_r", "lvtt_w", "lvtt_rb", "tmcct4", "tmcct5",
};

enum cm_kind { CM_PASS, CM_STALL, CM_DEFECT };
static const char *const cm_kind_name[] = {"pass", "stall", "defect"};

struct cm_rec {
    uint64_t t[CM_N][2]; /* guest TSC right before and after the access */
    uint64_t gap;        /* longest interval between two TSC readings */
    uint32_t c_prev;     /* the poll before step 2 (TMICT if none) */
    uint32_t c2, c4, c5, lvtt, lvtt_rb, polls;
    uint32_t prelude; /* cm_prelude_steps() anomalies */
    uint8_t kind;
    uint8_t gap_at; /* the access that ended the longest gap */
    const char *why;
};
static struct cm_rec cm_recs[CM_ITERS_MAX];
static uint64_t cm_sorted[CM_ITERS_MAX];
static uint64_t cm_khz;              /* guest TSC rate */
static uint64_t cm_prev, cm_gap_max; /* longest-gap tracking */
static uint8_t cm_at, cm_gap_at;     /* current access, where the gap was */

static inline uint64_t cm_tsc(void)
{
    uint64_t t = rdtsc();
    if (t - cm_prev > cm_gap_max) {
        cm_gap_max = t - cm_prev;
        cm_gap_at = cm_at;
    }
    cm_prev = t;
    return t;
}

static uint64_t cm_cyc_to_ticks(uint64_t cyc)
{
    return cyc * CM_BUS_KHZ / cm_khz;
}

static uint64_t cm_ticks_to_cyc(uint64_t ticks)
{
    return (ticks * cm_khz + CM_BUS_KHZ - 1) / CM_BUS_KHZ;
}

static uint64_t cm_cyc_to_us(uint64_t cyc)
{
    return cyc * 1000u / cm_khz;
}

/*
 * Is the count @c, read between the TSC readings @tk, consistent with the
 * count @ref read (or written, for TMICT) between the readings @tr? The
 * ticks between the two must fit the TSC window between them, widened by
 * 0.2% + 16 ticks for the kHz rounding of the TSC rate and clock slewing;
 * @reload allows periodic reloads in between. NULL if so, else why not.
 */
static const char *cm_check_count(uint32_t ref, const uint64_t tr[2],
                                  uint32_t c, const uint64_t tk[2], bool reload)
{
    const uint64_t n = CM_TMICT;
    uint64_t hi = cm_cyc_to_ticks(tk[1] - tr[0]);
    uint64_t lo = tk[0] > tr[1] ? cm_cyc_to_ticks(tk[0] - tr[1]) : 0;
    uint64_t e;

    hi += hi / 512 + 16;
    lo = lo > lo / 512 + 16 ? lo - lo / 512 - 16 : 0;
    if (c == 0) /* the one-shot ran out: @ref ticks at least */
        return ref <= hi ? NULL : "early";
    if (c > n)
        return "above-tmict";
    if (c > ref && !reload)
        return "went-up";
    /* Ticks elapsed, with at most one reload; more are checked below. */
    e = c <= ref ? ref - c : ref + n - c;
    if (e > hi)
        return "early";
    if (e < lo && (!reload || e + (lo - e + n - 1) / n * n > hi))
        return "late";
    return NULL;
}

/*
 * The steps of the upstream test before the sequence (cm_prelude=1): a
 * count started, switched to periodic and back, restarted in one-shot and
 * polled down to 0 (its interrupt taken), so that each iteration starts
 * from the state the upstream run has. Bit 0: TMICT changed by the switch;
 * bit 1: TMCCT 0 right after the TMICT write; bit 2: no 0 within ~1 s.
 */
static uint32_t cm_prelude_steps(void)
{
    uint32_t odd = 0;
    uint64_t t0;

    apic_write(R_TMICT, CM_TMICT);
    set_mode(T_PERIODIC);
    odd |= apic_read(R_TMICT) != CM_TMICT;
    set_mode(T_ONESHOT);
    apic_write(R_TMICT, CM_TMICT);
    odd |= apic_read(R_TMCCT) == 0 ? 2u : 0u;
    t0 = rdtsc();
    while (apic_read(R_TMCCT) != 0)
        if (rdtsc() - t0 > SPIN_CYCLES) {
            odd |= 4u;
            break;
        }
    return odd;
}

static void cm_iter(struct cm_rec *r, bool prelude)
{
    uint32_t v = CM_TMICT, lvtt;
    uint64_t b, a;

    if (prelude)
        r->prelude = cm_prelude_steps();
    else
        set_mode(T_ONESHOT);
    cm_prev = rdtsc();
    cm_gap_max = 0;
    /* Step 1. */
    cm_at = CM_TMICT_W;
    r->t[CM_TMICT_W][0] = b = cm_tsc();
    apic_write(R_TMICT, CM_TMICT);
    r->t[CM_TMICT_W][1] = a = cm_tsc();
    /* Step 2: poll down to half; keep the poll before the last. */
    r->polls = 0;
    cm_at = CM_POLL;
    do {
        r->c_prev = v;
        r->t[CM_PREV][0] = b;
        r->t[CM_PREV][1] = a;
        b = cm_tsc();
        v = apic_read(R_TMCCT);
        a = cm_tsc();
        r->polls++;
    } while (v > CM_TMICT / 2 && a - r->t[CM_TMICT_W][0] < SPIN_CYCLES);
    r->t[CM_POLL][0] = b;
    r->t[CM_POLL][1] = a;
    r->c2 = v;
    /* Step 3: read-modify-write of LVTT, read back. */
    cm_at = CM_LVTT_R;
    r->t[CM_LVTT_R][0] = cm_tsc();
    lvtt = apic_read(R_LVTT);
    r->t[CM_LVTT_R][1] = cm_tsc();
    r->lvtt = lvtt;
    cm_at = CM_LVTT_W;
    r->t[CM_LVTT_W][0] = cm_tsc();
    apic_write(R_LVTT, (lvtt & ~T_MODE) | T_PERIODIC);
    r->t[CM_LVTT_W][1] = cm_tsc();
    cm_at = CM_LVTT_RB;
    r->t[CM_LVTT_RB][0] = cm_tsc();
    r->lvtt_rb = apic_read(R_LVTT);
    r->t[CM_LVTT_RB][1] = cm_tsc();
    /* Steps 4 and 5. */
    cm_at = CM_TMCCT4;
    r->t[CM_TMCCT4][0] = cm_tsc();
    r->c4 = apic_read(R_TMCCT);
    r->t[CM_TMCCT4][1] = cm_tsc();
    cm_at = CM_TMCCT5;
    r->t[CM_TMCCT5][0] = cm_tsc();
    r->c5 = apic_read(R_TMCCT);
    r->t[CM_TMCCT5][1] = cm_tsc();
    r->gap = cm_gap_max;
    r->gap_at = cm_gap_at;
    /* The next iteration starts stopped, as after the upstream test. */
    apic_write(R_TMICT, 0);
}

static void cm_classify(struct cm_rec *r)
{
    const uint64_t *t2 = r->t[CM_POLL];
    bool f4 = r->c4 == 0, f5 = r->c5 >= CM_TMICT / 2;
    const char *why = NULL;

    r->kind = CM_DEFECT;
    if (r->c2 > CM_TMICT / 2)
        why = "no-half"; /* TMCCT did not fall to half within ~1 s */
    else if ((r->lvtt_rb & (T_MODE | 0xFFu)) != (T_PERIODIC | V_TIMER))
        why = "lvtt-readback";
    else if ((why = cm_check_count(CM_TMICT, r->t[CM_TMICT_W], r->c_prev,
                                   r->t[CM_PREV], false)) ||
             (why =
                  cm_check_count(r->c_prev, r->t[CM_PREV], r->c2, t2, false)) ||
             (why = cm_check_count(r->c2, t2, r->c4, r->t[CM_TMCCT4], true)) ||
             (why = cm_check_count(r->c2, t2, r->c5, r->t[CM_TMCCT5], true)))
        ;
    else if (r->c2 == 0) {
        /* The whole count ran out before step 2 (checked just above). */
        r->kind = CM_STALL;
        why = "out-before-step-2";
    } else if (f4 || f5) {
        /* The count seen at step 2 ran out: it takes c2 ticks. */
        const uint64_t *tf = r->t[f4 ? CM_TMCCT4 : CM_TMCCT5];
        uint64_t win = tf[1] - t2[0];
        if (win >= cm_ticks_to_cyc(CM_TMICT / 2)) {
            r->kind = CM_STALL;
            why = f4 ? "zero-after-stall" : "reload-after-stall";
        } else if (win >= cm_ticks_to_cyc(r->c2)) {
            /* Less than half a count since step 2, but step 2 found the
             * count already low: the stall came between the last two
             * polls (c_prev above half; checked against the TSC above). */
            r->kind = CM_STALL;
            why = f4 ? "zero-after-stall-before-step-2"
                     : "reload-after-stall-before-step-2";
        } else {
            why = f4 ? "zero" : "reloaded";
        }
    } else {
        r->kind = CM_PASS;
    }
    r->why = why;
}

static void cm_print_rec(unsigned i, const struct cm_rec *r)
{
    const uint64_t t0 = r->t[CM_TMICT_W][0], *t2 = r->t[CM_POLL];
    const uint64_t *tf = r->t[r->c4 == 0 ? CM_TMCCT4 : CM_TMCCT5];

    printk("CM-REC i=%u kind=%s why=%s c2=%u c4=%u c5=%u lvtt=%x lvtt_rb=%x "
           "polls=%u prelude=%u c_prev=%u gap_cyc=%lu gap_at=%s win_cyc=%lu "
           "need_cyc=%lu",
           i, cm_kind_name[r->kind], r->why ? r->why : "-", r->c2, r->c4, r->c5,
           r->lvtt, r->lvtt_rb, r->polls, r->prelude, r->c_prev, r->gap,
           cm_name[r->gap_at], tf[1] - t2[0], cm_ticks_to_cyc(r->c2));
    for (unsigned k = 0; k < CM_N; k++)
        printk(" %s=%lu/%lu", cm_name[k], r->t[k][0] - t0, r->t[k][1] - t0);
    printk("\n");
}

/* Sort @n values (insertion sort: at most a few thousand, once). */
static void cm_sort(uint64_t *v, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        uint64_t x = v[i];
        unsigned j = i;
        for (; j && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Percentiles (in us) of @n values sorted in place. */
static void cm_percentiles(const char *tag, uint64_t *v, unsigned n)
{
    static const unsigned per_mille[] = {500, 900, 990, 999};
    static const char *const label[] = {"p50", "p90", "p99", "p99.9"};

    cm_sort(v, n);
    printk("%s", tag);
    for (unsigned k = 0; k < 4; k++) {
        unsigned i = (unsigned)(((uint64_t)n * per_mille[k]) / 1000u);
        printk(" %s=%lu", label[k], cm_cyc_to_us(v[i < n ? i : n - 1]));
    }
    printk(" max=%lu (us)\n", cm_cyc_to_us(v[n - 1]));
}

static void check_changemode(const char *cmdline, uint64_t iters)
{
    static const uint64_t edge_us[] = {100, 200, 500, 1000, 2000};
    uint64_t print_max = CM_PRINT_DEFAULT, prelude = 0, half_us;
    uint64_t hist[7] = {0};
    unsigned n = (unsigned)iters, counts[3] = {0}, printed = 0, odd = 0;

    if (!word_value(cmdline, "tsc_khz=", &cm_khz) || !cm_khz ||
        cm_khz > 100000000u || !iters || iters > CM_ITERS_MAX) {
        printk("changemode: needs tsc_khz=<guest TSC kHz> and "
               "1 <= changemode=N <= %u\n",
               CM_ITERS_MAX);
        report(false, "one-shot -> periodic at half, looped: arguments");
        return;
    }
    word_value(cmdline, "cm_print=", &print_max);
    word_value(cmdline, "cm_prelude=", &prelude);
    half_us = (uint64_t)(CM_TMICT / 2) * 1000u / CM_BUS_KHZ;
    printk("CM-BEGIN mode=%s iters=%u tmict=%u tsc_khz=%lu half_us=%lu "
           "prelude=%u\n",
           x2 ? "x2apic" : "xapic", n, CM_TMICT, cm_khz, half_us, prelude != 0);
    sti();
    apic_write(R_TMICT, 0);
    apic_write(R_TDCR, 0xB);
    apic_write(R_LVTT, T_ONESHOT | V_TIMER);
    for (unsigned i = 0; i < n; i++)
        cm_iter(&cm_recs[i], prelude != 0);
    apic_write(R_LVTT, LVT_MASKED);
    for (unsigned i = 0; i < n; i++) {
        struct cm_rec *r = &cm_recs[i];
        unsigned b = 0;

        cm_classify(r);
        counts[r->kind]++;
        odd += r->prelude != 0;
        if (r->kind != CM_PASS && printed < print_max) {
            cm_print_rec(i, r);
            printed++;
        }
        while (b < 5 && cm_cyc_to_us(r->gap) >= edge_us[b])
            b++;
        if (b == 5 && cm_cyc_to_us(r->gap) >= half_us)
            b = 6;
        hist[b]++;
    }
    for (unsigned i = 0; i < n; i++)
        cm_sorted[i] = cm_recs[i].gap;
    cm_percentiles("CM-GAP longest gap per iteration:", cm_sorted, n);
    for (unsigned i = 0; i < n; i++)
        cm_sorted[i] = cm_recs[i].t[CM_TMCCT5][1] - cm_recs[i].t[CM_POLL][0];
    cm_percentiles("CM-WIN step-2 read to step-5 read:", cm_sorted, n);
    printk("CM-HIST gap_us <100:%lu <200:%lu <500:%lu <1000:%lu <2000:%lu "
           "<%lu:%lu >=%lu:%lu\n",
           hist[0], hist[1], hist[2], hist[3], hist[4], half_us, hist[5],
           half_us, hist[6]);
    printk("CM-SUMMARY mode=%s iters=%u pass=%u stalls=%u defects=%u "
           "printed=%u prelude_odd=%u\n",
           x2 ? "x2apic" : "xapic", n, counts[CM_PASS], counts[CM_STALL],
           counts[CM_DEFECT], printed, odd);
    report(counts[CM_DEFECT] == 0,
           "one-shot -> periodic at half, looped: no reload without a host "
           "stall");
}

/*
 * The TSC under nested SVM (AMD64 APM vol. 2, "Secure Virtual Machine"):
 * inside a guest, RDTSC reads the TSC plus the VMCB's TSC_OFFSET; outside,
 * the TSC alone. A WRMSR to IA32_TSC by the outer kernel sets the TSC
 * itself, so VMRUN (which loads the offset) and #VMEXIT (which leaves it
 * behind) neither lose that write nor add the offset to it. Runs where
 * CPUID 8000_0001h:ECX.SVM is set; elsewhere it prints a SKIP line and
 * counts as no test.
 */
#define MSR_EFER 0xC0000080u
#define MSR_VM_HSAVE_PA 0xC0010117u
#define EFER_SVME (1ull << 12)
#define SVM_EXIT_VMMCALL 0x81u

/* VMCB offsets: the control area, then the state save area at 0x400. */
enum {
    VMCB_INTERCEPT_MISC1 = 0x00C, /* bit 31: shutdown */
    VMCB_INTERCEPT_MISC2 = 0x010, /* bit 0: VMRUN, bit 1: VMMCALL */
    VMCB_TSC_OFFSET = 0x050,
    VMCB_ASID = 0x058,
    VMCB_EXITCODE = 0x070,
    VMCB_ES = 0x400,
    VMCB_CS = 0x410,
    VMCB_SS = 0x420,
    VMCB_DS = 0x430,
    VMCB_GDTR = 0x460,
    VMCB_IDTR = 0x480,
    VMCB_CPL = 0x4CB,
    VMCB_EFER = 0x4D0,
    VMCB_CR4 = 0x548,
    VMCB_CR3 = 0x550,
    VMCB_CR0 = 0x558,
    VMCB_DR7 = 0x560,
    VMCB_DR6 = 0x568,
    VMCB_RFLAGS = 0x570,
    VMCB_RIP = 0x578,
    VMCB_RSP = 0x5D8,
    VMCB_G_PAT = 0x668,
};

static uint8_t vmcb[4096] __attribute__((aligned(4096)));
static uint8_t svm_hsave[4096] __attribute__((aligned(4096)));
static uint8_t svm_stack[4096] __attribute__((aligned(16)));
/* What the nested guest's RDTSC read (written by svm_guest). */
volatile uint64_t svm_guest_tsc;
extern char svm_guest[];

/*
 * The nested guest: one RDTSC, stored, then VMMCALL (intercepted: the
 * #VMEXIT). It runs on the outer kernel's page tables and segments.
 */
__asm__(".text\n"
        "svm_guest:\n"
        "    lfence\n"
        "    rdtsc\n"
        "    shl $32, %rdx\n"
        "    or %rdx, %rax\n"
        "    mov %rax, svm_guest_tsc(%rip)\n"
        "    vmmcall\n"
        "    ud2\n");

static void vmcb_put(unsigned off, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        vmcb[off + i] = (uint8_t)(v >> (8 * i));
}

static uint64_t vmcb_get(unsigned off)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)vmcb[off + i] << (8 * i);
    return v;
}

/* A segment as the VMCB holds it: selector, attributes (descriptor bits
 * 40-47 and 52-55), limit, base. */
static void vmcb_seg(unsigned off, uint16_t sel, uint16_t attrib)
{
    vmcb_put(off, sel, 2);
    vmcb_put(off + 2, attrib, 2);
    vmcb_put(off + 4, 0xFFFFFFFFu, 4);
    vmcb_put(off + 8, 0, 8);
}

static bool has_svm(void)
{
    uint32_t a, b, c, d;

    cpuid(0x80000000u, &a, &b, &c, &d);
    if (a < 0x80000001u)
        return false;
    cpuid(0x80000001u, &a, &b, &c, &d);
    return c & (1u << 2);
}

static void check_svm_tsc(void)
{
    /* Far apart, so that a lost write or a kept offset cannot pass for a
     * TSC that ran on: 2^50 cycles are days at any TSC rate. */
    const uint64_t offset = 1ull << 52, slack = 1ull << 40;
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed)) gdtr, idtr;
    uint64_t w, t0, t1, in, cr0, cr3, cr4, exit;

    if (!has_svm()) {
        printk("SKIP: svm tsc: CPUID offers no SVM\n");
        return;
    }
    cli();
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
    wrmsr(MSR_VM_HSAVE_PA, (uint64_t)(uintptr_t)svm_hsave);
    __asm__ volatile("sgdt %0" : "=m"(gdtr));
    __asm__ volatile("sidt %0" : "=m"(idtr));
    __asm__ volatile("mov %%cr0, %0" : "=r"(cr0));
    __asm__ volatile("mov %%cr3, %0" : "=r"(cr3));
    __asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
    for (unsigned i = 0; i < sizeof(vmcb); i++)
        vmcb[i] = 0;
    /* VMRUN must be intercepted, and the ASID must not be the host's. */
    vmcb_put(VMCB_INTERCEPT_MISC1, 1u << 31, 4);
    vmcb_put(VMCB_INTERCEPT_MISC2, 3u, 4);
    vmcb_put(VMCB_TSC_OFFSET, offset, 8);
    vmcb_put(VMCB_ASID, 1, 4);
    /* entry.S's GDT: 64-bit code at 8 (L, G), data at 0x10 (D/B, G). */
    vmcb_seg(VMCB_CS, 8, 0xA9B);
    vmcb_seg(VMCB_SS, 0x10, 0xC93);
    vmcb_seg(VMCB_DS, 0x10, 0xC93);
    vmcb_seg(VMCB_ES, 0x10, 0xC93);
    vmcb_put(VMCB_GDTR + 4, gdtr.limit, 4);
    vmcb_put(VMCB_GDTR + 8, gdtr.base, 8);
    vmcb_put(VMCB_IDTR + 4, idtr.limit, 4);
    vmcb_put(VMCB_IDTR + 8, idtr.base, 8);
    vmcb_put(VMCB_CPL, 0, 1);
    vmcb_put(VMCB_EFER, rdmsr(MSR_EFER), 8);
    vmcb_put(VMCB_CR0, cr0, 8);
    vmcb_put(VMCB_CR3, cr3, 8);
    vmcb_put(VMCB_CR4, cr4, 8);
    vmcb_put(VMCB_DR7, 0x400, 8);
    vmcb_put(VMCB_DR6, 0xFFFF0FF0u, 8);
    vmcb_put(VMCB_RFLAGS, 2, 8); /* IF clear: nothing interrupts it */
    vmcb_put(VMCB_RIP, (uint64_t)(uintptr_t)svm_guest, 8);
    vmcb_put(VMCB_RSP, (uint64_t)(uintptr_t)(svm_stack + sizeof(svm_stack)), 8);
    vmcb_put(VMCB_G_PAT, 0x0007040600070406ull, 8);
    svm_guest_tsc = 0;

    w = rdtsc() + (1ull << 50);
    wrmsr(MSR_TSC, w);
    t0 = rdtsc();
    /*
     * VMRUN saves and restores only RAX, RSP and RIP of the general
     * registers: the guest runs on the others and leaves them changed.
     * GIF is cleared around it, as a hypervisor does.
     */
    __asm__ volatile("clgi\n\t"
                     "vmrun\n\t"
                     "stgi"
                     :
                     : "a"((uint64_t)(uintptr_t)vmcb)
                     : "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10",
                       "r11", "r12", "r13", "r14", "r15", "memory", "cc");
    t1 = rdtsc();
    in = svm_guest_tsc;
    exit = vmcb_get(VMCB_EXITCODE);
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) & ~EFER_SVME);
    printk("svm tsc: written %lx, before VMRUN %lx, nested %lx, after "
           "#VMEXIT %lx, exit code %lx\n",
           w, t0, in, t1, exit);
    report(exit == SVM_EXIT_VMMCALL,
           "svm tsc: the nested guest runs to its VMMCALL");
    report(t0 >= w && t0 - w < slack,
           "svm tsc: RDTSC counts on from a WRMSR to IA32_TSC");
    report(in - offset >= t0 && in - offset <= t1,
           "svm tsc: the nested RDTSC reads the TSC plus the VMCB's offset");
    report(t1 >= t0 && t1 - w < slack,
           "svm tsc: after #VMEXIT the TSC counts on from the write, "
           "without the offset");
}

/*
 * "memsoak=1": guest memory against migration (check_qemu's migration
 * checks). Three pages: two buffers and a generation counter, written in
 * the order buffers then counter, so a consistent image holds the counter's
 * value in every word of both buffers. A destination whose pages came over
 * from different moments (a page written after its last transfer without
 * being marked dirty) shows a mismatch at the next check: "FAIL: memsoak"
 * and exit 1. The loop has no end; "MEMSOAK gen=<n>" every SOAK_PRINT
 * generations shows progress. Interrupts stay off.
 */
#define SOAK_WORDS 512u /* a 4 KiB page of uint64_t */
#define SOAK_PRINT 0x4000u
static volatile uint64_t soak_a[SOAK_WORDS] __attribute__((aligned(4096)));
static volatile uint64_t soak_b[SOAK_WORDS] __attribute__((aligned(4096)));
static volatile uint64_t soak_gen[SOAK_WORDS] __attribute__((aligned(4096)));

static void memsoak(void)
{
    uint64_t g = 0;

    for (unsigned i = 0; i < SOAK_WORDS; i++)
        soak_a[i] = soak_b[i] = 0;
    soak_gen[0] = 0;
    printk("MEMSOAK begin pages=%lx,%lx,%lx\n", (uint64_t)(uintptr_t)soak_a,
           (uint64_t)(uintptr_t)soak_b, (uint64_t)(uintptr_t)soak_gen);
    for (;;) {
        g = soak_gen[0];
        for (unsigned i = 0; i < SOAK_WORDS; i++) {
            uint64_t a = soak_a[i], b = soak_b[i];

            if (a != g || b != g) {
                printk("FAIL: memsoak gen=%lu word %u: a=%lu b=%lu\n", g, i, a,
                       b);
                printk("SUMMARY: 1 tests, 1 failures\n");
                debug_exit(1);
            }
        }
        g++;
        for (unsigned i = 0; i < SOAK_WORDS; i++)
            soak_a[i] = g;
        for (unsigned i = 0; i < SOAK_WORDS; i++)
            soak_b[i] = g;
        soak_gen[0] = g;
        if (!(g % SOAK_PRINT))
            printk("MEMSOAK gen=%lu\n", g);
    }
}

/*
 * Where CPUID.01H:ECX.TSC_Deadline[bit 24] is clear (SDM vol. 3A, "TSC-
 * Deadline Mode"), the mode does not exist: IA32_TSC_DEADLINE raises #GP on
 * read and write, and LVTT bit 18 is reserved, so a write of mode 10 leaves
 * a timer mode without it (one-shot), never TSC-deadline. With
 * @msr_ignored, the host treats the MSR as every MSR it does not
 * implement (QEMU's TCG: no #GP, reads 0, writes ignored) instead.
 */
static void check_no_deadline(bool msr_ignored)
{
    uint32_t a, b, c, d;
    uint64_t v;

    cpuid(1, &a, &b, &c, &d);
    report(!(c & (1u << 24)), "no-deadline: CPUID offers no TSC-deadline");
    if (msr_ignored) {
        report(!wrmsr_gp(MSR_TSC_DEADLINE, rdtsc() + 1000000),
               "no-deadline: WRMSR 0x6E0 is ignored, no #GP");
        gp_seen = 0;
        gp_expected = 1;
        v = rdmsr(MSR_TSC_DEADLINE);
        gp_expected = 0;
        report(!gp_seen && v == 0,
               "no-deadline: RDMSR 0x6E0 reads 0 after a write, no #GP");
    } else {
        report(rdmsr_gp(MSR_TSC_DEADLINE), "no-deadline: RDMSR 0x6E0 is #GP");
        report(wrmsr_gp(MSR_TSC_DEADLINE, rdtsc() + 1000000),
               "no-deadline: WRMSR 0x6E0 is #GP");
    }
    apic_write(R_LVTT, T_TSCDL | V_TSCDL | LVT_MASKED);
    report((apic_read(R_LVTT) & T_MODE) != T_TSCDL,
           "no-deadline: LVTT mode 10 does not stick");
    apic_write(R_LVTT, LVT_MASKED);
}

/*
 * park=S: the state of a guest between a TSC deadline's expiry and its next
 * WRMSR (LVTT in TSC-deadline mode, IA32_TSC_DEADLINE 0), held for S spins
 * of SPIN_CYCLES after "PARKED" (a host migrates the VM then), after which
 * a new deadline must fire, not early: the mode survived whatever the host
 * did. A destination that lost the mode never delivers it.
 */
static void check_park(uint64_t spins)
{
    uint32_t n;
    uint64_t dl;
    bool ok;

    sti();
    apic_write(R_LVTT, T_TSCDL | V_TSCDL);
    n = irq_count[V_TSCDL];
    dl = rdtsc() + 2000000;
    wrmsr(MSR_TSC_DEADLINE, dl);
    ok = wait_count(V_TSCDL, n + 1);
    report(ok && rdmsr(MSR_TSC_DEADLINE) == 0,
           "park: the deadline fired, none is armed");
    printk("PARKED\n");
    for (uint64_t i = 0; i < spins; i++)
        spin_cycles(SPIN_CYCLES);
    report((apic_read(R_LVTT) & (T_MODE | 0xFFu)) == (T_TSCDL | V_TSCDL),
           "park: LVTT is still in TSC-deadline mode");
    n = irq_count[V_TSCDL];
    dl = rdtsc() + 2000000;
    wrmsr(MSR_TSC_DEADLINE, dl);
    ok = wait_count(V_TSCDL, n + 1);
    report(ok && irq_tsc[V_TSCDL] >= dl,
           "park: a deadline armed after the wait fires, not early");
    cli();
}

/*
 * tscw=S: the guest writes its TSC 2^40 ahead, says "PARKED", spins S
 * times SPIN_CYCLES (a host migrates the VM then), and checks that the
 * TSC kept the write and counted on: at or past the value written plus
 * the spins, and not a second 2^40 ahead.
 */
static void check_tsc_write_park(uint64_t spins)
{
    uint64_t w = rdtsc() + (1ull << 40), t;

    wrmsr(MSR_TSC, w);
    t = rdtsc();
    report(t >= w && t - w < SPIN_CYCLES,
           "tsc write: RDTSC reads the value written");
    printk("PARKED\n");
    for (uint64_t i = 0; i < spins; i++)
        spin_cycles(SPIN_CYCLES);
    t = rdtsc();
    report(t >= w + spins * SPIN_CYCLES && t - w < (1ull << 40),
           "tsc write: kept, counting on");
}

/*
 * snap=M tsc_khz=K bus_khz=B: a timer armed across a host's snapshot, for
 * each mode in the mask M (1 one-shot, 2 periodic, 4 TSC-deadline), in
 * that order. The guest arms the timer (divide by 1, B the timer's input
 * clock in kHz, K the TSC's), spins a quarter of the interval, prints
 * "PARKED <mode>" and asks Bochs's debugger to stop (its iodebug port,
 * 0x8A00, which other hosts ignore), where a host saves its state. Then
 * the timer must fire on time by the guest's TSC, in the run that goes on
 * and in every run restored from the snapshot: not before the count (or
 * the deadline) ends, at most SNAP_LATE_US after, once (periodic: the i-th
 * interrupt in the i-th period, five of them). A count restarted on
 * restore fires a quarter late; a lost one never.
 */
#define SNAP_MS 100u
#define SNAP_PERIODS 5u
/*
 * Lateness allowed: the arming write after the TSC read, and the handler's
 * entry before its RDTSC (Bochs counts both in instructions).
 */
#define SNAP_LATE_US 200u

static uint64_t snap_khz, snap_bus_khz;

static void snap_park(const char *mode, uint64_t t0, uint64_t cyc)
{
    while (rdtsc() - t0 < cyc / 4)
        pause();
    printk("PARKED %s\n", mode);
    outw(0x8A00, 0x8A00); /* iodebug: on */
    outw(0x8A00, 0x8AE0); /* return to the debugger's prompt */
}

/*
 * Wait for interrupt @v number @n, due at @due; false when it has not come
 * @late cycles after. @at gets its TSC.
 */
static bool snap_wait(unsigned v, uint32_t n, uint64_t due, uint64_t late,
                      uint64_t *at)
{
    while (irq_count[v] < n)
        if ((int64_t)(rdtsc() - (due + late)) > 0)
            return false;
    *at = irq_tsc[v];
    return true;
}

/* Did @at land in [@due, @due + SNAP_LATE_US]? Prints it either way. */
static bool snap_on_time(const char *mode, unsigned i, uint64_t due,
                         uint64_t at)
{
    int64_t d = (int64_t)(at - due);

    printk("SNAP %s %u: due %lu, fired %ld cycles after\n", mode, i, due, d);
    return d >= 0 && (uint64_t)d <= SNAP_LATE_US * snap_khz / 1000u;
}

static void check_snap_oneshot(void)
{
    uint64_t cnt = (uint64_t)SNAP_MS * snap_bus_khz;
    uint64_t cyc = (cnt * snap_khz + snap_bus_khz - 1) / snap_bus_khz;
    uint64_t t0, at = 0;
    uint32_t n = irq_count[V_TIMER];
    bool ok;

    apic_write(R_LVTT, T_ONESHOT | V_TIMER);
    apic_write(R_TDCR, 0xB);
    t0 = rdtsc();
    apic_write(R_TMICT, (uint32_t)cnt);
    snap_park("one-shot", t0, cyc);
    ok = snap_wait(V_TIMER, n + 1, t0 + cyc, cyc / 2, &at) &&
         snap_on_time("one-shot", 1, t0 + cyc, at);
    spin_cycles(cyc / 2);
    report(ok && irq_count[V_TIMER] == n + 1,
           "snapshot: a one-shot count armed across it fires on time, once");
}

static void check_snap_periodic(void)
{
    uint64_t cnt = (uint64_t)SNAP_MS / SNAP_PERIODS * snap_bus_khz;
    uint64_t cyc = (cnt * snap_khz + snap_bus_khz - 1) / snap_bus_khz;
    uint64_t t0, at = 0;
    uint32_t n = irq_count[V_TIMER];
    bool ok = true;

    apic_write(R_LVTT, T_PERIODIC | V_TIMER);
    apic_write(R_TDCR, 0xB);
    t0 = rdtsc();
    apic_write(R_TMICT, (uint32_t)cnt);
    snap_park("periodic", t0, cyc);
    for (unsigned i = 1; ok && i <= SNAP_PERIODS; i++) {
        uint64_t due = t0 + i * cyc;

        ok = snap_wait(V_TIMER, n + i, due, cyc / 2, &at) &&
             snap_on_time("periodic", i, due, at) &&
             irq_count[V_TIMER] == n + i;
    }
    apic_write(R_TMICT, 0);
    spin_cycles(cyc);
    report(ok && irq_count[V_TIMER] == n + SNAP_PERIODS,
           "snapshot: a periodic count armed across it fires each period "
           "on time, once");
}

static void check_snap_deadline(void)
{
    uint64_t cyc = (uint64_t)SNAP_MS * snap_khz;
    uint64_t t0, dl, at = 0;
    uint32_t n = irq_count[V_TSCDL];
    bool ok;

    apic_write(R_LVTT, T_TSCDL | V_TSCDL);
    t0 = rdtsc();
    dl = t0 + cyc;
    wrmsr(MSR_TSC_DEADLINE, dl);
    snap_park("tsc-deadline", t0, cyc);
    ok = snap_wait(V_TSCDL, n + 1, dl, cyc / 2, &at) &&
         snap_on_time("tsc-deadline", 1, dl, at);
    spin_cycles(cyc / 2);
    report(ok && irq_count[V_TSCDL] == n + 1 && rdmsr(MSR_TSC_DEADLINE) == 0,
           "snapshot: a TSC deadline armed across it fires on time, once");
}

static void check_snap(const char *cmdline, uint64_t mask)
{
    if (!word_value(cmdline, "tsc_khz=", &snap_khz) ||
        !word_value(cmdline, "bus_khz=", &snap_bus_khz) || !snap_khz ||
        snap_khz > 100000000u || !snap_bus_khz || snap_bus_khz > 40000000u ||
        !mask || mask > 7) {
        printk("snap: needs 1 <= snap=M <= 7, tsc_khz=<guest TSC kHz> and "
               "bus_khz=<timer input kHz, at most 40000000>\n");
        report(false, "snapshot: arguments");
        return;
    }
    sti();
    if (mask & 1)
        check_snap_oneshot();
    if (mask & 2)
        check_snap_periodic();
    if (mask & 4) {
        uint32_t a, b, c, d;

        cpuid(1, &a, &b, &c, &d);
        if (c & (1u << 24))
            check_snap_deadline();
        else
            report(false, "snapshot: CPUID offers TSC-deadline mode");
    }
    apic_write(R_LVTT, LVT_MASKED);
    cli();
}

/* The APIC mode CPUID offers (x2APIC where it can), stated on COM1. */
static void enter_cpuid_apic_mode(void)
{
    if (has_x2apic_cpuid())
        enter_x2apic();
    else
        reset_xapic();
    printk("mode: %s\n", x2 ? "x2apic" : "xapic");
}

void mb_main(void)
{
    const struct mb_info *mbi = (const struct mb_info *)(uintptr_t)mb_boot_info;
    const char *cmdline =
        (mbi->flags & 4u) ? (const char *)(uintptr_t)mbi->cmdline : "";

    uint64_t cm_iters, park, snap;

    idt_init(idt);
    /*
     * 8N1: a UART's word length is 5 bits after reset, and not every
     * loader sets it (GRUB without a serial terminal does not). The baud
     * rate stays as the firmware set it: writing the divisor latch goes
     * through port 0x3F8, which simpler COM1 models (lapict-hv's) take
     * for a character whatever DLAB says.
     */
    outb(0x3FB, 0x03);
    /*
     * The 8259s masked before any STI: a BIOS (Bochs's) leaves IRQ0, the
     * PIT, unmasked on vector 8, which the modes below do not expect.
     */
    outb(0x21, 0xFF);
    outb(0xA1, 0xFF);
    exit_bochs = has_word(cmdline, "exit=bochs");
    tsc_write_check = has_word(cmdline, "tscwrite=1");
    printk("lapict-mbtest: multiboot test kernel\n");
    if (has_word(cmdline, "memsoak=1")) {
        printk("cmdline: %s\n", cmdline);
        memsoak();
    }
    if (has_word(cmdline, "svmtsc=1")) {
        /* Only the nested SVM check: it needs no APIC (check_svm_tsc). */
        printk("cmdline: %s\n", cmdline);
        check_svm_tsc();
        printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
        debug_exit(n_fail ? 1 : 0);
    }
    if (has_word(cmdline, "nodl=1") || has_word(cmdline, "nodl=2")) {
        printk("cmdline: %s\n", cmdline);
        enter_cpuid_apic_mode();
        check_no_deadline(has_word(cmdline, "nodl=2"));
        printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
        debug_exit(n_fail ? 1 : 0);
    }
    if (word_value(cmdline, "tscw=", &park)) {
        printk("cmdline: %s\n", cmdline);
        check_tsc_write_park(park);
        printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
        debug_exit(n_fail ? 1 : 0);
    }
    if (word_value(cmdline, "park=", &park)) {
        printk("cmdline: %s\n", cmdline);
        enter_cpuid_apic_mode();
        check_park(park);
        printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
        debug_exit(n_fail ? 1 : 0);
    }
    if (word_value(cmdline, "snap=", &snap)) {
        printk("cmdline: %s\n", cmdline);
        enter_cpuid_apic_mode();
        check_snap(cmdline, snap);
        printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
        debug_exit(n_fail ? 1 : 0);
    }
    if (word_value(cmdline, "changemode=", &cm_iters)) {
        /* Only the looped change-mode check (see check_changemode). */
        printk("cmdline: %s\n", cmdline);
        enter_cpuid_apic_mode();
        check_changemode(cmdline, cm_iters);
        cli();
        printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
        debug_exit(n_fail ? 1 : 0);
    }
    check_boot();
    check_cpuid(cmdline);
    check_apic_base();
    /* Like kvm-unit-tests: x2APIC for the rest when CPUID offers it. */
    if (has_x2apic_cpuid())
        enter_x2apic();
    else
        reset_xapic();
    printk("mode: %s\n", x2 ? "x2apic" : "xapic");
    check_interrupts();
    check_timer();
    /* Last: it moves the TSC 2^50 cycles ahead. */
    check_svm_tsc();
    cli();
    printk("SUMMARY: %u tests, %u failures\n", n_tests, n_fail);
    debug_exit(n_fail ? 1 : 0);
}
