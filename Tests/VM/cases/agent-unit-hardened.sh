# The shipped user unit (Config/baton.service, sandboxed) under a real systemd
# user manager (lib.sh's start_user_manager: cgroup2 with a subtree
# delegated to user baton, `systemd --user` as baton): the unit from the tree
# with its ExecStart rewritten to the guest's baton, as `make install` does,
# and a drop-in only for the agent's log file (there is no journald here),
# enabled and started with controller = bluez:hci0 from ~/.config/baton. The
# unit is active, the agent runs with NoNewPrivs 1 and Seccomp 2 and no
# capability, a note saved in its folder reaches a root agent on bluez:hci1
# (outside the unit) byte-identical and one comes back, the agent logs no
# error; `systemctl --user stop` ends it cleanly (Result=success, exit status
# 0). Prints `systemd-analyze security --user`'s verdict.
. /cases/lib.sh
have_bluez_backend
start_btvirt
# Restricted policy: only root and the bluetooth group may talk to org.bluez,
# so the agent also shows that its supplementary groups survive
# PrivateUsers= (the user namespace leaves them unmapped, not dropped).
start_bluez restricted
wait_powered hci0
wait_powered hci1
start_user_manager
# The commands the agent runs inherit its sandbox; `systemd-run --user`
# (the user manager starts it) runs one outside. An after-command that
# records both (written after install_unit, which starts the home afresh).
UNIT_FOLDER_KEYS="after-command = $UNIT_HOME/after.sh
"
install_unit bluez:hci0
cat >"$UNIT_HOME/after.sh" <<EOS
#!/bin/sh
grep NoNewPrivs /proc/self/status >$UNIT_HOME/after-inside.txt
exec systemd-run --user --collect --quiet $UNIT_HOME/outside.sh
EOS
printf '#!/bin/sh\ngrep NoNewPrivs /proc/self/status >%s/after-outside.txt\n' "$UNIT_HOME" >"$UNIT_HOME/outside.sh"
chmod 755 "$UNIT_HOME/after.sh" "$UNIT_HOME/outside.sh"
chown baton:baton "$UNIT_HOME/after.sh" "$UNIT_HOME/outside.sh"

start_agent b bluez:hci1
B=$AGENT_PID
# Enabled as the documentation says (which also keeps the stopped unit
# loaded, with its exit status, for stop_unit's checks).
as_baton "systemctl --user enable --now baton" || {
  echo "FAILED: systemctl --user enable --now baton"; unit_explain; exit 1; }
# Type=notify: the start returns once the agent said READY=1.
as_baton "systemctl --user is-active baton" | grep -qx active \
  || { echo "FAILED: the unit is not active"; unit_explain; exit 1; }
PID=$(as_baton "systemctl --user show -p MainPID --value baton")
echo "$(now) baton.service active, main pid $PID"
grep -E "^(Uid|Groups|NoNewPrivs|Seccomp|Seccomp_filters|CapEff|CapBnd):" "/proc/$PID/status"
[ "$(unit_status_field NoNewPrivs)" = 1 ] || { echo "FAILED: NoNewPrivs is not 1"; exit 1; }
[ "$(unit_status_field Seccomp)" = 2 ] || { echo "FAILED: Seccomp is not 2 (filter)"; exit 1; }
[ "$(unit_status_field CapBnd)" = 0000000000000000 ] || { echo "FAILED: the bounding set is not empty"; exit 1; }
LOG=$UNIT_HOME/agent.log wait_agent_up unit
wait_agent_up b

SAVED_AT=$(now); su -s /bin/sh baton -c "cp /cases/data/a-to-b.md $UNIT_HOME/notes/a-to-b.md"
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { unit_explain; explain b; exit 1; }
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note "$UNIT_HOME/notes/b-to-a.md" /cases/data/b-to-a.md 30 || { unit_explain; explain b; exit 1; }
as_baton "systemctl --user is-active baton" | grep -qx active \
  || { echo "FAILED: the unit is no longer active"; unit_explain; exit 1; }
i=0
while [ ! -s "$UNIT_HOME/after-outside.txt" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo "after-command: inside $(cat "$UNIT_HOME/after-inside.txt" 2>&1); through systemd-run $(cat "$UNIT_HOME/after-outside.txt" 2>&1)"
grep -qE "NoNewPrivs:[[:space:]]+1" "$UNIT_HOME/after-inside.txt" \
  || { echo "FAILED: the after-command did not run in the sandbox"; unit_explain; exit 1; }
grep -qE "NoNewPrivs:[[:space:]]+0" "$UNIT_HOME/after-outside.txt" \
  || { echo "FAILED: systemd-run --user did not run the command outside the sandbox"; unit_explain; exit 1; }
# What the sandbox refused would show up as an error in the agent's log.
! grep -E "^<[0-3]>" "$UNIT_HOME/agent.log" || { echo "FAILED: the agent logged errors under the unit"; exit 1; }

echo "systemd-analyze security --user baton.service:"
as_baton "systemd-analyze security --user --no-pager baton.service" | grep "Overall exposure" || true

stop_unit
stop_agent $B b

# The tcp: route's drop-in, as the unit's comments give it: without it the
# sandbox refuses the agent an Internet socket ("Address family not
# supported"); with it the socket opens and the connection is refused
# (nothing listens on 127.0.0.1:1 here).
grep -x "#     RestrictAddressFamilies=AF_UNIX AF_BLUETOOTH AF_INET AF_INET6" /cases/data/baton.service \
  | sed 's/^#     //' | { echo "[Service]"; cat; } >/tmp/tcp.conf
[ "$(wc -l </tmp/tcp.conf)" = 2 ] || { echo "FAILED: no tcp: drop-in in the unit's comments"; exit 1; }
install_unit tcp:127.0.0.1:1
as_baton "systemctl --user start baton" || true
wait_log "$UNIT_HOME/agent.log" "Address family not supported" 20 || { unit_explain; exit 1; }
echo "without the drop-in: $(grep -m1 "Address family not supported" "$UNIT_HOME/agent.log")"
as_baton "systemctl --user stop baton"
install_unit tcp:127.0.0.1:1 /tmp/tcp.conf
as_baton "systemctl --user start baton" || true
wait_log "$UNIT_HOME/agent.log" "Connection refused" 20 || { unit_explain; exit 1; }
echo "with it: $(grep -m1 "Connection refused" "$UNIT_HOME/agent.log")"
! grep "Address family not supported" "$UNIT_HOME/agent.log" \
  || { echo "FAILED: an address family refused with the drop-in"; exit 1; }
as_baton "systemctl --user stop baton"
