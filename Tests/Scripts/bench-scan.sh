#!/usr/bin/env bash
# What scanning costs a linked pair on the simulated radio (issue 25):
# scan duty, longest scan, scans started, wake-ups and CPU of an idle linked
# agent, and save-to-peer latency, for `scanning = continuous` (the agent
# before the schedule) and `scanning = windows` (the default) in one run.
# Options go to `baton-bench scan` (--seconds N per mode, default 300;
# --strangers N devices that are not peers advertising every 100 ms; --keep).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
Tests/Scripts/setup.sh
swift build -c release --product baton >/dev/null
swift build -c release --product baton-bench >/dev/null
exec .build/release/baton-bench scan "$@"
