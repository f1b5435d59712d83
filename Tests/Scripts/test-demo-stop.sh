#!/usr/bin/env bash
# Checks that Ctrl-C stops everything `make demo` started even when its output
# goes through a pipe whose reader dies with it (`make demo | tee demo.log`):
# the terminal's SIGINT goes to the whole foreground process group, tee
# included. Exits 1, naming what was left running, when anything is.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
log=$(mktemp /tmp/baton-demo-stop.XXXXXX)
trap 'rm -f "$log"' EXIT

# A process group of its own, as an interactive shell gives a pipeline. With
# job control on, the job also keeps SIGINT (a non-interactive shell's
# background jobs would otherwise ignore it, and so could not trap it). A
# disposition inherited as ignored survives both set -m and exec, and a shell
# cannot trap what it was started ignoring, so when this script itself runs in
# the background (nohup, `cmd &` in a loop) the demo would never see Ctrl-C: a
# terminal's shell gives its jobs the default, so reset it to that here.
set -m
env --default-signal=INT bash -c 'make -s demo 2>&1 | tee "$1" >/dev/null' _ "$log" </dev/null &
leader=$!
set +m
for _ in $(seq 1 600); do
  grep -q "Press Ctrl-C" "$log" && break
  kill -0 "$leader" 2>/dev/null || { echo "test-demo-stop: the demo ended early:"; cat "$log"; exit 1; }
  sleep 0.5
done
grep -q "Press Ctrl-C" "$log" || { echo "test-demo-stop: the demo did not start in 300 s"; exit 1; }
demo=$(grep -o '/tmp/baton-demo\.[A-Za-z0-9]*' "$log" | head -n 1)
read -r port1 port2 < <(sed -n 's/^demo: radio on ports \([0-9]*\) and \([0-9]*\);.*/\1 \2/p' "$log")
[ -n "$demo" ] && [ -n "$port1" ] || { echo "test-demo-stop: no demo folder or ports in:"; cat "$log"; exit 1; }

kill -INT -- "-$leader"   # what Ctrl-C does
for _ in $(seq 1 100); do kill -0 "$leader" 2>/dev/null || break; sleep 0.1; done

left=()
for _ in $(seq 1 50); do
  left=()
  pgrep -f "$demo" >/dev/null && left+=("agents: $(pgrep -af "$demo" | tr '\n' ';')")
  for port in "$port1" "$port2"; do
    ss -ltnH "sport = :$port" | grep -q . && left+=("the radio, still listening on $port")
  done
  [ ${#left[@]} -eq 0 ] && break
  sleep 0.1
done
if [ ${#left[@]} -ne 0 ]; then
  echo "test-demo-stop: Ctrl-C left running: ${left[*]}"
  pkill -f "$demo" || true
  for pid in $(ss -ltnpH "( sport = :$port1 or sport = :$port2 )" | grep -o 'pid=[0-9]*' | cut -d= -f2); do
    kill "$pid" || true
  done
  exit 1
fi
echo "test-demo-stop: Ctrl-C with the output piped to tee stopped the agents and the radio"

# The demo stops quietly: nothing the radio or an agent calls an error while
# it stops (the tee above dies with Ctrl-C, so this run writes to a file). Two
# agents stopped at once end their link together, and each of the radio's
# controllers logs the other's end as an error (about one stop in six).
BATON_DEMO_SECONDS=0 make -s demo >"$log" 2>&1 </dev/null ||
  { echo "test-demo-stop: the demo failed:"; cat "$log"; exit 1; }
if sed -n '/^demo: stopping/,$p' "$log" | grep -E 'ERROR|Error|Traceback'; then
  echo "test-demo-stop: the demo's stop printed the errors above"
  exit 1
fi
grep -q '^demo: stopped' "$log" || { echo "test-demo-stop: the demo did not say it stopped:"; cat "$log"; exit 1; }
echo "test-demo-stop: the demo stopped with no error"
