/* SPDX-License-Identifier: MIT */
/*
 * Integration suite for lapict-replay (docs/spec/replay.md): runs every
 * golden trace in tests/traces and every bad-input trace in
 * tests/traces/bad through the real executable and compares what it prints
 * byte for byte with the hand-derived expectations stored beside them.
 *
 *   tests/traces/NN-name.trace      golden input (derivation in # comments)
 *   tests/traces/NN-name.expected   exact stdout; stderr empty; exit 0
 *   tests/traces/bad/NN-name.trace  input with one bad line
 *   tests/traces/bad/NN-name.err    prefix stderr must start with
 *                                   ("lapict-replay: LINE:")
 *   tests/traces/bad/NN-name.expected  exact stdout of the lines before it;
 *                                   exit 2
 *
 * The trace lists are read from the directories when the suite is built,
 * sorted, and each entry is one iteration of a loop test, so a failure names
 * the trace. Each run is a fork/exec with stdout and stderr captured in
 * temporary files (no pipe can fill up and deadlock).
 */
#define _POSIX_C_SOURCE 200809L
#include "check_run.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lapict/version.h>

#ifndef LAPICT_REPLAY_BIN
#error "LAPICT_REPLAY_BIN must name the lapict-replay executable"
#endif
#ifndef LAPICT_TRACES_DIR
#error "LAPICT_TRACES_DIR must name the tests/traces directory"
#endif

#define BAD_DIR LAPICT_TRACES_DIR "/bad"
/* The replay's line length limit (bytes before the newline). */
#define MAX_LINE 4096
/* Host timer callbacks one run_until() call ran before stopping, when it
 * had a limit: a long trace must pass it. */
#define OLD_EVENT_CAP 10000000u
/* --max-events without the option (lapict-replay(1)). */
#define MAX_EVENTS_DEFAULT 1000000u

/* Address-space limits do not mix with ASan's shadow memory. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif
/* A golden set smaller than this means the directory was not found/empty. */
#define MIN_GOLDEN 30
#define MIN_BAD 20
#define TEST_TIMEOUT_S 60

/* Trace base names (without ".trace"), sorted; filled at suite build. */
struct trace_list {
    char **names;
    int n;
};

static struct trace_list golden, bad;

/* What one run of lapict-replay produced. */
struct run_result {
    char *out;
    size_t out_len;
    char *err;
    size_t err_len;
    int status;   /* raw wait status */
    double cpu_s; /* the run's CPU time, user and system */
};

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lf = strlen(suffix);
    return ls > lf && strcmp(s + ls - lf, suffix) == 0;
}

/* Collect "*.trace" base names of @dir, sorted. A missing dir gives 0. */
static void list_traces(const char *dir, struct trace_list *l)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int cap = 0;

    l->names = NULL;
    l->n = 0;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t len;
        char *name;

        if (e->d_name[0] == '.' || !ends_with(e->d_name, ".trace"))
            continue;
        if (l->n == cap) {
            char **p;
            cap = cap ? cap * 2 : 64;
            p = realloc(l->names, (size_t)cap * sizeof(*p));
            if (!p)
                abort();
            l->names = p;
        }
        len = strlen(e->d_name) - strlen(".trace");
        name = malloc(len + 1);
        if (!name)
            abort();
        memcpy(name, e->d_name, len);
        name[len] = '\0';
        l->names[l->n++] = name;
    }
    closedir(d);
    if (l->n > 1)
        qsort(l->names, (size_t)l->n, sizeof(*l->names), cmp_names);
}

static char *path_join(const char *dir, const char *name, const char *ext)
{
    size_t n = strlen(dir) + 1 + strlen(name) + strlen(ext) + 1;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s%s", dir, name, ext);
    return p;
}

/* Read a whole file; NULL (errno set) if it cannot be opened. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;

    *len = 0;
    if (!f)
        return NULL;
    for (;;) {
        size_t got;
        if (cap - n < 4096) {
            char *p;
            cap = cap ? cap * 2 : 8192;
            p = realloc(buf, cap + 1);
            if (!p)
                abort();
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static char *slurp_fd(int fd, size_t *len)
{
    char *buf = NULL;
    size_t cap = 0, n = 0;

    if (lseek(fd, 0, SEEK_SET) < 0)
        abort();
    for (;;) {
        ssize_t got;
        if (cap - n < 4096) {
            char *p;
            cap = cap ? cap * 2 : 8192;
            p = realloc(buf, cap + 1);
            if (!p)
                abort();
            buf = p;
        }
        got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int temp_fd(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    int fd;

    snprintf(path, sizeof(path), "%s/lapict-check-XXXXXX",
             dir && *dir ? dir : "/tmp");
    fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp(%s): %s", path, strerror(errno));
    unlink(path);
    return fd;
}

/* How to run lapict-replay. */
struct run_how {
    const char *args[3];    /* its arguments, up to the first NULL */
    const char *stdin_path; /* its standard input */
    const char *out_path;   /* its standard output; NULL: captured */
    unsigned long as_mib;   /* address-space limit; 0: none */
    unsigned long cpu_s;    /* CPU time limit (SIGXCPU); 0: none */
};

