/* SPDX-License-Identifier: MIT */
/*
 * Differential property tests (docs/spec/timer.md sections 7 and 8): two
 * simulated hosts run the same random guest program, seeded and deterministic,
 * and must show the guest exactly the same deliveries (time, vector) and
 * register reads, step by step.
 *
 * - save/restore: one side is saved and restored into a fresh instance at
 *   random points ("Save then restore at the same instant changes nothing
 *   observable"; a pending interrupt is delivered exactly once);
 * - hw<->sw: one side's host offers a hardware preemption timer (which it
 *   sometimes refuses: small range) and the vCPU blocks and unblocks at
 *   random, the other side has no hardware timer at all ("No expiry is
 *   lost or doubled by any sequence of these calls").
 *
 * Configurations vary per seed (bus clock, TSC rate, minimum period,
 * missed-tick policy, advance, host and entry latencies), periods shorter
 * than the advance included.
 *
 * The core has no fast path beside its canonical ones (the expiry, the
 * host timer arm, the TMICT and deadline writes and the divisions each
 * exist once), so both sides run the same code for every rule: what they
 * compare is the host-facing difference named above.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

#include "lapict_sim.h"

#define DF_SEEDS 40
#define DF_STEPS 2000
#define DF_MAX_EV 8192

struct df_event {
    uint64_t when;
    uint64_t value;
    uint8_t kind; /* 1 delivery (value = vector), 2 read (value = register) */
    uint8_t reg;
};

struct df_side {
    struct lapict_sim sim;
    /* The host as the instances see it: sim, less the ops it lacks. */
    struct lapict_sim_wrap wrap;
    struct lapict_config cfg;
    struct lapict_timer timers[2];
    struct lapict_timer *t;
    struct df_event ev[DF_MAX_EV];
    unsigned nev;
    unsigned restores;
};

static uint64_t df_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t df_below(uint64_t *s, uint64_t n)
{
    return df_next(s) % n;
}

static void df_record(struct df_side *d, uint8_t kind, uint8_t reg,
                      uint64_t when, uint64_t value)
{
    if (d->nev < DF_MAX_EV) {
        d->ev[d->nev].when = when;
        d->ev[d->nev].value = value;
        d->ev[d->nev].kind = kind;
        d->ev[d->nev].reg = reg;
    }
    d->nev++;
}

static void df_on_deliver(void *arg, uint64_t when, uint8_t vector)
{
    df_record(arg, 1, 0, when, vector);
}

static void df_init(struct df_side *d, const struct lapict_config *cfg,
                    const struct lapict_sim_config *sc, bool hv_ops)
{
    /* Without hv_ops, a host that has no hardware timer at all. */
    uint32_t absent = hv_ops ? 0
                             : LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_ARM) |
                                   LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_CANCEL);

    memset(d, 0, sizeof(*d));
    d->cfg = *cfg;
    lapict_sim_init(&d->sim, sc, df_on_deliver, d);
    lapict_sim_wrap_init(&d->wrap, &lapict_sim_ops, &d->sim, absent);
    d->t = &d->timers[0];
    assert_int_equal(lapict_init(d->t, cfg, &d->wrap.ops, &d->wrap), LAPICT_OK);
    lapict_sim_attach(&d->sim, d->t);
}

/* Migration: save, and restore into a fresh instance on the same host. */
static void df_save_restore(struct df_side *d)
{
    uint8_t blob[LAPICT_STATE_SIZE];
    struct lapict_timer *n =
        d->t == &d->timers[0] ? &d->timers[1] : &d->timers[0];

    assert_int_equal(lapict_state_save(d->t, blob, sizeof(blob)), LAPICT_OK);
    lapict_sim_enter(&d->sim);
    lapict_sim_drop_timers(&d->sim);
    assert_int_equal(lapict_init(n, &d->cfg, &d->wrap.ops, &d->wrap),
                     LAPICT_OK);
    if (d->sim.blocked)
        assert_int_equal(lapict_vcpu_blocking(n), LAPICT_OK);
    lapict_sim_attach(&d->sim, n);
    assert_int_equal(lapict_state_restore(n, blob, sizeof(blob)), LAPICT_OK);
    /* state.h: after a restore, offer pending interrupts once the window
     * is open (the simulated host calls it itself when a window opens). */
    if (d->sim.window_open)
        assert_int_equal(lapict_irq_window_open(n), LAPICT_OK);
    d->t = n;
    d->restores++;
    lapict_sim_enter(&d->sim);
}

