/* SPDX-License-Identifier: MIT */
/*
 * lapict on Linux KVM with no in-kernel irqchip, for a VMM's own vCPU loop:
 * the portable LAPIC model (lapict_apic.h, its own library liblapict-apic,
 * which this one links) around the lapict timer, the host ops on Linux
 * (CLOCK_MONOTONIC, host TSC, a kick timer or a timer thread that kicks
 * the vCPU), and hooks the VMM calls around its KVM_RUN:
 *
 *     for (;;) {
 *         if ((rc = lapict_kvm_pre_run(k)) < 0) fail(rc);
 *         e = ioctl(vcpu_fd, KVM_RUN, 0) < 0 ? -errno : 0;
 *         rc = lapict_kvm_handle_exit(k, e);
 *         if (rc == LAPICT_KVM_MINE) continue;
 *         if (rc == LAPICT_KVM_HALTED) { rc = lapict_kvm_halt_wait(k); ... }
 *         if (rc < 0) fail(rc);
 *         ... the VMM's own exits (LAPICT_KVM_NOT_MINE)
 *     }
 *
 * lapict_kvm_run() is that loop. lapict-apic(3) says what the LAPIC model
 * emulates, what it hands to the VMM (IPIs for other vCPUs, INIT, start-up,
 * SMI: lapict_kvm_config.apic_ops) and what it does not do. The adapter's
 * README (kick strategies, threat model) is installed in
 * share/doc/lapict/adapters/kvm (Debian: /usr/share/doc/liblapict-kvm-dev).
 *
 * Threading (docs/spec/timer.md section 9): each function here runs on the
 * vCPU thread, except lapict_kvm_stop(), lapict_kvm_kick(),
 * lapict_kvm_next_deadline() and lapict_kvm_destroy(). The kick strategy
 * (enum lapict_kvm_kick) gets the vCPU thread out of KVM_RUN when the
 * host timer is due; the vCPU thread compares the clock with the host
 * timer and calls lapict_expire(). A halted vCPU watches the clock itself
 * (halt polling).
 */
#ifndef LAPICT_KVM_H
#define LAPICT_KVM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include <lapict/lapict.h>
#include <lapict_apic.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The adapter's system calls (SQLite's aSyscall[] idea): every call it
 * makes to the kernel goes through one of these entries, so a test can put
 * its own table in lapict_kvm_config.sys to fake a vCPU (KVM_RUN and the
 * other ioctls) or make any call fail. Each entry has the contract of the
 * libc call it names, -1 with errno on failure; the pthread ones too (they
 * return -1 and set errno instead of returning the error). Production uses
 * lapict_kvm_sys_linux; a table of one's own starts from a copy of it.
 * The table only grows at the end, with a new LAPICT_KVM_SYS_VERSION.
 */
struct itimerspec;
struct pollfd;
struct sigaction;
struct sigevent;
struct timespec;

#define LAPICT_KVM_SYS_VERSION 1u

struct lapict_kvm_sys {
    uint32_t version; /* LAPICT_KVM_SYS_VERSION */
    int (*ioctl)(int fd, unsigned long req, void *arg);
    int (*open)(const char *path, int flags);
    int (*close)(int fd);
    long (*read)(int fd, void *buf, size_t n);
    long (*write)(int fd, const void *buf, size_t n);
    /* Every clock read of the adapter (CLOCK_MONOTONIC). A test can slow
     * it to stand for a preemption. */
    int (*clock_gettime)(int clk, struct timespec *ts);
    int (*timerfd_create)(int clk, int flags);
    int (*timerfd_settime)(int fd, int flags, const struct itimerspec *v);
    int (*eventfd)(unsigned int initval, int flags);
    /* POSIX timer: the kernel's int timer id (raw syscall, no -lrt). */
    int (*timer_create)(int clk, struct sigevent *sev, int *id);
    int (*timer_settime)(int id, int flags, const struct itimerspec *v);
    int (*timer_delete)(int id);
    /* @ts NULL: no timeout. */
    int (*ppoll)(struct pollfd *fds, unsigned long n,
                 const struct timespec *ts);
    int (*sigaction)(int sig, const struct sigaction *sa,
                     struct sigaction *old);
    /* pthread_sigqueue(): @sig with @value to @thread. */
    int (*pthread_sigqueue)(pthread_t thread, int sig, void *value);
    /* The timer thread; it starts with every signal blocked. */
    int (*pthread_create)(pthread_t *thread, void *(*fn)(void *), void *arg);
    /* prctl(PR_SET_TIMERSLACK, @ns) for the calling thread. */
    int (*set_timerslack)(unsigned long ns);
};

