/* SPDX-License-Identifier: MIT */
/*
 * lapict inside QEMU (adapters/qemu): the patched QEMU 10.0
 * qemu-system-x86_64 that adapters/qemu/build.sh --qemu 10.0 produces,
 * booting the Linux guest of adapters/qemu/guest/mkimage.sh and the
 * project's multiboot test kernel (lapict-mbtest) under TCG, whose
 * userspace APIC is the one lapict drives.
 *
 * Built only when CMake is given LAPICT_QEMU_DIR (the qemu gate of
 * ci/test-all.sh does that); the directory holds qemu-system-x86_64 and
 * guest/{vmlinuz,initrd.img}. The guest's /init reports on the serial
 * console in "LAPICT key=value ..." lines.
 */
#define _GNU_SOURCE
#include "check_run.h"

/* lt_run_capture() */
#include "kvm_probe.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef LAPICT_QEMU_DIR
#error "LAPICT_QEMU_DIR must name the directory of the patched QEMU"
#endif

#define QEMU LAPICT_QEMU_DIR "/qemu-system-x86_64"
/*
 * The patched QEMU's APIC timer is QEMU's own on every machine type unless
 * this option makes it lapict's (and, under TCG, offers TSC-deadline).
 */
#define LAPICT_ON "-global apic.lapict=on"
#define KERNEL LAPICT_QEMU_DIR "/guest/vmlinuz"
#define INITRD LAPICT_QEMU_DIR "/guest/initrd.img"
/* Linux's HZ in Debian's cloud kernel (CONFIG_HZ=250). */
#define HZ 250

/*
 * What a failure message shows of a run's output: its LAPICT lines and the
 * last lines (Check's messages are limited to a few KiB).
 */
static const char *shown(const char *out)
{
    static char bufs[2][3000];
    static int which;
    char *buf = bufs[which ^= 1];
    size_t n = 0, len = strlen(out);
    const char *l, *tail = len > 1200 ? out + len - 1200 : out;

    for (l = out; l && *l && n < 1600; l = strchr(l, '\n')) {
        if (*l == '\n')
            l++;
        if (!strncmp(l, "LAPICT", 6)) {
            size_t k = strcspn(l, "\n");
            if (k > 1600 - n)
                k = 1600 - n;
            memcpy(buf + n, l, k);
            n += k;
            buf[n++] = '\n';
        }
    }
    snprintf(buf + n, sizeof(bufs[0]) - n, "[...]\n%s", tail);
    return buf;
}

/* The value of "key=" in the first line starting with @prefix, or NULL. */
static char *field(const char *out, const char *prefix, const char *key)
{
    static char val[256];
    const char *l, *e, *k;
    char pat[64];
    size_t n;

    for (l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, prefix, strlen(prefix)))
            continue;
        e = strchr(l, '\n');
        if (!e)
            e = l + strlen(l);
        snprintf(pat, sizeof(pat), " %s=", key);
        k = memmem(l, (size_t)(e - l), pat, strlen(pat));
        if (!k)
            return NULL;
        k += strlen(pat);
        n = strcspn(k, " \r\n");
        if (n >= sizeof(val))
            n = sizeof(val) - 1;
        memcpy(val, k, n);
        val[n] = 0;
        return val;
    }
    return NULL;
}

static uint64_t ufield(const char *out, const char *prefix, const char *key)
{
    const char *v = field(out, prefix, key);

    ck_assert_msg(v, "no %s in \"%s\" line:\n%s", key, prefix, shown(out));
    return strtoull(v, NULL, 10);
}

#define MAX_SMP 4

static pid_t spawn_sh(const char *cmd);
static char *slurp(const char *path, size_t *len);

/*
 * Host CPU withheld from a running QEMU: how long each vCPU thread ("CPU
 * n/TCG") and the main thread (where the APIC timer's callbacks run) were
 * runnable but waited for a host CPU, from the scheduler's statistics
 * (/proc/PID/task/TID/schedstat: run, wait and slices, in ns). @found has
 * bit 0 for the main thread and bit 1 + n for vCPU n.
 */
struct host_wait {
    uint64_t main_ns, vcpu_ns[MAX_SMP];
    unsigned found;
};

static bool host_wait_read(pid_t qemu, struct host_wait *w)
{
    char path[96], comm[32];
    struct dirent *e;
    DIR *d;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)qemu);
    d = opendir(path);
    if (!d)
        return false;
    memset(w, 0, sizeof(*w));
    while ((e = readdir(d))) {
        int tid = atoi(e->d_name), cpu = -1;
        unsigned long long run, wait;
        bool ok;

        if (tid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)qemu, tid);
        f = fopen(path, "r");
        ok = f && fgets(comm, sizeof(comm), f);
        if (f)
            fclose(f);
        if (!ok || (tid != qemu && (sscanf(comm, "CPU %d/TCG", &cpu) != 1 ||
                                    cpu < 0 || cpu >= MAX_SMP)))
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)qemu,
                 tid);
        f = fopen(path, "r");
        ok = f && fscanf(f, "%llu %llu", &run, &wait) == 2;
        if (f)
            fclose(f);
        if (!ok)
            continue;
        if (tid == qemu) {
            w->main_ns = wait;
            w->found |= 1u;
        } else {
            w->vcpu_ns[cpu] = wait;
            w->found |= 2u << cpu;
        }
    }
    closedir(d);
    return true;
}

/*
 * Boots Linux under TCG with @smp CPUs and QEMU options @opts; returns the
 * console output, and what the host withheld over cyclictest's run:
 * @wait_ns is the time the vCPU threads and the main thread waited for a
 * host CPU, added up, from a sample before the guest's "LAPICT start" line
 * to one after its "LAPICT end" (50 ms apart at most; the last one if QEMU
 * exits first). @err, if not NULL, gets QEMU's own output (trace events).
 */
static char *boot_linux_with(int smp, const char *opts, const char *append,
                             unsigned seconds, uint64_t *wait_ns, char **err)
{
    char dir[64], cmd[1536], path[96], *o;
    struct host_wait w = {0}, prev = {0}, w0 = {0}, w1 = {0};
    const unsigned want = (2u << smp) - 1;
    bool started = false, ended = false;
    pid_t pid, qemu = 0;
    int status, rm;
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-linux-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof(cmd),
             "exec timeout -s KILL %u %s -name lapict,debug-threads=on "
             "-pidfile %s/pid -M q35 -accel tcg -cpu max -smp %d -m 512 "
             "%s %s -display none -monitor none -serial file:%s/serial "
             "-no-reboot -kernel %s -initrd %s -append 'console=ttyS0 "
             "panic=-1 lapict.duration=%u %s' </dev/null >%s/out 2>&1",
             seconds + 150, QEMU, dir, smp, LAPICT_ON, opts, dir, KERNEL,
             INITRD, seconds, append, dir);
    pid = spawn_sh(cmd);
    snprintf(path, sizeof(path), "%s/serial", dir);
    while (waitpid(pid, &status, WNOHANG) != pid) {
        bool have;

        usleep(50000);
        if (ended)
            continue;
        if (!qemu) {
            int n = 0;

            snprintf(cmd, sizeof(cmd), "%s/pid", dir);
            f = fopen(cmd, "r");
            if (f && fscanf(f, "%d", &n) == 1)
                qemu = n;
            if (f)
                fclose(f);
        }
        have = qemu && host_wait_read(qemu, &w) && (w.found & want) == want;
        if (access(path, R_OK) == 0) {
            char *s = slurp(path, NULL);

            /* The sample before this read preceded the start line. */
            if (!started && strstr(s, "LAPICT start")) {
                started = true;
                w0 = prev;
            }
            if (started && strstr(s, "LAPICT end")) {
                ended = true;
                if (!host_wait_read(qemu, &w1) || (w1.found & want) != want)
                    w1 = have ? w : prev;
            }
            free(s);
        }
        if (have)
            prev = w;
    }
    /* QEMU's own messages where it did not get as far as the console. */
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof(path), "%s/out", dir);
    o = slurp(path, NULL);
    if (err) {
        snprintf(path, sizeof(path), "%s/out", dir);
        *err = slurp(path, NULL);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &rm));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "QEMU exit status %d:\n%s", status, shown(o));
    ck_assert_msg(strstr(o, "LAPICT done"), "the guest did not finish:\n%s", o);
    ck_assert_msg((w0.found & want) == want && (w1.found & want) == want,
                  "the scheduler's statistics of QEMU's threads were not "
                  "read (threads %#x and %#x of %#x)",
                  w0.found, w1.found, want);
    *wait_ns = w1.main_ns - w0.main_ns;
    for (int c = 0; c < smp; c++)
        *wait_ns += w1.vcpu_ns[c] - w0.vcpu_ns[c];
    return o;
}

static char *boot_linux(int smp, const char *append, unsigned seconds,
                        uint64_t *wait_ns)
{
    return boot_linux_with(smp, "", append, seconds, wait_ns, NULL);
}

/*
 * cyclictest ran to the end on every CPU with at least @min_loops wake-ups
 * (one per 1000 us interval, or one per tick without high resolution).
 */
static void assert_cyclictest(const char *o, int smp, uint64_t min_loops)
{
    char line[64];
    const char *p = o;
    int threads = 0;

    ck_assert_msg(strstr(o, "LAPICT cyclictest rc=0"), "cyclictest failed:\n%s",
                  shown(o));
    while ((p = strstr(p, "LAPICT cyclictest thread="))) {
        uint64_t count = ufield(p, "LAPICT cyclictest thread=", "count");
        /* A count far below that means timer interrupts went missing. */
        ck_assert_msg(count >= min_loops,
                      "thread %d: %" PRIu64 " loops, fewer than %" PRIu64
                      ":\n%s",
                      threads, count, min_loops, shown(o));
        threads++;
        p++;
    }
    snprintf(line, sizeof(line), "%d threads", smp);
    ck_assert_msg(threads == smp, "%s expected, %d reported:\n%s", line,
                  threads, shown(o));
}

/* Local timer interrupts per CPU over the cyclictest run. */
static uint64_t loc_delta(const char *o, int cpu)
{
    char key[16];

    snprintf(key, sizeof(key), "cpu%d", cpu);
    return ufield(o, "LAPICT end ", key) - ufield(o, "LAPICT start ", key);
}

/*
 * Cyclictest's histogram as the guest's /init prints it (lapict.hist=US):
 * the samples of thread 0 in its "LAPICT hist" buckets, which cyclictest's
 * "# Total" (the count) adds up; those beyond the last bucket it counts
 * apart, in "LAPICT hist_overflow".
 */
static uint64_t hist_samples(const char *o)
{
    uint64_t n = 0;

    for (const char *l = strstr(o, "LAPICT hist us="); l;
         l = strstr(l + 1, "\nLAPICT hist us="))
        n += ufield(l + (*l == '\n'), "LAPICT hist us=", "t0");
    return n;
}

/*
 * The three clockevent modes Linux picks on lapict's APIC: TSC-deadline by
 * default, the one-shot count-down with lapic=notscdeadline, and the
 * periodic count-down at HZ with nohz=off highres=off as well.
 */
static const struct ce_mode {
    const char *name, *append;
    const char *clockevent; /* clockevent0 and cpu0's tick device */
    const char *handler;    /* cpu0's tick handler */
    unsigned wakeups_per_s; /* cyclictest's: one per 1000 us, or per tick */
    bool hist;              /* the histogram is checked too */
} ce_modes[] = {
    {"tsc-deadline", "", "lapic-deadline", "hrtimer_interrupt", 1000, false},
    {"one-shot", "lapic=notscdeadline", "lapic", "hrtimer_interrupt", 1000,
     true},
    {"periodic", "lapic=notscdeadline nohz=off highres=off", "lapic",
     "tick_handle_periodic", HZ, false},
};

/* One CPU, two, and more vCPUs than CI's hosts have cores. */
static const int ce_smp[] = {1, 2, 4};

#define CE_MODES (int)(sizeof(ce_modes) / sizeof(*ce_modes))
#define CE_SMPS (int)(sizeof(ce_smp) / sizeof(*ce_smp))

static bool str_is(const char *v, const char *want)
{
    return v && !strcmp(v, want);
}

/*
 * Fewest wake-ups of a cyclictest thread whose CPU's timer works: half of
 * those its rate gives over the run, less the time the host kept QEMU's
 * vCPU threads or its main thread (the timer's) from running, @wait_ns.
 * Its own vCPU waiting, no wake-up happens; another waiting may hold the
 * lock its interrupt needs. So a starved host lowers the bound, down to
 * none, and a quiet one keeps it at half.
 */
static uint64_t wakeup_floor(unsigned seconds, unsigned per_s, uint64_t wait_ns)
{
    uint64_t ns = (uint64_t)seconds * 1000000000u;

    ns = ns > wait_ns ? ns - wait_ns : 0;
    return ns / 1000u * per_s / 2000000u;
}

/*
 * Periodic ticks: LOC on @cpu rose at HZ within 0.3 % of the guest's
 * CLOCK_MONOTONIC (missed ticks on a busy host are caught up, not lost).
 * Each LOC read lies between two clock reads (mono0_ns, mono_ns;
 * guest/init), so the time the count spans lies between the inner and the
 * outer distance of those reads: the count must fit HZ over that range,
 * +-0.3 % and one tick at each end. The 0.3 % is the guest's, not the
 * timer's: Linux sets its tick's TMICT from LAPIC counts between PIT
 * interrupts over 100 ms, and under TCG on a loaded host each of those
 * interrupts arrives up to a few hundred us late, so the tick's period is
 * off from CLOCK_MONOTONIC (the TSC's, calibrated apart) by up to about
 * 0.2 % before lapict counts a single tick (seen: 1 560 ticks against
 * the 0.1 % bound's 1 559.8). Over the 6 s runs here that
 * still catches six ticks lost or doubled; single ones are the unit and
 * hv gates' to catch, which count every interrupt against its instant.
 */
static void assert_loc_hz(const char *o, int cpu)
{
    uint64_t inner, outer, loc;
    double lo, hi;

    inner = ufield(o, "LAPICT end ", "mono0_ns") -
            ufield(o, "LAPICT start ", "mono_ns");
    outer = ufield(o, "LAPICT end ", "mono_ns") -
            ufield(o, "LAPICT start ", "mono0_ns");
    loc = loc_delta(o, cpu);
    lo = HZ * 0.997 * (double)inner / 1e9 - 1;
    hi = HZ * 1.003 * (double)outer / 1e9 + 1;
    ck_assert_msg((double)loc >= lo && (double)loc <= hi,
                  "cpu%d LOC %" PRIu64 " in %" PRIu64 "..%" PRIu64 " ns: not "
                  "%d/s +-0.3%% (%.1f..%.1f):\n%s",
                  cpu, loc, inner, outer, HZ, lo, hi, shown(o));
}

