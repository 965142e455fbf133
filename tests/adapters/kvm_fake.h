/* SPDX-License-Identifier: MIT */
/*
 * A fake vCPU for the KVM adapter's tests, on the adapter's syscall seam
 * (lapict_kvm_config.sys): the vCPU ioctls are answered here (KVM_RUN by
 * a test's callback, injections and NMIs recorded), every other call goes
 * to the real one, and any call can be made to fail with a chosen errno.
 * One fake per process (the table has no context, as SQLite's aSyscall[]).
 */
#ifndef LAPICT_TEST_KVM_FAKE_H
#define LAPICT_TEST_KVM_FAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "lapict_kvm.h"

/* The vCPU descriptor the fake answers for (never a real descriptor). */
#define LT_FAKE_VCPU_FD 100000

/* Calls that can be made to fail (bits of lt_fake.fail). */
enum lt_fake_call {
    LT_FAIL_TIMERFD_SETTIME = 1u << 0,
    LT_FAIL_TIMER_CREATE = 1u << 1,
    LT_FAIL_TIMER_SETTIME = 1u << 2,
    LT_FAIL_PPOLL = 1u << 3,
    LT_FAIL_SIGACTION = 1u << 4,
    LT_FAIL_SET_MSRS = 1u << 5,
    LT_FAIL_NMI = 1u << 6,
    LT_FAIL_INTERRUPT = 1u << 7,
    LT_FAIL_RUN = 1u << 8,
    LT_FAIL_TIMERFD_CREATE = 1u << 9,
    LT_FAIL_EVENTFD = 1u << 10,
    LT_FAIL_PTHREAD_CREATE = 1u << 11,
    LT_FAIL_TIMERSLACK = 1u << 12,
};

struct lt_fake {
    /* Set by the test. */
    unsigned fail;         /* lt_fake_call bits: the call returns -1 */
    int fail_errno;        /* with this errno (0: EIO) */
    int (*run)(void *arg); /* KVM_RUN (NULL: -1, EINTR) */
    void *run_arg;
    bool if_flag; /* IF as KVM_GET_REGS reports it */
    /* Recorded. */
    int last_vector;        /* last KVM_INTERRUPT, -1: none */
    uint64_t injections;    /* KVM_INTERRUPT calls that succeeded */
    uint64_t nmis;          /* KVM_NMI calls that succeeded */
    uint64_t set_msrs;      /* KVM_SET_MSRS calls that succeeded */
    uint64_t apic_base;     /* the last IA32_APIC_BASE written to KVM */
    unsigned failed;        /* lt_fake_call bits of calls that did fail */
    uint64_t ppolls;        /* ppoll calls */
    uint64_t ppoll_returns; /* ppoll calls that returned (atomic) */
    /*
     * Set by the test: called on the polling thread each time a real ppoll
     * returns, before the caller looks at what woke it. On the timer
     * thread this is the vCPU acting between the thread's wake and its
     * next step, at a chosen point rather than by luck of scheduling.
     */
    void (*after_ppoll)(void *arg);
    void *after_ppoll_arg;
    /* Set by the test: the next clock read waits this many ns before it
     * reads the clock (then 0), as a thread preempted just before it. */
    uint64_t clock_stall_ns;
};

extern struct lt_fake lt_fake;
extern const struct lapict_kvm_sys lt_fake_sys;

/* Resets lt_fake to no failures, nothing recorded. */
void lt_fake_reset(void);

/* The adapter's defaults on this fake: a 1 GHz guest TSC, lt_fake_sys,
 * the kick strategy @kick (LAPICT_KVM_KICK_*) on @sig (0: none). */
struct lapict_kvm_config lt_fake_config(uint32_t kick, int sig);

#endif
