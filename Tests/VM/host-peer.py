#!/usr/bin/env python3
"""The host side of the VM's radio cases: a bumble host (an independent BLE
host) on one controller of Tests/Radio/radio.py's simulated radio.

    host-peer.py PORT ADVERTISE_NAME LISTEN_NAME SECONDS

It advertises ADVERTISE_NAME (legacy ADV_IND, random address) and scans; when
it hears an advertisement whose data holds LISTEN_NAME it prints
`HEARD <LISTEN_NAME>` and keeps advertising until SECONDS have passed since it
started (so the guest can hear it too), then exits 0; 1 if never heard.
"""
import asyncio
import sys

from bumble import hci
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.transport import open_transport


async def main() -> int:
    port, advertise_name, listen_name, seconds = sys.argv[1:5]
    seconds = float(seconds)
    heard = asyncio.Event()
    async with await open_transport(f"tcp-client:127.0.0.1:{port}") as (source, sink):
        device = Device.with_hci(
            advertise_name, hci.Address("F0:11:22:33:44:C5"), source, sink
        )
        await device.power_on()

        def on_advertisement(advertisement) -> None:
            if listen_name.encode() in advertisement.data_bytes and not heard.is_set():
                print(f"HEARD {listen_name} from {advertisement.address}", flush=True)
                heard.set()

        device.on("advertisement", on_advertisement)
        data = bytes(
            AdvertisingData(
                [
                    (AdvertisingData.FLAGS, bytes([0x06])),
                    (AdvertisingData.COMPLETE_LOCAL_NAME, advertise_name.encode()),
                ]
            )
        )
        await device.start_advertising(advertising_data=data)
        await device.start_scanning(filter_duplicates=True)
        print("HOST-PEER-UP", flush=True)
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        try:
            await asyncio.wait_for(heard.wait(), seconds)
        except asyncio.TimeoutError:
            print(f"NOT-HEARD {listen_name}", flush=True)
            return 1
        await asyncio.sleep(max(0.0, end - loop.time()))
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
