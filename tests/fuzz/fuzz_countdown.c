/* SPDX-License-Identifier: MIT */
/*
 * fuzz_countdown: lapict_countdown_restore() on untrusted count-downs, and
 * lapict_countdown_get() on what it leaves (docs/spec/state.md section 7).
 *
 * Input: byte 0 picks the configuration (bits 0-1 the bus clock: 1 GHz,
 * 3 MHz, 1 kHz, 10 GHz; bit 2 TSC-deadline offered; bits 3-4 the missed-
 * tick policy; bit 5 a 200 us minimum period; bit 6 the APIC
 * software-disabled; bit 7 host time 2^40 ns short of 2^64), byte 1 the state
 * before the restore (bits 0-1: idle, a one-shot, a periodic timer or a TSC
 * deadline armed; bit 2 the window closed, so an expiry is held pending;
 * bit 3 LVTT reduced to its stored bits, so that most inputs pass the
 * checks), then LVTT (4 bytes), TDCR (1), TMICT (4) and next_ns as an
 * offset from now (8 bytes, signed; 0x8000000000000000 stands for
 * LAPICT_COUNTDOWN_NONE).
 *
 * Checked:
 * - a rejected input returns LAPICT_E_STATE_FIELD or _CONFIG, leaves the
 *   instance bit-for-bit unchanged and calls no host op;
 * - an accepted one injects nothing during the restore and reports at most
 *   the one illegal vector; the registers read back as given (LVTT masked
 *   while software-disabled);
 * - ahead: the expiry comes at next_ns, or at now plus the whole count when
 *   next_ns is further (oracle, 128-bit), never before; TMCCT is between 1
 *   and TMICT; get gives that instant back;
 * - due: at most the catch-up bound (1 under coalesce and drop) is held
 *   pending, and the window delivers at least one interrupt when unmasked
 *   with a legal vector, unless the drop policy dropped them;
 * - none: nothing is ever delivered;
 * - get then restore into a fresh instance at the same instant gives the
 *   same count-down again.
 */
#include <string.h>

#include <lapict/lapict.h>

#include "fuzz_common.h"
#include "lapict_sim.h"

#ifndef FUZZ_COUNTDOWN_ENTRY
#define FUZZ_COUNTDOWN_ENTRY LLVMFuzzerTestOneInput
#endif

#define FC_CHECK(...) FZ_CHECK("fuzz_countdown", __VA_ARGS__)

#define FC_VEC 0x40u
#define FC_STORED (LAPICT_LVTT_VECTOR | LAPICT_LVTT_MASK | LAPICT_LVTT_MODE)

static const uint64_t fc_bus[4] = {1000000000ull, 3000000ull, 1000ull,
                                   10000000000ull};

/* ceil(n * divide * 10^9 / bus), or the clamped clock's ceil(n * P / N). */
static uint64_t fc_full(uint64_t bus, uint32_t tdcr, uint32_t mode, uint32_t n,
                        uint32_t min_p)
{
    unsigned idx = ((tdcr >> 1) & 4u) | (tdcr & 3u);
    fz_u128 div = (fz_u128)1 << ((idx + 1u) & 7u);
    fz_u128 raw = ((fz_u128)n * div * 1000000000u + bus - 1) / bus;

    if (mode == LAPICT_LVTT_PERIODIC && min_p && raw < min_p)
        return min_p; /* N ticks last exactly the minimum period */
    return (uint64_t)raw;
}

/* Does a periodic count-down's period last less than 1 ns? */
static bool fc_sub_ns(uint64_t bus, uint32_t tdcr, uint32_t mode, uint32_t n,
                      uint32_t min_p)
{
    unsigned idx = ((tdcr >> 1) & 4u) | (tdcr & 3u);
    fz_u128 div = (fz_u128)1 << ((idx + 1u) & 7u);

    return mode == LAPICT_LVTT_PERIODIC && !min_p &&
           (fz_u128)n * div * 1000000000u < bus;
}

struct fc_host {
    struct lapict_sim s;
    struct lapict_timer t;
};

