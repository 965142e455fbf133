/* SPDX-License-Identifier: MIT */
/*
 * The system calls of the KVM adapter, in one table (as SQLite's os_unix.c
 * keeps aSyscall[]): every call the adapter makes to the kernel goes
 * through lapict_kvm_sys_linux, or through the table a test puts in
 * lapict_kvm_config.sys to fake a vCPU or make a call fail. Here too: the
 * record of the last call that failed, which the adapter reports in
 * lapict's one error domain (LAPICT_E_SYSTEM, lapict_kvm_errno()).
 */
#define _GNU_SOURCE
#include "kvm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int sys_ioctl(int fd, unsigned long req, void *arg)
{
    return ioctl(fd, req, arg);
}

static int sys_open(const char *path, int flags)
{
    return open(path, flags);
}

static int sys_close(int fd)
{
    return close(fd);
}

static long sys_read(int fd, void *buf, size_t n)
{
    return (long)read(fd, buf, n);
}

static long sys_write(int fd, const void *buf, size_t n)
{
    return (long)write(fd, buf, n);
}

static int sys_clock_gettime(int clk, struct timespec *ts)
{
    return clock_gettime((clockid_t)clk, ts);
}

static int sys_timerfd_create(int clk, int flags)
{
    return timerfd_create(clk, flags);
}

static int sys_timerfd_settime(int fd, int flags, const struct itimerspec *v)
{
    return timerfd_settime(fd, flags, v, NULL);
}

static int sys_eventfd(unsigned int initval, int flags)
{
    return eventfd(initval, flags);
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

/* Async-signal-safe (a kick may be sent from a signal handler). */
static int sys_pthread_sigqueue(pthread_t thread, int sig, void *value)
{
    union sigval v = {.sival_ptr = value};
    int rc = pthread_sigqueue(thread, sig, v);

    if (rc) {
        errno = rc;
        return -1;
    }
    return 0;
}

static int sys_pthread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int rc;

    /* The thread takes no signals: kicks are for the vCPU thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        errno = rc;
        return -1;
    }
    return 0;
}

static int sys_set_timerslack(unsigned long ns)
{
    return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0);
}

const struct lapict_kvm_sys lapict_kvm_sys_linux = {
    .version = LAPICT_KVM_SYS_VERSION,
    .ioctl = sys_ioctl,
    .open = sys_open,
    .close = sys_close,
    .read = sys_read,
    .write = sys_write,
    .clock_gettime = sys_clock_gettime,
    .timerfd_create = sys_timerfd_create,
    .timerfd_settime = sys_timerfd_settime,
    .eventfd = sys_eventfd,
    .timer_create = sys_timer_create,
    .timer_settime = sys_timer_settime,
    .timer_delete = sys_timer_delete,
    .ppoll = sys_ppoll,
    .sigaction = sys_sigaction,
    .pthread_sigqueue = sys_pthread_sigqueue,
    .pthread_create = sys_pthread_create,
    .set_timerslack = sys_set_timerslack,
};

int lapict_kvm__sys_fail(struct lapict_kvm *k, const char *call)
{
    k->sys_errno = errno ? errno : EIO;
    k->sys_call = call;
    k->err = LAPICT_E_SYSTEM;
    return LAPICT_E_SYSTEM;
}

/*
 * The failure to report now, if any: one recorded on the vCPU thread since
 * the last report, or the timer thread's end (persistent: without it no
 * kick comes, so every later call reports it).
 */
int lapict_kvm__take_error(struct lapict_kvm *k)
{
    int te = __atomic_load_n(&k->thread_errno, __ATOMIC_ACQUIRE);

    if (te) {
        k->sys_errno = te;
        k->sys_call = "ppoll";
        k->err = 0;
        return LAPICT_E_SYSTEM;
    }
    if (k->err) {
        int rc = k->err;
        k->err = 0;
        return rc;
    }
    return LAPICT_OK;
}

int lapict_kvm_errno(const struct lapict_kvm *k)
{
    return k->sys_errno;
}

const char *lapict_kvm_errcall(const struct lapict_kvm *k)
{
    return k->sys_call ? k->sys_call : "";
}
