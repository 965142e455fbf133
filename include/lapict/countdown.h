/* SPDX-License-Identifier: MIT */
/*
 * A count-down as a host instant: the timer registers and the host time of
 * the next expiry. This is what a host whose own timer model knows only
 * count-downs carries in its migration stream (QEMU's APIC timer fields,
 * for one), so that a count-down in flight moves between that model and
 * lapict at the right count, in both directions.
 *
 * docs/spec/state.md section 7 specifies both calls: what a plain
 * count-down is, what restore accepts and what it does. The save/restore
 * blob (state.h) carries every state; this carries only a plain one.
 */
#ifndef LAPICT_COUNTDOWN_H
#define LAPICT_COUNTDOWN_H

#include <stdint.h>

#include "export.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* next_ns of a timer with no count-down running (stopped, or expired). */
#define LAPICT_COUNTDOWN_NONE UINT64_MAX

/* A count-down anchored at a host instant (docs/spec/state.md section 7). */
struct lapict_countdown {
    /* LVTT, stored bits only (vector, mask, mode); never bit 12. */
    uint32_t lvtt;
    /* TDCR, bits 3, 1, 0. */
    uint32_t tdcr;
    /* TMICT (0 in TSC-deadline mode). */
    uint32_t tmict;
    /*
     * Host time (the now_ns op's clock) of the next expiry, which may
     * already have passed (due, not yet processed); LAPICT_COUNTDOWN_NONE
     * when no count-down runs (a one-shot that expired, TMICT 0,
     * TSC-deadline mode). An expiry whose instant is UINT64_MAX itself is
     * given as 0, one ns later.
     */
    uint64_t next_ns;
};

/**
 * lapict_countdown_get() - the count-down as of @now_ns.
 * @t: the instance; not modified.
 * @now_ns: host time of the read, at or after the instance's last call.
 * @out: receives the count-down.
 *
 * Calls no op: nothing is injected, armed, reported or processed, so a host
 * can call it from a migration's save path with the vCPU stopped. An
 * expiry that is due but not yet processed is in @out as a @next_ns at or
 * before @now_ns: whoever restores it delivers it, and the source still
 * has it if the migration fails.
 *
 * Context: any thread, provided the owner thread is not using @t.
 * Return: LAPICT_OK when @out describes the whole timer state;
 * LAPICT_E_NOT_COUNTDOWN when it is more than a count-down (a TSC deadline
 * armed, an interrupt held pending, an expiry injected ahead): @out is
 * filled all the same, with the count-down part (@next_ns
 * LAPICT_COUNTDOWN_NONE without one), and only lapict_state_save() carries
 * the rest; LAPICT_E_INVAL for NULL; LAPICT_E_REENTRY from inside one of
 * @t's ops (ops.h, "Re-entry").
 */
LAPICT_API int lapict_countdown_get(const struct lapict_timer *t,
                                    uint64_t now_ns,
                                    struct lapict_countdown *out);

/**
 * lapict_countdown_restore() - load a count-down anchored at a host instant.
 * @t: an instance set up with lapict_init() (its config, ops, SVR state,
 *     run state and statistics are kept).
 * @cd: the count-down (untrusted).
 * @now_ns: host time of the restore, the now_ns op's clock (the clock
 *          @cd->next_ns is on).
 *
 * Every field is validated before anything changes. The next expiry comes
 * at @cd->next_ns, never before, and later ones follow on the periodic
 * grid from there; TMCCT reads the ticks left until it. A @cd->next_ns
 * further ahead than the whole count (TMICT at this divider and clamp) is
 * cut to @now_ns plus the whole count. Expiries already due at @now_ns are
 * held pending (missed-tick policy applied), never injected: as after
 * lapict_state_restore(), the host restores its interrupt controller and
 * then calls lapict_irq_window_open() as soon as it can take an interrupt.
 * The previous timer state (pending interrupts, a deadline, an expiry
 * injected ahead) is replaced; host timers are cancelled and re-armed.
 * With the APIC software-disabled, LVTT is restored masked, as a guest
 * write would store it.
 *
 * Context: owner thread, vCPU stopped.
 * Return: LAPICT_OK; LAPICT_E_INVAL for NULL; LAPICT_E_REENTRY from inside
 * one of @t's ops (ops.h, "Re-entry"), nothing changed;
 * LAPICT_E_STATE_FIELD for a
 * field a guest could not have produced (docs/spec/state.md section 7);
 * LAPICT_E_STATE_CONFIG for TSC-deadline mode on an instance that does not
 * offer it. On error @t is unchanged.
 */
LAPICT_API int lapict_countdown_restore(struct lapict_timer *t,
                                        const struct lapict_countdown *cd,
                                        uint64_t now_ns);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_COUNTDOWN_H */
