/* SPDX-License-Identifier: MIT */
/*
 * adapters/sim: the simulated host's answers follow the ops contract
 * (ops.h) everywhere on its clock, including after the guest TSC has made
 * a full lap of 2^64 ticks (7.4 * 10^18 ns at 2.5 GHz, well inside the
 * 2^64 ns clock).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>

#include "lapict/lapict.h"
#include "lapict_sim.h"
#include "tu_main.h"

/* Guest TSC at @ns on @s's clock. */
static uint64_t tsc_at(struct lapict_sim *s, uint64_t ns)
{
    uint64_t keep = s->now_ns, v;

    s->now_ns = ns;
    v = lapict_sim_guest_tsc(s);
    s->now_ns = keep;
    return v;
}

/*
 * tsc_to_host_ns(D) is the first instant from now on at which the TSC
 * reaches D: at that instant it has, one ns before it had not. Checked at
 * clocks before and after the TSC's laps, for deadlines 1 tick to 2^40
 * ticks ahead.
 */
static void tsc_to_host_ns_first_instant_in_every_lap(void **state)
{
    static const uint32_t khz[] = {2500000u, 2100000u, 1000000u, 999999u};
    static const uint64_t off[] = {0, 1ull << 63, 0xFFFFFFFF00000000ull};
    static const uint64_t ahead[] = {1, 2, 3, 1000, 1ull << 20, 1ull << 40};
    unsigned i, j, k, lap, laps = 0;
    (void)state;

    for (i = 0; i < sizeof(khz) / sizeof(khz[0]); i++) {
        for (j = 0; j < sizeof(off) / sizeof(off[0]); j++) {
            struct lapict_sim_config c;
            struct lapict_sim s;
            /* One lap of the TSC in ns (about; 2^64 and more at <= 1 GHz). */
            unsigned __int128 lap_ns =
                ((unsigned __int128)1 << 64) * 1000000u / khz[i];

            lapict_sim_config_default(&c);
            c.tsc_khz = khz[i];
            c.tsc_offset = off[j];
            lapict_sim_init(&s, &c, NULL, NULL);
            for (lap = 0; lap < 3; lap++) {
                /* Early in the lap, just before its end, and past it. */
                const uint64_t base[] = {
                    (uint64_t)(lap * lap_ns + 12345),
                    (uint64_t)((lap + 1) * lap_ns - 777),
                    (uint64_t)((lap + 1) * lap_ns + 58000000u)};
                /* The clock (2^64 ns) holds fewer laps at <= 1 GHz: its
                 * own wrap is the end of the first. */
                if (lap > 0 && (unsigned __int128)(lap + 1) * lap_ns +
                                       58000000u + (1ull << 40) >=
                                   (unsigned __int128)1 << 64)
                    break;
                for (k = 0; k < 3 * 6; k++) {
                    uint64_t d, at;

                    s.now_ns = base[k / 6];
                    d = lapict_sim_guest_tsc(&s) + ahead[k % 6];
                    at = lapict_sim_ops.tsc_to_host_ns(&s, d);
                    /* Ahead on the wrapping clock (ops.h's rule). */
                    assert_true((int64_t)(at - s.now_ns) > 0);
                    assert_true(at - s.now_ns <
                                ahead[k % 6] * 1000000u / khz[i] + 2);
                    /* Reached at @at (within a ns of ticks), short of
                     * it one ns before, modulo the TSC's 2^64. */
                    assert_true(tsc_at(&s, at) - d <= khz[i] / 1000000u);
                    assert_true(d - tsc_at(&s, at - 1) - 1 <=
                                khz[i] / 1000000u);
                }
                laps += lap > 0;
            }
        }
    }
    /* Clocks past a full lap were checked (2.5 and 2.1 GHz). */
    assert_true(laps >= 2 * 3);
}

static unsigned delivered;
static uint64_t delivered_at;

static void on_deliver(void *arg, uint64_t now, uint8_t vector)
{
    (void)arg;
    (void)vector;
    delivered++;
    delivered_at = now;
}

