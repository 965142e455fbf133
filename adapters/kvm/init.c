/* SPDX-License-Identifier: MIT */
/*
 * An instance's life: lapict_kvm_init() puts the parts together (the vCPU's
 * KVM setup, the lapict timer on the host ops, the kick strategy, the LAPIC
 * model on KVM) and lapict_kvm_destroy() takes them apart.
 */
#define _GNU_SOURCE
#include "kvm_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

void lapict_kvm_config_default(struct lapict_kvm_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    lapict_config_default(&cfg->timer);
    cfg->timer.tsc_khz = 0; /* ask KVM */
    cfg->kick = LAPICT_KVM_KICK_CALLER;
}

/*
 * The argument of lapict_kvm_init() at fault, as a message that names it
 * (lapict_kvm_errcall() returns it), or NULL when they are all valid.
 */
static const char *bad_argument(const struct kvm_run *run,
                                const struct lapict_kvm_config *cfg)
{
    if (!run)
        return "run is NULL";
    if (cfg->kick_signal < 0 || cfg->kick_signal > SIGRTMAX)
        return "cfg->kick_signal is not a signal number (0 .. SIGRTMAX)";
    if (cfg->kick > LAPICT_KVM_KICK_THREAD)
        return "cfg->kick is not an enum lapict_kvm_kick value";
    /* Kicks from the adapter need a signal to reach KVM_RUN. */
    if (cfg->kick != LAPICT_KVM_KICK_CALLER && !cfg->kick_signal)
        return "cfg->kick needs cfg->kick_signal (0 only with "
               "LAPICT_KVM_KICK_CALLER)";
    if (cfg->sys && cfg->sys->version != LAPICT_KVM_SYS_VERSION)
        return "cfg->sys->version is not LAPICT_KVM_SYS_VERSION";
    return NULL;
}

int lapict_kvm_init(struct lapict_kvm *k, int vcpu_fd, struct kvm_run *run,
                    const struct lapict_kvm_config *cfg)
{
    const char *bad;
    struct lapict_kvm_config def;
    struct lapict_config tc;
    const struct lapict_apic_ops *apic_ops;
    int rc;

    if (!k)
        return LAPICT_E_INVAL;
    if (!cfg) {
        lapict_kvm_config_default(&def);
        cfg = &def;
    }
    bad = bad_argument(run, cfg);
    if (bad) {
        memset(k, 0, sizeof(*k));
        k->sys_call = bad;
        k->sys_errno = EINVAL;
        return LAPICT_E_INVAL;
    }
    if (cfg->apic_ops && cfg->apic_ops->version < 1) {
        memset(k, 0, sizeof(*k));
        k->sys_call = "cfg->apic_ops->version is 0";
        return LAPICT_E_OPS;
    }
    memset(k, 0, sizeof(*k));
    k->sys = cfg->sys ? cfg->sys : &lapict_kvm_sys_linux;
    k->vcpu_fd = vcpu_fd;
    k->run = run;
    k->timer_fd = k->stop_fd = k->wake_fd = -1;
    k->kick_signal = cfg->kick_signal;
    k->vcpu_thread = pthread_self();
    k->fired = cfg->fired;
    k->fired_arg = cfg->fired_arg;
    k->vmm_ops = cfg->apic_ops;
    k->vmm_ctx = cfg->apic_ctx;

    /* The timer's configuration as given; only tsc_khz 0 is filled in. */
    tc = cfg->timer;
    if (!tc.tsc_khz) {
        rc = k->sys->ioctl(vcpu_fd, KVM_GET_TSC_KHZ, NULL);
        if (rc < 0)
            return lapict_kvm__sys_fail(k, "KVM_GET_TSC_KHZ");
        if (!rc)
            return LAPICT_E_TSC_KHZ;
        tc.tsc_khz = (uint32_t)rc;
    }
    k->tsc_khz = tc.tsc_khz;
    if ((rc = lapict_kvm__vcpu_setup(k)) < 0)
        return rc;
    rc = lapict_init(&k->timer, &tc, &lapict_kvm_ops, k);
    if (rc)
        return rc;

    k->halt_poll_ns = !cfg->halt_poll_ns ? LAPICT_KVM_HALT_POLL_NS
                      : cfg->halt_poll_ns == LAPICT_KVM_NONE
                          ? 0
                          : cfg->halt_poll_ns;
    /* The thread is the caller's: its slack only if asked for. */
    if (cfg->timer_slack_ns &&
        k->sys->set_timerslack((unsigned long)cfg->timer_slack_ns) < 0)
        return lapict_kvm__sys_fail(k, "prctl(PR_SET_TIMERSLACK)");

    /* Before anything can arm the host timer: the strategy takes it. */
    if ((rc = lapict_kvm__kick_start(k, cfg)) < 0)
        goto fail;
    /* APIC state: enabled at the default base, SVR software-disabled. */
    /* The VMM's ipi op, if any: the model counts IPIs it cannot hand on. */
    apic_ops = k->vmm_ops && k->vmm_ops->version >= 2 && k->vmm_ops->ipi
                   ? &lapict_kvm__apic_ops_ipi
                   : &lapict_kvm__apic_ops;
    if ((rc = lapict_apic_init(&k->apic, &k->timer, apic_ops, k)) < 0)
        goto fail;
    return 0;

fail:
    lapict_kvm_destroy(k);
    return rc;
}

void lapict_kvm_destroy(struct lapict_kvm *k)
{
    if (!k)
        return;
    lapict_kvm__kick_end(k);
}
