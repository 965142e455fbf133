/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "kvm_fake.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

struct lt_fake lt_fake = {.last_vector = -1};

void lt_fake_reset(void)
{
    memset(&lt_fake, 0, sizeof(lt_fake));
    lt_fake.last_vector = -1;
}

struct lapict_kvm_config lt_fake_config(uint32_t kick, int sig)
{
    struct lapict_kvm_config c;

    lapict_kvm_config_default(&c);
    c.timer.tsc_khz = 1000000;
    c.sys = &lt_fake_sys;
    c.kick = kick;
    c.kick_signal = sig;
    return c;
}

/* Nonzero (and errno set) when the test wants @call to fail. */
static int failing(unsigned call)
{
    if (!(__atomic_load_n(&lt_fake.fail, __ATOMIC_RELAXED) & call))
        return 0;
    __atomic_fetch_or(&lt_fake.failed, call, __ATOMIC_RELAXED);
    errno = lt_fake.fail_errno ? lt_fake.fail_errno : EIO;
    return 1;
}

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
    if (fd != LT_FAKE_VCPU_FD)
        return lapict_kvm_sys_linux.ioctl(fd, req, arg);
    switch (req) {
    case KVM_RUN:
        if (failing(LT_FAIL_RUN))
            return -1;
        if (!lt_fake.run) {
            errno = EINTR;
            return -1;
        }
        return lt_fake.run(lt_fake.run_arg);
    case KVM_INTERRUPT:
        if (failing(LT_FAIL_INTERRUPT))
            return -1;
        lt_fake.last_vector = (int)((const struct kvm_interrupt *)arg)->irq;
        lt_fake.injections++;
        return 0;
    case KVM_NMI:
        if (failing(LT_FAIL_NMI))
            return -1;
        lt_fake.nmis++;
        return 0;
    case KVM_SET_MSRS: {
        const struct kvm_msrs *m = arg;
        if (failing(LT_FAIL_SET_MSRS))
            return -1;
        if (m->nmsrs == 1 && m->entries[0].index == 0x1B)
            lt_fake.apic_base = m->entries[0].data;
        lt_fake.set_msrs++;
        return (int)m->nmsrs;
    }
    case KVM_GET_DEVICE_ATTR: {
        const struct kvm_device_attr *a = arg;
        if (a->group == KVM_VCPU_TSC_CTRL && a->attr == KVM_VCPU_TSC_OFFSET) {
            uint64_t zero = 0;
            memcpy((void *)(uintptr_t)a->addr, &zero, sizeof(zero));
            return 0;
        }
        errno = ENXIO;
        return -1;
    }
    case KVM_GET_REGS: {
        /* RFLAGS from the fake guest's view in kvm_run (IF, bit 9). */
        struct kvm_regs *r = arg;
        memset(r, 0, sizeof(*r));
        r->rflags = 2u | (lt_fake.if_flag ? 0x200u : 0);
        return 0;
    }
    default:
        /* KVM_GET_VCPU_EVENTS (no sync regs), ...: not offered. */
        errno = ENOTTY;
        return -1;
    }
}

static int fake_open(const char *path, int flags)
{
    return lapict_kvm_sys_linux.open(path, flags);
}

static int fake_close(int fd)
{
    return lapict_kvm_sys_linux.close(fd);
}

static long fake_read(int fd, void *buf, size_t n)
{
    return lapict_kvm_sys_linux.read(fd, buf, n);
}

static long fake_write(int fd, const void *buf, size_t n)
{
    return lapict_kvm_sys_linux.write(fd, buf, n);
}

static int fake_timerfd_create(int clk, int flags)
{
    if (failing(LT_FAIL_TIMERFD_CREATE))
        return -1;
    return lapict_kvm_sys_linux.timerfd_create(clk, flags);
}

static int fake_eventfd(unsigned int initval, int flags)
{
    if (failing(LT_FAIL_EVENTFD))
        return -1;
    return lapict_kvm_sys_linux.eventfd(initval, flags);
}

