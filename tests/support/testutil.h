/* SPDX-License-Identifier: MIT */
/* Shared helpers of the cmocka core tests. */
#ifndef LAPICT_TEST_TESTUTIL_H
#define LAPICT_TEST_TESTUTIL_H

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <string.h>

#include <lapict/lapict.h>

#include "fake_host.h"
#include "oracle.h"
#include "tu_main.h"

/* Host clock bases every time-dependent test runs at. */
#define TU_NEAR_WRAP (UINT64_MAX - 1000000u)
static const uint64_t tu_bases[] = {0, TU_NEAR_WRAP};
#define TU_NBASES (sizeof(tu_bases) / sizeof(tu_bases[0]))

/*
 * A rule that depends on the clock runs once per base: TU_AT_BASES(fn) in
 * a test table gives fn two entries, "fn at 0" and "fn near 2^64", whose
 * state carries the base; fn reads it with tu_base_index(state) (an index
 * into tu_bases, which tests also use to pick other per-base settings).
 * The index is stored plus one: cmocka hands a NULL initial state on as
 * "no state".
 */
/* clang-format off */
#define TU_BASE_ENTRY(fn, name, i)                                             \
    { #fn name, fn, NULL, NULL, (void *)(uintptr_t)((i) + 1) }
/* clang-format on */
#define TU_AT_BASES(fn)                                                        \
    TU_BASE_ENTRY(fn, " at 0", 0), TU_BASE_ENTRY(fn, " near 2^64", 1)

static inline size_t tu_base_index(void **state)
{
    return (size_t)((uintptr_t)*state - 1);
}

/*
 * Defaults, a 1 GHz guest TSC (the defaults state no rate), and no minimum
 * period: most tests want the raw count-down.
 */
static inline struct lapict_config tu_cfg(void)
{
    struct lapict_config c;
    lapict_config_default(&c);
    c.tsc_khz = 1000000u;
    c.min_period_ns = 0;
    return c;
}

static inline struct lapict_stats tu_stats(const struct lapict_timer *t)
{
    struct lapict_stats s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(lapict_stats_get(t, &s, sizeof(s)), LAPICT_OK);
    return s;
}

/* A host at @base (TSC 1 GHz unless the config says otherwise) + instance. */
static inline void tu_setup(struct fake_host *h, struct lapict_timer *t,
                            const struct lapict_config *c, uint64_t base,
                            bool hv)
{
    fake_host_init(h, base, c ? c->tsc_khz : 1000000u, 0, hv);
    assert_int_equal(fake_attach(h, t, c), LAPICT_OK);
}

/* Invariants every test checks at its end. */
static inline void tu_check_host(const struct fake_host *h)
{
    assert_int_equal(h->sim.both_armed, 0);
    assert_false(h->sim.livelocks);
}

/*
 * The fixture of a rule on one instance: a host at a base of tu_bases with
 * the tu_cfg() instance bound to it, and the host invariants checked
 * after the test. TU_FIXED_AT_BASES(fn, hv) gives fn one entry per base,
 * hv saying at which bases the host offers the hardware timer (a rule
 * that holds either way is checked with each at one base).
 */
struct tu_fix {
    struct fake_host h;
    struct lapict_timer t;
    size_t b;                 /* index into tu_bases */
    uint64_t base;            /* tu_bases[b] */
    struct lapict_config cfg; /* the instance's */
};

enum tu_hv { TU_HV_NEVER, TU_HV_ALWAYS, TU_HV_AT_0, TU_HV_NEAR_2_64 };

/* The fixture's setup with a config other than tu_cfg(). */
static inline int tu_fix_setup_cfg(void **state, const struct lapict_config *c)
{
    uintptr_t v = (uintptr_t)*state - 1;
    size_t b = v % TU_NBASES;
    enum tu_hv hv = (enum tu_hv)(v / TU_NBASES);
    struct tu_fix *f = test_malloc(sizeof(*f));

    f->b = b;
    f->base = tu_bases[b];
    f->cfg = *c;
    tu_setup(&f->h, &f->t, c, tu_bases[b],
             hv == TU_HV_ALWAYS || (hv == TU_HV_AT_0 && b == 0) ||
                 (hv == TU_HV_NEAR_2_64 && b == 1));
    *state = f;
    return 0;
}

static inline int tu_fix_setup(void **state)
{
    struct lapict_config c = tu_cfg();
    return tu_fix_setup_cfg(state, &c);
}

static inline int tu_fix_teardown(void **state)
{
    struct tu_fix *f = *state;
    tu_check_host(&f->h);
    test_free(f);
    return 0;
}

/*
 * TU_FIX(state) in a test of TU_FIXED_AT_BASES declares f, the fixture,
 * and h and t, its host and instance.
 */
#define TU_FIX(state)                                                          \
    struct tu_fix *f = *(state);                                               \
    struct fake_host *h = &f->h;                                               \
    struct lapict_timer *t = &f->t;                                            \
    (void)f, (void)h, (void)t

/*
 * TU_SETUP(name, changes...) defines the fixture setup @name: tu_cfg()
 * as c, changed by the statements @changes, bound by tu_fix_setup_cfg().
 * TU_SETUP_WITH(name, bind, changes...) binds with @bind instead.
 */
#define TU_SETUP_WITH(name, bind, ...)                                         \
    static int name(void **state)                                              \
    {                                                                          \
        struct lapict_config c = tu_cfg();                                     \
        __VA_ARGS__;                                                           \
        return bind(state, &c);                                                \
    }
#define TU_SETUP(name, ...) TU_SETUP_WITH(name, tu_fix_setup_cfg, __VA_ARGS__)

/* clang-format off */
#define TU_FIX_ENTRY(fn, name, i, hv, setup)                                   \
    { #fn name, fn, setup, tu_fix_teardown,                                    \
      (void *)(uintptr_t)(1 + (i) + TU_NBASES * (hv)) }
/* clang-format on */
/* As TU_FIXED_AT_BASES, with a setup that calls tu_fix_setup_cfg(). */
#define TU_FIXED_AT_BASES_WITH(fn, hv, setup)                                  \
    TU_FIX_ENTRY(fn, " at 0", 0, hv, setup),                                   \
        TU_FIX_ENTRY(fn, " near 2^64", 1, hv, setup)
#define TU_FIXED_AT_BASES(fn, hv) TU_FIXED_AT_BASES_WITH(fn, hv, tu_fix_setup)
/* A rule whose checks depend on the hardware timer: with and without it. */
#define TU_FIXED_WITH_AND_WITHOUT_HV(fn)                                       \
    TU_FIX_ENTRY(fn, " with hv at 0", 0, TU_HV_ALWAYS, tu_fix_setup),          \
        TU_FIX_ENTRY(fn, " with hv near 2^64", 1, TU_HV_ALWAYS, tu_fix_setup), \
        TU_FIX_ENTRY(fn, " without hv at 0", 0, TU_HV_NEVER, tu_fix_setup),    \
        TU_FIX_ENTRY(fn, " without hv near 2^64", 1, TU_HV_NEVER,              \
                     tu_fix_setup)

/*
 * The fixture of a save/restore rule: two simulated hosts, each with its
 * own clock and guest TSC, and an instance on each with the config c.
 * The source ha/ta runs at a base of tu_bases with the software timer
 * only; the destination hb/tb at the other base, offering the hardware
 * timer too. A test that wants another destination (another base, guest
 * TSC or config) binds tb again with tu_pair_dst() or tu_setup().
 * TU_PAIR(state) declares p, ha, hb, ta, tb and c in a test;
 * TU_PAIR_AT_BASES(fn) gives fn one entry per source base, and
 * TU_PAIR_SETUP(name, changes...) a setup whose config is tu_cfg() changed
 * by the statements @changes.
 */
struct tu_pair {
    struct fake_host ha, hb;
    struct lapict_timer ta, tb;
    struct lapict_config c;
    size_t b; /* the source's index into tu_bases */
};

static inline int tu_pair_setup_cfg(void **state, const struct lapict_config *c)
{
    size_t b = (size_t)((uintptr_t)*state - 1);
    struct tu_pair *p = test_malloc(sizeof(*p));

    p->b = b;
    p->c = *c;
    tu_setup(&p->ha, &p->ta, c, tu_bases[b], false);
    tu_setup(&p->hb, &p->tb, c, tu_bases[1 - b], true);
    *state = p;
    return 0;
}

static inline int tu_pair_teardown(void **state)
{
    struct tu_pair *p = *state;
    tu_check_host(&p->ha);
    tu_check_host(&p->hb);
    test_free(p);
    return 0;
}

/*
 * Bind the destination again: a fresh host at @base whose guest TSC reads
 * @tsc there, offering the hardware timer if @hv.
 */
static inline void tu_pair_dst(struct tu_pair *p, uint64_t base, uint64_t tsc,
                               bool hv)
{
    fake_host_init(&p->hb, base, p->c.tsc_khz, tsc, hv);
    assert_int_equal(fake_attach(&p->hb, &p->tb, &p->c), LAPICT_OK);
}

#define TU_PAIR_SETUP(name, ...)                                               \
    TU_SETUP_WITH(name, tu_pair_setup_cfg, __VA_ARGS__)

static inline int tu_pair_setup(void **state)
{
    struct lapict_config c = tu_cfg();
    return tu_pair_setup_cfg(state, &c);
}

#define TU_PAIR(state)                                                         \
    struct tu_pair *p = *(state);                                              \
    struct fake_host *ha = &p->ha, *hb = &p->hb;                               \
    struct lapict_timer *ta = &p->ta, *tb = &p->tb;                            \
    struct lapict_config *c = &p->c;                                           \
    (void)ha, (void)hb, (void)ta, (void)tb, (void)c

/* clang-format off */
#define TU_PAIR_AT_BASES_WITH(fn, setup)                                       \
    { #fn " at 0", fn, setup, tu_pair_teardown, (void *)(uintptr_t)1 },        \
    { #fn " near 2^64", fn, setup, tu_pair_teardown, (void *)(uintptr_t)2 }
/* clang-format on */
#define TU_PAIR_AT_BASES(fn) TU_PAIR_AT_BASES_WITH(fn, tu_pair_setup)

/* Everything a guest can read of the timer, for before/after comparisons. */
struct tu_regs {
    uint32_t lvtt, tdcr, tmict, tmcct;
    uint64_t deadline;
};

static inline struct tu_regs tu_read_regs(struct lapict_timer *t)
{
    struct tu_regs r;
    r.lvtt = lapict_lvtt_read(t);
    r.tdcr = lapict_tdcr_read(t);
    r.tmict = lapict_tmict_read(t);
    r.tmcct = lapict_tmcct_read(t);
    r.deadline = lapict_tsc_deadline_read(t);
    return r;
}

static inline void tu_assert_regs_equal(struct tu_regs a, struct tu_regs b)
{
    assert_int_equal(a.lvtt, b.lvtt);
    assert_int_equal(a.tdcr, b.tdcr);
    assert_int_equal(a.tmict, b.tmict);
    assert_int_equal(a.tmcct, b.tmcct);
    assert_int_equal(a.deadline, b.deadline);
}

#endif /* LAPICT_TEST_TESTUTIL_H */
