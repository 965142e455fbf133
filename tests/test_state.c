/* SPDX-License-Identifier: MIT */
/* lib/state.c: save and restore (docs/spec/timer.md section 8, layout in
 * state.h), checked with the test's own CRC-32 (oracle.c). */
#include "testutil.h"

#include <stdio.h>

#define VEC 0x30u
#define SZ LAPICT_STATE_SIZE
#define OS LAPICT_LVTT_ONESHOT
#define PER LAPICT_LVTT_PERIODIC
#define DL LAPICT_LVTT_TSC_DEADLINE

static void countdown(struct lapict_timer *t, uint32_t tdcr, uint32_t mode,
                      uint32_t n)
{
    assert_int_equal(lapict_tdcr_write(t, tdcr), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(t, mode | VEC), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(t, n), LAPICT_OK);
}

static void deadline(struct fake_host *h, struct lapict_timer *t, uint32_t lvtt,
                     uint64_t ahead)
{
    assert_int_equal(lapict_lvtt_write(t, DL | lvtt), LAPICT_OK);
    assert_int_equal(lapict_tsc_deadline_write(t, fake_tsc(h) + ahead),
                     LAPICT_OK);
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
    countdown(&t, 0x3, PER, 4000000);
    fake_advance(&h, 123457);
    save(&t, blob);
}

/* Restore @blob (@len bytes) into a busy instance of @c (tu_cfg() if NULL)
 * at @base, guest TSC @tsc; a rejection changes neither it nor its host. */
static int restore_len(const struct lapict_config *c, const uint8_t *blob,
                       size_t len, uint64_t base, uint64_t tsc)
{
    struct lapict_config d = c ? *c : tu_cfg();
    struct fake_host h, hcopy;
    struct lapict_timer t, copy;
    int rc;
    tu_setup(&h, &t, &d, base, true);
    countdown(&t, 0x0, PER, 3000000);
    fake_advance(&h, 1000);
    h.sim.cfg.tsc_offset += tsc - fake_tsc(&h);
    memcpy(&copy, &t, sizeof(t));
    memcpy(&hcopy, &h, sizeof(h));
    rc = lapict_state_restore(&t, blob, len);
    if (rc != LAPICT_OK) {
        assert_memory_equal(&t, &copy, sizeof(t));
        hcopy.rec = h.rec;
        assert_memory_equal(&h, &hcopy, sizeof(h));
    }
    return rc;
}

/* Rejected with @code (0: any error), nothing changed. */
static void expect_rejected(const uint8_t *blob, size_t len, int code)
{
    int rc = restore_len(NULL, blob, len, 5000, 1000);
    if (code == 0)
        assert_true(rc < 0);
    else
        assert_int_equal(rc, code);
}

/* Rule (state.h): save and restore take a buffer of at least the blob size,
 * bytes after it untouched; NULL is LAPICT_E_INVAL. */
