/* SPDX-License-Identifier: MIT */
/*
 * fuzz_regs: the guest-facing register interface on the simulated host,
 * checked after every step against an independent oracle of TIMER.md.
 *
 * Input: a header that picks the configuration (bus clock, guest TSC rate
 * and offset, minimum period, advance, missed-tick policy, host latencies,
 * hardware timer, which optional ops the host offers, host time base), then
 * one operation per opcode byte: LVTT/TMICT/TDCR/TSC-deadline writes (the
 * direct calls, xAPIC MMIO or x2APIC MSR, chosen by the input), register
 * reads, SVR enable, time steps (run the host to a time, or stall it),
 * block/unblock, interrupt window changes, save/restore into a fresh
 * instance or onto itself, reset, spurious host callbacks, and accesses to
 * non-timer registers and #GP cases. An exhausted input reads as zeros.
 *
 * The oracle (struct rg_oracle) is a plain model of sections 2-5 of
 * TIMER.md with 128-bit absolute instants and 128-bit division: anchor,
 * next expiry tick E, the clamped clock, and the TSC deadline instant
 * ceil((D - offset) * 10^6 / tsc_khz). It does not share code with lib/.
 *
 * Checked after every step (and in every host callback where it applies):
 * - every register read equals the oracle (so TMCCT <= TMICT, the deadline
 *   MSR reads 0 after its expiry, reserved bits read 0, LVTT bit 12 only
 *   while something may be pending);
 * - no delivery before its architectural instant and none twice: every
 *   injection must take one of the interrupts the oracle allows pending
 *   (granted only by an unmasked expiry whose instant has passed, capped
 *   per missed-tick policy, cleared by whatever drops a pending interrupt)
 *   or be the single advanced injection of the next expiry, whose instant
 *   must have passed when the guest receives it; the vector is LVTT's of
 *   that moment and never an illegal one;
 * - none lost where the oracle can tell: with the window open since before
 *   an unmasked legal expiry and a policy other than `drop`, a delivery at
 *   or after its instant must have happened by instant + host latency
 *   (+ one TSC period when the host has no tsc_to_host_ns op);
 * - at most one host timer armed (checked on every arm);
 * - no storm of host callbacks: at most 2 per expiry plus a constant per
 *   step (section 6: servicing is O(1) whatever the stall);
 * - the library's pending count never exceeds the oracle's credits;
 * - an expiry injected ahead is the interrupt of its servicing: with
 *   coalesce or drop, the other expiries of that servicing give no credit;
 * - re-entry (ops.h): calls into the library from inside an inject op are
 *   refused with LAPICT_E_INVAL and change nothing;
 * - ASan/UBSan: no UB anywhere.
 *
 * Weakened or restricted on purpose (kept simple rather than exact):
 * - the `drop` policy's "k > 1 at one servicing" depends on when the host
 *   ran its callbacks, so it is only bounded above (at most one pending)
 *   and exempt from the lost check;
 * - pending interrupts are bounded above, not tracked exactly (e.g. an
 *   interrupt held while the window is closed may still be dropped by a
 *   later mask), and the lost check is off while the window is closed;
 * - a run spans at most 2^62 ns of host time between ordinary steps, since
 *   a wrapping clock cannot order instants 2^63 ns apart; the guest TSC may
 *   wrap within it (offsets up to 2^64 - 1; the oracle keeps the TSC as a
 *   128-bit count, and a deadline is the first instant the wrapped TSC
 *   reaches D after the write);
 * - clock jumps of about 2^63 ns (a stall, or the host clock leaping
 *   inside an inject op, between a pre-injecting callback and entry) make
 *   the run "wild": the horizon rule of ops.h reads such a jump as "not
 *   yet", which the oracle does not model, so from then on only UB, one
 *   host timer, re-entry, and the storm bound (callbacks per step against
 *   the library's own expiry count) are checked;
 * - a TDCR write of the value already stored is a no-op (the library's
 *   choice; TIMER.md is silent on whether it re-anchors);
 * - runs with more than RG_MAX_STEP_EXPIRIES expiries in one time step are
 *   turned into a host stall of the same length (the library services a
 *   stall in O(1); the oracle too), and a run stops after RG_MAX_CALLBACKS
 *   host callbacks, so that tiny periods cannot time the fuzzer out.
 */
#include <string.h>

#include <lapict/lapict.h>

#include "fuzz_common.h"
#include "lapict_sim.h"

#ifndef FUZZ_REGS_ENTRY
#define FUZZ_REGS_ENTRY LLVMFuzzerTestOneInput
#endif

#define RG_CHECK(c, ...)                                                       \
    do {                                                                       \
        if (!(c))                                                              \
            fz_fail("fuzz_regs", __VA_ARGS__);                                 \
    } while (0)

#define RG_MAX_OPS 400
#define RG_MAX_STEP_EXPIRIES 4096u
#define RG_MAX_CALLBACKS 200000u
#define RG_MASK 0x00010000u
#define RG_MODE 0x00060000u
#define RG_PERIODIC 0x00020000u
#define RG_DEADLINE 0x00040000u
#define RG_ULL(x) ((unsigned long long)(x))

struct rg_oracle {
    /* Configuration. */
    uint64_t bus_hz, tsc_off;
    uint32_t tsc_khz, min_p, missed, cap;
    bool dl_ok;
    /* Registers. */
    uint32_t lvtt, tmict;
    uint8_t tdcr;
    bool svr_en;
    /* Count-down: running, clamped clock, anchor (ns), next expiry tick. */
    bool running, clamped;
    fz_u128 a, e;
    /* TSC deadline: armed, value, first host instant the TSC reaches it. */
    bool dl_armed;
    uint64_t d;
    fz_u128 dl_at;
    /* Interrupts the library may hold pending (upper bound), and those
     * injected but not yet delivered at guest entry (exact). */
    uint32_t credits, inflight;
    /* The host injected the next expiry ahead of its instant (advance). */
    bool preinj;
    /* Lost-interrupt check. */
    bool window_open;
    uint64_t window_since;
    bool owed;
    fz_u128 owed_x;
    bool delivered_any;
    uint64_t last_delivery;
    uint64_t expiries;
};

