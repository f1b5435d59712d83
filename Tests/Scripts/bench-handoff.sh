#!/usr/bin/env bash
# Save-to-peer latency of handoff between two agents on the simulated radio,
# and HCI bytes per note byte. Options go to `baton-bench handoff`
# (--saves N, --interval MS, --keep; --radio timed for the radio with a
# clock, with --conn-interval MS, --pdus-per-event N, --data-length 27|251,
# --phy 1m|2m and --scan-interval-ms MS --scan-window-ms MS, which adds the
# model's floor and measured/floor, with --arrivals N the first contact's,
# and with --idle-saves N saves on a link idled by its pace).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
Tests/Scripts/setup.sh
swift build -c release --product baton >/dev/null
swift build -c release --product baton-bench >/dev/null
exec .build/release/baton-bench handoff "$@"
