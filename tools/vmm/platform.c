/* SPDX-License-Identifier: MIT */
/*
 * The PC platform devices a kvm-unit-tests style multiboot guest touches
 * outside the LAPIC, and the run loop that boots such a guest with the
 * LAPIC in userspace (adapters/kvm, timer by lapict) or in KVM.
 *
 * Devices: COM1 (a 16550 that is always ready to transmit), the
 * isa-debug-exit port of QEMU (0xF4: the process exits with
 * (value << 1) | 1), fw_cfg's legacy I/O interface (0x510 selector, 0x511
 * data) with the keys such guests read, and the 8259 PIC's ports, whose
 * mask writes are ignored (no PIC: interrupts come from the LAPIC only).
 */
#define _GNU_SOURCE
#include "platform.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lapict_kvm.h"
#include "vm.h"

#define COM1 0x3F8u
#define DEBUG_EXIT 0xF4u
#define FW_CFG_SEL 0x510u
#define FW_CFG_DATA 0x511u

/* fw_cfg keys (QEMU's numbering). */
#define FW_CFG_SIGNATURE 0x00u
#define FW_CFG_ID 0x01u
#define FW_CFG_RAM_SIZE 0x03u
#define FW_CFG_NB_CPUS 0x05u
#define FW_CFG_MAX_CPUS 0x0Fu

void lapict_vmm_platform_init(struct lapict_vmm_platform *p, FILE *out,
                              uint64_t ram_bytes)
{
    memset(p, 0, sizeof(*p));
    p->out = out;
    p->ram_bytes = ram_bytes;
    p->cpus = 1;
    p->lcr = 0x03;
}

/* Byte @off of fw_cfg item @key; items are little-endian, 0 past the end. */
static uint8_t fw_cfg_byte(const struct lapict_vmm_platform *p, uint16_t key,
                           uint32_t off)
{
    uint64_t v;
    uint32_t size;

    switch (key) {
    case FW_CFG_SIGNATURE:
        return off < 4 ? (uint8_t) "QEMU"[off] : 0;
    case FW_CFG_ID:
        v = 0; /* no DMA interface */
        size = 4;
        break;
    case FW_CFG_RAM_SIZE:
        v = p->ram_bytes;
        size = 8;
        break;
    case FW_CFG_NB_CPUS:
    case FW_CFG_MAX_CPUS:
        v = p->cpus;
        size = 2;
        break;
    default:
        return 0;
    }
    return off < size ? (uint8_t)(v >> (off * 8)) : 0;
}

static void com1_out(struct lapict_vmm_platform *p, uint32_t reg, uint8_t b)
{
    switch (reg) {
    case 0:
        if (p->lcr & 0x80) {
            p->dll = b;
        } else if (b != '\r') {
            /* The guest sends CR LF; a terminal wants LF. */
            fputc(b, p->out);
            if (b == '\n')
                fflush(p->out);
        }
        break;
    case 1:
        if (p->lcr & 0x80)
            p->dlm = b;
        else
            p->ier = b & 0x0F;
        break;
    case 3:
        p->lcr = b;
        break;
    case 4:
        p->mcr = b & 0x1F;
        break;
    case 7:
        p->scr = b;
        break;
    default:
        break; /* FCR, read-only LSR/MSR */
    }
}

static uint8_t com1_in(const struct lapict_vmm_platform *p, uint32_t reg)
{
    switch (reg) {
    case 0:
        return (p->lcr & 0x80) ? p->dll : 0; /* nothing received */
    case 1:
        return (p->lcr & 0x80) ? p->dlm : p->ier;
    case 2:
        return 0x01; /* IIR: no interrupt pending */
    case 3:
        return p->lcr;
    case 4:
        return p->mcr;
    case 5:
        return 0x60; /* LSR: THR empty, transmitter empty */
    case 6:
        return 0xB0; /* MSR: DCD, DSR, CTS */
    default:
        return p->scr;
    }
}