static void blob_buffer_sizes_and_null_arguments(void **state)
{
    TU_FIX(state);
    static const struct {
        size_t len;
        int rc;
    } edges[] = {
        {SZ - 1, LAPICT_E_STATE_SIZE}, {SZ, LAPICT_OK},     {SZ + 1, LAPICT_OK},
        {0, LAPICT_E_STATE_SIZE},      {2 * SZ, LAPICT_OK},
    };
    struct fake_host h2;
    struct lapict_timer t2;
    uint8_t buf[2 * SZ + 1], ref[SZ];
    size_t i, j, run;
    assert_int_equal(LAPICT_STATE_SIZE, 128);
    for (run = 0; run < 2; run++) {
        if (run) { /* the reset instance, then a running one */
            countdown(t, 0x3, PER, 4000000);
            fake_advance(h, 123457);
        }
        save(t, ref);
        for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
            print_message("run %zu len %zu\n", run, edges[i].len);
            memset(buf, 0xAB, sizeof(buf));
            assert_int_equal(lapict_state_save(t, buf, edges[i].len),
                             edges[i].rc);
            assert_int_equal(
                lapict_state_save_at(t, h->sim.now_ns, 0, buf, edges[i].len),
                edges[i].rc);
            for (j = edges[i].rc == LAPICT_OK ? SZ : 0; j < sizeof(buf); j++)
                assert_int_equal(buf[j], 0xAB);
            if (edges[i].rc == LAPICT_OK)
                assert_memory_equal(buf, ref, SZ);
            if (!run)
                continue;
            memcpy(buf, ref, SZ); /* whatever follows the blob */
            if (edges[i].rc != LAPICT_OK) {
                expect_rejected(buf, edges[i].len, edges[i].rc);
                continue;
            }
            tu_setup(&h2, &t2, &f->cfg, 5000, false);
            assert_int_equal(lapict_state_restore(&t2, buf, edges[i].len),
                             LAPICT_OK);
            assert_int_equal(lapict_tmcct_read(&t2), lapict_tmcct_read(t));
        }
    }
    assert_int_equal(lapict_state_save(NULL, buf, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save(t, NULL, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save_at(NULL, 0, 0, buf, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_save_at(t, 0, 0, NULL, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_restore(NULL, ref, SZ), LAPICT_E_INVAL);
    assert_int_equal(lapict_state_restore(t, NULL, SZ), LAPICT_E_INVAL);
}

/* Rule: the documented little-endian layout of version 1 (state.h),
 * TSC deadline and advance included. */
static void blob_layout_matches_state_h(void **state)
{
    TU_FIX(state);
    size_t i;
    uint8_t blob[SZ];
    /* /16, N 5000: 80 us period; expiries at 80 and 160 us. */
    countdown(t, 0x3, PER | 0x1u, 5000);
    fake_advance(h, 200000);
    assert_int_equal(h->sim.injects, 2);
    save(t, blob);
    assert_int_equal(oracle_get32(blob, 0), LAPICT_STATE_MAGIC);
    assert_memory_equal(blob, "LAPT", 4);
    assert_int_equal(blob[4] | blob[5] << 8, LAPICT_STATE_VERSION);
    assert_int_equal(blob[6] | blob[7] << 8, SZ);
    assert_int_equal(oracle_get32(blob, 8), PER | 0x31u);
    assert_int_equal(oracle_get32(blob, 12), 0x3);
    assert_int_equal(oracle_get32(blob, 16), 5000);
    assert_int_equal(oracle_get64(blob, 24), 200000);   /* elapsed */
    assert_int_equal(oracle_get64(blob, 32), 3 * 5000); /* E */
    assert_int_equal(oracle_get64(blob, 40), 0);        /* deadline */
    assert_int_equal(oracle_get32(blob, 48), 0);        /* pending */
    assert_int_equal(oracle_get32(blob, 52), 0);        /* advance */
    assert_int_equal(oracle_get64(blob, 56), 1000000000ull);
    /* No tuner estimate or deviation, no clamp period. */
    assert_int_equal(oracle_get32(blob, 64), 0);
    assert_int_equal(oracle_get32(blob, 68), 0);
    assert_int_equal(oracle_get32(blob, 72), 0);
    /* Flags: software-enabled, count-down active, expiry unprocessed. */
    assert_int_equal(oracle_get32(blob, 20), 0x7);
    /* Nothing settled (76..95), no outlier run (96), reserved zero. */
    for (i = 76; i < 124; i++)
        assert_int_equal(blob[i], 0);
    assert_int_equal(oracle_get32(blob, 124), oracle_crc32(blob, 124));
    /* A TSC deadline and a fixed 2.5 us advance. */
    f->cfg.advance_mode = LAPICT_ADVANCE_FIXED;
    f->cfg.advance_ns = 2500;
    tu_setup(h, t, &f->cfg, f->base, false);
    lapict_lvtt_write(t, DL | VEC);
    lapict_tsc_deadline_write(t, 0x123456789ABCull);
    save(t, blob);
    assert_int_equal(oracle_get32(blob, 8), DL | VEC);
    assert_int_equal(oracle_get32(blob, 16), 0);
    assert_int_equal(oracle_get64(blob, 40), 0x123456789ABCull);
    assert_int_equal(oracle_get32(blob, 52), 2500);
}

/* States a save must describe (SVR off first; hv on odd ones; a deadline @n
 * TSC ticks ahead), run 1.234567 ms. */
static const struct {
    uint32_t tdcr, lvtt, n;
    bool svr_off;
} scens[] = {
    {0, 0, 0, false},                            /* reset */
    {0x0, OS, 3000000, false},                   /* one-shot */
    {0xB, PER, 700001, false},                   /* periodic */
    {0xB, PER, 7, false},                        /* periodic, clamped */
    {0, DL, 2500000, false},                     /* TSC deadline */
    {0x9, PER | LAPICT_LVTT_MASK, 20000, false}, /* masked */
    {0x1, PER, 100000, true},                    /* APIC software-disabled */
    {0xB, OS, 1000, false},                      /* stopped after expiry */
};
#define NSCEN (sizeof(scens) / sizeof(scens[0]))

static void build(size_t s, struct fake_host *h, struct lapict_timer *t,
                  uint64_t base)
{
    struct lapict_config c = tu_cfg();
    c.min_period_ns = 200000;
    tu_setup(h, t, &c, base, (s & 1) != 0);
    h->sim.cfg.tsc_offset = 1000000000000ull;
    if (scens[s].svr_off)
        lapict_svr_write(t, false);
    if (scens[s].lvtt == DL)
        deadline(h, t, VEC, scens[s].n);
    else if (scens[s].n)
        countdown(t, scens[s].tdcr, scens[s].lvtt, scens[s].n);
    fake_advance(h, 1234567);
}

/* Same reads and interrupts (relative to each clock) over the next 10 ms. */
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

/* Rule: a round trip at one instant changes nothing the guest can see, and
 * saving the restored instance gives the same blob. */
static void round_trip_at_same_instant_changes_nothing_observable(void **state)
{
    size_t b = tu_base_index(state), s;
    for (s = 0; s < NSCEN; s++) {
        struct fake_host ha, hb, hc;
        struct lapict_timer ta, tb, tc;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ], blob2[SZ];
        c.min_period_ns = 200000;
        print_message("base %zu scenario %zu\n", b, s);
        build(s, &ha, &ta, tu_bases[b]);
        save(&ta, blob);
        /* Into a fresh instance on another host, same TSC. */
        tu_setup(&hb, &tb, &c, tu_bases[1 - b] + 777, (s & 1) == 0);
        hb.sim.cfg.tsc_offset =
            fake_tsc(&ha) - fake_tsc(&hb) + hb.sim.cfg.tsc_offset;
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        tu_assert_regs_equal(tu_read_regs(&ta), tu_read_regs(&tb));
        save(&tb, blob2);
        assert_memory_equal(blob, blob2, SZ);
        /* And into the same instance. */
        build(s, &hc, &tc, tu_bases[b]);
        assert_int_equal(lapict_state_restore(&tc, blob, SZ), LAPICT_OK);
        tu_assert_regs_equal(tu_read_regs(&ta), tu_read_regs(&tc));
        assert_same_future(&ha, &ta, &hb, &tb);
        tu_check_host(&ha);
        tu_check_host(&hb);
    }
}

/* Rule: an expiry passed but not serviced at the save travels as pending
 * (the source does not inject it) and is delivered once, on the destination;
 * one delivered before the save never again, even where the destination's
 * TSC is behind. */
static void expiry_around_a_save_is_delivered_exactly_once(void **state)
{
    TU_PAIR(state);
    size_t k;
    for (k = 0; k < 4; k++) {
        uint8_t blob[SZ];
        bool done = k >= 2; /* delivered before the save */
        tu_setup(ha, ta, c, tu_bases[p->b], !done);
        if (k == 3)
            deadline(ha, ta, VEC, 1000000);
        else
            countdown(ta, 0xB, OS, 1000000);
        if (done) {
            fake_advance(ha, 1000000);
            assert_int_equal(ha->sim.injects, 1);
            fake_advance(ha, 10);
        } else {
            ha->sim.window_open = k != 0;
            fake_stall(ha, 1000500);
        }
        save(ta, blob);
        if (done)
            tu_pair_dst(p, tu_bases[p->b], 0, true);
        else
            tu_setup(hb, tb, c, tu_bases[1 - p->b] + 99, false);
        assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
        fake_run_due(hb);
        fake_window(hb, true);
        fake_advance(hb, done ? 50000000 : 5000000);
        if (done) {
            assert_int_equal(hb->sim.injects, 0);
            continue;
        }
        fake_window(hb, true);
        assert_int_equal(ha->sim.injects, 0);
        assert_int_equal(hb->sim.injects, 1);
        assert_int_equal(lapict_tmcct_read(tb), 0);
    }
}

/* Rule: what is pending at the save (one, or under catch-up every tick) is
 * delivered by the destination when its window opens, once. */
static void pending_at_save_delivered_once_after_restore(void **state)
{
    TU_PAIR(state);
    unsigned i;
    for (i = 1; i <= 4; i += 3) {
        uint8_t blob[SZ];
        if (i == 4) {
            c->missed_policy = LAPICT_MISSED_CATCH_UP;
            tu_setup(ha, ta, c, tu_bases[p->b], false);
            tu_setup(hb, tb, c, tu_bases[1 - p->b], false);
        }
        countdown(ta, 0xB, i == 1 ? OS : PER, i == 1 ? 1000 : 1000000);
        fake_window(ha, false);
        fake_advance(ha, i == 1 ? 5000 : 4500000);
        assert_int_equal(tu_stats(ta).pending, i);
        save(ta, blob);
        assert_int_equal(oracle_get32(blob, 48), i);
        hb->sim.window_open = false;
        assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
        assert_int_equal(lapict_lvtt_read(tb) & LAPICT_LVTT_PENDING,
                         LAPICT_LVTT_PENDING);
        fake_advance(hb, 1000);
        assert_int_equal(hb->sim.injects, 0);
        fake_window(hb, true);
        assert_int_equal(hb->sim.injects, i);
        assert_int_equal(hb->inj[0].vector, VEC);
        assert_int_equal(ha->sim.injects, 0);
        if (i == 1) { /* and never again */
            fake_window(hb, true);
            fake_advance(hb, 10000000);
            assert_int_equal(hb->sim.injects, 1);
        }
    }
}

/* Rule: a restore replaces the destination's timer: armed hv cancelled (a
 * stale callback gives nothing), pending interrupt dropped. */
static void restore_replaces_the_destination_timer(void **state)
{
    TU_PAIR(state);
    uint8_t blob[SZ];
    save(ta, blob); /* reset state: nothing running */
    tu_setup(hb, tb, c, tu_bases[p->b], true);
    countdown(tb, 0xB, OS, 1000000);
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
    tu_setup(hb, tb, c, 0, false);
    countdown(tb, 0xB, OS, 1000);
    fake_window(hb, false);
    fake_advance(hb, 1000);
    assert_int_equal(tu_stats(tb).pending, 1);
    assert_int_equal(lapict_state_restore(tb, blob, SZ), LAPICT_OK);
    assert_int_equal(tu_stats(tb).pending, 0);
    fake_window(hb, true);
    assert_int_equal(hb->sim.injects, 0);
}

/* Rule: any bit flip, overwritten byte, byte swap or checksum change is
 * rejected, instance unchanged (header bytes by their own check). */
static void every_corruption_is_rejected_and_instance_unchanged(void **state)
{
    static const uint8_t pats[] = {0x00, 0xFF, 0x5A};
    uint8_t good[SZ], bad[SZ];
    size_t i, p;
    make_blob(good, tu_bases[tu_base_index(state)]);
    for (i = 0; i < SZ * 8; i++) {
        memcpy(bad, good, SZ);
        bad[i / 8] ^= (uint8_t)(1u << (i % 8));
        expect_rejected(bad, SZ, i / 8 >= 8 ? LAPICT_E_STATE_CHECKSUM : 0);
    }
    for (i = 0; i < SZ; i++)
        for (p = 0; p < 3; p++) {
            if (good[i] == pats[p])
                continue;
            memcpy(bad, good, SZ);
            bad[i] = pats[p];
            expect_rejected(bad, SZ, i >= 8 ? LAPICT_E_STATE_CHECKSUM : 0);
        }
    memcpy(bad, good, SZ);
    bad[24] = good[25];
    bad[25] = good[24];
    if (bad[24] != good[24])
        expect_rejected(bad, SZ, LAPICT_E_STATE_CHECKSUM);
    memcpy(bad, good, SZ);
    oracle_put32(bad, 124, oracle_get32(good, 124) + 1);
    expect_rejected(bad, SZ, LAPICT_E_STATE_CHECKSUM);
}

#define B_SVR 0x01u
#define B_DLA 0x10u
#define B_PRE 0x20u
#define B_EST 0x40u

/* Destination configs. */
enum dcfg { C_TU, C_BUS_100MHZ, C_SLOW_ADV, C_MIN_200, C_FLAG, C_FLAG_MIN };

static struct lapict_config cfg_of(enum dcfg dc, uint32_t min_ns)
{
    struct lapict_config c = tu_cfg();
    if (dc >= C_FLAG) { /* the flag tests': adaptive advance, 200 us min */
        c.min_period_ns = dc == C_FLAG_MIN ? min_ns : 200000;
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_ns = 2000;
    }
    if (dc == C_BUS_100MHZ)
        c.bus_hz = 100000000;
    if (dc == C_SLOW_ADV) {
        c.bus_hz = LAPICT_BUS_HZ_MIN;
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 5000;
    }
    if (dc == C_MIN_200)
        c.min_period_ns = 200000;
    return c;
}

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

/* LVTT @mode (the reset value unless @write_lvtt), @count in TMICT or TSC
 * ticks to a deadline; run past the pre-injection at @preinj_ns or @run_ns. */
static const struct {
    bool write_lvtt;
    uint32_t mode, count;
    uint64_t run_ns, preinj_ns;
} base_cases[B_COUNT] = {
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

/* Returns the guest TSC at the save. */
static uint64_t produce(enum base bs, bool svr_off, bool est, uint8_t *blob)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = cfg_of(C_FLAG, 0);
    uint32_t mode = base_cases[bs].mode, count = base_cases[bs].count;
    tu_setup(&h, &t, &c, 1000, false);
    if (est) {
        /* One pre-injected expiry and its entry: the tuner's first sample. */
        countdown(&t, 0xB, OS, 100000);
        fake_advance(&h, 200000);
        fake_enter(&h);
        lapict_reset(&t);
    }
    fake_advance(&h, 1000000);
    if (count && mode != DL)
        countdown(&t, 0xB, mode, count);
    else if (base_cases[bs].write_lvtt)
        lapict_lvtt_write(&t, mode | VEC);
    if (count && mode == DL)
        lapict_tsc_deadline_write(&t, fake_tsc(&h) + count);
    if (base_cases[bs].preinj_ns) {
        /* To just past the host timer armed the advance before it. */
        uint32_t adv = tu_stats(&t).advance_ns;
        assert_true(adv > 2);
        fake_advance(&h, base_cases[bs].preinj_ns - adv / 2);
    } else if (base_cases[bs].run_ns) {
        fake_advance(&h, base_cases[bs].run_ns);
    }
    if (svr_off)
        lapict_svr_write(&t, false);
    save(&t, blob);
    return fake_tsc(&h);
}

/* Sealed blobs forged from a template, each rejected with its code. */
enum tmpl {
    T_MAKE,      /* make_blob() at 0 */
    T_DEADLINE,  /* deadline 99999999 armed */
    T_HUGE_OS,   /* 2^32-1 ticks at /128 on the slowest bus */
    T_CLAMPED,   /* periodic /1 N 100 under a 200 us minimum */
    T_OS_PREINJ, /* produce(B_OS_PREINJ) */
    T_P_PREINJ,  /* produce(B_P_PREINJ) */
    T_PC_PREINJ, /* produce(B_P_CLAMPED_PREINJ) */
    T_DL_PREINJ, /* produce(B_DL_PREINJ), its TSC continues */
    T_COUNT
};

/* A forgery's low nibble is the field's width in bytes; F_XOR32 is not
 * resealed. */
enum fop {
    F_NONE = 0,
    F_SET8 = 0x01,
    F_SET16 = 0x02,
    F_SET32 = 0x04,
    F_SET64 = 0x08,
    F_OR32 = 0x14,
    F_ADD64 = 0x28,
    F_XOR32 = 0x34,
};

#define E_FIELD LAPICT_E_STATE_FIELD
#define E_CONFIG LAPICT_E_STATE_CONFIG
/* clang-format off */
#define CFG(n, tp, op, off, v, rc, dc) {n, tp, op, off, v, rc, dc, 0, 0}
#define ROW(n, tp, op, off, v, rc) CFG(n, tp, op, off, v, rc, C_TU)
/* clang-format on */
static const struct forged {
    const char *name;
    enum tmpl tp;
    enum fop op;
    size_t off;
    uint64_t v;
    int rc;
    enum dcfg dc;
    uint32_t min_ns; /* C_FLAG_MIN's minimum period */
    int64_t dtsc;    /* T_DL_PREINJ: destination TSC minus the source's */
} forged[] = {
    ROW("magic", T_MAKE, F_SET32, 0, 0x5450414Du, LAPICT_E_STATE_MAGIC),
    ROW("magic 0", T_MAKE, F_SET32, 0, 0, LAPICT_E_STATE_MAGIC),
    ROW("version 2", T_MAKE, F_SET16, 4, 2, LAPICT_E_STATE_VERSION),
    ROW("version 0", T_MAKE, F_SET16, 4, 0, LAPICT_E_STATE_VERSION),
    ROW("size - 1", T_MAKE, F_SET16, 6, SZ - 1, LAPICT_E_STATE_SIZE),
    ROW("size + 1", T_MAKE, F_SET16, 6, SZ + 1, LAPICT_E_STATE_SIZE),
    ROW("crc bit 31", T_MAKE, F_XOR32, 124, 1u << 31, LAPICT_E_STATE_CHECKSUM),
    ROW("illegal-vector count; legal vector", T_MAKE, F_SET8, 92, 1, E_FIELD),
    ROW("outlier run without tuner estimate", T_MAKE, F_SET8, 96, 1, E_FIELD),
    ROW("outlier run beyond 8 bits", T_MAKE, F_SET32, 96, 0x101, E_FIELD),
    ROW("late outlier run at its reseed", T_MAKE, F_SET32, 96, 0x82, E_FIELD),
    ROW("late outlier bit without count", T_MAKE, F_SET32, 96, 0x80, E_FIELD),
    ROW("reserved byte 100", T_MAKE, F_SET8, 100, 1, E_FIELD),
    ROW("reserved byte 101", T_MAKE, F_SET8, 101, 0x80, E_FIELD),
    ROW("reserved byte 123", T_MAKE, F_SET8, 123, 0xFF, E_FIELD),
    ROW("lvtt bit 31", T_MAKE, F_SET32, 8, 0x80020030u, E_FIELD),
    ROW("lvtt bit 8", T_MAKE, F_SET32, 8, 0x00020130u, E_FIELD),
    ROW("lvtt bit 19", T_MAKE, F_SET32, 8, 0x000A0030u, E_FIELD),
    ROW("lvtt mode 11", T_MAKE, F_SET32, 8, 0x00060030u, E_FIELD),
    ROW("tdcr bit 2", T_MAKE, F_SET32, 12, 0x4, E_FIELD),
    ROW("tdcr bit 4", T_MAKE, F_SET32, 12, 0x13, E_FIELD),
    ROW("all flags", T_MAKE, F_SET32, 20, 0xFFFFFFFFu, E_FIELD),
    ROW("E far beyond N", T_MAKE, F_SET64, 32, 1ull << 40, E_FIELD),
    ROW("E at 2^64-1", T_MAKE, F_SET64, 32, UINT64_MAX, E_FIELD),
    ROW("pending over catch-up limit", T_MAKE, F_SET32, 48, 0x10000, E_FIELD),
    ROW("advance > max", T_MAKE, F_SET32, 52, LAPICT_ADVANCE_NS_LIMIT + 1u,
        E_FIELD),
    /* Mode against registers: no register writes give these. */
    ROW("deadline mode with TMICT", T_MAKE, F_SET32, 8, DL | VEC, E_FIELD),
    ROW("one-shot with a deadline", T_DEADLINE, F_SET32, 8, OS | VEC, E_FIELD),
    /* Another bus rate than the destination's, or forged. */
    CFG("1 GHz into 100 MHz", T_MAKE, F_NONE, 0, 0, E_CONFIG, C_BUS_100MHZ),
    ROW("bus_hz 25 MHz", T_MAKE, F_SET64, 56, 25000000, E_CONFIG),
    /* Pre-injected: within the advance of now, nothing pending, flags of the
     * mode (a 16-year one-shot would spin its whole count). */
    CFG("16-year preinj", T_HUGE_OS, F_OR32, 20, B_PRE, E_FIELD, C_SLOW_ADV),
    CFG("one-shot pre-injected", T_OS_PREINJ, F_NONE, 0, 0, LAPICT_OK, C_FLAG),
    CFG("... and pending", T_OS_PREINJ, F_SET32, 48, 1, E_FIELD, C_FLAG),
    CFG("... advance 1 ns", T_OS_PREINJ, F_SET32, 52, 1, E_FIELD, C_FLAG),
    CFG("... -1 ms", T_OS_PREINJ, F_ADD64, 24, (uint64_t)-1000000, E_FIELD,
        C_FLAG),
    CFG("deadline pre-injected", T_DL_PREINJ, F_NONE, 0, 0, LAPICT_OK, C_FLAG),
    {"... TSC -1 ms", T_DL_PREINJ, F_NONE, 0, 0, E_FIELD, C_FLAG, 0, -1000000},
    CFG("... +1 s", T_DL_PREINJ, F_ADD64, 40, 1000000000u, E_FIELD, C_FLAG),
    CFG("... one-shot", T_DL_PREINJ, F_SET32, 8, OS | VEC, E_FIELD, C_FLAG),
    /* The clamp period (72): the one in force, only where it applies (N 100
     * at /1 lasts 100 ns); a pre-injection keeps its clock. */
    CFG("clamped", T_CLAMPED, F_NONE, 0, 0, LAPICT_OK, C_MIN_200),
    CFG("clamp 0", T_CLAMPED, F_SET32, 72, 0, E_FIELD, C_MIN_200),
    CFG("clamp > max", T_CLAMPED, F_SET32, 72, LAPICT_MIN_PERIOD_NS_MAX + 1,
        E_FIELD, C_MIN_200),
    CFG("clamp 100 ns", T_CLAMPED, F_SET32, 72, 100, E_FIELD, C_MIN_200),
    CFG("unclamped: 72 set", T_MAKE, F_SET32, 72, 200000, E_FIELD, C_MIN_200),
    CFG("clamped preinj", T_PC_PREINJ, F_NONE, 0, 0, LAPICT_OK, C_FLAG),
    {"... 300 us", T_PC_PREINJ, F_NONE, 0, 0, E_CONFIG, C_FLAG_MIN, 300000, 0},
    CFG("... min 0", T_PC_PREINJ, F_NONE, 0, 0, E_CONFIG, C_FLAG_MIN),
    {"preinj, 2 ms", T_P_PREINJ, F_NONE, 0, 0, E_CONFIG, C_FLAG_MIN, 2000000,
     0},
};

/* Template @tp built at @base into @blob; returns the guest TSC. */
static uint64_t template(enum tmpl tp, uint64_t base, uint8_t *blob)
{
    static const enum base prod[] = {B_OS_PREINJ, B_P_PREINJ,
                                     B_P_CLAMPED_PREINJ, B_DL_PREINJ};
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = cfg_of(tp == T_HUGE_OS   ? C_SLOW_ADV
                                    : tp == T_CLAMPED ? C_MIN_200
                                                      : C_TU,
                                    0);
    if (tp == T_MAKE) {
        make_blob(blob, 0);
        return 0;
    }
    if (tp >= T_OS_PREINJ)
        return produce(prod[tp - T_OS_PREINJ], false, false, blob);
    tu_setup(&h, &t, &c, base, false);
    if (tp == T_DEADLINE)
        deadline(&h, &t, VEC, 99999999); /* the TSC reads 0 */
    else if (tp == T_HUGE_OS)
        countdown(&t, 0xA, OS, UINT32_MAX);
    else
        countdown(&t, 0xB, PER, 100);
    fake_advance(&h, tp == T_CLAMPED ? 150000 : tp == T_DEADLINE ? 0 : 1000);
    save(&t, blob);
    return fake_tsc(&h);
}

/* Rule (state.h): a blob the library never writes, correctly sealed or not,
 * is refused with its code and the instance and host are unchanged. */
static void forged_blob_is_rejected_with_its_code(void **state)
{
    size_t b = tu_base_index(state), i;
    unsigned k;
    uint8_t tmpl[T_COUNT][SZ], bad[SZ];
    uint64_t tsc[T_COUNT], old, v;
    for (i = 0; i < T_COUNT; i++)
        tsc[i] = template((enum tmpl)i, tu_bases[b], tmpl[i]);
    assert_int_equal(oracle_get32(tmpl[T_MAKE], 124),
                     oracle_crc32(tmpl[T_MAKE], 124));
    assert_int_equal(oracle_get32(tmpl[T_MAKE], 72), 0);
    assert_int_equal(oracle_get32(tmpl[T_CLAMPED], 72), 200000);
    for (i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        const struct forged *fc = &forged[i];
        struct lapict_config c = cfg_of(fc->dc, fc->min_ns);
        uint64_t t = fc->tp == T_DL_PREINJ ? tsc[fc->tp] + fc->dtsc : 0;
        print_message("base %zu forged: %s\n", b, fc->name);
        memcpy(bad, tmpl[fc->tp], SZ);
        for (k = 0, old = 0; k < (fc->op & 0xFu); k++)
            old |= (uint64_t)bad[fc->off + k] << 8 * k;
        v = fc->op == F_OR32    ? old | fc->v
            : fc->op == F_ADD64 ? old + fc->v
            : fc->op == F_XOR32 ? old ^ fc->v
                                : fc->v;
        for (k = 0; k < (fc->op & 0xFu); k++)
            bad[fc->off + k] = (uint8_t)(v >> 8 * k);
        if (fc->op != F_NONE && fc->op != F_XOR32)
            oracle_reseal(bad);
        assert_int_equal(restore_len(&c, bad, SZ, tu_bases[b] + 777777, t),
                         fc->rc);
    }
}

static unsigned flag_key(const uint8_t *blob)
{
    uint32_t mode = (oracle_get32(blob, 8) >> 17) & 3u;
    return mode * 128u + (oracle_get32(blob, 20) & 0x7Fu);
}

/* Rule: every (mode, flags) combination is produced (and restores) or is
 * rejected on every produced blob of its mode with only the flags forged. */
static void every_flag_combination_is_producible_or_rejected(void **state)
{
    (void)state;
    static uint8_t blobs[B_COUNT * 4][SZ];
    uint64_t tscs[B_COUNT * 4];
    bool produced[3 * 128] = {false};
    struct lapict_config c = cfg_of(C_FLAG, 0);
    unsigned nb = 0, key, i, n_rejected = 0, n_produced = 0;
    int bs, v;
    for (bs = 0; bs < B_COUNT; bs++)
        for (v = 0; v < 4; v++) {
            uint8_t *b = blobs[nb];
            tscs[nb++] = produce((enum base)bs, v & 1, v & 2, b);
            /* The variant got what it asked for. */
            assert_int_equal(!(oracle_get32(b, 20) & B_SVR), v & 1);
            assert_int_equal(!!(oracle_get32(b, 20) & B_EST), !!(v & 2));
            /* Disabling the APIC masks LVTT: that write waits for the
             * instant of the expiry given ahead, which then happened. */
            if (base_cases[bs].preinj_ns)
                assert_int_equal(!!(oracle_get32(b, 20) & B_PRE), !(v & 1));
            produced[flag_key(b)] = true;
            assert_int_equal(restore_len(&c, b, SZ, 777777, tscs[nb - 1]),
                             LAPICT_OK);
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
                if (restore_len(&c, bad, SZ, 777777, tscs[i]) == LAPICT_OK)
                    fail_msg("mode %u flags 0x%02x accepted (template %u), "
                             "but the library never produces it",
                             mode, fl, i);
                n_rejected++;
            }
        }
    }
    print_message("%u combinations produced, %u forged blobs rejected\n",
                  n_produced, n_rejected);
    /* 11 base states x SVR x estimate, all distinct, but for the ones
     * injected ahead with the APIC then disabled: that write waits for the
     * instant, and the expiry processed is a state another base gives. */
    for (bs = 0, i = 0; bs < B_COUNT; bs++)
        i += base_cases[bs].preinj_ns != 0;
    assert_int_equal(n_produced, B_COUNT * 4 - 2 * i);
}

