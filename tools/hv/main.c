/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv: boot, the run of the vCPUs on the physical CPU, and the
 * run's RESULT line.
 *
 * Module 1 is the guest (its module string is the guest's command line,
 * argv[0] first); an optional module 2 is the guest's own module (its
 * environment "initrd", kvm-unit-tests' convention). The hypervisor's own
 * command line is config.c's.
 */
#include "../../tests/guests/common/longmode.h"
#include "../vmm/multiboot.h"
#include "hv.h"

extern uint8_t hv_image_end[];

/* The hardware adapters/baremetal drives: the physical CPU's, with the
 * VMX-preemption timer of the loaded vCPU (hv_timer=preempt) or without. */
static const struct lapict_bm_hw hw_preempt = {
    .version = LAPICT_BM_HW_VERSION,
    .read_tsc = hv_pcpu_read_tsc,
    .write_tsc_deadline = hv_pcpu_write_deadline,
    .eoi = hv_pcpu_eoi,
    .write_preempt = hv_write_preempt_op,
};

static const struct lapict_bm_hw hw_lapic = {
    .version = LAPICT_BM_HW_VERSION,
    .read_tsc = hv_pcpu_read_tsc,
    .write_tsc_deadline = hv_pcpu_write_deadline,
    .eoi = hv_pcpu_eoi,
};

static const char *basename_of(const char *cmdline, char *buf, size_t len)
{
    const char *s = cmdline, *end, *b;
    size_t n;
    while (*s == ' ')
        s++;
    end = s;
    while (*end && *end != ' ')
        end++;
    b = end;
    while (b > s && b[-1] != '/')
        b--;
    n = (size_t)(end - b);
    if (n >= len)
        n = len - 1;
    memcpy(buf, b, n);
    buf[n] = 0;
    return buf;
}

/* A halted vCPU whose timer deadline passed a second ago: the interrupt
 * that should have woken it is lost (a bug: lapict-hv says so once, with
 * what each vCPU waits for, and goes on). */
static bool stalled(void)
{
    uint64_t now = lapict_bm_now_ns(&hv_cpu);
    for (uint32_t i = 0; i < hv_cfg.vcpus; i++) {
        struct hv_vcpu *v = &hv_vcpus[i];
        uint64_t at;
        if (v->halted && !v->done && lapict_bm_node_armed(&v->node, &at) &&
            (int64_t)(now - at) > 1000000000)
            return true;
    }
    return false;
}

static void stall_report(void)
{
    struct lapict_bm_stats st;
    lapict_bm_stats_get(&hv_cpu, &st);
    hv_printf(
        "lapict-hv: a halted vCPU's deadline passed 1 s ago: TSC %lu, physical "
        "deadline %lu (armed %u), heap %u, irqs %lu, preempt exits "
        "%lu\n",
        hv_rdtsc(), hv_cpu.hw_req_tsc, hv_cpu.hw_armed, st.armed, st.irqs,
        st.preempt_exits);
    for (uint32_t i = 0; i < hv_cfg.vcpus; i++) {
        struct hv_vcpu *v = &hv_vcpus[i];
        uint64_t at = 0;
        bool armed = lapict_bm_node_armed(&v->node, &at);
        hv_printf("lapict-hv: vCPU %u: done %u halted %u LVTT 0x%x TMICT "
                  "%u node armed %u at TSC %lu, IRR pending %u, "
                  "deliverable %d\n",
                  i, v->done, v->halted, lapict_lvtt_read(&v->timer),
                  lapict_tmict_read(&v->timer), armed,
                  armed ? lapict_bm_clock_tsc(&hv_clock, at) : 0,
                  lapict_apic_irr_pending(&v->apic),
                  lapict_apic_deliverable(&v->apic));
    }
}

