# Two guest agents with `controller = bluez:hci0` / `bluez:hci1` (btvirt's two
# controllers, both managed by the same bluetoothd) hand a note each way,
# byte-identical. Coexistence while they run: `bluetoothctl show` still reports
# both adapters powered, another client advertises on hci0 (btmgmt add-adv,
# its own instance) and another D-Bus client discovers on hci0, and a note
# still arrives meanwhile. Then bluetoothd is killed and restarted, and hci0
# powered off and on (see below). (One case: the set-up costs as much as a
# step.)
. /cases/lib.sh
have_bluez_backend
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
still_running $A a
still_running $B b
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { explain a b; exit 1; }
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note /tmp/a/b-to-a.md /cases/data/b-to-a.md 30 || { explain a b; exit 1; }

# Coexistence (on btvirt another client's discovery may not hear the other
# adapter: it sends one report per scan start, see README; so only its start
# is required).
for h in hci0 hci1; do
  bluetoothctl show "$(adapter_address $h)" | grep -q "Powered: yes" \
    || { echo "FAILED: $h not powered while the agents run"; bluetoothctl show "$(adapter_address $h)"; exit 1; }
done
echo "$(now) both adapters still powered"
# Another client's advertising instance next to the agent's (which bluetoothd
# registered as instance 1): the highest instance the adapter supports.
btmgmt --index 0 advinfo >/tmp/advinfo.log 2>&1 || true
cat /tmp/advinfo.log
inst=$(sed -n 's/.*[Mm]ax instances: *\([0-9]*\).*/\1/p' /tmp/advinfo.log)
btmgmt --index 0 add-adv -g -d 0bffffff0102030405060708 "${inst:-2}" \
  || { echo "FAILED: another client could not advertise on hci0 next to the agent"; exit 1; }
# Another D-Bus client discovers on hci0 (bluetoothctl, for 8 s) while a
# note goes from a to b: the agents keep working meanwhile. (bluetoothctl
# writes its output to a file only when it exits: its exit is the signal.)
bluetoothctl --timeout 8 scan le >/tmp/scan.log 2>&1 &
S=$!
save_note /cases/data/a-to-b.md /tmp/a/again.md
wait_for_note /tmp/b/again.md /cases/data/a-to-b.md 30 || { explain a b; exit 1; }
if kill -0 $S 2>/dev/null; then echo "$(now) the note arrived while the other client discovered"; fi
wait $S || true
sed 's/\x1b\[[0-9;]*m//g' /tmp/scan.log | grep -E "Discovery|Device $(adapter_address hci1)" | head -3
grep -q "Discovery started" /tmp/scan.log || { echo "FAILED: another client could not discover next to the agent"; exit 1; }
echo "$(now) another client advertised on hci0 and discovered next to the agents"
btmgmt --index 0 rm-adv "${inst:-2}" >/dev/null

# bluetoothd killed and restarted while the agents run: they stay up, log
# that bluetoothd went away, register again when it is back, and the next note
# still arrives; then adapter hci0 powered off and on again (btmgmt): agent a
# logs it, waits, resumes, and a note still arrives. Every step waits on the
# agents' logs, never on a fixed time.
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
# Registered again with the new bluetoothd: advertising and discovery, after
# the agent noticed it (lines before that may be from the old one).
wait_log /tmp/a.log "registering again" 30 "$la"
wait_log /tmp/b.log "registering again" 30 "$lb"
la=$(grep -n "registering again" /tmp/a.log | tail -1 | cut -d: -f1)
lb=$(grep -n "registering again" /tmp/b.log | tail -1 | cut -d: -f1)
# Discovery again: in the burst that the adapter's return starts, or, when
# the killed bluetoothd's last discovery still holds the kernel for all of
# it ("cannot discover yet"), in the next scan window (at most 72 s later
# while linked: baton(1), Scanning).
wait_log /tmp/a.log "advertisement registered" 30 "$la"
wait_log /tmp/a.log "discovering" 90 "$la"
wait_log /tmp/b.log "advertisement registered" 30 "$lb"
wait_log /tmp/b.log "discovering" 90 "$lb"
echo "$(now) both agents registered again with the new bluetoothd"
save_note /cases/data/b-to-a.md /tmp/b/after-restart.md
wait_for_note /tmp/a/after-restart.md /cases/data/b-to-a.md 40 || { explain a b; exit 1; }

la=$(wc -l </tmp/a.log)
btmgmt --index 0 power off
wait_log /tmp/a.log "powered off" 15 "$la"
still_running $A a
echo "agent a logged: $(tail -n +$((la + 1)) /tmp/a.log | grep "powered off" | head -1)"
btmgmt --index 0 power on
wait_powered hci0
wait_log /tmp/a.log "is up, managed by bluetoothd" 30 "$la"
la=$(grep -n "is up, managed by bluetoothd" /tmp/a.log | tail -1 | cut -d: -f1)
wait_log /tmp/a.log "advertisement registered" 30 "$la"
save_note /cases/data/a-to-b.md /tmp/a/after-power.md
wait_for_note /tmp/b/after-power.md /cases/data/a-to-b.md 40 || { explain a b; exit 1; }
still_running $A a
still_running $B b
stop_agent $A a
stop_agent $B b