/** lapict_kvm_sys_linux - the real system calls. */
extern const struct lapict_kvm_sys lapict_kvm_sys_linux;

/*
 * Who gets the vCPU thread out of KVM_RUN when the host timer is due. Each
 * strategy is one part of kick.c; README.md compares them.
 */
enum lapict_kvm_kick {
    /*
     * No kicks from the adapter: the host timer is served at each
     * lapict_kvm_pre_run() and in lapict_kvm_halt_wait(); a caller that
     * needs the guest out of KVM_RUN at lapict_kvm_next_deadline() kicks
     * it itself (lapict_kvm_kick() plus a signal of its own).
     */
    LAPICT_KVM_KICK_CALLER = 0,
    /*
     * A POSIX timer whose expiry the kernel signals (kick_signal) to the
     * vCPU thread itself: no thread to schedule. Armed right before each
     * KVM_RUN, for the target current then.
     */
    LAPICT_KVM_KICK_TIMER = 1,
    /*
     * A timer thread: a timerfd wakes it kick_lead_ns early, it spins to
     * the target and sends kick_signal. For hosts that cannot direct a
     * POSIX timer's signal at a thread; on a busy host the thread's own
     * wake-up waits for a CPU.
     */
    LAPICT_KVM_KICK_THREAD = 2,
};

struct lapict_kvm_config {
    /*
     * The timer's configuration (lapict/config.h), every field as the core
     * documents it, with one difference: tsc_khz 0 asks KVM for the guest
     * TSC rate (KVM_GET_TSC_KHZ; init fails without it). Filled by
     * lapict_kvm_config_default() with the core's defaults.
     */
    struct lapict_config timer;
    /* LAPICT_KVM_KICK_*. */
    uint32_t kick;
    /*
     * The signal that kicks the vCPU thread out of KVM_RUN (the kick
     * strategy's and lapict_kvm_stop()'s). The adapter installs its
     * handler on it and puts back the one before at the last destroy;
     * signals that are not its kicks go to that previous handler (if it
     * was a function). Pick one the process has no other use for (SIGUSR1
     * is QEMU's SIG_IPI). 0: the adapter takes no signal, and the kick
     * must be LAPICT_KVM_KICK_CALLER.
     */
    int kick_signal;
    /*
     * Halt polling: a halted vCPU whose host timer is due within this many
     * ns spins on the clock instead of sleeping (as KVM's halt_poll_ns).
     * 0: LAPICT_KVM_HALT_POLL_NS; LAPICT_KVM_NONE: always sleep.
     */
    uint32_t halt_poll_ns;
    /*
     * LAPICT_KVM_KICK_THREAD: the thread wakes this many ns before the host
     * timer and spins to it before kicking, absorbing its wake-up latency;
     * it never spins longer (a wake that finds the target farther away
     * ends at once), and lapict_kvm_destroy() ends a spin.
     * 0: LAPICT_KVM_KICK_LEAD_NS; LAPICT_KVM_NONE: no lead.
     */
    uint32_t kick_lead_ns;
    /*
     * PR_SET_TIMERSLACK for the calling (vCPU) thread, ns; 0: leave the
     * thread's slack alone (Linux's default 50 us then adds to every wake).
     */
    uint32_t timer_slack_ns;
    /* System calls; NULL: lapict_kvm_sys_linux (tests swap them). */
    const struct lapict_kvm_sys *sys;
    /*
     * Optional: called when the host timer fires (the kick timer's signal
     * while the vCPU runs, the timer thread at its target, lapict_kvm_kick(),
     * lapict_kvm_halt_wait() seeing the instant pass), in that context: a
     * signal handler or another thread, so async-signal-safe. For a VMM's
     * latency breakdown; the adapter itself needs none. NULL: none.
     */
    void (*fired)(void *arg);
    void *fired_arg;
    /*
     * The VMM's part of the LAPIC model's ops (lapict_apic.h), with its
     * context; NULL: none. Its ipi op (a table of version 2) gets the IPIs
     * this vCPU's APIC does not complete alone: those that may name other
     * vCPUs, and INIT, start-up and SMI (lapict-apic(3) has the rules);
     * without one they are counted in apic.st.ipis_unrouted. Its nmi,
     * base_changed and eoi, if set, are called after the adapter's own
     * handling of the event (KVM_NMI, KVM_SET_MSRS, the interrupt window),
     * nmi and base_changed only when that succeeded. The table must
     * outlive the instance.
     */
    const struct lapict_apic_ops *apic_ops;
    void *apic_ctx;
};

