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

/* Host intervals are limited to 2^62 ns (146 years): beyond, re-check. */
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

/* Saturating counter increment. */
#define LAPICT__INC(x) ((x) += ((x) != UINT32_MAX))

static inline void lapict__add_sat(uint32_t *c, uint64_t n)
{
    uint64_t v = (uint64_t)*c + n;
    *c = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* a is at or after b on the wrapping host clock. */
static inline bool lapict__after_eq(uint64_t a, uint64_t b)
{
    return (int64_t)(a - b) >= 0;
}

/* ---- math.c: exact integer conversions without a 128-bit divide ---- */

/*
 * Prepare division by @d (1 <= d < 2^64): power of two -> *shift = log2 d
 * and r = {0,0}; otherwise r = floor(2^128 / d). Init-time only (slow).
 */
void lapict__recip_init(uint64_t d, uint64_t r[2], uint8_t *shift);
/* floor(n / d) for a numerator of 64 bits or more: four multiplies. */
lapict__u128 lapict__div128_wide(lapict__u128 n, uint64_t d,
                                 const uint64_t r[2]);
/* Exact floor(n / d) by shift-subtract; slow path only. Saturates. */
uint64_t lapict__udiv128(lapict__u128 n, uint64_t d);
/* The same, all 128 bits of the quotient. */
lapict__u128 lapict__udiv128_wide(lapict__u128 n, uint64_t d);
/* Greatest common divisor (init only). */
uint64_t lapict__gcd(uint64_t a, uint64_t b);
/* CRC-32 (IEEE 802.3, reflected) of @len bytes. */
uint32_t lapict__crc32(const uint8_t *p, size_t len);

/*
 * floor(n / d) with the reciprocal prepared by lapict__recip_init(), as 128
 * bits. r = floor(2^128/d) underestimates 1/d by less than 2^-128, so the
 * product underestimates n/d by less than 1: one correction step. Inline:
 * this is every conversion of every hot path.
 */
static inline lapict__u128 lapict__div128(lapict__u128 n, uint64_t d,
                                          const uint64_t r[2], uint8_t shift)
{
    lapict__u128 q;

    if ((r[0] | r[1]) == 0)
        return n >> shift;
    if ((n >> 64) != 0)
        return lapict__div128_wide(n, d, r);
    /*
     * A 64-bit numerator: r[1] = floor(2^64/d) alone is within 1 of 1/d
     * scaled, so one multiply and the same single correction suffice.
     */
    uint64_t n0 = (uint64_t)n;
    uint64_t q0 = (uint64_t)(((lapict__u128)n0 * r[1]) >> 64);
    if (n0 - q0 * d >= d)
        q0++;
    q = q0;
    return q;
}

/* floor(n / d); saturates at UINT64_MAX. */
static inline uint64_t lapict__div_floor(lapict__u128 n, uint64_t d,
                                         const uint64_t r[2], uint8_t shift)
{
    lapict__u128 q;

    /* A 64-bit numerator has a 64-bit quotient: no saturation test. */
    if ((n >> 64) == 0) {
        uint64_t n0 = (uint64_t)n, q0;
        if ((r[0] | r[1]) == 0)
            return n0 >> shift;
        q0 = (uint64_t)(((lapict__u128)n0 * r[1]) >> 64);
        return q0 + (n0 - q0 * d >= d);
    }
    q = lapict__div128(n, d, r, shift);
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* ceil(n / d), same conditions; n < 2^127. */
static inline uint64_t lapict__div_ceil(lapict__u128 n, uint64_t d,
                                        const uint64_t r[2], uint8_t shift)
{
    return lapict__div_floor(n + (d - 1), d, r, shift);
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

/* Arm the host timer for @target (hardware if allowed, else software). */
void lapict__host_arm_slow(struct lapict_timer *t, uint64_t target,
                           bool spent);

/*
 * @spent: the host timer that called into the library has fired, so it is
 * armed again even for the same target (lapict_expire()).
 */
static inline void lapict__host_arm(struct lapict_timer *t, uint64_t target,
                                    bool spent)
{
    /* Common case, inline: a host without a preemption timer. */
    if (!t->ops->hv_timer_arm) {
        if (t->armed == LAPICT__ARMED_SW && t->armed_ns == target && !spent)
            return;
        t->ops->sw_timer_arm(t->ctx, target);
        t->armed = LAPICT__ARMED_SW;
        t->armed_ns = target;
        return;
    }
    lapict__host_arm_slow(t, target, spent);
}

static inline void lapict__host_cancel(struct lapict_timer *t)
{
    if (t->armed == LAPICT__ARMED_SW)
        t->ops->sw_timer_cancel(t->ctx);
    else if (t->armed == LAPICT__ARMED_HV)
        t->ops->hv_timer_cancel(t->ctx);
    t->armed = LAPICT__ARMED_NONE;
}

/* Move the armed timer to match the blocked state. */
void lapict__host_move(struct lapict_timer *t);

static inline bool lapict__inject(struct lapict_timer *t, uint8_t vector)
{
    if (t->ops->inject(t->ctx, vector)) {
        LAPICT__INC(t->c.injections);
        return true;
    }
    LAPICT__INC(t->c.refused);
    return false;
}

static inline void lapict__spin_until(struct lapict_timer *t,
                                      uint64_t host_ns)
{
    if (!t->ops->spin_until)
        return; /* e.g. a pre-injection restored on a host without one */
    uint64_t now = lapict__now(t), d, v;

    LAPICT__INC(t->c.spins);
    /* The wait asked of the host: what the advance costs it. */
    d = lapict__after_eq(now, host_ns) ? 0 : host_ns - now;
    v = t->spin_ns + d;
    t->spin_ns = v < d ? UINT64_MAX : v;
    t->ops->spin_until(t->ctx, host_ns);
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

/* ns elapsed since the anchor (0 if the clock is behind it). */
static inline uint64_t lapict__elapsed(const struct lapict_timer *t,
                                       uint64_t now)
{
    uint64_t d = now - t->anchor_ns;
    /* A clock behind the anchor (host misuse) must not look like 2^64 ns. */
    return (int64_t)d < 0 ? 0 : d;
}

/* Clamped clock (slowed to min_period_ns): the slow, rare path. */
uint64_t lapict__ticks_in_clamped(const struct lapict_timer *t, uint64_t d);
uint64_t lapict__ns_for_clamped(const struct lapict_timer *t, uint64_t n);

/* Timer ticks elapsed in @d ns of the current clock (clamp included). */
static inline uint64_t lapict__ticks_in(const struct lapict_timer *t,
                                        uint64_t d)
{
    lapict__u128 raw;

    if (t->flags & LAPICT__F_CLAMPED)
        return lapict__ticks_in_clamped(t, d);
    /* floor(floor(x) / 2^k) = floor(x / 2^k): divide the bus ticks. */
    raw = lapict__div128((lapict__u128)d * t->bus_p, t->bus_q, t->bus_rq,
                         t->bus_qshift) >>
          t->div_shift;
    return raw > UINT64_MAX ? UINT64_MAX : (uint64_t)raw;
}

/* Unclamped ns_for with the current divider. */
static inline uint64_t lapict__ns_for_raw(const struct lapict_timer *t,
                                          uint64_t n)
{
    /* bus_q < 2^32 and the shift <= 7: the scaled factor fits 64 bits. */
    lapict__u128 m = (lapict__u128)n * ((uint64_t)t->bus_q << t->div_shift);
    return lapict__div_ceil(m, t->bus_p, t->bus_rp, t->bus_pshift);
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
    return lapict__div_ceil((lapict__u128)d * t->tsc_a, t->tsc_b, t->tsc_rb,
                            t->tsc_bshift);
}

/* Host instant at which the guest TSC reaches @d (now <= result). */
static LAPICT__HOT uint64_t lapict__deadline_ns(const struct lapict_timer *t,
                                               uint64_t now, uint64_t tsc,
                                               uint64_t d)
{
    uint64_t rem;

    if (tsc >= d)
        return now;
    if (t->ops->tsc_to_host_ns) {
        /* The host knows its TSC mapping exactly, phase included. */
        uint64_t at = t->ops->tsc_to_host_ns(t->ctx, d);
        rem = lapict__after_eq(now, at) ? 0 : at - now;
    } else {
        rem = 0;
    }
    /* No host answer, or one already past while the TSC is still short. */
    if (rem == 0)
        rem = lapict__ns_from_tsc(t, d - tsc);
    return now + (rem > LAPICT__FAR_NS ? LAPICT__FAR_NS : rem);
}

/* Current count at @now. */
uint32_t lapict__tmcct(const struct lapict_timer *t, uint64_t now);
/* Should a periodic count of N be clamped with the current divider? */
bool lapict__needs_clamp(const struct lapict_timer *t);
/* Re-anchor the count-down at @now keeping count @c (0 stops it). */
void lapict__reanchor(struct lapict_timer *t, uint64_t now, uint32_t c);
/* Set or clear the clamp flag, counting each engagement. */
void lapict__clamp_flag(struct lapict_timer *t, bool clamp);
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
    return (t->flags & LAPICT__F_DL_ARMED) && tsc >= t->deadline_tsc;
}
/* Process expiries due at @now (no advance); re-arm if any. */
void lapict__update_slow(struct lapict_timer *t, uint64_t now);
/* Re-arm (or cancel) the host timer for the next expiry. */
void lapict__rearm(struct lapict_timer *t, uint64_t now);
/* Drop all timer activity (mode switch, reset). */
void lapict__disarm(struct lapict_timer *t);
/* Current advance in ns (0 when off or no spin op). */
static inline uint32_t lapict__advance(const struct lapict_timer *t)
{
    /* 0 on a host without a spin op (lapict_init()). */
    return t->adv_ns;
}

/*
 * Absolute host instant of the next expiry, at most LAPICT__FAR_NS ahead:
 * a deadline is capped when converted, and a count-down's next expiry is
 * at most one count ahead of a monotonic host clock: 2^32 ticks at divide
 * 128 on the slowest bus (LAPICT_BUS_HZ_MIN) or one minimum period, under
 * 2^59 ns (restore rejects a count above N).
 */
static LAPICT__HOT uint64_t lapict__next_instant(const struct lapict_timer *t)
{
    if (t->flags & LAPICT__F_CD_ARMED)
        return t->anchor_ns + t->next_rel_ns;
    return t->dl_ns;
}

/*
 * Arm the host timer @adv ns before the next instant. When that point has
 * already passed, a register path still arms it (the host fires at once and
 * lapict_expire() injects ahead); lapict_expire() itself, having just tried,
 * falls back to the exact instant so that a refused or impossible
 * pre-injection (window closed, masked, illegal vector) cannot turn into a
 * storm of callbacks.
 */
static LAPICT__HOT void lapict__arm_for(struct lapict_timer *t, uint64_t now,
                                     uint64_t exact, bool tried)
{
    uint64_t target = exact;
    uint32_t adv = lapict__advance(t);

    if (adv && !(t->flags & LAPICT__F_PREINJ) &&
        !(tried && lapict__after_eq(now, exact - adv)))
        target = exact - adv;
    /* A target already passed is due now: that is when the host fires. */
    if (!lapict__after_eq(target, now))
        target = now;
    lapict__host_arm(t, target, tried);
}

static LAPICT__HOT void lapict__rearm_hot(struct lapict_timer *t, uint64_t now,
                                       bool tried)
{
    if (!(t->flags & (LAPICT__F_CD_ARMED | LAPICT__F_DL_ARMED))) {
        lapict__host_cancel(t);
        return;
    }
    lapict__arm_for(t, now, lapict__next_instant(t), tried);
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

/* A goal and spin budget lapict_config_check() and lapict_advance_set()
 * accept. */
static inline bool lapict__goal_ok(uint32_t goal, uint32_t budget_ns)
{
    return goal <= LAPICT_ADVANCE_GOAL_BALANCED &&
           budget_ns <= LAPICT_ADVANCE_NS_LIMIT;
}

#endif /* LAPICT_INTERNAL_H */
