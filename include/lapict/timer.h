/* SPDX-License-Identifier: MIT */
/*
 * The timer instance: one per vCPU, allocated by the host (typically inside
 * its vCPU structure) and bound to the host's ops table by lapict_init().
 * There is no create/destroy and no allocation.
 */
#ifndef LAPICT_TIMER_H
#define LAPICT_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "export.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * All fields are private: the layout may change between versions, only the
 * size is part of the ABI promise (at most 272 bytes). Hosts embed it and
 * pass pointers; they never touch the fields.
 */
struct lapict_timer {
    const struct lapict_ops *ops;
    void *ctx;
    /* Timer clock: ticks_raw = ns * bus_p / bus_q, reduced fraction. */
    uint64_t bus_p;
    /* Reciprocals floor(2^64 / d) of bus_p and tsc_khz (0: a power of
     * two). bus_q divides 10^9: 2^k 5^bus_q5, by a constant table. */
    uint64_t bus_rp, tsc_r;
    /* Guest TSC to ns: ns = tsc * 10^6 / tsc_khz. */
    uint32_t bus_q, tsc_khz;
    uint32_t min_period_ns, adv_max_ns;
    /* Instant of the sampled expiry minus when its host timer was due. */
    uint32_t lead_ns;
    uint32_t magic;
    /*
     * The state of the one timer mode in use (the LVT timer mode says
     * which). A count-down: its anchor, the tick of its next expiry and
     * that expiry's ns after the anchor. A TSC deadline: the host instant
     * and guest TSC at which it was armed (its rate is checked against
     * them), and its host instant.
     */
    union {
        struct {
            uint64_t anchor_ns, e_tick, next_rel_ns;
        } cd;
        struct {
            uint64_t t0_ns, tsc0, at_ns;
        } dl;
    };
    /* Deadline mode: the MSR. */
    uint64_t deadline_tsc;
    /* Host timer target; instant of the last processed expiry. */
    uint64_t armed_ns, last_instant_ns;
    /* ns of waiting asked of spin_until (a statistic, saturating). */
    uint64_t spin_ns;
    uint32_t lvtt, tmict;
    /* Adaptive advance: current, latency estimate, mean deviation. */
    uint32_t adv_ns, adv_est, adv_dev;
    /* Balanced goal: mean spin per interrupt allowed (0: no budget). */
    uint32_t adv_budget_ns;
    uint16_t pending, catch_up_max;
    uint16_t flags;
    uint8_t bus_q5, adv_outliers;
    /*
     * TDCR (stored bits) and the log2 of the divider it selects; the host
     * timer armed (none, software or hardware), LAPICT_ADVANCE_*,
     * LAPICT_MISSED_* and LAPICT_ADVANCE_GOAL_* (host configuration, not
     * guest state).
     */
    unsigned tdcr : 4, div_shift : 4, armed : 2, adv_mode : 2, missed : 2,
        adv_goal : 1;
    /* Last guest-caused status (a statistic). */
    int8_t last_error;
    /* Host timer re-arms for the armed deadline (its TSC was short). */
    uint8_t dl_rearms;
    /* The guest TSC rate, kHz, measured off tsc_khz (a statistic). */
    uint32_t tsc_khz_measured;
    /* Statistics counters, saturating, read with lapict_stats_get(). */
    uint64_t counts[13];
    /* Host ready at entry, and guest entered, minus the expiry instant. */
    int32_t last_arrival_ns, last_guest_ns;
};

/*
 * Statistics of one instance; counters saturate, they never wrap. The
 * struct grows only at the end, without padding there: lapict_stats_get()
 * writes as much of it as both the caller and the library know.
 */
struct lapict_stats {
    /*
     * Set by lapict_stats_get(): how many bytes at the start of the struct
     * hold this library's statistics (any after them, up to the size the
     * caller passed, read 0).
     */
    uint32_t size;
    bool clamp_reported;     /* the clamp has engaged at least once */
    uint64_t expiries;       /* expiries processed (masked ones included) */
    uint64_t injections;     /* interrupts the host accepted */
    uint64_t refused;        /* inject calls the host refused */
    uint64_t masked;         /* expiries dropped because LVTT was masked */
    uint64_t coalesced;      /* missed ticks merged (coalesce policy) */
    uint64_t dropped;        /* missed ticks dropped (drop, catch-up bound) */
    uint64_t illegal_vector; /* expiries with vector 0-15, not injected */
    uint64_t mode_errors;    /* LVTT writes with reserved mode 11 */
    uint64_t clamps;         /* times the minimum-period clamp engaged */
    uint64_t hv_to_sw;       /* hardware -> software timer moves */
    uint64_t sw_to_hv;       /* software -> hardware timer moves */
    uint64_t hv_refused;     /* hardware timer arms the host refused */
    uint64_t spins;          /* spin_until calls (waits before entry) */
    uint64_t spin_ns_total;  /* ns of waiting asked of spin_until, summed */
    /*
     * Last (host ready at guest entry - expiry instant), ns, measured
     * before the wait at entry: with the advance on, < 0 when the host
     * was ready early, which the wait absorbs (the guest does not see it).
     */
    int64_t last_arrival_ns;
    /*
     * Last (guest entered with the interrupt - expiry instant), ns: what
     * the guest saw. >= 0, except for an interrupt the guest really got
     * early (a host clock or guest TSC that went back, timer.h).
     */
    int64_t last_guest_ns;
    uint32_t advance_ns; /* advance in force now */
    uint32_t pending;    /* interrupts held pending now */
    int last_error;      /* last guest-caused status, LAPICT_OK if none */
    /*
     * The guest TSC rate, kHz, the library measured over the last TSC
     * deadline whose TSC ran off tsc_khz (docs/spec/timer.md section 4,
     * "A wrong tsc_khz"): above tsc_khz, deadlines came late; below, the
     * host timer fired early and was re-armed. 0 while none did.
     */
    uint32_t tsc_khz_measured;
};

