# SPDX-License-Identifier: MIT
# No hardware divide on the hot paths: disassembles the library
# objects, builds the static call graph from the direct calls and jumps and
# the relocations of each function, walks it from the hot entry points and
# fails if a reachable function holds a div/idiv instruction.
#
# The walk stops at the declared slow paths, which only run at init, on a
# clamped periodic timer, after a stall over several periods or when a
# periodic timer's tick count is re-based, and may divide: lapict__udiv128
# and lapict__udiv128_wide (the CPU's 64-bit divide for 64-bit numerators,
# shift-subtract above) and lapict__gcd. Calls through the host's ops
# table are indirect and not followed (they leave the library).
# Inlining differs between build types, so the graph is taken from the
# objects of this build rather than from a fixed list of functions.
#
#   cmake -DOBJDUMP=objdump -DOBJECTS="a.o;b.o" -P check_nodiv.cmake
cmake_minimum_required(VERSION 3.16)
set(roots lapict_tmcct_read lapict_tmict_write lapict_tsc_deadline_write
          lapict_expire lapict_before_guest_entry)
set(slow lapict__udiv128 lapict__udiv128_wide lapict__gcd)

if(NOT OBJDUMP)
    set(OBJDUMP objdump)
endif()
list(REMOVE_ITEM OBJECTS "")
if(NOT OBJECTS)
    message(FATAL_ERROR "check_nodiv.cmake: -DOBJECTS=... is required")
endif()

set(functions "")
foreach(object IN LISTS OBJECTS)
    execute_process(COMMAND ${OBJDUMP} -dr --no-show-raw-insn ${object}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
    if(NOT rc STREQUAL "0")
        message(FATAL_ERROR "${OBJDUMP} -dr ${object} failed (${rc}): ${err}")
    endif()
    string(REPLACE ";" "," text "${text}")
    string(REPLACE "\n" ";" lines "${text}")
    set(fn "")
    set(sec "")
    set(starts "")  # "section:address:function" of this object
    set(pending "") # "function:section:target" section-relative calls
    foreach(line IN LISTS lines)
        if(line MATCHES "^Disassembly of section ([^:]+):")
            set(sec "${CMAKE_MATCH_1}")
        elseif(line MATCHES "^([0-9a-f]+) <([^>]+)>:$")
            set(fn "${CMAKE_MATCH_2}")
            math(EXPR addr "0x${CMAKE_MATCH_1}")
            list(APPEND starts "${sec}:${addr}:${fn}")
            # Static functions of different objects may share a name: their
            # calls and divides are merged (conservative).
            if(NOT fn IN_LIST functions)
                list(APPEND functions "${fn}")
                set(calls_${fn} "")
                set(divs_${fn} "")
            endif()
        elseif(fn STREQUAL "")
            continue()
        elseif(line MATCHES "^[ \t]*[0-9a-f]+:[ \t]+(i?div[bwlq]?)[ \t]")
            list(APPEND divs_${fn} "${line}")
        elseif(line MATCHES "R_X86_64_(PLT32|PC32)[ \t]+(\\.[A-Za-z0-9_.]+)([+-]0x[0-9a-f]+)?$")
            # A call to a local function through its section symbol (clang
            # at -O0): the target is the addend + 4 inside that section.
            set(off 0)
            if(CMAKE_MATCH_3)
                math(EXPR off "${CMAKE_MATCH_3} + 4")
            else()
                set(off 4)
            endif()
            list(APPEND pending "${fn}:${CMAKE_MATCH_2}:${off}")
        elseif(line MATCHES "R_X86_64_[A-Z0-9_]+[ \t]+([A-Za-z_][A-Za-z0-9_.]*)")
            list(APPEND calls_${fn} "${CMAKE_MATCH_1}")
        elseif(line MATCHES "[ \t](call|jmp)[a-z]*[ \t]+(0x)?[0-9a-f]+ <([^>+]+)>$")
            list(APPEND calls_${fn} "${CMAKE_MATCH_3}")
        endif()
    endforeach()
    # Resolve section-relative calls to the function holding the target.
    foreach(p IN LISTS pending)
        string(REPLACE ":" ";" p "${p}")
        list(GET p 0 from)
        list(GET p 1 psec)
        list(GET p 2 target)
        set(best "")
        set(best_addr -1)
        foreach(st IN LISTS starts)
            string(REPLACE ":" ";" st "${st}")
            list(GET st 0 ssec)
            list(GET st 1 saddr)
            list(GET st 2 sname)
            if(ssec STREQUAL psec AND saddr LESS_EQUAL target AND
               saddr GREATER best_addr)
                set(best ${sname})
                set(best_addr ${saddr})
            endif()
        endforeach()
        if(best AND NOT best STREQUAL from)
            list(APPEND calls_${from} ${best})
        endif()
    endforeach()
endforeach()

foreach(root IN LISTS roots)
    if(NOT root IN_LIST functions)
        message(FATAL_ERROR "check_nodiv: entry point ${root} not found in "
                            "the objects")
    endif()
endforeach()

# Breadth-first walk, remembering who reached each function first.
set(seen ${roots})
set(queue ${roots})
while(queue)
    list(POP_FRONT queue f)
    foreach(c IN LISTS calls_${f})
        if(c IN_LIST slow OR c IN_LIST seen OR NOT c IN_LIST functions)
            continue()
        endif()
        list(APPEND seen ${c})
        list(APPEND queue ${c})
        set(from_${c} ${f})
    endforeach()
endwhile()

set(bad "")
foreach(f IN LISTS seen)
    if(divs_${f})
        set(path ${f})
        set(p ${f})
        while(DEFINED from_${p})
            set(p ${from_${p}})
            list(PREPEND path ${p})
        endwhile()
        string(REPLACE ";" " -> " path "${path}")
        string(REPLACE ";" "\n      " d "${divs_${f}}")
        string(APPEND bad "  ${f} (reached by ${path}):\n      ${d}\n")
    endif()
endforeach()

list(LENGTH seen n)
string(REPLACE ";" " " seen_text "${seen}")
message(STATUS "check_nodiv: ${n} functions reachable from the hot entry "
               "points: ${seen_text}")
if(bad)
    message("Hardware divide instructions on the hot paths:\n${bad}")
    message(FATAL_ERROR "check_nodiv failed")
endif()
message(STATUS "check_nodiv: no div/idiv on the hot paths")
