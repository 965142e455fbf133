/* SPDX-License-Identifier: MIT */
/*
 * The KVM glue of the adapter: the hooks a VMM calls around its own
 * KVM_RUN (pre_run, handle_exit), exit decoding into the LAPIC model,
 * delivery with KVM_INTERRUPT or sync regs and interrupt windows, the
 * model's ops on KVM, per-VM and per-vCPU setup, save and restore, and
 * lapict_kvm_run() on top of the hooks. The host timer is host.c's, the
 * kick kick.c's.
 */
#define _GNU_SOURCE
#include "kvm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#define MSR_IA32_TSC 0x10u

static struct lapict_kvm *K(void *ctx)
{
    return ctx;
}

/* --- the LAPIC model's ops on KVM ---------------------------------------- */

/* Each op does KVM's part, then tells the VMM (lapict_kvm_config.apic_ops). */

static int apic_nmi(void *ctx)
{
    struct lapict_kvm *k = K(ctx);

    /* KVM queues it (and collapses it while one is blocked). */
    if (k->sys->ioctl(k->vcpu_fd, KVM_NMI, NULL) < 0)
        return lapict_kvm__sys_fail(k, "KVM_NMI");
    return k->vmm_ops && k->vmm_ops->nmi ? k->vmm_ops->nmi(k->vmm_ctx)
                                         : LAPICT_OK;
}

