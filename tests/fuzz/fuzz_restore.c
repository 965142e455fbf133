/* SPDX-License-Identifier: MIT */
/*
 * fuzz_restore: lapict_state_restore() on untrusted blobs.
 *
 * Input: byte 0 picks the source's configuration (bus clock, TSC-deadline
 * support, missed-tick policy, advance, minimum period, guest TSC rate;
 * with bits 3-4 both set, a fixed 10 us advance and a destination advance
 * below it), byte 1 the mode and how the destination's configuration
 * differs (its minimum period, including 0; its advance, also none for
 * want of a spin_until op; its TSC rate, below and above 1 GHz), byte 2
 * the length of a short scenario (register writes, time steps, a host
 * callback with the guest entry after it held, window and SVR changes)
 * that puts a source and a destination instance in some state. Then:
 * - raw mode (byte 1 even): the rest of the input is the blob, any length;
 * - mutate mode (byte 1 odd): the source's saved blob, with (offset, xor)
 *   byte pairs from the rest of the input applied, and, if byte 1 & 2, the
 *   checksum recomputed so that the field checks are reached. The source's
 *   interrupt controller (the simulated queue: an expiry injected ahead is
 *   there) travels with it, and with byte 0 bits 3-4 set the destination
 *   keeps the guest TSC continuous.
 *
 * Checked:
 * - never a crash, no UB (ASan/UBSan);
 * - a rejected blob returns a LAPICT_E_STATE_* code and leaves the
 *   destination bit-for-bit unchanged (memcmp of struct lapict_timer) and
 *   calls no host op (memcmp of the simulated host);
 * - an accepted blob is checked against an oracle of the blob itself
 *   (rs_oracle: its own parse of the docs/spec/state.md layout, 128-bit
 *   arithmetic): right after the restore TMCCT reads the count the blob
 *   describes on the source's clock (docs/spec/timer.md section 3: a clock
 *   change keeps the count); restore injects nothing and reports only the
 *   illegal-vector expiries it counts (the save's settled_illegal, those
 *   due on arrival), once; the
 *   host's step after a restore (lapict_irq_window_open()), the next
 *   lapict_before_guest_entry() and the next lapict_expire() do bounded
 *   work (op calls counted, the entry wait at most the blob's advance plus
 *   one TSC period, and only for an expiry injected ahead); nothing reaches
 *   the guest early: the expiry the source injected ahead, carried in its
 *   interrupt controller, not before the blob's instant whatever this
 *   host's advance; beyond the pending interrupts the blob carries, a
 *   count-down delivers nothing before its instant (on the source's clock
 *   when the clamp is the same, else the count on the destination's clock
 *   from the restore), a deadline nothing before the guest TSC reaches it,
 *   a masked timer nothing at all, and a one-shot or deadline expiry
 *   injected ahead nothing more, not even after a TDCR write; and nothing
 *   is lost: an unmasked count-down with a legal vector and the window open
 *   delivers by its instant;
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

#define RS_CHECK(...) FZ_CHECK("fuzz_restore", __VA_ARGS__)

struct rs_regs {
    uint32_t lvtt, tdcr, tmict, tmcct;
    uint64_t deadline;
};

static struct rs_regs rs_read(struct lapict_timer *t)
{
    struct rs_regs r = {.lvtt = lapict_lvtt_read(t)};
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

/*
 * Byte 0 bits 3-4 both set (otherwise coalesce, as 0): coalesce, the source
 * injects up to 10 us ahead, and the destination's advance is one of the
 * small ones (rs_dst_config()).
 */
static bool rs_small_adv(uint8_t b)
{
    return ((b >> 3) & 3) == 3;
}

static void rs_config(uint8_t b, struct lapict_config *c)
{
    static const uint64_t buses[4] = {1000000000ull, 100000000ull, 25000000ull,
                                      3000000ull};
    lapict_config_default(c);
    c->tsc_khz = 1000000u;
    c->bus_hz = buses[b & 3];
    c->tsc_deadline = !(b & 4);
    c->missed_policy = (b >> 3) % 3;
    c->catch_up_max = 50;
    if (rs_small_adv(b))
        fz_advance(c, LAPICT_ADVANCE_FIXED, 10000, 0);
    else if (b & 0x20)
        fz_advance(c, LAPICT_ADVANCE_ADAPTIVE, 1000, 0);
    if (b & 0x40)
        c->min_period_ns = 1000; /* short, yet bounded host work */
    if (b & 0x80)
        c->tsc_khz = 999999; /* just below 1 GHz: inexact conversions */
}

