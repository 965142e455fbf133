/* SPDX-License-Identifier: MIT */
/*
 * adapters/baremetal: the per-CPU timer multiplexer against a fake physical
 * LAPIC (a TSC the test advances and one TSC-deadline timer that fires when
 * TSC >= deadline, unsigned, as the SDM's "TSC-Deadline Mode" says), a
 * brute-force oracle (a plain array scanned linearly) and K real lapict
 * instances checked against their architectural instants. Time cases run
 * at TSC / host-ns bases 0 and near 2^64.
 */
/* clang-format off */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <lapict/lapict.h>

#include "lapict_baremetal.h"
#include "tu_main.h"

__extension__ typedef unsigned __int128 u128;

#define NEAR_WRAP (UINT64_MAX - 5000000u)
static const uint64_t bases[] = {0, NEAR_WRAP};
#define NBASES 2

/* ---- fake physical LAPIC ---------------------------------------------- */

struct fake_hw {
    uint64_t tsc;
    bool armed;
    uint64_t deadline;
    unsigned writes, eois, irqs, preempt_writes;
    uint32_t preempt;
    bool in_irq;
    struct lapict_bm_cpu *cpu;
    /* Called at the start of each interrupt (oracle bookkeeping). */
    void (*on_irq)(struct fake_hw *f);
    /* Called at each VM entry of guest_run(), the preemption timer loaded
     * (@loaded: written for this entry). */
    void (*on_entry)(struct fake_hw *f, bool loaded);
    /* fake_run() takes no interrupt once irqs reaches it (0: no bound),
     * so that a test can report a storm rather than sit in it. */
    unsigned irq_cap;
};

static uint64_t hw_read_tsc(void *ctx)
{
    return ((struct fake_hw *)ctx)->tsc;
}

static void hw_write_deadline(void *ctx, uint64_t v)
{
    struct fake_hw *f = ctx;
    f->deadline = v;
    f->armed = v != 0;
    f->writes++;
}

static void hw_eoi(void *ctx)
{
    struct fake_hw *f = ctx;
    assert_true(f->in_irq);
    f->eois++;
}

static void hw_preempt(void *ctx, uint32_t ticks)
{
    struct fake_hw *f = ctx;
    f->preempt = ticks;
    f->preempt_writes++;
}

static const struct lapict_bm_hw fake_ops = {
    .version = LAPICT_BM_HW_VERSION,
    .read_tsc = hw_read_tsc,
    .write_tsc_deadline = hw_write_deadline,
    .eoi = hw_eoi,
    .write_preempt = hw_preempt,
};

/* The timer fires: the MSR clears, the handler runs. */
static void fake_irq(struct fake_hw *f)
{
    f->armed = false;
    f->irqs++;
    if (f->on_irq)
        f->on_irq(f);
    f->in_irq = true;
    assert_int_equal(lapict_bm_timer_irq(f->cpu), LAPICT_OK);
    f->in_irq = false;
}

/*
 * Advance the TSC by @dt ticks (wrapping), taking every interrupt on the
 * way at the tick it fires. An interrupt that follows another one at the
 * same tick is taken one tick later: a handler takes time.
 */
static void fake_run(struct fake_hw *f, uint64_t dt)
{
    uint64_t left = dt;
    unsigned chain = 0;
    bool fired_here = false;
    uint64_t last = 0;

    for (;;) {
        uint64_t dist;
        if (!f->armed || (f->irq_cap && f->irqs >= f->irq_cap))
            break;
        dist = f->deadline > f->tsc ? f->deadline - f->tsc : 0;
        if (dist > left)
            break;
        f->tsc += dist;
        left -= dist;
        if (fired_here && f->tsc == last) {
            f->tsc++;
            if (left)
                left--;
        }
        fired_here = true;
        last = f->tsc;
        fake_irq(f);
        assert_true(++chain < 1000000u); /* no interrupt storm */
    }
    f->tsc += left;
}

struct rig {
    struct fake_hw hw;
    struct lapict_bm_clock clk;
    struct lapict_bm_cpu cpu;
    struct lapict_bm_slot slots[256];
    struct lapict_bm_node nodes[256];
};

static void rig_init(struct rig *r, uint32_t khz, uint64_t tsc_base,
                     uint64_t ns_base, unsigned nnodes)
{
    struct lapict_bm_cpu_config cc = {0};
    unsigned i;
    memset(r, 0, sizeof(*r));
    r->hw.tsc = tsc_base;
    assert_int_equal(lapict_bm_clock_init(&r->clk, khz, tsc_base, ns_base),
                     LAPICT_OK);
    cc.clock = &r->clk;
    cc.preempt_shift = 5;
    assert_int_equal(
        lapict_bm_cpu_init(&r->cpu, &cc, &fake_ops, &r->hw, r->slots, 256),
        LAPICT_OK);
    r->hw.cpu = &r->cpu;
    for (i = 0; i < nnodes; i++)
        assert_int_equal(lapict_bm_node_init(&r->nodes[i], &r->cpu, NULL,
                                             LAPICT_BM_RATIO_ONE, 0,
                                             (void *)(uintptr_t)i),
                         LAPICT_OK);
}

static uint64_t now_ns(struct rig *r)
{
    return lapict_bm_now_ns(&r->cpu);
}

/* Fire log of hook-driven tests. */
static unsigned fire_log[4096], nfire;
static uint64_t fire_ns[4096];

static void log_fire(struct lapict_bm_node *n)
{
    assert_true(nfire < 4096);
    fire_ns[nfire] = lapict_bm_now_ns(n->cpu);
    fire_log[nfire++] = (unsigned)(uintptr_t)lapict_bm_node_user(n);
}

