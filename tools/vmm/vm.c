/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm's VM layer (vm.h): one place that creates a VM, sets CPUID,
 * maps RAM, loads images, prepares long mode and runs the vCPU, for the
 * built-in guests and the multiboot path.
 */
#define _GNU_SOURCE
#include "vm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int lapict_vmm_fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_errno(char *err, size_t len, const char *what)
{
    return lapict_vmm_fail(err, len, "%s: %s", what, strerror(errno));
}

/* KVM_GET_SUPPORTED_CPUID answers E2BIG until the array is big enough. */
static struct kvm_cpuid2 *supported_cpuid(int kvm)
{
    for (uint32_t n = 64; n <= 4096; n *= 2) {
        struct kvm_cpuid2 *c =
            calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
        if (!c)
            return NULL;
        c->nent = n;
        if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c) == 0)
            return c;
        free(c);
        if (errno != E2BIG)
            return NULL;
    }
    errno = E2BIG;
    return NULL;
}

int lapict_vmm_vm_create(struct lapict_vmm_vm *v, uint64_t ram_bytes,
                         bool lapic_kernel, bool x2apic, char *err,
                         size_t err_len)
{
    struct kvm_userspace_memory_region reg;
    int sz;

    memset(v, 0, sizeof(*v));
    v->kvm = v->vm = v->vcpu = -1;
    v->lapic_kernel = lapic_kernel;
    v->ram_bytes = ram_bytes;
    v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (v->kvm < 0)
        return fail_errno(err, err_len, "open /dev/kvm");
    v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
    if (v->vm < 0)
        return fail_errno(err, err_len, "KVM_CREATE_VM");
    v->mem = mmap(NULL, ram_bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (v->mem == MAP_FAILED) {
        v->mem = NULL;
        return fail_errno(err, err_len, "mmap guest memory");
    }
    reg = (struct kvm_userspace_memory_region){.slot = 0,
                                               .guest_phys_addr = 0,
                                               .memory_size = ram_bytes,
                                               .userspace_addr =
                                                   (uint64_t)(uintptr_t)v->mem};
    if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &reg) < 0)
        return fail_errno(err, err_len, "KVM_SET_USER_MEMORY_REGION");
    if (lapic_kernel) {
        if (ioctl(v->vm, KVM_CREATE_IRQCHIP, 0) < 0)
            return fail_errno(err, err_len, "KVM_CREATE_IRQCHIP");
    } else if (lapict_kvm_vm_setup(v->vm) < 0) {
        return fail_errno(err, err_len, "lapict_kvm_vm_setup");
    }
    v->vcpu = ioctl(v->vm, KVM_CREATE_VCPU, 0);
    if (v->vcpu < 0)
        return fail_errno(err, err_len, "KVM_CREATE_VCPU");
    sz = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (sz <= 0)
        return fail_errno(err, err_len, "KVM_GET_VCPU_MMAP_SIZE");
    v->run =
        mmap(NULL, (size_t)sz, PROT_READ | PROT_WRITE, MAP_SHARED, v->vcpu, 0);
    if (v->run == MAP_FAILED) {
        v->run = NULL;
        return fail_errno(err, err_len, "mmap kvm_run");
    }
    v->run_size = (size_t)sz;
    v->cpuid = supported_cpuid(v->kvm);
    if (!v->cpuid)
        return fail_errno(err, err_len, "KVM_GET_SUPPORTED_CPUID");
    lapict_kvm_cpuid_fixup(v->cpuid, x2apic);
    if (ioctl(v->vcpu, KVM_SET_CPUID2, v->cpuid) < 0)
        return fail_errno(err, err_len, "KVM_SET_CPUID2");
    return 0;
}

/* The adapter's fired hook (async-signal-safe): the host TSC of the first
 * host timer fire since the loop last took it. */
