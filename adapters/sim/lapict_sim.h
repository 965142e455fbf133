/* SPDX-License-Identifier: MIT */
/*
 * Deterministic simulated host for lapict: a virtual clock from any start
 * instant (wrapping at 2^64), a software timer with a fixed latency, an
 * optional hardware preemption timer that counts only while the vCPU runs,
 * an interrupt window, an entry latency, per-timer counters and a recorder
 * of injections, deliveries, spins and reports.
 * The adapter's README has the exact event model; it is installed in
 * share/doc/lapict/adapters/sim (Debian: /usr/share/doc/liblapict-sim-dev).
 */
#ifndef LAPICT_SIM_H
#define LAPICT_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include <lapict/lapict.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lapict_sim_config {
    uint32_t tsc_khz;    /* guest TSC rate (0: a TSC that stands still) */
    uint64_t tsc_offset; /* guest TSC at start_ns */
    uint64_t start_ns;   /* host clock at lapict_sim_init() */
    bool hv_timer;       /* offer a hardware preemption timer */
    uint32_t hv_shift;   /* preemption timer rate: TSC >> hv_shift */
    uint64_t hv_max;     /* largest count it accepts */
    /* Refuse hardware timer arms further ahead than this; 0: no limit. */
    uint64_t hv_max_ahead_ns;
    uint64_t host_latency_ns; /* host timers fire this late */
    /* From the guest entry (lapict_before_guest_entry() returned) to the
     * guest receiving an interrupt (docs/spec/replay.md). */
    uint64_t entry_latency_ns;
    /*
     * The driver calls lapict_sim_enter() itself: no guest entry after a
     * host timer callback, lapict_sim_block(), lapict_sim_unblock() or
     * lapict_sim_window().
     */
    bool manual_entry;
};

/* Called for each interrupt the guest receives, at guest-visible time. */
typedef void (*lapict_sim_deliver_fn)(void *arg, uint64_t when_ns,
                                      uint8_t vector);

/* One interrupt: when the host accepted it or the guest received it. */
struct lapict_sim_event {
    uint64_t host_ns;
    uint64_t guest_tsc;
    uint8_t vector;
};

struct lapict_sim_report {
    int status;
    uint32_t detail;
};

/*
 * The recorder: buffers the caller owns, filled in call order up to their
 * capacity (capacity 0, the default, records nothing); the sim's
 * counters (injects, deliveries, spins, reports) keep counting past it.
 */
struct lapict_sim_log {
    struct lapict_sim_event *inj; /* accepted injections */
    uint32_t inj_cap;
    struct lapict_sim_event *dlv; /* deliveries at guest entry */
    uint32_t dlv_cap;
    uint64_t *spin_to; /* spin_until targets */
    uint32_t spin_cap;
    struct lapict_sim_report *rep; /* reports */
    uint32_t rep_cap;
};

#define LAPICT_SIM_QUEUE 1024
/*
 * Host timer callbacks in a row at one instant after which the host stops:
 * a timer that is due again at once, every time, would never let the
 * clock move (a livelock of the instance). A correct instance needs two
 * at most (the software and the hardware timer).
 */
#define LAPICT_SIM_STUCK 1000u

struct lapict_sim {
    struct lapict_sim_config cfg;
    struct lapict_timer *timer;
    lapict_sim_deliver_fn deliver;
    void *deliver_arg;
    struct lapict_sim_log log;
    uint64_t now_ns;
    bool blocked, window_open;
    bool sw_armed, hv_armed;
    uint64_t sw_at_ns;   /* instant the software timer was armed for */
    uint64_t sw_fire_ns; /* instant its callback runs (with the latency) */
    uint64_t hv_at_ns;   /* instant the hardware timer was armed for */
    /* Vectors accepted since the last entry. */
    uint32_t nqueued;
    uint8_t queued[LAPICT_SIM_QUEUE];
    /* Counters for tests: per timer, then per op. */
    uint64_t sw_arms, sw_cancels, sw_fires;
    uint64_t hv_arms, hv_cancels, hv_refusals, hv_fires;
    uint64_t injects, refusals, deliveries, spins, reports;
    /* lapict_expire() calls, host timer callbacks and lapict_sim_fire(). */
    uint64_t expire_calls;
    /* Library calls after which both host timers were armed. */
    uint64_t both_armed;
    /* Runs that stopped on a livelock (LAPICT_SIM_STUCK). */
    uint64_t livelocks;
    int last_report_status;
    uint32_t last_report_detail;
};

