/* SPDX-License-Identifier: MIT */
/* The main() of every cmocka test program. */
#ifndef LAPICT_TEST_TU_MAIN_H
#define LAPICT_TEST_TU_MAIN_H

/*
 * TU_MAIN(entries...) defines main(), which runs the test table made of its
 * arguments; given an argument, only the tests whose names match that
 * pattern run (cmocka_set_test_filter()), to debug one test alone.
 * TU_MAIN_GROUP(setup, teardown, entries...) adds group fixtures.
 */
#define TU_MAIN_GROUP(setup, teardown, ...)                                    \
    int main(int argc, char **argv)                                            \
    {                                                                          \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                       \
        if (argc > 1)                                                          \
            cmocka_set_test_filter(argv[1]);                                   \
        return cmocka_run_group_tests(tests, setup, teardown);                 \
    }
#define TU_MAIN(...) TU_MAIN_GROUP(NULL, NULL, __VA_ARGS__)

#endif /* LAPICT_TEST_TU_MAIN_H */
