/* SPDX-License-Identifier: MIT */
/*
 * lib/state.c: save and restore (docs/spec/timer.md section 8, layout in
 * state.h). Blobs are checked and forged with the test's own CRC-32 (oracle.c).
 */
#include "testutil.h"

#include <stdio.h>

#define VEC 0x30u
#define SZ LAPICT_STATE_SIZE

static void countdown(struct lapict_timer *t, uint32_t tdcr, uint32_t mode,
                      uint32_t n)
{
    assert_int_equal(lapict_tdcr_write(t, tdcr), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(t, mode | VEC), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(t, n), LAPICT_OK);
}

static void save(struct lapict_timer *t, uint8_t *blob)
{
    assert_int_equal(lapict_state_save(t, blob, SZ), LAPICT_OK);
}

/* A valid blob of a running periodic timer (64 ms period), mid-period. */
static void make_blob(uint8_t *blob, uint64_t base)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    tu_setup(&h, &t, &c, base, false);
    countdown(&t, 0x3, LAPICT_LVTT_PERIODIC, 4000000);
    fake_advance(&h, 123457);
    save(&t, blob);
}

static void state_blob_has_fixed_size(void **state)
{
    TU_FIX(state);
    uint8_t buf[2 * SZ];
    size_t i;
    assert_int_equal(LAPICT_STATE_SIZE, 128);
    memset(buf, 0xAB, sizeof(buf));
    assert_int_equal(lapict_state_save(t, buf, SZ - 1), LAPICT_E_STATE_SIZE);
    assert_int_equal(lapict_state_save(t, buf, 0), LAPICT_E_STATE_SIZE);
    assert_int_equal(lapict_state_save(t, buf, sizeof(buf)), LAPICT_OK);
    for (i = SZ; i < sizeof(buf); i++)
        assert_int_equal(buf[i], 0xAB);
    assert_int_equal(lapict_state_save(NULL, buf, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save(t, NULL, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save_at(NULL, 0, 0, buf, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save_at(t, 0, 0, NULL, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save_at(t, 0, 0, buf, SZ - 1),
                     LAPICT_E_STATE_SIZE);
}

static void expect_rejected(const uint8_t *blob, size_t len, int code);

/* state.h, one size rule for both directions: a buffer of at least
 * LAPICT_STATE_SIZE bytes, of which the blob is the first
 * LAPICT_STATE_SIZE; bytes after it are neither written by a save nor read
 * by a restore. At each edge (len - 1, len, len + 1) save and restore
 * agree: a buffer one byte short is LAPICT_E_STATE_SIZE for both (restore
 * leaves the instance unchanged), the exact size and a larger one work for
 * both. */
static void save_and_restore_take_the_same_buffer_sizes(void **state)
{
    static const struct {
        size_t len;
        int rc;
    } edges[] = {
        {SZ - 1, LAPICT_E_STATE_SIZE}, {SZ, LAPICT_OK},     {SZ + 1, LAPICT_OK},
        {0, LAPICT_E_STATE_SIZE},      {2 * SZ, LAPICT_OK},
    };
    size_t i, j;
    (void)state;
    for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        struct fake_host h, h2;
        struct lapict_timer t, t2;
        struct lapict_config c = tu_cfg();
        uint8_t buf[2 * SZ + 1], ref[SZ];
        print_message("len %zu\n", edges[i].len);
        tu_setup(&h, &t, &c, 0, false);
        countdown(&t, 0x3, LAPICT_LVTT_PERIODIC, 4000000);
        fake_advance(&h, 123457);
        save(&t, ref);
        /* Save: nothing written past the blob, nothing at all on error. */
        memset(buf, 0xAB, sizeof(buf));
        assert_int_equal(lapict_state_save(&t, buf, edges[i].len), edges[i].rc);
        assert_int_equal(
            lapict_state_save_at(&t, h.sim.now_ns, 0, buf, edges[i].len),
            edges[i].rc);
        for (j = edges[i].rc == LAPICT_OK ? SZ : 0; j < sizeof(buf); j++)
            assert_int_equal(buf[j], 0xAB);
        if (edges[i].rc == LAPICT_OK)
            assert_memory_equal(buf, ref, SZ);
        /* Restore: the same lengths, whatever follows the blob. */
        memcpy(buf, ref, SZ);
        tu_setup(&h2, &t2, &c, 5000, false);
        if (edges[i].rc != LAPICT_OK) {
            expect_rejected(buf, edges[i].len, edges[i].rc);
            continue;
        }
        assert_int_equal(lapict_state_restore(&t2, buf, edges[i].len),
                         LAPICT_OK);
        assert_int_equal(lapict_tmcct_read(&t2), lapict_tmcct_read(&t));
    }
}

/* The documented little-endian layout of version 1 (state.h). */
static void blob_layout_matches_state_h(void **state)
{
    TU_FIX(state);
    size_t i;
    uint8_t blob[SZ];
    /* /16, N 5000: 80 us period; expiries at 80 and 160 us. */
    countdown(t, 0x3, LAPICT_LVTT_PERIODIC | 0x1u, 5000);
    fake_advance(h, 200000);
    assert_int_equal(h->sim.injects, 2);
    save(t, blob);
    assert_int_equal(oracle_get32(blob, 0), LAPICT_STATE_MAGIC);
    assert_memory_equal(blob, "LAPT", 4);
    assert_int_equal(blob[4] | blob[5] << 8, LAPICT_STATE_VERSION);
    assert_int_equal(blob[6] | blob[7] << 8, SZ);
    assert_int_equal(oracle_get32(blob, 8), LAPICT_LVTT_PERIODIC | 0x31u);
    assert_int_equal(oracle_get32(blob, 12), 0x3);
    assert_int_equal(oracle_get32(blob, 16), 5000);
    assert_int_equal(oracle_get64(blob, 24), 200000);   /* elapsed */
    assert_int_equal(oracle_get64(blob, 32), 3 * 5000); /* E */
    assert_int_equal(oracle_get64(blob, 40), 0);        /* deadline */
    assert_int_equal(oracle_get32(blob, 48), 0);        /* pending */
    assert_int_equal(oracle_get32(blob, 52), 0);        /* advance */
    assert_int_equal(oracle_get64(blob, 56), 1000000000ull);
    /* Advance off: no tuner estimate or deviation. */
    assert_int_equal(oracle_get32(blob, 64), 0);
    assert_int_equal(oracle_get32(blob, 68), 0);
    /* Not clamped: no clamp period (clamp_period_field_is_checked). */
    assert_int_equal(oracle_get32(blob, 72), 0);
    /* Flags: software-enabled, count-down active, expiry unprocessed. */
    assert_int_equal(oracle_get32(blob, 20), 0x7);
    /* Nothing settled by the save (76..95), no outlier run (96),
     * reserved bytes zero. */
    for (i = 76; i < 124; i++)
        assert_int_equal(blob[i], 0);
    assert_int_equal(oracle_get32(blob, 124), oracle_crc32(blob, 124));
}

/* A fixed 2.5 us advance. */
TU_SETUP(advance_2500_setup, c.advance_mode = LAPICT_ADVANCE_FIXED;
         c.advance_ns = 2500)

static void blob_carries_tsc_deadline_and_advance(void **state)
{
    TU_FIX(state);
    uint8_t blob[SZ];
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, 0x123456789ABCull);
    save(t, blob);
    assert_int_equal(oracle_get32(blob, 8), LAPICT_LVTT_TSC_DEADLINE | VEC);
    assert_int_equal(oracle_get32(blob, 16), 0);
    assert_int_equal(oracle_get64(blob, 40), 0x123456789ABCull);
    assert_int_equal(oracle_get32(blob, 52), 2500);
}

enum scen {
    S_RESET,
    S_ONESHOT,
    S_PERIODIC,
    S_PERIODIC_CLAMPED,
    S_DEADLINE,
    S_MASKED,
    S_SVR_OFF,
    S_STOPPED_AFTER_EXPIRY,
    S_COUNT
};

static void build(enum scen s, struct fake_host *h, struct lapict_timer *t,
                  uint64_t base)
{
    struct lapict_config c = tu_cfg();
    c.min_period_ns = 200000;
    tu_setup(h, t, &c, base, (s & 1) != 0);
    h->sim.cfg.tsc_offset = 1000000000000ull;
    switch (s) {
    case S_RESET:
        break;
    case S_ONESHOT:
        countdown(t, 0x0, LAPICT_LVTT_ONESHOT, 3000000);
        break;
    case S_PERIODIC:
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 700001);
        break;
    case S_PERIODIC_CLAMPED:
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 7);
        break;
    case S_DEADLINE:
        lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        lapict_tsc_deadline_write(t, fake_tsc(h) + 2500000);
        break;
    case S_MASKED:
        countdown(t, 0x9, LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK, 20000);
        break;
    case S_SVR_OFF:
        lapict_svr_write(t, false);
        countdown(t, 0x1, LAPICT_LVTT_PERIODIC, 100000);
        break;
    case S_STOPPED_AFTER_EXPIRY:
        countdown(t, 0xB, LAPICT_LVTT_ONESHOT, 1000);
        break;
    default:
        break;
    }
    fake_advance(h, 1234567);
}

/* Compare two instances over the next 10 ms: same reads, same interrupts
 * (relative to their own clocks). */
static void assert_same_future(struct fake_host *ha, struct lapict_timer *ta,
                               struct fake_host *hb, struct lapict_timer *tb)
{
    uint64_t a0 = ha->sim.now_ns, b0 = hb->sim.now_ns;
    unsigned na = ha->sim.injects, nb = hb->sim.injects, i;
    int step;
    for (step = 0; step < 100; step++) {
        fake_advance(ha, 100000);
        fake_advance(hb, 100000);
        tu_assert_regs_equal(tu_read_regs(ta), tu_read_regs(tb));
        if (step == 50) {
            lapict_svr_write(ta, true);
            lapict_svr_write(tb, true);
            lapict_lvtt_write(ta, lapict_lvtt_read(ta) & ~LAPICT_LVTT_MASK);
            lapict_lvtt_write(tb, lapict_lvtt_read(tb) & ~LAPICT_LVTT_MASK);
        }
    }
    assert_int_equal(ha->sim.injects - na, hb->sim.injects - nb);
    for (i = 0; i < ha->sim.injects - na && na + i < FAKE_MAX_EVENTS; i++) {
        assert_int_equal(ha->inj[na + i].host_ns - a0,
                         hb->inj[nb + i].host_ns - b0);
        assert_int_equal(ha->inj[na + i].vector, hb->inj[nb + i].vector);
    }
}

static void round_trip_at_same_instant_changes_nothing_observable(void **state)
{
    size_t b = tu_base_index(state);
    int s;
    for (s = 0; s < S_COUNT; s++) {
        struct fake_host ha, hb, hc;
        struct lapict_timer ta, tb, tc;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ], blob2[SZ];
        c.min_period_ns = 200000;
        print_message("base %zu scenario %d\n", b, s);
        build((enum scen)s, &ha, &ta, tu_bases[b]);
        /* Restored into a fresh instance on another host, same TSC. */
        save(&ta, blob);
        tu_setup(&hb, &tb, &c, tu_bases[1 - b] + 777, (s & 1) == 0);
        hb.sim.cfg.tsc_offset =
            fake_tsc(&ha) - fake_tsc(&hb) + hb.sim.cfg.tsc_offset;
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        tu_assert_regs_equal(tu_read_regs(&ta), tu_read_regs(&tb));
        /* Saving again gives the same blob. */
        save(&tb, blob2);
        assert_memory_equal(blob, blob2, SZ);
        /* And into the same instance. */
        build((enum scen)s, &hc, &tc, tu_bases[b]);
        assert_int_equal(lapict_state_restore(&tc, blob, SZ), LAPICT_OK);
        tu_assert_regs_equal(tu_read_regs(&ta), tu_read_regs(&tc));
        assert_same_future(&ha, &ta, &hb, &tb);
        tu_check_host(&ha);
        tu_check_host(&hb);
    }
}

