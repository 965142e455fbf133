/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv: boot, configuration, the physical CPU's interrupts and the
 * round-robin scheduler of the vCPUs, and the run's RESULT line.
 *
 * Command line (multiboot, after argv[0]): hv_timer=preempt|lapic
 * advance=off|adaptive vcpus=N tsc_khz=K [bus_khz=B] [half=odd]. Module 1
 * is the guest (its module string is the guest's command line, argv[0]
 * first); an optional module 2 is the guest's own module (its
 * environment "initrd", kvm-unit-tests' convention).
 */
#include "hv.h"

struct hv_config hv_cfg = {
    .timer = HV_TIMER_PREEMPT,
    .advance_mode = LAPICT_ADVANCE_OFF,
    .vcpus = 1,
    .advance_max_ns = 100000,
};
struct lapict_bm_clock hv_clock;
struct lapict_bm_cpu hv_cpu;
struct hv_vcpu hv_vcpus[HV_MAX_VCPUS];

extern uint32_t hv_boot_magic, hv_boot_info;
extern uint8_t hv_image_end[];
extern const uint8_t hv_trap_stubs[];

struct mb_info {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
    uint32_t mods_count, mods_addr;
    uint32_t syms[4];
    uint32_t mmap_length, mmap_addr;
};

struct mb_module {
    uint32_t start, end, cmdline, reserved;
};

struct frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx,
        rax, vector, error, rip, cs, rflags, rsp, ss;
};

static uint64_t idt[512] __attribute__((aligned(16)));
static struct lapict_bm_slot slots[LAPICT_BM_SLOTS(HV_MAX_VCPUS)]
    __attribute__((aligned(64)));
static uint64_t spurious_irqs;

/* --- the physical CPU ----------------------------------------------------- */

uint64_t hv_last_tsc;

static uint64_t hw_read_tsc(void *ctx)
{
    (void)ctx;
    return hv_last_tsc = hv_rdtsc();
}

static struct hv_vcpu *running;
/* vCPUs woken by an interrupt, in order, each at most once. */
static struct hv_vcpu *woken[HV_MAX_VCPUS];
static uint32_t woken_head, woken_n;
static void hw_write_deadline(void *ctx, uint64_t tsc)
{
    (void)ctx;
    hv_wrmsr(0x6E0, tsc);
}

static void hw_eoi(void *ctx)
{
    (void)ctx;
    hv_wrmsr(0x80B, 0);
}

static const struct lapict_bm_hw hw_preempt = {
    .version = LAPICT_BM_HW_VERSION,
    .read_tsc = hw_read_tsc,
    .write_tsc_deadline = hw_write_deadline,
    .eoi = hw_eoi,
    .write_preempt = hv_write_preempt_op,
};

static const struct lapict_bm_hw hw_lapic = {
    .version = LAPICT_BM_HW_VERSION,
    .read_tsc = hw_read_tsc,
    .write_tsc_deadline = hw_write_deadline,
    .eoi = hw_eoi,
};

void hv_host_irq(uint8_t vector)
{
    if (vector == HV_TIMER_VEC) {
        lapict_bm_timer_irq(&hv_cpu);
        return;
    }
    spurious_irqs++;
    if (vector != 0xFF)
        hw_eoi(NULL);
}

void hv_trap(struct frame *f);
void hv_trap(struct frame *f)
{
    if (f->vector >= 32) {
        hv_host_irq((uint8_t)f->vector);
        return;
    }
    hv_panic("host exception %lu (error 0x%lx) at rip 0x%lx, cr2 via "
             "rsp 0x%lx",
             f->vector, f->error, f->rip, f->rsp);
}

static void idt_init(void)
{
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed))
    desc = {sizeof(idt) - 1, (uint64_t)(uintptr_t)idt};
    for (unsigned i = 0; i < 256; i++) {
        uint64_t h = (uint64_t)(uintptr_t)(hv_trap_stubs + 16 * i);
        idt[2 * i] = (h & 0xFFFF) | (0x08ull << 16) | (0x8Eull << 40) |
                     ((h >> 16) & 0xFFFF) << 48;
        idt[2 * i + 1] = h >> 32;
    }
    __asm__ volatile("lidt %0" ::"m"(desc));
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

