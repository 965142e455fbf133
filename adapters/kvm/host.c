/* SPDX-License-Identifier: MIT */
/*
 * Host side of the KVM adapter: the lapict ops on Linux primitives, the
 * host timer and its kick (kick timer or timer thread, the kick signal),
 * halt waiting, and the instance's life (init, destroy, errors).
 */
#define _GNU_SOURCE
#include "kvm_internal.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define NS_PER_S 1000000000ull

/*
 * Process-wide state of the kick signal, which a process has only one
 * handler for (libuv's uv_signal does the same). The signal carries its
 * instance (sigev_value / sigqueue); the handler accepts only instances in
 * live[], so a kick that arrives after destroy, on any thread, touches
 * nothing. The handler that was there before is saved when the first
 * instance takes a signal, called for signals that are not kicks, and put
 * back when the last instance lets go.
 *
 * Calls from outside the vCPU thread (the kick handler, lapict_kvm_kick(),
 * lapict_kvm_stop()) pin the instance's slot while they use it, and
 * destroy waits for the pins after unlisting it and before closing its
 * descriptors: a call that races destroy finishes on an instance that is
 * whole, and one that starts later does nothing. Pin and unlist are seq_cst
 * on both sides (a Dekker handshake): either the caller sees the slot
 * emptied, or destroy sees the pin.
 */
#define LIVE_MAX 256
#define SIG_SLOTS 8

static struct live_slot {
    _Atomic(struct lapict_kvm *) k;
    atomic_uint pins; /* calls using k now */
} live[LIVE_MAX];