static double cpu_children(void)
{
    struct rusage ru;

    ck_assert_int_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void run_replay_how(const struct run_how *how, struct run_result *r)
{
    int out_fd = how->out_path ? -1 : temp_fd(), err_fd = temp_fd();
    double cpu0 = cpu_children();
    pid_t pid;

    fflush(NULL);
    pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int in = open(how->stdin_path, O_RDONLY);
        if (how->out_path)
            out_fd = open(how->out_path, O_WRONLY);
        if (in < 0 || out_fd < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 ||
            dup2(err_fd, 2) < 0)
            _exit(127);
        if (how->as_mib) {
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)how->as_mib << 20;
            if (setrlimit(RLIMIT_AS, &rl) < 0)
                _exit(127);
        }
        if (how->cpu_s) {
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)how->cpu_s;
            if (setrlimit(RLIMIT_CPU, &rl) < 0)
                _exit(127);
        }
        {
            char *argv[5] = {LAPICT_REPLAY_BIN};
            for (int i = 0; i < 3 && how->args[i]; i++)
                argv[i + 1] = (char *)how->args[i];
            execv(LAPICT_REPLAY_BIN, argv);
        }
        dprintf(2, "exec %s: %s\n", LAPICT_REPLAY_BIN, strerror(errno));
        _exit(127);
    }
    while (waitpid(pid, &r->status, 0) < 0) {
        ck_assert_msg(errno == EINTR, "waitpid: %s", strerror(errno));
    }
    r->cpu_s = cpu_children() - cpu0;
    if (how->out_path) {
        r->out = strdup("");
        r->out_len = 0;
        ck_assert(r->out != NULL);
    } else {
        r->out = slurp_fd(out_fd, &r->out_len);
        close(out_fd);
    }
    r->err = slurp_fd(err_fd, &r->err_len);
    close(err_fd);
}

/*
 * Run lapict-replay with @arg as its FILE argument (NULL: none) and
 * @stdin_path as its standard input.
 */
static void run_replay(const char *arg, const char *stdin_path,
                       struct run_result *r)
{
    struct run_how how = {{arg, NULL, NULL}, stdin_path, NULL, 0, 0};

    run_replay_how(&how, r);
}

/* A temporary file holding @text, its path in @path (PATH_MAX bytes). */
static void temp_file(char *path, size_t size, const char *text, size_t len)
{
    const char *dir = getenv("TMPDIR");
    int fd;

    snprintf(path, size, "%s/lapict-check-XXXXXX", dir && *dir ? dir : "/tmp");
    fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp(%s): %s", path, strerror(errno));
    ck_assert_msg(write(fd, text, len) == (ssize_t)len, "write %s: %s", path,
                  strerror(errno));
    close(fd);
}

static void free_result(struct run_result *r)
{
    free(r->out);
    free(r->err);
}

static int exit_code(const struct run_result *r)
{
    if (WIFEXITED(r->status))
        return WEXITSTATUS(r->status);
    return 1000 + (WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0);
}

static bool same_bytes(const char *a, size_t la, const char *b, size_t lb)
{
    return la == lb && memcmp(a, b, la) == 0;
}

/* --- golden traces -------------------------------------------------------- */

START_TEST(test_golden_trace)
{
    const char *name = golden.names[_i];
    char *trace = path_join(LAPICT_TRACES_DIR, name, ".trace");
    char *exp_path = path_join(LAPICT_TRACES_DIR, name, ".expected");
    size_t exp_len;
    char *expected = slurp(exp_path, &exp_len);
    struct run_result r;

    ck_assert_msg(expected != NULL, "%s: cannot read %s: %s", name, exp_path,
                  strerror(errno));
    run_replay(trace, "/dev/null", &r);
    ck_assert_msg(same_bytes(r.out, r.out_len, expected, exp_len),
                  "%s: stdout differs\n--- expected (%s)\n%s--- got\n%s"
                  "--- stderr\n%s",
                  name, exp_path, expected, r.out, r.err);
    ck_assert_msg(r.err_len == 0, "%s: unexpected stderr:\n%s", name, r.err);
    ck_assert_msg(exit_code(&r) == 0, "%s: exit status %d, expected 0", name,
                  exit_code(&r));
    free_result(&r);
    free(expected);
    free(exp_path);
    free(trace);
}
END_TEST

