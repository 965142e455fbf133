/* SPDX-License-Identifier: MIT */
/*
 * adapters/kvm's hooks (vcpu.c) driven by a minimal VMM loop of this test's
 * own, on /dev/kvm, with a tiny 64-bit guest: it enables x2APIC, arms a
 * 100 ms one-shot (vector 0x40) and halts until its handler has run (cli,
 * test the handler's flag, sti; hlt: an interrupt that comes before the
 * HLT, on a host slower than the count, ends the wait all the same); the
 * handler sets the flag, reports on port 0x11 and EOIs; after the wait
 * the guest reports on port 0x10. The loop calls lapict_kvm_pre_run(),
 * KVM_RUN, lapict_kvm_handle_exit(), and waits for a halt either with
 * lapict_kvm_halt_wait() or by sleeping itself until
 * lapict_kvm_next_deadline(). The adapter takes no signal and starts no
 * thread (kick_signal 0): nothing of the process is the adapter's.
 * Exits 77 (ctest: skipped) where /dev/kvm is unusable. The count is long
 * (100 ms) so that the guest usually halts before the expiry, also on a
 * loaded host or under valgrind (memcheck runs this test too).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kvm_probe.h"
#include "lapict_kvm.h"
#include "vm.h"

#define CODE 0x100000u
#define IDT 0x9000u
#define STACK 0x9F000u
#define FLAG 0xA000u /* the handler ran: byte 1 */
#define HANDLER 85u  /* offset of the handler in code[] */

/* The guest's one-shot: TMICT 100 000 000 at 1 GHz, divide by 1. */
#define COUNT_NS 100000000u

static const uint8_t code[] = {
    0xB9, 0x1B, 0x00, 0x00, 0x00, /* mov ecx, IA32_APIC_BASE */
    0xB8, 0x00, 0x0D, 0xE0, 0xFE, /* mov eax, 0xFEE00D00 (EN|EXTD|BSP) */
    0x31, 0xD2,                   /* xor edx, edx */
    0x0F, 0x30,                   /* wrmsr */
    0xB9, 0x0F, 0x08, 0x00, 0x00, /* mov ecx, SVR */
    0xB8, 0xFF, 0x01, 0x00, 0x00, /* mov eax, 0x1FF */
    0x0F, 0x30,                   /* wrmsr */
    0xB9, 0x3E, 0x08, 0x00, 0x00, /* mov ecx, TDCR */
    0xB8, 0x0B, 0x00, 0x00, 0x00, /* mov eax, 0xB (divide by 1) */
    0x0F, 0x30,                   /* wrmsr */
    0xB9, 0x32, 0x08, 0x00, 0x00, /* mov ecx, LVTT */
    0xB8, 0x40, 0x00, 0x00, 0x00, /* mov eax, 0x40 (one-shot) */
    0x0F, 0x30,                   /* wrmsr */
    0xB9, 0x38, 0x08, 0x00, 0x00, /* mov ecx, TMICT */
    0xB8, 0x00, 0xE1, 0xF5, 0x05, /* mov eax, 100000000 (100 ms, 1 GHz) */
    0x0F, 0x30,                   /* wrmsr */
    /* wait: */
    0xFA,                                           /* cli */
    0x80, 0x3C, 0x25, 0x00, 0xA0, 0x00, 0x00, 0x00, /* cmp byte [FLAG], 0 */
    0x75, 0x04,                                     /* jne done */
    0xFB,       /* sti: the hlt runs before any interrupt */
    0xF4,       /* hlt */
    0xEB, 0xF1, /* jmp wait */
    /* done: */
    0xB0, 0x01, /* mov al, 1 */
    0xE6, 0x10, /* out 0x10, al: done */
    0xFA,       /* cli */
    0xF4,       /* hlt */
    0xEB, 0xFD, /* jmp to the hlt */
    /* HANDLER: */
    0xC6, 0x04, 0x25, 0x00, 0xA0, 0x00, 0x00, 0x01, /* mov byte [FLAG], 1 */
    0xB0, 0x02,                                     /* mov al, 2 */
    0xE6, 0x11,                   /* out 0x11, al: in the handler */
    0xB9, 0x0B, 0x08, 0x00, 0x00, /* mov ecx, EOI */
    0x31, 0xC0,                   /* xor eax, eax */
    0x31, 0xD2,                   /* xor edx, edx */
    0x0F, 0x30,                   /* wrmsr */
    0x48, 0xCF,                   /* iretq */
};

