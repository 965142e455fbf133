/* SPDX-License-Identifier: MIT */
/*
 * The kick: what gets the vCPU thread out of KVM_RUN when the host timer
 * is due. One strategy per enum lapict_kvm_kick, each a small table
 * (struct lapict_kvm_kicker) that the rest of the adapter calls without
 * knowing which it is: the caller kicks, a POSIX kick timer, or a timer
 * thread. The signal they send is signal.c's.
 */
#define _GNU_SOURCE
#include "kvm_internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S LAPICT_KVM__NS_PER_S

/* --- LAPICT_KVM_KICK_CALLER: no kicks ------------------------------------ */

static int none_start(struct lapict_kvm *k)
{
    (void)k;
    return LAPICT_OK;
}

static void none_void(struct lapict_kvm *k)
{
    (void)k;
}

static void none_arm(struct lapict_kvm *k, uint64_t host_ns)
{
    (void)k;
    (void)host_ns;
}

static int none_enter(struct lapict_kvm *k)
{
    (void)k;
    return 1;
}

static const struct lapict_kvm_kicker by_caller = {
    .start = none_start,
    .end = none_void,
    .arm = none_arm,
    .enter = none_enter,
    .halt = none_void,
    .unhalt = none_void,
};

/* --- LAPICT_KVM_KICK_TIMER: a POSIX timer signals the vCPU thread -------- */

static int arm_kick_timer(struct lapict_kvm *k, uint64_t host_ns)
{
    struct itimerspec its = {0};

    its.it_value.tv_sec = (time_t)(host_ns / NS_PER_S);
    its.it_value.tv_nsec = (long)(host_ns % NS_PER_S);
    if (k->sys->timer_settime(k->kick_timer, host_ns ? TIMER_ABSTIME : 0,
                              &its) < 0)
        return lapict_kvm__sys_fail(k, "timer_settime");
    return LAPICT_OK;
}

static int timer_start(struct lapict_kvm *k)
{
    struct sigevent sev;

    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = k->kick_signal;
    sev.sigev_value.sival_ptr = (void *)&lapict_kvm__kick_tag;
    sev._sigev_un._tid = gettid();
    if (k->sys->timer_create(CLOCK_MONOTONIC, &sev, &k->kick_timer) < 0)
        return lapict_kvm__sys_fail(k, "timer_create");
    k->kick_timer_ok = true;
    return LAPICT_OK;
}

static void timer_end(struct lapict_kvm *k)
{
    if (k->kick_timer_ok)
        k->sys->timer_delete(k->kick_timer);
    k->kick_timer_ok = false;
}

/*
 * The kick timer only has to get the vCPU out of KVM_RUN: arm it for the
 * current target right before entering, and only if that changed. Arming
 * it at every move of the host timer would also fire it at instants the
 * vCPU thread handles itself (halt polling; the advance spin right before
 * an entry, whose kick would then throw the vCPU out of the entry it
 * prepared).
 */
static int timer_enter(struct lapict_kvm *k)
{
    uint64_t tgt = __atomic_load_n(&k->target_ns, __ATOMIC_RELAXED);

    /* Already due: handle it now rather than enter and be kicked out. */
    if (k->kick_armed_ns &&
        (int64_t)(lapict_kvm__now_ns(k) - k->kick_armed_ns) >= 0)
        return 0;
    /*
     * An interrupt waits for the guest to set IF. Interrupt-window exits
     * can come late (a millisecond, or not at all while the guest spins
     * without exiting, where the hypervisor below emulates them), so also
     * kick it out to look again at RFLAGS: after 10 us, doubling per
     * consecutive window kick up to ~1.3 ms, which bounds the exits a guest
     * keeping IF clear can cause.
     */
    if (k->run->request_interrupt_window) {
        uint64_t w = lapict_kvm__now_ns(k) + (10000ull << k->window_kicks);
        if (k->kick_armed_ns && k->kick_armed_ns <= w)
            return 1; /* an earlier kick is already armed */
        if (!tgt || w < tgt) {
            if (k->window_kicks < 7)
                k->window_kicks++;
            tgt = w;
        }
    } else {
        k->window_kicks = 0;
    }
    if (tgt == k->kick_armed_ns)
        return 1;
    /* Not armed: no entry (a guest that does not exit would never be
     * kicked); the caller reports it, the next call tries again. */
    if (arm_kick_timer(k, tgt) < 0)
        return LAPICT_E_SYSTEM;
    k->kick_armed_ns = tgt;
    return 1;
}

