# Two baton agents in the guest on btvirt -l2's hci0 and hci1 (BlueZ's own
# controller emulator, an implementation independent of bumble) hand a note
# to each other, each way, byte-identical. Agent a writes an HCI log (btsnoop)
# that the host decodes with btmon (case btsnoop-btmon).
. /cases/lib.sh
have_agent
start_btvirt
start_agent a hci0 --hci-log /tmp/a.btsnoop
A=$AGENT_PID
start_agent b hci1
B=$AGENT_PID
wait_agent_up a
wait_agent_up b
still_running $A a
still_running $B b
save_note /cases/data/a-to-b.md /tmp/a/a-to-b.md
wait_for_note /tmp/b/a-to-b.md /cases/data/a-to-b.md 30 || { cat /tmp/a.log /tmp/b.log; exit 1; }
save_note /cases/data/b-to-a.md /tmp/b/b-to-a.md
wait_for_note /tmp/a/b-to-a.md /cases/data/b-to-a.md 30 || { cat /tmp/a.log /tmp/b.log; exit 1; }
still_running $A a
still_running $B b
kill -TERM $A $B
wait $A || { echo "FAILED: agent a exited $? on SIGTERM"; cat /tmp/a.log; exit 1; }
wait $B || { echo "FAILED: agent b exited $? on SIGTERM"; cat /tmp/b.log; exit 1; }
dump_btsnoop /tmp/a.btsnoop
kill $BTVIRT_PID
