/* SPDX-License-Identifier: MIT */
/*
 * lib/advance.c: the adaptive advance tuner (TIMER.md section 7), driven
 * white-box through lapict__tune() with arrival errors a host would
 * measure: err = arrival - instant, so the latency is err + advance.
 */
#include "testutil.h"

#include "internal.h"

#define MAXA 200000u

static void setup(struct fake_host *h, struct lapict_timer *t, uint32_t mode,
                  uint32_t start, uint32_t max, bool spin)
{
    struct lapict_config c = tu_cfg();
    c.advance_mode = mode;
    c.advance_ns = start;
    c.advance_max_ns = max;
    fake_host_init(h, 0, c.tsc_khz, 0, false);
    if (!spin)
        fake_ops_null(&h->ops, FAKE_OP_SPIN);
    assert_int_equal(fake_attach(h, t, &c), LAPICT_OK);
}

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

/* Rule: the first sample seeds the estimate, so any constant latency
 * within the bound is matched after one expiry (20 and 80 us included). */
static void first_sample_converges_at_any_level(void **state)
{
    static const uint32_t lats[] = {0, 1000, 20000, 80000, 150000};
    size_t i;
    int k;
    (void)state;
    for (i = 0; i < sizeof(lats) / sizeof(lats[0]); i++) {
        struct fake_host h;
        struct lapict_timer t;
        setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, MAXA, true);
        sample(&t, lats[i]);
        assert_int_equal(t.adv_ns, lats[i]);
        for (k = 0; k < 50; k++) {
            sample(&t, lats[i]);
            assert_int_equal(t.adv_ns, lats[i]);
        }
    }
}

/* Rule: the advance stays within [0, advance_max_ns] whatever the errors. */
static void advance_is_bounded(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    uint32_t seed = 7;
    int k;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, 5000, true);
    tune_err(&t, INT64_MAX / 2);
    assert_int_equal(t.adv_ns, 5000);
    tune_err(&t, INT64_MIN / 2);
    tune_err(&t, INT64_MIN / 2);
    tune_err(&t, INT64_MIN / 2);
    assert_int_equal(t.adv_ns, 0);
    for (k = 0; k < 20000; k++) {
        int64_t err = (int64_t)(lcg(&seed) % 40000001u) - 20000000;
        if (k & 1)
            err = (int64_t)(lcg(&seed) % 20000u) - 10000;
        tune_err(&t, err);
        assert_true(t.adv_ns <= 5000);
    }
}

/* Rule: a single late outlier (a spike) changes nothing; two in a row are
 * a level shift the guest is seeing, and reseed the estimate. */
static void late_spike_ignored_late_shift_followed(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    int k;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, MAXA, true);
    for (k = 0; k < 10; k++)
        sample(&t, 2000);
    assert_int_equal(t.adv_ns, 2000);
    sample(&t, 102000);
    assert_int_equal(t.adv_ns, 2000);
    sample(&t, 2000);
    assert_int_equal(t.adv_ns, 2000);
    sample(&t, 80000);
    assert_int_equal(t.adv_ns, 2000);
    sample(&t, 80000);
    assert_int_equal(t.adv_ns, 80000);
    sample(&t, 80000);
    assert_int_equal(t.adv_ns, 80000);
}

/* Rule: early outliers only cost host spin: three in a row reseed. */
static void early_shift_needs_three(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, MAXA, true);
    sample(&t, 80000);
    sample(&t, 20000);
    sample(&t, 20000);
    assert_int_equal(t.adv_ns, 80000);
    sample(&t, 20000);
    assert_int_equal(t.adv_ns, 20000);
}

/* Rule: an outlier run broken by the other side starts counting again. */
static void outlier_direction_change_restarts_count(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, MAXA, true);
    sample(&t, 40000);
    sample(&t, 5000);   /* early outlier 1 */
    sample(&t, 5000);   /* early outlier 2 */
    sample(&t, 100000); /* late outlier 1: early run broken */
    sample(&t, 5000);   /* early outlier 1 again */
    assert_int_equal(t.adv_ns, 40000);
}