static struct lapict_vmm_vm vm;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int setup(void **state)
{
    struct lapict_kvm_config kc;
    uint8_t *gate;
    struct kvm_sregs s;
    char err[256];
    uint64_t h = CODE + HANDLER;

    (void)state;
    lapict_kvm_config_default(&kc); /* no signal, no thread */
    assert_int_equal(
        lapict_vmm_vm_create(&vm, 2u << 20, false, true, err, sizeof(err)), 0);
    assert_true(CODE + sizeof(code) <= vm.ram_bytes);
    memcpy(vm.mem + CODE, code, sizeof(code));
    vm.mem[FLAG] = 0;
    assert_int_equal(lapict_vmm_vm_long_mode(&vm, CODE, STACK), 0);
    /* A 64-bit interrupt gate for vector 0x40. */
    gate = vm.mem + IDT + 0x40 * 16;
    memset(vm.mem + IDT, 0, 4096);
    gate[0] = (uint8_t)h;
    gate[1] = (uint8_t)(h >> 8);
    gate[2] = 0x08; /* code selector */
    gate[5] = 0x8E; /* present, DPL 0, interrupt gate */
    gate[6] = (uint8_t)(h >> 16);
    gate[7] = (uint8_t)(h >> 24);
    assert_int_equal(ioctl(vm.vcpu, KVM_GET_SREGS, &s), 0);
    s.idt.base = IDT;
    s.idt.limit = 4095;
    assert_int_equal(ioctl(vm.vcpu, KVM_SET_SREGS, &s), 0);
    assert_int_equal(lapict_vmm_vm_lapic(&vm, &kc, err, sizeof(err)), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    lapict_vmm_vm_destroy(&vm);
    return 0;
}

/*
 * The test's own loop. Rule: the hooks alone run a LAPIC timer interrupt
 * end to end: one interrupt, in the guest's handler, not before the
 * count-down's 100 ms (host time from the TMICT exit), and a halt waits
 * for it (ends only once the count has run out). With a state, the VMM
 * waits on its own until next_deadline() instead of in halt_wait(). A host
 * slower than the count gets the interrupt to the guest before its HLT: no halt
 * then.
 */
static void hooks_loop(void **state)
{
    const bool own_wait = *state != NULL;
    struct lapict_kvm *k = vm.k;
    struct kvm_run *r = vm.run;
    uint64_t t_armed = 0, t_irq = 0;
    unsigned handler = 0, done = 0;
    int rc, e;

    alarm(60); /* a hang fails, however slow the host */
    while (!done) {
        assert_int_equal(lapict_kvm_pre_run(k), LAPICT_OK);
        e = ioctl(vm.vcpu, KVM_RUN, 0) < 0 ? -errno : 0;
        if (!e && r->exit_reason == KVM_EXIT_X86_WRMSR && r->msr.index == 0x838)
            t_armed = mono_ns();
        rc = lapict_kvm_handle_exit(k, e);
        assert_true(rc >= 0);
        if (rc == LAPICT_KVM_MINE)
            continue;
        if (rc == LAPICT_KVM_HALTED) {
            if (!own_wait) {
                assert_int_equal(lapict_kvm_halt_wait(k), LAPICT_OK);
                assert_true(mono_ns() - t_armed >= COUNT_NS);
            } else {
                /* A VMM's own wait: until the LAPIC's next deadline. */
                uint64_t d = lapict_kvm_next_deadline(k);
                struct timespec ts = {(time_t)(d / 1000000000u),
                                      (long)(d % 1000000000u)};
                assert_int_not_equal(d, 0);
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
                                       NULL) == EINTR)
                    ;
            }
            continue;
        }
        /* Not the LAPIC's: the guest's ports, nothing else. */
        assert_int_equal(r->exit_reason, KVM_EXIT_IO);
        if (r->io.port == 0x11) {
            handler++;
            t_irq = mono_ns();
        } else {
            assert_int_equal(r->io.port, 0x10);
            done = 1;
        }
    }
    alarm(0);
    assert_int_equal(handler, 1);
    assert_int_not_equal(t_armed, 0);
    assert_true(t_irq - t_armed >= COUNT_NS);
    assert_int_equal(k->st.interrupts, 1);
}

int main(void)
{
    const char *why = lt_kvm_unusable();
    const struct CMUnitTest tests[] = {
        {"hooks_with_halt_wait", hooks_loop, setup, teardown, NULL},
        {"hooks_with_own_wait", hooks_loop, setup, teardown, &vm},
    };

    if (why) {
        printf("test_kvm_hooks: SKIP: %s\n", why);
        return LT_SKIP_RC;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
