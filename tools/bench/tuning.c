/* SPDX-License-Identifier: MIT */
/*
 * Advance tuning study (lapict-bench --tuning).
 *
 * A guest re-arms its TSC deadline on a 1 ms grid. The host timer fires
 * `latency` ns after the instant it was armed for, the latency being drawn
 * per expiry from a scenario. Four algorithms see the same latencies:
 *
 *   lapict  the library itself (public API, advance_mode ADAPTIVE, start
 *           1000 ns, advance_max_ns 200000, goal latency) on the
 *           simulated host: pre-injection, wait in before_guest_entry,
 *           tuning;
 *   lapict-balanced  the same with the balanced goal and a spin budget of
 *           BAL_BUDGET_NS per interrupt;
 *   kvm     KVM's published rule re-implemented from its description:
 *           start 1000 ns, on each expiry measure delta = guest TSC -
 *           deadline before the wait, ignore |delta| < 100 or > 10000 TSC
 *           cycles, else advance -= or += (delta in ns) / 8; above 5000 ns
 *           (or wrapped below 0) reset to 1000; early arrivals are waited
 *           out, as KVM does;
 *   off     the library with advance_mode OFF.
 *
 * Lateness is what the guest sees: guest TSC at delivery minus the
 * deadline, in TSC cycles. Spin is what the host pays: ns busy-waited
 * before entry (the simulated host moves its clock by the wait). Everything is
 * integer and deterministic.
 *
 * The library runs on adapters/sim, the project's simulated host, with
 * the bench firing the armed host timer itself `latency` ns after its
 * instant: the sim's own latency is fixed when a timer is armed, and here
 * it changes per expiry. The sim's ops wrapper counts the ns each spin
 * waits.
 */
#include "bench.h"

#include <lapict/lapict.h>

#include "lapict_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

#define TSC_KHZ 2600000u      /* 2.6 GHz guest TSC: cycles != ns */
#define PERIOD_NS 1000000u    /* the guest's tick */
#define WITHIN_CYCLES 100     /* "within 100 cycles" */
#define SETTLE 100u           /* expiries skipped before steady state */
#define START_NS 1000u        /* starting advance of lapict and KVM */
#define LAPICT_MAX_NS 200000u /* advance_max_ns of the lapict runs */
#define N_FULL 1000u
#define N_SMOKE 240u
#define VEC 0xECu
/* The balanced runs' budget: 1 us of spin per interrupt (0.1 % of a core
 * per vCPU at a 1 kHz tick). */
#define BAL_BUDGET_NS 1000u

/* KVM's constants (arch/x86/kvm/lapic.c). */
#define KVM_ADJUST_MIN 100
#define KVM_ADJUST_MAX 10000
#define KVM_ADJUST_STEP 8u
#define KVM_NS_INIT 1000u
#define KVM_NS_MAX 5000u

enum algo { ALGO_LAPICT, ALGO_BALANCED, ALGO_KVM, ALGO_OFF, NALGO };
static const char *const algo_name[NALGO] = {"lapict", "lapict-balanced", "kvm",
                                             "off"};

/* ---- scenarios ---------------------------------------------------------- */

/* Seed of the random scenarios; set from --seed before the runs. */
static uint32_t scen_seed;

