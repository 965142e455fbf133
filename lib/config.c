/* SPDX-License-Identifier: MIT */
#include "advance.h"
#include "config.h"

/*
 * No padding at the end: a field appended in a later release starts at the
 * old size, so an old library sees it beyond its sizeof (<lapict/config.h>).
 */
_Static_assert(sizeof(struct lapict_config) == LAPICT_CONFIG_SIZE_1_0,
               "struct lapict_config of 1.0.0 is LAPICT_CONFIG_SIZE_1_0");
_Static_assert(__builtin_offsetof(struct lapict_config, catch_up_max) +
                       sizeof(uint32_t) ==
                   sizeof(struct lapict_config),
               "struct lapict_config ends without padding");

void lapict_config_default(struct lapict_config *cfg)
{
    if (!cfg)
        return;
    cfg->size = (uint32_t)sizeof(*cfg);
    cfg->bus_hz = LAPICT_BUS_HZ_DEFAULT;
    /* No default rate: only the host knows its guest TSC's
     * (<lapict/config.h>). */
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

int lapict__config_load(const struct lapict_config *in,
                        struct lapict_config *out)
{
    const uint8_t *p = (const uint8_t *)in;
    size_t i, n;

    if (!in || in->size < LAPICT_CONFIG_SIZE_1_0 ||
        in->size > LAPICT_CONFIG_SIZE_MAX)
        return LAPICT_E_INVAL;
    /* A newer host's fields: accepted only at their "not used" zero. */
    for (i = sizeof(*out); i < in->size; i++)
        if (p[i])
            return LAPICT_E_INVAL;
    /* An older host's smaller struct: the fields it lacks keep defaults. */
    n = in->size < sizeof(*out) ? in->size : sizeof(*out);
    lapict_config_default(out);
    __builtin_memcpy(out, in, n);
    out->size = (uint32_t)sizeof(*out);
    return LAPICT_OK;
}

int lapict_config_check(const struct lapict_config *in)
{
    struct lapict_config c;
    const struct lapict_config *cfg = &c;
    int rc = lapict__config_load(in, &c);

    if (rc != LAPICT_OK)
        return rc;
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
