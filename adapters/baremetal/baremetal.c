/* SPDX-License-Identifier: MIT */
/*
 * The bare-metal multiplexer: per physical CPU, a 4-ary min-heap of vCPU
 * timer nodes keyed by (host ns deadline, arming sequence) in front of the
 * one TSC-deadline timer. See README.md for the model and the quirk list.
 *
 * Freestanding: only the lapict public API, no libc. 128-bit multiplies
 * only; the one division loop (calibration) runs bit by bit at init.
 */
#include "lapict_baremetal.h"

#include <stddef.h>

__extension__ typedef unsigned __int128 bm_u128;

#define BM_CPU_MAGIC 0x424D4355u /* "BMCU" */
/*
 * A node's magic is also its state, read where the arm path already reads
 * the node: on a CPU, or detached (on none; node->cpu is the CPU it left).
 */
#define BM_NODE_MAGIC 0x424D4E44u /* "BMND" */
#define BM_NODE_AWAY 0x424D4E41u  /* "BMNA" */
/* Node flags. */
#define BM_N_KEPT 0x1u /* detached with deadline_host_ns to arm at attach */
#define BM_N_HV 0x2u   /* on the preemption timer for deadline_host_ns */
/* Host distances beyond this are "far": lapict re-checks anyway. */
#define BM_FAR_NS (1ull << 62)
/*
 * The same in host TSC ticks, for the inverse of a guest TSC deadline: an
 * instant further than this is answered with this many ticks (never later
 * than the instant; lapict re-checks there).
 */
#define BM_FAR_TSC (1ull << 62)
/* Guest TSC distances from this on are answered as far, too. */
#define BM_FAR_GUEST (1ull << 63)
/* Guest TSC ratio lower bound: guest rate >= host rate / 2^16. */
#define BM_RATIO_MIN (1ull << 32)
/* ... and <= 16384 x (keeps the calibration's remainder below 2^63). */
#define BM_RATIO_MAX (1ull << 62)
/*
 * Children per heap node: a 4-ary heap halves the depth of a binary one
 * and its four children (64 bytes) fill one cache line, which is what
 * matters at 10^5 timers.
 */
#define BM_ARITY 4
/* Bound on the correction steps of an inverse estimate. */
#define BM_FIX_STEPS 64

/* ---- clock ---------------------------------------------------------- */

/*
 * floor(num * 2^s / den) (den < 2^62) for the smallest s <= 63 that
 * brings the result to 2^61 or more, by long division one bit at a time (init
 * only; avoids libgcc's __udivti3, which kernels do not link).
 */
static uint64_t fixed_ratio(uint64_t num, uint64_t den, uint8_t *shift)
{
    uint64_t q = num / den, r = num % den;
    uint8_t s = 0;

    while (s < 63 && q < (1ull << 61)) {
        r <<= 1; /* r < den < 2^62: no overflow */
        q <<= 1;
        if (r >= den) {
            r -= den;
            q |= 1;
        }
        s++;
    }
    *shift = s;
    return q;
}

int lapict_bm_clock_init(struct lapict_bm_clock *clk, uint32_t tsc_khz,
                         uint64_t tsc_base, uint64_t ns_base)
{
    if (!clk || tsc_khz < LAPICT_TSC_KHZ_MIN || tsc_khz > LAPICT_TSC_KHZ_MAX)
        return LAPICT_E_INVAL;
    clk->tsc_base = tsc_base;
    clk->ns_base = ns_base;
    clk->tsc_khz = tsc_khz;
    /* ns per tick = 10^6 / kHz; ticks per ns = kHz / 10^6. */
    clk->ns_mult = fixed_ratio(1000000u, tsc_khz, &clk->ns_shift);
    clk->tsc_mult = fixed_ratio(tsc_khz, 1000000u, &clk->tsc_shift);
    return LAPICT_OK;
}

/* ns elapsed after @dtsc ticks, as 128 bits (monotonic in @dtsc). */
static inline bm_u128 clk_f(const struct lapict_bm_clock *clk, uint64_t dtsc)
{
    return ((bm_u128)dtsc * clk->ns_mult) >> clk->ns_shift;
}

uint64_t lapict_bm_clock_ns(const struct lapict_bm_clock *clk, uint64_t tsc)
{
    return clk->ns_base + (uint64_t)clk_f(clk, tsc - clk->tsc_base);
}

