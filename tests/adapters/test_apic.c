/* SPDX-License-Identifier: MIT */
/*
 * adapters/apic/apic.c: the portable LAPIC model (lapict_apic.h), with its
 * timer on the fake host of tests/support (no KVM, no system call): xAPIC
 * MMIO and x2APIC/IA32_APIC_BASE MSR decoding with the #GP rules, SVR,
 * IPI destinations, what the ipi op gets, NMI, ESR, and the model's ops.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fake_host.h"
#include "lapict_apic.h"

#define BASE 0xFEE00000ull

struct mfx {
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_apic a;
    /* The model's ops, recorded. */
    unsigned nmis, bases, eois, ipis;
    int nmi_rc, base_rc, ipi_rc;
    uint64_t base;
    struct lapict_apic_ipi ipi; /* the last the ipi op got */
};

static struct mfx *F;

static int op_nmi(void *ctx)
{
    struct mfx *f = ctx;
    f->nmis++;
    return f->nmi_rc;
}

static int op_base(void *ctx, uint64_t base)
{
    struct mfx *f = ctx;
    f->bases++;
    f->base = base;
    return f->base_rc;
}

static void op_eoi(void *ctx)
{
    ((struct mfx *)ctx)->eois++;
}

static int op_ipi(void *ctx, const struct lapict_apic_ipi *ipi)
{
    struct mfx *f = ctx;
    f->ipis++;
    f->ipi = *ipi;
    return f->ipi_rc;
}

/* A host without an ipi op: it routes nothing. */
static const struct lapict_apic_ops ops = {
    .version = LAPICT_APIC_OPS_VERSION,
    .nmi = op_nmi,
    .base_changed = op_base,
    .eoi = op_eoi,
};

/* A VMM that routes IPIs. */
static const struct lapict_apic_ops ops_ipi = {
    .version = LAPICT_APIC_OPS_VERSION,
    .nmi = op_nmi,
    .base_changed = op_base,
    .eoi = op_eoi,
    .ipi = op_ipi,
};

static int setup(void **state)
{
    struct lapict_config c;

    F = calloc(1, sizeof(*F));
    assert_non_null(F);
    lapict_config_default(&c);
    c.tsc_khz = 1000000;
    fake_host_init(&F->h, 1000, c.tsc_khz, 0, false);
    assert_int_equal(fake_attach(&F->h, &F->t, &c), LAPICT_OK);
    assert_int_equal(lapict_apic_init(&F->a, &F->t, &ops, F), LAPICT_OK);
    *state = F;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(F);
    F = NULL;
    return 0;
}

static uint32_t mmio_rd(uint32_t off)
{
    uint32_t v = 0;
    assert_int_equal(
        lapict_apic_mmio(&F->a, BASE + off, (uint8_t *)&v, 4, false),
        LAPICT_OK);
    return v;
}

static void mmio_wr(uint32_t off, uint32_t v)
{
    assert_int_equal(
        lapict_apic_mmio(&F->a, BASE + off, (uint8_t *)&v, 4, true), LAPICT_OK);
}

static int rd(uint32_t msr, uint64_t *v)
{
    return lapict_apic_rdmsr(&F->a, msr, v);
}

static int wr(uint32_t msr, uint64_t v)
{
    return lapict_apic_wrmsr(&F->a, msr, v);
}

/* Rule: the xAPIC page decodes ID, version, TPR, PPR, SVR, the other
 * LVTs, and hands the timer registers to the core. */
static void xapic_mmio_decoding(void **state)
{
    uint8_t b[8];

    (void)state;
    assert_int_equal(mmio_rd(0x30), LAPICT_APIC_VERSION);
    assert_int_equal(mmio_rd(0x20), 0);
    assert_int_equal(mmio_rd(0xF0), 0xFF); /* SVR reset: disabled */
    mmio_wr(0xF0, 0x1FF);
    assert_int_equal(mmio_rd(0xF0), 0x1FF);
    mmio_wr(0x80, 0x25);
    assert_int_equal(mmio_rd(0x80), 0x25);
    assert_int_equal(lapict_apic_tpr(&F->a), 0x25);
    assert_int_equal(mmio_rd(0xA0), 0x25); /* PPR = TPR, ISR empty */
    mmio_wr(0x350, 0x700);                 /* LINT0 ExtINT */
    assert_int_equal(mmio_rd(0x350), 0x700);
    mmio_wr(0x3E0, 0xB);
    assert_int_equal(lapict_tdcr_read(&F->t), 0xB);
    mmio_wr(0x320, 0x20040); /* periodic, vector 0x40 */
    assert_int_equal(lapict_lvtt_read(&F->t), 0x20040);
    mmio_wr(0x380, 5000000);
    assert_int_equal(mmio_rd(0x380), 5000000);
    fake_stall(&F->h, 1000);
    assert_int_equal(mmio_rd(0x390), 5000000 - 1000);
    /* Not the APIC page; bytes between registers read 0. */
    assert_int_equal(lapict_apic_mmio(&F->a, BASE + 4096, b, 4, false),
                     LAPICT_E_NOREG);
    assert_int_equal(lapict_apic_mmio(&F->a, BASE - 4, b, 4, false),
                     LAPICT_E_NOREG);
    assert_int_equal(lapict_apic_mmio(&F->a, BASE, b, 0, false),
                     LAPICT_E_NOREG);
    assert_int_equal(mmio_rd(0x34), 0);
    /* A CR8 write seen by the host shows up as TPR. */
    lapict_apic_set_tpr(&F->a, 0x70);
    assert_int_equal(mmio_rd(0x80), 0x70);
}

/* Rule ("Spurious-Interrupt Vector Register"): a software-disabled APIC
 * masks the LVTs, LVTT included, and keeps them masked on writes. */
static void svr_disable_masks(void **state)
{
    (void)state;
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0x320, 0x40);
    mmio_wr(0x360, 0x400);
    mmio_wr(0xF0, 0xFF);
    assert_int_equal(mmio_rd(0x320) & 0x10000, 0x10000);
    assert_int_equal(mmio_rd(0x360) & 0x10000, 0x10000);
    mmio_wr(0x320, 0x40); /* stays masked while disabled */
    assert_int_equal(mmio_rd(0x320) & 0x10000, 0x10000);
}

