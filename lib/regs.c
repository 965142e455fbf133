/* SPDX-License-Identifier: MIT */
/*
 * Guest-visible timer registers (docs/spec/timer.md sections 2-4) and the
 * xAPIC / x2APIC decoding helpers. Every access first brings the state up
 * to the current instant, so reads and writes see every expiry that is due
 * even when the host timer callback is late.
 */
#include "clock.h"
#include "ops.h"
#include "timer.h"

#define LVTT_STORED (LAPICT_LVTT_VECTOR | LAPICT_LVTT_MASK | LAPICT_LVTT_MODE)
#define TDCR_STORED 0xBu

static LAPICT__HOT uint64_t sync_now(struct lapict_timer *t)
{
    uint64_t now = lapict__host_now(t);
    lapict__update(t, now);
    return now;
}

static bool in_deadline_mode(const struct lapict_timer *t)
{
    return (t->lvtt & LAPICT_LVTT_MODE) == LAPICT_LVTT_TSC_DEADLINE;
}

/*
 * A write about to change the expiry injected ahead (its instant, vector
 * or mask): the guest already holds that interrupt, so the write lands
 * after its instant, which the wait brings (at most the advance). The
 * guest then sees the interrupt neither early nor twice, and could not
 * tell this from a write that retired just after the instant. Return the
 * time of the write.
 */
static uint64_t write_after_preinj(struct lapict_timer *t, uint64_t now)
{
    if (!(t->flags & LAPICT__F_PREINJ))
        return now;
    return lapict__preinj_settle(t, now);
}

uint32_t lapict_lvtt_read(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return 0;
    sync_now(t);
    return t->lvtt | (t->pending ? LAPICT_LVTT_PENDING : 0u);
}

int lapict_lvtt_write(struct lapict_timer *t, uint32_t val)
{
    uint32_t old_mode, new_mode, v;
    uint64_t now;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    now = sync_now(t);
    v = val & LVTT_STORED;
    if (!(t->flags & LAPICT__F_SVR_EN))
        v |= LAPICT_LVTT_MASK;
    old_mode = t->lvtt & LAPICT_LVTT_MODE;
    new_mode = v & LAPICT_LVTT_MODE;
    if (!(t->flags & LAPICT__F_DL_OK)) {
        /* Without TSC-deadline support bit 18 is reserved: 10->00, 11->01. */
        new_mode &= ~LAPICT_LVTT_TSC_DEADLINE;
    } else if (new_mode == LAPICT_LVTT_MODE) {
        /* Reserved mode 11: keep the mode, apply the other fields. */
        new_mode = old_mode;
        lapict__guest_error(t, LAPICT_E_MODE, val);
    }
    v = (v & ~LAPICT_LVTT_MODE) | new_mode;
    if (v != t->lvtt)
        now = write_after_preinj(t, now);
    t->lvtt = v;
    if (new_mode != old_mode) {
        if (old_mode == LAPICT_LVTT_TSC_DEADLINE ||
            new_mode == LAPICT_LVTT_TSC_DEADLINE) {
            lapict__disarm(t);
        } else if (old_mode == LAPICT_LVTT_ONESHOT &&
                   !(t->flags & LAPICT__F_CD_ACTIVE)) {
            /* A stopped one-shot stays stopped in periodic mode. */
        } else {
            /* One-shot <-> periodic: no re-anchor, except for the clamp. */
            lapict__set_clamp(t, now, lapict__needs_clamp(t));
        }
    }
    lapict__arm_next(t, now, false);
    return LAPICT_OK;
}

uint32_t lapict_tdcr_read(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return 0;
    return t->tdcr;
}

int lapict_tdcr_write(struct lapict_timer *t, uint32_t val)
{
    uint64_t now;
    uint32_t c;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    now = sync_now(t);
    val &= TDCR_STORED;
    if (val == t->tdcr)
        return LAPICT_OK;
    if (t->flags & LAPICT__F_CD_ACTIVE)
        now = write_after_preinj(t, now);
    if (!(t->flags & LAPICT__F_CD_ACTIVE)) {
        lapict__set_tdcr(t, val);
        return LAPICT_OK;
    }
    /* Keep the count, drop the fraction of the tick in progress. */
    c = lapict__tmcct(t, now);
    lapict__set_tdcr(t, val);
    lapict__clamp_flag(t, lapict__needs_clamp(t));
    lapict__reanchor(t, now, c);
    lapict__arm_next(t, now, false);
    return LAPICT_OK;
}

uint32_t lapict_tmict_read(struct lapict_timer *t)
{
    if (!lapict__valid(t) || in_deadline_mode(t))
        return 0;
    return t->tmict;
}

int lapict_tmict_write(struct lapict_timer *t, uint32_t val)
{
    uint64_t now;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    now = sync_now(t);
    if (in_deadline_mode(t))
        return LAPICT_OK;
    now = write_after_preinj(t, now);
    t->tmict = val;
    t->pending = 0;
    /* A new count: the clamp follows it, the count-down starts from N. */
    lapict__clamp_flag(t, lapict__needs_clamp(t));
    lapict__reanchor(t, now, val);
    lapict__arm_next(t, now, false);
    return LAPICT_OK;
}

uint32_t lapict_tmcct_read(struct lapict_timer *t)
{
    uint64_t now;

    if (!lapict__valid(t))
        return 0;
    now = sync_now(t);
    return lapict__tmcct(t, now);
}