/*
 * End to end with the core: after a lap of the TSC a deadline fires at the
 * instant the TSC reaches it, not a ns later (the core falls back to its
 * own estimate when the host's answer lies in the past; found by fuzz_regs,
 * tests/fuzz/regressions/regs/deadline-after-tsc-lap-sim-answer-past).
 */
static void deadline_after_a_tsc_lap_fires_at_its_instant(void **state)
{
    struct lapict_sim_config c;
    struct lapict_config cfg;
    struct lapict_sim s;
    struct lapict_timer t;
    uint64_t now, d, at;
    (void)state;

    lapict_sim_config_default(&c);
    c.tsc_khz = 2500000u;
    c.tsc_offset = 1ull << 63;
    lapict_sim_init(&s, &c, on_deliver, NULL);
    lapict_config_default(&cfg);
    cfg.tsc_khz = c.tsc_khz;
    cfg.tsc_deadline = true;
    cfg.advance_mode = LAPICT_ADVANCE_OFF;
    assert_int_equal(lapict_init(&t, &cfg, &lapict_sim_ops, &s), LAPICT_OK);
    lapict_sim_attach(&s, &t);
    /* The instant of the fuzz input: 2^63 ns and a bit, 1.25 TSC laps. */
    s.now_ns = 9223876161375361849ull;
    assert_int_equal(lapict_lvtt_write(&t, 0x4002Eu), LAPICT_OK);
    at = 9223876161880198764ull;
    d = tsc_at(&s, at);
    assert_true(tsc_at(&s, at - 1) < d);
    assert_int_equal(lapict_tsc_deadline_write(&t, d), LAPICT_OK);
    delivered = 0;
    lapict_sim_run_until(&s, at - 1);
    assert_int_equal(delivered, 0);
    lapict_sim_run_until(&s, at);
    assert_int_equal(delivered, 1);
    assert_int_equal(delivered_at, at);
    now = s.now_ns;
    lapict_sim_run_until(&s, now + 1000000000u);
    assert_int_equal(delivered, 1);
}

/* An instance that re-arms its software timer for the current instant,
 * whatever it asked for: never due later, so the clock never moves. */
static void arm_now(void *ctx, uint64_t host_ns)
{
    struct lapict_sim *s = ctx;

    (void)host_ns;
    lapict_sim_ops.sw_timer_arm(ctx, s->now_ns);
}

/*
 * Rule: run_until() runs every callback a run needs, and stops only on a
 * livelock (LAPICT_SIM_STUCK callbacks in a row at one instant), which it
 * reports; a callback that moves the clock starts the count again.
 */
static void run_until_stops_only_on_a_livelock(void **state)
{
    struct lapict_ops ops = lapict_sim_ops;
    struct lapict_config cfg;
    struct lapict_sim s;
    struct lapict_timer t;
    (void)state;

    ops.sw_timer_arm = arm_now;
    lapict_sim_init(&s, NULL, NULL, NULL);
    lapict_config_default(&cfg);
    cfg.tsc_khz = s.cfg.tsc_khz;
    assert_int_equal(lapict_init(&t, &cfg, &ops, &s), LAPICT_OK);
    lapict_sim_attach(&s, &t);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, 0xEF), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1000000u), LAPICT_OK);
    assert_false(lapict_sim_run_until(&s, 5000000u));
    assert_int_equal(s.now_ns, 0);
    assert_int_equal(s.expire_calls, LAPICT_SIM_STUCK);
    assert_false(lapict_sim_stall(&s, 10));
    assert_int_equal(s.now_ns, 10);

    /* A periodic 1 ns timer on the plain host: a callback every ns, many
     * more than LAPICT_SIM_STUCK, each at its own instant. */
    lapict_sim_init(&s, NULL, NULL, NULL);
    cfg.min_period_ns = 0;
    assert_int_equal(lapict_init(&t, &cfg, &lapict_sim_ops, &s), LAPICT_OK);
    lapict_sim_attach(&s, &t);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, 0x200EF), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1), LAPICT_OK);
    assert_true(lapict_sim_run_until(&s, 10u * LAPICT_SIM_STUCK));
    assert_int_equal(s.now_ns, 10u * LAPICT_SIM_STUCK);
    assert_int_equal(s.expire_calls, 10u * LAPICT_SIM_STUCK);
}

