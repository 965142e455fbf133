/* SPDX-License-Identifier: MIT */
/*
 * Save/restore blob (docs/spec/state.md; docs/spec/timer.md section 8).
 * Little-endian byte by byte, so the blob is the same on any host; time is
 * stored relative to the moment of saving. Restore validates everything
 * into a copy and only then commits, so a rejected blob leaves the instance
 * exactly as it was.
 */
#include "advance.h"
#include "clock.h"
#include "math.h"
#include "ops.h"
#include "timer.h"

#define OFF_MAGIC 0
#define OFF_VERSION 4
#define OFF_SIZE 6
#define OFF_LVTT 8
#define OFF_TDCR 12
#define OFF_TMICT 16
#define OFF_FLAGS 20
#define OFF_ELAPSED 24
#define OFF_ETICK 32
#define OFF_DEADLINE 40
#define OFF_PENDING 48
#define OFF_ADV 52
#define OFF_BUS_HZ 56
#define OFF_ADV_EST 64
#define OFF_ADV_DEV 68
#define OFF_CLAMP_P 72
/* What the save's settling counted (expiries, masked, coalesced, dropped,
 * illegal vector). */
#define OFF_SETTLED 76
#define N_SETTLED 5
#define OFF_ADV_OUTL 96
#define OFF_RESERVED 100
#define OFF_CRC 124

/* Blob flag bits (stable on the wire, independent of internal flags). */
#define B_SVR_EN 0x01u
#define B_CD_ACTIVE 0x02u
#define B_CD_ARMED 0x04u
#define B_CLAMPED 0x08u
#define B_DL_ARMED 0x10u
#define B_PREINJ 0x20u
#define B_HAVE_EST 0x40u
#define B_ALL 0x7Fu

static const struct {
    uint16_t internal;
    uint32_t wire;
} flag_map[] = {
    {LAPICT__F_SVR_EN, B_SVR_EN},     {LAPICT__F_CD_ACTIVE, B_CD_ACTIVE},
    {LAPICT__F_CD_ARMED, B_CD_ARMED}, {LAPICT__F_CLAMPED, B_CLAMPED},
    {LAPICT__F_DL_ARMED, B_DL_ARMED}, {LAPICT__F_PREINJ, B_PREINJ},
    {LAPICT__F_HAVE_EST, B_HAVE_EST},
};
#define NFLAGS (sizeof(flag_map) / sizeof(flag_map[0]))

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint64_t bus_hz_of(const struct lapict_timer *t)
{
    /* bus_p / bus_q is bus_hz / 10^9 reduced, so bus_q divides 10^9. */
    return t->bus_p * (1000000000ull / t->bus_q);
}

/*
 * ns from @now until the instant of the expiry injected ahead (0 when it is
 * due): at most the advance in force when it was injected. Save writes the
 * advance as at least this lead, so that a blob saved after a restore into
 * a host with a smaller advance (or none) still passes restore's check.
 */
static uint64_t preinj_lead(const struct lapict_timer *n, uint64_t now,
                            uint64_t tsc)
{
    if (n->flags & LAPICT__F_CD_ARMED) {
        uint64_t elapsed = now - n->cd.anchor_ns;
        return elapsed >= n->cd.next_rel_ns ? 0 : n->cd.next_rel_ns - elapsed;
    }
    return tsc >= n->deadline_tsc || lapict__after_eq(now, n->dl.at_ns)
               ? 0
               : n->dl.at_ns - now;
}

