/* SPDX-License-Identifier: MIT */
/*
 * lib/config.c and lapict_init(): documented defaults, every limit of
 * docs/spec/timer.md section 1/7 at and beyond its bound, NULL handling,
 * mandatory ops, and "on error the instance is not modified".
 */
#include "testutil.h"

static void config_default_values_are_documented(void **state)
{
    (void)state;
    struct lapict_config a, b;
    /* Whatever the caller's buffer held, the result is the same. */
    memset(&a, 0x00, sizeof(a));
    memset(&b, 0xFF, sizeof(b));
    lapict_config_default(&a);
    lapict_config_default(&b);

    assert_int_equal(a.bus_hz, 1000000000ull);
    assert_int_equal(a.tsc_khz, 0); /* not stated: no default rate */
    assert_int_equal(a.min_period_ns, 200000u);
    assert_int_equal(a.advance_mode, LAPICT_ADVANCE_OFF);
    assert_int_equal(a.advance_max_ns, 5000u);
    assert_int_equal(a.missed_policy, LAPICT_MISSED_COALESCE);
    assert_int_equal(a.catch_up_max, 1000u);
    assert_true(a.tsc_deadline);

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

    /* The header macros agree with the documented numbers. */
    assert_int_equal(LAPICT_BUS_HZ_DEFAULT, 1000000000ull);
    assert_int_equal(LAPICT_MIN_PERIOD_NS_DEFAULT, 200000u);
    assert_int_equal(LAPICT_ADVANCE_MAX_NS_DEFAULT, 5000u);
    assert_int_equal(LAPICT_CATCH_UP_MAX_DEFAULT, 1000u);
    /* Valid once the host states its guest TSC's rate. */
    assert_int_equal(lapict_config_check(&a), LAPICT_E_TSC_KHZ);
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

struct limit_case {
    enum field field;
    uint64_t value;
    int expect;
};

static const struct limit_case limit_cases[] = {
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
    lapict_config_default(&c);
    c.tsc_khz = 1000000u; /* stated, as every host must */
    switch (lc->field) {
    case F_BUS_HZ:
        c.bus_hz = lc->value;
        break;
    case F_TSC_KHZ:
        c.tsc_khz = (uint32_t)lc->value;
        break;
    case F_MIN_PERIOD:
        c.min_period_ns = (uint32_t)lc->value;
        break;
    case F_ADV_FIXED_NS:
        c.advance_mode = LAPICT_ADVANCE_FIXED;
        c.advance_ns = (uint32_t)lc->value;
        break;
    case F_ADV_ADAPTIVE_NS:
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_max_ns = LAPICT_ADVANCE_NS_LIMIT;
        c.advance_ns = (uint32_t)lc->value;
        break;
    case F_ADV_ADAPTIVE_MAX:
        c.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        c.advance_ns = 0;
        c.advance_max_ns = (uint32_t)lc->value;
        break;
    case F_ADV_MODE:
        c.advance_mode = (uint32_t)lc->value;
        break;
    case F_MISSED:
        c.missed_policy = (uint32_t)lc->value;
        break;
    case F_CATCH_UP_MAX:
        c.missed_policy = LAPICT_MISSED_CATCH_UP;
        c.catch_up_max = (uint32_t)lc->value;
        break;
    }
    return c;
}

static void config_check_every_limit(void **state)
{
    (void)state;
    size_t i;
    for (i = 0; i < sizeof(limit_cases) / sizeof(limit_cases[0]); i++) {
        struct lapict_config c = limit_config(&limit_cases[i]);
        print_message("case %zu: field %d value %llu\n", i,
                      (int)limit_cases[i].field,
                      (unsigned long long)limit_cases[i].value);
        assert_int_equal(lapict_config_check(&c), limit_cases[i].expect);
    }
}

/* A failed init leaves every byte of the instance as it was. */
static void
init_every_limit_and_failed_init_leaves_instance_untouched(void **state)
{
    (void)state;
    size_t i;
    for (i = 0; i < sizeof(limit_cases) / sizeof(limit_cases[0]); i++) {
        struct lapict_config c = limit_config(&limit_cases[i]);
        struct fake_host h;
        struct lapict_timer t, copy;
        fake_host_init(&h, 0, 1000000u, 0, true);
        memset(&t, 0x5A, sizeof(t));
        memcpy(&copy, &t, sizeof(t));
        print_message("case %zu\n", i);
        assert_int_equal(fake_attach(&h, &t, &c), limit_cases[i].expect);
        if (limit_cases[i].expect != LAPICT_OK)
            assert_memory_equal(&t, &copy, sizeof(t));
        /* "No op is called" by init, successful or not. */
        assert_int_equal(h.rec.total_calls, 0);
    }
}

static void config_check_null_is_inval(void **state)
{
    (void)state;
    assert_int_equal(lapict_config_check(NULL), LAPICT_E_INVAL);
}

static void init_null_instance_or_ops_is_inval(void **state)
{
    (void)state;
    struct fake_host h;
    struct lapict_timer t, copy;
    struct lapict_config c = tu_cfg();
    fake_host_init(&h, 0, 1000000u, 0, false);
    assert_int_equal(lapict_init(NULL, &c, &h.ops, &h), LAPICT_E_INVAL);
    memset(&t, 0xC3, sizeof(t));
    memcpy(&copy, &t, sizeof(t));
    assert_int_equal(lapict_init(&t, &c, NULL, &h), LAPICT_E_INVAL);
    assert_memory_equal(&t, &copy, sizeof(t));
}

/* config.h: a NULL configuration is the defaults, which state no guest
 * TSC rate while offering TSC-deadline mode: init fails clearly
 * (LAPICT_E_TSC_KHZ, instance untouched). The defaults with a rate
 * stated behave as documented. */
static void init_null_config_uses_defaults(void **state)
{
    (void)state;
    struct fake_host h;
    struct lapict_timer t, copy;
    struct lapict_stats s;
    struct lapict_config c;
    fake_host_init(&h, 0, 1000000u, 0, false);
    memset(&t, 0x5A, sizeof(t));
    memcpy(&copy, &t, sizeof(t));
    assert_int_equal(fake_attach(&h, &t, NULL), LAPICT_E_TSC_KHZ);
    assert_memory_equal(&t, &copy, sizeof(t));
    lapict_config_default(&c);
    c.tsc_khz = 1000000u;
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    assert_int_equal(lapict_lvtt_read(&t), LAPICT_LVTT_RESET);
    /*
     * Default min period 200 us: a periodic count of 1000 at /1 on the
     * 1 GHz default bus (1 us) is clamped to 200 us.
     */
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
    assert_int_equal(s.advance_ns, 0); /* advance off by default */
}

struct ops_case {
    const char *name;
    unsigned null_ops;
    uint32_t version;
    bool hv;
    int expect;
};

static const struct ops_case ops_cases[] = {
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

static void init_missing_mandatory_ops_is_e_ops(void **state)
{
    (void)state;
    size_t i;
    for (i = 0; i < sizeof(ops_cases) / sizeof(ops_cases[0]); i++) {
        const struct ops_case *oc = &ops_cases[i];
        struct lapict_config c = tu_cfg();
        struct fake_host h;
        struct lapict_timer t, copy;
        print_message("ops case: %s\n", oc->name);
        fake_host_init(&h, 0, 1000000u, 0, oc->hv);
        fake_ops_null(&h.ops, oc->null_ops);
        h.ops.version = oc->version;
        memset(&t, 0xE7, sizeof(t));
        memcpy(&copy, &t, sizeof(t));
        assert_int_equal(fake_attach(&h, &t, &c), oc->expect);
        if (oc->expect != LAPICT_OK)
            assert_memory_equal(&t, &copy, sizeof(t));
        assert_int_equal(h.rec.total_calls, 0);
    }
}

/* The first field out of range is named when several are. */
static void config_check_names_first_bad_field(void **state)
{
    (void)state;
    struct lapict_config c;
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

/* Extreme but legal configs: the largest guest count must not overflow. */
static void init_extreme_rates_accept_largest_count(void **state)
{
    (void)state;
    /* Slowest bus, /128, count 2^32-1: ~5.5e14 s, no wrap-around. */
    struct lapict_config c = tu_cfg();
    struct fake_host h;
    struct lapict_timer t;
    uint64_t want;
    c.bus_hz = 1000;
    c.tsc_khz = 1;
    fake_host_init(&h, 0, 1, 0, false);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    assert_int_equal(lapict_tdcr_write(&t, 0xA), LAPICT_OK);
    assert_int_equal(lapict_tmict_write(&t, UINT32_MAX), LAPICT_OK);
    assert_int_equal(lapict_tmcct_read(&t), UINT32_MAX);
    fake_advance(&h, 1000000000000ull); /* 1000 s = 7 ticks of 128 ms */
    want = UINT32_MAX - oracle_ticks_in(1000000000000ull, 1000, 128);
    assert_int_equal(lapict_tmcct_read(&t), want);
    assert_int_equal(h.sim.injects, 0);
    /* The host timer is in the future, not wrapped into the past. */
    assert_true(fake_armed(&h));
    assert_true(fake_diff(h.sim.now_ns, fake_armed_at(&h)) > 0);
}

/* A TSC rate of 0 and a bus above 10 GHz are rejected by init, before
 * anything divides by them. */
static void tsc_khz_0_and_bus_hz_over_1e10_rejected_by_init(void **state)
{
    (void)state;
    struct fake_host h;
    struct lapict_timer t, copy;
    struct lapict_config c = tu_cfg();
    fake_host_init(&h, 0, 1000000u, 0, false);
    memset(&t, 0x11, sizeof(t));
    memcpy(&copy, &t, sizeof(t));
    c.tsc_khz = 0;
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_E_TSC_KHZ);
    assert_memory_equal(&t, &copy, sizeof(t));
    c = tu_cfg();
    c.bus_hz = 10000000001ull;
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_E_BUS_HZ);
    assert_memory_equal(&t, &copy, sizeof(t));
    assert_int_equal(lapict_tmcct_read(&t), 0); /* still not an instance */
}

/* config.h, timer.md section 1: there is no default guest TSC rate, so a
 * wrong one cannot pass silently. tsc_khz 0 (not stated, the default) is
 * LAPICT_E_TSC_KHZ while TSC-deadline mode is offered; without the mode
 * the TSC is never read, and 0 is accepted. */
static void tsc_khz_must_be_stated_when_tsc_deadline_is_offered(void **state)
{
    struct fake_host h;
    struct lapict_timer t;
    struct lapict_config c;
    uint64_t v = 9;
    (void)state;
    lapict_config_default(&c);
    assert_int_equal(c.tsc_khz, 0);
    assert_true(c.tsc_deadline);
    assert_int_equal(lapict_config_check(&c), LAPICT_E_TSC_KHZ);
    c.tsc_khz = 2500000u;
    assert_int_equal(lapict_config_check(&c), LAPICT_OK);
    c.tsc_khz = 0;
    c.tsc_deadline = false;
    assert_int_equal(lapict_config_check(&c), LAPICT_OK);
    fake_host_init(&h, 0, 1000000u, 0, false);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_OK);
    /* No TSC-deadline mode, so the unstated rate is never used. */
    lapict_lvtt_write(&t, LAPICT_LVTT_TSC_DEADLINE | 0x40);
    assert_int_equal(lapict_lvtt_read(&t), 0x40u);
    assert_int_equal(lapict_msr_read(&t, LAPICT_MSR_TSC_DEADLINE, &v),
                     LAPICT_E_GP);
    assert_int_equal(lapict_strerror(LAPICT_E_TSC_KHZ)[0] != 0, 1);
}