static void hook_all(struct rig *r, unsigned nnodes, lapict_bm_fire_fn fn)
{
    unsigned i;
    for (i = 0; i < nnodes; i++)
        lapict_bm_node_set_fire(&r->nodes[i], fn);
    nfire = 0;
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    /* xorshift64*: deterministic, seeded per test. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

/* ---- clock ------------------------------------------------------------ */

/* Rule: host ns = floor(dTSC * 10^6 / kHz) within the multiply-shift's
 * rounding; clock_tsc() is the exact inverse (first TSC with ns >= x). */
static void clock_multiply_shift_matches_exact_and_inverts(void **state)
{
    static const uint32_t khzs[] = {1,       1000,    999983,  1000000,
                                    2000000, 2500000, 3000007, 100000000};
    size_t k, b;
    int i;
    (void)state;
    rng_state = 0x1234;
    for (k = 0; k < sizeof(khzs) / sizeof(khzs[0]); k++)
        for (b = 0; b < NBASES; b++) {
            struct lapict_bm_clock c;
            uint64_t tb = bases[b], nb = bases[NBASES - 1 - b];
            assert_int_equal(lapict_bm_clock_init(&c, khzs[k], tb, nb),
                             LAPICT_OK);
            assert_int_equal(lapict_bm_clock_ns(&c, tb), nb);
            for (i = 0; i < 2000; i++) {
                /* Up to ~2^44 ticks: hours at GHz rates. */
                uint64_t dt = rnd() >> (20 + rnd_below(40));
                uint64_t exact = (uint64_t)((u128)dt * 1000000u / khzs[k]);
                uint64_t got = lapict_bm_clock_ns(&c, tb + dt) - nb;
                uint64_t x, t;
                /* Relative error below 2^-40, never above the exact. */
                assert_true(got <= exact);
                assert_true(exact - got <= 1 + (exact >> 40));
                /* Inverse: the first TSC whose ns reaches x. */
                x = nb + got + rnd_below(3);
                t = lapict_bm_clock_tsc(&c, x);
                assert_true((int64_t)(lapict_bm_clock_ns(&c, t) - x) >= 0);
                if (t != tb)
                    assert_true((int64_t)(lapict_bm_clock_ns(&c, t - 1) - x) <
                                0);
            }
        }
    assert_int_equal(lapict_bm_clock_init(NULL, 1, 0, 0), LAPICT_E_INVAL);
    {
        struct lapict_bm_clock c;
        assert_int_equal(lapict_bm_clock_init(&c, 0, 0, 0), LAPICT_E_INVAL);
        assert_int_equal(lapict_bm_clock_init(&c, 100000001u, 0, 0),
                         LAPICT_E_INVAL);
    }
}

/*
 * Rule: clock_tsc() is the exact inverse of clock_ns() (the first TSC whose
 * ns reaches x) at every instant and every rate clock_init() accepts, from
 * LAPICT_TSC_KHZ_MIN to LAPICT_TSC_KHZ_MAX; an instant 2^64 ticks do not
 * reach gives the last tick.
 */
static void clock_tsc_exact_inverse_over_whole_rate_range(void **state)
{
    /* Both ends of the accepted range, and rates whose ns_mult loses the
     * most to rounding (the estimate is then furthest short near 2^64). */
    static const uint32_t khzs[] = {1,        2,        1000,     999983,
                                    1000000,  2500000,  29999999, 33333333,
                                    77777777, 99999989, 99999999, 100000000};
    const size_t nk = sizeof(khzs) / sizeof(khzs[0]);
    unsigned long bad_total = 0;
    size_t k, b;
    int i;
    (void)state;
    assert_int_equal(khzs[0], LAPICT_TSC_KHZ_MIN);
    assert_int_equal(khzs[nk - 1], LAPICT_TSC_KHZ_MAX);
    rng_state = 0x5eed;
    for (k = 0; k < nk + 8; k++) {
        /* The table, then random rates inside the range. */
        uint32_t khz = k < nk ? khzs[k]
                              : (uint32_t)(LAPICT_TSC_KHZ_MIN +
                                           rnd_below(LAPICT_TSC_KHZ_MAX));
        for (b = 0; b < NBASES; b++) {
            struct lapict_bm_clock c;
            uint64_t tb = bases[b], nb = bases[NBASES - 1 - b], last;
            unsigned bad = 0;

            assert_int_equal(lapict_bm_clock_init(&c, khz, tb, nb), LAPICT_OK);
            /* The last instant 2^64 ticks reach: every one at or below
             * 1 GHz, where 2^64 ticks last 2^64 ns or more. */
            last = khz <= 1000000u
                       ? UINT64_MAX
                       : lapict_bm_clock_ns(&c, tb + UINT64_MAX) - nb;
            for (i = 0; i < 4000; i++) {
                /* The ends, the last reachable instant, then instants
                 * uniform over the reachable ones and spread over all 64
                 * bits of distance. */
                uint64_t d = i == 0   ? 0
                             : i == 1 ? last
                             : i == 2 ? UINT64_MAX
                             : i & 1  ? rnd() >> rnd_below(64)
                                      : rnd() % (last / 2 + 1) * 2;
                uint64_t t = lapict_bm_clock_tsc(&c, nb + d) - tb;
                uint64_t at = lapict_bm_clock_ns(&c, tb + t) - nb;
                uint64_t before = lapict_bm_clock_ns(&c, tb + t - 1) - nb;

                if (d > last) {
                    bad += t != UINT64_MAX;
                    continue;
                }
                /* Reached at t (or the ns passed 2^64 there), not one
                 * tick before. */
                if ((at < d && at >= before) || (t && before >= d)) {
                    if (!bad)
                        print_message("%u kHz, base %zu: instant %llu -> "
                                      "TSC +%llu, ns there %llu, one tick "
                                      "before %llu\n",
                                      khz, b, (unsigned long long)d,
                                      (unsigned long long)t,
                                      (unsigned long long)at,
                                      (unsigned long long)before);
                    bad++;
                }
            }
            if (bad)
                print_message("%u kHz, base %zu: %u of 4000 instants "
                              "wrong\n",
                              khz, b, bad);
            bad_total += bad;
        }
    }
    assert_int_equal(bad_total, 0);
}

/* Rule: the host clock is continuous across the 2^64 TSC wrap. */
static void clock_continuous_across_tsc_wrap(void **state)
{
    struct lapict_bm_clock c;
    uint64_t prev, t;
    (void)state;
    assert_int_equal(lapict_bm_clock_init(&c, 1000000u, UINT64_MAX - 10, 7),
                     LAPICT_OK);
    prev = lapict_bm_clock_ns(&c, UINT64_MAX - 10);
    for (t = UINT64_MAX - 9; t != 20; t++) {
        uint64_t ns = lapict_bm_clock_ns(&c, t);
        assert_int_equal(ns, prev + 1);
        prev = ns;
    }
    assert_int_equal(lapict_bm_clock_tsc(&c, 7 + 11), 0);
}

/* ---- ordering, ties, cancel, re-arm ------------------------------------ */

/* Rule: deadline order; the hardware holds the earliest deadline. */
static void fires_in_deadline_order(void **state)
{
    static const uint64_t off[] = {5000, 1000, 3000, 2000, 4000};
    size_t b, i;
    (void)state;
    for (b = 0; b < NBASES; b++) {
        struct rig r;
        uint64_t t0;
        rig_init(&r, 2500000u, bases[b], bases[NBASES - 1 - b], 5);
        hook_all(&r, 5, log_fire);
        t0 = now_ns(&r);
        for (i = 0; i < 5; i++)
            assert_int_equal(lapict_bm_arm(&r.nodes[i], t0 + off[i]),
                             LAPICT_OK);
        assert_true(r.hw.armed);
        assert_int_equal(r.hw.deadline, lapict_bm_clock_tsc(&r.clk, t0 + 1000));
        /* Only changes of the earliest deadline reach the hardware. */
        assert_int_equal(r.hw.writes, 2);
        fake_run(&r.hw, 100000);
        assert_int_equal(nfire, 5);
        assert_int_equal(fire_log[0], 1);
        assert_int_equal(fire_log[1], 3);
        assert_int_equal(fire_log[2], 2);
        assert_int_equal(fire_log[3], 4);
        assert_int_equal(fire_log[4], 0);
        for (i = 0; i < 5; i++) {
            uint64_t want = t0 + off[fire_log[i]];
            /* Never early; late by less than one TSC tick (0.4 ns). */
            assert_true((int64_t)(fire_ns[i] - want) >= 0);
            assert_true(fire_ns[i] - want <= 1);
        }
        assert_false(r.hw.armed);
        assert_int_equal(r.hw.irqs, 5);
        assert_int_equal(r.hw.eois, 5);
    }
}

/* Rule: equal deadlines fire in arming order; re-arming moves to the end. */
static void ties_fire_in_arming_order(void **state)
{
    struct rig r;
    uint64_t t0;
    unsigned i;
    (void)state;
    rig_init(&r, 1000000u, 0, 0, 8);
    hook_all(&r, 8, log_fire);
    t0 = now_ns(&r);
    for (i = 0; i < 8; i++)
        lapict_bm_arm(&r.nodes[(i * 5) % 8], t0 + 100);
    /* Re-arm node 0 at the same instant: it is now the last of the tie. */
    lapict_bm_arm(&r.nodes[0], t0 + 100);
    fake_run(&r.hw, 1000);
    assert_int_equal(nfire, 8);
    for (i = 0; i < 7; i++)
        assert_int_equal(fire_log[i], ((i + 1) * 5) % 8);
    assert_int_equal(fire_log[7], 0);
    /* One interrupt for the whole tie. */
    assert_int_equal(r.hw.irqs, 1);
}

/* Rule: cancel of the head reprograms to the next; cancel is idempotent;
 * a cancelled node never fires; an empty CPU disarms the timer. */
static void cancel_head_reprograms_and_is_idempotent(void **state)
{
    struct rig r;
    uint64_t t0;
    unsigned w;
    (void)state;
    rig_init(&r, 1000000u, NEAR_WRAP, 0, 3);
    hook_all(&r, 3, log_fire);
    t0 = now_ns(&r);
    lapict_bm_arm(&r.nodes[0], t0 + 100);
    lapict_bm_arm(&r.nodes[1], t0 + 200);
    lapict_bm_arm(&r.nodes[2], t0 + 300);
    assert_int_equal(r.hw.deadline, NEAR_WRAP + 100);
    lapict_bm_cancel(&r.nodes[0]);
    assert_int_equal(r.hw.deadline, NEAR_WRAP + 200);
    w = r.hw.writes;
    assert_int_equal(lapict_bm_cancel(&r.nodes[0]), LAPICT_OK);
    assert_int_equal(r.hw.writes, w);
    /* Cancel of a non-head: no write. */
    lapict_bm_cancel(&r.nodes[2]);
    assert_int_equal(r.hw.writes, w);
    assert_false(lapict_bm_node_armed(&r.nodes[2], NULL));
    lapict_bm_cancel(&r.nodes[1]);
    assert_false(r.hw.armed);
    assert_int_equal(r.hw.writes, w + 1);
    fake_run(&r.hw, 1000);
    assert_int_equal(nfire, 0);
    assert_int_equal(r.hw.irqs, 0);
}

/* Rule: re-arming replaces; the hardware follows the earliest deadline. */
static void rearm_earlier_and_later(void **state)
{
    struct rig r;
    uint64_t t0, at;
    unsigned w;
    (void)state;
    rig_init(&r, 1000000u, 0, 0, 3);
    hook_all(&r, 3, log_fire);
    t0 = now_ns(&r);
    lapict_bm_arm(&r.nodes[0], t0 + 500);
    lapict_bm_arm(&r.nodes[1], t0 + 700);
    lapict_bm_arm(&r.nodes[2], t0 + 900);
    w = r.hw.writes;
    /* A non-head later: nothing to write. */
    lapict_bm_arm(&r.nodes[2], t0 + 950);
    assert_int_equal(r.hw.writes, w);
    /* A non-head earlier than the head: written. */
    lapict_bm_arm(&r.nodes[2], t0 + 100);
    assert_int_equal(r.hw.deadline, 100);
    /* The head later: the next earliest is written. */
    lapict_bm_arm(&r.nodes[2], t0 + 800);
    assert_int_equal(r.hw.deadline, 500);
    /* The head later but still first. */
    lapict_bm_arm(&r.nodes[0], t0 + 600);
    assert_int_equal(r.hw.deadline, 600);
    assert_true(lapict_bm_node_armed(&r.nodes[0], &at));
    assert_int_equal(at, t0 + 600);
    fake_run(&r.hw, 2000);
    assert_int_equal(nfire, 3);
    assert_int_equal(fire_log[0], 0);
    assert_int_equal(fire_log[1], 1);
    assert_int_equal(fire_log[2], 2);
    assert_int_equal(fire_ns[0], t0 + 600);
    assert_int_equal(fire_ns[1], t0 + 700);
    assert_int_equal(fire_ns[2], t0 + 800);
}

/* Quirk: an interrupt before the programmed TSC deadline delivers nothing
 * and re-arms the same deadline. */
static void early_interrupt_rearms(void **state)
{
    size_t b;
    (void)state;
    for (b = 0; b < NBASES; b++) {
        struct rig r;
        struct lapict_bm_stats st;
        uint64_t t0, dl;
        rig_init(&r, 3000000u, bases[b], bases[b], 2);
        hook_all(&r, 2, log_fire);
        t0 = now_ns(&r);
        lapict_bm_arm(&r.nodes[0], t0 + 1000);
        dl = r.hw.deadline;
        fake_run(&r.hw, 2000); /* 667 ns: before it */
        fake_irq(&r.hw);       /* e.g. a host LAPIC that fires early */
        assert_int_equal(nfire, 0);
        assert_true(r.hw.armed);
        assert_int_equal(r.hw.deadline, dl);
        assert_int_equal(r.hw.eois, 1);
        lapict_bm_stats_get(&r.cpu, &st);
        assert_int_equal(st.early_irqs, 1);
        fake_run(&r.hw, dl - r.hw.tsc - 1);
        assert_int_equal(nfire, 0);
        fake_run(&r.hw, 1);
        assert_int_equal(nfire, 1);
        assert_true(fire_ns[0] - (t0 + 1000) <= 1);
        /* A spurious interrupt on an empty CPU: nothing, and no write. */
        fake_irq(&r.hw);
        assert_false(r.hw.armed);
        lapict_bm_stats_get(&r.cpu, &st);
        assert_int_equal(st.early_irqs, 2);
    }
}

/* Quirk: a deadline already reached when programmed fires at once (the
 * value written is at or below the TSC, never 0, which would disarm). */
static void past_deadline_fires_at_once(void **state)
{
    size_t b;
    (void)state;
    for (b = 0; b < NBASES; b++) {
        struct rig r;
        struct lapict_bm_stats st;
        uint64_t t0;
        rig_init(&r, 1000000u, bases[b], bases[b], 3);
        hook_all(&r, 3, log_fire);
        fake_run(&r.hw, 100);
        t0 = now_ns(&r);
        lapict_bm_arm(&r.nodes[0], t0 + 50);
        lapict_bm_arm(&r.nodes[1], t0 - 10);
        assert_true(r.hw.armed);
        assert_true(r.hw.deadline != 0 && r.hw.deadline <= r.hw.tsc);
        /* Before the clock's base, too. */
        lapict_bm_arm(&r.nodes[2], t0 - 1000);
        fake_run(&r.hw, 0);
        assert_int_equal(nfire, 2);
        assert_int_equal(fire_log[0], 2);
        assert_int_equal(fire_log[1], 1);
        assert_int_equal(fire_ns[0], t0);
        fake_run(&r.hw, 50);
        assert_int_equal(nfire, 3);
        lapict_bm_stats_get(&r.cpu, &st);
        assert_true(st.past_writes >= 1);
    }
    {
        /* TSC 0 exactly: the write must not be 0. */
        struct rig r;
        rig_init(&r, 1000000u, 0, 0, 1);
        hook_all(&r, 1, log_fire);
        lapict_bm_arm(&r.nodes[0], 0);
        assert_int_equal(r.hw.deadline, 1);
        fake_run(&r.hw, 1);
        assert_int_equal(nfire, 1);
    }
}

/* Quirk: a deadline past the 2^64 TSC wrap cannot be written (the timer
 * compares unsigned): UINT64_MAX is written, the early interrupt at the
 * wrap re-arms, and the node fires on time after the wrap. */
static void deadline_across_tsc_wrap(void **state)
{
    struct rig r;
    struct lapict_bm_stats st;
    uint64_t t0;
    (void)state;
    rig_init(&r, 1000000u, UINT64_MAX - 3000, 0, 3);
    hook_all(&r, 3, log_fire);
    t0 = now_ns(&r);
    lapict_bm_arm(&r.nodes[0], t0 + 5000);
    assert_int_equal(r.hw.deadline, UINT64_MAX);
    lapict_bm_arm(&r.nodes[1], t0 + 1000);
    assert_int_equal(r.hw.deadline, UINT64_MAX - 2000);
    lapict_bm_arm(&r.nodes[2], t0 + 4000);
    fake_run(&r.hw, 10000);
    assert_int_equal(nfire, 3);
    assert_int_equal(fire_log[0], 1);
    assert_int_equal(fire_log[1], 2);
    assert_int_equal(fire_log[2], 0);
    assert_true(fire_ns[1] - (t0 + 4000) <= 1);
    assert_true(fire_ns[2] - (t0 + 5000) <= 1);
    assert_true((int64_t)(fire_ns[1] - (t0 + 4000)) >= 0);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_true(st.wrap_clamps >= 1);
    assert_true(st.early_irqs >= 1);
    assert_true(r.hw.irqs <= 6);
}

/* ---- re-entrancy --------------------------------------------------------- */

static struct rig *re_rig;
static unsigned re_mode;

static void hook_reenter(struct lapict_bm_node *n)
{
    unsigned id = (unsigned)(uintptr_t)lapict_bm_node_user(n);
    uint64_t now = lapict_bm_now_ns(n->cpu);
    log_fire(n);
    /* No nested service. */
    assert_int_equal(lapict_bm_timer_irq(n->cpu), LAPICT_E_INVAL);
    if (re_mode == 0 && id == 0 && nfire == 1) {
        /* Cancel another node that is also due: it never fires. */
        lapict_bm_cancel(&re_rig->nodes[1]);
        /* Re-arm self in the past: serviced in the next round. */
        lapict_bm_arm(n, now - 5);
    } else if (re_mode == 1) {
        /* Always re-arm in the past: the handler yields after max_rounds. */
        lapict_bm_arm(n, now);
    }
}

/* Rule: callbacks may arm and cancel from inside the handler; each node
 * is off the heap during its callback; rounds are bounded. */
static void reentrant_arm_and_cancel(void **state)
{
    struct rig r;
    struct lapict_bm_stats st;
    uint64_t t0;
    (void)state;
    rig_init(&r, 1000000u, 0, 0, 3);
    re_rig = &r;
    hook_all(&r, 3, hook_reenter);
    t0 = now_ns(&r);
    re_mode = 0;
    lapict_bm_arm(&r.nodes[0], t0 + 10);
    lapict_bm_arm(&r.nodes[1], t0 + 10);
    lapict_bm_arm(&r.nodes[2], t0 + 10);
    fake_run(&r.hw, 10);
    /* 0; then (1 was cancelled) 0 again, re-armed 5 ns before 2's
     * deadline, in a second round; then 2. */
    assert_int_equal(nfire, 3);
    assert_int_equal(fire_log[0], 0);
    assert_int_equal(fire_log[1], 0);
    assert_int_equal(fire_log[2], 2);
    assert_int_equal(r.hw.irqs, 1);

    rig_init(&r, 1000000u, 0, 0, 1);
    re_rig = &r;
    hook_all(&r, 1, hook_reenter);
    re_mode = 1;
    fake_run(&r.hw, 10);
    lapict_bm_arm(&r.nodes[0], now_ns(&r));
    fake_irq(&r.hw);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.round_limits, 1);
    assert_int_equal(nfire, LAPICT_BM_MAX_ROUNDS_DEFAULT);
    assert_true(r.hw.armed && r.hw.deadline <= r.hw.tsc);
    re_mode = 2;
    fake_run(&r.hw, 0);
    assert_int_equal(nfire, LAPICT_BM_MAX_ROUNDS_DEFAULT + 1);
    assert_false(r.hw.armed);
}

