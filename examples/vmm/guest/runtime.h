/* SPDX-License-Identifier: MIT */
/*
 * What every guest image of the project shares: TSC, MSR and port access,
 * the xAPIC base, a line printer for PORT_PUTS and the IDT (entry.S
 * provides the stubs). Each guest keeps its own xAPIC register accessors.
 * Freestanding, 64-bit, one CPU.
 */
#ifndef LAPICT_VMM_GUEST_RUNTIME_H
#define LAPICT_VMM_GUEST_RUNTIME_H

#include <stdint.h>

#include "mailbox.h"

/* xAPIC MMIO base (IA32_APIC_BASE reset value). */
#define APIC 0xFEE00000ull

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v),
                     "d"((uint32_t)(v >> 32))
                     : "memory");
}

static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr) : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port) : "memory");
}

/* One line to the VMM's console (PORT_PUTS). */
void puts_(const char *s);

/* printf-like to puts_(): %s, %u (uint64), %x (uint64), %d (int64). */
void out(const char *fmt, ...);

/*
 * Load the IDT: exceptions 0-19 report and stop (exception()), @timer_vec
 * goes to timer_isr() (entry.S: timer_stub), 0xFF is the spurious vector.
 */
void setup_idt(uint8_t timer_vec);

/* Called by entry.S for an exception: reports it, PORT_DONE 100 + vector. */
void exception(uint64_t vec);

/* The guest's timer interrupt handler, called by entry.S: timer_stub. */
void timer_isr(void);

#endif