uint64_t lapict_tsc_deadline_read(struct lapict_timer *t)
{
    if (!lapict__valid(t))
        return 0;
    sync_now(t);
    if (!in_deadline_mode(t) || !(t->flags & LAPICT__F_DL_ARMED))
        return 0;
    return t->deadline_tsc;
}

int lapict_tsc_deadline_write(struct lapict_timer *t, uint64_t val)
{
    uint64_t now, tsc;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    /* Without CPUID.01H:ECX.TSC_Deadline the MSR does not exist: #GP. */
    if (!(t->flags & LAPICT__F_DL_OK))
        return LAPICT_E_GP;
    /* The deadline being replaced fires first if it has been reached. */
    now = sync_now(t);
    if (!in_deadline_mode(t))
        return LAPICT_OK;
    now = write_after_preinj(t, now);
    tsc = lapict__host_tsc(t);
    t->pending = 0;
    t->flags &= (uint16_t) ~(LAPICT__F_DL_ARMED | LAPICT__F_PREINJ);
    t->deadline_tsc = val;
    if (val) {
        /* Never a negative delta: a deadline already passed fires now. */
        t->dl.at_ns = lapict__deadline_ns(t, now, tsc, val);
        /* Where the TSC's rate is measured from (timer.c). */
        t->dl.t0_ns = now;
        t->dl.tsc0 = tsc;
        t->dl_rearms = 0;
        t->flags |= LAPICT__F_DL_ARMED;
        if (tsc >= val)
            lapict__update(t, now);
    }
    lapict__arm_next(t, now, false);
    return LAPICT_OK;
}

int lapict_svr_write(struct lapict_timer *t, bool enabled)
{
    uint64_t now;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    now = sync_now(t);
    if (enabled) {
        t->flags |= LAPICT__F_SVR_EN;
    } else {
        /* Masks LVTT: an interrupt given ahead happened before. */
        if (!(t->lvtt & LAPICT_LVTT_MASK))
            write_after_preinj(t, now);
        t->flags &= (uint16_t)~LAPICT__F_SVR_EN;
        t->lvtt |= LAPICT_LVTT_MASK;
    }
    return LAPICT_OK;
}

int lapict_xapic_read(struct lapict_timer *t, uint32_t offset, uint32_t *val)
{
    if (!lapict__valid(t) || !val)
        return lapict__invalid(t);
    switch (offset) {
    case LAPICT_XAPIC_LVTT:
        *val = lapict_lvtt_read(t);
        return LAPICT_OK;
    case LAPICT_XAPIC_TMICT:
        *val = lapict_tmict_read(t);
        return LAPICT_OK;
    case LAPICT_XAPIC_TMCCT:
        *val = lapict_tmcct_read(t);
        return LAPICT_OK;
    case LAPICT_XAPIC_TDCR:
        *val = lapict_tdcr_read(t);
        return LAPICT_OK;
    default:
        return LAPICT_E_NOREG;
    }
}

int lapict_xapic_write(struct lapict_timer *t, uint32_t offset, uint32_t val)
{
    if (!lapict__valid(t))
        return lapict__invalid(t);
    switch (offset) {
    case LAPICT_XAPIC_LVTT:
        return lapict_lvtt_write(t, val);
    case LAPICT_XAPIC_TMICT:
        return lapict_tmict_write(t, val);
    case LAPICT_XAPIC_TMCCT:
        return LAPICT_OK; /* read-only; xAPIC ignores the write */
    case LAPICT_XAPIC_TDCR:
        return lapict_tdcr_write(t, val);
    case LAPICT_XAPIC_SVR: {
        /* The host's register, but its software enable acts on LVTT. */
        int rc = lapict_svr_write(t, (val & LAPICT_SVR_ENABLE) != 0);
        return rc != LAPICT_OK ? rc : LAPICT_E_NOREG;
    }
    default:
        return LAPICT_E_NOREG;
    }
}

int lapict_msr_read(struct lapict_timer *t, uint32_t msr, uint64_t *val)
{
    uint32_t v;
    int rc;

    if (!lapict__valid(t) || !val)
        return lapict__invalid(t);
    if (msr == LAPICT_MSR_TSC_DEADLINE) {
        if (!(t->flags & LAPICT__F_DL_OK))
            return LAPICT_E_GP; /* no such MSR without the CPUID bit */
        *val = lapict_tsc_deadline_read(t);
        return LAPICT_OK;
    }
    if (msr < 0x800u || msr > 0x8FFu)
        return LAPICT_E_NOREG;
    rc = lapict_xapic_read(t, (msr - 0x800u) << 4, &v);
    if (rc == LAPICT_OK)
        *val = v;
    return rc;
}

int lapict_msr_write(struct lapict_timer *t, uint32_t msr, uint64_t val)
{
    uint32_t off;

    if (!lapict__valid(t))
        return lapict__invalid(t);
    if (msr == LAPICT_MSR_TSC_DEADLINE)
        return lapict_tsc_deadline_write(t, val);
    if (msr < 0x800u || msr > 0x8FFu)
        return LAPICT_E_NOREG;
    off = (msr - 0x800u) << 4;
    if (off != LAPICT_XAPIC_LVTT && off != LAPICT_XAPIC_TMICT &&
        off != LAPICT_XAPIC_TMCCT && off != LAPICT_XAPIC_TDCR &&
        off != LAPICT_XAPIC_SVR)
        return LAPICT_E_NOREG;
    /* x2APIC: reserved high half and the read-only TMCCT raise #GP. */
    if ((val >> 32) || off == LAPICT_XAPIC_TMCCT)
        return LAPICT_E_GP;
    return lapict_xapic_write(t, off, (uint32_t)val);
}
