#!/usr/bin/env bash
# The demo: two baton agents on a simulated radio, handing notes to each other.
#
# Installs what it needs, builds, starts a simulated radio (two bumble
# controllers) and two agents, "alice" and "bob", each with its own notes
# folder. Saves a note in alice's folder and shows it arriving in bob's. Then
# leaves everything running, with the folder paths printed, so that you can edit
# notes in your own editor and watch them move, until Ctrl-C stops it all.
#
# BATON_DEMO_SECONDS=N stops it by itself after N seconds (0: right after the
# first handoff); the tests use that.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

Tests/Scripts/setup.sh
swift build --product baton 2>&1 | grep -E "error|warning: unre|Compiling|Build" | tail -n 3 || true
baton="$top/.build/debug/baton"
[ -x "$baton" ] || { echo "demo: the build failed (no $baton)" >&2; exit 1; }

demo=$(mktemp -d /tmp/baton-demo.XXXXXX)
# The children run in sessions of their own (setsid), so that Ctrl-C reaches
# only this script, which then stops the agents first and the radio last.
radio_pid=
sleeper=
pids=()
# Says something without ever failing: when the output is a pipe whose reader
# died with us (`make demo | tee log` and Ctrl-C kill tee too), a write must
# not end the cleanup before it has stopped what it started.
say() { printf '%s\n' "$*" 2>/dev/null || true; }
cleanup() {
  trap - INT TERM EXIT HUP
  trap '' PIPE
  set +e
  say ""
  say "demo: stopping the agents and the radio"
  # One agent after the other: the first closes the link and the second hears
  # it close. Stopped together, both would end the link at once, and each of
  # the radio's two controllers would log the other's end as an error.
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  if [ -n "$radio_pid" ]; then kill -TERM "$radio_pid" 2>/dev/null; wait "$radio_pid" 2>/dev/null; fi
  if [ -n "$sleeper" ]; then kill -TERM "$sleeper" 2>/dev/null; fi
  say "demo: stopped; the notes stay in $demo"
}
trap cleanup INT TERM EXIT HUP PIPE

# The simulated radio: prints "READY port1 port2" once its controllers listen.
# Its errors only: bumble warns of each packet that was under way when a link
# ended (one or two as the demo stops), which a real controller drops quietly.
mkfifo "$demo/radio.out"
setsid .venv/bin/python3 Tests/Radio/radio.py --controllers 2 --log-level error \
  >"$demo/radio.out" </dev/null &
radio_pid=$!
read -r ready port1 port2 <"$demo/radio.out"
[ "$ready" = READY ] || { echo "demo: the simulated radio did not start" >&2; exit 1; }

"$baton" keygen >"$demo/group.key"
chmod 600 "$demo/group.key"

start_agent() { # name port
  local name=$1 port=$2
  mkdir -p "$demo/$name/notes" "$demo/$name/state" "$demo/$name/run"
  chmod 700 "$demo/$name/run"
  XDG_RUNTIME_DIR="$demo/$name/run" setsid "$baton" agent \
    --name "$name" --notes "$demo/$name/notes" --controller "tcp:127.0.0.1:$port" \
    --key-file "$demo/group.key" --state-dir "$demo/$name/state" \
    >"$demo/$name/agent.log" 2>&1 &
  pids+=($!)
}
start_agent alice "$port1"
start_agent bob "$port2"
echo "demo: radio on ports $port1 and $port2; agents alice and bob started"

note="$demo/alice/notes/Welcome.md"
printf '# Welcome to baton\nThis note was saved in alice'"'"'s folder at %s.\n' "$(date +%T)" >"$note.tmp"
mv "$note.tmp" "$note"
echo "demo: saved $note"

start=$(date +%s.%N)
for _ in $(seq 1 300); do
  if cmp -s "$note" "$demo/bob/notes/Welcome.md" 2>/dev/null; then break; fi
  sleep 0.1
done
if ! cmp -s "$note" "$demo/bob/notes/Welcome.md" 2>/dev/null; then
  echo "demo: the note did not reach bob within 30 s; the agents' logs:" >&2
  tail -n 20 "$demo"/alice/agent.log "$demo"/bob/agent.log >&2
  exit 1
fi
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
echo "demo: it arrived in bob's folder after $elapsed s:"
echo
sed 's/^/    /' "$demo/bob/notes/Welcome.md"
echo

if [ "${BATON_DEMO_SECONDS:-}" = 0 ]; then exit 0; fi
cat <<TXT
Both agents keep running. Edit notes with your own editor, in either folder:
    alice: $demo/alice/notes
    bob:   $demo/bob/notes
Their logs: $demo/alice/agent.log and $demo/bob/agent.log
Status:     XDG_RUNTIME_DIR=$demo/alice/run $baton status
Press Ctrl-C to stop everything.
TXT
# Sleep in the background and wait: bash runs the trap at once on a signal
# during `wait`, but only after a foreground sleep ends.
if [ -n "${BATON_DEMO_SECONDS:-}" ]; then
  sleep "$BATON_DEMO_SECONDS" &
  sleeper=$!
  wait $sleeper
else
  while :; do
    sleep 3600 &
    sleeper=$!
    wait $sleeper
  done
fi
