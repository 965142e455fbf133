/* SPDX-License-Identifier: MIT */
/*
 * lib/timer.c: count-down, periodic, TSC-deadline, mask/vector, delivery
 * and pending, missed-tick policies, advance
 * (docs/spec/timer.md sections 3-7), checked against the oracle of oracle.h on
 * a fake host, at clock bases 0 and near 2^64.
 */
#include "lapict_sim.h"
#include "testutil.h"

#define VEC 0x30u
#define VEC2 0x41u

static const uint64_t buses[] = {
    1000000000ull, 25000000ull, 100000000ull,
    134217728ull,  1000ull,     10000000000ull,
};
#define NBUSES (sizeof(buses) / sizeof(buses[0]))

static void countdown(struct lapict_timer *t, uint32_t tdcr, uint32_t mode,
                      uint32_t vec, uint32_t n)
{
    assert_int_equal(lapict_tdcr_write(t, tdcr), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(t, mode | vec), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(t, n), LAPICT_OK);
}

/* The fixture of the rules of a fixed 5 us advance. */
TU_SETUP(advance_5000_setup, c.advance_mode = LAPICT_ADVANCE_FIXED;
         c.advance_ns = 5000)

/* A fixed 10 us advance. */
TU_SETUP(advance_10000_setup, c.advance_mode = LAPICT_ADVANCE_FIXED;
         c.advance_ns = 10000)

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* ---- Section 3: one-shot and periodic count-down ---------------------- */

static void oneshot_expires_at_anchor_plus_ns_for_n(void **state)
{
    static const uint32_t tdcrs[] = {0xB, 0x0, 0xA};
    static const uint32_t counts[] = {1, 3, 1000003};
    size_t b = tu_base_index(state), bi, d, n;
    for (bi = 0; bi < NBUSES; bi++)
        for (d = 0; d < 3; d++)
            for (n = 0; n < 3; n++) {
                struct fake_host h;
                struct lapict_timer t;
                struct lapict_config c = tu_cfg();
                uint32_t N = counts[n], div = oracle_divide(tdcrs[d]);
                uint64_t a, dur, s;
                c.bus_hz = buses[bi];
                tu_setup(&h, &t, &c, tu_bases[b], b == 1);
                fake_advance(&h, 3);
                a = h.sim.now_ns;
                countdown(&t, tdcrs[d], LAPICT_LVTT_ONESHOT, VEC, N);
                dur = oracle_ns_for(N, buses[bi], div);
                print_message("base %zu bus %llu div %u N %u: %llu ns\n", b,
                              (unsigned long long)buses[bi], div, N,
                              (unsigned long long)dur);
                assert_int_equal(lapict_tmcct_read(&t), N);
                /* TMCCT follows E - T(t) at sampled instants. */
                for (s = 1; s <= 4; s++) {
                    uint64_t dt = dur * s / 5;
                    if (dt == 0 || dt >= dur)
                        continue;
                    fake_advance_to(&h, a + dt);
                    assert_int_equal(lapict_tmcct_read(&t),
                                     N - oracle_ticks_in(dt, buses[bi], div));
                }
                fake_advance_to(&h, a + dur - 1);
                assert_int_equal(h.sim.injects, 0);
                assert_int_equal(lapict_tmcct_read(&t),
                                 N - oracle_ticks_in(dur - 1, buses[bi], div));
                fake_advance_to(&h, a + dur);
                assert_int_equal(h.sim.injects, 1);
                assert_int_equal(h.inj[0].host_ns, a + dur);
                assert_int_equal(h.inj[0].vector, VEC);
                /* A one-shot reads 0 from its expiry on and stops. */
                assert_int_equal(lapict_tmcct_read(&t), 0);
                assert_int_equal(lapict_tmict_read(&t), N);
                fake_advance(&h, dur * 3 + 1000);
                assert_int_equal(h.sim.injects, 1);
                assert_int_equal(lapict_tmcct_read(&t), 0);
                tu_check_host(&h);
            }
}

static void tmcct_reads_n_at_reload_never_zero_while_periodic(void **state)
{
    static const uint32_t counts[] = {1, 7, 250001};
    size_t b = tu_base_index(state), bi, n;
    for (bi = 0; bi < NBUSES; bi++)
        for (n = 0; n < 3; n++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            uint32_t N = counts[n];
            uint64_t a, k;
            unsigned expect_inj = 0;
            if (buses[bi] == 1000 && N > 7)
                continue; /* 250 s periods: covered by smaller N */
            c.bus_hz = buses[bi];
            tu_setup(&h, &t, &c, tu_bases[b], b == 0);
            a = h.sim.now_ns;
            countdown(&t, 0x1, LAPICT_LVTT_PERIODIC, VEC, N);
            for (k = 1; k <= 5; k++) {
                uint64_t g = oracle_ns_for(k * N, buses[bi], 4);
                uint64_t pts[3];
                int i;
                pts[0] = g - 1;
                pts[1] = g;
                pts[2] = g + 1;
                for (i = 0; i < 3; i++) {
                    uint64_t T, want;
                    if (fake_diff(h.sim.now_ns, a + pts[i]) < 0)
                        continue;
                    fake_advance_to(&h, a + pts[i]);
                    T = oracle_ticks_in(pts[i], buses[bi], 4);
                    want = N - T % N;
                    assert_int_equal(lapict_tmcct_read(&t), want);
                    assert_true(want >= 1 && want <= N);
                }
                /* Sub-3-ns periods put several grid points into one
                 * ns: then only the TMCCT values are checked. */
                if ((uint64_t)N * 4 * 1000000000ull < 3 * buses[bi])
                    continue;
                expect_inj = (unsigned)k;
                assert_int_equal(h.sim.injects, expect_inj);
                assert_int_equal(h.inj[k - 1].host_ns, a + g);
            }
            tu_check_host(&h);
        }
}

/* Late host callbacks do not move the grid: E += N, never now + period. */
static void periodic_reload_is_drift_free(void **state)
{
    static const uint64_t rates[] = {1000000000ull, 134217728ull, 25000000ull};
    size_t b = tu_base_index(state), r;
    for (r = 0; r < 3; r++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        uint32_t N = (uint32_t)(rates[r] / 4000); /* ~250 us */
        uint32_t seed = 7;
        uint64_t a, k;
        c.bus_hz = rates[r];
        tu_setup(&h, &t, &c, tu_bases[b], false);
        a = h.sim.now_ns;
        countdown(&t, 0xB, LAPICT_LVTT_PERIODIC, VEC, N);
        for (k = 1; k <= 300; k++) {
            uint64_t g = a + oracle_ns_for(k * N, rates[r], 1);
            uint64_t lat = lcg(&seed) % 20000;
            assert_true(h.sim.sw_armed);
            assert_int_equal(h.sim.sw_at_ns, g);
            fake_stall(&h, (g + lat) - h.sim.now_ns);
            fake_fire_sw(&h);
            assert_int_equal(h.sim.injects, k);
            assert_int_equal(h.inj[k - 1].host_ns, g + lat);
        }
        tu_check_host(&h);
    }
}

static void tmict_zero_stops_timer_and_drops_pending(void **state)
{
    TU_FIX(state);
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 300000);
    fake_window(h, false);
    fake_advance(h, 300000);
    assert_int_equal(tu_stats(t).pending, 1);
    assert_int_equal(lapict_tmict_write(t, 0), LAPICT_OK);
    assert_int_equal(tu_stats(t).pending, 0);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_tmcct_read(t), 0);
    fake_window(h, true);
    fake_advance(h, 10000000);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(lapict_tmcct_read(t), 0);
}

static void tmict_write_reanchors_and_drops_pending(void **state)
{
    TU_FIX(state);
    uint64_t a2;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 300000);
    fake_window(h, false);
    fake_advance(h, 450000);
    assert_int_equal(tu_stats(t).pending, 1);
    a2 = h->sim.now_ns;
    assert_int_equal(lapict_tmict_write(t, 100000), LAPICT_OK);
    assert_int_equal(tu_stats(t).pending, 0);
    assert_int_equal(lapict_tmcct_read(t), 100000);
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 0);
    fake_advance_to(h, a2 + 99999);
    assert_int_equal(h->sim.injects, 0);
    fake_advance_to(h, a2 + 200000);
    assert_int_equal(h->sim.injects, 2);
    assert_int_equal(h->inj[0].host_ns, a2 + 100000);
    assert_int_equal(h->inj[1].host_ns, a2 + 200000);
}

/* TDCR write while running: C = TMCCT(now), a = now, E = C, new rate. */
static void tdcr_write_preserves_count_and_reanchors(void **state)
{
    static const uint32_t modes[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC};
    const uint64_t bus = 134217728ull;
    size_t b = tu_base_index(state), m;
    for (m = 0; m < 2; m++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        const uint32_t N = 100000;
        uint64_t a, a2, C, e1, e2;
        c.bus_hz = bus;
        tu_setup(&h, &t, &c, tu_bases[b], m == 1);
        a = h.sim.now_ns;
        countdown(&t, 0xB, modes[m], VEC, N);
        fake_advance(&h, 333333); /* mid-tick at 7.45 ns per tick */
        C = N - oracle_ticks_in(333333, bus, 1);
        assert_int_equal(lapict_tmcct_read(&t), C);
        a2 = h.sim.now_ns;
        (void)a;
        assert_int_equal(lapict_tdcr_write(&t, 0x1), LAPICT_OK); /* /4 */
        assert_int_equal(lapict_tdcr_read(&t), 0x1);
        assert_int_equal(lapict_tmcct_read(&t), C);
        e1 = a2 + oracle_ns_for(C, bus, 4);
        fake_advance_to(&h, e1 - 1);
        assert_int_equal(h.sim.injects, 0);
        assert_int_equal(lapict_tmcct_read(&t),
                         C - oracle_ticks_in(e1 - 1 - a2, bus, 4));
        fake_advance_to(&h, e1);
        assert_int_equal(h.sim.injects, 1);
        assert_int_equal(h.inj[0].host_ns, e1);
        e2 = a2 + oracle_ns_for(C + N, bus, 4);
        fake_advance_to(&h, e2);
        assert_int_equal(h.sim.injects, m == 1 ? 2 : 1);
        if (m == 1)
            assert_int_equal(h.inj[1].host_ns, e2);
        tu_check_host(&h);
    }
}

static void tdcr_write_while_stopped_just_stores(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    assert_int_equal(lapict_tdcr_write(t, 0xA), LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(t), 0);
    assert_false(fake_armed(h));
    fake_advance(h, 1000);
    lapict_lvtt_write(t, VEC);
    lapict_tmict_write(t, 10);
    fake_advance(h, 1279);
    assert_int_equal(h->sim.injects, 0);
    fake_advance(h, 1);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 1000 + 1280);
}

enum md { MD_OS, MD_PER, MD_DL };
static const uint32_t md_bits[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC,
                                   LAPICT_LVTT_TSC_DEADLINE};
static const char *const md_name[] = {"one-shot", "periodic", "deadline"};