/* Rule: a late in-gate sample is covered at once (guest-visible), and
 * quiet spells lower the advance slowly, towards est + 2 dev. */
static void late_sample_raises_at_once_quiet_lowers_slowly(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    uint32_t prev;
    int k;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, MAXA, true);
    sample(&t, 10000);
    sample(&t, 12000);
    assert_true(t.adv_ns >= 12000);
    prev = t.adv_ns;
    for (k = 0; k < 400; k++) {
        sample(&t, 10000);
        assert_true(t.adv_ns <= prev);
        /* Bounded step down: at most a quarter of the gap at once. */
        assert_true(prev - t.adv_ns <= (prev - 10000) / 4 + 1);
        prev = t.adv_ns;
    }
    assert_true(t.adv_ns < 10100);
    assert_true(t.adv_ns >= 10000);
}

/* Rule: under uniform noise the advance settles above the noise, so after
 * a short start no arrival is late by more than 100 ns. */
static void uniform_noise_is_covered(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    uint32_t seed = 3, late = 0;
    int k;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, MAXA, true);
    for (k = 0; k < 2000; k++) {
        uint32_t lat = 10000u + lcg(&seed) % 20001u;
        if (k >= 50 && lat > t.adv_ns + 100u)
            late++;
        sample(&t, lat);
    }
    print_message("late after warm-up: %u, advance %u\n", late, t.adv_ns);
    assert_int_equal(late, 0);
    assert_true(t.adv_ns <= 40000);
}

/* Rule: only the adaptive mode with a spin op tunes; without a spin op
 * the advance is 0 from init on (nothing could wait before entry). */
static void only_adaptive_with_spin_tunes(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_FIXED, 3000, 3000, true);
    tune_err(&t, 5000);
    assert_int_equal(t.adv_ns, 3000);
    setup(&h, &t, LAPICT_ADVANCE_OFF, 0, 0, true);
    tune_err(&t, 5000);
    assert_int_equal(t.adv_ns, 0);
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, 5000, false);
    assert_int_equal(t.adv_ns, 0);
    tune_err(&t, 2000);
    assert_int_equal(t.adv_ns, 0);
    assert_false(t.flags & LAPICT__F_HAVE_EST);
    setup(&h, &t, LAPICT_ADVANCE_FIXED, 3000, 3000, false);
    assert_int_equal(t.adv_ns, 0);
}

/* Rule: no decision rests on a statistics counter. With every counter
 * pinned at its saturation value the adaptive advance still samples each
 * advanced expiry and follows the host's latency (3 us here). */
static void saturated_counters_do_not_stop_learning(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    int i;
    (void)state;
    setup(&h, &t, LAPICT_ADVANCE_ADAPTIVE, 1000, 5000, true);
    memset(&t.c, 0xff, sizeof(t.c));
    t.c.last_arrival_ns = 0;
    t.c.last_error = LAPICT_OK;
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | 0x30),
                     LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1000000), LAPICT_OK);
    for (i = 0; i < 20; i++) {
        fake_advance_to(&h, fake_armed_at(&h));
        fake_stall(&h, 3000);
        fake_enter(&h);
    }
    print_message("advance %u\n", t.adv_ns);
    assert_true(t.adv_ns >= 2900 && t.adv_ns <= 4000);
    assert_int_equal(h.ninj, 20);
    tu_check_host(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_sample_converges_at_any_level),
        cmocka_unit_test(advance_is_bounded),
        cmocka_unit_test(late_spike_ignored_late_shift_followed),
        cmocka_unit_test(early_shift_needs_three),
        cmocka_unit_test(outlier_direction_change_restarts_count),
        cmocka_unit_test(late_sample_raises_at_once_quiet_lowers_slowly),
        cmocka_unit_test(uniform_noise_is_covered),
        cmocka_unit_test(only_adaptive_with_spin_tunes),
        cmocka_unit_test(saturated_counters_do_not_stop_learning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
