# SPDX-License-Identifier: MIT
# Section-3 man page of one public header (include/lapict/<name>.h), made
# from its kernel-doc comments at build time (cmake/man3.cmake), so the
# pages cannot drift from the headers. Debian's kernel-doc is not
# packaged; this reads the subset the headers use (STYLE.md, "Comments"):
#
#   line 2 "/* text */" or "/*" ... " */"  the header's overview: NAME
#                                           (up to its first ':' or '.')
#                                           and DESCRIPTION
#   "/** name() - text */", a declaration  a function, its brief only
#   "/**" block, then a declaration        a function: FUNCTIONS entry
#       " * name() - brief"                 (the brief may go on until a
#       " * @arg: text"                     blank " *", "@arg:" or section)
#       " * Context: text", " * Return: text"
#       other lines                         its description; a blank " *"
#                                           ends a paragraph, a line
#                                           indented past " * " is code
#   everything else but the include guard,  DEFINITIONS, verbatim
#   #includes, extern "C" and private
#   structures (struct lapict_timer's
#   fields, struct lapict__*)
#
#   awk -v page=lapict-timer -v header=lapict/timer.h -v version=1.0.0 \
#       -v names=FILE [-v module=lapict-kvm] \
#       -f kerneldoc2man.awk include/lapict/timer.h > page.3
#
# module: the pkg-config module SYNOPSIS names (default lapict).
#
# names: FILE receives "brief <NAME's text>", then the functions documented,
# one a line (cmake/man3.cmake makes lapict(3) from the briefs and a ".so"
# page for each function). POSIX awk (Debian's default is mawk).

