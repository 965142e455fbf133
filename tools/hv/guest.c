/* SPDX-License-Identifier: MIT */
/*
 * The platform a lapict-hv guest sees: a multiboot v1 boot (kvm-unit-tests'
 * convention, as lapict-vmm loads it), CPUID, the MSRs, COM1, QEMU's
 * isa-debug-exit port and a minimal fw_cfg, the xAPIC page (instructions
 * decoded at EPT violations) and x2APIC MSRs through lapict's APIC model,
 * and the hypervisor's own check of every timer interrupt it delivers.
 */
#include "../vmm/multiboot.h"
#include "vmcs.h"

#define COM1 0x3F8u
#define DEBUG_EXIT 0xF4u
#define FW_CFG_SEL 0x510u
#define FW_CFG_DATA 0x511u

/* --- boot ---------------------------------------------------------------- */

static uint8_t *gpa(const struct hv_vcpu *v, uint64_t addr)
{
    return (uint8_t *)(uintptr_t)(v->ram_hpa + addr);
}

int hv_guest_load(struct hv_vcpu *v, const uint8_t *image, size_t len,
                  const char *cmdline, const uint8_t *module, size_t module_len,
                  uint32_t *entry)
{
    struct elf32_ehdr eh;
    struct mb_info mbi;
    uint64_t load_end = 0;
    size_t clen = hv_strlen(cmdline);

    if (mb_header_find(image, len) < 0) {
        hv_printf("lapict-hv: guest: no multiboot v1 header\n");
        return -1;
    }
    if (len < sizeof(eh)) {
        hv_printf("lapict-hv: guest: not an ELF file\n");
        return -1;
    }
    memcpy(&eh, image, sizeof(eh));
    if (memcmp(eh.ident, "\177ELF", 4) || eh.ident[4] != 1 ||
        eh.machine != EM_386 || eh.type != ET_EXEC) {
        hv_printf("lapict-hv: guest: not an ELF32 EM_386 executable\n");
        return -1;
    }
    if (eh.phentsize != sizeof(struct elf32_phdr) || eh.phnum == 0 ||
        eh.phoff > len ||
        (uint64_t)eh.phnum * sizeof(struct elf32_phdr) > len - eh.phoff) {
        hv_printf("lapict-hv: guest: bad program header table\n");
        return -1;
    }
    memset(gpa(v, 0), 0, v->ram_bytes);
    for (uint32_t i = 0; i < eh.phnum; i++) {
        struct elf32_phdr ph;
        memcpy(&ph, image + eh.phoff + i * sizeof(ph), sizeof(ph));
        if (ph.type != PT_LOAD || ph.memsz == 0)
            continue;
        if (ph.filesz > ph.memsz || ph.offset > len ||
            ph.filesz > len - ph.offset || ph.paddr < HV_MB_LOW_END ||
            (uint64_t)ph.paddr + ph.memsz > v->ram_bytes) {
            hv_printf("lapict-hv: guest: segment %u outside RAM above "
                      "1 MiB\n",
                      i);
            return -1;
        }
        memcpy(gpa(v, ph.paddr), image + ph.offset, ph.filesz);
        if ((uint64_t)ph.paddr + ph.memsz > load_end)
            load_end = (uint64_t)ph.paddr + ph.memsz;
    }
    if (!load_end || eh.entry < HV_MB_LOW_END || eh.entry >= load_end) {
        hv_printf("lapict-hv: guest: entry point outside the image\n");
        return -1;
    }
    if (clen >= HV_MB_CMDLINE_MAX || module_len > HV_MB_MODULE_MAX) {
        hv_printf("lapict-hv: guest: command line or module too long\n");
        return -1;
    }
    memset(&mbi, 0, sizeof(mbi));
    mbi.flags = MBI_MEM | MBI_CMDLINE;
    mbi.mem_lower = 640;
    mbi.mem_upper = (uint32_t)((v->ram_bytes - (1u << 20)) >> 10);
    mbi.cmdline = HV_MB_CMDLINE;
    memcpy(gpa(v, HV_MB_CMDLINE), cmdline, clen + 1);
    if (module) {
        struct mb_module m = {HV_MB_MODULE, HV_MB_MODULE + (uint32_t)module_len,
                              0, 0};
        memcpy(gpa(v, HV_MB_MODULE), module, module_len);
        memcpy(gpa(v, HV_MB_MODS), &m, sizeof(m));
        mbi.flags |= MBI_MODS;
        mbi.mods_count = 1;
        mbi.mods_addr = HV_MB_MODS;
    }
    memcpy(gpa(v, HV_MB_INFO), &mbi, sizeof(mbi));
    {
        static const uint64_t gdt[3] = {0, 0x00CF9B000000FFFFull,
                                        0x00CF93000000FFFFull};
        memcpy(gpa(v, HV_MB_GDT), gdt, sizeof(gdt));
    }
    *entry = eh.entry;
    return 0;
}

