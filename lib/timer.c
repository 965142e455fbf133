/* SPDX-License-Identifier: MIT */
/*
 * The APIC timer state machine (docs/spec/timer.md sections 3-7).
 *
 * A count-down is an anchor (host ns) plus the tick E of its next
 * unprocessed expiry; the tick counter is computed from the clock, so
 * TMCCT never depends on whether a host callback has run, and a periodic
 * timer reloads on its exact grid (E += N) whatever the host latency.
 * A TSC deadline is checked against the guest TSC itself, so an inexact
 * host clock can make it late but never early.
 *
 * Advance: the host timer fires `advance` ns before an instant; the
 * interrupt is then injected ahead ("pre-injected") without touching the
 * timer state, and lapict_before_guest_entry() waits for the instant and
 * only then processes the expiry, so every register stays architecturally
 * exact and the guest cannot observe the interrupt early.
 */
#include "advance.h"
#include "config.h"
#include "timer.h"

#define DIV_1E9 1000000000ull
#define DIV_1E6 1000000ull

static uint32_t mode_of(uint32_t lvtt)
{
    return lvtt & LAPICT_LVTT_MODE;
}

static bool is_periodic(const struct lapict_timer *t)
{
    return mode_of(t->lvtt) == LAPICT_LVTT_PERIODIC;
}

uint32_t lapict__tmcct(const struct lapict_timer *t, uint64_t now)
{
    uint64_t T, E = t->cd.e_tick, N = t->tmict;

    if (!(t->flags & LAPICT__F_CD_ACTIVE))
        return 0;
    T = lapict__ticks_in(t, lapict__elapsed(t, now));
    if (is_periodic(t)) {
        if (T < E) {
            uint64_t r = E - T;
            /* r > N cannot happen from guest input; a restored blob is
             * checked. Reduce anyway, without a hardware divide. */
            if (r > N)
                r = (r - 1) - lapict__udiv128(r - 1, N) * N + 1;
            return (uint32_t)r;
        }
        /* Late callback: the count already shows the reload. */
        uint64_t x = T - E;
        if (x >= N)
            x -= lapict__udiv128(x, N) * N; /* rare: several periods late */
        return (uint32_t)(N - x);
    }
    return T >= E ? 0 : (uint32_t)(E - T);
}

void lapict__set_clamp(struct lapict_timer *t, uint64_t now, bool clamp)
{
    uint32_t c;

    if (clamp == !!(t->flags & LAPICT__F_CLAMPED))
        return;
    c = lapict__tmcct(t, now); /* with the old clock */
    lapict__clamp_flag(t, clamp);
    if (t->flags & LAPICT__F_CD_ACTIVE)
        lapict__reanchor(t, now, c);
}

void lapict__disarm(struct lapict_timer *t)
{
    t->tmict = 0;
    t->deadline_tsc = 0;
    t->pending = 0;
    t->flags &=
        (uint16_t) ~(LAPICT__F_CD_ACTIVE | LAPICT__F_CD_ARMED |
                     LAPICT__F_CLAMPED | LAPICT__F_DL_ARMED | LAPICT__F_PREINJ |
                     LAPICT__F_SAMPLE | LAPICT__F_EXPIRED);
}

void lapict__guest_error(struct lapict_timer *t, int status, uint32_t detail)
{
    t->last_error = (int8_t)status;
    if (status == LAPICT_E_VECTOR)
        lapict__count(t, LAPICT__N_ILLEGAL_VECTOR);
    else if (status == LAPICT_E_MODE)
        lapict__count(t, LAPICT__N_MODE_ERRORS);
    lapict__host_report(t, status, detail);
}

void lapict__report_dropped_illegal(struct lapict_timer *t, uint64_t n)
{
    if (!n)
        return;
    lapict__count_add(t, LAPICT__N_ILLEGAL_VECTOR, n - 1u);
    lapict__guest_error(t, LAPICT_E_VECTOR, t->lvtt & LAPICT_LVTT_VECTOR);
}

