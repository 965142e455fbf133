/* SPDX-License-Identifier: MIT */
/*
 * Status codes. Every fallible call returns LAPICT_OK (0) or one of the
 * negative codes below; lapict_strerror() turns any of them into text.
 */
#ifndef LAPICT_STATUS_H
#define LAPICT_STATUS_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* LAPICT_OK or a negative error; lapict_strerror() names each. */
enum lapict_status {
    LAPICT_OK = 0,
    /*
     * Host misuse: NULL pointer, uninitialised (or finished) instance, bad
     * argument.
     */
    LAPICT_E_INVAL = -1,
    /* Ops table too old, or a mandatory op missing. */
    LAPICT_E_OPS = -2,
    /*
     * Configuration values outside the limits of docs/spec/timer.md
     * sections 1 and 7.
     */
    LAPICT_E_BUS_HZ = -3,
    /* tsc_khz out of range, or not stated while TSC-deadline is offered. */
    LAPICT_E_TSC_KHZ = -4,
    LAPICT_E_MIN_PERIOD = -5,
    LAPICT_E_ADVANCE = -6,
    LAPICT_E_MISSED = -7,
    /* The xAPIC offset or MSR is not a timer register: not ours to handle. */
    LAPICT_E_NOREG = -8,
    /* An x2APIC access the architecture answers with #GP(0). */
    LAPICT_E_GP = -9,
    /* LVTT written with the reserved timer mode 11 (previous mode kept). */
    LAPICT_E_MODE = -10,
    /* A timer expiry carried an illegal vector (0-15): not injected. */
    LAPICT_E_VECTOR = -11,
    /* Save/restore blob problems; the instance is left unchanged. */
    LAPICT_E_STATE_SIZE = -12,
    LAPICT_E_STATE_MAGIC = -13,
    LAPICT_E_STATE_VERSION = -14,
    LAPICT_E_STATE_CHECKSUM = -15,
    LAPICT_E_STATE_FIELD = -16,
    LAPICT_E_STATE_CONFIG = -17,
    /*
     * A host system call made by an adapter failed (never returned by the
     * core). Adapters return this code, not -errno, so that one function
     * never mixes two error domains; the adapter keeps the errno and the
     * name of the call (adapters/kvm: lapict_kvm_errno()).
     */
    LAPICT_E_SYSTEM = -18,
    /*
     * The timer state is more than a plain count-down (a TSC deadline
     * armed, an interrupt held pending, an expiry injected ahead):
     * lapict_countdown_get() described only part of it (countdown.h).
     */
    LAPICT_E_NOT_COUNTDOWN = -19,
    /*
     * A call for an instance made from inside one of that instance's own
     * ops (ops.h, "Re-entry"): refused, nothing changed; the host makes the
     * call afterwards, from its own loop.
     */
    LAPICT_E_REENTRY = -20,
    /*
     * Never returned: passed to the report op when a TSC deadline showed
     * that the guest TSC does not run at the configured tsc_khz (the
     * measured rate, kHz, as detail; docs/spec/timer.md section 4).
     */
    LAPICT_E_TSC_RATE = -21,
};

/* Lowest (most negative) status value, for table-driven tests. */
#define LAPICT_STATUS_MIN LAPICT_E_TSC_RATE

/**
 * lapict_strerror() - human-readable text for a status code.
 * @status: a value of enum lapict_status (any int is accepted).
 *
 * Context: any.
 * Return: a static NUL-terminated string; "unknown status" for values that
 * are not in the enum.
 */
LAPICT_API const char *lapict_strerror(int status);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_STATUS_H */