/* --- the timer ----------------------------------------------------------- */

/* The now_ns reading lapict takes during a register write: the anchor of a
 * count-down, for the hypervisor's own account. */
static uint64_t (*bm_now_ns)(void *ctx);
static uint64_t captured_ns;
static bool capturing, captured;

static uint64_t now_capture(void *ctx)
{
    uint64_t t = bm_now_ns(ctx);
    if (capturing && !captured) {
        captured_ns = t;
        captured = true;
    }
    return t;
}

static bool op_inject(void *node, uint8_t vector)
{
    struct hv_vcpu *v = lapict_bm_node_user(node);
    /* Refused while its IRR bit is set: the core holds it until
     * lapict_irq_window_open(), called when the guest takes the vector. */
    if (!lapict_apic_set_irq(&v->apic, vector)) {
        v->timer_refused = true;
        return false;
    }
    v->timer_vec = vector;
    hv_vcpu_wake(v);
    return true;
}

static void op_report(void *node, int status, uint32_t detail)
{
    struct hv_vcpu *v = lapict_bm_node_user(node);
    if (status == LAPICT_E_VECTOR)
        lapict_apic_error(&v->apic, LAPICT_APIC_ESR_RECV_ILLEGAL);
    else
        hv_printf("lapict-hv: vCPU %u: lapict reports %d (detail 0x%x)\n",
                  v->index, status, detail);
}

static int apic_nmi(void *ctx)
{
    struct hv_vcpu *v = ctx;
    v->nmi_pending = true;
    hv_vcpu_wake(v);
    return LAPICT_OK;
}

static const struct lapict_apic_ops apic_ops = {
    .version = 1,
    .nmi = apic_nmi,
};

static struct lapict_ops ops_preempt, ops_lapic;
static void (*bm_sw_arm)(void *ctx, uint64_t host_ns);
static bool (*bm_hv_arm)(void *ctx, uint64_t host_ns);

/* Every host-timer arm of a count-down, with the advance off, must be an
 * instant of the grid anchor + k x period the guest programmed: lapict's
 * expiries never drift from it, however many periods pass. */
static void check_arm(struct hv_vcpu *v, uint64_t host_ns)
{
    struct hv_ref *r = &v->ref;
    uint64_t d = host_ns - r->anchor_ns;
    if (capturing) {
        /* Inside a register write: checked against what it programs. */
        v->arm_in_write = host_ns;
        v->armed_in_write = true;
        return;
    }
    if (hv_cfg.advance_mode != LAPICT_ADVANCE_OFF || r->unknown ||
        !(r->armed || r->periodic) || r->mode == 2 || !r->period_ns)
        return;
    v->grid_arms++;
    if ((int64_t)d <= 0 || d % r->period_ns ||
        (r->armed && d != r->period_ns)) {
        /* An instant that passed between lapict's clock readings is armed
         * for that moment: the host timer fires at once, and the expiry
         * keeps its instant on the grid. */
        if ((int64_t)d >= (int64_t)r->period_ns &&
            (int64_t)(host_ns - lapict_bm_now_ns(&hv_cpu)) <= 0)
            return;
        v->off_grid++;
        hv_printf("lapict-hv: vCPU %u: timer armed %ld ns off the grid "
                  "(anchor %lu, period %lu ns)\n",
                  v->index, (int64_t)(d % r->period_ns), r->anchor_ns,
                  r->period_ns);
    }
}

