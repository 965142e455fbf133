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

#include "cpu.h"
#include "mailbox.h"

/* xAPIC MMIO base (IA32_APIC_BASE reset value). */
#define APIC 0xFEE00000ull

/* One line to the VMM's console (PORT_PUTS). */
void puts_(const char *s);

/* printf-like to puts_(): %s, %u (uint64), %x (uint64), %d (int64). */
void out(const char *fmt, ...);

/*
 * Load the IDT: exceptions 0-19 report and stop (exception()), @timer_vec
 * goes to timer_isr() (entry.S: timer_stub), 0xFF is the spurious vector.
 */
void setup_idt(uint8_t timer_vec);
/* One more interrupt gate, for a handler of the guest's own (after
 * setup_idt, which loads the table the gate is in). */
void setup_gate(uint8_t vec, void (*fn)(void));

/* Called by entry.S for an exception: reports it, PORT_DONE 100 + vector. */
void exception(uint64_t vec);

/* The guest's timer interrupt handler, called by entry.S: timer_stub. */
void timer_isr(void);

#endif
