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

/* The fixture of every rule here: a tu_fix on the 3 MHz bus. */
TU_SETUP(bus_3mhz_setup, c.bus_hz = BUS)

/* A second instance of the same configuration, on a host at @now. */
static void fx_twin(const struct tu_fix *f, struct fake_host *h,
                    struct lapict_timer *t, uint64_t now)
{
    tu_setup(h, t, &f->cfg, now, false);
}

static uint64_t ns_for(uint64_t n, uint32_t tdcr)
{
    return oracle_ns_for(n, BUS, oracle_divide(tdcr));
}

static void arm(struct lapict_timer *t, uint32_t tdcr, uint32_t mode,
                uint32_t n)
{
    assert_int_equal(lapict_tdcr_write(t, tdcr), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(t, mode | VEC), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(t, n), LAPICT_OK);
}

static struct lapict_countdown cd_of(uint32_t lvtt, uint32_t tdcr,
                                     uint32_t tmict, uint64_t next)
{
    struct lapict_countdown cd;

    cd.lvtt = lvtt;
    cd.tdcr = tdcr;
    cd.tmict = tmict;
    cd.next_ns = next;
    return cd;
}

/* ---- get ------------------------------------------------------------- */

static void get_gives_the_instant_of_the_next_expiry(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    uint64_t calls;

    /* One-shot, divide by 2, 1000 ticks: due at ns_for(1000). */
    arm(&f->t, 0x0, LAPICT_LVTT_ONESHOT, 1000);
    fake_advance(&f->h, 12345);
    calls = f->h.rec.total_calls;
    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &cd),
                     LAPICT_OK);
    assert_int_equal(f->h.rec.total_calls, calls); /* no op */
    assert_int_equal(cd.lvtt, LAPICT_LVTT_ONESHOT | VEC);
    assert_int_equal(cd.tdcr, 0x0);
    assert_int_equal(cd.tmict, 1000);
    assert_true(cd.next_ns == f->base + ns_for(1000, 0x0));

    /* Periodic, past two expiries: the third grid point. */
    arm(&f->t, 0xB, LAPICT_LVTT_PERIODIC, 300);
    fake_advance(&f->h, 2 * ns_for(300, 0xB) + 10);
    assert_int_equal(f->h.sim.injects, 2);
    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &cd),
                     LAPICT_OK);
    assert_true(cd.next_ns == f->base + 12345 + ns_for(900, 0xB));
}

static void get_gives_none_without_a_running_count_down(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;

    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &cd),
                     LAPICT_OK);
    assert_int_equal(cd.lvtt, LAPICT_LVTT_RESET);
    assert_int_equal(cd.tmict, 0);
    assert_true(cd.next_ns == LAPICT_COUNTDOWN_NONE);

    /* A one-shot after its expiry keeps TMICT and runs no more. */
    arm(&f->t, 0xB, LAPICT_LVTT_ONESHOT, 50);
    fake_advance(&f->h, ns_for(50, 0xB));
    assert_int_equal(f->h.sim.injects, 1);
    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &cd),
                     LAPICT_OK);
    assert_int_equal(cd.tmict, 50);
    assert_true(cd.next_ns == LAPICT_COUNTDOWN_NONE);
}

static void get_gives_a_due_unprocessed_expiry_in_the_past(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    uint64_t at = f->base + ns_for(40, 0xB);

    arm(&f->t, 0xB, LAPICT_LVTT_ONESHOT, 40);
    /* The clock passes the instant without the host timer running. */
    fake_stall(&f->h, ns_for(40, 0xB) + 777);
    assert_int_equal(f->h.sim.injects, 0);
    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &cd),
                     LAPICT_OK);
    assert_true(cd.next_ns == at);
    assert_int_equal(f->h.sim.injects, 0); /* get processes nothing */
}

