#!/bin/sh
# The test suite under ThreadSanitizer and AddressSanitizer (issue 31): for
# each sanitizer, builds the package and its tests with `--sanitize=thread`
# (or `address`) into a scratch path of its own (.build/tsan, .build/asan),
# so the plain build is untouched, then runs `swift test --no-parallel` from
# it with BATON_BIN and BATON_BENCH_BIN pointing at that build's `baton` and
# `baton-bench`, so the agents the end-to-end tests start are checked too.
# Both run the whole suite (the address run less two tests, see below).
# Every sanitized process (the test runner and each agent) writes its reports
# to .build/SAN/logs/report.PID rather than to its stderr, which the tests
# read or throw away; the run goes on past a report (halt_on_error=0) to
# find them all. Prints per sanitizer the time, the tests run and the
# findings (each report's SUMMARY line, counted), and exits 1 if a sanitizer
# found anything or a test failed. Not in `make test`: the two builds and
# runs take longer than CI's time allows (see the figures in README.md).
#   SANITIZERS      which to run (default: "thread address")
#   SANITIZE_FILTER a `swift test --filter` for both runs (default: all)
# ThreadSanitizer does not see the standard library's Mutex hand a contended
# lock over (in libswiftSynchronization.so, not instrumented), so the thread
# run preloads Tests/Scripts/tsan-swift-mutex.c, which tells it; see there.
# Nothing is suppressed. Leaks are not checked (see the address case).
set -eu
cd "$(dirname "$0")/../.."
top=$(pwd)
SANITIZERS=${SANITIZERS:-thread address}
FILTER=${SANITIZE_FILTER:-}
# Swift's backtracer would hold a crashing process for its report (the
# sanitizer prints its own).
export SWIFT_BACKTRACE=enable=no
# Options from the environment come last (they win).
tsan_options=${TSAN_OPTIONS:-}
asan_options=${ASAN_OPTIONS:-}
summary=""
failed=0
for sanitizer in $SANITIZERS; do
  case "$sanitizer" in
    thread) out=.build/tsan ;;
    address) out=.build/asan ;;
    *) echo "sanitize: unknown sanitizer '$sanitizer' (thread or address)" >&2; exit 2 ;;
  esac
  logs=$top/$out/logs
  swift build --build-tests --sanitize="$sanitizer" --scratch-path "$out"
  rm -rf "$logs"
  mkdir -p "$logs"
  options="halt_on_error=0:log_path=$logs/report"
  preload=
  skip=
  case "$sanitizer" in
    thread)
      library=$(find "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift/linux" \
        -name libswiftSynchronization.so | head -1)
      for symbol in 9_lockSlowyys6UInt32VF 12_tryLockSlowSbyF 11_unlockSlowyyF; do
        nm -D "$library" | grep -q "_MutexHandleV$symbol\$" || {
          echo "sanitize: $library has no _MutexHandle.${symbol}: update Tests/Scripts/tsan-swift-mutex.c" >&2
          exit 2
        }
      done
      preload=$top/$out/tsan-swift-mutex.so
      clang -shared -fPIC -O1 -Wall -Werror -o "$preload" Tests/Scripts/tsan-swift-mutex.c -ldl
      export TSAN_OPTIONS="$options:$tsan_options" ;;
    address)
      # The two tests that measure how deep the stack is under a handler
      # mean nothing on AddressSanitizer's fake stacks (frames on the heap,
      # for finding uses after return: each call's frame is elsewhere); they
      # run in the thread run.
      skip='deviceFoundDoesNotGrowWithEveryCall|theSendStartActionDoesNotGrowWithEverySend'
      # Leaks are not checked, as in make fuzz: LeakSanitizer cannot follow
      # the references Swift keeps with tag bits in a pointer's spare bits
      # (an indirect enum's payload such as DBusValue's, an object's side
      # table), so every global made once and every object with a weak
      # reference alive at exit is reported (88 reports in one run).
      export ASAN_OPTIONS="$options:detect_leaks=0:$asan_options" ;;
  esac
  started=$(date +%s)
  status=0
  loaded=${LD_PRELOAD:-}
  [ -z "$preload" ] || loaded=$preload${loaded:+:$loaded}
  BATON_BIN=$top/$out/debug/baton BATON_BENCH_BIN=$top/$out/debug/baton-bench LD_PRELOAD=$loaded \
    nice swift test --skip-build --no-parallel --sanitize="$sanitizer" --scratch-path "$out" \
    ${FILTER:+--filter "$FILTER"} ${skip:+--skip "$skip"} >"$logs/test.log" 2>&1 || status=$?
  seconds=$(($(date +%s) - started))
  unset TSAN_OPTIONS ASAN_OPTIONS
  tests=$(grep -o 'Test run with [0-9]* tests\{0,1\}' "$logs/test.log" | tail -1 | grep -o '[0-9]*' || true)
  failures=$(grep '^✘ Test .* failed after' "$logs/test.log" | grep -vc '^✘ Test run with' || true)
  findings=$(cat "$logs"/report.* 2>/dev/null | grep -c '^SUMMARY: ' || true)
  # A report without a SUMMARY is the sanitizer itself failing (a bad option,
  # a mapping it cannot use): that process checked nothing.
  others=$(grep -L '^SUMMARY: ' "$logs"/report.* 2>/dev/null || true)
  line=$(printf '%-8s %6s s %6s tests %4s failed %4s findings' \
    "$sanitizer" "$seconds" "${tests:-?}" "$failures" "$findings")
  summary="$summary$line
"
  echo "$line"
  if [ "$findings" -ne 0 ]; then
    cat "$logs"/report.* | sed -n 's/^SUMMARY: //p' | sort | uniq -c | sort -rn | sed 's/^/    /'
    echo "    reports: $logs/report.*"
    failed=1
  fi
  if [ -n "$others" ]; then
    echo "    the sanitizer failed in $(echo "$others" | wc -l) processes, e.g.:"
    head -3 "$(echo "$others" | head -1)" | sed 's/^/    /'
    failed=1
  fi
  if [ "$status" -ne 0 ] || [ "$failures" -ne 0 ] || [ -z "$tests" ]; then
    grep '^✘ Test .* failed after' "$logs/test.log" | head -20 | sed 's/^/    /'
    echo "    swift test exited $status; log: $logs/test.log"
    failed=1
  fi
done
printf '\n%s' "$summary"
[ "$failed" -eq 0 ] || { echo "sanitize: findings or failures (see above)"; exit 1; }