static void save_mid_oneshot_resumes_remainder(void **state)
{
    static const uint64_t buses[] = {1000000000ull, 25000000ull, 134217728ull};
    size_t b = tu_base_index(state), bi;
    for (bi = 0; bi < 3; bi++) {
        struct fake_host ha, hb;
        struct lapict_timer ta, tb;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ];
        const uint32_t N = 1000000;
        uint64_t done = 400000, T, r, dur;
        c.bus_hz = buses[bi];
        tu_setup(&ha, &ta, &c, tu_bases[b], false);
        countdown(&ta, 0xB, LAPICT_LVTT_ONESHOT, N);
        fake_advance(&ha, done);
        save(&ta, blob);
        /* The destination clock is 10^9 ns later (and elsewhere). */
        tu_setup(&hb, &tb, &c, tu_bases[b] + done + 1000000000ull, true);
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        T = oracle_ticks_in(done, buses[bi], 1);
        assert_int_equal(lapict_tmcct_read(&tb), N - T);
        assert_int_equal(lapict_tmict_read(&tb), N);
        /* Time stood still: the rest of the count-down remains. */
        dur = oracle_ns_for(N, buses[bi], 1);
        r = dur - done;
        fake_advance(&hb, r - 1);
        assert_int_equal(hb.sim.injects, 0);
        fake_advance(&hb, 1);
        assert_int_equal(hb.sim.injects, 1);
        assert_int_equal(hb.inj[0].host_ns,
                         tu_bases[b] + done + 1000000000ull + r);
        fake_advance(&hb, 10 * dur);
        assert_int_equal(hb.sim.injects, 1);
        tu_check_host(&hb);
    }
}

static void save_mid_periodic_keeps_grid_relative(void **state)
{
    TU_PAIR(state);
    uint8_t blob[SZ];
    uint64_t r;
    countdown(ta, 0xB, LAPICT_LVTT_PERIODIC, 300000);
    fake_advance(ha, 1000000); /* 3 expiries, 100 us into the 4th */
    save(ta, blob);
    tu_setup(hb, tb, c, tu_bases[1 - p->b], false);
    r = hb->sim.now_ns;
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(tb), 200000);
    fake_advance(hb, 500000);
    assert_int_equal(hb->sim.injects, 2);
    assert_int_equal(hb->inj[0].host_ns, r + 200000);
    assert_int_equal(hb->inj[1].host_ns, r + 500000);
}

static void
tsc_deadline_restored_fires_when_destination_tsc_reaches_it(void **state)
{
    TU_PAIR(state);
    uint8_t blob[SZ];
    uint64_t D, r;
    lapict_lvtt_write(ta, LAPICT_LVTT_TSC_DEADLINE | VEC);
    D = fake_tsc(ha) + 5000000;
    lapict_tsc_deadline_write(ta, D);
    fake_advance(ha, 1000000);
    save(ta, blob);
    /* Destination guest TSC is 3 ms short of D (not 4 ms). */
    tu_pair_dst(p, tu_bases[1 - p->b], D - 3000000, p->b == 0);
    r = hb->sim.now_ns;
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    assert_int_equal(lapict_tsc_deadline_read(tb), D);
    fake_advance(hb, 2999999);
    assert_int_equal(hb->sim.injects, 0);
    fake_advance(hb, 1);
    assert_int_equal(hb->sim.injects, 1);
    assert_int_equal(hb->inj[0].host_ns, r + 3000000);
    assert_int_equal(lapict_tsc_deadline_read(tb), 0);
    /* A destination already past D fires at once. */
    tu_pair_dst(p, 0, D + 5, false);
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    fake_run_due(hb);
    lapict_irq_window_open(tb);
    assert_int_equal(hb->sim.injects, 1);
    assert_int_equal(hb->inj[0].host_ns, 0);
}

/* The expiry instant passed, the host timer has not fired yet: the blob
 * carries it as pending (the source does not inject it); it is delivered
 * once in total, on the destination, and never again. */
static void
save_after_expiry_before_delivery_delivers_exactly_once(void **state)
{
    TU_PAIR(state);
    size_t win;
    for (win = 0; win < 2; win++) {
        uint8_t blob[SZ];
        tu_setup(ha, ta, c, tu_bases[p->b], true);
        countdown(ta, 0xB, LAPICT_LVTT_ONESHOT, 1000000);
        ha->sim.window_open = win != 0;
        fake_stall(ha, 1000500);
        save(ta, blob);
        tu_setup(hb, tb, c, tu_bases[1 - p->b] + 99, false);
        assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
        fake_run_due(hb);
        fake_window(hb, true);
        fake_advance(hb, 5000000);
        fake_window(hb, true);
        assert_int_equal(ha->sim.injects, 0);
        assert_int_equal(hb->sim.injects, 1);
        assert_int_equal(lapict_tmcct_read(tb), 0);
    }
}

static void save_after_delivery_never_redelivers(void **state)
{
    static const uint32_t modes[] = {LAPICT_LVTT_ONESHOT,
                                     LAPICT_LVTT_TSC_DEADLINE};
    size_t b = tu_base_index(state), m;
    for (m = 0; m < 2; m++) {
        struct fake_host ha, hb;
        struct lapict_timer ta, tb;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ];
        tu_setup(&ha, &ta, &c, tu_bases[b], false);
        if (m == 0) {
            countdown(&ta, 0xB, modes[m], 1000000);
        } else {
            lapict_lvtt_write(&ta, modes[m] | VEC);
            lapict_tsc_deadline_write(&ta, fake_tsc(&ha) + 1000000);
        }
        fake_advance(&ha, 1000000);
        assert_int_equal(ha.sim.injects, 1);
        fake_advance(&ha, 10);
        save(&ta, blob);
        /* Destination TSC behind the source's: D would be ahead. */
        fake_host_init(&hb, tu_bases[b], 1000000, 0, true);
        assert_int_equal(fake_attach(&hb, &tb, &c), LAPICT_OK);
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        fake_run_due(&hb);
        fake_window(&hb, true);
        fake_advance(&hb, 50000000);
        assert_int_equal(hb.sim.injects, 0);
    }
}

static void pending_at_save_delivered_once_after_restore(void **state)
{
    TU_PAIR(state);
    uint8_t blob[SZ];
    countdown(ta, 0xB, LAPICT_LVTT_ONESHOT, 1000);
    fake_window(ha, false);
    fake_advance(ha, 5000);
    assert_int_equal(tu_stats(ta).pending, 1);
    save(ta, blob);
    assert_int_equal(oracle_get32(blob, 48), 1);
    hb->sim.window_open = false;
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(tb) & LAPICT_LVTT_PENDING,
                     LAPICT_LVTT_PENDING);
    fake_advance(hb, 1000);
    assert_int_equal(hb->sim.injects, 0);
    fake_window(hb, true);
    assert_int_equal(hb->sim.injects, 1);
    assert_int_equal(hb->inj[0].vector, VEC);
    fake_window(hb, true);
    fake_advance(hb, 10000000);
    assert_int_equal(hb->sim.injects, 1);
    assert_int_equal(ha->sim.injects, 0);
}

TU_PAIR_SETUP(catch_up_pair_setup, c.missed_policy = LAPICT_MISSED_CATCH_UP)

/* Catch-up: every pending tick survives the migration. */
static void catch_up_pending_count_survives_restore(void **state)
{
    TU_PAIR(state);
    uint8_t blob[SZ];
    countdown(ta, 0xB, LAPICT_LVTT_PERIODIC, 1000000);
    fake_window(ha, false);
    fake_advance(ha, 4500000);
    assert_int_equal(tu_stats(ta).pending, 4);
    save(ta, blob);
    assert_int_equal(oracle_get32(blob, 48), 4);
    tu_setup(hb, tb, c, tu_bases[1 - p->b], false);
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    fake_window(hb, true);
    assert_int_equal(hb->sim.injects, 4);
}

static void restore_with_hw_timer_armed_cancels_it(void **state)
{
    TU_PAIR(state);
    uint8_t blob[SZ];
    save(ta, blob); /* reset state: nothing running */
    tu_setup(hb, tb, c, tu_bases[p->b], true);
    countdown(tb, 0xB, LAPICT_LVTT_ONESHOT, 1000000);
    assert_true(hb->sim.hv_armed);
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    assert_true(hb->sim.hv_cancels >= 1);
    assert_false(hb->sim.hv_armed);
    assert_false(hb->sim.sw_armed);
    fake_advance(hb, 1000000);
    fake_fire_hv(hb); /* stale */
    fake_advance(hb, 1000000);
    assert_int_equal(hb->sim.injects, 0);
    assert_int_equal(lapict_lvtt_read(tb), LAPICT_LVTT_RESET);
    assert_int_equal(lapict_tmict_read(tb), 0);
}

/* A restore replaces a pending interrupt of the destination instance. */
static void restore_drops_destination_pending(void **state)
{
    TU_PAIR(state);
    uint8_t blob[SZ];
    save(ta, blob);
    tu_setup(hb, tb, c, 0, false);
    countdown(tb, 0xB, LAPICT_LVTT_ONESHOT, 1000);
    fake_window(hb, false);
    fake_advance(hb, 1000);
    assert_int_equal(tu_stats(tb).pending, 1);
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    assert_int_equal(tu_stats(tb).pending, 0);
    fake_window(hb, true);
    assert_int_equal(hb->sim.injects, 0);
}

/* A rejected blob: same code, instance bit-for-bit unchanged, no op. */
static void expect_rejected(const uint8_t *blob, size_t len, int code)
{
    struct fake_host h;
    struct lapict_timer t, copy;
    struct lapict_config c = tu_cfg();
    unsigned calls;
    int rc;
    tu_setup(&h, &t, &c, 5000, true);
    countdown(&t, 0x0, LAPICT_LVTT_PERIODIC, 3000000);
    fake_advance(&h, 1000);
    memcpy(&copy, &t, sizeof(t));
    calls = h.sim.sw_arms + h.sim.sw_cancels + h.sim.hv_arms +
            h.sim.hv_cancels + h.sim.injects;
    rc = lapict_state_restore(&t, blob, len);
    if (code == 0)
        assert_true(rc < 0);
    else
        assert_int_equal(rc, code);
    assert_memory_equal(&t, &copy, sizeof(t));
    assert_int_equal(h.sim.sw_arms + h.sim.sw_cancels + h.sim.hv_arms +
                         h.sim.hv_cancels + h.sim.injects,
                     calls);
}

static void
every_single_bit_flip_is_rejected_and_instance_unchanged(void **state)
{
    (void)state;
    uint8_t good[SZ], bad[SZ];
    size_t bit;
    make_blob(good, TU_NEAR_WRAP);
    for (bit = 0; bit < SZ * 8; bit++) {
        memcpy(bad, good, SZ);
        bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        /* Header bytes may be caught by their own check first. */
        expect_rejected(bad, SZ, bit / 8 >= 8 ? LAPICT_E_STATE_CHECKSUM : 0);
    }
}

static void
every_byte_corruption_is_rejected_and_instance_unchanged(void **state)
{
    (void)state;
    static const uint8_t pats[] = {0x00, 0xFF, 0x5A};
    uint8_t good[SZ], bad[SZ];
    size_t i, p;
    make_blob(good, 0);
    for (i = 0; i < SZ; i++)
        for (p = 0; p < 3; p++) {
            if (good[i] == pats[p])
                continue;
            memcpy(bad, good, SZ);
            bad[i] = pats[p];
            expect_rejected(bad, SZ, i >= 8 ? LAPICT_E_STATE_CHECKSUM : 0);
        }
    /* A swapped pair of bytes, and the checksum itself off by one. */
    memcpy(bad, good, SZ);
    bad[24] = good[25];
    bad[25] = good[24];
    if (bad[24] != good[24])
        expect_rejected(bad, SZ, LAPICT_E_STATE_CHECKSUM);
    memcpy(bad, good, SZ);
    oracle_put32(bad, 124, oracle_get32(good, 124) + 1);
    expect_rejected(bad, SZ, LAPICT_E_STATE_CHECKSUM);
}