uint64_t lapict_bm_clock_tsc(const struct lapict_bm_clock *clk,
                             uint64_t host_ns)
{
    uint64_t d = host_ns - clk->ns_base, x, step;
    bm_u128 e = ((bm_u128)d * clk->tsc_mult) >> clk->tsc_shift;
    /* clk_f(x) >= d exactly when x * ns_mult >= d << ns_shift. */
    bm_u128 goal = (bm_u128)d << clk->ns_shift, gap;
    uint8_t sh;

    x = e > UINT64_MAX ? UINT64_MAX : (uint64_t)e;
    /*
     * Both multipliers are rounded down, so the estimate never passes the
     * answer (clk_f(x) >= d needs x >= d * kHz / 10^6 >= the estimate).
     * It can be far short: ns_mult's rounding leaves clk_f(x) up to
     * x / 2^ns_shift ns behind, about 200 ticks near 2^64 at 10^8 kHz
     * (ns_shift is 63 there). Each step below is
     * the shortfall in ns units times tsc_mult, a lower bound of the ticks
     * still missing (tsc_mult / 2^tsc_shift <= kHz / 10^6 <= 2^ns_shift /
     * ns_mult), so it never passes the answer either; the first step
     * leaves at most two ticks, so the loop runs a few times. It ends at
     * the smallest x with clk_f(x) >= d, so that "TSC >= result" is
     * exactly "host ns >= host_ns" for every reader of this clock, or at
     * the last tick when 2^64 ticks do not reach @host_ns.
     */
    while (x < UINT64_MAX && (bm_u128)x * clk->ns_mult < goal) {
        gap = goal - (bm_u128)x * clk->ns_mult;
        /* Keep gap * tsc_mult inside 128 bits; rounds the step down. */
        for (sh = 0; gap >> 64; sh++)
            gap >>= 1;
        step = (uint64_t)(((bm_u128)(uint64_t)gap * clk->tsc_mult) >>
                          (clk->tsc_shift + clk->ns_shift - sh));
        if (step == 0)
            step = 1;
        x = step > UINT64_MAX - x ? UINT64_MAX : x + step;
    }
    return clk->tsc_base + x;
}

/* ---- heap ----------------------------------------------------------- */

/*
 * The heap holds (deadline, node) pairs only (struct lapict_bm_slot), 16
 * bytes, four to a cache line. Each node keeps its heap position; ties
 * compare the nodes' arming sequences, which only equal deadlines need.
 */

/* Deadline order on the wrapping host clock, ties by arming sequence. */
static inline bool ent_less(const struct lapict_bm_slot *a,
                            const struct lapict_bm_slot *b)
{
    int64_t d = (int64_t)(a->key_host_ns - b->key_host_ns);
    return d < 0 || (d == 0 && a->node->seq < b->node->seq);
}

static inline void ent_put(struct lapict_bm_slot *h, uint32_t i,
                           const struct lapict_bm_slot *e)
{
    h[i] = *e;
    e->node->slot = i + 1;
}

static void sift_up(struct lapict_bm_cpu *cpu, uint32_t i,
                    const struct lapict_bm_slot *e)
{
    struct lapict_bm_slot *h = cpu->heap;

    while (i > 0) {
        uint32_t p = (i - 1) / BM_ARITY;
        if (!ent_less(e, &h[p]))
            break;
        ent_put(h, i, &h[p]);
        i = p;
    }
    ent_put(h, i, e);
}

/*
 * The least of the children h[c..end): by deadline without branches (which
 * of four random deadlines is least is a coin toss that a branch predictor
 * loses at every level), then by the exact order if deadlines tie.
 */
static inline uint32_t least_child(const struct lapict_bm_slot *h, uint32_t c,
                                   uint32_t end)
{
    uint64_t mk = h[c].key_host_ns;
    uint32_t m = c, k, ties = 0;

    for (k = c + 1; k < end; k++) {
        uint64_t kk = h[k].key_host_ns;
        bool lt = (int64_t)(kk - mk) < 0;
        m = lt ? k : m;
        mk = lt ? kk : mk;
    }
    for (k = c; k < end; k++)
        ties += h[k].key_host_ns == mk;
    if (ties > 1)
        for (m = c, k = c + 1; k < end; k++)
            if (ent_less(&h[k], &h[m]))
                m = k;
    return m;
}

