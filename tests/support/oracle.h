/* SPDX-License-Identifier: MIT */
/*
 * Independent oracle of docs/spec/timer.md for the tests: the exact conversions
 * of section 1 and 3 with 128-bit intermediates (a 128-bit divide is fine in
 * tests, not in lib/), the divide table, and the CRC-32 (IEEE) of the save
 * blob. Written from the spec, not from the library.
 */
#ifndef LAPICT_TEST_ORACLE_H
#define LAPICT_TEST_ORACLE_H

#include <stddef.h>
#include <stdint.h>

__extension__ typedef unsigned __int128 oracle_u128;

/* TDCR value (any 32 bits) -> divisor, per docs/spec/timer.md section 2. */
static inline uint32_t oracle_divide(uint32_t tdcr)
{
    switch (tdcr & 0xBu) {
    case 0x0:
        return 2;
    case 0x1:
        return 4;
    case 0x2:
        return 8;
    case 0x3:
        return 16;
    case 0x8:
        return 32;
    case 0x9:
        return 64;
    case 0xA:
        return 128;
    default:
        return 1; /* 0xB */
    }
}

/* ticks_in(dns) = floor(dns * bus_hz / (divide * 10^9)). */
static inline uint64_t oracle_ticks_in(uint64_t dns, uint64_t bus_hz,
                                       uint32_t divide)
{
    oracle_u128 num = (oracle_u128)dns * bus_hz;
    oracle_u128 den = (oracle_u128)divide * 1000000000u;
    return (uint64_t)(num / den);
}

/* ns_for(n) = ceil(n * divide * 10^9 / bus_hz). */
static inline uint64_t oracle_ns_for(uint64_t n, uint64_t bus_hz,
                                     uint32_t divide)
{
    oracle_u128 num = (oracle_u128)n * divide * 1000000000u;
    return (uint64_t)((num + bus_hz - 1) / bus_hz);
}

/* Clamped periodic clock of section 3: N ticks last exactly P ns. */
static inline uint64_t oracle_ticks_in_clamped(uint64_t dns, uint32_t n,
                                               uint32_t p)
{
    return (uint64_t)((oracle_u128)dns * n / p);
}

static inline uint64_t oracle_ns_for_clamped(uint64_t k, uint32_t n, uint32_t p)
{
    return (uint64_t)(((oracle_u128)k * p + n - 1) / n);
}

/* First host ns offset at which a TSC running at khz gains dtsc ticks. */
static inline uint64_t oracle_tsc_ns(uint64_t dtsc, uint32_t khz)
{
    return (uint64_t)(((oracle_u128)dtsc * 1000000u + khz - 1) / khz);
}

/* CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320), bitwise. */
uint32_t oracle_crc32(const void *buf, size_t len);

/* Little-endian field access of the save blob. */
static inline uint32_t oracle_get32(const uint8_t *b, size_t off)
{
    return (uint32_t)b[off] | (uint32_t)b[off + 1] << 8 |
           (uint32_t)b[off + 2] << 16 | (uint32_t)b[off + 3] << 24;
}

static inline uint64_t oracle_get64(const uint8_t *b, size_t off)
{
    return (uint64_t)oracle_get32(b, off) | (uint64_t)oracle_get32(b, off + 4)
                                                << 32;
}

static inline void oracle_put16(uint8_t *b, size_t off, uint16_t v)
{
    b[off] = (uint8_t)v;
    b[off + 1] = (uint8_t)(v >> 8);
}

static inline void oracle_put32(uint8_t *b, size_t off, uint32_t v)
{
    oracle_put16(b, off, (uint16_t)v);
    oracle_put16(b, off + 2, (uint16_t)(v >> 16));
}

static inline void oracle_put64(uint8_t *b, size_t off, uint64_t v)
{
    oracle_put32(b, off, (uint32_t)v);
    oracle_put32(b, off + 4, (uint32_t)(v >> 32));
}

/* Recompute the checksum at 124 over bytes 0..123 of a 128-byte blob. */
static inline void oracle_reseal(uint8_t *blob)
{
    oracle_put32(blob, 124, oracle_crc32(blob, 124));
}

#endif /* LAPICT_TEST_ORACLE_H */