/* The same trace fed on standard input (no FILE) prints the same. */
START_TEST(test_golden_trace_stdin)
{
    const char *name = golden.names[_i];
    char *trace = path_join(LAPICT_TRACES_DIR, name, ".trace");
    struct run_result by_file, by_stdin;

    run_replay(trace, "/dev/null", &by_file);
    run_replay(NULL, trace, &by_stdin);
    ck_assert_msg(same_bytes(by_file.out, by_file.out_len, by_stdin.out,
                             by_stdin.out_len),
                  "%s: stdin output differs from FILE output\n--- FILE\n%s"
                  "--- stdin\n%s--- stdin stderr\n%s",
                  name, by_file.out, by_stdin.out, by_stdin.err);
    ck_assert_msg(same_bytes(by_file.err, by_file.err_len, by_stdin.err,
                             by_stdin.err_len),
                  "%s: stderr differs\n--- FILE\n%s--- stdin\n%s", name,
                  by_file.err, by_stdin.err);
    ck_assert_int_eq(exit_code(&by_file), exit_code(&by_stdin));
    free_result(&by_file);
    free_result(&by_stdin);
    free(trace);
}
END_TEST

/* Every trace carries the SPDX line and a derivation before its commands. */
START_TEST(test_golden_trace_header)
{
    const char *name = golden.names[_i];
    char *trace = path_join(LAPICT_TRACES_DIR, name, ".trace");
    size_t len;
    char *text = slurp(trace, &len);
    const char *spdx = "# SPDX-License-Identifier: MIT\n";

    ck_assert_msg(text != NULL, "%s: cannot read %s", name, trace);
    ck_assert_msg(strncmp(text, spdx, strlen(spdx)) == 0,
                  "%s: first line must be '%.*s'", name, (int)strlen(spdx) - 1,
                  spdx);
    ck_assert_msg(strncmp(text + strlen(spdx), "# ", 2) == 0,
                  "%s: the derivation comment must follow the SPDX line", name);
    free(text);
    free(trace);
}
END_TEST

START_TEST(test_enough_traces)
{
    ck_assert_msg(golden.n >= MIN_GOLDEN,
                  "only %d golden traces found in %s (expected >= %d)",
                  golden.n, LAPICT_TRACES_DIR, MIN_GOLDEN);
    ck_assert_msg(bad.n >= MIN_BAD,
                  "only %d bad-input traces found in %s (expected >= %d)",
                  bad.n, BAD_DIR, MIN_BAD);
}
END_TEST

/* --- bad input ------------------------------------------------------------ */

START_TEST(test_bad_trace)
{
    const char *name = bad.names[_i];
    char *trace = path_join(BAD_DIR, name, ".trace");
    char *err_path = path_join(BAD_DIR, name, ".err");
    char *exp_path = path_join(BAD_DIR, name, ".expected");
    size_t prefix_len, exp_len;
    char *prefix = slurp(err_path, &prefix_len);
    char *expected = slurp(exp_path, &exp_len);
    struct run_result r;

    ck_assert_msg(prefix != NULL, "%s: cannot read %s", name, err_path);
    ck_assert_msg(expected != NULL, "%s: cannot read %s", name, exp_path);
    /* The .err file may end with a newline; the prefix is what precedes. */
    while (prefix_len > 0 &&
           (prefix[prefix_len - 1] == '\n' || prefix[prefix_len - 1] == '\r'))
        prefix[--prefix_len] = '\0';
    ck_assert_msg(prefix_len > 0, "%s: empty %s", name, err_path);

    run_replay(trace, "/dev/null", &r);
    ck_assert_msg(exit_code(&r) == 2,
                  "%s: exit status %d, expected 2\n--- stderr\n%s", name,
                  exit_code(&r), r.err);
    ck_assert_msg(r.err_len >= prefix_len &&
                      memcmp(r.err, prefix, prefix_len) == 0,
                  "%s: stderr does not start with '%s'\n--- stderr\n%s", name,
                  prefix, r.err);
    ck_assert_msg(r.err_len > prefix_len + 1 && r.err[r.err_len - 1] == '\n',
                  "%s: stderr must carry a message and end with a newline: "
                  "'%s'",
                  name, r.err);
    ck_assert_msg(same_bytes(r.out, r.out_len, expected, exp_len),
                  "%s: stdout differs\n--- expected (%s)\n%s--- got\n%s", name,
                  exp_path, expected, r.out);
    free_result(&r);
    free(expected);
    free(prefix);
    free(exp_path);
    free(err_path);
    free(trace);
}
END_TEST

