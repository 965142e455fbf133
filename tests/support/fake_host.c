/* SPDX-License-Identifier: MIT */
/* The core unit tests' host over adapters/sim; see fake_host.h. */
#include "fake_host.h"

#include <string.h>

static void bind_log(struct fake_host *h)
{
    struct lapict_sim_log log = {
        h->inj,     FAKE_MAX_EVENTS, h->dlv, FAKE_MAX_EVENTS,
        h->spin_to, FAKE_MAX_SPINS,  h->rep, FAKE_MAX_REPORTS};
    h->sim.log = log;
}

void fake_host_init(struct fake_host *h, uint64_t start_ns, uint32_t tsc_khz,
                    uint64_t tsc_offset, bool offer_hv)
{
    struct lapict_sim_config c;

    memset(h, 0, sizeof(*h));
    lapict_sim_config_default(&c);
    c.tsc_khz = tsc_khz;
    c.tsc_offset = tsc_offset;
    c.start_ns = start_ns;
    c.hv_timer = offer_hv;
    c.hv_max = UINT64_MAX;
    c.manual_entry = true;
    lapict_sim_init(&h->sim, &c, NULL, NULL);
    bind_log(h);
    h->ops = lapict_sim_ops;
    lapict_sim_ops_remove(
        &h->ops, LAPICT_SIM_OP_BIT(LAPICT_SIM_OP_TSC_TO_NS) |
                     (offer_hv ? 0 : FAKE_OP_HV_ARM | FAKE_OP_HV_CANCEL));
}

int fake_attach(struct fake_host *h, struct lapict_timer *t,
                const struct lapict_config *cfg)
{
    bind_log(h); /* @h may be a copy of another host */
    lapict_sim_attach(&h->sim, t);
    lapict_sim_wrap_init(&h->rec, &h->ops, &h->sim, 0);
    return lapict_init(t, cfg, &h->rec.ops, &h->rec);
}

void fake_clear_records(struct fake_host *h)
{
    struct lapict_sim *s = &h->sim;

    s->injects = s->deliveries = s->refusals = 0;
    s->spins = s->reports = s->expire_calls = 0;
    s->sw_arms = s->sw_cancels = s->sw_fires = 0;
    s->hv_arms = s->hv_cancels = s->hv_refusals = s->hv_fires = 0;
    memset(h->rec.calls, 0, sizeof(h->rec.calls));
    h->rec.total_calls = 0;
}
