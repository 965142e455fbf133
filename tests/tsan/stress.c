/* SPDX-License-Identifier: MIT */
/*
 * ThreadSanitizer stress of the KVM adapter's hand-off between the host
 * timer (the kick timer's signal, or the timer thread) and the vCPU thread
 * (docs/spec/timer.md "Concurrency"), without KVM: the adapter's real run loop
 * (lapict_kvm_run: halt polling and sleeping, kicks, immediate_exit,
 * interrupt windows, lapict_before_guest_entry) drives a fake vCPU
 * (tests/adapters/kvm_fake.c on the adapter's syscall seam) whose
 * KVM_RUN is fake_run() below. The fake guest arms many short TSC
 * deadlines (some already past), takes each interrupt in an ISR that
 * exits for EOI and the next deadline with IF clear, and in between either
 * halts or runs with IF set until kicked. A watchdog thread stops the vCPU
 * with lapict_kvm_stop() from outside if progress stalls (a lost
 * interrupt) and always at the end, while the guest idles in HLT.
 *
 * Rules checked: every deadline write produces exactly one interrupt (none
 * lost, none doubled), never before the deadline in guest TSC ("TSC-
 * Deadline Mode"); TSan reports no data race (run with halt_on_error).
 *
 * --kick=caller: the adapter takes no signal (kick_signal 0); a thread of
 * this program plays the VMM that kicks by itself: it watches
 * lapict_kvm_next_deadline() and calls lapict_kvm_kick() once it passed.
 *
 * usage: tsan_stress [--kick=signal|thread|none|caller]
 *                    [--advance=off|adaptive]
 *                    [--deadlines=N] [--seed=S]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "kvm_fake.h"
#include "lapict_kvm.h"

#define VEC 0x40u
#define APIC 0xFEE00000ull
#define PORT_IDLE 0x80u

enum phase { P_SETUP, P_EOI, P_DEADLINE, P_RUN, P_IDLE };

struct fake {
    uint64_t seed, want, tsc_khz;
    uint64_t deadline; /* outstanding deadline, guest TSC */
    bool outstanding;
    enum phase phase;
    uint64_t seen_injections; /* lt_fake.injections already taken */
    uint64_t written, got, early, doubled, halts, spins, kicked;
    uint64_t early_max; /* TSC ticks the earliest interrupt came early */
    int setup_step;
    atomic_uint_fast64_t progress; /* interrupts taken: read by watchdog */
    atomic_int done;
    struct lapict_kvm *k;
};

static uint64_t rnd(struct fake *f)
{
    /* xorshift64* */
    f->seed ^= f->seed >> 12;
    f->seed ^= f->seed << 25;
    f->seed ^= f->seed >> 27;
    return f->seed * 0x2545F4914F6CDD1Dull;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The TSC and the clock at one instant: the TSC in the middle of the
 * tightest of a few (TSC, clock, TSC) brackets. A bracket the thread was
 * preempted in is wide and loses, so a busy host does not skew the rate
 * (a rate too high would show as early interrupts).
 */
static void tsc_and_ns(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;

    for (int i = 0; i < 16; i++) {
        uint64_t a = __rdtsc(), t = mono_ns(), b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = t;
        }
    }
}

static uint64_t calibrate_khz(void)
{
    uint64_t t0, c0, t1, c1;
    struct timespec d = {0, 100000000};

    tsc_and_ns(&c0, &t0);
    while (nanosleep(&d, &d) == -1 && errno == EINTR)
        ;
    tsc_and_ns(&c1, &t1);
    return (c1 - c0) * 1000000ull / (t1 - t0);
}

static void mmio_exit(struct kvm_run *r, uint32_t off, uint32_t val)
{
    r->exit_reason = KVM_EXIT_MMIO;
    r->mmio.phys_addr = APIC + off;
    r->mmio.len = 4;
    r->mmio.is_write = 1;
    memcpy(r->mmio.data, &val, 4);
}

/* The guest state seen by KVM after an exit: IF and the injection window. */
static void guest_if(struct kvm_run *r, bool on)
{
    r->if_flag = on;
    r->ready_for_interrupt_injection = on;
    lt_fake.if_flag = on; /* RFLAGS.IF as KVM_GET_REGS reads it */
}