/**
 * lapict_kvm_config_default() - fill @cfg with the defaults.
 * @cfg: configuration to fill.
 *
 * The timer's as lapict_config_default() sets them, but tsc_khz 0 (ask
 * KVM); LAPICT_KVM_KICK_CALLER and no kick signal (nothing process-wide is
 * the adapter's), default halt polling and kick lead, the thread's timer
 * slack left alone, the real system calls, no fired hook, no apic_ops.
 */
void lapict_kvm_config_default(struct lapict_kvm_config *cfg);

#define LAPICT_KVM_NONE 0xFFFFFFFFu
#define LAPICT_KVM_HALT_POLL_NS 200000u
#define LAPICT_KVM_KICK_LEAD_NS 40000u

/* lapict_kvm_handle_exit(): whose exit it was (errors are negative). */
#define LAPICT_KVM_NOT_MINE 0 /* the VMM's: handle it, then pre_run */
#define LAPICT_KVM_MINE 1     /* handled: pre_run and enter again */
#define LAPICT_KVM_HALTED 2   /* HLT with IF set: wait (halt_wait) */

/* Counters for tests and benchmarks; owner thread only. */
struct lapict_kvm_stats {
    uint64_t runs, gp, hlt, halt_sleeps, kicks_seen;
    uint64_t window_exits, window_requests, interrupts;
};

struct lapict_kvm_kicker; /* kick.c: one per LAPICT_KVM_KICK_* */

/*
 * One vCPU's LAPIC on KVM. Caller-allocated; fields are private to the
 * adapter (read-only for tests and statistics: timer, apic, st). Fields
 * shared between threads are plain integers that the adapter accesses
 * atomically only, so that C++ can include this header.
 */
struct lapict_kvm {
    struct lapict_timer timer;
    struct lapict_apic apic; /* the LAPIC model around the timer */
    const struct lapict_kvm_sys *sys;
    const struct lapict_kvm_kicker *kicker;
    int vcpu_fd;
    struct kvm_run *run; /* the vCPU's mmap'ed run structure */
    int timer_fd;        /* the timer thread's timerfd, CLOCK_MONOTONIC */
    int stop_fd;         /* eventfd that stops the timer thread */
    int wake_fd;         /* eventfd that wakes a halted vCPU */
    int kick_signal;
    bool thread_started;
    bool signal_taken;
    pthread_t thread, vcpu_thread;
    /* Atomic: 1 from init to destroy; other threads' calls in progress. */
    int alive;
    unsigned int pins;
    int expired; /* atomic: a kick -> vCPU thread */
    int stop;    /* atomic: lapict_kvm_stop() -> vCPU thread */
    int in_halt; /* atomic: the vCPU sleeps in halt_wait() */
    /* Atomic: host timer instant (CLOCK_MONOTONIC ns, 0: none): vCPU ->
     * timer thread, which spins to it after the early timerfd wake. */
    uint64_t target_ns;
    uint32_t halt_poll_ns, kick_lead_ns;
    uint64_t arms;            /* host timer arm/cancel calls (vCPU thread) */
    bool sync_events;         /* KVM_CAP_SYNC_REGS: inject through kvm_run */
    bool kick_timer_ok;       /* kick_timer signals the vCPU thread */
    int kick_timer;           /* kernel POSIX timer id */
    uint64_t kick_armed_ns;   /* its arming: target_ns as of the last entry */
    uint8_t window_kicks;     /* consecutive kicks to find an open window */
    uint32_t tsc_khz;         /* the guest TSC rate the timer runs with */
    int64_t tsc_offset;       /* guest TSC - host TSC */
    bool timer_refused;       /* the core holds an interrupt for the window */
    bool injected;            /* an injection is queued for the coming entry */
    void (*fired)(void *arg); /* lapict_kvm_config.fired */
    void *fired_arg;
    const struct lapict_apic_ops *vmm_ops; /* lapict_kvm_config.apic_ops */
    void *vmm_ctx;
    struct lapict_kvm_stats st;
    /* The last failed system call (lapict_kvm_errno/errcall). */
    int sys_errno;
    const char *sys_call;
    int err;          /* a failure not yet reported (vCPU thread) */
    int thread_errno; /* atomic: the timer thread ended on this */
    bool rearm_fd;    /* the timerfd arm failed: again before entry */
};

