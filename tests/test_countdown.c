/* SPDX-License-Identifier: MIT */
/*
 * lib/countdown.c: a count-down as registers plus the host instant of its
 * next expiry (docs/spec/state.md section 7). Every test runs at host time
 * 0 and near 2^64 (the fixtures below); instants come from the oracle.
 */
#include "testutil.h"

#define VEC 0x30u
/* A 3 MHz bus: a tick is 333.3 ns, so every instant is rounded. */
#define BUS 3000000ull
#define OK(call) assert_int_equal((call), LAPICT_OK)
#define ONESHOT (LAPICT_LVTT_ONESHOT | VEC)
#define PERIODIC (LAPICT_LVTT_PERIODIC | VEC)

/* The fixtures: a tu_fix on the 3 MHz bus, alone or with another rule. */
TU_SETUP(bus_3mhz_setup, c.bus_hz = BUS)
TU_SETUP(advance_5us_setup, c.bus_hz = BUS;
         c.advance_mode = LAPICT_ADVANCE_FIXED; c.advance_ns = 5000;
         c.advance_max_ns = 5000)
TU_SETUP(no_deadline_setup, c.bus_hz = BUS; c.tsc_deadline = false)
TU_SETUP(clamp_100us_setup, c.bus_hz = BUS; c.min_period_ns = 100000)

/* A second instance of the fixture's configuration, on a host at @now. */
static void fx_twin(const struct tu_fix *f, struct fake_host *h,
                    struct lapict_timer *t, uint64_t now)
{
    tu_setup(h, t, &f->cfg, now, false);
}

static uint64_t ns_for(uint64_t n, uint32_t tdcr)
{
    return oracle_ns_for(n, BUS, oracle_divide(tdcr));
}

static void arm(struct lapict_timer *t, uint32_t tdcr, uint32_t lvtt,
                uint32_t n)
{
    OK(lapict_tdcr_write(t, tdcr));
    OK(lapict_lvtt_write(t, lvtt));
    OK(lapict_tmict_write(t, n));
}

static int get(struct fake_host *h, struct lapict_timer *t,
               struct lapict_countdown *cd)
{
    return lapict_countdown_get(t, h->sim.now_ns, cd);
}

/* Restore *@cd as it is (@lvtt 0), or set to the given fields first. */
static int put(struct fake_host *h, struct lapict_timer *t,
               struct lapict_countdown *cd, uint32_t lvtt, uint32_t tdcr,
               uint32_t tmict, uint64_t next)
{
    if (lvtt) {
        cd->lvtt = lvtt;
        cd->tdcr = tdcr;
        cd->tmict = tmict;
        cd->next_ns = next;
    }
    return lapict_countdown_restore(t, cd, h->sim.now_ns);
}

/* Rule: get gives registers and the next expiry's instant, calling no op. */
static void get_gives_the_instant_of_the_next_expiry(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    uint64_t calls;
    arm(t, 0x0, ONESHOT, 1000);
    fake_advance(h, 12345);
    calls = h->rec.total_calls;
    OK(get(h, t, &cd));
    assert_int_equal(h->rec.total_calls, calls);
    assert_int_equal(cd.lvtt, ONESHOT);
    assert_int_equal(cd.tdcr, 0x0);
    assert_int_equal(cd.tmict, 1000);
    assert_true(cd.next_ns == f->base + ns_for(1000, 0x0));
    /* Periodic, past two expiries: the third grid point. */
    arm(t, 0xB, PERIODIC, 300);
    fake_advance(h, 2 * ns_for(300, 0xB) + 10);
    assert_int_equal(h->sim.injects, 2);
    OK(get(h, t, &cd));
    assert_true(cd.next_ns == f->base + 12345 + ns_for(900, 0xB));
}

/* Rule: no running count-down (reset, an expired one-shot): no instant. */
static void get_gives_none_without_a_running_count_down(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    OK(get(h, t, &cd));
    assert_int_equal(cd.lvtt, LAPICT_LVTT_RESET);
    assert_int_equal(cd.tmict, 0);
    assert_true(cd.next_ns == LAPICT_COUNTDOWN_NONE);
    arm(t, 0xB, ONESHOT, 50);
    fake_advance(h, ns_for(50, 0xB));
    assert_int_equal(h->sim.injects, 1);
    OK(get(h, t, &cd));
    assert_int_equal(cd.tmict, 50);
    assert_true(cd.next_ns == LAPICT_COUNTDOWN_NONE);
}