/* Rule: IA32_APIC_BASE transitions ("x2APIC State Transitions") and the
 * x2APIC MSR #GP rules; every accepted base goes to the host. */
static void msr_decoding(void **state)
{
    uint64_t v = 0;

    (void)state;
    assert_int_equal(rd(0x1B, &v), 0);
    assert_int_equal(v, BASE | 0x900);
    /* x2APIC MSRs #GP in xAPIC mode. */
    assert_int_equal(rd(0x802, &v), LAPICT_E_GP);
    assert_int_equal(wr(0x808, 0), LAPICT_E_GP);
    /* Reserved bits, x2APIC without enable. */
    assert_int_equal(wr(0x1B, BASE | 0x801), LAPICT_E_GP);
    assert_int_equal(wr(0x1B, BASE | 0x400), LAPICT_E_GP);
    assert_int_equal(F->bases, 0);
    assert_int_equal(wr(0x1B, BASE | 0xC00), 0);
    assert_int_equal(F->bases, 1);
    assert_int_equal(F->base, BASE | 0xD00);
    assert_int_equal(rd(0x1B, &v), 0);
    assert_int_equal(v, BASE | 0xD00);
    /* x2APIC -> xAPIC directly is invalid. */
    assert_int_equal(wr(0x1B, BASE | 0x800), LAPICT_E_GP);
    assert_int_equal(rd(0x802, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(rd(0x803, &v), 0);
    assert_int_equal(v, LAPICT_APIC_VERSION);
    assert_int_equal(rd(0x80D, &v), 0);
    assert_int_equal(v, 1); /* LDR derived from ID 0 */
    assert_int_equal(wr(0x802, 1), LAPICT_E_GP);
    assert_int_equal(rd(0x80B, &v), LAPICT_E_GP); /* EOI write-only */
    assert_int_equal(wr(0x80B, 1), LAPICT_E_GP);
    assert_int_equal(wr(0x80B, 0), 0);
    assert_int_equal(F->eois, 1);
    assert_int_equal(rd(0x80E, &v), LAPICT_E_GP); /* no DFR */
    assert_int_equal(wr(0x80F, 0x1FF), 0);
    assert_int_equal(wr(0x80F, 1ull << 32), LAPICT_E_GP);
    assert_int_equal(wr(0x839, 0), LAPICT_E_GP); /* TMCCT */
    assert_int_equal(wr(0x832, 0x40040), 0);
    assert_int_equal(wr(0x6E0, 1ull << 62), 0);
    assert_int_equal(rd(0x6E0, &v), 0);
    assert_int_equal(v, 1ull << 62);
    assert_int_equal(rd(0x10, &v), LAPICT_E_NOREG);
    assert_int_equal(wr(0x3A, 0), LAPICT_E_NOREG);
    /* The xAPIC page reads all-ones in x2APIC mode. */
    assert_int_equal(mmio_rd(0x30), 0xFFFFFFFFu);
    /* Self IPI sets IRR. */
    assert_int_equal(wr(0x83F, 0x55), 0);
    assert_int_equal(rd(0x822, &v), 0); /* IRR bits 64-95 */
    assert_int_equal(v, 1u << (0x55 - 0x40));
    /* Disabling resets the APIC. */
    assert_int_equal(wr(0x1B, BASE), 0);
    assert_int_equal(lapict_lvtt_read(&F->t), 0x10000);
    assert_false(lapict_apic_irr_pending(&F->a));
}

/* Rule ("Local APIC Status and Location"): EXTD is reserved without x2APIC
 * in CPUID, base bits from MAXPHYADDR up are reserved. */
static void apic_base_follows_cpuid(void **state)
{
    uint64_t base = BASE | 0x900;

    (void)state;
    /* Defaults: 36 bits, x2APIC allowed. */
    assert_int_equal(wr(0x1B, base | (1ull << 36)), LAPICT_E_GP);
    lapict_apic_set_cpuid(&F->a, false, 39);
    assert_int_equal(wr(0x1B, base | (1ull << 38)), 0);
    assert_int_equal(wr(0x1B, base), 0);
    assert_int_equal(wr(0x1B, base | (1ull << 39)), LAPICT_E_GP);
    assert_int_equal(wr(0x1B, base | 0x400), LAPICT_E_GP);
    lapict_apic_set_cpuid(&F->a, true, 39);
    assert_int_equal(wr(0x1B, base | 0x400), 0);
}

/* Rule ("Interrupt Command Register"): fixed IPIs reach this APIC by the
 * broadcast ID and by logical destination; NMI mode goes to the nmi op;
 * all-excluding-self, INIT and SIPI do not act here, and with no ipi op
 * every IPI that may name another APIC is counted unrouted. While the
 * APIC is off, IA32_TSC_DEADLINE reads 0. */
static void ipi_destinations(void **state)
{
    uint64_t v = 1;

    (void)state;
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0x310, 0xFFu << 24);
    mmio_wr(0x300, 0x40); /* physical broadcast */
    assert_true(lapict_apic_irr_test(&F->a, 0x40));
    mmio_wr(0xD0, 0x02u << 24); /* LDR: flat bit 1 */
    mmio_wr(0x310, 0x02u << 24);
    mmio_wr(0x300, 0x800 | 0x41); /* logical, matches */
    assert_true(lapict_apic_irr_test(&F->a, 0x41));
    mmio_wr(0x310, 0x04u << 24);
    mmio_wr(0x300, 0x800 | 0x42); /* logical, other APIC */
    assert_false(lapict_apic_irr_test(&F->a, 0x42));
    mmio_wr(0xE0, 0x0FFFFFFFu); /* DFR: cluster model */
    mmio_wr(0xD0, 0x21u << 24); /* cluster 2, member bit 0 */
    mmio_wr(0x310, 0x21u << 24);
    mmio_wr(0x300, 0x800 | 0x44); /* logical cluster, matches */
    assert_true(lapict_apic_irr_test(&F->a, 0x44));
    mmio_wr(0x310, 0x31u << 24);
    mmio_wr(0x300, 0x800 | 0x45); /* other cluster */
    assert_false(lapict_apic_irr_test(&F->a, 0x45));
    mmio_wr(0x300, 0xC0000 | 0x43); /* all excluding self */
    mmio_wr(0x300, 0x40500);        /* INIT to self */
    mmio_wr(0x300, 0x40610);        /* SIPI to self */
    assert_false(lapict_apic_irr_test(&F->a, 0x43));
    assert_false(lapict_apic_irr_test(&F->a, 0x10));
    /* Each of them: the broadcast, four logical destinations, all
     * excluding self, and INIT and SIPI (the VMM's, even to self). */
    assert_int_equal(F->a.st.ipis_unrouted, 8);
    mmio_wr(0x310, 0);
    mmio_wr(0x300, 0x400); /* NMI to own ID */
    assert_int_equal(F->nmis, 1);
    assert_int_equal(F->a.st.ipis_unrouted, 8);
    assert_int_equal(wr(0x6E0, 12345), 0);
    assert_int_equal(wr(0x1B, BASE | 0x100), 0); /* off */
    assert_int_equal(rd(0x6E0, &v), 0);
    assert_int_equal(v, 0);
}

/* Rule: delivery follows priority ("Interrupt, Task, and Processor
 * Priority"): the highest IRR class above PPR; ack moves IRR to ISR, which
 * raises PPR; EOI clears the highest ISR bit and tells the host. */
static void priority_and_ack(void **state)
{
    (void)state;
    mmio_wr(0xF0, 0x1FF);
    assert_int_equal(lapict_apic_deliverable(&F->a), -1);
    assert_true(lapict_apic_set_irq(&F->a, 0x41));
    assert_false(lapict_apic_set_irq(&F->a, 0x41)); /* already pending */
    assert_true(lapict_apic_set_irq(&F->a, 0x62));
    assert_int_equal(lapict_apic_deliverable(&F->a), 0x62);
    lapict_apic_ack(&F->a, 0x62);
    assert_int_equal(mmio_rd(0xA0), 0x60);                /* PPR from ISR */
    assert_int_equal(lapict_apic_deliverable(&F->a), -1); /* 0x41 below */
    mmio_wr(0xB0, 0);
    assert_int_equal(F->eois, 1);
    assert_int_equal(lapict_apic_deliverable(&F->a), 0x41);
    lapict_apic_set_tpr(&F->a, 0x50); /* TPR class 5 blocks class 4 */
    assert_int_equal(lapict_apic_deliverable(&F->a), -1);
    assert_true(lapict_apic_irr_pending(&F->a));
}

/* Rule ("Error Handling"): an illegal vector (0-15) this APIC receives,
 * from its LVT or a self IPI, sets ESR bit 6 "Receive Illegal Vector"
 * (not bit 5, "Send"), latched by the next ESR write. */
static void illegal_vector_sets_receive_bit(void **state)
{
    (void)state;
    mmio_wr(0xF0, 0x1FF);
    assert_false(lapict_apic_set_irq(&F->a, 5));
    assert_int_equal(mmio_rd(0x280), 0); /* not latched yet */
    mmio_wr(0x280, 0);
    assert_int_equal(mmio_rd(0x280), LAPICT_APIC_ESR_RECV_ILLEGAL);
    assert_int_equal(mmio_rd(0x280) & LAPICT_APIC_ESR_SEND_ILLEGAL, 0);
    mmio_wr(0x280, 0);
    assert_int_equal(mmio_rd(0x280), 0);
    lapict_apic_error(&F->a, LAPICT_APIC_ESR_RECV_ILLEGAL);
    mmio_wr(0x280, 0);
    assert_int_equal(mmio_rd(0x280), 0x40);
}

/* Rule: an op's failure (the host could not deliver the NMI or mirror the
 * base) is returned by the access that caused it, which is complete. */
static void op_failures_returned(void **state)
{
    uint64_t v;

    (void)state;
    F->base_rc = LAPICT_E_SYSTEM;
    assert_int_equal(wr(0x1B, BASE | 0xC00), LAPICT_E_SYSTEM);
    assert_int_equal(rd(0x1B, &v), 0);
    assert_int_equal(v, BASE | 0xD00); /* the write took effect */
    F->nmi_rc = LAPICT_E_SYSTEM;
    assert_int_equal(wr(0x830, 0x40400), LAPICT_E_SYSTEM);
    assert_int_equal(F->nmis, 1);
    /* NULL ops: counted, nothing called. */
    assert_int_equal(lapict_apic_init(&F->a, &F->t, NULL, NULL), LAPICT_OK);
    mmio_wr(0x300, 0x40400);
    assert_int_equal(F->a.st.nmis, 1);
    assert_int_equal(lapict_apic_init(NULL, &F->t, NULL, NULL), LAPICT_E_INVAL);
}

/* --- IPIs and the ipi op --------------------------------------------- */

/* One ICR write and what must come of it. */
struct ipi_case {
    const char *what;
    bool x2;          /* sent in x2APIC mode (ICR MSR), else xAPIC MMIO */
    uint32_t lo;      /* ICR[31:0] */
    uint32_t dest;    /* the destination field */
    bool routed;      /* the ipi op gets it */
    bool here;        /* delivered here (IRR, nmi op): delivered_here */
    uint8_t mode, sh; /* the decoded fields the op gets */
    bool logical, level, trig;
};

#define D_FIX LAPICT_APIC_DM_FIXED
#define D_LOW LAPICT_APIC_DM_LOWEST
#define D_SMI LAPICT_APIC_DM_SMI
#define D_NMI LAPICT_APIC_DM_NMI
#define D_INIT LAPICT_APIC_DM_INIT
#define D_SIPI LAPICT_APIC_DM_STARTUP
#define S_NO LAPICT_APIC_SH_NONE
#define S_SELF LAPICT_APIC_SH_SELF
#define S_ALL LAPICT_APIC_SH_ALL
#define S_OTH LAPICT_APIC_SH_OTHERS

/*
 * A fresh model on @tbl, APIC ID 0, software-enabled, xAPIC LDR flat bit 1
 * (x2APIC: its derived logical ID, cluster 0 bit 0), then @c's ICR write.
 */
static void send_ipi_case(const struct lapict_apic_ops *tbl,
                          const struct ipi_case *c)
{
    assert_int_equal(lapict_apic_init(&F->a, &F->t, tbl, F), LAPICT_OK);
    F->ipis = F->nmis = 0;
    memset(&F->ipi, 0, sizeof(F->ipi));
    if (c->x2) {
        assert_int_equal(wr(0x1B, BASE | 0xD00), LAPICT_OK);
        assert_int_equal(wr(0x80F, 0x1FF), LAPICT_OK);
        assert_int_equal(wr(0x830, (uint64_t)c->dest << 32 | c->lo), LAPICT_OK);
        return;
    }
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0xD0, 0x02u << 24);
    mmio_wr(0x310, c->dest << 24);
    mmio_wr(0x300, c->lo);
}