/* One access of @size bytes; @v holds the value written or receives it. */
static void io_one(struct lapict_vmm_platform *p, uint16_t port, bool in,
                   uint32_t size, uint32_t *v)
{
    if (port >= COM1 && port < COM1 + 8) {
        if (in)
            *v = com1_in(p, port - COM1);
        else
            com1_out(p, port - COM1, (uint8_t)*v);
        return;
    }
    if (port == DEBUG_EXIT && !in) {
        p->exited = true;
        p->exit_value = size == 1   ? (*v & 0xFF)
                        : size == 2 ? (*v & 0xFFFF)
                                    : *v;
        return;
    }
    if (port == FW_CFG_SEL) {
        if (!in && size == 2) {
            p->fw_key = (uint16_t)*v;
            p->fw_off = 0;
        } else if (in) {
            *v = 0;
        }
        return;
    }
    if (port == FW_CFG_DATA && in) {
        uint32_t r = 0;
        for (uint32_t i = 0; i < size; i++)
            r |= (uint32_t)fw_cfg_byte(p, p->fw_key, p->fw_off++) << (8 * i);
        *v = r;
        return;
    }
    switch (port) {
    case 0x20:
    case 0x21:
    case 0xA0:
    case 0xA1: /* 8259 PIC: absent */
    case 0x80: /* POST / delay */
        if (in)
            *v = 0xFF;
        return;
    default:
        break;
    }
    p->unhandled_io++;
    if (in)
        *v = 0xFFFFFFFFu;
}

void lapict_vmm_platform_io(struct lapict_vmm_platform *p, struct kvm_run *run)
{
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    uint32_t size = run->io.size;
    bool in = run->io.direction == KVM_EXIT_IO_IN;

    if (size != 1 && size != 2 && size != 4)
        return;
    for (uint32_t i = 0; i < run->io.count; i++, data += size) {
        uint32_t v = 0;
        if (!in)
            memcpy(&v, data, size);
        io_one(p, run->io.port, in, size, &v);
        if (in)
            memcpy(data, &v, size);
        if (p->exited)
            break;
    }
}

void lapict_vmm_platform_mmio(struct lapict_vmm_platform *p,
                              struct kvm_run *run)
{
    p->unhandled_mmio++;
    if (!run->mmio.is_write && run->mmio.len <= sizeof(run->mmio.data))
        memset(run->mmio.data, 0xFF, run->mmio.len);
}

/* --- booting a multiboot kernel ------------------------------------------ */

static int boot_err(const char *what, int err)
{
    fprintf(stderr, "lapict-vmm: %s: %s\n", what, strerror(err));
    return 2;
}

/*
 * Read the kernel and its module and place them, with the command line,
 * in @mem (@ram_bytes of guest RAM). Return: 0, or 2 after a message.
 */
static int place(uint8_t *mem, uint64_t ram_bytes,
                 const struct lapict_vmm_boot_opts *o,
                 struct lapict_vmm_mb_boot *b)
{
    uint8_t *img, *mod = NULL;
    size_t img_len = 0, mod_len = 0;
    const char *base = strrchr(o->kernel, '/');
    char *cmdline = NULL, err[160];
    int rc = 2;

    img = lapict_vmm_read_file(o->kernel, &img_len, 1u << 30);
    if (!img) {
        fprintf(stderr, "lapict-vmm: cannot read kernel %s: %s\n", o->kernel,
                strerror(errno));
        return 2;
    }
    if (o->initrd &&
        !(mod = lapict_vmm_read_file(o->initrd, &mod_len, 1u << 30))) {
        fprintf(stderr, "lapict-vmm: cannot read initrd %s: %s\n", o->initrd,
                strerror(errno));
        goto out;
    }
    /* argv[0] is the command line's first word: the kernel's name. */
    if (asprintf(&cmdline, "%s%s%s", base ? base + 1 : o->kernel,
                 o->append && *o->append ? " " : "",
                 o->append ? o->append : "") < 0) {
        cmdline = NULL;
        goto out;
    }
    if (lapict_vmm_mb_load(mem, ram_bytes, img, img_len, cmdline, mod, mod_len,
                           b, err, sizeof(err)) < 0) {
        fprintf(stderr, "lapict-vmm: %s: %s\n", o->kernel, err);
        goto out;
    }
    rc = 0;
out:
    free(cmdline);
    free(mod);
    free(img);
    return rc;
}

/* Load the kernel, its command line and module; set the entry state. */
static int load(struct lapict_vmm_vm *v, const struct lapict_vmm_boot_opts *o)
{
    struct lapict_vmm_mb_boot b;
    int rc;

    if ((rc = place(v->mem, v->ram_bytes, o, &b)) != 0)
        return rc;
    if ((rc = lapict_vmm_mb_enter(v->vcpu, &b)) < 0)
        return boot_err("multiboot entry state", -rc);
    return 0;
}

