/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's VMX layer: VMX operation, one VMCS per vCPU (EPT, unrestricted
 * guest, MSR bitmap, external-interrupt exiting with acknowledge on exit,
 * the VMX-preemption timer), event injection, and the exit dispatch.
 */
#include "../../tests/guests/common/longmode.h"
#include "../vmm/multiboot.h"
#include "vmcs.h"

/* Exit reasons. */
enum {
    X_NMI = 0,
    X_EXTINT = 1,
    X_TRIPLE = 2,
    X_INTR_WINDOW = 7,
    X_NMI_WINDOW = 8,
    X_CPUID = 10,
    X_HLT = 12,
    X_INVLPG = 14,
    X_RDTSC = 16,
    X_CR = 28,
    X_IO = 30,
    X_RDMSR = 31,
    X_WRMSR = 32,
    X_BAD_GUEST = 33,
    X_BAD_MSR_LOAD = 34,
    X_EPT_VIOLATION = 48,
    X_EPT_MISCONFIG = 49,
    X_RDTSCP = 51,
    X_PREEMPT = 52,
    X_WBINVD = 54,
    X_XSETBV = 55,
};

bool hv_tsc_scaling;
static uint32_t cr4_fixed0, cr4_fixed1;
static uint32_t pin_base, proc_base, proc2_base, exit_base, entry_base;
static uint8_t vmxon_region[4096] __attribute__((aligned(4096)));
static uint8_t msr_bitmap[4096] __attribute__((aligned(4096)));
static uint8_t vmcs_pages[HV_MAX_VCPUS][4096] __attribute__((aligned(4096)));
static uint64_t ept_pages[HV_MAX_VCPUS][3][512] __attribute__((aligned(4096)));
static uint8_t tss[104] __attribute__((aligned(16)));
extern void hv_vmx_exit(void);
int hv_vmx_run(struct hv_gregs *g, int launched);
static struct hv_vcpu *current;

/* The preemption-timer value lapict_bm_guest_entry() asked for. */
static bool preempt_wanted;
static uint32_t preempt_ticks;
static uint64_t preempt_tsc; /* when preempt_ticks was computed */

static uint64_t read_cr0(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr0, %0" : "=r"(v));
    return v;
}
static uint64_t read_cr3(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr3, %0" : "=r"(v));
    return v;
}
static uint64_t read_cr4(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr4, %0" : "=r"(v));
    return v;
}

/* A control word: @want's bits must all be allowed; the required ones are
 * added. Returns the word, or panics naming what is missing. */
static uint32_t adjust(uint32_t msr, uint32_t want, uint32_t optional,
                       const char *what)
{
    uint64_t cap = hv_rdmsr(msr);
    uint32_t must = (uint32_t)cap, may = (uint32_t)(cap >> 32);
    if ((want & may) != want)
        hv_panic("this CPU's VMX lacks %s controls 0x%x (allowed 0x%x)", what,
                 want & ~may, may);
    return (want | (optional & may) | must) & may;
}

void hv_write_preempt_op(void *ctx, uint32_t ticks)
{
    (void)ctx;
    preempt_wanted = true;
    preempt_ticks = ticks;
    /* The adapter computed @ticks from its TSC reading just before. */
    preempt_tsc = hv_last_tsc;
}