struct rg_ctx {
    struct lapict_sim sim;
    struct lapict_ops ops;
    struct lapict_config cfg;
    struct lapict_timer timers[2];
    struct lapict_timer *t;
    struct rg_oracle o;
    uint64_t horizon, dl_slack;
    uint64_t allowance;
    bool stop;
    /* A clock jump of about 2^63 ns happened: oracle off (header). */
    bool wild;
    /* One-shot: the next inject re-enters the library / leaps the clock. */
    bool reenter;
    uint64_t leap;
    /* Storm bound in wild runs: callbacks and library expiries so far. */
    uint64_t wild_calls, wild_expiries;
};

static struct rg_ctx rg;
static int rg_verbose = -1;

/* LAPICT_FUZZ_TRACE=1: print each step in lapict-replay syntax (stderr). */
#define RG_TRACE(...)                                                          \
    do {                                                                       \
        if (rg_verbose > 0)                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
    } while (0)

/* ---- the oracle -------------------------------------------------------- */

static uint32_t rg_divide(uint8_t tdcr)
{
    static const uint32_t tab[16] = {2,  4,  8,   16, 0, 0, 0, 0,
                                     32, 64, 128, 1,  0, 0, 0, 0};
    return tab[tdcr & 0xB];
}

static bool rg_periodic(const struct rg_oracle *o)
{
    return (o->lvtt & RG_MODE) == RG_PERIODIC;
}

static bool rg_dlmode(const struct rg_oracle *o)
{
    return (o->lvtt & RG_MODE) == RG_DEADLINE;
}

static fz_u128 rg_ns_for_raw(const struct rg_oracle *o, fz_u128 n)
{
    fz_u128 num = n * rg_divide(o->tdcr) * 1000000000u;
    return (num + o->bus_hz - 1) / o->bus_hz;
}

/* First ns after the anchor at which n ticks have elapsed. */
static fz_u128 rg_ns_for(const struct rg_oracle *o, fz_u128 n)
{
    if (o->clamped)
        return (n * o->min_p + o->tmict - 1) / o->tmict;
    return rg_ns_for_raw(o, n);
}

/* Ticks elapsed in dns ns of the current clock. */
static fz_u128 rg_ticks(const struct rg_oracle *o, fz_u128 dns)
{
    if (o->clamped)
        return dns * o->tmict / o->min_p;
    return dns * o->bus_hz / ((fz_u128)rg_divide(o->tdcr) * 1000000000u);
}

static bool rg_needs_clamp(const struct rg_oracle *o)
{
    return rg_periodic(o) && o->tmict && o->min_p &&
           rg_ns_for_raw(o, o->tmict) < o->min_p;
}

/* The guest TSC as a count that does not wrap (the guest's wraps). */
static fz_u128 rg_tsc_full(const struct rg_oracle *o, uint64_t now)
{
    return (fz_u128)o->tsc_off + (fz_u128)now * o->tsc_khz / 1000000u;
}

static uint64_t rg_tsc(const struct rg_oracle *o, uint64_t now)
{
    return (uint64_t)rg_tsc_full(o, now);
}

/* Instant of the next expiry, or (fz_u128)-1 if none is armed. */
static fz_u128 rg_next(const struct rg_oracle *o)
{
    fz_u128 best = ~(fz_u128)0;
    if (o->running)
        best = o->a + rg_ns_for(o, o->e);
    if (o->dl_armed && o->dl_at < best)
        best = o->dl_at;
    return best;
}

/* k expiries, the last at @last: what the library may hold pending. */
static void rg_expire(struct rg_oracle *o, fz_u128 k, fz_u128 last)
{
    uint8_t v = (uint8_t)(o->lvtt & 0xFF);
    fz_u128 c;

    o->expiries += k > 1000000 ? 1000000 : (uint64_t)k;
    if (o->preinj) {
        /* Injected ahead of its instant: already in the host's hands, and
         * the interrupt of this servicing: coalesce and drop give no more
         * for it (catch-up still owes each missed one). */
        o->preinj = false;
        k--;
        if (o->missed != LAPICT_MISSED_CATCH_UP)
            return;
    }
    if (!k || (o->lvtt & RG_MASK))
        return;
    c = (fz_u128)o->credits + k;
    o->credits = c > o->cap ? o->cap : (uint32_t)c;
    if (v < 16) {
        /* Illegal: never injected (rg_op_inject checks). Dropped and
         * reported at delivery, which a save moves to the destination:
         * held pending until then, so it counts towards the bound. */
        return;
    }
    if (o->window_open) {
        o->owed = true;
        o->owed_x = last;
    }
}

/* Process every expiry whose instant is at or before @to. */
static void rg_advance(struct rg_oracle *o, uint64_t to)
{
    if (rg.wild)
        return;
    if (o->running) {
        fz_u128 inst = o->a + rg_ns_for(o, o->e);
        if (inst <= to) {
            if (rg_periodic(o)) {
                fz_u128 T = rg_ticks(o, (fz_u128)to - o->a);
                fz_u128 k = (T - o->e) / o->tmict + 1;
                fz_u128 last = o->e + (k - 1) * o->tmict;
                o->e = last + o->tmict;
                rg_expire(o, k, o->a + rg_ns_for(o, last));
            } else {
                o->running = false;
                rg_expire(o, 1, inst);
            }
        }
    }
    if (o->dl_armed && o->dl_at <= to) {
        o->dl_armed = false;
        rg_expire(o, 1, o->dl_at);
    }
}

/* Expiries in (now, to] (upper bound), to keep time steps bounded. */
static fz_u128 rg_expiries_until(const struct rg_oracle *o, uint64_t to)
{
    fz_u128 n = 0;
    if (o->running) {
        fz_u128 T = rg_ticks(o, (fz_u128)to - o->a);
        if (T >= o->e)
            n += rg_periodic(o) ? (T - o->e) / o->tmict + 1 : 1;
    }
    return n + (o->dl_armed ? 1 : 0);
}

