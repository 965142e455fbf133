/* SPDX-License-Identifier: MIT */
/*
 * lib/regs.c: register semantics of docs/spec/timer.md sections 2-4 and the
 * xAPIC / x2APIC access helpers.
 */
#include "testutil.h"

#define VEC 0x30u

/* Observable register file, to prove that a refused access changed nothing. */
static void registers_have_reset_values(void **state)
{
    TU_FIX(state);
    assert_int_equal(lapict_lvtt_read(t), 0x00010000u);
    assert_int_equal(lapict_tdcr_read(t), 0);
    assert_int_equal(lapict_tmict_read(t), 0);
    assert_int_equal(lapict_tmcct_read(t), 0);
    assert_int_equal(lapict_tsc_deadline_read(t), 0);
    assert_int_equal(LAPICT_LVTT_RESET, 0x00010000u);
}

struct lvtt_case {
    uint32_t write, read;
};

/* From reset, with TSC-deadline supported. Mode 11 is tested apart. */
static const struct lvtt_case lvtt_cases[] = {
    {0x000000FFu, 0x000000FFu},
    {0x00001040u, 0x00000040u}, /* bit 12 is read-only */
    {0x00010040u, 0x00010040u},
    {0x00020040u, 0x00020040u},
    {0x00040040u, 0x00040040u},
    {0x00008F30u, 0x00000030u}, /* bits 15, 11:8 reserved */
    {0x0000E000u, 0x00000000u}, /* bits 15:13 reserved */
    {0xFFF8EF00u, 0x00000000u}, /* bits 31:19 reserved, bit 12 */
    {0xFFF9FFFFu, 0x000100FFu},
    {0xFFFBFFFFu, 0x000300FFu},
    {0x00000000u, 0x00000000u},
};

static void lvtt_stores_vector_mask_mode_reserved_read_zero(void **state)
{
    (void)state;
    size_t i;
    for (i = 0; i < sizeof(lvtt_cases) / sizeof(lvtt_cases[0]); i++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        tu_setup(&h, &t, &c, 0, false);
        print_message("write 0x%08x\n", lvtt_cases[i].write);
        assert_int_equal(lapict_lvtt_write(&t, lvtt_cases[i].write), LAPICT_OK);
        assert_int_equal(lapict_lvtt_read(&t), lvtt_cases[i].read);
        assert_int_equal(tu_stats(&t).mode_errors, 0);
        assert_int_equal(h.sim.reports, 0);
    }
}

static void lvtt_mode_11_keeps_previous_mode_and_counts_error(void **state)
{
    (void)state;
    static const uint32_t prev[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC,
                                    LAPICT_LVTT_TSC_DEADLINE};
    size_t i;
    for (i = 0; i < 3; i++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        struct lapict_stats s;
        uint32_t w = 0x00060000u | LAPICT_LVTT_MASK | 0x41u | 0x1000u;
        tu_setup(&h, &t, &c, 0, false);
        assert_int_equal(lapict_lvtt_write(&t, prev[i] | VEC), LAPICT_OK);
        assert_int_equal(lapict_lvtt_write(&t, w), LAPICT_OK);
        /* Previous mode, the other fields applied. */
        assert_int_equal(lapict_lvtt_read(&t),
                         prev[i] | LAPICT_LVTT_MASK | 0x41u);
        s = tu_stats(&t);
        assert_int_equal(s.mode_errors, 1);
        assert_int_equal(s.last_error, LAPICT_E_MODE);
        assert_int_equal(h.sim.reports, 1);
        assert_int_equal(h.rep[0].status, LAPICT_E_MODE);
        assert_int_equal(h.rep[0].detail, w);
    }
}

/* A running periodic timer is not disturbed by a mode-11 write. */
static void lvtt_mode_11_leaves_running_periodic_on_grid(void **state)
{
    (void)state;
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c = tu_cfg();
    tu_setup(&h, &t, &c, TU_NEAR_WRAP, false);
    uint64_t a = h.sim.now_ns;
    lapict_tdcr_write(&t, 0xB);
    lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | VEC);
    lapict_tmict_write(&t, 300000);
    fake_advance(&h, 100000);
    assert_int_equal(lapict_lvtt_write(&t, 0x00060000u | 0x41u), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&t), LAPICT_LVTT_PERIODIC | 0x41u);
    assert_int_equal(lapict_tmict_read(&t), 300000);
    fake_advance_to(&h, a + 900000);
    assert_int_equal(h.sim.injects, 3);
    assert_int_equal(h.inj[0].host_ns, a + 300000);
    assert_int_equal(h.inj[0].vector, 0x41);
    assert_int_equal(h.inj[2].host_ns, a + 900000);
    tu_check_host(&h);
}