/* Every pair of modes: sections 3 (one-shot <-> periodic) and 4. */
static void mode_switch_every_pair(void **state)
{
    size_t b = tu_base_index(state), from, to;
    for (from = 0; from < 3; from++)
        for (to = 0; to < 3; to++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            const uint64_t P = 1000000;
            uint64_t a, want[4];
            unsigned nwant = 0, i;
            print_message("base %zu: %s -> %s\n", b, md_name[from],
                          md_name[to]);
            tu_setup(&h, &t, &c, tu_bases[b], b == 1);
            h.sim.cfg.tsc_offset = 0xFFFFFFFFFFF00000ull * b;
            a = h.sim.now_ns;
            if (from == MD_DL) {
                lapict_lvtt_write(&t, md_bits[from] | VEC);
                lapict_tsc_deadline_write(&t, fake_tsc(&h) + P);
            } else {
                countdown(&t, 0xB, md_bits[from], VEC, (uint32_t)P);
            }
            fake_advance(&h, 400000);
            assert_int_equal(lapict_lvtt_write(&t, md_bits[to] | VEC2),
                             LAPICT_OK);
            assert_int_equal(lapict_lvtt_read(&t), md_bits[to] | VEC2);
            if (from == MD_DL && to == MD_DL) {
                want[nwant++] = a + P;
                assert_true(lapict_tsc_deadline_read(&t) != 0);
            } else if (from == MD_DL || to == MD_DL) {
                /* Into or out of TSC-deadline: everything disarmed. */
                assert_int_equal(lapict_tmict_read(&t), 0);
                assert_int_equal(lapict_tmcct_read(&t), 0);
                assert_int_equal(lapict_tsc_deadline_read(&t), 0);
                assert_false(fake_armed(&h));
            } else {
                /* Not re-anchored: the count carries on. */
                assert_int_equal(lapict_tmict_read(&t), P);
                assert_int_equal(lapict_tmcct_read(&t), P - 400000);
                want[nwant++] = a + P;
                if (to == MD_PER) {
                    want[nwant++] = a + 2 * P;
                    want[nwant++] = a + 3 * P;
                }
            }
            fake_advance_to(&h, a + 3 * P + P / 2);
            assert_int_equal(h.sim.injects, nwant);
            for (i = 0; i < nwant; i++) {
                assert_int_equal(h.inj[i].host_ns, want[i]);
                assert_int_equal(h.inj[i].vector, VEC2);
            }
            if (to == MD_DL)
                assert_int_equal(lapict_tsc_deadline_read(&t), 0);
            tu_check_host(&h);
        }
}

/* ---- Section 3: minimum period ------------------------------------ */

static void min_period_clamp_slows_periodic_to_min_period(void **state)
{
    static const uint32_t counts[] = {1, 3, 7, 99999};
    const uint32_t P = 200000;
    size_t b = tu_base_index(state), n;
    for (n = 0; n < 4; n++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        struct lapict_stats s;
        uint32_t N = counts[n];
        uint64_t a, k;
        c.min_period_ns = P;
        tu_setup(&h, &t, &c, tu_bases[b], false);
        a = h.sim.now_ns;
        countdown(&t, 0x0, LAPICT_LVTT_PERIODIC, VEC, N); /* /2 */
        assert_true(oracle_ns_for(N, 1000000000ull, 2) < P);
        for (k = 1; k <= 3; k++) {
            uint64_t g = oracle_ns_for_clamped(k * N, N, P);
            uint64_t pts[3] = {g - 1, g, g + 1};
            int i;
            for (i = 0; i < 3; i++) {
                uint64_t T, want;
                fake_advance_to(&h, a + pts[i]);
                T = oracle_ticks_in_clamped(pts[i], N, P);
                want = N - T % N;
                assert_int_equal(lapict_tmcct_read(&t), want);
            }
            assert_int_equal(h.sim.injects, k);
            assert_int_equal(h.inj[k - 1].host_ns, a + g);
            assert_int_equal(g, k * P);
        }
        s = tu_stats(&t);
        assert_true(s.clamps >= 1);
        assert_true(s.clamp_reported);
    }
}

/* The fixture of the rules of a 200 us minimum period. */
TU_SETUP(min_period_200us_setup, c.min_period_ns = 200000)

static void min_period_not_applied_at_or_above_min(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_stats s;
    /* ns_for(100000) at /2 is exactly 200000: not below, not clamped. */
    countdown(&f->t, 0x0, LAPICT_LVTT_PERIODIC, VEC, 100000);
    fake_advance(&f->h, 400000);
    assert_int_equal(f->h.sim.injects, 2);
    s = tu_stats(&f->t);
    assert_int_equal(s.clamps, 0);
    assert_false(s.clamp_reported);
}

static void min_period_never_clamps_oneshot_or_deadline(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    countdown(t, 0x0, LAPICT_LVTT_ONESHOT, VEC, 7);
    fake_advance(h, 13);
    assert_int_equal(h->sim.injects, 0);
    fake_advance(h, 1);
    assert_int_equal(h->sim.injects, 1);
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, fake_tsc(h) + 10);
    fake_advance(h, 10);
    assert_int_equal(h->sim.injects, 2);
    s = tu_stats(t);
    assert_int_equal(s.clamps, 0);
    assert_false(s.clamp_reported);
}

/* When the clamp starts or stops applying, the count is preserved. */
static void min_period_clamp_start_stop_preserves_count(void **state)
{
    const uint32_t P = 200000;
    size_t b = tu_base_index(state);
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    uint64_t a, C;
    c.min_period_ns = P;

    /* (a) TDCR write makes ns_for(N) drop below P: clamp starts. */
    tu_setup(&h, &t, &c, tu_bases[b], false);
    countdown(&t, 0xA, LAPICT_LVTT_PERIODIC, VEC, 2000); /* 256 us */
    fake_advance(&h, 100000);
    C = 2000 - 100000 / 128;
    assert_int_equal(lapict_tmcct_read(&t), C);
    a = h.sim.now_ns;
    lapict_tdcr_write(&t, 0x9); /* /64: 128 us < P */
    assert_int_equal(lapict_tmcct_read(&t), C);
    fake_advance_to(&h, a + oracle_ns_for_clamped(C, 2000, P) - 1);
    assert_int_equal(h.sim.injects, 0);
    fake_advance_to(&h, a + oracle_ns_for_clamped(C, 2000, P));
    assert_int_equal(h.sim.injects, 1);
    fake_advance_to(&h, a + oracle_ns_for_clamped(C + 2000, 2000, P));
    assert_int_equal(h.sim.injects, 2);
    assert_int_equal(h.inj[1].host_ns,
                     a + oracle_ns_for_clamped(C + 2000, 2000, P));
    assert_true(tu_stats(&t).clamps >= 1);

    /* (b) periodic -> one-shot: clamp stops, count kept. */
    tu_setup(&h, &t, &c, tu_bases[b], false);
    countdown(&t, 0x0, LAPICT_LVTT_PERIODIC, VEC, 7);
    fake_advance(&h, 100000);
    C = 7 - oracle_ticks_in_clamped(100000, 7, P);
    assert_int_equal(lapict_tmcct_read(&t), C);
    a = h.sim.now_ns;
    lapict_lvtt_write(&t, LAPICT_LVTT_ONESHOT | VEC);
    assert_int_equal(lapict_tmcct_read(&t), C);
    fake_advance_to(&h, a + oracle_ns_for(C, 1000000000ull, 2) - 1);
    assert_int_equal(h.sim.injects, 0);
    fake_advance_to(&h, a + oracle_ns_for(C, 1000000000ull, 2));
    assert_int_equal(h.sim.injects, 1);
    fake_advance(&h, 1000000);
    assert_int_equal(h.sim.injects, 1);

    /* (c) running one-shot -> periodic: clamp starts, count kept. */
    tu_setup(&h, &t, &c, tu_bases[b], false);
    countdown(&t, 0x0, LAPICT_LVTT_ONESHOT, VEC, 7); /* 14 ns */
    fake_advance(&h, 6);
    C = 7 - 3;
    assert_int_equal(lapict_tmcct_read(&t), C);
    a = h.sim.now_ns;
    lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_tmcct_read(&t), C);
    fake_advance_to(&h, a + 14);
    assert_int_equal(h.sim.injects, 0);
    fake_advance_to(&h, a + oracle_ns_for_clamped(C, 7, P));
    assert_int_equal(h.sim.injects, 1);
    assert_int_equal(h.inj[0].host_ns, a + oracle_ns_for_clamped(C, 7, P));
    fake_advance_to(&h, a + oracle_ns_for_clamped(C + 7, 7, P));
    assert_int_equal(h.sim.injects, 2);
    assert_int_equal(h.inj[1].host_ns, a + oracle_ns_for_clamped(C + 7, 7, P));
}

/* ---- Section 4: TSC-deadline ---------------------------------------- */

static void deadline_fires_when_guest_tsc_reaches_d(void **state)
{
    static const uint32_t khz[] = {1000000, 2000000, 2500000,
                                   300000,  1,       100000000};
    static const uint64_t deltas[] = {1, 999, 1000000, 123456789};
    static const uint64_t offsets[] = {0, UINT64_MAX - 500000000ull};
    size_t b = tu_base_index(state), k, d, o;
    for (k = 0; k < 6; k++)
        for (d = 0; d < 4; d++)
            for (o = 0; o < 2; o++) {
                struct fake_host h;
                struct lapict_timer t;
                struct lapict_config c = tu_cfg();
                uint64_t a, D, dur;
                c.tsc_khz = khz[k];
                fake_host_init(&h, tu_bases[b], khz[k], offsets[o], o == 1);
                assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
                a = h.sim.now_ns;
                lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
                D = fake_tsc(&h) + deltas[d];
                lapict_tsc_deadline_write(&t, D);
                assert_int_equal(lapict_tsc_deadline_read(&t), D);
                dur = oracle_tsc_ns(deltas[d], khz[k]);
                print_message("khz %u delta %llu -> %llu ns\n", khz[k],
                              (unsigned long long)deltas[d],
                              (unsigned long long)dur);
                if (dur > 1) {
                    fake_advance_to(&h, a + dur - 1);
                    assert_true(fake_tsc(&h) < D);
                }
                assert_int_equal(h.sim.injects, 0);
                fake_advance_to(&h, a + dur);
                assert_int_equal(h.sim.injects, 1);
                assert_int_equal(h.inj[0].host_ns, a + dur);
                assert_true(h.inj[0].guest_tsc >= D);
                /* After the expiry the MSR reads 0. */
                assert_int_equal(lapict_tsc_deadline_read(&t), 0);
                fake_advance(&h, dur + 1000);
                assert_int_equal(h.sim.injects, 1);
                tu_check_host(&h);
            }
}

static void
deadline_msr_reads_zero_after_expiry_delivered_or_masked(void **state)
{
    (void)state;
    size_t masked;
    for (masked = 0; masked < 2; masked++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        tu_setup(&h, &t, &c, TU_NEAR_WRAP, false);
        lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC |
                                  (masked ? LAPICT_LVTT_MASK : 0));
        lapict_tsc_deadline_write(&t, fake_tsc(&h) + 5000);
        fake_advance(&h, 4999);
        assert_int_equal(lapict_tsc_deadline_read(&t),
                         h.sim.cfg.tsc_offset + 5000);
        fake_advance(&h, 1);
        assert_int_equal(lapict_tsc_deadline_read(&t), 0);
        assert_int_equal(h.sim.injects, masked ? 0 : 1);
        assert_int_equal(tu_stats(&t).masked, masked);
        assert_int_equal(tu_stats(&t).expiries, 1);
    }
}

/* A deadline at or below the guest TSC must fire now, never be
 * taken as a huge unsigned delta; one just above must not fire at once. */