static void run_all(void)
{
    bool stall_reported = false;
    uint32_t live;
    uint64_t slice = hv_cfg.vcpus > 1 ? (uint64_t)hv_cfg.tsc_khz : 0;

    for (;;) {
        struct hv_vcpu *v;
        live = 0;
        for (uint32_t i = 0; i < hv_cfg.vcpus; i++)
            live += !hv_vcpus[i].done;
        if (!live)
            return;
        v = hv_sched_next();
        if (!stall_reported && stalled()) {
            stall_reported = true;
            stall_report();
        }
        if (!v && !hv_cpu.n && !hv_cpu.hw_armed && !hv_console_poll()) {
            /* Every vCPU halted and no timer armed: nothing can wake
             * them (a guest waiting with interrupts off, or an interrupt
             * lost). Say so, with their state, rather than halt for
             * ever. */
            hv_printf("lapict-hv: every vCPU is halted and nothing can "
                      "wake them\n");
            stall_report();
            return;
        }
        if (!v) {
            /* Every vCPU is halted: wait for the physical timer, or drain
             * the console with interrupts open. */
            if (hv_console_poll())
                __asm__ volatile("sti; nop; cli" ::: "memory");
            else
                __asm__ volatile("sti; hlt; cli" ::: "memory");
            continue;
        }
        lapict_bm_node_load(&v->node);
        hv_sched_running(v);
        hv_vcpu_run(v, slice ? hv_rdtsc() + slice : 0);
        hv_sched_running(NULL);
        lapict_bm_node_put(&v->node);
        if (v->done)
            hv_vcpu_flush(v);
    }
}

static void sort32(uint32_t *a, uint32_t n)
{
    for (uint32_t gap = n / 2; gap; gap /= 2)
        for (uint32_t i = gap; i < n; i++)
            for (uint32_t j = i; j >= gap && a[j - gap] > a[j]; j -= gap) {
                uint32_t t = a[j];
                a[j] = a[j - gap];
                a[j - gap] = t;
            }
}

/* Lateness of the timer interrupts at the VM entry that delivered them,
 * host TSC ticks after their architectural instant, per LVTT mode. */
static void print_lateness(void)
{
    static const char *const names[3] = {"oneshot", "periodic", "deadline"};
    for (uint32_t m = 0; m < 3; m++) {
        uint32_t n = hv_late_n[m], *a = hv_late[m];
        if (!n)
            continue;
        sort32(a, n);
        hv_printf("LATENESS mode=%s n=%u min=%u median=%u p99=%u max=%u\n",
                  names[m], n, a[0], a[n / 2], a[(uint64_t)n * 99 / 100],
                  a[n - 1]);
    }
}