/* A host whose CPUID does not offer TSC-deadline mode. */
TU_SETUP(no_tsc_deadline_setup, c.tsc_deadline = false)

static void lvtt_bit18_reserved_without_tsc_deadline(void **state)
{
    TU_FIX(state);
    assert_int_equal(lapict_lvtt_write(t, 0x00040030u), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(t), 0x00000030u); /* 10 -> 00 */
    assert_int_equal(lapict_lvtt_write(t, 0x00060030u), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(t), 0x00020030u); /* 11 -> 01 */
    assert_int_equal(tu_stats(t).mode_errors, 0);
    assert_int_equal(h->sim.reports, 0);
    /* Without the mode the MSR does not exist (below): never armed. */
    assert_int_equal(lapict_tsc_deadline_write(t, 5000), LAPICT_E_GP);
    assert_int_equal(lapict_tsc_deadline_read(t), 0);
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 0);
}

/* regs.h, timer.md section 4: without CPUID.01H:ECX.TSC_Deadline
 * (tsc_deadline false) IA32_TSC_DEADLINE does not exist, and an access
 * raises #GP on hardware: RDMSR and WRMSR of 0x6E0 return LAPICT_E_GP for
 * the host to raise it, and change nothing (a running count-down goes on,
 * the value read is not touched). */
static void tsc_deadline_msr_is_gp_without_the_cpuid_bit(void **state)
{
    TU_FIX(state);
    struct lapict_config c = f->cfg;
    struct tu_regs before;
    uint64_t v = 77;
    unsigned arms;
    lapict_tdcr_write(t, 0xB);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    lapict_tmict_write(t, 1000);
    before = tu_read_regs(t);
    arms = h->sim.sw_arms;
    assert_int_equal(lapict_msr_write(t, LAPICT_MSR_TSC_DEADLINE, 5000),
                     LAPICT_E_GP);
    assert_int_equal(lapict_msr_write(t, LAPICT_MSR_TSC_DEADLINE, 0),
                     LAPICT_E_GP);
    assert_int_equal(lapict_msr_read(t, LAPICT_MSR_TSC_DEADLINE, &v),
                     LAPICT_E_GP);
    assert_int_equal(v, 77);
    assert_int_equal(lapict_tsc_deadline_write(t, 5000), LAPICT_E_GP);
    tu_assert_regs_equal(before, tu_read_regs(t));
    assert_int_equal(h->sim.sw_arms, arms);
    fake_advance(h, 1000);
    assert_int_equal(h->sim.injects, 1);
    /* Offered, outside the mode: the MSR exists, writes are ignored. */
    c.tsc_deadline = true;
    tu_setup(h, t, &c, f->base, false);
    assert_int_equal(lapict_msr_write(t, LAPICT_MSR_TSC_DEADLINE, 5000),
                     LAPICT_OK);
    assert_int_equal(lapict_msr_read(t, LAPICT_MSR_TSC_DEADLINE, &v),
                     LAPICT_OK);
    assert_int_equal(v, 0);
}

static void lvtt_bit12_reads_pending_while_refused(void **state)
{
    TU_FIX(state);
    lapict_tdcr_write(t, 0xB);
    lapict_lvtt_write(t, VEC);
    lapict_tmict_write(t, 1000);
    fake_window(h, false);
    fake_advance(h, 1000);
    assert_true(h->sim.refusals >= 1);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(lapict_lvtt_read(t), VEC | LAPICT_LVTT_PENDING);
    assert_int_equal(tu_stats(t).pending, 1);
    /* Writing bit 12 does nothing. */
    lapict_lvtt_write(t, VEC);
    assert_int_equal(lapict_lvtt_read(t), VEC | LAPICT_LVTT_PENDING);
    assert_int_equal(fake_window(h, true), LAPICT_OK);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].vector, VEC);
    assert_int_equal(lapict_lvtt_read(t), VEC);
    assert_int_equal(tu_stats(t).pending, 0);
}

