/* SPDX-License-Identifier: MIT */
/*
 * lapict's host ops on Linux (CLOCK_MONOTONIC, the host TSC plus the
 * guest's offset, the host timer handed to the kick strategy), serving the
 * host timer when it is due, and halting: the vCPU thread waits for the
 * host timer itself.
 */
#define _GNU_SOURCE
#include "kvm_internal.h"

#include <errno.h>
#include <poll.h>
#include <time.h>

#define NS_PER_S LAPICT_KVM__NS_PER_S

static struct lapict_kvm *K(void *ctx)
{
    return ctx;
}

uint64_t lapict_kvm_guest_tsc(const struct lapict_kvm *k)
{
    return __rdtsc() + (uint64_t)k->tsc_offset;
}

static uint64_t op_now(void *ctx)
{
    return lapict_kvm__now_ns(K(ctx));
}

static uint64_t op_tsc(void *ctx)
{
    return lapict_kvm_guest_tsc(K(ctx));
}

/* (TSC, clock) pairs read before the tightest is taken as it is. */
#define PAIR_TRIES 4

/*
 * The guest TSC and the host clock at one instant: the clock read between
 * two TSC reads, paired with the first (the clock is no earlier than it, so
 * an instant computed from the pair is never early; it is late by the
 * pair's width). A thread preempted inside a pair makes it as wide as the
 * preemption, which would move the instant that late: such a pair is read
 * again, and the tightest of PAIR_TRIES is kept.
 */
static void tsc_and_ns(const struct lapict_kvm *k, uint64_t *tsc, uint64_t *ns)
{
    /* 1 us of TSC ticks: no preemption fits in a pair this tight. */
    uint64_t tight = k->tsc_khz / 1000u, best = UINT64_MAX;

    *tsc = *ns = 0;
    for (int i = 0; i < PAIR_TRIES && best > tight; i++) {
        uint64_t a = lapict_kvm_guest_tsc(k), c = lapict_kvm__now_ns(k);
        uint64_t b = lapict_kvm_guest_tsc(k);
        if (b - a < best) {
            best = b - a;
            *tsc = a;
            *ns = c;
        }
    }
}

/*
 * The core's wait before an entry with an interrupt injected ahead takes
 * an instant further away than the advance for a clock error and enters
 * at once: a late answer here would show the guest that interrupt early.
 */
static uint64_t op_tsc_to_ns(void *ctx, uint64_t guest_tsc)
{
    struct lapict_kvm *k = K(ctx);
    uint64_t tsc, now, d;
    unsigned __int128 p;

    /* Anchor on a fresh pair: deltas are short, so the kHz rounding of
     * tsc_khz costs at most ppm of the delta. */
    tsc_and_ns(k, &tsc, &now);
    d = guest_tsc - tsc;

    /*
     * Signed, unlike a distance to arm a timer with: the TSC may have
     * passed @guest_tsc since the core read it, and d, just below 2^64,
     * must then read as reached, or the interrupt would wait for years. A
     * value 2^63 ticks or more ahead (within the core's horizon only
     * above 2 GHz) reads as reached too: the core arms for this instant,
     * finds the TSC short when it comes, and aims again by the rate the
     * TSC has shown, so it costs one early expiry, never a storm.
     */
    if ((int64_t)d <= 0)
        return now;
    p = (unsigned __int128)d * 1000000u;
    return now + (uint64_t)((p + k->tsc_khz - 1) / k->tsc_khz);
}

static void op_sw_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_kvm *k = K(ctx);

    if (!host_ns)
        host_ns = 1;
    /* Published before the kick strategy reads it (a timer thread). */
    __atomic_store_n(&k->target_ns, host_ns, __ATOMIC_SEQ_CST);
    k->arms++;
    k->kicker->arm(k, host_ns);
}

static void op_sw_cancel(void *ctx)
{
    struct lapict_kvm *k = K(ctx);

    __atomic_store_n(&k->target_ns, 0, __ATOMIC_SEQ_CST);
    k->arms++;
    k->kicker->arm(k, 0);
}

static bool op_inject(void *ctx, uint8_t vector)
{
    struct lapict_kvm *k = K(ctx);
    struct kvm_run *r = k->run;

    /*
     * Refused while the guest cannot take it on the next entry (IF clear,
     * an injection already queued by KVM, or its IRR bit busy): the core
     * holds it, and does not pre-inject ahead of the instant, until
     * lapict_irq_window_open(). An interrupt accepted ahead and then left
     * waiting for a window would arrive late by a whole exit.
     */
    if (!r->if_flag || !r->ready_for_interrupt_injection ||
        !lapict_apic_set_irq(&k->apic, vector)) {
        k->timer_refused = true;
        return false;
    }
    return true;
}

static void op_spin(void *ctx, uint64_t host_ns)
{
    while ((int64_t)(lapict_kvm__now_ns(K(ctx)) - host_ns) < 0)
        _mm_pause();
}

static void op_report(void *ctx, int status, uint32_t detail)
{
    (void)detail;
    /* "Error Handling": an LVT's illegal vector is one this APIC
     * received (bit 6), not one it sent (bit 5). */
    if (status == LAPICT_E_VECTOR)
        lapict_apic_error(&K(ctx)->apic, LAPICT_APIC_ESR_RECV_ILLEGAL);
}

