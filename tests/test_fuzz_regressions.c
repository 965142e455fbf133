/* SPDX-License-Identifier: MIT */
/*
 * The fuzz targets of tests/fuzz without libFuzzer: every checked-in input
 * (tests/fuzz/regressions/<target>/: crashes the fuzzers found, each a
 * regression test; tests/fuzz/seeds/<target>/: the seeds, the set cover
 * of the grown corpus) runs once through the same entry point and the same
 * invariant checkers, in the normal build with whatever compiler and sanitizers
 * it uses. A broken invariant prints the input's name and aborts.
 *
 * The four targets are compiled into this one file: their file-scope
 * names carry per-target prefixes and their entry points are renamed with
 * the FUZZ_*_ENTRY macros (see tests/fuzz/fuzz_common.h). The input
 * folders are found from __FILE__ (CMake compiles with absolute paths), or
 * from LAPICT_FUZZ_DIR if set.
 */
#define _GNU_SOURCE

#define FUZZ_REGS_ENTRY fuzz_regs_one
#include "fuzz/fuzz_regs.c"
#define FUZZ_RESTORE_ENTRY fuzz_restore_one
#include "fuzz/fuzz_restore.c"
#define FUZZ_REPLAY_ENTRY fuzz_replay_one
#include "fuzz/fuzz_replay.c"
#define FUZZ_COUNTDOWN_ENTRY fuzz_countdown_one
#include "fuzz/fuzz_countdown.c"
#include "tu_main.h"

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <dirent.h>
#include <sys/stat.h>

typedef int (*fr_entry)(const uint8_t *data, size_t size);

static char fr_dir[4096];

static const char *fr_fuzz_dir(void)
{
    const char *env = getenv("LAPICT_FUZZ_DIR");
    char *slash;

    if (env)
        return env;
    snprintf(fr_dir, sizeof(fr_dir), "%s", __FILE__);
    slash = strrchr(fr_dir, '/');
    if (slash)
        snprintf(slash, sizeof(fr_dir) - (size_t)(slash - fr_dir), "/fuzz");
    else
        snprintf(fr_dir, sizeof(fr_dir), "fuzz");
    return fr_dir;
}

static int fr_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run @entry on every regular file of @dir; returns how many ran. */
static unsigned fr_run_dir(const char *dir, fr_entry entry)
{
    struct dirent **list;
    unsigned count = 0;
    int n, i;

    n = scandir(dir, &list, NULL, NULL);
    if (n < 0)
        return 0;
    qsort(list, (size_t)n, sizeof(*list), fr_cmp);
    for (i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
        free(list[i]);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
            path[strlen(dir) + 1] == '.')
            continue;
        f = fopen(path, "rb");
        assert_non_null(f);
        {
            size_t len = (size_t)st.st_size;
            uint8_t *buf = malloc(len ? len : 1);
            assert_non_null(buf);
            assert_int_equal(fread(buf, 1, len, f), len);
            fclose(f);
            fz_current_input = path;
            entry(buf, len);
            fz_current_input = NULL;
            free(buf);
        }
        count++;
    }
    free(list);
    return count;
}

static void fr_run(const char *target, fr_entry entry)
{
    char dir[4096];
    unsigned n;

    snprintf(dir, sizeof(dir), "%s/regressions/%s", fr_fuzz_dir(), target);
    n = fr_run_dir(dir, entry);
    snprintf(dir, sizeof(dir), "%s/seeds/%s", fr_fuzz_dir(), target);
    n += fr_run_dir(dir, entry);
    print_message("%s: %u inputs\n", target, n);
    /* A missing folder must not pass silently. */
    assert_true(n > 0);
}

/*
 * What each target's inputs keep: register/MSR/MMIO sequences every
 * invariant of fuzz_regs; blobs: rejected ones change nothing, accepted
 * ones round-trip; count-downs: rejected ones change nothing, accepted
 * ones are never early; traces: the replay parser neither crashes nor
 * leaks nor misorders.
 */
struct fr_target {
    const char *name;
    fr_entry entry;
};
static struct fr_target fr_regs = {"regs", fuzz_regs_one},
                        fr_restore = {"restore", fuzz_restore_one},
                        fr_replay = {"replay", fuzz_replay_one},
                        fr_countdown = {"countdown", fuzz_countdown_one};

static void inputs_keep_invariants(void **state)
{
    const struct fr_target *t = *state;
    fr_run(t->name, t->entry);
}

/* clang-format off */
#define FR_TEST(t)                                                             \
    { #t "_inputs_keep_invariants", inputs_keep_invariants, NULL, NULL,        \
      &fr_##t }
/* clang-format on */

TU_MAIN(FR_TEST(regs), FR_TEST(restore), FR_TEST(replay), FR_TEST(countdown))