static void tdcr_stores_bits_3_1_0(void **state)
{
    TU_FIX(state);
    uint32_t v;
    for (v = 0; v < 16; v++) {
        assert_int_equal(lapict_tdcr_write(t, v), LAPICT_OK);
        assert_int_equal(lapict_tdcr_read(t), v & 0xBu);
    }
    assert_int_equal(lapict_tdcr_write(t, 0xFFFFFFF4u), LAPICT_OK);
    assert_int_equal(lapict_tdcr_read(t), 0);
    assert_int_equal(lapict_tdcr_write(t, 0xFFFFFFFFu), LAPICT_OK);
    assert_int_equal(lapict_tdcr_read(t), 0xB);
}

/* Every TDCR value, timed: a one-shot expires at a + ns_for(N), not 1 ns
 * earlier, at two bus rates and at two clock bases. */
static void tdcr_every_value_selects_divide_table(void **state)
{
    static const uint64_t buses[] = {1000000000ull, 134217728ull};
    size_t b = tu_base_index(state), bi;
    uint32_t v;
    for (bi = 0; bi < 2; bi++) {
        for (v = 0; v < 16; v++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            uint64_t a, at;
            c.bus_hz = buses[bi];
            tu_setup(&h, &t, &c, tu_bases[b], false);
            fake_advance(&h, 7);
            a = h.sim.now_ns;
            lapict_tdcr_write(&t, v);
            lapict_lvtt_write(&t, VEC);
            lapict_tmict_write(&t, 1000);
            at = a + oracle_ns_for(1000, buses[bi], oracle_divide(v));
            print_message("base %zu bus %llu tdcr %u -> +%llu\n", b,
                          (unsigned long long)buses[bi], v,
                          (unsigned long long)(at - a));
            fake_advance_to(&h, at - 1);
            assert_int_equal(h.sim.injects, 0);
            assert_true(lapict_tmcct_read(&t) > 0);
            fake_advance_to(&h, at);
            assert_int_equal(h.sim.injects, 1);
            assert_int_equal(h.inj[0].host_ns, at);
            assert_int_equal(lapict_tmcct_read(&t), 0);
            tu_check_host(&h);
        }
    }
}

static void tmict_stores_31_0(void **state)
{
    TU_FIX(state);
    assert_int_equal(lapict_tmict_write(t, 0xFFFFFFFFu), LAPICT_OK);
    assert_int_equal(lapict_tmict_read(t), 0xFFFFFFFFu);
    assert_int_equal(lapict_tmcct_read(t), 0xFFFFFFFFu);
    assert_int_equal(lapict_tmict_write(t, 0), LAPICT_OK);
    assert_int_equal(lapict_tmict_read(t), 0);
    assert_int_equal(lapict_tmcct_read(t), 0);
}

static void svr_disable_forces_mask_reenable_keeps_it(void **state)
{
    TU_FIX(state);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_svr_write(t, false), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
    /* Every write while disabled is forced masked. */
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | 0x41u);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | 0x41u);
    /* A count-down still runs; its expiries are masked. */
    lapict_tdcr_write(t, 0xB);
    lapict_tmict_write(t, 300000);
    fake_advance(h, 600000);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(tu_stats(t).masked, 2);
    assert_int_equal(lapict_svr_write(t, true), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | 0x41u);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | 0x41u);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_PERIODIC | 0x41u);
    fake_advance(h, 300000);
    assert_int_equal(h->sim.injects, 1);
}

/* regs.h, SVR: a VMM that routes every APIC write through the library
 * (xAPIC offset 0xF0, x2APIC MSR 0x80F) gets the software enable applied
 * as by lapict_svr_write(), and LAPICT_E_NOREG back: the register itself
 * is the host's to store. Disabling masks LVTT, so the running timer gives
 * no interrupt; an x2APIC write with bits 63:32 set is #GP and changes
 * nothing. Reads are the host's. */
