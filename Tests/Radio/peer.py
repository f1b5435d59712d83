#!/usr/bin/env python3
"""An independent BLE host for baton's interop tests: bumble's own host stack
(bumble.device.Device, random static address) on one of the simulated radio's
controllers, reached with `tcp-client:127.0.0.1:PORT`.

Subcommands (all print one line per event on stdout, flushed):
    scan --port P [--seconds S] [--also-advertise HEX]
        passive scan; prints "READY <our address>", then "ADV <address> <hex data>"
        for every advertisement heard; with --also-advertise, advertises HEX
        (legacy, connectable) meanwhile.
    l2cap-server --port P --psm N --bytes N [--adv HEX]
        advertises (legacy, connectable), accepts one LE credit-based channel on
        PSM N, prints "READY <address>", "CHANNEL", then receives N bytes and
        prints "RECEIVED <n> <blake2b-256 hex>", then sends N bytes of the
        pattern with seed 1 and prints "SENT <n>", then waits for the channel
        to close and prints "CLOSED".
    connect-only --port P --peer ADDRESS [--seconds S]
        connects to ADDRESS (random) and opens nothing ("CONNECTED"), then
        waits for the peer to end the connection ("DISCONNECTED <reason>") or
        S seconds ("STILL-CONNECTED").
    l2cap-client --port P --peer ADDRESS --psm N --bytes N
        connects to ADDRESS (random), opens a channel to PSM N, sends N bytes of
        the pattern with seed 2 ("SENT <n>"), receives N bytes and prints
        "RECEIVED <n> <blake2b-256 hex>", then disconnects ("DISCONNECTED").
Pattern: byte i = ((i + seed) * 7 + (i >> 8)) & 0xFF.
Messages go in SDUs of at most --chunk bytes (default 1000).
"""
import argparse
import asyncio
import hashlib
import os
import signal
import sys

from bumble import hci
from bumble.device import Device
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.transport import open_transport


def say(*words) -> None:
    print(" ".join(str(w) for w in words), flush=True)


def pattern(n: int, seed: int) -> bytes:
    return bytes((((i + seed) * 7) + (i >> 8)) & 0xFF for i in range(n))


def random_static_address() -> hci.Address:
    raw = bytearray(os.urandom(6))
    raw[0] |= 0xC0  # most significant byte first in the string form
    text = ":".join(f"{b:02X}" for b in raw)
    return hci.Address(text, hci.Address.RANDOM_DEVICE_ADDRESS)


class Receiver:
    """Collects SDUs until `expected` bytes have arrived."""

    def __init__(self, expected: int):
        self.expected = expected
        self.data = bytearray()
        self.done = asyncio.Event()

    def __call__(self, sdu: bytes) -> None:
        self.data += sdu
        if len(self.data) >= self.expected:
            self.done.set()

    def report(self) -> None:
        digest = hashlib.blake2b(bytes(self.data), digest_size=32).hexdigest()
        say("RECEIVED", len(self.data), digest)


async def send(channel, data: bytes, chunk: int) -> None:
    for offset in range(0, len(data), chunk):
        channel.write(data[offset : offset + chunk])
    await channel.drain()


# A test process may have started us with SIGTERM/SIGINT blocked (the Swift
# test runner blocks them and posix_spawn passes the mask on): unblock them, or
# stopping us by signal waits for SIGKILL.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["scan", "l2cap-server", "l2cap-client", "connect-only"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--psm", type=lambda s: int(s, 0), default=0x0081)
    parser.add_argument("--bytes", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--peer")
    parser.add_argument("--adv", default="020106")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--also-advertise")
    args = parser.parse_args()

    async with await open_transport(f"tcp-client:127.0.0.1:{args.port}") as (source, sink):
        device = Device.with_hci("peer", random_static_address(), source, sink)
        await device.power_on()
        address = device.random_address.to_string(False)

        if args.command == "scan":
            device.on(
                "advertisement",
                lambda adv: say("ADV", adv.address.to_string(False), bytes(adv.data_bytes).hex()),
            )
            await device.start_scanning(active=False, filter_duplicates=False)
            if args.also_advertise:
                await device.start_advertising(
                    advertising_data=bytes.fromhex(args.also_advertise),
                    own_address_type=hci.OwnAddressType.RANDOM,
                    advertising_interval_min=20,
                    advertising_interval_max=20,
                )
            say("READY", address)
            await asyncio.sleep(args.seconds)
            return

        if args.command == "l2cap-server":
            opened = asyncio.get_running_loop().create_future()
            receiver = Receiver(args.bytes)

            def on_channel(channel) -> None:
                channel.sink = receiver
                if not opened.done():
                    opened.set_result(channel)

            device.create_l2cap_server(
                spec=LeCreditBasedChannelSpec(psm=args.psm, mtu=65535, mps=2048, max_credits=256),
                handler=on_channel,
            )
            await device.start_advertising(
                advertising_data=bytes.fromhex(args.adv),
                own_address_type=hci.OwnAddressType.RANDOM,
                advertising_interval_min=20,
                advertising_interval_max=20,
            )
            say("READY", address)
            channel = await asyncio.wait_for(opened, args.seconds)
            say("CHANNEL")
            closed = asyncio.Event()
            channel.on("close", closed.set)
            await asyncio.wait_for(receiver.done.wait(), args.seconds)
            receiver.report()
            await send(channel, pattern(args.bytes, 1), args.chunk)
            say("SENT", args.bytes)
            await asyncio.wait_for(closed.wait(), args.seconds)
            say("CLOSED")
            return

        # l2cap-client, connect-only
        peer = hci.Address(args.peer, hci.Address.RANDOM_DEVICE_ADDRESS)
        connection = await device.connect(
            peer, own_address_type=hci.OwnAddressType.RANDOM, timeout=args.seconds
        )
        say("CONNECTED")
        if args.command == "connect-only":
            ended = asyncio.get_running_loop().create_future()
            connection.on(
                "disconnection", lambda reason: ended.done() or ended.set_result(reason)
            )
            try:
                reason = await asyncio.wait_for(ended, args.seconds)
                say("DISCONNECTED", reason)
            except asyncio.TimeoutError:
                say("STILL-CONNECTED")
            return
        channel = await connection.create_l2cap_channel(
            spec=LeCreditBasedChannelSpec(psm=args.psm, mtu=65535, mps=2048, max_credits=256)
        )
        receiver = Receiver(args.bytes)
        channel.sink = receiver
        say("CHANNEL")
        await send(channel, pattern(args.bytes, 2), args.chunk)
        say("SENT", args.bytes)
        await asyncio.wait_for(receiver.done.wait(), args.seconds)
        receiver.report()
        await connection.disconnect()
        say("DISCONNECTED")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as error:  # one line the test can show
        say("ERROR", type(error).__name__, error)
        sys.exit(1)
