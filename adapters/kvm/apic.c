/* SPDX-License-Identifier: MIT */
/*
 * The userspace local APIC around the lapict timer: register file, xAPIC
 * MMIO and x2APIC MSR decoding, IRR/ISR/PPR and delivery with
 * KVM_INTERRUPT. Timer registers go to the core through its access helpers.
 */
#include "kvm_internal.h"

#include <errno.h>
#include <string.h>

/* xAPIC offsets of the registers outside the timer. */
enum {
    R_ID = 0x20, R_VER = 0x30, R_TPR = 0x80, R_APR = 0x90, R_PPR = 0xA0,
    R_EOI = 0xB0, R_RRD = 0xC0, R_LDR = 0xD0, R_DFR = 0xE0, R_SVR = 0xF0,
    R_ISR = 0x100, R_TMR = 0x180, R_IRR = 0x200, R_ESR = 0x280,
    R_CMCI = 0x2F0, R_ICR = 0x300, R_ICR2 = 0x310, R_THERM = 0x330,
    R_PERF = 0x340, R_LINT0 = 0x350, R_LINT1 = 0x360, R_LVTERR = 0x370,
    R_SELF = 0x3F0,
};

#define LVT_MASK 0x10000u
#define SVR_ENABLE 0x100u

static int exit_of(struct lapict_kvm *k);

static int highest(const uint32_t *v)
{
    for (int i = 7; i >= 0; i--)
        if (v[i])
            return i * 32 + 31 - __builtin_clz(v[i]);
    return -1;
}

static bool test_bit(const uint32_t *v, unsigned n)
{
    return v[n >> 5] & (1u << (n & 31));
}

static void set_bit(uint32_t *v, unsigned n)
{
    v[n >> 5] |= 1u << (n & 31);
}

static void clear_bit(uint32_t *v, unsigned n)
{
    v[n >> 5] &= ~(1u << (n & 31));
}

bool lapict_kvm__x2apic(const struct lapict_kvm *k)
{
    return (k->apic_base & (LAPICT_KVM_APIC_BASE_EN |
                            LAPICT_KVM_APIC_BASE_EXTD)) ==
           (LAPICT_KVM_APIC_BASE_EN | LAPICT_KVM_APIC_BASE_EXTD);
}

static bool hw_enabled(const struct lapict_kvm *k)
{
    return k->apic_base & LAPICT_KVM_APIC_BASE_EN;
}

void lapict_kvm__sync_tpr(struct lapict_kvm *k)
{
    /* The guest may have written CR8 (TPR bits 7:4) since the last exit. */
    if (k->run && (k->run->cr8 & 0xF) != (k->tpr >> 4))
        k->tpr = (uint32_t)(k->run->cr8 & 0xF) << 4;
}

static uint32_t ppr(const struct lapict_kvm *k)
{
    int isrv = highest(k->isr);
    uint32_t isrc = isrv < 0 ? 0 : (uint32_t)isrv & 0xF0u;
    return (k->tpr & 0xF0u) >= isrc ? k->tpr & 0xFFu : isrc;
}

void lapict_kvm__reset(struct lapict_kvm *k)
{
    memset(k->irr, 0, sizeof(k->irr));
    memset(k->isr, 0, sizeof(k->isr));
    k->tpr = 0;
    k->ldr = 0;
    k->dfr = 0xFFFFFFFFu;
    k->svr = 0xFFu;
    k->esr = k->esr_pending = 0;
    k->icr_lo = k->icr_hi = 0;
    k->lvt_cmci = k->lvt_thermal = k->lvt_perf = LVT_MASK;
    k->lvt_lint0 = k->lvt_lint1 = k->lvt_err = LVT_MASK;
    k->timer_refused = false;
    lapict_reset(&k->timer);
    /* SVR resets to software-disabled. */
    lapict_svr_write(&k->timer, false);
    if (k->run)
        k->run->cr8 = 0;
}

bool lapict_kvm_set_irq(struct lapict_kvm *k, uint8_t vector)
{
    if (vector < 16) {
        k->esr_pending |= 0x40u; /* received illegal vector */
        return false;
    }
    if (test_bit(k->irr, vector))
        return false;
    set_bit(k->irr, vector);
    return true;
}

static void eoi(struct lapict_kvm *k)
{
    int v = highest(k->isr);
    k->st.eois++;
    if (v >= 0)
        clear_bit(k->isr, (unsigned)v);
    lapict_kvm__window(k);
}