static void negative_delta_never_wraps_deadline(void **state)
{
    static const uint64_t offsets[] = {1000000000000ull, UINT64_MAX - 1000};
    /* D: the TSC at the write - 1, + 0, 1, the TSC + 1, 2^64 - 1. */
    static const struct {
        bool from_tsc;
        uint64_t d;
    } ds[5] = {{true, UINT64_MAX},
               {true, 0},
               {false, 1},
               {true, 1},
               {false, UINT64_MAX}};
    size_t b = tu_base_index(state), o, k;
    for (o = 0; o < 2; o++)
        for (k = 0; k < 5; k++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            uint64_t tsc, D, a;
            fake_host_init(&h, tu_bases[b], 1000000, offsets[o], b == 1);
            assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
            lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
            fake_advance(&h, 10);
            tsc = fake_tsc(&h);
            a = h.sim.now_ns;
            D = ds[k].from_tsc ? tsc + ds[k].d : ds[k].d;
            print_message("base %zu offset %zu case %zu\n", b, o, k);
            assert_int_equal(lapict_tsc_deadline_write(&t, D), LAPICT_OK);
            if (k <= 2) {
                /* Expired at the write, at this very instant. */
                assert_int_equal(h.sim.injects, 1);
                assert_int_equal(h.inj[0].host_ns, a);
                assert_int_equal(lapict_tsc_deadline_read(&t), 0);
            } else if (k == 3) {
                assert_int_equal(h.sim.injects, 0);
                fake_run_due(&h);
                assert_int_equal(h.sim.injects, 0);
                fake_advance(&h, 1);
                assert_int_equal(h.sim.injects, 1);
                assert_int_equal(h.inj[0].host_ns, a + 1);
            } else if (o == 1) {
                /* TSC reaches 2^64-1 after 1000 - 10 ns. */
                fake_advance_to(&h, a + 989);
                assert_int_equal(h.sim.injects, 0);
                fake_advance_to(&h, a + 990);
                assert_int_equal(h.sim.injects, 1);
            } else {
                assert_int_equal(h.sim.injects, 0);
                assert_true(fake_armed(&h));
                assert_true(fake_diff(h.sim.now_ns, fake_armed_at(&h)) > 0);
                fake_advance(&h, 1000000000000ull);
                assert_int_equal(h.sim.injects, 0);
                assert_int_equal(lapict_tsc_deadline_read(&t), D);
            }
            tu_check_host(&h);
        }
}

/* 2^64-1 at a 1 kHz TSC is ~1.8e25 ns away: saturate, never wrap. */
static void deadline_max_at_slow_tsc_saturates(void **state)
{
    size_t b = tu_base_index(state);
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    c.tsc_khz = 1;
    fake_host_init(&h, tu_bases[b], 1, 0, b == 1);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(&t, UINT64_MAX);
    assert_int_equal(h.sim.injects, 0);
    assert_true(fake_armed(&h));
    assert_true(fake_diff(h.sim.now_ns, fake_armed_at(&h)) > 0);
    fake_advance(&h, 1ull << 50);
    assert_int_equal(h.sim.injects, 0);
    assert_int_equal(lapict_tsc_deadline_read(&t), UINT64_MAX);
    tu_check_host(&h);
}

static void deadline_zero_disarms(void **state)
{
    TU_FIX(state);
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, fake_tsc(h) + 100000);
    assert_true(fake_armed(h));
    fake_advance(h, 50000);
    assert_int_equal(lapict_tsc_deadline_write(t, 0), LAPICT_OK);
    assert_int_equal(lapict_tsc_deadline_read(t), 0);
    fake_advance(h, 10000000);
    assert_int_equal(h->sim.injects, 0);
}

static void deadline_write_drops_pending(void **state)
{
    TU_FIX(state);
    uint64_t a;
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    fake_window(h, false);
    lapict_tsc_deadline_write(t, fake_tsc(h) + 1000);
    fake_advance(h, 1000);
    assert_int_equal(tu_stats(t).pending, 1);
    a = h->sim.now_ns;
    lapict_tsc_deadline_write(t, fake_tsc(h) + 5000);
    assert_int_equal(tu_stats(t).pending, 0);
    assert_int_equal(lapict_lvtt_read(t) & LAPICT_LVTT_PENDING, 0);
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 0);
    fake_advance(h, 5000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 5000);
}

static void deadline_rewrite_replaces_previous(void **state)
{
    TU_FIX(state);
    uint64_t a, tsc0;
    a = h->sim.now_ns;
    tsc0 = fake_tsc(h);
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, tsc0 + 100000);
    lapict_tsc_deadline_write(t, tsc0 + 300000); /* later */
    fake_advance_to(h, a + 299999);
    assert_int_equal(h->sim.injects, 0);
    fake_advance_to(h, a + 300000);
    assert_int_equal(h->sim.injects, 1);
    lapict_tsc_deadline_write(t, tsc0 + 900000);
    lapict_tsc_deadline_write(t, tsc0 + 400000); /* earlier */
    fake_advance_to(h, a + 2000000);
    assert_int_equal(h->sim.injects, 2);
    assert_int_equal(h->inj[1].host_ns, a + 400000);
}

/* ---- Section 5: mask and vector -------------------------------------- */

static void masked_timer_keeps_counting_and_drops_expiries(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK, VEC, 1000000);
    fake_advance_to(h, a + 3500000);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(lapict_tmcct_read(t), 500000);
    s = tu_stats(t);
    assert_int_equal(s.masked, 3);
    assert_int_equal(s.expiries, 3);
    assert_int_equal(s.injections, 0);
    assert_int_equal(s.pending, 0);
    /* Unmasking does not resurrect them; the grid goes on. */
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(h->sim.injects, 0);
    fake_advance_to(h, a + 4000000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 4000000);
    s = tu_stats(t);
    assert_int_equal(s.expiries, 4);
    assert_int_equal(s.injections, 1);
}

static void pending_expiry_masked_before_delivery_is_dropped(void **state)
{
    TU_FIX(state);
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
    fake_window(h, false);
    fake_advance(h, 1000);
    assert_int_equal(tu_stats(t).pending, 1);
    lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | LAPICT_LVTT_MASK | VEC);
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(tu_stats(t).pending, 0);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_MASK | VEC);
    /* Unmasked later: it stays dropped. */
    lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC);
    fake_window(h, true);
    fake_advance(h, 100000);
    assert_int_equal(h->sim.injects, 0);
}

static void pending_expiry_delivered_with_new_vector(void **state)
{
    TU_FIX(state);
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
    fake_window(h, false);
    fake_advance(h, 1000);
    lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC2);
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].vector, VEC2);
}

static void illegal_vector_not_injected_and_reported(void **state)
{
    (void)state;
    uint32_t v;
    for (v = 0; v <= 16; v++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        struct lapict_stats s;
        tu_setup(&h, &t, &c, 0, false);
        countdown(&t, 0xB, LAPICT_LVTT_ONESHOT, v, 1000);
        fake_advance(&h, 1000);
        s = tu_stats(&t);
        assert_int_equal(s.expiries, 1);
        if (v < 16) {
            assert_int_equal(h.sim.injects, 0);
            assert_int_equal(h.sim.injects + h.sim.refusals, 0);
            assert_int_equal(s.illegal_vector, 1);
            assert_int_equal(s.injections, 0);
            assert_int_equal(s.last_error, LAPICT_E_VECTOR);
            assert_int_equal(h.sim.reports, 1);
            assert_int_equal(h.rep[0].status, LAPICT_E_VECTOR);
            assert_int_equal(h.rep[0].detail, v);
            assert_int_equal(s.pending, 0);
        } else {
            assert_int_equal(h.sim.injects, 1);
            assert_int_equal(h.inj[0].vector, 16);
            assert_int_equal(s.illegal_vector, 0);
            assert_int_equal(s.last_error, LAPICT_OK);
            assert_int_equal(h.sim.reports, 0);
        }
    }
}

/* Without a report op the illegal vector is still counted, not injected. */
static void illegal_vector_without_report_op(void **state)
{
    (void)state;
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    fake_host_init(&h, 0, 1000000, 0, false);
    fake_ops_null(&h.ops, FAKE_OP_REPORT);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    countdown(&t, 0xB, LAPICT_LVTT_PERIODIC, 3, 100000);
    fake_advance(&h, 300000);
    assert_int_equal(h.sim.injects, 0);
    assert_int_equal(tu_stats(&t).illegal_vector, 3);
}

/* ---- Section 6: delivery, pending ------------------------------------ */

static void refused_expiry_is_pending_and_delivered_once(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
    fake_window(h, false);
    fake_advance(h, 1000);
    s = tu_stats(t);
    assert_int_equal(h->sim.injects, 0);
    assert_true(h->sim.refusals >= 1);
    assert_int_equal(s.refused, h->sim.refusals);
    assert_int_equal(s.pending, 1);
    fake_spurious_expire(h);
    fake_advance(h, 5000);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(fake_window(h, true), LAPICT_OK);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 6000);
    s = tu_stats(t);
    assert_int_equal(s.injections, 1);
    assert_int_equal(s.pending, 0);
    fake_window(h, true);
    fake_spurious_expire(h);
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 1);
}

/* Behaviour choice: a register access after an instant whose host timer
 * has not fired yet processes the expiry right there. */
static void register_access_after_instant_processes_expiry(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    fake_stall(h, 1500000);
    assert_int_equal(lapict_tmcct_read(t), 0);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 1500000);
    fake_run_due(h); /* the late host timer: nothing more */
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 1);

    /* Periodic: TMCCT already shows the reload; one interrupt. */
    a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    fake_stall(h, 2500000);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(h->sim.injects, 2);
    assert_int_equal(h->inj[1].host_ns, a + 2500000);
    assert_int_equal(lapict_tmcct_read(t), 500000);
    assert_int_equal(tu_stats(t).coalesced, 1);
    fake_run_due(h);
    assert_int_equal(h->sim.injects, 2);
    fake_advance_to(h, a + 3000000);
    assert_int_equal(h->sim.injects, 3);
    assert_int_equal(h->inj[2].host_ns, a + 3000000);
}

static void early_late_duplicate_stale_callbacks_are_harmless(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    /* Early callback: re-armed for the instant, nothing injected. */
    fake_stall(h, 400000);
    fake_fire_sw(h);
    assert_int_equal(h->sim.injects, 0);
    assert_true(h->sim.sw_armed);
    assert_int_equal(h->sim.sw_at_ns, a + 1000000);
    /* Spurious/duplicate callback while armed. */
    fake_spurious_expire(h);
    assert_int_equal(h->sim.injects, 0);
    assert_true(h->sim.sw_armed);
    assert_int_equal(h->sim.sw_at_ns, a + 1000000);
    fake_advance_to(h, a + 999999);
    assert_int_equal(h->sim.injects, 0);
    fake_advance_to(h, a + 1000000);
    assert_int_equal(h->sim.injects, 1);
    /* Duplicate after the expiry. */
    fake_fire_sw(h);
    fake_spurious_expire(h);
    assert_int_equal(h->sim.injects, 1);
    /* Stale: the timer was stopped, its old callback arrives. */
    a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
    lapict_tmict_write(t, 0);
    fake_stall(h, 1000);
    fake_fire_sw(h);
    fake_advance(h, 100000);
    assert_int_equal(h->sim.injects, 1);
}

static void
before_guest_entry_without_advanced_injection_does_not_spin(void **state)
{
    TU_FIX(state);
    uint64_t now;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
    fake_advance(h, 1000);
    now = h->sim.now_ns;
    assert_int_equal(fake_enter(h), LAPICT_OK);
    assert_int_equal(h->sim.spins, 0);
    assert_int_equal(h->sim.now_ns, now);
    assert_int_equal(tu_stats(t).spins, 0);
    assert_int_equal(h->sim.deliveries, 1);
}