START_TEST(test_missing_file)
{
    struct run_result r;
    const char *missing = LAPICT_TRACES_DIR "/no-such-trace.trace";

    ck_assert_msg(access(missing, F_OK) != 0, "%s exists", missing);
    run_replay(missing, "/dev/null", &r);
    ck_assert_msg(exit_code(&r) != 0, "missing FILE: exit status 0");
    ck_assert_msg(exit_code(&r) < 1000, "missing FILE: killed by signal %d",
                  exit_code(&r) - 1000);
    ck_assert_msg(r.err_len > 0, "missing FILE: nothing on stderr");
    ck_assert_msg(strncmp(r.err, "lapict-replay", strlen("lapict-replay")) == 0,
                  "missing FILE: stderr should name the tool: '%s'", r.err);
    ck_assert_msg(r.out_len == 0, "missing FILE: unexpected stdout '%s'",
                  r.out);
    free_result(&r);
}
END_TEST

/* An empty trace is valid: nothing happens, nothing is printed. */
START_TEST(test_empty_input)
{
    struct run_result r;

    run_replay(NULL, "/dev/null", &r);
    ck_assert_msg(exit_code(&r) == 0, "empty input: exit %d, stderr '%s'",
                  exit_code(&r), r.err);
    ck_assert_msg(r.out_len == 0, "empty input printed '%s'", r.out);
    ck_assert_msg(r.err_len == 0, "empty input: stderr '%s'", r.err);
    free_result(&r);
}
END_TEST

/* --- limits: what the replay cannot do is an error, never a short run ---- */

/*
 * Rule: a trace runs to its end however many host timer callbacks it
 * takes, up to --max-events, the bound included. A periodic timer of 1 ns
 * run to 10.5 ms needs 10.5 million, the bound given; the output is
 * counted through a pipe (its 200 MB are not kept).
 */
START_TEST(test_long_trace_runs_every_event)
{
    static const char trace[] = "config min_period_ns=0\n"
                                "write tdcr 0xb\n"
                                "write lvtt 0x200ef\n"
                                "write tmict 1\n"
                                "at 10500000\n";
    const unsigned long want = OLD_EVENT_CAP + OLD_EVENT_CAP / 20;
    char path[4096], last[64] = "", cur[64], buf[65536], want_last[64];
    char bound[64];
    unsigned long lines = 0;
    size_t cur_len = 0;
    int pipefd[2], err_fd = temp_fd(), status;
    ssize_t got;
    pid_t pid;
    size_t err_len;
    char *err;

    temp_file(path, sizeof(path), trace, sizeof(trace) - 1);
    snprintf(bound, sizeof(bound), "--max-events=%lu", want);
    ck_assert_int_eq(pipe(pipefd), 0);
    fflush(NULL);
    pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (dup2(pipefd[1], 1) < 0 || dup2(err_fd, 2) < 0)
            _exit(127);
        close(pipefd[0]);
        execl(LAPICT_REPLAY_BIN, LAPICT_REPLAY_BIN, bound, path, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    while ((got = read(pipefd[0], buf, sizeof(buf))) != 0) {
        if (got < 0) {
            ck_assert_msg(errno == EINTR, "read: %s", strerror(errno));
            continue;
        }
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] == '\n') {
                cur[cur_len] = '\0';
                memcpy(last, cur, cur_len + 1);
                cur_len = 0;
                lines++;
            } else if (cur_len + 1 < sizeof(cur)) {
                cur[cur_len++] = buf[i];
            }
        }
    }
    close(pipefd[0]);
    while (waitpid(pid, &status, 0) < 0)
        ck_assert_msg(errno == EINTR, "waitpid: %s", strerror(errno));
    err = slurp_fd(err_fd, &err_len);
    close(err_fd);
    unlink(path);
    snprintf(want_last, sizeof(want_last), "%lu inject 239", want);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "exit status %d\n--- stderr\n%s", status, err);
    ck_assert_msg(lines == want && !strcmp(last, want_last),
                  "%lu lines, the last '%s'; expected %lu, the last '%s'",
                  lines, last, want, want_last);
    free(err);
}
END_TEST

