/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the fuzz targets: a byte reader that never fails (an
 * exhausted input reads as zeros, so every byte string is a valid program)
 * and the checker's failure path.
 *
 * The targets are written so that all three can be #included into one
 * translation unit (tests/test_fuzz_regressions.c replays the checked-in
 * inputs without libFuzzer): every file-scope name carries a per-target
 * prefix (rg_ regs, rs_ restore, rp_ replay, fz_ here) and the entry point
 * name is a macro that defaults to LLVMFuzzerTestOneInput.
 */
#ifndef LAPICT_FUZZ_COMMON_H
#define LAPICT_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <lapict/lapict.h>

__extension__ typedef unsigned __int128 fz_u128;

struct fz_in {
    const uint8_t *p;
    size_t n, i;
};

static inline bool fz_more(const struct fz_in *in)
{
    return in->i < in->n;
}

static inline uint8_t fz_u8(struct fz_in *in)
{
    return in->i < in->n ? in->p[in->i++] : 0;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
    uint16_t lo = fz_u8(in);
    return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

static inline uint32_t fz_u32(struct fz_in *in)
{
    uint32_t lo = fz_u16(in);
    return lo | (uint32_t)fz_u16(in) << 16;
}

static inline uint64_t fz_u64(struct fz_in *in)
{
    uint64_t lo = fz_u32(in);
    return lo | (uint64_t)fz_u32(in) << 32;
}

/* Name of the input being replayed outside libFuzzer, for the report. */
static const char *fz_current_input;

/* A checker found a broken invariant: say which and crash for libFuzzer. */
static inline void fz_fail(const char *target, const char *fmt, ...)
{
    va_list ap;
    if (fz_current_input)
        fprintf(stderr, "%s: input %s\n", target, fz_current_input);
    fprintf(stderr, "%s: invariant broken: ", target);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* A checker's assertion: @target's invariant @c holds, or fz_fail(). */
#define FZ_CHECK(target, c, ...)                                               \
    do {                                                                       \
        if (!(c))                                                              \
            fz_fail(target, __VA_ARGS__);                                      \
    } while (0)

/* @c's advance: @mode from @ns, bounded by @max_ns unless that is 0. */
static inline void fz_advance(struct lapict_config *c, uint32_t mode,
                              uint32_t ns, uint32_t max_ns)
{
    c->advance_mode = mode;
    c->advance_ns = ns;
    if (max_ns)
        c->advance_max_ns = max_ns;
}

/* CRC-32 (IEEE 802.3, reflected), for resealing mutated blobs. */
static inline uint32_t fz_crc32(const uint8_t *p, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

#endif /* LAPICT_FUZZ_COMMON_H */
