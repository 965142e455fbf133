/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm's one VM layer, used by the project's guests (main.c) and the
 * multiboot path (platform.c) alike: create and destroy a one-vCPU VM with
 * its LAPIC (KVM's in-kernel one, or adapters/kvm in userspace), CPUID,
 * guest RAM from 0, image loading, long-mode entry state, and the run loop
 * (the adapter's hooks around the VMM's own KVM_RUN).
 */
#ifndef LAPICT_VMM_VM_H
#define LAPICT_VMM_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "lapict_kvm.h"

/* Exit status of a run that timed out, whichever guest (as timeout(1);
 * even, so never an isa-debug-exit status). */
#define LAPICT_VMM_STATUS_TIMEOUT 124

struct lapict_vmm_vm {
    int kvm, vm, vcpu; /* -1: not open */
    uint8_t *mem;      /* guest RAM, guest physical 0 at mem[0] */
    uint64_t ram_bytes;
    struct kvm_run *run;
    size_t run_size;
    struct kvm_cpuid2 *cpuid; /* as given to KVM_SET_CPUID2 */
    bool lapic_kernel;        /* KVM_CREATE_IRQCHIP, else adapters/kvm */
    struct lapict_kvm *k;     /* the userspace LAPIC (lapict_vmm_vm_lapic) */
    /* The guest halted (LAPICT_KVM_HALTED) and the loop has not waited
     * for it yet: a VM stopped there is saved halted. */
    bool halted;
    /* Host TSC right before the last KVM_RUN that carried an injected
     * interrupt (userspace LAPIC only): the start of the entry floor. */
    uint64_t inject_tsc;
    /* Host TSC when the vCPU thread last came back from KVM_RUN or
     * lapict_kvm_halt_wait(). */
    uint64_t woke_tsc;
    /* Host TSC cycles the vCPU thread spent between KVM_RUNs (back from
     * one to the next, halt waits left out) and the KVM_RUNs counted: what
     * the VMM and the LAPIC cost on top of the exits themselves. */
    uint64_t user_cycles, user_runs;
    /* Host TSC of the first host timer fire since the last injection
     * (0: none; atomic): the adapter's fired hook, unless the config that
     * lapict_vmm_vm_lapic() was given has one of its own. */
    uint64_t fired_tsc;
    /* Optional (caller's array, NULL: none): per injecting KVM_RUN, the
     * host timer fire (fired_tsc), woke_tsc and inject_tsc. */
    struct lapict_vmm_seg {
        uint64_t fired_tsc, woke_tsc, inject_tsc;
    } * seg;
    uint64_t nseg, seg_max;
    /* IPIs the guest sent that reached no CPU or asked for what this VMM
     * does not do (INIT, start-up, SMI): it has one vCPU. The first is
     * kept for the report (lapict_vmm_vm_destroy()). Userspace LAPIC
     * only, and only if lapict_vmm_vm_lapic() set the ipi op. */
    uint64_t ipis_undelivered;
    struct lapict_apic_ipi first_undelivered;
};

/* MSRs a snapshot carries besides what SREGS has (EFER) and the LAPIC's. */
#define LAPICT_VMM_SNAP_MSRS 16

/*
 * A stopped VM with the userspace LAPIC, as a migration carries it: guest
 * RAM (the resident non-zero pages), registers, FPU, XCRs, MSRs, vCPU
 * events, the TSC offset, the LAPIC model's blob and the timer's blob.
 */
struct lapict_vmm_snap {
    uint64_t ram_bytes;
    uint32_t npages;    /* pages[] holds npages pages of 4 KiB */
    uint32_t *page_idx; /* their page numbers, ascending (malloc) */
    uint8_t *pages;     /* (malloc) */
    struct kvm_regs regs;
    struct kvm_sregs sregs;
    struct kvm_fpu fpu;
    struct kvm_vcpu_events events;
    struct kvm_xcrs xcrs;
    uint32_t have_xcrs, nmsrs;
    struct kvm_msr_entry msrs[LAPICT_VMM_SNAP_MSRS];
    int64_t tsc_offset; /* guest TSC - host TSC (KVM_VCPU_TSC_OFFSET) */
    uint64_t stop_ns;   /* CLOCK_MONOTONIC of the timer's save */
    uint64_t stop_tsc;  /* the guest TSC then */
    uint32_t halted;    /* saved in a halt (struct lapict_vmm_vm) */
    uint32_t irr_first; /* the model (IRR) was saved before the timer */
    uint8_t apic[LAPICT_APIC_STATE_SIZE];
    uint8_t timer[LAPICT_STATE_SIZE];
};

/**
 * lapict_vmm_vm_create() - a VM with one vCPU.
 * @v: caller-allocated.
 * @ram_bytes: guest RAM from 0 (no hole: the APIC pages are unassigned).
 * @lapic_kernel: KVM's LAPIC (KVM_CREATE_IRQCHIP); else the VM is set up
 * for adapters/kvm (lapict_kvm_vm_setup()).
 * @x2apic: advertise x2APIC in CPUID.
 * @err: receives a message on failure.
 * @err_len: its size.
 *
 * CPUID is KVM_GET_SUPPORTED_CPUID (grown until KVM stops answering
 * E2BIG) with lapict_kvm_cpuid_fixup().
 *
 * Return: 0, or -1 with @err set (@v may be passed to destroy either way).
 */
int lapict_vmm_vm_create(struct lapict_vmm_vm *v, uint64_t ram_bytes,
                         bool lapic_kernel, bool x2apic, char *err,
                         size_t err_len);

/**
 * lapict_vmm_vm_lapic() - the userspace LAPIC of a !lapic_kernel VM.
 * @v: the VM.
 * @cfg: adapters/kvm configuration.
 * @err: receives a message on failure.
 * @err_len: its size.
 *
 * On the calling thread, which then runs the vCPU. Applies the VM's CPUID
 * to the LAPIC model. Unless @cfg has apic_ops of its own, routes the
 * model's IPIs as a one-vCPU machine can: a lowest-priority IPI that names
 * this vCPU is delivered to it; one that names no CPU of the VM, and every
 * INIT, start-up and SMI, is counted in ipis_undelivered.
 *
 * Return: 0, or -1 with @err set.
 */
int lapict_vmm_vm_lapic(struct lapict_vmm_vm *v,
                        const struct lapict_kvm_config *cfg, char *err,
                        size_t err_len);

/**
 * lapict_vmm_vm_destroy() - everything create and lapic made.
 * @v: the VM.
 *
 * First reports on standard error how many IPIs the guest sent that this
 * one-vCPU VMM could not deliver, if any, with the first of them.
 */
void lapict_vmm_vm_destroy(struct lapict_vmm_vm *v);

/**
 * lapict_vmm_fail() - a failure of the VM layer, in words.
 * @err: receives the message (printf @fmt and its arguments).
 * @len: its size.
 * @fmt: the message's format.
 *
 * Return: -1, for `return lapict_vmm_fail(...)`.
 */
int lapict_vmm_fail(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * lapict_vmm_flat_segment() - a flat ring-0 segment for a segment register.
 * @selector: its GDT selector.
 * @type: the descriptor type (11: code, execute/read, accessed; 3: data,
 *        read/write, accessed).
 * @long_mode: a 64-bit code segment (L set, D/B clear); otherwise D/B is
 *             set (32-bit operands).
 *
 * Base 0, limit 4 GiB in pages, present, a code or data descriptor: the
 * one shape every entry state of the VM layer loads, 64-bit and
 * protected-mode alike.
 *
 * Return: the segment, for KVM_SET_SREGS.
 */
struct kvm_segment lapict_vmm_flat_segment(uint16_t selector, uint8_t type,
                                           bool long_mode);

/**
 * lapict_vmm_vm_long_mode() - 64-bit entry state.
 * @v: the VM (RAM of at least 1 MiB).
 * @rip: entry point.
 * @rsp: stack pointer.
 *
 * Page tables at 0x2000-0x7FFF identity-map 0-4 GiB with 2 MiB pages
 * (uncached from 0xFEC00000); GDT at 0x1000 with a 64-bit code segment
 * (0x08), data (0x10) and a busy TSS (0x18); no IDT; RFLAGS 0x2.
 *
 * Return: 0 or -errno.
 */
int lapict_vmm_vm_long_mode(struct lapict_vmm_vm *v, uint64_t rip,
                            uint64_t rsp);

/**
 * lapict_vmm_read_file() - a whole file, for loading.
 * @path: the file.
 * @len: receives its size.
 * @max: the largest size accepted.
 *
 * Return: malloc'ed bytes (free()), or NULL (errno set; EFBIG: > @max).
 */
uint8_t *lapict_vmm_read_file(const char *path, size_t *len, size_t max);

/**
 * lapict_vmm_vm_run() - run the vCPU until @on_exit says stop.
 * @v: the VM.
 * @on_exit: the VMM's exits (I/O, MMIO and others the LAPIC did not take);
 * returns -1 to go on, else the status to stop with.
 * @arg: passed to @on_exit.
 *
 * With the userspace LAPIC this is the VMM's own loop around the adapter's
 * hooks: lapict_kvm_pre_run(), KVM_RUN, lapict_kvm_handle_exit(),
 * lapict_kvm_halt_wait(). MSR exits nobody claims are completed with #GP,
 * as on hardware; kicks (-EINTR) resume.
 *
 * Return: @on_exit's status, or -1 after a VMM error (printed on stderr).
 */
int lapict_vmm_vm_run(struct lapict_vmm_vm *v,
                      int (*on_exit)(void *arg, struct kvm_run *run),
                      void *arg);

/**
 * lapict_vmm_vm_run_points() - lapict_vmm_vm_run() with a stop point.
 * @v: the VM.
 * @on_exit: as for lapict_vmm_vm_run().
 * @on_point: called between exits, where the vCPU is stopped and nothing
 * is queued for the next entry (before lapict_kvm_pre_run(), or before the
 * wait of a halt, v->halted set): returns -1 to go on, else the status to
 * stop with (a migration saves the VM there). NULL: none.
 * @arg: passed to both.
 *
 * Return: as lapict_vmm_vm_run().
 */
int lapict_vmm_vm_run_points(struct lapict_vmm_vm *v,
                             int (*on_exit)(void *arg, struct kvm_run *run),
                             int (*on_point)(void *arg), void *arg);

/**
 * lapict_vmm_vm_save() - save a VM stopped at a point (on_point).
 * @v: the VM, with the userspace LAPIC.
 * @s: receives the state (lapict_vmm_snap_free() after).
 * @irr_first: save the LAPIC model (IRR) before the timer, else after.
 * @service: service the timer first, as the vCPU loop would before the
 * next entry (lapict_irq_window_open(): due expiries processed and
 * counted, offered to the guest if it can take one).
 * @err: receives a message on failure.
 * @err_len: its size.
 *
 * The timer is saved with lapict_state_save_at() at s->stop_ns.
 *
 * Return: 0, or -1 with @err set.
 */
int lapict_vmm_vm_save(struct lapict_vmm_vm *v, struct lapict_vmm_snap *s,
                       bool irr_first, bool service, char *err, size_t err_len);

/**
 * lapict_vmm_vm_restore() - continue a saved VM in a new one.
 * @v: a VM just made by lapict_vmm_vm_create() (no LAPIC yet), with the
 * snapshot's RAM size.
 * @s: the state (untrusted if read from a file: checked).
 * @cfg: the LAPIC's configuration.
 * @restore_ns: receives CLOCK_MONOTONIC right before the timer's restore
 * (the timer stood still from s->stop_ns to then, docs/spec/timer.md section
 * 8). @err: receives a message on failure.
 * @err_len: its size.
 *
 * Sets the registers, then the TSC offset the source had (the guest TSC
 * kept continuous: the downtime passes as time), then the LAPIC
 * (lapict_kvm_restore()).
 *
 * Return: 0, or -1 with @err set.
 */
int lapict_vmm_vm_restore(struct lapict_vmm_vm *v,
                          const struct lapict_vmm_snap *s,
                          const struct lapict_kvm_config *cfg,
                          uint64_t *restore_ns, char *err, size_t err_len);

/**
 * lapict_vmm_snap_check() - does the snapshot fit a VM of @ram_bytes.
 * @s: the state (untrusted if read from a file).
 * @ram_bytes: the VM's RAM.
 * @err: receives a message on failure.
 * @err_len: its size.
 *
 * What lapict_vmm_vm_restore() checks before it changes anything: the
 * RAM size, the MSR count, the page list (ascending, inside RAM). Needs
 * no VM, so a VMM can check a file before it opens /dev/kvm.
 *
 * Return: 0, or -1 with @err set.
 */
int lapict_vmm_snap_check(const struct lapict_vmm_snap *s, uint64_t ram_bytes,
                          char *err, size_t err_len);

/** lapict_vmm_snap_free() - the snapshot's buffers. */
void lapict_vmm_snap_free(struct lapict_vmm_snap *s);

/**
 * lapict_vmm_snap_write() - a snapshot and the caller's bytes to a file.
 * @path: the file (replaced).
 * @s: the state.
 * @extra: the caller's own state (e.g. a test's counters), @extra_len bytes.
 * @extra_len: at most 1 MiB.
 *
 * Return: 0 or -1 (errno set).
 */
int lapict_vmm_snap_write(const char *path, const struct lapict_vmm_snap *s,
                          const void *extra, size_t extra_len);

/**
 * lapict_vmm_snap_read() - the reverse, checking the file's structure.
 * @path: the file.
 * @s: receives the state.
 * @extra: receives exactly @extra_len bytes of the caller's state.
 * @extra_len: their expected size.
 * @err: receives a message on failure.
 * @err_len: its size.
 *
 * Return: 0, or -1 with @err set (@s holds nothing to free then).
 */
int lapict_vmm_snap_read(const char *path, struct lapict_vmm_snap *s,
                         void *extra, size_t extra_len, char *err,
                         size_t err_len);

/** lapict_vmm_mono_ns() - CLOCK_MONOTONIC, ns. */
uint64_t lapict_vmm_mono_ns(void);

/**
 * lapict_vmm_timeout() - exit with LAPICT_VMM_STATUS_TIMEOUT after @s s.
 * @s: seconds; 0 cancels.
 * @what: the message's subject ("the guest did not finish").
 */
void lapict_vmm_timeout(unsigned s, const char *what);

#endif
