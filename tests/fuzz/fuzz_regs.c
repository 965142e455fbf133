/* SPDX-License-Identifier: MIT */
/*
 * fuzz_regs: the guest-facing register interface on the simulated host,
 * checked after every step against an independent oracle of
 * docs/spec/timer.md, and against a twin run without its migrations.
 *
 * Input: a header that picks the configuration (bus clock, guest TSC rate
 * and offset, minimum period, advance, missed-tick policy, host latencies,
 * hardware timer, which optional ops the host offers, host time base, and
 * with byte 9 bit 5 a run of 2^62 ns at any bus rate), then one operation
 * per opcode byte: LVTT/TMICT/TDCR/TSC-deadline writes (the direct calls,
 * xAPIC MMIO or x2APIC MSR, chosen by the input), register reads, SVR
 * enable, time steps (run the host to a time, or stall it), block/unblock,
 * interrupt window changes, save/restore into a fresh instance or onto
 * itself, a migration between a host callback and the guest entry after
 * it into another advance (opcode 0x9E, rg_held_migration()), a register
 * write between a host callback and the guest entry after it (opcode 0xBE,
 * rg_held_write()), reset,
 * spurious host callbacks, and accesses to non-timer registers and #GP
 * cases. An exhausted input reads as zeros.
 *
 * The oracle (struct rg_oracle) is a plain model of sections 2-6 of
 * docs/spec/timer.md with 128-bit absolute instants and 128-bit division:
 * anchor, next expiry tick E, the clamped clock, and the TSC deadline
 * instant ceil((D - offset) * 10^6 / tsc_khz). It does not share code with
 * lib/.
 *
 * Checked after every step (and in every host callback where it applies):
 * - every register read equals the oracle (so TMCCT <= TMICT, the deadline
 *   MSR reads 0 after its expiry, reserved bits read 0, LVTT bit 12 only
 *   while something may be pending);
 * - no delivery before its architectural instant and none twice: every
 *   injection must take one of the interrupts the oracle allows pending
 *   (granted only by an unmasked expiry with a legal vector whose instant
 *   has passed, capped per missed-tick policy, none for a `drop` stall
 *   over several grid points, cleared by whatever drops a pending
 *   interrupt) or be the single advanced injection of the next expiry, at
 *   most the advance of this instance's configuration ahead and never of a
 *   periodic timer with a period under 2 ns, whose instant must have passed
 *   when the guest receives it; the vector is LVTT's of that moment and
 *   never an illegal one. After a migration that held the guest entry
 *   after a pre-injection, the destination (whatever its advance, or none
 *   at all) must keep that wait or refuse the blob with a LAPICT_E_STATE_*
 *   code, unchanged (the source then resumes);
 * - none lost or late where the oracle can tell: with the window open since
 *   before an unmasked legal expiry and a policy other than `drop`, the
 *   first delivery at or after its instant comes by instant + host latency
 *   (+ one TSC period when the host has no tsc_to_host_ns op), or at the
 *   end of a stall that held the host: never after a wait for a later
 *   expiry injected ahead;
 * - brought up to now (a register access, window open, block, a callback),
 *   the library's expiries statistic equals the oracle's exact count since
 *   the instance last changed, saturating at 2^64 - 1;
 * - at most one host timer armed (checked on every arm);
 * - no storm of host callbacks: at most 2 per expiry plus a constant per
 *   step (section 6: servicing is O(1) whatever the stall);
 * - the library's pending count never exceeds the oracle's credits;
 * - an expiry injected ahead is the interrupt of its servicing: with
 *   coalesce or drop, the other expiries of that servicing give no credit;
 * - re-entry (ops.h): calls into the library from inside an inject op are
 *   refused with LAPICT_E_REENTRY and change nothing;
 * - an input with a save/restore runs twice, the second time (the twin)
 *   with every save/restore skipped: register reads, deliveries and the
 *   adaptive advance after the same tuner samples must be the same in both
 *   (rg_twin_compare() says where the twins part by design);
 * - ASan/UBSan: no UB anywhere.
 *
 * Weakened or restricted on purpose (kept simple rather than exact):
 * - the `drop` policy's "k > 1 at one servicing" depends on when the host
 *   ran its callbacks, so outside a stall it is only bounded above (at most
 *   one pending) and exempt from the lost check;
 * - pending interrupts are bounded above, not tracked exactly (e.g. an
 *   interrupt held while the window is closed may still be dropped by a
 *   later mask), and the lost check is off while the window is closed;
 * - a run spans at most 2^62 ns of host time between ordinary steps, since
 *   a wrapping clock cannot order instants 2^63 ns apart; the guest TSC may
 *   wrap within it (offsets up to 2^64 - 1; the oracle keeps the TSC as a
 *   128-bit count, and a deadline is the first instant the wrapped TSC
 *   reaches D after the write); without header byte 9 bit 5, at most 2^61
 *   bus ticks;
 * - clock jumps of about 2^63 ns (a stall, or the host clock leaping
 *   inside an inject op, between a pre-injecting callback and entry) make
 *   the run "wild": the horizon rule of ops.h reads such a jump as "not
 *   yet", which the oracle does not model, so from then on only UB, one
 *   host timer, re-entry, and the storm bound (callbacks per step against
 *   the library's own expiry count) are checked;
 * - a migration into another advance moves nothing the oracle models, so
 *   the oracle goes on; the twin comparison stops there;
 * - a TDCR write of the value already stored is a no-op (the library's
 *   choice; the spec is silent on whether it re-anchors);
 * - runs with more than RG_MAX_STEP_EXPIRIES expiries in one time step are
 *   turned into a host stall of the same length (the library services a
 *   stall in O(1); the oracle too), and a run stops after RG_MAX_CALLBACKS
 *   host callbacks, so that tiny periods cannot time the fuzzer out.
 *
 * LAPICT_FUZZ_TRACE=1 prints the run as a lapict-replay trace (with the
 * deliveries as comments) and how far the twins agreed; =2 the twin too.
 */
#include <string.h>

#include <lapict/lapict.h>

#include "fuzz_common.h"
#include "lapict_sim.h"

#ifndef FUZZ_REGS_ENTRY
#define FUZZ_REGS_ENTRY LLVMFuzzerTestOneInput
#endif

#define RG_CHECK(...) FZ_CHECK("fuzz_regs", __VA_ARGS__)

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
    /* Every expiry, exact (the library's statistic saturates at 2^64 - 1),
     * and both counts when the instance last changed (restore, reset). */
    fz_u128 exp_all, exp_base;
    uint64_t exp_base_lib;
};