static void wrong_magic_version_size_each_give_own_code(void **state)
{
    /* A header field (magic, version, size) forged, resealed: its code. */
    static const struct {
        size_t off, bytes;
        uint32_t value;
        int rc;
    } forged[] = {
        {0, 4, 0x5450414Du, LAPICT_E_STATE_MAGIC},
        {0, 4, 0, LAPICT_E_STATE_MAGIC},
        {4, 2, 2, LAPICT_E_STATE_VERSION},
        {4, 2, 0, LAPICT_E_STATE_VERSION},
        {6, 2, SZ - 1, LAPICT_E_STATE_SIZE},
        {6, 2, SZ + 1, LAPICT_E_STATE_SIZE},
    };
    uint8_t good[SZ], bad[SZ + 1];
    size_t i;
    (void)state;
    make_blob(good, 0);
    assert_int_equal(oracle_get32(good, 124), oracle_crc32(good, 124));

    for (i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        memcpy(bad, good, SZ);
        if (forged[i].bytes == 4)
            oracle_put32(bad, forged[i].off, forged[i].value);
        else
            oracle_put16(bad, forged[i].off, (uint16_t)forged[i].value);
        oracle_reseal(bad);
        expect_rejected(bad, SZ, forged[i].rc);
    }

    memcpy(bad, good, SZ);
    bad[SZ] = 0;
    expect_rejected(bad, SZ - 1, LAPICT_E_STATE_SIZE);
    expect_rejected(bad, 0, LAPICT_E_STATE_SIZE);

    memcpy(bad, good, SZ);
    oracle_put32(bad, 124, oracle_get32(bad, 124) ^ 0x80000000u);
    expect_rejected(bad, SZ, LAPICT_E_STATE_CHECKSUM);
}

static void restore_null_arguments_are_inval(void **state)
{
    TU_FIX(state);
    uint8_t good[SZ];
    make_blob(good, 0);
    assert_int_equal(lapict_state_restore(NULL, good, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_restore(t, NULL, SZ), LAPICT_E_INVAL);
}

struct field_case {
    const char *name;
    size_t off;
    unsigned width; /* 1, 2, 4, 8 */
    uint64_t value;
};

/* Correctly sealed blobs whose contents are invalid or inconsistent. */
static const struct field_case field_cases[] = {
    {"illegal-vector count with a legal vector", 92, 1, 1},
    {"outlier run without a tuner estimate", 96, 1, 1},
    {"outlier run beyond 8 bits", 96, 4, 0x101},
    {"late outlier run at its reseed length", 96, 4, 0x82},
    {"late outlier bit without a count", 96, 4, 0x80},
    {"reserved byte 100", 100, 1, 1},
    {"reserved byte 101", 101, 1, 0x80},
    {"reserved byte 123", 123, 1, 0xFF},
    {"lvtt bit 31", 8, 4, 0x80020030u},
    {"lvtt bit 8", 8, 4, 0x00020130u},
    {"lvtt bit 19", 8, 4, 0x000A0030u},
    {"lvtt mode 11", 8, 4, 0x00060030u},
    {"tdcr bit 2", 12, 4, 0x4},
    {"tdcr bit 4", 12, 4, 0x13},
    {"all flags", 20, 4, 0xFFFFFFFFu},
    {"E far beyond N", 32, 8, 1ull << 40},
    {"E at 2^64-1", 32, 8, UINT64_MAX},
    {"pending over catch-up limit", 48, 4, 0x10000},
    {"advance over limit", 52, 4, LAPICT_ADVANCE_NS_LIMIT + 1u},
};

static void correct_checksum_bad_fields_give_state_field(void **state)
{
    (void)state;
    uint8_t good[SZ], bad[SZ];
    size_t i;
    make_blob(good, 0);
    for (i = 0; i < sizeof(field_cases) / sizeof(field_cases[0]); i++) {
        const struct field_case *fc = &field_cases[i];
        print_message("field case: %s\n", fc->name);
        memcpy(bad, good, SZ);
        switch (fc->width) {
        case 1:
            bad[fc->off] = (uint8_t)fc->value;
            break;
        case 2:
            oracle_put16(bad, fc->off, (uint16_t)fc->value);
            break;
        case 4:
            oracle_put32(bad, fc->off, (uint32_t)fc->value);
            break;
        default:
            oracle_put64(bad, fc->off, fc->value);
            break;
        }
        oracle_reseal(bad);
        expect_rejected(bad, SZ, LAPICT_E_STATE_FIELD);
    }
}

/* TSC-deadline mode with a count-down, or a deadline in a count-down mode:
 * combinations no sequence of register writes can produce. */
static void inconsistent_mode_and_registers_give_state_field(void **state)
{
    TU_FIX(state);
    uint8_t good[SZ], bad[SZ];
    make_blob(good, 0);

    memcpy(bad, good, SZ); /* deadline mode, TMICT != 0 */
    oracle_put32(bad, 8, LAPICT_LVTT_TSC_DEADLINE | VEC);
    oracle_reseal(bad);
    expect_rejected(bad, SZ, LAPICT_E_STATE_FIELD);

    /* A deadline blob, then a count-down mode with the deadline kept. */
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, 99999999);
    save(t, good);
    memcpy(bad, good, SZ);
    oracle_put32(bad, 8, LAPICT_LVTT_ONESHOT | VEC);
    oracle_reseal(bad);
    expect_rejected(bad, SZ, LAPICT_E_STATE_FIELD);
}

/* A 100 MHz bus, not the 1 GHz of make_blob(). */
TU_SETUP(bus_100mhz_setup, c.bus_hz = 100000000)

static void restore_with_different_bus_hz_is_state_config(void **state)
{
    TU_FIX(state);
    uint8_t blob[SZ];
    struct lapict_timer copy;
    make_blob(blob, 0); /* saved at 1 GHz */
    countdown(t, 0xB, LAPICT_LVTT_ONESHOT, 5000000);
    memcpy(&copy, t, sizeof(copy));
    assert_int_equal(lapict_state_restore(t, blob, SZ), LAPICT_E_STATE_CONFIG);
    assert_memory_equal(t, &copy, sizeof(copy));
    /* And the blob's own bus_hz field forged to another rate. */
    make_blob(blob, 0);
    oracle_put64(blob, 56, 25000000);
    oracle_reseal(blob);
    expect_rejected(blob, SZ, LAPICT_E_STATE_CONFIG);
}

/* ---- Saving has no side effects ---- */

/*
 * Trap: while on, every op the instance calls through the host's recorder
 * fails the test, but the clock reads when clock_ok.
 */
static bool trap_clock_ok;

static void trap_op(void *arg, enum lapict_sim_op op, uint64_t a)
{
    (void)arg;
    if (trap_clock_ok &&
        (op == LAPICT_SIM_OP_NOW_NS || op == LAPICT_SIM_OP_GUEST_TSC))
        return;
    fail_msg("op %d (argument %llu) called during save", (int)op,
             (unsigned long long)a);
}

static void traps_on(struct fake_host *h, bool clock_ok)
{
    trap_clock_ok = clock_ok;
    h->rec.trace = trap_op;
}

static void traps_off(struct fake_host *h)
{
    h->rec.trace = NULL;
}

/* States in which a save finds work a register access would do. */
enum due {
    D_ONESHOT_DUE,     /* one-shot instant passed, host timer not run */
    D_PERIODIC_DUE,    /* one grid point passed */
    D_PERIODIC_MISSED, /* three grid points passed */
    D_DEADLINE_DUE,    /* guest TSC past the deadline */
    D_PREINJ_DUE,      /* injected ahead, then its instant passed */
    D_PREINJ_AHEAD,    /* injected ahead, instant not reached */
    D_PENDING_AND_DUE, /* one refused and pending, the next one due */
    D_ILLEGAL_DUE,     /* due with vector 5 (reported at delivery) */
    D_COUNT
};

static void build_due(enum due d, struct fake_host *h, struct lapict_timer *t,
                      uint64_t base, enum lapict_missed_policy pol)
{
    struct lapict_config c = tu_cfg();
    c.missed_policy = pol;
    c.catch_up_max = 100;
    if (d == D_PREINJ_DUE || d == D_PREINJ_AHEAD) {
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 3000;
    }
    tu_setup(h, t, &c, base, (d & 1) != 0);
    switch (d) {
    case D_ONESHOT_DUE:
        countdown(t, 0xB, LAPICT_LVTT_ONESHOT, 1000000);
        fake_stall(h, 1000500);
        break;
    case D_PERIODIC_DUE:
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 1000000);
        fake_stall(h, 1000500);
        break;
    case D_PERIODIC_MISSED:
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 1000000);
        fake_stall(h, 3000500);
        break;
    case D_DEADLINE_DUE:
        lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        lapict_tsc_deadline_write(t, fake_tsc(h) + 1000000);
        fake_stall(h, 1000500);
        break;
    case D_PREINJ_DUE:
    case D_PREINJ_AHEAD:
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 1000000);
        /* The host timer fires 3 us early: injected ahead. */
        fake_advance(h, 998000);
        assert_int_equal(h->sim.injects, 1);
        if (d == D_PREINJ_DUE)
            fake_stall(h, 2500);
        break;
    case D_PENDING_AND_DUE:
        countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 1000000);
        fake_window(h, false);
        fake_advance(h, 1000000);
        assert_int_equal(tu_stats(t).pending, 1);
        fake_stall(h, 1000100);
        break;
    default:
        countdown(t, 0xB, LAPICT_LVTT_ONESHOT, 1000);
        lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | 5u);
        fake_stall(h, 2000);
        break;
    }
}

/*
 * lapict_state_save() reads the clock and nothing else: no inject, no
 * timer op, no report; and the instance is bit-for-bit what it was.
 * lapict_state_save_at() calls no op at all and gives the same blob.
 */
static void save_calls_no_host_op_and_changes_nothing(void **state)
{
    size_t b = tu_base_index(state);
    int d, s;
    for (d = 0; d < D_COUNT + S_COUNT; d++) {
        struct fake_host h;
        struct lapict_timer t, copy;
        uint8_t blob[SZ], blob2[SZ];
        uint64_t now, tsc, calls;
        struct fake_host hcopy;
        print_message("base %zu state %d\n", b, d);
        if (d < D_COUNT)
            build_due((enum due)d, &h, &t, tu_bases[b], LAPICT_MISSED_COALESCE);
        else
            build((enum scen)(d - D_COUNT), &h, &t, tu_bases[b]);
        memcpy(&copy, &t, sizeof(t));
        traps_on(&h, true);
        memcpy(&hcopy, &h, sizeof(h));
        save(&t, blob);
        traps_off(&h);
        /* The clock was read through the trap: it was in the way. */
        assert_true(h.rec.total_calls > hcopy.rec.total_calls);
        assert_memory_equal(&t, &copy, sizeof(t));
        /* The host is untouched too (its recorder counts the clock reads). */
        hcopy.rec = h.rec;
        assert_memory_equal(&h, &hcopy, sizeof(h));
        now = h.sim.now_ns;
        tsc = fake_tsc(&h);
        calls = h.rec.total_calls;
        traps_on(&h, false);
        for (s = 0; s < 2; s++)
            assert_int_equal(lapict_state_save_at(&t, now, tsc, blob2, SZ),
                             LAPICT_OK);
        traps_off(&h);
        assert_int_equal(h.rec.total_calls, calls);
        assert_memory_equal(blob, blob2, SZ);
        assert_memory_equal(&t, &copy, sizeof(t));
    }
}