/* Tell KVM, so that CPUID.1:EDX.APIC follows the enable bit. */
static int apic_base_changed(void *ctx, uint64_t base)
{
    struct lapict_kvm *k = K(ctx);
    union {
        struct kvm_msrs h;
        uint8_t raw[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
    } m;
    struct kvm_msr_entry e = {.index = LAPICT_APIC_MSR_BASE, .data = base};

    memset(&m, 0, sizeof(m));
    m.h.nmsrs = 1;
    memcpy(m.raw + sizeof(m.h), &e, sizeof(e));
    if (k->sys->ioctl(k->vcpu_fd, KVM_SET_MSRS, &m) != 1)
        return lapict_kvm__sys_fail(k, "KVM_SET_MSRS");
    return k->vmm_ops && k->vmm_ops->base_changed
               ? k->vmm_ops->base_changed(k->vmm_ctx, base)
               : LAPICT_OK;
}

static void apic_eoi(void *ctx)
{
    struct lapict_kvm *k = K(ctx);

    lapict_kvm__window(k);
    if (k->vmm_ops && k->vmm_ops->eoi)
        k->vmm_ops->eoi(k->vmm_ctx);
}

/* Only set where the VMM has an ipi op (lapict_kvm__apic_ops_ipi): KVM
 * has no part in it, other vCPUs are the VMM's. */
static int apic_ipi(void *ctx, const struct lapict_apic_ipi *ipi)
{
    struct lapict_kvm *k = K(ctx);

    return k->vmm_ops->ipi(k->vmm_ctx, ipi);
}

const struct lapict_apic_ops lapict_kvm__apic_ops = {
    .version = LAPICT_APIC_OPS_VERSION,
    .nmi = apic_nmi,
    .base_changed = apic_base_changed,
    .eoi = apic_eoi,
};

const struct lapict_apic_ops lapict_kvm__apic_ops_ipi = {
    .version = LAPICT_APIC_OPS_VERSION,
    .nmi = apic_nmi,
    .base_changed = apic_base_changed,
    .eoi = apic_eoi,
    .ipi = apic_ipi,
};

void lapict_kvm__window(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    if (k->timer_refused && r->if_flag && r->ready_for_interrupt_injection) {
        k->timer_refused = false;
        lapict_irq_window_open(&k->timer);
    }
}

/* The guest may have written CR8 (TPR bits 7:4) since the last exit. */
static void sync_tpr(struct lapict_kvm *k)
{
    uint32_t tpr = lapict_apic_tpr(&k->apic);

    if ((k->run->cr8 & 0xF) != (tpr >> 4))
        lapict_apic_set_tpr(&k->apic, (uint32_t)(k->run->cr8 & 0xF) << 4);
}

void lapict_kvm_set_cpuid(struct lapict_kvm *k, const struct kvm_cpuid2 *cpuid)
{
    bool x2apic = false;
    uint8_t maxphyaddr = 0;

    for (uint32_t i = 0; i < cpuid->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
        if (e->function == 1)
            x2apic = e->ecx & (1u << 21);
        if (e->function == 0x80000008u)
            maxphyaddr = (uint8_t)(e->eax & 0xFFu);
    }
    lapict_apic_set_cpuid(&k->apic, x2apic, maxphyaddr);
}

/* --- per-vCPU setup ------------------------------------------------------ */

static int read_tsc_offset(struct lapict_kvm *k)
{
    /* struct kvm_msrs ends in a flexible array: room for one entry. */
    union {
        struct kvm_msrs h;
        uint8_t raw[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
    } m;
    struct kvm_msr_entry *e = (struct kvm_msr_entry *)(m.raw + sizeof(m.h));
    uint64_t off = 0, best = UINT64_MAX;
    struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
                                .attr = KVM_VCPU_TSC_OFFSET,
                                .addr = (uint64_t)(uintptr_t)&off};

    /* Exact where KVM exposes it (guest TSC = host TSC + offset). */
    if (k->sys->ioctl(k->vcpu_fd, KVM_GET_DEVICE_ATTR, &a) == 0) {
        k->tsc_offset = (int64_t)off;
        return 0;
    }
    /*
     * Else one IA32_TSC read bracketed by host TSC reads; an ioctl costs
     * microseconds here, so keep the tightest of a few brackets.
     */
    for (int i = 0; i < 8; i++) {
        uint64_t before, after;
        memset(&m, 0, sizeof(m));
        m.h.nmsrs = 1;
        e->index = MSR_IA32_TSC;
        before = __rdtsc();
        if (k->sys->ioctl(k->vcpu_fd, KVM_GET_MSRS, &m) != 1)
            return lapict_kvm__sys_fail(k, "KVM_GET_MSRS");
        after = __rdtsc();
        if (after - before >= best)
            continue;
        best = after - before;
        /* Within the read's own window of the host TSC: no offset. */
        if (e->data >= before && e->data <= after)
            k->tsc_offset = 0;
        else
            k->tsc_offset =
                (int64_t)(e->data - (before + (after - before) / 2));
    }
    return 0;
}

/*
 * KVM_CAP_SYNC_REGS: KVM stores RFLAGS and the event state in kvm_run on
 * every return from KVM_RUN (also -EINTR), and applies an event state
 * marked dirty on the next KVM_RUN. Injecting that way costs no ioctl:
 * KVM_INTERRUPT, and KVM_GET_REGS after a kick, are each a system call
 * with a vcpu_load/vcpu_put round of their own.
 */
static void setup_sync_regs(struct lapict_kvm *k)
{
    int fd = k->sys->open("/dev/kvm", O_RDWR | O_CLOEXEC), caps;
    const int want = KVM_SYNC_X86_REGS | KVM_SYNC_X86_EVENTS;

    if (fd < 0)
        return;
    caps = k->sys->ioctl(fd, KVM_CHECK_EXTENSION,
                         (void *)(uintptr_t)KVM_CAP_SYNC_REGS);
    k->sys->close(fd);
    if (caps < 0 || (caps & want) != want)
        return;
    /* Valid before the first exit too. */
    if (k->sys->ioctl(k->vcpu_fd, KVM_GET_VCPU_EVENTS, &k->run->s.regs.events) <
        0)
        return;
    k->run->kvm_valid_regs |= (uint64_t)want;
    k->sync_events = true;
}

/* Queue @vector for the next entry (the cheapest path); 0 or -1. */
static int inject_irq(struct lapict_kvm *k, int vector)
{
    struct kvm_run *r = k->run;
    struct kvm_interrupt irq = {.irq = (uint32_t)vector};

    if (k->sync_events) {
        struct kvm_vcpu_events *ev = &r->s.regs.events;
        /* One not yet taken by KVM_RUN would be overwritten. */
        if (r->kvm_dirty_regs & KVM_SYNC_X86_EVENTS)
            return -1;
        ev->interrupt.injected = 1;
        ev->interrupt.nr = (uint8_t)vector;
        ev->interrupt.soft = 0;
        /*
         * The rest is the state KVM stored at the last return. Leave NMI
         * pending (a KVM_NMI since then), the interrupt shadow and SMM to
         * KVM: only the payload flag describes fields written back.
         */
        ev->flags &= KVM_VCPUEVENT_VALID_PAYLOAD;
        r->kvm_dirty_regs |= KVM_SYNC_X86_EVENTS;
        return 0;
    }
    if (k->sys->ioctl(k->vcpu_fd, KVM_INTERRUPT, &irq) < 0) {
        lapict_kvm__sys_fail(k, "KVM_INTERRUPT");
        return -1;
    }
    return 0;
}

int lapict_kvm__vcpu_setup(struct lapict_kvm *k)
{
    int rc = read_tsc_offset(k);

    if (rc < 0)
        return rc;
    setup_sync_regs(k);
    return LAPICT_OK;
}

/* --- exits and delivery -------------------------------------------------- */

/* The exit in run, completed KVM_RUN: the LAPIC's, or not. */
static int exit_of(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    uint64_t v = 0;
    int rc;

    switch (r->exit_reason) {
    case KVM_EXIT_MMIO:
        rc = lapict_apic_mmio(&k->apic, r->mmio.phys_addr, r->mmio.data,
                              r->mmio.len, r->mmio.is_write);
        if (rc == LAPICT_E_NOREG)
            return LAPICT_KVM_NOT_MINE;
        return rc < 0 ? rc : LAPICT_KVM_MINE;
    case KVM_EXIT_X86_RDMSR:
        rc = lapict_apic_rdmsr(&k->apic, r->msr.index, &v);
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
        rc = lapict_apic_wrmsr(&k->apic, r->msr.index, r->msr.data);
        if (rc == LAPICT_E_NOREG)
            return LAPICT_KVM_NOT_MINE;
        /* Only #GP fails the guest's write; an ops error is the host's. */
        r->msr.error = rc == LAPICT_E_GP ? 1 : 0;
        if (rc == LAPICT_E_GP)
            k->st.gp++;
        return rc == LAPICT_E_GP || rc == LAPICT_OK ? LAPICT_KVM_MINE : rc;
    case KVM_EXIT_IRQ_WINDOW_OPEN:
        k->st.window_exits++;
        return LAPICT_KVM_MINE;
    case KVM_EXIT_INTR: /* a kick, should KVM report one as an exit */
        return LAPICT_KVM_MINE;
    default:
        return LAPICT_KVM_NOT_MINE;
    }
}

int lapict_kvm__deliver(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    int v;

    sync_tpr(k);
    v = lapict_apic_deliverable(&k->apic);
    if (k->injected || v < 0) {
        /* An interrupt blocked by TPR/ISR waits for EOI or a TPR write. */
        r->request_interrupt_window =
            (k->injected && lapict_apic_irr_pending(&k->apic)) ||
            k->timer_refused;
        return -1;
    }
    if (!r->ready_for_interrupt_injection || !r->if_flag) {
        r->request_interrupt_window = 1;
        k->st.window_requests++;
        return -1;
    }
    if (inject_irq(k, v) < 0) {
        r->request_interrupt_window = 1;
        return -1;
    }
    lapict_apic_ack(&k->apic, (uint8_t)v);
    k->injected = true;
    k->st.interrupts++;
    r->request_interrupt_window =
        lapict_apic_irr_pending(&k->apic) || k->timer_refused;
    return v;
}

/* --- the hooks ----------------------------------------------------------- */

/*
 * After a kick (KVM_RUN -EINTR) run->if_flag and
 * ready_for_interrupt_injection were seen to describe the previous exit;
 * the guest may have set IF since without exiting, and a refused timer
 * interrupt would then wait for an interrupt-window exit that comes late.
 * With sync regs KVM has just stored RFLAGS and the events in kvm_run (no
 * ioctl); otherwise read RFLAGS (one ioctl, only on kicks). Not ready while
 * an event (ours included, an -EINTR keeps it queued) waits in KVM.
 */
static void refresh_if(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    struct kvm_regs regs;

    if (k->sync_events) {
        const struct kvm_vcpu_events *ev = &r->s.regs.events;
        r->if_flag = (r->s.regs.regs.rflags >> 9) & 1u;
        r->ready_for_interrupt_injection =
            r->if_flag && !ev->interrupt.injected && !ev->interrupt.shadow &&
            !ev->nmi.injected && !ev->exception.injected &&
            !(r->kvm_dirty_regs & KVM_SYNC_X86_EVENTS);
        return;
    }
    if (k->sys->ioctl(k->vcpu_fd, KVM_GET_REGS, &regs) < 0) {
        /* The previous view stays: a window exit delivers instead. */
        lapict_kvm__sys_fail(k, "KVM_GET_REGS");
        return;
    }
    r->if_flag = (regs.rflags >> 9) & 1u;
    r->ready_for_interrupt_injection = r->if_flag;
}

int lapict_kvm_pre_run(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    int rc;

    /* From here a kick timer signal makes the entry exit. */
    lapict_kvm__running(k);
    for (;;) {
        /* A kick that came outside KVM_RUN is served by this pass: clear
         * it first, so that a later one is either seen below or exits. */
        __atomic_store_n(&r->immediate_exit, 0, __ATOMIC_SEQ_CST);
        lapict_kvm__poll_expiry(k);
        lapict_kvm__window(k);
        lapict_kvm__deliver(k);
        lapict_before_guest_entry(&k->timer);
        if (!k->injected)
            lapict_kvm__deliver(k);
        r->cr8 = lapict_apic_tpr(&k->apic) >> 4;
        rc = k->kicker->enter(k);
        if (rc == 0)
            continue; /* due meanwhile: serve it rather than be kicked */
        if ((rc = lapict_kvm__take_error(k)) < 0) {
            lapict_kvm__running(NULL); /* no entry */
            return rc;
        }
        k->st.runs++;
        return LAPICT_OK;
    }
}

int lapict_kvm_handle_exit(struct lapict_kvm *k, int run_rc)
{
    struct kvm_run *r = k->run;
    int rc, e;

    lapict_kvm__running(NULL);
    k->injected = false;
    if (run_rc == -EINTR || run_rc == -EAGAIN) {
        /* A kick: run->exit_reason is stale, nothing was exited for. */
        __atomic_store_n(&r->immediate_exit, 0, __ATOMIC_RELAXED);
        refresh_if(k);
        rc = lapict_kvm__take_error(k);
        return rc < 0 ? rc : LAPICT_KVM_MINE;
    }
    if (run_rc < 0) {
        errno = -run_rc;
        lapict_kvm__sys_fail(k, "KVM_RUN");
        return lapict_kvm__take_error(k);
    }
    sync_tpr(k);
    if (r->exit_reason == KVM_EXIT_HLT) {
        k->st.hlt++;
        lapict_kvm__window(k);
        if (!r->if_flag)
            return LAPICT_KVM_NOT_MINE; /* nothing can wake it */
        if (lapict_apic_deliverable(&k->apic) >= 0)
            return LAPICT_KVM_MINE;
        return LAPICT_KVM_HALTED;
    }
    rc = exit_of(k);
    /* A host call the exit made failed (KVM_SET_MSRS, KVM_NMI, a timer):
     * the guest's access is done, the VMM hears of the failure. */
    e = lapict_kvm__take_error(k);
    return rc < 0 ? rc : e < 0 ? e : rc;
}

int lapict_kvm_run(struct lapict_kvm *k)
{
    struct kvm_run *r = k->run;
    int rc, e;

    for (;;) {
        if (__atomic_load_n(&k->stop, __ATOMIC_SEQ_CST)) {
            r->exit_reason = KVM_EXIT_INTR;
            return LAPICT_OK;
        }
        if ((rc = lapict_kvm_pre_run(k)) < 0)
            return rc;
        e = k->sys->ioctl(k->vcpu_fd, KVM_RUN, NULL) < 0 ? -errno : 0;
        rc = lapict_kvm_handle_exit(k, e);
        if (rc == LAPICT_KVM_MINE)
            continue;
        if (rc == LAPICT_KVM_HALTED) {
            if ((rc = lapict_kvm_halt_wait(k)) < 0)
                return rc;
            continue;
        }
        return rc < 0 ? rc : LAPICT_OK;
    }
}

/* --- per-VM setup -------------------------------------------------------- */

int lapict_kvm_vm_setup(int vm_fd)
{
    static const uint8_t deny = 0; /* bit clear: exit to userspace */
    struct kvm_enable_cap cap = {
        .cap = KVM_CAP_X86_USER_SPACE_MSR,
        .args = {KVM_MSR_EXIT_REASON_INVAL | KVM_MSR_EXIT_REASON_UNKNOWN |
                 KVM_MSR_EXIT_REASON_FILTER},
    };
    struct kvm_msr_filter f;

    /* No instance yet: the real calls. */
    if (lapict_kvm_sys_linux.ioctl(vm_fd, KVM_ENABLE_CAP, &cap) < 0)
        return LAPICT_E_SYSTEM;
    memset(&f, 0, sizeof(f));
    f.flags = KVM_MSR_FILTER_DEFAULT_ALLOW;
    f.ranges[0].flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE;
    f.ranges[0].nmsrs = 1;
    f.ranges[0].base = LAPICT_MSR_TSC_DEADLINE;
    f.ranges[0].bitmap = (uint8_t *)&deny;
    f.ranges[1] = f.ranges[0];
    f.ranges[1].base = LAPICT_APIC_MSR_BASE;
    if (lapict_kvm_sys_linux.ioctl(vm_fd, KVM_X86_SET_MSR_FILTER, &f) < 0)
        return LAPICT_E_SYSTEM;
    return 0;
}

void lapict_kvm_cpuid_fixup(struct kvm_cpuid2 *cpuid, bool x2apic)
{
    for (uint32_t i = 0; i < cpuid->nent; i++) {
        struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
        if (e->function != 1)
            continue;
        e->edx |= 1u << 9;
        e->ecx |= 1u << 24;
        if (x2apic)
            e->ecx |= 1u << 21;
        else
            e->ecx &= ~(1u << 21);
        e->ebx &= 0x00FFFFFFu;
    }
}

/* --- save and restore ---------------------------------------------------- */

int lapict_kvm_restore(struct lapict_kvm *k, const void *apic, size_t apic_len,
                       const void *timer, size_t timer_len, bool halted)
{
    const uint8_t *tb = timer;
    uint8_t ab[LAPICT_APIC_STATE_SIZE];
    int rc;

    if (!k || !apic || !timer)
        return LAPICT_E_INVAL;
    if ((rc = lapict_apic_state_check(&k->apic, apic, apic_len)) < 0)
        return rc;
    memcpy(ab, apic, sizeof(ab));
    /* The SVR software-enable bit: SVR bit 8 here, timer flag bit 0 (blob
     * offset 20, lapict/state.h). A pair that disagrees was not saved from
     * one APIC. */
    if (timer_len == LAPICT_STATE_SIZE && !!(tb[20] & 1u) != !!(ab[33] & 1u))
        return LAPICT_E_STATE_FIELD;
    if (halted)
        lapict_vcpu_blocking(&k->timer);
    if ((rc = lapict_state_restore(&k->timer, timer, timer_len)) < 0) {
        if (halted)
            lapict_vcpu_unblocked(&k->timer);
        return rc;
    }
    rc = lapict_apic_restore(&k->apic, ab, sizeof(ab));
    k->injected = false;
    k->timer_refused = true; /* state.h: window open as soon as it can */
    if (halted) {
        /* A HLT exit with IF set: the guest takes an interrupt at once. */
        k->run->if_flag = 1;
        k->run->ready_for_interrupt_injection = 1;
        lapict_kvm__window(k);
    }
    if (halted && lapict_apic_deliverable(&k->apic) < 0)
        return rc < 0 ? rc : LAPICT_KVM_HALTED;
    /* The halt is over (an interrupt can be taken): running again. */
    if (halted)
        lapict_vcpu_unblocked(&k->timer);
    return rc;
}