/*
 * What the guest and the tuner see, logged per run in order for the twin
 * comparison (rg_twin_compare()): register reads, deliveries with the
 * advance in force right after the entry that made them, and what a tuner
 * sample is made of: accepted injections (time, vector, whether ahead of
 * the instant, the host timer target the library armed) and spins; and
 * the time of each host callback run with the guest entry held, which
 * the library's host timer sets (rg_callback_held()).
 */
enum { RG_EV_READ, RG_EV_DLV, RG_EV_INJ, RG_EV_SPIN, RG_EV_HELD };

struct rg_event {
    uint32_t step;
    uint8_t kind, which;
    bool ahead;
    /* READ: value; DLV, INJ, HELD: host time; SPIN: target. */
    uint64_t val;
    /* DLV: advance in force; INJ: host timer target (~0: none armed). */
    uint64_t aux;
};

#define RG_MAX_EVENTS 65536u

struct rg_log {
    /* Steps run; the first step at which the twins may differ by design,
     * in all (a changed configuration, a wild clock, a full log) or in
     * the tuner only (a latency sample in flight at the save). */
    uint32_t steps, cut_all, cut_tuner;
    uint32_t n;
    /* A save/restore happened (else there is nothing to compare). */
    bool migrated;
    struct rg_event ev[RG_MAX_EVENTS];
};

static struct rg_log rg_logs[2];

struct rg_ctx {
    struct lapict_sim sim;
    /*
     * Per instance slot: a migration may change the advance and the ops
     * the host offers (LAPICT_SIM_OP_BIT()s @absent). Each slot's instance
     * calls the host through its wrapper, whose callbacks check each op.
     */
    struct lapict_sim_wrap wrap[2];
    uint32_t absent[2];
    struct lapict_config cfg[2];
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
    /* Pass 0 runs the input, pass 1 its twin: every save/restore skipped. */
    int pass;
    uint32_t step;
    struct rg_log *log;
    /* This step brought the library up to now (a register access, window
     * open, block/unblock, a callback run by hand): statistics are exact. */
    bool synced;
    /* Inside a stall: its first servicing takes every expiry of the stall
     * at once; the latest stall's end (deliveries owed before it are late
     * by the stall, not by the library). */
    bool stall_batch;
    uint64_t stall_end;
    /* The host timer as the library armed it (the due time of a sample). */
    bool lib_armed;
    uint64_t lib_target;
};

static struct rg_ctx rg;
static int rg_verbose = -1;

/* LAPICT_FUZZ_TRACE=1: print each step in lapict-replay syntax (stderr). */
#define RG_TRACE(...)                                                          \
    do {                                                                       \
        if (rg_verbose > rg.pass)                                              \
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
    o->exp_all += k;
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
    /* Illegal: never injected, dropped and reported at once, wherever
     * the expiry is processed (a save's settling included: a migration
     * must not turn it into a pending interrupt). */
    if (v < 16)
        return;
    /* drop: the servicing after a stall takes its expiries at once; more
     * than one is none of them (a host timer cannot run inside a stall). */
    if (rg.stall_batch && o->missed == LAPICT_MISSED_DROP && k > 1)
        return;
    c = (fz_u128)o->credits + k;
    o->credits = c > o->cap ? o->cap : (uint32_t)c;
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
    if (rg.stall_batch && to != rg.stall_end)
        rg.stall_batch = false; /* a spin moved on: another servicing */
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
    rg.stall_batch = false;
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
        o->dl_at =
            ((full - o->tsc_off) * 1000000u + o->tsc_khz - 1) / o->tsc_khz;
    }
}

static void rg_o_reset(struct rg_oracle *o)
{
    rg_disarm(o);
    o->lvtt = 0x00010000u;
    o->tdcr = 0;
    o->owed = false;
}

/* ---- the host: checks around each op (the wrapper's callbacks) --------- */

static void rg_one_timer(void)
{
    RG_CHECK(!(rg.sim.sw_armed && rg.sim.hv_armed),
             "both host timers armed at %llu", RG_ULL(rg.sim.now_ns));
}

static struct rg_event *rg_event(uint8_t kind, uint8_t which, uint64_t val)
{
    static struct rg_event spare;
    struct rg_log *l = rg.log;
    struct rg_event *e;

    if (l->n == RG_MAX_EVENTS) {
        if (l->cut_all > rg.step)
            l->cut_all = rg.step; /* this step's events are incomplete */
        return &spare;
    }
    e = &l->ev[l->n++];
    e->step = rg.step;
    e->kind = kind;
    e->which = which;
    e->ahead = false;
    e->val = val;
    e->aux = 0;
    return e;
}

/* Largest advance the current instance may inject ahead with. */
static uint32_t rg_adv_max(void)
{
    const struct lapict_config *c = &rg.cfg[rg.t - rg.timers];

    if (!rg.wrap[rg.t - rg.timers].ops.spin_until)
        return 0;
    switch (c->advance_mode) {
    case LAPICT_ADVANCE_FIXED:
        return c->advance_ns;
    case LAPICT_ADVANCE_ADAPTIVE:
        return c->advance_max_ns;
    default:
        return 0;
    }
}

/* Calls into the library from inside an op: each refused, nothing changed. */
static void rg_reenter(void)
{
    struct lapict_timer before = *rg.t;
    struct lapict_stats st;
    uint64_t v64 = 1;
    uint32_t v32 = 1;

    RG_TRACE("# re-entry from inject\n");
    RG_CHECK(lapict_irq_window_open(rg.t) == LAPICT_E_REENTRY,
             "re-entry: irq_window_open not refused");
    RG_CHECK(lapict_expire(rg.t) == LAPICT_E_REENTRY,
             "re-entry: expire not refused");
    RG_CHECK(lapict_before_guest_entry(rg.t) == LAPICT_E_REENTRY,
             "re-entry: before_guest_entry not refused");
    RG_CHECK(lapict_tmict_write(rg.t, 1) == LAPICT_E_REENTRY,
             "re-entry: TMICT write not refused");
    RG_CHECK(lapict_msr_write(rg.t, LAPICT_MSR_TSC_DEADLINE, 1) ==
                 LAPICT_E_REENTRY,
             "re-entry: deadline write not refused");
    RG_CHECK(lapict_xapic_read(rg.t, LAPICT_XAPIC_TMCCT, &v32) ==
                 LAPICT_E_REENTRY,
             "re-entry: TMCCT read not refused");
    RG_CHECK(lapict_msr_read(rg.t, LAPICT_MSR_TSC_DEADLINE, &v64) ==
                 LAPICT_E_REENTRY,
             "re-entry: deadline read not refused");
    RG_CHECK(lapict_stats_get(rg.t, &st, sizeof(st)) == LAPICT_E_REENTRY,
             "re-entry: stats not refused");
    RG_CHECK(memcmp(&before, rg.t, sizeof(before)) == 0,
             "re-entry changed the instance");
}