/*
 * The blob of a save is the blob of the same instance serviced at that
 * instant with the host refusing the interrupt: a due expiry travels as
 * pending, periodic timers sit on their next grid point, and the
 * missed-tick policy has been applied.
 */
static void save_describes_the_state_as_if_serviced_now(void **state)
{
    static const enum lapict_missed_policy pols[] = {
        LAPICT_MISSED_COALESCE, LAPICT_MISSED_CATCH_UP, LAPICT_MISSED_DROP};
    size_t b = tu_base_index(state), p;
    int d;
    for (p = 0; p < 3; p++)
        for (d = 0; d < D_COUNT; d++) {
            struct fake_host ha, hb;
            struct lapict_timer ta, tb;
            uint8_t blob_a[SZ], blob_b[SZ];
            print_message("base %zu policy %zu state %d\n", b, p, d);
            build_due((enum due)d, &ha, &ta, tu_bases[b], pols[p]);
            build_due((enum due)d, &hb, &tb, tu_bases[b], pols[p]);
            save(&ta, blob_a);
            /* The twin is serviced at the same instant, window shut. */
            hb.sim.window_open = false;
            assert_int_equal(lapict_expire(&tb), LAPICT_OK);
            save(&tb, blob_b);
            if (d == D_ILLEGAL_DUE) {
                /* Servicing drops and reports an illegal vector at
                 * its expiry; the save drops it too (nothing pending)
                 * and counts it at 92, so that the destination
                 * reports it (ESR), once. */
                assert_int_equal(oracle_get32(blob_a, 48), 0);
                assert_int_equal(oracle_get32(blob_b, 48), 0);
                assert_int_equal(oracle_get32(blob_a, 92), 1);
                assert_int_equal(oracle_get32(blob_b, 92), 0);
                assert_int_equal(hb.sim.reports, 1);
                assert_int_equal(ha.sim.reports, 0);
                continue;
            }
            /*
             * What the save's settling counted travels for the
             * destination (76..95: expiries, masked, coalesced,
             * dropped): exactly what servicing counted on the twin.
             */
            {
                struct lapict_stats sa = tu_stats(&ta), sb = tu_stats(&tb);
                assert_int_equal(oracle_get32(blob_a, 76),
                                 sb.expiries - sa.expiries);
                assert_int_equal(oracle_get32(blob_a, 80),
                                 sb.masked - sa.masked);
                assert_int_equal(oracle_get32(blob_a, 84),
                                 sb.coalesced - sa.coalesced);
                assert_int_equal(oracle_get32(blob_a, 88),
                                 sb.dropped - sa.dropped);
                /* Every state but the one not yet due expired. */
                assert_true(d == D_PREINJ_AHEAD ||
                            oracle_get32(blob_a, 76) >= 1);
            }
            /* The rest is the serviced twin's blob, byte for byte. */
            assert_memory_equal(blob_a, blob_b, 76);
            assert_int_equal(oracle_get32(blob_a, 92), 0);
            assert_memory_equal(blob_a + 96, blob_b + 96, 124 - 96);
        }
}

/*
 * Rule (docs/spec/timer.md section 6, coalesce: the others are counted in
 * stats; section 8: save has no side effects). A periodic tick held pending
 * plus a due grid point fold into one pending in the blob; what that settling
 * counted travels (76..95) and the destination counts it, as servicing
 * would have. Found by lapict-vmm --test=migrate, whose guest counts every
 * periodic tick.
 */
static void tick_coalesced_by_a_save_is_counted_on_the_destination(void **state)
{
    struct fake_host h, h2;
    struct lapict_timer t, t2;
    struct lapict_config c = tu_cfg();
    struct lapict_stats a, b;
    uint8_t blob[LAPICT_STATE_SIZE];

    (void)state;
    tu_setup(&h, &t, &c, 1000, false);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | 0x30),
                     LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1000000), LAPICT_OK);
    h.sim.window_open = false; /* the guest cannot take it: held */
    h.sim.now_ns += 1000000;   /* grid point 1: serviced, pending */
    lapict_expire(&t);
    h.sim.now_ns += 1000000; /* grid point 2: due, not yet serviced */
    assert_int_equal(lapict_state_save(&t, blob, sizeof(blob)), LAPICT_OK);
    tu_setup(&h2, &t2, &c, 5000, false);
    assert_int_equal(lapict_state_restore(&t2, blob, sizeof(blob)), LAPICT_OK);
    lapict_irq_window_open(&t2);
    assert_int_equal(h2.sim.injects, 1); /* one delivered: coalesce */
    lapict_stats_get(&t, &a, sizeof(a));
    lapict_stats_get(&t2, &b, sizeof(b));
    /* The other one shows as coalesced, on the destination (the source
     * is unchanged by the save), and the expiry is counted there too. */
    assert_int_equal(a.coalesced, 0);
    assert_int_equal(b.expiries, 1);
    assert_int_equal(a.coalesced + b.coalesced, 1);
}

/*
 * A VMM saves its interrupt controller (a model IRR here: the vectors the
 * source host accepted) and the timer in either order, and restores them in
 * either order on the destination, then does what state.h asks: one
 * lapict_irq_window_open(). Every interrupt due by the save instant is
 * delivered exactly once across the migration, whatever the orders.
 */
static unsigned migrate_with_irr(enum due d, enum lapict_missed_policy pol,
                                 uint64_t base, bool timer_first_src,
                                 bool timer_first_dst, unsigned *expected)
{
    struct fake_host ha, hb;
    struct lapict_timer ta, tb;
    struct lapict_config c = tu_cfg();
    uint8_t blob[SZ];
    unsigned irr, lost = 0, before_irr;
    build_due(d, &ha, &ta, base, pol);
    if (timer_first_src) {
        save(&ta, blob);
        irr = ha.sim.injects; /* the IRR snapshot holds what was injected */
    } else {
        irr = ha.sim.injects;
        save(&ta, blob);
    }
    /* Interrupts of the source that did not make it into the IRR copy. */
    lost += ha.sim.injects - irr;
    c.missed_policy = pol;
    c.catch_up_max = 100;
    if (d == D_PREINJ_DUE || d == D_PREINJ_AHEAD) {
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 3000;
    }
    tu_setup(&hb, &tb, &c, base + 5000000000ull, false);
    hb.sim.cfg.tsc_offset = fake_tsc(&ha); /* the TSC continues */
    if (timer_first_dst) {
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        /* Restoring the IRR copy overwrites what was injected meanwhile. */
        lost += hb.sim.injects;
        before_irr = hb.sim.injects;
    } else {
        before_irr = 0;
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
    }
    assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
    assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
    fake_enter(&hb);
    /* Before the next expiry of any of the states. */
    fake_advance(&hb, 400000);
    *expected = lost;
    return irr + (hb.sim.injects - before_irr);
}

static void due_expiry_delivered_once_whatever_the_irr_save_order(void **state)
{
    /* Interrupts in the guest's hands across the migration, per state:
     * (source IRR copy + destination deliveries). Pre-injected expiries were
     * injected before the vCPU stopped, so the IRR copy holds them. */
    static const struct {
        enum due d;
        enum lapict_missed_policy pol;
        unsigned want;
    } cases[] = {
        {D_ONESHOT_DUE, LAPICT_MISSED_COALESCE, 1},
        {D_PERIODIC_DUE, LAPICT_MISSED_COALESCE, 1},
        {D_PERIODIC_DUE, LAPICT_MISSED_DROP, 1},
        {D_PERIODIC_MISSED, LAPICT_MISSED_COALESCE, 1},
        {D_PERIODIC_MISSED, LAPICT_MISSED_CATCH_UP, 3},
        {D_PERIODIC_MISSED, LAPICT_MISSED_DROP, 0},
        {D_DEADLINE_DUE, LAPICT_MISSED_COALESCE, 1},
        {D_PREINJ_DUE, LAPICT_MISSED_COALESCE, 1},
        {D_PREINJ_AHEAD, LAPICT_MISSED_COALESCE, 1},
        {D_PENDING_AND_DUE, LAPICT_MISSED_COALESCE, 1},
        {D_PENDING_AND_DUE, LAPICT_MISSED_CATCH_UP, 2},
        {D_ILLEGAL_DUE, LAPICT_MISSED_COALESCE, 0},
    };
    size_t b = tu_base_index(state), i;
    int o;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (o = 0; o < 4; o++) {
            unsigned lost, got;
            print_message("base %zu case %zu order %d\n", b, i, o);
            got = migrate_with_irr(cases[i].d, cases[i].pol, tu_bases[b], o & 1,
                                   o & 2, &lost);
            assert_int_equal(lost, 0);
            assert_int_equal(got, cases[i].want);
        }
}

/*
 * state.h: restore never calls inject (an interrupt controller restored
 * after it would overwrite the injection); the host calls
 * lapict_irq_window_open() once after restoring, and that delivers what the
 * blob holds pending and any expiry already due, once.
 */
static void restore_injects_nothing_window_open_delivers_once(void **state)
{
    size_t b = tu_base_index(state);
    int w;
    for (w = 0; w < 2; w++) {
        struct fake_host ha, hb;
        struct lapict_timer ta, tb;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ];
        uint64_t D;
        tu_setup(&ha, &ta, &c, tu_bases[b], false);
        lapict_lvtt_write(&ta, LAPICT_LVTT_TSC_DEADLINE | VEC);
        D = fake_tsc(&ha) + 1000000;
        lapict_tsc_deadline_write(&ta, D);
        save(&ta, blob);
        /* The destination's TSC is already past D: due on arrival. */
        fake_host_init(&hb, tu_bases[1 - b], 1000000, D + 10, w != 0);
        assert_int_equal(fake_attach(&hb, &tb, &c), LAPICT_OK);
        hb.sim.window_open = w != 0;
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        assert_int_equal(hb.sim.injects + hb.sim.refusals, 0);
        assert_int_equal(lapict_tsc_deadline_read(&tb), 0);
        assert_int_equal(hb.sim.injects + hb.sim.refusals, 0);
        assert_int_equal(lapict_lvtt_read(&tb) & LAPICT_LVTT_PENDING,
                         LAPICT_LVTT_PENDING);
        /* Window closed: it stays pending, offered again later. */
        assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
        assert_int_equal(hb.sim.injects, w ? 1u : 0u);
        fake_window(&hb, true);
        fake_window(&hb, true);
        fake_advance(&hb, 10000000);
        assert_int_equal(hb.sim.injects, 1);
        assert_int_equal(hb.inj[0].vector, VEC);
        tu_check_host(&hb);
    }
}

/* ---- Forged blobs: the flag space, pre-injections ---- */

/* Restore @blob into an instance built with @c whose guest TSC reads @tsc
 * (the source's at the save: it continues); on rejection the instance and
 * its host must be bit-for-bit unchanged. Returns the status. */
static int restore_into_tsc(const struct lapict_config *c, const uint8_t *blob,
                            uint64_t tsc)
{
    struct fake_host h, hcopy;
    struct lapict_timer t, copy;
    int rc;
    tu_setup(&h, &t, c, 777777, true);
    countdown(&t, 0x0, LAPICT_LVTT_PERIODIC, 3000000);
    fake_advance(&h, 1000);
    h.sim.cfg.tsc_offset += tsc - fake_tsc(&h);
    memcpy(&copy, &t, sizeof(t));
    memcpy(&hcopy, &h, sizeof(h));
    rc = lapict_state_restore(&t, blob, SZ);
    if (rc != LAPICT_OK) {
        assert_memory_equal(&t, &copy, sizeof(t));
        /* Only the clock may have been read. */
        hcopy.rec = h.rec;
        assert_memory_equal(&h, &hcopy, sizeof(h));
    }
    return rc;
}

static int restore_into(const struct lapict_config *c, const uint8_t *blob)
{
    return restore_into_tsc(c, blob, 0);
}

