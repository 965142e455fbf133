/* SPDX-License-Identifier: MIT */
/*
 * The deterministic simulated host. Single-threaded: library callbacks are
 * run by lapict_sim_run_until() in instant order, never re-entrantly from an
 * op (ops only record what the library asked for).
 */
#include "lapict_sim.h"

#include <string.h>

static struct lapict_sim *S(void *ctx)
{
    return ctx;
}

uint64_t lapict_sim_guest_tsc(const struct lapict_sim *s)
{
    unsigned __int128 p = (unsigned __int128)s->now_ns * s->cfg.tsc_khz;
    /* floor(now * khz / 10^6); test code, a plain 128-bit divide is fine. */
    return s->cfg.tsc_offset + (uint64_t)(p / 1000000u);
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
    /*
     * The first instant from now on at which the guest TSC reads @tsc (the
     * op's contract). Work in ticks since host time 0 without the wrap:
     * that count passes 2^64 (one lap of the TSC, 7.4 * 10^18 ns at
     * 2.5 GHz) well inside the 2^64 ns clock, so @tsc is placed in the lap
     * the TSC is in now, or the next one if the TSC has already passed it.
     */
    unsigned __int128 cur =
        (unsigned __int128)s->cfg.tsc_offset +
        (unsigned __int128)s->now_ns * s->cfg.tsc_khz / 1000000u;
    unsigned __int128 want = (cur >> 64 << 64) + tsc;

    if (want < cur)
        want += (unsigned __int128)1 << 64;
    want = (want - s->cfg.tsc_offset) * 1000000u;
    return (uint64_t)((want + s->cfg.tsc_khz - 1) / s->cfg.tsc_khz);
}

static uint64_t later(const struct lapict_sim *s, uint64_t x)
{
    /* Armed in the past: fires now (plus the latency). */
    uint64_t at = (int64_t)(x - s->now_ns) < 0 ? s->now_ns : x;
    return at + s->cfg.host_latency_ns;
}

static void op_sw_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_sim *s = S(ctx);
    s->sw_armed = true;
    s->sw_fire_ns = later(s, host_ns);
    s->sw_arms++;
}

static void op_sw_cancel(void *ctx)
{
    S(ctx)->sw_armed = false;
    S(ctx)->cancels++;
}

static bool op_hv_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_sim *s = S(ctx);
    uint64_t delta_ns, ticks;

    s->hv_arms++;
    if (!s->cfg.hv_timer) {
        s->hv_refusals++;
        return false;
    }
    /* Range check as VMX does it: guest TSC ticks shifted by the rate. */
    delta_ns = (int64_t)(host_ns - s->now_ns) > 0 ? host_ns - s->now_ns : 0;
    unsigned __int128 p = (unsigned __int128)delta_ns * s->cfg.tsc_khz;
    ticks = (uint64_t)((p + 999999u) / 1000000u);
    if ((ticks >> s->cfg.hv_shift) > s->cfg.hv_max) {
        s->hv_refusals++;
        return false;
    }
    s->hv_armed = true;
    s->hv_at_ns = host_ns;
    return true;
}

static void op_hv_cancel(void *ctx)
{
    S(ctx)->hv_armed = false;
    S(ctx)->cancels++;
}

static bool op_inject(void *ctx, uint8_t vector)
{
    struct lapict_sim *s = S(ctx);
    if (!s->window_open || s->nqueued >= LAPICT_SIM_QUEUE) {
        s->refusals++;
        return false;
    }
    s->queued[s->nqueued++] = vector;
    s->injects++;
    return true;
}

static void op_spin(void *ctx, uint64_t host_ns)
{
    struct lapict_sim *s = S(ctx);
    s->spins++;
    if ((int64_t)(host_ns - s->now_ns) > 0)
        s->now_ns = host_ns;
}