static void sw_arm(void *node, uint64_t host_ns)
{
    check_arm(lapict_bm_node_user(node), host_ns);
    bm_sw_arm(node, host_ns);
}

static bool hv_arm(void *node, uint64_t host_ns)
{
    check_arm(lapict_bm_node_user(node), host_ns);
    return bm_hv_arm(node, host_ns);
}

void hv_vcpu_timer_init(struct hv_vcpu *v)
{
    struct lapict_config c;
    uint32_t a, b, cx, d;
    int rc;

    if (!ops_preempt.version) {
        lapict_bm_ops_fill_preempt(&ops_preempt, op_inject, op_report);
        lapict_bm_ops_fill(&ops_lapic, op_inject, op_report);
        bm_now_ns = ops_lapic.now_ns;
        bm_sw_arm = ops_lapic.sw_timer_arm;
        bm_hv_arm = ops_preempt.hv_timer_arm;
        ops_preempt.now_ns = now_capture;
        ops_lapic.now_ns = now_capture;
        ops_preempt.sw_timer_arm = sw_arm;
        ops_lapic.sw_timer_arm = sw_arm;
        ops_preempt.hv_timer_arm = hv_arm;
    }
    rc = lapict_bm_node_init(&v->node, &hv_cpu, &v->timer, v->tsc_ratio,
                             v->tsc_offset, v);
    if (rc)
        hv_panic("vCPU %u: lapict_bm_node_init: %d", v->index, rc);
    lapict_config_default(&c);
    c.tsc_deadline = true;
    c.tsc_khz = v->guest_tsc_khz;
    c.bus_hz = (uint64_t)hv_cfg.bus_khz * 1000u;
    c.advance_mode = hv_cfg.advance_mode;
    if (hv_cfg.advance_mode == LAPICT_ADVANCE_ADAPTIVE)
        c.advance_max_ns = hv_cfg.advance_max_ns;
    rc = lapict_init(
        &v->timer, &c,
        hv_cfg.timer == HV_TIMER_PREEMPT ? &ops_preempt : &ops_lapic, &v->node);
    if (rc)
        hv_panic("vCPU %u: lapict_init: %d", v->index, rc);
    lapict_bm_node_put(&v->node);
    rc = lapict_apic_init(&v->apic, &v->timer, &apic_ops, v);
    if (rc)
        hv_panic("vCPU %u: lapict_apic_init: %d", v->index, rc);
    hv_cpuid(0x80000008u, 0, &a, &b, &cx, &d);
    lapict_apic_set_cpuid(&v->apic, true, (uint8_t)a);
}

uint64_t hv_guest_tsc(const struct hv_vcpu *v)
{
    return lapict_bm_guest_tsc(&v->node);
}

/* --- the hypervisor's own account of the timer ---------------------------- */

#define LVT_MASKED (1u << 16)

static uint64_t ns_to_tsc(uint64_t ns)
{
    return lapict_bm_clock_tsc(&hv_clock, ns);
}

