# Helpers for the guest cases (sourced by each case; run under `sh -e`).

# Seconds since boot, for the log.
now() { cut -d' ' -f1 /proc/uptime; }

# Starts BlueZ's controller emulator with two controllers (hci0, hci1 on a
# little radio of its own) and waits until both can be opened.
start_btvirt() {
  btvirt -l2 >/tmp/btvirt.log 2>&1 &
  BTVIRT_PID=$!
  wait_ready 0
  wait_ready 1
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
  mkdir -p "/tmp/$name"
  baton $(agent_args "$spec" "/tmp/$name" "$name") --verbose "$@" \
    >"/tmp/$name.log" 2>&1 &
  AGENT_PID=$!
  echo "$(now) agent $name on $spec: pid $AGENT_PID"
}

# wait_for_note FILE EXPECTED SECONDS: FILE appears byte-identical to EXPECTED.
wait_for_note() {
  i=0
  while [ $i -lt $(($3 * 10)) ]; do
    if [ -f "$1" ] && cmp -s "$1" "$2"; then
      echo "$(now) $1 arrived, byte-identical ($(sha256sum <"$1" | cut -c1-16))"
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
  kill -0 "$1" 2>/dev/null || { wait "$1"; echo "FAILED: agent $2 exited with status $?"; cat "/tmp/$2.log"; return 1; }
}

# dump_btsnoop FILE: the file, base64, between markers, for the host to decode with btmon.
dump_btsnoop() {
  echo "BTSNOOP-BEGIN $(basename "$1")" >/dev/console
  base64 "$1" >/dev/console
  echo "BTSNOOP-END" >/dev/console
}
