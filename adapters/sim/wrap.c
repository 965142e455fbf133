/* SPDX-License-Identifier: MIT */
/*
 * The recording, fault-injecting wrapper around any ops table. Each op
 * counts and traces the call, answers as a fault if told to, and otherwise
 * passes the call on unchanged: the wrapped host cannot tell it is there.
 * The after callback sees the answer last, so that a checker observes the
 * host as the call left it.
 */
#include "lapict_sim.h"

#include <string.h>

static struct lapict_sim_wrap *W(void *ctx)
{
    return ctx;
}

/* Count and trace one call; true if it is to fail instead of passing on. */
static bool enter(struct lapict_sim_wrap *w, enum lapict_sim_op op,
                  uint64_t arg)
{
    uint64_t before = w->calls[op];

    w->calls[op]++;
    w->total_calls++;
    if (w->trace)
        w->trace(w->trace_arg, op, arg);
    return (w->refuse & LAPICT_SIM_OP_BIT(op)) && before >= w->refuse_after;
}

/* Show the after callback the answer the instance is about to get. */
static uint64_t leave(struct lapict_sim_wrap *w, enum lapict_sim_op op,
                      uint64_t arg, uint64_t answer)
{
    if (w->after)
        w->after(w->after_arg, op, arg, answer);
    return answer;
}

static uint64_t wr_now(void *ctx)
{
    struct lapict_sim_wrap *w = W(ctx);
    uint64_t v = 0;

    if (!enter(w, LAPICT_SIM_OP_NOW_NS, 0))
        v = w->inner->now_ns(w->inner_ctx);
    return leave(w, LAPICT_SIM_OP_NOW_NS, 0, v);
}

static uint64_t wr_tsc(void *ctx)
{
    struct lapict_sim_wrap *w = W(ctx);
    uint64_t v = 0;

    if (!enter(w, LAPICT_SIM_OP_GUEST_TSC, 0))
        v = w->inner->guest_tsc(w->inner_ctx);
    return leave(w, LAPICT_SIM_OP_GUEST_TSC, 0, v);
}

static void wr_sw_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_sim_wrap *w = W(ctx);

    if (!enter(w, LAPICT_SIM_OP_SW_ARM, host_ns))
        w->inner->sw_timer_arm(w->inner_ctx, host_ns);
    leave(w, LAPICT_SIM_OP_SW_ARM, host_ns, 0);
}

static void wr_sw_cancel(void *ctx)
{
    struct lapict_sim_wrap *w = W(ctx);

    if (!enter(w, LAPICT_SIM_OP_SW_CANCEL, 0))
        w->inner->sw_timer_cancel(w->inner_ctx);
    leave(w, LAPICT_SIM_OP_SW_CANCEL, 0, 0);
}

static bool wr_hv_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_sim_wrap *w = W(ctx);
    bool ok = false;

    if (!enter(w, LAPICT_SIM_OP_HV_ARM, host_ns))
        ok = w->inner->hv_timer_arm(w->inner_ctx, host_ns);
    return leave(w, LAPICT_SIM_OP_HV_ARM, host_ns, ok) != 0;
}

static void wr_hv_cancel(void *ctx)
{
    struct lapict_sim_wrap *w = W(ctx);

    if (!enter(w, LAPICT_SIM_OP_HV_CANCEL, 0))
        w->inner->hv_timer_cancel(w->inner_ctx);
    leave(w, LAPICT_SIM_OP_HV_CANCEL, 0, 0);
}

static bool wr_inject(void *ctx, uint8_t vector)
{
    struct lapict_sim_wrap *w = W(ctx);
    bool ok = false;

    if (!enter(w, LAPICT_SIM_OP_INJECT, vector))
        ok = w->inner->inject(w->inner_ctx, vector);
    return leave(w, LAPICT_SIM_OP_INJECT, vector, ok) != 0;
}

static void wr_spin(void *ctx, uint64_t host_ns)
{
    struct lapict_sim_wrap *w = W(ctx);

    if (!enter(w, LAPICT_SIM_OP_SPIN, host_ns))
        w->inner->spin_until(w->inner_ctx, host_ns);
    leave(w, LAPICT_SIM_OP_SPIN, host_ns, 0);
}

static void wr_report(void *ctx, int status, uint32_t detail)
{
    struct lapict_sim_wrap *w = W(ctx);
    uint64_t arg = (uint64_t)(int64_t)status;

    if (!enter(w, LAPICT_SIM_OP_REPORT, arg))
        w->inner->report(w->inner_ctx, status, detail);
    leave(w, LAPICT_SIM_OP_REPORT, arg, 0);
}

static uint64_t wr_tsc_to_ns(void *ctx, uint64_t tsc)
{
    struct lapict_sim_wrap *w = W(ctx);
    uint64_t v = 0;

    if (!enter(w, LAPICT_SIM_OP_TSC_TO_NS, tsc))
        v = w->inner->tsc_to_host_ns(w->inner_ctx, tsc);
    return leave(w, LAPICT_SIM_OP_TSC_TO_NS, tsc, v);
}

void lapict_sim_ops_remove(struct lapict_ops *ops, uint32_t absent)
{
#define DROP(op, field)                                                        \
    if (absent & LAPICT_SIM_OP_BIT(op))                                        \
    ops->field = NULL
    DROP(LAPICT_SIM_OP_NOW_NS, now_ns);
    DROP(LAPICT_SIM_OP_GUEST_TSC, guest_tsc);
    DROP(LAPICT_SIM_OP_SW_ARM, sw_timer_arm);
    DROP(LAPICT_SIM_OP_SW_CANCEL, sw_timer_cancel);
    DROP(LAPICT_SIM_OP_HV_ARM, hv_timer_arm);
    DROP(LAPICT_SIM_OP_HV_CANCEL, hv_timer_cancel);
    DROP(LAPICT_SIM_OP_INJECT, inject);
    DROP(LAPICT_SIM_OP_SPIN, spin_until);
    DROP(LAPICT_SIM_OP_REPORT, report);
    DROP(LAPICT_SIM_OP_TSC_TO_NS, tsc_to_host_ns);
#undef DROP
}

void lapict_sim_wrap_init(struct lapict_sim_wrap *w,
                          const struct lapict_ops *inner, void *inner_ctx,
                          uint32_t absent)
{
    memset(w, 0, sizeof(*w));
    w->inner = inner;
    w->inner_ctx = inner_ctx;
    w->ops.version = inner->version;
    /* An op the wrapped host lacks stays absent: the core's fallbacks run. */
#define PASS(field, fn) w->ops.field = inner->field ? fn : NULL
    PASS(now_ns, wr_now);
    PASS(guest_tsc, wr_tsc);
    PASS(sw_timer_arm, wr_sw_arm);
    PASS(sw_timer_cancel, wr_sw_cancel);
    PASS(hv_timer_arm, wr_hv_arm);
    PASS(hv_timer_cancel, wr_hv_cancel);
    PASS(inject, wr_inject);
    PASS(spin_until, wr_spin);
    PASS(report, wr_report);
    PASS(tsc_to_host_ns, wr_tsc_to_ns);
#undef PASS
    lapict_sim_ops_remove(&w->ops, absent);
}
