/* SPDX-License-Identifier: MIT */
/*
 * lib/advance.c: the adaptive advance tuner (docs/spec/timer.md section 7),
 * driven white-box through lapict__tune() with arrival errors a host would
 * measure: err = arrival - instant, so the latency is err + advance.
 */
#include "testutil.h"

#include "advance.h"

#define MAXA 200000u
#define OK(call) assert_int_equal((call), LAPICT_OK)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define GOAL_LAT LAPICT_ADVANCE_GOAL_LATENCY
#define GOAL_BAL LAPICT_ADVANCE_GOAL_BALANCED

/* An instance at host time 0 advancing by @mode from @start up to @max,
 * with goal @goal and spin budget @budget, the spin op offered if @spin. */
static void bind(struct fake_host *h, struct lapict_timer *t, uint32_t mode,
                 uint32_t start, uint32_t max, bool spin, uint32_t goal,
                 uint32_t budget)
{
    struct lapict_config c = tu_cfg();
    c.advance_mode = mode;
    c.advance_ns = start;
    c.advance_max_ns = max;
    c.advance_goal = goal;
    c.advance_spin_budget_ns = budget;
    fake_host_init(h, 0, c.tsc_khz, 0, false);
    if (!spin)
        lapict_sim_ops_remove(&h->ops, FAKE_OP_SPIN);
    OK(fake_attach(h, t, &c));
}

/* The tuner of the study: adaptive from 1 us, bound MAXA, spin op. */
static void setup_goal(struct fake_host *h, struct lapict_timer *t,
                       uint32_t goal, uint32_t budget)
{
    bind(h, t, LAPICT_ADVANCE_ADAPTIVE, 1000, MAXA, true, goal, budget);
}

/* Fixtures: adaptive from 1 us, bound MAXA (or 5 us), latency or balanced. */
TU_SETUP(adaptive_setup, c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
         c.advance_ns = 1000; c.advance_max_ns = MAXA)
TU_SETUP(adaptive_5us_setup, c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
         c.advance_ns = 1000; c.advance_max_ns = 5000)
TU_SETUP(balanced_setup, c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
         c.advance_ns = 1000; c.advance_max_ns = MAXA;
         c.advance_goal = GOAL_BAL)

/* An arrival @err ns after the instant, the timer armed adv_ns early. */
static void tune_err(struct lapict_timer *t, int64_t err)
{
    lapict__tune(t, err + (int64_t)t->adv_ns);
}