static void sift_down(struct lapict_bm_cpu *cpu, uint32_t i,
                      const struct lapict_bm_slot *e)
{
    struct lapict_bm_slot *h = cpu->heap;
    uint32_t n = cpu->n;

    for (;;) {
        uint32_t c = BM_ARITY * i + 1, g = BM_ARITY * c + 1, k;
        if (c >= n)
            break;
        /*
         * The grandchildren of @i (16 entries, 4 lines in a row) are the
         * level after next: fetching them now overlaps the cache misses of
         * the deep levels (10^5 entries outgrow L2) instead of taking them
         * one after the other.
         */
        for (k = 0; k < BM_ARITY * BM_ARITY && g + k < n; k += 64 / sizeof(*h))
            __builtin_prefetch(&h[g + k]);
        c = least_child(h, c, c + BM_ARITY < n ? c + BM_ARITY : n);
        if (!ent_less(&h[c], e))
            break;
        ent_put(h, i, &h[c]);
        i = c;
    }
    ent_put(h, i, e);
}

/* Put @e at position @i (a hole) wherever it belongs. */
static void heap_fix(struct lapict_bm_cpu *cpu, uint32_t i,
                     const struct lapict_bm_slot *e)
{
    if (i > 0 && ent_less(e, &cpu->heap[(i - 1) / BM_ARITY]))
        sift_up(cpu, i, e);
    else
        sift_down(cpu, i, e);
}

/* Take @node (armed on @cpu) off the heap. */
static void heap_remove(struct lapict_bm_cpu *cpu, struct lapict_bm_node *node)
{
    uint32_t i = node->slot - 1;
    struct lapict_bm_slot last;

    node->slot = 0;
    cpu->n--;
    if (i == cpu->n)
        return;
    last = cpu->heap[cpu->n];
    heap_fix(cpu, i, &last);
}

/*
 * The heap in the caller's slots: up to LAPICT_BM_SLOT_SPARE entries in,
 * so that each group of siblings (from index 1) starts a cache line.
 */
static struct lapict_bm_slot *heap_place(struct lapict_bm_slot *slots)
{
    uintptr_t e = sizeof(*slots);
    uintptr_t skip = (64 - ((uintptr_t)slots + e) % 64) % 64 / e;

    return slots + (skip > LAPICT_BM_SLOT_SPARE ? 0 : skip);
}

/* ---- the physical timer --------------------------------------------- */

static inline bool due(uint64_t key, uint64_t now)
{
    return (int64_t)(now - key) >= 0;
}

/*
 * Write IA32_TSC_DEADLINE for the earliest node, only if that changes
 * what the hardware holds (@cur: the TSC, @now: its host ns). Quirks,
 * handled here:
 * - a deadline already reached: written as is (never 0, which disarms),
 *   so the timer fires at once and the handler services it;
 * - a far deadline: the TSC distance to it takes up to 64 bits (2^62 ns,
 *   lapict's horizon, last more than 2^63 ticks above 2 GHz), so it is
 *   never read as signed; lapict_bm_clock_tsc() saturates at the clock's
 *   last tick, and the early interrupt there re-arms;
 * - a deadline beyond the 2^64 TSC wrap: the hardware compares unsigned,
 *   so writing it would fire at once; UINT64_MAX is written instead and
 *   the (early) interrupt at the wrap re-arms.
 */
static void hw_program(struct lapict_bm_cpu *cpu, uint64_t cur, uint64_t now)
{
    const struct lapict_bm_clock *clk = cpu->clock;
    uint64_t key, tsc, v;

    if (cpu->n == 0) {
        if (cpu->hw_armed) {
            cpu->hw->write_tsc_deadline(cpu->hw_ctx, 0);
            cpu->hw_armed = false;
            cpu->st.hw_writes++;
        }
        return;
    }
    key = cpu->heap[0].key_host_ns;
    if (cpu->hw_armed && cpu->hw_req_ns == key)
        return;
    /*
     * Reached (also a deadline before the clock's base): judged in host
     * ns by due(), as service() judges it, so that the two cannot
     * disagree. Deadlines lie within 2^62 ns of now, where the signed
     * difference is exact.
     */
    if (due(key, now)) {
        tsc = v = cur ? cur : 1;
        cpu->st.past_writes++;
    } else {
        /* The first tick that reaches it, after cur. */
        tsc = lapict_bm_clock_tsc(clk, key);
        v = tsc;
        if (tsc < cur) {
            v = UINT64_MAX;
            cpu->st.wrap_clamps++;
        }
        /* Two deadlines within one TSC tick: nothing to write. */
        if (cpu->hw_armed && cpu->hw_req_tsc == tsc) {
            cpu->hw_req_ns = key;
            return;
        }
    }
    cpu->hw->write_tsc_deadline(cpu->hw_ctx, v);
    cpu->hw_req_ns = key;
    cpu->hw_req_tsc = tsc;
    cpu->hw_armed = true;
    cpu->st.hw_writes++;
}

