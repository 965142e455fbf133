#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run lapict-hv and one guest under Debian 12's Bochs 2.7, tick-exact and
# deterministic: GRUB boots the hypervisor from a rescue ISO, the guest is
# its first multiboot module, COM1 goes to a file. Prints that COM1 output
# (without the hypervisor's "HV-EXIT status=S" line) and exits with S.
# See BOCHS.md beside this file.
#
#   tools/hv/bochs.sh [--hv IMAGE] [--hv-timer=preempt|lapic]
#                     [--advance=off|adaptive] [--vcpus=N] [--max-ticks=N]
#                     [--hv-arg=WORD]... [--keep DIR] GUEST [GUEST ARGS...]
#
# Exit status: S of the HV-EXIT line; 2 bad usage or a missing package;
# 124 the instruction limit was reached first; 125 Bochs failed otherwise.
set -euo pipefail

# The emulated machine. One Bochs tick is one retired instruction and the
# TSC counts ticks, so the TSC rate is ips ticks per emulated second; with
# sync=none and a fixed time0 nothing depends on the host's clock.
# VMX + preemption timer, x2APIC, TSC-deadline; no VMX TSC scaling (the
# models skylake_x and tigerlake have it: --cpu).
cpu_model=corei7_haswell_4770
readonly ips=50000000
readonly tsc_khz=$((ips / 1000))
readonly time0=946684800                # 2000-01-01 00:00:00 UTC
# RAM: lapict-hv below 64 MiB, then 64 MiB per vCPU (tools/hv/hv.h).
readonly megs_base=128 megs_per_vcpu=64
# bochs needs a GUI plugin package; bochs-term is the smallest one (the
# run itself uses the rfb display built into bochs).
readonly packages=(bochs bochs-term bochsbios vgabios grub-common grub-pc-bin
                   xorriso mtools)

me=bochs.sh
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=adapters/qemu/apt.sh
. "$repo/adapters/qemu/apt.sh"

usage() {
    cat <<EOF
usage: tools/hv/bochs.sh [--hv IMAGE] [--hv-timer=preempt|lapic]
                         [--advance=off|adaptive] [--vcpus=N] [--max-ticks=N]
                         [--hv-arg=WORD]... [--cpu=MODEL] [--keep DIR]
                         GUEST [GUEST ARGS...]

  --hv IMAGE          the hypervisor (default: build/bin/lapict-hv of the repo)
  --hv-timer=T        preempt (VMX-preemption timer, default) or lapic
  --advance=A         off (default) or adaptive
  --vcpus=N           guest vCPUs, 1..16 (default 1)
  --max-ticks=N       stop Bochs after N instructions (default 20000000000)
  --hv-arg=WORD       one more word for lapict-hv's command line, e.g.
                      half=odd, advance_max_ns=N, bus_khz=N (repeatable)
  --cpu=MODEL         Bochs's CPU model: corei7_haswell_4770 (default),
                      corei7_skylake_x or tigerlake (these two have VMX TSC
                      scaling, which half=odd then uses)
  --keep DIR          work in DIR and keep the ISO, bochsrc, rc file and logs

Prints the guest's COM1 output and exits with the status of the
hypervisor's HV-EXIT line; 2 bad usage, 124 instruction limit reached,
125 Bochs failed.
EOF
}

die() {
    echo "$me: $*" >&2
    exit 2
}