/* One random guest/host action, the same on every side. */
struct df_op {
    unsigned kind;
    uint64_t a, b;
};

static struct df_op df_pick(uint64_t *s, bool block_ops)
{
    struct df_op op;
    uint64_t r = df_below(s, 100);

    op.a = df_next(s);
    op.b = df_next(s);
    /*
     * Kinds by cumulative percent: LVTT, TMICT, TDCR, TSC deadline, SVR,
     * read, time, stall, window, reset, spurious callback; the rest
     * block/unblock (11), or time where block_ops is off.
     */
    static const uint8_t upto[11] = {10, 20, 25, 32, 34, 46,
                                     80, 83, 90, 91, 93};
    op.kind = 0;
    while (op.kind < 11 && r >= upto[op.kind])
        op.kind++;
    if (op.kind == 11 && !block_ops)
        op.kind = 6;
    return op;
}

static uint32_t df_lvtt(uint64_t a)
{
    uint32_t vec = 16u + (uint32_t)(a % 240u), v;
    if ((a >> 8) % 16 == 0)
        vec = (uint32_t)(a >> 12) & 0xFu; /* illegal vector */
    v = vec | (uint32_t)((a >> 16) & 3) << 17;
    if ((a >> 20) % 5 == 0)
        v |= LAPICT_LVTT_MASK;
    return v;
}

static uint32_t df_count(uint64_t a)
{
    static const uint32_t mods[3] = {64u, 4096u, 1000000u};
    uint32_t v = (uint32_t)(a >> 8);
    return a % 4 == 3 ? v : v % mods[a % 4];
}

static uint64_t df_delta(uint64_t a)
{
    static const uint64_t mods[4] = {1000u, 100000u, 10000000u, 100000000u};
    return (a >> 8) % mods[a % 4];
}

/* DF_TRACE=<seed>: print that seed's program in lapict-replay syntax. */
static unsigned df_trace_seed;

static void df_trace(const struct df_side *d, const struct df_op *op)
{
    static const char *regs[] = {"lvtt", "tdcr", "tmict", "tmcct",
                                 "tsc_deadline"};
    const struct lapict_sim *s = &d->sim;
    switch (op->kind) {
    case 0:
        printf("write lvtt 0x%x\n", df_lvtt(op->a));
        break;
    case 1:
        printf("write tmict %u\n", df_count(op->a));
        break;
    case 2:
        printf("write tdcr 0x%x\n", (uint32_t)op->a & 0xB);
        break;
    case 3:
        printf("write tsc_deadline %llu\n",
               op->a % 8 == 0 ? 0ull
                              : (unsigned long long)(lapict_sim_guest_tsc(s) +
                                                     df_delta(op->b) - 500u));
        break;
    case 4:
        printf("write svr %d\n", op->a % 4 != 0 ? 0x100 : 0);
        break;
    case 5:
        printf("read %s\n", regs[op->a % 5]);
        break;
    case 6:
        printf("at %llu\n", (unsigned long long)(s->now_ns + df_delta(op->a)));
        break;
    case 7:
        printf("stall %llu\n", (unsigned long long)df_delta(op->a));
        break;
    case 8:
        printf("window %d\n", op->a % 3 != 0);
        break;
    case 9:
        printf("reset\n");
        break;
    case 10:
        printf("# spurious lapict_expire()\n");
        break;
    default:
        printf("%s\n", op->a % 2 ? "block" : "unblock");
        break;
    }
}