#define B_SVR 0x01u
#define B_ACT 0x02u
#define B_ARM 0x04u
#define B_CLA 0x08u
#define B_DLA 0x10u
#define B_PRE 0x20u
#define B_EST 0x40u

/* The library-made states: base state x SVR x tuner estimate. */
enum base {
    B_OS_STOPPED,
    B_OS_RUNNING,
    B_OS_PREINJ,
    B_P_STOPPED,
    B_P_RUNNING,
    B_P_CLAMPED,
    B_P_PREINJ,
    B_P_CLAMPED_PREINJ,
    B_DL_DISARMED,
    B_DL_ARMED,
    B_DL_PREINJ,
    B_COUNT
};

static struct lapict_config flag_cfg(void)
{
    struct lapict_config c = tu_cfg();
    c.min_period_ns = 200000;
    c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
    c.advance_ns = 2000;
    return c;
}

/* Run to just past the host timer armed the advance before @dur. */
static void to_preinj(struct fake_host *h, struct lapict_timer *t, uint64_t dur)
{
    uint32_t adv = tu_stats(t).advance_ns;
    assert_true(adv > 2);
    fake_advance(h, dur - adv / 2);
}

/*
 * Each base state: LVTT written with @mode (unless @write_lvtt is false:
 * the reset value), @count in TMICT or, in TSC-deadline mode, a deadline
 * @count TSC ticks ahead; then it runs to just past the expiry injected
 * ahead @preinj_ns in, or else for @run_ns.
 */
struct base_case {
    bool write_lvtt;
    uint32_t mode, count;
    uint64_t run_ns, preinj_ns;
};
#define OS LAPICT_LVTT_ONESHOT
#define PER LAPICT_LVTT_PERIODIC
#define DL LAPICT_LVTT_TSC_DEADLINE
static const struct base_case base_cases[B_COUNT] = {
    [B_OS_STOPPED] = {false, OS, 0, 0, 0},
    [B_OS_RUNNING] = {true, OS, 1000000, 1000, 0},
    [B_OS_PREINJ] = {true, OS, 1000000, 0, 1000000},
    [B_P_STOPPED] = {true, PER, 0, 0, 0},
    [B_P_RUNNING] = {true, PER, 1000000, 1000, 0},
    [B_P_CLAMPED] = {true, PER, 7, 1000, 0},
    [B_P_PREINJ] = {true, PER, 1000000, 0, 1000000},
    [B_P_CLAMPED_PREINJ] = {true, PER, 7, 0, 200000},
    [B_DL_DISARMED] = {true, DL, 0, 0, 0},
    [B_DL_ARMED] = {true, DL, 1000000, 0, 0},
    [B_DL_PREINJ] = {true, DL, 1000000, 0, 1000000},
};
#undef OS
#undef PER
#undef DL

/* Returns the guest TSC at the save. */
static uint64_t produce(enum base bs, bool svr_off, bool est, uint8_t *blob)
{
    const struct base_case *bc = &base_cases[bs];
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = flag_cfg();
    tu_setup(&h, &t, &c, 1000, false);
    if (est) {
        /* One pre-injected expiry and its entry: the tuner's first sample. */
        countdown(&t, 0xB, LAPICT_LVTT_ONESHOT, 100000);
        fake_advance(&h, 200000);
        fake_enter(&h);
        lapict_reset(&t);
    }
    fake_advance(&h, 1000000);
    if (bc->count && bc->mode != LAPICT_LVTT_TSC_DEADLINE)
        countdown(&t, 0xB, bc->mode, bc->count);
    else if (bc->write_lvtt)
        lapict_lvtt_write(&t, bc->mode | VEC);
    if (bc->count && bc->mode == LAPICT_LVTT_TSC_DEADLINE)
        lapict_tsc_deadline_write(&t, fake_tsc(&h) + bc->count);
    if (bc->preinj_ns)
        to_preinj(&h, &t, bc->preinj_ns);
    else if (bc->run_ns)
        fake_advance(&h, bc->run_ns);
    if (svr_off)
        lapict_svr_write(&t, false);
    save(&t, blob);
    return fake_tsc(&h);
}

static unsigned flag_key(const uint8_t *blob)
{
    uint32_t mode = (oracle_get32(blob, 8) >> 17) & 3u;
    return mode * 128u + (oracle_get32(blob, 20) & 0x7Fu);
}

/*
 * Every (timer mode, blob flags) combination: either the library produces
 * it (shown by producing it: each produced blob restores), or every blob
 * carrying it is rejected, the instance unchanged. A rejected combination
 * is tried on every produced blob of its mode, with only the flags (and a
 * deadline for the deadline-armed flag) changed, so that it is the flags
 * that are refused.
 */
static void every_flag_combination_is_producible_or_rejected(void **state)
{
    (void)state;
    static uint8_t blobs[B_COUNT * 4][SZ];
    uint64_t tscs[B_COUNT * 4];
    bool produced[3 * 128] = {false};
    struct lapict_config c = flag_cfg();
    unsigned nb = 0, key, i, n_rejected = 0, n_produced = 0;
    int bs, v;
    for (bs = 0; bs < B_COUNT; bs++)
        for (v = 0; v < 4; v++) {
            uint8_t *b = blobs[nb];
            tscs[nb++] = produce((enum base)bs, v & 1, v & 2, b);
            /* The variant got what it asked for. */
            assert_int_equal(!(oracle_get32(b, 20) & B_SVR), v & 1);
            assert_int_equal(!!(oracle_get32(b, 20) & B_EST), !!(v & 2));
            if (bs == B_OS_PREINJ || bs == B_P_PREINJ ||
                bs == B_P_CLAMPED_PREINJ || bs == B_DL_PREINJ)
                assert_true(oracle_get32(b, 20) & B_PRE);
            produced[flag_key(b)] = true;
            assert_int_equal(restore_into_tsc(&c, b, tscs[nb - 1]), LAPICT_OK);
        }
    for (key = 0; key < 3 * 128; key++) {
        uint32_t fl = key % 128u, mode = key / 128u;
        if (produced[key]) {
            n_produced++;
            continue;
        }
        for (i = 0; i < nb; i++) {
            uint8_t bad[SZ];
            int dl;
            if (((oracle_get32(blobs[i], 8) >> 17) & 3u) != mode)
                continue;
            for (dl = 0; dl < 2; dl++) {
                memcpy(bad, blobs[i], SZ);
                oracle_put32(bad, 20, fl);
                if (dl)
                    oracle_put64(bad, 40, (fl & B_DLA) ? 5000000000ull : 0);
                oracle_reseal(bad);
                if (restore_into_tsc(&c, bad, tscs[i]) == LAPICT_OK)
                    fail_msg("mode %u flags 0x%02x accepted (template %u), "
                             "but the library never produces it",
                             mode, fl, i);
                n_rejected++;
            }
        }
    }
    print_message("%u combinations produced, %u forged blobs rejected\n",
                  n_produced, n_rejected);
    /* 11 base states x SVR x estimate, all distinct. */
    assert_int_equal(n_produced, B_COUNT * 4);
}

/* A forged blob for the pre-injection tests: @blob with flags and fields
 * set, resealed. */
static void forge32(uint8_t *blob, size_t off, uint32_t v)
{
    oracle_put32(blob, off, v);
    oracle_reseal(blob);
}

/* The slowest bus and a fixed 5 us advance. */
TU_SETUP(slowest_bus_advance_setup, c.bus_hz = LAPICT_BUS_HZ_MIN;
         c.advance_mode = LAPICT_ADVANCE_FIXED; c.advance_ns = 5000)

/*
 * A forged pre-injection is refused: a one-shot of 2^32-1 ticks at divide 128
 * on a 1 kHz bus (16 years) marked as already injected ahead. Accepted, the
 * next guest entry would spin for the whole count and swallow the real expiry.
 * A pre-injected instant must lie within the blob's advance of now (plus one
 * TSC period for a deadline's estimate), nothing may be pending, and the
 * flags must match the mode.
 */
static void forged_preinjection_is_rejected(void **state)
{
    TU_FIX(state);
    struct lapict_config ca;
    uint8_t blob[SZ], bad[SZ];
    uint64_t tsc;

    countdown(t, 0xA, LAPICT_LVTT_ONESHOT, UINT32_MAX);
    fake_advance(h, 1000);
    save(t, blob);
    memcpy(bad, blob, SZ);
    forge32(bad, 20, oracle_get32(bad, 20) | B_PRE);
    assert_int_equal(restore_into(&f->cfg, bad), LAPICT_E_STATE_FIELD);

    /* Real pre-injections, then forged around them. */
    ca = flag_cfg();
    produce(B_OS_PREINJ, false, false, blob);
    assert_int_equal(restore_into(&ca, blob), LAPICT_OK);
    /* ... with a pending interrupt as well: never both. */
    memcpy(bad, blob, SZ);
    forge32(bad, 48, 1);
    assert_int_equal(restore_into(&ca, bad), LAPICT_E_STATE_FIELD);
    /* ... with less advance than the instant is away. */
    memcpy(bad, blob, SZ);
    forge32(bad, 52, 1);
    assert_int_equal(restore_into(&ca, bad), LAPICT_E_STATE_FIELD);
    /* ... moved 1 ms before its instant. */
    memcpy(bad, blob, SZ);
    oracle_put64(bad, 24, oracle_get64(bad, 24) - 1000000);
    oracle_reseal(bad);
    assert_int_equal(restore_into(&ca, bad), LAPICT_E_STATE_FIELD);

    /* A deadline pre-injected, restored where the TSC is far behind it. */
    tsc = produce(B_DL_PREINJ, false, false, blob);
    assert_int_equal(restore_into_tsc(&ca, blob, tsc), LAPICT_OK);
    assert_int_equal(restore_into_tsc(&ca, blob, tsc - 1000000),
                     LAPICT_E_STATE_FIELD);
    memcpy(bad, blob, SZ);
    oracle_put64(bad, 40, oracle_get64(bad, 40) + 1000000000ull);
    oracle_reseal(bad);
    assert_int_equal(restore_into_tsc(&ca, bad, tsc), LAPICT_E_STATE_FIELD);
    /* A pre-injected deadline flag in one-shot mode. */
    memcpy(bad, blob, SZ);
    forge32(bad, 8, LAPICT_LVTT_ONESHOT | VEC);
    assert_int_equal(restore_into_tsc(&ca, bad, tsc), LAPICT_E_STATE_FIELD);
}

/* What an accepted pre-injection costs the destination: one wait of at
 * most the advance, then the expiry at its instant is not delivered again. */
static void restored_preinjection_waits_at_most_the_advance(void **state)
{
    (void)state;
    static const enum base bases[] = {B_OS_PREINJ, B_P_PREINJ,
                                      B_P_CLAMPED_PREINJ, B_DL_PREINJ};
    size_t i;
    for (i = 0; i < 4; i++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = flag_cfg();
        uint8_t blob[SZ];
        uint64_t t0, tsc;
        tsc = produce(bases[i], false, false, blob);
        tu_setup(&h, &t, &c, TU_NEAR_WRAP, false);
        h.sim.cfg.tsc_offset = tsc; /* the TSC continues */
        t0 = h.sim.now_ns;
        assert_int_equal(lapict_state_restore(&t, blob, SZ), LAPICT_OK);
        assert_int_equal(lapict_irq_window_open(&t), LAPICT_OK);
        fake_enter(&h);
        assert_true(h.sim.spins <= 1);
        assert_true(fake_diff(t0, h.sim.now_ns) <= 5000);
        fake_advance(&h, 150000);
        assert_int_equal(h.sim.injects, 0);
    }
}

/*
 * Rule (section 8, save then restore changes nothing): an expiry injected
 * ahead, restored into a host whose advance is off (or smaller), saved
 * again there and restored into a third host, is accepted and delivers
 * nothing more: the blob's advance is at least the pre-injection's lead.
 * (fuzz_restore found the second restore rejected.)
 */
