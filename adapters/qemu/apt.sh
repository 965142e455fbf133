# SPDX-License-Identifier: MIT
# Sourced by the scripts that install Debian packages (QEMU's and Bochs's
# build.sh and stock.sh, adapters/bochs/run.sh, tools/hv/bochs.sh): the apt
# sources they add, each in its own file under /etc/apt/sources.list.d
# (lapict-<suite>-<type>.sources), for the mirror that bookworm already
# comes from, and an install that runs side by side with itself.

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

# apt_missing PKG...: those of PKG not installed, in the array apt_missing.
apt_missing() {
    local p
    apt_missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' ||
            apt_missing+=("$p")
    done
}

# apt_install_missing PKG...: installs those of PKG not installed, as
# root; the caller has found some missing with apt_missing (and told a
# user who is not root what to run). Runs started side by side
# (ci/test-hv.sh starts each pair so) would race for apt's own lock and
# the loser would fail: under this lock one installs and the others wait,
# then find the packages there.
apt_install_missing() {
    mkdir -p /run/lock
    (
        flock 9
        apt_missing "$@"
        [ ${#apt_missing[@]} -gt 0 ] || exit 0
        echo "installing ${apt_missing[*]} (apt-get)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends "${apt_missing[@]}" >&2
    ) 9>/run/lock/lapict-apt-install.lock
}