static void svr_write_through_apic_access_soft_disables_timer(void **state)
{
    TU_FIX(state);
    uint32_t v32 = 7;
    uint64_t v64 = 7;
    lapict_tdcr_write(t, 0xB);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    lapict_tmict_write(t, 1000);
    fake_advance(h, 1000);
    assert_int_equal(h->sim.injects, 1);
    /* xAPIC: bit 8 clear soft-disables; the other bits are not the timer's. */
    assert_int_equal(lapict_xapic_write(t, 0xF0, 0x0FFu), LAPICT_E_NOREG);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
    fake_advance(h, 3000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(tu_stats(t).masked, 3);
    /* Enabled again: the mask stays until the guest clears it. */
    assert_int_equal(lapict_xapic_write(t, 0xF0, 0x1FFu), LAPICT_E_NOREG);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    fake_advance(h, 1000);
    assert_int_equal(h->sim.injects, 2);
    /* x2APIC: the same through MSR 0x80F. */
    assert_int_equal(lapict_msr_write(t, 0x80F, 0xFFu), LAPICT_E_NOREG);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
    /* While disabled an LVTT write is forced masked. */
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
    /* Reserved bits 63:32: #GP, still disabled. */
    assert_int_equal(lapict_msr_write(t, 0x80F, (1ull << 32) | 0x1FFu),
                     LAPICT_E_GP);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_lvtt_read(t),
                     LAPICT_LVTT_PERIODIC | LAPICT_LVTT_MASK | VEC);
    assert_int_equal(lapict_msr_write(t, 0x80F, 0x1FFu), LAPICT_E_NOREG);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    assert_int_equal(lapict_lvtt_read(t), LAPICT_LVTT_PERIODIC | VEC);
    /* The register's value is the host's: reads are not the library's. */
    assert_int_equal(lapict_xapic_read(t, 0xF0, &v32), LAPICT_E_NOREG);
    assert_int_equal(lapict_msr_read(t, 0x80F, &v64), LAPICT_E_NOREG);
    assert_int_equal(v32, 7);
    assert_int_equal(v64, 7);
    assert_int_equal(lapict_xapic_write(NULL, 0xF0, 0), LAPICT_E_INVAL);
}

/*
 * LVTT, TDCR and TMICT through their xAPIC offset and x2APIC MSR: a write
 * through the helper leaves @xapic_held / @msr_held in the register,
 * which the helper and the register's own accessor both read.
 */
struct reach_case {
    uint32_t off, msr;
    uint32_t (*read)(struct lapict_timer *t);
    uint32_t xapic_write, xapic_held, msr_write, msr_held;
};
static const struct reach_case reach_cases[] = {
    {0x320, 0x832, lapict_lvtt_read, 0x00020055u, 0x00020055u, 0x000100ABu,
     0x000100ABu},
    {0x3E0, 0x83E, lapict_tdcr_read, 0xFu, 0xB, 0x9, 0x9},
    {0x380, 0x838, lapict_tmict_read, 500000, 500000, 0xFFFFFFFFu, 0xFFFFFFFFu},
};
#define NREACH (sizeof(reach_cases) / sizeof(reach_cases[0]))

/* One reach_case through the MSR (@msr) or the xAPIC offset. */
static void reach(struct lapict_timer *t, const struct reach_case *rc, bool msr)
{
    uint32_t held = msr ? rc->msr_held : rc->xapic_held, v32 = 0xDEAD;
    uint64_t v = 0xDEAD;
    if (msr) {
        assert_int_equal(lapict_msr_write(t, rc->msr, rc->msr_write),
                         LAPICT_OK);
        assert_int_equal(lapict_msr_read(t, rc->msr, &v), LAPICT_OK);
    } else {
        assert_int_equal(lapict_xapic_write(t, rc->off, rc->xapic_write),
                         LAPICT_OK);
        assert_int_equal(lapict_xapic_read(t, rc->off, &v32), LAPICT_OK);
        v = v32;
    }
    assert_int_equal(v, held);
    assert_int_equal(rc->read(t), held);
}

static void xapic_tmcct_write_is_ignored(void **state)
{
    TU_FIX(state);
    struct tu_regs before;
    unsigned arms;
    lapict_tdcr_write(t, 0xB);
    lapict_lvtt_write(t, VEC);
    lapict_tmict_write(t, 500000);
    fake_advance(h, 1000);
    before = tu_read_regs(t);
    arms = h->sim.sw_arms + h->sim.hv_arms;
    assert_int_equal(lapict_xapic_write(t, 0x390, 7), LAPICT_OK);
    assert_int_equal(lapict_xapic_write(t, 0x390, 0), LAPICT_OK);
    tu_assert_regs_equal(before, tu_read_regs(t));
    assert_int_equal(h->sim.sw_arms + h->sim.hv_arms, arms);
    fake_advance(h, 499000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, f->base + 500000);
}

