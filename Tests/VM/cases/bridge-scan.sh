# The guest's hciN is a controller on the host's simulated radio (vhci-bridge
# <-> virtio-serial <-> qemu <-> bumble): it hears the host peer's advertising.
. /cases/lib.sh
start_bridge
hci-probe scan "$HCI" 10 baton-host
