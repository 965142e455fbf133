/* SPDX-License-Identifier: MIT */
/*
 * adapters/kvm's vCPU glue: which exits are the LAPIC's, and what the hooks
 * report to the VMM's loop. On the fake vCPU of kvm_fake.c (no /dev/kvm).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kvm_fake.h"
#include "lapict_kvm.h"

struct fx {
    struct lapict_kvm k;
    struct kvm_run run;
};

static int setup(void **state)
{
    struct lapict_kvm_config c = {.tsc_khz = 1000000, .sys = &lt_fake_sys};
    struct fx *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    lt_fake_reset();
    assert_int_equal(lapict_kvm_init(&f->k, LT_FAKE_VCPU_FD, &f->run, &c), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    lapict_kvm_destroy(&f->k);
    free(f);
    return 0;
}

static void msr_exit(struct kvm_run *r, uint32_t reason, uint32_t msr,
                     uint64_t data)
{
    r->exit_reason = reason;
    r->msr.index = msr;
    r->msr.data = data;
    r->msr.error = 0;
}

/*
 * Rule: an MSR exit for an MSR that is not the LAPIC's (the VM gets UNKNOWN
 * and INVAL MSR exits for the LAPIC's x2APIC range) belongs to the VMM: it
 * is reported "not mine" and left untouched, never turned into a #GP.
 */
static void other_msr_is_not_mine(void **state)
{
    struct fx *f = *state;
    static const uint32_t others[] = {0x3A, 0xC0000080u, 0x4B564D00u, 0x10,
                                      0x7FF, 0x900};

    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        msr_exit(&f->run, KVM_EXIT_X86_RDMSR, others[i], 0x1234);
        assert_int_equal(lapict_kvm_handle_exit(&f->k), LAPICT_KVM_NOT_MINE);
        assert_int_equal(f->run.msr.error, 0);
        assert_int_equal(f->run.msr.data, 0x1234);
        msr_exit(&f->run, KVM_EXIT_X86_WRMSR, others[i], 0x5678);
        assert_int_equal(lapict_kvm_handle_exit(&f->k), LAPICT_KVM_NOT_MINE);
        assert_int_equal(f->run.msr.error, 0);
    }
    assert_int_equal(f->k.st.gp, 0);
    /* The LAPIC's own MSRs stay its own, #GP included. */
    msr_exit(&f->run, KVM_EXIT_X86_RDMSR, 0x1B, 0);
    assert_int_equal(lapict_kvm_handle_exit(&f->k), LAPICT_KVM_MINE);
    assert_int_equal(f->run.msr.error, 0);
    assert_int_equal(f->run.msr.data, 0xFEE00900u);
    msr_exit(&f->run, KVM_EXIT_X86_WRMSR, 0x839, 0); /* x2APIC off: #GP */
    assert_int_equal(lapict_kvm_handle_exit(&f->k), LAPICT_KVM_MINE);
    assert_int_equal(f->run.msr.error, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(other_msr_is_not_mine, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
