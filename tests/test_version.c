/* SPDX-License-Identifier: MIT */
/*
 * lib/version.c: the linked library, the header and the project agree.
 * The library is what the test runs with (a stale one fails here), the
 * header is what it was compiled against, and LAPICT_PROJECT_VERSION is
 * CMake's project() version, which the package files carry.
 */
#include "testutil.h"

#include <stdio.h>

#ifndef LAPICT_PROJECT_VERSION
#error "tests/CMakeLists.txt defines LAPICT_PROJECT_VERSION for this test"
#endif

static void version_number_matches_header(void **state)
{
    (void)state;
    assert_int_equal(lapict_version(), LAPICT_VERSION_NUMBER);
}

/* The header is edited by hand; project() must say the same. */
static void header_matches_project_version(void **state)
{
    (void)state;
    unsigned maj = 99, min = 99, pat = 99;
    char tail = 0;
    assert_string_equal(LAPICT_VERSION_STRING, LAPICT_PROJECT_VERSION);
    assert_int_equal(
        sscanf(LAPICT_PROJECT_VERSION, "%u.%u.%u%c", &maj, &min, &pat, &tail),
        3);
    assert_int_equal(maj, LAPICT_VERSION_MAJOR);
    assert_int_equal(min, LAPICT_VERSION_MINOR);
    assert_int_equal(pat, LAPICT_VERSION_PATCH);
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

TU_MAIN(cmocka_unit_test(version_number_matches_header),
        cmocka_unit_test(header_matches_project_version),
        cmocka_unit_test(version_string_matches_header),
        cmocka_unit_test(version_string_matches_number))
