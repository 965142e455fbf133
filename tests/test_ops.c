/* SPDX-License-Identifier: MIT */
/*
 * lib/ops.c, the one choke point between the core and its host (timer.md
 * section 7; <lapict/ops.h>): which host timer (never both), when it is
 * armed, the re-entry guard, optional ops, no ops call outside ops.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>

#include "testutil.h"

#define VEC 0x30u

#define OK(call) assert_int_equal((call), LAPICT_OK)

static void arm(struct lapict_timer *t, uint32_t tdcr, uint32_t lvtt,
                uint32_t n)
{
    OK(lapict_tdcr_write(t, tdcr));
    OK(lapict_lvtt_write(t, lvtt));
    OK(lapict_tmict_write(t, n));
}

/* The host timer armed is the hardware one if @hv (else the software
 * one), for @at_ns, and the other is not armed. */
static void armed_on(const struct fake_host *h, bool hv, uint64_t at_ns)
{
    assert_int_equal(h->sim.hv_armed, hv);
    assert_int_equal(h->sim.sw_armed, !hv);
    assert_int_equal(hv ? h->sim.hv_at_ns : h->sim.sw_at_ns, at_ns);
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

#define ONESHOT (LAPICT_LVTT_ONESHOT | VEC)
#define PERIODIC (LAPICT_LVTT_PERIODIC | VEC)

/* Rule: a one-shot arms the hardware timer when offered, else the
 * software timer (which a block/unblock leaves alone); it fires once. */
static void one_shot_arms_hv_when_offered_else_sw(void **state)
{
    TU_FIX(state);
    const bool hv = h->sim.cfg.hv_timer;
    uint64_t a = h->sim.now_ns;
    arm(t, 0xB, ONESHOT, 1000000);
    armed_on(h, hv, a + 1000000);
    assert_int_equal(h->sim.sw_arms, hv ? 0 : 1);
    if (!hv) {
        fake_block(h);
        fake_unblock(h);
        armed_on(h, false, a + 1000000);
        assert_int_equal(tu_stats(t).hv_to_sw, 0);
        assert_int_equal(tu_stats(t).sw_to_hv, 0);
    }
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->sim.hv_fires, hv ? 1 : 0);
    assert_int_equal(h->sim.sw_fires, hv ? 0 : 1);
}

/* Rule: a blocked vCPU moves the hardware timer to software and back;
 * blocked through the expiry, the software timer wakes it once. */
static void vcpu_blocking_moves_hv_to_sw_and_back(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    arm(t, 0xB, ONESHOT, 1000000);
    fake_advance(h, 100000);
    OK(fake_block(h));
    armed_on(h, false, a + 1000000);
    assert_true(h->sim.hv_cancels >= 1);
    assert_int_equal(tu_stats(t).hv_to_sw, 1);
    OK(fake_unblock(h));
    armed_on(h, true, a + 1000000);
    assert_int_equal(tu_stats(t).sw_to_hv, 1);
    fake_block(h);
    fake_advance_to(h, a + 1000000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 1000000);
    fake_unblock(h);
    fake_advance(h, 5000000);
    assert_int_equal(h->sim.injects, 1);
    /* Nothing armed: blocking arms nothing. */
    h->sim.sw_arms = h->sim.hv_arms = 0;
    fake_block(h);
    fake_unblock(h);
    assert_int_equal(h->sim.sw_arms + h->sim.hv_arms, 0);
    assert_false(fake_armed(h));
}

/* Rule: a refused hardware arm falls back to software until the next
 * re-arm, which tries the hardware timer again. */
static void hv_refusal_falls_back_to_sw_until_next_rearm(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    h->sim.cfg.hv_timer = false; /* offered, but refuses every arm */
    arm(t, 0xB, PERIODIC, 1000000);
    assert_int_equal(h->sim.hv_refusals, 1);
    armed_on(h, false, a + 1000000);
    assert_int_equal(tu_stats(t).hv_refused, 1);
    h->sim.cfg.hv_timer = true;
    fake_advance_to(h, a + 1000000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->sim.sw_fires, 1);
    armed_on(h, true, a + 2000000);
    fake_advance_to(h, a + 2000000);
    assert_int_equal(h->sim.injects, 2);
    assert_int_equal(h->sim.hv_fires, 1);
}

/* Rule: an instant beyond the hardware timer's range goes to software. */
static void hv_refuses_beyond_range_uses_sw(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    h->sim.cfg.hv_max_ahead_ns = 1000000;
    arm(t, 0xB, ONESHOT, 5000000);
    armed_on(h, false, a + 5000000);
    OK(lapict_tmict_write(t, 500000));
    armed_on(h, true, a + 500000);
    fake_advance(h, 10000000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, a + 500000);
}

