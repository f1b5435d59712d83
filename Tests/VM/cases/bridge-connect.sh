# A connection and ACL data over the user channel and the bridge: the guest
# (central) connects to the host's bumble peer, exchanges ATT MTU with its
# GATT server, and disconnects.
. /cases/lib.sh
[ -n "$HCI" ] || HCI=$(cat /run/vhci-index 2>/dev/null || true)
[ -n "$HCI" ] || start_bridge
hci-probe connect "$HCI" 10 baton-host