/* One expiry whose host latency is @lat ns under the advance in force. */
static void sample(struct lapict_timer *t, uint32_t lat)
{
    lapict__tune(t, (int64_t)lat);
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static uint32_t noise20(uint32_t *seed)
{
    return 10000u + lcg(seed) % 20001u;
}

/* Rule: the first sample seeds the estimate, so any constant latency
 * within the bound is matched after one expiry (20 and 80 us included). */
static void first_sample_converges_at_any_level(void **state)
{
    static const uint32_t lats[] = {0, 1000, 20000, 80000, 150000};
    size_t i;
    int k;
    (void)state;
    for (i = 0; i < N_OF(lats); i++) {
        struct fake_host h;
        struct lapict_timer t;
        setup_goal(&h, &t, GOAL_LAT, 0);
        for (k = 0; k < 51; k++) {
            sample(&t, lats[i]);
            assert_int_equal(t.adv_ns, lats[i]);
        }
    }
}

/* Rule: the advance stays within [0, advance_max_ns] whatever the errors. */
static void advance_is_bounded(void **state)
{
    TU_FIX(state);
    uint32_t seed = 7;
    int k;
    tune_err(t, INT64_MAX / 2);
    assert_int_equal(t->adv_ns, 5000);
    for (k = 0; k < 3; k++)
        tune_err(t, INT64_MIN / 2);
    assert_int_equal(t->adv_ns, 0);
    for (k = 0; k < 20000; k++) {
        int64_t err = (int64_t)(lcg(&seed) % 40000001u) - 20000000;
        if (k & 1)
            err = (int64_t)(lcg(&seed) % 20000u) - 10000;
        tune_err(t, err);
        assert_true(t->adv_ns <= 5000);
    }
}

/* Outlier rules as steps on a fresh tuner: @times samples of @lat ns,
 * then adv_ns is @expect (unless NONE). */
#define NONE UINT32_MAX
struct tune_step {
    uint32_t times, lat, expect;
};

/* Rule: a single late outlier (a spike) changes nothing; two in a row are
 * a level shift the guest is seeing, and reseed the estimate. */
static const struct tune_step late_spike_ignored_late_shift_followed[] = {
    {10, 2000, 2000},  {1, 102000, 2000}, {1, 2000, 2000}, {1, 80000, 2000},
    {1, 80000, 80000}, {1, 80000, 80000}, {0, 0, 0}};

/* Rule: early outliers only cost host spin: three in a row reseed. */
static const struct tune_step early_shift_needs_three[] = {
    {1, 80000, NONE}, {2, 20000, 80000}, {1, 20000, 20000}, {0, 0, 0}};

/* Rule: an outlier run broken by the other side starts counting again. */
static const struct tune_step outlier_direction_change_restarts_count[] = {
    {1, 40000, NONE},
    {2, 5000, NONE},
    {1, 100000, NONE},
    {1, 5000, 40000},
    {0, 0, 0}};

static void tuner_follows_the_steps(void **state)
{
    const struct tune_step *s;
    struct fake_host h;
    struct lapict_timer t;
    uint32_t k;
    setup_goal(&h, &t, GOAL_LAT, 0);
    for (s = *state; s->times; s++) {
        for (k = 0; k < s->times; k++)
            sample(&t, s->lat);
        if (s->expect != NONE)
            assert_int_equal(t.adv_ns, s->expect);
    }
}

/* clang-format off */
#define TUNE_TEST(steps)                                                       \
    { #steps, tuner_follows_the_steps, NULL, NULL, (void *)(steps) }
/* clang-format on */

/* Rule: a late sample is covered at once; quiet spells lower the advance
 * slowly (at most a quarter of the gap a step), towards est + 2 dev. */
static void late_sample_raises_at_once_quiet_lowers_slowly(void **state)
{
    TU_FIX(state);
    uint32_t prev;
    int k;
    sample(t, 10000);
    sample(t, 12000);
    assert_true(t->adv_ns >= 12000);
    prev = t->adv_ns;
    for (k = 0; k < 400; k++) {
        sample(t, 10000);
        assert_true(t->adv_ns <= prev);
        assert_true(prev - t->adv_ns <= (prev - 10000) / 4 + 1);
        prev = t->adv_ns;
    }
    assert_true(t->adv_ns < 10100);
    assert_true(t->adv_ns >= 10000);
}

/* Rule: under uniform noise the advance settles above the noise, so after
 * a short start no arrival is late by more than 100 ns. */
static void uniform_noise_is_covered(void **state)
{
    TU_FIX(state);
    uint32_t seed = 3, late = 0;
    int k;
    for (k = 0; k < 2000; k++) {
        uint32_t lat = noise20(&seed);
        if (k >= 50 && lat > t->adv_ns + 100u)
            late++;
        sample(t, lat);
    }
    print_message("late after warm-up: %u, advance %u\n", late, t->adv_ns);
    assert_int_equal(late, 0);
    assert_true(t->adv_ns <= 40000);
}

/* Rule: only the adaptive mode with a spin op tunes; without a spin op
 * the advance is 0 from init on (nothing could wait before entry). */
static void only_adaptive_with_spin_tunes(void **state)
{
    static const struct {
        uint32_t mode, start, max;
        bool spin;
        uint32_t at_init, after;
    } cases[] = {
        {LAPICT_ADVANCE_FIXED, 3000, 3000, true, 3000, 3000},
        {LAPICT_ADVANCE_OFF, 0, 0, true, 0, 0},
        {LAPICT_ADVANCE_ADAPTIVE, 1000, 5000, false, 0, 0},
        {LAPICT_ADVANCE_FIXED, 3000, 3000, false, 0, 0},
    };
    size_t i;
    (void)state;
    for (i = 0; i < N_OF(cases); i++) {
        struct fake_host h;
        struct lapict_timer t;
        bind(&h, &t, cases[i].mode, cases[i].start, cases[i].max, cases[i].spin,
             GOAL_LAT, 0);
        assert_int_equal(t.adv_ns, cases[i].at_init);
        tune_err(&t, cases[i].spin ? 5000 : 2000);
        assert_int_equal(t.adv_ns, cases[i].after);
        assert_false(t.flags & LAPICT__F_HAVE_EST);
    }
}

/* ---- goals and the spin budget, through the public API -------------- */

#define STUDY_N 1000u
#define PERIOD_NS 1000000u

/* The latency shapes of the tuning study (tools/bench/tuning.c), drawn
 * from the test's own generator: expiry @n of STUDY_N, ns. */
enum shape { C1, C20, C80, NOISE, SPIKES, STEP, NOISE20, STEP80, NSHAPE };

static uint32_t shape_lat(enum shape s, uint32_t n, uint32_t *seed)
{
    switch (s) {
    case C1:
        return 1000;
    case C20:
        return 20000;
    case C80:
        return 80000;
    case NOISE:
        return 500u + lcg(seed) % 3001u;
    case SPIKES:
        return lcg(seed) % 256u == 0 ? 102000u : 2000u;
    case STEP:
        return n < STUDY_N / 2 ? 1500u : 4000u;
    case NOISE20:
        return noise20(seed);
    default:
        return n < STUDY_N / 2 ? 20000u : 80000u;
    }
}

struct run_out {
    uint64_t host_spin; /* ns the host's clock moved inside entry */
    uint32_t early;     /* deliveries before the deadline */
    uint32_t delivered;
    uint64_t late_sum; /* host ns of lateness, summed */
};

/* A guest re-arming its TSC deadline every ms, the host timer firing @lat
 * ns late; spin is the time the host's clock lost in entry. Switches to
 * (@goal2, @budget2) half-way when @goal2 >= 0. */
static void run_study(struct fake_host *h, struct lapict_timer *t,
                      enum shape sh, int goal2, uint32_t budget2,
                      struct run_out *o)
{
    uint32_t seed = 11u + (uint32_t)sh, n;
    uint64_t D = fake_tsc(h) + PERIOD_NS;
    memset(o, 0, sizeof(*o));
    OK(lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | 0xEC));
    OK(lapict_tsc_deadline_write(t, D));
    for (n = 0; n < STUDY_N; n++) {
        uint32_t lat = shape_lat(sh, n, &seed);
        uint64_t before;
        int guard;
        if (goal2 >= 0 && n == STUDY_N / 2)
            OK(lapict_advance_set(t, (uint32_t)goal2, budget2));
        fake_clear_records(h);
        for (guard = 0; h->sim.injects == 0; guard++) {
            uint64_t at;
            assert_true(guard < 4);
            assert_true(fake_armed(h));
            at = fake_armed_at(h);
            if (fake_diff(h->sim.now_ns, at) > 0)
                fake_stall(h, (uint64_t)fake_diff(h->sim.now_ns, at));
            fake_stall(h, lat);
            fake_fire_sw(h);
        }
        before = h->sim.now_ns;
        OK(fake_enter(h));
        o->host_spin += h->sim.now_ns - before;
        assert_int_equal(h->sim.deliveries, 1);
        o->delivered++;
        if (h->dlv[0].guest_tsc < D)
            o->early++;
        else
            o->late_sum += h->dlv[0].guest_tsc - D; /* 1 GHz: cycles = ns */
        D += PERIOD_NS;
        OK(lapict_tsc_deadline_write(t, D));
    }
}

/* Rule (spin budget): balanced, the mean spin per interrupt of each study
 * scenario stays in the budget, never early; the spin account is exact. */
static void balanced_budget_holds_over_the_study(void **state)
{
    static const uint32_t budgets[] = {100, 250, 1000, 4000};
    size_t b;
    int sh;
    (void)state;
    for (b = 0; b < N_OF(budgets); b++)
        for (sh = 0; sh < NSHAPE; sh++) {
            struct fake_host h;
            struct lapict_timer t;
            struct run_out o;
            struct lapict_stats st;
            setup_goal(&h, &t, GOAL_BAL, budgets[b]);
            run_study(&h, &t, (enum shape)sh, -1, 0, &o);
            st = tu_stats(&t);
            print_message("budget %u shape %d: spin %llu ns/irq\n", budgets[b],
                          sh, (unsigned long long)(o.host_spin / STUDY_N));
            assert_int_equal(o.early, 0);
            assert_int_equal(o.delivered, STUDY_N);
            assert_true(o.host_spin <= (uint64_t)budgets[b] * STUDY_N);
            assert_true(st.spin_ns_total == o.host_spin);
            assert_true(st.spins <= STUDY_N);
        }
}

/* Rule: without a budget the balanced goal still never delivers early,
 * and spins less than the latency goal under noise, at the price of
 * lateness (the median aim); a constant level costs neither any spin. */
static void balanced_never_early_and_cheaper_than_latency(void **state)
{
    static const enum shape shapes[] = {NOISE, NOISE20, SPIKES};
    size_t i;
    (void)state;
    for (i = 0; i < N_OF(shapes); i++) {
        struct fake_host h;
        struct lapict_timer t;
        struct run_out bal, lat;
        setup_goal(&h, &t, GOAL_BAL, 0);
        run_study(&h, &t, shapes[i], -1, 0, &bal);
        setup_goal(&h, &t, GOAL_LAT, 0);
        run_study(&h, &t, shapes[i], -1, 0, &lat);
        assert_int_equal(bal.early, 0);
        assert_int_equal(lat.early, 0);
        if (shapes[i] == SPIKES) {
            assert_true(bal.host_spin == 0 && lat.host_spin == 0);
            continue;
        }
        assert_true(2 * bal.host_spin < lat.host_spin);
        assert_true(bal.late_sum > lat.late_sum);
    }
}

/* Rule: the latency goal ignores the budget (the peak hold, spin and all). */
static void latency_goal_ignores_the_budget(void **state)
{
    TU_FIX(state);
    struct fake_host h2;
    struct lapict_timer t2;
    uint32_t s1 = 5, s2 = 5;
    int k;
    setup_goal(&h2, &t2, GOAL_LAT, 0);
    OK(lapict_advance_set(&t2, GOAL_LAT, 1));
    for (k = 0; k < 3000; k++) {
        sample(t, noise20(&s1));
        sample(&t2, noise20(&s2));
        assert_int_equal(t->adv_ns, t2.adv_ns);
    }
    assert_true(t->adv_ns > 30000);
}

/* Rule: the goal changes at run time, from the next sample on; the
 * interrupt already injected ahead is still waited for (never early). */
static void goal_switches_at_run_time(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    struct run_out o;
    (void)state;
    setup_goal(&h, &t, GOAL_LAT, 0);
    run_study(&h, &t, NOISE20, GOAL_BAL, 1000, &o);
    assert_int_equal(o.early, 0);
    assert_true(tu_stats(&t).advance_ns < 15000);
    setup_goal(&h, &t, GOAL_BAL, 1000);
    run_study(&h, &t, NOISE20, GOAL_LAT, 0, &o);
    assert_int_equal(o.early, 0);
    assert_true(tu_stats(&t).advance_ns > 30000);
}

/* Rule (host misuse is LAPICT_E_INVAL): the setter validates everything
 * and changes nothing on error; the config check names the advance. */
static void advance_set_validates(void **state)
{
    static const struct {
        uint32_t goal, budget;
    } bad[] = {{2, 0},
               {UINT32_MAX, 0},
               {GOAL_BAL, LAPICT_ADVANCE_NS_LIMIT + 1},
               {GOAL_BAL, UINT32_MAX}};
    TU_FIX(state);
    struct lapict_timer copy;
    struct lapict_config c = tu_cfg();
    size_t i;
    sample(t, 3000);
    memcpy(&copy, t, sizeof(copy));
    assert_int_equal(lapict_advance_set(NULL, 0, 0), LAPICT_E_INVAL);
    for (i = 0; i < N_OF(bad); i++)
        assert_int_equal(lapict_advance_set(t, bad[i].goal, bad[i].budget),
                         LAPICT_E_INVAL);
    assert_memory_equal(&copy, t, sizeof(copy));
    memset(&copy, 0, sizeof(copy)); /* never initialised: no magic */
    assert_int_equal(lapict_advance_set(&copy, 0, 0), LAPICT_E_INVAL);
    OK(lapict_advance_set(t, GOAL_BAL, LAPICT_ADVANCE_NS_LIMIT));
    assert_int_equal(t->adv_goal, GOAL_BAL);
    assert_int_equal(t->adv_budget_ns, LAPICT_ADVANCE_NS_LIMIT);
    assert_int_equal(t->adv_ns, 3000); /* the advance is not touched */
    OK(lapict_advance_set(t, GOAL_LAT, 0));
    assert_int_equal(t->adv_budget_ns, 0);
    c.advance_goal = 2;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_ADVANCE);
    c.advance_goal = GOAL_BAL;
    c.advance_spin_budget_ns = LAPICT_ADVANCE_NS_LIMIT + 1;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_ADVANCE);
    c.advance_spin_budget_ns = LAPICT_ADVANCE_NS_LIMIT;
    OK(lapict_config_check(&c));
    lapict_config_default(&c);
    assert_int_equal(c.advance_goal, GOAL_LAT);
    assert_int_equal(c.advance_spin_budget_ns, 0);
}

