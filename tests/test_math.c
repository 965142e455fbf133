/* SPDX-License-Identifier: MIT */
/*
 * lib/math.c: the reciprocal division must equal exact 128-bit division
 * (the test may use the compiler's __udivti3 as its oracle; the library
 * must not), for every divisor class and numerators up to 2^127.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clock.h"
#include "math.h"
#include "lapict_sim.h"
#include "tu_main.h"

typedef unsigned __int128 u128;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    /* xorshift64*: deterministic, so a failure reproduces. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static uint64_t oracle_floor(u128 n, uint64_t d)
{
    u128 q = n / d;
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

static const uint64_t divisors[] = {
    1,
    2,
    3,
    5,
    7,
    10,
    1000,
    1000000,
    1000000000,
    999999937,
    4096,
    1ull << 33,
    (1ull << 33) + 1,
    10000000000ull,
    134217728,
    25,
    40,
    UINT64_MAX,
    UINT64_MAX - 1,
    (1ull << 63) + 1,
    1ull << 63,
    123456789012345ull,
};

static void check_one(u128 n, uint64_t d)
{
    uint64_t r = lapict__recip(d);
    uint64_t want = oracle_floor(n, d);
    uint64_t got = lapict__div_floor(n, d, r);
    if (got != want)
        fail_msg("floor(%#llx%016llx / %llu) = %llu, want %llu",
                 (unsigned long long)(n >> 64), (unsigned long long)n,
                 (unsigned long long)d, (unsigned long long)got,
                 (unsigned long long)want);
    if (n < ((u128)1 << 126)) {
        u128 c = (n + d - 1) / d;
        uint64_t wantc = c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
        assert_int_equal(lapict__div_ceil(n, d, r), wantc);
    }
    assert_int_equal(lapict__udiv128(n, d), want);
}

/* Rule: conversions are exact (docs/spec/timer.md 1), no 128-bit divide in
 * lib/. */
static void reciprocal_division_is_exact(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(divisors) / sizeof(divisors[0]); i++) {
        uint64_t d = divisors[i];
        /* Edges around multiples of d, and numerators of every size. */
        check_one(0, d);
        check_one(1, d);
        check_one(d - 1, d);
        check_one(d, d);
        check_one((u128)d + 1, d);
        check_one((u128)d * UINT64_MAX, d);
        check_one((u128)d * UINT64_MAX - 1, d);
        check_one(((u128)1 << 127) - 1, d);
        for (int k = 0; k < 2000; k++) {
            unsigned bits = (unsigned)(rnd() % 127) + 1;
            u128 n = ((u128)rnd() << 64 | rnd()) >> (128 - bits);
            check_one(n, d);
            u128 m = (u128)(rnd() >> (rnd() % 64)) * d;
            check_one(m, d);
            if (m)
                check_one(m - 1, d);
        }
    }
    for (int k = 0; k < 20000; k++) {
        uint64_t d = rnd() >> (rnd() % 64);
        if (!d)
            d = 3;
        u128 n = ((u128)rnd() << 64 | rnd()) >> (rnd() % 127 + 1);
        check_one(n, d);
    }
}

static void udiv128_by_zero_saturates(void **state)
{
    (void)state;
    assert_int_equal(lapict__udiv128(12345, 0), UINT64_MAX);
}

static void quotient_above_64_bits_saturates(void **state)
{
    (void)state;
    assert_int_equal(lapict__div_floor((u128)1 << 100, 3, lapict__recip(3)),
                     UINT64_MAX);
    assert_int_equal(lapict__div_floor((u128)1 << 64, 1, lapict__recip(1)),
                     UINT64_MAX);
}

static void gcd_table(void **state)
{
    (void)state;
    assert_int_equal(lapict__gcd(1000000000, 25000000), 25000000);
    assert_int_equal(lapict__gcd(1000000000, 134217728), 512);
    assert_int_equal(lapict__gcd(10000000000ull, 1000000000), 1000000000);
    assert_int_equal(lapict__gcd(1000, 1000000000), 1000);
    assert_int_equal(lapict__gcd(1000000, 2500000), 500000);
    assert_int_equal(lapict__gcd(7, 1000000), 1);
}

static void crc32_is_ieee(void **state)
{
    (void)state;
    /* The standard check value of CRC-32/ISO-HDLC. */
    assert_int_equal(lapict__crc32((const uint8_t *)"123456789", 9),
                     0xCBF43926u);
    assert_int_equal(lapict__crc32((const uint8_t *)"", 0), 0);
}

/* TDCR bits 3,1,0 -> divide (docs/spec/timer.md 2). */
static void divide_table(void **state)
{
    static const unsigned div[16] = {2,  4,  8,   16, 2,  4,  8,   16,
                                     32, 64, 128, 1,  32, 64, 128, 1};
    (void)state;
    for (uint32_t v = 0; v < 16; v++)
        assert_int_equal(1u << lapict__div_log2(v), div[v]);
}