static void get_reports_more_than_a_count_down(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    uint64_t t0;

    /* A TSC deadline armed. */
    assert_int_equal(lapict_lvtt_write(&f->t, LAPICT_LVTT_TSC_DEADLINE | VEC),
                     LAPICT_OK);
    assert_int_equal(lapict_tsc_deadline_write(&f->t, fake_tsc(&f->h) + 5000),
                     LAPICT_OK);
    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &cd),
                     LAPICT_E_NOT_COUNTDOWN);
    assert_int_equal(cd.lvtt, LAPICT_LVTT_TSC_DEADLINE | VEC);
    assert_int_equal(cd.tmict, 0);
    assert_true(cd.next_ns == LAPICT_COUNTDOWN_NONE);

    /* An interrupt held pending (the host refused it). */
    fake_window(&f->h, false);
    t0 = f->h.sim.now_ns;
    arm(&f->t, 0xB, LAPICT_LVTT_PERIODIC, 100);
    fake_advance(&f->h, ns_for(100, 0xB) + 1);
    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &cd),
                     LAPICT_E_NOT_COUNTDOWN);
    assert_true(cd.next_ns == t0 + ns_for(200, 0xB));

    assert_int_equal(lapict_countdown_get(NULL, 0, &cd), LAPICT_E_INVAL);
    assert_int_equal(lapict_countdown_get(&f->t, 0, NULL), LAPICT_E_INVAL);
}

static void get_reports_an_expiry_injected_ahead(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = f->cfg;

    c.advance_mode = LAPICT_ADVANCE_FIXED;
    c.advance_ns = 5000;
    c.advance_max_ns = 5000;
    tu_setup(&h, &t, &c, f->base, false);
    arm(&t, 0xB, LAPICT_LVTT_ONESHOT, 1000);
    /* The host timer fires the advance early and injects ahead. */
    fake_advance(&h, ns_for(1000, 0xB) - 4000);
    assert_int_equal(h.sim.injects, 1);
    assert_int_equal(lapict_countdown_get(&t, h.sim.now_ns, &cd),
                     LAPICT_E_NOT_COUNTDOWN);
    assert_true(cd.next_ns == f->base + ns_for(1000, 0xB));
    fake_enter(&h);
    tu_check_host(&h);
}

/* ---- restore --------------------------------------------------------- */

static void restore_resumes_at_the_count_left_to_next_ns(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    uint64_t next = f->base + 999000; /* 2997 ticks at /1 */
    unsigned calls = f->h.sim.injects;

    cd = cd_of(LAPICT_LVTT_ONESHOT | VEC, 0xB, 5000, next);
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(lapict_tmict_read(&f->t), 5000);
    assert_int_equal(lapict_tmcct_read(&f->t), 2997);
    assert_int_equal(lapict_lvtt_read(&f->t), LAPICT_LVTT_ONESHOT | VEC);
    /* Never early: nothing until next_ns, the interrupt at it. */
    fake_advance_to(&f->h, next - 1);
    assert_int_equal(f->h.sim.injects, calls);
    assert_int_equal(lapict_tmcct_read(&f->t), 1);
    fake_advance_to(&f->h, next);
    assert_int_equal(f->h.sim.injects, calls + 1);
    assert_true(f->h.inj[calls].host_ns == next);
    assert_int_equal(lapict_tmcct_read(&f->t), 0);
}

static void restore_anchors_on_next_ns_to_the_nanosecond(void **state)
{
    struct tu_fix *f = *state;
    uint64_t d;

    /* Every offset within a few ticks: the expiry exactly at next_ns. */
    for (d = 1; d < 1500; d += 7) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_countdown cd;
        uint64_t next = f->base + 100 + d;
        fx_twin(f, &h, &t, f->base + 100);
        cd = cd_of(LAPICT_LVTT_ONESHOT | VEC, 0xB, 10, next);
        assert_int_equal(lapict_countdown_restore(&t, &cd, h.sim.now_ns),
                         LAPICT_OK);
        /* TMCCT: the ticks whose duration first reaches next_ns. */
        assert_int_equal(lapict_tmcct_read(&t),
                         oracle_ticks_in(d - 1, BUS, 1) + 1);
        fake_advance_to(&h, next - 1);
        assert_int_equal(h.sim.injects, 0);
        fake_advance_to(&h, next);
        assert_int_equal(h.sim.injects, 1);
        assert_true(h.inj[0].host_ns == next);
        tu_check_host(&h);
    }
}

