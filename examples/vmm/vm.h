/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm's one VM layer, used by the project's guests (vmm.c) and the
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
    int kvm, vm, vcpu;     /* -1: not open */
    uint8_t *mem;          /* guest RAM, guest physical 0 at mem[0] */
    uint64_t ram_bytes;
    struct kvm_run *run;
    size_t run_size;
    struct kvm_cpuid2 *cpuid; /* as given to KVM_SET_CPUID2 */
    bool lapic_kernel;     /* KVM_CREATE_IRQCHIP, else adapters/kvm */
    struct lapict_kvm *k;  /* the userspace LAPIC (lapict_vmm_vm_lapic) */
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
 * to the LAPIC model.
 *
 * Return: 0, or -1 with @err set.
 */
int lapict_vmm_vm_lapic(struct lapict_vmm_vm *v,
                        const struct lapict_kvm_config *cfg, char *err,
                        size_t err_len);

/** lapict_vmm_vm_destroy() - everything create and lapic made. */
void lapict_vmm_vm_destroy(struct lapict_vmm_vm *v);

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
 * lapict_vmm_timeout() - exit with LAPICT_VMM_STATUS_TIMEOUT after @s s.
 * @s: seconds; 0 cancels.
 * @what: the message's subject ("the guest did not finish").
 */
void lapict_vmm_timeout(unsigned s, const char *what);

#endif
