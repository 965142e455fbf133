/* SPDX-License-Identifier: MIT */
/*
 * adapters/kvm's host side: system-call failures are reported in lapict's
 * one error domain and never lose the guest's timer; the process-global
 * state (signal handler, timer slack) stays the caller's. On the fake vCPU
 * of kvm_fake.c (no /dev/kvm).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "kvm_fake.h"
#include "lapict_kvm.h"
#include "tu_main.h"

#define APIC 0xFEE00000ull

struct fx {
    struct lapict_kvm k;
    struct kvm_run run;
    uint64_t entries; /* KVM_RUN calls */
    uint64_t kick_at; /* CLOCK_MONOTONIC ns: when the caller's kick fires */
    int armed;        /* the vCPU thread's arming is done (atomic) */
    int rearm_rc;     /* the re-arm an after_ppoll hook made (atomic) */
    int destroyed;    /* destroy_elsewhere() returned (atomic) */
};

/* The whole @ns, even when a kick signal interrupts the sleep. */
static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * How long a test waits for what another thread, a signal or the clock
 * brings. A correct adapter gets there at once on any host; the bound only
 * turns a hang into a failure, so it lies far beyond what a slow host
 * (valgrind, a CPU hog) adds.
 */
#define PATIENCE_NS 60000000000ull

/* Look at @cond every 100 us until it holds; fail if PATIENCE_NS passes
 * first. @cond is evaluated once per look (it may have effects). */
#define WAIT_FOR(cond)                                                         \
    do {                                                                       \
        uint64_t end_ = mono_ns() + PATIENCE_NS;                               \
        bool ok_;                                                              \
        while (!(ok_ = (cond)) && (int64_t)(mono_ns() - end_) < 0)             \
            sleep_ns(100000);                                                  \
        if (!ok_)                                                              \
            fail_msg("%s: not true after %llu s", #cond,                       \
                     (unsigned long long)(PATIENCE_NS / 1000000000u));         \
    } while (0)

/* KVM_RUN of a guest that takes interrupts and exits to the VMM at once. */
static int run_io_exit(void *arg)
{
    struct fx *f = arg;
    f->entries++;
    f->run.exit_reason = KVM_EXIT_IO;
    f->run.io.port = 0x80;
    f->run.if_flag = 1;
    f->run.ready_for_interrupt_injection = 1;
    return 0;
}

/* KVM_RUN of a guest that halts with IF set. */
static int run_hlt(void *arg)
{
    struct fx *f = arg;
    f->entries++;
    f->run.exit_reason = KVM_EXIT_HLT;
    f->run.if_flag = 1;
    f->run.ready_for_interrupt_injection = 1;
    return 0;
}

static struct fx *fx_new(struct lapict_kvm_config *c, int *rc)
{
    struct fx *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    lt_fake.run = run_io_exit;
    lt_fake.run_arg = f;
    lt_fake.if_flag = true; /* the guest runs with IF set */
    *rc = lapict_kvm_init(&f->k, LT_FAKE_VCPU_FD, &f->run, c);
    return f;
}

static void fx_free(struct fx *f)
{
    lapict_kvm_destroy(&f->k);
    free(f);
}

static void mmio_wr(struct fx *f, uint32_t off, uint32_t v)
{
    f->run.exit_reason = KVM_EXIT_MMIO;
    f->run.mmio.phys_addr = APIC + off;
    f->run.mmio.len = 4;
    f->run.mmio.is_write = 1;
    memcpy(f->run.mmio.data, &v, 4);
}

static void apic_wr(struct fx *f, uint32_t off, uint32_t v)
{
    assert_int_equal(
        lapict_apic_mmio(&f->k.apic, APIC + off, (uint8_t *)&v, 4, true),
        LAPICT_OK);
}

/* Software-enable the APIC and make LVTT a one-shot, vector 0x40, /1. */
static void oneshot_ready(struct fx *f)
{
    mmio_wr(f, 0xF0, 0x1FF);
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    mmio_wr(f, 0x3E0, 0xB);
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    mmio_wr(f, 0x320, 0x40);
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
}

/*
 * Rule (one error domain): an adapter call that fails in a system call
 * returns LAPICT_E_SYSTEM, never -errno (LAPICT_E_INVAL is -1 = -EPERM),
 * and keeps the errno and the call's name. Every call of init goes through
 * the swappable table, so each can be made to fail here.
 */