static void restore_continues_the_periodic_grid_from_next_ns(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    uint64_t next = f->base + 250, period = ns_for(600, 0x0);
    unsigned i;

    cd = cd_of(LAPICT_LVTT_PERIODIC | VEC, 0x0, 600, next);
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    fake_advance_to(&f->h, next + 3 * period + 1);
    assert_int_equal(f->h.sim.injects, 4);
    for (i = 0; i < 4; i++) {
        /* The grid of N = 600 ticks from the tick count at next_ns. */
        uint64_t c = oracle_ticks_in(249, BUS, 2) + 1;
        uint64_t anchor = next - ns_for(c, 0x0);
        assert_true(f->h.inj[i].host_ns == anchor + ns_for(c + 600u * i, 0x0));
    }
    assert_true(f->h.inj[0].host_ns == next);
}

static void restore_cuts_next_ns_to_the_whole_count(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    uint64_t full = ns_for(200, 0x3);

    /* Years ahead, and just past the whole count: both cut to it. */
    cd = cd_of(LAPICT_LVTT_ONESHOT | VEC, 0x3, 200, f->base + (1ull << 62));
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(&f->t), 200);
    assert_true(fake_armed_at(&f->h) == f->base + full);
    cd.next_ns = f->base + full + 1;
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(&f->t), 200);
    fake_advance_to(&f->h, f->base + full);
    assert_int_equal(f->h.sim.injects, 1);
    assert_true(f->h.inj[0].host_ns == f->base + full);
}

static void restore_holds_due_expiries_pending_never_injects(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;
    uint64_t now;

    /* A one-shot due 10 us ago: one interrupt, at the window. */
    fake_advance(&f->h, 50000);
    now = f->h.sim.now_ns;
    cd = cd_of(LAPICT_LVTT_ONESHOT | VEC, 0xB, 100, now - 10000);
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, now), LAPICT_OK);
    assert_int_equal(f->h.sim.injects + f->h.sim.refusals, 0);
    assert_int_equal(lapict_lvtt_read(&f->t),
                     LAPICT_LVTT_ONESHOT | VEC | LAPICT_LVTT_PENDING);
    assert_int_equal(lapict_tmcct_read(&f->t), 0);
    assert_int_equal(fake_window(&f->h, true), LAPICT_OK);
    assert_int_equal(f->h.sim.injects, 1);
    fake_advance(&f->h, 10000000);
    assert_int_equal(f->h.sim.injects, 1); /* never doubled */
}

static void restore_applies_the_missed_tick_policy_to_due_ticks(void **state)
{
    struct tu_fix *f = *state;
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = f->cfg;
    struct lapict_countdown cd;
    uint64_t period = ns_for(300, 0xB), now;
    struct lapict_stats s;

    /* Catch-up: the expiry at next_ns and the 4 grid points after it. */
    c.missed_policy = LAPICT_MISSED_CATCH_UP;
    tu_setup(&h, &t, &c, f->base, false);
    fake_advance(&h, 10 * period);
    now = h.sim.now_ns;
    cd = cd_of(LAPICT_LVTT_PERIODIC | VEC, 0xB, 300,
               now - 4 * period - period / 2);
    assert_int_equal(lapict_countdown_restore(&t, &cd, now), LAPICT_OK);
    s = tu_stats(&t);
    assert_int_equal(s.pending, 5);
    assert_int_equal(h.sim.injects + h.sim.refusals, 0);
    /* One per window, as catch-up gives them. */
    fake_window(&h, true);
    assert_int_equal(h.sim.injects, 5);
    /* The next on the grid, half a period on. */
    fake_advance_to(&h, cd.next_ns + 5 * period - 1);
    assert_int_equal(h.sim.injects, 5);
    fake_advance_to(&h, cd.next_ns + 5 * period);
    assert_int_equal(h.sim.injects, 6);
    tu_check_host(&h);

    /* Coalesce (the fixture's): one. */
    cd.next_ns = f->h.sim.now_ns;
    fake_advance(&f->h, 4 * period);
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    s = tu_stats(&f->t);
    assert_int_equal(s.pending, 1);
    assert_int_equal(s.coalesced, 4);
}