/*
 * The destination's configuration: the source's, changed per @m; with
 * @small (rs_small_adv()), its advance is below the source's 10 us: none
 * for want of a spin_until op (*@nospin), off, fixed 1000 ns, or adaptive
 * up to 1000 ns.
 */
static void rs_dst_config(uint8_t m, bool small,
                          const struct lapict_config *src,
                          struct lapict_config *c, bool *nospin)
{
    /* 0 disables the clamp; the short ones keep host work bounded. */
    static const uint32_t mins[8] = {0,      0,      1000,  100000,
                                     200000, 400000, 50000, 0};
    static const uint32_t khz[4] = {0, 3000, 999999, 2500000};
    *c = *src;
    if ((m >> 2) & 7)
        c->min_period_ns = (m >> 2) % 8 == 7 ? 1000 : mins[(m >> 2) & 7];
    *nospin = small && ((m >> 5) & 3) == 0;
    switch ((m >> 5) & 3) {
    case 1:
        fz_advance(c, LAPICT_ADVANCE_OFF, 0, 0);
        break;
    case 2:
        fz_advance(c, LAPICT_ADVANCE_FIXED, small ? 1000 : 5000, 0);
        break;
    case 3:
        fz_advance(c, LAPICT_ADVANCE_ADAPTIVE, small ? 500 : 3000,
                   small ? 1000 : 20000);
        break;
    default:
        break;
    }
    if (m & 0x80)
        c->tsc_khz = khz[(m >> 2) & 3] ? khz[(m >> 2) & 3] : 1000000;
}

/* ---- oracle of an accepted blob (layout of docs/spec/state.md) ---- */

static uint32_t rs_get32(const uint8_t *b, size_t off)
{
    return (uint32_t)b[off] | (uint32_t)b[off + 1] << 8 |
           (uint32_t)b[off + 2] << 16 | (uint32_t)b[off + 3] << 24;
}

static uint64_t rs_get64(const uint8_t *b, size_t off)
{
    return (uint64_t)rs_get32(b, off) | (uint64_t)rs_get32(b, off + 4) << 32;
}

static uint32_t rs_divide(uint32_t tdcr)
{
    static const uint32_t d[8] = {2, 4, 8, 16, 32, 64, 128, 1};
    return d[((tdcr >> 1) & 4u) | (tdcr & 3u)];
}

static fz_u128 rs_ceil(fz_u128 n, fz_u128 d)
{
    return (n + d - 1) / d;
}

struct rs_oracle {
    bool countdown, deadline, masked, illegal, preinj, periodic, due;
    uint32_t pending, count, adv;
    uint64_t deadline_tsc;
    fz_u128 rel; /* ns from the restore to the count-down's expiry */
};

/*
 * What the blob promises on a destination configured with @dst (source
 * configuration @src: its minimum period stands in for a blob field that
 * is zero, which a format without one has).
 */
static struct rs_oracle rs_model(const uint8_t *b,
                                 const struct lapict_config *src,
                                 const struct lapict_config *dst)
{
    struct rs_oracle o;
    uint32_t lvtt = rs_get32(b, 8), fl = rs_get32(b, 20);
    uint32_t N = rs_get32(b, 16), div = rs_divide(rs_get32(b, 12));
    uint32_t P = rs_get32(b, 72) ? rs_get32(b, 72) : src->min_period_ns;
    uint64_t el = rs_get64(b, 24), E = rs_get64(b, 32);
    fz_u128 unit = (fz_u128)div * 1000000000u, T, next, raw_n;
    bool clamped = fl & 0x08, dst_clamp, same;

    memset(&o, 0, sizeof(o));
    o.masked = lvtt & 0x10000u;
    o.illegal = (lvtt & 0xFFu) < 16;
    o.preinj = fl & 0x20;
    o.periodic = ((lvtt >> 17) & 3u) == 1;
    o.pending = rs_get32(b, 48);
    if (o.pending > dst->catch_up_max && dst->missed_policy == 1)
        o.pending = dst->catch_up_max;
    else if (o.pending > 1 && dst->missed_policy != 1)
        o.pending = 1;
    o.adv = rs_get32(b, 52);
    o.deadline = fl & 0x10;
    o.deadline_tsc = rs_get64(b, 40);
    if (!(fl & 0x02) || N == 0 || (clamped && P == 0))
        return o;
    o.countdown = true;
    T = clamped ? (fz_u128)el * N / P : (fz_u128)el * src->bus_hz / unit;
    next = clamped ? rs_ceil((fz_u128)E * P, N)
                   : rs_ceil((fz_u128)E * unit, src->bus_hz);
    if (E <= T || next <= el) {
        o.due = true; /* a forged elapsed time: due on arrival */
        return o;
    }
    o.count = (uint32_t)(E - T);
    raw_n = rs_ceil((fz_u128)N * unit, dst->bus_hz);
    dst_clamp = o.periodic && dst->min_period_ns && raw_n < dst->min_period_ns;
    same = dst_clamp == clamped && (!clamped || P == dst->min_period_ns);
    if (same)
        o.rel = next - el;
    else if (dst_clamp)
        o.rel = rs_ceil((fz_u128)o.count * dst->min_period_ns, N);
    else
        o.rel = rs_ceil((fz_u128)o.count * unit, dst->bus_hz);
    return o;
}