/* Each case on the routing VMM's table: the ipi op got exactly its IPI,
 * once or not at all, and this APIC's own part is as the case says. */
static void run_ipi_cases(const struct ipi_case *c, size_t n)
{
    for (; n--; c++) {
        const struct lapict_apic_ipi *g = &F->ipi;
        bool local;

        send_ipi_case(&ops_ipi, c);
        if (F->ipis != (c->routed ? 1u : 0u) ||
            F->a.st.ipis_routed != (c->routed ? 1u : 0u))
            fail_msg("%s: the ipi op was called %u times", c->what, F->ipis);
        if (F->a.st.ipis_unrouted)
            fail_msg("%s: counted unrouted beside an ipi op", c->what);
        local = c->mode == D_NMI ? F->nmis == 1
                                 : lapict_apic_irr_test(&F->a, (uint8_t)c->lo);
        if (local != c->here)
            fail_msg("%s: delivered here: %d", c->what, local);
        if (c->routed && (g->dest != c->dest || g->vector != (uint8_t)c->lo ||
                          g->mode != c->mode || g->shorthand != c->sh ||
                          g->logical != c->logical || g->level != c->level ||
                          g->trigger_level != c->trig || g->x2apic != c->x2 ||
                          g->delivered_here != c->here))
            fail_msg("%s: the op got dest 0x%x vector 0x%x mode %u "
                     "shorthand %u logical %d level %d trigger %d x2apic %d "
                     "delivered_here %d",
                     c->what, g->dest, g->vector, g->mode, g->shorthand,
                     g->logical, g->level, g->trigger_level, g->x2apic,
                     g->delivered_here);
    }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Rule ("Interrupt Command Register (ICR)", "Determining IPI Destination"):
 * an IPI whose destination names other APICs reaches the ipi op with the
 * ICR's fields decoded; a lowest-priority one is not taken here (the VMM
 * arbitrates); an xAPIC logical destination is always routed, since
 * another APIC may share the LDR bits, and delivered here too if it
 * matches. */
