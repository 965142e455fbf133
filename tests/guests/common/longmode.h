/* SPDX-License-Identifier: MIT */
/*
 * The C side of longmode.S, the entry of the project's multiboot x86-64
 * kernels (lapict-mbtest, lapict-timers, lapict-hv): what the entry hands
 * over and calls, the frame its interrupt stubs build, and the IDT that
 * points at them. Freestanding, 64-bit.
 */
#ifndef LAPICT_GUESTS_LONGMODE_H
#define LAPICT_GUESTS_LONGMODE_H

#include <stdint.h>

/* EAX and EBX as the multiboot loader left them: the boot magic and the
 * multiboot information's address. */
extern uint32_t mb_boot_magic, mb_boot_info;

/* The GDT: null, 0x08 64-bit code, 0x10 data, and at 0x18 a 64-bit TSS
 * descriptor (16 bytes, empty) for a kernel that loads TR. */
extern uint64_t mb_gdt[5];

/* 256 interrupt stubs, vector v's at mb_trap_stubs + 16 * v. */
extern const char mb_trap_stubs[];

/* The kernel's entry, called once in long mode on longmode.S's stack. */
void mb_main(void);

/* What the stubs save: the general registers, the vector, the error code
 * (0 where the CPU pushes none), then the CPU's own interrupt frame. */
struct frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx,
        rax, vector, error, rip, cs, rflags, rsp, ss;
};

/* The kernel's handler of every interrupt and exception; a return resumes
 * at @f->rip. */
void mb_trap(struct frame *f);

struct idt_gate {
    uint16_t off0, sel;
    uint8_t ist, type;
    uint16_t off1;
    uint32_t off2, zero;
};

/* Point the 256 gates of @idt at the stubs (64-bit interrupt gates,
 * selector 0x08) and load it. */
static inline void idt_init(struct idt_gate *idt)
{
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed)) d;

    for (unsigned v = 0; v < 256; v++) {
        uint64_t a = (uint64_t)(uintptr_t)(mb_trap_stubs + 16u * v);
        idt[v] = (struct idt_gate){.off0 = (uint16_t)a,
                                   .sel = 8,
                                   .type = 0x8E,
                                   .off1 = (uint16_t)(a >> 16),
                                   .off2 = (uint32_t)(a >> 32)};
    }
    d.limit = 256 * sizeof(*idt) - 1;
    d.base = (uint64_t)(uintptr_t)idt;
    __asm__ volatile("lidt %0" ::"m"(d));
}

#endif
