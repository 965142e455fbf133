# SPDX-License-Identifier: MIT
# Smoke run of lapict-bench for the test command: tiny iteration counts,
# checks only the exit status and that every part printed its RESULT lines
# (no timing is asserted: CI machines are noisy).
#
#   cmake -DBENCH=path/to/lapict-bench -P check_smoke.cmake
cmake_minimum_required(VERSION 3.16)
if(NOT BENCH)
    message(FATAL_ERROR "check_smoke.cmake: -DBENCH=... is required")
endif()

execute_process(COMMAND ${BENCH} --smoke
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "lapict-bench --smoke failed (${rc}):\n${err}")
endif()

# Each part, and how many RESULT lines it must print at least.
foreach(part_min hotpath:9 tuning:18 memory:6)
    string(REPLACE ":" ";" pm ${part_min})
    list(GET pm 0 part)
    list(GET pm 1 min)
    string(REGEX MATCHALL "RESULT test=${part} [^\n]*" lines "${out}")
    list(LENGTH lines n)
    if(n LESS min)
        message(FATAL_ERROR "lapict-bench --smoke: ${n} 'RESULT test=${part}' "
                            "lines, expected at least ${min}")
    endif()
endforeach()

execute_process(COMMAND ${BENCH} --callgrind=list
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc STREQUAL "0" OR NOT out MATCHES "tmcct_read lapict_tmcct_read")
    message(FATAL_ERROR "lapict-bench --callgrind=list failed (${rc})")
endif()

# The multiplexer and its baselines (when mux.c is built): one line per
# size with every field; the bench itself fails when a baseline pops keys
# out of order.
if(MUX)
    execute_process(COMMAND ${BENCH} --mux --smoke
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    message("${out}")
    if(NOT rc STREQUAL "0")
        message(FATAL_ERROR "lapict-bench --mux --smoke failed (${rc}):\n${err}")
    endif()
    set(num "[0-9]+(\\.[0-9]+)?")
    string(REGEX MATCHALL
           "RESULT test=mux n=[0-9]+ ns_per_op=${num} binheap_ns_per_op=${num} rbtree_ns_per_op=${num} sorted_ns_per_op=${num} speedup_vs_best=${num}"
           lines "${out}")
    list(LENGTH lines n)
    if(NOT n EQUAL 3)
        message(FATAL_ERROR "lapict-bench --mux --smoke: ${n} complete "
                            "'RESULT test=mux' lines, expected 3")
    endif()
endif()
message(STATUS "lapict-bench --smoke: exit 0, RESULT lines present")