/* Rule: a restored pre-injection waits at most the advance, is not given
 * again, also via a host without advance. */
static void restored_preinjection_waits_at_most_the_advance(void **state)
{
    static const enum base bases[] = {B_OS_PREINJ, B_P_PREINJ,
                                      B_P_CLAMPED_PREINJ, B_DL_PREINJ};
    size_t i, via;
    (void)state;
    for (i = 0; i < 4; i++)
        for (via = 0; via < 2; via++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = cfg_of(C_FLAG, 0), off = cfg_of(C_FLAG, 0);
            uint8_t blob[SZ];
            uint64_t t0, tsc = produce(bases[i], false, false, blob);
            off.advance_mode = LAPICT_ADVANCE_OFF;
            if (via) {
                tu_setup(&h, &t, &off, TU_NEAR_WRAP, false);
                h.sim.cfg.tsc_offset = tsc;
                assert_int_equal(lapict_state_restore(&t, blob, SZ), LAPICT_OK);
                save(&t, blob);
            }
            tu_setup(&h, &t, &c, via ? 0 : TU_NEAR_WRAP, false);
            h.sim.cfg.tsc_offset = tsc; /* no time passed in between */
            t0 = h.sim.now_ns;
            assert_int_equal(lapict_state_restore(&t, blob, SZ), LAPICT_OK);
            assert_int_equal(lapict_irq_window_open(&t), LAPICT_OK);
            fake_enter(&h);
            if (!via)
                assert_true(h.sim.spins <= 1);
            assert_true(fake_diff(t0, h.sim.now_ns) <= 5000);
            fake_advance(&h, 150000);
            assert_int_equal(h.sim.injects, 0);
        }
}

