# SPDX-License-Identifier: MIT
# Included by the cmake -P scripts that drive a build as a test
# (test_consumer.cmake, test_installed_examples.cmake).
#
# run_step(TAG WHAT COMMAND...): runs COMMAND; on failure stops with its
# exit status, the command line and its output, each line prefixed with
# TAG; on success says so and leaves its standard output in run_output.
function(run_step tag what)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc STREQUAL "0")
        string(REPLACE ";" " " cmd "${ARGN}")
        message(FATAL_ERROR "${tag}: ${what} failed (${rc})\n$ ${cmd}\n"
                            "${out}${err}")
    endif()
    message(STATUS "${tag}: ${what}: ok")
    set(run_output "${out}" PARENT_SCOPE)
endfunction()
