/* SPDX-License-Identifier: MIT */
/*
 * lapict-bench --mux: cost of one arm + one expire per timer with n timers
 * armed on one physical CPU, for the adapters/baremetal heap multiplexer
 * and, side by side, a sorted-list multiplexer (ACRN's per-CPU timer list:
 * O(n) insert by walking from the head, pop at the head).
 *
 * One operation = the physical timer fires for the earliest timer, the
 * multiplexer takes it off, its callback re-arms it at now + a random
 * delay (as a periodic or re-armed one-shot guest timer does), and the
 * physical deadline is rewritten. Both sides run on the same fake LAPIC
 * (a TSC variable the bench sets to the programmed deadline: no waiting)
 * with the same random delays.
 *
 *   lapict-bench --mux [--smoke] [--callgrind] [--n=N]
 *
 * Prints one line per size:
 *   RESULT test=mux n=<n> ns_per_op=<x> baseline_ns_per_op=<y> speedup=<y/x>
 * --callgrind runs a fixed number of operations per size and side between
 * callgrind client requests (no timing); examples/bench/mux_callgrind.sh
 * turns the dumps into instructions per operation.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define MUX_HAVE_CALLGRIND 1
#endif
#endif
#ifndef MUX_HAVE_CALLGRIND
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#endif

#include "lapict_baremetal.h"

int lapict_bench_mux(int argc, char **argv);

/* The sizes of the issue; --n=N runs one other size instead. */
static const uint32_t mux_sizes[] = {10, 1000, 100000};
#define MUX_NSIZES (sizeof(mux_sizes) / sizeof(mux_sizes[0]))
#define MUX_N_MAX 10000000u

/* ---- shared fake LAPIC and random delays ------------------------------ */

struct mux_hw {
    uint64_t tsc;
    uint64_t deadline;
    uint64_t writes;
};

static struct mux_hw mhw;

static uint64_t mhw_read_tsc(void *ctx)
{
    return ((struct mux_hw *)ctx)->tsc;
}

static void mhw_write(void *ctx, uint64_t v)
{
    struct mux_hw *h = ctx;
    h->deadline = v;
    h->writes++;
}

static void mhw_eoi(void *ctx)
{
    (void)ctx;
}

static const struct lapict_bm_hw mux_hw_ops = {
    .version = LAPICT_BM_HW_VERSION,
    .read_tsc = mhw_read_tsc,
    .write_tsc_deadline = mhw_write,
    .eoi = mhw_eoi,
};

__extension__ typedef unsigned __int128 mux_u128;

static uint64_t mux_rng;

static inline uint64_t mux_rand(void)
{
    mux_rng ^= mux_rng >> 12;
    mux_rng ^= mux_rng << 25;
    mux_rng ^= mux_rng >> 27;
    return mux_rng * 2685821657736338717ull;
}

/* Delays uniform in [1, span]: keys spread over span ns ahead of now. */
static uint64_t mux_span;

static inline uint64_t mux_delay(void)
{
    /* floor(r * span / 2^64): a multiply, not the bench's own divide. */
    return 1 + (uint64_t)(((mux_u128)mux_rand() * mux_span) >> 64);
}

static double mux_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the heap multiplexer (adapters/baremetal) ------------------------- */

struct mux_heap {
    struct lapict_bm_clock clk;
    struct lapict_bm_cpu cpu;
    struct lapict_bm_slot *slots;
    struct lapict_bm_node *nodes;
    uint64_t fired;
};

static struct mux_heap *mh;

static void mux_fire(struct lapict_bm_node *node)
{
    mh->fired++;
    /* The re-arm lapict_expire() would make for a periodic timer. */
    lapict_bm_arm(node, mhw.tsc + mux_delay());
}

