# The kernel-adapter route of the shipped user unit (Config/baton.service):
# the binary at the unit's own ExecStart path, /usr/local/bin/baton, with the
# file capability (`setcap cap_net_admin+ep`), and controller = hci0 (btvirt,
# no bluetoothd). The unit as shipped cannot open the adapter (its sandbox
# keeps the file capability from working: the agent says CAP_NET_ADMIN and
# the start fails); with the drop-in exactly as the unit's comments give it,
# the agent runs with CAP_NET_ADMIN permitted (effective only while it binds
# the adapter) and NoNewPrivs 0, hands a note each way
# with a root agent on hci1, byte-identical, and stops cleanly.
. /cases/lib.sh
have_agent
start_btvirt
start_user_manager
mkdir -p /usr/local/bin
cp /usr/bin/baton /usr/local/bin/baton
/usr/sbin/setcap cap_net_admin+ep /usr/local/bin/baton
UNIT_BIN=/usr/local/bin/baton
# The drop-in from the unit's comments (option 1), the lines between its
# [Service] and ProtectHostname=no.
sed -n '/^#       \[Service\]$/,/^#       ProtectHostname=no$/s/^#       //p' /cases/data/baton.service >/tmp/setcap.conf
echo "the drop-in ($(wc -l </tmp/setcap.conf) lines):"; cat /tmp/setcap.conf
[ "$(head -1 /tmp/setcap.conf)" = "[Service]" ] && [ "$(wc -l </tmp/setcap.conf)" -ge 10 ] \
  || { echo "FAILED: no capability drop-in found in the unit's comments"; exit 1; }

# As shipped: refused, with the capability named.
install_unit hci0
# (It reports ready before it opens the adapter, so the start itself may pass.)
as_baton "systemctl --user start baton" || true
wait_log "$UNIT_HOME/agent.log" "CAP_NET_ADMIN" 20 || { unit_explain; exit 1; }
echo "the sandboxed agent said:"; grep "CAP_NET_ADMIN" "$UNIT_HOME/agent.log" | head -n 1
as_baton "systemctl --user stop baton"
as_baton "systemctl --user reset-failed baton" || true

# With the drop-in.
install_unit hci0 /tmp/setcap.conf
start_agent b hci1
B=$AGENT_PID
as_baton "systemctl --user enable --now baton" || {
  echo "FAILED: systemctl --user enable --now baton (with the capability drop-in)"; unit_explain; exit 1; }
PID=$(as_baton "systemctl --user show -p MainPID --value baton")
echo "$(now) baton.service active, main pid $PID"
grep -E "^(Uid|NoNewPrivs|Seccomp|CapPrm|CapEff|CapBnd):" "/proc/$PID/status"
[ "$(unit_status_field NoNewPrivs)" = 0 ] || { echo "FAILED: NoNewPrivs is not 0"; exit 1; }
# Permitted, to open the adapter (again); effective only while it binds it.
[ $((0x$(unit_status_field CapPrm) & 0x1000)) != 0 ] || { echo "FAILED: no CAP_NET_ADMIN in CapPrm"; exit 1; }
[ $((0x$(unit_status_field CapEff) & 0x1000)) = 0 ] || { echo "FAILED: CAP_NET_ADMIN effective in the main thread"; exit 1; }
LOG=$UNIT_HOME/agent.log wait_agent_up unit
wait_agent_up b
SAVED_AT=$(now); su -s /bin/sh baton -c "cp /cases/data/a-to-b.md $UNIT_HOME/notes/a-to-b.md"
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { unit_explain; cat /tmp/b.log; exit 1; }
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note "$UNIT_HOME/notes/b-to-a.md" /cases/data/b-to-a.md 30 || { unit_explain; cat /tmp/b.log; exit 1; }
stop_unit
stop_agent $B b
rm -f /usr/local/bin/baton