/**
 * lapict_kvm_vm_setup() - per-VM setup for a userspace LAPIC.
 * @vm_fd: the VM, without an in-kernel irqchip.
 *
 * Enables KVM_CAP_X86_USER_SPACE_MSR (FILTER, UNKNOWN, INVAL exits) and
 * filters IA32_TSC_DEADLINE and IA32_APIC_BASE to userspace. From then on
 * every MSR KVM does not know exits to userspace (the x2APIC range among
 * them): lapict_kvm_handle_exit() takes the LAPIC's and says
 * LAPICT_KVM_NOT_MINE for the others, which the VMM completes
 * (run->msr.error = 1 raises #GP).
 *
 * Return: 0, or LAPICT_E_SYSTEM with errno as the failed ioctl left it.
 */
int lapict_kvm_vm_setup(int vm_fd);

/**
 * lapict_kvm_cpuid_fixup() - CPUID bits for the emulated LAPIC.
 * @cpuid: entries from KVM_GET_SUPPORTED_CPUID, changed in place.
 * @x2apic: advertise x2APIC.
 *
 * Leaf 1: APIC (EDX 9) and TSC-deadline (ECX 24) set, x2APIC (ECX 21) per
 * @x2apic, initial APIC ID 0 (EBX 31:24).
 */
void lapict_kvm_cpuid_fixup(struct kvm_cpuid2 *cpuid, bool x2apic);

/**
 * lapict_kvm_set_cpuid() - the CPU model the LAPIC enforces.
 * @k: the LAPIC (after lapict_kvm_init()).
 * @cpuid: the entries given to KVM_SET_CPUID2.
 *
 * Leaf 1 ECX bit 21 (x2APIC) decides whether IA32_APIC_BASE.EXTD may be
 * set; leaf 0x80000008 EAX[7:0] (MAXPHYADDR) which base bits are reserved.
 * Without this call x2APIC is allowed and 36 bits are assumed.
 */
void lapict_kvm_set_cpuid(struct lapict_kvm *k, const struct kvm_cpuid2 *cpuid);

/**
 * lapict_kvm_init() - set up the LAPIC of one vCPU.
 * @k: caller-allocated.
 * @vcpu_fd: the vCPU (passed to @cfg->sys->ioctl, so a test's table may
 * give any number a meaning).
 * @run: its kvm_run.
 * @cfg: configuration (lapict_kvm_config_default(), then changes); NULL for
 * the defaults.
 *
 * Must be called on the vCPU thread (the kick targets the caller).
 * lapict_kvm_destroy() may run on any thread.
 *
 * Return: 0 or a LAPICT_E_* code: LAPICT_E_INVAL (a NULL @k or @run, a
 * kick strategy that is not LAPICT_KVM_KICK_CALLER without kick_signal, a
 * sys table of another version, too many distinct kick signals: with @k
 * not NULL, lapict_kvm_errcall(@k) then names the argument at fault),
 * LAPICT_E_OPS (apic_ops of version 0),
 * LAPICT_E_TSC_KHZ (no TSC rate), LAPICT_E_SYSTEM (a system call failed:
 * lapict_kvm_errno()), or lapict_init()'s code for @cfg->timer. Never
 * -errno. On failure nothing is left to destroy.
 */
int lapict_kvm_init(struct lapict_kvm *k, int vcpu_fd, struct kvm_run *run,
                    const struct lapict_kvm_config *cfg);

/**
 * lapict_kvm_destroy() - stop the timer thread, close the descriptors,
 * give back the kick signal.
 * @k: the LAPIC.
 *
 * Returns at once whatever the timer thread is doing. Waits for
 * lapict_kvm_kick() and lapict_kvm_stop() calls already in progress on
 * other threads; those that come later do nothing. @k's memory must stay
 * valid until no such call can start any more.
 *
 * Context: any thread but a signal handler, once the vCPU thread no
 * longer calls into @k.
 */
void lapict_kvm_destroy(struct lapict_kvm *k);

