/* SPDX-License-Identifier: MIT */
/* lib/regs.c: register semantics of docs/spec/timer.md sections 2-4 and the
 * xAPIC / x2APIC access helpers, each rule at host time 0 and near 2^64. */
#include "testutil.h"

#define VEC 0x30u
#define OK(call) assert_int_equal((call), LAPICT_OK)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void arm(struct lapict_timer *t, uint32_t tdcr, uint32_t lvtt,
                uint32_t n)
{
    OK(lapict_tdcr_write(t, tdcr));
    OK(lapict_lvtt_write(t, lvtt));
    OK(lapict_tmict_write(t, n));
}

/* An LVTT write of @w, then LVTT reads @r. */
static void lvtt_is(struct lapict_timer *t, uint32_t w, uint32_t r)
{
    OK(lapict_lvtt_write(t, w));
    assert_int_equal(lapict_lvtt_read(t), r);
}

/* The fixture's instance bound again, fresh, to a fresh host. */
static void fresh(struct tu_fix *f)
{
    tu_setup(&f->h, &f->t, &f->cfg, f->base, false);
}

static unsigned host_timer_calls(const struct fake_host *h)
{
    return h->sim.sw_arms + h->sim.hv_arms + h->sim.sw_cancels +
           h->sim.hv_cancels;
}

/* Rule: reset values (section 2). */
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

/* From reset, with TSC-deadline supported. Mode 11 is tested apart. */
static const struct {
    uint32_t write, read;
} lvtt_cases[] = {
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

/* Rule: LVTT stores vector, mask and mode; reserved bits read 0. */
static void lvtt_stores_vector_mask_mode_reserved_read_zero(void **state)
{
    TU_FIX(state);
    size_t i;
    for (i = 0; i < N_OF(lvtt_cases); i++) {
        fresh(f);
        print_message("write 0x%08x\n", lvtt_cases[i].write);
        lvtt_is(t, lvtt_cases[i].write, lvtt_cases[i].read);
        assert_int_equal(tu_stats(t).mode_errors, 0);
        assert_int_equal(h->sim.reports, 0);
    }
}

/* Rule: mode 11 keeps the previous mode, applies the rest, is reported. */
static void lvtt_mode_11_keeps_previous_mode_and_counts_error(void **state)
{
    TU_FIX(state);
    static const uint32_t prev[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC,
                                    LAPICT_LVTT_TSC_DEADLINE};
    const uint32_t w = 0x00060000u | LAPICT_LVTT_MASK | 0x41u | 0x1000u;
    size_t i;
    for (i = 0; i < N_OF(prev); i++) {
        struct lapict_stats s;
        fresh(f);
        OK(lapict_lvtt_write(t, prev[i] | VEC));
        lvtt_is(t, w, prev[i] | LAPICT_LVTT_MASK | 0x41u);
        s = tu_stats(t);
        assert_int_equal(s.mode_errors, 1);
        assert_int_equal(s.last_error, LAPICT_E_MODE);
        assert_int_equal(h->sim.reports, 1);
        assert_int_equal(h->rep[0].status, LAPICT_E_MODE);
        assert_int_equal(h->rep[0].detail, w);
    }
}

/* Rule: a mode-11 write leaves a running periodic timer on its grid. */
static void lvtt_mode_11_leaves_running_periodic_on_grid(void **state)
{
    TU_FIX(state);
    uint64_t a = h->sim.now_ns;
    arm(t, 0xB, LAPICT_LVTT_PERIODIC | VEC, 300000);
    fake_advance(h, 100000);
    lvtt_is(t, 0x00060000u | 0x41u, LAPICT_LVTT_PERIODIC | 0x41u);
    assert_int_equal(lapict_tmict_read(t), 300000);
    fake_advance_to(h, a + 900000);
    assert_int_equal(h->sim.injects, 3);
    assert_int_equal(h->inj[0].host_ns, a + 300000);
    assert_int_equal(h->inj[0].vector, 0x41);
    assert_int_equal(h->inj[2].host_ns, a + 900000);
}

/* A host whose CPUID does not offer TSC-deadline mode. */
TU_SETUP(no_tsc_deadline_setup, c.tsc_deadline = false)

/* Rule: without CPUID TSC_Deadline, LVTT bit 18 is reserved (10 -> 00,
 * 11 -> 01, no error) and IA32_TSC_DEADLINE does not exist: every access
 * is LAPICT_E_GP for the host to raise, and changes nothing (a running
 * count-down goes on, the value read is untouched). With the bit, outside
 * the mode, the MSR exists and writes are ignored. */
static void lvtt_bit18_and_deadline_msr_need_the_cpuid_bit(void **state)
{
    TU_FIX(state);
    struct lapict_config c = f->cfg;
    struct tu_regs before;
    uint64_t v = 77;
    unsigned arms;
    lvtt_is(t, 0x00040030u, 0x00000030u);
    lvtt_is(t, 0x00060030u, 0x00020030u);
    assert_int_equal(tu_stats(t).mode_errors, 0);
    assert_int_equal(h->sim.reports, 0);
    assert_int_equal(lapict_tsc_deadline_write(t, 5000), LAPICT_E_GP);
    assert_int_equal(lapict_tsc_deadline_read(t), 0);
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 0);

    fresh(f);
    arm(t, 0xB, LAPICT_LVTT_PERIODIC | VEC, 1000);
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

    c.tsc_deadline = true;
    tu_setup(h, t, &c, f->base, false);
    OK(lapict_msr_write(t, LAPICT_MSR_TSC_DEADLINE, 5000));
    OK(lapict_msr_read(t, LAPICT_MSR_TSC_DEADLINE, &v));
    assert_int_equal(v, 0);
}

