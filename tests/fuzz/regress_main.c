/* SPDX-License-Identifier: MIT */
/*
 * A main() for a fuzz target without libFuzzer: runs the target once on
 * every file named on the command line (directories: every regular file in
 * them, in name order). Used for the regression runs in ctest, for
 * reproducing a crash under a debugger, and for coverage runs. Prints how
 * many inputs ran; a broken invariant aborts, as under libFuzzer.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *current;

/* A checker aborted: name the input (async-signal-safe). */
static void on_abort(int sig)
{
    (void)sig;
    if (current) {
        (void)!write(2, "input: ", 7);
        (void)!write(2, current, strlen(current));
        (void)!write(2, "\n", 1);
    }
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f) {
        perror(path);
        return -1;
    }
    for (;;) {
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap = cap ? cap * 2 : 4096);
            if (!nb) {
                fclose(f);
                free(buf);
                return -1;
            }
            buf = nb;
        }
        n = fread(buf + len, 1, cap - len, f);
        if (!n)
            break;
        len += n;
    }
    fclose(f);
    current = path;
    LLVMFuzzerTestOneInput(buf, len);
    current = NULL;
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, unsigned *count)
{
    struct stat st;
    struct dirent **list;
    int n, i, rc = 0;

    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (run_file(path) != 0)
            return -1;
        ++*count;
        return 0;
    }
    n = scandir(path, &list, NULL, NULL);
    if (n < 0) {
        perror(path);
        return -1;
    }
    qsort(list, (size_t)n, sizeof(*list), cmp);
    for (i = 0; i < n; i++) {
        char *p;
        if (list[i]->d_name[0] != '.' && rc == 0) {
            size_t len = strlen(path) + strlen(list[i]->d_name) + 2;
            p = malloc(len);
            if (!p) {
                rc = -1;
            } else {
                snprintf(p, len, "%s/%s", path, list[i]->d_name);
                if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                    rc = run_file(p);
                    ++*count;
                }
                free(p);
            }
        }
        free(list[i]);
    }
    free(list);
    return rc;
}

int main(int argc, char **argv)
{
    unsigned count = 0;
    int i;

    signal(SIGABRT, on_abort);
    for (i = 1; i < argc; i++)
        if (run_path(argv[i], &count) != 0)
            return 1;
    printf("%s: %u inputs ran without a broken invariant\n", argv[0], count);
    return 0;
}