/* Trap: every op the instance calls fails the test, but the clock reads
 * when trap_clock_ok. */
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

/* States in which a save finds work a register access would do. */
enum due {
    D_ONESHOT_DUE,     /* one-shot instant passed, host timer not run */
    D_PERIODIC_DUE,    /* one grid point passed */
    D_PERIODIC_MISSED, /* three grid points passed */
    D_DEADLINE_DUE,    /* guest TSC past the deadline */
    D_PREINJ_DUE,      /* injected ahead (3 us advance), then its instant */
    D_PREINJ_AHEAD,    /* injected ahead, instant not reached */
    D_PENDING_AND_DUE, /* one refused and pending, the next one due */
    D_ILLEGAL_DUE,     /* due with vector 5 (reported at delivery) */
    D_COUNT
};

/* Each: the mode and count (TSC ticks ahead for a deadline) at /1, run
 * @run_ns, then a stall of @stall_ns that no host timer sees. */
static const struct {
    uint32_t mode, n;
    uint64_t run_ns, stall_ns;
} dues[D_COUNT] = {
    [D_ONESHOT_DUE] = {OS, 1000000, 0, 1000500},
    [D_PERIODIC_DUE] = {PER, 1000000, 0, 1000500},
    [D_PERIODIC_MISSED] = {PER, 1000000, 0, 3000500},
    [D_DEADLINE_DUE] = {DL, 1000000, 0, 1000500},
    [D_PREINJ_DUE] = {PER, 1000000, 998000, 2500},
    [D_PREINJ_AHEAD] = {PER, 1000000, 998000, 0},
    [D_PENDING_AND_DUE] = {PER, 1000000, 1000000, 1000100},
    [D_ILLEGAL_DUE] = {OS, 1000, 0, 2000},
};