/* ---- random operations against a brute-force oracle --------------------- */

#define OR_NODES 97

struct oracle {
    bool armed[OR_NODES];
    uint64_t key[OR_NODES], seq[OR_NODES];
    uint64_t seqc;
    /* The handler's current round. */
    uint64_t round_seq;
    unsigned rounds;
};

static struct oracle orc;
static struct rig *orig;
static unsigned or_fires;

static void or_arm(unsigned i, uint64_t key)
{
    assert_int_equal(lapict_bm_arm(&orig->nodes[i], key), LAPICT_OK);
    orc.armed[i] = true;
    orc.key[i] = key;
    orc.seq[i] = orc.seqc++;
}

static void or_cancel(unsigned i)
{
    assert_int_equal(lapict_bm_cancel(&orig->nodes[i]), LAPICT_OK);
    orc.armed[i] = false;
}

static bool or_before(unsigned a, unsigned b)
{
    int64_t d = (int64_t)(orc.key[a] - orc.key[b]);
    return d < 0 || (d == 0 && orc.seq[a] < orc.seq[b]);
}

/* Linear scan: the earliest armed node, optionally only due ones. */
static int or_min(bool due_only, uint64_t now, bool round_only)
{
    int best = -1;
    unsigned i;
    for (i = 0; i < OR_NODES; i++) {
        if (!orc.armed[i])
            continue;
        if (due_only && (int64_t)(now - orc.key[i]) < 0)
            continue;
        if (round_only && orc.seq[i] >= orc.round_seq)
            continue;
        if (best < 0 || or_before(i, (unsigned)best))
            best = (int)i;
    }
    return best;
}

static void or_on_irq(struct fake_hw *f)
{
    (void)f;
    orc.round_seq = orc.seqc;
    orc.rounds = 1;
}

static void or_hook(struct lapict_bm_node *n)
{
    unsigned id = (unsigned)(uintptr_t)lapict_bm_node_user(n);
    uint64_t now = lapict_bm_now_ns(n->cpu);
    int want = or_min(true, now, false);
    assert_true(want >= 0);
    if (orc.seq[want] >= orc.round_seq) {
        /* Armed during this round and first in line: the round ends, the
         * handler starts the next one. */
        orc.round_seq = orc.seqc;
        orc.rounds++;
        assert_true(orc.rounds <= LAPICT_BM_MAX_ROUNDS_DEFAULT);
    }
    assert_int_equal(id, want);
    /* Never early. */
    assert_true((int64_t)(now - orc.key[id]) >= 0);
    assert_false(lapict_bm_node_armed(n, NULL));
    orc.armed[id] = false;
    or_fires++;
    switch (rnd_below(8)) {
    case 0: /* periodic-like re-arm */
        or_arm(id, now + 1 + rnd_below(20000));
        break;
    case 1: /* re-arm at or before now: the next round */
        or_arm(id, now - rnd_below(3));
        break;
    case 2:
        or_arm((unsigned)rnd_below(OR_NODES), now + rnd_below(5000));
        break;
    case 3:
        or_cancel((unsigned)rnd_below(OR_NODES));
        break;
    default:
        break;
    }
}

static void or_check_state(void)
{
    unsigned i, n = 0;
    struct lapict_bm_stats st;
    for (i = 0; i < OR_NODES; i++) {
        uint64_t at;
        bool a = lapict_bm_node_armed(&orig->nodes[i], &at);
        assert_int_equal(a, orc.armed[i]);
        if (a) {
            assert_int_equal(at, orc.key[i]);
            n++;
        }
    }
    lapict_bm_stats_get(&orig->cpu, &st);
    assert_int_equal(st.armed, n);
}

/* The hardware deadline the oracle expects, if any. */
static void or_check_hw(void)
{
    uint64_t now = lapict_bm_now_ns(&orig->cpu);
    int m = or_min(false, 0, false);
    if (m < 0) {
        assert_false(orig->hw.armed);
        return;
    }
    assert_true(orig->hw.armed);
    if ((int64_t)(now - orc.key[m]) >= 0) {
        assert_true(orig->hw.deadline <= orig->hw.tsc ||
                    orig->hw.deadline == 1);
    } else {
        uint64_t t = lapict_bm_clock_tsc(&orig->clk, orc.key[m]);
        if (t < orig->hw.tsc)
            assert_int_equal(orig->hw.deadline, UINT64_MAX);
        else
            assert_int_equal(orig->hw.deadline, t);
    }
}

/* Rule: 100 000 random arm / re-arm / cancel / advance / early-interrupt
 * operations, including re-entrant ones from the callbacks, match a
 * brute-force oracle: same fire order, never early, nothing lost, hardware
 * written exactly when the earliest deadline's TSC value changes. */
static void random_ops_match_oracle(void **state)
{
    size_t b;
    (void)state;
    for (b = 0; b < NBASES; b++) {
        static struct rig r;
        unsigned op, i;
        uint64_t prev_tsc = 0;
        bool prev_ok = false;
        rig_init(&r, 2999999u, bases[b], bases[NBASES - 1 - b], OR_NODES);
        hook_all(&r, OR_NODES, or_hook);
        memset(&orc, 0, sizeof(orc));
        orig = &r;
        or_fires = 0;
        r.hw.on_irq = or_on_irq;
        rng_state = 0x9e3779b97f4a7c15ull + b;
        for (op = 0; op < 100000; op++) {
            uint64_t now = now_ns(&r);
            unsigned w = r.hw.writes, pick = (unsigned)rnd_below(100);
            unsigned id = (unsigned)rnd_below(OR_NODES);
            int m;
            if (pick < 40) {
                uint64_t key;
                unsigned other = (unsigned)rnd_below(OR_NODES);
                if (rnd_below(10) == 0 && orc.armed[other])
                    key = orc.key[other]; /* a tie */
                else
                    key = now - 1000 + rnd_below(100000);
                or_arm(id, key);
            } else if (pick < 60) {
                or_cancel(id);
            } else if (pick < 95) {
                fake_run(&r.hw, rnd_below(60000));
                now = now_ns(&r);
                /* Nothing due is left behind. */
                for (i = 0; i < OR_NODES; i++)
                    assert_false(orc.armed[i] &&
                                 (int64_t)(now - orc.key[i]) >= 0 &&
                                 r.hw.armed && r.hw.deadline > r.hw.tsc);
            } else {
                fake_irq(&r.hw); /* early, or exactly due */
            }
            or_check_state();
            or_check_hw();
            /* Written iff the earliest deadline (as a TSC value) changed. */
            m = or_min(false, 0, false);
            if (pick < 60 && m >= 0 && prev_ok &&
                (int64_t)(now - orc.key[m]) < 0 &&
                lapict_bm_clock_tsc(&r.clk, orc.key[m]) == prev_tsc)
                assert_int_equal(r.hw.writes, w);
            prev_ok = m >= 0 && r.hw.armed;
            prev_tsc = m >= 0 ? lapict_bm_clock_tsc(&r.clk, orc.key[m]) : 0;
        }
        /* Drain: everything still armed fires, in order. */
        fake_run(&r.hw, 10000000);
        hook_all(&r, OR_NODES, NULL);
        for (i = 0; i < OR_NODES; i++)
            if (orc.armed[i])
                assert_true((int64_t)(now_ns(&r) - orc.key[i]) < 0);
        print_message("base %zu: %u fires, %u irqs, %u writes\n", b, or_fires,
                      r.hw.irqs, r.hw.writes);
        assert_true(or_fires > 10000);
    }
}

/* ---- end to end: K lapict instances through the multiplexer ---------------
 */

#define K 64
#define VEC 0x40u

enum { M_ONESHOT, M_PERIODIC, M_DEADLINE };

struct vcpu {
    struct lapict_timer t;
    unsigned mode, div;
    bool armed;
    uint64_t anchor_ns, period_ns; /* count-down */
    uint64_t deadline_tsc;         /* TSC-deadline */
    uint64_t k;                    /* periodic: deliveries so far */
    uint64_t deliveries;
    uint64_t max_late_ns;
};

static struct vcpu vcpus[K];
static struct rig *e2e;
static uint64_t e2e_deliveries;
/* Lateness allowed beyond the rounding: the preemption timer's steps. */
static uint64_t e2e_slack_ns, e2e_slack_tsc;

static const uint32_t tdcr_of[] = {0xB, 0x0, 0x1, 0x2, 0x3, 0x8, 0x9, 0xA};
static const uint32_t div_of[] = {1, 2, 4, 8, 16, 32, 64, 128};

static bool e2e_inject(void *ctx, uint8_t vector)
{
    struct lapict_bm_node *n = ctx;
    unsigned i = (unsigned)(uintptr_t)lapict_bm_node_user(n);
    struct vcpu *v = &vcpus[i];
    uint64_t now = lapict_bm_now_ns(n->cpu), want, late;
    assert_int_equal(vector, VEC + (i % 16));
    if (v->mode == M_DEADLINE) {
        uint64_t g = lapict_bm_guest_tsc(n);
        assert_true(v->armed);
        assert_true(g >= v->deadline_tsc); /* never early */
        late = g - v->deadline_tsc;
        assert_true(late <= 2 + e2e_slack_tsc); /* guest ticks */
        v->armed = false;
    } else {
        if (v->mode == M_ONESHOT) {
            assert_true(v->armed); /* not doubled */
            want = v->anchor_ns + v->period_ns;
            v->armed = false;
        } else {
            want = v->anchor_ns + (v->k + 1) * v->period_ns;
            v->k++;
            /* Not lost: the next grid point is still ahead. */
            assert_true((int64_t)(now - (want + v->period_ns)) < 0);
        }
        assert_true((int64_t)(now - want) >= 0); /* never early */
        late = now - want;
        assert_true(late <= 1 + e2e_slack_ns); /* one host TSC tick */
    }
    if (late > v->max_late_ns)
        v->max_late_ns = late;
    v->deliveries++;
    e2e_deliveries++;
    return true;
}

/* LVTT of virtual timer @i: its mode, and a vector of its own. */
static uint32_t e2e_lvtt(const struct vcpu *v, unsigned i)
{
    return (v->mode == M_PERIODIC   ? LAPICT_LVTT_PERIODIC
            : v->mode == M_DEADLINE ? LAPICT_LVTT_TSC_DEADLINE
                                    : LAPICT_LVTT_ONESHOT) |
           (VEC + (i % 16));
}

static void e2e_start(unsigned i)
{
    struct vcpu *v = &vcpus[i];
    struct lapict_bm_node *n = &e2e->nodes[i];
    if (v->mode == M_DEADLINE) {
        v->deadline_tsc = lapict_bm_guest_tsc(n) + 1 + rnd_below(300000);
        assert_int_equal(lapict_tsc_deadline_write(&v->t, v->deadline_tsc),
                         LAPICT_OK);
    } else {
        /* Periods of at least 200 us: no minimum-period clamp. */
        uint32_t cnt = (uint32_t)((200000u + rnd_below(600000)) / v->div);
        if (v->mode == M_ONESHOT && rnd_below(2))
            cnt = (uint32_t)(1 + rnd_below(100000)); /* short ones too */
        v->anchor_ns = lapict_bm_now_ns(&e2e->cpu);
        v->period_ns = (uint64_t)cnt * v->div;
        v->k = 0;
        assert_int_equal(lapict_tmict_write(&v->t, cnt), LAPICT_OK);
    }
    v->armed = true;
}

/* Rule: K instances (one-shot, periodic, TSC-deadline; divides 1..128;
 * guest TSC at 1x and 0.5x the host) on one physical timer: every delivery
 * at or after its architectural instant, within a TSC tick, none lost,
 * none doubled. */