/* Host callbacks a run may cost (a 1 ns period costs one per ns). */
#define RS_MAX_CALLBACKS 20000u

/* Guest deliveries on the destination after the restore. */
#define RS_MAX_DLV 64
static struct {
    unsigned n;
    uint64_t when[RS_MAX_DLV], tsc[RS_MAX_DLV];
} rs_dlv;

static void rs_on_deliver(void *arg, uint64_t when, uint8_t vector)
{
    struct lapict_sim *s = arg;
    (void)vector;
    if (rs_dlv.n < RS_MAX_DLV) {
        rs_dlv.when[rs_dlv.n] = when;
        /* The guest TSC at @when (the simulated host's own formula). */
        rs_dlv.tsc[rs_dlv.n] =
            s->cfg.tsc_offset +
            (uint64_t)((fz_u128)when * s->cfg.tsc_khz / 1000000u);
    }
    rs_dlv.n++;
}

/* The illegal-vector expiries @t has counted. */
static uint64_t rs_illegal(const struct lapict_timer *t)
{
    struct lapict_stats st;

    memset(&st, 0, sizeof(st));
    lapict_stats_get(t, &st, sizeof(st));
    return st.illegal_vector;
}

static uint64_t rs_calls(const struct lapict_sim *s)
{
    return s->sw_arms + s->hv_arms + s->sw_cancels + s->hv_cancels + s->spins +
           s->injects + s->refusals + s->reports;
}

/*
 * The accepted blob @b against its oracle, on @t / @s just restored at
 * host time @r, @carried vectors of the source's interrupt controller
 * queued for the first guest entry (the host restores its IRR too). Moves
 * the destination's clock forward.
 */
