/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's physical CPU: its interrupts and exceptions, its local APIC
 * (x2APIC, the timer in TSC-deadline mode), the hardware ops through which
 * adapters/baremetal's multiplexer drives it (TSC, TSC deadline, EOI), and
 * that multiplexer with its clock.
 */
#include "../../tests/guests/common/longmode.h"
#include "hv.h"

struct lapict_bm_clock hv_clock;
struct lapict_bm_cpu hv_cpu;
uint64_t hv_last_tsc;

static struct idt_gate idt[256] __attribute__((aligned(16)));
static struct lapict_bm_slot slots[LAPICT_BM_SLOTS(HV_MAX_VCPUS)]
    __attribute__((aligned(64)));
static uint64_t spurious_irqs;

uint64_t hv_pcpu_read_tsc(void *ctx)
{
    (void)ctx;
    return hv_last_tsc = hv_rdtsc();
}

void hv_pcpu_write_deadline(void *ctx, uint64_t tsc)
{
    (void)ctx;
    hv_wrmsr(0x6E0, tsc);
}

void hv_pcpu_eoi(void *ctx)
{
    (void)ctx;
    hv_wrmsr(0x80B, 0);
}

void hv_host_irq(uint8_t vector)
{
    if (vector == HV_TIMER_VEC) {
        lapict_bm_timer_irq(&hv_cpu);
        return;
    }
    spurious_irqs++;
    if (vector != 0xFF)
        hv_pcpu_eoi(NULL);
}

void mb_trap(struct frame *f)
{
    if (f->vector >= 32) {
        hv_host_irq((uint8_t)f->vector);
        return;
    }
    hv_panic("host exception %lu (error 0x%lx) at rip 0x%lx, cr2 via "
             "rsp 0x%lx",
             f->vector, f->error, f->rip, f->rsp);
}

/* The physical LAPIC in x2APIC mode, its timer in TSC-deadline mode. */
static void lapic_init(void)
{
    uint32_t a, b, c, d;
    hv_cpuid(1, 0, &a, &b, &c, &d);
    if (!(c & (1u << 21)) || !(c & (1u << 24)))
        hv_panic("the CPU lacks x2APIC or the TSC-deadline timer");
    hv_wrmsr(0x1B, hv_rdmsr(0x1B) | (1u << 11) | (1u << 10));
    hv_wrmsr(0x80F, 0x1FF); /* SVR: enabled, spurious 0xFF */
    hv_wrmsr(0x808, 0);     /* TPR */
    hv_wrmsr(0x832, (2u << 17) | HV_TIMER_VEC);
    hv_wrmsr(0x6E0, 0);
    /* The legacy PIC: all masked. */
    hv_outb(0x21, 0xFF);
    hv_outb(0xA1, 0xFF);
}

void hv_pcpu_init(void)
{
    idt_init(idt);
    lapic_init();
}

void hv_pcpu_timer_init(const struct lapict_bm_hw *hw)
{
    struct lapict_bm_cpu_config cc = {0};

    if (lapict_bm_clock_init(&hv_clock, hv_cfg.tsc_khz, hv_rdtsc(), 0))
        hv_panic("lapict_bm_clock_init refused tsc_khz=%u", hv_cfg.tsc_khz);
    cc.clock = &hv_clock;
    cc.preempt_shift = (uint32_t)(hv_rdmsr(0x485) & 0x1F);
    if (lapict_bm_cpu_init(&hv_cpu, &cc, hw, NULL, slots,
                           LAPICT_BM_SLOTS(hv_cfg.vcpus)))
        hv_panic("lapict_bm_cpu_init failed");
}