# A word GRUB passes through unchanged into a multiboot command line:
# printable ASCII, no blank, none of the characters its lexer or
# grub_create_loader_cmdline() treats specially (quotes and backslash get
# escaped, $ expands, ; separates commands). Words are single-quoted in
# grub.cfg, so { } | & < > # are literal.
grub_word_ok() {
    local LC_ALL=C
    [ -n "$1" ] || return 1
    [[ $1 =~ ^[[:graph:]]+$ ]] || return 1
    [[ $1 != *[\'\"\\\$\;]* ]]
}

readable_file() {
    if [ ! -f "$2" ] || [ ! -r "$2" ]; then
        die "$1: not a readable file: $2"
    fi
}

hv=$repo/build/bin/lapict-hv
hv_given=0
hv_timer=preempt
advance=off
vcpus=1
max_ticks=20000000000
keep=
hv_args=()

while [ $# -gt 0 ]; do
    opt=$1
    case $opt in
    --) shift; break ;;
    -h | --help) usage; exit 0 ;;
    --hv | --hv-timer | --advance | --vcpus | --max-ticks | --hv-arg | --cpu | \
        --keep)
        [ $# -ge 2 ] || die "$opt needs a value (see --help)"
        val=$2
        shift 2 ;;
    --hv=* | --hv-timer=* | --advance=* | --vcpus=* | --max-ticks=* | \
        --hv-arg=* | --cpu=* | --keep=*)
        val=${opt#*=}
        opt=${opt%%=*}
        shift ;;
    -?*) die "unknown option: $opt (see --help)" ;;
    *) break ;;
    esac
    case $opt in
    --hv) hv=$val; hv_given=1 ;;
    --hv-timer)
        case $val in
        preempt | lapic) hv_timer=$val ;;
        *) die "--hv-timer: preempt or lapic, not '$val'" ;;
        esac ;;
    --advance)
        case $val in
        off | adaptive) advance=$val ;;
        *) die "--advance: off or adaptive, not '$val'" ;;
        esac ;;
    --vcpus)
        if ! [[ $val =~ ^[1-9][0-9]?$ ]] || [ "$val" -gt 16 ]; then
            die "--vcpus: an integer in 1..16, not '$val'"
        fi
        vcpus=$val ;;
    --max-ticks)
        # Below 10^18: bash's 64-bit arithmetic stays exact.
        [[ $val =~ ^[1-9][0-9]{0,17}$ ]] ||
            die "--max-ticks: a positive integer below 10^18, not '$val'"
        max_ticks=$val ;;
    --hv-arg)
        # key=value, as lapict-hv's command line takes (it checks them).
        [[ $val =~ ^[a-z_]+=[a-z0-9_]+$ ]] ||
            die "--hv-arg: a key=value word, not '$val'"
        hv_args+=("$val") ;;
    --cpu)
        case $val in
        corei7_haswell_4770 | corei7_skylake_x | tigerlake) cpu_model=$val ;;
        *) die "--cpu: corei7_haswell_4770, corei7_skylake_x or tigerlake, not '$val'" ;;
        esac ;;
    --keep)
        [ -n "$val" ] || die "--keep: needs a directory"
        keep=$val ;;
    esac
done

