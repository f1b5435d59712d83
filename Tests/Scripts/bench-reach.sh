#!/usr/bin/env bash
# How soon a peer that comes into range is linked, on the simulated radio
# (issue 25): a third agent comes to a linked pair, just started ("start")
# or carried into range while running ("steady"), for `scanning =
# continuous` (the agent before the schedule) and `scanning = windows` (the
# default) in one run; every sample, median and p95. Options go to
# `baton-bench reach` (--samples N per row, default 10; --modes LIST; --keep).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
Tests/Scripts/setup.sh
swift build -c release --product baton >/dev/null
swift build -c release --product baton-bench >/dev/null
exec .build/release/baton-bench reach "$@"
