# baton agent --controller hciN in the guest, on the adapter bridged to the
# host's simulated radio, comes up (bring-up, advertising, scanning through
# libbluetooth's lookup and the user channel) and hands notes with a host
# agent on tcp: both ways. The host (run.sh) saves from-host.md once it sees
# AGENT-UP, and checks from-guest.md in its own folder afterwards.
. /cases/lib.sh
have_agent
start_bridge
start_agent guest "hci$HCI" --hci-log /tmp/guest.btsnoop
G=$AGENT_PID
wait_agent_up guest 60
still_running $G guest
echo "AGENT-UP" >/dev/console
cp /cases/data/from-guest.md /tmp/guest/from-guest.md
wait_for_note /tmp/guest/from-host.md /cases/data/from-host.md 40 || { cat /tmp/guest.log; exit 1; }
echo "HOST-NOTE-ARRIVED" >/dev/console
# (The host saves from-host.md only once from-guest.md has arrived there.)
still_running $G guest
stop_agent $G guest
grep -q "hci$HCI" /tmp/guest.log || { echo "FAILED: the log never names hci$HCI"; cat /tmp/guest.log; exit 1; }
dump_btsnoop /tmp/guest.btsnoop