/*
 * Offer pending interrupts to the host, reading mask and vector now.
 * Return whether the host took at least one.
 */
static LAPICT__HOT bool deliver(struct lapict_timer *t, bool quiet)
{
    bool took = false;

    while (t->pending) {
        uint8_t v = (uint8_t)(t->lvtt & LAPICT_LVTT_VECTOR);
        if (t->lvtt & LAPICT_LVTT_MASK) {
            lapict__count_add(t, LAPICT__N_MASKED, t->pending);
            t->pending = 0;
            break;
        }
        if (v < 16) {
            /*
             * Illegal vectors are never injected: dropped at once, whether
             * the window is open or not, and reported. A quiet settling
             * (save) only counts them; the destination reports them.
             */
            lapict__count_add(t, LAPICT__N_ILLEGAL_VECTOR, t->pending - !quiet);
            t->pending = 0;
            if (!quiet)
                lapict__guest_error(t, LAPICT_E_VECTOR, v);
            break;
        }
        if (quiet || !lapict__host_inject(t, v))
            break;
        t->pending--;
        took = true;
    }
    return took;
}

/*
 * @k expiries happened, the last at host time @instant: the missed-tick
 * policy (section 6), the one place that decides how many interrupts they
 * give. An expiry injected ahead (advance) is already in the host's hands:
 * it is the interrupt of this servicing, like one pending in the IRR, so
 * it counts as held and the policy applies to the others with it. Return
 * whether the host took an interrupt here. @quiet: offer nothing to the
 * host, leave them pending (lapict__settle(); mask and vector are read at
 * delivery, wherever that is), but drop an illegal vector's as delivery
 * would.
 */
static LAPICT__HOT bool expired(struct lapict_timer *t, uint64_t k,
                                uint64_t instant, bool quiet)
{
    uint64_t held = t->pending, total;

    lapict__count_add(t, LAPICT__N_EXPIRIES, k);
    t->last_instant_ns = instant;
    t->flags |= LAPICT__F_EXPIRED;
    if (t->flags & LAPICT__F_PREINJ) {
        t->flags &= (uint16_t)~LAPICT__F_PREINJ;
        held++;
        if (--k == 0)
            return false;
    }
    if (t->lvtt & LAPICT_LVTT_MASK) {
        lapict__count_add(t, LAPICT__N_MASKED, k);
        return false;
    }
    /* k may be saturated (a stall of 2^64 ticks or more): sums saturate. */
    total = lapict__sat_add(held, k);
    switch (t->missed) {
    case LAPICT_MISSED_CATCH_UP:
        /* Each one is delivered; the bound is on those held pending. */
        total = lapict__sat_add(t->pending, k);
        if (total > t->catch_up_max) {
            lapict__count_add(t, LAPICT__N_DROPPED, total - t->catch_up_max);
            total = t->catch_up_max;
        }
        t->pending = (uint16_t)total;
        return deliver(t, quiet);
    case LAPICT_MISSED_DROP:
        /* Several grid points in one servicing: none of them. */
        if (lapict__sat_add(k, held - t->pending) > 1) {
            lapict__count_add(t, LAPICT__N_DROPPED, k);
            return false;
        }
        if (total > 1)
            lapict__count_add(t, LAPICT__N_DROPPED, total - 1);
        break;
    default:
        if (total > 1)
            lapict__count_add(t, LAPICT__N_COALESCED, total - 1);
        break;
    }
    /* One interrupt: the one injected ahead, if any, else one pending. */
    t->pending = (uint16_t)(held > t->pending ? 0 : 1);
    return deliver(t, quiet);
}

/*
 * Slow path of a periodic expiry: the host slept through several grid
 * points, or the tick count has grown large. One computation (never a loop
 * over periods) finds the last grid point passed; then, if needed, the
 * anchor moves forward by M ticks, M a multiple of the clock's exactness
 * unit (bus_p ticks last a whole number of ns; a clamped clock's N ticks
 * last exactly min_period_ns), so every later instant is unchanged.
 * Leaves e_tick at the last grid point passed; returns how many passed.
 */