/* After a guest write that may have programmed the timer. */
static void ref_update(struct hv_vcpu *v, bool tmict, bool deadline,
                       uint64_t deadline_val, bool lvtt)
{
    struct hv_ref *r = &v->ref;
    uint32_t l = lapict_lvtt_read(&v->timer);
    uint32_t mode = (l >> 17) & 3;
    static const uint8_t shifts[8] = {1, 2, 3, 4, 5, 6, 7, 0};

    if (tmict || deadline || (lvtt && mode != r->mode))
        r->stale = v->stale_before;
    if (lvtt && mode != r->mode) {
        /* One-shot <-> periodic keeps the count running (its instant
         * stands); entering or leaving TSC-deadline mode disarms. */
        bool was_armed = r->armed, was_periodic = r->periodic;
        r->armed = r->periodic = false;
        if (r->mode == 0 && mode == 1)
            r->periodic = was_armed && r->period_tsc;
        else if (r->mode == 1 && mode == 0 && was_periodic) {
            /* The count in progress ends the one-shot. */
            r->armed = true;
            r->instant_tsc += r->given * r->period_tsc;
        }
    }
    r->mode = mode;
    if (tmict && mode != 2) {
        uint32_t count = lapict_tmict_read(&v->timer);
        uint32_t tdcr = lapict_tdcr_read(&v->timer);
        uint32_t div_code = (tdcr & 3) | ((tdcr >> 1) & 4);
        uint64_t ns_per = 1000000u / hv_cfg.bus_khz;
        uint64_t period_ns = ((uint64_t)count << shifts[div_code]) * ns_per;
        if (!captured) {
            r->armed = r->periodic = false;
            return;
        }
        r->unknown = false;
        r->given = 0;
        r->armed = count != 0 && mode == 0;
        r->periodic = count != 0 && mode == 1;
        r->anchor_ns = captured_ns;
        r->period_ns = period_ns;
        r->instant_tsc = ns_to_tsc(captured_ns + period_ns);
        r->period_tsc =
            ns_to_tsc(captured_ns + period_ns) - ns_to_tsc(captured_ns);
    }
    if (deadline && mode == 2) {
        /* The value written: one already past fires (and reads 0) inside
         * the write. */
        r->deadline = deadline_val;
        r->armed = r->deadline != 0;
        r->periodic = false;
    }
}

uint32_t hv_late[3][HV_LATE_SAMPLES];
uint32_t hv_late_n[3];

static void late(struct hv_vcpu *v, uint64_t ticks)
{
    uint32_t m = v->ref.mode > 2 ? 2 : v->ref.mode;
    v->late_sum += ticks;
    if (hv_late_n[m] < HV_LATE_SAMPLES)
        hv_late[m][hv_late_n[m]++] =
            ticks > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)ticks;
}

/* The guest is entered with the timer's vector at host TSC @now. */
void hv_ref_delivered(struct hv_vcpu *v, uint64_t now)
{
    struct hv_ref *r = &v->ref;
    v->deliveries++;
    if (r->unknown)
        return;
    if (r->stale) {
        /* Raised before the guest programmed the timer anew: its instant
         * passed then. */
        r->stale--;
        return;
    }
    if (r->mode == 2) {
        uint64_t g = hv_guest_tsc(v);
        if (!r->armed) {
            v->doubled++;
            hv_printf("lapict-hv: vCPU %u: a second interrupt for deadline "
                      "0x%lx\n",
                      v->index, r->deadline);
        } else if (g < r->deadline) {
            v->early++;
            hv_printf("lapict-hv: vCPU %u: deadline 0x%lx delivered early at "
                      "guest TSC 0x%lx\n",
                      v->index, r->deadline, g);
        } else {
            late(v, g - r->deadline);
            r->armed = false;
        }
        return;
    }
    if (r->periodic) {
        /*
         * Grid points passed: k at instant_tsc + (k - 1) x period. The
         * guest may be given older ones than the newest passed (up to
         * three: one in service, one in the IRR and one held by lapict
         * while the vCPU did not run), never one whose instant is still
         * ahead; the ones the missed-tick policy coalesced are never
         * given.
         */
        uint64_t due = 0;
        if (now >= r->instant_tsc)
            due =
                r->period_tsc ? (now - r->instant_tsc) / r->period_tsc + 1 : 1;
        if (due <= r->given) {
            v->early++;
            hv_printf("lapict-hv: vCPU %u: periodic tick %lu delivered "
                      "before its instant\n",
                      v->index, r->given + 1);
            return;
        }
        r->given = r->given + 1 > due - 2 || due < 2 ? r->given + 1 : due - 2;
        late(v, now - (r->instant_tsc + (r->given - 1) * r->period_tsc));
        return;
    }
    if (!r->armed) {
        v->doubled++;
        hv_printf("lapict-hv: vCPU %u: a second timer interrupt for one "
                  "expiry (mode %u)\n",
                  v->index, r->mode);
        return;
    }
    if (now < r->instant_tsc) {
        v->early++;
        hv_printf("lapict-hv: vCPU %u: one-shot delivered %lu ticks early\n",
                  v->index, r->instant_tsc - now);
        return;
    }
    late(v, now - r->instant_tsc);
    r->armed = false;
}

