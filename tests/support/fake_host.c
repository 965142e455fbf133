/* SPDX-License-Identifier: MIT */
/* The fake host of the core unit tests; see fake_host.h for the model. */
#include "fake_host.h"

#include <string.h>

__extension__ typedef unsigned __int128 fake_u128;

/* Cap on lapict_expire() calls of one fake_advance(): a runaway guard. */
#define FAKE_RUNAWAY 1000000u

static struct fake_host *host_of(void *ctx)
{
    return ctx;
}

uint64_t fake_tsc(struct fake_host *h)
{
    if (h->tsc_fn)
        return h->tsc_fn(h);
    fake_u128 el = (fake_u128)(h->now_ns - h->start_ns);
    return h->tsc_offset + (uint64_t)(el * h->tsc_num_khz / 1000000u);
}

static uint64_t op_now_ns(void *ctx)
{
    return host_of(ctx)->now_ns;
}

static uint64_t op_guest_tsc(void *ctx)
{
    return fake_tsc(host_of(ctx));
}

static void op_sw_arm(void *ctx, uint64_t host_ns)
{
    struct fake_host *h = host_of(ctx);
    h->sw_armed = true;
    h->sw_at = host_ns;
    h->sw_arms++;
}

static void op_sw_cancel(void *ctx)
{
    host_of(ctx)->sw_armed = false;
    host_of(ctx)->sw_cancels++;
}

static void op_hv_cancel(void *ctx)
{
    host_of(ctx)->hv_armed = false;
    host_of(ctx)->hv_cancels++;
}

static bool op_hv_arm(void *ctx, uint64_t host_ns)
{
    struct fake_host *h = host_of(ctx);
    h->hv_arms++;
    if (h->hv_refuse ||
        (h->hv_max_ahead_ns &&
         fake_diff(h->now_ns, host_ns) > (int64_t)h->hv_max_ahead_ns)) {
        h->hv_refusals++;
        /* Arming replaces: a refused arm leaves nothing armed. */
        h->hv_armed = false;
        return false;
    }
    h->hv_armed = true;
    h->hv_at = host_ns;
    return true;
}

static bool op_inject(void *ctx, uint8_t vector)
{
    struct fake_host *h = host_of(ctx);
    h->inject_calls++;
    if (!h->window_open || (h->accept_limited && h->accept_budget == 0)) {
        h->refusals++;
        return false;
    }
    if (h->accept_limited)
        h->accept_budget--;
    if (h->ninj < FAKE_MAX_EVENTS) {
        h->inj[h->ninj].ns = h->now_ns;
        h->inj[h->ninj].tsc = fake_tsc(h);
        h->inj[h->ninj].vector = vector;
    }
    h->ninj++;
    return true;
}

static void op_spin_until(void *ctx, uint64_t host_ns)
{
    struct fake_host *h = host_of(ctx);
    if (h->spins < FAKE_MAX_SPINS)
        h->spin_to[h->spins] = host_ns;
    h->spins++;
    if (fake_diff(h->now_ns, host_ns) > 0)
        h->now_ns = host_ns;
}

static void op_report(void *ctx, int status, uint32_t detail)
{
    struct fake_host *h = host_of(ctx);
    if (h->nrep < FAKE_MAX_REPORTS) {
        h->rep[h->nrep].status = status;
        h->rep[h->nrep].detail = detail;
    }
    h->nrep++;
}

static const struct lapict_ops fake_ops = {
    .version = LAPICT_OPS_VERSION,
    .now_ns = op_now_ns,
    .guest_tsc = op_guest_tsc,
    .sw_timer_arm = op_sw_arm,
    .sw_timer_cancel = op_sw_cancel,
    .hv_timer_arm = op_hv_arm,
    .hv_timer_cancel = op_hv_cancel,
    .inject = op_inject,
    .spin_until = op_spin_until,
    .report = op_report,
};

void fake_host_init(struct fake_host *h, uint64_t start_ns, uint32_t tsc_khz,
                    uint64_t tsc_offset, bool offer_hv)
{
    memset(h, 0, sizeof(*h));
    h->ops = fake_ops;
    if (!offer_hv)
        lapict_sim_ops_remove(&h->ops, FAKE_OP_HV_ARM | FAKE_OP_HV_CANCEL);
    h->now_ns = start_ns;
    h->start_ns = start_ns;
    h->tsc_offset = tsc_offset;
    h->tsc_num_khz = tsc_khz;
    h->hv_offered = offer_hv;
    h->window_open = true;
}