static uint64_t stalled(struct lapict_timer *t, uint64_t d)
{
    uint64_t N = t->tmict, unit, ns;
    lapict__u128 last = t->cd.e_tick, T = lapict__ticks_in_wide(t, d), m, q;

    /* All 128 bits: at a 10 GHz bus a 2^61 ns stall passes 2^64 ticks. */
    q = lapict__udiv128_wide(T - last, N);
    last += q * N;
    if (last + N >= LAPICT__REBASE_TICKS) {
        bool clamped = t->flags & LAPICT__F_CLAMPED;
        unit = clamped ? N : t->bus_p;
        m = lapict__udiv128_wide(last, unit);
        ns = clamped ? (uint64_t)m * t->min_period_ns
                     : (uint64_t)(m * ((lapict__u128)t->bus_q << t->div_shift));
        t->cd.anchor_ns += ns;
        last -= m * unit;
    }
    t->cd.e_tick = (uint64_t)last;
    return q >= UINT64_MAX ? UINT64_MAX : (uint64_t)q + 1;
}

/*
 * A wrong tsc_khz (docs/spec/timer.md section 4). The guest TSC's progress
 * since the deadline was armed is checked against what tsc_khz makes of
 * the host time that passed: off by more than 1/2^TSC_OFF_SHIFT of that
 * time plus TSC_OFF_SLACK_NS (the reads of the clock and the TSC are not
 * simultaneous), the TSC does not run at tsc_khz.
 */
#define TSC_OFF_SHIFT 6u
#define TSC_OFF_SLACK_NS 20000u
/*
 * Host timer re-arms for one deadline whose TSC was short: the first
 * DL_REARMS_FREE aim at the estimate; after them each waits at least
 * DL_REARM_FLOOR_NS, doubled per re-arm, so their number stays bounded
 * (the floor outgrows any wait within the horizon after 53 doublings).
 */
#define DL_REARMS_FREE 8u
#define DL_REARM_FLOOR_NS 1000u

/* Record a TSC found off tsc_khz: the rate measured, reported once. */
static __attribute__((noinline)) void dl_rate_off(struct lapict_timer *t,
                                                  uint64_t el, uint64_t ticks)
{
    uint64_t khz =
        el ? lapict__udiv128((lapict__u128)ticks * DIV_1E6, el) : UINT64_MAX;

    /* 0 keeps meaning "none measured": a stopped TSC reads 1 kHz. */
    t->tsc_khz_measured = khz > UINT32_MAX ? UINT32_MAX
                          : khz == 0       ? 1u
                                           : (uint32_t)khz;
    if (t->flags & LAPICT__F_TSC_REPORTED)
        return;
    t->flags |= LAPICT__F_TSC_REPORTED;
    lapict__host_report(t, LAPICT_E_TSC_RATE, t->tsc_khz_measured);
}

/* Check the TSC's rate over the armed deadline, at @now (TSC @tsc). */
static LAPICT__HOT void dl_rate_check(struct lapict_timer *t, uint64_t now,
                                      uint64_t tsc)
{
    uint64_t el, ticks, by_rate, off;

    /* A clock or TSC that went back (or a TSC that wrapped): no rate. */
    if (!lapict__after_eq(now, t->dl.t0_ns) || tsc < t->dl.tsc0)
        return;
    el = now - t->dl.t0_ns;
    ticks = tsc - t->dl.tsc0;
    by_rate = lapict__ns_from_tsc(t, ticks);
    off = by_rate > el ? by_rate - el : el - by_rate;
    if (off > (el >> TSC_OFF_SHIFT) + TSC_OFF_SLACK_NS)
        dl_rate_off(t, el, ticks);
}

