"""Strangers for the simulated radio: devices in range that are not baton
peers (phones, watches, trackers), each advertising on its own, and the
duplicate filter that bumble's controllers lack.

`add_strangers(link, count)` puts `count` host-less bumble controllers on
the radio's link. Each advertises legacy (ADV_IND, the one kind bumble's
legacy advertiser sends) from its own random static address, every 100 ms
(bumble takes the interval in milliseconds), with manufacturer data that
change at every advertisement, as a phone's rotating payloads do.

`DeduplicatingController` is the radio's controller with the HCI
`Filter_Duplicates` of LE Set (Extended) Scan Enable applied, which bumble
records and ignores: while it is on, an advertiser's address is reported
once per scan (Core 6.0, Vol 6, Part B, 4.3.3: "duplicate" is the same
address; whether changed data counts again is up to the controller, and
this one says no), and enabling the scan starts afresh.
"""
import asyncio
import os

from bumble import hci
from bumble.controller import Controller


class DeduplicatingController(Controller):
    """A bumble controller that honours Filter_Duplicates."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reported: set[bytes] = set()

    def on_advertising_pdu(self, pdu) -> None:
        # Only the report to the host is filtered: the same PDU also
        # completes a pending LE Create Connection to its advertiser.
        duplicate = False
        if self.le_scan_enable and self.filter_duplicates:
            address = bytes(pdu.advertiser_address)
            duplicate = address in self.reported
            self.reported.add(address)
        if not duplicate:
            super().on_advertising_pdu(pdu)
            return
        self.le_scan_enable = False
        try:
            super().on_advertising_pdu(pdu)
        finally:
            self.le_scan_enable = True

    def on_hci_le_set_scan_enable_command(self, command):
        if command.le_scan_enable:
            self.reported.clear()
        return super().on_hci_le_set_scan_enable_command(command)

    def on_hci_le_set_extended_scan_enable_command(self, command):
        if command.enable:
            self.reported.clear()
        return super().on_hci_le_set_extended_scan_enable_command(command)


def _command(controller: Controller, command: hci.HCI_Command) -> None:
    # No host: the controller's answers go nowhere (send_hci_packet skips a
    # missing host).
    controller.on_hci_packet(command)


async def _advertise(controller: Controller, index: int) -> None:
    address = bytearray(os.urandom(6))
    address[5] |= 0xC0  # random static: the two top bits of the last byte
    _command(controller, hci.HCI_LE_Set_Random_Address_Command(
        random_address=hci.Address(bytes(address), hci.Address.RANDOM_DEVICE_ADDRESS)))
    _command(controller, hci.HCI_LE_Set_Advertising_Parameters_Command(
        advertising_interval_min=100, advertising_interval_max=100,
        advertising_type=hci.HCI_LE_Set_Advertising_Parameters_Command.AdvertisingType.ADV_IND,
        own_address_type=hci.Address.RANDOM_DEVICE_ADDRESS,
        peer_address_type=0, peer_address=hci.Address.ANY,
        advertising_channel_map=7, advertising_filter_policy=0))
    _command(controller, hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=1))
    counter = 0
    while True:
        counter += 1
        # Flags, then manufacturer data (company 0x004C) with a counter and
        # a random tail: different at every advertisement.
        payload = bytes([0x4C, 0x00, index & 0xFF]) + counter.to_bytes(4, "little") + os.urandom(13)
        data = bytes([2, 0x01, 0x06, len(payload) + 1, 0xFF]) + payload
        _command(controller, hci.HCI_LE_Set_Advertising_Data_Command(advertising_data=data))
        await asyncio.sleep(0.1)


def add_strangers(link, count: int) -> list:
    """Starts `count` strangers on `link`; returns their tasks."""
    tasks = []
    for index in range(count):
        controller = Controller(f"S{index}", link=link)
        tasks.append(asyncio.get_running_loop().create_task(_advertise(controller, index)))
    return tasks
