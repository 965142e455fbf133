/* SPDX-License-Identifier: MIT */
/*
 * Exact integer arithmetic without a 128-bit divide: kernels do not link
 * libgcc's __udivti3, so a 128-by-64 division is a multiply by a reciprocal
 * prepared once, plus an exact correction (inline here), and the slow and
 * init-time helpers are in math.c. Not installed.
 */
#ifndef LAPICT__DIVIDE_H
#define LAPICT__DIVIDE_H

#include "internal.h"

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

#endif /* LAPICT__DIVIDE_H */