static void note_fired(void *arg)
{
    struct lapict_vmm_vm *v = arg;
    uint64_t zero = 0;

    __atomic_compare_exchange_n(&v->fired_tsc, &zero, __builtin_ia32_rdtsc(),
                                false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/*
 * The LAPIC model's ipi op: what a machine with one vCPU can do with an
 * IPI its APIC did not complete alone. A lowest-priority IPI that names
 * the vCPU is its own (the only candidate; all excluding self included,
 * which the SDM lets a processor redirect to itself). The rest, beyond
 * what the model delivered here, names CPUs this VM does not have, or is
 * an INIT, start-up or SMI, which lapict-vmm does not emulate.
 */
static int route_ipi(void *ctx, const struct lapict_apic_ipi *ipi)
{
    struct lapict_vmm_vm *v = ctx;

    if (ipi->mode == LAPICT_APIC_DM_LOWEST &&
        (ipi->shorthand != LAPICT_APIC_SH_NONE ||
         lapict_apic_dest_match(&v->k->apic, ipi->logical, ipi->dest))) {
        lapict_apic_set_irq(&v->k->apic, ipi->vector);
        return LAPICT_OK;
    }
    if (ipi->delivered_here)
        return LAPICT_OK;
    if (!v->ipis_undelivered++)
        v->first_undelivered = *ipi;
    return LAPICT_OK;
}

static const struct lapict_apic_ops vmm_apic_ops = {
    .version = LAPICT_APIC_OPS_VERSION,
    .ipi = route_ipi,
};

/* The report of lapict_vmm_vm_destroy(). */
static void report_ipis(const struct lapict_vmm_vm *v)
{
    static const char *const modes[8] = {
        "fixed",    "lowest priority", "SMI", "reserved mode 3", "NMI", "INIT",
        "start-up", "reserved mode 7"};
    static const char *const shorthands[4] = {"", "self", "all including self",
                                              "all excluding self"};
    const struct lapict_apic_ipi *f = &v->first_undelivered;

    if (!v->ipis_undelivered)
        return;
    fprintf(stderr,
            "lapict-vmm: %" PRIu64 " IPI%s not delivered: this VM has one "
            "vCPU and does not emulate INIT, start-up or SMI (first: %s "
            "vector 0x%02x ",
            v->ipis_undelivered, v->ipis_undelivered == 1 ? "" : "s",
            modes[f->mode & 7u], f->vector);
    if (f->shorthand != LAPICT_APIC_SH_NONE)
        fprintf(stderr, "to %s)\n", shorthands[f->shorthand & 3u]);
    else
        fprintf(stderr, "to %s destination 0x%" PRIx32 ")\n",
                f->logical ? "logical" : "APIC ID", f->dest);
}

int lapict_vmm_vm_lapic(struct lapict_vmm_vm *v,
                        const struct lapict_kvm_config *cfg, char *err,
                        size_t err_len)
{
    struct lapict_kvm_config c;
    int rc;

    v->k = calloc(1, sizeof(*v->k));
    if (!v->k)
        return lapict_vmm_fail(err, err_len, "calloc: %s", strerror(ENOMEM));
    if (cfg)
        c = *cfg;
    else
        lapict_kvm_config_default(&c);
    if (!c.fired) {
        c.fired = note_fired;
        c.fired_arg = v;
    }
    if (!c.apic_ops) {
        c.apic_ops = &vmm_apic_ops;
        c.apic_ctx = v;
    }
    rc = lapict_kvm_init(v->k, v->vcpu, v->run, &c);
    if (rc) {
        lapict_vmm_fail(err, err_len, "lapict_kvm_init: %s (%s: %s)",
                        lapict_strerror(rc), lapict_kvm_errcall(v->k),
                        strerror(lapict_kvm_errno(v->k)));
        free(v->k);
        v->k = NULL;
        return -1;
    }
    lapict_kvm_set_cpuid(v->k, v->cpuid);
    return 0;
}

void lapict_vmm_vm_destroy(struct lapict_vmm_vm *v)
{
    report_ipis(v);
    v->ipis_undelivered = 0;
    if (v->k) {
        lapict_kvm_destroy(v->k);
        free(v->k);
        v->k = NULL;
    }
    free(v->cpuid);
    v->cpuid = NULL;
    if (v->run)
        munmap(v->run, v->run_size);
    if (v->mem)
        munmap(v->mem, v->ram_bytes);
    v->run = NULL;
    v->mem = NULL;
    if (v->vcpu >= 0)
        close(v->vcpu);
    if (v->vm >= 0)
        close(v->vm);
    if (v->kvm >= 0)
        close(v->kvm);
    v->kvm = v->vm = v->vcpu = -1;
}

struct kvm_segment lapict_vmm_flat_segment(uint16_t selector, uint8_t type,
                                           bool long_mode)
{
    struct kvm_segment seg = {.base = 0,
                              .limit = 0xFFFFFFFF,
                              .selector = selector,
                              .type = type,
                              .present = 1,
                              .dpl = 0,
                              .db = !long_mode,
                              .s = 1,
                              .l = long_mode,
                              .g = 1};

    return seg;
}

int lapict_vmm_vm_long_mode(struct lapict_vmm_vm *v, uint64_t rip, uint64_t rsp)
{
    uint64_t *pml4 = (uint64_t *)(v->mem + 0x2000);
    uint64_t *pdpt = (uint64_t *)(v->mem + 0x3000);
    uint64_t *gdt = (uint64_t *)(v->mem + 0x1000);
    struct kvm_segment cs = lapict_vmm_flat_segment(8, 11, true);
    struct kvm_segment ds = lapict_vmm_flat_segment(16, 3, false);
    struct kvm_segment tr = {.base = 0,
                             .limit = 0x67,
                             .selector = 24,
                             .type = 11,
                             .present = 1,
                             .s = 0};
    struct kvm_sregs s;
    struct kvm_regs r;

    pml4[0] = 0x3000 | 3;
    for (uint64_t i = 0; i < 4; i++) {
        uint64_t *pd = (uint64_t *)(v->mem + 0x4000 + i * 0x1000);
        pdpt[i] = (0x4000 + i * 0x1000) | 3;
        for (uint64_t j = 0; j < 512; j++) {
            uint64_t a = (i * 512 + j) << 21;
            pd[j] = a | 0x83; /* present, writable, 2 MiB */
            if (a >= 0xFEC00000ull)
                pd[j] |= 0x18; /* APIC/IOAPIC region uncached */
        }
    }
    gdt[0] = 0;
    gdt[1] = 0x00AF9B000000FFFFull; /* 64-bit code */
    gdt[2] = 0x00CF93000000FFFFull; /* data */
    gdt[3] = 0x00008B0000000067ull; /* busy TSS, base 0 */

    if (ioctl(v->vcpu, KVM_GET_SREGS, &s) < 0)
        return -errno;
    s.cs = cs;
    s.ds = s.es = s.fs = s.gs = s.ss = ds;
    s.tr = tr;
    s.gdt.base = 0x1000;
    s.gdt.limit = 4 * 8 - 1;
    s.idt.base = 0;
    s.idt.limit = 0;
    s.cr3 = 0x2000;
    s.cr4 = 0x20;       /* PAE */
    s.cr0 = 0x80050033; /* PG WP NE ET MP PE */
    s.efer = 0x500;     /* LMA LME */
    if (ioctl(v->vcpu, KVM_SET_SREGS, &s) < 0)
        return -errno;
    memset(&r, 0, sizeof(r));
    r.rip = rip;
    r.rsp = rsp;
    r.rflags = 2;
    if (ioctl(v->vcpu, KVM_SET_REGS, &r) < 0)
        return -errno;
    return 0;
}

uint8_t *lapict_vmm_read_file(const char *path, size_t *len, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), e;
    struct stat st;
    uint8_t *buf = NULL;
    size_t got = 0;

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0)
        goto out;
    if (st.st_size < 0 || (uint64_t)st.st_size > max) {
        errno = EFBIG;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        goto out;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0) {
            if (n == 0)
                errno = EIO; /* shrank under us */
            free(buf);
            buf = NULL;
            goto out;
        }
        got += (size_t)n;
    }
    *len = got;