/* The host has answered an inject of @vector: @ok if it accepted it. */
static void rg_injected(uint8_t vector, bool ok)
{
    struct rg_oracle *o = &rg.o;
    struct rg_event *ev;

    if (ok && rg.leap && rg.sim.now_ns > UINT64_MAX - rg.leap) {
        /* Not where the simulated clock would wrap: its run_until() in
         * progress would then take the old target for 2^63 ns ahead and
         * run every periodic callback up to its guard (slow, not wrong). */
        rg.leap = 0;
    }
    if (ok && rg.leap) {
        /* The host clock leaps before the guest is entered. */
        RG_TRACE("# host clock leaps by %llu inside inject\n", RG_ULL(rg.leap));
        rg.sim.now_ns += rg.leap;
        rg.leap = 0;
        rg.wild = true;
    }
    if (!ok || rg.wild) {
        if (ok)
            o->inflight++;
        return;
    }
    rg_advance(o, rg.sim.now_ns);
    RG_CHECK(vector == (o->lvtt & 0xFF) && vector >= 16 && !(o->lvtt & RG_MASK),
             "injected vector %u, LVTT 0x%x", vector, o->lvtt);
    ev = rg_event(RG_EV_INJ, vector, rg.sim.now_ns);
    ev->aux = rg.lib_armed ? rg.lib_target : ~0ull;
    if (o->credits > 0) {
        o->credits--;
    } else {
        /* Nothing due: only legal as an advanced injection, which must be
         * followed by its expiry before the guest sees it (below). */
        fz_u128 next = rg_next(o);
        uint64_t now = rg.sim.now_ns;

        RG_CHECK(!o->preinj,
                 "second injection at %llu with no expiry due "
                 "(twice?)",
                 RG_ULL(rg.sim.now_ns));
        /* Ahead by at most this instance's advance (a deadline's instant
         * as estimated: one TSC period more); a periodic timer whose next
         * period is not longer than the advance (>= 1 ns) never. */
        RG_CHECK(next != ~(fz_u128)0 && next > now &&
                     next - now <= (fz_u128)rg_adv_max() + rg.dl_slack,
                 "injection at %llu with nothing due: the next expiry is "
                 "at %llu, the advance at most %u ns",
                 RG_ULL(now),
                 RG_ULL(next == ~(fz_u128)0 ? UINT64_MAX : (uint64_t)next),
                 rg_adv_max());
        RG_CHECK(!o->running || !rg_periodic(o) ||
                     rg_ns_for(o, o->e + o->tmict) - rg_ns_for(o, o->e) > 1,
                 "periodic expiry at %llu injected ahead although its "
                 "period is %llu ns",
                 RG_ULL((uint64_t)next),
                 RG_ULL((uint64_t)(rg_ns_for(o, o->e + o->tmict) -
                                   rg_ns_for(o, o->e))));
        o->preinj = true;
        ev->ahead = true;
    }
    o->inflight++;
}

/* Before an op reaches the host. */
static void rg_on_trace(void *arg, enum lapict_sim_op op, uint64_t in)
{
    (void)arg;
    if (op == LAPICT_SIM_OP_SPIN) {
        rg_event(RG_EV_SPIN, 0, in);
    } else if (op == LAPICT_SIM_OP_INJECT && rg.reenter) {
        rg.reenter = false;
        rg_reenter();
    }
}

/* After the host has answered an op: the host timer the library holds, and
 * the oracle's account of an injection. */
static void rg_on_after(void *arg, enum lapict_sim_op op, uint64_t in,
                        uint64_t answer)
{
    (void)arg;
    switch (op) {
    case LAPICT_SIM_OP_SW_ARM:
    case LAPICT_SIM_OP_HV_ARM:
        if (op == LAPICT_SIM_OP_SW_ARM || answer) {
            rg.lib_armed = true;
            rg.lib_target = in;
        }
        rg_one_timer();
        break;
    case LAPICT_SIM_OP_SW_CANCEL:
    case LAPICT_SIM_OP_HV_CANCEL:
        rg.lib_armed = false;
        break;
    case LAPICT_SIM_OP_INJECT:
        rg_injected((uint8_t)in, answer != 0);
        break;
    default:
        break;
    }
}

/* Bind @t to the host through slot @k's wrapper, less the ops in @absent. */
static int rg_bind(struct lapict_timer *t, size_t k, uint32_t absent)
{
    struct lapict_sim_wrap *w = &rg.wrap[k];

    rg.absent[k] = absent;
    lapict_sim_wrap_init(w, &lapict_sim_ops, &rg.sim, absent);
    w->trace = rg_on_trace;
    w->after = rg_on_after;
    return lapict_init(t, &rg.cfg[k], &w->ops, w);
}

