/* SPDX-License-Identifier: MIT */
/*
 * Embedding lapict, as the README shows it, on a clock that moves only
 * when told to: the timer lives inside the host's vCPU, is bound to the
 * host's ops table once, and every guest access to a timer register goes
 * to lapict first. The host here is adapters/sim, the project's simulated
 * host, so the run is the same on any machine and the sample can check the
 * instant of each interrupt: a one-shot count, a periodic timer and a
 * TSC deadline, each delivered exactly when the SDM's "APIC Timer" and
 * "TSC-Deadline Mode" rules put it. A real VMM swaps lapict_sim_ops for
 * its own table (adapters/kvm's, or one written as in docs/porting.md).
 */
#include <inttypes.h>
#include <stdio.h>

#include <lapict/lapict.h>

#include "lapict_sim.h"

#define VEC 0x40u

struct vcpu {
    struct lapict_timer timer; /* caller-allocated, inside the vCPU */
    struct lapict_sim host;    /* the host: clock, host timers, injection */
    uint64_t last_irq_ns;
    unsigned irqs;
};

/* The guest's interrupt controller, as far as this sample needs one. */
static void on_irq(void *arg, uint64_t when_ns, uint8_t vector)
{
    struct vcpu *v = arg;

    printf("  interrupt 0x%02x at %" PRIu64 " ns\n", vector, when_ns);
    v->last_irq_ns = when_ns;
    v->irqs++;
}

/* A guest MMIO write to the APIC page: the timer's registers are lapict's,
 * the rest (the SVR too, after lapict has seen its enable bit) the host's. */
static void apic_write(struct vcpu *v, uint32_t offset, uint32_t value)
{
    if (lapict_xapic_write(&v->timer, offset, value) == LAPICT_E_NOREG)
        printf("  host APIC register 0x%03x = 0x%x\n", offset, value);
    lapict_sim_enter(&v->host); /* a write may inject at once */
}

static int expect(struct vcpu *v, unsigned irqs, uint64_t at_ns)
{
    if (v->irqs == irqs && v->last_irq_ns == at_ns)
        return 0;
    fprintf(stderr,
            "embed_sim: %u interrupts, last at %" PRIu64
            " ns; expected %u, last at %" PRIu64 " ns\n",
            v->irqs, v->last_irq_ns, irqs, at_ns);
    return 1;
}

int main(void)
{
    struct vcpu v = {0};
    struct lapict_sim_config hc;
    struct lapict_config cfg;
    int rc, bad = 0;

    /* The host: a guest TSC of 2 GHz, no hardware timer, no latencies. */
    lapict_sim_config_default(&hc);
    hc.tsc_khz = 2000000;
    lapict_sim_init(&v.host, &hc, on_irq, &v);

    lapict_config_default(&cfg); /* 1 GHz bus: one count per ns at divide 1 */
    cfg.tsc_khz = hc.tsc_khz;    /* no default: the guest TSC's rate */
    rc = lapict_init(&v.timer, &cfg, &lapict_sim_ops, &v.host);
    if (rc != LAPICT_OK) {
        fprintf(stderr, "lapict_init: %s\n", lapict_strerror(rc));
        return 1;
    }
    lapict_sim_attach(&v.host, &v.timer);

    printf("one-shot, 1000 counts at divide 1:\n");
    apic_write(&v, LAPICT_XAPIC_SVR, LAPICT_SVR_ENABLE | 0xFF);
    apic_write(&v, LAPICT_XAPIC_TDCR, 0xB); /* divide by 1 */
    apic_write(&v, LAPICT_XAPIC_LVTT, LAPICT_LVTT_ONESHOT | VEC);
    apic_write(&v, LAPICT_XAPIC_TMICT, 1000);
    lapict_sim_run_until(&v.host, 5000); /* host timers fire as it moves */
    bad |= expect(&v, 1, 1000);

    /* Periods under cfg.min_period_ns (200 us) would be slowed to it. */
    printf("periodic, 125000 counts at divide 2, from 5000 ns:\n");
    apic_write(&v, LAPICT_XAPIC_TDCR, 0x0); /* divide by 2 */
    apic_write(&v, LAPICT_XAPIC_LVTT, LAPICT_LVTT_PERIODIC | VEC);
    apic_write(&v, LAPICT_XAPIC_TMICT, 125000);
    lapict_sim_run_until(&v.host, 800000);
    bad |= expect(&v, 4, 755000);
    apic_write(&v, LAPICT_XAPIC_TMICT, 0); /* stops the count-down */

    printf("TSC deadline 2000000 (1 ms at 2 GHz):\n");
    apic_write(&v, LAPICT_XAPIC_LVTT, LAPICT_LVTT_TSC_DEADLINE | VEC);
    rc = lapict_msr_write(&v.timer, LAPICT_MSR_TSC_DEADLINE, 2000000);
    if (rc == LAPICT_E_GP)
        printf("  the host would inject #GP here\n");
    lapict_sim_run_until(&v.host, 1100000);
    bad |= expect(&v, 5, 1000000);

    /* vCPU teardown: cancels the host timer. */
    lapict_fini(&v.timer);
    printf(bad ? "embed_sim: FAILED\n" : "embed_sim: ok\n");
    return bad;
}