/**
 * lapict_kvm_pre_run() - hook: right before every KVM_RUN.
 * @k: the LAPIC.
 *
 * Serves a due host timer, hands a held timer interrupt back when the
 * window opened, injects the highest deliverable vector (or requests an
 * interrupt window), runs lapict_before_guest_entry(), writes CR8, and
 * arms the kick for the current host timer. Clears run->immediate_exit
 * first: a kick from then on makes the entry return at once.
 *
 * From here to lapict_kvm_handle_exit() the kick signal's handler may set
 * this vCPU's run->immediate_exit: after LAPICT_OK, call handle_exit
 * (with KVM_RUN's result, or -EINTR if the VMM did not enter after all)
 * before the vCPU thread leaves the instance.
 *
 * Return: LAPICT_OK (enter now), or LAPICT_E_SYSTEM (a system call failed
 * since the last report, lapict_kvm_errno(); e.g. the host timer could not
 * be armed: the guest's timer is kept and armed again at the next call).
 */
int lapict_kvm_pre_run(struct lapict_kvm *k);

/**
 * lapict_kvm_handle_exit() - hook: right after every KVM_RUN.
 * @k: the LAPIC.
 * @run_rc: what KVM_RUN gave: 0, or -errno (-EINTR/-EAGAIN: a kick).
 *
 * Takes APIC MMIO, the LAPIC's MSRs (IA32_APIC_BASE, IA32_TSC_DEADLINE,
 * x2APIC; #GP as run->msr.error), interrupt-window exits, kicks, and HLT.
 * MSR exits for other MSRs are the VMM's (see lapict_kvm_vm_setup()).
 *
 * Return: LAPICT_KVM_MINE (pre_run and enter again), LAPICT_KVM_NOT_MINE
 * (the VMM's exit; a HLT with IF clear is one: nothing can wake it),
 * LAPICT_KVM_HALTED (HLT with IF set and nothing deliverable: call
 * lapict_kvm_halt_wait(), or wait in the VMM's own loop until
 * lapict_kvm_next_deadline() or a platform interrupt), LAPICT_E_SYSTEM
 * (KVM_RUN failed, or a system call the exit needed: KVM_SET_MSRS, KVM_NMI,
 * arming the host timer; the guest's access itself is complete), or the
 * error an op of lapict_kvm_config.apic_ops returned for the exit (the
 * access is complete too).
 */
int lapict_kvm_handle_exit(struct lapict_kvm *k, int run_rc);

/**
 * lapict_kvm_next_deadline() - hook: when the host timer is due.
 * @k: the LAPIC.
 *
 * For a VMM that waits in its own loop (epoll timeout, its own timer that
 * calls lapict_kvm_kick()): the LAPIC needs the vCPU thread back in
 * lapict_kvm_pre_run() or lapict_kvm_halt_wait() by then.
 *
 * Context: any thread (a VMM's timer thread may watch it).
 * Return: CLOCK_MONOTONIC ns, 0 if no host timer is armed.
 */
uint64_t lapict_kvm_next_deadline(const struct lapict_kvm *k);

/**
 * lapict_kvm_halt_wait() - hook: the guest halted (LAPICT_KVM_HALTED).
 * @k: the LAPIC.
 *
 * Waits until an interrupt can be delivered, lapict_kvm_stop() or
 * lapict_kvm_kick() (a platform interrupt the VMM raised with
 * lapict_apic_set_irq() from another thread must kick): sleeps until
 * halt_poll_ns before the host timer, then spins to it, and serves it.
 *
 * Return: LAPICT_OK, or LAPICT_E_SYSTEM if the wait failed.
 */
int lapict_kvm_halt_wait(struct lapict_kvm *k);

/**
 * lapict_kvm_run() - a convenience vCPU loop built on the hooks.
 * @k: the LAPIC.
 *
 * pre_run, KVM_RUN, handle_exit, halt_wait, until an exit that is not the
 * LAPIC's: returns with run->exit_reason set for the VMM (I/O, other
 * MMIO and MSRs, shutdown, ...; KVM_EXIT_HLT when the guest halts with
 * interrupts disabled, KVM_EXIT_INTR after lapict_kvm_stop()).
 *
 * Return: 0, or a LAPICT_E_* code: LAPICT_E_SYSTEM when KVM_RUN or a
 * system call the loop needs failed (lapict_kvm_errno() has the errno); the
 * guest's timer is kept and the loop can be called again.
 */
int lapict_kvm_run(struct lapict_kvm *k);

