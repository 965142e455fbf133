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
 * physical deadline is rewritten. Every side runs on the same fake LAPIC
 * (a TSC variable the bench sets to the programmed deadline: no waiting)
 * with the same random delays, and around its structure the same platform
 * layer as the multiplexer: the LAPIC through its ops table, keys in host
 * ns converted by the multiplexer's clock, each expiry's callback through
 * a pointer. Only the structure differs.
 *
 *   lapict-bench --mux [--smoke] [--callgrind] [--n=N]
 *
 * Prints one line per size:
 *   RESULT test=mux n=<n> ns_per_op=<x> binheap_ns_per_op=<y>
 *          rbtree_ns_per_op=<z> sorted_ns_per_op=<w>
 *          speedup_vs_best=<min(y,z)/x>
 * --callgrind runs a fixed number of operations per size and side between
 * callgrind client requests (no timing); tools/bench/mux_callgrind.sh
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

#include "bench.h"
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

/* ---- shared driver of the baselines ------------------------------------- */

/*
 * A baseline is a priority queue of struct base_timer keyed by deadline.
 * The interrupt handler of every baseline is the same (ACRN timer_softirq,
 * libuv uv__run_timers, hrtimer_interrupt all have this shape): take every
 * expired timer off the front, run its callback (which re-arms it), then
 * program the physical timer for the new front.
 */
struct base_timer {
    uint64_t key;
    struct base_timer *left, *right,
        *parent; /* list: prev = left, next = right */
    int red;
};

struct base {
    /* The platform, as the multiplexer reaches it: the fake LAPIC's ops
     * table (read the TSC, write the deadline, EOI), and the timers'
     * callback, each called through its pointer as the anchors call
     * theirs (hrtimer ->function, libuv's timer_cb). */
    const struct lapict_bm_hw *hw;
    uint64_t (*fire)(struct base_timer *t, uint64_t now);
    /* Keys are host ns, as hrtimers' are: the TSC is converted to ns when
     * the handler reads the clock and back when it programs the timer,
     * with the multiplexer's own clock (the same arithmetic). */
    struct lapict_bm_clock clk;
    struct base_timer *timers;
    struct base_timer *root;  /* binheap: the minimum; rbtree: the root */
    struct base_timer *first; /* rbtree: cached leftmost; list: unused */
    struct base_timer head;   /* list: circular sentinel */
    uint32_t count;
    uint64_t programmed, fired, last_key, disorder;
};

struct base_ops {
    const char *name;
    void (*init)(struct base *b);
    struct base_timer *(*min)(struct base *b);
    void (*pop)(struct base *b, struct base_timer *t);
    void (*insert)(struct base *b, struct base_timer *t);
};

/* ---- sorted list (ACRN's per-CPU timer list) ---- */

static void list_init(struct base *b)
{
    b->head.left = b->head.right = &b->head;
}

static struct base_timer *list_min(struct base *b)
{
    return b->head.right == &b->head ? NULL : b->head.right;
}

static void list_pop(struct base *b, struct base_timer *t)
{
    (void)b;
    t->left->right = t->right;
    t->right->left = t->left;
}

/* ACRN local_add_timer(): walk from the head past every earlier timer. */
static void list_insert(struct base *b, struct base_timer *t)
{
    struct base_timer *prev = &b->head, *pos;
    for (pos = b->head.right; pos != &b->head; pos = pos->right) {
        if (pos->key < t->key)
            prev = pos;
        else
            break;
    }
    t->left = prev;
    t->right = prev->right;
    prev->right->left = t;
    prev->right = t;
}

/* ---- pointer-based binary min-heap (libuv's timer heap) ---- */

static void bh_init(struct base *b)
{
    (void)b;
}

static struct base_timer *bh_min(struct base *b)
{
    return b->root;
}

/* Child @c takes the place of its parent @p (nodes move, not keys: the
 * timers are the caller's objects). */