/* Rule: LVTT bit 12 reads 1 while an interrupt is held; writes ignore it. */
static void lvtt_bit12_reads_pending_while_refused(void **state)
{
    TU_FIX(state);
    arm(t, 0xB, VEC, 1000);
    fake_window(h, false);
    fake_advance(h, 1000);
    assert_true(h->sim.refusals >= 1);
    assert_int_equal(h->sim.injects, 0);
    assert_int_equal(lapict_lvtt_read(t), VEC | LAPICT_LVTT_PENDING);
    assert_int_equal(tu_stats(t).pending, 1);
    lvtt_is(t, VEC, VEC | LAPICT_LVTT_PENDING);
    OK(fake_window(h, true));
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].vector, VEC);
    assert_int_equal(lapict_lvtt_read(t), VEC);
    assert_int_equal(tu_stats(t).pending, 0);
}

/* Rule: TDCR stores bits 3, 1:0; TMICT stores 31:0 and reloads TMCCT. */
static void tdcr_and_tmict_store_their_bits(void **state)
{
    TU_FIX(state);
    uint32_t v;
    for (v = 0; v < 16; v++) {
        OK(lapict_tdcr_write(t, v));
        assert_int_equal(lapict_tdcr_read(t), v & 0xBu);
    }
    OK(lapict_tdcr_write(t, 0xFFFFFFF4u));
    assert_int_equal(lapict_tdcr_read(t), 0);
    OK(lapict_tdcr_write(t, 0xFFFFFFFFu));
    assert_int_equal(lapict_tdcr_read(t), 0xB);
    OK(lapict_tmict_write(t, 0xFFFFFFFFu));
    assert_int_equal(lapict_tmict_read(t), 0xFFFFFFFFu);
    assert_int_equal(lapict_tmcct_read(t), 0xFFFFFFFFu);
    OK(lapict_tmict_write(t, 0));
    assert_int_equal(lapict_tmict_read(t), 0);
    assert_int_equal(lapict_tmcct_read(t), 0);
}

/* Rule: every TDCR value selects its divisor: a one-shot expires at
 * a + ns_for(N), not 1 ns earlier, at two bus rates. */