static const uint32_t xapic_noregs[] = {
    0x000, 0x020,  0x030,  0x080,   0x0B0, 0x0E0, 0x300,       0x310,
    0x321, 0x322,  0x323,  0x324,   0x328, 0x330, 0x340,       0x350,
    0x360, 0x370,  0x37F,  0x381,   0x384, 0x38C, 0x391,       0x394,
    0x3A0, 0x3B0,  0x3D0,  0x3DF,   0x3E1, 0x3E4, 0x3F0,       0x3FF,
    0xFFC, 0x1000, 0x1320, 0x10380, 0x800, 0x832, 0xFFFFFFFFu, 0x80000320u,
};

static void xapic_other_offsets_are_noreg(void **state)
{
    TU_FIX(state);
    struct tu_regs before;
    size_t i;
    lapict_tdcr_write(t, 0x3);
    lapict_lvtt_write(t, LAPICT_LVTT_PERIODIC | VEC);
    lapict_tmict_write(t, 700000);
    before = tu_read_regs(t);
    for (i = 0; i < sizeof(xapic_noregs) / sizeof(xapic_noregs[0]); i++) {
        uint32_t v = 0x12345678u;
        print_message("offset 0x%x\n", xapic_noregs[i]);
        assert_int_equal(lapict_xapic_read(t, xapic_noregs[i], &v),
                         LAPICT_E_NOREG);
        assert_int_equal(lapict_xapic_write(t, xapic_noregs[i], 0),
                         LAPICT_E_NOREG);
        assert_int_equal(lapict_xapic_write(t, xapic_noregs[i], 0xFFFFFFFFu),
                         LAPICT_E_NOREG);
    }
    tu_assert_regs_equal(before, tu_read_regs(t));
}

/* The xAPIC offsets, then the MSRs, reach the timer registers. */
static void access_helpers_reach_timer_registers(void **state)
{
    TU_FIX(state);
    uint32_t v32 = 0xDEAD;
    uint64_t v = 0xDEAD;
    size_t i;
    for (i = 0; i < NREACH; i++)
        reach(t, &reach_cases[i], false);
    fake_advance(h, 1234);
    assert_int_equal(lapict_xapic_read(t, 0x390, &v32), LAPICT_OK);
    assert_int_equal(v32, 500000 - 1234);
    /* The MSR writes restart the count-down (TMICT last). */
    for (i = 0; i < NREACH; i++)
        reach(t, &reach_cases[i], true);
    fake_advance(h, 64 * 10 + 5); /* /64 at 1 GHz: 10 ticks */
    assert_int_equal(lapict_msr_read(t, 0x839, &v), LAPICT_OK);
    assert_int_equal(v, 0xFFFFFFFFu - 10);
    /* Not TSC-deadline mode: IA32_TSC_DEADLINE reads 0, writes ignored. */
    assert_int_equal(lapict_msr_write(t, 0x6E0, 777), LAPICT_OK);
    assert_int_equal(lapict_msr_read(t, 0x6E0, &v), LAPICT_OK);
    assert_int_equal(v, 0);
    /* TSC-deadline mode: the full 64 bits are stored, no #GP. */
    assert_int_equal(lapict_msr_write(t, 0x832, 0x00040000u | VEC), LAPICT_OK);
    assert_int_equal(lapict_msr_write(t, 0x6E0, 0xFFFFFFFFFFFFFFFFull),
                     LAPICT_OK);
    assert_int_equal(lapict_msr_read(t, 0x6E0, &v), LAPICT_OK);
    assert_int_equal(v, 0xFFFFFFFFFFFFFFFFull);
    assert_int_equal(lapict_tsc_deadline_read(t), 0xFFFFFFFFFFFFFFFFull);
}