/*
 * Rule: Linux runs on lapict's APIC timer (-global apic.lapict=on) in each
 * clockevent mode (ce_modes[_i / CE_SMPS]) at -smp 1, 2 and 4
 * (ce_smp[_i % CE_SMPS]). It
 * picks the mode's clockevent and tick handler (TSC-deadline exists only
 * where lapict drives the APIC), and on every CPU cyclictest runs to the
 * end, each of its wake-ups taking a local timer interrupt on that CPU,
 * with at least half as many wake-ups as its rate gives in the time the
 * host let QEMU's vCPUs and timer run (wakeup_floor). Periodic:
 * every CPU's LOC rises at HZ (assert_loc_hz). One-shot: the histogram
 * bench.sh's CDFs are drawn from holds every sample.
 */
START_TEST(linux_modes)
{
    const unsigned s = 3;
    const struct ce_mode *m = &ce_modes[_i / CE_SMPS];
    const int smp = ce_smp[_i % CE_SMPS];
    uint64_t wait_ns;
    char append[160], prefix[48];
    char *o;

    snprintf(append, sizeof(append), "%s%s", m->append,
             m->hist ? " lapict.hist=20000" : "");
    o = boot_linux(smp, append, s, &wait_ns);
    ck_assert_msg(
        str_is(field(o, "LAPICT boot ", "clockevent"), m->clockevent) &&
            str_is(field(o, "LAPICT boot ", "tickdev"), m->clockevent) &&
            str_is(field(o, "LAPICT boot ", "handler"), m->handler),
        "%s, -smp %d: not %s with %s:\n%s", m->name, smp, m->clockevent,
        m->handler, shown(o));
    ck_assert_uint_eq(ufield(o, "LAPICT boot ", "cpus"), (unsigned)smp);
    /* Each CPU's own floor below: a starved host may allow no wake-up. */
    assert_cyclictest(o, smp, 0);
    for (int c = 0; c < smp; c++) {
        uint64_t n, floor, loc = loc_delta(o, c);

        snprintf(prefix, sizeof(prefix), "LAPICT cyclictest thread=%d ", c);
        n = ufield(o, prefix, "count");
        floor = wakeup_floor(s, m->wakeups_per_s, wait_ns);
        printf("RESULT test=qemu-linux mode=%s smp=%d cpu=%d wakeups=%" PRIu64
               " floor=%" PRIu64 " loc=%" PRIu64 " host_wait_ms=%" PRIu64 "\n",
               m->name, smp, c, n, floor, loc, wait_ns / 1000000u);
        fflush(stdout);
        ck_assert_msg(n >= floor,
                      "%s, -smp %d, cpu%d: %" PRIu64 " wake-ups, "
                      "fewer than %" PRIu64 " (the host withheld %" PRIu64
                      " ms of %u s):\n%s",
                      m->name, smp, c, n, floor, wait_ns / 1000000u, s,
                      shown(o));
        ck_assert_msg(loc >= n,
                      "%s, -smp %d, cpu%d: %" PRIu64 " wake-ups on "
                      "%" PRIu64 " local timer interrupts:\n%s",
                      m->name, smp, c, n, loc, shown(o));
        if (str_is(m->handler, "tick_handle_periodic"))
            assert_loc_hz(o, c);
    }
    if (m->hist)
        ck_assert_msg(hist_samples(o) ==
                          ufield(o, "LAPICT cyclictest thread=", "count"),
                      "histogram %" PRIu64 " samples (%" PRIu64 " beyond "
                      "it):\n%s",
                      hist_samples(o), ufield(o, "LAPICT hist_overflow ", "t0"),
                      shown(o));
    free(o);
}
END_TEST

/*
 * The expiries in QEMU's trace of vcpu_timer_expire (@log): on a halted
 * vCPU, on a running one, and how many ran before their deadline.
 */
static void count_vcpu_expiries(const char *log, uint64_t *halted,
                                uint64_t *running, uint64_t *early)
{
    const char *p;

    *halted = *running = *early = 0;
    for (p = strstr(log, "vcpu_timer_expire "); p;
         p = strstr(p + 1, "vcpu_timer_expire ")) {
        const char *late = strstr(p, " expired ");
        const char *how = strstr(p, ", halted ");
        const char *eol = strchr(p, '\n');

        ck_assert_ptr_nonnull(late);
        ck_assert_ptr_nonnull(how);
        ck_assert_msg(!eol || how < eol, "trace line without 'halted'");
        if (late[9] == '-')
            (*early)++;
        if (how[9] == '1')
            (*halted)++;
        else
            (*running)++;
    }
}

/*
 * Rule: under MTTCG the APIC timer is the vCPU's own: its thread expires
 * it and raises the interrupt itself, where the guest runs next, whether
 * it was halted (it waited for the deadline) or running (a host timer made
 * it leave the guest), and the main loop takes no part. Linux's cyclictest
 * at 1 kHz on lapict's TSC-deadline timer, -smp 2, without (_i = 0) and
 * with the adaptive advance (_i = 1, whose wait runs there too): QEMU's
 * trace event vcpu_timer_expire counts at least as many expiries on halted
 * vCPU threads as the wake-ups the host let happen (wakeup_floor, on each
 * CPU), none of them before its deadline, and every wake-up still took a
 * local timer interrupt.
 */
START_TEST(linux_halt_expiry)
{
    const unsigned s = 3;
    const int smp = 2;
    uint64_t wait_ns, n = 0, floor = 0, early, loc = 0, halted, running;
    char prefix[48], *o, *err;

    o = boot_linux_with(smp,
                        _i ? "-global apic.timer-advance=auto "
                             "-trace vcpu_timer_expire"
                           : "-trace vcpu_timer_expire",
                        "", s, &wait_ns, &err);
    ck_assert_str_eq(field(o, "LAPICT boot ", "clockevent"), "lapic-deadline");
    assert_cyclictest(o, smp, 0);
    for (int c = 0; c < smp; c++) {
        snprintf(prefix, sizeof(prefix), "LAPICT cyclictest thread=%d ", c);
        n += ufield(o, prefix, "count");
        loc += loc_delta(o, c);
        floor += wakeup_floor(s, 1000, wait_ns);
    }
    count_vcpu_expiries(err, &halted, &running, &early);
    printf("RESULT test=qemu-halt-expiry advance=%s wakeups=%" PRIu64
           " floor=%" PRIu64 " halt_expiries=%" PRIu64
           " running_expiries=%" PRIu64 " early=%" PRIu64
           " host_wait_ms=%" PRIu64 "\n",
           _i ? "auto" : "off", n, floor, halted, running, early,
           wait_ns / 1000000u);
    fflush(stdout);
    ck_assert_msg(early == 0, "%" PRIu64 " expiries before the deadline",
                  early);
    ck_assert_msg(halted >= floor,
                  "%" PRIu64 " timer expiries on halted vCPU threads, fewer "
                  "than %" PRIu64 " (%" PRIu64 " wake-ups):\n%s",
                  halted, floor, n, shown(o));
    ck_assert_msg(loc >= n,
                  "%" PRIu64 " wake-ups on %" PRIu64 " local "
                  "timer interrupts",
                  n, loc);
    free(err);
    free(o);
}
END_TEST

/* ---- mbtest ----------------------------------------------------------------
 */

/*
 * Checks of mbtest that are not the timer's and that QEMU 10.0's userspace
 * APIC does not meet (the timer's must all pass). Each is a QEMU defect
 * outside the timer that the patch series does not fix (yet).
 */
static const char *const qemu_known[] = {
    /* QEMU maps one APIC page for every CPU at 0xFEE00000 (shared with MSI
     * writes): IA32_APIC_BASE's base is stored but the page stays. */
    "relocate: APIC answers at 0xFED40000",
    "relocate: 0xFEE00000 is unassigned",
};

/*
 * mbtest on @qemu with the machine, accelerator and CPU options @opts; the
 * console output. @fails counts its failures, @unknown those not in
 * qemu_known (named on stderr; @unknown is NULL where the caller checks
 * the failures itself).
 */
static char *run_mbtest(const char *qemu, const char *opts, bool x2,
                        const char *words, int *fails, int *unknown)
{
    char cmd[1536], *o, *line;
    char env[] = "/tmp/lapict-qemu-mbtest-env-XXXXXX";
    int fd = mkstemp(env), status;
    static const char text[] = "TEST_DEVICE=0\nLAPICT_MBTEST=ok\n";

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, sizeof(text) - 1),
                     (int)(sizeof(text) - 1));
    close(fd);
    snprintf(cmd, sizeof(cmd),
             "timeout -s KILL 120 %s %s -m 128 "
             "-display none -monitor none -serial stdio -no-reboot "
             "-device isa-debug-exit,iobase=0xf4,iosize=4 "
             "-kernel %s -initrd %s -append 'initrd=1 x2apic=%d %s' </dev/null",
             qemu, opts, LAPICT_MBTEST, env, x2, words);
    o = lt_run_capture(cmd, &status);
    unlink(env);
    ck_assert_msg(strstr(o, "SUMMARY: "), "did not finish (%d):\n%s", status,
                  o);
    ck_assert_msg(strstr(o, x2 ? "mode: x2apic" : "mode: xapic"), "%s",
                  shown(o));
    *fails = 0;
    if (unknown)
        *unknown = 0;
    for (line = strstr(o, "FAIL: "); line; line = strstr(line + 1, "FAIL: ")) {
        size_t len = strcspn(line + 6, "\r\n");
        bool known = false;

        (*fails)++;
        for (size_t i = 0; i < sizeof(qemu_known) / sizeof(*qemu_known); i++)
            known |= len == strlen(qemu_known[i]) &&
                     !strncmp(line + 6, qemu_known[i], len);
        if (!known && unknown) {
            (*unknown)++;
            fprintf(stderr, "mbtest %s: %.*s\n", opts, (int)len + 6, line);
        }
    }
    /* isa-debug-exit: QEMU exits with (value << 1) | 1. */
    ck_assert_msg(status == (*fails ? 3 : 1), "status %d:\n%s", status,
                  shown(o));
    return o;
}

/* mbtest with @opts, xAPIC or x2APIC: only known failures, and the
 * deadline and nested SVM TSC checks ran. */
static void mbtest_case(const char *opts, bool x2)
{
    int fails, unknown;
    char *o = run_mbtest(QEMU, opts, x2, "", &fails, &unknown);

    ck_assert_msg(unknown == 0, "%d unexpected failures:\n%s", unknown,
                  shown(o));
    /* -global apic.lapict=on: CPUID offers the mode, and it works. */
    ck_assert_msg(strstr(o, "PASS: cpuid: TSC-deadline"),
                  "CPUID offers no TSC-deadline:\n%s", shown(o));
    ck_assert_msg(strstr(o, "PASS: tsc deadline: fires, not early"),
                  "no deadline check:\n%s", o);
    /* -cpu max offers SVM under TCG: the check runs, it does not skip. */
    ck_assert_msg(strstr(o, "PASS: svm tsc: after #VMEXIT"),
                  "no nested SVM TSC check:\n%s", o);
    free(o);
}

#define MB_TCG "-M pc -accel tcg " LAPICT_ON

/*
 * Rule: under TCG with lapict's timer (-global apic.lapict=on), every timer
 * check of mbtest passes, TSC-deadline mode's included (-cpu max offers it
 * in CPUID), in xAPIC (_i = 0, CPUID without x2APIC, as mbtest's x2apic=0
 * expects) and in x2APIC (_i = 1: QEMU's own x2APIC mode, which -cpu max
 * offers), and so do the nested SVM checks of the TSC: a WRMSR to IA32_TSC
 * survives VMRUN and #VMEXIT, and the nested guest reads it plus the
 * VMCB's offset.
 */
START_TEST(mbtest_tcg)
{
    mbtest_case(_i ? MB_TCG " -cpu max" : MB_TCG " -cpu max,-x2apic", _i);
}
END_TEST

/*
 * Rule: where CPUID does not offer TSC-deadline mode (-cpu max,-tsc-deadline)
 * lapict's timer has no such mode: LVTT's mode 10 does not stick, as on
 * hardware, in xAPIC (_i = 0) and x2APIC (_i = 1). IA32_TSC_DEADLINE is
 * then an MSR TCG does not implement: it reads 0 and ignores writes, as
 * in Debian's stock 10.0 (hardware raises #GP).
 */
START_TEST(mbtest_no_deadline)
{
    int fails, unknown;
    char *o = run_mbtest(QEMU,
                         _i ? MB_TCG " -cpu max,-tsc-deadline"
                            : MB_TCG " -cpu max,-tsc-deadline,-x2apic",
                         _i, "nodl=2", &fails, &unknown);

    ck_assert_msg(fails == 0 && strstr(o, "SUMMARY: 4 tests, 0 failures"), "%s",
                  shown(o));
    free(o);
}
END_TEST

/*
 * Rule: under MTTCG a vCPU that is running when its APIC timer is due is
 * made to leave the guest by its own host timer (_i = 0), or, where the
 * host refuses it one (_i = 1: timer_create fails with EAGAIN, preloaded),
 * by a kick from the main loop, which QEMU warns of once; either way it
 * expires the timer on its thread, never early. mbtest polls TMCCT and
 * waits for its timer interrupts with interrupts enabled: QEMU's trace
 * event vcpu_timer_expire shows expiries on a running vCPU ("halted 0")
 * and none before its deadline, and every timer check passes.
 */