/* Rule: across many hw<->sw moves a periodic timer stays on the grid
 * a + ns_for(k N), no expiry lost or doubled, at two bus rates. */
static void periodic_drift_across_hw_sw_switches(void **state)
{
    static const uint64_t rates[] = {1000000000ull, 134217728ull};
    TU_FIX(state);
    size_t r;
    for (r = 0; r < 2; r++) {
        uint32_t seed = 12345, N = (uint32_t)(rates[r] / 4000);
        uint64_t a, end, k, n = 0;
        int i;
        f->cfg.bus_hz = rates[r];
        tu_setup(h, t, &f->cfg, f->base, true);
        a = h->sim.now_ns;
        arm(t, 0xB, PERIODIC, N);
        for (i = 0; i < 600; i++) {
            fake_advance(h, 1 + lcg(&seed) % 400000);
            if (h->sim.blocked)
                fake_unblock(h);
            else
                fake_block(h);
            if (i % 7 == 0)
                fake_run_due(h);
        }
        if (h->sim.blocked)
            fake_unblock(h);
        end = h->sim.now_ns - a;
        while (oracle_ns_for((n + 1) * N, rates[r], 1) <= end)
            n++;
        assert_int_equal(h->sim.injects, n);
        for (k = 0; k < n && k < FAKE_MAX_EVENTS; k++)
            assert_int_equal(h->inj[k].host_ns,
                             a + oracle_ns_for((k + 1) * N, rates[r], 1));
        assert_true(tu_stats(t).hv_to_sw >= 100);
        assert_true(tu_stats(t).sw_to_hv >= 100);
        tu_check_host(h);
    }
}

/* Rule (behaviour choice): the host timer is re-armed only on a move. */
static void host_timer_rearmed_only_when_target_changes(void **state)
{
    TU_FIX(state);
    int i;
    arm(t, 0xB, ONESHOT, 1000000);
    assert_int_equal(h->sim.hv_arms, 1);
    for (i = 0; i < 10; i++) {
        fake_advance(h, 1000);
        lapict_tmcct_read(t);
        lapict_lvtt_read(t);
        lapict_tmict_read(t);
        OK(lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | (VEC + (uint32_t)i)));
        lapict_before_guest_entry(t);
        lapict_irq_window_open(t);
    }
    assert_int_equal(h->sim.hv_arms, 1);
    assert_int_equal(h->sim.sw_arms, 0);
    assert_true(h->sim.hv_armed);
}

/* A call into the library from inside an op: each of these, its status
 * kept in reentry_rc[], then the inject op replaced. */
static bool (*reentry_inner_inject)(void *ctx, uint8_t vector);
static int reentry_rc[7];
static uint32_t reentry_read;
static bool reentry_inject(void *ctx, uint8_t vector)
{
    struct fake_host *h = ctx;
    struct lapict_timer *t = h->sim.timer;
    struct lapict_countdown cd = {0};
    reentry_rc[0] = lapict_irq_window_open(t);
    reentry_rc[1] = lapict_tmict_write(t, 77);
    reentry_rc[2] = lapict_expire(t);
    reentry_rc[3] = lapict_before_guest_entry(t);
    reentry_rc[4] = lapict_fini(t);
    reentry_rc[5] = lapict_countdown_get(t, h->sim.now_ns, &cd);
    reentry_rc[6] = lapict_countdown_restore(t, &cd, h->sim.now_ns);
    reentry_read = lapict_tmict_read(t);
    return reentry_inner_inject(ctx, vector);
}

/* Rule (ops.h, timer.h "Context:"): a library call from inside an op is
 * refused with LAPICT_E_REENTRY (not INVAL) and changes nothing; the
 * outer call completes, never a storm. */
static void reentry_from_an_op_is_refused_without_storm(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a = h->sim.now_ns;
    size_t i;
    /* An op replaced after the bind is still called (fake_attach()). */
    reentry_inner_inject = h->ops.inject;
    h->ops.inject = reentry_inject;
    arm(t, 0xB, PERIODIC, 1000);
    memset(reentry_rc, 0, sizeof(reentry_rc));
    reentry_read = 1;
    fake_advance(h, 1000);
    assert_int_equal(h->sim.injects, 1);
    for (i = 0; i < sizeof(reentry_rc) / sizeof(reentry_rc[0]); i++)
        assert_int_equal(reentry_rc[i], LAPICT_E_REENTRY);
    assert_int_equal(reentry_read, 0);
    /* The refused write changed nothing: still N = 1000 on its grid. */
    assert_int_equal(lapict_tmict_read(t), 1000);
    s = tu_stats(t);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.injections, 1);
    fake_advance(h, 1000);
    assert_int_equal(h->sim.injects, 2);
    assert_int_equal(h->inj[1].host_ns, a + 2000);
}