static int heap_setup(struct mux_heap *h, uint32_t n)
{
    struct lapict_bm_cpu_config cc;
    uint32_t i;

    memset(h, 0, sizeof(*h));
    h->slots = calloc(LAPICT_BM_SLOTS(n), sizeof(*h->slots));
    h->nodes = calloc(n, sizeof(*h->nodes));
    if (!h->slots || !h->nodes)
        return -1;
    /* 1 GHz TSC: host ns = TSC, which keeps the two sides comparable. */
    if (lapict_bm_clock_init(&h->clk, 1000000u, 0, 0) != LAPICT_OK)
        return -1;
    memset(&cc, 0, sizeof(cc));
    cc.clock = &h->clk;
    if (lapict_bm_cpu_init(&h->cpu, &cc, &mux_hw_ops, &mhw, h->slots,
                           LAPICT_BM_SLOTS(n)) != LAPICT_OK)
        return -1;
    for (i = 0; i < n; i++) {
        if (lapict_bm_node_init(&h->nodes[i], &h->cpu, NULL,
                                LAPICT_BM_RATIO_ONE, 0, NULL) != LAPICT_OK)
            return -1;
        lapict_bm_node_set_fire(&h->nodes[i], mux_fire);
        lapict_bm_arm(&h->nodes[i], mhw.tsc + mux_delay());
    }
    mh = h;
    return 0;
}

static void heap_run(struct mux_heap *h, uint64_t ops)
{
    uint64_t end = h->fired + ops;
    while (h->fired < end) {
        /* The physical timer fires at the deadline last written. */
        if ((int64_t)(mhw.deadline - mhw.tsc) > 0)
            mhw.tsc = mhw.deadline;
        lapict_bm_timer_irq(&h->cpu);
    }
}

static void heap_free(struct mux_heap *h)
{
    free(h->slots);
    free(h->nodes);
}

/* ---- the sorted-list baseline (ACRN's per-CPU timer list) --------------- */

struct list_timer {
    uint64_t key;
    struct list_timer *prev, *next;
};

struct mux_list {
    struct list_timer head; /* circular, sentinel */
    struct list_timer *timers;
    uint64_t programmed;
    uint64_t fired;
};

/* ACRN local_add_timer(): walk from the head past every earlier timer. */
static bool list_add_timer(struct mux_list *l, struct list_timer *t)
{
    struct list_timer *prev = &l->head, *pos;
    for (pos = l->head.next; pos != &l->head; pos = pos->next) {
        if (pos->key < t->key)
            prev = pos;
        else
            break;
    }
    t->prev = prev;
    t->next = prev->next;
    prev->next->prev = t;
    prev->next = t;
    return prev == &l->head;
}

static void list_program(struct mux_list *l)
{
    if (l->head.next != &l->head && l->head.next->key != l->programmed) {
        l->programmed = l->head.next->key;
        mhw_write(&mhw, l->programmed);
    }
}

