/* SPDX-License-Identifier: MIT */
/*
 * lib/timer.c (docs/spec/timer.md sections 3-7) against oracle.h on a fake
 * host. Every rule runs at clock bases 0 and near 2^64 through the tu_fix
 * fixture; a table binds the fixture's instance to a fresh host per case.
 */
#include "lapict_sim.h"
#include "testutil.h"

#define VEC 0x30u
#define VEC2 0x41u
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const uint64_t buses[] = {
    1000000000ull, 25000000ull, 100000000ull,
    134217728ull,  1000ull,     10000000000ull,
};

static void countdown(struct lapict_timer *t, uint32_t tdcr, uint32_t mode,
                      uint32_t vec, uint32_t n)
{
    assert_int_equal(lapict_tdcr_write(t, tdcr), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(t, mode | vec), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(t, n), LAPICT_OK);
}

/* Move h's clock to @t_ns / by @ns (0: run the timers due now); then
 * @injects were accepted in all. */
static void adv_to(struct fake_host *h, uint64_t t_ns, unsigned injects)
{
    fake_advance_to(h, t_ns);
    assert_int_equal(h->sim.injects, injects);
}

static void adv_by(struct fake_host *h, uint64_t ns, unsigned injects)
{
    fake_advance(h, ns);
    assert_int_equal(h->sim.injects, injects);
}

/* @injects were accepted in all, the last at @at_ns. */
static void expect_inj(struct fake_host *h, unsigned injects, uint64_t at_ns)
{
    assert_int_equal(h->sim.injects, injects);
    assert_int_equal(h->inj[injects - 1].host_ns, at_ns);
}

/* To @t_ns, where the @injects-th injection happens. */
static void adv_to_inj(struct fake_host *h, uint64_t t_ns, unsigned injects)
{
    fake_advance_to(h, t_ns);
    expect_inj(h, injects, t_ns);
}

/* TSC-deadline mode, the deadline @ticks ahead of the guest TSC: D. */
static uint64_t deadline_in(struct fake_host *h, struct lapict_timer *t,
                            uint64_t ticks)
{
    uint64_t D = fake_tsc(h) + ticks;
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, D);
    return D;
}

/* A fresh host for f at @base, guest TSC at @khz from @tsc0; the host it
 * replaces passes the invariants first. */
static void host_fresh(struct tu_fix *f, uint64_t base, uint32_t khz,
                       uint64_t tsc0, bool hv)
{
    tu_check_host(&f->h);
    fake_host_init(&f->h, base, khz, tsc0, hv);
}

static void inst_bind(struct tu_fix *f, const struct lapict_config *c)
{
    f->cfg = *c;
    assert_int_equal(fake_attach(&f->h, &f->t, c), LAPICT_OK);
}

/* One case of a table: a fresh host at f's base, the instance on it. */
static void inst_rebind(struct tu_fix *f, const struct lapict_config *c,
                        bool hv)
{
    host_fresh(f, f->base, c->tsc_khz, 0, hv);
    inst_bind(f, c);
}

/* Whether a case of tu_hv @hv offers the hardware timer at f's base. */
static bool hv_at(const struct tu_fix *f, enum tu_hv hv)
{
    return hv == TU_HV_ALWAYS || (hv == TU_HV_AT_0 && f->b == 0) ||
           (hv == TU_HV_NEAR_2_64 && f->b == 1);
}

/* tu_cfg() with a fixed advance of @ns, if any. */
static struct lapict_config cfg_adv(uint32_t ns)
{
    struct lapict_config c = tu_cfg();
    if (ns) {
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = ns;
    }
    return c;
}

TU_SETUP(advance_5000_setup, c.advance_mode = LAPICT_ADVANCE_FIXED;
         c.advance_ns = 5000)
TU_SETUP(advance_10000_setup, c.advance_mode = LAPICT_ADVANCE_FIXED;
         c.advance_ns = 10000)

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* ---- Section 3: one-shot and periodic count-down, minimum period ------ */

/* Rule: a one-shot counts E - T(t) down, fires once at a + ns_for(N), stops. */
static void oneshot_expires_at_anchor_plus_ns_for_n(void **state)
{
    static const uint32_t tdcrs[] = {0xB, 0x0, 0xA};
    static const uint32_t counts[] = {1, 3, 1000003};
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(buses) * 9; i++) {
        struct lapict_config c = tu_cfg();
        uint64_t bus = buses[i / 9], a, dur, s;
        uint32_t N = counts[i % 3], div = oracle_divide(tdcrs[i / 3 % 3]);
        c.bus_hz = bus;
        inst_rebind(f, &c, f->b == 1);
        fake_advance(h, 3);
        a = h->sim.now_ns;
        countdown(t, tdcrs[i / 3 % 3], LAPICT_LVTT_ONESHOT, VEC, N);
        dur = oracle_ns_for(N, bus, div);
        assert_int_equal(lapict_tmcct_read(t), N);
        for (s = 1; s <= 4; s++) {
            uint64_t dt = dur * s / 5;
            if (dt == 0 || dt >= dur)
                continue;
            fake_advance_to(h, a + dt);
            assert_int_equal(lapict_tmcct_read(t),
                             N - oracle_ticks_in(dt, bus, div));
        }
        adv_to(h, a + dur - 1, 0);
        assert_int_equal(lapict_tmcct_read(t),
                         N - oracle_ticks_in(dur - 1, bus, div));
        adv_to_inj(h, a + dur, 1);
        assert_int_equal(h->inj[0].vector, VEC);
        assert_int_equal(lapict_tmcct_read(t), 0);
        assert_int_equal(lapict_tmict_read(t), N);
        adv_by(h, dur * 3 + 1000, 1);
        assert_int_equal(lapict_tmcct_read(t), 0);
    }
}

/* Rule: periodic TMCCT reads N at a reload, never 0; fires on the grid. */
static void tmcct_reads_n_at_reload_never_zero_while_periodic(void **state)
{
    static const uint32_t counts[] = {1, 7, 250001};
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(buses) * 3; i++) {
        struct lapict_config c = tu_cfg();
        uint64_t bus = buses[i / 3], a, k;
        uint32_t N = counts[i % 3];
        if (bus == 1000 && N > 7)
            continue; /* 250 s periods: covered by smaller N */
        c.bus_hz = bus;
        inst_rebind(f, &c, f->b == 0);
        a = h->sim.now_ns;
        countdown(t, 0x1, LAPICT_LVTT_PERIODIC, VEC, N);
        for (k = 1; k <= 5; k++) {
            uint64_t g = oracle_ns_for(k * N, bus, 4), p;
            for (p = g - 1; p != g + 2; p++) {
                uint64_t want = N - oracle_ticks_in(p, bus, 4) % N;
                if (fake_diff(h->sim.now_ns, a + p) < 0)
                    continue;
                fake_advance_to(h, a + p);
                assert_int_equal(lapict_tmcct_read(t), want);
                assert_true(want >= 1 && want <= N);
            }
            /* Sub-3-ns periods put several grid points into one ns. */
            if ((uint64_t)N * 4 * 1000000000ull < 3 * bus)
                continue;
            expect_inj(h, k, a + g);
        }
    }
}

/* Rule: late host callbacks do not move the grid (E += N, never now + P). */
static void periodic_reload_is_drift_free(void **state)
{
    static const uint64_t rates[] = {1000000000ull, 134217728ull, 25000000ull};
    TU_FIX(state);
    size_t r;
    for (r = 0; r < N_OF(rates); r++) {
        struct lapict_config c = tu_cfg();
        uint32_t N = (uint32_t)(rates[r] / 4000), seed = 7; /* ~250 us */
        uint64_t a, k;
        c.bus_hz = rates[r];
        inst_rebind(f, &c, false);
        a = h->sim.now_ns;
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, N);
        for (k = 1; k <= 300; k++) {
            uint64_t g = a + oracle_ns_for(k * N, rates[r], 1);
            uint64_t lat = lcg(&seed) % 20000;
            assert_true(h->sim.sw_armed);
            assert_int_equal(h->sim.sw_at_ns, g);
            fake_stall(h, (g + lat) - h->sim.now_ns);
            fake_fire_sw(h);
            expect_inj(h, k, g + lat);
        }
    }
}

/* Rule: a TMICT or deadline write replaces what was armed or pending. */
static void timer_write_replaces_what_was_armed_or_pending(void **state)
{
    static const struct {
        uint32_t mode, first, new_value;
        bool shut;
        uint64_t adv_ns;
        enum tu_hv hv;
    } rows[] = {
        {LAPICT_LVTT_PERIODIC, 300000, 0, true, 300000, TU_HV_NEVER},
        {LAPICT_LVTT_PERIODIC, 300000, 100000, true, 450000, TU_HV_NEAR_2_64},
        {LAPICT_LVTT_TSC_DEADLINE, 1000, 5000, true, 1000, TU_HV_NEVER},
        {LAPICT_LVTT_TSC_DEADLINE, 100000, 0, false, 50000, TU_HV_ALWAYS},
    };
    TU_FIX(state);
    uint64_t a2, D;
    size_t i;
    for (i = 0; i < N_OF(rows); i++) {
        bool dl = rows[i].mode == LAPICT_LVTT_TSC_DEADLINE;
        uint64_t P = rows[i].new_value;
        D = 0;
        inst_rebind(f, &f->cfg, hv_at(f, rows[i].hv));
        if (dl)
            lapict_lvtt_write(t, rows[i].mode | VEC);
        else
            countdown(t, 0xB, rows[i].mode, VEC, rows[i].first);
        if (rows[i].shut)
            fake_window(h, false);
        if (dl)
            lapict_tsc_deadline_write(t, fake_tsc(h) + rows[i].first);
        assert_true(fake_armed(h));
        fake_advance(h, rows[i].adv_ns);
        assert_int_equal(tu_stats(t).pending, rows[i].shut);
        a2 = h->sim.now_ns;
        if (dl)
            D = P ? fake_tsc(h) + P : 0;
        assert_int_equal(dl ? lapict_tsc_deadline_write(t, D)
                            : lapict_tmict_write(t, (uint32_t)P),
                         LAPICT_OK);
        assert_int_equal(tu_stats(t).pending, 0);
        assert_int_equal(lapict_lvtt_read(t), rows[i].mode | VEC);
        assert_int_equal(dl ? lapict_tsc_deadline_read(t)
                            : lapict_tmcct_read(t),
                         dl ? D : P);
        fake_window(h, true);
        assert_int_equal(h->sim.injects, 0);
        if (!P) {
            adv_by(h, 10000000, 0);
            assert_int_equal(lapict_tmcct_read(t), 0);
            assert_int_equal(lapict_tsc_deadline_read(t), 0);
            continue;
        }
        adv_to(h, a2 + P - 1, 0);
        adv_to_inj(h, a2 + P, 1);
        if (!dl) {
            adv_to_inj(h, a2 + 2 * P, 2);
        }
    }
    inst_rebind(f, &f->cfg, hv_at(f, TU_HV_AT_0)); /* later, earlier */
    a2 = h->sim.now_ns;
    D = deadline_in(h, t, 100000);
    lapict_tsc_deadline_write(t, D + 200000);
    adv_to(h, a2 + 299999, 0);
    adv_to(h, a2 + 300000, 1);
    lapict_tsc_deadline_write(t, D + 800000);
    lapict_tsc_deadline_write(t, D + 300000);
    adv_to(h, a2 + 2000000, 2);
    assert_int_equal(h->inj[1].host_ns, a2 + 400000);
}

