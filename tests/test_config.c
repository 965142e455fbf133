/* SPDX-License-Identifier: MIT */
/*
 * lib/config.c and lapict_init(): documented defaults, every limit of
 * docs/spec/timer.md section 1/7 at and beyond its bound, NULL handling,
 * mandatory ops, and "on error the instance is not modified".
 */
#include "testutil.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* fake_attach() on an instance filled with @fill gives @rc; a failed init
 * leaves every byte as it was (not an instance: TMCCT reads 0). */
static void attach_gives(struct fake_host *h, struct lapict_timer *t,
                         const struct lapict_config *c, int fill, int rc)
{
    struct lapict_timer copy;
    memset(t, fill, sizeof(*t));
    memcpy(&copy, t, sizeof(copy));
    assert_int_equal(fake_attach(h, t, c), rc);
    if (rc != LAPICT_OK) {
        assert_memory_equal(t, &copy, sizeof(copy));
        assert_int_equal(lapict_tmcct_read(t), 0);
    }
}

/* Rule: the defaults are the documented ones whatever the buffer held;
 * they state no guest TSC rate while offering TSC-deadline mode, so they
 * are valid only once the host states it. */
static void config_default_values_are_documented(void **state)
{
    struct lapict_config a, b;
    (void)state;
    memset(&a, 0x00, sizeof(a));
    memset(&b, 0xFF, sizeof(b));
    lapict_config_default(&a);
    lapict_config_default(&b);
    assert_int_equal(a.bus_hz, 1000000000ull);
    assert_int_equal(a.tsc_khz, 0);
    assert_int_equal(a.min_period_ns, 200000u);
    assert_int_equal(a.advance_mode, LAPICT_ADVANCE_OFF);
    assert_int_equal(a.advance_max_ns, 5000u);
    assert_int_equal(a.missed_policy, LAPICT_MISSED_COALESCE);
    assert_int_equal(a.catch_up_max, 1000u);
    assert_true(a.tsc_deadline);
    assert_int_equal(a.advance_goal, LAPICT_ADVANCE_GOAL_LATENCY);
    assert_int_equal(a.advance_spin_budget_ns, 0);
    assert_int_equal(a.bus_hz, b.bus_hz);
    assert_int_equal(a.tsc_khz, b.tsc_khz);
    assert_int_equal(a.min_period_ns, b.min_period_ns);
    assert_int_equal(a.advance_mode, b.advance_mode);
    assert_int_equal(a.advance_ns, b.advance_ns);
    assert_int_equal(a.advance_max_ns, b.advance_max_ns);
    assert_int_equal(a.missed_policy, b.missed_policy);
    assert_int_equal(a.catch_up_max, b.catch_up_max);
    assert_int_equal(a.tsc_deadline, b.tsc_deadline);
    assert_true(a.advance_ns <= LAPICT_ADVANCE_NS_LIMIT);
    assert_int_equal(LAPICT_BUS_HZ_DEFAULT, 1000000000ull);
    assert_int_equal(LAPICT_MIN_PERIOD_NS_DEFAULT, 200000u);
    assert_int_equal(LAPICT_ADVANCE_MAX_NS_DEFAULT, 5000u);
    assert_int_equal(LAPICT_CATCH_UP_MAX_DEFAULT, 1000u);
    assert_int_equal(lapict_config_check(&a), LAPICT_E_TSC_KHZ);
    assert_int_equal(lapict_strerror(LAPICT_E_TSC_KHZ)[0] != 0, 1);
    a.tsc_khz = 2500000u;
    assert_int_equal(lapict_config_check(&a), LAPICT_OK);
    a.tsc_khz = 1000000u;
    assert_int_equal(lapict_config_check(&a), LAPICT_OK);
}

enum field {
    F_BUS_HZ,
    F_TSC_KHZ,
    F_MIN_PERIOD,
    F_ADV_FIXED_NS,
    F_ADV_ADAPTIVE_NS,
    F_ADV_ADAPTIVE_MAX,
    F_ADV_MODE,
    F_MISSED,
    F_CATCH_UP_MAX,
};

