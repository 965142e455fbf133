/* SPDX-License-Identifier: MIT */
/*
 * adapters/kvm/apic.c: the portable LAPIC model (lapict_apic.h), with its
 * timer on the fake host of tests/support (no KVM, no system call): xAPIC
 * MMIO and x2APIC/IA32_APIC_BASE MSR decoding with the #GP rules, SVR,
 * IPI destinations, NMI, ESR, and the model's ops.
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
    unsigned nmis, bases, eois;
    int nmi_rc, base_rc;
    uint64_t base;
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

static const struct lapict_apic_ops ops = {
    .version = LAPICT_APIC_OPS_VERSION,
    .nmi = op_nmi,
    .base_changed = op_base,
    .eoi = op_eoi,
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
 * all-excluding-self, INIT and SIPI reach no one. While the APIC is off,
 * IA32_TSC_DEADLINE reads 0. */
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
    mmio_wr(0x310, 0);
    mmio_wr(0x300, 0x400); /* NMI to own ID */
    assert_int_equal(F->nmis, 1);
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
        T(state_round_trip),
        T(state_x2apic_and_base),
        T(state_rejects_bad_blobs),
        T(state_bit_flips_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