static void bh_swap(struct base *b, struct base_timer *p, struct base_timer *c)
{
    struct base_timer *pl = p->left, *pr = p->right, *pp = p->parent, *sib;

    p->left = c->left;
    p->right = c->right;
    p->parent = c;
    if (p->left)
        p->left->parent = p;
    if (p->right)
        p->right->parent = p;
    if (c == pl) {
        c->left = p;
        c->right = pr;
        sib = pr;
    } else {
        c->right = p;
        c->left = pl;
        sib = pl;
    }
    if (sib)
        sib->parent = c;
    c->parent = pp;
    if (!pp)
        b->root = c;
    else if (pp->left == p)
        pp->left = c;
    else
        pp->right = c;
}

/* The node at 1-based position @pos, reached from the root by the bits of
 * pos below its top bit (0: left, 1: right), stopping @stop levels short. */
static struct base_timer *bh_walk(struct base *b, uint32_t pos, int stop)
{
    struct base_timer *x = b->root;
    int i;

    for (i = 30 - __builtin_clz(pos); i >= stop; i--)
        x = (pos >> i) & 1u ? x->right : x->left;
    return x;
}

static void bh_insert(struct base *b, struct base_timer *t)
{
    uint32_t pos = ++b->count;
    struct base_timer *p;

    t->left = t->right = t->parent = NULL;
    if (pos == 1) {
        b->root = t;
        return;
    }
    p = bh_walk(b, pos, 1);
    if (pos & 1u)
        p->right = t;
    else
        p->left = t;
    t->parent = p;
    while (t->parent && t->key < t->parent->key)
        bh_swap(b, t->parent, t);
}

/* Pop the minimum @m: the last node takes the root and sifts down. */
static void bh_pop(struct base *b, struct base_timer *m)
{
    struct base_timer *last;

    if (b->count == 1) {
        b->root = NULL;
        b->count = 0;
        return;
    }
    last = bh_walk(b, b->count--, 0);
    if (last->parent->right == last)
        last->parent->right = NULL;
    else
        last->parent->left = NULL;
    last->left = m->left;
    last->right = m->right;
    last->parent = NULL;
    if (last->left)
        last->left->parent = last;
    if (last->right)
        last->right->parent = last;
    b->root = last;
    for (;;) {
        struct base_timer *s = last;
        if (last->left && last->left->key < s->key)
            s = last->left;
        if (last->right && last->right->key < s->key)
            s = last->right;
        if (s == last)
            break;
        bh_swap(b, last, s);
    }
}

/* ---- red-black tree with a cached leftmost node (Linux's timerqueue) ---- */

static void rb_init(struct base *b)
{
    (void)b;
}

static struct base_timer *rb_min(struct base *b)
{
    return b->first;
}

static void rb_relink(struct base *b, struct base_timer *old,
                      struct base_timer *new)
{
    struct base_timer *p = old->parent;
    if (!p)
        b->root = new;
    else if (p->left == old)
        p->left = new;
    else
        p->right = new;
    if (new)
        new->parent = p;
}

static void rb_rotate_left(struct base *b, struct base_timer *x)
{
    struct base_timer *y = x->right;
    x->right = y->left;
    if (y->left)
        y->left->parent = x;
    rb_relink(b, x, y);
    y->left = x;
    x->parent = y;
}

static void rb_rotate_right(struct base *b, struct base_timer *x)
{
    struct base_timer *y = x->left;
    x->left = y->right;
    if (y->right)
        y->right->parent = x;
    rb_relink(b, x, y);
    y->right = x;
    x->parent = y;
}

static void rb_insert(struct base *b, struct base_timer *z)
{
    struct base_timer *y = NULL, *x = b->root;
    bool leftmost = true;

    while (x) {
        y = x;
        if (z->key < x->key) {
            x = x->left;
        } else {
            x = x->right;
            leftmost = false; /* equal keys go right: FIFO among ties */
        }
    }
    z->parent = y;
    z->left = z->right = NULL;
    z->red = 1;
    if (!y)
        b->root = z;
    else if (z->key < y->key)
        y->left = z;
    else
        y->right = z;
    if (leftmost)
        b->first = z;
    while (z->parent && z->parent->red) {
        struct base_timer *p = z->parent, *g = p->parent, *u;
        if (p == g->left) {
            u = g->right;
            if (u && u->red) {
                p->red = u->red = 0;
                g->red = 1;
                z = g;
                continue;
            }
            if (z == p->right) {
                z = p;
                rb_rotate_left(b, z);
                p = z->parent;
            }
            p->red = 0;
            g->red = 1;
            rb_rotate_right(b, g);
        } else {
            u = g->left;
            if (u && u->red) {
                p->red = u->red = 0;
                g->red = 1;
                z = g;
                continue;
            }
            if (z == p->left) {
                z = p;
                rb_rotate_right(b, z);
                p = z->parent;
            }
            p->red = 0;
            g->red = 1;
            rb_rotate_left(b, g);
        }
    }
    b->root->red = 0;
}