static const struct limit_case {
    enum field field;
    uint64_t value;
    int expect;
} limit_cases[] = {
    {F_BUS_HZ, 0, LAPICT_E_BUS_HZ},
    {F_BUS_HZ, 999, LAPICT_E_BUS_HZ},
    {F_BUS_HZ, 1000, LAPICT_OK},
    {F_BUS_HZ, 25000000, LAPICT_OK},
    {F_BUS_HZ, 10000000000ull, LAPICT_OK},
    {F_BUS_HZ, 10000000001ull, LAPICT_E_BUS_HZ},
    {F_BUS_HZ, UINT64_MAX, LAPICT_E_BUS_HZ},
    {F_TSC_KHZ, 0, LAPICT_E_TSC_KHZ},
    {F_TSC_KHZ, 1, LAPICT_OK},
    {F_TSC_KHZ, 100000000, LAPICT_OK},
    {F_TSC_KHZ, 100000001, LAPICT_E_TSC_KHZ},
    {F_TSC_KHZ, UINT32_MAX, LAPICT_E_TSC_KHZ},
    {F_MIN_PERIOD, 0, LAPICT_OK},
    {F_MIN_PERIOD, 1000000000, LAPICT_OK},
    {F_MIN_PERIOD, 1000000001, LAPICT_E_MIN_PERIOD},
    {F_MIN_PERIOD, UINT32_MAX, LAPICT_E_MIN_PERIOD},
    {F_ADV_FIXED_NS, 0, LAPICT_OK},
    {F_ADV_FIXED_NS, LAPICT_ADVANCE_NS_LIMIT, LAPICT_OK},
    {F_ADV_FIXED_NS, LAPICT_ADVANCE_NS_LIMIT + 1ull, LAPICT_E_ADVANCE},
    {F_ADV_FIXED_NS, UINT32_MAX, LAPICT_E_ADVANCE},
    {F_ADV_ADAPTIVE_NS, LAPICT_ADVANCE_NS_LIMIT + 1ull, LAPICT_E_ADVANCE},
    {F_ADV_ADAPTIVE_MAX, LAPICT_ADVANCE_NS_LIMIT, LAPICT_OK},
    {F_ADV_ADAPTIVE_MAX, LAPICT_ADVANCE_NS_LIMIT + 1ull, LAPICT_E_ADVANCE},
    {F_ADV_ADAPTIVE_MAX, UINT32_MAX, LAPICT_E_ADVANCE},
    {F_ADV_MODE, 3, LAPICT_E_ADVANCE},
    {F_ADV_MODE, UINT32_MAX, LAPICT_E_ADVANCE},
    {F_MISSED, 3, LAPICT_E_MISSED},
    {F_MISSED, UINT32_MAX, LAPICT_E_MISSED},
    {F_CATCH_UP_MAX, 0, LAPICT_E_MISSED},
    {F_CATCH_UP_MAX, 1, LAPICT_OK},
    {F_CATCH_UP_MAX, LAPICT_CATCH_UP_MAX_LIMIT, LAPICT_OK},
    {F_CATCH_UP_MAX, LAPICT_CATCH_UP_MAX_LIMIT + 1ull, LAPICT_E_MISSED},
};

static struct lapict_config limit_config(const struct limit_case *lc)
{
    struct lapict_config c;
    uint32_t v = (uint32_t)lc->value;
    lapict_config_default(&c);
    c.tsc_khz = 1000000u; /* stated, as every host must */
    switch (lc->field) {
    case F_BUS_HZ:
        c.bus_hz = lc->value;
        break;
    case F_TSC_KHZ:
        c.tsc_khz = v;
        break;
    case F_MIN_PERIOD:
        c.min_period_ns = v;
        break;
    case F_ADV_FIXED_NS:
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = v;
        break;
    case F_ADV_ADAPTIVE_NS:
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_max_ns = LAPICT_ADVANCE_NS_LIMIT;
        c.advance_ns = v;
        break;
    case F_ADV_ADAPTIVE_MAX:
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_ns = 0;
        c.advance_max_ns = v;
        break;
    case F_ADV_MODE:
        c.advance_mode = v;
        break;
    case F_MISSED:
        c.missed_policy = v;
        break;
    case F_CATCH_UP_MAX:
        c.missed_policy = LAPICT_MISSED_CATCH_UP;
        c.catch_up_max = v;
        break;
    }
    return c;
}

/* Rule: every limit, at and beyond its bound, is checked by
 * lapict_config_check() and by init (instance untouched on error, no op
 * called either way); several bad fields: the first is named. */
static void every_limit_is_checked_by_check_and_init(void **state)
{
    struct lapict_config c;
    size_t i;
    (void)state;
    for (i = 0; i < N_OF(limit_cases); i++) {
        struct fake_host h;
        struct lapict_timer t;
        c = limit_config(&limit_cases[i]);
        print_message("case %zu: field %d value %llu\n", i,
                      (int)limit_cases[i].field,
                      (unsigned long long)limit_cases[i].value);
        assert_int_equal(lapict_config_check(&c), limit_cases[i].expect);
        fake_host_init(&h, 0, 1000000u, 0, true);
        attach_gives(&h, &t, &c, 0x5A, limit_cases[i].expect);
        assert_int_equal(h.rec.total_calls, 0);
    }
    assert_int_equal(lapict_config_check(NULL), LAPICT_E_INVAL);
    lapict_config_default(&c);
    c.bus_hz = 1;
    c.tsc_khz = 0;
    c.missed_policy = 9;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_BUS_HZ);
    c.bus_hz = 1000;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_TSC_KHZ);
    c.tsc_khz = 1;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_MISSED);
}

