#!/usr/bin/env bash
# Idle means idle: runs `baton agent` with nothing happening and reports
#  - wake-ups: context switches of all its threads over the window (from
#    /proc/PID/task/*/status, no tracer attached), then
#  - syscalls: `strace -f -c` attached to every thread over the same window,
#  - memory: VmRSS (with its anonymous and file-backed parts) and VmHWM
#    from /proc/PID/status, and the eight largest resident parts by what
#    is mapped (/proc/PID/smaps),
#  - the time it takes to stop on SIGTERM.
#
#   Tests/Scripts/bench-idle.sh [--seconds N] [--bin PATH]
#
# The agent runs on a simulated controller (Tests/Radio/radio.py, one
# controller, no peer), advertising and scanning as it always does.
# BENCH_SHOW_LOG=1 prints the agent's log at the end.
# The binary is the installed build: the release build as `make install`
# builds it (Swift runtime linked statically), stripped into a scratch
# folder. BATON_BIN or --bin runs another binary instead.
# Before the agent starts, the binary is dropped from the page cache (as
# after a boot): a file just written sits there in large folios, and the
# kernel maps a whole folio at a fault, so the resident figure would depend
# on how the file was last written (about 1 MB more for one just built).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=60
[ -x "$top/.venv/bin/python3" ] || { echo "bench-idle: no simulated-radio venv; run Tests/Scripts/setup.sh" >&2; exit 1; }
bin=${BATON_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds N] [--bin PATH]" >&2; exit 2 ;;
  esac
done
if [ -n "$bin" ]; then
  [ -x "$bin" ] || { echo "bench-idle: no baton binary at $bin" >&2; exit 1; }
else
  (cd "$top" && swift build -c release --static-swift-stdlib --product baton >/dev/null)
fi
command -v strace >/dev/null || { echo "bench-idle: strace is missing (Tests/Scripts/setup.sh installs it)" >&2; exit 1; }

. "$top/Tests/Scripts/idle-agent.sh"
idle_agent_workspace baton-idle
if [ -z "$bin" ]; then
  bin=$work/baton
  strip -o "$bin" "$top/.build/release/baton"
fi

idle_agent_setup bench-idle "$bin" "$work"

# Out of the page cache (see above): written back first (the kernel keeps
# dirty pages), then GNU dd's nocache with no data read.
sync "$bin"
dd if="$bin" iflag=nocache count=0 status=none
# BATON_DUMPABLE: strace below attaches to it (without it, only root may).
BATON_DUMPABLE=1 "$bin" agent --notes "$work/notes" --controller "$controller" --name idle 2> "$work/agent.log" &
agent_pid=$!
for _ in $(seq 100); do [ -S "$work/run/baton/control" ] && break; sleep 0.05; done
[ -S "$work/run/baton/control" ] || { cat "$work/agent.log" >&2; exit 1; }
sleep 1   # let start-up settle

# "TID SWITCHES" per thread (voluntary + involuntary context switches).
switches() {
  for status in /proc/"$agent_pid"/task/*/status; do
    awk -v tid="$(basename "$(dirname "$status")")" \
      '/^(voluntary|nonvoluntary)_ctxt_switches/ {s += $2} END {print tid, s}' "$status" 2>/dev/null || true
  done
}
switches > "$work/before"
sleep "$seconds"
switches > "$work/after"
# Threads present at both ends (idle libdispatch workers may exit meanwhile).
wakeups=$(join "$work/before" "$work/after" | awk '{s += $3 - $2} END {print s + 0}')
per_thread=$(join "$work/before" "$work/after" | while read -r tid a b; do
  printf '%s(%s)=%d ' "$(cat /proc/"$agent_pid"/task/"$tid"/comm 2>/dev/null || echo gone)" "$tid" $((b - a))
done)
threads=$(wc -l < "$work/after")

tids=()
for task in /proc/"$agent_pid"/task/*; do tids+=(-p "${task##*/}"); done
timeout -s INT "$seconds" strace -f -c -o "$work/strace.txt" "${tids[@]}" 2>/dev/null || true
syscalls=$(awk '$NF == "total" {print $(NF-1)}' "$work/strace.txt")
syscalls=${syscalls:-0}

rss=$(awk '/^VmRSS/ {print $2}' /proc/"$agent_pid"/status)
rss_anon=$(awk '/^RssAnon/ {print $2}' /proc/"$agent_pid"/status)
rss_file=$(awk '/^RssFile/ {print $2}' /proc/"$agent_pid"/status)
hwm=$(awk '/^VmHWM/ {print $2}' /proc/"$agent_pid"/status)
# Resident kB by what is mapped: each file (the program's segments apart),
# and the anonymous memory; the eight largest.
by_mapping=$(awk '
  /^[0-9a-f]+-[0-9a-f]+ / {
    name = $6 == "" ? "[anonymous]" : $6
    if (name == bin) name = "program " ($2 ~ /x/ ? "code" : $2 ~ /w/ ? "data" : "read-only")
    sub(/.*\//, "", name)
    next
  }
  /^Rss:/ { kb[name] += $2 }
  END { for (n in kb) if (kb[n] > 0) print kb[n], n }' bin="$bin" /proc/"$agent_pid"/smaps |
  sort -rn | head -8 | awk '{printf "%s %s kB, ", $2 ($3 ? " " $3 : ""), $1}')

start=$(date +%s%N)
kill -TERM "$agent_pid"
status=0
wait "$agent_pid" || status=$?
stop_ms=$(( ($(date +%s%N) - start) / 1000000 ))
agent_pid=

echo "binary: $bin"
echo "controller: $controller (simulated radio, one controller)"
echo "threads: $threads"
echo "idle window: ${seconds} s"
echo "context switches (all threads, no tracer): $wakeups"
echo "  per thread: $per_thread"
echo "syscalls under strace -f -c: $syscalls"
if [ "$syscalls" != 0 ]; then sed -n '1,20p' "$work/strace.txt"; fi
echo "VmRSS: ${rss} kB (anonymous ${rss_anon} kB, files ${rss_file} kB), VmHWM: ${hwm} kB"
echo "  resident by mapping: ${by_mapping%, }"
echo "stop on SIGTERM: ${stop_ms} ms, exit status $status"
if [ -n "${BENCH_SHOW_LOG:-}" ]; then echo "agent log:"; sed 's/^/  /' "$work/agent.log"; fi