static void e2e_instances_through_mux(void **state)
{
    size_t b;
    (void)state;
    for (b = 0; b < NBASES; b++) {
        static struct rig r;
        struct lapict_ops ops;
        uint64_t end, now;
        unsigned i, step;
        rng_state = 77 + b;
        e2e = &r;
        e2e_deliveries = 0;
        rig_init(&r, 2000000u, bases[b], bases[b], 0);
        lapict_bm_ops_fill(&ops, e2e_inject, NULL);
        for (i = 0; i < K; i++) {
            struct vcpu *v = &vcpus[i];
            struct lapict_config c;
            /* At the wrap base only 1:1 (VMX scaling is not continuous
             * across the host TSC wrap); the guest TSC starts small. */
            bool half = b == 0 && (i % 4) >= 2;
            uint64_t ratio =
                half ? LAPICT_BM_RATIO_ONE / 2 : LAPICT_BM_RATIO_ONE;
            uint64_t off = b == 0 ? 1000 * i : (uint64_t)0 - bases[b];
            memset(v, 0, sizeof(*v));
            v->mode = i % 3;
            v->div = div_of[i % 8];
            assert_int_equal(lapict_bm_node_init(&r.nodes[i], &r.cpu, &v->t,
                                                 ratio, off,
                                                 (void *)(uintptr_t)i),
                             LAPICT_OK);
            lapict_config_default(&c);
            c.tsc_khz = half ? 1000000u : 2000000u;
            assert_int_equal(lapict_init(&v->t, &c, &ops, &r.nodes[i]),
                             LAPICT_OK);
            assert_int_equal(lapict_tdcr_write(&v->t, tdcr_of[i % 8]),
                             LAPICT_OK);
            assert_int_equal(lapict_lvtt_write(&v->t, e2e_lvtt(v, i)),
                             LAPICT_OK);
            e2e_start(i);
        }
        end = now_ns(&r) + 500000000u; /* 0.5 s of host time */
        for (step = 0;; step++) {
            fake_run(&r.hw, 1 + rnd_below(400000));
            now = now_ns(&r);
            if ((int64_t)(now - end) >= 0)
                break;
            for (i = 0; i < K; i++) {
                struct vcpu *v = &vcpus[i];
                if (!v->armed && v->mode != M_PERIODIC)
                    e2e_start(i);
                else if (v->mode == M_PERIODIC && rnd_below(500) == 0)
                    e2e_start(i); /* TMICT rewrite: a new anchor */
            }
        }
        /* Nothing lost: whatever is due has been delivered. */
        for (i = 0; i < K; i++) {
            struct vcpu *v = &vcpus[i];
            if (v->mode == M_DEADLINE)
                assert_false(v->armed && lapict_bm_guest_tsc(&r.nodes[i]) >=
                                             v->deadline_tsc);
            else if (v->mode == M_ONESHOT)
                assert_false(v->armed && (int64_t)(now - (v->anchor_ns +
                                                          v->period_ns)) >= 0);
            else
                assert_int_equal(v->k, (now - v->anchor_ns) / v->period_ns);
            assert_true(v->deliveries > 0);
        }
        print_message("base %zu: %llu deliveries over %u steps, %u irqs\n", b,
                      (unsigned long long)e2e_deliveries, step, r.hw.irqs);
        assert_true(e2e_deliveries > 10000);
    }
}

/* ---- guest TSC, preemption timer, migration, arguments --------------------
 */

/* Rule: guest TSC = (host TSC x ratio >> 48) + offset; tsc_to_host_ns gives
 * the first host ns at which the guest TSC reaches the value. */
static void guest_tsc_scaling_and_inverse(void **state)
{
    static const uint64_t ratios[] = {
        LAPICT_BM_RATIO_ONE, LAPICT_BM_RATIO_ONE / 2,
        LAPICT_BM_RATIO_ONE * 3 + 12345, (LAPICT_BM_RATIO_ONE / 7) * 5,
        1ull << 32};
    struct lapict_ops ops;
    size_t k;
    int i;
    (void)state;
    rng_state = 5;
    lapict_bm_ops_fill(&ops, NULL, NULL);
    assert_non_null(ops.tsc_to_host_ns);
    assert_null(ops.hv_timer_arm);
    for (k = 0; k < sizeof(ratios) / sizeof(ratios[0]); k++) {
        struct rig r;
        struct lapict_bm_node *n;
        rig_init(&r, 2400000u, 1000, 0, 0);
        n = &r.nodes[0];
        assert_int_equal(
            lapict_bm_node_init(n, &r.cpu, NULL, ratios[k], 77, NULL),
            LAPICT_OK);
        for (i = 0; i < 300; i++) {
            uint64_t g, d, at, t;
            fake_run(&r.hw, rnd_below(1000000));
            g = lapict_bm_guest_tsc(n);
            assert_int_equal(g, (uint64_t)(((u128)r.hw.tsc * ratios[k]) >> 48) +
                                    77);
            assert_int_equal(ops.guest_tsc(n), g);
            assert_int_equal(ops.now_ns(n), now_ns(&r));
            d = g + 1 + rnd_below(100000);
            at = ops.tsc_to_host_ns(n, d);
            /* At the first TSC tick whose ns reaches @at: reached... */
            t = lapict_bm_clock_tsc(&r.clk, at);
            assert_true((uint64_t)(((u128)t * ratios[k]) >> 48) + 77 >= d);
            /* ...and one ns earlier not yet. */
            t = lapict_bm_clock_tsc(&r.clk, at - 1);
            if (lapict_bm_clock_ns(&r.clk, t) == at - 1)
                assert_true((uint64_t)(((u128)t * ratios[k]) >> 48) + 77 < d);
            /* A value already reached: now. */
            assert_int_equal(ops.tsc_to_host_ns(n, g), now_ns(&r));
        }
    }
    {
        struct rig r;
        rig_init(&r, 1000000u, 0, 0, 0);
        assert_int_equal(lapict_bm_node_init(&r.nodes[0], &r.cpu, NULL,
                                             (1ull << 32) - 1, 0, NULL),
                         LAPICT_E_INVAL);
    }
}

/*
 * tsc_to_host_ns(@dg guest ticks ahead) on node 0 of @r (guest TSC ratio
 * @ratio) against an exact 128-bit oracle; @what names the case.
 */
static void inverse_check(struct rig *r, const struct lapict_ops *ops,
                          uint64_t ratio, uint64_t dg, const char *what)
{
    struct lapict_bm_node *n = &r->nodes[0];
    uint64_t now = now_ns(r), g = lapict_bm_guest_tsc(n), d = g + dg;
    uint64_t at = ops->tsc_to_host_ns(n, d), truth;
    /* The first host tick whose scaled TSC is dg past the current one. */
    u128 goal = ((u128)r->hw.tsc * ratio >> 48) + dg;
    u128 h = ((goal << 48) + ratio - 1) / ratio, dh;

    assert_true(h > r->hw.tsc);
    dh = h - r->hw.tsc;
    assert_true((int64_t)(at - now) > 0);
    /* Far: bounded (e - p overestimates by less than two ticks). */
    if (dh > ((u128)1 << 62) + 2 || dg >= 1ull << 63)
        assert_true(at - now <= 1ull << 62);
    if (dh > (u128)1 << 63)
        return; /* past the clock's range */
    truth = lapict_bm_clock_ns(&r->clk, (uint64_t)h - 1) + 1;
    if ((int64_t)(at - truth) > 0)
        fail_msg("%s, ratio %#llx: guest TSC %#llx + %#llx answered at "
                 "%#llx, after %#llx",
                 what, (unsigned long long)ratio, (unsigned long long)g,
                 (unsigned long long)dg, (unsigned long long)at,
                 (unsigned long long)truth);
    if (dh < ((u128)1 << 62) - 4 && dg < 1ull << 63)
        assert_int_equal(at, truth);
}

/*
 * Rule: tsc_to_host_ns never answers later than the first host ns at which
 * the guest TSC reaches the value: a late answer delivers late, an early
 * one only costs lapict a re-check. Around the far bound, 2^62 host ticks
 * ahead (or 2^63 guest ticks, for a guest faster than twice the host):
 * exact below it, at most 2^62 ticks and 2^62 ns ahead beyond it, at
 * every host and guest rate, up to IA32_TSC_DEADLINE = 2^64 - 1 from a
 * guest TSC of 0.
 */
static void far_guest_deadline_instant_never_late(void **state)
{
    static const uint32_t khzs[] = {1000000u, 2400000u, 30000000u};
    static const uint64_t ratios[] = {LAPICT_BM_RATIO_ONE,
                                      LAPICT_BM_RATIO_ONE / 3,
                                      LAPICT_BM_RATIO_ONE * 3 + 1,
                                      (LAPICT_BM_RATIO_ONE / 7) * 5,
                                      1ull << 32,
                                      (1ull << 62) - 1};
    struct lapict_ops ops;
    size_t k, q;
    int i;
    (void)state;
    rng_state = 62;
    lapict_bm_ops_fill(&ops, NULL, NULL);
    for (k = 0; k < sizeof(khzs) / sizeof(khzs[0]); k++)
        for (q = 0; q < sizeof(ratios) / sizeof(ratios[0]); q++) {
            static struct rig r;
            const uint64_t ratio = ratios[q];
            /* Guest ticks of 2^62 host ticks, or the guest bound. */
            const u128 far = ((u128)1 << 62) * ratio >> 48;
            const uint64_t mid =
                far < (u128)1 << 63 ? (uint64_t)far : 1ull << 63;
            /* Guest ticks of 64 host ticks, and 64 more. */
            const uint64_t near = 64 * (ratio >> 48) + 64;
            char what[32];
            uint64_t off;

            snprintf(what, sizeof(what), "%u kHz", khzs[k]);
            rig_init(&r, khzs[k], 1000, 0, 0);
            assert_int_equal(
                lapict_bm_node_init(&r.nodes[0], &r.cpu, NULL, ratio, 77, NULL),
                LAPICT_OK);
            for (i = 0; i < 380; i++) {
                uint64_t g;
                fake_run(&r.hw, rnd_below(1000000));
                g = lapict_bm_guest_tsc(&r.nodes[0]);
                /* Within a few host ticks of the bound, then far on. */
                inverse_check(&r, &ops, ratio,
                              i < 300 ? mid - near + rnd_below(2 * near)
                                      : mid + rnd() % (UINT64_MAX - mid - g),
                              what);
            }
            /* IA32_TSC_DEADLINE = 2^64 - 1 (and a little less) from a
             * guest TSC of 0: the guest's distance takes all 64 bits. */
            off = 0 - (uint64_t)((u128)r.hw.tsc * ratio >> 48);
            assert_int_equal(lapict_bm_node_detach(&r.nodes[0]), LAPICT_OK);
            assert_int_equal(lapict_bm_node_init(&r.nodes[0], &r.cpu, NULL,
                                                 ratio, off, NULL),
                             LAPICT_OK);
            assert_int_equal(lapict_bm_guest_tsc(&r.nodes[0]), 0);
            for (i = 0; i < 20; i++)
                inverse_check(&r, &ops, ratio,
                              UINT64_MAX - rnd_below(1ull << i * 3), what);
        }
}

/* Rule: the VMX-preemption timer is loaded with the distance to the
 * earliest deadline, rounded so that it never exits early. */
static void preemption_timer_value(void **state)
{
    struct rig r;
    uint64_t t0;
    (void)state;
    rig_init(&r, 1000000u, 0, 0, 2);
    hook_all(&r, 2, log_fire);
    assert_int_equal(lapict_bm_guest_entry(&r.cpu), LAPICT_OK);
    assert_int_equal(r.hw.preempt_writes, 0);
    t0 = now_ns(&r);
    lapict_bm_arm(&r.nodes[0], t0 + 1000);
    lapict_bm_guest_entry(&r.cpu);
    assert_int_equal(r.hw.preempt, (1000 >> 5) + 1);
    lapict_bm_arm(&r.nodes[1], t0 + (1ull << 40));
    lapict_bm_cancel(&r.nodes[0]);
    lapict_bm_guest_entry(&r.cpu);
    assert_int_equal(r.hw.preempt, UINT32_MAX);
    lapict_bm_arm(&r.nodes[0], t0 - 1);
    lapict_bm_guest_entry(&r.cpu);
    assert_int_equal(r.hw.preempt, 0);
    /* The preemption exit services without an EOI. */
    assert_int_equal(lapict_bm_preempt_exit(&r.cpu), LAPICT_OK);
    assert_int_equal(nfire, 1);
    assert_int_equal(r.hw.eois, 0);
}