static uint32_t rg_tmcct(const struct rg_oracle *o, uint64_t now)
{
    fz_u128 T;
    if (!o->running || rg_dlmode(o))
        return 0;
    T = rg_ticks(o, (fz_u128)now - o->a);
    RG_CHECK(o->e > T, "oracle not advanced");
    return (uint32_t)(o->e - T);
}

/* Keep the current count, re-anchor on the (possibly new) clock. */
static void rg_reanchor(struct rg_oracle *o, uint64_t now, uint32_t c,
                        bool clamp)
{
    o->clamped = clamp;
    o->a = now;
    o->e = c;
}

static void rg_disarm(struct rg_oracle *o)
{
    o->tmict = 0;
    o->running = o->clamped = o->dl_armed = o->preinj = false;
    o->d = 0;
    o->credits = 0;
}

static void rg_o_lvtt(struct rg_oracle *o, uint64_t now, uint32_t val)
{
    uint32_t v = val & (0xFFu | RG_MASK | RG_MODE);
    uint32_t old_mode = o->lvtt & RG_MODE, new_mode;

    if (!o->svr_en)
        v |= RG_MASK;
    new_mode = v & RG_MODE;
    if (!o->dl_ok)
        new_mode &= ~RG_DEADLINE; /* bit 18 reserved: 10->00, 11->01 */
    else if (new_mode == RG_MODE)
        new_mode = old_mode; /* reserved 11: keep the mode */
    o->lvtt = (v & ~RG_MODE) | new_mode;
    if (new_mode == old_mode)
        return;
    if (old_mode == RG_DEADLINE || new_mode == RG_DEADLINE) {
        rg_disarm(o);
    } else if (o->running) {
        bool clamp = rg_needs_clamp(o);
        /* One-shot <-> periodic: only a clamp change re-anchors. */
        if (clamp != o->clamped)
            rg_reanchor(o, now, rg_tmcct(o, now), clamp);
    }
}

static void rg_o_tmict(struct rg_oracle *o, uint64_t now, uint32_t val)
{
    if (rg_dlmode(o))
        return;
    o->tmict = val;
    o->credits = 0;
    o->preinj = false;
    o->running = val != 0;
    o->clamped = false;
    if (val)
        rg_reanchor(o, now, val, rg_needs_clamp(o));
}

static void rg_o_tdcr(struct rg_oracle *o, uint64_t now, uint32_t val)
{
    uint32_t c;

    val &= 0xB;
    if (val == o->tdcr)
        return;
    if (!o->running) {
        o->tdcr = (uint8_t)val;
        return;
    }
    c = rg_tmcct(o, now);
    o->tdcr = (uint8_t)val;
    o->preinj = false;
    rg_reanchor(o, now, c, rg_needs_clamp(o));
}

static void rg_o_deadline(struct rg_oracle *o, uint64_t now, uint64_t val)
{
    uint64_t tsc;

    if (!rg_dlmode(o))
        return;
    o->credits = 0;
    o->preinj = false;
    o->d = val;
    o->dl_armed = val != 0;
    if (!val)
        return;
    tsc = rg_tsc(o, now);
    if (tsc >= val) {
        o->dl_at = now;
    } else {
        /* D in the TSC's current lap of 2^64 ticks. */
        fz_u128 full = (rg_tsc_full(o, now) >> 64 << 64) + val;
        o->dl_at = ((full - o->tsc_off) * 1000000u + o->tsc_khz - 1) /
                   o->tsc_khz;
    }
}

static void rg_o_reset(struct rg_oracle *o)
{
    rg_disarm(o);
    o->lvtt = 0x00010000u;
    o->tdcr = 0;
    o->owed = false;
}

/* ---- the host: wrappers around the simulated host's ops ----------------- */

static void rg_one_timer(void)
{
    RG_CHECK(!(rg.sim.sw_armed && rg.sim.hv_armed),
             "both host timers armed at %llu", RG_ULL(rg.sim.now_ns));
}

static void rg_op_sw_arm(void *ctx, uint64_t host_ns)
{
    lapict_sim_ops.sw_timer_arm(ctx, host_ns);
    rg_one_timer();
}

static bool rg_op_hv_arm(void *ctx, uint64_t host_ns)
{
    bool ok = lapict_sim_ops.hv_timer_arm(ctx, host_ns);
    rg_one_timer();
    return ok;
}

/* Calls into the library from inside an op: each refused, nothing changed. */
static void rg_reenter(void)
{
    struct lapict_timer before = *rg.t;
    struct lapict_stats st;
    uint64_t v64 = 1;
    uint32_t v32 = 1;

    RG_TRACE("# re-entry from inject\n");
    RG_CHECK(lapict_irq_window_open(rg.t) == LAPICT_E_INVAL,
             "re-entry: irq_window_open not refused");
    RG_CHECK(lapict_expire(rg.t) == LAPICT_E_INVAL,
             "re-entry: expire not refused");
    RG_CHECK(lapict_before_guest_entry(rg.t) == LAPICT_E_INVAL,
             "re-entry: before_guest_entry not refused");
    RG_CHECK(lapict_tmict_write(rg.t, 1) == LAPICT_E_INVAL,
             "re-entry: TMICT write not refused");
    RG_CHECK(lapict_msr_write(rg.t, LAPICT_MSR_TSC_DEADLINE, 1) ==
                 LAPICT_E_INVAL,
             "re-entry: deadline write not refused");
    RG_CHECK(lapict_xapic_read(rg.t, LAPICT_XAPIC_TMCCT, &v32) ==
                 LAPICT_E_INVAL,
             "re-entry: TMCCT read not refused");
    RG_CHECK(lapict_msr_read(rg.t, LAPICT_MSR_TSC_DEADLINE, &v64) ==
                 LAPICT_E_INVAL,
             "re-entry: deadline read not refused");
    RG_CHECK(lapict_stats_get(rg.t, &st) == LAPICT_E_INVAL,
             "re-entry: stats not refused");
    RG_CHECK(memcmp(&before, rg.t, sizeof(before)) == 0,
             "re-entry changed the instance");
}