/*
 * ns until the guest TSC (@tsc at @now, short of the deadline) reaches the
 * deadline at the rate it has shown since the deadline was armed, rounded
 * up; 0 when it showed none.
 */
static uint64_t dl_left_measured(const struct lapict_timer *t, uint64_t now,
                                 uint64_t tsc)
{
    uint64_t el, ticks, q;

    if (!lapict__after_eq(now, t->dl.t0_ns) || tsc <= t->dl.tsc0 ||
        tsc >= t->deadline_tsc)
        return 0;
    el = now - t->dl.t0_ns;
    ticks = tsc - t->dl.tsc0;
    /* (D - tsc) el < 2^127: the horizon rule keeps el below 2^63. */
    q = lapict__udiv128(
        (lapict__u128)(t->deadline_tsc - tsc) * el + (ticks - 1u), ticks);
    return q > LAPICT__FAR_NS ? LAPICT__FAR_NS : q;
}

/*
 * The host timer fired at the deadline's instant and the guest TSC is
 * still short: the TSC runs slower than the estimate (a tsc_khz too high,
 * a tsc_to_host_ns answer too early). Aim again, at the later of the
 * estimate and the rate the TSC has shown, never more often than the
 * bound above. Never early either way: the TSC is checked at each fire.
 */
static __attribute__((noinline)) uint64_t dl_reaim(struct lapict_timer *t,
                                                   uint64_t now, uint64_t tsc)
{
    uint64_t rem = lapict__deadline_ns(t, now, tsc, t->deadline_tsc) - now;
    uint64_t m = dl_left_measured(t, now, tsc);
    unsigned r = t->dl_rearms;

    dl_rate_check(t, now, tsc);
    if (m > rem)
        rem = m;
    if (r >= DL_REARMS_FREE) {
        unsigned sh = r - DL_REARMS_FREE;
        uint64_t floor = (uint64_t)DL_REARM_FLOOR_NS << (sh > 52u ? 52u : sh);
        if (rem < floor)
            rem = floor;
    }
    if (r < UINT8_MAX)
        t->dl_rearms = (uint8_t)(r + 1u);
    return now + (rem > LAPICT__FAR_NS ? LAPICT__FAR_NS : rem);
}

/* What process() did. */
#define PROC_REARM 1u    /* the host timer needs re-arming */
#define PROC_INJECTED 2u /* the host took an interrupt */
#define PROC_EXPIRED 4u  /* an expiry was processed */

/*
 * Process the expiries whose instant is at or before @now. @quiet: call no
 * op (a deadline is checked against @quiet_tsc, expiries stay pending).
 */
static LAPICT__HOT unsigned process(struct lapict_timer *t, uint64_t now,
                                    bool quiet, uint64_t quiet_tsc)
{
    if (t->flags & LAPICT__F_CD_ARMED) {
        uint64_t d = lapict__elapsed(t, now), k = 1, next;
        uint64_t instant = t->cd.anchor_ns + t->cd.next_rel_ns;
        if (d < t->cd.next_rel_ns)
            return 0;
        if (is_periodic(t)) {
            next = lapict__ns_for(t, t->cd.e_tick + t->tmict);
            if (d >= next || t->cd.e_tick >= LAPICT__REBASE_TICKS) {
                k = stalled(t, d);
                instant = t->cd.anchor_ns + lapict__ns_for(t, t->cd.e_tick);
                next = lapict__ns_for(t, t->cd.e_tick + t->tmict);
            }
            t->cd.e_tick += t->tmict;
            t->cd.next_rel_ns = next;
        } else {
            t->flags &= (uint16_t) ~(LAPICT__F_CD_ARMED | LAPICT__F_CD_ACTIVE);
        }
        return PROC_REARM | PROC_EXPIRED |
               (expired(t, k, instant, quiet) ? PROC_INJECTED : 0u);
    }
    if (t->flags & LAPICT__F_DL_ARMED) {
        uint64_t tsc = quiet ? quiet_tsc : lapict__host_tsc(t), instant;

        if (!lapict__dl_reached(t, now, tsc)) {
            /* The TSC runs slower than estimated: aim again, later. */
            if (!quiet && lapict__after_eq(now, t->dl.at_ns)) {
                t->dl.at_ns = dl_reaim(t, now, tsc);
                return PROC_REARM;
            }
            return 0;
        }
        /* Reached: far sooner than tsc_khz said is a TSC too fast. */
        if (!quiet)
            dl_rate_check(t, now, tsc);
        t->flags &= (uint16_t)~LAPICT__F_DL_ARMED;
        instant = lapict__after_eq(now, t->dl.at_ns) ? t->dl.at_ns : now;
        return PROC_REARM | PROC_EXPIRED |
               (expired(t, 1, instant, quiet) ? PROC_INJECTED : 0u);
    }
    return 0;
}