/* --- configuration -------------------------------------------------------- */

static bool word_eq(const char *w, size_t n, const char *lit)
{
    size_t l = hv_strlen(lit);
    return n == l && !memcmp(w, lit, l);
}

static bool parse_u32(const char *s, size_t n, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    if (!n || n > 10)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return false;
    *out = (uint32_t)v;
    return true;
}

static void parse_cmdline(const char *s)
{
    bool first = true;
    while (*s) {
        const char *w, *eq;
        size_t n, kn;
        while (*s == ' ')
            s++;
        w = s;
        while (*s && *s != ' ')
            s++;
        n = (size_t)(s - w);
        if (!n)
            break;
        if (first) { /* argv[0] */
            first = false;
            continue;
        }
        eq = w;
        while (eq < s && *eq != '=')
            eq++;
        if (eq == s)
            hv_panic("command line: a word is not key=value");
        kn = (size_t)(eq - w);
        eq++;
        n = (size_t)(s - eq);
        if (word_eq(w, kn, "hv_timer")) {
            if (word_eq(eq, n, "preempt"))
                hv_cfg.timer = HV_TIMER_PREEMPT;
            else if (word_eq(eq, n, "lapic"))
                hv_cfg.timer = HV_TIMER_LAPIC;
            else
                hv_panic("command line: hv_timer must be preempt or lapic");
        } else if (word_eq(w, kn, "advance")) {
            if (word_eq(eq, n, "off"))
                hv_cfg.advance_mode = LAPICT_ADVANCE_OFF;
            else if (word_eq(eq, n, "adaptive"))
                hv_cfg.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
            else
                hv_panic("command line: advance must be off or adaptive");
        } else if (word_eq(w, kn, "vcpus")) {
            if (!parse_u32(eq, n, HV_MAX_VCPUS, &hv_cfg.vcpus) || !hv_cfg.vcpus)
                hv_panic("command line: vcpus must be 1..%u", HV_MAX_VCPUS);
        } else if (word_eq(w, kn, "tsc_khz")) {
            if (!parse_u32(eq, n, LAPICT_TSC_KHZ_MAX, &hv_cfg.tsc_khz) ||
                !hv_cfg.tsc_khz)
                hv_panic("command line: tsc_khz must be 1..%u",
                         LAPICT_TSC_KHZ_MAX);
        } else if (word_eq(w, kn, "bus_khz")) {
            if (!parse_u32(eq, n, 1000000, &hv_cfg.bus_khz) ||
                !hv_cfg.bus_khz || 1000000u % hv_cfg.bus_khz)
                hv_panic("command line: bus_khz must divide 1000000");
        } else if (word_eq(w, kn, "advance_max_ns")) {
            if (!parse_u32(eq, n, LAPICT_ADVANCE_NS_LIMIT,
                           &hv_cfg.advance_max_ns))
                hv_panic("command line: advance_max_ns must be 0..%u",
                         LAPICT_ADVANCE_NS_LIMIT);
        } else if (word_eq(w, kn, "half")) {
            if (!word_eq(eq, n, "odd"))
                hv_panic("command line: half takes only 'odd'");
            hv_cfg.half_odd = true;
        } else {
            hv_panic("command line: unknown key");
        }
    }
    if (!hv_cfg.tsc_khz)
        hv_panic("command line: tsc_khz is mandatory (the host TSC rate)");
    if (!hv_cfg.bus_khz) {
        hv_cfg.bus_khz = 1000000u % hv_cfg.tsc_khz ? 1000000u : hv_cfg.tsc_khz;
    }
}

/* --- scheduling ----------------------------------------------------------- */

/* An interrupt for @v: a halted vCPU runs again, and a vCPU that waits
 * for its turn goes to the queue of woken vCPUs, which run before the
 * round-robin ones and end the running one's slice (the timer interrupt
 * that raised it made that vCPU exit): a timer interrupt waits for the
 * vCPUs woken before it, not for the spinning ones' slices. */