struct trace_log {
    unsigned n;
    enum lapict_sim_op op[64];
    uint64_t arg[64];
};

static void log_op(void *arg, enum lapict_sim_op op, uint64_t a)
{
    struct trace_log *l = arg;
    if (l->n < 64) {
        l->op[l->n] = op;
        l->arg[l->n] = a;
    }
    l->n++;
}

/*
 * Rule: the wrapper passes every call on unchanged, counts and traces it,
 * leaves out the ops it is told a host lacks, and answers a refused op as
 * a fault without reaching the wrapped host (then, after refuse_after
 * calls, only those beyond).
 */
static void wrap_records_faults_and_passes_on(void **state)
{
    struct lapict_config cfg;
    struct lapict_sim s;
    struct lapict_sim_wrap w;
    struct lapict_timer t;
    struct trace_log log = {0};
    unsigned i, sw_arms = 0;
    (void)state;

    lapict_sim_init(&s, NULL, NULL, NULL);
    lapict_sim_wrap_init(&w, &lapict_sim_ops, &s,
                         LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_SPIN));
    assert_null(w.ops.spin_until);
    assert_non_null(w.ops.inject);
    w.trace = log_op;
    w.trace_arg = &log;
    w.refuse = LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_INJECT);
    lapict_config_default(&cfg);
    cfg.tsc_khz = s.cfg.tsc_khz;
    assert_int_equal(lapict_init(&t, &cfg, &w.ops, &w), LAPICT_OK);
    lapict_sim_attach(&s, &t);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, 0xEF), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1000u), LAPICT_OK);
    assert_true(s.sw_armed || s.hv_armed);
    for (i = 0; i < log.n && i < 64; i++)
        if (log.op[i] == LAPICT_SIM_OP_SW_ARM) {
            sw_arms++;
            assert_int_equal(log.arg[i], s.sw_fire_ns);
        }
    assert_int_equal(sw_arms, w.calls[LAPICT_SIM_OP_SW_ARM]);
    assert_int_equal(sw_arms, s.sw_arms);
    assert_true(lapict_sim_run_until(&s, 1000000000u));
    /* The refused inject never reached the host. */
    assert_true(w.calls[LAPICT_SIM_OP_INJECT] >= 1);
    assert_int_equal(s.injects, 0);
    assert_int_equal(w.total_calls, log.n);
    /* Let it through: the pending interrupt goes in at the window. */
    w.refuse_after = w.calls[LAPICT_SIM_OP_INJECT] + 1;
    lapict_sim_window(&s, true);
    assert_int_equal(s.injects, 1);
    assert_int_equal(w.calls[LAPICT_SIM_OP_SPIN], 0);
}

#define NEAR_WRAP (UINT64_MAX - 1000000u)

/*
 * Rule: the guest TSC counts from the start instant, on the wrapping
 * difference, and tsc_to_host_ns() stays the first instant at which the
 * TSC reaches a value, also across the 2^64 clock wrap.
 */
static void tsc_counts_from_the_start_across_the_clock_wrap(void **state)
{
    static const uint32_t khz[] = {2500000u, 1000000u, 999999u, 500000u};
    static const uint64_t ahead[] = {1, 2, 3, 999, 1000001, 3000000};
    unsigned i, k;
    (void)state;

    for (i = 0; i < sizeof(khz) / sizeof(khz[0]); i++) {
        struct lapict_sim_config c;
        struct lapict_sim s;

        lapict_sim_config_default(&c);
        c.tsc_khz = khz[i];
        c.tsc_offset = UINT64_MAX - 5;
        c.start_ns = NEAR_WRAP;
        lapict_sim_init(&s, &c, NULL, NULL);
        assert_int_equal(s.now_ns, NEAR_WRAP);
        assert_int_equal(lapict_sim_guest_tsc(&s), c.tsc_offset);
        assert_int_equal(tsc_at(&s, NEAR_WRAP + 2000000u),
                         c.tsc_offset + 2000000ull * khz[i] / 1000000u);
        for (k = 0; k < 2 * 6; k++) {
            uint64_t d, at;

            s.now_ns = NEAR_WRAP + (k < 6 ? 17 : 999990);
            d = lapict_sim_guest_tsc(&s) + ahead[k % 6];
            at = lapict_sim_ops.tsc_to_host_ns(&s, d);
            assert_true((int64_t)(at - s.now_ns) > 0);
            assert_true(tsc_at(&s, at) - d <= khz[i] / 1000000u);
            assert_true(d - tsc_at(&s, at - 1) - 1 <= khz[i] / 1000000u);
        }
    }
}

