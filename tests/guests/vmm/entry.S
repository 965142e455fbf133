/* SPDX-License-Identifier: MIT */
/* Guest entry and interrupt stubs: 64-bit mode only (the VMM sets it up). */
    .section .text.entry, "ax"
    .code64
    .globl _start
_start:
    lea __bss_start(%rip), %rdi
    lea __bss_end(%rip), %rcx
    sub %rdi, %rcx
    xor %eax, %eax
    rep stosb
    call guest_main
1:  cli
    hlt
    jmp 1b

    .text
/* Save the caller-saved registers, call C, return with iretq. */
.macro SAVE
    push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
.endm
.macro RESTORE
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
.endm

    .globl timer_stub
timer_stub:
    SAVE
    call timer_isr
    RESTORE
    iretq

    .globl spurious_stub
spurious_stub:
    iretq

/* Exceptions: report the vector and stop. */
.macro EXC n
    .globl exc_stub_\n
exc_stub_\n:
    mov $\n, %edi
    jmp exc_common
.endm
    EXC 0
    EXC 1
    EXC 2
    EXC 3
    EXC 4
    EXC 5
    EXC 6
    EXC 7
    EXC 8
    EXC 9
    EXC 10
    EXC 11
    EXC 12
    EXC 13
    EXC 14
    EXC 15
    EXC 16
    EXC 17
    EXC 18
    EXC 19
exc_common:
    and $-16, %rsp
    call exception
2:  cli
    hlt
    jmp 2b

    .section .rodata
    .globl exc_stubs
exc_stubs:
    .quad exc_stub_0, exc_stub_1, exc_stub_2, exc_stub_3, exc_stub_4
    .quad exc_stub_5, exc_stub_6, exc_stub_7, exc_stub_8, exc_stub_9
    .quad exc_stub_10, exc_stub_11, exc_stub_12, exc_stub_13, exc_stub_14
    .quad exc_stub_15, exc_stub_16, exc_stub_17, exc_stub_18, exc_stub_19

    .section .note.GNU-stack, "", @progbits