static struct lapict_config due_cfg(enum due d, enum lapict_missed_policy pol)
{
    struct lapict_config c = tu_cfg();
    c.missed_policy = pol;
    c.catch_up_max = 100;
    if (d == D_PREINJ_DUE || d == D_PREINJ_AHEAD) {
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = 3000;
    }
    return c;
}

static void build_due(enum due d, struct fake_host *h, struct lapict_timer *t,
                      uint64_t base, enum lapict_missed_policy pol)
{
    struct lapict_config c = due_cfg(d, pol);
    tu_setup(h, t, &c, base, (d & 1) != 0);
    if (dues[d].mode == DL)
        deadline(h, t, VEC, dues[d].n);
    else
        countdown(t, 0xB, dues[d].mode, dues[d].n);
    if (d == D_ILLEGAL_DUE)
        lapict_lvtt_write(t, OS | 5u);
    if (d == D_PENDING_AND_DUE)
        fake_window(h, false);
    fake_advance(h, dues[d].run_ns);
    if (d == D_PREINJ_DUE || d == D_PREINJ_AHEAD)
        assert_int_equal(h->sim.injects, 1);
    if (d == D_PENDING_AND_DUE)
        assert_int_equal(tu_stats(t).pending, 1);
    fake_stall(h, dues[d].stall_ns);
}

/* Rule (section 8): a save reads only the clock and changes nothing (save_at
 * calls no op, same blob); its blob is the twin's serviced at that instant,
 * interrupt refused, and carries what settling counted (76..95). */
static void save_has_no_side_effect_and_is_the_serviced_state(void **state)
{
    static const enum lapict_missed_policy pols[] = {
        LAPICT_MISSED_COALESCE, LAPICT_MISSED_CATCH_UP, LAPICT_MISSED_DROP};
    size_t b = tu_base_index(state), p, d;
    for (p = 0; p < 3; p++)
        for (d = 0; d < D_COUNT + (p ? 0 : NSCEN); d++) {
            struct fake_host ha, hb, hcopy;
            struct lapict_timer ta, tb, copy;
            uint8_t blob_a[SZ], blob_b[SZ];
            struct lapict_stats sa, sb;
            uint64_t now, tsc, calls;
            int s;
            print_message("base %zu policy %zu state %zu\n", b, p, d);
            if (d < D_COUNT)
                build_due((enum due)d, &ha, &ta, tu_bases[b], pols[p]);
            else
                build(d - D_COUNT, &ha, &ta, tu_bases[b]);
            memcpy(&copy, &ta, sizeof(ta));
            trap_clock_ok = true;
            ha.rec.trace = trap_op;
            memcpy(&hcopy, &ha, sizeof(ha));
            save(&ta, blob_a);
            ha.rec.trace = NULL;
            /* The clock was read through the trap: it was in the way. */
            assert_true(ha.rec.total_calls > hcopy.rec.total_calls);
            assert_memory_equal(&ta, &copy, sizeof(ta));
            hcopy.rec = ha.rec;
            assert_memory_equal(&ha, &hcopy, sizeof(ha));
            now = ha.sim.now_ns;
            tsc = fake_tsc(&ha);
            calls = ha.rec.total_calls;
            trap_clock_ok = false;
            ha.rec.trace = trap_op;
            for (s = 0; s < 2; s++)
                assert_int_equal(
                    lapict_state_save_at(&ta, now, tsc, blob_b, SZ), LAPICT_OK);
            ha.rec.trace = NULL;
            assert_int_equal(ha.rec.total_calls, calls);
            assert_memory_equal(blob_a, blob_b, SZ);
            assert_memory_equal(&ta, &copy, sizeof(ta));
            if (d >= D_COUNT)
                continue;
            /* The twin, serviced at the same instant, window shut. */
            build_due((enum due)d, &hb, &tb, tu_bases[b], pols[p]);
            hb.sim.window_open = false;
            assert_int_equal(lapict_expire(&tb), LAPICT_OK);
            save(&tb, blob_b);
            if (d == D_ILLEGAL_DUE) {
                /* Dropped and reported by servicing; the save drops it
                 * too and counts it at 92 for the destination to report. */
                assert_int_equal(oracle_get32(blob_a, 48), 0);
                assert_int_equal(oracle_get32(blob_b, 48), 0);
                assert_int_equal(oracle_get32(blob_a, 92), 1);
                assert_int_equal(oracle_get32(blob_b, 92), 0);
                assert_int_equal(hb.sim.reports, 1);
                assert_int_equal(ha.sim.reports, 0);
                continue;
            }
            sa = tu_stats(&ta);
            sb = tu_stats(&tb);
            assert_int_equal(oracle_get32(blob_a, 76),
                             sb.expiries - sa.expiries);
            assert_int_equal(oracle_get32(blob_a, 80), sb.masked - sa.masked);
            assert_int_equal(oracle_get32(blob_a, 84),
                             sb.coalesced - sa.coalesced);
            assert_int_equal(oracle_get32(blob_a, 88), sb.dropped - sa.dropped);
            /* Every state but the one not yet due expired. */
            assert_true(d == D_PREINJ_AHEAD || oracle_get32(blob_a, 76) >= 1);
            assert_memory_equal(blob_a, blob_b, 76);
            assert_int_equal(oracle_get32(blob_a, 92), 0);
            assert_memory_equal(blob_a + 96, blob_b + 96, 124 - 96);
            if (d == D_PENDING_AND_DUE && p == 0) {
                /* Section 6: the held tick and the due one fold into one
                 * pending; the destination counts the coalesced one. */
                struct lapict_config c = due_cfg((enum due)d, pols[p]);
                tu_setup(&hb, &tb, &c, 5000, false);
                assert_int_equal(lapict_state_restore(&tb, blob_a, SZ),
                                 LAPICT_OK);
                lapict_irq_window_open(&tb);
                assert_int_equal(hb.sim.injects, 1);
                sb = tu_stats(&tb);
                assert_int_equal(sa.coalesced, 0);
                assert_int_equal(sb.expiries, 1);
                assert_int_equal(sa.coalesced + sb.coalesced, 1);
            }
        }
}

/* Rule (state.h): every interrupt due by the save is delivered exactly once
 * whatever the order in which a VMM saves and restores its interrupt
 * controller (a model IRR: what the source accepted) and the timer, then
 * opens the window. */
static void due_expiry_delivered_once_whatever_the_irr_save_order(void **state)
{
    /* Pre-injected expiries were injected before the vCPU stopped, so the
     * IRR copy holds them. */
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
            struct fake_host ha, hb;
            struct lapict_timer ta, tb;
            struct lapict_config c = due_cfg(cases[i].d, cases[i].pol);
            uint8_t blob[SZ];
            unsigned irr, lost, before_irr = 0;
            print_message("base %zu case %zu order %d\n", b, i, o);
            build_due(cases[i].d, &ha, &ta, tu_bases[b], cases[i].pol);
            if (o & 1) /* the timer first */
                save(&ta, blob);
            irr = ha.sim.injects;
            if (!(o & 1))
                save(&ta, blob);
            lost = ha.sim.injects - irr; /* missed by the IRR copy */
            tu_setup(&hb, &tb, &c, tu_bases[b] + 5000000000ull, false);
            hb.sim.cfg.tsc_offset = fake_tsc(&ha); /* the TSC continues */
            assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
            if (o & 2) {
                /* Restoring the IRR copy overwrites what was injected. */
                lost += hb.sim.injects;
                before_irr = hb.sim.injects;
            }
            assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
            assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
            fake_enter(&hb);
            fake_advance(&hb, 400000); /* before any state's next expiry */
            assert_int_equal(lost, 0);
            assert_int_equal(irr + (hb.sim.injects - before_irr),
                             cases[i].want);
        }
}

/* Rule (sections 3, 8): a count-down resumes its count on the destination's
 * clock at any bus rate; a clamped one into any minimum, never early. */