static void ipi_for_other_apics_goes_to_op(void **state)
{
    static const struct ipi_case c[] = {
        {"fixed, physical, another ID", false, 0x41, 3, true, false, D_FIX,
         S_NO, false, false, false},
        {"fixed, logical flat, another bit", false, 0x842, 0x04, true, false,
         D_FIX, S_NO, true, false, false},
        {"fixed, logical flat, this bit too", false, 0x843, 0x06, true, true,
         D_FIX, S_NO, true, false, false},
        {"lowest priority, physical, another ID", false, 0x144, 5, true, false,
         D_LOW, S_NO, false, false, false},
        {"lowest priority, logical, this bit too", false, 0x945, 0x03, true,
         false, D_LOW, S_NO, true, false, false},
        {"NMI, physical, another ID", false, 0x400, 7, true, false, D_NMI, S_NO,
         false, false, false},
        {"fixed, level assert, trigger level", false, 0xC046, 2, true, false,
         D_FIX, S_NO, false, true, true},
        {"x2APIC fixed, physical ID 0x100", true, 0x47, 0x100, true, false,
         D_FIX, S_NO, false, false, false},
        {"x2APIC fixed, logical, another cluster", true, 0x848, 0x10001, true,
         false, D_FIX, S_NO, true, false, false},
        {"x2APIC fixed, logical, this member and another", true, 0x849, 0x3,
         true, true, D_FIX, S_NO, true, false, false},
    };

    (void)state;
    run_ipi_cases(c, N(c));
}

/* Rule ("Interrupt Command Register (ICR)"): SMI, INIT, start-up and the
 * reserved modes are never acted on here: they reach the ipi op whoever
 * they name, this APIC's own ID or shorthand included (INIT level
 * de-assert too, with its level 0 and trigger level). */
static void init_sipi_smi_go_to_op(void **state)
{
    static const struct ipi_case c[] = {
        {"INIT, physical, another ID", false, 0x4500, 1, true, false, D_INIT,
         S_NO, false, true, false},
        {"SIPI, physical, another ID", false, 0x4620, 1, true, false, D_SIPI,
         S_NO, false, true, false},
        {"INIT, physical, own ID", false, 0x4500, 0, true, false, D_INIT, S_NO,
         false, true, false},
        {"SIPI, physical, own ID", false, 0x4608, 0, true, false, D_SIPI, S_NO,
         false, true, false},
        {"INIT, all excluding self", false, 0xC4500, 0, true, false, D_INIT,
         S_OTH, false, true, false},
        {"SIPI, all excluding self", false, 0xC4610, 0, true, false, D_SIPI,
         S_OTH, false, true, false},
        {"INIT level de-assert, all including self", false, 0x88500, 0, true,
         false, D_INIT, S_ALL, false, false, true},
        {"INIT, shorthand self", false, 0x44500, 0, true, false, D_INIT, S_SELF,
         false, true, false},
        {"SMI, shorthand self", false, 0x40200, 0, true, false, D_SMI, S_SELF,
         false, false, false},
        {"reserved mode 3, own ID", false, 0x330, 0, true, false, 3, S_NO,
         false, false, false},
        {"x2APIC INIT, physical ID 0x100", true, 0x4500, 0x100, true, false,
         D_INIT, S_NO, false, true, false},
        {"x2APIC SIPI, own logical ID", true, 0xCE0A, 1, true, false, D_SIPI,
         S_NO, true, true, true},
    };

    (void)state;
    run_ipi_cases(c, N(c));
}

