/* SPDX-License-Identifier: MIT */
/*
 * A program against an installed liblapict-apic, without the KVM adapter:
 * the LAPIC model around a timer on a host of its own, as a hypervisor
 * that emulates the APIC embeds it. Interrupts are held back by TPR and
 * ISR ("Task and Processor Priorities"), and the model's blob restores
 * into a second model that then behaves the same.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <lapict/lapict.h>
#include <lapict_apic.h>

#define BASE 0xFEE00000u
#define TPR 0x80u
#define EOI 0xB0u

struct vcpu {
    uint64_t now_ns; /* the clock; the guest TSC runs at 1 GHz on it */
    struct lapict_timer timer;
    struct lapict_apic apic;
};

static uint64_t op_now(void *ctx)
{
    return ((struct vcpu *)ctx)->now_ns;
}

static void op_arm(void *ctx, uint64_t host_ns)
{
    (void)ctx;
    (void)host_ns;
}

static void op_cancel(void *ctx)
{
    (void)ctx;
}

/* The timer's interrupt goes to the model's IRR. */
static bool op_inject(void *ctx, uint8_t vector)
{
    return lapict_apic_set_irq(&((struct vcpu *)ctx)->apic, vector);
}

static const struct lapict_ops ops = {
    .version = LAPICT_OPS_VERSION,
    .now_ns = op_now,
    .guest_tsc = op_now,
    .sw_timer_arm = op_arm,
    .sw_timer_cancel = op_cancel,
    .inject = op_inject,
};

static int setup(struct vcpu *v)
{
    struct lapict_config cfg;
    int rc;

    v->now_ns = 0;
    lapict_config_default(&cfg);
    cfg.tsc_khz = 1000000u;
    if ((rc = lapict_init(&v->timer, &cfg, &ops, v)) < 0)
        return rc;
    return lapict_apic_init(&v->apic, &v->timer, NULL, NULL);
}

static int reg_write(struct vcpu *v, uint32_t offset, uint32_t value)
{
    return lapict_apic_mmio(&v->apic, BASE + offset, (uint8_t *)&value, 4,
                            true);
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "apic_model: %s: %s\n", what, lapict_strerror(rc));
    return 1;
}

static int expect(const char *what, int got, int want)
{
    if (got == want)
        return 0;
    fprintf(stderr, "apic_model: %s: deliverable %d, expected %d\n", what, got,
            want);
    return 1;
}

int main(void)
{
    struct vcpu v, w;
    uint8_t blob[LAPICT_APIC_STATE_SIZE];
    int rc;

    if ((rc = setup(&v)) < 0)
        return fail("setup", rc);
    if ((rc = reg_write(&v, LAPICT_XAPIC_SVR, LAPICT_SVR_ENABLE | 0xFF)) < 0 ||
        (rc = reg_write(&v, TPR, 0x50)) < 0)
        return fail("MMIO write", rc);
    lapict_apic_set_irq(&v.apic, 0x45); /* class 4: below TPR, held */
    lapict_apic_set_irq(&v.apic, 0x61);
    if (expect("TPR 0x50", lapict_apic_deliverable(&v.apic), 0x61))
        return 1;
    lapict_apic_ack(&v.apic, 0x61); /* in service: PPR 0x60 */
    if (expect("0x61 in service", lapict_apic_deliverable(&v.apic), -1))
        return 1;

    if ((rc = lapict_apic_save(&v.apic, blob, sizeof(blob))) < 0)
        return fail("lapict_apic_save", rc);
    if ((rc = setup(&w)) < 0)
        return fail("setup", rc);
    if ((rc = lapict_apic_restore(&w.apic, blob, sizeof(blob))) < 0)
        return fail("lapict_apic_restore", rc);
    if (expect("restored", lapict_apic_deliverable(&w.apic), -1))
        return 1;
    if ((rc = reg_write(&w, EOI, 0)) < 0)
        return fail("EOI", rc);
    if (expect("after EOI, TPR 0x50", lapict_apic_deliverable(&w.apic), -1))
        return 1;
    if ((rc = reg_write(&w, TPR, 0)) < 0)
        return fail("TPR write", rc);
    if (expect("TPR 0", lapict_apic_deliverable(&w.apic), 0x45))
        return 1;
    printf("lapict-apic %s: ok\n", lapict_version_string());
    return 0;
}