int lapict_state_save_at(const struct lapict_timer *cur, uint64_t now,
                         uint64_t guest_tsc, void *buf, size_t len)
{
    struct lapict_timer st;
    const struct lapict_timer *t = cur;
    uint8_t *b = buf;
    uint32_t fl = 0, adv;
    size_t i;
    bool cd;

    if (!lapict__valid(cur) || !buf)
        return lapict__invalid(cur);
    if (len < LAPICT_STATE_SIZE)
        return LAPICT_E_STATE_SIZE;
    /*
     * The state as servicing at @now would leave it, worked out on a copy
     * without calling the host: a due expiry travels as pending, so an
     * interrupt controller saved before or after the timer loses nothing.
     * Nothing due (the common case): the instance is that state already.
     */
    if (lapict__due(cur, now, guest_tsc)) {
        st = *cur;
        lapict__settle(&st, now, guest_tsc);
        t = &st;
    }
    for (i = 0; i < NFLAGS; i++)
        if (t->flags & flag_map[i].internal)
            fl |= flag_map[i].wire;
    cd = t->flags & LAPICT__F_CD_ACTIVE;
    __builtin_memset(b, 0, LAPICT_STATE_SIZE);
    put32(b + OFF_MAGIC, LAPICT_STATE_MAGIC);
    b[OFF_VERSION] = (uint8_t)LAPICT_STATE_VERSION;
    b[OFF_SIZE] = (uint8_t)LAPICT_STATE_SIZE;
    put32(b + OFF_LVTT, t->lvtt);
    put32(b + OFF_TDCR, t->tdcr);
    put32(b + OFF_TMICT, t->tmict);
    put32(b + OFF_FLAGS, fl);
    put64(b + OFF_ELAPSED, cd ? lapict__elapsed(t, now) : 0);
    put64(b + OFF_ETICK, cd ? t->cd.e_tick : 0);
    put64(b + OFF_DEADLINE,
          (t->flags & LAPICT__F_DL_ARMED) ? t->deadline_tsc : 0);
    put32(b + OFF_PENDING, t->pending);
    adv = t->adv_ns;
    if (t->flags & LAPICT__F_PREINJ) {
        uint64_t lead = preinj_lead(t, now, guest_tsc);
        if (lead > adv)
            adv = lead > LAPICT_ADVANCE_NS_LIMIT ? LAPICT_ADVANCE_NS_LIMIT
                                                 : (uint32_t)lead;
    }
    put32(b + OFF_ADV, adv);
    put64(b + OFF_BUS_HZ, bus_hz_of(t));
    put32(b + OFF_ADV_EST, t->adv_est);
    put32(b + OFF_ADV_DEV, t->adv_dev);
    /* The clamped clock is this host's: the destination may have another. */
    put32(b + OFF_CLAMP_P,
          (t->flags & LAPICT__F_CLAMPED) ? t->min_period_ns : 0);
    put32(b + OFF_ADV_OUTL, t->adv_outliers);
    if (t == &st) {
        /* Statistics of the settling: the destination counts them, since
         * the source (unchanged by a save) never will. */
        static const enum lapict__count settled[N_SETTLED] = {
            LAPICT__N_EXPIRIES, LAPICT__N_MASKED, LAPICT__N_COALESCED,
            LAPICT__N_DROPPED, LAPICT__N_ILLEGAL_VECTOR};
        for (i = 0; i < N_SETTLED; i++) {
            uint64_t d = st.counts[settled[i]] - cur->counts[settled[i]];
            put32(b + OFF_SETTLED + 4 * i,
                  d > UINT32_MAX ? UINT32_MAX : (uint32_t)d);
        }
    }
    put32(b + OFF_CRC, lapict__crc32(b, OFF_CRC));
    return LAPICT_OK;
}

int lapict_state_save(const struct lapict_timer *t, void *buf, size_t len)
{
    uint64_t now;

    if (!lapict__valid(t) || !buf)
        return lapict__invalid(t);
    if (len < LAPICT_STATE_SIZE)
        return LAPICT_E_STATE_SIZE;
    /* Pure reads; the guest TSC matters only to an armed deadline. */
    now = lapict__host_now(t);
    return lapict_state_save_at(
        t, now, (t->flags & LAPICT__F_DL_ARMED) ? lapict__host_tsc(t) : 0, buf,
        len);
}

static int check_header(const uint8_t *b)
{
    uint64_t any = 0;
    size_t i;

    if (get32(b + OFF_MAGIC) != LAPICT_STATE_MAGIC)
        return LAPICT_E_STATE_MAGIC;
    if ((uint32_t)(b[OFF_VERSION] | b[OFF_VERSION + 1] << 8) !=
        LAPICT_STATE_VERSION)
        return LAPICT_E_STATE_VERSION;
    if ((uint32_t)(b[OFF_SIZE] | b[OFF_SIZE + 1] << 8) != LAPICT_STATE_SIZE)
        return LAPICT_E_STATE_SIZE;
    if (get32(b + OFF_CRC) != lapict__crc32(b, OFF_CRC))
        return LAPICT_E_STATE_CHECKSUM;
    /* Reserved bytes: zero, tested a word at a time. */
    _Static_assert((OFF_CRC - OFF_RESERVED) % 8 == 0,
                   "reserved bytes are whole words");
    for (i = OFF_RESERVED; i < OFF_CRC; i += 8)
        any |= get64(b + i);
    return any ? LAPICT_E_STATE_FIELD : LAPICT_OK;
}