/* Rule: a TDCR write keeps TMCCT, re-anchors at now, counts at the new rate;
 * while stopped it only stores the divide. */
static void tdcr_write_preserves_count_and_reanchors(void **state)
{
    static const uint32_t modes[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC};
    const uint64_t bus = 134217728ull;
    const uint32_t N = 100000;
    TU_FIX(state);
    struct lapict_config c0;
    uint64_t a2;
    size_t m;
    for (m = 0; m < 2; m++) {
        struct lapict_config c = tu_cfg();
        uint64_t C, e1, e2;
        c.bus_hz = bus;
        inst_rebind(f, &c, m == 1);
        countdown(t, 0xB, modes[m], VEC, N);
        fake_advance(h, 333333); /* mid-tick at 7.45 ns per tick */
        C = N - oracle_ticks_in(333333, bus, 1);
        assert_int_equal(lapict_tmcct_read(t), C);
        a2 = h->sim.now_ns;
        assert_int_equal(lapict_tdcr_write(t, 0x1), LAPICT_OK); /* /4 */
        assert_int_equal(lapict_tdcr_read(t), 0x1);
        assert_int_equal(lapict_tmcct_read(t), C);
        e1 = a2 + oracle_ns_for(C, bus, 4);
        adv_to(h, e1 - 1, 0);
        assert_int_equal(lapict_tmcct_read(t),
                         C - oracle_ticks_in(e1 - 1 - a2, bus, 4));
        adv_to_inj(h, e1, 1);
        e2 = a2 + oracle_ns_for(C + N, bus, 4);
        adv_to(h, e2, m == 1 ? 2 : 1);
        if (m == 1)
            assert_int_equal(h->inj[1].host_ns, e2);
    }
    c0 = tu_cfg(); /* stopped: the write only stores the divide */
    inst_rebind(f, &c0, false);
    a2 = h->sim.now_ns;
    assert_int_equal(lapict_tdcr_write(t, 0xA), LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(t), 0);
    assert_false(fake_armed(h));
    fake_advance(h, 1000);
    lapict_lvtt_write(t, VEC);
    lapict_tmict_write(t, 10);
    adv_by(h, 1279, 0);
    adv_by(h, 1, 1);
    assert_int_equal(h->inj[0].host_ns, a2 + 1000 + 1280);
}

enum md { MD_OS, MD_PER, MD_DL };
static const uint32_t md_bits[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC,
                                   LAPICT_LVTT_TSC_DEADLINE};

/* Rule: one-shot <-> periodic counts on; TSC-deadline in or out disarms. */
static void mode_switch_every_pair(void **state)
{
    const uint64_t P = 1000000;
    TU_FIX(state);
    size_t i, from, to;
    for (i = 0; i < 9; i++) {
        struct lapict_config c = tu_cfg();
        uint64_t a, want[4];
        unsigned nwant = 0, k;
        from = i / 3;
        to = i % 3;
        inst_rebind(f, &c, f->b == 1);
        h->sim.cfg.tsc_offset = 0xFFFFFFFFFFF00000ull * f->b;
        a = h->sim.now_ns;
        if (from == MD_DL) {
            lapict_lvtt_write(t, md_bits[from] | VEC);
            lapict_tsc_deadline_write(t, fake_tsc(h) + P);
        } else {
            countdown(t, 0xB, md_bits[from], VEC, (uint32_t)P);
        }
        fake_advance(h, 400000);
        assert_int_equal(lapict_lvtt_write(t, md_bits[to] | VEC2), LAPICT_OK);
        assert_int_equal(lapict_lvtt_read(t), md_bits[to] | VEC2);
        if (from == MD_DL && to == MD_DL) {
            want[nwant++] = a + P;
            assert_true(lapict_tsc_deadline_read(t) != 0);
        } else if (from == MD_DL || to == MD_DL) {
            assert_int_equal(lapict_tmict_read(t), 0);
            assert_int_equal(lapict_tmcct_read(t), 0);
            assert_int_equal(lapict_tsc_deadline_read(t), 0);
            assert_false(fake_armed(h));
        } else {
            assert_int_equal(lapict_tmict_read(t), P);
            assert_int_equal(lapict_tmcct_read(t), P - 400000);
            want[nwant++] = a + P;
            if (to == MD_PER) {
                want[nwant++] = a + 2 * P;
                want[nwant++] = a + 3 * P;
            }
        }
        adv_to(h, a + 3 * P + P / 2, nwant);
        for (k = 0; k < nwant; k++) {
            assert_int_equal(h->inj[k].host_ns, want[k]);
            assert_int_equal(h->inj[k].vector, VEC2);
        }
        if (to == MD_DL)
            assert_int_equal(lapict_tsc_deadline_read(t), 0);
    }
}

/* Rule: a periodic period below min_period_ns is slowed to it, reported;
 * nothing else is clamped. */
static void min_period_clamp_slows_periodic_to_min_period(void **state)
{
    static const uint32_t counts[] = {1, 3, 7, 99999};
    const uint32_t P = 200000;
    TU_FIX(state);
    struct lapict_config c = tu_cfg();
    struct lapict_stats s;
    size_t n;
    c.min_period_ns = P;
    for (n = 0; n < N_OF(counts); n++) {
        uint32_t N = counts[n];
        uint64_t a, k, p;
        inst_rebind(f, &c, false);
        a = h->sim.now_ns;
        countdown(t, 0x0, LAPICT_LVTT_PERIODIC, VEC, N); /* /2 */
        assert_true(oracle_ns_for(N, 1000000000ull, 2) < P);
        for (k = 1; k <= 3; k++) {
            uint64_t g = oracle_ns_for_clamped(k * N, N, P);
            for (p = g - 1; p != g + 2; p++) {
                fake_advance_to(h, a + p);
                assert_int_equal(lapict_tmcct_read(t),
                                 N - oracle_ticks_in_clamped(p, N, P) % N);
            }
            expect_inj(h, k, a + g);
            assert_int_equal(g, k * P);
        }
        s = tu_stats(t);
        assert_true(s.clamps >= 1);
        assert_true(s.clamp_reported);
    }
    inst_rebind(f, &c, false); /* exactly P (200 us at /2): not clamped */
    countdown(t, 0x0, LAPICT_LVTT_PERIODIC, VEC, 100000);
    adv_by(h, 400000, 2);
    assert_int_equal(tu_stats(t).clamps, 0);
    assert_false(tu_stats(t).clamp_reported);
    inst_rebind(f, &c, false); /* never a one-shot or a deadline */
    countdown(t, 0x0, LAPICT_LVTT_ONESHOT, VEC, 7);
    adv_by(h, 13, 0);
    adv_by(h, 1, 1);
    deadline_in(h, t, 10);
    adv_by(h, 10, 2);
    s = tu_stats(t);
    assert_int_equal(s.clamps, 0);
    assert_false(s.clamp_reported);
}

/* Rule: the count is kept when the min-period clamp starts or stops. */
static void min_period_clamp_start_stop_preserves_count(void **state)
{
    const uint32_t P = 200000;
    TU_FIX(state);
    struct lapict_config c = tu_cfg();
    uint64_t a, C;
    c.min_period_ns = P;

    inst_rebind(f, &c, false);                          /* (a) */
    countdown(t, 0xA, LAPICT_LVTT_PERIODIC, VEC, 2000); /* 256 us */
    fake_advance(h, 100000);
    C = 2000 - 100000 / 128;
    assert_int_equal(lapict_tmcct_read(t), C);
    a = h->sim.now_ns;
    lapict_tdcr_write(t, 0x9); /* /64: 128 us < P */
    assert_int_equal(lapict_tmcct_read(t), C);
    adv_to(h, a + oracle_ns_for_clamped(C, 2000, P) - 1, 0);
    adv_to(h, a + oracle_ns_for_clamped(C, 2000, P), 1);
    adv_to_inj(h, a + oracle_ns_for_clamped(C + 2000, 2000, P), 2);
    assert_true(tu_stats(t).clamps >= 1);

    inst_rebind(f, &c, false); /* (b) */
    countdown(t, 0x0, LAPICT_LVTT_PERIODIC, VEC, 7);
    fake_advance(h, 100000);
    C = 7 - oracle_ticks_in_clamped(100000, 7, P);
    assert_int_equal(lapict_tmcct_read(t), C);
    a = h->sim.now_ns;
    lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC);
    assert_int_equal(lapict_tmcct_read(t), C);
    adv_to(h, a + oracle_ns_for(C, 1000000000ull, 2) - 1, 0);
    adv_to(h, a + oracle_ns_for(C, 1000000000ull, 2), 1);
    adv_by(h, 1000000, 1);

    inst_rebind(f, &c, false);                      /* (c) */
    countdown(t, 0x0, LAPICT_LVTT_ONESHOT, VEC, 7); /* 14 ns */
    fake_advance(h, 6);
    C = 7 - 3;
    assert_int_equal(lapict_tmcct_read(t), C);
    a = h->sim.now_ns;
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_tmcct_read(t), C);
    adv_to(h, a + 14, 0);
    adv_to_inj(h, a + oracle_ns_for_clamped(C, 7, P), 1);
    adv_to_inj(h, a + oracle_ns_for_clamped(C + 7, 7, P), 2);
}