/* The ops table of the simulated host; ctx is a struct lapict_sim *. */
extern const struct lapict_ops lapict_sim_ops;

/**
 * lapict_sim_config_default() - tsc_khz 1 000 000, offset 0, start 0, no
 * hardware timer (shift 5, max 2^32-1 when enabled), no latencies, a
 * guest entry after every host event.
 * @c: filled.
 */
void lapict_sim_config_default(struct lapict_sim_config *c);

/**
 * lapict_sim_init() - a host at time @c->start_ns, window open, vCPU
 * running, nothing recorded.
 * @s: the host.
 * @c: its configuration (copied); NULL for defaults.
 * @deliver: called for each delivered interrupt (may be NULL).
 * @arg: passed to @deliver.
 */
void lapict_sim_init(struct lapict_sim *s, const struct lapict_sim_config *c,
                     lapict_sim_deliver_fn deliver, void *arg);

/**
 * lapict_sim_attach() - the instance whose callbacks this host runs.
 * @s: the host.
 * @t: an instance initialised with &lapict_sim_ops and @s as ctx.
 */
void lapict_sim_attach(struct lapict_sim *s, struct lapict_timer *t);

/**
 * lapict_sim_drop_timers() - forget armed host timers and queued vectors
 * (the old instance of a save/restore is gone).
 * @s: the host.
 */
void lapict_sim_drop_timers(struct lapict_sim *s);

/**
 * lapict_sim_guest_tsc() - the guest TSC at the current host time.
 * @s: the host.
 * Return: tsc_offset + floor((now - start_ns) * tsc_khz / 10^6), the
 * difference taken on the wrapping clock, the sum wrapping at 2^64.
 */
uint64_t lapict_sim_guest_tsc(const struct lapict_sim *s);

/**
 * lapict_sim_advance() - move the clock by @delta_ns running due timers.
 * @s: the host.
 * @delta_ns: how far; any value, the clock wraps at 2^64.
 *
 * Runs every host timer callback due within @delta_ns, however many.
 * Return: true; false if it stopped on a livelock (LAPICT_SIM_STUCK
 * callbacks in a row at one instant), the clock where they left it.
 */
bool lapict_sim_advance(struct lapict_sim *s, uint64_t delta_ns);

/**
 * lapict_sim_run_until() - move the clock to @t_ns running due timers.
 * @s: the host.
 * @t_ns: target time, compared with now by the signed 64-bit difference:
 *        at or behind the current time only runs what is due.
 * Return: as lapict_sim_advance().
 */
bool lapict_sim_run_until(struct lapict_sim *s, uint64_t t_ns);

/**
 * lapict_sim_stall() - freeze the host for @d_ns, then run what came due.
 * @s: the host.
 * @d_ns: length of the stall.
 * Return: as lapict_sim_advance().
 */
bool lapict_sim_stall(struct lapict_sim *s, uint64_t d_ns);

enum lapict_sim_timer {
    LAPICT_SIM_TIMER_NONE, /* a spurious callback: nothing disarmed */
    LAPICT_SIM_TIMER_SW,
    LAPICT_SIM_TIMER_HV,
};

/**
 * lapict_sim_fire() - a host timer callback now, whether its instant has
 * come or not (an early, stale or spurious callback).
 * @s: the host.
 * @which: the timer disarmed and counted as fired, or none.
 * Return: lapict_expire()'s status.
 */
int lapict_sim_fire(struct lapict_sim *s, enum lapict_sim_timer which);

/**
 * lapict_sim_block() - the vCPU halts.
 * @s: the host.
 * Return: lapict_vcpu_blocking()'s status.
 */
int lapict_sim_block(struct lapict_sim *s);

/**
 * lapict_sim_unblock() - the vCPU resumes, and what came due runs.
 * @s: the host.
 * Return: lapict_vcpu_unblocked()'s status; a livelock of what came due
 * is counted in @s->livelocks.
 */
int lapict_sim_unblock(struct lapict_sim *s);

