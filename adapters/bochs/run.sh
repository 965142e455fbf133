#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a multiboot v1 kernel headless under a Bochs built by build.sh or
# stock.sh, instruction-exact: GRUB boots it from a rescue ISO, COM1 goes
# to a file, time follows the instruction count only (clock: sync=none, a
# fixed time0, a fixed ips). The instruction limit is the debugger's time
# breakpoint, which holds where the debugger runs (-dbg: always, but with
# --no-hard-limit), and a wall-clock limit always. Prints the kernel's COM1
# output.
# See README.md.
#
#   adapters/bochs/run.sh [--cpu=MODEL] [--max-ticks=N] [--no-hard-limit]
#                         [--megs=N] [--module=FILE]... [--keep DIR]
#                         [--save=SAVE] BOCHS KERNEL [ARGS...]
#   adapters/bochs/run.sh [--max-ticks=N] [--keep DIR] [--save=SAVE]
#                         --restore=SNAP BOCHS
#
# --save: each time the kernel stops the debugger (iodebug port 0x8A00,
# command 0x8AE0), Bochs's state is saved into SAVE/N, N = 1, 2, ..., and
# the run goes on (snapshot.py); --restore: the run goes on from SNAP, one
# of those, instead of booting.
#
# Exit status: 0 the kernel's last "SUMMARY: ..." line reports no failure:
# "N tests, 0 failures" (mbtest), or kvm-unit-tests' "N tests" with at most
# ", N expected failures" and ", N skipped" after it (with --save: and a
# state was saved);
# 1 it reported failures (or a SUMMARY line of another form), or shut
# Bochs down (port 0x8900) without a SUMMARY line; 2 bad usage
# or a missing package; 124 no SUMMARY line before the instruction limit;
# 125 no SUMMARY line and Bochs stopped otherwise (a panic, a wall-clock
# limit, GRUB unable to boot the kernel).
set -euo pipefail

# One Bochs tick is one retired instruction and the TSC counts ticks: the
# TSC rate is ips ticks per emulated second.
readonly ips=50000000
readonly time0=946684800                # 2000-01-01 00:00:00 UTC
readonly packages=(bochsbios vgabios grub-common grub-pc-bin xorriso mtools)
me=run.sh
here=$(cd "$(dirname -- "$0")" && pwd)
# shellcheck source=adapters/qemu/apt.sh
. "$here/../qemu/apt.sh"

usage() {
    cat <<EOF
usage: adapters/bochs/run.sh [--cpu=MODEL] [--max-ticks=N] [--no-hard-limit]
                             [--megs=N] [--module=FILE]... [--keep DIR]
                             [--save=SAVE] BOCHS KERNEL [ARGS...]
       adapters/bochs/run.sh [--max-ticks=N] [--keep DIR] [--save=SAVE]
                             --restore=SNAP BOCHS

  BOCHS          a bochs binary (build.sh's or stock.sh's OUT/bochs)
  KERNEL         a multiboot v1 kernel; ARGS are its command line words
  --cpu=MODEL    corei7_haswell_4770 (default: x2APIC, TSC-deadline, VMX
                 with the preemption timer) or corei7_skylake_x
  --max-ticks=N  stop after N instructions (default 20000000000), and
                 after N / 20000000 + 60 seconds of wall-clock time
  --no-hard-limit
                 run without Bochs's debugger, about 2.3 times faster, for
                 speed measurements: --max-ticks then does not hold (the
                 debugger's time breakpoint is the instruction limit; with
                 the patched binary it holds through a HLT nothing wakes),
                 only the wall-clock limit
  --megs=N       guest RAM in MiB, 32..2048 (default 128)
  --module=FILE  a multiboot module, its string the file's name
                 (repeatable; lapict-hv takes its guest so)
  --keep DIR     work in DIR and keep the ISO, bochsrc and logs
  --save=SAVE    each time the kernel stops the debugger (iodebug port
                 0x8A00 <- 0x8AE0), save Bochs's state into SAVE/N (N = 1,
                 2, ...) and go on (rfb display, driven by snapshot.py);
                 SAVE must be new or empty
  --restore=SNAP go on from the state in SNAP (SAVE/N of an earlier run)
                 instead of booting; the configuration is SNAP's

