/* SPDX-License-Identifier: MIT */
/*
 * The built-in guest: its image loaded and entered in long mode, its
 * mailbox filled from the command line, its ports served (lines, done,
 * the entry and exit round-trip probes), one run on either LAPIC. The
 * guest side of the contract is tools/vmm/mailbox.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vmm.h"

/* The built-in guest's image, up to the samples area; exit 2 without one. */
static uint8_t *read_guest(const char *path, size_t *len)
{
    uint8_t *img = lapict_vmm_read_file(path, len, SAMPLES_ADDR - GUEST_LOAD);

    if (!img || !*len) {
        fprintf(stderr, "lapict-vmm: cannot load guest image %s: %s\n", path,
                img ? "empty" : strerror(errno));
        exit(2);
    }
    return img;
}

void vmm_check_guest(const char *path)
{
    size_t len = 0;

    free(read_guest(path, &len));
}

/* The built-in guest's image at GUEST_LOAD, its long-mode entry. */
void vmm_load_guest(struct lapict_vmm_vm *v, const char *path)
{
    size_t len = 0;
    uint8_t *img = read_guest(path, &len);
    int rc;

    memcpy(v->mem + GUEST_LOAD, img, len);
    free(img);
    if ((rc = lapict_vmm_vm_long_mode(v, GUEST_LOAD, GUEST_STACK_TOP)) < 0) {
        errno = -rc;
        vmm_die("long-mode entry state");
    }
}

static const char *guest_str(struct lapict_vmm_vm *v, uint32_t addr)
{
    if (addr >= GUEST_RAM || !memchr(v->mem + addr, 0, GUEST_RAM - addr))
        return "(bad string)";
    return (const char *)(v->mem + addr);
}

/* An I/O exit: returns 1 to continue, 0 when the guest is done. */
static int handle_io(struct lapict_vmm_vm *v, const struct vmm_opts *o,
                     struct vmm_result *res)
{
    struct kvm_run *r = v->run;
    uint32_t val = 0;

    if (r->io.direction == KVM_EXIT_IO_IN) {
        memset((uint8_t *)r + r->io.data_offset, 0xFF,
               (size_t)r->io.size * r->io.count);
        return 1;
    }
    memcpy(&val, (uint8_t *)r + r->io.data_offset,
           r->io.size < 4 ? r->io.size : 4);
    switch (r->io.port) {
    case PORT_PUTS:
        if (!o->quiet)
            printf("%s%s\n", o->plain ? "" : "guest: ", guest_str(v, val));
        return 1;
    case PORT_DONE:
        res->status = (int)val;
        return 0;
    case PORT_ENTRY:
        /*
         * The previous round's entry: from the host TSC before the
         * KVM_RUN that carried ENTRY_VEC to the guest TSC at its
         * handler's first instruction. Both are one clock here (guest
         * TSC = host TSC: no offset, ratio 1, checked in vmm_run_one());
         * elsewhere the guest's stamp would first be converted back
         * through the vCPU's TSC offset and scaling ratio.
         */
        if (res->entry_armed && res->n_entry < SAMPLES_MAX) {
            const struct mailbox *mb =
                (const struct mailbox *)(v->mem + MB_ADDR);
            uint64_t *out = (uint64_t *)(v->mem + SAMPLES_ADDR);
            out[res->n_entry++] = mb->entry_isr_tsc - v->inject_tsc;
        }
        res->entry_armed = false;
        if (val == ENTRY_RAISE) {
            lapict_apic_set_irq(&v->k->apic, ENTRY_VEC);
            res->entry_armed = true;
        }
        return 1;
    case PORT_PING:
        /* The guest sends the low half of its TSC before the OUT. */
        if (res->n_oneway < ONEWAY_MAX)
            res->oneway[res->n_oneway++] =
                (int64_t)(int32_t)((uint32_t)__builtin_ia32_rdtsc() - val);
        return 1;
    default:
        return 1;
    }
}

void vmm_lib_config(const struct vmm_opts *o, struct lapict_kvm_config *kc)
{
    lapict_kvm_config_default(kc);
    kc->kick = o->no_thread     ? LAPICT_KVM_KICK_CALLER
               : o->kick_thread ? LAPICT_KVM_KICK_THREAD
                                : LAPICT_KVM_KICK_TIMER;
    /* This process has no other use for SIGUSR1. */
    kc->kick_signal = SIGUSR1;
    /* The default 50 us slack would dominate every timer latency. */
    kc->timer_slack_ns = 1;
    kc->timer.advance_mode = (uint32_t)o->advance_mode;
    kc->timer.advance_ns = o->advance_ns;
    if (o->advance_mode == LAPICT_ADVANCE_ADAPTIVE)
        kc->timer.advance_max_ns = o->advance_max_ns;
}

/* lapict_vmm_vm_run()'s exits: the guest's ports; anything else ends it. */
int vmm_guest_exit(void *arg, struct kvm_run *r)
{
    struct vmm_run_ctx *c = arg;

    if (r->exit_reason == KVM_EXIT_IO)
        return handle_io(c->v, c->o, c->res) ? -1 : 0;
    fprintf(stderr, "lapict-vmm: unexpected exit %u", r->exit_reason);
    if (r->exit_reason == KVM_EXIT_MMIO)
        fprintf(stderr, " (MMIO at 0x%llx)",
                (unsigned long long)r->mmio.phys_addr);
    if (r->exit_reason == KVM_EXIT_INTERNAL_ERROR)
        fprintf(stderr, " (suberror %u)", r->internal.suberror);
    fprintf(stderr, "\n");
    c->res->status = 4;
    return 0;
}