/* No kick while halted: halt_wait() watches the target. A disarm that
 * fails costs one spurious exit; it is reported all the same. */
static void timer_halt(struct lapict_kvm *k)
{
    if (k->kick_armed_ns) {
        (void)arm_kick_timer(k, 0);
        k->kick_armed_ns = 0;
    }
}

static const struct lapict_kvm_kicker by_timer = {
    .start = timer_start,
    .end = timer_end,
    .arm = none_arm, /* armed lazily, right before KVM_RUN (enter) */
    .enter = timer_enter,
    .halt = timer_halt,
    .unhalt = none_void,
};

/* --- LAPICT_KVM_KICK_THREAD: a timer thread sends the signal ------------- */

/*
 * The timerfd only wakes the timer thread kick_lead_ns ahead: a timerfd
 * wakes late by the scheduler's wake-up latency, so the thread spins the
 * rest on the clock (thread_due()).
 */
static int arm_fd(struct lapict_kvm *k, uint64_t host_ns)
{
    struct itimerspec its = {0};

    if (host_ns) {
        if (host_ns > k->kick_lead_ns)
            host_ns -= k->kick_lead_ns;
        /* it_value 0 would disarm: the earliest absolute instant is 1 ns. */
        if (!host_ns)
            host_ns = 1;
        its.it_value.tv_sec = (time_t)(host_ns / NS_PER_S);
        its.it_value.tv_nsec = (long)(host_ns % NS_PER_S);
    }
    /* A timerfd left armed only wakes the thread for a cleared target. */
    if (k->sys->timerfd_settime(k->timer_fd, host_ns ? TFD_TIMER_ABSTIME : 0,
                                &its) < 0) {
        /* Armed again before the next entry (thread_enter). */
        k->rearm_fd = host_ns != 0;
        return lapict_kvm__sys_fail(k, "timerfd_settime");
    }
    k->rearm_fd = false;
    return LAPICT_OK;
}

/*
 * The timerfd fired kick_lead_ns ahead of target_ns: spin to the target,
 * then flag and kick. Give up when the vCPU re-arms or cancels (a new
 * timerfd wake follows), halts (halt_wait() watches the clock itself and
 * re-arms the timerfd when it leaves with the target still ahead), or
 * destroy clears the target.
 * @fired: the last target kicked for, so that one target kicks once.
 */
static void thread_due(struct lapict_kvm *k, uint64_t *fired)
{
    uint64_t tgt = __atomic_load_n(&k->target_ns, __ATOMIC_SEQ_CST);

    if (!tgt || tgt == *fired)
        return;
    /*
     * A wake for this target comes at most kick_lead_ns before it. One
     * from farther away was armed for another target: the vCPU re-armed
     * after the wake (its own arm wakes the thread again), or its
     * timerfd_settime failed (reported, and armed again before the next
     * entry). Spinning to this target would take the guest's whole delay.
     */
    if ((int64_t)(tgt - lapict_kvm__now_ns(k)) > (int64_t)k->kick_lead_ns)
        return;
    while ((int64_t)(lapict_kvm__now_ns(k) - tgt) < 0) {
        if (__atomic_load_n(&k->target_ns, __ATOMIC_SEQ_CST) != tgt ||
            __atomic_load_n(&k->in_halt, __ATOMIC_SEQ_CST))
            return;
        _mm_pause();
    }
    *fired = tgt;
    lapict_kvm__fired(k);
    __atomic_store_n(&k->expired, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&k->in_halt, __ATOMIC_SEQ_CST)) {
        lapict_kvm__exit_entry(k);
        lapict_kvm__kick_vcpu(k);
    }
    lapict_kvm__wake(k);
}

