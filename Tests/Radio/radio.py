#!/usr/bin/env python3
"""A simulated BLE radio for baton's tests: N bumble controllers on one LocalLink.

Each controller speaks HCI with H4 framing on its own TCP port on 127.0.0.1,
chosen by the kernel (no port races). Once all are listening, one line is
printed on stdout:

    READY <port1> <port2> ...

Then it runs until SIGTERM/SIGINT or until stdin is closed (so a test that
dies takes its radio with it). Options:
    --controllers N     how many controllers (default 2)
    --no-extended-advertising   clear the LE Extended Advertising feature bit,
                        so scanners get legacy (0x02) advertising reports
    --le-acl-length N   the LE ACL buffer size the controllers report (default
                        bumble's 27, or with --timing timed the data length;
                        251 is what controllers with LE Data Length
                        Extension, such as nRF52, report)
    --log-level LEVEL   bumble's log level (default WARNING)
    --faults RULES      inject faults between the hosts and their controllers
                        (drop, corrupt, delay, duplicate chosen packets, or
                        drop a connection; the rule syntax is in faults.py).
                        Without the option, the
                        environment variable BATON_RADIO_FAULTS is used.
    --fault-seed N      the seed of the faults' random choices (default
                        BATON_RADIO_FAULT_SEED, else 1)
    --fault-log FILE    append one line per fault injected (and a summary at
                        exit) to FILE (default BATON_RADIO_FAULT_LOG)
    --faults-off        start with the faults switched off
    --strangers N       N more devices on the radio that are not baton peers,
                        each advertising every 100 ms with changing data
                        (strangers.py); they have no port

    --away N            controller N (0-based; repeatable) starts out of
                        range: it hears no advertisement and none of its own
                        is heard, until SIGHUP brings every such controller
                        into range (and prints "IN-RANGE" on stdout); a
                        stand-in for a laptop carried into the room
    --timing MODE       instant (the default): every packet crosses at once;
                        timed: ACL data crosses at connection events, in PDUs
                        that take air time, a connection is made one
                        connection interval after the target's advertisement
                        is heard, and legacy advertising takes its interval
                        in 0.625 ms units (not milliseconds) plus a random
                        0-10 ms (the model and what it leaves out are in
                        timing.py). With timed:
    --conn-interval MS  the connection interval (default 40; 7.5 to 4000 in
                        steps of 1.25)
    --pdus-per-event N  PDUs per connection event and direction (default 6)
    --data-length N     the largest PDU payload, 27 or 251 (default 251); the
                        controllers' LE ACL buffers are as long, unless
                        --le-acl-length says otherwise
    --phy 1m|2m         the PHY whose air time PDUs take (default 1m)
    --scan-interval-ms MS, --scan-window-ms MS
                        a scanning or initiating controller hears
                        advertisements only in windows of the second every
                        the first, from when it started (default: all the
                        time; give both)

Every controller honours the Filter_Duplicates of LE Set (Extended) Scan
Enable, as real controllers do and bumble's do not (strangers.py).

While it runs, SIGUSR1 switches the faults off and SIGUSR2 on (they start
on unless --faults-off), so a test can end a faulty phase and measure the
recovery, or begin one at the moment it chooses.
"""
import argparse
import asyncio
import logging
import os
import signal
import socket
import stat
import sys

from bumble import hci
from bumble.link import LocalLink
from bumble.transport.tcp_server import open_tcp_server_transport_with_socket

from faults import FaultPlan, FaultSpecError, FaultyLink
from strangers import DeduplicatingController, add_strangers
from timing import (ScanWindows, TimedAdvertising, TimedConnections, TimedConnectionUpdates,
                    TimedLink, Timing, TimingError)


# A test process may have started us with SIGTERM/SIGINT blocked (the Swift
# test runner blocks them and posix_spawn passes the mask on): unblock them, or
# stopping us by signal waits for SIGKILL.
signal.pthread_sigmask(
    signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2}
)


class RangedController(DeduplicatingController):
    """The radio's controller, which can be out of range (`away`): then no
    advertisement reaches it and none of its own leaves it. Connections it
    already has are not affected (a controller starts away, before any)."""

    away = False

    def send_advertising_pdu(self, packet) -> None:
        if not self.away:
            super().send_advertising_pdu(packet)

    def on_ll_advertising_pdu(self, packet) -> None:
        if not self.away:
            super().on_ll_advertising_pdu(packet)


