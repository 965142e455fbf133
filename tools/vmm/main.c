/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm: a minimal KVM VMM (one vCPU, long mode prepared by the VM
 * layer, vm.c, no firmware) that runs the project's own guest and
 * measures the APIC timer, either emulated in userspace by lapict
 * (adapters/kvm, driven through its hooks by vm.c's loop) or by KVM's
 * in-kernel LAPIC (KVM_CREATE_IRQCHIP), with the very same guest binary.
 * It also boots multiboot kernels (platform.c). This file only picks
 * which of those the command line asked for, to run it or, with
 * --dry-run, to check what the run would read before its guest starts;
 * vmm.h lists the files that do each.
 */
#include "vmm.h"

int main(int argc, char **argv)
{
    struct vmm_opts o;
    struct lapict_vmm_boot_opts mb;
    int rc = vmm_parse_args(argc, argv, &o, &mb);

    if (rc >= 0)
        return rc;
    if (o.test == T_MIGRATE)
        return o.dry_run ? vmm_check_migrate(&o) : vmm_run_migrate(&o);
    if (mb.kernel) {
        /* A multiboot kernel (kvm-unit-tests .flat): platform.c. */
        mb.lapic_kernel = o.lapic == LAPIC_KERNEL;
        mb.ram_bytes = 128ull << 20;
        mb.timeout_s = o.timeout_s;
        mb.quiet = o.quiet;
        mb.advance_mode = (uint32_t)o.advance_mode;
        mb.advance_ns = o.advance_ns;
        mb.advance_max_ns =
            o.advance_mode == LAPICT_ADVANCE_ADAPTIVE ? o.advance_max_ns : 0;
        return o.dry_run ? lapict_vmm_boot_check(&mb) : lapict_vmm_boot(&mb);
    }
    if (o.dry_run) {
        vmm_check_guest(o.guest);
        return 0;
    }
    return vmm_run_latency(&o);
}