static void restore_takes_a_due_expiry_beyond_the_horizon_as_due(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;

    /* 2^63 - 1 ns behind: past by the horizon rule, one interrupt. */
    cd = cd_of(LAPICT_LVTT_ONESHOT | VEC, 0xB, 7,
               f->h.sim.now_ns - ((1ull << 63) - 1));
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(tu_stats(&f->t).pending, 1);
    cd.lvtt = LAPICT_LVTT_PERIODIC | VEC;
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(tu_stats(&f->t).pending, 1);
    /* The grid goes on within the horizon: the next expiry is near. */
    assert_true(fake_armed(&f->h));
    assert_true(fake_diff(f->h.sim.now_ns, fake_armed_at(&f->h)) > 0);
    assert_true(fake_diff(f->h.sim.now_ns, fake_armed_at(&f->h)) <=
                (int64_t)ns_for(7, 0xB));
}

static void restore_without_count_down_stops_the_timer(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;

    arm(&f->t, 0xB, LAPICT_LVTT_PERIODIC, 100);
    /* An expired one-shot: TMICT kept, TMCCT 0, no host timer. */
    cd = cd_of(LAPICT_LVTT_ONESHOT | VEC, 0x1, 100, LAPICT_COUNTDOWN_NONE);
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(lapict_tmict_read(&f->t), 100);
    assert_int_equal(lapict_tmcct_read(&f->t), 0);
    assert_int_equal(lapict_tdcr_read(&f->t), 0x1);
    assert_false(fake_armed(&f->h));
    fake_advance(&f->h, 100000000);
    assert_int_equal(f->h.sim.injects, 0);

    /* TSC-deadline mode, nothing armed. */
    cd = cd_of(LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 0, LAPICT_COUNTDOWN_NONE);
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&f->t), LAPICT_LVTT_TSC_DEADLINE | VEC);
    assert_true(lapict_tsc_deadline_read(&f->t) == 0);
}

static void restore_replaces_deadline_and_pending_state(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd, back;

    /* Pending interrupt and a deadline before: both gone after. */
    fake_window(&f->h, false);
    arm(&f->t, 0xB, LAPICT_LVTT_PERIODIC, 100);
    fake_advance(&f->h, ns_for(100, 0xB));
    assert_int_equal(tu_stats(&f->t).pending, 1);
    cd = cd_of(LAPICT_LVTT_ONESHOT | VEC, 0xB, 100,
               f->h.sim.now_ns + ns_for(50, 0xB));
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(tu_stats(&f->t).pending, 0);
    assert_int_equal(lapict_countdown_get(&f->t, f->h.sim.now_ns, &back),
                     LAPICT_OK);
    assert_int_equal(back.lvtt, cd.lvtt);
    assert_int_equal(back.tdcr, cd.tdcr);
    assert_int_equal(back.tmict, cd.tmict);
    assert_true(back.next_ns == cd.next_ns);
}

static void restore_masks_lvtt_while_software_disabled(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;

    assert_int_equal(lapict_svr_write(&f->t, false), LAPICT_OK);
    cd = cd_of(LAPICT_LVTT_PERIODIC | VEC, 0xB, 100,
               f->h.sim.now_ns + ns_for(10, 0xB));
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&f->t),
                     LAPICT_LVTT_PERIODIC | VEC | LAPICT_LVTT_MASK);
    /* Masked, it still counts: TMCCT and the grid run on. */
    assert_int_equal(lapict_tmcct_read(&f->t), 10);
    fake_advance(&f->h, ns_for(310, 0xB));
    assert_int_equal(f->h.sim.injects, 0);
    assert_int_equal(tu_stats(&f->t).masked, 4);
}

static void restore_reports_an_illegal_vector_due_once(void **state)
{
    struct tu_fix *f = *state;
    struct lapict_countdown cd;

    fake_advance(&f->h, 1000);
    cd = cd_of(LAPICT_LVTT_ONESHOT | 0x05u, 0xB, 10, f->h.sim.now_ns - 1);
    assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(f->h.sim.reports, 1);
    assert_int_equal(f->h.rep[0].status, LAPICT_E_VECTOR);
    assert_int_equal(tu_stats(&f->t).illegal_vector, 1);
    assert_int_equal(tu_stats(&f->t).pending, 0);
    fake_window(&f->h, true);
    assert_int_equal(f->h.sim.injects, 0);
}