Prints the kernel's COM1 output. Exit 0 when its last SUMMARY line reports
no failure ("N tests, 0 failures", or kvm-unit-tests' "N tests" with at
most expected failures and skips), 1 when it reported failures, 2 bad
usage, 124 instruction limit reached, 125 Bochs failed. With --save, 1
also when nothing was saved.
EOF
}

die() {
    echo "$me: $*" >&2
    exit 2
}

# A word GRUB passes unchanged into a multiboot command line (see
# tools/hv/bochs.sh): printable ASCII, no blank, quote, backslash, $ or ;.
grub_word_ok() {
    local LC_ALL=C
    [ -n "$1" ] || return 1
    [[ $1 =~ ^[[:graph:]]+$ ]] || return 1
    [[ $1 != *[\'\"\\\$\;]* ]]
}

cpu_model=corei7_haswell_4770
max_ticks=20000000000
megs=128
keep=
hard_limit=true
save=
restore=
modules=()
while [ $# -gt 0 ]; do
    opt=$1
    case $opt in
    --) shift; break ;;
    -h | --help) usage; exit 0 ;;
    --no-hard-limit) hard_limit=false; shift; continue ;;
    --cpu | --max-ticks | --megs | --module | --keep | --save | --restore)
        [ $# -ge 2 ] || die "$opt needs a value (see --help)"
        val=$2
        shift 2 ;;
    --cpu=* | --max-ticks=* | --megs=* | --module=* | --keep=* | --save=* | \
    --restore=*)
        val=${opt#*=}
        opt=${opt%%=*}
        shift ;;
    -?*) die "unknown option: $opt (see --help)" ;;
    *) break ;;
    esac
    case $opt in
    --cpu)
        case $val in
        corei7_haswell_4770 | corei7_skylake_x) cpu_model=$val ;;
        *) die "--cpu: corei7_haswell_4770 or corei7_skylake_x, not '$val'" ;;
        esac ;;
    --max-ticks)
        [[ $val =~ ^[1-9][0-9]{0,17}$ ]] ||
            die "--max-ticks: a positive integer below 10^18, not '$val'"
        max_ticks=$val ;;
    --megs)
        if ! [[ $val =~ ^[1-9][0-9]{1,3}$ ]] || [ "$val" -lt 32 ] ||
            [ "$val" -gt 2048 ]; then
            die "--megs: an integer in 32..2048, not '$val'"
        fi
        megs=$val ;;
    --module)
        if [ ! -f "$val" ] || [ ! -r "$val" ]; then
            die "--module: not a readable file: $val"
        fi
        grub_word_ok "$(basename -- "$val")" ||
            die "--module: its name would not reach the kernel unchanged: $val"
        modules+=("$val") ;;
    --keep)
        [ -n "$val" ] || die "--keep: needs a directory"
        keep=$val ;;
    --save)
        [ -n "$val" ] || die "--save: needs a directory"
        mkdir -p -- "$val" || die "--save: cannot create $val"
        [ -z "$(ls -A -- "$val")" ] || die "--save: not empty: $val"
        save=$(cd -- "$val" && pwd) ;;
    --restore)
        if [ ! -f "$val/.saved" ] || [ ! -f "$val/boot.iso" ]; then
            die "--restore: not a state saved by run.sh --save: $val"
        fi
        restore=$(cd -- "$val" && pwd) ;;
    esac