static uint32_t mix(uint32_t x)
{
    x ^= scen_seed * 0x9E3779B9u;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

struct scenario {
    const char *name;
    const char *desc;
    /* Latency of expiry @n of @N in ns; *spike marks injected spikes. */
    uint32_t (*lat)(uint32_t n, uint32_t N, int *spike);
    /* Index where the second phase starts (step), or 0. */
    int step;
};

static uint32_t l_c1(uint32_t n, uint32_t N, int *s)
{
    (void)n, (void)N, (void)s;
    return 1000;
}

static uint32_t l_c20(uint32_t n, uint32_t N, int *s)
{
    (void)n, (void)N, (void)s;
    return 20000;
}

static uint32_t l_c80(uint32_t n, uint32_t N, int *s)
{
    (void)n, (void)N, (void)s;
    return 80000;
}

static uint32_t l_noise(uint32_t n, uint32_t N, int *s)
{
    (void)N, (void)s;
    return 500u + mix(n * 2654435761u + 1u) % 3001u;
}

static uint32_t l_spikes(uint32_t n, uint32_t N, int *s)
{
    (void)N;
    if (mix(n ^ 0x5bd1e995u) % 256u == 0) {
        *s = 1;
        return 2000u + 100000u;
    }
    return 2000;
}

static uint32_t l_step(uint32_t n, uint32_t N, int *s)
{
    (void)s;
    return n < N / 2 ? 1500u : 4000u;
}

static uint32_t l_noise20(uint32_t n, uint32_t N, int *s)
{
    (void)N, (void)s;
    return 10000u + mix(n * 2246822519u + 7u) % 20001u;
}

static uint32_t l_step80(uint32_t n, uint32_t N, int *s)
{
    (void)s;
    return n < N / 2 ? 20000u : 80000u;
}

static const struct scenario scenarios[] = {
    {"const-1us", "constant 1 us", l_c1, 0},
    {"const-20us", "constant 20 us", l_c20, 0},
    {"const-80us", "constant 80 us", l_c80, 0},
    {"noise", "uniform 0.5-3.5 us", l_noise, 0},
    {"spikes", "2 us, 1/256 spikes of +100 us", l_spikes, 0},
    {"step", "1.5 us, then 4 us half-way", l_step, 1},
    {"noise-20us", "uniform 10-30 us", l_noise20, 0},
    {"step-20-80us", "20 us, then 80 us half-way", l_step80, 1},
};
#define NSCEN (sizeof(scenarios) / sizeof(scenarios[0]))

/* ---- the host of the lapict runs ---------------------------------------- */

/* The simulated host, and the ns its spins waited (the wrapper's trace). */
struct thost {
    struct lapict_sim sim;
    struct lapict_sim_wrap wrap;
    uint64_t spun;
};

static uint64_t tsc_of(uint64_t ns)
{
    return (uint64_t)((u128)ns * TSC_KHZ / 1000000u);
}

static uint64_t ns_of_tsc(uint64_t tsc) /* first ns with tsc_of() >= tsc */
{
    return (uint64_t)(((u128)tsc * 1000000u + TSC_KHZ - 1u) / TSC_KHZ);
}

static void count_spin(void *arg, enum lapict_sim_op op, uint64_t host_ns)
{
    struct thost *h = arg;

    if (op == LAPICT_SIM_OP_SPIN && host_ns > h->sim.now_ns)
        h->spun += host_ns - h->sim.now_ns;
}

/* A host at @now_ns with a software timer only, as a plain VMM has. */
static void thost_init(struct thost *h, uint64_t now_ns)
{
    struct lapict_sim_config hc;

    memset(h, 0, sizeof(*h));
    lapict_sim_config_default(&hc);
    hc.tsc_khz = TSC_KHZ;
    lapict_sim_init(&h->sim, &hc, NULL, NULL);
    h->sim.now_ns = now_ns;
    lapict_sim_wrap_init(&h->wrap, &lapict_sim_ops, &h->sim,
                         LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_ARM) |
                             LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_CANCEL) |
                             LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_REPORT));
    h->wrap.trace = count_spin;
    h->wrap.trace_arg = h;
}

/* One run's per-expiry record. */
struct rec {
    int64_t late;  /* guest TSC at delivery - deadline, cycles */
    uint32_t adv;  /* advance in force when the expiry was armed, ns */
    uint32_t lat;  /* host latency of this expiry, ns */
    uint32_t spin; /* ns busy-waited before entry */
    int spike;
};

/* @algo: ALGO_LAPICT, ALGO_BALANCED or ALGO_OFF. */
static int run_lib(const struct scenario *sc, uint32_t N, enum algo algo,
                   struct rec *r)
{
    struct lapict_config cfg;
    struct lapict_timer t;
    struct lapict_stats st;
    struct thost h;
    uint64_t D, p_tsc = tsc_of(PERIOD_NS);
    uint32_t n;