/* ---- Section 6: missed ticks ---------------------------------------- */

/* The fixture of the catch-up rules. */
TU_SETUP(catch_up_setup, c.missed_policy = LAPICT_MISSED_CATCH_UP)

/* Catch-up bounded to 3 pending. */
TU_SETUP(catch_up_3_setup, c.missed_policy = LAPICT_MISSED_CATCH_UP;
         c.catch_up_max = 3)

/* The fixture of the drop rules. */
TU_SETUP(drop_setup, c.missed_policy = LAPICT_MISSED_DROP)

static void coalesce_keeps_at_most_one_pending(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    fake_window(h, false);
    fake_advance_to(h, a + 5000000);
    s = tu_stats(t);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(s.pending, 1);
    assert_int_equal(s.coalesced, 4);
    assert_int_equal(s.expiries, 5);
    assert_true(s.refused >= 1);
    fake_advance(h, 100);
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 1);
    s = tu_stats(t);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.injections, 1);
    fake_advance_to(h, a + 6000000);
    assert_int_equal(h->sim.injects, 2);
    assert_int_equal(h->inj[1].host_ns, a + 6000000);
}

static void catch_up_delivers_each_missed_tick_one_per_acceptance(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    unsigned calls;
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    fake_window(h, false);
    fake_advance_to(h, a + 5000000);
    s = tu_stats(t);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(s.pending, 5);
    assert_int_equal(s.coalesced, 0);
    assert_int_equal(s.dropped, 0);
    assert_int_equal(lapict_lvtt_read(t) & LAPICT_LVTT_PENDING,
                     LAPICT_LVTT_PENDING);
    calls = h->sim.injects + h->sim.refusals;
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 5);
    assert_int_equal((h->sim.injects + h->sim.refusals) - calls, 5);
    s = tu_stats(t);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.injections, 5);
    /* The host accepts one, then refuses: one delivered per accept. */
    fake_window(h, false);
    fake_advance_to(h, a + 8000000);
    assert_int_equal(tu_stats(t).pending, 3);
    h->rec.refuse = FAKE_OP_INJECT; /* refused after a budget of accepts */
    h->rec.refuse_after = h->rec.calls[LAPICT_SIM_OP_INJECT] + 1;
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 6);
    assert_int_equal(tu_stats(t).pending, 2);
    h->rec.refuse_after = h->rec.calls[LAPICT_SIM_OP_INJECT] + 2;
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 8);
    assert_int_equal(tu_stats(t).pending, 0);
}

static void catch_up_bound_drops_excess(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    fake_window(h, false);
    fake_advance(h, 5000000);
    s = tu_stats(t);
    assert_int_equal(s.pending, 3);
    assert_int_equal(s.dropped, 2);
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 3);
}

static void catch_up_after_stall_delivers_all_missed_in_loop(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    fake_stall(h, 5500000);
    fake_run_due(h);
    assert_int_equal(h->sim.injects, 5);
    assert_int_equal(tu_stats(t).pending, 0);
    assert_int_equal(fake_armed_at(h), a + 6000000);
}

static void
drop_policy_delivers_none_when_several_grid_points_passed(void **state)
{
    (void)state;
    size_t b;
    for (b = 0; b < TU_NBASES; b++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        struct lapict_stats s;
        uint64_t a;
        c.missed_policy = LAPICT_MISSED_DROP;
        tu_setup(&h, &t, &c, tu_bases[b], b == 1);
        a = h.sim.now_ns;
        countdown(&t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
        fake_stall(&h, 3500000);
        fake_run_due(&h);
        s = tu_stats(&t);
        assert_int_equal(h.sim.injects, 0);
        assert_int_equal(s.dropped, 3);
        assert_int_equal(lapict_tmcct_read(&t), 500000);
        fake_advance_to(&h, a + 4000000);
        assert_int_equal(h.sim.injects, 1);
        assert_int_equal(h.inj[0].host_ns, a + 4000000);
        tu_check_host(&h);
    }
}

static void drop_policy_delivers_merely_late_single_expiry(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    fake_stall(h, 1500000);
    fake_run_due(h);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 1500000);
    assert_int_equal(tu_stats(t).dropped, 0);
    fake_advance_to(h, a + 2000000);
    assert_int_equal(h->sim.injects, 2);
}

/*
 * A long stall of a periodic timer is serviced by one callback, one
 * interrupt and a bounded number of host calls, whatever its length (an
 * hour, or a century of 1 ms periods), and the grid goes on where it
 * would have been. The stalls run one after
 * the other on the instance, each from a fresh TMICT write.
 */
static void long_stall_gives_one_interrupt_with_o1_host_work(void **state)
{
    static const uint64_t stalls[] = {3600000000000ull, 1ull << 62};
    const uint64_t P = 1000000;
    TU_FIX(state);
    struct lapict_stats s0, s;
    uint64_t a;
    size_t i;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, (uint32_t)P);
    for (i = 0; i < sizeof(stalls) / sizeof(stalls[0]); i++) {
        uint64_t k = stalls[i] / P;
        /* Restart on the grid: the count is anchored at the write. */
        assert_int_equal(lapict_tmict_write(t, (uint32_t)P), LAPICT_OK);
        a = h->sim.now_ns;
        s0 = tu_stats(t);
        fake_stall(h, stalls[i]);
        fake_clear_records(h);
        fake_run_due(h);
        s = tu_stats(t);
        assert_int_equal(h->sim.expire_calls, 1);
        assert_int_equal(h->sim.injects, 1);
        assert_int_equal(h->inj[0].host_ns, a + stalls[i]);
        assert_int_equal(s.coalesced - s0.coalesced, k - 1);
        assert_true(h->sim.sw_arms + h->sim.hv_arms <= 2);
        assert_true(h->rec.total_calls <= 16);
        assert_true(fake_armed(h));
        assert_int_equal(fake_armed_at(h), a + (k + 1) * P);
        assert_int_equal(lapict_tmcct_read(t), P - stalls[i] % P);
        fake_advance(h, P);
        assert_int_equal(h->sim.injects, 2);
    }
}

/* ---- Section 7: advance -------------------------------------------- */

static void fixed_advance_injects_early_and_spins_to_instant(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a, k;
    a = h->sim.now_ns;
    assert_int_equal(tu_stats(t).advance_ns, 5000);
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    for (k = 1; k <= 3; k++) {
        uint64_t g = a + k * 1000000;
        assert_int_equal(fake_armed_at(h), g - 5000);
        fake_advance_to(h, g - 5001);
        assert_int_equal(h->sim.injects, k - 1);
        fake_advance_to(h, g - 5000);
        assert_int_equal(h->sim.injects, k);
        assert_int_equal(h->inj[k - 1].host_ns, g - 5000);
        fake_advance(h, 700); /* exit + injection cost */
        assert_int_equal(fake_enter(h), LAPICT_OK);
        assert_int_equal(h->sim.deliveries, k);
        assert_int_equal(h->dlv[k - 1].host_ns, g);
        assert_int_equal(h->sim.spins, k);
        assert_int_equal(h->spin_to[k - 1], g);
        /* A second entry does not wait again. */
        fake_enter(h);
        assert_int_equal(h->sim.spins, k);
    }
    s = tu_stats(t);
    assert_int_equal(s.spins, 3);
    assert_int_equal(s.advance_ns, 5000);
}

/* Behaviour choice: only lapict_expire() applies the advance. */
static void only_expire_applies_advance(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    fake_stall(h, 1000000 - 100);
    assert_int_equal(lapict_tmcct_read(t), 100);
    assert_int_equal(h->sim.injects, 0);
    fake_run_due(h); /* the late host timer */
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 1000000 - 100);
    fake_enter(h);
    assert_int_equal(h->dlv[0].host_ns, a + 1000000);
}