# Text for roff: backslashes, and a control character at a line start.
function esc(s) {
    gsub(/\\/, "\\e", s)
    if (s ~ /^[.']/)
        s = "\\&" s
    return s
}

# Running text: @arg in italics, name() in bold.
function prose(s,    out) {
    s = esc(s)
    out = ""
    while (match(s, /@[A-Za-z_][A-Za-z0-9_]*/)) {
        out = out substr(s, 1, RSTART - 1) "\\fI" substr(s, RSTART + 1, RLENGTH - 1) "\\fP"
        s = substr(s, RSTART + RLENGTH)
    }
    s = out s
    out = ""
    while (match(s, /[A-Za-z_][A-Za-z0-9_]*\(\)/)) {
        out = out substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART, RLENGTH - 2) "\\fP()"
        s = substr(s, RSTART + RLENGTH)
    }
    return out s
}

# A comment line's text: " * text" -> "text" (indentation past " * " kept).
function body(s) {
    sub(/^[ \t]*\*\/[ \t]*$/, "", s)
    sub(/^[ \t]*\/?\*+ ?/, "", s)
    sub(/[ \t]*\*\/[ \t]*$/, "", s)
    return s
}

# Appends a paragraph line to out[]: code (indented) in no-fill mode.
function para(s) {
    if (s ~ /^[ \t]*$/) {
        if (incode) {
            emit(".fi")
            emit(".RE")
            incode = 0
        }
        if (nout > 0 && out[nout] != ".PP")
            emit(".PP")
        return
    }
    if (s ~ /^  /) {
        if (!incode) {
            emit(".RS 4")
            emit(".nf")
            incode = 1
        }
        sub(/^  /, "", s)
        emit(esc(s))
        return
    }
    if (incode) {
        emit(".fi")
        emit(".RE")
        incode = 0
    }
    sub(/^[ \t]+/, "", s)
    emit(prose(s))
}

function emit(s) { out[++nout] = s }

function endpara() {
    if (incode) {
        emit(".fi")
        emit(".RE")
        incode = 0
    }
}

{ line[NR] = $0 }

END {
    n = NR
    # --- the overview (line 2) --------------------------------------------
    overview = ""
    i = 2
    if (line[2] ~ /^\/\*.*\*\/$/) {
        overview = body(line[2])
        i = 3
    } else if (line[2] ~ /^\/\*$/) {
        for (i = 3; i <= n && line[i] !~ /^ \*\/$/; i++)
            overview = overview (overview == "" ? "" : "\n") body(line[i])
        i++
    }
    first = overview
    gsub(/\n/, " ", first)
    if (match(first, /[:.]/))
        first = substr(first, 1, RSTART - 1)

    # --- functions and definitions ----------------------------------------
    nfn = 0
    ndef = 0
    private = 0
    for (; i <= n; i++) {
        s = line[i]
        # Include guard, includes, C++ linkage.
        if (s ~ /^#include/ || s ~ /^#ifndef LAPICT_[A-Z_]*_H$/ ||
            s ~ /^#define LAPICT_[A-Z_]*_H$/ || s ~ /^#endif \/\* LAPICT_[A-Z_]*_H \*\/$/)
            continue
        if (s ~ /^#ifdef __cplusplus/) {
            while (i <= n && line[i] !~ /^#endif/)
                i++
            continue
        }
        # Private structures: their name only.
        if (s ~ /^struct lapict__[a-z0-9_]* \{$/) {
            while (i <= n && line[i] !~ /^};/)
                i++
            # with the comment before it, if any
            while (ndef > 0 && def[ndef] !~ /^[ \t]*$/ && def[ndef] ~ /^( \*|\/\*)/)
                ndef--
            continue
        }
        if (s ~ /^struct lapict_timer \{$/) {
            def[++ndef] = s
            def[++ndef] = "    /* private fields: hosts allocate it, never touch them */"
            while (i <= n && line[i] !~ /^};/)
                i++
            def[++ndef] = "};"
            continue
        }
        # A one-line kernel-doc comment before a prototype.
        if (s ~ /^\/\*\* [A-Za-z_][A-Za-z0-9_]*\(\) - .*\*\/$/) {
            for (k = i + 1; k <= n && line[k] !~ /;[ \t]*$/; k++)
                ;
            decl = ""
            for (m = i + 1; m <= k; m++)
                decl = decl (decl == "" ? "" : "\n") line[m]
            if (decl ~ /\(/) {
                nfn++
                name = s
                sub(/^\/\*\* /, "", name)
                brief = name
                sub(/\(\).*/, "", name)
                sub(/^[A-Za-z_][A-Za-z0-9_]*\(\) - /, "", brief)
                sub(/[ \t]*\*\/$/, "", brief)
                fn_name[nfn] = name
                fn_oneline[nfn] = brief
                fn_decl[nfn] = decl
                i = k
                continue
            }
        }
        # A kernel-doc block and what it documents.
        if (s ~ /^\/\*\*$/) {
            start = i
            for (j = i + 1; j <= n && line[j] !~ /^ \*\/$/; j++)
                ;
            # the declaration: up to the line ending in ';'
            for (k = j + 1; k <= n && line[k] !~ /;[ \t]*$/; k++)
                ;
            decl = ""
            for (m = j + 1; m <= k; m++)
                decl = decl (decl == "" ? "" : "\n") line[m]
            if (line[i + 1] ~ /^ \* [A-Za-z_][A-Za-z0-9_]*\(\) - / && decl ~ /\(/) {
                nfn++
                fn_first[nfn] = i + 1
                fn_last[nfn] = j - 1
                fn_decl[nfn] = decl
                name = line[i + 1]
                sub(/^ \* /, "", name)
                sub(/\(\).*/, "", name)
                fn_name[nfn] = name
                i = k
                continue
            }
            # Anything else (a struct's kernel-doc): verbatim.
            for (m = i; m <= k; m++)
                def[++ndef] = line[m]
            i = k
            continue
        }
        def[++ndef] = s
    }

    # --- the page ---------------------------------------------------------
    up = toupper(page)
    print ".\\\" SPDX-License-Identifier: MIT"
    print ".\\\" Generated from <" header "> by cmake/kerneldoc2man.awk: edit the header."
    print ".TH " up " 3 \"\" \"lapict " version "\" \"lapict Programmer's Manual\""
    # No hyphenation, ragged right: identifiers stay whole.
    print ".nh"
    print ".ad l"
    print ".SH NAME"
    names_line = page
    if (names != "")
        print "brief " first > names
    for (f = 1; f <= nfn; f++) {
        names_line = names_line ", " fn_name[f]
        if (names != "")
            print fn_name[f] > names
    }
    print names_line " \\- " esc(first)
    print ".SH SYNOPSIS"
    print ".nf"
    print ".B #include <" header ">"
    for (f = 1; f <= nfn; f++) {
        print ".PP"
        # Without the export macro, and the continuation lines moved left
        # as far as it was wide.
        cnt = split(fn_decl[f], dl, "\n")
        cut = 0
        if (sub(/^LAPICT_API /, "", dl[1]))
            cut = length("LAPICT_API ")
        for (m = 1; m <= cnt; m++) {
            if (m > 1 && cut && substr(dl[m], 1, cut) ~ /^ *$/)
                dl[m] = substr(dl[m], cut + 1)
            print esc(dl[m])
        }
    }
    print ".fi"
    print ".PP"
    print "Link with"
    print ".IR \"pkg-config --libs " (module == "" ? "lapict" : module) "\" ."
    print ".SH DESCRIPTION"
    cnt = split(overview, ol, "\n")
    nout = 0
    incode = 0
    for (m = 1; m <= cnt; m++)
        para(ol[m])
    endpara()
    for (m = 1; m <= nout; m++)
        print out[m]

    if (nfn > 0)
        print ".SH FUNCTIONS"
    for (f = 1; f <= nfn; f++) {
        nout = 0
        incode = 0
        print ".SS " fn_name[f] "()"
        if (f in fn_oneline) {
            print prose(fn_oneline[f])
            continue
        }
        # The brief: the first line after "name() - ", continued to the
        # first blank line, @arg or section.
        s = line[fn_first[f]]
        sub(/^ \* [A-Za-z_][A-Za-z0-9_]*\(\) - /, "", s)
        brief = s
        m = fn_first[f] + 1
        while (m <= fn_last[f] && line[m] !~ /^ \*$/ && line[m] !~ /^ \* @[A-Za-z_]/ &&
               line[m] !~ /^ \* (Context|Return):/) {
            brief = brief " " body(line[m])
            m++
        }
        emit(prose(brief))
        mode = ""
        for (; m <= fn_last[f]; m++) {
            s = body(line[m])
            if (match(s, /^@[A-Za-z_][A-Za-z0-9_]*: /)) {
                endpara()
                emit(".TP")
                emit(".I " substr(s, 2, RLENGTH - 3))
                emit(prose(substr(s, RLENGTH + 1)))
                mode = "arg"
                continue
            }
            if (match(s, /^(Context|Return): /)) {
                endpara()
                emit(".TP")
                emit(".B " substr(s, 1, RLENGTH - 2))
                emit(prose(substr(s, RLENGTH + 1)))
                mode = "section"
                continue
            }
            if (s ~ /^[ \t]*$/) {
                if (mode != "") {
                    emit(".PP")
                    mode = ""
                    continue
                }
                para(s)
                continue
            }
            if (mode != "") {
                sub(/^[ \t]+/, "", s)
                emit(prose(s))
                continue
            }
            para(s)
        }
        endpara()
        for (m = 1; m <= nout; m++)
            if (!(out[m] == ".PP" && (m == nout || out[m + 1] == ".TP" || out[m + 1] == ".PP")))
                print out[m]
    }

    # Definitions: collapse blank runs, drop leading and trailing ones.
    while (ndef > 0 && def[ndef] ~ /^[ \t]*$/)
        ndef--
    for (m = 1; m <= ndef && def[m] ~ /^[ \t]*$/; m++)
        ;
    if (m <= ndef) {
        print ".SH DEFINITIONS"
        print "The types, constants and macros of"
        print ".IR <" header "> ,"
        print "as the header declares them."
        print ".PP"
        print ".RS 4"
        print ".nf"
        blank = 0
        for (; m <= ndef; m++) {
            if (def[m] ~ /^[ \t]*$/) {
                if (!blank)
                    print ""
                blank = 1
                continue
            }
            blank = 0
            print esc(def[m])
        }
        print ".fi"
        print ".RE"
    }
    print ".SH SEE ALSO"
    print ".BR lapict (3)."
    print "The specification the comments cite (docs/spec/) is installed in"
    print ".I share/doc/lapict/spec"
    print "(Debian:"
    print ".IR /usr/share/doc/liblapict-dev/spec )."
}