static void rs_check_accepted(struct lapict_timer *t, struct lapict_sim *s,
                              const uint8_t *b, const struct lapict_config *src,
                              const struct lapict_config *dst, uint64_t r,
                              const struct lapict_sim *sb, unsigned carried,
                              bool illegal_counted)
{
    struct rs_oracle o = rs_model(b, src, dst);
    uint64_t c0, t0, spin_max, run_to, inst = 0;
    unsigned i, early_ok;
    /* Interrupts the destination may offer at once: the carried ones, the
     * blob's pending, and what is already due on arrival (a forged elapsed
     * time: up to the catch-up bound; a deadline this guest TSC has
     * passed: one). */
    uint32_t now_ok = carried + o.pending + (o.due ? dst->catch_up_max : 1);
    bool window = s->window_open;

    /* Restore injects nothing; it reports once the illegal-vector expiries
     * the source's save dropped (settled_illegal, docs/spec/state.md) and
     * those it drops itself, due on arrival (a forged elapsed time, a
     * deadline this guest TSC has passed), which it counts. */
    RS_CHECK(s->injects == sb->injects && s->refusals == sb->refusals,
             "restore called inject");
    RS_CHECK(rs_get32(b, 92) == 0 || illegal_counted,
             "settled_illegal %u not counted", rs_get32(b, 92));
    RS_CHECK(s->reports - sb->reports == illegal_counted &&
                 (s->reports == sb->reports ||
                  s->last_report_status == LAPICT_E_VECTOR),
             "restore made %llu reports (last %d), settled_illegal %u",
             (unsigned long long)(s->reports - sb->reports),
             s->last_report_status, rs_get32(b, 92));
    RS_CHECK(rs_calls(s) - rs_calls(sb) <= 5, "restore made %llu op calls",
             (unsigned long long)(rs_calls(s) - rs_calls(sb)));
    if (o.countdown && !o.due)
        RS_CHECK(lapict_tmcct_read(t) == o.count,
                 "TMCCT %u after restore, the blob's count is %u "
                 "(clamp period %u, destination minimum %u)",
                 lapict_tmcct_read(t), o.count, rs_get32(b, 72),
                 dst->min_period_ns);
    s->deliver = rs_on_deliver;
    s->deliver_arg = s;
    rs_dlv.n = 0;

    /* The host's step after a restore (state.h). */
    c0 = rs_calls(s);
    i = (unsigned)(s->injects + s->refusals);
    lapict_irq_window_open(t);
    RS_CHECK(rs_calls(s) - c0 <= (uint64_t)now_ok + 4,
             "lapict_irq_window_open after restore: %llu op calls, %u "
             "inject calls, the blob holds %u pending",
             (unsigned long long)(rs_calls(s) - c0),
             (unsigned)(s->injects + s->refusals) - i, o.pending);
    /* The next guest entry: a wait only for an expiry injected ahead,
     * at most the advance it was injected with (+ one TSC period). */
    c0 = rs_calls(s);
    t0 = s->now_ns;
    spin_max = o.preinj ? (uint64_t)o.adv + 1000000u / dst->tsc_khz + 1 : 0;
    lapict_before_guest_entry(t);
    RS_CHECK(s->now_ns - t0 <= spin_max,
             "guest entry after restore waited %llu ns (bound %llu)",
             (unsigned long long)(s->now_ns - t0),
             (unsigned long long)spin_max);
    RS_CHECK(rs_calls(s) - c0 <= 20, "guest entry after restore: %llu calls",
             (unsigned long long)(rs_calls(s) - c0));
    lapict_sim_enter(s);
    /*
     * An expiry the source injected ahead reaches the guest with that
     * entry (it is in the carried IRR): never before the blob's instant,
     * whatever this host's advance (a host that cannot wait refuses the
     * blob instead, state.h).
     */
    for (i = 0; o.preinj && i < carried && i < rs_dlv.n && i < RS_MAX_DLV;
         i++) {
        if (o.countdown && !o.due)
            RS_CHECK((int64_t)(rs_dlv.when[i] - (r + (uint64_t)o.rel)) >= 0,
                     "the expiry injected ahead reaches the guest at %llu, "
                     "before its instant %llu",
                     (unsigned long long)rs_dlv.when[i],
                     (unsigned long long)(r + (uint64_t)o.rel));
        if (o.deadline)
            RS_CHECK(rs_dlv.tsc[i] >= o.deadline_tsc,
                     "the expiry injected ahead reaches the guest at guest "
                     "TSC %llu, before its deadline %llu",
                     (unsigned long long)rs_dlv.tsc[i],
                     (unsigned long long)o.deadline_tsc);
    }
    /* A guest write after that entry must not give the expiry again. */
    if (o.preinj && o.countdown) {
        lapict_tdcr_write(t, lapict_tdcr_read(t) ^ 1u);
        lapict_sim_enter(s);
    }
    c0 = rs_calls(s);
    lapict_expire(t);
    RS_CHECK(rs_calls(s) - c0 <= (uint64_t)now_ok + 8,
             "lapict_expire after restore: %llu op calls",
             (unsigned long long)(rs_calls(s) - c0));
    lapict_sim_enter(s);

    /* Run to the promised instant (when near), then check deliveries. */
    run_to = s->now_ns + 4096;
    if (o.countdown && !o.due && o.rel <= ((fz_u128)1 << 20)) {
        inst = r + (uint64_t)o.rel;
        run_to = inst + 1;
    }
    c0 = s->expire_calls;
    for (i = 0; i < 64 && (int64_t)(run_to - s->now_ns) > 0; i++) {
        uint64_t step = run_to - s->now_ns > 65536 ? 65536 : run_to - s->now_ns;
        lapict_sim_run_until(s, s->now_ns + step);
        if (rs_dlv.n > 16 || s->expire_calls - c0 > 4 * RS_MAX_CALLBACKS)
            break;
    }
    early_ok = now_ok;
    if (o.masked) {
        /*
         * A masked timer gives nothing: no inject after the restore. What
         * the source's interrupt controller held (an expiry accepted
         * before the guest masked LVTT) travels in its IRR and reaches the
         * guest at the first entry; the mask does not take it back.
         */
        RS_CHECK(rs_dlv.n <= carried && s->injects == sb->injects,
                 "masked timer delivered %u (%u carried, %llu injects "
                 "since the restore)",
                 rs_dlv.n, carried,
                 (unsigned long long)(s->injects - sb->injects));
        return;
    }
    if (o.preinj && !o.periodic)
        RS_CHECK(rs_dlv.n <= carried + o.pending,
                 "expiry injected ahead at the source delivered again "
                 "(%u deliveries, %u carried)",
                 rs_dlv.n, carried);
    for (i = early_ok; i < rs_dlv.n && i < RS_MAX_DLV; i++) {
        if (o.countdown && !o.due)
            RS_CHECK(!inst || (int64_t)(rs_dlv.when[i] - inst) >= 0,
                     "delivery %u at %llu, before the instant %llu", i,
                     (unsigned long long)rs_dlv.when[i],
                     (unsigned long long)inst);
        if (o.deadline)
            RS_CHECK(rs_dlv.tsc[i] >= o.deadline_tsc,
                     "delivery %u at guest TSC %llu, deadline %llu", i,
                     (unsigned long long)rs_dlv.tsc[i],
                     (unsigned long long)o.deadline_tsc);
    }
    /* Lost: the count-down's expiry must have reached the guest. */
    if (inst && window && !o.preinj && !o.illegal && !s->blocked &&
        s->cfg.host_latency_ns == 0 && s->cfg.entry_latency_ns == 0) {
        bool got = false;
        for (i = 0; i < rs_dlv.n && i < RS_MAX_DLV; i++)
            got |= (int64_t)(rs_dlv.when[i] - inst) >= 0;
        RS_CHECK(got || rs_dlv.n > 16 || (int64_t)(s->now_ns - inst) < 0,
                 "count-down expiry at %llu lost (%u deliveries, %u pending)",
                 (unsigned long long)inst, rs_dlv.n, o.pending);
    }
}