void hv_vmx_init(void)
{
    uint32_t a, b, c, d;
    uint64_t basic, fc, ept_cap;
    bool true_ctls;
    uint8_t fail;

    hv_cpuid(1, 0, &a, &b, &c, &d);
    if (!(c & (1u << 5)))
        hv_panic("CPUID.1:ECX.VMX is clear: no VMX on this CPU");
    fc = hv_rdmsr(0x3A);
    if (!(fc & 1))
        hv_wrmsr(0x3A, fc | 1 | 4);
    else if (!(fc & 4))
        hv_panic("IA32_FEATURE_CONTROL is locked with VMX off");
    basic = hv_rdmsr(0x480);
    true_ctls = basic & (1ull << 55);
    hv_cr0_fixed0 = (uint32_t)hv_rdmsr(0x486);
    hv_cr0_fixed1 = (uint32_t)hv_rdmsr(0x487);
    cr4_fixed0 = (uint32_t)hv_rdmsr(0x488);
    cr4_fixed1 = (uint32_t)hv_rdmsr(0x489);
    ept_cap = hv_rdmsr(0x48C);
    if (!(ept_cap & (1ull << 6)) || !(ept_cap & (1ull << 14)) ||
        !(ept_cap & (1ull << 16)))
        hv_panic("EPT lacks 4-level walks, write-back or 2 MiB pages "
                 "(IA32_VMX_EPT_VPID_CAP 0x%lx)",
                 ept_cap);
    if (hv_rdmsr(0x485) & 0x1Fu)
        hv_printf("lapict-hv: VMX-preemption timer rate TSC >> %lu\n",
                  hv_rdmsr(0x485) & 0x1Fu);

    pin_base = adjust(true_ctls ? 0x48D : 0x481,
                      PIN_EXTINT | PIN_NMI_EXIT | PIN_VNMI | PIN_PREEMPT, 0,
                      "pin-based");
    pin_base &= ~PIN_PREEMPT; /* set per entry */
    proc_base =
        adjust(true_ctls ? 0x48E : 0x482,
               PROC_TSC_OFFSET | PROC_HLT | PROC_CR8_LOAD | PROC_CR8_STORE |
                   PROC_IO | PROC_MSR_BITMAP | PROC_SECONDARY,
               0, "processor-based");
    /* Checked here, set per entry. */
    (void)adjust(true_ctls ? 0x48E : 0x482,
                 PROC_INTR_WINDOW | PROC_NMI_WINDOW | PROC_RDTSC, 0,
                 "processor-based");
    proc2_base = adjust(0x48B, PROC2_EPT | PROC2_UNRESTRICTED | PROC2_RDTSCP, 0,
                        "secondary processor-based");
    hv_tsc_scaling = (hv_rdmsr(0x48B) >> 32) & PROC2_TSC_SCALING;
    exit_base = adjust(true_ctls ? 0x48F : 0x483,
                       EXIT_HOST64 | EXIT_ACK_INTR | EXIT_SAVE_PAT |
                           EXIT_LOAD_PAT | EXIT_SAVE_EFER | EXIT_LOAD_EFER,
                       0, "VM-exit");
    entry_base =
        adjust(true_ctls ? 0x490 : 0x484,
               ENTRY_LOAD_PAT | ENTRY_LOAD_EFER | ENTRY_IA32E, 0, "VM-entry");
    entry_base &= ~ENTRY_IA32E;

    /* Intercept every MSR but FS/GS base and TSC_AUX (kept in the VMCS or
     * harmless to share); the syscall MSRs are swapped per vCPU. */
    memset(msr_bitmap, 0xFF, sizeof(msr_bitmap));
    {
        static const uint32_t pass[] = {0xC0000100u, 0xC0000101u, 0xC0000102u,
                                        0xC0000081u, 0xC0000082u, 0xC0000083u,
                                        0xC0000084u, 0xC0000103u};
        for (unsigned i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
            uint32_t bit = pass[i] - 0xC0000000u;
            msr_bitmap[1024 + bit / 8] &= (uint8_t) ~(1u << (bit % 8));
            msr_bitmap[3072 + bit / 8] &= (uint8_t) ~(1u << (bit % 8));
        }
    }

    /* The host TSS (the VMCS needs a usable host TR). */
    {
        uint64_t base = (uint64_t)(uintptr_t)tss;
        tss[102] = sizeof(tss); /* I/O map base: none */
        mb_gdt[3] = (sizeof(tss) - 1) | ((base & 0xFFFFFF) << 16) |
                    (0x89ull << 40) | (((base >> 24) & 0xFF) << 56);
        mb_gdt[4] = base >> 32;
        __asm__ volatile("ltr %w0" ::"r"(0x18));
    }

    __asm__ volatile(
        "mov %0, %%cr0" ::"r"((read_cr0() | hv_cr0_fixed0) &
                              (hv_cr0_fixed1 | 0xFFFFFFFF00000000ull)));
    __asm__ volatile(
        "mov %0, %%cr4" ::"r"((read_cr4() | cr4_fixed0 | (1ull << 13)) &
                              (cr4_fixed1 | 0xFFFFFFFF00000000ull)));
    *(uint32_t *)vmxon_region = (uint32_t)basic & 0x7FFFFFFFu;
    {
        uint64_t pa = (uint64_t)(uintptr_t)vmxon_region;
        __asm__ volatile("vmxon %1; setna %0" : "=q"(fail) : "m"(pa) : "cc");
    }
    if (fail)
        hv_panic("VMXON failed");
}