/**
 * lapict_sim_window() - open or close the interrupt window.
 * @s: the host.
 * @open: the new state.
 * Return: lapict_irq_window_open()'s status on opening, else LAPICT_OK.
 */
int lapict_sim_window(struct lapict_sim *s, bool open);

/**
 * lapict_sim_enter() - guest entry: the advance wait, then deliveries.
 * @s: the host.
 * Return: lapict_before_guest_entry()'s status.
 */
int lapict_sim_enter(struct lapict_sim *s);

/*
 * A wrapper around any ops table, as SQLite's test VFS wraps a VFS: the
 * instance is bound to w->ops with w as ctx, and each call is counted,
 * handed to an optional trace callback, either answered as a fault or
 * passed to the wrapped table, and then handed with its answer to an
 * optional after callback. It records and faults the simulated host
 * above, a test's fake, or a real adapter alike.
 */
enum lapict_sim_op {
    LAPICT_SIM_OP_NOW_NS,
    LAPICT_SIM_OP_GUEST_TSC,
    LAPICT_SIM_OP_SW_ARM,
    LAPICT_SIM_OP_SW_CANCEL,
    LAPICT_SIM_OP_HV_ARM,
    LAPICT_SIM_OP_HV_CANCEL,
    LAPICT_SIM_OP_INJECT,
    LAPICT_SIM_OP_SPIN,
    LAPICT_SIM_OP_REPORT,
    LAPICT_SIM_OP_TSC_TO_NS,
    LAPICT_SIM_NOPS
};
#define LAPICT_SIM_OP_BIT(op) (1u << (op))

/*
 * Called before each op the instance calls through the wrapper: @arg is
 * the op's argument (host ns, vector, status), 0 for ops without one.
 */
typedef void (*lapict_sim_trace_fn)(void *trace_arg, enum lapict_sim_op op,
                                    uint64_t arg);

/*
 * Called after each op the instance calls through the wrapper, faulted
 * ones included, once the answer is known and before the instance gets
 * it: @arg as for the trace callback, @answer what the instance receives
 * (host ns, guest TSC, 1 or 0 for hv_timer_arm and inject, 0 for ops that
 * answer nothing). It observes; it cannot change the answer. A checker
 * that needs the host's state after the call (a timer armed, a vector
 * queued) looks here rather than in a table of its own.
 */
typedef void (*lapict_sim_after_fn)(void *after_arg, enum lapict_sim_op op,
                                    uint64_t arg, uint64_t answer);

struct lapict_sim_wrap {
    /* The table to bind the instance to, with the wrapper as ctx. */
    struct lapict_ops ops;
    const struct lapict_ops *inner;
    void *inner_ctx;
    /*
     * Faults: ops in @refuse answer false (hv_timer_arm, inject) or do
     * nothing (the others answer 0) without reaching the wrapped table;
     * @refuse_after lets that many calls of a refused op through first.
     */
    uint32_t refuse;
    uint64_t refuse_after;
    lapict_sim_trace_fn trace;
    void *trace_arg;
    lapict_sim_after_fn after;
    void *after_arg;
    /* Calls per op, and in all (faulted ones included). */
    uint64_t calls[LAPICT_SIM_NOPS];
    uint64_t total_calls;
};

/**
 * lapict_sim_wrap_init() - wrap @inner for an instance.
 * @w: the wrapper (fully overwritten).
 * @inner: the wrapped table; it must outlive @w.
 * @inner_ctx: the wrapped table's ctx.
 * @absent: LAPICT_SIM_OP_BIT()s of ops to leave NULL in @w->ops (a host
 *          that lacks them); ops NULL in @inner are NULL in @w->ops too.
 *
 * Bind the instance with lapict_init(t, cfg, &w->ops, w) afterwards.
 */
void lapict_sim_wrap_init(struct lapict_sim_wrap *w,
                          const struct lapict_ops *inner, void *inner_ctx,
                          uint32_t absent);

/**
 * lapict_sim_ops_remove() - NULL the ops in @absent of @ops, a host
 * without those primitives.
 * @ops: a table the caller owns.
 * @absent: LAPICT_SIM_OP_BIT()s.
 */
void lapict_sim_ops_remove(struct lapict_ops *ops, uint32_t absent);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_SIM_H */
