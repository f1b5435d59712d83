#!/bin/sh
# Coverage-guided fuzzing of every decoder of outside bytes (issue 31): builds
# baton-fuzz with libFuzzer and AddressSanitizer (the toolchain's
# -sanitize=fuzzer,address) into .build/fuzz, then runs each target for
# FUZZ_SECONDS (default 60) on its seed corpus (Tests/Fuzz/corpus/TARGET,
# read only) plus what earlier runs found (.build/fuzz/corpus/TARGET), and
# prints per target the inputs run, the edges covered (libFuzzer's "cov:")
# and the crashes; a crashing input is kept in .build/fuzz/crashes/ and
# replays with `swift run baton-fuzz TARGET FILE`. Exits 1 if any target
# crashed.
#   FUZZ_TARGETS   names to run (default: all, see `baton-fuzz list`)
#   FUZZ_SESSIONS  then that many hostile-peer sessions (HostileSessionFuzzTests;
#                  default 2000; 0 skips them, as `make fuzz-smoke` does)
#   FUZZ_SEED      libFuzzer's seed and the sessions' (default 1)
#   FUZZ_CONFIG    release (default) or debug. Measured on this 2-core machine:
#                  a cold release build takes 181 s and a debug one 64 s, and
#                  the release build runs 1.5 to 3.6 times the inputs a second
#                  (handoff-message, config), so long runs use release and the
#                  few seconds of make fuzz-smoke use debug.
set -eu
cd "$(dirname "$0")/../.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
SEED=${FUZZ_SEED:-1}
SESSIONS=${FUZZ_SESSIONS:-2000}
CONFIG=${FUZZ_CONFIG:-release}
OUT=.build/fuzz
BIN=$OUT/$CONFIG/baton-fuzz
swift build -c "$CONFIG" --scratch-path "$OUT" --product baton-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DBATON_LIBFUZZER
# Swift's backtracer would hold a crashing process for its report (libFuzzer
# prints its own); the leak checker counts Swift's lazily made globals as
# leaks, so leaks are not checked.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-}
mkdir -p "$OUT/crashes" "$OUT/logs"
TARGETS=${FUZZ_TARGETS:-$("$BIN" list)}
crashed=0
printf '%-18s %12s %8s %8s\n' target executions edges crashes
for t in $TARGETS; do
  mkdir -p "$OUT/corpus/$t"
  log=$OUT/logs/$t.log
  status=0
  nice "$BIN" "$t" "$OUT/corpus/$t" "Tests/Fuzz/corpus/$t" \
    -max_total_time="$SECONDS_EACH" -seed="$SEED" -timeout=10 -print_final_stats=1 \
    -detect_leaks=0 -artifact_prefix="$OUT/crashes/$t-" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$runs" ] || runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | sed 's/cov: //')
  crashes=0
  if [ "$status" -ne 0 ]; then
    crashes=1
    crashed=1
  fi
  printf '%-18s %12s %8s %8s\n' "$t" "${runs:-?}" "${edges:-?}" "$crashes"
  if [ "$crashes" -ne 0 ]; then
    grep -E 'ERROR|Fatal error|deadly signal|timeout' "$log" | head -3 | sed 's/^/    /'
    grep -o "Test unit written to .*" "$log" | sed 's/^/    /'
    echo "    log: $log"
  fi
done
if [ "$SESSIONS" -gt 0 ]; then
  swift build --build-tests
  BATON_HOSTILE_SESSIONS=$SESSIONS BATON_HOSTILE_SEED=$SEED \
    nice swift test --no-parallel --skip-build --filter HostileSessionFuzzTests
fi
[ "$crashed" -eq 0 ] || { echo "fuzz: a target crashed (see above)"; exit 1; }
