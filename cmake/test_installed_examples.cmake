# SPDX-License-Identifier: MIT
# The examples as a user of an installed lapict finds them: configure the
# installed examples folder (share/doc/lapict/examples, or a Debian
# package's /usr/share/doc/liblapict-dev/examples) on its own against the
# installed package (find_package(lapict CONFIG REQUIRED COMPONENTS ...)),
# build it, and run what it built: embed_sim must pass; kvm_loop, where it
# is built, may skip (exit 77: no usable /dev/kvm), which is reported.
#
#   cmake -DEXAMPLES_DIR=<prefix>/share/doc/lapict/examples -DPREFIX=<prefix>
#         -DWORK_DIR=... -DLIBDIR=lib -DC_COMPILER=cc
#         [-DGENERATOR=...] [-DCONFIG=...] [-DEXTRA_FLAGS="..."]
#         [-DRUN_KVM=OFF] -P test_installed_examples.cmake
#
# EXTRA_FLAGS: the instrumentation flags of the build that was installed
# (sanitizers, coverage), which its libraries need at link time.
cmake_minimum_required(VERSION 3.16)
foreach(var EXAMPLES_DIR PREFIX WORK_DIR LIBDIR C_COMPILER)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "test_installed_examples.cmake: -D${var}=... "
                            "is required")
    endif()
endforeach()
if(NOT EXISTS ${EXAMPLES_DIR}/CMakeLists.txt)
    message(FATAL_ERROR "examples: ${EXAMPLES_DIR}/CMakeLists.txt is not "
                        "installed")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
macro(run)
    run_step(examples ${ARGN})
endmacro()

file(REMOVE_RECURSE ${WORK_DIR})
set(gen_args "")
if(GENERATOR)
    set(gen_args -G ${GENERATOR})
endif()
set(config_args "")
if(CONFIG)
    set(config_args --config ${CONFIG})
endif()
run("configure ${EXAMPLES_DIR}"
    ${CMAKE_COMMAND} -S ${EXAMPLES_DIR} -B ${WORK_DIR} ${gen_args}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_PREFIX_PATH=${PREFIX}
    "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
# It must be the installed package under test, not one on the machine.
file(STRINGS ${WORK_DIR}/CMakeCache.txt found REGEX "^lapict_DIR:")
string(REGEX REPLACE "^[^=]*=" "" found "${found}")
string(FIND "${found}" "${PREFIX}/" at)
if(NOT at EQUAL 0)
    message(FATAL_ERROR "examples: find_package found lapict in "
                        "'${found}', not in ${PREFIX}")
endif()
run("build" ${CMAKE_COMMAND} --build ${WORK_DIR} ${config_args})

# The libraries from the prefix (a shared lapict has no rpath there).
foreach(name embed_sim kvm_loop)
    set(exe ${WORK_DIR}/${name})
    if(CONFIG AND EXISTS ${WORK_DIR}/${CONFIG}/${name})
        set(exe ${WORK_DIR}/${CONFIG}/${name})
    endif()
    if(NOT EXISTS ${exe})
        if(name STREQUAL "embed_sim")
            message(FATAL_ERROR "examples: embed_sim was not built")
        endif()
        continue()
    endif()
    if(name STREQUAL "kvm_loop" AND DEFINED RUN_KVM AND NOT RUN_KVM)
        message(STATUS "examples: kvm_loop built, not run")
        continue()
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -E env
                            LD_LIBRARY_PATH=${PREFIX}/${LIBDIR} ${exe}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    string(STRIP "${out}${err}" text)
    if(rc STREQUAL "77" AND name STREQUAL "kvm_loop")
        message(STATUS "examples: kvm_loop: SKIPPED: ${text}")
    elseif(NOT rc STREQUAL "0")
        message(FATAL_ERROR "examples: ${name} failed (${rc})\n${text}")
    else()
        message(STATUS "examples: ${name}: passed")
    endif()
endforeach()
