# The other way: the guest advertises on the bridged hciN; the host peer
# reports whether it heard it (checked by run.sh as host-hears-guest).
. /cases/lib.sh
start_bridge
hci-probe advertise "$HCI" 4 baton-vm
echo "advertised for 4 s"