    thost_init(&h, 1000000); /* any base */
    lapict_config_default(&cfg);
    cfg.tsc_khz = TSC_KHZ;
    cfg.min_period_ns = 0;
    if (algo != ALGO_OFF) {
        cfg.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        cfg.advance_ns = START_NS;
        cfg.advance_max_ns = LAPICT_MAX_NS;
    }
    if (lapict_init(&t, &cfg, &h.wrap.ops, &h.wrap) != LAPICT_OK)
        return -1;
    /* The run-time setter, as a host changing its policy would use it. */
    if (algo == ALGO_BALANCED &&
        lapict_advance_set(&t, LAPICT_ADVANCE_GOAL_BALANCED, BAL_BUDGET_NS))
        return -1;
    lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    D = tsc_of(h.sim.now_ns) + p_tsc;
    lapict_tsc_deadline_write(&t, D);
    for (n = 0; n < N; n++) {
        int spike = 0, guard;
        uint32_t lat = sc->lat(n, N, &spike);
        uint64_t spun0 = h.spun;

        lapict_stats_get(&t, &st, sizeof(st));
        r[n].adv = st.advance_ns;
        for (guard = 0; !h.sim.nqueued; guard++) {
            if (!h.sim.sw_armed || guard > 4) {
                fprintf(stderr, "tuning: %s: no expiry %u\n", sc->name, n);
                return -1;
            }
            /* sw_fire_ns: the instant armed for, or now if that passed. */
            h.sim.sw_armed = false;
            h.sim.now_ns = h.sim.sw_fire_ns + lat;
            lapict_expire(&t);
        }
        lapict_before_guest_entry(&t);
        h.sim.nqueued = 0; /* the guest took the interrupt */
        r[n].late = (int64_t)(tsc_of(h.sim.now_ns) - D);
        r[n].lat = lat;
        r[n].spike = spike;
        r[n].spin = (uint32_t)(h.spun - spun0);
        D += p_tsc;
        lapict_tsc_deadline_write(&t, D);
    }
    /* The library's own account of the wait agrees with the host's. */
    lapict_stats_get(&t, &st, sizeof(st));
    if (st.spin_ns_total != h.spun) {
        fprintf(stderr, "tuning: %s: spin_ns_total %llu, host spun %llu\n",
                sc->name, (unsigned long long)st.spin_ns_total,
                (unsigned long long)h.spun);
        return -1;
    }
    return 0;
}

/* KVM's adjust_lapic_timer_advance(), in u32 like the original. */
static uint32_t kvm_adjust(uint32_t adv, int64_t delta)
{
    uint64_t ns;
    int64_t a = delta < 0 ? -delta : delta;

    if (a > KVM_ADJUST_MAX || a < KVM_ADJUST_MIN)
        return adv;
    ns = (uint64_t)a * 1000000u / TSC_KHZ;
    if (delta < 0)
        adv -= (uint32_t)(ns / KVM_ADJUST_STEP);
    else
        adv += (uint32_t)(ns / KVM_ADJUST_STEP);
    if (adv > KVM_NS_MAX)
        adv = KVM_NS_INIT;
    return adv;
}

static void run_kvm(const struct scenario *sc, uint32_t N, struct rec *r)
{
    uint64_t now = 1000000, p_tsc = tsc_of(PERIOD_NS);
    uint64_t D = tsc_of(now) + p_tsc;
    uint32_t adv = KVM_NS_INIT, n;

    for (n = 0; n < N; n++) {
        int spike = 0;
        uint32_t lat = sc->lat(n, N, &spike);
        uint64_t x = ns_of_tsc(D), target = x - adv, fire;
        int64_t delta;

        if (target < now)
            target = now;
        fire = target + lat;
        delta = (int64_t)(tsc_of(fire) - D);
        r[n].adv = adv;
        r[n].spin = 0;
        if (delta < 0) {
            r[n].spin = (uint32_t)(x - fire);
            fire = x; /* __wait_lapic_expire */
        }
        adv = kvm_adjust(adv, delta);
        now = fire;
        r[n].late = (int64_t)(tsc_of(now) - D);
        r[n].lat = lat;
        r[n].spike = spike;
        D += p_tsc;
    }
}

/* ---- statistics --------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct summary {
    long converge; /* expiries of the (last) phase; -1: never */
    int64_t median, p99;
    uint32_t early; /* deliveries before the deadline */
    /* Spin per interrupt in the steady state, ns: mean, median, p99, sum. */
    uint64_t spin_mean, spin_med, spin_p99, spin_total;
    uint32_t adv_final;
};