/* The run ends: an armed one-shot or deadline whose instant is more than a
 * millisecond past, with LVTT unmasked and nothing in IRR, was lost. */
void hv_ref_final(struct hv_vcpu *v, uint64_t now)
{
    struct hv_ref *r = &v->ref;
    uint64_t ms = hv_cfg.tsc_khz;
    bool masked = lapict_lvtt_read(&v->timer) & LVT_MASKED;
    if (!r->armed || masked || lapict_apic_irr_pending(&v->apic))
        return;
    if (r->mode == 2) {
        if (hv_guest_tsc(v) > r->deadline + ms)
            v->lost++;
    } else if (now > r->instant_tsc + ms) {
        v->lost++;
    }
}

/* Whether a write to x2APIC MSR / xAPIC offset @off programs the timer. */
static void timer_write_begin(struct hv_vcpu *v)
{
    capturing = true;
    captured = false;
    /* Interrupts the timer raised before this write (in the IRR, or held
     * by lapict while the IRR was busy) belong to the old programming. */
    v->stale_before = (lapict_apic_irr_test(&v->apic, v->timer_vec) ? 1u : 0u) +
                      (v->timer_refused ? 1u : 0u);
}

static void timer_write_end(struct hv_vcpu *v, uint32_t off, bool deadline,
                            uint64_t val)
{
    capturing = false;
    if (deadline)
        ref_update(v, false, true, val, false);
    else if (off == 0x380)
        ref_update(v, true, false, 0, false);
    else if (off == 0x320 || off == 0xF0)
        ref_update(v, false, false, 0, true);
    else if (off == 0x3E0 && (v->ref.armed || v->ref.periodic))
        /* A divide change mid-count: this account does not follow it;
         * no check until the next TMICT write. */
        v->ref.armed = v->ref.periodic = false, v->ref.unknown = true;
    if (v->armed_in_write) {
        v->armed_in_write = false;
        check_arm(v, v->arm_in_write);
    }
}

/* --- CPUID, MSRs ---------------------------------------------------------- */

void hv_exit_cpuid(struct hv_vcpu *v)
{
    uint32_t leaf = (uint32_t)v->g.rax, sub = (uint32_t)v->g.rcx;
    uint32_t a, b, c, d;

    if (leaf >= 0x40000000u && leaf <= 0x400000FFu) {
        a = b = c = d = 0;
        if (leaf == 0x40000000u) {
            a = 0x40000010u;
            memcpy(&b, "lapi", 4);
            memcpy(&c, "ct-h", 4);
            memcpy(&d, "v\0\0\0", 4);
        } else if (leaf == 0x40000010u) {
            a = v->guest_tsc_khz;
            b = hv_cfg.bus_khz;
        }
    } else {
        hv_cpuid(leaf, sub, &a, &b, &c, &d);
        switch (leaf) {
        case 1:
            c &=
                ~((1u << 5) | (1u << 3) | (1u << 26) | (1u << 27) | (1u << 28));
            c |= (1u << 21) | (1u << 24) | (1u << 31);
            b = (b & 0x0000FFFFu) | (1u << 16); /* APIC ID 0, 1 CPU */
            if (v->apic.apic_base & LAPICT_APIC_BASE_EN)
                d |= 1u << 9;
            else
                d &= ~(1u << 9);
            break;
        case 0xB:
        case 0x1F:
            d = 0;
            break;
        case 7:
            if (sub == 0)
                b &= ~(1u << 5 | 1u << 16); /* no AVX2, AVX-512 */
            break;
        case 0xD:
            a = b = c = d = 0;
            break;
        default:
            break;
        }
    }
    v->g.rax = a;
    v->g.rbx = b;
    v->g.rcx = c;
    v->g.rdx = d;
}