/* Rule (balanced goal): a constant is matched, noise gives its median; a
 * budget under the median's cost (2.5 us) aims under nearly every latency
 * (< 1 % early), one that fits the bound (mean deviation, 5 us) does not. */
static void balanced_tracks_the_median_or_the_floor(void **state)
{
    TU_FIX(state);
    uint32_t seed = 9, under = 0;
    int k;
    for (k = 0; k < 100; k++)
        sample(t, 7000);
    assert_int_equal(t->adv_ns, 7000);
    for (k = 0; k < 4000; k++)
        sample(t, noise20(&seed));
    assert_in_range(t->adv_ns, 18500, 21500);
    OK(lapict_advance_set(t, GOAL_BAL, 1000));
    for (k = 0; k < 4000; k++) {
        uint32_t lat = noise20(&seed);
        if (t->adv_ns > lat)
            under++;
        sample(t, lat);
    }
    assert_true(t->adv_ns < 12000);
    assert_true(under < 40);
    OK(lapict_advance_set(t, GOAL_BAL, 6000));
    for (k = 0; k < 50; k++)
        sample(t, noise20(&seed));
    assert_true(t->adv_ns > 15000);
}

/* Rule (spin budget): early outliers (40 % at 10 us under the rest) are
 * spin too: balanced keeps a 3 us budget, latency holds the upper level. */
