/* SPDX-License-Identifier: MIT */
/*
 * A VMM's vCPU loop with lapict as its local-APIC timer, through the KVM
 * adapter's hooks: lapict_kvm_pre_run() before each KVM_RUN,
 * lapict_kvm_handle_exit() after it (the exit is the adapter's, a HLT to
 * wait out, or the VMM's own), lapict_kvm_halt_wait() for a halted vCPU.
 * The adapter never runs the loop itself, so any VMM keeps its own. The
 * guest is a few real-mode instructions: x2APIC on, a 1 ms periodic timer
 * on vector 0x40, then HLT in a loop; its handler writes port 0x10 and
 * EOIs. Exit status 0 after five ticks, 1 on a failure, 77 (skipped) where
 * /dev/kvm cannot run a VM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kvm.h>

#include <lapict/lapict.h>
#include <lapict_kvm.h>

#define MEM 0x10000u /* guest RAM at 0 */
#define CODE 0x1000u /* CS:IP 0:0x1000 */
#define WRMSR(msr_lo, msr_hi, v0, v1, v2, v3)                                  \
    0x66, 0xB9, msr_lo, msr_hi, 0, 0, /* mov ecx, msr */                       \
        0x66, 0xB8, v0, v1, v2, v3,   /* mov eax, value */                     \
        0x66, 0x31, 0xD2, 0x0F, 0x30  /* xor edx, edx; wrmsr */

/* clang-format off */
static const uint8_t guest[] = {
    0xC7, 0x06, 0x00, 0x01, 0x64, 0x10,        /* IVT[0x40].ip = 0x1064 */
    0xC7, 0x06, 0x02, 0x01, 0x00, 0x00,        /* IVT[0x40].cs = 0 */
    0x66, 0xB9, 0x1B, 0x00, 0x00, 0x00, 0x0F, 0x32, /* rdmsr APIC_BASE */
    0x66, 0x0D, 0x00, 0x0C, 0x00, 0x00, 0x0F, 0x30, /* EN | EXTD, wrmsr */
    WRMSR(0x0F, 0x08, 0xFF, 0x01, 0x00, 0x00), /* SVR: APIC on */
    WRMSR(0x3E, 0x08, 0x0B, 0x00, 0x00, 0x00), /* TDCR: divide by 1 */
    WRMSR(0x32, 0x08, 0x40, 0x00, 0x02, 0x00), /* LVTT: periodic, 0x40 */
    WRMSR(0x38, 0x08, 0x40, 0x42, 0x0F, 0x00), /* TMICT: 1 ms at 1 GHz */
    0xFB, 0xF4, 0xEB, 0xFC,                    /* 0x1060: sti; hlt; jmp */
    0xB0, 0x01, 0xE6, 0x10,                    /* 0x1064: out 0x10, al */
    WRMSR(0x0B, 0x08, 0x00, 0x00, 0x00, 0x00), /* EOI */
    0xCF,                                      /* iret */
};
/* clang-format on */

static int fail(const char *what, int err)
{
    fprintf(stderr, "kvm_loop: %s: %s\n", what, strerror(err));
    return 1;
}

/* The vCPU loop: the adapter's hooks around KVM_RUN, the VMM's port 0x10. */
static int run_vcpu(struct lapict_kvm *k, int vcpu, struct kvm_run *run)
{
    unsigned ticks = 0;

    while (ticks < 5) {
        int rc = lapict_kvm_pre_run(k);

        if (rc >= 0) {
            int e = ioctl(vcpu, KVM_RUN, 0) < 0 ? -errno : 0;
            rc = lapict_kvm_handle_exit(k, e);
        }
        if (rc == LAPICT_KVM_HALTED) {
            rc = lapict_kvm_halt_wait(k);
            if (rc == LAPICT_OK)
                continue; /* an interrupt can be taken: enter again */
        }
        if (rc < 0) {
            fprintf(stderr, "kvm_loop: %s\n", lapict_strerror(rc));
            return 1;
        }
        if (rc == LAPICT_KVM_MINE)
            continue; /* the LAPIC's exit: enter again */
        /* LAPICT_KVM_NOT_MINE: the VMM's own exit, here its port 0x10. */
        if (run->exit_reason != KVM_EXIT_IO || run->io.port != 0x10) {
            fprintf(stderr, "kvm_loop: exit %u\n", run->exit_reason);
            return 1;
        }
        printf("tick %u\n", ++ticks);
    }
    return 0;
}

int main(void)
{
    struct kvm_cpuid2 *cpuid;
    struct lapict_kvm_config cfg;
    struct lapict_kvm k;
    struct kvm_sregs sregs;
    struct kvm_regs regs = {.rip = CODE, .rsp = CODE, .rflags = 0x2};
    struct kvm_run *run;
    uint8_t *mem;
    int kvm, vm, vcpu, rc;

    kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
    if (vm < 0) {
        printf("kvm_loop: SKIP: no usable /dev/kvm: %s\n", strerror(errno));
        return 77;
    }
    /* No in-kernel irqchip: the LAPIC is the adapter's, in this process. */
    if (lapict_kvm_vm_setup(vm) < 0)
        return fail("lapict_kvm_vm_setup", errno);
    mem = mmap(NULL, MEM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    if (mem == MAP_FAILED)
        return fail("mmap", errno);
    memcpy(mem + CODE, guest, sizeof(guest));
    struct kvm_userspace_memory_region region = {
        .memory_size = MEM, .userspace_addr = (uintptr_t)mem};
    if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
        return fail("KVM_SET_USER_MEMORY_REGION", errno);
    vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    run = mmap(NULL, (size_t)ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0),
               PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (vcpu < 0 || run == MAP_FAILED)
        return fail("vCPU", errno);
    if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
        return fail("KVM_GET_SREGS", errno);
    sregs.cs.base = sregs.cs.selector = 0;
    if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0 ||
        ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
        return fail("vCPU registers", errno);
    /*
     * The CPU the guest sees: KVM's, with the emulated LAPIC's bits.
     * Allocated after every check that may skip or fail, and freed once
     * lapict_kvm_set_cpuid() has read it: no return path leaks it.
     */
    cpuid = calloc(1, sizeof(*cpuid) + 256 * sizeof(cpuid->entries[0]));
    if (!cpuid)
        return fail("calloc", ENOMEM);
    cpuid->nent = 256;
    rc = ioctl(kvm, KVM_GET_SUPPORTED_CPUID, cpuid);
    if (rc == 0) {
        lapict_kvm_cpuid_fixup(cpuid, true);
        rc = ioctl(vcpu, KVM_SET_CPUID2, cpuid);
    }
    if (rc < 0) {
        rc = errno;
        free(cpuid);
        return fail("KVM_GET_SUPPORTED_CPUID / KVM_SET_CPUID2", rc);
    }

    lapict_kvm_config_default(&cfg); /* tsc_khz 0: KVM's guest TSC rate */
    rc = lapict_kvm_init(&k, vcpu, run, &cfg);
    if (rc != LAPICT_OK) {
        fprintf(stderr, "kvm_loop: init: %s\n", lapict_strerror(rc));
        free(cpuid);
        return 1;
    }
    lapict_kvm_set_cpuid(&k, cpuid);
    free(cpuid);
    alarm(30); /* a guest that never gets its interrupts fails, not hangs */
    rc = run_vcpu(&k, vcpu, run);
    lapict_kvm_destroy(&k);
    return rc;
}