void lapict_kvm__window(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    if (k->timer_refused && r->if_flag && r->ready_for_interrupt_injection) {
        k->timer_refused = false;
        lapict_irq_window_open(&k->timer);
    }
}

static uint32_t x2apic_ldr(uint32_t id)
{
    return ((id >> 4) << 16) | (1u << (id & 0xFu));
}

/* Does an ICR destination (no shorthand) name this APIC? */
static bool ipi_targets_self(const struct lapict_kvm *k, uint32_t lo,
                             uint32_t dest)
{
    bool x2 = lapict_kvm__x2apic(k), logical = lo & 0x800u;

    if (x2) {
        if (dest == 0xFFFFFFFFu)
            return true; /* broadcast */
        if (!logical)
            return dest == k->id;
        /* Cluster in 31:16, one bit per member in 15:0. */
        return (dest >> 16) == (x2apic_ldr(k->id) >> 16) &&
               (dest & x2apic_ldr(k->id) & 0xFFFFu);
    }
    dest &= 0xFFu;
    if (dest == 0xFFu)
        return true; /* physical or logical broadcast */
    if (!logical)
        return dest == k->id;
    if ((k->dfr >> 28) == 0xFu) /* flat model: a bit mask of APICs */
        return dest & (k->ldr >> 24);
    /* Cluster model: cluster in 7:4, members in 3:0. */
    return (dest >> 4) == (k->ldr >> 28) && (dest & (k->ldr >> 24) & 0xFu);
}

static void self_ipi(struct lapict_kvm *k, uint32_t lo, uint32_t dest)
{
    uint32_t mode = (lo >> 8) & 7u, shorthand = (lo >> 18) & 3u;
    bool self = shorthand == 1 || shorthand == 2 ||
                (shorthand == 0 && ipi_targets_self(k, lo, dest));

    /* One vCPU: only what reaches this APIC matters. */
    if (!self)
        return;
    switch (mode) {
    case 0: /* fixed */
    case 1: /* lowest priority: this APIC is the only candidate */
        lapict_kvm_set_irq(k, (uint8_t)lo);
        break;
    case 4: /* NMI: KVM queues it (and collapses it while one is blocked) */
        if (k->sys->ioctl(k->vcpu_fd, KVM_NMI, NULL) < 0)
            lapict_kvm__sys_fail(k, "KVM_NMI"); /* handle_exit reports it */
        else
            k->nmis++;
        break;
    default:
        break; /* SMI, INIT, SIPI: no other CPU, not modelled */
    }
}

static uint32_t lvt_bits(uint32_t reg)
{
    switch (reg) {
    case R_LINT0:
    case R_LINT1:
        return 0x1A7FFu; /* vector, mode, polarity, trigger, mask */
    case R_LVTERR:
        return 0x100FFu;
    default:
        return 0x107FFu; /* vector, mode, mask */
    }
}

static uint32_t *lvt_reg(struct lapict_kvm *k, uint32_t reg)
{
    switch (reg) {
    case R_CMCI: return &k->lvt_cmci;
    case R_THERM: return &k->lvt_thermal;
    case R_PERF: return &k->lvt_perf;
    case R_LINT0: return &k->lvt_lint0;
    case R_LINT1: return &k->lvt_lint1;
    case R_LVTERR: return &k->lvt_err;
    default: return NULL;
    }
}

/* Register read by xAPIC offset (16-byte aligned); x2 selects x2APIC ids. */
static uint32_t reg_read(struct lapict_kvm *k, uint32_t reg, bool x2)
{
    uint32_t v = 0, *lvt;

    if (lapict_xapic_read(&k->timer, reg, &v) == LAPICT_OK)
        return v;
    if ((lvt = lvt_reg(k, reg)))
        return *lvt;
    if (reg >= R_ISR && reg < R_TMR)
        return k->isr[(reg - R_ISR) >> 4];
    if (reg >= R_IRR && reg < R_ESR)
        return k->irr[(reg - R_IRR) >> 4];
    switch (reg) {
    case R_ID: return x2 ? k->id : k->id << 24;
    case R_VER: return LAPICT_KVM_APIC_VERSION;
    case R_TPR: return k->tpr;
    case R_PPR: return ppr(k);
    case R_LDR: return x2 ? x2apic_ldr(k->id) : k->ldr;
    case R_DFR: return k->dfr;
    case R_SVR: return k->svr;
    case R_ESR: return k->esr;
    case R_ICR: return k->icr_lo & ~0x1000u; /* never busy */
    case R_ICR2: return k->icr_hi;
    default: return 0; /* APR, RRD, TMR, reserved */
    }
}