static bool rb_black(const struct base_timer *x)
{
    return !x || !x->red;
}

/* Restore the black height after removing a black node; @x (maybe NULL)
 * took its place under @xp. */
static void rb_erase_fixup(struct base *b, struct base_timer *x,
                           struct base_timer *xp)
{
    while (x != b->root && rb_black(x)) {
        struct base_timer *w;
        if (x == xp->left) {
            w = xp->right;
            if (w->red) {
                w->red = 0;
                xp->red = 1;
                rb_rotate_left(b, xp);
                w = xp->right;
            }
            if (rb_black(w->left) && rb_black(w->right)) {
                w->red = 1;
                x = xp;
                xp = x->parent;
                continue;
            }
            if (rb_black(w->right)) {
                w->left->red = 0;
                w->red = 1;
                rb_rotate_right(b, w);
                w = xp->right;
            }
            w->red = xp->red;
            xp->red = 0;
            w->right->red = 0;
            rb_rotate_left(b, xp);
        } else {
            w = xp->left;
            if (w->red) {
                w->red = 0;
                xp->red = 1;
                rb_rotate_right(b, xp);
                w = xp->left;
            }
            if (rb_black(w->left) && rb_black(w->right)) {
                w->red = 1;
                x = xp;
                xp = x->parent;
                continue;
            }
            if (rb_black(w->left)) {
                w->right->red = 0;
                w->red = 1;
                rb_rotate_left(b, w);
                w = xp->left;
            }
            w->red = xp->red;
            xp->red = 0;
            w->left->red = 0;
            rb_rotate_right(b, xp);
        }
        x = b->root;
        break;
    }
    if (x)
        x->red = 0;
}

static void rb_pop(struct base *b, struct base_timer *z)
{
    struct base_timer *x, *xp, *y = z;
    int y_red = y->red;

    if (b->first == z) {
        /* The next in order: leftmost of the right subtree, or the parent
         * (z is leftmost, so it has no left child). */
        struct base_timer *n = z->right;
        if (n)
            while (n->left)
                n = n->left;
        else
            n = z->parent;
        b->first = n;
    }
    if (!z->left) {
        x = z->right;
        xp = z->parent;
        rb_relink(b, z, x);
    } else if (!z->right) {
        x = z->left;
        xp = z->parent;
        rb_relink(b, z, x);
    } else {
        y = z->right;
        while (y->left)
            y = y->left;
        y_red = y->red;
        x = y->right;
        if (y->parent == z) {
            xp = y;
        } else {
            xp = y->parent;
            rb_relink(b, y, x);
            y->right = z->right;
            y->right->parent = y;
        }
        rb_relink(b, z, y);
        y->left = z->left;
        y->left->parent = y;
        y->red = z->red;
    }
    if (!y_red)
        rb_erase_fixup(b, x, xp);
}

static const struct base_ops base_binheap = {"binheap", bh_init, bh_min, bh_pop,
                                             bh_insert};
static const struct base_ops base_rbtree = {"rbtree", rb_init, rb_min, rb_pop,
                                            rb_insert};
static const struct base_ops base_sorted = {"sorted", list_init, list_min,
                                            list_pop, list_insert};

static void base_program(struct base *b, const struct base_ops *o)
{
    struct base_timer *m = o->min(b);
    if (m && m->key != b->programmed) {
        b->programmed = m->key;
        b->hw->write_tsc_deadline(&mhw,
                                  lapict_bm_clock_tsc(&b->clk, b->programmed));
    }
}

