/* SPDX-License-Identifier: MIT */
/*
 * The adaptive advance tuner (docs/spec/timer.md section 7).
 *
 * Every sample is the host's wake-up latency L: how long after its host
 * timer was due (the armed target, or the arming itself when the target
 * had already passed) the vCPU was back at guest entry. The tuner keeps
 *
 *   adv_est  a fast running mean of L (gain 1/4),
 *   adv_dev  a running mean absolute deviation of L around it (gain 1/4),
 *   adv_ns   the advance itself: a peak hold of the accepted samples that
 *            decays (1/64 of the gap per sample) towards est + 2 dev.
 *
 * Why a peak hold rather than a mean: an arrival earlier than the instant
 * costs the host a short spin, but a later one is seen by the guest, so the
 * advance must cover the upper end of the latency distribution, not its
 * middle (KVM's rule centres on the mean, so half its arrivals are late
 * under noise). A sample that comes within a quarter deviation of the
 * advance, or beyond it, raises the advance at once to the sample plus a
 * quarter deviation; other samples lower it slowly, so a long quiet spell
 * gives the spin time back.
 *
 * Robustness: the first sample seeds the estimate (one expiry to converge,
 * whatever the latency: KVM's 1/8 steps take tens of expiries and cannot
 * pass 5 us). Samples further than 4 dev + est/2 + 1 us from the estimate
 * are outliers and ignored, so a rare spike moves nothing. Consecutive
 * outliers on the same side are a level shift and reseed the estimate: two
 * late ones (the guest is seeing them), three early ones (only the host
 * pays for those). Integer shifts only, bounded to [0, adv_max_ns].
 *
 * adv_outliers: bits 0-6 count consecutive outliers, bit 7 is set when
 * they were late.
 *
 * That is the latency goal: the guest first. Its price is host spin, of
 * the order of the latency's spread per interrupt (BENCHMARKS.md gives the
 * figures and the command that measures them).
 *
 * The balanced goal weighs a ns of host spin the same as a ns of lateness.
 * Per interrupt the cost is (advance - L) when early, (L - advance) when
 * late: |L - advance|, whose mean is least at the median of L. So adv_est
 * becomes a median tracker (a step of dev/32 towards each sample, never
 * past it: a constant latency is matched exactly and costs no spin), with
 * adv_dev the mean absolute deviation around it at gain 1/16 (smoother
 * than the mean's 1/4: the jitter of the advance is spin too). The same
 * outlier gate and reseeding keep spikes out and follow level shifts, with
 * one difference: an early outlier is not ignored but tracked (until three
 * in a row reseed), because it is spin the host pays, and the budget must
 * see it (a latency with 40 % of its samples far below the rest would
 * otherwise spin unseen on every one of those).
 *
 * Aiming at the median costs E[(median - L)+] per interrupt, which is at
 * most the mean absolute deviation dev (half of it for a symmetric
 * latency). So the median is aimed at while dev fits the budget. A budget
 * below is not spent on a partial advance, which would still leave most
 * interrupts late: the aim drops to median - 3 dev, under nearly every
 * latency (the whole range of a uniform one), where the host hardly spins
 * and the lateness is still cut by that floor.
 */
#include "advance.h"
#include "ops.h"

#define OUTL_LATE 0x80u
#define OUTL_COUNT 0x7Fu
#define RESEED_LATE 2u
#define RESEED_EARLY 3u
/* Slack of the outlier gate, ns: below it nothing counts as an outlier. */
#define GATE_FLOOR_NS 1000u
/* Balanced: median step dev >> MED_STEP, deviation gain 1 / 2^BAL_DEV. */
#define MED_STEP 5u
#define BAL_DEV 4u
/* Balanced, over budget: aim FLOOR_DEVS deviations under the median. */
#define FLOOR_DEVS 3u

/* from + (to - from) / 2^sh, without signed shifts. */
static uint32_t ewma(uint32_t from, uint32_t to, unsigned sh)
{
    return to >= from ? from + ((to - from) >> sh) : from - ((from - to) >> sh);
}

