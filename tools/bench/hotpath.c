/* SPDX-License-Identifier: MIT */
/*
 * Hot-path cost (lapict-bench --hotpath, --callgrind=OP).
 *
 * Each operation runs on the simulated host (adapters/sim) without the
 * ops a lean host leaves out (hardware timer, report, tsc_to_host_ns), on
 * a clock the bench moves by constants, so the figures are the library's
 * own cost plus a few indirect calls into ops that load and store (the
 * guest TSC op also converts the host clock, a 128-bit multiply and
 * divide). Beside it runs a baseline: the same operation reduced to what
 * a peer does (same host ops, same state), with each time conversion done
 * the way KVM (mul_u64_u32_div, do_div) and QEMU (muldiv64) do it: a
 * 64x64->128 multiply and one 64-bit hardware divide (x86-64 mulq + divq).
 *
 * Platform: 25 MHz APIC bus (ticks = ns / 40, not a power of two, so the
 * library takes its reciprocal path; a 1 GHz bus would be a shift) and a
 * 2593906 kHz guest TSC. The host offers no tsc_to_host_ns, so a TSC
 * deadline is converted by the library.
 */
#define _POSIX_C_SOURCE 200809L
#include "hotpath.h"
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__extension__ typedef unsigned __int128 u128;

#define BUS_HZ 25000000ull
#define TSC_KHZ 2593906u
#define VEC 0xECu
#define NOINLINE __attribute__((noinline))

/* ---- the host ----------------------------------------------------------- */

/* lapict_sim_ops less the ops the measured host does not offer. */
static struct lapict_ops host_ops;

static void host_ops_init(void)
{
    host_ops = lapict_sim_ops;
    lapict_sim_ops_remove(&host_ops,
                          LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_ARM) |
                              LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_CANCEL) |
                              LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_REPORT) |
                              LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_TSC_TO_NS));
}

/* ---- the division baseline ---------------------------------------------- */

/* floor(a * b / c), one hardware divide; the quotient must fit 64 bits. */
static inline uint64_t hw_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
#if defined(__x86_64__)
    uint64_t lo, hi, q, r;
    __asm__("mulq %3" : "=a"(lo), "=d"(hi) : "a"(a), "rm"(b) : "cc");
    __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(c) : "cc");
    (void)r;
    return q;
#else
    return (uint64_t)((u128)a * b / c);
#endif
}

/* ceil(a * b / c), same conditions. */
static inline uint64_t hw_muldiv_ceil(uint64_t a, uint64_t b, uint64_t c)
{
#if defined(__x86_64__)
    uint64_t lo, hi, q, r;
    __asm__("mulq %3" : "=a"(lo), "=d"(hi) : "a"(a), "rm"(b) : "cc");
    __asm__("addq %2, %0\n\tadcq $0, %1"
            : "+r"(lo), "+r"(hi)
            : "r"(c - 1)
            : "cc");
    __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(c) : "cc");
    (void)r;
    return q;
#else
    return (uint64_t)(((u128)a * b + (c - 1)) / c);
#endif
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

static void base_init(struct base *b, void *ctx)
{
    uint64_t g = gcd(BUS_HZ, 1000000000ull);
    memset(b, 0, sizeof(*b));
    b->ops = &host_ops;
    b->ctx = ctx;
    b->bus_p = BUS_HZ / g;
    b->bus_q = 1000000000ull / g;
    g = gcd(TSC_KHZ, 1000000u);
    b->tsc_a = 1000000u / g;
    b->tsc_b = TSC_KHZ / g;
}

/* ns until tick @n of the count-down (rounded up): one divide. */
static uint64_t b_ns_for(const struct base *b, uint64_t n)
{
    return hw_muldiv_ceil(n << b->div, b->bus_q, b->bus_p);
}

static NOINLINE uint32_t base_tmcct_read(struct base *b)
{
    uint64_t el = b->ops->now_ns(b->ctx) - b->anchor, T;
    if (el >= b->next_rel)
        return 0;
    T = hw_muldiv(el, b->bus_p, b->bus_q) >> b->div;
    return T < b->e_tick ? (uint32_t)(b->e_tick - T) : 0;
}

