/* SPDX-License-Identifier: MIT */
/*
 * The hot-path operations of lapict-bench, shared by the timing
 * (hotpath.c), callgrind and stack (memory.c) parts.
 */
#ifndef LAPICT_BENCH_HOTPATH_H
#define LAPICT_BENCH_HOTPATH_H

#include <stdint.h>

#include <lapict/lapict.h>

#include "lapict_sim.h"

/* The division baseline: the same state, conversions by hardware divide. */
struct base {
    const struct lapict_ops *ops;
    void *ctx;
    uint64_t bus_p, bus_q; /* ticks = ns * p / q */
    uint64_t tsc_a, tsc_b; /* ns = tsc * a / b */
    unsigned div;          /* divider log2 */
    uint64_t anchor, e_tick, next_rel, deadline, instant;
    uint32_t tmict, adv;
    int armed, preinj;
};

struct bctx {
    /* The host: the simulated one, whose clock the bench moves by hand. */
    struct lapict_sim h;
    struct lapict_timer t, t2;
    struct base b;
    uint8_t blob[LAPICT_STATE_SIZE];
    uint64_t pnext, sink;
};

struct bench_op {
    const char *name;
    /* The library function whose inclusive cost is the op (callgrind). */
    const char *fn;
    /* Its baseline twin, or NULL when there is no conversion to compare. */
    const char *base_fn;
    void (*init)(struct bctx *c);
    /* Untimed preparation of iteration @i (NULL: none); timed as a pair
     * and subtracted. */
    void (*setup)(struct bctx *c, uint32_t i);
    void (*op)(struct bctx *c, uint32_t i);
    void (*base_setup)(struct bctx *c, uint32_t i);
    void (*base_op)(struct bctx *c, uint32_t i);
};

extern const struct bench_op bench_ops[];
extern const unsigned bench_nops;

#endif /* LAPICT_BENCH_HOTPATH_H */
