/* SPDX-License-Identifier: MIT */
/* lib/status.c: every status has its own text; unknown values a fallback. */
#include "testutil.h"

#include <limits.h>

#define FALLBACK "unknown status"

static void status_codes_are_contiguous_negative(void **state)
{
    (void)state;
    /* The enum as documented in status.h: 0 down to -21. Codes are
     * appended, never renumbered. */
    static const int codes[] = {
        LAPICT_OK,
        LAPICT_E_INVAL,
        LAPICT_E_OPS,
        LAPICT_E_BUS_HZ,
        LAPICT_E_TSC_KHZ,
        LAPICT_E_MIN_PERIOD,
        LAPICT_E_ADVANCE,
        LAPICT_E_MISSED,
        LAPICT_E_NOREG,
        LAPICT_E_GP,
        LAPICT_E_MODE,
        LAPICT_E_VECTOR,
        LAPICT_E_STATE_SIZE,
        LAPICT_E_STATE_MAGIC,
        LAPICT_E_STATE_VERSION,
        LAPICT_E_STATE_CHECKSUM,
        LAPICT_E_STATE_FIELD,
        LAPICT_E_STATE_CONFIG,
        LAPICT_E_SYSTEM,
        LAPICT_E_NOT_COUNTDOWN,
        LAPICT_E_REENTRY,
        LAPICT_E_TSC_RATE,
    };
    size_t i;
    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        assert_int_equal(codes[i], -(int)i);
    assert_int_equal(LAPICT_STATUS_MIN, -21);
}

static void strerror_every_code_distinct_nonempty(void **state)
{
    (void)state;
    int a, b;
    for (a = LAPICT_OK; a >= LAPICT_STATUS_MIN; a--) {
        const char *sa = lapict_strerror(a);
        assert_non_null(sa);
        assert_true(strlen(sa) > 0);
        assert_string_not_equal(sa, FALLBACK);
        for (b = a - 1; b >= LAPICT_STATUS_MIN; b--)
            assert_string_not_equal(sa, lapict_strerror(b));
    }
}

static void strerror_unknown_values_give_fallback(void **state)
{
    (void)state;
    static const int unknown[] = {
        1, 2, 100, LAPICT_STATUS_MIN - 1, -1000, INT_MIN, INT_MAX,
    };
    size_t i;
    for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        const char *s = lapict_strerror(unknown[i]);
        assert_non_null(s);
        assert_string_equal(s, FALLBACK);
    }
}

TU_MAIN(cmocka_unit_test(status_codes_are_contiguous_negative),
        cmocka_unit_test(strerror_every_code_distinct_nonempty),
        cmocka_unit_test(strerror_unknown_values_give_fallback))