/* Rule: a vCPU moves between CPUs keeping its deadline. */
static void migration_keeps_deadline(void **state)
{
    static struct rig a, b;
    struct lapict_bm_cpu_config cc = {0};
    uint64_t t0, at;
    (void)state;
    rig_init(&a, 1000000u, 0, 0, 2);
    rig_init(&b, 1000000u, 0, 0, 0);
    /* One clock shared by both CPUs. */
    cc.clock = &a.clk;
    /* Room for one node. */
    assert_int_equal(lapict_bm_cpu_init(&b.cpu, &cc, &fake_ops, &b.hw, b.slots,
                                        LAPICT_BM_SLOTS(1)),
                     LAPICT_OK);
    hook_all(&a, 2, log_fire);
    t0 = now_ns(&a);
    lapict_bm_arm(&a.nodes[0], t0 + 500);
    assert_int_equal(lapict_bm_node_detach(&a.nodes[0]), LAPICT_OK);
    assert_false(a.hw.armed);
    assert_int_equal(lapict_bm_node_detach(&a.nodes[0]), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_node_attach(&a.nodes[0], &b.cpu), LAPICT_OK);
    assert_true(lapict_bm_node_armed(&a.nodes[0], &at));
    assert_int_equal(at, t0 + 500);
    assert_int_equal(b.hw.deadline, 500);
    assert_int_equal(lapict_bm_node_attach(&a.nodes[0], &b.cpu),
                     LAPICT_E_INVAL);
    /* A full CPU refuses a node; it stays detached with its deadline. */
    lapict_bm_arm(&a.nodes[1], t0 + 300);
    assert_int_equal(lapict_bm_node_detach(&a.nodes[1]), LAPICT_OK);
    assert_int_equal(lapict_bm_node_attach(&a.nodes[1], &b.cpu),
                     LAPICT_E_INVAL);
    assert_true(lapict_bm_node_armed(&a.nodes[1], &at));
    assert_int_equal(at, t0 + 300);
    assert_int_equal(lapict_bm_node_attach(&a.nodes[1], &a.cpu), LAPICT_OK);
    fake_run(&a.hw, 600);
    fake_run(&b.hw, 600);
    assert_int_equal(nfire, 2);
    assert_int_equal(fire_log[0], 1);
    assert_int_equal(fire_log[1], 0);
    /* Detached unarmed: attach leaves it unarmed. */
    assert_int_equal(lapict_bm_node_detach(&a.nodes[0]), LAPICT_OK);
    assert_int_equal(lapict_bm_node_attach(&a.nodes[0], &a.cpu), LAPICT_OK);
    assert_false(lapict_bm_node_armed(&a.nodes[0], NULL));
}

/* Rule: host misuse returns LAPICT_E_INVAL, nothing else happens. */
static void invalid_arguments(void **state)
{
    static struct rig r;
    struct lapict_bm_cpu_config cc = {0};
    struct lapict_bm_hw bad = fake_ops;
    struct lapict_bm_cpu cpu;
    struct lapict_bm_node n;
    struct lapict_bm_stats st;
    unsigned i;
    (void)state;
    rig_init(&r, 1000000u, 0, 0, 4);
    cc.clock = &r.clk;
    assert_int_equal(lapict_bm_cpu_init(NULL, &cc, &fake_ops, NULL, r.slots,
                                        LAPICT_BM_SLOTS(1)),
                     LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_cpu_init(&cpu, &cc, &fake_ops, NULL, r.slots, 0),
                     LAPICT_E_INVAL);
    /* No room for a node after the spare slots. */
    assert_int_equal(lapict_bm_cpu_init(&cpu, &cc, &fake_ops, NULL, r.slots,
                                        LAPICT_BM_SLOTS(0)),
                     LAPICT_E_INVAL);
    bad.eoi = NULL;
    assert_int_equal(
        lapict_bm_cpu_init(&cpu, &cc, &bad, NULL, r.slots, LAPICT_BM_SLOTS(1)),
        LAPICT_E_INVAL);
    bad = fake_ops;
    bad.version = 0;
    assert_int_equal(
        lapict_bm_cpu_init(&cpu, &cc, &bad, NULL, r.slots, LAPICT_BM_SLOTS(1)),
        LAPICT_E_INVAL);
    cc.clock = NULL;
    assert_int_equal(lapict_bm_cpu_init(&cpu, &cc, &fake_ops, NULL, r.slots,
                                        LAPICT_BM_SLOTS(1)),
                     LAPICT_E_INVAL);
    memset(&n, 0, sizeof(n));
    assert_int_equal(lapict_bm_arm(&n, 0), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_cancel(&n), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_arm(NULL, 0), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_node_detach(NULL), LAPICT_E_INVAL);
    assert_int_equal(
        lapict_bm_node_init(&n, NULL, NULL, LAPICT_BM_RATIO_ONE, 0, NULL),
        LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_timer_irq(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_preempt_exit(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_guest_entry(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_stats_get(&r.cpu, NULL), LAPICT_E_INVAL);
    assert_null(lapict_bm_node_user(NULL));
    assert_false(lapict_bm_node_armed(NULL, NULL));
    lapict_bm_ops_fill(NULL, NULL, NULL);
    /* A full CPU refuses a node at init; detach frees its slot. */
    cc.clock = &r.clk;
    assert_int_equal(lapict_bm_cpu_init(&r.cpu, &cc, &fake_ops, &r.hw, r.slots,
                                        LAPICT_BM_SLOTS(3)),
                     LAPICT_OK);
    for (i = 0; i < 3; i++) {
        assert_int_equal(lapict_bm_node_init(&r.nodes[i], &r.cpu, NULL,
                                             LAPICT_BM_RATIO_ONE, 0, NULL),
                         LAPICT_OK);
        assert_int_equal(lapict_bm_arm(&r.nodes[i], 100 + i), LAPICT_OK);
    }
    assert_int_equal(lapict_bm_node_init(&r.nodes[3], &r.cpu, NULL,
                                         LAPICT_BM_RATIO_ONE, 0, NULL),
                     LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_arm(&r.nodes[2], 50), LAPICT_OK);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.armed, 3);
    assert_int_equal(st.nodes, 3);
    assert_int_equal(st.capacity, 3);
    assert_int_equal(lapict_bm_node_detach(&r.nodes[0]), LAPICT_OK);
    assert_int_equal(lapict_bm_node_init(&r.nodes[3], &r.cpu, NULL,
                                         LAPICT_BM_RATIO_ONE, 0, NULL),
                     LAPICT_OK);
    assert_int_equal(lapict_bm_arm(&r.nodes[3], 50), LAPICT_OK);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.armed, 3);
    assert_int_equal(st.nodes, 3);
    /* Loading and putting a node are host calls on a valid node. */
    assert_int_equal(lapict_bm_node_load(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_node_put(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_node_load(&r.nodes[0]), LAPICT_E_INVAL);
}

/* ---- no timer lost: a full CPU, a detached node ----------------------------
 */

static unsigned lost_fired[8];

static bool lost_inject(void *ctx, uint8_t vector)
{
    unsigned i = (unsigned)(uintptr_t)lapict_bm_node_user(ctx);
    assert_int_equal(vector, VEC);
    assert_true(i < 8);
    lost_fired[i]++;
    return true;
}

/* A one-shot lapict instance on @node, TMICT @count at divide 1. */
static void lost_instance(struct lapict_timer *t, struct lapict_bm_node *node,
                          const struct lapict_ops *ops, uint32_t count)
{
    struct lapict_config c;
    lapict_config_default(&c);
    c.tsc_khz = 1000000u;
    assert_int_equal(lapict_init(t, &c, ops, node), LAPICT_OK);
    assert_int_equal(lapict_tdcr_write(t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC),
                     LAPICT_OK);
    assert_int_equal(lapict_tmict_write(t, count), LAPICT_OK);
}

/* Rule: arming a node cannot fail (a timer interrupt is never lost): a node
 * holds its heap slot from init, so a CPU whose slots are all taken refuses
 * the next node at init, where the host sees the error, and every instance
 * on an accepted node fires. */
static void full_cpu_refuses_node_loses_no_timer(void **state)
{
    static struct rig r;
    struct lapict_bm_cpu_config cc = {0};
    struct lapict_ops ops;
    struct lapict_timer t[4];
    int rc[4];
    unsigned i, made = 0;
    (void)state;
    rig_init(&r, 1000000u, 0, 0, 0);
    cc.clock = &r.clk;
    /* Room for three nodes. */
    assert_int_equal(lapict_bm_cpu_init(&r.cpu, &cc, &fake_ops, &r.hw, r.slots,
                                        LAPICT_BM_SLOTS(3)),
                     LAPICT_OK);
    lapict_bm_ops_fill(&ops, lost_inject, NULL);
    memset(lost_fired, 0, sizeof(lost_fired));
    for (i = 0; i < 4; i++) {
        rc[i] =
            lapict_bm_node_init(&r.nodes[i], &r.cpu, &t[i], LAPICT_BM_RATIO_ONE,
                                0, (void *)(uintptr_t)i);
        if (rc[i] != LAPICT_OK)
            continue;
        made++;
        lost_instance(&t[i], &r.nodes[i], &ops, 100 + 10 * i);
    }
    fake_run(&r.hw, 10000);
    /* Every instance that exists got its interrupt, once. */
    for (i = 0; i < 4; i++)
        if (rc[i] == LAPICT_OK)
            assert_int_equal(lost_fired[i], 1);
    /* The fourth node was refused at init, not its arm later. */
    assert_int_equal(made, 3);
    assert_int_equal(rc[3], LAPICT_E_INVAL);
}

/* Rule: every op of a detached node (a vCPU between two CPUs) has a defined
 * result: the clocks read on (the TSC is synchronised), an arm is kept and
 * the next attach arms it, a cancel drops it. Nothing is dereferenced that
 * detach cleared. */
static void ops_of_detached_node_are_defined(void **state)
{
    static struct rig a, b;
    struct lapict_bm_cpu_config cc = {0};
    struct lapict_ops ops;
    struct lapict_bm_node *n;
    struct lapict_timer t;
    uint64_t now, at;
    (void)state;
    rig_init(&a, 1000000u, 0, 0, 0);
    rig_init(&b, 1000000u, 0, 0, 0);
    cc.clock = &a.clk; /* one clock for both CPUs */
    assert_int_equal(
        lapict_bm_cpu_init(&b.cpu, &cc, &fake_ops, &b.hw, b.slots, 8),
        LAPICT_OK);
    lapict_bm_ops_fill(&ops, lost_inject, NULL);
    memset(lost_fired, 0, sizeof(lost_fired));
    n = &a.nodes[0];
    assert_int_equal(
        lapict_bm_node_init(n, &a.cpu, &t, LAPICT_BM_RATIO_ONE, 7, NULL),
        LAPICT_OK);
    lost_instance(&t, n, &ops, 1000);
    fake_run(&a.hw, 100);
    b.hw.tsc = a.hw.tsc;
    assert_int_equal(lapict_bm_node_detach(n), LAPICT_OK);
    now = lapict_bm_clock_ns(&a.clk, a.hw.tsc);
    assert_int_equal(ops.now_ns(n), now);
    assert_int_equal(ops.guest_tsc(n), a.hw.tsc + 7);
    assert_int_equal(ops.tsc_to_host_ns(n, a.hw.tsc + 7 + 50), now + 50);
    ops.spin_until(n, now); /* already reached: returns */
    /* The kept deadline is the instance's: TMICT 1000 from TSC 0. */
    assert_true(lapict_bm_node_armed(n, &at));
    assert_int_equal(at, 1000);
    /* An arm while detached replaces it; a cancel drops it. */
    ops.sw_timer_arm(n, now + 20);
    assert_true(lapict_bm_node_armed(n, &at));
    assert_int_equal(at, now + 20);
    ops.sw_timer_cancel(n);
    assert_false(lapict_bm_node_armed(n, NULL));
    /* The guest rewrites TMICT while its vCPU is in flight. */
    assert_int_equal(lapict_tmict_write(&t, 300), LAPICT_OK);
    assert_int_equal(lapict_bm_node_attach(n, &b.cpu), LAPICT_OK);
    assert_true(lapict_bm_node_armed(n, &at));
    assert_int_equal(at, now + 300);
    assert_true(b.hw.armed);
    fake_run(&b.hw, 299);
    assert_int_equal(lost_fired[0], 0);
    fake_run(&b.hw, 1);
    assert_int_equal(lost_fired[0], 1);
    fake_run(&b.hw, 10000);
    assert_int_equal(lost_fired[0], 1);
    assert_false(a.hw.armed);
}

/* ---- the core's hardware timer: the VMX-preemption timer ------------------
 */

/*
 * The loaded vCPU runs in the guest for @dt TSC ticks (a VM exit ends the
 * slice). Before each entry the host loads the preemption timer
 * (lapict_bm_guest_entry()); it counts down by one each time bit
 * preempt_shift of the TSC changes, so it exits at the earliest instant
 * the hardware allows; a count of 0 exits before the guest runs. The
 * physical LAPIC timer interrupts the guest as in fake_run(); as there, an
 * exit at the tick of the one before comes a tick later (handling one takes
 * time).
 */
static void guest_run(struct rig *r, struct lapict_timer *t, uint64_t dt)
{
    const unsigned shift = r->cpu.preempt_shift;
    uint64_t left = dt, last = 0;
    unsigned exits = 0;

    for (;;) {
        uint64_t d_pre = UINT64_MAX, d_irq = UINT64_MAX, d;
        unsigned w = r->hw.preempt_writes;
        assert_int_equal(lapict_bm_guest_entry(&r->cpu), LAPICT_OK);
        assert_int_equal(lapict_before_guest_entry(t), LAPICT_OK);
        if (r->hw.preempt_writes != w) {
            d_pre =
                ((((r->hw.tsc >> shift) + r->hw.preempt) << shift) - r->hw.tsc);
            /* 0 exits at once ("VMX-Preemption Timer"); between two steps
             * of the TSC the formula would wrap to nearly 2^64 ticks. */
            if (r->hw.preempt == 0)
                d_pre = 0;
        }
        if (r->hw.on_entry)
            r->hw.on_entry(&r->hw, r->hw.preempt_writes != w);
        if (r->hw.armed)
            d_irq = r->hw.deadline > r->hw.tsc ? r->hw.deadline - r->hw.tsc : 0;
        d = d_pre < d_irq ? d_pre : d_irq;
        if (d > left) {
            r->hw.tsc += left;
            return;
        }
        r->hw.tsc += d;
        left -= d;
        if (exits && r->hw.tsc == last && left) {
            r->hw.tsc++;
            left--;
        }
        last = r->hw.tsc;
        if (d_irq <= d_pre)
            fake_irq(&r->hw);
        else
            assert_int_equal(lapict_bm_preempt_exit(&r->cpu), LAPICT_OK);
        assert_true(++exits < 1000000u); /* no exit storm */
    }
}

static unsigned hv_fired;
static uint64_t hv_fired_ns[16];

static bool hv_inject(void *ctx, uint8_t vector)
{
    assert_int_equal(vector, VEC);
    if (hv_fired < 16)
        hv_fired_ns[hv_fired] =
            lapict_bm_now_ns(((struct lapict_bm_node *)ctx)->cpu);
    hv_fired++;
    return true;
}

/* Rule: with lapict_bm_ops_fill_preempt() the loaded vCPU's timer is the
 * core's hardware timer: its re-arms stay off the heap and never write
 * IA32_TSC_DEADLINE, it fires through preemption-timer exits, put moves
 * it to the heap (the physical timer watches a halted vCPU), load moves it
 * back, and a node that is not loaded refuses the hardware timer. */
static void preempt_timer_is_the_core_hv_timer(void **state)
{
    static struct rig r;
    struct lapict_ops ops;
    struct lapict_timer t;
    struct lapict_config c;
    struct lapict_bm_stats st;
    struct lapict_stats ts;
    struct lapict_bm_node *n;
    uint64_t at, t0;
    unsigned w;
    (void)state;
    rig_init(&r, 1000000u, 0, 0, 0);
    lapict_bm_ops_fill_preempt(&ops, hv_inject, NULL);
    assert_non_null(ops.hv_timer_arm);
    assert_non_null(ops.hv_timer_cancel);
    hv_fired = 0;
    n = &r.nodes[0];
    assert_int_equal(
        lapict_bm_node_init(n, &r.cpu, &t, LAPICT_BM_RATIO_ONE, 0, NULL),
        LAPICT_OK);
    lapict_config_default(&c);
    c.tsc_khz = 1000000u;
    assert_int_equal(lapict_init(&t, &c, &ops, n), LAPICT_OK);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | VEC),
                     LAPICT_OK);
    /* Not loaded: the hardware timer is refused, the heap takes it. */
    t0 = now_ns(&r);
    assert_int_equal(lapict_tmict_write(&t, 300000), LAPICT_OK);
    lapict_stats_get(&t, &ts, sizeof(ts));
    assert_int_equal(ts.hv_refused, 1);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.armed, 1);
    assert_true(r.hw.armed);
    /* Loaded: the core moves it to the preemption timer. */
    assert_int_equal(lapict_bm_node_load(n), LAPICT_OK);
    assert_int_equal(lapict_bm_node_load(n), LAPICT_OK); /* idempotent */
    lapict_stats_get(&t, &ts, sizeof(ts));
    assert_int_equal(ts.sw_to_hv, 1);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.armed, 0);
    assert_false(r.hw.armed);
    assert_true(lapict_bm_node_armed(n, &at));
    assert_int_equal(at, t0 + 300000);
    /* Ten periods in the guest: ten preemption exits, no MSR write. */
    w = r.hw.writes;
    guest_run(&r, &t, 10 * 300000 + 100);
    assert_int_equal(hv_fired, 10);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.preempt_fired, 10);
    assert_int_equal(st.irqs, 0);
    assert_int_equal(st.armed, 0);
    assert_int_equal(r.hw.writes, w);
    assert_int_equal(r.hw.eois, 0);
    /* Each on its grid point, late by less than the timer's 32-tick step
     * (1 GHz: ns = ticks); the next one is loaded. */
    for (w = 0; w < 10; w++) {
        uint64_t want = t0 + (w + 1) * 300000ull;
        assert_true(hv_fired_ns[w] >= want && hv_fired_ns[w] - want <= 32);
    }
    assert_int_equal(r.hw.preempt,
                     (t0 + 11 * 300000 - hv_fired_ns[9]) / 32 + 1);
    /* Put (halt): the heap and the physical timer take it. */
    assert_int_equal(lapict_bm_node_put(n), LAPICT_OK);
    lapict_stats_get(&t, &ts, sizeof(ts));
    assert_int_equal(ts.hv_to_sw, 1);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.armed, 1);
    assert_true(r.hw.armed);
    assert_int_equal(r.hw.deadline, t0 + 11 * 300000);
    /* Refused while put, even if the core asks (it does not: blocked). */
    assert_false(ops.hv_timer_arm(n, t0));
    fake_run(&r.hw, 2 * 300000);
    assert_int_equal(hv_fired, 12);
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.irqs, 2);
    /* Another node cannot be loaded while one is; detach wants a put. */
    assert_int_equal(lapict_bm_node_init(&r.nodes[1], &r.cpu, NULL,
                                         LAPICT_BM_RATIO_ONE, 0, NULL),
                     LAPICT_OK);
    assert_int_equal(lapict_bm_node_load(n), LAPICT_OK);
    assert_int_equal(lapict_bm_node_load(&r.nodes[1]), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_node_detach(n), LAPICT_E_INVAL);
    assert_int_equal(lapict_bm_node_put(n), LAPICT_OK);
    assert_int_equal(lapict_bm_node_detach(n), LAPICT_OK);
    assert_true(lapict_bm_node_armed(n, &at));
    assert_int_equal(at, t0 + 13 * 300000);
    /* Without a write_preempt op the CPU has no hardware timer. */
    {
        static struct rig r2;
        struct lapict_bm_hw nop = fake_ops;
        struct lapict_bm_cpu_config cc = {0};
        nop.write_preempt = NULL;
        rig_init(&r2, 1000000u, 0, 0, 0);
        cc.clock = &r2.clk;
        assert_int_equal(lapict_bm_cpu_init(&r2.cpu, &cc, &nop, &r2.hw,
                                            r2.slots, LAPICT_BM_SLOTS(1)),
                         LAPICT_OK);
        assert_int_equal(lapict_bm_node_init(&r2.nodes[0], &r2.cpu, NULL,
                                             LAPICT_BM_RATIO_ONE, 0, NULL),
                         LAPICT_OK);
        assert_int_equal(lapict_bm_node_load(&r2.nodes[0]), LAPICT_OK);
        assert_false(ops.hv_timer_arm(&r2.nodes[0], 100));
        /* A deadline left off the heap at put goes back to it. */
        r2.cpu.hw = &fake_ops;
        assert_true(ops.hv_timer_arm(&r2.nodes[0], 100));
        assert_int_equal(lapict_bm_node_put(&r2.nodes[0]), LAPICT_OK);
        assert_true(lapict_bm_node_armed(&r2.nodes[0], &at));
        assert_int_equal(at, 100);
        assert_int_equal(r2.hw.deadline, 100);
    }
}