static void load_vmcs(struct hv_vcpu *v)
{
    uint64_t pa = (uint64_t)(uintptr_t)v->vmcs;
    uint8_t fail;
    if (current == v)
        return;
    __asm__ volatile("vmptrld %1; setna %0" : "=q"(fail) : "m"(pa) : "cc");
    if (fail)
        hv_panic("VMPTRLD of vCPU %u failed", v->index);
    current = v;
}

/* The VMCS of a vCPU that starts as a multiboot loader leaves it. */
void hv_vcpu_setup(struct hv_vcpu *v, uint32_t entry, uint32_t mbi)
{
    uint64_t pa, *pml4, *pdpt, *pd;
    uint8_t fail;
    uint64_t gdtr[2] = {0}, idtr[2] = {0};

    v->vmcs = vmcs_pages[v->index];
    memset(v->vmcs, 0, 4096);
    *(uint32_t *)v->vmcs = (uint32_t)hv_rdmsr(0x480) & 0x7FFFFFFFu;
    pa = (uint64_t)(uintptr_t)v->vmcs;
    __asm__ volatile("vmclear %1; setna %0" : "=q"(fail) : "m"(pa) : "cc");
    if (fail)
        hv_panic("VMCLEAR failed");
    current = NULL;
    load_vmcs(v);

    /* EPT: guest RAM [0, ram_bytes) onto the VM's slice, 2 MiB pages,
     * write-back; everything else is MMIO (EPT violation). */
    pml4 = ept_pages[v->index][0];
    pdpt = ept_pages[v->index][1];
    pd = ept_pages[v->index][2];
    memset(ept_pages[v->index], 0, sizeof(ept_pages[v->index]));
    pml4[0] = (uint64_t)(uintptr_t)pdpt | 7;
    pdpt[0] = (uint64_t)(uintptr_t)pd | 7;
    for (uint64_t off = 0; off < v->ram_bytes; off += 2u << 20)
        pd[off >> 21] = (v->ram_hpa + off) | 7 | (6u << 3) | (1u << 7);
    v->ept_pml4 = pml4;
    hv_vmwrite(EPT_POINTER, (uint64_t)(uintptr_t)pml4 | (3u << 3) | 6u);

    v->pin_ctl = pin_base;
    v->proc_ctl = proc_base | (v->tsc_exiting ? PROC_RDTSC : 0);
    v->proc2_ctl = proc2_base;
    if (v->tsc_ratio != LAPICT_BM_RATIO_ONE && hv_tsc_scaling) {
        v->proc2_ctl |= PROC2_TSC_SCALING;
        hv_vmwrite(TSC_MULTIPLIER, v->tsc_ratio);
    }
    v->entry_ctl = entry_base;
    hv_vmwrite(PIN_CTL, v->pin_ctl);
    hv_vmwrite(PROC_CTL, v->proc_ctl);
    hv_vmwrite(PROC2_CTL, v->proc2_ctl);
    hv_vmwrite(EXIT_CTL, exit_base);
    hv_vmwrite(ENTRY_CTL, v->entry_ctl);
    hv_vmwrite(EXC_BITMAP, 0);
    hv_vmwrite(CR3_TARGETS, 0);
    hv_vmwrite(EXIT_MSR_STORE, 0);
    hv_vmwrite(EXIT_MSR_LOAD, 0);
    hv_vmwrite(ENTRY_MSR_LOAD, 0);
    hv_vmwrite(ENTRY_INTR, 0);
    hv_vmwrite(MSR_BITMAP, (uint64_t)(uintptr_t)msr_bitmap);
    hv_vmwrite(TSC_OFFSET, v->tsc_offset);
    hv_vmwrite(VMCS_LINK, ~0ull);

    /* Host state. */
    __asm__ volatile("sgdt %0" : "=m"(gdtr));
    __asm__ volatile("sidt %0" : "=m"(idtr));
    hv_vmwrite(H_CR0, read_cr0());
    hv_vmwrite(H_CR3, read_cr3());
    hv_vmwrite(H_CR4, read_cr4());
    hv_vmwrite(H_CS_SEL, 0x08);
    hv_vmwrite(H_SS_SEL, 0x10);
    hv_vmwrite(H_DS_SEL, 0x10);
    hv_vmwrite(H_ES_SEL, 0x10);
    hv_vmwrite(H_FS_SEL, 0x10);
    hv_vmwrite(H_GS_SEL, 0x10);
    hv_vmwrite(H_TR_SEL, 0x18);
    hv_vmwrite(H_FS_BASE, 0);
    hv_vmwrite(H_GS_BASE, 0);
    hv_vmwrite(H_TR_BASE, (uint64_t)(uintptr_t)tss);
    hv_vmwrite(H_GDTR_BASE, (gdtr[0] >> 16) | (gdtr[1] << 48));
    hv_vmwrite(H_IDTR_BASE, (idtr[0] >> 16) | (idtr[1] << 48));
    hv_vmwrite(H_SYSENTER_CS, 0);
    hv_vmwrite(H_SYSENTER_ESP, 0);
    hv_vmwrite(H_SYSENTER_EIP, 0);
    hv_vmwrite(H_PAT, hv_rdmsr(0x277));
    hv_vmwrite(H_EFER, hv_rdmsr(0xC0000080u));
    hv_vmwrite(H_RIP, (uint64_t)(uintptr_t)hv_vmx_exit);

    /* Guest state: 32-bit protected mode, flat, paging off. */
    for (unsigned i = 0; i < 6; i++) {
        bool cs = i == 1;
        hv_vmwrite(G_ES_SEL + 2 * i, cs ? 0x08 : 0x10);
        hv_vmwrite(G_ES_BASE + 2 * i, 0);
        hv_vmwrite(G_ES_LIM + 2 * i, 0xFFFFFFFFu);
        hv_vmwrite(G_ES_AR + 2 * i, cs ? 0xC09B : 0xC093);
    }
    hv_vmwrite(G_LDTR_SEL, 0);
    hv_vmwrite(G_ES_BASE + 12, 0);
    hv_vmwrite(G_ES_LIM + 12, 0);
    hv_vmwrite(G_ES_AR + 12, 0x10000);
    hv_vmwrite(G_TR_SEL, 0);
    hv_vmwrite(G_ES_BASE + 14, 0);
    hv_vmwrite(G_ES_LIM + 14, 0x67);
    hv_vmwrite(G_ES_AR + 14, 0x8B);
    hv_vmwrite(G_GDTR_BASE, HV_MB_GDT);
    hv_vmwrite(G_GDTR_LIM, 3 * 8 - 1);
    hv_vmwrite(G_IDTR_BASE, 0);
    hv_vmwrite(G_IDTR_LIM, 0x3FF);
    hv_vmwrite(CR0_MASK, ~0ull);
    hv_vmwrite(CR4_MASK, ~0ull);
    hv_vmwrite(G_CR3, 0);
    hv_guest_set_cr0(v, 0x11);
    hv_vmwrite(CR4_SHADOW, 0);
    hv_vmwrite(G_CR4, (cr4_fixed0 | (1u << 13)) & cr4_fixed1);
    hv_vmwrite(G_DR7, 0x400);
    hv_vmwrite(G_RSP, 0);
    hv_vmwrite(G_RIP, entry);
    hv_vmwrite(G_RFLAGS, 0x2);
    hv_vmwrite(G_PENDING_DBG, 0);
    hv_vmwrite(G_SYSENTER_CS, 0);
    hv_vmwrite(G_SYSENTER_ESP, 0);
    hv_vmwrite(G_SYSENTER_EIP, 0);
    hv_vmwrite(G_DEBUGCTL, 0);
    hv_vmwrite(G_PAT, 0x0007040600070406ull);
    v->efer = 0;
    hv_vmwrite(G_EFER, 0);
    hv_vmwrite(G_INTR_STATE, 0);
    hv_vmwrite(G_ACTIVITY, 0);
    hv_vmwrite(G_PREEMPT, 0);
    memset(&v->g, 0, sizeof(v->g));
    v->g.rax = MB_BOOT_MAGIC;
    v->g.rbx = mbi;
}

