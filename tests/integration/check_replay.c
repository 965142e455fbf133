/* SPDX-License-Identifier: MIT */
/*
 * Integration suite for lapict-replay (shared/spec/REPLAY.md): runs every
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
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef LAPICT_REPLAY_BIN
#error "LAPICT_REPLAY_BIN must name the lapict-replay executable"
#endif
#ifndef LAPICT_TRACES_DIR
#error "LAPICT_TRACES_DIR must name the tests/traces directory"
#endif

#define BAD_DIR LAPICT_TRACES_DIR "/bad"
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
    int status; /* raw wait status */
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

/*
 * Run lapict-replay with @arg as its FILE argument (NULL: none) and
 * @stdin_path as its standard input.
 */
static void run_replay(const char *arg, const char *stdin_path,
                       struct run_result *r)
{
    int out_fd = temp_fd(), err_fd = temp_fd();
    pid_t pid;

    fflush(NULL);
    pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int in = open(stdin_path, O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 ||
            dup2(err_fd, 2) < 0)
            _exit(127);
        if (arg)
            execl(LAPICT_REPLAY_BIN, LAPICT_REPLAY_BIN, arg, (char *)NULL);
        else
            execl(LAPICT_REPLAY_BIN, LAPICT_REPLAY_BIN, (char *)NULL);
        dprintf(2, "exec %s: %s\n", LAPICT_REPLAY_BIN, strerror(errno));
        _exit(127);
    }
    while (waitpid(pid, &r->status, 0) < 0) {
        ck_assert_msg(errno == EINTR, "waitpid: %s", strerror(errno));
    }
    r->out = slurp_fd(out_fd, &r->out_len);
    r->err = slurp_fd(err_fd, &r->err_len);
    close(out_fd);
    close(err_fd);
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
    ck_assert_msg(exit_code(&r) == 0, "%s: exit status %d, expected 0",
                  name, exit_code(&r));
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
                  "%s: first line must be '%.*s'", name,
                  (int)strlen(spdx) - 1, spdx);
    ck_assert_msg(strncmp(text + strlen(spdx), "# ", 2) == 0,
                  "%s: the derivation comment must follow the SPDX line",
                  name);
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
    while (prefix_len > 0 && (prefix[prefix_len - 1] == '\n' ||
                              prefix[prefix_len - 1] == '\r'))
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
                  "%s: stdout differs\n--- expected (%s)\n%s--- got\n%s",
                  name, exp_path, expected, r.out);
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
    ck_assert_msg(strncmp(r.err, "lapict-replay", strlen("lapict-replay")) ==
                      0,
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

/* --- suite ----------------------------------------------------------------- */

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
    SRunner *sr = srunner_create(replay_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    free_list(&golden);
    free_list(&bad);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