static void msr_high_bits_are_gp_and_change_nothing(void **state)
{
    (void)state;
    static const uint32_t msrs[] = {0x832, 0x838, 0x83E};
    static const uint64_t highs[] = {1ull << 32, 1ull << 63,
                                     0xFFFFFFFF00000000ull};
    size_t i, j;
    for (i = 0; i < 3; i++) {
        for (j = 0; j < 3; j++) {
            struct fake_host h;
            struct lapict_timer t;
            struct lapict_config c = tu_cfg();
            struct tu_regs before;
            unsigned arms;
            tu_setup(&h, &t, &c, 0, false);
            lapict_tdcr_write(&t, 0x1);
            lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | VEC);
            lapict_tmict_write(&t, 400000);
            fake_advance(&h, 3000);
            before = tu_read_regs(&t);
            arms = h.sim.sw_arms + h.sim.hv_arms + h.sim.sw_cancels +
                   h.sim.hv_cancels;
            /* Low bits that would change the register if accepted. */
            assert_int_equal(lapict_msr_write(&t, msrs[i], highs[j] | 0x9u),
                             LAPICT_E_GP);
            tu_assert_regs_equal(before, tu_read_regs(&t));
            assert_int_equal(h.sim.sw_arms + h.sim.hv_arms + h.sim.sw_cancels +
                                 h.sim.hv_cancels,
                             arms);
        }
    }
}

static void msr_tmcct_write_is_gp(void **state)
{
    TU_FIX(state);
    struct tu_regs before;
    lapict_tdcr_write(t, 0xB);
    lapict_tmict_write(t, 50000);
    fake_advance(h, 10);
    before = tu_read_regs(t);
    assert_int_equal(lapict_msr_write(t, 0x839, 0), LAPICT_E_GP);
    assert_int_equal(lapict_msr_write(t, 0x839, 5), LAPICT_E_GP);
    assert_int_equal(lapict_msr_write(t, 0x839, 1ull << 40), LAPICT_E_GP);
    tu_assert_regs_equal(before, tu_read_regs(t));
}

static const uint32_t msr_noregs[] = {
    0x0,   0x10,  0x1B,   0x6DF, 0x6E1, 0x800,       0x802,
    0x80E, 0x830, 0x831,  0x833, 0x837, 0x83A,       0x83D,
    0x83F, 0x840, 0x1832, 0x320, 0x380, 0x40000832u, 0xFFFFFFFFu,
};

static void msr_other_numbers_are_noreg(void **state)
{
    TU_FIX(state);
    struct tu_regs before;
    size_t i;
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    lapict_tsc_deadline_write(t, 5000000);
    before = tu_read_regs(t);
    for (i = 0; i < sizeof(msr_noregs) / sizeof(msr_noregs[0]); i++) {
        uint64_t v = 0;
        print_message("msr 0x%x\n", msr_noregs[i]);
        assert_int_equal(lapict_msr_read(t, msr_noregs[i], &v), LAPICT_E_NOREG);
        assert_int_equal(lapict_msr_write(t, msr_noregs[i], 0), LAPICT_E_NOREG);
        assert_int_equal(lapict_msr_write(t, msr_noregs[i], 1ull << 40),
                         LAPICT_E_NOREG);
    }
    tu_assert_regs_equal(before, tu_read_regs(t));
}

/* Host misuse of the xAPIC and MSR helpers: a NULL instance or value. */
static void access_helpers_null_arguments_are_inval(void **state)
{
    TU_FIX(state);
    uint32_t v32;
    uint64_t v64;
    assert_int_equal(lapict_xapic_read(NULL, 0x320, &v32), LAPICT_E_INVAL);
    assert_int_equal(lapict_xapic_read(t, 0x320, NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_xapic_write(NULL, 0x320, 0), LAPICT_E_INVAL);
    assert_int_equal(lapict_msr_read(NULL, 0x832, &v64), LAPICT_E_INVAL);
    assert_int_equal(lapict_msr_read(t, 0x832, NULL), LAPICT_E_INVAL);
    assert_int_equal(lapict_msr_write(NULL, 0x832, 0), LAPICT_E_INVAL);
}

static void register_accessors_null_instance(void **state)
{
    (void)state;
    assert_int_equal(lapict_lvtt_read(NULL), 0);
    assert_int_equal(lapict_tdcr_read(NULL), 0);
    assert_int_equal(lapict_tmict_read(NULL), 0);
    assert_int_equal(lapict_tmcct_read(NULL), 0);
    assert_int_equal(lapict_tsc_deadline_read(NULL), 0);
    assert_int_equal(lapict_lvtt_write(NULL, 0), LAPICT_E_INVAL);
    assert_int_equal(lapict_tdcr_write(NULL, 0), LAPICT_E_INVAL);
    assert_int_equal(lapict_tmict_write(NULL, 1), LAPICT_E_INVAL);
    assert_int_equal(lapict_tsc_deadline_write(NULL, 1), LAPICT_E_INVAL);
    assert_int_equal(lapict_svr_write(NULL, true), LAPICT_E_INVAL);
}

/* Section 4: outside TSC-deadline mode the MSR is not stored. */
static void tsc_deadline_msr_ignored_outside_deadline_mode(void **state)
{
    (void)state;
    static const uint32_t modes[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC};
    size_t i;
    for (i = 0; i < 2; i++) {
        struct fake_host h;
        struct lapict_timer t;
        struct lapict_config c = tu_cfg();
        tu_setup(&h, &t, &c, 0, false);
        lapict_lvtt_write(&t, modes[i] | VEC);
        assert_int_equal(lapict_tsc_deadline_write(&t, 1000), LAPICT_OK);
        assert_int_equal(lapict_tsc_deadline_read(&t), 0);
        /* Entering the mode later does not resurrect it. */
        lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | VEC);
        assert_int_equal(lapict_tsc_deadline_read(&t), 0);
        fake_advance(&h, 1000000);
        assert_int_equal(h.sim.injects, 0);
    }
}