static struct sig_slot {
    atomic_int sig;   /* published (release) once old is stored; 0: free */
    int users;        /* under slots_lock */
    struct sigaction old;
} slots[SIG_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

static bool live_add(struct lapict_kvm *k)
{
    for (int i = 0; i < LIVE_MAX; i++) {
        struct lapict_kvm *none = NULL;
        if (atomic_compare_exchange_strong(&live[i].k, &none, k))
            return true;
    }
    return false;
}

/* Unlist @k, then wait until no call pins it (each pin is short). */
static void live_del(struct lapict_kvm *k)
{
    for (int i = 0; i < LIVE_MAX; i++) {
        struct lapict_kvm *self = k;
        if (atomic_compare_exchange_strong(&live[i].k, &self, NULL)) {
            while (atomic_load(&live[i].pins))
                sched_yield();
            return;
        }
    }
}

/* Pin the live instance at @p (async-signal-safe): its slot, or NULL if
 * @p is not one (destroyed, never initialised). live_unpin() after. */
static struct live_slot *live_pin(const void *p)
{
    if (!p)
        return NULL;
    for (int i = 0; i < LIVE_MAX; i++) {
        struct live_slot *s = &live[i];
        if (atomic_load(&s->k) != p)
            continue;
        atomic_fetch_add(&s->pins, 1);
        if (atomic_load(&s->k) == p)
            return s;
        atomic_fetch_sub(&s->pins, 1); /* unlisted meanwhile */
        return NULL;
    }
    return NULL;
}

static void live_unpin(struct live_slot *s)
{
    atomic_fetch_sub(&s->pins, 1);
}

static struct lapict_kvm *K(void *ctx)
{
    return ctx;
}

int lapict_kvm__sys_fail(struct lapict_kvm *k, const char *call)
{
    k->sys_errno = errno ? errno : EIO;
    k->sys_call = call;
    k->err = LAPICT_E_SYSTEM;
    return LAPICT_E_SYSTEM;
}

/*
 * The failure to report now, if any: one recorded on the vCPU thread since
 * the last report, or the timer thread's end (persistent: without it no
 * kick comes, so every later call reports it).
 */
int lapict_kvm__take_error(struct lapict_kvm *k)
{
    int te = atomic_load_explicit(&k->thread_errno, memory_order_acquire);

    if (te) {
        k->sys_errno = te;
        k->sys_call = "ppoll";
        k->err = 0;
        return LAPICT_E_SYSTEM;
    }
    if (k->err) {
        int rc = k->err;
        k->err = 0;
        return rc;
    }
    return LAPICT_OK;
}

static uint64_t mono_ns(const struct lapict_kvm *k)
{
    struct timespec ts;

    if (k->sys->clock_gettime)
        k->sys->clock_gettime(CLOCK_MONOTONIC, &ts);
    else
        clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t lapict_kvm_guest_tsc(const struct lapict_kvm *k)
{
    return __rdtsc() + (uint64_t)k->tsc_offset;
}

static uint64_t op_now(void *ctx)
{
    return mono_ns(K(ctx));
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
static void tsc_and_ns(const struct lapict_kvm *k, uint64_t *tsc,
                       uint64_t *ns)
{
    /* 1 us of TSC ticks: no preemption fits in a pair this tight. */
    uint64_t tight = k->tsc_khz / 1000u, best = UINT64_MAX;

    *tsc = *ns = 0;
    for (int i = 0; i < PAIR_TRIES && best > tight; i++) {
        uint64_t a = lapict_kvm_guest_tsc(k), c = mono_ns(k);
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

    if ((int64_t)d <= 0)
        return now;
    p = (unsigned __int128)d * 1000000u;
    return now + (uint64_t)((p + k->tsc_khz - 1) / k->tsc_khz);
}

/*
 * The timerfd only wakes the timer thread kick_lead_ns ahead: a timerfd
 * wakes late by the scheduler's wake-up latency, so the thread spins the
 * rest on the clock (timer_due()).
 */
static int arm_fd(struct lapict_kvm *k, uint64_t host_ns)
{
    struct itimerspec its = {0};

    if (host_ns > k->kick_lead_ns)
        host_ns -= k->kick_lead_ns;
    /* it_value 0 would disarm: the earliest absolute instant is 1 ns. */
    if (!host_ns)
        host_ns = 1;
    its.it_value.tv_sec = (time_t)(host_ns / NS_PER_S);
    its.it_value.tv_nsec = (long)(host_ns % NS_PER_S);
    if (k->sys->timerfd_settime(k->timer_fd, TFD_TIMER_ABSTIME, &its) < 0) {
        /* Armed again before the next entry (lapict_kvm_pre_run). */
        k->rearm_fd = true;
        return lapict_kvm__sys_fail(k, "timerfd_settime");
    }
    k->rearm_fd = false;
    return LAPICT_OK;
}

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

static void op_sw_arm(void *ctx, uint64_t host_ns)
{
    struct lapict_kvm *k = K(ctx);

    if (!host_ns)
        host_ns = 1;
    /* Published before the timerfd that wakes the thread to read it. */
    atomic_store_explicit(&k->target_ns, host_ns, memory_order_seq_cst);
    k->arms++;
    /* The kick timer is armed lazily, right before KVM_RUN (kick_sync). */
    if (!k->kick_timer_ok)
        (void)arm_fd(k, host_ns); /* a failure is reported by pre_run */
}

static void op_sw_cancel(void *ctx)
{
    struct lapict_kvm *k = K(ctx);
    struct itimerspec its = {0};

    atomic_store_explicit(&k->target_ns, 0, memory_order_seq_cst);
    k->arms++;
    /* A timerfd left armed only wakes the thread for a cleared target. */
    if (!k->kick_timer_ok && k->sys->timerfd_settime(k->timer_fd, 0, &its) < 0)
        lapict_kvm__sys_fail(k, "timerfd_settime");
}

/*
 * The kick timer only has to get the vCPU out of KVM_RUN: arm it for the
 * current target right before entering, and only if that changed. Arming
 * it on every op_sw_arm() would also fire it at instants the vCPU thread
 * handles itself (halt polling; the advance spin right before an entry,
 * whose kick would then throw the vCPU out of the entry it prepared).
 */
int lapict_kvm__kick_sync(struct lapict_kvm *k)
{
    uint64_t tgt = atomic_load_explicit(&k->target_ns, memory_order_relaxed);

    if (!k->kick_timer_ok) {
        /* A timerfd arm that failed: again, or no entry. */
        if (k->rearm_fd && tgt)
            return arm_fd(k, tgt) < 0 ? LAPICT_E_SYSTEM : 1;
        k->rearm_fd = false;
        return 1;
    }
    /* Already due: handle it now rather than enter and be kicked out. */
    if (k->kick_armed_ns && (int64_t)(mono_ns(k) - k->kick_armed_ns) >= 0)
        return 0;
    /*
     * An interrupt waits for the guest to set IF. Interrupt-window exits
     * come late on some hosts (PVM: a millisecond, or not at all while the
     * guest spins without exiting), so also kick it out to look again at
     * RFLAGS: after 10 us, doubling per consecutive window kick up to
     * ~1.3 ms, which bounds the exits a guest keeping IF clear can cause.
     */
    if (k->run->request_interrupt_window) {
        uint64_t w = mono_ns(k) + (10000ull << k->window_kicks);
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
    while ((int64_t)(mono_ns(K(ctx)) - host_ns) < 0)
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

/* The first fire since the VMM zeroed fired_tsc (async-signal-safe). */
static void note_fired(struct lapict_kvm *k)
{
    uint64_t zero = 0;

    atomic_compare_exchange_strong(&k->fired_tsc, &zero, __rdtsc());
}

/* Async-signal-safe: flag, and make the next or current entry exit. */
static void kick(struct lapict_kvm *k, bool timer)
{
    /* The kick timer itself: the host timer fired. */
    if (timer) {
        note_fired(k);
        atomic_store_explicit(&k->expired, 1, memory_order_seq_cst);
    }
    /* KVM_RUN returns -EINTR at once if entered after this; halt_wait() needs
     * no exit, it watches the flags. */
    if (!atomic_load_explicit(&k->in_halt, memory_order_seq_cst))
        __atomic_store_n(&k->run->immediate_exit, 1, __ATOMIC_RELAXED);
}

void lapict_kvm_kick(struct lapict_kvm *k)
{
    struct live_slot *s = live_pin(k);
    uint64_t one = 1;

    if (!s)
        return; /* destroyed: nothing of it is left to kick */
    kick(k, true);
    /* A full counter fails: a wake is pending anyway. */
    (void)!write(k->wake_fd, &one, sizeof(one));
    live_unpin(s);
}

/* A signal that is not a kick: the handler the caller had before. */
static void chain(int sig, siginfo_t *si, void *uc)
{
    for (int i = 0; i < SIG_SLOTS; i++) {
        const struct sigaction *o = &slots[i].old;
        if (atomic_load_explicit(&slots[i].sig, memory_order_acquire) != sig)
            continue;
        if (o->sa_flags & SA_SIGINFO) {
            if (o->sa_sigaction)
                o->sa_sigaction(sig, si, uc);
        } else if (o->sa_handler != SIG_DFL && o->sa_handler != SIG_IGN) {
            o->sa_handler(sig);
        }
        return;
    }
}

static void kick_handler(int sig, siginfo_t *si, void *uc)
{
    struct live_slot *s = NULL;
    int saved = errno;

    if (si && (si->si_code == SI_TIMER || si->si_code == SI_QUEUE))
        s = live_pin(si->si_value.sival_ptr);
    if (s) {
        kick(si->si_value.sival_ptr, si->si_code == SI_TIMER);
        live_unpin(s);
    } else {
        chain(sig, si, uc);
    }
    errno = saved;
}

/* Kick the vCPU thread with the kick signal, which carries @k. */
static void kick_vcpu(struct lapict_kvm *k)
{
    union sigval v = {.sival_ptr = k};

    if (k->kick_signal)
        pthread_sigqueue(k->vcpu_thread, k->kick_signal, v);
}

/* Take the kick signal (saving the handler before); LAPICT_E_*. */
static int take_signal(struct lapict_kvm *k)
{
    struct sigaction sa;
    struct sig_slot *free_slot = NULL;
    int rc = LAPICT_OK;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = kick_handler;
    /* KVM_RUN and ppoll return EINTR regardless; other calls restart. */
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < SIG_SLOTS; i++) {
        int sig = atomic_load_explicit(&slots[i].sig, memory_order_relaxed);
        if (sig == k->kick_signal) {
            slots[i].users++;
            goto out;
        }
        if (!sig && !free_slot)
            free_slot = &slots[i];
    }
    if (!free_slot) {
        rc = LAPICT_E_INVAL; /* more distinct kick signals than slots */
        goto out;
    }
    if (k->sys->sigaction(k->kick_signal, &sa, &free_slot->old) < 0) {
        rc = lapict_kvm__sys_fail(k, "sigaction");
        goto out;
    }
    free_slot->users = 1;
    atomic_store_explicit(&free_slot->sig, k->kick_signal,
                          memory_order_release);
out:
    pthread_mutex_unlock(&slots_lock);
    return rc;
}

static void release_signal(struct lapict_kvm *k)
{
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < SIG_SLOTS; i++) {
        if (atomic_load_explicit(&slots[i].sig, memory_order_relaxed) !=
            k->kick_signal)
            continue;
        if (--slots[i].users == 0) {
            /* Restored first: no kick handler runs on a freed slot. */
            if (k->sys->sigaction(k->kick_signal, &slots[i].old, NULL) < 0)
                lapict_kvm__sys_fail(k, "sigaction");
            atomic_store_explicit(&slots[i].sig, 0, memory_order_release);
        }
        break;
    }
    pthread_mutex_unlock(&slots_lock);
}

/*
 * The timerfd fired kick_lead_ns ahead of target_ns: spin to the target,
 * then flag and kick. Give up when the vCPU re-arms or cancels (a new
 * timerfd wake follows), halts (halt_wait() watches the clock itself and
 * re-arms the timerfd when it leaves with the target still ahead), or
 * destroy clears the target.
 * @fired: the last target kicked for, so that one target kicks once.
 */
static void timer_due(struct lapict_kvm *k, uint64_t *fired)
{
    uint64_t tgt = atomic_load_explicit(&k->target_ns, memory_order_seq_cst);
    uint64_t one = 1;

    if (!tgt || tgt == *fired)
        return;
    /*
     * A wake for this target comes at most kick_lead_ns before it. One
     * from farther away was armed for another target: the vCPU re-armed
     * after the wake (its own arm wakes the thread again), or its
     * timerfd_settime failed (reported, and armed again before the next
     * entry). Spinning to this target would take the guest's whole delay.
     */
    if ((int64_t)(tgt - mono_ns(k)) > (int64_t)k->kick_lead_ns)
        return;
    while ((int64_t)(mono_ns(k) - tgt) < 0) {
        if (atomic_load_explicit(&k->target_ns, memory_order_seq_cst) != tgt ||
            atomic_load_explicit(&k->in_halt, memory_order_seq_cst))
            return;
        _mm_pause();
    }
    *fired = tgt;
    note_fired(k);
    atomic_store_explicit(&k->expired, 1, memory_order_seq_cst);
    if (!atomic_load_explicit(&k->in_halt, memory_order_seq_cst))
        kick_vcpu(k);
    if (write(k->wake_fd, &one, sizeof(one)) < 0)
        return;
}

static void *timer_thread(void *arg)
{
    struct lapict_kvm *k = arg;
    struct pollfd p[2] = {{.fd = k->timer_fd, .events = POLLIN},
                          {.fd = k->stop_fd, .events = POLLIN}};
    uint64_t n, fired = 0, one = 1;

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
            atomic_store_explicit(&k->thread_errno, e, memory_order_release);
            if (!atomic_load_explicit(&k->in_halt, memory_order_seq_cst))
                kick_vcpu(k);
            if (write(k->wake_fd, &one, sizeof(one)) < 0)
                break;
            break;
        }
        if (p[1].revents)
            break;
        /* Re-armed or cancelled meanwhile: the count was reset. */
        if (read(k->timer_fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
            continue;
        timer_due(k, &fired);
    }
    return NULL;
}

int lapict_kvm_init(struct lapict_kvm *k, int vcpu_fd, struct kvm_run *run,
                    const struct lapict_kvm_config *cfg)
{
    struct lapict_kvm_config def = {.timer_thread = false};
    struct lapict_config tc;
    int rc;

    if (!k || !run)
        return LAPICT_E_INVAL;
    if (!cfg)
        cfg = &def;
    /* Kicks from the timer need a signal to reach KVM_RUN. */
    if (cfg->kick_signal < 0 || cfg->kick_signal > SIGRTMAX ||
        (cfg->timer_thread && !cfg->kick_signal))
        return LAPICT_E_INVAL;
    memset(k, 0, sizeof(*k));
    k->sys = cfg->sys ? cfg->sys : &lapict_kvm_sys_linux;
    k->vcpu_fd = vcpu_fd;
    k->run = run;
    k->timer_fd = k->stop_fd = k->wake_fd = -1;
    k->kick_signal = cfg->kick_signal;
    k->vcpu_thread = pthread_self();
    atomic_init(&k->expired, 0);
    atomic_init(&k->stop, 0);
    atomic_init(&k->in_halt, 0);
    atomic_init(&k->thread_errno, 0);

    k->tsc_khz = cfg->tsc_khz;
    if (!k->tsc_khz) {
        rc = k->sys->ioctl(vcpu_fd, KVM_GET_TSC_KHZ, NULL);
        if (rc < 0)
            return lapict_kvm__sys_fail(k, "KVM_GET_TSC_KHZ");
        k->tsc_khz = (uint32_t)rc;
    }
    if (!k->tsc_khz)
        return LAPICT_E_TSC_KHZ;
    if ((rc = lapict_kvm__vcpu_setup(k)) < 0)
        return rc;

    lapict_config_default(&tc);
    tc.tsc_khz = k->tsc_khz;
    if (cfg->bus_hz)
        tc.bus_hz = cfg->bus_hz;
    tc.advance_mode = cfg->advance_mode;
    tc.advance_ns = cfg->advance_ns;
    if (cfg->advance_max_ns)
        tc.advance_max_ns = cfg->advance_max_ns;
    rc = lapict_init(&k->timer, &tc, &lapict_kvm_ops, k);
    if (rc)
        return rc;

    atomic_init(&k->target_ns, 0);
    k->halt_poll_ns = !cfg->halt_poll_ns ? LAPICT_KVM_HALT_POLL_NS
                      : cfg->halt_poll_ns == LAPICT_KVM_NONE ? 0
                                                             : cfg->halt_poll_ns;
    /* Without the thread the owner reads the timerfd: no lead then. */
    k->kick_lead_ns = !cfg->timer_thread || !cfg->kick_thread ? 0
                      : !cfg->kick_lead_ns                ? LAPICT_KVM_KICK_LEAD_NS
                      : cfg->kick_lead_ns == LAPICT_KVM_NONE ? 0
                                                          : cfg->kick_lead_ns;

    /* The thread is the caller's: its slack only if asked for. */
    if (cfg->timer_slack_ns &&
        prctl(PR_SET_TIMERSLACK, (unsigned long)cfg->timer_slack_ns, 0, 0,
              0) < 0)
        return lapict_kvm__sys_fail(k, "prctl(PR_SET_TIMERSLACK)");
    k->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    k->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    k->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (k->timer_fd < 0 || k->stop_fd < 0 || k->wake_fd < 0) {
        rc = lapict_kvm__sys_fail(k, k->timer_fd < 0 ? "timerfd_create"
                                                      : "eventfd");
        goto fail;
    }

    if (!live_add(k)) {
        rc = LAPICT_E_INVAL; /* more than LIVE_MAX instances */
        goto fail;
    }
    k->live = true;
    if (k->kick_signal) {
        if ((rc = take_signal(k)) < 0)
            goto fail;
        k->signal_taken = true;
    }

    if (cfg->timer_thread && !cfg->kick_thread) {
        struct sigevent sev;
        memset(&sev, 0, sizeof(sev));
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = k->kick_signal;
        sev.sigev_value.sival_ptr = k; /* the handler's instance */
        sev._sigev_un._tid = gettid();
        if (k->sys->timer_create(CLOCK_MONOTONIC, &sev, &k->kick_timer) < 0) {
            rc = lapict_kvm__sys_fail(k, "timer_create");
            goto fail;
        }
        k->kick_timer_ok = true;
    }

    /* APIC state: enabled at the default base, SVR software-disabled. */
    if ((rc = lapict_apic_init(&k->apic, &k->timer, &lapict_kvm__apic_ops,
                               k)) < 0)
        goto fail;

    if (cfg->timer_thread && cfg->kick_thread) {
        sigset_t all, old;
        /* The timer thread takes no signals: kicks target the vCPU. */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        rc = pthread_create(&k->thread, NULL, timer_thread, k);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc) {
            errno = rc;
            rc = lapict_kvm__sys_fail(k, "pthread_create");
            goto fail;
        }
        k->thread_started = true;
    }
    return 0;

fail:
    lapict_kvm_destroy(k);
    return rc;
}

void lapict_kvm_destroy(struct lapict_kvm *k)
{
    uint64_t one = 1;

    if (!k)
        return;
    if (k->thread_started) {
        /* Ends a spin to the target, which watches no descriptor. */
        atomic_store_explicit(&k->target_ns, 0, memory_order_seq_cst);
        if (write(k->stop_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
            pthread_join(k->thread, NULL);
        k->thread_started = false;
    }
    if (k->kick_timer_ok)
        k->sys->timer_delete(k->kick_timer);
    k->kick_timer_ok = false;
    /* After the kick timer: a late kick finds no instance, and the
     * caller's handler is back once no instance uses the signal. Before
     * the descriptors close: a kick or stop in progress still has them. */
    if (k->live)
        live_del(k);
    k->live = false;
    if (k->signal_taken)
        release_signal(k);
    k->signal_taken = false;
    if (k->timer_fd >= 0)
        close(k->timer_fd);
    if (k->stop_fd >= 0)
        close(k->stop_fd);
    if (k->wake_fd >= 0)
        close(k->wake_fd);
    k->timer_fd = k->stop_fd = k->wake_fd = -1;
}

void lapict_kvm_stop(struct lapict_kvm *k)
{
    struct live_slot *s = live_pin(k);
    uint64_t one = 1;

    if (!s)
        return; /* destroyed: nothing runs any more */
    atomic_store_explicit(&k->stop, 1, memory_order_seq_cst);
    if (write(k->wake_fd, &one, sizeof(one)) == (ssize_t)sizeof(one)) {
        if (k->kick_signal)
            kick_vcpu(k);
        else
            __atomic_store_n(&k->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
    }
    live_unpin(s);
}

bool lapict_kvm__poll_expiry(struct lapict_kvm *k, bool read_fd)
{
    bool fired = atomic_exchange_explicit(&k->expired, 0,
                                          memory_order_seq_cst);
    uint64_t n, tgt;

    if (read_fd && read(k->timer_fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
        fired = true;
    /*
     * The kick timer's target passed: due whether or not its handler has
     * run yet (a handler can be held back: ThreadSanitizer defers them,
     * and a guest that does not exit would then never be kicked again).
     */
    if (k->kick_armed_ns && (int64_t)(mono_ns(k) - k->kick_armed_ns) >= 0)
        fired = true;
    /*
     * The host timer's own instant, whatever became of its kick (a timer
     * that could not be armed, a lost wake-up): every pass of the loop
     * finds a due expiry, so none waits for a kick that never comes.
     */
    tgt = atomic_load_explicit(&k->target_ns, memory_order_relaxed);
    if (tgt && (int64_t)(mono_ns(k) - tgt) >= 0)
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
    return lapict_kvm__poll_expiry(k, true);
}

static bool wake_flagged(struct lapict_kvm *k)
{
    return atomic_load_explicit(&k->expired, memory_order_relaxed) ||
           atomic_load_explicit(&k->stop, memory_order_relaxed);
}

/*
 * The guest halted with interrupts enabled: wait until there is work. The
 * vCPU thread watches the host timer itself (target_ns): it sleeps until
 * halt_poll_ns before it, then spins (as KVM's halt polling), so that the
 * expiry is processed on time rather than a timerfd wake-up (~15 us) late.
 * The timer thread stands aside while in_halt is set; the wake eventfd
 * and the flags end the wait early (lapict_kvm_stop(), a racing expiry).
 */
uint64_t lapict_kvm_next_deadline(const struct lapict_kvm *k)
{
    return atomic_load_explicit(&k->target_ns, memory_order_relaxed);
}

int lapict_kvm_halt_wait(struct lapict_kvm *k)
{
    struct pollfd p = {.fd = k->wake_fd, .events = POLLIN};
    uint64_t n, tgt, now, arms;
    int rc = LAPICT_OK, w;

    k->st.halt_sleeps++;
    /* No kick while halted: the loop below watches the target. A disarm
     * that fails costs one spurious exit; it is reported all the same. */
    if (k->kick_armed_ns) {
        (void)arm_kick_timer(k, 0);
        k->kick_armed_ns = 0;
    }
    lapict_vcpu_blocking(&k->timer);
    atomic_store_explicit(&k->in_halt, 1, memory_order_seq_cst);
    for (;;) {
        lapict_kvm__poll_expiry(k, false);
        if (lapict_apic_deliverable(&k->apic) >= 0 ||
            atomic_load_explicit(&k->stop, memory_order_seq_cst) ||
            atomic_load_explicit(&k->thread_errno, memory_order_relaxed))
            break;
        tgt = atomic_load_explicit(&k->target_ns, memory_order_relaxed);
        now = mono_ns(k);
        if (tgt && (int64_t)(now - tgt) >= 0) {
            note_fired(k);
            k->st.kicks_seen++;
            lapict_expire(&k->timer);
            continue;
        }
        if (tgt && tgt - now <= k->halt_poll_ns) {
            while ((int64_t)(mono_ns(k) - tgt) < 0 && !wake_flagged(k))
                _mm_pause();
            if ((int64_t)(mono_ns(k) - tgt) >= 0)
                note_fired(k);
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
        if (read(k->wake_fd, &n, sizeof(n)) < 0)
            continue;
    }
    atomic_store_explicit(&k->in_halt, 0, memory_order_seq_cst);
    /* A timer thread that saw in_halt set did not kick: look again. */
    lapict_kvm__poll_expiry(k, false);
    arms = k->arms;
    lapict_vcpu_unblocked(&k->timer);
    /* It gave up on a target still ahead: wake it again for that one. */
    tgt = atomic_load_explicit(&k->target_ns, memory_order_relaxed);
    if (k->arms == arms && tgt && k->thread_started)
        (void)arm_fd(k, tgt); /* a failure: re-armed before the entry */
    return rc;
}

int lapict_kvm_errno(const struct lapict_kvm *k)
{
    return k->sys_errno;
}

const char *lapict_kvm_errcall(const struct lapict_kvm *k)
{
    return k->sys_call ? k->sys_call : "";
}