static void balanced_budget_sees_early_outliers(void **state)
{
    uint32_t seed = 21, spin[2] = {0, 0};
    int k, pass;
    (void)state;
    for (pass = 0; pass < 2; pass++) {
        struct fake_host h;
        struct lapict_timer t;
        setup_goal(&h, &t, pass ? GOAL_LAT : GOAL_BAL, 3000);
        for (k = 0; k < 2000; k++) {
            uint32_t lat = lcg(&seed) % 5u < 2u ? 2000u : 12000u;
            spin[pass] += t.adv_ns > lat ? t.adv_ns - lat : 0;
            sample(&t, lat);
        }
    }
    print_message("balanced %u, latency %u ns per interrupt\n", spin[0] / 2000,
                  spin[1] / 2000);
    assert_true(spin[0] <= 3000u * 2000u);
    assert_true(spin[1] > 3000u * 2000u);
}

/* Rule (stats): the spin account saturates instead of wrapping. */
static void spin_account_saturates(void **state)
{
    TU_FIX(state);
    struct run_out o;
    t->spin_ns = UINT64_MAX - 10;
    run_study(h, t, NOISE, -1, 0, &o);
    assert_true(o.host_spin > 10);
    assert_true(tu_stats(t).spin_ns_total == UINT64_MAX);
}

