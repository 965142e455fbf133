# SPDX-License-Identifier: MIT
# Sourced by build.sh and stock.sh: the apt sources they add, each in its
# own file under /etc/apt/sources.list.d (lapict-<suite>-<type>.sources),
# for the mirror that bookworm already comes from.

# The mirror of the configured bookworm suite (deb822 or one-line sources).
apt_mirror() {
    local m=
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        m=$(awk '/^URIs:/ { u = $2 }
                 /^Suites:/ && / bookworm( |$)/ { print u; exit }' \
            /etc/apt/sources.list.d/debian.sources)
    fi
    if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
        m=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
            /etc/apt/sources.list)
    fi
    echo "${m:-http://deb.debian.org/debian}"
}

# apt_source TYPE SUITE: a "deb" or "deb-src" entry for SUITE's main
# component (no apt-get update).
apt_source() {
    printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$1" "$(apt_mirror)" "$2" \
        > "/etc/apt/sources.list.d/lapict-$2-$1.sources"
}

# bookworm-backports' binary packages, known to apt. Backports are pinned
# at 100 by their Release file: nothing comes from there unless asked for
# with -t bookworm-backports or an exact version.
apt_backports() {
    if ! apt-cache policy | grep -q ' bookworm-backports/main '; then
        apt_source deb bookworm-backports
        apt-get update -qq
    fi
}
