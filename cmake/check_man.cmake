# SPDX-License-Identifier: MIT
# Checks of a man page made from docs/man/<tool>.1.scd.
#
#   MODE=render: groff -ww -z -man and `MANWIDTH=80 man -l` render the page
#     with nothing on standard error (no warning of any kind).
#   MODE=options: the options the page's OPTIONS section lists (lines that
#     start with "*--name*") are the options `<tool> --help` prints (every
#     "--name" in its output). --help itself is left out of both: usage
#     texts do not list it.
#
#   MODE=lookup: `man -M MANPATH NAME` finds a page by name, as `man NAME`
#     does after an install, and renders it with nothing on standard error
#     (a ".so" page included). With EXPECT, a list of phrases, the rendered
#     text must hold each of them (words as man wraps them: any run of
#     blanks matches a blank).
#
#   cmake -DMODE=render -DPAGE=lapict-x.1 -DGROFF=groff -DMAN=man -P ...
#   cmake -DMODE=options -DSOURCE=lapict-x.1.scd -DTOOL=path -P ...
#   cmake -DMODE=lookup -DMANPATH=dir -DNAME=lapict_init -DMAN=man
#         [-DEXPECT="phrase;phrase"] -P ...
cmake_minimum_required(VERSION 3.16)

if(MODE STREQUAL "render")
    execute_process(COMMAND ${GROFF} -ww -z -man ${PAGE}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
        message(FATAL_ERROR "groff -ww -z -man ${PAGE} (${rc}):\n${err}")
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MANWIDTH=80 MANPAGER=cat
                            PAGER=cat ${MAN} -l ${PAGE}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT err STREQUAL "" OR out STREQUAL "")
        message(FATAL_ERROR "man -l ${PAGE} (${rc}):\n${err}")
    endif()
    message(STATUS "${PAGE}: renders without warnings")
elseif(MODE STREQUAL "options")
    execute_process(COMMAND ${TOOL} --help RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${TOOL} --help exited ${rc}:\n${out}${err}")
    endif()
    string(REGEX MATCHALL "--[a-z][a-z0-9-]*" help "${out}${err}")
    file(STRINGS ${SOURCE} lines)
    set(page "")
    set(in_options FALSE)
    foreach(line IN LISTS lines)
        if(line MATCHES "^# ")
            if(line STREQUAL "# OPTIONS")
                set(in_options TRUE)
            else()
                set(in_options FALSE)
            endif()
        elseif(in_options AND line MATCHES "^\\*(--[a-z][a-z0-9-]*)\\*")
            list(APPEND page ${CMAKE_MATCH_1})
        endif()
    endforeach()
    if(NOT page)
        message(FATAL_ERROR "${SOURCE}: no OPTIONS entries found")
    endif()
    foreach(var help page)
        list(REMOVE_ITEM ${var} --help)
        list(REMOVE_DUPLICATES ${var})
        list(SORT ${var})
    endforeach()
    set(diff "")
    foreach(o IN LISTS help)
        if(NOT o IN_LIST page)
            string(APPEND diff "\n  ${o}: in --help, not in the man page")
        endif()
    endforeach()
    foreach(o IN LISTS page)
        if(NOT o IN_LIST help)
            string(APPEND diff "\n  ${o}: in the man page, not in --help")
        endif()
    endforeach()
    if(diff)
        message(FATAL_ERROR "${SOURCE} and ${TOOL} --help differ:${diff}")
    endif()
    list(JOIN page " " page)
    message(STATUS "${SOURCE}: same options as --help: ${page}")
elseif(MODE STREQUAL "lookup")
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MANWIDTH=80 MANPAGER=cat
                            PAGER=cat ${MAN} -M ${MANPATH} ${NAME}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT err STREQUAL "" OR out STREQUAL "")
        message(FATAL_ERROR "man -M ${MANPATH} ${NAME} (${rc}):\n${err}")
    endif()
    string(REGEX REPLACE "[ \t\n]+" " " flat "${out}")
    foreach(phrase IN LISTS EXPECT)
        string(FIND "${flat}" "${phrase}" at)
        if(at EQUAL -1)
            message(FATAL_ERROR "man ${NAME}: no \"${phrase}\" in:\n${out}")
        endif()
    endforeach()
    string(REGEX MATCH "^[^\n]*" first "${out}")
    message(STATUS "man ${NAME}: ${first}")
else()
    message(FATAL_ERROR "check_man.cmake: MODE=render|options|lookup")
endif()
