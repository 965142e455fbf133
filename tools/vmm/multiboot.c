/* SPDX-License-Identifier: MIT */
/*
 * Multiboot v1 loader for ELF32 kernels (the format of kvm-unit-tests'
 * x86 .flat binaries: a 64-bit program in an elf32-i386 container whose
 * 32-bit entry switches to long mode itself). Everything read from the
 * image is bounds-checked: the file is untrusted input.
 */
#include "multiboot.h"
#include "platform.h"
#include "vm.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

int lapict_vmm_mb_load(uint8_t *mem, uint64_t ram_bytes, const uint8_t *image,
                       size_t image_len, const char *cmdline,
                       const uint8_t *module, size_t module_len,
                       struct lapict_vmm_mb_boot *out, char *err,
                       size_t err_len)
{
    struct elf32_ehdr eh;
    struct mb_info mbi;
    uint64_t load_end = 0;
    size_t clen;
    long hdr;

    if (ram_bytes < (2u << 20) || ram_bytes > 0xF0000000ull)
        return lapict_vmm_fail(err, err_len, "RAM size out of range");
    hdr = mb_header_find(image, image_len);
    if (hdr < 0)
        return lapict_vmm_fail(err, err_len,
                               "no multiboot v1 header in the first "
                               "8 KiB");
    if (image_len < sizeof(eh))
        return lapict_vmm_fail(err, err_len, "not an ELF file");
    memcpy(&eh, image, sizeof(eh));
    if (memcmp(eh.ident, "\177ELF", 4) != 0) {
        if (mb_rd32(image + hdr + 4) & MB_FLAG_AOUT_KLUDGE)
            return lapict_vmm_fail(err, err_len,
                                   "a.out-kludge multiboot images are "
                                   "not supported, only ELF32");
        return lapict_vmm_fail(err, err_len, "not an ELF file");
    }
    if (eh.ident[4] != 1 || eh.ident[5] != 1 || eh.machine != EM_386 ||
        eh.type != ET_EXEC)
        return lapict_vmm_fail(err, err_len,
                               "not an ELF32 little-endian EM_386 "
                               "executable (convert a 64-bit ELF with "
                               "objcopy -O elf32-i386)");
    if (eh.phentsize != sizeof(struct elf32_phdr) || eh.phnum == 0 ||
        eh.phoff > image_len ||
        (uint64_t)eh.phnum * sizeof(struct elf32_phdr) > image_len - eh.phoff)
        return lapict_vmm_fail(err, err_len, "bad program header table");

    for (uint32_t i = 0; i < eh.phnum; i++) {
        struct elf32_phdr ph;
        memcpy(&ph, image + eh.phoff + i * sizeof(ph), sizeof(ph));
        if (ph.type != PT_LOAD || ph.memsz == 0)
            continue;
        if (ph.filesz > ph.memsz || ph.offset > image_len ||
            ph.filesz > image_len - ph.offset)
            return lapict_vmm_fail(err, err_len,
                                   "segment %u: file bytes outside the "
                                   "image",
                                   i);
        if (ph.paddr < LAPICT_VMM_MB_LOW_END ||
            (uint64_t)ph.paddr + ph.memsz > ram_bytes)
            return lapict_vmm_fail(err, err_len,
                                   "segment %u: [0x%x, 0x%llx) outside "
                                   "RAM above 1 MiB",
                                   i, ph.paddr,
                                   (unsigned long long)ph.paddr + ph.memsz);
        memcpy(mem + ph.paddr, image + ph.offset, ph.filesz);
        memset(mem + ph.paddr + ph.filesz, 0, ph.memsz - ph.filesz);
        if ((uint64_t)ph.paddr + ph.memsz > load_end)
            load_end = (uint64_t)ph.paddr + ph.memsz;
    }
    if (!load_end)
        return lapict_vmm_fail(err, err_len, "no PT_LOAD segment");
    if (eh.entry < LAPICT_VMM_MB_LOW_END || eh.entry >= load_end)
        return lapict_vmm_fail(err, err_len,
                               "entry point 0x%x outside the loaded "
                               "image",
                               eh.entry);

    clen = strlen(cmdline);
    if (clen >= LAPICT_VMM_MB_CMDLINE_MAX)
        return lapict_vmm_fail(err, err_len,
                               "command line longer than %u bytes",
                               LAPICT_VMM_MB_CMDLINE_MAX - 1);
    if (module && module_len > LAPICT_VMM_MB_MODULE_MAX)
        return lapict_vmm_fail(err, err_len, "initrd larger than %u bytes",
                               LAPICT_VMM_MB_MODULE_MAX);

    memset(&mbi, 0, sizeof(mbi));
    mbi.flags = MBI_MEM | MBI_CMDLINE;
    mbi.mem_lower = 640;
    /* KiB above 1 MiB; kvm-unit-tests takes mem_upper * 1024 as the end of
     * usable memory, which stays inside RAM either way. */
    mbi.mem_upper = (uint32_t)((ram_bytes - (1u << 20)) >> 10);
    mbi.cmdline = LAPICT_VMM_MB_CMDLINE;
    memcpy(mem + LAPICT_VMM_MB_CMDLINE, cmdline, clen + 1);
    if (module) {
        struct mb_module m = {.start = LAPICT_VMM_MB_MODULE,
                              .end =
                                  LAPICT_VMM_MB_MODULE + (uint32_t)module_len,
                              .cmdline = 0};
        memcpy(mem + LAPICT_VMM_MB_MODULE, module, module_len);
        memcpy(mem + LAPICT_VMM_MB_MODS, &m, sizeof(m));
        mbi.flags |= MBI_MODS;
        mbi.mods_count = 1;
        mbi.mods_addr = LAPICT_VMM_MB_MODS;
    }
    memcpy(mem + LAPICT_VMM_MB_INFO, &mbi, sizeof(mbi));

    /* A GDT the segment registers match, for kernels that reload them
     * before installing their own. */
    {
        static const uint64_t gdt[3] = {0, 0x00CF9B000000FFFFull,
                                        0x00CF93000000FFFFull};
        memcpy(mem + LAPICT_VMM_MB_GDT, gdt, sizeof(gdt));
    }
    out->entry = eh.entry;
    out->mbi = LAPICT_VMM_MB_INFO;
    out->load_end = (uint32_t)load_end;
    return 0;
}

int lapict_vmm_mb_enter(int vcpu_fd, const struct lapict_vmm_mb_boot *boot)
{
    struct kvm_sregs s;
    struct kvm_regs r;
    struct kvm_segment cs = lapict_vmm_flat_segment(8, 11, false);
    struct kvm_segment ds = lapict_vmm_flat_segment(16, 3, false);

    if (ioctl(vcpu_fd, KVM_GET_SREGS, &s) < 0)
        return -errno;
    s.cs = cs;
    s.ds = s.es = s.fs = s.gs = s.ss = ds;
    s.gdt.base = LAPICT_VMM_MB_GDT;
    s.gdt.limit = 3 * 8 - 1;
    s.idt.base = 0;
    s.idt.limit = 0x3FF;
    s.cr0 = 0x11; /* PE, ET: protected mode, paging off */
    s.cr3 = 0;
    s.cr4 = 0;
    s.efer = 0;
    if (ioctl(vcpu_fd, KVM_SET_SREGS, &s) < 0)
        return -errno;
    memset(&r, 0, sizeof(r));
    r.rip = boot->entry;
    r.rflags = 0x2;
    r.rax = MB_BOOT_MAGIC;
    r.rbx = boot->mbi;
    if (ioctl(vcpu_fd, KVM_SET_REGS, &r) < 0)
        return -errno;
    return 0;
}
