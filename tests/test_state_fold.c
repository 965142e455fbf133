/* SPDX-License-Identifier: MIT */
/*
 * A known defect of lib/state.c, kept as a reproducer (ctest WILL_FAIL:
 * this test passes while the defect is there and fails once it is fixed,
 * which is the reminder to drop WILL_FAIL and fold it into test_state.c).
 *
 * Rule (TIMER.md section 6, coalesce: "at most one pending; the others are
 * counted in stats and dropped"; section 8: save has no side effects, a
 * due expiry travels as pending). lapict_state_save() settles due
 * expiries on a copy: a periodic tick held pending plus a due grid point
 * fold into one pending there, but the coalesced tick is counted by
 * neither the source (save changes nothing) nor the destination (the
 * blob has no field for it). Servicing instead would count it. Found by
 * lapict-vmm --test=migrate, whose guest counts every periodic tick.
 */
#include "testutil.h"

static void save_folds_uncounted(void **state)
{
    struct fake_host h, h2;
    struct lapict_timer t, t2;
    struct lapict_config c = tu_cfg();
    struct lapict_stats a, b;
    uint8_t blob[LAPICT_STATE_SIZE];

    (void)state;
    tu_setup(&h, &t, &c, 1000, false);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | 0x30),
                     LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1000000), LAPICT_OK);
    h.window_open = false; /* the guest cannot take it: held */
    h.now_ns += 1000000;   /* grid point 1: serviced, pending */
    lapict_expire(&t);
    h.now_ns += 1000000; /* grid point 2: due, not yet serviced */
    assert_int_equal(lapict_state_save(&t, blob, sizeof(blob)), LAPICT_OK);
    tu_setup(&h2, &t2, &c, 5000, false);
    assert_int_equal(lapict_state_restore(&t2, blob, sizeof(blob)), LAPICT_OK);
    lapict_irq_window_open(&t2);
    assert_int_equal(h2.ninj, 1); /* one delivered: coalesce */
    lapict_stats_get(&t, &a);
    lapict_stats_get(&t2, &b);
    /* The other one must show as coalesced somewhere. */
    assert_int_equal(a.coalesced + b.coalesced, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(save_folds_uncounted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