/* ---- Section 4: TSC-deadline ---------------------------------------- */

/* Rule: a deadline fires when the guest TSC reaches D, never before; the
 * MSR then reads 0, delivered or masked. */
static void deadline_fires_when_guest_tsc_reaches_d(void **state)
{
    static const uint32_t khz[] = {1000000, 2000000, 2500000,
                                   300000,  1,       100000000};
    static const uint64_t deltas[] = {1, 999, 1000000, 123456789};
    static const uint64_t offsets[] = {0, UINT64_MAX - 500000000ull};
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(khz) * 16; i++) {
        struct lapict_config c = tu_cfg();
        uint64_t delta = deltas[i / 2 % 4], a, D, dur;
        unsigned masked = i / 8 % 2;
        c.tsc_khz = khz[i / 16];
        host_fresh(f, f->base, c.tsc_khz, offsets[i % 2], i % 2 == 1);
        inst_bind(f, &c);
        a = h->sim.now_ns;
        lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC |
                                 (masked ? LAPICT_LVTT_MASK : 0));
        D = fake_tsc(h) + delta;
        lapict_tsc_deadline_write(t, D);
        assert_int_equal(lapict_tsc_deadline_read(t), D);
        dur = oracle_tsc_ns(delta, c.tsc_khz);
        if (dur > 1) {
            fake_advance_to(h, a + dur - 1);
            assert_true(fake_tsc(h) < D);
            assert_int_equal(lapict_tsc_deadline_read(t), D);
        }
        adv_to(h, a + dur, !masked);
        if (!masked) {
            expect_inj(h, 1, a + dur);
            assert_true(h->inj[0].guest_tsc >= D);
        }
        assert_int_equal(lapict_tsc_deadline_read(t), 0);
        assert_int_equal(tu_stats(t).masked, masked);
        assert_int_equal(tu_stats(t).expiries, 1);
        adv_by(h, dur + 1000, !masked);
    }
}

/* Rule: a deadline at or below the TSC fires now, never wraps to far. */
static void negative_delta_never_wraps_deadline(void **state)
{
    static const uint64_t offsets[] = {1000000000000ull, UINT64_MAX - 1000};
    static const struct {
        bool from_tsc;
        uint64_t d;
    } ds[5] = {{true, UINT64_MAX},
               {true, 0},
               {false, 1},
               {true, 1},
               {false, UINT64_MAX}};
    TU_FIX(state);
    struct lapict_config c = tu_cfg();
    size_t i;
    for (i = 0; i < 10; i++) {
        size_t o = i / 5, k = i % 5;
        uint64_t D, a;
        host_fresh(f, f->base, 1000000, offsets[o], f->b == 1);
        inst_bind(f, &c);
        lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        fake_advance(h, 10);
        a = h->sim.now_ns;
        D = ds[k].from_tsc ? fake_tsc(h) + ds[k].d : ds[k].d;
        assert_int_equal(lapict_tsc_deadline_write(t, D), LAPICT_OK);
        if (k <= 2) { /* expired at the write, at this very instant */
            expect_inj(h, 1, a);
            assert_int_equal(lapict_tsc_deadline_read(t), 0);
        } else if (k == 3) {
            assert_int_equal(h->sim.injects, 0);
            adv_by(h, 0, 0);
            adv_by(h, 1, 1);
            assert_int_equal(h->inj[0].host_ns, a + 1);
        } else if (o == 1) { /* TSC reaches 2^64-1 after 1000 - 10 ns */
            adv_to(h, a + 989, 0);
            adv_to(h, a + 990, 1);
        } else {
            assert_int_equal(h->sim.injects, 0);
            assert_true(fake_armed(h));
            assert_true(fake_diff(h->sim.now_ns, fake_armed_at(h)) > 0);
            adv_by(h, 1000000000000ull, 0);
            assert_int_equal(lapict_tsc_deadline_read(t), D);
        }
    }
    c = tu_cfg(); /* 2^64-1 at 1 kHz (~1.8e25 ns away) saturates */
    c.tsc_khz = 1;
    host_fresh(f, f->base, 1, 0, f->b == 1);
    inst_bind(f, &c);
    deadline_in(h, t, UINT64_MAX);
    assert_int_equal(h->sim.injects, 0);
    assert_true(fake_armed(h));
    assert_true(fake_diff(h->sim.now_ns, fake_armed_at(h)) > 0);
    adv_by(h, 1ull << 50, 0);
    assert_int_equal(lapict_tsc_deadline_read(t), UINT64_MAX);
}

/* ---- Section 5: mask and vector -------------------------------------- */

/* Rule: a masked timer counts on and drops expiries, for good. */
static void masked_timer_keeps_counting_and_drops_expiries(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK, VEC, 1000000);
    adv_to(h, a + 3500000, 0);
    assert_int_equal(lapict_tmcct_read(t), 500000);
    s = tu_stats(t);
    assert_int_equal(s.masked, 3);
    assert_int_equal(s.expiries, 3);
    assert_int_equal(s.injections, 0);
    assert_int_equal(s.pending, 0);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(h->sim.injects, 0);
    adv_to_inj(h, a + 4000000, 1);
    s = tu_stats(t);
    assert_int_equal(s.expiries, 4);
    assert_int_equal(s.injections, 1);
}

/* Rule (section 5): vectors 0-15 are counted and reported (if the host has
 * a report op), not injected, dropped at the expiry however late serviced. */
static void illegal_vector_not_injected_and_reported(void **state)
{
    static const uint32_t modes[] = {LAPICT_LVTT_TSC_DEADLINE,
                                     LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC};
    TU_FIX(state);
    uint32_t v;
    size_t m;
    for (v = 0; v <= 16; v++) {
        struct lapict_stats s;
        inst_rebind(f, &f->cfg, false);
        countdown(t, 0xB, LAPICT_LVTT_ONESHOT, v, 1000);
        fake_advance(h, 1000);
        s = tu_stats(t);
        assert_int_equal(s.expiries, 1);
        if (v < 16) {
            assert_int_equal(h->sim.injects, 0);
            assert_int_equal(h->sim.injects + h->sim.refusals, 0);
            assert_int_equal(s.illegal_vector, 1);
            assert_int_equal(s.injections, 0);
            assert_int_equal(s.last_error, LAPICT_E_VECTOR);
            assert_int_equal(h->sim.reports, 1);
            assert_int_equal(h->rep[0].status, LAPICT_E_VECTOR);
            assert_int_equal(h->rep[0].detail, v);
            assert_int_equal(s.pending, 0);
        } else {
            assert_int_equal(h->sim.injects, 1);
            assert_int_equal(h->inj[0].vector, 16);
            assert_int_equal(s.illegal_vector, 0);
            assert_int_equal(s.last_error, LAPICT_OK);
            assert_int_equal(h->sim.reports, 0);
        }
    }
    host_fresh(f, f->base, f->cfg.tsc_khz, 0, false); /* no report op */
    lapict_sim_ops_remove(&h->ops, FAKE_OP_REPORT);
    inst_bind(f, &f->cfg);
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 3, 100000);
    adv_by(h, 300000, 0);
    assert_int_equal(tu_stats(t).illegal_vector, 3);
    for (m = 0; m < N_OF(modes); m++) {
        inst_rebind(f, &f->cfg, false);
        fake_window(h, false);
        assert_int_equal(lapict_lvtt_write(t, modes[m] | 5u), LAPICT_OK);
        if (modes[m] == LAPICT_LVTT_TSC_DEADLINE)
            assert_int_equal(lapict_tsc_deadline_write(t, 100000), LAPICT_OK);
        else
            assert_int_equal(lapict_tmict_write(t, 100000), LAPICT_OK);
        fake_stall(h, 250000); /* the callback is late (divide 2) */
        assert_int_equal(lapict_lvtt_read(t), modes[m] | 5u);
        assert_int_equal(h->sim.reports, 1);
        assert_int_equal(h->rep[0].status, LAPICT_E_VECTOR);
        fake_run_due(h); /* the late callback finds nothing more */
        assert_int_equal(h->sim.reports, 1);
        assert_int_equal(lapict_lvtt_write(t, modes[m] | VEC), LAPICT_OK);
        fake_window(h, true);
        assert_int_equal(h->sim.injects, 0);
        assert_int_equal(tu_stats(t).illegal_vector, 1);
    }
}

/* ---- Section 6: delivery, pending, missed ticks ---------------------- */

/* Rule: a refused expiry stays pending and is delivered once, when the
 * window opens, as the LVTT then says: masked it is dropped for good. */
static void refused_expiry_is_pending_and_delivered_once(void **state)
{
    static const struct {
        uint32_t lvtt;
        unsigned injects;
        enum tu_hv hv;
    } rows[] = {{VEC, 1, TU_HV_NEAR_2_64},
                {LAPICT_LVTT_MASK | VEC, 0, TU_HV_NEVER},
                {VEC2, 1, TU_HV_NEVER}};
    TU_FIX(state);
    struct lapict_stats s;
    size_t i;
    for (i = 0; i < N_OF(rows); i++) {
        unsigned n = rows[i].injects;
        uint64_t a;
        inst_rebind(f, &f->cfg, hv_at(f, rows[i].hv));
        a = h->sim.now_ns;
        countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
        fake_window(h, false);
        adv_by(h, 1000, 0);
        s = tu_stats(t);
        assert_true(h->sim.refusals >= 1);
        assert_int_equal(s.refused, h->sim.refusals);
        assert_int_equal(s.pending, 1);
        fake_spurious_expire(h);
        adv_by(h, 5000, 0);
        lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | rows[i].lvtt);
        assert_int_equal(fake_window(h, true), LAPICT_OK);
        assert_int_equal(h->sim.injects, n);
        if (n) {
            expect_inj(h, 1, a + 6000);
            assert_int_equal(h->inj[0].vector, rows[i].lvtt & 0xFFu);
        }
        s = tu_stats(t);
        assert_int_equal(s.injections, n);
        assert_int_equal(s.pending, 0);
        assert_int_equal(lapict_lvtt_read(t), rows[i].lvtt);
        lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC);
        fake_window(h, true);
        fake_spurious_expire(h);
        adv_by(h, 1000000, n);
    }
}

