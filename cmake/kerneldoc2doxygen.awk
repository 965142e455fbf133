# SPDX-License-Identifier: MIT
# Doxygen INPUT_FILTER for include/lapict/*.h. The headers are written in
# kernel-doc style (STYLE.md); this maps them onto Doxygen commands line for
# line, so that Doxygen's warnings point at the right lines:
#
#   line 2 "/*" (the header's overview)  -> "/** \file": one page per header
#   in "/**" blocks: "name() - text"     -> "\brief text"
#                    "@arg: text"        -> "\param arg text"
#                    "Return: text"      -> "\return text"
#                    "Context: text"     -> "\context text" (a Doxyfile alias)
#                    any other "@name"   -> "\p name" (a parameter)
#   other "/* text" comments             -> "/** text": they document what
#       follows; one before a run of #defines documents the whole run (a
#       member group, DISTRIBUTE_GROUP_DOC)
#   "code; /* text */"                   -> "code; /**< text */"
#   struct lapict_timer and lapict__*    -> body hidden (\cond): private
#   the " */" closing a function's block -> " * \timermd SECTIONS */", the
#       docs/spec/timer.md sections docs/api-rules.md gives for it (-v
# rules=FILE)
#
# A function without a "/**" comment, or a parameter without "@arg:", stays
# undocumented, and Doxygen (WARN_IF_UNDOCUMENTED, WARN_NO_PARAMDOC) warns.
BEGIN {
    # "| lapict_x() | sections |" rows of docs/api-rules.md.
    if (rules != "")
        while ((getline row < rules) > 0)
            if (match(row, /^\| lapict_[a-z0-9_]+\(\) \| /)) {
                fn = substr(row, 3, RLENGTH - 7)
                sections = substr(row, RLENGTH + 1)
                sub(/[ \t]*\|[ \t]*$/, "", sections)
                if (sections !~ /^—/)
                    spec[fn] = sections
            }
}

{ line[NR] = $0 }

function is_define(s) { return s ~ /^#[ \t]*define[ \t]/ }

# Replaces the match of the last match() in s by r (POSIX awk: no gensub).
function put(s, r) { return substr(s, 1, RSTART - 1) r substr(s, RSTART + RLENGTH) }

# Kernel-doc sections and references inside a comment line.
function kdoc(s,    name) {
    if (match(s, /^ \* [A-Za-z_][A-Za-z0-9_]*\(\) - /))
        s = put(s, " * \\brief ")
    else if (match(s, /^ \* struct [A-Za-z_][A-Za-z0-9_]* - /))
        s = put(s, " * \\brief ")
    else if (match(s, /^ \* @[A-Za-z_][A-Za-z0-9_]*: /)) {
        name = substr(s, 5, RLENGTH - 6)
        s = put(s, " * \\param " name " ")
    } else if (match(s, /^ \* Return: /))
        s = put(s, " * \\return ")
    else if (match(s, /^ \* Context: /))
        s = put(s, " * \\context ")
    return refs(s)
}

# "@t" is kernel-doc for parameter t; "#GP" names an exception, not a link.
function refs(s,    res) {
    while (match(s, /@[A-Za-z_]/))
        s = substr(s, 1, RSTART - 1) "\\p " substr(s, RSTART + 1)
    res = ""
    while (match(s, /#[A-Z]/)) {
        res = res substr(s, 1, RSTART - 1) "\\#"
        s = substr(s, RSTART + 1)
    }
    return res s
}

END {
    for (i = 1; i <= NR; i++)
        out[i] = line[i]
    private = 0
    for (i = 2; i <= NR; i++) {
        s = line[i]
        if (s ~ /^struct (lapict_timer|lapict__[a-z0-9_]*) \{$/) {
            out[i] = s " /** \\cond */"
            private = 1
            continue
        }
        if (private && s ~ /^};/) {
            out[i] = "/** \\endcond */ " s
            private = 0
            continue
        }
        if (s ~ /^#/)
            continue
        if (s ~ /^[ \t]*\/\*\*/ || s ~ /^[ \t]*\/\*($|[^*])/) {
            kernel = s ~ /^[ \t]*\/\*\*/
            if (!kernel)
                sub(/\/\*/, "/**", s)
            # The block runs to the line with "*/".
            for (j = i; ; j++) {
                t = (j == i) ? s : line[j]
                out[j] = kernel ? kdoc(t) : refs(t)
                if (t ~ /\*\// || j == NR)
                    break
            }
            # A function's block: the docs/spec/timer.md sections it implements.
            if (kernel && line[j] ~ /^ \*\/$/)
                for (k = j + 1; k <= j + 3 && k <= NR; k++)
                    if (match(line[k], /lapict_[a-z0-9_]+[ \t]*\(/)) {
                        fn = substr(line[k], RSTART, RLENGTH)
                        sub(/[ \t]*\($/, "", fn)
                        if (fn in spec)
                            out[j] = " * \\timermd " spec[fn] " */"
                        break
                    }
            # A run of two or more #defines right after it: one group.
            k = j + 1
            n = 0
            while (k <= NR && is_define(line[k])) {
                while (line[k] ~ /\\$/)
                    k++
                k++
                n++
            }
            if (!kernel && n >= 2) {
                sub(/[ \t]*\*\/[ \t]*$/, " @{ */", out[j])
                if (k <= NR)
                    close_group[k] = 1
                else
                    close_group[NR + 1] = 1
            }
            i = j
            continue
        }
        # A comment after code on the same line documents that code.
        if (match(s, /[;,{][ \t]*\/\*[^*<]/)) {
            RLENGTH--
            out[i] = refs(put(s, substr(s, RSTART, 1) " /**<"))
        }
    }
    # The overview comment after the SPDX line is the header's own.
    name = FILENAME
    sub(/.*\//, "", name)
    if (line[2] ~ /^\/\* .* \*\/$/)
        out[2] = "/** \\file " name " " refs(substr(line[2], 4))
    else if (line[2] ~ /^\/\*$/)
        out[2] = "/** \\file " name
    # A group ends on the line after its run: a blank line becomes the end
    # marker, any other line gets it in front.
    for (i = 1; i <= NR; i++) {
        if (close_group[i] && line[i] ~ /^[ \t]*$/)
            out[i] = "/** @} */"
        else if (close_group[i])
            out[i] = "/** @} */ " out[i]
        if (i == NR && close_group[NR + 1])
            out[i] = out[i] " /** @} */"
        print out[i]
    }
}