/* KVM_RUN for the fake vCPU: same return contract (0, or -1 with errno). */
static int fake_run(void *arg)
{
    struct fake *f = arg;
    struct kvm_run *r = f->k->run;
    uint64_t until;

    if (__atomic_load_n(&r->immediate_exit, __ATOMIC_SEQ_CST)) {
        errno = EINTR;
        return -1;
    }
    /* An injection queued for this entry is taken before any instruction. */
    if (lt_fake.injections != f->seen_injections) {
        uint64_t n = lt_fake.injections - f->seen_injections;
        f->seen_injections = lt_fake.injections;
        if (n > 1 || !f->outstanding || lt_fake.last_vector != (int)VEC)
            f->doubled += n > 1 ? n - 1 : 1;
        if (f->outstanding && __rdtsc() < f->deadline) {
            uint64_t by = f->deadline - __rdtsc();
            f->early++;
            if (by > f->early_max)
                f->early_max = by;
        }
        f->outstanding = false;
        f->got++;
        atomic_store(&f->progress, f->got);
        /* ISR: EOI with IF clear; the next deadline follows. */
        guest_if(r, false);
        mmio_exit(r, 0xB0, 0);
        f->phase = P_DEADLINE;
        return 0;
    }
    switch (f->phase) {
    case P_SETUP:
        guest_if(r, false);
        if (f->setup_step++ == 0) {
            mmio_exit(r, 0xF0, 0x1FF); /* SVR: enabled, spurious 0xFF */
        } else {
            mmio_exit(r, 0x320, 0x40000u | VEC); /* LVTT: TSC deadline */
            f->phase = P_DEADLINE;
        }
        return 0;
    case P_DEADLINE: {
        uint64_t now = __rdtsc(), d, ns;
        if (f->written >= f->want) {
            atomic_store(&f->done, 1); /* the watchdog stops the idle vCPU */
            f->phase = P_IDLE;
            guest_if(r, true);
            r->exit_reason = KVM_EXIT_HLT; /* idle: only a stop wakes it */
            return 0;
        }
        /* 0-150 us ahead, 1 in 16 already past, 1 in 16 at once. */
        switch (rnd(f) & 15) {
        case 0:
            d = now - (rnd(f) & 0xFFFF);
            break;
        case 1:
            d = now;
            break;
        default:
            ns = rnd(f) % 150000u;
            d = now + ns * f->tsc_khz / 1000000u;
            break;
        }
        f->deadline = d ? d : 1;
        f->outstanding = true;
        f->written++;
        r->exit_reason = KVM_EXIT_X86_WRMSR;
        r->msr.index = LAPICT_MSR_TSC_DEADLINE;
        r->msr.data = f->deadline;
        r->msr.error = 0;
        guest_if(r, false);
        f->phase = P_RUN;
        return 0;
    }
    case P_RUN:
        guest_if(r, true); /* iret: IF set from here */
        if (r->request_interrupt_window) {
            r->exit_reason = KVM_EXIT_IRQ_WINDOW_OPEN;
            return 0;
        }
        if (!f->outstanding || (rnd(f) & 1)) {
            f->halts++;
            r->exit_reason = KVM_EXIT_HLT;
            return 0;
        }
        /* Spin with IF set for up to 300 us, or until kicked. */
        f->spins++;
        until = mono_ns() + rnd(f) % 300000u;
        while (mono_ns() < until) {
            if (__atomic_load_n(&r->immediate_exit, __ATOMIC_SEQ_CST)) {
                f->kicked++;
                errno = EINTR;
                return -1;
            }
            _mm_pause();
        }
        r->exit_reason = KVM_EXIT_IO; /* a VMM exit: the caller resumes */
        r->io.port = PORT_IDLE;
        return 0;
    case P_IDLE:
    default:
        guest_if(r, true);
        r->exit_reason = KVM_EXIT_HLT;
        return 0;
    }
}

struct watch {
    struct lapict_kvm *k;
    struct fake *f;
    bool stalled;
    atomic_int quit; /* the kicker ends */
};

/* --kick=caller: the VMM's own kick, once per deadline that passed. */
static void *kicker(void *arg)
{
    struct watch *w = arg;
    struct timespec d = {0, 20000};
    uint64_t kicked = 0;

    while (!atomic_load(&w->quit)) {
        uint64_t t = lapict_kvm_next_deadline(w->k);
        if (t && t != kicked && mono_ns() >= t) {
            lapict_kvm_kick(w->k);
            kicked = t;
        }
        nanosleep(&d, NULL);
    }
    return NULL;
}

/*
 * No interrupt for this long is a stall (a lost interrupt stalls for
 * good): far beyond what valgrind or a CPU hog adds between two of them.
 */
#define STALL_NS 30000000000ull

/* Stop the vCPU from another thread: at the end, or after a stall. */
static void *watchdog(void *arg)
{
    struct watch *w = arg;
    uint64_t last = 0, since = mono_ns();
    struct timespec d = {0, 2000000};

    for (;;) {
        uint64_t p = atomic_load(&w->f->progress);
        nanosleep(&d, NULL);
        if (atomic_load(&w->f->done))
            break;
        if (p != last) {
            last = p;
            since = mono_ns();
        } else if (mono_ns() - since > STALL_NS) {
            w->stalled = true;
            break;
        }
    }
    lapict_kvm_stop(w->k);
    return NULL;
}

