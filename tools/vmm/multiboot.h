/* SPDX-License-Identifier: MIT */
/*
 * Multiboot v1 and ELF32 as a loader of multiboot kernels sees them (the
 * shape of kvm-unit-tests' x86 .flat binaries: an ELF32 kernel whose
 * 32-bit entry switches to long mode itself), and the multiboot
 * information such a kernel reads. Freestanding (no libc): lapict-vmm's
 * loader (multiboot.c) and lapict-hv, which loads its guests the same way
 * and is itself a multiboot kernel, include it.
 */
#ifndef LAPICT_VMM_MULTIBOOT_H
#define LAPICT_VMM_MULTIBOOT_H

#include <stddef.h>
#include <stdint.h>

#define MB_MAGIC 0x1BADB002u
#define MB_BOOT_MAGIC 0x2BADB002u
#define MB_SEARCH 8192u
#define MB_FLAG_AOUT_KLUDGE 0x10000u
/* multiboot_info flags: mem_*, cmdline, mods. */
#define MBI_MEM 0x1u
#define MBI_CMDLINE 0x4u
#define MBI_MODS 0x8u

/* ELF32 as laid out in the file (little-endian, packed by definition). */
struct elf32_ehdr {
    uint8_t ident[16];
    uint16_t type, machine;
    uint32_t version, entry, phoff, shoff, flags;
    uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct elf32_phdr {
    uint32_t type, offset, vaddr, paddr, filesz, memsz, flags, align;
};

#define PT_LOAD 1u
#define EM_386 3u
#define ET_EXEC 2u

/* The multiboot information fields a loader of this kind fills. */
struct mb_info {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
    uint32_t mods_count, mods_addr;
    uint32_t syms[4];
    uint32_t mmap_length, mmap_addr;
};

struct mb_module {
    uint32_t start, end, cmdline, reserved;
};

/* A little-endian 32-bit word of the image, at any alignment. */
static inline uint32_t mb_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/*
 * The multiboot header of @img: 4-byte aligned and whole within the first
 * 8 KiB, checksum 0. Returns its offset, or -1.
 */
static inline long mb_header_find(const uint8_t *img, size_t len)
{
    size_t end = len < MB_SEARCH ? len : MB_SEARCH;
    for (size_t off = 0; off + 12 <= end; off += 4) {
        if (mb_rd32(img + off) != MB_MAGIC)
            continue;
        if ((uint32_t)(mb_rd32(img + off) + mb_rd32(img + off + 4) +
                       mb_rd32(img + off + 8)) == 0)
            return (long)off;
    }
    return -1;
}

#endif