/*
 * converge: 1 + the index (from the phase start) of the last expiry of the
 * phase the guest saw more than WITHIN_CYCLES late, injected spikes
 * excepted; "never" when such misses go on into the last tenth of the
 * phase. For a step the phase after the step is reported. Steady state:
 * every expiry from SETTLE after each phase start, spikes included; the
 * lateness and spin figures are over the steady state.
 */
static void summarise(const struct rec *r, uint32_t N, int step,
                      struct summary *s, int64_t *tmp)
{
    uint32_t p0 = step ? N / 2 : 0, n, k = 0;
    long last = -1;
    uint64_t spin = 0;

    memset(s, 0, sizeof(*s));
    for (n = p0; n < N; n++)
        if (!r[n].spike && r[n].late > WITHIN_CYCLES)
            last = (long)(n - p0);
    s->converge = last + 1;
    if (last >= 0 && (uint32_t)last >= (N - p0) - (N - p0) / 10)
        s->converge = -1;
    for (n = 0; n < N; n++) {
        if (r[n].late < 0)
            s->early++;
        if (n < SETTLE || (step && n >= N / 2 && n < N / 2 + SETTLE))
            continue;
        tmp[k] = r[n].spin;
        tmp[N + k++] = r[n].late < 0 ? 0 : r[n].late;
        spin += r[n].spin;
    }
    qsort(tmp, k, sizeof(*tmp), cmp_i64);
    s->spin_med = k ? (uint64_t)tmp[(k - 1) / 2] : 0;
    s->spin_p99 = k ? (uint64_t)tmp[(k * 99 + 99) / 100 - 1] : 0;
    qsort(tmp + N, k, sizeof(*tmp), cmp_i64);
    tmp += N;
    s->median = k ? tmp[(k - 1) / 2] : 0;
    s->p99 = k ? tmp[(k * 99 + 99) / 100 - 1] : 0;
    s->spin_mean = k ? spin / k : 0;
    s->spin_total = spin;
    s->adv_final = r[N - 1].adv;
}

static void fmt_conv(char *buf, size_t len, long c)
{
    if (c < 0)
        snprintf(buf, len, "never");
    else
        snprintf(buf, len, "%ld", c);
}