static void init_failure_is_one_domain(void **state)
{
    static const struct {
        uint32_t kick;
        unsigned call;
        int err;
        const char *name;
    } cases[] = {
        {LAPICT_KVM_KICK_TIMER, LT_FAIL_TIMER_CREATE, EPERM, "timer_create"},
        {LAPICT_KVM_KICK_TIMER, LT_FAIL_TIMER_CREATE, EAGAIN, "timer_create"},
        {LAPICT_KVM_KICK_TIMER, LT_FAIL_TIMER_CREATE, ENOMEM, "timer_create"},
        {LAPICT_KVM_KICK_TIMER, LT_FAIL_SIGACTION, EINVAL, "sigaction"},
        {LAPICT_KVM_KICK_TIMER, LT_FAIL_SIGACTION, EPERM, "sigaction"},
        {LAPICT_KVM_KICK_CALLER, LT_FAIL_EVENTFD, EMFILE, "eventfd"},
        {LAPICT_KVM_KICK_THREAD, LT_FAIL_TIMERFD_CREATE, EMFILE,
         "timerfd_create"},
        {LAPICT_KVM_KICK_THREAD, LT_FAIL_PTHREAD_CREATE, EAGAIN,
         "pthread_create"},
        {LAPICT_KVM_KICK_CALLER, LT_FAIL_TIMERSLACK, EINVAL,
         "prctl(PR_SET_TIMERSLACK)"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct lapict_kvm_config c = lt_fake_config(cases[i].kick, SIGUSR2);
        struct fx *f;
        int rc;

        c.timer_slack_ns = 1;
        lt_fake_reset();
        lt_fake.fail = cases[i].call;
        lt_fake.fail_errno = cases[i].err;
        f = fx_new(&c, &rc);
        assert_int_equal(rc, LAPICT_E_SYSTEM);
        assert_int_not_equal(rc, -cases[i].err);
        assert_true(rc >= LAPICT_STATUS_MIN && rc < 0);
        assert_int_equal(lapict_kvm_errno(&f->k), cases[i].err);
        assert_string_equal(lapict_kvm_errcall(&f->k), cases[i].name);
        assert_string_not_equal(lapict_strerror(rc), "unknown status");
        free(f); /* a failed init leaves nothing to destroy */
    }
}

/*
 * Rule: a host timer that cannot be armed is reported before the guest
 * runs again (the run loop returns LAPICT_E_SYSTEM without entering), and
 * the interrupt is not lost: once the call works again it is delivered.
 *
 * The kick timer is armed only right before an entry, and only for a
 * target still ahead: on a host slower than the count (valgrind, a CPU
 * hog) the timer is due by then, the loop delivers it without arming, and
 * the failure is never met. So the count grows until the arm is tried.
 */
static void arm_failure(unsigned call, bool kick_thread)
{
    struct lapict_kvm_config c = lt_fake_config(
        kick_thread ? LAPICT_KVM_KICK_THREAD : LAPICT_KVM_KICK_TIMER, SIGUSR2);
    uint64_t count, deadline;
    struct fx *f;
    int rc;

    for (count = 2000000;; count *= 4) { /* 2 ms at 1 GHz, then longer */
        assert_true(count <= UINT32_MAX);
        lt_fake_reset();
        f = fx_new(&c, &rc);
        assert_int_equal(rc, 0);
        f->run.if_flag = 1;
        f->run.ready_for_interrupt_injection = 1;
        oneshot_ready(f);
        lt_fake.fail_errno = ENOMEM;
        __atomic_store_n(&lt_fake.fail, call, __ATOMIC_SEQ_CST);
        mmio_wr(f, 0x380, (uint32_t)count); /* TMICT */
        rc = lapict_kvm_handle_exit(&f->k, 0);
        deadline = lapict_kvm_next_deadline(&f->k);
        assert_int_not_equal(deadline, 0);
        assert_true(rc == LAPICT_KVM_MINE || rc == LAPICT_E_SYSTEM);
        if (rc == LAPICT_KVM_MINE)
            rc = lapict_kvm_run(&f->k);
        if (lt_fake.failed & call)
            break;
        /* Due before the loop needed the arm: served, nothing failed. */
        assert_int_equal(rc, 0);
        assert_int_equal(lt_fake.injections, 1);
        fx_free(f);
    }
    assert_int_equal(rc, LAPICT_E_SYSTEM);
    assert_int_equal(lapict_kvm_errno(&f->k), ENOMEM);
    assert_int_equal(f->entries, 0);
    __atomic_store_n(&lt_fake.fail, 0, __ATOMIC_SEQ_CST);
    /* The guest's instant, however long the host took to get here. */
    WAIT_FOR((int64_t)(mono_ns() - deadline) >= 0);
    assert_int_equal(lapict_kvm_run(&f->k), 0);
    assert_int_equal(f->run.exit_reason, KVM_EXIT_IO);
    assert_int_equal(lt_fake.injections, 1);
    assert_int_equal(lt_fake.last_vector, 0x40);
    fx_free(f);
}

static void kick_timer_arm_failure(void **state)
{
    (void)state;
    arm_failure(LT_FAIL_TIMER_SETTIME, false);
}

static void timerfd_arm_failure(void **state)
{
    (void)state;
    arm_failure(LT_FAIL_TIMERFD_SETTIME, true);
}

/* Rule: KVM_SET_MSRS (the IA32_APIC_BASE mirror) and KVM_NMI failures are
 * reported by the exit that made them, not discarded. */
static void set_msrs_and_nmi_failures(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    struct fx *f;
    int rc;

    (void)state;
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    lt_fake.fail = LT_FAIL_SET_MSRS;
    lt_fake.fail_errno = EINVAL;
    f->run.exit_reason = KVM_EXIT_X86_WRMSR;
    f->run.msr.index = 0x1B;
    f->run.msr.data = APIC | 0xD00; /* enable x2APIC */
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_E_SYSTEM);
    assert_int_equal(lapict_kvm_errno(&f->k), EINVAL);
    assert_string_equal(lapict_kvm_errcall(&f->k), "KVM_SET_MSRS");
    lt_fake.fail = LT_FAIL_NMI;
    lt_fake.fail_errno = EBUSY;
    f->run.exit_reason = KVM_EXIT_X86_WRMSR;
    f->run.msr.index = 0x830; /* ICR: NMI to self */
    f->run.msr.data = 0x40400;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_E_SYSTEM);
    assert_int_equal(lapict_kvm_errno(&f->k), EBUSY);
    assert_string_equal(lapict_kvm_errcall(&f->k), "KVM_NMI");
    lt_fake.fail = 0;
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    assert_int_equal(lt_fake.nmis, 1);
    fx_free(f);
}