const struct lapict_ops lapict_kvm_ops = {
    .version = LAPICT_OPS_VERSION,
    .now_ns = op_now,
    .guest_tsc = op_tsc,
    .sw_timer_arm = op_sw_arm,
    .sw_timer_cancel = op_sw_cancel,
    .inject = op_inject,
    .spin_until = op_spin,
    .report = op_report,
    .tsc_to_host_ns = op_tsc_to_ns,
};

bool lapict_kvm__poll_expiry(struct lapict_kvm *k)
{
    bool fired = __atomic_exchange_n(&k->expired, 0, __ATOMIC_SEQ_CST);
    uint64_t tgt;

    /*
     * The kick timer's target passed: due whether or not its handler has
     * run yet (a handler can be held back: ThreadSanitizer defers them,
     * and a guest that does not exit would then never be kicked again).
     */
    if (k->kick_armed_ns &&
        (int64_t)(lapict_kvm__now_ns(k) - k->kick_armed_ns) >= 0)
        fired = true;
    /*
     * The host timer's own instant, whatever became of its kick (a timer
     * that could not be armed, a lost wake-up): every pass of the loop
     * finds a due expiry, so none waits for a kick that never comes.
     */
    tgt = __atomic_load_n(&k->target_ns, __ATOMIC_RELAXED);
    if (tgt && (int64_t)(lapict_kvm__now_ns(k) - tgt) >= 0)
        fired = true;
    if (fired) {
        /* One-shot: spent (a stale signal costs one re-arm at most). */
        k->kick_armed_ns = 0;
        k->st.kicks_seen++;
        lapict_expire(&k->timer);
    }
    return fired;
}

bool lapict_kvm_poll(struct lapict_kvm *k)
{
    return lapict_kvm__poll_expiry(k);
}

uint64_t lapict_kvm_next_deadline(const struct lapict_kvm *k)
{
    return __atomic_load_n(&k->target_ns, __ATOMIC_RELAXED);
}

static bool wake_flagged(struct lapict_kvm *k)
{
    return __atomic_load_n(&k->expired, __ATOMIC_RELAXED) ||
           __atomic_load_n(&k->stop, __ATOMIC_RELAXED);
}

/*
 * The guest halted with interrupts enabled: wait until there is work. The
 * vCPU thread watches the host timer itself (target_ns): it sleeps until
 * halt_poll_ns before it, then spins (as KVM's halt polling), so that the
 * expiry is processed on time rather than late by a timer's wake-up. The
 * kick strategy stands aside while in_halt is set; the wake eventfd and
 * the flags end the wait early (lapict_kvm_stop(), a racing expiry).
 */
int lapict_kvm_halt_wait(struct lapict_kvm *k)
{
    struct pollfd p = {.fd = k->wake_fd, .events = POLLIN};
    uint64_t n, tgt, now, arms;
    int rc = LAPICT_OK, w;

    k->st.halt_sleeps++;
    k->kicker->halt(k);
    lapict_vcpu_blocking(&k->timer);
    __atomic_store_n(&k->in_halt, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        lapict_kvm__poll_expiry(k);
        if (lapict_apic_deliverable(&k->apic) >= 0 ||
            __atomic_load_n(&k->stop, __ATOMIC_SEQ_CST) ||
            __atomic_load_n(&k->thread_errno, __ATOMIC_RELAXED))
            break;
        tgt = __atomic_load_n(&k->target_ns, __ATOMIC_RELAXED);
        now = lapict_kvm__now_ns(k);
        if (tgt && (int64_t)(now - tgt) >= 0) {
            lapict_kvm__fired(k);
            k->st.kicks_seen++;
            lapict_expire(&k->timer);
            continue;
        }
        if (tgt && tgt - now <= k->halt_poll_ns) {
            while ((int64_t)(lapict_kvm__now_ns(k) - tgt) < 0 &&
                   !wake_flagged(k))
                _mm_pause();
            if ((int64_t)(lapict_kvm__now_ns(k) - tgt) >= 0)
                lapict_kvm__fired(k);
            continue;
        }
        if (tgt) {
            struct timespec ts;
            uint64_t d = tgt - now - k->halt_poll_ns;
            ts.tv_sec = (time_t)(d / NS_PER_S);
            ts.tv_nsec = (long)(d % NS_PER_S);
            w = k->sys->ppoll(&p, 1, &ts);
        } else {
            w = k->sys->ppoll(&p, 1, NULL);
        }
        /* A persistent error would spin here: the VMM hears of it. */
        if (w < 0 && errno != EINTR) {
            rc = lapict_kvm__sys_fail(k, "ppoll");
            break;
        }
        if (k->sys->read(k->wake_fd, &n, sizeof(n)) < 0)
            continue;
    }
    __atomic_store_n(&k->in_halt, 0, __ATOMIC_SEQ_CST);
    /* A timer thread that saw in_halt set did not kick: look again. */
    lapict_kvm__poll_expiry(k);
    arms = k->arms;
    lapict_vcpu_unblocked(&k->timer);
    /* Unblocking re-armed nothing: the strategy may have given up on the
     * target meanwhile. */
    if (k->arms == arms)
        k->kicker->unhalt(k);
    return rc;
}