static void rg_on_deliver(void *arg, uint64_t when, uint8_t vector)
{
    struct lapict_stats st = {0};
    struct rg_oracle *o = &rg.o;
    uint64_t now = rg.sim.now_ns;

    (void)arg;
    lapict_stats_get(rg.t, &st,
                     sizeof(st)); /* the advance right after this entry */
    rg_event(RG_EV_DLV, vector, when)->aux = st.advance_ns;
    RG_TRACE("# delivered %u at %llu, advance %u\n", vector, RG_ULL(when),
             st.advance_ns);
    if (rg.wild)
        return;
    rg_advance(o, now);
    RG_CHECK(o->inflight > 0, "delivery of %u without an injection", vector);
    RG_CHECK(!o->preinj,
             "vector %u reaches the guest at %llu, before its expiry "
             "instant %llu",
             vector, RG_ULL(now), RG_ULL(rg_next(o)));
    /* Not late: the first delivery after an owed expiry comes with the
     * host callback for it (at most the host latency after its instant),
     * or at the end of a stall that held the host; never held back by a
     * wait for a later expiry injected ahead. */
    if (o->owed && now >= o->owed_x && o->owed_x >= o->window_since &&
        o->missed != LAPICT_MISSED_DROP) {
        fz_u128 by = o->owed_x + rg.sim.cfg.host_latency_ns + rg.dl_slack;
        RG_CHECK(now <= by || now <= rg.stall_end,
                 "expiry at %llu delivered at %llu, later than the host "
                 "latency allows (%llu)",
                 RG_ULL((uint64_t)o->owed_x), RG_ULL(now),
                 RG_ULL(rg.sim.cfg.host_latency_ns));
        o->owed = false;
    }
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
        rg.stall_batch = true;
        rg.stall_end = to;
        lapict_sim_stall(&rg.sim, to - now);
        rg_advance(&rg.o, rg.sim.now_ns);
        rg.stall_batch = false;
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
    /* No IA32_TSC_DEADLINE without the CPUID bit: RDMSR is #GP. */
    RG_CHECK(
        rc == (which == 4 && how != 0 && !o->dl_ok ? LAPICT_E_GP : LAPICT_OK),
        "register read failed: %d", rc);
    rg_event(RG_EV_READ, (uint8_t)which, v);
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
        /* The SVR's write acts (software enable): not a plain NOREG. */
        if (off == LAPICT_XAPIC_LVTT || off == LAPICT_XAPIC_TMICT ||
            off == LAPICT_XAPIC_TMCCT || off == LAPICT_XAPIC_TDCR ||
            off == LAPICT_XAPIC_SVR)
            off = 0x3F0;
        rc = (c & 4) ? lapict_xapic_write(rg.t, off, fz_u32(in))
                     : lapict_xapic_read(rg.t, off, &v32);
        RG_CHECK(rc == LAPICT_E_NOREG, "xAPIC 0x%x: %d, not NOREG", off, rc);
        break;
    case 1:
        msr = (c & 8) ? fz_u32(in) : 0x800u + fz_u8(in);
        if (msr == LAPICT_MSR_X2APIC_LVTT || msr == LAPICT_MSR_X2APIC_TMICT ||
            msr == LAPICT_MSR_X2APIC_TMCCT || msr == LAPICT_MSR_X2APIC_TDCR ||
            msr == LAPICT_MSR_X2APIC_SVR || msr == LAPICT_MSR_TSC_DEADLINE)
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

/* Statistics restart with a new instance state: count from here. */
static void rg_exp_rebase(void)
{
    struct lapict_stats st;

    rg_advance(&rg.o, rg.sim.now_ns);
    if (lapict_stats_get(rg.t, &st, sizeof(st)) == LAPICT_OK) {
        rg.o.exp_base = rg.o.exp_all;
        rg.o.exp_base_lib = st.expiries;
    }
}

/* A fresh instance in the slot other than the current one, on @cfg, with
 * a host that lacks the ops in @absent. */
static struct lapict_timer *rg_fresh(const struct lapict_config *cfg,
                                     uint32_t absent)
{
    size_t k = rg.t == &rg.timers[0] ? 1 : 0;
    struct lapict_timer *n = &rg.timers[k];
    int rc;

    rg.cfg[k] = *cfg;
    rc = rg_bind(n, k, absent);
    RG_CHECK(rc == LAPICT_OK, "init: %d", rc);
    /* A new instance has no host timer armed (as the library sees it). */
    rg.lib_armed = false;
    if (rg.sim.blocked)
        lapict_vcpu_blocking(n); /* the destination vCPU is halted too */
    return n;
}

static void rg_save_restore(bool fresh)
{
    uint8_t blob[LAPICT_STATE_SIZE];
    struct lapict_timer *n = rg.t;
    int rc;

    rc = lapict_state_save(rg.t, blob, sizeof(blob));
    RG_CHECK(rc == LAPICT_OK, "save: %d", rc);
    rg_enter();
    if (rg.pass)
        return; /* the twin is not migrated */
    rg.log->migrated = true;
    if (fresh) {
        /* The old instance is gone with its host timers (as a migration). */
        lapict_sim_drop_timers(&rg.sim);
        n = rg_fresh(&rg.cfg[rg.t - rg.timers], rg.absent[rg.t - rg.timers]);
        lapict_sim_attach(&rg.sim, n);
    }
    rc = lapict_state_restore(n, blob, sizeof(blob));
    RG_CHECK(rc == LAPICT_OK || rg.wild,
             "restore of a blob just saved: %d (%s)", rc, lapict_strerror(rc));
    /* The restored instance is the one the ops (and a re-entering inject)
     * act on from here. */
    rg.t = n;
    rg_exp_rebase();
    if (rg.sim.window_open)
        lapict_irq_window_open(n); /* what state.h asks after a restore */
    rg_enter();
}

/* Rejected restore codes (state.h). */
static bool rg_state_error(int rc)
{
    return rc == LAPICT_E_STATE_SIZE || rc == LAPICT_E_STATE_MAGIC ||
           rc == LAPICT_E_STATE_VERSION || rc == LAPICT_E_STATE_CHECKSUM ||
           rc == LAPICT_E_STATE_FIELD || rc == LAPICT_E_STATE_CONFIG;
}

/*
 * The destination of a migration in the middle of a servicing: the
 * source's configuration with another advance (@m bits 0-2) and, with bit
 * 3, the spin_until op toggled (a host without one cannot wait before
 * entry). Nothing the oracle models changes.
 */
static void rg_dst_config(uint8_t m, struct lapict_config *c, uint32_t *absent)
{
    /* Per @m & 7: mode, advance_ns, advance_max_ns; 0 and 7 keep it. */
    static const uint32_t adv[8][3] = {
        {0, 0, 0},
        {LAPICT_ADVANCE_OFF, 0, 0},
        {LAPICT_ADVANCE_FIXED, 1000, 0},
        {LAPICT_ADVANCE_ADAPTIVE, 500, 1000},
        {LAPICT_ADVANCE_FIXED, 1, 0},
        {LAPICT_ADVANCE_FIXED, 20000, 0},
        {LAPICT_ADVANCE_ADAPTIVE, 0, LAPICT_ADVANCE_NS_LIMIT},
        {0, 0, 0}};
    if ((m & 7) != 0 && (m & 7) != 7)
        fz_advance(c, adv[m & 7][0], adv[m & 7][1], adv[m & 7][2]);
    if (m & 8)
        *absent ^= LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_SPIN);
}

/*
 * Run the host's next timer callback, but stop before the guest entry
 * that follows it: an expiry it injected (ahead of its instant, with the
 * advance) is in the host's interrupt controller and a latency sample is
 * in flight. False (nothing run) when no host timer is armed or it lies
 * beyond what a time step may cover.
 */