static bool rg_op_inject(void *ctx, uint8_t vector)
{
    struct rg_oracle *o = &rg.o;
    bool ok;

    if (rg.reenter) {
        rg.reenter = false;
        rg_reenter();
    }
    ok = lapict_sim_ops.inject(ctx, vector);
    if (ok && rg.leap && rg.sim.now_ns > UINT64_MAX - rg.leap) {
        /* Not where the simulated clock would wrap: its run_until() in
         * progress would then take the old target for 2^63 ns ahead and
         * run every periodic callback up to its guard (slow, not wrong). */
        rg.leap = 0;
    }
    if (ok && rg.leap) {
        /* The host clock leaps before the guest is entered. */
        RG_TRACE("# host clock leaps by %llu inside inject\n",
                 RG_ULL(rg.leap));
        rg.sim.now_ns += rg.leap;
        rg.leap = 0;
        rg.wild = true;
    }
    if (!ok || rg.wild) {
        if (ok)
            o->inflight++;
        return ok;
    }
    rg_advance(o, rg.sim.now_ns);
    RG_CHECK(vector == (o->lvtt & 0xFF) && vector >= 16 && !(o->lvtt & RG_MASK),
             "injected vector %u, LVTT 0x%x", vector, o->lvtt);
    if (o->credits > 0) {
        o->credits--;
    } else {
        /* Nothing due: only legal as an advanced injection, which must be
         * followed by its expiry before the guest sees it (below). */
        RG_CHECK(!o->preinj,
                 "second injection at %llu with no expiry due "
                 "(twice?)",
                 RG_ULL(rg.sim.now_ns));
        o->preinj = true;
    }
    o->inflight++;
    return true;
}

static void rg_on_deliver(void *arg, uint64_t when, uint8_t vector)
{
    struct rg_oracle *o = &rg.o;
    uint64_t now = rg.sim.now_ns;

    (void)arg;
    (void)when;
    if (rg.wild)
        return;
    rg_advance(o, now);
    RG_CHECK(o->inflight > 0, "delivery of %u without an injection", vector);
    RG_CHECK(!o->preinj,
             "vector %u reaches the guest at %llu, before its expiry "
             "instant %llu",
             vector, RG_ULL(now), RG_ULL(rg_next(o)));
    o->inflight--;
    o->delivered_any = true;
    o->last_delivery = now;
}

/* ---- steps ----------------------------------------------------------------
 */

static void rg_enter(void)
{
    lapict_sim_enter(&rg.sim);
}

/* Host time step delta: small, medium, huge, or aimed at the next instant. */
static uint64_t rg_delta(struct fz_in *in)
{
    uint8_t c = fz_u8(in);
    fz_u128 next = rg_next(&rg.o);
    uint64_t now = rg.sim.now_ns, to;

    switch (c & 7) {
    case 0:
        return fz_u8(in);
    case 1:
        return fz_u16(in);
    case 2:
        return fz_u32(in);
    case 3:
        return (uint64_t)fz_u8(in) << 20;
    case 4:
        return fz_u64(in) >> (c >> 3);
    default:
        /* Exactly at, just before, or host latency after the next instant. */
        if (next == ~(fz_u128)0 || next <= now || next > rg.horizon)
            return fz_u8(in);
        to = (uint64_t)next;
        if ((c & 7) == 6 && to > now)
            to--;
        if ((c & 7) == 7)
            to += rg.sim.cfg.host_latency_ns + (c >> 3);
        return to - now;
    }
}

/* About 2^63 ns, either side. */
static uint64_t rg_jump(struct fz_in *in)
{
    uint32_t r = fz_u32(in);
    uint64_t off = (uint64_t)(r & 0x7FFFFFFFu) >> (r >> 27 & 15);
    return (r & 0x80000000u) ? (1ull << 63) + off : (1ull << 63) - off;
}

static void rg_time_step(struct fz_in *in, bool stall)
{
    uint64_t now = rg.sim.now_ns, d, to;

    if (rg.wild) {
        /* Past the horizon the oracle is off: only run what is due. */
        d = fz_u16(in);
        RG_TRACE("stall %llu\n", RG_ULL(d));
        lapict_sim_stall(&rg.sim, d);
        return;
    }
    d = rg_delta(in);

    to = d > rg.horizon - now ? rg.horizon : now + d;
    if (now > rg.horizon)
        to = now;
    if (!stall && rg_expiries_until(&rg.o, to) > RG_MAX_STEP_EXPIRIES)
        stall = true;
    if (stall) {
        RG_TRACE("stall %llu\n", RG_ULL(to - now));
        lapict_sim_stall(&rg.sim, to - now);
    } else {
        RG_TRACE("at %llu\n", RG_ULL(to));
        lapict_sim_run_until(&rg.sim, to);
    }
}

/* How to reach a register: 0 direct call, 1 xAPIC MMIO, 2 x2APIC MSR. */
static int rg_write(unsigned how, uint32_t off, uint32_t msr, uint32_t val,
                    int (*direct)(struct lapict_timer *, uint32_t))
{
    switch (how % 3) {
    case 0:
        return direct(rg.t, val);
    case 1:
        return lapict_xapic_write(rg.t, off, val);
    default:
        return lapict_msr_write(rg.t, msr, val);
    }
}

static uint32_t rg_lvtt_value(struct fz_in *in)
{
    uint8_t vec = fz_u8(in), f = fz_u8(in);
    uint32_t v = vec | (uint32_t)(f & 1) << 16 | (uint32_t)((f >> 1) & 3) << 17;
    if (f & 0x80)
        v |= fz_u32(in); /* reserved bits and bit 12 */
    return v;
}

static uint32_t rg_count_value(struct fz_in *in)
{
    uint8_t c = fz_u8(in);
    switch (c & 7) {
    case 0:
        return 0;
    case 1:
    case 2:
        return fz_u8(in) + 1u;
    case 3:
    case 4:
        return fz_u16(in) + 1u;
    case 5:
        return 0xFFFFFFFFu - fz_u8(in);
    default:
        return fz_u32(in);
    }
}