/* Rule: a persistent poll error of the timer thread is reported, not
 * retried in a busy loop. */
static void thread_poll_error_no_spin(void **state)
{
    struct lapict_kvm_config c =
        lt_fake_config(LAPICT_KVM_KICK_THREAD, SIGUSR2);
    struct fx *f;
    int rc;

    (void)state;
    lt_fake_reset();
    lt_fake.fail = LT_FAIL_PPOLL;
    lt_fake.fail_errno = EBADF;
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    /* The VMM's loop runs (each pass an exit of its own) until the thread's
     * end reaches it; a thread that retried would never end. */
    WAIT_FOR((rc = lapict_kvm_run(&f->k)) != 0);
    assert_int_equal(rc, LAPICT_E_SYSTEM);
    assert_true(__atomic_load_n(&lt_fake.ppolls, __ATOMIC_RELAXED) < 10);
    assert_int_equal(lapict_kvm_errno(&f->k), EBADF);
    assert_string_equal(lapict_kvm_errcall(&f->k), "ppoll");
    __atomic_store_n(&lt_fake.fail, 0, __ATOMIC_SEQ_CST);
    fx_free(f);
}

/* Rule: a halted vCPU whose wait fails returns the error to the VMM rather
 * than spinning on it. */
static void halt_poll_error_reported(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    struct fx *f;
    int rc;

    (void)state;
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    oneshot_ready(f);
    mmio_wr(f, 0x380, 1000000000); /* 1 s: the halt sleeps */
    assert_int_equal(lapict_kvm_handle_exit(&f->k, 0), LAPICT_KVM_MINE);
    lt_fake.run = run_hlt;
    lt_fake.fail = LT_FAIL_PPOLL;
    lt_fake.fail_errno = EFAULT;
    alarm(10); /* a spinning halt would never return */
    assert_int_equal(lapict_kvm_run(&f->k), LAPICT_E_SYSTEM);
    alarm(0);
    assert_int_equal(lapict_kvm_errno(&f->k), EFAULT);
    assert_true(lt_fake.ppolls < 10);
    lt_fake.fail = 0;
    fx_free(f);
}

/* --- process-global state stays the caller's ---------------------------- */

static volatile sig_atomic_t caller_hits;

static void caller_handler(int sig)
{
    (void)sig;
    caller_hits++;
}

/*
 * Wait until the caller's handler has run @n times in all: a signal sent
 * to oneself is delivered before the sending call returns on Linux, but
 * valgrind (memcheck runs these tests) delivers it at a later system call.
 */
static void wait_hits(sig_atomic_t n)
{
    WAIT_FOR(caller_hits >= n);
}

static void set_caller_handler(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = caller_handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(sig, &sa, NULL), 0);
}

static bool handler_is_callers(int sig)
{
    struct sigaction sa;
    assert_int_equal(sigaction(sig, NULL, &sa), 0);
    return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == caller_handler;
}

