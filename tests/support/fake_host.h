/* SPDX-License-Identifier: MIT */
/*
 * The host of the core unit tests: the simulated host of adapters/sim
 * (its clock, timers, TSC model, window and recorder; see its README.md)
 * with the settings the tests are written for, and short names for the
 * calls they make most.
 *
 * Settings. The clock starts at the test's base (0 or near 2^64) and the
 * guest TSC counts from there at the rate given to fake_host_init(); a
 * test may change sim.cfg.tsc_khz, tsc_offset and start_ns later (a guest
 * TSC that runs at a rate other than the one the library is told), or
 * replace ops.guest_tsc. The guest enters only when a test says so
 * (manual_entry: fake_enter()), the hardware timer has no range limit, and
 * the host offers no tsc_to_host_ns unless a test sets ops.tsc_to_host_ns.
 * Host timers fire exactly at their instant (no latency), the clock set to
 * it or left if it is past; the hardware timer fires only while the vCPU
 * is not blocked; spins move the clock forward only.
 *
 * Records. sim.injects, sim.deliveries, sim.spins, sim.reports count
 * accepted injections, deliveries at entry, spins and reports; inj, dlv,
 * spin_to and rep hold the first of them. rec wraps the ops table: a test
 * traces or faults any call there (rec.trace, rec.refuse) and reads
 * per-op counts (rec.calls). A budget of accepted injections is
 * rec.refuse = FAKE_OP_INJECT with rec.refuse_after past the calls so far.
 */
#ifndef LAPICT_TEST_FAKE_HOST_H
#define LAPICT_TEST_FAKE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lapict/lapict.h>

#include "lapict_sim.h"

#define FAKE_MAX_EVENTS 2048u
#define FAKE_MAX_REPORTS 64u
#define FAKE_MAX_SPINS 64u

struct fake_host {
    /* First: the ops' ctx, which a test's replacement op may take for the
     * fake host. */
    struct lapict_sim sim;
    /*
     * The table rec wraps (a per-host copy of lapict_sim_ops, so that
     * fault tests can NULL or replace single ops without touching other
     * hosts).
     */
    struct lapict_ops ops;
    /* What fake_attach() binds the instance to. */
    struct lapict_sim_wrap rec;
    /* The recorder's buffers. */
    struct lapict_sim_event inj[FAKE_MAX_EVENTS], dlv[FAKE_MAX_EVENTS];
    struct lapict_sim_report rep[FAKE_MAX_REPORTS];
    uint64_t spin_to[FAKE_MAX_SPINS];
};

/**
 * fake_host_init() - a fresh host.
 * @h: the host (fully overwritten).
 * @start_ns: initial host time (e.g. 0 or UINT64_MAX - 10^6).
 * @tsc_khz: guest TSC rate of the host (normally the config's).
 * @tsc_offset: guest TSC at @start_ns.
 * @offer_hv: whether hv_timer_arm/hv_timer_cancel are in the ops table.
 *
 * The window is open, the vCPU running, no timer armed, spin_until and
 * report present.
 */
void fake_host_init(struct fake_host *h, uint64_t start_ns, uint32_t tsc_khz,
                    uint64_t tsc_offset, bool offer_hv);

/**
 * fake_attach() - wrap @h->ops as it is now in @h->rec, bind @t to the
 * wrapper (lapict_init(@t, @cfg, &@h->rec.ops, &@h->rec)) and attach @t to
 * the host. Entries of @h->ops replaced afterwards are still called; ops
 * left out of @h->ops must be left out before.
 * Return: lapict_init()'s status.
 */
int fake_attach(struct fake_host *h, struct lapict_timer *t,
                const struct lapict_config *cfg);

/* Forget recorded events and counters (not the timers or the clock). */
void fake_clear_records(struct fake_host *h);

static inline uint64_t fake_tsc(struct fake_host *h)
{
    return lapict_sim_guest_tsc(&h->sim);
}

/* Move the clock, running host timers that come due on the way. */
static inline void fake_advance(struct fake_host *h, uint64_t delta_ns)
{
    lapict_sim_advance(&h->sim, delta_ns);
}

/* To the absolute (wrapping) instant @t_ns; at or behind now: run_due. */
static inline void fake_advance_to(struct fake_host *h, uint64_t t_ns)
{
    lapict_sim_run_until(&h->sim, t_ns);
}

/* Run the timers due now without moving the clock. */
static inline void fake_run_due(struct fake_host *h)
{
    lapict_sim_advance(&h->sim, 0);
}

/* Move the clock by @delta_ns without running any host timer (a stall the
 * test ends itself). */
static inline void fake_stall(struct fake_host *h, uint64_t delta_ns)
{
    h->sim.now_ns += delta_ns;
}

/* The software / hardware timer fires now (early or not); a spurious or
 * duplicate callback. */
static inline void fake_fire_sw(struct fake_host *h)
{
    lapict_sim_fire(&h->sim, LAPICT_SIM_TIMER_SW);
}

static inline void fake_fire_hv(struct fake_host *h)
{
    lapict_sim_fire(&h->sim, LAPICT_SIM_TIMER_HV);
}

static inline void fake_spurious_expire(struct fake_host *h)
{
    lapict_sim_fire(&h->sim, LAPICT_SIM_TIMER_NONE);
}

static inline int fake_block(struct fake_host *h)
{
    return lapict_sim_block(&h->sim);
}

static inline int fake_unblock(struct fake_host *h)
{
    return lapict_sim_unblock(&h->sim);
}

static inline int fake_window(struct fake_host *h, bool open)
{
    return lapict_sim_window(&h->sim, open);
}

/* Guest entry: lapict_before_guest_entry(), then deliveries. */
static inline int fake_enter(struct fake_host *h)
{
    return lapict_sim_enter(&h->sim);
}

/* Whether a host timer is armed, and the instant of the armed one (the
 * hardware timer's if both are, which tu_check_host() reports). */
static inline bool fake_armed(const struct fake_host *h)
{
    return h->sim.sw_armed || h->sim.hv_armed;
}

static inline uint64_t fake_armed_at(const struct fake_host *h)
{
    return h->sim.hv_armed ? h->sim.hv_at_ns : h->sim.sw_at_ns;
}

/* Signed distance b - a on the wrapping clock. */
static inline int64_t fake_diff(uint64_t a, uint64_t b)
{
    return (int64_t)(b - a);
}

/*
 * Fault injection: lapict_sim_ops_remove(&h->ops, FAKE_OP_*) makes single
 * ops NULL. The table is the host's copy (h->ops), so only that host is
 * affected; bind the instance after.
 */
#define FAKE_OP_NOW_NS LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_NOW_NS)
#define FAKE_OP_GUEST_TSC LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_GUEST_TSC)
#define FAKE_OP_SW_ARM LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_SW_ARM)
#define FAKE_OP_SW_CANCEL LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_SW_CANCEL)
#define FAKE_OP_HV_ARM LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_ARM)
#define FAKE_OP_HV_CANCEL LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_CANCEL)
#define FAKE_OP_INJECT LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_INJECT)
#define FAKE_OP_SPIN LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_SPIN)
#define FAKE_OP_REPORT LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_REPORT)
#endif /* LAPICT_TEST_FAKE_HOST_H */
