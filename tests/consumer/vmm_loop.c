/* SPDX-License-Identifier: MIT */
/*
 * A minimal VMM loop on the installed KVM adapter (liblapict-kvm): one
 * vCPU in real mode whose guest enables x2APIC, starts a 10 ms periodic
 * APIC timer (vector 0x40) and halts; its handler writes port 0x10 and
 * EOIs. The VMM runs the adapter's hooks around KVM_RUN until the guest
 * has taken five timer interrupts. docs/porting.md, "Embedding lapict in
 * your VMM", walks through this file (the porting_example test keeps the
 * two the same).
 *
 * Exit status: 0 after five interrupts, 1 on a failure, 77 (a test's
 * "skipped") where /dev/kvm cannot run a VM.
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
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>

#include <lapict/lapict.h>
#include <lapict_kvm.h>

#define SKIP 77
#define MEM_BYTES 0x10000u /* 64 KiB of guest memory at 0 */
#define CODE 0x1000u       /* where the guest starts, CS:IP 0:0x1000 */
#define TICKS 5u

/* The guest, real mode, at CODE (the assembly is in the comments). */
static const uint8_t guest[] = {
    0xC7, 0x06, 0x00, 0x01, 0x5B, 0x10, /* mov word [0x100], 0x105B: IVT 0x40 */
    0xC7, 0x06, 0x02, 0x01, 0x00, 0x00, /* mov word [0x102], 0 */
    0x66, 0xB9, 0x1B, 0x00, 0x00, 0x00, /* mov ecx, IA32_APIC_BASE */
    0x0F, 0x32,                         /* rdmsr */
    0x66, 0x0D, 0x00, 0x0C, 0x00, 0x00, /* or eax, EN | EXTD (x2APIC) */
    0x0F, 0x30,                         /* wrmsr */
    0x66, 0xB9, 0x0F, 0x08, 0x00, 0x00, /* mov ecx, SVR */
    0x66, 0xB8, 0xFF, 0x01, 0x00, 0x00, /* mov eax, 0x1FF: APIC on */
    0x66, 0x31, 0xD2,                   /* xor edx, edx */
    0x0F, 0x30,                         /* wrmsr */
    0x66, 0xB9, 0x3E, 0x08, 0x00, 0x00, /* mov ecx, TDCR */
    0x66, 0xB8, 0x0B, 0x00, 0x00, 0x00, /* mov eax, 0xB: divide by 1 */
    0x0F, 0x30,                         /* wrmsr */
    0x66, 0xB9, 0x32, 0x08, 0x00, 0x00, /* mov ecx, LVTT */
    0x66, 0xB8, 0x40, 0x00, 0x02, 0x00, /* mov eax, 0x20040: periodic, 0x40 */
    0x0F, 0x30,                         /* wrmsr */
    0x66, 0xB9, 0x38, 0x08, 0x00, 0x00, /* mov ecx, TMICT */
    0x66, 0xB8, 0x80, 0x96, 0x98, 0x00, /* mov eax, 10000000: 10 ms at 1 GHz */
    0x0F, 0x30,                         /* wrmsr */
    0xFB,                               /* 0x57: sti */
    0xF4,                               /* hlt */
    0xEB, 0xFC,                         /* jmp 0x57 */
    0xB0, 0x01,                         /* 0x5B, the handler: mov al, 1 */
    0xE6, 0x10,                         /* out 0x10, al */
    0x66, 0xB9, 0x0B, 0x08, 0x00, 0x00, /* mov ecx, EOI */
    0x66, 0x31, 0xC0,                   /* xor eax, eax */
    0x66, 0x31, 0xD2,                   /* xor edx, edx */
    0x0F, 0x30,                         /* wrmsr */
    0xCF,                               /* iret */
};

static int fail(const char *what)
{
    fprintf(stderr, "vmm_loop: %s: %s\n", what, strerror(errno));
    return 1;
}

static int fail_lapict(const char *what, const struct lapict_kvm *k, int rc)
{
    fprintf(stderr, "vmm_loop: %s: %s", what, lapict_strerror(rc));
    if (rc == LAPICT_E_SYSTEM)
        fprintf(stderr, " (%s: %s)", lapict_kvm_errcall(k),
                strerror(lapict_kvm_errno(k)));
    fprintf(stderr, "\n");
    return 1;
}

/* The CPUID the guest sees: KVM's, with the bits of the emulated LAPIC. */
static struct kvm_cpuid2 *guest_cpuid(int kvm)
{
    for (unsigned n = 64; n <= 4096; n *= 2) {
        struct kvm_cpuid2 *c =
            calloc(1, sizeof(*c) + n * sizeof(struct kvm_cpuid_entry2));
        if (!c)
            return NULL;
        c->nent = n;
        if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c) == 0) {
            lapict_kvm_cpuid_fixup(c, true);
            return c;
        }
        free(c);
        if (errno != E2BIG)
            return NULL;
    }
    return NULL;
}