#define KP 8

/* Rule: KP instances scheduled on one CPU, one loaded at a time (random
 * slices in the guest, halts in between): the loaded one on the
 * preemption timer, the others in the heap. Every delivery at or after
 * its architectural instant, late by at most one preemption-timer step,
 * none lost, none doubled. */
static void preempt_scheduled_instances(void **state)
{
    size_t b;
    (void)state;
    for (b = 0; b < NBASES; b++) {
        static struct rig r;
        struct lapict_ops ops;
        struct lapict_bm_stats st;
        uint64_t end, now, to_hv = 0, to_sw = 0;
        unsigned i, step;
        rng_state = 91 + b;
        e2e = &r;
        e2e_deliveries = 0;
        /* 2 GHz: a 32-tick step of the preemption timer is 16 ns. */
        e2e_slack_ns = 16;
        e2e_slack_tsc = 32;
        rig_init(&r, 2000000u, bases[b], bases[b], 0);
        lapict_bm_ops_fill_preempt(&ops, e2e_inject, NULL);
        for (i = 0; i < KP; i++) {
            struct vcpu *v = &vcpus[i];
            struct lapict_config c;
            uint64_t off = b == 0 ? 1000 * i : (uint64_t)0 - bases[b];
            memset(v, 0, sizeof(*v));
            v->mode = i % 3;
            v->div = div_of[i % 8];
            assert_int_equal(lapict_bm_node_init(&r.nodes[i], &r.cpu, &v->t,
                                                 LAPICT_BM_RATIO_ONE, off,
                                                 (void *)(uintptr_t)i),
                             LAPICT_OK);
            lapict_config_default(&c);
            c.tsc_khz = 2000000u;
            assert_int_equal(lapict_init(&v->t, &c, &ops, &r.nodes[i]),
                             LAPICT_OK);
            /* Not running yet. */
            assert_int_equal(lapict_bm_node_put(&r.nodes[i]), LAPICT_OK);
            assert_int_equal(lapict_tdcr_write(&v->t, tdcr_of[i % 8]),
                             LAPICT_OK);
            assert_int_equal(lapict_lvtt_write(&v->t, e2e_lvtt(v, i)),
                             LAPICT_OK);
            e2e_start(i);
        }
        end = now_ns(&r) + 200000000u; /* 0.2 s of host time */
        for (step = 0;; step++) {
            unsigned run = (unsigned)rnd_below(KP);
            assert_int_equal(lapict_bm_node_load(&r.nodes[run]), LAPICT_OK);
            /* Rewrites by the running guest go to the preemption timer. */
            if (!vcpus[run].armed && vcpus[run].mode != M_PERIODIC)
                e2e_start(run);
            guest_run(&r, &vcpus[run].t, 1 + rnd_below(1000000));
            assert_int_equal(lapict_bm_node_put(&r.nodes[run]), LAPICT_OK);
            if (rnd_below(4) == 0)
                fake_run(&r.hw, rnd_below(400000)); /* all halted */
            now = now_ns(&r);
            if ((int64_t)(now - end) >= 0)
                break;
            for (i = 0; i < KP; i++) {
                struct vcpu *v = &vcpus[i];
                if (!v->armed && v->mode != M_PERIODIC)
                    e2e_start(i);
                else if (v->mode == M_PERIODIC && rnd_below(500) == 0)
                    e2e_start(i);
            }
        }
        for (i = 0; i < KP; i++) {
            struct vcpu *v = &vcpus[i];
            struct lapict_stats ts;
            if (v->mode == M_DEADLINE)
                assert_false(v->armed && lapict_bm_guest_tsc(&r.nodes[i]) >=
                                             v->deadline_tsc);
            else if (v->mode == M_ONESHOT)
                assert_false(v->armed && (int64_t)(now - (v->anchor_ns +
                                                          v->period_ns)) >= 0);
            else
                assert_int_equal(v->k, (now - v->anchor_ns) / v->period_ns);
            assert_true(v->deliveries > 0);
            lapict_stats_get(&v->t, &ts, sizeof(ts));
            to_hv += ts.sw_to_hv;
            to_sw += ts.hv_to_sw;
        }
        lapict_bm_stats_get(&r.cpu, &st);
        print_message("base %zu: %llu deliveries (%llu by preemption exits) "
                      "over %u slices, %llu/%llu moves to/from it\n",
                      b, (unsigned long long)e2e_deliveries,
                      (unsigned long long)st.preempt_fired, step,
                      (unsigned long long)to_hv, (unsigned long long)to_sw);
        assert_true(e2e_deliveries > 1000);
        assert_true(st.preempt_fired > 100);
        assert_true(st.fired - st.preempt_fired > 100);
        assert_true(to_hv > 100 && to_sw > 100);
        e2e_slack_ns = e2e_slack_tsc = 0;
    }
}

