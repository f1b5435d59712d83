# With bluetoothd's privacy on, no seal is heard under two addresses
# (PROTOCOL.md 3.3): two agents on `bluez:hci0` and `bluez:hci1` (btvirt's
# two controllers, one bluetoothd with `Privacy = device` in main.conf) link
# and pass a note, then stay linked for VM_PRIVACY_STEADY seconds (default
# 200) while the kernel's RPA timeout is 60 s (debugfs rpa_timeout, set
# before bluetoothd powers the adapters), so every address the kernel gives
# an advertising set expires a few times over; btmon records every
# adapter's HCI traffic. The recording goes to the host
# (agent-bluez-privacy.btsnoop), where Tests/VM/scan-timeline.py --seals
# lists every (seal, address) interval of each adapter and fails the host
# check privacy-seals if one seal went out under two addresses.
#
# The kernel (6.1, extended advertising) keeps the address it gave a set
# while the set lives, and gives the set's unchanged data a new one only
# when it sets the live set up again after the address expired
# (hci_setup_ext_adv_instance_sync), which it does for its current
# instance: after a connection to that set ended, when a mgmt client sets
# the adapter connectable, among others. So the case has such events: first
# another mgmt client disconnects the link (`btmgmt disconnect`: a
# connection to one of the two sets ends; the agents link again and pass a
# note), then every 20 s of the steady period another mgmt client sets both
# adapters connectable (`btmgmt connectable on`, as a settings panel may).
# (Measured: that made the kernel advertise its own instance 0, the
# adapter's name, from a new address each time; our sets kept theirs.)
#
# (scan-timeline.py counts time from the first "MGMT Open: btmgmt" in the
# recording: the `btmgmt info` after bluetoothd powered the adapters.) Every
# wait is on a log line or a file, except the steady period itself.
. /cases/lib.sh
have_bluez_backend
steady=${VM_PRIVACY_STEADY:-200}
rpa=60
# set_rpa_timeout: every adapter's rpa_timeout, through debugfs.
set_rpa_timeout() {
  for h in hci0 hci1; do
    f=/sys/kernel/debug/bluetooth/$h/rpa_timeout
    [ -w "$f" ] || { echo "FAILED: no $f (debugfs)"; return 1; }
    echo "$rpa" >"$f"
    echo "$(now) $h rpa_timeout $(cat "$f") s"
  done
}
mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
start_btvirt
set_rpa_timeout
start_btmon
BLUEZ_PRIVACY=device start_bluez
grep -n "^Privacy" /etc/bluetooth/main.conf
wait_powered hci0
wait_powered hci1
# bluetoothd's power-on must not have reset it.
set_rpa_timeout
btmgmt --index 0 info | grep -i "current settings"
start_agent a bluez:hci0
A=$AGENT_PID
start_agent b bluez:hci1
B=$AGENT_PID
wait_agent_up a
wait_agent_up b
wait_log /tmp/a.log "link with .* up \(" 60 || { explain a b; exit 1; }
wait_log /tmp/b.log "link with .* up \(" 60 || { explain a b; exit 1; }
echo "$(now) linked: $(grep -m1 "link with .* up (" /tmp/a.log)"
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { explain a b; exit 1; }
# The link's connection ends (another mgmt client disconnects it), and the
# agents link again.
la=$(wc -l </tmp/a.log)
lb=$(wc -l </tmp/b.log)
# (Every LE connection of hci0: a session may have one of its own beside
# the link's.)
btmgmt --index 0 con 2>/dev/null | grep " type LE" >/tmp/con.txt ||
  { echo "FAILED: no LE connection on hci0 (btmgmt con)"; explain a b; exit 1; }
while read -r peer rest; do
  case $rest in *Random*) type=2 ;; *) type=1 ;; esac
  echo "$(now) disconnecting $peer $rest"
  btmgmt --index 0 disconnect -t $type "$peer"
done </tmp/con.txt
wait_log /tmp/a.log "link with .* up \(" 60 "$la" || { explain a b; exit 1; }
wait_log /tmp/b.log "link with .* up \(" 60 "$lb" || { explain a b; exit 1; }
echo "$(now) linked again: $(tail -n +$((la + 1)) /tmp/a.log | grep -m1 "link with .* up (")"
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note /tmp/a/b-to-a.md /cases/data/b-to-a.md 30 || { explain a b; exit 1; }
# resetup: another client sets both adapters connectable (they are already).
resetup() {
  for i in 0 1; do
    btmgmt --index $i connectable on >/dev/null 2>&1 || echo "$(now) btmgmt connectable on hci$i failed"
  done
}
echo "$(now) linked for $steady s; both adapters set connectable again every 20 s"
t0=$(cut -d. -f1 /proc/uptime)
while [ $(($(cut -d. -f1 /proc/uptime) - t0)) -lt "$steady" ]; do
  sleep 20
  resetup
done
still_running $A a
still_running $B b
echo "agent a's beacon changes (its log):"
grep -iE "rotat|beacon|privacy|rpa" /tmp/a.log | tail -20
stop_agent $A a
stop_agent $B b
kill "$BTMON_PID"
wait "$BTMON_PID" 2>/dev/null || true
cp /tmp/hci.btsnoop /tmp/agent-bluez-privacy.btsnoop
echo "$(now) recording: $(wc -c </tmp/agent-bluez-privacy.btsnoop) bytes"
dump_btsnoop /tmp/agent-bluez-privacy.btsnoop
