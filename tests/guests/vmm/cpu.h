/* SPDX-License-Identifier: MIT */
/*
 * The x86 instructions every guest image of the project uses (the lapict-vmm
 * guest, the bare-metal guest kernel and the multiboot test kernels).
 * Freestanding, 64-bit.
 */
#ifndef LAPICT_VMM_GUEST_CPU_H
#define LAPICT_VMM_GUEST_CPU_H

#include <stdint.h>

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/*
 * Plain WRMSR/RDMSR, two bytes each (a #GP fixup may skip them); RDMSR
 * reads 0 when skipped.
 */
static inline void wrmsr(uint32_t msr, uint64_t v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v),
                     "d"((uint32_t)(v >> 32))
                     : "memory");
}

static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("rdmsr" : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port) : "memory");
}

static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port) : "memory");
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port) : "memory");
    return v;
}

/* CPUID leaf @leaf, subleaf 0. */
static inline void cpuid(uint32_t leaf, uint32_t *a, uint32_t *b, uint32_t *c,
                         uint32_t *d)
{
    __asm__ volatile("cpuid"
                     : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d)
                     : "a"(leaf), "c"(0));
}

#endif
