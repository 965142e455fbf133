/* SPDX-License-Identifier: MIT */
/*
 * fuzz_restore: lapict_state_restore() on untrusted blobs.
 *
 * Input: byte 0 picks the configuration (bus clock, TSC-deadline support,
 * missed-tick policy, advance), byte 1 the mode, byte 2 the length of a
 * short scenario (register writes, time steps, window and SVR changes)
 * that puts a source and a destination instance in some state. Then:
 * - raw mode (byte 1 even): the rest of the input is the blob, any length;
 * - mutate mode (byte 1 odd): the source's saved blob, with (offset, xor)
 *   byte pairs from the rest of the input applied, and, if byte 1 & 2, the
 *   checksum recomputed so that the field checks are reached.
 *
 * Checked:
 * - never a crash, no UB (ASan/UBSan);
 * - a rejected blob returns a LAPICT_E_STATE_* code and leaves the
 *   destination bit-for-bit unchanged (memcmp of struct lapict_timer) and
 *   calls no host op (memcmp of the simulated host);
 * - an accepted blob round-trips: the registers read after restoring, the
 *   blob saved from there restored into a fresh instance at the same
 *   instant reads the same registers and saves the same blob; the restored
 *   instance then runs without breaking TMCCT <= TMICT or arming two host
 *   timers.
 */
#include <string.h>

#include <lapict/lapict.h>

#include "fuzz_common.h"
#include "lapict_sim.h"

#ifndef FUZZ_RESTORE_ENTRY
#define FUZZ_RESTORE_ENTRY LLVMFuzzerTestOneInput
#endif

#define RS_CHECK(c, ...)                                                       \
    do {                                                                       \
        if (!(c))                                                              \
            fz_fail("fuzz_restore", __VA_ARGS__);                              \
    } while (0)

struct rs_regs {
    uint32_t lvtt, tdcr, tmict, tmcct;
    uint64_t deadline;
};

static struct rs_regs rs_read(struct lapict_timer *t)
{
    struct rs_regs r;
    r.lvtt = lapict_lvtt_read(t);
    r.tdcr = lapict_tdcr_read(t);
    r.tmict = lapict_tmict_read(t);
    r.tmcct = lapict_tmcct_read(t);
    r.deadline = lapict_tsc_deadline_read(t);
    RS_CHECK(r.tmcct <= r.tmict ||
                 (r.lvtt & LAPICT_LVTT_MODE) == LAPICT_LVTT_TSC_DEADLINE,
             "TMCCT %u > TMICT %u", r.tmcct, r.tmict);
    return r;
}

static void rs_same_regs(struct rs_regs a, struct rs_regs b)
{
    RS_CHECK(a.lvtt == b.lvtt && a.tdcr == b.tdcr && a.tmict == b.tmict &&
                 a.tmcct == b.tmcct && a.deadline == b.deadline,
             "round trip changed the registers: LVTT %x/%x TDCR %x/%x "
             "TMICT %u/%u TMCCT %u/%u deadline %llu/%llu",
             a.lvtt, b.lvtt, a.tdcr, b.tdcr, a.tmict, b.tmict, a.tmcct, b.tmcct,
             (unsigned long long)a.deadline, (unsigned long long)b.deadline);
}

static void rs_config(uint8_t b, struct lapict_config *c)
{
    static const uint64_t buses[4] = {1000000000ull, 100000000ull, 25000000ull,
                                      3000000ull};
    lapict_config_default(c);
    c->bus_hz = buses[b & 3];
    c->tsc_deadline = !(b & 4);
    c->missed_policy = (b >> 3) % 3;
    c->catch_up_max = 50;
    if (b & 0x20) {
        c->advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c->advance_ns = 1000;
    }
    if (b & 0x40)
        c->min_period_ns = 1000; /* short, yet bounded host work */
}

/* A few register writes and host events, applied to @t on @s. */
static void rs_scenario(struct lapict_timer *t, struct lapict_sim *s,
                        const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i + 3 <= n) {
        uint8_t op = p[i];
        uint32_t v = (uint32_t)p[i + 1] | (uint32_t)p[i + 2] << 8;
        i += 3;
        switch (op & 7) {
        case 0:
            lapict_lvtt_write(t, (v & 0xFFu) | (uint32_t)(op >> 3) << 16);
            break;
        case 1:
            lapict_tmict_write(t, v << (op >> 4));
            break;
        case 2:
            lapict_tdcr_write(t, v);
            break;
        case 3:
            lapict_tsc_deadline_write(t, lapict_sim_guest_tsc(s) +
                                             ((uint64_t)v << (op >> 3)));
            break;
        case 4:
            lapict_sim_run_until(s, s->now_ns + ((uint64_t)v << (op >> 5)));
            break;
        case 5:
            lapict_sim_window(s, op & 8);
            break;
        case 6:
            lapict_svr_write(t, op & 8);
            break;
        default:
            if (op & 8)
                lapict_sim_block(s);
            else
                lapict_sim_unblock(s);
            break;
        }
        lapict_sim_enter(s);
    }
}