static uint64_t rg_deadline_value(struct fz_in *in)
{
    uint8_t c = fz_u8(in);
    uint64_t tsc = rg_tsc(&rg.o, rg.sim.now_ns);
    switch (c & 7) {
    case 0:
        return 0;
    case 1:
    case 2:
        return tsc + fz_u8(in);
    case 3:
        return tsc + fz_u32(in);
    case 4:
        return tsc - fz_u16(in); /* already passed */
    case 5:
        return UINT64_MAX - fz_u8(in);
    case 6:
        return tsc + ((uint64_t)fz_u16(in) << 16);
    default:
        return fz_u64(in);
    }
}

/* Deadline values as they come (a far one once looped: regressions/). */
static uint64_t rg_near_deadline(uint64_t v)
{
    return v;
}

static void rg_check_regs(unsigned which, unsigned how)
{
    struct rg_oracle *o = &rg.o;
    uint64_t v = 0, now;
    uint32_t v32 = 0;
    static const uint32_t offs[4] = {LAPICT_XAPIC_LVTT, LAPICT_XAPIC_TMICT,
                                     LAPICT_XAPIC_TMCCT, LAPICT_XAPIC_TDCR};
    int rc = LAPICT_OK;

    which %= 5;
    how %= 3;
    RG_TRACE("read %s\n", (const char *[]){"lvtt", "tmict", "tmcct", "tdcr",
                                           "tsc_deadline"}[which]);
    if (which == 4) {
        v = how == 0 ? lapict_tsc_deadline_read(rg.t) : 0;
        if (how != 0)
            rc = lapict_msr_read(rg.t, LAPICT_MSR_TSC_DEADLINE, &v);
    } else if (how == 0) {
        switch (which) {
        case 0:
            v = lapict_lvtt_read(rg.t);
            break;
        case 1:
            v = lapict_tmict_read(rg.t);
            break;
        case 2:
            v = lapict_tmcct_read(rg.t);
            break;
        default:
            v = lapict_tdcr_read(rg.t);
            break;
        }
    } else if (how == 1) {
        rc = lapict_xapic_read(rg.t, offs[which], &v32);
        v = v32;
    } else {
        rc = lapict_msr_read(rg.t, 0x800u + (offs[which] >> 4), &v);
    }
    rg_enter();
    RG_CHECK(rc == LAPICT_OK, "register read failed: %d", rc);
    if (rg.wild)
        return;
    now = rg.sim.now_ns;
    rg_advance(o, now);
    switch (which) {
    case 0:
        RG_CHECK((v & ~0x1000ull) == o->lvtt, "LVTT read 0x%llx, oracle 0x%x",
                 RG_ULL(v), o->lvtt);
        RG_CHECK(!(v & 0x1000) || o->credits > 0,
                 "LVTT delivery-status bit with nothing pending");
        break;
    case 1:
        RG_CHECK(v == (rg_dlmode(o) ? 0 : o->tmict),
                 "TMICT read %llu, oracle %u", RG_ULL(v), o->tmict);
        break;
    case 2:
        RG_CHECK(v <= o->tmict || rg_dlmode(o), "TMCCT %llu > TMICT %u",
                 RG_ULL(v), o->tmict);
        RG_CHECK(v == rg_tmcct(o, now), "TMCCT read %llu at %llu, oracle %u",
                 RG_ULL(v), RG_ULL(now), rg_tmcct(o, now));
        break;
    case 3:
        RG_CHECK(v == o->tdcr, "TDCR read 0x%llx, oracle 0x%x", RG_ULL(v),
                 o->tdcr);
        break;
    default:
        RG_CHECK(v == (rg_dlmode(o) && o->dl_armed ? o->d : 0),
                 "TSC deadline read %llu, oracle %llu (armed %d)", RG_ULL(v),
                 RG_ULL(o->d), o->dl_armed);
        break;
    }
}

/* Accesses that are not ours (NOREG) or that x2APIC answers with #GP. */
static void rg_bad_access(struct fz_in *in)
{
    uint8_t c = fz_u8(in);
    uint32_t off = fz_u16(in) & 0xFFFu, msr;
    uint64_t v64;
    uint32_t v32;
    int rc;

    switch (c & 3) {
    case 0:
        if (off == LAPICT_XAPIC_LVTT || off == LAPICT_XAPIC_TMICT ||
            off == LAPICT_XAPIC_TMCCT || off == LAPICT_XAPIC_TDCR)
            off = 0x3F0;
        rc = (c & 4) ? lapict_xapic_write(rg.t, off, fz_u32(in))
                     : lapict_xapic_read(rg.t, off, &v32);
        RG_CHECK(rc == LAPICT_E_NOREG, "xAPIC 0x%x: %d, not NOREG", off, rc);
        break;
    case 1:
        msr = (c & 8) ? fz_u32(in) : 0x800u + fz_u8(in);
        if (msr == LAPICT_MSR_X2APIC_LVTT || msr == LAPICT_MSR_X2APIC_TMICT ||
            msr == LAPICT_MSR_X2APIC_TMCCT || msr == LAPICT_MSR_X2APIC_TDCR ||
            msr == LAPICT_MSR_TSC_DEADLINE)
            msr = 0x83F;
        rc = (c & 4) ? lapict_msr_write(rg.t, msr, fz_u64(in))
                     : lapict_msr_read(rg.t, msr, &v64);
        RG_CHECK(rc == LAPICT_E_NOREG, "MSR 0x%x: %d, not NOREG", msr, rc);
        break;
    case 2: {
        /* Bits 63:32 set in an x2APIC register: #GP, nothing changes. */
        static const uint32_t m[3] = {LAPICT_MSR_X2APIC_LVTT,
                                      LAPICT_MSR_X2APIC_TMICT,
                                      LAPICT_MSR_X2APIC_TDCR};
        uint64_t hi = (uint64_t)(fz_u32(in) | 1u) << 32;
        rc = lapict_msr_write(rg.t, m[(c >> 2) % 3], hi | fz_u32(in));
        RG_CHECK(rc == LAPICT_E_GP, "x2APIC write with high bits: %d", rc);
        break;
    }
    default:
        /* TMCCT is read-only: #GP by MSR, ignored by MMIO. */
        rc = lapict_msr_write(rg.t, LAPICT_MSR_X2APIC_TMCCT, fz_u32(in));
        RG_CHECK(rc == LAPICT_E_GP, "x2APIC TMCCT write: %d", rc);
        rc = lapict_xapic_write(rg.t, LAPICT_XAPIC_TMCCT, fz_u32(in));
        RG_CHECK(rc == LAPICT_OK, "xAPIC TMCCT write: %d", rc);
        break;
    }
    rg_enter();
}