struct rec_host {
    struct lapict_sim s;
    struct lapict_timer t;
    struct lapict_sim_event inj[2], dlv[2];
    struct lapict_sim_report rep[1];
    uint64_t spin_to[1];
};

static void rec_host_init(struct rec_host *h, uint64_t start, bool manual,
                          bool hv)
{
    struct lapict_sim_config c;
    struct lapict_config cfg;

    lapict_sim_config_default(&c);
    c.start_ns = start;
    c.manual_entry = manual;
    c.hv_timer = hv;
    lapict_sim_init(&h->s, &c, NULL, NULL);
    h->s.log.inj = h->inj;
    h->s.log.inj_cap = 2;
    h->s.log.dlv = h->dlv;
    h->s.log.dlv_cap = 2;
    h->s.log.rep = h->rep;
    h->s.log.rep_cap = 1;
    h->s.log.spin_to = h->spin_to;
    h->s.log.spin_cap = 1;
    lapict_config_default(&cfg);
    cfg.tsc_khz = c.tsc_khz;
    cfg.min_period_ns = 0;
    assert_int_equal(lapict_init(&h->t, &cfg, &lapict_sim_ops, &h->s),
                     LAPICT_OK);
    lapict_sim_attach(&h->s, &h->t);
    assert_int_equal(lapict_tdcr_write(&h->t, 0xB), LAPICT_OK);
}

/*
 * Rule: timers fire exactly at their instant across the clock wrap, each
 * counted per timer; the recorder keeps the first events up to its
 * capacity and the counts go on; with manual_entry nothing is delivered
 * until the driver enters the guest.
 */
static void timers_fire_on_time_across_the_wrap_and_are_recorded(void **state)
{
    unsigned manual;
    (void)state;

    for (manual = 0; manual < 2; manual++) {
        struct rec_host h;
        uint64_t cancels;

        rec_host_init(&h, NEAR_WRAP, manual, false);
        assert_int_equal(lapict_lvtt_write(&h.t, LAPICT_LVTT_PERIODIC | 0xEF),
                         LAPICT_OK);
        assert_int_equal(lapict_tmict_write(&h.t, 400000u), LAPICT_OK);
        assert_true(h.s.sw_armed);
        assert_int_equal(h.s.sw_at_ns, NEAR_WRAP + 400000u);
        /* Three periods, the third past the wrap of the clock. */
        assert_true(lapict_sim_run_until(&h.s, NEAR_WRAP + 1200000u));
        assert_int_equal(h.s.now_ns, NEAR_WRAP + 1200000u);
        assert_int_equal(h.s.sw_fires, 3);
        assert_int_equal(h.s.expire_calls, 3);
        assert_int_equal(h.s.hv_refusals, h.s.hv_arms); /* none offered */
        assert_int_equal(h.s.hv_fires, 0);
        assert_int_equal(h.s.injects, 3);
        assert_int_equal(h.inj[0].host_ns, NEAR_WRAP + 400000u);
        assert_int_equal(h.inj[0].guest_tsc, 400000u);
        assert_int_equal(h.inj[1].host_ns, NEAR_WRAP + 800000u);
        assert_int_equal(h.inj[1].vector, 0xEF);
        assert_int_equal(h.s.deliveries, manual ? 0 : 3);
        assert_int_equal(lapict_sim_enter(&h.s), LAPICT_OK);
        assert_int_equal(h.s.deliveries, 3);
        assert_int_equal(h.dlv[1].host_ns,
                         manual ? NEAR_WRAP + 1200000u : NEAR_WRAP + 800000u);
        cancels = h.s.sw_cancels;
        assert_int_equal(lapict_tmict_write(&h.t, 0), LAPICT_OK);
        assert_false(h.s.sw_armed);
        assert_int_equal(h.s.sw_cancels, cancels + 1);
        assert_int_equal(h.s.both_armed + h.s.livelocks, 0);
        /* A spin moves the clock forward only, and is recorded. */
        lapict_sim_ops.spin_until(&h.s, h.s.now_ns - 1);
        lapict_sim_ops.spin_until(&h.s, h.s.now_ns + 5);
        assert_int_equal(h.s.now_ns, NEAR_WRAP + 1200005u);
        assert_int_equal(h.s.spins, 2);
        assert_int_equal(h.spin_to[0], NEAR_WRAP + 1199999u);
        lapict_sim_ops.report(&h.s, -3, 7);
        lapict_sim_ops.report(&h.s, -4, 8);
        assert_int_equal(h.s.reports, 2);
        assert_int_equal(h.rep[0].status, -3);
        assert_int_equal(h.rep[0].detail, 7);
    }
}