/* Rule (section 8): the blob carries the tuned advance, not the goal,
 * budget or spin account: a restore keeps the instance's own. */
static void restore_keeps_the_host_policy(void **state)
{
    struct fake_host h1, h2;
    struct lapict_timer a, b;
    uint8_t blob[LAPICT_STATE_SIZE];
    struct run_out o;
    (void)state;
    setup_goal(&h1, &a, GOAL_BAL, 1000);
    run_study(&h1, &a, NOISE, -1, 0, &o);
    OK(lapict_state_save(&a, blob, sizeof(blob)));
    setup_goal(&h2, &b, GOAL_LAT, 0);
    h2.sim.now_ns = h1.sim.now_ns;
    b.spin_ns = 77;
    OK(lapict_state_restore(&b, blob, sizeof(blob)));
    assert_int_equal(b.adv_goal, GOAL_LAT);
    assert_int_equal(b.adv_budget_ns, 0);
    assert_int_equal(b.adv_ns, a.adv_ns);
    assert_true(b.spin_ns == 77);
    OK(lapict_state_restore(&a, blob, sizeof(blob)));
    assert_int_equal(a.adv_goal, GOAL_BAL);
    assert_int_equal(a.adv_budget_ns, 1000);
}

/* Rule: no decision rests on a statistics counter: with every counter
 * saturated the adaptive advance still follows the host's latency (3 us). */
