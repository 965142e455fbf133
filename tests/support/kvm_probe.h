/* SPDX-License-Identifier: MIT */
/*
 * Shared by the integration tests that boot guests with lapict-vmm: whether
 * this machine can run a VM at all, and running a command for its output.
 */
#ifndef LAPICT_TEST_KVM_PROBE_H
#define LAPICT_TEST_KVM_PROBE_H

/*
 * Exit status of a test that skips: tests/CMakeLists.txt gives it to ctest
 * as SKIP_RETURN_CODE, so a skip is reported as "Skipped", never "Passed".
 */
#define LT_SKIP_RC 77

/*
 * NULL when /dev/kvm opens and KVM_CREATE_VM works, else a static string
 * saying why not (the tests then skip with that message and LT_SKIP_RC).
 * LAPICT_TEST_NO_KVM=1 in the environment makes KVM unusable on purpose,
 * to check that the tests report skips.
 */
const char *lt_kvm_unusable(void);

/*
 * The guests' timing checks need the vCPU to run for milliseconds at a
 * stretch (a one-shot counting to half, two periodic ticks), and the checks
 * made inconclusive by a host stall are run again or set aside, never
 * counted as passed. Beside a busy loop per core at equal priority the vCPU
 * thread is off the CPU 16 ms at a time, and most iterations prove nothing
 * (8 % of check_changemode's were conclusive). So the tests that boot
 * guests raise their own priority, which lapict-vmm inherits, to
 * LT_GUEST_NICE: it changes how often a check can conclude, never what a
 * check calls a defect. Without the privilege for it (not root) they run
 * as they are and say so on stdout.
 */
#define LT_GUEST_NICE (-10)

/*
 * The bound on one lapict-vmm run (its --timeout, seconds), and on a Check
 * case that makes one (LT_GUEST_CASE_S). It only turns a hang into a
 * failure: a run that takes 12 s on an idle host took over 60 s beside
 * the stress script's hogs and two parallel builds (load average 13).
 */
#define LT_GUEST_TIMEOUT_S 300
#define LT_GUEST_CASE_S (LT_GUEST_TIMEOUT_S + 30)
void lt_guest_priority(const char *test);

/*
 * Runs @cmd through the shell with stderr joined to stdout. Returns its
 * output (malloc'ed, NUL-terminated, never NULL) and in *status the exit
 * code, or -1 if it did not exit normally. Aborts the test on failure to
 * start or allocate.
 */
char *lt_run_capture(const char *cmd, int *status);

#endif