void mb_main(void)
{
    const struct mb_info *mbi = (const struct mb_info *)(uintptr_t)mb_boot_info;
    const struct mb_module *mods;
    const uint8_t *env = NULL;
    size_t env_len = 0;
    struct lapict_bm_stats st;
    uint64_t deliveries = 0, early = 0, lost = 0, doubled = 0;
    char name[64];
    int status = 0;

    hv_console_init();
    if (mb_boot_magic != MB_BOOT_MAGIC)
        hv_panic("not started by a multiboot loader");
    hv_config_parse((mbi->flags & MBI_CMDLINE)
                        ? (const char *)(uintptr_t)mbi->cmdline
                        : "");
    if (!(mbi->flags & MBI_MODS) || mbi->mods_count < 1)
        hv_panic("no guest: the first multiboot module is the guest");
    mods = (const struct mb_module *)(uintptr_t)mbi->mods_addr;
    if (mbi->mods_count > 1) {
        env = (const uint8_t *)(uintptr_t)mods[1].start;
        env_len = mods[1].end - mods[1].start;
    }
    if (!(mbi->flags & MBI_MEM) ||
        (uint64_t)mbi->mem_upper * 1024u + (1u << 20) <
            HV_GUEST_BASE + (uint64_t)hv_cfg.vcpus * HV_SLICE_MB * (1u << 20))
        hv_panic("%u vCPUs need %u MiB of RAM above 64 MiB", hv_cfg.vcpus,
                 hv_cfg.vcpus * HV_SLICE_MB);
    if (mods[0].end > HV_GUEST_BASE || (env && mods[1].end > HV_GUEST_BASE))
        hv_panic("the modules were loaded above 64 MiB");

    hv_pcpu_init();
    hv_vmx_init();
    hv_pcpu_timer_init(hv_cfg.timer == HV_TIMER_PREEMPT ? &hw_preempt
                                                        : &hw_lapic);

    basename_of((const char *)(uintptr_t)mods[0].cmdline, name, sizeof(name));
    hv_printf("lapict-hv: %u vCPU(s), hv_timer=%s, advance=%s, TSC %u kHz, "
              "APIC bus %u kHz, guest %s%s\n",
              hv_cfg.vcpus,
              hv_cfg.timer == HV_TIMER_PREEMPT ? "preempt" : "lapic",
              hv_cfg.advance_mode ? "adaptive" : "off", hv_cfg.tsc_khz,
              hv_cfg.bus_khz, name, hv_tsc_scaling ? ", VMX TSC scaling" : "");

    for (uint32_t i = 0; i < hv_cfg.vcpus; i++) {
        struct hv_vcpu *v = &hv_vcpus[i];
        uint32_t entry;
        bool half = hv_cfg.half_odd && (i & 1);
        v->index = i;
        v->ram_hpa = HV_GUEST_BASE + (uint64_t)i * HV_SLICE_MB * (1u << 20);
        v->ram_bytes = (uint64_t)HV_SLICE_MB << 20;
        v->tsc_ratio = half ? LAPICT_BM_RATIO_ONE / 2 : LAPICT_BM_RATIO_ONE;
        v->tsc_offset = 0;
        v->tsc_exiting = half && !hv_tsc_scaling;
        v->guest_tsc_khz = half ? hv_cfg.tsc_khz / 2 : hv_cfg.tsc_khz;
        if (hv_guest_load(v, (const uint8_t *)(uintptr_t)mods[0].start,
                          mods[0].end - mods[0].start,
                          (const char *)(uintptr_t)mods[0].cmdline, env,
                          env_len, &entry))
            hv_shutdown(125);
        hv_vcpu_timer_init(v);
        hv_vcpu_setup(v, entry, HV_MB_INFO);
    }
    run_all();

    for (uint32_t i = 0; i < hv_cfg.vcpus; i++) {
        struct hv_vcpu *v = &hv_vcpus[i];
        hv_ref_final(v, hv_rdtsc());
        deliveries += v->deliveries;
        early += v->early;
        lost += v->lost;
        doubled += v->doubled;
        if (v->status > status)
            status = v->status;
        if (!v->done && status < 124) {
            /* Halted for good without writing to isa-debug-exit. */
            hv_printf("lapict-hv: vCPU %u never reported\n", i);
            status = 124;
        }
        {
            struct lapict_stats ts;
            lapict_stats_get(&v->timer, &ts, sizeof(ts));
            hv_printf("lapict-hv: vCPU %u: status %d, deliveries %lu, "
                      "exits %lu, injections %lu, advance %u ns, spins "
                      "%lu (%lu ns), last arrival %ld ns, hv->sw %lu, "
                      "sw->hv %lu\n",
                      i, v->status, v->deliveries, v->exits, ts.injections,
                      ts.advance_ns, ts.spins, ts.spin_ns_total,
                      ts.last_arrival_ns, ts.hv_to_sw, ts.sw_to_hv);
        }
    }
    lapict_bm_stats_get(&hv_cpu, &st);
    print_lateness();
    {
        uint64_t arms = 0, off = 0;
        for (uint32_t i = 0; i < hv_cfg.vcpus; i++) {
            arms += hv_vcpus[i].grid_arms;
            off += hv_vcpus[i].off_grid;
        }
        if (hv_cfg.advance_mode == LAPICT_ADVANCE_OFF)
            hv_printf("GRID count-down timer arms=%lu off_grid=%lu\n", arms,
                      off);
    }
    hv_printf("RESULT test=hv guest=%s vcpus=%u hv_timer=%s deliveries=%lu "
              "early=%lu lost=%lu doubled=%lu preempt_exits=%lu "
              "lapic_irqs=%lu ticks=%lu\n",
              name, hv_cfg.vcpus,
              hv_cfg.timer == HV_TIMER_PREEMPT ? "preempt" : "lapic",
              deliveries, early, lost, doubled, st.preempt_exits, st.irqs,
              hv_rdtsc());
    hv_shutdown(status);
}