/* Rule: a due, unprocessed expiry is given in the past; get runs none. */
static void get_gives_a_due_unprocessed_expiry_in_the_past(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    arm(t, 0xB, ONESHOT, 40);
    fake_stall(h, ns_for(40, 0xB) + 777);
    OK(get(h, t, &cd));
    assert_true(cd.next_ns == f->base + ns_for(40, 0xB));
    assert_int_equal(h->sim.injects, 0);
}

/* Rule: a TSC deadline or a held interrupt is more than a count-down:
 * LAPICT_E_NOT_COUNTDOWN with the part described; NULLs are INVAL. */
static void get_reports_more_than_a_count_down(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    uint64_t t0;
    OK(lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC));
    OK(lapict_tsc_deadline_write(t, fake_tsc(h) + 5000));
    assert_int_equal(get(h, t, &cd), LAPICT_E_NOT_COUNTDOWN);
    assert_int_equal(cd.lvtt, LAPICT_LVTT_TSC_DEADLINE | VEC);
    assert_int_equal(cd.tmict, 0);
    assert_true(cd.next_ns == LAPICT_COUNTDOWN_NONE);
    fake_window(h, false);
    t0 = h->sim.now_ns;
    arm(t, 0xB, PERIODIC, 100);
    fake_advance(h, ns_for(100, 0xB) + 1);
    assert_int_equal(get(h, t, &cd), LAPICT_E_NOT_COUNTDOWN);
    assert_true(cd.next_ns == t0 + ns_for(200, 0xB));
    assert_int_equal(lapict_countdown_get(NULL, 0, &cd), LAPICT_E_INVAL);
    assert_int_equal(lapict_countdown_get(t, 0, NULL), LAPICT_E_INVAL);
}

