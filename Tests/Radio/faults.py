"""Fault injection for the simulated radio: drop, corrupt, delay or duplicate
chosen HCI packets between a host and its bumble controller, with a seed.

A rule set is a string of rules separated by ';'. A rule is an action and
space-separated KEY=VALUE filters and settings:

    drop       the packet never arrives (a lost event, a lost ACL fragment,
               a lost command); 'lose' is the same
    corrupt    flips `bits` random bits of the packet's parameters or data
               (never of the H4 header, so the framing stays in step, as a
               bit error on a UART inside a packet would)
    delay      holds the packet `ms` milliseconds; packets behind it in the
               same direction wait too (a stalled UART: order is kept)
    duplicate  the packet arrives twice
    disconnect the packet (an ACL packet) arrives, then the controller drops
               its connection with `reason` (default 0x08, connection
               timeout), as a link supervision timeout does: each side's
               host gets a Disconnection Complete

Filters (all optional; a rule with none matches every packet):
    to=host|controller  direction: controller to host (events, incoming ACL)
                        or host to controller (commands, outgoing ACL)
    controller=N        only the controller with index N (0-based)
    type=command|acl|event|sco|iso
    event=0xNN          an event code (implies type=event)
    subevent=0xNN       an LE Meta event's subevent code (implies event=0x3e)
    opcode=0xNNNN       a command's opcode, or the opcode a Command Complete
                        (0x0e) or Command Status (0x0f) event answers
    handle=0xNNN        an ACL packet's connection handle
Settings:
    p=F                 probability that a matching packet is hit (default 1)
    skip=N              the first N matching packets pass untouched
    count=N             at most N packets are hit by this rule (default: no
                        limit)
    ms=N                the delay of `delay` (default 200)
    bits=N              how many bits `corrupt` flips (default 1)
    reason=0xNN         the reason `disconnect` gives (default 0x08)

Examples:
    drop event=0x0e opcode=0x0c03 count=1 controller=0
        the first answer to HCI_Reset on controller 0 is lost
    drop subevent=0x01 count=1
        one LE Connection Complete is lost
    drop type=acl p=0.05; corrupt type=acl p=0.01
        5% of ACL packets both ways lost, 1% corrupted
    disconnect type=acl to=controller controller=0 skip=20 count=1
        controller 0 drops a connection after its host has sent 20 ACL
        packets (mid-transfer)

Each rule draws from its own random generator per controller and direction,
seeded from the seed, the rule's index, the controller and the direction, so
one stream of packets meets the same faults in every run. `skip` and `count`
count across every stream the rule matches.
"""
import asyncio
import collections
import random
import time

from bumble import ll

ACTIONS = {"drop": "drop", "lose": "drop", "corrupt": "corrupt", "delay": "delay",
           "duplicate": "duplicate", "disconnect": "disconnect"}
TYPES = {"command": 0x01, "acl": 0x02, "sco": 0x03, "event": 0x04, "iso": 0x05}
DIRECTIONS = ("host", "controller")
# H4 header length (type byte included) by packet type: never corrupted.
HEADER = {0x01: 4, 0x02: 5, 0x03: 4, 0x04: 3, 0x05: 5}


class FaultSpecError(ValueError):
    pass