/* config.h, timer.md section 1 "Growth": the configuration carries its
 * size. lapict_config_default() sets it; smaller than the first release's
 * struct (or beyond LAPICT_CONFIG_SIZE_MAX) is LAPICT_E_INVAL for check and
 * init, and init then leaves the instance untouched; a newer host's larger
 * struct is accepted with its unknown fields at 0 and refused with any of
 * them set, never silently ignored. */
static void config_size_is_checked_and_a_larger_struct_grows(void **state)
{
    struct {
        struct lapict_config c;
        uint32_t newer[4];
    } big;
    struct fake_host h;
    struct lapict_timer t, copy;
    struct lapict_config c;
    (void)state;
    memset(&c, 0xEE, sizeof(c));
    lapict_config_default(&c);
    assert_int_equal(c.size, sizeof(c));
    assert_int_equal(LAPICT_CONFIG_SIZE_1_0, sizeof(c));
    c.tsc_khz = 1000000u;
    assert_int_equal(lapict_config_check(&c), LAPICT_OK);
    fake_host_init(&h, 0, 1000000u, 0, false);
    memset(&t, 0x3C, sizeof(t));
    memcpy(&copy, &t, sizeof(t));
    /* Too small: an unset (zeroed) size, one byte short. */
    c.size = 0;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_INVAL);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_E_INVAL);
    c.size = LAPICT_CONFIG_SIZE_1_0 - 1;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_INVAL);
    assert_int_equal(fake_attach(&h, &t, &c), LAPICT_E_INVAL);
    c.size = LAPICT_CONFIG_SIZE_MAX + 1;
    assert_int_equal(lapict_config_check(&c), LAPICT_E_INVAL);
    assert_memory_equal(&t, &copy, sizeof(t));
    /* A newer host's struct: the fields this library lacks at 0. */
    memset(&big, 0, sizeof(big));
    big.c = c;
    big.c.size = (uint32_t)sizeof(big);
    assert_int_equal(lapict_config_check(&big.c), LAPICT_OK);
    big.newer[3] = 1;
    assert_int_equal(lapict_config_check(&big.c), LAPICT_E_INVAL);
    assert_int_equal(fake_attach(&h, &t, &big.c), LAPICT_E_INVAL);
    assert_memory_equal(&t, &copy, sizeof(t));
    big.newer[3] = 0;
    big.c.size = (uint32_t)sizeof(big.c) + 1;
    assert_int_equal(fake_attach(&h, &t, &big.c), LAPICT_OK);
    /* The fields it knows are read as given. */
    big.c.size = (uint32_t)sizeof(big);
    big.c.bus_hz = 100000000ull;
    assert_int_equal(fake_attach(&h, &t, &big.c), LAPICT_OK);
    lapict_tdcr_write(&t, 0xB);
    lapict_lvtt_write(&t, 0x40);
    lapict_tmict_write(&t, 1000);
    fake_advance(&h, 9999);
    assert_int_equal(h.sim.injects, 0);
    fake_advance(&h, 1);
    assert_int_equal(h.sim.injects, 1);
}

TU_MAIN(cmocka_unit_test(config_default_values_are_documented),
        cmocka_unit_test(config_check_every_limit),
        cmocka_unit_test(
            init_every_limit_and_failed_init_leaves_instance_untouched),
        cmocka_unit_test(config_check_null_is_inval),
        cmocka_unit_test(init_null_instance_or_ops_is_inval),
        cmocka_unit_test(init_null_config_uses_defaults),
        cmocka_unit_test(config_size_is_checked_and_a_larger_struct_grows),
        cmocka_unit_test(tsc_khz_must_be_stated_when_tsc_deadline_is_offered),
        cmocka_unit_test(init_missing_mandatory_ops_is_e_ops),
        cmocka_unit_test(config_check_names_first_bad_field),
        cmocka_unit_test(init_extreme_rates_accept_largest_count),
        cmocka_unit_test(tsc_khz_0_and_bus_hz_over_1e10_rejected_by_init))