/* Past the instruction that exited (VM-exit instruction length). */
static void skip(struct hv_vcpu *v)
{
    hv_guest_skip(v, hv_vmread(EXIT_LEN));
}

static void inject_gp(void)
{
    hv_vmwrite(ENTRY_INTR, INTR_VALID | INTR_TYPE_HW_EXC | INTR_HAS_ERR | 13);
    hv_vmwrite(ENTRY_ERR, 0);
}

static void exit_cr(struct hv_vcpu *v, uint64_t q)
{
    unsigned cr = q & 15, type = (q >> 4) & 3, reg = (q >> 8) & 15;
    if (type == 0) { /* MOV to CR */
        uint64_t val = hv_greg_read(v, reg);
        switch (cr) {
        case 0:
            hv_guest_set_cr0(v, val);
            break;
        case 3:
            hv_vmwrite(G_CR3, val);
            break;
        case 4:
            hv_vmwrite(CR4_SHADOW, val);
            hv_vmwrite(G_CR4, ((val | cr4_fixed0 | (1u << 13)) & cr4_fixed1));
            break;
        case 8:
            lapict_apic_set_tpr(&v->apic, (uint32_t)(val & 15) << 4);
            break;
        default:
            hv_panic("vCPU %u: MOV to CR%u", v->index, cr);
        }
    } else if (type == 1) { /* MOV from CR */
        uint64_t val;
        if (cr == 3)
            val = hv_vmread(G_CR3);
        else if (cr == 8)
            val = lapict_apic_tpr(&v->apic) >> 4;
        else
            hv_panic("vCPU %u: MOV from CR%u", v->index, cr);
        hv_greg_write(v, reg, val);
    } else if (type == 2) { /* CLTS */
        hv_guest_set_cr0(v, hv_vmread(CR0_SHADOW) & ~8ull);
    } else { /* LMSW */
        uint64_t cr0 = hv_vmread(CR0_SHADOW);
        hv_guest_set_cr0(v, (cr0 & ~0xEull) | ((q >> 16) & 0xF) | (cr0 & 1));
    }
    skip(v);
}