/* Rule: an argument that starts with '-' and is not an option is a usage
 * error, never a file name; "--" ends the options. */
START_TEST(test_unknown_option_is_usage_error)
{
    struct run_how how = {{"--", NULL, NULL}, "/dev/null", NULL, 0, 0};
    struct run_result r;
    char path[4096];

    run_replay("--bogus", "/dev/null", &r);
    ck_assert_msg(exit_code(&r) == 2, "--bogus: exit %d, stderr '%s'",
                  exit_code(&r), r.err);
    ck_assert_msg(strstr(r.err, "unknown option '--bogus'") &&
                      strstr(r.err, "usage: lapict-replay"),
                  "--bogus: stderr should name the option and give the "
                  "usage: '%s'",
                  r.err);
    ck_assert_msg(r.out_len == 0, "--bogus printed '%s'", r.out);
    free_result(&r);

    /* After "--", an argument is a file, whatever its first byte. */
    temp_file(path, sizeof(path), "read tdcr\n", 10);
    how.args[1] = path;
    run_replay_how(&how, &r);
    unlink(path);
    ck_assert_msg(exit_code(&r) == 0 && !strcmp(r.out, "0 read tdcr 0\n"),
                  "-- FILE: exit %d, stdout '%s', stderr '%s'", exit_code(&r),
                  r.out, r.err);
    free_result(&r);
}
END_TEST

/* Rule: a line of MAX_LINE bytes runs; one byte more is an error that says
 * so, whether or not a newline ever comes. */
START_TEST(test_line_length_limit)
{
    static char text[MAX_LINE + 64];
    struct run_result r;
    char path[4096];
    size_t n;

    /* A comment line of exactly MAX_LINE bytes, then a read. */
    text[0] = '#';
    memset(text + 1, 'x', MAX_LINE - 1);
    n = MAX_LINE;
    memcpy(text + n, "\nread tdcr\n", 11);
    temp_file(path, sizeof(path), text, n + 11);
    run_replay(path, "/dev/null", &r);
    unlink(path);
    ck_assert_msg(exit_code(&r) == 0 && !strcmp(r.out, "0 read tdcr 0\n"),
                  "%d-byte line: exit %d, stdout '%s', stderr '%s'", MAX_LINE,
                  exit_code(&r), r.out, r.err);
    free_result(&r);

    /* One byte more, with and without a newline after it. */
    for (int nl = 0; nl < 2; nl++) {
        text[MAX_LINE] = 'x';
        text[MAX_LINE + 1] = '\n';
        temp_file(path, sizeof(path), text, MAX_LINE + 1 + (size_t)nl);
        run_replay(path, "/dev/null", &r);
        unlink(path);
        ck_assert_msg(exit_code(&r) == 2 &&
                          strstr(r.err, "lapict-replay: 1: line longer "
                                        "than 4096 bytes"),
                      "%d-byte line: exit %d, stderr '%s'", MAX_LINE + 1,
                      exit_code(&r), r.err);
        free_result(&r);
    }
}
END_TEST

/*
 * Rule: an input with no newline is read a line's worth at a time: the
 * endless /dev/zero stops at the limit, an error, within 512 MiB of
 * address space (where a reader that grows its buffer runs out of memory).
 */
START_TEST(test_endless_line_is_an_error)
{
    struct run_how how = {
        {"/dev/zero", NULL, NULL}, "/dev/null", NULL, UNDER_ASAN ? 0 : 512, 0};
    struct run_result r;

    run_replay_how(&how, &r);
    ck_assert_msg(exit_code(&r) == 2 && strstr(r.err, "lapict-replay: 1: ") &&
                      (strstr(r.err, "longer than") || strstr(r.err, "NUL")),
                  "/dev/zero: exit %d, stderr '%s'", exit_code(&r), r.err);
    ck_assert_msg(r.out_len == 0, "/dev/zero printed '%s'", r.out);
    free_result(&r);
}
END_TEST

/* Rule: output that cannot be written is an error (exit 1), not a run that
 * ended well. */