/*
 * Rule: the hardware timer refuses arms beyond hv_max_ahead_ns, or all
 * when not offered, or beyond its count (also 2^64 TSC ticks and more
 * ahead), and a refused arm leaves nothing armed (arming replaces); it
 * fires only while the vCPU runs. lapict_sim_fire() runs a callback
 * early, disarming the timer it names.
 */
static void hv_timer_faults_and_early_callbacks(void **state)
{
    struct rec_host h;
    uint32_t khz;
    (void)state;

    rec_host_init(&h, 0, true, true);
    assert_true(lapict_sim_ops.hv_timer_arm(&h.s, 500));
    assert_true(h.s.hv_armed);
    h.s.cfg.hv_max_ahead_ns = 1000;
    assert_false(lapict_sim_ops.hv_timer_arm(&h.s, 1001));
    assert_false(h.s.hv_armed);
    assert_true(lapict_sim_ops.hv_timer_arm(&h.s, 1000));
    h.s.cfg.hv_timer = false;
    assert_false(lapict_sim_ops.hv_timer_arm(&h.s, 10));
    assert_false(h.s.hv_armed);
    assert_int_equal(h.s.hv_arms, 4);
    assert_int_equal(h.s.hv_refusals, 2);
    h.s.cfg.hv_timer = true;
    /* 2^62 ns at 100 GHz: 25 * 2^64 ticks, beyond any count. */
    h.s.cfg.hv_max_ahead_ns = 0;
    khz = h.s.cfg.tsc_khz;
    h.s.cfg.tsc_khz = LAPICT_TSC_KHZ_MAX;
    assert_false(lapict_sim_ops.hv_timer_arm(&h.s, h.s.now_ns + (1ull << 62)));
    assert_false(h.s.hv_armed);
    h.s.cfg.tsc_khz = khz;
    assert_int_equal(h.s.hv_refusals, 3);
    assert_true(lapict_sim_ops.hv_timer_arm(&h.s, 10));
    h.s.blocked = true;
    assert_true(lapict_sim_run_until(&h.s, 20));
    assert_int_equal(h.s.hv_fires, 0);
    h.s.blocked = false;
    assert_true(lapict_sim_advance(&h.s, 0));
    assert_int_equal(h.s.hv_fires, 1);
    assert_int_equal(h.s.now_ns, 20);
    lapict_sim_ops.sw_timer_arm(&h.s, 1000);
    assert_int_equal(lapict_sim_fire(&h.s, LAPICT_SIM_TIMER_SW), LAPICT_OK);
    assert_false(h.s.sw_armed);
    assert_int_equal(lapict_sim_fire(&h.s, LAPICT_SIM_TIMER_NONE), LAPICT_OK);
    assert_int_equal(h.s.sw_fires, 1);
    assert_int_equal(h.s.expire_calls, 3);
}