/* Field-by-field consistency; the blob is untrusted. */
static int check_fields(const struct lapict_timer *t, const uint8_t *b)
{
    uint32_t lvtt = get32(b + OFF_LVTT), tmict = get32(b + OFF_TMICT);
    uint32_t fl = get32(b + OFF_FLAGS), mode = lvtt & LAPICT_LVTT_MODE;
    uint64_t elapsed = get64(b + OFF_ELAPSED), e = get64(b + OFF_ETICK);
    uint64_t dl = get64(b + OFF_DEADLINE);
    bool active = fl & B_CD_ACTIVE, dlmode = mode == LAPICT_LVTT_TSC_DEADLINE;

    if (lvtt & ~(LAPICT_LVTT_VECTOR | LAPICT_LVTT_MASK | LAPICT_LVTT_MODE))
        return LAPICT_E_STATE_FIELD;
    if (mode == LAPICT_LVTT_MODE || (get32(b + OFF_TDCR) & ~0xBu) ||
        (fl & ~B_ALL))
        return LAPICT_E_STATE_FIELD;
    if (!(fl & B_SVR_EN) && !(lvtt & LAPICT_LVTT_MASK))
        return LAPICT_E_STATE_FIELD;
    /*
     * Only states the library produces: a count-down is defined exactly
     * while its next expiry is unprocessed (a one-shot stops at its expiry,
     * a periodic one reloads), so "active" and "armed" go together.
     */
    if (!(fl & B_CD_ARMED) != !active)
        return LAPICT_E_STATE_FIELD;
    if (active) {
        if (dlmode || tmict == 0 || e == 0 || e > LAPICT__FAR_NS ||
            elapsed > LAPICT__FAR_NS)
            return LAPICT_E_STATE_FIELD;
    } else if (elapsed || e || (fl & B_CLAMPED)) {
        return LAPICT_E_STATE_FIELD;
    }
    if ((fl & B_CLAMPED) && mode != LAPICT_LVTT_PERIODIC)
        return LAPICT_E_STATE_FIELD;
    if ((fl & B_CLAMPED) ? (get32(b + OFF_CLAMP_P) == 0 ||
                            get32(b + OFF_CLAMP_P) > LAPICT_MIN_PERIOD_NS_MAX)
                         : get32(b + OFF_CLAMP_P) != 0)
        return LAPICT_E_STATE_FIELD;
    if ((fl & B_DL_ARMED) ? (!dlmode || dl == 0) : dl != 0)
        return LAPICT_E_STATE_FIELD;
    if (dlmode && tmict)
        return LAPICT_E_STATE_FIELD;
    /* Injected ahead: an expiry of this mode is armed, none is pending
     * (the library injects ahead only with nothing pending, and the
     * expiry consumes the flag before anything can become pending), LVTT
     * unmasked (a write that masks it waits for the instant first). */
    if ((fl & B_PREINJ) &&
        (!(fl & (B_CD_ARMED | B_DL_ARMED)) || get32(b + OFF_PENDING) != 0 ||
         (lvtt & LAPICT_LVTT_MASK)))
        return LAPICT_E_STATE_FIELD;
    /* An illegal vector's expiry settled by the save was dropped there: the
     * vector is illegal and unmasked, nothing is left pending. */
    if (get32(b + OFF_SETTLED + 16) &&
        ((lvtt & LAPICT_LVTT_VECTOR) >= 16 || (lvtt & LAPICT_LVTT_MASK) ||
         get32(b + OFF_PENDING) != 0))
        return LAPICT_E_STATE_FIELD;
    if (!lapict__outliers_ok(get32(b + OFF_ADV_OUTL)) ||
        (get32(b + OFF_ADV_OUTL) && !(fl & B_HAVE_EST)))
        return LAPICT_E_STATE_FIELD;
    if (get32(b + OFF_PENDING) > LAPICT_CATCH_UP_MAX_LIMIT ||
        get32(b + OFF_ADV) > LAPICT_ADVANCE_NS_LIMIT ||
        get32(b + OFF_ADV_EST) > 2 * LAPICT_ADVANCE_NS_LIMIT ||
        get32(b + OFF_ADV_DEV) > 2 * LAPICT_ADVANCE_NS_LIMIT)
        return LAPICT_E_STATE_FIELD;
    /* Properties of the virtual platform must match the destination. */
    if (get64(b + OFF_BUS_HZ) != bus_hz_of(t))
        return LAPICT_E_STATE_CONFIG;
    if (dlmode && !(t->flags & LAPICT__F_DL_OK))
        return LAPICT_E_STATE_CONFIG;
    return LAPICT_OK;
}

