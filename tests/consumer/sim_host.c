/* SPDX-License-Identifier: MIT */
/*
 * A minimal host on the installed simulated host (liblapict-sim): one
 * timer instance bound to lapict_sim_ops, a 1 ms periodic timer, ten
 * simulated milliseconds. Every interrupt must come on the period's grid,
 * none early, none lost.
 */
#include <stdint.h>
#include <stdio.h>

#include <lapict/lapict.h>
#include <lapict_sim.h>

#define PERIOD_NS 1000000u /* TMICT 1 000 000 at 1 GHz, divide by 1 */
#define VECTOR 0xEFu

struct seen {
    unsigned n;
    int bad;
};

static void on_deliver(void *arg, uint64_t when_ns, uint8_t vector)
{
    struct seen *s = arg;

    s->n++;
    if (vector != VECTOR || when_ns != (uint64_t)s->n * PERIOD_NS) {
        fprintf(stderr, "interrupt %u: vector %#x at %llu ns\n", s->n, vector,
                (unsigned long long)when_ns);
        s->bad = 1;
    }
}

int main(void)
{
    struct lapict_sim_config sc;
    struct lapict_sim sim;
    struct lapict_config cfg;
    struct lapict_timer timer;
    struct seen seen = {0, 0};
    int rc;

    lapict_sim_config_default(&sc);
    lapict_sim_init(&sim, &sc, on_deliver, &seen);
    lapict_config_default(&cfg);
    cfg.bus_hz = 1000000000u;
    cfg.tsc_khz = sc.tsc_khz; /* the guest TSC rate is the host's to state */
    rc = lapict_init(&timer, &cfg, &lapict_sim_ops, &sim);
    if (rc != LAPICT_OK) {
        fprintf(stderr, "lapict_init: %s\n", lapict_strerror(rc));
        return 1;
    }
    lapict_sim_attach(&sim, &timer);

    /* What a guest does: APIC on, divide by 1, periodic, count. */
    if (lapict_svr_write(&timer, true) != LAPICT_OK ||
        lapict_tdcr_write(&timer, 0xB) != LAPICT_OK ||
        lapict_lvtt_write(&timer, LAPICT_LVTT_PERIODIC | VECTOR) != LAPICT_OK ||
        lapict_tmict_write(&timer, PERIOD_NS) != LAPICT_OK) {
        fprintf(stderr, "a register write failed\n");
        return 1;
    }
    if (!lapict_sim_run_until(&sim, 10 * (uint64_t)PERIOD_NS + PERIOD_NS / 2)) {
        fprintf(stderr, "the simulated host stopped (livelock)\n");
        return 1;
    }
    if (seen.bad || seen.n != 10) {
        fprintf(stderr, "%u interrupts in 10.5 periods, want 10\n", seen.n);
        return 1;
    }
    printf("lapict-sim %s: 10 periodic interrupts on the grid: ok\n",
           lapict_version_string());
    return 0;
}