/* sizeof(struct lapict_stats) in 1.0.0: the smallest size accepted. */
#define LAPICT_STATS_SIZE_1_0 152u

/**
 * lapict_init() - bind a caller-allocated instance to its host.
 * @t: the instance (any contents; it is overwritten on success only).
 * @cfg: configuration, or NULL for lapict_config_default() (which states
 *       no guest TSC rate: LAPICT_E_TSC_KHZ, see config.h).
 * @ops: the host's ops table; must outlive the instance.
 * @ctx: passed unchanged to every op.
 *
 * The timer starts in its reset state with the APIC software-enabled, the
 * vCPU running and no host timer armed. No op is called.
 *
 * Re-initialising: lapict_init() never reads the old contents of @t (any
 * bytes are accepted, also ones that look like an instance), so it cannot
 * cancel a host timer an earlier binding armed. An instance that has been
 * initialised is finished with lapict_fini() before lapict_init() binds it
 * again (docs/spec/timer.md section 7, "Lifetime"); otherwise the old host
 * timer stays armed and fires into the new binding.
 *
 * Context: owner thread.
 * Return: LAPICT_OK; LAPICT_E_INVAL for NULL @t/@ops; LAPICT_E_OPS for a
 * missing mandatory op or a zero version; a config code from
 * lapict_config_check(). On error @t is not modified.
 */
LAPICT_API int lapict_init(struct lapict_timer *t,
                           const struct lapict_config *cfg,
                           const struct lapict_ops *ops, void *ctx);

/**
 * lapict_fini() - finish an instance: cancel its host timer, unbind it.
 * @t: an initialised instance.
 *
 * Cancels the host timer the instance has armed (through the host's cancel
 * op; none is called when nothing is armed) and leaves the instance
 * uninitialised: every later call with it returns LAPICT_E_INVAL (register
 * reads return 0) and calls no op, so a host timer callback already under
 * way when lapict_fini() ran is harmless. Pending interrupts, statistics
 * and the tuned advance are dropped. The host may then free @t or bind it
 * again with lapict_init().
 *
 * Context: owner thread, not from inside one of the instance's ops
 * (LAPICT_E_REENTRY, nothing changed).
 * Return: LAPICT_OK; LAPICT_E_INVAL for NULL or an instance that is not
 * initialised (also one already finished); LAPICT_E_REENTRY.
 */
LAPICT_API int lapict_fini(struct lapict_timer *t);

/**
 * lapict_reset() - power-on / INIT reset of the timer registers.
 * @t: the instance.
 *
 * LVTT 0x10000, TDCR 0, TMICT 0, deadline 0; host timers cancelled, any
 * pending interrupt dropped. The SVR software-enable state is the LAPIC's
 * and is left as it is; statistics and the tuned advance are kept.
 *
 * Context: owner thread.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_reset(struct lapict_timer *t);

/**
 * lapict_expire() - a host timer of this instance fired.
 * @t: the instance.
 *
 * Processes every expiry due (taking the advance into account), delivers or
 * holds them pending, and re-arms the host timer. Safe to call at any time,
 * also spuriously: a stale, early or duplicate call only re-checks. An
 * expiry injected ahead (advance) is the interrupt of its servicing: if the
 * host was so late that several periodic expiries passed, the missed-tick
 * policy counts it as the one delivered (coalesce: no second interrupt;
 * drop: none more). A periodic timer whose period is not longer than the
 * advance is never injected ahead.
 *
 * Context: owner thread (see ops.h for callbacks on other threads); not
 * from inside one of this instance's ops: such a call returns
 * LAPICT_E_REENTRY and changes nothing (ops.h, "Re-entry"). The same holds
 * for every function of the library that takes the instance.
 * Return: LAPICT_OK, LAPICT_E_INVAL or LAPICT_E_REENTRY.
 */
LAPICT_API int lapict_expire(struct lapict_timer *t);

