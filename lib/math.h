/* SPDX-License-Identifier: MIT */
/*
 * Exact integer arithmetic without a 128-bit divide (kernels do not link
 * libgcc's __udivti3): the reciprocals that clock.h's inline division uses,
 * and the slow-path and init-time helpers. Not installed.
 */
#ifndef LAPICT__MATH_H
#define LAPICT__MATH_H

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

#endif /* LAPICT__MATH_H */
