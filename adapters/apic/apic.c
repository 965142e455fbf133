/* SPDX-License-Identifier: MIT */
/*
 * The portable local-APIC model (lapict_apic.h): register file, xAPIC
 * MMIO and x2APIC MSR decoding, IRR/ISR/PPR, IPIs (this APIC's part here,
 * the rest to the host's ipi op). Timer registers go to the core through
 * its public access helpers. No KVM, no OS, no C library: freestanding
 * like lib/, so that a bare-metal hypervisor links it; outside the core
 * it needs only the mem* functions the compiler emits calls to.
 */
#include "lapict_apic.h"

/* xAPIC offsets of the registers outside the timer. */
enum {
    R_ID = 0x20,
    R_VER = 0x30,
    R_TPR = 0x80,
    R_APR = 0x90,
    R_PPR = 0xA0,
    R_EOI = 0xB0,
    R_RRD = 0xC0,
    R_LDR = 0xD0,
    R_DFR = 0xE0,
    R_SVR = 0xF0,
    R_ISR = 0x100,
    R_TMR = 0x180,
    R_IRR = 0x200,
    R_ESR = 0x280,
    R_CMCI = 0x2F0,
    R_ICR = 0x300,
    R_ICR2 = 0x310,
    R_THERM = 0x330,
    R_PERF = 0x340,
    R_LINT0 = 0x350,
    R_LINT1 = 0x360,
    R_LVTERR = 0x370,
    R_SELF = 0x3F0,
};

#define LVT_MASK 0x10000u
#define SVR_ENABLE 0x100u

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

bool lapict_apic_x2apic(const struct lapict_apic *a)
{
    return (a->apic_base & (LAPICT_APIC_BASE_EN | LAPICT_APIC_BASE_EXTD)) ==
           (LAPICT_APIC_BASE_EN | LAPICT_APIC_BASE_EXTD);
}

static bool hw_enabled(const struct lapict_apic *a)
{
    return a->apic_base & LAPICT_APIC_BASE_EN;
}

uint32_t lapict_apic_tpr(const struct lapict_apic *a)
{
    return a->tpr;
}

void lapict_apic_set_tpr(struct lapict_apic *a, uint32_t tpr)
{
    a->tpr = tpr & 0xFFu;
}

static uint32_t ppr(const struct lapict_apic *a)
{
    int isrv = highest(a->isr);
    uint32_t isrc = isrv < 0 ? 0 : (uint32_t)isrv & 0xF0u;
    return (a->tpr & 0xF0u) >= isrc ? a->tpr & 0xFFu : isrc;
}

static void reset(struct lapict_apic *a)
{
    __builtin_memset(a->irr, 0, sizeof(a->irr));
    __builtin_memset(a->isr, 0, sizeof(a->isr));
    a->tpr = 0;
    a->ldr = 0;
    a->dfr = 0xFFFFFFFFu;
    a->svr = 0xFFu;
    a->esr = a->esr_pending = 0;
    a->icr_lo = a->icr_hi = 0;
    a->lvt_cmci = a->lvt_thermal = a->lvt_perf = LVT_MASK;
    a->lvt_lint0 = a->lvt_lint1 = a->lvt_err = LVT_MASK;
    lapict_reset(a->timer);
    /* SVR resets to software-disabled. */
    lapict_svr_write(a->timer, false);
}

int lapict_apic_init(struct lapict_apic *a, struct lapict_timer *timer,
                     const struct lapict_apic_ops *ops, void *ctx)
{
    static const struct lapict_apic_ops none = {.version =
                                                    LAPICT_APIC_OPS_VERSION};

    if (!a || !timer)
        return LAPICT_E_INVAL;
    if (ops && ops->version < 1)
        return LAPICT_E_OPS;
    __builtin_memset(a, 0, sizeof(*a));
    a->timer = timer;
    a->ops = ops ? ops : &none;
    a->ctx = ctx;
    a->apic_base =
        LAPICT_APIC_BASE_DEFAULT | LAPICT_APIC_BASE_EN | LAPICT_APIC_BASE_BSP;
    reset(a);
    return LAPICT_OK;
}