/* ---- the preemption timer's rate ------------------------------------------
 */

/* Host TSC of the rate cases: 1 GHz, a tick is a ns. */
#define PR_KHZ 1000000u
/*
 * One-shot counts of 2^32 ticks and more: a 32 GHz TSC (a ns is 32 ticks)
 * and a 1 kHz bus divided by 128, so that a TMICT count is 2^12 * 10^6
 * ticks and 2^32 - 1 of them reach past 2^63 ticks, one beyond the
 * largest preemption-timer count at X = 31.
 */
#define PR_FAST_KHZ 32000000u
#define PR_FAST_TICKS (128ull * 1000000u * 32u)

/* The distances of a case, in host ticks from the VM entry. */
enum {
    PR_ONE,       /* 1 tick */
    PR_STEP_LESS, /* 2^X - 1 (none at X = 0) */
    PR_STEP,      /* 2^X */
    PR_STEP_MORE, /* 2^X + 1 */
    PR_LARGE,     /* 0x5a5a5a5a steps and a half: well inside 32 bits */
    PR_LAST_FITS, /* (2^32 - 1) << X, less a tick: the largest count's
                   * reach from a multiple of 2^X */
    PR_BEYOND,    /* 2^32 << X: one beyond the largest count */
    PR_NDIST
};

static uint64_t pr_distance(unsigned kind, unsigned x)
{
    uint64_t step = 1ull << x;

    switch (kind) {
    case PR_ONE:
        return 1;
    case PR_STEP_LESS:
        return step - 1;
    case PR_STEP:
        return step;
    case PR_STEP_MORE:
        return step + 1;
    case PR_LARGE:
        return (0x5a5a5a5aull << x) + step / 2 + 1;
    case PR_LAST_FITS:
        return ((uint64_t)UINT32_MAX << x) - 1;
    default:
        return (1ull << 32) << x;
    }
}

/*
 * The failed properties of a table-driven test's current case: each one
 * said (the first say_max of a test) and counted, so that one run reports
 * every failing case, not only the first.
 */
struct case_log {
    char what[128]; /* the case, printed before each message */
    unsigned bad, say_max;
};

