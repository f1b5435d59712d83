# bluetoothd killed and restarted while two BlueZ agents run (btvirt's hci0 and
# hci1): the agents stay up, log that bluetoothd went away, re-register, and
# the next note still arrives; then the adapter powered off and on again
# (bluetoothctl): the agents wait and resume, and a note still arrives.
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
sleep 3
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { cat /tmp/a.log /tmp/b.log; exit 1; }

lines=$(wc -l </tmp/a.log)
kill -KILL $BLUEZ_PID
wait $BLUEZ_PID 2>/dev/null || true
echo "$(now) bluetoothd killed"
sleep 2
still_running $A a
still_running $B b
start_bluetoothd
wait_powered hci0
wait_powered hci1
tail -n +$((lines + 1)) /tmp/a.log >/tmp/a-after.log
grep -qiE "bluetoothd|org\.bluez" /tmp/a-after.log \
  || { echo "FAILED: agent a never logged that bluetoothd went away"; cat /tmp/a-after.log; exit 1; }
echo "agent a logged:"; grep -iE "bluetoothd|org\.bluez" /tmp/a-after.log | head -5
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note /tmp/a/b-to-a.md /cases/data/b-to-a.md 40 || { cat /tmp/a.log /tmp/b.log; exit 1; }

btmgmt --index 0 power off
sleep 2
still_running $A a
btmgmt --index 0 power on
wait_powered hci0
cp /cases/data/a-to-b.md /tmp/a/after-power.md
wait_for_note /tmp/b/after-power.md /cases/data/a-to-b.md 40 || { cat /tmp/a.log /tmp/b.log; exit 1; }
still_running $A a
still_running $B b
kill -TERM $A $B
wait $A || { echo "FAILED: agent a exited $? on SIGTERM"; cat /tmp/a.log; exit 1; }
wait $B || { echo "FAILED: agent b exited $? on SIGTERM"; cat /tmp/b.log; exit 1; }