static void svr_write(struct lapict_kvm *k, uint32_t val)
{
    bool en = val & SVR_ENABLE;

    k->svr = val & 0x13FFu;
    if (!en) {
        /* Software disable masks every LVT ("Spurious-Interrupt Vector"). */
        k->lvt_cmci |= LVT_MASK;
        k->lvt_thermal |= LVT_MASK;
        k->lvt_perf |= LVT_MASK;
        k->lvt_lint0 |= LVT_MASK;
        k->lvt_lint1 |= LVT_MASK;
        k->lvt_err |= LVT_MASK;
    }
    lapict_svr_write(&k->timer, en);
}

static void reg_write(struct lapict_kvm *k, uint32_t reg, uint32_t val)
{
    uint32_t *lvt;

    if (lapict_xapic_write(&k->timer, reg, val) != LAPICT_E_NOREG)
        return;
    if ((lvt = lvt_reg(k, reg))) {
        *lvt = val & lvt_bits(reg);
        if (!(k->svr & SVR_ENABLE))
            *lvt |= LVT_MASK;
        return;
    }
    switch (reg) {
    case R_ID:
        k->id = val >> 24;
        break;
    case R_TPR:
        k->tpr = val & 0xFFu;
        if (k->run)
            k->run->cr8 = k->tpr >> 4;
        break;
    case R_EOI:
        eoi(k);
        break;
    case R_LDR:
        k->ldr = val & 0xFF000000u;
        break;
    case R_DFR:
        k->dfr = val | 0x0FFFFFFFu;
        break;
    case R_SVR:
        svr_write(k, val);
        break;
    case R_ESR:
        k->esr = k->esr_pending;
        k->esr_pending = 0;
        break;
    case R_ICR:
        k->icr_lo = val & 0x000CCFFFu;
        self_ipi(k, val, k->icr_hi >> 24);
        break;
    case R_ICR2:
        k->icr_hi = val & 0xFF000000u;
        break;
    default:
        break; /* read-only or reserved: ignored, as on hardware */
    }
}

bool lapict_kvm_mmio(struct lapict_kvm *k, uint64_t gpa, uint8_t *data,
                     uint32_t len, bool write)
{
    uint64_t base = k->apic_base & ~0xFFFull;
    uint32_t off, v, sh;

    if (gpa < base || gpa - base >= 4096 || len == 0 || len > 8)
        return false;
    k->st.mmio++;
    off = (uint32_t)(gpa - base);
    /* Disabled or x2APIC mode: the page reads all-ones, writes dropped. */
    if (!hw_enabled(k) || lapict_kvm__x2apic(k)) {
        if (!write)
            memset(data, 0xFF, len);
        return true;
    }
    /* Registers are 32 bits at 16-byte strides; other bytes read 0. */
    sh = (off & 3u) * 8u;
    if (!write) {
        uint64_t out = 0;
        if ((off & 0xFu) < 4u)
            out = reg_read(k, off & ~0xFu, false) >> sh;
        if (len < 8)
            out &= (1ull << (len * 8u)) - 1u;
        memcpy(data, &out, len);
        return true;
    }
    if ((off & 0xFu) != 0)
        return true; /* unaligned or partial writes are dropped */
    v = 0;
    memcpy(&v, data, len < 4 ? len : 4);
    reg_write(k, off, v);
    return true;
}

static bool x2_readable(uint32_t reg)
{
    switch (reg) {
    case R_APR: case R_EOI: case R_RRD: case R_DFR: case R_SELF:
        return false;
    default:
        break;
    }
    if (reg == R_ID || reg == R_VER || reg == R_TPR || reg == R_PPR ||
        reg == R_LDR || reg == R_SVR || reg == R_ESR || reg == R_CMCI ||
        reg == R_ICR || (reg >= R_ISR && reg < R_ESR) ||
        (reg >= 0x320 && reg <= 0x390) || reg == 0x3E0)
        return true;
    return false;
}

