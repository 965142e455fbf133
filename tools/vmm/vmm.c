/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm: a minimal KVM VMM (one vCPU, long mode prepared by the VM
 * layer, vm.c, no firmware) that runs the project's own guest and
 * measures the APIC timer, either emulated in userspace by lapict
 * (adapters/kvm, driven through its hooks by vm.c's loop) or by KVM's
 * in-kernel LAPIC (KVM_CREATE_IRQCHIP), with the very same guest binary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "../common/lapict_tool_num.h"
#include "mailbox.h"
#include "lapict_kvm.h"
#include "platform.h"
#include "vm.h"

#ifndef LAPICT_VMM_GUEST
#define LAPICT_VMM_GUEST "guest.bin"
#endif
/* --guest=baremetal: tests/guests/baremetal's kernel (CMake sets it). */
#ifndef LAPICT_VMM_BAREMETAL
#define LAPICT_VMM_BAREMETAL "lapict-baremetal.bin"
#endif

enum lapic_kind { LAPIC_LIB, LAPIC_KERNEL };

struct opts {
    int lapic, test, wait, entry_isr;
    uint64_t samples, delta, period_ns;
    int advance_mode;
    uint32_t advance_ns, advance_max_ns;
    const char *csv, *guest;
    bool compare, quiet, no_thread, kick_thread;
    /* --x2apic=on for the built-in guest (immed, tscdeadline). */
    bool x2apic;
    unsigned timeout_s;
    /* --guest=baremetal: its lines as they are, its status; --timers. */
    bool plain;
    uint64_t timers;
    /* --test=migrate. */
    uint64_t migrations, downtime_us, seed;
    bool exec, seed_set;
    const char *save, *restore;
    int argc;
    char **argv;
};

struct result {
    uint64_t n, early;
    int64_t min, median, p99, max;
    double ppm;
    int64_t drift;
    uint64_t missed;
    uint64_t pass, fail;
    int status;
    uint64_t n_oneway;
    int64_t *oneway;
    /* --test=entry: a raised interrupt awaits its sample; samples so far. */
    bool entry_armed;
    uint64_t n_entry;
    /* --test=tscdeadline with lib: medians of the path's segments
     * (deadline -> host timer fired -> vCPU thread running -> KVM_RUN
     * entered -> guest ISR), the samples they cover; seg_n 0: none. */
    int64_t seg_med[4];
    uint64_t seg_n, seg_nofire;
    /* --test=immed: medians of WRMSR -> ISR, the EOI, the rest. */
    int64_t imm_med[3];
    /* vm.c's userspace cycles between KVM_RUNs and the KVM_RUNs. */
    uint64_t user_cycles, user_runs;
    uint64_t imm_n;
};

#define ONEWAY_MAX 100000u

static const char *test_names[] = {"tscdeadline", "oneshot", "periodic",
                                   "selftest",    "exit",    "migrate",
                                   "entry",       "immed"};

static void die(const char *what)
{
    fprintf(stderr, "lapict-vmm: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* The built-in guest's image at GUEST_LOAD, its long-mode entry. */
static void load_guest(struct lapict_vmm_vm *v, const char *path)
{
    size_t len = 0;
    uint8_t *img = lapict_vmm_read_file(path, &len, SAMPLES_ADDR - GUEST_LOAD);
    int rc;

    if (!img || !len) {
        fprintf(stderr, "lapict-vmm: cannot load guest image %s: %s\n", path,
                img ? "empty" : strerror(errno));
        exit(2);
    }
    memcpy(v->mem + GUEST_LOAD, img, len);
    free(img);
    if ((rc = lapict_vmm_vm_long_mode(v, GUEST_LOAD, GUEST_STACK_TOP)) < 0) {
        errno = -rc;
        die("long-mode entry state");
    }
}

static const char *guest_str(struct lapict_vmm_vm *v, uint32_t addr)
{
    if (addr >= GUEST_RAM || !memchr(v->mem + addr, 0, GUEST_RAM - addr))
        return "(bad string)";
    return (const char *)(v->mem + addr);
}

/* An I/O exit: returns 1 to continue, 0 when the guest is done. */
static int handle_io(struct lapict_vmm_vm *v, const struct opts *o,
                     struct result *res)
{
    struct kvm_run *r = v->run;
    uint32_t val = 0;

    if (r->io.direction == KVM_EXIT_IO_IN) {
        memset((uint8_t *)r + r->io.data_offset, 0xFF,
               (size_t)r->io.size * r->io.count);
        return 1;
    }
    memcpy(&val, (uint8_t *)r + r->io.data_offset,
           r->io.size < 4 ? r->io.size : 4);
    switch (r->io.port) {
    case PORT_PUTS:
        if (!o->quiet)
            printf("%s%s\n", o->plain ? "" : "guest: ", guest_str(v, val));
        return 1;
    case PORT_DONE:
        res->status = (int)val;
        return 0;
    case PORT_ENTRY:
        /*
         * The previous round's entry: from the host TSC before the
         * KVM_RUN that carried ENTRY_VEC to the guest TSC at its
         * handler's first instruction. Both are one clock here (guest
         * TSC = host TSC: no offset, ratio 1, checked in run_one());
         * elsewhere the guest's stamp would first be converted back
         * through the vCPU's TSC offset and scaling ratio.
         */
        if (res->entry_armed && res->n_entry < SAMPLES_MAX) {
            const struct mailbox *mb =
                (const struct mailbox *)(v->mem + MB_ADDR);
            uint64_t *out = (uint64_t *)(v->mem + SAMPLES_ADDR);
            out[res->n_entry++] = mb->entry_isr_tsc - v->inject_tsc;
        }
        res->entry_armed = false;
        if (val == ENTRY_RAISE) {
            lapict_apic_set_irq(&v->k->apic, ENTRY_VEC);
            res->entry_armed = true;
        }
        return 1;
    case PORT_PING:
        /* The guest sends the low half of its TSC before the OUT. */
        if (res->n_oneway < ONEWAY_MAX)
            res->oneway[res->n_oneway++] =
                (int64_t)(int32_t)((uint32_t)__builtin_ia32_rdtsc() - val);
        return 1;
    default:
        return 1;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void write_csv(const char *path, const int64_t *v, uint64_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die(path);
    fprintf(f, "sample,cycles\n");
    for (uint64_t i = 0; i < n; i++)
        fprintf(f, "%" PRIu64 ",%" PRId64 "\n", i, v[i]);
    fclose(f);
}

static void summarise(struct lapict_vmm_vm *v, const struct opts *o,
                      const struct mailbox *mb, const char *csv,
                      struct result *res)
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
        die("malloc");
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
    qsort(lat, n, sizeof(*lat), cmp_i64);
    res->min = lat[0];
    res->median = lat[n / 2];
    res->p99 = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
    res->max = lat[n - 1];
    free(lat);
}

static int64_t median_of(int64_t *a, uint64_t n)
{
    qsort(a, n, sizeof(*a), cmp_i64);
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
static void breakdown(struct lapict_vmm_vm *v, struct result *res)
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
            die("malloc");
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
static void immed_parts(struct lapict_vmm_vm *v, struct result *res)
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
        die("malloc");
    for (int j = 0; j < 3; j++) {
        for (uint64_t i = 0; i < n; i++)
            a[i] = p[3 * i + (uint64_t)j];
        res->imm_med[j] = median_of(a, n);
    }
    res->imm_n = n;
    free(a);
}

static void print_breakdown(const struct result *r)
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

static void print_result(const struct opts *o, int lapic,
                         const struct result *r)
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
           test_names[o->test], lapic == LAPIC_LIB ? "lib" : "kernel",
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

static void lib_config(const struct opts *o, struct lapict_kvm_config *kc)
{
    lapict_kvm_config_default(kc);
    kc->kick = o->no_thread     ? LAPICT_KVM_KICK_CALLER
               : o->kick_thread ? LAPICT_KVM_KICK_THREAD
                                : LAPICT_KVM_KICK_TIMER;
    /* This process has no other use for SIGUSR1. */
    kc->kick_signal = SIGUSR1;
    /* The default 50 us slack would dominate every timer latency. */
    kc->timer_slack_ns = 1;
    kc->timer.advance_mode = (uint32_t)o->advance_mode;
    kc->timer.advance_ns = o->advance_ns;
    if (o->advance_mode == LAPICT_ADVANCE_ADAPTIVE)
        kc->timer.advance_max_ns = o->advance_max_ns;
}

struct run_ctx {
    struct lapict_vmm_vm *v;
    const struct opts *o;
    struct result *res;
};

/* lapict_vmm_vm_run()'s exits: the guest's ports; anything else ends it. */
static int guest_exit(void *arg, struct kvm_run *r)
{
    struct run_ctx *c = arg;

    if (r->exit_reason == KVM_EXIT_IO)
        return handle_io(c->v, c->o, c->res) ? -1 : 0;
    fprintf(stderr, "lapict-vmm: unexpected exit %u", r->exit_reason);
    if (r->exit_reason == KVM_EXIT_MMIO)
        fprintf(stderr, " (MMIO at 0x%llx)",
                (unsigned long long)r->mmio.phys_addr);
    if (r->exit_reason == KVM_EXIT_INTERNAL_ERROR)
        fprintf(stderr, " (suberror %u)", r->internal.suberror);
    fprintf(stderr, "\n");
    c->res->status = 4;
    return 0;
}

static int run_one(const struct opts *o, int lapic, const char *csv,
                   struct result *res)
{
    struct lapict_vmm_vm v;
    struct mailbox *mb;
    struct run_ctx ctx = {.v = &v, .o = o, .res = res};
    char err[256];
    int tsc_khz;

    memset(res, 0, sizeof(*res));
    res->oneway = calloc(ONEWAY_MAX, sizeof(int64_t));
    if (!res->oneway)
        die("calloc");
    if (lapict_vmm_vm_create(&v, GUEST_RAM, lapic == LAPIC_KERNEL, o->x2apic,
                             err, sizeof(err)) < 0) {
        fprintf(stderr, "lapict-vmm: %s\n", err);
        exit(2);
    }
    load_guest(&v, o->guest);
    tsc_khz = ioctl(v.vcpu, KVM_GET_TSC_KHZ, 0);
    if (tsc_khz <= 0)
        die("KVM_GET_TSC_KHZ");
    mb = (struct mailbox *)(v.mem + MB_ADDR);
    memset(mb, 0, sizeof(*mb));
    mb->magic = MB_MAGIC;
    mb->test = (uint32_t)o->test;
    mb->wait = (uint32_t)o->wait;
    mb->entry_isr = (uint32_t)o->entry_isr;
    mb->x2apic = o->x2apic;
    mb->samples = o->samples;
    mb->delta = o->delta;
    mb->period_ns = o->period_ns;
    mb->tsc_khz = (uint64_t)tsc_khz;
    mb->bus_hz = 1000000000ull; /* both LAPICs: 1 GHz timer clock */
    mb->timers = o->timers;

    if (lapic == LAPIC_LIB) {
        struct lapict_kvm_config kc;
        lib_config(o, &kc);
        if (o->test == T_TSCDEADLINE) {
            v.seg_max = o->samples + 16;
            if (!(v.seg = calloc(v.seg_max, sizeof(*v.seg))))
                die("calloc");
        }
        if (lapict_vmm_vm_lapic(&v, &kc, err, sizeof(err)) < 0) {
            fprintf(stderr, "lapict-vmm: %s\n", err);
            exit(2);
        }
        /* --test=entry subtracts a host TSC from a guest one: only
         * meaningful while they are the same clock. */
        if (o->test == T_ENTRY && v.k->tsc_offset != 0) {
            fprintf(stderr,
                    "lapict-vmm: --test=entry: guest TSC offset "
                    "%" PRId64 " is not 0\n",
                    v.k->tsc_offset);
            exit(2);
        }
    }
    lapict_vmm_timeout(o->timeout_s, "the guest did not finish");
    if (lapict_vmm_vm_run(&v, guest_exit, &ctx) < 0)
        exit(2);
    lapict_vmm_timeout(0, NULL);
    if (o->test == T_ENTRY)
        mb->nsamples = res->n_entry;
    if (v.seg && v.k && v.k->tsc_offset == 0)
        breakdown(&v, res);
    if (o->test == T_IMMED)
        immed_parts(&v, res);
    res->user_cycles = v.user_cycles;
    res->user_runs = v.user_runs;
    free(v.seg);
    v.seg = NULL;
    summarise(&v, o, mb, csv, res);
    if (res->n_oneway) {
        qsort(res->oneway, res->n_oneway, sizeof(int64_t), cmp_i64);
        if (!o->quiet)
            printf("exit guest->VMM one-way: median=%" PRId64 " cycles "
                   "(guest TSC before OUT to host TSC in the VMM)\n",
                   res->oneway[res->n_oneway / 2]);
    }
    free(res->oneway);
    res->oneway = NULL;
    if (v.k && !o->quiet) {
        struct lapict_kvm *k = v.k;
        struct lapict_stats ts;
        lapict_stats_get(&k->timer, &ts, sizeof(ts));
        printf("lib: runs=%" PRIu64 " mmio=%" PRIu64 " msr=%" PRIu64
               " hlt_sleeps=%" PRIu64 " kicks=%" PRIu64 " interrupts=%" PRIu64
               " windows=%" PRIu64 " advance_ns=%u spins=%" PRIu64
               " refused=%" PRIu64 "\n",
               k->st.runs, k->apic.st.mmio, k->apic.st.rdmsr + k->apic.st.wrmsr,
               k->st.halt_sleeps, k->st.kicks_seen, k->st.interrupts,
               k->st.window_exits, ts.advance_ns, ts.spins, ts.refused);
        /* What the advance cost the host: the wait before entry. */
        printf("lib: spin_ns_total=%" PRIu64 " spin_ns_per_interrupt=%" PRIu64
               "\n",
               ts.spin_ns_total,
               ts.injections ? ts.spin_ns_total / ts.injections : 0);
    }
    lapict_vmm_vm_destroy(&v);
    return res->status;
}

/* --- --test=migrate ------------------------------------------------------ */

/*
 * The VMM stops the vCPU at seeded random points of the kinds below, saves
 * the VM (vm.c: RAM, registers, events, the LAPIC model and the timer),
 * destroys it (VM and vCPU fds closed), makes a new one (with --exec in a
 * new process, through --save's file) and continues it. The guest checks
 * every interrupt (guest.c, "migrate").
 */
enum stop_kind {
    K_PENDING, /* a timer interrupt owed, the guest in a cli section */
    K_ADVANCE, /* injected ahead (advance), before the entry that waits */
    K_HALTED,  /* the guest halted, its wait not begun */
    K_MODE,    /* right after the guest switched the timer's mode */
    K_RANDOM,  /* anywhere between exits */
    K_TMCCT,   /* between two TMCCT samples of a running one-shot */
    K_N
};
static const char *const kind_names[K_N] = {"pending",    "advance", "halted",
                                            "modeswitch", "random",  "tmcct"};

#define MIG_STOP 1000 /* lapict_vmm_vm_run_points(): stop for a migration */
#define MIG_MAGIC 0x4D49475354415445ull

/* What the VMM carries across migrations (and execs: plain bytes). */
struct mig_state {
    uint64_t magic, target, done, seed, rng;
    uint64_t kinds[K_N], fallbacks, irr_first, timer_first, execs;
    uint64_t max_downtime_ns, sum_downtime_ns;
    uint64_t carried_missed; /* coalesced + dropped of instances gone */
    uint64_t silent_drops;   /* pending ticks a register write dropped */
    /* lapict's counters summed over the instances gone: expiries,
     * injections, refused, coalesced, dropped, masked; adapter injections. */
    uint64_t sum_st[7];
    uint64_t want, earliest_ns, give_up_ns, start_ns, stop_sent, serviced;
};

struct mig_ctx {
    struct lapict_vmm_vm *v;
    const struct opts *o;
    struct result *res;
    struct mig_state *m;
    bool mode_exit, tmcct_exit;
    int kind;
    /* The timer's pending count and injections as of the last stop point
     * (see note_silent_drops()). */
    uint64_t last_pending, last_injections;
};

static uint64_t mig_rnd(struct mig_state *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

static struct mailbox *mig_mb(struct lapict_vmm_vm *v)
{
    return (struct mailbox *)(v->mem + MB_ADDR);
}

static uint64_t timer_missed(struct lapict_vmm_vm *v)
{
    struct lapict_stats ts;
    lapict_stats_get(&v->k->timer, &ts, sizeof(ts));
    return ts.coalesced + ts.dropped;
}

/*
 * A TMICT write (or a mask, a mode switch) drops a tick held pending
 * (docs/spec/timer.md sections 3-5) and no counter shows it: the periodic count
 * check needs it, and the VMM sees it between two stop points as a
 * pending count that fell by more than the injections rose.
 */
static void note_silent_drops(struct mig_ctx *c)
{
    struct lapict_stats ts;
    uint64_t fell, inj;

    lapict_stats_get(&c->v->k->timer, &ts, sizeof(ts));
    fell = c->last_pending > ts.pending ? c->last_pending - ts.pending : 0;
    inj = ts.injections - c->last_injections;
    if (fell > inj)
        c->m->silent_drops += fell - inj;
    c->last_pending = ts.pending;
    c->last_injections = ts.injections;
}

/* After a restore: a new instance, its own counters. */
static void note_reset(struct mig_ctx *c)
{
    struct lapict_stats ts;

    lapict_stats_get(&c->v->k->timer, &ts, sizeof(ts));
    c->last_pending = ts.pending;
    c->last_injections = ts.injections;
}

/*
 * The next stop: its kind in turn (advance only with an advance), after a
 * random 0-3 ms; a kind that does not come within 30 ms is taken anywhere.
 * A TMCCT stop waits for the guest's next one-shot phase, which its
 * periodic and deadline phases put at most about 600 ms away: it is given
 * 5 s, so that every run checks TMCCT across migrations however slow the
 * host, and a guest that never asks is a fallback the result shows.
 */
static void mig_next(struct mig_state *m, const struct opts *o)
{
    do
        m->want = (m->want + 1) % K_N;
    while (m->want == K_ADVANCE && o->advance_mode == LAPICT_ADVANCE_OFF);
    m->earliest_ns = lapict_vmm_mono_ns() + mig_rnd(m) % 3000000u;
    m->give_up_ns =
        m->earliest_ns + (m->want == K_TMCCT ? 5000000000ull : 30000000u);
}

/* A timer interrupt owed and not taken: in IRR, or held by lapict (LVTT
 * delivery status, docs/spec/timer.md section 2). */
static bool timer_owed(struct lapict_vmm_vm *v)
{
    uint32_t lvtt = 0;
    lapict_xapic_read(&v->k->timer, 0x320, &lvtt);
    return lapict_apic_irr_test(&v->k->apic, 0x40) || (lvtt & 0x1000u);
}

/* Serve a due host timer as pre_run would; injected ahead (blob flag 5)? */
static bool injected_ahead(struct lapict_vmm_vm *v)
{
    uint8_t b[LAPICT_STATE_SIZE];

    lapict_kvm_poll(v->k);
    if (lapict_state_save(&v->k->timer, b, sizeof(b)) != LAPICT_OK)
        return false;
    return b[20] & 0x20u;
}

/*
 * lapict_state_save() settles due expiries on its copy: when more than one
 * periodic tick is due or held at the save (coalesce), they fold into one
 * pending there, and neither instance's counters ever show the coalesced
 * ones, so the guest's count check could not tell them from lost ones
 * (a library gap: the blob has no count of them). A periodic timer is
 * therefore serviced before the save, as the vCPU loop would before the
 * next entry (lapict_irq_window_open(): with IF clear its offer is refused
 * and the ticks stay pending, counted; with IF set the tick goes to IRR).
 * One-shot and deadline timers have one expiry to fold: they are saved as
 * they are, a due expiry travelling in the blob as pending.
 */
static bool timer_periodic(struct lapict_vmm_vm *v)
{
    uint32_t lvtt = 0;

    lapict_xapic_read(&v->k->timer, 0x320, &lvtt);
    return ((lvtt >> 17) & 3u) == 1u;
}

static int mig_point(void *arg)
{
    struct mig_ctx *c = arg;
    struct mig_state *m = c->m;
    struct lapict_vmm_vm *v = c->v;
    bool mode = c->mode_exit, tmcct = c->tmcct_exit;
    uint64_t now;
    int kind = -1;

    c->mode_exit = false;
    c->tmcct_exit = false;
    note_silent_drops(c);
    if (m->done >= m->target) {
        if (!m->stop_sent)
            mig_mb(v)->mig.stop = 1;
        m->stop_sent = 1;
        return -1;
    }
    now = lapict_vmm_mono_ns();
    if (now < m->earliest_ns)
        return -1;
    switch (m->want) {
    case K_PENDING:
        if (!v->halted && !v->run->if_flag && timer_owed(v))
            kind = K_PENDING;
        break;
    case K_ADVANCE:
        if (!v->halted && v->run->if_flag && injected_ahead(v))
            kind = K_ADVANCE;
        break;
    case K_HALTED:
        if (v->halted)
            kind = K_HALTED;
        break;
    case K_MODE:
        if (mode)
            kind = K_MODE;
        break;
    case K_TMCCT:
        mig_mb(v)->mig.tmcct_req = 1;
        if (tmcct)
            kind = K_TMCCT;
        break;
    default:
        kind = K_RANDOM;
        break;
    }
    if (kind < 0 && now > m->give_up_ns) {
        kind = K_RANDOM;
        m->fallbacks++;
    }
    if (kind < 0)
        return -1;
    mig_mb(v)->mig.tmcct_req = 0;
    c->kind = kind;
    return MIG_STOP;
}

static int mig_exit(void *arg, struct kvm_run *r)
{
    struct mig_ctx *c = arg;

    if (r->exit_reason == KVM_EXIT_IO && r->io.direction == KVM_EXIT_IO_OUT &&
        r->io.port == PORT_MODE) {
        c->mode_exit = true;
        return -1;
    }
    if (r->exit_reason == KVM_EXIT_IO && r->io.direction == KVM_EXIT_IO_OUT &&
        r->io.port == PORT_TMCCT) {
        c->tmcct_exit = true;
        return -1;
    }
    if (r->exit_reason == KVM_EXIT_IO && r->io.direction == KVM_EXIT_IO_OUT &&
        r->io.port == PORT_SYNC) {
        note_silent_drops(c);
        mig_mb(c->v)->mig.missed_ticks =
            c->m->carried_missed + timer_missed(c->v) + c->m->silent_drops;
        return -1;
    }
    {
        struct run_ctx rc = {.v = c->v, .o = c->o, .res = c->res};
        return guest_exit(&rc, r);
    }
}

static void add_stats(uint64_t *sum, struct lapict_vmm_vm *v)
{
    struct lapict_stats ts;

    lapict_stats_get(&v->k->timer, &ts, sizeof(ts));
    sum[0] += ts.expiries;
    sum[1] += ts.injections;
    sum[2] += ts.refused;
    sum[3] += ts.coalesced;
    sum[4] += ts.dropped;
    sum[5] += ts.masked;
    sum[6] += v->k->st.interrupts;
}

static void mig_fail(const char *what, const char *err)
{
    fprintf(stderr, "lapict-vmm: migrate: %s: %s\n", what, err);
    exit(2);
}

/* A new VM with the snapshot; the guest learns how long the timer stood
 * still (bounds) and the migration count. */
static void mig_resume(struct lapict_vmm_vm *v, const struct opts *o,
                       struct mig_state *m, struct lapict_vmm_snap *s)
{
    struct lapict_kvm_config kc;
    uint64_t restore_ns, after, down;
    struct mailbox *mb;
    char err[256];

    lib_config(o, &kc);
    if (lapict_vmm_vm_create(v, GUEST_RAM, false, false, err, sizeof(err)) < 0)
        mig_fail("create", err);
    if (lapict_vmm_vm_restore(v, s, &kc, &restore_ns, err, sizeof(err)) < 0)
        mig_fail("restore", err);
    after = lapict_vmm_mono_ns();
    lapict_vmm_snap_free(s);
    mb = mig_mb(v);
    mb->mig.frozen_lo_ns += restore_ns - s->stop_ns;
    mb->mig.frozen_hi_ns += after - s->stop_ns;
    m->done++;
    mb->mig.seq0 = mb->mig.seq1 = m->done;
    down = after - s->stop_ns;
    m->sum_downtime_ns += down;
    if (down > m->max_downtime_ns)
        m->max_downtime_ns = down;
    mig_next(m, o);
}

static void mig_exec(const struct opts *o, const char *file)
{
    char **argv = calloc((size_t)o->argc + 2, sizeof(char *));
    char *arg;
    int n = 0;

    if (!argv || asprintf(&arg, "--restore=%s", file) < 0)
        die("exec");
    for (int i = 0; i < o->argc; i++)
        if (strncmp(o->argv[i], "--restore", 9) != 0)
            argv[n++] = o->argv[i];
    argv[n++] = arg;
    argv[n] = NULL;
    execv("/proc/self/exe", argv);
    die("execv /proc/self/exe");
}

static void migrate_once(struct mig_ctx *c)
{
    struct lapict_vmm_vm *v = c->v;
    struct mig_state *m = c->m;
    struct lapict_vmm_snap s;
    bool irr_first = m->done % 2 == 0, service = timer_periodic(v);
    char err[256];

    if (service)
        m->serviced++;
    /* Alternate: the model (IRR) before the timer, then after. */
    if (lapict_vmm_vm_save(v, &s, irr_first, service, err, sizeof(err)) < 0)
        mig_fail("save", err);
    m->kinds[c->kind]++;
    if (irr_first)
        m->irr_first++;
    else
        m->timer_first++;
    m->carried_missed += timer_missed(v);
    add_stats(m->sum_st, v);
    lapict_vmm_vm_destroy(v);
    if (c->o->downtime_us) {
        struct timespec ts = {.tv_sec = (time_t)(c->o->downtime_us / 1000000u),
                              .tv_nsec =
                                  (long)(c->o->downtime_us % 1000000u) * 1000};
        nanosleep(&ts, NULL);
    }
    if (c->o->exec) {
        m->execs++;
        if (lapict_vmm_snap_write(c->o->save, &s, m, sizeof(*m)) < 0)
            die(c->o->save);
        lapict_vmm_snap_free(&s);
        fflush(stdout);
        mig_exec(c->o, c->o->save);
    }
    mig_resume(v, c->o, m, &s);
    note_reset(c);
}

static int run_migrate(const struct opts *o)
{
    struct lapict_vmm_vm v;
    struct mig_state m;
    struct result res;
    struct mig_ctx c = {.v = &v, .o = o, .res = &res, .m = &m};
    struct mailbox *mb;
    char err[256];
    int st;

    memset(&res, 0, sizeof(res));
    if (o->restore) {
        struct lapict_vmm_snap s;
        if (lapict_vmm_snap_read(o->restore, &s, &m, sizeof(m), err,
                                 sizeof(err)) < 0)
            mig_fail("--restore", err);
        if (m.magic != MIG_MAGIC || m.want >= K_N || m.done > m.target)
            mig_fail("--restore", "not a migrate test's state");
        mig_resume(&v, o, &m, &s);
    } else {
        struct lapict_kvm_config kc;
        memset(&m, 0, sizeof(m));
        m.magic = MIG_MAGIC;
        m.target = o->migrations;
        m.seed = o->seed;
        m.rng = o->seed * 0x9E3779B97F4A7C15ull | 1;
        m.start_ns = lapict_vmm_mono_ns();
        m.want = K_N - 1;
        if (!o->quiet)
            printf("migrate: seed=%" PRIu64 " migrations=%" PRIu64
                   " advance=%s%s\n",
                   o->seed, o->migrations,
                   o->advance_mode == LAPICT_ADVANCE_OFF        ? "off"
                   : o->advance_mode == LAPICT_ADVANCE_ADAPTIVE ? "adaptive"
                                                                : "fixed",
                   o->exec ? " exec" : "");
        mig_next(&m, o);
        if (lapict_vmm_vm_create(&v, GUEST_RAM, false, false, err,
                                 sizeof(err)) < 0)
            mig_fail("create", err);
        load_guest(&v, o->guest);
        mb = mig_mb(&v);
        memset(mb, 0, sizeof(*mb));
        mb->magic = MB_MAGIC;
        mb->test = T_MIGRATE;
        mb->tsc_khz = (uint64_t)ioctl(v.vcpu, KVM_GET_TSC_KHZ, 0);
        mb->bus_hz = 1000000000ull;
        mb->mig.seed = mig_rnd(&m);
        lib_config(o, &kc);
        if (lapict_vmm_vm_lapic(&v, &kc, err, sizeof(err)) < 0)
            mig_fail("LAPIC", err);
    }
    /* One timeout for the whole run, whatever the execs. */
    {
        uint64_t el = (lapict_vmm_mono_ns() - m.start_ns) / 1000000000u;
        lapict_vmm_timeout(el < o->timeout_s ? (unsigned)(o->timeout_s - el)
                                             : 1,
                           "the migrate test did not finish");
    }
    note_reset(&c);
    while ((st = lapict_vmm_vm_run_points(&v, mig_exit, mig_point, &c)) ==
           MIG_STOP)
        migrate_once(&c);
    lapict_vmm_timeout(0, NULL);
    if (st < 0)
        return 2;
    mb = mig_mb(&v);
    printf("RESULT test=migrate migrations=%" PRIu64 " interrupts=%" PRIu64
           " lost=%" PRIu64 " doubled=%" PRIu64 " early=%" PRIu64
           " max_downtime_us=%" PRIu64,
           m.done, mb->mig.interrupts, mb->mig.lost, mb->mig.doubled,
           mb->mig.early, m.max_downtime_ns / 1000u);
    for (int k = 0; k < K_N; k++)
        printf(" stops_%s=%" PRIu64, kind_names[k], m.kinds[k]);
    printf(" fallbacks=%" PRIu64 " irr_first=%" PRIu64 " timer_first=%" PRIu64
           " tmcct_checks=%" PRIu64 " tmcct_across=%" PRIu64
           " tmcct_bad=%" PRIu64 " periodic_ticks=%" PRIu64 " oneshots=%" PRIu64
           " deadlines=%" PRIu64 " missed_ticks=%" PRIu64 " phases=%" PRIu64
           " serviced=%" PRIu64 " silent_drops=%" PRIu64
           " mean_downtime_us=%" PRIu64 " execs=%" PRIu64 " seed=%" PRIu64 "\n",
           m.fallbacks, m.irr_first, m.timer_first, mb->mig.tmcct_checks,
           mb->mig.tmcct_across, mb->mig.tmcct_bad, mb->mig.periodic_ticks,
           mb->mig.oneshots, mb->mig.deadlines,
           m.carried_missed + timer_missed(&v), mb->mig.phases, m.serviced,
           m.silent_drops, m.done ? m.sum_downtime_ns / m.done / 1000u : 0,
           m.execs, m.seed);
    if (!o->quiet) {
        add_stats(m.sum_st, &v);
        printf("migrate: lapict over all instances: expiries=%" PRIu64
               " injections=%" PRIu64 " refused=%" PRIu64 " coalesced=%" PRIu64
               " dropped=%" PRIu64 " masked=%" PRIu64
               "; adapter injections=%" PRIu64 "\n",
               m.sum_st[0], m.sum_st[1], m.sum_st[2], m.sum_st[3], m.sum_st[4],
               m.sum_st[5], m.sum_st[6]);
    }
    if (mb->mig.bad_detail[0])
        printf("migrate: first failure: check %" PRIu64 " got %" PRIu64
               " want %" PRIu64 " phase %" PRIu64 "\n",
               mb->mig.bad_detail[0], mb->mig.bad_detail[1],
               mb->mig.bad_detail[2], mb->mig.bad_detail[3]);
    if (mb->mig.early_detail[0])
        printf("migrate: first early interrupt: check %" PRIu64
               " came at %" PRIu64 ", not before %" PRIu64
               " (TSC; periodic: since arming), phase %" PRIu64 "\n",
               mb->mig.early_detail[0], mb->mig.early_detail[1],
               mb->mig.early_detail[2], mb->mig.early_detail[3]);
    fflush(stdout);
    st = res.status || m.done < m.target || mb->mig.lost || mb->mig.doubled ||
                 mb->mig.early || mb->mig.tmcct_bad || !mb->mig.interrupts
             ? 1
             : 0;
    lapict_vmm_vm_destroy(&v);
    return st;
}

static int parse_enum(const char *s, const char *const *names, int n,
                      const char *what)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    fprintf(stderr, "lapict-vmm: bad %s '%s'\n", what, s);
    exit(2);
}

/*
 * The ranges of the numeric options (lapict-vmm(1)). 0 is no option's
 * "default": a default is what an absent option gets.
 */
/* A one-shot count of --delta cycles must fit TMICT (1 GHz bus, a TSC of
 * 1 GHz or more); below 1000 cycles the interrupt is later than the
 * delta anyway. */
#define DELTA_MIN 1000u
#define DELTA_MAX 0xFFFFFFFFu
/* --period-ns: a periodic count of that many ns (1 GHz bus) fits TMICT. */
#define PERIOD_NS_MAX 4000000000u
#define TIMEOUT_S_MAX 86400u
#define MIGRATIONS_MAX 1000000u
/* --downtime-us: 10 s. */
#define DOWNTIME_US_MAX 10000000u

/*
 * @s as an unsigned number for option @opt in @min..@max: decimal, or
 * hexadecimal after 0x; no sign, no space, nothing after it. Anything else
 * is a usage error whose message names the option and its range.
 */
static uint64_t parse_num(const char *s, const char *opt, uint64_t min,
                          uint64_t max)
{
    enum lapict_tool_num rc;
    uint64_t v = 0;

    rc = lapict_tool_num(s, &v);
    if (rc == LAPICT_TOOL_NUM_OK && v >= min && v <= max)
        return v;
    fprintf(stderr, "lapict-vmm: %s: '%s' %s (%" PRIu64 " to %" PRIu64 ")\n",
            opt, s,
            rc == LAPICT_TOOL_NUM_MALFORMED ? "is not a number"
                                            : "is out of range",
            min, max);
    exit(2);
}

static void usage(void)
{
    printf("usage: lapict-vmm [--lapic=lib|kernel] "
           "[--test=tscdeadline|oneshot|periodic|selftest|exit|migrate|entry|"
           "immed]\n"
           "  [--wait=hlt|spin] [--samples=N] [--delta=CYCLES] "
           "[--period-ns=NS]\n"
           "  [--advance=off|adaptive|NS] [--advance-max=NS] [--csv=FILE] "
           "[--compare]\n"
           "  [--guest=FILE|baremetal] [--timers=K] [--entry-isr=stub|timer]\n"
           "  [--no-timer-thread] [--kick-thread] [--timeout=S] [--quiet] "
           "[--dry-run]\n"
           "       lapict-vmm --test=migrate [--migrations=N] "
           "[--downtime-us=US] [--seed=S]\n"
           "  [--advance=...] [--exec [--save=FILE]] [--restore=FILE] "
           "[--timeout=S] [--quiet]\n"
           "       lapict-vmm [--lapic=lib|kernel] --kernel=FILE.flat "
           "[--append=ARGS] [--initrd=FILE]\n"
           "  [--x2apic=on|off] [--advance=...] [--timeout=S] [--quiet]"
           "   (multiboot kernel, serial on stdout)\n");
}

int main(int argc, char **argv)
{
    static const char *const lapics[] = {"lib", "kernel"};
    static const char *const waits[] = {"hlt", "spin"};
    static const char *const onoff[] = {"on", "off"};
    static const char *const isrs[] = {"stub", "timer"};
    static const struct option lo[] = {
        {"lapic", required_argument, 0, 'l'},
        {"test", required_argument, 0, 't'},
        {"wait", required_argument, 0, 'w'},
        {"samples", required_argument, 0, 'n'},
        {"delta", required_argument, 0, 'd'},
        {"period-ns", required_argument, 0, 'p'},
        {"advance", required_argument, 0, 'a'},
        {"csv", required_argument, 0, 'c'},
        {"compare", no_argument, 0, 'C'},
        {"guest", required_argument, 0, 'g'},
        {"timers", required_argument, 0, 'k'},
        {"kernel", required_argument, 0, 'K'},
        {"append", required_argument, 0, 'A'},
        {"initrd", required_argument, 0, 'I'},
        {"x2apic", required_argument, 0, 'X'},
        {"timeout", required_argument, 0, 'T'},
        {"quiet", no_argument, 0, 'q'},
        {"advance-max", required_argument, 0, 'M'},
        {"no-timer-thread", no_argument, 0, 'N'},
        {"kick-thread", no_argument, 0, 'Z'},
        {"entry-isr", required_argument, 0, 'Y'},
        {"migrations", required_argument, 0, 'm'},
        {"downtime-us", required_argument, 0, 'D'},
        {"exec", no_argument, 0, 'E'},
        {"save", required_argument, 0, 'S'},
        {"restore", required_argument, 0, 'R'},
        {"seed", required_argument, 0, 's'},
        {"dry-run", no_argument, 0, 'y'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    struct opts o = {.lapic = LAPIC_LIB,
                     .test = T_TSCDEADLINE,
                     .wait = W_HLT,
                     .samples = 0,
                     .delta = 200000,
                     .period_ns = 1000000,
                     .advance_mode = LAPICT_ADVANCE_OFF,
                     .advance_max_ns = 60000,
                     .guest = LAPICT_VMM_GUEST,
                     .timeout_s = 120};
    struct result r[2];
    struct lapict_vmm_boot_opts mb = {.x2apic = true};
    bool dry_run = false;
    int c, status = 0;

    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l':
            o.lapic = parse_enum(optarg, lapics, 2, "--lapic");
            break;
        case 't':
            o.test = parse_enum(optarg, test_names, 8, "--test");
            break;
        case 'w':
            o.wait = parse_enum(optarg, waits, 2, "--wait");
            break;
        case 'n':
            o.samples = parse_num(optarg, "--samples", 1, SAMPLES_MAX);
            break;
        case 'd':
            o.delta = parse_num(optarg, "--delta", DELTA_MIN, DELTA_MAX);
            break;
        case 'p':
            o.period_ns = parse_num(optarg, "--period-ns", 1, PERIOD_NS_MAX);
            break;
        case 'a':
            if (!strcmp(optarg, "off")) {
                o.advance_mode = LAPICT_ADVANCE_OFF;
            } else if (!strcmp(optarg, "adaptive")) {
                o.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
            } else {
                o.advance_mode = LAPICT_ADVANCE_FIXED;
                o.advance_ns = (uint32_t)parse_num(optarg, "--advance", 0,
                                                   LAPICT_ADVANCE_NS_LIMIT);
            }
            break;
        case 'c':
            o.csv = optarg;
            break;
        case 'C':
            o.compare = true;
            break;
        case 'g':
            o.plain = !strcmp(optarg, "baremetal");
            o.guest = o.plain ? LAPICT_VMM_BAREMETAL : optarg;
            break;
        case 'k':
            o.timers = parse_num(optarg, "--timers", 1, MB_TIMERS_MAX);
            break;
        case 'K':
            mb.kernel = optarg;
            break;
        case 'A':
            mb.append = optarg;
            break;
        case 'I':
            mb.initrd = optarg;
            break;
        case 'X':
            mb.x2apic = parse_enum(optarg, onoff, 2, "--x2apic") == 0;
            o.x2apic = mb.x2apic;
            break;
        case 'T':
            o.timeout_s =
                (unsigned)parse_num(optarg, "--timeout", 1, TIMEOUT_S_MAX);
            break;
        case 'q':
            o.quiet = true;
            break;
        case 'M':
            /* 0 is not offered: the KVM adapter reads it as its default. */
            o.advance_max_ns = (uint32_t)parse_num(optarg, "--advance-max", 1,
                                                   LAPICT_ADVANCE_NS_LIMIT);
            break;
        case 'N':
            o.no_thread = true;
            break;
        case 'Z':
            o.kick_thread = true;
            break;
        case 'Y':
            o.entry_isr = parse_enum(optarg, isrs, 2, "--entry-isr");
            break;
        case 'm':
            o.migrations = parse_num(optarg, "--migrations", 1, MIGRATIONS_MAX);
            break;
        case 'D':
            o.downtime_us =
                parse_num(optarg, "--downtime-us", 0, DOWNTIME_US_MAX);
            break;
        case 'E':
            o.exec = true;
            break;
        case 'S':
            o.save = optarg;
            break;
        case 'R':
            o.restore = optarg;
            break;
        case 's':
            o.seed = parse_num(optarg, "--seed", 0, UINT64_MAX);
            o.seed_set = true;
            break;
        case 'y':
            dry_run = true;
            break;
        case 'h':
            usage();
            return 0;
        default:
            usage();
            return 2;
        }
    }
    if (optind < argc) {
        usage();
        return 2;
    }
    if (o.test == T_MIGRATE || o.restore) {
        o.test = T_MIGRATE;
        if (o.lapic != LAPIC_LIB) {
            fprintf(stderr, "lapict-vmm: --test=migrate needs --lapic=lib\n");
            return 2;
        }
    } else if (!mb.kernel) {
        if (o.x2apic && o.test != T_IMMED && o.test != T_TSCDEADLINE) {
            fprintf(stderr, "lapict-vmm: --x2apic=on: with --kernel, or with "
                            "--test=immed or tscdeadline\n");
            return 2;
        }
        if (o.test == T_ENTRY &&
            (o.lapic != LAPIC_LIB || o.compare || o.plain)) {
            fprintf(stderr, "lapict-vmm: --test=entry measures the userspace "
                            "LAPIC's injection: --lapic=lib only, no "
                            "--compare or --guest=baremetal\n");
            return 2;
        }
    }
    /* Every check of the command line is above, nothing that needs KVM. */
    if (dry_run)
        return 0;
    if (o.test == T_MIGRATE) {
        static char save_default[64];
        o.argc = argc;
        o.argv = argv;
        if (!o.migrations)
            o.migrations = 100;
        if (!o.seed_set)
            o.seed = lapict_vmm_mono_ns() % 1000000007u;
        if (o.exec && !o.save) {
            snprintf(save_default, sizeof(save_default),
                     "/tmp/lapict-vmm-migrate.%d", (int)getpid());
            o.save = save_default;
        }
        return run_migrate(&o);
    }
    if (!o.samples)
        o.samples = o.test == T_SELFTEST ? 1 : 2000;

    if (mb.kernel) {
        /* A multiboot kernel (kvm-unit-tests .flat): platform.c. */
        mb.lapic_kernel = o.lapic == LAPIC_KERNEL;
        mb.ram_bytes = 128ull << 20;
        mb.timeout_s = o.timeout_s;
        mb.quiet = o.quiet;
        mb.advance_mode = (uint32_t)o.advance_mode;
        mb.advance_ns = o.advance_ns;
        mb.advance_max_ns =
            o.advance_mode == LAPICT_ADVANCE_ADAPTIVE ? o.advance_max_ns : 0;
        return lapict_vmm_boot(&mb);
    }

    if (o.plain) {
        /* The guest checks, and prints its own RESULT line. */
        status = run_one(&o, o.lapic, NULL, &r[0]);
        return status < 0 || status > 255 ? 255 : status;
    }
    if (!o.compare) {
        status = run_one(&o, o.lapic, o.csv, &r[0]);
        print_result(&o, o.lapic, &r[0]);
    } else {
        char *csv[2] = {NULL, NULL};
        for (int i = 0; i < 2 && o.csv; i++) {
            const char *dot = strrchr(o.csv, '.');
            int base = dot ? (int)(dot - o.csv) : (int)strlen(o.csv);
            if (asprintf(&csv[i], "%.*s-%s.csv", base, o.csv, lapics[i]) < 0)
                die("asprintf");
        }
        struct result fl;
        status = run_one(&o, LAPIC_LIB, csv[0], &r[0]);
        status |= run_one(&o, LAPIC_KERNEL, csv[1], &r[1]);
        print_result(&o, LAPIC_LIB, &r[0]);
        print_result(&o, LAPIC_KERNEL, &r[1]);
        printf("RATIO test=%s median_lib/median_kernel=%.3f\n",
               test_names[o.test],
               r[1].median ? (double)r[0].median / (double)r[1].median : 0.0);
        if (o.test == T_TSCDEADLINE) {
            /*
             * The floor under the lib path, measured in the same run and
             * after the same exit (--wait): the entry with the stamp as
             * the handler's first instruction, and the entry with the
             * timer's own handler, whose prologue the latency includes.
             */
            struct opts e = o;
            struct result ft;
            e.test = T_ENTRY;
            e.csv = NULL;
            e.entry_isr = ENTRY_ISR_STUB;
            status |= run_one(&e, LAPIC_LIB, NULL, &fl);
            print_result(&e, LAPIC_LIB, &fl);
            e.entry_isr = ENTRY_ISR_TIMER;
            status |= run_one(&e, LAPIC_LIB, NULL, &ft);
            print_result(&e, LAPIC_LIB, &ft);
            print_breakdown(&r[0]);
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
    if (o.test == T_SELFTEST && (r[0].fail || !r[0].pass))
        status |= 1;
    return status ? 1 : 0;
}