/* Rule: a register access past the instant processes the expiry there. */
static void register_access_after_instant_processes_expiry(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    fake_stall(h, 1500000);
    assert_int_equal(lapict_tmcct_read(t), 0);
    expect_inj(h, 1, a + 1500000);
    fake_run_due(h); /* the late host timer: nothing more */
    adv_by(h, 1000000, 1);

    a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    fake_stall(h, 2500000);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_PERIODIC | VEC);
    expect_inj(h, 2, a + 2500000);
    assert_int_equal(lapict_tmcct_read(t), 500000);
    assert_int_equal(tu_stats(t).coalesced, 1);
    adv_by(h, 0, 2);
    adv_to_inj(h, a + 3000000, 3);
}

/* Rule: early, spurious, duplicate and stale host callbacks are harmless. */
static void early_late_duplicate_stale_callbacks_are_harmless(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    fake_stall(h, 400000);
    fake_fire_sw(h); /* early: re-armed for the instant */
    assert_int_equal(h->sim.injects, 0);
    assert_true(h->sim.sw_armed);
    assert_int_equal(h->sim.sw_at_ns, a + 1000000);
    fake_spurious_expire(h); /* spurious while armed */
    assert_int_equal(h->sim.injects, 0);
    assert_true(h->sim.sw_armed);
    assert_int_equal(h->sim.sw_at_ns, a + 1000000);
    adv_to(h, a + 999999, 0);
    adv_to(h, a + 1000000, 1);
    fake_fire_sw(h); /* duplicates after the expiry */
    fake_spurious_expire(h);
    assert_int_equal(h->sim.injects, 1);
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
    lapict_tmict_write(t, 0);
    fake_stall(h, 1000);
    fake_fire_sw(h); /* stale: the timer was stopped */
    adv_by(h, 100000, 1);
}

/* Rule: ticks missed behind a shut window: coalesce keeps 1, catch-up up
 * to its bound, delivered one per accepted injection. */
static void missed_ticks_behind_a_shut_window_follow_the_policy(void **state)
{
    static const struct {
        uint32_t policy, max;
        enum tu_hv hv;
        unsigned pending, coalesced, dropped;
        bool budget;
    } rows[] = {
        {LAPICT_MISSED_COALESCE, 0, TU_HV_NEAR_2_64, 1, 4, 0, false},
        {LAPICT_MISSED_CATCH_UP, 0, TU_HV_AT_0, 5, 0, 0, true},
        {LAPICT_MISSED_CATCH_UP, 3, TU_HV_NEVER, 3, 0, 2, false},
    };
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(rows); i++) {
        struct lapict_config c = tu_cfg();
        struct lapict_stats s;
        unsigned n = rows[i].pending, calls;
        uint64_t a;
        c.missed_policy = rows[i].policy;
        if (rows[i].max)
            c.catch_up_max = rows[i].max;
        inst_rebind(f, &c, hv_at(f, rows[i].hv));
        a = h->sim.now_ns;
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
        fake_window(h, false);
        fake_advance_to(h, a + 5000000);
        s = tu_stats(t);
        assert_int_equal(h->sim.injects, 0);
        assert_int_equal(s.pending, n);
        assert_int_equal(s.coalesced, rows[i].coalesced);
        assert_int_equal(s.dropped, rows[i].dropped);
        assert_int_equal(s.expiries, 5);
        assert_true(s.refused >= 1);
        assert_int_equal(lapict_lvtt_read(t) & LAPICT_LVTT_PENDING,
                         LAPICT_LVTT_PENDING);
        fake_advance(h, 100);
        calls = h->sim.injects + h->sim.refusals;
        fake_window(h, true);
        assert_int_equal(h->sim.injects, n);
        assert_int_equal((h->sim.injects + h->sim.refusals) - calls, n);
        s = tu_stats(t);
        assert_int_equal(s.pending, 0);
        assert_int_equal(s.injections, n);
        adv_to_inj(h, a + 6000000, n + 1);
        if (!rows[i].budget)
            continue;
        fake_window(h, false); /* then one delivered per accepted call */
        fake_advance_to(h, a + 9000000);
        assert_int_equal(tu_stats(t).pending, 3);
        h->rec.refuse = FAKE_OP_INJECT; /* refused after a budget */
        h->rec.refuse_after = h->rec.calls[LAPICT_SIM_OP_INJECT] + 1;
        fake_window(h, true);
        assert_int_equal(h->sim.injects, n + 2);
        assert_int_equal(tu_stats(t).pending, 2);
        h->rec.refuse_after = h->rec.calls[LAPICT_SIM_OP_INJECT] + 2;
        fake_window(h, true);
        assert_int_equal(h->sim.injects, n + 4);
        assert_int_equal(tu_stats(t).pending, 0);
    }
}

/* Rule: ticks missed in a stall follow the policy; the grid goes on. */
static void missed_ticks_after_a_stall_follow_the_policy(void **state)
{
    static const struct {
        uint32_t policy;
        uint64_t stall_ns;
        unsigned injects, dropped;
        enum tu_hv hv;
    } rows[] = {
        {LAPICT_MISSED_DROP, 3500000, 0, 3, TU_HV_NEAR_2_64},
        {LAPICT_MISSED_DROP, 1500000, 1, 0, TU_HV_NEVER},
        {LAPICT_MISSED_CATCH_UP, 5500000, 5, 0, TU_HV_NEVER},
    };
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(rows); i++) {
        struct lapict_config c = tu_cfg();
        unsigned n = rows[i].injects;
        uint64_t a, next;
        c.missed_policy = rows[i].policy;
        inst_rebind(f, &c, hv_at(f, rows[i].hv));
        a = h->sim.now_ns;
        next = a + (rows[i].stall_ns / 1000000 + 1) * 1000000;
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
        fake_stall(h, rows[i].stall_ns);
        adv_by(h, 0, n);
        if (n)
            assert_int_equal(h->inj[0].host_ns, a + rows[i].stall_ns);
        assert_int_equal(tu_stats(t).dropped, rows[i].dropped);
        assert_int_equal(tu_stats(t).pending, 0);
        assert_int_equal(lapict_tmcct_read(t), 500000);
        assert_int_equal(fake_armed_at(h), next);
        adv_to_inj(h, next, n + 1);
    }
}

/* Rule: a long stall gives one interrupt and O(1) host work; one of 2^63
 * ns or more (the ops.h horizon) no callback storm. */
static void long_stall_gives_one_interrupt_with_o1_host_work(void **state)
{
    static const uint64_t stalls[] = {3600000000000ull, 1ull << 62};
    static const uint64_t huge[] = {1ull << 63, (1ull << 63) + 12345,
                                    (1ull << 63) + 999999, UINT64_MAX - 5000};
    const uint64_t P = 1000000;
    TU_FIX(state);
    struct lapict_stats s0, s;
    uint64_t a;
    size_t i;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, (uint32_t)P);
    for (i = 0; i < N_OF(stalls); i++) {
        uint64_t k = stalls[i] / P;
        assert_int_equal(lapict_tmict_write(t, (uint32_t)P), LAPICT_OK);
        a = h->sim.now_ns;
        s0 = tu_stats(t);
        fake_stall(h, stalls[i]);
        fake_clear_records(h);
        fake_run_due(h);
        s = tu_stats(t);
        assert_int_equal(h->sim.expire_calls, 1);
        expect_inj(h, 1, a + stalls[i]);
        assert_int_equal(s.coalesced - s0.coalesced, k - 1);
        assert_true(h->sim.sw_arms + h->sim.hv_arms <= 2);
        assert_true(h->rec.total_calls <= 16);
        assert_true(fake_armed(h));
        assert_int_equal(fake_armed_at(h), a + (k + 1) * P);
        assert_int_equal(lapict_tmcct_read(t), P - stalls[i] % P);
        adv_by(h, P, 2);
    }
    for (i = 0; i < N_OF(huge) * 2; i++) { /* 2^63+ ns: never a storm */
        struct lapict_config c = tu_cfg();
        inst_rebind(f, &c, f->b == 1);
        countdown(t, 0xB, i % 2 ? LAPICT_LVTT_PERIODIC : LAPICT_LVTT_ONESHOT,
                  VEC, 1000000);
        fake_clear_records(h);
        fake_stall(h, huge[i / 2]);
        fake_run_due(h);
        fake_advance(h, 100000); /* < a period: only a storm calls back */
        assert_false(h->sim.livelocks);
        assert_true(h->sim.expire_calls <= 3);
        assert_true(h->sim.sw_arms + h->sim.hv_arms <= 4);
        assert_true(h->sim.injects <= 1);
    }
}

/* Rule: a stall of 2^64+ ticks keeps the policy count; stats saturate. */
static void stall_beyond_2p64_ticks_keeps_the_policy_count(void **state)
{
    static const uint64_t stalls[] = {1ull << 61, (1ull << 62) - 1};
    static const uint32_t policies[] = {
        LAPICT_MISSED_COALESCE, LAPICT_MISSED_DROP, LAPICT_MISSED_CATCH_UP};
    static const unsigned want[] = {1, 0, 1000};
    TU_FIX(state);
    size_t p;
    unsigned i;
    for (p = 0; p < 3; p++) {
        struct lapict_config c = tu_cfg();
        c.bus_hz = 10000000000ull;
        c.missed_policy = policies[p];
        c.catch_up_max = 1000;
        inst_rebind(f, &c, false);
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1);
        fake_stall(h, stalls[f->b]);
        fake_clear_records(h);
        fake_run_due(h);
        assert_int_equal(h->sim.expire_calls, 1);
        assert_int_equal(h->sim.injects, want[p]);
        for (i = 1; i < h->sim.injects && i < FAKE_MAX_EVENTS; i++)
            assert_int_equal(h->inj[i].host_ns, h->inj[0].host_ns);
        assert_true(tu_stats(t).expiries == UINT64_MAX);
        assert_int_equal(lapict_tmcct_read(t), 1);
    }
}