int lapict_kvm_rdmsr(struct lapict_kvm *k, uint32_t msr, uint64_t *val)
{
    uint32_t reg;
    int rc;

    k->st.rdmsr++;
    if (msr == LAPICT_KVM_MSR_APIC_BASE) {
        *val = k->apic_base;
        return LAPICT_OK;
    }
    if (msr == LAPICT_MSR_TSC_DEADLINE && !hw_enabled(k)) {
        *val = 0; /* no timer while the APIC is off (as KVM) */
        return LAPICT_OK;
    }
    if (msr == LAPICT_MSR_TSC_DEADLINE)
        return lapict_msr_read(&k->timer, msr, val);
    if (msr < 0x800 || msr > 0x8FF)
        return LAPICT_E_NOREG;
    if (!lapict_kvm__x2apic(k))
        return LAPICT_E_GP;
    reg = (msr - 0x800u) << 4;
    if (!x2_readable(reg))
        return LAPICT_E_GP;
    rc = lapict_msr_read(&k->timer, msr, val);
    if (rc != LAPICT_E_NOREG)
        return rc;
    *val = reg_read(k, reg, true);
    if (reg == R_ICR)
        *val |= (uint64_t)k->icr_hi << 32;
    return LAPICT_OK;
}

/* Tell KVM, so that CPUID.1:EDX.APIC follows the enable bit. */
static void apic_base_mirror(struct lapict_kvm *k)
{
    union {
        struct kvm_msrs h;
        uint8_t raw[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
    } m;
    struct kvm_msr_entry e = {.index = LAPICT_KVM_MSR_APIC_BASE,
                              .data = k->apic_base};

    memset(&m, 0, sizeof(m));
    m.h.nmsrs = 1;
    memcpy(m.raw + sizeof(m.h), &e, sizeof(e));
    if (k->sys->ioctl(k->vcpu_fd, KVM_SET_MSRS, &m) != 1)
        lapict_kvm__sys_fail(k, "KVM_SET_MSRS"); /* reported by the exit */
}

static int apic_base_write(struct lapict_kvm *k, uint64_t val)
{
    uint64_t old = k->apic_base;
    bool en = val & LAPICT_KVM_APIC_BASE_EN;
    bool x2 = val & LAPICT_KVM_APIC_BASE_EXTD;
    unsigned bits = k->maxphyaddr ? k->maxphyaddr : 36;
    uint64_t reserved = 0x2FFull | (bits < 64 ? ~0ull << bits : 0);

    /* Reserved: 7:0, 9, at and above MAXPHYADDR, and EXTD without x2APIC
     * in CPUID ("Local APIC Status and Location"). */
    if (k->x2apic_absent)
        reserved |= LAPICT_KVM_APIC_BASE_EXTD;
    if (val & reserved)
        return LAPICT_E_GP;
    if (x2 && !en)
        return LAPICT_E_GP; /* x2APIC without enable is invalid */
    /* "x2APIC State Transitions": x2APIC -> xAPIC must go through off. */
    if ((old & LAPICT_KVM_APIC_BASE_EXTD) && (old & LAPICT_KVM_APIC_BASE_EN) &&
        en && !x2)
        return LAPICT_E_GP;
    if (!(old & LAPICT_KVM_APIC_BASE_EN) && en && x2)
        return LAPICT_E_GP; /* off -> x2APIC must go through xAPIC */
    k->apic_base = (val & ~(uint64_t)LAPICT_KVM_APIC_BASE_BSP) |
                   (old & LAPICT_KVM_APIC_BASE_BSP);
    if ((old & LAPICT_KVM_APIC_BASE_EN) && !en)
        lapict_kvm__reset(k);
    if (k->apic_base != old)
        apic_base_mirror(k);
    return LAPICT_OK;
}

void lapict_kvm_set_cpuid(struct lapict_kvm *k,
                          const struct kvm_cpuid2 *cpuid)
{
    k->x2apic_absent = true;
    for (uint32_t i = 0; i < cpuid->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
        if (e->function == 1)
            k->x2apic_absent = !(e->ecx & (1u << 21));
        if (e->function == 0x80000008u && (e->eax & 0xFFu) >= 32 &&
            (e->eax & 0xFFu) <= 52)
            k->maxphyaddr = (uint8_t)(e->eax & 0xFFu);
    }
}

int lapict_kvm_wrmsr(struct lapict_kvm *k, uint32_t msr, uint64_t val)
{
    uint32_t reg;
    int rc;

    k->st.wrmsr++;
    if (msr == LAPICT_KVM_MSR_APIC_BASE)
        return apic_base_write(k, val);
    if (msr == LAPICT_MSR_TSC_DEADLINE && !hw_enabled(k))
        return LAPICT_OK; /* dropped while the APIC is off */
    if (msr == LAPICT_MSR_TSC_DEADLINE)
        return lapict_msr_write(&k->timer, msr, val);
    if (msr < 0x800 || msr > 0x8FF)
        return LAPICT_E_NOREG;
    if (!lapict_kvm__x2apic(k))
        return LAPICT_E_GP;
    reg = (msr - 0x800u) << 4;
    rc = lapict_msr_write(&k->timer, msr, val);
    if (rc != LAPICT_E_NOREG)
        return rc;
    if (reg == R_ICR) {
        k->icr_hi = (uint32_t)(val >> 32);
        k->icr_lo = (uint32_t)val & 0x000CCFFFu;
        self_ipi(k, (uint32_t)val, k->icr_hi);
        return LAPICT_OK;
    }
    if (val >> 32)
        return LAPICT_E_GP;
    switch (reg) {
    case R_TPR:
    case R_SVR:
    case R_CMCI:
    case R_THERM:
    case R_PERF:
    case R_LINT0:
    case R_LINT1:
    case R_LVTERR:
        reg_write(k, reg, (uint32_t)val);
        return LAPICT_OK;
    case R_EOI:
    case R_ESR:
        if (val)
            return LAPICT_E_GP;
        reg_write(k, reg, 0);
        return LAPICT_OK;
    case R_SELF:
        if (val & ~0xFFull)
            return LAPICT_E_GP;
        lapict_kvm_set_irq(k, (uint8_t)val);
        return LAPICT_OK;
    default:
        return LAPICT_E_GP; /* read-only or not an x2APIC register */
    }
}

int lapict_kvm_handle_exit(struct lapict_kvm *k)
{
    int rc = exit_of(k);

    /* A host call the exit made failed (KVM_SET_MSRS, KVM_NMI, a timer):
     * the guest's access is done, the VMM hears of the failure. */
    if (rc == LAPICT_KVM_MINE && (rc = lapict_kvm__take_error(k)) == 0)
        return LAPICT_KVM_MINE;
    return rc;
}

static int exit_of(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    uint64_t v = 0;
    int rc;

    switch (r->exit_reason) {
    case KVM_EXIT_MMIO:
        return lapict_kvm_mmio(k, r->mmio.phys_addr, r->mmio.data,
                               r->mmio.len, r->mmio.is_write)
                   ? LAPICT_KVM_MINE
                   : LAPICT_KVM_NOT_MINE;
    case KVM_EXIT_X86_RDMSR:
        rc = lapict_kvm_rdmsr(k, r->msr.index, &v);
        /* Another device's MSR (the VM exits on every MSR KVM does not
         * know, for the x2APIC range): the VMM's to complete. */
        if (rc == LAPICT_E_NOREG)
            return LAPICT_KVM_NOT_MINE;
        r->msr.error = rc == LAPICT_OK ? 0 : 1;
        r->msr.data = rc == LAPICT_OK ? v : 0;
        if (rc != LAPICT_OK)
            k->st.gp++;
        return LAPICT_KVM_MINE;
    case KVM_EXIT_X86_WRMSR:
        rc = lapict_kvm_wrmsr(k, r->msr.index, r->msr.data);
        if (rc == LAPICT_E_NOREG)
            return LAPICT_KVM_NOT_MINE;
        r->msr.error = rc == LAPICT_OK ? 0 : 1;
        if (rc != LAPICT_OK)
            k->st.gp++;
        return LAPICT_KVM_MINE;
    case KVM_EXIT_IRQ_WINDOW_OPEN:
        k->st.window_exits++;
        return LAPICT_KVM_MINE;
    case KVM_EXIT_INTR:
        return LAPICT_KVM_MINE;
    default:
        return LAPICT_KVM_NOT_MINE;
    }
}

bool lapict_kvm__can_deliver(struct lapict_kvm *k)
{
    int v = highest(k->irr);
    return v >= 0 && ((uint32_t)v & 0xF0u) > (ppr(k) & 0xF0u);
}

int lapict_kvm_deliver(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    int v;

    lapict_kvm__sync_tpr(k);
    if (k->injected || !lapict_kvm__can_deliver(k)) {
        /* An interrupt blocked by TPR/ISR waits for EOI or a TPR write. */
        r->request_interrupt_window =
            (k->injected && highest(k->irr) >= 0) || k->timer_refused;
        return -1;
    }
    v = highest(k->irr);
    if (!r->ready_for_interrupt_injection || !r->if_flag) {
        r->request_interrupt_window = 1;
        k->st.window_requests++;
        return -1;
    }
    if (lapict_kvm__inject_irq(k, v) < 0) {
        r->request_interrupt_window = 1;
        return -1;
    }
    clear_bit(k->irr, (unsigned)v);
    set_bit(k->isr, (unsigned)v);
    k->injected = true;
    k->st.interrupts++;
    r->request_interrupt_window = highest(k->irr) >= 0 || k->timer_refused;
    return v;
}
