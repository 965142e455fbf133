/* SPDX-License-Identifier: MIT */
/*
 * tests/guests/baremetal under KVM: lapict-vmm --lapic=kernel --guest=baremetal
 * boots the guest kernel, whose virtual timers (lapict instances) share
 * KVM's in-kernel TSC-deadline timer through adapters/baremetal. The
 * kernel checks every delivery itself; this test reads its RESULT line.
 * Skipped (exit LT_SKIP_RC, reported by ctest as skipped) with a message
 * when /dev/kvm is missing or a VM cannot be made.
 */
#define _GNU_SOURCE
#include "check_run.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvm_probe.h"

#if defined(__linux__) && defined(__x86_64__) && defined(LAPICT_VMM_BIN)
#include <unistd.h>

struct bm_result {
    unsigned timers;
    uint64_t deliveries, early, lost, median, p99;
};

static char console[1 << 16];

/* Boots the guest with @timers (0: no --timers, its default); fills @r
 * from RESULT. */
static void boot(unsigned timers, unsigned expect, struct bm_result *r)
{
    char cmd[512], opt[32] = "", *out;
    const char *line;
    int rc;

    if (timers)
        snprintf(opt, sizeof(opt), " --timers=%u", timers);
    snprintf(cmd, sizeof(cmd),
             "%s --lapic=kernel --guest=baremetal%s --timeout=%d",
             LAPICT_VMM_BIN, opt, LT_GUEST_TIMEOUT_S);
    out = lt_run_capture(cmd, &rc);
    snprintf(console, sizeof(console), "%s", out);
    free(out);
    line = strstr(console, "RESULT test=baremetal ");
    ck_assert_msg(line, "no RESULT line:\n%s", console);
    ck_assert_msg(sscanf(line,
                         "RESULT test=baremetal timers=%u deliveries=%" SCNu64
                         " early=%" SCNu64 " lost=%" SCNu64
                         " median_late=%" SCNu64 " p99_late=%" SCNu64,
                         &r->timers, &r->deliveries, &r->early, &r->lost,
                         &r->median, &r->p99) == 6,
                  "bad RESULT line:\n%s", console);
    ck_assert_msg(rc == 0, "guest status %d:\n%s", rc, console);
    ck_assert_uint_eq(r->timers, expect);
}

/* Rule: the default 64 timers (one-shot, periodic, TSC-deadline) on one
 * physical TSC-deadline timer: deliveries happen, none before its
 * architectural instant, none lost or doubled. */
START_TEST(baremetal_default_timers)
{
    struct bm_result r;

    boot(0, 64, &r);
    ck_assert_msg(r.deliveries > 0 && r.early == 0 && r.lost == 0, "%s",
                  console);
}
END_TEST

/* Rule: the same with a handful of timers (the physical timer follows one
 * virtual timer at a time more often). */
START_TEST(baremetal_few_timers)
{
    struct bm_result r;

    boot(5, 5, &r);
    ck_assert_msg(r.deliveries > 0 && r.early == 0 && r.lost == 0, "%s",
                  console);
}
END_TEST

int main(void)
{
    const char *why = lt_kvm_unusable();
    Suite *s;
    TCase *tc;

    if (why) {
        printf("check_baremetal: SKIP: %s\n", why);
        return LT_SKIP_RC;
    }
    lt_guest_priority("check_baremetal");
    s = suite_create("baremetal");
    tc = tcase_create("kvm");
    tcase_add_test(tc, baremetal_default_timers);
    tcase_add_test(tc, baremetal_few_timers);
    tcase_set_timeout(tc, LT_GUEST_CASE_S);
    suite_add_tcase(s, tc);
    return lt_check_run(s);
}

#else

int main(void)
{
    printf("check_baremetal: SKIP: needs Linux on x86-64 and lapict-vmm "
           "(LAPICT_VMM_BIN)\n");
    return LT_SKIP_RC;
}

#endif
