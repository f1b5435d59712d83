#!/usr/bin/env bash
# Soak: two, then three agents on the simulated radio with HCI faults (issue
# 16). For half the duration each, agents save notes at random, are killed
# with SIGKILL at random and restarted, and about 5% of HCI packets are hit
# by faults (ACL data lost, corrupted, duplicated, delayed; Number Of
# Completed Packets events lost); then the faults stop and the script waits
# for every agent to hold every note's last version. Prints notes saved,
# notes delivered, the slowest delivery after the faults stopped, spurious
# conflict copies, corrupted notes and crashes; exits 1 if a round did not
# converge or any of the last three is not zero.
#
#   Tests/Scripts/bench-soak.sh [SECONDS] [soak.py options]
#
# SECONDS is the whole faulty time (default 120: a short run; 1800 for the
# 30-minute soak). Options: --faults RULES (Tests/Radio/faults.py syntax),
# --seed N, --settle N (longest wait for convergence, default 180 s),
# --kill-every N (mean seconds between kills, default 15), --save-every N,
# --notes N (notes per agent), --keep (keep the agents' folders and logs),
# --json FILE.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
seconds=120
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
Tests/Scripts/setup.sh >&2
swift build --product baton >&2
exec "$top/.venv/bin/python3" Tests/Scripts/soak.py --baton "$top/.build/debug/baton" \
  --python "$top/.venv/bin/python3" --radio "$top/Tests/Radio/radio.py" --seconds "$seconds" "$@"
