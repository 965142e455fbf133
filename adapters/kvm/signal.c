/* SPDX-License-Identifier: MIT */
/*
 * The kick signal: the one piece of process-wide state the adapter takes,
 * and only when the caller names a signal (lapict_kvm_config.kick_signal).
 * Here: its handler, taking and giving back the signal, the thread-local
 * vCPU the kick timer's signal is for, and the calls other threads make
 * into an instance (lapict_kvm_kick(), lapict_kvm_stop()).
 */
#define _GNU_SOURCE
#include "kvm_internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>

/*
 * The kick signal's handler is process-wide, as every signal handler is:
 * the one the caller had before is saved when the first instance takes the
 * signal, called for signals that are not kicks, and put back when the
 * last instance lets go (libuv's uv_signal does the same); SIG_SLOTS
 * distinct kick signals at most.
 *
 * Each kick carries lapict_kvm__kick_tag (sigev_value / sigqueue), never
 * an instance: a kick can still be pending when its instance is destroyed
 * (by another thread, say) and its memory gone. Only the kernel's kick timer
 * needs the handler to act (the timer thread, lapict_kvm_kick() and
 * lapict_kvm_stop() write immediate_exit themselves before they signal):
 * its instance is the one this thread has between lapict_kvm_pre_run() and
 * lapict_kvm_handle_exit(), a thread-local set and cleared by the vCPU
 * thread itself, so none is left once the thread no longer calls into it.
 */
#define SIG_SLOTS 8