/*
 * Rule: the adapter takes the kick signal the caller chose, and gives the
 * previous handler back at destroy (SIGUSR1 is QEMU's SIG_IPI); a signal
 * that is not one of its kicks reaches that handler meanwhile.
 */
static void previous_handler_restored(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_TIMER, SIGUSR1);
    struct fx *f;
    int rc;

    (void)state;
    lt_fake_reset();
    set_caller_handler(SIGUSR1);
    caller_hits = 0;
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    assert_false(handler_is_callers(SIGUSR1));
    raise(SIGUSR1); /* not a kick: the caller's */
    wait_hits(1);
    assert_int_equal(caller_hits, 1);
    fx_free(f);
    assert_true(handler_is_callers(SIGUSR1));
    raise(SIGUSR1);
    wait_hits(2);
    assert_int_equal(caller_hits, 2);
    signal(SIGUSR1, SIG_DFL);
}

/* Rule: with kick_signal 0 the adapter installs no handler at all (the
 * caller kicks); a chosen signal is the only one it takes. */
static void caller_chosen_signal(void **state)
{
    struct lapict_kvm_config c0 = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    struct lapict_kvm_config c1 = lt_fake_config(LAPICT_KVM_KICK_THREAD, 0);
    int sig = SIGRTMIN + 2, rc;
    struct fx *f;

    (void)state;
    lt_fake_reset();
    set_caller_handler(SIGUSR1);
    set_caller_handler(sig);
    f = fx_new(&c0, &rc);
    assert_int_equal(rc, 0);
    assert_true(handler_is_callers(SIGUSR1));
    assert_true(handler_is_callers(sig));
    fx_free(f);
    /* Kicks need a signal: a timer thread without one is refused, and the
     * refusal names the argument at fault. */
    f = fx_new(&c1, &rc);
    assert_int_equal(rc, LAPICT_E_INVAL);
    assert_non_null(strstr(lapict_kvm_errcall(&f->k), "cfg->kick_signal"));
    assert_non_null(strstr(lapict_kvm_errcall(&f->k), "cfg->kick "));
    free(f);
    c1.kick_signal = -1;
    f = fx_new(&c1, &rc);
    assert_int_equal(rc, LAPICT_E_INVAL);
    assert_non_null(strstr(lapict_kvm_errcall(&f->k), "cfg->kick_signal is"));
    free(f);
    f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(lapict_kvm_init(&f->k, LT_FAKE_VCPU_FD, NULL, &c0),
                     LAPICT_E_INVAL);
    assert_string_equal(lapict_kvm_errcall(&f->k), "run is NULL");
    free(f);
    c1.kick_signal = sig;
    f = fx_new(&c1, &rc);
    assert_int_equal(rc, 0);
    assert_true(handler_is_callers(SIGUSR1));
    assert_false(handler_is_callers(sig));
    fx_free(f);
    assert_true(handler_is_callers(sig));
    signal(SIGUSR1, SIG_DFL);
    signal(sig, SIG_DFL);
}

/* Rule: instances that share a kick signal share one handler; the
 * caller's comes back when the last of them is destroyed, in any order. */
static void shared_signal_restored_by_last(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_TIMER, SIGUSR1);
    struct fx *a, *b;
    int rc;

    (void)state;
    lt_fake_reset();
    set_caller_handler(SIGUSR1);
    a = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    b = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    assert_false(handler_is_callers(SIGUSR1));
    fx_free(a);
    assert_false(handler_is_callers(SIGUSR1)); /* b still kicks with it */
    fx_free(b);
    assert_true(handler_is_callers(SIGUSR1));
    signal(SIGUSR1, SIG_DFL);
}

static void *destroy_elsewhere(void *arg)
{
    struct fx *f = arg;
    lapict_kvm_destroy(&f->k);
    __atomic_store_n(&f->destroyed, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* lapict_kvm_destroy(&f->k), failing (not hanging) if it does not return. */
static void destroy_promptly(struct fx *f)
{
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, destroy_elsewhere, f), 0);
    WAIT_FOR(__atomic_load_n(&f->destroyed, __ATOMIC_SEQ_CST));
    assert_int_equal(pthread_join(t, NULL), 0);
}

/*
 * Rule: a kick that is still pending when its instance is destroyed, on
 * another thread, touches nothing of it once delivered (the adapter keeps
 * no registry of instances to look it up in), and is not passed to the
 * caller's handler either; a signal that is not a kick still is.
 */