static void op_report(void *ctx, int status, uint32_t detail)
{
    struct lapict_sim *s = S(ctx);
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

void lapict_sim_enter(struct lapict_sim *s)
{
    uint32_t i, n;

    if (!s->nqueued || !s->timer)
        return;
    lapict_before_guest_entry(s->timer);
    /* before_guest_entry may inject more (a due expiry): take all. */
    n = s->nqueued;
    s->nqueued = 0;
    for (i = 0; i < n; i++)
        if (s->deliver)
            s->deliver(s->deliver_arg, s->now_ns + s->cfg.entry_latency_ns,
                       s->queued[i]);
}

/* The hardware timer's firing instant, if it can fire (vCPU running). */
static bool hv_due_at(const struct lapict_sim *s, uint64_t *at)
{
    if (!s->hv_armed || s->blocked)
        return false;
    *at = s->hv_at_ns + s->cfg.host_latency_ns;
    return true;
}

/* Run the earliest timer due at or before @limit; false if none. */
static bool run_one(struct lapict_sim *s, uint64_t limit)
{
    uint64_t hv_at = 0, at, rel_at;
    bool hv = hv_due_at(s, &hv_at);
    bool sw = s->sw_armed;
    bool use_sw;

    if (!sw && !hv)
        return false;
    /* At equal instants the software timer runs first. */
    use_sw = sw && (!hv || (int64_t)(s->sw_fire_ns - hv_at) <= 0);
    at = use_sw ? s->sw_fire_ns : hv_at;
    /* A spin already took the clock past the limit: nothing more now. */
    if (limit < s->now_ns)
        return false;
    /* Compare distances from now: the trace may jump by more than 2^63. */
    rel_at = (int64_t)(at - s->now_ns) < 0 ? 0 : at - s->now_ns;
    if (rel_at > limit - s->now_ns)
        return false;
    if (use_sw)
        s->sw_armed = false;
    else
        s->hv_armed = false;
    /* Never move the clock backwards (a stall or spin went past). */
    if ((int64_t)(at - s->now_ns) > 0)
        s->now_ns = at;
    s->expire_calls++;
    if (s->timer) {
        lapict_expire(s->timer);
        lapict_sim_enter(s);
    }
    return true;
}

bool lapict_sim_run_until(struct lapict_sim *s, uint64_t t_ns)
{
    uint64_t at = s->now_ns;
    uint32_t same = 0;

    if (t_ns < s->now_ns)
        t_ns = s->now_ns; /* a spin went past: only run what is due */
    /*
     * Timers that come due because a callback's spin moved the clock past
     * @t_ns run at the next call: extending the target here would let a
     * chain of spins run away with the clock. There is no bound on the
     * callbacks of a long run; only callbacks that keep the clock where it
     * is stop it (each re-arms a timer that is due at once).
     */
    while (run_one(s, t_ns)) {
        if (s->now_ns != at) {
            at = s->now_ns;
            same = 0;
        } else if (++same >= LAPICT_SIM_STUCK) {
            return false;
        }
    }
    if (t_ns > s->now_ns)
        s->now_ns = t_ns;
    return true;
}

bool lapict_sim_stall(struct lapict_sim *s, uint64_t d_ns)
{
    s->now_ns += d_ns;
    return lapict_sim_run_until(s, s->now_ns);
}

void lapict_sim_block(struct lapict_sim *s)
{
    if (s->timer)
        lapict_vcpu_blocking(s->timer);
    lapict_sim_enter(s);
    s->blocked = true;
}

bool lapict_sim_unblock(struct lapict_sim *s)
{
    s->blocked = false;
    if (s->timer)
        lapict_vcpu_unblocked(s->timer);
    lapict_sim_enter(s);
    return lapict_sim_run_until(s, s->now_ns);
}

void lapict_sim_window(struct lapict_sim *s, bool open)
{
    s->window_open = open;
    if (open && s->timer) {
        lapict_irq_window_open(s->timer);
        lapict_sim_enter(s);
    }
}
