/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm's multiboot path: an ELF32 multiboot v1 loader and the few
 * PC platform devices a kvm-unit-tests style guest needs (COM1, the
 * isa-debug-exit port, fw_cfg, PIC mask writes), so that such a guest runs
 * with its APIC timer emulated by lapict or by KVM's in-kernel LAPIC.
 */
#ifndef LAPICT_VMM_PLATFORM_H
#define LAPICT_VMM_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/kvm.h>

/* Guest physical layout of what the loader writes below 1 MiB. */
#define LAPICT_VMM_MB_GDT 0x1000u     /* flat 32-bit GDT (3 entries) */
#define LAPICT_VMM_MB_INFO 0x9000u    /* struct multiboot_info */
#define LAPICT_VMM_MB_MODS 0x9100u    /* one module entry */
#define LAPICT_VMM_MB_CMDLINE 0x9200u /* NUL-terminated, up to 0x9FFF */
#define LAPICT_VMM_MB_CMDLINE_MAX (0xA000u - LAPICT_VMM_MB_CMDLINE)
#define LAPICT_VMM_MB_MODULE 0x10000u /* module bytes, up to 0x9FFFF */
#define LAPICT_VMM_MB_MODULE_MAX (0xA0000u - LAPICT_VMM_MB_MODULE)
#define LAPICT_VMM_MB_LOW_END 0x100000u /* PT_LOAD segments start above */

/* Where the kernel enters and what it is handed. */
struct lapict_vmm_mb_boot {
    uint32_t entry;    /* e_entry, 32-bit protected mode, paging off */
    uint32_t mbi;      /* EBX: the multiboot information */
    uint32_t load_end; /* end of the highest PT_LOAD segment */
};

/**
 * lapict_vmm_mb_load() - load a multiboot v1 ELF32 kernel into guest RAM.
 * @mem: guest RAM, guest physical 0 at @mem[0].
 * @ram_bytes: its size (at least 2 MiB).
 * @image: the kernel file's bytes.
 * @image_len: their number.
 * @cmdline: the command line handed to the kernel ("name ARGS").
 * @module: the one module's bytes (KEY=VALUE lines), or NULL.
 * @module_len: their number.
 * @out: entry point and multiboot information address.
 * @err: receives a message on failure.
 * @err_len: its size.
 *
 * Checks the multiboot header (magic 0x1BADB002, checksum, within the first
 * 8 KiB), the ELF32 EM_386 executable header and every PT_LOAD segment
 * (inside RAM, above 1 MiB, file bytes inside the image), copies them and
 * zeroes their bss, then writes the multiboot information (mem_lower,
 * mem_upper, cmdline, the module) and a flat GDT below 1 MiB.
 *
 * Return: 0, or -1 with @err set.
 */
int lapict_vmm_mb_load(uint8_t *mem, uint64_t ram_bytes, const uint8_t *image,
                       size_t image_len, const char *cmdline,
                       const uint8_t *module, size_t module_len,
                       struct lapict_vmm_mb_boot *out, char *err,
                       size_t err_len);

/**
 * lapict_vmm_mb_enter() - vCPU state of a multiboot entry.
 * @vcpu_fd: the vCPU.
 * @boot: what lapict_vmm_mb_load() returned.
 *
 * 32-bit protected mode, paging off, flat CS 0x08 / data 0x10 (the GDT
 * written by the loader), EFLAGS 0x2, EAX 0x2BADB002, EBX the information.
 *
 * Return: 0 or -errno.
 */
int lapict_vmm_mb_enter(int vcpu_fd, const struct lapict_vmm_mb_boot *boot);

/* The platform devices outside the LAPIC. Owner: the vCPU thread. */
struct lapict_vmm_platform {
    FILE *out;           /* COM1 transmit bytes go here */
    uint64_t ram_bytes;  /* fw_cfg RAM size */
    uint16_t cpus;       /* fw_cfg CPU count */
    bool exited;         /* isa-debug-exit was written */
    uint32_t exit_value; /* the value written to it */
    /* COM1 (16550) registers the guest can read back. */
    uint8_t lcr, mcr, ier, scr, dll, dlm;
    /* fw_cfg: selected key and read offset. */
    uint16_t fw_key;
    uint32_t fw_off;
    uint64_t unhandled_io, unhandled_mmio;
};

/**
 * lapict_vmm_platform_init() - power-on state of the devices.
 * @p: caller-allocated.
 * @out: stream for the serial output.
 * @ram_bytes: guest RAM, for fw_cfg.
 */
void lapict_vmm_platform_init(struct lapict_vmm_platform *p, FILE *out,
                              uint64_t ram_bytes);

/**
 * lapict_vmm_platform_io() - a KVM_EXIT_IO.
 * @p: the platform.
 * @run: the vCPU's run structure (io fields, data at io.data_offset).
 *
 * COM1 0x3F8-0x3FF (THR bytes to @p->out without carriage returns, LSR
 * reports the transmitter empty), isa-debug-exit 0xF4, fw_cfg 0x510/0x511
 * (signature, ID 0, RAM size, CPU count), PIC 0x20/0x21/0xA0/0xA1 and
 * 0x80 ignored; other ports read all-ones and drop writes.
 */
void lapict_vmm_platform_io(struct lapict_vmm_platform *p, struct kvm_run *run);

/**
 * lapict_vmm_platform_mmio() - a KVM_EXIT_MMIO no device claimed.
 * @p: the platform.
 * @run: the vCPU's run structure.
 *
 * Unassigned addresses read all-ones and drop writes.
 */
void lapict_vmm_platform_mmio(struct lapict_vmm_platform *p,
                              struct kvm_run *run);

/* What lapict_vmm_boot() needs from the command line. */
struct lapict_vmm_boot_opts {
    bool lapic_kernel;  /* KVM_CREATE_IRQCHIP instead of adapters/kvm */
    bool x2apic;        /* advertise x2APIC in CPUID */
    const char *kernel; /* ELF32 multiboot file */
    const char *append; /* arguments after argv[0], or NULL */
    const char *initrd; /* the module (KEY=VALUE lines), or NULL */
    uint64_t ram_bytes; /* guest RAM */
    unsigned timeout_s; /* 0: none */
    /* lapict advance (LAPICT_ADVANCE_*), as for the built-in guest. */
    uint32_t advance_mode, advance_ns, advance_max_ns;
    bool quiet; /* no statistics line on stderr */
};

/**
 * lapict_vmm_boot() - run a multiboot kernel until it exits.
 * @o: the options.
 *
 * Return: the process exit status: (value << 1) | 1 after an
 * isa-debug-exit write, as QEMU's device; 2 for a VMM error, 4 when the
 * guest stopped otherwise (shutdown, halt with interrupts off, an
 * unexpected exit). After @o->timeout_s seconds the process exits with
 * LAPICT_VMM_STATUS_TIMEOUT (vm.h).
 */
int lapict_vmm_boot(const struct lapict_vmm_boot_opts *o);

/**
 * lapict_vmm_boot_check() - what lapict_vmm_boot() reads, without KVM.
 * @o: the options.
 *
 * Reads the kernel and the initrd and loads them into scratch RAM of
 * @o->ram_bytes as the boot would (multiboot header, ELF32 segments, the
 * command line's and the module's sizes), failing with the boot's own
 * message.
 *
 * Return: 0, or 2 after a message on stderr.
 */
int lapict_vmm_boot_check(const struct lapict_vmm_boot_opts *o);

#endif