static void case_fail(struct case_log *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void case_fail(struct case_log *l, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (l->bad < l->say_max)
        print_message("%s: %s\n", l->what, msg);
    l->bad++;
}

static struct case_log pr_log = {.say_max = 40};
static struct rig *pr_rig;
/* The case: VM entry TSC, the architectural instant (host TSC, and host
 * ns for a one-shot), its mode. */
static uint64_t pr_entry_tsc, pr_instant_tsc, pr_instant_ns, pr_deadline;
static unsigned pr_mode;
/* Per case: deliveries, entries; the last entry's target and load. */
static unsigned pr_injected, pr_entries;
static uint64_t pr_target_ns;
static bool pr_saturated;
/* Over all cases, for the summary. */
static unsigned pr_early_exits, pr_saturated_loads, pr_max_exits;

/* Ticks from the VM entry to @tsc (the TSC may wrap on the way). */
static uint64_t pr_since_entry(uint64_t tsc)
{
    return tsc - pr_entry_tsc;
}

static bool pr_inject(void *ctx, uint8_t vector)
{
    const unsigned x = pr_rig->cpu.preempt_shift;
    uint64_t tsc = pr_rig->hw.tsc;
    uint64_t at = pr_since_entry(tsc), want = pr_since_entry(pr_instant_tsc);

    assert_int_equal(vector, VEC);
    /* What the guest can tell: its TSC, or the host time of the count. */
    if (pr_mode == M_DEADLINE && lapict_bm_guest_tsc(ctx) < pr_deadline)
        case_fail(&pr_log, "injected at guest TSC %#llx, deadline %#llx",
                  (unsigned long long)lapict_bm_guest_tsc(ctx),
                  (unsigned long long)pr_deadline);
    if (pr_mode == M_ONESHOT &&
        (int64_t)(lapict_bm_now_ns(&pr_rig->cpu) - pr_instant_ns) < 0)
        case_fail(&pr_log, "injected %lld ns before the instant",
                  (long long)(pr_instant_ns - lapict_bm_now_ns(&pr_rig->cpu)));
    if (at < want)
        case_fail(&pr_log, "injected at entry + %llu ticks, instant at + %llu",
                  (unsigned long long)at, (unsigned long long)want);
    else if (at - want > (1ull << x))
        case_fail(&pr_log, "injected %llu ticks late, one step is %llu",
                  (unsigned long long)(at - want), 1ull << x);
    if (pr_injected++)
        case_fail(&pr_log, "injected twice");
    return true;
}

/*
 * At each VM entry before the delivery: the instant is still ahead (an
 * exit at or after it delivers), and the preemption timer is loaded again
 * for the core's deadline. A count the target needs (from this TSC, with
 * its phase) that fits in 32 bits ends within one step of the target; one
 * that does not is the largest count, never a truncated one.
 */
static void pr_on_entry(struct fake_hw *f, bool loaded)
{
    const struct lapict_bm_node *n = &pr_rig->nodes[0];
    const unsigned x = pr_rig->cpu.preempt_shift;
    const uint64_t step = 1ull << x, tsc = f->tsc, phase = tsc & (step - 1);
    uint64_t at, d, end;
    u128 need;

    pr_entries++;
    if (pr_injected)
        return;
    if (pr_since_entry(tsc) >= pr_since_entry(pr_instant_tsc))
        case_fail(&pr_log,
                  "entry %u at + %llu ticks: the instant passed, no delivery",
                  pr_entries, (unsigned long long)pr_since_entry(tsc));
    if (!lapict_bm_node_armed(n, &at) || !loaded) {
        case_fail(&pr_log,
                  "entry %u at + %llu ticks: preemption timer not loaded",
                  pr_entries, (unsigned long long)pr_since_entry(tsc));
        return;
    }
    /* An exit before the last entry's target, not a saturated count. */
    if (pr_entries > 1 && !pr_saturated && at == pr_target_ns)
        pr_early_exits++;
    pr_target_ns = at;
    pr_saturated = false;
    if ((int64_t)(lapict_bm_clock_ns(&pr_rig->clk, tsc) - at) >= 0) {
        if (f->preempt != 0)
            case_fail(&pr_log, "entry %u: target reached, count %u", pr_entries,
                      f->preempt);
        return;
    }
    d = lapict_bm_clock_tsc(&pr_rig->clk, at) - tsc;
    /* The fewest steps that end at or after the target. */
    need = ((u128)d + phase + step - 1) >> x;
    if (need > UINT32_MAX) {
        pr_saturated = true;
        pr_saturated_loads++;
        if (f->preempt != UINT32_MAX)
            case_fail(&pr_log,
                      "entry %u: count %u for %llu ticks (%llu steps): not "
                      "the largest",
                      pr_entries, f->preempt, (unsigned long long)d,
                      (unsigned long long)need);
        return;
    }
    /* As guest_run() models it: the count's last step. */
    end = f->preempt ? (((tsc >> x) + f->preempt) << x) - tsc : 0;
    if (f->preempt == 0 || end + step <= d || end > d + step)
        case_fail(&pr_log,
                  "entry %u at phase %llu: count %u ends at + %llu ticks, "
                  "target at + %llu",
                  pr_entries, (unsigned long long)phase, f->preempt,
                  (unsigned long long)end, (unsigned long long)d);
}

/*
 * One case: rate X = @x, TSC fixture @b, the VM entry at @phase from a
 * multiple of 2^X (the first after 0, or the last before 2^64), a @mode
 * expiry @kind ticks away.
 */
static void pr_case(size_t b, unsigned x, int phase, unsigned mode,
                    unsigned kind)
{
    static struct rig r;
    struct lapict_bm_cpu_config cc = {0};
    struct lapict_bm_node *n = &r.nodes[0];
    struct lapict_bm_stats st;
    struct lapict_ops ops;
    struct lapict_timer t;
    struct lapict_config c;
    const uint64_t step = 1ull << x, dist = pr_distance(kind, x);
    const bool fast = mode == M_ONESHOT && dist > UINT32_MAX;
    uint64_t m = b == 0 ? step : (uint64_t)0 - step, base, d, bound;

    pr_entry_tsc = m + (uint64_t)(int64_t)phase;
    base = b == 0 ? 0 : m - 1 < NEAR_WRAP ? m - 1 : NEAR_WRAP;
    rig_init(&r, fast ? PR_FAST_KHZ : PR_KHZ, base, base, 0);
    cc.clock = &r.clk;
    cc.preempt_shift = x;
    assert_int_equal(lapict_bm_cpu_init(&r.cpu, &cc, &fake_ops, &r.hw, r.slots,
                                        LAPICT_BM_SLOTS(1)),
                     LAPICT_OK);
    /* The guest TSC starts at 0, at the host's rate. */
    assert_int_equal(lapict_bm_node_init(n, &r.cpu, &t, LAPICT_BM_RATIO_ONE,
                                         (uint64_t)0 - base, NULL),
                     LAPICT_OK);
    lapict_bm_ops_fill_preempt(&ops, pr_inject, NULL);
    lapict_config_default(&c);
    c.tsc_khz = fast ? PR_FAST_KHZ : PR_KHZ;
    if (fast)
        c.bus_hz = LAPICT_BUS_HZ_MIN;
    assert_int_equal(lapict_init(&t, &c, &ops, n), LAPICT_OK);
    assert_int_equal(lapict_bm_node_put(n), LAPICT_OK);
    /* Divide by 128, or by 1. */
    assert_int_equal(lapict_tdcr_write(&t, fast ? 0xA : 0xB), LAPICT_OK);
    assert_int_equal(
        lapict_lvtt_write(&t, (mode == M_DEADLINE ? LAPICT_LVTT_TSC_DEADLINE
                                                  : LAPICT_LVTT_ONESHOT) |
                                  VEC),
        LAPICT_OK);

    /* The vCPU runs: the guest arms its timer in the exit before the
     * entry, on the preemption timer. */
    r.hw.tsc = pr_entry_tsc;
    assert_int_equal(lapict_bm_node_load(n), LAPICT_OK);
    pr_rig = &r;
    pr_mode = mode;
    pr_injected = pr_entries = 0;
    pr_saturated = false;
    if (mode == M_DEADLINE) {
        pr_deadline = lapict_bm_guest_tsc(n) + dist;
        pr_instant_tsc = pr_entry_tsc + dist;
        assert_int_equal(lapict_tsc_deadline_write(&t, pr_deadline), LAPICT_OK);
    } else {
        uint64_t cnt = fast ? (dist + PR_FAST_TICKS - 1) / PR_FAST_TICKS : dist;
        pr_instant_ns = now_ns(&r) + (fast ? cnt * 128u * 1000000u : cnt);
        pr_instant_tsc = lapict_bm_clock_tsc(&r.clk, pr_instant_ns);
        assert_int_equal(lapict_tmict_write(&t, (uint32_t)cnt), LAPICT_OK);
    }
    lapict_bm_stats_get(&r.cpu, &st);
    assert_int_equal(st.armed, 0);
    assert_false(r.hw.armed);
    assert_true(lapict_bm_node_armed(n, NULL));

    d = pr_since_entry(pr_instant_tsc);
    snprintf(pr_log.what, sizeof(pr_log.what),
             "X %u, %s, entry TSC %#llx, %s %llu ticks ahead", x,
             b ? "near 2^64" : "from 0", (unsigned long long)pr_entry_tsc,
             mode == M_DEADLINE ? "TSC deadline" : "one-shot",
             (unsigned long long)d);
    r.hw.on_entry = pr_on_entry;
    guest_run(&r, &t, d + 2 * step + 2);
    r.hw.on_entry = NULL;
    if (pr_injected != 1)
        case_fail(&pr_log, "%u deliveries", pr_injected);
    /*
     * The exits: the one that delivers; per target the adapter loads (the
     * instant, or a re-check at lapict's horizon for a TSC deadline more
     * than 2^62 ns, here ticks, ahead: at most one per 2^62 ticks), at
     * most one that the entry's phase brings less than a step early (the
     * next entry is then within a step of the target, where a count of 1
     * ends past it), and the re-check's own; one per saturated count,
     * each at least ((2^32 - 2) << X) + 1 ticks long.
     */
    lapict_bm_stats_get(&r.cpu, &st);
    bound = 2 + d / ((((uint64_t)UINT32_MAX - 1) << x) + 1) +
            (mode == M_DEADLINE ? 2 * (d >> 62) : 0);
    if (st.preempt_exits > bound)
        case_fail(&pr_log, "%llu preemption-timer exits, at most %llu wanted",
                  (unsigned long long)st.preempt_exits,
                  (unsigned long long)bound);
    if (st.preempt_exits > pr_max_exits)
        pr_max_exits = (unsigned)st.preempt_exits;
    if (lapict_bm_node_armed(n, NULL))
        case_fail(&pr_log, "still armed after the delivery");
    assert_int_equal(lapict_bm_node_put(n), LAPICT_OK);
}

/*
 * Rule: the VMX-preemption timer counts down by one each time bit X of
 * the TSC changes, X = IA32_VMX_MISC[4:0] ("VMX-Preemption Timer"), so a
 * count's first step comes 1 to 2^X ticks after the VM entry, by the
 * TSC's phase. At every X from 0 to 31, with the entry at, just after and
 * just before a multiple of 2^X (from 0, and near 2^64), one-shot and
 * TSC-deadline expiries 1, 2^X - 1, 2^X, 2^X + 1 ticks away, a large
 * count, the largest count and one beyond it: the guest never gets the
 * interrupt before its architectural instant, nor more than one step
 * after; an exit before the instant only reloads the timer; an expiry d
 * ticks away takes at most 2 + d / (((2^32 - 2) << X) + 1) exits, 2 more
 * per re-check at lapict's horizon (see pr_case()); and a count beyond 32
 * bits loads the largest one, never a truncated, earlier one.
 */
static void preemption_timer_rate_every_shift(void **state)
{
    static const int phases[] = {0, 1, -1};
    static const unsigned modes[] = {M_ONESHOT, M_DEADLINE};
    size_t b, p, m;
    unsigned x, k, cases = 0;
    (void)state;
    pr_log.bad = pr_early_exits = pr_saturated_loads = pr_max_exits = 0;
    for (x = 0; x < 32; x++)
        for (b = 0; b < NBASES; b++)
            for (p = 0; p < sizeof(phases) / sizeof(phases[0]); p++)
                for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
                    for (k = 0; k < PR_NDIST; k++) {
                        if (pr_distance(k, x) == 0)
                            continue;
                        pr_case(b, x, phases[p], modes[m], k);
                        cases++;
                    }
    print_message("%u cases: %u exits before their target, %u saturated "
                  "counts, at most %u exits per expiry\n",
                  cases, pr_early_exits, pr_saturated_loads, pr_max_exits);
    assert_int_equal(pr_log.bad, 0);
}

/* ---- far deadlines --------------------------------------------------------
 */

/* The rates of a far-deadline case: host TSC, guest TSC (kHz). */
struct far_rates {
    uint32_t host_khz, guest_khz;
};

static const struct far_rates far_rates[] = {
    {1000000u, 1000000u},   {3000000u, 3000000u},  {3000000u, 1000000u},
    {30000000u, 30000000u}, {30000000u, 1000000u},
};
static const uint32_t far_shifts[] = {0, 5};
/* The guest's IA32_TSC_DEADLINE, from a guest TSC of 0. */
static const uint64_t far_deadlines[] = {UINT64_MAX, 1ull << 62};
/* Host ticks of the long run: half the clock's range. */
#define FAR_RUN_TICKS (1ull << 63)

static struct case_log far_log = {.say_max = UINT_MAX};
static uint64_t far_deadline_tsc, far_late_tsc;
static unsigned far_injected;

#define far_check(c)                                                           \
    do {                                                                       \
        if (!(c))                                                              \
            case_fail(&far_log, "%s", #c);                                     \
    } while (0)

static bool far_inject(void *ctx, uint8_t vector)
{
    uint64_t g = lapict_bm_guest_tsc(ctx);

    assert_int_equal(vector, VEC);
    if (g < far_deadline_tsc)
        case_fail(&far_log, "injected at guest TSC %#llx, before the deadline",
                  (unsigned long long)g);
    far_late_tsc = g - far_deadline_tsc;
    far_injected++;
    return true;
}

/*
 * The physical TSC deadline is armed far ahead of the TSC (a reached one
 * is written as the TSC, or 1 at TSC 0), or at the TSC's wrap.
 */
static void far_check_hw_ahead(const struct rig *r, const char *when)
{
    if (!r->hw.armed || r->hw.deadline <= r->hw.tsc ||
        (r->hw.deadline != UINT64_MAX &&
         r->hw.deadline - r->hw.tsc < (1ull << 40)))
        case_fail(&far_log, "%s: IA32_TSC_DEADLINE %#llx (%s) at TSC %#llx",
                  when, (unsigned long long)r->hw.deadline,
                  r->hw.armed ? "armed" : "disarmed",
                  (unsigned long long)r->hw.tsc);
}

/* One case: a guest at @fr's rates writes @deadline from a guest TSC of 0. */
static void far_case(const struct far_rates *fr, size_t b, uint32_t shift,
                     uint64_t deadline)
{
    /* Interrupts of the long run: one per 2^62 ticks, one at the wrap. */
    const unsigned most = (unsigned)(FAR_RUN_TICKS >> 62) + 1;
    static struct rig r;
    struct lapict_bm_cpu_config cc = {0};
    struct lapict_bm_node *n = &r.nodes[0];
    struct lapict_bm_stats st;
    struct lapict_ops ops;
    struct lapict_timer t;
    struct lapict_config c;
    uint64_t ratio;
    unsigned irqs;
    bool reached;

    snprintf(far_log.what, sizeof(far_log.what),
             "host %u MHz, guest %u MHz, base %zu, shift %u, deadline %#llx",
             fr->host_khz / 1000u, fr->guest_khz / 1000u, b, shift,
             (unsigned long long)deadline);
    rig_init(&r, fr->host_khz, bases[b], bases[b], 0);
    cc.clock = &r.clk;
    cc.preempt_shift = shift;
    assert_int_equal(lapict_bm_cpu_init(&r.cpu, &cc, &fake_ops, &r.hw, r.slots,
                                        LAPICT_BM_SLOTS(1)),
                     LAPICT_OK);
    ratio =
        (uint64_t)((u128)LAPICT_BM_RATIO_ONE * fr->guest_khz / fr->host_khz);
    assert_int_equal(
        lapict_bm_node_init(n, &r.cpu, &t, ratio, (uint64_t)0 - bases[b], NULL),
        LAPICT_OK);
    assert_int_equal(lapict_bm_guest_tsc(n), 0);
    lapict_bm_ops_fill_preempt(&ops, far_inject, NULL);
    lapict_config_default(&c);
    c.tsc_khz = fr->guest_khz;
    assert_int_equal(lapict_init(&t, &c, &ops, n), LAPICT_OK);
    assert_int_equal(lapict_bm_node_put(n), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC),
                     LAPICT_OK);
    far_deadline_tsc = deadline;
    far_injected = 0;
    assert_int_equal(lapict_tsc_deadline_write(&t, deadline), LAPICT_OK);

    /* Halted: the heap, behind the physical timer. */
    lapict_bm_stats_get(&r.cpu, &st);
    far_check(far_injected == 0);
    far_check(st.past_writes == 0);
    far_check_hw_ahead(&r, "armed");

    /* Running: the preemption timer, at its largest count at each entry
     * (a count of 0 exits at once, at every entry: not run). */
    assert_int_equal(lapict_bm_node_load(n), LAPICT_OK);
    assert_int_equal(lapict_bm_guest_entry(&r.cpu), LAPICT_OK);
    if (r.hw.preempt != UINT32_MAX) {
        case_fail(&far_log, "preemption timer loaded with %u", r.hw.preempt);
    } else {
        guest_run(&r, &t, 64 * ((uint64_t)UINT32_MAX << shift));
        lapict_bm_stats_get(&r.cpu, &st);
        far_check(far_injected == 0);
        far_check(st.preempt_exits >= 63 && st.preempt_exits <= 65);
    }
    assert_int_equal(lapict_bm_node_put(n), LAPICT_OK);
    far_check_hw_ahead(&r, "after the guest ran");

    /* Halted for the rest of the long run; a storm ends at the cap. */
    irqs = r.hw.irqs;
    r.hw.irq_cap = irqs + most + 1;
    fake_run(&r.hw, FAR_RUN_TICKS - (r.hw.tsc - bases[b]));
    r.hw.irq_cap = 0;
    if (r.hw.irqs - irqs > most)
        case_fail(&far_log,
                  "%u host timer interrupts in the run, at most %u wanted; "
                  "IA32_TSC_DEADLINE %#llx at TSC %#llx",
                  r.hw.irqs - irqs, most, (unsigned long long)r.hw.deadline,
                  (unsigned long long)r.hw.tsc);
    reached = lapict_bm_guest_tsc(n) >= deadline;
    far_check(far_injected == (reached ? 1u : 0u));
    far_check(!reached || far_late_tsc <= 2);
    lapict_bm_stats_get(&r.cpu, &st);
    far_check(st.past_writes == 0);
    if (!reached)
        far_check_hw_ahead(&r, "after the run");
}

/*
 * Rule: a TSC deadline as far as the guest likes (IA32_TSC_DEADLINE =
 * 2^64 - 1, or 2^62 guest ticks ahead; lapict's horizon, 2^62 ns, is more
 * than 2^63 host ticks above 2 GHz and more than the clock's 2^64 ticks at
 * 30 GHz) is "not yet": the physical TSC deadline is armed ahead of the TSC,
 * the VMX-preemption timer at its largest count, and when either is reached
 * without the deadline being due, the handler re-arms. Nothing is injected
 * before the deadline, the interrupt at it is on time, a run of 2^63 host
 * ticks takes at most one host timer interrupt per 2^62 ticks (the
 * horizon) plus one at the TSC's wrap, and 64 slices of the largest
 * preemption-timer count take 64 VM exits: no storm of either.
 */
static void far_tsc_deadline_arms_far_without_storm(void **state)
{
    size_t k, b, s, d;
    (void)state;
    far_log.bad = 0;
    for (k = 0; k < sizeof(far_rates) / sizeof(far_rates[0]); k++)
        for (b = 0; b < NBASES; b++)
            for (s = 0; s < sizeof(far_shifts) / sizeof(far_shifts[0]); s++)
                for (d = 0; d < 2; d++)
                    /* VMX scaling is continuous across the host TSC wrap
                     * only at 1:1. */
                    if (!b || far_rates[k].guest_khz == far_rates[k].host_khz)
                        far_case(&far_rates[k], b, far_shifts[s],
                                 far_deadlines[d]);
    assert_int_equal(far_log.bad, 0);
}

TU_MAIN(cmocka_unit_test(clock_multiply_shift_matches_exact_and_inverts),
        cmocka_unit_test(clock_tsc_exact_inverse_over_whole_rate_range),
        cmocka_unit_test(clock_continuous_across_tsc_wrap),
        cmocka_unit_test(fires_in_deadline_order),
        cmocka_unit_test(ties_fire_in_arming_order),
        cmocka_unit_test(cancel_head_reprograms_and_is_idempotent),
        cmocka_unit_test(rearm_earlier_and_later),
        cmocka_unit_test(early_interrupt_rearms),
        cmocka_unit_test(past_deadline_fires_at_once),
        cmocka_unit_test(deadline_across_tsc_wrap),
        cmocka_unit_test(reentrant_arm_and_cancel),
        cmocka_unit_test(random_ops_match_oracle),
        cmocka_unit_test(e2e_instances_through_mux),
        cmocka_unit_test(guest_tsc_scaling_and_inverse),
        cmocka_unit_test(far_guest_deadline_instant_never_late),
        cmocka_unit_test(preemption_timer_value),
        cmocka_unit_test(migration_keeps_deadline),
        cmocka_unit_test(invalid_arguments),
        cmocka_unit_test(full_cpu_refuses_node_loses_no_timer),
        cmocka_unit_test(ops_of_detached_node_are_defined),
        cmocka_unit_test(preempt_timer_is_the_core_hv_timer),
        cmocka_unit_test(preempt_scheduled_instances),
        cmocka_unit_test(preemption_timer_rate_every_shift),
        cmocka_unit_test(far_tsc_deadline_arms_far_without_storm))