static bool rs_is_state_error(int rc)
{
    return rc == LAPICT_E_STATE_SIZE || rc == LAPICT_E_STATE_MAGIC ||
           rc == LAPICT_E_STATE_VERSION || rc == LAPICT_E_STATE_CHECKSUM ||
           rc == LAPICT_E_STATE_FIELD || rc == LAPICT_E_STATE_CONFIG ||
           rc == LAPICT_E_INVAL;
}

int FUZZ_RESTORE_ENTRY(const uint8_t *data, size_t size);
int FUZZ_RESTORE_ENTRY(const uint8_t *data, size_t size)
{
    static struct lapict_sim src_sim, dst_sim, dst_before, sim3;
    static struct lapict_timer src, dst, before, t3;
    static uint8_t mutated[LAPICT_STATE_SIZE];
    struct lapict_config cfg;
    uint8_t blob2[LAPICT_STATE_SIZE], blob3[LAPICT_STATE_SIZE];
    const uint8_t *blob;
    size_t blen, slen, i;
    struct rs_regs r1, r3;
    uint8_t mode;
    int rc;

    if (size < 3)
        return 0;
    rs_config(data[0], &cfg);
    mode = data[1];
    slen = (size_t)(data[2] % 8) * 3;
    if (slen > size - 3)
        slen = (size - 3) / 3 * 3;

    /* Source and destination live through the same scenario. */
    lapict_sim_init(&src_sim, NULL, NULL, NULL);
    lapict_sim_init(&dst_sim, NULL, NULL, NULL);
    dst_sim.now_ns = (uint64_t)data[2] << 40;
    RS_CHECK(lapict_init(&src, &cfg, &lapict_sim_ops, &src_sim) == LAPICT_OK,
             "init");
    RS_CHECK(lapict_init(&dst, &cfg, &lapict_sim_ops, &dst_sim) == LAPICT_OK,
             "init");
    lapict_sim_attach(&src_sim, &src);
    lapict_sim_attach(&dst_sim, &dst);
    rs_scenario(&src, &src_sim, data + 3, slen);
    rs_scenario(&dst, &dst_sim, data + 3, slen);

    if (!(mode & 1)) {
        blob = data + 3 + slen;
        blen = size - 3 - slen;
    } else {
        RS_CHECK(lapict_state_save(&src, mutated, sizeof(mutated)) == LAPICT_OK,
                 "save");
        for (i = 3 + slen; i + 1 < size; i += 2)
            mutated[data[i] % LAPICT_STATE_SIZE] ^= data[i + 1];
        if (mode & 2) {
            uint32_t crc = fz_crc32(mutated, LAPICT_STATE_SIZE - 4);
            for (i = 0; i < 4; i++)
                mutated[LAPICT_STATE_SIZE - 4 + i] = (uint8_t)(crc >> (8 * i));
        }
        blob = mutated;
        blen = sizeof(mutated);
    }

    before = dst;
    dst_before = dst_sim;
    rc = lapict_state_restore(&dst, blob, blen);
    if (rc != LAPICT_OK) {
        RS_CHECK(rs_is_state_error(rc), "restore returned %d", rc);
        RS_CHECK(memcmp(&before, &dst, sizeof(dst)) == 0,
                 "rejected blob (%d) changed the instance", rc);
        RS_CHECK(memcmp(&dst_before, &dst_sim, sizeof(dst_sim)) == 0,
                 "rejected blob (%d) called host ops", rc);
        return 0;
    }
    lapict_sim_enter(&dst_sim);
    RS_CHECK(!(dst_sim.sw_armed && dst_sim.hv_armed), "two host timers");

    /* Round trip at the same instant into a fresh instance. */
    r1 = rs_read(&dst);
    lapict_sim_enter(&dst_sim);
    RS_CHECK(lapict_state_save(&dst, blob2, sizeof(blob2)) == LAPICT_OK,
             "save after restore");
    lapict_sim_enter(&dst_sim);
    sim3 = dst_sim;
    lapict_sim_drop_timers(&sim3);
    RS_CHECK(lapict_init(&t3, &cfg, &lapict_sim_ops, &sim3) == LAPICT_OK,
             "init");
    if (sim3.blocked)
        lapict_vcpu_blocking(&t3);
    lapict_sim_attach(&sim3, &t3);
    rc = lapict_state_restore(&t3, blob2, sizeof(blob2));
    RS_CHECK(rc == LAPICT_OK,
             "a blob saved from a restored state is "
             "rejected: %d",
             rc);
    lapict_sim_enter(&sim3);
    r3 = rs_read(&t3);
    lapict_sim_enter(&sim3);
    rs_same_regs(r1, r3);
    RS_CHECK(lapict_state_save(&t3, blob3, sizeof(blob3)) == LAPICT_OK, "save");
    RS_CHECK(memcmp(blob2, blob3, sizeof(blob2)) == 0,
             "save -> restore -> save changed the blob");

    /* The restored instance keeps working. */
    lapict_sim_run_until(&dst_sim, dst_sim.now_ns + ((uint64_t)1 << 20));
    rs_read(&dst);
    RS_CHECK(!(dst_sim.sw_armed && dst_sim.hv_armed), "two host timers");
    return 0;
}
