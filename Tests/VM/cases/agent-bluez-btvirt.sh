# Two guest agents with `controller = bluez:hci0` / `bluez:hci1` (btvirt's two
# controllers, both managed by the same bluetoothd) hand a note each way,
# byte-identical. Coexistence while they run: `bluetoothctl show` still reports
# both adapters powered, another D-Bus client discovers on hci0 and another
# client advertises on hci0 (btmgmt add-adv, its own instance), and a note
# still arrives afterwards.
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

# Coexistence (on btvirt another client's discovery may not hear hci1: it
# sends one report per scan start, see README; so only its start is required).
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
timeout 10 bluetoothctl --timeout 6 scan le >/tmp/scan.log 2>&1 || true
sed 's/\x1b\[[0-9;]*m//g' /tmp/scan.log
grep -q "Discovery started" /tmp/scan.log || { echo "FAILED: another client could not discover next to the agent"; exit 1; }
grep -q "Device $(adapter_address hci1)" /tmp/scan.log && echo "the other client's discovery heard hci1"
echo "$(now) another client advertised and discovered next to the agents"
cp /cases/data/a-to-b.md /tmp/a/again.md
wait_for_note /tmp/b/again.md /cases/data/a-to-b.md 30 || { explain a b; exit 1; }
btmgmt --index 0 rm-adv "${inst:-2}" >/dev/null
still_running $A a
still_running $B b
kill -TERM $A $B
wait $A || { echo "FAILED: agent a exited $? on SIGTERM"; cat /tmp/a.log; exit 1; }
wait $B || { echo "FAILED: agent b exited $? on SIGTERM"; cat /tmp/b.log; exit 1; }
