# The scan schedule on the air (baton(1), Scanning), measured on the BlueZ
# backend: two agents on `bluez:hci0` and `bluez:hci1` (btvirt's two
# controllers, one bluetoothd, stock main.conf: Privacy off) link and pass a
# note, then stay idle and linked for VM_SCAN_STEADY seconds (default 130:
# two windows at the open linked 60 s gap, four of 1.4 s at the closed
# 28 s one, which Privacy off gives) while btmon records every adapter's
# HCI traffic. The recording goes to the host (agent-bluez-scan.btsnoop),
# where Tests/VM/scan-timeline.py decodes it with `btmon -r` and checks hci0's
# scanning (case scan-duty: duty at most 5 %, no scan over 3 s) and reports
# which address the beacon went out on (FACT lines only).
#
# The host needs the moments of link-up and of the end of the steady period
# on the recording's own clock: btmon logs each mgmt client that opens the
# control socket ("MGMT Open: btmgmt"), so the case runs `btmgmt info` at
# each moment, as a marker. Every wait is on a log line or a file, except
# the steady period itself.
. /cases/lib.sh
have_bluez_backend
steady=${VM_SCAN_STEADY:-130}
# mark WHAT: a "MGMT Open: btmgmt" in the recording, now.
mark() {
  btmgmt --index 0 info >/dev/null 2>&1 || { echo "FAILED: btmgmt info (marker for $1)"; return 1; }
  echo "$(now) marker: $1"
}
start_btvirt
start_btmon
start_bluez
wait_powered hci0
wait_powered hci1
start_agent a bluez:hci0
A=$AGENT_PID
start_agent b bluez:hci1
B=$AGENT_PID
wait_agent_up a
wait_agent_up b
# Linked (HandoffEngine.runLink: "link with <peer> up (...)"), both sides.
wait_log /tmp/a.log "link with .* up \(" 60 || { explain a b; exit 1; }
wait_log /tmp/b.log "link with .* up \(" 60 || { explain a b; exit 1; }
mark link-up
echo "$(now) linked: $(grep -m1 "link with .* up (" /tmp/a.log)"
la=$(wc -l </tmp/a.log)
lb=$(wc -l </tmp/b.log)
# The link carries a note (so it is proven, not just announced).
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { explain a b; exit 1; }
still_running $A a
still_running $B b
# The steady state: nothing to do, every peer linked. The only timed wait.
echo "$(now) idle and linked for $steady s"
# What the idle, linked agent and bluetoothd cost (issue 25), for as long
# as the rest of the steady period: from the end of a's start burst, and
# of each side's first scan window after it. That window hears the other's
# beacon under the address its closed beacon now has, and the link is
# probed once (a PING each way): link set-up, not the idle state.
started=$(now)
wait_steady a || true
if [ "${VM_SCANNING:-}" != continuous ]; then
  first_window_over a "$(wc -l </tmp/a.log)" &
  first_a=$!
  first_window_over b "$(wc -l </tmp/b.log)" ||
    echo "$(now) agent b had no scan window within 45 s (measuring anyway)"
  wait $first_a || echo "$(now) agent a had no scan window within 45 s (measuring anyway)"
fi
cpu_a=$(proc_sample $A)
cpu_bluez=$(proc_sample $BLUEZ_PID)
thread_sample $A >/tmp/a.threads.before
cpu_from=$(now)
echo "$(now) measuring agent a and bluetoothd from here"
left=$(awk -v s="$steady" -v a="$started" -v b="$cpu_from" 'BEGIN {l = s - (b - a); print (l < 10 ? 10 : int(l))}')
sleep "$left"
still_running $A a
still_running $B b
mark end
note_cpu agent-bluez-scan "agent a" "$cpu_a" "$(proc_sample $A)" "$left"
note_cpu agent-bluez-scan bluetoothd "$cpu_bluez" "$(proc_sample $BLUEZ_PID)" "$left"
thread_sample $A >/tmp/a.threads.after
note_threads agent-bluez-scan "agent a" /tmp/a.threads.before /tmp/a.threads.after "$left"
# A link that went down meanwhile (and its burst) would be measured as the
# linked steady state: say so.
if tail -n +$((la + 1)) /tmp/a.log | grep -E "link with .* down" ||
  tail -n +$((lb + 1)) /tmp/b.log | grep -E "link with .* down"; then
  echo "FAILED: a link went down during the steady period"; explain a b; exit 1
fi
echo "agent a's scan schedule (its debug lines, in order):"
grep "scan schedule" /tmp/a.log | tail -20
stop_agent $A a
stop_agent $B b
# btmon buffers its writes: stop it so the file is complete.
kill "$BTMON_PID"
wait "$BTMON_PID" 2>/dev/null || true
cp /tmp/hci.btsnoop /tmp/agent-bluez-scan.btsnoop
echo "$(now) recording: $(wc -c </tmp/agent-bluez-scan.btsnoop) bytes"
dump_btsnoop /tmp/agent-bluez-scan.btsnoop
