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
 * Runs @cmd through the shell with stderr joined to stdout. Returns its
 * output (malloc'ed, NUL-terminated, never NULL) and in *status the exit
 * code, or -1 if it did not exit normally. Aborts the test on failure to
 * start or allocate.
 */
char *lt_run_capture(const char *cmd, int *status);

#endif