/* Rule (config.h): a NULL configuration is the defaults, which fail init
 * clearly (LAPICT_E_TSC_KHZ); with a rate stated they behave as
 * documented: a 200 us minimum period clamps a 1 us periodic count on the
 * 1 GHz bus, and the advance is off. */
static void init_null_config_uses_defaults(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_stats s;
    struct lapict_config c;
    (void)state;
    fake_host_init(&h, 0, 1000000u, 0, false);
    attach_gives(&h, &t, NULL, 0x5A, LAPICT_E_TSC_KHZ);
    lapict_config_default(&c);
    c.tsc_khz = 1000000u;
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&t), LAPICT_LVTT_RESET);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, LAPICT_LVTT_PERIODIC | 0x40),
                     LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1000), LAPICT_OK);
    fake_advance(&h, 199999);
    assert_int_equal(h.sim.injects, 0);
    fake_advance(&h, 1);
    assert_int_equal(h.sim.injects, 1);
    assert_int_equal(h.inj[0].host_ns, 200000);
    s = tu_stats(&t);
    assert_true(s.clamps >= 1);
    assert_int_equal(s.advance_ns, 0);
}

/* Rule (config.h, section 1): without TSC-deadline mode the TSC is never
 * read, so an unstated rate (0) is accepted and the mode is absent. */
static void tsc_khz_may_be_unstated_without_tsc_deadline(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c;
    uint64_t v = 9;
    (void)state;
    lapict_config_default(&c);
    c.tsc_deadline = false;
    assert_int_equal(lapict_config_check(&c), LAPICT_OK);
    fake_host_init(&h, 0, 1000000u, 0, false);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | 0x40),
                     LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&t), 0x40u);
    assert_int_equal(lapict_msr_read(&t, LAPICT_MSR_TSC_DEADLINE, &v),
                     LAPICT_E_GP);
}

static const struct ops_case {
    const char *name;
    unsigned null_ops;
    uint32_t version;
    bool hv;
    int expect;
} ops_cases[] = {
    {"complete without hv", 0, LAPICT_OPS_VERSION, false, LAPICT_OK},
    {"complete with hv", 0, LAPICT_OPS_VERSION, true, LAPICT_OK},
    {"version 0", 0, 0, true, LAPICT_E_OPS},
    {"no now_ns", FAKE_OP_NOW_NS, LAPICT_OPS_VERSION, true, LAPICT_E_OPS},
    {"no guest_tsc", FAKE_OP_GUEST_TSC, LAPICT_OPS_VERSION, true, LAPICT_E_OPS},
    {"no sw_timer_arm", FAKE_OP_SW_ARM, LAPICT_OPS_VERSION, true, LAPICT_E_OPS},
    {"no sw_timer_cancel", FAKE_OP_SW_CANCEL, LAPICT_OPS_VERSION, true,
     LAPICT_E_OPS},
    {"hv arm without cancel", FAKE_OP_HV_CANCEL, LAPICT_OPS_VERSION, true,
     LAPICT_E_OPS},
    {"no inject", FAKE_OP_INJECT, LAPICT_OPS_VERSION, true, LAPICT_E_OPS},
    {"no spin_until (optional)", FAKE_OP_SPIN, LAPICT_OPS_VERSION, true,
     LAPICT_OK},
    {"no report (optional)", FAKE_OP_REPORT, LAPICT_OPS_VERSION, true,
     LAPICT_OK},
    {"no hv timer at all (optional)", FAKE_OP_HV_ARM | FAKE_OP_HV_CANCEL,
     LAPICT_OPS_VERSION, true, LAPICT_OK},
    {"everything missing", ~0u, LAPICT_OPS_VERSION, true, LAPICT_E_OPS},
};

/* Rule: init wants an instance and an ops table (LAPICT_E_INVAL) whose
 * version and mandatory ops are there (LAPICT_E_OPS); it calls no op. */
static void init_checks_instance_and_ops(void **state)
{
    struct lapict_config c = tu_cfg();
    struct fake_host h;
    struct lapict_timer t, copy;
    size_t i;
    (void)state;
    for (i = 0; i < N_OF(ops_cases); i++) {
        const struct ops_case *oc = &ops_cases[i];
        print_message("ops case: %s\n", oc->name);
        fake_host_init(&h, 0, 1000000u, 0, oc->hv);
        lapict_sim_ops_remove(&h.ops, oc->null_ops);
        h.ops.version = oc->version;
        attach_gives(&h, &t, &c, 0xE7, oc->expect);
        assert_int_equal(h.rec.total_calls, 0);
    }
    fake_host_init(&h, 0, 1000000u, 0, false);
    assert_int_equal(lapict_init(NULL, &c, &h.ops, &h), LAPICT_E_INVAL);
    memset(&t, 0xC3, sizeof(t));
    memcpy(&copy, &t, sizeof(t));
    assert_int_equal(lapict_init(&t, &c, NULL, &h), LAPICT_E_INVAL);
    assert_memory_equal(&t, &copy, sizeof(t));
}

