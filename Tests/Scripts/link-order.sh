#!/usr/bin/env bash
# Writes Sources/baton/link-order.txt: the functions a release `baton agent`
# runs to start, to sit idle and to stop, which Package.swift hands to lld
# (--symbol-ordering-file) so that they lie together at the start of the
# program's code. The kernel maps a program's pages in blocks (fault-around,
# large folios), so one function run among cold ones costs the whole block:
# placed together, the code an idle agent maps fell from 5.8 MB scattered
# over the program's 10 MB to 3.1 MB when this was first run (ARCHITECTURE.md,
# "Memory").
#
#   Tests/Scripts/link-order.sh [--seconds N]
#
# How:
#  1. a release build of `baton`, as `make install` builds it, with a link map;
#  2. that agent on a simulated controller (one controller, no peer, the
#     set-up of bench-idle.sh) under valgrind's callgrind for N seconds
#     (default 20), then SIGTERM: callgrind names every function that ran;
#  3. those names, in the order the previous link placed them. lld moves
#     whole sections, and orders every section that holds a listed name: a
#     name that several objects define locally (a specialization, a merged
#     function) is left out when one of its copies sits in a section over
#     64 KiB that no other listed function needs, since the prebuilt Swift
#     libraries keep most of an object's code in one section.
# Rerun it after changing what the agent does at start-up, and compare
# bench-idle.sh's resident memory before and after; SwiftPM does not relink
# when only this file changes, so the script deletes .build/release/baton. A stale file is not an
# error: names that no longer exist are skipped.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=20
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds N]" >&2; exit 2 ;;
  esac
done
cd "$top"
Tests/Scripts/setup.sh --profiling

. "$top/Tests/Scripts/idle-agent.sh"
idle_agent_workspace baton-link-order

# 1. The build, in its own scratch directory, with a map of the link.
scratch=$top/.build/link-order
swift build -c release --static-swift-stdlib --product baton --scratch-path "$scratch" \
  -Xlinker -Map="$work/baton.map" >/dev/null
bin=$scratch/release/baton
# valgrind 3.19 cannot read clang's DWARF 5; the symbol table is enough.
strip --strip-debug -o "$work/baton" "$bin"

# 2. An idle agent under callgrind.
idle_agent_setup link-order "$work/baton" "$work"

valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
  "$work/baton" agent --notes "$work/notes" --controller "$controller" --name idle \
  2> "$work/agent.log" &
agent_pid=$!
# Until the agent advertises and scans (slow under valgrind), then N seconds idle.
for _ in $(seq 600); do grep -q 'and scanning' "$work/agent.log" && break; sleep 0.1; done
grep -q 'and scanning' "$work/agent.log" || { cat "$work/agent.log" >&2; exit 1; }
sleep "$seconds"
kill -TERM "$agent_pid"
wait "$agent_pid" || { cat "$work/agent.log" >&2; exit 1; }
agent_pid=

# 3. The list.
nm -n "$bin" > "$work/symbols"
out=$top/Sources/baton/link-order.txt
{
  echo "# The functions a release 'baton agent' runs to start, idle and stop, in"
  echo "# link order (lld --symbol-ordering-file). Written by"
  echo "# Tests/Scripts/link-order.sh; do not edit by hand."
  awk -f "$top/Tests/Scripts/link-order.awk" "$work/callgrind.out" "$work/baton.map" "$work/symbols"
} > "$out.tmp"
mv "$out.tmp" "$out"
# SwiftPM does not track the file: the next release build must link again.
rm -f "$top/.build/release/baton"
echo "link-order: $(grep -vc '^#' "$out") functions in ${out#"$top"/}"
