# SPDX-License-Identifier: MIT
# Run a command and compare its standard output with a golden file.
#
#   cmake -DCOMMAND=prog [-DARGS="a;b"] -DEXPECTED=file -P compare_output.cmake
#
# Fails if the command exits non-zero or if its output differs; the message
# shows the differing lines as "-expected" / "+actual", line by line.
cmake_minimum_required(VERSION 3.16)
foreach(var COMMAND EXPECTED)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "compare_output.cmake: -D${var}=... is required")
    endif()
endforeach()

execute_process(COMMAND ${COMMAND} ${ARGS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE actual ERROR_VARIABLE err)
if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${COMMAND} ${ARGS}: exit status ${rc}\n"
                        "stderr:\n${err}\nstdout:\n${actual}")
endif()
file(READ "${EXPECTED}" expected)
if(actual STREQUAL expected)
    return()
endif()

# Split into lists of lines (protect ';', which CMake lists would split on).
function(to_lines text out)
    string(REPLACE ";" "<semicolon>" text "${text}")
    string(REGEX REPLACE "\n$" "" text "${text}")
    string(REPLACE "\n" ";" text "${text}")
    set(${out} "${text}" PARENT_SCOPE)
endfunction()
to_lines("${expected}" exp_lines)
to_lines("${actual}" act_lines)
list(LENGTH exp_lines n_exp)
list(LENGTH act_lines n_act)
set(n ${n_exp})
if(n_act GREATER n)
    set(n ${n_act})
endif()

set(report "--- ${EXPECTED}\n+++ output of ${COMMAND} ${ARGS}\n")
set(i 0)
set(ndiff 0)
while(i LESS n)
    set(e "<no line>")
    set(a "<no line>")
    if(i LESS n_exp)
        list(GET exp_lines ${i} e)
    endif()
    if(i LESS n_act)
        list(GET act_lines ${i} a)
    endif()
    math(EXPR lineno "${i} + 1")
    if(e STREQUAL a)
        string(APPEND report " ${e}\n")
    else()
        string(APPEND report "-${e}\n+${a}    (line ${lineno})\n")
        math(EXPR ndiff "${ndiff} + 1")
    endif()
    math(EXPR i "${i} + 1")
endwhile()
if(ndiff EQUAL 0)
    string(APPEND report "(the lines match: only the final newline differs)\n")
endif()
string(REPLACE "<semicolon>" ";" report "${report}")
if(err)
    string(APPEND report "stderr:\n${err}")
endif()
# Plain message(): FATAL_ERROR would re-wrap the lines.
message("${report}")
message(FATAL_ERROR "output differs from ${EXPECTED}")
