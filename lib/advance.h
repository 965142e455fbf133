/* SPDX-License-Identifier: MIT */
/*
 * The adaptive advance tuner (advance.c), as the other files of lib/ use
 * it. Not installed.
 */
#ifndef LAPICT__ADVANCE_H
#define LAPICT__ADVANCE_H

#include "internal.h"

/*
 * Feed one wake-up latency (ns from the instant the host timer was due to
 * the arrival at guest entry) to the adaptive tuner.
 */
void lapict__tune(struct lapict_timer *t, int64_t latency);

/* Whether @o is a run of outliers the tuner can hold (a restored blob's). */
bool lapict__outliers_ok(uint32_t o);

/* A goal and spin budget lapict_config_check() and lapict_advance_set()
 * accept. */
static inline bool lapict__goal_ok(uint32_t goal, uint32_t budget_ns)
{
    return goal <= LAPICT_ADVANCE_GOAL_BALANCED &&
           budget_ns <= LAPICT_ADVANCE_NS_LIMIT;
}

#endif /* LAPICT__ADVANCE_H */