/* Rule: an expiry injected ahead (advance) is reported, at its instant. */
static void get_reports_an_expiry_injected_ahead(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    arm(t, 0xB, ONESHOT, 1000);
    fake_advance(h, ns_for(1000, 0xB) - 4000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(get(h, t, &cd), LAPICT_E_NOT_COUNTDOWN);
    assert_true(cd.next_ns == f->base + ns_for(1000, 0xB));
    fake_enter(h);
}

/* A one-shot of @tmict restored due @d ns from now, on the fixture. */
static void resume_at(struct tu_fix *f, uint64_t d, uint32_t tmict)
{
    struct fake_host *h = &f->h;
    struct lapict_timer *t = &f->t;
    struct lapict_countdown cd;
    uint64_t next = h->sim.now_ns + d;
    OK(put(h, t, &cd, ONESHOT, 0xB, tmict, next));
    assert_int_equal(lapict_tmict_read(t), tmict);
    assert_int_equal(lapict_lvtt_read(t), ONESHOT);
    assert_int_equal(lapict_tmcct_read(t), oracle_ticks_in(d - 1, BUS, 1) + 1);
    fake_advance_to(h, next - 1);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(lapict_tmcct_read(t), 1);
    fake_advance_to(h, next);
    assert_int_equal(h->sim.injects, 1);
    assert_true(h->inj[0].host_ns == next);
    assert_int_equal(lapict_tmcct_read(t), 0);
    tu_check_host(h);
}

/* Rule: restore resumes at the count left to next_ns (the ticks whose
 * duration first reaches it) and expires exactly at next_ns, never early,
 * at every offset within a few ticks and 2997 ticks on. */
static void restore_resumes_at_the_count_left_to_next_ns(void **state)
{
    TU_FIX(state);
    uint64_t d;
    for (d = 1; d < 1500; d += 7) {
        tu_setup(h, t, &f->cfg, f->base + 100, false);
        resume_at(f, d, 10);
    }
    tu_setup(h, t, &f->cfg, f->base, false);
    resume_at(f, 999000, 5000);
}

/* Rule: the periodic grid of N ticks goes on from the count at next_ns. */
static void restore_continues_the_periodic_grid_from_next_ns(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    uint64_t next = f->base + 250, period = ns_for(600, 0x0);
    uint64_t c = oracle_ticks_in(249, BUS, 2) + 1;
    uint64_t anchor = next - ns_for(c, 0x0);
    unsigned i;
    OK(put(h, t, &cd, PERIODIC, 0x0, 600, next));
    fake_advance_to(h, next + 3 * period + 1);
    assert_int_equal(h->sim.injects, 4);
    for (i = 0; i < 4; i++)
        assert_true(h->inj[i].host_ns == anchor + ns_for(c + 600u * i, 0x0));
    assert_true(h->inj[0].host_ns == next);
}

/* Rule: a next_ns beyond the whole count (years, or 1 ns) is cut to it. */
static void restore_cuts_next_ns_to_the_whole_count(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    uint64_t full = ns_for(200, 0x3);
    OK(put(h, t, &cd, ONESHOT, 0x3, 200, f->base + (1ull << 62)));
    assert_int_equal(lapict_tmcct_read(t), 200);
    assert_true(fake_armed_at(h) == f->base + full);
    cd.next_ns = f->base + full + 1;
    OK(put(h, t, &cd, 0, 0, 0, 0));
    assert_int_equal(lapict_tmcct_read(t), 200);
    fake_advance_to(h, f->base + full);
    assert_int_equal(h->sim.injects, 1);
    assert_true(h->inj[0].host_ns == f->base + full);
}

/* Rule: restore never injects: a due expiry is held for the window. */
static void restore_holds_due_expiries_pending_never_injects(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    fake_advance(h, 50000);
    OK(put(h, t, &cd, ONESHOT, 0xB, 100, h->sim.now_ns - 10000));
    assert_int_equal(h->sim.injects + h->sim.refusals, 0);
    assert_int_equal(lapict_lvtt_read(t), ONESHOT | LAPICT_LVTT_PENDING);
    assert_int_equal(lapict_tmcct_read(t), 0);
    OK(fake_window(h, true));
    assert_int_equal(h->sim.injects, 1);
    fake_advance(h, 10000000);
    assert_int_equal(h->sim.injects, 1);
}

/* Rule: due periodic ticks follow the missed-tick policy: catch-up holds
 * the expiry at next_ns and the grid points after it, one per window, and
 * the grid goes on; coalesce holds one. */
static void restore_applies_the_missed_tick_policy_to_due_ticks(void **state)
{
    TU_FIX(state);
    struct fake_host h2;
    struct lapict_timer t2;
    struct lapict_config c = f->cfg;
    struct lapict_countdown cd;
    uint64_t period = ns_for(300, 0xB), now;
    struct lapict_stats s;
    c.missed_policy = LAPICT_MISSED_CATCH_UP;
    tu_setup(&h2, &t2, &c, f->base, false);
    fake_advance(&h2, 10 * period);
    now = h2.sim.now_ns;
    OK(put(&h2, &t2, &cd, PERIODIC, 0xB, 300, now - 4 * period - period / 2));
    assert_int_equal(tu_stats(&t2).pending, 5);
    assert_int_equal(h2.sim.injects + h2.sim.refusals, 0);
    fake_window(&h2, true);
    assert_int_equal(h2.sim.injects, 5);
    fake_advance_to(&h2, cd.next_ns + 5 * period - 1);
    assert_int_equal(h2.sim.injects, 5);
    fake_advance_to(&h2, cd.next_ns + 5 * period);
    assert_int_equal(h2.sim.injects, 6);
    tu_check_host(&h2);
    cd.next_ns = h->sim.now_ns;
    fake_advance(h, 4 * period);
    OK(put(h, t, &cd, 0, 0, 0, 0));
    s = tu_stats(t);
    assert_int_equal(s.pending, 1);
    assert_int_equal(s.coalesced, 4);
}

/* Rule: an expiry 2^63 - 1 ns behind is due by the horizon rule (one
 * interrupt); a periodic grid goes on within the horizon. */
static void restore_takes_a_due_expiry_beyond_the_horizon_as_due(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    int64_t ahead;
    OK(put(h, t, &cd, ONESHOT, 0xB, 7, h->sim.now_ns - ((1ull << 63) - 1)));
    assert_int_equal(tu_stats(t).pending, 1);
    cd.lvtt = PERIODIC;
    OK(put(h, t, &cd, 0, 0, 0, 0));
    assert_int_equal(tu_stats(t).pending, 1);
    assert_true(fake_armed(h));
    ahead = fake_diff(h->sim.now_ns, fake_armed_at(h));
    assert_true(ahead > 0 && ahead <= (int64_t)ns_for(7, 0xB));
}

/* Rule: without a count-down (an expired one-shot, TSC-deadline mode)
 * restore stops the timer: TMICT kept, TMCCT 0, nothing armed. */
static void restore_without_count_down_stops_the_timer(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    arm(t, 0xB, PERIODIC, 100);
    OK(put(h, t, &cd, ONESHOT, 0x1, 100, LAPICT_COUNTDOWN_NONE));
    assert_int_equal(lapict_tmict_read(t), 100);
    assert_int_equal(lapict_tmcct_read(t), 0);
    assert_int_equal(lapict_tdcr_read(t), 0x1);
    assert_false(fake_armed(h));
    fake_advance(h, 100000000);
    assert_int_equal(h->sim.injects, 0);
    OK(put(h, t, &cd, LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 0,
           LAPICT_COUNTDOWN_NONE));
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_TSC_DEADLINE | VEC);
    assert_true(lapict_tsc_deadline_read(t) == 0);
}

