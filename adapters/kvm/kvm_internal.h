/* SPDX-License-Identifier: MIT */
/* Cross-file helpers of the KVM adapter; not installed. */
#ifndef LAPICT_KVM_INTERNAL_H
#define LAPICT_KVM_INTERNAL_H

#include "lapict_kvm.h"

bool lapict_kvm__x2apic(const struct lapict_kvm *k);
void lapict_kvm__sync_tpr(struct lapict_kvm *k);
void lapict_kvm__reset(struct lapict_kvm *k);
bool lapict_kvm__can_deliver(struct lapict_kvm *k);
/* Give the core its held interrupt back if the guest can take it now. */
void lapict_kvm__window(struct lapict_kvm *k);
/* Queue @vector for the next entry (host.c: the cheapest path); 0 or -1. */
int lapict_kvm__inject_irq(struct lapict_kvm *k, int vector);

/* Record a failed system call (errno, @call): LAPICT_E_SYSTEM. */
int lapict_kvm__sys_fail(struct lapict_kvm *k, const char *call);
/* The failure to report now (and forget), or LAPICT_OK. */
int lapict_kvm__take_error(struct lapict_kvm *k);

#endif