int fake_attach(struct fake_host *h, struct lapict_timer *t,
                const struct lapict_config *cfg)
{
    h->timer = t;
    lapict_sim_wrap_init(&h->rec, &h->ops, h, 0);
    return lapict_init(t, cfg, &h->rec.ops, &h->rec);
}

static void check_one_armed(struct fake_host *h)
{
    if (h->sw_armed && h->hv_armed)
        h->both_armed++;
}

static void expire(struct fake_host *h)
{
    h->expire_calls++;
    lapict_expire(h->timer);
    check_one_armed(h);
}

void fake_advance(struct fake_host *h, uint64_t delta_ns)
{
    uint64_t end = h->now_ns + delta_ns;
    unsigned n;

    if (h->runaway) {
        /* Already failed: keep later steps of the test fast. */
        h->now_ns = end;
        return;
    }
    for (n = 0; n < FAKE_RUNAWAY; n++) {
        /* Time left until the end; a spin may already have passed it. */
        int64_t left = fake_diff(h->now_ns, end);
        bool sw = h->sw_armed;
        bool hv = h->hv_armed && !h->blocked;
        int64_t dsw = sw ? fake_diff(h->now_ns, h->sw_at) : 0;
        int64_t dhv = hv ? fake_diff(h->now_ns, h->hv_at) : 0;
        int64_t d;

        if (dsw < 0)
            dsw = 0;
        if (dhv < 0)
            dhv = 0;
        if (sw && (!hv || dsw <= dhv)) {
            d = dsw;
            hv = false;
        } else if (hv) {
            d = dhv;
            sw = false;
        } else {
            break;
        }
        if (d > left)
            break;
        h->now_ns += (uint64_t)d;
        if (sw) {
            h->sw_armed = false;
            h->sw_fires++;
        } else {
            h->hv_armed = false;
            h->hv_fires++;
        }
        expire(h);
    }
    if (n == FAKE_RUNAWAY)
        h->runaway = true;
    if (fake_diff(h->now_ns, end) > 0)
        h->now_ns = end;
}

void fake_advance_to(struct fake_host *h, uint64_t t_ns)
{
    int64_t d = fake_diff(h->now_ns, t_ns);
    fake_advance(h, d > 0 ? (uint64_t)d : 0);
}

void fake_run_due(struct fake_host *h)
{
    fake_advance(h, 0);
}

void fake_stall(struct fake_host *h, uint64_t delta_ns)
{
    h->now_ns += delta_ns;
}

void fake_fire_sw(struct fake_host *h)
{
    h->sw_armed = false;
    h->sw_fires++;
    expire(h);
}

void fake_fire_hv(struct fake_host *h)
{
    h->hv_armed = false;
    h->hv_fires++;
    expire(h);
}

void fake_spurious_expire(struct fake_host *h)
{
    expire(h);
}

int fake_block(struct fake_host *h)
{
    int rc = lapict_vcpu_blocking(h->timer);
    h->blocked = true;
    check_one_armed(h);
    return rc;
}

int fake_unblock(struct fake_host *h)
{
    int rc;
    h->blocked = false;
    rc = lapict_vcpu_unblocked(h->timer);
    check_one_armed(h);
    return rc;
}

int fake_window(struct fake_host *h, bool open)
{
    h->window_open = open;
    if (!open)
        return LAPICT_OK;
    return lapict_irq_window_open(h->timer);
}

int fake_enter(struct fake_host *h)
{
    int rc = lapict_before_guest_entry(h->timer);
    while (h->ndlv < h->ninj && h->ndlv < FAKE_MAX_EVENTS) {
        h->dlv[h->ndlv].ns = h->now_ns;
        h->dlv[h->ndlv].tsc = fake_tsc(h);
        h->dlv[h->ndlv].vector = h->inj[h->ndlv].vector;
        h->ndlv++;
    }
    return rc;
}

bool fake_armed(const struct fake_host *h)
{
    return h->sw_armed || h->hv_armed;
}

uint64_t fake_armed_at(const struct fake_host *h)
{
    return h->hv_armed ? h->hv_at : h->sw_at;
}

void fake_clear_records(struct fake_host *h)
{
    h->ninj = h->ndlv = h->inject_calls = h->refusals = 0;
    h->spins = h->nrep = h->expire_calls = 0;
    memset(h->rec.calls, 0, sizeof(h->rec.calls));
    h->rec.total_calls = 0;
    h->sw_arms = h->sw_cancels = h->sw_fires = 0;
    h->hv_arms = h->hv_cancels = h->hv_refusals = h->hv_fires = 0;
}
