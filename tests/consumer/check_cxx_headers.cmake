# SPDX-License-Identifier: MIT
# The installed headers are usable from C++ (a VMM written in C++ includes
# them): each one, on its own, compiles as C++17 with the installed include
# directory only, warning-free for a strict consumer.
#   cmake -DPREFIX=<install prefix> -DCXX=g++ -P check_cxx_headers.cmake
cmake_minimum_required(VERSION 3.16)
set(inc ${PREFIX}/include)
file(GLOB headers RELATIVE ${inc} ${inc}/lapict/*.h ${inc}/lapict_*.h)
list(LENGTH headers n)
if(n EQUAL 0)
    message(FATAL_ERROR "cxx_headers: no header installed in ${inc}")
endif()
foreach(h IN LISTS headers)
    execute_process(
        COMMAND ${CMAKE_COMMAND} -E echo "#include <${h}>"
        COMMAND ${CXX} -std=c++17 -fsyntax-only -Wall -Wextra -Werror
                -I ${inc} -x c++ -
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc STREQUAL "0")
        message(FATAL_ERROR "cxx_headers: <${h}> is not C++:\n${out}${err}")
    endif()
endforeach()
message(STATUS "cxx_headers: ${n} installed headers compile as C++17")