static void hw_update(struct lapict_bm_cpu *cpu)
{
    uint64_t cur;

    if (!cpu->n) {
        hw_program(cpu, 0, 0);
        return;
    }
    if (cpu->hw_armed && cpu->hw_req_ns == cpu->heap[0].key_host_ns)
        return;
    cur = cpu->hw->read_tsc(cpu->hw_ctx);
    hw_program(cpu, cur, lapict_bm_clock_ns(cpu->clock, cur));
}

/* ---- nodes ---------------------------------------------------------- */

static bool cpu_ok(const struct lapict_bm_cpu *cpu)
{
    return cpu && cpu->magic == BM_CPU_MAGIC;
}

/* A node on a CPU. */
static bool node_ok(const struct lapict_bm_node *node)
{
    return node && node->magic == BM_NODE_MAGIC && cpu_ok(node->cpu);
}

/* A detached node. */
static bool node_away(const struct lapict_bm_node *node)
{
    return node && node->magic == BM_NODE_AWAY;
}

/* A node, on a CPU or detached. */
static bool node_is(const struct lapict_bm_node *node)
{
    return node_away(node) || (node && node->magic == BM_NODE_MAGIC);
}

/* Armed, not counting the entry of the node whose callback is running. */
static bool node_armed(const struct lapict_bm_node *node)
{
    const struct lapict_bm_cpu *cpu = node->cpu;
    return node->slot && !(cpu->cur == node && node->seq == cpu->cur_seq);
}

int lapict_bm_cpu_init(struct lapict_bm_cpu *cpu,
                       const struct lapict_bm_cpu_config *cfg,
                       const struct lapict_bm_hw *hw, void *hw_ctx,
                       struct lapict_bm_slot *slots, uint32_t nslots)
{
    if (!cpu || !cfg || !cfg->clock || !hw || !slots ||
        nslots < LAPICT_BM_SLOTS(1) || nslots > LAPICT_BM_SLOTS(1u << 31) ||
        hw->version == 0 || !hw->read_tsc || !hw->write_tsc_deadline ||
        !hw->eoi || cfg->preempt_shift > 31)
        return LAPICT_E_INVAL;
    *cpu = (struct lapict_bm_cpu){0};
    cpu->hw = hw;
    cpu->hw_ctx = hw_ctx;
    cpu->clock = cfg->clock;
    cpu->heap = heap_place(slots);
    cpu->cap = nslots - LAPICT_BM_SLOT_SPARE;
    cpu->max_rounds =
        cfg->max_rounds ? cfg->max_rounds : LAPICT_BM_MAX_ROUNDS_DEFAULT;
    cpu->preempt_shift = cfg->preempt_shift;
    cpu->magic = BM_CPU_MAGIC;
    return LAPICT_OK;
}

int lapict_bm_node_init(struct lapict_bm_node *node, struct lapict_bm_cpu *cpu,
                        struct lapict_timer *timer, uint64_t tsc_ratio,
                        uint64_t tsc_offset, void *user)
{
    uint64_t inv;
    uint8_t shift;

    if (!node || !cpu_ok(cpu) || tsc_ratio < BM_RATIO_MIN ||
        tsc_ratio >= BM_RATIO_MAX || cpu->nodes == cpu->cap)
        return LAPICT_E_INVAL;
    /* Host ticks per guest tick = 2^48 / ratio, as a fixed-point value. */
    inv = fixed_ratio(1ull << 48, tsc_ratio, &shift);
    *node = (struct lapict_bm_node){0};
    node->cpu = cpu;
    node->timer = timer;
    node->user = user;
    node->tsc_ratio = tsc_ratio;
    node->tsc_offset = tsc_offset;
    node->tsc_inv = inv;
    node->tsc_inv_shift = shift;
    node->magic = BM_NODE_MAGIC;
    /* Its slot, so that no arm of it can fail. */
    cpu->nodes++;
    return LAPICT_OK;
}

void lapict_bm_node_set_fire(struct lapict_bm_node *node, lapict_bm_fire_fn fn)
{
    if (node_is(node))
        node->fire = fn;
}

void *lapict_bm_node_user(const struct lapict_bm_node *node)
{
    return node ? node->user : NULL;
}

uint64_t lapict_bm_now_ns(const struct lapict_bm_cpu *cpu)
{
    return lapict_bm_clock_ns(cpu->clock, cpu->hw->read_tsc(cpu->hw_ctx));
}