static void saturated_counters_do_not_stop_learning(void **state)
{
    TU_FIX(state);
    int i;
    memset(t->counts, 0xff, sizeof(t->counts));
    t->last_arrival_ns = t->last_guest_ns = 0;
    OK(lapict_tdcr_write(t, 0xB));
    OK(lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | 0x30));
    OK(lapict_tmict_write(t, 1000000));
    for (i = 0; i < 20; i++) {
        fake_advance_to(h, fake_armed_at(h));
        fake_stall(h, 3000);
        fake_enter(h);
    }
    print_message("advance %u\n", t->adv_ns);
    assert_true(t->adv_ns >= 2900 && t->adv_ns <= 4000);
    assert_int_equal(h->sim.injects, 20);
}

/* Source and destination tuners: adaptive from 1 us, bound 10 us. */
TU_PAIR_SETUP(adaptive_pair_setup, c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
              c.advance_ns = 1000; c.advance_max_ns = 10000)

/* Rule (section 8): a run of outliers being counted travels with the blob:
 * one late outlier, save/restore, a second reseeds both alike. */
static void outlier_run_survives_save_and_restore(void **state)
{
    TU_PAIR(state);
    uint8_t blob[LAPICT_STATE_SIZE];
    int k;
    for (k = 0; k < 20; k++)
        sample(ta, 500);
    sample(ta, 5000);
    assert_int_equal(ta->adv_ns, 500);
    OK(lapict_state_save(ta, blob, sizeof(blob)));
    OK(lapict_state_restore(tb, blob, sizeof(blob)));
    assert_int_equal(tb->adv_ns, ta->adv_ns);
    sample(ta, 5000);
    sample(tb, 5000);
    assert_int_equal(ta->adv_ns, 5000);
    assert_int_equal(tb->adv_ns, ta->adv_ns);
    assert_int_equal(tb->adv_est, ta->adv_est);
    assert_int_equal(tb->adv_dev, ta->adv_dev);
}

/* Rules written for one base: at 0. */
#define AT_0(fn, setup) TU_FIX_ENTRY(fn, " at 0", 0, TU_HV_NEVER, setup)
#define AT_BOTH(fn) TU_FIXED_AT_BASES_WITH(fn, TU_HV_NEVER, adaptive_setup)

TU_MAIN(cmocka_unit_test(first_sample_converges_at_any_level),
        AT_0(advance_is_bounded, adaptive_5us_setup),
        TUNE_TEST(late_spike_ignored_late_shift_followed),
        TUNE_TEST(early_shift_needs_three),
        TUNE_TEST(outlier_direction_change_restarts_count),
        AT_BOTH(late_sample_raises_at_once_quiet_lowers_slowly),
        AT_BOTH(uniform_noise_is_covered),
        cmocka_unit_test(only_adaptive_with_spin_tunes),
        cmocka_unit_test(balanced_budget_holds_over_the_study),
        cmocka_unit_test(balanced_never_early_and_cheaper_than_latency),
        AT_0(latency_goal_ignores_the_budget, adaptive_setup),
        cmocka_unit_test(goal_switches_at_run_time),
        AT_0(advance_set_validates, adaptive_setup),
        AT_0(balanced_tracks_the_median_or_the_floor, balanced_setup),
        cmocka_unit_test(balanced_budget_sees_early_outliers),
        AT_0(spin_account_saturates, adaptive_setup),
        cmocka_unit_test(restore_keeps_the_host_policy),
        AT_0(saturated_counters_do_not_stop_learning, adaptive_5us_setup),
        TU_PAIR_AT_BASES_WITH(outlier_run_survives_save_and_restore,
                              adaptive_pair_setup))