static void restore_rejects_what_no_guest_produces_state_intact(void **state)
{
    struct tu_fix *f = *state;
    static const struct {
        uint32_t lvtt, tdcr, tmict;
        int next; /* 0 none, 1 ahead */
        int rc;
    } bad[] = {
        {LAPICT_LVTT_ONESHOT | VEC | LAPICT_LVTT_PENDING, 0, 10, 1,
         LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_ONESHOT | VEC | 0x100u, 0, 10, 1, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_ONESHOT | VEC | 0x80000000u, 0, 10, 0,
         LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_MODE | VEC, 0, 10, 1, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_MODE | VEC, 0, 0, 0, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_ONESHOT | VEC, 0x4, 10, 1, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_ONESHOT | VEC, 0x10, 10, 0, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_ONESHOT | VEC, 0, 0, 1, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_PERIODIC | VEC, 0, 0, 1, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 10, 0, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 10, 1, LAPICT_E_STATE_FIELD},
        {LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 0, 1, LAPICT_E_STATE_FIELD},
    };
    struct lapict_timer before;
    struct lapict_countdown cd;
    uint64_t calls;
    size_t i;

    arm(&f->t, 0x3, LAPICT_LVTT_PERIODIC, 777);
    fake_advance(&f->h, 1234);
    before = f->t;
    calls = f->h.rec.total_calls;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cd =
            cd_of(bad[i].lvtt, bad[i].tdcr, bad[i].tmict,
                  bad[i].next ? f->h.sim.now_ns + 1000 : LAPICT_COUNTDOWN_NONE);
        assert_int_equal(lapict_countdown_restore(&f->t, &cd, f->h.sim.now_ns),
                         bad[i].rc);
        assert_memory_equal(&f->t, &before, sizeof(before));
        assert_int_equal(f->h.rec.total_calls, calls);
    }
    assert_int_equal(lapict_countdown_restore(NULL, &cd, 0), LAPICT_E_INVAL);
    assert_int_equal(lapict_countdown_restore(&f->t, NULL, 0), LAPICT_E_INVAL);
}

static void restore_of_deadline_mode_needs_an_instance_offering_it(void **state)
{
    struct tu_fix *f = *state;
    struct fake_host h;
    struct lapict_timer t, before;
    struct lapict_config c = f->cfg;
    struct lapict_countdown cd;

    c.tsc_deadline = false;
    tu_setup(&h, &t, &c, f->base, false);
    before = t;
    cd = cd_of(LAPICT_LVTT_TSC_DEADLINE | VEC, 0, 0, LAPICT_COUNTDOWN_NONE);
    assert_int_equal(lapict_countdown_restore(&t, &cd, h.sim.now_ns),
                     LAPICT_E_STATE_CONFIG);
    assert_memory_equal(&t, &before, sizeof(t));
    tu_check_host(&h);
}

/* The clamp's fixture: a 100 us minimum period on the 3 MHz bus. */
TU_SETUP(clamp_100us_setup, c.bus_hz = BUS; c.min_period_ns = 100000)

static void restore_of_a_clamped_period_keeps_the_clamp(void **state)
{
    TU_FIX(state);
    struct lapict_countdown cd;

    /* 30 ticks at /1 = 10 us, clamped to 100 us. */
    cd = cd_of(LAPICT_LVTT_PERIODIC | VEC, 0xB, 30, f->base + 500000);
    assert_int_equal(lapict_countdown_restore(t, &cd, h->sim.now_ns),
                     LAPICT_OK);
    /* Cut to one clamped period; then one every 100 us. */
    assert_int_equal(lapict_tmcct_read(t), 30);
    fake_advance(h, 300000);
    assert_int_equal(h->sim.injects, 3);
    assert_true(h->inj[0].host_ns == f->base + 100000);
    assert_true(h->inj[2].host_ns == f->base + 300000);
    assert_true(tu_stats(t).clamps >= 1);
}