/* VMX TSC scaling: the low 64 bits of (tsc * ratio) >> 48, plus offset. */
static inline uint64_t guest_at(const struct lapict_bm_node *node,
                                uint64_t host_tsc)
{
    return (uint64_t)(((bm_u128)host_tsc * node->tsc_ratio) >> 48) +
           node->tsc_offset;
}

uint64_t lapict_bm_guest_tsc(const struct lapict_bm_node *node)
{
    return guest_at(node, node->cpu->hw->read_tsc(node->cpu->hw_ctx));
}

int lapict_bm_arm(struct lapict_bm_node *node, uint64_t host_ns)
{
    struct lapict_bm_cpu *cpu;
    struct lapict_bm_slot e;

    /* Rare (misuse, migration): out of the line of the arm. */
    if (__builtin_expect(!node_ok(node), 0)) {
        if (!node_away(node))
            return LAPICT_E_INVAL;
        /* Detached: attach arms it. */
        node->deadline_host_ns = host_ns;
        node->flags |= BM_N_KEPT;
        return LAPICT_OK;
    }
    cpu = node->cpu;
    e.key_host_ns = host_ns;
    e.node = node;
    node->seq = cpu->seq++;
    if (node->slot) {
        /* Arming replaces: move the node to its new place. */
        heap_fix(cpu, node->slot - 1, &e);
    } else {
        /* n < cap: every node on the CPU holds a slot (n <= nodes). */
        cpu->n++;
        sift_up(cpu, cpu->n - 1, &e);
    }
    node->deadline_host_ns = host_ns;
    cpu->st.arms++;
    if (!cpu->in_service)
        hw_update(cpu);
    return LAPICT_OK;
}

int lapict_bm_cancel(struct lapict_bm_node *node)
{
    struct lapict_bm_cpu *cpu;

    if (!node_ok(node)) {
        if (!node_away(node))
            return LAPICT_E_INVAL;
        node->flags &= ~BM_N_KEPT;
        return LAPICT_OK;
    }
    cpu = node->cpu;
    cpu->st.cancels++;
    if (!node->slot)
        return LAPICT_OK;
    /* (Also the entry of a node inside its callback: it stays cancelled.) */
    heap_remove(cpu, node);
    if (!cpu->in_service)
        hw_update(cpu);
    return LAPICT_OK;
}

bool lapict_bm_node_armed(const struct lapict_bm_node *node, uint64_t *host_ns)
{
    bool armed;

    if (node_ok(node))
        armed = node_armed(node) || (node->flags & BM_N_HV);
    else
        armed = node_away(node) && (node->flags & BM_N_KEPT);
    if (armed && host_ns)
        *host_ns = node->deadline_host_ns;
    return armed;
}

int lapict_bm_node_detach(struct lapict_bm_node *node)
{
    bool armed;
    int rc;

    if (!node_ok(node) || node->cpu->guest == node)
        return LAPICT_E_INVAL;
    armed = node_armed(node);
    rc = lapict_bm_cancel(node);
    if (rc != LAPICT_OK)
        return rc;
    node->flags = armed ? BM_N_KEPT : 0;
    node->cpu->nodes--;
    /* node->cpu stays: the clocks of a detached node read through it. */
    node->magic = BM_NODE_AWAY;
    return LAPICT_OK;
}

int lapict_bm_node_attach(struct lapict_bm_node *node,
                          struct lapict_bm_cpu *cpu)
{
    if (!node_away(node) || !cpu_ok(cpu) || cpu->nodes == cpu->cap)
        return LAPICT_E_INVAL;
    cpu->nodes++;
    node->cpu = cpu;
    node->magic = BM_NODE_MAGIC;
    if (node->flags & BM_N_KEPT) {
        node->flags = 0;
        return lapict_bm_arm(node, node->deadline_host_ns);
    }
    return LAPICT_OK;
}

int lapict_bm_node_load(struct lapict_bm_node *node)
{
    struct lapict_bm_cpu *cpu;

    if (!node_ok(node) || node->cpu->in_service)
        return LAPICT_E_INVAL;
    cpu = node->cpu;
    if (cpu->guest && cpu->guest != node)
        return LAPICT_E_INVAL;
    cpu->guest = node;
    /* The core moves its software timer to the preemption timer. */
    if (node->timer && !node->fire)
        return lapict_vcpu_unblocked(node->timer);
    return LAPICT_OK;
}