int hv_exit_rdmsr(struct hv_vcpu *v, uint32_t msr, uint64_t *val)
{
    if (msr == LAPICT_APIC_MSR_BASE || msr == 0x6E0u ||
        (msr >= 0x800u && msr <= 0x8FFu))
        return lapict_apic_rdmsr(&v->apic, msr, val) == LAPICT_OK ? 0 : -1;
    switch (msr) {
    case 0x10:
        *val = hv_guest_tsc(v);
        return 0;
    case 0x3A: /* FEATURE_CONTROL: locked, no VMX for the guest */
        *val = 1;
        return 0;
    case 0x1A0:
        *val = 1;
        return 0;
    case 0x277:
        *val = hv_vmread(G_PAT);
        return 0;
    case 0xC0000080u:
        *val = hv_guest_efer(v);
        return 0;
    case 0x174:
    case 0x175:
    case 0x176: {
        static const uint64_t f[3] = {G_SYSENTER_CS, G_SYSENTER_ESP,
                                      G_SYSENTER_EIP};
        *val = hv_vmread(f[msr - 0x174]);
        return 0;
    }
    case 0x17:
    case 0x8B:
    case 0xFE:
    case 0x2FF:
    case 0x3B:
        *val = 0;
        return 0;
    default:
        if (msr >= 0x200 && msr <= 0x26F)
            return *val = 0, 0;
        return -1;
    }
}

int hv_exit_wrmsr(struct hv_vcpu *v, uint32_t msr, uint64_t val)
{
    if (msr == LAPICT_APIC_MSR_BASE || msr == 0x6E0u ||
        (msr >= 0x800u && msr <= 0x8FFu)) {
        int rc;
        bool dl = msr == 0x6E0u;
        uint32_t off = (msr >= 0x800u) ? (msr - 0x800u) << 4 : 0;
        timer_write_begin(v);
        rc = lapict_apic_wrmsr(&v->apic, msr, val);
        timer_write_end(v, off, dl, val);
        return rc == LAPICT_OK ? 0 : -1;
    }
    switch (msr) {
    case 0x277:
        hv_vmwrite(G_PAT, val);
        return 0;
    case 0xC0000080u:
        if (val & ~0xD01ull)
            return -1;
        hv_guest_set_efer(v, val);
        return 0;
    case 0x174:
    case 0x175:
    case 0x176: {
        static const uint64_t f[3] = {G_SYSENTER_CS, G_SYSENTER_ESP,
                                      G_SYSENTER_EIP};
        hv_vmwrite(f[msr - 0x174], val);
        return 0;
    }
    case 0x8B:
    case 0x2FF:
        return 0;
    default:
        if (msr >= 0x200 && msr <= 0x26F)
            return 0;
        /* IA32_TSC, IA32_TSC_ADJUST: lapict's node keeps a fixed offset. */
        return -1;
    }
}

/* --- port I/O ------------------------------------------------------------- */

void hv_vcpu_output(struct hv_vcpu *v, char c)
{
    if (c == '\r')
        return;
    if (hv_cfg.vcpus == 1) {
        hv_putc(c);
        return;
    }
    if (c != '\n' && v->line_len < sizeof(v->line) - 1) {
        v->line[v->line_len++] = c;
        return;
    }
    hv_vcpu_flush(v);
}

void hv_vcpu_flush(struct hv_vcpu *v)
{
    if (hv_cfg.vcpus == 1 || !v->line_len)
        return;
    v->line[v->line_len] = 0;
    hv_printf("[%u] %s\n", v->index, v->line);
    v->line_len = 0;
}

static uint8_t fw_cfg_byte(const struct hv_vcpu *v, uint16_t key, uint32_t off)
{
    uint64_t val;
    switch (key) {
    case 0x00:
        return off < 4 ? (uint8_t) "QEMU"[off] : 0;
    case 0x01: /* ID: traditional interface */
        val = 1;
        break;
    case 0x03: /* RAM size */
        val = v->ram_bytes;
        break;
    case 0x05: /* CPU count */
        val = 1;
        break;
    default:
        return 0;
    }
    return off < 8 ? (uint8_t)(val >> (8 * off)) : 0;
}

