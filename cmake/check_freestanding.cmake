# SPDX-License-Identifier: MIT
# lib/ must link into environments without a C library (kernels, firmware):
# the only symbols its objects may need from outside are the four mem*
# functions every freestanding compiler may emit calls to. No libgcc helpers
# (__udivti3), no libc (printf, malloc, __assert_fail), no __stack_chk_fail.
#
#   cmake -DNM=nm -DOBJECTS="a.o;b.o" -P check_freestanding.cmake
cmake_minimum_required(VERSION 3.16)
set(allowed memcpy memmove memset memcmp)

if(NOT NM)
    set(NM nm)
endif()
list(REMOVE_ITEM OBJECTS "")
if(NOT OBJECTS)
    message(FATAL_ERROR "check_freestanding.cmake: -DOBJECTS=... is required")
endif()

# The names of the symbols of one object that nm selects with the flags
# given after @out.
function(symbols object out)
    execute_process(COMMAND ${NM} ${ARGN} --format=posix ${object}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
    if(NOT rc STREQUAL "0")
        message(FATAL_ERROR "${NM} ${ARGN} ${object} failed (${rc}): ${err}")
    endif()
    string(REGEX REPLACE "\n$" "" text "${text}")
    string(REPLACE "\n" ";" lines "${text}")
    set(names "")
    foreach(line IN LISTS lines)
        string(REGEX REPLACE " .*" "" name "${line}")
        if(name)
            list(APPEND names ${name})
        endif()
    endforeach()
    set(${out} ${names} PARENT_SCOPE)
endfunction()

set(defined "")
set(undefined "")
foreach(object IN LISTS OBJECTS)
    get_filename_component(base "${object}" NAME)
    # Only external definitions can satisfy another object's reference.
    symbols(${object} d --defined-only --extern-only)
    symbols(${object} u --undefined-only)
    list(APPEND defined ${d})
    foreach(name IN LISTS u)
        list(APPEND undefined "${name}")
        set(users_${name} "${users_${name}} ${base}")
    endforeach()
endforeach()
list(REMOVE_DUPLICATES undefined)

set(bad "")
foreach(name IN LISTS undefined)
    # References between the library's own objects are fine.
    if(name IN_LIST defined OR name IN_LIST allowed)
        continue()
    endif()
    list(APPEND bad "  ${name}  (needed by${users_${name}})")
endforeach()

list(LENGTH OBJECTS n)
string(REPLACE ";" " " allowed "${allowed}")
if(bad)
    string(REPLACE ";" "\n" bad "${bad}")
    message("lib/ is not freestanding: undefined symbols other than "
            "${allowed}:\n${bad}")
    message(FATAL_ERROR "freestanding check failed")
endif()
message(STATUS "freestanding: ${n} objects, undefined symbols outside the "
               "library limited to {${allowed}}")
