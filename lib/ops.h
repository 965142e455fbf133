/* SPDX-License-Identifier: MIT */
/*
 * The core's calls to the host (ops.c), the one file that calls through the
 * host's ops table (<lapict/ops.h>): it knows which ops are optional, keeps
 * at most one host timer armed, and marks the instance while an op runs so
 * that a call back into the library is refused. Not installed.
 */
#ifndef LAPICT__OPS_H
#define LAPICT__OPS_H

#include "internal.h"

/* Whether @ops has a version and every mandatory op (lapict_init()). */
bool lapict__ops_ok(const struct lapict_ops *ops);

/* The host clock, ns. */
uint64_t lapict__host_now(const struct lapict_timer *t);
/* The guest TSC now. */
uint64_t lapict__host_tsc(const struct lapict_timer *t);
/* Whether the host maps guest TSC values to its instants (optional op). */
bool lapict__host_maps_tsc(const struct lapict_timer *t);
/*
 * The host instant at which the guest TSC reads @tsc, in @host_ns; false
 * (nothing written) when the host has no such op.
 */
bool lapict__host_tsc_to_ns(const struct lapict_timer *t, uint64_t tsc,
                            uint64_t *host_ns);

/* Offer interrupt @vector; counts injections and refusals. */
bool lapict__host_inject(struct lapict_timer *t, uint8_t vector);
/* Whether the host can wait before guest entry (spin op): else no advance. */
bool lapict__host_can_spin(const struct lapict_timer *t);
/* Wait until @host_ns (nothing without a spin op); counts the wait asked. */
void lapict__host_spin_until(struct lapict_timer *t, uint64_t host_ns);
/* Tell the host of @status (optional op). */
void lapict__host_report(struct lapict_timer *t, int status, uint32_t detail);

/*
 * Arm the host timer for @target (hardware if allowed, else software).
 * @fired: the host timer that called into the library has fired, so it is
 * armed again even for the same target (lapict_expire()).
 */
void lapict__host_arm(struct lapict_timer *t, uint64_t target, bool fired);
/* Cancel whichever host timer is armed. */
void lapict__host_cancel(struct lapict_timer *t);
/* Move the armed timer to match the blocked state. */
void lapict__host_move(struct lapict_timer *t);

#endif /* LAPICT__OPS_H */
