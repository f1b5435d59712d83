#!/usr/bin/env bash
# The kernel adapter path, tested for real: boots Debian's own kernel under
# qemu (TCG) with a small initramfs and runs the guest cases in Tests/VM/cases
# against a real Linux Bluetooth stack: libbluetooth's lookup, hciN, the HCI
# user channel, BlueZ's btvirt, and a vhci <-> virtio-serial bridge that puts
# the guest's adapter on the host's simulated radio (Tests/Radio/radio.py).
#
#   Tests/VM/run.sh             every case
#   Tests/VM/run.sh BOOT...     only these boots (kernel, radio, agent-radio)
#
# Each guest case reports `CASE <name> PASS|FAIL <seconds>` on the console;
# a failure is followed by the case's log and the kernel log. This script
# prints a summary and exits non-zero if any case failed or never reported.
# Installs what it needs (quietly when present) and caches the extracted
# kernel and the compiled helpers in Tests/VM/cache (gitignored).
#
# Environment: BATON_BIN (default .build/debug/baton), VM_MEMORY (MB, default
# computed from the image size), VM_KEEP=1 keeps the work folder, VM_VERBOSE=1
# shows every case's log. Each boot's console is also kept in
# Tests/VM/cache/last-run/. VM_CASES=a,b replaces the kernel boot's cases.
# VM_SCAN_STEADY (s, default 130): agent-bluez-scan's idle, measured period;
# VM_PRIVACY_STEADY (s, default 200): agent-bluez-privacy's. VM_REACH_SAMPLES
# (default 7) and VM_REACH_BOUND (s, default 40): agent-bluez-reach's samples
# and its bound on a newcomer's first link. VM_SCANNING=MODE: every guest
# agent runs with `scanning = MODE`. VM_STRANGERS=N (default 0) devices that
# are not peers on the agent-bluez-radio boot's radio, and VM_BRIDGE_STEADY
# (s, default 0) its linked guest agent's measured idle period.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache="$here/cache"
mkdir -p "$cache/bin"
started=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }

# --- what the host needs ------------------------------------------------------
packages=(qemu-system-x86 cpio kmod busybox-static bluez-test-tools bluez gcc libc6-dev
  dbus-daemon dbus-bin dbus-system-bus-common systemd libcap2-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "vm: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

kernel=$("$here/kernel.sh")
kver=$(cat "$kernel/kernel-version")

# --- helpers built for the guest (cached; rebuilt when their sources change) --
newer() { # newer TARGET SOURCE...: true when TARGET is missing or older than a source
  local target=$1; shift
  [ -e "$target" ] || return 0
  for s in "$@"; do [ "$s" -nt "$target" ] && return 0; done
  return 1
}
if newer "$cache/bin/vhci-bridge" "$here/vhci-bridge.c"; then
  gcc -static -O2 -Wall -Werror -o "$cache/bin/vhci-bridge" "$here/vhci-bridge.c"
fi
# hci-probe is compiled, as one module, from baton's own transport sources (and
# the BatonSystem files they use), so the guest runs exactly baton's code for the
# kernel path; their imports of baton's modules are dropped (all is one module here).
system="$top/Sources/BatonSystem"
transport="$top/Sources/BatonHCI/Transport"
# The C shims they use (FileDescriptor's syncfs, Socket's accept4) come
# along: compiled as SwiftPM does (Package.swift: _GNU_SOURCE), with a
# module map naming only their headers.
shims="$top/Sources/CBatonShims"
probe_shims=(file socket)
probe_sources=("$system"/{Errno,FileDescriptor,Logger,PollLoop,Socket,Syscalls,String+DisplayEscaping,SandboxFacts}.swift
  "$transport"/{HCITransport,HCIUserChannelTransport,HCIUserChannelError}.swift
  "$here/hci-probe/main.swift")
for c in "${probe_shims[@]}"; do probe_sources+=("$shims/$c.c" "$shims/include/baton_$c.h"); done
if newer "$cache/bin/hci-probe" "${probe_sources[@]}"; then
  echo "vm: compiling hci-probe" >&2
  probe_src="$cache/hci-probe-src"
  rm -rf "$probe_src" && mkdir -p "$probe_src/shims"
  for f in "${probe_sources[@]}"; do
    case "$f" in *.swift) sed '/^import Baton/d' "$f" >"$probe_src/${f##*/}" ;; esac
  done
  { echo 'module CBatonShims {'
    for c in "${probe_shims[@]}"; do echo "  header \"$shims/include/baton_$c.h\""; done
    printf '  export *\n}\n'
  } >"$probe_src/shims/module.modulemap"
  for c in "${probe_shims[@]}"; do
    gcc -O2 -Wall -Werror -D_GNU_SOURCE -I "$shims/include" -c "$shims/$c.c" \
      -o "$probe_src/shims/$c.o"
  done
  swiftc ${VM_PROBE_OPT:--O} -swift-version 6 -static-stdlib -I "$top/Sources/CBluetooth" \
    -I "$probe_src/shims" -package-name baton -module-cache-path "$cache/module-cache" \
    "$probe_src"/*.swift "$probe_src"/shims/*.o -o "$cache/bin/hci-probe"
fi

# --- the baton binary ------------------------------------------------------------
baton=${BATON_BIN:-$top/.build/debug/baton}
[ -x "$baton" ] || { echo "vm: no baton binary at $baton; run 'swift build' first" >&2; exit 1; }
has_agent=1
# The BlueZ backend's agent cases (`controller = bluez`) run when this baton
# has the backend ('baton agent --help' mentions bluez; VM_FORCE_BLUEZ=1 runs
# them regardless). VM_BLUEZ_AGENTS=0 skips them: each is then reported
# NOT-RUN, never PASS; VM_REQUIRE_BLUEZ=1 makes a case not run a failure.
if [ "${VM_FORCE_BLUEZ:-0}" = 1 ] ||
  { [ "${VM_BLUEZ_AGENTS:-1}" = 1 ] && "$baton" agent --help 2>&1 | grep -i bluez >/dev/null; }; then
  has_bluez=1
else
  has_bluez=0
fi
bluez_kernel_cases=agent-bluez-btvirt,agent-bluez-pair,agent-bluez-user,agent-bluez-errors,agent-bluez-scan,agent-bluez-monitor,agent-bluez-autoconnect,agent-bluez-privacy,agent-bluez-reach,agent-unit-hardened
not_run() { # not_run CASE...: reported, never as passed
  local why="skipped: VM_BLUEZ_AGENTS=0"
  "$baton" agent --help 2>&1 | grep -i bluez >/dev/null ||
    why="this baton has no BlueZ backend: 'baton agent --help' does not mention bluez"
  for c in "$@"; do
    if [ "${VM_REQUIRE_BLUEZ:-0}" = 1 ]; then
      echo "CASE $c FAIL (not run: $why; VM_REQUIRE_BLUEZ=1)"
    else
      echo "CASE $c NOT-RUN ($why)"
    fi
  done
}

# --- the initramfs ------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-vm.XXXXXX")
cleanup() {
  for pid in ${pids:-}; do kill "$pid" 2>/dev/null || true; done
  [ "${VM_KEEP:-0}" = 1 ] && echo "vm: kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
pids=""
root="$work/root"
mkdir -p "$root"/{bin,usr/bin,etc,lib,lib64,cases,proc,sys,dev,run,tmp}
cp /bin/busybox "$root/bin/busybox"
cp "$here/init" "$root/init"
chmod 755 "$root/init"
cp -a "$kernel/lib/modules" "$root/lib/"
cp "$kernel/modules" "$root/etc/vm-modules"
cp "$here"/cases/*.sh "$root/cases/"
# messagebus runs the system bus; baton (in group bluetooth) and nobody (not)
# are the unprivileged users of the BlueZ cases.
cat >"$root/etc/passwd" <<'EOT'
root:x:0:0:root:/root:/bin/sh
messagebus:x:100:101::/nonexistent:/bin/false
baton:x:1000:1000:baton:/home/baton:/bin/sh
nobody:x:65534:65534:nobody:/:/bin/false
EOT
cat >"$root/etc/group" <<'EOT'
root:x:0:
messagebus:x:101:
bluetooth:x:102:baton
baton:x:1000:
nogroup:x:65534:
EOT
printf 'passwd: files\ngroup: files\n' >"$root/etc/nsswitch.conf"
mkdir -p "$root/home/baton" && chown 1000:1000 "$root/home/baton" 2>/dev/null || true

# install_binary PATH [DEST]: the binary plus every shared library ldd lists.
install_binary() {
  local bin=$1 dest=${2:-/usr/bin/$(basename "$1")}
  cp "$bin" "$root$dest"
  strip --strip-debug "$root$dest" 2>/dev/null || true
  { ldd "$bin" 2>/dev/null || true; } | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | while read -r lib; do
    [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
  done
}
install_binary "$cache/bin/vhci-bridge"
install_binary "$cache/bin/hci-probe"
install_binary /usr/bin/btvirt
install_binary /usr/bin/btmgmt
# The system's Bluetooth stack, from Debian's packages (dbus 1.14, bluez 5.66):
# the system bus with Debian's system.conf and BlueZ's policy (kept aside as
# bluetooth.conf.debian: a case may install a restricted variant), bluetoothd
# with its main.conf, and the clients the cases use.
mkdir -p "$root"/usr/libexec/bluetooth "$root"/usr/share/dbus-1 "$root"/etc/dbus-1/system.d \
  "$root"/etc/bluetooth "$root"/var/lib/bluetooth "$root"/run/dbus
for b in /usr/bin/dbus-daemon /usr/bin/dbus-send /usr/libexec/bluetooth/bluetoothd \
  /usr/bin/bluetoothctl /usr/bin/btmon /usr/bin/l2test; do
  install_binary "$b" "$b"
done
cp /usr/share/dbus-1/system.conf "$root/usr/share/dbus-1/"
cp /etc/dbus-1/system.d/bluetooth.conf "$root/etc/bluetooth.conf.debian"
cp /etc/bluetooth/main.conf "$root/etc/bluetooth/"
cp /etc/bluetooth/main.conf "$root/etc/bluetooth/main.conf.stock"
printf '%s\n' 5eb1e00b5eb1e00b5eb1e00b5eb1e00b >"$root/etc/machine-id"
if [ -x "$baton" ]; then
  install_binary "$baton" /usr/bin/baton
  # baton opens libsystemd (for D-Bus) with dlopen, which ldd does not list:
  # the library and what it needs.
  libsystemd=$(/sbin/ldconfig -p | awk '/libsystemd\.so\.0 / && !found {print $NF; found = 1}')
  install_binary "$libsystemd" "$libsystemd"
  [ "$has_agent" = 1 ] && touch "$root/etc/baton-has-agent"
  [ "$has_bluez" = 1 ] && touch "$root/etc/baton-has-bluez"
  "$baton" keygen >"$work/baton.key"
  chmod 600 "$work/baton.key"
  cp "$work/baton.key" "$root/etc/baton.key"
  mkdir -p "$root/cases/data"
  cp "$here"/cases/data/* "$root/cases/data/" 2>/dev/null || true
  # The shipped user unit, for the agent-unit cases.
  cp "$top/Config/baton.service" "$root/cases/data/"
fi
# A systemd user manager (Debian's systemd 252) for the agent-unit cases:
# the manager, systemctl, systemd-run, systemd-analyze, setcap (libcap2-bin, for
# agent-unit-setcap) and their libraries, and the user
# units the manager starts with (the targets and slices; not the .wants
# folders, which would pull in a session bus).
mkdir -p "$root/lib/systemd" "$root/usr/sbin"
for b in /lib/systemd/systemd /usr/bin/systemctl /usr/bin/systemd-run /usr/bin/systemd-analyze /usr/sbin/setcap; do
  install_binary "$b" "$b"
done
mkdir -p "$root/usr/lib/systemd/user"
cp /usr/lib/systemd/user/*.target /usr/lib/systemd/user/*.slice "$root/usr/lib/systemd/user/"
# The loader's search path for the copied libraries (init exports it as
# LD_LIBRARY_PATH: `ldconfig -r` would need root).
(cd "$root" && find . -name '*.so*' -printf '/%h\n' | sed 's|^/\./|/|' | sort -u) >"$root/etc/ld.so.conf"
image="$work/initramfs.cpio"
(cd "$root" && find . | cpio -o -H newc --quiet) >"$image"
image_mb=$(($(stat -c %s "$image") / 1048576 + 1))
root_mb=$(($(du -sm "$root" | cut -f1) + 1))
# The initrd stays in RAM while it is unpacked next to itself, and the root
# tmpfs may fill only half of the RAM.
memory=${VM_MEMORY:-$((128 + 2 * root_mb + image_mb))}
echo "vm: kernel $kver, initramfs ${image_mb} MB (${root_mb} MB unpacked), guest RAM ${memory} MB, prepared in $(elapsed "$started") s" >&2

# --- boots --------------------------------------------------------------------
results="$work/results"
: >"$results"

# boot NAME CASES [QEMU ARGS...]: one VM run; appends "CASE name PASS|FAIL s" lines.
boot() {
  local name=$1 cases=$2; shift 2
  local console="$work/console-$name.log" t0
  t0=$(date +%s.%N)
  set +e
  timeout "${BOOT_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg -m "$memory" -smp 1 \
    -kernel "$kernel/vmlinux" -initrd "$image" \
    -nographic -no-reboot -nodefaults -serial stdio \
    -append "console=ttyS0 quiet panic=-1 no_timer_check baton.cases=$cases baton.verbose=${VM_VERBOSE:-0} CASE_TIMEOUT=${CASE_TIMEOUT:-60}${CASE_TIMEOUTS:+ CASE_TIMEOUTS=$CASE_TIMEOUTS}${BOOT_APPEND:+ $BOOT_APPEND}" "$@" </dev/null >"$console" 2>&1
  local rc=$?
  set -e
  tr -d '\r' <"$console" >"$console.txt"
  mkdir -p "$cache/last-run"
  cp "$console.txt" "$cache/last-run/console-$name.log"
  [ "${VM_VERBOSE:-0}" = 1 ] && { grep -E "^  [a-z-]+: " "$console.txt" >&2 || true; }
  local boot_time
  boot_time=$(awk '/VM-INIT/ {print $NF}' "$console.txt")
  echo "vm: boot $name: qemu exit $rc after $(elapsed "$t0") s; guest init at ${boot_time:-?} s, modules loaded at $(awk '/^VM-MODULES/ {print $2}' "$console.txt") s" >&2
  local shown=0
  for c in ${cases//,/ }; do
    local line
    line=$(grep -m1 "^CASE $c " "$console.txt" || true)
    if [ -z "$line" ]; then
      echo "CASE $c FAIL (never reported; see the console of boot $name)" >>"$results"
      [ $shown = 1 ] || { echo "----- console of boot $name -----"; tail -60 "$console.txt"; } \
        | tee -a "$work/failures" >&2
      shown=1
    else
      echo "$line" >>"$results"
      if [[ $line == *FAIL* ]]; then
        sed -n "/^----- log of $c -----/,/^----- end of $c -----/p" "$console.txt" \
          | tail -80 | tee -a "$work/failures" >&2
      fi
    fi
  done
  grep "^VM-MODULE-FAILED" "$console.txt" >&2 || true
  grep "^NOTE-LATENCY" "$console.txt" >>"$work/latency" || true
  grep "^NOTE-AUTOCONNECT" "$console.txt" >>"$work/autoconnect" || true
  grep "^REACH agent-bluez-reach" "$console.txt" >>"$work/reach" || true
  grep -E "^NOTE-(CPU|THREADS)" "$console.txt" >>"$work/cpu" || true
  check_btsnoop "$console.txt"
  return 0
}

# check_btsnoop CONSOLE: each HCI log the guest dumped (base64 between
# BTSNOOP-BEGIN NAME and BTSNOOP-END) must decode cleanly with btmon.
check_btsnoop() {
  local names
  names=$(awk '/^BTSNOOP-BEGIN/ {print $2}' "$1")
  for n in $names; do
    awk -v n="$n" '$0 == "BTSNOOP-BEGIN " n {on=1; next} /^BTSNOOP-END/ {on=0} on' "$1" \
      | grep -E '^[A-Za-z0-9+/=]+$' | base64 -d >"$work/$n" 2>/dev/null || true
    local decoded="$work/$n.txt" packets rc=0 note=""
    { btmon -r "$work/$n" >"$decoded" 2>&1; } 2>/dev/null || rc=$?
    if [ "$rc" -ge 128 ]; then
      # btmon 5.66 dies on bluetoothd's ATT traffic in a file read where
      # hciN does not exist (scan-timeline.py says why): the rest of the
      # log still has to decode cleanly, without the data packets.
      note=", without ACL data: btmon crashed on it (status $rc)"
      rc=0
      python3 "$here/scan-timeline.py" --strip-data "$work/$n" "$work/$n.no-data" >/dev/null || rc=1
      { btmon -r "$work/$n.no-data" >"$decoded" 2>&1; } 2>/dev/null || rc=$?
    fi
    if [ "$rc" = 0 ] \
      && ! grep -qiE "malformed|invalid (size|length|packet)|too short|unknown packet" "$decoded"; then
      packets=$(grep -cE "^[<>@=] " "$decoded" || true)
      echo "CASE btsnoop-${n%.btsnoop} PASS ($packets packets decoded by btmon$note)" >>"$results"
    else
      echo "CASE btsnoop-${n%.btsnoop} FAIL (btmon exit status $rc$note)" >>"$results"
      grep -iE -B3 "malformed|invalid (size|length|packet)|too short|unknown packet" "$decoded" | head -40 >&2
    fi
  done
}

# scan_duty: the host's half of agent-bluez-scan. Its recording (extracted by
# check_btsnoop) gives hci0's scan timeline over the steady period: duty at
# most 5 % and no scan over 3 s, or FAIL; the beacon's addresses and
# advertising types as FACT lines (no condition on them yet).
scan_duty() {
  local log="$work/agent-bluez-scan.btsnoop" out="$work/scan-duty.out"
  if [ ! -s "$log" ]; then
    echo "CASE scan-duty FAIL (no recording from agent-bluez-scan)" >>"$results"
    return 0
  fi
  if python3 "$here/scan-timeline.py" --index 0 --max-duty 5 --max-scan 3 --closed "$log" >"$out" 2>&1; then
    echo "CASE scan-duty PASS ($(sed -n 's/^RESULT //p' "$out"))" >>"$results"
  else
    echo "CASE scan-duty FAIL ($(sed -n 's/^RESULT //p' "$out"))" >>"$results"
    cat "$out" >&2
  fi
  grep "^FACT" "$out" | sed 's/^/vm: agent-bluez-scan: /' >&2 || true
}

# monitor_passive: the host's half of agent-bluez-monitor. Its recording
# (extracted by check_btsnoop) must show no mgmt discovery command and no
# active scan on any adapter, only the kernel's passive scan, or FAIL; the
# scan parameters as FACT lines.
monitor_passive() {
  local log="$work/agent-bluez-monitor.btsnoop" out="$work/monitor-passive.out"
  if [ ! -s "$log" ]; then
    echo "CASE monitor-passive FAIL (no recording from agent-bluez-monitor)" >>"$results"
    return 0
  fi
  if python3 "$here/scan-timeline.py" --index 0 --burst 0 --no-discovery "$log" >"$out" 2>&1; then
    echo "CASE monitor-passive PASS ($(sed -n 's/^RESULT //p' "$out"))" >>"$results"
  else
    echo "CASE monitor-passive FAIL ($(sed -n 's/^RESULT //p' "$out"))" >>"$results"
    cat "$out" >&2
  fi
  grep "^FACT" "$out" | grep -i "scan\|discovery" | sed 's/^/vm: agent-bluez-monitor: /' >&2 || true
}

# privacy_seals: the host's half of agent-bluez-privacy. Its recording gives
# every adapter's advertising intervals, each with its seal (the 24 bytes
# after the beacon header) and its address: FAIL when one seal went out
# under two addresses (or no seal at all was advertised); the counts as
# FACT lines.
privacy_seals() {
  local log="$work/agent-bluez-privacy.btsnoop" out="$work/privacy-seals.out"
  if [ ! -s "$log" ]; then
    echo "CASE privacy-seals FAIL (no recording from agent-bluez-privacy)" >>"$results"
    return 0
  fi
  if python3 "$here/scan-timeline.py" --seals "$log" >"$out" 2>&1; then
    echo "CASE privacy-seals PASS ($(sed -n 's/^RESULT //p' "$out"))" >>"$results"
  else
    echo "CASE privacy-seals FAIL ($(sed -n 's/^RESULT //p' "$out"))" >>"$results"
    cat "$out" >&2
  fi
  grep "^FACT" "$out" | sed 's/^/vm: agent-bluez-privacy: /' >&2 || true
}

# start_radio N: radio.py with N controllers; sets RADIO_PORTS.
start_radio() {
  local fifo="$work/radio.in" out="$work/radio.out"
  mkfifo "$fifo"
  "$top/.venv/bin/python3" "$here/radio-vm.py" --controllers "$1" --log-level "${RADIO_LOG:-WARNING}" "${@:2}" <"$fifo" >"$out" 2>"$work/radio.err" &
  RADIO_PID=$!
  pids="$pids $RADIO_PID"
  exec {radio_stdin}>"$fifo"  # radio.py exits when this closes (with us)
  for _ in $(seq 100); do grep -q '^READY' "$out" && break; sleep 0.1; done
  RADIO_PORTS=$(awk '/^READY/ {$1=""; print}' "$out")
  [ -n "$RADIO_PORTS" ] || { echo "vm: radio did not start"; cat "$work/radio.err"; exit 1; }
}
stop_radio() {
  kill "$RADIO_PID" 2>/dev/null || true
  wait "$RADIO_PID" 2>/dev/null || true
  exec {radio_stdin}>&-
  rm -f "$work/radio.in"
}

virtio_serial() { # the guest's /dev/vport0p1, connected as a client to 127.0.0.1:$1
  echo -device virtio-serial-pci -chardev "socket,id=bt,host=127.0.0.1,port=$1" \
    -device virtserialport,chardev=bt,name=bt0
}

# agent_radio BOOT GUEST_CASE HOST_CASE: a guest agent (GUEST_CASE) on the
# bridged adapter and a host agent on tcp: hand notes both ways; HOST_CASE is
# the host's check that the guest's note arrived byte-identical.
agent_radio() {
  local name=$1 guest_case=$2 host_case=$3
  # VM_STRANGERS devices that are not peers share the radio, each advertising
  # every 100 ms with changing data (a busy room: Tests/Radio/strangers.py).
  start_radio 2 --strangers "${VM_STRANGERS:-0}"
  read -r guest_port host_port <<<"$RADIO_PORTS"
  hn="$work/host-notes-$name"
  mkdir -p "$hn"
  "$baton" agent --controller "tcp:127.0.0.1:$host_port" --notes "$hn" \
    --key-file "$work/baton.key" --name vm-host --state-dir "$work/host-state-$name" \
    --socket "$work/host-$name.sock" >"$work/host-agent-$name.log" 2>&1 &
  host_agent=$!
  pids="$pids $host_agent"
  host_side() { # once the guest agent is up: expect its note, then save ours
    local console="$work/console-$name.log" i
    for i in $(seq 600); do grep -q AGENT-UP "$console" 2>/dev/null && break; sleep 0.1; done
    local t0 t1
    t0=$(date +%s.%N)  # the guest saves from-guest.md right after AGENT-UP
    for i in $(seq 400); do cmp -s "$hn/from-guest.md" "$here/cases/data/from-guest.md" && break; sleep 0.1; done
    if cmp -s "$hn/from-guest.md" "$here/cases/data/from-guest.md"; then
      echo "CASE $host_case PASS"
      echo "NOTE-LATENCY $host_case from-guest.md $(elapsed "$t0") s from save (guest) to arrival (host)" >>"$work/latency"
    else
      echo "CASE $host_case FAIL"
      echo "----- host agent log -----" >&2
      cat "$work/host-agent-$name.log" >&2
    fi
    t1=$(date +%s.%N)
    cp "$here/cases/data/from-host.md" "$hn/from-host.md"
    # The guest says when it has it.
    for i in $(seq 600); do grep -q "^HOST-NOTE-ARRIVED" "$console" 2>/dev/null && break; sleep 0.1; done
    grep -q "^HOST-NOTE-ARRIVED" "$console" 2>/dev/null &&
      echo "NOTE-LATENCY $host_case from-host.md $(elapsed "$t1") s from save (host) to arrival (guest)" >>"$work/latency"
  }
  host_side >>"$results" &
  local side=$!
  # shellcheck disable=SC2046
  boot "$name" "$guest_case" $(virtio_serial "$guest_port")
  wait "$side" || true
  kill "$host_agent" 2>/dev/null || true
  wait "$host_agent" 2>/dev/null || true
  stop_radio
}

boots=("$@")
[ ${#boots[@]} -gt 0 ] || boots=(kernel radio bluez-radio)
[ "$has_agent" = 1 ] && [ $# -eq 0 ] && boots+=(agent-radio agent-bluez-radio)
for b in "${boots[@]}"; do
  case $b in
    kernel)
      # Errors on a real kernel; BlueZ's btvirt; (and agents on btvirt when built).
      cases=${VM_CASES:-errors,btvirt-probe}
      [ -x "$baton" ] && [ -z "${VM_CASES:-}" ] && cases="$cases,baton-runs"
      [ "$has_agent" = 1 ] && [ -z "${VM_CASES:-}" ] && cases="$cases,agent-btvirt"
      # The system's stack: bluetoothd on a system D-Bus manages btvirt's adapters.
      [ -z "${VM_CASES:-}" ] && cases="$cases,bluez-btvirt"
      if [ -z "${VM_CASES:-}" ]; then
        if [ "$has_bluez" = 1 ]; then cases="$cases,$bluez_kernel_cases"
        else not_run ${bluez_kernel_cases//,/ } scan-duty monitor-passive privacy-seals >>"$results"; fi
      fi
      # The user unit under systemd --user: last, since its set-up (cgroup2,
      # /dev/pts, /run as a mount point) stays for the rest of the boot.
      [ "$has_agent" = 1 ] && [ -z "${VM_CASES:-}" ] && cases="$cases,agent-unit-setcap"
      # agent-bluez-scan idles for VM_SCAN_STEADY seconds after its set-up
      # and link (6 s on an idle machine; 180 s allowed for load): its own
      # timeout, and a longer boot (120 s more for agent-bluez-monitor).
      # agent-bluez-autoconnect: 41 reconnections, a link and a wait for a
      # scan window (66 to 111 s alone): 300 s, and as much more for the boot.
      scan_steady=${VM_SCAN_STEADY:-130}
      # agent-bluez-privacy likewise, for VM_PRIVACY_STEADY seconds.
      privacy_steady=${VM_PRIVACY_STEADY:-200}
      # agent-bluez-reach: samples of up to 48 s idle, a reach of up to
      # 40 s and the second link (about 90 s each alone): 150 s a sample.
      reach_samples=${VM_REACH_SAMPLES:-7}
      reach=$((150 * reach_samples + 60))
      CASE_TIMEOUT=120 \
        CASE_TIMEOUTS="agent-bluez-scan:$((scan_steady + 180)),agent-bluez-privacy:$((privacy_steady + 180)),agent-bluez-btvirt:240,agent-bluez-autoconnect:300,agent-bluez-reach:$reach" \
        BOOT_TIMEOUT=$((1020 + scan_steady + 180 + privacy_steady + 180 + reach)) \
        BOOT_APPEND="VM_SCAN_STEADY=$scan_steady VM_PRIVACY_STEADY=$privacy_steady VM_REACH_SAMPLES=$reach_samples VM_REACH_BOUND=${VM_REACH_BOUND:-40}${VM_SCANNING:+ VM_SCANNING=$VM_SCANNING}" \
        boot kernel "$cases"
      if [[ ,$cases, == *,agent-bluez-scan,* ]]; then scan_duty; fi
      if [[ ,$cases, == *,agent-bluez-monitor,* ]]; then monitor_passive; fi
      if [[ ,$cases, == *,agent-bluez-privacy,* ]]; then privacy_seals; fi
      ;;
    radio)
      # The bridge: the guest's hciN on the host's simulated radio, heard both ways.
      start_radio 2
      read -r guest_port host_port <<<"$RADIO_PORTS"
      "$top/.venv/bin/python3" "$here/host-peer.py" "$host_port" baton-host baton-vm 60 \
        >"$work/host-peer.out" 2>"$work/host-peer.err" &
      peer=$!
      pids="$pids $peer"
      # shellcheck disable=SC2046
      boot radio bridge-scan,bridge-advertise,bridge-connect $(virtio_serial "$guest_port")
      if grep -q "^HEARD baton-vm" "$work/host-peer.out"; then
        echo "CASE host-hears-guest PASS" >>"$results"
      else
        echo "CASE host-hears-guest FAIL" >>"$results"
        cat "$work/host-peer.out" "$work/host-peer.err" >&2
      fi
      kill "$peer" 2>/dev/null || true
      wait "$peer" 2>/dev/null || true
      stop_radio
      ;;
    agent-radio)
      # A guest agent on the bridged hciN (user channel) and a host agent on tcp:.
      agent_radio agent-radio agent-bridge host-gets-guest-note
      ;;
    agent-bluez-radio)
      # A guest agent with controller = bluez (bluetoothd manages the bridged
      # hciN) and a host agent on tcp:.
      if [ "$has_bluez" = 1 ]; then
        # VM_BRIDGE_STEADY: seconds the linked guest agent then idles, its
        # CPU and wake-ups and bluetoothd's measured (NOTE-CPU lines).
        bridge_steady=${VM_BRIDGE_STEADY:-0}
        CASE_TIMEOUT=$((90 + bridge_steady)) BOOT_TIMEOUT=$((600 + bridge_steady)) \
          BOOT_APPEND="VM_BRIDGE_STEADY=$bridge_steady${VM_SCANNING:+ VM_SCANNING=$VM_SCANNING}" \
          agent_radio agent-bluez-radio agent-bluez-bridge host-gets-bluez-note
      else
        not_run agent-bluez-bridge host-gets-bluez-note >>"$results"
      fi
      ;;
    bluez-radio)
      # bluetoothd manages the bridged hciN: L2CAP LE CoC to a host bumble peer,
      # D-Bus advertising heard (exact bytes) by a host scanner, discovery.
      start_radio 4
      read -r guest_port scan_port l2_port quiet_port <<<"$RADIO_PORTS"
      py="$top/.venv/bin/python3"
      # For the guest's discovery: the scanner also advertises (discoverable:
      # Flags 0x06, manufacturer data), another peer the same not discoverable
      # (Flags 0x04).
      "$py" "$top/Tests/Radio/peer.py" scan --port "$scan_port" --seconds 120 \
        --also-advertise 0201060bffffff0102030405060708 >"$work/scan.out" 2>&1 &
      scanner=$!
      "$py" "$top/Tests/Radio/peer.py" scan --port "$quiet_port" --seconds 120 \
        --also-advertise 0201040bffffff0102030405060708 >"$work/quiet.out" 2>&1 &
      quiet=$!
      "$py" "$top/Tests/Radio/peer.py" l2cap-server --port "$l2_port" --psm 0x80 --bytes 1000 \
        --seconds 120 >"$work/l2.out" 2>&1 &
      server=$!
      pids="$pids $scanner $server $quiet"
      for _ in $(seq 100); do grep -q '^READY' "$work/l2.out" && break; sleep 0.1; done
      peer_addr=$(awk '/^READY/ {print $2}' "$work/l2.out")
      for _ in $(seq 100); do grep -q '^READY' "$work/scan.out" && break; sleep 0.1; done
      scanner_addr=$(awk '/^READY/ {print $2}' "$work/scan.out")
      for _ in $(seq 100); do grep -q '^READY' "$work/quiet.out" && break; sleep 0.1; done
      quiet_addr=$(awk '/^READY/ {print $2}' "$work/quiet.out")
      # shellcheck disable=SC2046
      CASE_TIMEOUT=120 BOOT_APPEND="baton.peer=$peer_addr baton.scanner=$scanner_addr baton.quiet=$quiet_addr" boot bluez-radio bluez-bridge $(virtio_serial "$guest_port")
      if grep -q "^RECEIVED 1000 " "$work/l2.out" && grep -q "^SENT 1000" "$work/l2.out"; then
        echo "CASE host-l2cap-bluez PASS (the host peer received and sent 1000 bytes)" >>"$results"
      else
        echo "CASE host-l2cap-bluez FAIL" >>"$results"
        cat "$work/l2.out" >&2
      fi
      # The guest's advertisement, exactly: manufacturer data (company 0xFFFF,
      # 24 bytes) then the Flags AD bluetoothd adds, 31 bytes in all; then the
      # same with the new data, changed in place.
      guest_addr=$(awk '/^BLUEZ-GUEST-ADDRESS/ {print $2; exit}' "$work/console-bluez-radio.log.txt")
      grep "^FACT" "$work/console-bluez-radio.log.txt" | sed 's/^/vm: bluez-bridge: /' >&2 || true
      adv_a=1bffffff0102030405060708090a0b0c0d0e0f101112131415161718020106
      adv_b=1bffffffa1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8020106
      adv_c=0201041bffffff0102030405060708090a0b0c0d0e0f101112131415161718
      for v in a b c; do
        want=adv_$v
        n=$(grep -c "^ADV $guest_addr ${!want}$" "$work/scan.out" || true)
        if [ "$n" -gt 0 ]; then
          echo "CASE host-hears-bluez-adv-$v PASS ($n reports of ${!want})" >>"$results"
        else
          echo "CASE host-hears-bluez-adv-$v FAIL" >>"$results"
          echo "guest $guest_addr; the scanner heard:" >&2
          grep -v "^ADV $peer_addr" "$work/scan.out" | sort | uniq -c | head >&2
        fi
      done
      kill "$scanner" "$server" "$quiet" 2>/dev/null || true
      wait "$scanner" "$server" "$quiet" 2>/dev/null || true
      stop_radio
      ;;
    *)
      echo "vm: unknown boot $b (kernel, radio, agent-radio, bluez-radio, agent-bluez-radio)" >&2
      exit 2
      ;;
  esac
done

# --- summary ------------------------------------------------------------------
echo "vm: results (Debian kernel $kver under qemu TCG):"
sed 's/^/  /' "$results"
if [ -s "$work/latency" ]; then
  echo "vm: from a save to the peer's file:"
  awk '{$1 = ""; print "  " substr($0, 2)}' "$work/latency"
fi
if [ -s "$work/autoconnect" ]; then
  echo "vm: a device the kernel auto-connects to (agent-bluez-autoconnect), s from its advert to the connection:"
  sed 's/^NOTE-AUTOCONNECT /  /' "$work/autoconnect"
fi
if [ -s "$work/cpu" ]; then
  echo "vm: CPU and wake-ups over a steady period (under TCG: compare within one run):"
  sed -E 's/^NOTE-(CPU|THREADS) /  /' "$work/cpu"
fi
if [ -s "$work/reach" ]; then
  echo "vm: a newcomer to a closed linked pair (agent-bluez-reach), s from its start to its links:"
  sed 's/^REACH agent-bluez-reach /  /' "$work/reach"
fi
echo "vm: total $(elapsed "$started") s"
if grep -q " NOT-RUN " "$results"; then
  echo "vm: NOT RUN: $(grep -c " NOT-RUN " "$results") cases (listed above with the reason); they did not pass" >&2
fi
if grep -q " FAIL" "$results" || ! grep -q " PASS" "$results"; then
  # Again at the end, where a CI log's tail shows it: what failed and the
  # last lines of each failed case's log (all of it was printed above).
  if [ -s "$work/failures" ]; then
    echo "vm: the failed cases' logs (their last lines):" >&2
    tail -150 "$work/failures" >&2
  fi
  echo "vm: failed: $(grep " FAIL" "$results" | sed 's/^CASE //' | paste -sd ';' -)" >&2
  echo "vm: FAILED" >&2
  exit 1
fi
