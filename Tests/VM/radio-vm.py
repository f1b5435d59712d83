#!/usr/bin/env python3
"""Tests/Radio/radio.py for the VM harness, with one fix to bumble's LocalLink.

bumble 0.0.236 sends every LE ACL packet from the sending controller's
*current random address* (LocalLink.send_acl_data), not from the address the
connection was made with. The Linux kernel, when bluetoothd manages the
adapter, advertises from an extended advertising set's own address (the
adapter's static address) while the controller's random address is the
non-resolvable private address it set for active scanning; so a peer that
connected to the advertised address got nothing the guest sent ("!!! no
connection for <NRPA>" in the radio's log) and saw its L2CAP requests go
unanswered. Real controllers send from the connection's address; so does
this patch: the connection with the destination, if there is one, names the
source address. Everything else is radio.py unchanged.
"""
import asyncio
import os
import runpy
import sys

from bumble import core
from bumble.link import LocalLink

_send_acl_data = LocalLink.send_acl_data


def send_acl_data(self, sender_controller, destination_address, transport, data):
    if transport == core.PhysicalTransport.LE:
        connection = sender_controller.le_connections.get(destination_address)
        if connection is not None:
            destination = self.find_le_controller(destination_address)
            if destination is not None:
                source = connection.self_address
                asyncio.get_running_loop().call_soon(
                    lambda: destination.on_link_acl_data(source, transport, data)
                )
            return
    _send_acl_data(self, sender_controller, destination_address, transport, data)


LocalLink.send_acl_data = send_acl_data
here = os.path.dirname(os.path.abspath(__file__))
radio_dir = os.path.normpath(os.path.join(here, "..", "Radio"))
sys.path.insert(0, radio_dir)  # radio.py imports its neighbours (faults.py), as when run itself
runpy.run_path(os.path.join(radio_dir, "radio.py"), run_name="__main__")