static void *timer_thread(void *arg)
{
    struct lapict_kvm *k = arg;
    struct pollfd p[2] = {{.fd = k->timer_fd, .events = POLLIN},
                          {.fd = k->stop_fd, .events = POLLIN}};
    uint64_t n, fired = 0;

    for (;;) {
        if (k->sys->ppoll(p, 2, NULL) < 0) {
            int e = errno ? errno : EIO;
            if (e == EINTR)
                continue;
            /*
             * A persistent error: retrying would spin. End, and tell the
             * vCPU thread, whose loop reports it (lapict_kvm__take_error);
             * the kick makes a running guest exit to see it.
             */
            __atomic_store_n(&k->thread_errno, e, __ATOMIC_RELEASE);
            if (!__atomic_load_n(&k->in_halt, __ATOMIC_SEQ_CST)) {
                lapict_kvm__exit_entry(k);
                lapict_kvm__kick_vcpu(k);
            }
            lapict_kvm__wake(k);
            break;
        }
        if (p[1].revents)
            break;
        /* Re-armed or cancelled meanwhile: the count was reset. */
        if (k->sys->read(k->timer_fd, &n, sizeof(n)) != (long)sizeof(n))
            continue;
        thread_due(k, &fired);
    }
    return NULL;
}

static int thread_start(struct lapict_kvm *k)
{
    k->timer_fd =
        k->sys->timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (k->timer_fd < 0)
        return lapict_kvm__sys_fail(k, "timerfd_create");
    k->stop_fd = k->sys->eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (k->stop_fd < 0)
        return lapict_kvm__sys_fail(k, "eventfd");
    if (k->sys->pthread_create(&k->thread, timer_thread, k) < 0)
        return lapict_kvm__sys_fail(k, "pthread_create");
    k->thread_started = true;
    return LAPICT_OK;
}

static void thread_end(struct lapict_kvm *k)
{
    uint64_t one = 1;

    if (k->thread_started) {
        /* Ends a spin to the target, which watches no descriptor. */
        __atomic_store_n(&k->target_ns, 0, __ATOMIC_SEQ_CST);
        if (k->sys->write(k->stop_fd, &one, sizeof(one)) == (long)sizeof(one))
            pthread_join(k->thread, NULL);
        k->thread_started = false;
    }
    if (k->timer_fd >= 0)
        k->sys->close(k->timer_fd);
    if (k->stop_fd >= 0)
        k->sys->close(k->stop_fd);
    k->timer_fd = k->stop_fd = -1;
}

static void thread_arm(struct lapict_kvm *k, uint64_t host_ns)
{
    (void)arm_fd(k, host_ns); /* a failure is reported by pre_run */
}

/* A timerfd arm that failed: again, or no entry. */
static int thread_enter(struct lapict_kvm *k)
{
    uint64_t tgt = __atomic_load_n(&k->target_ns, __ATOMIC_RELAXED);

    if (k->rearm_fd && tgt)
        return arm_fd(k, tgt) < 0 ? LAPICT_E_SYSTEM : 1;
    k->rearm_fd = false;
    return 1;
}

/* The thread gave up on the target while the vCPU halted: wake it again
 * for that one. */
static void thread_unhalt(struct lapict_kvm *k)
{
    uint64_t tgt = __atomic_load_n(&k->target_ns, __ATOMIC_RELAXED);

    if (tgt)
        (void)arm_fd(k, tgt); /* a failure: re-armed before the entry */
}

static const struct lapict_kvm_kicker by_thread = {
    .start = thread_start,
    .end = thread_end,
    .arm = thread_arm,
    .enter = thread_enter,
    .halt = none_void, /* the thread stands aside while in_halt is set */
    .unhalt = thread_unhalt,
};

/* --- the instance's kick ------------------------------------------------- */

int lapict_kvm__kick_start(struct lapict_kvm *k,
                           const struct lapict_kvm_config *cfg)
{
    int rc;

    k->kicker = cfg->kick == LAPICT_KVM_KICK_TIMER    ? &by_timer
                : cfg->kick == LAPICT_KVM_KICK_THREAD ? &by_thread
                                                      : &by_caller;
    /* Without the thread nothing wakes ahead: no lead then. */
    k->kick_lead_ns = cfg->kick != LAPICT_KVM_KICK_THREAD ? 0
                      : !cfg->kick_lead_ns ? LAPICT_KVM_KICK_LEAD_NS
                      : cfg->kick_lead_ns == LAPICT_KVM_NONE
                          ? 0
                          : cfg->kick_lead_ns;
    if ((rc = lapict_kvm__signal_start(k)) < 0)
        return rc;
    return k->kicker->start(k);
}

void lapict_kvm__kick_end(struct lapict_kvm *k)
{
    if (k->kicker)
        k->kicker->end(k);
    lapict_kvm__signal_end(k);
}