void hv_vcpu_wake(struct hv_vcpu *v)
{
    if (!v->nmi_pending && lapict_apic_deliverable(&v->apic) < 0)
        return;
    v->halted = false;
    if (v != running && !v->woken) {
        v->woken = true;
        woken[(woken_head + woken_n++) % HV_MAX_VCPUS] = v;
    }
}

bool hv_resched(void)
{
    return woken_n != 0;
}

static struct hv_vcpu *woken_pop(void)
{
    while (woken_n) {
        struct hv_vcpu *v = woken[woken_head];
        woken_head = (woken_head + 1) % HV_MAX_VCPUS;
        woken_n--;
        v->woken = false;
        if (!v->done && !v->halted)
            return v;
    }
    return NULL;
}

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
    uint32_t next = 0, live;
    uint64_t slice = hv_cfg.vcpus > 1 ? (uint64_t)hv_cfg.tsc_khz : 0;

    for (;;) {
        struct hv_vcpu *v = NULL;
        live = 0;
        for (uint32_t i = 0; i < hv_cfg.vcpus; i++)
            live += !hv_vcpus[i].done;
        if (!live)
            return;
        v = woken_pop();
        for (uint32_t k = 0; !v && k < hv_cfg.vcpus; k++) {
            struct hv_vcpu *c = &hv_vcpus[(next + k) % hv_cfg.vcpus];
            if (!c->done && !c->halted) {
                v = c;
                next = (v->index + 1) % hv_cfg.vcpus;
            }
        }
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
        running = v;
        hv_vcpu_run(v, slice ? hv_rdtsc() + slice : 0);
        running = NULL;
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

void hv_main(void);
void hv_main(void)
{
    const struct mb_info *mbi = (const struct mb_info *)(uintptr_t)hv_boot_info;
    const struct mb_module *mods;
    const uint8_t *env = NULL;
    size_t env_len = 0;
    struct lapict_bm_cpu_config cc = {0};
    struct lapict_bm_stats st;
    uint64_t deliveries = 0, early = 0, lost = 0, doubled = 0;
    char name[64];
    int status = 0;

    hv_console_init();
    if (hv_boot_magic != 0x2BADB002u)
        hv_panic("not started by a multiboot loader");
    parse_cmdline((mbi->flags & 4) ? (const char *)(uintptr_t)mbi->cmdline
                                   : "");
    if (!(mbi->flags & 8) || mbi->mods_count < 1)
        hv_panic("no guest: the first multiboot module is the guest");
    mods = (const struct mb_module *)(uintptr_t)mbi->mods_addr;
    if (mbi->mods_count > 1) {
        env = (const uint8_t *)(uintptr_t)mods[1].start;
        env_len = mods[1].end - mods[1].start;
    }
    if (!(mbi->flags & 1) ||
        (uint64_t)mbi->mem_upper * 1024u + (1u << 20) <
            HV_GUEST_BASE + (uint64_t)hv_cfg.vcpus * HV_SLICE_MB * (1u << 20))
        hv_panic("%u vCPUs need %u MiB of RAM above 64 MiB", hv_cfg.vcpus,
                 hv_cfg.vcpus * HV_SLICE_MB);
    if (mods[0].end > HV_GUEST_BASE || (env && mods[1].end > HV_GUEST_BASE))
        hv_panic("the modules were loaded above 64 MiB");

    idt_init();
    lapic_init();
    hv_vmx_init();
    if (lapict_bm_clock_init(&hv_clock, hv_cfg.tsc_khz, hv_rdtsc(), 0))
        hv_panic("lapict_bm_clock_init refused tsc_khz=%u", hv_cfg.tsc_khz);
    cc.clock = &hv_clock;
    cc.preempt_shift = (uint32_t)(hv_rdmsr(0x485) & 0x1F);
    if (lapict_bm_cpu_init(&hv_cpu, &cc,
                           hv_cfg.timer == HV_TIMER_PREEMPT ? &hw_preempt
                                                            : &hw_lapic,
                           NULL, slots, LAPICT_BM_SLOTS(hv_cfg.vcpus)))
        hv_panic("lapict_bm_cpu_init failed");

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