static void rg_save_restore(bool fresh)
{
    uint8_t blob[LAPICT_STATE_SIZE];
    struct lapict_timer *n = rg.t;
    int rc;

    rc = lapict_state_save(rg.t, blob, sizeof(blob));
    RG_CHECK(rc == LAPICT_OK, "save: %d", rc);
    rg_enter();
    if (fresh) {
        /* The old instance is gone with its host timers (as a migration). */
        n = rg.t == &rg.timers[0] ? &rg.timers[1] : &rg.timers[0];
        lapict_sim_drop_timers(&rg.sim);
        rc = lapict_init(n, &rg.cfg, &rg.ops, &rg.sim);
        RG_CHECK(rc == LAPICT_OK, "init: %d", rc);
        if (rg.sim.blocked)
            lapict_vcpu_blocking(n); /* the destination vCPU is halted too */
        lapict_sim_attach(&rg.sim, n);
    }
    rc = lapict_state_restore(n, blob, sizeof(blob));
    RG_CHECK(rc == LAPICT_OK || rg.wild,
             "restore of a blob just saved: %d (%s)", rc, lapict_strerror(rc));
    /* The restored instance is the one the ops (and a re-entering inject)
     * act on from here. */
    rg.t = n;
    if (rg.sim.window_open)
        lapict_irq_window_open(n); /* what state.h asks after a restore */
    rg_enter();
}

static void rg_after_step(void)
{
    struct rg_oracle *o = &rg.o;
    struct lapict_stats st;
    uint64_t now = rg.sim.now_ns;

    rg_advance(o, now);
    rg_one_timer();
    RG_CHECK(lapict_stats_get(rg.t, &st) == LAPICT_OK, "stats");
    if (rg.wild) {
        /* O(1) servicing against the library's own expiry count. */
        uint64_t calls = rg.sim.expire_calls - rg.wild_calls;
        uint64_t exp = st.expiries - rg.wild_expiries;
        RG_CHECK(calls <= 16 + 2 * exp,
                 "%llu host callbacks for %llu expiries in one step after a "
                 "clock jump",
                 RG_ULL(calls), RG_ULL(exp));
        rg.wild_calls = rg.sim.expire_calls;
        rg.wild_expiries = st.expiries;
        if (rg.sim.expire_calls > RG_MAX_CALLBACKS)
            rg.stop = true;
        return;
    }
    RG_CHECK(st.pending <= o->credits,
             "library holds %u pending, oracle "
             "allows %u",
             st.pending, o->credits);
    /* Lost: an owed expiry must have been delivered by now. */
    if (o->owed && (!o->window_open || o->owed_x < o->window_since ||
                    o->missed == LAPICT_MISSED_DROP)) {
        o->owed = false;
    } else if (o->owed &&
               o->owed_x + rg.sim.cfg.host_latency_ns + rg.dl_slack <= now) {
        RG_CHECK(o->delivered_any && o->last_delivery >= o->owed_x,
                 "expiry at %llu lost (now %llu, last delivery %llu)",
                 RG_ULL(o->owed_x), RG_ULL(now), RG_ULL(o->last_delivery));
        o->owed = false;
    }
    /* O(1) servicing: no storm of host timer callbacks. */
    rg.allowance += 8;
    RG_CHECK(rg.sim.expire_calls <= rg.allowance + 2 * o->expiries,
             "%llu host callbacks for %llu expiries",
             RG_ULL(rg.sim.expire_calls), RG_ULL(o->expiries));
    if (rg.sim.expire_calls > RG_MAX_CALLBACKS)
        rg.stop = true;
}