static void tdcr_every_value_selects_divide_table(void **state)
{
    static const uint64_t buses[] = {1000000000ull, 134217728ull};
    TU_FIX(state);
    size_t bi;
    uint32_t v;
    for (bi = 0; bi < N_OF(buses); bi++) {
        for (v = 0; v < 16; v++) {
            uint64_t a, at;
            f->cfg.bus_hz = buses[bi];
            fresh(f);
            fake_advance(h, 7);
            a = h->sim.now_ns;
            arm(t, v, VEC, 1000);
            at = a + oracle_ns_for(1000, buses[bi], oracle_divide(v));
            print_message("base %zu bus %llu tdcr %u -> +%llu\n", f->b,
                          (unsigned long long)buses[bi], v,
                          (unsigned long long)(at - a));
            fake_advance_to(h, at - 1);
            assert_int_equal(h->sim.injects, 0);
            assert_true(lapict_tmcct_read(t) > 0);
            fake_advance_to(h, at);
            assert_int_equal(h->sim.injects, 1);
            assert_int_equal(h->inj[0].host_ns, at);
            assert_int_equal(lapict_tmcct_read(t), 0);
            tu_check_host(h);
        }
    }
}

/* SVR's software enable by lapict_svr_write() (way 0, LAPICT_OK) or
 * through xAPIC 0xF0 / MSR 0x80F (ways 1, 2: LAPICT_E_NOREG, as the
 * register itself is the host's to store). */
static void svr_set(struct lapict_timer *t, int way, bool on)
{
    if (way == 0)
        OK(lapict_svr_write(t, on));
    else if (way == 1)
        assert_int_equal(lapict_xapic_write(t, 0xF0, on ? 0x1FFu : 0x0FFu),
                         LAPICT_E_NOREG);
    else
        assert_int_equal(lapict_msr_write(t, 0x80F, on ? 0x1FFu : 0xFFu),
                         LAPICT_E_NOREG);
}

/* Rule (regs.h, SVR): a software disable, by any way, masks LVTT and
 * every LVTT write; the count runs on masked; an enable keeps the mask
 * until the guest clears it. MSR bits 63:32 set are #GP; reads are the
 * host's. */
static void svr_disable_forces_mask_reenable_keeps_it(void **state)
{
    TU_FIX(state);
    const uint32_t per = LAPICT_LVTT_PERIODIC | VEC, per41 = per ^ VEC ^ 0x41u;
    uint32_t v32 = 7;
    uint64_t v64 = 7;
    int way;
    for (way = 0; way < 3; way++) {
        fresh(f);
        arm(t, 0xB, per, 300000);
        fake_advance(h, 300000);
        assert_int_equal(h->sim.injects, 1);
        svr_set(t, way, false);
        assert_int_equal(lapict_lvtt_read(t), per | LAPICT_LVTT_MASK);
        lvtt_is(t, per41, per41 | LAPICT_LVTT_MASK);
        fake_advance(h, 600000);
        assert_int_equal(h->sim.injects, 1);
        assert_int_equal(tu_stats(t).masked, 2);
        svr_set(t, way, true);
        assert_int_equal(lapict_lvtt_read(t), per41 | LAPICT_LVTT_MASK);
        lvtt_is(t, per41, per41);
        fake_advance(h, 300000);
        assert_int_equal(h->sim.injects, 2);
        assert_int_equal(h->inj[1].vector, 0x41);
    }
    svr_set(t, 2, false);
    assert_int_equal(lapict_msr_write(t, 0x80F, (1ull << 32) | 0x1FFu),
                     LAPICT_E_GP);
    lvtt_is(t, per, per | LAPICT_LVTT_MASK);
    svr_set(t, 2, true);
    lvtt_is(t, per, per);
    assert_int_equal(lapict_xapic_read(t, 0xF0, &v32), LAPICT_E_NOREG);
    assert_int_equal(lapict_msr_read(t, 0x80F, &v64), LAPICT_E_NOREG);
    assert_int_equal(v32, 7);
    assert_int_equal(v64, 7);
    assert_int_equal(lapict_xapic_write(NULL, 0xF0, 0), LAPICT_E_INVAL);
}