class Rule:
    def __init__(self, index: int, text: str):
        words = text.split()
        if not words or words[0] not in ACTIONS:
            raise FaultSpecError(
                f"fault rule '{text}': it must start with one of {', '.join(sorted(ACTIONS))}")
        self.index = index
        self.text = " ".join(words)
        self.action = ACTIONS[words[0]]
        self.to = None
        self.controller = None
        self.type = None
        self.event = None
        self.subevent = None
        self.opcode = None
        self.handle = None
        self.p = 1.0
        self.skip = 0
        self.count = None
        self.ms = 200
        self.bits = 1
        self.reason = 0x08
        self.matched = 0
        self.hits = 0
        for word in words[1:]:
            key, _, value = word.partition("=")
            if not value:
                raise FaultSpecError(f"fault rule '{text}': '{word}' is not KEY=VALUE")
            try:
                self.set(key, value)
            except ValueError as error:
                raise FaultSpecError(f"fault rule '{text}': {key}={value}: {error}") from None
        if self.subevent is not None:
            self.event = 0x3E
        if self.event is not None:
            self.type = TYPES["event"]
        if self.action == "disconnect" and self.type != TYPES["acl"]:
            raise FaultSpecError(f"fault rule '{text}': disconnect needs type=acl")

    def set(self, key: str, value: str) -> None:
        if key == "to":
            if value not in DIRECTIONS:
                raise ValueError("expected host or controller")
            self.to = value
        elif key == "controller":
            self.controller = int(value, 0)
        elif key == "type":
            if value not in TYPES:
                raise ValueError(f"expected one of {', '.join(TYPES)}")
            self.type = TYPES[value]
        elif key in ("event", "subevent", "opcode", "handle", "skip", "count", "ms", "bits",
                     "reason"):
            number = int(value, 0)
            if number < 0:
                raise ValueError("must not be negative")
            setattr(self, key, number)
        elif key == "p":
            self.p = float(value)
            if not 0 <= self.p <= 1:
                raise ValueError("a probability is from 0 to 1")
        else:
            raise ValueError("unknown key")

    def matches(self, controller: int, to: str, packet: bytes) -> bool:
        if self.to is not None and self.to != to:
            return False
        if self.controller is not None and self.controller != controller:
            return False
        if not packet:
            return False
        kind = packet[0]
        if self.type is not None and self.type != kind:
            return False
        if self.event is not None and (len(packet) < 2 or packet[1] != self.event):
            return False
        if self.subevent is not None and (len(packet) < 4 or packet[3] != self.subevent):
            return False
        if self.opcode is not None and packet_opcode(packet) != self.opcode:
            return False
        if self.handle is not None and (
                kind != 0x02 or len(packet) < 3
                or (packet[1] | packet[2] << 8) & 0x0FFF != self.handle):
            return False
        return True


def packet_opcode(packet: bytes):
    """A command's opcode, or the opcode a Command Complete/Status answers."""
    if packet[0] == 0x01 and len(packet) >= 3:
        return packet[1] | packet[2] << 8
    if packet[0] == 0x04 and len(packet) >= 6 and packet[1] == 0x0E:
        return packet[4] | packet[5] << 8
    if packet[0] == 0x04 and len(packet) >= 7 and packet[1] == 0x0F:
        return packet[5] | packet[6] << 8
    return None


def describe(packet: bytes) -> str:
    kind = packet[0] if packet else -1
    if kind == 0x01 and len(packet) >= 3:
        return f"command 0x{packet_opcode(packet):04x}"
    if kind == 0x04 and len(packet) >= 2:
        text = f"event 0x{packet[1]:02x}"
        if packet[1] == 0x3E and len(packet) >= 4:
            text += f" subevent 0x{packet[3]:02x}"
        opcode = packet_opcode(packet)
        if opcode is not None:
            text += f" opcode 0x{opcode:04x}"
        return text
    if kind == 0x02 and len(packet) >= 5:
        handle = (packet[1] | packet[2] << 8) & 0x0FFF
        boundary = (packet[2] >> 4) & 3
        return f"acl handle 0x{handle:03x} pb {boundary} length {len(packet) - 5}"
    return f"packet type {kind} length {len(packet)}"


