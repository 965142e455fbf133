/* SPDX-License-Identifier: MIT */
/*
 * The deterministic simulated host. Single-threaded: library callbacks are
 * run by lapict_sim_advance() in instant order, never re-entrantly from an
 * op (ops only record what the library asked for). Instants are compared
 * by their distance from now on the wrapping clock, so a host that starts
 * near 2^64 behaves as one that starts at 0.
 */
#include "lapict_sim.h"

#include <string.h>

static struct lapict_sim *S(void *ctx)
{
    return ctx;
}

/* How far @at is ahead of now; 0 if it is due (at or before now). */
static uint64_t ahead(const struct lapict_sim *s, uint64_t at)
{
    return (int64_t)(at - s->now_ns) > 0 ? at - s->now_ns : 0;
}

static uint64_t tsc_at(const struct lapict_sim *s, uint64_t ns)
{
    unsigned __int128 p =
        (unsigned __int128)(ns - s->cfg.start_ns) * s->cfg.tsc_khz;
    /* floor(elapsed * khz / 10^6); test code, a 128-bit divide is fine. */
    return s->cfg.tsc_offset + (uint64_t)(p / 1000000u);
}

uint64_t lapict_sim_guest_tsc(const struct lapict_sim *s)
{
    return tsc_at(s, s->now_ns);
}

static uint64_t op_now(void *ctx)
{
    return S(ctx)->now_ns;
}

static uint64_t op_tsc(void *ctx)
{
    return lapict_sim_guest_tsc(S(ctx));
}

static uint64_t op_tsc_to_ns(void *ctx, uint64_t tsc)
{
    struct lapict_sim *s = S(ctx);
    uint64_t el = s->now_ns - s->cfg.start_ns;
    /*
     * The first instant from now on at which the guest TSC reads @tsc (the
     * op's contract). Work in ticks since start_ns without the wrap: that
     * count passes 2^64 (one lap of the TSC, 7.4 * 10^18 ns at 2.5 GHz)
     * well inside the 2^64 ns clock, so @tsc is placed in the lap the TSC
     * is in now, or the next one if the TSC has already passed it.
     */
    unsigned __int128 cur = (unsigned __int128)s->cfg.tsc_offset +
                            (unsigned __int128)el * s->cfg.tsc_khz / 1000000u;
    unsigned __int128 want = (cur >> 64 << 64) + tsc;

    if (!s->cfg.tsc_khz) /* a TSC that stands still reaches nothing new */
        return (uint64_t)cur == tsc ? s->now_ns : s->now_ns + (UINT64_MAX >> 1);
    if (want < cur)
        want += (unsigned __int128)1 << 64;
    want = (want - s->cfg.tsc_offset) * 1000000u;
    return s->cfg.start_ns +
           (uint64_t)((want + s->cfg.tsc_khz - 1) / s->cfg.tsc_khz);
}

static void op_sw_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_sim *s = S(ctx);
    s->sw_armed = true;
    s->sw_at_ns = host_ns;
    /* Armed in the past: fires now (plus the latency). */
    s->sw_fire_ns = s->now_ns + ahead(s, host_ns) + s->cfg.host_latency_ns;
    s->sw_arms++;
}

static void op_sw_cancel(void *ctx)
{
    S(ctx)->sw_armed = false;
    S(ctx)->sw_cancels++;
}

static bool op_hv_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_sim *s = S(ctx);
    uint64_t delta_ns = ahead(s, host_ns), ticks;
    unsigned __int128 p = (unsigned __int128)delta_ns * s->cfg.tsc_khz;

    s->hv_arms++;
    /*
     * Range check as VMX does it: guest TSC ticks shifted by the rate.
     * Saturated: up to 2^62 ns ahead above 4 GHz is 2^64 ticks or more,
     * whose low 64 bits can look near.
     */
    p = (p + 999999u) / 1000000u;
    ticks = p > UINT64_MAX ? UINT64_MAX : (uint64_t)p;
    if (!s->cfg.hv_timer || (ticks >> s->cfg.hv_shift) > s->cfg.hv_max ||
        (s->cfg.hv_max_ahead_ns && delta_ns > s->cfg.hv_max_ahead_ns)) {
        s->hv_refusals++;
        /* Arming replaces: a refused arm leaves nothing armed. */
        s->hv_armed = false;
        return false;
    }
    s->hv_armed = true;
    s->hv_at_ns = host_ns;
    return true;
}

