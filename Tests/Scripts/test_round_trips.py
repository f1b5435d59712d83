"""Tests of round-trips.py on a btsnoop log made here, record by record.

    .venv/bin/python3 -m unittest Tests/Scripts/test_round_trips.py
"""
import contextlib
import importlib.util
import io
import os
import struct
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("round_trips", os.path.join(HERE, "round-trips.py"))
round_trips = importlib.util.module_from_spec(spec)
spec.loader.exec_module(round_trips)

HANDLE = 0x041
CID = 0x0040


def record(time_us: int, received: bool, packet: bytes) -> bytes:
    flags = (1 if received else 0) | (2 if packet[0] in (0x01, 0x04) else 0)
    return struct.pack(">IIIIq", len(packet), len(packet), flags, 0, time_us) + packet


def acl(l2cap_cid: int, payload: bytes, boundary: int = 2) -> bytes:
    l2cap = struct.pack("<HH", len(payload), l2cap_cid) + payload
    return b"\x02" + struct.pack("<HH", HANDLE | boundary << 12, len(l2cap)) + l2cap


def sdu(body: bytes) -> bytes:
    """One K-frame holding a whole SDU."""
    return acl(CID, struct.pack("<H", len(body)) + body)


def connection_complete() -> bytes:
    body = bytes([0x01, 0x00]) + struct.pack("<H", HANDLE) + bytes(15)
    return bytes([0x04, 0x3E, len(body)]) + body


class RoundTripsTests(unittest.TestCase):
    def write(self, records: list[bytes]) -> str:
        handle, path = tempfile.mkstemp(suffix=".btsnoop")
        with os.fdopen(handle, "wb") as f:
            f.write(b"btsnoop\0" + struct.pack(">II", 1, 1002) + b"".join(records))
        self.addCleanup(os.remove, path)
        return path

    def run_script(self, *arguments: str) -> str:
        out = io.StringIO()
        argv = sys.argv
        sys.argv = ["round-trips.py", *arguments]
        try:
            with contextlib.redirect_stdout(out):
                self.assertEqual(round_trips.main(), 0)
        finally:
            sys.argv = argv
        return out.getvalue()

    def exchange(self) -> str:
        t = 1_000_000
        return self.write([
            record(t, True, connection_complete()),
            record(t + 100, False, acl(5, bytes([0x14, 1]) + bytes(12))),  # channel request
            record(t + 40_000, True, acl(5, bytes([0x15, 1]) + bytes(12))),  # response
            record(t + 40_100, False, sdu(b"\x01\x07" + bytes(32))),  # M1
            record(t + 41_000, True, acl(5, bytes([0x16, 2, 4, 0]) + bytes(4))),  # credits
            record(t + 80_000, True, sdu(b"\x02\x07" + bytes(200))),  # M2
            record(t + 80_100, False, sdu(b"\x03" + bytes(150))),  # M3
            record(t + 80_200, False, sdu(b"\x11" + bytes(60))),  # a data frame, pipelined
            # A data frame of 300 B in two K-frames; the second is its own packet.
            record(t + 120_000, True, sdu_start(300, 250)),
            record(t + 120_100, True, acl(CID, bytes(50))),
            record(t + 150_000, False, sdu(b"\x12" + bytes(40))),  # an acknowledgement
            # Two seconds later: a push, one frame, its fragment continued in ACL.
            *[record(t + 2_200_000 + i, False, packet)
              for i, packet in enumerate(split(b"\x11" + bytes(10), 6))],
        ])

    def test_turns_leave_out_credits_and_acknowledgements(self):
        output = self.run_script(self.exchange())
        # Channel request, response, M1, M2, M3 with a frame, the 300 B
        # frame: six runs, five turns; the credits and the acknowledgement
        # are not data.
        self.assertIn("burst 1 at 0.1 ms", output)
        self.assertIn("5 turns (6 runs; first from this host)", output)
        self.assertIn("M3 (157 B), frame (67 B)", output)
        self.assertIn("<-    2 packets: frame (256 B), K-frame (54 B)", output)
        self.assertNotIn("flow control credit", output)
        self.assertIn("burst 2 at 2200.0 ms", output)
        # The push: one frame in two ACL fragments, joined.
        self.assertIn("->    1 packets: frame (17 B)", output)
        self.assertIn("0 turns (1 runs; first from this host)", output)

    def test_acks_count_when_asked(self):
        output = self.run_script(self.exchange(), "--acks", "--quiet")
        self.assertIn("6 turns (7 runs; first from this host)", output)
        self.assertNotIn("packets:", output)


def sdu_start(sdu_length: int, first: int) -> bytes:
    """The first K-frame of an SDU of `sdu_length` bytes, with `first` of them."""
    return acl(CID, struct.pack("<H", sdu_length) + b"\x11" + bytes(first - 1))


def split(body: bytes, at: int) -> list[bytes]:
    """An SDU in one K-frame, sent as two ACL fragments: the first `at`
    bytes of the L2CAP packet, then the rest (packet boundary 1)."""
    payload = struct.pack("<H", len(body)) + body
    l2cap = struct.pack("<HH", len(payload), CID) + payload
    first, rest = l2cap[:at], l2cap[at:]
    return [b"\x02" + struct.pack("<HH", HANDLE | 2 << 12, len(first)) + first,
            b"\x02" + struct.pack("<HH", HANDLE | 1 << 12, len(rest)) + rest]


if __name__ == "__main__":
    unittest.main()