static void destroy_on_other_thread(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_TIMER, SIGUSR1);
    static struct kvm_run sentinel;
    sigset_t usr1, old;
    union sigval v;
    pthread_t t;
    struct fx *f;
    int rc;

    (void)state;
    lt_fake_reset();
    set_caller_handler(SIGUSR1);
    caller_hits = 0;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    f->run.if_flag = 1;
    f->run.ready_for_interrupt_injection = 1;
    apic_wr(f, 0xF0, 0x1FF);
    apic_wr(f, 0x3E0, 0xB);
    apic_wr(f, 0x320, 0x40);
    /* The kick timer armed for 20 ms, its signal held back until after
     * the destroy (on a slow host it may have been served already). */
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &usr1, &old), 0);
    apic_wr(f, 0x380, 20000000);
    assert_int_equal(lapict_kvm_pre_run(&f->k), LAPICT_OK);
    sleep_ns(40000000);
    assert_int_equal(lapict_kvm_handle_exit(&f->k, -EINTR), LAPICT_KVM_MINE);
    assert_int_equal(pthread_create(&t, NULL, destroy_elsewhere, f), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* The memory lives on (reused by the caller): anything a stale
     * handler wrote would land in the sentinel. */
    memset(&sentinel, 0, sizeof(sentinel));
    f->k.run = &sentinel;
    assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
    sleep_ns(10000000); /* valgrind delivers at a later system call */
    assert_int_equal(sentinel.immediate_exit, 0);
    assert_int_equal(caller_hits, 0);
    v.sival_ptr = &f->k; /* the caller's own signal, naming anything */
    assert_int_equal(pthread_sigqueue(pthread_self(), SIGUSR1, v), 0);
    wait_hits(1);
    assert_int_equal(sentinel.immediate_exit, 0);
    assert_int_equal(caller_hits, 1);
    free(f);
    signal(SIGUSR1, SIG_DFL);
}

/* Rule: the timer slack of the caller's thread changes only if asked. */
static void timer_slack_only_if_asked(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    unsigned long before;
    struct fx *f;
    int rc;

    (void)state;
    lt_fake_reset();
    assert_int_equal(prctl(PR_SET_TIMERSLACK, 50000UL, 0, 0, 0), 0);
    before = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), before);
    fx_free(f);
    c.timer_slack_ns = 1;
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 1);
    fx_free(f);
    prctl(PR_SET_TIMERSLACK, before, 0, 0, 0);
}

/* Rule (docs/spec/timer.md "Concurrency"): the timer thread only sets the flag
 * and kicks; the owner thread consumes it and calls lapict_expire(). The kick
 * sets immediate_exit for the next KVM_RUN. Meant to run under TSan too. */
static void timer_thread_kick(void **state)
{
    struct lapict_kvm_config c =
        lt_fake_config(LAPICT_KVM_KICK_THREAD, SIGUSR1);
    struct fx *f;
    int rounds, rc;

    (void)state;
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    f->run.if_flag = 1;
    f->run.ready_for_interrupt_injection = 1;
    apic_wr(f, 0xF0, 0x1FF);
    apic_wr(f, 0x3E0, 0xB);
    apic_wr(f, 0x320, 0x40);
    for (rounds = 0; rounds < 20; rounds++) {
        apic_wr(f, 0x380, 200000); /* 200 us */
        WAIT_FOR(__atomic_load_n(&f->run.immediate_exit, __ATOMIC_SEQ_CST));
        assert_int_equal(f->run.immediate_exit, 1);
        f->run.immediate_exit = 0;
        assert_true(lapict_kvm_poll(&f->k));
        assert_int_equal(lapict_kvm_pre_run(&f->k), 0);
        assert_int_equal(lt_fake.last_vector, 0x40);
        assert_int_equal(lt_fake.injections, (uint64_t)rounds + 1);
        /* The guest entry took it and its handler EOIs. */
        assert_int_equal(lapict_kvm_handle_exit(&f->k, -EINTR),
                         LAPICT_KVM_MINE);
        apic_wr(f, 0xB0, 0);
    }
    fx_free(f);
}

/* --- the timer thread's spin, and destroy ------------------------------- */

/* The fired hook: counts the host timer's fires in *arg (atomic). */
static void count_fire(void *arg)
{
    __atomic_fetch_add((int *)arg, 1, __ATOMIC_SEQ_CST);
}

/* NOT_YET: the after_ppoll hook has not run. */
#define NOT_YET 1

/*
 * The vCPU re-arms its timer far ahead (about 550 s: TMICT 2^32 - 1 at
 * 1 GHz / 128) and the timerfd cannot be armed, so it keeps the earlier
 * wake. Run on the timer thread between its wake and its next step, once
 * the vCPU thread is done with the arming that woke it: the vCPU thread is
 * idle meanwhile, so the instance is this thread's.
 */