/* Rule: restore replaces pending and deadline state; get gives it back. */
static void restore_replaces_deadline_and_pending_state(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd, back;
    fake_window(h, false);
    arm(t, 0xB, PERIODIC, 100);
    fake_advance(h, ns_for(100, 0xB));
    assert_int_equal(tu_stats(t).pending, 1);
    OK(put(h, t, &cd, ONESHOT, 0xB, 100, h->sim.now_ns + ns_for(50, 0xB)));
    assert_int_equal(tu_stats(t).pending, 0);
    OK(get(h, t, &back));
    assert_int_equal(back.lvtt, cd.lvtt);
    assert_int_equal(back.tdcr, cd.tdcr);
    assert_int_equal(back.tmict, cd.tmict);
    assert_true(back.next_ns == cd.next_ns);
}

/* Rule: while software-disabled LVTT is restored masked; it still counts. */
static void restore_masks_lvtt_while_software_disabled(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    OK(lapict_svr_write(t, false));
    OK(put(h, t, &cd, PERIODIC, 0xB, 100, h->sim.now_ns + ns_for(10, 0xB)));
    assert_int_equal(lapict_lvtt_read(t), PERIODIC | LAPICT_LVTT_MASK);
    assert_int_equal(lapict_tmcct_read(t), 10);
    fake_advance(h, ns_for(310, 0xB));
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(tu_stats(t).masked, 4);
}

/* Rule: a due expiry with an illegal vector is reported once, not held. */
static void restore_reports_an_illegal_vector_due_once(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    fake_advance(h, 1000);
    OK(put(h, t, &cd, LAPICT_LVTT_ONESHOT | 0x05u, 0xB, 10, h->sim.now_ns - 1));
    assert_int_equal(h->sim.reports, 1);
    assert_int_equal(h->rep[0].status, LAPICT_E_VECTOR);
    assert_int_equal(tu_stats(t).illegal_vector, 1);
    assert_int_equal(tu_stats(t).pending, 0);
    fake_window(h, true);
    assert_int_equal(h->sim.injects, 0);
}

/* Rule: what no guest produces is LAPICT_E_STATE_FIELD, the instance
 * intact and no op called; NULLs are INVAL. */