START_TEST(mbtest_running_expiry)
{
    static const char warning[] = "vCPU timers: no host timer for the vCPU "
                                  "thread (Resource temporarily unavailable)";
    char tr[] = "/tmp/lapict-qemu-vtimer-XXXXXX";
    char opts[256];
    int fd = mkstemp(tr), fails, unknown;
    uint64_t running, halted, early;
    char *o, *t;

    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(opts, sizeof(opts),
             MB_TCG " -cpu max,-x2apic -trace vcpu_timer_expire -D %s", tr);
    o = run_mbtest(_i ? "env LD_PRELOAD=" LAPICT_NO_TIMER_CREATE " " QEMU
                      : QEMU,
                   opts, false, "", &fails, &unknown);
    ck_assert_msg(unknown == 0, "%d unexpected failures:\n%s", unknown,
                  shown(o));
    ck_assert_msg(!strstr(o, warning) == !_i, "%s the warning:\n%s",
                  _i ? "without" : "with", shown(o));
    t = slurp(tr, NULL);
    unlink(tr);
    count_vcpu_expiries(t, &halted, &running, &early);
    printf("RESULT test=qemu-running-expiry kick=%s running=%" PRIu64
           " halted=%" PRIu64 " early=%" PRIu64 "\n",
           _i ? "main-loop" : "host-timer", running, halted, early);
    fflush(stdout);
    ck_assert_msg(early == 0, "%" PRIu64 " expiries before the deadline",
                  early);
    ck_assert_msg(running > 0,
                  "no expiry on a running vCPU (%" PRIu64 " on halted ones)",
                  halted);
    free(t);
    free(o);
}
END_TEST

/* ---- migration -------------------------------------------------------------
 */

/* Runs @cmd with sh -c in a child; its pid (the shell execs the QEMU). */
static pid_t spawn_sh(const char *cmd)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (!pid) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long n;

    ck_assert_msg(f, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = calloc(1, (size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

static bool wait_for(const char *path, const char *text, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        char *b;
        bool found;

        /* QEMU creates the file when it has parsed its options. */
        if (access(path, R_OK) == 0) {
            b = slurp(path, NULL);
            found = strstr(b, text) != NULL;
            free(b);
            if (found)
                return true;
        }
        usleep(100000);
    }
    return false;
}

/* One HMP command through the monitor socket; returns once it answered. */
static void hmp(const char *sock, const char *cmd)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char buf[4096];
    size_t got = 0;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    int prompts = 0;

    ck_assert_int_ge(fd, 0);
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0,
                  "monitor %s: %s", sock, strerror(errno));
    /* The banner ends with the first prompt; the answer with the second. */
    while (prompts < 2) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = 0;
        if (strstr(buf, "(qemu) ")) {
            prompts++;
            if (prompts == 1) {
                ck_assert_int_eq(write(fd, cmd, strlen(cmd)), (int)strlen(cmd));
                ck_assert_int_eq(write(fd, "\n", 1), 1);
            }
            memmove(buf, strstr(buf, "(qemu) ") + 7,
                    strlen(strstr(buf, "(qemu) ") + 7) + 1);
            got = strlen(buf);
        }
        if (got > sizeof(buf) / 2)
            got = 0;
    }
    close(fd);
}

struct mig {
    char dir[64], state[96], sock[96], serial[96];
    const char *cpu; /* -cpu of both ends */
};

/*
 * Boots Linux on lapict's timer (periodic LAPIC ticks and cyclictest's
 * timers armed the whole time) and migrates it to a file during
 * cyclictest; migrate_in() loads it, lapict's timer again.
 */
static void migrate_out(struct mig *m, const char *cpu, const char *append)
{
    char cmd[1536];
    pid_t pid;

    m->cpu = cpu;
    snprintf(m->dir, sizeof(m->dir), "/tmp/lapict-qemu-mig-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(m->dir));
    snprintf(m->state, sizeof(m->state), "%s/state", m->dir);
    snprintf(m->sock, sizeof(m->sock), "%s/mon", m->dir);
    snprintf(m->serial, sizeof(m->serial), "%s/serial", m->dir);
    snprintf(cmd, sizeof(cmd),
             "exec timeout -s KILL 150 %s -M q35 -accel tcg -cpu %s -m 512 "
             "%s -display none -serial file:%s "
             "-monitor unix:%s,server,nowait -no-reboot -kernel %s -initrd %s "
             "-append 'console=ttyS0 panic=-1 lapict.duration=8 %s' "
             "</dev/null >%s/out 2>&1",
             QEMU, m->cpu, LAPICT_ON, m->serial, m->sock, KERNEL, INITRD,
             append, m->dir);
    pid = spawn_sh(cmd);
    ck_assert_msg(wait_for(m->serial, "LAPICT start", 120),
                  "the source guest did not start cyclictest");
    /* Into cyclictest's run, so its timer and the tick are armed. */
    sleep(2);
    /*
     * A live migration (it stops the VM at its end): a source stopped first
     * would leave the destination paused, as QEMU migrates the run state.
     */
    snprintf(cmd, sizeof(cmd), "migrate \"exec:cat > %s\"", m->state);
    hmp(m->sock, cmd);
    hmp(m->sock, "quit");
    waitpid(pid, NULL, 0);
}

static char *migrate_in(const struct mig *m, const char *append, int *status)
{
    char cmd[1536];

    snprintf(cmd, sizeof(cmd),
             "timeout -s KILL 120 %s -M q35 -accel tcg -cpu %s -m 512 %s "
             "-display none -monitor none -serial stdio -no-reboot "
             "-kernel %s -initrd %s -append 'console=ttyS0 panic=-1 "
             "lapict.duration=8 %s' -incoming 'exec:cat %s' </dev/null",
             QEMU, m->cpu, LAPICT_ON, KERNEL, INITRD, append, m->state);
    return lt_run_capture(cmd, status);
}

static void mig_cleanup(struct mig *m)
{
    char cmd[128];
    int status;

    snprintf(cmd, sizeof(cmd), "rm -rf %s", m->dir);
    free(lt_run_capture(cmd, &status));
}

/*
 * Rule: a running periodic count-down survives a move: the destination
 * finishes cyclictest (its one-shot timers keep firing) and the periodic
 * tick keeps rising after the move, on a vCPU without TSC-deadline
 * (_i = 0) and on one whose CPUID offers it (_i = 1). With lapict's timer
 * the apic_lapict subsection goes in both: the TSC counts
 * QEMU_CLOCK_VIRTUAL, which a destination whose TSC counts the host's
 * ticks (QEMU's own timer) would move.
 */
START_TEST(migrate_timer_armed)
{
    static const char *const cpus[] = {"max,-tsc-deadline", "max"};
    const char *append = "lapic=notscdeadline nohz=off highres=off";
    struct mig m;
    size_t len;
    char *s, *o;
    int status;

    char *src;
    uint64_t ns, loc;
    double rate;

    migrate_out(&m, cpus[_i], append);
    s = slurp(m.state, &len);
    ck_assert_msg(memmem(s, len, "apic_lapict", 11),
                  "-cpu %s: no apic_lapict subsection for a periodic "
                  "count-down",
                  cpus[_i]);
    free(s);
    src = slurp(m.serial, NULL);
    o = migrate_in(&m, append, &status);
    ck_assert_msg(status == 0, "destination status %d:\n%s", status, shown(o));
    ck_assert_msg(strstr(o, "LAPICT end"), "no end after migration:\n%s",
                  shown(o));
    ck_assert_msg(strstr(o, "LAPICT cyclictest rc=0"), "%s", shown(o));
    ck_assert_msg(!strstr(o, "LAPICT dmesg"), "kernel complaints:\n%s",
                  shown(o));
    ck_assert_msg(strstr(o, "LAPICT done"), "%s", shown(o));
    /* The tick went on across the move at HZ of the guest's clock. */
    ns = ufield(o, "LAPICT end ", "mono_ns") -
         ufield(src, "LAPICT start ", "mono_ns");
    loc =
        ufield(o, "LAPICT end ", "cpu0") - ufield(src, "LAPICT start ", "cpu0");
    rate = (double)loc * 1e9 / (double)ns;
    ck_assert_msg(rate > HZ * 0.99 && rate < HZ * 1.01,
                  "LOC %" PRIu64 " in %" PRIu64 " ns across the migration: "
                  "%.2f/s\n--- source:\n%s\n--- destination:\n%s",
                  loc, ns, rate, src, shown(o));
    free(src);
    free(o);
    mig_cleanup(&m);
}
END_TEST

/*
 * Rule: a corrupt lapict subsection fails the incoming migration with
 * lapict's message; QEMU exits, it does not abort.
 */
START_TEST(migrate_corrupt_blob)
{
    /*
     * TSC-deadline mode (-cpu max): a deadline is armed at every instant
     * of cyclictest's run, which only the subsection carries.
     */
    const char *append = "";
    struct mig m;
    size_t len;
    char *s, *o, *p;
    int status;
    FILE *f;

    /* The VM may stop between a deadline's expiry and the next write. */
    for (int attempt = 0;; attempt++) {
        migrate_out(&m, "max", append);
        s = slurp(m.state, &len);
        p = memmem(s, len, "apic_lapict", 11);
        if (p || attempt == 2)
            break;
        free(s);
        mig_cleanup(&m);
    }
    ck_assert_msg(p, "no apic_lapict subsection in the stream");
    /* Name, then the subsection's version (be32), then its fields. */
    ck_assert_uint_ge(len, (size_t)(p - s) + 11 + 4 + 4);
    /* lapict_sv.state (be32) first: bit 30 means nothing. */
    p[11 + 4] ^= 0x40;
    f = fopen(m.state, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(s, 1, len, f), len);
    fclose(f);
    free(s);
    o = migrate_in(&m, append, &status);
    ck_assert_msg(status > 0 && status != 124 && status != 137,
                  "status %d (want a clean failure exit):\n%s", status,
                  shown(o));
    ck_assert_msg(strstr(o, "lapict timer state rejected"), "%s", shown(o));
    ck_assert_msg(strstr(o, "field invalid"), "%s", shown(o));
    ck_assert_msg(!strstr(o, "LAPICT"), "the guest ran:\n%s", shown(o));
    free(o);
    mig_cleanup(&m);
}
END_TEST

/* ---- repeated migration ----------------------------------------------------
 */

/*
 * hmp() for a monitor that may not be listening yet (a QEMU just started):
 * connects with retries for up to @seconds; copies the answer to @ans.
 */
static bool hmp_try(const char *sock, const char *cmd, char *ans, size_t cap,
                    int seconds)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char buf[65536];
    size_t got = 0;
    int fd = -1, prompts = 0;

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
    for (int i = 0; i < seconds * 50; i++) {
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_int_ge(fd, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
            break;
        close(fd);
        fd = -1;
        usleep(20000);
    }
    /* No stale answer survives a monitor that cannot be reached. */
    if (ans && cap)
        ans[0] = 0;
    if (fd < 0)
        return false;
    while (prompts < 2) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
        char *pr;

        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = 0;
        while (prompts < 2 && (pr = strstr(buf, "(qemu) "))) {
            prompts++;
            if (prompts == 1) {
                ck_assert_int_eq(write(fd, cmd, strlen(cmd)), (int)strlen(cmd));
                ck_assert_int_eq(write(fd, "\n", 1), 1);
            } else if (ans && cap) {
                size_t k =
                    (size_t)(pr - buf) < cap - 1 ? (size_t)(pr - buf) : cap - 1;

                memcpy(ans, buf, k);
                ans[k] = 0;
            }
            memmove(buf, pr + 7, strlen(pr + 7) + 1);
            got = strlen(buf);
        }
        if (got > sizeof(buf) / 2) {
            memmove(buf, buf + got - 64, 65);
            got = 64;
        }
    }
    close(fd);
    return prompts == 2;
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * Hop @i of a chain of moves: @qemu (killed after @kill_s seconds) with the
 * machine and guest of @guest, serial @dir/serial<i>, monitor @dir/mon<i>,
 * stderr @dir/out<i>, and for i > 0 -incoming from @dir/state<i-1>.
 */
static pid_t hop_start(const char *dir, int i, const char *qemu,
                       unsigned kill_s, const char *guest)
{
    char cmd[2048], inc[160] = "";

    if (i > 0)
        snprintf(inc, sizeof(inc), "-incoming 'exec:cat %s/state%d'", dir,
                 i - 1);
    snprintf(cmd, sizeof(cmd),
             "exec timeout -s KILL %u %s -name lapict,debug-threads=on "
             "-accel tcg -cpu max -display none "
             "-serial file:%s/serial%d -monitor unix:%s/mon%d,server,nowait "
             "-no-reboot %s %s </dev/null >%s/out%d 2>&1",
             kill_s, qemu, dir, i, dir, i, guest, inc, dir, i);
    return spawn_sh(cmd);
}

/*
 * What the host withheld from hop @hop's QEMU so far (@hop is the timeout
 * process hop_start() execs; QEMU is its child): the time its main thread
 * and vCPU 0 waited for a host CPU, from the scheduler's statistics; 0
 * when they cannot be read (QEMU gone).
 */
static uint64_t hop_wait_ns(pid_t hop)
{
    struct host_wait w = {0};
    char path[64];
    int qemu = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)hop,
             (int)hop);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fscanf(f, "%d", &qemu) != 1)
        qemu = 0;
    fclose(f);
    if (!qemu || !host_wait_read(qemu, &w) || (w.found & 3u) != 3u)
        return 0;
    return w.main_ns + w.vcpu_ns[0];
}

/* Hop @i of a Linux chain (hop_start()), on lapict's timer. */
static pid_t chain_start(const char *dir, int i, const char *append,
                         unsigned duration)
{
    char guest[1024];

    snprintf(guest, sizeof(guest),
             "-M q35 -m 512 " LAPICT_ON " -kernel %s -initrd %s "
             "-append 'console=ttyS0 panic=-1 lapict.duration=%u "
             "lapict.ticks=1 %s'",
             KERNEL, INITRD, duration, append);
    return hop_start(dir, i, QEMU, 400, guest);
}

/* Waits until the monitor of @sock reports "running"; false after @secs. */
static bool wait_running(const char *sock, int secs)
{
    char ans[512];
    double end = now_s() + secs;

    while (now_s() < end) {
        if (hmp_try(sock, "info status", ans, sizeof(ans), 5) &&
            strstr(ans, "VM status: running"))
            return true;
        usleep(5000);
    }
    return false;
}