static void rearm_far_failing(void *arg)
{
    struct fx *f = arg;
    uint32_t tmict = 0xFFFFFFFFu;
    int rc;

    while (!__atomic_load_n(&f->armed, __ATOMIC_SEQ_CST))
        sched_yield();
    __atomic_store_n(&lt_fake.after_ppoll, NULL, __ATOMIC_SEQ_CST);
    lt_fake.fail_errno = ENOMEM;
    __atomic_store_n(&lt_fake.fail, LT_FAIL_TIMERFD_SETTIME, __ATOMIC_SEQ_CST);
    rc = lapict_apic_mmio(&f->k.apic, APIC + 0x380, (uint8_t *)&tmict, 4, true);
    __atomic_store_n(&f->rearm_rc, rc, __ATOMIC_SEQ_CST);
}

/*
 * Rule: the timer thread spins at most kick_lead_ns before a target. A
 * wake for a target that is no longer the armed one (the re-arm's
 * timerfd_settime failed, or the re-arm came between the wake and the
 * thread's look at the target) ends without a spin; the re-arm's failure
 * reaches the VMM, which arms the timerfd again; destroy returns at once.
 */
static void timer_thread_spins_at_most_the_lead(void **state)
{
    struct lapict_kvm_config c =
        lt_fake_config(LAPICT_KVM_KICK_THREAD, SIGUSR2);
    struct fx *f;
    int rc, fires = 0;

    (void)state;
    c.fired = count_fire;
    c.fired_arg = &fires;
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    f->rearm_rc = NOT_YET;
    apic_wr(f, 0xF0, 0x1FF);
    apic_wr(f, 0x3E0, 0xA); /* divide by 128 */
    apic_wr(f, 0x320, 0x40);
    lt_fake.after_ppoll_arg = f;
    __atomic_store_n(&lt_fake.after_ppoll, rearm_far_failing, __ATOMIC_SEQ_CST);
    apic_wr(f, 0x380, 7813); /* 1 ms: the timerfd wakes the thread */
    __atomic_store_n(&f->armed, 1, __ATOMIC_SEQ_CST);
    WAIT_FOR(__atomic_load_n(&f->rearm_rc, __ATOMIC_SEQ_CST) != NOT_YET);
    assert_int_equal(f->rearm_rc, LAPICT_OK);
    assert_true(lt_fake.failed & LT_FAIL_TIMERFD_SETTIME);
    /* Back in ppoll, the far target neither waited for nor kicked. */
    WAIT_FOR(__atomic_load_n(&lt_fake.ppolls, __ATOMIC_SEQ_CST) >= 2);
    assert_int_equal(__atomic_load_n(&fires, __ATOMIC_SEQ_CST), 0);
    assert_int_equal(__atomic_load_n(&f->k.expired, __ATOMIC_SEQ_CST), 0);
    __atomic_store_n(&lt_fake.fail, 0, __ATOMIC_SEQ_CST);
    assert_int_equal(lapict_kvm_pre_run(&f->k), LAPICT_E_SYSTEM);
    assert_string_equal(lapict_kvm_errcall(&f->k), "timerfd_settime");
    assert_int_equal(lapict_kvm_errno(&f->k), ENOMEM);
    assert_int_equal(lapict_kvm_pre_run(&f->k), LAPICT_OK);
    destroy_promptly(f);
    free(f);
}

/*
 * Rule: lapict_kvm_destroy() returns at once in every state of the timer
 * thread, its spin over the lead included (kick_lead_ns may be seconds):
 * the target it spins to is gone, and so is the spin.
 */
static void destroy_ends_the_lead_spin(void **state)
{
    struct lapict_kvm_config c =
        lt_fake_config(LAPICT_KVM_KICK_THREAD, SIGUSR2);
    uint64_t target;
    struct fx *f;
    int rc, fires = 0;

    (void)state;
    c.fired = count_fire;
    c.fired_arg = &fires;
    c.kick_lead_ns = 4000000000u;
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    apic_wr(f, 0xF0, 0x1FF);
    apic_wr(f, 0x3E0, 0xB);
    apic_wr(f, 0x320, 0x40);
    apic_wr(f, 0x380, 4001000000u); /* the lead and 1 ms, at 1 GHz */
    target = lapict_kvm_next_deadline(&f->k);
    /* Woken at the lead: from here the thread spins to the target. */
    WAIT_FOR(__atomic_load_n(&lt_fake.ppoll_returns, __ATOMIC_SEQ_CST) >= 1);
    destroy_promptly(f);
    assert_true((int64_t)(mono_ns() - target) < 0);
    assert_int_equal(__atomic_load_n(&fires, __ATOMIC_SEQ_CST), 0);
    free(f);
}

