/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's two halves of a VM entry: hv_vmx_run() enters the guest,
 * hv_vmx_exit (the VMCS host RIP) saves its registers and returns from
 * hv_vmx_run(). The kernel's own entry (multiboot header, long mode,
 * interrupt stubs) is tests/guests/common/longmode.S, which the test
 * kernels share.
 */
    .text

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

    .section .note.GNU-stack, "", @progbits
