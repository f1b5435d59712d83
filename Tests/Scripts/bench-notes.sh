#!/usr/bin/env bash
# Notes benchmark: the time to build the index of 10,000 notes (target under
# 1 s) and the latency from a save's close(2) to its update (target: median
# under 20 ms). Extra arguments go to `baton-bench notes` (--notes N,
# --saves N, --size BYTES).
set -euo pipefail
cd "$(dirname "$0")/../.."
Tests/Scripts/setup.sh --build
swift build -c release --product baton-bench >&2
exec .build/release/baton-bench notes "$@"