static NOINLINE void base_tmict_write(struct base *b, uint32_t v)
{
    uint64_t now = b->ops->now_ns(b->ctx);
    b->anchor = now;
    b->tmict = v;
    b->e_tick = v;
    b->next_rel = b_ns_for(b, v);
    b->ops->sw_timer_arm(b->ctx, now + b->next_rel - b->adv);
    b->armed = 1;
}

static NOINLINE void base_tsc_deadline_write(struct base *b, uint64_t d)
{
    uint64_t now = b->ops->now_ns(b->ctx), tsc = b->ops->guest_tsc(b->ctx);
    b->deadline = d;
    b->instant =
        now + (d > tsc ? hw_muldiv_ceil(d - tsc, b->tsc_a, b->tsc_b) : 0);
    b->ops->sw_timer_arm(b->ctx, b->instant);
    b->armed = 1;
}

static NOINLINE void base_expire_oneshot(struct base *b)
{
    uint64_t now = b->ops->now_ns(b->ctx);
    if (now - b->anchor < b->next_rel)
        return;
    b->instant = b->anchor + b_ns_for(b, b->e_tick);
    b->ops->inject(b->ctx, VEC);
    b->ops->sw_timer_cancel(b->ctx);
    b->armed = 0;
}

static NOINLINE void base_expire_periodic(struct base *b)
{
    uint64_t now = b->ops->now_ns(b->ctx), el = now - b->anchor, T, last;
    if (el < b->next_rel)
        return;
    T = hw_muldiv(el, b->bus_p, b->bus_q) >> b->div;
    last = b->e_tick;
    if (T - last >= b->tmict) {
        uint64_t k = (T - last) / b->tmict;
        last += k * b->tmict;
    }
    b->e_tick = last + b->tmict;
    b->next_rel = b_ns_for(b, b->e_tick);
    b->instant = b->anchor + b_ns_for(b, last);
    b->ops->inject(b->ctx, VEC);
    b->ops->sw_timer_arm(b->ctx, b->anchor + b->next_rel);
}

/* Pre-injection at an advanced callback (setup of entry_spin). */
static void base_preinject(struct base *b)
{
    b->ops->inject(b->ctx, VEC);
    b->preinj = 1;
}

/* Guest entry after a pre-injection: tune like KVM, wait, then process. */
static NOINLINE void base_entry(struct base *b)
{
    uint64_t now = b->ops->now_ns(b->ctx), instant = b->anchor + b->next_rel;
    int64_t err = (int64_t)(now - instant);
    if (!b->preinj)
        return;
    if (err < -100 || err > 100)
        b->adv = (uint32_t)((int64_t)b->adv + err / 8);
    if (err < 0)
        b->ops->spin_until(b->ctx, instant);
    b->preinj = 0;
    base_expire_oneshot(b);
}

/* ---- the operations ------------------------------------------------------ */

static void ctx_init(struct bctx *c, uint32_t adv_mode, uint32_t adv_ns)
{
    struct lapict_config cfg;
    struct lapict_sim_config hc;

    memset(c, 0, sizeof(*c));
    host_ops_init();
    lapict_sim_config_default(&hc);
    hc.tsc_khz = TSC_KHZ;
    lapict_sim_init(&c->h, &hc, NULL, NULL);
    c->h.now_ns = 1000000000ull;
    lapict_config_default(&cfg);
    cfg.bus_hz = BUS_HZ;
    cfg.tsc_khz = TSC_KHZ;
    cfg.min_period_ns = 0;
    cfg.advance_mode = adv_mode;
    cfg.advance_ns = adv_ns;
    if (lapict_init(&c->t, &cfg, &host_ops, &c->h) != LAPICT_OK ||
        lapict_init(&c->t2, &cfg, &host_ops, &c->h) != LAPICT_OK) {
        fprintf(stderr, "lapict-bench: lapict_init failed\n");
        exit(1);
    }
    base_init(&c->b, &c->h);
}

static void countdown(struct bctx *c, uint32_t mode, uint32_t n)
{
    lapict_tdcr_write(&c->t, 0xB);
    lapict_lvtt_write(&c->t, mode | VEC);
    lapict_tmict_write(&c->t, n);
    c->b.div = 0;
    base_tmict_write(&c->b, n);
}