static struct sig_slot {
    int sig;   /* atomic: published (release) once old is stored */
    int users; /* under slots_lock */
    struct sigaction old;
} slots[SIG_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* What every kick signal carries: its address (kvm_internal.h). */
const char lapict_kvm__kick_tag = 0;

/* The vCPU this thread runs, between pre_run and handle_exit. Initial-exec:
 * a signal handler must not allocate the variable on first use. */
static __thread struct lapict_kvm *running
    __attribute__((tls_model("initial-exec")));

void lapict_kvm__running(struct lapict_kvm *k)
{
    /* Read by a handler on this thread only: program order suffices. */
    __atomic_store_n(&running, k, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Pin @k for a call from another thread (its memory is the caller's to
 * keep valid): false once destroy began. unpin() after. A
 * Dekker handshake with destroy (seq_cst on both sides): either the call
 * sees alive cleared, or destroy sees the pin and waits for it. */
static bool pin(struct lapict_kvm *k)
{
    __atomic_fetch_add(&k->pins, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&k->alive, __ATOMIC_SEQ_CST))
        return true;
    __atomic_fetch_sub(&k->pins, 1, __ATOMIC_SEQ_CST);
    return false;
}

static void unpin(struct lapict_kvm *k)
{
    __atomic_fetch_sub(&k->pins, 1, __ATOMIC_SEQ_CST);
}

/* Async-signal-safe: make the next or current entry exit. halt_wait()
 * needs no exit, it watches the flags. */
void lapict_kvm__exit_entry(struct lapict_kvm *k)
{
    if (!__atomic_load_n(&k->in_halt, __ATOMIC_SEQ_CST))
        __atomic_store_n(&k->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
}

/* A signal that is not a kick: the handler the caller had before. */
static void chain(int sig, siginfo_t *si, void *uc)
{
    for (int i = 0; i < SIG_SLOTS; i++) {
        const struct sigaction *o = &slots[i].old;
        if (__atomic_load_n(&slots[i].sig, __ATOMIC_ACQUIRE) != sig)
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
    struct lapict_kvm *k;
    int saved = errno;

    if (!si || (si->si_code != SI_TIMER && si->si_code != SI_QUEUE) ||
        si->si_value.sival_ptr != &lapict_kvm__kick_tag) {
        chain(sig, si, uc);
    } else if (si->si_code == SI_TIMER &&
               (k = __atomic_load_n(&running, __ATOMIC_RELAXED))) {
        /* The kick timer: the host timer fired, and the entry exits. */
        lapict_kvm__fired(k);
        lapict_kvm__exit_entry(k);
    }
    errno = saved;
}

/* Kick the vCPU thread with the kick signal (after exit_entry()). */
void lapict_kvm__kick_vcpu(struct lapict_kvm *k)
{
    if (k->kick_signal)
        k->sys->pthread_sigqueue(k->vcpu_thread, k->kick_signal,
                                 (void *)&lapict_kvm__kick_tag);
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
        int sig = __atomic_load_n(&slots[i].sig, __ATOMIC_RELAXED);
        if (sig == k->kick_signal) {
            slots[i].users++;
            goto out;
        }
        if (!sig && !free_slot)
            free_slot = &slots[i];
    }
    if (!free_slot) {
        /* More distinct kick signals than slots. */
        k->sys_call = "cfg->kick_signal: the process already has the most "
                      "distinct kick signals the adapter handles";
        k->sys_errno = EINVAL;
        rc = LAPICT_E_INVAL;
        goto out;
    }
    if (k->sys->sigaction(k->kick_signal, &sa, &free_slot->old) < 0) {
        rc = lapict_kvm__sys_fail(k, "sigaction");
        goto out;
    }
    free_slot->users = 1;
    __atomic_store_n(&free_slot->sig, k->kick_signal, __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&slots_lock);
    return rc;
}

static void release_signal(struct lapict_kvm *k)
{
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < SIG_SLOTS; i++) {
        if (__atomic_load_n(&slots[i].sig, __ATOMIC_RELAXED) != k->kick_signal)
            continue;
        if (--slots[i].users == 0) {
            /* Restored first: no kick handler runs on a freed slot. */
            if (k->sys->sigaction(k->kick_signal, &slots[i].old, NULL) < 0)
                lapict_kvm__sys_fail(k, "sigaction");
            __atomic_store_n(&slots[i].sig, 0, __ATOMIC_RELEASE);
        }
        break;
    }
    pthread_mutex_unlock(&slots_lock);
}

/* A wake for halt_wait(); a full counter fails: a wake is pending anyway. */
void lapict_kvm__wake(struct lapict_kvm *k)
{
    uint64_t one = 1;

    (void)k->sys->write(k->wake_fd, &one, sizeof(one));
}

void lapict_kvm_kick(struct lapict_kvm *k)
{
    if (!pin(k))
        return; /* destroyed: nothing of it is left to kick */
    lapict_kvm__fired(k);
    __atomic_store_n(&k->expired, 1, __ATOMIC_SEQ_CST);
    lapict_kvm__exit_entry(k);
    lapict_kvm__wake(k);
    unpin(k);
}

void lapict_kvm_stop(struct lapict_kvm *k)
{
    uint64_t one = 1;

    if (!pin(k))
        return; /* destroyed: nothing runs any more */
    __atomic_store_n(&k->stop, 1, __ATOMIC_SEQ_CST);
    if (k->sys->write(k->wake_fd, &one, sizeof(one)) == (long)sizeof(one)) {
        __atomic_store_n(&k->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
        lapict_kvm__kick_vcpu(k);
    }
    unpin(k);
}

int lapict_kvm__signal_start(struct lapict_kvm *k)
{
    int rc;

    k->wake_fd = k->sys->eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (k->wake_fd < 0)
        return lapict_kvm__sys_fail(k, "eventfd");
    __atomic_store_n(&k->alive, 1, __ATOMIC_SEQ_CST);
    if (k->kick_signal) {
        if ((rc = take_signal(k)) < 0)
            return rc;
        k->signal_taken = true;
    }
    return LAPICT_OK;
}

void lapict_kvm__signal_end(struct lapict_kvm *k)
{
    /* No call from another thread starts after this, and those in
     * progress end before their descriptors are closed (each is short). */
    __atomic_store_n(&k->alive, 0, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&k->pins, __ATOMIC_SEQ_CST))
        sched_yield();
    /* This thread's kick timer signal finds no instance any more. */
    if (__atomic_load_n(&running, __ATOMIC_RELAXED) == k)
        lapict_kvm__running(NULL);
    if (k->signal_taken)
        release_signal(k);
    k->signal_taken = false;
    if (k->wake_fd >= 0)
        k->sys->close(k->wake_fd);
    k->wake_fd = -1;
}