/*
 * An expiry injected ahead must be within the advance the source had (the
 * blob's) of @now: the wait before the next guest entry spins until it,
 * and a forged instant years away would spin for years and then swallow
 * the real expiry. A deadline's instant is this host's estimate, which may
 * be one TSC period later than the source's.
 */
static bool preinj_near(const struct lapict_timer *n, const uint8_t *b,
                        uint64_t now, uint64_t tsc)
{
    uint64_t adv = get32(b + OFF_ADV);

    if (!(n->flags & LAPICT__F_CD_ARMED))
        adv += lapict__ns_from_tsc(n, 1);
    return preinj_lead(n, now, tsc) <= adv;
}

/*
 * Move a count-down from the source's clock to this host's (its minimum
 * period @min_ns may differ, so the clamp may start, stop or change
 * period): the count is kept and the timer re-anchored at @now, as
 * docs/spec/timer.md section 3 does whenever the clamp starts or stops
 * applying. The same clock is kept exactly. Due expiries are settled on the
 * source's clock first, so none is lost by the re-anchor. An expiry already
 * injected ahead cannot move: its instant would change under an interrupt
 * the guest already has (twice, or early), so that is a configuration
 * mismatch.
 */
static int to_local_clock(struct lapict_timer *n, uint32_t min_ns, uint64_t now)
{
    uint32_t src_ns = n->min_period_ns, c;
    bool clamp;

    if (n->flags & LAPICT__F_CD_ACTIVE) {
        lapict__settle(n, now, 0); /* no deadline in a count-down mode */
        n->min_period_ns = min_ns;
        clamp = lapict__needs_clamp(n);
        n->min_period_ns = src_ns;
        if ((n->flags & LAPICT__F_CD_ACTIVE) &&
            (clamp != !!(n->flags & LAPICT__F_CLAMPED) ||
             (clamp && src_ns != min_ns))) {
            if (n->flags & LAPICT__F_PREINJ)
                return LAPICT_E_STATE_CONFIG;
            c = lapict__tmcct(n, now);
            n->min_period_ns = min_ns;
            n->flags &= (uint16_t)~LAPICT__F_CLAMPED;
            if (clamp)
                n->flags |= LAPICT__F_CLAMPED;
            lapict__reanchor(n, now, c);
        }
        /* A clamp in force here engages on this instance (stats). */
        if (n->flags & LAPICT__F_CLAMPED)
            lapict__count(n, LAPICT__N_CLAMPS);
    }
    n->min_period_ns = min_ns;
    return LAPICT_OK;
}