/* tmcct_read: a one-shot count-down far from expiry. */
static void init_tmcct(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_OFF, 0);
    countdown(c, LAPICT_LVTT_ONESHOT, 0xFFFFFFFFu);
}

static void op_tmcct(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.now_ns += 7;
    c->sink += lapict_tmcct_read(&c->t);
}

static void b_tmcct(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.now_ns += 7;
    c->sink += base_tmcct_read(&c->b);
}

/* tmict_write: re-arm a one-shot count-down with a fresh count. */
static void init_tmict(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_OFF, 0);
    countdown(c, LAPICT_LVTT_ONESHOT, 1000000u);
}

static void op_tmict(struct bctx *c, uint32_t i)
{
    c->h.now_ns += 7;
    lapict_tmict_write(&c->t, 1000000u + (i & 1023u));
}

static void b_tmict(struct bctx *c, uint32_t i)
{
    c->h.now_ns += 7;
    base_tmict_write(&c->b, 1000000u + (i & 1023u));
}

/* tsc_deadline_write: a new deadline 1 ms ahead. */
static void init_dl(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_OFF, 0);
    lapict_lvtt_write(&c->t, LAPICT_LVTT_TSC_DEADLINE | VEC);
}

static void op_dl(struct bctx *c, uint32_t i)
{
    c->h.now_ns += 7;
    lapict_tsc_deadline_write(&c->t, lapict_sim_guest_tsc(&c->h) + 2600000u +
                                         (i & 1023u));
}

static void b_dl(struct bctx *c, uint32_t i)
{
    c->h.now_ns += 7;
    base_tsc_deadline_write(&c->b, lapict_sim_guest_tsc(&c->h) + 2600000u +
                                       (i & 1023u));
}

/* expire_inject: a one-shot of 100 ticks (4 us) expires and is injected. */
static void init_expire(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_OFF, 0);
    countdown(c, LAPICT_LVTT_ONESHOT, 0);
}

static void setup_expire(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.nqueued = 0; /* the guest took the last interrupt */
    c->h.now_ns += 7;
    lapict_tmict_write(&c->t, 100);
}

static void op_expire(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.now_ns += 4000;
    lapict_expire(&c->t);
}

static void bsetup_expire(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.nqueued = 0; /* the guest took the last interrupt */
    c->h.now_ns += 7;
    base_tmict_write(&c->b, 100);
}

static void b_expire(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.now_ns += 4000;
    base_expire_oneshot(&c->b);
}

/* periodic_rearm: each callback at the exact grid point of 1.6 ms. */
#define PERIOD_TICKS 40000u
#define PERIOD_NS (PERIOD_TICKS * 40ull)

static void init_periodic(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_OFF, 0);
    countdown(c, LAPICT_LVTT_PERIODIC, PERIOD_TICKS);
    c->pnext = c->h.now_ns;
}

static void op_periodic(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.nqueued = 0; /* the guest took the last interrupt */
    c->pnext += PERIOD_NS;
    c->h.now_ns = c->pnext;
    lapict_expire(&c->t);
}

static void b_periodic(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.nqueued = 0; /* the guest took the last interrupt */
    c->pnext += PERIOD_NS;
    c->h.now_ns = c->pnext;
    base_expire_periodic(&c->b);
}

/* entry_idle: guest entry with nothing injected ahead (every entry). */
static void init_entry_idle(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_ADAPTIVE, 1000);
    countdown(c, LAPICT_LVTT_ONESHOT, 0xFFFFFFFFu);
}

static void op_entry(struct bctx *c, uint32_t i)
{
    (void)i;
    lapict_before_guest_entry(&c->t);
}

/*
 * entry_spin: a one-shot of 1000 ticks (40 us); the host timer fires
 * 300 or 900 ns late (alternating), so the adaptive advance settles above
 * both and every expiry is injected ahead: entry measures, tunes, waits and
 * processes the expiry.
 */
static void init_entry_spin(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_ADAPTIVE, 2000);
    countdown(c, LAPICT_LVTT_ONESHOT, 0);
    c->b.adv = 2000;
}