/* LVTT, TDCR and TMICT by xAPIC offset and MSR: a write leaves @xapic_held
 * / @msr_held, which the helper and the register's accessor both read. */
static const struct reach_case {
    uint32_t off, msr;
    uint32_t (*read)(struct lapict_timer *t);
    uint32_t xapic_write, xapic_held, msr_write, msr_held;
} reach_cases[] = {
    {0x320, 0x832, lapict_lvtt_read, 0x00020055u, 0x00020055u, 0x000100ABu,
     0x000100ABu},
    {0x3E0, 0x83E, lapict_tdcr_read, 0xFu, 0xB, 0x9, 0x9},
    {0x380, 0x838, lapict_tmict_read, 500000, 500000, 0xFFFFFFFFu, 0xFFFFFFFFu},
};

static void reach(struct lapict_timer *t, const struct reach_case *rc, bool msr)
{
    uint32_t held = msr ? rc->msr_held : rc->xapic_held, v32 = 0xDEAD;
    uint64_t v = 0xDEAD;
    if (msr) {
        OK(lapict_msr_write(t, rc->msr, rc->msr_write));
        OK(lapict_msr_read(t, rc->msr, &v));
    } else {
        OK(lapict_xapic_write(t, rc->off, rc->xapic_write));
        OK(lapict_xapic_read(t, rc->off, &v32));
        v = v32;
    }
    assert_int_equal(v, held);
    assert_int_equal(rc->read(t), held);
}

/* Rule: the xAPIC offsets, then the MSRs, reach the timer registers;
 * IA32_TSC_DEADLINE stores its 64 bits in TSC-deadline mode only. */
static void access_helpers_reach_timer_registers(void **state)
{
    TU_FIX(state);
    uint32_t v32 = 0xDEAD;
    uint64_t v = 0xDEAD;
    size_t i;
    for (i = 0; i < N_OF(reach_cases); i++)
        reach(t, &reach_cases[i], false);
    fake_advance(h, 1234);
    OK(lapict_xapic_read(t, 0x390, &v32));
    assert_int_equal(v32, 500000 - 1234);
    /* The MSR writes restart the count-down (TMICT last). */
    for (i = 0; i < N_OF(reach_cases); i++)
        reach(t, &reach_cases[i], true);
    fake_advance(h, 64 * 10 + 5); /* /64 at 1 GHz: 10 ticks */
    OK(lapict_msr_read(t, 0x839, &v));
    assert_int_equal(v, 0xFFFFFFFFu - 10);
    OK(lapict_msr_write(t, 0x6E0, 777));
    OK(lapict_msr_read(t, 0x6E0, &v));
    assert_int_equal(v, 0);
    OK(lapict_msr_write(t, 0x832, 0x00040000u | VEC));
    OK(lapict_msr_write(t, 0x6E0, 0xFFFFFFFFFFFFFFFFull));
    OK(lapict_msr_read(t, 0x6E0, &v));
    assert_int_equal(v, 0xFFFFFFFFFFFFFFFFull);
    assert_int_equal(lapict_tsc_deadline_read(t), 0xFFFFFFFFFFFFFFFFull);
}

/* Rule: TMCCT is read-only: an xAPIC write is ignored, an x2APIC write
 * is #GP; neither changes a register or a host timer. */