static int key_cmp(const void *a, const void *b)
{
    const struct list_timer *x = *(struct list_timer *const *)a;
    const struct list_timer *y = *(struct list_timer *const *)b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int list_setup(struct mux_list *l, uint32_t n)
{
    struct list_timer **order;
    struct list_timer *prev;
    uint32_t i;

    memset(l, 0, sizeof(*l));
    l->timers = calloc(n, sizeof(*l->timers));
    order = calloc(n, sizeof(*order));
    if (!l->timers || !order) {
        free(order);
        return -1;
    }
    /* The same starting keys as the heap side; linked in sorted order
     * directly (n sorted inserts would take O(n^2)). */
    for (i = 0; i < n; i++) {
        l->timers[i].key = mhw.tsc + mux_delay();
        order[i] = &l->timers[i];
    }
    qsort(order, n, sizeof(*order), key_cmp);
    prev = &l->head;
    for (i = 0; i < n; i++) {
        prev->next = order[i];
        order[i]->prev = prev;
        prev = order[i];
    }
    prev->next = &l->head;
    l->head.prev = prev;
    free(order);
    list_program(l);
    return 0;
}

/* ACRN timer_softirq(): take every expired timer off the head, run its
 * callback (which re-adds it), then reprogram the physical timer. */
static void list_irq(struct mux_list *l)
{
    uint64_t now = mhw.tsc;
    while (l->head.next != &l->head && l->head.next->key <= now) {
        struct list_timer *t = l->head.next;
        l->head.next = t->next;
        t->next->prev = &l->head;
        l->fired++;
        t->key = now + mux_delay();
        list_add_timer(l, t);
    }
    list_program(l);
}

static void list_run(struct mux_list *l, uint64_t ops)
{
    uint64_t end = l->fired + ops;
    while (l->fired < end) {
        if (mhw.deadline > mhw.tsc)
            mhw.tsc = mhw.deadline;
        list_irq(l);
    }
}

/* ---- driver ------------------------------------------------------------- */

struct mux_plan {
    uint64_t heap_ops, list_ops;
};

static struct mux_plan mux_plan_for(uint32_t n, bool smoke, bool cg)
{
    struct mux_plan p;
    if (smoke) {
        p.heap_ops = 2000;
        p.list_ops = n >= 100000 ? 5 : 200;
    } else if (cg) {
        p.heap_ops = 100000;
        p.list_ops = n >= 100000 ? 50 : n >= 1000 ? 5000 : 100000;
    } else {
        p.heap_ops = 2000000;
        p.list_ops = n >= 100000 ? 2000 : n >= 1000 ? 200000 : 2000000;
    }
    return p;
}

/* Dump the counters of one batch, labelled as mux_callgrind.sh parses it. */
static void cg_dump(const char *side, uint32_t n, uint64_t ops)
{
    char label[64];

    snprintf(label, sizeof(label), "mux %s n=%u ops=%llu", side, n,
             (unsigned long long)ops);
    CALLGRIND_DUMP_STATS_AT(label);
}

static int mux_one(uint32_t n, bool smoke, bool cg)
{
    struct mux_plan p = mux_plan_for(n, smoke, cg);
    struct mux_heap h;
    struct mux_list l;
    double t0, best = 0, list_s;
    int rep, reps = smoke || cg ? 1 : 3;

    /* Keys spread over 1 us per armed timer. */
    mux_span = (uint64_t)n * 1000u;
    memset(&mhw, 0, sizeof(mhw));
    mux_rng = 0x2545F4914F6CDD1Dull;
    if (heap_setup(&h, n)) {
        heap_free(&h);
        fprintf(stderr, "lapict-bench --mux: setup failed (n=%u)\n", n);
        return -1;
    }
    /* Warm up: reach the steady state of the key distribution. */
    heap_run(&h, cg ? n : 2 * (uint64_t)n + 1000);
    for (rep = 0; rep < reps; rep++) {
        double s;
        if (cg)
            CALLGRIND_ZERO_STATS;
        t0 = mux_now_s();
        heap_run(&h, p.heap_ops);
        s = mux_now_s() - t0;
        if (cg)
            cg_dump("heap", n, p.heap_ops);
        if (rep == 0 || s < best)
            best = s;
    }
    heap_free(&h);

    memset(&mhw, 0, sizeof(mhw));
    mux_rng = 0x2545F4914F6CDD1Dull;
    if (list_setup(&l, n)) {
        free(l.timers);
        fprintf(stderr, "lapict-bench --mux: setup failed (n=%u)\n", n);
        return -1;
    }
    list_run(&l, cg || n >= 100000 ? (uint64_t)p.list_ops / 4 + 1
                                   : 2 * (uint64_t)n + 1000);
    if (cg)
        CALLGRIND_ZERO_STATS;
    t0 = mux_now_s();
    list_run(&l, p.list_ops);
    list_s = mux_now_s() - t0;
    if (cg)
        cg_dump("list", n, p.list_ops);
    free(l.timers);

    {
        double x = best * 1e9 / (double)p.heap_ops;
        double y = list_s * 1e9 / (double)p.list_ops;
        printf("RESULT test=mux n=%u ns_per_op=%.1f baseline_ns_per_op=%.1f "
               "speedup=%.1f\n",
               n, x, y, x > 0 ? y / x : 0.0);
        fflush(stdout);
    }
    return 0;
}

int lapict_bench_mux(int argc, char **argv)
{
    bool smoke = false, cg = false;
    unsigned long one = 0;
    size_t i;
    int a;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--smoke")) {
            smoke = true;
        } else if (!strcmp(argv[a], "--callgrind")) {
            cg = true;
        } else if (!strncmp(argv[a], "--n=", 4)) {
            char *end;
            one = strtoul(argv[a] + 4, &end, 10);
            if (*end || one < 1 || one > MUX_N_MAX) {
                fprintf(stderr, "lapict-bench --mux: --n wants 1..%u\n",
                        MUX_N_MAX);
                return 2;
            }
        } else {
            fprintf(stderr,
                    "lapict-bench --mux: bad argument '%s'\n"
                    "usage: lapict-bench --mux [--smoke] [--callgrind] "
                    "[--n=N]\n",
                    argv[a]);
            return 2;
        }
    }
    if (one)
        return mux_one((uint32_t)one, smoke, cg) ? 1 : 0;
    for (i = 0; i < MUX_NSIZES; i++)
        if (mux_one(mux_sizes[i], smoke, cg))
            return 1;
    return 0;
}