int bench_tuning(const struct bench_opts *o)
{
    uint32_t N = o->smoke ? N_SMOKE : N_FULL, n;

    struct rec *r[NALGO];
    int64_t *tmp = malloc(2 * N * sizeof(*tmp));
    struct summary all[NSCEN][NALGO];
    FILE *dat = NULL;
    size_t si;
    int a, rc = 0;

    scen_seed = o->seed;
    for (a = 0; a < NALGO; a++)
        r[a] = calloc(N, sizeof(struct rec));
    if (!tmp || !r[0] || !r[1] || !r[2] || !r[3]) {
        fprintf(stderr, "tuning: out of memory\n");
        rc = 1;
        goto out;
    }
    if (o->dat) {
        dat = fopen(o->dat, "w");
        if (!dat) {
            perror(o->dat);
            rc = 1;
            goto out;
        }
        fprintf(dat, "# lapict-bench --tuning: one block per scenario, then "
                     "one summary block\n"
                     "# n adv_lapict_ns adv_kvm_ns adv_off_ns latency_ns "
                     "late_lapict late_kvm late_off (cycles) "
                     "adv_balanced_ns late_balanced spin_lapict_ns "
                     "spin_balanced_ns spin_kvm_ns\n");
    }
    printf("== tuning: guest TSC %u kHz, deadline every %u ns, %u expiries "
           "per run\n",
           TSC_KHZ, PERIOD_NS, N);
    printf("   lateness in TSC cycles as the guest sees it; converge = "
           "expiries until it stays <= %d\n",
           WITHIN_CYCLES);
    printf("   spin = ns busy-waited before entry per interrupt (mean, median, "
           "p99); balanced: budget %u ns\n",
           BAL_BUDGET_NS);
    printf("%-13s %-29s %-15s %8s %8s %8s %5s %6s %6s %6s %7s\n", "scenario",
           "latency", "algo", "converge", "median", "p99", "early", "spin",
           "s_med", "s_p99", "adv_end");
    for (si = 0; si < NSCEN; si++) {
        const struct scenario *sc = &scenarios[si];
        struct summary *s = all[si];
        if (run_lib(sc, N, ALGO_LAPICT, r[ALGO_LAPICT]) ||
            run_lib(sc, N, ALGO_BALANCED, r[ALGO_BALANCED]) ||
            run_lib(sc, N, ALGO_OFF, r[ALGO_OFF])) {
            rc = 1;
            goto out;
        }
        run_kvm(sc, N, r[ALGO_KVM]);
        for (a = 0; a < NALGO; a++) {
            char cv[24];
            summarise(r[a], N, sc->step, &s[a], tmp);
            fmt_conv(cv, sizeof(cv), s[a].converge);
            printf("%-13s %-29s %-15s %8s %8lld %8lld %5u %6llu %6llu %6llu "
                   "%7u\n",
                   a ? "" : sc->name, a ? "" : sc->desc, algo_name[a], cv,
                   (long long)s[a].median, (long long)s[a].p99, s[a].early,
                   (unsigned long long)s[a].spin_mean,
                   (unsigned long long)s[a].spin_med,
                   (unsigned long long)s[a].spin_p99, s[a].adv_final);
        }
        for (a = 0; a < NALGO; a++) {
            char cv[24];
            fmt_conv(cv, sizeof(cv), s[a].converge);
            printf("RESULT test=tuning scenario=%s algo=%s converge=%s "
                   "median_late=%lld p99_late=%lld early=%u spin_mean=%llu "
                   "spin_med=%llu spin_p99=%llu spin_total=%llu\n",
                   sc->name, algo_name[a], cv, (long long)s[a].median,
                   (long long)s[a].p99, s[a].early,
                   (unsigned long long)s[a].spin_mean,
                   (unsigned long long)s[a].spin_med,
                   (unsigned long long)s[a].spin_p99,
                   (unsigned long long)s[a].spin_total);
        }
        for (a = ALGO_LAPICT; a <= ALGO_BALANCED; a++)
            if (s[a].early) {
                fprintf(stderr,
                        "tuning: %s: %s delivered %u interrupts early\n",
                        sc->name, algo_name[a], s[a].early);
                rc = 1;
            }
        if (dat) {
            fprintf(dat, "# scenario %s (%s)\n", sc->name, sc->desc);
            for (n = 0; n < N; n++)
                fprintf(dat, "%u %u %u %u %u %lld %lld %lld %u %lld %u %u %u\n",
                        n, r[ALGO_LAPICT][n].adv, r[ALGO_KVM][n].adv,
                        r[ALGO_OFF][n].adv, r[ALGO_LAPICT][n].lat,
                        (long long)r[ALGO_LAPICT][n].late,
                        (long long)r[ALGO_KVM][n].late,
                        (long long)r[ALGO_OFF][n].late, r[ALGO_BALANCED][n].adv,
                        (long long)r[ALGO_BALANCED][n].late,
                        r[ALGO_LAPICT][n].spin, r[ALGO_BALANCED][n].spin,
                        r[ALGO_KVM][n].spin);
            fprintf(dat, "\n\n");
        }
    }
    if (dat) {
        /* The trade-off: one line per scenario, per algorithm the steady
         * state's median lateness (cycles) and mean spin (ns). */
        fprintf(dat, "# summary: i scenario");
        for (a = 0; a < NALGO; a++)
            fprintf(dat, " median_late_%s spin_mean_%s", algo_name[a],
                    algo_name[a]);
        fprintf(dat, "\n");
        for (si = 0; si < NSCEN; si++) {
            fprintf(dat, "%zu %s", si, scenarios[si].name);
            for (a = 0; a < NALGO; a++)
                fprintf(dat, " %lld %llu", (long long)all[si][a].median,
                        (unsigned long long)all[si][a].spin_mean);
            fprintf(dat, "\n");
        }
    }
out:
    if (dat && fclose(dat)) {
        perror(o->dat);
        rc = 1;
    }
    for (a = 0; a < NALGO; a++)
        free(r[a]);
    free(tmp);
    return rc;
}