static int run_guest(int vcpu, struct kvm_run *run, struct kvm_cpuid2 *cpuid,
                     struct lapict_kvm *k)
{
    struct lapict_kvm_config cfg;
    unsigned ticks = 0;
    int rc;

    /* The adapter's defaults: no kick signal, no kicks of its own,
     * advance off; tsc_khz 0 asks KVM for the guest TSC rate. */
    lapict_kvm_config_default(&cfg);
    rc = lapict_kvm_init(k, vcpu, run, &cfg);
    if (rc != LAPICT_OK)
        return fail_lapict("lapict_kvm_init", k, rc);
    lapict_kvm_set_cpuid(k, cpuid);

    while (ticks < TICKS) {
        int e;

        rc = lapict_kvm_pre_run(k);
        if (rc < 0)
            return fail_lapict("lapict_kvm_pre_run", k, rc);
        e = ioctl(vcpu, KVM_RUN, 0) < 0 ? -errno : 0;
        rc = lapict_kvm_handle_exit(k, e);
        if (rc == LAPICT_KVM_MINE)
            continue;
        if (rc == LAPICT_KVM_HALTED) {
            rc = lapict_kvm_halt_wait(k);
            if (rc < 0)
                return fail_lapict("lapict_kvm_halt_wait", k, rc);
            continue;
        }
        if (rc < 0)
            return fail_lapict("lapict_kvm_handle_exit", k, rc);
        /* LAPICT_KVM_NOT_MINE: the VMM's own devices. */
        if (run->exit_reason == KVM_EXIT_IO && run->io.port == 0x10) {
            ticks++;
            continue;
        }
        fprintf(stderr, "vmm_loop: unexpected exit %u\n", run->exit_reason);
        return 1;
    }
    return 0;
}

int main(void)
{
    struct kvm_userspace_memory_region region;
    struct kvm_sregs sregs;
    struct kvm_regs regs;
    struct kvm_cpuid2 *cpuid;
    struct kvm_run *run;
    struct lapict_kvm k;
    uint8_t *mem;
    int kvm, vm, vcpu, rc;
    long run_size;

    kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (kvm < 0) {
        printf("vmm_loop: SKIP: /dev/kvm: %s\n", strerror(errno));
        return SKIP;
    }
    vm = ioctl(kvm, KVM_CREATE_VM, 0);
    if (vm < 0) {
        printf("vmm_loop: SKIP: KVM_CREATE_VM: %s\n", strerror(errno));
        return SKIP;
    }
    /* No in-kernel irqchip: the LAPIC is lapict's, in this process. */
    if (lapict_kvm_vm_setup(vm) < 0)
        return fail("lapict_kvm_vm_setup");

    mem = mmap(NULL, MEM_BYTES, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return fail("mmap");
    memcpy(mem + CODE, guest, sizeof(guest));
    region = (struct kvm_userspace_memory_region){
        .slot = 0,
        .guest_phys_addr = 0,
        .memory_size = MEM_BYTES,
        .userspace_addr = (uintptr_t)mem,
    };
    if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
        return fail("KVM_SET_USER_MEMORY_REGION");

    vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    if (vcpu < 0)
        return fail("KVM_CREATE_VCPU");
    run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (run_size < 0)
        return fail("KVM_GET_VCPU_MMAP_SIZE");
    run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu,
               0);
    if (run == MAP_FAILED)
        return fail("mmap kvm_run");
    cpuid = guest_cpuid(kvm);
    if (!cpuid || ioctl(vcpu, KVM_SET_CPUID2, cpuid) < 0)
        return fail("KVM_SET_CPUID2");

    /* Real mode at 0:CODE, stack below it. */
    if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
        return fail("KVM_GET_SREGS");
    sregs.cs.base = 0;
    sregs.cs.selector = 0;
    if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
        return fail("KVM_SET_SREGS");
    memset(&regs, 0, sizeof(regs));
    regs.rip = CODE;
    regs.rsp = CODE;
    regs.rflags = 0x2;
    if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
        return fail("KVM_SET_REGS");

    alarm(60); /* a guest that never gets its interrupts fails, not hangs */
    rc = run_guest(vcpu, run, cpuid, &k);
    if (rc == 0) {
        printf("lapict-kvm %s: %u timer interrupts in the guest: ok\n",
               lapict_version_string(), TICKS);
        lapict_kvm_destroy(&k);
    }
    free(cpuid);
    return rc;
}
