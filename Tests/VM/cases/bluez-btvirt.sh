# BlueZ's own bluetoothd (Debian's bluez 5.66) on a system D-Bus (Debian's
# dbus 1.14, system.conf and BlueZ's policy) manages btvirt's hci0 and hci1:
# it powers both and `bluetoothctl show` reports them; under Debian's policy
# an unprivileged user (in the bluetooth group or not) may talk to org.bluez.
. /cases/lib.sh
start_btvirt
start_bluez
wait_powered hci0
wait_powered hci1
bluetoothctl list
echo "memory: dbus-daemon $(awk '/VmRSS/ {print $2, $3}' /proc/$DBUS_PID/status), bluetoothd $(awk '/VmRSS/ {print $2, $3}' /proc/$BLUEZ_PID/status); $(free -m | awk '/Mem:/ {print "guest RAM " $2 " MB, used " $3 " MB, shared (tmpfs) " $5 " MB, available " $7 " MB"}')"
A0=$(adapter_address hci0)
A1=$(adapter_address hci1)
echo "hci0 $A0, hci1 $A1"
bluetoothctl show "$A0" | grep -q "Powered: yes"
bluetoothctl show "$A1" | grep -q "Powered: yes"

# Debian's policy lets every local user talk to org.bluez. (The restricted
# policy, bluetoothd's restart and other clients advertising and discovering
# next to baton are the agent cases' business: agent-bluez-user,
# agent-bluez-restart, agent-bluez-btvirt.)
call_as() { # call_as USER: GetManagedObjects on org.bluez as USER
  su -s /bin/sh "$1" -c "dbus-send --system --print-reply --dest=org.bluez / \
    org.freedesktop.DBus.ObjectManager.GetManagedObjects" >/tmp/call.log 2>&1
}
for u in baton nobody; do
  call_as $u || { echo "FAILED: $u may not talk to org.bluez under Debian's policy"; cat /tmp/call.log; exit 1; }
  echo "Debian's policy: $u may call org.bluez"
done
