/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv entry: a multiboot v1 header and the 32-bit entry a multiboot
 * loader jumps to (paging off, flat segments, EAX the boot magic, EBX the
 * information). It identity-maps 4 GiB with 2 MiB pages, switches to long
 * mode and calls hv_main(). Then the 64-bit interrupt stubs, and the two
 * halves of a VM entry: hv_vmx_run() enters the guest, hv_vmx_exit (the
 * VMCS host RIP) saves its registers and returns from hv_vmx_run().
 * Assembled into a 64-bit object; the linked ELF64 is converted to
 * elf32-i386 for the loader.
 */
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0

    .section .mbheader, "a"
    .balign 4
    .long MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)

    .section .text.entry, "ax"
    .code32
    .globl hv_entry
hv_entry:
    mov %eax, hv_boot_magic
    mov %ebx, hv_boot_info
    mov $hv_stack_top, %esp

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
    lgdt hv_gdt_desc
    ljmp $8, $long_entry

    .code64
long_entry:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %ax, %fs
    mov %ax, %gs
    mov $hv_stack_top, %rsp
    call hv_main
4:  cli
    hlt
    jmp 4b

/*
 * 256 interrupt stubs, 16 bytes apart: push a zero error code where the CPU
 * pushes none, push the vector, join the common path.
 */
    .text
    .balign 16
    .globl hv_trap_stubs
hv_trap_stubs:
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
    call hv_trap
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

/*
 * int hv_vmx_run(struct hv_gregs *g, int launched): load the guest's
 * general registers and VMLAUNCH (launched == 0) or VMRESUME. Host RSP is
 * written here, so the exit lands on this frame. Host interrupts are
 * enabled by an STI right before the entry: its shadow covers the entry
 * instruction, so no host interrupt is taken in between, and the guest
 * runs with external-interrupt exiting live (Bochs does not take that exit
 * while the host and the guest both have interrupts disabled).
 * Returns 0 after a VM exit, 1 when the entry failed (VMfail).
 * struct hv_gregs: rax rcx rdx rbx rsp(unused) rbp rsi rdi r8-r15 cr2.
 */
    .globl hv_vmx_run
hv_vmx_run:
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    push %rdi
    mov $0x6C14, %eax       /* HOST_RSP */
    vmwrite %rsp, %rax
    mov 128(%rdi), %rax
    mov %rax, %cr2
    test %esi, %esi
    mov 0(%rdi), %rax
    mov 8(%rdi), %rcx
    mov 16(%rdi), %rdx
    mov 24(%rdi), %rbx
    mov 40(%rdi), %rbp
    mov 48(%rdi), %rsi
    mov 64(%rdi), %r8
    mov 72(%rdi), %r9
    mov 80(%rdi), %r10
    mov 88(%rdi), %r11
    mov 96(%rdi), %r12
    mov 104(%rdi), %r13
    mov 112(%rdi), %r14
    mov 120(%rdi), %r15
    mov 56(%rdi), %rdi
    jnz 5f
    sti
    vmlaunch
    jmp 6f
5:  sti
    vmresume
6:  cli
    pop %rdi
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    mov $1, %eax
    ret

    .globl hv_vmx_exit
hv_vmx_exit:
    push %rdi
    mov 8(%rsp), %rdi
    mov %rax, 0(%rdi)
    mov %rcx, 8(%rdi)
    mov %rdx, 16(%rdi)
    mov %rbx, 24(%rdi)
    mov %rbp, 40(%rdi)
    mov %rsi, 48(%rdi)
    mov %r8, 64(%rdi)
    mov %r9, 72(%rdi)
    mov %r10, 80(%rdi)
    mov %r11, 88(%rdi)
    mov %r12, 96(%rdi)
    mov %r13, 104(%rdi)
    mov %r14, 112(%rdi)
    mov %r15, 120(%rdi)
    pop %rax
    mov %rax, 56(%rdi)
    mov %cr2, %rax
    mov %rax, 128(%rdi)
    pop %rdi
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    xor %eax, %eax
    ret

    .section .rodata
    .balign 8
hv_gdt_desc:
    .word hv_gdt_end - hv_gdt - 1
    .long hv_gdt

    .data
    .balign 16
    .globl hv_gdt
hv_gdt:
    .quad 0
    .quad 0x00AF9B000000FFFF    /* 0x08: 64-bit code */
    .quad 0x00CF93000000FFFF    /* 0x10: data */
    .quad 0, 0                  /* 0x18: the TSS, filled by hv_main() */
hv_gdt_end:
    .globl hv_boot_magic, hv_boot_info
hv_boot_magic: .long 0
hv_boot_info: .long 0

    .bss
    .balign 4096
pml4: .skip 4096
pdpt: .skip 4096
pdir: .skip 4 * 4096
    .balign 16
    .skip 65536
    .globl hv_stack_top
hv_stack_top:

    .section .note.GNU-stack, "", @progbits