void hv_exit_io(struct hv_vcpu *v, uint16_t port, unsigned size, bool in,
                uint32_t *val)
{
    if (!in) {
        if (port == COM1)
            hv_vcpu_output(v, (char)*val);
        else if (port == DEBUG_EXIT) {
            v->done = true;
            v->status = (int)(*val & 0xFF);
        } else if (port == FW_CFG_SEL && size == 2) {
            v->fw_key = (uint16_t)*val;
            v->fw_off = 0;
        }
        return;
    }
    *val = 0xFFFFFFFFu;
    if (port == COM1 + 5)
        *val = 0x60; /* THR empty, transmitter empty */
    else if (port >= COM1 && port < COM1 + 8)
        *val = 0;
    else if (port == FW_CFG_DATA) {
        *val = 0;
        for (unsigned i = 0; i < size; i++)
            *val |= (uint32_t)fw_cfg_byte(v, v->fw_key, v->fw_off++) << (8 * i);
    }
}

/* --- xAPIC MMIO: decode the faulting MOV ---------------------------------- */

/* Guest linear @la to guest physical, through the guest's page tables
 * (paging off, or 4-level paging). Returns ~0 when not mapped. */
static uint64_t walk(struct hv_vcpu *v, uint64_t la)
{
    uint64_t cr0 = hv_vmread(CR0_SHADOW), cr3 = hv_vmread(G_CR3);
    uint64_t e, table = cr3 & 0x000FFFFFFFFFF000ull;
    if (!(cr0 & CR0_PG))
        return la & 0xFFFFFFFFull;
    if (!(hv_guest_efer(v) & EFER_LMA))
        return ~0ull; /* 32-bit paging: not supported */
    for (int level = 3; level >= 0; level--) {
        uint64_t idx = (la >> (12 + 9 * level)) & 511;
        if (table + idx * 8 + 8 > v->ram_bytes)
            return ~0ull;
        memcpy(&e, gpa(v, table + idx * 8), 8);
        if (!(e & 1))
            return ~0ull;
        if (level && level < 3 && (e & 0x80)) {
            uint64_t size = 1ull << (12 + 9 * level);
            return (e & 0x000FFFFFFFFFF000ull & ~(size - 1)) |
                   (la & (size - 1));
        }
        table = e & 0x000FFFFFFFFFF000ull;
    }
    return table | (la & 0xFFF);
}

static int fetch(struct hv_vcpu *v, uint8_t *buf, unsigned n)
{
    uint64_t rip = hv_vmread(G_RIP) + hv_vmread(G_CS_BASE);
    for (unsigned i = 0; i < n; i++) {
        uint64_t pa = walk(v, rip + i);
        if (pa >= v->ram_bytes)
            return -1;
        buf[i] = *gpa(v, pa);
    }
    return 0;
}

/* The access itself: @opsize bytes at @addr, to/from register @reg (or the
 * immediate @imm for a store), then step over @len bytes of instruction. */
static int mmio_access(struct hv_vcpu *v, uint64_t addr, unsigned opsize,
                       bool store, unsigned reg, const uint8_t *imm,
                       unsigned len)
{
    uint8_t data[8] = {0};
    int rc;
    bool zext = opsize & 0x100;

    opsize &= 0xFF;
    if (imm)
        memcpy(data, imm, 8);
    else if (store) {
        uint64_t r = hv_greg_read(v, reg);
        memcpy(data, &r, 8);
    }
    if (store &&
        (addr & ~0xFFFull) == (v->apic.apic_base & 0x000FFFFFFFFFF000ull)) {
        uint32_t off = (uint32_t)(addr & 0xFF0);
        timer_write_begin(v);
        rc = lapict_apic_mmio(&v->apic, addr, data, opsize, true);
        timer_write_end(v, off, false, 0);
    } else {
        rc = lapict_apic_mmio(&v->apic, addr, data, opsize, store);
    }
    if (rc == LAPICT_E_NOREG && !store)
        memset(data, 0xFF, sizeof(data)); /* unassigned: all-ones */
    if (!store) {
        uint64_t val = 0, old = hv_greg_read(v, reg);
        memcpy(&val, data, 8);
        if (zext)
            val &= opsize == 1 ? 0xFF : 0xFFFF;
        else if (opsize == 1)
            val = (old & ~0xFFull) | (val & 0xFF);
        else if (opsize == 2)
            val = (old & ~0xFFFFull) | (val & 0xFFFF);
        else if (opsize == 4)
            val &= 0xFFFFFFFFull;
        hv_greg_write(v, reg, val);
    }
    hv_guest_skip(v, len);
    return 0;
}