void lapict_apic_error(struct lapict_apic *a, uint32_t bits)
{
    a->esr_pending |= bits & 0xEFu;
}

bool lapict_apic_set_irq(struct lapict_apic *a, uint8_t vector)
{
    if (vector < 16) {
        /* "Error Handling": the receiver flags an illegal vector. */
        a->esr_pending |= LAPICT_APIC_ESR_RECV_ILLEGAL;
        return false;
    }
    if (test_bit(a->irr, vector))
        return false;
    set_bit(a->irr, vector);
    return true;
}

static void eoi(struct lapict_apic *a)
{
    int v = highest(a->isr);
    a->st.eois++;
    if (v >= 0)
        clear_bit(a->isr, (unsigned)v);
    if (a->ops->eoi)
        a->ops->eoi(a->ctx);
}

static uint32_t x2apic_ldr(uint32_t id)
{
    return ((id >> 4) << 16) | (1u << (id & 0xFu));
}

bool lapict_apic_dest_match(const struct lapict_apic *a, bool logical,
                            uint32_t dest)
{
    if (lapict_apic_x2apic(a)) {
        if (dest == 0xFFFFFFFFu)
            return true; /* broadcast */
        if (!logical)
            return dest == a->id;
        /* Cluster in 31:16, one bit per member in 15:0. */
        return (dest >> 16) == (x2apic_ldr(a->id) >> 16) &&
               (dest & x2apic_ldr(a->id) & 0xFFFFu);
    }
    dest &= 0xFFu;
    if (dest == 0xFFu)
        return true; /* physical or logical broadcast */
    if (!logical)
        return dest == a->id;
    if ((a->dfr >> 28) == 0xFu) /* flat model: a bit mask of APICs */
        return dest & (a->ldr >> 24);
    /* Cluster model: cluster in 7:4, members in 3:0. */
    return (dest >> 4) == (a->ldr >> 28) && (dest & (a->ldr >> 24) & 0xFu);
}

/*
 * Does the destination name this APIC and certainly no other? A physical
 * ID that is this APIC's, or its own x2APIC logical ID, which derives from
 * the unique x2APIC ID. An xAPIC logical destination never qualifies:
 * software writes the LDRs, and two APICs may share bits.
 */
static bool dest_only_self(const struct lapict_apic *a,
                           const struct lapict_apic_ipi *ipi)
{
    if (ipi->shorthand != LAPICT_APIC_SH_NONE)
        return ipi->shorthand == LAPICT_APIC_SH_SELF;
    if (ipi->x2apic)
        return ipi->logical ? ipi->dest == x2apic_ldr(a->id)
                            : ipi->dest == a->id && ipi->dest != 0xFFFFFFFFu;
    return !ipi->logical && ipi->dest == a->id && ipi->dest != 0xFFu;
}

/*
 * An ICR write: this APIC's own part here, the rest to the ipi op (the
 * header's description has the rules). Return: LAPICT_OK or the first
 * error of the nmi and ipi ops (the IPI is sent either way).
 */