void lapict__settle(struct lapict_timer *t, uint64_t now, uint64_t tsc)
{
    process(t, now, true, tsc);
}

void lapict__update_slow(struct lapict_timer *t, uint64_t now)
{
    /* Nothing expired: the armed host timer is still the right one. */
    if (process(t, now, false, 0))
        lapict__arm_next(t, now, false);
}

/*
 * Inject the next expiry ahead of its instant if it is within the advance.
 * Return whether the host took it.
 */
static bool preinject(struct lapict_timer *t, uint64_t now)
{
    uint32_t adv = lapict__advance(t);
    uint8_t v = (uint8_t)(t->lvtt & LAPICT_LVTT_VECTOR);
    uint64_t instant, left;
    int64_t since;

    if (!adv || t->pending || (t->flags & LAPICT__F_PREINJ) ||
        (t->lvtt & LAPICT_LVTT_MASK) || v < 16)
        return false;
    /*
     * An expiry within the advance of the previous one (a period shorter
     * than the advance) is not injected ahead: the wait before entry would
     * then spin through whole periods. It fires at its instant instead.
     */
    since = (int64_t)(now - t->last_instant_ns);
    if ((t->flags & LAPICT__F_EXPIRED) && since >= 0 && since < (int64_t)adv)
        return false;
    if (t->flags & LAPICT__F_CD_ARMED) {
        left = lapict__cd_left(t, now);
        if (left > adv)
            return false;
        /*
         * Nor one followed by the next grid point within the advance: the
         * servicing at the instant would find several expiries, and the
         * interrupt given ahead would be one more than the policy allows.
         */
        if (is_periodic(t) &&
            lapict__ns_for(t, t->cd.e_tick + t->tmict) - t->cd.next_rel_ns <=
                adv)
            return false;
        instant = now + left;
    } else if (t->flags & LAPICT__F_DL_ARMED) {
        uint64_t tsc;
        /*
         * A TSC found off tsc_khz, with no host answer for the instant: an
         * instant estimated from tsc_khz can be far too soon, and the wait
         * before entry would spin until the TSC gets there.
         */
        if ((t->flags & LAPICT__F_TSC_REPORTED) && !lapict__host_maps_tsc(t))
            return false;
        tsc = lapict__host_tsc(t);
        if (lapict__dl_reached(t, now, tsc))
            return false;
        instant = lapict__deadline_ns(t, now, tsc, t->deadline_tsc);
        if (instant - now > adv)
            return false;
        t->dl.at_ns = instant;
    } else {
        return false;
    }
    if (!lapict__host_inject(t, v))
        return false;
    t->flags |= LAPICT__F_PREINJ;
    t->flags &= (uint16_t)~LAPICT__F_PREINJ_KEPT;
    t->last_instant_ns = instant;
    return true;
}