static void set_advance(struct lapict_timer *t, uint64_t a)
{
    t->adv_ns = a > t->adv_max_ns ? t->adv_max_ns : (uint32_t)a;
}

/* Balanced goal, an in-gate sample @L at distance @ad from the median. */
static void tune_balanced(struct lapict_timer *t, uint32_t L, uint32_t ad)
{
    uint32_t step = t->adv_dev >> MED_STEP, dev;
    uint64_t a, low;

    if (step == 0)
        step = 1;
    if (step > ad)
        step = ad;
    t->adv_est = L > t->adv_est ? t->adv_est + step : t->adv_est - step;
    t->adv_dev = dev = ewma(t->adv_dev, ad, BAL_DEV);
    a = t->adv_est;
    if (t->adv_budget_ns && dev > t->adv_budget_ns) {
        low = (uint64_t)FLOOR_DEVS * dev;
        a = a > low ? a - low : 0;
    }
    set_advance(t, a);
}

bool lapict__outliers_ok(uint32_t o)
{
    uint32_t n = o & OUTL_COUNT;

    if (o > 0xFFu || ((o & OUTL_LATE) && n == 0))
        return false;
    /* A run that reaches its reseed length is reset at that sample. */
    return n < ((o & OUTL_LATE) ? RESEED_LATE : RESEED_EARLY);
}

int lapict_advance_set(struct lapict_timer *t, uint32_t goal,
                       uint32_t spin_budget_ns)
{
    if (!lapict__valid(t) || !lapict__goal_ok(goal, spin_budget_ns))
        return lapict__invalid(t);
    t->adv_goal = goal & 1u;
    t->adv_budget_ns = spin_budget_ns;
    return LAPICT_OK;
}

void lapict__tune(struct lapict_timer *t, int64_t latency)
{
    int64_t l = latency;
    uint32_t L, ad, n, late;
    uint64_t thr, floor, a;

    if (t->adv_mode != LAPICT_ADVANCE_ADAPTIVE || !lapict__host_can_spin(t))
        return;
    if (l < 0)
        l = 0;
    if (l > 2 * (int64_t)LAPICT_ADVANCE_NS_LIMIT)
        l = 2 * (int64_t)LAPICT_ADVANCE_NS_LIMIT;
    L = (uint32_t)l;
    if (!(t->flags & LAPICT__F_HAVE_EST)) {
        t->flags |= LAPICT__F_HAVE_EST;
        goto reseed;
    }
    ad = L > t->adv_est ? L - t->adv_est : t->adv_est - L;
    thr = 4ull * t->adv_dev + (t->adv_est >> 1) + GATE_FLOOR_NS;
    if (ad > thr) {
        late = L > t->adv_est ? OUTL_LATE : 0u;
        n = (t->adv_outliers & OUTL_LATE) == late
                ? (t->adv_outliers & OUTL_COUNT) + 1u
                : 1u;
        t->adv_outliers = (uint8_t)(late | n);
        if (n >= (late ? RESEED_LATE : RESEED_EARLY))
            goto reseed;
        /* Balanced: an early outlier is spin, seen by the budget. */
        if (!late && t->adv_goal == LAPICT_ADVANCE_GOAL_BALANCED)
            tune_balanced(t, L, ad);
        return;
    }
    t->adv_outliers = 0;
    if (t->adv_goal == LAPICT_ADVANCE_GOAL_BALANCED) {
        tune_balanced(t, L, ad);
        return;
    }
    t->adv_est = ewma(t->adv_est, L, 2);
    t->adv_dev = ewma(t->adv_dev, ad, 2);
    floor = (uint64_t)t->adv_est + 2ull * t->adv_dev;
    if ((uint64_t)L + (t->adv_dev >> 2) > t->adv_ns)
        a = (uint64_t)L + (t->adv_dev >> 2);
    else if (t->adv_ns > floor)
        a = t->adv_ns - ((t->adv_ns - floor) >> 6);
    else
        a = t->adv_ns;
    set_advance(t, a > floor ? a : floor);
    return;
reseed:
    /* A new level: trust the sample, forget the spread. */
    t->adv_est = L;
    t->adv_dev = 0;
    t->adv_outliers = 0;
    set_advance(t, L);
}
