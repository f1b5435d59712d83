# The BlueZ backend's faults as a guest agent sees them: each gives a message
# naming the cause (the agent exits non-zero without a crash, or waits it out):
# no system bus; a system bus without bluetoothd; an adapter that does not
# exist (bluez:hci7, while bluetoothd manages hci0 and hci1).
. /cases/lib.sh
have_bluez_backend
mkdir -p /tmp/notes-e
run() { exec baton $(agent_args "$1" /tmp/notes-e vm-errors); }
rm -f /run/dbus/system_bus_socket
expect_message "no system bus" 15 "bluetoothd" -- run bluez
start_btvirt
start_bluez
kill $BLUEZ_PID; wait $BLUEZ_PID 2>/dev/null || true
expect_message "bluetoothd not on the bus" 15 "bluetoothd" -- run bluez
start_bluetoothd
wait_powered hci0
wait_powered hci1
expect_message "no such adapter" 15 "hci7" -- run bluez:hci7
