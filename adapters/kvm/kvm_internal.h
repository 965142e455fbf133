/* SPDX-License-Identifier: MIT */
/* Cross-file helpers of the KVM adapter (host.c, vcpu.c); not installed. */
#ifndef LAPICT_KVM_INTERNAL_H
#define LAPICT_KVM_INTERNAL_H

#include "lapict_kvm.h"

/* vcpu.c: the model's ops on KVM (KVM_NMI, KVM_SET_MSRS, EOI window). */
extern const struct lapict_apic_ops lapict_kvm__apic_ops;
/* Give the core its held interrupt back if the guest can take it now. */
void lapict_kvm__window(struct lapict_kvm *k);
/* Inject the highest deliverable vector, or request a window; or -1. */
int lapict_kvm__deliver(struct lapict_kvm *k);
/* Queue @vector for the next entry (the cheapest path); 0 or -1. */
int lapict_kvm__inject_irq(struct lapict_kvm *k, int vector);
/* Per-vCPU KVM setup at init: the TSC offset, sync regs. LAPICT_E_*. */
int lapict_kvm__vcpu_setup(struct lapict_kvm *k);
/* After a kick: RFLAGS.IF as it is now. */
void lapict_kvm__refresh_if(struct lapict_kvm *k);

/* host.c: the host timer and the kick. */
/* Serve the host timer if due (and read the timerfd if @read_fd). */
bool lapict_kvm__poll_expiry(struct lapict_kvm *k, bool read_fd);
/* Arm the kick for the current target: 1 enter, 0 due now, LAPICT_E_*. */
int lapict_kvm__kick_sync(struct lapict_kvm *k);

/* Record a failed system call (errno, @call): LAPICT_E_SYSTEM. */
int lapict_kvm__sys_fail(struct lapict_kvm *k, const char *call);
/* The failure to report now (and forget), or LAPICT_OK. */
int lapict_kvm__take_error(struct lapict_kvm *k);

#endif