/* ---- Section 7: advance -------------------------------------------- */

/* Rule: a fixed advance injects early and the entry spins to the instant. */
static void fixed_advance_injects_early_and_spins_to_instant(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a = h->sim.now_ns, k;
    assert_int_equal(tu_stats(t).advance_ns, 5000);
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    for (k = 1; k <= 3; k++) {
        uint64_t g = a + k * 1000000;
        assert_int_equal(fake_armed_at(h), g - 5000);
        adv_to(h, g - 5001, k - 1);
        adv_to_inj(h, g - 5000, k);
        fake_advance(h, 700); /* exit + injection cost */
        assert_int_equal(fake_enter(h), LAPICT_OK);
        assert_int_equal(h->sim.deliveries, k);
        assert_int_equal(h->dlv[k - 1].host_ns, g);
        assert_int_equal(h->sim.spins, k);
        assert_int_equal(h->spin_to[k - 1], g);
        fake_enter(h); /* a second entry does not wait again */
        assert_int_equal(h->sim.spins, k);
    }
    s = tu_stats(t);
    assert_int_equal(s.spins, 3);
    assert_int_equal(s.advance_ns, 5000);
}

/* Rule: only lapict_expire() applies the advance, and only with a spin op;
 * without an advance, entry does not spin. */
static void only_expire_applies_advance(void **state)
{
    TU_FIX(state);
    struct lapict_config c;
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    fake_stall(h, 1000000 - 100);
    assert_int_equal(lapict_tmcct_read(t), 100);
    assert_int_equal(h->sim.injects, 0);
    fake_run_due(h); /* the late host timer */
    expect_inj(h, 1, a + 1000000 - 100);
    fake_enter(h);
    assert_int_equal(h->dlv[0].host_ns, a + 1000000);
    host_fresh(f, f->base, f->cfg.tsc_khz, 0, false);
    lapict_sim_ops_remove(&h->ops, FAKE_OP_SPIN);
    inst_bind(f, &f->cfg);
    a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    assert_int_equal(h->sim.sw_at_ns, a + 1000000);
    adv_by(h, 999999, 0);
    adv_by(h, 1, 1);
    assert_int_equal(h->inj[0].host_ns, a + 1000000);
    fake_enter(h);
    assert_int_equal(h->dlv[0].host_ns, a + 1000000);
    assert_int_equal(tu_stats(t).spins, 0);
    c = tu_cfg(); /* no advance: no spin */
    inst_rebind(f, &c, false);
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
    fake_advance(h, 1000);
    a = h->sim.now_ns;
    assert_int_equal(fake_enter(h), LAPICT_OK);
    assert_int_equal(h->sim.spins, 0);
    assert_int_equal(h->sim.now_ns, a);
    assert_int_equal(tu_stats(t).spins, 0);
    assert_int_equal(h->sim.deliveries, 1);
}

/* The registers a write may hit between an early injection and the entry. */
enum preinj_reg { W_LVTT, W_TDCR, W_TMICT, W_TMCCT, W_DEADLINE, W_SVR };

/*
 * Writes made after an expiry was injected ahead (fixed advance 5000 ns)
 * and before the next guest entry: in @mode with a count of 10^6 (or a
 * deadline 10^6 ticks ahead), the write of @val to @reg (a deadline: the
 * old one plus @val). @keeps: the write changes nothing of the expiry (its
 * instant, vector, mask), so it stays injected ahead.
 */
static const struct {
    uint32_t mode;
    enum preinj_reg reg;
    uint64_t val;
    bool keeps;
} preinj_writes[] = {
    {LAPICT_LVTT_ONESHOT, W_TDCR, 0x0, false},
    {LAPICT_LVTT_ONESHOT, W_TDCR, 0xB, true},
    {LAPICT_LVTT_ONESHOT, W_TMICT, 1000000, false},
    {LAPICT_LVTT_ONESHOT, W_TMICT, 0, false},
    {LAPICT_LVTT_ONESHOT, W_LVTT, LAPICT_LVTT_ONESHOT | VEC, true},
    {LAPICT_LVTT_ONESHOT, W_LVTT, LAPICT_LVTT_ONESHOT | (VEC + 1), false},
    {LAPICT_LVTT_ONESHOT, W_LVTT, LAPICT_LVTT_ONESHOT | LAPICT_LVTT_MASK | VEC,
     false},
    {LAPICT_LVTT_ONESHOT, W_LVTT, LAPICT_LVTT_PERIODIC | VEC, false},
    {LAPICT_LVTT_ONESHOT, W_LVTT, LAPICT_LVTT_TSC_DEADLINE | VEC, false},
    {LAPICT_LVTT_ONESHOT, W_TMCCT, 7, true},
    {LAPICT_LVTT_ONESHOT, W_SVR, 1, true},
    {LAPICT_LVTT_ONESHOT, W_SVR, 0, false},
    {LAPICT_LVTT_PERIODIC, W_TDCR, 0xA, false},
    {LAPICT_LVTT_PERIODIC, W_TMICT, 500000, false},
    {LAPICT_LVTT_PERIODIC, W_LVTT, LAPICT_LVTT_ONESHOT | VEC, false},
    {LAPICT_LVTT_TSC_DEADLINE, W_DEADLINE, 1000000, false},
    {LAPICT_LVTT_TSC_DEADLINE, W_DEADLINE, 0, false},
    {LAPICT_LVTT_TSC_DEADLINE, W_LVTT, LAPICT_LVTT_TSC_DEADLINE | VEC, true},
    {LAPICT_LVTT_TSC_DEADLINE, W_LVTT, LAPICT_LVTT_ONESHOT | VEC, false},
};

/*
 * Rule (advance, sections 3-5): a register write between an expiry
 * injected ahead and the next guest entry never lets the guest see that
 * interrupt before its instant, nor twice. A write that changes nothing of
 * the expiry keeps it injected ahead (the write does not wait, the entry
 * does); one that changes its instant, vector or mask lands after the
 * instant (it waits for it, at most the advance), so that the expiry the
 * guest holds happened before the write, as on hardware the expiry of a
 * timer at its instant precedes an instruction that retires after it.
 */
static void write_after_early_injection_is_never_early_nor_twice(void **state)
{
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(preinj_writes); i++) {
        uint32_t mode = preinj_writes[i].mode, val = preinj_writes[i].val;
        uint64_t instant, D = 0, before;
        int rc = LAPICT_OK;
        print_message("case %zu\n", i);
        inst_rebind(f, &f->cfg, false);
        if (mode == LAPICT_LVTT_TSC_DEADLINE) {
            D = deadline_in(h, t, 1000000);
        } else {
            countdown(t, 0xB, mode, VEC, 1000000);
        }
        instant = h->sim.now_ns + 1000000;
        /* The host timer comes the advance ahead: injected ahead. */
        adv_to(h, fake_armed_at(h), 1);
        assert_true(fake_diff(h->sim.now_ns, instant) == 5000);
        before = h->sim.now_ns;
        switch (preinj_writes[i].reg) {
        case W_LVTT:
            rc = lapict_lvtt_write(t, val);
            break;
        case W_TDCR:
            rc = lapict_tdcr_write(t, val);
            break;
        case W_TMICT:
            rc = lapict_tmict_write(t, val);
            break;
        case W_TMCCT:
            rc = lapict_xapic_write(t, LAPICT_XAPIC_TMCCT, val);
            break;
        case W_DEADLINE:
            rc = lapict_tsc_deadline_write(t, val ? D + val : 0);
            break;
        case W_SVR:
            rc = lapict_svr_write(t, val != 0);
            break;
        }
        assert_int_equal(rc, LAPICT_OK);
        if (preinj_writes[i].keeps)
            assert_int_equal(h->sim.now_ns, before);
        else
            assert_true(fake_diff(instant, h->sim.now_ns) >= 0);
        assert_int_equal(fake_enter(h), LAPICT_OK);
        /* The guest runs with the interrupt only from its instant on. */
        assert_int_equal(h->sim.deliveries, 1);
        assert_true(fake_diff(instant, h->dlv[0].host_ns) >= 0);
        /* And it is never given again: no new count ends this soon. */
        fake_advance_to(h, instant + 100000);
        fake_enter(h);
        assert_int_equal(h->sim.injects, 1);
        assert_int_equal(h->sim.deliveries, 1);
        assert_int_equal(tu_stats(t).injections, 1);
    }
}

/* A spin op that moves the clock by 1 ns per call (a host whose busy-wait
 * returns early). */
static void spin_1ns(void *ctx, uint64_t host_ns)
{
    struct fake_host *h = ctx;
    (void)host_ns;
    h->sim.spins++;
    h->sim.now_ns++;
}

/* Rule: a deadline or count closer than the advance is injected at once;
 * the entry waits for its instant, even when the spin op returns early. */
static void closer_than_the_advance_is_injected_at_once_not_early(void **state)
{
    static const struct {
        bool spin_1ns, deadline;
        enum tu_hv hv;
    } rows[] = {{false, true, TU_HV_NEAR_2_64},
                {true, false, TU_HV_NEVER},
                {true, true, TU_HV_NEVER}};
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(rows); i++) {
        uint64_t a, D = 0;
        host_fresh(f, f->base, f->cfg.tsc_khz,
                   rows[i].spin_1ns || !f->b ? 0 : UINT64_MAX - 3000,
                   hv_at(f, rows[i].hv));
        if (rows[i].spin_1ns)
            h->ops.spin_until = spin_1ns;
        inst_bind(f, &f->cfg);
        a = h->sim.now_ns;
        if (rows[i].deadline)
            D = deadline_in(h, t, 1000);
        else
            countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
        fake_run_due(h); /* no clock movement */
        assert_int_equal(h->sim.now_ns, a);
        expect_inj(h, 1, a);
        assert_int_equal(h->sim.deliveries, 0);
        fake_enter(h);
        assert_int_equal(h->sim.deliveries, 1);
        assert_true(fake_diff(a + 1000, h->dlv[0].host_ns) >= 0);
        if (!rows[i].spin_1ns) {
            assert_int_equal(h->dlv[0].host_ns, a + 1000);
            assert_int_equal(tu_stats(t).spins, 1);
        }
        if (rows[i].deadline)
            assert_true(h->dlv[0].guest_tsc >= D);
        adv_by(h, 100000, 1); /* processed on arrival: nothing more */
        fake_enter(h);
        assert_int_equal(h->sim.injects, 1);
    }
}