static void df_apply(struct df_side *d, const struct df_op *op)
{
    /* Reads 0-3 (and 4, the TSC deadline), as df_trace() names them. */
    static uint32_t (*const reads[4])(struct lapict_timer *) = {
        lapict_lvtt_read, lapict_tdcr_read, lapict_tmict_read,
        lapict_tmcct_read};
    struct lapict_timer *t = d->t;
    struct lapict_sim *s = &d->sim;
    uint64_t v = 0;

    switch (op->kind) {
    case 0:
        lapict_lvtt_write(t, df_lvtt(op->a));
        break;
    case 1:
        lapict_tmict_write(t, df_count(op->a));
        break;
    case 2:
        lapict_tdcr_write(t, (uint32_t)op->a);
        break;
    case 3:
        lapict_tsc_deadline_write(t, op->a % 8 == 0
                                         ? 0
                                         : lapict_sim_guest_tsc(s) +
                                               df_delta(op->b) - 500u);
        break;
    case 4:
        lapict_svr_write(t, op->a % 4 != 0);
        break;
    case 5:
        v = op->a % 5 < 4 ? reads[op->a % 5](t) : lapict_tsc_deadline_read(t);
        lapict_sim_enter(s);
        df_record(d, 2, (uint8_t)(op->a % 5), s->now_ns, v);
        return;
    case 6:
        lapict_sim_run_until(s, s->now_ns + df_delta(op->a));
        return;
    case 7:
        lapict_sim_stall(s, df_delta(op->a));
        return;
    case 8:
        lapict_sim_window(s, op->a % 3 != 0);
        return;
    case 9:
        lapict_reset(t);
        break;
    case 10:
        lapict_expire(t);
        break;
    default:
        if (op->a % 2)
            lapict_sim_block(s);
        else
            lapict_sim_unblock(s);
        return;
    }
    lapict_sim_enter(s);
}

static void df_compare(struct df_side *x, struct df_side *y, unsigned seed,
                       unsigned step)
{
    unsigned i, n;

    if (x->nev != y->nev || x->sim.now_ns != y->sim.now_ns)
        fail_msg("seed %u step %u: %u vs %u events, clocks %llu vs %llu", seed,
                 step, x->nev, y->nev, (unsigned long long)x->sim.now_ns,
                 (unsigned long long)y->sim.now_ns);
    n = x->nev < DF_MAX_EV ? x->nev : DF_MAX_EV;
    for (i = 0; i < n; i++) {
        const struct df_event *a = &x->ev[i], *b = &y->ev[i];
        if (a->when != b->when || a->value != b->value || a->kind != b->kind ||
            a->reg != b->reg)
            fail_msg("seed %u step %u event %u: %s %u at %llu = %llu vs "
                     "%s %u at %llu = %llu",
                     seed, step, i, a->kind == 1 ? "delivery" : "read", a->reg,
                     (unsigned long long)a->when, (unsigned long long)a->value,
                     b->kind == 1 ? "delivery" : "read", b->reg,
                     (unsigned long long)b->when, (unsigned long long)b->value);
    }
    x->nev = y->nev = 0;
}

/* A configuration from the seed; both sides share it. */
static void df_config(uint64_t *s, struct lapict_config *c,
                      struct lapict_sim_config *sc)
{
    static const uint64_t buses[] = {1000000000ull, 100000000ull, 1ull << 27,
                                     25000000ull, 3000000ull};
    static const uint32_t khzs[] = {1000000u, 2500000u, 3000000u, 1234567u};
    static const uint32_t min_ps[] = {200000u, 20000u, 1000u};
    static const uint64_t lats[] = {0, 0, 100, 1000, 20000};

    lapict_config_default(c);
    c->bus_hz = buses[df_below(s, 5)];
    c->tsc_khz = khzs[df_below(s, 4)];
    c->min_period_ns = min_ps[df_below(s, 3)];
    c->tsc_deadline = df_below(s, 4) != 0;
    c->missed_policy = (uint32_t)df_below(s, 3);
    c->catch_up_max = 1u + (uint32_t)df_below(s, 20);
    c->advance_mode = (uint32_t)df_below(s, 3);
    c->advance_ns = c->advance_mode == LAPICT_ADVANCE_FIXED
                        ? (uint32_t)df_below(s, 2000)
                        : 0;
    c->advance_max_ns = 2000;
    assert_int_equal(lapict_config_check(c), LAPICT_OK);