static bool rg_callback_held(void)
{
    struct lapict_sim *s = &rg.sim;
    bool sw = s->sw_armed, hv = s->hv_armed && !s->blocked;
    uint64_t at, hv_at = s->hv_at_ns + s->cfg.host_latency_ns;

    if ((!sw && !hv) || rg.wild)
        return false;
    sw = sw && (!hv || (int64_t)(s->sw_fire_ns - hv_at) <= 0);
    at = sw ? s->sw_fire_ns : hv_at;
    if ((int64_t)(at - s->now_ns) < 0)
        at = s->now_ns;
    if (at > rg.horizon || rg_expiries_until(&rg.o, at) > RG_MAX_STEP_EXPIRIES)
        return false;
    RG_TRACE("at %llu\n# host timer callback, the guest entry held\n",
             RG_ULL(at));
    /* aux 1: a re-check at the host horizon (ops.h), not the advance
     * point of an instant: the next one lies beyond any advance. */
    {
        fz_u128 next = rg_next(&rg.o);
        rg_event(RG_EV_HELD, 0, at)->aux =
            next == ~(fz_u128)0 ||
            next > (fz_u128)at + 2u * LAPICT_ADVANCE_NS_LIMIT;
    }
    if (sw)
        s->sw_armed = false;
    else
        s->hv_armed = false;
    s->now_ns = at;
    s->expire_calls++;
    lapict_expire(rg.t);
    return true;
}

/*
 * A migration between a host timer callback and the guest entry after it
 * (a save right after a pre-injection), into a destination whose advance
 * may differ (rg_dst_config()). The host's interrupt controller (the
 * simulated queue) travels with the blob, as a real migration carries the
 * IRR. The destination may refuse a blob that holds an expiry injected
 * ahead (LAPICT_E_STATE_*, instance unchanged): the source then resumes.
 * Accepted, the guest must still not see that expiry before its instant
 * (rg_on_deliver()) nor get it twice (rg_injected()).
 */
static void rg_held_migration(uint8_t m)
{
    uint8_t blob[LAPICT_STATE_SIZE], q[LAPICT_SIM_QUEUE];
    struct lapict_config cfg = rg.cfg[rg.t - rg.timers];
    uint32_t absent = rg.absent[rg.t - rg.timers];
    struct lapict_timer *n, before;
    struct lapict_sim src_sim, dst_sim;
    uint64_t injects = rg.sim.injects, target;
    uint32_t nq;
    bool same, armed;
    int rc;

    rg.synced = rg_callback_held();
    rg_dst_config(m, &cfg, &absent);
    same = memcmp(&cfg, &rg.cfg[rg.t - rg.timers], sizeof(cfg)) == 0 &&
           absent == rg.absent[rg.t - rg.timers];
    RG_TRACE("# migration before that entry:%s%s\n",
             same ? " same configuration" : " advance changed",
             (m & 8) ? " (spin_until toggled)" : "");
    rc = lapict_state_save(rg.t, blob, sizeof(blob));
    RG_CHECK(rc == LAPICT_OK, "save: %d", rc);
    if (rg.pass || rg.wild) {
        rg_enter(); /* the twin is not migrated */
        return;
    }
    rg.log->migrated = true;
    src_sim = rg.sim;
    armed = rg.lib_armed;
    target = rg.lib_target;
    nq = rg.sim.nqueued;
    memcpy(q, rg.sim.queued, nq);
    lapict_sim_drop_timers(&rg.sim);
    n = rg_fresh(&cfg, absent);
    lapict_sim_attach(&rg.sim, n);
    memcpy(&before, n, sizeof(before));
    memcpy(&dst_sim, &rg.sim, sizeof(dst_sim));
    rc = lapict_state_restore(n, blob, sizeof(blob));
    if (rc != LAPICT_OK) {
        RG_CHECK(rg_state_error(rc) && (blob[20] & 0x20),
                 "restore of a blob just saved refused: %d (%s)", rc,
                 lapict_strerror(rc));
        RG_CHECK(memcmp(&before, n, sizeof(before)) == 0,
                 "a refused restore (%d) changed the instance", rc);
        RG_CHECK(memcmp(&dst_sim, &rg.sim, sizeof(dst_sim)) == 0,
                 "a refused restore (%d) called host ops", rc);
        RG_TRACE("# refused (%s): the source resumes\n", lapict_strerror(rc));
        rg.sim = src_sim;
        rg.lib_armed = armed;
        rg.lib_target = target;
        rg_enter();
        return;
    }
    /*
     * From here the twin (which entered without migrating) may differ by
     * design: in everything when the advance changed, in the tuner when a
     * latency sample was in flight (the blob does not carry one, state.h).
     */
    if (!same && rg.log->cut_all > rg.step)
        rg.log->cut_all = rg.step;
    if (rg.sim.injects != injects && rg.log->cut_tuner > rg.step)
        rg.log->cut_tuner = rg.step;
    rg.sim.nqueued = nq;
    memcpy(rg.sim.queued, q, nq);
    rg.t = n;
    rg_exp_rebase();
    if (rg.sim.window_open)
        lapict_irq_window_open(n);
    rg_enter();
}