int lapict_bm_node_put(struct lapict_bm_node *node)
{
    struct lapict_bm_cpu *cpu;
    int rc = LAPICT_OK;

    if (!node_ok(node) || node->cpu->in_service)
        return LAPICT_E_INVAL;
    cpu = node->cpu;
    /* The core moves a preemption-timer deadline to the heap. */
    if (node->timer && !node->fire)
        rc = lapict_vcpu_blocking(node->timer);
    if (cpu->guest == node)
        cpu->guest = NULL;
    /* Whatever the core did: a deadline off the heap is never left behind. */
    if (node->flags & BM_N_HV) {
        node->flags &= ~BM_N_HV;
        (void)lapict_bm_arm(node, node->deadline_host_ns);
    }
    return rc;
}

/* ---- servicing ------------------------------------------------------ */

static void fire(struct lapict_bm_node *node)
{
    if (node->fire)
        node->fire(node);
    else if (node->timer)
        lapict_expire(node->timer);
}

/*
 * Start loading the nodes that fire next: the top's, and its children's
 * (one of which is the top after it). A node's line is touched only
 * when its entry moves, so the next callbacks would otherwise often
 * start with a cache miss: at 10^5 timers this halves the cost of an
 * expiry (BENCHMARKS.md). Always inline: GCC finds a function of
 * prefetches alone free of side effects and drops its calls.
 */
static inline __attribute__((always_inline)) void
prefetch_next(const struct lapict_bm_cpu *cpu)
{
    const struct lapict_bm_slot *h = cpu->heap;

    switch (cpu->n < 1 + BM_ARITY ? cpu->n : 1 + BM_ARITY) {
    case 5:
        __builtin_prefetch(h[4].node);
        /* fall through */
    case 4:
        __builtin_prefetch(h[3].node);
        /* fall through */
    case 3:
        __builtin_prefetch(h[2].node);
        /* fall through */
    case 2:
        __builtin_prefetch(h[1].node);
        /* fall through */
    case 1:
        __builtin_prefetch(h[0].node);
        break;
    default:
        break;
    }
}

static int service(struct lapict_bm_cpu *cpu, bool irq)
{
    struct lapict_bm_node *g;
    uint32_t rounds = 0;
    bool fired = false;
    uint64_t cur, now;

    if (!cpu_ok(cpu) || cpu->in_service)
        return LAPICT_E_INVAL;
    cpu->in_service = 1;
    if (irq) {
        cpu->st.irqs++;
        /* A TSC-deadline timer that fired is disarmed (the MSR reads 0). */
        cpu->hw_armed = false;
    } else {
        cpu->st.preempt_exits++;
    }
    cur = cpu->hw->read_tsc(cpu->hw_ctx);
    now = lapict_bm_clock_ns(cpu->clock, cur);
    g = cpu->guest;
    if (g && (g->flags & BM_N_HV) && due(g->deadline_host_ns, now)) {
        /* Spent: the core re-arms it (usually the preemption timer again). */
        g->flags &= ~BM_N_HV;
        cpu->st.fired++;
        cpu->st.preempt_fired++;
        fired = true;
        fire(g);
    }
    while (cpu->n && due(cpu->heap[0].key_host_ns, now)) {
        /* Nodes armed from now on (re-arms by the callbacks) wait. */
        uint64_t round_seq = cpu->seq;

        if (rounds == cpu->max_rounds) {
            /* hw_program() writes a reached deadline: it fires again. */
            cpu->st.round_limits++;
            break;
        }
        rounds++;
        while (cpu->n && due(cpu->heap[0].key_host_ns, now)) {
            struct lapict_bm_node *node = cpu->heap[0].node;
            uint64_t seq = node->seq;
            if (seq >= round_seq)
                break;
            /*
             * The node counts as off the heap during its callback (see
             * cur_seq): lapict_expire() re-arms it, which moves its entry
             * down from the top in one sift (the common case), or cancels
             * it; host code may touch other nodes. Whatever it does, the
             * heap is consistent at every call.
             */
            cpu->cur = node;
            cpu->cur_seq = seq;
            cpu->st.fired++;
            fired = true;
            fire(node);
            cpu->cur = NULL;
            /* Neither re-armed nor cancelled: take it off now. */
            if (node->cpu == cpu && node->slot && node->seq == seq)
                heap_remove(cpu, node);
        }
        cur = cpu->hw->read_tsc(cpu->hw_ctx);
        now = lapict_bm_clock_ns(cpu->clock, cur);
    }
    if (!fired && irq)
        cpu->st.early_irqs++;
    cpu->in_service = 0;
    prefetch_next(cpu);
    hw_program(cpu, cur, now);
    if (irq)
        cpu->hw->eoi(cpu->hw_ctx);
    return LAPICT_OK;
}

