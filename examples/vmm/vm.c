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
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_errno(char *err, size_t len, const char *what)
{
    return fail(err, len, "%s: %s", what, strerror(errno));
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
    reg = (struct kvm_userspace_memory_region){
        .slot = 0, .guest_phys_addr = 0, .memory_size = ram_bytes,
        .userspace_addr = (uint64_t)(uintptr_t)v->mem};
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
    v->run = mmap(NULL, (size_t)sz, PROT_READ | PROT_WRITE, MAP_SHARED,
                  v->vcpu, 0);
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

int lapict_vmm_vm_lapic(struct lapict_vmm_vm *v,
                        const struct lapict_kvm_config *cfg, char *err,
                        size_t err_len)
{
    int rc;

    v->k = calloc(1, sizeof(*v->k));
    if (!v->k)
        return fail(err, err_len, "calloc: %s", strerror(ENOMEM));
    rc = lapict_kvm_init(v->k, v->vcpu, v->run, cfg);
    if (rc) {
        fail(err, err_len, "lapict_kvm_init: %s (%s: %s)",
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

int lapict_vmm_vm_long_mode(struct lapict_vmm_vm *v, uint64_t rip,
                            uint64_t rsp)
{
    uint64_t *pml4 = (uint64_t *)(v->mem + 0x2000);
    uint64_t *pdpt = (uint64_t *)(v->mem + 0x3000);
    uint64_t *gdt = (uint64_t *)(v->mem + 0x1000);
    struct kvm_segment cs = {.base = 0, .limit = 0xFFFFFFFF, .selector = 8,
                             .type = 11, .present = 1, .dpl = 0, .db = 0,
                             .s = 1, .l = 1, .g = 1};
    struct kvm_segment ds = {.base = 0, .limit = 0xFFFFFFFF, .selector = 16,
                             .type = 3, .present = 1, .dpl = 0, .db = 1,
                             .s = 1, .l = 0, .g = 1};
    struct kvm_segment tr = {.base = 0, .limit = 0x67, .selector = 24,
                             .type = 11, .present = 1, .s = 0};
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
    fprintf(stderr, "lapict-vmm: %s: %s (%s: %s)\n", hook,
            lapict_strerror(rc), lapict_kvm_errcall(v->k),
            strerror(lapict_kvm_errno(v->k)));
    return -1;
}

int lapict_vmm_vm_run(struct lapict_vmm_vm *v,
                      int (*on_exit)(void *arg, struct kvm_run *run),
                      void *arg)
{
    struct kvm_run *r = v->run;
    int rc, e, status;

    for (;;) {
        if (v->k && (rc = lapict_kvm_pre_run(v->k)) < 0)
            return kvm_error(v, "lapict_kvm_pre_run", rc);
        e = ioctl(v->vcpu, KVM_RUN, 0) < 0 ? -errno : 0;
        if (v->k) {
            rc = lapict_kvm_handle_exit(v->k, e);
            if (rc == LAPICT_KVM_MINE)
                continue;
            if (rc == LAPICT_KVM_HALTED) {
                if ((rc = lapict_kvm_halt_wait(v->k)) < 0)
                    return kvm_error(v, "lapict_kvm_halt_wait", rc);
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