static uint64_t random_tsc(void *ctx)
{
    static uint64_t x = 88172645463325252ull;
    (void)ctx;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

/* One periodic period with adaptive advance: fire, wait @entry_ns, enter. */
static void adaptive_round(struct fake_host *h, uint64_t entry_ns)
{
    fake_advance_to(h, fake_armed_at(h));
    fake_stall(h, entry_ns);
    fake_enter(h);
}

TU_PAIR_SETUP(adaptive_setup, c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
              c.advance_ns = 1000; c.advance_max_ns = 5000)

/* Rule: the adaptive advance stays in [0, max] and is per instance. */
static void adaptive_advance_stays_bounded_and_per_instance(void **state)
{
    TU_PAIR(state);
    struct fake_host hc;
    struct lapict_timer tc;
    uint32_t seed = 99;
    int i;
    tu_setup(&hc, &tc, c, 0, false);
    hc.ops.guest_tsc = random_tsc;
    countdown(ta, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    countdown(tb, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    countdown(&tc, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    for (i = 0; i < 300; i++) {
        adaptive_round(ha, 3000);
        adaptive_round(hb, 0);
        adaptive_round(&hc, lcg(&seed) % 3000000);
        assert_true(tu_stats(ta).advance_ns <= 5000);
        assert_true(tu_stats(tb).advance_ns <= 5000);
        assert_true(tu_stats(&tc).advance_ns <= 5000);
    }
    for (i = 0; i < 50; i++) { /* absurd late arrivals on A */
        adaptive_round(ha, (i % 2) ? 50000000 : 9000);
        assert_true(tu_stats(ta).advance_ns <= 5000);
    }
    for (i = 0; i < 100; i++)
        adaptive_round(ha, 3000);
    assert_true(tu_stats(ta).advance_ns > tu_stats(tb).advance_ns + 1000);
    assert_true(tu_stats(ta).advance_ns >= 2000);
    assert_true(tu_stats(tb).advance_ns <= 1000);
    /* Never delivered before the instant on B (1 GHz TSC = ns). */
    for (i = 0; i < (int)hb->sim.deliveries && i < (int)FAKE_MAX_EVENTS; i++)
        assert_true(
            fake_diff(hb->sim.cfg.start_ns + 1000000ull * (uint64_t)(i + 1),
                      hb->dlv[i].host_ns) >= 0);
}

/* Let host timers fire one by one, entering the guest after each. */
static void run_until_delivered(struct fake_host *h)
{
    int i;
    fake_run_due(h);
    fake_enter(h);
    for (i = 0; i < 1000 && h->sim.deliveries == 0 && fake_armed(h) &&
                !h->sim.livelocks;
         i++) {
        fake_advance_to(h, fake_armed_at(h));
        fake_enter(h);
    }
}

/* Rule: a deadline is never delivered before the guest TSC reaches it: a
 * 2 GHz TSC converted exactly, one slower than tsc_khz says (500 MHz for
 * 1 GHz) without a callback storm; with and without the advance. */
static void guest_tsc_rate_never_delivers_early(void **state)
{
    static const struct {
        uint32_t host_khz, cfg_khz;
        bool slow;
        uint64_t delta, want_ns;
    } rows[] = {
        {2000000, 2000000, false, 1, 1},
        {2000000, 2000000, false, 2, 1},
        {2000000, 2000000, false, 3, 2},
        {2000000, 2000000, false, 999, 500},
        {2000000, 2000000, false, 1000001, 500001},
        {500000, 1000000, true, 1000000, 2000000},
    };
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(rows) * 2; i++) {
        bool adv = i >= N_OF(rows), slow = rows[i % N_OF(rows)].slow;
        struct lapict_config c = cfg_adv(adv ? 5000 : 0);
        uint64_t want = rows[i % N_OF(rows)].want_ns, a, D;
        c.tsc_khz = rows[i % N_OF(rows)].cfg_khz;
        host_fresh(f, f->base, rows[i % N_OF(rows)].host_khz,
                   slow   ? 7
                   : f->b ? UINT64_MAX - 3000000
                          : 0,
                   f->b == 1);
        inst_bind(f, &c);
        a = h->sim.now_ns;
        D = deadline_in(h, t, rows[i % N_OF(rows)].delta);
        if (!adv)
            assert_int_equal(h->sim.injects, 0);
        run_until_delivered(h);
        assert_false(h->sim.livelocks);
        if (!adv)
            assert_true(h->sim.injects == 0 || h->inj[0].guest_tsc >= D);
        fake_advance(h, 4000000);
        fake_enter(h);
        assert_int_equal(h->sim.deliveries, 1);
        assert_true(h->dlv[0].guest_tsc >= D);
        if (!slow)
            assert_int_equal(h->dlv[0].host_ns, a + want);
        if (!adv) {
            assert_int_equal(h->inj[0].host_ns, a + want);
            assert_true(h->inj[0].guest_tsc >= D);
        }
    }
}

/* Rule: reset restores reset values, cancels all, keeps stats and SVR. */
static void reset_restores_reset_values_and_cancels_everything(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    countdown(t, 0x3, LAPICT_LVTT_PERIODIC, VEC, 100000);
    fake_window(h, false);
    fake_advance(h, 1600000);
    assert_int_equal(tu_stats(t).pending, 1);
    lapict_svr_write(t, false);
    assert_int_equal(lapict_reset(t), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(t), 0x00010000u);
    assert_int_equal(lapict_tdcr_read(t), 0);
    assert_int_equal(lapict_tmict_read(t), 0);
    assert_int_equal(lapict_tmcct_read(t), 0);
    assert_int_equal(lapict_tsc_deadline_read(t), 0);
    assert_false(fake_armed(h));
    s = tu_stats(t);
    assert_int_equal(s.pending, 0);
    assert_true(s.refused >= 1);
    assert_int_equal(s.expiries, 1);
    fake_window(h, true);
    adv_by(h, 10000000, 0);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC); /* forced masked */
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
}

/* Rule: a hardware timer cancelled by reset or mode fires nothing stale. */
static void cancelled_hw_timer_stale_callback_fires_nothing(void **state)
{
    TU_FIX(state);
    uint64_t a;
    int dl;
    for (dl = 0; dl < 2; dl++) {
        inst_rebind(f, &f->cfg, true);
        if (dl) {
            deadline_in(h, t, 500000);
        } else {
            countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
        }
        assert_true(h->sim.hv_armed);
        fake_advance(h, dl ? 100000 : 0);
        if (dl)
            lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
        else
            assert_int_equal(lapict_reset(t), LAPICT_OK);
        assert_false(h->sim.hv_armed);
        assert_false(h->sim.sw_armed);
        assert_true(h->sim.hv_cancels >= 1);
        fake_advance(h, dl ? 400000 : 1000000);
        fake_fire_hv(h); /* a stale callback at the old instant */
        adv_by(h, 1000000, 0);
        assert_int_equal(tu_stats(t).expiries, 0);
        a = h->sim.now_ns;
        lapict_tdcr_write(t, 0xB);
        lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
        lapict_tmict_write(t, 300000);
        adv_by(h, 600000, 2);
        assert_int_equal(h->inj[0].host_ns, a + 300000);
    }
}

/* ---- Expiry, advance and horizon: edge cases ------------------------ */

/* Rule (section 7): an instant past the 2^64 ns horizon is "not yet". */
static void far_deadline_with_advance_never_injects_early(void **state)
{
    static const uint64_t deadlines[] = {UINT64_MAX, 18446725626965977905ull,
                                         UINT64_MAX - 20000000000000ull};
    size_t i;
    (void)state;
    for (i = 0; i < N_OF(deadlines); i++) {
        struct lapict_sim s;
        struct lapict_sim_config sc;
        struct lapict_timer t;
        struct lapict_config c = cfg_adv(5000);
        int k;
        lapict_sim_config_default(&sc);
        sc.tsc_khz = 999999;
        c.tsc_khz = 999999;
        lapict_sim_init(&s, &sc, NULL, NULL);
        assert_int_equal(lapict_init(&t, &c, &lapict_sim_ops, &s), LAPICT_OK);
        lapict_sim_attach(&s, &t);
        lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        lapict_tsc_deadline_write(&t, deadlines[i]);
        for (k = 0; k < 210; k++) { /* on to 2.2 * 10^13 ns */
            lapict_sim_run_until(&s,
                                 s.now_ns + (k < 200 ? 1000000 : 1ull << 41));
            lapict_sim_enter(&s);
        }
        assert_int_equal(s.deliveries, 0);
        assert_int_equal(s.injects, 0);
        assert_int_equal(lapict_tsc_deadline_read(&t), deadlines[i]);
        assert_int_equal(s.spins, 0);
        assert_true(s.sw_arms <= 4);
    }
}

/* Rule: a deadline reached before the TSC wraps fires when serviced after. */
static void
deadline_reached_before_tsc_wrap_fires_when_serviced_late(void **state)
{
    TU_FIX(state);
    int adv;
    for (adv = 0; adv < 2; adv++) {
        struct lapict_config c = cfg_adv(adv ? 5000 : 0);
        host_fresh(f, f->base, c.tsc_khz, UINT64_MAX - 615, f->b == 1);
        inst_bind(f, &c);
        lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        /* Reached at a + 600 (TSC = 2^64 - 616 + elapsed). */
        lapict_tsc_deadline_write(t, UINT64_MAX - 15);
        assert_int_equal(h->sim.injects, 0);
        fake_stall(h, 1600); /* the host timer runs 1000 ns late */
        assert_true(fake_tsc(h) < UINT64_MAX - 15);
        fake_run_due(h);
        fake_enter(h);
        assert_int_equal(h->sim.injects, 1);
        assert_int_equal(lapict_tsc_deadline_read(t), 0);
        assert_int_equal(tu_stats(t).expiries, 1);
        lapict_tsc_deadline_write(t, fake_tsc(h) + 100);
        fake_advance(h, 50);
        fake_stall(h, 1000);
        assert_int_equal(lapict_tsc_deadline_read(t), 0);
        fake_enter(h);
        assert_int_equal(h->sim.injects, 2);
        lapict_tsc_deadline_write(t, 5);
        fake_enter(h);
        assert_int_equal(h->sim.injects, 3);
        lapict_tsc_deadline_write(t, UINT64_MAX - 15);
        fake_advance(h, 1000000);
        fake_enter(h);
        assert_int_equal(h->sim.injects, 3);
        assert_int_equal(lapict_tsc_deadline_read(t), UINT64_MAX - 15);
    }
}

/* Rule: a 2^63 ns clock jump before entry is no UB; the advance stays
 * bounded. */
static void clock_jump_of_2p63_before_entry_is_no_ub(void **state)
{
    static const uint64_t jumps[] = {(1ull << 63) - 100, (1ull << 63) - 1,
                                     1ull << 63, (1ull << 63) + 4000,
                                     UINT64_MAX};
    TU_FIX(state);
    size_t j;
    for (j = 0; j < N_OF(jumps); j++) {
        struct lapict_config c = tu_cfg();
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_ns = 5000;
        c.advance_max_ns = 5000;
        inst_rebind(f, &c, false);
        countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
        adv_to(h, fake_armed_at(h), 1); /* injected ahead */
        fake_stall(h, jumps[j]);
        fake_enter(h);
        assert_true(tu_stats(t).advance_ns <= 5000);
    }
}

/* Injections of one servicing at t = 1 ns: 10 GHz bus, divide 1, periodic
 * N = 1 (ten grid points per ns). */
static unsigned injections_at_1ns(struct tu_fix *f, uint32_t policy, bool adv)
{
    struct lapict_config c = cfg_adv(adv ? 100 : 0);
    c.bus_hz = 10000000000ull;
    c.missed_policy = policy;
    inst_rebind(f, &c, false);
    countdown(&f->t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1);
    fake_advance(&f->h, 1);
    fake_enter(&f->h);
    return f->h.sim.injects;
}

/* Rule: the advance does not change the interrupts of one servicing. */
static void advance_gives_one_interrupt_per_coalesced_servicing(void **state)
{
    TU_FIX(state);
    unsigned catch_up;
    int adv;
    for (adv = 0; adv < 2; adv++) {
        assert_int_equal(injections_at_1ns(f, LAPICT_MISSED_COALESCE, adv), 1);
        assert_int_equal(injections_at_1ns(f, LAPICT_MISSED_DROP, adv), 0);
    }
    catch_up = injections_at_1ns(f, LAPICT_MISSED_CATCH_UP, true);
    assert_int_equal(catch_up,
                     injections_at_1ns(f, LAPICT_MISSED_CATCH_UP, false));
}

/* Rule: a TSC going back before entry ends the wait; no second interrupt,
 * and last_guest_ns < 0 says it came early. */
static void tsc_going_back_before_entry_ends_wait_without_double(void **state)
{
    static const uint64_t tsc0s[] = {0, 4000000000u};
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(tsc0s); i++) {
        host_fresh(f, f->base, f->cfg.tsc_khz, tsc0s[i], f->b == 1 && !i);
        inst_bind(f, &f->cfg);
        deadline_in(h, t, 1000);
        adv_by(h, 0, 1); /* injected ahead, 1 us before the instant */
        h->sim.cfg.tsc_offset -= 1000000000u;
        fake_enter(h);
        assert_int_equal(h->sim.deliveries, 1);
        assert_int_equal(tu_stats(t).spins, 0);
        if (i) {
            assert_int_equal(tu_stats(t).last_arrival_ns, -1000);
            assert_int_equal(tu_stats(t).last_guest_ns, -1000);
        }
        adv_by(h, 1000000000u + 1000, 1); /* the TSC gets to D: no more */
        fake_enter(h);
        assert_int_equal(h->sim.injects, 1);
        assert_int_equal(lapict_tsc_deadline_read(t), 0);
    }
}

/* Rule: lapict_fini() cancels the host timer (none armed: no op call) and
 * uninitialises; calls on it or on NULL are host misuse. */
static void fini_cancels_host_timer_and_uninitialises(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint8_t blob[LAPICT_STATE_SIZE];
    uint32_t v = 1;
    inst_rebind(f, &f->cfg, true); /* idle, the hardware timer offered */
    h->rec.total_calls = 0;
    assert_int_equal(lapict_fini(t), LAPICT_OK);
    assert_int_equal(h->rec.total_calls, 0);
    assert_int_equal(lapict_expire(t), LAPICT_E_INVAL);
    inst_rebind(f, &f->cfg, f->b == 1);
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000);
    assert_true(fake_armed(h));
    assert_int_equal(lapict_fini(t), LAPICT_OK);
    assert_false(fake_armed(h));
    assert_int_equal(f->b == 1 ? h->sim.hv_cancels : h->sim.sw_cancels, 1);
    h->rec.total_calls = 0;
    assert_int_equal(lapict_expire(t), LAPICT_E_INVAL);
    assert_int_equal(h->rec.total_calls, 0);
    assert_int_equal(lapict_tmict_write(t, 5), LAPICT_E_INVAL);
    assert_int_equal(lapict_xapic_read(t, LAPICT_XAPIC_TMICT, &v),
                     LAPICT_E_INVAL);
    assert_int_equal(lapict_tmcct_read(t), 0);
    assert_int_equal(lapict_stats_get(t, &s, sizeof(s)), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save(t, blob, sizeof(blob)), LAPICT_E_INVAL);
    assert_int_equal(lapict_fini(t), LAPICT_E_INVAL);
    assert_false(fake_armed(h));
    adv_by(h, 5000, 0);
    inst_bind(f, &f->cfg);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_RESET);
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 100);
    adv_by(h, 100, 1);
    assert_int_equal(lapict_fini(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_reset(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_expire(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_irq_window_open(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_vcpu_blocking(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_vcpu_unblocked(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_before_guest_entry(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_stats_get(NULL, &s, sizeof(s)), LAPICT_E_INVAL);
    assert_int_equal(lapict_stats_get(t, NULL, sizeof(s)), LAPICT_E_INVAL);
}

/* Rule: last_arrival_ns is the host's readiness, last_guest_ns the guest's. */
static void stats_tell_guest_entry_from_host_arrival(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 100000);
    adv_by(h, 95000, 1); /* injected 5 us ahead, entered on time */
    fake_enter(h);
    s = tu_stats(t);
    assert_int_equal(s.last_arrival_ns, -5000);
    assert_int_equal(s.last_guest_ns, 0);
    deadline_in(h, t, 100000);
    adv_by(h, 95000, 2);
    fake_stall(h, 2000); /* ahead, and the host 2 us late on that */
    fake_enter(h);
    s = tu_stats(t);
    assert_int_equal(s.last_arrival_ns, -3000);
    assert_int_equal(s.last_guest_ns, 0);
    lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC);
    lapict_tmict_write(t, 2000);
    fake_stall(h, 9000); /* nothing ahead, the host 7 us late */
    assert_int_equal(lapict_expire(t), LAPICT_OK);
    fake_enter(h);
    s = tu_stats(t);
    assert_int_equal(s.last_arrival_ns, 7000);
    assert_int_equal(s.last_guest_ns, 7000);
    assert_int_equal(h->sim.deliveries, 3);
}

/* Rule: the statistics start at zero; lapict_stats_get() writes no more
 * than the caller's size. */
static void stats_get_writes_no_more_than_the_callers_size(void **state)
{
    TU_FIX(state);
    struct {
        struct lapict_stats s;
        uint64_t newer[2];
        uint8_t canary[8];
    } big;
    struct lapict_stats s = tu_stats(t);
    size_t i;
    assert_int_equal(s.expiries + s.injections + s.refused + s.masked +
                         s.coalesced + s.dropped + s.illegal_vector +
                         s.mode_errors + s.clamps + s.hv_to_sw + s.sw_to_hv +
                         s.hv_refused + s.spins,
                     0);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.advance_ns, 0);
    assert_int_equal(s.last_error, LAPICT_OK);
    assert_false(s.clamp_reported);
    assert_int_equal(LAPICT_STATS_SIZE_1_0, sizeof(struct lapict_stats));
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 100);
    fake_advance(h, 100);
    memset(&big, 0xEE, sizeof(big));
    assert_int_equal(lapict_stats_get(t, &big.s, sizeof(s) - 1),
                     LAPICT_E_INVAL);
    assert_int_equal(lapict_stats_get(t, &big.s, 0), LAPICT_E_INVAL);
    for (i = 0; i < sizeof(big); i++)
        assert_int_equal(((uint8_t *)&big)[i], 0xEE);
    assert_int_equal(lapict_stats_get(t, &big.s, sizeof(s)), LAPICT_OK);
    assert_int_equal(big.s.size, sizeof(s));
    assert_int_equal(big.s.injections, 1);
    assert_int_equal(big.newer[0], 0xEEEEEEEEEEEEEEEEull);
    assert_int_equal(
        lapict_stats_get(t, &big.s, sizeof(big) - sizeof(big.canary)),
        LAPICT_OK);
    assert_int_equal(big.s.size, sizeof(s));
    assert_int_equal(big.s.injections, 1);
    assert_int_equal(big.newer[0], 0);
    assert_int_equal(big.newer[1], 0);
    for (i = 0; i < sizeof(big.canary); i++)
        assert_int_equal(big.canary[i], 0xEE);
}

/* ---- a wrong tsc_khz (timer.md section 4) --------------------------- */

/* A 15 ms deadline on a 2.5 GHz guest TSC. */
#define WK_REAL_KHZ 2500000u
#define WK_DL_NS 15000000u

/* First ns at which offset + floor(el * khz / 10^6) >= tsc: a host whose
 * tsc_to_host_ns answers exactly. */
static uint64_t wk_exact_tsc_to_host(void *ctx, uint64_t tsc)
{
    struct fake_host *h = ctx;
    return h->sim.cfg.start_ns +
           (tsc - h->sim.cfg.tsc_offset + 0ull) * 1000000u / WK_REAL_KHZ +
           (((tsc - h->sim.cfg.tsc_offset) * 1000000u) % WK_REAL_KHZ != 0);
}

/* Rule: a wrong tsc_khz is reported once, never early; an exact host is on
 * time. */
static void tsc_khz_mismatch_is_reported_once_never_early(void **state)
{
    static const struct {
        uint32_t khz;
        bool exact_host;
        uint32_t inj_ns;
        unsigned fires, reports;
    } rows[] = {
        {1000000u, false, 37500000u, 1, 1},
        {25000000u, false, WK_DL_NS, 2, 1},
        {100000000u, false, WK_DL_NS, 2, 1},
        {WK_REAL_KHZ, false, WK_DL_NS, 1, 0},
        {1000000u, true, WK_DL_NS, 1, 1},
    };
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(rows); i++) {
        struct lapict_config c = tu_cfg();
        uint32_t measured = rows[i].reports ? WK_REAL_KHZ : 0;
        uint64_t t0, D;
        c.tsc_khz = rows[i].khz;
        host_fresh(f, f->base, WK_REAL_KHZ, 1000000u, f->b == 1);
        if (rows[i].exact_host)
            h->ops.tsc_to_host_ns = wk_exact_tsc_to_host;
        inst_bind(f, &c);
        lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        t0 = h->sim.now_ns;
        D = fake_tsc(h) + (uint64_t)WK_DL_NS * WK_REAL_KHZ / 1000000u;
        lapict_tsc_deadline_write(t, D);
        assert_int_equal(tu_stats(t).tsc_khz_measured, 0);
        adv_by(h, 40000000u, 1);
        assert_true(h->inj[0].guest_tsc >= D);
        assert_int_equal(h->inj[0].host_ns - t0, rows[i].inj_ns);
        assert_int_equal(h->sim.sw_fires + h->sim.hv_fires, rows[i].fires);
        assert_int_equal(h->sim.reports, rows[i].reports);
        if (rows[i].reports) {
            assert_int_equal(h->rep[0].status, LAPICT_E_TSC_RATE);
            assert_int_equal(h->rep[0].detail, WK_REAL_KHZ);
        }
        assert_int_equal(tu_stats(t).tsc_khz_measured, measured);
        assert_int_equal(tu_stats(t).last_error, LAPICT_OK);
        /* The next deadline is measured again, but reported no more. */
        lapict_tsc_deadline_write(t, fake_tsc(h) + 1000000u);
        adv_by(h, 2000000u, 2);
        assert_int_equal(h->sim.reports, rows[i].reports);
        assert_int_equal(tu_stats(t).tsc_khz_measured, measured);
    }
}

/* Rule: a TSC that stops re-arms a bounded number of times, never early. */
static void tsc_that_stops_rearms_a_bounded_number_of_times(void **state)
{
    TU_FIX(state);
    uint64_t D, fires, resume;
    D = deadline_in(h, t, 100000u);
    fake_advance(h, 50000u);
    h->sim.cfg.tsc_offset = fake_tsc(h); /* it stops 50 us short of D */
    h->sim.cfg.start_ns = h->sim.now_ns;
    h->sim.cfg.tsc_khz = 0;
    fake_advance(h, 1000000000u);
    fires = h->sim.sw_fires;
    assert_true(fires <= 8 + 31);
    assert_int_equal(h->sim.injects, 0);
    resume = h->sim.now_ns;
    h->sim.cfg.start_ns = h->sim.now_ns;
    h->sim.cfg.tsc_khz = 1000000u;
    adv_by(h, 3000000000u, 1);
    assert_true(h->inj[0].guest_tsc >= D);
    assert_true(h->inj[0].host_ns - resume <= 50000u + 1100000000u);
    assert_true(h->sim.sw_fires - fires <= 3);
    assert_int_equal(h->sim.reports, 1);
    assert_int_equal(h->rep[0].status, LAPICT_E_TSC_RATE);
}

/* Rule: a TSC found off tsc_khz stops deadlines injected ahead. */
static void tsc_off_rate_stops_deadlines_injected_ahead(void **state)
{
    TU_FIX(state);
    struct lapict_config c = cfg_adv(10000);
    uint64_t D, t0;
    unsigned spins;
    c.tsc_khz = 25000000u;
    host_fresh(f, f->base, WK_REAL_KHZ, 1000000u, false);
    inst_bind(f, &c);
    D = deadline_in(h, t, 250000u); /* 100 us on the TSC, 10 by tsc_khz */
    adv_by(h, 0, 1);
    fake_enter(h);
    assert_true(h->dlv[0].guest_tsc >= D);
    assert_int_equal(h->sim.reports, 1);
    spins = h->sim.spins;
    assert_true(spins >= 1);
    t0 = h->sim.now_ns;
    D = fake_tsc(h) + 250000u;
    lapict_tsc_deadline_write(t, D);
    adv_by(h, 99999, 1);
    adv_by(h, 1, 2);
    assert_true(h->inj[1].guest_tsc >= D);
    assert_int_equal(h->inj[1].host_ns - t0, 100000u);
    fake_enter(h);
    assert_int_equal(h->sim.spins, spins);
}

/* Rule: a late due expiry is not held back by the next one ahead. */
static void late_due_expiry_is_not_held_back_by_the_next_one(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 100000);
    adv_to(h, a + 90000, 1);
    fake_enter(h);
    assert_int_equal(h->dlv[0].host_ns, a + 100000);
    /* The host sleeps through the second's advance and instant. */
    fake_stall(h, a + 292000 - h->sim.now_ns);
    adv_by(h, 0, 2);
    fake_enter(h);
    assert_int_equal(h->sim.deliveries, 2);
    assert_int_equal(h->dlv[1].host_ns, a + 292000);
    fake_advance_to(h, a + 300000);
    fake_enter(h);
    assert_int_equal(h->sim.injects, 3);
    assert_int_equal(h->sim.deliveries, 3);
    assert_true(fake_diff(a + 300000, h->dlv[2].host_ns) >= 0);
    fake_advance_to(h, a + 385000);
    fake_enter(h);
    assert_int_equal(h->sim.injects, 3);
}

