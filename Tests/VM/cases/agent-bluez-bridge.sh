# A guest agent with `controller = bluez` (bluetoothd managing the adapter
# bridged to the host's simulated radio) and a host agent on tcp: hand notes
# both ways, byte-identical; bluetoothd still reports the adapter powered
# afterwards. The host (run.sh) saves from-host.md once it sees AGENT-UP, and
# checks from-guest.md in its own folder.
. /cases/lib.sh
have_bluez_backend
start_bridge
start_btmon
start_bluez
wait_powered "hci$HCI"
start_agent guest bluez
G=$AGENT_PID
wait_agent_up guest 60
still_running $G guest
echo "AGENT-UP" >/dev/console
cp /cases/data/from-guest.md /tmp/guest/from-guest.md
wait_for_note /tmp/guest/from-host.md /cases/data/from-host.md 40 || { explain guest; exit 1; }
echo "HOST-NOTE-ARRIVED" >/dev/console
# (The host saves from-host.md only once from-guest.md has arrived there.)
still_running $G guest
# VM_BRIDGE_STEADY (bench-bluez.sh, with strangers on the host's radio): the
# linked agent idles; its CPU and wake-ups and bluetoothd's, as NOTE-CPU lines.
steady=${VM_BRIDGE_STEADY:-0}
if [ "$steady" -gt 0 ]; then
  wait_steady guest || true
  # Its first window after the burst probes the link once (agent-bluez-scan).
  if [ "${VM_SCANNING:-}" != continuous ]; then
    first_window_over guest "$(wc -l </tmp/guest.log)" ||
      echo "$(now) the guest agent had no scan window within 45 s (measuring anyway)"
  fi
  echo "$(now) idle and linked for $steady s"
  cpu_guest=$(proc_sample $G)
  cpu_bluez=$(proc_sample $BLUEZ_PID)
  thread_sample $G >/tmp/guest.threads.before
  sleep "$steady"
  still_running $G guest
  note_cpu agent-bluez-bridge "guest agent" "$cpu_guest" "$(proc_sample $G)" "$steady"
  note_cpu agent-bluez-bridge bluetoothd "$cpu_bluez" "$(proc_sample $BLUEZ_PID)" "$steady"
  thread_sample $G >/tmp/guest.threads.after
  note_threads agent-bluez-bridge "guest agent" /tmp/guest.threads.before /tmp/guest.threads.after "$steady"
fi
timeout 10 bluetoothctl show "$(adapter_address "hci$HCI")" >/tmp/show.log 2>&1 || true
grep -q "Powered: yes" /tmp/show.log \
  || { echo "FAILED: bluetoothctl show does not say powered after the agent ran:"; cat /tmp/show.log; exit 1; }
stop_agent $G guest