/* A timer's callback: the re-arm at now + a random delay, which
 * mux_fire() makes for the multiplexer's nodes. */
static uint64_t base_fire(struct base_timer *t, uint64_t now)
{
    (void)t;
    return now + mux_delay();
}

static int base_cmp(const void *a, const void *b)
{
    const struct base_timer *x = *(struct base_timer *const *)a;
    const struct base_timer *y = *(struct base_timer *const *)b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int base_setup(struct base *b, const struct base_ops *o, uint32_t n)
{
    struct base_timer **order;
    uint32_t i;

    memset(b, 0, sizeof(*b));
    b->hw = &mux_hw_ops;
    b->fire = base_fire;
    if (lapict_bm_clock_init(&b->clk, 1000000u, 0, 0) != LAPICT_OK)
        return -1;
    o->init(b);
    b->timers = calloc(n, sizeof(*b->timers));
    order = calloc(n, sizeof(*order));
    if (!b->timers || !order) {
        free(order);
        return -1;
    }
    /* The same starting keys as the heap side. */
    for (i = 0; i < n; i++) {
        b->timers[i].key = mhw.tsc + mux_delay();
        order[i] = &b->timers[i];
    }
    if (o->insert == list_insert) {
        /* Linked in sorted order directly (n sorted inserts: O(n^2)). */
        struct base_timer *prev = &b->head;
        qsort(order, n, sizeof(*order), base_cmp);
        for (i = 0; i < n; i++) {
            prev->right = order[i];
            order[i]->left = prev;
            prev = order[i];
        }
        prev->right = &b->head;
        b->head.left = prev;
    } else {
        for (i = 0; i < n; i++)
            o->insert(b, order[i]);
    }
    free(order);
    base_program(b, o);
    return 0;
}

/* Inlined per baseline (the ops are constants): no indirect calls timed. */
static inline __attribute__((always_inline)) void
base_run(struct base *b, const struct base_ops *o, uint64_t ops)
{
    uint64_t end = b->fired + ops;
    while (b->fired < end) {
        struct base_timer *t;
        uint64_t now;
        if ((int64_t)(mhw.deadline - mhw.tsc) > 0)
            mhw.tsc = mhw.deadline;
        now = lapict_bm_clock_ns(&b->clk, b->hw->read_tsc(&mhw));
        while ((t = o->min(b)) && t->key <= now) {
            o->pop(b, t);
            /* Keys come out in order, or the structure is broken. */
            b->disorder += t->key < b->last_key;
            b->last_key = t->key;
            b->fired++;
            t->key = b->fire(t, now);
            o->insert(b, t);
        }
        base_program(b, o);
        b->hw->eoi(&mhw);
    }
}

static void base_run_binheap(struct base *b, uint64_t ops)
{
    base_run(b, &base_binheap, ops);
}

static void base_run_rbtree(struct base *b, uint64_t ops)
{
    base_run(b, &base_rbtree, ops);
}

static void base_run_sorted(struct base *b, uint64_t ops)
{
    base_run(b, &base_sorted, ops);
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

/*
 * Each side has its own fake LAPIC and random stream, swapped into the
 * globals the callbacks use while it runs, so the sides can take turns
 * (interleaved repetitions see the same machine noise) and still each see
 * the same workload from the same seed.
 */
enum { SIDE_HEAP, SIDE_BINHEAP, SIDE_RBTREE, SIDE_SORTED, NSIDES };
static const char *const side_name[NSIDES] = {"heap", "binheap", "rbtree",
                                              "sorted"};

struct mux_side {
    struct mux_hw hw;
    uint64_t rng;
};

static void side_enter(const struct mux_side *s)
{
    mhw = s->hw;
    mux_rng = s->rng;
}

static void side_leave(struct mux_side *s)
{
    s->hw = mhw;
    s->rng = mux_rng;
}

static void side_run(int side, struct mux_heap *h, struct base *b, uint64_t ops)
{
    switch (side) {
    case SIDE_HEAP:
        heap_run(h, ops);
        break;
    case SIDE_BINHEAP:
        base_run_binheap(&b[0], ops);
        break;
    case SIDE_RBTREE:
        base_run_rbtree(&b[1], ops);
        break;
    default:
        base_run_sorted(&b[2], ops);
        break;
    }
}

static int mux_one(uint32_t n, bool smoke, bool cg)
{
    static const struct base_ops *const bops[3] = {&base_binheap, &base_rbtree,
                                                   &base_sorted};
    struct mux_plan p = mux_plan_for(n, smoke, cg);
    struct mux_side sd[NSIDES];
    struct mux_heap h;
    struct base b[3];
    double best[NSIDES] = {0}, ns[NSIDES] = {0};
    int rep, reps = smoke || cg ? 1 : 3, i, rc = -1;

    /* Keys spread over 1 us per armed timer. */
    mux_span = (uint64_t)n * 1000u;
    memset(&h, 0, sizeof(h));
    memset(b, 0, sizeof(b));
    for (i = 0; i < NSIDES; i++) {
        int ok;
        memset(&mhw, 0, sizeof(mhw));
        mux_rng = 0x2545F4914F6CDD1Dull;
        ok = i == SIDE_HEAP ? heap_setup(&h, n) == 0
                            : base_setup(&b[i - 1], bops[i - 1], n) == 0;
        side_leave(&sd[i]);
        if (!ok) {
            fprintf(stderr, "lapict-bench --mux: setup failed (n=%u)\n", n);
            goto out;
        }
    }
    /* Warm up: reach the steady state of the key distribution (the
     * sorted list, O(n) per op, only a quarter of its timed run). */
    for (i = 0; i < NSIDES; i++) {
        side_enter(&sd[i]);
        side_run(i, &h, b,
                 i == SIDE_SORTED && (cg || n >= 100000) ? p.list_ops / 4 + 1
                 : cg                                    ? n
                      : 2 * (uint64_t)n + 1000);
        side_leave(&sd[i]);
    }
    for (rep = 0; rep < reps; rep++) {
        for (i = 0; i < NSIDES; i++) {
            uint64_t ops = i == SIDE_SORTED ? p.list_ops : p.heap_ops;
            double t0, s;
            if (i == SIDE_SORTED && rep)
                continue; /* slow at large n; its figure is not close */
            side_enter(&sd[i]);
            if (cg)
                CALLGRIND_ZERO_STATS;
            t0 = mux_now_s();
            side_run(i, &h, b, ops);
            s = mux_now_s() - t0;
            if (cg)
                cg_dump(side_name[i], n, ops);
            side_leave(&sd[i]);
            if (rep == 0 || s < best[i])
                best[i] = s;
            ns[i] = best[i] * 1e9 / (double)ops;
        }
    }
    for (i = 0; i < 3; i++) {
        if (b[i].disorder) {
            fprintf(stderr,
                    "lapict-bench --mux: %s popped %llu keys out of order "
                    "(n=%u)\n",
                    bops[i]->name, (unsigned long long)b[i].disorder, n);
            goto out;
        }
    }
    {
        double x = ns[SIDE_HEAP], y = ns[SIDE_BINHEAP], z = ns[SIDE_RBTREE];
        double bestb = y < z ? y : z;
        printf("RESULT test=mux n=%u ns_per_op=%.1f binheap_ns_per_op=%.1f "
               "rbtree_ns_per_op=%.1f sorted_ns_per_op=%.1f "
               "speedup_vs_best=%.2f\n",
               n, x, y, z, ns[SIDE_SORTED], x > 0 ? bestb / x : 0.0);
        fflush(stdout);
    }
    rc = 0;
out:
    heap_free(&h);
    for (i = 0; i < 3; i++)
        free(b[i].timers);
    return rc;
}

int lapict_bench_mux(int argc, char **argv)
{
    bool smoke = false, cg = false;
    uint64_t one = 0;
    size_t i;
    int a;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--smoke")) {
            smoke = true;
        } else if (!strcmp(argv[a], "--callgrind")) {
            cg = true;
        } else if (!strncmp(argv[a], "--n=", 4)) {
            if (bench_parse_num("--n", argv[a] + 4, 1, MUX_N_MAX, &one))
                return 2;
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