static void count_down_resumes_its_count_on_the_destination(void **state)
{
    static const struct {
        uint64_t bus_hz;
        uint32_t mode, n, src_min, dst_min;
        uint64_t run_ns, tmcct, first_ns, period_ns; /* 0: from the oracle */
        bool same_base, hv;
        uint64_t dst_off; /* destination base: a base plus this */
    } rows[] = {
        {1000000000ull, OS, 1000000, 0, 0, 400000, 0, 0, 0, true, true, 0},
        {25000000ull, OS, 1000000, 0, 0, 400000, 0, 0, 0, true, true, 0},
        {134217728ull, OS, 1000000, 0, 0, 400000, 0, 0, 0, true, true, 0},
        /* 3 expiries, 100 us into the 4th */
        {1000000000ull, PER, 300000, 0, 0, 1000000, 200000, 200000, 300000,
         false, false, 0},
        /* clamped: the same clock is exact; unclamped: 1 ns ticks */
        {1000000000ull, PER, 100, 200000, 200000, 150000, 25, 50000, 200000,
         false, false, 12345},
        {1000000000ull, PER, 100, 200000, 0, 150000, 25, 25, 100, false, true,
         12345},
        {1000000000ull, PER, 100, 200000, 100000, 150000, 25, 25000, 100000,
         false, false, 12345},
        {1000000000ull, PER, 100, 200000, 400000, 150000, 25, 100000, 400000,
         false, true, 12345},
    };
    size_t b = tu_base_index(state), i;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct fake_host ha, hb;
        struct lapict_timer ta, tb;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ];
        uint64_t r, dur = oracle_ns_for(rows[i].n, rows[i].bus_hz, 1);
        uint64_t tmcct = rows[i].tmcct, first = rows[i].first_ns;
        print_message("base %zu row %zu\n", b, i);
        c.bus_hz = rows[i].bus_hz;
        c.min_period_ns = rows[i].src_min;
        tu_setup(&ha, &ta, &c, tu_bases[b], false);
        countdown(&ta, 0xB, rows[i].mode, rows[i].n);
        fake_advance(&ha, rows[i].run_ns);
        if (!tmcct) { /* time stands still: the rest remains */
            tmcct =
                rows[i].n - oracle_ticks_in(rows[i].run_ns, rows[i].bus_hz, 1);
            first = dur - rows[i].run_ns;
        }
        assert_int_equal(lapict_tmcct_read(&ta), tmcct);
        save(&ta, blob);
        c.min_period_ns = rows[i].dst_min;
        tu_setup(&hb, &tb, &c,
                 rows[i].same_base
                     ? tu_bases[b] + rows[i].run_ns + 1000000000ull
                     : tu_bases[1 - b] + rows[i].dst_off,
                 rows[i].hv);
        r = hb.sim.now_ns;
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
        assert_int_equal(lapict_tmcct_read(&tb), tmcct);
        assert_int_equal(lapict_tmict_read(&tb), rows[i].n);
        fake_advance(&hb, first - 1);
        assert_int_equal(hb.sim.injects, 0);
        assert_true(lapict_tmcct_read(&tb) >= 1);
        fake_advance(&hb, 1);
        assert_int_equal(hb.sim.injects, 1);
        assert_int_equal(hb.inj[0].host_ns, r + first);
        if (rows[i].mode == OS) {
            fake_advance(&hb, 10 * dur);
            assert_int_equal(hb.sim.injects, 1);
        } else {
            assert_int_equal(lapict_tmcct_read(&tb), rows[i].n);
            fake_advance(&hb, rows[i].period_ns - 1);
            assert_int_equal(hb.sim.injects, 1);
            assert_true(lapict_tmcct_read(&tb) <= rows[i].n);
            fake_advance(&hb, 1);
            assert_int_equal(hb.sim.injects, 2);
            assert_int_equal(hb.inj[1].host_ns, r + first + rows[i].period_ns);
        }
        tu_check_host(&ha);
        tu_check_host(&hb);
    }
}

/* tests/data/state_golden_v1.hex in order: clock and TSC (1 GHz) from 0,
 * vector 0x31, TDCR/LVTT/TMICT, SVR off, window shut, then @run_ns. */
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

static const struct {
    const char *name;
    uint32_t tdcr, lvtt, tmict;
    bool svr_off, shut;
    uint64_t run_ns;
} golden_cases[G_COUNT] = {
    /* one-shot /16, saved 5 ms in */
    [G_ONESHOT_MID] = {"oneshot_mid", 0x3, OS | 1, 1000000, false, false,
                       5000000},
    /* periodic /1, saved 1 ms in (3 expiries) */
    [G_PERIODIC] = {"periodic", 0xB, PER | 1, 300000, false, false, 1000000},
    /* TSC deadline 5 000 000 armed (below), saved at TSC 1 000 000 */
    [G_DEADLINE] = {"deadline", 0, 0, 0, false, false, 1000000},
    /* one-shot /1 expired, window shut: pending */
    [G_PENDING] = {"pending", 0xB, OS | 1, 1000, false, true, 5000},
    /* periodic /1 under a 200 us minimum period, saved 150 us in */
    [G_CLAMPED] = {"clamped", 0xB, PER | 1, 100, false, false, 150000},
    /* fixed advance 3 us: injected ahead at 997 us, saved at 998 us */
    [G_PREINJ] = {"preinjected", 0xB, PER | 1, 1000000, false, false, 998000},
    /* periodic /4, APIC software-disabled */
    [G_SVR_OFF] = {"svr_off", 0x1, PER | 1, 100000, true, false, 123456},
    /* catch-up periodic /1, window shut 4.5 ms */
    [G_CATCH_UP] = {"catch_up", 0xB, PER | 1, 1000000, false, true, 4500000},
    /* adaptive advance, tuner seeded (below), one-shot armed */
    [G_ADAPTIVE] = {"adaptive", 0xB, OS | 1, 700000, false, false, 100000},
};

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
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = golden_cfg(g);
    tu_setup(&h, &t, &c, 0, false);
    if (g == G_DEADLINE) {
        lapict_lvtt_write(&t, DL | 0x31u);
        lapict_tsc_deadline_write(&t, 5000000);
    }
    if (g == G_ADAPTIVE) {
        /* A pre-injected expiry and its entry seed the tuner. */
        countdown(&t, 0xB, OS | 0x1u, 100000);
        fake_advance(&h, 200000);
        fake_enter(&h);
    }
    if (golden_cases[g].tmict)
        countdown(&t, golden_cases[g].tdcr, golden_cases[g].lvtt,
                  golden_cases[g].tmict);
    if (golden_cases[g].svr_off)
        lapict_svr_write(&t, false);
    if (golden_cases[g].shut)
        fake_window(&h, false);
    fake_advance(&h, golden_cases[g].run_ns);
    save(&t, blob);
}

/* The data file: "= name" lines in the order of enum golden, each followed
 * by its bytes as hex pairs; '#' lines are comments. */
static uint8_t golden_v1[G_COUNT][SZ];