done
if [ -n "$restore" ]; then
    [ $# -eq 1 ] || die "--restore takes BOCHS alone (the rest is SNAP's)"
    [ "$restore" != "$save" ] || die "--save and --restore: the same directory"
else
    [ $# -ge 2 ] || { usage >&2; die "missing BOCHS or KERNEL"; }
fi
bochs=$1
shift
if [ ! -f "$bochs" ] || [ ! -x "$bochs" ]; then
    die "BOCHS: not an executable file: $bochs"
fi
bochs=$(cd "$(dirname -- "$bochs")" && pwd)/$(basename -- "$bochs")
kernel=
if [ -z "$restore" ]; then
    kernel=$1
    shift
    if [ ! -f "$kernel" ] || [ ! -r "$kernel" ]; then
        die "KERNEL: not a readable file: $kernel"
    fi
    name=$(basename -- "$kernel")
    for w in "$name" "$@"; do
        grub_word_ok "$w" ||
            die "kernel word '$w' would not reach the kernel unchanged: use" \
                "printable ASCII without blanks, quotes, backslash, \$ or ;"
    done
fi

need=("${packages[@]}")
[ -z "$save$restore" ] || need+=(python3) # snapshot.py
apt_missing "${need[@]}"
if [ ${#apt_missing[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] ||
        die "missing Debian packages: ${apt_missing[*]}; as root run:" \
            "apt-get install -y --no-install-recommends ${need[*]}"
    apt_install_missing "${need[@]}"
fi
if [ -n "$kernel" ]; then
    grub-file --is-x86-multiboot "$kernel" ||
        die "KERNEL: not a multiboot v1 kernel: $kernel"
fi

bochs_pid=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    if [ -n "$bochs_pid" ]; then
        kill -TERM "$bochs_pid" 2>/dev/null || true
        wait "$bochs_pid" 2>/dev/null || true
    fi
    [ -n "$keep" ] || rm -rf "$work"
}
if [ -n "$keep" ]; then
    mkdir -p -- "$keep" || die "--keep: cannot create $keep"
    work=$(cd -- "$keep" && pwd)
    rm -rf "$work/iso" "$work/boot.iso" "$work/com1.out" "$work/bochs.log" \
        "$work/bochs.out"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/lapict-bochs-run.XXXXXX")
fi
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bytes_of() {
    local i
    for ((i = 0; i < ${#1}; i++)); do
        printf '0x%x ' "'${1:i:1}"
    done
}
grub_failed_marker=LAPICT-GRUB-FAILED
if [ -n "$restore" ]; then
    # SNAP's configuration names the ISO relative to the working directory.
    cp -- "$restore/boot.iso" "$work/boot.iso"
else
    mkdir -p "$work/iso/boot/grub"
    cp -- "$kernel" "$work/iso/boot/kernel"
    line="    multiboot /boot/kernel '$name'"
    for w in "$@"; do
        line+=" '$w'"
    done
    {
        echo "set timeout=0"
        echo "set default=0"
        # COM1 at 8N1: its word length is 5 bits after reset, and kernels
        # that only set the baud rate (kvm-unit-tests') would print garbage.
        echo "serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1"
        echo "menuentry 'kernel' {"
        echo "$line"
        i=0
        for m in "${modules[@]}"; do
            cp -- "$m" "$work/iso/boot/module$i"
            echo "    module /boot/module$i '$(basename -- "$m")'"
            i=$((i + 1))
        done
        echo "    boot"
        # Reached only when GRUB could not boot it: a marker on port 0xE9,
        # then Bochs's shutdown port, instead of GRUB's menu until the limit.
        echo "    for b in $(bytes_of "$grub_failed_marker"); do outb 0xe9 \$b; done"
        echo "    for b in $(bytes_of Shutdown); do outb 0x8900 \$b; done"
        echo "}"
    } >"$work/iso/boot/grub/grub.cfg"
    cp "$work/iso/boot/grub/grub.cfg" "$work/grub.cfg"
    if ! grub-mkrescue -o "$work/boot.iso" "$work/iso" >"$work/grub-mkrescue.log" 2>&1; then
        echo "$me: grub-mkrescue failed:" >&2
        tail -n 5 "$work/grub-mkrescue.log" >&2
        exit 125
    fi
    rm -rf "$work/iso"
fi

# Relative paths: a kept DIR reruns as "cd DIR && BOCHS -q -f bochsrc -rc
# bochs.rc". A run that saves its state shows the rfb display (whose
# save/restore button snapshot.py presses; timeout=0: Bochs does not wait
# for a client; no_gui_console: the dialogs and the debugger stay on the
# terminal, not on the VNC screen); a restored run has SNAP's
# configuration, the saving run's.
# nogui's once-a-second "ips =" line is logged from Bochs's SIGALRM
# handler, which takes the log's lock: when the signal lands while the
# guest floods the log (kvm-unit-tests' NMI tests, thousands of APIC
# lines), Bochs deadlocks on that lock. An ignored module never takes it.
display="display_library: nogui"
info="info: action=report, nogui=ignore"
if [ -n "$save" ]; then
    display='display_library: rfb, options="timeout=0, no_gui_console"'
    info="info: action=report"
fi
cat >"$work/bochsrc" <<EOF
# adapters/bochs/run.sh (README.md there)
cpu: model=$cpu_model, count=1, ips=$ips, reset_on_triple_fault=0, ignore_bad_msrs=0
clock: sync=none, time0=$time0, rtc_sync=0
megs: $megs
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/bochs/VGABIOS-lgpl-latest
ata0-master: type=cdrom, path=boot.iso, status=inserted
boot: cdrom
$display
com1: enabled=1, mode=file, dev=com1.out
port_e9_hack: enabled=1
mouse: enabled=0
plugin_ctrl: speaker=0, parallel=0
log: bochs.log
panic: action=fatal
error: action=report
$info
debug: action=ignore
EOF
# Bochs runs 20 million instructions a second or more on any current host.
wall=$((max_ticks / 20000000 + 60))
bochs_rc=0
if [ -n "$save$restore" ]; then
    # snapshot.py answers every stop of the debugger (its "quit" ends the
    # run at the instruction limit).
    printf 'sb %s\nc\n' "$max_ticks" >"$work/bochs.rc"
    args=(-q -dbg -f bochsrc -rc bochs.rc)
    [ -z "$restore" ] || args=(-q -dbg -r "$restore" -rc bochs.rc)
    "$here/snapshot.py" ${save:+"--save=$save"} --wall="$wall" "$work" \
        "$bochs" "${args[@]}" &
else
    printf 'sb %s\nc\nquit\n' "$max_ticks" >"$work/bochs.rc"
    dbg=()
    ! $hard_limit || dbg=(-dbg)
    (cd "$work" && exec timeout -k 10 "$wall" "$bochs" -q "${dbg[@]}" \
        -f bochsrc -rc bochs.rc </dev/null >bochs.out 2>&1) &
fi
bochs_pid=$!
wait "$bochs_pid" || bochs_rc=$?
bochs_pid=

com1=$work/com1.out
[ ! -f "$com1" ] || cat -- "$com1"
summary=
if [ -f "$com1" ]; then
    summary=$(grep -a '^SUMMARY: ' "$com1" | tail -n 1 | tr -d '\r') || true
fi
kept=
[ -z "$keep" ] || kept=" (logs in $work)"
if [ -n "$save" ]; then
    n=0
    for d in "$save"/*/; do
        [ -f "$d.saved" ] || continue
        # For --restore: the ISO that the saved configuration names.
        cp -- "$work/boot.iso" "$d/boot.iso"
        n=$((n + 1))
    done
    echo "$me: $n state(s) saved in $save" >&2
    if [ "$n" -eq 0 ] && [ -n "$summary" ]; then
        echo "$me: the kernel never stopped the debugger: nothing saved$kept" >&2
        exit 1
    fi
fi
if [ -n "$summary" ]; then
    if [[ $summary =~ ^SUMMARY:\ [0-9]+\ tests,\ 0\ failures$ ]] ||
       [[ $summary =~ ^SUMMARY:\ [0-9]+\ tests(,\ [0-9]+\ expected\ failures)?(,\ [0-9]+\ skipped)?$ ]]; then
        exit 0
    fi
    echo "$me: the kernel reported failures: $summary$kept" >&2
    exit 1
fi
if grep -aq "$grub_failed_marker" "$work/bochs.out" 2>/dev/null; then
    echo "$me: no SUMMARY line (GRUB could not boot $kernel)$kept" >&2
    exit 125
fi
if grep -q 'Shutdown port: shutdown requested' "$work/bochs.out" 2>/dev/null; then
    echo "$me: the kernel shut Bochs down without a SUMMARY line$kept" >&2
    exit 1
fi
# The debugger logs the time breakpoint (into bochs.log), and takes it only
# when it runs (-dbg: the --save and --restore runs).
if grep -q 'Caught time breakpoint' "$work/bochs.log" 2>/dev/null; then
    echo "$me: no SUMMARY line (instruction limit $max_ticks reached)$kept" >&2
    exit 124
fi
if [ "$bochs_rc" = 124 ] || [ "$bochs_rc" = 137 ]; then
    why="wall-clock limit of ${wall}s reached"
else
    why=$(grep -A1 'Bochs is exiting with the following message' \
          "$work/bochs.out" 2>/dev/null | tail -n 1) || true
fi
{
    echo "$me: no SUMMARY line (bochs failed: ${why:-no message})$kept"
    echo "$me: last lines of its log:"
    tail -n 5 "$work/bochs.log" 2>/dev/null | sed 's/^/    /' || true
} >&2
exit 125