static void no_spin_op_means_no_advance(void **state)
{
    (void)state;
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    c.advance_mode = LAPICT_ADVANCE_FIXED;
    c.advance_ns = 5000;
    fake_host_init(&h, 0, 1000000, 0, false);
    fake_ops_null(&h.ops, FAKE_OP_SPIN);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    countdown(&t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    assert_int_equal(h.sim.sw_at_ns, 1000000);
    fake_advance(&h, 999999);
    assert_int_equal(h.sim.injects, 0);
    fake_advance(&h, 1);
    assert_int_equal(h.sim.injects, 1);
    assert_int_equal(h.inj[0].host_ns, 1000000);
    fake_enter(&h);
    assert_int_equal(h.dlv[0].host_ns, 1000000);
    assert_int_equal(tu_stats(&t).spins, 0);
}

/* A deadline closer than the advance is injected at once and
 * the guest still sees it no earlier than its instant. */
static void deadline_closer_than_advance_fires_at_once(void **state)
{
    TU_FIX(state);
    size_t b = f->b;
    uint64_t a, D;
    h->sim.cfg.tsc_offset = b ? UINT64_MAX - 3000 : 0;
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    a = h->sim.now_ns;
    D = fake_tsc(h) + 1000;
    lapict_tsc_deadline_write(t, D);
    fake_run_due(h); /* no clock movement */
    assert_int_equal(h->sim.now_ns, a);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a);
    assert_int_equal(h->sim.deliveries, 0);
    fake_enter(h);
    assert_int_equal(h->sim.deliveries, 1);
    assert_int_equal(h->dlv[0].host_ns, a + 1000);
    assert_true(h->dlv[0].guest_tsc >= D);
    assert_int_equal(tu_stats(t).spins, 1);
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

/* The adaptive advance stays in [0, max] under absurd arrival
 * errors, and each instance tunes its own. */
static void adaptive_advance_stays_bounded_and_per_instance(void **state)
{
    (void)state;
    struct fake_host ha, hb, hc;
    struct lapict_timer ta, tb, tc;
    struct lapict_config c = tu_cfg();
    struct lapict_stats sa, sb;
    uint32_t seed = 99;
    int i;
    c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
    c.advance_ns = 1000;
    c.advance_max_ns = 5000;
    tu_setup(&ha, &ta, &c, 0, false);
    tu_setup(&hb, &tb, &c, TU_NEAR_WRAP, true);
    tu_setup(&hc, &tc, &c, 0, false);
    hc.ops.guest_tsc = random_tsc;
    countdown(&ta, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    countdown(&tb, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    countdown(&tc, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000000);
    for (i = 0; i < 300; i++) {
        /* A enters 3 us after the callback: late unless advance ~3 us. */
        adaptive_round(&ha, 3000);
        /* B enters at once: early by the whole advance. */
        adaptive_round(&hb, 0);
        /* C: a guest TSC of random values gives absurd errors. */
        adaptive_round(&hc, lcg(&seed) % 3000000);
        sa = tu_stats(&ta);
        sb = tu_stats(&tb);
        assert_true(sa.advance_ns <= 5000);
        assert_true(sb.advance_ns <= 5000);
        assert_true(tu_stats(&tc).advance_ns <= 5000);
    }
    /* Absurd late arrivals on A: still bounded. */
    for (i = 0; i < 50; i++) {
        adaptive_round(&ha, (i % 2) ? 50000000 : 9000);
        assert_true(tu_stats(&ta).advance_ns <= 5000);
    }
    for (i = 0; i < 100; i++)
        adaptive_round(&ha, 3000);
    sa = tu_stats(&ta);
    sb = tu_stats(&tb);
    print_message("advance A %u B %u C %u\n", sa.advance_ns, sb.advance_ns,
                  tu_stats(&tc).advance_ns);
    assert_true(sa.advance_ns > sb.advance_ns + 1000);
    assert_true(sa.advance_ns >= 2000);
    assert_true(sb.advance_ns <= 1000);
    /* Never delivered before the instant on B (1 GHz TSC = ns). */
    for (i = 0; i < (int)hb.sim.deliveries && i < (int)FAKE_MAX_EVENTS; i++)
        assert_true(
            fake_diff(hb.sim.cfg.start_ns + 1000000ull * (uint64_t)(i + 1),
                      hb.dlv[i].host_ns) >= 0);
    tu_check_host(&ha);
    tu_check_host(&hb);
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

/* A guest TSC at 2x the host rate is converted exactly and
 * the interrupt is never delivered before the TSC reaches the deadline. */
static void guest_tsc_2x_rate_never_delivers_early(void **state)
{
    static const uint64_t deltas[] = {1, 2, 3, 999, 1000001};
    size_t b = tu_base_index(state), d, adv;
    for (adv = 0; adv < 2; adv++)
        for (d = 0; d < 5; d++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            uint64_t a, D;
            c.tsc_khz = 2000000;
            if (adv) {
                c.advance_mode = LAPICT_ADVANCE_FIXED;
                c.advance_ns = 5000;
            }
            fake_host_init(&h, tu_bases[b], 2000000,
                           b ? UINT64_MAX - 3000000 : 0, b == 1);
            assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
            a = h.sim.now_ns;
            lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
            D = fake_tsc(&h) + deltas[d];
            lapict_tsc_deadline_write(&t, D);
            if (!adv)
                assert_int_equal(h.sim.injects, 0);
            run_until_delivered(&h);
            assert_int_equal(h.sim.deliveries, 1);
            assert_true(h.dlv[0].guest_tsc >= D);
            assert_int_equal(h.dlv[0].host_ns, a + (deltas[d] + 1) / 2);
            if (!adv) {
                assert_int_equal(h.inj[0].host_ns, a + (deltas[d] + 1) / 2);
                assert_true(h.inj[0].guest_tsc >= D);
            }
            tu_check_host(&h);
        }
}

static void slow_guest_tsc_never_delivers_early(void **state)
{
    size_t b = tu_base_index(state), adv;
    for (adv = 0; adv < 2; adv++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        uint64_t a, D;
        if (adv) {
            c.advance_mode = LAPICT_ADVANCE_FIXED;
            c.advance_ns = 5000;
        }
        /* tsc_khz says 1 GHz; the guest TSC really runs at 500 MHz. */
        fake_host_init(&h, tu_bases[b], 500000, 7, b == 1);
        assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
        a = h.sim.now_ns;
        lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        D = fake_tsc(&h) + 1000000;
        lapict_tsc_deadline_write(&t, D);
        run_until_delivered(&h);
        /* No callback storm while the TSC lags behind the estimate. */
        assert_false(h.sim.livelocks);
        if (!adv)
            assert_true(h.sim.injects == 0 || h.inj[0].guest_tsc >= D);
        fake_advance(&h, 4000000);
        fake_enter(&h);
        assert_int_equal(h.sim.deliveries, 1);
        assert_true(h.dlv[0].guest_tsc >= D);
        if (!adv)
            assert_int_equal(h.inj[0].host_ns, a + 2000000);
        tu_check_host(&h);
    }
}

/* ---- reset ------------------------------------------------------- */

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
    assert_true(s.refused >= 1); /* statistics kept */
    assert_int_equal(s.expiries, 1);
    fake_window(h, true);
    fake_advance(h, 10000000);
    assert_int_equal(h->sim.injects, 0);
    /* The SVR disable survives the reset: writes still forced masked. */
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
}

static void reset_with_hw_timer_armed_cancels_it(void **state)
{
    TU_FIX(state);
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
    assert_true(h->sim.hv_armed);
    assert_int_equal(lapict_reset(t), LAPICT_OK);
    assert_true(h->sim.hv_cancels >= 1);
    assert_false(h->sim.hv_armed);
    assert_false(h->sim.sw_armed);
    fake_advance(h, 1000000);
    fake_fire_hv(h); /* stale callback */
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(tu_stats(t).expiries, 0);
}

static void
tsc_deadline_to_periodic_switch_with_hw_timer_armed_never_fires_old_deadline(
    void **state)
{
    (void)state;
    size_t b;
    for (b = 0; b < TU_NBASES; b++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        uint64_t a;
        tu_setup(&h, &t, &c, tu_bases[b], true);
        lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        lapict_tsc_deadline_write(&t, fake_tsc(&h) + 500000);
        assert_true(h.sim.hv_armed);
        fake_advance(&h, 100000);
        lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | VEC);
        assert_false(h.sim.hv_armed);
        assert_true(h.sim.hv_cancels >= 1);
        fake_advance(&h, 400000);
        fake_fire_hv(&h); /* a stale callback at the old deadline */
        fake_advance(&h, 1000000);
        assert_int_equal(h.sim.injects, 0);
        assert_int_equal(tu_stats(&t).expiries, 0);
        /* The periodic timer starts only with a TMICT write. */
        a = h.sim.now_ns;
        lapict_tdcr_write(&t, 0xB);
        lapict_tmict_write(&t, 300000);
        fake_advance(&h, 600000);
        assert_int_equal(h.sim.injects, 2);
        assert_int_equal(h.inj[0].host_ns, a + 300000);
        tu_check_host(&h);
    }
}

/* ---- Expiry, advance and horizon: edge cases ------------------------ */

/* A far TSC deadline with the advance, on the simulated host whose
 * tsc_to_host_ns answer wraps past 2^64 ns. Rule (section 7): the guest
 * never sees a timer interrupt before the TSC reaches the deadline; a host
 * instant beyond the 64-bit horizon is "not yet", never "soon". */
static unsigned far_dl_delivered;
static void far_dl_on_deliver(void *arg, uint64_t when_ns, uint8_t vector)
{
    (void)arg;
    (void)when_ns;
    (void)vector;
    far_dl_delivered++;
}

static void far_deadline_with_advance_never_injects_early(void **state)
{
    static const uint64_t deadlines[] = {
        /* Host instants 2^64 + 18 446 744 073 709 ns, 2^64 + 500 us (both
         * wrap to an instant that looks near) and 2^64 - 1.5 * 10^12. */
        UINT64_MAX, 18446725626965977905ull, UINT64_MAX - 20000000000000ull};
    size_t i;
    (void)state;
    for (i = 0; i < sizeof(deadlines) / sizeof(deadlines[0]); i++) {
        struct lapict_sim s;
        struct lapict_sim_config sc;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        int k;
        lapict_sim_config_default(&sc);
        sc.tsc_khz = 999999;
        c.tsc_khz = 999999;
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 5000;
        far_dl_delivered = 0;
        lapict_sim_init(&s, &sc, far_dl_on_deliver, NULL);
        assert_int_equal(lapict_init(&t, &c, &lapict_sim_ops, &s), LAPICT_OK);
        lapict_sim_attach(&s, &t);
        lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        lapict_tsc_deadline_write(&t, deadlines[i]);
        for (k = 0; k < 200; k++) {
            lapict_sim_run_until(&s, s.now_ns + 1000000);
            lapict_sim_enter(&s);
        }
        /* On to 2.2 * 10^13 ns, past the wrapped instants. */
        for (k = 0; k < 10; k++) {
            lapict_sim_run_until(&s, s.now_ns + (1ull << 41));
            lapict_sim_enter(&s);
        }
        assert_int_equal(far_dl_delivered, 0);
        assert_int_equal(s.injects, 0);
        assert_int_equal(lapict_tsc_deadline_read(&t), deadlines[i]);
        /* Bounded host work: no spin, a handful of arms. */
        assert_int_equal(s.spins, 0);
        assert_true(s.sw_arms <= 4);
    }
}

/* A spin op that moves the clock by 1 ns per call (a host whose busy-wait
 * returns early): the entry wait must keep waiting, not give up. */
static void spin_1ns(void *ctx, uint64_t host_ns)
{
    struct fake_host *h = ctx;
    (void)host_ns;
    h->sim.spins++;
    h->sim.now_ns++;
}

static void entry_wait_never_gives_up_before_the_instant(void **state)
{
    size_t b = tu_base_index(state);
    int deadline;
    for (deadline = 0; deadline < 2; deadline++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        uint64_t a, D = 0;
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 5000;
        fake_host_init(&h, tu_bases[b], c.tsc_khz, 0, false);
        h.ops.spin_until = spin_1ns;
        assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
        a = h.sim.now_ns;
        if (deadline) {
            lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
            D = fake_tsc(&h) + 1000;
            lapict_tsc_deadline_write(&t, D);
        } else {
            countdown(&t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000);
        }
        fake_run_due(&h); /* injected ahead at once (1000 < advance) */
        assert_int_equal(h.sim.injects, 1);
        fake_enter(&h);
        assert_int_equal(h.sim.deliveries, 1);
        assert_true(fake_diff(a + 1000, h.dlv[0].host_ns) >= 0);
        if (deadline)
            assert_true(h.dlv[0].guest_tsc >= D);
        /* The expiry was processed on arrival: nothing more comes. */
        fake_advance(&h, 100000);
        fake_enter(&h);
        assert_int_equal(h.sim.injects, 1);
        tu_check_host(&h);
    }
}

/* Section 4: a deadline reached just before the guest TSC wraps fires even
 * when its host timer runs after the wrap (the TSC then reads below D). */
static void
deadline_reached_before_tsc_wrap_fires_when_serviced_late(void **state)
{
    size_t b;
    int adv;
    (void)state;
    for (b = 0; b < TU_NBASES; b++)
        for (adv = 0; adv < 2; adv++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            uint64_t a;
            if (adv) {
                c.advance_mode = LAPICT_ADVANCE_FIXED;
                c.advance_ns = 5000;
            }
            fake_host_init(&h, tu_bases[b], c.tsc_khz, UINT64_MAX - 615,
                           b == 1);
            assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
            a = h.sim.now_ns;
            lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
            /* Reached at a + 600 (TSC = 2^64 - 616 + elapsed). */
            lapict_tsc_deadline_write(&t, UINT64_MAX - 15);
            assert_int_equal(h.sim.injects, 0);
            fake_stall(&h, 1600); /* the host timer runs 1000 ns late */
            assert_true(fake_tsc(&h) < UINT64_MAX - 15);
            fake_run_due(&h);
            fake_enter(&h);
            assert_int_equal(h.sim.injects, 1);
            assert_int_equal(lapict_tsc_deadline_read(&t), 0);
            assert_int_equal(tu_stats(&t).expiries, 1);
            /* A register access after the wrap also sees it. */
            lapict_tsc_deadline_write(&t, fake_tsc(&h) + 100);
            fake_advance(&h, 50);
            fake_stall(&h, 1000);
            assert_int_equal(lapict_tsc_deadline_read(&t), 0);
            fake_enter(&h);
            assert_int_equal(h.sim.injects, 2);
            /* A deadline written after the wrap, below the TSC, fires now
             * (section 4); one far above it does not. */
            lapict_tsc_deadline_write(&t, 5);
            fake_enter(&h);
            assert_int_equal(h.sim.injects, 3);
            lapict_tsc_deadline_write(&t, UINT64_MAX - 15);
            fake_advance(&h, 1000000);
            fake_enter(&h);
            assert_int_equal(h.sim.injects, 3);
            assert_int_equal(lapict_tsc_deadline_read(&t), UINT64_MAX - 15);
            (void)a;
            tu_check_host(&h);
        }
}

/* No UB (UBSan aborts here otherwise): the host clock jumps by about 2^63
 * between an advanced injection and guest entry; the tuner still keeps the
 * advance within its bound. */
static void clock_jump_of_2p63_before_entry_is_no_ub(void **state)
{
    static const uint64_t jumps[] = {(1ull << 63) - 100, (1ull << 63) - 1,
                                     1ull << 63, (1ull << 63) + 4000,
                                     UINT64_MAX};
    size_t b = tu_base_index(state), j;
    for (j = 0; j < sizeof(jumps) / sizeof(jumps[0]); j++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_ns = 5000;
        c.advance_max_ns = 5000;
        tu_setup(&h, &t, &c, tu_bases[b], false);
        countdown(&t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 1000000);
        fake_advance_to(&h, fake_armed_at(&h)); /* injected ahead */
        assert_int_equal(h.sim.injects, 1);
        fake_stall(&h, jumps[j]);
        fake_enter(&h);
        assert_true(tu_stats(&t).advance_ns <= 5000);
        tu_check_host(&h);
    }
}

/* Section 6: the advance does not change how many interrupts one servicing
 * gives. 10 GHz bus, divide 1, periodic N = 1 (ten grid points per ns). */
static unsigned injections_at_1ns(uint64_t base, uint32_t policy, bool adv)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    c.bus_hz = 10000000000ull;
    c.missed_policy = policy;
    if (adv) {
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 100;
    }
    tu_setup(&h, &t, &c, base, false);
    countdown(&t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1);
    fake_advance(&h, 1);
    fake_enter(&h);
    tu_check_host(&h);
    return h.sim.injects;
}

static void advance_gives_one_interrupt_per_coalesced_servicing(void **state)
{
    size_t b = tu_base_index(state);
    assert_int_equal(
        injections_at_1ns(tu_bases[b], LAPICT_MISSED_COALESCE, false), 1);
    assert_int_equal(
        injections_at_1ns(tu_bases[b], LAPICT_MISSED_COALESCE, true), 1);
    /* Ten grid points passed by t = 1 ns: drop delivers none. */
    assert_int_equal(injections_at_1ns(tu_bases[b], LAPICT_MISSED_DROP, false),
                     0);
    assert_int_equal(injections_at_1ns(tu_bases[b], LAPICT_MISSED_DROP, true),
                     0);
    assert_int_equal(
        injections_at_1ns(tu_bases[b], LAPICT_MISSED_CATCH_UP, true),
        injections_at_1ns(tu_bases[b], LAPICT_MISSED_CATCH_UP, false));
}

/* Section 6 / ops.h horizon rule: a stall of 2^63 ns or more is serviced
 * with O(1) host work, never a storm of callbacks, and nothing early. */
static void stall_beyond_2p63_gives_no_callback_storm(void **state)
{
    static const uint64_t stalls[] = {1ull << 63, (1ull << 63) + 12345,
                                      (1ull << 63) + 999999, UINT64_MAX - 5000};
    size_t b = tu_base_index(state), i;
    int periodic;
    for (i = 0; i < sizeof(stalls) / sizeof(stalls[0]); i++)
        for (periodic = 0; periodic < 2; periodic++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            tu_setup(&h, &t, &c, tu_bases[b], b == 1);
            countdown(&t, 0xB,
                      periodic ? LAPICT_LVTT_PERIODIC : LAPICT_LVTT_ONESHOT,
                      VEC, 1000000);
            fake_clear_records(&h);
            fake_stall(&h, stalls[i]);
            fake_run_due(&h);
            /* Less than a period: only a storm could call back here. */
            fake_advance(&h, 100000);
            print_message("stall %llu: %llu callbacks, %llu arms\n",
                          (unsigned long long)stalls[i],
                          (unsigned long long)h.sim.expire_calls,
                          (unsigned long long)(h.sim.sw_arms + h.sim.hv_arms));
            assert_false(h.sim.livelocks);
            assert_true(h.sim.expire_calls <= 3);
            assert_true(h.sim.sw_arms + h.sim.hv_arms <= 4);
            assert_true(h.sim.injects <= 1);
            tu_check_host(&h);
        }
}

/* timer.h: a guest TSC that goes back (or a clock that does) between an
 * advanced injection and entry ends the wait instead of hanging, and the
 * interrupt is still delivered once: the expiry does not inject again. */
static void tsc_going_back_before_entry_ends_wait_without_double(void **state)
{
    TU_FIX(state);
    uint64_t D;
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    D = fake_tsc(h) + 1000;
    lapict_tsc_deadline_write(t, D);
    fake_run_due(h); /* injected ahead */
    assert_int_equal(h->sim.injects, 1);
    h->sim.cfg.tsc_offset -= 1000000000u; /* the guest TSC goes back 1 s */
    fake_enter(h);
    assert_int_equal(h->sim.deliveries, 1);
    assert_int_equal(tu_stats(t).spins, 0);
    /* Preinject declines a deadline reached meanwhile, and the expiry
     * when the TSC gets to D gives nothing more. */
    fake_advance(h, 1000000000u + 1000);
    fake_enter(h);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(lapict_tsc_deadline_read(t), 0);
}

/* timer.h, lapict_fini(): finishing an instance cancels the host timer it
 * has armed (software or hardware) through its ops, and leaves it
 * uninitialised, so every later call is host misuse (LAPICT_E_INVAL) and a
 * late host callback is harmless; lapict_init() binds it again. */
static void fini_cancels_host_timer_and_uninitialises(void **state)
{
    size_t b = tu_base_index(state);
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    struct lapict_stats s;
    uint8_t blob[LAPICT_STATE_SIZE];
    uint32_t v = 1;
    bool hv = b == 1;
    tu_setup(&h, &t, &c, tu_bases[b], hv);
    countdown(&t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1000);
    assert_true(fake_armed(&h));
    assert_int_equal(lapict_fini(&t), LAPICT_OK);
    assert_false(fake_armed(&h));
    assert_int_equal(hv ? h.sim.hv_cancels : h.sim.sw_cancels, 1);
    /* A callback already under way finds no instance: no op called. */
    h.rec.total_calls = 0;
    assert_int_equal(lapict_expire(&t), LAPICT_E_INVAL);
    assert_int_equal(h.rec.total_calls, 0);
    assert_int_equal(lapict_tmict_write(&t, 5), LAPICT_E_INVAL);
    assert_int_equal(lapict_xapic_read(&t, LAPICT_XAPIC_TMICT, &v),
                     LAPICT_E_INVAL);
    assert_int_equal(lapict_tmcct_read(&t), 0);
    assert_int_equal(lapict_stats_get(&t, &s, sizeof(s)), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save(&t, blob, sizeof(blob)), LAPICT_E_INVAL);
    assert_int_equal(lapict_fini(&t), LAPICT_E_INVAL);
    assert_false(fake_armed(&h));
    fake_advance(&h, 5000);
    assert_int_equal(h.sim.injects, 0);
    /* Bound again: a fresh instance in its reset state. */
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&t), LAPICT_LVTT_RESET);
    countdown(&t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 100);
    fake_advance(&h, 100);
    assert_int_equal(h.sim.injects, 1);
    tu_check_host(&h);
    assert_int_equal(lapict_fini(NULL), LAPICT_E_INVAL);
}