static void preinjection_survives_a_host_without_advance(void **state)
{
    (void)state;
    static const enum base bases[] = {B_OS_PREINJ, B_P_PREINJ,
                                      B_P_CLAMPED_PREINJ, B_DL_PREINJ};
    size_t i;
    for (i = 0; i < 4; i++) {
        struct fake_host h2, h3;
        struct lapict_timer t2, t3;
        struct lapict_config off = flag_cfg(), on = flag_cfg();
        uint8_t blob[SZ], blob2[SZ];
        uint64_t tsc, t0;
        off.advance_mode = LAPICT_ADVANCE_OFF;
        tsc = produce(bases[i], false, false, blob);
        tu_setup(&h2, &t2, &off, TU_NEAR_WRAP, false);
        h2.sim.cfg.tsc_offset = tsc;
        assert_int_equal(lapict_state_restore(&t2, blob, SZ), LAPICT_OK);
        assert_int_equal(lapict_state_save(&t2, blob2, SZ), LAPICT_OK);
        tu_setup(&h3, &t3, &on, 0, false);
        h3.sim.cfg.tsc_offset = tsc; /* no time passed on the middle host */
        t0 = h3.sim.now_ns;
        assert_int_equal(lapict_state_restore(&t3, blob2, SZ), LAPICT_OK);
        assert_int_equal(lapict_irq_window_open(&t3), LAPICT_OK);
        fake_enter(&h3);
        assert_true(fake_diff(t0, h3.sim.now_ns) <= 5000);
        /* The one interrupt of that expiry was given on the source. */
        fake_advance(&h3, 150000);
        assert_int_equal(h3.sim.injects, 0);
    }
}

/* ---- Restore into another minimum period ---- */

/*
 * Periodic N = 100 at divide 1, clamped by the source's 200 us minimum
 * period (100 ticks last 200 us), saved 150 us in: TMCCT 25. Restored at
 * the same instant into each destination minimum, TMCCT stays 25. With the
 * same minimum nothing changes (next expiry 50 us later, then every 200 us);
 * with another one the count is kept and drains on the destination's clock,
 * re-anchored at the restore as docs/spec/timer.md section 3 does whenever the
 * clamp starts or stops applying: 25 ticks of that clock, then its period. The
 * interrupt never comes before TMCCT reaches 0 on that clock.
 */
static void clamped_periodic_keeps_its_count_into_any_min_period(void **state)
{
    static const struct {
        uint32_t min_ns;
        uint64_t first_ns, period_ns;
    } dst[] = {
        {200000, 50000, 200000}, /* same clock: exact */
        {0, 25, 100},            /* unclamped: 1 ns ticks */
        {100000, 25000, 100000},
        {400000, 100000, 400000},
    };
    size_t b = tu_base_index(state), i;
    for (i = 0; i < sizeof(dst) / sizeof(dst[0]); i++) {
        struct fake_host ha, hb;
        struct lapict_timer ta, tb;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ];
        uint64_t r;
        print_message("base %zu destination min %u\n", b, dst[i].min_ns);
        c.min_period_ns = 200000;
        tu_setup(&ha, &ta, &c, tu_bases[b], false);
        countdown(&ta, 0xB, LAPICT_LVTT_PERIODIC, 100);
        fake_advance(&ha, 150000);
        assert_int_equal(lapict_tmcct_read(&ta), 25);
        save(&ta, blob);
        c.min_period_ns = dst[i].min_ns;
        tu_setup(&hb, &tb, &c, tu_bases[1 - b] + 12345, i & 1);
        r = hb.sim.now_ns;
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
        assert_int_equal(lapict_tmcct_read(&tb), 25);
        assert_int_equal(lapict_tmict_read(&tb), 100);
        fake_advance(&hb, dst[i].first_ns - 1);
        assert_int_equal(hb.sim.injects, 0);
        assert_true(lapict_tmcct_read(&tb) >= 1);
        fake_advance(&hb, 1);
        assert_int_equal(hb.sim.injects, 1);
        assert_int_equal(hb.inj[0].host_ns, r + dst[i].first_ns);
        assert_int_equal(lapict_tmcct_read(&tb), 100);
        fake_advance(&hb, dst[i].period_ns - 1);
        assert_int_equal(hb.sim.injects, 1);
        assert_true(lapict_tmcct_read(&tb) <= 100);
        fake_advance(&hb, 1);
        assert_int_equal(hb.sim.injects, 2);
        assert_int_equal(hb.inj[1].host_ns,
                         r + dst[i].first_ns + dst[i].period_ns);
        tu_check_host(&hb);
    }
}

/* A 200 us minimum period. */
TU_SETUP(min_period_200us_setup, c.min_period_ns = 200000)

/* The blob carries the clamp period in force (offset 72), checked on
 * restore; an expiry already injected ahead cannot move to another clock
 * (its instant would change under an interrupt already given), so that
 * restore is refused as a configuration mismatch, instance unchanged. */
static void clamp_period_field_is_checked(void **state)
{
    TU_FIX(state);
    struct lapict_config ca = flag_cfg();
    uint8_t blob[SZ], bad[SZ];

    countdown(t, 0xB, LAPICT_LVTT_PERIODIC, 100);
    fake_advance(h, 150000);
    save(t, blob);
    assert_int_equal(oracle_get32(blob, 72), 200000);
    assert_int_equal(restore_into(&f->cfg, blob), LAPICT_OK);
    memcpy(bad, blob, SZ);
    forge32(bad, 72, 0);
    assert_int_equal(restore_into(&f->cfg, bad), LAPICT_E_STATE_FIELD);
    memcpy(bad, blob, SZ);
    forge32(bad, 72, LAPICT_MIN_PERIOD_NS_MAX + 1);
    assert_int_equal(restore_into(&f->cfg, bad), LAPICT_E_STATE_FIELD);
    /* 100 ticks at divide 1 last 100 ns: a 100 ns "clamp" never applied. */
    memcpy(bad, blob, SZ);
    forge32(bad, 72, 100);
    assert_int_equal(restore_into(&f->cfg, bad), LAPICT_E_STATE_FIELD);
    /* Not clamped: the field is 0. */
    make_blob(blob, 0);
    assert_int_equal(oracle_get32(blob, 72), 0);
    memcpy(bad, blob, SZ);
    forge32(bad, 72, 200000);
    assert_int_equal(restore_into(&f->cfg, bad), LAPICT_E_STATE_FIELD);

    /* Pre-injected, clamped at 200 us: same clock fine, another refused. */
    produce(B_P_CLAMPED_PREINJ, false, false, blob);
    assert_int_equal(restore_into(&ca, blob), LAPICT_OK);
    ca.min_period_ns = 300000;
    assert_int_equal(restore_into(&ca, blob), LAPICT_E_STATE_CONFIG);
    ca.min_period_ns = 0;
    assert_int_equal(restore_into(&ca, blob), LAPICT_E_STATE_CONFIG);
    /* Pre-injected, unclamped, into a destination that would clamp it. */
    ca = flag_cfg();
    produce(B_P_PREINJ, false, false, blob);
    ca.min_period_ns = 2000000;
    assert_int_equal(restore_into(&ca, blob), LAPICT_E_STATE_CONFIG);
}

/* ---- Golden blobs: every released format keeps loading ---- */

/*
 * How each golden blob of tests/data/state_golden_v1.hex was captured (host
 * clock from 0, guest TSC 1 GHz from 0, vector 0x31 unless said): the same
 * scenarios re-run by golden_blobs_are_what_save_writes, and the behaviour
 * each must restore to is checked by golden_blobs_restore_to_their_state.
 */
enum golden {
    G_ONESHOT_MID,
    G_PERIODIC,
    G_DEADLINE,
    G_PENDING,
    G_CLAMPED,
    G_PREINJ,
    G_SVR_OFF,
    G_CATCH_UP,
    G_ADAPTIVE,
    G_COUNT
};

/*
 * A golden state's count-down: TDCR, LVTT (vector 0x31) and TMICT written
 * (unless TMICT is 0), the APIC software-disabled if @svr_off, the window
 * shut if @shut, then @run_ns of host time before the save.
 */
struct golden_case {
    const char *name;
    uint32_t tdcr, lvtt, tmict;
    bool svr_off, shut;
    uint64_t run_ns;
};

#define OS (LAPICT_LVTT_ONESHOT | 0x1u)
#define PER (LAPICT_LVTT_PERIODIC | 0x1u)
static const struct golden_case golden_cases[G_COUNT] = {
    /* one-shot /16, saved 5 ms in */
    [G_ONESHOT_MID] = {"oneshot_mid", 0x3, OS, 1000000, false, false, 5000000},
    /* periodic /1, saved 1 ms in (3 expiries) */
    [G_PERIODIC] = {"periodic", 0xB, PER, 300000, false, false, 1000000},
    /* TSC deadline 5 000 000 armed (below), saved at TSC 1 000 000 */
    [G_DEADLINE] = {"deadline", 0, 0, 0, false, false, 1000000},
    /* one-shot /1 expired, window shut: pending */
    [G_PENDING] = {"pending", 0xB, OS, 1000, false, true, 5000},
    /* periodic /1 under a 200 us minimum period, saved 150 us in */
    [G_CLAMPED] = {"clamped", 0xB, PER, 100, false, false, 150000},
    /* fixed advance 3 us: injected ahead at 997 us, saved at 998 us */
    [G_PREINJ] = {"preinjected", 0xB, PER, 1000000, false, false, 998000},
    /* periodic /4, APIC software-disabled */
    [G_SVR_OFF] = {"svr_off", 0x1, PER, 100000, true, false, 123456},
    /* catch-up periodic /1, window shut 4.5 ms */
    [G_CATCH_UP] = {"catch_up", 0xB, PER, 1000000, false, true, 4500000},
    /* adaptive advance, tuner seeded (below), one-shot armed */
    [G_ADAPTIVE] = {"adaptive", 0xB, OS, 700000, false, false, 100000},
};
#undef OS
#undef PER

static struct lapict_config golden_cfg(enum golden g)
{
    struct lapict_config c = tu_cfg();
    if (g == G_CLAMPED)
        c.min_period_ns = 200000;
    if (g == G_PREINJ) {
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 3000;
    }
    if (g == G_CATCH_UP)
        c.missed_policy = LAPICT_MISSED_CATCH_UP;
    if (g == G_ADAPTIVE) {
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_ns = 2000;
    }
    return c;
}

static void golden_capture(enum golden g, uint8_t *blob)
{
    const struct golden_case *gc = &golden_cases[g];
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = golden_cfg(g);
    tu_setup(&h, &t, &c, 0, false);
    if (g == G_DEADLINE) {
        lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | 0x31u);
        lapict_tsc_deadline_write(&t, 5000000);
    }
    if (g == G_ADAPTIVE) {
        /* A pre-injected expiry and its entry seed the tuner. */
        countdown(&t, 0xB, LAPICT_LVTT_ONESHOT | 0x1u, 100000);
        fake_advance(&h, 200000);
        fake_enter(&h);
    }
    if (gc->tmict)
        countdown(&t, gc->tdcr, gc->lvtt, gc->tmict);
    if (gc->svr_off)
        lapict_svr_write(&t, false);
    if (gc->shut)
        fake_window(&h, false);
    fake_advance(&h, gc->run_ns);
    save(&t, blob);
}

/*
 * The golden blobs of version 1, read from tests/data/state_golden_v1.hex:
 * "= name" lines in the order of enum golden, each followed by its bytes
 * as hex pairs; '#' lines are comments.
 */
static uint8_t golden_v1[G_COUNT][SZ];