static void tmcct_write_is_ignored_or_gp(void **state)
{
    TU_FIX(state);
    struct tu_regs before;
    unsigned arms;
    arm(t, 0xB, VEC, 500000);
    fake_advance(h, 1000);
    before = tu_read_regs(t);
    arms = host_timer_calls(h);
    OK(lapict_xapic_write(t, 0x390, 7));
    OK(lapict_xapic_write(t, 0x390, 0));
    assert_int_equal(lapict_msr_write(t, 0x839, 0), LAPICT_E_GP);
    assert_int_equal(lapict_msr_write(t, 0x839, 5), LAPICT_E_GP);
    assert_int_equal(lapict_msr_write(t, 0x839, 1ull << 40), LAPICT_E_GP);
    tu_assert_regs_equal(before, tu_read_regs(t));
    assert_int_equal(host_timer_calls(h), arms);
    fake_advance(h, 499000);
    assert_int_equal(h->sim.injects, 1);
    assert_int_equal(h->inj[0].host_ns, f->base + 500000);
}

/* Rule: x2APIC writes with bits 63:32 set are #GP and change nothing. */
static void msr_high_bits_are_gp_and_change_nothing(void **state)
{
    TU_FIX(state);
    static const uint32_t msrs[] = {0x832, 0x838, 0x83E};
    static const uint64_t highs[] = {1ull << 32, 1ull << 63,
                                     0xFFFFFFFF00000000ull};
    struct tu_regs before;
    unsigned arms;
    size_t i, j;
    arm(t, 0x1, LAPICT_LVTT_PERIODIC | VEC, 400000);
    fake_advance(h, 3000);
    before = tu_read_regs(t);
    arms = host_timer_calls(h);
    for (i = 0; i < N_OF(msrs); i++) {
        for (j = 0; j < N_OF(highs); j++) {
            /* Low bits that would change the register if accepted. */
            assert_int_equal(lapict_msr_write(t, msrs[i], highs[j] | 0x9u),
                             LAPICT_E_GP);
            tu_assert_regs_equal(before, tu_read_regs(t));
            assert_int_equal(host_timer_calls(h), arms);
        }
    }
}

static const uint32_t xapic_noregs[] = {
    0x000, 0x020,  0x030,  0x080,   0x0B0, 0x0E0, 0x300,       0x310,
    0x321, 0x322,  0x323,  0x324,   0x328, 0x330, 0x340,       0x350,
    0x360, 0x370,  0x37F,  0x381,   0x384, 0x38C, 0x391,       0x394,
    0x3A0, 0x3B0,  0x3D0,  0x3DF,   0x3E1, 0x3E4, 0x3F0,       0x3FF,
    0xFFC, 0x1000, 0x1320, 0x10380, 0x800, 0x832, 0xFFFFFFFFu, 0x80000320u,
};

static const uint32_t msr_noregs[] = {
    0x0,   0x10,  0x1B,   0x6DF, 0x6E1, 0x800,       0x802,
    0x80E, 0x830, 0x831,  0x833, 0x837, 0x83A,       0x83D,
    0x83F, 0x840, 0x1832, 0x320, 0x380, 0x40000832u, 0xFFFFFFFFu,
};

/* Rule: any other xAPIC offset (a running periodic) or MSR number (a TSC
 * deadline armed) is LAPICT_E_NOREG and changes nothing. */
static void other_offsets_and_msrs_are_noreg(void **state)
{
    TU_FIX(state);
    struct tu_regs before;
    size_t i;
    arm(t, 0x3, LAPICT_LVTT_PERIODIC | VEC, 700000);
    before = tu_read_regs(t);
    for (i = 0; i < N_OF(xapic_noregs); i++) {
        uint32_t v = 0x12345678u, off = xapic_noregs[i];
        print_message("offset 0x%x\n", off);
        assert_int_equal(lapict_xapic_read(t, off, &v), LAPICT_E_NOREG);
        assert_int_equal(lapict_xapic_write(t, off, 0), LAPICT_E_NOREG);
        assert_int_equal(lapict_xapic_write(t, off, 0xFFFFFFFFu),
                         LAPICT_E_NOREG);
    }
    tu_assert_regs_equal(before, tu_read_regs(t));
    fresh(f);
    OK(lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC));
    OK(lapict_tsc_deadline_write(t, 5000000));
    before = tu_read_regs(t);
    for (i = 0; i < N_OF(msr_noregs); i++) {
        uint64_t v = 0;
        uint32_t msr = msr_noregs[i];
        print_message("msr 0x%x\n", msr);
        assert_int_equal(lapict_msr_read(t, msr, &v), LAPICT_E_NOREG);
        assert_int_equal(lapict_msr_write(t, msr, 0), LAPICT_E_NOREG);
        assert_int_equal(lapict_msr_write(t, msr, 1ull << 40), LAPICT_E_NOREG);
    }
    tu_assert_regs_equal(before, tu_read_regs(t));
}