/* Decide this entry's event: re-inject one cut short by the exit, else an
 * NMI, else the highest deliverable interrupt; open a window otherwise. */
static void prepare_events(struct hv_vcpu *v, uint32_t reinject,
                           uint32_t reinject_err, uint32_t reinject_len)
{
    uint64_t st = hv_vmread(G_INTR_STATE);
    uint64_t rflags = hv_vmread(G_RFLAGS);
    uint32_t proc = v->proc_ctl & ~(PROC_INTR_WINDOW | PROC_NMI_WINDOW);
    bool busy = hv_vmread(ENTRY_INTR) & INTR_VALID;
    int vec;

    if (!busy && (reinject & INTR_VALID)) {
        hv_vmwrite(ENTRY_INTR, reinject & ~(1u << 12));
        if (reinject & INTR_HAS_ERR)
            hv_vmwrite(ENTRY_ERR, reinject_err);
        hv_vmwrite(ENTRY_LEN, reinject_len);
        busy = true;
    }
    if (v->nmi_pending) {
        if (!busy && !(st & (STATE_NMI | STATE_STI | STATE_MOVSS))) {
            hv_vmwrite(ENTRY_INTR, INTR_VALID | INTR_TYPE_NMI | 2);
            v->nmi_pending = false;
            busy = true;
        } else {
            proc |= PROC_NMI_WINDOW;
        }
    }
    vec = lapict_apic_deliverable(&v->apic);
    if (vec >= 0) {
        if (!busy && (rflags & RFLAGS_IF) &&
            !(st & (STATE_STI | STATE_MOVSS))) {
            hv_vmwrite(ENTRY_INTR, INTR_VALID | INTR_TYPE_EXT | (uint32_t)vec);
            lapict_apic_ack(&v->apic, (uint8_t)vec);
            if (vec == v->timer_vec)
                v->ref_pending = true;
            /* The IRR has room again for an interrupt the timer holds. */
            if (v->timer_refused) {
                v->timer_refused = false;
                lapict_irq_window_open(&v->timer);
            }
        } else {
            proc |= PROC_INTR_WINDOW;
        }
    }
    if (proc != v->proc_ctl) {
        v->proc_ctl = proc;
        hv_vmwrite(PROC_CTL, proc);
    }
}

