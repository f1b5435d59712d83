# The BlueZ backend needs no capability: under a restricted bus policy (only
# root and the bluetooth group may talk to org.bluez), the unprivileged user
# baton (group bluetooth, no capability) runs an agent on bluez:hci0 that hands
# a note to a root agent on bluez:hci1, both ways; the unprivileged user nobody
# (not in the group) gets the policy message naming the group, exits without a
# crash or waits it out.
. /cases/lib.sh
have_bluez_backend
start_btvirt
start_btmon
start_bluez restricted
wait_powered hci0
wait_powered hci1
mkdir -p /home/baton/notes
cp /etc/baton.key /home/baton/key
chown -R baton:baton /home/baton
chmod 600 /home/baton/key
su -s /bin/sh baton -c "KEY=/home/baton/key; . /cases/lib.sh; \
  exec baton \$(agent_args bluez:hci0 /home/baton/notes user-baton) --verbose" >/tmp/user.log 2>&1 &
U=$!
start_agent b bluez:hci1
B=$AGENT_PID
LOG=/tmp/user.log wait_agent_up user-baton
wait_agent_up b
kill -0 $U 2>/dev/null || { echo "FAILED: the agent of user baton exited"; cat /tmp/user.log; exit 1; }
SAVED_AT=$(now); su -s /bin/sh baton -c "cp /cases/data/a-to-b.md /home/baton/notes/a-to-b.md"
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { explain user b; exit 1; }
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note /home/baton/notes/b-to-a.md /cases/data/b-to-a.md 30 || { explain user b; exit 1; }
kill -TERM $U $B
wait $U || { echo "FAILED: the agent of user baton exited $? on SIGTERM"; cat /tmp/user.log; exit 1; }
wait $B || true

# bluetoothd still runs (the agents' unregistering on SIGTERM must not harm it).
dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
  org.freedesktop.DBus.NameHasOwner string:org.bluez | grep -q "boolean true" \
  || { echo "FAILED: bluetoothd left the bus after the agents stopped"; tail -30 /tmp/bluetoothd.log; dmesg | tail -20; exit 1; }
mkdir -p /tmp/nobody/notes
cp /etc/baton.key /tmp/nobody/key
chown -R nobody:nogroup /tmp/nobody
chmod 600 /tmp/nobody/key
expect_message "agent as nobody under the restricted policy" 20 "denied" "bluetooth" -- \
  su -s /bin/sh nobody -c "KEY=/tmp/nobody/key; . /cases/lib.sh; \
    exec baton \$(agent_args bluez:hci0 /tmp/nobody/notes vm-nobody)" || { explain; exit 1; }