static void rg_step(struct fz_in *in)
{
    struct rg_oracle *o = &rg.o;
    uint8_t op = fz_u8(in);
    uint64_t now = rg.sim.now_ns, v64;
    uint32_t v;
    int rc;

    rg_advance(o, now);
    {
        struct lapict_stats st;
        if (lapict_stats_get(rg.t, &st) == LAPICT_OK)
            rg.wild_expiries = st.expiries;
        rg.wild_calls = rg.sim.expire_calls;
    }
    switch (op % 16) {
    case 0:
    case 1:
        v = rg_lvtt_value(in);
        RG_TRACE("write lvtt 0x%x\n", v);
        rc = rg_write(op >> 4, LAPICT_XAPIC_LVTT, LAPICT_MSR_X2APIC_LVTT, v,
                      lapict_lvtt_write);
        RG_CHECK(rc == LAPICT_OK, "LVTT write: %d", rc);
        rg_enter();
        if (!rg.wild)
            rg_o_lvtt(o, now, v);
        break;
    case 2:
    case 3:
        v = rg_count_value(in);
        RG_TRACE("write tmict %u\n", v);
        rc = rg_write(op >> 4, LAPICT_XAPIC_TMICT, LAPICT_MSR_X2APIC_TMICT, v,
                      lapict_tmict_write);
        RG_CHECK(rc == LAPICT_OK, "TMICT write: %d", rc);
        rg_enter();
        if (!rg.wild)
            rg_o_tmict(o, now, v);
        break;
    case 4:
        v = fz_u8(in);
        if (v & 0x80)
            v |= fz_u32(in);
        RG_TRACE("write tdcr 0x%x\n", v);
        rc = rg_write(op >> 4, LAPICT_XAPIC_TDCR, LAPICT_MSR_X2APIC_TDCR, v,
                      lapict_tdcr_write);
        RG_CHECK(rc == LAPICT_OK, "TDCR write: %d", rc);
        rg_enter();
        if (!rg.wild)
            rg_o_tdcr(o, now, v);
        break;
    case 5:
        v64 = rg_near_deadline(rg_deadline_value(in));
        /*
         * Bring the library up to date first (an LVTT read), so that what
         * this write itself injects can be told from what was due before.
         */
        RG_TRACE("read lvtt\nwrite tsc_deadline %llu\n", RG_ULL(v64));
        lapict_lvtt_read(rg.t);
        rg_enter();
        if (!rg.wild)
            rg_o_deadline(o, now, v64);
        rc = (op & 0x10) ? lapict_msr_write(rg.t, LAPICT_MSR_TSC_DEADLINE, v64)
                         : lapict_tsc_deadline_write(rg.t, v64);
        RG_CHECK(rc == LAPICT_OK, "deadline write: %d", rc);
        rg_enter();
        break;
    case 6:
        RG_TRACE("write svr 0x%x\n", (op & 0x10) ? 0x100 : 0);
        rc = lapict_svr_write(rg.t, op & 0x10);
        RG_CHECK(rc == LAPICT_OK, "SVR write: %d", rc);
        rg_enter();
        if (!(op & 0x10))
            o->lvtt |= RG_MASK;
        o->svr_en = op & 0x10;
        break;
    case 7:
    case 8:
        rg_check_regs(op >> 4, fz_u8(in));
        break;
    case 9:
    case 10:
        rg_time_step(in, false);
        break;
    case 11:
        switch ((op >> 4) & 3) {
        case 1:
            /* A stall of about 2^63 ns (defects of the horizon rule). */
            v64 = rg_jump(in);
            RG_TRACE("stall %llu\n", RG_ULL(v64));
            rg.wild = true;
            lapict_sim_stall(&rg.sim, v64);
            rg_enter();
            break;
        case 2:
            /* The next accepted inject leaps the host clock. */
            rg.leap = rg_jump(in);
            break;
        default:
            rg_time_step(in, true);
            break;
        }
        break;
    case 12:
        RG_TRACE("%s\n", (op & 0x10) ? "block" : "unblock");
        if (op & 0x10)
            lapict_sim_block(&rg.sim);
        else
            lapict_sim_unblock(&rg.sim);
        break;
    case 13:
        RG_TRACE("window %d\n", !!(op & 0x10));
        if (op & 0x10) {
            if (!o->window_open)
                o->window_since = now;
            o->window_open = true;
            lapict_sim_window(&rg.sim, true);
            /* A held interrupt met a mask or an illegal vector: gone. */
            if ((o->lvtt & RG_MASK) || (o->lvtt & 0xFF) < 16)
                o->credits = 0;
        } else {
            o->window_open = false;
            lapict_sim_window(&rg.sim, false);
        }
        break;
    case 14:
        switch ((op >> 4) & 3) {
        case 0:
            RG_TRACE("save_restore\n");
            rg_save_restore(true);
            break;
        case 1:
            RG_TRACE("# save, restore onto the same instance\n");
            rg_save_restore(false);
            break;
        case 2:
            RG_TRACE("reset\n");
            rc = lapict_reset(rg.t);
            RG_CHECK(rc == LAPICT_OK, "reset: %d", rc);
            rg_enter();
            if (!rg.wild)
                rg_o_reset(o);
            break;
        default:
            if (op & 0x40) {
                /* The next inject calls back into the library. */
                rg.reenter = true;
                break;
            }
            /* A spurious (early, duplicate) host callback. */
            RG_TRACE("# spurious lapict_expire()\n");
            lapict_expire(rg.t);
            rg_enter();
            break;
        }
        break;
    default:
        RG_TRACE("# access to a non-timer register or #GP case\n");
        rg_bad_access(in);
        break;
    }
    rg_after_step();
}

/* ---- configuration --------------------------------------------------------
 */