static void restore_rejects_what_no_guest_produces_state_intact(void **state)
{
    TU_FIX(state);
    static const struct {
        uint32_t lvtt, tdcr, tmict;
        int next; /* 0 none, 1 ahead */
    } bad[] = {
        {ONESHOT | LAPICT_LVTT_PENDING, 0, 10, 1},
        {ONESHOT | 0x100u, 0, 10, 1},
        {ONESHOT | 0x80000000u, 0, 10, 0},
        {LAPICT_LVTT_MODE | VEC, 0, 10, 1},
        {LAPICT_LVTT_MODE | VEC, 0, 0, 0},
        {ONESHOT, 0x4, 10, 1},
        {ONESHOT, 0x10, 10, 0},
        {ONESHOT, 0, 0, 1},
        {PERIODIC, 0, 0, 1},
        {LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 10, 0},
        {LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 10, 1},
        {LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 0, 1},
    };
    struct lapict_timer before;
    struct lapict_countdown cd;
    uint64_t calls;
    size_t i;
    arm(t, 0x3, PERIODIC, 777);
    fake_advance(h, 1234);
    before = *t;
    calls = h->rec.total_calls;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t next =
            bad[i].next ? h->sim.now_ns + 1000 : LAPICT_COUNTDOWN_NONE;
        assert_int_equal(
            put(h, t, &cd, bad[i].lvtt, bad[i].tdcr, bad[i].tmict, next),
            LAPICT_E_STATE_FIELD);
        assert_memory_equal(t, &before, sizeof(before));
        assert_int_equal(h->rec.total_calls, calls);
    }
    assert_int_equal(lapict_countdown_restore(NULL, &cd, 0), LAPICT_E_INVAL);
    assert_int_equal(lapict_countdown_restore(t, NULL, 0), LAPICT_E_INVAL);
}

/* Rule: TSC-deadline mode restores only on an instance offering it. */
static void restore_of_deadline_mode_needs_an_instance_offering_it(void **state)
{
    TU_FIX(state);
    struct lapict_timer before = *t;
    struct lapict_countdown cd;
    assert_int_equal(put(h, t, &cd, LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 0,
                         LAPICT_COUNTDOWN_NONE),
                     LAPICT_E_STATE_CONFIG);
    assert_memory_equal(t, &before, sizeof(before));
}

/* Rule: a periodic count under the minimum period (30 ticks = 10 us,
 * clamped to 100 us) is cut to one clamped period and stays clamped. */
static void restore_of_a_clamped_period_keeps_the_clamp(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;
    OK(put(h, t, &cd, PERIODIC, 0xB, 30, f->base + 500000));
    assert_int_equal(lapict_tmcct_read(t), 30);
    fake_advance(h, 300000);
    assert_int_equal(h->sim.injects, 3);
    assert_true(h->inj[0].host_ns == f->base + 100000);
    assert_true(h->inj[2].host_ns == f->base + 300000);
    assert_true(tu_stats(t).clamps >= 1);
}

/* Rule: get never gives the sentinel: an instant of UINT64_MAX is given
 * as 0, which a restore 10 ns on takes 1 ns late, never early. */
static void get_never_gives_the_sentinel_for_an_instant(void **state)
{
    TU_FIX(state);
    struct fake_host h2;
    struct lapict_timer t2;
    struct lapict_countdown cd;
    uint64_t start = UINT64_MAX - ns_for(90, 0xB);
    fx_twin(f, &h2, &t2, start);
    arm(&t2, 0xB, ONESHOT, 90);
    OK(get(&h2, &t2, &cd));
    assert_true(cd.next_ns == 0);
    tu_check_host(&h2);
    fx_twin(f, &h2, &t2, start + 10);
    OK(put(&h2, &t2, &cd, 0, 0, 0, 0));
    assert_int_equal(lapict_tmcct_read(&t2), 90);
    fake_advance_to(&h2, UINT64_MAX);
    assert_int_equal(h2.sim.injects, 0);
    fake_advance(&h2, 1);
    assert_int_equal(h2.sim.injects, 1);
    tu_check_host(&h2);
}

/* Rule (differential): for a plain count-down, get + restore and
 * state_save + state_restore leave instances that read and fire alike. */