static void fc_host_init(struct fc_host *h, const struct lapict_config *c,
                         uint64_t now)
{
    memset(h, 0, sizeof(*h));
    lapict_sim_init(&h->s, NULL, NULL, NULL);
    h->s.now_ns = now;
    if (lapict_init(&h->t, c, &lapict_sim_ops, &h->s) != LAPICT_OK)
        fz_fail("fuzz_countdown", "init failed");
    lapict_sim_attach(&h->s, &h->t);
}

int FUZZ_COUNTDOWN_ENTRY(const uint8_t *data, size_t size)
{
    struct fz_in in = {data, size, 0};
    struct lapict_config c;
    struct lapict_countdown cd, got;
    struct lapict_timer before;
    struct lapict_sim sbefore;
    static struct fc_host h, h2;
    uint8_t b0 = fz_u8(&in), b1 = fz_u8(&in);
    uint64_t now, off, at = 0, full = 0, inj0;
    uint32_t mode;
    bool svr = !(b0 & 0x40), due = false, ahead = false;
    int rc;

    lapict_config_default(&c);
    c.tsc_khz = 1000000u;
    c.bus_hz = fc_bus[b0 & 3u];
    c.tsc_deadline = (b0 & 4u) != 0;
    c.missed_policy = ((b0 >> 3) & 3u) % 3u;
    c.min_period_ns = (b0 & 0x20u) ? 200000u : 0u;
    /* Near 2^64, but short of it by more than any run below: the simulated
     * host's clock does not wrap (tests/test_countdown.c crosses it). */
    now = (b0 & 0x80u) ? UINT64_MAX - (1ull << 40) : 1000u;
    fc_host_init(&h, &c, now);
    if (!svr)
        lapict_svr_write(&h.t, false);
    /* The state the restore replaces. */
    switch (b1 & 3u) {
    case 1:
    case 2:
        lapict_lvtt_write(&h.t, ((b1 & 3u) == 2 ? LAPICT_LVTT_PERIODIC : 0u) |
                                    FC_VEC);
        lapict_tmict_write(&h.t, 1000);
        break;
    case 3:
        lapict_lvtt_write(&h.t, LAPICT_LVTT_TSC_DEADLINE | FC_VEC);
        lapict_tsc_deadline_write(&h.t, lapict_sim_guest_tsc(&h.s) + 700);
        break;
    }
    lapict_sim_window(&h.s, !(b1 & 4u));
    lapict_sim_run_until(&h.s, h.s.now_ns + 3000);
    now = h.s.now_ns;

    cd.lvtt = fz_u32(&in);
    if (b1 & 8u)
        cd.lvtt &= FC_STORED;
    cd.tdcr = fz_u8(&in);
    cd.tmict = fz_u32(&in);
    off = fz_u64(&in);
    cd.next_ns = off == (1ull << 63) ? LAPICT_COUNTDOWN_NONE : now + off;
    mode = cd.lvtt & LAPICT_LVTT_MODE;

    before = h.t;
    sbefore = h.s;
    rc = lapict_countdown_restore(&h.t, &cd, now);
    if (rc != LAPICT_OK) {
        FC_CHECK(rc == LAPICT_E_STATE_FIELD || rc == LAPICT_E_STATE_CONFIG,
                 "restore returned %d", rc);
        FC_CHECK(memcmp(&h.t, &before, sizeof(before)) == 0,
                 "a rejected input changed the instance");
        FC_CHECK(memcmp(&h.s, &sbefore, sizeof(sbefore)) == 0,
                 "a rejected input called the host");
        return 0;
    }
    FC_CHECK(h.s.injects == sbefore.injects, "restore injected");
    FC_CHECK(h.s.reports <= sbefore.reports + 1, "restore reported twice");
    FC_CHECK((lapict_lvtt_read(&h.t) & ~LAPICT_LVTT_PENDING) ==
                 (cd.lvtt | (svr ? 0u : LAPICT_LVTT_MASK)),
             "LVTT %x read back for %x", lapict_lvtt_read(&h.t), cd.lvtt);
    FC_CHECK(lapict_tdcr_read(&h.t) == cd.tdcr, "TDCR");
    FC_CHECK(lapict_tmict_read(&h.t) == cd.tmict, "TMICT");

    if (cd.next_ns != LAPICT_COUNTDOWN_NONE) {
        full = fc_full(c.bus_hz, cd.tdcr, mode, cd.tmict, c.min_period_ns);
        due = (int64_t)(now - cd.next_ns) >= 0;
        ahead = !due;
        at = ahead && cd.next_ns - now > full ? now + full : cd.next_ns;
    }
    if (ahead) {
        uint32_t c0 = lapict_tmcct_read(&h.t);
        FC_CHECK(c0 >= 1 && c0 <= cd.tmict, "TMCCT %u of %u", c0, cd.tmict);
        FC_CHECK(lapict_countdown_get(&h.t, now, &got) == LAPICT_OK,
                 "get after restore");
        FC_CHECK(got.next_ns == (at == LAPICT_COUNTDOWN_NONE ? 0 : at),
                 "get gives %llx, expected %llx",
                 (unsigned long long)got.next_ns, (unsigned long long)at);
        /* Round trip at the same instant. */
        fc_host_init(&h2, &c, now);
        if (!svr)
            lapict_svr_write(&h2.t, false);
        FC_CHECK(lapict_countdown_restore(&h2.t, &got, now) == LAPICT_OK,
                 "round trip rejected");
        FC_CHECK(lapict_countdown_get(&h2.t, now, &cd) == LAPICT_OK &&
                     cd.lvtt == got.lvtt && cd.tdcr == got.tdcr &&
                     cd.tmict == got.tmict && cd.next_ns == got.next_ns,
                 "round trip changed the count-down");
        lapict_sim_window(&h.s, true);
        inj0 = h.s.injects;
        /* Never early. A far instant is only checked short of it. */
        if (at - now <= 10000000000ull) {
            lapict_sim_run_until(&h.s, at - 1);
            FC_CHECK(h.s.injects == inj0, "an interrupt before next_ns");
            lapict_sim_run_until(&h.s, at);
            /*
             * One, or more for a period below 1 ns (a 10 GHz bus and no
             * minimum period: several grid points in one ns), which the
             * drop policy drops all.
             */
            if (svr && !(cd.lvtt & LAPICT_LVTT_MASK) &&
                (cd.lvtt & LAPICT_LVTT_VECTOR) >= 16 &&
                !(c.missed_policy == LAPICT_MISSED_DROP &&
                  fc_sub_ns(c.bus_hz, cd.tdcr, mode, cd.tmict,
                            c.min_period_ns)))
                FC_CHECK(h.s.injects >= inj0 + 1, "no interrupt at next_ns");
        } else {
            lapict_sim_run_until(&h.s, now + 10000000000ull);
            FC_CHECK(h.s.injects == inj0, "an interrupt before next_ns");
        }
    } else if (due) {
        struct lapict_stats st;
        lapict_stats_get(&h.t, &st, sizeof(st));
        FC_CHECK(st.pending <= (c.missed_policy == LAPICT_MISSED_CATCH_UP
                                    ? c.catch_up_max
                                    : 1u),
                 "%u pending", st.pending);
        inj0 = h.s.injects;
        lapict_sim_window(&h.s, true);
        lapict_irq_window_open(&h.t);
        /* Drop: several grid points passed at once give none. */
        if (svr && !(cd.lvtt & LAPICT_LVTT_MASK) &&
            (cd.lvtt & LAPICT_LVTT_VECTOR) >= 16 &&
            c.missed_policy != LAPICT_MISSED_DROP)
            FC_CHECK(h.s.injects >= inj0 + 1, "a due expiry lost");
    } else {
        lapict_sim_window(&h.s, true);
        lapict_irq_window_open(&h.t);
        inj0 = h.s.injects;
        lapict_sim_run_until(&h.s, now + 10000000000ull);
        FC_CHECK(h.s.injects == inj0, "an interrupt without a count-down");
        FC_CHECK(lapict_tmcct_read(&h.t) == 0, "TMCCT without a count-down");
    }
    return 0;
}
