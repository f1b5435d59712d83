#!/bin/sh
# Fuzzes every decoder of outside bytes (issue 13), then the handoff session
# with a hostile peer. FUZZ_COUNT inputs per decoder (default 1000000),
# FUZZ_SEED the seed, FUZZ_SESSIONS hostile sessions (default 2000).
set -eu
cd "$(dirname "$0")/../.."
COUNT=${FUZZ_COUNT:-1000000}
SEED=${FUZZ_SEED:-1}
swift build -c release --product baton-bench
nice .build/release/baton-bench fuzz --count "$COUNT" --seed "$SEED" --crash-dir .build/fuzz
swift build --build-tests
BATON_HOSTILE_SESSIONS=${FUZZ_SESSIONS:-2000} BATON_HOSTILE_SEED=$SEED \
  nice swift test --no-parallel --skip-build --filter HostileSessionFuzzTests
