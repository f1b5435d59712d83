#!/usr/bin/env bash
# L2CAP benchmark: builds release, starts a simulated radio with two
# controllers, and runs `baton-bench l2cap` between two of our hosts, once with
# bumble's default LE ACL buffers (27 bytes, as controllers without Data Length
# Extension) and once with 251-byte buffers (controllers with it, e.g. nRF52).
# Prints time and HCI bytes per payload byte for 1 KB, 10 KB and 100 KB.
#   Tests/Scripts/bench-l2cap.sh [--repeat N]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
swift build -c release --product baton-bench >&2
bin="$(swift build -c release --show-bin-path)/baton-bench"
python="${BATON_PYTHON:-$top/.venv/bin/python3}"

run() {
  local ready p1 p2 status=0
  # A coprocess: its stdin stays open (the radio stops when it closes).
  coproc RADIO { exec "$python" Tests/Radio/radio.py --controllers 2 "$@"; }
  read -r ready p1 p2 <&"${RADIO[0]}"
  if [ "$ready" != READY ]; then
    echo "bench-l2cap: the simulated radio did not start" >&2
    kill "$RADIO_PID" 2>/dev/null || true
    return 1
  fi
  "$bin" l2cap "tcp:127.0.0.1:$p1" "tcp:127.0.0.1:$p2" "${bench_args[@]}" || status=$?
  local pid=$RADIO_PID
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return "$status"
}

bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(--repeat 5)
echo "== bumble default controller (LE ACL buffers of 27 bytes)"
run
echo
echo "== controller with 251-byte LE ACL buffers (radio.py --le-acl-length 251)"
run --le-acl-length 251