static void swap_syscall_msrs(struct hv_vcpu *v, bool in)
{
    static struct hv_vcpu *loaded;
    if (in && loaded != v) {
        hv_wrmsr(0xC0000081u, v->msr_star);
        hv_wrmsr(0xC0000082u, v->msr_lstar);
        hv_wrmsr(0xC0000083u, v->msr_cstar);
        hv_wrmsr(0xC0000084u, v->msr_sfmask);
        hv_wrmsr(0xC0000102u, v->msr_kgs);
        loaded = v;
    } else if (!in && loaded == v) {
        v->msr_star = hv_rdmsr(0xC0000081u);
        v->msr_lstar = hv_rdmsr(0xC0000082u);
        v->msr_cstar = hv_rdmsr(0xC0000083u);
        v->msr_sfmask = hv_rdmsr(0xC0000084u);
        v->msr_kgs = hv_rdmsr(0xC0000102u);
    }
}

void hv_vcpu_run(struct hv_vcpu *v, uint64_t slice_end_tsc)
{
    uint32_t reinject = 0, reinject_err = 0, reinject_len = 0;

    load_vmcs(v);
    swap_syscall_msrs(v, true);
    while (!v->done && !v->halted) {
        uint64_t now, reason, q;
        uint32_t pin, shift = hv_cpu.preempt_shift;
        uint64_t value = 0;
        bool slice_timer = false, bm_timer;

        prepare_events(v, reinject, reinject_err, reinject_len);
        reinject = 0;
        /*
         * An interrupt injected ahead of its instant (the advance) waits
         * here until the instant; lapict then services that expiry and
         * arms the next, so the preemption timer is loaded after it.
         */
        lapict_before_guest_entry(&v->timer);
        if (v->ref_pending && hv_cfg.timer == HV_TIMER_LAPIC)
            /* The physical timer of the serviced expiry may be pending:
             * taken here, not as an exit right after the entry. */
            __asm__ volatile("sti; nop; cli" ::: "memory");
        preempt_wanted = false;
        lapict_bm_guest_entry(&hv_cpu);
        now = hv_rdtsc();
        bm_timer = preempt_wanted;
        if (bm_timer) {
            value = preempt_ticks;
        } else {
            preempt_tsc = now;
        }
        if (slice_end_tsc) {
            uint64_t left = slice_end_tsc > now ? slice_end_tsc - now : 0;
            left >>= shift;
            if (left > 0xFFFFFFFFull)
                left = 0xFFFFFFFFull;
            if (!bm_timer || left < value) {
                value = left;
                slice_timer = true;
            }
        }
        pin = v->pin_ctl & ~PIN_PREEMPT;
        if (bm_timer || slice_timer) {
            /* The timer counts from the entry: the path from where the
             * value was computed comes off (an exit that comes early
             * finds nothing due and loads the timer again). */
            uint64_t spent = (hv_rdtsc() - preempt_tsc) >> shift;
            pin |= PIN_PREEMPT;
            hv_vmwrite(G_PREEMPT, value > spent ? value - spent : 0);
        }
        if (pin != v->pin_ctl) {
            v->pin_ctl = pin;
            hv_vmwrite(PIN_CTL, pin);
        }
        if (v->ref_pending) {
            v->ref_pending = false;
            hv_ref_delivered(v, hv_rdtsc());
        }
        if (hv_vmx_run(&v->g, v->launched))
            hv_panic("vCPU %u: VM entry failed, VM-instruction error %lu",
                     v->index, hv_vmread(VM_ERROR));
        v->launched = true;
        v->exits++;
        hv_console_poll();
        reason = hv_vmread(EXIT_REASON);
        v->last_reason = (uint32_t)reason;
        v->last_rip = hv_vmread(G_RIP);
        q = hv_vmread(EXIT_QUAL);
        {
            uint32_t idt = (uint32_t)hv_vmread(IDT_INFO);
            if (idt & INTR_VALID) {
                reinject = idt;
                reinject_err = (uint32_t)hv_vmread(IDT_ERR);
                reinject_len = (uint32_t)hv_vmread(EXIT_LEN);
            }
        }
        if (reason & (1u << 31))
            hv_panic("vCPU %u: VM entry failed, exit reason %lu "
                     "(qualification 0x%lx)",
                     v->index, reason & 0xFFFF, q);
        switch (reason & 0xFFFF) {
        case X_EXTINT: {
            uint32_t info = (uint32_t)hv_vmread(EXIT_INTR);
            if (info & INTR_VALID)
                hv_host_irq((uint8_t)info);
            break;
        }
        case X_NMI:
            break; /* a physical NMI (NMI exiting goes with virtual NMIs) */
        case X_TRIPLE:
            hv_printf("lapict-hv: vCPU %u: triple fault at rip 0x%lx\n",
                      v->index, hv_vmread(G_RIP));
            v->done = true;
            v->status = 126;
            break;
        case X_INTR_WINDOW:
        case X_NMI_WINDOW:
            break; /* prepare_events() injects now */
        case X_CPUID:
            hv_exit_cpuid(v);
            skip(v);
            break;
        case X_HLT:
            skip(v);
            if (v->nmi_pending || ((hv_vmread(G_RFLAGS) & RFLAGS_IF) &&
                                   lapict_apic_deliverable(&v->apic) >= 0))
                break;
            v->halted = true;
            break;
        case X_RDTSC:
        case X_RDTSCP: {
            uint64_t t = hv_guest_tsc(v);
            v->g.rax = (uint32_t)t;
            v->g.rdx = t >> 32;
            if ((reason & 0xFFFF) == X_RDTSCP)
                v->g.rcx = (uint32_t)hv_rdmsr(0xC0000103u);
            skip(v);
            break;
        }
        case X_CR:
            exit_cr(v, q);
            break;
        case X_IO: {
            unsigned size = (unsigned)(q & 7) + 1;
            bool in = q & 8;
            uint32_t val = (uint32_t)v->g.rax;
            if (q & 16)
                hv_panic("vCPU %u: string I/O at port 0x%lx", v->index,
                         q >> 16);
            hv_exit_io(v, (uint16_t)(q >> 16), size, in, &val);
            if (in) {
                uint64_t mask =
                    size == 4 ? 0xFFFFFFFFull : ((1ull << (8 * size)) - 1);
                v->g.rax =
                    size == 4 ? val : ((v->g.rax & ~mask) | (val & mask));
            }
            skip(v);
            break;
        }
        case X_RDMSR: {
            uint64_t val = 0;
            if (hv_exit_rdmsr(v, (uint32_t)v->g.rcx, &val)) {
                inject_gp();
                break;
            }
            v->g.rax = (uint32_t)val;
            v->g.rdx = val >> 32;
            skip(v);
            break;
        }
        case X_WRMSR:
            if (hv_exit_wrmsr(v, (uint32_t)v->g.rcx,
                              ((v->g.rdx & 0xFFFFFFFFull) << 32) |
                                  (uint32_t)v->g.rax)) {
                inject_gp();
                break;
            }
            skip(v);
            break;
        case X_EPT_VIOLATION:
            if (hv_exit_mmio(v, hv_vmread(GUEST_PHYS)))
                hv_panic("vCPU %u: EPT violation at 0x%lx (rip 0x%lx)",
                         v->index, hv_vmread(GUEST_PHYS), hv_vmread(G_RIP));
            break;
        case X_PREEMPT:
            /* The timer held the earlier of the adapter's deadline and the
             * end of the slice. */
            if (!slice_timer)
                lapict_bm_preempt_exit(&hv_cpu);
            else
                goto out;
            break;
        case X_INVLPG:
        case X_WBINVD:
            skip(v);
            break;
        default:
            hv_panic("vCPU %u: unhandled exit reason %lu, qualification "
                     "0x%lx, rip 0x%lx",
                     v->index, reason & 0xFFFF, q, hv_vmread(G_RIP));
        }
        if (slice_end_tsc && (hv_resched() || hv_rdtsc() >= slice_end_tsc))
            break;
    }
out:
    if (reinject & INTR_VALID) {
        /* Keep the cut-short event for the next entry. */
        hv_vmwrite(ENTRY_INTR, reinject & ~(1u << 12));
        if (reinject & INTR_HAS_ERR)
            hv_vmwrite(ENTRY_ERR, reinject_err);
        hv_vmwrite(ENTRY_LEN, reinject_len);
    }
    swap_syscall_msrs(v, false);
}
