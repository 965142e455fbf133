/* SPDX-License-Identifier: MIT */
/*
 * The APIC timer state machine (timer.c), as the register, count-down and
 * save/restore files drive it: bring the state to an instant, re-anchor or
 * clamp a count-down, and arm the host timer for the next expiry. The public
 * half is <lapict/timer.h>. Not installed.
 */
#ifndef LAPICT__TIMER_H
#define LAPICT__TIMER_H

#include "clock.h"
#include "internal.h"
#include "ops.h"

/*
 * Host instant at which the guest TSC reaches @d (now <= result), at most
 * LAPICT__FAR_NS ahead.
 */
static LAPICT__HOT uint64_t lapict__deadline_ns(const struct lapict_timer *t,
                                                uint64_t now, uint64_t tsc,
                                                uint64_t d)
{
    uint64_t rem = 0, at;

    if (tsc >= d)
        return now;
    /*
     * Beyond the horizon by tsc_khz: "not yet", re-checked at the horizon.
     * The host's answer is not asked: an instant past 2^64 ns wraps to one
     * that can look near.
     */
    if (lapict__tsc_beyond_horizon(t, d - tsc))
        return now + LAPICT__FAR_NS;
    /* The host knows its TSC mapping exactly, phase included. */
    if (lapict__host_tsc_to_ns(t, d, &at))
        rem = lapict__after_eq(now, at) ? 0 : at - now;
    /* No host answer, or one already past while the TSC is still short. */
    if (rem == 0 || rem > LAPICT__FAR_NS)
        rem = lapict__ns_from_tsc(t, d - tsc);
    return now + (rem > LAPICT__FAR_NS ? LAPICT__FAR_NS : rem);
}

/*
 * Has the armed deadline been reached at @now, the guest TSC reading
 * @tsc? Mostly tsc >= D. But the TSC wraps at 2^64: a deadline reached
 * just before the wrap and serviced after it reads tsc < D. It counts as
 * reached when its host instant has passed and the TSC is above D modulo
 * 2^64 by no more than that lateness explains (twice it, plus two ticks of
 * slack for an estimated instant). A deadline not reached reads about 2^64
 * ticks "above" modulo 2^64 and never passes that test, except one armed
 * near 2^64 ticks ahead and re-checked at the horizon after a stall of
 * 2^61 ns or more. Register writes keep the plain section 4 compare.
 */
static LAPICT__HOT bool lapict__dl_reached(const struct lapict_timer *t,
                                           uint64_t now, uint64_t tsc)
{
    uint64_t late;

    if (tsc >= t->deadline_tsc)
        return true;
    if (!lapict__after_eq(now, t->dl.at_ns))
        return false;
    late = now - t->dl.at_ns;
    return (lapict__u128)lapict__ns_from_tsc(t, tsc - t->deadline_tsc) <=
           (lapict__u128)2 * late + lapict__ns_from_tsc(t, 2);
}

/* Current count at @now. */
uint32_t lapict__tmcct(const struct lapict_timer *t, uint64_t now);

/* Should a periodic count of N be clamped with the current divider? */
static LAPICT__HOT bool lapict__needs_clamp(const struct lapict_timer *t)
{
    return (t->lvtt & LAPICT_LVTT_MODE) == LAPICT_LVTT_PERIODIC && t->tmict &&
           t->min_period_ns &&
           lapict__ns_for_raw(t, t->tmict) < t->min_period_ns;
}

/* Re-anchor the count-down at @now keeping count @c (0 stops it). */
static LAPICT__HOT void lapict__reanchor(struct lapict_timer *t, uint64_t now,
                                         uint32_t c)
{
    t->flags &= (uint16_t)~LAPICT__F_PREINJ;
    if (c == 0) {
        t->flags &= (uint16_t) ~(LAPICT__F_CD_ACTIVE | LAPICT__F_CD_ARMED);
        return;
    }
    t->cd.anchor_ns = now;
    t->cd.e_tick = c;
    t->cd.next_rel_ns = lapict__ns_for(t, c);
    t->flags |= LAPICT__F_CD_ACTIVE | LAPICT__F_CD_ARMED;
}

/* Set or clear the clamp flag, counting each engagement. */
static LAPICT__HOT void lapict__clamp_flag(struct lapict_timer *t, bool clamp)
{
    if (clamp && !(t->flags & LAPICT__F_CLAMPED))
        lapict__count(t, LAPICT__N_CLAMPS);
    if (clamp)
        t->flags |= LAPICT__F_CLAMPED;
    else
        t->flags &= (uint16_t)~LAPICT__F_CLAMPED;
}

/* Apply @clamp to a running count-down, preserving its count. */
void lapict__set_clamp(struct lapict_timer *t, uint64_t now, bool clamp);

/*
 * Bring @t to @now as servicing would (one computation, the same path), but
 * call no op: due expiries stay pending (missed-tick policy applied), a
 * deadline is checked against @tsc (the guest TSC at @now). Save runs it on
 * a copy, restore on the state it is about to commit.
 */
void lapict__settle(struct lapict_timer *t, uint64_t now, uint64_t tsc);