int main(int argc, char **argv)
{
    struct lapict_kvm_config cfg =
        lt_fake_config(LAPICT_KVM_KICK_TIMER, SIGUSR1);
    static struct kvm_run run;
    struct lapict_kvm k;
    struct fake f;
    struct watch w;
    pthread_t wt, kt;
    bool caller = false;
    const char *kick = "signal";
    int rc;

    cfg.timer.advance_max_ns = 60000;
    memset(&f, 0, sizeof(f));
    f.want = 3000;
    f.seed = 0x9E3779B97F4A7C15ull;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--kick=", 7))
            kick = argv[i] + 7;
        else if (!strcmp(argv[i], "--advance=adaptive"))
            cfg.timer.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
        else if (!strcmp(argv[i], "--advance=off"))
            cfg.timer.advance_mode = LAPICT_ADVANCE_OFF;
        else if (!strncmp(argv[i], "--deadlines=", 12))
            f.want = strtoull(argv[i] + 12, NULL, 0);
        else if (!strncmp(argv[i], "--seed=", 7))
            f.seed = strtoull(argv[i] + 7, NULL, 0) | 1u;
        else {
            fprintf(stderr, "tsan_stress: bad argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!strcmp(kick, "thread"))
        cfg.kick = LAPICT_KVM_KICK_THREAD;
    else if (!strcmp(kick, "none"))
        cfg.kick = LAPICT_KVM_KICK_CALLER; /* the owner polls: no kicks */
    else if (!strcmp(kick, "caller")) {
        cfg.kick = LAPICT_KVM_KICK_CALLER;
        cfg.kick_signal = 0; /* nothing process-wide is the adapter's */
        caller = true;
    } else if (strcmp(kick, "signal"))
        return 2;
    f.tsc_khz = calibrate_khz();
    cfg.timer.tsc_khz = (uint32_t)f.tsc_khz;
    atomic_init(&f.progress, 0);
    atomic_init(&f.done, 0);

    lt_fake_reset();
    f.k = &k;
    lt_fake.run = fake_run;
    lt_fake.run_arg = &f;
    rc = lapict_kvm_init(&k, LT_FAKE_VCPU_FD, &run, &cfg);
    if (rc) {
        fprintf(stderr, "tsan_stress: lapict_kvm_init: %d\n", rc);
        return 2;
    }
    w = (struct watch){.k = &k, .f = &f};
    atomic_init(&w.quit, 0);
    if (pthread_create(&wt, NULL, watchdog, &w))
        return 2;
    if (caller && pthread_create(&kt, NULL, kicker, &w))
        return 2;
    /*
     * The fake vCPU's guest TSC is the host TSC of the CPU its thread is
     * on. Where the CPUs' TSCs disagree (nested hosts), a thread that
     * moves sees its clock step back, and an interrupt on time reads as
     * early: the vCPU thread stays on one CPU, as KVM gives a vCPU one
     * TSC. The threads started above (the timer thread too) run anywhere.
     */
    {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one))
            return 2;
    }

    for (;;) {
        rc = lapict_kvm_run(&k);
        if (rc < 0) {
            fprintf(stderr, "tsan_stress: run: %s (%s: %s)\n",
                    lapict_strerror(rc), lapict_kvm_errcall(&k),
                    strerror(lapict_kvm_errno(&k)));
            break;
        }
        if (run.exit_reason == KVM_EXIT_INTR)
            break; /* lapict_kvm_stop() */
    }
    pthread_join(wt, NULL);
    atomic_store(&w.quit, 1);
    if (caller)
        pthread_join(kt, NULL);
    lapict_kvm_destroy(&k);

    printf("tsan_stress kick=%s advance=%s deadlines=%llu interrupts=%llu "
           "early=%llu doubled=%llu halts=%llu spins=%llu kicked=%llu "
           "stalled=%d tsc_khz=%llu\n",
           kick, cfg.timer.advance_mode ? "adaptive" : "off",
           (unsigned long long)f.written, (unsigned long long)f.got,
           (unsigned long long)f.early, (unsigned long long)f.doubled,
           (unsigned long long)f.halts, (unsigned long long)f.spins,
           (unsigned long long)f.kicked, w.stalled,
           (unsigned long long)f.tsc_khz);
    if (w.stalled || f.got != f.written || f.written != f.want || f.early ||
        f.doubled) {
        printf("FAIL: lost=%lld early=%llu (by up to %llu TSC ticks) "
               "doubled=%llu stalled=%d\n",
               (long long)(f.written - f.got), (unsigned long long)f.early,
               (unsigned long long)f.early_max, (unsigned long long)f.doubled,
               w.stalled);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