/* A kernel line on the raw console about a clock or an RCU stall. */
static const char *kernel_complaint(const char *serial)
{
    static const char *const bad[] = {
        "clocksource watchdog",
        "Marking clocksource",
        "unstable",
        "rcu_sched self-detected stall",
        "rcu_preempt self-detected stall",
        "detected stalls",
        "RCU Stall",
        "rcu: INFO",
        "soft lockup",
        "hard LOCKUP",
        "LAPICT dmesg",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (strcasestr(serial, bad[i]))
            return bad[i];
    return NULL;
}

/* A guest's console shows that it finished: cyclictest passed, the init
 * script got to its end, and the kernel complained of no clock or stall. */
static void assert_guest_finished(const char *o)
{
    ck_assert_msg(strstr(o, "LAPICT cyclictest rc=0"), "%s", shown(o));
    ck_assert_msg(strstr(o, "LAPICT done"), "%s", shown(o));
    ck_assert_msg(!kernel_complaint(o), "kernel complaint \"%s\":\n%s",
                  kernel_complaint(o), shown(o));
}

/*
 * The end of a hop that the destination took: the source @p0 quits, the
 * destination @p1, resumed, runs the guest to its end and exits 0, and
 * the guest finished there. Hops of dir/hop_start(): monitors mon0 and
 * mon1, the destination's console serial1.
 */
static void hop_finish(const char *dir, pid_t p0, pid_t p1, bool cont)
{
    char sock[96], path[96];
    int status;
    char *o;

    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    hmp_try(sock, "quit", NULL, 0, 5);
    ck_assert_int_eq(waitpid(p0, &status, 0), p0);
    snprintf(sock, sizeof(sock), "%s/mon1", dir);
    if (cont)
        ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
    ck_assert_int_eq(waitpid(p1, &status, 0), p1);
    snprintf(path, sizeof(path), "%s/serial1", dir);
    o = slurp(path, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "destination status %d:\n%s", status, shown(o));
    assert_guest_finished(o);
    free(o);
}

/*
 * A relay from the unix socket @from (the source connects) to @to (the
 * destination listens), both directions (the return path flows back);
 * on the way to the destination it flips one bit of the lapict
 * subsection: bit 30 of its first field, the flags, after its name and
 * version (as in migrate_corrupt_blob). Runs in a child process; exits
 * when both close.
 */
static void relay_corrupt(const char *from, const char *to)
{
    static const char pat[] = "apic_lapict";
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int ls = socket(AF_UNIX, SOCK_STREAM, 0), src, dst = -1;
    size_t match = 0;
    long after = -1;
    char buf[65536];
    struct pollfd pf[2];

    /* The destination closes on its failure while data is still coming. */
    signal(SIGPIPE, SIG_IGN);
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", from);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1))
        _exit(2);
    src = accept(ls, NULL, NULL);
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", to);
    for (int i = 0; i < 500 && dst < 0; i++) {
        dst = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(dst, (struct sockaddr *)&a, sizeof(a))) {
            close(dst);
            dst = -1;
            usleep(20000);
        }
    }
    if (src < 0 || dst < 0)
        _exit(3);
    pf[0] = (struct pollfd){.fd = src, .events = POLLIN};
    pf[1] = (struct pollfd){.fd = dst, .events = POLLIN};
    while (pf[0].fd >= 0 || pf[1].fd >= 0) {
        if (poll(pf, 2, -1) < 0)
            _exit(4);
        for (int k = 0; k < 2; k++) {
            ssize_t n;

            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(pf[k].fd, buf, sizeof(buf));
            if (n <= 0) {
                /* One side closed: pass the close on, both ways. */
                shutdown(k ? src : dst, SHUT_WR);
                pf[k].fd = -1;
                continue;
            }
            for (ssize_t j = 0; k == 0 && j < n; j++) {
                if (after >= 0 && ++after == 5)
                    buf[j] ^= 0x40;
                if (after >= 0)
                    continue;
                match = buf[j] == pat[match] ? match + 1
                                             : (buf[j] == pat[0] ? 1 : 0);
                if (match == sizeof(pat) - 1)
                    after = 0;
            }
            if (write(k ? src : dst, buf, (size_t)n) != n) {
                pf[k].fd = -1;
                shutdown(k ? src : dst, SHUT_WR);
            }
        }
    }
    _exit(after >= 5 ? 0 : 5);
}

/*
 * Rule: a live migration whose lapict subsection was corrupted on the way
 * fails the destination's -incoming with lapict's message, and the source
 * VM keeps running (QEMU's return path reports the failure, the source
 * resumes): its guest goes on and finishes cyclictest with no complaint.
 */