static int send_ipi(struct lapict_apic *a, uint32_t lo, uint32_t dest)
{
    struct lapict_apic_ipi ipi = {
        .dest = lapict_apic_x2apic(a) ? dest : dest & 0xFFu,
        .vector = (uint8_t)lo,
        .mode = (uint8_t)((lo >> 8) & 7u),
        .shorthand = (uint8_t)((lo >> 18) & 3u),
        .logical = lo & 0x800u,
        .level = lo & 0x4000u,
        .trigger_level = lo & 0x8000u,
        .x2apic = lapict_apic_x2apic(a),
    };
    /* A table of version 1 ends before the ipi op. */
    bool routed = a->ops->version >= 2 && a->ops->ipi;
    bool here = ipi.shorthand == LAPICT_APIC_SH_SELF ||
                ipi.shorthand == LAPICT_APIC_SH_ALL ||
                (ipi.shorthand == LAPICT_APIC_SH_NONE &&
                 lapict_apic_dest_match(a, ipi.logical, ipi.dest));
    bool only_here = dest_only_self(a, &ipi);
    int rc = LAPICT_OK, rc2;

    switch (ipi.mode) {
    case LAPICT_APIC_DM_LOWEST:
        /* One APIC of the destination takes it: with others named, the
         * VMM arbitrates. Alone, this APIC is the only candidate. */
        if (routed && !only_here)
            break;
        /* fall through */
    case LAPICT_APIC_DM_FIXED:
        if (here) {
            lapict_apic_set_irq(a, ipi.vector);
            ipi.delivered_here = true;
        }
        break;
    case LAPICT_APIC_DM_NMI:
        if (here) {
            a->st.nmis++;
            ipi.delivered_here = true;
            if (a->ops->nmi)
                rc = a->ops->nmi(a->ctx);
        }
        break;
    default:
        /* SMI, INIT, start-up, reserved: the VMM acts on them, for this
         * APIC as for any other. */
        only_here = false;
        break;
    }
    if (only_here)
        return rc;
    if (!routed) {
        a->st.ipis_unrouted++;
        return rc;
    }
    a->st.ipis_routed++;
    rc2 = a->ops->ipi(a->ctx, &ipi);
    return rc < 0 ? rc : rc2;
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

static uint32_t *lvt_reg(struct lapict_apic *a, uint32_t reg)
{
    switch (reg) {
    case R_CMCI:
        return &a->lvt_cmci;
    case R_THERM:
        return &a->lvt_thermal;
    case R_PERF:
        return &a->lvt_perf;
    case R_LINT0:
        return &a->lvt_lint0;
    case R_LINT1:
        return &a->lvt_lint1;
    case R_LVTERR:
        return &a->lvt_err;
    default:
        return NULL;
    }
}

/* Register read by xAPIC offset (16-byte aligned); x2 selects x2APIC ids. */
static uint32_t reg_read(struct lapict_apic *a, uint32_t reg, bool x2)
{
    uint32_t v = 0, *lvt;

    if (lapict_xapic_read(a->timer, reg, &v) == LAPICT_OK)
        return v;
    if ((lvt = lvt_reg(a, reg)))
        return *lvt;
    if (reg >= R_ISR && reg < R_TMR)
        return a->isr[(reg - R_ISR) >> 4];
    if (reg >= R_IRR && reg < R_ESR)
        return a->irr[(reg - R_IRR) >> 4];
    switch (reg) {
    case R_ID:
        return x2 ? a->id : a->id << 24;
    case R_VER:
        return LAPICT_APIC_VERSION;
    case R_TPR:
        return a->tpr;
    case R_PPR:
        return ppr(a);
    case R_LDR:
        return x2 ? x2apic_ldr(a->id) : a->ldr;
    case R_DFR:
        return a->dfr;
    case R_SVR:
        return a->svr;
    case R_ESR:
        return a->esr;
    case R_ICR:
        return a->icr_lo & ~0x1000u; /* never busy */
    case R_ICR2:
        return a->icr_hi;
    default:
        return 0; /* APR, RRD, TMR, reserved */
    }
}

static void svr_write(struct lapict_apic *a, uint32_t val)
{
    bool en = val & SVR_ENABLE;

    a->svr = val & 0x13FFu;
    if (!en) {
        /* Software disable masks every LVT ("Spurious-Interrupt Vector"). */
        a->lvt_cmci |= LVT_MASK;
        a->lvt_thermal |= LVT_MASK;
        a->lvt_perf |= LVT_MASK;
        a->lvt_lint0 |= LVT_MASK;
        a->lvt_lint1 |= LVT_MASK;
        a->lvt_err |= LVT_MASK;
    }
    lapict_svr_write(a->timer, en);
}

/* Return: LAPICT_OK or an ops error (the write is done either way). */
static int reg_write(struct lapict_apic *a, uint32_t reg, uint32_t val)
{
    uint32_t *lvt;

    if (lapict_xapic_write(a->timer, reg, val) != LAPICT_E_NOREG)
        return LAPICT_OK;
    if ((lvt = lvt_reg(a, reg))) {
        *lvt = val & lvt_bits(reg);
        if (!(a->svr & SVR_ENABLE))
            *lvt |= LVT_MASK;
        return LAPICT_OK;
    }
    switch (reg) {
    case R_ID:
        a->id = val >> 24;
        break;
    case R_TPR:
        a->tpr = val & 0xFFu;
        break;
    case R_EOI:
        eoi(a);
        break;
    case R_LDR:
        a->ldr = val & 0xFF000000u;
        break;
    case R_DFR:
        a->dfr = val | 0x0FFFFFFFu;
        break;
    case R_SVR:
        svr_write(a, val);
        break;
    case R_ESR:
        a->esr = a->esr_pending;
        a->esr_pending = 0;
        break;
    case R_ICR:
        a->icr_lo = val & 0x000CCFFFu;
        return send_ipi(a, val, a->icr_hi >> 24);
    case R_ICR2:
        a->icr_hi = val & 0xFF000000u;
        break;
    default:
        break; /* read-only or reserved: ignored, as on hardware */
    }
    return LAPICT_OK;
}

int lapict_apic_mmio(struct lapict_apic *a, uint64_t gpa, uint8_t *data,
                     uint32_t len, bool write)
{
    uint64_t base = a->apic_base & ~0xFFFull;
    uint32_t off, v, sh;

    if (gpa < base || gpa - base >= 4096 || len == 0 || len > 8)
        return LAPICT_E_NOREG;
    a->st.mmio++;
    off = (uint32_t)(gpa - base);
    /* Disabled or x2APIC mode: the page reads all-ones, writes dropped. */
    if (!hw_enabled(a) || lapict_apic_x2apic(a)) {
        if (!write)
            __builtin_memset(data, 0xFF, len);
        return LAPICT_OK;
    }
    /* Registers are 32 bits at 16-byte strides; other bytes read 0. */
    sh = (off & 3u) * 8u;
    if (!write) {
        uint64_t out = 0;
        if ((off & 0xFu) < 4u)
            out = reg_read(a, off & ~0xFu, false) >> sh;
        if (len < 8)
            out &= (1ull << (len * 8u)) - 1u;
        __builtin_memcpy(data, &out, len);
        return LAPICT_OK;
    }
    if ((off & 0xFu) != 0)
        return LAPICT_OK; /* unaligned or partial writes are dropped */
    v = 0;
    __builtin_memcpy(&v, data, len < 4 ? len : 4);
    return reg_write(a, off, v);
}

static bool x2_readable(uint32_t reg)
{
    switch (reg) {
    case R_APR:
    case R_EOI:
    case R_RRD:
    case R_DFR:
    case R_SELF:
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

int lapict_apic_rdmsr(struct lapict_apic *a, uint32_t msr, uint64_t *val)
{
    uint32_t reg;
    int rc;

    a->st.rdmsr++;
    if (msr == LAPICT_APIC_MSR_BASE) {
        *val = a->apic_base;
        return LAPICT_OK;
    }
    if (msr == LAPICT_MSR_TSC_DEADLINE && !hw_enabled(a)) {
        *val = 0; /* no timer while the APIC is off (as KVM) */
        return LAPICT_OK;
    }
    if (msr == LAPICT_MSR_TSC_DEADLINE)
        return lapict_msr_read(a->timer, msr, val);
    if (msr < 0x800 || msr > 0x8FF)
        return LAPICT_E_NOREG;
    if (!lapict_apic_x2apic(a))
        return LAPICT_E_GP;
    reg = (msr - 0x800u) << 4;
    if (!x2_readable(reg))
        return LAPICT_E_GP;
    rc = lapict_msr_read(a->timer, msr, val);
    if (rc != LAPICT_E_NOREG)
        return rc;
    *val = reg_read(a, reg, true);
    if (reg == R_ICR)
        *val |= (uint64_t)a->icr_hi << 32;
    return LAPICT_OK;
}

static int apic_base_write(struct lapict_apic *a, uint64_t val)
{
    uint64_t old = a->apic_base;
    bool en = val & LAPICT_APIC_BASE_EN;
    bool x2 = val & LAPICT_APIC_BASE_EXTD;
    unsigned bits = a->maxphyaddr ? a->maxphyaddr : 36;
    uint64_t reserved = 0x2FFull | (bits < 64 ? ~0ull << bits : 0);

    /* Reserved: 7:0, 9, at and above MAXPHYADDR, and EXTD without x2APIC
     * in CPUID ("Local APIC Status and Location"). */
    if (a->x2apic_absent)
        reserved |= LAPICT_APIC_BASE_EXTD;
    if (val & reserved)
        return LAPICT_E_GP;
    if (x2 && !en)
        return LAPICT_E_GP; /* x2APIC without enable is invalid */
    /* "x2APIC State Transitions": x2APIC -> xAPIC must go through off. */
    if ((old & LAPICT_APIC_BASE_EXTD) && (old & LAPICT_APIC_BASE_EN) && en &&
        !x2)
        return LAPICT_E_GP;
    if (!(old & LAPICT_APIC_BASE_EN) && en && x2)
        return LAPICT_E_GP; /* off -> x2APIC must go through xAPIC */
    a->apic_base =
        (val & ~(uint64_t)LAPICT_APIC_BASE_BSP) | (old & LAPICT_APIC_BASE_BSP);
    if ((old & LAPICT_APIC_BASE_EN) && !en)
        reset(a);
    /* The host mirrors it (KVM: so that CPUID.1:EDX.APIC follows EN). */
    if (a->apic_base != old && a->ops->base_changed)
        return a->ops->base_changed(a->ctx, a->apic_base);
    return LAPICT_OK;
}

void lapict_apic_set_cpuid(struct lapict_apic *a, bool x2apic,
                           uint8_t maxphyaddr)
{
    a->x2apic_absent = !x2apic;
    a->maxphyaddr = maxphyaddr >= 32 && maxphyaddr <= 52 ? maxphyaddr : 0;
}

int lapict_apic_wrmsr(struct lapict_apic *a, uint32_t msr, uint64_t val)
{
    uint32_t reg;
    int rc;

    a->st.wrmsr++;
    if (msr == LAPICT_APIC_MSR_BASE)
        return apic_base_write(a, val);
    if (msr == LAPICT_MSR_TSC_DEADLINE && !hw_enabled(a))
        return LAPICT_OK; /* dropped while the APIC is off */
    if (msr == LAPICT_MSR_TSC_DEADLINE)
        return lapict_msr_write(a->timer, msr, val);
    if (msr < 0x800 || msr > 0x8FF)
        return LAPICT_E_NOREG;
    if (!lapict_apic_x2apic(a))
        return LAPICT_E_GP;
    reg = (msr - 0x800u) << 4;
    rc = lapict_msr_write(a->timer, msr, val);
    if (rc != LAPICT_E_NOREG)
        return rc;
    if (reg == R_ICR) {
        a->icr_hi = (uint32_t)(val >> 32);
        a->icr_lo = (uint32_t)val & 0x000CCFFFu;
        return send_ipi(a, (uint32_t)val, a->icr_hi);
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
        return reg_write(a, reg, (uint32_t)val);
    case R_EOI:
    case R_ESR:
        if (val)
            return LAPICT_E_GP;
        return reg_write(a, reg, 0);
    case R_SELF:
        if (val & ~0xFFull)
            return LAPICT_E_GP;
        lapict_apic_set_irq(a, (uint8_t)val);
        return LAPICT_OK;
    default:
        return LAPICT_E_GP; /* read-only or not an x2APIC register */
    }
}

int lapict_apic_deliverable(const struct lapict_apic *a)
{
    int v = highest(a->irr);
    return v >= 0 && ((uint32_t)v & 0xF0u) > (ppr(a) & 0xF0u) ? v : -1;
}

void lapict_apic_ack(struct lapict_apic *a, uint8_t vector)
{
    clear_bit(a->irr, vector);
    set_bit(a->isr, vector);
}

bool lapict_apic_irr_pending(const struct lapict_apic *a)
{
    return highest(a->irr) >= 0;
}

bool lapict_apic_irr_test(const struct lapict_apic *a, uint8_t vector)
{
    return test_bit(a->irr, vector);
}

/* --- save and restore ---------------------------------------------------- */

enum {
    S_MAGIC = 0,
    S_VERSION = 4,
    S_SIZE = 6,
    S_BASE = 8,
    S_ID = 16,
    S_TPR = 20,
    S_LDR = 24,
    S_DFR = 28,
    S_SVR = 32,
    S_ESR = 36,
    S_ESRP = 40,
    S_ICRLO = 44,
    S_ICRHI = 48,
    S_LVT = 52,
    S_IRR = 76,
    S_ISR = 108,
    S_RSVD = 140,
    S_CRC = 156,
};

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* CRC-32 (IEEE, reflected); a blob is saved once per migration. */
static uint32_t crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* The LVTs in blob order, with their xAPIC offsets. */
static const uint32_t lvt_offs[6] = {R_CMCI,  R_THERM, R_PERF,
                                     R_LINT0, R_LINT1, R_LVTERR};

int lapict_apic_save(const struct lapict_apic *a, void *buf, size_t len)
{
    uint8_t *b = buf;

    if (!a || !buf)
        return LAPICT_E_INVAL;
    if (len < LAPICT_APIC_STATE_SIZE)
        return LAPICT_E_STATE_SIZE;
    const uint32_t regs[9] = {a->id,          a->tpr,    a->ldr,
                              a->dfr,         a->svr,    a->esr,
                              a->esr_pending, a->icr_lo, a->icr_hi};
    __builtin_memset(b, 0, LAPICT_APIC_STATE_SIZE);
    put32(b + S_MAGIC, LAPICT_APIC_STATE_MAGIC);
    b[S_VERSION] = (uint8_t)LAPICT_APIC_STATE_VERSION;
    b[S_SIZE] = (uint8_t)LAPICT_APIC_STATE_SIZE;
    put32(b + S_BASE, (uint32_t)a->apic_base);
    put32(b + S_BASE + 4, (uint32_t)(a->apic_base >> 32));
    for (int i = 0; i < 9; i++)
        put32(b + S_ID + 4 * i, regs[i]);
    const uint32_t lvts[6] = {a->lvt_cmci,  a->lvt_thermal, a->lvt_perf,
                              a->lvt_lint0, a->lvt_lint1,   a->lvt_err};
    for (int i = 0; i < 6; i++)
        put32(b + S_LVT + 4 * i, lvts[i]);
    for (int i = 0; i < 8; i++) {
        put32(b + S_IRR + 4 * i, a->irr[i]);
        put32(b + S_ISR + 4 * i, a->isr[i]);
    }
    put32(b + S_CRC, crc32(b, S_CRC));
    return LAPICT_OK;
}

/* Validate @b into @n (a copy of @a); LAPICT_OK or a LAPICT_E_STATE_*. */
static int state_parse(const struct lapict_apic *a, const uint8_t *b,
                       size_t len, struct lapict_apic *n)
{
    unsigned bits = a->maxphyaddr ? a->maxphyaddr : 36;
    uint64_t reserved = 0x2FFull | (bits < 64 ? ~0ull << bits : 0);
    uint64_t base;
    bool en, x2;

    if (len != LAPICT_APIC_STATE_SIZE)
        return LAPICT_E_STATE_SIZE;
    if (get32(b + S_MAGIC) != LAPICT_APIC_STATE_MAGIC)
        return LAPICT_E_STATE_MAGIC;
    if ((b[S_VERSION] | b[S_VERSION + 1] << 8) != LAPICT_APIC_STATE_VERSION)
        return LAPICT_E_STATE_VERSION;
    if ((b[S_SIZE] | b[S_SIZE + 1] << 8) != LAPICT_APIC_STATE_SIZE)
        return LAPICT_E_STATE_SIZE;
    if (get32(b + S_CRC) != crc32(b, S_CRC))
        return LAPICT_E_STATE_CHECKSUM;
    for (unsigned i = S_RSVD; i < S_CRC; i++)
        if (b[i])
            return LAPICT_E_STATE_FIELD;
    *n = *a;
    base = get32(b + S_BASE) | (uint64_t)get32(b + S_BASE + 4) << 32;
    en = base & LAPICT_APIC_BASE_EN;
    x2 = base & LAPICT_APIC_BASE_EXTD;
    /* The rules of an IA32_APIC_BASE write, for this CPU model. */
    if (a->x2apic_absent)
        reserved |= LAPICT_APIC_BASE_EXTD;
    if ((base & reserved) || (x2 && !en))
        return LAPICT_E_STATE_FIELD;
    /* Which CPU is the BSP is the machine's, not the guest's. */
    if ((base ^ a->apic_base) & LAPICT_APIC_BASE_BSP)
        return LAPICT_E_STATE_CONFIG;
    n->apic_base = base;
    n->id = get32(b + S_ID);
    n->tpr = get32(b + S_TPR);
    n->ldr = get32(b + S_LDR);
    n->dfr = get32(b + S_DFR);
    n->svr = get32(b + S_SVR);
    n->esr = get32(b + S_ESR);
    n->esr_pending = get32(b + S_ESRP);
    n->icr_lo = get32(b + S_ICRLO);
    n->icr_hi = get32(b + S_ICRHI);
    /* Only values the register writes can leave. */
    if (n->id > 0xFFu || n->tpr > 0xFFu || (n->ldr & 0x00FFFFFFu) ||
        (n->dfr & 0x0FFFFFFFu) != 0x0FFFFFFFu || (n->svr & ~0x13FFu) ||
        (n->esr & ~0xEFu) || (n->esr_pending & ~0xEFu) ||
        (n->icr_lo & ~0x000CCFFFu))
        return LAPICT_E_STATE_FIELD;
    if (!(en && x2) && (n->icr_hi & 0x00FFFFFFu))
        return LAPICT_E_STATE_FIELD; /* xAPIC ICR2: destination 31:24 */
    for (int i = 0; i < 6; i++) {
        uint32_t v = get32(b + S_LVT + 4 * i);
        if ((v & ~lvt_bits(lvt_offs[i])) ||
            (!(n->svr & SVR_ENABLE) && !(v & LVT_MASK)))
            return LAPICT_E_STATE_FIELD;
        *lvt_reg(n, lvt_offs[i]) = v;
    }
    for (int i = 0; i < 8; i++) {
        n->irr[i] = get32(b + S_IRR + 4 * i);
        n->isr[i] = get32(b + S_ISR + 4 * i);
    }
    /* Vectors 0-15 are never accepted ("Error Handling"). */
    if ((n->irr[0] | n->isr[0]) & 0xFFFFu)
        return LAPICT_E_STATE_FIELD;
    return LAPICT_OK;
}

int lapict_apic_state_check(const struct lapict_apic *a, const void *buf,
                            size_t len)
{
    struct lapict_apic n;

    if (!a || !buf)
        return LAPICT_E_INVAL;
    return state_parse(a, buf, len, &n);
}

int lapict_apic_restore(struct lapict_apic *a, const void *buf, size_t len)
{
    struct lapict_apic n;
    uint64_t old;
    int rc;

    if (!a || !buf)
        return LAPICT_E_INVAL;
    if ((rc = state_parse(a, buf, len, &n)) < 0)
        return rc;
    old = a->apic_base;
    *a = n;
    if (a->apic_base != old && a->ops->base_changed)
        return a->ops->base_changed(a->ctx, a->apic_base);
    return LAPICT_OK;
}
