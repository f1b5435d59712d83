#!/usr/bin/env python3
"""Counts the turns on each LE connection of a btsnoop log (an agent's
--hci-log, or one a benchmark kept with --keep): a turn is a change of
sender on the connection's L2CAP data, after at least one data packet, so
a request answered by the peer costs two turns from the asker's side
(there and back) and pipelined requests cost none between them.

    .venv/bin/python3 Tests/Scripts/round-trips.py B/hci.btsnoop [options]

What counts as data: every L2CAP packet (the ACL fragments of one joined)
on a channel of the connection, except LE flow control credits (code 0x16
on the signalling channel, CID 5) and, unless --acks, the frame layer's
control frames (PROTOCOL.md section 5: marker 0x12, sent to acknowledge
or to ask again), which never wait on anything. Each packet is labelled
with what can be told without the session keys: the channel's signalling
commands, the handshake's M1, M2 and M3 (marker 01, 02, 03), data frames
(0x11; their kind is sealed) and parts of frames sent again (0x13), with the
L2CAP bytes of each.

A connection's packets are cut into bursts where nothing crossed for
--gap MS (default 500): a first contact and its catch-up are one burst,
each later push another. For each burst it prints its turns (time from
the connection's start, who sent, how many packets and bytes, the labels)
and the count. Directions are as seen by the log's host: "->" sent,
"<-" received.

Options: --handle N (only that connection), --gap MS, --acks (count
control frames as data), --quiet (the counts only), --from S / --to S
(only packets between S and S seconds after the log's first record).

Format (BTSnoopWriter.swift): a 16-byte header ("btsnoop\\0", version 1,
datalink 1002: H4), then records of a 24-byte header (original length,
included length, flags: bit 0 received, bit 1 command or event; drops;
timestamp in microseconds since year 0, all big-endian) and the packet
with its H4 type byte.
"""
import argparse
import dataclasses
import struct
import sys

SIGNALLING_CID = 5
SIGNALS = {
    0x01: "command reject", 0x06: "disconnection request", 0x07: "disconnection response",
    0x12: "connection parameter update request", 0x13: "connection parameter update response",
    0x14: "LE credit-based connection request", 0x15: "LE credit-based connection response",
    0x16: "flow control credit",
}
HANDSHAKE = {0x01: "M1", 0x02: "M2", 0x03: "M3"}


@dataclasses.dataclass
class Packet:
    """One L2CAP packet of a connection, its fragments joined."""

    time_us: int
    sent: bool
    cid: int
    payload: bytes  # what arrived of the L2CAP payload (after the basic header)
    length: int  # the L2CAP payload length the basic header gives
    label: str = ""
    data: bool = True


