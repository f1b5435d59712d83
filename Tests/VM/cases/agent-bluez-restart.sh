# bluetoothd killed and restarted while two BlueZ agents run (btvirt's hci0 and
# hci1): the agents stay up, log that bluetoothd went away, register again
# when it is back, and the next note still arrives; then adapter hci0 powered
# off and on again (btmgmt): agent a logs it, waits, resumes, and a note still
# arrives. Every step waits on the agents' logs, never on a fixed time.
. /cases/lib.sh
have_bluez_backend
start_btvirt
start_bluez
wait_powered hci0
wait_powered hci1
start_agent a bluez:hci0
A=$AGENT_PID
start_agent b bluez:hci1
B=$AGENT_PID
wait_agent_up a
wait_agent_up b
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { explain a b; exit 1; }

la=$(wc -l </tmp/a.log)
lb=$(wc -l </tmp/b.log)
kill -KILL $BLUEZ_PID
wait $BLUEZ_PID 2>/dev/null || true
echo "$(now) bluetoothd killed"
wait_log /tmp/a.log "bluetoothd left the system bus" 15 "$la"
wait_log /tmp/b.log "bluetoothd left the system bus" 15 "$lb"
still_running $A a
still_running $B b
echo "agent a logged:"; tail -n +$((la + 1)) /tmp/a.log | grep -iE "bluetoothd|org\.bluez" | head -5
start_bluetoothd
wait_powered hci0
wait_powered hci1
# Registered again with the new bluetoothd: advertising and discovery.
wait_log /tmp/a.log "advertisement registered" 30 "$la"
wait_log /tmp/a.log "discovering" 30 "$la"
wait_log /tmp/b.log "advertisement registered" 30 "$lb"
wait_log /tmp/b.log "discovering" 30 "$lb"
echo "$(now) both agents registered again with the new bluetoothd"
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note /tmp/a/b-to-a.md /cases/data/b-to-a.md 40 || { explain a b; exit 1; }

la=$(wc -l </tmp/a.log)
btmgmt --index 0 power off
wait_log /tmp/a.log "powered off" 15 "$la"
still_running $A a
echo "agent a logged: $(tail -n +$((la + 1)) /tmp/a.log | grep "powered off" | head -1)"
btmgmt --index 0 power on
wait_powered hci0
wait_log /tmp/a.log "is up, managed by bluetoothd" 30 "$la"
wait_log /tmp/a.log "advertisement registered" 30 "$la"
save_note /cases/data/a-to-b.md /tmp/a/after-power.md
wait_for_note /tmp/b/after-power.md /cases/data/a-to-b.md 40 || { explain a b; exit 1; }
still_running $A a
still_running $B b
kill -TERM $A $B
wait $A || { echo "FAILED: agent a exited $? on SIGTERM"; cat /tmp/a.log; exit 1; }
wait $B || { echo "FAILED: agent b exited $? on SIGTERM"; cat /tmp/b.log; exit 1; }
