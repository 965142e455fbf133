/* SPDX-License-Identifier: MIT */
/*
 * A count-down as registers plus the host instant of its next expiry
 * (docs/spec/state.md section 7). Restore validates into a copy and only
 * then commits, so a rejected input leaves the instance as it was.
 */
#include "clock.h"
#include "ops.h"
#include "timer.h"

#define LVTT_STORED (LAPICT_LVTT_VECTOR | LAPICT_LVTT_MASK | LAPICT_LVTT_MODE)
#define TDCR_STORED 0xBu

/* Timer activity that restore replaces (host and tuner state are kept). */
#define F_TIMER                                                                \
    (LAPICT__F_CD_ACTIVE | LAPICT__F_CD_ARMED | LAPICT__F_CLAMPED |            \
     LAPICT__F_DL_ARMED | LAPICT__F_PREINJ | LAPICT__F_PREINJ_KEPT |           \
     LAPICT__F_SAMPLE | LAPICT__F_EXPIRED)

/*
 * The horizon rule (<lapict/ops.h>) reads an instant more than 2^63 ns
 * behind as ahead: an expiry due by more than the horizon is taken as due
 * by the horizon, which gives the same interrupts and keeps every later
 * instant within the rule.
 */
static uint64_t within_horizon(uint64_t next, uint64_t now)
{
    if (lapict__after_eq(now, next) && now - next > LAPICT__FAR_NS)
        return now - LAPICT__FAR_NS;
    return next;
}

int lapict_countdown_get(const struct lapict_timer *t, uint64_t now_ns,
                         struct lapict_countdown *out)
{
    bool dlmode;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    if (!out)
        return LAPICT_E_INVAL;
    dlmode = (t->lvtt & LAPICT_LVTT_MODE) == LAPICT_LVTT_TSC_DEADLINE;
    out->lvtt = t->lvtt;
    out->tdcr = t->tdcr;
    out->tmict = dlmode ? 0 : t->tmict;
    out->next_ns = LAPICT_COUNTDOWN_NONE;
    if (t->flags & LAPICT__F_CD_ARMED) {
        /* The instant process() tests: elapsed >= next_rel_ns. */
        uint64_t at =
            within_horizon(t->cd.anchor_ns + t->cd.next_rel_ns, now_ns);
        /* Never early: an instant equal to the sentinel is one ns later. */
        out->next_ns = at == LAPICT_COUNTDOWN_NONE ? 0 : at;
    }
    if ((t->flags & (LAPICT__F_DL_ARMED | LAPICT__F_PREINJ)) || t->pending)
        return LAPICT_E_NOT_COUNTDOWN;
    return LAPICT_OK;
}

static int check(const struct lapict_timer *t,
                 const struct lapict_countdown *cd)
{
    uint32_t mode = cd->lvtt & LAPICT_LVTT_MODE;

    if ((cd->lvtt & ~LVTT_STORED) || mode == LAPICT_LVTT_MODE ||
        (cd->tdcr & ~TDCR_STORED))
        return LAPICT_E_STATE_FIELD;
    /* No count-down runs with a zero count, nor in TSC-deadline mode,
     * where TMICT reads 0. */
    if (cd->next_ns != LAPICT_COUNTDOWN_NONE &&
        (cd->tmict == 0 || mode == LAPICT_LVTT_TSC_DEADLINE))
        return LAPICT_E_STATE_FIELD;
    if (mode == LAPICT_LVTT_TSC_DEADLINE) {
        if (cd->tmict)
            return LAPICT_E_STATE_FIELD;
        if (!(t->flags & LAPICT__F_DL_OK))
            return LAPICT_E_STATE_CONFIG;
    }
    return LAPICT_OK;
}

/*
 * Anchor the count-down of @n (registers set) so that its next expiry is
 * at @next. Due: a whole count ending at @next, which the settling then
 * processes with every grid point after it. Ahead: the fewest ticks whose
 * duration reaches @next (so TMCCT reads them), the anchor that far
 * before it; at most the whole count, so an instant further ahead is cut
 * to @now plus the whole count.
 */
static void anchor_at(struct lapict_timer *n, uint64_t next, uint64_t now)
{
    uint64_t full, c, r;

    lapict__clamp_flag(n, lapict__needs_clamp(n));
    full = lapict__ns_for(n, n->tmict);
    c = n->tmict;
    if (lapict__after_eq(now, next)) {
        n->cd.anchor_ns = next - full;
    } else if ((r = next - now) >= full) {
        n->cd.anchor_ns = now;
    } else {
        /* ns_for(c) >= r exactly when c > ticks_in(r - 1): both are the
         * same exact rational, rounded up and down. */
        c = lapict__ticks_in(n, r - 1) + 1;
        n->cd.anchor_ns = next - lapict__ns_for(n, c);
    }
    n->cd.e_tick = c;
    n->cd.next_rel_ns = lapict__ns_for(n, c);
    n->flags |= LAPICT__F_CD_ACTIVE | LAPICT__F_CD_ARMED;
}

int lapict_countdown_restore(struct lapict_timer *t,
                             const struct lapict_countdown *cd, uint64_t now_ns)
{
    struct lapict_timer n;
    uint64_t illegal;
    int rc;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    if (!cd)
        return LAPICT_E_INVAL;
    rc = check(t, cd);
    if (rc != LAPICT_OK)
        return rc;

    n = *t;
    n.lvtt = cd->lvtt;
    /* "Software enable": while disabled, every LVT stays masked. */
    if (!(n.flags & LAPICT__F_SVR_EN))
        n.lvtt |= LAPICT_LVTT_MASK;
    lapict__set_tdcr(&n, cd->tdcr);
    n.tmict = cd->tmict;
    n.deadline_tsc = 0;
    n.pending = 0;
    n.flags &= (uint16_t)~F_TIMER;
    n.last_instant_ns = now_ns;
    if (cd->next_ns != LAPICT_COUNTDOWN_NONE)
        anchor_at(&n, within_horizon(cd->next_ns, now_ns), now_ns);
    /* Due expiries are held pending, never injected (countdown.h). */
    illegal = n.counts[LAPICT__N_ILLEGAL_VECTOR];
    lapict__settle(&n, now_ns, 0);
    illegal = n.counts[LAPICT__N_ILLEGAL_VECTOR] - illegal;
    n.counts[LAPICT__N_ILLEGAL_VECTOR] -= illegal;

    /* Commit: the old state's host timer goes, the new state arms. */
    lapict__host_cancel(t);
    n.armed = LAPICT__ARMED_NONE;
    *t = n;
    lapict__arm_next(t, now_ns, false);
    /* An illegal vector's due expiry was dropped quietly. */
    lapict__report_dropped_illegal(t, illegal);
    return LAPICT_OK;
}
