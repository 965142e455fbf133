/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces shared by the files of lib/. Not installed. Symbols
 * declared here are hidden (the library is built with hidden visibility)
 * and use the lapict__ prefix.
 */
#ifndef LAPICT_INTERNAL_H
#define LAPICT_INTERNAL_H

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
 * test: LAPICT_E_REENTRY, nothing touched (ops.h).
 */
#define LAPICT__MAGIC_IN_OP 0x4C41504Fu

/* Bits of struct lapict_timer.flags. */
#define LAPICT__F_SVR_EN 0x0001u   /* APIC software-enabled */
#define LAPICT__F_CD_ACTIVE 0x0002u /* count-down defined (TMCCT computed) */
#define LAPICT__F_CD_ARMED 0x0004u  /* count-down has an unprocessed expiry */
#define LAPICT__F_CLAMPED 0x0008u   /* periodic slowed to min_period_ns */
#define LAPICT__F_DL_ARMED 0x0010u  /* TSC deadline armed */
#define LAPICT__F_BLOCKED 0x0020u   /* vCPU halted */
#define LAPICT__F_PREINJ 0x0040u    /* next expiry injected ahead (advance) */
#define LAPICT__F_SAMPLE 0x0080u    /* measure arrival at next entry */
/* 0x0100 was "host timer consumed": now an argument (see host_arm). */
#define LAPICT__F_HAVE_EST 0x0200u  /* adaptive tuner has an estimate */
#define LAPICT__F_DL_OK 0x0400u     /* config: TSC-deadline supported */
#define LAPICT__F_EXPIRED 0x0800u   /* last_instant_ns holds an expiry */
/* The expiry injected ahead came with a restored blob: its entry wait is
 * bounded by the blob's advance (at most LAPICT_ADVANCE_NS_LIMIT), not by
 * this instance's. */
#define LAPICT__F_PREINJ_KEPT 0x1000u
/* The guest TSC was found off tsc_khz and reported (once per instance). */
#define LAPICT__F_TSC_REPORTED 0x2000u

/* struct lapict_timer.armed */
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
 * The horizon (ops.h): a host timer is never armed further than 2^62 ns
 * (146 years) ahead; an instant beyond is re-checked there, never taken
 * for one that is near.
 */
#define LAPICT__FAR_NS (1ull << 62)

/*
 * Inlined into every entry point that uses it: the hot paths are short
 * chains of small steps, and a call per step (with its saves and restores)
 * was a third of their instructions.
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

/*
 * The one horizon rule of host time (ops.h): on the wrapping 64-bit clock,
 * instant a is at or after instant b when a - b, read as signed, is not
 * negative. Every comparison of host instants goes through here.
 */
static inline bool lapict__after_eq(uint64_t a, uint64_t b)
{
    return (int64_t)(a - b) >= 0;
}

/* ---- config.c ---- */

/*
 * Read a host's configuration of any accepted size (config.h) into @out,
 * this library's struct: LAPICT_E_INVAL for a size it refuses.
 */
int lapict__config_load(const struct lapict_config *in,
                        struct lapict_config *out);

/* ---- math.c: exact integer conversions without a 128-bit divide ---- */

/*
 * Reciprocal for division by @d (1 <= d < 2^64): 0 for a power of two
 * (then divided by its shift), else floor(2^64 / d). Init-time only.
 */
uint64_t lapict__recip(uint64_t d);
/* 5^b and floor(2^64 / 5^b) (0 for b = 0), b = 0..9: 10^9 = 2^9 5^9. */
extern const uint64_t lapict__pow5[10], lapict__pow5_recip[10];
/* Exact floor(n / d) by shift-subtract; slow path only. Saturates. */
uint64_t lapict__udiv128(lapict__u128 n, uint64_t d);
/* The same, all 128 bits of the quotient. */
lapict__u128 lapict__udiv128_wide(lapict__u128 n, uint64_t d);
/* Greatest common divisor (init only). */
uint64_t lapict__gcd(uint64_t a, uint64_t b);
/* CRC-32 (IEEE 802.3, reflected) of @len bytes. */
uint32_t lapict__crc32(const uint8_t *p, size_t len);

/*
 * floor(n / d), all 128 bits, with the reciprocal r = floor(2^64 / d)
 * prepared by lapict__recip_init(). Inline: this is every conversion of
 * every hot path. With 2^64 = r d + s (0 < s < d), a numerator
 * h 2^64 + l is h r d + (h s + l): h r goes to the quotient and h s + l,
 * which has fewer high bits (s < d), is reduced again. For the divisors
 * the core uses (below 2^35) that takes at most four rounds, each one
 * 64x64 multiply pair; the last, 64-bit numerator n0 gives
 * floor(n0 r / 2^64), which is floor(n0 / d) or one less: one correction.
 */