static void rg_after_step(void)
{
    struct rg_oracle *o = &rg.o;
    struct lapict_stats st;
    uint64_t now = rg.sim.now_ns;

    rg_advance(o, now);
    rg_one_timer();
    RG_CHECK(lapict_stats_get(rg.t, &st, sizeof(st)) == LAPICT_OK, "stats");
    rg.log->steps = ++rg.step;
    if (rg.wild) {
        /* O(1) servicing against the library's own expiry count. */
        uint64_t calls = rg.sim.expire_calls - rg.wild_calls;
        uint64_t exp = st.expiries - rg.wild_expiries;

        /* Off the oracle's map, and a restore there may be refused. */
        if (rg.log->cut_all > rg.step - 1)
            rg.log->cut_all = rg.step - 1;
        RG_CHECK(calls <= 16 + 2 * (fz_u128)exp,
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
    /* Brought up to now, the library has counted every expiry, saturating
     * at 2^64 - 1 (a stall at 10 GHz passes 2^64 ticks), never wrapping. */
    if (rg.synced) {
        fz_u128 want = (fz_u128)o->exp_base_lib + (o->exp_all - o->exp_base);
        if (want > UINT64_MAX)
            want = UINT64_MAX;
        RG_CHECK(st.expiries == (uint64_t)want,
                 "expiries statistic %llu, the oracle counts %llu",
                 RG_ULL(st.expiries), RG_ULL((uint64_t)want));
    }
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

/*
 * A register write between a host timer callback and the guest entry after
 * it (opcode 0xBE): the write is emulated while an expiry the callback
 * injected ahead (advance) is already in the host's interrupt controller,
 * as when the physical timer interrupt lands between a VM exit and the
 * emulation of the write. A write that changes that expiry (its instant,
 * vector or mask) may first move the clock to its instant (lib/regs.c), so
 * the oracle applies the write at the time it returned; deliveries are
 * checked as ever (never before the instant, never twice). A deadline
 * written here lies beyond any advance, so that the write itself injects
 * nothing the oracle does not know yet.
 */
static void rg_held_write(struct fz_in *in)
{
    struct rg_oracle *o = &rg.o;
    uint8_t w = fz_u8(in);
    uint64_t tw, v64 = 0;
    uint32_t v = 0;
    int rc = LAPICT_OK;

    /* Nothing run: nothing brought the library up to now. */
    if (!rg_callback_held()) {
        rg.synced = false;
        return;
    }
    switch (w % 6) {
    case 1:
        v = rg_count_value(in);
        RG_TRACE("write tmict %u\n", v);
        rc = rg_write(w >> 4, LAPICT_XAPIC_TMICT, LAPICT_MSR_X2APIC_TMICT, v,
                      lapict_tmict_write);
        break;
    case 2:
        v = fz_u8(in) & 0xBu;
        RG_TRACE("write tdcr 0x%x\n", v);
        rc = rg_write(w >> 4, LAPICT_XAPIC_TDCR, LAPICT_MSR_X2APIC_TDCR, v,
                      lapict_tdcr_write);
        break;
    case 3:
        RG_TRACE("write svr 0x%x\n", (w & 0x10) ? 0x100 : 0);
        rc = lapict_svr_write(rg.t, w & 0x10);
        break;
    case 4:
        if (!(w & 0x10)) {
            /* Beyond the TSC where the write may land: now, or the armed
             * deadline, whose instant a write may wait for. */
            uint64_t tsc = rg_tsc(o, rg.sim.now_ns);
            if (o->dl_armed && o->d > tsc)
                tsc = o->d;
            v64 = tsc + 1u +
                  (uint64_t)((fz_u128)20000000u * o->tsc_khz / 1000000u) +
                  ((uint64_t)fz_u16(in) << 8);
            /* Past the wrap every value has passed: disarm instead. */
            if (v64 <= tsc)
                v64 = 0;
        }
        RG_TRACE("write tsc_deadline %llu\n", RG_ULL(v64));
        rc = lapict_tsc_deadline_write(rg.t, v64);
        if (!o->dl_ok) {
            RG_CHECK(rc == LAPICT_E_GP, "deadline write: %d", rc);
            rg_enter();
            rg.synced = false;
            return;
        }
        break;
    default:
        /* Any value (0), or the one LVTT holds: a write that changes
         * nothing. */
        v = w % 6 == 0 ? rg_lvtt_value(in) : o->lvtt;
        RG_TRACE("write lvtt 0x%x\n", v);
        rc = rg_write(w >> 4, LAPICT_XAPIC_LVTT, LAPICT_MSR_X2APIC_LVTT, v,
                      lapict_lvtt_write);
        break;
    }
    RG_CHECK(rc == LAPICT_OK, "held write %u: %d", w % 6, rc);
    tw = rg.sim.now_ns;
    rg_advance(o, tw);
    rg_enter();
    if (rg.wild)
        return;
    switch (w % 6) {
    case 1:
        rg_o_tmict(o, tw, v);
        break;
    case 2:
        rg_o_tdcr(o, tw, v);
        break;
    case 3:
        if (!(w & 0x10))
            o->lvtt |= RG_MASK;
        o->svr_en = w & 0x10;
        break;
    case 4:
        rg_o_deadline(o, tw, v64);
        break;
    default:
        rg_o_lvtt(o, tw, v);
        break;
    }
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
        if (lapict_stats_get(rg.t, &st, sizeof(st)) == LAPICT_OK)
            rg.wild_expiries = st.expiries;
        rg.wild_calls = rg.sim.expire_calls;
    }
    /* Every op but time steps, window closing, TMICT/TDCR reads, reset
     * and the accesses that are not the timer's brings the library up to
     * now: set where it does not. */
    rg.synced = true;
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
        rg_event(RG_EV_READ, 0, lapict_lvtt_read(rg.t));
        rg_enter();
        if (!rg.wild)
            rg_o_deadline(o, now, v64);
        rc = (op & 0x10) ? lapict_msr_write(rg.t, LAPICT_MSR_TSC_DEADLINE, v64)
                         : lapict_tsc_deadline_write(rg.t, v64);
        /* Without the CPUID bit the MSR does not exist: #GP, no change
         * (rg_o_deadline() ignores it outside the mode, which is never
         * entered then). */
        RG_CHECK(rc == (o->dl_ok ? LAPICT_OK : LAPICT_E_GP),
                 "deadline write: %d", rc);
        /* A refused access does not bring the library up to now (as for
         * any access that is not the timer's), and the entry after the
         * LVTT read above may have moved the clock (an advance's spin). */
        if (rc == LAPICT_E_GP)
            rg.synced = false;
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
        v = fz_u8(in);
        /* TMICT and TDCR reads do not bring the library up to now, nor
         * does a deadline RDMSR refused with #GP (no CPUID bit). */
        rg.synced = (op >> 4) % 5 != 1 && (op >> 4) % 5 != 3 &&
                    !((op >> 4) % 5 == 4 && v % 3 != 0 && !o->dl_ok);
        rg_check_regs(op >> 4, v);
        break;
    case 9:
    case 10:
        rg.synced = false;
        rg_time_step(in, false);
        break;
    case 11:
        rg.synced = false;
        switch ((op >> 4) & 3) {
        case 1:
            /* A stall of about 2^63 ns (the horizon rule's edge). */
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
            rg.synced = false;
            o->window_open = false;
            lapict_sim_window(&rg.sim, false);
        }
        break;
    case 14:
        switch ((op >> 4) & 3) {
        case 0:
            RG_TRACE("save_restore\n");
            rg.synced = false;
            rg_save_restore(true);
            break;
        case 1:
            rg.synced = false;
            if ((op & 0xC0) == 0x80) {
                /* 0x9E: in the middle of a servicing, another advance. */
                rg_held_migration(fz_u8(in));
                break;
            }
            RG_TRACE("# save, restore onto the same instance\n");
            rg_save_restore(false);
            break;
        case 2:
            RG_TRACE("reset\n");
            rg.synced = false;
            rc = lapict_reset(rg.t);
            RG_CHECK(rc == LAPICT_OK, "reset: %d", rc);
            rg_enter();
            if (!rg.wild)
                rg_o_reset(o);
            rg_exp_rebase(); /* what was due and unserviced is gone */
            break;
        default:
            if (op & 0x40) {
                /* The next inject calls back into the library. */
                rg.synced = false;
                rg.reenter = true;
                break;
            }
            if (op & 0x80) {
                /* 0xBE: a write between a callback and its entry. */
                rg_held_write(in);
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
        rg.synced = false;
        rg_bad_access(in);
        break;
    }
    rg_after_step();
}

/* ---- configuration --------------------------------------------------------
 */

static void rg_setup(struct fz_in *in, int pass)
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
    struct lapict_config *c = &rg.cfg[0];
    const struct lapict_ops *ops = &rg.wrap[0].ops;
    uint32_t absent = 0;
    struct rg_oracle *o = &rg.o;
    uint8_t b0 = fz_u8(in), b1 = fz_u8(in), b2 = fz_u8(in), b3 = fz_u8(in);
    uint8_t b4 = fz_u8(in), b5 = fz_u8(in), b6 = fz_u8(in), b7 = fz_u8(in);
    uint8_t b8 = fz_u8(in), b9 = fz_u8(in);
    uint64_t base;
    int rc;

    memset(&rg, 0, sizeof(rg));
    rg.pass = pass;
    rg.log = &rg_logs[pass];
    rg.log->n = rg.log->steps = 0;
    rg.log->cut_all = rg.log->cut_tuner = UINT32_MAX;
    rg.log->migrated = false;
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
    if (!(b9 & 0x20)) {
        /*
         * Header byte 9 bit 5 clear: a run spans at most 2^61 bus ticks
         * (the product truncated to 64 bits, as the checked-in inputs were
         * made with: on the slowest buses that is an arbitrary short
         * span). Set: 2^62 ns at any bus rate, which at 10 GHz and divide
         * 1 are 4.6 * 10^19 ticks, past the 2^64 of a tick counter, so
         * counts of expiries and statistics meet saturation (the oracle
         * counts in 128 bits).
         */
        uint64_t room =
            (uint64_t)(((fz_u128)1 << 61) * 1000000000u / c->bus_hz);
        if (rg.horizon - base > room)
            rg.horizon = base + room;
    }
    rg.sim.now_ns = base;
    /* Without tsc_to_host_ns the library may be one TSC period late. */
    rg.dl_slack = 0;

    /* (b8 & 3) == 0: no hardware timer ops; 3: the ops, refused by the
     * host (sc.hv_timer off). */
    if ((b8 & 3) == 0)
        absent |= LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_ARM) |
                  LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_HV_CANCEL);
    if (b3 & 0x40) {
        absent |= LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_TSC_TO_NS);
        rg.dl_slack = 1000000u / c->tsc_khz + 2;
    }
    if (b3 & 0x80)
        absent |= LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_SPIN);
    if (b3 & 2)
        absent |= LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_REPORT);

    rg.t = &rg.timers[0];
    rc = rg_bind(rg.t, 0, absent);
    RG_CHECK(rc == LAPICT_OK, "init: %d", rc);
    lapict_sim_attach(&rg.sim, rg.t);

    if (rg_verbose < 0)
        rg_verbose =
            getenv("LAPICT_FUZZ_TRACE") ? atoi(getenv("LAPICT_FUZZ_TRACE")) : 0;
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
             ops->hv_timer_arm ? "" : " no-hv",
             ops->tsc_to_host_ns ? "" : " no-tsc_to_host_ns",
             ops->spin_until ? "" : " no-spin", ops->report ? "" : " no-report",
             RG_ULL(base));

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