int lapict_init(struct lapict_timer *t, const struct lapict_config *cfg,
                const struct lapict_ops *ops, void *ctx)
{
    struct lapict_config def, got;
    struct lapict_timer n = {0};
    uint64_t g;
    int rc;

    if (!t || !ops)
        return LAPICT_E_INVAL;
    if (!lapict__ops_ok(ops))
        return LAPICT_E_OPS;
    if (!cfg) {
        lapict_config_default(&def);
        cfg = &def;
    }
    rc = lapict_config_check(cfg);
    if (rc)
        return rc;
    /* Read as this library's struct, whatever size the host's has. */
    lapict__config_load(cfg, &got);
    cfg = &got;

    n.ops = ops;
    n.ctx = ctx;
    /* Reduced fractions keep the products small and exact. */
    g = lapict__gcd(cfg->bus_hz, DIV_1E9);
    n.bus_p = cfg->bus_hz / g;
    n.bus_q = (uint32_t)(DIV_1E9 / g);
    /* bus_q divides 10^9 = 2^9 5^9: its power of 5 indexes a table. */
    for (g = n.bus_q >> __builtin_ctz(n.bus_q); g > 1; g /= 5)
        n.bus_q5++;
    n.bus_rp = lapict__recip(n.bus_p);
    /* Not stated (no TSC-deadline mode): a placeholder nothing reads. */
    n.tsc_khz = cfg->tsc_khz ? cfg->tsc_khz : 1000000u;
    n.tsc_r = lapict__recip(n.tsc_khz);

    n.min_period_ns = cfg->min_period_ns;
    n.adv_mode = cfg->advance_mode & 3u;
    n.adv_ns = cfg->advance_mode == LAPICT_ADVANCE_OFF ? 0 : cfg->advance_ns;
    n.adv_max_ns = cfg->advance_mode == LAPICT_ADVANCE_ADAPTIVE
                       ? cfg->advance_max_ns
                       : n.adv_ns;
    /* Without a spin op nothing can wait before entry: no advance, ever
     * (every bound below is adv_max_ns, so adv_ns stays 0). */
    if (!lapict__host_can_spin(&n))
        n.adv_ns = n.adv_max_ns = 0;
    n.adv_goal = cfg->advance_goal & 1u;
    n.adv_budget_ns = cfg->advance_spin_budget_ns;
    n.missed = cfg->missed_policy & 3u;
    n.catch_up_max = cfg->missed_policy == LAPICT_MISSED_CATCH_UP
                         ? (uint16_t)cfg->catch_up_max
                         : 1;
    n.lvtt = LAPICT_LVTT_RESET;
    lapict__set_tdcr(&n, 0);
    n.flags = LAPICT__F_SVR_EN;
    if (cfg->tsc_deadline)
        n.flags |= LAPICT__F_DL_OK;
    n.magic = LAPICT__MAGIC;
    *t = n;
    return LAPICT_OK;
}

int lapict_fini(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return lapict__invalid(t);
    lapict__host_cancel(t);
    /* After the cancel: the op runs with the instance still bound. */
    t->magic = 0;
    return LAPICT_OK;
}

int lapict_reset(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return lapict__invalid(t);
    lapict__host_cancel(t);
    lapict__disarm(t);
    t->lvtt = LAPICT_LVTT_RESET;
    lapict__set_tdcr(t, 0);
    return LAPICT_OK;
}

int lapict_expire(struct lapict_timer *t)
{
    uint64_t now;
    unsigned done;
    bool inj;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    now = lapict__host_now(t);
    /* Whether to sample is this call's own result, never a counter's. */
    done = process(t, now, false, 0);
    inj = (done & PROC_INJECTED) != 0;
    /*
     * An expiry just processed goes to the guest at the next entry; one
     * injected ahead now would make that entry wait for its instant and
     * hold the due one back (servicing late by more than the advance).
     * The next one is then armed for its instant (a tried arm).
     */
    if (!(done & PROC_EXPIRED) && preinject(t, now))
        inj = true;
    if (inj) {
        /* Measure the latency from when this host timer was due (neither
         * step above arms a host timer: armed_ns is still that one). */
        uint64_t due = t->armed == LAPICT__ARMED_NONE ? now : t->armed_ns;
        uint64_t lead = lapict__after_eq(due, t->last_instant_ns)
                            ? 0
                            : t->last_instant_ns - due;
        t->lead_ns = lead > UINT32_MAX ? UINT32_MAX : (uint32_t)lead;
        t->flags |= LAPICT__F_SAMPLE;
    }
    lapict__arm_next(t, now, true);
    return LAPICT_OK;
}