int lapict_state_restore(struct lapict_timer *t, const void *buf, size_t len)
{
    const uint8_t *b = buf;
    struct lapict_timer n;
    uint32_t fl, pending, adv;
    uint64_t illegal, dropped_here;
    uint64_t now, tsc = 0;
    size_t i;
    int rc;

    if (!lapict__valid(t) || !buf)
        return lapict__invalid(t);
    /* The rule save has: room for the blob; only its bytes are read. */
    if (len < LAPICT_STATE_SIZE)
        return LAPICT_E_STATE_SIZE;
    rc = check_header(b);
    if (rc == LAPICT_OK)
        rc = check_fields(t, b);
    if (rc != LAPICT_OK)
        return rc;

    now = lapict__host_now(t);
    n = *t;
    fl = get32(b + OFF_FLAGS);
    n.lvtt = get32(b + OFF_LVTT);
    lapict__set_tdcr(&n, get32(b + OFF_TDCR));
    n.tmict = get32(b + OFF_TMICT);
    n.flags &= (uint16_t)(LAPICT__F_BLOCKED | LAPICT__F_DL_OK |
                          LAPICT__F_TSC_REPORTED);
    for (i = 0; i < NFLAGS; i++)
        if (fl & flag_map[i].wire)
            n.flags |= flag_map[i].internal;
    n.cd.anchor_ns = now - get64(b + OFF_ELAPSED);
    n.cd.e_tick = get64(b + OFF_ETICK);
    n.deadline_tsc = get64(b + OFF_DEADLINE);
    if (n.flags & LAPICT__F_CD_ACTIVE) {
        uint64_t T;
        /* First the source's clock: clamped, N ticks lasted its period. */
        if (n.flags & LAPICT__F_CLAMPED) {
            n.min_period_ns = get32(b + OFF_CLAMP_P);
            if (!lapict__needs_clamp(&n))
                return LAPICT_E_STATE_FIELD; /* that clamp never applied */
        }
        n.cd.next_rel_ns = lapict__ns_for(&n, n.cd.e_tick);
        T = lapict__ticks_in(&n, get64(b + OFF_ELAPSED));
        /* A count above N is not a state any guest could have produced. */
        if (n.cd.e_tick > T && n.cd.e_tick - T > n.tmict)
            return LAPICT_E_STATE_FIELD;
    }
    if (n.flags & LAPICT__F_DL_ARMED) {
        tsc = lapict__host_tsc(&n);
        n.dl.at_ns = lapict__deadline_ns(&n, now, tsc, n.deadline_tsc);
        /* The TSC's rate is measured from here, on this host. */
        n.dl.t0_ns = now;
        n.dl.tsc0 = tsc;
        n.dl_rearms = 0;
    }
    if ((n.flags & LAPICT__F_PREINJ) && !preinj_near(&n, b, now, tsc))
        return LAPICT_E_STATE_FIELD;
    pending = get32(b + OFF_PENDING);
    if (pending > n.catch_up_max) {
        lapict__count_add(&n,
                          n.missed == LAPICT_MISSED_COALESCE
                              ? LAPICT__N_COALESCED
                              : LAPICT__N_DROPPED,
                          pending - n.catch_up_max);
        pending = n.catch_up_max;
    }
    n.pending = (uint16_t)pending;
    /* The source's save settled these (any value is a statistic only). */
    lapict__count_add(&n, LAPICT__N_EXPIRIES, get32(b + OFF_SETTLED));
    lapict__count_add(&n, LAPICT__N_MASKED, get32(b + OFF_SETTLED + 4));
    lapict__count_add(&n, LAPICT__N_COALESCED, get32(b + OFF_SETTLED + 8));
    lapict__count_add(&n, LAPICT__N_DROPPED, get32(b + OFF_SETTLED + 12));
    illegal = get32(b + OFF_SETTLED + 16);
    if (n.adv_mode == LAPICT_ADVANCE_ADAPTIVE) {
        adv = get32(b + OFF_ADV);
        n.adv_ns = adv > n.adv_max_ns ? n.adv_max_ns : adv;
        n.adv_est = get32(b + OFF_ADV_EST);
        n.adv_dev = get32(b + OFF_ADV_DEV);
        n.adv_outliers = (uint8_t)get32(b + OFF_ADV_OUTL);
    } else {
        n.flags &= (uint16_t)~LAPICT__F_HAVE_EST;
    }
    /* No expiry happened here yet: nothing holds back an early injection. */
    n.flags &= (uint16_t)~LAPICT__F_EXPIRED;
    n.last_instant_ns = now;
    /*
     * An expiry already due here (a deadline this guest TSC has passed, a
     * forged elapsed time) joins the pending ones: restore never injects,
     * since an interrupt controller restored after it would overwrite the
     * injection. The host delivers with lapict_irq_window_open() (state.h).
     */
    /*
     * An illegal vector's expiry that fell due in the migration gap is
     * dropped here quietly (moving to this host's clock, or the settling
     * below), like the save's: reported below with them, once, as
     * servicing it would have.
     */
    dropped_here = n.counts[LAPICT__N_ILLEGAL_VECTOR];
    rc = to_local_clock(&n, t->min_period_ns, now);
    if (rc != LAPICT_OK)
        return rc;
    lapict__settle(&n, now, tsc);
    dropped_here = n.counts[LAPICT__N_ILLEGAL_VECTOR] - dropped_here;
    n.counts[LAPICT__N_ILLEGAL_VECTOR] -= dropped_here;
    illegal = lapict__sat_add(illegal, dropped_here);
    /*
     * An expiry still injected ahead is in the guest's IRR (the interrupt
     * controller travels too): the next entry must wait for its instant,
     * however small this instance's own advance (the wait is the blob's,
     * checked above), and a host that cannot wait cannot take it.
     */
    if (n.flags & LAPICT__F_PREINJ) {
        if (!lapict__host_can_spin(&n))
            return LAPICT_E_STATE_CONFIG;
        n.flags |= LAPICT__F_PREINJ_KEPT;
    }

    /* Commit: the host timers of the old state go, the new state arms. */
    lapict__host_cancel(t);
    n.armed = LAPICT__ARMED_NONE;
    *t = n;
    lapict__arm_next(t, now, false);
    /* The source's save, or the settling above, dropped an illegal
     * vector's expiry without reporting it (neither calls an op). */
    lapict__report_dropped_illegal(t, illegal);
    return LAPICT_OK;
}
