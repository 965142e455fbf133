/* SPDX-License-Identifier: MIT */
/*
 * Per-instance configuration, fixed at lapict_init(). These are properties
 * of the virtual platform (timer input clock, guest TSC rate) and host
 * policies (minimum period, advance, missed-tick policy).
 */
#ifndef LAPICT_CONFIG_H
#define LAPICT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sizeof(struct lapict_config) in the first release, 1.0.0: the smallest
 * size accepted. A size above LAPICT_CONFIG_SIZE_MAX is refused unread.
 */
#define LAPICT_CONFIG_SIZE_1_0 56u
#define LAPICT_CONFIG_SIZE_MAX 4096u

/* Limits checked by lapict_config_check(): docs/spec/timer.md section 1. */
#define LAPICT_BUS_HZ_MIN 1000ull
#define LAPICT_BUS_HZ_MAX 10000000000ull
#define LAPICT_BUS_HZ_DEFAULT 1000000000ull
#define LAPICT_TSC_KHZ_MIN 1u
#define LAPICT_TSC_KHZ_MAX 100000000u
#define LAPICT_MIN_PERIOD_NS_MAX 1000000000u
#define LAPICT_MIN_PERIOD_NS_DEFAULT 200000u
/* Upper bound for advance_ns and advance_max_ns: 10 ms of early wake-up. */
#define LAPICT_ADVANCE_NS_LIMIT 10000000u
#define LAPICT_ADVANCE_MAX_NS_DEFAULT 5000u
#define LAPICT_CATCH_UP_MAX_DEFAULT 1000u
#define LAPICT_CATCH_UP_MAX_LIMIT 65535u

/* How early the host timer is armed before an expiry instant. */
enum lapict_advance_mode {
    LAPICT_ADVANCE_OFF = 0,
    /* Always advance_ns early. */
    LAPICT_ADVANCE_FIXED = 1,
    /* Tuned per instance from measured arrival errors, in [0, max]. */
    LAPICT_ADVANCE_ADAPTIVE = 2,
};

/*
 * What the adaptive tuner aims at. Host policy: set in the config, changed
 * at run time with lapict_advance_set(); never part of the migration blob.
 */
enum lapict_advance_goal {
    /*
     * Hold the peak of the latency: nearly every interrupt on time, the
     * host spins for the rest of the advance (no spin budget applies).
     */
    LAPICT_ADVANCE_GOAL_LATENCY = 0,
    /*
     * Aim at the median latency, the advance that minimises mean spin plus
     * mean lateness per interrupt. With a spin budget: when the most that
     * aim can cost (the mean deviation of the latency) is above the
     * budget, aim instead at a floor below nearly every latency (median
     * minus three mean deviations), where the host hardly spins at all.
     */
    LAPICT_ADVANCE_GOAL_BALANCED = 1,
};

/* What to do with periodic expiries that happen while one is undelivered. */
enum lapict_missed_policy {
    /* At most one pending, like the IRR bit of real hardware. */
    LAPICT_MISSED_COALESCE = 0,
    /* Every missed tick delivered, one per acceptance, up to catch_up_max. */
    LAPICT_MISSED_CATCH_UP = 1,
    /* Several grid points passed at once: deliver none, stay on the grid. */
    LAPICT_MISSED_DROP = 2,
};

/*
 * Configuration of one instance; lapict_config_default() fills it. It grows
 * only at the end, and @size tells the library how much of it the host
 * has (docs/spec/timer.md section 1, "Growth"); the layout has no
 * padding at the end, so a field appended later starts at the old size.
 */
struct lapict_config {
    /*
     * sizeof(struct lapict_config) as the host was built: set by
     * lapict_config_default(), checked by lapict_config_check() and
     * lapict_init(). At least LAPICT_CONFIG_SIZE_1_0.
     */
    uint32_t size;
    /* CPUID.01H:ECX.TSC_Deadline[bit 24] as the guest sees it. */
    bool tsc_deadline;
    /*
     * Guest TSC frequency, kHz; converts TSC-deadline values to host ns.
     * No default: 0 (not stated) is refused while tsc_deadline is set, so
     * the host states the rate its guest TSC really runs at (a wrong one
     * is detected and reported: docs/spec/timer.md section 4).
     */
    uint32_t tsc_khz;
    /* Timer input clock before the divider, Hz. */
    uint64_t bus_hz;
    /* Periodic timers faster than this are slowed to it (host protection). */
    uint32_t min_period_ns;
    /* LAPICT_ADVANCE_*. */
    uint32_t advance_mode;
    /* FIXED: the advance; ADAPTIVE: the starting value. */
    uint32_t advance_ns;
    /* ADAPTIVE: the upper bound of the tuned advance. */
    uint32_t advance_max_ns;
    /* ADAPTIVE: LAPICT_ADVANCE_GOAL_*. */
    uint32_t advance_goal;
    /*
     * ADAPTIVE, balanced goal: the mean spin per interrupt, ns, the tuner
     * may cost the host (0: no budget); at most LAPICT_ADVANCE_NS_LIMIT.
     */
    uint32_t advance_spin_budget_ns;
    /* LAPICT_MISSED_*. */
    uint32_t missed_policy;
    /* CATCH_UP: the most ticks held pending. */
    uint32_t catch_up_max;
};

/**
 * lapict_config_default() - fill @cfg with the documented defaults.
 * @cfg: configuration to fill.
 *
 * Sets @cfg->size to sizeof(struct lapict_config) as the host was built.
 * Defaults: 1 GHz bus, guest TSC rate not stated (tsc_khz 0: the host
 * must set it while TSC-deadline mode is offered, or lapict_init() fails
 * with LAPICT_E_TSC_KHZ), 200 us minimum period, advance off
 * (advance_max_ns 5000, goal latency and no spin budget for when adaptive
 * is chosen), coalesce, catch-up bound 1000, TSC-deadline supported.
 *
 * Context: any.
 */
LAPICT_API void lapict_config_default(struct lapict_config *cfg);

/**
 * lapict_config_check() - validate a configuration without initialising.
 * @cfg: configuration to check.
 *
 * @cfg->size is checked first (docs/spec/timer.md section 1, "Growth"):
 * below LAPICT_CONFIG_SIZE_1_0 or above LAPICT_CONFIG_SIZE_MAX it is
 * LAPICT_E_INVAL; above this library's sizeof(struct lapict_config), the
 * bytes it does not know (fields of a newer release) must be zero, their
 * "not used" value, else LAPICT_E_INVAL: a host never has a setting it
 * asked for silently ignored.
 *
 * Context: any.
 * Return: LAPICT_OK, LAPICT_E_INVAL for NULL or a bad @cfg->size, or the
 * LAPICT_E_* code naming
 * the first field out of range (bus_hz, tsc_khz, also 0 with tsc_deadline
 * set, min_period_ns, advance
 * mode / bounds / goal / spin budget, missed policy / catch-up bound).
 */
LAPICT_API int lapict_config_check(const struct lapict_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_CONFIG_H */