/**
 * lapict_irq_window_open() - the host can accept an interrupt again.
 * @t: the instance.
 *
 * Delivers held (pending) interrupts, reading mask and vector now.
 *
 * Context: owner thread, not from inside an op: an inject op that calls it
 * gets LAPICT_E_REENTRY and nothing changes (ops.h, "Re-entry"); the host
 * calls it from its loop once the window is open.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_irq_window_open(struct lapict_timer *t);

/**
 * lapict_vcpu_blocking() - the vCPU is about to halt.
 * @t: the instance.
 *
 * A hardware preemption timer does not count outside the guest, so an armed
 * one is moved to the software timer.
 *
 * Context: owner thread.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_vcpu_blocking(struct lapict_timer *t);

/**
 * lapict_vcpu_unblocked() - the vCPU runs again.
 * @t: the instance.
 *
 * Moves the software timer back to the hardware preemption timer when the
 * host offers one (and keeps the software timer if the host refuses).
 *
 * Context: owner thread.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_vcpu_unblocked(struct lapict_timer *t);

/**
 * lapict_before_guest_entry() - the host is about to enter the guest.
 * @t: the instance.
 *
 * If a timer interrupt was injected ahead of its expiry instant (advance),
 * waits through the spin_until op until that instant (a TSC deadline: until
 * the guest TSC reaches it), calling the op as many times as it takes, so
 * the guest never sees it early, and feeds the measured arrival error to
 * the adaptive advance. Otherwise returns at once. An interrupt is only
 * injected ahead when its instant is at most the advance away, so the wait
 * is at most the advance on a host whose clock moves forward (for one
 * restored with a blob: the blob's advance, state.h). A clock or TSC that
 * went back (or jumped by 2^63 ns or more, see the horizon rule in ops.h)
 * so that the instant reads further away than that bound ends the wait:
 * the guest may then see the interrupt early by the clock's own error, and
 * it is still delivered once.
 *
 * Context: owner thread, right before each guest entry; not from inside an
 * op (see lapict_expire()).
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_before_guest_entry(struct lapict_timer *t);

/**
 * lapict_advance_set() - change the adaptive tuner's goal at run time.
 * @t: the instance.
 * @goal: LAPICT_ADVANCE_GOAL_LATENCY or LAPICT_ADVANCE_GOAL_BALANCED.
 * @spin_budget_ns: mean spin per interrupt allowed, ns (0: no budget).
 *
 * The budget applies to the balanced goal, which keeps the mean spin per
 * interrupt under it; the latency goal ignores it. It is at most
 * LAPICT_ADVANCE_NS_LIMIT. The same fields as advance_goal and
 * advance_spin_budget_ns of struct lapict_config. The tuner keeps its
 * latency estimate and applies the new goal from the next sample on; the
 * advance in force, and an interrupt already injected ahead, are not
 * touched. An instance that is not adaptive stores the policy and does not
 * use it. The policy is host configuration: lapict_state_save() does not
 * carry it and
 * lapict_state_restore() keeps the instance's own.
 *
 * Context: owner thread.
 * Return: LAPICT_OK; LAPICT_E_INVAL for an invalid @t, an unknown @goal or
 * a budget above the limit, and then nothing is changed.
 */
LAPICT_API int lapict_advance_set(struct lapict_timer *t, uint32_t goal,
                                  uint32_t spin_budget_ns);

/**
 * lapict_stats_get() - read the statistics of an instance.
 * @t: the instance.
 * @out: filled with a snapshot.
 * @size: the size of @out as the caller was built, sizeof(*out); at least
 *        LAPICT_STATS_SIZE_1_0. No more than @size bytes are written: a
 *        caller built against an older release (a smaller struct) gets the
 *        fields it knows, one built against a newer release gets this
 *        library's fields and zeros after them, and @out->size says how
 *        many bytes this library filled.
 *
 * The cost side of the advance: @out->spins counts the waits asked of the
 * host's spin_until op before guest entry (a TSC deadline may need more
 * than one per interrupt when the host clock and the guest TSC disagree),
 * and @out->spin_ns_total sums the ns each of them asked for (target minus
 * now at the call; the host's own overshoot is not seen). Their ratio is
 * the mean spin per wait; divided by @out->injections instead, the host
 * CPU the advance costs per interrupt.
 *
 * The benefit side: for the last interrupt lapict_expire() injected,
 * @out->last_arrival_ns is when the host was ready at guest entry (before
 * the wait; < 0 when the advance brought it there early) and
 * @out->last_guest_ns when the guest entered with it (after the wait;
 * never < 0 unless the guest really got it early), both relative to the
 * expiry instant (docs/spec/timer.md section 7, "Measurements").
 *
 * Context: owner thread.
 * Return: LAPICT_OK; LAPICT_E_INVAL for NULL @t or @out, or a @size below
 * LAPICT_STATS_SIZE_1_0 (nothing written).
 */
LAPICT_API int lapict_stats_get(const struct lapict_timer *t,
                                struct lapict_stats *out, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_TIMER_H */