[ $# -ge 1 ] || { usage >&2; die "missing GUEST"; }
guest=$1
shift
guest_args=("$@")

if [ "$hv_given" = 0 ] && [ ! -e "$hv" ]; then
    die "no hypervisor image: $hv is not built (build lapict-hv or pass --hv IMAGE)"
fi
readable_file --hv "$hv"
readable_file GUEST "$guest"
name=$(basename -- "$guest")
for w in "$name" "${guest_args[@]}"; do
    grub_word_ok "$w" ||
        die "guest word '$w' would not reach the guest unchanged: use printable" \
            "ASCII without blanks, quotes, backslash, \$ or ;"
done
env_file=${LAPICT_HV_ENV:-}
if [ -n "$env_file" ]; then
    readable_file LAPICT_HV_ENV "$env_file"
fi

# Debian's own Bochs binary: its tick counts are what the tests compare.
apt_missing "${packages[@]}"
if [ ${#apt_missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        die "missing Debian packages: ${apt_missing[*]}; as root run:" \
            "apt-get install -y --no-install-recommends ${packages[*]}"
    fi
    apt_install_missing "${packages[@]}"
fi
grub-file --is-x86-multiboot "$hv" || die "--hv: not a multiboot v1 kernel: $hv"

# The work directory: private and removed at exit, or --keep's.
bochs_pid=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    if [ -n "$bochs_pid" ]; then
        kill -TERM "$bochs_pid" 2>/dev/null || true
        wait "$bochs_pid" 2>/dev/null || true
    fi
    if [ -z "$keep" ]; then
        rm -rf "$work"
    fi
}
if [ -n "$keep" ]; then
    mkdir -p -- "$keep" || die "--keep: cannot create $keep"
    work=$(cd -- "$keep" && pwd)
    [ -w "$work" ] || die "--keep: not writable: $keep"
    rm -rf "$work/iso" "$work/hv.iso" "$work/com1.out" "$work/bochs.log" \
        "$work/bochs.out"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/lapict-bochs.XXXXXX")
fi
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The ISO: grub.cfg boots lapict-hv with its options; the guest is the
# first module, its string the guest's command line (argv[0] first), the
# environment file the second.
mkdir -p "$work/iso/boot/grub"
cp -- "$hv" "$work/iso/boot/lapict-hv"
cp -- "$guest" "$work/iso/boot/guest"
bytes_of() {
    local i
    for ((i = 0; i < ${#1}; i++)); do
        printf '0x%x ' "'${1:i:1}"
    done
}
grub_failed_marker="LAPICT-GRUB-FAILED"
read -ra grub_failed_bytes <<<"$(bytes_of "$grub_failed_marker")"
read -ra shutdown_bytes <<<"$(bytes_of Shutdown)"
module="    module /boot/guest '$name'"
for w in "${guest_args[@]}"; do
    module+=" '$w'"
done
{
    echo "set timeout=0"
    echo "set default=0"
    echo "menuentry 'lapict-hv' {"
    echo "    multiboot /boot/lapict-hv lapict-hv hv_timer=$hv_timer" \
         "advance=$advance vcpus=$vcpus tsc_khz=$tsc_khz" "${hv_args[@]}"
    echo "$module"
    if [ -n "$env_file" ]; then
        cp -- "$env_file" "$work/iso/boot/env"
        echo "    module /boot/env env"
    fi
    echo "    boot"
    # Reached only when GRUB could not boot it: a marker on port 0xE9
    # (Bochs's console log), then Bochs's shutdown port, instead of
    # GRUB's menu until the instruction limit.
    echo "    echo 'bochs.sh: GRUB could not boot lapict-hv'"
    echo "    for b in ${grub_failed_bytes[*]}; do outb 0xe9 \$b; done"
    echo "    for b in ${shutdown_bytes[*]}; do outb 0x8900 \$b; done"
    echo "}"
} >"$work/iso/boot/grub/grub.cfg"
cp "$work/iso/boot/grub/grub.cfg" "$work/grub.cfg"
if ! grub-mkrescue -o "$work/hv.iso" "$work/iso" >"$work/grub-mkrescue.log" 2>&1; then
    echo "$me: grub-mkrescue failed:" >&2
    tail -n 5 "$work/grub-mkrescue.log" >&2
    exit 125
fi
rm -rf "$work/iso"

# Paths relative to the work directory, so a kept one reruns as
# "cd DIR && bochs -q -f bochsrc -rc bochs.rc".
cat >"$work/bochsrc" <<EOF
# lapict-hv under Bochs 2.7: tools/hv/bochs.sh, see tools/hv/BOCHS.md
cpu: model=$cpu_model, count=1, ips=$ips, reset_on_triple_fault=0, ignore_bad_msrs=0
clock: sync=none, time0=$time0, rtc_sync=0
megs: $((megs_base + megs_per_vcpu * vcpus))
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/bochs/VGABIOS-lgpl-latest
ata0-master: type=cdrom, path=hv.iso, status=inserted
boot: cdrom
display_library: rfb, options="timeout=0"
com1: enabled=1, mode=file, dev=com1.out
port_e9_hack: enabled=1
mouse: enabled=0
plugin_ctrl: speaker=0, gameport=0, parallel=0
log: bochs.log
panic: action=fatal
error: action=report
info: action=report
debug: action=ignore
EOF
printf 'sb %s\nc\nquit\n' "$max_ticks" >"$work/bochs.rc"

# Bochs's rfb display listens on the first free TCP port of 5900-5949, on
# every address, and panics when none is free: in a network namespace of
# its own it is reachable from nowhere and collides with nothing.
netns=()
if unshare --net true 2>/dev/null; then
    netns=(unshare --net)
elif unshare --user --map-root-user --net true 2>/dev/null; then
    netns=(unshare --user --map-root-user --net)
fi
wall=$((max_ticks / 20000000 + 60))
bochs_rc=0
(cd "$work" && exec timeout -k 10 "$wall" "${netns[@]}" \
    bochs -q -f bochsrc -rc bochs.rc </dev/null >bochs.out 2>&1) &
bochs_pid=$!
wait "$bochs_pid" || bochs_rc=$?
bochs_pid=

# The guest's output; the hypervisor's control lines stay out of it.
com1=$work/com1.out
if [ -f "$com1" ]; then
    grep -av '^HV-EXIT ' "$com1" || true
fi
exit_line=
if [ -f "$com1" ]; then
    exit_line=$(grep -a '^HV-EXIT ' "$com1" | tail -n 1 | tr -d '\r') || true
fi
kept=
[ -z "$keep" ] || kept=" (logs in $work)"
if [ -n "$exit_line" ]; then
    if [[ $exit_line =~ ^HV-EXIT\ status=([0-9]{1,3})([[:space:]]|$) ]] &&
        [ "${BASH_REMATCH[1]}" -le 255 ]; then
        exit $((10#${BASH_REMATCH[1]}))
    fi
    echo "$me: malformed HV-EXIT line: $exit_line$kept" >&2
    exit 125
fi
if grep -aq "$grub_failed_marker" "$work/bochs.out" 2>/dev/null; then
    echo "$me: the hypervisor never reported (bochs failed: GRUB could not" \
         "boot $hv as a multiboot kernel with its module)$kept" >&2
    exit 125
fi
if grep -q 'Caught time breakpoint' "$work/bochs.out" 2>/dev/null; then
    echo "$me: the hypervisor never reported (instruction limit $max_ticks" \
         "reached)$kept" >&2
    exit 124
fi
if [ "$bochs_rc" = 124 ] || [ "$bochs_rc" = 137 ]; then
    why="wall-clock limit of ${wall}s reached"
else
    why=$(grep -A1 'Bochs is exiting with the following message' \
          "$work/bochs.out" 2>/dev/null | tail -n 1) || true
fi
{
    echo "$me: the hypervisor never reported (bochs failed: ${why:-no message})$kept"
    echo "$me: last lines of its log:"
    tail -n 5 "$work/bochs.log" 2>/dev/null | sed 's/^/    /' || true
} >&2
exit 125
