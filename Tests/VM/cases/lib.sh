# Helpers for the guest cases (sourced by each case; run under `sh -e`).

# Seconds since boot, for the log.
now() { cut -d' ' -f1 /proc/uptime; }

# start_btvirt [N]: BlueZ's controller emulator with N controllers (default
# 2: hci0, hci1 on a little radio of their own); waits until each can be opened.
start_btvirt() {
  btvirt -l${1:-2} >/tmp/btvirt.log 2>&1 &
  BTVIRT_PID=$!
  btvirt_n=0
  while [ $btvirt_n -lt ${1:-2} ]; do wait_ready $btvirt_n; btvirt_n=$((btvirt_n + 1)); done
}

# Waits until adapter N exists and the kernel has finished setting it up:
# the user channel then opens (the probe resets it and closes again).
wait_ready() {
  i=0
  while [ $i -lt 100 ]; do
    if [ -e "/sys/class/bluetooth/hci$1" ] && hci-probe open "$1" >/tmp/ready.log 2>&1; then
      echo "$(now) hci$1 ready: $(cat /tmp/ready.log)"
      return 0
    fi
    i=$((i + 1))
    sleep 0.1
  done
  echo "hci$1 never became ready:"; cat /tmp/ready.log
  return 1
}

# Starts the vhci <-> virtio-serial bridge; sets HCI to the new adapter's index.
start_bridge() {
  rm -f /run/vhci-index
  vhci-bridge /dev/vport0p1 /run/vhci-index 2>/tmp/bridge.log &
  BRIDGE_PID=$!
  i=0
  while [ ! -s /run/vhci-index ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  [ -s /run/vhci-index ] || { echo "bridge never created an adapter"; cat /tmp/bridge.log; return 1; }
  HCI=$(cat /run/vhci-index)
  echo "$(now) bridge: $(cat /tmp/bridge.log)"
  wait_ready "$HCI"
}

# expect_failure "description" PHRASE... -- COMMAND...
# Runs COMMAND, which must exit non-zero without crashing (status below 128)
# and print every PHRASE on stderr or stdout.
expect_failure() {
  what=$1; shift
  phrases=""
  while [ "$1" != "--" ]; do phrases="$phrases
$1"; shift; done
  shift
  set +e
  "$@" >/tmp/out.log 2>&1
  rc=$?
  set -e
  echo "$what: exit status $rc; output:"; cat /tmp/out.log
  [ "$rc" -ne 0 ] || { echo "FAILED: $what: exited 0"; return 1; }
  [ "$rc" -ne 124 ] && [ "$rc" -ne 143 ] || { echo "FAILED: $what: still running after 20 s (it should exit with the error)"; return 1; }
  [ "$rc" -lt 128 ] || { echo "FAILED: $what: crashed (status $rc)"; return 1; }
  echo "$phrases" | while IFS= read -r p; do
    [ -z "$p" ] && continue
    grep -qF -- "$p" /tmp/out.log || { echo "FAILED: $what: missing \"$p\""; exit 1; }
  done
}

# Whether this image holds a baton with the agent command.
have_agent() { [ -x /usr/bin/baton ] && [ -f /etc/baton-has-agent ]; }

# agent_args SPEC DIR NAME: the agent's arguments for notes folder DIR on
# controller SPEC (key file $KEY, default /etc/baton.key).
agent_args() {
  echo "agent --controller $1 --notes $2 --key-file ${KEY:-/etc/baton.key} --name $3" \
    "--state-dir $2.state --socket $2.sock"
}

# start_agent NAME SPEC [ARGS...]: a baton agent on controller SPEC with notes
# in /tmp/NAME (log /tmp/NAME.log); sets AGENT_PID.
start_agent() {
  name=$1 spec=$2; shift 2
  # A fresh folder and state: an earlier case of this boot may have used the name.
  rm -rf "/tmp/$name" "/tmp/$name.state" "/tmp/$name.sock"
  mkdir -p "/tmp/$name"
  baton $(agent_args "$spec" "/tmp/$name" "$name") --verbose "$@" \
    >"/tmp/$name.log" 2>&1 &
  AGENT_PID=$!
  echo "$(now) agent $name on $spec: pid $AGENT_PID"
}

# wait_log FILE PATTERN SECONDS [FROM_LINE]: a line matching the extended
# regular expression PATTERN appears in FILE (after line FROM_LINE).
wait_log() {
  i=0
  while [ $i -lt $(($3 * 10)) ]; do
    tail -n +$((${4:-0} + 1)) "$1" 2>/dev/null | grep -qE -- "$2" && return 0
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: no line matching \"$2\" in $1 within $3 s"; tail -40 "$1"; return 1
}

# wait_agent_up NAME [SECONDS]: agent NAME (log /tmp/NAME.log, or $LOG) is
# advertising, scanning and listening.
wait_agent_up() {
  wait_log "${LOG:-/tmp/$1.log}" "advertising as .* and scanning" "${2:-30}" || return 1
  echo "$(now) agent $1 is up"
}

# wait_for_note FILE EXPECTED SECONDS: FILE appears byte-identical to EXPECTED.
wait_for_note() {
  i=0
  while [ $i -lt $(($3 * 10)) ]; do
    if [ -f "$1" ] && cmp -s "$1" "$2"; then
      echo "$(now) $1 arrived, byte-identical ($(sha256sum <"$1" | cut -c1-16))"
      if [ -n "${SAVED_AT:-}" ]; then
        latency="$(basename "$1") $(awk -v a="$SAVED_AT" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}') s from save to arrival"
        echo "latency: $latency"
        echo "NOTE-LATENCY ${CASE_NAME:-?} $latency" >/dev/console
      fi
      SAVED_AT=
      return 0
    fi
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: $1 did not arrive byte-identical within $3 s"
  [ -f "$1" ] && { echo "it holds:"; od -c "$1" | head; }
  return 1
}

# still_running PID NAME: the agent has not exited (or crashed).
still_running() {
  kill -0 "$1" 2>/dev/null && return 0
  rc=0
  wait "$1" || rc=$?  # (under sh -e a bare failing wait would end the case silently)
  echo "FAILED: agent $2 exited with status $rc"; cat "/tmp/$2.log"; return 1
}

# dump_btsnoop FILE: the file, base64, between markers, for the host to decode with btmon.
dump_btsnoop() {
  echo "BTSNOOP-BEGIN $(basename "$1")" >/dev/console
  base64 "$1" >/dev/console
  echo "BTSNOOP-END" >/dev/console
}

# --- the system's Bluetooth stack: a system D-Bus and BlueZ's bluetoothd ------

# start_bluez [restricted]: the system bus (Debian's system.conf and BlueZ's
# bluetooth.conf policy; "restricted" drops its default-context rule, so only
# root and the bluetooth group may talk to org.bluez), then bluetoothd (-n, its
# log in /tmp/bluetoothd.log). Waits until bluetoothd owns org.bluez. Start
# btvirt or the bridge first: their readiness check opens the user channel,
# which bluetoothd's powered adapter would refuse. Sets DBUS_PID, BLUEZ_PID.
start_bluez() {
  # main.conf as Debian ships it (/etc/bluetooth/main.conf.stock), or with
  # `Privacy = $BLUEZ_PRIVACY` under [General]: a case that sets it leaves
  # no trace for the next one.
  if [ -n "${BLUEZ_PRIVACY:-}" ]; then
    awk -v p="$BLUEZ_PRIVACY" '{print} $0 == "[General]" {print "Privacy = " p}' \
      /etc/bluetooth/main.conf.stock >/etc/bluetooth/main.conf
  else
    cp /etc/bluetooth/main.conf.stock /etc/bluetooth/main.conf
  fi
  if [ "${1:-}" = restricted ]; then
    sed '/<policy context="default">/,/<\/policy>/d' /etc/bluetooth.conf.debian \
      >/etc/dbus-1/system.d/bluetooth.conf
  else
    cp /etc/bluetooth.conf.debian /etc/dbus-1/system.d/bluetooth.conf
  fi
  mkdir -p /run/dbus /var/lib/bluetooth
  : >/tmp/bluetoothd.log  # this case's bluetoothd only (restarts append)
  chown messagebus:messagebus /run/dbus
  chmod 700 /var/lib/bluetooth
  rm -f /run/dbus/system_bus_socket /run/dbus/pid
  dbus-daemon --system --nofork --nopidfile --nosyslog >/tmp/dbus.log 2>&1 &
  DBUS_PID=$!
  i=0
  while [ ! -S /run/dbus/system_bus_socket ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -S /run/dbus/system_bus_socket ] || { echo "FAILED: the system bus never came up"; cat /tmp/dbus.log; return 1; }
  echo "$(now) system bus up (dbus-daemon pid $DBUS_PID)"
  start_bluetoothd
}

# start_bluetoothd: bluetoothd in the foreground; waits until it owns org.bluez.
# Sets BLUEZ_PID.
start_bluetoothd() {
  /usr/libexec/bluetooth/bluetoothd -n ${BLUETOOTHD_ARGS:-} >>/tmp/bluetoothd.log 2>&1 &
  BLUEZ_PID=$!
  i=0
  while [ $i -lt 150 ]; do
    if dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.bluez 2>/dev/null | grep -q "boolean true"; then
      echo "$(now) bluetoothd (pid $BLUEZ_PID) owns org.bluez"
      return 0
    fi
    kill -0 $BLUEZ_PID 2>/dev/null || break
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: bluetoothd never took org.bluez"; cat /tmp/bluetoothd.log; return 1
}

# wait_powered hciN [SECONDS]: bluetoothd reports the adapter powered.
wait_powered() {
  i=0
  while [ $i -lt $((${2:-15} * 10)) ]; do
    if bluetoothctl show "$(adapter_address "$1")" 2>/dev/null | grep -q "Powered: yes"; then
      echo "$(now) $1 powered by bluetoothd"
      return 0
    fi
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: bluetoothd never powered $1"; bluetoothctl list; tail -30 /tmp/bluetoothd.log; return 1
}

# adapter_address hciN: the adapter's address as bluetoothd reports it.
adapter_address() {
  dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" \
    org.freedesktop.DBus.Properties.Get string:org.bluez.Adapter1 string:Address 2>/dev/null \
    | sed -n 's/.*string "\(.*\)".*/\1/p'
}

# Whether this image's baton has the BlueZ backend (`controller = bluez`).
have_bluez_backend() { [ -f /etc/baton-has-bluez ]; }

# save_note SOURCE DEST: copies SOURCE to DEST and notes the time, so the next
# wait_for_note reports the time from this save to the peer's file.
save_note() { SAVED_AT=$(now); cp "$1" "$2"; }

# has_phrases FILE PHRASES: FILE holds every line of PHRASES (case-insensitive).
has_phrases() {
  echo "$2" | while IFS= read -r p; do
    [ -z "$p" ] && continue
    grep -qiF -- "$p" "$1" || exit 1
  done
}

# expect_message WHAT SECONDS PHRASE... -- COMMAND...: COMMAND either exits
# non-zero (no crash), or is still running once its output holds every PHRASE
# (a backend may exit on the fault or wait it out); at most SECONDS.
expect_message() {
  what=$1 secs=$2; shift 2
  phrases=""
  while [ "$1" != "--" ]; do phrases="$phrases
$1"; shift; done
  shift
  "$@" >/tmp/msg.log 2>&1 &
  pid=$!
  i=0
  # Until it exits, or (still running) has said every phrase.
  while kill -0 $pid 2>/dev/null && [ $i -lt $((secs * 10)) ]; do
    has_phrases /tmp/msg.log "$phrases" && break
    sleep 0.1; i=$((i + 1))
  done
  if kill -0 $pid 2>/dev/null; then
    kill -TERM $pid; wait $pid 2>/dev/null || true
    echo "$what: still running after $(awk -v i=$i 'BEGIN {print i / 10}') s (waiting it out); output:"
  else
    set +e; wait $pid; rc=$?; set -e
    echo "$what: exit status $rc; output:"
    [ "$rc" -ne 0 ] || { cat /tmp/msg.log; echo "FAILED: $what: exited 0"; return 1; }
    [ "$rc" -lt 128 ] || { cat /tmp/msg.log; echo "FAILED: $what: crashed (status $rc)"; return 1; }
  fi
  cat /tmp/msg.log
  echo "$phrases" | while IFS= read -r p; do
    [ -z "$p" ] && continue
    grep -qiF -- "$p" /tmp/msg.log || { echo "FAILED: $what: missing \"$p\""; exit 1; }
  done
}

# start_btmon: records every adapter's HCI traffic and bluetoothd's mgmt
# commands to /tmp/hci.btsnoop (run before bluetoothd); `explain` sends it to
# the host, which decodes it (btsnoop-hci; with VM_KEEP=1 the text is kept).
start_btmon() {
  rm -f /tmp/hci.btsnoop
  btmon -w /tmp/hci.btsnoop >/dev/null 2>&1 &
  BTMON_PID=$!
}

# explain NAME...: after a failure, the logs of agents NAME (/tmp/NAME.log),
# bluetoothd's last lines, and the HCI log if start_btmon ran.
explain() {
  for n in "$@"; do echo "----- agent $n -----"; cat "/tmp/$n.log"; done
  echo "----- bluetoothd (last lines) -----"
  grep -v "^$" /tmp/bluetoothd.log 2>/dev/null | tail -60
  if [ -f /tmp/hci.btsnoop ]; then
    # btmon buffers its writes: stop it so the file is complete.
    kill "${BTMON_PID:-}" 2>/dev/null && wait "$BTMON_PID" 2>/dev/null
    dump_btsnoop /tmp/hci.btsnoop
  fi
  return 0
}

# stop_agent PID NAME: SIGTERM; the agent must exit with status 0 within 20 s.
stop_agent() {
  kill -TERM "$1" 2>/dev/null || true
  i=0
  while kill -0 "$1" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$1" 2>/dev/null; then
    echo "FAILED: agent $2 still running 20 s after SIGTERM"; cat "/tmp/$2.log"; return 1
  fi
  rc=0
  wait "$1" || rc=$?
  [ "$rc" -eq 0 ] || { echo "FAILED: agent $2 exited $rc on SIGTERM"; cat "/tmp/$2.log"; return 1; }
  echo "$(now) agent $2 stopped"
}
