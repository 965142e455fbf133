# SPDX-License-Identifier: MIT
# Install a built lapict into a scratch prefix and use it from outside: the
# programs of tests/consumer (the core, the LAPIC model alone, and
# examples/: the core on the simulated host, a VMM loop on the KVM
# adapter), once built through find_package(lapict CONFIG COMPONENTS ...)
# and once through pkg-config (lapict, lapict-apic, lapict-sim,
# lapict-kvm). All must build and run; the VMM loop may skip (exit 77: no
# usable /dev/kvm), which is reported. With INSTALLED_PREFIX, lapict is
# already installed there (ci/test-packages.sh: the Debian packages
# unpacked with dpkg -x) and BUILD_DIR is not used.
#
#   cmake -DBUILD_DIR=... | -DINSTALLED_PREFIX=...
#         -DSOURCE_DIR=tests/consumer -DWORK_DIR=...
#         -DC_COMPILER=cc -DLIBDIR=lib -DPKG_CONFIG=pkg-config
#         [-DCONFIG=...] [-DGENERATOR=...] [-DEXTRA_FLAGS="..."]
#         [-DRUN_VMM=OFF] -P test_consumer.cmake
#
# RUN_VMM=OFF builds the VMM loop without running it (ctest runs it as a
# test of its own, consumer_kvm_loop, which can report a skip).
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

include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
macro(run)
    run_step(consumer ${ARGN})
endmacro()

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
run("build with lapict::lapict, lapict::apic, lapict::sim, lapict::kvm"
    ${CMAKE_COMMAND} --build ${build} ${config_args})
if(NOT DEFINED RUN_VMM)
    set(RUN_VMM ON)
endif()

# Runs one program of the consumer; the VMM loop's 77 is a skip.
function(run_program what exe)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libpath}
                            ${exe}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    string(STRIP "${out}${err}" text)
    if(rc STREQUAL "77" AND exe MATCHES "kvm_loop")
        message(STATUS "consumer: ${what}: SKIPPED: ${text}")
    elseif(NOT rc STREQUAL "0")
        message(FATAL_ERROR "consumer: ${what} failed (${rc})\n$ ${exe}\n"
                            "${text}")
    else()
        message(STATUS "consumer: ${what}: ${text}")
    endif()
endfunction()

# The programs: name, source (from SOURCE_DIR), pkg-config module.
set(programs lapict_consumer main.c lapict
             apic_model apic_model.c lapict-apic
             embed_sim ../../examples/embed_sim.c lapict-sim)
if(EXISTS ${build}/kvm_loop OR
   (CONFIG AND EXISTS ${build}/${CONFIG}/kvm_loop))
    list(APPEND programs kvm_loop ../../examples/kvm_loop.c lapict-kvm)
endif()

# CMake gives the build an rpath to the library unless it deems the
# directory implicit, which varies with the prefix; the library path is
# therefore given explicitly, as for the pkg-config build.
while(programs)
    list(POP_FRONT programs name src module)
    set(exe ${build}/${name})
    if(CONFIG AND EXISTS ${build}/${CONFIG}/${name})
        set(exe ${build}/${CONFIG}/${name})
    endif()
    set(run_it ON)
    if(name STREQUAL "kvm_loop" AND NOT RUN_VMM)
        set(run_it OFF)
    endif()
    if(run_it)
        run_program("run ${name} (find_package)" ${exe})
    endif()

    # pkg-config, seeing only the scratch prefix.
    run("pkg-config --cflags --libs ${module}"
        ${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${libpath}/pkgconfig
        PKG_CONFIG_PATH= ${PKG_CONFIG} --cflags --libs ${module})
    string(STRIP "${run_output}" pc_flags)
    message(STATUS "pkg-config ${module}: ${pc_flags}")
    separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
    set(exe ${WORK_DIR}/${name}_pc)
    # As a user would type it; the headers must be warning-free for a
    # strict consumer. (In a coverage build, the .gcno lands in WORK_DIR.)
    run("compile ${src} with pkg-config flags"
        ${CMAKE_COMMAND} -E chdir ${WORK_DIR}
        ${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${extra}
        ${SOURCE_DIR}/${src} ${pc_flags} -o ${exe})
    # A shared lapict is found through LD_LIBRARY_PATH (no rpath here).
    if(run_it)
        run_program("run ${name} (pkg-config)" ${exe})
    endif()
endwhile()