/* The simulated host's own count of calls of @op (0: it keeps none). */
static uint64_t host_count(const struct lapict_sim *s, enum lapict_sim_op op)
{
    switch (op) {
    case LAPICT_SIM_OP_SW_ARM:
        return s->sw_arms;
    case LAPICT_SIM_OP_HV_ARM:
        return s->hv_arms;
    case LAPICT_SIM_OP_INJECT:
        return s->injects + s->refusals;
    case LAPICT_SIM_OP_SPIN:
        return s->spins;
    case LAPICT_SIM_OP_REPORT:
        return s->reports;
    default:
        return 0;
    }
}

/* Each trace paired with its after call, the host checked in between. */
struct pair_log {
    struct lapict_sim *s;
    struct lapict_sim_wrap *w;
    bool open;
    enum lapict_sim_op op;
    uint64_t arg, count;
    uint64_t afters, seen[LAPICT_SIM_NOPS];
    unsigned host_refused, wrap_refused, accepted, hv_refused;
};

static void pair_trace(void *arg, enum lapict_sim_op op, uint64_t a)
{
    struct pair_log *l = arg;

    assert_false(l->open); /* ops never nest */
    l->open = true;
    l->op = op;
    l->arg = a;
    l->count = host_count(l->s, op);
}

static void pair_after(void *arg, enum lapict_sim_op op, uint64_t a,
                       uint64_t answer)
{
    struct pair_log *l = arg;
    struct lapict_sim *s = l->s;
    /* enter() has counted this call already. */
    bool refused = (l->w->refuse & LAPICT_SIM_OP_BIT(op)) &&
                   l->w->calls[op] - 1 >= l->w->refuse_after;
    bool counted = op == LAPICT_SIM_OP_SW_ARM || op == LAPICT_SIM_OP_HV_ARM ||
                   op == LAPICT_SIM_OP_INJECT || op == LAPICT_SIM_OP_SPIN ||
                   op == LAPICT_SIM_OP_REPORT;

    assert_true(l->open);
    l->open = false;
    assert_int_equal(op, l->op);
    assert_int_equal(a, l->arg);
    l->afters++;
    l->seen[op]++;
    if (counted)
        assert_int_equal(host_count(s, op), l->count + !refused);
    if (refused) {
        assert_int_equal(answer, 0);
        l->wrap_refused += op == LAPICT_SIM_OP_INJECT;
        return;
    }
    switch (op) {
    case LAPICT_SIM_OP_NOW_NS:
        assert_int_equal(answer, s->now_ns);
        break;
    case LAPICT_SIM_OP_GUEST_TSC:
        assert_int_equal(answer, lapict_sim_guest_tsc(s));
        break;
    case LAPICT_SIM_OP_TSC_TO_NS:
        assert_int_equal(answer, lapict_sim_ops.tsc_to_host_ns(s, a));
        break;
    case LAPICT_SIM_OP_SW_ARM:
        assert_int_equal(answer, 0);
        assert_true(s->sw_armed);
        break;
    case LAPICT_SIM_OP_SW_CANCEL:
        assert_int_equal(answer, 0);
        assert_false(s->sw_armed);
        break;
    case LAPICT_SIM_OP_HV_CANCEL:
        assert_int_equal(answer, 0);
        assert_false(s->hv_armed);
        break;
    case LAPICT_SIM_OP_HV_ARM:
        assert_int_equal(answer, s->hv_armed && s->hv_at_ns == a);
        l->hv_refused += !answer;
        break;
    case LAPICT_SIM_OP_INJECT:
        /* Accepted: queued for the next entry; else the window is shut. */
        assert_int_equal(answer, s->window_open);
        if (answer)
            assert_int_equal(s->queued[s->nqueued - 1], a);
        l->accepted += answer != 0;
        l->host_refused += !answer;
        break;
    case LAPICT_SIM_OP_SPIN:
        assert_int_equal(answer, 0);
        assert_true(s->now_ns >= a);
        break;
    default:
        assert_int_equal(answer, 0);
        break;
    }
}

/*
 * Rule: the after callback follows each traced call once the wrapped host
 * has acted, with the answer the instance gets: the host's own (its clock,
 * the guest TSC, a timer armed or refused, a vector queued or refused), or
 * 0 for a call the wrapper refused, which the host never saw.
 */