static void golden_load(void)
{
    static bool loaded;
    char line[128], name[32];
    size_t n = SZ;
    int g = -1, used;
    unsigned byte;
    FILE *f;
    if (loaded)
        return;
    f = fopen(LAPICT_TEST_DATA_DIR "/state_golden_v1.hex", "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        const char *p = line;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "= %31s", name) == 1) {
            assert_int_equal(n, SZ);
            assert_true(++g < G_COUNT);
            assert_string_equal(name, golden_cases[g].name);
            n = 0;
            continue;
        }
        assert_true(g >= 0);
        for (; sscanf(p, "%2x%n", &byte, &used) == 1; p += used) {
            assert_true(n < SZ);
            golden_v1[g][n++] = (uint8_t)byte;
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

/* Rule (state.h "Versions"): save writes exactly the current golden blobs;
 * a format change is a new version, old blobs kept. */
static void golden_blobs_are_what_save_writes(void **state)
{
    int g;
    (void)state;
    assert_int_equal(LAPICT_STATE_VERSION, 1);
    golden_load();
    for (g = 0; g < G_COUNT; g++) {
        uint8_t b[SZ];
        print_message("golden %s\n", golden_cases[g].name);
        golden_capture((enum golden)g, b);
        assert_memory_equal(b, golden_v1[g], SZ);
    }
}

/* Restore golden blob @g at host @base, guest TSC @tsc there; then open the
 * window if @open. */
static void golden_restore(enum golden g, struct fake_host *h,
                           struct lapict_timer *t, uint64_t base, uint64_t tsc,
                           bool open)
{
    struct lapict_config c = golden_cfg(g);
    fake_host_init(h, base, 1000000, tsc, false);
    assert_int_equal(fake_attach(h, t, &c), LAPICT_OK);
    assert_int_equal(lapict_state_restore(t, golden_v1[g], SZ), LAPICT_OK);
    assert_int_equal(h->sim.injects + h->sim.refusals, 0);
    if (open)
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

/* Rule (state.h "Versions"): every golden blob restores to the state it was
 * captured in: registers, the next interrupts at their instants, nothing
 * early, doubled or lost. */
static void golden_blobs_restore_to_their_state(void **state)
{
    size_t b = tu_base_index(state);
    struct fake_host h;
    struct lapict_timer t;
    uint64_t r = tu_bases[1 - b] + 4242;
    struct lapict_stats st;
    golden_load();
    /* one-shot /16: 312500 ticks done, 687500 left (11 ms). */
    golden_restore(G_ONESHOT_MID, &h, &t, r, 0, true);
    assert_int_equal(lapict_tmcct_read(&t), 687500);
    assert_int_equal(lapict_tmict_read(&t), 1000000);
    assert_int_equal(lapict_tdcr_read(&t), 0x3);
    assert_int_equal(lapict_lvtt_read(&t), OS | 0x31u);
    expect_interrupts(&h, r, (const uint64_t[]){11000000}, 1, 50000000);
    assert_int_equal(lapict_tmcct_read(&t), 0);
    /* periodic 300 us: 100 us into the 4th period. */
    golden_restore(G_PERIODIC, &h, &t, r, 0, true);
    assert_int_equal(lapict_tmcct_read(&t), 200000);
    expect_interrupts(&h, r, (const uint64_t[]){200000, 500000, 800000}, 3,
                      1000000);
    /* deadline 5 000 000: fires when this TSC reaches it. */
    golden_restore(G_DEADLINE, &h, &t, r, 3000000, true);
    assert_int_equal(lapict_tsc_deadline_read(&t), 5000000);
    assert_int_equal(lapict_lvtt_read(&t), DL | 0x31u);
    expect_interrupts(&h, r, (const uint64_t[]){2000000}, 1, 10000000);
    assert_int_equal(h.inj[0].guest_tsc, 5000000);
    assert_int_equal(lapict_tsc_deadline_read(&t), 0);
    /* pending: delivered by the window-open step, once. */
    golden_restore(G_PENDING, &h, &t, r, 0, false);
    assert_int_equal(lapict_lvtt_read(&t), OS | 0x31u | LAPICT_LVTT_PENDING);
    assert_int_equal(h.sim.injects, 0);
    fake_window(&h, true);
    fake_window(&h, true);
    fake_advance(&h, 10000000);
    assert_int_equal(h.sim.injects, 1);
    assert_int_equal(h.inj[0].host_ns, r);
    assert_int_equal(lapict_lvtt_read(&t), OS | 0x31u);
    /* clamped: 25 of 100 ticks left on the 200 us clock. */
    golden_restore(G_CLAMPED, &h, &t, r, 0, true);
    assert_int_equal(lapict_tmcct_read(&t), 25);
    expect_interrupts(&h, r, (const uint64_t[]){50000, 250000, 450000}, 3,
                      600000);
    assert_true(tu_stats(&t).clamp_reported);
    /* pre-injected: the entry waits 2 us, the expiry is not delivered
     * again; the next one injected ahead 3 us before its instant. */
    golden_restore(G_PREINJ, &h, &t, r, 0, true);
    fake_enter(&h);
    assert_int_equal(h.sim.now_ns, r + 2000);
    assert_int_equal(h.sim.injects, 0);
    assert_int_equal(lapict_tmcct_read(&t), 1000000);
    expect_interrupts(&h, r + 2000, (const uint64_t[]){1000000 - 3000}, 1,
                      1500000);
    /* SVR off: masked, counting, delivering nothing. */
    golden_restore(G_SVR_OFF, &h, &t, r, 0, true);
    assert_int_equal(lapict_lvtt_read(&t), PER | LAPICT_LVTT_MASK | 0x31u);
    /* /4 at 1 GHz: 400 us period, 123456 ns in: 30864 ticks done. */
    assert_int_equal(lapict_tmcct_read(&t), 100000 - 30864);
    fake_advance(&h, 5000000);
    assert_int_equal(h.sim.injects, 0);
    /* catch-up: four ticks pending, each delivered. */
    golden_restore(G_CATCH_UP, &h, &t, r, 0, true);
    st = tu_stats(&t);
    assert_int_equal(h.sim.injects, 4);
    assert_int_equal(st.pending, 0);
    assert_int_equal(lapict_tmcct_read(&t), 500000);
    /* adaptive: the tuned advance comes back; the one-shot resumes. */
    golden_restore(G_ADAPTIVE, &h, &t, r, 0, true);
    st = tu_stats(&t);
    assert_int_equal(st.advance_ns, oracle_get32(golden_v1[G_ADAPTIVE], 52));
    assert_int_equal(lapict_tmcct_read(&t), 600000);
    tu_check_host(&h);
}

/* Rule (section 8, state.h): a deadline fires when the destination's TSC
 * reaches it, at its rate; past it, restore injects nothing and the
 * window-open step delivers it once; count-downs ignore the TSC rate. */
static void
restored_deadline_fires_when_destination_tsc_reaches_it(void **state)
{
    static const struct {
        uint32_t khz;
        uint64_t ahead, short_by;
        size_t hv_at; /* the destination offers hv at this source base */
    } rows[] = {
        {1000000, 5000000, 3000000, 0}, /* TSC 3 ms short of D, not 4 */
        {3000, 3000000, 2000000, 1},    /* the TSC continues at its rate */
        {999999, 3000000, 2000000, 1},
        {2500000, 3000000, 2000000, 1},
    };
    size_t b = tu_base_index(state), i;
    unsigned w;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct fake_host ha, hb;
        struct lapict_timer ta, tb;
        struct lapict_config c = tu_cfg();
        uint8_t blob[SZ];
        uint64_t D, r, first;
        tu_setup(&ha, &ta, &c, tu_bases[b], false);
        lapict_lvtt_write(&ta, DL | VEC);
        D = fake_tsc(&ha) + rows[i].ahead;
        lapict_tsc_deadline_write(&ta, D);
        fake_advance(&ha, 1000000);
        save(&ta, blob);
        c.tsc_khz = rows[i].khz;
        fake_host_init(&hb, tu_bases[1 - b], rows[i].khz, D - rows[i].short_by,
                       b == rows[i].hv_at);
        assert_int_equal(fake_attach(&hb, &tb, &c), LAPICT_OK);
        r = hb.sim.now_ns;
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        assert_int_equal(lapict_tsc_deadline_read(&tb), D);
        /* short_by TSC ticks at this rate, rounded up. */
        first = (rows[i].short_by * 1000000u + rows[i].khz - 1) / rows[i].khz;
        fake_advance(&hb, first - 1);
        assert_int_equal(hb.sim.injects, 0);
        fake_advance(&hb, 1);
        assert_int_equal(hb.sim.injects, 1);
        assert_true(hb.inj[0].guest_tsc >= D);
        assert_int_equal(hb.inj[0].host_ns, r + first);
        assert_int_equal(lapict_tsc_deadline_read(&tb), 0);
        tu_check_host(&hb);
        for (w = 0; w < 3; w++) { /* TSC past D: due on arrival */
            fake_host_init(&hb, w == 2 ? 0 : tu_bases[1 - b], rows[i].khz,
                           D + 5, w == 1);
            assert_int_equal(fake_attach(&hb, &tb, &c), LAPICT_OK);
            hb.sim.window_open = w != 0;
            assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
            if (w == 2) {
                fake_run_due(&hb);
                lapict_irq_window_open(&tb);
                assert_int_equal(hb.sim.injects, 1);
                assert_int_equal(hb.inj[0].host_ns, 0);
                tu_check_host(&hb);
                continue;
            }
            /* Restore and reads never inject (state.h); the window-open
             * step delivers, or keeps it pending while shut. */
            assert_int_equal(hb.sim.injects + hb.sim.refusals, 0);
            assert_int_equal(lapict_tsc_deadline_read(&tb), 0);
            assert_int_equal(hb.sim.injects + hb.sim.refusals, 0);
            assert_int_equal(lapict_lvtt_read(&tb) & LAPICT_LVTT_PENDING,
                             LAPICT_LVTT_PENDING);
            assert_int_equal(lapict_irq_window_open(&tb), LAPICT_OK);
            assert_int_equal(hb.sim.injects, w);
            fake_window(&hb, true);
            fake_window(&hb, true);
            fake_advance(&hb, 10000000);
            assert_int_equal(hb.sim.injects, 1);
            assert_int_equal(hb.inj[0].vector, VEC);
            tu_check_host(&hb);
        }
        tu_check_host(&ha);
        make_blob(blob, 0);
        tu_setup(&hb, &tb, &c, tu_bases[b], false);
        assert_int_equal(lapict_state_restore(&tb, blob, SZ), LAPICT_OK);
        /* make_blob: /16, N 4000000, 123457 ns in: 7716 ticks done. */
        assert_int_equal(lapict_tmcct_read(&tb), 4000000 - 7716);
    }
}

/* Saved just after a 50 us advance injected the expiry ahead; returns the
 * lead (save to instant, as the source enters) and *tsc at the save. */
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
    if (mode == DL)
        deadline(&h, &t, VEC, 1000000);
    else
        countdown(&t, 0xB, mode, 1000000);
    fake_advance(&h, 1000000 - 30000);
    assert_int_equal(h.sim.injects, 1); /* injected ahead */
    at = h.sim.now_ns;
    *tsc = fake_tsc(&h);
    save(&t, blob);
    fake_enter(&h);
    assert_int_equal(h.sim.deliveries, 1);
    return h.sim.now_ns - at;
}

/* Rule (sections 7, 8): a pre-injection keeps its wait where the advance is
 * smaller or off, a TDCR write does not repeat it, a host without spin
 * refuses it unchanged; an advance-free blob keeps its instant. */
static void
restored_preinjection_never_early_nor_twice_in_any_advance(void **state)
{
    static const uint32_t modes[] = {OS, PER, DL};
    /* Destinations: advance off, fixed 1 us, adaptive up to 1 us, and
     * fixed 1 us without a spin op. */
    static const struct {
        uint32_t mode, ns, max_ns;
        bool no_spin;
    } dests[] = {
        {LAPICT_ADVANCE_OFF, 0, 0, false},
        {LAPICT_ADVANCE_FIXED, 1000, 0, false},
        {LAPICT_ADVANCE_ADAPTIVE, 1000, 1000, false},
        {LAPICT_ADVANCE_FIXED, 1000, 0, true},
    };
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config on = tu_cfg(); /* advance off, then on */
    uint8_t blob[SZ];
    size_t m, d;
    uint64_t t0;
    (void)state;
    for (m = 0; m < 3; m++)
        for (d = 0; d < 4; d++) {
            struct lapict_config c = tu_cfg();
            uint64_t tsc, lead;
            lead = saved_preinjection(modes[m], blob, &tsc);
            assert_true(lead > 1000 && lead <= 50000);
            c.advance_mode = dests[d].mode;
            c.advance_ns = dests[d].ns;
            if (dests[d].max_ns)
                c.advance_max_ns = dests[d].max_ns;
            fake_host_init(&h, TU_NEAR_WRAP, c.tsc_khz, tsc, false);
            if (dests[d].no_spin)
                lapict_sim_ops_remove(&h.ops, FAKE_OP_SPIN);
            assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
            t0 = h.sim.now_ns;
            if (dests[d].no_spin) {
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
            assert_true(h.sim.now_ns - t0 >= lead);
            assert_int_equal(lapict_tdcr_write(&t, 0x0), LAPICT_OK);
            fake_advance(&h, 30000);
            fake_enter(&h);
            if (modes[m] != PER)
                assert_int_equal(h.sim.injects, 0);
            tu_check_host(&h);
        }
    /* Reverse: 30 us left, within the advance: injected ahead at the first
     * callback, seen by the guest at the instant. */
    tu_setup(&h, &t, &on, 0, false);
    countdown(&t, 0xB, OS, 1000000);
    fake_advance(&h, 1000000 - 30000);
    save(&t, blob);
    on.advance_mode = LAPICT_ADVANCE_FIXED;
    on.advance_ns = 50000;
    tu_setup(&h, &t, &on, TU_NEAR_WRAP, false);
    t0 = h.sim.now_ns;
    assert_int_equal(lapict_state_restore(&t, blob, SZ), LAPICT_OK);
    fake_advance(&h, 1);
    assert_int_equal(h.sim.injects, 1);
    fake_enter(&h);
    assert_int_equal(h.sim.deliveries, 1);
    assert_int_equal(h.dlv[0].host_ns, t0 + 30000);
    tu_check_host(&h);
}

/* Rule (sections 5, 8): an illegal-vector expiry passing while refused is
 * dropped and reported by restore as by an unmigrated twin. */
static void illegal_vector_expiry_dropped_across_a_save(void **state)
{
    static const uint32_t modes[] = {DL, OS};
    size_t m;
    (void)state;
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
        if (modes[m] == DL)
            assert_int_equal(lapict_tsc_deadline_write(&a, 100000), LAPICT_OK);
        else
            assert_int_equal(lapict_tmict_write(&a, 100000), LAPICT_OK);
        fake_stall(&ha, 200000); /* passes in the migration gap */
        save(&a, blob);
        hb.sim.cfg.tsc_offset = fake_tsc(&ha);
        fake_window(&hb, false);
        assert_int_equal(lapict_state_restore(&b, blob, SZ), LAPICT_OK);
        fake_run_due(&ha); /* the twin */
        assert_int_equal(lapict_lvtt_read(&a), lapict_lvtt_read(&b));
        assert_int_equal(lapict_lvtt_read(&b) & LAPICT_LVTT_PENDING, 0);
        sa = tu_stats(&a);
        sb = tu_stats(&b);
        assert_int_equal(sb.illegal_vector, sa.illegal_vector);
        assert_int_equal(sb.last_error, LAPICT_E_VECTOR);
        assert_int_equal(hb.sim.reports, ha.sim.reports);
        assert_int_equal(hb.rep[0].status, LAPICT_E_VECTOR);
        assert_int_equal(lapict_lvtt_write(&a, modes[m] | VEC), LAPICT_OK);
        assert_int_equal(lapict_lvtt_write(&b, modes[m] | VEC), LAPICT_OK);
        fake_window(&ha, true);
        fake_window(&hb, true);
        assert_int_equal(ha.sim.injects, 0);
        assert_int_equal(hb.sim.injects, 0);
        tu_check_host(&hb);
    }
}

/* Rule (sections 5, 8): an illegal-vector deadline that falls due in the
 * migration gap, after the save (the destination's guest TSC has passed it
 * at the restore), is dropped and reported exactly once, by the restore,
 * as by an unmigrated twin serviced at that instant. */
static void illegal_vector_deadline_due_at_restore_reported_once(void **state)
{
    size_t b = tu_base_index(state);
    struct fake_host ha, hb;
    struct lapict_timer a, t;
    struct lapict_config c = tu_cfg();
    uint8_t blob[SZ];
    struct lapict_stats sa, sb;

    tu_setup(&ha, &a, &c, tu_bases[b], false);
    tu_setup(&hb, &t, &c, tu_bases[b] + 5000000000ull, false);
    assert_int_equal(lapict_lvtt_write(&a, DL | 5u), LAPICT_OK);
    assert_int_equal(lapict_tsc_deadline_write(&a, fake_tsc(&ha) + 100000),
                     LAPICT_OK);
    save(&a, blob); /* not yet due */
    assert_int_equal(oracle_get32(blob, 92), 0);
    fake_stall(&ha, 200000); /* the gap: the deadline passes */
    hb.sim.cfg.tsc_offset = fake_tsc(&ha);
    assert_int_equal(lapict_state_restore(&t, blob, SZ), LAPICT_OK);
    fake_run_due(&ha); /* the twin */
    sa = tu_stats(&a);
    sb = tu_stats(&t);
    assert_int_equal(ha.sim.reports, 1);
    assert_int_equal(hb.sim.reports, ha.sim.reports);
    assert_int_equal(hb.rep[0].status, LAPICT_E_VECTOR);
    assert_int_equal(sb.illegal_vector, sa.illegal_vector);
    assert_int_equal(sb.last_error, LAPICT_E_VECTOR);
    assert_int_equal(lapict_lvtt_read(&t) & LAPICT_LVTT_PENDING, 0);
    /* Dropped, not held: a legal vector later finds nothing to give. */
    assert_int_equal(lapict_lvtt_write(&t, DL | VEC), LAPICT_OK);
    lapict_irq_window_open(&t);
    assert_int_equal(hb.sim.injects, 0);
    assert_int_equal(hb.sim.reports, 1);
    tu_check_host(&hb);
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
        TU_FIXED_AT_BASES(blob_buffer_sizes_and_null_arguments, TU_HV_NEVER),
        TU_FIXED_AT_BASES(blob_layout_matches_state_h, TU_HV_NEAR_2_64),
        TU_AT_BASES(round_trip_at_same_instant_changes_nothing_observable),
        TU_AT_BASES(count_down_resumes_its_count_on_the_destination),
        TU_PAIR_AT_BASES(expiry_around_a_save_is_delivered_exactly_once),
        TU_PAIR_AT_BASES(pending_at_save_delivered_once_after_restore),
        TU_PAIR_AT_BASES(restore_replaces_the_destination_timer),
        TU_AT_BASES(every_corruption_is_rejected_and_instance_unchanged),
        TU_AT_BASES(forged_blob_is_rejected_with_its_code),
        cmocka_unit_test(every_flag_combination_is_producible_or_rejected),
        cmocka_unit_test(restored_preinjection_waits_at_most_the_advance),
        TU_AT_BASES(save_has_no_side_effect_and_is_the_serviced_state),
        TU_AT_BASES(due_expiry_delivered_once_whatever_the_irr_save_order),
        cmocka_unit_test(golden_blobs_are_what_save_writes),
        TU_AT_BASES(golden_blobs_restore_to_their_state),
        TU_AT_BASES(restored_deadline_fires_when_destination_tsc_reaches_it),
        cmocka_unit_test(
            restored_preinjection_never_early_nor_twice_in_any_advance),
        cmocka_unit_test(illegal_vector_expiry_dropped_across_a_save),
        TU_AT_BASES(illegal_vector_deadline_due_at_restore_reported_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
