# SPDX-License-Identifier: MIT
# Every relative link of the installed Markdown documents under DIR
# resolves to a file that is installed: a reader of share/doc/lapict (or
# of a Debian package's /usr/share/doc/<package>) never follows a link to
# a file that only the source tree has. Links with a scheme (https:),
# absolute paths and anchors within a document are not checked.
#
#   cmake -DDIR=<prefix>/share/doc/lapict -P check_doc_links.cmake
cmake_minimum_required(VERSION 3.16)
if(NOT DEFINED DIR OR NOT IS_DIRECTORY "${DIR}")
    message(FATAL_ERROR "check_doc_links.cmake: -DDIR=<a directory>")
endif()
file(GLOB_RECURSE docs "${DIR}/*.md")
if(NOT docs)
    message(FATAL_ERROR "doc_links: no Markdown document under ${DIR}")
endif()
set(dead "")
set(checked 0)
foreach(doc IN LISTS docs)
    file(READ "${doc}" text)
    get_filename_component(dir "${doc}" DIRECTORY)
    # One link at a time: a CMake list of "](...)" strings would not split
    # where its brackets do not pair.
    while(text MATCHES "\\]\\(([^)]*)\\)")
        set(link "${CMAKE_MATCH_0}")
        set(path "${CMAKE_MATCH_1}")
        string(FIND "${text}" "${link}" at)
        string(LENGTH "${link}" len)
        math(EXPR at "${at} + ${len}")
        string(SUBSTRING "${text}" ${at} -1 text)
        string(REGEX REPLACE "#.*$" "" path "${path}")
        if(path STREQUAL "" OR path MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:" OR
           path MATCHES "^/")
            continue()
        endif()
        math(EXPR checked "${checked} + 1")
        if(NOT EXISTS "${dir}/${path}")
            file(RELATIVE_PATH shown "${DIR}" "${doc}")
            string(APPEND dead "\n  ${shown}: ${path}")
        endif()
    endwhile()
endforeach()
if(dead)
    message(FATAL_ERROR "doc_links: links to files not installed:${dead}")
endif()
list(LENGTH docs n)
message(STATUS "doc_links: ${checked} relative links in ${n} documents "
               "under ${DIR} resolve")