/* Section 4: TMICT ignored in TSC-deadline mode, TMICT/TMCCT read 0. */
static void tmict_ignored_in_deadline_mode(void **state)
{
    TU_FIX(state);
    lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC);
    assert_int_equal(lapict_tmict_write(t, 1000), LAPICT_OK);
    assert_int_equal(lapict_tmict_read(t), 0);
    assert_int_equal(lapict_tmcct_read(t), 0);
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 0);
    /* Leaving the mode: TMICT is still 0, nothing runs. */
    lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC);
    assert_int_equal(lapict_tmict_read(t), 0);
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 0);
}

TU_MAIN(TU_FIXED_AT_BASES(registers_have_reset_values, TU_HV_NEVER),
        cmocka_unit_test(lvtt_stores_vector_mask_mode_reserved_read_zero),
        cmocka_unit_test(lvtt_mode_11_keeps_previous_mode_and_counts_error),
        cmocka_unit_test(lvtt_mode_11_leaves_running_periodic_on_grid),
        TU_FIXED_AT_BASES_WITH(lvtt_bit18_reserved_without_tsc_deadline,
                               TU_HV_NEVER, no_tsc_deadline_setup),
        TU_FIXED_AT_BASES_WITH(tsc_deadline_msr_is_gp_without_the_cpuid_bit,
                               TU_HV_NEVER, no_tsc_deadline_setup),
        TU_FIXED_AT_BASES(lvtt_bit12_reads_pending_while_refused, TU_HV_NEVER),
        TU_FIXED_AT_BASES(tdcr_stores_bits_3_1_0, TU_HV_NEVER),
        TU_AT_BASES(tdcr_every_value_selects_divide_table),
        TU_FIXED_AT_BASES(tmict_stores_31_0, TU_HV_NEVER),
        TU_FIXED_AT_BASES(svr_disable_forces_mask_reenable_keeps_it,
                          TU_HV_NEVER),
        TU_FIXED_AT_BASES(svr_write_through_apic_access_soft_disables_timer,
                          TU_HV_NEVER),
        TU_FIXED_AT_BASES(xapic_tmcct_write_is_ignored, TU_HV_NEVER),
        TU_FIXED_AT_BASES(xapic_other_offsets_are_noreg, TU_HV_NEVER),
        TU_FIXED_AT_BASES(access_helpers_reach_timer_registers, TU_HV_NEVER),
        cmocka_unit_test(msr_high_bits_are_gp_and_change_nothing),
        TU_FIXED_AT_BASES(msr_tmcct_write_is_gp, TU_HV_NEVER),
        TU_FIXED_AT_BASES(msr_other_numbers_are_noreg, TU_HV_NEVER),
        TU_FIXED_AT_BASES(access_helpers_null_arguments_are_inval, TU_HV_NEVER),
        cmocka_unit_test(register_accessors_null_instance),
        cmocka_unit_test(tsc_deadline_msr_ignored_outside_deadline_mode),
        TU_FIXED_AT_BASES(tmict_ignored_in_deadline_mode, TU_HV_NEVER))