static void rg_setup(struct fz_in *in)
{
    static const uint64_t buses[8] = {
        1000000000ull, 100000000ull, 1ull << 27,     25000000ull,
        3000000ull,    1000ull,      10000000000ull, 0};
    static const uint32_t khzs[8] = {1000000u, 2500000u, 1u,   100000000u,
                                     999999u,  1234567u, 999u, 0};
    static const uint32_t min_ps[4] = {0, 200000u, 1000u, 0};
    static const uint64_t lats[8] = {0, 0, 0, 1, 100, 1000, 50000, 0};
    /* Index 1: a guest TSC that wraps within the first 2^32 ticks. */
    static const uint64_t offs[4] = {0, 0, 1ull << 63,
                                     UINT64_MAX - (1ull << 52)};
    static const uint64_t bases[4] = {0, 1000000000000ull, 1ull << 62,
                                      UINT64_MAX - (1ull << 50)};
    struct lapict_sim_config sc;
    struct lapict_config *c = &rg.cfg;
    struct rg_oracle *o = &rg.o;
    uint8_t b0 = fz_u8(in), b1 = fz_u8(in), b2 = fz_u8(in), b3 = fz_u8(in);
    uint8_t b4 = fz_u8(in), b5 = fz_u8(in), b6 = fz_u8(in), b7 = fz_u8(in);
    uint8_t b8 = fz_u8(in), b9 = fz_u8(in);
    uint64_t base, room;
    int rc;

    memset(&rg, 0, sizeof(rg));
    lapict_config_default(c);
    c->bus_hz = buses[b0 & 7];
    if (!c->bus_hz)
        c->bus_hz = LAPICT_BUS_HZ_MIN +
                    fz_u64(in) % (LAPICT_BUS_HZ_MAX - LAPICT_BUS_HZ_MIN + 1);
    c->tsc_khz = khzs[b1 & 7];
    if (!c->tsc_khz)
        c->tsc_khz = LAPICT_TSC_KHZ_MIN +
                     fz_u32(in) % (LAPICT_TSC_KHZ_MAX - LAPICT_TSC_KHZ_MIN + 1);
    c->min_period_ns = min_ps[b2 & 3];
    if ((b2 & 3) == 3)
        c->min_period_ns = ((uint32_t)fz_u16(in) << (b2 >> 5)) %
                           (LAPICT_MIN_PERIOD_NS_MAX + 1);
    c->tsc_deadline = !(b3 & 1);
    c->advance_mode = (b3 >> 2) & 3;
    if (c->advance_mode == 3)
        c->advance_mode = LAPICT_ADVANCE_OFF;
    c->advance_max_ns = (uint32_t)b4 * 64u;
    c->advance_ns = c->advance_mode == LAPICT_ADVANCE_OFF ? 0
                    : c->advance_mode == LAPICT_ADVANCE_FIXED
                        ? (uint32_t)b4 * 40u
                        : c->advance_max_ns / 2u;
    c->missed_policy = (b3 >> 4) & 3;
    if (c->missed_policy == 3)
        c->missed_policy = LAPICT_MISSED_COALESCE;
    c->catch_up_max = 1u + b5;
    rc = lapict_config_check(c);
    RG_CHECK(rc == LAPICT_OK, "fuzzer built a bad config: %d", rc);

    lapict_sim_config_default(&sc);
    sc.tsc_khz = c->tsc_khz;
    sc.tsc_offset = offs[b9 & 3];
    if ((b9 & 3) == 1)
        sc.tsc_offset = UINT64_MAX - fz_u32(in);
    sc.hv_timer = (b8 & 3) == 1 || (b8 & 3) == 2;
    sc.hv_shift = (b8 >> 2) & 7;
    if (b8 & 0x20)
        sc.hv_max = (uint64_t)1 << (b8 >> 6) * 8; /* tiny: often refused */
    sc.host_latency_ns = lats[b6 & 7];
    if ((b6 & 7) == 7)
        sc.host_latency_ns = b6;
    sc.entry_latency_ns = lats[b7 & 7];
    lapict_sim_init(&rg.sim, &sc, rg_on_deliver, NULL);

    /* The guest TSC may wrap; host time keeps a margin for spins. */
    rg.horizon = UINT64_MAX - (1ull << 30);
    base = bases[(b9 >> 2) & 3];
    if (base > rg.horizon / 2)
        base = rg.horizon / 2;
    /*
     * A wrapping host clock only orders instants less than 2^63 ns apart
     * (ops.h): a run spans at most 2^62 ns (146 years), the library's own
     * re-check interval.
     */
    if (rg.horizon - base > (1ull << 62))
        rg.horizon = base + (1ull << 62);
    /*
     * Keep each input fast: a run spans at most 2^61 bus ticks. That still
     * passes the library's re-base point (2^40 ticks) many times over;
     * the tick counter's 2^64 limit itself is covered by the golden traces
     * 62 and 63 (stalls of 5*10^17 and 2*10^18 ns at 10 GHz).
     */
    room = (uint64_t)(((fz_u128)1 << 61) * 1000000000u / c->bus_hz);
    if (rg.horizon - base > room)
        rg.horizon = base + room;
    rg.sim.now_ns = base;
    /* Without tsc_to_host_ns the library may be one TSC period late. */
    rg.dl_slack = 0;

    rg.ops = lapict_sim_ops;
    rg.ops.sw_timer_arm = rg_op_sw_arm;
    rg.ops.hv_timer_arm = rg_op_hv_arm;
    rg.ops.inject = rg_op_inject;
    if ((b8 & 3) == 0 || (b8 & 3) == 3) {
        /* (b8 & 3) == 3: offered by the ops, refused by the host. */
        if ((b8 & 3) == 0)
            rg.ops.hv_timer_arm = NULL, rg.ops.hv_timer_cancel = NULL;
    }
    if (b3 & 0x40) {
        rg.ops.tsc_to_host_ns = NULL;
        rg.dl_slack = 1000000u / c->tsc_khz + 2;
    }
    if (b3 & 0x80)
        rg.ops.spin_until = NULL;
    if (b3 & 2)
        rg.ops.report = NULL;

    rg.t = &rg.timers[0];
    rc = lapict_init(rg.t, c, &rg.ops, &rg.sim);
    RG_CHECK(rc == LAPICT_OK, "init: %d", rc);
    lapict_sim_attach(&rg.sim, rg.t);

    if (rg_verbose < 0)
        rg_verbose = getenv("LAPICT_FUZZ_TRACE") != NULL;
    RG_TRACE("config bus_hz=%llu tsc_khz=%u tsc_offset=%llu min_period_ns=%u"
             " tsc_deadline=%d hv_timer=%d hv_shift=%u hv_max=%llu"
             " missed=%s host_latency_ns=%llu entry_latency_ns=%llu",
             RG_ULL(c->bus_hz), c->tsc_khz, RG_ULL(sc.tsc_offset),
             c->min_period_ns, c->tsc_deadline, sc.hv_timer, sc.hv_shift,
             RG_ULL(sc.hv_max),
             (const char *[]){"coalesce", "catch_up", "drop"}[c->missed_policy],
             RG_ULL(sc.host_latency_ns), RG_ULL(sc.entry_latency_ns));
    if (c->advance_mode == LAPICT_ADVANCE_FIXED)
        RG_TRACE(" advance=%u", c->advance_ns);
    else if (c->advance_mode == LAPICT_ADVANCE_ADAPTIVE)
        RG_TRACE(" advance=adaptive");
    RG_TRACE("\n# catch_up_max=%u advance_max_ns=%u ops:%s%s%s%s start at %llu"
             "\n",
             c->catch_up_max, c->advance_max_ns,
             rg.ops.hv_timer_arm ? "" : " no-hv",
             rg.ops.tsc_to_host_ns ? "" : " no-tsc_to_host_ns",
             rg.ops.spin_until ? "" : " no-spin",
             rg.ops.report ? "" : " no-report", RG_ULL(base));

    o->bus_hz = c->bus_hz;
    o->tsc_khz = c->tsc_khz;
    o->tsc_off = sc.tsc_offset;
    o->min_p = c->min_period_ns;
    o->dl_ok = c->tsc_deadline;
    o->missed = c->missed_policy;
    o->cap = c->missed_policy == LAPICT_MISSED_CATCH_UP ? c->catch_up_max : 1;
    o->lvtt = 0x00010000u;
    o->svr_en = true;
    o->window_open = true;
    o->window_since = base;
}

int FUZZ_REGS_ENTRY(const uint8_t *data, size_t size);
int FUZZ_REGS_ENTRY(const uint8_t *data, size_t size)
{
    struct fz_in in = {data, size, 0};
    int n;

    rg_setup(&in);
    for (n = 0; n < RG_MAX_OPS && fz_more(&in) && !rg.stop; n++)
        rg_step(&in);
    return 0;
}
