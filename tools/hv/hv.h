/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv: a minimal type-1 VMX hypervisor whose vCPUs' local APICs are
 * lapict's (adapters/apic) and whose APIC timers run on lapict's core, with
 * the VMX-preemption timer as the hardware timer while a vCPU is loaded and
 * the physical LAPIC's TSC-deadline timer, multiplexed by
 * adapters/baremetal, as the software timer. One physical CPU; the vCPUs
 * (each a one-vCPU VM in its own slice of RAM) share it round-robin.
 * Freestanding: no libc, no allocation, everything static.
 */
#ifndef LAPICT_HV_H
#define LAPICT_HV_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lapict/lapict.h>
#include <lapict_apic.h>
#include <lapict_baremetal.h>

#define HV_MAX_VCPUS 16u
/* The physical LAPIC timer's vector (TSC-deadline mode). */
#define HV_TIMER_VEC 0xF0u
/* Guest RAM: one slice per VM from here, HV_SLICE_MB MiB each. */
#define HV_GUEST_BASE (64ull << 20)
#define HV_SLICE_MB 64u
/* Guest-physical layout of the boot data (as lapict-vmm's multiboot). */
#define HV_MB_GDT 0x1000u
#define HV_MB_INFO 0x9000u
#define HV_MB_MODS 0x9100u
#define HV_MB_CMDLINE 0x9200u
#define HV_MB_CMDLINE_MAX (0xA000u - HV_MB_CMDLINE)
#define HV_MB_MODULE 0x10000u
#define HV_MB_MODULE_MAX (0xA0000u - HV_MB_MODULE)
#define HV_MB_LOW_END 0x100000u

enum hv_timer_path { HV_TIMER_PREEMPT, HV_TIMER_LAPIC };

/* The guest's general registers, as hv_vmx_run() lays them out. */
struct hv_gregs {
    uint64_t rax, rcx, rdx, rbx, rsp_unused, rbp, rsi, rdi;
    uint64_t r8, r9, r10, r11, r12, r13, r14, r15, cr2;
};

/*
 * The hypervisor's own account of one vCPU's timer, kept apart from
 * lapict: the architectural instants of the guest's programming, checked
 * against the interrupts the guest is entered with.
 */
struct hv_ref {
    uint32_t mode;        /* LVTT[18:17] at the last programming */
    bool armed;           /* a one-shot / deadline instant outstanding */
    bool periodic;        /* a periodic grid runs */
    bool unknown;         /* programmed in a way this account skips */
    uint32_t stale;       /* interrupts still due from before a write */
    uint64_t instant_tsc; /* (first) instant, host TSC */
    uint64_t given;       /* periodic: grid points given to the guest */
    uint64_t period_tsc;  /* periodic: grid step, host TSC ticks */
    uint64_t deadline;    /* TSC-deadline mode: guest TSC */
    uint64_t anchor_ns;   /* count-down: lapict's clock at the TMICT write */
    uint64_t period_ns;   /* count-down: count x divide, ns */
};

struct hv_vcpu {
    uint32_t index;
    struct hv_gregs g;
    bool launched, halted, done, nmi_pending;
    bool ref_pending;   /* entering with the timer's interrupt */
    bool timer_refused; /* the timer holds an interrupt (IRR busy) */
    bool woken;         /* in the scheduler's queue of woken vCPUs */
    int status;         /* isa-debug-exit status once done */
    uint64_t ram_hpa;   /* host-physical base of the VM's RAM */
    uint64_t ram_bytes;
    uint64_t tsc_ratio; /* guest TSC = host * ratio >> 48 + offset */
    uint64_t tsc_offset;
    bool tsc_exiting; /* ratio != 1 without VMX TSC scaling */
    uint32_t guest_tsc_khz;
    uint32_t proc_ctl, proc2_ctl, pin_ctl, entry_ctl;
    uint64_t efer;
    uint64_t msr_star, msr_lstar, msr_cstar, msr_sfmask, msr_kgs;
    uint16_t fw_key;
    uint32_t fw_off;
    char line[160];
    uint32_t line_len;
    struct lapict_timer timer;
    struct lapict_apic apic;
    struct lapict_bm_node node;
    struct hv_ref ref;
    uint8_t timer_vec; /* LVTT vector at the last programming */
    uint64_t exits, deliveries, early, doubled, lost;
    uint64_t late_sum;
    uint64_t grid_arms, off_grid;
    uint32_t last_reason;
    uint64_t last_rip;
    uint32_t stale_before; /* at the start of the guest's write */
    uint64_t arm_in_write; /* a host-timer arm made during a guest write */
    bool armed_in_write;
    /* VMX regions: page aligned. */
    uint8_t *vmcs;      /* 4 KiB */
    uint64_t *ept_pml4; /* 3 pages: PML4, PDPT, one PD (1 GiB) */
};

struct hv_config {
    enum hv_timer_path timer;
    uint32_t advance_mode; /* LAPICT_ADVANCE_OFF or _ADAPTIVE */
    uint32_t vcpus;
    uint32_t tsc_khz;        /* host TSC rate (Bochs: ips / 1000) */
    uint32_t bus_khz;        /* the guests' APIC timer input clock */
    bool half_odd;           /* odd vCPUs see a guest TSC at 0.5x */
    uint32_t advance_max_ns; /* the adaptive advance's bound */
};