/* Rule (host misuse): a NULL instance or value pointer is LAPICT_E_INVAL;
 * a register read of a NULL instance gives 0. */
static void null_arguments_are_inval(void **state)
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

/* Rule (section 4): outside TSC-deadline mode the MSR is not stored. */
static void tsc_deadline_msr_ignored_outside_deadline_mode(void **state)
{
    TU_FIX(state);
    static const uint32_t modes[] = {LAPICT_LVTT_ONESHOT, LAPICT_LVTT_PERIODIC};
    size_t i;
    for (i = 0; i < N_OF(modes); i++) {
        fresh(f);
        OK(lapict_lvtt_write(t, modes[i] | VEC));
        OK(lapict_tsc_deadline_write(t, 1000));
        assert_int_equal(lapict_tsc_deadline_read(t), 0);
        OK(lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC));
        assert_int_equal(lapict_tsc_deadline_read(t), 0);
        fake_advance(h, 1000000);
        assert_int_equal(h->sim.injects, 0);
    }
}

/* Rule (section 4): TMICT is ignored in TSC-deadline mode (TMICT/TMCCT
 * read 0) and stays 0 after leaving it. */
static void tmict_ignored_in_deadline_mode(void **state)
{
    TU_FIX(state);
    OK(lapict_lvtt_write(t, LAPICT_LVTT_TSC_DEADLINE | VEC));
    OK(lapict_tmict_write(t, 1000));
    assert_int_equal(lapict_tmict_read(t), 0);
    assert_int_equal(lapict_tmcct_read(t), 0);
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 0);
    OK(lapict_lvtt_write(t, LAPICT_LVTT_ONESHOT | VEC));
    assert_int_equal(lapict_tmict_read(t), 0);
    fake_advance(h, 1000000);
    assert_int_equal(h->sim.injects, 0);
}

#define AT_BOTH(fn) TU_FIXED_AT_BASES(fn, TU_HV_NEVER)

TU_MAIN(AT_BOTH(registers_have_reset_values),
        AT_BOTH(lvtt_stores_vector_mask_mode_reserved_read_zero),
        AT_BOTH(lvtt_mode_11_keeps_previous_mode_and_counts_error),
        AT_BOTH(lvtt_mode_11_leaves_running_periodic_on_grid),
        TU_FIXED_AT_BASES_WITH(lvtt_bit18_and_deadline_msr_need_the_cpuid_bit,
                               TU_HV_NEVER, no_tsc_deadline_setup),
        AT_BOTH(lvtt_bit12_reads_pending_while_refused),
        AT_BOTH(tdcr_and_tmict_store_their_bits),
        AT_BOTH(tdcr_every_value_selects_divide_table),
        AT_BOTH(svr_disable_forces_mask_reenable_keeps_it),
        AT_BOTH(access_helpers_reach_timer_registers),
        AT_BOTH(tmcct_write_is_ignored_or_gp),
        AT_BOTH(msr_high_bits_are_gp_and_change_nothing),
        AT_BOTH(other_offsets_and_msrs_are_noreg),
        AT_BOTH(null_arguments_are_inval),
        AT_BOTH(tsc_deadline_msr_ignored_outside_deadline_mode),
        AT_BOTH(tmict_ignored_in_deadline_mode))
