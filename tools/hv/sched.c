/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's scheduler: the vCPUs, and which of them runs next on the one
 * physical CPU: the ones an interrupt woke, in order, then round-robin.
 */
#include "hv.h"

struct hv_vcpu hv_vcpus[HV_MAX_VCPUS];

static struct hv_vcpu *running;
/* vCPUs woken by an interrupt, in order, each at most once. */
static struct hv_vcpu *woken[HV_MAX_VCPUS];
static uint32_t woken_head, woken_n;
/* Where the round-robin search starts. */
static uint32_t next;

/* An interrupt for @v: a halted vCPU runs again, and a vCPU that waits
 * for its turn goes to the queue of woken vCPUs, which run before the
 * round-robin ones and end the running one's slice (the timer interrupt
 * that raised it made that vCPU exit): a timer interrupt waits for the
 * vCPUs woken before it, not for the spinning ones' slices. */
void hv_vcpu_wake(struct hv_vcpu *v)
{
    if (!v->nmi_pending && lapict_apic_deliverable(&v->apic) < 0)
        return;
    v->halted = false;
    if (v != running && !v->woken) {
        v->woken = true;
        woken[(woken_head + woken_n++) % HV_MAX_VCPUS] = v;
    }
}

bool hv_resched(void)
{
    return woken_n != 0;
}

static struct hv_vcpu *woken_pop(void)
{
    while (woken_n) {
        struct hv_vcpu *v = woken[woken_head];
        woken_head = (woken_head + 1) % HV_MAX_VCPUS;
        woken_n--;
        v->woken = false;
        if (!v->done && !v->halted)
            return v;
    }
    return NULL;
}

struct hv_vcpu *hv_sched_next(void)
{
    struct hv_vcpu *v = woken_pop();
    for (uint32_t k = 0; !v && k < hv_cfg.vcpus; k++) {
        struct hv_vcpu *c = &hv_vcpus[(next + k) % hv_cfg.vcpus];
        if (!c->done && !c->halted) {
            v = c;
            next = (v->index + 1) % hv_cfg.vcpus;
        }
    }
    return v;
}

void hv_sched_running(struct hv_vcpu *v)
{
    running = v;
}