static uint32_t rg_min(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static const char *rg_ev_text(const struct rg_event *e, char *buf, size_t n)
{
    static const char *const reg[5] = {"lvtt", "tmict", "tmcct", "tdcr",
                                       "tsc_deadline"};

    if (!e) {
        snprintf(buf, n, "nothing");
        return buf;
    }
    switch (e->kind) {
    case RG_EV_READ:
        snprintf(buf, n, "read %s 0x%llx (step %u)", reg[e->which % 5],
                 RG_ULL(e->val), e->step);
        break;
    case RG_EV_DLV:
        snprintf(buf, n, "delivery of %u at %llu, advance %llu (step %u)",
                 e->which, RG_ULL(e->val), RG_ULL(e->aux), e->step);
        break;
    case RG_EV_INJ:
        snprintf(buf, n,
                 "%s injection of %u at %llu, host timer %llu (step %u)",
                 e->ahead ? "an early" : "an", e->which, RG_ULL(e->val),
                 RG_ULL(e->aux), e->step);
        break;
    case RG_EV_SPIN:
        snprintf(buf, n, "a spin to %llu (step %u)", RG_ULL(e->val), e->step);
        break;
    default:
        snprintf(buf, n, "a held host callback at %llu (step %u)",
                 RG_ULL(e->val), e->step);
        break;
    }
    return buf;
}

/*
 * The run (pass 0) against its twin (pass 1: the same input, every
 * save/restore skipped): a save and restore at one instant must change
 * nothing the guest or the tuner can observe. Both logs are walked in
 * step until they first differ, which is a failure except where the
 * twins may part by design:
 * - an injection ahead of its instant in one twin only, or one at the same
 *   time after a host timer armed for another time (the due time of its
 *   tuner sample): the blob carries neither the last expiry instant, which
 *   holds back an injection ahead within the advance of the previous
 *   expiry, nor that an injection ahead was just tried, so a restored
 *   instance arms its host timer at the advance point and may inject
 *   ahead where its twin waits for the instant (lib/state.c). The wait
 *   before entry then moves the guest's timeline, so nothing after it is
 *   compared; likewise spins to other targets where a deadline's instant
 *   is estimated (no tsc_to_host_ns);
 * - a host callback held before entry (rg_callback_held()) that comes
 *   sooner after a save/restore: a restore within the advance of an
 *   instant arms the host timer for now (lib/timer.h, lapict__arm_next(),
 *   to give an injection ahead its chance), where the twin's timer, past
 *   its advance point already, waits for the instant. The held step then
 *   ends at another time, and so does the rest of the input. So does one
 *   in the migrated run only, where the twin's later callback lies beyond
 *   what the step may run (rg_callback_held() refuses it). One that
 *   comes later, or in the twin only, is a failure (a restored instance
 *   never arms later), except with a host latency (the twin's late
 *   callback for an expiry that the restore already serviced) or with a
 *   deadline's instant estimated (the estimate rounds from the TSC read
 *   at the arm, so a restore's may land 1 ns either side);
 * - an injection of a due interrupt at another time or not at all, with a
 *   host latency (a due expiry the late callback has not serviced yet
 *   travels as pending and is delivered at the restore, earlier, where the
 *   twin may still hold it when the window closes; coalesce and drop then
 *   count differently) or with a deadline estimated: from there only
 *   register reads are compared, without LVTT's delivery-status bit, which
 *   `drop` with a latency never compares (how many expiries a late
 *   servicing takes decides whether one is held);
 * - the advance after a migration that dropped a latency sample in flight
 *   (cut_tuner), and everything after one that changed the advance
 *   (cut_all; also wild clocks and full logs).
 */
/*
 * An injection ahead of its instant: from there the entry's wait moves
 * one timeline and not the other, so the twins part by design, also
 * where only reads were still compared (a register access that an
 * injection makes re-enter the library then lands on another step).
 */
static bool rg_ev_ahead(const struct rg_event *e)
{
    return e->kind == RG_EV_INJ && e->ahead;
}

/*
 * A step whose host time the library's host timer sets: never skipped,
 * also where only reads are compared, since from one at another time the
 * twins run the rest of the input at other instants.
 */
static bool rg_ev_kept(const struct rg_event *e)
{
    return e->kind == RG_EV_READ || e->kind == RG_EV_HELD || rg_ev_ahead(e);
}

/*
 * Whether a held host callback at another time, or in one twin only,
 * parts the twins by design: sooner in the migrated run (@x), also where
 * the twin's, later, is beyond what the step may run; either way with a
 * host latency or a deadline's instant estimated (@loose), or where one
 * is a re-check at the host horizon (the horizon counts from the arm, and
 * a restore arms anew).
 */
static bool rg_held_parts(const struct rg_event *x, const struct rg_event *y,
                          bool loose)
{
    bool hx = x && x->kind == RG_EV_HELD, hy = y && y->kind == RG_EV_HELD;

    /* A re-check at the horizon: a restore counts it from its own now. */
    if ((hx && x->aux) || (hy && y->aux))
        return true;
    /* Sooner: at an earlier time, or, where the clock stood still
     * between them (equal times), at an earlier step. */
    if (hx && hy)
        return x->val < y->val || (x->val == y->val && x->step < y->step) ||
               loose;
    /* In the migrated run only: sooner there, and the twin's later one
     * lay beyond what that step runs (rg_callback_held()). */
    if (hx)
        return !y || y->step >= x->step;
    if (hy)
        return loose && (!x || x->step >= y->step);
    return false;
}

static void rg_twin_compare(void)
{
    const struct rg_log *a = &rg_logs[0], *b = &rg_logs[1];
    uint32_t lim, tlim, ia = 0, ib = 0;
    bool lat = rg.sim.cfg.host_latency_ns != 0, est = rg.dl_slack != 0;
    bool reads_only = false;
    char ta[160], tb[160];

    lim = rg_min(rg_min(a->steps, b->steps), rg_min(a->cut_all, b->cut_all));
    tlim = rg_min(lim, rg_min(a->cut_tuner, b->cut_tuner));
    for (;;) {
        const struct rg_event *x = NULL, *y = NULL;
        bool same;

        while (ia < a->n && a->ev[ia].step < lim && reads_only &&
               !rg_ev_kept(&a->ev[ia]))
            ia++;
        while (ib < b->n && b->ev[ib].step < lim && reads_only &&
               !rg_ev_kept(&b->ev[ib]))
            ib++;
        if (ia < a->n && a->ev[ia].step < lim)
            x = &a->ev[ia];
        if (ib < b->n && b->ev[ib].step < lim)
            y = &b->ev[ib];
        if (!x && !y) {
            if (rg_verbose > 0)
                fprintf(stderr, "# twin: the same up to step %u%s\n", lim,
                        reads_only ? " (reads only after a due injection "
                                     "moved)"
                                   : "");
            return;
        }
        same = x && y && x->kind == y->kind && x->which == y->which &&
               x->step == y->step;
        if (same) {
            switch (x->kind) {
            case RG_EV_READ: {
                uint64_t m =
                    x->which == 0 &&
                            (reads_only ||
                             (lat && rg.o.missed == LAPICT_MISSED_DROP))
                        ? ~0x1000ull
                        : ~0ull;
                same = (x->val & m) == (y->val & m);
                break;
            }
            case RG_EV_DLV:
                same =
                    x->val == y->val && (x->aux == y->aux || x->step >= tlim);
                break;
            case RG_EV_INJ:
                same = x->val == y->val && x->aux == y->aux &&
                       x->ahead == y->ahead;
                break;
            default:
                same = x->val == y->val;
                break;
            }
        }
        if (same) {
            ia++, ib++;
            continue;
        }
        if ((x && rg_ev_ahead(x)) || (y && rg_ev_ahead(y)) ||
            (x && y && x->kind == RG_EV_INJ && y->kind == RG_EV_INJ &&
             x->val == y->val && x->which == y->which) ||
            (est && x && y && x->kind == RG_EV_SPIN && y->kind == RG_EV_SPIN) ||
            rg_held_parts(x, y, lat || est)) {
            /* The timelines part by design. */
            if (rg_verbose > 0)
                fprintf(stderr, "# twin: the same until %s / %s\n",
                        rg_ev_text(x, ta, sizeof(ta)),
                        rg_ev_text(y, tb, sizeof(tb)));
            return;
        }
        if ((lat || est) && !reads_only &&
            ((x && (x->kind == RG_EV_INJ || x->kind == RG_EV_DLV)) ||
             (y && (y->kind == RG_EV_INJ || y->kind == RG_EV_DLV)))) {
            reads_only = true;
            continue;
        }
        if (x && y && x->kind == RG_EV_DLV && y->kind == RG_EV_DLV &&
            x->val == y->val && x->which == y->which)
            fz_fail("fuzz_regs",
                    "twin: after the same samples, the advance is %llu ns "
                    "after a save/restore, %llu ns without (delivery at "
                    "%llu, step %u)",
                    RG_ULL(x->aux), RG_ULL(y->aux), RG_ULL(x->val), x->step);
        fz_fail("fuzz_regs", "twin: %s after a save/restore, %s without",
                rg_ev_text(x, ta, sizeof(ta)), rg_ev_text(y, tb, sizeof(tb)));
    }
}

int FUZZ_REGS_ENTRY(const uint8_t *data, size_t size);
int FUZZ_REGS_ENTRY(const uint8_t *data, size_t size)
{
    int pass, n;

    for (pass = 0; pass < 2; pass++) {
        struct fz_in in = {data, size, 0};

        rg_setup(&in, pass);
        for (n = 0; n < RG_MAX_OPS && fz_more(&in) && !rg.stop; n++)
            rg_step(&in);
        if (!rg_logs[0].migrated)
            return 0;
    }
    rg_twin_compare();
    return 0;
}