int lapict_irq_window_open(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return lapict__invalid(t);
    process(t, lapict__host_now(t), false, 0);
    deliver(t, false);
    lapict__arm_next(t, lapict__host_now(t), false);
    return LAPICT_OK;
}

int lapict_vcpu_blocking(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return lapict__invalid(t);
    lapict__update(t, lapict__host_now(t));
    t->flags |= LAPICT__F_BLOCKED;
    lapict__host_move(t);
    return LAPICT_OK;
}

int lapict_vcpu_unblocked(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return lapict__invalid(t);
    t->flags &= (uint16_t)~LAPICT__F_BLOCKED;
    lapict__update(t, lapict__host_now(t));
    lapict__host_move(t);
    return LAPICT_OK;
}

/* A signed ns difference as a 32-bit statistic, saturating. */
static int32_t sat32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/*
 * The interrupt injected ahead is in the host's hands and the guest must
 * not see it early: wait until the expiry is due, however many calls the
 * host's spin op takes to get there (never give up). A pre-injection is
 * made at most the advance (<= adv_max_ns) before its instant, so an
 * honest host gets there. Only a host clock or guest TSC that went back (or
 * jumped by 2^63 ns or more, which the horizon rule cannot tell from it)
 * shows the instant further away than that: the wait then ends, as it
 * could only last as long as the clock's error (<lapict/timer.h>). Then
 * the expiry is processed: it is the interrupt already given, never given
 * twice.
 */
uint64_t lapict__preinj_settle(struct lapict_timer *t, uint64_t now)
{
    uint64_t bound = (t->flags & LAPICT__F_PREINJ_KEPT)
                         ? LAPICT_ADVANCE_NS_LIMIT
                         : t->adv_max_ns;

    if (t->flags & LAPICT__F_CD_ARMED) {
        uint64_t left;
        while ((left = lapict__cd_left(t, now)) != 0 && left <= bound) {
            lapict__host_spin_until(t, now + left);
            now = lapict__host_now(t);
        }
    } else if (t->flags & LAPICT__F_DL_ARMED) {
        /* Wait on the guest TSC itself. */
        uint64_t tsc, at;
        while (!lapict__dl_reached(t, now, tsc = lapict__host_tsc(t))) {
            at = lapict__deadline_ns(t, now, tsc, t->deadline_tsc);
            /* A restored deadline's instant is this host's estimate: one
             * TSC period of slack, as restore allowed. */
            if (at - now > bound + ((t->flags & LAPICT__F_PREINJ_KEPT)
                                        ? lapict__ns_from_tsc(t, 1)
                                        : 0))
                break;
            lapict__host_spin_until(t, at);
            now = lapict__host_now(t);
        }
    }
    lapict__update_slow(t, now);
    return now;
}

/* Entry with an expiry injected ahead or a latency to sample. */
static __attribute__((noinline)) int entry_work(struct lapict_timer *t)
{
    uint64_t now;
    int64_t err;
    bool sampled = false;

    now = lapict__host_now(t);
    if (t->flags & LAPICT__F_SAMPLE) {
        t->flags &= (uint16_t)~LAPICT__F_SAMPLE;
        sampled = true;
        err = (int64_t)(now - t->last_instant_ns);
        t->last_arrival_ns = sat32(err);
        /* latency = err + lead, saturating: a clock jump near 2^63 must
         * not overflow (the tuner bounds the value anyway). */
        lapict__tune(t, err > INT64_MAX - (int64_t)t->lead_ns
                            ? INT64_MAX
                            : err + (int64_t)t->lead_ns);
    }
    if (!(t->flags & LAPICT__F_PREINJ)) {
        /* Injected at or after its instant: the guest enters now. */
        if (sampled)
            t->last_guest_ns = t->last_arrival_ns;
        return LAPICT_OK;
    }
    now = lapict__preinj_settle(t, now);
    /*
     * What the guest sees: the expiry processed, its instant is at or
     * before now (a deadline reached before its estimated instant counts
     * at now); still injected ahead (the wait ended on a clock that went
     * back), the instant lies ahead and the guest is early.
     */
    if (sampled)
        t->last_guest_ns = sat32((int64_t)(now - t->last_instant_ns));
    return LAPICT_OK;
}

