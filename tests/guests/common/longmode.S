/* SPDX-License-Identifier: MIT */
/*
 * The entry of the project's multiboot x86-64 kernels: lapict-mbtest,
 * lapict-timers and lapict-hv. A multiboot v1 header; the 32-bit entry a
 * multiboot loader jumps to (paging off, flat segments, EAX the boot
 * magic, EBX the information), which identity-maps 4 GiB with 2 MiB pages,
 * switches to long mode and calls mb_main(); then 256 64-bit interrupt
 * stubs that call mb_trap(). longmode.h is its C side. Assembled into a
 * 64-bit object; the linked ELF64 is converted to elf32-i386 for the
 * loader.
 */
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0

    .section .mbheader, "a"
    .balign 4
    .long MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)

    .section .text.entry, "ax"
    .code32
    .globl mb_entry
mb_entry:
    mov %eax, mb_boot_magic
    mov %ebx, mb_boot_info
    mov $stack_top, %esp

    /* PML4[0] -> PDPT; PDPT[0..3] -> four page directories of 2 MiB pages. */
    mov $pdpt, %eax
    or $3, %eax
    mov %eax, pml4
    xor %ecx, %ecx
1:  mov %ecx, %eax
    shl $12, %eax
    add $pdir, %eax
    or $3, %eax
    mov %eax, pdpt(,%ecx,8)
    inc %ecx
    cmp $4, %ecx
    jb 1b
    xor %ecx, %ecx
2:  mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax          /* present, writable, 2 MiB */
    cmp $2038, %ecx         /* 0xFEC00000 and up: APIC pages, uncached */
    jb 3f
    or $0x18, %eax
3:  mov %eax, pdir(,%ecx,8)
    inc %ecx
    cmp $2048, %ecx
    jb 2b

    mov %cr4, %eax
    or $0x20, %eax          /* PAE */
    mov %eax, %cr4
    mov $pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx   /* EFER.LME */
    rdmsr
    or $0x100, %eax
    wrmsr
    mov %cr0, %eax
    or $0x80000000, %eax    /* PG: long mode active */
    mov %eax, %cr0
    lgdt gdt_desc
    ljmp $8, $long_entry

    .code64
long_entry:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %ax, %fs
    mov %ax, %gs
    mov $stack_top, %rsp
    call mb_main
4:  cli
    hlt
    jmp 4b

/*
 * 256 interrupt stubs, 16 bytes apart: push a zero error code where the CPU
 * pushes none, push the vector, join the common path, which saves the
 * general registers (struct frame in longmode.h) and calls mb_trap().
 */
    .text
    .balign 16
    .globl mb_trap_stubs
mb_trap_stubs:
    .set vec, 0
    .rept 256
    .balign 16
    .if vec == 8 || (vec >= 10 && vec <= 14) || vec == 17 || vec == 21 || vec == 29 || vec == 30
    .else
    pushq $0
    .endif
    pushq $vec
    jmp trap_common
    .set vec, vec + 1
    .endr

trap_common:
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, %rdi
    cld
    call mb_trap
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
    add $16, %rsp
    iretq

    .section .rodata
    .balign 8
gdt_desc:
    .word mb_gdt_end - mb_gdt - 1
    .long mb_gdt

    .data
    .balign 16
    .globl mb_gdt
mb_gdt:
    .quad 0
    .quad 0x00AF9B000000FFFF    /* 0x08: 64-bit code */
    .quad 0x00CF93000000FFFF    /* 0x10: data */
    .quad 0, 0                  /* 0x18: a TSS, for a kernel that loads TR */
mb_gdt_end:
    .globl mb_boot_magic, mb_boot_info
mb_boot_magic: .long 0
mb_boot_info: .long 0

    .bss
    .balign 4096
pml4: .skip 4096
pdpt: .skip 4096
pdir: .skip 4 * 4096
    .balign 16
    .skip 65536
stack_top:

    .section .note.GNU-stack, "", @progbits