int vmm_run_one(const struct vmm_opts *o, int lapic, const char *csv,
                struct vmm_result *res)
{
    struct lapict_vmm_vm v;
    struct mailbox *mb;
    struct vmm_run_ctx ctx = {.v = &v, .o = o, .res = res};
    char err[256];
    int tsc_khz;

    memset(res, 0, sizeof(*res));
    res->oneway = calloc(ONEWAY_MAX, sizeof(int64_t));
    if (!res->oneway)
        vmm_die("calloc");
    if (lapict_vmm_vm_create(&v, GUEST_RAM, lapic == LAPIC_KERNEL, o->x2apic,
                             err, sizeof(err)) < 0) {
        fprintf(stderr, "lapict-vmm: %s\n", err);
        exit(2);
    }
    vmm_load_guest(&v, o->guest);
    tsc_khz = ioctl(v.vcpu, KVM_GET_TSC_KHZ, 0);
    if (tsc_khz <= 0)
        vmm_die("KVM_GET_TSC_KHZ");
    mb = (struct mailbox *)(v.mem + MB_ADDR);
    memset(mb, 0, sizeof(*mb));
    mb->magic = MB_MAGIC;
    mb->test = (uint32_t)o->test;
    mb->wait = (uint32_t)o->wait;
    mb->entry_isr = (uint32_t)o->entry_isr;
    mb->x2apic = o->x2apic;
    mb->samples = o->samples;
    mb->delta = o->delta;
    mb->period_ns = o->period_ns;
    mb->tsc_khz = (uint64_t)tsc_khz;
    mb->bus_hz = 1000000000ull; /* both LAPICs: 1 GHz timer clock */
    mb->timers = o->timers;

    if (lapic == LAPIC_LIB) {
        struct lapict_kvm_config kc;
        vmm_lib_config(o, &kc);
        if (o->test == T_TSCDEADLINE) {
            v.seg_max = o->samples + 16;
            if (!(v.seg = calloc(v.seg_max, sizeof(*v.seg))))
                vmm_die("calloc");
        }
        if (lapict_vmm_vm_lapic(&v, &kc, err, sizeof(err)) < 0) {
            fprintf(stderr, "lapict-vmm: %s\n", err);
            exit(2);
        }
        /* --test=entry subtracts a host TSC from a guest one: only
         * meaningful while they are the same clock. */
        if (o->test == T_ENTRY && v.k->tsc_offset != 0) {
            fprintf(stderr,
                    "lapict-vmm: --test=entry: guest TSC offset "
                    "%" PRId64 " is not 0\n",
                    v.k->tsc_offset);
            exit(2);
        }
    }
    lapict_vmm_timeout(o->timeout_s, "the guest did not finish");
    if (lapict_vmm_vm_run(&v, vmm_guest_exit, &ctx) < 0)
        exit(2);
    lapict_vmm_timeout(0, NULL);
    if (o->test == T_ENTRY)
        mb->nsamples = res->n_entry;
    if (v.seg && v.k && v.k->tsc_offset == 0)
        vmm_breakdown(&v, res);
    if (o->test == T_IMMED)
        vmm_immed_parts(&v, res);
    res->user_cycles = v.user_cycles;
    res->user_runs = v.user_runs;
    free(v.seg);
    v.seg = NULL;
    vmm_summarise(&v, o, mb, csv, res);
    if (res->n_oneway) {
        qsort(res->oneway, res->n_oneway, sizeof(int64_t), vmm_cmp_i64);
        if (!o->quiet)
            printf("exit guest->VMM one-way: median=%" PRId64 " cycles "
                   "(guest TSC before OUT to host TSC in the VMM)\n",
                   res->oneway[res->n_oneway / 2]);
    }
    free(res->oneway);
    res->oneway = NULL;
    if (v.k && !o->quiet) {
        struct lapict_kvm *k = v.k;
        struct lapict_stats ts;
        lapict_stats_get(&k->timer, &ts, sizeof(ts));
        printf("lib: runs=%" PRIu64 " mmio=%" PRIu64 " msr=%" PRIu64
               " hlt_sleeps=%" PRIu64 " kicks=%" PRIu64 " interrupts=%" PRIu64
               " windows=%" PRIu64 " advance_ns=%u spins=%" PRIu64
               " refused=%" PRIu64 "\n",
               k->st.runs, k->apic.st.mmio, k->apic.st.rdmsr + k->apic.st.wrmsr,
               k->st.halt_sleeps, k->st.kicks_seen, k->st.interrupts,
               k->st.window_exits, ts.advance_ns, ts.spins, ts.refused);
        /* What the advance cost the host: the wait before entry. */
        printf("lib: spin_ns_total=%" PRIu64 " spin_ns_per_interrupt=%" PRIu64
               "\n",
               ts.spin_ns_total,
               ts.injections ? ts.spin_ns_total / ts.injections : 0);
    }
    lapict_vmm_vm_destroy(&v);
    return res->status;
}