/* Rule ("Interrupt Command Register (ICR)"): a broadcast (ID 0xFF, x2APIC
 * 0xFFFFFFFF) or all-including-self IPI is delivered here and routed to
 * the others, delivered_here set; all-excluding-self only routed. */
static void broadcasts_go_to_op(void **state)
{
    static const struct ipi_case c[] = {
        {"fixed, physical broadcast", false, 0x50, 0xFF, true, true, D_FIX,
         S_NO, false, false, false},
        {"fixed, logical broadcast", false, 0x851, 0xFF, true, true, D_FIX,
         S_NO, true, false, false},
        {"fixed, all including self", false, 0x80052, 0, true, true, D_FIX,
         S_ALL, false, false, false},
        {"fixed, all excluding self", false, 0xC0053, 0, true, false, D_FIX,
         S_OTH, false, false, false},
        {"NMI, physical broadcast", false, 0x400, 0xFF, true, true, D_NMI, S_NO,
         false, false, false},
        {"NMI, all excluding self", false, 0xC0400, 0, true, false, D_NMI,
         S_OTH, false, false, false},
        {"lowest priority, all including self", false, 0x80154, 0, true, false,
         D_LOW, S_ALL, false, false, false},
        {"x2APIC fixed, broadcast", true, 0x55, 0xFFFFFFFFu, true, true, D_FIX,
         S_NO, false, false, false},
        {"x2APIC fixed, all excluding self", true, 0xC0056, 0, true, false,
         D_FIX, S_OTH, false, false, false},
    };

    (void)state;
    run_ipi_cases(c, N(c));
}

/* Rule ("Interrupt Command Register (ICR)"): an IPI for this APIC and no
 * other (shorthand self, its physical ID, its x2APIC logical ID) is
 * delivered here as before and never reaches the ipi op. */
static void ipi_for_this_apic_stays_local(void **state)
{
    static const struct ipi_case c[] = {
        {"fixed, shorthand self", false, 0x40060, 0, false, true, D_FIX, S_SELF,
         false, false, false},
        {"fixed, physical, own ID", false, 0x61, 0, false, true, D_FIX, S_NO,
         false, false, false},
        {"fixed, level triggered, own ID", false, 0xC062, 0, false, true, D_FIX,
         S_NO, false, true, true},
        {"lowest priority, own ID", false, 0x163, 0, false, true, D_LOW, S_NO,
         false, false, false},
        {"NMI, own ID", false, 0x400, 0, false, true, D_NMI, S_NO, false, false,
         false},
        {"x2APIC fixed, physical, own ID", true, 0x64, 0, false, true, D_FIX,
         S_NO, false, false, false},
        {"x2APIC fixed, own logical ID", true, 0x865, 1, false, true, D_FIX,
         S_NO, true, false, false},
        {"x2APIC fixed, shorthand self", true, 0x40066, 0, false, true, D_FIX,
         S_SELF, false, false, false},
    };

    (void)state;
    run_ipi_cases(c, N(c));
    /* The x2APIC SELF IPI register: fixed, to this APIC. */
    assert_int_equal(lapict_apic_init(&F->a, &F->t, &ops_ipi, F), LAPICT_OK);
    F->ipis = 0;
    assert_int_equal(wr(0x1B, BASE | 0xD00), LAPICT_OK);
    assert_int_equal(wr(0x83F, 0x67), LAPICT_OK);
    assert_true(lapict_apic_irr_test(&F->a, 0x67));
    assert_int_equal(F->ipis, 0);
}

/* Rule: without an ipi op (none, a table without one, a table of version
 * 1 whatever lies past its end) nothing is routed, but every IPI that
 * needed routing is counted in st.ipis_unrouted; this APIC's own part is
 * delivered as with one (lowest priority too: it is the only candidate). */
static void ipi_without_op_is_counted(void **state)
{
    static const struct lapict_apic_ops v1 = {
        .version = 1,
        .nmi = op_nmi,
        .ipi = op_ipi, /* past a version-1 table: never read */
    };
    const struct lapict_apic_ops *const tables[] = {NULL, &ops, &v1};
    static const struct ipi_case c[] = {
        {"fixed, physical, another ID", false, 0x41, 3, true, false, D_FIX,
         S_NO, false, false, false},
        {"INIT, physical, own ID", false, 0x4500, 0, true, false, D_INIT, S_NO,
         false, true, false},
        {"SIPI, all excluding self", false, 0xC4610, 0, true, false, D_SIPI,
         S_OTH, false, true, false},
        {"fixed, physical broadcast", false, 0x42, 0xFF, true, true, D_FIX,
         S_NO, false, false, false},
        {"lowest priority, physical broadcast", false, 0x143, 0xFF, true, true,
         D_LOW, S_NO, false, false, false},
        {"x2APIC fixed, physical ID 0x100", true, 0x44, 0x100, true, false,
         D_FIX, S_NO, false, false, false},
        {"fixed, shorthand self", false, 0x40045, 0, false, true, D_FIX, S_SELF,
         false, false, false},
        {"x2APIC fixed, own logical ID", true, 0x846, 1, false, true, D_FIX,
         S_NO, true, false, false},
    };

    (void)state;
    for (size_t t = 0; t < N(tables); t++) {
        for (size_t i = 0; i < N(c); i++) {
            send_ipi_case(tables[t], &c[i]);
            if (F->ipis || F->a.st.ipis_routed)
                fail_msg("table %zu, %s: routed", t, c[i].what);
            if (F->a.st.ipis_unrouted != (c[i].routed ? 1u : 0u))
                fail_msg("table %zu, %s: %u unrouted", t, c[i].what,
                         (unsigned)F->a.st.ipis_unrouted);
            if (lapict_apic_irr_test(&F->a, (uint8_t)c[i].lo) != c[i].here)
                fail_msg("table %zu, %s: delivered here", t, c[i].what);
        }
    }
}

/* Rule: the ipi op's error is returned by the ICR write, which is
 * complete (this APIC's part delivered, ICR written). */