static void setup_entry_spin(struct bctx *c, uint32_t i)
{
    c->h.nqueued = 0; /* the guest took the last interrupt */
    c->h.now_ns += 7;
    lapict_tmict_write(&c->t, 1000);
    c->h.now_ns = c->h.sw_fire_ns + ((i & 1u) ? 900u : 300u);
    lapict_expire(&c->t);
}

static void bsetup_entry_spin(struct bctx *c, uint32_t i)
{
    c->h.nqueued = 0; /* the guest took the last interrupt */
    c->h.now_ns += 7;
    base_tmict_write(&c->b, 1000);
    c->h.now_ns = c->h.sw_fire_ns + ((i & 1u) ? 900u : 300u);
    base_preinject(&c->b);
}

static void b_entry(struct bctx *c, uint32_t i)
{
    (void)i;
    base_entry(&c->b);
}

/* save / restore of a running periodic timer. */
static void init_save(struct bctx *c)
{
    ctx_init(c, LAPICT_ADVANCE_OFF, 0);
    countdown(c, LAPICT_LVTT_PERIODIC, PERIOD_TICKS);
    c->h.now_ns += 12345;
    if (lapict_state_save(&c->t, c->blob, sizeof(c->blob)) != LAPICT_OK) {
        fprintf(stderr, "lapict-bench: save failed\n");
        exit(1);
    }
}

static void op_save(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.now_ns += 7;
    c->sink += (uint64_t)lapict_state_save(&c->t, c->blob, sizeof(c->blob));
}

static void op_restore(struct bctx *c, uint32_t i)
{
    (void)i;
    c->h.now_ns += 7;
    c->sink += (uint64_t)lapict_state_restore(&c->t2, c->blob, sizeof(c->blob));
}

const struct bench_op bench_ops[] = {
    {"tmcct_read", "lapict_tmcct_read", "base_tmcct_read", init_tmcct, NULL,
     op_tmcct, NULL, b_tmcct},
    {"tmict_write", "lapict_tmict_write", "base_tmict_write", init_tmict, NULL,
     op_tmict, NULL, b_tmict},
    {"tsc_deadline_write", "lapict_tsc_deadline_write",
     "base_tsc_deadline_write", init_dl, NULL, op_dl, NULL, b_dl},
    {"expire_inject", "lapict_expire", "base_expire_oneshot", init_expire,
     setup_expire, op_expire, bsetup_expire, b_expire},
    {"periodic_rearm", "lapict_expire", "base_expire_periodic", init_periodic,
     NULL, op_periodic, NULL, b_periodic},
    {"entry_idle", "lapict_before_guest_entry", NULL, init_entry_idle, NULL,
     op_entry, NULL, NULL},
    {"entry_spin", "lapict_before_guest_entry", "base_entry", init_entry_spin,
     setup_entry_spin, op_entry, bsetup_entry_spin, b_entry},
    {"save", "lapict_state_save", NULL, init_save, NULL, op_save, NULL, NULL},
    {"restore", "lapict_state_restore", NULL, init_save, NULL, op_restore, NULL,
     NULL},
};
const unsigned bench_nops = sizeof(bench_ops) / sizeof(bench_ops[0]);

/* ---- timing ---------------------------------------------------------------
 */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef void (*step_fn)(struct bctx *, uint32_t);