int hv_exit_mmio(struct hv_vcpu *v, uint64_t addr)
{
    uint8_t ins[15], imm[8] = {0};
    unsigned i = 0, opsize = 4, modrm, mod, reg, rm, op;
    bool rex = false, rex_w = false, rex_r = false, store, has_imm = false;
    bool zext = false;
    bool long_mode = hv_vmread(G_CS_AR) & (1u << 13); /* CS.L */

    if (fetch(v, ins, sizeof(ins)))
        return -1;
    for (; i < 4; i++) {
        if (ins[i] == 0x66)
            opsize = 2;
        else if (ins[i] != 0x2E && ins[i] != 0x3E && ins[i] != 0x26 &&
                 ins[i] != 0x36 && ins[i] != 0x64 && ins[i] != 0x65)
            break;
    }
    if (long_mode && (ins[i] & 0xF0) == 0x40) {
        rex = true;
        rex_w = ins[i] & 8;
        rex_r = ins[i] & 4;
        i++;
    }
    if (rex_w)
        opsize = 8;
    op = ins[i++];
    switch (op) {
    case 0x88: /* MOV r/m8, r8 */
    case 0x8A: /* MOV r8, r/m8 */
    case 0xC6: /* MOV r/m8, imm8 */
        opsize = 1;
        break;
    case 0x89:
    case 0x8B:
    case 0xC7:
        break;
    case 0xA0: /* MOV AL/AX/EAX/RAX <-> moffs: no ModRM */
    case 0xA1:
    case 0xA2:
    case 0xA3:
        return mmio_access(v, addr, (op & 1) ? opsize : 1, op & 2, 0, NULL,
                           i + (long_mode ? 8 : 4));
    case 0x0F: /* MOVZX r, r/m8 | r/m16 */
        op = ins[i++];
        if (op != 0xB6 && op != 0xB7)
            goto unknown;
        zext = true;
        break;
    default:
        goto unknown;
    }
    store = op == 0x88 || op == 0x89 || op == 0xC6 || op == 0xC7;
    has_imm = op == 0xC6 || op == 0xC7;
    modrm = ins[i++];
    mod = modrm >> 6;
    reg = ((modrm >> 3) & 7) | (rex_r ? 8 : 0);
    rm = modrm & 7;
    if (mod == 3)
        goto unknown;
    if (rm == 4 && (ins[i++] & 7) == 5 && mod == 0)
        i += 4; /* SIB without a base: disp32 */
    if (mod == 1)
        i += 1;
    else if (mod == 2 || (mod == 0 && rm == 5))
        i += 4;
    if (zext)
        opsize = 0x100 | (op == 0xB6 ? 1 : 2);
    else if (opsize == 1 && !rex && !has_imm && reg >= 4 && reg < 8)
        goto unknown; /* AH, CH, DH, BH */
    if (has_imm) {
        unsigned n = opsize == 1 ? 1 : (opsize == 2 ? 2 : 4);
        memcpy(imm, ins + i, n);
        i += n;
        if (opsize == 8 && (imm[3] & 0x80))
            memset(imm + 4, 0xFF, 4);
    }
    if (i > sizeof(ins))
        goto unknown;
    return mmio_access(v, addr, opsize, store, reg, has_imm ? imm : NULL, i);
unknown:
    hv_printf("lapict-hv: vCPU %u: MMIO instruction %x %x %x %x not "
              "emulated\n",
              v->index, ins[0], ins[1], ins[2], ins[3]);
    return -1;
}
