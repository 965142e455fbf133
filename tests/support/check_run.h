/* SPDX-License-Identifier: MIT */
/*
 * The one way the Check integration tests run their suite. Their failure
 * messages carry a guest's or a tool's whole output, which is what says why
 * a run failed; Check drops a message longer than its 4 KiB default with
 * only "Message string too long", so the limit is raised to 1 MiB.
 */
#ifndef LAPICT_TEST_CHECK_RUN_H
#define LAPICT_TEST_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

#define LT_CHECK_MAX_MSG (1u << 20)

/* Runs @s (and frees it); EXIT_SUCCESS if no test failed. */
static inline int lt_check_run(Suite *s)
{
    SRunner *r;
    int failed;

    check_set_max_msg_size(LT_CHECK_MAX_MSG);
    r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