START_TEST(migrate_corrupt_live_source_runs)
{
    /* TSC-deadline mode: a deadline armed, so the subsection goes. */
    const char *append = "";
    char dir[64], cmd[2048], sock[96], s_in[96], s_out[96], path[96];
    char ans[2048], *o, *src;
    pid_t spid, dpid, rpid;
    int status;

    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-live-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    snprintf(s_in, sizeof(s_in), "%s/relay", dir);
    snprintf(s_out, sizeof(s_out), "%s/incoming", dir);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    snprintf(cmd, sizeof(cmd),
             "exec timeout -s KILL 200 %s -M q35 -accel tcg -cpu max "
             "-m 512 " LAPICT_ON " -display none -serial file:%s "
             "-monitor unix:%s,server,nowait "
             "-global migration.x-return-path=on -no-reboot -kernel %s "
             "-initrd %s -append 'console=ttyS0 panic=-1 lapict.duration=12 "
             "%s' </dev/null >%s/out0 2>&1",
             QEMU, path, sock, KERNEL, INITRD, append, dir);
    spid = spawn_sh(cmd);
    ck_assert_msg(wait_for(path, "LAPICT start", 120),
                  "the source guest did not start cyclictest");
    /*
     * The VM may stop for the switch-over between a deadline's expiry and
     * the guest's next write: then no subsection goes, the relay finds
     * nothing to flip (status 5) and the destination runs the guest. The
     * source, resumed, migrates again (at most three times).
     */
    for (int attempt = 0;; attempt++) {
        int rst;

        unlink(s_in);
        unlink(s_out);
        rpid = fork();
        ck_assert_int_ge(rpid, 0);
        if (!rpid)
            relay_corrupt(s_in, s_out);
        snprintf(cmd, sizeof(cmd),
                 "exec timeout -s KILL 120 %s -M q35 -accel tcg -cpu max "
                 "-m 512 " LAPICT_ON " -display none -monitor none "
                 "-serial file:%s/serial1 "
                 "-global migration.x-return-path=on -no-reboot -kernel %s "
                 "-initrd %s -append 'console=ttyS0 panic=-1 "
                 "lapict.duration=12 %s' -incoming unix:%s </dev/null "
                 ">%s/out1 2>&1",
                 QEMU, dir, KERNEL, INITRD, append, s_out, dir);
        dpid = spawn_sh(cmd);
        sleep(1);
        snprintf(cmd, sizeof(cmd), "migrate unix:%s", s_in);
        ck_assert(hmp_try(sock, cmd, ans, sizeof(ans), 5));
        ck_assert_int_eq(waitpid(dpid, &status, 0), dpid);
        if (attempt == 2 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            break;
        ck_assert_int_eq(waitpid(rpid, &rst, 0), rpid);
        ck_assert_msg(WIFEXITED(rst) && WEXITSTATUS(rst) == 5,
                      "destination ran a corrupted stream (relay %d)", rst);
        ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
                      WEXITSTATUS(status) != 124 && WEXITSTATUS(status) != 137,
                  "destination status %d (want a clean failure exit)", status);
    snprintf(path, sizeof(path), "%s/out1", dir);
    o = slurp(path, NULL);
    ck_assert_msg(strstr(o, "lapict timer state rejected") &&
                      strstr(o, "field invalid"),
                  "destination said:\n%s", o);
    free(o);
    ck_assert_int_eq(waitpid(rpid, &status, 0), rpid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "relay status %d (blob not found or not flipped)", status);
    ck_assert(hmp_try(sock, "info migrate", ans, sizeof(ans), 5));
    ck_assert_msg(strstr(ans, "Migration status: failed"), "%s", ans);
    ck_assert(hmp_try(sock, "info status", ans, sizeof(ans), 5));
    ck_assert_msg(strstr(ans, "VM status: running"), "source: %s", ans);
    /* The source guest itself goes on to the end of cyclictest. */
    ck_assert_int_eq(waitpid(spid, &status, 0), spid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "source status %d", status);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    src = slurp(path, NULL);
    ck_assert_msg(strstr(src, "LAPICT cyclictest rc=0") &&
                      strstr(src, "LAPICT done"),
                  "source:\n%s", shown(src));
    ck_assert_msg(!kernel_complaint(src), "source: \"%s\":\n%s",
                  kernel_complaint(src), shown(src));
    free(src);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/*
 * An HMP answer as text, in place: without the echo of the command (HMP
 * echoes it through its line editor, one escape sequence per key) and
 * without carriage returns.
 */
static char *plain(char *ans)
{
    char *nl = strchr(ans, '\n'), *w = ans;

    for (const char *r = nl ? nl + 1 : ans; *r; r++) {
        if (*r == '\x1b') {
            /* CSI: ESC '[' parameters, up to a final letter. */
            while (r[1] && !((r[1] >= 'A' && r[1] <= 'Z') ||
                             (r[1] >= 'a' && r[1] <= 'z')))
                r++;
            if (r[1])
                r++;
            continue;
        }
        if (*r != '\r')
            *w++ = *r;
    }
    *w = 0;
    return ans;
}

/*
 * Hop @i of a chain shows no progress: says whether its QEMU still runs
 * (and then its vCPU and APIC state, through HMP's plain text without the
 * line editor's echo) or how it ended, with its stderr and console tail.
 */
static void chain_stalled(const char *mode, const char *dir, int i, pid_t pid)
{
    static char why[12288];
    char sock[96], path[96], cpus[1024], lapic[4096], status_s[256];
    char *out, *ser;
    int status;
    size_t n;

    snprintf(sock, sizeof(sock), "%s/mon%d", dir, i);
    if (waitpid(pid, &status, WNOHANG) == pid) {
        snprintf(status_s, sizeof(status_s), "its QEMU has exited (%s %d)",
                 WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        cpus[0] = lapic[0] = 0;
    } else {
        bool up = hmp_try(sock, "info status", cpus, sizeof(cpus), 5);

        snprintf(status_s, sizeof(status_s), "its QEMU runs; monitor: %.200s",
                 up ? plain(cpus) : "(no answer)");
        hmp_try(sock, "info cpus", cpus, sizeof(cpus), 5);
        hmp_try(sock, "info lapic", lapic, sizeof(lapic), 5);
    }
    snprintf(path, sizeof(path), "%s/out%d", dir, i);
    out = slurp(path, NULL);
    snprintf(path, sizeof(path), "%s/serial%d", dir, i);
    ser = slurp(path, NULL);
    n = strlen(ser);
    snprintf(why, sizeof(why),
             "%s: the guest makes no progress after migration %d; %s\n"
             "--- info cpus:\n%s\n--- info lapic:\n%s\n--- stderr:\n%.2000s\n"
             "--- console tail:\n%s",
             mode, i, status_s, plain(cpus), plain(lapic), out,
             n > 2000 ? ser + n - 2000 : ser);
    free(out);
    free(ser);
    ck_abort_msg("%s", why);
}

struct chain_mode {
    const char *name, *append;
    bool periodic;
};

static const struct chain_mode chain_modes[] = {
    {"periodic", "lapic=notscdeadline nohz=off highres=off", true},
    {"lapic-deadline", "", false},
    {"lapic", "lapic=notscdeadline", false},
};

#define CHAIN_HOPS 20

/*
 * Rule: a Linux guest migrated CHAIN_HOPS times in one boot, each
 * destination QEMU (-incoming) the next source, keeps running: every hop's
 * guest prints LOC samples that keep rising at the mode's rate across
 * every move, cyclictest (started before the first move) completes on the
 * last destination, and no hop's console shows a clocksource-watchdog, RCU
 * stall or lockup complaint, in each of the three clockevent modes (the
 * periodic one's rate is HZ, checked to 1 %). The floors of the other
 * rates and of cyclictest's wake-ups shrink by the share of the run the
 * host kept the hops' QEMUs waiting for a CPU (hop_wait_ns).
 */
START_TEST(migrate_chain)
{
    const struct chain_mode *md = &chain_modes[_i];
    /* 20 hops take about 30 s of guest time: cyclictest outlasts them. */
    const unsigned duration = 45;
    char dir[64], sock[96], cmd[256], ans[8192], path[96];
    char *serial[CHAIN_HOPS + 1], *all;
    pid_t pid[CHAIN_HOPS + 1];
    double src_down_max = 0, outage_max = 0, outage_sum = 0;
    uint64_t prev_ns = 0, prev_loc = 0, first_ns = 0, first_loc = 0;
    uint64_t ns = 0, loc = 0, samples = 0, ct_count, ct_min, ct_avg, ct_max;
    double rate, lo = md->periodic ? HZ * 0.5 : 400.0, quiet;
    uint64_t wait_ns = 0, hop_wait;
    size_t total = 0;
    int status;

    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-chain-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    pid[0] = chain_start(dir, 0, md->append, duration);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    ck_assert_msg(wait_for(path, "LAPICT start", 120),
                  "%s: the guest did not start cyclictest", md->name);
    for (int i = 0; i < CHAIN_HOPS; i++) {
        double t0, t1;
        char *dm;

        /*
         * The guest runs on this hop: a LOC sample arrives on its console
         * (a guest whose timer interrupt went missing stays halted).
         */
        snprintf(path, sizeof(path), "%s/serial%d", dir, i);
        if (i > 0 && !wait_for(path, "LAPICT tick", 10))
            chain_stalled(md->name, dir, i, pid[i]);
        /* About a second of guest time on each hop, timers in flight. */
        usleep(500000);
        ck_assert_msg(waitpid(pid[i], &status, WNOHANG) == 0,
                      "%s: hop %d's "
                      "QEMU exited before migration %d (status %d)",
                      md->name, i, i + 1, status);
        snprintf(sock, sizeof(sock), "%s/mon%d", dir, i);
        snprintf(cmd, sizeof(cmd), "migrate \"exec:cat > %s/state%d\"", dir, i);
        /* The source's total so far: the move stops its vCPU. */
        wait_ns += hop_wait_ns(pid[i]);
        ck_assert_msg(hmp_try(sock, cmd, ans, sizeof(ans), 30),
                      "%s hop %d: no monitor", md->name, i);
        t0 = now_s();
        /* HMP's migrate may answer before the migration has completed. */
        for (int t = 0; t < 300; t++) {
            ck_assert_msg(hmp_try(sock, "info migrate", ans, sizeof(ans), 30),
                          "%s hop %d: no monitor", md->name, i);
            if (!strstr(ans, "Migration status: active") &&
                !strstr(ans, "Migration status: setup") &&
                !strstr(ans, "Migration status: device"))
                break;
            usleep(100000);
        }
        ck_assert_msg(strstr(ans, "Migration status: completed"),
                      "%s hop %d: %s", md->name, i, plain(ans));
        dm = strstr(ans, "downtime: ");
        ck_assert_msg(dm, "%s hop %d: no downtime in %s", md->name, i, ans);
        if (atof(dm + 10) > src_down_max)
            src_down_max = atof(dm + 10);
        pid[i + 1] = chain_start(dir, i + 1, md->append, duration);
        snprintf(sock, sizeof(sock), "%s/mon%d", dir, i + 1);
        ck_assert_msg(wait_running(sock, 60),
                      "%s hop %d: the destination "
                      "does not run",
                      md->name, i + 1);
        t1 = now_s();
        outage_sum += t1 - t0;
        if (t1 - t0 > outage_max)
            outage_max = t1 - t0;
        snprintf(sock, sizeof(sock), "%s/mon%d", dir, i);
        hmp_try(sock, "quit", NULL, 0, 5);
        ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
    }
    /* The last hop runs cyclictest to its end: its wait until it exits. */
    hop_wait = 0;
    while (waitpid(pid[CHAIN_HOPS], &status, WNOHANG) != pid[CHAIN_HOPS]) {
        uint64_t w = hop_wait_ns(pid[CHAIN_HOPS]);

        if (w)
            hop_wait = w;
        usleep(50000);
    }
    wait_ns += hop_wait;
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "%s: last destination status %d", md->name, status);
    for (int i = 0; i <= CHAIN_HOPS; i++) {
        const char *bad;

        snprintf(path, sizeof(path), "%s/serial%d", dir, i);
        serial[i] = slurp(path, NULL);
        total += strlen(serial[i]);
        bad = kernel_complaint(serial[i]);
        ck_assert_msg(!bad, "%s hop %d: kernel complaint \"%s\":\n%s", md->name,
                      i, bad, shown(serial[i]));
        /* Every hop before the last ran cyclictest all the time it ran. */
        if (i < CHAIN_HOPS)
            ck_assert_msg(!strstr(serial[i], "LAPICT end"),
                          "%s: cyclictest "
                          "ended on hop %d, before the last move",
                          md->name, i);
    }
    all = calloc(1, total + 1);
    ck_assert_ptr_nonnull(all);
    for (int i = 0; i <= CHAIN_HOPS; i++) {
        strcat(all, serial[i]);
        free(serial[i]);
    }
    ck_assert_msg(strstr(all, "LAPICT done"), "%s: no end:\n%s", md->name,
                  shown(all));
    ck_assert_msg(strstr(all, "LAPICT cyclictest rc=0"), "%s:\n%s", md->name,
                  shown(all));
    ck_assert_str_eq(field(all, "LAPICT boot ", "clockevent"),
                     md->periodic ? "lapic" : md->name);
    /*
     * The rate floors below hold for the time the host let the guest run:
     * they shrink by the share of the run the host withheld from the
     * hops' main threads and vCPUs (counted from each QEMU's start, so
     * its boot or load too: the floors only get looser), down to none on
     * a starved host, where LOC must still rise between every two samples.
     */
    rate = (double)(ufield(all, "LAPICT end ", "mono_ns") -
                    ufield(all, "LAPICT start ", "mono_ns"));
    quiet = rate > (double)wait_ns ? 1.0 - (double)wait_ns / rate : 0.0;
    lo *= quiet;
    /* LOC between consecutive samples (start, ticks, end), across moves. */
    for (const char *l = strstr(all, "LAPICT start "); l;
         l = strstr(l + 1, "\nLAPICT ")) {
        if (*l == '\n')
            l++;
        if (strncmp(l, "LAPICT start ", 13) && strncmp(l, "LAPICT tick ", 12) &&
            strncmp(l, "LAPICT end ", 11))
            continue;
        ns = ufield(l, "LAPICT ", "mono_ns");
        loc = ufield(l, "LAPICT ", "cpu0");
        if (samples) {
            ck_assert_msg(ns > prev_ns && loc > prev_loc,
                          "%s: sample %" PRIu64 ": mono %" PRIu64 " -> %" PRIu64
                          ", LOC %" PRIu64 " -> %" PRIu64,
                          md->name, samples, prev_ns, ns, prev_loc, loc);
            /* Over at least 0.4 s: a sampling loop that ran late. */
            if (ns - prev_ns >= 400000000u) {
                rate = (double)(loc - prev_loc) * 1e9 / (double)(ns - prev_ns);
                ck_assert_msg(rate > lo,
                              "%s: sample %" PRIu64 ": %.1f LOC/s "
                              "over %" PRIu64 " ns",
                              md->name, samples, rate, ns - prev_ns);
            }
        } else {
            first_ns = ns;
            first_loc = loc;
        }
        prev_ns = ns;
        prev_loc = loc;
        samples++;
        if (!strncmp(l, "LAPICT end ", 11))
            break;
    }
    ck_assert_msg(samples >= CHAIN_HOPS, "%s: %" PRIu64 " LOC samples",
                  md->name, samples);
    rate = (double)(loc - first_loc) * 1e9 / (double)(ns - first_ns);
    if (md->periodic)
        ck_assert_msg(rate > HZ * 0.99 && rate < HZ * 1.01,
                      "%s: %.2f LOC/s "
                      "over the run, not HZ",
                      md->name, rate);
    else
        ck_assert_msg(rate >= 500 * quiet,
                      "%s: %.2f LOC/s over the run (floor %.0f: the host "
                      "withheld %" PRIu64 " ms)",
                      md->name, rate, 500 * quiet, wait_ns / 1000000u);
    assert_cyclictest(
        all, 1,
        (uint64_t)(quiet * (md->periodic ? duration * HZ * 9.0 / 10
                                         : duration * 1000.0 / 2)));
    ct_count = ufield(all, "LAPICT cyclictest thread=", "count");
    ct_min = ufield(all, "LAPICT cyclictest thread=", "min_us");
    ct_avg = ufield(all, "LAPICT cyclictest thread=", "avg_us");
    ct_max = ufield(all, "LAPICT cyclictest thread=", "max_us");
    printf("RESULT test=qemu-migrate-chain mode=%s migrations=%d "
           "loc_per_s=%.2f loc_samples=%" PRIu64 " guest_s=%.1f "
           "ct_count=%" PRIu64 " ct_min_us=%" PRIu64 " ct_avg_us=%" PRIu64
           " ct_max_us=%" PRIu64 " src_downtime_max_ms=%.0f "
           "outage_avg_ms=%.0f outage_max_ms=%.0f host_wait_ms=%" PRIu64 "\n",
           md->name, CHAIN_HOPS, rate, samples, (double)(ns - first_ns) * 1e-9,
           ct_count, ct_min, ct_avg, ct_max, src_down_max,
           outage_sum * 1000 / CHAIN_HOPS, outage_max * 1000,
           wait_ns / 1000000u);
    fflush(stdout);
    free(all);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/* ---- Debian's stock QEMU 10.0
 * ------------------------------------------------ */

/* adapters/qemu/stock.sh's wrapper (the qemu gate puts it there). */
#define STOCK LAPICT_QEMU_DIR "/stock/qemu-system-x86_64"

/*
 * A running Linux guest (the periodic tick and cyclictest's timers armed)
 * moves live from @src to @dst on @machine; the stream has no lapict
 * subsection, and on the destination cyclictest completes and the kernel
 * complains of no clock.
 */
static void stock_move(const char *src, const char *dst, const char *machine)
{
    char dir[64], guest[1024], cmd[256], sock[96], path[96], ans[2048];
    char *st;
    pid_t p0, p1;
    size_t len;
    int status;

    ck_assert_msg(access(src, X_OK) == 0, "%s: %s", src, strerror(errno));
    ck_assert_msg(access(dst, X_OK) == 0, "%s: %s", dst, strerror(errno));
    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-stock-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(guest, sizeof(guest),
             "-M %s -m 512 -nic none -kernel %s -initrd %s "
             "-append 'console=ttyS0 panic=-1 lapict.duration=6 "
             "lapict.ticks=1 lapic=notscdeadline nohz=off highres=off'",
             machine, KERNEL, INITRD);
    p0 = hop_start(dir, 0, src, 200, guest);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    ck_assert_msg(wait_for(path, "LAPICT start", 150),
                  "%s: the source guest did not start cyclictest", src);
    sleep(1);
    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    snprintf(cmd, sizeof(cmd), "migrate \"exec:cat > %s/state0\"", dir);
    ck_assert(hmp_try(sock, cmd, ans, sizeof(ans), 5));
    ck_assert(hmp_try(sock, "info migrate", ans, sizeof(ans), 5));
    ck_assert_msg(strstr(ans, "Migration status: completed"), "%s", ans);
    snprintf(path, sizeof(path), "%s/state0", dir);
    st = slurp(path, &len);
    ck_assert_msg(!memmem(st, len, "apic_lapict", 11),
                  "%s: a lapict subsection on %s", src, machine);
    free(st);
    p1 = hop_start(dir, 1, dst, 200, guest);
    snprintf(sock, sizeof(sock), "%s/mon1", dir);
    ck_assert_msg(wait_running(sock, 60), "%s does not run the stream of %s",
                  dst, src);
    hop_finish(dir, p0, p1, false);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}

/*
 * Rule: without -global apic.lapict=on the APIC keeps QEMU's own timer on
 * every machine type, the newest (pc-q35-10.0, _i < 2) and older ones
 * (pc-q35-9.2), so the patched QEMU and Debian's stock 10.0 move a running
 * Linux guest both ways (_i even: patched to stock; odd: stock to
 * patched). The stream has no lapict subsection, and on the destination
 * the periodic tick goes on and cyclictest completes.
 */
START_TEST(migrate_stock_compat)
{
    stock_move(_i % 2 ? STOCK : QEMU, _i % 2 ? QEMU : STOCK,
               _i < 2 ? "pc-q35-10.0" : "pc-q35-9.2");
}
END_TEST

/* build.sh's -Dlapict=disabled build of the same tree. */
#define DISABLED LAPICT_QEMU_DIR "/disabled/qemu-system-x86_64"

/*
 * Rule: built with -Dlapict=disabled, the patched QEMU is stock 10.0 on
 * the newest machine type too: a running Linux guest on q35 moves from it
 * to Debian's stock 10.0 (_i = 0) and from stock to it (_i = 1), with no
 * lapict subsection, and runs on to the end of cyclictest.
 */
START_TEST(migrate_disabled_stock)
{
    stock_move(_i ? STOCK : DISABLED, _i ? DISABLED : STOCK, "q35");
}
END_TEST

/* The "PASS: " and "FAIL: " lines of mbtest's output @o, in order. */
static char *mb_reports(const char *o)
{
    char *r = calloc(1, strlen(o) + 1), *w = r;

    ck_assert_ptr_nonnull(r);
    for (const char *l = o; l && *l;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        size_t n = strcspn(l, "\r\n");

        if (!strncmp(l, "PASS: ", 6) || !strncmp(l, "FAIL: ", 6)) {
            memcpy(w, l, n);
            w += n;
            *w++ = '\n';
        }
    }
    *w = 0;
    return r;
}

/*
 * Rule: without -global apic.lapict=on, the newest machine type
 * (pc-q35-10.0) gives the guest what Debian's stock 10.0 gives it, in
 * xAPIC (_i = 0) and x2APIC (_i = 1): -cpu max's CPUID has no TSC-deadline,
 * IA32_TSC_DEADLINE reads 0 and ignores writes, and LVTT takes mode 10 as
 * QEMU's own timer does: mbtest's nodl=2 checks report the same lines on
 * both.
 */
START_TEST(default_guest_is_stock)
{
    const char *opts = _i ? "-M pc-q35-10.0 -accel tcg -cpu max"
                          : "-M pc-q35-10.0 -accel tcg -cpu max,-x2apic";
    int fails;
    char *o, *so, *r, *sr;

    ck_assert_msg(access(STOCK, X_OK) == 0, "%s: %s", STOCK, strerror(errno));
    o = run_mbtest(QEMU, opts, _i, "nodl=2", &fails, NULL);
    so = run_mbtest(STOCK, opts, _i, "nodl=2", &fails, NULL);
    r = mb_reports(o);
    sr = mb_reports(so);
    ck_assert_msg(strstr(r, "PASS: no-deadline: CPUID offers no TSC-deadline"),
                  "%s", shown(o));
    ck_assert_msg(strstr(r, "PASS: no-deadline: RDMSR 0x6E0 reads 0"), "%s",
                  shown(o));
    ck_assert_msg(!strcmp(r, sr),
                  "the guest's checks differ from stock's:\n%s--- stock:\n%s",
                  r, sr);
    free(r);
    free(sr);
    free(o);
    free(so);
}
END_TEST

/*
 * QEMU @qemu on pc-q35-10.0 under TCG with "-cpu @cpu" and @extra, paused
 * and told to quit at once: what it wrote to stderr (its warnings and
 * errors), and its exit status in @status.
 */
static char *cpu_start(const char *qemu, const char *cpu, const char *extra,
                       int *status)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd),
             "{ printf 'quit\\n' | timeout -s KILL 60 %s -M pc-q35-10.0 "
             "-accel tcg -cpu %s %s -display none -nodefaults -S "
             "-monitor stdio 2>&1 >/dev/null; }",
             qemu, cpu, extra);
    return lt_run_capture(cmd, status);
}

/* The CPU options of default_cpu_options_are_stock. */
static const char *const cpu_options[] = {
    "max,+tsc-deadline,enforce",
    "Skylake-Client",
    "Skylake-Client,enforce",
};

/*
 * Rule: the TSC-deadline feature goes through QEMU's CPU feature filter.
 * Without -global apic.lapict=on, TCG does not support it, exactly as
 * stock 10.0: each of cpu_options starts or is refused as on stock, with
 * the same warnings and errors ("-cpu max,+tsc-deadline,enforce" is
 * refused, Skylake-Client is warned that TCG lacks it). With lapict's
 * timer, TCG supports it: enforce starts and no warning names it.
 */