static void ipi_op_error_returned(void **state)
{
    uint32_t lo = 0x70, v = 0;

    (void)state;
    assert_int_equal(lapict_apic_init(&F->a, &F->t, &ops_ipi, F), LAPICT_OK);
    mmio_wr(0x310, 0xFFu << 24);
    F->ipi_rc = LAPICT_E_SYSTEM;
    assert_int_equal(
        lapict_apic_mmio(&F->a, BASE + 0x300, (uint8_t *)&lo, 4, true),
        LAPICT_E_SYSTEM);
    assert_int_equal(F->ipis, 1);
    assert_true(lapict_apic_irr_test(&F->a, 0x70));
    assert_int_equal(
        lapict_apic_mmio(&F->a, BASE + 0x300, (uint8_t *)&v, 4, false),
        LAPICT_OK);
    assert_int_equal(v, 0x70);
    assert_int_equal(wr(0x1B, BASE | 0xD00), LAPICT_OK);
    assert_int_equal(wr(0x830, 0x500000004500ull), LAPICT_E_SYSTEM);
    assert_int_equal(F->ipi.mode, LAPICT_APIC_DM_INIT);
    assert_int_equal(F->ipi.dest, 0x5000);
    /* An NMI op failing first wins; the IPI is still routed. */
    F->nmi_rc = LAPICT_E_OPS;
    assert_int_equal(wr(0x830, 0xFFFFFFFF00000400ull), LAPICT_E_OPS);
    assert_int_equal(F->ipis, 3);
}

/* What lapict_apic_dest_match() says of a destination field. */
struct dest_case {
    const char *what;
    bool x2;               /* the candidate APIC in x2APIC mode */
    uint32_t id, ldr, dfr; /* its registers (xAPIC ID in 7:0) */
    bool logical;
    uint32_t dest;
    bool match;
};

/* Rule ("Physical Destination Mode", "Logical Destination Mode"): a VMM
 * matches a routed IPI against each vCPU's model by that model's mode:
 * physical ID and broadcast, flat and cluster LDRs, x2APIC clusters. */
static void dest_match_rules(void **state)
{
    static const struct dest_case c[] = {
        {"physical, its ID", false, 3, 0, ~0u, false, 3, true},
        {"physical, another ID", false, 3, 0, ~0u, false, 4, false},
        {"physical broadcast", false, 3, 0, ~0u, false, 0xFF, true},
        {"xAPIC: only 8 bits count", false, 3, 0, ~0u, false, 0x103, true},
        {"flat, its bit", false, 3, 0x04000000, ~0u, true, 0x0C, true},
        {"flat, other bits", false, 3, 0x04000000, ~0u, true, 0x0B, false},
        {"flat, broadcast", false, 3, 0x04000000, ~0u, true, 0xFF, true},
        {"cluster, its cluster and bit", false, 3, 0x24000000, 0x0FFFFFFF, true,
         0x26, true},
        {"cluster, another cluster", false, 3, 0x24000000, 0x0FFFFFFF, true,
         0x36, false},
        {"cluster, another member", false, 3, 0x24000000, 0x0FFFFFFF, true,
         0x22, false},
        {"x2APIC physical, its ID", true, 0x123, 0, 0, false, 0x123, true},
        {"x2APIC physical, 8 bits of it", true, 0x123, 0, 0, false, 0x23,
         false},
        {"x2APIC broadcast", true, 0x123, 0, 0, false, 0xFFFFFFFFu, true},
        {"x2APIC logical, its cluster and bit", true, 0x123, 0, 0, true,
         0x120008, true},
        {"x2APIC logical, another cluster", true, 0x123, 0, 0, true, 0x130008,
         false},
        {"x2APIC logical, another member", true, 0x123, 0, 0, true, 0x120004,
         false},
    };

    (void)state;
    for (size_t i = 0; i < N(c); i++) {
        assert_int_equal(lapict_apic_init(&F->a, &F->t, &ops, F), LAPICT_OK);
        if (c[i].x2) {
            assert_int_equal(wr(0x1B, BASE | 0xD00), LAPICT_OK);
            F->a.id = c[i].id; /* the x2APIC ID is the host's to set */
        } else {
            mmio_wr(0x20, c[i].id << 24);
            mmio_wr(0xD0, c[i].ldr);
            mmio_wr(0xE0, c[i].dfr);
        }
        if (lapict_apic_dest_match(&F->a, c[i].logical, c[i].dest) !=
            c[i].match)
            fail_msg("%s: not %s", c[i].what,
                     c[i].match ? "matched" : "refused");
    }
}

/* --- save and restore ------------------------------------------------- */

/* The blob's CRC-32 recomputed after a test edited a field. */
static uint32_t t_crc(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void reseal(uint8_t *b)
{
    put_le32(b + 156, t_crc(b, 156));
}

/* A busy model: enabled, TPR, LDR/DFR cluster, ESR latched, ICR, LVTs,
 * IRR and nested ISR. */
static void busy_model(void)
{
    mmio_wr(0xF0, 0x1FF);
    mmio_wr(0x20, 0x05000000);
    mmio_wr(0x80, 0x20);
    mmio_wr(0xD0, 0x12000000);
    mmio_wr(0xE0, 0x0FFFFFFF);
    mmio_wr(0x350, 0x700);
    mmio_wr(0x370, 0x10033);
    mmio_wr(0x310, 0x07000000);
    lapict_apic_error(&F->a, LAPICT_APIC_ESR_RECV_ILLEGAL);
    mmio_wr(0x280, 0);
    lapict_apic_error(&F->a, LAPICT_APIC_ESR_SEND_ILLEGAL);
    assert_true(lapict_apic_set_irq(&F->a, 0x51));
    lapict_apic_ack(&F->a, 0x51);
    assert_true(lapict_apic_set_irq(&F->a, 0x90));
    lapict_apic_ack(&F->a, 0x90);
    assert_true(lapict_apic_set_irq(&F->a, 0x40));
    assert_true(lapict_apic_set_irq(&F->a, 0xE1));
}

/* The registers a guest (or the host) can see, for comparing two models. */
static void visible(struct lapict_apic *a, uint32_t *out)
{
    static const uint32_t offs[] = {0x20,  0x80,  0xA0,  0xD0,  0xE0,
                                    0xF0,  0x280, 0x2F0, 0x300, 0x310,
                                    0x330, 0x340, 0x350, 0x360, 0x370};
    unsigned n = 0;

    for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
        uint32_t v = 0;
        assert_int_equal(
            lapict_apic_mmio(a, BASE + offs[i], (uint8_t *)&v, 4, false),
            LAPICT_OK);
        out[n++] = v;
    }
    for (unsigned i = 0; i < 8; i++) {
        out[n++] = a->irr[i];
        out[n++] = a->isr[i];
    }
    out[n++] = (uint32_t)a->apic_base;
    out[n++] = a->esr_pending;
    out[n++] = (uint32_t)lapict_apic_deliverable(a);
}

