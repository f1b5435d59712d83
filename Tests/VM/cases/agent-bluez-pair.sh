# Pairing by code beside a real bluetoothd (baton(1) pair, PROTOCOL.md 14.7):
# agent a (`bluez:hci0`) founds a group from the key file; agent b
# (`bluez:hci1`) starts with no key file and waits silent on the air. `baton
# pair` on a prints a code and advertises the pairing advertisement through
# LEAdvertisingManager1; `baton pair CODE` on b finds it by discovery,
# connects over a kernel L2CAP socket, pairs, and b restarts as a member: a's
# note arrives on b byte-identical, b's on a, and both `baton pair` commands
# report the other's name. Every step waits on an output line or a file.
. /cases/lib.sh
have_bluez_backend
start_btvirt
start_btmon
start_bluez
wait_powered hci0
wait_powered hci1
start_agent a bluez:hci0
A=$AGENT_PID
KEY=/nonexistent/key start_agent b bluez:hci1
B=$AGENT_PID
wait_agent_up a
wait_log /tmp/b.log "this device is not in a group yet" 30
still_running $B b
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md

baton pair --socket /tmp/a.sock >/tmp/pair-a.out 2>&1 &
PA=$!
wait_log /tmp/pair-a.out "run: baton pair [0-9]{2}-[0-9]{3}-[0-9]{3}" 20
code=$(sed -n 's/.*run: baton pair \([0-9-]*\).*/\1/p' /tmp/pair-a.out | head -1)
echo "$(now) a shows code ${code%%-*}-..."
wait_log /tmp/a.log "showing pairing code" 10
rc=0
typed=$(now)
baton pair --socket /tmp/b.sock "$code" >/tmp/pair-b.out 2>&1 || rc=$?
cat /tmp/pair-b.out
[ "$rc" -eq 0 ] || { echo "FAILED: 'baton pair CODE' on b exited $rc"; cat /tmp/pair-a.out; explain a b; exit 1; }
grep -q "paired with a " /tmp/pair-b.out || { echo "FAILED: b's 'baton pair' does not name a"; exit 1; }
rc=0
wait $PA || rc=$?
cat /tmp/pair-a.out
[ "$rc" -eq 0 ] || { echo "FAILED: 'baton pair' on a exited $rc"; explain a b; exit 1; }
grep -q "paired with b " /tmp/pair-a.out || { echo "FAILED: a's 'baton pair' does not name b"; exit 1; }
echo "$(now) paired"

# b is a member now: a's note, saved before the pairing, arrives, and b's
# goes to a.
SAVED_AT= wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 60 || { explain a b; exit 1; }
paired_in=$(awk -v a="$typed" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
echo "from 'baton pair CODE' to the first note on b: $paired_in s"
echo "NOTE-LATENCY ${CASE_NAME:-?} a-to-b.md $paired_in s from 'baton pair CODE' on b to arrival" >/dev/console
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note /tmp/a/b-to-a.md /cases/data/b-to-a.md 40 || { explain a b; exit 1; }
baton devices --socket /tmp/a.sock | tee /tmp/devices.out
grep -qE "^  b  .* (linked|last seen|not seen)" /tmp/devices.out || { echo "FAILED: a's 'baton devices' does not list b"; exit 1; }
still_running $A a
still_running $B b
stop_agent $A a
stop_agent $B b