static inline lapict__u128 lapict__div128(lapict__u128 n, uint64_t d,
                                          uint64_t r)
{
    lapict__u128 q = 0;
    uint64_t n0, q0;

    if (r == 0)
        return n >> __builtin_ctzll(d); /* d a power of two */
    while ((n >> 64) != 0) {
        uint64_t h = (uint64_t)(n >> 64), s = 0 - r * d; /* 2^64 mod d */
        q += (lapict__u128)h * r;
        n = (lapict__u128)h * s + (uint64_t)n;
    }
    n0 = (uint64_t)n;
    q0 = (uint64_t)(((lapict__u128)n0 * r) >> 64);
    if (n0 - q0 * d >= d)
        q0++;
    return q + q0;
}

/* floor(n / d); saturates at UINT64_MAX. */
static inline uint64_t lapict__div_floor(lapict__u128 n, uint64_t d,
                                         uint64_t r)
{
    lapict__u128 q = lapict__div128(n, d, r);
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* ceil(n / d), same conditions; n < 2^127. */
static inline uint64_t lapict__div_ceil(lapict__u128 n, uint64_t d,
                                        uint64_t r)
{
    return lapict__div_floor(n + (d - 1), d, r);
}

/* ---- ops.c: the one choke point between core and host ---- */

static inline uint64_t lapict__now(const struct lapict_timer *t)
{
    return t->ops->now_ns(t->ctx);
}

static inline uint64_t lapict__tsc(const struct lapict_timer *t)
{
    return t->ops->guest_tsc(t->ctx);
}

/*
 * An op that may act (arm, cancel, inject, spin, report) runs between these
 * two: a call into the library from inside it finds no valid instance.
 */
static inline void lapict__op_enter(struct lapict_timer *t)
{
    t->magic = LAPICT__MAGIC_IN_OP;
}

static inline void lapict__op_leave(struct lapict_timer *t)
{
    t->magic = LAPICT__MAGIC;
}

/*
 * Arm the host timer for @target (hardware if allowed, else software).
 * @spent: the host timer that called into the library has fired, so it is
 * armed again even for the same target (lapict_expire()).
 */
void lapict__host_arm(struct lapict_timer *t, uint64_t target, bool spent);

void lapict__host_cancel(struct lapict_timer *t);

/* Move the armed timer to match the blocked state. */
void lapict__host_move(struct lapict_timer *t);

static inline bool lapict__inject(struct lapict_timer *t, uint8_t vector)
{
    bool ok;

    lapict__op_enter(t);
    ok = t->ops->inject(t->ctx, vector);
    lapict__op_leave(t);
    if (ok) {
        LAPICT__INC(t->c.injections);
        return true;
    }
    LAPICT__INC(t->c.refused);
    return false;
}

static inline void lapict__spin_until(struct lapict_timer *t,
                                      uint64_t host_ns)
{
    uint64_t now, d, v;

    if (!t->ops->spin_until)
        return; /* e.g. a pre-injection restored on a host without one */
    now = lapict__now(t);
    LAPICT__INC(t->c.spins);
    /* The wait asked of the host: what the advance costs it. */
    d = lapict__after_eq(now, host_ns) ? 0 : host_ns - now;
    v = t->spin_ns + d;
    t->spin_ns = v < d ? UINT64_MAX : v;
    lapict__op_enter(t);
    t->ops->spin_until(t->ctx, host_ns);
    lapict__op_leave(t);
}

/* Without a spin op the core cannot wait before entry: no advance. */
static inline bool lapict__can_spin(const struct lapict_timer *t)
{
    return t->ops->spin_until != NULL;
}
void lapict__report(struct lapict_timer *t, int status, uint32_t detail);

/* ---- timer.c: the state machine ---- */

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

/* Divider log2 for a TDCR value (0..7 for divide 1..128). */
static inline unsigned lapict__div_log2(uint32_t tdcr)
{
    /* TDCR bits 3,1,0 index 2,4,8,16,32,64,128,1: log2 is (index+1) mod 8. */
    unsigned idx = ((tdcr >> 1) & 4u) | (tdcr & 3u);
    return (idx + 1u) & 7u;
}

/* Set TDCR (stored bits only) and the divider shift with it. */
static inline void lapict__set_tdcr(struct lapict_timer *t, uint32_t tdcr)
{
    t->tdcr = (uint8_t)tdcr;
    t->div_shift = (uint8_t)lapict__div_log2(tdcr);
}

/*
 * ns elapsed since the anchor; 0 while the anchor is ahead of @now by the
 * horizon rule (a clock behind it, or a stall of 2^63 ns or more, which
 * the rule cannot tell apart): never a huge elapsed time, so never early.
 */
static inline uint64_t lapict__elapsed(const struct lapict_timer *t,
                                       uint64_t now)
{
    uint64_t d = now - t->anchor_ns;
    return lapict__after_eq(now, t->anchor_ns) ? d : 0;
}

/* Clamped clock (slowed to min_period_ns): the slow, rare path. */
uint64_t lapict__ticks_in_clamped(const struct lapict_timer *t, uint64_t d);
uint64_t lapict__ns_for_clamped(const struct lapict_timer *t, uint64_t n);

/* floor(n / bus_q): bus_q = 2^k 5^b divides 10^9 (reduced bus_hz / 10^9). */
static inline lapict__u128 lapict__div_bus_q(const struct lapict_timer *t,
                                             lapict__u128 n)
{
    unsigned k = (unsigned)__builtin_ctz(t->bus_q);

    /* A 64-bit numerator (the common case) shifts as 64 bits. */
    n = (n >> 64) == 0 ? (uint64_t)n >> k : n >> k;
    return lapict__div128(n, lapict__pow5[t->bus_q5],
                          lapict__pow5_recip[t->bus_q5]);
}

/* Timer ticks elapsed in @d ns of the current clock (clamp included). */
static inline uint64_t lapict__ticks_in(const struct lapict_timer *t,
                                        uint64_t d)
{
    lapict__u128 raw;

    if (t->flags & LAPICT__F_CLAMPED)
        return lapict__ticks_in_clamped(t, d);
    /* floor(floor(x) / 2^k) = floor(x / 2^k): divide the bus ticks. */
    raw = lapict__div_bus_q(t, (lapict__u128)d * t->bus_p) >> t->div_shift;
    return raw > UINT64_MAX ? UINT64_MAX : (uint64_t)raw;
}

/* Unclamped ns_for with the current divider. */
static inline uint64_t lapict__ns_for_raw(const struct lapict_timer *t,
                                          uint64_t n)
{
    /* bus_q < 2^32 and the shift <= 7: the scaled factor fits 64 bits. */
    lapict__u128 m = (lapict__u128)n * ((uint64_t)t->bus_q << t->div_shift);
    return lapict__div_ceil(m, t->bus_p, t->bus_rp);
}

/* First ns at which @n ticks of the current clock have elapsed. */
static inline uint64_t lapict__ns_for(const struct lapict_timer *t,
                                      uint64_t n)
{
    if (t->flags & LAPICT__F_CLAMPED)
        return lapict__ns_for_clamped(t, n);
    return lapict__ns_for_raw(t, n);
}

/* ns until the guest TSC advances by @d ticks (rounded up). */
static inline uint64_t lapict__ns_from_tsc(const struct lapict_timer *t,
                                           uint64_t d)
{
    return lapict__div_ceil((lapict__u128)d * 1000000u, t->tsc_khz,
                            t->tsc_r);
}

/*
 * Host instant at which the guest TSC reaches @d (now <= result), at most
 * LAPICT__FAR_NS ahead.
 */
static LAPICT__HOT uint64_t lapict__deadline_ns(const struct lapict_timer *t,
                                               uint64_t now, uint64_t tsc,
                                               uint64_t d)
{
    uint64_t rem = 0;

    if (tsc >= d)
        return now;
    /*
     * Beyond the horizon by tsc_khz (ceil((d - tsc) 10^6 / tsc_khz) > FAR): "not
     * yet", re-checked at the horizon. The host's answer is not asked: an
     * instant past 2^64 ns wraps to one that can look near.
     */
    if ((lapict__u128)(d - tsc) * 1000000u >
        (lapict__u128)LAPICT__FAR_NS * t->tsc_khz)
        return now + LAPICT__FAR_NS;
    if (t->ops->tsc_to_host_ns) {
        /* The host knows its TSC mapping exactly, phase included. */
        uint64_t at = t->ops->tsc_to_host_ns(t->ctx, d);
        rem = lapict__after_eq(now, at) ? 0 : at - now;
    }
    /* No host answer, or one already past while the TSC is still short. */
    if (rem == 0 || rem > LAPICT__FAR_NS)
        rem = lapict__ns_from_tsc(t, d - tsc);
    return now + (rem > LAPICT__FAR_NS ? LAPICT__FAR_NS : rem);
}

/*
 * Has the armed deadline been reached at @now, the guest TSC reading
 * @tsc? Mostly tsc >= D. But the TSC wraps at 2^64: a deadline reached
 * just before the wrap and serviced after it reads tsc < D. It counts as
 * reached when its host instant has passed and the TSC is above D modulo
 * 2^64 by no more than that lateness explains (twice it, plus two ticks of
 * slack for an estimated instant). A deadline not reached reads about 2^64
 * ticks "above" modulo 2^64 and never passes that test, except one armed
 * near 2^64 ticks ahead and re-checked at the horizon after a stall of
 * 2^61 ns or more. Register writes keep the plain section 4 compare.
 */
static LAPICT__HOT bool lapict__dl_reached(const struct lapict_timer *t,
                                           uint64_t now, uint64_t tsc)
{
    uint64_t late;

    if (tsc >= t->deadline_tsc)
        return true;
    if (!lapict__after_eq(now, t->dl_ns))
        return false;
    late = now - t->dl_ns;
    return (lapict__u128)lapict__ns_from_tsc(t, tsc - t->deadline_tsc) <=
           (lapict__u128)2 * late + lapict__ns_from_tsc(t, 2);
}

/* Current count at @now. */
uint32_t lapict__tmcct(const struct lapict_timer *t, uint64_t now);
/* Should a periodic count of N be clamped with the current divider? */
static LAPICT__HOT bool lapict__needs_clamp(const struct lapict_timer *t)
{
    return (t->lvtt & LAPICT_LVTT_MODE) == LAPICT_LVTT_PERIODIC && t->tmict &&
           t->min_period_ns &&
           lapict__ns_for_raw(t, t->tmict) < t->min_period_ns;
}

/* Re-anchor the count-down at @now keeping count @c (0 stops it). */
static LAPICT__HOT void lapict__reanchor(struct lapict_timer *t, uint64_t now,
                                         uint32_t c)
{
    t->flags &= (uint16_t)~LAPICT__F_PREINJ;
    if (c == 0) {
        t->flags &= (uint16_t)~(LAPICT__F_CD_ACTIVE | LAPICT__F_CD_ARMED);
        return;
    }
    t->anchor_ns = now;
    t->e_tick = c;
    t->next_rel_ns = lapict__ns_for(t, c);
    t->flags |= LAPICT__F_CD_ACTIVE | LAPICT__F_CD_ARMED;
}

/* Set or clear the clamp flag, counting each engagement. */
static LAPICT__HOT void lapict__clamp_flag(struct lapict_timer *t, bool clamp)
{
    if (clamp && !(t->flags & LAPICT__F_CLAMPED))
        LAPICT__INC(t->c.clamps);
    if (clamp)
        t->flags |= LAPICT__F_CLAMPED;
    else
        t->flags &= (uint16_t)~LAPICT__F_CLAMPED;
}
/* Apply @clamp to a running count-down, preserving its count. */
void lapict__set_clamp(struct lapict_timer *t, uint64_t now, bool clamp);
/*
 * Bring @t to @now as servicing would (one computation, the same path), but
 * call no op: due expiries stay pending (missed-tick policy applied), a
 * deadline is checked against @tsc (the guest TSC at @now). Save runs it on
 * a copy, restore on the state it is about to commit.
 */
void lapict__settle(struct lapict_timer *t, uint64_t now, uint64_t tsc);

/*
 * Whether lapict__settle() at @now (guest TSC @tsc) has an expiry to
 * process: the tests of process() that lead to expired(). Save skips its
 * copy when not (tests/test_state.c compares both paths' blobs with an
 * instance actually serviced at the same instant).
 */
static inline bool lapict__due(const struct lapict_timer *t, uint64_t now,
                               uint64_t tsc)
{
    if (t->flags & LAPICT__F_CD_ARMED)
        return lapict__elapsed(t, now) >= t->next_rel_ns;
    return (t->flags & LAPICT__F_DL_ARMED) && lapict__dl_reached(t, now, tsc);
}
/* Process expiries due at @now (no advance); re-arm if any. */
void lapict__update_slow(struct lapict_timer *t, uint64_t now);
/* Drop all timer activity (mode switch, reset). */
void lapict__disarm(struct lapict_timer *t);
/* Current advance in ns (0 when off or no spin op). */
static inline uint32_t lapict__advance(const struct lapict_timer *t)
{
    /* 0 on a host without a spin op (lapict_init()). */
    return t->adv_ns;
}

/*
 * ns from @now until the count-down's next expiry, 0 once it is due (that
 * is, lapict__elapsed() >= next_rel_ns: the same test process() makes).
 * While the anchor is ahead of @now (lapict__elapsed() is 0) the expiry
 * lies next_rel_ns beyond the anchor (a next expiry is at most one count
 * ahead of its anchor, 2^32 ticks at divide 128 on the slowest bus or one
 * minimum period, under 2^59 ns; a restored tick may be further).
 */
static LAPICT__HOT uint64_t lapict__cd_left(const struct lapict_timer *t,
                                            uint64_t now)
{
    uint64_t d = now - t->anchor_ns;

    if (lapict__after_eq(now, t->anchor_ns))
        return d >= t->next_rel_ns ? 0 : t->next_rel_ns - d;
    /* Saturating: a restored count's next_rel_ns may be huge. */
    d = t->anchor_ns - now;
    return d > UINT64_MAX - t->next_rel_ns ? UINT64_MAX : d + t->next_rel_ns;
}

/* ns from @now until the next expiry instant, 0 if it is due. */
static LAPICT__HOT uint64_t lapict__next_left(const struct lapict_timer *t,
                                              uint64_t now)
{
    if (t->flags & LAPICT__F_CD_ARMED)
        return lapict__cd_left(t, now);
    return lapict__after_eq(now, t->dl_ns) ? 0 : t->dl_ns - now;
}

/*
 * Arm the host timer @adv ns before the next expiry, @left ns from @now
 * (lapict__next_left()), and never further than the horizon. When that
 * point has already passed, a register path still arms it (the host fires
 * at once and lapict_expire() injects ahead); lapict_expire() itself,
 * having just tried, falls back to the exact instant so that a refused or
 * impossible pre-injection (window closed, masked, illegal vector) cannot
 * turn into a storm of callbacks.
 */
static LAPICT__HOT void lapict__arm_for(struct lapict_timer *t, uint64_t now,
                                        uint64_t left, bool tried)
{
    uint64_t rel = left;
    uint32_t adv = lapict__advance(t);

    if (adv && !(t->flags & LAPICT__F_PREINJ) && !(tried && left <= adv))
        rel = left > adv ? left - adv : 0; /* passed: the host fires now */
    if (rel > LAPICT__FAR_NS)
        rel = LAPICT__FAR_NS;
    lapict__host_arm(t, now + rel, tried);
}

static LAPICT__HOT void lapict__rearm_hot(struct lapict_timer *t, uint64_t now,
                                          bool tried)
{
    if (!(t->flags & (LAPICT__F_CD_ARMED | LAPICT__F_DL_ARMED))) {
        lapict__host_cancel(t);
        return;
    }
    lapict__arm_for(t, now, lapict__next_left(t, now), tried);
}

/* Re-arm (or cancel) the host timer for the next expiry. */
static LAPICT__HOT void lapict__rearm(struct lapict_timer *t, uint64_t now)
{
    lapict__rearm_hot(t, now, false);
}

/* Record a guest-caused error. */
void lapict__guest_error(struct lapict_timer *t, int status,
                         uint32_t detail);

/*
 * Bring the state up to @now: every register access starts here, so the
 * common case (a count-down whose next expiry is still ahead) is inline.
 */
static inline void lapict__update(struct lapict_timer *t, uint64_t now)
{
    if ((t->flags & (LAPICT__F_CD_ARMED | LAPICT__F_DL_ARMED)) ==
            LAPICT__F_CD_ARMED &&
        lapict__elapsed(t, now) < t->next_rel_ns)
        return;
    if (t->flags & (LAPICT__F_CD_ARMED | LAPICT__F_DL_ARMED))
        lapict__update_slow(t, now);
}

/* ---- advance.c ---- */

/*
 * Feed one wake-up latency (ns from the instant the host timer was due to
 * the arrival at guest entry) to the adaptive tuner.
 */
void lapict__tune(struct lapict_timer *t, int64_t latency);

/* Whether @o is a run of outliers the tuner can hold (a restored blob's). */
bool lapict__outliers_ok(uint32_t o);

/* A goal and spin budget lapict_config_check() and lapict_advance_set()
 * accept. */
static inline bool lapict__goal_ok(uint32_t goal, uint32_t budget_ns)
{
    return goal <= LAPICT_ADVANCE_GOAL_BALANCED &&
           budget_ns <= LAPICT_ADVANCE_NS_LIMIT;
}

#endif /* LAPICT_INTERNAL_H */