static void op_hv_cancel(void *ctx)
{
    S(ctx)->hv_armed = false;
    S(ctx)->hv_cancels++;
}

/* Out of line: the ops stay a few loads and stores when nothing records. */
static __attribute__((noinline)) void record(struct lapict_sim_event *buf,
                                             uint64_t n,
                                             const struct lapict_sim *s,
                                             uint64_t ns, uint8_t vector)
{
    buf[n].host_ns = ns;
    buf[n].guest_tsc = tsc_at(s, ns);
    buf[n].vector = vector;
}

static bool op_inject(void *ctx, uint8_t vector)
{
    struct lapict_sim *s = S(ctx);
    if (!s->window_open || s->nqueued >= LAPICT_SIM_QUEUE) {
        s->refusals++;
        return false;
    }
    s->queued[s->nqueued++] = vector;
    if (s->injects < s->log.inj_cap)
        record(s->log.inj, s->injects, s, s->now_ns, vector);
    s->injects++;
    return true;
}

static void op_spin(void *ctx, uint64_t host_ns)
{
    struct lapict_sim *s = S(ctx);
    if (s->spins < s->log.spin_cap)
        s->log.spin_to[s->spins] = host_ns;
    s->spins++;
    s->now_ns += ahead(s, host_ns); /* forward only */
}

static void op_report(void *ctx, int status, uint32_t detail)
{
    struct lapict_sim *s = S(ctx);
    if (s->reports < s->log.rep_cap) {
        s->log.rep[s->reports].status = status;
        s->log.rep[s->reports].detail = detail;
    }
    s->reports++;
    s->last_report_status = status;
    s->last_report_detail = detail;
}

const struct lapict_ops lapict_sim_ops = {
    .version = LAPICT_OPS_VERSION,
    .now_ns = op_now,
    .guest_tsc = op_tsc,
    .sw_timer_arm = op_sw_arm,
    .sw_timer_cancel = op_sw_cancel,
    .hv_timer_arm = op_hv_arm,
    .hv_timer_cancel = op_hv_cancel,
    .inject = op_inject,
    .spin_until = op_spin,
    .report = op_report,
    .tsc_to_host_ns = op_tsc_to_ns,
};

void lapict_sim_config_default(struct lapict_sim_config *c)
{
    memset(c, 0, sizeof(*c));
    c->tsc_khz = 1000000u;
    c->hv_shift = 5;
    c->hv_max = 0xFFFFFFFFu;
}

void lapict_sim_init(struct lapict_sim *s, const struct lapict_sim_config *c,
                     lapict_sim_deliver_fn deliver, void *arg)
{
    memset(s, 0, sizeof(*s));
    if (c)
        s->cfg = *c;
    else
        lapict_sim_config_default(&s->cfg);
    s->deliver = deliver;
    s->deliver_arg = arg;
    s->now_ns = s->cfg.start_ns;
    s->window_open = true;
}

void lapict_sim_attach(struct lapict_sim *s, struct lapict_timer *t)
{
    s->timer = t;
}

void lapict_sim_drop_timers(struct lapict_sim *s)
{
    s->sw_armed = s->hv_armed = false;
    s->nqueued = 0;
}

/* After each library call the host makes: an instance arms one timer. */
static void check_one_armed(struct lapict_sim *s)
{
    if (s->sw_armed && s->hv_armed)
        s->both_armed++;
}

int lapict_sim_enter(struct lapict_sim *s)
{
    uint64_t at;
    uint32_t i, n;
    int rc;

    if (!s->timer)
        return LAPICT_OK;
    rc = lapict_before_guest_entry(s->timer);
    /* before_guest_entry may inject more (a due expiry): take all. */
    n = s->nqueued;
    s->nqueued = 0;
    at = s->now_ns + s->cfg.entry_latency_ns;
    for (i = 0; i < n; i++) {
        if (s->deliveries < s->log.dlv_cap)
            record(s->log.dlv, s->deliveries, s, at, s->queued[i]);
        s->deliveries++;
        if (s->deliver)
            s->deliver(s->deliver_arg, at, s->queued[i]);
    }
    return rc;
}

