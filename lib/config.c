/* SPDX-License-Identifier: MIT */
#include "internal.h"

void lapict_config_default(struct lapict_config *cfg)
{
    if (!cfg)
        return;
    cfg->bus_hz = LAPICT_BUS_HZ_DEFAULT;
    /* No default rate: only the host knows its guest TSC's (config.h). */
    cfg->tsc_khz = 0;
    cfg->min_period_ns = LAPICT_MIN_PERIOD_NS_DEFAULT;
    cfg->advance_mode = LAPICT_ADVANCE_OFF;
    cfg->advance_ns = 0;
    cfg->advance_max_ns = LAPICT_ADVANCE_MAX_NS_DEFAULT;
    cfg->advance_goal = LAPICT_ADVANCE_GOAL_LATENCY;
    cfg->advance_spin_budget_ns = 0;
    cfg->missed_policy = LAPICT_MISSED_COALESCE;
    cfg->catch_up_max = LAPICT_CATCH_UP_MAX_DEFAULT;
    cfg->tsc_deadline = true;
}

int lapict_config_check(const struct lapict_config *cfg)
{
    if (!cfg)
        return LAPICT_E_INVAL;
    /*
     * The bounds keep every product in 128 bits: the largest count 2^32-1
     * at divide 128 on a 1 kHz bus is 5.5e17 ns, far below 2^62.
     */
    if (cfg->bus_hz < LAPICT_BUS_HZ_MIN || cfg->bus_hz > LAPICT_BUS_HZ_MAX)
        return LAPICT_E_BUS_HZ;
    /* 0: not stated, which only an instance that never reads the TSC
     * (TSC-deadline mode not offered) can leave it. */
    if (cfg->tsc_khz == 0 ? cfg->tsc_deadline
                          : cfg->tsc_khz < LAPICT_TSC_KHZ_MIN ||
                                cfg->tsc_khz > LAPICT_TSC_KHZ_MAX)
        return LAPICT_E_TSC_KHZ;
    if (cfg->min_period_ns > LAPICT_MIN_PERIOD_NS_MAX)
        return LAPICT_E_MIN_PERIOD;
    switch (cfg->advance_mode) {
    case LAPICT_ADVANCE_OFF:
        break;
    case LAPICT_ADVANCE_FIXED:
        if (cfg->advance_ns > LAPICT_ADVANCE_NS_LIMIT)
            return LAPICT_E_ADVANCE;
        break;
    case LAPICT_ADVANCE_ADAPTIVE:
        if (cfg->advance_max_ns > LAPICT_ADVANCE_NS_LIMIT ||
            cfg->advance_ns > cfg->advance_max_ns)
            return LAPICT_E_ADVANCE;
        break;
    default:
        return LAPICT_E_ADVANCE;
    }
    if (!lapict__goal_ok(cfg->advance_goal, cfg->advance_spin_budget_ns))
        return LAPICT_E_ADVANCE;
    switch (cfg->missed_policy) {
    case LAPICT_MISSED_COALESCE:
    case LAPICT_MISSED_DROP:
        break;
    case LAPICT_MISSED_CATCH_UP:
        if (cfg->catch_up_max < 1 ||
            cfg->catch_up_max > LAPICT_CATCH_UP_MAX_LIMIT)
            return LAPICT_E_MISSED;
        break;
    default:
        return LAPICT_E_MISSED;
    }
    return LAPICT_OK;
}
