/* SPDX-License-Identifier: MIT */
/*
 * What the files of lapict-vmm share: the parsed command line, the figures
 * of one run, and each file's entry points. One file per job keeps the
 * VMM's parts apart: cli.c reads the command line, guest.c loads and runs
 * the built-in guest, stats.c turns its samples into figures, latency.c
 * runs the latency tests (alone or compared), migrate.c drives the
 * migration test, main.c picks one of them.
 */
#ifndef LAPICT_VMM_H
#define LAPICT_VMM_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "lapict_kvm.h"
#include "mailbox.h"
#include "platform.h"
#include "vm.h"

enum vmm_lapic { LAPIC_LIB, LAPIC_KERNEL };

struct vmm_opts {
    int lapic, test, wait, entry_isr;
    uint64_t samples, delta, period_ns;
    int advance_mode;
    uint32_t advance_ns, advance_max_ns;
    const char *csv, *guest;
    bool compare, quiet, no_thread, kick_thread;
    /* --x2apic=on for the built-in guest (immed, tscdeadline). */
    bool x2apic;
    unsigned timeout_s;
    /* --guest=baremetal: its lines as they are, its status; --timers. */
    bool plain;
    uint64_t timers;
    /* --test=migrate. */
    uint64_t migrations, downtime_us, seed;
    bool exec, seed_set;
    const char *save, *restore;
    int argc;
    char **argv;
    /* --dry-run: check what the run would read, start nothing. */
    bool dry_run;
};

struct vmm_result {
    uint64_t n, early;
    int64_t min, median, p99, max;
    double ppm;
    int64_t drift;
    uint64_t missed;
    uint64_t pass, fail;
    int status;
    uint64_t n_oneway;
    int64_t *oneway;
    /* --test=entry: a raised interrupt awaits its sample; samples so far. */
    bool entry_armed;
    uint64_t n_entry;
    /* --test=tscdeadline with lib: medians of the path's segments
     * (deadline -> host timer fired -> vCPU thread running -> KVM_RUN
     * entered -> guest ISR), the samples they cover; seg_n 0: none. */
    int64_t seg_med[4];
    uint64_t seg_n, seg_nofire;
    /* --test=immed: medians of WRMSR -> ISR, the EOI, the rest. */
    int64_t imm_med[3];
    /* vm.c's userspace cycles between KVM_RUNs and the KVM_RUNs. */
    uint64_t user_cycles, user_runs;
    uint64_t imm_n;
};

#define ONEWAY_MAX 100000u

/* --test and --lapic values, by enum mb_test and enum vmm_lapic. */
extern const char *const vmm_test_names[8];
extern const char *const vmm_lapic_names[2];

/* Report @what with errno and exit 2 (a setup failure, not a result). */
void vmm_die(const char *what);

/*
 * The command line into @o and @mb. Return: -1 to go on and run (or with
 * @o->dry_run, to check), or the exit status to end with at once (0 for
 * --help and --version, 2 for a usage error).
 */
int vmm_parse_args(int argc, char **argv, struct vmm_opts *o,
                   struct lapict_vmm_boot_opts *mb);

/* guest.c: the built-in guest. */
void vmm_load_guest(struct lapict_vmm_vm *v, const char *path);
/* --dry-run: reads the image as vmm_load_guest() does, exits 2 likewise. */
void vmm_check_guest(const char *path);
void vmm_lib_config(const struct vmm_opts *o, struct lapict_kvm_config *kc);
struct vmm_run_ctx {
    struct lapict_vmm_vm *v;
    const struct vmm_opts *o;
    struct vmm_result *res;
};
int vmm_guest_exit(void *arg, struct kvm_run *r);
int vmm_run_one(const struct vmm_opts *o, int lapic, const char *csv,
                struct vmm_result *res);

/* stats.c: figures from the guest's samples, and the RESULT lines. */
int vmm_cmp_i64(const void *a, const void *b);
void vmm_summarise(struct lapict_vmm_vm *v, const struct vmm_opts *o,
                   const struct mailbox *mb, const char *csv,
                   struct vmm_result *res);
void vmm_breakdown(struct lapict_vmm_vm *v, struct vmm_result *res);
void vmm_immed_parts(struct lapict_vmm_vm *v, struct vmm_result *res);
void vmm_print_breakdown(const struct vmm_result *r);
void vmm_print_result(const struct vmm_opts *o, int lapic,
                      const struct vmm_result *r);

/* latency.c: the latency tests, on one LAPIC or both. Return: exit status. */
int vmm_run_latency(const struct vmm_opts *o);

/* migrate.c: --test=migrate. Return: exit status. */
int vmm_run_migrate(const struct vmm_opts *o);
/*
 * --dry-run: what vmm_run_migrate() reads before the VM exists (the
 * --restore file, or the guest image), failing as it fails (exit 2).
 * Return: 0.
 */
int vmm_check_migrate(const struct vmm_opts *o);

#endif