/* Rule: the largest count at the slowest legal rates (bus 1 kHz, /128,
 * 2^32-1: ~5.5e14 s) does not overflow; the host timer is in the future. */
static void init_extreme_rates_accept_largest_count(void **state)
{
    struct lapict_config c = tu_cfg();
    struct fake_host h;
    struct lapict_timer t;
    (void)state;
    c.bus_hz = 1000;
    c.tsc_khz = 1;
    fake_host_init(&h, 0, 1, 0, false);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    assert_int_equal(lapict_tdcr_write(&t, 0xA), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, UINT32_MAX), LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(&t), UINT32_MAX);
    fake_advance(&h, 1000000000000ull); /* 1000 s = 7 ticks of 128 ms */
    assert_int_equal(lapict_tmcct_read(&t),
                     UINT32_MAX - oracle_ticks_in(1000000000000ull, 1000, 128));
    assert_int_equal(h.sim.injects, 0);
    assert_true(fake_armed(&h));
    assert_true(fake_diff(h.sim.now_ns, fake_armed_at(&h)) > 0);
}

/* Rule (timer.md section 1 "Growth"): the configuration carries its size;
 * below the first release's or beyond LAPICT_CONFIG_SIZE_MAX it is
 * LAPICT_E_INVAL (instance untouched); a newer host's larger struct is
 * accepted with its unknown fields at 0, refused with any of them set. */
static void config_size_is_checked_and_a_larger_struct_grows(void **state)
{
    struct {
        struct lapict_config c;
        uint32_t newer[4];
    } big;
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c;
    (void)state;
    memset(&c, 0xEE, sizeof(c));
    lapict_config_default(&c);
    assert_int_equal(c.size, sizeof(c));
    assert_int_equal(LAPICT_CONFIG_SIZE_1_0, sizeof(c));
    c.tsc_khz = 1000000u;
    assert_int_equal(lapict_config_check(&c), LAPICT_OK);
    fake_host_init(&h, 0, 1000000u, 0, false);
    c.size = 0;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_INVAL);
    attach_gives(&h, &t, &c, 0x3C, LAPICT_E_INVAL);
    c.size = LAPICT_CONFIG_SIZE_1_0 - 1;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_INVAL);
    attach_gives(&h, &t, &c, 0x3C, LAPICT_E_INVAL);
    c.size = LAPICT_CONFIG_SIZE_MAX + 1;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_INVAL);
    memset(&big, 0, sizeof(big));
    big.c = c;
    big.c.size = (uint32_t)sizeof(big);
    assert_int_equal(lapict_config_check(&big.c), LAPICT_OK);
    big.newer[3] = 1;
    assert_int_equal(lapict_config_check(&big.c), LAPICT_E_INVAL);
    attach_gives(&h, &t, &big.c, 0x3C, LAPICT_E_INVAL);
    big.newer[3] = 0;
    big.c.size = (uint32_t)sizeof(big.c) + 1;
    assert_int_equal(fake_attach(&h, &t, &big.c), LAPICT_OK);
    /* The fields it knows are read as given. */
    big.c.size = (uint32_t)sizeof(big);
    big.c.bus_hz = 100000000ull;
    assert_int_equal(fake_attach(&h, &t, &big.c), LAPICT_OK);
    assert_int_equal(lapict_tdcr_write(&t, 0xB), LAPICT_OK);
    assert_int_equal(lapict_lvtt_write(&t, 0x40), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, 1000), LAPICT_OK);
    fake_advance(&h, 9999);
    assert_int_equal(h.sim.injects, 0);
    fake_advance(&h, 1);
    assert_int_equal(h.sim.injects, 1);
}

TU_MAIN(cmocka_unit_test(config_default_values_are_documented),
        cmocka_unit_test(every_limit_is_checked_by_check_and_init),
        cmocka_unit_test(init_null_config_uses_defaults),
        cmocka_unit_test(tsc_khz_may_be_unstated_without_tsc_deadline),
        cmocka_unit_test(init_checks_instance_and_ops),
        cmocka_unit_test(init_extreme_rates_accept_largest_count),
        cmocka_unit_test(config_size_is_checked_and_a_larger_struct_grows))