/*
 * Whether lapict__settle() at @now (guest TSC @tsc) has an expiry to
 * process: the tests of servicing that lead to an expiry. Save skips its
 * copy when not (tests/test_state.c compares both paths' blobs with an
 * instance actually serviced at the same instant).
 */
static inline bool lapict__due(const struct lapict_timer *t, uint64_t now,
                               uint64_t tsc)
{
    if (t->flags & LAPICT__F_CD_ARMED)
        return lapict__elapsed(t, now) >= t->cd.next_rel_ns;
    return (t->flags & LAPICT__F_DL_ARMED) && lapict__dl_reached(t, now, tsc);
}

/* Process expiries due at @now (no advance); re-arm if any. */
void lapict__update_slow(struct lapict_timer *t, uint64_t now);

/*
 * Bring the state up to @now: every register access starts here, so the
 * common case (a count-down whose next expiry is still ahead) is inline.
 */
static inline void lapict__update(struct lapict_timer *t, uint64_t now)
{
    if ((t->flags & (LAPICT__F_CD_ARMED | LAPICT__F_DL_ARMED)) ==
            LAPICT__F_CD_ARMED &&
        lapict__elapsed(t, now) < t->cd.next_rel_ns)
        return;
    if (t->flags & (LAPICT__F_CD_ARMED | LAPICT__F_DL_ARMED))
        lapict__update_slow(t, now);
}

/*
 * An expiry injected ahead (LAPICT__F_PREINJ), brought to its instant:
 * wait for it on the spin op (at most the advance) and process it, so that
 * the interrupt the guest holds stands for an expiry that happened. The
 * entry runs it; so does a register write that would change the expiry
 * (its instant, vector or mask), which then lands after it. Return the
 * host time after the wait.
 */
uint64_t lapict__preinj_settle(struct lapict_timer *t, uint64_t now);

/* Drop all timer activity (mode switch, reset). */
void lapict__disarm(struct lapict_timer *t);

/* Current advance in ns (0 when off, and always on a host without a spin
 * op: lapict_init()). */
static inline uint32_t lapict__advance(const struct lapict_timer *t)
{
    return t->adv_ns;
}

/*
 * ns from @now until the count-down's next expiry, 0 once it is due (that
 * is, lapict__elapsed() >= next_rel_ns: the same test servicing makes).
 * While the anchor is ahead of @now (lapict__elapsed() is 0) the expiry
 * lies next_rel_ns beyond the anchor (a next expiry is at most one count
 * ahead of its anchor, 2^32 ticks at divide 128 on the slowest bus or one
 * minimum period, under 2^59 ns; a restored tick may be further).
 */
static LAPICT__HOT uint64_t lapict__cd_left(const struct lapict_timer *t,
                                            uint64_t now)
{
    uint64_t d = now - t->cd.anchor_ns;

    if (lapict__after_eq(now, t->cd.anchor_ns))
        return d >= t->cd.next_rel_ns ? 0 : t->cd.next_rel_ns - d;
    /* Saturating: a restored count's next_rel_ns may be huge. */
    d = t->cd.anchor_ns - now;
    return d > UINT64_MAX - t->cd.next_rel_ns ? UINT64_MAX
                                              : d + t->cd.next_rel_ns;
}

/*
 * Arm the host timer for the next expiry, or cancel it when none is armed.
 * It fires the advance before the expiry, and never further than the
 * horizon. When that point has already passed, a register path still arms
 * it (the host fires at once and lapict_expire() injects ahead);
 * lapict_expire() itself (@fired: its host timer has fired, and it has just
 * tried to inject ahead) falls back to the exact instant, so that a refused
 * or impossible pre-injection (window closed, masked, illegal vector) cannot
 * turn into a storm of callbacks.
 */
static LAPICT__HOT void lapict__arm_next(struct lapict_timer *t, uint64_t now,
                                         bool fired)
{
    uint64_t left, rel;
    uint32_t adv = lapict__advance(t);

    if (!(t->flags & (LAPICT__F_CD_ARMED | LAPICT__F_DL_ARMED))) {
        lapict__host_cancel(t);
        return;
    }
    if (t->flags & LAPICT__F_CD_ARMED)
        left = lapict__cd_left(t, now);
    else
        left = lapict__after_eq(now, t->dl.at_ns) ? 0 : t->dl.at_ns - now;
    rel = left;
    if (adv && !(t->flags & LAPICT__F_PREINJ) && !(fired && left <= adv))
        rel = left > adv ? left - adv : 0; /* passed: the host fires now */
    if (rel > LAPICT__FAR_NS)
        rel = LAPICT__FAR_NS;
    lapict__host_arm(t, now + rel, fired);
}

/* Record a guest-caused error. */
void lapict__guest_error(struct lapict_timer *t, int status, uint32_t detail);

/*
 * @n illegal-vector expiries that a quiet settling (save, restore) dropped
 * without a report and that @t has not counted: count them and report
 * once, as servicing them would have.
 */
void lapict__report_dropped_illegal(struct lapict_timer *t, uint64_t n);

#endif /* LAPICT__TIMER_H */
