/* SPDX-License-Identifier: MIT */
/*
 * Exact integer conversions. Kernels do not link libgcc's __udivti3, so a
 * 128-by-64 division is done with a precomputed 128-bit reciprocal (four
 * 64x64 multiplies) and one exact correction step; the reciprocal itself is
 * computed once at init by shift-subtract.
 */
#include "internal.h"

uint64_t lapict__gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

static unsigned clz128(lapict__u128 n)
{
    uint64_t hi = (uint64_t)(n >> 64), lo = (uint64_t)n;
    if (hi)
        return (unsigned)__builtin_clzll(hi);
    if (lo)
        return 64u + (unsigned)__builtin_clzll(lo);
    return 128u;
}

lapict__u128 lapict__udiv128_wide(lapict__u128 n, uint64_t d)
{
    lapict__u128 q = 0, rem = 0;
    int i;

    if (d == 0)
        return ~(lapict__u128)0;
    /*
     * This is the slow-path divider (init, clamped clocks, stalls over
     * several periods): a 64-bit numerator takes the CPU's 64-bit divide,
     * which needs no runtime library on the 64-bit targets lapict builds
     * for. Hot paths never get here (tests check the disassembly).
     */
    if ((n >> 64) == 0)
        return (uint64_t)n / d;
    /* Skip the leading zero bits: the loop runs only over significant ones. */
    for (i = 127 - (int)clz128(n); i >= 0; i--) {
        rem = (rem << 1) | ((n >> i) & 1u);
        if (rem >= d) {
            rem -= d;
            q |= (lapict__u128)1 << i;
        }
    }
    return q;
}

uint64_t lapict__udiv128(lapict__u128 n, uint64_t d)
{
    lapict__u128 q = lapict__udiv128_wide(n, d);
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* floor(2^128 / d) for d >= 2 that is not a power of two. */
static lapict__u128 recip128(uint64_t d)
{
    lapict__u128 q = 0, rem = 0;
    int i;

    /* Dividing 2^128 - 1 gives the same quotient: d does not divide 2^128. */
    for (i = 127; i >= 0; i--) {
        rem = (rem << 1) | 1u;
        if (rem >= d) {
            rem -= d;
            q |= (lapict__u128)1 << i;
        }
    }
    return q;
}

void lapict__recip_init(uint64_t d, uint64_t r[2], uint8_t *shift)
{
    r[0] = r[1] = 0;
    *shift = 0;
    if (d == 0 || (d & (d - 1)) == 0) {
        *shift = d ? (uint8_t)__builtin_ctzll(d) : 0;
        return;
    }
    lapict__u128 q = recip128(d);
    r[0] = (uint64_t)q;
    r[1] = (uint64_t)(q >> 64);
}

/* High 128 bits of the 256-bit product a * b. */
static inline lapict__u128 mulhi128(lapict__u128 a, uint64_t b0, uint64_t b1)
{
    uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64);
    lapict__u128 p00 = (lapict__u128)a0 * b0;
    lapict__u128 p01 = (lapict__u128)a0 * b1;
    lapict__u128 p10 = (lapict__u128)a1 * b0;
    lapict__u128 p11 = (lapict__u128)a1 * b1;
    lapict__u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10;
    return p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
}

lapict__u128 lapict__div128_wide(lapict__u128 n, uint64_t d,
                                 const uint64_t r[2])
{
    lapict__u128 q = mulhi128(n, r[0], r[1]);
    if (n - q * d >= d)
        q++;
    return q;
}

/* CRC-32 of one nibble (reflected polynomial 0xEDB88320). */
static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
    0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t lapict__crc32(const uint8_t *p, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    size_t i;

    /* Four bits per step: an eighth of the bitwise loop's work. */
    for (i = 0; i < len; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ crc_nibble[crc & 0xFu];
        crc = (crc >> 4) ^ crc_nibble[crc & 0xFu];
    }
    return ~crc;
}
