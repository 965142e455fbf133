/* SPDX-License-Identifier: MIT */
/*
 * The system calls of the KVM adapter, in one table (as SQLite's os_unix.c
 * keeps aSyscall[]): every ioctl, timer and wait call of the adapter goes
 * through lapict_kvm_sys_linux, or through the table a test puts in
 * lapict_kvm_config.sys to fake a vCPU or make a call fail.
 */
#define _GNU_SOURCE
#include "lapict_kvm.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int sys_ioctl(int fd, unsigned long req, void *arg)
{
    return ioctl(fd, req, arg);
}

static int sys_timerfd_settime(int fd, int flags, const struct itimerspec *v)
{
    return timerfd_settime(fd, flags, v, NULL);
}

/* Raw syscalls: the kernel timer id is a plain int (no timer_t, -lrt). */
static int sys_timer_create(int clk, struct sigevent *sev, int *id)
{
    return (int)syscall(SYS_timer_create, clk, sev, id);
}

static int sys_timer_settime(int id, int flags, const struct itimerspec *v)
{
    return (int)syscall(SYS_timer_settime, id, flags, v, NULL);
}

static int sys_timer_delete(int id)
{
    return (int)syscall(SYS_timer_delete, id);
}

static int sys_ppoll(struct pollfd *fds, unsigned long n,
                    const struct timespec *ts)
{
    return ppoll(fds, n, ts, NULL);
}

static int sys_sigaction(int sig, const struct sigaction *sa,
                         struct sigaction *old)
{
    return sigaction(sig, sa, old);
}

static int sys_clock_gettime(int clk, struct timespec *ts)
{
    return clock_gettime((clockid_t)clk, ts);
}

const struct lapict_kvm_sys lapict_kvm_sys_linux = {
    .ioctl = sys_ioctl,
    .timerfd_settime = sys_timerfd_settime,
    .timer_create = sys_timer_create,
    .timer_settime = sys_timer_settime,
    .timer_delete = sys_timer_delete,
    .ppoll = sys_ppoll,
    .sigaction = sys_sigaction,
    .clock_gettime = sys_clock_gettime,
};
