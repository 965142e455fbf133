/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm --test=migrate on /dev/kvm (docs/spec/timer.md "Save and
 * restore"): a running guest, its timer busy in every mode, migrated 100 times
 * into new VMs (the LAPIC model and the timer saved in either order,
 * alternating), under advance off and adaptive; the guest finds no timer
 * interrupt lost, doubled or early and TMCCT consistent across each migration,
 * and every stop kind happened. A short run re-executes the VMM at each
 * migration (--exec), the state passing through a file. Where KVM is
 * unusable the test exits with LT_SKIP_RC, which ctest reports as skipped.
 */
#define _GNU_SOURCE
#include "check_run.h"

#include "kvm_probe.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__) && defined(__x86_64__) && defined(LAPICT_VMM_BIN)
static char *vmm(const char *args, int *rc)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s --timeout=%d --quiet %s", LAPICT_VMM_BIN,
             LT_GUEST_TIMEOUT_S, args);
    return lt_run_capture(cmd, rc);
}

/* The value of " key=" in the RESULT line, or -1. */
static long long field(const char *out, const char *key)
{
    const char *r = strstr(out, "RESULT test=migrate");
    char pat[64];
    const char *p;

    if (!r)
        return -1;
    snprintf(pat, sizeof(pat), " %s=", key);
    p = strstr(r, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

static void check_run(const char *out, int rc, long long n, bool advance)
{
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_msg(field(out, "migrations") == n, "%s", out);
    ck_assert_msg(field(out, "lost") == 0 && field(out, "doubled") == 0 &&
                      field(out, "early") == 0 && field(out, "tmcct_bad") == 0,
                  "%s", out);
    ck_assert_msg(field(out, "interrupts") > n, "%s", out);
    /* Both save orders, alternating. */
    ck_assert_msg(field(out, "irr_first") == n / 2 &&
                      field(out, "timer_first") == n - n / 2,
                  "%s", out);
    if (n < 50)
        return;
    /* Each stop kind happened; TMCCT was checked across migrations. */
    ck_assert_msg(field(out, "stops_pending") > 0 &&
                      field(out, "stops_halted") > 0 &&
                      field(out, "stops_modeswitch") > 0 &&
                      field(out, "stops_random") > 0,
                  "%s", out);
    ck_assert_msg(!advance || field(out, "stops_advance") > 0, "%s", out);
    /* Each TMCCT stop falls between two samples the guest compares. */
    ck_assert_msg(field(out, "stops_tmcct") > 0 &&
                      field(out, "tmcct_across") >= field(out, "stops_tmcct"),
                  "%s", out);
}

START_TEST(migrate_advance_off)
{
    int rc;
    char *o =
        vmm("--test=migrate --migrations=100 --advance=off --seed=1", &rc);
    check_run(o, rc, 100, false);
    free(o);
}
END_TEST

START_TEST(migrate_advance_adaptive)
{
    int rc;
    char *o = vmm("--test=migrate --migrations=100 --advance=adaptive "
                  "--seed=2",
                  &rc);
    check_run(o, rc, 100, true);
    free(o);
}
END_TEST

/* --exec: every migration a new process, through the --save file; with a
 * deliberate downtime, which the guest's checks must absorb. */
START_TEST(migrate_exec)
{
    char file[64], args[160];
    int rc;
    char *o;

    snprintf(file, sizeof(file), "/tmp/check_migrate.%d", (int)getpid());
    snprintf(args, sizeof(args),
             "--test=migrate --migrations=6 --exec --save=%s "
             "--downtime-us=20000 --seed=3",
             file);
    o = vmm(args, &rc);
    unlink(file);
    check_run(o, rc, 6, false);
    ck_assert_msg(field(o, "execs") == 6, "%s", o);
    ck_assert_msg(field(o, "max_downtime_us") >= 20000, "%s", o);
    free(o);
}
END_TEST

/* A corrupt or foreign state file is refused with a message (status 2). */
START_TEST(migrate_restore_rejects_garbage)
{
    char file[64], args[128];
    FILE *f;
    int rc;
    char *o;

    snprintf(file, sizeof(file), "/tmp/check_migrate_bad.%d", (int)getpid());
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("LAPICT-VMM-SNAP1 but nothing else", f);
    fclose(f);
    snprintf(args, sizeof(args), "--restore=%s", file);
    o = vmm(args, &rc);
    unlink(file);
    ck_assert_msg(rc == 2 && strstr(o, "truncated"), "%d: %s", rc, o);
    free(o);
}
END_TEST

int main(void)
{
    const char *why = lt_kvm_unusable();
    Suite *s;
    TCase *v;

    if (why) {
        printf("check_migrate: SKIP: %s\n", why);
        return LT_SKIP_RC;
    }
    lt_guest_priority("check_migrate");
    s = suite_create("migrate");
    v = tcase_create("kvm");
    tcase_add_test(v, migrate_advance_off);
    tcase_add_test(v, migrate_advance_adaptive);
    tcase_add_test(v, migrate_exec);
    tcase_add_test(v, migrate_restore_rejects_garbage);
    tcase_set_timeout(v, LT_GUEST_CASE_S);
    suite_add_tcase(s, v);
    return lt_check_run(s);
}

#else /* no lapict-vmm on this platform */

int main(void)
{
    printf("check_migrate: SKIP: lapict-vmm needs Linux on x86-64\n");
    return LT_SKIP_RC;
}

#endif
