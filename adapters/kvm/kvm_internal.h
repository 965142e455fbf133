/* SPDX-License-Identifier: MIT */
/*
 * Cross-file parts of the KVM adapter; not installed. The files, each
 * calling only the ones below it:
 *
 *   init.c   an instance's life: init and destroy put the parts together
 *   vcpu.c   the hooks around KVM_RUN, exits, delivery, the model's ops
 *   host.c   lapict's host ops on Linux, serving the host timer, halting
 *   kick.c   the kick strategies (enum lapict_kvm_kick)
 *   signal.c the kick signal, and the calls other threads make
 *   sys.c    the system calls, and the record of the last one that failed
 */
#ifndef LAPICT_KVM_INTERNAL_H
#define LAPICT_KVM_INTERNAL_H

#include "lapict_kvm.h"

#include <time.h>
#include <x86intrin.h>

#define LAPICT_KVM__NS_PER_S 1000000000ull

/* --- sys.c --------------------------------------------------------------- */

/* Record a failed system call (errno, @call): LAPICT_E_SYSTEM. */
int lapict_kvm__sys_fail(struct lapict_kvm *k, const char *call);
/* The failure to report now (and forget), or LAPICT_OK. */
int lapict_kvm__take_error(struct lapict_kvm *k);

/* CLOCK_MONOTONIC, ns: the adapter's one clock. */
static inline uint64_t lapict_kvm__now_ns(const struct lapict_kvm *k)
{
    struct timespec ts;

    k->sys->clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * LAPICT_KVM__NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* The host timer fired: the VMM's hook, if any (async-signal-safe). */
static inline void lapict_kvm__fired(const struct lapict_kvm *k)
{
    if (k->fired)
        k->fired(k->fired_arg);
}

/* --- kick.c -------------------------------------------------------------- */

/*
 * A kick strategy: how the vCPU thread is got out of KVM_RUN when the host
 * timer is due. Every entry is called on the vCPU thread.
 */
struct lapict_kvm_kicker {
    /* At init (descriptors, timer, thread): LAPICT_OK or LAPICT_E_*. */
    int (*start)(struct lapict_kvm *k);
    /* At destroy: no kick of the strategy comes after it returns. */
    void (*end)(struct lapict_kvm *k);
    /* The host timer moved to target_ns (0: cancelled). */
    void (*arm)(struct lapict_kvm *k, uint64_t host_ns);
    /* Right before an entry: 1 enter, 0 due now (serve it first), or
     * LAPICT_E_* (the kick could not be armed: no entry). */
    int (*enter)(struct lapict_kvm *k);
    /* The vCPU halts: lapict_kvm_halt_wait() watches the clock itself. */
    void (*halt)(struct lapict_kvm *k);
    /* It wakes with the target unchanged since the halt began. */
    void (*unhalt)(struct lapict_kvm *k);
};

/* Start cfg->kick's strategy (after signal.c's part); LAPICT_E_*. */
int lapict_kvm__kick_start(struct lapict_kvm *k,
                           const struct lapict_kvm_config *cfg);
/* Undo lapict_kvm__kick_start() (also after it failed half way). */
void lapict_kvm__kick_end(struct lapict_kvm *k);

/* --- signal.c ------------------------------------------------------------ */

/* The wake eventfd, and the kick signal if cfg.kick_signal: LAPICT_E_*. */
int lapict_kvm__signal_start(struct lapict_kvm *k);
/* Undo it, once no call from another thread uses the instance any more. */
void lapict_kvm__signal_end(struct lapict_kvm *k);
/* What every kick signal carries (sigev_value, sigqueue): its address. */
extern const char lapict_kvm__kick_tag;
/* The vCPU this thread runs from pre_run to handle_exit (NULL: none): the
 * one the kick timer's signal makes exit. */
void lapict_kvm__running(struct lapict_kvm *k);
/* Make the next or current entry exit, unless halted (async-signal-safe). */
void lapict_kvm__exit_entry(struct lapict_kvm *k);
/* Send the kick signal to the vCPU thread (after lapict_kvm__exit_entry). */
void lapict_kvm__kick_vcpu(struct lapict_kvm *k);
/* Wake lapict_kvm_halt_wait(). */
void lapict_kvm__wake(struct lapict_kvm *k);

/* --- host.c -------------------------------------------------------------- */

/* Serve the host timer if it is due: true if it was. */
bool lapict_kvm__poll_expiry(struct lapict_kvm *k);

/* --- vcpu.c -------------------------------------------------------------- */

/* The model's ops on KVM (KVM_NMI, KVM_SET_MSRS, EOI window), each then
 * calling the VMM's (lapict_kvm_config.apic_ops); _ipi also hands IPIs to
 * the VMM's ipi op, for a VMM that has one (without, the model counts
 * them unrouted). */
extern const struct lapict_apic_ops lapict_kvm__apic_ops;
extern const struct lapict_apic_ops lapict_kvm__apic_ops_ipi;
/* Per-vCPU KVM setup at init: the TSC offset, sync regs. LAPICT_E_*. */
int lapict_kvm__vcpu_setup(struct lapict_kvm *k);
/* Give the core its held interrupt back if the guest can take it now. */
void lapict_kvm__window(struct lapict_kvm *k);
/* Inject the highest deliverable vector, or request a window; or -1. */
int lapict_kvm__deliver(struct lapict_kvm *k);

#endif