START_TEST(default_cpu_options_are_stock)
{
    const char *cpu = cpu_options[_i];
    int st, sst, ost;
    char *e, *se, *oe;

    ck_assert_msg(access(STOCK, X_OK) == 0, "%s: %s", STOCK, strerror(errno));
    e = cpu_start(QEMU, cpu, "", &st);
    se = cpu_start(STOCK, cpu, "", &sst);
    ck_assert_msg(st == sst && !strcmp(e, se),
                  "-cpu %s: status %d, stock's %d:\n%s--- stock:\n%s", cpu, st,
                  sst, e, se);
    ck_assert_msg(strstr(e, "tsc-deadline"),
                  "-cpu %s: no word of tsc-deadline (status %d):\n%s", cpu, st,
                  e);
    ck_assert_msg(!strstr(cpu, "enforce") || st != 0, "-cpu %s started:\n%s",
                  cpu, e);
    oe = cpu_start(QEMU, cpu, LAPICT_ON, &ost);
    ck_assert_msg(!strstr(oe, "tsc-deadline"),
                  "-cpu %s " LAPICT_ON ": status %d:\n%s", cpu, ost, oe);
    if (!_i)
        ck_assert_msg(ost == 0, "-cpu %s " LAPICT_ON ": status %d:\n%s", cpu,
                      ost, oe);
    free(e);
    free(se);
    free(oe);
}
END_TEST

/*
 * The apic properties of apic_properties: the binary, its options, and
 * what it must print to stderr (NULL: it starts, silent).
 */
static const struct apic_prop {
    const char *qemu, *opts, *error;
} apic_props[] = {
    {QEMU, LAPICT_ON " -global apic.lost_tick_policy=slew", NULL},
    {QEMU, LAPICT_ON " -global apic.lost_tick_policy=discard", NULL},
    {QEMU, LAPICT_ON " -global apic.lost_tick_policy=delay",
     "lost_tick_policy=delay: lapict's timer takes discard or slew"},
    {QEMU, LAPICT_ON " -global apic.timer-advance=off", NULL},
    {QEMU, LAPICT_ON " -global apic.timer-advance=auto", NULL},
    {QEMU, LAPICT_ON " -global apic.timer-advance=20000", NULL},
    {QEMU, LAPICT_ON " -global apic.timer-advance=10000001",
     "timer-advance=10000001: not off, auto or a number of nanoseconds"},
    {QEMU, LAPICT_ON " -global apic.timer-advance=-1",
     "timer-advance=-1: not off, auto or a number of nanoseconds"},
    {QEMU,
     LAPICT_ON " -global apic.timer-advance=auto "
               "-global apic.timer-advance-max=0",
     "timer-advance-max=0: not between 1 and 10000000 ns"},
    {DISABLED, "-global apic.lapict=off", NULL},
    {DISABLED, LAPICT_ON, "lapict=on: this QEMU was built without lapict"},
};

/*
 * Rule: the apic device's properties are QEMU's words, checked where they
 * are set: "lost_tick_policy" is QEMU's LostTickPolicy (slew and discard;
 * delay, which would move the period's grid, is refused with the reason),
 * "timer-advance" is off, auto or 1 to 10000000 ns ("timer-advance-max"
 * the same range), each bad value refused with an error naming it. A
 * build without lapict takes "lapict=off", so one command line serves
 * every build, and refuses "lapict=on" naming the build.
 */
START_TEST(apic_properties)
{
    const struct apic_prop *c = &apic_props[_i];
    int st;
    char *e = cpu_start(c->qemu, "max", c->opts, &st);

    if (c->error)
        ck_assert_msg(st != 0 && strstr(e, c->error),
                      "%s %s: status %d, stderr:\n%s", c->qemu, c->opts, st, e);
    else
        ck_assert_msg(st == 0 && !*e, "%s %s: status %d, stderr:\n%s", c->qemu,
                      c->opts, st, e);
    free(e);
}
END_TEST

/* query-cpu-model-expansion of -cpu max through QMP: its answer. */
static char *cpu_expansion(const char *qemu, const char *extra)
{
    char cmd[1024];
    int status;
    char *o;

    snprintf(cmd, sizeof(cmd),
             "printf '%%s\\n' '{\"execute\": \"qmp_capabilities\"}' "
             "'{\"execute\": \"query-cpu-model-expansion\", \"arguments\": "
             "{\"type\": \"full\", \"model\": {\"name\": \"max\"}}}' "
             "'{\"execute\": \"quit\"}' | timeout -s KILL 60 %s "
             "-M pc-q35-10.0 -accel tcg %s -display none -nodefaults -S "
             "-qmp stdio",
             qemu, extra);
    o = lt_run_capture(cmd, &status);
    ck_assert_msg(status == 0 && strstr(o, "\"model\""),
                  "%s %s: status %d:\n%s", qemu, extra, status, o);
    return o;
}

/*
 * Rule: query-cpu-model-expansion says what the guest gets: -cpu max has
 * no TSC-deadline without -global apic.lapict=on, as on stock 10.0, and
 * has it with lapict's timer.
 */
START_TEST(cpu_expansion_matches_guest)
{
    char *o = cpu_expansion(QEMU, ""), *so = cpu_expansion(STOCK, "");
    char *on = cpu_expansion(QEMU, LAPICT_ON);

    ck_assert_msg(strstr(so, "\"tsc-deadline\": false"), "stock:\n%s", so);
    ck_assert_msg(strstr(o, "\"tsc-deadline\": false"), "default:\n%s", o);
    ck_assert_msg(strstr(on, "\"tsc-deadline\": true"), LAPICT_ON ":\n%s", on);
    free(o);
    free(so);
    free(on);
}
END_TEST

/* "info lapic"'s timer: TMICT, TMCCT and the LVTT mode; false if absent. */
static bool lapic_timer(const char *sock, uint32_t *ic, uint32_t *cc,
                        char *mode, size_t cap)
{
    static const char *const modes[] = {"periodic", "tsc-deadline", "one-shot"};
    char ans[8192];
    const char *p, *l;

    if (!hmp_try(sock, "info lapic", ans, sizeof(ans), 5) ||
        !(p = strstr(ans, "initial_count = ")) ||
        sscanf(p, "initial_count = %" SCNu32 " current_count = %" SCNu32, ic,
               cc) != 2 ||
        !(l = strstr(ans, "LVTT\t")))
        return false;
    snprintf(mode, cap, "?");
    for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++)
        if (strstr(l, modes[i]) && strstr(l, modes[i]) < strchr(l, '\n')) {
            snprintf(mode, cap, "%s", modes[i]);
            break;
        }
    return true;
}

/* Waits until the monitor of @sock shows a loaded, paused VM. */
static bool wait_paused(const char *sock, int secs)
{
    char ans[512];
    double end = now_s() + secs;

    while (now_s() < end) {
        if (hmp_try(sock, "info status", ans, sizeof(ans), 5) &&
            strstr(ans, "VM status: paused") && !strstr(ans, "inmigrate"))
            return true;
        usleep(20000);
    }
    return false;
}

/*
 * The timer modes of migrate_stock_modes: the machine type, the guest's
 * clockevent (Linux's command line), the LVTT mode "info lapic" shows,
 * whether the patched QEMU runs lapict's timer (-global apic.lapict=on),
 * the direction, and whether the stream needs lapict's subsection (stock
 * then refuses it). With lapict's timer the vCPU's CPUID offers
 * TSC-deadline, so the patched QEMU sends the subsection in every mode,
 * armed or not: stock, which has no such mode, would otherwise load a
 * timer that drops the guest's deadline writes. Without it, the patched
 * QEMU's stream is stock's.
 */
static const struct stock_mode {
    const char *machine, *append, *mode;
    bool lapict, to_stock, refused;
} stock_modes[] = {
    {"q35", "lapic=notscdeadline", "one-shot", true, true, true},
    {"q35", "lapic=notscdeadline", "one-shot", true, false, false},
    {"q35", "lapic=notscdeadline nohz=off highres=off", "periodic", true, true,
     true},
    {"q35", "lapic=notscdeadline nohz=off highres=off", "periodic", true, false,
     false},
    {"q35", "", "tsc-deadline", true, true, true},
    {"pc-q35-10.0", "lapic=notscdeadline", "one-shot", false, true, false},
    {"pc-q35-10.0", "lapic=notscdeadline", "one-shot", false, false, false},
};

/*
 * Rule: a Linux guest moves between the patched QEMU and Debian's stock
 * 10.0 with its timer armed, in each mode, both ways, with lapict's timer
 * (-global apic.lapict=on) and with QEMU's own (the default, on the
 * newest machine type, pc-q35-10.0). Where the stream can be one the
 * legacy timer loads, the VM is stopped with a count-down in flight
 * (TMCCT between 0 and TMICT); the stream carries no apic_lapict
 * subsection, and the paused destination shows the same TMICT and mode
 * and the count within one tick (QEMU's own timer counts a period of
 * TMICT + 1 ticks), not its initial count: the count-down resumes where it
 * was. The destination then runs the guest to the end of cyclictest.
 * Where the guest depends on lapict (its CPUID offers TSC-deadline), the
 * first stop in the mode, whatever the timer's state (a TSC deadline
 * armed or not: a guest between an expiry and its next write), carries
 * the subsection: stock refuses that stream with an error, and the
 * source, resumed, runs on.
 */
