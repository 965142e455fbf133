/* SPDX-License-Identifier: MIT */
/*
 * Every call from the core to the host goes through this file: the one
 * place that knows which ops are optional, that keeps at most one host timer
 * armed, and that falls back from the hardware preemption timer to the
 * software timer when the host refuses or the vCPU blocks.
 */
#include "internal.h"

static bool hv_usable(const struct lapict_timer *t)
{
    return t->ops->hv_timer_arm && !(t->flags & LAPICT__F_BLOCKED);
}

static void cancel_sw(struct lapict_timer *t)
{
    lapict__op_enter(t);
    t->ops->sw_timer_cancel(t->ctx);
    lapict__op_leave(t);
}

static void cancel_hv(struct lapict_timer *t)
{
    lapict__op_enter(t);
    t->ops->hv_timer_cancel(t->ctx);
    lapict__op_leave(t);
}

static void arm_sw(struct lapict_timer *t, uint64_t target)
{
    if (t->armed == LAPICT__ARMED_HV)
        cancel_hv(t);
    lapict__op_enter(t);
    t->ops->sw_timer_arm(t->ctx, target);
    lapict__op_leave(t);
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
    lapict__op_enter(t);
    ok = t->ops->hv_timer_arm(t->ctx, target);
    lapict__op_leave(t);
    if (ok) {
        t->armed = LAPICT__ARMED_HV;
        t->armed_ns = target;
        return true;
    }
    LAPICT__INC(t->c.hv_refused);
    if (t->armed == LAPICT__ARMED_HV)
        cancel_hv(t);
    t->armed = LAPICT__ARMED_NONE;
    return false;
}

void lapict__host_arm(struct lapict_timer *t, uint64_t target, bool spent)
{
    if (t->armed != LAPICT__ARMED_NONE && t->armed_ns == target && !spent)
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
        LAPICT__INC(t->c.hv_to_sw);
    } else if (t->armed == LAPICT__ARMED_SW && hv_usable(t)) {
        uint64_t target = t->armed_ns;
        if (arm_hv(t, target))
            LAPICT__INC(t->c.sw_to_hv);
        else
            arm_sw(t, target);
    }
}

void lapict__report(struct lapict_timer *t, int status, uint32_t detail)
{
    if (!t->ops->report)
        return;
    lapict__op_enter(t);
    t->ops->report(t->ctx, status, detail);
    lapict__op_leave(t);
}