/* lapict_fini() with nothing armed cancels nothing: no op is called. */
static void fini_of_an_idle_instance_calls_no_op(void **state)
{
    struct tu_fix *f = *state;
    f->h.rec.total_calls = 0;
    assert_int_equal(lapict_fini(&f->t), LAPICT_OK);
    assert_int_equal(f->h.rec.total_calls, 0);
    assert_int_equal(lapict_expire(&f->t), LAPICT_E_INVAL);
}

/* timer.h, struct lapict_stats: two measurements per interrupt
 * lapict_expire() injected. last_arrival_ns is the host's readiness at
 * entry, before the wait: with the advance on it reads early (< 0) though
 * the wait hides that from the guest. last_guest_ns is what the guest saw,
 * the entry after the wait: never < 0 for an interrupt the guest did not
 * get early, for a count-down and for a TSC deadline; both equal the
 * lateness when nothing was injected ahead. */
static void stats_tell_guest_entry_from_host_arrival(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    /* Count-down injected ahead: ready 5 us early, entered on time. */
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, VEC, 100000);
    fake_advance(h, 95000);
    assert_int_equal(h->sim.injects, 1);
    fake_enter(h);
    s = tu_stats(t);
    assert_int_equal(s.last_arrival_ns, -5000);
    assert_int_equal(s.last_guest_ns, 0);
    /* A TSC deadline injected ahead, the host 2 us late on that. */
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, fake_tsc(h) + 100000);
    fake_advance(h, 95000);
    assert_int_equal(h->sim.injects, 2);
    fake_stall(h, 2000);
    fake_enter(h);
    s = tu_stats(t);
    assert_int_equal(s.last_arrival_ns, -3000);
    assert_int_equal(s.last_guest_ns, 0);
    /* Nothing ahead (the host was 7 us late): both the lateness. */
    lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC);
    lapict_tmict_write(t, 2000);
    fake_stall(h, 9000);
    assert_int_equal(lapict_expire(t), LAPICT_OK);
    fake_enter(h);
    s = tu_stats(t);
    assert_int_equal(s.last_arrival_ns, 7000);
    assert_int_equal(s.last_guest_ns, 7000);
    assert_int_equal(h->sim.deliveries, 3);
}

/* timer.h: a guest TSC that goes back between an injection ahead and the
 * entry ends the wait; the guest then really gets the interrupt early,
 * and last_guest_ns says so (< 0). */
static void stats_guest_ns_is_negative_only_when_really_early(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    struct lapict_stats s;
    (void)state;
    c.advance_mode = LAPICT_ADVANCE_FIXED;
    c.advance_ns = 5000;
    /* A TSC well above 0, so that going back does not wrap past D. */
    fake_host_init(&h, 0, c.tsc_khz, 4000000000u, false);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(&t, fake_tsc(&h) + 1000);
    fake_run_due(&h); /* injected ahead, 1 us before the instant */
    assert_int_equal(h.sim.injects, 1);
    h.sim.cfg.tsc_offset -= 1000000000u;
    fake_enter(&h);
    s = tu_stats(&t);
    assert_int_equal(s.last_arrival_ns, -1000);
    assert_int_equal(s.last_guest_ns, -1000);
}

/* timer.h, lapict_stats_get(): the caller passes its struct's size and no
 * more is written. Below the first release's size: LAPICT_E_INVAL, nothing
 * written. A newer caller's larger struct: this library's fields, zeros
 * after them up to its size, nothing beyond; out->size says how much is
 * this library's. */
static void stats_get_writes_no_more_than_the_callers_size(void **state)
{
    TU_FIX(state);
    struct {
        struct lapict_stats s;
        uint64_t newer[2];
        uint8_t canary[8];
    } big;
    struct lapict_stats s;
    size_t i;
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

/* A 15 ms deadline on a 2.5 GHz guest TSC, the instance told @khz. */
#define WK_REAL_KHZ 2500000u
#define WK_DL_NS 15000000u

static void wk_setup(struct fake_host *h, struct lapict_timer *t, uint32_t khz,
                     uint64_t base, bool hv)
{
    struct lapict_config c = tu_cfg();
    c.tsc_khz = khz;
    fake_host_init(h, base, WK_REAL_KHZ, 1000000u, hv);
    assert_int_equal(fake_attach(h, t, &c), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC),
                     LAPICT_OK);
}