static void wrap_after_sees_the_host_as_the_call_left_it(void **state)
{
    struct lapict_sim_config c;
    struct lapict_config cfg;
    struct lapict_sim s;
    struct lapict_sim_wrap w;
    struct lapict_timer t;
    struct pair_log log = {0};
    unsigned op;
    (void)state;

    lapict_sim_config_default(&c);
    c.hv_timer = true;
    c.hv_max = 1000; /* 32 us: a far expiry falls back to the sw timer */
    lapict_sim_init(&s, &c, NULL, NULL);
    lapict_sim_wrap_init(&w, &lapict_sim_ops, &s, 0);
    log.s = &s;
    log.w = &w;
    w.trace = pair_trace;
    w.trace_arg = &log;
    w.after = pair_after;
    w.after_arg = &log;
    lapict_config_default(&cfg);
    cfg.tsc_khz = c.tsc_khz;
    cfg.tsc_deadline = true;
    cfg.advance_mode = LAPICT_ADVANCE_FIXED;
    cfg.advance_ns = 100;
    assert_int_equal(lapict_init(&t, &cfg, &w.ops, &w), LAPICT_OK);
    lapict_sim_attach(&s, &t);

    /* Periodic, near: the hardware timer, an early inject and a spin. */
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, 0x200EF), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 10000u), LAPICT_OK);
    assert_true(lapict_sim_run_until(&s, 100000u));
    /* Far: refused by the hardware timer, armed on the software one. */
    assert_int_equal(lapict_tmict_write(&t, 1000000000u), LAPICT_OK);
    lapict_sim_enter(&s);
    /* The host's window shut, then the wrapper refusing every inject. */
    lapict_sim_window(&s, false);
    assert_true(lapict_sim_run_until(&s, 1100000000u));
    lapict_sim_window(&s, true);
    w.refuse = LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_INJECT);
    assert_true(lapict_sim_run_until(&s, 2100000000u));
    w.refuse = 0;
    /* A TSC deadline (tsc_to_host_ns), then an illegal vector (report). */
    assert_int_equal(lapict_lvtt_write(&t, 0x400EF), LAPICT_OK);
    assert_int_equal(
        lapict_tsc_deadline_write(&t, lapict_sim_guest_tsc(&s) + 5000u),
        LAPICT_OK);
    assert_true(lapict_sim_run_until(&s, s.now_ns + 10000u));
    assert_int_equal(lapict_lvtt_write(&t, 0x5u), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 10u), LAPICT_OK);
    assert_true(lapict_sim_run_until(&s, s.now_ns + 10000u));
    lapict_sim_enter(&s);

    assert_false(log.open);
    assert_int_equal(log.afters, w.total_calls);
    for (op = 0; op < LAPICT_SIM_NOPS; op++)
        assert_int_equal(log.seen[op], w.calls[op]);
    /* Every kind of answer was seen. */
    assert_true(log.seen[LAPICT_SIM_OP_SW_ARM] > 0);
    assert_true(log.seen[LAPICT_SIM_OP_SPIN] > 0);
    assert_true(log.seen[LAPICT_SIM_OP_TSC_TO_NS] > 0);
    assert_true(log.seen[LAPICT_SIM_OP_REPORT] > 0);
    assert_true(log.seen[LAPICT_SIM_OP_HV_ARM] > log.hv_refused);
    assert_true(log.hv_refused > 0);
    assert_true(log.accepted > 0);
    assert_true(log.host_refused > 0);
    assert_true(log.wrap_refused > 0);
}

TU_MAIN(cmocka_unit_test(tsc_to_host_ns_first_instant_in_every_lap),
        cmocka_unit_test(deadline_after_a_tsc_lap_fires_at_its_instant),
        cmocka_unit_test(run_until_stops_only_on_a_livelock),
        cmocka_unit_test(wrap_records_faults_and_passes_on),
        cmocka_unit_test(tsc_counts_from_the_start_across_the_clock_wrap),
        cmocka_unit_test(timers_fire_on_time_across_the_wrap_and_are_recorded),
        cmocka_unit_test(hv_timer_faults_and_early_callbacks),
        cmocka_unit_test(wrap_after_sees_the_host_as_the_call_left_it))