int lapict_bm_timer_irq(struct lapict_bm_cpu *cpu)
{
    return service(cpu, true);
}

int lapict_bm_preempt_exit(struct lapict_bm_cpu *cpu)
{
    return service(cpu, false);
}

int lapict_bm_guest_entry(struct lapict_bm_cpu *cpu)
{
    const struct lapict_bm_node *g;
    uint64_t cur, key = 0, key_tsc = 0, t;
    bool hv;

    if (!cpu_ok(cpu))
        return LAPICT_E_INVAL;
    g = cpu->guest;
    hv = g && (g->flags & BM_N_HV);
    if (!cpu->hw->write_preempt || (cpu->n == 0 && !hv))
        return LAPICT_OK;
    cur = cpu->hw->read_tsc(cpu->hw_ctx);
    /*
     * The earliest of the heap's top and the loaded node's deadline, with
     * its TSC value as computed when it was armed (the LAPIC's for the
     * heap's top): an entry converts nothing on the common path.
     */
    if (hv) {
        key = g->deadline_host_ns;
        key_tsc = g->deadline_tsc;
    }
    if (cpu->n && (!hv || (int64_t)(cpu->heap[0].key_host_ns - key) < 0)) {
        key = cpu->heap[0].key_host_ns;
        key_tsc = cpu->hw_armed && cpu->hw_req_ns == key
                      ? cpu->hw_req_tsc
                      : lapict_bm_clock_tsc(cpu->clock, key);
    }
    if (due(key, lapict_bm_clock_ns(cpu->clock, cur))) {
        cpu->hw->write_preempt(cpu->hw_ctx, 0);
        return LAPICT_OK;
    }
    /*
     * Not reached: the TSC distance, unsigned (up to 64 bits, see
     * hw_program()). The count drops when bit preempt_shift of the TSC
     * changes, so the first step can come early: one extra tick, never
     * early. A distance past the largest count loads that count, whose
     * exit finds nothing due and loads it again.
     */
    t = (key_tsc - cur) >> cpu->preempt_shift;
    cpu->hw->write_preempt(cpu->hw_ctx,
                           t >= UINT32_MAX ? UINT32_MAX : (uint32_t)t + 1);
    return LAPICT_OK;
}

int lapict_bm_stats_get(const struct lapict_bm_cpu *cpu,
                        struct lapict_bm_stats *out)
{
    if (!cpu_ok(cpu) || !out)
        return LAPICT_E_INVAL;
    *out = cpu->st;
    out->armed = cpu->n;
    out->nodes = cpu->nodes;
    out->capacity = cpu->cap;
    return LAPICT_OK;
}

/* ---- the lapict ops of a node (ctx = node) ---------------------------- */

static uint64_t op_now_ns(void *ctx)
{
    const struct lapict_bm_node *node = ctx;
    return lapict_bm_now_ns(node->cpu);
}

static uint64_t op_guest_tsc(void *ctx)
{
    return lapict_bm_guest_tsc(ctx);
}

/*
 * Cannot fail for a node: it holds its heap slot from init (or attach), and
 * a detached one keeps the deadline for attach. The only error left is a
 * ctx that is not a node, which no report could reach.
 */
static void op_arm(void *ctx, uint64_t host_ns)
{
    (void)lapict_bm_arm(ctx, host_ns);
}

static void op_cancel(void *ctx)
{
    (void)lapict_bm_cancel(ctx);
}

/*
 * The core's hardware timer is the VMX-preemption timer of the loaded
 * vCPU: accepting an arm only stores the deadline, which
 * lapict_bm_guest_entry() loads at each VM entry. A node that is not
 * loaded refuses: its vCPU is not in the guest, where alone the
 * preemption timer counts, and the core takes the heap instead.
 */
static bool op_hv_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_bm_node *node = ctx;

    if (!node_ok(node) || node->cpu->guest != node ||
        !node->cpu->hw->write_preempt)
        return false;
    node->deadline_host_ns = host_ns;
    node->deadline_tsc = lapict_bm_clock_tsc(node->cpu->clock, host_ns);
    node->flags |= BM_N_HV;
    return true;
}

static void op_hv_cancel(void *ctx)
{
    struct lapict_bm_node *node = ctx;

    if (node_is(node))
        node->flags &= ~BM_N_HV;
}