int lapict_vmm_boot_check(const struct lapict_vmm_boot_opts *o)
{
    struct lapict_vmm_mb_boot b;
    /* Guest RAM as the VM would have it; the loader touches only the
     * pages it writes. */
    uint8_t *mem = mmap(NULL, o->ram_bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    int rc;

    if (mem == MAP_FAILED)
        return boot_err("guest RAM", errno);
    rc = place(mem, o->ram_bytes, o, &b);
    munmap(mem, o->ram_bytes);
    return rc;
}

static int stopped(const struct kvm_run *r, const char *why)
{
    fprintf(stderr, "lapict-vmm: guest stopped: %s (exit reason %u)\n", why,
            r->exit_reason);
    return 4;
}

/* lapict_vmm_vm_run()'s exits: -1 to go on, else the status. */
static int platform_exit(void *arg, struct kvm_run *r)
{
    struct lapict_vmm_platform *p = arg;

    switch (r->exit_reason) {
    case KVM_EXIT_IO:
        lapict_vmm_platform_io(p, r);
        if (p->exited)
            return (int)((p->exit_value << 1) | 1u) & 0xFF;
        return -1;
    case KVM_EXIT_MMIO:
        lapict_vmm_platform_mmio(p, r);
        return -1;
    case KVM_EXIT_INTR:
        return -1;
    case KVM_EXIT_HLT:
        return stopped(r, "halted with interrupts disabled");
    case KVM_EXIT_SHUTDOWN:
        return stopped(r, "shutdown (triple fault)");
    case KVM_EXIT_FAIL_ENTRY:
        return stopped(r, "VM entry failed");
    case KVM_EXIT_INTERNAL_ERROR:
        fprintf(stderr, "lapict-vmm: KVM internal error, suberror %u\n",
                r->internal.suberror);
        return stopped(r, "internal error");
    default:
        return stopped(r, "unexpected exit");
    }
}

int lapict_vmm_boot(const struct lapict_vmm_boot_opts *o)
{
    struct lapict_vmm_vm v;
    struct lapict_vmm_platform p;
    char err[256];
    int rc;

    if (lapict_vmm_vm_create(&v, o->ram_bytes, o->lapic_kernel, o->x2apic, err,
                             sizeof(err)) < 0) {
        fprintf(stderr, "lapict-vmm: %s\n", err);
        rc = 2;
        goto out;
    }
    if ((rc = load(&v, o)) != 0)
        goto out;
    lapict_vmm_platform_init(&p, stdout, v.ram_bytes);
    if (!o->lapic_kernel) {
        struct lapict_kvm_config kc;

        lapict_kvm_config_default(&kc);
        kc.kick = LAPICT_KVM_KICK_TIMER;
        kc.kick_signal = SIGUSR1;
        kc.timer_slack_ns = 1;
        kc.timer.advance_mode = o->advance_mode;
        kc.timer.advance_ns = o->advance_ns;
        if (o->advance_max_ns)
            kc.timer.advance_max_ns = o->advance_max_ns;
        if (lapict_vmm_vm_lapic(&v, &kc, err, sizeof(err)) < 0) {
            fprintf(stderr, "lapict-vmm: %s\n", err);
            rc = 2;
            goto out;
        }
    }
    if (o->timeout_s)
        lapict_vmm_timeout(o->timeout_s, "the guest did not exit");
    rc = lapict_vmm_vm_run(&v, platform_exit, &p);
    if (rc < 0)
        rc = 2;
    lapict_vmm_timeout(0, NULL);
    fflush(stdout);
    if (v.k && !o->quiet) {
        struct lapict_kvm *k = v.k;
        struct lapict_stats ts;
        lapict_stats_get(&k->timer, &ts, sizeof(ts));
        fprintf(
            stderr,
            "lapict-vmm: lib: runs=%" PRIu64 " mmio=%" PRIu64 " msr=%" PRIu64
            " gp=%" PRIu64 " hlt_sleeps=%" PRIu64 " kicks=%" PRIu64
            " interrupts=%" PRIu64 " windows=%" PRIu64 " advance_ns=%u\n",
            k->st.runs, k->apic.st.mmio, k->apic.st.rdmsr + k->apic.st.wrmsr,
            k->st.gp, k->st.halt_sleeps, k->st.kicks_seen, k->st.interrupts,
            k->st.window_exits, ts.advance_ns);
    }
out:
    lapict_vmm_vm_destroy(&v);
    return rc;
}
