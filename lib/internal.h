/* SPDX-License-Identifier: MIT */
/*
 * What every file of lib/ shares: the instance's flag bits and constants,
 * and small helpers that call nothing. Not installed. Symbols of lib/ use
 * the lapict__ prefix and are hidden (the library is built with hidden
 * visibility). Each file's interface to the others is in its own header:
 * math.h, clock.h, ops.h, advance.h, config.h, timer.h.
 */
#ifndef LAPICT__INTERNAL_H
#define LAPICT__INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lapict/lapict.h>

#ifndef __SIZEOF_INT128__
#error "lapict needs a compiler with unsigned __int128 (128-bit multiply)"
#endif

typedef unsigned __int128 lapict__u128;

#define LAPICT__MAGIC 0x4C415049u /* "LAPI": instance initialised */
/*
 * Held in place of the magic while one of the instance's ops runs, so that
 * a call into the library from inside an op (re-entry) fails the validity
 * test: LAPICT_E_REENTRY, nothing touched (<lapict/ops.h>).
 */
#define LAPICT__MAGIC_IN_OP 0x4C41504Fu

/* Bits of struct lapict_timer.flags. */
#define LAPICT__F_SVR_EN 0x0001u    /* APIC software-enabled */
#define LAPICT__F_CD_ACTIVE 0x0002u /* count-down defined (TMCCT computed) */
#define LAPICT__F_CD_ARMED 0x0004u  /* count-down has an unprocessed expiry */
#define LAPICT__F_CLAMPED 0x0008u   /* periodic slowed to min_period_ns */
#define LAPICT__F_DL_ARMED 0x0010u  /* TSC deadline armed */
#define LAPICT__F_BLOCKED 0x0020u   /* vCPU halted */
#define LAPICT__F_PREINJ 0x0040u    /* next expiry injected ahead (advance) */
#define LAPICT__F_SAMPLE 0x0080u    /* measure arrival at next entry */
#define LAPICT__F_HAVE_EST 0x0200u  /* adaptive tuner has an estimate */
#define LAPICT__F_DL_OK 0x0400u     /* config: TSC-deadline supported */
#define LAPICT__F_EXPIRED 0x0800u   /* last_instant_ns holds an expiry */
/* The expiry injected ahead came with a restored blob: its entry wait is
 * bounded by the blob's advance (at most LAPICT_ADVANCE_NS_LIMIT), not by
 * this instance's. */
#define LAPICT__F_PREINJ_KEPT 0x1000u
/* The guest TSC was found off tsc_khz and reported (once per instance). */
#define LAPICT__F_TSC_REPORTED 0x2000u

/* struct lapict_timer.armed: which host timer is armed (ops.c). */
#define LAPICT__ARMED_NONE 0
#define LAPICT__ARMED_SW 1
#define LAPICT__ARMED_HV 2

/*
 * A periodic count-down's tick E grows by N per period; past this it is
 * re-based (anchor moved forward by an exact number of ns) so that E stays
 * small however long the timer runs.
 */
#define LAPICT__REBASE_TICKS (1ull << 40)

/*
 * The horizon (<lapict/ops.h>): a host timer is never armed further than
 * 2^62 ns (146 years) ahead; an instant beyond is re-checked there, never
 * taken for one that is near.
 */
#define LAPICT__FAR_NS (1ull << 62)

/*
 * Inlined into every entry point that uses it: the hot paths are short
 * chains of small steps, and a call per step, with its saves and
 * restores, would cost more than the step.
 */
#ifdef __OPTIMIZE__
#define LAPICT__HOT inline __attribute__((always_inline))
#else
/* -O0 (debug, coverage): one copy per function, branches counted once. */
#define LAPICT__HOT inline
#endif

/* Saturating counter increment (statistics only: never a decision). */
#define LAPICT__INC(x) ((x) += ((x) != UINT64_MAX))

/* a + b, saturating: every count of expiries, not only the statistics. */
static inline uint64_t lapict__sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline void lapict__add_sat(uint64_t *c, uint64_t n)
{
    *c = lapict__sat_add(*c, n);
}

/* The statistics counters: indexes of struct lapict_timer.counts. */
enum lapict__count {
    LAPICT__N_EXPIRIES,
    LAPICT__N_INJECTIONS,
    LAPICT__N_REFUSED,
    LAPICT__N_MASKED,
    LAPICT__N_COALESCED,
    LAPICT__N_DROPPED,
    LAPICT__N_ILLEGAL_VECTOR,
    LAPICT__N_MODE_ERRORS,
    LAPICT__N_CLAMPS,
    LAPICT__N_HV_TO_SW,
    LAPICT__N_SW_TO_HV,
    LAPICT__N_HV_REFUSED,
    LAPICT__N_SPINS,
    LAPICT__N_COUNTS
};
_Static_assert(LAPICT__N_COUNTS == sizeof(((struct lapict_timer *)0)->counts) /
                                       sizeof(uint64_t),
               "one counter of struct lapict_timer per enum lapict__count");

/* Count one event of kind @n (saturating: a statistic, never a decision). */
static inline void lapict__count(struct lapict_timer *t, enum lapict__count n)
{
    LAPICT__INC(t->counts[n]);
}

/* Count @k events of kind @n, saturating. */
static inline void lapict__count_add(struct lapict_timer *t,
                                     enum lapict__count n, uint64_t k)
{
    lapict__add_sat(&t->counts[n], k);
}

/* Whether @t is an initialised instance, not inside one of its ops. */
static inline bool lapict__valid(const struct lapict_timer *t)
{
    /* The magic is only ever set together with a checked ops table. */
    return t && t->magic == LAPICT__MAGIC;
}

/*
 * The status of a call refused by lapict__valid(): LAPICT_E_REENTRY when
 * it comes from inside one of the instance's own ops, else LAPICT_E_INVAL
 * (NULL, uninitialised or finished instance, or another bad argument).
 */
static inline int lapict__invalid(const struct lapict_timer *t)
{
    return t && t->magic == LAPICT__MAGIC_IN_OP ? LAPICT_E_REENTRY
                                                : LAPICT_E_INVAL;
}

#endif /* LAPICT__INTERNAL_H */