static void golden_load(void)
{
    static bool loaded;
    char line[128], name[32];
    size_t n = 0;
    int g = -1;
    FILE *f;

    if (loaded)
        return;
    f = fopen(LAPICT_TEST_DATA_DIR "/state_golden_v1.hex", "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        const char *p = line;
        unsigned byte;
        int used;

        if (line[0] == '#')
            continue;
        if (sscanf(line, "= %31s", name) == 1) {
            assert_true(g < 0 || n == SZ);
            g++;
            assert_true(g < G_COUNT);
            assert_string_equal(name, golden_cases[g].name);
            n = 0;
            continue;
        }
        assert_true(g >= 0);
        while (sscanf(p, "%2x%n", &byte, &used) == 1) {
            assert_true(n < SZ);
            golden_v1[g][n++] = (uint8_t)byte;
            p += used;
        }
    }
    fclose(f);
    assert_int_equal(g, G_COUNT - 1);
    assert_int_equal(n, SZ);
    loaded = true;
}

/* `test_state --dump-golden`: today's blobs in the data file's format. */
static void golden_dump(void)
{
    int g, i;
    for (g = 0; g < G_COUNT; g++) {
        uint8_t b[SZ];
        golden_capture((enum golden)g, b);
        printf("= %s", golden_cases[g].name);
        for (i = 0; i < (int)SZ; i++)
            printf("%s%02x", i % 16 ? " " : "\n", b[i]);
        printf("\n");
    }
}

/*
 * Format change detector: save writes exactly the golden blobs of the
 * current version. A deliberate change follows the rules in state.h
 * ("Versions"): a new version with its own golden blobs, the old ones kept
 * and still loaded by golden_blobs_restore_to_their_state.
 */
static void golden_blobs_are_what_save_writes(void **state)
{
    (void)state;
    int g;
    assert_int_equal(LAPICT_STATE_VERSION, 1);
    golden_load();
    for (g = 0; g < G_COUNT; g++) {
        uint8_t b[SZ];
        print_message("golden %s\n", golden_cases[g].name);
        golden_capture((enum golden)g, b);
        assert_memory_equal(b, golden_v1[g], SZ);
    }
}

/* Restore golden blob @g at host @base, guest TSC @tsc at the restore. */
static void golden_restore(enum golden g, struct fake_host *h,
                           struct lapict_timer *t, uint64_t base, uint64_t tsc)
{
    struct lapict_config c = golden_cfg(g);
    fake_host_init(h, base, 1000000, tsc, false);
    assert_int_equal(fake_attach(h, t, &c), LAPICT_OK);
    assert_int_equal(lapict_state_restore(t, golden_v1[g], SZ), LAPICT_OK);
    assert_int_equal(h->sim.injects + h->sim.refusals, 0);
    assert_int_equal(lapict_irq_window_open(t), LAPICT_OK);
}

/* Interrupts at @r + each of @at (ns), none between, none after @until. */
static void expect_interrupts(struct fake_host *h, uint64_t r,
                              const uint64_t *at, unsigned n, uint64_t until)
{
    unsigned i;
    uint64_t done = 0;
    for (i = 0; i < n; i++) {
        fake_advance(h, at[i] - 1 - done);
        assert_int_equal(h->sim.injects, i);
        fake_advance(h, 1);
        assert_int_equal(h->sim.injects, i + 1);
        assert_int_equal(h->inj[i].host_ns, r + at[i]);
        assert_int_equal(h->inj[i].vector, 0x31);
        done = at[i];
    }
    fake_advance(h, until - done);
    assert_int_equal(h->sim.injects, n);
}

/*
 * Every golden blob of every version restores to the state it was captured
 * in: registers, the next interrupts at their instants, nothing early,
 * doubled or lost. Each runs at two destination clock bases.
 */
static void golden_blobs_restore_to_their_state(void **state)
{
    size_t b = tu_base_index(state);
    struct fake_host h;
    struct lapict_timer t;
    uint64_t r = tu_bases[1 - b] + 4242;
    struct lapict_stats st;

    golden_load();
    /* one-shot /16: 312500 ticks done, 687500 left (11 ms). */
    golden_restore(G_ONESHOT_MID, &h, &t, r, 0);
    assert_int_equal(lapict_tmcct_read(&t), 687500);
    assert_int_equal(lapict_tmict_read(&t), 1000000);
    assert_int_equal(lapict_tdcr_read(&t), 0x3);
    assert_int_equal(lapict_lvtt_read(&t), LAPICT_LVTT_ONESHOT | 0x31u);
    expect_interrupts(&h, r, (const uint64_t[]){11000000}, 1, 50000000);
    assert_int_equal(lapict_tmcct_read(&t), 0);

    /* periodic 300 us: 100 us into the 4th period. */
    golden_restore(G_PERIODIC, &h, &t, r, 0);
    assert_int_equal(lapict_tmcct_read(&t), 200000);
    expect_interrupts(&h, r, (const uint64_t[]){200000, 500000, 800000}, 3,
                      1000000);

    /* deadline 5 000 000: fires when this TSC reaches it. */
    golden_restore(G_DEADLINE, &h, &t, r, 3000000);
    assert_int_equal(lapict_tsc_deadline_read(&t), 5000000);
    assert_int_equal(lapict_lvtt_read(&t), LAPICT_LVTT_TSC_DEADLINE | 0x31u);
    expect_interrupts(&h, r, (const uint64_t[]){2000000}, 1, 10000000);
    assert_int_equal(h.inj[0].guest_tsc, 5000000);
    assert_int_equal(lapict_tsc_deadline_read(&t), 0);

    /* pending: delivered by the window-open step, once. */
    fake_host_init(&h, r, 1000000, 0, false);
    {
        struct lapict_config c = golden_cfg(G_PENDING);
        assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    }
    assert_int_equal(lapict_state_restore(&t, golden_v1[G_PENDING], SZ),
                     LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&t),
                     LAPICT_LVTT_ONESHOT | 0x31u | LAPICT_LVTT_PENDING);
    assert_int_equal(h.sim.injects, 0);
    fake_window(&h, true);
    fake_window(&h, true);
    fake_advance(&h, 10000000);
    assert_int_equal(h.sim.injects, 1);
    assert_int_equal(h.inj[0].host_ns, r);
    assert_int_equal(lapict_lvtt_read(&t), LAPICT_LVTT_ONESHOT | 0x31u);

    /* clamped: 25 of 100 ticks left on the 200 us clock. */
    golden_restore(G_CLAMPED, &h, &t, r, 0);
    assert_int_equal(lapict_tmcct_read(&t), 25);
    expect_interrupts(&h, r, (const uint64_t[]){50000, 250000, 450000}, 3,
                      600000);
    assert_true(tu_stats(&t).clamp_reported);

    /* pre-injected: the entry waits 2 us, the expiry is not delivered
     * again; the next one 1 ms later. */
    golden_restore(G_PREINJ, &h, &t, r, 0);
    fake_enter(&h);
    assert_int_equal(h.sim.now_ns, r + 2000);
    assert_int_equal(h.sim.injects, 0);
    assert_int_equal(lapict_tmcct_read(&t), 1000000);
    /* Injected ahead again 3 us before the next instant. */
    expect_interrupts(&h, r + 2000, (const uint64_t[]){1000000 - 3000}, 1,
                      1500000);

    /* SVR off: masked, counting, delivering nothing. */
    golden_restore(G_SVR_OFF, &h, &t, r, 0);
    assert_int_equal(lapict_lvtt_read(&t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | 0x31u);
    /* /4 at 1 GHz: 400 us period, 123456 ns in: 30864 ticks done. */
    assert_int_equal(lapict_tmcct_read(&t), 100000 - 30864);
    fake_advance(&h, 5000000);
    assert_int_equal(h.sim.injects, 0);

    /* catch-up: four ticks pending, each delivered. */
    golden_restore(G_CATCH_UP, &h, &t, r, 0);
    st = tu_stats(&t);
    assert_int_equal(h.sim.injects, 4);
    assert_int_equal(st.pending, 0);
    assert_int_equal(lapict_tmcct_read(&t), 500000);

    /* adaptive: the tuned advance comes back; the one-shot resumes. */
    golden_restore(G_ADAPTIVE, &h, &t, r, 0);
    st = tu_stats(&t);
    assert_int_equal(st.advance_ns, oracle_get32(golden_v1[G_ADAPTIVE], 52));
    assert_int_equal(lapict_tmcct_read(&t), 600000);
    tu_check_host(&h);
}

/*
 * Restore into another guest TSC rate (docs/spec/timer.md section 8):
 * the blob holds no TSC rate. A deadline is a guest TSC value, so it fires
 * when this host's guest TSC reaches it, at this host's rate (a VMM that
 * scales or offsets the guest TSC keeps it continuous); count-downs run on
 * the bus clock and do not depend on it. Another bus_hz is refused
 * (restore_with_different_bus_hz_is_state_config).
 */
static void restore_into_another_tsc_rate_keeps_the_deadline(void **state)
{
    (void)state;
    static const uint32_t khzs[] = {3000, 999999, 2500000};
    size_t i, b;
    for (b = 0; b < TU_NBASES; b++)
        for (i = 0; i < 3; i++) {
            struct fake_host ha, hb;
            struct lapict_timer ta, tb;
            struct lapict_config c = tu_cfg();
            uint8_t blob[SZ];
            uint64_t D, r, first;
            tu_setup(&ha, &ta, &c, tu_bases[b], false);
            lapict_lvtt_write(&ta, LAPICT_LVTT_TSC_DEADLINE | VEC);
            D = fake_tsc(&ha) + 3000000;
            lapict_tsc_deadline_write(&ta, D);
            fake_advance(&ha, 1000000);
            save(&ta, blob);
            c.tsc_khz = khzs[i];
            /* The destination's guest TSC continues at its own rate. */
            fake_host_init(&hb, tu_bases[1 - b], khzs[i], fake_tsc(&ha),
                           b == 1);
            assert_int_equal(fake_attach(&hb, &tb, &c), LAPICT_OK);
            r = hb.sim.now_ns;
            assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
            assert_int_equal(lapict_tsc_deadline_read(&tb), D);
            /* 2 000 000 TSC ticks at this rate, rounded up. */
            first = (2000000ull * 1000000u + khzs[i] - 1) / khzs[i];
            fake_advance(&hb, first - 1);
            assert_int_equal(hb.sim.injects, 0);
            fake_advance(&hb, 1);
            assert_int_equal(hb.sim.injects, 1);
            assert_true(hb.inj[0].guest_tsc >= D);
            assert_int_equal(hb.inj[0].host_ns, r + first);
            /* A count-down is indifferent to the TSC rate. */
            make_blob(blob, 0);
            tu_setup(&hb, &tb, &c, tu_bases[b], false);
            assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
            /* make_blob: /16, N 4000000, 123457 ns in: 7716 ticks done. */
            assert_int_equal(lapict_tmcct_read(&tb), 4000000 - 7716);
        }
}

/* ---- Restore rules an independent oracle holds the library to ---------- */

/* The destinations a pre-injection is restored into. */
enum dest { D_OFF, D_FIXED_1US, D_ADAPTIVE_MAX_1US, D_NO_SPIN, D_NDEST };

static void dest_setup(enum dest d, struct fake_host *h, struct lapict_timer *t,
                       uint64_t tsc)
{
    struct lapict_config c = tu_cfg();
    switch (d) {
    case D_OFF:
        c.advance_mode = LAPICT_ADVANCE_OFF;
        break;
    case D_FIXED_1US:
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 1000;
        break;
    case D_ADAPTIVE_MAX_1US:
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_ns = 1000;
        c.advance_max_ns = 1000;
        break;
    default:
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 1000;
        break;
    }
    fake_host_init(h, TU_NEAR_WRAP, c.tsc_khz, tsc, false);
    if (d == D_NO_SPIN)
        fake_ops_null(&h->ops, FAKE_OP_SPIN);
    assert_int_equal(fake_attach(h, t, &c), LAPICT_OK);
}

