#!/usr/bin/env bash
# Issue 14's figures (release build, two agents on the simulated radio):
#  - 10,000 notes of ~100 B created at once in A: time until all are
#    byte-identical in B, average CPU of each agent meanwhile (target 30 s,
#    under one core each); 1,000 notes of 10 KB (target 60 s);
#  - with 10,000 notes in sync, one 2 KB save: latency (against a folder of
#    10 notes) and HCI bytes moved, from A's btsnoop log;
#  - memory of an agent holding 100,000 notes in its index (target < 64 MB),
#    and its first start and restart times;
#  - issue 12: the HCI bytes of a 1 MB note's fresh transfer, and of its
#    rename afterwards (which travels as a rename, without the bytes);
#  - one 100 KB note saved over a link (--note-bytes N): time to the peer.
# Options go to `baton-bench scale` (--small N, --large N, --saves N,
# --memory-notes N, --note-bytes N, --only small|large|save|memory|rename|note,
# --keep). --radio timed runs them on the radio with a clock, with the
# options bench-handoff.sh takes (--conn-interval MS, --pdus-per-event N,
# --data-length 27|251, --phy 1m|2m, --scan-interval-ms MS --scan-window-ms
# MS): by default the small notes (2,000, as a link's catch-up) and the
# 100 KB note, each with the model's floor, measured/floor and the
# throughput's share of the airtime-limited one.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
Tests/Scripts/setup.sh
# The agent as `make install` builds it (Swift runtime linked statically),
# so that the memory figure is the installed program's.
swift build -c release --static-swift-stdlib --product baton >/dev/null
swift build -c release --product baton-bench >/dev/null
exec .build/release/baton-bench scale "$@"