/*
 * Run the host's next timer callback if it comes within @span ns, and stop
 * before the guest entry after it: what it injected (ahead of the instant,
 * with the advance) stays queued, as in an interrupt controller a
 * migration then carries. Otherwise just run for @span.
 */
static bool rs_hold(struct lapict_timer *t, struct lapict_sim *s, uint64_t span)
{
    bool sw = s->sw_armed, hv = s->hv_armed && !s->blocked;
    uint64_t at, hv_at = s->hv_at_ns + s->cfg.host_latency_ns;

    sw = sw && (!hv || (int64_t)(s->sw_fire_ns - hv_at) <= 0);
    at = sw ? s->sw_fire_ns : hv_at;
    if ((!sw && !hv) || (int64_t)(at - s->now_ns) > (int64_t)span) {
        lapict_sim_run_until(s, s->now_ns + span);
        return false;
    }
    if (sw)
        s->sw_armed = false;
    else
        s->hv_armed = false;
    if ((int64_t)(at - s->now_ns) > 0)
        s->now_ns = at;
    s->expire_calls++;
    lapict_expire(t);
    return true;
}

/*
 * A few register writes and host events, applied to @t on @s. Returns
 * whether it ends between a host timer callback and the guest entry after
 * it (op 4 with bits 3 and 4 set, last).
 */
