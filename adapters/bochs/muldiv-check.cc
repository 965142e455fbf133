// SPDX-License-Identifier: MIT
// The oracle around patches-3.0/0003's tick <-> ns conversions: muldiv-check.sh
// puts the patch's own lines (struct bx_lapict_muldiv, lapict_muldiv_init,
// lapict_muldiv) in muldiv.inc and builds this file with them. Every result
// must equal the 128-bit divide's, floor(t * 10^9 / ips) and
// ceil(ns * ips / 10^9) saturated at 2^64 - 1, for edge inputs (0, 1, ips,
// 10^9, 2^32, 2^63, 2^64 - 1, the saturation thresholds, multiples of the
// reduced divisors, each +-3), random ones and every input below 3 000 000,
// over ips = 1000 k for chosen and random k (Bochs's own range and all of
// 64 bits). Exit 0 when none differs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

typedef uint64_t Bit64u;
typedef int64_t Bit64s;
#define BX_MAX_BIT64U 0xffffffffffffffffull
#define BX_CPP_INLINE inline
#include "muldiv.inc"

typedef unsigned __int128 u128;

static Bit64u ref_ticks_ns(Bit64u ticks, Bit64u ips)
{
    u128 ns = (u128)ticks * 1000000000u / ips;
    return (ns >> 64) ? BX_MAX_BIT64U : (Bit64u)ns;
}

static Bit64u ref_ns_ticks(Bit64u ns, Bit64u ips)
{
    u128 t = ((u128)ns * ips + 999999999u) / 1000000000u;
    return (t >> 64) ? BX_MAX_BIT64U : (Bit64u)t;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static unsigned long long checked, bad;

struct conv {
    Bit64u ips;
    bx_lapict_muldiv tn, nt;
    explicit conv(Bit64u i) : ips(i)
    {
        lapict_muldiv_init(&tn, 1000000000u, ips, false);
        lapict_muldiv_init(&nt, ips, 1000000000u, true);
    }
    void check(Bit64u x)
    {
        Bit64u a = lapict_muldiv(tn, x), b = ref_ticks_ns(x, ips);
        Bit64u c = lapict_muldiv(nt, x), d = ref_ns_ticks(x, ips);
        checked += 2;
        if ((a != b || c != d) && bad++ < 20)
            printf("ips=%llu x=%llu: ticks->ns %llu (divide %llu), "
                   "ns->ticks %llu (divide %llu)\n",
                   (unsigned long long)ips, (unsigned long long)x,
                   (unsigned long long)a, (unsigned long long)b,
                   (unsigned long long)c, (unsigned long long)d);
    }
};

// A random multiple of d that fits 64 bits.
static Bit64u multiple(Bit64u d)
{
    return d * (d == 1 ? rnd() : rnd() % (BX_MAX_BIT64U / d + 1));
}

int main(int argc, char **argv)
{
    unsigned long long nrand = argc > 1 ? strtoull(argv[1], 0, 0) : 20000000;
    std::vector<Bit64u> ipss = {1000,
                                2000,
                                3000,
                                7000,
                                999000,
                                1000000,
                                1024000,
                                4000000,
                                50000000,
                                123457000,
                                999999000,
                                1000000000,
                                1000001000,
                                2000000000,
                                3000000000ull,
                                4294966000ull,
                                4294967000ull,
                                1000000000000ull,
                                1000ull << 40,
                                5000ull << 50,
                                9223372036854775000ull,
                                9223372036854776000ull,
                                18446744073709551000ull};
    for (int i = 0; i < 200; i++) // Bochs's range: ips < 2^32
        ipss.push_back((rnd() % 4294967ull + 1) * 1000);
    for (int i = 0; i < 100; i++) // any multiple of 1000 below 2^64
        ipss.push_back((rnd() % 18446744073709551ull + 1) * 1000);

    for (Bit64u ips : ipss) {
        conv c(ips);
        const Bit64u e[] = {
            0, 1, 2, ips - 1, ips, ips + 1, 1000000000u, 1ull << 32, 1ull << 63,
            BX_MAX_BIT64U, BX_MAX_BIT64U / 2, BX_MAX_BIT64U / ips,
            BX_MAX_BIT64U / 1000000000u, (BX_MAX_BIT64U / ips) * 1000000000u,
            // the first input that saturates, each way
            (Bit64u)(((u128)1 << 64) * ips / 1000000000u),
            (Bit64u)(((u128)1 << 64) * 1000000000u / ips > BX_MAX_BIT64U
                         ? BX_MAX_BIT64U
                         : ((u128)1 << 64) * 1000000000u / ips),
            c.tn.div, c.nt.div, c.tn.div * 7, c.nt.div * 7};
        for (Bit64u v : e)
            for (int k = -3; k <= 3; k++)
                c.check(v + (Bit64u)(Bit64s)k);
        for (int i = 0; i < 2000; i++) { // where the rounding changes
            Bit64u m = multiple(c.tn.div);
            c.check(m);
            c.check(m - 1);
            m = multiple(c.nt.div);
            c.check(m);
            c.check(m + 1);
        }
        for (unsigned long long i = 0; i < nrand / ipss.size() + 1; i++) {
            Bit64u x = rnd();
            switch (i & 3) {
            case 1:
                x >>= rnd() % 64;
                break;
            case 2:
                x &= 0xffffffffffull;
                break;
            case 3:
                x = BX_MAX_BIT64U - (x >> (rnd() % 64));
                break;
            }
            c.check(x);
        }
    }
    for (Bit64u ips :
         {50000000ull, 4000000ull, 3000ull, 123457000ull, 4294967000ull}) {
        conv c(ips);
        for (Bit64u x = 0; x < 3000000; x++)
            c.check(x);
    }
    printf("muldiv-check: %zu ips values, %llu conversions, %llu differ "
           "from the divide\n",
           ipss.size(), checked, bad);
    return bad != 0;
}
