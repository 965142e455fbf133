/* SPDX-License-Identifier: MIT */
/*
 * The host port: the only way the core reaches its host. One table per host,
 * shared by all its instances; each instance carries its own @ctx.
 *
 * Timer contract (as Mbed TLS's timing callbacks): arming replaces any
 * previous arming of the same timer; cancel is idempotent; a host timer
 * that fires must lead to a lapict_expire() call on the instance's owner
 * thread. The core tolerates callbacks that are early, late, duplicated or
 * stale (the timer was re-armed or cancelled meanwhile): it always checks
 * the clock.
 *
 * Threading: every function of an instance, and every op it calls, runs on
 * the instance's owner thread (the vCPU thread). A host whose timers fire on
 * another thread must not call into the library from there: it sets a flag
 * (an atomic store with release ordering) and kicks the vCPU thread, which
 * consumes the flag (acquire) and calls lapict_expire(). The core takes no
 * locks and has no shared mutable state between instances.
 *
 * Re-entry: an op must not call into the library for the instance it was
 * called for (say, lapict_irq_window_open() from inside inject). Such a
 * call is detected: it returns LAPICT_E_REENTRY (register reads return 0)
 * and changes nothing, and the outer call completes as if it had not been
 * made. The host does it afterwards, from its own loop. This holds for
 * every op that acts (timer arm/cancel, inject, spin_until, report); the
 * ops that only read (now_ns, guest_tsc, tsc_to_host_ns) must simply not
 * call back. Calls for other instances are fine. lapict_init(), which
 * takes any memory, is not checked: an op must not re-initialise the
 * instance it serves.
 *
 * Horizon of host time: now_ns wraps at 2^64, so an instant is judged
 * against the clock by one rule, the half range (as lwIP's timers and
 * Linux's time_after() do): instant X has passed at time now when
 * now - X, read as a signed 64-bit number, is >= 0. A count-down measures
 * the time since its anchor by the same rule, so a host clock behind the
 * anchor, or a stall of 2^63 ns or more (292 years, which the rule cannot
 * tell from it), reads as "not yet" everywhere: nothing fires early, and
 * the host timer is armed once for the expiry, never for "now" again and
 * again. No host timer is armed more than 2^62 ns ahead: an instant beyond
 * (a TSC deadline whose host instant lies past 2^64 ns, say) is "not yet"
 * and is re-checked then, never taken for one that is near. now_ns must be
 * monotonic; see lapict_before_guest_entry() for what a clock that goes
 * back does to the wait before entry.
 */
#ifndef LAPICT_OPS_H
#define LAPICT_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when fields are appended; the table only ever grows at the end. */
#define LAPICT_OPS_VERSION 1

/* The host's ops table (see the contract above). */
struct lapict_ops {
    /* LAPICT_OPS_VERSION the host was written against. */
    uint32_t version;

    /* Host monotonic time in ns. Mandatory. May wrap at 2^64. */
    uint64_t (*now_ns)(void *ctx);
    /* The guest's current TSC value. Mandatory. */
    uint64_t (*guest_tsc)(void *ctx);

    /* Arm the software timer to fire at host time @host_ns. Mandatory. */
    void (*sw_timer_arm)(void *ctx, uint64_t host_ns);
    /* Cancel the software timer. Mandatory; idempotent. */
    void (*sw_timer_cancel)(void *ctx);

    /*
     * Arm the hardware preemption timer for host time @host_ns. Optional
     * (NULL: none offered). Return false to refuse (out of range, busy):
     * the core falls back to the software timer until the next re-arm.
     * Only used while the vCPU is not blocked.
     */
    bool (*hv_timer_arm)(void *ctx, uint64_t host_ns);
    /* Cancel the hardware preemption timer. Mandatory if hv_timer_arm. */
    void (*hv_timer_cancel)(void *ctx);

    /*
     * Offer the timer interrupt @vector to the guest. Mandatory. Return
     * true if the host took it (it will be delivered on the next entry),
     * false to refuse (interrupt window closed, IRR busy): the core then
     * holds it pending until lapict_irq_window_open().
     */
    bool (*inject)(void *ctx, uint8_t vector);

    /*
     * Busy-wait until host time reaches @host_ns. Optional: without it the
     * core cannot wait in lapict_before_guest_entry() and never advances.
     */
    void (*spin_until)(void *ctx, uint64_t host_ns);

    /*
     * Report a guest-caused error (LAPICT_E_VECTOR with the vector as
     * @detail, LAPICT_E_MODE with the LVTT value), or, once per instance,
     * a guest TSC that does not run at the configured tsc_khz
     * (LAPICT_E_TSC_RATE with the measured rate in kHz: the host's
     * configuration to fix, docs/spec/timer.md section 4). Optional. A host can
     * set the LAPIC ESR "Receive Illegal Vector" bit (bit 6) from here: the SDM
     * ("Error Handling") sets it for an illegal vector in an interrupt
     * generated locally from the LVT; bit 5, "Send Illegal Vector", is for
     * ICR and SELF IPI writes.
     */
    void (*report)(void *ctx, int status, uint32_t detail);

    /*
     * The first host time at which the guest TSC reaches @guest_tsc (a
     * value above the current guest TSC). Optional: without it the core
     * estimates the instant from tsc_khz and the current TSC, which can be
     * late by up to one TSC period (never early: the TSC is re-checked).
     * Not asked for a deadline more than 2^62 ns ahead by tsc_khz (the
     * horizon above): its answer would have wrapped at 2^64.
     */
    uint64_t (*tsc_to_host_ns)(void *ctx, uint64_t guest_tsc);
};

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_OPS_H */