def records(path: str):
    """(time_us, received, H4 packet) for each record."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 16 or blob[:8] != b"btsnoop\0":
        raise SystemExit(f"round-trips: {path} is not a btsnoop file (no 'btsnoop' header)")
    (datalink,) = struct.unpack(">I", blob[12:16])
    if datalink != 1002:
        raise SystemExit(f"round-trips: {path} has datalink {datalink}; give an H4 (1002) log,"
                         " as baton agent --hci-log writes")
    at = 16
    while at + 24 <= len(blob):
        _, included, flags, _, stamp = struct.unpack(">IIIIq", blob[at:at + 24])
        packet = blob[at + 24:at + 24 + included]
        at += 24 + included
        if len(packet) < included:
            break  # a record cut short (the agent was still writing)
        yield stamp, bool(flags & 1), packet


def connections(path: str):
    """{handle: [Packet]} from the ACL records, {handle: start time} from
    LE Connection Complete events, and {handle: time} of the LE Create
    Connection command before it (on the side that connected)."""
    packets: dict[int, list[Packet]] = {}
    starts: dict[int, int] = {}
    creates: dict[int, int] = {}
    partial: dict[tuple[int, bool], Packet] = {}
    create = None
    for stamp, received, h4 in records(path):
        if h4[0] == 0x01 and len(h4) >= 3:
            # LE Create Connection, LE Extended Create Connection.
            if struct.unpack("<H", h4[1:3])[0] in (0x200D, 0x2043):
                create = stamp
            continue
        if h4[0] == 0x04 and len(h4) >= 3:
            event, body = h4[1], h4[3:]
            # LE Meta: (enhanced) connection complete, status 0.
            if event == 0x3E and len(body) >= 4 and body[0] in (0x01, 0x0A) and body[1] == 0:
                handle = struct.unpack("<H", body[2:4])[0] & 0x0FFF
                starts[handle] = stamp
                packets[handle] = []
                if create is not None:
                    creates[handle] = create
                    create = None
            continue
        if h4[0] != 0x02 or len(h4) < 5:
            continue
        word, length = struct.unpack("<HH", h4[1:5])
        handle, boundary = word & 0x0FFF, (word >> 12) & 3
        fragment = h4[5:5 + length]
        key = (handle, not received)
        if boundary == 1:
            if key in partial:
                partial[key].payload += fragment
            continue
        if len(fragment) < 4:
            continue
        l2cap_length, cid = struct.unpack("<HH", fragment[:4])
        packet = Packet(stamp, not received, cid, fragment[4:], l2cap_length)
        partial[key] = packet
        packets.setdefault(handle, []).append(packet)
        starts.setdefault(handle, stamp)
    return packets, starts, creates


def label(packets: list[Packet], acks: bool) -> None:
    """Labels each packet and marks those that are not data."""
    sdu_left: dict[tuple[bool, int], int] = {}
    for p in packets:
        if p.cid == SIGNALLING_CID:
            code = p.payload[0] if p.payload else -1
            p.label = SIGNALS.get(code, f"signal 0x{code:02x}")
            p.data = code != 0x16
            continue
        if p.cid < 0x40:
            p.label = f"CID {p.cid}"
            continue
        # An LE credit-based channel: the first K-frame of an SDU starts
        # with its 2-byte length.
        key = (p.sent, p.cid)
        left = sdu_left.get(key, 0)
        if left <= 0 and len(p.payload) >= 2:
            sdu = struct.unpack("<H", p.payload[:2])[0]
            sdu_left[key] = sdu - (p.length - 2)
            marker = p.payload[2] if len(p.payload) > 2 else -1
            if marker == 0x11:
                p.label = "frame"
            elif marker == 0x13:
                p.label = "part"
            elif marker == 0x12:
                p.label = "ack"
                p.data = acks
            elif marker in HANDSHAKE and len(p.payload) > 3:
                p.label = HANDSHAKE[marker]
            else:
                p.label = f"SDU 0x{marker:02x}"
        else:
            sdu_left[key] = left - p.length
            p.label = "K-frame"


def bursts(packets: list[Packet], gap_us: int):
    burst: list[Packet] = []
    for p in packets:
        if burst and p.time_us - burst[-1].time_us > gap_us:
            yield burst
            burst = []
        burst.append(p)
    if burst:
        yield burst


def turns(burst: list[Packet]):
    """Runs of data packets from one side: [(sent, [Packet])]; packets
    that are not data stay out of the runs."""
    runs: list[tuple[bool, list[Packet]]] = []
    for p in burst:
        if not p.data:
            continue
        if runs and runs[-1][0] == p.sent:
            runs[-1][1].append(p)
        else:
            runs.append((p.sent, [p]))
    return runs


def describe(run: list[Packet]) -> str:
    counts: dict[str, list[int]] = {}
    for p in run:
        entry = counts.setdefault(p.label, [0, 0])
        entry[0] += 1
        entry[1] += p.length + 4
    return ", ".join(f"{label} x{n} ({size} B)" if n > 1 else f"{label} ({size} B)"
                     for label, (n, size) in counts.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--handle", type=int)
    parser.add_argument("--gap", type=float, default=500, help="ms of silence that ends a burst")
    parser.add_argument("--acks", action="store_true", help="count control frames as data")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--from", dest="start", type=float, default=None)
    parser.add_argument("--to", dest="end", type=float, default=None)
    args = parser.parse_args()
    packets, starts, creates = connections(args.log)
    first = min((t for t, _, _ in records(args.log)), default=0)
    for handle, items in sorted(packets.items()):
        if args.handle is not None and handle != args.handle:
            continue
        label(items, args.acks)
        if args.start is not None:
            items = [p for p in items if p.time_us >= first + args.start * 1e6]
        if args.end is not None:
            items = [p for p in items if p.time_us <= first + args.end * 1e6]
        if not items:
            continue
        start = starts.get(handle, items[0].time_us)
        made = ""
        if handle in creates:
            made = (f"; this host connected: LE Create Connection"
                    f" {(start - creates[handle]) / 1000:.1f} ms before it was up")
        print(f"connection 0x{handle:03x} (from {(start - first) / 1e6:.3f} s into the log{made}):")
        for number, burst in enumerate(bursts(items, int(args.gap * 1000)), 1):
            runs = turns(burst)
            count = max(0, len(runs) - 1)
            span = (burst[-1].time_us - burst[0].time_us) / 1000
            data = sum(p.length + 4 for p in burst if p.data)
            print(f"  burst {number} at {(burst[0].time_us - start) / 1000:.1f} ms, {span:.1f} ms"
                  f" long, {data} B of data: {count} turns ({len(runs)} runs; first from"
                  f" {'this host' if runs and runs[0][0] else 'the peer'})")
            if args.quiet:
                continue
            previous = None
            for sent, run in runs:
                wait = "" if previous is None else f" (+{(run[0].time_us - previous) / 1000:.1f} ms)"
                print(f"    {(run[0].time_us - start) / 1000:9.1f} ms{wait:>14} {'->' if sent else '<-'}"
                      f" {len(run):4d} packets: {describe(run)}")
                previous = run[-1].time_us
    return 0


if __name__ == "__main__":
    sys.exit(main())