/* Entries at both bases (SW_ONLY: no hardware timer but where a case binds
 * a host of its own), or at one base for a rule of absolute instants. */
#define FIX(fn, hv) TU_FIXED_AT_BASES(fn, TU_HV_##hv)
#define FIX_WITH(fn, hv, setup) TU_FIXED_AT_BASES_WITH(fn, TU_HV_##hv, setup)
#define SW_ONLY(fn) TU_FIXED_AT_BASES(fn, TU_HV_NEVER)
#define ONLY_AT_0(fn, setup) TU_FIX_ENTRY(fn, " at 0", 0, TU_HV_NEVER, setup)

TU_MAIN(SW_ONLY(oneshot_expires_at_anchor_plus_ns_for_n),
        SW_ONLY(tmcct_reads_n_at_reload_never_zero_while_periodic),
        SW_ONLY(periodic_reload_is_drift_free),
        SW_ONLY(timer_write_replaces_what_was_armed_or_pending),
        SW_ONLY(tdcr_write_preserves_count_and_reanchors),
        SW_ONLY(mode_switch_every_pair),
        SW_ONLY(min_period_clamp_slows_periodic_to_min_period),
        SW_ONLY(min_period_clamp_start_stop_preserves_count),
        SW_ONLY(deadline_fires_when_guest_tsc_reaches_d),
        SW_ONLY(negative_delta_never_wraps_deadline),
        FIX(masked_timer_keeps_counting_and_drops_expiries, NEAR_2_64),
        SW_ONLY(illegal_vector_not_injected_and_reported),
        SW_ONLY(refused_expiry_is_pending_and_delivered_once),
        FIX(register_access_after_instant_processes_expiry, AT_0),
        SW_ONLY(early_late_duplicate_stale_callbacks_are_harmless),
        SW_ONLY(missed_ticks_behind_a_shut_window_follow_the_policy),
        SW_ONLY(missed_ticks_after_a_stall_follow_the_policy),
        FIX(long_stall_gives_one_interrupt_with_o1_host_work, NEAR_2_64),
        SW_ONLY(stall_beyond_2p64_ticks_keeps_the_policy_count),
        FIX_WITH(fixed_advance_injects_early_and_spins_to_instant, NEAR_2_64,
                 advance_5000_setup),
        FIX_WITH(only_expire_applies_advance, NEVER, advance_5000_setup),
        FIX_WITH(write_after_early_injection_is_never_early_nor_twice, NEVER,
                 advance_5000_setup),
        FIX_WITH(closer_than_the_advance_is_injected_at_once_not_early, NEVER,
                 advance_5000_setup),
        {"adaptive_advance_stays_bounded_and_per_instance at 0",
         adaptive_advance_stays_bounded_and_per_instance, adaptive_setup,
         tu_pair_teardown, (void *)(uintptr_t)1},
        SW_ONLY(guest_tsc_rate_never_delivers_early),
        SW_ONLY(reset_restores_reset_values_and_cancels_everything),
        SW_ONLY(cancelled_hw_timer_stale_callback_fires_nothing),
        cmocka_unit_test(far_deadline_with_advance_never_injects_early),
        SW_ONLY(deadline_reached_before_tsc_wrap_fires_when_serviced_late),
        SW_ONLY(clock_jump_of_2p63_before_entry_is_no_ub),
        SW_ONLY(advance_gives_one_interrupt_per_coalesced_servicing),
        FIX_WITH(tsc_going_back_before_entry_ends_wait_without_double,
                 NEAR_2_64, advance_5000_setup),
        SW_ONLY(fini_cancels_host_timer_and_uninitialises),
        FIX_WITH(stats_tell_guest_entry_from_host_arrival, NEAR_2_64,
                 advance_5000_setup),
        SW_ONLY(tsc_khz_mismatch_is_reported_once_never_early),
        SW_ONLY(tsc_that_stops_rearms_a_bounded_number_of_times),
        ONLY_AT_0(tsc_off_rate_stops_deadlines_injected_ahead, tu_fix_setup),
        FIX(stats_get_writes_no_more_than_the_callers_size, ALWAYS),
        FIX_WITH(late_due_expiry_is_not_held_back_by_the_next_one, NEAR_2_64,
                 advance_10000_setup))
