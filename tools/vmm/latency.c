/* SPDX-License-Identifier: MIT */
/*
 * The latency tests of the built-in guest (every --test but migrate): one
 * run on the LAPIC asked for, or with --compare the same test on both and
 * their ratio; a TSC-deadline comparison adds the entry floor under the
 * lib path, measured in the same process after the same kind of exit.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm.h"

int vmm_run_latency(const struct vmm_opts *o)
{
    struct vmm_result r[2];
    int status = 0;

    if (o->plain) {
        /* The guest checks, and prints its own RESULT line. */
        status = vmm_run_one(o, o->lapic, NULL, &r[0]);
        return status < 0 || status > 255 ? 255 : status;
    }
    if (!o->compare) {
        status = vmm_run_one(o, o->lapic, o->csv, &r[0]);
        vmm_print_result(o, o->lapic, &r[0]);
    } else {
        char *csv[2] = {NULL, NULL};
        for (int i = 0; i < 2 && o->csv; i++) {
            const char *dot = strrchr(o->csv, '.');
            int base = dot ? (int)(dot - o->csv) : (int)strlen(o->csv);
            if (asprintf(&csv[i], "%.*s-%s.csv", base, o->csv,
                         vmm_lapic_names[i]) < 0)
                vmm_die("asprintf");
        }
        struct vmm_result fl;
        status = vmm_run_one(o, LAPIC_LIB, csv[0], &r[0]);
        status |= vmm_run_one(o, LAPIC_KERNEL, csv[1], &r[1]);
        vmm_print_result(o, LAPIC_LIB, &r[0]);
        vmm_print_result(o, LAPIC_KERNEL, &r[1]);
        printf("RATIO test=%s median_lib/median_kernel=%.3f\n",
               vmm_test_names[o->test],
               r[1].median ? (double)r[0].median / (double)r[1].median : 0.0);
        if (o->test == T_TSCDEADLINE) {
            /*
             * The floor under the lib path, measured in the same run and
             * after the same exit (--wait): the entry with the stamp as
             * the handler's first instruction, and the entry with the
             * timer's own handler, whose prologue the latency includes.
             */
            struct vmm_opts e = *o;
            struct vmm_result ft;
            e.test = T_ENTRY;
            e.csv = NULL;
            e.entry_isr = ENTRY_ISR_STUB;
            status |= vmm_run_one(&e, LAPIC_LIB, NULL, &fl);
            vmm_print_result(&e, LAPIC_LIB, &fl);
            e.entry_isr = ENTRY_ISR_TIMER;
            status |= vmm_run_one(&e, LAPIC_LIB, NULL, &ft);
            vmm_print_result(&e, LAPIC_LIB, &ft);
            vmm_print_breakdown(&r[0]);
            printf("RESULT test=floor lib_median/entry_median=%.3f "
                   "lib_median/entry_timer_isr_median=%.3f "
                   "lib_p99/kernel_p99=%.3f early=%" PRIu64 "\n",
                   fl.median ? (double)r[0].median / (double)fl.median : 0.0,
                   ft.median ? (double)r[0].median / (double)ft.median : 0.0,
                   r[1].p99 ? (double)r[0].p99 / (double)r[1].p99 : 0.0,
                   r[0].early);
        }
        free(csv[0]);
        free(csv[1]);
    }
    if (o->test == T_SELFTEST && (r[0].fail || !r[0].pass))
        status |= 1;
    return status ? 1 : 0;
}