/*
 * A source with a 50 us fixed advance, saved just after it injected the
 * next expiry ahead (one-shot, periodic or deadline, 30 us before its
 * instant). Returns the lead: ns from the save to that instant, measured on
 * the source itself by letting it enter. *tsc: the guest TSC at the save.
 */
static uint64_t saved_preinjection(uint32_t mode, uint8_t *blob, uint64_t *tsc)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    uint64_t at;
    c.advance_mode = LAPICT_ADVANCE_FIXED;
    c.advance_ns = 50000;
    tu_setup(&h, &t, &c, 0, false);
    fake_advance(&h, 1000);
    if (mode == LAPICT_LVTT_TSC_DEADLINE) {
        assert_int_equal(lapict_lvtt_write(&t, mode | VEC), LAPICT_OK);
        assert_int_equal(lapict_tsc_deadline_write(&t, fake_tsc(&h) + 1000000),
                         LAPICT_OK);
    } else {
        countdown(&t, 0xB, mode, 1000000);
    }
    fake_advance(&h, 1000000 - 30000);
    assert_int_equal(h.sim.injects, 1); /* injected ahead */
    at = h.sim.now_ns;
    *tsc = fake_tsc(&h);
    save(&t, blob);
    fake_enter(&h);
    assert_int_equal(h.sim.deliveries, 1);
    return h.sim.now_ns - at;
}

/*
 * Rule (section 7 and 8: never early, never twice, across any restore): an
 * expiry the source injected ahead of its instant keeps its own wait on a
 * destination whose advance is smaller or off: the guest enters no earlier
 * than the instant, and a later register write (TDCR, which re-anchors)
 * does not give it again. A destination without a spin op cannot wait:
 * restore refuses the blob with LAPICT_E_STATE_CONFIG, instance unchanged.
 * And the other direction: a blob saved by a host without advance restores
 * into one with an advance and keeps its instant.
 */
static void
restored_preinjection_never_early_nor_twice_in_any_advance(void **state)
{
    (void)state;
    static const uint32_t modes[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC,
                                     LAPICT_LVTT_TSC_DEADLINE};
    size_t m;
    unsigned d;
    for (m = 0; m < 3; m++)
        for (d = 0; d < D_NDEST; d++) {
            struct fake_host h;
            struct lapict_timer t;
            uint8_t blob[SZ];
            uint64_t tsc, lead, t0;
            lead = saved_preinjection(modes[m], blob, &tsc);
            assert_true(lead > 1000 && lead <= 50000);
            dest_setup((enum dest)d, &h, &t, tsc);
            t0 = h.sim.now_ns;
            if (d == D_NO_SPIN) {
                struct lapict_timer before = t;
                assert_int_equal(lapict_state_restore(&t, blob, SZ),
                                 LAPICT_E_STATE_CONFIG);
                assert_memory_equal(&t, &before, sizeof(t));
                assert_int_equal(h.sim.sw_arms + h.sim.sw_cancels +
                                     h.sim.injects + h.sim.reports,
                                 0);
                continue;
            }
            assert_int_equal(lapict_state_restore(&t, blob, SZ), LAPICT_OK);
            assert_int_equal(lapict_irq_window_open(&t), LAPICT_OK);
            assert_int_equal(fake_enter(&h), LAPICT_OK);
            print_message("mode %zu dest %u: lead %llu, entered after %llu\n",
                          m, d, (unsigned long long)lead,
                          (unsigned long long)(h.sim.now_ns - t0));
            assert_true(h.sim.now_ns - t0 >= lead);
            /* The guest runs; its register writes do not repeat it. */
            assert_int_equal(lapict_tdcr_write(&t, 0x0), LAPICT_OK);
            fake_advance(&h, 30000);
            fake_enter(&h);
            if (modes[m] != LAPICT_LVTT_PERIODIC)
                assert_int_equal(h.sim.injects, 0);
            tu_check_host(&h);
        }
}

/* The reverse direction: saved where the advance is off, restored into a
 * host with a large advance: the count-down keeps its instant exactly. */
static void
preinjection_free_blob_keeps_its_instant_under_an_advance(void **state)
{
    (void)state;
    struct fake_host h1, h2;
    struct lapict_timer t1, t2;
    struct lapict_config off = tu_cfg(), on = tu_cfg();
    uint8_t blob[SZ];
    uint64_t t0;
    on.advance_mode = LAPICT_ADVANCE_FIXED;
    on.advance_ns = 50000;
    tu_setup(&h1, &t1, &off, 0, false);
    countdown(&t1, 0xB, LAPICT_LVTT_ONESHOT, 1000000);
    fake_advance(&h1, 1000000 - 30000);
    save(&t1, blob);
    tu_setup(&h2, &t2, &on, TU_NEAR_WRAP, false);
    t0 = h2.sim.now_ns;
    assert_int_equal(lapict_state_restore(&t2, blob, SZ), LAPICT_OK);
    /* 30 us left, within the advance: injected ahead at the first
     * callback, seen by the guest at the instant. */
    fake_advance(&h2, 1);
    assert_int_equal(h2.sim.injects, 1);
    fake_enter(&h2);
    assert_int_equal(h2.sim.deliveries, 1);
    assert_int_equal(h2.dlv[0].host_ns, t0 + 30000);
    tu_check_host(&h2);
}

/*
 * Rule (section 5 and 8: a save/restore at any instant changes nothing the
 * guest can observe): a deadline with an illegal vector that passes while
 * the host refuses interrupts is dropped and reported at its expiry, as an
 * unmigrated instance does; restore reports it (the source never will) and
 * LVTT shows no delivery pending; a legal vector written later gives
 * nothing. The twin is the unmigrated instance, serviced at the same time.
 */
static void illegal_vector_expiry_dropped_across_a_save(void **state)
{
    (void)state;
    static const uint32_t modes[] = {LAPICT_LVTT_TSC_DEADLINE,
                                     LAPICT_LVTT_ONESHOT};
    size_t m;
    for (m = 0; m < 2; m++) {
        struct fake_host ha, hb;
        struct lapict_timer a, b;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ];
        struct lapict_stats sa, sb;
        tu_setup(&ha, &a, &c, 0, false);
        tu_setup(&hb, &b, &c, TU_NEAR_WRAP, false);
        fake_window(&ha, false);
        assert_int_equal(lapict_lvtt_write(&a, modes[m] | 5u), LAPICT_OK);
        if (modes[m] == LAPICT_LVTT_TSC_DEADLINE)
            assert_int_equal(lapict_tsc_deadline_write(&a, 100000), LAPICT_OK);
        else
            assert_int_equal(lapict_tmict_write(&a, 100000), LAPICT_OK);
        /* The deadline passes in the migration gap: no callback ran. */
        fake_stall(&ha, 200000);
        save(&a, blob);
        hb.sim.cfg.tsc_offset = fake_tsc(&ha);
        fake_window(&hb, false);
        assert_int_equal(lapict_state_restore(&b, blob, SZ), LAPICT_OK);
        /* The twin: the source serviced at the same instant. */
        fake_run_due(&ha);
        assert_int_equal(lapict_lvtt_read(&a), lapict_lvtt_read(&b));
        assert_int_equal(lapict_lvtt_read(&b) & LAPICT_LVTT_PENDING, 0);
        sa = tu_stats(&a);
        sb = tu_stats(&b);
        assert_int_equal(sb.illegal_vector, sa.illegal_vector);
        assert_int_equal(sb.last_error, LAPICT_E_VECTOR);
        assert_int_equal(hb.sim.reports, ha.sim.reports);
        assert_int_equal(hb.rep[0].status, LAPICT_E_VECTOR);
        /* A legal vector, then the window opens: nothing on either. */
        assert_int_equal(lapict_lvtt_write(&a, modes[m] | VEC), LAPICT_OK);
        assert_int_equal(lapict_lvtt_write(&b, modes[m] | VEC), LAPICT_OK);
        fake_window(&ha, true);
        fake_window(&hb, true);
        assert_int_equal(ha.sim.injects, 0);
        assert_int_equal(hb.sim.injects, 0);
        tu_check_host(&hb);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--dump-golden") == 0) {
        golden_dump();
        return 0;
    }
    /* Optional test name pattern, e.g. for debugging one test. */
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        TU_FIXED_AT_BASES(state_blob_has_fixed_size, TU_HV_NEVER),
        cmocka_unit_test(save_and_restore_take_the_same_buffer_sizes),
        TU_FIXED_AT_BASES(blob_layout_matches_state_h, TU_HV_NEAR_2_64),
        TU_FIXED_AT_BASES_WITH(blob_carries_tsc_deadline_and_advance,
                               TU_HV_NEVER, advance_2500_setup),
        TU_AT_BASES(round_trip_at_same_instant_changes_nothing_observable),
        TU_AT_BASES(save_mid_oneshot_resumes_remainder),
        TU_PAIR_AT_BASES(save_mid_periodic_keeps_grid_relative),
        TU_PAIR_AT_BASES(
            tsc_deadline_restored_fires_when_destination_tsc_reaches_it),
        TU_PAIR_AT_BASES(
            save_after_expiry_before_delivery_delivers_exactly_once),
        TU_AT_BASES(save_after_delivery_never_redelivers),
        TU_PAIR_AT_BASES(pending_at_save_delivered_once_after_restore),
        TU_PAIR_AT_BASES_WITH(catch_up_pending_count_survives_restore,
                              catch_up_pair_setup),
        TU_PAIR_AT_BASES(restore_with_hw_timer_armed_cancels_it),
        TU_PAIR_AT_BASES(restore_drops_destination_pending),
        cmocka_unit_test(
            every_single_bit_flip_is_rejected_and_instance_unchanged),
        cmocka_unit_test(
            every_byte_corruption_is_rejected_and_instance_unchanged),
        cmocka_unit_test(wrong_magic_version_size_each_give_own_code),
        TU_FIXED_AT_BASES(restore_null_arguments_are_inval, TU_HV_NEVER),
        cmocka_unit_test(correct_checksum_bad_fields_give_state_field),
        TU_FIXED_AT_BASES(inconsistent_mode_and_registers_give_state_field,
                          TU_HV_NEVER),
        TU_FIXED_AT_BASES_WITH(restore_with_different_bus_hz_is_state_config,
                               TU_HV_NEVER, bus_100mhz_setup),
        TU_AT_BASES(save_calls_no_host_op_and_changes_nothing),
        TU_AT_BASES(save_describes_the_state_as_if_serviced_now),
        cmocka_unit_test(
            tick_coalesced_by_a_save_is_counted_on_the_destination),
        TU_AT_BASES(due_expiry_delivered_once_whatever_the_irr_save_order),
        TU_AT_BASES(restore_injects_nothing_window_open_delivers_once),
        cmocka_unit_test(every_flag_combination_is_producible_or_rejected),
        TU_FIXED_AT_BASES_WITH(forged_preinjection_is_rejected, TU_HV_NEVER,
                               slowest_bus_advance_setup),
        cmocka_unit_test(restored_preinjection_waits_at_most_the_advance),
        cmocka_unit_test(preinjection_survives_a_host_without_advance),
        TU_AT_BASES(clamped_periodic_keeps_its_count_into_any_min_period),
        TU_FIXED_AT_BASES_WITH(clamp_period_field_is_checked, TU_HV_NEVER,
                               min_period_200us_setup),
        cmocka_unit_test(golden_blobs_are_what_save_writes),
        TU_AT_BASES(golden_blobs_restore_to_their_state),
        cmocka_unit_test(restore_into_another_tsc_rate_keeps_the_deadline),
        cmocka_unit_test(
            restored_preinjection_never_early_nor_twice_in_any_advance),
        cmocka_unit_test(
            preinjection_free_blob_keeps_its_instant_under_an_advance),
        cmocka_unit_test(illegal_vector_expiry_dropped_across_a_save),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