/* The conversions read only the config: the simulated host at rest. */
static struct lapict_sim sim;

static int sim_setup(void **state)
{
    (void)state;
    lapict_sim_init(&sim, NULL, NULL, NULL);
    return 0;
}

/*
 * ticks_in and ns_for against the exact formulas of docs/spec/timer.md 1 for
 * bus rates of every kind: KVM 1 GHz, Xen 100 MHz, bhyve 2^27, TDX 25 MHz,
 * the limits 1 kHz and 10 GHz, and an awkward prime-ish rate.
 */
static void conversions_match_formulas(void **state)
{
    static const uint64_t buses[] = {
        1000000000ull, 100000000ull,   134217728ull, 25000000ull,
        1000ull,       10000000000ull, 999999937ull, 3000000ull};
    (void)state;
    for (size_t b = 0; b < sizeof(buses) / sizeof(buses[0]); b++) {
        struct lapict_config cfg;
        struct lapict_timer t;
        lapict_config_default(&cfg);
        cfg.tsc_khz = 1000000u;
        cfg.bus_hz = buses[b];
        assert_int_equal(lapict_init(&t, &cfg, &lapict_sim_ops, &sim),
                         LAPICT_OK);
        for (uint32_t tdcr = 0; tdcr < 16; tdcr++) {
            lapict__set_tdcr(&t, tdcr & 0xB);
            u128 div = (u128)1 << lapict__div_log2(tdcr);
            for (int k = 0; k < 300; k++) {
                uint64_t dns = rnd() >> (rnd() % 63 + 1);
                u128 want = (u128)dns * buses[b] / (div * 1000000000u);
                if (want > UINT64_MAX)
                    want = UINT64_MAX; /* the library saturates */
                assert_int_equal(lapict__ticks_in(&t, dns), (uint64_t)want);
                uint64_t n = k == 0 ? 0xFFFFFFFFu : rnd() >> 32;
                u128 num = (u128)n * div * 1000000000u;
                u128 ns = (num + buses[b] - 1) / buses[b];
                assert_int_equal(lapict__ns_for(&t, n), (uint64_t)ns);
                /* ns_for is the first instant: one ns earlier is too few. */
                if (ns > 0 && n > 0)
                    assert_true(lapict__ticks_in(&t, (uint64_t)ns - 1) < n);
                assert_true(lapict__ticks_in(&t, (uint64_t)ns) >= n);
            }
        }
    }
}

/* The largest count at /128 on the slowest bus converts without wrap. */
static void largest_count_slowest_bus_no_wrap(void **state)
{
    struct lapict_config cfg;
    struct lapict_timer t;
    (void)state;
    lapict_config_default(&cfg);
    cfg.tsc_khz = 1000000u;
    cfg.bus_hz = 1000;
    assert_int_equal(lapict_init(&t, &cfg, &lapict_sim_ops, &sim), LAPICT_OK);
    lapict__set_tdcr(&t, 0xA);
    u128 want = (u128)0xFFFFFFFFu * 128u * 1000000000u / 1000u;
    assert_int_equal(lapict__ns_for(&t, 0xFFFFFFFFu), (uint64_t)want);
    assert_true(want < LAPICT__FAR_NS);
}

/* TSC to ns rounds up (a deadline is never early). */
static void tsc_to_ns_rounds_up(void **state)
{
    static const uint32_t khz[] = {1,       3,         1000000, 2400000,
                                   2500000, 100000000, 2999999};
    (void)state;
    for (size_t i = 0; i < sizeof(khz) / sizeof(khz[0]); i++) {
        struct lapict_config cfg;
        struct lapict_timer t;
        lapict_config_default(&cfg);
        cfg.tsc_khz = khz[i];
        assert_int_equal(lapict_init(&t, &cfg, &lapict_sim_ops, &sim),
                         LAPICT_OK);
        for (int k = 0; k < 1000; k++) {
            uint64_t d = rnd() >> (rnd() % 63 + 1);
            u128 want = ((u128)d * 1000000u + khz[i] - 1) / khz[i];
            uint64_t w = want > UINT64_MAX ? UINT64_MAX : (uint64_t)want;
            assert_int_equal(lapict__ns_from_tsc(&t, d), w);
        }
    }
}

TU_MAIN_GROUP(sim_setup, NULL, cmocka_unit_test(reciprocal_division_is_exact),
              cmocka_unit_test(udiv128_by_zero_saturates),
              cmocka_unit_test(quotient_above_64_bits_saturates),
              cmocka_unit_test(gcd_table), cmocka_unit_test(crc32_is_ieee),
              cmocka_unit_test(divide_table),
              cmocka_unit_test(conversions_match_formulas),
              cmocka_unit_test(largest_count_slowest_bus_no_wrap),
              cmocka_unit_test(tsc_to_ns_rounds_up))