/* A host without spin_until and report, a fixed 5 us advance asked for. */
static int no_spin_no_report_setup(void **state)
{
    struct lapict_config c = tu_cfg();
    struct tu_fix *f;
    c.advance_mode = LAPICT_ADVANCE_FIXED;
    c.advance_ns = 5000;
    c.advance_max_ns = 5000;
    tu_fix_setup_cfg(state, &c);
    f = *state;
    lapict_sim_ops_remove(&f->h.ops, FAKE_OP_SPIN | FAKE_OP_REPORT);
    return fake_attach(&f->h, &f->t, &c) == LAPICT_OK ? 0 : -1;
}

/* Rule: an optional op left NULL is never called: no spin_until, no
 * advance (expiries at their instant); no report, errors only counted. */
static void optional_ops_left_out_are_not_called(void **state)
{
    TU_FIX(state);
    struct lapict_stats s;
    uint64_t a = h->sim.now_ns;
    arm(t, 0xB, PERIODIC, 100000);
    assert_int_equal(fake_armed_at(h), a + 100000);
    fake_advance(h, 300000);
    fake_enter(h);
    assert_int_equal(h->sim.injects, 3);
    assert_int_equal(h->inj[0].host_ns, a + 100000);
    assert_int_equal(h->inj[2].host_ns, a + 300000);
    OK(lapict_lvtt_write(t, LAPICT_LVTT_MODE | VEC));
    s = tu_stats(t);
    assert_int_equal(s.advance_ns, 0);
    assert_int_equal(s.spins, 0);
    assert_int_equal(s.mode_errors, 1);
    assert_int_equal(h->sim.spins, 0);
    assert_int_equal(h->sim.reports, 0);
}

/* ---- The choke point ---------------------------------------------------- */

/* Whether @path's text holds @needle. */
static bool file_holds(const char *path, const char *needle)
{
    static char text[1 << 20];
    FILE *f = fopen(path, "rb");
    size_t n;

    assert_non_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    assert_true(n < sizeof(text) - 1); /* the whole file was read */
    fclose(f);
    text[n] = '\0';
    return strstr(text, needle) != NULL;
}

/* Rule: every call from the core to the host goes through lib/ops.c, the
 * one file that knows which ops are optional and guards re-entry. A call
 * through the ops table (`ops->`) in any other file of lib/ fails here. */
static void only_ops_c_calls_through_the_ops_table(void **state)
{
    char dir[4096], path[8192];
    const char *slash = strrchr(__FILE__, '/');
    struct dirent *e;
    unsigned files = 0;
    DIR *d;
    (void)state;
    /* lib/ beside tests/, the folder of this file (built by its full path). */
    assert_non_null(slash);
    snprintf(dir, sizeof(dir), "%.*s/../lib", (int)(slash - __FILE__),
             __FILE__);
    d = opendir(dir);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || e->d_name[n - 2] != '.' ||
            (e->d_name[n - 1] != 'c' && e->d_name[n - 1] != 'h'))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        files++;
        if (strcmp(e->d_name, "ops.c") == 0) {
            /* The choke point itself is found by the same search. */
            assert_true(file_holds(path, "ops->"));
        } else if (file_holds(path, "ops->")) {
            closedir(d);
            fail_msg("%s calls through the ops table: only lib/ops.c may",
                     path);
        }
    }
    closedir(d);
    assert_true(files > 10);
}

TU_MAIN(TU_FIXED_WITH_AND_WITHOUT_HV(one_shot_arms_hv_when_offered_else_sw),
        TU_FIXED_AT_BASES(vcpu_blocking_moves_hv_to_sw_and_back, TU_HV_ALWAYS),
        TU_FIXED_AT_BASES(hv_refusal_falls_back_to_sw_until_next_rearm,
                          TU_HV_ALWAYS),
        TU_FIXED_AT_BASES(hv_refuses_beyond_range_uses_sw, TU_HV_ALWAYS),
        TU_FIXED_AT_BASES(periodic_drift_across_hw_sw_switches, TU_HV_ALWAYS),
        TU_FIXED_AT_BASES(host_timer_rearmed_only_when_target_changes,
                          TU_HV_ALWAYS),
        TU_FIXED_AT_BASES(reentry_from_an_op_is_refused_without_storm,
                          TU_HV_NEAR_2_64),
        TU_FIXED_AT_BASES_WITH(optional_ops_left_out_are_not_called,
                               TU_HV_NEAR_2_64, no_spin_no_report_setup),
        cmocka_unit_test(only_ops_c_calls_through_the_ops_table))