out:
    e = errno;
    close(fd);
    errno = e;
    return buf;
}

static int kvm_error(struct lapict_vmm_vm *v, const char *hook, int rc)
{
    fprintf(stderr, "lapict-vmm: %s: %s (%s: %s)\n", hook, lapict_strerror(rc),
            lapict_kvm_errcall(v->k), strerror(lapict_kvm_errno(v->k)));
    return -1;
}

int lapict_vmm_vm_run(struct lapict_vmm_vm *v,
                      int (*on_exit)(void *arg, struct kvm_run *run), void *arg)
{
    return lapict_vmm_vm_run_points(v, on_exit, NULL, arg);
}

int lapict_vmm_vm_run_points(struct lapict_vmm_vm *v,
                             int (*on_exit)(void *arg, struct kvm_run *run),
                             int (*on_point)(void *arg), void *arg)
{
    struct kvm_run *r = v->run;
    int rc, e, status;

    for (;;) {
        if (on_point && (status = on_point(arg)) >= 0)
            return status;
        if (v->k && v->halted) {
            if ((rc = lapict_kvm_halt_wait(v->k)) < 0)
                return kvm_error(v, "lapict_kvm_halt_wait", rc);
            v->woke_tsc = __builtin_ia32_rdtsc();
            v->halted = false;
            continue;
        }
        if (v->k && (rc = lapict_kvm_pre_run(v->k)) < 0)
            return kvm_error(v, "lapict_kvm_pre_run", rc);
        if (v->k && v->k->injected) {
            v->inject_tsc = __builtin_ia32_rdtsc();
            if (v->seg && v->nseg < v->seg_max)
                v->seg[v->nseg++] = (struct lapict_vmm_seg){
                    __atomic_exchange_n(&v->fired_tsc, 0, __ATOMIC_SEQ_CST),
                    v->woke_tsc, v->inject_tsc};
        }
        if (v->woke_tsc) {
            v->user_cycles += __builtin_ia32_rdtsc() - v->woke_tsc;
            v->user_runs++;
        }
        e = ioctl(v->vcpu, KVM_RUN, 0) < 0 ? -errno : 0;
        v->woke_tsc = __builtin_ia32_rdtsc();
        if (v->k) {
            rc = lapict_kvm_handle_exit(v->k, e);
            if (rc == LAPICT_KVM_MINE)
                continue;
            if (rc == LAPICT_KVM_HALTED) {
                v->halted = true;
                continue;
            }
            if (rc < 0)
                return kvm_error(v, "lapict_kvm_handle_exit", rc);
        } else if (e == -EINTR || e == -EAGAIN) {
            continue;
        } else if (e < 0) {
            fprintf(stderr, "lapict-vmm: KVM_RUN: %s\n", strerror(-e));
            return -1;
        }
        if (r->exit_reason == KVM_EXIT_X86_RDMSR ||
            r->exit_reason == KVM_EXIT_X86_WRMSR) {
            /* An MSR neither KVM nor the LAPIC knows: #GP, as hardware. */
            r->msr.error = 1;
            continue;
        }
        if ((status = on_exit(arg, r)) >= 0)
            return status;
    }
}

