/* SPDX-License-Identifier: MIT */
/*
 * Every call from the core to the host goes through this file: the one
 * place that knows which ops are optional, that keeps at most one host timer
 * armed, and that falls back from the hardware preemption timer to the
 * software timer when the host refuses or the vCPU blocks.
 */
#include "clock.h"
#include "ops.h"

bool lapict__ops_ok(const struct lapict_ops *ops)
{
    return ops->version >= 1 && ops->now_ns && ops->guest_tsc &&
           ops->sw_timer_arm && ops->sw_timer_cancel && ops->inject &&
           (!ops->hv_timer_arm || ops->hv_timer_cancel);
}

/*
 * An op that may act (arm, cancel, inject, spin, report) runs between these
 * two: a call into the library from inside it finds no valid instance.
 */
static void op_enter(struct lapict_timer *t)
{
    t->magic = LAPICT__MAGIC_IN_OP;
}

static void op_leave(struct lapict_timer *t)
{
    t->magic = LAPICT__MAGIC;
}

uint64_t lapict__host_now(const struct lapict_timer *t)
{
    return t->ops->now_ns(t->ctx);
}

uint64_t lapict__host_tsc(const struct lapict_timer *t)
{
    return t->ops->guest_tsc(t->ctx);
}

bool lapict__host_maps_tsc(const struct lapict_timer *t)
{
    return t->ops->tsc_to_host_ns != NULL;
}

bool lapict__host_tsc_to_ns(const struct lapict_timer *t, uint64_t tsc,
                            uint64_t *host_ns)
{
    if (!t->ops->tsc_to_host_ns)
        return false;
    *host_ns = t->ops->tsc_to_host_ns(t->ctx, tsc);
    return true;
}

bool lapict__host_inject(struct lapict_timer *t, uint8_t vector)
{
    bool ok;

    op_enter(t);
    ok = t->ops->inject(t->ctx, vector);
    op_leave(t);
    if (ok) {
        lapict__count(t, LAPICT__N_INJECTIONS);
        return true;
    }
    lapict__count(t, LAPICT__N_REFUSED);
    return false;
}

bool lapict__host_can_spin(const struct lapict_timer *t)
{
    return t->ops->spin_until != NULL;
}

void lapict__host_spin_until(struct lapict_timer *t, uint64_t host_ns)
{
    uint64_t now, d, v;

    if (!t->ops->spin_until)
        return; /* e.g. a pre-injection restored on a host without one */
    now = lapict__host_now(t);
    lapict__count(t, LAPICT__N_SPINS);
    /* The wait asked of the host: what the advance costs it. */
    d = lapict__after_eq(now, host_ns) ? 0 : host_ns - now;
    v = t->spin_ns + d;
    t->spin_ns = v < d ? UINT64_MAX : v;
    op_enter(t);
    t->ops->spin_until(t->ctx, host_ns);
    op_leave(t);
}

void lapict__host_report(struct lapict_timer *t, int status, uint32_t detail)
{
    if (!t->ops->report)
        return;
    op_enter(t);
    t->ops->report(t->ctx, status, detail);
    op_leave(t);
}

static bool hv_usable(const struct lapict_timer *t)
{
    return t->ops->hv_timer_arm && !(t->flags & LAPICT__F_BLOCKED);
}

static void cancel_sw(struct lapict_timer *t)
{
    op_enter(t);
    t->ops->sw_timer_cancel(t->ctx);
    op_leave(t);
}

static void cancel_hv(struct lapict_timer *t)
{
    op_enter(t);
    t->ops->hv_timer_cancel(t->ctx);
    op_leave(t);
}

static void arm_sw(struct lapict_timer *t, uint64_t target)
{
    if (t->armed == LAPICT__ARMED_HV)
        cancel_hv(t);
    op_enter(t);
    t->ops->sw_timer_arm(t->ctx, target);
    op_leave(t);
    t->armed = LAPICT__ARMED_SW;
    t->armed_ns = target;
}

/* Try the hardware timer; false if the host refused it. */
static bool arm_hv(struct lapict_timer *t, uint64_t target)
{
    bool ok;

    /* Cancel first so that two host timers are never armed at once. */
    if (t->armed == LAPICT__ARMED_SW)
        cancel_sw(t);
    op_enter(t);
    ok = t->ops->hv_timer_arm(t->ctx, target);
    op_leave(t);
    if (ok) {
        t->armed = LAPICT__ARMED_HV;
        t->armed_ns = target;
        return true;
    }
    lapict__count(t, LAPICT__N_HV_REFUSED);
    if (t->armed == LAPICT__ARMED_HV)
        cancel_hv(t);
    t->armed = LAPICT__ARMED_NONE;
    return false;
}

void lapict__host_arm(struct lapict_timer *t, uint64_t target, bool fired)
{
    if (t->armed != LAPICT__ARMED_NONE && t->armed_ns == target && !fired)
        return;
    if (hv_usable(t) && arm_hv(t, target))
        return;
    arm_sw(t, target);
}

void lapict__host_cancel(struct lapict_timer *t)
{
    if (t->armed == LAPICT__ARMED_SW)
        cancel_sw(t);
    else if (t->armed == LAPICT__ARMED_HV)
        cancel_hv(t);
    t->armed = LAPICT__ARMED_NONE;
}

void lapict__host_move(struct lapict_timer *t)
{
    if (t->armed == LAPICT__ARMED_HV && (t->flags & LAPICT__F_BLOCKED)) {
        /* A preemption timer does not count while the vCPU is halted. */
        arm_sw(t, t->armed_ns);
        lapict__count(t, LAPICT__N_HV_TO_SW);
    } else if (t->armed == LAPICT__ARMED_SW && hv_usable(t)) {
        uint64_t target = t->armed_ns;
        if (arm_hv(t, target))
            lapict__count(t, LAPICT__N_SW_TO_HV);
        else
            arm_sw(t, target);
    }
}