/* ns per iteration of one batch of @setup then @op (either may be NULL). */
static double batch(struct bctx *c, step_fn setup, step_fn op, uint32_t iters)
{
    uint64_t t0, t1;
    uint32_t i;

    t0 = now_ns();
    if (setup && op) {
        for (i = 0; i < iters; i++) {
            setup(c, i);
            op(c, i);
        }
    } else if (op) {
        for (i = 0; i < iters; i++)
            op(c, i);
    } else {
        for (i = 0; i < iters; i++)
            setup(c, i);
    }
    t1 = now_ns();
    return (double)(t1 - t0) / iters;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over @runs batches of ns per @op, net of @setup. */
static double measure(const struct bench_op *bo, step_fn setup, step_fn op,
                      unsigned runs, uint32_t iters)
{
    double *v = calloc(runs, sizeof(double)), *w = calloc(runs, sizeof(double));
    double m, ms = 0;
    struct bctx *c = malloc(sizeof(*c));
    unsigned r;

    if (!v || !w || !c) {
        fprintf(stderr, "lapict-bench: out of memory\n");
        exit(1);
    }
    for (r = 0; r < runs; r++) {
        bo->init(c);
        batch(c, setup, op, iters < 1000 ? iters : 1000); /* warm up */
        v[r] = batch(c, setup, op, iters);
        if (setup) {
            bo->init(c);
            w[r] = batch(c, setup, NULL, iters);
        }
    }
    qsort(v, runs, sizeof(double), cmp_double);
    m = v[runs / 2];
    if (setup) {
        qsort(w, runs, sizeof(double), cmp_double);
        ms = w[runs / 2];
        m = m > ms ? m - ms : 0;
    }
    free(v);
    free(w);
    free(c);
    return m;
}

int bench_hotpath(const struct bench_opts *o)
{
    unsigned runs = o->runs ? o->runs : (o->smoke ? 3 : 21);
    uint32_t iters = o->iters ? o->iters : (o->smoke ? 200 : 200000);
    unsigned k;

    printf("== hotpath: median of %u runs x %u ops; simulated host; 25 MHz "
           "bus, %u kHz TSC\n",
           runs, iters, TSC_KHZ);
    printf("   baseline: same operation, each conversion one 64-bit "
           "hardware divide\n");
    printf("%-20s %10s %12s %8s\n", "op", "ns", "baseline_ns", "ratio");
    for (k = 0; k < bench_nops; k++) {
        const struct bench_op *bo = &bench_ops[k];
        double ns = measure(bo, bo->setup, bo->op, runs, iters), bns = 0;
        char bs[32] = "-", rs[32] = "-";
        if (bo->base_op) {
            bns = measure(bo, bo->base_setup, bo->base_op, runs, iters);
            snprintf(bs, sizeof(bs), "%.1f", bns);
            if (ns > 0)
                snprintf(rs, sizeof(rs), "%.2f", bns / ns);
        }
        printf("%-20s %10.1f %12s %8s\n", bo->name, ns, bs, rs);
        /* instr is filled in from callgrind.sh (BENCHMARKS.md). */
        printf("RESULT test=hotpath op=%s ns=%.1f baseline_ns=%s instr=-\n",
               bo->name, ns, bs);
    }
    return 0;
}

/* ---- callgrind ------------------------------------------------------------
 */

const unsigned bench_callgrind_iters = 10000;

int bench_callgrind(const char *name)
{
    struct bctx *c;
    unsigned k;
    uint32_t i;

    if (!name || !strcmp(name, "list")) {
        printf("# op lapict_function baseline_function iterations\n");
        for (k = 0; k < bench_nops; k++)
            printf("%s %s %s %u\n", bench_ops[k].name, bench_ops[k].fn,
                   bench_ops[k].base_fn ? bench_ops[k].base_fn : "-",
                   bench_callgrind_iters);
        return 0;
    }
    for (k = 0; k < bench_nops; k++)
        if (!strcmp(bench_ops[k].name, name))
            break;
    if (k == bench_nops) {
        fprintf(stderr,
                "lapict-bench: --callgrind: unknown op '%s' "
                "(--callgrind=list names them)\n",
                name);
        return 2;
    }
    c = malloc(sizeof(*c));
    if (!c)
        return 1;
    /* The library, then the baseline, each the same fixed number of ops. */
    bench_ops[k].init(c);
    for (i = 0; i < bench_callgrind_iters; i++) {
        if (bench_ops[k].setup)
            bench_ops[k].setup(c, i);
        bench_ops[k].op(c, i);
    }
    if (bench_ops[k].base_op) {
        bench_ops[k].init(c);
        for (i = 0; i < bench_callgrind_iters; i++) {
            if (bench_ops[k].base_setup)
                bench_ops[k].base_setup(c, i);
            bench_ops[k].base_op(c, i);
        }
    }
    printf("callgrind: op %s x %u\n", name, bench_callgrind_iters);
    free(c);
    return 0;
}