static int fake_pthread_sigqueue(pthread_t thread, int sig, void *value)
{
    return lapict_kvm_sys_linux.pthread_sigqueue(thread, sig, value);
}

static int fake_pthread_create(pthread_t *thread, void *(*fn)(void *),
                               void *arg)
{
    if (failing(LT_FAIL_PTHREAD_CREATE))
        return -1;
    return lapict_kvm_sys_linux.pthread_create(thread, fn, arg);
}

static int fake_set_timerslack(unsigned long ns)
{
    if (failing(LT_FAIL_TIMERSLACK))
        return -1;
    return lapict_kvm_sys_linux.set_timerslack(ns);
}

static int fake_timerfd_settime(int fd, int flags, const struct itimerspec *v)
{
    if (failing(LT_FAIL_TIMERFD_SETTIME))
        return -1;
    return lapict_kvm_sys_linux.timerfd_settime(fd, flags, v);
}

static int fake_timer_create(int clk, struct sigevent *sev, int *id)
{
    if (failing(LT_FAIL_TIMER_CREATE))
        return -1;
    return lapict_kvm_sys_linux.timer_create(clk, sev, id);
}

static int fake_timer_settime(int id, int flags, const struct itimerspec *v)
{
    if (failing(LT_FAIL_TIMER_SETTIME))
        return -1;
    return lapict_kvm_sys_linux.timer_settime(id, flags, v);
}

static int fake_timer_delete(int id)
{
    return lapict_kvm_sys_linux.timer_delete(id);
}

static int fake_ppoll(struct pollfd *fds, unsigned long n,
                      const struct timespec *ts)
{
    void (*after)(void *);
    int rc, e;

    __atomic_fetch_add(&lt_fake.ppolls, 1, __ATOMIC_SEQ_CST);
    if (failing(LT_FAIL_PPOLL))
        return -1;
    rc = lapict_kvm_sys_linux.ppoll(fds, n, ts);
    e = errno;
    __atomic_fetch_add(&lt_fake.ppoll_returns, 1, __ATOMIC_SEQ_CST);
    after = __atomic_load_n(&lt_fake.after_ppoll, __ATOMIC_SEQ_CST);
    if (after)
        after(lt_fake.after_ppoll_arg);
    errno = e;
    return rc;
}

static int fake_sigaction(int sig, const struct sigaction *sa,
                          struct sigaction *old)
{
    if (failing(LT_FAIL_SIGACTION))
        return -1;
    return lapict_kvm_sys_linux.sigaction(sig, sa, old);
}

static int fake_clock_gettime(int clk, struct timespec *ts)
{
    uint64_t stall =
        __atomic_exchange_n(&lt_fake.clock_stall_ns, 0, __ATOMIC_SEQ_CST);

    if (stall) {
        struct timespec d = {(time_t)(stall / 1000000000u),
                             (long)(stall % 1000000000u)};
        while (nanosleep(&d, &d) == -1 && errno == EINTR)
            ;
    }
    return lapict_kvm_sys_linux.clock_gettime(clk, ts);
}

const struct lapict_kvm_sys lt_fake_sys = {
    .version = LAPICT_KVM_SYS_VERSION,
    .ioctl = fake_ioctl,
    .open = fake_open,
    .close = fake_close,
    .read = fake_read,
    .write = fake_write,
    .timerfd_create = fake_timerfd_create,
    .eventfd = fake_eventfd,
    .pthread_sigqueue = fake_pthread_sigqueue,
    .pthread_create = fake_pthread_create,
    .set_timerslack = fake_set_timerslack,
    .timerfd_settime = fake_timerfd_settime,
    .timer_create = fake_timer_create,
    .timer_settime = fake_timer_settime,
    .timer_delete = fake_timer_delete,
    .ppoll = fake_ppoll,
    .sigaction = fake_sigaction,
    .clock_gettime = fake_clock_gettime,
};
