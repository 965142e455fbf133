/* SPDX-License-Identifier: MIT */
/* lib/version.c: compile-time and run-time version agree. */
#include "testutil.h"

#include <stdio.h>

static void version_number_matches_header(void **state)
{
    (void)state;
    assert_int_equal(lapict_version(), LAPICT_VERSION_NUMBER);
    assert_int_equal(LAPICT_VERSION_NUMBER,
                     ((uint32_t)LAPICT_VERSION_MAJOR << 16) |
                         ((uint32_t)LAPICT_VERSION_MINOR << 8) |
                         (uint32_t)LAPICT_VERSION_PATCH);
}

static void version_string_matches_header(void **state)
{
    (void)state;
    const char *s = lapict_version_string();
    assert_non_null(s);
    assert_string_equal(s, LAPICT_VERSION_STRING);
}

static void version_string_matches_number(void **state)
{
    (void)state;
    unsigned maj = 99, min = 99, pat = 99;
    char tail = 0;
    const char *s = lapict_version_string();
    assert_int_equal(sscanf(s, "%u.%u.%u%c", &maj, &min, &pat, &tail), 3);
    assert_int_equal((maj << 16) | (min << 8) | pat, lapict_version());
    assert_true(min < 256 && pat < 256);
}

int main(int argc, char **argv)
{
    /* Optional test name pattern, e.g. for debugging one test. */
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_number_matches_header),
        cmocka_unit_test(version_string_matches_header),
        cmocka_unit_test(version_string_matches_number),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