    lapict_sim_config_default(sc);
    sc->tsc_khz = c->tsc_khz;
    sc->tsc_offset = df_below(s, 2) ? 0 : df_next(s) >> 4;
    sc->host_latency_ns = lats[df_below(s, 5)];
    sc->entry_latency_ns = lats[df_below(s, 5)];
}

/*
 * Save/restore into a fresh instance at random points is invisible; with
 * a state, hw<->sw timer moves and block/unblock neither lose nor double.
 */
static void twins_stay_equal(void **state)
{
    const bool hw_sw = *state != NULL;
    static struct df_side x, y;
    unsigned seed, step, restores = 0, moves = 0, events = 0;

    for (seed = 1; seed <= DF_SEEDS; seed++) {
        uint64_t s = seed * 0x1234567ull + (hw_sw ? 7 : 0);
        struct lapict_config cfg;
        struct lapict_sim_config sc, scx;

        df_config(&s, &cfg, &sc);
        scx = sc;
        if (hw_sw) {
            /* x: hardware timer, sometimes out of range; y: none. */
            scx.hv_timer = true;
            scx.hv_shift = (uint32_t)df_below(&s, 8);
            scx.hv_max = df_below(&s, 2) ? 0xFFFFFFFFu : df_below(&s, 5000);
        }
        if (seed == df_trace_seed)
            printf("config bus_hz=%llu tsc_khz=%u tsc_offset=%llu "
                   "min_period_ns=%u tsc_deadline=%d missed=%s advance=%s%u "
                   "host_latency_ns=%llu entry_latency_ns=%llu hv_timer=%d "
                   "hv_shift=%u hv_max=%llu\n",
                   (unsigned long long)cfg.bus_hz, cfg.tsc_khz,
                   (unsigned long long)sc.tsc_offset, cfg.min_period_ns,
                   cfg.tsc_deadline,
                   (const char *[]){"coalesce", "catch_up",
                                    "drop"}[cfg.missed_policy],
                   cfg.advance_mode == LAPICT_ADVANCE_ADAPTIVE ? "adaptive"
                   : cfg.advance_mode == LAPICT_ADVANCE_OFF    ? "off"
                                                               : "",
                   cfg.advance_mode == LAPICT_ADVANCE_FIXED ? cfg.advance_ns
                                                            : 0u,
                   (unsigned long long)scx.host_latency_ns,
                   (unsigned long long)scx.entry_latency_ns, scx.hv_timer,
                   scx.hv_shift, (unsigned long long)scx.hv_max);
        df_init(&x, &cfg, &scx, hw_sw);
        df_init(&y, &cfg, &sc, false);
        for (step = 0; step < DF_STEPS; step++) {
            struct df_op op = df_pick(&s, hw_sw);
            if (seed == df_trace_seed)
                df_trace(&y, &op);
            df_apply(&x, &op);
            df_apply(&y, &op);
            if (!hw_sw && df_below(&s, 25) == 0) {
                if (seed == df_trace_seed)
                    printf("save_restore\n");
                df_save_restore(&y);
                /*
                 * Saving first processes what is due, like any register
                 * access; the twin does the same so that a late host
                 * callback does not make the delivery times differ.
                 */
                lapict_lvtt_read(x.t);
                lapict_sim_enter(&x.sim);
            }
            events += x.nev;
            df_compare(&x, &y, seed, step);
        }
        restores += y.restores;
        moves += (unsigned)(x.sim.hv_arms + x.sim.hv_refusals);
        assert_false(x.sim.sw_armed && x.sim.hv_armed);
        assert_false(y.sim.sw_armed && y.sim.hv_armed);
    }
    /* The runs must have exercised what they claim to. */
    assert_true(events > 10000u);
    if (hw_sw)
        assert_true(moves > 1000u);
    else
        assert_true(restores > 1000u);
}

int main(void)
{
    const char *tr = getenv("DF_TRACE");
    df_trace_seed = tr ? (unsigned)atoi(tr) : 0;
    const struct CMUnitTest tests[] = {
        {"save_restore_is_invisible", twins_stay_equal, NULL, NULL, NULL},
        {"hw_sw_moves_are_invisible", twins_stay_equal, NULL, NULL,
         &df_trace_seed},
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
