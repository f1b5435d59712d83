# The other way: the guest advertises on the bridged hciN; the host peer
# reports whether it heard it (checked by run.sh as host-hears-guest).
. /cases/lib.sh
[ -n "$HCI" ] || HCI=$(cat /run/vhci-index 2>/dev/null || true)
[ -n "$HCI" ] || start_bridge
hci-probe advertise "$HCI" 4 baton-vm
echo "advertised for 4 s"