int lapict_before_guest_entry(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return lapict__invalid(t);
    /* Every guest entry passes here: nothing to do is the common case. */
    if (!(t->flags & (LAPICT__F_PREINJ | LAPICT__F_SAMPLE)))
        return LAPICT_OK;
    return entry_work(t);
}

int lapict_stats_get(const struct lapict_timer *t, struct lapict_stats *out,
                     size_t size)
{
    struct lapict_stats st, *o = &st;

    if (!lapict__valid(t) || !out || size < LAPICT_STATS_SIZE_1_0)
        return lapict__invalid(t);
    __builtin_memset(o, 0, sizeof(*o));
    /* The bytes of @out this library fills (the caller's struct may be
     * an older, smaller one). */
    o->size = (uint32_t)(size < sizeof(*o) ? size : sizeof(*o));
    o->expiries = t->counts[LAPICT__N_EXPIRIES];
    o->injections = t->counts[LAPICT__N_INJECTIONS];
    o->refused = t->counts[LAPICT__N_REFUSED];
    o->masked = t->counts[LAPICT__N_MASKED];
    o->coalesced = t->counts[LAPICT__N_COALESCED];
    o->dropped = t->counts[LAPICT__N_DROPPED];
    o->illegal_vector = t->counts[LAPICT__N_ILLEGAL_VECTOR];
    o->mode_errors = t->counts[LAPICT__N_MODE_ERRORS];
    o->clamps = t->counts[LAPICT__N_CLAMPS];
    o->hv_to_sw = t->counts[LAPICT__N_HV_TO_SW];
    o->sw_to_hv = t->counts[LAPICT__N_SW_TO_HV];
    o->hv_refused = t->counts[LAPICT__N_HV_REFUSED];
    o->spins = t->counts[LAPICT__N_SPINS];
    o->spin_ns_total = t->spin_ns;
    o->advance_ns = lapict__advance(t);
    o->pending = t->pending;
    o->last_arrival_ns = t->last_arrival_ns;
    o->last_error = t->last_error;
    o->last_guest_ns = t->last_guest_ns;
    o->tsc_khz_measured = t->tsc_khz_measured;
    o->clamp_reported = t->counts[LAPICT__N_CLAMPS] != 0;
    /* No more than the caller's struct; what this library lacks reads 0. */
    if (size > sizeof(*o)) {
        __builtin_memset((uint8_t *)out + sizeof(*o), 0, size - sizeof(*o));
        size = sizeof(*o);
    }
    __builtin_memcpy(out, o, size);
    return LAPICT_OK;
}

/* No padding at the end of the statistics either (<lapict/timer.h>). */
_Static_assert(sizeof(struct lapict_stats) == LAPICT_STATS_SIZE_1_0,
               "struct lapict_stats of 1.0.0 is LAPICT_STATS_SIZE_1_0");
_Static_assert(__builtin_offsetof(struct lapict_stats, tsc_khz_measured) +
                       sizeof(uint32_t) ==
                   sizeof(struct lapict_stats),
               "struct lapict_stats ends without padding");

/* Part of the ABI promise: hosts embed the instance in their vCPU. */
_Static_assert(sizeof(struct lapict_timer) <= 272,
               "struct lapict_timer must stay within 272 bytes");
