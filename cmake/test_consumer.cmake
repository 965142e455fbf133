# SPDX-License-Identifier: MIT
# Install a built lapict into a scratch prefix and use it from outside: once
# through find_package(lapict CONFIG) and once through pkg-config. Both must
# build and run. With INSTALLED_PREFIX, lapict is already installed there
# (cmake/test-packages.sh: the Debian packages unpacked with dpkg -x) and
# BUILD_DIR is not used.
#
#   cmake -DBUILD_DIR=... | -DINSTALLED_PREFIX=...
#         -DSOURCE_DIR=tests/consumer -DWORK_DIR=...
#         -DC_COMPILER=cc -DLIBDIR=lib -DPKG_CONFIG=pkg-config
#         [-DCONFIG=...] [-DGENERATOR=...] [-DEXTRA_FLAGS="..."]
#         -P test_consumer.cmake
cmake_minimum_required(VERSION 3.16)
if(NOT DEFINED INSTALLED_PREFIX AND NOT DEFINED BUILD_DIR)
    message(FATAL_ERROR "test_consumer.cmake: -DBUILD_DIR=... or "
                        "-DINSTALLED_PREFIX=... is required")
endif()
foreach(var SOURCE_DIR WORK_DIR C_COMPILER LIBDIR)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "test_consumer.cmake: -D${var}=... is required")
    endif()
endforeach()
if(NOT PKG_CONFIG)
    message(FATAL_ERROR "pkg-config was not found at configure time: "
                        "install pkg-config")
endif()

# Runs a command; on failure stops with its output.
function(run what)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc STREQUAL "0")
        string(REPLACE ";" " " cmd "${ARGN}")
        message(FATAL_ERROR "consumer: ${what} failed (${rc})\n$ ${cmd}\n"
                            "${out}${err}")
    endif()
    message(STATUS "consumer: ${what}: ok")
    set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(config_args "")
if(CONFIG)
    set(config_args --config ${CONFIG})
endif()
if(DEFINED INSTALLED_PREFIX)
    set(prefix ${INSTALLED_PREFIX})
else()
    set(prefix ${WORK_DIR}/prefix)
    run("install into ${prefix}"
        ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
        ${config_args})
endif()

# An instrumented lapict (sanitizers, coverage) needs its runtime at link
# time, so EXTRA_FLAGS are passed on.
separate_arguments(extra UNIX_COMMAND "${EXTRA_FLAGS}")
set(libpath ${prefix}/${LIBDIR})

# 1. CMake package.
set(gen_args "")
if(GENERATOR)
    set(gen_args -G ${GENERATOR})
endif()
set(build ${WORK_DIR}/cmake-build)
run("configure with find_package(lapict)"
    ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} ${gen_args}
    -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_PREFIX_PATH=${prefix}
    "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
# It must be our package, not one installed on the machine.
file(STRINGS ${build}/CMakeCache.txt found REGEX "^lapict_DIR:")
string(REGEX REPLACE "^[^=]*=" "" found "${found}")
string(FIND "${found}" "${prefix}/" at)
if(NOT at EQUAL 0)
    message(FATAL_ERROR "consumer: find_package found lapict in '${found}', "
                        "not in ${prefix}")
endif()
run("build with lapict::lapict"
    ${CMAKE_COMMAND} --build ${build} ${config_args})
set(exe ${build}/lapict_consumer)
if(CONFIG AND EXISTS ${build}/${CONFIG}/lapict_consumer)
    set(exe ${build}/${CONFIG}/lapict_consumer)
endif()
# CMake gives the build an rpath to the library unless it deems the
# directory implicit, which varies with the prefix; the library path is
# therefore given explicitly, as for the pkg-config build.
run("run the find_package build"
    ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libpath} ${exe})
message(STATUS "${run_output}")

# 2. pkg-config, seeing only the scratch prefix.
run("pkg-config --cflags --libs lapict"
    ${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${libpath}/pkgconfig
    PKG_CONFIG_PATH= ${PKG_CONFIG} --cflags --libs lapict)
string(STRIP "${run_output}" pc_flags)
message(STATUS "pkg-config: ${pc_flags}")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
set(exe ${WORK_DIR}/lapict_consumer_pc)
# As a user would type it; the headers must be warning-free for a strict
# consumer. (In a coverage build, main.c's own .gcno lands in WORK_DIR.)
run("compile with pkg-config flags"
    ${CMAKE_COMMAND} -E chdir ${WORK_DIR}
    ${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${extra}
    ${SOURCE_DIR}/main.c ${pc_flags} -o ${exe})
# A shared lapict is found through LD_LIBRARY_PATH (no rpath here).
run("run the pkg-config build"
    ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libpath} ${exe})
message(STATUS "${run_output}")