class TimedController(TimedConnections, TimedConnectionUpdates, ScanWindows, TimedAdvertising,
                      RangedController):
    """The radio's controller on the timed link (--timing timed)."""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--controllers", type=int, default=2)
    parser.add_argument("--no-extended-advertising", action="store_true")
    parser.add_argument("--le-acl-length", type=int, default=0)
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--faults", default=os.environ.get("BATON_RADIO_FAULTS", ""))
    parser.add_argument(
        "--fault-seed", type=int, default=int(os.environ.get("BATON_RADIO_FAULT_SEED", "1")))
    parser.add_argument("--faults-off", action="store_true",
                        help="start with faults off (SIGUSR2 turns them on)")
    parser.add_argument("--fault-log", default=os.environ.get("BATON_RADIO_FAULT_LOG"))
    parser.add_argument("--strangers", type=int, default=0)
    parser.add_argument("--away", type=int, action="append", default=[])
    parser.add_argument("--timing", choices=("instant", "timed"), default="instant")
    parser.add_argument("--conn-interval", type=float, default=40)
    parser.add_argument("--pdus-per-event", type=int, default=6)
    parser.add_argument("--data-length", type=int, default=251)
    parser.add_argument("--phy", default="1m")
    parser.add_argument("--scan-interval-ms", type=float, default=0)
    parser.add_argument("--scan-window-ms", type=float, default=0)
    args = parser.parse_args()
    timing = None
    if args.timing == "timed":
        try:
            timing = Timing.from_options(
                args.conn_interval, args.pdus_per_event, args.data_length, args.phy,
                args.scan_interval_ms, args.scan_window_ms)
        except TimingError as error:
            parser.error(str(error))
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    try:
        plan = FaultPlan(args.faults, args.fault_seed, args.fault_log)
    except FaultSpecError as error:
        parser.error(str(error))
    plan.enabled = not args.faults_off

    link = TimedLink(timing) if timing else LocalLink()
    controller_class = TimedController if timing else RangedController
    transports = []
    controllers = []
    ports = []
    for index in range(args.controllers):
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose
        # proto says TCP, and with Nagle on, every small HCI packet the
        # controller sends could wait ~40 ms for the host's delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        ports.append(sock.getsockname()[1])
        transport = await open_tcp_server_transport_with_socket(sock)
        if plan:
            controller = controller_class(
                f"C{index}", host_sink=FaultyLink(plan, index, "host", transport.sink), link=link
            )
            transport.source.set_packet_sink(FaultyLink(plan, index, "controller", controller))
            plan.controllers[index] = controller
        else:
            controller = controller_class(
                f"C{index}", host_source=transport.source, host_sink=transport.sink, link=link
            )
        if args.le_acl_length:
            controller.le_acl_data_packet_length = args.le_acl_length
        elif timing:
            # A controller with 251-byte PDUs reports buffers as long, so a
            # host's fragments (and L2CAP frames that fill whole buffers)
            # match the PDUs on the air.
            controller.le_acl_data_packet_length = timing.data_length
        if args.no_extended_advertising:
            controller.le_features &= ~hci.LeFeatureMask.LE_EXTENDED_ADVERTISING
        controller.away = index in args.away
        controllers.append(controller)
        transports.append(transport)

    strangers = add_strangers(link, args.strangers)
    if timing:
        print("radio: timed: " + timing.describe(), file=sys.stderr, flush=True)
    print("READY " + " ".join(str(p) for p in ports), flush=True)

    loop = asyncio.get_running_loop()
    # A parent that blocks signals for its own signal thread (baton-bench,
    # through BatonSystem) passes the mask on: unblock the ones used here.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                                                signal.SIGUSR1, signal.SIGUSR2})
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))

    def switch_faults(on: bool) -> None:
        plan.enabled = on
        plan.note("faults on" if on else "faults off")

    def come_into_range() -> None:
        for c in controllers:
            c.away = False
        print("IN-RANGE", flush=True)

    loop.add_signal_handler(signal.SIGHUP, come_into_range)
    loop.add_signal_handler(signal.SIGUSR1, switch_faults, False)
    loop.add_signal_handler(signal.SIGUSR2, switch_faults, True)

    def stdin_closed() -> None:
        if not os.read(sys.stdin.fileno(), 4096):
            loop.remove_reader(sys.stdin.fileno())
            if not stop.done():
                stop.set_result(None)

    # Only a pipe can be watched for its end (epoll refuses /dev/null and files).
    if stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode):
        loop.add_reader(sys.stdin.fileno(), stdin_closed)

    await stop
    if plan:
        plan.note("summary: " + plan.summary())
    # Nothing to flush or save: leave at once (closing bumble's transports
    # politely can take seconds when a client is still connected).
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
