# A connection and ACL data over the user channel and the bridge: the guest
# (central) connects to the host's bumble peer, exchanges ATT MTU with its
# GATT server, and disconnects.
. /cases/lib.sh
start_bridge
hci-probe connect "$HCI" 10 baton-host
