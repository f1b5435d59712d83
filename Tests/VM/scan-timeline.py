#!/usr/bin/env python3
"""The host's half of the VM cases agent-bluez-scan, agent-bluez-monitor and
agent-bluez-privacy
(Tests/VM/run.sh).

Reads the case's btmon recording (btsnoop), decodes it with `btmon -r`, and
from one adapter's HCI commands and their Command Complete events builds:

- the scan timeline: each LE Set Scan Enable / LE Set Extended Scan Enable
  that the controller accepted (status 0), enable=1 opening a scan and
  enable=0 closing it; over the steady period (link-up + the 10 s burst, to
  the end of the idle wait) the duty (time scanning / length), the duty
  over whole scan cycles (from the first scan that starts in the period to
  the last, which is what --max-duty judges when there are two or more: a
  short period holds one window more or less by chance), the longest
  single scan (clipped to the period) and the number of scans;
- the beacon: for every advertising set enabled, the advertising type
  (LE Set (Extended) Advertising Parameters) and the address it went out on
  (the public address, or the one LE Set Random Address / LE Set Advertising
  Set Random Address gave it).

The guest marks link-up and the end of the idle wait by running `btmgmt`
(btmon logs "@ MGMT Open: btmgmt ..." on the recording's own clock): the
first such line is link-up, the last the end.

Prints `FACT ...` lines (run.sh shows them as vm: lines), `TIMELINE ...`
lines, and one `RESULT ...` line; exits 1 if the duty is above --max-duty
(percent) or a scan in the steady period is longer than --max-scan seconds
(or the recording cannot be read), else 0. Nothing about addresses is a
condition (yet). With --no-discovery (agent-bluez-monitor: bluetoothd's
advertisement monitor, whose scan is the kernel's passive one, on for as
long as the monitor is) the duty and scan length are no condition; instead
it exits 1 if any adapter's recording has a mgmt discovery command (Start
Discovery, Start Service Discovery, ...) or an accepted LE Set (Extended)
Scan Parameters asking for an active scan.

With --seals (the host's half of agent-bluez-privacy) it instead lists, for
every adapter over the whole recording, each advertising interval (a set
from its enable to its disable, removal or LE Advertising Set Terminated,
split where its data or address changes in place) with its seal (the 24
bytes after the beacon header, from LE Set (Extended) Advertising Data) and
its address (`INTERVAL ...` lines), and exits 1 if one seal went out under
two addresses, a beacon's address is unknown, or no beacon was advertised.

    scan-timeline.py [--index 0] [--burst 10] [--max-duty 5] [--max-scan 3] FILE
    scan-timeline.py --no-discovery [--index 0] [--burst 0] FILE
    scan-timeline.py --seals FILE
    scan-timeline.py --strip-data IN OUT   (only writes IN without ACL/SCO/ISO data)

The ACL data is always left out before decoding: it says nothing about
scanning or advertising, and btmon 5.66 (Debian 12) crashes on it here. When
it reads a file, btmon 5.66 learns a connection only if hciN exists on the
machine reading it (assign_handle asks the live adapter for its address), so
the first ATT Read By Type Request of bluetoothd's GATT discovery finds no
connection and dereferences NULL (fixed in BlueZ 5.67, commit 35947e2,
"monitor/att: Fix crash when accessing packet_conn"). bluetoothd sends that
request when it has no GATT cache of the peer (the case run alone).
"""
import argparse
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile

# btsnoop "monitor" records (datalink 2001): flags = index << 16 | opcode.
# Opcodes of data packets: ACL TX/RX, SCO TX/RX, ISO TX/RX.
DATA_OPCODES = {4, 5, 6, 7, 18, 19}