/* Near the sentinel: an instant of UINT64_MAX is given one ns later. */
static void get_never_gives_the_sentinel_for_an_instant(void **state)
{
    struct tu_fix *f = *state;
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_countdown cd;
    uint64_t start = UINT64_MAX - ns_for(90, 0xB);

    fx_twin(f, &h, &t, start);
    arm(&t, 0xB, LAPICT_LVTT_ONESHOT, 90);
    assert_int_equal(lapict_countdown_get(&t, h.sim.now_ns, &cd), LAPICT_OK);
    assert_true(cd.next_ns == 0);
    tu_check_host(&h);
    /* Restored 10 ns on, it comes 1 ns after UINT64_MAX, never before. */
    fx_twin(f, &h, &t, start + 10);
    assert_int_equal(lapict_countdown_restore(&t, &cd, h.sim.now_ns),
                     LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(&t), 90);
    fake_advance_to(&h, UINT64_MAX);
    assert_int_equal(h.sim.injects, 0);
    fake_advance(&h, 1);
    assert_int_equal(h.sim.injects, 1);
    tu_check_host(&h);
}

/*
 * Differential: where both apply (a plain count-down), get + restore and
 * state_save + state_restore leave instances that read and fire alike.
 */
static void get_restore_matches_save_restore(void **state)
{
    struct tu_fix *f = *state;
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
        arm(&s, cases[i].tdcr, cases[i].mode, cases[i].n);
        fake_advance(&hs, cases[i].run);
        assert_int_equal(lapict_countdown_get(&s, hs.sim.now_ns, &cd),
                         LAPICT_OK);
        assert_int_equal(lapict_state_save(&s, blob, sizeof(blob)), LAPICT_OK);
        /* The destination's clock is elsewhere: the stream carries the
         * source's instant, the host shifts it by its clock offset. */
        fx_twin(f, &ha, &a, hs.sim.now_ns + gap);
        fx_twin(f, &hb, &b, hs.sim.now_ns + gap);
        if (cd.next_ns != LAPICT_COUNTDOWN_NONE)
            cd.next_ns += gap;
        assert_int_equal(lapict_countdown_restore(&a, &cd, ha.sim.now_ns),
                         LAPICT_OK);
        assert_int_equal(lapict_state_restore(&b, blob, sizeof(blob)),
                         LAPICT_OK);
        tu_assert_regs_equal(tu_read_regs(&a), tu_read_regs(&b));
        end = ha.sim.now_ns + 3 * ns_for(cases[i].n, cases[i].tdcr) + 1000;
        if (end - ha.sim.now_ns > 50000000)
            end = ha.sim.now_ns + 50000000;
        fake_advance_to(&ha, end);
        fake_advance_to(&hb, end);
        assert_int_equal(ha.sim.injects, hb.sim.injects);
        /*
         * The next expiry exactly; the grid after it from the count at
         * next_ns, not from the source's anchor: a fractional tick may
         * round a later instant 1 ns the other way.
         */
        for (k = 0; k < ha.sim.injects && k < FAKE_MAX_EVENTS; k++) {
            int64_t d = fake_diff(hb.inj[k].host_ns, ha.inj[k].host_ns);
            if (k == 0)
                /* 1 ns late only where the source's instant was
                 * UINT64_MAX, which get gives as 0 (countdown.h). */
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

#define AT_BOTH(f) TU_FIXED_AT_BASES_WITH(f, TU_HV_NEVER, bus_3mhz_setup)

TU_MAIN(AT_BOTH(get_gives_the_instant_of_the_next_expiry),
        AT_BOTH(get_gives_none_without_a_running_count_down),
        AT_BOTH(get_gives_a_due_unprocessed_expiry_in_the_past),
        AT_BOTH(get_reports_more_than_a_count_down),
        AT_BOTH(get_reports_an_expiry_injected_ahead),
        AT_BOTH(get_never_gives_the_sentinel_for_an_instant),
        AT_BOTH(restore_resumes_at_the_count_left_to_next_ns),
        AT_BOTH(restore_anchors_on_next_ns_to_the_nanosecond),
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
        AT_BOTH(restore_of_deadline_mode_needs_an_instance_offering_it),
        TU_FIXED_AT_BASES_WITH(restore_of_a_clamped_period_keeps_the_clamp,
                               TU_HV_NEVER, clamp_100us_setup),
        AT_BOTH(get_restore_matches_save_restore))