struct race {
    struct lapict_kvm *k;
    int quit;       /* atomic */
    uint64_t calls; /* kick-and-stop rounds done (atomic) */
};

/* Another thread of the VMM: its own timer's kicks, and a stop. */
static void *kick_and_stop(void *arg)
{
    struct race *r = arg;

    while (!__atomic_load_n(&r->quit, __ATOMIC_SEQ_CST)) {
        lapict_kvm_kick(r->k);
        lapict_kvm_stop(r->k);
        __atomic_fetch_add(&r->calls, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/*
 * Rule: lapict_kvm_kick() and lapict_kvm_stop() from another thread may
 * race lapict_kvm_destroy() and go on after it (the instance's memory
 * still there): they write to none of the descriptors destroy closed, nor
 * to a descriptor that reuses one's number, and once destroy has returned
 * they touch nothing of the instance (its kvm_run is the caller's again).
 */
static void kick_racing_destroy(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    int round;

    (void)state;
    for (round = 0; round < 20; round++) {
        struct race r = {0};
        int fds[3], wake, i, rc;
        bool reused = false;
        uint64_t calls;
        pthread_t t;
        struct fx *f;

        lt_fake_reset();
        f = fx_new(&c, &rc);
        assert_int_equal(rc, 0);
        wake = f->k.wake_fd;
        r.k = &f->k;
        assert_int_equal(pthread_create(&t, NULL, kick_and_stop, &r), 0);
        WAIT_FOR(__atomic_load_n(&r.calls, __ATOMIC_SEQ_CST) >= 1);
        lapict_kvm_destroy(&f->k);
        /* Linux hands out the lowest free numbers: those just closed. */
        for (i = 0; i < 3; i++) {
            fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            assert_true(fds[i] >= 0);
            reused |= fds[i] == wake;
        }
        assert_true(reused);
        __atomic_store_n(&f->run.immediate_exit, 0, __ATOMIC_SEQ_CST);
        calls = __atomic_load_n(&r.calls, __ATOMIC_SEQ_CST);
        WAIT_FOR(__atomic_load_n(&r.calls, __ATOMIC_SEQ_CST) >= calls + 100);
        __atomic_store_n(&r.quit, 1, __ATOMIC_SEQ_CST);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(f->run.immediate_exit, 0);
        for (i = 0; i < 3; i++) {
            uint64_t v;
            assert_int_equal(read(fds[i], &v, sizeof(v)), -1);
            assert_int_equal(errno, EAGAIN);
            close(fds[i]);
        }
        free(f);
    }
}

/* --- the host instant of a guest TSC value ------------------------------ */

/* The host TSC and the clock at one instant: the tightest of a few (TSC,
 * clock, TSC) brackets, its first TSC read (the clock is no earlier). */
static void tsc_and_ns(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;

    *tsc = *ns = 0;
    for (int i = 0; i < 16; i++) {
        uint64_t a = __rdtsc(), c = mono_ns(), b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a;
            *ns = c;
        }
    }
}

/* The host TSC's rate, kHz (the fake's guest TSC is the host TSC). */
static uint32_t host_tsc_khz(void)
{
    uint64_t c0, t0, c1, t1;

    tsc_and_ns(&c0, &t0);
    sleep_ns(100000000);
    tsc_and_ns(&c1, &t1);
    return (uint32_t)((c1 - c0) * 1000000u / (t1 - t0));
}

/*
 * Rule (ops.h, tsc_to_host_ns): the host instant at which the guest TSC
 * reaches a value stays right when the thread stalls between its reads of
 * the TSC and of the clock (preempted on a busy host). One moved late
 * looks further away than the advance to the core's wait before entry,
 * which takes that for a clock error and enters at once: the interrupt
 * injected ahead would reach the guest early.
 */
static void tsc_instant_survives_a_stall(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    uint64_t tsc0, t0, d, at, truth;
    struct fx *f;
    int rc;

    (void)state;
    c.timer.tsc_khz = host_tsc_khz();
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    /* 10 s ahead: still ahead after the stall, however slow the host. */
    tsc_and_ns(&tsc0, &t0);
    d = tsc0 + (uint64_t)c.timer.tsc_khz * 10000u;
    truth = t0 + 10000000000ull;
    __atomic_store_n(&lt_fake.clock_stall_ns, 100000000, __ATOMIC_SEQ_CST);
    at = lapict_kvm_ops.tsc_to_host_ns(&f->k, d);
    assert_int_equal(lt_fake.clock_stall_ns, 0); /* it stalled in there */
    /* Never early (1 us for the rate's rounding), and not the stall late. */
    assert_true((int64_t)(at - truth) > -1000);
    assert_true((int64_t)(at - truth) < 50000000);
    fx_free(f);
}

/* Rule: with kick_signal 0 the caller kicks: lapict_kvm_next_deadline()
 * says when, lapict_kvm_kick() (any thread) makes the entry exit. The
 * caller's timer fires at f->kick_at, read before the vCPU ran: by the
 * time this thread runs the deadline may be served and cleared. */
static void *caller_kicker(void *arg)
{
    struct fx *f = arg;
    struct timespec ts = {(time_t)(f->kick_at / 1000000000u),
                          (long)(f->kick_at % 1000000000u)};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
    lapict_kvm_kick(&f->k);
    return NULL;
}

static int run_until_kicked(void *arg)
{
    struct fx *f = arg;
    f->entries++;
    f->run.if_flag = 1;
    f->run.ready_for_interrupt_injection = 1;
    /* The interrupt came with this entry: the guest is done. (A kick that
     * landed before the entry was served by pre_run.) */
    if (lt_fake.injections) {
        f->run.exit_reason = KVM_EXIT_IO;
        return 0;
    }
    while (!__atomic_load_n(&f->run.immediate_exit, __ATOMIC_SEQ_CST))
        sleep_ns(10000);
    errno = EINTR;
    return -1;
}

static void caller_kicks(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    pthread_t t;
    struct fx *f;
    int rc;

    (void)state;
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    lt_fake.run = run_until_kicked;
    f->run.if_flag = 1;
    f->run.ready_for_interrupt_injection = 1;
    apic_wr(f, 0xF0, 0x1FF);
    apic_wr(f, 0x3E0, 0xB);
    apic_wr(f, 0x320, 0x40);
    assert_int_equal(lapict_kvm_next_deadline(&f->k), 0);
    apic_wr(f, 0x380, 1000000); /* 1 ms */
    f->kick_at = lapict_kvm_next_deadline(&f->k);
    assert_int_not_equal(f->kick_at, 0);
    assert_int_equal(pthread_create(&t, NULL, caller_kicker, f), 0);
    assert_int_equal(lapict_kvm_run(&f->k), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(f->entries == 1 || f->entries == 2);
    assert_int_equal(lt_fake.injections, 1);
    assert_int_equal(lt_fake.last_vector, 0x40);
    fx_free(f);
}

/* Rule ("Error Handling"): the core's report of an illegal LVT timer
 * vector sets ESR bit 6, "Receive Illegal Vector". */
static void illegal_lvt_vector_esr(void **state)
{
    struct lapict_kvm_config c = lt_fake_config(LAPICT_KVM_KICK_CALLER, 0);
    struct fx *f;
    uint32_t esr = 0;
    int rc;

    (void)state;
    lt_fake_reset();
    f = fx_new(&c, &rc);
    assert_int_equal(rc, 0);
    apic_wr(f, 0xF0, 0x1FF);
    apic_wr(f, 0x3E0, 0xB);
    apic_wr(f, 0x320, 0x05); /* vector 5: illegal */
    apic_wr(f, 0x380, 1000);
    sleep_ns(100000);
    lapict_expire(&f->k.timer);
    apic_wr(f, 0x280, 0);
    assert_int_equal(
        lapict_apic_mmio(&f->k.apic, APIC + 0x280, (uint8_t *)&esr, 4, false),
        LAPICT_OK);
    assert_int_equal(esr, LAPICT_APIC_ESR_RECV_ILLEGAL);
    assert_int_equal(lt_fake.injections, 0);
    fx_free(f);
}

TU_MAIN(cmocka_unit_test(init_failure_is_one_domain),
        cmocka_unit_test(kick_timer_arm_failure),
        cmocka_unit_test(timerfd_arm_failure),
        cmocka_unit_test(set_msrs_and_nmi_failures),
        cmocka_unit_test(thread_poll_error_no_spin),
        cmocka_unit_test(halt_poll_error_reported),
        cmocka_unit_test(previous_handler_restored),
        cmocka_unit_test(caller_chosen_signal),
        cmocka_unit_test(shared_signal_restored_by_last),
        cmocka_unit_test(destroy_on_other_thread),
        cmocka_unit_test(timer_slack_only_if_asked),
        cmocka_unit_test(timer_thread_kick),
        cmocka_unit_test(timer_thread_spins_at_most_the_lead),
        cmocka_unit_test(destroy_ends_the_lead_spin),
        cmocka_unit_test(kick_racing_destroy),
        cmocka_unit_test(tsc_instant_survives_a_stall),
        cmocka_unit_test(caller_kicks),
        cmocka_unit_test(illegal_lvt_vector_esr))