/* Rule (docs/spec/timer.md "Save and restore", for the model around the timer):
 * save has no side effects, restore into a fresh model gives the same
 * registers, IRR/ISR, priorities and pending ESR bits; the next EOI and
 * deliveries behave the same on both. */
static void state_round_trip(void **state)
{
    uint8_t b[LAPICT_APIC_STATE_SIZE], b2[LAPICT_APIC_STATE_SIZE];
    uint32_t v1[64] = {0}, v2[64] = {0};
    struct lapict_apic d;

    (void)state;
    busy_model();
    visible(&F->a, v1);
    assert_int_equal(lapict_apic_save(&F->a, b, sizeof(b)), LAPICT_OK);
    visible(&F->a, v2);
    assert_memory_equal(v1, v2, sizeof(v1)); /* no side effects */
    assert_int_equal(lapict_apic_init(&d, &F->t, &ops, F), LAPICT_OK);
    F->bases = 0;
    assert_int_equal(lapict_apic_restore(&d, b, sizeof(b)), LAPICT_OK);
    assert_int_equal(F->bases, 0); /* same base: nothing to mirror */
    visible(&d, v2);
    assert_memory_equal(v1, v2, sizeof(v1));
    assert_int_equal(lapict_apic_save(&d, b2, sizeof(b2)), LAPICT_OK);
    assert_memory_equal(b, b2, sizeof(b));
    /* Deliverable 0xE1 (above PPR 0x90); EOI pops 0x90 on both. */
    assert_int_equal(lapict_apic_deliverable(&d), 0xE1);
    {
        uint32_t z = 0;
        assert_int_equal(
            lapict_apic_mmio(&d, BASE + 0xB0, (uint8_t *)&z, 4, true),
            LAPICT_OK);
    }
    assert_false(lapict_apic_irr_test(&d, 0x90) || (d.isr[4] & 1u << 16));
    assert_true(d.isr[2] & (1u << 17)); /* 0x51 still in service */
}

/* Rule: a moved base or x2APIC mode travels, and the host hears of a base
 * that differs from the destination's (base_changed op). */
static void state_x2apic_and_base(void **state)
{
    uint8_t b[LAPICT_APIC_STATE_SIZE];
    struct lapict_apic d;
    uint64_t v;

    (void)state;
    assert_int_equal(wr(0x1B, BASE | 0xD00), LAPICT_OK); /* x2APIC */
    assert_int_equal(wr(0x808, 0x30), LAPICT_OK);
    assert_int_equal(wr(0x830, 0x0000000300000041ull), LAPICT_OK);
    assert_int_equal(lapict_apic_save(&F->a, b, sizeof(b)), LAPICT_OK);
    assert_int_equal(lapict_apic_init(&d, &F->t, &ops, F), LAPICT_OK);
    F->bases = 0;
    assert_int_equal(lapict_apic_restore(&d, b, sizeof(b)), LAPICT_OK);
    assert_int_equal(F->bases, 1);
    assert_int_equal(F->base, BASE | 0xD00);
    assert_true(lapict_apic_x2apic(&d));
    assert_int_equal(lapict_apic_rdmsr(&d, 0x830, &v), LAPICT_OK);
    assert_int_equal(v, 0x0000000300000041ull);
    assert_int_equal(lapict_apic_rdmsr(&d, 0x808, &v), LAPICT_OK);
    assert_int_equal(v, 0x30);
    /* A host that cannot mirror it hears of it; the state is loaded. */
    assert_int_equal(lapict_apic_init(&d, &F->t, &ops, F), LAPICT_OK);
    F->base_rc = LAPICT_E_SYSTEM;
    assert_int_equal(lapict_apic_restore(&d, b, sizeof(b)), LAPICT_E_SYSTEM);
    assert_true(lapict_apic_x2apic(&d));
}

/* One edit of a valid blob and the status restore must give for it. */
struct bad_blob {
    const char *what;
    unsigned off;
    uint32_t val;
    bool keep_crc;
    int rc;
};

/* Rule: an untrusted blob is validated in full (magic, version, size,
 * checksum, reserved bytes, every register's stored bits, the base rules
 * of this CPU model, vectors 0-15); a rejected one changes nothing. */