/* tsc_khz too low (1 GHz for a 2.5 GHz TSC): the host timer fires long
 * after the TSC passed the deadline (22.5 ms late for 15 ms). Rule: it is
 * not silent: the report op gets LAPICT_E_TSC_RATE with the measured rate,
 * once per instance, and the statistics keep the measured rate. */
static void tsc_khz_too_low_is_reported_with_the_measured_rate(void **state)
{
    size_t b = tu_base_index(state);
    struct fake_host h;
    struct lapict_timer t;
    uint64_t t0, D;
    wk_setup(&h, &t, 1000000u, tu_bases[b], b == 1);
    t0 = h.sim.now_ns;
    D = fake_tsc(&h) + (uint64_t)WK_DL_NS * WK_REAL_KHZ / 1000000u;
    lapict_tsc_deadline_write(&t, D);
    assert_int_equal(tu_stats(&t).tsc_khz_measured, 0);
    fake_advance(&h, 40000000u);
    assert_int_equal(h.sim.injects, 1);
    /* Where tsc_khz put it: 37.5 ms, the TSC reached D at 15 ms. */
    assert_int_equal(h.inj[0].host_ns - t0, 37500000u);
    assert_int_equal(h.sim.reports, 1);
    assert_int_equal(h.rep[0].status, LAPICT_E_TSC_RATE);
    assert_int_equal(h.rep[0].detail, WK_REAL_KHZ);
    assert_int_equal(tu_stats(&t).tsc_khz_measured, WK_REAL_KHZ);
    assert_int_equal(tu_stats(&t).last_error, LAPICT_OK);
    /* The next deadline is measured again, but reported no more. */
    lapict_tsc_deadline_write(&t, fake_tsc(&h) + 1000000u);
    fake_advance(&h, 2000000u);
    assert_int_equal(h.sim.injects, 2);
    assert_int_equal(h.sim.reports, 1);
    assert_int_equal(tu_stats(&t).tsc_khz_measured, WK_REAL_KHZ);
    tu_check_host(&h);
}

/* tsc_khz too high (25 and 100 GHz for a 2.5 GHz TSC): the host timer
 * fires with the TSC far short. Rules: the interrupt is never early (the
 * TSC has reached D when it is injected) and comes at the instant the TSC
 * reaches D; the re-aim uses the rate the TSC showed, so one re-arm does
 * (not 137 or 514); the mismatch is reported once with the measured
 * rate. */
static void tsc_khz_too_high_rearms_once_never_early_and_reports(void **state)
{
    static const uint32_t khz[] = {25000000u, 100000000u};
    size_t b, k;
    (void)state;
    for (k = 0; k < 2; k++)
        for (b = 0; b < TU_NBASES; b++) {
            struct fake_host h;
            struct lapict_timer t;
            uint64_t t0, D;
            wk_setup(&h, &t, khz[k], tu_bases[b], b == 1);
            t0 = h.sim.now_ns;
            D = fake_tsc(&h) + (uint64_t)WK_DL_NS * WK_REAL_KHZ / 1000000u;
            lapict_tsc_deadline_write(&t, D);
            fake_advance(&h, 20000000u);
            print_message(
                "%u kHz: %llu fires\n", khz[k],
                (unsigned long long)(h.sim.sw_fires + h.sim.hv_fires));
            assert_int_equal(h.sim.injects, 1);
            assert_true(h.inj[0].guest_tsc >= D);
            assert_int_equal(h.inj[0].host_ns - t0, WK_DL_NS);
            assert_int_equal(h.sim.sw_fires + h.sim.hv_fires, 2);
            assert_int_equal(h.sim.reports, 1);
            assert_int_equal(h.rep[0].status, LAPICT_E_TSC_RATE);
            assert_int_equal(h.rep[0].detail, WK_REAL_KHZ);
            assert_int_equal(tu_stats(&t).tsc_khz_measured, WK_REAL_KHZ);
            tu_check_host(&h);
        }
}

/* The right tsc_khz: nothing is reported, nothing re-armed. A host whose
 * tsc_to_host_ns answers exactly is used for the instant, so a wrong
 * tsc_khz (1 GHz here) costs no lateness and no re-arm; the rate is still
 * wrong, and reported. */
static uint64_t wk_exact_tsc_to_host(void *ctx, uint64_t tsc)
{
    struct fake_host *h = ctx;
    /* First ns at which offset + floor(el * khz / 10^6) >= tsc. */
    return h->sim.cfg.start_ns +
           (tsc - h->sim.cfg.tsc_offset + 0ull) * 1000000u / WK_REAL_KHZ +
           (((tsc - h->sim.cfg.tsc_offset) * 1000000u) % WK_REAL_KHZ != 0);
}

static void tsc_rate_right_reports_nothing_host_exact_is_on_time(void **state)
{
    size_t b, k;
    (void)state;
    for (k = 0; k < 2; k++)
        for (b = 0; b < TU_NBASES; b++) {
            struct fake_host h;
            struct lapict_timer t;
            uint64_t t0, D;
            wk_setup(&h, &t, WK_REAL_KHZ, tu_bases[b], b == 1);
            if (k == 1) {
                /* Told 1 GHz, but the host maps the TSC exactly. */
                struct lapict_config c = tu_cfg();
                h.ops.tsc_to_host_ns = wk_exact_tsc_to_host;
                assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
                lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
            }
            t0 = h.sim.now_ns;
            D = fake_tsc(&h) + (uint64_t)WK_DL_NS * WK_REAL_KHZ / 1000000u;
            lapict_tsc_deadline_write(&t, D);
            fake_advance(&h, 20000000u);
            assert_int_equal(h.sim.injects, 1);
            assert_int_equal(h.inj[0].host_ns - t0, WK_DL_NS);
            assert_int_equal(h.sim.sw_fires + h.sim.hv_fires, 1);
            assert_int_equal(h.sim.reports, k);
            assert_int_equal(tu_stats(&t).tsc_khz_measured,
                             k ? WK_REAL_KHZ : 0);
            tu_check_host(&h);
        }
}

/* Rule: never more than a bounded number of re-arms for one deadline, and
 * still never early and never lost. A guest TSC that stops (a rate no
 * tsc_khz describes) for 1 s: after 8 re-arms at the estimate each waits
 * at least 1 us, doubled each time, so 1 s takes a few dozen re-arms, not
 * one per microsecond; once the TSC runs again the interrupt comes when
 * it reaches D, late by at most the last wait. */
static void tsc_that_stops_rearms_a_bounded_number_of_times(void **state)
{
    TU_FIX(state);
    uint64_t D, fires, resume;
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    D = fake_tsc(h) + 100000u;
    lapict_tsc_deadline_write(t, D);
    fake_advance(h, 50000u);
    /* The TSC stops 50 us short of D. */
    h->sim.cfg.tsc_offset = fake_tsc(h);
    h->sim.cfg.start_ns = h->sim.now_ns;
    h->sim.cfg.tsc_khz = 0;
    fake_advance(h, 1000000000u);
    fires = h->sim.sw_fires;
    print_message("%llu fires in 1 s\n", (unsigned long long)fires);
    assert_true(fires <= 8 + 31);
    assert_int_equal(h->sim.injects, 0);
    /* It runs again: D is 50 us away on the TSC. */
    resume = h->sim.now_ns;
    h->sim.cfg.start_ns = h->sim.now_ns;
    h->sim.cfg.tsc_khz = 1000000u;
    fake_advance(h, 3000000000u);
    assert_int_equal(h->sim.injects, 1);
    assert_true(h->inj[0].guest_tsc >= D);
    assert_true(h->inj[0].host_ns - resume <= 50000u + 1100000000u);
    assert_true(h->sim.sw_fires - fires <= 3);
    assert_int_equal(h->sim.reports, 1);
    assert_int_equal(h->rep[0].status, LAPICT_E_TSC_RATE);
}

/* timer.md section 7: once the TSC was found off tsc_khz, a host without
 * tsc_to_host_ns injects no deadline ahead: the instant tsc_khz gives can
 * be far too soon (10x here), and the wait before entry would spin until
 * the TSC got there. The first deadline, before the rate was known, spins
 * for it; the next fires at its instant, with no spin, never early. */
static void tsc_off_rate_stops_deadlines_injected_ahead(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    uint64_t D, t0;
    unsigned spins;
    (void)state;
    c.tsc_khz = 25000000u;
    c.advance_mode = LAPICT_ADVANCE_FIXED;
    c.advance_ns = 10000;
    fake_host_init(&h, 0, WK_REAL_KHZ, 1000000u, false);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    /* 100 us on the TSC, 10 us by tsc_khz: injected ahead at once. */
    D = fake_tsc(&h) + 250000u;
    lapict_tsc_deadline_write(&t, D);
    fake_run_due(&h);
    assert_int_equal(h.sim.injects, 1);
    fake_enter(&h);
    assert_true(h.dlv[0].guest_tsc >= D);
    assert_int_equal(h.sim.reports, 1);
    spins = h.sim.spins;
    assert_true(spins >= 1);
    /* The next one: no injection ahead, no spin, on time. */
    t0 = h.sim.now_ns;
    D = fake_tsc(&h) + 250000u;
    lapict_tsc_deadline_write(&t, D);
    fake_advance(&h, 99999);
    assert_int_equal(h.sim.injects, 1);
    fake_advance(&h, 1);
    assert_int_equal(h.sim.injects, 2);
    assert_true(h.inj[1].guest_tsc >= D);
    assert_int_equal(h.inj[1].host_ns - t0, 100000u);
    fake_enter(&h);
    assert_int_equal(h.sim.spins, spins);
    tu_check_host(&h);
}

/* ---- misc ---------------------------------------------------------- */

