/* SPDX-License-Identifier: MIT */
/*
 * The figures of a run: the guest's samples sorted into min, median, p99
 * and max (periodic arrivals first placed on their tick grid), the
 * segments of the lib path and of --test=immed, and the RESULT and
 * BREAKDOWN lines that lapict-vmm(1) defines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "vmm.h"

int vmm_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void write_csv(const char *path, const int64_t *v, uint64_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        vmm_die(path);
    fprintf(f, "sample,cycles\n");
    for (uint64_t i = 0; i < n; i++)
        fprintf(f, "%" PRIu64 ",%" PRId64 "\n", i, v[i]);
    fclose(f);
}

void vmm_summarise(struct lapict_vmm_vm *v, const struct vmm_opts *o,
                   const struct mailbox *mb, const char *csv,
                   struct vmm_result *res)
{
    const uint64_t *raw = (const uint64_t *)(v->mem + SAMPLES_ADDR);
    uint64_t n = mb->nsamples < o->samples ? mb->nsamples : o->samples;
    int64_t *lat;

    res->n = n;
    res->early = mb->early;
    res->pass = mb->pass;
    res->fail = mb->fail;
    if (!n)
        return;
    lat = malloc(n * sizeof(*lat));
    if (!lat)
        vmm_die("malloc");
    if (o->test == T_PERIODIC) {
        /*
         * Arrival i belongs to grid slot s (expected at t_start + s periods,
         * exact in TSC): the next slot, or a later one if ticks were missed
         * (coalesced) during a host stall. The period error and drift are
         * measured over the slots, so missed ticks do not count as drift.
         */
        long double p = (long double)o->period_ns * mb->tsc_khz / 1e6L;
        uint64_t s = 0, s_first = 0;
        res->early = 0;
        for (uint64_t i = 0; i < n; i++) {
            long double since = (long double)(raw[i] - mb->t_start);
            uint64_t fl = (uint64_t)(since / p);
            /* A burst after a stall (IRR plus a held tick) may bring two
             * arrivals in one slot: both belong to ticks already past. */
            s = fl > s ? fl : s;
            if (i == 0)
                s_first = s;
            long double e = (long double)s * p;
            lat[i] = (int64_t)(since - e);
            if (since < e)
                res->early++;
        }
        res->missed = s - s_first + 1 > n ? (s - s_first + 1) - n : 0;
        if (n > 1) {
            long double span = (long double)(raw[n - 1] - raw[0]);
            long double want = (long double)(s - s_first) * p;
            res->ppm = (double)((span - want) / want * 1e6L);
            res->drift = (int64_t)(span - want);
        }
    } else {
        for (uint64_t i = 0; i < n; i++)
            lat[i] = (int64_t)raw[i];
    }
    if (csv)
        write_csv(csv, lat, n);
    qsort(lat, n, sizeof(*lat), vmm_cmp_i64);
    res->min = lat[0];
    res->median = lat[n / 2];
    res->p99 = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
    res->max = lat[n - 1];
    free(lat);
}

static int64_t median_of(int64_t *a, uint64_t n)
{
    qsort(a, n, sizeof(*a), vmm_cmp_i64);
    return a[n / 2];
}

/*
 * The lib path of each TSC-deadline interrupt, in host TSC (guest TSC =
 * host TSC here, so the guest's deadline and ISR arrival are on the host's
 * clock as they are): sample i is the i-th injection, as the guest takes
 * nothing but its timer. Without a host-timer fire (the vCPU found the
 * deadline passed on its own, before a fire) the sample is left out of
 * the first two segments.
 */
void vmm_breakdown(struct lapict_vmm_vm *v, struct vmm_result *res)
{
    const struct mailbox *mb = (const struct mailbox *)(v->mem + MB_ADDR);
    const int64_t *lat = (const int64_t *)(v->mem + SAMPLES_ADDR);
    const uint64_t *dl = (const uint64_t *)(v->mem + DEADLINES_ADDR);
    uint64_t n = mb->nsamples < v->nseg ? mb->nsamples : v->nseg, nf = 0;
    int64_t *a[4];

    if (n > mb->samples)
        n = mb->samples;
    if (!n)
        return;
    for (int j = 0; j < 4; j++)
        if (!(a[j] = malloc(n * sizeof(int64_t))))
            vmm_die("malloc");
    for (uint64_t i = 0; i < n; i++) {
        const struct lapict_vmm_seg *g = &v->seg[i];
        uint64_t isr = dl[i] + (uint64_t)lat[i];
        if (g->fired_tsc) {
            a[0][nf] = (int64_t)(g->fired_tsc - dl[i]);
            a[1][nf++] = (int64_t)(g->woke_tsc - g->fired_tsc);
        }
        a[2][i] = (int64_t)(g->inject_tsc - g->woke_tsc);
        a[3][i] = (int64_t)(isr - g->inject_tsc);
    }
    res->seg_med[0] = nf ? median_of(a[0], nf) : 0;
    res->seg_med[1] = nf ? median_of(a[1], nf) : 0;
    res->seg_med[2] = median_of(a[2], n);
    res->seg_med[3] = median_of(a[3], n);
    res->seg_n = n;
    res->seg_nofire = n - nf;
    for (int j = 0; j < 4; j++)
        free(a[j]);
}