def strip_data(src, dst):
    """Copies btsnoop file SRC to DST without its data packets; returns the
    number of records kept."""
    with open(src, "rb") as f:
        raw = f.read()
    if raw[:8] != b"btsnoop\0":
        raise ValueError(f"{src}: not a btsnoop file")
    out, kept, offset = [raw[:16]], 0, 16
    while offset + 24 <= len(raw):
        _, length, flags, _, _ = struct.unpack(">IIIIq", raw[offset:offset + 24])
        record = raw[offset:offset + 24 + length]
        if len(record) < 24 + length:
            break  # a truncated last record (btmon killed mid-write)
        if flags & 0xFFFF not in DATA_OPCODES:
            out.append(record)
            kept += 1
        offset += 24 + length
    with open(dst, "wb") as f:
        f.write(b"".join(out))
    return kept


def decode(path):
    """btmon's text for PATH, without data packets, one packet per header."""
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "no-data.btsnoop")
        strip_data(path, stripped)
        # Wide columns: a header line never loses its index and time.
        run = subprocess.run(["btmon", "-r", stripped, "-C", "400", "-c", "never"],
                             capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        raise RuntimeError(f"btmon -r exited {run.returncode}: {run.stderr.strip()[:300]}")
    return run.stdout


# A packet's header line: direction (< command, > event, @ mgmt, = note),
# title, then (right-aligned) frame number, mgmt cookie, [hciN], time offset.
HEADER = re.compile(r"^([<>@=]) (.*?)\s+(?:#\d+ )?(?:\{0x[0-9a-f]+\} )?(?:\[hci(\d+)\] )?(\d+\.\d+)$")
OPCODE = re.compile(r"\((0x[0-9a-f]{2}\|0x[0-9a-f]{4})\)")
Packet = collections.namedtuple("Packet", "kind title index time body")


def packets(text):
    """The decoded packets: (kind, title, index or None, time, body lines)."""
    current = None
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            if current:
                yield current
            kind, title, index, time = m.groups()
            current = Packet(kind, title.strip(), None if index is None else int(index),
                             float(time), [])
        elif current and line.startswith(" "):
            current.body.append(line.strip())
    if current:
        yield current


def field(body, label):
    """The value of the first 'label: value' line of a body, or None."""
    for line in body:
        if line.startswith(label + ": "):
            return line[len(label) + 2:]
    return None


def raw(value):
    """The hex number a btmon field ends with, '... (0x01)' -> 1."""
    m = re.search(r"\((0x[0-9a-f]+)\)$", value or "")
    return int(m.group(1), 16) if m else None


def number(value):
    """A field that is a bare hex number, 'Handle: 0x01' -> 1."""
    try:
        return int((value or "").split(" ")[0], 16)
    except ValueError:
        return None


def address(value):
    return (value or "").split(" ")[0]


def set_handle(value):
    """An advertising handle, written '0x01' or '1' by btmon."""
    text = (value or "").split(" ")[0]
    try:
        return int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        return None


def beacon_seal(body):
    """The seal in an advertising data command's decoded AD: the 24 bytes of
    the Manufacturer Specific AD of company 0xFFFF (btmon: "Company: ...
    (65535)" then "Data: <hex>"), or None when the data has no beacon."""
    for i, line in enumerate(body):
        if line.startswith("Company: ") and line.endswith("(65535)") and i + 1 < len(body):
            data = body[i + 1]
            if data.startswith("Data: ") and len(data) == len("Data: ") + 48:
                return data[len("Data: "):]
    return None


SCAN_ENABLE = {"0x08|0x000c": "Scanning", "0x08|0x0042": "Extended scan"}
SCAN_PARAMETERS = {"0x08|0x000b", "0x08|0x0041"}
LE_SET_RANDOM_ADDRESS = "0x08|0x0005"
LE_SET_ADV_PARAMS = "0x08|0x0006"
LE_SET_ADV_ENABLE = "0x08|0x000a"
LE_SET_ADV_SET_RANDOM_ADDRESS = "0x08|0x0035"
LE_SET_EXT_ADV_PARAMS = "0x08|0x0036"
LE_SET_EXT_ADV_ENABLE = "0x08|0x0039"
LE_SET_ADV_DATA = "0x08|0x0008"
LE_SET_EXT_ADV_DATA = "0x08|0x0037"
LE_REMOVE_ADV_SET = "0x08|0x003c"
LE_CLEAR_ADV_SETS = "0x08|0x003d"
LEGACY = "legacy"  # the advertising "set" of the legacy commands


class Adapter:
    """What one adapter's accepted commands did, in order."""

    def __init__(self):
        self.public = None
        self.random = None          # LE Set Random Address (scanning, legacy advertising)
        self.set_random = {}        # advertising handle -> LE Set Advertising Set Random Address
        self.params = {}            # advertising handle -> (type text, connectable, own type)
        self.scans = []             # [start, end or None]
        self.scan_commands = 0
        self.failed = []            # (time, command, status)
        self.adv_enables = []       # (time, handle, type text, connectable, address kind, address)
        self.random_addresses = []  # (time, command, handle, address)
        self.discovery = collections.Counter()  # mgmt discovery commands (bluetoothd's)
        self.scan_parameters = collections.Counter()  # "type, interval, window" accepted
        self.active_scans = 0       # accepted scan parameters of type active
        # The seals on the air (--seals): each advertising set's current
        # seal (the 24 bytes after the beacon header, hex) and the open
        # interval of each enabled set; closed intervals, in order.
        self.seal = {}              # handle -> seal hex, or None (not a beacon)
        self.on_air = {}            # handle -> [start, seal, address, connectable]
        self.intervals = []         # (start, end, handle, seal, address, connectable)

    def accepted(self, time, opcode, name, body):
        """The command OPCODE with BODY completed with status 0 at TIME."""
        if opcode in SCAN_ENABLE:
            self.scan_commands += 1
            on = raw(field(body, SCAN_ENABLE[opcode])) == 1
            scanning = bool(self.scans) and self.scans[-1][1] is None
            if on and not scanning:
                self.scans.append([time, None])
            elif not on and scanning:
                self.scans[-1][1] = time
        elif opcode in SCAN_PARAMETERS:
            # Legacy: Type/Interval/Window; extended: the same per PHY entry.
            kinds = [line for line in body if line.startswith("Type: ")]
            intervals = [line[10:] for line in body if line.startswith("Interval: ")]
            windows = [line[8:] for line in body if line.startswith("Window: ")]
            for kind, interval, window in zip(kinds, intervals, windows):
                self.scan_parameters[f"{kind[6:].rsplit(' (', 1)[0]}, interval"
                                     f" {interval.split(' (')[0]}, window {window.split(' (')[0]}"] += 1
                if raw(kind) == 1:
                    self.active_scans += 1
        elif opcode == LE_SET_RANDOM_ADDRESS:
            self.random = address(field(body, "Address"))
            self.random_addresses.append((time, "LE Set Random Address", None, self.random))
            self.changed(time, LEGACY)
        elif opcode == LE_SET_ADV_SET_RANDOM_ADDRESS:
            handle = number(field(body, "Advertising handle"))
            value = address(field(body, "Advertising random address"))
            self.set_random[handle] = value
            self.random_addresses.append((time, "LE Set Advertising Set Random Address", handle, value))
            self.changed(time, handle)
        elif opcode in (LE_SET_ADV_DATA, LE_SET_EXT_ADV_DATA):
            handle = LEGACY if opcode == LE_SET_ADV_DATA else number(field(body, "Handle"))
            self.seal[handle] = beacon_seal(body)
            self.changed(time, handle)
        elif opcode == LE_REMOVE_ADV_SET:
            self.off(time, [set_handle(field(body, "Handle"))])
        elif opcode == LE_CLEAR_ADV_SETS:
            self.off(time, list(self.on_air))
        elif opcode == LE_SET_ADV_PARAMS:
            kind = field(body, "Type") or "?"
            self.params[LEGACY] = (kind.rsplit(" (", 1)[0], raw(kind) in (0, 1, 4),
                                   raw(field(body, "Own address type")))
        elif opcode == LE_SET_EXT_ADV_PARAMS:
            handle = number(field(body, "Handle"))
            props = number(field(body, "Properties")) or 0
            legacy = [line for line in body if line.startswith("Use legacy advertising PDUs")]
            kind = legacy[0].split(": ", 1)[-1] if legacy else "extended PDUs"
            self.params[handle] = (f"{kind} (properties 0x{props:04x})", bool(props & 1),
                                   raw(field(body, "Own address type")))
        elif opcode == LE_SET_ADV_ENABLE:
            if raw(field(body, "Advertising")) == 1:
                self.enabled(time, LEGACY)
            else:
                self.off(time, [LEGACY])
        elif opcode == LE_SET_EXT_ADV_ENABLE:
            handles = [number(line[8:]) for line in body if line.startswith("Handle: ")]
            if raw(field(body, "Extended advertising")) == 1:
                for handle in handles:
                    self.enabled(time, handle)
            else:
                # No sets named: every set is disabled.
                self.off(time, handles if handles else list(self.on_air))

    def enabled(self, time, handle):
        """Advertising set HANDLE went on the air: with which address."""
        kind, connectable, own = self.params.get(handle, ("?", None, None))
        if own in (0, 2):     # public (2: an RPA if the controller resolves, else public)
            where = ("public", self.public)
        elif own in (1, 3):   # random: the set's own, else the controller's
            value = self.random if handle == LEGACY else self.set_random.get(handle, self.random)
            where = ("random", value)
        else:
            where = ("?", None)
        self.adv_enables.append((time, handle, kind, connectable) + where)
        if handle not in self.on_air:
            self.on_air[handle] = [time, self.seal.get(handle), where[1], connectable]

    def address_of(self, handle):
        """The address set HANDLE advertises from now (as `enabled` finds it)."""
        _, _, own = self.params.get(handle, ("?", None, None))
        if own in (0, 2):
            return self.public
        if own in (1, 3):
            return self.random if handle == LEGACY else self.set_random.get(handle, self.random)
        return None

    def off(self, time, handles):
        """Sets HANDLES stopped advertising at TIME (disabled, removed,
        terminated by a connection)."""
        for handle in handles:
            entry = self.on_air.pop(handle, None)
            if entry:
                start, seal, where, connectable = entry
                self.intervals.append((start, time, handle, seal, where, connectable))

    def changed(self, time, handle):
        """Set HANDLE's data or address changed: while it advertises, that
        closes its interval and opens another (a change in place)."""
        entry = self.on_air.get(handle)
        if not entry:
            return
        seal, where = self.seal.get(handle), self.address_of(handle)
        if (seal, where) != (entry[1], entry[2]):
            self.off(time, [handle])
            self.on_air[handle] = [time, seal, where, entry[3]]

    def close(self, time):
        """The recording ended: every set still advertising ends here."""
        self.off(time, list(self.on_air))


def read_recording(path):
    """The adapters (by index) and the btmgmt markers' times."""
    adapters = collections.defaultdict(Adapter)
    pending = {}  # (index, opcode) -> (name, body) of the command awaiting completion
    markers = []
    last = 0.0
    for p in packets(decode(path)):
        last = max(last, p.time)
        if p.kind == "=" and p.title.startswith("New Index: ") and p.index is not None:
            adapters[p.index].public = p.title.split()[2]
        elif p.kind == "@" and p.title.startswith("MGMT Open: btmgmt"):
            markers.append(p.time)
        elif p.kind == "@" and re.match(r"MGMT Command: (Start|Stop) .*Discovery", p.title):
            adapters[p.index].discovery[p.title[len("MGMT Command: "):].split(" (0x")[0]] += 1
        elif p.kind == "<" and p.title.startswith("HCI Command: "):
            m = OPCODE.search(p.title)
            if m:
                name = p.title[len("HCI Command: "):].split(" (0x")[0]
                pending[(p.index, m.group(1))] = (name, p.body)
        elif p.kind == ">" and p.title.startswith("HCI Event: Command Complete") and p.body:
            m = OPCODE.search(p.body[0])
            if not m or (p.index, m.group(1)) not in pending:
                continue
            name, body = pending.pop((p.index, m.group(1)))
            status = raw(field(p.body, "Status"))
            if status == 0:
                adapters[p.index].accepted(p.time, m.group(1), name, body)
            else:
                adapters[p.index].failed.append((p.time, name, status))
        elif p.kind == ">" and p.body and p.body[0].startswith("LE Advertising Set Terminated"):
            if raw(field(p.body, "Status")) == 0:
                adapters[p.index].off(p.time, [set_handle(field(p.body, "Handle"))])
        elif (p.kind == ">" and p.body and re.match(r"LE (Enhanced )?Connection Complete", p.body[0])
              and raw(field(p.body, "Status")) == 0 and "Peripheral" in (field(p.body, "Role") or "")):
            # Legacy advertising stops when a connection is made to it.
            adapters[p.index].off(p.time, [LEGACY])
        elif p.kind == ">" and "LE Scan Timeout" in " ".join(p.body[:1]):
            a = adapters[p.index]
            if a.scans and a.scans[-1][1] is None:
                a.scans[-1][1] = p.time
    for a in adapters.values():
        a.close(last)
    return adapters, markers


def steady_figures(scans, start, end):
    """Duty (0..1), longest scan (s) and the number of scans, clipped to
    [start, end]; a scan still open counts as running until `end`."""
    on, longest, count = 0.0, 0.0, 0
    for a, b in scans:
        a, b = max(a, start), min(end if b is None else b, end)
        if b > a or (a == b and start <= a < end):
            on += b - a
            longest = max(longest, b - a)
            count += 1
    return on / (end - start), longest, count


def cycle_duty(scans, start, end):
    """The duty over whole scan cycles: the scans that start in [start,
    end), from the first one's start to the last one's, so a period that
    happens to hold one window more or less (a 120 s period holds 4 or 5
    windows of a 28.6 s cycle, 4.7 or 5.8 %) measures the schedule's own
    duty; None with fewer than two such scans (then the period's duty is
    the figure: a scan that runs on is one long scan)."""
    starts = [(a, b) for a, b in scans if start <= a < end]
    if len(starts) < 2:
        return None
    first, last = starts[0][0], starts[-1][0]
    on = sum(min(end if b is None else b, last) - a for a, b in starts[:-1])
    return on / (last - first)


def check_seals(adapters, markers):
    """--seals: prints every adapter's advertising intervals (seal, address)
    and FACT lines with the counts; 1 if a seal went out under two
    addresses, a beacon interval's address is unknown, or no seal was
    advertised at all."""
    zero = markers[0] if markers else 0.0
    ok, seals_seen, summary = True, 0, []
    for index in sorted(adapters):
        a, hci = adapters[index], f"hci{index}"
        beacons = [i for i in a.intervals if i[3] is not None and i[1] > i[0]]
        for start, end, handle, seal, where, conn in beacons:
            print(f"INTERVAL {hci} {start - zero:+.2f}..{end - zero:+.2f} set {handle}"
                  f" seal {seal[:16]}... address {where or '?'}"
                  f" ({'connectable' if conn else 'not connectable'})")
        by_seal = collections.defaultdict(list)
        for start, end, handle, seal, where, conn in beacons:
            by_seal[seal].append((start, where))
        addresses = {where for *_, where, _ in beacons}
        # The beacon's address changed: consecutive intervals, another address.
        changes = sum(1 for x, y in zip(beacons, beacons[1:]) if x[4] != y[4])
        reenabled = sum(len(v) - len({w for _, w in v}) for v in by_seal.values())
        twice = {seal: v for seal, v in by_seal.items() if len({w for _, w in v}) > 1}
        unknown = [i for i in beacons if i[4] is None]
        seals_seen += len(by_seal)
        print(f"FACT {hci}: {len(beacons)} beacon intervals, {len(by_seal)} seals,"
              f" {len(addresses)} addresses, {changes} address changes,"
              f" {reenabled} times a seal came back on the same address;"
              f" {sum(1 for i in beacons if i[5])} connectable;"
              f" advertising set addresses set {sum(1 for r in a.random_addresses if r[2] is not None)} times")
        for seal, v in twice.items():
            ok = False
            print(f"FACT {hci}: seal {seal} under {len({w for _, w in v})} addresses: "
                  + ", ".join(f"{w} from {t - zero:+.2f} s" for t, w in v))
        if unknown:
            ok = False
            print(f"FACT {hci}: {len(unknown)} beacon intervals on an unknown address")
        summary.append(f"{hci}: {len(by_seal)} seals on {len(addresses)} addresses,"
                       f" {len(twice)} under two or more")
    if seals_seen == 0:
        print("RESULT no beacon was advertised")
        return 1
    print("RESULT " + "; ".join(summary))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("out", nargs="?", help="with --strip-data: where to write")
    ap.add_argument("--strip-data", action="store_true")
    ap.add_argument("--index", type=int, default=0, help="the adapter checked (agent a's)")
    ap.add_argument("--burst", type=float, default=10, help="seconds after link-up not measured")
    ap.add_argument("--max-duty", type=float, default=5, help="percent")
    ap.add_argument("--max-scan", type=float, default=3, help="seconds")
    ap.add_argument("--no-discovery", action="store_true",
                    help="fail on any mgmt discovery command or active scan in the recording"
                         " (bluetoothd's advertisement monitor); duty and scan length are no"
                         " condition then")
    ap.add_argument("--closed", action="store_true",
                    help="fail if the checked adapter advertised connectably on its public"
                         " address during the steady period (PROTOCOL.md 3.3: a closed"
                         " beacon, bluetoothd's Privacy off)")
    ap.add_argument("--seals", action="store_true",
                    help="instead: every adapter's (seal, address) advertising intervals over the"
                         " whole recording; fail if one seal went out under two addresses")
    args = ap.parse_args()
    if args.strip_data:
        print(f"{strip_data(args.file, args.out)} records kept")
        return 0

    try:
        adapters, markers = read_recording(args.file)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"RESULT cannot read the recording: {e}")
        return 1
    if args.seals:
        return check_seals(adapters, markers)
    if len(markers) < 2:
        print(f"RESULT the recording has {len(markers)} btmgmt markers, not 2 (link-up, end)")
        return 1
    link_up, end = markers[0], markers[-1]
    start = link_up + args.burst
    if start >= end:
        print(f"RESULT no steady period: link-up at {link_up:.1f} s + {args.burst:g} s is past the end {end:.1f} s")
        return 1

    ok = True
    for index in sorted(adapters):
        a = adapters[index]
        hci = f"hci{index}"
        duty, longest, count = steady_figures(a.scans, start, end)
        # The timeline, in seconds from link-up (negative: before it).
        timeline = " ".join(
            f"{s - link_up:+.2f}..{'open' if e is None else f'{e - link_up:+.2f}'}" for s, e in a.scans)
        print(f"TIMELINE {hci} scans (s from link-up, end at {end - link_up:+.2f}): {timeline or 'none'}")
        print(f"FACT {hci}: steady period {end - start:.1f} s (link-up + {args.burst:g} s to the end):"
              f" scan duty {100 * duty:.2f} %, longest scan {longest:.2f} s, {count} scan{'' if count == 1 else 's'}"
              f" ({len(a.scans)} scans and {a.scan_commands} accepted scan enable commands in the whole recording)")
        if a.discovery:
            print(f"FACT {hci}: mgmt discovery commands in the whole recording: "
                  + ", ".join(f"{n} {name}" for name, n in sorted(a.discovery.items())))
        if a.scan_parameters:
            print(f"FACT {hci}: scan parameters accepted in the whole recording: "
                  + "; ".join(f"{n} x {p}" for p, n in a.scan_parameters.most_common()))
        for time, name, status in a.failed:
            print(f"FACT {hci}: {name} failed with status 0x{status:02x} at {time - link_up:+.2f} s")
        if index == args.index:
            cycles = cycle_duty(a.scans, start, end)
            judged = duty if cycles is None else cycles
            figures = (f"hci{index} over {end - start:.0f} s: duty {100 * duty:.2f} %"
                       + ("" if cycles is None else f" ({100 * cycles:.2f} % over whole cycles)")
                       + f", longest scan {longest:.2f} s, {count} scan{'' if count == 1 else 's'}")
            if judged * 100 > args.max_duty and not args.no_discovery:
                ok = False
                figures += f"; duty above {args.max_duty:g} %"
            if longest > args.max_scan and not args.no_discovery:
                ok = False
                figures += f"; a scan longer than {args.max_scan:g} s"
            # The beacon: every advertising set enabled on this adapter.
            kinds = collections.Counter(
                f"{kind}, {'connectable' if conn else 'not connectable' if conn is not None else '?'},"
                f" own address {where}" for _, _, kind, conn, where, _ in a.adv_enables)
            addresses = sorted({addr or "?" for *_, addr in a.adv_enables})
            public_used = any(where == "public" for *_, where, _ in a.adv_enables)
            print(f"FACT {hci} beacon: advertising enabled {len(a.adv_enables)} times on"
                  f" {len(addresses)} distinct addresses: {', '.join(addresses) or 'none'}")
            print(f"FACT {hci} beacon: public address {a.public} used: {'yes' if public_used else 'no'}")
            for kind, n in kinds.most_common():
                print(f"FACT {hci} beacon: {n} x {kind}")
            # Windows (PROTOCOL.md 3.3): the beacon connectable on the public
            # address, each until the next advertising change.
            enables = a.adv_enables
            windows = []
            for i, (time, _, _, conn, where, _) in enumerate(enables):
                if conn and where == "public":
                    until = enables[i + 1][0] if i + 1 < len(enables) else end
                    windows.append((time, until))
            print(f"FACT {hci} beacon: {len(windows)} connectable on the public address"
                  f" (windows), {sum(u - t for t, u in windows):.1f} s in all"
                  + "".join(f"; {t - link_up:+.1f}..{u - link_up:+.1f} s" for t, u in windows))
            steady_public = [w for w in windows if w[1] > start and w[0] < end]
            closed = sum(1 for t, _, _, conn, *_ in enables if conn is False and start <= t <= end)
            figures += f"; {len(windows)} window(s), {len(steady_public)} in the steady period"
            if args.closed and steady_public:
                ok = False
                figures += "; connectable on the public address while linked"
            if args.closed and not any(conn is False for _, _, _, conn, *_ in enables):
                ok = False
                figures += "; never advertised non-connectable"
            print(f"FACT {hci} beacon: {closed} non-connectable advertising starts in the steady period")
            sets = sorted({str(h) for _, h, *_ in a.adv_enables})
            print(f"FACT {hci} beacon: advertising sets (handles) {', '.join(sets) or 'none'};"
                  f" random addresses set: {len(a.random_addresses)}"
                  f" ({len({v for *_, v in a.random_addresses})} distinct;"
                  f" LE Set Random Address is also the scanning address)")
    if args.index not in adapters:
        print(f"RESULT no hci{args.index} in the recording")
        return 1
    if args.no_discovery:
        discoveries = sum(sum(a.discovery.values()) for a in adapters.values())
        actives = sum(a.active_scans for a in adapters.values())
        passives = sum(n for a in adapters.values() for p, n in a.scan_parameters.items()
                       if p.startswith("Passive"))
        figures += (f"; every adapter: {discoveries} mgmt discovery commands, {actives} active"
                    f" and {passives} passive scan parameter sets")
        if discoveries or actives:
            ok = False
            figures += "; discovery ran"
        if not passives:
            ok = False
            figures += "; no passive scan at all"
    print(f"RESULT {figures}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
