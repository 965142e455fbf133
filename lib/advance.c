/* SPDX-License-Identifier: MIT */
/* The adaptive advance tuner (TIMER.md section 7). */
#include "internal.h"

static uint32_t half_step(uint32_t from, uint32_t to)
{
    /* from + (to - from) / 4 without signed shifts. */
    return to >= from ? from + ((to - from) >> 2) : from - ((from - to) >> 2);
}

/*
 * Adaptive advance. The arrival error plus the advance in force is the
 * host's wake-up latency L. The tuner keeps an estimate of L and of its
 * mean deviation; the first sample seeds it (one expiry to converge),
 * samples far from the estimate are ignored unless three come in a row (a
 * real level shift), and the advance is the estimate plus two deviations:
 * most arrivals are then slightly early and absorbed by the wait, so the
 * guest sees the instant itself. Bounded to [0, advance_max_ns].
 */
void lapict__tune(struct lapict_timer *t, int64_t err)
{
    int64_t l = err + (int64_t)t->adv_ns;
    uint32_t L, ad, thr;
    uint64_t a;

    if (t->adv_mode != LAPICT_ADVANCE_ADAPTIVE || !lapict__can_spin(t))
        return;
    if (l < 0)
        l = 0;
    if (l > 2 * (int64_t)LAPICT_ADVANCE_NS_LIMIT)
        l = 2 * (int64_t)LAPICT_ADVANCE_NS_LIMIT;
    L = (uint32_t)l;
    if (!(t->flags & LAPICT__F_HAVE_EST)) {
        t->adv_est = L;
        t->adv_dev = 0;
        t->adv_outliers = 0;
        t->flags |= LAPICT__F_HAVE_EST;
    } else {
        ad = L > t->adv_est ? L - t->adv_est : t->adv_est - L;
        thr = 4u * t->adv_dev + t->adv_est / 2u + 1000u;
        if (ad > thr) {
            if (++t->adv_outliers < 3)
                return;
            t->adv_est = L;
            t->adv_dev = ad / 4u;
            t->adv_outliers = 0;
        } else {
            t->adv_outliers = 0;
            t->adv_est = half_step(t->adv_est, L);
            t->adv_dev = half_step(t->adv_dev, ad);
        }
    }
    a = (uint64_t)t->adv_est + 2u * (uint64_t)t->adv_dev;
    t->adv_ns = a > t->adv_max_ns ? t->adv_max_ns : (uint32_t)a;
}