/* --test=immed: the guest's three segments per iteration (mailbox.h). */
void vmm_immed_parts(struct lapict_vmm_vm *v, struct vmm_result *res)
{
    const struct mailbox *mb = (const struct mailbox *)(v->mem + MB_ADDR);
    const int64_t *p = (const int64_t *)(v->mem + IMMED_PARTS_ADDR);
    uint64_t n = mb->nsamples < mb->samples ? mb->nsamples : mb->samples;
    int64_t *a;

    if (n > SAMPLES_MAX / 3)
        n = SAMPLES_MAX / 3;
    if (!n)
        return;
    if (!(a = malloc(n * sizeof(*a))))
        vmm_die("malloc");
    for (int j = 0; j < 3; j++) {
        for (uint64_t i = 0; i < n; i++)
            a[i] = p[3 * i + (uint64_t)j];
        res->imm_med[j] = median_of(a, n);
    }
    res->imm_n = n;
    free(a);
}

void vmm_print_breakdown(const struct vmm_result *r)
{
    if (!r->seg_n)
        return;
    printf("BREAKDOWN lapic=lib samples=%" PRIu64 " no_fire=%" PRIu64
           " deadline->fired=%" PRId64 " fired->running=%" PRId64
           " running->kvm_run=%" PRId64 " kvm_run->isr=%" PRId64
           " (medians of each segment, host TSC cycles; guest TSC = host"
           " TSC)\n",
           r->seg_n, r->seg_nofire, r->seg_med[0], r->seg_med[1], r->seg_med[2],
           r->seg_med[3]);
}

void vmm_print_result(const struct vmm_opts *o, int lapic,
                      const struct vmm_result *r)
{
    if (o->test == T_ENTRY) {
        /* No timer: the entry after a PIO exit (spin) or a HLT exit. */
        printf("RESULT test=entry lapic=lib exit=%s isr=%s samples=%" PRIu64
               " median=%" PRId64 " p99=%" PRId64 " min=%" PRId64
               " max=%" PRId64 " (cycles, KVM_RUN with an injected"
               " interrupt to the guest handler's TSC stamp;"
               " guest TSC = host TSC)\n",
               o->wait == W_SPIN ? "pio" : "hlt",
               o->entry_isr == ENTRY_ISR_TIMER ? "timer" : "stub", r->n,
               r->median, r->p99, r->min, r->max);
        fflush(stdout);
        return;
    }
    if (o->test == T_IMMED) {
        printf("RESULT test=immed lapic=%s samples=%" PRIu64 " median=%" PRId64
               " p99=%" PRId64 " min=%" PRId64 " max=%" PRId64
               " apic=%s (cycles per iteration: TSC"
               " deadline = now, CPUID, ISR, EOI)\n",
               lapic == LAPIC_LIB ? "lib" : "kernel", r->n, r->median, r->p99,
               r->min, r->max, o->x2apic ? "x2apic" : "xapic");
        if (r->imm_n)
            printf("BREAKDOWN test=immed lapic=%s samples=%" PRIu64
                   " wrmsr->isr=%" PRId64 " eoi=%" PRId64 " rest=%" PRId64
                   " vmm_per_iter=%" PRIu64 " exits_per_iter=%.2f"
                   " (medians of each segment, guest TSC cycles; the"
                   " VMM's userspace cycles between KVM_RUNs and its"
                   " KVM_RUNs per iteration, means)\n",
                   lapic == LAPIC_LIB ? "lib" : "kernel", r->imm_n,
                   r->imm_med[0], r->imm_med[1], r->imm_med[2],
                   r->n ? r->user_cycles / r->n : 0,
                   r->n ? (double)r->user_runs / (double)r->n : 0.0);
        fflush(stdout);
        return;
    }
    printf("RESULT test=%s lapic=%s wait=%s samples=%" PRIu64 " min=%" PRId64
           " median=%" PRId64 " p99=%" PRId64 " max=%" PRId64 " early=%" PRIu64,
           vmm_test_names[o->test], lapic == LAPIC_LIB ? "lib" : "kernel",
           o->wait == W_SPIN ? "spin" : "hlt", r->n, r->min, r->median, r->p99,
           r->max, r->early);
    if (o->test == T_PERIODIC)
        printf(" period_err_ppm=%.2f drift_cycles=%" PRId64 " missed=%" PRIu64,
               r->ppm, r->drift, r->missed);
    if (o->test == T_SELFTEST)
        printf(" pass=%" PRIu64 " fail=%" PRIu64, r->pass, r->fail);
    printf(" (min, median, p99, max: guest TSC cycles from the instant due"
           " to the guest's handler)\n");
    fflush(stdout);
}