/* Lateness samples at entry, host TSC ticks, per LVTT mode (guest.c). */
#define HV_LATE_SAMPLES 16384u
extern uint32_t hv_late[3][HV_LATE_SAMPLES];
extern uint32_t hv_late_n[3];

/* rt.c: output and the C runtime. */
void hv_console_init(void);
/* Move buffered output into the UART; true while some is left. */
bool hv_console_poll(void);
void hv_putc(char c);
void hv_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int hv_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap);
int hv_snprintf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void hv_panic(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
_Noreturn void hv_shutdown(int status);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t hv_strlen(const char *s);

/* cpu.h-like helpers. */
static inline uint64_t hv_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t hv_rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr) : "memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline void hv_wrmsr(uint32_t msr, uint64_t v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v),
                     "d"((uint32_t)(v >> 32))
                     : "memory");
}
static inline void hv_outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port) : "memory");
}
static inline uint8_t hv_inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port) : "memory");
    return v;
}
static inline void hv_cpuid(uint32_t leaf, uint32_t sub, uint32_t *a,
                            uint32_t *b, uint32_t *c, uint32_t *d)
{
    __asm__ volatile("cpuid"
                     : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d)
                     : "a"(leaf), "c"(sub));
}

/* vmx.c */
void hv_vmx_init(void);
void hv_vcpu_setup(struct hv_vcpu *v, uint32_t entry, uint32_t mbi);
/* Run @v until it halts, exits, or its slice ends. */
void hv_vcpu_run(struct hv_vcpu *v, uint64_t slice_end_tsc);
extern bool hv_tsc_scaling;
/* The adapter's write_preempt op: the value for the next VM entry. */
void hv_write_preempt_op(void *ctx, uint32_t ticks);

/* guest.c: the platform a guest sees. */
int hv_guest_load(struct hv_vcpu *v, const uint8_t *image, size_t len,
                  const char *cmdline, const uint8_t *module, size_t module_len,
                  uint32_t *entry);
void hv_vcpu_timer_init(struct hv_vcpu *v);
void hv_exit_cpuid(struct hv_vcpu *v);
/* MSR access: 0 done, -1 inject #GP. */
int hv_exit_rdmsr(struct hv_vcpu *v, uint32_t msr, uint64_t *val);
int hv_exit_wrmsr(struct hv_vcpu *v, uint32_t msr, uint64_t val);
void hv_exit_io(struct hv_vcpu *v, uint16_t port, unsigned size, bool in,
                uint32_t *val);
/* EPT violation at @gpa outside RAM: 0 emulated, -1 fatal. */
int hv_exit_mmio(struct hv_vcpu *v, uint64_t gpa);
/* The guest's TSC now (its node's offset and ratio on the host TSC). */
uint64_t hv_guest_tsc(const struct hv_vcpu *v);
void hv_ref_delivered(struct hv_vcpu *v, uint64_t host_tsc);
void hv_ref_final(struct hv_vcpu *v, uint64_t host_tsc);
void hv_vcpu_output(struct hv_vcpu *v, char c);
void hv_vcpu_flush(struct hv_vcpu *v);

/* config.c: the command line. */
extern struct hv_config hv_cfg;
/* The words after argv[0]; a bad one stops the hypervisor. */
void hv_config_parse(const char *cmdline);

/* pcpu.c: the physical CPU. */
extern struct lapict_bm_clock hv_clock;
extern struct lapict_bm_cpu hv_cpu;
/* The last TSC value the adapter read through its read_tsc op. */
extern uint64_t hv_last_tsc;
/* The IDT, the LAPIC (x2APIC, TSC-deadline timer), the PIC masked. */
void hv_pcpu_init(void);
/* The multiplexer of adapters/baremetal on @hw, with its clock. */
void hv_pcpu_timer_init(const struct lapict_bm_hw *hw);
/* The read_tsc, write_tsc_deadline and eoi ops of struct lapict_bm_hw. */
uint64_t hv_pcpu_read_tsc(void *ctx);
void hv_pcpu_write_deadline(void *ctx, uint64_t tsc);
void hv_pcpu_eoi(void *ctx);
/* A host interrupt, taken in the host or at a VM exit. */
void hv_host_irq(uint8_t vector);

/* sched.c: which vCPU runs. */
extern struct hv_vcpu hv_vcpus[HV_MAX_VCPUS];
void hv_vcpu_wake(struct hv_vcpu *v);
/* Another vCPU has an interrupt waiting: end this vCPU's slice. */
bool hv_resched(void);
/* The next vCPU to run: the first woken one still runnable, else the next
 * runnable one round-robin; NULL when every vCPU is halted or done. */
struct hv_vcpu *hv_sched_next(void);
/* @v runs now (NULL: none); an interrupt for it does not queue it. */
void hv_sched_running(struct hv_vcpu *v);

#endif