static void state_rejects_bad_blobs(void **state)
{
    static const struct bad_blob bad[] = {
        {"magic", 0, 0x41504140, false, LAPICT_E_STATE_MAGIC},
        {"version 2", 4, 0x00A00002, false, LAPICT_E_STATE_VERSION},
        {"version 0", 4, 0x00A00000, false, LAPICT_E_STATE_VERSION},
        {"size field", 4, 0x00800001, false, LAPICT_E_STATE_SIZE},
        {"checksum", 20, 0x30, true, LAPICT_E_STATE_CHECKSUM},
        {"reserved byte", 140, 1, false, LAPICT_E_STATE_FIELD},
        {"reserved last", 152, 0x01000000, false, LAPICT_E_STATE_FIELD},
        {"base reserved bit 9", 8, 0xFEE00B00, false, LAPICT_E_STATE_FIELD},
        {"base above MAXPHYADDR", 12, 0x10, false, LAPICT_E_STATE_FIELD},
        {"EXTD without EN", 8, 0xFEE00500, false, LAPICT_E_STATE_FIELD},
        {"BSP flag differs", 8, 0xFEE00800, false, LAPICT_E_STATE_CONFIG},
        {"xAPIC id > 8 bits", 16, 0x100, false, LAPICT_E_STATE_FIELD},
        {"TPR > 0xFF", 20, 0x100, false, LAPICT_E_STATE_FIELD},
        {"LDR low bits", 24, 0x12000001, false, LAPICT_E_STATE_FIELD},
        {"DFR low bits", 28, 0xF0000000, false, LAPICT_E_STATE_FIELD},
        {"SVR reserved", 32, 0x21FF, false, LAPICT_E_STATE_FIELD},
        {"ESR bit 4", 36, 0x10, false, LAPICT_E_STATE_FIELD},
        {"ESR pending bit 8", 40, 0x100, false, LAPICT_E_STATE_FIELD},
        {"ICR busy bit", 44, 0x1000, false, LAPICT_E_STATE_FIELD},
        {"ICR2 low bits in xAPIC", 48, 0x07000001, false, LAPICT_E_STATE_FIELD},
        {"LVT CMCI bit 11", 52, 0x10800, false, LAPICT_E_STATE_FIELD},
        {"LVT error mode bits", 72, 0x10733, false, LAPICT_E_STATE_FIELD},
        {"IRR vector 3", 76, 0x8, false, LAPICT_E_STATE_FIELD},
        {"ISR vector 15", 108, 0x8000, false, LAPICT_E_STATE_FIELD},
    };
    uint8_t good[LAPICT_APIC_STATE_SIZE], b[LAPICT_APIC_STATE_SIZE + 1];
    uint8_t before[LAPICT_APIC_STATE_SIZE], after[LAPICT_APIC_STATE_SIZE];

    (void)state;
    busy_model();
    assert_int_equal(lapict_apic_save(&F->a, good, sizeof(good)), LAPICT_OK);
    /* The destination: another model, with its own state. */
    assert_int_equal(lapict_apic_init(&F->a, &F->t, &ops, F), LAPICT_OK);
    mmio_wr(0x80, 0x70);
    assert_int_equal(lapict_apic_save(&F->a, before, sizeof(before)),
                     LAPICT_OK);
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memcpy(b, good, sizeof(good));
        put_le32(b + bad[i].off, bad[i].val);
        if (!bad[i].keep_crc)
            reseal(b);
        assert_int_equal(lapict_apic_state_check(&F->a, b, sizeof(good)),
                         bad[i].rc);
        if (lapict_apic_restore(&F->a, b, sizeof(good)) != bad[i].rc)
            fail_msg("%s: restore gave another status", bad[i].what);
        assert_int_equal(lapict_apic_save(&F->a, after, sizeof(after)),
                         LAPICT_OK);
        if (memcmp(before, after, sizeof(after)))
            fail_msg("%s: a rejected blob changed the model", bad[i].what);
    }
    /* LVTs unmasked while SVR software-disables: not reachable. */
    memcpy(b, good, sizeof(good));
    put_le32(b + 32, 0xFF);
    reseal(b);
    assert_int_equal(lapict_apic_restore(&F->a, b, sizeof(good)),
                     LAPICT_E_STATE_FIELD);
    /* x2APIC mode where CPUID has none. */
    lapict_apic_set_cpuid(&F->a, false, 0);
    memcpy(b, good, sizeof(good));
    put_le32(b + 8, 0xFEE00D00);
    put_le32(b + 48, 0);
    reseal(b);
    assert_int_equal(lapict_apic_restore(&F->a, b, sizeof(good)),
                     LAPICT_E_STATE_FIELD);
    lapict_apic_set_cpuid(&F->a, true, 0);
    assert_int_equal(lapict_apic_restore(&F->a, b, sizeof(good)), LAPICT_OK);
    assert_int_equal(lapict_apic_init(&F->a, &F->t, &ops, F), LAPICT_OK);
    /* Lengths, NULLs. */
    assert_int_equal(lapict_apic_restore(&F->a, good, sizeof(good) - 1),
                     LAPICT_E_STATE_SIZE);
    memcpy(b, good, sizeof(good));
    assert_int_equal(lapict_apic_restore(&F->a, b, sizeof(good) + 1),
                     LAPICT_E_STATE_SIZE);
    assert_int_equal(lapict_apic_save(&F->a, b, sizeof(good) - 1),
                     LAPICT_E_STATE_SIZE);
    assert_int_equal(lapict_apic_save(NULL, b, sizeof(b)), LAPICT_E_INVAL);
    assert_int_equal(lapict_apic_restore(&F->a, NULL, sizeof(good)),
                     LAPICT_E_INVAL);
    assert_int_equal(lapict_apic_state_check(NULL, good, sizeof(good)),
                     LAPICT_E_INVAL);
    assert_int_equal(lapict_apic_restore(&F->a, good, sizeof(good)), LAPICT_OK);
}

/* Rule: every single-bit flip of a valid blob is rejected (the CRC) and
 * leaves the model as it was. */
static void state_bit_flips_rejected(void **state)
{
    uint8_t good[LAPICT_APIC_STATE_SIZE], b[LAPICT_APIC_STATE_SIZE];
    uint8_t before[LAPICT_APIC_STATE_SIZE], after[LAPICT_APIC_STATE_SIZE];

    (void)state;
    busy_model();
    assert_int_equal(lapict_apic_save(&F->a, good, sizeof(good)), LAPICT_OK);
    assert_int_equal(lapict_apic_init(&F->a, &F->t, &ops, F), LAPICT_OK);
    assert_int_equal(lapict_apic_save(&F->a, before, sizeof(before)),
                     LAPICT_OK);
    for (unsigned bit = 0; bit < 8 * LAPICT_APIC_STATE_SIZE; bit++) {
        memcpy(b, good, sizeof(b));
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_true(lapict_apic_restore(&F->a, b, sizeof(b)) < 0);
        assert_int_equal(lapict_apic_save(&F->a, after, sizeof(after)),
                         LAPICT_OK);
        assert_memory_equal(before, after, sizeof(after));
    }
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(xapic_mmio_decoding),
        T(svr_disable_masks),
        T(msr_decoding),
        T(apic_base_follows_cpuid),
        T(ipi_destinations),
        T(priority_and_ack),
        T(illegal_vector_sets_receive_bit),
        T(op_failures_returned),
        T(ipi_for_other_apics_goes_to_op),
        T(init_sipi_smi_go_to_op),
        T(broadcasts_go_to_op),
        T(ipi_for_this_apic_stays_local),
        T(ipi_without_op_is_counted),
        T(ipi_op_error_returned),
        T(dest_match_rules),
        T(state_round_trip),
        T(state_x2apic_and_base),
        T(state_rejects_bad_blobs),
        T(state_bit_flips_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
