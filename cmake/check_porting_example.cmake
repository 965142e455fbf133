# SPDX-License-Identifier: MIT
# docs/porting.md, "Embedding lapict in your VMM", walks through
# examples/kvm_loop.c (built and run in the tree, and by the consumer test
# against the installed KVM adapter): every ```c block of that section must
# be a verbatim piece of the file, so the guide cannot drift from tested
# code.
#
#   cmake -DDOC=docs/porting.md -DSOURCE=examples/kvm_loop.c -P ...
cmake_minimum_required(VERSION 3.16)
set(heading "## 10. Embedding lapict in your VMM")
file(READ ${DOC} doc)
file(READ ${SOURCE} src)
string(FIND "${doc}" "${heading}" at)
if(at LESS 0)
    message(FATAL_ERROR "${DOC}: no section '${heading}'")
endif()
string(SUBSTRING "${doc}" ${at} -1 rest)
set(blocks 0)
while(TRUE)
    string(FIND "${rest}" "\n```c\n" open)
    if(open LESS 0)
        break()
    endif()
    math(EXPR body "${open} + 6")
    string(SUBSTRING "${rest}" ${body} -1 rest)
    string(FIND "${rest}" "\n```\n" close)
    if(close LESS 0)
        message(FATAL_ERROR "${DOC}: a ```c block is not closed")
    endif()
    string(SUBSTRING "${rest}" 0 ${close} block)
    math(EXPR blocks "${blocks} + 1")
    string(FIND "${src}" "${block}\n" found)
    if(found LESS 0)
        message(FATAL_ERROR "${DOC}, '${heading}': code block ${blocks} "
                "is not in ${SOURCE} (edit both together):\n${block}")
    endif()
    string(SUBSTRING "${rest}" ${close} -1 rest)
endwhile()
if(blocks EQUAL 0)
    message(FATAL_ERROR "${DOC}, '${heading}': no ```c block")
endif()
message(STATUS "${DOC}: ${blocks} code blocks, all in ${SOURCE}")