/* --- save and restore ----------------------------------------------------- */

uint64_t lapict_vmm_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The MSRs a guest of this VMM may have set that SREGS does not carry.
 * Not IA32_TSC (the offset travels instead), IA32_APIC_BASE and
 * IA32_TSC_DEADLINE (the LAPIC's blobs). Those KVM cannot read are left out.
 */
static const uint32_t snap_msrs[] = {
    0x174,      0x175,      0x176,                  /* SYSENTER_CS/ESP/EIP */
    0x277,                                          /* PAT */
    0xC0000081, 0xC0000082, 0xC0000083, 0xC0000084, /* STAR .. FMASK */
    0xC0000102,                                     /* KERNEL_GS_BASE */
    0xC0000103,                                     /* TSC_AUX */
};

union msr_one {
    struct kvm_msrs h;
    uint8_t raw[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
};

static int msr_io(int vcpu, unsigned long req, struct kvm_msr_entry *e)
{
    union msr_one m;

    memset(&m, 0, sizeof(m));
    m.h.nmsrs = 1;
    memcpy(m.raw + sizeof(m.h), e, sizeof(*e));
    if (ioctl(vcpu, req, &m) != 1)
        return -1;
    memcpy(e, m.raw + sizeof(m.h), sizeof(*e));
    return 0;
}

static int tsc_offset_io(int vcpu, unsigned long req, int64_t *off)
{
    uint64_t o = (uint64_t)*off;
    struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
                                .attr = KVM_VCPU_TSC_OFFSET,
                                .addr = (uint64_t)(uintptr_t)&o};
    int rc = ioctl(vcpu, req, &a);

    *off = (int64_t)o;
    return rc;
}

int lapict_vmm_vm_save(struct lapict_vmm_vm *v, struct lapict_vmm_snap *s,
                       bool irr_first, bool service, char *err, size_t err_len)
{
    size_t np = v->ram_bytes / 4096;
    unsigned char *res = NULL;
    int rc;

    memset(s, 0, sizeof(*s));
    if (!v->k)
        return lapict_vmm_fail(err, err_len, "save: needs the userspace LAPIC");
    s->ram_bytes = v->ram_bytes;
    s->halted = v->halted;
    s->irr_first = irr_first;
    /*
     * KVM completes an I/O, MMIO or MSR exit (writes the data, moves RIP
     * past the instruction) only at the next KVM_RUN, and keeps that step
     * in no state userspace can save: a VM saved right after a TMICT write
     * would write it again when resumed, restarting the count-down. So
     * re-enter with immediate_exit, which finishes the operation and
     * returns EINTR before any guest instruction (KVM's API documentation,
     * "KVM_RUN"). The LAPIC's hooks are not involved: nothing is injected.
     */
    __atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
    rc = ioctl(v->vcpu, KVM_RUN, 0) < 0 ? errno : 0;
    __atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
    if (rc != EINTR && rc != EAGAIN) {
        errno = rc ? rc : EPROTO;
        return fail_errno(err, err_len, "save: KVM_RUN to complete the exit");
    }
    /*
     * The model and the timer, in the order asked (either is right: a due
     * expiry travels as pending in the timer's blob, a delivered one is in
     * IRR; the save of the timer has no side effects).
     */
    /* Serviced right before the instant of the save, so that nothing can
     * fall due in between (a preempted thread would leave a gap). */
    if (service)
        lapict_irq_window_open(&v->k->timer);
    s->stop_ns = lapict_vmm_mono_ns();
    s->stop_tsc = lapict_kvm_guest_tsc(v->k);
    if (irr_first && lapict_apic_save(&v->k->apic, s->apic, sizeof(s->apic)))
        return lapict_vmm_fail(err, err_len, "lapict_apic_save failed");
    rc = lapict_state_save_at(&v->k->timer, s->stop_ns, s->stop_tsc, s->timer,
                              sizeof(s->timer));
    if (rc)
        return lapict_vmm_fail(err, err_len, "lapict_state_save_at: %s",
                               lapict_strerror(rc));
    if (!irr_first && lapict_apic_save(&v->k->apic, s->apic, sizeof(s->apic)))
        return lapict_vmm_fail(err, err_len, "lapict_apic_save failed");
    if (ioctl(v->vcpu, KVM_GET_REGS, &s->regs) < 0)
        return fail_errno(err, err_len, "KVM_GET_REGS");
    if (ioctl(v->vcpu, KVM_GET_SREGS, &s->sregs) < 0)
        return fail_errno(err, err_len, "KVM_GET_SREGS");
    if (ioctl(v->vcpu, KVM_GET_FPU, &s->fpu) < 0)
        return fail_errno(err, err_len, "KVM_GET_FPU");
    s->have_xcrs = ioctl(v->vcpu, KVM_GET_XCRS, &s->xcrs) == 0;
    /* An event the LAPIC queued through sync regs and KVM has not taken
     * yet is the one that counts (the stop points have none). */
    if (v->run->kvm_dirty_regs & KVM_SYNC_X86_EVENTS)
        s->events = v->run->s.regs.events;
    else if (ioctl(v->vcpu, KVM_GET_VCPU_EVENTS, &s->events) < 0)
        return fail_errno(err, err_len, "KVM_GET_VCPU_EVENTS");
    for (size_t i = 0; i < sizeof(snap_msrs) / sizeof(snap_msrs[0]); i++) {
        struct kvm_msr_entry e = {.index = snap_msrs[i]};
        if (msr_io(v->vcpu, KVM_GET_MSRS, &e) == 0)
            s->msrs[s->nmsrs++] = e;
    }
    if (tsc_offset_io(v->vcpu, KVM_GET_DEVICE_ATTR, &s->tsc_offset) < 0)
        s->tsc_offset = v->k->tsc_offset; /* the adapter's estimate */
    /* RAM: the resident pages that are not all zero (the rest reads 0 in
     * a new VM too); mincore keeps untouched pages untouched. */
    res = malloc(np);
    s->page_idx = malloc(np * sizeof(*s->page_idx));
    if (!res || !s->page_idx || mincore(v->mem, v->ram_bytes, res) < 0) {
        free(res);
        lapict_vmm_snap_free(s);
        return fail_errno(err, err_len, "save: RAM");
    }
    for (size_t i = 0; i < np; i++) {
        static const uint8_t zero[4096];
        if ((res[i] & 1) && memcmp(v->mem + i * 4096, zero, 4096))
            s->page_idx[s->npages++] = (uint32_t)i;
    }
    free(res);
    s->pages = malloc((size_t)s->npages * 4096 + 1);
    if (!s->pages) {
        lapict_vmm_snap_free(s);
        return lapict_vmm_fail(err, err_len, "save: out of memory");
    }
    for (uint32_t i = 0; i < s->npages; i++)
        memcpy(s->pages + (size_t)i * 4096,
               v->mem + (size_t)s->page_idx[i] * 4096, 4096);
    return 0;
}

void lapict_vmm_snap_free(struct lapict_vmm_snap *s)
{
    free(s->page_idx);
    free(s->pages);
    s->page_idx = NULL;
    s->pages = NULL;
    s->npages = 0;
}

int lapict_vmm_snap_check(const struct lapict_vmm_snap *s, uint64_t ram_bytes,
                          char *err, size_t err_len)
{
    uint32_t prev = 0;

    if (s->ram_bytes != ram_bytes || s->nmsrs > LAPICT_VMM_SNAP_MSRS)
        return lapict_vmm_fail(err, err_len, "snapshot does not fit the VM");
    for (uint32_t i = 0; i < s->npages; i++) {
        if ((uint64_t)s->page_idx[i] >= ram_bytes / 4096 ||
            (i && s->page_idx[i] <= prev))
            return lapict_vmm_fail(err, err_len, "bad page list");
        prev = s->page_idx[i];
    }
    return 0;
}

int lapict_vmm_vm_restore(struct lapict_vmm_vm *v,
                          const struct lapict_vmm_snap *s,
                          const struct lapict_kvm_config *cfg,
                          uint64_t *restore_ns, char *err, size_t err_len)
{
    struct kvm_vcpu_events ev = s->events;
    int64_t off = s->tsc_offset, got;
    int rc;

    if (lapict_vmm_snap_check(s, v->ram_bytes, err, err_len) < 0)
        return -1;
    for (uint32_t i = 0; i < s->npages; i++) {
        memcpy(v->mem + (size_t)s->page_idx[i] * 4096,
               s->pages + (size_t)i * 4096, 4096);
    }
    if (ioctl(v->vcpu, KVM_SET_SREGS, &s->sregs) < 0)
        return fail_errno(err, err_len, "KVM_SET_SREGS");
    if (ioctl(v->vcpu, KVM_SET_REGS, &s->regs) < 0)
        return fail_errno(err, err_len, "KVM_SET_REGS");
    if (ioctl(v->vcpu, KVM_SET_FPU, &s->fpu) < 0)
        return fail_errno(err, err_len, "KVM_SET_FPU");
    if (s->have_xcrs && ioctl(v->vcpu, KVM_SET_XCRS, &s->xcrs) < 0)
        return fail_errno(err, err_len, "KVM_SET_XCRS");
    for (uint32_t i = 0; i < s->nmsrs; i++) {
        struct kvm_msr_entry e = s->msrs[i];
        if (msr_io(v->vcpu, KVM_SET_MSRS, &e) < 0)
            return lapict_vmm_fail(err, err_len, "KVM_SET_MSRS 0x%x refused",
                                   e.index);
    }
    /* What KVM's GET reported as valid, minus what needs an irqchip or a
     * capability this VM did not enable. */
    ev.flags &= KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SHADOW |
                KVM_VCPUEVENT_VALID_SMM;
    if (ioctl(v->vcpu, KVM_SET_VCPU_EVENTS, &ev) < 0)
        return fail_errno(err, err_len, "KVM_SET_VCPU_EVENTS");
    /*
     * The guest TSC stays continuous as a migrating VMM keeps it: the
     * source's offset to the host TSC (one host, one TSC), so the guest TSC
     * after = before + the host time that passed. KVM (or PVM, which keeps
     * the guest TSC at the host's and ignores offsets) must then report it:
     * a VMM whose offset did not take would hand lapict a wrong clock.
     */
    if (tsc_offset_io(v->vcpu, KVM_SET_DEVICE_ATTR, &off) < 0) {
        struct kvm_msr_entry e = {.index = 0x10,
                                  .data = __builtin_ia32_rdtsc() +
                                          (uint64_t)s->tsc_offset};
        if (msr_io(v->vcpu, KVM_SET_MSRS, &e) < 0)
            return lapict_vmm_fail(err, err_len, "restore: cannot set the TSC");
    }
    if (lapict_vmm_vm_lapic(v, cfg, err, err_len) < 0)
        return -1;
    got = v->k->tsc_offset;
    if (got != s->tsc_offset &&
        (got - s->tsc_offset > 100000 || s->tsc_offset - got > 100000))
        return lapict_vmm_fail(err, err_len,
                               "restore: guest TSC offset %lld, wanted %lld",
                               (long long)got, (long long)s->tsc_offset);
    *restore_ns = lapict_vmm_mono_ns();
    rc = lapict_kvm_restore(v->k, s->apic, sizeof(s->apic), s->timer,
                            sizeof(s->timer), s->halted);
    if (rc < 0)
        return lapict_vmm_fail(err, err_len, "lapict_kvm_restore: %s",
                               lapict_strerror(rc));
    v->halted = rc == LAPICT_KVM_HALTED;
    return 0;
}

/* The file: magic, the fixed part, the page list, pages, the caller's. */
#define SNAP_MAGIC "LAPICT-VMM-SNAP1"

int lapict_vmm_snap_write(const char *path, const struct lapict_vmm_snap *s,
                          const void *extra, size_t extra_len)
{
    FILE *f = fopen(path, "wb");
    uint64_t xl = extra_len;
    bool ok;

    if (!f)
        return -1;
    ok = fwrite(SNAP_MAGIC, 16, 1, f) == 1 &&
         fwrite(s, sizeof(*s), 1, f) == 1 &&
         (!s->npages ||
          (fwrite(s->page_idx, sizeof(uint32_t), s->npages, f) == s->npages &&
           fwrite(s->pages, 4096, s->npages, f) == s->npages)) &&
         fwrite(&xl, sizeof(xl), 1, f) == 1 &&
         (!extra_len || fwrite(extra, extra_len, 1, f) == 1);
    if (fclose(f) != 0 || !ok) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

int lapict_vmm_snap_read(const char *path, struct lapict_vmm_snap *s,
                         void *extra, size_t extra_len, char *err,
                         size_t err_len)
{
    FILE *f = fopen(path, "rb");
    char magic[16];
    uint64_t xl = 0;
    const char *why = NULL;

    memset(s, 0, sizeof(*s));
    if (!f)
        return fail_errno(err, err_len, path);
    if (fread(magic, 16, 1, f) != 1 || memcmp(magic, SNAP_MAGIC, 16))
        why = "not a lapict-vmm snapshot";
    else if (fread(s, sizeof(*s), 1, f) != 1)
        why = "truncated";
    /* Pointers in the file mean nothing (a short read left some). */
    s->page_idx = NULL;
    s->pages = NULL;
    if (!why) {
        if ((uint64_t)s->npages > s->ram_bytes / 4096 ||
            s->ram_bytes > (1ull << 34))
            why = "bad page count";
    }
    if (why)
        s->npages = 0;
    if (!why && s->npages) {
        s->page_idx = malloc((size_t)s->npages * sizeof(uint32_t));
        s->pages = malloc((size_t)s->npages * 4096);
        if (!s->page_idx || !s->pages)
            why = "out of memory";
        else if (fread(s->page_idx, sizeof(uint32_t), s->npages, f) !=
                     s->npages ||
                 fread(s->pages, 4096, s->npages, f) != s->npages)
            why = "truncated";
    }
    if (!why && (fread(&xl, sizeof(xl), 1, f) != 1 || xl != extra_len ||
                 (extra_len && fread(extra, extra_len, 1, f) != 1)))
        why = "the caller's state does not match";
    if (!why && fgetc(f) != EOF)
        why = "trailing bytes";
    fclose(f);
    if (why) {
        lapict_vmm_snap_free(s);
        return lapict_vmm_fail(err, err_len, "%s: %s", path, why);
    }
    return 0;
}

static const char *timeout_what = "the guest did not finish";

static void on_alarm(int sig)
{
    static const char pre[] = "lapict-vmm: timeout, ";
    (void)sig;
    if (write(2, pre, sizeof(pre) - 1) < 0 ||
        write(2, timeout_what, strlen(timeout_what)) < 0 ||
        write(2, "\n", 1) < 0)
        _exit(LAPICT_VMM_STATUS_TIMEOUT);
    _exit(LAPICT_VMM_STATUS_TIMEOUT);
}

void lapict_vmm_timeout(unsigned s, const char *what)
{
    if (what)
        timeout_what = what;
    signal(SIGALRM, on_alarm);
    alarm(s);
}