START_TEST(test_write_error_is_an_error)
{
    char trace[4096];
    struct run_how how = {{NULL, NULL, NULL}, "/dev/null", "/dev/full", 0, 0};
    struct run_result r;

    ck_assert_msg(access("/dev/full", W_OK) == 0, "no /dev/full");
    snprintf(trace, sizeof(trace), "%s/02-periodic-example.trace",
             LAPICT_TRACES_DIR);
    how.args[0] = trace;
    run_replay_how(&how, &r);
    ck_assert_msg(exit_code(&r) == 1 && strstr(r.err, "lapict-replay: ") &&
                      strstr(r.err, "standard output"),
                  "stdout on /dev/full: exit %d, stderr '%s'", exit_code(&r),
                  r.err);
    free_result(&r);
}
END_TEST

/*
 * Rule: running out of memory is an error (exit 1) that names the line.
 * Deliveries are kept until the clock passes them: an entry latency of
 * 10^12 ns keeps every one of a 1 ns periodic timer's (10^8 of them, with
 * a --max-events that lets them run).
 */
START_TEST(test_out_of_memory_is_an_error)
{
    static const char trace[] = "config min_period_ns=0 "
                                "entry_latency_ns=1000000000000\n"
                                "write tdcr 0xb\n"
                                "write lvtt 0x200ef\n"
                                "write tmict 1\n"
                                "at 100000000\n";
    char path[4096];
    struct run_how how = {{"--max-events=1000000000", NULL, NULL},
                          "/dev/null",
                          "/dev/null",
                          128,
                          0};
    struct run_result r;

    if (UNDER_ASAN)
        return; /* no address-space limit under ASan */
    temp_file(path, sizeof(path), trace, sizeof(trace) - 1);
    how.args[1] = path;
    run_replay_how(&how, &r);
    unlink(path);
    ck_assert_msg(exit_code(&r) == 1 &&
                      strstr(r.err, "lapict-replay: 5: out of memory"),
                  "exit %d, stderr '%s'", exit_code(&r), r.err);
    free_result(&r);
}
END_TEST

/* --- the bound on work: --max-events -------------------------------------- */

/* A periodic timer of 1 ns (no minimum period), masked: one host timer
 * event per ns of the trace, and nothing printed. */
#define MASKED_1NS                                                             \
    "config min_period_ns=0\n"                                                 \
    "write tdcr 0xb\n"                                                         \
    "write lvtt 0x300ef\n"                                                     \
    "write tmict 1\n"

/*
 * Run the trace @text with the option @opt before it (NULL: none), within
 * @cpu_s seconds of CPU (0: no limit).
 */
static void run_text(const char *opt, const char *text, unsigned long cpu_s,
                     struct run_result *r)
{
    struct run_how how = {{opt, NULL, NULL}, "/dev/null", NULL, 0, cpu_s};
    char path[4096];

    temp_file(path, sizeof(path), text, strlen(text));
    how.args[opt ? 1 : 0] = path;
    run_replay_how(&how, r);
    unlink(path);
}

/*
 * Rule: a trace that asks for more host timer events than --max-events
 * allows is bad input (exit 2) whose message names the bound and how to
 * raise it, and it fails before the work: these 88 bytes ask for 10^12
 * interrupts, hours of work, and the run takes well under a second of CPU
 * (it is stopped at 10 s).
 */
START_TEST(test_event_bound_fails_before_the_work)
{
    static const char trace[] = "config min_period_ns=0\n"
                                "write tdcr 0xb\n"
                                "write lvtt 0x200ef\n"
                                "write tmict 1\n"
                                "at 1000000000000\n";
    char want[96];
    struct run_result r;

    ck_assert_uint_eq(sizeof(trace) - 1, 88);
    run_text(NULL, trace, 10, &r);
    snprintf(want, sizeof(want), "more than %u host timer events",
             MAX_EVENTS_DEFAULT);
    ck_assert_msg(exit_code(&r) == 2 &&
                      !strncmp(r.err, "lapict-replay: 5: ", 18) &&
                      strstr(r.err, want) && strstr(r.err, "--max-events=N"),
                  "exit %d, stderr '%s'", exit_code(&r), r.err);
    ck_assert_msg(r.out_len == 0, "stdout '%s'", r.out);
    ck_assert_msg(r.cpu_s < 1.0,
                  "%.3f s of CPU: the bound was not checked before the work",
                  r.cpu_s);
    free_result(&r);
}
END_TEST

/*
 * Rule: without --max-events the bound is MAX_EVENTS_DEFAULT host timer
 * events (lapict-replay(1)): a trace that needs exactly that many runs to
 * its end, one that needs one more fails on the line that needs it.
 */
