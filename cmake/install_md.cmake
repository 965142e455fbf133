# SPDX-License-Identifier: MIT
# A Markdown document as it is installed: its relative links are written
# for the tree (README.md links docs/design.md, adapters/kvm/README.md
# links ../../docs/design.md), and the install lays the documents out
# otherwise, so each relative link is made to resolve where the document
# is installed, or becomes words that say where its file is:
#
#   the target is installed beside this document (a document of the same
#   package: LOCAL)           a relative link to its installed path
#   the target is one of lapict's installed documents, in another
#   package's directory (CORE) its text, and where the file is installed
#   the target is another adapter's README (adapters/<name>/README.md of
#   an adapter library, installed with it, in Debian in its own -dev
#   package)                  its text, and where the file is installed
#   anything else             its text, "(in lapict's source tree)"
#
# Links with a scheme (https:, mailto:), absolute paths and anchors
# within the document are kept as they are.
#
#   cmake -DINPUT=<tree>/adapters/kvm/README.md -DOUT=<build>/.../README.md
#         -DSOURCE_DIR=<tree> -DSELF=adapters/kvm/README.md
#         -DDOCDIR=share/doc/lapict
#         "-DLOCAL=<tree path>=<installed path>;..."
#         "-DCORE=<tree path>=<installed path>;..." -P install_md.cmake
#
# Installed paths are relative to DOCDIR; SELF is this document's.
cmake_minimum_required(VERSION 3.16)
foreach(var INPUT SOURCE_DIR OUT SELF DOCDIR)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "install_md.cmake: -D${var}=... is required")
    endif()
endforeach()

# The installed path of tree path @key in the "tree=installed" list
# @map, or "" in @out.
function(installed_path map key out)
    set(found "")
    foreach(pair IN LISTS map)
        if(pair MATCHES "^([^=]*)=(.*)$" AND CMAKE_MATCH_1 STREQUAL key)
            set(found ${CMAKE_MATCH_2})
            break()
        endif()
    endforeach()
    set(${out} "${found}" PARENT_SCOPE)
endfunction()

file(READ ${INPUT} text)
file(RELATIVE_PATH in_rel ${SOURCE_DIR} ${INPUT})
get_filename_component(in_dir "${in_rel}" DIRECTORY)
get_filename_component(self_dir "${SELF}" DIRECTORY)

set(out "")
set(link_re "\\[([^]]*)\\]\\(([^)]*)\\)")
while(text MATCHES "${link_re}")
    set(link "${CMAKE_MATCH_0}")
    set(label "${CMAKE_MATCH_1}")
    set(target "${CMAKE_MATCH_2}")
    string(FIND "${text}" "${link}" at)
    string(SUBSTRING "${text}" 0 ${at} before)
    string(LENGTH "${link}" len)
    math(EXPR rest "${at} + ${len}")
    string(SUBSTRING "${text}" ${rest} -1 text)
    string(APPEND out "${before}")

    set(anchor "")
    set(path "${target}")
    if(target MATCHES "^([^#]*)(#.*)$")
        set(path "${CMAKE_MATCH_1}")
        set(anchor "${CMAKE_MATCH_2}")
    endif()
    if(target MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:" OR target MATCHES "^/" OR
       path STREQUAL "")
        string(APPEND out "${link}")
        continue()
    endif()
    # The tree path of the target.
    if(in_dir)
        set(path "${in_dir}/${path}")
    endif()
    get_filename_component(abs "${path}" ABSOLUTE BASE_DIR "${SOURCE_DIR}")
    file(RELATIVE_PATH tree_path "${SOURCE_DIR}" "${abs}")
    installed_path("${LOCAL}" "${tree_path}" local)
    installed_path("${CORE}" "${tree_path}" core)
    # Another adapter library's README: lapict_add_adapter() installs it
    # as DOCDIR/<tree path>.
    set(adapter "")
    if(tree_path MATCHES "^adapters/([a-z0-9]+)/README\\.md$")
        set(adapter ${CMAKE_MATCH_1})
        if(NOT EXISTS "${SOURCE_DIR}/adapters/${adapter}/CMakeLists.txt")
            set(adapter "")
        endif()
    endif()
    if(local)
        file(RELATIVE_PATH rel "/d/${self_dir}" "/d/${local}")
        string(APPEND out "[${label}](${rel}${anchor})")
    elseif(core)
        string(APPEND out "${label} (${DOCDIR}/${core}; Debian: "
                          "/usr/share/doc/liblapict-dev/${core})")
    elseif(adapter)
        string(APPEND out "${label} (${DOCDIR}/${tree_path}; Debian: "
                          "/usr/share/doc/liblapict-${adapter}-dev/README.md)")
    else()
        string(APPEND out "${label} (in lapict's source tree)")
    endif()
endwhile()
string(APPEND out "${text}")

# Written only when it changes, so that an install does not see it new.
set(old "")
if(EXISTS ${OUT})
    file(READ ${OUT} old)
endif()
if(NOT old STREQUAL out)
    file(WRITE ${OUT} "${out}")
endif()
