# Passive scanning through bluetoothd's advertisement monitor (baton(1),
# Scanning): one bluetoothd run with experimental features (-E, as
# `Experimental = true` in main.conf would), so each adapter has an
# AdvertisementMonitorManager1; two agents on `bluez:hci0` and `bluez:hci1`
# (btvirt's two controllers, stock main.conf otherwise: Privacy off) register
# their monitor, say so in their log and `baton status`, link and pass a
# note, while btmon records every adapter's HCI and mgmt traffic. The
# recording goes to the host (agent-bluez-monitor.btsnoop), where
# Tests/VM/scan-timeline.py --no-discovery checks that no mgmt discovery
# command and no active scan appears in it (case monitor-passive), and
# reports the scan parameters the kernel used (FACT lines).
#
# As in agent-bluez-scan, `btmgmt info` marks link-up and the end on the
# recording's own clock (btmon logs "MGMT Open: btmgmt"). Every wait is on
# a log line, a file or a command's output.
. /cases/lib.sh
have_bluez_backend
mark() {
  btmgmt --index 0 info >/dev/null 2>&1 || { echo "FAILED: btmgmt info (marker for $1)"; return 1; }
  echo "$(now) marker: $1"
}
start_btvirt
start_btmon
BLUETOOTHD_ARGS=-E start_bluez
wait_powered hci0
wait_powered hci1
start_agent a bluez:hci0
A=$AGENT_PID
start_agent b bluez:hci1
B=$AGENT_PID
wait_agent_up a
wait_agent_up b
# The host says which mode runs, once (BlueZHost+Monitor).
wait_log /tmp/a.log "scanning passively: bluetoothd's advertisement monitor is active" 30 ||
  { explain a b; exit 1; }
wait_log /tmp/b.log "scanning passively: bluetoothd's advertisement monitor is active" 30 ||
  { explain a b; exit 1; }
wait_log /tmp/a.log "link with .* up \(" 60 || { explain a b; exit 1; }
wait_log /tmp/b.log "link with .* up \(" 60 || { explain a b; exit 1; }
mark link-up
echo "$(now) linked: $(grep -m1 "link with .* up (" /tmp/a.log)"
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { explain a b; exit 1; }
for n in a b; do
  line=$(baton status --socket /tmp/$n.sock 2>&1 | grep "^scanning:" || true)
  echo "$(now) agent $n: $line"
  [ "$line" = "scanning: passive (bluetoothd advertisement monitor)" ] ||
    { echo "FAILED: agent $n's status says \"$line\""; explain a b; exit 1; }
done
if grep -h "discovering (LE" /tmp/a.log /tmp/b.log; then
  echo "FAILED: an agent started a discovery beside the monitor"; explain a b; exit 1
fi
still_running $A a
still_running $B b
mark end
stop_agent $A a
stop_agent $B b
kill "$BTMON_PID"
wait "$BTMON_PID" 2>/dev/null || true
cp /tmp/hci.btsnoop /tmp/agent-bluez-monitor.btsnoop
echo "$(now) recording: $(wc -c </tmp/agent-bluez-monitor.btsnoop) bytes"
dump_btsnoop /tmp/agent-bluez-monitor.btsnoop