/* The guest entry after a host event, unless the driver makes its own. */
static void auto_enter(struct lapict_sim *s)
{
    if (!s->cfg.manual_entry)
        lapict_sim_enter(s);
}

int lapict_sim_fire(struct lapict_sim *s, enum lapict_sim_timer which)
{
    int rc = LAPICT_OK;

    if (which == LAPICT_SIM_TIMER_SW) {
        s->sw_armed = false;
        s->sw_fires++;
    } else if (which == LAPICT_SIM_TIMER_HV) {
        s->hv_armed = false;
        s->hv_fires++;
    }
    s->expire_calls++;
    if (s->timer) {
        rc = lapict_expire(s->timer);
        check_one_armed(s);
        auto_enter(s);
    }
    return rc;
}

/*
 * Run the earliest timer due within @left ns from now; false if none. At
 * equal instants the software timer runs first; the hardware timer only
 * fires while the vCPU runs.
 */
static bool run_one(struct lapict_sim *s, uint64_t left)
{
    bool hv = s->hv_armed && !s->blocked;
    uint64_t hv_fire = s->hv_at_ns + s->cfg.host_latency_ns;
    uint64_t dsw = s->sw_armed ? ahead(s, s->sw_fire_ns) : 0;
    uint64_t dhv = hv ? ahead(s, hv_fire) : 0;
    bool use_sw, hv_first;

    if (!s->sw_armed && !hv)
        return false;
    /* Both due (a stall went past them): in the order of their instants. */
    hv_first =
        dhv < dsw || (dhv == dsw && (int64_t)(hv_fire - s->sw_fire_ns) < 0);
    use_sw = s->sw_armed && (!hv || !hv_first);
    if ((use_sw ? dsw : dhv) > left)
        return false;
    /* The clock moves to the instant, or stays if a stall went past it. */
    s->now_ns += use_sw ? dsw : dhv;
    lapict_sim_fire(s, use_sw ? LAPICT_SIM_TIMER_SW : LAPICT_SIM_TIMER_HV);
    return true;
}

bool lapict_sim_advance(struct lapict_sim *s, uint64_t delta_ns)
{
    uint64_t left = delta_ns, at = s->now_ns;
    uint32_t same = 0;

    /*
     * @left shrinks by every move of the clock, callbacks' spins included:
     * timers that come due because a spin moved the clock past the target
     * run at the next call, as extending the target would let a chain of
     * spins run away with the clock. There is no bound on the callbacks
     * of a long run; only callbacks that keep the clock where it is stop
     * it (each re-arms a timer that is due at once).
     */
    while (run_one(s, left)) {
        uint64_t moved = s->now_ns - at;

        if (moved) {
            left = moved < left ? left - moved : 0;
            at = s->now_ns;
            same = 0;
        } else if (++same >= LAPICT_SIM_STUCK) {
            s->livelocks++;
            return false;
        }
    }
    s->now_ns += left;
    return true;
}

bool lapict_sim_run_until(struct lapict_sim *s, uint64_t t_ns)
{
    return lapict_sim_advance(s, ahead(s, t_ns));
}

bool lapict_sim_stall(struct lapict_sim *s, uint64_t d_ns)
{
    s->now_ns += d_ns;
    return lapict_sim_advance(s, 0);
}

int lapict_sim_block(struct lapict_sim *s)
{
    int rc = LAPICT_OK;

    if (s->timer) {
        rc = lapict_vcpu_blocking(s->timer);
        check_one_armed(s);
    }
    auto_enter(s);
    s->blocked = true;
    return rc;
}

int lapict_sim_unblock(struct lapict_sim *s)
{
    int rc = LAPICT_OK;

    s->blocked = false;
    if (s->timer) {
        rc = lapict_vcpu_unblocked(s->timer);
        check_one_armed(s);
    }
    auto_enter(s);
    lapict_sim_advance(s, 0);
    return rc;
}

int lapict_sim_window(struct lapict_sim *s, bool open)
{
    int rc = LAPICT_OK;

    s->window_open = open;
    if (open && s->timer) {
        rc = lapict_irq_window_open(s->timer);
        auto_enter(s);
    }
    return rc;
}