class FaultPlan:
    """The parsed rules, their generators, and whether faults are on."""

    def __init__(self, spec: str, seed: int, log_path: str | None):
        self.rules = [Rule(i, text) for i, text in enumerate(
            part.strip() for part in spec.split(";")) if text]
        self.seed = seed
        self.enabled = True
        self.generators = {}
        self.log = open(log_path, "a", buffering=1) if log_path else None
        self.started = time.monotonic()
        # The bumble controllers by index, for `disconnect` (radio.py sets them).
        self.controllers = {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def generator(self, rule: Rule, controller: int, to: str) -> random.Random:
        key = (rule.index, controller, to)
        if key not in self.generators:
            self.generators[key] = random.Random(f"{self.seed}/{rule.index}/{controller}/{to}")
        return self.generators[key]

    def decide(self, controller: int, to: str, packet: bytes):
        """The rules that hit this packet, at most one per action."""
        if not self.enabled:
            return []
        hits = []
        actions = set()
        for rule in self.rules:
            if rule.action in actions or not rule.matches(controller, to, packet):
                continue
            rule.matched += 1
            if rule.matched <= rule.skip:
                continue
            if rule.count is not None and rule.hits >= rule.count:
                continue
            generator = self.generator(rule, controller, to)
            if rule.p < 1 and generator.random() >= rule.p:
                continue
            if rule.action == "corrupt" and len(packet) <= HEADER.get(packet[0], len(packet)):
                continue  # nothing but a header: nothing to corrupt
            rule.hits += 1
            actions.add(rule.action)
            hits.append((rule, generator))
            self.note(f"{rule.action} C{controller} to-{to} {describe(packet)} (rule {rule.index})")
        return hits

    def disconnect(self, controller: int, handle: int, reason: int) -> None:
        """Drops an LE connection as the controller would on a supervision
        timeout: the peer's controller is told (LL_TERMINATE_IND) and each
        reports a Disconnection Complete to its host."""
        device = self.controllers.get(controller)
        connection = device.find_le_connection_by_handle(handle) if device else None
        if connection is None:
            self.note(f"disconnect C{controller} handle 0x{handle:03x}: no such connection")
            return
        connection.send_ll_control_pdu(ll.TerminateInd(reason))
        device.on_le_disconnected(connection, reason)
        self.note(f"disconnected C{controller} handle 0x{handle:03x} reason 0x{reason:02x}")

    def note(self, line: str) -> None:
        if self.log:
            self.log.write(f"{time.monotonic() - self.started:.3f} {line}\n")

    def summary(self) -> str:
        return "; ".join(f"rule {r.index} '{r.text}': {r.hits} of {r.matched}" for r in self.rules)


class FaultyLink:
    """One direction between a host and its controller: packets go to `sink`
    through the plan's faults, in order."""

    def __init__(self, plan: FaultPlan, controller: int, to: str, sink):
        self.plan = plan
        self.controller = controller
        self.to = to
        self.sink = sink
        self.queue = collections.deque()
        self.timer = None

    def on_packet(self, packet: bytes) -> None:
        packet = bytes(packet)
        hits = self.plan.decide(self.controller, self.to, packet)
        delay = 0.0
        copies = 1
        for rule, generator in hits:
            if rule.action == "drop":
                return
            if rule.action == "corrupt":
                packet = corrupt(packet, rule.bits, generator)
            elif rule.action == "delay":
                delay = rule.ms / 1000
            elif rule.action == "duplicate":
                copies = 2
            elif rule.action == "disconnect":
                handle = (packet[1] | packet[2] << 8) & 0x0FFF
                asyncio.get_running_loop().call_soon(
                    self.plan.disconnect, self.controller, handle, rule.reason)
        loop = asyncio.get_running_loop()
        if delay == 0 and not self.queue:
            for _ in range(copies):
                self.deliver(packet)
            return
        release = loop.time() + delay
        if self.queue:
            release = max(release, self.queue[-1][0])
        for _ in range(copies):
            self.queue.append((release, packet))
        if self.timer is None:
            self.timer = loop.call_at(self.queue[0][0], self.flush)

    def flush(self) -> None:
        self.timer = None
        loop = asyncio.get_running_loop()
        while self.queue and self.queue[0][0] <= loop.time():
            self.deliver(self.queue.popleft()[1])
        if self.queue:
            self.timer = loop.call_at(self.queue[0][0], self.flush)

    def deliver(self, packet: bytes) -> None:
        try:
            self.sink.on_packet(packet)
        except Exception as error:  # a corrupted packet bumble cannot parse
            self.plan.note(f"C{self.controller} to-{self.to} refused {describe(packet)}: "
                           f"{type(error).__name__}: {error}")


def corrupt(packet: bytes, bits: int, generator: random.Random) -> bytes:
    start = HEADER.get(packet[0], len(packet))
    data = bytearray(packet)
    for _ in range(max(1, bits)):
        position = generator.randrange(start, len(data))
        data[position] ^= 1 << generator.randrange(8)
    return bytes(data)