/*
 * The first host ns at which the guest TSC reaches @d: find the first host
 * TSC h with guest(h) >= d (estimate, then correct with the forward map),
 * and return the first ns value that only TSC values >= h produce.
 *
 * A far @d is answered with an earlier instant, at most BM_FAR_TSC host
 * ticks and BM_FAR_NS ahead (lapict re-checks the TSC there). Far is
 * judged in host ticks: guest ticks and ns run at other rates (2^62 guest
 * ticks of a 3 GHz guest last 2^62 / 3 ns), and an answer past the
 * instant delivers the interrupt late.
 */
static uint64_t op_tsc_to_host_ns(void *ctx, uint64_t d)
{
    const struct lapict_bm_node *node = ctx;
    const struct lapict_bm_clock *clk = node->cpu->clock;
    uint64_t h0 = node->cpu->hw->read_tsc(node->cpu->hw_ctx);
    uint64_t g0 = guest_at(node, h0), dg = d - g0, h, dh, frac;
    bm_u128 e, p, far;
    int i;

    if (d <= g0)
        return lapict_bm_clock_ns(clk, h0);
    /*
     * dg guest ticks take dg * 2^48 / ratio host ticks, less the fraction
     * of a guest tick already elapsed at h0 (the low 48 bits of the
     * scaled product). Both products are below 2^126 (tsc_inv < 2^62).
     */
    frac = (uint64_t)((bm_u128)h0 * node->tsc_ratio) & ((1ull << 48) - 1);
    e = ((bm_u128)dg * node->tsc_inv) >> node->tsc_inv_shift;
    p = ((bm_u128)frac * node->tsc_inv) >> (48 + node->tsc_inv_shift);
    /*
     * Far: e - p is short of the host ticks needed, or over by less than
     * two (both rounded down), so h0 + e - p - 2 lies before the first
     * tick that reaches @d and its ns cannot be later than the answer.
     * Guest distances of 2^63 and more go the same way, so that the
     * corrections below never see one wrap.
     */
    if (e > p + BM_FAR_TSC || dg >= BM_FAR_GUEST) {
        e = e > p + 2 ? e - p - 2 : 0;
        far = clk_f(clk, e > BM_FAR_TSC ? BM_FAR_TSC : (uint64_t)e);
        return lapict_bm_clock_ns(clk, h0) +
               (far > BM_FAR_NS ? BM_FAR_NS : (uint64_t)far);
    }
    dh = e > p + 1 ? (uint64_t)(e - p) : 1;
    h = h0 + dh;
    for (i = 0;
         i < BM_FIX_STEPS && h != h0 + 1 && guest_at(node, h - 1) - g0 >= dg;
         i++)
        h--;
    for (i = 0; i < BM_FIX_STEPS && guest_at(node, h) - g0 < dg; i++)
        h++;
    return lapict_bm_clock_ns(clk, h - 1) + 1;
}

static void op_spin_until(void *ctx, uint64_t host_ns)
{
    const struct lapict_bm_node *node = ctx;
    const struct lapict_bm_cpu *cpu = node->cpu;
    uint64_t t0 = cpu->hw->read_tsc(cpu->hw_ctx), ticks;

    /* The ticks from t0 to the instant, unsigned (see hw_program()). */
    if (due(host_ns, lapict_bm_clock_ns(cpu->clock, t0)))
        return;
    ticks = lapict_bm_clock_tsc(cpu->clock, host_ns) - t0;
    while (cpu->hw->read_tsc(cpu->hw_ctx) - t0 < ticks) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

void lapict_bm_ops_fill(struct lapict_ops *ops,
                        bool (*inject)(void *node, uint8_t vector),
                        void (*report)(void *node, int status, uint32_t detail))
{
    if (!ops)
        return;
    *ops = (struct lapict_ops){0};
    ops->version = LAPICT_OPS_VERSION;
    ops->now_ns = op_now_ns;
    ops->guest_tsc = op_guest_tsc;
    ops->sw_timer_arm = op_arm;
    ops->sw_timer_cancel = op_cancel;
    ops->inject = inject;
    ops->spin_until = op_spin_until;
    ops->report = report;
    ops->tsc_to_host_ns = op_tsc_to_host_ns;
}

void lapict_bm_ops_fill_preempt(struct lapict_ops *ops,
                                bool (*inject)(void *node, uint8_t vector),
                                void (*report)(void *node, int status,
                                               uint32_t detail))
{
    if (!ops)
        return;
    lapict_bm_ops_fill(ops, inject, report);
    ops->hv_timer_arm = op_hv_arm;
    ops->hv_timer_cancel = op_hv_cancel;
}