START_TEST(test_event_bound_default)
{
    char trace[256];
    struct run_result r;

    snprintf(trace, sizeof(trace), MASKED_1NS "at %u\n", MAX_EVENTS_DEFAULT);
    run_text(NULL, trace, 0, &r);
    ck_assert_msg(exit_code(&r) == 0 && r.out_len == 0 && r.err_len == 0,
                  "%u events: exit %d, stderr '%s'", MAX_EVENTS_DEFAULT,
                  exit_code(&r), r.err);
    free_result(&r);

    snprintf(trace, sizeof(trace), MASKED_1NS "at %u\n",
             MAX_EVENTS_DEFAULT + 1);
    run_text(NULL, trace, 0, &r);
    ck_assert_msg(exit_code(&r) == 2 &&
                      !strncmp(r.err, "lapict-replay: 5: ", 18) &&
                      strstr(r.err, "--max-events"),
                  "%u events: exit %d, stderr '%s'", MAX_EVENTS_DEFAULT + 1,
                  exit_code(&r), r.err);
    free_result(&r);
}
END_TEST

/*
 * Rule: the bound is exact, and a line that goes past it shows nothing, as
 * any bad line: this trace takes 2 events to its read, then 1000 more on
 * its last line. With --max-events=1002 it runs to its end; with 1001 the
 * last line fails and only what the lines before it printed is printed.
 */
START_TEST(test_event_bound_is_exact)
{
    static const char trace[] = "config min_period_ns=0\n"
                                "write tdcr 0xb\n"
                                "write lvtt 0x200ef\n"
                                "write tmict 1000\n"
                                "at 2500\n"
                                "read tmcct\n"
                                "write tmict 1\n"
                                "at 3500\n";
    static const char before[] = "1000 inject 239\n"
                                 "2000 inject 239\n"
                                 "2500 read tmcct 500\n";
    struct run_result r;
    unsigned long lines = 0;

    run_text("--max-events=1002", trace, 0, &r);
    for (size_t i = 0; i < r.out_len; i++)
        lines += r.out[i] == '\n';
    ck_assert_msg(exit_code(&r) == 0 && lines == 1003 &&
                      !strncmp(r.out, before, strlen(before)) &&
                      strstr(r.out, "\n3500 inject 239\n"),
                  "1002: exit %d, %lu lines, stderr '%s'", exit_code(&r), lines,
                  r.err);
    free_result(&r);

    run_text("--max-events=1001", trace, 0, &r);
    ck_assert_msg(exit_code(&r) == 2 &&
                      strstr(r.err, "lapict-replay: 8: the trace needs more "
                                    "than 1001 host timer events"),
                  "1001: exit %d, stderr '%s'", exit_code(&r), r.err);
    ck_assert_msg(!strcmp(r.out, before), "1001: stdout '%s'", r.out);
    free_result(&r);
}
END_TEST

/* A --max-events value and what its message must say. */
struct bad_bound {
    const char *arg, *why;
};

static const struct bad_bound bad_bounds[] = {
    {"--max-events=0", "'0' is out of range (1 to 18446744073709551615)"},
    {"--max-events=-1", "'-1' is not a number"},
    {"--max-events=+5", "'+5' is not a number"},
    {"--max-events=18446744073709551616", "is out of range"},
    {"--max-events=99999999999999999999999", "is out of range"},
    {"--max-events=12abc", "'12abc' is not a number"},
    {"--max-events=", "'' is not a number"},
    {"--max-events= 5", "' 5' is not a number"},
    {"--max-events=0x", "'0x' is not a number"},
    {"--max-events", "needs a value"},
};

/*
 * Rule: --max-events=N is an untrusted number: anything but 1 to 2^64 - 1,
 * decimal or 0x hexadecimal, is a usage error (exit 2) whose message names
 * the option, and the trace does not run.
 */
START_TEST(test_max_events_bad_value)
{
    const struct bad_bound *b = &bad_bounds[_i];
    struct run_result r;

    run_text(b->arg, "read tdcr\n", 0, &r);
    ck_assert_msg(exit_code(&r) == 2 &&
                      !strncmp(r.err, "lapict-replay: --max-events",
                               strlen("lapict-replay: --max-events")) &&
                      strstr(r.err, b->why),
                  "%s: exit %d, stderr '%s'", b->arg, exit_code(&r), r.err);
    ck_assert_msg(r.out_len == 0, "%s: stdout '%s'", b->arg, r.out);
    free_result(&r);
}
END_TEST