static void timer_calls_null_instance_are_inval(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    assert_int_equal(lapict_reset(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_expire(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_irq_window_open(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_vcpu_blocking(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_vcpu_unblocked(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_before_guest_entry(NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_stats_get(NULL, &s, sizeof(s)), LAPICT_E_INVAL);
    assert_int_equal(lapict_stats_get(t, NULL, sizeof(s)), LAPICT_E_INVAL);
}

static void stats_start_at_zero(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_stats s = tu_stats(&f->t);
    assert_int_equal(s.expiries + s.injections + s.refused + s.masked +
                         s.coalesced + s.dropped + s.illegal_vector +
                         s.mode_errors + s.clamps + s.hv_to_sw + s.sw_to_hv +
                         s.hv_refused + s.spins,
                     0);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.advance_ns, 0);
    assert_int_equal(s.last_error, LAPICT_OK);
    assert_false(s.clamp_reported);
}

/*
 * Rule (section 6, saturating counts): a stall whose expiry count does not
 * fit 64 bits (10 GHz bus, periodic N = 1, a 2^61 ns or 2^62 - 1 ns stall)
 * gives what the policy gives for any multi-tick stall: coalesce one
 * interrupt, drop none, catch-up its bound, all at one instant, and the
 * expiries statistic saturates instead of wrapping.
 */
static void stall_beyond_2p64_ticks_keeps_the_policy_count(void **state)
{
    (void)state;
    static const uint64_t stalls[] = {1ull << 61, (1ull << 62) - 1};
    static const uint32_t policies[] = {
        LAPICT_MISSED_COALESCE, LAPICT_MISSED_DROP, LAPICT_MISSED_CATCH_UP};
    static const unsigned want[] = {1, 0, 1000};
    size_t s, p;
    unsigned i;
    for (s = 0; s < 2; s++)
        for (p = 0; p < 3; p++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            c.bus_hz = 10000000000ull;
            c.missed_policy = policies[p];
            c.catch_up_max = 1000;
            tu_setup(&h, &t, &c, tu_bases[s], false);
            countdown(&t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 1);
            fake_stall(&h, stalls[s]);
            fake_clear_records(&h);
            fake_run_due(&h);
            assert_int_equal(h.sim.expire_calls, 1);
            assert_int_equal(h.sim.injects, want[p]);
            for (i = 1; i < h.sim.injects && i < FAKE_MAX_EVENTS; i++)
                assert_int_equal(h.inj[i].host_ns, h.inj[0].host_ns);
            assert_true(tu_stats(&t).expiries == UINT64_MAX);
            assert_int_equal(lapict_tmcct_read(&t), 1);
            tu_check_host(&h);
        }
}

/*
 * Rule (section 7, advance): an expiry serviced late (here 92 us, the
 * advance 10 us, the period 100 us) goes to the guest at once: injecting
 * the next one ahead and waiting for its instant would hold the due one
 * back. The next one then comes at its instant, once.
 */
static void late_due_expiry_is_not_held_back_by_the_next_one(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, VEC, 100000);
    fake_advance_to(h, a + 90000);
    assert_int_equal(h->sim.injects, 1);
    fake_enter(h);
    assert_int_equal(h->dlv[0].host_ns, a + 100000);
    /* The host sleeps through the second's advance and instant. */
    fake_stall(h, a + 292000 - h->sim.now_ns);
    fake_run_due(h);
    assert_int_equal(h->sim.injects, 2);
    fake_enter(h);
    assert_int_equal(h->sim.deliveries, 2);
    assert_int_equal(h->dlv[1].host_ns, a + 292000);
    /* The third: never early, given once. */
    fake_advance_to(h, a + 300000);
    fake_enter(h);
    assert_int_equal(h->sim.injects, 3);
    assert_int_equal(h->sim.deliveries, 3);
    assert_true(fake_diff(a + 300000, h->dlv[2].host_ns) >= 0);
    fake_advance_to(h, a + 385000);
    fake_enter(h);
    assert_int_equal(h->sim.injects, 3);
}

/*
 * Rule (section 5): an expiry with an illegal vector is dropped and
 * reported when it happens, whether or not the host accepts interrupts and
 * however late its host callback: serviced by a register read after the
 * instant, LVTT shows nothing pending and a legal vector written later
 * gives nothing.
 */
static void illegal_vector_dropped_at_expiry_with_window_shut(void **state)
{
    (void)state;
    static const uint32_t modes[] = {LAPICT_LVTT_TSC_DEADLINE,
                                     LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC};
    size_t m;
    for (m = 0; m < 3; m++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        tu_setup(&h, &t, &c, TU_NEAR_WRAP, false);
        fake_window(&h, false);
        assert_int_equal(lapict_lvtt_write(&t, modes[m] | 5u), LAPICT_OK);
        if (modes[m] == LAPICT_LVTT_TSC_DEADLINE)
            assert_int_equal(lapict_tsc_deadline_write(&t, 100000), LAPICT_OK);
        else
            assert_int_equal(lapict_tmict_write(&t, 100000), LAPICT_OK);
        fake_stall(&h, 250000); /* the callback is late (divide 2) */
        assert_int_equal(lapict_lvtt_read(&t), modes[m] | 5u);
        assert_int_equal(h.sim.reports, 1);
        assert_int_equal(h.rep[0].status, LAPICT_E_VECTOR);
        fake_run_due(&h); /* the late callback finds nothing more */
        assert_int_equal(h.sim.reports, 1);
        assert_int_equal(lapict_lvtt_write(&t, modes[m] | VEC), LAPICT_OK);
        fake_window(&h, true);
        assert_int_equal(h.sim.injects, 0);
        assert_int_equal(tu_stats(&t).illegal_vector, 1);
        tu_check_host(&h);
    }
}

TU_MAIN(
    TU_AT_BASES(oneshot_expires_at_anchor_plus_ns_for_n),
    TU_AT_BASES(tmcct_reads_n_at_reload_never_zero_while_periodic),
    TU_AT_BASES(periodic_reload_is_drift_free),
    TU_FIXED_AT_BASES(tmict_zero_stops_timer_and_drops_pending, TU_HV_NEVER),
    TU_FIXED_AT_BASES(tmict_write_reanchors_and_drops_pending, TU_HV_NEAR_2_64),
    TU_AT_BASES(tdcr_write_preserves_count_and_reanchors),
    TU_FIXED_AT_BASES(tdcr_write_while_stopped_just_stores, TU_HV_NEVER),
    TU_AT_BASES(mode_switch_every_pair),
    TU_AT_BASES(min_period_clamp_slows_periodic_to_min_period),
    TU_FIXED_AT_BASES_WITH(min_period_not_applied_at_or_above_min, TU_HV_NEVER,
                           min_period_200us_setup),
    TU_FIXED_AT_BASES_WITH(min_period_never_clamps_oneshot_or_deadline,
                           TU_HV_NEVER, min_period_200us_setup),
    TU_AT_BASES(min_period_clamp_start_stop_preserves_count),
    TU_AT_BASES(deadline_fires_when_guest_tsc_reaches_d),
    cmocka_unit_test(deadline_msr_reads_zero_after_expiry_delivered_or_masked),
    TU_AT_BASES(negative_delta_never_wraps_deadline),
    TU_AT_BASES(deadline_max_at_slow_tsc_saturates),
    TU_FIXED_AT_BASES(deadline_zero_disarms, TU_HV_ALWAYS),
    TU_FIXED_AT_BASES(deadline_write_drops_pending, TU_HV_NEVER),
    TU_FIXED_AT_BASES(deadline_rewrite_replaces_previous, TU_HV_AT_0),
    TU_FIXED_AT_BASES(masked_timer_keeps_counting_and_drops_expiries,
                      TU_HV_NEAR_2_64),
    TU_FIXED_AT_BASES(pending_expiry_masked_before_delivery_is_dropped,
                      TU_HV_NEVER),
    TU_FIXED_AT_BASES(pending_expiry_delivered_with_new_vector, TU_HV_NEVER),
    cmocka_unit_test(illegal_vector_not_injected_and_reported),
    cmocka_unit_test(illegal_vector_without_report_op),
    TU_FIXED_AT_BASES(refused_expiry_is_pending_and_delivered_once,
                      TU_HV_NEAR_2_64),
    TU_FIXED_AT_BASES(register_access_after_instant_processes_expiry,
                      TU_HV_AT_0),
    TU_FIXED_AT_BASES(early_late_duplicate_stale_callbacks_are_harmless,
                      TU_HV_NEVER),
    TU_FIXED_AT_BASES(
        before_guest_entry_without_advanced_injection_does_not_spin,
        TU_HV_NEVER),
    TU_FIXED_AT_BASES(coalesce_keeps_at_most_one_pending, TU_HV_NEAR_2_64),
    TU_FIXED_AT_BASES_WITH(
        catch_up_delivers_each_missed_tick_one_per_acceptance, TU_HV_AT_0,
        catch_up_setup),
    TU_FIXED_AT_BASES_WITH(catch_up_bound_drops_excess, TU_HV_NEVER,
                           catch_up_3_setup),
    TU_FIXED_AT_BASES_WITH(catch_up_after_stall_delivers_all_missed_in_loop,
                           TU_HV_NEVER, catch_up_setup),
    cmocka_unit_test(drop_policy_delivers_none_when_several_grid_points_passed),
    TU_FIXED_AT_BASES_WITH(drop_policy_delivers_merely_late_single_expiry,
                           TU_HV_NEVER, drop_setup),
    TU_FIXED_AT_BASES(long_stall_gives_one_interrupt_with_o1_host_work,
                      TU_HV_NEAR_2_64),
    TU_FIXED_AT_BASES_WITH(fixed_advance_injects_early_and_spins_to_instant,
                           TU_HV_NEAR_2_64, advance_5000_setup),
    TU_FIXED_AT_BASES_WITH(only_expire_applies_advance, TU_HV_NEVER,
                           advance_5000_setup),
    cmocka_unit_test(no_spin_op_means_no_advance),
    TU_FIXED_AT_BASES_WITH(deadline_closer_than_advance_fires_at_once,
                           TU_HV_NEAR_2_64, advance_5000_setup),
    cmocka_unit_test(adaptive_advance_stays_bounded_and_per_instance),
    TU_AT_BASES(guest_tsc_2x_rate_never_delivers_early),
    TU_AT_BASES(slow_guest_tsc_never_delivers_early),
    TU_FIXED_AT_BASES(reset_restores_reset_values_and_cancels_everything,
                      TU_HV_NEVER),
    TU_FIXED_AT_BASES(reset_with_hw_timer_armed_cancels_it, TU_HV_ALWAYS),
    cmocka_unit_test(
        tsc_deadline_to_periodic_switch_with_hw_timer_armed_never_fires_old_deadline),
    cmocka_unit_test(far_deadline_with_advance_never_injects_early),
    TU_AT_BASES(entry_wait_never_gives_up_before_the_instant),
    cmocka_unit_test(deadline_reached_before_tsc_wrap_fires_when_serviced_late),
    TU_AT_BASES(clock_jump_of_2p63_before_entry_is_no_ub),
    TU_AT_BASES(advance_gives_one_interrupt_per_coalesced_servicing),
    TU_AT_BASES(stall_beyond_2p63_gives_no_callback_storm),
    TU_FIXED_AT_BASES_WITH(tsc_going_back_before_entry_ends_wait_without_double,
                           TU_HV_NEAR_2_64, advance_5000_setup),
    TU_AT_BASES(fini_cancels_host_timer_and_uninitialises),
    TU_FIXED_AT_BASES(fini_of_an_idle_instance_calls_no_op, TU_HV_ALWAYS),
    TU_FIXED_AT_BASES_WITH(stats_tell_guest_entry_from_host_arrival,
                           TU_HV_NEAR_2_64, advance_5000_setup),
    cmocka_unit_test(stats_guest_ns_is_negative_only_when_really_early),
    TU_AT_BASES(tsc_khz_too_low_is_reported_with_the_measured_rate),
    cmocka_unit_test(tsc_khz_too_high_rearms_once_never_early_and_reports),
    cmocka_unit_test(tsc_rate_right_reports_nothing_host_exact_is_on_time),
    TU_FIXED_AT_BASES(tsc_that_stops_rearms_a_bounded_number_of_times,
                      TU_HV_NEVER),
    cmocka_unit_test(tsc_off_rate_stops_deadlines_injected_ahead),
    TU_FIXED_AT_BASES(stats_get_writes_no_more_than_the_callers_size,
                      TU_HV_NEVER),
    TU_FIXED_AT_BASES(timer_calls_null_instance_are_inval, TU_HV_NEVER),
    TU_FIXED_AT_BASES(stats_start_at_zero, TU_HV_ALWAYS),
    cmocka_unit_test(stall_beyond_2p64_ticks_keeps_the_policy_count),
    TU_FIXED_AT_BASES_WITH(late_due_expiry_is_not_held_back_by_the_next_one,
                           TU_HV_NEAR_2_64, advance_10000_setup),
    cmocka_unit_test(illegal_vector_dropped_at_expiry_with_window_shut))