/**
 * lapict_kvm_stop() - make lapict_kvm_run() / halt_wait() return.
 * @k: the LAPIC.
 *
 * Context: any thread. With kick_signal 0 a KVM_RUN in progress is not
 * interrupted: the caller sends its own signal to the vCPU thread after.
 * May race lapict_kvm_destroy(); after it, does nothing.
 */
void lapict_kvm_stop(struct lapict_kvm *k);

/**
 * lapict_kvm_kick() - the host timer may be due: make the vCPU look.
 * @k: the LAPIC.
 *
 * For callers that deliver kicks themselves (kick_signal 0): call it from
 * the signal handler (async-signal-safe) or thread that fires at
 * lapict_kvm_next_deadline(); the next entry exits at once
 * (immediate_exit) and lapict_kvm_halt_wait() wakes.
 *
 * Context: any thread, signal handlers included. May race
 * lapict_kvm_destroy() (which waits for it); after it, does nothing.
 */
void lapict_kvm_kick(struct lapict_kvm *k);

/**
 * lapict_kvm_poll() - serve the host timer if it is due.
 * @k: the LAPIC.
 *
 * Calls lapict_expire() if the host timer fired (its instant passed, or a
 * kick said so). lapict_kvm_pre_run() does this itself.
 *
 * Return: true if an expiry was processed.
 */
bool lapict_kvm_poll(struct lapict_kvm *k);

/**
 * lapict_kvm_guest_tsc() - the guest TSC now (host TSC plus the offset).
 * @k: the LAPIC.
 */
uint64_t lapict_kvm_guest_tsc(const struct lapict_kvm *k);

/**
 * lapict_kvm_errno() - errno of the adapter's last failed system call.
 * @k: the LAPIC.
 *
 * Every function of this adapter returns LAPICT_OK or a LAPICT_E_* code
 * (one error domain, lapict_strerror()); LAPICT_E_SYSTEM means a system
 * call failed, and this says which errno it gave.
 *
 * Return: the errno, 0 if none failed.
 */
int lapict_kvm_errno(const struct lapict_kvm *k);

/**
 * lapict_kvm_errcall() - name of the adapter's last failed system call,
 * or of the argument lapict_kvm_init() refused.
 * @k: the LAPIC.
 *
 * Return: e.g. "KVM_SET_MSRS", "timer_settime"; after lapict_kvm_init()
 * returned LAPICT_E_INVAL or LAPICT_E_OPS, a message naming the argument at
 * fault (e.g. "cfg->kick needs cfg->kick_signal ..."); "" if none failed.
 */
const char *lapict_kvm_errcall(const struct lapict_kvm *k);

/**
 * lapict_kvm_restore() - load a saved LAPIC into this (new) vCPU's.
 * @k: the LAPIC, initialised on the destination vCPU after its registers,
 * TSC and vCPU events were restored (lapict_kvm_init() reads the TSC
 * offset and the event state).
 * @apic: the model's blob (lapict_apic_save()); untrusted.
 * @apic_len: its length.
 * @timer: the timer's blob (lapict_state_save()); untrusted.
 * @timer_len: its length.
 * @halted: the vCPU was saved halted (a LAPICT_KVM_HALTED exit not yet
 * waited for): the timer is told so first (lapict_vcpu_blocking()).
 *
 * Both blobs are validated (each by its own rules, and against each
 * other: the SVR software-enable state is in both) before anything
 * changes. Afterwards the timer is treated as one whose interrupt the
 * host refused: its pending interrupts are offered (lapict_irq_window_open)
 * at the first moment the guest can take one, the next pre_run or, for a
 * halted vCPU (IF set), right here.
 *
 * Return: LAPICT_OK (call lapict_kvm_pre_run() and enter; a halted vCPU
 * with something to deliver is running again: lapict_vcpu_unblocked()),
 * LAPICT_KVM_HALTED (still halted, nothing deliverable: call
 * lapict_kvm_halt_wait()), or a LAPICT_E_STATE_* / LAPICT_E_INVAL code
 * with the state unchanged, or the base_changed op's error (KVM_SET_MSRS's
 * LAPICT_E_SYSTEM, or apic_ops') with the state restored.
 */
int lapict_kvm_restore(struct lapict_kvm *k, const void *apic, size_t apic_len,
                       const void *timer, size_t timer_len, bool halted);

/** lapict_kvm_ops - the host ops; ctx is a struct lapict_kvm *. */
extern const struct lapict_ops lapict_kvm_ops;

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_KVM_H */