/* Rule: both ends of the range, in decimal or hexadecimal, are accepted. */
START_TEST(test_max_events_good_value)
{
    static const char *const good[] = {
        "--max-events=1",
        "--max-events=18446744073709551615",
        "--max-events=0xffffffffffffffff",
    };
    struct run_result r;

    run_text(good[_i], "read tdcr\n", 0, &r);
    ck_assert_msg(exit_code(&r) == 0 && !strcmp(r.out, "0 read tdcr 0\n"),
                  "%s: exit %d, stdout '%s', stderr '%s'", good[_i],
                  exit_code(&r), r.out, r.err);
    free_result(&r);
}
END_TEST

/* --- the command line ------------------------------------------------------
 */

/* Rule: --version prints the tool and the lapict version on stdout, and
 * nothing else, with exit 0. */
START_TEST(test_version)
{
    struct run_result r;

    run_replay("--version", "/dev/null", &r);
    ck_assert_msg(
        exit_code(&r) == 0 &&
            !strcmp(r.out, "lapict-replay " LAPICT_VERSION_STRING "\n") &&
            r.err_len == 0,
        "exit %d, stdout '%s', stderr '%s'", exit_code(&r), r.out, r.err);
    free_result(&r);
}
END_TEST

/*
 * Rule: a second FILE is a usage error (exit 2) that names it, with the
 * usage on stderr and nothing on stdout; an option may come after FILE.
 */
START_TEST(test_stray_argument)
{
    struct run_how how = {{NULL, "stray", NULL}, "/dev/null", NULL, 0, 0};
    struct run_result stray, after;
    char path[4096];

    temp_file(path, sizeof(path), "read tdcr\n", 10);
    how.args[0] = path;
    run_replay_how(&how, &stray);
    how.args[1] = "--max-events=5";
    run_replay_how(&how, &after);
    unlink(path);
    ck_assert_msg(exit_code(&stray) == 2 &&
                      strstr(stray.err, "unexpected argument 'stray'") &&
                      strstr(stray.err, "usage: lapict-replay"),
                  "FILE stray: exit %d, stderr '%s'", exit_code(&stray),
                  stray.err);
    ck_assert_msg(stray.out_len == 0, "FILE stray: stdout '%s'", stray.out);
    ck_assert_msg(exit_code(&after) == 0 &&
                      !strcmp(after.out, "0 read tdcr 0\n"),
                  "FILE --max-events=5: exit %d, stdout '%s', stderr '%s'",
                  exit_code(&after), after.out, after.err);
    free_result(&stray);
    free_result(&after);
}
END_TEST

/* --- suite -----------------------------------------------------------------
 */

static Suite *replay_suite(void)
{
    Suite *s = suite_create("lapict-replay");
    TCase *tc;

    list_traces(LAPICT_TRACES_DIR, &golden);
    list_traces(BAD_DIR, &bad);

    tc = tcase_create("inventory");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_test(tc, test_enough_traces);
    tcase_add_loop_test(tc, test_golden_trace_header, 0, golden.n);
    suite_add_tcase(s, tc);

    tc = tcase_create("golden");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_loop_test(tc, test_golden_trace, 0, golden.n);
    suite_add_tcase(s, tc);

    tc = tcase_create("stdin");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_loop_test(tc, test_golden_trace_stdin, 0, golden.n);
    tcase_add_test(tc, test_empty_input);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_loop_test(tc, test_bad_trace, 0, bad.n);
    tcase_add_test(tc, test_missing_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_test(tc, test_long_trace_runs_every_event);
    tcase_add_test(tc, test_unknown_option_is_usage_error);
    tcase_add_test(tc, test_line_length_limit);
    tcase_add_test(tc, test_endless_line_is_an_error);
    tcase_add_test(tc, test_write_error_is_an_error);
    tcase_add_test(tc, test_out_of_memory_is_an_error);
    suite_add_tcase(s, tc);

    tc = tcase_create("max_events");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_test(tc, test_event_bound_fails_before_the_work);
    tcase_add_test(tc, test_event_bound_default);
    tcase_add_test(tc, test_event_bound_is_exact);
    tcase_add_loop_test(tc, test_max_events_bad_value, 0,
                        (int)(sizeof(bad_bounds) / sizeof(bad_bounds[0])));
    tcase_add_loop_test(tc, test_max_events_good_value, 0, 3);
    suite_add_tcase(s, tc);

    tc = tcase_create("command_line");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_stray_argument);
    suite_add_tcase(s, tc);

    return s;
}

static void free_list(struct trace_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = 0;
}

int main(void)
{
    int rc = lt_check_run(replay_suite());

    free_list(&golden);
    free_list(&bad);
    return rc;
}