static bool rs_scenario(struct lapict_timer *t, struct lapict_sim *s,
                        const uint8_t *p, size_t n)
{
    size_t i = 0;
    bool held = false;

    while (i + 3 <= n) {
        uint8_t op = p[i];
        uint32_t v = (uint32_t)p[i + 1] | (uint32_t)p[i + 2] << 8;
        i += 3;
        if (held)
            lapict_sim_enter(s); /* the guest runs before it acts */
        held = false;
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
            /* A 1 ns period (minimum period 0) costs a callback per ns:
             * bound the host's work, not the library's. */
            if (s->expire_calls >= RS_MAX_CALLBACKS)
                break;
            if ((op & 0x18) == 0x18) {
                held = rs_hold(t, s, (uint64_t)v << (op >> 5));
                if (held)
                    continue;
                break;
            }
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
    return held;
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
    /* The destination hosts as the instances see them. */
    static struct lapict_sim_wrap dst_wrap, wrap3;
    struct lapict_config cfg, dcfg;
    uint8_t blob2[LAPICT_STATE_SIZE], blob3[LAPICT_STATE_SIZE];
    const uint8_t *blob;
    size_t blen, slen, i;
    struct rs_regs r1, r3;
    uint64_t restore_at;
    unsigned carried = 0;
    uint8_t mode;
    uint32_t absent;
    bool nospin;
    int rc;

    if (size < 3)
        return 0;
    rs_config(data[0], &cfg);
    mode = data[1];
    rs_dst_config(mode, rs_small_adv(data[0]), &cfg, &dcfg, &nospin);
    /* nospin: a host that cannot wait before entry. */
    absent = nospin ? LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_SPIN) : 0;
    slen = (size_t)(data[2] % 8) * 3;
    if (slen > size - 3)
        slen = (size - 3) / 3 * 3;

    /* Source and destination live through the same scenario. */
    lapict_sim_init(&src_sim, NULL, NULL, NULL);
    lapict_sim_init(&dst_sim, NULL, NULL, NULL);
    src_sim.cfg.tsc_khz = cfg.tsc_khz;
    dst_sim.cfg.tsc_khz = dcfg.tsc_khz;
    dst_sim.now_ns = (uint64_t)data[2] << 40;
    RS_CHECK(lapict_init(&src, &cfg, &lapict_sim_ops, &src_sim) == LAPICT_OK,
             "init");
    lapict_sim_wrap_init(&dst_wrap, &lapict_sim_ops, &dst_sim, absent);
    RS_CHECK(lapict_init(&dst, &dcfg, &dst_wrap.ops, &dst_wrap) == LAPICT_OK,
             "init");
    lapict_sim_attach(&src_sim, &src);
    lapict_sim_attach(&dst_sim, &dst);
    rs_scenario(&src, &src_sim, data + 3, slen);
    rs_scenario(&dst, &dst_sim, data + 3, slen);

    if (!(mode & 1)) {
        blob = data + 3 + slen;
        blen = size - 3 - slen;
    } else {
        /* The source's interrupt controller travels with its blob. */
        carried = src_sim.nqueued;
        if (rs_small_adv(data[0])) {
            /* The destination keeps the guest TSC continuous, as a
             * migration must (state.h), so that a deadline injected ahead
             * arrives still ahead. */
            dst_sim.cfg.tsc_offset = 0;
            dst_sim.cfg.tsc_offset =
                lapict_sim_guest_tsc(&src_sim) - lapict_sim_guest_tsc(&dst_sim);
        }
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
    restore_at = dst_sim.now_ns;
    rc = lapict_state_restore(&dst, blob, blen);
    if (rc != LAPICT_OK) {
        RS_CHECK(rs_is_state_error(rc), "restore returned %d", rc);
        RS_CHECK(memcmp(&before, &dst, sizeof(dst)) == 0,
                 "rejected blob (%d) changed the instance", rc);
        RS_CHECK(memcmp(&dst_before, &dst_sim, sizeof(dst_sim)) == 0,
                 "rejected blob (%d) called host ops", rc);
        return 0;
    }
    RS_CHECK(!(dst_sim.sw_armed && dst_sim.hv_armed), "two host timers");
    /* The host restores its interrupt controller: the source's (mutate
     * mode) or, for a blob from nowhere, an empty one. */
    dst_sim.nqueued = carried;
    memcpy(dst_sim.queued, src_sim.queued, carried);
    rs_check_accepted(&dst, &dst_sim, blob, &cfg, &dcfg, restore_at,
                      &dst_before, carried,
                      rs_illegal(&dst) != rs_illegal(&before));
    dst_sim.deliver = NULL;

    /* Round trip at the same instant into a fresh instance. */
    r1 = rs_read(&dst);
    lapict_sim_enter(&dst_sim);
    RS_CHECK(lapict_state_save(&dst, blob2, sizeof(blob2)) == LAPICT_OK,
             "save after restore");
    lapict_sim_enter(&dst_sim);
    sim3 = dst_sim;
    lapict_sim_drop_timers(&sim3);
    lapict_sim_wrap_init(&wrap3, &lapict_sim_ops, &sim3, absent);
    RS_CHECK(lapict_init(&t3, &dcfg, &wrap3.ops, &wrap3) == LAPICT_OK, "init");
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

    /* The restored instance keeps working (bounded: a 1 ns period runs a
     * callback per ns). */
    for (i = 0; i < 16 && dst_sim.expire_calls < 5 * RS_MAX_CALLBACKS; i++)
        lapict_sim_run_until(&dst_sim, dst_sim.now_ns + ((uint64_t)1 << 16));
    rs_read(&dst);
    RS_CHECK(!(dst_sim.sw_armed && dst_sim.hv_armed), "two host timers");
    return 0;
}
