/* SPDX-License-Identifier: MIT */
/*
 * A fake host for the core unit tests: a clock that moves only when a test
 * says so, a software timer, an optional hardware preemption timer, an
 * interrupt window and recorders for every op the core calls.
 *
 * Time model. Host time wraps at 2^64; two instants are compared by their
 * signed 64-bit difference (the half-range rule lwIP uses for its timers),
 * so a timer armed for "now + 2^63 - 1" is in the future and one armed for
 * "now - 1" is due. The guest TSC counts from the moment the fake host was
 * created: tsc_offset + floor(elapsed * tsc_num_khz / 10^6), elapsed being
 * the wrapping difference now - start. tsc_num_khz is the tsc_khz given to
 * fake_host_init() unless a test changes it (a guest TSC that runs at a rate
 * other than the one the library is told), and tsc_fn overrides it all.
 *
 * Host timers. Arming replaces, cancel is idempotent. fake_advance() moves
 * the clock and, each time an armed timer's instant is reached, disarms it,
 * sets the clock to that instant (or leaves it if the instant is already
 * past) and calls lapict_expire(); it loops until nothing is due before the
 * target. The hardware timer only fires while the vCPU is not blocked
 * (fake_block()/fake_unblock() keep that flag and call the library).
 *
 * Interrupts. inject() records (host ns, guest TSC, vector) of every accepted
 * interrupt and refuses (counting) while window_open is false.
 * fake_enter() stands for guest entry: it calls lapict_before_guest_entry()
 * and then records every interrupt accepted since the previous entry as
 * delivered at the (possibly spun-forward) clock.
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

/* One interrupt: when the host took it (or the guest saw it), and what. */
struct fake_event {
    uint64_t ns;
    uint64_t tsc;
    uint8_t vector;
};

struct fake_report {
    int status;
    uint32_t detail;
};

struct fake_host {
    /*
     * The table the instance is bound to (a per-host copy, so that fault
     * tests can NULL or replace single ops without touching other hosts).
     */
    struct lapict_ops ops;
    /*
     * What fake_attach() binds the instance to: the simulated host's
     * recorder wrapped around @ops, so a test can trace or fault any call
     * (rec.trace, rec.refuse) and read per-op counts (rec.calls).
     */
    struct lapict_sim_wrap rec;
    /* The instance whose callbacks this host runs. */
    struct lapict_timer *timer;

    /* Clock. */
    uint64_t now_ns, start_ns;
    /* Guest TSC (see the header comment). */
    uint64_t tsc_offset;
    uint32_t tsc_num_khz;
    uint64_t (*tsc_fn)(struct fake_host *h);

    bool blocked, window_open;
    /* If accept_limited: inject accepts only accept_budget more times. */
    bool accept_limited;
    unsigned accept_budget;

    /* Software timer. */
    bool sw_armed;
    uint64_t sw_at;
    unsigned sw_arms, sw_cancels, sw_fires;

    /* Hardware preemption timer (ops present only if offered). */
    bool hv_offered;
    bool hv_refuse; /* refuse every arm */
    uint64_t
        hv_max_ahead_ns; /* refuse arms further ahead than this; 0 = no limit */
    bool hv_armed;
    uint64_t hv_at;
    unsigned hv_arms, hv_cancels, hv_refusals, hv_fires;

    /* Interrupts accepted by inject, and delivered by fake_enter. */
    struct fake_event inj[FAKE_MAX_EVENTS];
    unsigned ninj;         /* accepted (may exceed FAKE_MAX_EVENTS) */
    unsigned inject_calls; /* accepted + refused */
    unsigned refusals;
    struct fake_event dlv[FAKE_MAX_EVENTS];
    unsigned ndlv;

    /* spin_until. */
    unsigned spins;
    uint64_t spin_to[FAKE_MAX_SPINS];

    /* report. */
    struct fake_report rep[FAKE_MAX_REPORTS];
    unsigned nrep;

    /* lapict_expire() calls made by the fake, and the number of times
     * both host timers were armed after a library call (op calls are
     * counted by rec). */
    unsigned expire_calls;
    unsigned both_armed;
    /* fake_advance() gave up after 10^6 callbacks in one call (the library
     * kept re-arming in the past): a callback storm. Later advances then
     * only move the clock. */
    bool runaway;
};

/**
 * fake_host_init() - a fresh host.
 * @h: the host (fully overwritten).
 * @start_ns: initial host time (e.g. 0 or UINT64_MAX - 10^6).
 * @tsc_khz: guest TSC rate of the fake clock (normally the config's).
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
 * wrapper (lapict_init(@t, @cfg, &@h->rec.ops, &@h->rec)) and remember @t.
 * Entries of @h->ops replaced afterwards are still called; ops left out
 * of @h->ops must be left out before.
 * Return: lapict_init()'s status.
 */
int fake_attach(struct fake_host *h, struct lapict_timer *t,
                const struct lapict_config *cfg);

/* The guest TSC of the fake now. */
uint64_t fake_tsc(struct fake_host *h);

/**
 * fake_advance() - move the clock by @delta_ns, running host timers that
 * come due on the way (see the header comment).
 */
void fake_advance(struct fake_host *h, uint64_t delta_ns);
/* fake_advance() to the absolute (wrapping) instant @t_ns >= now. */
void fake_advance_to(struct fake_host *h, uint64_t t_ns);
/* Run the timers due now without moving the clock. */
void fake_run_due(struct fake_host *h);
/* Move the clock by @delta_ns without running any host timer (a stall). */
void fake_stall(struct fake_host *h, uint64_t delta_ns);

/* The software / hardware timer fires now (early or not): disarm + expire. */
void fake_fire_sw(struct fake_host *h);
void fake_fire_hv(struct fake_host *h);
/* A spurious or duplicate callback: lapict_expire() with nothing disarmed. */
void fake_spurious_expire(struct fake_host *h);

/* The vCPU halts / resumes: set the flag, call the library. */
int fake_block(struct fake_host *h);
int fake_unblock(struct fake_host *h);

/* Open (calling lapict_irq_window_open()) or close the interrupt window. */
int fake_window(struct fake_host *h, bool open);

/* Guest entry: lapict_before_guest_entry(), then record deliveries. */
int fake_enter(struct fake_host *h);

/* Whether a host timer is armed, and the instant of the armed one (the
 * hardware timer's if both are, which tu_check_host() reports). */
bool fake_armed(const struct fake_host *h);
uint64_t fake_armed_at(const struct fake_host *h);

/* Forget recorded events and counters (not the timers or the clock). */
void fake_clear_records(struct fake_host *h);

/* Signed distance b - a on the wrapping clock. */
static inline int64_t fake_diff(uint64_t a, uint64_t b)
{
    return (int64_t)(b - a);
}

/*
 * Fault injection: make single ops of @ops NULL. The table is the host's
 * copy (h->ops), so only that host is affected; bind the instance after.
 * The simulated host's lapict_sim_ops_remove() does it for any table.
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
static inline void fake_ops_null(struct lapict_ops *ops, unsigned which)
{
    lapict_sim_ops_remove(ops, which);
}

#endif /* LAPICT_TEST_FAKE_HOST_H */