static void get_restore_matches_save_restore(void **state)
{
    TU_FIX(state);
    static const struct {
        uint32_t mode, tdcr, n;
        uint64_t run;
    } cases[] = {
        {LAPICT_LVTT_ONESHOT, 0xB, 3000, 123457},
        {LAPICT_LVTT_ONESHOT, 0x0, 1, 0},
        {LAPICT_LVTT_PERIODIC, 0x3, 1000, 2000001},
        {LAPICT_LVTT_PERIODIC, 0xA, 7, 99999},
        {LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK, 0x1, 500, 777777},
        {LAPICT_LVTT_ONESHOT, 0x9, 0xFFFFFFFFu, 5},
    };
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fake_host hs, ha, hb;
        struct lapict_timer s, a, b;
        struct lapict_countdown cd;
        uint8_t blob[LAPICT_STATE_SIZE];
        uint64_t gap = 5000000, end;
        unsigned k;
        fx_twin(f, &hs, &s, f->base);
        arm(&s, cases[i].tdcr, cases[i].mode | VEC, cases[i].n);
        fake_advance(&hs, cases[i].run);
        OK(get(&hs, &s, &cd));
        OK(lapict_state_save(&s, blob, sizeof(blob)));
        /* The destination's clock is elsewhere: the stream carries the
         * source's instant, the host shifts it by its clock offset. */
        fx_twin(f, &ha, &a, hs.sim.now_ns + gap);
        fx_twin(f, &hb, &b, hs.sim.now_ns + gap);
        if (cd.next_ns != LAPICT_COUNTDOWN_NONE)
            cd.next_ns += gap;
        OK(put(&ha, &a, &cd, 0, 0, 0, 0));
        OK(lapict_state_restore(&b, blob, sizeof(blob)));
        tu_assert_regs_equal(tu_read_regs(&a), tu_read_regs(&b));
        end = ha.sim.now_ns + 3 * ns_for(cases[i].n, cases[i].tdcr) + 1000;
        if (end - ha.sim.now_ns > 50000000)
            end = ha.sim.now_ns + 50000000;
        fake_advance_to(&ha, end);
        fake_advance_to(&hb, end);
        assert_int_equal(ha.sim.injects, hb.sim.injects);
        /* The next expiry exactly (1 ns late only where the source's
         * instant was UINT64_MAX, given as 0); the grid after it from the
         * count at next_ns, so a fractional tick may round 1 ns apart. */
        for (k = 0; k < ha.sim.injects && k < FAKE_MAX_EVENTS; k++) {
            int64_t d = fake_diff(hb.inj[k].host_ns, ha.inj[k].host_ns);
            if (k == 0)
                assert_true(d == 0 || (d == 1 && cd.next_ns == gap));
            else
                assert_true(d >= -1 && d <= 1);
        }
        assert_int_equal(lapict_tmict_read(&a), lapict_tmict_read(&b));
        assert_int_equal(lapict_lvtt_read(&a), lapict_lvtt_read(&b));
        tu_check_host(&hs);
        tu_check_host(&ha);
        tu_check_host(&hb);
    }
}

#define AT_BOTH_WITH(fn, setup) TU_FIXED_AT_BASES_WITH(fn, TU_HV_NEVER, setup)
#define AT_BOTH(fn) AT_BOTH_WITH(fn, bus_3mhz_setup)

TU_MAIN(AT_BOTH(get_gives_the_instant_of_the_next_expiry),
        AT_BOTH(get_gives_none_without_a_running_count_down),
        AT_BOTH(get_gives_a_due_unprocessed_expiry_in_the_past),
        AT_BOTH(get_reports_more_than_a_count_down),
        AT_BOTH_WITH(get_reports_an_expiry_injected_ahead, advance_5us_setup),
        AT_BOTH(get_never_gives_the_sentinel_for_an_instant),
        AT_BOTH(restore_resumes_at_the_count_left_to_next_ns),
        AT_BOTH(restore_continues_the_periodic_grid_from_next_ns),
        AT_BOTH(restore_cuts_next_ns_to_the_whole_count),
        AT_BOTH(restore_holds_due_expiries_pending_never_injects),
        AT_BOTH(restore_applies_the_missed_tick_policy_to_due_ticks),
        AT_BOTH(restore_takes_a_due_expiry_beyond_the_horizon_as_due),
        AT_BOTH(restore_without_count_down_stops_the_timer),
        AT_BOTH(restore_replaces_deadline_and_pending_state),
        AT_BOTH(restore_masks_lvtt_while_software_disabled),
        AT_BOTH(restore_reports_an_illegal_vector_due_once),
        AT_BOTH(restore_rejects_what_no_guest_produces_state_intact),
        AT_BOTH_WITH(restore_of_deadline_mode_needs_an_instance_offering_it,
                     no_deadline_setup),
        AT_BOTH_WITH(restore_of_a_clamped_period_keeps_the_clamp,
                     clamp_100us_setup),
        AT_BOTH(get_restore_matches_save_restore))
