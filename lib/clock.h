/* SPDX-License-Identifier: MIT */
/*
 * The timer's clocks and the exact conversions between them: host ns, timer
 * ticks (bus_hz divided by TDCR, or a periodic count slowed to
 * min_period_ns) and guest TSC ticks (tsc_khz), with the order of the
 * wrapping host clock and the reciprocal division every conversion is
 * built on. Pure functions of the instance's configuration: no op is
 * called and no state is changed, except by lapict__set_tdcr(). Deadlines
 * round up (never early), counts round down. Not installed.
 */
#ifndef LAPICT__CLOCK_H
#define LAPICT__CLOCK_H

#include "math.h"
#include "internal.h"

/*
 * The one horizon rule of host time (<lapict/ops.h>): on the wrapping
 * 64-bit clock, instant a is at or after instant b when a - b, read as
 * signed, is not negative. Every comparison of host instants goes through
 * here.
 */
static inline bool lapict__after_eq(uint64_t a, uint64_t b)
{
    return (int64_t)(a - b) >= 0;
}

/*
 * floor(n / d), all 128 bits, with the reciprocal r = lapict__recip(d).
 * Inline: this is every conversion of every hot path. With
 * 2^64 = r d + s (0 < s < d), a numerator h 2^64 + l is h r d + (h s + l):
 * h r goes to the quotient and h s + l, which has fewer high bits (s < d),
 * is reduced again. For the divisors the core uses (below 2^35) that takes
 * at most four rounds, each one 64x64 multiply pair; the last, 64-bit
 * numerator n0 gives floor(n0 r / 2^64), which is floor(n0 / d) or one
 * less: one correction.
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
static inline uint64_t lapict__div_floor(lapict__u128 n, uint64_t d, uint64_t r)
{
    lapict__u128 q = lapict__div128(n, d, r);
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* ceil(n / d), same conditions; n < 2^127. */
static inline uint64_t lapict__div_ceil(lapict__u128 n, uint64_t d, uint64_t r)
{
    return lapict__div_floor(n + (d - 1), d, r);
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
    uint64_t d = now - t->cd.anchor_ns;
    return lapict__after_eq(now, t->cd.anchor_ns) ? d : 0;
}

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

/*
 * floor(n / bus_q) of a 64-bit numerator, the common case (an elapsed time
 * below 2^64 / bus_p ns): lapict__div_bus_q()'s shift and the last step of
 * lapict__div128(), kept in 64 bits.
 */
static inline uint64_t lapict__div_bus_q64(const struct lapict_timer *t,
                                           uint64_t n)
{
    uint64_t d = lapict__pow5[t->bus_q5], r = lapict__pow5_recip[t->bus_q5];
    uint64_t q;

    n >>= __builtin_ctz(t->bus_q);
    if (r == 0)
        return n; /* d = 5^0 */
    q = (uint64_t)(((lapict__u128)n * r) >> 64);
    return n - q * d >= d ? q + 1 : q;
}

/*
 * Timer ticks in @d ns of the current clock, all 128 bits. A clamped clock
 * (slowed to min_period_ns, the rare path) runs N ticks in exactly
 * min_period_ns: floor(d N / P).
 */
static inline lapict__u128 lapict__ticks_in_wide(const struct lapict_timer *t,
                                                 uint64_t d)
{
    if (!(t->flags & LAPICT__F_CLAMPED))
        return lapict__div_bus_q(t, (lapict__u128)d * t->bus_p) >> t->div_shift;
    return lapict__udiv128_wide((lapict__u128)d * t->tmict, t->min_period_ns);
}

/*
 * lapict__ticks_in() when the clock is clamped or d bus_p needs 128 bits.
 * Out of line so that it costs the inline common case no registers; here,
 * not in a .c file, since every reader of the clock needs it.
 */
static __attribute__((noinline, unused)) uint64_t
lapict__ticks_in_slow(const struct lapict_timer *t, uint64_t d)
{
    lapict__u128 raw;

    if (t->flags & LAPICT__F_CLAMPED)
        return lapict__udiv128((lapict__u128)d * t->tmict, t->min_period_ns);
    raw = lapict__div_bus_q(t, (lapict__u128)d * t->bus_p) >> t->div_shift;
    return raw > UINT64_MAX ? UINT64_MAX : (uint64_t)raw;
}

/*
 * Timer ticks elapsed in @d ns of the current clock, saturating. Every TMCCT
 * read comes here: the common case stays inline and in 64 bits, the rest is
 * out of line so that it costs the callers no registers.
 */
static inline uint64_t lapict__ticks_in(const struct lapict_timer *t,
                                        uint64_t d)
{
    lapict__u128 n = (lapict__u128)d * t->bus_p;

    /* floor(floor(x) / 2^k) = floor(x / 2^k): divide the bus ticks. */
    if (!(t->flags & LAPICT__F_CLAMPED) && (n >> 64) == 0)
        return lapict__div_bus_q64(t, (uint64_t)n) >> t->div_shift;
    return lapict__ticks_in_slow(t, d);
}

/* The bus_q of ns per bus_p ticks, scaled by the divider: the factor of
 * ns_for. bus_q < 2^32 and the shift <= 7: it fits 64 bits. */
static inline uint64_t lapict__ns_scale(const struct lapict_timer *t)
{
    return (uint64_t)t->bus_q << t->div_shift;
}

/* First ns at which @n ticks of the unclamped clock have elapsed. */
static inline uint64_t lapict__ns_for_raw(const struct lapict_timer *t,
                                          uint64_t n)
{
    return lapict__div_ceil((lapict__u128)n * lapict__ns_scale(t), t->bus_p,
                            t->bus_rp);
}

/* First ns at which @n ticks of the current clock have elapsed. */
static inline uint64_t lapict__ns_for(const struct lapict_timer *t, uint64_t n)
{
    if (!(t->flags & LAPICT__F_CLAMPED))
        return lapict__ns_for_raw(t, n);
    /* Clamped: ceil(n P / N). */
    return lapict__udiv128((lapict__u128)n * t->min_period_ns + (t->tmict - 1u),
                           t->tmict);
}

/* ns until the guest TSC advances by @d ticks (rounded up). */
static inline uint64_t lapict__ns_from_tsc(const struct lapict_timer *t,
                                           uint64_t d)
{
    return lapict__div_ceil((lapict__u128)d * 1000000u, t->tsc_khz, t->tsc_r);
}

/*
 * Whether the guest TSC's @d ticks take longer than the horizon at
 * tsc_khz: ceil(d 10^6 / tsc_khz) > LAPICT__FAR_NS, without the divide.
 */
static inline bool lapict__tsc_beyond_horizon(const struct lapict_timer *t,
                                              uint64_t d)
{
    return (lapict__u128)d * 1000000u >
           (lapict__u128)LAPICT__FAR_NS * t->tsc_khz;
}

#endif /* LAPICT__CLOCK_H */