START_TEST(migrate_stock_modes)
{
    const struct stock_mode *c = &stock_modes[_i];
    const char *src = c->to_stock ? QEMU : STOCK;
    const char *dst = c->to_stock ? STOCK : QEMU;
    char dir[64], guest[1024], ours[1100], cmd[256], sock[96], path[96];
    char ans[2048];
    char mode[32] = "", mode1[32] = "";
    uint32_t ic = 0, cc = 0, ic1 = 0, cc1 = 0;
    bool found = false;
    char *o, *st;
    pid_t p0, p1;
    size_t len;
    int status;

    ck_assert_msg(access(STOCK, X_OK) == 0, "%s: %s", STOCK, strerror(errno));
    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-modes-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(guest, sizeof(guest),
             "-M %s -m 512 -nic none -kernel %s -initrd %s "
             "-append 'console=ttyS0 panic=-1 lapict.duration=8 %s'",
             c->machine, KERNEL, INITRD, c->append);
    /* The patched end's options (stock has no such property). */
    snprintf(ours, sizeof(ours), "%s%s", c->lapict ? LAPICT_ON " " : "", guest);
    p0 = hop_start(dir, 0, src, 300, c->to_stock ? ours : guest);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    ck_assert_msg(wait_for(path, "LAPICT start", 150),
                  "%s: the source guest did not start cyclictest", src);
    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    /*
     * Stop where the timer is armed in its mode with a count in flight;
     * for a TSC deadline, where one is armed (the stream has the
     * subsection: the VM may stop between an expiry and the next write).
     */
    for (int i = 0; i < 100 && !found; i++) {
        bool sub;

        ck_assert(hmp_try(sock, "stop", NULL, 0, 5));
        ck_assert(lapic_timer(sock, &ic, &cc, mode, sizeof(mode)));
        found =
            !strcmp(mode, c->mode) && (c->refused || (cc > 0 && cc + 2 < ic));
        if (found) {
            snprintf(cmd, sizeof(cmd), "migrate \"exec:cat > %s/state0\"", dir);
            ck_assert(hmp_try(sock, cmd, ans, sizeof(ans), 5));
            ck_assert(hmp_try(sock, "info migrate", ans, sizeof(ans), 5));
            ck_assert_msg(strstr(ans, "Migration status: completed"), "%s",
                          ans);
            snprintf(path, sizeof(path), "%s/state0", dir);
            st = slurp(path, &len);
            sub = memmem(st, len, "apic_lapict", 11) != NULL;
            free(st);
            ck_assert_msg(sub == c->refused,
                          "%s on %s, %s (TMICT %" PRIu32 " TMCCT %" PRIu32
                          "): apic_lapict subsection %s",
                          src, c->machine, c->mode, ic, cc,
                          sub ? "sent" : "missing");
        }
        if (!found) {
            ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
            usleep(23000 + 1000 * i);
        }
    }
    ck_assert_msg(
        found, "%s on %s: no %s %s (last: %s, %" PRIu32 " of %" PRIu32 ")", src,
        c->machine, c->mode, c->refused ? "deadline armed" : "count in flight",
        mode, cc, ic);
    p1 = hop_start(dir, 1, dst, 200, c->to_stock ? guest : ours);
    snprintf(sock, sizeof(sock), "%s/mon1", dir);
    if (c->refused) {
        ck_assert_int_eq(waitpid(p1, &status, 0), p1);
        snprintf(path, sizeof(path), "%s/out1", dir);
        o = slurp(path, NULL);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
                          WEXITSTATUS(status) != 124 &&
                          WEXITSTATUS(status) != 137 && strstr(o, "apic"),
                      "%s took the stream (status %d):\n%s", dst, status, o);
        free(o);
        /* The source goes on. */
        snprintf(sock, sizeof(sock), "%s/mon0", dir);
        ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
        snprintf(path, sizeof(path), "%s/serial0", dir);
        ck_assert_msg(wait_for(path, "LAPICT done", 120),
                      "the source did not run on");
        hmp_try(sock, "quit", NULL, 0, 5);
        ck_assert_int_eq(waitpid(p0, &status, 0), p0);
        o = slurp(path, NULL);
        assert_guest_finished(o);
        free(o);
    } else {
        ck_assert_msg(wait_paused(sock, 60),
                      "%s does not load the stream "
                      "of %s",
                      dst, src);
        ck_assert(lapic_timer(sock, &ic1, &cc1, mode1, sizeof(mode1)));
        ck_assert_msg(ic1 == ic && !strcmp(mode1, mode) && cc1 + 1 >= cc &&
                          cc1 <= cc + 1,
                      "%s -> %s on %s: %s TMICT %" PRIu32 " TMCCT %" PRIu32
                      " became %s %" PRIu32 " %" PRIu32,
                      src, dst, c->machine, mode, ic, cc, mode1, ic1, cc1);
        hop_finish(dir, p0, p1, true);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/*
 * Starts mbtest with @words on the patched QEMU as hop 0 of @dir (a
 * pc-q35-10.0 machine with @opts; its options, for the destination's
 * hop_start(), in @guest), stops it once it says "PARKED" and saves it to
 * @dir/state0; the stream (@len bytes; the caller frees it). *@p0 is the
 * paused source.
 */
static char *park_and_save(const char *dir, const char *opts, const char *words,
                           char guest[512], pid_t *p0, size_t *len)
{
    char cmd[256], sock[96], path[96], ans[2048];

    snprintf(guest, 512,
             "-M pc-q35-10.0 -m 64 %s "
             "-device isa-debug-exit,iobase=0xf4,iosize=4 "
             "-kernel %s -append '%s'",
             opts, LAPICT_MBTEST, words);
    *p0 = hop_start(dir, 0, QEMU, 200, guest);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    ck_assert_msg(wait_for(path, "PARKED", 60), "the guest did not park");
    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    ck_assert(hmp_try(sock, "stop", NULL, 0, 5));
    snprintf(cmd, sizeof(cmd), "migrate \"exec:cat > %s/state0\"", dir);
    ck_assert(hmp_try(sock, cmd, ans, sizeof(ans), 5));
    ck_assert(hmp_try(sock, "info migrate", ans, sizeof(ans), 5));
    ck_assert_msg(strstr(ans, "Migration status: completed"), "%s", ans);
    snprintf(path, sizeof(path), "%s/state0", dir);
    return slurp(path, len);
}

/*
 * Rule: a guest in TSC-deadline mode with no deadline armed (between an
 * expiry and its next WRMSR: mbtest's park=S) depends on lapict's timer
 * as much as one with a deadline armed. The patched QEMU (lapict's timer,
 * on pc-q35-10.0) sends the apic_lapict subsection for it; Debian's stock
 * 10.0 refuses that stream with an error naming the APIC, where it would
 * otherwise load a timer that drops every later deadline and leave the
 * guest hung; the source, resumed, still runs; and a patched destination
 * loads the same stream, where the guest's next deadline fires, not
 * early.
 */
START_TEST(migrate_unarmed_deadline)
{
    char dir[64], guest[512], cmd[256], sock[96], path[96];
    char *st, *o;
    pid_t p0, p1, p2;
    size_t len;
    int status;

    ck_assert_msg(access(STOCK, X_OK) == 0, "%s: %s", STOCK, strerror(errno));
    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-park-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    st = park_and_save(dir, LAPICT_ON, "park=6", guest, &p0, &len);
    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    ck_assert_msg(memmem(st, len, "apic_lapict", 11),
                  "no apic_lapict subsection for an unarmed TSC-deadline "
                  "timer");
    free(st);

    /* Stock refuses the stream. */
    p1 = hop_start(dir, 1, STOCK, 60, guest);
    ck_assert_int_eq(waitpid(p1, &status, 0), p1);
    snprintf(path, sizeof(path), "%s/out1", dir);
    o = slurp(path, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
                      WEXITSTATUS(status) != 124 &&
                      WEXITSTATUS(status) != 137 && strstr(o, "apic"),
                  "stock took the stream (status %d):\n%s", status, o);
    free(o);

    /* The source, resumed, runs to the end with its timer. */
    ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
    ck_assert_int_eq(waitpid(p0, &status, 0), p0);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    o = slurp(path, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
                      strstr(o, "SUMMARY: 3 tests, 0 failures"),
                  "source status %d:\n%s", status, shown(o));
    free(o);

    /* The patched QEMU loads it (hop 2 reads state1), and the mode works. */
    snprintf(cmd, sizeof(cmd), "cp %s/state0 %s/state1", dir, dir);
    free(lt_run_capture(cmd, &status));
    ck_assert_int_eq(status, 0);
    p2 = hop_start(dir, 2, QEMU, 120, guest);
    snprintf(sock, sizeof(sock), "%s/mon2", dir);
    ck_assert_msg(wait_paused(sock, 60), "the patched QEMU did not load it");
    ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
    ck_assert_int_eq(waitpid(p2, &status, 0), p2);
    snprintf(path, sizeof(path), "%s/serial2", dir);
    o = slurp(path, NULL);
    /* isa-debug-exit: (0 << 1) | 1, every check passed. */
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
                      strstr(o, "PASS: park: a deadline armed after the wait "
                                "fires, not early") &&
                      strstr(o, "SUMMARY: 3 tests, 0 failures"),
                  "destination status %d:\n%s", status, shown(o));
    free(o);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/*
 * Rule: a TSC the guest wrote (WRMSR to IA32_TSC, which the patched TCG
 * honours) survives a move, with lapict off (the default): mbtest's
 * tscw=S writes its TSC 2^40 ahead and parks; the VM stops there and
 * moves to Debian's stock 10.0 (_i = 0) or to the patched QEMU (_i = 1),
 * and on the destination the guest's TSC still holds the write and
 * counts on. Outside a nested guest the write travels in the main
 * section's tsc_offset, which stock adds in RDTSC too: no subsection
 * (cpu/tcg_tsc_write is for a nested guest's moves only).
 */
START_TEST(migrate_tsc_write)
{
    const char *dst = _i ? QEMU : STOCK;
    char dir[64], guest[512], cmd[256], sock[96], path[96];
    char *st, *o;
    pid_t p0, p1;
    size_t len;
    int status;

    ck_assert_msg(access(STOCK, X_OK) == 0, "%s: %s", STOCK, strerror(errno));
    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-tscw-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    st = park_and_save(dir, "", "tscw=6", guest, &p0, &len);
    ck_assert_msg(!memmem(st, len, "tcg_tsc_write", 13) &&
                      !memmem(st, len, "msr_tsc_adjust", 14),
                  "the written TSC went in a subsection");
    free(st);
    p1 = hop_start(dir, 1, dst, 120, guest);
    snprintf(sock, sizeof(sock), "%s/mon1", dir);
    ck_assert_msg(wait_paused(sock, 60), "%s did not load the stream", dst);
    ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
    ck_assert_int_eq(waitpid(p1, &status, 0), p1);
    snprintf(path, sizeof(path), "%s/serial1", dir);
    o = slurp(path, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
                      strstr(o, "PASS: tsc write: kept, counting on") &&
                      strstr(o, "SUMMARY: 2 tests, 0 failures"),
                  "%s: status %d:\n%s", dst, status, shown(o));
    free(o);
    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    hmp_try(sock, "quit", NULL, 0, 5);
    ck_assert_int_eq(waitpid(p0, &status, 0), p0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/* ---- icount and record/replay ----------------------------------------------
 */

/*
 * Runs Linux on lapict's timer under icount with @icount's options; the
 * console output.
 */
static char *boot_icount(const char *icount, const char *append,
                         unsigned seconds)
{
    char cmd[1024];
    int status;
    char *o;

    snprintf(cmd, sizeof(cmd),
             "timeout -s KILL 300 %s -M q35 -accel tcg -icount %s -cpu max "
             "-m 512 " LAPICT_ON " -nic none -display none -monitor none "
             "-serial stdio -no-reboot -kernel %s -initrd %s "
             "-append 'console=ttyS0 panic=-1 lapict.duration=%u %s' "
             "</dev/null",
             QEMU, icount, KERNEL, INITRD, seconds, append);
    o = lt_run_capture(cmd, &status);
    ck_assert_msg(status == 0, "-icount %s: QEMU exit status %d:\n%s", icount,
                  status, shown(o));
    ck_assert_msg(strstr(o, "LAPICT cyclictest rc=0"), "%s", shown(o));
    ck_assert_msg(strstr(o, "LAPICT done"), "%s", shown(o));
    return o;
}

/* QEMU's adaptive shift, and the fixed one record/replay runs with. */
static const char *const icount_shifts[] = {"shift=auto", "shift=7"};

/*
 * Rule: under -icount (icount_shifts[_i / CE_MODES]) Linux boots in the
 * three clockevent modes (ce_modes[_i % CE_MODES]) and cyclictest
 * completes: no op
 * reads a host clock outside icount's I/O window, and nothing waits.
 */
START_TEST(icount_linux)
{
    const struct ce_mode *m = &ce_modes[_i % CE_MODES];
    const char *shift = icount_shifts[_i / CE_MODES];
    char *o = boot_icount(shift, m->append, 3);

    ck_assert_msg(
        str_is(field(o, "LAPICT boot ", "clockevent"), m->clockevent) &&
            str_is(field(o, "LAPICT boot ", "handler"), m->handler),
        "-icount %s, %s: not %s with %s:\n%s", shift, m->name, m->clockevent,
        m->handler, shown(o));
    free(o);
}
END_TEST

/*
 * Rule: under record/replay the replayed console is the recorded one,
 * byte for byte, cyclictest's latencies on lapict's TSC-deadline timer
 * included.
 */
START_TEST(icount_record_replay)
{
    char dir[64], opt[160], cmd[128], *rec, *rep;
    int status;

    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-rr-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(opt, sizeof(opt), "shift=7,rr=record,rrfile=%s/rr.bin", dir);
    rec = boot_icount(opt, "", 3);
    snprintf(opt, sizeof(opt), "shift=7,rr=replay,rrfile=%s/rr.bin", dir);
    rep = boot_icount(opt, "", 3);
    ck_assert_str_eq(field(rec, "LAPICT boot ", "clockevent"),
                     "lapic-deadline");
    ck_assert_msg(!strcmp(rec, rep),
                  "the replay differs:\n--- record:\n%s\n"
                  "--- replay:\n%s",
                  shown(rec), shown(rep));
    free(rec);
    free(rep);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/* ---- guest memory across live migration ------------------------------------
 */

#define SOAK_HOPS 8

/* The number of "MEMSOAK gen=" lines in @path so far. */
static unsigned soak_lines(const char *path)
{
    char *b = slurp(path, NULL);
    unsigned n = 0;

    for (const char *l = strstr(b, "MEMSOAK gen="); l;
         l = strstr(l + 1, "MEMSOAK gen="))
        n++;
    free(b);
    return n;
}

/*
 * Waits until @path holds @n "MEMSOAK gen=" lines; false after @secs, or
 * at once when @pid (the guest's QEMU) has exited (*status set, else -1).
 */
static bool soak_wait(const char *path, unsigned n, int secs, pid_t pid,
                      int *status)
{
    *status = -1;
    for (int i = 0; i < secs * 20; i++) {
        if (access(path, R_OK) == 0 && soak_lines(path) >= n)
            return true;
        if (waitpid(pid, status, WNOHANG) == pid)
            return false;
        usleep(50000);
    }
    return false;
}

/* Fails hop @i of migrate_memory, with its console @path. */
static void soak_abort(int i, const char *path, const char *what, int status)
{
    char *o = slurp(path, NULL);

    ck_abort_msg("hop %d: %s (QEMU status %d):\n%s", i,
                 strstr(o, "FAIL: memsoak")
                     ? "the guest found pages from different moments"
                     : what,
                 status, o);
}

/*
 * Rule: a live migration under TCG carries every page the guest wrote
 * before the VM stopped. mbtest's memsoak loop (a generation counter and
 * two buffers, each on its own page, rewritten without end) is moved
 * SOAK_HOPS times, with the bandwidth and downtime limits set so low that
 * the source sends the hot pages while the guest runs and syncs its dirty
 * bitmap again: the path where a page whose writes stop being tracked
 * reaches the destination older than the others. Every destination goes on
 * writing and finds its pages consistent (no "FAIL: memsoak"), and at least
 * one move synced its bitmap twice while the guest ran (else the path was
 * not taken and the check proves nothing).
 *
 * LAPICT_QEMU_BIN runs this case against another qemu-system-x86_64, such as
 * Debian's QEMU 7.2, where it fails (QEMU fixed the defect in 9.0, "physmem:
 * Fix migration dirty bitmap coherency with TCG memory access").
 */
START_TEST(migrate_memory)
{
    const char *qemu =
        getenv("LAPICT_QEMU_BIN") ? getenv("LAPICT_QEMU_BIN") : QEMU;
    char dir[64], cmd[256], guest[512], sock[96], path[96], ans[2048], *o;
    pid_t pid[SOAK_HOPS + 1];
    unsigned max_syncs = 0;
    int status;

    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-soak-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(guest, sizeof(guest),
             "-M pc -m 64 -device isa-debug-exit,iobase=0xf4,iosize=4 "
             "-kernel %s -append 'memsoak=1'",
             LAPICT_MBTEST);
    for (int i = 0; i <= SOAK_HOPS; i++) {
        const char *sync;

        pid[i] = hop_start(dir, i, qemu, 120, guest);
        snprintf(sock, sizeof(sock), "%s/mon%d", dir, i);
        snprintf(path, sizeof(path), "%s/serial%d", dir, i);
        if (i > 0) {
            if (!wait_running(sock, 30))
                soak_abort(i, path, "the destination does not run", -1);
            snprintf(sock, sizeof(sock), "%s/mon%d", dir, i - 1);
            hmp_try(sock, "quit", NULL, 0, 5);
            ck_assert_int_eq(waitpid(pid[i - 1], &status, 0), pid[i - 1]);
            snprintf(sock, sizeof(sock), "%s/mon%d", dir, i);
        }
        /* Two progress lines: the guest has checked its pages and goes on. */
        if (!soak_wait(path, 2, 30, pid[i], &status))
            soak_abort(i, path, "the guest stopped writing", status);
        if (i == SOAK_HOPS)
            break;
        /*
         * 4 MB/s and a 1 ms downtime limit keep the migration iterating
         * (send the dirty pages, sync, send again) while the guest runs:
         * its three hot pages are more than 4 MB/s sends in 1 ms. After
         * the first pass, 40 kB/s for 0.8 s stretches the passes over the
         * guest's writes. Then a 300 ms limit and full bandwidth let the
         * move complete.
         */
        ck_assert(hmp_try(sock, "migrate_set_parameter max-bandwidth 4M", ans,
                          sizeof(ans), 5));
        ck_assert(hmp_try(sock, "migrate_set_parameter downtime-limit 1", ans,
                          sizeof(ans), 5));
        snprintf(cmd, sizeof(cmd), "migrate -d \"exec:cat > %s/state%d\"", dir,
                 i);
        ck_assert(hmp_try(sock, cmd, ans, sizeof(ans), 5));
        usleep(300000);
        ck_assert(hmp_try(sock, "migrate_set_parameter max-bandwidth 40K", ans,
                          sizeof(ans), 5));
        usleep(800000);
        ck_assert(hmp_try(sock, "migrate_set_parameter max-bandwidth 1G", ans,
                          sizeof(ans), 5));
        ck_assert(hmp_try(sock, "migrate_set_parameter downtime-limit 300", ans,
                          sizeof(ans), 5));
        for (int t = 0; t < 300; t++) {
            ck_assert(hmp_try(sock, "info migrate", ans, sizeof(ans), 5));
            /* QEMU 10 passes through "device" (the switchover's device
             * state) between "active" and "completed". */
            if (!strstr(ans, "Migration status: active") &&
                !strstr(ans, "Migration status: device"))
                break;
            usleep(100000);
        }
        ck_assert_msg(strstr(ans, "Migration status: completed"), "hop %d: %s",
                      i, plain(ans));
        sync = strstr(ans, "dirty sync count: ");
        ck_assert_msg(sync, "hop %d: %s", i, plain(ans));
        if ((unsigned)atoi(sync + 18) > max_syncs)
            max_syncs = (unsigned)atoi(sync + 18);
    }
    snprintf(sock, sizeof(sock), "%s/mon%d", dir, SOAK_HOPS);
    hmp_try(sock, "quit", NULL, 0, 5);
    ck_assert_int_eq(waitpid(pid[SOAK_HOPS], &status, 0), pid[SOAK_HOPS]);
    for (int i = 0; i <= SOAK_HOPS; i++) {
        snprintf(path, sizeof(path), "%s/serial%d", dir, i);
        o = slurp(path, NULL);
        ck_assert_msg(!strstr(o, "FAIL"), "hop %d:\n%s", i, o);
        free(o);
    }
    /* Setup's sync, the final one, and two or more while the guest ran. */
    ck_assert_msg(max_syncs >= 4,
                  "no move synced its dirty bitmap twice "
                  "while the guest ran (at most %u syncs)",
                  max_syncs);
    printf("RESULT test=qemu-migrate-memory migrations=%d max_dirty_syncs=%u\n",
           SOAK_HOPS, max_syncs);
    fflush(stdout);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/* ---- the build's outputs, the monitor, the TSC's rate ----------------------
 */

/*
 * Rule: lapict's MIT notice ships with the QEMU that links it statically:
 * build.sh's output holds the copy QEMU's install puts beside its
 * documentation (LICENSE.lapict), and it is lapict's LICENSE byte for
 * byte.
 */
START_TEST(licence_ships)
{
    const char *file = __FILE__;
    const char *end = strstr(file, "tests/integration/check_qemu.c");
    char repo[1024];
    size_t n, m;
    char *got, *want;

    ck_assert_msg(end, "no checkout around %s", file);
    snprintf(repo, sizeof(repo), "%.*sLICENSE", (int)(end - file), file);
    got = slurp(LAPICT_QEMU_DIR "/LICENSE.lapict", &n);
    want = slurp(repo, &m);
    ck_assert_msg(n == m && !memcmp(got, want, n),
                  "LICENSE.lapict is not %s:\n%s", repo, got);
    ck_assert_msg(strstr(got, "MIT License") &&
                      strstr(got, "The lapict authors") &&
                      strstr(got, "Permission is hereby granted"),
                  "not lapict's MIT notice:\n%s", got);
    free(got);
    free(want);
}
END_TEST

/* "info lapic"'s TMICT and TMCCT in @ans; false if absent. */
static bool info_counts(const char *ans, uint32_t *ic, uint32_t *cc)
{
    const char *p = strstr(ans, "initial_count = ");

    return p &&
           sscanf(p, "initial_count = %" SCNu32 " current_count = %" SCNu32, ic,
                  cc) == 2;
}

/*
 * Rule: "info lapic" reads lapict's timer without changing it. With the VM
 * stopped at many points of the periodic tick's period (cyclictest's
 * timers armed too), two reads print the same text and a count within
 * the initial count; after each "cont" the guest goes on: LOC rises at HZ
 * over the run (assert_loc_hz: no tick lost or doubled) and cyclictest
 * completes.
 */
START_TEST(info_lapic_read_only)
{
    static char a[8192], b[8192];
    char dir[64], guest[1024], cmd[128], sock[96], path[96];
    uint32_t ic = 0, cc = 0, ic1 = 0, cc1 = 0;
    int status, stops = 0;
    bool ended = false;
    char *o;
    pid_t p;

    snprintf(dir, sizeof(dir), "/tmp/lapict-qemu-info-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(guest, sizeof(guest),
             "-M q35 -m 512 -nic none " LAPICT_ON " -kernel %s -initrd %s "
             "-append 'console=ttyS0 panic=-1 lapict.duration=6 "
             "lapic=notscdeadline nohz=off highres=off'",
             KERNEL, INITRD);
    p = hop_start(dir, 0, QEMU, 300, guest);
    snprintf(path, sizeof(path), "%s/serial0", dir);
    snprintf(sock, sizeof(sock), "%s/mon0", dir);
    ck_assert_msg(wait_for(path, "LAPICT start", 150),
                  "the guest did not start cyclictest");
    for (int i = 0; i < 60 && !ended; i++) {
        ck_assert(hmp_try(sock, "stop", NULL, 0, 5));
        ck_assert(hmp_try(sock, "info lapic", a, sizeof(a), 5));
        ck_assert(hmp_try(sock, "info lapic", b, sizeof(b), 5));
        ck_assert_msg(!strcmp(a, b),
                      "stop %d: the second read differs:\n"
                      "%s\n--- then:\n%s",
                      i, a, b);
        ck_assert_msg(info_counts(a, &ic, &cc) && ic > 0 && cc <= ic,
                      "stop %d: no count-down within its initial count:\n%s", i,
                      a);
        ck_assert(hmp_try(sock, "cont", NULL, 0, 5));
        ck_assert(hmp_try(sock, "info lapic", b, sizeof(b), 5));
        /* A running VM's read may be taken at any point of the period. */
        ck_assert_msg(info_counts(b, &ic1, &cc1) && ic1 == ic && cc1 <= ic1,
                      "stop %d, running: %s", i, b);
        stops++;
        /* Spread the stops over the 4 ms period and its neighbourhood. */
        usleep(30000 + 1700 * (i % 11));
        o = slurp(path, NULL);
        ended = strstr(o, "LAPICT end") != NULL;
        free(o);
    }
    ck_assert_msg(wait_for(path, "LAPICT done", 150),
                  "the guest did not finish after %d stops", stops);
    hmp_try(sock, "quit", NULL, 0, 2);
    ck_assert_int_eq(waitpid(p, &status, 0), p);
    o = slurp(path, NULL);
    printf("RESULT test=qemu-info-lapic stops=%d loc=%" PRIu64 "\n", stops,
           loc_delta(o, 0));
    fflush(stdout);
    ck_assert_msg(stops >= 20, "only %d stops before the guest ended:\n%s",
                  stops, shown(o));
    assert_guest_finished(o);
    assert_loc_hz(o, 0);
    free(o);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    free(lt_run_capture(cmd, &status));
}
END_TEST

/* The host TSC's rate in MHz, against CLOCK_MONOTONIC_RAW over 200 ms. */
static double host_tsc_mhz(void)
{
    struct timespec t0, t1;
    uint64_t c0, c1;
    double ns;

    clock_gettime(CLOCK_MONOTONIC_RAW, &t0);
    c0 = __builtin_ia32_rdtsc();
    usleep(200000);
    clock_gettime(CLOCK_MONOTONIC_RAW, &t1);
    c1 = __builtin_ia32_rdtsc();
    ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 +
         (double)(t1.tv_nsec - t0.tv_nsec);
    return (double)(c1 - c0) * 1e3 / ns;
}

/* The TSC rate Linux settled on (MHz), from its console; 0 if not found. */
static double guest_tsc_mhz(const char *o)
{
    static const char *const lines[] = {
        "tsc: Refined TSC clocksource calibration: ",
        "tsc: Detected ",
    };

    for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++) {
        const char *p = strstr(o, lines[i]);

        if (p)
            return strtod(p + strlen(lines[i]), NULL);
    }
    return 0;
}

/*
 * The TSC rates of linux_tsc_frequency: the -cpu option's tsc-frequency
 * (Hz; 0: none), whether lapict's timer is on, the rate Linux must find
 * (MHz; 0: the host's TSC).
 */
static const struct tsc_case {
    uint64_t hz;
    bool lapict;
    double mhz;
} tsc_cases[] = {
    {0, true, 1000.0},
    {1234567000u, true, 1234.567},
    {1234567000u, false, 0},
};

/*
 * Rule: under TCG with lapict's timer the guest TSC counts
 * QEMU_CLOCK_VIRTUAL at "tsc-frequency" (1 GHz without it, as under
 * icount), so lapict's TSC rate is stated, never measured: Linux finds
 * that rate (within 2 %), and its TSC-deadline clockevent meets its
 * deadlines: cyclictest's best latency stays under 500 us, where a TSC off
 * its stated rate would put expiries up to an interval late (the best,
 * not the average: a busy host delays some wake-ups whatever the rate).
 * Without lapict's timer the TSC is the host's, whatever tsc-frequency
 * says (stock 10.0's TCG), and Linux finds the host's rate.
 */
START_TEST(linux_tsc_frequency)
{
    const struct tsc_case *c = &tsc_cases[_i];
    double want = c->mhz ? c->mhz : host_tsc_mhz(), guest;
    char cmd[1024], freq[48] = "";
    uint64_t best;
    int status;
    char *o;

    if (c->hz)
        snprintf(freq, sizeof(freq), ",tsc-frequency=%" PRIu64, c->hz);
    snprintf(cmd, sizeof(cmd),
             "timeout -s KILL 300 %s -M q35 -accel tcg -cpu max%s -m 512 %s "
             "-nic none "
             "-display none -monitor none -serial stdio -no-reboot "
             "-kernel %s -initrd %s -append 'console=ttyS0 panic=-1 "
             "lapict.duration=3' </dev/null",
             QEMU, freq, c->lapict ? LAPICT_ON : "", KERNEL, INITRD);
    o = lt_run_capture(cmd, &status);
    ck_assert_msg(status == 0, "QEMU exit status %d:\n%s", status, shown(o));
    assert_guest_finished(o);
    guest = guest_tsc_mhz(o);
    best = ufield(o, "LAPICT cyclictest thread=", "min_us");
    printf("RESULT test=qemu-tsc-frequency lapict=%d tsc_frequency_mhz=%.3f "
           "want_mhz=%.3f guest_mhz=%.3f min_us=%" PRIu64 " avg_us=%" PRIu64
           "\n",
           c->lapict, (double)c->hz / 1e6, want, guest, best,
           ufield(o, "LAPICT cyclictest thread=", "avg_us"));
    fflush(stdout);
    ck_assert_msg(guest > want * 0.98 && guest < want * 1.02,
                  "Linux measured a %.3f MHz TSC, not %.3f (tsc-frequency "
                  "%.3f, lapict %d):\n%s",
                  guest, want, (double)c->hz / 1e6, c->lapict, shown(o));
    if (c->lapict) {
        ck_assert_msg(
            str_is(field(o, "LAPICT boot ", "clockevent"), "lapic-deadline"),
            "not lapic-deadline:\n%s", shown(o));
        ck_assert_msg(best < 500,
                      "cyclictest's best latency %" PRIu64 " us:\n%s", best,
                      shown(o));
    }
    ck_assert_msg(loc_delta(o, 0) >=
                      ufield(o, "LAPICT cyclictest thread=", "count"),
                  "fewer LOC than wake-ups:\n%s", shown(o));
    free(o);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("qemu");
    TCase *l, *mb, *mi, *ch, *mm, *st, *ic;

    l = tcase_create("linux");
    tcase_set_timeout(l, 300);
    tcase_add_loop_test(l, linux_modes, 0, CE_MODES * CE_SMPS);
    tcase_add_loop_test(l, linux_halt_expiry, 0, 2);
    suite_add_tcase(s, l);
    mb = tcase_create("mbtest");
    tcase_set_timeout(mb, 150);
    tcase_add_loop_test(mb, mbtest_tcg, 0, 2);
    tcase_add_loop_test(mb, mbtest_running_expiry, 0, 2);
    tcase_add_loop_test(mb, mbtest_no_deadline, 0, 2);
    suite_add_tcase(s, mb);
    mi = tcase_create("migration");
    tcase_set_timeout(mi, 300);
    tcase_add_loop_test(mi, migrate_timer_armed, 0, 2);
    tcase_add_test(mi, migrate_corrupt_blob);
    suite_add_tcase(s, mi);
    ch = tcase_create("migration-chain");
    /* Three modes of about a minute each, and the corrupt live move. */
    tcase_set_timeout(ch, 900);
    tcase_add_loop_test(ch, migrate_chain, 0, 3);
    tcase_add_test(ch, migrate_corrupt_live_source_runs);
    suite_add_tcase(s, ch);
    mm = tcase_create("migration-memory");
    tcase_set_timeout(mm, 300);
    tcase_add_test(mm, migrate_memory);
    suite_add_tcase(s, mm);
    st = tcase_create("stock");
    tcase_set_timeout(st, 400);
    tcase_add_loop_test(st, migrate_stock_compat, 0, 4);
    tcase_add_loop_test(st, migrate_disabled_stock, 0, 2);
    tcase_add_loop_test(st, migrate_stock_modes, 0,
                        sizeof(stock_modes) / sizeof(*stock_modes));
    tcase_add_test(st, migrate_unarmed_deadline);
    tcase_add_loop_test(st, migrate_tsc_write, 0, 2);
    tcase_add_loop_test(st, apic_properties, 0,
                        sizeof(apic_props) / sizeof(*apic_props));
    tcase_add_loop_test(st, default_guest_is_stock, 0, 2);
    tcase_add_loop_test(st, default_cpu_options_are_stock, 0,
                        sizeof(cpu_options) / sizeof(*cpu_options));
    tcase_add_test(st, cpu_expansion_matches_guest);
    suite_add_tcase(s, st);
    ic = tcase_create("icount");
    tcase_set_timeout(ic, 600);
    tcase_add_loop_test(
        ic, icount_linux, 0,
        CE_MODES * (int)(sizeof(icount_shifts) / sizeof(*icount_shifts)));
    tcase_add_test(ic, icount_record_replay);
    suite_add_tcase(s, ic);
    {
        TCase *lic = tcase_create("licence");
        TCase *il = tcase_create("info-lapic");
        TCase *tf = tcase_create("tsc-frequency");

        tcase_add_test(lic, licence_ships);
        suite_add_tcase(s, lic);
        tcase_set_timeout(il, 300);
        tcase_add_test(il, info_lapic_read_only);
        suite_add_tcase(s, il);
        tcase_set_timeout(tf, 300);
        tcase_add_loop_test(tf, linux_tsc_frequency, 0,
                            (int)(sizeof(tsc_cases) / sizeof(*tsc_cases)));
        suite_add_tcase(s, tf);
    }
    return s;
}

int main(void)
{
    return lt_check_run(suite());
}
